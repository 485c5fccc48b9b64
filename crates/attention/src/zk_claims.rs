//! Claims whose values are hidden: what the zero-knowledge mode of the sub-protocols takes and
//! returns (`docs/ZERO_KNOWLEDGE.md`).
//!
//! ```text
//! plain:           EvalClaim { point, value }                    the value in the clear
//! zero knowledge:  CommittedClaim = EvalClaim<G1Affine>          value·U + β·H
//!                  WitnessClaim = EvalClaim<HiddenValue>         the commitment with (value, β)
//! ```
//!
//! A zero-knowledge sub-protocol takes a committed claim on its output and returns committed
//! claims on its inputs; its structured factors are still checked in the clear by the verifier.

use crate::AttentionError;
use crate::mode::HiddenValue;
use zkmha_pcs::G1Affine;
use zkmha_sumcheck::EvalClaim;
use zkmha_zk::ZkError;

/// A claim `f(point) = v` with `v` hidden in a Pedersen commitment (the verifier's side).
pub type CommittedClaim = EvalClaim<G1Affine>;

/// A committed claim with the prover's opening of it.
pub type WitnessClaim = EvalClaim<HiddenValue>;

/// Maps a zero-knowledge error of sub-protocol `step`.
pub(crate) fn zk_error(step: &'static str) -> impl Fn(ZkError) -> AttentionError {
    move |source| AttentionError::ZeroKnowledge { step, source }
}
