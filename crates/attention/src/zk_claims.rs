//! Claims whose values are hidden: what the zero-knowledge variants of the sub-protocols take
//! and return (`docs/ZERO_KNOWLEDGE.md`).
//!
//! ```text
//! plain:           EvalClaim { point, value }            the value in the clear
//! zero knowledge:  CommittedClaim { point, commitment }  commitment = value·U + β·H
//!                  WitnessClaim { claim, opening }       the prover's (value, β) alongside
//! ```
//!
//! A zero-knowledge sub-protocol takes a committed claim on its output and returns committed
//! claims on its inputs; its structured factors are still checked in the clear by the verifier.

use crate::AttentionError;
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::ProductSumcheck;
use zkmha_transcript::Transcript;
use zkmha_zk::{
    FactorValue, ProverMasks, ValueOpening, ZkError, ZkProductClaims, ZkProductProof, ZkProductShape,
    prove_zk_product,
};

/// A claim `f(point) = v` with `v` hidden in a Pedersen commitment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedClaim {
    /// The point, in variable order.
    pub point: Vec<Fr>,
    /// `v·U + β·H`.
    pub commitment: G1Affine,
}

/// The prover's side of a [`CommittedClaim`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessClaim {
    /// The claim the verifier sees.
    pub claim: CommittedClaim,
    /// `(v, β)`.
    pub opening: ValueOpening,
}

impl WitnessClaim {
    /// A claim whose value is public (blinding 0: anyone computes `v·U`), e.g. on the public
    /// output.
    pub fn public(params: &HyraxParams, point: Vec<Fr>, value: Fr) -> Self {
        let opening = ValueOpening::public(value);
        Self { claim: CommittedClaim { point, commitment: opening.commit(params).into() }, opening }
    }

    /// The value (prover only).
    pub fn value(&self) -> Fr {
        self.opening.value
    }
}

/// Maps a zero-knowledge error of sub-protocol `step`.
pub(crate) fn zk_error(step: &'static str) -> impl Fn(ZkError) -> AttentionError {
    move |source| AttentionError::ZeroKnowledge { step, source }
}

/// A public factor's value, checked against its closed form.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` when it is not public or differs.
pub(crate) fn check_public(
    value: Option<&FactorValue>,
    expected: Fr,
    step: &'static str,
) -> Result<(), AttentionError> {
    match value {
        Some(FactorValue::Public(v)) if *v == expected => Ok(()),
        _ => Err(AttentionError::CheckFailed { step }),
    }
}

/// A hidden factor's commitment at `point`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` when the factor is not hidden.
pub(crate) fn hidden(
    value: Option<&FactorValue>,
    point: Vec<Fr>,
    step: &'static str,
) -> Result<CommittedClaim, AttentionError> {
    match value {
        Some(FactorValue::Hidden(commitment)) => Ok(CommittedClaim { point, commitment: *commitment }),
        _ => Err(AttentionError::CheckFailed { step }),
    }
}

/// The prover's hidden factor `k`: its commitment and opening at `point`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` when the factor is not hidden.
pub(crate) fn witness(
    values: &[FactorValue],
    openings: &[Option<ValueOpening>],
    k: usize,
    point: Vec<Fr>,
    step: &'static str,
) -> Result<WitnessClaim, AttentionError> {
    match (values.get(k), openings.get(k)) {
        (Some(FactorValue::Hidden(commitment)), Some(Some(opening))) => {
            Ok(WitnessClaim { claim: CommittedClaim { point, commitment: *commitment }, opening: *opening })
        }
        _ => Err(AttentionError::CheckFailed { step }),
    }
}

/// A step's zero-knowledge sum of products over dense tables, from its committed claim: the
/// proof, the factor values and the hidden factors' openings.
///
/// # Errors
/// [`AttentionError::Sumcheck`] for tables that do not fit the shape,
/// [`AttentionError::ZeroKnowledge`] from the proof.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn prove_dense_product<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    zk_shape: &ZkProductShape,
    mles: Vec<DenseMultilinearExtension>,
    claim: &WitnessClaim,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
    step: &'static str,
) -> Result<(ZkProductProof, ZkProductClaims, Vec<Option<ValueOpening>>), AttentionError> {
    let mut instance = ProductSumcheck::new(zk_shape.shape().clone(), mles)
        .map_err(|source| AttentionError::Sumcheck { step, source })?;
    prove_zk_product(
        params,
        zk_shape,
        &mut instance,
        (claim.claim.commitment, &claim.opening),
        masks,
        transcript,
        rng,
    )
    .map_err(zk_error(step))
}
