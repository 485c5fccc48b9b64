//! A fixed-point linear layer: `Y = round((X·W + b) / 2^k)`, the building block of the
//! `Q`, `K`, `V` projections and the output projection (issue 6). Claims on `Y` are not
//! needed: the step ties the tensors together, and its claims on `X`, `W`, `b`, `Y` and the
//! range multiplicities go to the caller's openings (or public evaluations). One
//! implementation for both modes ([`crate::mode`]): the lookups stated and prepared here, proven in
//! the layer's one batch ([`crate::lookup_batch`]; alone: [`prove_projections_alone`]), the
//! sent values through `M::send`, the output range's relation through `M::prove_zero`, the
//! batched products through `M::prove_products` (`X` and `W` hidden factors).
//!
//! ```text
//! tensors    X: ŝ × d̂ (index i·d̂ + j),  W: d̂ × n̂ (j·n̂ + c),  b: n̂,  Y: ŝ × n̂ (i·n̂ + c),
//!            zero-padded to powers of two; MLE points [column ‖ row] (little-endian)
//! relation   D(i, c) = Σ_{j<d} X(i, j)·W(j, c) + [i < s]·b(c) + 2^(k−1) − 2^k·Y(i, c)  ∈ [0, 2^k)
//!            ⇔ Y = ⌊(X·W + b + 2^(k−1)) / 2^k⌋ on real rows (round half up), Y = 0 on padded rows
//! absorb     the shape (s, d, n, k); the caller absorbs its commitments before
//! lookup     D ∈ [0, 2^k) (logUp, in the layer's batch; D is never committed) → D([r_c ‖ r_i]) = v,
//!            m(r_t) = μ
//!            output range (when the shape names b): Y + 2^(b−1) ∈ [0, 2^b) in the same batch,
//!            over the same grid, so its column claim sits at [r_c ‖ r_i] too
//!            (crate::output_range): the relation column = y + 2^(b−1)  → m_Y(r_Y) = μ_Y
//!            k > 16: two digits D = D_lo + 2^k_lo·D_hi (k_lo = ⌈k/2⌉), D_hi committed by the
//!            caller (absorbed before), two range lookups D_hi ∈ [0, 2^k_hi) → D_hi(r′) = v′, and
//!            D_lo = D − 2^k_lo·D_hi ∈ [0, 2^k_lo) → D_lo(r) = v_lo; P sends h = D_hi(r);
//!            v = v_lo + 2^k_lo·h
//! P → V      y = Y([r_c ‖ r_i]),  β = b(r_c)
//! sum-check  Σ_j [j < d]·X([j ‖ r_i])·W([r_c ‖ j]) = v − prefix(s, r_i)·β − 2^(k−1) + 2^k·y
//!            (log d̂ vars, degree 3; the selector public, checked against prefix(d, ρ): the
//!            padded input columns of X and rows of W never enter Y, whatever they hold)
//!            batched: every projection's lookup and values first, then one sum-check of
//!            Σ_t α_t·(its product) (crate zkmha_sumcheck's batching; different d̂ allowed)
//!            → ρ_t;  prefix(d_t, ρ_t) public, x_t = X_t([ρ_t ‖ r_i]),  w_t = W_t([r_c ‖ ρ_t])
//!            (the members' hidden factors)
//! claims out X([ρ ‖ r_i]) = x, W([r_c ‖ ρ]) = w, b(r_c) = β, Y([r_c ‖ r_i]) = y, m(r_t) = μ;
//!            two digits: D_hi(r) = h, D_hi(r′) = v′, m_hi(r′_t) = μ′ too; output range: m_Y
//! ```
//!
//! `prefix(s, r_i) = Σ_{i<s} eq(r_i, i)` is the row selector's MLE (closed form). Soundness: the
//! lookup holds every entry of `D` in `[0, 2^k)` with probability ≥ 1 − O(ŝn̂/|F|), the
//! sum-check errs with ≤ 2·log d̂/|F|. The relation holds mod p; it is the integer relation
//! (so `Y` is the rounding above) only when `Y` is an integer of bounded size too: either the
//! shape's output range checks it here, or the caller must pin `Y` by a relation of its own
//! (a committed `Y` with neither is forgeable: `Y' = Y + (D − D')/2^k`). With `|X|, |W| < 2^31`,
//! `d ≤ 2^24`, `|b| < 2^48`, `k ≤ 32` and `|Y| ≤ 2^15`, every term is below 2^87 ≪ p/2; with
//! `|Y| < 2^28` (a block's output projection under an output norm, whose input range pins it)
//! below 2^61.

use crate::AttentionError;
use crate::common::{check_tensor_sizes, sumcheck_error};
use crate::lookup_batch::{
    Alone, AloneProof, LookupStatement, PreparedLookup, lookup_parts_zk_schedule, prove_alone, verify_alone,
};
use crate::mode::{Mode, PlainProductProof, ProductOutcome, ProverMember, product_of};
use crate::output_range::SignedRange;
use crate::structured::prefix_eq_sum;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use std::borrow::Cow;
use zkmha_field::One;
use zkmha_field::{Fr, UnreducedSum, fr_from_i64};
use zkmha_lookup::{LookupClaims, RangeTable};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::{EvalClaim, FinalEvaluations, ProductSumcheck, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{BatchMember, LinearValue};

const STEP: &str = "projection";
const STEP_OUTPUT_RANGE: &str = "projection output range";
const STEP_INPUT_SELECTOR: &str = "projection input selector";
const LABEL_SHAPE: &[u8] = b"attention/projection/shape";
const LABEL_VALUES: &[u8] = b"attention/projection/output-and-bias";
const LABEL_HIGH_DIGIT: &[u8] = b"attention/projection/high-digit";

/// Largest `|entry|` of `X` and `W` (so every `D` is exact in `i128`).
pub const PROJECTION_BOUND_BITS: u32 = 31;

/// Largest `|entry|` of `b`: added once, not multiplied, so wider (fixed-point biases sit at
/// the product's finer scale).
pub const BIAS_BOUND_BITS: u32 = 48;

/// Largest table dimension (variables) a projection accepts.
const MAX_DIMENSION_VARS: usize = 24;

/// Shifts up to this many bits take one range lookup; wider ones two balanced digits, so no
/// range table exceeds `2^16` rows.
pub const SINGLE_DIGIT_BITS: u32 = 16;

/// Largest shift `k`.
pub const MAX_SHIFT_BITS: u32 = 32;

/// The public shape of `Y = round((X·W + b) / 2^k)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProjectionShape {
    /// Rows of `X` and `Y` (tokens) `s`.
    pub rows: usize,
    /// Columns of `X`, rows of `W` `d`.
    pub inputs: usize,
    /// Columns of `W` and `Y`, entries of `b` `n`.
    pub outputs: usize,
    /// The rescaling shift `k` (`1 ≤ k ≤ 32`; above 16 bits the remainder is checked in two
    /// digits).
    pub shift: u32,
    /// `Some(b)`: the committed output is range-checked, `Y + 2^(b−1) ∈ [0, 2^b)`
    /// (`1 ≤ b ≤ 16`). `None`: it is not, and the caller must pin `Y` to integers by another
    /// proven relation (the block's output projection: the residual `Z = R + Y`).
    pub output_bits: Option<u32>,
}

impl ProjectionShape {
    /// Checks the dimensions and the shift.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        let dims = [self.rows, self.inputs, self.outputs];
        if dims.contains(&0) {
            return Err(AttentionError::InvalidShape(
                "a projection needs at least one row, input and output".into(),
            ));
        }
        if dims.iter().any(|d| d.next_power_of_two().trailing_zeros() as usize > MAX_DIMENSION_VARS) {
            return Err(AttentionError::InvalidShape(format!(
                "projection dimensions above 2^{MAX_DIMENSION_VARS} are not supported"
            )));
        }
        if !(1..=MAX_SHIFT_BITS).contains(&self.shift) {
            return Err(AttentionError::InvalidShape(format!(
                "the projection shift k must be 1 to {MAX_SHIFT_BITS} bits"
            )));
        }
        self.output_range().map(|_| ())
    }

    /// The output's range check, if the shape has one.
    pub(crate) fn output_range(&self) -> Result<Option<SignedRange>, AttentionError> {
        self.output_bits.map(SignedRange::new).transpose()
    }

    /// `(k_lo, k_hi)`: the remainder's digits (`k_hi = 0`: one digit).
    pub fn digits(&self) -> (u32, u32) {
        if self.shift <= SINGLE_DIGIT_BITS {
            (self.shift, 0)
        } else {
            let low = self.shift.div_ceil(2);
            (low, self.shift - low)
        }
    }

    /// Whether the remainder is checked in two digits (the caller commits the high digit).
    pub fn has_high_digit(&self) -> bool {
        self.digits().1 > 0
    }

    /// Variables of the padded `ŝ × n̂` grid (`Y`, the remainders, the high digits).
    pub fn grid_vars(&self) -> usize {
        self.row_vars() + self.output_vars()
    }

    /// `log ŝ`.
    pub fn row_vars(&self) -> usize {
        self.rows.next_power_of_two().trailing_zeros() as usize
    }

    /// `log d̂`.
    pub fn input_vars(&self) -> usize {
        self.inputs.next_power_of_two().trailing_zeros() as usize
    }

    /// `log n̂`.
    pub fn output_vars(&self) -> usize {
        self.outputs.next_power_of_two().trailing_zeros() as usize
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        let output_bits = self.output_bits.map_or(0, |b| b as usize);
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                self.rows,
                crate::block::absorbed_width(self.inputs),
                crate::block::absorbed_width(self.outputs),
                self.shift as usize,
                output_bits,
            ],
        );
    }
}

/// The prover's tensors, unpadded and row-major: `X` (`s × d`), `W` (`d × n`), `b` (`n`),
/// `Y` (`s × n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionWitness {
    /// `X`.
    pub input: Vec<i64>,
    /// `W`.
    pub weights: Vec<i64>,
    /// `b`.
    pub bias: Vec<i64>,
    /// `Y`.
    pub output: Vec<i64>,
}

/// What the prover commits to for the range check: the multiplicities and, for two digits,
/// the high digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionRanges {
    /// Multiplicities of the (low) digit in `[0, 2^k_lo)`.
    pub low_multiplicities: Vec<i64>,
    /// `D_hi` over the padded `ŝ × n̂` grid, row-major (empty for one digit).
    pub high_digits: Vec<i64>,
    /// Multiplicities of `D_hi` in `[0, 2^k_hi)` (empty for one digit).
    pub high_multiplicities: Vec<i64>,
    /// Multiplicities of `Y + 2^(b−1)` in `[0, 2^b)` (empty without an output range).
    pub output_multiplicities: Vec<i64>,
}

/// One projection's messages after the batched lookups and before the batched sum-check, in
/// either mode: `S` a sent value (`Fr` or a commitment), `Z` a relations proof (nothing in the
/// plain mode).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProjectionProof<
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// `h = D_hi([r_c ‖ r_i])` (two digits only).
    pub high_digit_value: Option<S>,
    /// `y = Y([r_c ‖ r_i])` and `β = b(r_c)`.
    pub values: Vec<S>,
    /// With an output range: its column claim is `y + 2^(b−1)`.
    pub output_range: Option<Z>,
}

/// Several projections after their lookups (the layer's batch): each one's values and output
/// range, then one batched sum-check of all their products `Σ_j X([j ‖ r_i])·W([r_c ‖ j])`
/// (the `Q`, `K`, `V` and output projections of a block in one). `P` the sum-check's proof,
/// `Z` the relations'.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProjectionsProof<
    P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof,
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// Per projection, in order.
    pub projections: Vec<ProjectionProof<S, Z>>,
    /// The batched sum-check (per projection, `x_t = X_t([ρ_t ‖ r_i])`, `w_t = W_t([r_c ‖ ρ_t])`
    /// at its end).
    pub sumcheck: P,
}

/// A [`ProjectionsProof`] in mode `M`.
pub type ProjectionsProofOf<M> = ProjectionsProof<
    <M as crate::mode::ProductMode>::ProductProof,
    <M as crate::mode::ProductMode>::Sent,
    <M as crate::mode::ProductMode>::ZeroProof,
>;

/// What the step leaves to the caller (values `Fr` in the plain mode, committed in zero
/// knowledge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionClaims<V = Fr> {
    /// On `X` (`ŝ × d̂`).
    pub input: EvalClaim<V>,
    /// On `W` (`d̂ × n̂`).
    pub weights: EvalClaim<V>,
    /// On `b` (`n̂`).
    pub bias: EvalClaim<V>,
    /// On `Y` (`ŝ × n̂`).
    pub output: EvalClaim<V>,
    /// On the (low digit's) range multiplicities (`2^k_lo`).
    pub multiplicities: EvalClaim<V>,
    /// On the high digits and their multiplicities (two digits only).
    pub high: Option<HighDigitClaims<V>>,
    /// On the output range's multiplicities (`2^b`; with an output range only).
    pub output_multiplicities: Option<EvalClaim<V>>,
}

/// Claims on the committed high digits `D_hi` (`ŝ × n̂`) and their multiplicities (`2^k_hi`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HighDigitClaims<V = Fr> {
    /// `D_hi` at the low digit's lookup point (`h`).
    pub at_remainder: EvalClaim<V>,
    /// `D_hi` at its own lookup point.
    pub at_lookup: EvalClaim<V>,
    /// On `m_hi`.
    pub multiplicities: EvalClaim<V>,
}

/// `M` (`rows × columns`, row-major) zero-padded to `2^row_vars × 2^column_vars`.
pub(crate) fn pad(
    values: &[i64],
    rows: usize,
    columns: usize,
    row_vars: usize,
    column_vars: usize,
) -> Vec<i64> {
    let width = 1usize << column_vars;
    let mut out = vec![0i64; width << row_vars];
    for (r, row) in values.chunks(columns.max(1)).take(rows).enumerate() {
        out[r * width..r * width + row.len()].copy_from_slice(row);
    }
    out
}

impl ProjectionWitness {
    fn validate(&self, shape: &ProjectionShape) -> Result<(), AttentionError> {
        Self::validate_parts(shape, &self.input, &self.weights, &self.bias, self.output.len())
    }

    /// [`Self::validate`] on the parts (`output` the length of `Y`).
    fn validate_parts(
        shape: &ProjectionShape,
        input: &[i64],
        weights: &[i64],
        bias: &[i64],
        output: usize,
    ) -> Result<(), AttentionError> {
        shape.validate()?;
        let (s, d, n) = (shape.rows, shape.inputs, shape.outputs);
        check_tensor_sizes(&[
            ("X", input.len(), s, d),
            ("W", weights.len(), d, n),
            ("b", bias.len(), 1, n),
            ("Y", output, s, n),
        ])?;
        let bounded = [
            ("X", input, PROJECTION_BOUND_BITS),
            ("W", weights, PROJECTION_BOUND_BITS),
            ("b", bias, BIAS_BOUND_BITS),
        ];
        for (tensor, values, bits) in bounded {
            if let Some((index, v)) =
                values.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= 1u64 << bits)
            {
                return Err(AttentionError::ValueOutOfRange { tensor, index, value: *v, bound_bits: bits });
            }
        }
        Ok(())
    }

    /// `Y` zero-padded to the `ŝ × n̂` grid.
    fn padded_output(&self, shape: &ProjectionShape) -> Vec<i64> {
        pad(&self.output, shape.rows, shape.outputs, shape.row_vars(), shape.output_vars())
    }

    /// `D` over the padded `ŝ × n̂` grid (row-major), exact.
    fn remainders(&self, shape: &ProjectionShape) -> Vec<i128> {
        let (s, d, n, k) = (shape.rows, shape.inputs, shape.outputs, shape.shift);
        let width = 1usize << shape.output_vars();
        let half = 1i128 << (k - 1);
        let products = crate::integer_product::integer_product(&self.input, &self.weights, s, d, n);
        (0..width << shape.row_vars())
            .into_par_iter()
            .with_min_len(256)
            .map(|index| {
                let (i, c) = (index / width, index % width);
                if i >= s || c >= n {
                    return half;
                }
                products[i * n + c] + i128::from(self.bias[c]) + half
                    - (i128::from(self.output[i * n + c]) << k)
            })
            .collect()
    }
}

/// The reference: `Y = ⌊(X·W + b + 2^(k−1)) / 2^k⌋` (round half up), row-major `s × n`.
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`], or [`AttentionError::NumericRange`] when an output
/// leaves `i64`.
pub fn compute_projection(
    shape: &ProjectionShape,
    input: &[i64],
    weights: &[i64],
    bias: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    let (s, d, n, k) = (shape.rows, shape.inputs, shape.outputs, shape.shift);
    ProjectionWitness::validate_parts(shape, input, weights, bias, s * n)?;
    let products = crate::integer_product::integer_product(input, weights, s, d, n);
    products
        .into_par_iter()
        .enumerate()
        .with_min_len(1024)
        .map(|(index, acc)| {
            let c = index % n;
            let rounded = (acc + i128::from(bias[c]) + (1i128 << (k - 1))).div_euclid(1i128 << k);
            i64::try_from(rounded)
                .map_err(|_| AttentionError::NumericRange("a projection output leaves i64".into()))
        })
        .collect()
}

fn count_into(counts: &mut [i64], values: impl IntoIterator<Item = i128>) -> Result<(), AttentionError> {
    for (index, d) in values.into_iter().enumerate() {
        match usize::try_from(d).ok().and_then(|d| counts.get_mut(d)) {
            Some(count) => *count += 1,
            None => {
                return Err(AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable {
                    table: "range",
                    index,
                    value: i64::try_from(d).unwrap_or(i64::MAX),
                }));
            }
        }
    }
    Ok(())
}

/// The range check's committed data for the witness's remainders `D`: the multiplicities of
/// each digit and, for two digits, the high digits.
///
/// # Errors
/// As [`compute_projection`], or [`AttentionError::Lookup`] when a remainder is outside
/// `[0, 2^k)` (the output is not the rounded product).
pub fn projection_ranges(
    shape: &ProjectionShape,
    witness: &ProjectionWitness,
) -> Result<ProjectionRanges, AttentionError> {
    witness.validate(shape)?;
    let (low_bits, high_bits) = shape.digits();
    let remainders = witness.remainders(shape);
    if let Some((index, &d)) = remainders.iter().enumerate().find(|(_, d)| **d < 0 || **d >> shape.shift != 0)
    {
        return Err(AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable {
            table: "range",
            index,
            value: i64::try_from(d).unwrap_or(i64::MAX),
        }));
    }
    let mask = (1i128 << low_bits) - 1;
    let mut low_multiplicities = vec![0i64; 1usize << low_bits];
    count_into(&mut low_multiplicities, remainders.iter().map(|d| d & mask))?;
    let output_multiplicities = match shape.output_range()? {
        Some(range) => range.multiplicities("Y", &witness.padded_output(shape))?,
        None => Vec::new(),
    };
    if high_bits == 0 {
        return Ok(ProjectionRanges {
            low_multiplicities,
            high_digits: Vec::new(),
            high_multiplicities: Vec::new(),
            output_multiplicities,
        });
    }
    // In range: D < 2^k, so D >> k_lo < 2^k_hi fits i64.
    let high_digits: Vec<i64> = remainders.iter().map(|d| (d >> low_bits) as i64).collect();
    let mut high_multiplicities = vec![0i64; 1usize << high_bits];
    count_into(&mut high_multiplicities, high_digits.iter().map(|&h| i128::from(h)))?;
    Ok(ProjectionRanges { low_multiplicities, high_digits, high_multiplicities, output_multiplicities })
}

/// `Σ_i eq(r_i, i)·M[i][·]` for an integer matrix with `width` columns.
fn fold_integer_rows(values: &[i64], width: usize, row_point: &[Fr]) -> Vec<Fr> {
    let weights = eq_table(row_point);
    (0..width)
        .into_par_iter()
        .with_min_len(64)
        .map(|x| {
            let mut acc = UnreducedSum::new();
            for (i, w) in weights.iter().enumerate() {
                if let Some(&v) = values.get(i * width + x)
                    && v != 0
                {
                    acc.add_product(w, &fr_from_i64(v));
                }
            }
            acc.finish()
        })
        .collect()
}

/// `Σ_c eq(r_c, c)·M[·][c]` for an integer matrix with `2^|r_c|` columns.
fn fold_integer_columns(values: &[i64], column_point: &[Fr]) -> Vec<Fr> {
    let weights = eq_table(column_point);
    values
        .par_chunks(weights.len().max(1))
        .map(|row| {
            let mut acc = UnreducedSum::new();
            for (w, &v) in weights.iter().zip(row) {
                if v != 0 {
                    acc.add_product(w, &fr_from_i64(v));
                }
            }
            acc.finish()
        })
        .collect()
}

fn clamp_to_i64(d: i128) -> i64 {
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// One projection's part before the batched sum-check, claims as the side of mode `M` holds
/// them (`V`: the prover's or the verifier's value).
pub(crate) struct Front<V> {
    r_c: Vec<Fr>,
    r_i: Vec<Fr>,
    /// The claimed `Σ_j X([j ‖ r_i])·W([r_c ‖ j])`.
    sum: V,
    /// `y`, `β`.
    output: V,
    bias: V,
    multiplicities: EvalClaim<V>,
    high: Option<HighDigitClaims<V>>,
    output_multiplicities: Option<EvalClaim<V>>,
}

/// The prover's front: the messages, the claims, and the product instance (not run yet).
pub(crate) struct ProverFront<M: Mode> {
    proof: ProjectionProof<M::Sent, M::ZeroProof>,
    front: Front<M::ProverValue>,
    instance: ProductSumcheck,
}

/// The claim on a one-column lookup's column, and on its multiplicities.
fn lookup_claims<V: Clone>(claims: LookupClaims<V>) -> Result<(EvalClaim<V>, EvalClaim<V>), AttentionError> {
    let column = match claims.columns.as_slice() {
        [value] => EvalClaim { point: claims.witness_point, value: value.clone() },
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    Ok((column, EvalClaim { point: claims.table_point, value: claims.multiplicities }))
}

/// `v − prefix(s, r_i)·β − 2^(k−1) + 2^k·y` with `v = v_lo + 2^k_lo·h`: the claimed `Σ_j X·W`.
fn product_claim<V: LinearValue>(
    shape: &ProjectionShape,
    r_i: &[Fr],
    [low, output, bias, one]: [&V; 4],
    high: Option<&V>,
) -> V {
    let low_bits = shape.digits().0;
    let remainder = match high {
        Some(h) => low.plus_scaled(Fr::from(1u64 << low_bits), h),
        None => low.clone(),
    };
    remainder
        .plus_scaled(-prefix_eq_sum(shape.rows, r_i), bias)
        .plus_scaled(-Fr::from(1u64 << (shape.shift - 1)), one)
        .plus_scaled(Fr::from(1u64 << shape.shift), output)
}

/// The front's claims and sum from the lookups' claims and the sent values (both sides), and
/// with an output range its target `column − y − 2^(b−1)` (zero for an honest prover).
fn front_from<V: LinearValue>(
    shape: &ProjectionShape,
    one: &V,
    lookups: Vec<LookupClaims<V>>,
    high_value: Option<&V>,
    [output, bias]: [V; 2],
) -> Result<(Front<V>, Option<V>), AttentionError> {
    let (_, high_bits) = shape.digits();
    let output_range = shape.output_range()?;
    let mut lookups = lookups.into_iter();
    let (low, multiplicities) =
        lookup_claims(lookups.next().ok_or(AttentionError::CheckFailed { step: STEP })?)?;
    if low.point.len() != shape.grid_vars() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let high_claims = if high_bits > 0 { lookups.next() } else { None };
    let high = match (high_bits > 0, high_claims, high_value) {
        (true, Some(high_claims), Some(h)) => {
            let (at_lookup, multiplicities) = lookup_claims(high_claims)?;
            let at_remainder = EvalClaim { point: low.point.clone(), value: h.clone() };
            Some(HighDigitClaims { at_remainder, at_lookup, multiplicities })
        }
        (false, _, None) => None,
        _ => return Err(AttentionError::CheckFailed { step: "projection high digit" }),
    };
    let (output_range, output_multiplicities) = match (output_range, lookups.next()) {
        (Some(range), Some(claims)) => {
            let (column, multiplicities) = lookup_claims(claims)?;
            // The two lookups share one tree depth, so one leaf point.
            if column.point != low.point {
                return Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE });
            }
            let target =
                column.value.plus_scaled(-Fr::one(), &output).plus_scaled(-range.offset_field(), one);
            (Some(target), Some(multiplicities))
        }
        (None, None) => (None, None),
        _ => return Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE }),
    };
    let (r_c, r_i) = low.point.split_at(shape.output_vars());
    let sum = product_claim(
        shape,
        r_i,
        [&low.value, &output, &bias, one],
        high.as_ref().map(|h| &h.at_remainder.value),
    );
    let front = Front {
        r_c: r_c.to_vec(),
        r_i: r_i.to_vec(),
        sum,
        output,
        bias,
        multiplicities,
        high,
        output_multiplicities,
    };
    Ok((front, output_range))
}

/// The range tables of a shape: the low digit's, the high digit's, the output range's.
fn range_tables(shape: &ProjectionShape) -> Result<[RangeTable; 3], AttentionError> {
    let (low_bits, high_bits) = shape.digits();
    let output_bits = shape.output_range()?.map_or(1, |r| r.bits());
    Ok([
        RangeTable::new(low_bits as usize)?,
        RangeTable::new(high_bits.max(1) as usize)?,
        RangeTable::new(output_bits as usize)?,
    ])
}

/// The prover's result: the proof and the claims.
pub type ProvedProjections<M> =
    (ProjectionsProofOf<M>, Vec<ProjectionClaims<<M as crate::mode::ProductMode>::ProverValue>>);

/// Every projection's lookups, as the layer's batch states them ([`crate::lookup_batch`]):
/// per projection, in order, `D ∈ [0, 2^k)` (one lookup, or the low and high digits' two) and
/// its output range (with one).
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape [`ProjectionShape::validate`] refuses.
pub fn projection_lookup_statements(
    shapes: &[ProjectionShape],
) -> Result<Vec<LookupStatement<'static>>, AttentionError> {
    let mut statements = Vec::new();
    for shape in shapes {
        shape.validate()?;
        let [low, high, output] = range_tables(shape)?;
        let grid_vars = shape.grid_vars();
        statements.push(LookupStatement::new(low, grid_vars));
        if shape.has_high_digit() {
            statements.push(LookupStatement::new(high, grid_vars));
        }
        if shape.output_range()?.is_some() {
            statements.push(LookupStatement::new(output, grid_vars));
        }
    }
    Ok(statements)
}

/// [`projection_zk_schedule`] with the projections' own lookup batch first
/// ([`prove_projections_alone`]).
///
/// # Errors
/// As [`projection_zk_schedule`].
pub fn projection_alone_zk_schedule(
    shapes: &[ProjectionShape],
) -> Result<Vec<(usize, usize)>, AttentionError> {
    let mut schedule = lookup_parts_zk_schedule(&[projection_lookup_statements(shapes)?]);
    schedule.extend(projection_zk_schedule(shapes)?);
    Ok(schedule)
}

/// The masked sum-checks of projections proven together in zero knowledge after their
/// lookups (the layer's batch), in proof order: the batched product sum-check.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape [`ProjectionShape::validate`] refuses.
pub fn projection_zk_schedule(shapes: &[ProjectionShape]) -> Result<Vec<(usize, usize)>, AttentionError> {
    for shape in shapes {
        shape.validate()?;
    }
    Ok(vec![(shapes.iter().map(ProjectionShape::input_vars).max().unwrap_or(0), 3)])
}

/// Projections' prover data: each one's range data checked, its low digits and the output its
/// lookups and values read — computed once for the layer's lookup batch and the steps.
pub struct ProjectionInputs<'a> {
    inputs: Vec<FrontInput<'a>>,
}

impl<'a> ProjectionInputs<'a> {
    /// The honest prover's data for `witnesses` with their range data ([`projection_ranges`];
    /// a cheating prover may pass others).
    ///
    /// # Errors
    /// Bad shapes or tensors (as [`compute_projection`]), inputs of different lengths, range
    /// data of the wrong size.
    pub fn new(
        shapes: &[ProjectionShape],
        witnesses: &[&'a ProjectionWitness],
        ranges: &[&'a ProjectionRanges],
    ) -> Result<Self, AttentionError> {
        if shapes.is_empty() || witnesses.len() != shapes.len() || ranges.len() != shapes.len() {
            return Err(AttentionError::InvalidShape("one witness and range data per projection".into()));
        }
        let inputs = shapes
            .iter()
            .zip(witnesses)
            .zip(ranges)
            .map(|((shape, witness), ranges)| FrontInput::honest(shape, witness, ranges))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { inputs })
    }

    /// The projections' lookups for the layer's batch, in [`projection_lookup_statements`]
    /// order.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for a shape [`ProjectionShape::validate`] refuses.
    pub fn lookups<'s>(&'s self) -> Result<Vec<PreparedLookup<'s>>, AttentionError> {
        let mut lookups = Vec::new();
        for input in &self.inputs {
            let mut statements =
                projection_lookup_statements(std::slice::from_ref(&input.shape))?.into_iter();
            let mut next = |values: &'s [i64], multiplicities: &'s [i64]| -> Result<(), AttentionError> {
                let statement = statements.next().ok_or(AttentionError::CheckFailed { step: STEP })?;
                lookups.push(PreparedLookup::column(statement, Cow::Borrowed(values), multiplicities));
                Ok(())
            };
            next(&input.lows, &input.ranges.low_multiplicities)?;
            if input.shape.has_high_digit() {
                next(&input.ranges.high_digits, &input.ranges.high_multiplicities)?;
            }
            if input.shape.output_range()?.is_some() {
                next(&input.shifted, &input.ranges.output_multiplicities)?;
            }
        }
        Ok(lookups)
    }
}

/// Proves the projections of `inputs` in mode `M` from their lookups' claims (the layer's
/// batch, [`ProjectionInputs::lookups`]): each one's values and output range's relation in
/// order, then one batched sum-check of their products. The caller has committed to and
/// absorbed the high digits of two-digit projections and every multiplicity.
///
/// # Errors
/// Lookup claims of the wrong count, the relations' and sum-check's errors.
pub fn prove_projections<M: Mode>(
    prover: &mut M::Prover<'_>,
    inputs: &ProjectionInputs<'_>,
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<ProvedProjections<M>, AttentionError> {
    let fronts = prove_fronts::<M>(prover, &inputs.inputs, claims, transcript)?;
    prove_back::<M>(prover, fronts, transcript)
}

/// A projections' proof alone (their lookups a batch of their own): tests.
pub type ProjectionsAloneProofOf<M> = AloneProof<M, ProjectionsProofOf<M>>;

/// [`prove_projections_alone`]'s proof and claims.
pub type ProvedProjectionsAlone<M> =
    (ProjectionsAloneProofOf<M>, Vec<ProjectionClaims<<M as crate::mode::ProductMode>::ProverValue>>);

/// Proves projections alone: their lookups, then [`prove_projections`].
///
/// # Errors
/// As [`ProjectionInputs::new`] and [`prove_projections`].
pub fn prove_projections_alone<M: Mode>(
    prover: &mut M::Prover<'_>,
    shapes: &[ProjectionShape],
    witnesses: &[&ProjectionWitness],
    ranges: &[&ProjectionRanges],
    transcript: &mut Transcript,
) -> Result<ProvedProjectionsAlone<M>, AttentionError> {
    let inputs = ProjectionInputs::new(shapes, witnesses, ranges)?;
    prove_alone::<M, _, _>(prover, inputs.lookups()?, transcript, |p, claims, t| {
        prove_projections::<M>(p, &inputs, claims, t)
    })
}

/// Verifies [`prove_projections_alone`].
///
/// # Errors
/// As [`verify_projections`].
pub fn verify_projections_alone<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shapes: &[ProjectionShape],
    proof: &ProjectionsAloneProofOf<M>,
    transcript: &mut Transcript,
) -> Result<Vec<ProjectionClaims<M::Value>>, AttentionError> {
    let Alone { lookups, steps } = proof;
    verify_alone::<M, _>(
        verifier,
        projection_lookup_statements(shapes)?,
        lookups,
        transcript,
        |v, claims, t| verify_projections::<M>(v, shapes, steps, claims, t),
    )
}

/// The projections after their fronts: the batched sum-check, and the claims.
pub(crate) fn prove_back<M: Mode>(
    prover: &mut M::Prover<'_>,
    fronts: Vec<ProverFront<M>>,
    transcript: &mut Transcript,
) -> Result<ProvedProjections<M>, AttentionError> {
    let shape = product_shape()?;
    let mut proofs = Vec::with_capacity(fronts.len());
    let mut parts = Vec::with_capacity(fronts.len());
    let mut instances = Vec::with_capacity(fronts.len());
    for f in fronts {
        proofs.push(f.proof);
        parts.push(f.front);
        instances.push(f.instance);
    }
    let members: Vec<ProverMember<'_>> =
        instances.iter_mut().map(|instance| (&shape, instance as &mut dyn FinalEvaluations)).collect();
    let sums: Vec<&M::ProverValue> = parts.iter().map(|front| &front.sum).collect();
    let (sumcheck, outcomes) = M::prove_products(prover, STEP, members, &sums, transcript)?;
    let claims = parts
        .into_iter()
        .zip(&outcomes)
        .map(|(front, outcome)| projection_claims(front, outcome))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ProjectionsProof { projections: proofs, sumcheck }, claims))
}

/// The batched sum-check's member: `[j < d]·X([j ‖ r_i])·W([r_c ‖ j])`, the selector public.
/// The selector keeps the padded input columns `j ≥ d` out of the sum, so that nothing in the
/// padding of `X` or `W` (which no check forces to zero) reaches `Y`.
fn product_shape() -> Result<zkmha_zk::ZkProductShape, AttentionError> {
    product_of(STEP, vec![true, false, false])
}

/// The selector `[j < d]` over the input variables (its MLE is `prefix(d, ·)`).
fn input_selector(shape: &ProjectionShape) -> Result<DenseMultilinearExtension, AttentionError> {
    let n = 1usize << shape.input_vars();
    let table = (0..n).map(|j| if j < shape.inputs { Fr::one() } else { Fr::from(0u64) }).collect();
    Ok(DenseMultilinearExtension::new(shape.input_vars(), table)?)
}

/// The claims out of a front and its member's outcome (`x`, `w` hidden at `ρ`).
fn projection_claims<V: Clone>(
    front: Front<V>,
    outcome: &ProductOutcome<V>,
) -> Result<ProjectionClaims<V>, AttentionError> {
    let rho = &outcome.point;
    Ok(ProjectionClaims {
        input: outcome.hidden(1, [rho.as_slice(), &front.r_i].concat(), STEP)?,
        weights: outcome.hidden(2, [front.r_c.as_slice(), rho].concat(), STEP)?,
        bias: EvalClaim { point: front.r_c.clone(), value: front.bias },
        output: EvalClaim { point: [front.r_c, front.r_i].concat(), value: front.output },
        multiplicities: front.multiplicities,
        high: front.high,
        output_multiplicities: front.output_multiplicities,
    })
}

/// One projection's prover data: its range data checked, the low digits and the output its
/// lookups and values read.
pub(crate) struct FrontInput<'a> {
    shape: ProjectionShape,
    witness: &'a ProjectionWitness,
    ranges: &'a ProjectionRanges,
    /// `D_lo` over the padded grid.
    lows: Vec<i64>,
    /// `Y` over the padded grid.
    integers: Vec<i64>,
    /// A cheating prover's field table over the padded grid, evaluated in place of `Y` while
    /// the output range looks up the integers (tests).
    field: Option<&'a [Fr]>,
    /// The output range's column `Y + 2^(b−1)` (empty without one).
    shifted: Vec<i64>,
}

impl<'a> FrontInput<'a> {
    /// The honest prover's: `D_lo = D − 2^k_lo·D_hi` with the range data's high digits.
    fn honest(
        shape: &ProjectionShape,
        witness: &'a ProjectionWitness,
        ranges: &'a ProjectionRanges,
    ) -> Result<Self, AttentionError> {
        check_ranges(shape, witness, ranges)?;
        // A cheating prover's value may not fit i64: clamp it (the lookup then fails on it).
        let (low_bits, high_bits) = shape.digits();
        let lows: Vec<i64> = witness
            .remainders(shape)
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let high = if high_bits > 0 { i128::from(ranges.high_digits[i]) } else { 0 };
                clamp_to_i64(d - (high << low_bits))
            })
            .collect();
        Self::with(shape, witness, ranges, lows, None)
    }

    /// With the low digits (and a field output table) given.
    fn with(
        shape: &ProjectionShape,
        witness: &'a ProjectionWitness,
        ranges: &'a ProjectionRanges,
        lows: Vec<i64>,
        field: Option<&'a [Fr]>,
    ) -> Result<Self, AttentionError> {
        check_ranges(shape, witness, ranges)?;
        let integers = witness.padded_output(shape);
        let shifted = shape.output_range()?.map_or(Vec::new(), |r| r.entries(&integers));
        Ok(Self { shape: *shape, witness, ranges, lows, integers, field, shifted })
    }
}

/// The witness and range data against the shape.
fn check_ranges(
    shape: &ProjectionShape,
    witness: &ProjectionWitness,
    ranges: &ProjectionRanges,
) -> Result<(), AttentionError> {
    witness.validate(shape)?;
    let (high_bits, grid_vars) = (shape.digits().1, shape.grid_vars());
    if high_bits > 0 && ranges.high_digits.len() != 1usize << grid_vars {
        return Err(AttentionError::WrongTensorSize {
            tensor: "D_hi",
            rows: 1 << shape.row_vars(),
            columns: 1 << shape.output_vars(),
            expected: 1 << grid_vars,
            got: ranges.high_digits.len(),
        });
    }
    let output_bits = shape.output_range()?.map(|r| r.bits());
    if let Some(bits) = output_bits
        && ranges.output_multiplicities.len() != 1usize << bits
    {
        return Err(AttentionError::WrongTensorSize {
            tensor: "m_Y",
            rows: 1,
            columns: 1 << bits,
            expected: 1 << bits,
            got: ranges.output_multiplicities.len(),
        });
    }
    Ok(())
}

/// Each projection's front from its lookups' claims (each one's shape absorbed first): its
/// values and product instance.
pub(crate) fn prove_fronts<M: Mode>(
    prover: &mut M::Prover<'_>,
    inputs: &[FrontInput<'_>],
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<Vec<ProverFront<M>>, AttentionError> {
    for input in inputs {
        input.shape.append_to_transcript(transcript);
    }
    let shapes: Vec<ProjectionShape> = inputs.iter().map(|input| input.shape).collect();
    let counts = lookup_counts(&shapes)?;
    if counts.iter().sum::<usize>() != claims.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let mut claims = claims.into_iter();
    let mut fronts = Vec::with_capacity(inputs.len());
    for (input, count) in inputs.iter().zip(counts) {
        let own: Vec<_> = claims.by_ref().take(count).collect();
        fronts.push(prove_front::<M>(prover, input, own, transcript)?);
    }
    Ok(fronts)
}

/// Each projection's number of lookups.
fn lookup_counts(shapes: &[ProjectionShape]) -> Result<Vec<usize>, AttentionError> {
    shapes
        .iter()
        .map(|shape| {
            Ok(1 + usize::from(shape.has_high_digit()) + usize::from(shape.output_range()?.is_some()))
        })
        .collect()
}

/// One projection's messages after the lookups (its claims `claims`), and its product
/// sum-check instance (not run yet).
fn prove_front<M: Mode>(
    prover: &mut M::Prover<'_>,
    input: &FrontInput<'_>,
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<ProverFront<M>, AttentionError> {
    let (shape, witness, ranges) = (&input.shape, input.witness, input.ranges);
    let (row_vars, input_vars, output_vars) = (shape.row_vars(), shape.input_vars(), shape.output_vars());
    let grid_vars = shape.grid_vars();
    let high_bits = shape.digits().1;
    let x = pad(&witness.input, shape.rows, shape.inputs, row_vars, input_vars);
    let w = pad(&witness.weights, shape.inputs, shape.outputs, input_vars, output_vars);
    let b = pad(&witness.bias, 1, shape.outputs, 0, output_vars);
    let point =
        claims.first().map(|c| c.witness_point.clone()).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let (high_digit_value, high_held) = if high_bits > 0 {
        let h = DenseMultilinearExtension::from_i64(grid_vars, &ranges.high_digits)?.evaluate(&point)?;
        let (sent, held) = M::send(prover, LABEL_HIGH_DIGIT, &[h], transcript);
        (sent.into_iter().next(), held.into_iter().next())
    } else {
        (None, None)
    };
    let (r_c, r_i) = point.split_at(output_vars.min(point.len()));
    let output_value = match input.field {
        None => DenseMultilinearExtension::from_i64(grid_vars, &input.integers)?.evaluate(&point)?,
        Some(table) => DenseMultilinearExtension::new(grid_vars, table.to_vec())?.evaluate(&point)?,
    };
    let bias_value = DenseMultilinearExtension::from_i64(output_vars, &b)?.evaluate(r_c)?;
    let (values, held) = M::send(prover, LABEL_VALUES, &[output_value, bias_value], transcript);
    let held: [M::ProverValue; 2] =
        <[M::ProverValue; 2]>::try_from(held).map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let one = M::prover_constant(prover, Fr::one());
    let mles = vec![
        input_selector(shape)?,
        DenseMultilinearExtension::new(input_vars, fold_integer_rows(&x, 1 << input_vars, r_i))?,
        DenseMultilinearExtension::new(input_vars, fold_integer_columns(&w, r_c))?,
    ];
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let instance = ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?;
    let (front, target) = front_from(shape, &one, claims, high_held.as_ref(), held)?;
    let output_range = match target {
        Some(target) => Some(M::prove_zero(prover, STEP_OUTPUT_RANGE, vec![target], transcript)?),
        None => None,
    };
    let proof = ProjectionProof { high_digit_value, values, output_range };
    Ok(ProverFront { proof, front, instance })
}

/// Verifies the projections in mode `M` from their lookups' claims (the layer's batch, in
/// [`projection_lookup_statements`] order); returns the claims the caller must discharge, in
/// order.
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookups' errors, [`AttentionError::CheckFailed`] (a
/// proof for another number of projections, an output range whose column is not `y +
/// 2^(b−1)`), or the sum-check's errors (in zero knowledge the group equations are left in
/// the deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_projections<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shapes: &[ProjectionShape],
    proof: &ProjectionsProofOf<M>,
    claims: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<Vec<ProjectionClaims<M::Value>>, AttentionError> {
    if shapes.is_empty() || proof.projections.len() != shapes.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    for shape in shapes {
        shape.validate()?;
        shape.append_to_transcript(transcript);
    }
    let counts = lookup_counts(shapes)?;
    if counts.iter().sum::<usize>() != claims.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let mut claims = claims.into_iter();
    let mut fronts = Vec::with_capacity(shapes.len());
    for ((shape, p), count) in shapes.iter().zip(&proof.projections).zip(counts) {
        let own: Vec<_> = claims.by_ref().take(count).collect();
        fronts.push(verify_front::<M>(verifier, shape, p, own, transcript)?);
    }
    let product = product_shape()?;
    let members: Vec<BatchMember<'_>> = shapes.iter().map(|s| (&product, s.input_vars())).collect();
    let sums: Vec<&M::Value> = fronts.iter().map(|f| &f.sum).collect();
    let outcomes = M::verify_products(verifier, STEP, &members, &sums, &proof.sumcheck, transcript)?;
    if outcomes.len() != fronts.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    for (shape, outcome) in shapes.iter().zip(&outcomes) {
        outcome.check_public(0, prefix_eq_sum(shape.inputs, &outcome.point), STEP_INPUT_SELECTOR)?;
    }
    fronts.into_iter().zip(&outcomes).map(|(front, outcome)| projection_claims(front, outcome)).collect()
}

#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn verify_front<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &ProjectionShape,
    proof: &ProjectionProof<M::Sent, M::ZeroProof>,
    claims: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<Front<M::Value>, AttentionError> {
    let high_bits = shape.digits().1;
    let high = match (high_bits > 0, &proof.high_digit_value) {
        (true, Some(h)) => {
            M::receive(verifier, LABEL_HIGH_DIGIT, std::slice::from_ref(h), transcript).into_iter().next()
        }
        (false, None) => None,
        _ => return Err(AttentionError::CheckFailed { step: "projection high digit" }),
    };
    if proof.values.len() != 2 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let values = M::receive(verifier, LABEL_VALUES, &proof.values, transcript);
    let values: [M::Value; 2] =
        <[M::Value; 2]>::try_from(values).map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let one = M::verifier_constant(verifier, Fr::one());
    let (front, target) = front_from(shape, &one, claims, high.as_ref(), values)?;
    match (target, &proof.output_range) {
        (Some(target), Some(relation)) => {
            M::verify_zero(verifier, STEP_OUTPUT_RANGE, vec![target], relation, transcript)?;
        }
        (None, None) => {}
        _ => return Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE }),
    }
    Ok(front)
}

/// Malicious-prover regression (the audit's reproducer, shared/audit/
/// model_layer_and_softmax.patch): a cheating projection prover that replaces the remainders
/// `D` and the committed output `Y` (a field table, `Y' = Y ± 1/2` on one entry, the remainder
/// moved by `2^(k−1)` so it stays in range). At 30b0ad6 [`verify_projections`] accepted it; the
/// output range now rejects it: the range lookup's leaves are table rows (the cheater can only
/// look up an integer column, here the honest `Y + 2^(b−1)`), so its column claim is not
/// `Ỹ'(r) + 2^(b−1)`.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
pub(crate) mod audit_forgery {
    use super::*;
    use crate::mode::Plain;
    use ark_ff::{BigInteger, PrimeField};

    /// Replacement remainders (padded grid, one digit) and output table (padded grid, field).
    pub(crate) struct Override {
        pub(crate) lows: Vec<i64>,
        pub(crate) output: Vec<Fr>,
    }

    /// [`prove_projections`] with per-projection overrides.
    pub(crate) fn prove_projections_forged<M: Mode>(
        prover: &mut M::Prover<'_>,
        shapes: &[ProjectionShape],
        witnesses: &[&ProjectionWitness],
        ranges: &[&ProjectionRanges],
        overrides: &[Option<&Override>],
        transcript: &mut Transcript,
    ) -> Result<ProvedProjectionsAlone<M>, AttentionError> {
        let mut inputs = Vec::with_capacity(shapes.len());
        for (k, ((shape, witness), ranges)) in shapes.iter().zip(witnesses).zip(ranges).enumerate() {
            inputs.push(match overrides.get(k).copied().flatten() {
                None => FrontInput::honest(shape, witness, ranges)?,
                Some(ov) => {
                    assert!(!shape.has_high_digit(), "the forgery handles one digit");
                    // The output range: the closest a cheater gets is an integer column (the
                    // honest Y); the committed output is a field table, evaluated as such.
                    FrontInput::with(shape, witness, ranges, ov.lows.clone(), Some(&ov.output))?
                }
            });
        }
        let inputs = ProjectionInputs { inputs };
        prove_alone::<M, _, _>(prover, inputs.lookups()?, transcript, |p, claims, t| {
            prove_projections::<M>(p, &inputs, claims, t)
        })
    }

    /// The honest remainders `D` over the padded grid (exposed for the forgery).
    pub(crate) fn honest_remainders(shape: &ProjectionShape, witness: &ProjectionWitness) -> Vec<i128> {
        witness.remainders(shape)
    }

    /// The forgery on a projection of `output_bits`: the proof, the forged field table and
    /// what it changes.
    /// The forgery's statement and cheating data: shape, witness, range data (the forged
    /// remainders' counts), the override, the counts.
    fn forgery(
        output_bits: Option<u32>,
    ) -> (ProjectionShape, ProjectionWitness, ProjectionRanges, Override, Vec<i64>) {
        use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
        let shape = ProjectionShape { rows: 3, inputs: 5, outputs: 3, shift: 6, output_bits };
        let mut rng = StdRng::seed_from_u64(7);
        let mut draw = |n: usize, b: i64| -> Vec<i64> { (0..n).map(|_| rng.gen_range(-b..=b)).collect() };
        let (x, w, b) = (draw(3 * 5, 100), draw(5 * 3, 100), draw(3, 1000));
        let y = compute_projection(&shape, &x, &w, &b).unwrap();
        let witness = ProjectionWitness { input: x, weights: w, bias: b, output: y.clone() };
        let k = shape.shift;
        let width = 1usize << shape.output_vars();
        let g = width + 2; // entry (1, 2)
        let mut lows: Vec<i64> = honest_remainders(&shape, &witness).into_iter().map(|d| d as i64).collect();
        let half = 1i64 << (k - 1);
        let eps = if lows[g] >= half { half } else { -half };
        lows[g] -= eps;
        assert!((0..1i64 << k).contains(&lows[g]));
        // Y' = Y + eps/2^k = Y ± 1/2 in the field.
        let mut output: Vec<Fr> = pad(&y, shape.rows, shape.outputs, shape.row_vars(), shape.output_vars())
            .into_iter()
            .map(fr_from_i64)
            .collect();
        output[g] += fr_from_i64(eps) * zkmha_field::Field::inverse(&Fr::from(1u64 << k)).unwrap();
        assert!(output[g].into_bigint().num_bits() > 64 && (-output[g]).into_bigint().num_bits() > 64);
        let mut counts = vec![0i64; 1 << k];
        for &d in &lows {
            counts[d as usize] += 1;
        }
        let honest = projection_ranges(&shape, &witness).unwrap();
        let ranges = ProjectionRanges { low_multiplicities: counts.clone(), ..honest };
        let ov = Override { lows, output };
        (shape, witness, ranges, ov, counts)
    }

    /// The forgery on a projection of `output_bits`, proven plainly: the proof, the forged
    /// field table and what it changes.
    fn forge(
        output_bits: Option<u32>,
    ) -> (ProjectionShape, ProjectionsAloneProofOf<Plain>, Vec<Fr>, Vec<i64>, ProjectionWitness) {
        let (shape, witness, ranges, ov, counts) = forgery(output_bits);
        let mut tp = Transcript::new(b"audit-projection");
        let (proof, _) = prove_projections_forged::<Plain>(
            &mut (),
            &[shape],
            &[&witness],
            &[&ranges],
            &[Some(&ov)],
            &mut tp,
        )
        .unwrap();
        (shape, proof, ov.output, counts, witness)
    }

    /// In zero knowledge the non-integer `Y'` is rejected too: the output range's relation
    /// (the column claim is `y + 2^(b−1)`) fails among the group equations.
    #[test]
    fn a_non_integer_projection_output_is_rejected_in_zero_knowledge() {
        use crate::mode::Zk;
        use crate::mode::zk_test_support::zk_round;
        let (shape, witness, ranges, ov, _) = forgery(Some(16));
        let verdict = zk_round(
            projection_alone_zk_schedule(&[shape]).unwrap(),
            |p, t| prove_projections_forged::<Zk>(p, &[shape], &[&witness], &[&ranges], &[Some(&ov)], t),
            |v, t, (proof, _)| verify_projections_alone::<Zk>(v, &[shape], proof, t),
        );
        assert_eq!(
            verdict.err(),
            Some(AttentionError::ZeroKnowledge {
                step: "the group equations",
                source: zkmha_zk::ZkError::RelationMismatch
            })
        );
        // The honest prover of the same statement is accepted.
        let honest = projection_ranges(&shape, &witness).unwrap();
        let verdict = zk_round(
            projection_alone_zk_schedule(&[shape]).unwrap(),
            |p, t| prove_projections_alone::<Zk>(p, &[shape], &[&witness], &[&honest], t),
            |v, t, (proof, _)| verify_projections_alone::<Zk>(v, &[shape], proof, t),
        );
        assert!(verdict.is_ok());
    }

    /// The forgery hidden in a batch of honest projections of other sizes (before,
    /// between and after it) is rejected in both modes; the honest batch is accepted.
    #[test]
    fn the_forgery_in_a_mixed_batch_is_rejected() {
        use crate::mode::Zk;
        use crate::mode::zk_test_support::zk_round;
        use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
        let (forged_shape, forged_witness, forged_ranges, ov, _) = forgery(Some(16));
        let mut rng = StdRng::seed_from_u64(11);
        let mut honest = |rows: usize, inputs: usize, outputs: usize, shift: u32, bits: Option<u32>| {
            let shape = ProjectionShape { rows, inputs, outputs, shift, output_bits: bits };
            let mut draw = |n: usize, b: i64| -> Vec<i64> { (0..n).map(|_| rng.gen_range(-b..=b)).collect() };
            let (x, w, b) = (draw(rows * inputs, 100), draw(inputs * outputs, 100), draw(outputs, 1000));
            let y = compute_projection(&shape, &x, &w, &b).unwrap();
            let witness = ProjectionWitness { input: x, weights: w, bias: b, output: y };
            let ranges = projection_ranges(&shape, &witness).unwrap();
            (shape, witness, ranges)
        };
        let a = honest(5, 7, 6, 4, Some(16));
        let b = honest(2, 3, 2, 5, Some(16));
        let c = honest(5, 6, 9, 3, None);
        let shapes = [a.0, forged_shape, b.0, c.0];
        let witnesses = [&a.1, &forged_witness, &b.1, &c.1];
        let ranges = [&a.2, &forged_ranges, &b.2, &c.2];
        let honest_forged_ranges = projection_ranges(&forged_shape, &forged_witness).unwrap();
        let honest_ranges = [&a.2, &honest_forged_ranges, &b.2, &c.2];
        for forge in [false, true] {
            let overrides: Vec<Option<&Override>> =
                if forge { vec![None, Some(&ov), None, None] } else { vec![None; 4] };
            let r = if forge { &ranges } else { &honest_ranges };
            let mut tp = Transcript::new(b"review");
            let plain =
                prove_projections_forged::<Plain>(&mut (), &shapes, &witnesses, r, &overrides, &mut tp)
                    .map(|(proof, _)| proof);
            let plain_verdict = plain.map(|proof| {
                verify_projections_alone::<Plain>(&mut (), &shapes, &proof, &mut Transcript::new(b"review"))
            });
            let zk_verdict = zk_round(
                projection_alone_zk_schedule(&shapes).unwrap(),
                |p, t| prove_projections_forged::<Zk>(p, &shapes, &witnesses, r, &overrides, t),
                |v, t, (proof, _)| verify_projections_alone::<Zk>(v, &shapes, proof, t),
            );
            println!("forge {forge}: plain {:?}", plain_verdict.as_ref().map(|v| v.as_ref().map(|_| ())));
            println!("forge {forge}: zk {:?}", zk_verdict.as_ref().map(|_| ()));
            if forge {
                assert!(!matches!(plain_verdict, Ok(Ok(_))));
                assert!(zk_verdict.is_err());
            } else {
                assert!(matches!(plain_verdict, Ok(Ok(_))));
                assert!(zk_verdict.is_ok());
            }
        }
    }

    /// With an output range the non-integer `Y'` is rejected.
    #[test]
    fn a_non_integer_projection_output_is_rejected() {
        let (shape, proof, _, _, _) = forge(Some(16));
        assert_eq!(
            verify_projections_alone::<Plain>(
                &mut (),
                &[shape],
                &proof,
                &mut Transcript::new(b"audit-projection")
            ),
            Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE })
        );
    }

    /// Without one the step alone accepts it — every claim discharges against the tensors with
    /// `Y'` — which is why a shape without an output range obliges the caller to pin `Y` by a
    /// relation of its own (the block's output projection: `Y = Z − R`).
    #[test]
    fn without_an_output_range_the_caller_must_pin_the_output() {
        let (shape, proof, output, counts, witness) = forge(None);
        let claims = verify_projections_alone::<Plain>(
            &mut (),
            &[shape],
            &proof,
            &mut Transcript::new(b"audit-projection"),
        )
        .unwrap();
        let c = &claims[0];
        let mle = |vars: usize, v: Vec<Fr>| DenseMultilinearExtension::new(vars, v).unwrap();
        let ints = |v: &[i64]| v.iter().map(|&a| fr_from_i64(a)).collect::<Vec<_>>();
        let xt = pad(&witness.input, 3, 5, shape.row_vars(), shape.input_vars());
        let wt = pad(&witness.weights, 5, 3, shape.input_vars(), shape.output_vars());
        let bt = pad(&witness.bias, 1, 3, 0, shape.output_vars());
        assert_eq!(
            mle(shape.row_vars() + shape.input_vars(), ints(&xt)).evaluate(&c.input.point).unwrap(),
            c.input.value
        );
        assert_eq!(
            mle(shape.input_vars() + shape.output_vars(), ints(&wt)).evaluate(&c.weights.point).unwrap(),
            c.weights.value
        );
        assert_eq!(mle(shape.output_vars(), ints(&bt)).evaluate(&c.bias.point).unwrap(), c.bias.value);
        assert_eq!(mle(shape.grid_vars(), output).evaluate(&c.output.point).unwrap(), c.output.value);
        assert_eq!(
            mle(shape.shift as usize, ints(&counts)).evaluate(&c.multiplicities.point).unwrap(),
            c.multiplicities.value
        );
    }
}
