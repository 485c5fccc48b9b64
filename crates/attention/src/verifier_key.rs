//! The verifier key of a committed model layer: what a verifier holds to check proofs of that
//! layer on any input, without the weights.
//!
//! ```text
//! key        architecture (d_model, h, h_kv, m, m_v, mask, residual kind, rotary base and
//!            fraction bits), the quantization (scales, shifts), the
//!            model commitment (W_q, W_k, W_v, b_q, b_k, b_v, W_o, b_o)
//! checks     a proof's statement uses exactly this commitment, these shapes and shifts, this
//!            mask and the softmax the quantization fixes for its length; then the block's
//!            verifier (crate::model_layer) runs on it
//! ```

use crate::model_layer::{
    ModelCommitment, ModelLayerProof, ModelShape, ModelStatement, model_hyrax_params, verify_model_layer,
};
use crate::model_quantization::ModelQuantization;
use crate::rope::RotaryParams;
use crate::{AttentionError, AttentionShape, MaskKind, Residual, VerifierTimings};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

/// Everything public about one committed model layer.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelVerifierKey {
    /// A description for people (model file, family, layer); not checked.
    pub description: String,
    /// `d_model`.
    pub model_width: usize,
    /// Query heads `h`.
    pub heads: usize,
    /// Head width `m` (queries and keys).
    pub head_dim: usize,
    /// Head width `m_v` (values).
    pub value_head_dim: usize,
    /// The mask every proof uses.
    pub mask: MaskKind,
    /// What the residual adds to (`X`, or a pre-norm decoder's hidden state).
    pub residual: Residual,
    /// Key/value heads (`heads` without grouped-query attention).
    pub key_value_heads: usize,
    /// Rotary embeddings of `Q` and `K`, if the model has them.
    pub rotary: Option<RotaryParams>,
    /// Scales and shifts.
    pub quantization: ModelQuantization,
    /// The commitment to the weights.
    pub commitment: ModelCommitment,
}

impl ModelVerifierKey {
    /// The block's shape for `seq_len` tokens.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn shape(&self, seq_len: usize) -> Result<ModelShape, AttentionError> {
        let attention = AttentionShape::new(seq_len, self.heads, self.head_dim, self.value_head_dim)?;
        let shape = self.quantization.model_shape(
            attention,
            self.model_width,
            self.residual,
            self.key_value_heads,
            self.rotary,
        );
        shape.validate()?;
        Ok(shape)
    }

    /// Checks that `statement` is a statement about this key's layer.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] naming what differs.
    pub fn check_statement(&self, statement: &ModelStatement) -> Result<(), AttentionError> {
        let fail = |step| Err(AttentionError::CheckFailed { step });
        if statement.model != self.commitment {
            return fail("verifier key: the proof is about another model commitment");
        }
        let expected = self.shape(statement.shape.attention.seq_len)?;
        if statement.shape != expected {
            return fail("verifier key: the proof's shapes or shifts differ from the key's");
        }
        if statement.mask != self.mask {
            return fail("verifier key: the proof uses another mask");
        }
        if statement.softmax != self.quantization.softmax(&expected.attention)? {
            return fail("verifier key: the proof uses another softmax");
        }
        Ok(())
    }
}

/// Checks the statement against the key, then verifies the proof.
///
/// # Errors
/// As [`ModelVerifierKey::check_statement`] and [`verify_model_layer`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_with_key(
    key: &ModelVerifierKey,
    statement: &ModelStatement,
    proof: &ModelLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    key.check_statement(statement)?;
    // Every size checked before the generators are derived.
    statement.validate()?;
    let params = model_hyrax_params(&statement.shape, statement.softmax);
    verify_model_layer(&params, statement, proof)
}
