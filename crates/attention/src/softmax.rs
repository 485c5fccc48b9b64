//! The softmax slot: where a claim on the attention probabilities `A` becomes a claim on the
//! masked scores `QK_M`.
//!
//! ```text
//! identity (linear attention):  A = QK_M,  so  Ã(p) = y  ⇒  QK̃_M(p) = y   (no proof)
//! ```
//!
//! A proven softmax (lookup arguments) will be another [`SoftmaxMode`]; the layer proof
//! calls the slot through [`prove_slot`] / [`verify_slot`] only, so it plugs in here.

use crate::AttentionError;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const LABEL_MODE: &[u8] = b"attention/softmax/mode";

/// What sits between the masked scores and `softmax·V`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SoftmaxMode {
    /// `A = QK_M`: the layer proves linear attention; softmax is **not** proven.
    Identity,
}

impl SoftmaxMode {
    /// The code written into proofs and transcripts.
    pub fn code(self) -> u8 {
        match self {
            SoftmaxMode::Identity => 1,
        }
    }

    /// The mode with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(SoftmaxMode::Identity),
            _ => None,
        }
    }
}

crate::serialize_as_code!(SoftmaxMode);

/// The slot's proof (empty for the identity).
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SoftmaxSlotProof {
    /// The slot's messages (none for the identity).
    pub messages: Vec<zkmha_field::Fr>,
}

/// Proves the slot: turns the claim on `A` into a claim on `QK_M`.
///
/// # Errors
/// None for the identity.
pub fn prove_slot(
    mode: SoftmaxMode,
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(SoftmaxSlotProof, EvalClaim), AttentionError> {
    transcript.append_u64(LABEL_MODE, u64::from(mode.code()));
    match mode {
        SoftmaxMode::Identity => Ok((SoftmaxSlotProof::default(), claim.clone())),
    }
}

/// Verifies the slot; returns the claim on `QK_M`.
///
/// # Errors
/// None for the identity.
pub fn verify_slot(
    mode: SoftmaxMode,
    claim: &EvalClaim,
    proof: &SoftmaxSlotProof,
    transcript: &mut Transcript,
) -> Result<EvalClaim, AttentionError> {
    transcript.append_u64(LABEL_MODE, u64::from(mode.code()));
    match mode {
        SoftmaxMode::Identity if proof.messages.is_empty() => Ok(claim.clone()),
        SoftmaxMode::Identity => Err(AttentionError::CheckFailed { step: "softmax slot" }),
    }
}
