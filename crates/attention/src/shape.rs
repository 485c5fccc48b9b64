//! The shapes of an attention layer and their padded sizes.
//!
//! ```text
//! Q, K ∈ F^{s × h·m},  V ∈ F^{s × h·m_v},  O ∈ F^{s × h·m_v}
//! ŝ = 2^⌈log₂ s⌉, ĥ = 2^⌈log₂ h⌉, m̂ = 2^⌈log₂ m⌉, m̂_v = 2^⌈log₂ m_v⌉
//! d = 2^⌈log₂(h·m)⌉, d_v = 2^⌈log₂(h·m_v)⌉     (padded column counts of Q/K and of V/O)
//! ```

use crate::AttentionError;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_mle::log2_ceil;
use zkmha_transcript::Transcript;

/// The largest supported number of variables of any tensor of the layer (2^30 entries).
pub const MAX_TENSOR_VARS: usize = 30;

/// The public shape of a multi-head attention layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct AttentionShape {
    /// Tokens `s`.
    pub seq_len: usize,
    /// Heads `h`.
    pub heads: usize,
    /// Width `m` of a query/key head.
    pub head_dim: usize,
    /// Width `m_v` of a value head (may differ from `m`).
    pub value_head_dim: usize,
}

const LABEL_SHAPE: &[u8] = b"attention/shape";

impl AttentionShape {
    /// A shape, checked: every size at least 1 and every padded tensor at most
    /// 2^[`MAX_TENSOR_VARS`] entries.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the problem.
    pub fn new(
        seq_len: usize,
        heads: usize,
        head_dim: usize,
        value_head_dim: usize,
    ) -> Result<Self, AttentionError> {
        let shape = Self { seq_len, heads, head_dim, value_head_dim };
        shape.validate()?;
        Ok(shape)
    }

    /// Checks the sizes (also for shapes read from a proof).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        for (name, value) in [
            ("the sequence length", self.seq_len),
            ("the number of heads", self.heads),
            ("the head width", self.head_dim),
            ("the value head width", self.value_head_dim),
        ] {
            if value == 0 {
                return Err(AttentionError::InvalidShape(format!("{name} must be at least 1")));
            }
            if value > 1 << MAX_TENSOR_VARS {
                return Err(AttentionError::InvalidShape(format!("{name} {value} is too large")));
            }
        }
        let largest = [
            self.seq_vars() + self.head_vars() + self.seq_vars(),
            self.seq_vars() + self.head_vars() + self.head_dim_vars(),
            self.seq_vars() + self.head_vars() + self.value_head_dim_vars(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        if largest > MAX_TENSOR_VARS {
            return Err(AttentionError::InvalidShape(format!(
                "the padded tensors would need 2^{largest} entries (at most 2^{MAX_TENSOR_VARS} are supported)"
            )));
        }
        Ok(())
    }

    /// `log₂ ŝ`.
    pub fn seq_vars(&self) -> usize {
        log2_ceil(self.seq_len)
    }
    /// `log₂ ĥ`.
    pub fn head_vars(&self) -> usize {
        log2_ceil(self.heads)
    }
    /// `log₂ m̂`.
    pub fn head_dim_vars(&self) -> usize {
        log2_ceil(self.head_dim)
    }
    /// `log₂ m̂_v`.
    pub fn value_head_dim_vars(&self) -> usize {
        log2_ceil(self.value_head_dim)
    }
    /// `log₂ d`, `d = 2^⌈log₂(h·m)⌉`: the padded column count of Q and K.
    pub fn model_vars(&self) -> usize {
        log2_ceil(self.heads * self.head_dim)
    }
    /// `log₂ d_v`: the padded column count of V and O.
    pub fn value_model_vars(&self) -> usize {
        log2_ceil(self.heads * self.value_head_dim)
    }
    /// `h·m`, the columns of Q and K.
    pub fn model_width(&self) -> usize {
        self.heads * self.head_dim
    }
    /// `h·m_v`, the columns of V and O.
    pub fn value_model_width(&self) -> usize {
        self.heads * self.value_head_dim
    }
    /// `ŝ`.
    pub fn padded_seq_len(&self) -> usize {
        1 << self.seq_vars()
    }
    /// `ĥ`.
    pub fn padded_heads(&self) -> usize {
        1 << self.head_vars()
    }
    /// `m̂`.
    pub fn padded_head_dim(&self) -> usize {
        1 << self.head_dim_vars()
    }
    /// `m̂_v`.
    pub fn padded_value_head_dim(&self) -> usize {
        1 << self.value_head_dim_vars()
    }

    /// Absorbs the shape.
    pub fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(LABEL_SHAPE, &[self.seq_len, self.heads, self.head_dim, self.value_head_dim]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_sizes() {
        let s = AttentionShape::new(33, 12, 64, 48).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            (s.padded_seq_len(), s.padded_heads(), s.padded_head_dim(), s.padded_value_head_dim()),
            (64, 16, 64, 64)
        );
        assert_eq!((s.model_vars(), s.value_model_vars()), (10, 10));
        let t = AttentionShape::new(1, 1, 1, 1).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(t.seq_vars() + t.head_vars() + t.model_vars(), 0);
    }

    #[test]
    fn impossible_shapes_are_rejected() {
        assert!(matches!(AttentionShape::new(0, 1, 1, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 0, 1, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 2, 0, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 2, 1, 0), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(1 << 14, 1 << 4, 64, 64), Err(AttentionError::InvalidShape(_))));
    }
}
