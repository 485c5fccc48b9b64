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

use crate::commitment_layout::{largest_committed_vars, table_column_vars};
use crate::committed::{InputCommitments, commit_padded_inputs, padded_inputs};
use crate::common::check_tensor_sizes;
use crate::grouped_query::{
    SharedHeadsProof, SharedHeadsShape, expand_heads, prove_shared_heads, verify_shared_heads,
};
use crate::layer::{
    AttentionLayerProof, CommittedInputTables, CommittedInputs, ProverTimings, VerifierTimings, prove_chain,
    verify_chain, witness_alongside_table,
};
use crate::mode::Plain;
use crate::projection::{
    ProjectionClaims, ProjectionRanges, ProjectionShape, ProjectionWitness, ProjectionsProof,
    compute_projection, pad, projection_ranges, prove_projections, verify_projections,
};
use crate::rope::{
    RotaryClaims, RotaryParams, RotaryProof, RotaryRanges, RotaryWitness, compute_rotation, prove_rotation,
    rotation_ranges, verify_rotation,
};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, Residual, SoftmaxMode};
use ark_ff::{BigInteger, PrimeField};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use std::time::Instant;
use zkmha_field::Fr;
use zkmha_field::SmallMultiplier;
use zkmha_mle::{DenseMultilinearExtension, eq_table, log2_ceil};
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, OpeningClaim, PolynomialTable, split_vars};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"attention-model-layer";
const LABEL_SHAPE: &[u8] = b"attention/model/shape";
const LABEL_MASK: &[u8] = b"attention/model/mask";
const LABEL_SOFTMAX: &[u8] = b"attention/model/softmax";
const LABEL_COMMITMENTS: &[u8] = b"attention/model/commitments";
const LABEL_INTERMEDIATES: &[u8] = b"attention/model/intermediates";
const LABEL_RESIDUAL_POINT: &[u8] = b"attention/model/residual-point";
const LABEL_RESIDUAL_VALUE: &[u8] = b"attention/model/residual-input";
const LABEL_OUTPUT: &[u8] = b"attention/model/output";

/// The widest `d_model` of a model layer (a stated limit, checked by [`ModelShape::validate`]
/// before anything is derived from a shape: 16 384; GPT-2-small has 768, Llama-2-70B 8192).
pub const MAX_MODEL_WIDTH: usize = 1 << 14;

/// The range every committed `Q`, `K`, `V` is checked in: `|Y| ≤ 2^15` (the calibration puts
/// them at 11 and 12 bits, `model_quantization`: 8–16× headroom for other inputs).
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
        Ok(())
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
            // Y is pinned by the residual Z = R + Y (Z public, R committed): no range check.
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
    /// `b_v`, `W_o`, `b_o` (padded to powers of two).
    pub(crate) fn table_vars(&self) -> [usize; 9] {
        let a = &self.attention;
        let m = self.model_vars();
        let (k, v) = self.key_value_widths();
        let (k, v) = (log2_ceil(k), log2_ceil(v));
        [
            a.seq_vars() + m,
            m + a.model_vars(),
            m + k,
            m + v,
            a.model_vars(),
            k,
            v,
            a.value_model_vars() + m,
            m,
        ]
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
        tables.max(ranges).max(rotary).max(largest_committed_vars(&self.attention, softmax))
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
    }
}

/// The Hyrax generators for a model commitment (transparent; a prefix of
/// [`model_hyrax_params`] for every sequence length).
pub fn weights_hyrax_params(shape: &ModelShape) -> HyraxParams {
    HyraxParams::new(shape.table_vars().into_iter().skip(1).max().unwrap_or(0))
}

/// The Hyrax generators for a model layer (transparent, derived from the shape).
pub fn model_hyrax_params(shape: &ModelShape, softmax: SoftmaxMode) -> HyraxParams {
    HyraxParams::new(shape.largest_vars(softmax))
}

/// A layer's quantized weights, row-major: `W_q` (`d_model × h·m`), `W_k` (`d_model ×
/// h_kv·m`), `W_v` (`d_model × h_kv·m_v`), the biases (`h·m`, `h_kv·m`, `h_kv·m_v`), `W_o`
/// (`h·m_v × d_model`), `b_o` (`d_model`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelWeights<T = i64> {
    /// `W_q`.
    pub queries: Vec<T>,
    /// `W_k`.
    pub keys: Vec<T>,
    /// `W_v`.
    pub values: Vec<T>,
    /// `b_q`.
    pub queries_bias: Vec<T>,
    /// `b_k`.
    pub keys_bias: Vec<T>,
    /// `b_v`.
    pub values_bias: Vec<T>,
    /// `W_o`.
    pub output: Vec<T>,
    /// `b_o`.
    pub output_bias: Vec<T>,
}

impl<T> ModelWeights<T> {
    /// The lengths of `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`.
    pub(crate) fn lengths(&self) -> [usize; 8] {
        [
            self.queries.len(),
            self.keys.len(),
            self.values.len(),
            self.queries_bias.len(),
            self.keys_bias.len(),
            self.values_bias.len(),
            self.output.len(),
            self.output_bias.len(),
        ]
    }
}

/// Commitments to a layer's weights, made once per model and reused by every proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelCommitment {
    /// To `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`, in that order.
    pub tables: Vec<HyraxCommitment>,
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
    /// The claimed output `Z = R + Y`, `s × d_model`, row-major, as the integers it is (at
    /// `X`'s scale; 8 bytes an entry in files instead of a field element's 32).
    pub output: Vec<i64>,
}

/// A model-layer proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelLayerProof {
    /// Commitments to `Q`, `K`, `V` (the attention's layout).
    pub intermediates: InputCommitments,
    /// Commitments to the attention's output `O` and the projected `Y` (the model layout).
    pub block: Vec<HyraxCommitment>,
    /// Commitments to the four projections' (low digit's) range multiplicities.
    pub multiplicities: Vec<HyraxCommitment>,
    /// For each projection whose shift takes two digits, in order: commitments to its high
    /// digits `D_hi` and their multiplicities.
    pub high_digits: Vec<HyraxCommitment>,
    /// `α = R̃(r_z)` (the residual `R`: `X` or `H`).
    pub residual_input: Fr,
    /// The `Q`, `K`, `V` and output projections (one batched sum-check for the four).
    pub projections: ProjectionsProof,
    /// Under grouped-query attention: the reductions of the `W_k`, `b_k`, `W_v`, `b_v`
    /// claims to the compact committed tables (empty otherwise).
    pub shared_heads: Vec<SharedHeadsProof>,
    /// Under rotary embeddings: commitments to `Q_pre`, `K_pre` and the two rotations'
    /// range multiplicities (empty otherwise).
    pub rotary: Vec<HyraxCommitment>,
    /// Under rotary embeddings: the rotations of `Q_pre` and `K_pre` (empty otherwise).
    pub rotations: Vec<RotaryProof>,
    /// Commitments to the output ranges' multiplicities: of the `Q`, `K`, `V` projections'
    /// outputs, then (under rotary embeddings) of the two rotations' (`Q`, `K`).
    pub output_multiplicities: Vec<HyraxCommitment>,
    /// The attention on `Q`, `K`, `V`; its final opening answers every claim above.
    pub layer: AttentionLayerProof,
}

/// Checks the lengths of `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for the first of the wrong length.
pub(crate) fn check_block_sizes<T>(
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

/// The padded `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o` tables, after
/// checking sizes.
pub(crate) fn padded_tables(
    shape: &ModelShape,
    input: &[i64],
    weights: &ModelWeights,
) -> Result<[Vec<i64>; 9], AttentionError> {
    check_block_sizes(shape, input.len(), weights)?;
    let a = &shape.attention;
    let d = shape.model_width;
    let (n, nv) = (a.model_width(), a.value_model_width());
    let (k, v) = shape.key_value_widths();
    let (sv, mv) = (a.seq_vars(), shape.model_vars());
    let (qv, vv) = (a.model_vars(), a.value_model_vars());
    let (kv, vkv) = (log2_ceil(k), log2_ceil(v));
    Ok([
        pad(input, a.seq_len, d, sv, mv),
        pad(&weights.queries, d, n, mv, qv),
        pad(&weights.keys, d, k, mv, kv),
        pad(&weights.values, d, v, mv, vkv),
        pad(&weights.queries_bias, 1, n, 0, qv),
        pad(&weights.keys_bias, 1, k, 0, kv),
        pad(&weights.values_bias, 1, v, 0, vkv),
        pad(&weights.output, nv, d, vv, mv),
        pad(&weights.output_bias, 1, d, 0, mv),
    ])
}

fn integers(num_vars: usize, values: &[i64]) -> PolynomialTable<'_> {
    PolynomialTable::Integers { num_vars, values }
}

fn commit_table(
    params: &HyraxParams,
    layout: usize,
    num_vars: usize,
    values: &[i64],
) -> Result<HyraxCommitment, AttentionError> {
    Ok(Hyrax::commit_small_with_columns(params, num_vars, table_column_vars(num_vars, layout), values)?)
}

/// Commits to a layer's weights (once per model).
///
/// # Errors
/// [`AttentionError::InvalidShape`] / [`AttentionError::WrongTensorSize`] for bad shapes or
/// tensors, [`AttentionError::Commitment`] for too few generators.
pub fn commit_model(
    params: &HyraxParams,
    shape: &ModelShape,
    weights: &ModelWeights,
) -> Result<ModelCommitment, AttentionError> {
    shape.validate()?;
    let empty_input = vec![0i64; shape.attention.seq_len * shape.model_width];
    let tables = padded_tables(shape, &empty_input, weights)?;
    let vars = shape.table_vars();
    let layout = shape.weights_layout();
    let commitments = tables
        .iter()
        .zip(vars)
        .skip(1)
        .map(|(table, n)| commit_table(params, layout, n, table))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ModelCommitment { tables: commitments })
}

impl ModelStatement {
    pub(crate) fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        transcript.append_u64(LABEL_MASK, u64::from(self.mask.code()));
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = (&self.input, &self.residual, &self.model).serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        absorb_integer_output(
            &crate::block::absorbed_output(&self.output, self.shape.model_width),
            transcript,
        );
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
        self.shape.validate()?;
        let expected = self.shape.attention.seq_len * self.shape.model_width;
        if self.output.len() != expected {
            return Err(AttentionError::WrongTensorSize {
                tensor: "Z",
                rows: self.shape.attention.seq_len,
                columns: self.shape.model_width,
                expected,
                got: self.output.len(),
            });
        }
        let (layout, weights_layout) = (self.shape.layout(self.softmax), self.shape.weights_layout());
        let vars = self.shape.table_vars();
        let tables: Vec<&HyraxCommitment> = std::iter::once(&self.input).chain(&self.model.tables).collect();
        let residual_shaped = match (self.shape.residual, &self.residual) {
            (Residual::LayerInput, None) => true,
            (Residual::HiddenState, Some(c)) => {
                let n = vars.first().copied().unwrap_or(0);
                c.num_vars == n && c.column_vars().ok() == Some(table_column_vars(n, layout))
            }
            _ => false,
        };
        if !residual_shaped {
            return Err(AttentionError::CheckFailed { step: "residual commitment" });
        }
        if tables.len() != vars.len()
            || tables.iter().zip(vars).enumerate().any(|(i, (c, n))| {
                let columns = table_column_vars(n, if i == 0 { layout } else { weights_layout });
                c.num_vars != n || c.column_vars().ok() != Some(columns)
            })
        {
            return Err(AttentionError::CheckFailed { step: "model commitment shape" });
        }
        Ok(())
    }
}

/// Absorbs the commitments the prover makes after the statement.
fn absorb_intermediates(
    intermediates: &InputCommitments,
    block: &[HyraxCommitment],
    multiplicities: &[HyraxCommitment],
    high_digits: &[HyraxCommitment],
    rotary: &[HyraxCommitment],
    output_multiplicities: &[HyraxCommitment],
    transcript: &mut Transcript,
) {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail.
    let _ = (intermediates, block, multiplicities, high_digits, rotary).serialize_compressed(&mut bytes);
    let _ = output_multiplicities.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_INTERMEDIATES, &bytes);
}

/// Positions in the final opening's list of `[Q, K, V, extra…]` (`extra_items` order).
mod slot {
    pub(super) const QUERIES: usize = 0;
    pub(super) const INPUT: usize = 3;
    /// `W_q, W_k, W_v, b_q, b_k, b_v, W_o, b_o` follow `X`.
    pub(super) const WEIGHTS: usize = 4;
    pub(super) const MULTIPLICITIES: usize = 12;
    pub(super) const ATTENTION_OUTPUT: usize = 16;
    pub(super) const PROJECTED: usize = 17;
    /// `D_hi, m_hi` of each two-digit projection follow, in projection order; then `H`
    /// under a hidden-state residual.
    pub(super) const HIGH_DIGITS: usize = 18;

    fn after_high_digits(shape: &super::ModelShape) -> usize {
        HIGH_DIGITS + 2 * shape.projections().iter().filter(|p| p.has_high_digit()).count()
    }

    /// The residual `R`'s slot: `X`, or `H` after the high digits.
    pub(super) fn residual(shape: &super::ModelShape) -> usize {
        match shape.residual {
            super::Residual::LayerInput => INPUT,
            super::Residual::HiddenState => after_high_digits(shape),
        }
    }

    /// `Q_pre, K_pre, m_q, m_k` under rotary embeddings: after `H`, if any.
    pub(super) fn rotary(shape: &super::ModelShape) -> Option<usize> {
        let hidden = usize::from(shape.residual == super::Residual::HiddenState);
        shape.rotary.map(|_| after_high_digits(shape) + hidden)
    }

    /// The output ranges' multiplicities (`m_Q, m_K, m_V`, then the rotations' `m_Q, m_K`):
    /// last.
    pub(super) fn output_ranges(shape: &super::ModelShape) -> usize {
        let hidden = usize::from(shape.residual == super::Residual::HiddenState);
        after_high_digits(shape) + hidden + 4 * usize::from(shape.rotary.is_some())
    }
}

/// The final opening's claims from the four projections and the residual.
fn block_opening_claims(
    claims: &[ProjectionClaims],
    rotations: &[RotaryClaims],
    shape: &ModelShape,
    r_z: &[Fr],
    alpha: Fr,
    z_value: Fr,
) -> Vec<OpeningClaim> {
    let (residual_slot, rotary_slot) = (slot::residual(shape), slot::rotary(shape));
    let claim = |polynomial: usize, c: &EvalClaim| OpeningClaim {
        polynomial,
        point: c.point.clone(),
        value: c.value,
    };
    let mut next_high = slot::HIGH_DIGITS;
    let mut out: Vec<OpeningClaim> = claims
        .iter()
        .enumerate()
        .flat_map(|(p, c)| {
            let high: Vec<OpeningClaim> = match &c.high {
                Some(h) => {
                    let (digits, counts) = (next_high, next_high + 1);
                    next_high += 2;
                    vec![
                        claim(digits, &h.at_remainder),
                        claim(digits, &h.at_lookup),
                        claim(counts, &h.multiplicities),
                    ]
                }
                None => Vec::new(),
            };
            let (input, output) = match (p, rotary_slot) {
                // Rotated: the Q and K projections output Q_pre and K_pre.
                (0 | 1, Some(base)) => (slot::INPUT, base + p),
                (0..=2, _) => (slot::INPUT, slot::QUERIES + p),
                _ => (slot::ATTENTION_OUTPUT, slot::PROJECTED),
            };
            // Weights W_q, W_k, W_v, then W_o; biases b_q, b_k, b_v, then b_o.
            let (weights, bias) = if p < 3 {
                (slot::WEIGHTS + p, slot::WEIGHTS + 3 + p)
            } else {
                (slot::WEIGHTS + 6, slot::WEIGHTS + 7)
            };
            [
                claim(output, &c.output),
                claim(input, &c.input),
                claim(weights, &c.weights),
                claim(bias, &c.bias),
                claim(slot::MULTIPLICITIES + p, &c.multiplicities),
            ]
            .into_iter()
            .chain(high)
        })
        .collect();
    // The rotations: Q_pre → Q and K_pre → K.
    if let Some(base) = rotary_slot {
        for (p, c) in rotations.iter().enumerate() {
            out.push(claim(base + p, &c.input));
            out.push(claim(slot::QUERIES + p, &c.output));
            out.push(claim(base + 2 + p, &c.multiplicities));
        }
    }
    // The output ranges: the projections' in order, then the rotations'.
    let ranges = claims
        .iter()
        .filter_map(|c| c.output_multiplicities.as_ref())
        .chain(rotations.iter().map(|c| &c.output_multiplicities));
    for (k, c) in ranges.enumerate() {
        out.push(claim(slot::output_ranges(shape) + k, c));
    }
    // The residual Z = R + Y at r_z.
    out.push(OpeningClaim { polynomial: residual_slot, point: r_z.to_vec(), value: alpha });
    out.push(OpeningClaim { polynomial: slot::PROJECTED, point: r_z.to_vec(), value: z_value - alpha });
    out
}

/// Whether `high_digits` holds `D_hi, m_hi` commitments of the right shapes for exactly the
/// two-digit projections.
fn high_digits_shaped(
    projections: &[ProjectionShape],
    high_digits: &[HyraxCommitment],
    shaped: &dyn Fn(&HyraxCommitment, usize) -> bool,
) -> bool {
    let expected: Vec<usize> = projections
        .iter()
        .filter(|p| p.has_high_digit())
        .flat_map(|p| [p.grid_vars(), p.digits().1 as usize])
        .collect();
    expected.len() == high_digits.len() && high_digits.iter().zip(expected).all(|(c, n)| shaped(c, n))
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

/// Runs the block on `X` (`s × d_model`, integers) with the committed weights and proves it;
/// `residual` is the hidden state `H` (`s × d_model`) under [`Residual::HiddenState`], `None`
/// under [`Residual::LayerInput`].
///
/// # Errors
/// Bad shapes or tensors (a residual that does not match the shape's kind), intermediate values the next step cannot take
/// ([`AttentionError::ValueOutOfRange`]: choose larger shifts), a model commitment of the
/// wrong shape, and the sub-protocols' errors.
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
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    shape.validate()?;
    require_proven_softmax(softmax)?;
    let tables = padded_tables(shape, input, weights)?;
    let hidden_state = match (shape.residual, residual) {
        (Residual::LayerInput, None) => None,
        (Residual::HiddenState, Some(h)) => {
            check_tensor_sizes(&[("H", h.len(), shape.attention.seq_len, shape.model_width)])?;
            let a = &shape.attention;
            Some(pad(h, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars()))
        }
        (Residual::LayerInput, Some(_)) => {
            return Err(AttentionError::InvalidShape(
                "a hidden state was given, but this block's residual adds to its input X".into(),
            ));
        }
        (Residual::HiddenState, None) => {
            return Err(AttentionError::InvalidShape(
                "this block's residual adds to a hidden state H: pass it beside X".into(),
            ));
        }
    };
    let residual_values = residual.unwrap_or(input);
    let projections = shape.projections();
    let expanded = shape.expanded_key_values(weights);
    let biases = [&weights.queries_bias, &expanded[1], &expanded[3]];
    let matrices = [&weights.queries, &expanded[0], &expanded[2]];
    let mut witnesses = Vec::with_capacity(4);
    for ((projection, w), b) in projections.iter().zip(matrices).zip(biases) {
        let output = compute_projection(projection, input, w, b)?;
        witnesses.push(ProjectionWitness {
            input: input.to_vec(),
            weights: w.clone(),
            bias: b.clone(),
            output,
        });
    }
    drop(expanded);
    let a = &shape.attention;
    // Rotary embeddings: the attention takes the rotated Q and K.
    let rotation_witnesses = match shape.rotary {
        Some(rotary) => {
            let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
            let mut out = Vec::with_capacity(2);
            for w in &witnesses[..2] {
                let rotated = compute_rotation(&rotation, &w.output)?;
                out.push(RotaryWitness { input: w.output.clone(), output: rotated });
            }
            out
        }
        None => Vec::new(),
    };
    let attention_input = |p: usize| match rotation_witnesses.get(p) {
        Some(r) => r.output.clone(),
        None => witnesses[p].output.clone(),
    };
    let inputs = AttentionInputs {
        queries: attention_input(0),
        keys: attention_input(1),
        values: witnesses[2].output.clone(),
    };
    let mut witness = witness_alongside_table(&shape.attention, mask, softmax, &inputs, Some(params))?;
    let attention_output = integer_output(&witness.output)?;
    let projected =
        compute_projection(&projections[3], &attention_output, &weights.output, &weights.output_bias)?;
    let output: Vec<i64> = residual_values.iter().zip(&projected).map(|(r, y)| r + y).collect();
    witnesses.push(ProjectionWitness {
        input: attention_output,
        weights: weights.output.clone(),
        bias: weights.output_bias.clone(),
        output: projected,
    });
    timings.witness = start.elapsed();

    let start = Instant::now();
    let layout = shape.layout(softmax);
    let vars = shape.table_vars();
    let statement = ModelStatement {
        shape: *shape,
        mask,
        softmax,
        input: commit_table(params, layout, vars[0], &tables[0])?,
        residual: hidden_state.as_ref().map(|h| commit_table(params, layout, vars[0], h)).transpose()?,
        model: model.clone(),
        output,
    };
    statement.validate()?;
    let padded = padded_inputs(&shape.attention, &inputs);
    let intermediates = commit_padded_inputs(params, &shape.attention, softmax, &padded)?;
    // Q_pre, K_pre and the rotations' multiplicities.
    let mut rotary_tables: Vec<Vec<i64>> = rotation_witnesses
        .iter()
        .map(|r| pad(&r.input, a.seq_len, a.model_width(), a.seq_vars(), a.model_vars()))
        .collect();
    let mut rotation_range_data: Vec<RotaryRanges> = Vec::with_capacity(2);
    if let Some(rotary) = shape.rotary {
        let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
        for r in &rotation_witnesses {
            rotation_range_data.push(rotation_ranges(&rotation, r)?);
        }
    }
    rotary_tables.extend(rotation_range_data.iter().map(|r| r.remainder_multiplicities.clone()));
    let rotary_vars = shape.rotary_vars();
    let rotary = rotary_tables
        .iter()
        .zip(&rotary_vars)
        .map(|(table, &n)| commit_table(params, layout, n, table))
        .collect::<Result<Vec<_>, _>>()?;
    let block_tables = [
        pad(&witnesses[3].input, a.seq_len, a.value_model_width(), a.seq_vars(), a.value_model_vars()),
        pad(&witnesses[3].output, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars()),
    ];
    let block_vars = [a.seq_vars() + a.value_model_vars(), vars[0]];
    let block = block_tables
        .iter()
        .zip(block_vars)
        .map(|(table, n)| commit_table(params, layout, n, table))
        .collect::<Result<Vec<_>, _>>()?;
    let ranges: Vec<ProjectionRanges> = witnesses
        .iter()
        .zip(&projections)
        .map(|(w, p)| projection_ranges(p, w))
        .collect::<Result<Vec<_>, _>>()?;
    let multiplicities = ranges
        .iter()
        .zip(&projections)
        .map(|(r, p)| commit_table(params, layout, p.digits().0 as usize, &r.low_multiplicities))
        .collect::<Result<Vec<_>, _>>()?;
    let mut high_digits = Vec::new();
    for (r, p) in ranges.iter().zip(&projections) {
        if p.has_high_digit() {
            high_digits.push(commit_table(params, layout, p.grid_vars(), &r.high_digits)?);
            high_digits.push(commit_table(params, layout, p.digits().1 as usize, &r.high_multiplicities)?);
        }
    }
    // The output ranges' multiplicities: the projections' (Q, K, V), then the rotations'.
    let output_range_tables: Vec<&[i64]> = ranges
        .iter()
        .zip(&projections)
        .filter(|(_, p)| p.output_bits.is_some())
        .map(|(r, _)| r.output_multiplicities.as_slice())
        .chain(rotation_range_data.iter().map(|r| r.output_multiplicities.as_slice()))
        .collect();
    let output_range_vars = shape.output_range_vars();
    let output_multiplicities = output_range_tables
        .iter()
        .zip(&output_range_vars)
        .map(|(table, &n)| commit_table(params, layout, n, table))
        .collect::<Result<Vec<_>, _>>()?;
    timings.commit = start.elapsed();

    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    absorb_intermediates(
        &intermediates,
        &block,
        &multiplicities,
        &high_digits,
        &rotary,
        &output_multiplicities,
        &mut transcript,
    );
    let r_z = transcript.challenge_fields(LABEL_RESIDUAL_POINT, vars[0]);
    let residual_table = hidden_state.as_ref().unwrap_or(&tables[0]);
    let residual_input = DenseMultilinearExtension::from_i64(vars[0], residual_table)?.evaluate(&r_z)?;
    transcript.append_field(LABEL_RESIDUAL_VALUE, &residual_input);
    let z_value = output_value(shape, &statement.output, &r_z)?;
    let witness_refs: Vec<&ProjectionWitness> = witnesses.iter().collect();
    let range_refs: Vec<&ProjectionRanges> = ranges.iter().collect();
    let (projection_proofs, mut claims) =
        prove_projections::<Plain>(&mut (), &projections, &witness_refs, &range_refs, &mut transcript)?;
    drop(witness_refs);
    drop(witnesses);
    let mut shared_heads = Vec::new();
    if shape.is_grouped() {
        // W_k, b_k, W_v, b_v: the expanded tables' claims become claims on the committed ones.
        let compact = [&tables[2], &tables[5], &tables[3], &tables[6]];
        for (k, (reduction, table)) in shape.shared_heads().iter().zip(compact).enumerate() {
            let c = &mut claims[1 + k / 2];
            let claim = if k % 2 == 0 { &mut c.weights } else { &mut c.bias };
            let (proof, reduced) =
                prove_shared_heads::<Plain>(&mut (), reduction, table, claim, &mut transcript)?;
            *claim = reduced;
            shared_heads.push(proof);
        }
    }
    let mut rotations = Vec::with_capacity(2);
    let mut rotation_claims = Vec::with_capacity(2);
    if let Some(params) = shape.rotary {
        let rotation = params.shape(a.seq_len, a.heads, a.head_dim);
        for (w, range_data) in rotation_witnesses.iter().zip(&rotation_range_data) {
            let (p, c) = prove_rotation::<Plain>(&mut (), &rotation, w, range_data, &mut transcript)?;
            rotations.push(p);
            rotation_claims.push(c);
        }
    }
    drop(rotation_witnesses);
    timings.statement = start.elapsed();

    let mut extra_items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> =
        vec![(integers(vars[0], &tables[0]), &statement.input)];
    for ((table, n), commitment) in tables.iter().zip(vars).skip(1).zip(&statement.model.tables) {
        extra_items.push((integers(n, table), commitment));
    }
    for ((r, commitment), projection) in ranges.iter().zip(&multiplicities).zip(&projections) {
        extra_items.push((integers(projection.digits().0 as usize, &r.low_multiplicities), commitment));
    }
    for ((table, n), commitment) in block_tables.iter().zip(block_vars).zip(&block) {
        extra_items.push((integers(n, table), commitment));
    }
    let wide = ranges.iter().zip(&projections).filter(|(_, p)| p.has_high_digit());
    for ((r, p), commitments) in wide.zip(high_digits.chunks_exact(2)) {
        extra_items.push((integers(p.grid_vars(), &r.high_digits), &commitments[0]));
        extra_items.push((integers(p.digits().1 as usize, &r.high_multiplicities), &commitments[1]));
    }
    if let (Some(h), Some(commitment)) = (&hidden_state, &statement.residual) {
        extra_items.push((integers(vars[0], h), commitment));
    }
    for ((table, &n), commitment) in rotary_tables.iter().zip(&rotary_vars).zip(&rotary) {
        extra_items.push((integers(n, table), commitment));
    }
    for ((table, &n), commitment) in
        output_range_tables.iter().zip(&output_range_vars).zip(&output_multiplicities)
    {
        extra_items.push((integers(n, table), commitment));
    }
    let committed = CommittedInputTables {
        commitments: &intermediates,
        tables: &padded,
        extra_items,
        extra_claims: block_opening_claims(&claims, &rotation_claims, shape, &r_z, residual_input, z_value),
        output_polynomial: Some(slot::ATTENTION_OUTPUT),
    };
    let (layer, _) = prove_chain(
        &shape.attention,
        mask,
        softmax,
        params,
        &mut witness,
        Some(committed),
        &mut transcript,
        &mut timings,
    )?;
    let proof = ModelLayerProof {
        intermediates,
        block,
        multiplicities,
        high_digits,
        residual_input,
        projections: projection_proofs,
        shared_heads,
        rotary,
        rotations,
        output_multiplicities,
        layer,
    };
    Ok((statement, proof, timings))
}

/// Verifies a model-layer proof from the statement alone (commitments and output).
///
/// # Errors
/// Statement errors, [`AttentionError::CheckFailed`] naming a failing step (`"openings"` for a
/// claim its commitment does not open to), and the sub-protocols' errors.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_model_layer(
    params: &HyraxParams,
    statement: &ModelStatement,
    proof: &ModelLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    statement.validate()?;
    require_proven_softmax(statement.softmax)?;
    let shape = &statement.shape;
    let attention = &shape.attention;
    proof.intermediates.validate(attention, statement.softmax)?;
    let layout = shape.layout(statement.softmax);
    let projections = shape.projections();
    let vars = shape.table_vars();
    let block_vars = [attention.seq_vars() + attention.value_model_vars(), vars[0]];
    let shaped = |c: &HyraxCommitment, n: usize| {
        c.num_vars == n && c.column_vars().ok() == Some(table_column_vars(n, layout))
    };
    let shared_heads = if shape.is_grouped() { 4 } else { 0 };
    let rotary_vars = shape.rotary_vars();
    let output_range_vars = shape.output_range_vars();
    if proof.multiplicities.len() != 4
        || proof.output_multiplicities.len() != output_range_vars.len()
        || proof.output_multiplicities.iter().zip(&output_range_vars).any(|(c, &n)| !shaped(c, n))
        || proof.projections.projections.len() != 4
        || proof.shared_heads.len() != shared_heads
        || proof.rotary.len() != rotary_vars.len()
        || proof.rotary.iter().zip(&rotary_vars).any(|(c, &n)| !shaped(c, n))
        || proof.rotations.len() != rotary_vars.len() / 2
        || proof.block.len() != 2
        || proof.multiplicities.iter().zip(&projections).any(|(c, p)| !shaped(c, p.digits().0 as usize))
        || !high_digits_shaped(&projections, &proof.high_digits, &shaped)
        || proof.block.iter().zip(block_vars).any(|(c, n)| !shaped(c, n))
    {
        return Err(AttentionError::CheckFailed { step: "model layer proof shape" });
    }
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    absorb_intermediates(
        &proof.intermediates,
        &proof.block,
        &proof.multiplicities,
        &proof.high_digits,
        &proof.rotary,
        &proof.output_multiplicities,
        &mut transcript,
    );
    let r_z = transcript.challenge_fields(LABEL_RESIDUAL_POINT, vars.first().copied().unwrap_or(0));
    transcript.append_field(LABEL_RESIDUAL_VALUE, &proof.residual_input);
    let z_value = output_value(shape, &statement.output, &r_z)?;
    let mut claims = verify_projections::<Plain>(&mut (), &projections, &proof.projections, &mut transcript)?;
    if shape.is_grouped() {
        for (k, (reduction, p)) in shape.shared_heads().iter().zip(&proof.shared_heads).enumerate() {
            let c = claims.get_mut(1 + k / 2).ok_or(AttentionError::CheckFailed { step: "shared heads" })?;
            let claim = if k % 2 == 0 { &mut c.weights } else { &mut c.bias };
            *claim = verify_shared_heads::<Plain>(&mut (), reduction, p, claim, &mut transcript)?;
        }
    }
    let mut rotation_claims = Vec::with_capacity(2);
    if let Some(params) = shape.rotary {
        let rotation = params.shape(attention.seq_len, attention.heads, attention.head_dim);
        for p in &proof.rotations {
            rotation_claims.push(verify_rotation::<Plain>(&mut (), &rotation, p, &mut transcript)?);
        }
    }
    let extra_commitments: Vec<&HyraxCommitment> = std::iter::once(&statement.input)
        .chain(&statement.model.tables)
        .chain(&proof.multiplicities)
        .chain(&proof.block)
        .chain(&proof.high_digits)
        .chain(&statement.residual)
        .chain(&proof.rotary)
        .chain(&proof.output_multiplicities)
        .collect();
    timings.protocol += start.elapsed();
    verify_chain(
        attention,
        statement.mask,
        statement.softmax,
        params,
        &[],
        &proof.layer,
        Some(CommittedInputs {
            commitments: &proof.intermediates,
            extra_commitments,
            extra_claims: block_opening_claims(
                &claims,
                &rotation_claims,
                shape,
                &r_z,
                proof.residual_input,
                z_value,
            ),
            output_polynomial: Some(slot::ATTENTION_OUTPUT),
        }),
        &mut transcript,
        &mut timings,
    )?;
    Ok(timings)
}

/// Malicious-prover regression (the audit's reproducer, shared/audit/
/// model_layer_and_softmax.patch): a cheating model-layer prover. The `V` projection's
/// committed output gets one entry `V' = V ± 1/2` (a field element; the remainder moves by
/// `2^(k_v−1)` and stays in range), chosen at the last key position `j0 = s − 1` of a head
/// whose probabilities `A[head][i][j0]` are all even, so `O' = A·V'` stays an integer table.
/// The output projection and the residual are then computed honestly on `O'`, which gives an
/// output `Z'` that differs from the block's `Z`. At 30b0ad6 [`verify_model_layer`] accepted it
/// in all four shape × mask cases; the projections' output ranges now reject it (the best the
/// cheater can look up is the honest, integer `V`).
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::too_many_arguments, missing_docs)]
pub(crate) mod audit_forgery {
    use super::*;
    use crate::layer::prove_chain_forged;
    use crate::projection::audit_forgery::{Override, honest_remainders, prove_projections_forged};
    use zkmha_field::{Field, fr_from_i64};

    pub(crate) struct Forged {
        pub(crate) statement: ModelStatement,
        pub(crate) proof: ModelLayerProof,
        pub(crate) honest_output: Vec<i64>,
        pub(crate) description: String,
    }

    pub(crate) fn prove_model_layer_forged(
        params: &HyraxParams,
        shape: &ModelShape,
        mask: MaskKind,
        softmax: SoftmaxMode,
        input: &[i64],
        weights: &ModelWeights,
        model: &ModelCommitment,
    ) -> Option<Forged> {
        assert!(shape.rotary.is_none() && !shape.is_grouped() && shape.residual == Residual::LayerInput);
        let tables = padded_tables(shape, input, weights).unwrap();
        let projections = shape.projections();
        let a = shape.attention;
        let mut witnesses = Vec::new();
        for (projection, (w, b)) in projections.iter().zip([
            (&weights.queries, &weights.queries_bias),
            (&weights.keys, &weights.keys_bias),
            (&weights.values, &weights.values_bias),
        ]) {
            let output = compute_projection(projection, input, w, b).unwrap();
            witnesses.push(ProjectionWitness {
                input: input.to_vec(),
                weights: w.clone(),
                bias: b.clone(),
                output,
            });
        }
        let inputs = AttentionInputs {
            queries: witnesses[0].output.clone(),
            keys: witnesses[1].output.clone(),
            values: witnesses[2].output.clone(),
        };
        let mut witness = witness_alongside_table(&a, mask, softmax, &inputs, Some(params)).unwrap();
        let honest_o = integer_output(&witness.output).unwrap();
        let honest_y =
            compute_projection(&projections[3], &honest_o, &weights.output, &weights.output_bias).unwrap();
        let honest_z: Vec<i64> = input.iter().zip(&honest_y).map(|(x, y)| x + y).collect();

        // Choose (head, c): every A[head][i][j0] even, and the change moves Z.
        let (s, sp, hp) = (a.seq_len, a.padded_seq_len(), a.padded_heads());
        let (mv, mvp, nv) = (a.value_head_dim, a.padded_value_head_dim(), a.value_model_width());
        let d_v = 1usize << a.value_model_vars();
        let width_hat = hp * mvp;
        let j0 = s - 1;
        let attention = witness.softmax.as_ref().unwrap().attention.clone();
        let prob = |h: usize, i: usize, j: usize| attention[(h * sp + i) * sp + j];
        let kv = projections[2].shift;
        let half = 1i64 << (kv - 1);
        let grid_width = 1usize << projections[2].output_vars();
        let remainders: Vec<i64> =
            honest_remainders(&projections[2], &witnesses[2]).into_iter().map(|d| d as i64).collect();
        let inv = Fr::from(1u64 << kv).inverse().unwrap();
        for h in 0..a.heads {
            if (0..s).any(|i| prob(h, i, j0) % 2 != 0) || (0..s).all(|i| prob(h, i, j0) == 0) {
                continue;
            }
            for c in 0..mv {
                let c0 = h * mv + c;
                let g = j0 * grid_width + c0;
                let eps = if remainders[g] >= half { half } else { -half };
                // O' = O + A·eps/2^kv = O ± A/2: integers.
                let mut o_forged = honest_o.clone();
                for i in 0..s {
                    o_forged[i * nv + c0] += prob(h, i, j0) * eps / (1i64 << kv);
                }
                let y_forged =
                    compute_projection(&projections[3], &o_forged, &weights.output, &weights.output_bias)
                        .unwrap();
                let z_forged: Vec<i64> = input.iter().zip(&y_forged).map(|(x, y)| x + y).collect();
                if z_forged == honest_z {
                    continue;
                }
                let delta = fr_from_i64(eps) * inv; // ±1/2 in the field
                // Patch the attention witness: V, V̂, Ô, O.
                witness.values[j0 * d_v + c0] += delta;
                witness.values_hat[j0 * width_hat + h * mvp + c] += delta;
                for i in 0..sp {
                    let shift = fr_from_i64(prob(h, i, j0)) * delta;
                    witness.output_hat[i * width_hat + h * mvp + c] += shift;
                    if i < s {
                        witness.output[i * nv + c0] += shift;
                    }
                }
                assert_eq!(integer_output(&witness.output).unwrap(), o_forged);
                // The V projection's forged remainders and field output.
                let mut lows = remainders.clone();
                lows[g] -= eps;
                let mut counts = vec![0i64; 1usize << kv];
                for &d in &lows {
                    counts[d as usize] += 1;
                }
                let v_padded: Vec<i64> = pad(&witnesses[2].output, s, nv, a.seq_vars(), a.value_model_vars());
                let mut v_field: Vec<Fr> = v_padded.iter().map(|&v| fr_from_i64(v)).collect();
                v_field[g] += delta;
                let description = format!(
                    "head {h}, V[{j0}][{c0}] = {} + ({eps}/2^{kv}), A[{h}][{j0}][{j0}] = {}, remainder {} -> {}",
                    witnesses[2].output[j0 * nv + c0],
                    prob(h, j0, j0),
                    remainders[g],
                    lows[g]
                );
                return Some(finish(
                    params,
                    shape,
                    mask,
                    softmax,
                    input,
                    &tables,
                    witnesses,
                    witness,
                    o_forged,
                    y_forged,
                    z_forged,
                    lows,
                    counts,
                    v_field,
                    honest_z,
                    model,
                    description,
                ));
            }
        }
        None
    }

    fn finish(
        params: &HyraxParams,
        shape: &ModelShape,
        mask: MaskKind,
        softmax: SoftmaxMode,
        input: &[i64],
        tables: &[Vec<i64>; 9],
        mut witnesses: Vec<ProjectionWitness>,
        mut witness: crate::AttentionWitness,
        o_forged: Vec<i64>,
        y_forged: Vec<i64>,
        z_forged: Vec<i64>,
        lows: Vec<i64>,
        counts: Vec<i64>,
        v_field: Vec<Fr>,
        honest_z: Vec<i64>,
        model: &ModelCommitment,
        description: String,
    ) -> Forged {
        let a = shape.attention;
        let projections = shape.projections();
        witnesses.push(ProjectionWitness {
            input: o_forged,
            weights: model_weights_output(tables, shape),
            bias: model_bias_output(tables, shape),
            output: y_forged,
        });
        let layout = shape.layout(softmax);
        let vars = shape.table_vars();
        let statement = ModelStatement {
            shape: *shape,
            mask,
            softmax,
            input: commit_table(params, layout, vars[0], &tables[0]).unwrap(),
            residual: None,
            model: model.clone(),
            output: z_forged,
        };
        statement.validate().unwrap();
        let inputs = AttentionInputs {
            queries: witnesses[0].output.clone(),
            keys: witnesses[1].output.clone(),
            values: witnesses[2].output.clone(),
        };
        let padded = padded_inputs(&a, &inputs);
        let mut intermediates = commit_padded_inputs(params, &a, softmax, &padded).unwrap();
        let v_vars = a.seq_vars() + a.value_model_vars();
        let v_mle = DenseMultilinearExtension::new(v_vars, v_field.clone()).unwrap();
        let attention_layout = crate::commitment_layout::layout_column_vars(&a, softmax);
        intermediates.values =
            Hyrax::commit_with_columns(params, &v_mle, table_column_vars(v_vars, attention_layout)).unwrap();
        let block_tables = [
            pad(&witnesses[3].input, a.seq_len, a.value_model_width(), a.seq_vars(), a.value_model_vars()),
            pad(&witnesses[3].output, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars()),
        ];
        let block_vars = [a.seq_vars() + a.value_model_vars(), vars[0]];
        let block: Vec<HyraxCommitment> = block_tables
            .iter()
            .zip(block_vars)
            .map(|(t, n)| commit_table(params, layout, n, t).unwrap())
            .collect();
        let ranges: Vec<ProjectionRanges> = witnesses
            .iter()
            .zip(&projections)
            .enumerate()
            .map(|(k, (w, p))| {
                if k == 2 {
                    ProjectionRanges {
                        low_multiplicities: counts.clone(),
                        ..projection_ranges(p, w).unwrap()
                    }
                } else {
                    projection_ranges(p, w).unwrap()
                }
            })
            .collect();
        let multiplicities: Vec<HyraxCommitment> = ranges
            .iter()
            .zip(&projections)
            .map(|(r, p)| commit_table(params, layout, p.digits().0 as usize, &r.low_multiplicities).unwrap())
            .collect();
        let mut high_digits = Vec::new();
        for (r, p) in ranges.iter().zip(&projections) {
            if p.has_high_digit() {
                high_digits.push(commit_table(params, layout, p.grid_vars(), &r.high_digits).unwrap());
                high_digits.push(
                    commit_table(params, layout, p.digits().1 as usize, &r.high_multiplicities).unwrap(),
                );
            }
        }
        let rotary: Vec<HyraxCommitment> = Vec::new();
        let range_vars = shape.output_range_vars();
        let range_tables: Vec<&[i64]> =
            ranges.iter().take(3).map(|r| r.output_multiplicities.as_slice()).collect();
        let output_multiplicities: Vec<HyraxCommitment> = range_tables
            .iter()
            .zip(&range_vars)
            .map(|(t, &n)| commit_table(params, layout, n, t).unwrap())
            .collect();
        let mut transcript = Transcript::new(DOMAIN);
        statement.append_to_transcript(&mut transcript);
        absorb_intermediates(
            &intermediates,
            &block,
            &multiplicities,
            &high_digits,
            &rotary,
            &output_multiplicities,
            &mut transcript,
        );
        let r_z = transcript.challenge_fields(LABEL_RESIDUAL_POINT, vars[0]);
        let residual_input =
            DenseMultilinearExtension::from_i64(vars[0], &tables[0]).unwrap().evaluate(&r_z).unwrap();
        transcript.append_field(LABEL_RESIDUAL_VALUE, &residual_input);
        let z_value = output_value(shape, &statement.output, &r_z).unwrap();
        let ov = Override { lows, output: v_field };
        let witness_refs: Vec<&ProjectionWitness> = witnesses.iter().collect();
        let range_refs: Vec<&ProjectionRanges> = ranges.iter().collect();
        let (projection_proofs, claims) = prove_projections_forged::<Plain>(
            &mut (),
            &projections,
            &witness_refs,
            &range_refs,
            &[None, None, Some(&ov), None],
            &mut transcript,
        )
        .unwrap();
        let mut extra_items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> =
            vec![(integers(vars[0], &tables[0]), &statement.input)];
        for ((table, n), commitment) in tables.iter().zip(vars).skip(1).zip(&statement.model.tables) {
            extra_items.push((integers(n, table), commitment));
        }
        for ((r, commitment), projection) in ranges.iter().zip(&multiplicities).zip(&projections) {
            extra_items.push((integers(projection.digits().0 as usize, &r.low_multiplicities), commitment));
        }
        for ((table, n), commitment) in block_tables.iter().zip(block_vars).zip(&block) {
            extra_items.push((integers(n, table), commitment));
        }
        let wide = ranges.iter().zip(&projections).filter(|(_, p)| p.has_high_digit());
        for ((r, p), commitments) in wide.zip(high_digits.chunks_exact(2)) {
            extra_items.push((integers(p.grid_vars(), &r.high_digits), &commitments[0]));
            extra_items.push((integers(p.digits().1 as usize, &r.high_multiplicities), &commitments[1]));
        }
        for ((t, &n), c) in range_tables.iter().zip(&range_vars).zip(&output_multiplicities) {
            extra_items.push((integers(n, t), c));
        }
        let committed = CommittedInputTables {
            commitments: &intermediates,
            tables: &padded,
            extra_items,
            extra_claims: block_opening_claims(&claims, &[], shape, &r_z, residual_input, z_value),
            output_polynomial: Some(slot::ATTENTION_OUTPUT),
        };
        let layer =
            prove_chain_forged(&a, mask, softmax, params, &mut witness, committed, &v_mle, &mut transcript)
                .unwrap();
        let proof = ModelLayerProof {
            intermediates,
            block,
            multiplicities,
            high_digits,
            residual_input,
            projections: projection_proofs,
            shared_heads: Vec::new(),
            rotary,
            rotations: Vec::new(),
            output_multiplicities,
            layer,
        };
        let _ = input;
        Forged { statement, proof, honest_output: honest_z, description }
    }

    /// `W_o` and `b_o` unpadded, read back from the padded tables.
    fn model_weights_output(tables: &[Vec<i64>; 9], shape: &ModelShape) -> Vec<i64> {
        let a = &shape.attention;
        let (rows, cols) = (a.value_model_width(), shape.model_width);
        let width = 1usize << shape.model_vars();
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| tables[7][r * width + c])
            .collect()
    }

    fn model_bias_output(tables: &[Vec<i64>; 9], shape: &ModelShape) -> Vec<i64> {
        tables[8][..shape.model_width].to_vec()
    }

    fn draw(rng: &mut ark_std::rand::rngs::StdRng, n: usize, bound: i64) -> Vec<i64> {
        use ark_std::rand::Rng;
        (0..n).map(|_| rng.gen_range(-bound..=bound)).collect()
    }

    /// Reproducer: a model-layer proof of a false output `Z' ≠ Z` that `verify_model_layer`
    /// accepts (the tests' own weights and shapes: `crates/attention/tests/model_layer.rs`).
    #[test]
    fn a_false_block_output_from_a_non_integer_value_is_rejected() {
        use ark_std::rand::SeedableRng;
        let mut found = false;
        for (s, h, m, mv, d) in [(5usize, 2usize, 4usize, 4usize, 12usize), (8, 3, 4, 2, 7)] {
            for mask in [MaskKind::Causal, MaskKind::None] {
                for seed in 0..6u64 {
                    let base = ModelShape {
                        attention: AttentionShape::new(s, h, m, mv).unwrap(),
                        model_width: d,
                        shifts: [6, 5, 7, 14],
                        residual: Residual::LayerInput,
                        key_value_heads: h,
                        rotary: None,
                    };
                    let scale = 1.0 / (m as f64 * 400.0);
                    let softmax = SoftmaxMode::Exponential(
                        crate::SoftmaxParams::for_score_scale(scale, base.attention.padded_seq_len())
                            .unwrap(),
                    );
                    let mut rng = ark_std::rand::rngs::StdRng::seed_from_u64(seed);
                    let a = &base.attention;
                    let weights = ModelWeights {
                        queries: draw(&mut rng, d * a.model_width(), 127),
                        keys: draw(&mut rng, d * a.model_width(), 127),
                        values: draw(&mut rng, d * a.value_model_width(), 127),
                        queries_bias: draw(&mut rng, a.model_width(), 1000),
                        keys_bias: draw(&mut rng, a.model_width(), 1000),
                        values_bias: draw(&mut rng, a.value_model_width(), 1000),
                        output: draw(&mut rng, a.value_model_width() * d, 127),
                        output_bias: draw(&mut rng, d, 1000),
                    };
                    let x = draw(&mut rng, s * d, 127);
                    let params = model_hyrax_params(&base, softmax);
                    let model = commit_model(&params, &base, &weights).unwrap();
                    // Sanity: the honest proof verifies.
                    let (honest_statement, honest_proof, _) =
                        prove_model_layer(&params, &base, mask, softmax, &x, None, &weights, &model).unwrap();
                    verify_model_layer(&params, &honest_statement, &honest_proof).unwrap();
                    let Some(forged) =
                        prove_model_layer_forged(&params, &base, mask, softmax, &x, &weights, &model)
                    else {
                        continue;
                    };
                    assert_eq!(forged.honest_output, honest_statement.output);
                    assert_ne!(forged.statement.output, honest_statement.output);
                    let result = verify_model_layer(&params, &forged.statement, &forged.proof);
                    let differing: Vec<(usize, i64, i64)> = forged
                        .statement
                        .output
                        .iter()
                        .zip(&forged.honest_output)
                        .enumerate()
                        .filter(|(_, (a, b))| a != b)
                        .map(|(k, (a, b))| (k, *b, *a))
                        .collect();
                    println!(
                        "model layer s={s} h={h} m={m} m_v={mv} d={d} {mask:?} seed {seed}: {}; \
                         {} of {} entries of Z differ (index, honest, forged): {:?}; verify_model_layer: {:?}",
                        forged.description,
                        differing.len(),
                        forged.statement.output.len(),
                        &differing[..differing.len().min(6)],
                        result.as_ref().map(|_| "accepted")
                    );
                    assert_eq!(
                        result.map(|_| ()),
                        Err(AttentionError::CheckFailed { step: "projection output range" }),
                        "s={s} {mask:?} seed {seed}"
                    );
                    found = true;
                    break;
                }
            }
        }
        // Each of the four shape × mask cases had an instance the old verifier accepted.
        assert!(found, "no instance of the attack found: the test would not tell");
    }
}
