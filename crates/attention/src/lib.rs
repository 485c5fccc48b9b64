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
pub mod layer;
pub mod layer_chain;
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
    layer_zk_batching_weights, prove_committed_layer, prove_committed_layer_zk, prove_layer_committed,
    prove_layer_zk, verify_committed_layer, verify_layer_committed, verify_layer_zk, zk_hyrax_params_for,
};
pub use error::AttentionError;
pub use fixed_point::{SoftmaxParams, SoftmaxWitness, compute_softmax_witness};
pub use layer::{
    AttentionLayerProof, AttentionStatement, LayerInputs, LayerProof, LayerStatement, PROOF_FORMAT_VERSION,
    ProverTimings, VerifierTimings, prove_layer, verify_layer,
};
pub use output_range::MAX_OUTPUT_BITS;
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
}

impl MaskKind {
    /// The code absorbed into transcripts and written into proofs.
    pub fn code(self) -> u8 {
        match self {
            MaskKind::Causal => 1,
            MaskKind::None => 2,
        }
    }

    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(MaskKind::Causal),
            2 => Some(MaskKind::None),
            _ => None,
        }
    }
}

use zkmha_nn::serialize_as_code;

serialize_as_code!(MaskKind);
serialize_as_code!(verifier_key::WeightCommitments);

pub use zkmha_nn::Residual;

impl core::fmt::Display for MaskKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            MaskKind::Causal => "causal",
            MaskKind::None => "none",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

    #[test]
    fn codes_round_trip_and_unknown_codes_are_rejected() {
        for kind in [MaskKind::Causal, MaskKind::None] {
            let mut bytes = Vec::new();
            assert!(kind.serialize_compressed(&mut bytes).is_ok());
            assert_eq!(MaskKind::deserialize_compressed(&bytes[..]).ok(), Some(kind));
        }
        assert!(MaskKind::deserialize_compressed(&[7u8][..]).is_err());
        assert!(SoftmaxMode::deserialize_compressed(&[0u8][..]).is_err());
        assert_eq!(SoftmaxMode::deserialize_compressed(&[1u8][..]).ok(), Some(SoftmaxMode::Identity));
    }
}
