//! The gated MLP's entrywise product, rescaled: `P = round(A ⊙ U / 2^k)` (Llama's SwiGLU,
//! `down(SiLU(gate·x) ⊙ up·x)`: `A` the activated gate, `U` the up projection). Like
//! [`crate::rope`] without the pair swap, it needs no claim on its output: it ties `A`, `U`
//! and `P` together and hands claims on all three (and on the range multiplicities) to the
//! caller's openings. One implementation for both modes ([`crate::mode`]): the lookups through
//! `zkmha_lookup::prove_lookups`, `y` through `M::send`, the output range through
//! `M::prove_zero`, the sum-check through `M::prove_products` (`eq` public, `A`, `U` hidden).
//!
//! ```text
//! tensors    A, U, P: ŝ × n̂ (index i·n̂ + c, MLE points [column ‖ row]), zero-padded
//! relation   D = A∘U + 2^(k−1) − 2^k·P ∈ [0, 2^k)  ⇔  P = ⌊(A∘U + 2^(k−1)) / 2^k⌋ entrywise
//!            (round half up); where A = U = 0 (the padding, when the caller's tables are zero
//!            there) D ∈ [0, 2^k) forces P = 0
//! absorb     the shape (s, n, k, b); the caller absorbs its commitments to A, U, P and the
//!            multiplicities before
//! lookup     D ∈ [0, 2^k) (logUp, D never committed)  → D(r) = v, m(r_t) = μ
//!            P + 2^(b−1) ∈ [0, 2^b) in the same batch (crate::output_range): its column claim
//!            sits at r too; relation: it is y + 2^(b−1)  → m_P(r_P) = μ_P
//! P → V      y = P(r)
//! sum-check  Σ_g eq(r, g)·A(g)·U(g) = v − 2^(k−1) + 2^k·y   (log ŝn̂ vars, degree 3)
//!            → ρ; V checks eq(r, ρ) in closed form; a = A(ρ), u = U(ρ) (hidden factors)
//! claims out A(ρ) = a, U(ρ) = u, P(r) = y, m(r_t) = μ, m_P(r_P) = μ_P
//! ```
//!
//! The relation holds mod p; it is the integer relation above only when every term is an
//! integer far below p/2. `D` and `P` are range-checked here; `A` and `U` must be pinned to
//! integers with `|A|, |U| < 2^31` by the caller (the MLP's activation table pins `A`, the up
//! projection's output range pins `U`): then `|A∘U| < 2^62` and no term wraps. Soundness: the
//! lookups hold every `D` and `P` in range with probability ≥ 1 − O((ŝn̂ + 2^16)/|F|); the
//! sum-check errs with ≤ 3·log(ŝn̂)/|F|.

use crate::AttentionError;
use crate::common::{check_tensor_sizes, sumcheck_error};
use crate::mode::{Mode, PlainProductProof, prove_dense, verify_single};
use crate::output_range::{RescaledLookups, SignedRange, rescaled_product};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, One};
use zkmha_lookup::{Lookup, LookupWitness};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{EvalClaim, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::ZkProductShape;

const STEP: &str = "hadamard product";
const STEP_OUTPUT_RANGE: &str = "hadamard product output range";
const LABEL_SHAPE: &[u8] = b"attention/hadamard/shape";
const LABEL_OUTPUT: &[u8] = b"attention/hadamard/output";

/// Largest `|A|` and `|U|` (so every `A∘U` is exact in `i64`).
pub const HADAMARD_INPUT_BOUND_BITS: u32 = 31;
/// Largest shift `k` (one range lookup of at most `2^16` rows).
pub const MAX_HADAMARD_SHIFT_BITS: u32 = 16;
/// Largest `s·n`.
pub const MAX_HADAMARD_ENTRIES: usize = 1 << 26;

/// The public shape of `P = round(A ⊙ U / 2^k)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct HadamardShape {
    /// Rows `s` (tokens).
    pub rows: usize,
    /// Columns `n` (the MLP's hidden width).
    pub width: usize,
    /// The shift `k` (`1..=16`).
    pub shift_bits: u32,
    /// `b`: `P + 2^(b−1) ∈ [0, 2^b)` (`1..=16`).
    pub output_bits: u32,
}

impl HadamardShape {
    /// Checks the shape against the stated limits.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the first limit it breaks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        let bad = |what: String| Err(AttentionError::InvalidShape(what));
        if self.rows == 0 || self.width == 0 || self.rows.saturating_mul(self.width) > MAX_HADAMARD_ENTRIES {
            return bad(format!(
                "a hadamard product takes 1 to 2^26 entries, not {} × {}",
                self.rows, self.width
            ));
        }
        if !(1..=MAX_HADAMARD_SHIFT_BITS).contains(&self.shift_bits) {
            return bad(format!(
                "a hadamard product's shift takes 1 to {MAX_HADAMARD_SHIFT_BITS} bits, not {}",
                self.shift_bits
            ));
        }
        SignedRange::new(self.output_bits).map(|_| ())
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
        transcript.append_shape(
            LABEL_SHAPE,
            &[self.rows, self.width, self.shift_bits as usize, self.output_bits as usize],
        );
    }

    /// `values` (`s × n`) zero-padded to the grid.
    fn pad(&self, values: &[i64]) -> Vec<i64> {
        crate::projection::pad(values, self.rows, self.width, self.row_vars(), self.column_vars())
    }

    /// The lookups: `D ∈ [0, 2^k)` and the output range, both over the grid.
    fn lookups(&self) -> Result<RescaledLookups, AttentionError> {
        RescaledLookups::new(self.shift_bits, self.output_bits, self.grid_vars())
    }
}

/// `A`, `U` and `P` (`s × n`, row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardWitness {
    /// `A` (the activated gate).
    pub left: Vec<i64>,
    /// `U` (the up projection).
    pub right: Vec<i64>,
    /// `P`.
    pub output: Vec<i64>,
}

fn check_inputs(shape: &HadamardShape, left: &[i64], right: &[i64]) -> Result<(), AttentionError> {
    shape.validate()?;
    check_tensor_sizes(&[
        ("A", left.len(), shape.rows, shape.width),
        ("U", right.len(), shape.rows, shape.width),
    ])?;
    let bound = 1i64 << HADAMARD_INPUT_BOUND_BITS;
    for (tensor, values) in [("A", left), ("U", right)] {
        if let Some((index, &value)) =
            values.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= bound as u64)
        {
            return Err(AttentionError::ValueOutOfRange {
                tensor,
                index,
                value,
                bound_bits: HADAMARD_INPUT_BOUND_BITS,
            });
        }
    }
    Ok(())
}

/// The reference `P = ⌊(A∘U + 2^(k−1)) / 2^k⌋` (`s × n`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`] for `|A|` or `|U| ≥ 2^31`, or for an output outside the
/// output range.
pub fn compute_hadamard(
    shape: &HadamardShape,
    left: &[i64],
    right: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    check_inputs(shape, left, right)?;
    let k = shape.shift_bits;
    let half = 1i64 << (shape.output_bits - 1);
    left.iter()
        .zip(right)
        .enumerate()
        .map(|(index, (a, u))| {
            let value = (a * u + (1i64 << (k - 1))) >> k;
            if (-half..half).contains(&value) {
                Ok(value)
            } else {
                Err(AttentionError::ValueOutOfRange {
                    tensor: "P",
                    index,
                    value,
                    bound_bits: half.trailing_zeros(),
                })
            }
        })
        .collect()
}

/// `D = A∘U + 2^(k−1) − 2^k·P` over the padded grid (a cheating prover's may leave the range).
fn remainders(shape: &HadamardShape, witness: &HadamardWitness) -> Result<Vec<i64>, AttentionError> {
    check_inputs(shape, &witness.left, &witness.right)?;
    check_tensor_sizes(&[("P", witness.output.len(), shape.rows, shape.width)])?;
    let k = shape.shift_bits;
    let (a, u, p) = (shape.pad(&witness.left), shape.pad(&witness.right), shape.pad(&witness.output));
    Ok(a.iter()
        .zip(&u)
        .zip(&p)
        .map(|((a, u), p)| (a * u + (1i64 << (k - 1))).saturating_sub(p.saturating_mul(1 << k)))
        .collect())
}

/// What a hadamard product commits to for its range checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardRanges {
    /// Multiplicities of `D` in `[0, 2^k)`.
    pub remainder_multiplicities: Vec<i64>,
    /// Multiplicities of `P + 2^(b−1)` in `[0, 2^b)`.
    pub output_multiplicities: Vec<i64>,
}

/// The range multiplicities of `D` and of `P` for `witness`.
///
/// # Errors
/// As [`compute_hadamard`]; [`AttentionError::Lookup`] when a remainder is out of range (the
/// output is not the rounded product), [`AttentionError::ValueOutOfRange`] for an output outside
/// the output range.
pub fn hadamard_ranges(
    shape: &HadamardShape,
    witness: &HadamardWitness,
) -> Result<HadamardRanges, AttentionError> {
    let lookups = shape.lookups()?;
    let remainders = remainders(shape, witness)?;
    let remainder_multiplicities = zkmha_lookup::multiplicities(lookups.tables()[0], &[&remainders])?;
    let output_multiplicities =
        SignedRange::new(shape.output_bits)?.multiplicities("P", &shape.pad(&witness.output))?;
    Ok(HadamardRanges { remainder_multiplicities, output_multiplicities })
}

/// A hadamard product's proof in either mode: `L` the lookups' proof, `P` the sum-check's, `S`
/// a sent value (`Fr` or a commitment), `Z` a relations proof (nothing in the plain mode).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HadamardProof<
    L: CanonicalSerialize + CanonicalDeserialize = zkmha_lookup::LookupProofOf<crate::mode::Plain>,
    P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof,
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// The range lookup on `D` and the output range's.
    pub lookup: L,
    /// `y = P(r)`.
    pub output_value: S,
    /// The output range's column claim is `y + 2^(b−1)`.
    pub output_range: Z,
    /// The sum-check of `(A∘U)(r)`.
    pub sumcheck: P,
}

/// A [`HadamardProof`] in mode `M`.
pub type HadamardProofOf<M> = HadamardProof<
    zkmha_lookup::LookupProofOf<M>,
    <M as crate::mode::ProductMode>::ProductProof,
    <M as crate::mode::ProductMode>::Sent,
    <M as crate::mode::ProductMode>::ZeroProof,
>;

/// The claims a hadamard product leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HadamardClaims<V = Fr> {
    /// On `A` (grid).
    pub left: EvalClaim<V>,
    /// On `U` (grid).
    pub right: EvalClaim<V>,
    /// On `P` (grid).
    pub output: EvalClaim<V>,
    /// On the remainder's multiplicities (`2^k`).
    pub multiplicities: EvalClaim<V>,
    /// On the output range's multiplicities (`2^b`).
    pub output_multiplicities: EvalClaim<V>,
}

/// `eq·A·U` over the MLEs `[eq, A, U]`; `eq` public.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    crate::mode::sum_of_products(STEP, product, vec![true, false, false])
}

/// The masked sum-checks of a hadamard product in zero knowledge, in proof order: its
/// lookups' fraction depths, then its sum-check.
///
/// # Errors
/// As [`HadamardShape::validate`].
pub fn hadamard_zk_schedule(shape: &HadamardShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    shape.validate()?;
    Ok(shape.lookups()?.zk_schedule())
}

/// Proves the hadamard product of `witness` with its range data ([`hadamard_ranges`]; a
/// cheating prover may pass others) in mode `M`. The caller has committed to and absorbed `A`,
/// `U`, `P` and the multiplicities.
///
/// # Errors
/// Bad shapes or tensors, multiplicities of the wrong size, the lookups', sum-check's and
/// relations' errors.
pub fn prove_hadamard<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &HadamardShape,
    witness: &HadamardWitness,
    ranges: &HadamardRanges,
    transcript: &mut Transcript,
) -> Result<(HadamardProofOf<M>, HadamardClaims<M::ProverValue>), AttentionError> {
    let remainders = remainders(shape, witness)?;
    let inputs = HadamardInputs {
        left: shape.pad(&witness.left),
        right: shape.pad(&witness.right),
        output: shape.pad(&witness.output),
        remainders,
        output_field: None,
    };
    prove_hadamard_with::<M>(prover, shape, &inputs, ranges, transcript)
}

/// What [`prove_hadamard_with`] proves: padded tables over the grid (a cheating prover's, in
/// tests, with a field output evaluated in place of the integers the output range looks up).
pub(crate) struct HadamardInputs {
    left: Vec<i64>,
    right: Vec<i64>,
    output: Vec<i64>,
    remainders: Vec<i64>,
    output_field: Option<Vec<Fr>>,
}

/// [`prove_hadamard`] on padded tables.
fn prove_hadamard_with<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &HadamardShape,
    inputs: &HadamardInputs,
    ranges: &HadamardRanges,
    transcript: &mut Transcript,
) -> Result<(HadamardProofOf<M>, HadamardClaims<M::ProverValue>), AttentionError> {
    shape.append_to_transcript(transcript);
    let grid_vars = shape.grid_vars();
    let shifted = SignedRange::new(shape.output_bits)?.entries(&inputs.output);
    let rescaled = shape.lookups()?;
    let [table, output_table] = rescaled.tables();
    let remainders = &inputs.remainders;
    let entry = |row: usize, _: usize| remainders[row];
    let evaluate = |point: &[Fr]| -> Result<Vec<Fr>, zkmha_lookup::LookupError> {
        Ok(vec![DenseMultilinearExtension::from_i64(point.len(), remainders)?.evaluate(point)?])
    };
    let output_entry = |row: usize, _: usize| shifted[row];
    let evaluate_output = |point: &[Fr]| -> Result<Vec<Fr>, zkmha_lookup::LookupError> {
        Ok(vec![DenseMultilinearExtension::from_i64(point.len(), &shifted)?.evaluate(point)?])
    };
    let remainder_witness = LookupWitness { num_vars: grid_vars, entry: &entry, evaluate: &evaluate };
    let output_witness =
        LookupWitness { num_vars: grid_vars, entry: &output_entry, evaluate: &evaluate_output };
    let lookups = [
        Lookup { table, witness: &remainder_witness, multiplicities: &ranges.remainder_multiplicities },
        Lookup {
            table: output_table,
            witness: &output_witness,
            multiplicities: &ranges.output_multiplicities,
        },
    ];
    let (lookup, claims) = zkmha_lookup::prove_lookups::<M>(prover, &lookups, transcript)?;
    let r =
        claims.first().map(|c| c.witness_point.clone()).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let output_value = match &inputs.output_field {
        None => DenseMultilinearExtension::from_i64(grid_vars, &inputs.output)?.evaluate(&r)?,
        Some(table) => DenseMultilinearExtension::new(grid_vars, table.clone())?.evaluate(&r)?,
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
    let mles = vec![
        DenseMultilinearExtension::new(grid_vars, eq_table(&r))?,
        DenseMultilinearExtension::from_i64(grid_vars, &inputs.left)?,
        DenseMultilinearExtension::from_i64(grid_vars, &inputs.right)?,
    ];
    let sum = rescaled_product(shape.shift_bits, &remainder.value, &output, &one);
    let (sumcheck, outcome) = prove_dense::<M>(prover, STEP, &product_shape()?, mles, &sum, transcript)?;
    let [multiplicities, output_multiplicities] = multiplicities;
    let claims = HadamardClaims {
        left: outcome.hidden(1, outcome.point.clone(), STEP)?,
        right: outcome.hidden(2, outcome.point.clone(), STEP)?,
        output: EvalClaim { point: r, value: output },
        multiplicities,
        output_multiplicities,
    };
    Ok((HadamardProof { lookup, output_value: output_sent, output_range, sumcheck }, claims))
}

/// Verifies a hadamard product in mode `M`; returns the claims the caller must discharge
/// (openings of `A`, `U`, `P` and the multiplicities).
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookups' errors, [`AttentionError::Sumcheck`], or
/// [`AttentionError::CheckFailed`]: `"hadamard product"` for an `eq` factor that is not its
/// closed form, `"hadamard product output range"` for an output value that is not the output
/// range's column (in zero knowledge the relations' group equations are left in the deferred
/// checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_hadamard<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &HadamardShape,
    proof: &HadamardProofOf<M>,
    transcript: &mut Transcript,
) -> Result<HadamardClaims<M::Value>, AttentionError> {
    shape.validate()?;
    shape.append_to_transcript(transcript);
    let fail = || AttentionError::CheckFailed { step: STEP };
    let grid_vars = shape.grid_vars();
    let rescaled = shape.lookups()?;
    let claims =
        zkmha_lookup::verify_lookups::<M>(verifier, &rescaled.statements(), &proof.lookup, transcript)?;
    let r = claims.first().map(|c| c.witness_point.clone()).ok_or_else(fail)?;
    let output = M::receive(verifier, LABEL_OUTPUT, std::slice::from_ref(&proof.output_value), transcript)
        .into_iter()
        .next()
        .ok_or_else(fail)?;
    let one = M::verifier_constant(verifier, Fr::one());
    let (remainder, multiplicities, target) =
        rescaled.claims(claims, &output, &one, [STEP, STEP_OUTPUT_RANGE])?;
    M::verify_zero(verifier, STEP_OUTPUT_RANGE, vec![target], &proof.output_range, transcript)?;
    let sum = rescaled_product(shape.shift_bits, &remainder.value, &output, &one);
    let outcome =
        verify_single::<M>(verifier, STEP, &product_shape()?, grid_vars, &sum, &proof.sumcheck, transcript)?;
    outcome.check_public(0, eq_evaluation(&r, &outcome.point)?, STEP)?;
    let [multiplicities, output_multiplicities] = multiplicities;
    Ok(HadamardClaims {
        left: outcome.hidden(1, outcome.point.clone(), STEP)?,
        right: outcome.hidden(2, outcome.point.clone(), STEP)?,
        output: EvalClaim { point: r, value: output },
        multiplicities,
        output_multiplicities,
    })
}

#[cfg(test)]
mod malicious_provers {
    //! Cheating provers that change one step of the honest prover: what the public API cannot
    //! express (a field output beside the integers the range check looks up).
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;
    use crate::mode::{Plain, Zk, zk_test_support::zk_round};
    use zkmha_field::{Field, fr_from_i64};

    fn shape() -> HadamardShape {
        HadamardShape { rows: 3, width: 5, shift_bits: 8, output_bits: 12 }
    }

    fn witness(shape: &HadamardShape) -> HadamardWitness {
        let n = shape.rows * shape.width;
        let left: Vec<i64> = (0..n).map(|k| (k as i64 * 7919) % 2001 - 1000).collect();
        let right: Vec<i64> = (0..n).map(|k| (k as i64 * 104_729) % 801 - 400).collect();
        let output = compute_hadamard(shape, &left, &right).unwrap();
        HadamardWitness { left, right, output }
    }

    /// `P' = P + (D − D')/2^k` at entry 4, a field element, with `D' = D + 1` in range: the
    /// sum-check's claim is unchanged, so only the output range can catch it.
    fn non_integer_output<M: Mode>(
        prover: &mut M::Prover<'_>,
        transcript: &mut Transcript,
    ) -> Result<(HadamardProofOf<M>, HadamardClaims<M::ProverValue>), AttentionError> {
        let shape = shape();
        let witness = witness(&shape);
        let ranges = hadamard_ranges(&shape, &witness).unwrap();
        let mut remainders = remainders(&shape, &witness).unwrap();
        let padded = shape.pad(&witness.output);
        let index = 4;
        assert!(remainders[index] + 1 < 1 << shape.shift_bits);
        remainders[index] += 1;
        let mut field: Vec<Fr> = padded.iter().map(|&p| fr_from_i64(p)).collect();
        field[index] -= Fr::from(1u64 << shape.shift_bits).inverse().unwrap();
        let mut ranges = ranges;
        ranges.remainder_multiplicities =
            zkmha_lookup::multiplicities(shape.lookups().unwrap().tables()[0], &[&remainders]).unwrap();
        let inputs = HadamardInputs {
            left: shape.pad(&witness.left),
            right: shape.pad(&witness.right),
            output: padded,
            remainders,
            output_field: Some(field),
        };
        prove_hadamard_with::<M>(prover, &shape, &inputs, &ranges, transcript)
    }

    #[test]
    fn a_non_integer_output_fails_the_output_range_in_the_plain_mode() {
        let mut transcript = Transcript::new(b"hadamard-test");
        let (proof, _) = non_integer_output::<Plain>(&mut (), &mut transcript).unwrap();
        let mut transcript = Transcript::new(b"hadamard-test");
        let result = verify_hadamard::<Plain>(&mut (), &shape(), &proof, &mut transcript);
        assert!(matches!(result, Err(AttentionError::CheckFailed { step: STEP_OUTPUT_RANGE })), "{result:?}");
    }

    #[test]
    fn a_non_integer_output_fails_the_output_range_in_zero_knowledge() {
        let schedule = hadamard_zk_schedule(&shape()).unwrap();
        let result = zk_round(
            schedule,
            |prover, transcript| non_integer_output::<Zk>(prover, transcript).map(|(proof, _)| proof),
            |verifier, transcript, proof| {
                verify_hadamard::<Zk>(verifier, &shape(), proof, transcript).map(|_| ())
            },
        );
        assert!(result.is_err(), "{result:?}");
    }
}
