//! Layer norms in fixed point, proven as exact integer relations: RMSNorm (Llama, Qwen2, Gemma)
//! and LayerNorm (GPT-2, BERT), with `ε`, the scale `γ` and (optionally) the shift `β`. Like
//! [`crate::rope`], the step needs no claim on its output: it ties the input `X`, the output
//! `Y`, the weights and the committed digits together and hands claims on all of them (and on
//! the range multiplicities) to the caller's openings. One implementation for both modes
//! ([`crate::mode`]).
//!
//! ```text
//! tensors    X, Y: ŝ × d̂ (index i·d̂ + j, MLE points [column ‖ row], little-endian; at least
//!            one variable each), γ, β: d̂, sel(i, j) = [i < s]·[j < d]
//! centered   C = sel·X (RMSNorm),  C = sel·(d·X − S),  S(i) = Σ_{j<d} X(i, j) (LayerNorm)
//! squares    T(i) = Σ_j C(i, j)² + E                      E ≥ 1 the integer image of ε
//! inverse    q(i) = ⌊2^k·sqrt(d/T(i))⌋, pinned by        (y = c·γ·sqrt(d/T) in both kinds:
//!  root        u = 2^(2k)·d − q²·T ≥ 0,                    c·sqrt(d/T) is (x − μ)/σ or x/rms)
//!              v = (q + 1)²·T − 2^(2k)·d − 1 ≥ 0
//! output     R = C·q·γ + 2^(f−1) + 2^f·sel·β − 2^f·Y ∈ [0, 2^f)
//!            ⇔ Y = ⌊(C·q·γ + 2^(f−1)) / 2^f⌋ + β on real entries, Y = 0 on padding
//! committed  by the caller, absorbed before: X, Y, γ, β, the digit stack G (ŝ × K̂, slot k in
//!            the low bits: q's two 16-bit digits, then u's and v's n_d digits each, then
//!            zeros), R_hi (f > 16), the multiplicities
//! lookups    one batch: R_lo = R − 2^f_lo·R_hi ∈ [0, 2^f_lo) and R_hi ∈ [0, 2^f_hi) over the
//!            grid (one digit when f ≤ 16), Y + 2^(b−1) ∈ [0, 2^b) over the grid, the input's
//!            range X + 2^28 = X_lo + 2^15·X_hi with X_lo ∈ [0, 2^15), X_hi ∈ [0, 2^14) (X_hi
//!            committed; the grid's trees share the leaf point r = [r_c ‖ r_i], so X(r) =
//!            X_lo(r) − 2^28 + 2^15·X_hi(r) is one more claim on X), G ∈ [0, 2^16) over the
//!            stack (leaf point [r_k ‖ r_u])
//! output     Σ_g eqsel_r(g)·(C·Q·Γ + 2^f·B)(g) = R_lo(r) + 2^f_lo·R_hi(r) − 2^(f−1) + 2^f·Y(r)
//!  sum-check   eqsel_r(g) = eq(r, g)·sel(g) public (closed form: two prefix pair sums),
//!            Q, Γ, B, S broadcast (Q̃(ρ) = q̃(ρ_i)); C expanded into X and S
//!            → ρ: X(ρ), S(ρ_i), q(ρ_i), γ(ρ_c), β(ρ_c)
//! digits     P → V e_k = G̃(k ‖ r_u) for every slot; relations (one M::prove_zero):
//!            G̃(r_k ‖ r_u) = Σ_k eq(r_k, k)·e_k and e_k = 0 for the unused slots; τ ← F^{log K̂}:
//!            the claim G̃(τ ‖ r_u) = Σ_k eq(τ, k)·e_k
//! rows       λ ← F;  Σ_i eq(r_u, i)·[(1−λ)·q²T − 2λ·qT − λ·T] = C₁ − λ(C₁+1) − u(r_u) − λ·v(r_u)
//!  sum-check   (C₁ = 2^(2k)·d; u, v from the e_k; degree 4) → ρ_u: q(ρ_u), T(ρ_u)
//!            q̃(ρ) = (1 + 2^16)·G̃((t, 0, …, 0) ‖ ρ), t = 2^16/(1 + 2^16): one claim on G
//! squares    Σ_g eq(ρ_u, i)·sel(g)·C(g)² = T(ρ_u) − E      (degree 3; T is never committed)
//!            → ρ″: X(ρ″), S(ρ″_i)
//! row sums   (LayerNorm) S(ρ_i), S(ρ″_i): one batched sum-check of Σ_j [j < d]·X̃(j ‖ ·) over
//!            the columns → σ: X(σ ‖ ρ_i), X(σ ‖ ρ″_i)
//! claims out X (3 points; LayerNorm 5), Y(r), γ(ρ_c), β(ρ_c), G (3 points), R_hi(r), X_hi(r),
//!            the multiplicities (one per lookup)
//! ```
//!
//! Why it holds over the integers (SOUNDNESS.md's first rule): the step pins `X` to integers
//! with `|X| ≤ 2^28` (its own range check: a committed hidden state is the prover's) and `γ`,
//! `β` are the model's integer weights with `|γ|, |β| < 2^20`;
//! `G`'s digits are range-checked, so `q < 2^32` and `0 ≤ u, v < 2^(16·n_d) ≤ 2^128` are
//! integers, and `R`, `Y` are range-checked. Then `|C| < 2^43`, `T < 2^100 + E ≤ 2^101`, and every term
//! of every identity stays below `2^170 ≪ p/2`: each relation mod p is the integer relation, `u,
//! v ≥ 0` make `q` the floor of the square root (unique), and `R ∈ [0, 2^f)` makes `Y` the
//! rounding (unique). The padded slots of `G` are pinned to zero; its padded rows hold the
//! honest values of a zero row (`T = E`); `Y` is zero on the padding.
//!
//! **The caller must open every claim the step returns**, the three on `G` included: the step
//! alone accepts a wrong `q` or wrong digit values `e_k` (the review of 2026-11-26 built both);
//! only the openings of `G` at `(τ ‖ r_u)` and at the factor points catch them. Likewise `X`,
//! `Y`, `γ`, `β`, `R_hi`, `X_hi` and the multiplicities are tied to their commitments only
//! there.
//!
//! The input range proven is exactly `X ∈ [−2^28, 2^28)` (the prover refuses `−2^28` too).
//! The norm leaves `X`'s padding free but for that range (every other relation is restricted to
//! the real entries, and LayerNorm's padded rows' sums only feed `C`, which the selector
//! zeroes): a caller that needs `X`'s padding pinned must pin it (the block's residual does; for
//! one token its claims are moved off the appended zero row, so the openings of `H` catch junk
//! there — the review of 2026-11-26 tried both; BERT's layer 0, whose residual adds to the
//! norm's output, leaves `H`'s padding to the embedding proof in a chain, and it never reaches
//! the output).
//!
//! Completeness: the padded rows (and any zero row) have `T = E`, so they carry the largest
//! `q = ⌊2^k·sqrt(d/E)⌋` of a proof, which must stay below `2^32`: that bounds `k` more tightly
//! than the real rows do (the calibration, `crate::model_quantization`, keeps it there).
//!
//! Soundness error: the lookups (`O((ŝ·d̂ + ŝ·K̂)/|F|)`), the four sum-checks (`≤ 4·log(ŝd̂)/|F|`
//! each), the zero checks at `r_u` and the fold at `τ` (`≤ (log ŝ + log K̂)/|F|`), the rows'
//! combination `λ` (`1/|F|`).

use crate::AttentionError;
use crate::common::{check_tensor_sizes, sumcheck_error};
use crate::lookup_batch::{
    Alone, AloneProof, LookupStatement, PreparedLookup, lookup_parts_zk_schedule, prove_alone, verify_alone,
};
use crate::mode::{Mode, PlainProductProof, prove_dense, sum_of_products, verify_single};
use crate::output_range::SignedRange;
use crate::structured::{prefix_eq_pair_sum, prefix_eq_sum};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use std::borrow::Cow;
use zkmha_field::{Field, Fr, One, Zero, fr_from_i64, fr_from_i128};
use zkmha_lookup::{LookupClaims, RangeTable};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{EvalClaim, ProductSumcheck, ProductTerm, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{LinearValue, ZkProductShape};

const STEP: &str = "norm output";
const STEP_DIGITS: &str = "norm digits";
const STEP_ROWS: &str = "norm inverse square root";
const STEP_SQUARES: &str = "norm squares";
const STEP_SUMS: &str = "norm row sums";
const STEP_LOOKUPS: &str = "norm lookups";
const LABEL_SHAPE: &[u8] = b"attention/norm/shape";
const LABEL_DIGITS: &[u8] = b"attention/norm/digit-values";
const LABEL_LAMBDA: &[u8] = b"attention/norm/rows-combination";
const LABEL_FOLD: &[u8] = b"attention/norm/digit-point";

/// Largest `|X|` (the step range-checks `X + 2^28 ∈ [0, 2^29)`): wide enough for a residual
/// stream that carries a deep decoder's "massive activations" (SmolLM2's reach ~2^15) at a
/// scale fine enough for its first layers' hidden states (a fraction of a unit) — at `2^20`
/// one scale for every layer of SmolLM2 had to be `2^4` (14.7 % off float64 after 30 layers).
pub const NORM_INPUT_BOUND_BITS: u32 = 28;
/// The input range's low digit: `X + 2^28 = X_lo + 2^15·X_hi`.
const INPUT_LOW_BITS: u32 = 15;
/// The input range's high digit.
const INPUT_HIGH_BITS: u32 = NORM_INPUT_BOUND_BITS + 1 - INPUT_LOW_BITS;
/// Largest `|γ|` and `|β|`.
pub const NORM_WEIGHT_BOUND_BITS: u32 = 20;
/// Largest `s`.
pub const MAX_NORM_ROWS: usize = 1 << 13;
/// Largest `d`.
pub const MAX_NORM_WIDTH: usize = 1 << 14;
/// Largest `k` (so `C₁ = 2^(2k)·d ≤ 2^110`).
pub const MAX_NORM_SCALE_BITS: u32 = 48;
/// Largest `f` (two balanced digits of at most 20 bits; above 32 a digit's range table exceeds
/// `2^16` rows).
pub const MAX_NORM_SHIFT_BITS: u32 = 40;
/// Largest `n_d`: `u, v < 2^128`.
pub const MAX_NORM_REMAINDER_DIGITS: u32 = 8;
/// Largest `E`.
pub const MAX_NORM_EPSILON: u64 = 1 << 62;
/// The digits' width: every digit of `G` is looked up in `[0, 2^16)`.
pub const NORM_DIGIT_BITS: u32 = 16;
/// `q`'s digits: `q < 2^32`.
const FACTOR_DIGITS: usize = 2;

pub use zkmha_nn::NormKind;

/// The public shape of one norm: sizes and the fixed-point constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormShape {
    /// RMSNorm or LayerNorm.
    pub kind: NormKind,
    /// Tokens `s`.
    pub rows: usize,
    /// The normalized width `d`.
    pub width: usize,
    /// `E ≥ 1`, the integer image of `ε` ([`epsilon_image`]).
    pub epsilon: u64,
    /// `k`: `q = ⌊2^k·sqrt(d/T)⌋`.
    pub scale_bits: u32,
    /// `f`: the output's rounding shift (`1..=40`; two digits above 16).
    pub shift_bits: u32,
    /// `b`: `Y + 2^(b−1) ∈ [0, 2^b)` (`1..=20`, [`crate::MAX_NORM_OUTPUT_BITS`]).
    pub output_bits: u32,
    /// Whether `β` is added.
    pub bias: bool,
    /// `n_d`: `u` and `v` are range-checked in `n_d` digits of 16 bits (`1..=8`).
    pub remainder_digits: u32,
}

/// The range of a block's proven norm output `X`: `|X| ≤ 2^15` (the calibration puts `X` at
/// 15 bits, `crate::model_quantization::INPUT_BITS`).
pub const BLOCK_NORM_OUTPUT_BITS: u32 = 16;

/// The norm from the hidden state `H` to `X` of a pre-norm block
/// ([`crate::model_layer::ModelShape::norm`]): its kind and fixed-point constants, chosen at
/// calibration and kept in the verifier key. Its rows and width are the block's `s` and
/// `d_model`, its output range `X`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct BlockNorm {
    /// RMSNorm or LayerNorm.
    pub kind: NormKind,
    /// `E ≥ 1` ([`epsilon_image`]).
    pub epsilon: u64,
    /// `k`.
    pub scale_bits: u32,
    /// `f`.
    pub shift_bits: u32,
    /// Whether `β` is added.
    pub bias: bool,
    /// `n_d`.
    pub remainder_digits: u32,
}

/// The range of a norm on a half's output (Gemma's, [`crate::model_layer::ModelShape::output_norms`]):
/// `|norm(Y)| ≤ 2^19` at the residual stream's scale. Wider than `X`'s: the normed output
/// is added to the residual stream, whose scale it then bounds (Gemma 3's first position is
/// an order of magnitude wider than the others, so 16 bits would leave the others a few).
pub const OUTPUT_NORM_OUTPUT_BITS: u32 = 20;

impl BlockNorm {
    /// The norm's shape on `rows × width`, its output in [`BLOCK_NORM_OUTPUT_BITS`].
    pub fn shape(&self, rows: usize, width: usize) -> NormShape {
        self.shape_with_output_bits(rows, width, BLOCK_NORM_OUTPUT_BITS)
    }

    /// The norm's shape on `rows × width` with its output in `output_bits`.
    pub fn shape_with_output_bits(&self, rows: usize, width: usize, output_bits: u32) -> NormShape {
        NormShape {
            kind: self.kind,
            rows,
            width,
            epsilon: self.epsilon,
            scale_bits: self.scale_bits,
            shift_bits: self.shift_bits,
            output_bits,
            bias: self.bias,
            remainder_digits: self.remainder_digits,
        }
    }
}

fn vars(n: usize) -> usize {
    (n.next_power_of_two().trailing_zeros() as usize).max(1)
}

impl NormShape {
    /// Checks the shape against the stated limits.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the first limit it breaks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        let bad = |what: String| Err(AttentionError::InvalidShape(what));
        if self.rows == 0 || self.rows > MAX_NORM_ROWS {
            return bad(format!("a norm takes 1 to {MAX_NORM_ROWS} rows, not {}", self.rows));
        }
        if self.width == 0 || self.width > MAX_NORM_WIDTH {
            return bad(format!("a norm takes a width of 1 to {MAX_NORM_WIDTH}, not {}", self.width));
        }
        if self.epsilon == 0 || self.epsilon > MAX_NORM_EPSILON {
            return bad(format!("the norm's ε image must be 1 to 2^62, not {}", self.epsilon));
        }
        if self.scale_bits > MAX_NORM_SCALE_BITS {
            return bad(format!(
                "the norm's scale takes at most {MAX_NORM_SCALE_BITS} bits, not {}",
                self.scale_bits
            ));
        }
        if self.shift_bits == 0 || self.shift_bits > MAX_NORM_SHIFT_BITS {
            return bad(format!(
                "the norm's shift takes 1 to {MAX_NORM_SHIFT_BITS} bits, not {}",
                self.shift_bits
            ));
        }
        if self.remainder_digits == 0 || self.remainder_digits > MAX_NORM_REMAINDER_DIGITS {
            return bad(format!(
                "the norm's square-root remainders take 1 to {MAX_NORM_REMAINDER_DIGITS} digits, not {}",
                self.remainder_digits
            ));
        }
        SignedRange::for_norm(self.output_bits)?;
        Ok(())
    }

    /// `log ŝ` (at least 1).
    pub fn row_vars(&self) -> usize {
        vars(self.rows)
    }

    /// `log d̂` (at least 1): the variables of `γ` and `β`.
    pub fn column_vars(&self) -> usize {
        vars(self.width)
    }

    /// `log ŝ + log d̂`: the variables of `X`, `Y` and `R_hi`.
    pub fn grid_vars(&self) -> usize {
        self.row_vars() + self.column_vars()
    }

    /// The digit stack's slots in use: `q`'s two, then `u`'s and `v`'s `n_d` each.
    pub fn slots(&self) -> usize {
        FACTOR_DIGITS + 2 * self.remainder_digits as usize
    }

    /// `log K̂`.
    pub fn slot_vars(&self) -> usize {
        vars(self.slots())
    }

    /// `log ŝ + log K̂`: the variables of the digit stack `G`.
    pub fn stack_vars(&self) -> usize {
        self.row_vars() + self.slot_vars()
    }

    /// The remainder's digits `(f_lo, f_hi)`: `(f, 0)` up to 16 bits, else balanced.
    pub fn digits(&self) -> (u32, u32) {
        if self.shift_bits <= NORM_DIGIT_BITS {
            (self.shift_bits, 0)
        } else {
            let low = self.shift_bits.div_ceil(2);
            (low, self.shift_bits - low)
        }
    }

    /// The variables of the lookups' tables, in their order (that of [`NormClaims::multiplicities`]):
    /// `R_lo`'s, `R_hi`'s (two digits), `Y`'s range, `X_lo`'s, `X_hi`'s, `G`'s.
    pub fn lookup_vars(&self) -> Vec<usize> {
        let (low, high) = self.digits();
        let mut vars = vec![low as usize];
        if high > 0 {
            vars.push(high as usize);
        }
        vars.extend([self.output_bits, INPUT_LOW_BITS, INPUT_HIGH_BITS, NORM_DIGIT_BITS].map(|b| b as usize));
        vars
    }

    /// Whether the remainder is checked in two digits (the caller commits `R_hi`).
    pub fn has_high_digit(&self) -> bool {
        self.digits().1 > 0
    }

    /// `C₁ = 2^(2k)·d` (at most `2^110`).
    fn numerator(&self) -> u128 {
        (self.width as u128) << (2 * self.scale_bits)
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                usize::from(self.kind.code()),
                self.rows,
                self.width,
                self.epsilon as usize,
                self.scale_bits as usize,
                self.shift_bits as usize,
                self.output_bits as usize,
                usize::from(self.bias),
                self.remainder_digits as usize,
            ],
        );
    }
}

/// `E`, the integer image of `ε` for an input at scale `2^a` (`X = x·2^a`): `d·ε·2^(2a)`
/// (RMSNorm: `T = Σx² + E = d·2^(2a)·(mean(x²) + ε)`) or `d³·ε·2^(2a)` (LayerNorm: `T = Σ(d·x −
/// S)² + E = d³·2^(2a)·(var(x) + ε)`), rounded, at least 1.
pub fn epsilon_image(kind: NormKind, width: usize, epsilon: f64, input_fraction_bits: u32) -> u64 {
    let d = width as f64;
    let power = match kind {
        NormKind::Rms => d,
        NormKind::Layer => d * d * d,
    };
    let image = (power * epsilon * 2f64.powi(2 * input_fraction_bits as i32)).round();
    if image.is_finite() && image >= 1.0 { (image as u64).min(MAX_NORM_EPSILON) } else { 1 }
}

/// A norm's tensors: `X`, `Y` (`s × d`, row-major), `γ` and `β` (`d`; `β` empty without a
/// bias).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormWitness {
    /// `X`.
    pub input: Vec<i64>,
    /// `γ`.
    pub scale: Vec<i64>,
    /// `β` (empty when the shape has no bias).
    pub bias: Vec<i64>,
    /// `Y`.
    pub output: Vec<i64>,
}

fn check_bound(tensor: &'static str, values: &[i64], bits: u32) -> Result<(), AttentionError> {
    match values.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= 1u64 << bits) {
        Some((index, v)) => {
            Err(AttentionError::ValueOutOfRange { tensor, index, value: *v, bound_bits: bits })
        }
        None => Ok(()),
    }
}

fn check_inputs(shape: &NormShape, input: &[i64], scale: &[i64], bias: &[i64]) -> Result<(), AttentionError> {
    shape.validate()?;
    let bias_len = if shape.bias { shape.width } else { 0 };
    check_tensor_sizes(&[
        ("X", input.len(), shape.rows, shape.width),
        ("γ", scale.len(), 1, shape.width),
        ("β", bias.len(), 1, bias_len),
    ])?;
    check_bound("X", input, NORM_INPUT_BOUND_BITS)?;
    check_bound("γ", scale, NORM_WEIGHT_BOUND_BITS)?;
    check_bound("β", bias, NORM_WEIGHT_BOUND_BITS)
}

/// The integer tables of a norm over the padded grid and rows.
pub(crate) struct Integers {
    /// `X` padded (`ŝ × d̂`).
    input: Vec<i64>,
    /// `S` per padded row (0 on padded rows; RMSNorm: unused).
    sums: Vec<i64>,
    /// `C` padded.
    centered: Vec<i128>,
    /// `T` per padded row.
    squares: Vec<i128>,
}

fn integers(shape: &NormShape, input: &[i64]) -> Integers {
    let (row_vars, column_vars) = (shape.row_vars(), shape.column_vars());
    let width = 1usize << column_vars;
    let padded = crate::projection::pad(input, shape.rows, shape.width, row_vars, column_vars);
    let d = shape.width as i128;
    let sums: Vec<i64> = (0..1usize << row_vars)
        .map(|i| if i < shape.rows { padded[i * width..i * width + shape.width].iter().sum() } else { 0 })
        .collect();
    let centered: Vec<i128> = (0..width << row_vars)
        .into_par_iter()
        .with_min_len(1024)
        .map(|g| {
            let (i, j) = (g / width, g % width);
            if i >= shape.rows || j >= shape.width {
                return 0;
            }
            let x = i128::from(padded[g]);
            match shape.kind {
                NormKind::Rms => x,
                NormKind::Layer => d * x - i128::from(sums[i]),
            }
        })
        .collect();
    let squares = centered
        .chunks(width)
        .map(|row| row.iter().map(|c| c * c).sum::<i128>() + i128::from(shape.epsilon))
        .collect();
    Integers { input: padded, sums, centered, squares }
}

/// `q = ⌊sqrt(C₁ / T)⌋` per padded row (`⌊√⌊x⌋⌋ = ⌊√x⌋`).
fn inverse_roots(shape: &NormShape, squares: &[i128]) -> Vec<u128> {
    let numerator = shape.numerator();
    squares.iter().map(|&t| (numerator / t.max(1) as u128).isqrt()).collect()
}

fn factor_too_wide(shape: &NormShape, index: usize, q: u128) -> AttentionError {
    AttentionError::NumericRange(format!(
        "the norm's inverse square root at row {index} is {q}, above 2^32: lower its scale bits k = {}",
        shape.scale_bits
    ))
}

/// The reference norm: `Y = ⌊(C·q·γ + 2^(f−1)) / 2^f⌋ + β` (`s × d`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`] for an input beyond `2^28` or a weight beyond `2^20`,
/// [`AttentionError::NumericRange`] for an inverse square root above `2^32` (the scale `k` too
/// large for the row).
pub fn compute_norm(
    shape: &NormShape,
    input: &[i64],
    scale: &[i64],
    bias: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    check_inputs(shape, input, scale, bias)?;
    let tables = integers(shape, input);
    let roots = inverse_roots(shape, &tables.squares);
    if let Some((index, &q)) = roots.iter().enumerate().find(|(_, q)| **q >> 32 != 0) {
        return Err(factor_too_wide(shape, index, q));
    }
    let factors: Vec<i64> = roots.iter().map(|&q| q as i64).collect();
    Ok(rounded_output(shape, &tables.centered, &factors, scale, bias))
}

/// `⌊(C·q·γ + 2^(f−1)) / 2^f⌋ + β` on the real entries (`s × d`, row-major).
fn rounded_output(
    shape: &NormShape,
    centered: &[i128],
    factors: &[i64],
    scale: &[i64],
    bias: &[i64],
) -> Vec<i64> {
    let width = 1usize << shape.column_vars();
    let f = shape.shift_bits;
    (0..shape.rows * shape.width)
        .map(|k| {
            let (i, j) = (k / shape.width, k % shape.width);
            let product = centered[i * width + j] * i128::from(factors[i]) * i128::from(scale[j]);
            let shift = bias.get(j).copied().unwrap_or(0);
            ((product + (1i128 << (f - 1))) >> f) as i64 + shift
        })
        .collect()
}

/// What a norm commits to besides `X`, `Y`, `γ`, `β`: the digit stack, the remainder's high
/// digits and every lookup's multiplicities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormRanges {
    /// `G` (`ŝ × K̂`, index `i·K̂ + k`).
    pub digits: Vec<i64>,
    /// `R_hi` over the grid (empty with one digit).
    pub high_remainders: Vec<i64>,
    /// Multiplicities of `R_lo` in `[0, 2^f_lo)`.
    pub low_multiplicities: Vec<i64>,
    /// Multiplicities of `R_hi` in `[0, 2^f_hi)` (empty with one digit).
    pub high_multiplicities: Vec<i64>,
    /// Multiplicities of `Y + 2^(b−1)` in `[0, 2^b)`.
    pub output_multiplicities: Vec<i64>,
    /// Multiplicities of `G` in `[0, 2^16)`.
    pub digit_multiplicities: Vec<i64>,
    /// `X_hi = (X + 2^28) >> 15` over the grid.
    pub input_high: Vec<i64>,
    /// Multiplicities of `X_lo` in `[0, 2^15)`.
    pub input_low_multiplicities: Vec<i64>,
    /// Multiplicities of `X_hi` in `[0, 2^14)`.
    pub input_high_multiplicities: Vec<i64>,
}

impl NormRanges {
    /// Every lookup's multiplicities, in the lookups' order ([`NormShape::lookup_vars`]).
    pub fn multiplicities(&self) -> Vec<&[i64]> {
        let mut out = vec![self.low_multiplicities.as_slice()];
        if !self.high_multiplicities.is_empty() {
            out.push(&self.high_multiplicities);
        }
        out.extend([
            self.output_multiplicities.as_slice(),
            &self.input_low_multiplicities,
            &self.input_high_multiplicities,
            &self.digit_multiplicities,
        ]);
        out
    }
}

/// `X + 2^28` over the padded grid, and its honest high digit.
fn input_digits(padded_input: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let shifted: Vec<i64> =
        padded_input.iter().map(|x| x.saturating_add(1 << NORM_INPUT_BOUND_BITS)).collect();
    let high = shifted.iter().map(|v| v >> INPUT_LOW_BITS).collect();
    (shifted, high)
}

/// `X_lo = X + 2^28 − 2^15·X_hi` for a (perhaps cheating) high digit.
fn input_low(shifted: &[i64], high: &[i64]) -> Vec<i64> {
    shifted.iter().zip(high).map(|(v, h)| v.saturating_sub(h.saturating_mul(1 << INPUT_LOW_BITS))).collect()
}

fn digits_of(value: u128, count: usize) -> impl Iterator<Item = i64> {
    (0..count).map(move |t| ((value >> (16 * t)) & 0xffff) as i64)
}

/// The digit stack of honest `q`, `u`, `v` for `T`.
fn digit_stack(shape: &NormShape, squares: &[i128]) -> Result<Vec<i64>, AttentionError> {
    let (slots, width) = (shape.slots(), 1usize << shape.slot_vars());
    let digits = shape.remainder_digits as usize;
    let numerator = shape.numerator();
    let mut stack = vec![0i64; squares.len() * width];
    for (i, (&t, q)) in squares.iter().zip(inverse_roots(shape, squares)).enumerate() {
        if q >> 32 != 0 {
            return Err(factor_too_wide(shape, i, q));
        }
        let t = t as u128;
        let u = numerator - q * q * t;
        let v = (q + 1) * (q + 1) * t - numerator - 1;
        // (16·n_d may be 128: a checked shift, not one that wraps.)
        if (u | v).checked_shr(16 * digits as u32).unwrap_or(0) != 0 {
            return Err(AttentionError::NumericRange(format!(
                "the norm's square-root remainders at row {i} need more than {digits} digits of 16 bits"
            )));
        }
        let row = digits_of(q, FACTOR_DIGITS).chain(digits_of(u, digits)).chain(digits_of(v, digits));
        for (slot, digit) in stack[i * width..i * width + slots].iter_mut().zip(row) {
            *slot = digit;
        }
    }
    Ok(stack)
}

/// `q` per padded row from the stack's first two slots.
fn factors_from_stack(shape: &NormShape, stack: &[i64]) -> Vec<i64> {
    stack.chunks(1usize << shape.slot_vars()).map(|row| row[0] + (row[1] << 16)).collect()
}

/// `R` over the grid for the given `q` and output (a cheating prover's may leave the range).
fn remainders(
    shape: &NormShape,
    tables: &Integers,
    factors: &[i64],
    scale: &[i64],
    bias: &[i64],
    output: &[i64],
) -> Vec<i128> {
    let width = 1usize << shape.column_vars();
    let f = shape.shift_bits;
    (0..tables.centered.len())
        .into_par_iter()
        .with_min_len(1024)
        .map(|g| {
            let (i, j) = (g / width, g % width);
            let real = i < shape.rows && j < shape.width;
            let gamma = if j < shape.width { i128::from(scale[j]) } else { 0 };
            let beta = if real { i128::from(bias.get(j).copied().unwrap_or(0)) } else { 0 };
            tables.centered[g] * i128::from(factors[i]) * gamma + (1i128 << (f - 1)) + (beta << f)
                - (i128::from(output[g]) << f)
        })
        .collect()
}

fn count(bits: u32, values: impl Iterator<Item = i128>) -> Result<Vec<i64>, AttentionError> {
    let mut counts = vec![0i64; 1usize << bits];
    for (index, v) in values.enumerate() {
        match usize::try_from(v).ok().and_then(|v| counts.get_mut(v)) {
            Some(c) => *c += 1,
            None => {
                return Err(AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable {
                    table: "range",
                    index,
                    value: clamp(v),
                }));
            }
        }
    }
    Ok(counts)
}

fn clamp(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The digit stack, high digits and multiplicities of `witness`.
///
/// # Errors
/// As [`compute_norm`]; [`AttentionError::WrongTensorSize`] for an output of the wrong size;
/// [`AttentionError::NumericRange`] when `u` or `v` need more than `n_d` digits;
/// [`AttentionError::Lookup`] when a remainder leaves its range (the output is not the
/// rounded norm); [`AttentionError::ValueOutOfRange`] for an output outside the output range.
pub fn norm_ranges(shape: &NormShape, witness: &NormWitness) -> Result<NormRanges, AttentionError> {
    check_inputs(shape, &witness.input, &witness.scale, &witness.bias)?;
    check_tensor_sizes(&[("Y", witness.output.len(), shape.rows, shape.width)])?;
    let tables = integers(shape, &witness.input);
    let digits = digit_stack(shape, &tables.squares)?;
    let factors = factors_from_stack(shape, &digits);
    let output = padded_output(shape, &witness.output);
    let remainders = remainders(shape, &tables, &factors, &witness.scale, &witness.bias, &output);
    let (low_bits, high_bits) = shape.digits();
    let high_remainders: Vec<i64> =
        if high_bits > 0 { remainders.iter().map(|r| clamp(r >> low_bits)).collect() } else { Vec::new() };
    let low = remainders.iter().enumerate().map(|(g, r)| match high_remainders.get(g) {
        Some(h) => r - (i128::from(*h) << low_bits),
        None => *r,
    });
    let low_multiplicities = count(low_bits, low)?;
    let high_multiplicities = if high_bits > 0 {
        count(high_bits, high_remainders.iter().map(|&h| i128::from(h)))?
    } else {
        Vec::new()
    };
    let output_multiplicities = SignedRange::for_norm(shape.output_bits)?.multiplicities("Y", &output)?;
    let digit_multiplicities = count(NORM_DIGIT_BITS, digits.iter().map(|&d| i128::from(d)))?;
    let (shifted, input_high) = input_digits(&tables.input);
    let input_low_multiplicities =
        count(INPUT_LOW_BITS, input_low(&shifted, &input_high).into_iter().map(i128::from))?;
    let input_high_multiplicities = count(INPUT_HIGH_BITS, input_high.iter().map(|&h| i128::from(h)))?;
    Ok(NormRanges {
        digits,
        high_remainders,
        low_multiplicities,
        high_multiplicities,
        output_multiplicities,
        digit_multiplicities,
        input_high,
        input_low_multiplicities,
        input_high_multiplicities,
    })
}

fn padded_output(shape: &NormShape, output: &[i64]) -> Vec<i64> {
    crate::projection::pad(output, shape.rows, shape.width, shape.row_vars(), shape.column_vars())
}

/// A norm's proof in either mode, after its lookups (the layer's batch): `P` a sum-check's,
/// `S` a sent value, `Z` a relations proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct NormProof<
    P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof,
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// The output's sum-check.
    pub output: P,
    /// `e_k = G̃(k ‖ r_u)`, one per slot.
    pub digit_values: Vec<S>,
    /// The digits' relations.
    pub digit_relations: Z,
    /// The inverse square root's sum-check over the rows.
    pub rows: P,
    /// The squares' sum-check.
    pub squares: P,
    /// LayerNorm: the row sums' batched sum-check.
    pub sums: Option<P>,
}

/// A [`NormProof`] in mode `M`.
pub type NormProofOf<M> = NormProof<
    <M as crate::mode::ProductMode>::ProductProof,
    <M as crate::mode::ProductMode>::Sent,
    <M as crate::mode::ProductMode>::ZeroProof,
>;

/// The claims a norm leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormClaims<V = Fr> {
    /// On `X` (grid): at the output's point and the squares'; LayerNorm also at the row sums'
    /// two points.
    pub input: Vec<EvalClaim<V>>,
    /// On `Y` (grid).
    pub output: EvalClaim<V>,
    /// On `γ` (`d̂`).
    pub scale: EvalClaim<V>,
    /// On `β` (`d̂`), with a bias.
    pub bias: Option<EvalClaim<V>>,
    /// On the digit stack `G`: the fold of the digits at `r_u`, and `q` at the rows' and the
    /// output's row points.
    pub digits: Vec<EvalClaim<V>>,
    /// On `R_hi` (grid), with two digits.
    pub high_remainders: Option<EvalClaim<V>>,
    /// On `X_hi` (grid).
    pub input_high: EvalClaim<V>,
    /// On the multiplicities: `R_lo`'s, `R_hi`'s (two digits), `Y`'s range, `X_lo`'s, `X_hi`'s,
    /// `G`'s.
    pub multiplicities: Vec<EvalClaim<V>>,
}

/// A polynomial a proven norm commits to (`crate::norm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormPolynomial {
    /// The digit stack `G`.
    Digits,
    /// The remainder's high digits `R_hi` (two-digit shifts).
    HighRemainders,
    /// The input range's high digits `X_hi`.
    InputHigh,
    /// Lookup `k`'s multiplicities (`R_lo`, `R_hi`, the output's range, the input's two range
    /// digits `X_lo` and `X_hi`, `G`: `crate::norm::NormShape::lookup_vars`).
    Multiplicities(usize),
}

/// The polynomials a proven norm commits to, in one order.
pub(crate) fn norm_polynomials(norm: &NormShape) -> Vec<NormPolynomial> {
    let mut out = vec![NormPolynomial::Digits];
    if norm.has_high_digit() {
        out.push(NormPolynomial::HighRemainders);
    }
    out.push(NormPolynomial::InputHigh);
    out.extend((0..norm.lookup_vars().len()).map(NormPolynomial::Multiplicities));
    out
}

/// The variables of a proven norm's polynomial.
pub(crate) fn norm_polynomial_vars(norm: &NormShape, part: NormPolynomial) -> Result<usize, AttentionError> {
    match part {
        NormPolynomial::Digits => Ok(norm.stack_vars()),
        NormPolynomial::HighRemainders | NormPolynomial::InputHigh => Ok(norm.grid_vars()),
        NormPolynomial::Multiplicities(k) => {
            norm.lookup_vars().get(k).copied().ok_or(AttentionError::CheckFailed { step: STEP })
        }
    }
}

/// A proven norm's tables in [`norm_polynomials`] order.
pub(crate) fn norm_tables(norm: &NormShape, ranges: &NormRanges) -> Vec<(NormPolynomial, Vec<i64>)> {
    let mut out = vec![(NormPolynomial::Digits, ranges.digits.clone())];
    if norm.has_high_digit() {
        out.push((NormPolynomial::HighRemainders, ranges.high_remainders.clone()));
    }
    out.push((NormPolynomial::InputHigh, ranges.input_high.clone()));
    for (k, values) in ranges.multiplicities().into_iter().enumerate() {
        out.push((NormPolynomial::Multiplicities(k), values.to_vec()));
    }
    out
}

/// A norm's claim on its input or output as a claim on the same tensor over a grid of
/// `grid_vars` variables: the norm's grids have at least one row variable, so for one token
/// (`ŝ = 1`) its tables are the caller's with a zero row appended, `T̃′(c, r_0) = (1 − r_0)·T̃(c)`,
/// and a claim at `(c, r_0)` of value `v` is one at `c` of value `v / (1 − r_0)`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` for a point of neither size or `r_0 = 1`.
pub(crate) fn claim_on_grid<V: LinearValue>(
    claim: EvalClaim<V>,
    grid_vars: usize,
    step: &'static str,
) -> Result<EvalClaim<V>, AttentionError> {
    let fail = || AttentionError::CheckFailed { step };
    match claim.point.len().checked_sub(grid_vars) {
        Some(0) => Ok(claim),
        Some(1) => {
            let (point, last) = claim.point.split_at(grid_vars);
            let one_minus = Fr::one() - last.first().copied().ok_or_else(fail)?;
            let inverse = one_minus.inverse().ok_or_else(fail)?;
            Ok(EvalClaim { point: point.to_vec(), value: claim.value.times(inverse) })
        }
        _ => Err(fail()),
    }
}

/// The range tables: `R_lo`'s, `R_hi`'s (two digits), the output range's, the input's two
/// digits', `G`'s.
/// (`Y`'s signed range is the unsigned table of its shifted column: `crate::output_range`.)
fn lookup_tables(shape: &NormShape) -> Result<Vec<RangeTable>, AttentionError> {
    SignedRange::for_norm(shape.output_bits)?;
    shape.lookup_vars().into_iter().map(|bits| Ok(RangeTable::new(bits)?)).collect()
}

/// The factor layout of the output and squares sum-checks.
struct Factors {
    kind: NormKind,
    bias: bool,
}

impl Factors {
    // Output: [eqsel, X, (S), Q, Γ, (B)].
    fn output_sums(&self) -> usize {
        2
    }
    fn output_factor(&self) -> usize {
        match self.kind {
            NormKind::Rms => 2,
            NormKind::Layer => 3,
        }
    }
    fn output_scale(&self) -> usize {
        self.output_factor() + 1
    }
    fn output_bias(&self) -> usize {
        self.output_scale() + 1
    }
    fn output_count(&self) -> usize {
        self.output_scale() + 1 + usize::from(self.bias)
    }
}

fn term(coefficient: Fr, factors: Vec<usize>) -> ProductTerm {
    ProductTerm { coefficient, factors }
}

/// `Σ eqsel·(C·Q·Γ + 2^f·B)` with `C = X` or `d·X − S`.
fn output_sum(shape: &NormShape) -> Result<ZkProductShape, AttentionError> {
    let f = Factors { kind: shape.kind, bias: shape.bias };
    let (q, gamma) = (f.output_factor(), f.output_scale());
    let mut terms = match shape.kind {
        NormKind::Rms => vec![term(Fr::one(), vec![0, 1, q, gamma])],
        NormKind::Layer => vec![
            term(Fr::from(shape.width as u64), vec![0, 1, q, gamma]),
            term(-Fr::one(), vec![0, f.output_sums(), q, gamma]),
        ],
    };
    if shape.bias {
        terms.push(term(Fr::from(1u64 << shape.shift_bits), vec![0, f.output_bias()]));
    }
    let count = f.output_count();
    let sum = SumOfProducts::new(count, terms).map_err(sumcheck_error(STEP))?;
    let mut public = vec![false; count];
    public[0] = true;
    sum_of_products(STEP, sum, public)
}

/// `Σ eq(r_u)·[(1−λ)·q²T − 2λ·qT − λ·T]` over `[eq, q, T]`.
fn rows_sum(lambda: Fr) -> Result<ZkProductShape, AttentionError> {
    let sum = SumOfProducts::new(
        3,
        vec![
            term(Fr::one() - lambda, vec![0, 1, 1, 2]),
            term(-(lambda + lambda), vec![0, 1, 2]),
            term(-lambda, vec![0, 2]),
        ],
    )
    .map_err(sumcheck_error(STEP_ROWS))?;
    sum_of_products(STEP_ROWS, sum, vec![true, false, false])
}

/// `Σ eqsel_row·C²` over `[eqsel_row, X, (S)]`.
fn squares_sum(shape: &NormShape) -> Result<ZkProductShape, AttentionError> {
    let (sum, public) = match shape.kind {
        NormKind::Rms => (SumOfProducts::new(2, vec![term(Fr::one(), vec![0, 1, 1])]), vec![true, false]),
        NormKind::Layer => {
            let d = Fr::from(shape.width as u64);
            (
                SumOfProducts::new(
                    3,
                    vec![
                        term(d * d, vec![0, 1, 1]),
                        term(-(d + d), vec![0, 1, 2]),
                        term(Fr::one(), vec![0, 2, 2]),
                    ],
                ),
                vec![true, false, false],
            )
        }
    };
    sum_of_products(STEP_SQUARES, sum.map_err(sumcheck_error(STEP_SQUARES))?, public)
}

/// `[j < d]·X̃(j ‖ ·)` over `[sel, X_t]`.
fn sums_member() -> Result<ZkProductShape, AttentionError> {
    let sum = SumOfProducts::product(2).map_err(sumcheck_error(STEP_SUMS))?;
    sum_of_products(STEP_SUMS, sum, vec![true, false])
}

/// The masked sum-checks of a norm in zero knowledge after its lookups (the layer's batch), in
/// proof order: the output's, the rows', the squares' and (LayerNorm) the row sums' sum-checks.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape [`NormShape::validate`] refuses.
pub fn norm_zk_schedule(shape: &NormShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    shape.validate()?;
    let mut schedule = vec![(shape.grid_vars(), output_sum(shape)?.shape().degree())];
    schedule.push((shape.row_vars(), 4));
    schedule.push((shape.grid_vars(), 3));
    if shape.kind == NormKind::Layer {
        schedule.push((shape.column_vars(), 2));
    }
    Ok(schedule)
}

/// A norm proven alone (its lookups a batch of their own): the head's final norm, tests.
pub type NormAloneProofOf<M> = AloneProof<M, NormProofOf<M>>;

/// [`norm_zk_schedule`] with the norm's own lookup batch first ([`prove_norm_alone`]).
///
/// # Errors
/// As [`norm_zk_schedule`].
pub fn norm_alone_zk_schedule(shape: &NormShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    let mut schedule = lookup_parts_zk_schedule(&[norm_lookup_statements(shape)?]);
    schedule.extend(norm_zk_schedule(shape)?);
    Ok(schedule)
}

/// Proves a norm alone: its lookups, then [`prove_norm`].
///
/// # Errors
/// As [`norm_lookups`] and [`prove_norm`].
pub fn prove_norm_alone<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &NormShape,
    witness: &NormWitness,
    ranges: &NormRanges,
    transcript: &mut Transcript,
) -> Result<(NormAloneProofOf<M>, NormClaims<M::ProverValue>), AttentionError> {
    let lookups = norm_lookups(shape, witness, ranges)?;
    prove_alone::<M, _, _>(prover, lookups, transcript, |p, claims, t| {
        prove_norm::<M>(p, shape, witness, ranges, claims, t)
    })
}

/// Verifies [`prove_norm_alone`].
///
/// # Errors
/// As [`verify_norm`].
pub fn verify_norm_alone<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &NormShape,
    proof: &NormAloneProofOf<M>,
    transcript: &mut Transcript,
) -> Result<NormClaims<M::Value>, AttentionError> {
    let Alone { lookups, steps } = proof;
    verify_alone::<M, _>(verifier, norm_lookup_statements(shape)?, lookups, transcript, |v, claims, t| {
        verify_norm::<M>(v, shape, steps, claims, t)
    })
}

/// `out[j] = Σ_i w_i·table[i·width + j]` (a table's MLE with its row variables fixed).
fn fix_rows(table: &[Fr], width: usize, weights: &[Fr]) -> Vec<Fr> {
    let mut out = vec![Fr::zero(); width];
    for (row, w) in table.chunks(width).zip(weights) {
        for (o, v) in out.iter_mut().zip(row) {
            *o += *w * v;
        }
    }
    out
}

fn broadcast_rows(values: &[Fr], width: usize) -> Vec<Fr> {
    values.iter().flat_map(|v| std::iter::repeat_n(*v, width)).collect()
}

fn broadcast_columns(values: &[Fr], rows: usize) -> Vec<Fr> {
    (0..rows).flat_map(|_| values.iter().copied()).collect()
}

fn field(values: &[i64]) -> Vec<Fr> {
    values.iter().map(|&v| fr_from_i64(v)).collect()
}

/// `eq(r, g)·sel(g)` over the grid.
fn eq_selected(shape: &NormShape, rows: &[Fr], columns: &[Fr]) -> Vec<Fr> {
    let (row_eq, column_eq) = (eq_table(rows), eq_table(columns));
    row_eq
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            column_eq
                .iter()
                .enumerate()
                .map(move |(j, b)| if i < shape.rows && j < shape.width { *a * b } else { Fr::zero() })
        })
        .collect()
}

/// `t = 2^16/(1 + 2^16)` and `(1 + 2^16)`: `q̃(ρ) = (1 + 2^16)·G̃((t, 0, …) ‖ ρ)`.
fn factor_point(shape: &NormShape, rows: &[Fr]) -> Result<(Vec<Fr>, Fr), AttentionError> {
    let base = Fr::from(1u64 << 16);
    let scale = Fr::one() + base;
    let t = base * scale.inverse().ok_or(AttentionError::CheckFailed { step: STEP_ROWS })?;
    let mut point = vec![Fr::zero(); shape.slot_vars()];
    if let Some(first) = point.first_mut() {
        *first = t;
    }
    point.extend_from_slice(rows);
    Ok((point, scale))
}

/// `u(r_u)` and `v(r_u)` from the digits' values.
fn remainders_at<V: LinearValue>(shape: &NormShape, e: &[V], zero: &V) -> (V, V) {
    let digits = shape.remainder_digits as usize;
    let combine = |from: usize| {
        e.iter()
            .skip(from)
            .take(digits)
            .enumerate()
            .fold(zero.clone(), |acc, (t, v)| acc.plus_scaled(Fr::from(2u64).pow([16 * t as u64]), v))
    };
    (combine(FACTOR_DIGITS), combine(FACTOR_DIGITS + digits))
}

/// The digits' relations: the lookup's column is their fold at `r_k`, the unused slots are 0.
fn digit_targets<V: LinearValue>(shape: &NormShape, column: &V, r_k: &[Fr], e: &[V]) -> Vec<V> {
    let weights = eq_table(r_k);
    let mut fold = column.clone();
    for (w, v) in weights.iter().zip(e) {
        fold = fold.plus_scaled(-*w, v);
    }
    let mut targets = vec![fold];
    targets.extend(e.iter().skip(shape.slots()).cloned());
    targets
}

/// The rows sum-check's claim `C₁ − λ(C₁ + 1) − u(r_u) − λ·v(r_u)`.
fn rows_claim<V: LinearValue>(shape: &NormShape, lambda: Fr, e: &[V], one: &V) -> V {
    let c1 = Fr::from(shape.numerator());
    let (u, v) = remainders_at(shape, e, &one.times(Fr::zero()));
    one.times(c1 - lambda * (c1 + Fr::one())).plus_scaled(-Fr::one(), &u).plus_scaled(-lambda, &v)
}

/// The output sum-check's claim `R_lo(r) + 2^f_lo·R_hi(r) − 2^(f−1) + 2^f·(w_Y − 2^(b−1))`,
/// and `Y(r)`.
fn output_claim<V: LinearValue>(
    shape: &NormShape,
    low: &V,
    high: Option<&V>,
    shifted: &V,
    one: &V,
) -> Result<(V, V), AttentionError> {
    let f = shape.shift_bits;
    let y = shifted.plus_scaled(-SignedRange::for_norm(shape.output_bits)?.offset_field(), one);
    let mut remainder = low.clone();
    if let Some(h) = high {
        remainder = remainder.plus_scaled(Fr::from(1u64 << shape.digits().0), h);
    }
    let claim = remainder.plus_scaled(-Fr::from(1u64 << (f - 1)), one).plus_scaled(Fr::from(1u64 << f), &y);
    Ok((claim, y))
}

/// The lookups' claims, split: the grid point with `R_lo`, `R_hi`, `Y + 2^(b−1)`, `X_lo`,
/// `X_hi`; the stack point with `G`; the multiplicities.
struct LookupOut<V> {
    grid_point: Vec<Fr>,
    low: V,
    high: Option<V>,
    shifted: V,
    input_low: V,
    input_high: V,
    stack_point: Vec<Fr>,
    digits: V,
    multiplicities: Vec<EvalClaim<V>>,
}

fn split_lookups<V: LinearValue>(
    shape: &NormShape,
    claims: Vec<LookupClaims<V>>,
) -> Result<LookupOut<V>, AttentionError> {
    let fail = || AttentionError::CheckFailed { step: STEP_LOOKUPS };
    let expected = 5 + usize::from(shape.has_high_digit());
    if claims.len() != expected {
        return Err(fail());
    }
    let grid_point = claims.first().map(|c| c.witness_point.clone()).ok_or_else(fail)?;
    let mut columns = Vec::with_capacity(expected);
    let mut multiplicities = Vec::with_capacity(expected);
    let mut stack_point = Vec::new();
    for (k, claim) in claims.into_iter().enumerate() {
        let grid = k + 1 < expected;
        if grid && claim.witness_point != grid_point {
            return Err(fail());
        }
        if !grid {
            stack_point = claim.witness_point.clone();
        }
        let [column] = <[V; 1]>::try_from(claim.columns).map_err(|_| fail())?;
        columns.push(column);
        multiplicities.push(EvalClaim { point: claim.table_point, value: claim.multiplicities });
    }
    if grid_point.len() != shape.grid_vars() || stack_point.len() != shape.stack_vars() {
        return Err(fail());
    }
    let mut columns = columns.into_iter();
    let low = columns.next().ok_or_else(fail)?;
    let high = if shape.has_high_digit() { Some(columns.next().ok_or_else(fail)?) } else { None };
    let shifted = columns.next().ok_or_else(fail)?;
    let input_low = columns.next().ok_or_else(fail)?;
    let input_high = columns.next().ok_or_else(fail)?;
    let digits = columns.next().ok_or_else(fail)?;
    Ok(LookupOut {
        grid_point,
        low,
        high,
        shifted,
        input_low,
        input_high,
        stack_point,
        digits,
        multiplicities,
    })
}

/// A norm's lookups, as the layer's batch states them ([`crate::lookup_batch`]): the
/// remainders' digits, the output's range, the input's two digits and the digit stack.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a bad shape.
pub fn norm_lookup_statements(shape: &NormShape) -> Result<Vec<LookupStatement<'static>>, AttentionError> {
    shape.validate()?;
    let tables = lookup_tables(shape)?;
    let last = tables.len().saturating_sub(1);
    Ok(tables
        .into_iter()
        .enumerate()
        .map(|(k, t)| LookupStatement::new(t, if k == last { shape.stack_vars() } else { shape.grid_vars() }))
        .collect())
}

/// The tensors the norm's lookups and steps read (a cheating prover's changes applied).
struct NormTensors {
    tables: Integers,
    factors: Vec<i64>,
    output: Vec<i64>,
}

fn norm_tensors(
    shape: &NormShape,
    witness: &NormWitness,
    ranges: &NormRanges,
) -> Result<NormTensors, AttentionError> {
    check_inputs(shape, &witness.input, &witness.scale, &witness.bias)?;
    check_tensor_sizes(&[
        ("Y", witness.output.len(), shape.rows, shape.width),
        ("G", ranges.digits.len(), 1 << shape.row_vars(), 1 << shape.slot_vars()),
        (
            "R_hi",
            ranges.high_remainders.len(),
            usize::from(shape.has_high_digit()) << shape.row_vars(),
            1 << shape.column_vars(),
        ),
        ("X_hi", ranges.input_high.len(), 1 << shape.row_vars(), 1 << shape.column_vars()),
    ])?;
    let tables = integers(shape, &witness.input);
    #[cfg(test)]
    let tables = cheating::changed_tables(tables);
    let factors = factors_from_stack(shape, &ranges.digits);
    let output = padded_output(shape, &witness.output);
    Ok(NormTensors { tables, factors, output })
}

/// Prepares the norm's lookups of `witness` with its range data ([`norm_ranges`]; a cheating
/// prover may pass others) for the layer's batch, in [`norm_lookup_statements`] order.
///
/// # Errors
/// Bad shapes or tensors (as [`compute_norm`]), range data of the wrong size.
pub fn norm_lookups<'a>(
    shape: &NormShape,
    witness: &NormWitness,
    ranges: &'a NormRanges,
) -> Result<Vec<PreparedLookup<'a>>, AttentionError> {
    let NormTensors { tables, factors, output } = norm_tensors(shape, witness, ranges)?;
    let grid_vars = shape.grid_vars();
    let remainders = remainders(shape, &tables, &factors, &witness.scale, &witness.bias, &output);
    let low_bits = shape.digits().0;
    let low: Vec<i64> = remainders
        .iter()
        .enumerate()
        .map(|(g, r)| {
            clamp(r - (i128::from(ranges.high_remainders.get(g).copied().unwrap_or(0)) << low_bits))
        })
        .collect();
    let shifted = SignedRange::for_norm(shape.output_bits)?.entries(&output);
    let input_low_digits = input_low(&input_digits(&tables.input).0, &ranges.input_high);
    // The witness columns in the lookups' order, beside their multiplicities (the same order).
    let mut columns: Vec<(Cow<'a, [i64]>, usize)> = vec![(Cow::Owned(low), grid_vars)];
    if shape.has_high_digit() {
        columns.push((Cow::Borrowed(&ranges.high_remainders), grid_vars));
    }
    columns.extend([
        (Cow::Owned(shifted), grid_vars),
        (Cow::Owned(input_low_digits), grid_vars),
        (Cow::Borrowed(ranges.input_high.as_slice()), grid_vars),
        (Cow::Borrowed(ranges.digits.as_slice()), shape.stack_vars()),
    ]);
    let all_multiplicities = ranges.multiplicities();
    let statements = norm_lookup_statements(shape)?;
    if all_multiplicities.len() != columns.len() || statements.len() != columns.len() {
        return Err(AttentionError::CheckFailed { step: STEP_LOOKUPS });
    }
    Ok(statements
        .into_iter()
        .zip(columns)
        .zip(all_multiplicities)
        .map(|((statement, (values, _)), m)| PreparedLookup::column(statement, values, m))
        .collect())
}

/// Proves the norm of `witness` with its range data ([`norm_ranges`]; a cheating prover may
/// pass others) in mode `M`, from its lookups' claims (the layer's batch, [`norm_lookups`]).
/// The caller has committed to and absorbed `X`, `Y`, `γ`, `β`, `G`, `R_hi`, `X_hi` and the
/// multiplicities.
///
/// # Errors
/// Bad shapes or tensors (as [`compute_norm`]), range data of the wrong size, lookup claims of
/// the wrong structure, the sum-checks' and relations' errors.
pub fn prove_norm<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &NormShape,
    witness: &NormWitness,
    ranges: &NormRanges,
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<(NormProofOf<M>, NormClaims<M::ProverValue>), AttentionError> {
    let NormTensors { tables, factors, output: _ } = norm_tensors(shape, witness, ranges)?;
    shape.append_to_transcript(transcript);
    let (row_vars, column_vars, grid_vars) = (shape.row_vars(), shape.column_vars(), shape.grid_vars());
    let (rows, width) = (1usize << row_vars, 1usize << column_vars);
    let out = split_lookups(shape, claims)?;
    let one = M::prover_constant(prover, Fr::one());
    let (output_value, y) = output_claim(shape, &out.low, out.high.as_ref(), &out.shifted, &one)?;
    let (r_c, r_i) = out.grid_point.split_at(column_vars);

    // The output's sum-check.
    let x_field = field(&tables.input);
    let sums_field = field(&tables.sums);
    let q_field = field(&factors);
    let scale_field = field(&crate::projection::pad(&witness.scale, 1, shape.width, 0, column_vars));
    let mut mles = vec![eq_selected(shape, r_i, r_c), x_field.clone()];
    if shape.kind == NormKind::Layer {
        mles.push(broadcast_rows(&sums_field, width));
    }
    mles.push(broadcast_rows(&q_field, width));
    mles.push(broadcast_columns(&scale_field, rows));
    if shape.bias {
        let bias_field = field(&crate::projection::pad(&witness.bias, 1, shape.width, 0, column_vars));
        mles.push(broadcast_columns(&bias_field, rows));
    }
    let mles = mles
        .into_iter()
        .map(|m| DenseMultilinearExtension::new(grid_vars, m))
        .collect::<Result<Vec<_>, _>>()?;
    let (output_proof, output_outcome) =
        prove_dense::<M>(prover, STEP, &output_sum(shape)?, mles, &output_value, transcript)?;
    let rho = output_outcome.point.clone();

    // The digits at r_u.
    let (r_k, r_u) = out.stack_point.split_at(shape.slot_vars());
    let slots = 1usize << shape.slot_vars();
    let row_weights = eq_table(r_u);
    let digit_values = fix_rows(&field(&ranges.digits), slots, &row_weights);
    #[cfg(test)]
    let digit_values = cheating::changed_digits(digit_values);
    let (digit_sent, e) = M::send(prover, LABEL_DIGITS, &digit_values, transcript);
    let targets = digit_targets(shape, &out.digits, r_k, &e);
    let digit_relations = M::prove_zero(prover, STEP_DIGITS, targets, transcript)?;
    let tau = transcript.challenge_fields(LABEL_FOLD, shape.slot_vars());

    // The rows' sum-check.
    let lambda = transcript.challenge_field(LABEL_LAMBDA);
    let rows_value = rows_claim(shape, lambda, &e, &one);
    let squares_field: Vec<Fr> = tables.squares.iter().map(|&t| fr_from_i128(t)).collect();
    let mles = vec![
        DenseMultilinearExtension::new(row_vars, row_weights.clone())?,
        DenseMultilinearExtension::new(row_vars, q_field.clone())?,
        DenseMultilinearExtension::new(row_vars, squares_field)?,
    ];
    let (rows_proof, rows_outcome) =
        prove_dense::<M>(prover, STEP_ROWS, &rows_sum(lambda)?, mles, &rows_value, transcript)?;
    let rho_u = rows_outcome.point.clone();
    let squares_end = rows_outcome.hidden(2, rho_u.clone(), STEP_ROWS)?;

    // The squares' sum-check.
    let squares_value = squares_end.value.plus_scaled(-Fr::from(shape.epsilon), &one);
    let mut mles = vec![row_selected(shape, &rho_u), x_field.clone()];
    if shape.kind == NormKind::Layer {
        mles.push(broadcast_rows(&sums_field, width));
    }
    let mles = mles
        .into_iter()
        .map(|m| DenseMultilinearExtension::new(grid_vars, m))
        .collect::<Result<Vec<_>, _>>()?;
    let (squares_proof, squares_outcome) =
        prove_dense::<M>(prover, STEP_SQUARES, &squares_sum(shape)?, mles, &squares_value, transcript)?;
    let rho2 = squares_outcome.point.clone();

    // LayerNorm: the row sums at ρ_i and ρ″_i.
    let f = Factors { kind: shape.kind, bias: shape.bias };
    let (sums_proof, sum_claims) = if shape.kind == NormKind::Layer {
        let points = [&rho[column_vars..], &rho2[column_vars..]];
        let ends = [
            output_outcome.hidden(f.output_sums(), points[0].to_vec(), STEP)?,
            squares_outcome.hidden(2, points[1].to_vec(), STEP_SQUARES)?,
        ];
        let selector: Vec<Fr> =
            (0..width).map(|j| if j < shape.width { Fr::one() } else { Fr::zero() }).collect();
        let member = sums_member()?;
        let mut instances = Vec::with_capacity(2);
        for point in points {
            let fixed = fix_rows(&x_field, width, &eq_table(point));
            instances.push(
                ProductSumcheck::new(
                    member.shape().clone(),
                    vec![
                        DenseMultilinearExtension::new(column_vars, selector.clone())?,
                        DenseMultilinearExtension::new(column_vars, fixed)?,
                    ],
                )
                .map_err(sumcheck_error(STEP_SUMS))?,
            );
        }
        let members =
            instances.iter_mut().map(|i| (&member, i as &mut dyn zkmha_sumcheck::FinalEvaluations)).collect();
        let (proof, outcomes) =
            M::prove_products(prover, STEP_SUMS, members, &[&ends[0].value, &ends[1].value], transcript)?;
        let mut claims = Vec::with_capacity(2);
        for (outcome, point) in outcomes.iter().zip(points) {
            let sigma = outcome.point.clone();
            claims.push(outcome.hidden(1, [sigma.as_slice(), point].concat(), STEP_SUMS)?);
        }
        (Some(proof), claims)
    } else {
        (None, Vec::new())
    };

    let claims = finish_claims(
        shape,
        Ends {
            rho: &rho,
            output: &output_outcome,
            rows: &rows_outcome,
            squares: &squares_outcome,
            sums: sum_claims,
        },
        &out,
        y,
        r_u,
        &tau,
        &e,
        &one,
    )?;
    let proof = NormProof {
        output: output_proof,
        digit_values: digit_sent,
        digit_relations,
        rows: rows_proof,
        squares: squares_proof,
        sums: sums_proof,
    };
    Ok((proof, claims))
}

/// `eq(ρ_u, i)·[i < s]·[j < d]` over the grid.
fn row_selected(shape: &NormShape, rows: &[Fr]) -> Vec<Fr> {
    let width = 1usize << shape.column_vars();
    eq_table(rows)
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            (0..width).map(move |j| if i < shape.rows && j < shape.width { *a } else { Fr::zero() })
        })
        .collect()
}

/// The sum-checks' outcomes a norm's claims come from.
struct Ends<'a, V> {
    rho: &'a [Fr],
    output: &'a crate::mode::ProductOutcome<V>,
    rows: &'a crate::mode::ProductOutcome<V>,
    squares: &'a crate::mode::ProductOutcome<V>,
    sums: Vec<EvalClaim<V>>,
}

#[allow(clippy::too_many_arguments)]
fn finish_claims<V: LinearValue>(
    shape: &NormShape,
    ends: Ends<'_, V>,
    out: &LookupOut<V>,
    y: V,
    r_u: &[Fr],
    tau: &[Fr],
    e: &[V],
    one: &V,
) -> Result<NormClaims<V>, AttentionError> {
    let column_vars = shape.column_vars();
    let f = Factors { kind: shape.kind, bias: shape.bias };
    let rho = ends.rho;
    let (rho_c, rho_i) =
        rho.split_at_checked(column_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let rho2 = ends.squares.point.clone();
    let mut input =
        vec![ends.output.hidden(1, rho.to_vec(), STEP)?, ends.squares.hidden(1, rho2, STEP_SQUARES)?];
    input.extend(ends.sums);
    let scale = ends.output.hidden(f.output_scale(), rho_c.to_vec(), STEP)?;
    let bias =
        if shape.bias { Some(ends.output.hidden(f.output_bias(), rho_c.to_vec(), STEP)?) } else { None };
    // G at (τ ‖ r_u): the digits' fold; q at ρ_u and ρ_i through the factor point.
    let weights = eq_table(tau);
    let fold = e.iter().zip(&weights).fold(y.times(Fr::zero()), |acc, (v, w)| acc.plus_scaled(*w, v));
    let mut digits = vec![EvalClaim { point: [tau, r_u].concat(), value: fold }];
    for (outcome, k, point, step) in [
        (ends.rows, 1usize, ends.rows.point.as_slice(), STEP_ROWS),
        (ends.output, f.output_factor(), rho_i, STEP),
    ] {
        let end = outcome.hidden(k, point.to_vec(), step)?;
        let (at, scale) = factor_point(shape, point)?;
        let inverse = scale.inverse().ok_or(AttentionError::CheckFailed { step })?;
        digits.push(EvalClaim { point: at, value: end.value.times(inverse) });
    }
    let high_remainders = out.high.clone().map(|value| EvalClaim { point: out.grid_point.clone(), value });
    // X(r) = X_lo(r) − 2^28 + 2^15·X_hi(r): the input range's claim on X.
    input.push(EvalClaim {
        point: out.grid_point.clone(),
        value: out
            .input_low
            .plus_scaled(-Fr::from(1u64 << NORM_INPUT_BOUND_BITS), one)
            .plus_scaled(Fr::from(1u64 << INPUT_LOW_BITS), &out.input_high),
    });
    let input_high = EvalClaim { point: out.grid_point.clone(), value: out.input_high.clone() };
    Ok(NormClaims {
        input,
        output: EvalClaim { point: out.grid_point.clone(), value: y },
        scale,
        bias,
        digits,
        high_remainders,
        input_high,
        multiplicities: out.multiplicities.clone(),
    })
}

/// Verifies a norm in mode `M` from its lookups' claims (the layer's batch, in
/// [`norm_lookup_statements`] order); returns the claims the caller must discharge (openings of
/// `X`, `Y`, `γ`, `β`, `G`, `R_hi`, `X_hi` and the multiplicities).
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookups' errors, [`AttentionError::Sumcheck`], or
/// [`AttentionError::CheckFailed`] naming the step: `"norm output"`, `"norm inverse square
/// root"`, `"norm squares"`, `"norm row sums"` for a public factor that is not its closed form,
/// `"norm digits"` for digit values that break their relations, `"norm lookups"` for lookups of
/// the wrong structure (in zero knowledge the relations' group equations are left in the
/// deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_norm<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &NormShape,
    proof: &NormProofOf<M>,
    claims: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<NormClaims<M::Value>, AttentionError> {
    shape.validate()?;
    shape.append_to_transcript(transcript);
    let (row_vars, column_vars, grid_vars) = (shape.row_vars(), shape.column_vars(), shape.grid_vars());
    let out = split_lookups(shape, claims)?;
    let one = M::verifier_constant(verifier, Fr::one());
    let (output_value, y) = output_claim(shape, &out.low, out.high.as_ref(), &out.shifted, &one)?;
    let (r_c, r_i) =
        out.grid_point.split_at_checked(column_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;

    let output_outcome = verify_single::<M>(
        verifier,
        STEP,
        &output_sum(shape)?,
        grid_vars,
        &output_value,
        &proof.output,
        transcript,
    )?;
    let rho = output_outcome.point.clone();
    let (rho_c, rho_i) =
        rho.split_at_checked(column_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let eqsel = prefix_eq_pair_sum(shape.rows, r_i, rho_i) * prefix_eq_pair_sum(shape.width, r_c, rho_c);
    output_outcome.check_public(0, eqsel, STEP)?;

    if proof.digit_values.len() != 1usize << shape.slot_vars() {
        return Err(AttentionError::CheckFailed { step: STEP_DIGITS });
    }
    let (r_k, r_u) = out
        .stack_point
        .split_at_checked(shape.slot_vars())
        .ok_or(AttentionError::CheckFailed { step: STEP_DIGITS })?;
    let e = M::receive(verifier, LABEL_DIGITS, &proof.digit_values, transcript);
    let targets = digit_targets(shape, &out.digits, r_k, &e);
    M::verify_zero(verifier, STEP_DIGITS, targets, &proof.digit_relations, transcript)?;
    let tau = transcript.challenge_fields(LABEL_FOLD, shape.slot_vars());

    let lambda = transcript.challenge_field(LABEL_LAMBDA);
    let rows_value = rows_claim(shape, lambda, &e, &one);
    let rows_outcome = verify_single::<M>(
        verifier,
        STEP_ROWS,
        &rows_sum(lambda)?,
        row_vars,
        &rows_value,
        &proof.rows,
        transcript,
    )?;
    let rho_u = rows_outcome.point.clone();
    rows_outcome.check_public(0, eq_evaluation(r_u, &rho_u)?, STEP_ROWS)?;
    let squares_end = rows_outcome.hidden(2, rho_u.clone(), STEP_ROWS)?;

    let squares_value = squares_end.value.plus_scaled(-Fr::from(shape.epsilon), &one);
    let squares_outcome = verify_single::<M>(
        verifier,
        STEP_SQUARES,
        &squares_sum(shape)?,
        grid_vars,
        &squares_value,
        &proof.squares,
        transcript,
    )?;
    let rho2 = squares_outcome.point.clone();
    let (rho2_c, rho2_i) =
        rho2.split_at_checked(column_vars).ok_or(AttentionError::CheckFailed { step: STEP_SQUARES })?;
    let row_selector = prefix_eq_pair_sum(shape.rows, &rho_u, rho2_i) * prefix_eq_sum(shape.width, rho2_c);
    squares_outcome.check_public(0, row_selector, STEP_SQUARES)?;

    let f = Factors { kind: shape.kind, bias: shape.bias };
    let sum_claims = match (shape.kind, &proof.sums) {
        (NormKind::Rms, None) => Vec::new(),
        (NormKind::Layer, Some(sums)) => {
            let points = [rho_i, rho2_i];
            let ends = [
                output_outcome.hidden(f.output_sums(), rho_i.to_vec(), STEP)?,
                squares_outcome.hidden(2, rho2_i.to_vec(), STEP_SQUARES)?,
            ];
            let member = sums_member()?;
            let outcomes = M::verify_products(
                verifier,
                STEP_SUMS,
                &[(&member, column_vars), (&member, column_vars)],
                &[&ends[0].value, &ends[1].value],
                sums,
                transcript,
            )?;
            let mut claims = Vec::with_capacity(2);
            for (outcome, point) in outcomes.iter().zip(points) {
                outcome.check_public(0, prefix_eq_sum(shape.width, &outcome.point), STEP_SUMS)?;
                claims.push(outcome.hidden(1, [outcome.point.as_slice(), point].concat(), STEP_SUMS)?);
            }
            if claims.len() != 2 {
                return Err(AttentionError::CheckFailed { step: STEP_SUMS });
            }
            claims
        }
        _ => return Err(AttentionError::CheckFailed { step: STEP_SUMS }),
    };
    finish_claims(
        shape,
        Ends {
            rho: &rho,
            output: &output_outcome,
            rows: &rows_outcome,
            squares: &squares_outcome,
            sums: sum_claims,
        },
        &out,
        y,
        r_u,
        &tau,
        &e,
        &one,
    )
}

/// Test-only hooks of a malicious prover: a changed `T` table in the rows' sum-check, changed
/// digit values.
#[cfg(test)]
pub(crate) mod cheating {
    use super::*;
    use std::cell::RefCell;

    /// A change to the honest prover.
    #[derive(Clone, Debug)]
    pub(crate) enum Cheat {
        /// Adds this to `T` of row 0 (the rows' sum-check runs on it; the squares' on `X`).
        Squares(i128),
        /// Adds this to `e_k` of slot `k`.
        Digit(usize, Fr),
    }

    thread_local! {
        pub(crate) static CHEAT: RefCell<Option<Cheat>> = const { RefCell::new(None) };
    }

    pub(crate) fn changed_tables(mut tables: Integers) -> Integers {
        if let Some(Cheat::Squares(delta)) = CHEAT.with(|c| c.borrow().clone()) {
            tables.squares[0] += delta;
        }
        tables
    }

    pub(crate) fn changed_digits(mut values: Vec<Fr>) -> Vec<Fr> {
        if let Some(Cheat::Digit(k, delta)) = CHEAT.with(|c| c.borrow().clone()) {
            values[k] += delta;
        }
        values
    }
}

/// Malicious provers, each changed at one step to prove a false norm; every later message
/// follows honestly. Each is rejected by the relation it breaks, in both modes.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod malicious_provers {
    use super::cheating::{CHEAT, Cheat};
    use super::*;
    use crate::mode::zk_test_support::zk_round;
    use crate::mode::{Plain, Zk};

    fn shape(kind: NormKind) -> NormShape {
        NormShape {
            kind,
            rows: 5,
            width: 6,
            epsilon: 3,
            scale_bits: 22,
            shift_bits: 24,
            output_bits: 16,
            bias: true,
            remainder_digits: 4,
        }
    }

    fn tensors(shape: &NormShape) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let input = (0..shape.rows * shape.width).map(|k| (k as i64 * 7919) % 4001 - 2000).collect();
        let scale = (0..shape.width).map(|k| 900 + 37 * k as i64).collect();
        let bias = (0..shape.width).map(|k| 11 * k as i64 - 20).collect();
        (input, scale, bias)
    }

    /// A cheating prover's witness and range data from its own digit stack: the output rounded
    /// with the stack's `q`, every multiplicity recounted.
    fn from_stack(shape: &NormShape, stack: Vec<i64>) -> (NormWitness, NormRanges) {
        let (input, scale, bias) = tensors(shape);
        let tables = integers(shape, &input);
        let factors = factors_from_stack(shape, &stack);
        let output = rounded_output(shape, &tables.centered, &factors, &scale, &bias);
        let witness = NormWitness { input, scale, bias, output };
        let padded = padded_output(shape, &witness.output);
        let remainders = remainders(shape, &tables, &factors, &witness.scale, &witness.bias, &padded);
        let (low_bits, high_bits) = shape.digits();
        let high_remainders: Vec<i64> = remainders.iter().map(|r| clamp(r >> low_bits)).collect();
        let ranges = NormRanges {
            low_multiplicities: count(low_bits, remainders.iter().map(|r| r & ((1 << low_bits) - 1)))
                .unwrap(),
            high_multiplicities: count(high_bits, high_remainders.iter().map(|&h| i128::from(h))).unwrap(),
            high_remainders,
            output_multiplicities: SignedRange::for_norm(shape.output_bits)
                .unwrap()
                .multiplicities("Y", &padded)
                .unwrap(),
            digit_multiplicities: count(NORM_DIGIT_BITS, stack.iter().map(|&d| i128::from(d))).unwrap(),
            digits: stack,
            ..norm_ranges_of_input(&tables)
        };
        (witness, ranges)
    }

    /// The honest input range data (the remainder's and digits' fields left empty).
    fn norm_ranges_of_input(tables: &Integers) -> NormRanges {
        let (shifted, input_high) = input_digits(&tables.input);
        NormRanges {
            digits: Vec::new(),
            high_remainders: Vec::new(),
            low_multiplicities: Vec::new(),
            high_multiplicities: Vec::new(),
            output_multiplicities: Vec::new(),
            digit_multiplicities: Vec::new(),
            input_low_multiplicities: count(
                INPUT_LOW_BITS,
                input_low(&shifted, &input_high).into_iter().map(i128::from),
            )
            .unwrap(),
            input_high_multiplicities: count(INPUT_HIGH_BITS, input_high.iter().map(|&h| i128::from(h)))
                .unwrap(),
            input_high,
        }
    }

    fn both_modes(
        shape: &NormShape,
        stack: Vec<i64>,
        cheat: Option<Cheat>,
    ) -> [Result<(), AttentionError>; 2] {
        let (witness, ranges) = from_stack(shape, stack);
        CHEAT.with(|c| *c.borrow_mut() = cheat);
        let plain = prove_norm_alone::<Plain>(&mut (), shape, &witness, &ranges, &mut Transcript::new(b"t"))
            .and_then(|(proof, _)| {
                verify_norm_alone::<Plain>(&mut (), shape, &proof, &mut Transcript::new(b"t"))
            })
            .map(|_| ());
        let zk = zk_round(
            norm_alone_zk_schedule(shape).unwrap(),
            |p, t| prove_norm_alone::<Zk>(p, shape, &witness, &ranges, t),
            |v, t, (proof, _)| verify_norm_alone::<Zk>(v, shape, proof, t),
        )
        .map(|_| ());
        CHEAT.with(|c| *c.borrow_mut() = None);
        [plain, zk]
    }

    fn group_equations() -> AttentionError {
        AttentionError::ZeroKnowledge {
            step: "the group equations",
            source: zkmha_zk::ZkError::RelationMismatch,
        }
    }

    fn honest_stack(shape: &NormShape) -> Vec<i64> {
        let (input, ..) = tensors(shape);
        digit_stack(shape, &integers(shape, &input).squares).unwrap()
    }

    /// Row 0's digits for `q`, `u`, `v`, each reduced mod its digits' range (a negative `u` or
    /// `v` wraps, as a cheater's digits must).
    fn set_row(shape: &NormShape, stack: &mut [i64], q: u128, u: i128, v: i128) {
        let digits = shape.remainder_digits as usize;
        let wrap =
            |x: i128| if digits >= 8 { x as u128 } else { x.rem_euclid(1i128 << (16 * digits)) as u128 };
        let row =
            digits_of(q, FACTOR_DIGITS).chain(digits_of(wrap(u), digits)).chain(digits_of(wrap(v), digits));
        for (slot, d) in stack.iter_mut().zip(row) {
            *slot = d;
        }
    }

    #[test]
    fn the_honest_prover_passes_the_harness() {
        for kind in [NormKind::Rms, NormKind::Layer] {
            let shape = shape(kind);
            assert_eq!(both_modes(&shape, honest_stack(&shape), None), [Ok(()), Ok(())]);
        }
    }

    #[test]
    fn an_inverse_square_root_off_by_one_is_rejected() {
        for kind in [NormKind::Rms, NormKind::Layer] {
            let shape = shape(kind);
            let (input, ..) = tensors(&shape);
            let t = integers(&shape, &input).squares[0];
            let numerator = shape.numerator() as i128;
            let q = inverse_roots(&shape, &[t])[0] as i128;
            for wrong in [q + 1, q - 1] {
                let mut stack = honest_stack(&shape);
                let (u, v) = (numerator - wrong * wrong * t, (wrong + 1) * (wrong + 1) * t - numerator - 1);
                assert!(u < 0 || v < 0);
                set_row(&shape, &mut stack, wrong as u128, u, v);
                let [plain, zk] = both_modes(&shape, stack, None);
                assert!(
                    matches!(plain, Err(AttentionError::Sumcheck { step: STEP_ROWS, .. })),
                    "{kind:?} q{:+}: {plain:?}",
                    wrong - q
                );
                assert_eq!(zk, Err(group_equations()), "{kind:?}");
            }
        }
    }

    #[test]
    fn a_false_sum_of_squares_is_rejected() {
        // The cheater claims T' = 2T on row 0 (its q, u, v and output consistent with T'): the
        // rows' sum-check passes, the squares' does not.
        for kind in [NormKind::Rms, NormKind::Layer] {
            let shape = shape(kind);
            let (input, ..) = tensors(&shape);
            let t = integers(&shape, &input).squares[0];
            let mut stack = honest_stack(&shape);
            let fake = digit_stack(&shape, &[2 * t]).unwrap();
            let width = 1usize << shape.slot_vars();
            stack[..width].copy_from_slice(&fake[..width]);
            let [plain, zk] = both_modes(&shape, stack, Some(Cheat::Squares(t)));
            assert!(
                matches!(plain, Err(AttentionError::Sumcheck { step: STEP_SQUARES, .. })),
                "{kind:?}: {plain:?}"
            );
            assert_eq!(zk, Err(group_equations()), "{kind:?}");
        }
    }

    #[test]
    fn digit_values_that_break_their_relations_are_rejected() {
        let shape = shape(NormKind::Layer);
        for k in [0, 2, 5, (1 << shape.slot_vars()) - 1] {
            let [plain, zk] = both_modes(&shape, honest_stack(&shape), Some(Cheat::Digit(k, Fr::from(3u64))));
            assert_eq!(plain, Err(AttentionError::CheckFailed { step: STEP_DIGITS }), "slot {k}");
            assert_eq!(zk, Err(group_equations()), "slot {k}");
        }
    }
}
