//! The attention's steps from a claim on its output back to claims on its inputs, written
//! once for both modes: what every layer driver (the attention layer, the committed and the
//! zero-knowledge layer, the model block) runs between its commitments and its final opening.
//!
//! ```text
//! in     a claim on the output O (s × n_v) at a point r, in mode M
//!   unpadding           O(r)        → Ô(r')
//!   attention_values    Ô(r')       → A(·), V̂(·)
//!   softmax slot        linear attention:  A → masking → QK̂        (A = QK_M)
//!                       proven softmax:    A → QK̂ and claims on its committed columns
//!   qk                  QK̂         → Q̂, K̂
//!   padding             Q̂, K̂, V̂   → Q, K, V
//! out    claims on Q, K, V and (proven softmax) on the softmax's committed columns, for the
//!        caller's final opening
//! ```

use crate::attention_values::{
    AttentionMatrix, AttentionValuesProof, prove_attention_values, verify_attention_values,
};
use crate::block::BlockPolynomial;
use crate::masking::{MaskingProof, prove_masking, verify_masking};
use crate::mode::Mode;
use crate::padding::{InputClaims, PaddingProof, prove_padding, verify_padding};
use crate::qk::{QkProof, prove_qk, verify_qk};
use crate::softmax::{
    ExponentialSoftmaxProofOf, SlotOutput, SoftmaxLookupOutcome, SoftmaxProverData, SoftmaxSlotProof,
    prove_slot, verify_slot,
};
use crate::unpadding::{UnpaddingProof, prove_unpadding, verify_unpadding};
use crate::{AttentionError, AttentionShape, AttentionWitness, MaskKind, ProverTimings, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::Instant;
use zkmha_lookup::LookupClaims;
use zkmha_pcs::OpeningClaim;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

/// The steps' proofs in either mode: `P` a step's sum-check proof, `E` the proven softmax's.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ChainProof<
    P: CanonicalSerialize + CanonicalDeserialize,
    E: CanonicalSerialize + CanonicalDeserialize,
> {
    /// Unpadding.
    pub unpadding: UnpaddingProof<P>,
    /// `softmax·V`.
    pub attention_values: AttentionValuesProof<P>,
    /// The softmax slot.
    pub softmax: SoftmaxSlotProof<E>,
    /// Masking (linear attention only: the proven softmax multiplies by the zeroifier itself).
    pub masking: Option<MaskingProof<P>>,
    /// Batched `QKᵀ`.
    pub qk: QkProof<P>,
    /// Padding of `Q`, `K`, `V`.
    pub padding: PaddingProof<P>,
}

/// A [`ChainProof`] in mode `M`.
pub type ChainProofOf<M> =
    ChainProof<<M as crate::mode::ProductMode>::ProductProof, ExponentialSoftmaxProofOf<M>>;

/// What the steps leave to the caller's final opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainClaims<V> {
    /// On `Q`, `K`, `V`.
    pub inputs: InputClaims<V>,
    /// On the proven softmax's committed columns (`crate::softmax::softmax_commitment_list`
    /// order; empty for linear attention).
    pub softmax: Vec<OpeningClaim<V>>,
}

impl<V> ChainClaims<V> {
    /// The claims keyed by their polynomials: `Q`, `K`, `V` as [`BlockPolynomial::AttentionInput`]
    /// 0, 1, 2, the softmax's columns as [`BlockPolynomial::Softmax`].
    pub fn keyed(self) -> Vec<(BlockPolynomial, EvalClaim<V>)> {
        let inputs = self.inputs;
        let mut out = vec![
            (BlockPolynomial::AttentionInput(0), inputs.queries),
            (BlockPolynomial::AttentionInput(1), inputs.keys),
            (BlockPolynomial::AttentionInput(2), inputs.values),
        ];
        out.extend(
            self.softmax.into_iter().map(|c| {
                (BlockPolynomial::Softmax(c.polynomial), EvalClaim { point: c.point, value: c.value })
            }),
        );
        out
    }
}

/// Keyed claims as the claims of one opening of the polynomials `order` (a claim's polynomial
/// its key's position there), the same list on both sides.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` for a claim on a polynomial not in `order`,
/// or a polynomial of `order` no claim is about (committed and constrained by nothing).
pub(crate) fn opening_claims<K: PartialEq, V>(
    order: &[K],
    claims: Vec<(K, EvalClaim<V>)>,
    step: &'static str,
) -> Result<Vec<OpeningClaim<V>>, AttentionError> {
    let claims: Vec<OpeningClaim<V>> = claims
        .into_iter()
        .map(|(key, claim)| {
            let polynomial =
                order.iter().position(|k| *k == key).ok_or(AttentionError::CheckFailed { step })?;
            Ok(OpeningClaim { polynomial, point: claim.point, value: claim.value })
        })
        .collect::<Result<_, AttentionError>>()?;
    // A committed polynomial no claim is about would be constrained by nothing.
    let mut opened = vec![false; order.len()];
    for claim in &claims {
        if let Some(slot) = opened.get_mut(claim.polynomial) {
            *slot = true;
        }
    }
    if opened.contains(&false) {
        return Err(AttentionError::CheckFailed { step });
    }
    Ok(claims)
}

/// The `(variables, degree)` of the steps' masked sum-checks in zero knowledge, in proof order
/// (the softmax's lookups are the layer's batch's).
///
/// # Errors
/// [`AttentionError::Lookup`] for softmax parameters out of range.
pub fn chain_zk_schedule(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
) -> Result<Vec<(usize, usize)>, AttentionError> {
    let mut schedule =
        vec![crate::unpadding::zk_sumcheck_shape(shape), crate::attention_values::zk_sumcheck_shape(shape)];
    match softmax {
        SoftmaxMode::Identity => schedule.push(crate::masking::zk_sumcheck_shape(shape)),
        SoftmaxMode::Exponential(params) => {
            schedule.extend(crate::softmax::softmax_zk_schedule(shape, &params)?);
        }
    }
    schedule.push(crate::qk::zk_sumcheck_shape(shape));
    schedule.push(crate::padding::zk_sumcheck_shape(shape));
    Ok(schedule)
}

/// Runs the steps in mode `M` from `output` (a claim on `O`) back to the inputs. The proven
/// softmax reads `softmax_data`, whose commitments the caller has absorbed, with its lookups'
/// outcome (the layer's batch, `crate::softmax::softmax_lookups`); the witness's scores are
/// taken (the masking consumes them).
///
/// # Errors
/// A softmax mode without its data, and the steps' errors.
#[allow(clippy::too_many_arguments)]
pub fn prove_chain_steps<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax_mode: SoftmaxMode,
    witness: &mut AttentionWitness,
    softmax: Option<(&mut SoftmaxProverData, SoftmaxLookupOutcome<M::ProverValue>)>,
    output: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
    timings: &mut ProverTimings,
) -> Result<(ChainProofOf<M>, ChainClaims<M::ProverValue>), AttentionError> {
    let start = Instant::now();
    let (mut softmax_data, softmax_lookups) = match softmax {
        Some((data, lookups)) => (Some(data), Some(lookups)),
        None => (None, None),
    };
    let (unpadding, output_hat) =
        prove_unpadding::<M>(prover, shape, &witness.output_hat, output, transcript)?;
    timings.unpadding = start.elapsed();
    let start = Instant::now();
    let matrix = match &softmax_data {
        Some(data) => AttentionMatrix::Explicit(&data.witness.attention),
        None => AttentionMatrix::Masked { scores: &witness.scores, mask },
    };
    let (attention_values, av) =
        prove_attention_values::<M>(prover, shape, matrix, &witness.values_hat, &output_hat, transcript)?;
    if let Some(data) = &mut softmax_data {
        // The softmax proof reads A through its factors, not this copy.
        data.witness.attention = Vec::new();
    }
    timings.attention_values = start.elapsed();
    let start = Instant::now();
    let slot = prove_slot::<M>(
        prover,
        softmax_mode,
        shape,
        mask,
        &av.attention,
        softmax_data.as_deref().zip(softmax_lookups),
        transcript,
    )?;
    timings.softmax = start.elapsed();
    timings.softmax_stages = slot.timings;
    let start = Instant::now();
    let (masking, scores) = match slot.output {
        SlotOutput::MaskedScores(claim) => {
            let scores = std::mem::take(&mut witness.scores);
            let (proof, claim) = prove_masking::<M>(prover, shape, mask, scores, &claim, transcript)?;
            (Some(proof), claim)
        }
        SlotOutput::Scores(claim) => (None, claim),
    };
    timings.masking = start.elapsed();
    let start = Instant::now();
    let (qk, qk_claims) =
        prove_qk::<M>(prover, shape, &witness.queries_hat, &witness.keys_hat, &scores, transcript)?;
    timings.qk = start.elapsed();
    let start = Instant::now();
    let (padding, inputs) = prove_padding::<M>(
        prover,
        shape,
        [&witness.queries, &witness.keys, &witness.values],
        [&qk_claims.queries_hat, &qk_claims.keys_hat, &av.values_hat],
        transcript,
    )?;
    timings.padding = start.elapsed();
    let proof = ChainProof { unpadding, attention_values, softmax: slot.proof, masking, qk, padding };
    Ok((proof, ChainClaims { inputs, softmax: slot.opening_claims }))
}

/// Verifies [`prove_chain_steps`] from `output` (a claim on `O`) and the proven softmax's
/// lookup claims (the layer's batch; none for the identity); returns the claims the caller
/// must discharge by its final opening. The caller has validated and absorbed the softmax's
/// commitments.
///
/// # Errors
/// A proof of the other softmax mode ([`AttentionError::CheckFailed`], `"masking"`), and the
/// steps' errors (in zero knowledge the group equations are left in the deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
pub fn verify_chain_steps<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax_mode: SoftmaxMode,
    output: &EvalClaim<M::Value>,
    proof: &ChainProofOf<M>,
    softmax_lookups: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<ChainClaims<M::Value>, AttentionError> {
    let output_hat = verify_unpadding::<M>(verifier, shape, output, &proof.unpadding, transcript)?;
    let av = verify_attention_values::<M>(verifier, shape, &output_hat, &proof.attention_values, transcript)?;
    let exponential = proof.softmax.exponential.as_ref().map(|p| (p, softmax_lookups));
    let (slot, softmax) =
        verify_slot::<M>(verifier, softmax_mode, shape, mask, &av.attention, exponential, transcript)?;
    let scores = match (slot, &proof.masking) {
        (SlotOutput::MaskedScores(claim), Some(masking)) => {
            verify_masking::<M>(verifier, shape, mask, &claim, masking, transcript)?
        }
        (SlotOutput::Scores(claim), None) => claim,
        _ => return Err(AttentionError::CheckFailed { step: "masking" }),
    };
    let qk = verify_qk::<M>(verifier, shape, &scores, &proof.qk, transcript)?;
    let inputs = verify_padding::<M>(
        verifier,
        shape,
        [&qk.queries_hat, &qk.keys_hat, &av.values_hat],
        &proof.padding,
        transcript,
    )?;
    Ok(ChainClaims { inputs, softmax })
}
