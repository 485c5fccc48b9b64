//! The verifier key of a committed model layer: what a verifier holds to check proofs of that
//! layer on any input, without the weights.
//!
//! ```text
//! key        architecture (d_model, h, h_kv, m, m_v, mask, residual kind, rotary base and
//!            fraction bits), the quantization (scales, shifts), the kind of weight
//!            commitments (binding: plain proofs; hiding: zero-knowledge proofs), the
//!            model commitment (W_q, W_k, W_v, b_q, b_k, b_v, W_o, b_o)
//! checks     a proof's statement uses exactly this commitment, these shapes and shifts, this
//!            mask and the softmax the quantization fixes for its length, and the proof's mode
//!            is the key's; then the block's verifier (crate::block) runs on it
//! secret     beside a hiding key the model owner keeps ModelSecret: the blinds of every
//!            weight commitment (one per row), needed to prove and never published
//! ```

use crate::block::{ModelBlockProof, block_hyrax_params, verify_block};
use crate::mode::Mode;
use crate::model_layer::{ModelCommitment, ModelShape, ModelStatement};
use crate::model_quantization::ModelQuantization;
use crate::rope::RotaryParams;
use crate::{AttentionError, AttentionShape, MaskKind, Residual, VerifierTimings};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::Fr;
use zkmha_pcs::{HyraxBlinds, HyraxParams};

/// How a key's weights are committed, and so which proofs it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightCommitments {
    /// Binding Hyrax commitments: plain proofs, which reveal evaluations of the weights.
    Binding,
    /// Hiding commitments (every row blinded): zero-knowledge proofs; the model owner keeps
    /// the blinds ([`ModelSecret`]).
    Hiding,
}

impl WeightCommitments {
    /// The kind mode `M` proves with.
    pub fn of<M: Mode>() -> Self {
        if M::HIDING { Self::Hiding } else { Self::Binding }
    }

    /// The one-byte code written in keys.
    pub fn code(self) -> u8 {
        match self {
            Self::Binding => 0,
            Self::Hiding => 1,
        }
    }

    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Binding),
            1 => Some(Self::Hiding),
            _ => None,
        }
    }
}

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
    /// Binding (plain proofs) or hiding (zero-knowledge proofs).
    pub weight_commitments: WeightCommitments,
    /// The commitment to the weights.
    pub commitment: ModelCommitment,
}

impl ModelVerifierKey {
    /// The block's shape for `seq_len` tokens.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn shape(&self, seq_len: usize) -> Result<ModelShape, AttentionError> {
        // Z = X + Y in integers: the output is read at 2^f_h, so X must be at it too.
        let q = &self.quantization;
        if self.residual == Residual::LayerInput && q.hidden_fraction_bits != q.input_fraction_bits {
            return Err(AttentionError::InvalidShape(format!(
                "the residual adds to X, so the output's scale 2^{} must be X's 2^{}",
                q.hidden_fraction_bits, q.input_fraction_bits
            )));
        }
        q.check_norm_scales()?;
        q.check_mlp_scales()?;
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

    /// A digest of the weight commitments (what a [`ModelSecret`] is tied to).
    pub fn commitment_digest(&self) -> [u8; 32] {
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = (self.weight_commitments, &self.commitment).serialize_compressed(&mut bytes);
        *blake3::hash(&bytes).as_bytes()
    }
}

/// What the model owner keeps beside a hiding verifier key and never publishes: the blinds of
/// every weight commitment, tied to the key by a digest of its commitments.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelSecret {
    /// [`ModelVerifierKey::commitment_digest`] of the key these blinds belong to.
    pub key_digest: Vec<u8>,
    /// One blind per row of each weight commitment, in the key's table order.
    pub blinds: Vec<Vec<Fr>>,
}

impl ModelSecret {
    /// The secret of `key`, from the blinds [`crate::block::commit_model_with`] returned.
    pub fn new(key: &ModelVerifierKey, blinds: &[HyraxBlinds]) -> Self {
        Self {
            key_digest: key.commitment_digest().to_vec(),
            blinds: blinds.iter().map(|b| b.rows.clone()).collect(),
        }
    }

    /// The blinds to prove with against `key`.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] (`"model secret"`) when the secret belongs to another
    /// key, the key's commitments are not hiding, or a table's blinds do not match its
    /// commitment's row count.
    pub fn blinds_for(&self, key: &ModelVerifierKey) -> Result<Vec<HyraxBlinds>, AttentionError> {
        let fail = Err(AttentionError::CheckFailed { step: "model secret" });
        if key.weight_commitments != WeightCommitments::Hiding
            || self.key_digest != key.commitment_digest()
            || self.blinds.len() != key.commitment.tables.len()
            || self.blinds.iter().zip(&key.commitment.tables).any(|(b, c)| b.len() != c.rows.len())
        {
            return fail;
        }
        Ok(self.blinds.iter().map(|rows| HyraxBlinds { rows: rows.clone() }).collect())
    }
}

/// Checks the statement against the key, then verifies the proof in mode `M` (which must be
/// the key's: plain proofs against binding keys, zero-knowledge proofs against hiding ones).
///
/// # Errors
/// As [`ModelVerifierKey::check_statement`] and [`verify_block`]; [`AttentionError::CheckFailed`]
/// (`"verifier key: ..."`) for a proof of the other mode.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_with_key<M: Mode>(
    key: &ModelVerifierKey,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
) -> Result<VerifierTimings, AttentionError> {
    verify_block::<M>(&checked_params::<M>(key, statement)?, statement, proof)
}

/// [`verify_with_key`] with the final group equations left weighed for the caller
/// ([`crate::block::verify_block_pending`]).
///
/// # Errors
/// As [`verify_with_key`], but for the final group equations' failure. **The caller must
/// check the returned checks** ([`Mode::check_pending`]): until then nothing is verified.
pub(crate) fn verify_with_key_pending<M: Mode>(
    key: &ModelVerifierKey,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
) -> Result<(VerifierTimings, crate::block::Pending<M>), AttentionError> {
    crate::block::verify_block_pending::<M>(&checked_params::<M>(key, statement)?, statement, proof)
}

/// The generators to verify `statement` with, after the checks that come first: a key of the
/// proof's mode (plain proofs against binding keys, zero-knowledge proofs against hiding
/// ones), the statement against the key, and every size before the generators are derived.
fn checked_params<M: Mode>(
    key: &ModelVerifierKey,
    statement: &ModelStatement,
) -> Result<HyraxParams, AttentionError> {
    if key.weight_commitments != WeightCommitments::of::<M>() {
        return Err(AttentionError::CheckFailed {
            step: "verifier key: the proof's mode does not match the key's commitments (zero-knowledge proofs need a hiding key, plain proofs a binding one)",
        });
    }
    key.check_statement(statement)?;
    statement.validate()?;
    block_hyrax_params::<M>(&statement.shape, statement.softmax)
}
