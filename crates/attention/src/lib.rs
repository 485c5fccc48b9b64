//! Sum-check sub-protocols for the multi-head attention layer, batched over all heads.
//!
//! The protocol follows the specification in the project's seeds (padding matrix `P`,
//! batched `QKᵀ` with the head selector, masking with a zeroifier `z` and a mask matrix `m`,
//! `softmax·V` with the permuted `Ṽ`, unpadding `U`); every structured matrix is evaluated by
//! the verifier in closed form ([`structured`]).

#![allow(clippy::indexing_slicing)] // prover code; the verifier modules deny it locally

pub mod attention_values;
mod common;
mod error;
pub mod layer;
pub mod masking;
pub mod padding;
pub mod qk;
mod shape;
pub mod softmax;
pub mod structured;
pub mod unpadding;
mod witness;

pub use error::AttentionError;
pub use layer::{
    AttentionLayerProof, AttentionStatement, PROOF_FORMAT_VERSION, ProverTimings, VerifierTimings,
    prove_layer, verify_layer,
};
pub use shape::{AttentionShape, MAX_TENSOR_VARS};
pub use softmax::SoftmaxMode;
pub use witness::{AttentionInputs, AttentionWitness, INPUT_BOUND_BITS, compute_witness, keeps};

use ark_serialize::{
    CanonicalDeserialize, CanonicalSerialize, Compress, Read, SerializationError, Valid, Validate, Write,
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

impl CanonicalSerialize for MaskKind {
    fn serialize_with_mode<W: Write>(&self, writer: W, compress: Compress) -> Result<(), SerializationError> {
        self.code().serialize_with_mode(writer, compress)
    }
    fn serialized_size(&self, compress: Compress) -> usize {
        self.code().serialized_size(compress)
    }
}

impl Valid for MaskKind {
    fn check(&self) -> Result<(), SerializationError> {
        Ok(())
    }
}

impl CanonicalDeserialize for MaskKind {
    fn deserialize_with_mode<R: Read>(
        reader: R,
        compress: Compress,
        validate: Validate,
    ) -> Result<Self, SerializationError> {
        let code = u8::deserialize_with_mode(reader, compress, validate)?;
        MaskKind::from_code(code).ok_or(SerializationError::InvalidData)
    }
}

impl core::fmt::Display for MaskKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            MaskKind::Causal => "causal",
            MaskKind::None => "none",
        })
    }
}
