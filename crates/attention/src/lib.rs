//! Sum-check sub-protocols for the multi-head attention layer, batched over all heads.
//!
//! The protocol follows the specification in the project's seeds (padding matrix `P`,
//! batched `QKᵀ` with the head selector, masking with a zeroifier `z` and a mask matrix `m`,
//! `softmax·V` with the permuted `Ṽ`, unpadding `U`); every structured matrix is evaluated by
//! the verifier in closed form ([`structured`]).

#![allow(clippy::indexing_slicing)] // prover code; the verifier modules deny it locally

#[cfg(test)]
extern crate self as zkmha_attention;
pub mod activation;
pub mod attention_values;
pub mod block;
pub mod chain;
pub mod commitment_layout;
pub mod committed;
mod common;
pub mod embedding;
mod error;
pub mod fixed_point;
pub mod grouped_query;
pub mod hadamard;
pub mod head;
pub mod integer_product;
pub mod layer;
pub mod layer_chain;
pub mod lookup_batch;
pub mod masking;
pub mod mlp;
pub mod mode;
pub mod model_layer;
pub mod model_quantization;
pub mod norm;
mod output_range;
pub mod padding;
pub mod projection;
pub mod qk;
pub mod quantization;
pub mod rope;
mod shape;
pub mod softmax;
pub mod structured;
pub mod unpadding;
pub mod verifier_key;
mod witness;
pub mod zk_claims;

pub use committed::{
    CommittedLayerProof, CommittedStatement, InputCommitments, ZkLayerProof, commit_inputs,
    commit_inputs_hiding, commit_inputs_with, hyrax_params_for, layer_hyrax_params,
    layer_zk_batching_weights, prove_committed_layer, prove_layer_committed, prove_layer_committed_with,
    verify_committed_layer, verify_layer_committed, zk_hyrax_params_for,
};
pub use error::AttentionError;
pub use fixed_point::{SoftmaxParams, SoftmaxWitness, compute_softmax_witness};
pub use layer::{
    AttentionLayerProof, AttentionStatement, LayerInputs, LayerProof, LayerStatement, PROOF_FORMAT_VERSION,
    ProverTimings, VerifierTimings, prove_layer, verify_layer,
};
pub use output_range::{MAX_NORM_OUTPUT_BITS, MAX_OUTPUT_BITS};
pub use shape::{AttentionShape, MAX_ATTENTION_WIDTH, MAX_HEAD_DIM, MAX_HEADS, MAX_SEQ_LEN, MAX_TENSOR_VARS};
pub use softmax::{SoftmaxMode, SoftmaxStageTimings};
pub use witness::{
    AttentionInputs, AttentionWitness, INPUT_BOUND_BITS, compute_witness, compute_witness_for_mode, keeps,
};

/// Which scores a query may attend to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// Decoders: token `i` attends to tokens `j ≤ i` (the spec's lower-triangular mask).
    Causal,
    /// Encoders: every real token attends to every real token; only padding is masked.
    None,
    /// Decoders with a sliding window (Mistral, Qwen2's window layers, Gemma's local layers):
    /// token `i` attends to tokens `j ≤ i` with `i − j < window` — the `window` most recent
    /// tokens, itself included, as Hugging Face's `sliding_window` and llama.cpp's `n_swa` mean
    /// it. A window at least as long as the sequence keeps what the causal mask keeps.
    Sliding {
        /// The window in tokens (at least 1: a token always attends to itself).
        window: NonZeroU32,
    },
}

impl MaskKind {
    /// The code absorbed into transcripts and written into proofs (a sliding window's size
    /// follows it, [`MaskKind::window`]).
    pub fn code(self) -> u8 {
        match self {
            MaskKind::Causal => 1,
            MaskKind::None => 2,
            MaskKind::Sliding { .. } => 3,
        }
    }

    /// The window of a sliding mask, `None` for the others.
    pub fn window(self) -> Option<NonZeroU32> {
        match self {
            MaskKind::Sliding { window } => Some(window),
            MaskKind::Causal | MaskKind::None => None,
        }
    }

    /// A sliding window of `window` tokens; `None` for 0 or above `u32::MAX`.
    pub fn sliding(window: usize) -> Option<Self> {
        u32::try_from(window).ok().and_then(NonZeroU32::new).map(|window| MaskKind::Sliding { window })
    }

    /// Absorbs the mask into a statement: its code under `label`, then (sliding) its window
    /// under `attention/statement/mask-window` — injective (code 3 always carries a window),
    /// and for the causal and no-mask statements the encoding they always had.
    pub fn absorb(self, transcript: &mut zkmha_transcript::Transcript, label: &'static [u8]) {
        transcript.append_u64(label, u64::from(self.code()));
        if let Some(window) = self.window() {
            transcript.append_u64(LABEL_MASK_WINDOW, u64::from(window.get()));
        }
    }
}

/// The label a sliding window's size is absorbed under.
const LABEL_MASK_WINDOW: &[u8] = b"attention/statement/mask-window";

impl ark_serialize::CanonicalSerialize for MaskKind {
    fn serialize_with_mode<W: ark_serialize::Write>(
        &self,
        mut writer: W,
        compress: ark_serialize::Compress,
    ) -> Result<(), ark_serialize::SerializationError> {
        self.code().serialize_with_mode(&mut writer, compress)?;
        match self.window() {
            Some(window) => window.get().serialize_with_mode(writer, compress),
            None => Ok(()),
        }
    }
    fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
        self.code().serialized_size(compress) + self.window().map_or(0, |w| w.get().serialized_size(compress))
    }
}

impl ark_serialize::Valid for MaskKind {
    fn check(&self) -> Result<(), ark_serialize::SerializationError> {
        Ok(())
    }
}

impl ark_serialize::CanonicalDeserialize for MaskKind {
    fn deserialize_with_mode<R: ark_serialize::Read>(
        mut reader: R,
        compress: ark_serialize::Compress,
        validate: ark_serialize::Validate,
    ) -> Result<Self, ark_serialize::SerializationError> {
        match u8::deserialize_with_mode(&mut reader, compress, validate)? {
            1 => Ok(MaskKind::Causal),
            2 => Ok(MaskKind::None),
            3 => {
                let window = u32::deserialize_with_mode(reader, compress, validate)?;
                NonZeroU32::new(window)
                    .map(|window| MaskKind::Sliding { window })
                    .ok_or(ark_serialize::SerializationError::InvalidData)
            }
            _ => Err(ark_serialize::SerializationError::InvalidData),
        }
    }
}

use core::num::NonZeroU32;
use zkmha_nn::serialize_as_code;

serialize_as_code!(verifier_key::WeightCommitments);

pub use zkmha_nn::Residual;

impl core::fmt::Display for MaskKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MaskKind::Causal => f.write_str("causal"),
            MaskKind::None => f.write_str("none"),
            MaskKind::Sliding { window } => write!(f, "sliding:{window}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

    #[test]
    fn codes_round_trip_and_unknown_codes_are_rejected() {
        let sliding = MaskKind::sliding(5).unwrap();
        for kind in [MaskKind::Causal, MaskKind::None, sliding, MaskKind::sliding(u32::MAX as usize).unwrap()]
        {
            let mut bytes = Vec::new();
            assert!(kind.serialize_compressed(&mut bytes).is_ok());
            assert_eq!(MaskKind::deserialize_compressed(&bytes[..]).ok(), Some(kind));
        }
        assert!(MaskKind::deserialize_compressed(&[7u8][..]).is_err());
        // a window of 0 keeps nothing (not even the diagonal), a window cut short is no window
        assert!(MaskKind::deserialize_compressed(&[3u8, 0, 0, 0, 0][..]).is_err());
        assert!(MaskKind::deserialize_compressed(&[3u8, 5, 0][..]).is_err());
        assert_eq!(MaskKind::deserialize_compressed(&[3u8, 5, 0, 0, 0][..]).ok(), Some(sliding));
        assert_eq!((MaskKind::sliding(0), MaskKind::sliding(1 << 32)), (None, None));
        assert_eq!(sliding.to_string(), "sliding:5");
        assert!(SoftmaxMode::deserialize_compressed(&[0u8][..]).is_err());
        assert_eq!(SoftmaxMode::deserialize_compressed(&[1u8][..]).ok(), Some(SoftmaxMode::Identity));
    }
}
