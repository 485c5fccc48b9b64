//! Claims whose values are hidden: what the zero-knowledge mode of the sub-protocols takes and
//! returns (`docs/ZERO_KNOWLEDGE.md`).
//!
//! ```text
//! plain:           EvalClaim { point, value }                    the value in the clear
//! zero knowledge:  CommittedClaim = EvalClaim<Combination>       value·U + β·H (as a combination)
//!                  EvalClaim<CommittedValue>                    the prover's: with (value, β)
//! ```
//!
//! A zero-knowledge sub-protocol takes a committed claim on its output and returns committed
//! claims on its inputs; its structured factors are still checked in the clear by the verifier.

use zkmha_sumcheck::EvalClaim;
use zkmha_zk::Combination;

/// A claim `f(point) = v` with `v` hidden in a Pedersen commitment (the verifier's side).
pub type CommittedClaim = EvalClaim<Combination>;
