//! Rotary position embeddings (RoPE) in fixed point: `R = round((P∘C + Pσ∘S) / 2^f)`, the
//! rotation Llama-family models apply to `Q` and `K` after their projections. Like
//! [`crate::projection`], it needs no claim on its output: it ties `P` and `R` together and
//! hands claims on both (and on the range multiplicities) to the caller's openings. One
//! implementation for both modes ([`crate::mode`]): lookups in the layer's one batch
//! ([`crate::lookup_batch`]; alone: [`prove_rotation_alone`]), `y`
//! and the pair values through `M::send`, the output range and the pair split as relations
//! through `M::prove_zero`, the sum-check through `M::prove_products` (`eq`, `C`, `S` public,
//! `P`, `Pσ` hidden).
//!
//! ```text
//! tensors    P, R: ŝ × n̂ (n = h·m, index i·n̂ + c, column c = (j, head) with j in the low
//!            bits; m a power of two); MLE points [column ‖ row] (little-endian)
//! tables     C(i, c) = round(2^f·cos(i·θ_t)), S(i, c) = round(2^f·sin(i·θ_t)) for i < s, c < n,
//!            t = (c mod m) >> 1, θ_t = base^(−2t/m) (libm, so every machine computes the
//!            same integers); 0 on padding
//! pairs      (c, c+1) for even c (llama.cpp's "normal" RoPE; GGUF files store Q and K in this
//!            order): Pσ(i, c) = −P(i, c+1) for even c, P(i, c−1) for odd c, so
//!            T = P∘C + Pσ∘S rotates each pair by its angle
//! relation   D = T + 2^(f−1) − 2^f·R ∈ [0, 2^f)  ⇔  R = ⌊(T + 2^(f−1)) / 2^f⌋
//! absorb     the shape (s, h, m, base, f)
//! lookup     D ∈ [0, 2^f) (logUp in the layer's batch, D never committed) → D(r) = v, m(r_t) = μ
//!            R + 2^(b−1) ∈ [0, 2^b) in the same batch (crate::output_range): its column claim
//!            sits at r too; relation: it is y + 2^(b−1)  → m_R(r_R) = μ_R
//! P → V      y = R(r)
//! sum-check  Σ_g eq(r, g)·(P(g)·C(g) + Pσ(g)·S(g)) = v − 2^(f−1) + 2^f·y   (log ŝn̂ vars, degree 3)
//!            → ρ = (ρ_0, ρ′); V checks eq(r, ρ), C(ρ), S(ρ) in closed form (O(s·m)); P sends
//!            a_0 = P(0, ρ′), a_1 = P(1, ρ′); relations P(ρ) = (1−ρ_0)a_0 + ρ_0·a_1,
//!            Pσ(ρ) = ρ_0·a_0 − (1−ρ_0)·a_1;  τ ← F
//! claims out P(τ, ρ′) = (1−τ)a_0 + τ·a_1,  R(r) = y,  m(r_t) = μ,  m_R(r_R) = μ_R
//! ```
//!
//! The range check on `R` makes the relation an integer one: with `D` alone, `R' = R + (D −
//! D')/2^f` (a field element) would pass. With `|P| < 2^31`, `|C|, |S| ≤ 2^16` and `|R| ≤ 2^15`
//! every term is below 2^49 ≪ p/2.
//!
//! Positions are the rows `0..s` (a prompt from its first token). Soundness: the lookup holds
//! every `D` in range with probability ≥ 1 − O(ŝn̂/|F|); the sum-check errs with
//! ≤ 3·log(ŝn̂)/|F|; the pair split with ≤ 1/|F|.

use crate::AttentionError;
use crate::common::{check_tensor_sizes, sumcheck_error};
use crate::lookup_batch::{
    Alone, AloneProof, LookupStatement, PreparedLookup, lookup_parts_zk_schedule, prove_alone, verify_alone,
};
use crate::mode::{Mode, PlainProductProof, prove_dense, sum_of_products, verify_single};
use crate::output_range::{RescaledLookups, SignedRange, rescaled_product};
use crate::structured::prefix_eq_sum;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use std::borrow::Cow;
use zkmha_field::{Fr, One, fr_from_i64};
use zkmha_lookup::LookupClaims;
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{EvalClaim, ProductTerm, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{LinearValue, ZkProductShape};

const STEP: &str = "rotary embedding";
const STEP_OUTPUT_RANGE: &str = "rotary embedding output range";
const STEP_PAIR: &str = "rotary embedding pair values";
const LABEL_SHAPE: &[u8] = b"attention/rope/shape";
const LABEL_OUTPUT: &[u8] = b"attention/rope/output";
const LABEL_PAIR: &[u8] = b"attention/rope/pair-values";
const LABEL_PAIR_POINT: &[u8] = b"attention/rope/pair-point";

/// Largest `|P|` (so every `T` is exact in `i64`).
pub const ROPE_INPUT_BOUND_BITS: u32 = 31;

/// Largest fraction bits `f` of the cosine and sine tables (one range lookup of `2^f` rows).
pub const MAX_ROPE_FRACTION_BITS: u32 = 16;

/// The rotated output's range: `R + 2^15 ∈ [0, 2^16)`, so `|R| ≤ 2^15` (a rotation grows an
/// entry by at most √2: inputs up to `2^14` always fit).
pub const ROTARY_OUTPUT_BITS: u32 = 16;

/// A model's rotary embedding: its frequency base and the tables' fraction bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct RotaryParams {
    /// The frequency base.
    pub base: u64,
    /// `f` (`1..=16`).
    pub fraction_bits: u32,
}

impl RotaryParams {
    /// The rotation of `rows` tokens with `heads` heads of `head_dim`.
    pub fn shape(&self, rows: usize, heads: usize, head_dim: usize) -> RotaryShape {
        RotaryShape {
            rows,
            heads,
            head_dim,
            base: self.base,
            fraction_bits: self.fraction_bits,
            output_bits: ROTARY_OUTPUT_BITS,
        }
    }
}

/// The public shape of one rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct RotaryShape {
    /// Tokens `s` (positions `0..s`).
    pub rows: usize,
    /// Heads `h`.
    pub heads: usize,
    /// Head width `m` (a power of two, at least 2).
    pub head_dim: usize,
    /// The frequency base (10 000 in Llama 2, 100 000 in SmolLM2).
    pub base: u64,
    /// `f`: the tables' scale `2^f` and the rounding shift (`1..=16`).
    pub fraction_bits: u32,
    /// `b`: the output is range-checked, `R + 2^(b−1) ∈ [0, 2^b)` (`1..=16`).
    pub output_bits: u32,
}

impl RotaryShape {
    /// Checks the shape.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.rows == 0 || self.heads == 0 {
            return Err(AttentionError::InvalidShape("a rotation needs at least one token and head".into()));
        }
        if self.head_dim < 2 || !self.head_dim.is_power_of_two() {
            return Err(AttentionError::InvalidShape(format!(
                "rotary embeddings need a power-of-two head width, not {}",
                self.head_dim
            )));
        }
        if self.base < 2 {
            return Err(AttentionError::InvalidShape("the rotary base must be at least 2".into()));
        }
        if !(1..=MAX_ROPE_FRACTION_BITS).contains(&self.fraction_bits) {
            return Err(AttentionError::InvalidShape(format!(
                "rotary tables take 1 to {MAX_ROPE_FRACTION_BITS} fraction bits, not {}",
                self.fraction_bits
            )));
        }
        SignedRange::new(self.output_bits)?;
        let vars = self.grid_vars();
        if vars > crate::MAX_TENSOR_VARS {
            return Err(AttentionError::InvalidShape("the rotated tensor is too large".into()));
        }
        Ok(())
    }

    /// `n = h·m`.
    pub fn width(&self) -> usize {
        self.heads * self.head_dim
    }

    fn row_vars(&self) -> usize {
        self.rows.next_power_of_two().trailing_zeros() as usize
    }

    fn column_vars(&self) -> usize {
        self.width().next_power_of_two().trailing_zeros() as usize
    }

    /// `log ŝ + log n̂`.
    pub fn grid_vars(&self) -> usize {
        self.row_vars() + self.column_vars()
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                self.rows,
                self.heads,
                self.head_dim,
                self.base as usize,
                self.fraction_bits as usize,
                self.output_bits as usize,
            ],
        );
    }

    /// `C′` and `S′` (`s × m/2`, row-major): `round(2^f·cos(i·θ_t))`, `round(2^f·sin(i·θ_t))`.
    pub fn tables(&self) -> (Vec<i64>, Vec<i64>) {
        let half = self.head_dim / 2;
        let scale = f64::from(1u32 << self.fraction_bits);
        let base = self.base as f64;
        let angles: Vec<f64> = (0..self.rows)
            .flat_map(|i| {
                (0..half).map(move |t| i as f64 * libm::pow(base, -2.0 * t as f64 / self.head_dim as f64))
            })
            .collect();
        let round = |x: f64| libm::round(x * scale) as i64;
        (
            angles.iter().map(|&a| round(libm::cos(a))).collect(),
            angles.iter().map(|&a| round(libm::sin(a))).collect(),
        )
    }

    /// `C` or `S` over the padded grid (`table` is `C′` or `S′`).
    fn grid(&self, table: &[i64]) -> Vec<Fr> {
        let (width, half, m) = (1usize << self.column_vars(), self.head_dim / 2, self.head_dim);
        let n = self.width();
        (0..width << self.row_vars())
            .into_par_iter()
            .with_min_len(1024)
            .map(|g| {
                let (i, c) = (g / width, g % width);
                if i >= self.rows || c >= n {
                    return Fr::from(0u64);
                }
                fr_from_i64(table[i * half + (c % m) / 2])
            })
            .collect()
    }

    /// `C̃(ρ)` or `S̃(ρ)` in closed form: the tables do not depend on the head, nor on the
    /// pair bit, so `C̃(ρ) = prefix(h, ρ_head)·Σ_{i<s, t<m/2} eq(ρ_row, i)·eq(ρ_j′, t)·C′(i, t)`.
    fn table_value(&self, table: &[i64], point: &[Fr]) -> Option<Fr> {
        let (columns, rows) = point.split_at_checked(self.column_vars())?;
        let j_vars = self.head_dim.trailing_zeros() as usize;
        let (j, head) = columns.split_at_checked(j_vars)?;
        let pair_rest = j.get(1..)?;
        let row_weights = eq_table(rows);
        let pair_weights = eq_table(pair_rest);
        let half = self.head_dim / 2;
        let mut sum = Fr::from(0u64);
        for (i, row) in table.chunks(half.max(1)).enumerate().take(self.rows) {
            let mut inner = Fr::from(0u64);
            for (w, &v) in pair_weights.iter().zip(row) {
                inner += *w * fr_from_i64(v);
            }
            sum += *row_weights.get(i)? * inner;
        }
        Some(sum * prefix_eq_sum(self.heads, head))
    }
}

/// `P` and `R` (`s × h·m`, row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotaryWitness {
    /// `P`: before the rotation.
    pub input: Vec<i64>,
    /// `R`: rotated and rounded.
    pub output: Vec<i64>,
}

/// `T = P∘C + Pσ∘S` over the padded grid, exact (`|P| < 2^31`, `|C|, |S| ≤ 2^16`).
fn rotated_products(shape: &RotaryShape, input: &[i64], cos: &[i64], sin: &[i64]) -> Vec<i64> {
    let (width, n, m, half) =
        (1usize << shape.column_vars(), shape.width(), shape.head_dim, shape.head_dim / 2);
    (0..width << shape.row_vars())
        .into_par_iter()
        .with_min_len(1024)
        .map(|g| {
            let (i, c) = (g / width, g % width);
            if i >= shape.rows || c >= n {
                return 0;
            }
            let t = i * half + (c % m) / 2;
            let p = input[i * n + c];
            let swapped = if c % 2 == 0 { -input[i * n + c + 1] } else { input[i * n + c - 1] };
            p * cos[t] + swapped * sin[t]
        })
        .collect()
}

fn check_input(shape: &RotaryShape, input: &[i64]) -> Result<(), AttentionError> {
    shape.validate()?;
    check_tensor_sizes(&[("P", input.len(), shape.rows, shape.width())])?;
    if let Some((index, v)) =
        input.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= 1u64 << ROPE_INPUT_BOUND_BITS)
    {
        return Err(AttentionError::ValueOutOfRange {
            tensor: "P",
            index,
            value: *v,
            bound_bits: ROPE_INPUT_BOUND_BITS,
        });
    }
    Ok(())
}

/// The reference rotation `R = ⌊(P∘C + Pσ∘S + 2^(f−1)) / 2^f⌋` (`s × h·m`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`].
pub fn compute_rotation(shape: &RotaryShape, input: &[i64]) -> Result<Vec<i64>, AttentionError> {
    check_input(shape, input)?;
    let (cos, sin) = shape.tables();
    let f = shape.fraction_bits;
    let width = 1usize << shape.column_vars();
    let products = rotated_products(shape, input, &cos, &sin);
    Ok((0..shape.rows * shape.width())
        .map(|k| {
            let (i, c) = (k / shape.width(), k % shape.width());
            (products[i * width + c] + (1i64 << (f - 1))) >> f
        })
        .collect())
}

/// What a rotation commits to for its range checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotaryRanges {
    /// Multiplicities of `D` in `[0, 2^f)`.
    pub remainder_multiplicities: Vec<i64>,
    /// Multiplicities of `R + 2^(b−1)` in `[0, 2^b)`.
    pub output_multiplicities: Vec<i64>,
}

/// The range multiplicities of `D` and of `R` for `witness`.
///
/// # Errors
/// As [`compute_rotation`], [`AttentionError::Lookup`] when a remainder is out of range (the
/// output is not the rounded rotation), [`AttentionError::ValueOutOfRange`] for an output
/// outside the output range.
pub fn rotation_ranges(shape: &RotaryShape, witness: &RotaryWitness) -> Result<RotaryRanges, AttentionError> {
    let remainder_multiplicities = remainder_multiplicities(shape, witness)?;
    let range = SignedRange::new(shape.output_bits)?;
    let output_multiplicities = range.multiplicities("R", &padded_output(shape, witness))?;
    Ok(RotaryRanges { remainder_multiplicities, output_multiplicities })
}

/// `R` zero-padded to the `ŝ × n̂` grid.
fn padded_output(shape: &RotaryShape, witness: &RotaryWitness) -> Vec<i64> {
    crate::projection::pad(&witness.output, shape.rows, shape.width(), shape.row_vars(), shape.column_vars())
}

fn remainder_multiplicities(
    shape: &RotaryShape,
    witness: &RotaryWitness,
) -> Result<Vec<i64>, AttentionError> {
    let remainders = remainders(shape, witness)?;
    let mut counts = vec![0i64; 1usize << shape.fraction_bits];
    for (index, d) in remainders.into_iter().enumerate() {
        match usize::try_from(d).ok().and_then(|d| counts.get_mut(d)) {
            Some(count) => *count += 1,
            None => {
                return Err(AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable {
                    table: "range",
                    index,
                    value: d,
                }));
            }
        }
    }
    Ok(counts)
}

/// `D = T + 2^(f−1) − 2^f·R` over the padded grid (a cheating prover's may leave the range).
fn remainders(shape: &RotaryShape, witness: &RotaryWitness) -> Result<Vec<i64>, AttentionError> {
    check_input(shape, &witness.input)?;
    check_tensor_sizes(&[("R", witness.output.len(), shape.rows, shape.width())])?;
    let (cos, sin) = shape.tables();
    let f = shape.fraction_bits;
    let (width, n) = (1usize << shape.column_vars(), shape.width());
    let products = rotated_products(shape, &witness.input, &cos, &sin);
    Ok(products
        .iter()
        .enumerate()
        .map(|(g, t)| {
            let (i, c) = (g / width, g % width);
            let r = if i < shape.rows && c < n { witness.output[i * n + c] } else { 0 };
            t.saturating_add(1 << (f - 1)).saturating_sub(r.saturating_mul(1 << f))
        })
        .collect())
}

/// A rotation's proof in either mode after its lookups (the layer's batch): `P` the
/// sum-check's, `S` a sent value (`Fr` or a commitment), `Z` a relations proof (nothing in the
/// plain mode).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct RotaryProof<
    P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof,
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// `y = R(r)`.
    pub output_value: S,
    /// The output range's column claim is `y + 2^(b−1)`.
    pub output_range: Z,
    /// The sum-check of `T(r)`.
    pub sumcheck: P,
    /// `a_0 = P(0, ρ′)`, `a_1 = P(1, ρ′)`.
    pub pair_values: Vec<S>,
    /// `P(ρ)` and `Pσ(ρ)` (the sum-check's hidden factors) from `a_0`, `a_1`.
    pub pair_relations: Z,
}

/// A [`RotaryProof`] in mode `M`.
pub type RotaryProofOf<M> = RotaryProof<
    <M as crate::mode::ProductMode>::ProductProof,
    <M as crate::mode::ProductMode>::Sent,
    <M as crate::mode::ProductMode>::ZeroProof,
>;

/// The claims a rotation leaves to the caller (values `Fr` in the plain mode, committed in
/// zero knowledge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotaryClaims<V = Fr> {
    /// On `P` (`ŝ × n̂`).
    pub input: EvalClaim<V>,
    /// On `R` (`ŝ × n̂`).
    pub output: EvalClaim<V>,
    /// On the range multiplicities (`2^f`).
    pub multiplicities: EvalClaim<V>,
    /// On the output range's multiplicities (`2^b`).
    pub output_multiplicities: EvalClaim<V>,
}

/// `eq·P·C + eq·Pσ·S` over the MLEs `[eq, P, C, Pσ, S]`; `eq`, `C`, `S` public.
fn rotation_sum() -> Result<ZkProductShape, AttentionError> {
    let term = |factors: Vec<usize>| ProductTerm { coefficient: Fr::one(), factors };
    let sum = SumOfProducts::new(5, vec![term(vec![0, 1, 2]), term(vec![0, 3, 4])])
        .map_err(sumcheck_error(STEP))?;
    sum_of_products(STEP, sum, vec![true, false, true, false, true])
}

/// The rotation's lookups: `D ∈ [0, 2^f)` and the output range, both over the grid.
fn lookups(shape: &RotaryShape) -> Result<RescaledLookups, AttentionError> {
    RescaledLookups::new(shape.fraction_bits, shape.output_bits, shape.grid_vars())
}

/// The masked sum-checks of a rotation in zero knowledge after its lookups (the layer's
/// batch): the rotation's sum-check.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape [`RotaryShape::validate`] refuses.
pub fn rotation_zk_schedule(shape: &RotaryShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    shape.validate()?;
    Ok(vec![(shape.grid_vars(), 3)])
}

/// [`rotation_zk_schedule`] with the rotation's own lookup batch first
/// ([`prove_rotation_alone`]).
///
/// # Errors
/// As [`rotation_zk_schedule`].
pub fn rotation_alone_zk_schedule(shape: &RotaryShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    let mut schedule = lookup_parts_zk_schedule(&[rotation_lookup_statements(shape)?]);
    schedule.extend(rotation_zk_schedule(shape)?);
    Ok(schedule)
}

/// A rotation's lookups, as the layer's batch states them ([`crate::lookup_batch`]): the
/// remainder `D ∈ [0, 2^f)` and the output range, both over the grid.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape [`RotaryShape::validate`] refuses.
pub fn rotation_lookup_statements(
    shape: &RotaryShape,
) -> Result<Vec<LookupStatement<'static>>, AttentionError> {
    shape.validate()?;
    let rescaled = lookups(shape)?;
    let [remainder, output] = rescaled.tables();
    Ok(vec![
        LookupStatement::new(*remainder, shape.grid_vars()),
        LookupStatement::new(*output, shape.grid_vars()),
    ])
}

/// `P(ρ) − ((1−ρ_0)·a_0 + ρ_0·a_1)` and `Pσ(ρ) − (ρ_0·a_0 − (1−ρ_0)·a_1)`: zero when the pair
/// values are `P`'s at `(0, ρ′)` and `(1, ρ′)`.
fn pair_targets<V: LinearValue>(rho0: Fr, [input, swapped]: [&V; 2], [a0, a1]: [&V; 2]) -> Vec<V> {
    vec![
        input.plus_scaled(-(Fr::one() - rho0), a0).plus_scaled(-rho0, a1),
        swapped.plus_scaled(-rho0, a0).plus_scaled(Fr::one() - rho0, a1),
    ]
}

/// A rotation's padded tables over the grid, computed once for the layer's lookup batch and
/// the steps (a cheating prover's, in tests, with a field output evaluated in place of the
/// integers the output range looks up).
pub struct RotationTables {
    input: Vec<i64>,
    remainders: Vec<i64>,
    output: Vec<i64>,
    output_field: Option<Vec<Fr>>,
    /// The output range's column `R + 2^(b−1)`.
    shifted: Vec<i64>,
}

impl RotationTables {
    /// The honest prover's tables of `witness`.
    ///
    /// # Errors
    /// Bad shapes or tensors.
    pub fn new(shape: &RotaryShape, witness: &RotaryWitness) -> Result<Self, AttentionError> {
        let remainders = remainders(shape, witness)?;
        let pad = |values: &[i64]| {
            crate::projection::pad(values, shape.rows, shape.width(), shape.row_vars(), shape.column_vars())
        };
        Self::with(shape, pad(&witness.input), remainders, pad(&witness.output), None)
    }

    /// Given padded tables.
    fn with(
        shape: &RotaryShape,
        input: Vec<i64>,
        remainders: Vec<i64>,
        output: Vec<i64>,
        output_field: Option<Vec<Fr>>,
    ) -> Result<Self, AttentionError> {
        let shifted = SignedRange::new(shape.output_bits)?.entries(&output);
        Ok(Self { input, remainders, output, output_field, shifted })
    }

    /// The rotation's lookups for the layer's batch, in [`rotation_lookup_statements`] order,
    /// with the range data's multiplicities ([`rotation_ranges`]; a cheating prover may pass
    /// others).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for a bad shape.
    pub fn lookups<'a>(
        &'a self,
        shape: &RotaryShape,
        ranges: &'a RotaryRanges,
    ) -> Result<Vec<PreparedLookup<'a>>, AttentionError> {
        let [remainder, output] =
            <[LookupStatement<'static>; 2]>::try_from(rotation_lookup_statements(shape)?)
                .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
        Ok(vec![
            PreparedLookup::column(
                remainder,
                Cow::Borrowed(&self.remainders),
                &ranges.remainder_multiplicities,
            ),
            PreparedLookup::column(output, Cow::Borrowed(&self.shifted), &ranges.output_multiplicities),
        ])
    }
}

/// A rotation's proof alone (its lookups a batch of their own): tests.
pub type RotaryAloneProofOf<M> = AloneProof<M, RotaryProofOf<M>>;

/// Proves a rotation alone: its lookups, then [`prove_rotation`].
///
/// # Errors
/// As [`RotationTables::new`] and [`prove_rotation`].
pub fn prove_rotation_alone<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &RotaryShape,
    witness: &RotaryWitness,
    ranges: &RotaryRanges,
    transcript: &mut Transcript,
) -> Result<(RotaryAloneProofOf<M>, RotaryClaims<M::ProverValue>), AttentionError> {
    let tables = RotationTables::new(shape, witness)?;
    prove_rotation_with::<M>(prover, shape, &tables, ranges, transcript)
}

/// [`prove_rotation_alone`] on given tables.
pub(crate) fn prove_rotation_with<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &RotaryShape,
    tables: &RotationTables,
    ranges: &RotaryRanges,
    transcript: &mut Transcript,
) -> Result<(RotaryAloneProofOf<M>, RotaryClaims<M::ProverValue>), AttentionError> {
    prove_alone::<M, _, _>(prover, tables.lookups(shape, ranges)?, transcript, |p, claims, t| {
        prove_rotation::<M>(p, shape, tables, claims, t)
    })
}

/// Verifies [`prove_rotation_alone`].
///
/// # Errors
/// As [`verify_rotation`].
pub fn verify_rotation_alone<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &RotaryShape,
    proof: &RotaryAloneProofOf<M>,
    transcript: &mut Transcript,
) -> Result<RotaryClaims<M::Value>, AttentionError> {
    let Alone { lookups, steps } = proof;
    verify_alone::<M, _>(verifier, rotation_lookup_statements(shape)?, lookups, transcript, |v, claims, t| {
        verify_rotation::<M>(v, shape, steps, claims, t)
    })
}

/// Proves the rotation of `tables` in mode `M` from its lookups' claims (the layer's batch,
/// [`RotationTables::lookups`]).
///
/// # Errors
/// Lookup claims of the wrong structure, the sum-check's and relations' errors.
pub fn prove_rotation<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &RotaryShape,
    tables: &RotationTables,
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<(RotaryProofOf<M>, RotaryClaims<M::ProverValue>), AttentionError> {
    let (p, out, output_field) = (&tables.input, &tables.output, tables.output_field.as_deref());
    shape.append_to_transcript(transcript);
    let grid_vars = shape.grid_vars();
    let rescaled = lookups(shape)?;
    let r =
        claims.first().map(|c| c.witness_point.clone()).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let output_value = match output_field {
        None => DenseMultilinearExtension::from_i64(grid_vars, out)?.evaluate(&r)?,
        Some(table) => DenseMultilinearExtension::new(grid_vars, table.to_vec())?.evaluate(&r)?,
    };
    let (output_sent, output_held) = M::send(prover, LABEL_OUTPUT, &[output_value], transcript);
    let (output_sent, output) = match (output_sent.into_iter().next(), output_held.into_iter().next()) {
        (Some(sent), Some(held)) => (sent, held),
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    let one = M::prover_constant(prover, Fr::one());
    let (remainder, multiplicities, target) =
        rescaled.claims(claims, &output, &one, [STEP, STEP_OUTPUT_RANGE])?;
    let output_range = M::prove_zero(prover, STEP_OUTPUT_RANGE, vec![target], transcript)?;

    let (cos, sin) = shape.tables();
    let swapped: Vec<i64> = (0..p.len()).map(|g| if g % 2 == 0 { -p[g + 1] } else { p[g - 1] }).collect();
    let mles = vec![
        DenseMultilinearExtension::new(grid_vars, eq_table(&r))?,
        DenseMultilinearExtension::from_i64(grid_vars, p)?,
        DenseMultilinearExtension::new(grid_vars, shape.grid(&cos))?,
        DenseMultilinearExtension::from_i64(grid_vars, &swapped)?,
        DenseMultilinearExtension::new(grid_vars, shape.grid(&sin))?,
    ];
    let sum = rescaled_product(shape.fraction_bits, &remainder.value, &output, &one);
    let (sumcheck, outcome) = prove_dense::<M>(prover, STEP, &rotation_sum()?, mles, &sum, transcript)?;
    let rho = outcome.point.clone();
    let rho0 = *rho.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let rest = rho.get(1..).unwrap_or(&[]);
    let input_mle = DenseMultilinearExtension::from_i64(grid_vars, p)?;
    let zero = Fr::from(0u64);
    let pairs =
        [input_mle.evaluate(&[&[zero], rest].concat())?, input_mle.evaluate(&[&[Fr::one()], rest].concat())?];
    #[cfg(test)]
    let pairs = cheating_pairs::changed(pairs, rho0);
    let (pair_values, held) = M::send(prover, LABEL_PAIR, &pairs, transcript);
    let [a0, a1] =
        <[M::ProverValue; 2]>::try_from(held).map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let (input_end, swapped_end) =
        (outcome.hidden(1, rho.clone(), STEP)?, outcome.hidden(3, rho.clone(), STEP)?);
    let targets = pair_targets(rho0, [&input_end.value, &swapped_end.value], [&a0, &a1]);
    let pair_relations = M::prove_zero(prover, STEP_PAIR, targets, transcript)?;
    let claims = finish(&r, &rho, [&a0, &a1], output, multiplicities, transcript);
    let proof =
        RotaryProof { output_value: output_sent, output_range, sumcheck, pair_values, pair_relations };
    Ok((proof, claims))
}

/// Draws `τ` and forms the claims: `P(τ, ρ′) = (1−τ)·a_0 + τ·a_1`.
fn finish<V: LinearValue>(
    r: &[Fr],
    rho: &[Fr],
    [a0, a1]: [&V; 2],
    output: V,
    [multiplicities, output_multiplicities]: [EvalClaim<V>; 2],
    transcript: &mut Transcript,
) -> RotaryClaims<V> {
    let tau = transcript.challenge_field(LABEL_PAIR_POINT);
    let rest = rho.get(1..).unwrap_or(&[]);
    RotaryClaims {
        input: EvalClaim {
            point: [&[tau], rest].concat(),
            value: a0.times(Fr::one() - tau).plus_scaled(tau, a1),
        },
        output: EvalClaim { point: r.to_vec(), value: output },
        multiplicities,
        output_multiplicities,
    }
}

/// Verifies a rotation in mode `M` from its lookups' claims (the layer's batch, in
/// [`rotation_lookup_statements`] order); returns the claims the caller must discharge.
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookups' errors, [`AttentionError::Sumcheck`], or
/// [`AttentionError::CheckFailed`]: `"rotary embedding"` for a public factor (eq, C, S) that is
/// not its closed form, `"rotary embedding pair values"` for pair values that do not give the
/// sum-check's `P(ρ)`, `Pσ(ρ)`, `"rotary embedding output range"` (in zero knowledge the
/// relations' group equations are left in the deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_rotation<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &RotaryShape,
    proof: &RotaryProofOf<M>,
    claims: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<RotaryClaims<M::Value>, AttentionError> {
    shape.validate()?;
    shape.append_to_transcript(transcript);
    let fail = || AttentionError::CheckFailed { step: STEP };
    let grid_vars = shape.grid_vars();
    let rescaled = lookups(shape)?;
    let r = claims.first().map(|c| c.witness_point.clone()).ok_or_else(fail)?;
    let output = M::receive(verifier, LABEL_OUTPUT, std::slice::from_ref(&proof.output_value), transcript)
        .into_iter()
        .next()
        .ok_or_else(fail)?;
    let one = M::verifier_constant(verifier, Fr::one());
    let (remainder, multiplicities, target) =
        rescaled.claims(claims, &output, &one, [STEP, STEP_OUTPUT_RANGE])?;
    M::verify_zero(verifier, STEP_OUTPUT_RANGE, vec![target], &proof.output_range, transcript)?;
    let sum = rescaled_product(shape.fraction_bits, &remainder.value, &output, &one);
    let outcome =
        verify_single::<M>(verifier, STEP, &rotation_sum()?, grid_vars, &sum, &proof.sumcheck, transcript)?;
    let rho = outcome.point.clone();
    let rho0 = *rho.first().ok_or_else(fail)?;
    let (cos, sin) = shape.tables();
    outcome.check_public(0, eq_evaluation(&r, &rho)?, STEP)?;
    outcome.check_public(2, shape.table_value(&cos, &rho).ok_or_else(fail)?, STEP)?;
    outcome.check_public(4, shape.table_value(&sin, &rho).ok_or_else(fail)?, STEP)?;
    let (input_end, swapped_end) =
        (outcome.hidden(1, rho.clone(), STEP)?, outcome.hidden(3, rho.clone(), STEP)?);
    if proof.pair_values.len() != 2 {
        return Err(AttentionError::CheckFailed { step: STEP_PAIR });
    }
    let pairs = M::receive(verifier, LABEL_PAIR, &proof.pair_values, transcript);
    let [a0, a1] =
        <[M::Value; 2]>::try_from(pairs).map_err(|_| AttentionError::CheckFailed { step: STEP_PAIR })?;
    let targets = pair_targets(rho0, [&input_end.value, &swapped_end.value], [&a0, &a1]);
    M::verify_zero(verifier, STEP_PAIR, targets, &proof.pair_relations, transcript)?;
    Ok(finish(&r, &rho, [&a0, &a1], output, multiplicities, transcript))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn closed_form_tables_match_their_materialized_mles() {
        for (rows, heads, head_dim) in [(1, 1, 2), (5, 3, 4), (8, 2, 8), (6, 9, 2)] {
            let shape = RotaryShape {
                rows,
                heads,
                head_dim,
                base: 10_000,
                fraction_bits: 12,
                output_bits: ROTARY_OUTPUT_BITS,
            };
            let (cos, sin) = shape.tables();
            let point: Vec<Fr> = (0..shape.grid_vars()).map(|i| fr_from_i64(3 + 5 * i as i64)).collect();
            for table in [&cos, &sin] {
                let materialized = DenseMultilinearExtension::new(shape.grid_vars(), shape.grid(table))
                    .unwrap()
                    .evaluate(&point)
                    .unwrap();
                assert_eq!(shape.table_value(table, &point), Some(materialized), "{shape:?}");
            }
        }
    }

    #[test]
    fn the_tables_are_the_rounded_angles() {
        let shape = RotaryShape {
            rows: 3,
            heads: 1,
            head_dim: 4,
            base: 10_000,
            fraction_bits: 14,
            output_bits: ROTARY_OUTPUT_BITS,
        };
        let (cos, sin) = shape.tables();
        // Position 0: cos 1, sin 0; position 2, pair 1: angle 2·10000^(−1/2) = 0.02.
        assert_eq!((cos[0], sin[0], cos[1], sin[1]), (1 << 14, 0, 1 << 14, 0));
        assert_eq!(cos[5], (16384.0 * 0.02f64.cos()).round() as i64);
        assert_eq!(sin[5], (16384.0 * 0.02f64.sin()).round() as i64);
        assert_eq!(sin[2], (16384.0 * 1f64.sin()).round() as i64);
    }
}

/// The cos/sin closed forms at random points on more shapes (from the audit).
#[cfg(test)]
mod closed_forms_on_more_shapes {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};

    #[test]
    fn closed_form_tables_on_more_shapes() {
        let mut rng = StdRng::seed_from_u64(13);
        for (rows, heads, head_dim) in
            [(100, 12, 8), (7, 9, 64), (48, 3, 16), (1, 1, 2), (9, 12, 4), (33, 5, 32)]
        {
            let shape = RotaryShape {
                rows,
                heads,
                head_dim,
                base: 100_000,
                fraction_bits: 14,
                output_bits: ROTARY_OUTPUT_BITS,
            };
            let (cos, sin) = shape.tables();
            for _ in 0..2 {
                let point: Vec<Fr> = (0..shape.grid_vars()).map(|_| Fr::rand(&mut rng)).collect();
                for table in [&cos, &sin] {
                    let materialized = DenseMultilinearExtension::new(shape.grid_vars(), shape.grid(table))
                        .unwrap()
                        .evaluate(&point)
                        .unwrap();
                    assert_eq!(shape.table_value(table, &point), Some(materialized), "{shape:?}");
                }
            }
        }
    }
}

/// A malicious prover that moves the pair values `(a_0, a_1)` along a direction that keeps
/// one of the two pair relations true and breaks the other (test-only hook in
/// [`prove_rotation_with`]; every later message follows honestly): each relation is needed, and
/// each rejects it alone, in both modes.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod cheating_pairs {
    use super::*;
    use crate::mode::zk_test_support::zk_round;
    use crate::mode::{Plain, Zk};
    use std::cell::Cell;

    /// Which relation the change keeps.
    #[derive(Clone, Copy)]
    enum Keep {
        /// `P(ρ) = (1−ρ_0)·a_0 + ρ_0·a_1` (moves along `(ρ_0, −(1−ρ_0))`).
        Input,
        /// `Pσ(ρ) = ρ_0·a_0 − (1−ρ_0)·a_1` (moves along `(1−ρ_0, ρ_0)`).
        Swapped,
    }

    thread_local! {
        static CHEAT: Cell<Option<Keep>> = const { Cell::new(None) };
    }

    /// The prover's hook.
    pub(super) fn changed([a0, a1]: [Fr; 2], rho0: Fr) -> [Fr; 2] {
        match CHEAT.with(Cell::get) {
            None => [a0, a1],
            Some(Keep::Input) => [a0 + rho0, a1 - (Fr::one() - rho0)],
            Some(Keep::Swapped) => [a0 + (Fr::one() - rho0), a1 + rho0],
        }
    }

    fn case() -> (RotaryShape, RotaryWitness, RotaryRanges) {
        let shape = RotaryShape {
            rows: 5,
            heads: 2,
            head_dim: 4,
            base: 10_000,
            fraction_bits: 12,
            output_bits: ROTARY_OUTPUT_BITS,
        };
        let input: Vec<i64> = (0..5 * 8).map(|k| (k as i64 * 7919) % 2001 - 1000).collect();
        let witness = RotaryWitness { output: compute_rotation(&shape, &input).unwrap(), input };
        let ranges = rotation_ranges(&shape, &witness).unwrap();
        (shape, witness, ranges)
    }

    fn plain(keep: Option<Keep>) -> Result<(), AttentionError> {
        let (shape, witness, ranges) = case();
        CHEAT.with(|c| c.set(keep));
        let proved =
            prove_rotation_alone::<Plain>(&mut (), &shape, &witness, &ranges, &mut Transcript::new(b"t"));
        CHEAT.with(|c| c.set(None));
        let (proof, _) = proved.unwrap();
        verify_rotation_alone::<Plain>(&mut (), &shape, &proof, &mut Transcript::new(b"t")).map(|_| ())
    }

    fn zero_knowledge(keep: Option<Keep>) -> Result<(), AttentionError> {
        let (shape, witness, ranges) = case();
        CHEAT.with(|c| c.set(keep));
        let verdict = zk_round(
            rotation_alone_zk_schedule(&shape).unwrap(),
            |p, t| prove_rotation_alone::<Zk>(p, &shape, &witness, &ranges, t),
            |v, t, (proof, _)| verify_rotation_alone::<Zk>(v, &shape, proof, t),
        );
        CHEAT.with(|c| c.set(None));
        verdict.map(|_| ())
    }

    #[test]
    fn each_pair_relation_alone_rejects_pair_values_that_break_it() {
        assert_eq!(plain(None), Ok(()));
        assert_eq!(zero_knowledge(None), Ok(()));
        for keep in [Keep::Input, Keep::Swapped] {
            assert_eq!(plain(Some(keep)), Err(AttentionError::CheckFailed { step: STEP_PAIR }));
            assert_eq!(
                zero_knowledge(Some(keep)),
                Err(AttentionError::ZeroKnowledge {
                    step: "the group equations",
                    source: zkmha_zk::ZkError::RelationMismatch
                })
            );
        }
    }
}

/// Malicious-prover regression (the audit's reproducer): a committed output `R' = R ± 1/2` (a
/// field element) with the remainder moved by `2^(f−1)`. At 30b0ad6 the rotation accepted it;
/// the output range now rejects it (the cheater can only look up an integer column: the honest
/// `R + 2^(b−1)`).
#[cfg(test)]
mod forgery_regression {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;
    use crate::mode::zk_test_support::zk_round;
    use crate::mode::{Plain, Zk};
    use ark_ff::{BigInteger, PrimeField};
    use zkmha_field::Field;

    #[test]
    fn a_non_integer_rotation_output_is_rejected() {
        let shape = RotaryShape {
            rows: 5,
            heads: 3,
            head_dim: 4,
            base: 10_000,
            fraction_bits: 12,
            output_bits: ROTARY_OUTPUT_BITS,
        };
        let input: Vec<i64> = (0..5 * 12).map(|k| (k as i64 * 7919) % 2001 - 1000).collect();
        let output = compute_rotation(&shape, &input).unwrap();
        let witness = RotaryWitness { input: input.clone(), output: output.clone() };
        let f = shape.fraction_bits;
        let mut remainders = remainders(&shape, &witness).unwrap();
        let width = 1usize << shape.column_vars();
        let (i0, c0) = (3usize, 5usize);
        let g = i0 * width + c0;
        let half = 1i64 << (f - 1);
        let eps = if remainders[g] >= half { half } else { -half };
        remainders[g] -= eps;
        let mut counts = vec![0i64; 1 << f];
        for &d in &remainders {
            counts[d as usize] += 1;
        }
        let (row_vars, column_vars) = (shape.row_vars(), shape.column_vars());
        let pad =
            |values: &[i64]| crate::projection::pad(values, shape.rows, shape.width(), row_vars, column_vars);
        let (p, out) = (pad(&input), pad(&output));
        let mut out_field: Vec<Fr> = out.iter().map(|&v| fr_from_i64(v)).collect();
        out_field[g] += fr_from_i64(eps) * Fr::from(1u64 << f).inverse().unwrap();

        // The cheating prover: prove_rotation with the forged remainders and output.
        let output_counts = SignedRange::new(shape.output_bits).unwrap().multiplicities("R", &out).unwrap();
        let ranges = RotaryRanges { remainder_multiplicities: counts, output_multiplicities: output_counts };
        let tables = RotationTables::with(&shape, p, remainders, out, Some(out_field.clone())).unwrap();
        assert!(out_field[g].into_bigint().num_bits() > 64 && (-out_field[g]).into_bigint().num_bits() > 64);
        let mut transcript = Transcript::new(b"audit-rope");
        let (proof, _) =
            prove_rotation_with::<Plain>(&mut (), &shape, &tables, &ranges, &mut transcript).unwrap();
        assert_eq!(
            verify_rotation_alone::<Plain>(&mut (), &shape, &proof, &mut Transcript::new(b"audit-rope")),
            Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE })
        );
        // In zero knowledge: the output range's relation fails among the group equations.
        let verdict = zk_round(
            rotation_alone_zk_schedule(&shape).unwrap(),
            |prover, t| prove_rotation_with::<Zk>(prover, &shape, &tables, &ranges, t),
            |verifier, t, (proof, _)| verify_rotation_alone::<Zk>(verifier, &shape, proof, t),
        );
        assert_eq!(
            verdict.err(),
            Some(AttentionError::ZeroKnowledge {
                step: "the group equations",
                source: zkmha_zk::ZkError::RelationMismatch
            })
        );
    }
}
