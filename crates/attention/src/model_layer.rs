//! An attention block proven from its input `X` and the model's weights: the `Q`, `K`, `V`
//! projections in fixed point ([`crate::projection`]), the attention on their outputs
//! ([`crate::committed`]), the output projection and the residual, in one proof.
//!
//! ```text
//! model      W_q, W_k (d_model × h·m), W_v (d_model × h·m_v), b_q, b_k, b_v, W_o (h·m_v × d_model),
//!            b_o (integers) → ModelCommitment, made once and reused by every proof of the model
//! relation   Q = round((X·W_q + b_q) / 2^k), K, V likewise;  O = attention(Q, K, V);
//!            Y = round((O·W_o + b_o) / 2^k_o);  Z = R + Y, where the residual R is X
//!            (post-norm encoders) or a committed hidden state H with X = norm(H) (pre-norm
//!            decoders; the norm is not proven)
//! statement  shapes (attention, d_model, k, k_o, residual kind, h_kv, rotary), mask, softmax mode,
//!            commitments to X and H (s × d_model), the model commitment, the output Z —
//!            absorbed first
//! proof      commitments to Q, K, V, O, Y, the four projections' range multiplicities and
//!            the high remainder digits of projections with shifts above 16 bits
//!            (absorbed next); r_z ← V; P sends α = R̃(r_z) (residual: Ỹ(r_z) = Z̃(r_z) − α);
//!            the four projections (their lookups, then one batched sum-check of the four
//!            products); the attention proof on the committed Q, K, V with
//!            the committed output O (its output claim's value is sent), whose final
//!            multi-point opening answers every claim: the projections', the residual's and
//!            the attention's own
//! ```
//!
//! Grouped-query attention (`h_kv < h` key/value heads): `W_k, W_v, b_k, b_v` are committed
//! compact (`h_kv` heads); the K and V projections run on them expanded to every query head,
//! and their weight and bias claims are reduced to the compact tables
//! ([`crate::grouped_query`]). Rotary embeddings (Llama): the Q and K projections' outputs
//! `Q_pre`, `K_pre` are committed, rotated ([`crate::rope`]) into the attention's `Q`, `K`,
//! and the rotations' claims join the final opening. The weights are committed in a layout of
//! their own (from their sizes alone, so one model commitment serves every sequence length);
//! `X`, `O`, `Y` and the range data in the block's; the final opening takes one combined row
//! per layout.

use crate::block::{ModelBlockProof, prove_block, verify_block};
use crate::commitment_layout::{largest_committed_vars, table_column_vars};
use crate::common::check_tensor_sizes;
use crate::grouped_query::{SharedHeadsShape, expand_heads};
use crate::layer::{ProverTimings, VerifierTimings};
use crate::mlp::{BlockMlp, MlpProjection, MlpShape};
use crate::mode::Plain;
use crate::norm::{BlockNorm, NormShape};
use crate::projection::{ProjectionShape, pad};
use crate::rope::RotaryParams;
use crate::{AttentionError, AttentionShape, MaskKind, Residual, SoftmaxMode};
use ark_ff::{BigInteger, PrimeField};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::SeedableRng;
use rayon::prelude::*;
use zkmha_field::Fr;
use zkmha_field::SmallMultiplier;
use zkmha_mle::{eq_table, log2_ceil};
use zkmha_pcs::{HyraxCommitment, HyraxParams, split_vars};
use zkmha_transcript::Transcript;

const LABEL_SHAPE: &[u8] = b"attention/model/shape";
const LABEL_MASK: &[u8] = b"attention/model/mask";
const LABEL_SOFTMAX: &[u8] = b"attention/model/softmax";
const LABEL_COMMITMENTS: &[u8] = b"attention/model/commitments";
const LABEL_OUTPUT: &[u8] = b"attention/model/output";
const LABEL_OUTPUT_KIND: &[u8] = b"attention/model/output-kind";
const LABEL_NORM: &[u8] = b"attention/model/norm";
const LABEL_MLP: &[u8] = b"attention/model/mlp";
const LABEL_OUTPUT_NORMS: &[u8] = b"attention/model/output-norms";
const LABEL_QUERY_KEY_NORMS: &[u8] = b"attention/model/query-key-norms";
const LABEL_POST_NORM: &[u8] = b"attention/model/post-norm";

/// The widest `d_model` of a model layer (a stated limit, checked by [`ModelShape::validate`]
/// before anything is derived from a shape: 16 384; GPT-2-small has 768, Llama-2-70B 8192).
pub const MAX_MODEL_WIDTH: usize = 1 << 14;

/// The range every committed `Q`, `K`, `V` is checked in: `|Y| ≤ 2^15` (the calibration puts
/// them at 12 and 13 bits, `model_quantization`: 8–16× headroom for other inputs).
pub const PROJECTION_OUTPUT_BITS: u32 = 16;

/// Under rotary embeddings the `Q`, `K` projections' outputs (the rotation's inputs) are
/// checked in `|Y| ≤ 2^14`, so their rotations (at most √2 larger) fit the rotation's own
/// output range ([`crate::rope::ROTARY_OUTPUT_BITS`]).
pub const ROTATED_PROJECTION_OUTPUT_BITS: u32 = 15;

/// The shapes of a model layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelShape {
    /// The attention on the projections' outputs.
    pub attention: AttentionShape,
    /// `d_model`: the columns of `X`, the rows of the weights.
    pub model_width: usize,
    /// The rescaling shifts of the `Q`, `K`, `V` and output projections (`1..=32` bits).
    pub shifts: [u32; 4],
    /// What the residual adds `Y` to.
    pub residual: Residual,
    /// Key/value heads `h_kv` (`h` without grouped-query attention; else a divisor of `h`,
    /// with power-of-two head widths).
    pub key_value_heads: usize,
    /// Rotary embeddings of `Q` and `K` (Llama), or none.
    pub rotary: Option<RotaryParams>,
    /// The norm from the hidden state `H` to `X` when the block proves it (pre-norm decoders:
    /// `X = norm(H)`, its `γ` and `β` in the model commitment), or none (`X` and `H` committed
    /// side by side, the norm between them not proven).
    pub norm: Option<BlockNorm>,
    /// The layer's second half when the block proves it (pre-norm decoders with a proven norm:
    /// `X₂ = norm₂(Z)`, `H' = Z + MLP(X₂)` the output, `Z` committed; its weights in the model
    /// commitment after the norm's), or none (the output is `Z`).
    pub mlp: Option<BlockMlp>,
    /// The norms on each half's output before its residual, when the block proves them
    /// (Gemma 2 and 3: `Z = H + norm_a(Y)`, `H' = Z + norm_f(Y₂)`; their `γ`, `β` in the
    /// model commitment after the MLP's tables).
    pub output_norms: OutputNorms,
    /// The norms on every query and key head before the rotation, when the block proves them
    /// (Gemma 3's QK-norm: `Q_pre = norm_q(Q_proj)` head by head, `K_pre` likewise; their `γ`,
    /// `β` (width `m`) in the model commitment after the output norms').
    pub query_key_norms: Option<QueryKeyNorms>,
    /// The norm on the layer's output when the block proves it: BERT's post-norm layer,
    /// `Z = X + Y`, `X₂ = norm₂(Z)` (`attention.output.LayerNorm`, the MLP's norm),
    /// `H' = norm_p(X₂ + MLP(X₂))` (`output.LayerNorm`): the second residual adds to `X₂`, not
    /// `Z`. Its `γ`, `β` close the model commitment. `None` for every other family.
    pub post_norm: Option<BlockNorm>,
}

/// The QK-norm's constants: one norm on the query heads, one on the key heads, each over a
/// head's `m` entries (`s·h` rows, the grouped key heads repeated as the attention reads
/// them), output in the rotation's input range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct QueryKeyNorms {
    /// The norm on the query heads.
    pub query: BlockNorm,
    /// The norm on the key heads.
    pub key: BlockNorm,
}

impl QueryKeyNorms {
    /// The norm on `Q` (`p = 0`) or `K` (`p = 1`).
    pub fn of(&self, p: usize) -> BlockNorm {
        if p == 0 { self.query } else { self.key }
    }
}

pub use zkmha_nn::BlockHalf;

/// The norms a block applies to each half's output before adding it to the residual stream
/// (Gemma 2's and 3's `post_attention_layernorm` and `post_feedforward_layernorm`), each
/// `s × d_model` at the residual stream's scale; `None` where the half's output is added as it
/// is (every other family).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct OutputNorms {
    /// The norm on `Y`: `Z = H + norm_a(Y)`.
    pub attention: Option<BlockNorm>,
    /// The norm on `Y₂`: `H' = Z + norm_f(Y₂)`.
    pub feed_forward: Option<BlockNorm>,
}

impl OutputNorms {
    /// The norm on `half`'s output.
    pub fn of(&self, half: BlockHalf) -> Option<BlockNorm> {
        match half {
            BlockHalf::Attention => self.attention,
            BlockHalf::FeedForward => self.feed_forward,
        }
    }
}

impl ModelShape {
    /// Checks every dimension.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.attention.validate()?;
        if self.model_width == 0 || self.model_width > MAX_MODEL_WIDTH {
            return Err(AttentionError::InvalidShape(format!(
                "d_model = {} is {} (the stated limit is {MAX_MODEL_WIDTH})",
                self.model_width,
                if self.model_width == 0 { "empty" } else { "too large" }
            )));
        }
        for projection in self.projections() {
            projection.validate()?;
        }
        let a = &self.attention;
        let kv = self.key_value_heads;
        if kv == 0 || !a.heads.is_multiple_of(kv) {
            return Err(AttentionError::InvalidShape(format!(
                "{kv} key/value heads do not divide the {} query heads",
                a.heads
            )));
        }
        if let Some(vars) = self.table_vars().into_iter().find(|&n| n > crate::MAX_TENSOR_VARS) {
            return Err(AttentionError::InvalidShape(format!(
                "the shape is too large: a weight or input table would need 2^{vars} entries (the stated limit is 2^{})",
                crate::MAX_TENSOR_VARS
            )));
        }
        if self.is_grouped() && !(a.head_dim.is_power_of_two() && a.value_head_dim.is_power_of_two()) {
            return Err(AttentionError::InvalidShape(
                "grouped-query attention needs power-of-two head widths".into(),
            ));
        }
        if let Some(rotary) = self.rotary {
            rotary.shape(a.seq_len, a.heads, a.head_dim).validate()?;
        }
        if let Some(norm) = self.norm_shape() {
            // A pre-norm block's residual adds to H; a post-norm block's (BERT's layer 0, whose
            // norm is the embeddings' LayerNorm) to X.
            if self.residual != Residual::HiddenState && self.post_norm.is_none() {
                return Err(AttentionError::InvalidShape(
                    "a proven norm from H to X needs a pre-norm block (its residual adds to H) or the post-norm block"
                        .into(),
                ));
            }
            if self.model_width < 2 {
                return Err(AttentionError::InvalidShape("a proven norm needs d_model ≥ 2".into()));
            }
            norm.validate()?;
        }
        if let Some(mlp) = self.mlp {
            if self.norm.is_none() && self.post_norm.is_none() {
                return Err(AttentionError::InvalidShape(
                    "a proven MLP needs the pre-norm block with its proven norm from H to X, or the post-norm block".into(),
                ));
            }
            mlp.norm.shape(self.attention.seq_len, self.model_width).validate()?;
            self.mlp_shape().map_or(Ok(()), |m| m.validate())?;
        }
        if self.output_norms.attention.is_some() && self.norm.is_none() {
            return Err(AttentionError::InvalidShape(
                "a proven norm on the attention's output needs the pre-norm block with its proven norm from H to X"
                    .into(),
            ));
        }
        if self.output_norms.feed_forward.is_some() && self.mlp.is_none() {
            return Err(AttentionError::InvalidShape(
                "a proven norm on the MLP's output needs the proven MLP".into(),
            ));
        }
        for half in BlockHalf::BOTH {
            if let Some(norm) = self.output_norm_shape(half) {
                norm.validate()?;
            }
        }
        if let Some(norm) = self.post_norm_shape() {
            if self.residual != Residual::LayerInput
                || self.mlp.is_none()
                || self.output_norms != OutputNorms::default()
                || self.query_key_norms.is_some()
            {
                return Err(AttentionError::InvalidShape(
                    "a proven norm on the layer's output (BERT's post-norm layer) needs the post-norm block: its residual adds to X, its MLP proven, and no other norms than the MLP's and (layer 0) the one from H to X"
                        .into(),
                ));
            }
            norm.validate()?;
        }
        if self.query_key_norms.is_some() {
            if self.rotary.is_none() {
                return Err(AttentionError::InvalidShape(
                    "a proven QK-norm needs the rotary embedding after it".into(),
                ));
            }
            if !(a.heads.is_power_of_two() && a.head_dim.is_power_of_two() && a.head_dim >= 2) {
                return Err(AttentionError::InvalidShape(
                    "a proven QK-norm needs power-of-two head counts and head widths".into(),
                ));
            }
            for p in 0..2 {
                if let Some(norm) = self.query_key_norm_shape(p) {
                    norm.validate()?;
                }
            }
        }
        Ok(())
    }

    /// The shape of the norm on the layer's output (BERT's `output.LayerNorm`: `s × d_model`,
    /// the next layer's input `X` and residual stream, in [`crate::norm::OUTPUT_NORM_OUTPUT_BITS`]
    /// like the MLP norm's `X₂`), if the block proves one.
    pub fn post_norm_shape(&self) -> Option<NormShape> {
        self.post_norm.map(|n| {
            n.shape_with_output_bits(
                self.attention.seq_len,
                self.model_width,
                crate::norm::OUTPUT_NORM_OUTPUT_BITS,
            )
        })
    }

    /// The model commitment's index of the post-norm's `γ` (`bias` false) or `β` (`bias`
    /// true): the last tables.
    pub(crate) fn post_norm_weight_index(&self, bias: bool) -> Option<usize> {
        let norm = self.post_norm?;
        if bias && !norm.bias {
            return None;
        }
        Some(self.table_vars().len() - 1 - self.post_norm_tables() + usize::from(bias))
    }

    /// How many tables the post-norm adds to the model commitment.
    fn post_norm_tables(&self) -> usize {
        self.post_norm.map_or(0, |n| 1 + usize::from(n.bias))
    }

    /// The shape of the norm on `half`'s output (`s × d_model`, output range
    /// [`crate::norm::OUTPUT_NORM_OUTPUT_BITS`] at the residual stream's scale), if the block
    /// proves one.
    pub fn output_norm_shape(&self, half: BlockHalf) -> Option<NormShape> {
        self.output_norms.of(half).map(|n| {
            n.shape_with_output_bits(
                self.attention.seq_len,
                self.model_width,
                crate::norm::OUTPUT_NORM_OUTPUT_BITS,
            )
        })
    }

    /// The model commitment's index of the `γ` (`bias` false) or `β` (`bias` true) of the norm
    /// on `half`'s output: after the attention's eight tables, the first norm's and the MLP's,
    /// the attention's output norm's `γ` (and `β`), then the MLP's output norm's.
    pub(crate) fn output_norm_weight_index(&self, half: BlockHalf, bias: bool) -> Option<usize> {
        let norm = self.output_norms.of(half)?;
        if bias && !norm.bias {
            return None;
        }
        let mut start = self.table_vars().len()
            - 1
            - self.output_norm_tables()
            - self.query_key_norm_tables()
            - self.post_norm_tables();
        if half == BlockHalf::FeedForward {
            start += self.output_norms.attention.map_or(0, |n| 1 + usize::from(n.bias));
        }
        Some(start + usize::from(bias))
    }

    /// The shape of the QK-norm on `Q` (`p = 0`) or `K` (`p = 1`): `s·h` rows of a head's
    /// `m` entries (the row-major `s × h·m` table read as `(s·h) × m`: the same MLE, `h` and `m`
    /// powers of two), its output in the rotation's input range.
    pub fn query_key_norm_shape(&self, p: usize) -> Option<NormShape> {
        let a = &self.attention;
        self.query_key_norms.filter(|_| p < 2).map(|n| NormShape {
            output_bits: ROTATED_PROJECTION_OUTPUT_BITS,
            ..n.of(p).shape(a.seq_len * a.heads, a.head_dim)
        })
    }

    /// The model commitment's index of the QK-norm's `γ` (`bias` false) or `β` (`bias` true)
    /// on `Q` (`p = 0`) or `K` (`p = 1`): the last tables, `γ_q` (`β_q`), then `γ_k` (`β_k`).
    pub(crate) fn query_key_norm_weight_index(&self, p: usize, bias: bool) -> Option<usize> {
        let norms = self.query_key_norms.filter(|_| p < 2)?;
        if bias && !norms.of(p).bias {
            return None;
        }
        let mut index = self.table_vars().len() - 1 - self.query_key_norm_tables() - self.post_norm_tables();
        if p == 1 {
            index += 1 + usize::from(norms.query.bias);
        }
        Some(index + usize::from(bias))
    }

    /// How many tables the QK-norm adds to the model commitment.
    fn query_key_norm_tables(&self) -> usize {
        self.query_key_norms.map_or(0, |n| 2 + usize::from(n.query.bias) + usize::from(n.key.bias))
    }

    /// How many tables the output norms add to the model commitment.
    fn output_norm_tables(&self) -> usize {
        BlockHalf::BOTH.iter().filter_map(|h| self.output_norms.of(*h)).map(|n| 1 + usize::from(n.bias)).sum()
    }

    /// The proven MLP's shape (`s × d_model`; `Y₂` pinned by the residual, or by the output
    /// norm's input range under one, no range of its own).
    pub fn mlp_shape(&self) -> Option<MlpShape> {
        self.mlp.map(|m| m.params.shape(self.attention.seq_len, self.model_width, None))
    }

    /// The entries of the committed weight tables, each padded to a power of two (what the
    /// prover holds of the weights, in every form: float, integer, field).
    pub fn padded_weight_entries(&self) -> u64 {
        self.table_vars().into_iter().skip(1).map(|vars| 1u64 << vars.min(63)).fold(0, u64::saturating_add)
    }

    /// The norm before the proven MLP (`s × d_model`).
    pub fn mlp_norm_shape(&self) -> Option<NormShape> {
        let (s, d) = (self.attention.seq_len, self.model_width);
        self.mlp.map(|m| match self.post_norm {
            // A post-norm layer's X₂ is its residual stream (S₂ = X₂ + Y₂): the stream's range.
            Some(_) => m.norm.shape_with_output_bits(s, d, crate::norm::OUTPUT_NORM_OUTPUT_BITS),
            None => m.norm.shape(s, d),
        })
    }

    /// The model commitment's index of an MLP weight table: after the attention's eight and
    /// the first norm's, `γ₂` (and `β₂`), then each projection's `W` and `b` in
    /// [`MlpShape::projection_order`].
    pub(crate) fn mlp_weight_index(&self, table: MlpTable) -> Option<usize> {
        let mlp = self.mlp?;
        let start = 8 + self.norm_tables();
        let norm_tables = 1 + usize::from(mlp.norm.bias);
        match table {
            MlpTable::NormScale => Some(start),
            MlpTable::NormBias => mlp.norm.bias.then_some(start + 1),
            MlpTable::Weights(p) | MlpTable::Bias(p) => {
                let k = self.mlp_shape()?.projection_order().iter().position(|q| *q == p)?;
                Some(start + norm_tables + 2 * k + usize::from(matches!(table, MlpTable::Bias(_))))
            }
        }
    }

    /// The proven norm's shape (`s × d_model`, output range `X`'s: 16 bits, a post-norm layer's
    /// 20), if the block proves one.
    pub fn norm_shape(&self) -> Option<NormShape> {
        let (s, d) = (self.attention.seq_len, self.model_width);
        self.norm.map(|n| match self.post_norm {
            // A post-norm layer's X is its residual stream (BERT's layer 0: the embeddings'
            // LayerNorm makes it): the stream's range, as the post-norm's.
            Some(_) => n.shape_with_output_bits(s, d, crate::norm::OUTPUT_NORM_OUTPUT_BITS),
            None => n.shape(s, d),
        })
    }

    /// How many norm weight tables the model commitment holds after the eight attention
    /// tables: `γ`, and `β` when the norm has a shift.
    pub(crate) fn norm_tables(&self) -> usize {
        self.norm.map_or(0, |n| 1 + usize::from(n.bias))
    }

    /// Whether the statement commits to a hidden state `H` besides `X`: the residual adds to
    /// it (pre-norm), or the block proves the norm from it to `X` (also a post-norm block's:
    /// BERT's layer 0, `X = LayerNorm(H)` the embeddings' norm, its residual on `X`).
    pub fn has_hidden_state(&self) -> bool {
        self.residual == Residual::HiddenState || self.norm.is_some()
    }

    /// Whether key/value heads are shared (`h_kv < h`).
    pub fn is_grouped(&self) -> bool {
        self.key_value_heads != self.attention.heads
    }

    /// The committed widths of `W_k` and `W_v`: `h_kv·m`, `h_kv·m_v`.
    pub(crate) fn key_value_widths(&self) -> (usize, usize) {
        let a = &self.attention;
        (self.key_value_heads * a.head_dim, self.key_value_heads * a.value_head_dim)
    }

    /// The shared-head reductions of `W_k`, `b_k`, `W_v`, `b_v`, in that order.
    pub(crate) fn shared_heads(&self) -> [SharedHeadsShape; 4] {
        let a = &self.attention;
        let shape = |head_dim: usize, row_vars| SharedHeadsShape {
            heads: a.heads,
            key_value_heads: self.key_value_heads,
            head_dim_vars: head_dim.next_power_of_two().trailing_zeros() as usize,
            row_vars,
        };
        let m = self.model_vars();
        [shape(a.head_dim, m), shape(a.head_dim, 0), shape(a.value_head_dim, m), shape(a.value_head_dim, 0)]
    }

    /// The `Q`, `K`, `V` and output projections' shapes.
    pub fn projections(&self) -> [ProjectionShape; 4] {
        let a = &self.attention;
        let [q, k, v, o] = self.shifts;
        let shape = |outputs, shift, bits| ProjectionShape {
            rows: a.seq_len,
            inputs: self.model_width,
            outputs,
            shift,
            output_bits: Some(bits),
        };
        let query_key_bits =
            if self.rotary.is_some() { ROTATED_PROJECTION_OUTPUT_BITS } else { PROJECTION_OUTPUT_BITS };
        [
            shape(a.model_width(), q, query_key_bits),
            shape(a.model_width(), k, query_key_bits),
            shape(a.value_model_width(), v, PROJECTION_OUTPUT_BITS),
            // Y is pinned by the residual Z = R + Y (Z public, R committed), or under an
            // output norm by that norm's input range (|Y| < 2^28): no range check of its own.
            ProjectionShape {
                rows: a.seq_len,
                inputs: a.value_model_width(),
                outputs: self.model_width,
                shift: o,
                output_bits: None,
            },
        ]
    }

    /// `W_k, b_k, W_v, b_v` expanded to every query head (the tensors themselves without
    /// grouped-query attention).
    pub fn expanded_key_values<T: Copy>(&self, weights: &ModelWeights<T>) -> [Vec<T>; 4] {
        let a = &self.attention;
        let (h, kv, d) = (a.heads, self.key_value_heads, self.model_width);
        [
            expand_heads(&weights.keys, d, h, kv, a.head_dim),
            expand_heads(&weights.keys_bias, 1, h, kv, a.head_dim),
            expand_heads(&weights.values, d, h, kv, a.value_head_dim),
            expand_heads(&weights.values_bias, 1, h, kv, a.value_head_dim),
        ]
    }

    /// `log d̂_model`.
    pub(crate) fn model_vars(&self) -> usize {
        self.model_width.next_power_of_two().trailing_zeros() as usize
    }

    /// The variables of the input and weight tables: `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`,
    /// `b_v`, `W_o`, `b_o`, then the proven norm's `γ` (and `β`) (padded to powers of two).
    pub(crate) fn table_vars(&self) -> Vec<usize> {
        let a = &self.attention;
        let m = self.model_vars();
        let (k, v) = self.key_value_widths();
        let (k, v) = (log2_ceil(k), log2_ceil(v));
        let mut vars = vec![
            a.seq_vars() + m,
            m + a.model_vars(),
            m + k,
            m + v,
            a.model_vars(),
            k,
            v,
            a.value_model_vars() + m,
            m,
        ];
        vars.extend(std::iter::repeat_n(m, self.norm_tables()));
        if let (Some(mlp), Some(shape)) = (self.mlp, self.mlp_shape()) {
            vars.extend(std::iter::repeat_n(m, 1 + usize::from(mlp.norm.bias)));
            for projection in shape.projections() {
                vars.extend([projection.input_vars() + projection.output_vars(), projection.output_vars()]);
            }
        }
        vars.extend(std::iter::repeat_n(m, self.output_norm_tables()));
        if let Some(norms) = self.query_key_norms {
            let head = log2_ceil(a.head_dim);
            for norm in [norms.query, norms.key] {
                vars.extend(std::iter::repeat_n(head, 1 + usize::from(norm.bias)));
            }
        }
        vars.extend(std::iter::repeat_n(m, self.post_norm_tables()));
        vars
    }

    /// The Hyrax layout (column variables) of the weight tables, from their sizes alone: one
    /// model commitment serves every sequence length.
    pub(crate) fn weights_layout(&self) -> usize {
        split_vars(self.table_vars().into_iter().skip(1).max().unwrap_or(0)).1
    }

    /// The Hyrax layout (column variables) of `X`, `O`, `Y` and the range data.
    pub(crate) fn layout(&self, softmax: SoftmaxMode) -> usize {
        split_vars(self.largest_vars(softmax)).1
    }

    pub(crate) fn largest_vars(&self, softmax: SoftmaxMode) -> usize {
        let tables = self.table_vars().into_iter().max().unwrap_or(0);
        let ranges = self
            .projections()
            .iter()
            .map(|p| {
                let (low, high) = p.digits();
                let digits = if high > 0 { p.grid_vars() } else { 0 };
                let output = p.output_bits.unwrap_or(0);
                (low.max(high).max(output) as usize).max(digits)
            })
            .max()
            .unwrap_or(0);
        let rotary = self.rotary.map_or(0, |r| {
            (self.attention.seq_vars() + self.attention.model_vars())
                .max(r.fraction_bits as usize)
                .max(crate::rope::ROTARY_OUTPUT_BITS as usize)
        });
        // A norm's widest table: its stack, its grid, its digit and output ranges' multiplicities
        // (the output norms' range takes 20 bits).
        let norm_vars = |n: NormShape| {
            let (low, high) = n.digits();
            n.stack_vars()
                .max(n.grid_vars())
                .max(low.max(high).max(crate::norm::NORM_DIGIT_BITS).max(n.output_bits) as usize)
        };
        let norm = self.norm_shape().map_or(0, norm_vars);
        let mlp = self.mlp_shape().map_or(0, |m| m.largest_vars());
        let mlp_norm = self.mlp_norm_shape().map_or(0, norm_vars);
        let output_norms = BlockHalf::BOTH
            .iter()
            .filter_map(|h| self.output_norm_shape(*h))
            .chain((0..2).filter_map(|p| self.query_key_norm_shape(p)))
            .chain(self.post_norm_shape())
            .map(norm_vars)
            .max()
            .unwrap_or(0);
        tables
            .max(ranges)
            .max(rotary)
            .max(norm)
            .max(mlp)
            .max(mlp_norm)
            .max(output_norms)
            .max(largest_committed_vars(&self.attention, softmax))
    }

    /// The variables of the output ranges' multiplicities: the `Q`, `K`, `V` projections',
    /// then (under rotary embeddings) the two rotations'.
    pub(crate) fn output_range_vars(&self) -> Vec<usize> {
        let projections = self.projections();
        let mut vars: Vec<usize> =
            projections.iter().filter_map(|p| p.output_bits).map(|b| b as usize).collect();
        if self.rotary.is_some() {
            vars.extend([crate::rope::ROTARY_OUTPUT_BITS as usize; 2]);
        }
        vars
    }

    /// The variables of `Q_pre`, `K_pre` and the two rotations' multiplicities.
    pub(crate) fn rotary_vars(&self) -> Vec<usize> {
        let a = &self.attention;
        self.rotary.map_or(Vec::new(), |r| {
            let grid = a.seq_vars() + a.model_vars();
            let f = r.fraction_bits as usize;
            vec![grid, grid, f, f]
        })
    }

    pub(crate) fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.attention.append_to_transcript(transcript);
        let [q, k, v, o] = self.shifts.map(|s| s as usize);
        let residual = usize::from(self.residual.code());
        let (base, f) = self.rotary.map_or((0, 0), |r| (r.base as usize, r.fraction_bits as usize));
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                crate::block::absorbed_width(self.model_width),
                q,
                k,
                v,
                o,
                residual,
                self.key_value_heads,
                base,
                f,
            ],
        );
        // The norm's constants (its own transcript adds them again when its step starts).
        transcript.append_shape(LABEL_NORM, &norm_constants(self.norm));
        // The MLP's constants (its step absorbs its whole shape again when it starts).
        let mlp = self.mlp.map_or([0; 15], |m| {
            let p = m.params;
            let gate = p.gate.map_or([0; 2], |g| [g.gate_shift, g.up_bits].map(|v| v as usize));
            [
                usize::from(m.norm.kind.code()),
                m.norm.epsilon as usize,
                m.norm.scale_bits as usize,
                m.norm.shift_bits as usize,
                usize::from(m.norm.bias),
                m.norm.remainder_digits as usize,
                crate::block::absorbed_width(p.hidden),
                usize::from(p.activation.code()),
                p.activation_input_fraction_bits as usize,
                p.activation_output_fraction_bits as usize,
                p.activation_input_bits as usize,
                p.up_shift as usize,
                p.down_shift as usize,
                usize::from(p.gate.is_some()),
                gate.iter().fold(0, |acc, v| (acc << 8) | v),
            ]
        });
        transcript.append_shape(LABEL_MLP, &mlp);
        // The output norms' constants (each step adds them again when it starts).
        let output_norms = BlockHalf::BOTH.map(|half| norm_constants(self.output_norms.of(half)));
        transcript.append_shape(LABEL_OUTPUT_NORMS, &output_norms.concat());
        // The QK-norm's constants (likewise).
        let query_key = self.query_key_norms.map(|n| [n.query, n.key]);
        let query_key = [0, 1].map(|p| norm_constants(query_key.map(|n| n[p])));
        transcript.append_shape(LABEL_QUERY_KEY_NORMS, &query_key.concat());
        // The post-norm's constants (likewise).
        transcript.append_shape(LABEL_POST_NORM, &norm_constants(self.post_norm));
    }
}

/// A norm's constants as absorbed (zeros for none: a proven norm has `ε ≥ 1`).
fn norm_constants(norm: Option<BlockNorm>) -> [usize; 6] {
    norm.map_or([0; 6], |n| {
        [
            usize::from(n.kind.code()),
            n.epsilon as usize,
            n.scale_bits as usize,
            n.shift_bits as usize,
            usize::from(n.bias),
            n.remainder_digits as usize,
        ]
    })
}

/// The Hyrax generators for a model commitment (transparent: a prefix of the one derived
/// sequence; enough for a hiding key's rows, [`crate::block::ZK_EXTRA_COLUMNS`] wider than a
/// binding key's).
pub fn weights_hyrax_params(shape: &ModelShape) -> HyraxParams {
    // A hiding key's rows are wider (`block::weight_column_vars`): generators for either.
    let widest = shape.table_vars().into_iter().skip(1).max().unwrap_or(0);
    HyraxParams::new(widest + 2 * crate::block::ZK_EXTRA_COLUMNS)
}

/// The Hyrax generators for a model layer (transparent, derived from the shape).
pub fn model_hyrax_params(shape: &ModelShape, softmax: SoftmaxMode) -> HyraxParams {
    HyraxParams::new(shape.largest_vars(softmax))
}

pub use zkmha_nn::ModelWeights;

/// Commitments to a layer's weights, made once per model and reused by every proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelCommitment {
    /// To `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`, then the proven norm's `γ`
    /// (and `β`), the MLP's, the output norms' and the QK-norm's tables, in that order
    /// (`ModelShape::output_norm_weight_index`, `ModelShape::query_key_norm_weight_index`).
    pub tables: Vec<HyraxCommitment>,
}

/// Where a statement's weight commitments are: in it, or left out for the key's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WeightCommitmentsIn {
    Statement,
    Key,
}

/// The public statement of a model-layer proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelStatement {
    /// Shapes.
    pub shape: ModelShape,
    /// Mask kind.
    pub mask: MaskKind,
    /// What the softmax slot holds.
    pub softmax: SoftmaxMode,
    /// Commitment to the input `X` (`s × d_model`).
    pub input: HyraxCommitment,
    /// Commitment to the hidden state `H` (`s × d_model`) the residual adds to, when the
    /// shape's residual is [`Residual::HiddenState`] (`None` otherwise).
    pub residual: Option<HyraxCommitment>,
    /// The model commitment.
    pub model: ModelCommitment,
    /// The output `Z = R + Y` (or `H' = Z + Y₂` when the shape proves the MLP), `s × d_model`:
    /// public integers, or a commitment when the layer is one link of a chain.
    pub output: LayerOutput,
}

/// A layer's output in its statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerOutput {
    /// The claimed output as the integers it is, `s × d_model`, row-major (at the residual
    /// stream's scale; 8 bytes an entry in files instead of a field element's 32). The verifier
    /// evaluates its MLE itself, the padding as zeros.
    Public(Vec<i64>),
    /// A commitment to the padded output (`2^(log s + log d_model)` entries, the layout of the
    /// statement's `H`): the hidden state entering the next layer of a chain, byte-equal to that
    /// layer's [`ModelStatement::residual`] ([`crate::block::commit_boundary`]). The proof
    /// opens it at the residual's point.
    Committed(HyraxCommitment),
}

/// Which kind of [`LayerOutput`] a statement has (what the proof's shape depends on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// [`LayerOutput::Public`].
    Public,
    /// [`LayerOutput::Committed`].
    Committed,
}

impl OutputKind {
    fn code(self) -> u8 {
        match self {
            OutputKind::Public => 1,
            OutputKind::Committed => 2,
        }
    }
}

impl LayerOutput {
    /// Its kind.
    pub fn kind(&self) -> OutputKind {
        match self {
            LayerOutput::Public(_) => OutputKind::Public,
            LayerOutput::Committed(_) => OutputKind::Committed,
        }
    }

    /// The public integers, or `None` for a committed output.
    pub fn public(&self) -> Option<&[i64]> {
        match self {
            LayerOutput::Public(values) => Some(values),
            LayerOutput::Committed(_) => None,
        }
    }

    /// The public integers to change, or `None` for a committed output.
    pub fn public_mut(&mut self) -> Option<&mut Vec<i64>> {
        match self {
            LayerOutput::Public(values) => Some(values),
            LayerOutput::Committed(_) => None,
        }
    }

    /// The commitment, or `None` for a public output.
    pub fn commitment(&self) -> Option<&HyraxCommitment> {
        match self {
            LayerOutput::Public(_) => None,
            LayerOutput::Committed(c) => Some(c),
        }
    }
}

impl CanonicalSerialize for LayerOutput {
    fn serialize_with_mode<W: ark_serialize::Write>(
        &self,
        mut writer: W,
        compress: ark_serialize::Compress,
    ) -> Result<(), ark_serialize::SerializationError> {
        self.kind().code().serialize_with_mode(&mut writer, compress)?;
        match self {
            LayerOutput::Public(values) => values.serialize_with_mode(&mut writer, compress),
            LayerOutput::Committed(c) => c.serialize_with_mode(&mut writer, compress),
        }
    }
    fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
        1 + match self {
            LayerOutput::Public(values) => values.serialized_size(compress),
            LayerOutput::Committed(c) => c.serialized_size(compress),
        }
    }
}

impl ark_serialize::Valid for LayerOutput {
    fn check(&self) -> Result<(), ark_serialize::SerializationError> {
        match self {
            LayerOutput::Public(_) => Ok(()),
            LayerOutput::Committed(c) => c.check(),
        }
    }
}

impl CanonicalDeserialize for LayerOutput {
    fn deserialize_with_mode<R: ark_serialize::Read>(
        mut reader: R,
        compress: ark_serialize::Compress,
        validate: ark_serialize::Validate,
    ) -> Result<Self, ark_serialize::SerializationError> {
        match u8::deserialize_with_mode(&mut reader, compress, validate)? {
            1 => Ok(LayerOutput::Public(Vec::deserialize_with_mode(&mut reader, compress, validate)?)),
            2 => Ok(LayerOutput::Committed(HyraxCommitment::deserialize_with_mode(
                &mut reader,
                compress,
                validate,
            )?)),
            _ => Err(ark_serialize::SerializationError::InvalidData),
        }
    }
}

/// A plain model-layer proof: the block in the plain mode.
pub type ModelLayerProof = ModelBlockProof<Plain>;

/// Checks the lengths of `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for the first of the wrong length.
pub(crate) fn check_block_sizes<T>(
    shape: &ModelShape,
    input_len: usize,
    weights: &ModelWeights<T>,
) -> Result<(), AttentionError> {
    check_attention_sizes(shape, input_len, weights)?;
    check_norm_weights(shape, weights)?;
    check_feed_forward_weights(shape, weights)?;
    check_output_norm_weights(shape, weights)?;
    check_query_key_norm_weights(shape, weights)?;
    check_post_norm_weights(shape, weights)
}

/// Checks that the shape and the weights agree on the post-norm, and its tables' lengths.
///
/// # Errors
/// As [`check_norm_pair`].
fn check_post_norm_weights<T>(shape: &ModelShape, weights: &ModelWeights<T>) -> Result<(), AttentionError> {
    let names = ["γ_p", "β_p"];
    check_norm_pair(
        shape.post_norm,
        weights.post_norm.as_ref(),
        shape.model_width,
        names,
        "on the layer's output",
    )
}

/// Checks that a norm the shape proves (`norm`, `None` for none) and its weights agree — both
/// present or both absent, of one kind — and that `γ` and `β` (`names`) have `width` entries
/// (`β` none without a shift); `place` says where the norm is, for the messages.
///
/// # Errors
/// [`AttentionError::InvalidShape`] naming the disagreement, [`AttentionError::WrongTensorSize`].
fn check_norm_pair<T>(
    norm: Option<BlockNorm>,
    weights: Option<&zkmha_nn::NormWeights<T>>,
    width: usize,
    names: [&'static str; 2],
    place: &str,
) -> Result<(), AttentionError> {
    match (norm, weights) {
        (None, None) => Ok(()),
        (Some(norm), Some(w)) if norm.kind == w.kind => check_tensor_sizes(&[
            (names[0], w.scale.len(), 1, width),
            (names[1], w.bias.len(), 1, if norm.bias { width } else { 0 }),
        ]),
        (Some(norm), Some(w)) => Err(AttentionError::InvalidShape(format!(
            "the shape proves a {} {place} but the weights are a {}'s",
            norm.kind.name(),
            w.kind.name()
        ))),
        (Some(_), None) => Err(AttentionError::InvalidShape(format!(
            "the shape proves a norm {place}: pass its weights ({}, {})",
            names[0], names[1]
        ))),
        (None, Some(_)) => Err(AttentionError::InvalidShape(format!(
            "weights of a norm {place} were given, but this shape does not prove it"
        ))),
    }
}

/// Checks that the shape and the weights agree on the QK-norm, and its tables' lengths.
///
/// # Errors
/// [`AttentionError::InvalidShape`] naming the disagreement, [`AttentionError::WrongTensorSize`].
fn check_query_key_norm_weights<T>(
    shape: &ModelShape,
    weights: &ModelWeights<T>,
) -> Result<(), AttentionError> {
    let m = shape.attention.head_dim;
    match (shape.query_key_norms, &weights.query_key_norms) {
        (None, None) => Ok(()),
        (Some(norms), Some(w)) => {
            for (norm, w, names) in
                [(norms.query, &w.query, ["γ_q", "β_q"]), (norms.key, &w.key, ["γ_k", "β_k"])]
            {
                if norm.kind != w.kind {
                    return Err(AttentionError::InvalidShape(format!(
                        "the shape proves a {} QK-norm but the weights are a {}'s",
                        norm.kind.name(),
                        w.kind.name()
                    )));
                }
                check_tensor_sizes(&[
                    (names[0], w.scale.len(), 1, m),
                    (names[1], w.bias.len(), 1, if norm.bias { m } else { 0 }),
                ])?;
            }
            Ok(())
        }
        (Some(_), None) => {
            Err(AttentionError::InvalidShape("the shape proves a QK-norm: pass its weights".into()))
        }
        (None, Some(_)) => Err(AttentionError::InvalidShape(
            "QK-norm weights were given, but this shape does not prove one".into(),
        )),
    }
}

/// Checks that the shape and the weights agree on the output norms, and their lengths.
///
/// # Errors
/// [`AttentionError::InvalidShape`] naming the disagreement, [`AttentionError::WrongTensorSize`].
fn check_output_norm_weights<T>(shape: &ModelShape, weights: &ModelWeights<T>) -> Result<(), AttentionError> {
    for half in BlockHalf::BOTH {
        let place = match half {
            BlockHalf::Attention => "on the attention's output",
            BlockHalf::FeedForward => "on the MLP's output",
        };
        check_norm_pair(
            shape.output_norms.of(half),
            weights.output_norms.of(half),
            shape.model_width,
            ["γ", "β"],
            place,
        )?;
    }
    Ok(())
}

/// An MLP weight table of the model commitment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MlpTable {
    /// `γ₂`.
    NormScale,
    /// `β₂`.
    NormBias,
    /// A projection's `W`.
    Weights(MlpProjection),
    /// A projection's `b`.
    Bias(MlpProjection),
}

/// Checks that the shape and the weights agree on the proven MLP, and its tables' lengths.
///
/// # Errors
/// [`AttentionError::InvalidShape`] naming the disagreement, [`AttentionError::WrongTensorSize`].
fn check_feed_forward_weights<T>(
    shape: &ModelShape,
    weights: &ModelWeights<T>,
) -> Result<(), AttentionError> {
    let d = shape.model_width;
    match (shape.mlp, shape.mlp_shape(), &weights.feed_forward) {
        (None, _, None) => Ok(()),
        (Some(mlp), Some(mlp_shape), Some(w)) => {
            if mlp.norm.kind != w.norm.kind {
                return Err(AttentionError::InvalidShape(format!(
                    "the shape proves a {} before the MLP but the weights are a {}'s",
                    mlp.norm.kind.name(),
                    w.norm.kind.name()
                )));
            }
            if mlp.params.gate.is_some() != w.mlp.gate.is_some() {
                return Err(AttentionError::InvalidShape(
                    "the shape and the MLP's weights disagree on the gate projection".into(),
                ));
            }
            check_tensor_sizes(&[
                ("γ₂", w.norm.scale.len(), 1, d),
                ("β₂", w.norm.bias.len(), 1, if mlp.norm.bias { d } else { 0 }),
            ])?;
            for p in mlp_shape.projection_order() {
                let (Some(projection), Some(linear)) =
                    (mlp_shape.projection(p), crate::mlp::weights_of(&w.mlp, p))
                else {
                    return Err(AttentionError::CheckFailed { step: "MLP weights" });
                };
                let name = mlp_projection_name(p);
                check_tensor_sizes(&[
                    (name.0, linear.weights.len(), projection.inputs, projection.outputs),
                    (name.1, linear.bias.len(), 1, projection.outputs),
                ])?;
            }
            Ok(())
        }
        (Some(_), _, None) => Err(AttentionError::InvalidShape(
            "the shape proves the MLP: pass its weights (γ₂, β₂, W_up, W_gate, W_down and biases)".into(),
        )),
        _ => Err(AttentionError::InvalidShape(
            "MLP weights were given, but this shape does not prove the MLP".into(),
        )),
    }
}

fn mlp_projection_name(p: MlpProjection) -> (&'static str, &'static str) {
    match p {
        MlpProjection::Up => ("W_up", "b_up"),
        MlpProjection::Gate => ("W_gate", "b_gate"),
        MlpProjection::Down => ("W_down", "b_down"),
    }
}

/// [`check_block_sizes`] without the norm (the float block around `X`, before calibration has
/// chosen the norm's constants).
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for the first of the wrong length.
pub(crate) fn check_attention_sizes<T>(
    shape: &ModelShape,
    input_len: usize,
    weights: &ModelWeights<T>,
) -> Result<(), AttentionError> {
    let a = &shape.attention;
    let (d, n, nv) = (shape.model_width, a.model_width(), a.value_model_width());
    let (k, v) = shape.key_value_widths();
    let x = input_len;
    let [w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o] = weights.lengths();
    check_tensor_sizes(&[
        ("X", x, a.seq_len, d),
        ("W_q", w_q, d, n),
        ("W_k", w_k, d, k),
        ("W_v", w_v, d, v),
        ("b_q", b_q, 1, n),
        ("b_k", b_k, 1, k),
        ("b_v", b_v, 1, v),
        ("W_o", w_o, nv, d),
        ("b_o", b_o, 1, d),
    ])
}

/// Checks that the shape and the weights agree on the proven norm, and `γ`'s and `β`'s lengths.
///
/// # Errors
/// [`AttentionError::InvalidShape`] naming the disagreement, [`AttentionError::WrongTensorSize`].
fn check_norm_weights<T>(shape: &ModelShape, weights: &ModelWeights<T>) -> Result<(), AttentionError> {
    check_norm_pair(shape.norm, weights.norm.as_ref(), shape.model_width, ["γ", "β"], "from H to X")
}

/// The padded `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o` tables, then the
/// proven norm's `γ` (and `β`), after checking sizes.
pub(crate) fn padded_tables(
    shape: &ModelShape,
    input: &[i64],
    weights: &ModelWeights,
) -> Result<Vec<Vec<i64>>, AttentionError> {
    check_block_sizes(shape, input.len(), weights)?;
    let a = &shape.attention;
    let d = shape.model_width;
    let (n, nv) = (a.model_width(), a.value_model_width());
    let (k, v) = shape.key_value_widths();
    let (sv, mv) = (a.seq_vars(), shape.model_vars());
    let (qv, vv) = (a.model_vars(), a.value_model_vars());
    let (kv, vkv) = (log2_ceil(k), log2_ceil(v));
    let mut tables = vec![
        pad(input, a.seq_len, d, sv, mv),
        pad(&weights.queries, d, n, mv, qv),
        pad(&weights.keys, d, k, mv, kv),
        pad(&weights.values, d, v, mv, vkv),
        pad(&weights.queries_bias, 1, n, 0, qv),
        pad(&weights.keys_bias, 1, k, 0, kv),
        pad(&weights.values_bias, 1, v, 0, vkv),
        pad(&weights.output, nv, d, vv, mv),
        pad(&weights.output_bias, 1, d, 0, mv),
    ];
    if let (Some(norm), Some(w)) = (&shape.norm, &weights.norm) {
        tables.push(pad(&w.scale, 1, d, 0, mv));
        if norm.bias {
            tables.push(pad(&w.bias, 1, d, 0, mv));
        }
    }
    if let (Some(mlp), Some(mlp_shape), Some(w)) = (shape.mlp, shape.mlp_shape(), &weights.feed_forward) {
        tables.push(pad(&w.norm.scale, 1, d, 0, mv));
        if mlp.norm.bias {
            tables.push(pad(&w.norm.bias, 1, d, 0, mv));
        }
        for p in mlp_shape.projection_order() {
            let (Some(projection), Some(linear)) =
                (mlp_shape.projection(p), crate::mlp::weights_of(&w.mlp, p))
            else {
                return Err(AttentionError::CheckFailed { step: "MLP weights" });
            };
            let (input_vars, output_vars) = (projection.input_vars(), projection.output_vars());
            tables.push(pad(&linear.weights, projection.inputs, projection.outputs, input_vars, output_vars));
            tables.push(pad(&linear.bias, 1, projection.outputs, 0, output_vars));
        }
    }
    for half in BlockHalf::BOTH {
        if let (Some(norm), Some(w)) = (shape.output_norms.of(half), weights.output_norms.of(half)) {
            tables.push(pad(&w.scale, 1, d, 0, mv));
            if norm.bias {
                tables.push(pad(&w.bias, 1, d, 0, mv));
            }
        }
    }
    if let (Some(norms), Some(w)) = (shape.query_key_norms, &weights.query_key_norms) {
        let m = a.head_dim;
        let head = log2_ceil(m);
        for (norm, w) in [(norms.query, &w.query), (norms.key, &w.key)] {
            tables.push(pad(&w.scale, 1, m, 0, head));
            if norm.bias {
                tables.push(pad(&w.bias, 1, m, 0, head));
            }
        }
    }
    if let (Some(norm), Some(w)) = (shape.post_norm, &weights.post_norm) {
        tables.push(pad(&w.scale, 1, d, 0, mv));
        if norm.bias {
            tables.push(pad(&w.bias, 1, d, 0, mv));
        }
    }
    Ok(tables)
}

/// Commits to a layer's weights (once per model), binding: the plain mode's
/// [`crate::block::commit_model_with`].
///
/// # Errors
/// [`AttentionError::InvalidShape`] / [`AttentionError::WrongTensorSize`] for bad shapes or
/// tensors, [`AttentionError::Commitment`] for too few generators.
pub fn commit_model(
    params: &HyraxParams,
    shape: &ModelShape,
    weights: &ModelWeights,
) -> Result<ModelCommitment, AttentionError> {
    // The plain mode draws no randomness: the generator is never read.
    let mut unused = ark_std::rand::rngs::StdRng::seed_from_u64(0);
    Ok(crate::block::commit_model_with::<Plain>(params, shape, weights, &mut unused)?.0)
}

impl ModelStatement {
    pub(crate) fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        self.mask.absorb(transcript, LABEL_MASK);
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = (&self.input, &self.residual, &self.model).serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        transcript.append_u64(LABEL_OUTPUT_KIND, u64::from(self.output.kind().code()));
        match &self.output {
            LayerOutput::Public(values) => absorb_integer_output(
                &crate::block::absorbed_output(values, self.shape.model_width),
                transcript,
            ),
            LayerOutput::Committed(c) => {
                let mut bytes = Vec::new();
                // Serializing into a Vec cannot fail.
                let _ = c.serialize_compressed(&mut bytes);
                transcript.append_bytes(LABEL_OUTPUT, &bytes);
            }
        }
    }

    /// Checks the statement before anything is derived from it: the shapes against the
    /// stated limits ([`ModelShape::validate`]), the output's length, and each commitment's
    /// size and layout ([`verify_model_layer`] runs it first; a reader of proof files calls
    /// it before deriving the generators, [`model_hyrax_params`]).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`] for `Z`,
    /// [`AttentionError::CheckFailed`] for a commitment of the wrong size.
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.validate_with(WeightCommitmentsIn::Statement)
    }

    /// [`ModelStatement::validate`] for a chain link whose weight commitments are left out
    /// ([`crate::layer_chain::ChainLink::without_weight_commitments`]): none may be there, and
    /// the input's, residual's and output's commitments are checked as `validate` checks them.
    ///
    /// # Errors
    /// As [`ModelStatement::validate`].
    pub fn validate_without_weight_commitments(&self) -> Result<(), AttentionError> {
        self.validate_with(WeightCommitmentsIn::Key)
    }

    fn validate_with(&self, weights: WeightCommitmentsIn) -> Result<(), AttentionError> {
        self.shape.validate()?;
        let expected = self.shape.attention.seq_len * self.shape.model_width;
        let (layout, weights_layout) = (self.shape.layout(self.softmax), self.shape.weights_layout());
        let vars = self.shape.table_vars();
        let hidden_shaped = |c: &HyraxCommitment| {
            let n = vars.first().copied().unwrap_or(0);
            c.num_vars == n && c.column_vars().ok() == Some(table_column_vars(n, layout))
        };
        match &self.output {
            LayerOutput::Public(values) if values.len() != expected => {
                return Err(AttentionError::WrongTensorSize {
                    tensor: if self.shape.mlp.is_some() { "H'" } else { "Z" },
                    rows: self.shape.attention.seq_len,
                    columns: self.shape.model_width,
                    expected,
                    got: values.len(),
                });
            }
            LayerOutput::Committed(c) if !hidden_shaped(c) => {
                return Err(AttentionError::CheckFailed { step: "output commitment" });
            }
            _ => {}
        }
        let tables: Vec<&HyraxCommitment> = std::iter::once(&self.input).chain(&self.model.tables).collect();
        let vars = match weights {
            WeightCommitmentsIn::Statement => &vars[..],
            WeightCommitmentsIn::Key => vars.get(..1).unwrap_or_default(),
        };
        let residual_shaped = match (self.shape.has_hidden_state(), &self.residual) {
            (false, None) => true,
            (true, Some(c)) => hidden_shaped(c),
            _ => false,
        };
        if !residual_shaped {
            return Err(AttentionError::CheckFailed { step: "residual commitment" });
        }
        // A weight in either mode's layout (a hiding key's rows are wider:
        // `block::weight_column_vars`; the block's verifier checks its mode's).
        let shaped = |i: usize, c: &HyraxCommitment, n: usize| {
            let columns = c.column_vars().ok();
            if i == 0 {
                return c.num_vars == n && columns == Some(table_column_vars(n, layout));
            }
            let plain = table_column_vars(n, weights_layout);
            let hiding = (plain + crate::block::ZK_EXTRA_COLUMNS).min(n);
            c.num_vars == n && (columns == Some(plain) || columns == Some(hiding))
        };
        if tables.len() != vars.len()
            || tables.iter().zip(vars.iter().copied()).enumerate().any(|(i, (c, n))| !shaped(i, c, n))
        {
            return Err(AttentionError::CheckFailed { step: "model commitment shape" });
        }
        Ok(())
    }
}

/// Absorbs the integer output: its length and a blake3 digest of its little-endian bytes.
fn absorb_integer_output(output: &[i64], transcript: &mut Transcript) {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(output.len() as u64).to_le_bytes());
    for chunk in output.chunks(8192) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
        hasher.update(&bytes);
    }
    transcript.append_bytes(LABEL_OUTPUT, hasher.finalize().as_bytes());
}

/// The public output `Z`'s MLE at `r_z = [r_c ‖ r_i]`: `Σ_i eq(r_i, i)·Σ_c eq(r_c, c)·Z(i, c)`,
/// folded row by row (rows in parallel, field × small-integer products) without building the
/// padded table.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) fn output_value(shape: &ModelShape, output: &[i64], r_z: &[Fr]) -> Result<Fr, AttentionError> {
    let (s, d) = (shape.attention.seq_len, shape.model_width);
    let (r_c, r_i) = r_z
        .split_at_checked(shape.model_vars())
        .filter(|(_, r_i)| r_i.len() == shape.attention.seq_vars() && output.len() == s * d)
        .ok_or(AttentionError::CheckFailed { step: "output point" })?;
    let column_weights: Vec<SmallMultiplier> = eq_table(r_c).into_iter().map(SmallMultiplier::new).collect();
    let row_weights = eq_table(r_i);
    let rows: Vec<Fr> = output
        .par_chunks(d.max(1))
        .with_min_len(8)
        .map(|row| row.iter().zip(&column_weights).map(|(z, e)| e.mul_i64(*z)).sum())
        .collect();
    Ok(rows.iter().zip(&row_weights).map(|(v, e)| *v * e).sum())
}

/// `O` as integers (the attention's outputs are exact integers in the field).
pub(crate) fn integer_output(output: &[Fr]) -> Result<Vec<i64>, AttentionError> {
    output
        .iter()
        .map(|v| {
            let small = |x: &Fr| {
                let big = x.into_bigint();
                (big.num_bits() <= 62).then(|| big.as_ref().first().copied().unwrap_or(0) as i64)
            };
            small(v)
                .or_else(|| small(&-*v).map(|n| -n))
                .ok_or_else(|| AttentionError::NumericRange("an attention output leaves i64".into()))
        })
        .collect()
}

/// Linear attention's masked entries carry the spec's `MASK` constant, so its output is not an
/// integer tensor the output projection could take: the block needs the proven softmax.
pub(crate) fn require_proven_softmax(softmax: SoftmaxMode) -> Result<(), AttentionError> {
    if softmax.is_proven() {
        Ok(())
    } else {
        Err(AttentionError::InvalidShape(
            "a model layer needs the proven softmax (linear attention's output carries the MASK constant)"
                .into(),
        ))
    }
}

/// Runs the block on `X` (`s × d_model`, integers) with the committed weights and proves it in
/// the plain mode ([`crate::block::prove_block`] with [`Plain`]); `residual` is the hidden state
/// `H` (`s × d_model`) under [`Residual::HiddenState`], `None` under [`Residual::LayerInput`].
///
/// # Errors
/// Bad shapes or tensors (a residual that does not match the shape's kind), intermediate values
/// the next step cannot take ([`AttentionError::ValueOutOfRange`]: choose larger shifts), a model
/// commitment of the wrong shape, and the sub-protocols' errors.
#[allow(clippy::too_many_arguments)]
pub fn prove_model_layer(
    params: &HyraxParams,
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual: Option<&[i64]>,
    weights: &ModelWeights,
    model: &ModelCommitment,
) -> Result<(ModelStatement, ModelLayerProof, ProverTimings), AttentionError> {
    // The plain mode draws no randomness: the generator is never read.
    let mut unused = ark_std::rand::rngs::StdRng::seed_from_u64(0);
    let blinds = vec![(); model.tables.len()];
    prove_block::<Plain>(params, shape, mask, softmax, input, residual, weights, model, &blinds, &mut unused)
}

/// Verifies a plain model-layer proof from the statement alone (commitments and output):
/// [`crate::block::verify_block`] with [`Plain`].
///
/// # Errors
/// Statement errors, [`AttentionError::CheckFailed`] naming a failing step (`"openings"` for a
/// claim its commitment does not open to), and the sub-protocols' errors.
pub fn verify_model_layer(
    params: &HyraxParams,
    statement: &ModelStatement,
    proof: &ModelLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    verify_block::<Plain>(params, statement, proof)
}
