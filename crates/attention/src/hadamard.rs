//! The gated MLP's entrywise product, exact: `P = A ⊙ U` (Llama's SwiGLU,
//! `down(SiLU(gate·x) ⊙ up·x)`: `A` the activated gate, `U` the up projection). `P` is never
//! committed: the down projection's claim on its input `P(r) = y` comes in, and one sum-check
//! reduces it to claims on `A` and `U` (the GKR direction). One implementation for both modes
//! ([`crate::mode`]): the sum-check through `M::prove_products` (`eq` public, `A`, `U` hidden),
//! the claimed value `y` plain or hidden as the caller's claim is.
//!
//! ```text
//! tensors    A, U: ŝ × n̂ (index i·n̂ + c, MLE points [column ‖ row]), zero-padded;
//!            P = A ∘ U over the whole grid (the padding included), not committed
//! absorb     the shape (s, n); the caller absorbs its commitments to A and U, and every
//!            message that led to r, before
//! claim in   P̃(r) = y (the down projection's claim on its input)
//! sum-check  Σ_g eq(r, g)·A(g)·U(g) = y   (log ŝn̂ vars, degree 3)
//!            → ρ; V checks eq(r, ρ) in closed form; a = A(ρ), u = U(ρ) (hidden factors)
//! claims out A(ρ) = a, U(ρ) = u
//! ```
//!
//! Why exact: a rounded product `round(A ⊙ U / 2^k)` at 16 bits loses the small entries next
//! to a "massive activation" (SmolLM2's layers 11 and 28 kept one fractional bit, and the
//! rounding was 98 % of those layers' error, `docs/ACCURACY.md`); the exact product carries
//! every bit to the down projection, whose own rounding (up to 32 bits of shift) does the
//! rescale. It is cheaper too: no committed `P`, no remainder or output range lookups.
//!
//! Soundness: the sum-check proves `Σ_g eq(r, g)·(A∘U)(g) = P̃(r)` at the caller's random `r`,
//! so `P̃ = (A∘U)~` but with probability ≤ log(ŝn̂)/|F| (Schwartz–Zippel), and the sum-check
//! errs with ≤ 3·log(ŝn̂)/|F|. The relation holds mod p; it is the integer product when the
//! caller pins `A` and `U` to integers with `|A|·|U| < 2^31` (the MLP's activation table pins
//! `A`, the up projection's output range `U`, and [`crate::mlp::MlpShape::validate`] bounds
//! their product): then `P` is that integer, as the next projection requires.

use crate::AttentionError;
use crate::common::{check_tensor_sizes, sumcheck_error};
use crate::mode::{Mode, PlainProductProof, prove_dense, verify_single};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{EvalClaim, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::ZkProductShape;

const STEP: &str = "hadamard product";
const LABEL_SHAPE: &[u8] = b"attention/hadamard/shape";

/// Largest `|A|·|U|`, and so `|P|` (the down projection takes inputs below `2^31`).
pub const HADAMARD_OUTPUT_BOUND_BITS: u32 = 31;
/// Largest `s·n`.
pub const MAX_HADAMARD_ENTRIES: usize = 1 << 26;

/// The public shape of `P = A ⊙ U`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct HadamardShape {
    /// Rows `s` (tokens).
    pub rows: usize,
    /// Columns `n` (the MLP's hidden width).
    pub width: usize,
}

impl HadamardShape {
    /// Checks the shape against the stated limits.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the first limit it breaks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.rows == 0 || self.width == 0 || self.rows.saturating_mul(self.width) > MAX_HADAMARD_ENTRIES {
            return Err(AttentionError::InvalidShape(format!(
                "a hadamard product takes 1 to 2^26 entries, not {} × {}",
                self.rows, self.width
            )));
        }
        Ok(())
    }

    fn row_vars(&self) -> usize {
        self.rows.next_power_of_two().trailing_zeros() as usize
    }

    fn column_vars(&self) -> usize {
        self.width.next_power_of_two().trailing_zeros() as usize
    }

    /// `log ŝ + log n̂`.
    pub fn grid_vars(&self) -> usize {
        self.row_vars() + self.column_vars()
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(LABEL_SHAPE, &[self.rows, self.width]);
    }

    /// `values` (`s × n`) zero-padded to the grid.
    fn pad(&self, values: &[i64]) -> Vec<i64> {
        crate::projection::pad(values, self.rows, self.width, self.row_vars(), self.column_vars())
    }
}

/// `A`, `U` and `P` (`s × n`, row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardWitness {
    /// `A` (the activated gate).
    pub left: Vec<i64>,
    /// `U` (the up projection).
    pub right: Vec<i64>,
    /// `P` (the down projection's input; never committed).
    pub output: Vec<i64>,
}

fn check_inputs(shape: &HadamardShape, left: &[i64], right: &[i64]) -> Result<(), AttentionError> {
    shape.validate()?;
    check_tensor_sizes(&[
        ("A", left.len(), shape.rows, shape.width),
        ("U", right.len(), shape.rows, shape.width),
    ])
}

/// The reference `P = A ∘ U` (`s × n`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`] for a product `|A·U| ≥ 2^31`.
pub fn compute_hadamard(
    shape: &HadamardShape,
    left: &[i64],
    right: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    check_inputs(shape, left, right)?;
    let bound = 1i64 << HADAMARD_OUTPUT_BOUND_BITS;
    left.iter()
        .zip(right)
        .enumerate()
        .map(|(index, (a, u))| {
            let value = a.saturating_mul(*u);
            if value.unsigned_abs() < bound as u64 {
                Ok(value)
            } else {
                Err(AttentionError::ValueOutOfRange {
                    tensor: "P",
                    index,
                    value,
                    bound_bits: HADAMARD_OUTPUT_BOUND_BITS,
                })
            }
        })
        .collect()
}

/// A hadamard product's proof in either mode (`P` the sum-check's proof).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HadamardProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The sum-check of `(A∘U)(r)`.
    pub sumcheck: P,
}

/// A [`HadamardProof`] in mode `M`.
pub type HadamardProofOf<M> = HadamardProof<<M as crate::mode::ProductMode>::ProductProof>;

/// The claims a hadamard product leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardClaims<V = zkmha_field::Fr> {
    /// On `A` (grid).
    pub left: EvalClaim<V>,
    /// On `U` (grid).
    pub right: EvalClaim<V>,
}

/// `eq·A·U` over the MLEs `[eq, A, U]`; `eq` public.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    crate::mode::sum_of_products(STEP, product, vec![true, false, false])
}

/// The masked sum-check of a hadamard product in zero knowledge.
///
/// # Errors
/// As [`HadamardShape::validate`].
pub fn hadamard_zk_schedule(shape: &HadamardShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    shape.validate()?;
    Ok(vec![(shape.grid_vars(), 3)])
}

/// Proves the claim `output` on `P = A ⊙ U` (its point on the grid, its value the prover's
/// plain or hidden value) in mode `M`. The caller has committed to and absorbed `A` and `U`.
/// A cheating prover may pass any `witness`: only `A` and `U` are read.
///
/// # Errors
/// Bad shapes or tensors, a claim off the grid, the sum-check's errors.
pub fn prove_hadamard<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &HadamardShape,
    witness: &HadamardWitness,
    output: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Result<(HadamardProofOf<M>, HadamardClaims<M::ProverValue>), AttentionError> {
    check_inputs(shape, &witness.left, &witness.right)?;
    let grid_vars = shape.grid_vars();
    if output.point.len() != grid_vars {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    shape.append_to_transcript(transcript);
    let mles = vec![
        DenseMultilinearExtension::new(grid_vars, eq_table(&output.point))?,
        DenseMultilinearExtension::from_i64(grid_vars, &shape.pad(&witness.left))?,
        DenseMultilinearExtension::from_i64(grid_vars, &shape.pad(&witness.right))?,
    ];
    let (sumcheck, outcome) =
        prove_dense::<M>(prover, STEP, &product_shape()?, mles, &output.value, transcript)?;
    let claims = HadamardClaims {
        left: outcome.hidden(1, outcome.point.clone(), STEP)?,
        right: outcome.hidden(2, outcome.point.clone(), STEP)?,
    };
    Ok((HadamardProof { sumcheck }, claims))
}

/// Verifies a hadamard product's proof of the claim `output` on `P` in mode `M`; returns the
/// claims on `A` and `U` the caller must discharge.
///
/// # Errors
/// [`AttentionError::InvalidShape`]; [`AttentionError::CheckFailed`] (`"hadamard product"`) for
/// a claim off the grid; [`AttentionError::Sumcheck`] for a sum-check that fails — a false
/// claim, and in the plain mode mostly a tampered `eq` factor too (the final value is checked
/// first); `CheckFailed` again for an `eq` factor that is not its closed form otherwise. In
/// zero knowledge the sum-check's group equations are left in the deferred checks.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_hadamard<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &HadamardShape,
    output: &EvalClaim<M::Value>,
    proof: &HadamardProofOf<M>,
    transcript: &mut Transcript,
) -> Result<HadamardClaims<M::Value>, AttentionError> {
    shape.validate()?;
    let grid_vars = shape.grid_vars();
    if output.point.len() != grid_vars {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    shape.append_to_transcript(transcript);
    let outcome = verify_single::<M>(
        verifier,
        STEP,
        &product_shape()?,
        grid_vars,
        &output.value,
        &proof.sumcheck,
        transcript,
    )?;
    outcome.check_public(0, eq_evaluation(&output.point, &outcome.point)?, STEP)?;
    Ok(HadamardClaims {
        left: outcome.hidden(1, outcome.point.clone(), STEP)?,
        right: outcome.hidden(2, outcome.point.clone(), STEP)?,
    })
}
