//! The shapes of an attention layer and their padded sizes.
//!
//! ```text
//! Q, K ∈ F^{s × h·m},  V ∈ F^{s × h·m_v},  O ∈ F^{s × h·m_v}
//! ŝ = 2^⌈log₂ s⌉, ĥ = 2^⌈log₂ h⌉, m̂ = 2^⌈log₂ m⌉, m̂_v = 2^⌈log₂ m_v⌉
//! d = 2^⌈log₂(h·m)⌉, d_v = 2^⌈log₂(h·m_v)⌉     (padded column counts of Q/K and of V/O)
//! ```
//!
//! # Stated limits
//!
//! A shape is checked against these limits ([`AttentionShape::validate`]) before anything is
//! allocated or derived from it — also when it is read from a proof or key file, whose sizes
//! are the prover's word:
//!
//! | limit | value | largest in use (docs/BENCHMARKS.md) |
//! |---|---|---|
//! | tokens `s` | [`MAX_SEQ_LEN`] = 8192 | 2048 (the scale target) |
//! | heads `h` | [`MAX_HEADS`] = 128 | 16 (64 in Llama-2-70B) |
//! | head widths `m`, `m_v` | [`MAX_HEAD_DIM`] = 1024 | 64 (256 in Gemma) |
//! | `h·m`, `h·m_v` | [`MAX_ATTENTION_WIDTH`] = 16384 | 1024 (8192 in Llama-2-70B) |
//! | every padded tensor (`Q`, `K`, `V`, `O`, the `ĥ × ŝ × ŝ` scores) | 2^[`MAX_TENSOR_VARS`] = 2^30 entries | 2^26 (s = 2048, h = 16) |
//!
//! So the verifier's generators number at most 2^15 and no committed table of a valid shape
//! has more than 2^15 Hyrax rows. (`d_model` is limited in `crate::model_layer`.)

use crate::AttentionError;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_mle::log2_ceil;
use zkmha_transcript::Transcript;

/// The largest supported number of variables of any tensor of the layer (2^30 entries), and of
/// any table a proof commits to.
pub const MAX_TENSOR_VARS: usize = 30;
/// The most tokens `s` of a layer.
pub const MAX_SEQ_LEN: usize = 1 << 13;
/// The most heads `h`.
pub const MAX_HEADS: usize = 128;
/// The widest head (`m` and `m_v`).
pub const MAX_HEAD_DIM: usize = 1024;
/// The widest `h·m` and `h·m_v` (the columns of `Q`, `K`, `V` and `O`).
pub const MAX_ATTENTION_WIDTH: usize = 1 << 14;

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
    /// A shape, checked: every size at least 1 and within the stated limits (the module's
    /// table; every padded tensor at most 2^[`MAX_TENSOR_VARS`] entries).
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

    /// Checks the sizes against the stated limits (also for shapes read from a proof: call it
    /// before deriving generators or allocating anything from the shape). Only arithmetic on
    /// the four numbers: no allocation.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`]: a size of 0, or one over its limit (the message says
    /// "too large" and names the limit).
    pub fn validate(&self) -> Result<(), AttentionError> {
        for (name, value, limit) in [
            ("the sequence length", self.seq_len, MAX_SEQ_LEN),
            ("the number of heads", self.heads, MAX_HEADS),
            ("the head width", self.head_dim, MAX_HEAD_DIM),
            ("the value head width", self.value_head_dim, MAX_HEAD_DIM),
        ] {
            if value == 0 {
                return Err(AttentionError::InvalidShape(format!("{name} must be at least 1")));
            }
            if value > limit {
                return Err(AttentionError::InvalidShape(format!(
                    "{name} {value} is too large (the stated limit is {limit})"
                )));
            }
        }
        for (name, value) in
            [("h·m", self.heads * self.head_dim), ("h·m_v", self.heads * self.value_head_dim)]
        {
            if value > MAX_ATTENTION_WIDTH {
                return Err(AttentionError::InvalidShape(format!(
                    "the attention width {name} = {value} is too large (the stated limit is {MAX_ATTENTION_WIDTH})"
                )));
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
                "the shape is too large: its padded tensors would need 2^{largest} entries (the stated limit is 2^{MAX_TENSOR_VARS})"
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

impl TryFrom<zkmha_nn::AttentionDims> for AttentionShape {
    type Error = AttentionError;

    /// A loader's sizes, checked against the stated limits ([`AttentionShape::new`]).
    fn try_from(dims: zkmha_nn::AttentionDims) -> Result<Self, AttentionError> {
        Self::new(dims.seq_len, dims.heads, dims.head_dim, dims.value_head_dim)
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
    fn a_loaders_sizes_become_a_checked_shape() {
        let dims = zkmha_nn::AttentionDims { seq_len: 33, heads: 12, head_dim: 64, value_head_dim: 48 };
        assert_eq!(AttentionShape::try_from(dims), AttentionShape::new(33, 12, 64, 48));
        let huge = zkmha_nn::AttentionDims { heads: usize::MAX, ..dims };
        assert!(matches!(AttentionShape::try_from(huge), Err(AttentionError::InvalidShape(_))));
    }

    #[test]
    fn impossible_shapes_are_rejected() {
        assert!(matches!(AttentionShape::new(0, 1, 1, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 0, 1, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 2, 0, 1), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(4, 2, 1, 0), Err(AttentionError::InvalidShape(_))));
        assert!(matches!(AttentionShape::new(1 << 14, 1 << 4, 64, 64), Err(AttentionError::InvalidShape(_))));
    }

    #[test]
    fn shapes_over_the_stated_limits_are_too_large() {
        let too_large = |shape: Result<AttentionShape, AttentionError>| matches!(shape, Err(AttentionError::InvalidShape(m)) if m.contains("too large"));
        // Each of the four sizes at 2^40, 2^63, u64::MAX and one over its limit.
        for huge in [1usize << 40, 1 << 63, usize::MAX] {
            assert!(too_large(AttentionShape::new(huge, 1, 1, 1)));
            assert!(too_large(AttentionShape::new(1, huge, 1, 1)));
            assert!(too_large(AttentionShape::new(1, 1, huge, 1)));
            assert!(too_large(AttentionShape::new(1, 1, 1, huge)));
        }
        assert!(too_large(AttentionShape::new(MAX_SEQ_LEN + 1, 1, 1, 1)));
        assert!(too_large(AttentionShape::new(1, MAX_HEADS + 1, 1, 1)));
        assert!(too_large(AttentionShape::new(1, 1, MAX_HEAD_DIM + 1, 1)));
        assert!(too_large(AttentionShape::new(1, 1, 1, MAX_HEAD_DIM + 1)));
        assert!(too_large(AttentionShape::new(1, 128, 1024, 1)));
        assert!(too_large(AttentionShape::new(MAX_SEQ_LEN, 32, 64, 64)));
        // The largest shapes in use are inside the limits: the scale target, Llama-2-70B's
        // attention, Gemma's head width.
        for (s, h, m) in [(2048, 16, 64), (8192, 16, 64), (4096, 64, 128), (1024, 16, 256)] {
            assert!(AttentionShape::new(s, h, m, m).is_ok(), "{s} × {h} × {m}");
        }
    }
}
