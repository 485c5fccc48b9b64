//! The attention block of a model layer, proven in either mode ([`Plain`](crate::mode::Plain)
//! or [`Zk`](crate::mode::Zk)) from one code path: the `Q`, `K`, `V` projections
//! ([`crate::projection`]), the grouped-query reductions ([`crate::grouped_query`]), the
//! rotations ([`crate::rope`]), the attention ([`crate::chain`]), the output projection and the
//! residual — and, when the shape says so, the layer's second half: the norm after the
//! attention and the MLP ([`crate::mlp`]) with its residual — every claim keyed by the
//! polynomial it is about ([`BlockPolynomial`]) and answered by one final opening.
//!
//! ```text
//! relation   X = norm(H) when the shape proves the norm (pre-norm decoders: RMSNorm or
//!            LayerNorm in fixed point, crate::norm, γ and β in the model commitment);
//!            Q = round((X·W_q + b_q) / 2^k), K, V likewise (rotated under RoPE);
//!            O = attention(Q, K, V);  Y = round((O·W_o + b_o) / 2^k_o);  Z = R + Y,
//!            R = X (post-norm) or the committed hidden state H (pre-norm);
//!            with the MLP proven (pre-norm, norm proven): X₂ = norm₂(Z), Y₂ = MLP(X₂),
//!            H' = Z + Y₂ the output, Z and X₂ committed by the proof;
//!            with output norms (Gemma 2, 3): Z = H + norm_a(Y), H' = Z + norm_f(Y₂);
//!            post-norm (BERT: R = X, no norm before the attention, ModelShape::post_norm):
//!            Z = X + Y, X₂ = norm₂(Z), Y₂ = MLP(X₂), S₂ = X₂ + Y₂, H' = norm_p(S₂) the
//!            output (Z, X₂, S₂ committed; the second residual adds to X₂, not Z);
//!            with the QK-norm (Gemma 3, under RoPE): Q_pre = norm_q(Q_proj) and K_pre =
//!            norm_k(K_proj) over each head's m entries (the s × h·m table read as (s·h) × m),
//!            then the rotations
//! statement  shapes, mask, softmax mode, commitments to X (and H), the model commitment (every
//!            weight table: the attention's, γ and β, then γ₂, β₂ and the MLP's W and b, then
//!            the output norms' γ and β, then γ_q, β_q, γ_k, β_k, then γ_p, β_p), the output Z
//!            (or H') —
//!            absorbed first, after the mode's name
//! proof      commitments to every other polynomial (proof_polynomials order), absorbed; the
//!            mode's session (zero knowledge: one commitment to every sum-check's mask,
//!            block_zk_schedule); every lookup of the layer in one batch (crate::lookup_batch,
//!            block_lookup_statements), each part's claims to its step below; the norm from H
//!            to X (when proven); the norm from Z to X₂
//!            and the MLP (when proven); the post-norm from S₂ to H' (its claim on a public
//!            H' shown equal to H'’s MLE at its point: M::prove_zero; on a committed H',
//!            opened); the output norms, then the QK-norm's two (when
//!            proven; the residuals' claims are on the normed outputs); r_z ← V; α = R̃(r_z) sent (residual: Ỹ(r_z) =
//!            Z̃(r_z) − α, Z̃ the public output's MLE; with the MLP ζ = Z̃(r_z) sent, a claim on
//!            the committed Z, and Ỹ(r_z) = ζ − α, Ỹ₂(r_z) = H̃′(r_z) − ζ; post-norm: ζ, then
//!            ξ = X̃₂(r_z), σ = S̃₂(r_z) sent, Ỹ₂(r_z) = σ − ξ, no claim on H' at r_z);
//!            the four projections; the grouped-query reductions; the rotations; r ← V,
//!            Õ(r) sent; the attention's steps from Õ(r) to Q, K, V and the softmax's columns;
//!            one opening of every claim (plain: multi-point opening; zero knowledge: its
//!            hiding twin); the session's close (zero knowledge: the masks' openings, then every
//!            deferred group equation at once)
//! ```
//!
//! Plain and zero-knowledge proofs differ only in the [`Mode`]'s types: a claim's value is a
//! field element or a commitment, relations are checked at once or proven, commitments are
//! binding or hiding (the model owner keeps the weight commitments' blinds,
//! [`commit_model_with`]).

use crate::chain::{
    ChainClaims, ChainProofOf, chain_zk_schedule, opening_claims, prove_chain_steps, verify_chain_steps,
};
use crate::commitment_layout::{layout_column_vars, table_column_vars};
use crate::common::check_tensor_sizes;
use crate::grouped_query::{SharedHeadsProofOf, prove_shared_heads, verify_shared_heads};
use crate::layer::{LABEL_OUTPUT_POINT, ProverTimings, VerifierTimings, matrix_mle, witness_alongside_table};
use crate::lookup_batch::{
    LookupStatement, lookup_parts_zk_schedule, prove_lookup_parts, verify_lookup_parts,
};
use crate::mlp::{
    MlpInputs, MlpPolynomial, MlpProjection, MlpProof, MlpWitness, compute_mlp, mlp_lookup_statements,
    mlp_polynomials, mlp_ranges, mlp_tables, mlp_zk_schedule, prove_mlp, verify_mlp,
};
use crate::mode::{Mode, ProverRng};
use crate::model_layer::{BlockHalf, MlpTable};
use crate::model_layer::{
    LayerOutput, ModelCommitment, ModelShape, ModelStatement, ModelWeights, OutputKind, check_block_sizes,
    integer_output, output_value, padded_tables, require_proven_softmax,
};
use crate::norm::{
    NormClaims, NormProofOf, NormRanges, NormShape, NormWitness, compute_norm, norm_lookup_statements,
    norm_lookups, norm_polynomial_vars, norm_polynomials, norm_ranges, norm_tables, norm_zk_schedule,
    prove_norm, verify_norm,
};
use crate::projection::{
    ProjectionClaims, ProjectionInputs, ProjectionRanges, ProjectionWitness, ProjectionsProofOf,
    compute_projection, pad, projection_lookup_statements, projection_ranges, projection_zk_schedule,
    prove_projections, verify_projections,
};
use crate::rope::{
    RotaryClaims, RotaryProofOf, RotaryRanges, RotaryWitness, RotationTables, compute_rotation,
    prove_rotation, rotation_lookup_statements, rotation_ranges, rotation_zk_schedule, verify_rotation,
};
use crate::softmax::{
    SoftmaxLookupOutcome, SoftmaxProverData, softmax_column_tables, softmax_lookup_statements,
    softmax_lookups, softmax_multiplicities, softmax_tables,
};
use crate::{AttentionError, AttentionInputs, MaskKind, Residual, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::Instant;
use zkmha_field::{Fr, One};
use zkmha_lookup::{LookupProofOf, LookupTable};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{HyraxCommitment, HyraxParams, OpeningClaim, PolynomialTable};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::{LinearValue, MaskSchedule, zk_multi_opening_schedule};

const DOMAIN: &[u8] = b"attention-model-block";
const LABEL_MODE: &[u8] = b"attention/block/mode";
const LABEL_COMMITMENTS: &[u8] = b"attention/block/commitments";
const LABEL_RESIDUAL_POINT: &[u8] = b"attention/block/residual-point";
const LABEL_RESIDUAL_VALUE: &[u8] = b"attention/block/residual-input";
const LABEL_MIDDLE_VALUE: &[u8] = b"attention/block/middle-hidden-state";
const LABEL_OUTPUT_VALUE: &[u8] = b"attention/block/output-value";
const LABEL_COMMITTED_OUTPUT: &[u8] = b"attention/block/committed-output";
const STEP_SHAPE: &str = "model layer proof shape";
const STEP_CLAIMS: &str = "block claims";
/// The post-norm's claim on a public output against the public integers.
const STEP_PUBLIC_OUTPUT: &str = "post-norm public output";
const LABEL_POST_NORM_VALUES: &[u8] = b"attention/block/post-norm-residual";

/// A polynomial a block (or an attention layer, `crate::layer`: its `Q`, `K`, `V` and softmax
/// columns) commits to: what every claim of the final opening is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockPolynomial {
    /// The layer input `X` (`s × d_model`).
    Input,
    /// The hidden state `H` the residual adds to (pre-norm blocks).
    HiddenState,
    /// The layer's output when the statement commits to it ([`LayerOutput::Committed`]: a
    /// chain's boundary, the next layer's `HiddenState`).
    Output,
    /// A weight table, in [`ModelCommitment`] order: `W_q, W_k, W_v, b_q, b_k, b_v, W_o, b_o`.
    Weight(usize),
    /// The attention's input `Q`, `K` or `V` (0, 1, 2).
    AttentionInput(usize),
    /// A proven-softmax column (`crate::softmax::softmax_commitment_list` order).
    Softmax(usize),
    /// The attention's output `O`.
    AttentionOutput,
    /// The output projection's `Y`.
    Projected,
    /// Projection `p`'s (low digit's) range multiplicities.
    LowMultiplicities(usize),
    /// Projection `p`'s high remainder digits (two-digit shifts).
    HighDigits(usize),
    /// Their range multiplicities.
    HighMultiplicities(usize),
    /// Under RoPE: the `Q` or `K` projection's output before its rotation (0, 1).
    RotaryInput(usize),
    /// The rotation's remainder multiplicities (0, 1).
    RotaryMultiplicities(usize),
    /// Output range `k`'s multiplicities: the `Q`, `K`, `V` projections', then the rotations'.
    OutputMultiplicities(usize),
    /// A polynomial of the proven norm from `H` to `X`.
    Norm(NormPolynomial),
    /// The hidden state between the attention and the MLP, `Z = H + Y` (blocks that prove
    /// their MLP: the output is then `H' = Z + Y₂`).
    MiddleHiddenState,
    /// The MLP's input `X₂ = norm₂(Z)`.
    MlpInput,
    /// A polynomial of the norm from `Z` to `X₂`.
    MlpNorm(NormPolynomial),
    /// A polynomial of the MLP (`crate::mlp::mlp_polynomials`; its input and weights are
    /// `MlpInput` and `Weight(_)`).
    Mlp(MlpPolynomial),
    /// A half's normed output, `norm_a(Y)` or `norm_f(Y₂)`: what its residual adds (blocks
    /// with [`crate::model_layer::OutputNorms`]).
    NormedOutput(BlockHalf),
    /// A polynomial of the norm on a half's output.
    OutputNorm(BlockHalf, NormPolynomial),
    /// Under the QK-norm: the `Q` or `K` projection's output (0, 1), the norm's input (its
    /// output is the rotation's input, [`BlockPolynomial::RotaryInput`]).
    HeadNormInput(usize),
    /// A polynomial of the QK-norm on `Q` or `K` (0, 1).
    HeadNorm(usize, NormPolynomial),
    /// The post-norm's input `S₂ = X₂ + Y₂` (BERT's layer before `output.LayerNorm`; blocks
    /// with [`ModelShape::post_norm`]).
    PostNormInput,
    /// A polynomial of the post-norm from `S₂` to the output `H'`.
    PostNorm(NormPolynomial),
}

pub use crate::norm::NormPolynomial;

/// The polynomials the statement commits to, in order: `X`, `H` (pre-norm), the weights, the
/// output (when committed).
pub fn statement_polynomials(shape: &ModelShape, output: OutputKind) -> Vec<BlockPolynomial> {
    let mut out = vec![BlockPolynomial::Input];
    if shape.has_hidden_state() {
        out.push(BlockPolynomial::HiddenState);
    }
    out.extend((0..shape.table_vars().len() - 1).map(BlockPolynomial::Weight));
    if output == OutputKind::Committed {
        out.push(BlockPolynomial::Output);
    }
    out
}

/// The polynomials the proof commits to, in the order of [`ModelBlockProof::commitments`].
pub fn proof_polynomials(shape: &ModelShape) -> Vec<BlockPolynomial> {
    use BlockPolynomial::*;
    let projections = shape.projections();
    let mut out: Vec<BlockPolynomial> = (0..3).map(AttentionInput).collect();
    out.extend((0..8).map(Softmax));
    out.extend([AttentionOutput, Projected]);
    out.extend((0..4).map(LowMultiplicities));
    for (p, projection) in projections.iter().enumerate() {
        if projection.has_high_digit() {
            out.extend([HighDigits(p), HighMultiplicities(p)]);
        }
    }
    if shape.rotary.is_some() {
        out.extend([RotaryInput(0), RotaryInput(1), RotaryMultiplicities(0), RotaryMultiplicities(1)]);
    }
    out.extend((0..shape.output_range_vars().len()).map(OutputMultiplicities));
    if let Some(norm) = shape.norm_shape() {
        out.extend(norm_polynomials(&norm).into_iter().map(Norm));
    }
    if let (Some(norm), Some(mlp)) = (shape.mlp_norm_shape(), shape.mlp_shape()) {
        out.extend([MiddleHiddenState, MlpInput]);
        out.extend(norm_polynomials(&norm).into_iter().map(MlpNorm));
        out.extend(mlp_polynomials(&mlp).into_iter().map(Mlp));
    }
    if let Some(norm) = shape.post_norm_shape() {
        out.push(PostNormInput);
        out.extend(norm_polynomials(&norm).into_iter().map(PostNorm));
    }
    for half in BlockHalf::BOTH {
        if let Some(norm) = shape.output_norm_shape(half) {
            out.push(NormedOutput(half));
            out.extend(norm_polynomials(&norm).into_iter().map(|part| OutputNorm(half, part)));
        }
    }
    for p in 0..2 {
        if let Some(norm) = shape.query_key_norm_shape(p) {
            out.push(HeadNormInput(p));
            out.extend(norm_polynomials(&norm).into_iter().map(|part| HeadNorm(p, part)));
        }
    }
    out
}

/// Column variables the zero-knowledge mode adds to the layout of the polynomials the proof
/// commits to ([`proof_polynomials`]) and of the weights (a hiding key's commitments,
/// [`weight_column_vars`]; the statement's `X`, `H` and a chain's boundaries keep theirs).
/// A hiding commitment blinds every row, so a row is a point in the proof whatever it holds,
/// while the opening's inner-product argument is logarithmic in the row's width: two more
/// variables cut those commitments to a quarter of their rows (measured in
/// docs/BENCHMARKS.md, `zkmha bench block`).
pub const ZK_EXTRA_COLUMNS: usize = 2;

/// The sizes and layouts of a block's committed polynomials (the softmax's table sizes read
/// once).
struct Layouts<'s> {
    shape: &'s ModelShape,
    softmax: SoftmaxMode,
    /// Column variables added to the proof's polynomials' layouts (zero knowledge).
    extra_columns: usize,
    /// The softmax's eight columns' variables (`crate::softmax::softmax_commitment_list`
    /// order); `None` for linear attention.
    softmax_vars: Option<[usize; 8]>,
}

impl<'s> Layouts<'s> {
    /// # Errors
    /// Softmax parameters out of range.
    fn new<M: Mode>(shape: &'s ModelShape, softmax: SoftmaxMode) -> Result<Self, AttentionError> {
        let softmax_vars = match softmax {
            SoftmaxMode::Exponential(params) => {
                let (n, n_rows) = crate::softmax::tensor_vars(&shape.attention);
                let tables = softmax_tables(&params)?;
                Some([
                    n,
                    n,
                    n,
                    n,
                    n_rows,
                    tables.exponent.num_vars(),
                    tables.remainder.num_vars(),
                    tables.row_sum.num_vars(),
                ])
            }
            SoftmaxMode::Identity => None,
        };
        let extra_columns = if M::HIDING { ZK_EXTRA_COLUMNS } else { 0 };
        Ok(Self { shape, softmax, extra_columns, softmax_vars })
    }

    /// The `(variables, column variables)` of a committed polynomial: its size from the shape,
    /// its Hyrax layout the weights' (from their sizes alone), the attention's (`Q`, `K`, `V`,
    /// the softmax's columns) or the block's.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] for a key the shape does not have.
    fn of(&self, key: BlockPolynomial) -> Result<(usize, usize), AttentionError> {
        let (num_vars, columns) =
            polynomial_layout(self.shape, self.softmax, self.softmax_vars.as_ref(), key)?;
        let widened = match key {
            // Boundaries keep one layout in every layer of a chain, whatever the mode.
            BlockPolynomial::Input | BlockPolynomial::HiddenState | BlockPolynomial::Output => columns,
            _ => (columns + self.extra_columns).min(num_vars),
        };
        Ok((num_vars, widened))
    }
}

fn polynomial_layout(
    shape: &ModelShape,
    softmax: SoftmaxMode,
    softmax_vars: Option<&[usize; 8]>,
    key: BlockPolynomial,
) -> Result<(usize, usize), AttentionError> {
    use BlockPolynomial::*;
    let a = &shape.attention;
    let vars = shape.table_vars();
    let projections = shape.projections();
    let missing = || AttentionError::CheckFailed { step: STEP_SHAPE };
    let projection = |p: usize| projections.get(p).ok_or_else(missing);
    let attention_layout = layout_column_vars(a, softmax);
    let (num_vars, layout) = match key {
        Input | HiddenState | Output | Projected => (vars[0], shape.layout(softmax)),
        Weight(i) => (*vars.get(1 + i).ok_or_else(missing)?, shape.weights_layout()),
        AttentionInput(0 | 1) => (a.seq_vars() + a.model_vars(), attention_layout),
        AttentionInput(2) => (a.seq_vars() + a.value_model_vars(), attention_layout),
        AttentionInput(_) => return Err(missing()),
        Softmax(i) => (*softmax_vars.and_then(|v| v.get(i)).ok_or_else(missing)?, attention_layout),
        AttentionOutput => (a.seq_vars() + a.value_model_vars(), shape.layout(softmax)),
        LowMultiplicities(p) => (projection(p)?.digits().0 as usize, shape.layout(softmax)),
        HighDigits(p) => (projection(p)?.grid_vars(), shape.layout(softmax)),
        HighMultiplicities(p) => (projection(p)?.digits().1 as usize, shape.layout(softmax)),
        RotaryInput(i) | RotaryMultiplicities(i) => {
            let rotary = shape.rotary_vars();
            let index = if matches!(key, RotaryInput(_)) { i } else { 2 + i };
            (*rotary.get(index).filter(|_| i < 2).ok_or_else(missing)?, shape.layout(softmax))
        }
        OutputMultiplicities(k) => {
            (*shape.output_range_vars().get(k).ok_or_else(missing)?, shape.layout(softmax))
        }
        Norm(part) => {
            (norm_polynomial_vars(&shape.norm_shape().ok_or_else(missing)?, part)?, shape.layout(softmax))
        }
        MlpNorm(part) => {
            (norm_polynomial_vars(&shape.mlp_norm_shape().ok_or_else(missing)?, part)?, shape.layout(softmax))
        }
        MiddleHiddenState | MlpInput => (vars[0], shape.layout(softmax)),
        PostNormInput => {
            shape.post_norm.ok_or_else(missing)?;
            (vars[0], shape.layout(softmax))
        }
        PostNorm(part) => (
            norm_polynomial_vars(&shape.post_norm_shape().ok_or_else(missing)?, part)?,
            shape.layout(softmax),
        ),
        NormedOutput(half) => {
            shape.output_norms.of(half).ok_or_else(missing)?;
            (vars[0], shape.layout(softmax))
        }
        OutputNorm(half, part) => (
            norm_polynomial_vars(&shape.output_norm_shape(half).ok_or_else(missing)?, part)?,
            shape.layout(softmax),
        ),
        HeadNormInput(p) => {
            shape.query_key_norm_shape(p).ok_or_else(missing)?;
            (a.seq_vars() + a.model_vars(), shape.layout(softmax))
        }
        HeadNorm(p, part) => (
            norm_polynomial_vars(&shape.query_key_norm_shape(p).ok_or_else(missing)?, part)?,
            shape.layout(softmax),
        ),
        Mlp(key) => (
            shape.mlp_shape().and_then(|m| m.polynomial_vars(key)).ok_or_else(missing)?,
            shape.layout(softmax),
        ),
    };
    Ok((num_vars, table_column_vars(num_vars, layout)))
}

/// Every lookup of a block, the layer's one batch ([`crate::lookup_batch`]), in parts and in
/// proof order: the norm from `H` to `X`, the MLP's norm and the MLP (its projections and its
/// activation), the post-norm, the output norms, the QK-norms, the four projections, the two
/// rotations, the softmax — each part as its sub-protocol states it.
///
/// # Errors
/// As [`ModelShape::validate`], a softmax mode other than the proven one.
pub fn block_lookup_statements(
    shape: &ModelShape,
    softmax: SoftmaxMode,
) -> Result<Vec<Vec<LookupStatement<'static>>>, AttentionError> {
    shape.validate()?;
    let SoftmaxMode::Exponential(params) = softmax else {
        return Err(AttentionError::CheckFailed { step: "softmax mode" });
    };
    let a = &shape.attention;
    let mut parts = Vec::new();
    if let Some(norm) = shape.norm_shape() {
        parts.push(norm_lookup_statements(&norm)?);
    }
    if let (Some(norm), Some(mlp)) = (shape.mlp_norm_shape(), shape.mlp_shape()) {
        parts.push(norm_lookup_statements(&norm)?);
        parts.push(mlp_lookup_statements(&mlp)?);
    }
    if let Some(norm) = shape.post_norm_shape() {
        parts.push(norm_lookup_statements(&norm)?);
    }
    for half in BlockHalf::BOTH {
        if let Some(norm) = shape.output_norm_shape(half) {
            parts.push(norm_lookup_statements(&norm)?);
        }
    }
    for p in 0..2 {
        if let Some(norm) = shape.query_key_norm_shape(p) {
            parts.push(norm_lookup_statements(&norm)?);
        }
    }
    parts.push(projection_lookup_statements(&shape.projections())?);
    if let Some(rotary) = shape.rotary {
        let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
        for _ in 0..2 {
            parts.push(rotation_lookup_statements(&rotation)?);
        }
    }
    parts.push(softmax_lookup_statements(a, &params)?);
    Ok(parts)
}

/// Every masked sum-check of a zero-knowledge block proof, in proof order: the first norm's,
/// the second norm's and the MLP's (when proven), the projections', the rotations', the
/// attention's steps', the final opening's (which depends on the output's kind: a committed
/// output is one more polynomial opened).
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape out of the limits, softmax parameters out of
/// range.
pub fn block_zk_schedule(
    shape: &ModelShape,
    softmax: SoftmaxMode,
    output: OutputKind,
) -> Result<MaskSchedule, AttentionError> {
    shape.validate()?;
    let a = &shape.attention;
    let mut schedule = lookup_parts_zk_schedule(&block_lookup_statements(shape, softmax)?);
    if let Some(norm) = shape.norm_shape() {
        schedule.extend(norm_zk_schedule(&norm)?);
    }
    if let (Some(norm), Some(mlp)) = (shape.mlp_norm_shape(), shape.mlp_shape()) {
        schedule.extend(norm_zk_schedule(&norm)?);
        schedule.extend(mlp_zk_schedule(&mlp)?);
    }
    if let Some(norm) = shape.post_norm_shape() {
        schedule.extend(norm_zk_schedule(&norm)?);
    }
    for half in BlockHalf::BOTH {
        if let Some(norm) = shape.output_norm_shape(half) {
            schedule.extend(norm_zk_schedule(&norm)?);
        }
    }
    for p in 0..2 {
        if let Some(norm) = shape.query_key_norm_shape(p) {
            schedule.extend(norm_zk_schedule(&norm)?);
        }
    }
    schedule.extend(projection_zk_schedule(&shape.projections())?);
    if let Some(rotary) = shape.rotary {
        let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
        for _ in 0..2 {
            schedule.extend(rotation_zk_schedule(&rotation)?);
        }
    }
    schedule.extend(chain_zk_schedule(a, softmax)?);
    // The sizes only (the layouts do not change them).
    let layouts = Layouts::new::<crate::mode::Plain>(shape, softmax)?;
    let sizes = statement_polynomials(shape, output)
        .into_iter()
        .chain(proof_polynomials(shape))
        .map(|key| layouts.of(key).map(|(n, _)| n))
        .collect::<Result<Vec<_>, _>>()?;
    schedule.push(zk_multi_opening_schedule(&sizes));
    Ok(MaskSchedule(schedule))
}

/// The Hyrax generators a block proof of mode `M` needs: the committed tables' and, in zero
/// knowledge, one per coefficient of every mask (transparent, derived from the shape; enough
/// for either output kind, so a chain's layers and its last layer share them).
///
/// # Errors
/// As [`block_zk_schedule`].
pub fn block_hyrax_params<M: Mode>(
    shape: &ModelShape,
    softmax: SoftmaxMode,
) -> Result<HyraxParams, AttentionError> {
    shape.validate()?;
    // Generators for the widest layout: 2^⌈n/2⌉ of them for n variables.
    let extra = if M::HIDING { 2 * ZK_EXTRA_COLUMNS } else { 0 };
    let tables = shape.largest_vars(softmax) + extra;
    let mut masks = 0;
    if M::HIDING {
        for kind in [OutputKind::Public, OutputKind::Committed] {
            masks = masks.max(2 * block_zk_schedule(shape, softmax, kind)?.generator_vars());
        }
    }
    Ok(HyraxParams::new(tables.max(masks)))
}

/// The column variables of a weight table of `num_vars` variables in mode `M`: the weights'
/// layout from their sizes alone ([`ModelShape::weights_layout`]), [`ZK_EXTRA_COLUMNS`] wider
/// for a hiding key (a hiding row is a point in the key and a base of every verification's
/// MSM, and the zero-knowledge opening is logarithmic in the row width; the generators cover
/// it: [`block_hyrax_params`]).
pub fn weight_column_vars<M: Mode>(shape: &ModelShape, num_vars: usize) -> usize {
    let extra = if M::HIDING { ZK_EXTRA_COLUMNS } else { 0 };
    (table_column_vars(num_vars, shape.weights_layout()) + extra).min(num_vars)
}

/// Commits to a layer's weights in mode `M` (once per model): binding commitments, or hiding
/// ones whose blinds (returned, one per table) the model owner keeps to prove with.
///
/// # Errors
/// [`AttentionError::InvalidShape`] / [`AttentionError::WrongTensorSize`] for bad shapes or
/// tensors, [`AttentionError::Commitment`] for too few generators.
pub fn commit_model_with<M: Mode>(
    params: &HyraxParams,
    shape: &ModelShape,
    weights: &ModelWeights,
    rng: &mut dyn ProverRng,
) -> Result<(ModelCommitment, Vec<M::Blinds>), AttentionError> {
    shape.validate()?;
    let empty_input = vec![0i64; shape.attention.seq_len * shape.model_width];
    let tables = padded_tables(shape, &empty_input, weights)?;
    let mut commitments = Vec::with_capacity(8);
    let mut blinds = Vec::with_capacity(8);
    for (table, n) in tables.iter().zip(shape.table_vars()).skip(1) {
        let (c, b) = M::commit_table(params, n, weight_column_vars::<M>(shape, n), table, rng)?;
        commitments.push(c);
        blinds.push(b);
    }
    Ok((ModelCommitment { tables: commitments }, blinds))
}

/// A block proof in mode `M`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelBlockProof<M: Mode> {
    /// [`crate::PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// Commitments to the polynomials of [`proof_polynomials`], in its order.
    pub commitments: Vec<HyraxCommitment>,
    /// The mode's session (zero knowledge: the masks' commitment).
    pub session: M::SessionCommitment,
    /// Every lookup of the layer in one batch ([`block_lookup_statements`]).
    pub lookups: LookupProofOf<M>,
    /// The norm from `H` to `X`, when the shape proves it.
    pub norm: Option<NormProofOf<M>>,
    /// The norm from `Z` to `X₂` and the MLP, when the shape proves them.
    pub feed_forward: Option<FeedForwardProof<M>>,
    /// The norm on the layer's output, when the shape proves it (BERT's post-norm layer).
    pub post_norm: Option<PostNormProof<M>>,
    /// The norms on the attention's and the MLP's outputs, when the shape proves them
    /// ([`crate::model_layer::OutputNorms`]).
    pub output_norms: OutputNormProofs<M>,
    /// The QK-norm's proofs on `Q` and `K`, when the shape proves it (empty otherwise).
    pub query_key_norms: Vec<NormProofOf<M>>,
    /// `α = R̃(r_z)`.
    pub residual_input: M::Sent,
    /// `η = Õ(r_z)`, the committed output at the residual's point (a committed output only:
    /// [`LayerOutput::Committed`]).
    pub committed_output: Option<M::Sent>,
    /// The `Q`, `K`, `V` and output projections.
    pub projections: ProjectionsProofOf<M>,
    /// Under grouped-query attention: the reductions of `W_k`, `b_k`, `W_v`, `b_v` (empty
    /// otherwise).
    pub shared_heads: Vec<SharedHeadsProofOf<M>>,
    /// Under RoPE: the rotations of `Q_pre` and `K_pre` (empty otherwise).
    pub rotations: Vec<RotaryProofOf<M>>,
    /// `Õ(r)`.
    pub output_value: M::Sent,
    /// The attention's steps.
    pub attention: ChainProofOf<M>,
    /// Every claim, one opening.
    pub openings: M::OpeningProof,
    /// The session's close (zero knowledge: the masks' openings).
    pub session_proof: M::SessionProof,
}

/// The second half of a block's proof in mode `M`: the norm from `Z` to `X₂`, the MLP, and
/// `ζ = Z̃(r_z)` (the residuals: `Ỹ(r_z) = ζ − α`, `Ỹ₂(r_z) = H̃′(r_z) − ζ`).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct FeedForwardProof<M: Mode> {
    /// The norm from `Z` to `X₂`.
    pub norm: NormProofOf<M>,
    /// The MLP.
    pub mlp: MlpProof<M>,
    /// `ζ = Z̃(r_z)`.
    pub middle_value: M::Sent,
}

/// The proof of a post-norm layer's last step (BERT): `H' = norm_p(S₂)`, `S₂ = X₂ + Y₂`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct PostNormProof<M: Mode> {
    /// The norm from `S₂` to the output `H'`.
    pub norm: NormProofOf<M>,
    /// A public output: the proof that the norm's claim on `H'` is the public integers' MLE
    /// at its point (`None` for a committed output, whose claim the final opening answers).
    pub public_output: Option<M::ZeroProof>,
    /// `ξ = X̃₂(r_z)` and `σ = S̃₂(r_z)` (the second residual: `Ỹ₂(r_z) = σ − ξ`).
    pub residual_values: Vec<M::Sent>,
}

/// The proofs of the norms on each half's output.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct OutputNormProofs<M: Mode> {
    /// The norm on `Y` (before `Z = H + norm_a(Y)`).
    pub attention: Option<NormProofOf<M>>,
    /// The norm on `Y₂` (before `H' = Z + norm_f(Y₂)`).
    pub feed_forward: Option<NormProofOf<M>>,
}

impl<M: Mode> OutputNormProofs<M> {
    fn of(&self, half: BlockHalf) -> Option<&NormProofOf<M>> {
        match half {
            BlockHalf::Attention => self.attention.as_ref(),
            BlockHalf::FeedForward => self.feed_forward.as_ref(),
        }
    }
}

impl<M: Mode> ModelBlockProof<M> {
    /// The proof's parts and their sizes in bytes (compressed), for reports.
    pub fn part_sizes(&self) -> Vec<(&'static str, usize)> {
        fn size<T: CanonicalSerialize>(value: &T) -> usize {
            value.compressed_size()
        }
        vec![
            ("commitments", size(&self.commitments)),
            ("lookups", size(&self.lookups)),
            (
                "norm",
                size(&self.norm)
                    + size(&self.output_norms)
                    + size(&self.query_key_norms)
                    + size(&self.post_norm),
            ),
            ("mlp", size(&self.feed_forward)),
            ("projections", size(&self.projections) + size(&self.shared_heads)),
            ("rotary embeddings", size(&self.rotations)),
            ("attention", size(&self.attention) + size(&self.residual_input) + size(&self.output_value)),
            ("openings", size(&self.openings)),
            ("masks (zero knowledge)", size(&self.session) + size(&self.session_proof)),
        ]
    }
}

/// Every claim of the block keyed by its polynomial, in one order for both sides.
#[allow(clippy::too_many_arguments)]
fn block_claims<V: Clone + zkmha_zk::LinearValue>(
    shape: &ModelShape,
    projections: &[ProjectionClaims<V>],
    rotations: &[RotaryClaims<V>],
    attention: ChainClaims<V>,
    output: EvalClaim<V>,
    residual_point: &[Fr],
    residual_input: &V,
    projected: V,
    norm: Vec<(BlockPolynomial, EvalClaim<V>)>,
) -> Vec<(BlockPolynomial, EvalClaim<V>)> {
    use BlockPolynomial::*;
    let rotated = shape.rotary.is_some();
    let mut out = norm;
    for (p, c) in projections.iter().enumerate() {
        let (output_key, input_key, weights, bias) = match p {
            0 | 1 if shape.query_key_norms.is_some() => (HeadNormInput(p), Input, Weight(p), Weight(3 + p)),
            0 | 1 if rotated => (RotaryInput(p), Input, Weight(p), Weight(3 + p)),
            0..=2 => (AttentionInput(p), Input, Weight(p), Weight(3 + p)),
            _ => (Projected, AttentionOutput, Weight(6), Weight(7)),
        };
        out.extend([
            (output_key, c.output.clone()),
            (input_key, c.input.clone()),
            (weights, c.weights.clone()),
            (bias, c.bias.clone()),
            (LowMultiplicities(p), c.multiplicities.clone()),
        ]);
        if let Some(h) = &c.high {
            out.extend([
                (HighDigits(p), h.at_remainder.clone()),
                (HighDigits(p), h.at_lookup.clone()),
                (HighMultiplicities(p), h.multiplicities.clone()),
            ]);
        }
    }
    for (p, c) in rotations.iter().enumerate() {
        out.extend([
            (RotaryInput(p), c.input.clone()),
            (AttentionInput(p), c.output.clone()),
            (RotaryMultiplicities(p), c.multiplicities.clone()),
        ]);
    }
    let ranges = projections
        .iter()
        .filter_map(|c| c.output_multiplicities.clone())
        .chain(rotations.iter().map(|c| c.output_multiplicities.clone()));
    out.extend(ranges.enumerate().map(|(k, c)| (OutputMultiplicities(k), c)));
    let residual = match shape.residual {
        Residual::LayerInput => Input,
        Residual::HiddenState => HiddenState,
    };
    out.push((residual, EvalClaim { point: residual_point.to_vec(), value: residual_input.clone() }));
    // What the residual adds: Y, or the norm on it.
    let added =
        if shape.output_norms.attention.is_some() { NormedOutput(BlockHalf::Attention) } else { Projected };
    out.push((added, EvalClaim { point: residual_point.to_vec(), value: projected }));
    out.extend(attention.keyed());
    out.push((AttentionOutput, output));
    out
}

fn absorb_statement<M: Mode>(statement: &ModelStatement, commitments: &[HyraxCommitment]) -> Transcript {
    let mut transcript = Transcript::new(DOMAIN);
    transcript.append_bytes(LABEL_MODE, M::NAME.as_bytes());
    statement.append_to_transcript(&mut transcript);
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail.
    let _ = commitments.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
    transcript
}

/// A table the prover commits to that neither the statement nor the softmax holds.
struct Owned {
    key: BlockPolynomial,
    num_vars: usize,
    values: Vec<i64>,
}

/// Where a proven norm's claims go: its input's and output's keys, its weights' tables, the
/// wrapper of its own polynomials.
struct NormKeys {
    input: BlockPolynomial,
    output: BlockPolynomial,
    scale: usize,
    bias: Option<usize>,
    part: fn(NormPolynomial) -> BlockPolynomial,
    /// The variables of the committed input's and output's grid (`log ŝ + log d̂`, or `Q`'s
    /// `log ŝ + log(h·m)` for the QK-norm).
    grid: usize,
}

impl NormKeys {
    /// The norm from `H` to `X`: `γ`, `β` are `Weight(8)`, `Weight(9)`.
    fn attention(shape: &ModelShape) -> Self {
        let bias = shape.norm.is_some_and(|n| n.bias).then_some(9);
        Self {
            input: BlockPolynomial::HiddenState,
            output: BlockPolynomial::Input,
            scale: 8,
            bias,
            part: BlockPolynomial::Norm,
            grid: shape.attention.seq_vars() + shape.model_vars(),
        }
    }

    /// The norm from `Z` to `X₂`.
    fn mlp(shape: &ModelShape) -> Result<Self, AttentionError> {
        Ok(Self {
            input: BlockPolynomial::MiddleHiddenState,
            output: BlockPolynomial::MlpInput,
            scale: shape
                .mlp_weight_index(MlpTable::NormScale)
                .ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?,
            bias: shape.mlp_weight_index(MlpTable::NormBias),
            part: BlockPolynomial::MlpNorm,
            grid: shape.attention.seq_vars() + shape.model_vars(),
        })
    }

    /// The post-norm: from `S₂` to the layer's output.
    fn post(shape: &ModelShape) -> Result<Self, AttentionError> {
        Ok(Self {
            input: BlockPolynomial::PostNormInput,
            output: BlockPolynomial::Output,
            scale: shape
                .post_norm_weight_index(false)
                .ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?,
            bias: shape.post_norm_weight_index(true),
            part: BlockPolynomial::PostNorm,
            grid: shape.attention.seq_vars() + shape.model_vars(),
        })
    }

    /// The norm on `half`'s output: from `Y` (or `Y₂`) to the half's [`BlockPolynomial::NormedOutput`].
    fn output(shape: &ModelShape, half: BlockHalf) -> Result<Self, AttentionError> {
        let (input, part): (BlockPolynomial, fn(NormPolynomial) -> BlockPolynomial) = match half {
            BlockHalf::Attention => {
                (BlockPolynomial::Projected, |p| BlockPolynomial::OutputNorm(BlockHalf::Attention, p))
            }
            BlockHalf::FeedForward => {
                (BlockPolynomial::Mlp(MlpPolynomial::Projected(MlpProjection::Down)), |p| {
                    BlockPolynomial::OutputNorm(BlockHalf::FeedForward, p)
                })
            }
        };
        Ok(Self {
            input,
            output: BlockPolynomial::NormedOutput(half),
            scale: shape
                .output_norm_weight_index(half, false)
                .ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?,
            bias: shape.output_norm_weight_index(half, true),
            part,
            grid: shape.attention.seq_vars() + shape.model_vars(),
        })
    }

    /// The QK-norm on `Q` (`p = 0`) or `K` (`p = 1`): from the projection's output to the
    /// rotation's input.
    fn query_key(shape: &ModelShape, p: usize) -> Result<Self, AttentionError> {
        let part: fn(NormPolynomial) -> BlockPolynomial = match p {
            0 => |part| BlockPolynomial::HeadNorm(0, part),
            _ => |part| BlockPolynomial::HeadNorm(1, part),
        };
        Ok(Self {
            input: BlockPolynomial::HeadNormInput(p),
            output: BlockPolynomial::RotaryInput(p),
            scale: shape
                .query_key_norm_weight_index(p, false)
                .ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?,
            bias: shape.query_key_norm_weight_index(p, true),
            part,
            grid: shape.attention.seq_vars() + shape.attention.model_vars(),
        })
    }
}

/// The prover's data of one norm step inside the block (an output norm, a QK-norm's).
struct NormStepData {
    shape: NormShape,
    witness: NormWitness,
    ranges: NormRanges,
}

/// `norm(Y)` for the norm on `half`'s output `Y`, if the shape proves one.
///
/// # Errors
/// A shape and weights that disagree; as the norm's forward pass (a `Y` outside its range).
fn output_norm_data(
    shape: &ModelShape,
    half: BlockHalf,
    weights: &ModelWeights,
    input: &[i64],
) -> Result<Option<NormStepData>, AttentionError> {
    let (norm, w) = match (shape.output_norm_shape(half), weights.output_norms.of(half)) {
        (Some(norm), Some(w)) => (norm, w),
        (None, None) => return Ok(None),
        _ => return Err(AttentionError::CheckFailed { step: "output norm weights" }),
    };
    #[cfg(test)]
    let w = &attack_output_norms::weights(half, w, weights);
    #[cfg(test)]
    let input = &attack_output_norms::input(half, input.to_vec());
    let names = match half {
        BlockHalf::Attention => {
            ["Y (the attention's output, into its norm)", "norm_a(Y) (the attention's normed output)"]
        }
        BlockHalf::FeedForward => {
            ["Y₂ (the MLP's output, into its norm)", "norm_f(Y₂) (the MLP's normed output)"]
        }
    };
    let output = compute_norm(&norm, input, &w.scale, &w.bias).map_err(named_norm_values(names))?;
    let witness = NormWitness { input: input.to_vec(), scale: w.scale.clone(), bias: w.bias.clone(), output };
    let ranges = norm_ranges(&norm, &witness).map_err(named_norm_values(names))?;
    Ok(Some(NormStepData { shape: norm, witness, ranges }))
}

/// A norm step's out-of-range value named by the block's tensor, not the norm's own `X`
/// (input) and `Y` (output): `names` are the input's and the output's.
fn named_norm_values(names: [&'static str; 2]) -> impl Fn(AttentionError) -> AttentionError {
    move |error| match error {
        AttentionError::ValueOutOfRange { tensor: "X", index, value, bound_bits } => {
            AttentionError::ValueOutOfRange { tensor: names[0], index, value, bound_bits }
        }
        AttentionError::ValueOutOfRange { tensor: "Y", index, value, bound_bits } => {
            AttentionError::ValueOutOfRange { tensor: names[1], index, value, bound_bits }
        }
        other => other,
    }
}

/// The QK-norm on the `Q` and `K` projections' outputs (`s × h·m`, read as `(s·h) × m`),
/// if the shape proves it (empty otherwise).
///
/// # Errors
/// A shape and weights that disagree; as the norm's forward pass.
fn query_key_norm_data(
    shape: &ModelShape,
    weights: &ModelWeights,
    projections: &[ProjectionWitness],
) -> Result<Vec<NormStepData>, AttentionError> {
    let w = match (shape.query_key_norms, &weights.query_key_norms) {
        (Some(_), Some(w)) => w,
        (None, None) => return Ok(Vec::new()),
        _ => return Err(AttentionError::CheckFailed { step: "QK-norm weights" }),
    };
    let mut out = Vec::with_capacity(2);
    for (p, w) in [&w.query, &w.key].into_iter().enumerate() {
        let norm = shape.query_key_norm_shape(p).ok_or(AttentionError::CheckFailed { step: "QK-norm" })?;
        let input = &projections.get(p).ok_or(AttentionError::CheckFailed { step: "QK-norm" })?.output;
        #[cfg(test)]
        let w = &attack_output_norms::head_weights(p, w, weights);
        let names = [
            ["Q (the query projection, into the QK-norm)", "the QK-normed queries"],
            ["K (the key projection, into the QK-norm)", "the QK-normed keys"],
        ][p];
        let output = compute_norm(&norm, input, &w.scale, &w.bias).map_err(named_norm_values(names))?;
        let witness =
            NormWitness { input: input.clone(), scale: w.scale.clone(), bias: w.bias.clone(), output };
        let ranges = norm_ranges(&norm, &witness).map_err(named_norm_values(names))?;
        out.push(NormStepData { shape: norm, witness, ranges });
    }
    Ok(out)
}

/// What a half's residual adds: its output `Y`, or the norm on it.
fn added_to_residual<'a>(half: BlockHalf, output: &'a [i64], normed: &'a Option<NormStepData>) -> Vec<i64> {
    let added = normed.as_ref().map_or(output, |n| &n.witness.output);
    #[cfg(test)]
    let added = attack_output_norms::added(half, output, added);
    #[cfg(not(test))]
    let _ = half;
    added.to_vec()
}

/// A proven norm's claims keyed by the block's polynomials: on its input and output, `γ`, `β`,
/// its digits, high remainders and multiplicities. The norm's grids have at least one row
/// variable: for one token (`ŝ = 1`) its claims on its input and output are on the tables with
/// a zero row appended, `T̃′(c, r_0) = (1 − r_0)·T̃(c)`, so they become claims on `T` at `c` of
/// value `v / (1 − r_0)`.
fn norm_block_claims<V: zkmha_zk::LinearValue>(
    claims: NormClaims<V>,
    keys: &NormKeys,
) -> Result<Vec<(BlockPolynomial, EvalClaim<V>)>, AttentionError> {
    use BlockPolynomial::*;
    use NormPolynomial::*;
    let fail = || AttentionError::CheckFailed { step: STEP_CLAIMS };
    let grid = keys.grid;
    let on_block_grid = |claim| crate::norm::claim_on_grid(claim, grid, STEP_CLAIMS);
    let part = keys.part;
    let mut out = Vec::new();
    for claim in claims.input {
        out.push((keys.input, on_block_grid(claim)?));
    }
    out.push((keys.output, on_block_grid(claims.output)?));
    out.push((Weight(keys.scale), claims.scale));
    match (claims.bias, keys.bias) {
        (Some(bias), Some(index)) => out.push((Weight(index), bias)),
        (None, None) => {}
        _ => return Err(fail()),
    }
    out.extend(claims.digits.into_iter().map(|c| (part(Digits), c)));
    out.extend(claims.high_remainders.map(|c| (part(HighRemainders), c)));
    out.push((part(InputHigh), claims.input_high));
    out.extend(claims.multiplicities.into_iter().enumerate().map(|(k, c)| (part(Multiplicities(k)), c)));
    Ok(out)
}

/// The prover's data of a block's second half.
struct FeedForwardData {
    norm: NormShape,
    norm_witness: NormWitness,
    norm_ranges: NormRanges,
    mlp: crate::mlp::MlpShape,
    mlp_witness: MlpWitness,
    mlp_ranges: crate::mlp::MlpRanges,
    /// The norm on `Y₂`, when the shape proves it.
    output_norm: Option<NormStepData>,
    /// The post-norm on `S₂ = X₂ + Y₂`, when the shape proves it.
    post_norm: Option<NormStepData>,
}

/// `X₂ = norm₂(Z)` and the MLP on it, for a block that proves its MLP.
///
/// # Errors
/// A shape and weights that disagree on the MLP; as the norm's and the MLP's forward passes
/// (a `Z` or an intermediate outside its range).
fn feed_forward_data(
    shape: &ModelShape,
    weights: &ModelWeights,
    middle: &[i64],
) -> Result<Option<FeedForwardData>, AttentionError> {
    let (norm, mlp, w) = match (shape.mlp_norm_shape(), shape.mlp_shape(), &weights.feed_forward) {
        (Some(norm), Some(mlp), Some(w)) => (norm, mlp, w),
        (None, None, None) => return Ok(None),
        _ => return Err(AttentionError::CheckFailed { step: "MLP weights" }),
    };
    #[cfg(test)]
    let w = &attack_mlp::feed_forward_weights(w, weights);
    let output = compute_norm(&norm, middle, &w.norm.scale, &w.norm.bias)?;
    let norm_witness = NormWitness {
        input: middle.to_vec(),
        scale: w.norm.scale.clone(),
        bias: w.norm.bias.clone(),
        output,
    };
    let norm_ranges = norm_ranges(&norm, &norm_witness)?;
    let mlp_witness = compute_mlp(&mlp, &norm_witness.output, &w.mlp)?;
    let mlp_ranges = mlp_ranges(&mlp, &mlp_witness)?;
    let output_norm = output_norm_data(shape, BlockHalf::FeedForward, weights, mlp_witness.output())?;
    let post_norm = post_norm_data(shape, weights, middle, &norm_witness.output, mlp_witness.output())?;
    Ok(Some(FeedForwardData {
        norm,
        norm_witness,
        norm_ranges,
        mlp,
        mlp_witness,
        mlp_ranges,
        output_norm,
        post_norm,
    }))
}

/// `H' = norm_p(S₂)`, `S₂ = X₂ + Y₂`, for a post-norm block (BERT), if the shape proves it.
///
/// # Errors
/// A shape and weights that disagree; as the norm's forward pass (an `S₂` or `H'` outside its
/// range).
fn post_norm_data(
    shape: &ModelShape,
    weights: &ModelWeights,
    middle: &[i64],
    mlp_input: &[i64],
    mlp_output: &[i64],
) -> Result<Option<NormStepData>, AttentionError> {
    let (norm, w) = match (shape.post_norm_shape(), &weights.post_norm) {
        (Some(norm), Some(w)) => (norm, w),
        (None, None) => return Ok(None),
        _ => return Err(AttentionError::CheckFailed { step: "post-norm weights" }),
    };
    let sum: Vec<i64> = mlp_input.iter().zip(mlp_output).map(|(x, y)| x + y).collect();
    #[cfg(test)]
    let (sum, cheat_weights) = attack_post_norm::sum_and_weights(sum, middle, mlp_output, w, weights);
    #[cfg(test)]
    let w = &cheat_weights;
    #[cfg(not(test))]
    let _ = middle;
    let names = ["X₂ + Y₂ (the layer's output before its norm)", "H' (the layer's normed output)"];
    let output = compute_norm(&norm, &sum, &w.scale, &w.bias).map_err(named_norm_values(names))?;
    let witness = NormWitness { input: sum, scale: w.scale.clone(), bias: w.bias.clone(), output };
    let ranges = norm_ranges(&norm, &witness).map_err(named_norm_values(names))?;
    Ok(Some(NormStepData { shape: norm, witness, ranges }))
}

/// The second residual of a post-norm block at `r_z`: `Z̃(r_z) = ζ` (the first residual's
/// `Z = X + Y`), `X̃₂(r_z) = ξ`, `S̃₂(r_z) = σ` and `Ỹ₂(r_z) = σ − ξ`.
fn post_norm_residual_claims<V: zkmha_zk::LinearValue>(
    r_z: &[Fr],
    zeta: &V,
    xi: &V,
    sigma: &V,
) -> Vec<(BlockPolynomial, EvalClaim<V>)> {
    let at = |value: V| EvalClaim { point: r_z.to_vec(), value };
    vec![
        (BlockPolynomial::MiddleHiddenState, at(zeta.clone())),
        (BlockPolynomial::MlpInput, at(xi.clone())),
        (BlockPolynomial::PostNormInput, at(sigma.clone())),
        (
            BlockPolynomial::Mlp(MlpPolynomial::Projected(MlpProjection::Down)),
            at(sigma.plus_scaled(-Fr::one(), xi)),
        ),
    ]
}

/// Takes the post-norm's claims on a public output out of `claims`: each becomes the target
/// `v − H̃′(point)` that the proof shows to be zero (the verifier evaluates the public
/// integers' MLE itself). A committed output's claims stay for the final opening.
fn public_output_targets<V: zkmha_zk::LinearValue>(
    shape: &ModelShape,
    claims: &mut Vec<(BlockPolynomial, EvalClaim<V>)>,
    output: &[i64],
    constant: impl Fn(Fr) -> V,
) -> Result<Vec<V>, AttentionError> {
    let (on_output, rest): (Vec<_>, Vec<_>) =
        std::mem::take(claims).into_iter().partition(|(key, _)| *key == BlockPolynomial::Output);
    *claims = rest;
    on_output
        .into_iter()
        .map(|(_, claim)| {
            let public = output_value(shape, output, &claim.point)?;
            Ok(claim.value.plus_scaled(-Fr::one(), &constant(public)))
        })
        .collect()
}

/// The MLP's claims keyed by the block's polynomials: its input is `X₂`, its weights the model
/// commitment's tables.
fn mlp_block_claims<V>(
    shape: &ModelShape,
    claims: crate::mlp::MlpClaims<V>,
) -> Result<Vec<(BlockPolynomial, EvalClaim<V>)>, AttentionError> {
    let fail = || AttentionError::CheckFailed { step: STEP_CLAIMS };
    claims
        .into_iter()
        .map(|(key, claim)| {
            let block_key = match key {
                MlpPolynomial::Input => BlockPolynomial::MlpInput,
                MlpPolynomial::Weights(p) => {
                    BlockPolynomial::Weight(shape.mlp_weight_index(MlpTable::Weights(p)).ok_or_else(fail)?)
                }
                MlpPolynomial::Bias(p) => {
                    BlockPolynomial::Weight(shape.mlp_weight_index(MlpTable::Bias(p)).ok_or_else(fail)?)
                }
                other => BlockPolynomial::Mlp(other),
            };
            Ok((block_key, claim))
        })
        .collect()
}

/// The second residual's claims at `r_z`: `Z̃(r_z) = ζ` and `Ỹ₂(r_z) = H̃′(r_z) − ζ` (`H′` the
/// public output).
fn middle_residual_claims<V: zkmha_zk::LinearValue>(
    shape: &ModelShape,
    r_z: &[Fr],
    zeta: &V,
    public_value: &V,
) -> Vec<(BlockPolynomial, EvalClaim<V>)> {
    // What the residual adds: Y₂, or the norm on it.
    let added = match shape.output_norms.feed_forward {
        Some(_) => BlockPolynomial::NormedOutput(BlockHalf::FeedForward),
        None => BlockPolynomial::Mlp(MlpPolynomial::Projected(MlpProjection::Down)),
    };
    vec![
        (BlockPolynomial::MiddleHiddenState, EvalClaim { point: r_z.to_vec(), value: zeta.clone() }),
        (added, EvalClaim { point: r_z.to_vec(), value: public_value.plus_scaled(-Fr::one(), zeta) }),
    ]
}

/// `X = norm(H)` for a block that proves its norm (the prover's `X`, whose commitment the
/// statement holds).
///
/// # Errors
/// [`AttentionError::NumericRange`] for a hidden state beyond the norm's input range (`±2^28`),
/// [`AttentionError::InvalidShape`] for a shape without a proven norm or weights without its
/// weights, and as [`crate::norm::compute_norm`].
pub fn normalized_input(
    shape: &ModelShape,
    weights: &ModelWeights,
    hidden_state: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    let bound = 1i64 << crate::norm::NORM_INPUT_BOUND_BITS;
    if let Some((index, h)) = hidden_state.iter().enumerate().find(|(_, h)| h.unsigned_abs() >= bound as u64)
    {
        return Err(AttentionError::NumericRange(format!(
            "the hidden state's entry {index} is {h} at X's scale, beyond the ±2^{} the proven norm takes (the layer's inputs are far larger than its calibration's)",
            crate::norm::NORM_INPUT_BOUND_BITS
        )));
    }
    match (shape.norm_shape(), &weights.norm) {
        (Some(norm), Some(w)) => compute_norm(&norm, hidden_state, &w.scale, &w.bias),
        _ => Err(AttentionError::InvalidShape("this block does not prove a norm from H to X".into())),
    }
}

/// Where the prover's committed tables are.
struct TableSources<'t> {
    /// The padded `X` and weight tables (the norm's `γ`, `β` last).
    tables: &'t [Vec<i64>],
    /// The padded `H` (pre-norm).
    hidden_state: Option<&'t [i64]>,
    /// The intermediates.
    owned: &'t [Owned],
}

impl<'t> TableSources<'t> {
    /// The table of `key` (the softmax's columns from `softmax`).
    fn table(
        &self,
        shape: &ModelShape,
        key: BlockPolynomial,
        softmax: &[PolynomialTable<'t>; 8],
    ) -> Result<PolynomialTable<'t>, AttentionError> {
        let missing = AttentionError::CheckFailed { step: STEP_CLAIMS };
        let integers = |num_vars, values| PolynomialTable::Integers { num_vars, values };
        let vars = shape.table_vars();
        Ok(match key {
            BlockPolynomial::Input => integers(vars[0], &self.tables[0]),
            BlockPolynomial::HiddenState => integers(vars[0], self.hidden_state.ok_or(missing)?),
            BlockPolynomial::Weight(i) if 1 + i < self.tables.len() => {
                integers(vars[1 + i], &self.tables[1 + i])
            }
            BlockPolynomial::Softmax(i) => *softmax.get(i).ok_or(missing)?,
            _ => {
                let table = self.owned.iter().find(|t| t.key == key).ok_or(missing)?;
                integers(table.num_vars, &table.values)
            }
        })
    }
}

/// The block's forward pass in integers: every intermediate its proof commits to.
struct BlockForward {
    projections: [crate::projection::ProjectionShape; 4],
    /// The `Q`, `K`, `V` projections' (the output projection's is pushed by the prover).
    witnesses: Vec<ProjectionWitness>,
    rotation_shape: Option<crate::rope::RotaryShape>,
    rotation_witnesses: Vec<RotaryWitness>,
    inputs: AttentionInputs,
    witness: crate::AttentionWitness,
    attention_output: Vec<i64>,
    projected: Vec<i64>,
    /// The QK-norm on `Q` and `K`, when the shape proves it (empty otherwise).
    query_key_norms: Vec<NormStepData>,
    /// The norm on `Y`, when the shape proves it.
    attention_output_norm: Option<NormStepData>,
    /// `Z = R + Y`, or `R + norm_a(Y)`.
    middle: Vec<i64>,
    feed_forward: Option<FeedForwardData>,
    /// `Z`, or `H' = Z + Y₂` with the MLP.
    output: Vec<i64>,
}

/// Runs the block's forward pass on `X` and the residual's `R` (`H`, or `X` itself).
///
/// # Errors
/// As the steps' forward passes (intermediates out of their ranges).
#[allow(clippy::too_many_arguments)]
fn block_forward(
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual_values: &[i64],
    weights: &ModelWeights,
    hyrax: Option<&HyraxParams>,
) -> Result<BlockForward, AttentionError> {
    let a = &shape.attention;
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
    let query_key_norms = query_key_norm_data(shape, weights, &witnesses)?;
    let rotation_shape = shape.rotary.map(|r| r.shape(a.seq_len, a.heads, a.head_dim));
    let mut rotation_witnesses = Vec::with_capacity(2);
    if let Some(rotation) = &rotation_shape {
        for (p, w) in witnesses.iter().take(2).enumerate() {
            // The rotation's input: the projection's output, or the QK-norm of it.
            let input = query_key_norms.get(p).map_or(&w.output, |n| &n.witness.output);
            #[cfg(test)]
            let input = attack_output_norms::rotated(p, &w.output, input);
            let rotated = compute_rotation(rotation, input)?;
            rotation_witnesses.push(RotaryWitness { input: input.clone(), output: rotated });
        }
    }
    let attention_input = |p: usize| match rotation_witnesses.get(p) {
        Some(r) => r.output.clone(),
        None => witnesses[p].output.clone(),
    };
    let inputs =
        AttentionInputs { queries: attention_input(0), keys: attention_input(1), values: attention_input(2) };
    let witness = witness_alongside_table(a, mask, softmax, &inputs, hyrax)?;
    let attention_output = integer_output(&witness.output)?;
    let projected =
        compute_projection(&projections[3], &attention_output, &weights.output, &weights.output_bias)?;
    let attention_output_norm = output_norm_data(shape, BlockHalf::Attention, weights, &projected)?;
    let added = added_to_residual(BlockHalf::Attention, &projected, &attention_output_norm);
    let middle: Vec<i64> = residual_values.iter().zip(&added).map(|(r, y)| r + y).collect();
    #[cfg(test)]
    let middle = attack_mlp::middle(middle);
    let feed_forward = feed_forward_data(shape, weights, &middle)?;
    let output: Vec<i64> = match &feed_forward {
        #[cfg(test)]
        Some(FeedForwardData { post_norm: Some(post), .. }) => attack_post_norm::output(post),
        #[cfg(not(test))]
        Some(FeedForwardData { post_norm: Some(post), .. }) => post.witness.output.clone(),
        Some(f) => {
            let added = added_to_residual(BlockHalf::FeedForward, f.mlp_witness.output(), &f.output_norm);
            middle.iter().zip(&added).map(|(z, y)| z + y).collect()
        }
        None => middle.clone(),
    };
    Ok(BlockForward {
        projections,
        witnesses,
        rotation_shape,
        rotation_witnesses,
        inputs,
        witness,
        attention_output,
        projected,
        query_key_norms,
        attention_output_norm,
        middle,
        feed_forward,
        output,
    })
}

/// The block's output on its inputs — the integer forward pass its proof proves: `Z`, or
/// `H' = Z + MLP(norm₂(Z))` when the shape proves the MLP. `input` is `X` (for a proven norm,
/// [`normalized_input`] of `H`), `residual` the hidden state `H` under
/// [`Residual::HiddenState`]. Whoever runs a chain's forward pass commits each layer's output
/// as the next boundary ([`commit_boundary`]) with it.
///
/// # Errors
/// Bad shapes or tensors, a residual that does not match the shape's kind, intermediates out
/// of their ranges (as [`prove_block`]).
pub fn block_output(
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual: Option<&[i64]>,
    weights: &ModelWeights,
) -> Result<Vec<i64>, AttentionError> {
    Ok(block_outputs(shape, mask, softmax, input, residual, weights)?.output)
}

/// The integer outputs of a block's two halves ([`block_outputs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockOutputs {
    /// `Z`: the residual plus the attention's (normed) output.
    pub middle: Vec<i64>,
    /// The block's output: `Z`, or `H'` when the shape proves the MLP.
    pub output: Vec<i64>,
}

/// [`block_output`] with the attention half's output `Z` too (what an accuracy report of the
/// attention block alone compares; `Z` is committed, not shown, in a proof of the whole layer).
///
/// # Errors
/// As [`block_output`].
pub fn block_outputs(
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual: Option<&[i64]>,
    weights: &ModelWeights,
) -> Result<BlockOutputs, AttentionError> {
    shape.validate()?;
    require_proven_softmax(softmax)?;
    check_block_sizes(shape, input.len(), weights)?;
    let residual_values = match (shape.has_hidden_state(), residual) {
        (false, None) => input,
        (true, Some(h)) => {
            check_tensor_sizes(&[("H", h.len(), shape.attention.seq_len, shape.model_width)])?;
            // What the residual adds Y to: H (pre-norm), or X (a post-norm block's norm from H).
            let base = if shape.residual == Residual::HiddenState { h } else { input };
            #[cfg(test)]
            let base = attack_post_norm::residual_base(base, Some(h));
            base
        }
        _ => {
            return Err(AttentionError::InvalidShape(
                "pass the hidden state H exactly when the block reads one (its residual adds to it, or it proves the norm from it)".into(),
            ));
        }
    };
    let forward = block_forward(shape, mask, softmax, input, residual_values, weights, None)?;
    Ok(BlockOutputs { middle: forward.middle, output: forward.output })
}

/// Runs the block on `X` (`s × d_model`, integers) with the committed weights and proves it in
/// mode `M`; `residual` is the hidden state `H` under [`Residual::HiddenState`]. The weights'
/// `model_blinds` come from [`commit_model_with`] (nothing to keep in the plain mode).
///
/// # Errors
/// Bad shapes or tensors, a residual that does not match the shape's kind, intermediate
/// values the next step cannot take ([`AttentionError::ValueOutOfRange`]), a model commitment
/// or blinds of the wrong shape, and the sub-protocols' errors.
#[allow(clippy::too_many_arguments)]
pub fn prove_block<M: Mode>(
    params: &HyraxParams,
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual: Option<&[i64]>,
    weights: &ModelWeights,
    model: &ModelCommitment,
    model_blinds: &[M::Blinds],
    rng: &mut dyn ProverRng,
) -> Result<(ModelStatement, ModelBlockProof<M>, ProverTimings), AttentionError> {
    let (statement, proof, timings, _) = prove_block_with_claims::<M>(
        params,
        shape,
        mask,
        softmax,
        input,
        residual,
        &BlockEnds::default(),
        weights,
        model,
        model_blinds,
        rng,
    )?;
    Ok((statement, proof, timings))
}

/// A boundary activation of a chain of layers, committed once: the hidden state `H_ℓ` that
/// layer `ℓ − 1` outputs and layer `ℓ` adds its residual to, with the blinds both layers'
/// proofs open it with (nothing in the plain mode). Whoever runs the forward pass commits every
/// boundary ([`commit_boundary`]) and hands each layer's prover the two it needs, so the
/// layers prove independently, in any order, and their statements hold byte-equal
/// commitments where they meet.
#[derive(Clone, Debug)]
pub struct Boundary<B> {
    /// `H_ℓ`, `s × d_model`, row-major, at the residual stream's scale.
    pub values: Vec<i64>,
    /// Its commitment: padded to `2^(log s + log d_model)` entries, in the statement's layout
    /// for `H`.
    pub commitment: HyraxCommitment,
    /// Its blinds.
    pub blinds: B,
}

/// Commits to a boundary activation `H` (`s × d_model`) in mode `M` for blocks of `shape`: the
/// commitment a layer's statement holds as its [`ModelStatement::residual`] and the previous
/// layer's as its [`LayerOutput::Committed`] output.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for `H`'s length, a shape out of the limits,
/// [`AttentionError::Commitment`] for too few generators.
pub fn commit_boundary<M: Mode>(
    params: &HyraxParams,
    shape: &ModelShape,
    softmax: SoftmaxMode,
    values: Vec<i64>,
    rng: &mut dyn ProverRng,
) -> Result<Boundary<M::Blinds>, AttentionError> {
    shape.validate()?;
    let a = &shape.attention;
    check_tensor_sizes(&[("H", values.len(), a.seq_len, shape.model_width)])?;
    let (num_vars, column_vars) = Layouts::new::<M>(shape, softmax)?.of(BlockPolynomial::HiddenState)?;
    let padded = pad(&values, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars());
    let (commitment, blinds) = M::commit_table(params, num_vars, column_vars, &padded, rng)?;
    Ok(Boundary { values, commitment, blinds })
}

/// The committed boundaries a block joins ([`prove_linked_block`]): `input` the hidden state
/// `H` its residual adds to (else the prover commits `H` itself), `output` its output (else
/// the output is public).
#[derive(Clone, Copy, Debug)]
pub struct BlockEnds<'b, B> {
    /// `H`, committed by the caller.
    pub input: Option<&'b Boundary<B>>,
    /// The output `H'`, committed by the caller.
    pub output: Option<&'b Boundary<B>>,
}

impl<B> Default for BlockEnds<'_, B> {
    fn default() -> Self {
        Self { input: None, output: None }
    }
}

/// [`prove_block`] for one link of a chain: the hidden state `H` and (when `ends.output` is
/// given) the output are the caller's committed [`Boundary`] activations, so the statement
/// holds their commitments as they are (`residual` and [`LayerOutput::Committed`]) and the
/// proof opens both. `input` is `X = norm(H)` (the shape proves the norm) computed from
/// `ends.input`'s values, or (a post-norm block, BERT) `ends.input`'s values themselves: the
/// boundary is then the statement's input `X`.
///
/// # Errors
/// As [`prove_block`]; [`AttentionError::InvalidShape`] for an input boundary on a block whose
/// residual adds to `X`, or an output boundary whose values are not the layer's output (the
/// forward pass that committed it differs from this block).
#[allow(clippy::too_many_arguments)]
pub fn prove_linked_block<M: Mode>(
    params: &HyraxParams,
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    ends: BlockEnds<'_, M::Blinds>,
    weights: &ModelWeights,
    model: &ModelCommitment,
    model_blinds: &[M::Blinds],
    rng: &mut dyn ProverRng,
) -> Result<(ModelStatement, ModelBlockProof<M>, ProverTimings), AttentionError> {
    // The input boundary is H (pre-norm, or a post-norm block proving the norm from it to X),
    // or X itself (post-norm: no separate hidden state).
    let residual = ends.input.filter(|_| shape.has_hidden_state()).map(|b| b.values.as_slice());
    let (statement, proof, timings, _) = prove_block_with_claims::<M>(
        params,
        shape,
        mask,
        softmax,
        input,
        residual,
        &ends,
        weights,
        model,
        model_blinds,
        rng,
    )?;
    Ok((statement, proof, timings))
}

/// A block statement and proof in mode `M`, with the prover's timings and final claims.
type ProvedBlock<M> = (
    ModelStatement,
    ModelBlockProof<M>,
    ProverTimings,
    Vec<OpeningClaim<<M as crate::mode::ProductMode>::ProverValue>>,
);

/// [`prove_block`], with the final opening's claims as the prover holds them (for the tests
/// that look for their values in a proof).
#[allow(clippy::too_many_arguments)]
fn prove_block_with_claims<M: Mode>(
    params: &HyraxParams,
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    residual: Option<&[i64]>,
    ends: &BlockEnds<'_, M::Blinds>,
    weights: &ModelWeights,
    model: &ModelCommitment,
    model_blinds: &[M::Blinds],
    rng: &mut dyn ProverRng,
) -> Result<ProvedBlock<M>, AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    shape.validate()?;
    require_proven_softmax(softmax)?;
    let SoftmaxMode::Exponential(softmax_params) = softmax else {
        return Err(AttentionError::CheckFailed { step: "softmax mode" });
    };
    let weight_tables = shape.table_vars().len() - 1;
    if model.tables.len() != weight_tables || model_blinds.len() != weight_tables {
        return Err(AttentionError::CheckFailed { step: "model commitment shape" });
    }
    let tables = padded_tables(shape, input, weights)?;
    let a = &shape.attention;
    // A chain's input boundary is the hidden state H a pre-norm block's residual adds to, or
    // a post-norm block's input X itself (BERT: the previous layer's normed output).
    let committed_input = match (ends.input, shape.residual, shape.post_norm) {
        (None, _, _) | (Some(_), Residual::HiddenState, _) => None,
        // BERT's layer 0: the boundary is H (the embeddings), X its proven norm.
        (Some(_), Residual::LayerInput, Some(_)) if shape.has_hidden_state() => None,
        (Some(boundary), Residual::LayerInput, Some(_)) => {
            if boundary.values != input {
                return Err(AttentionError::InvalidShape(
                    "the committed input boundary is not this block's input X".into(),
                ));
            }
            Some(boundary)
        }
        (Some(_), Residual::LayerInput, None) => {
            return Err(AttentionError::InvalidShape(
                "a committed hidden state was given, but this block's residual adds to its input X (only post-norm blocks take X as a boundary)"
                    .into(),
            ));
        }
    };
    let hidden_state = match (shape.has_hidden_state(), residual) {
        (false, None) => None,
        (true, Some(h)) => {
            check_tensor_sizes(&[("H", h.len(), a.seq_len, shape.model_width)])?;
            Some(pad(h, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars()))
        }
        (false, Some(_)) => {
            return Err(AttentionError::InvalidShape(
                "a hidden state was given, but this block's residual adds to its input X".into(),
            ));
        }
        (true, None) => {
            return Err(AttentionError::InvalidShape(
                "this block reads a hidden state H (its residual adds to it, or it proves the norm from it to X): pass it beside X".into(),
            ));
        }
    };
    // What the residual adds Y to: H (pre-norm), or X.
    let residual_values = match shape.residual {
        Residual::HiddenState => residual.unwrap_or(input),
        Residual::LayerInput => input,
    };
    #[cfg(test)]
    let residual_values = attack_post_norm::residual_base(residual_values, residual);
    let norm_data = match (shape.norm_shape(), residual, &weights.norm) {
        (Some(norm), Some(h), Some(w)) => {
            if compute_norm(&norm, h, &w.scale, &w.bias)? != input {
                return Err(AttentionError::InvalidShape(
                    "X is not the proven norm of H: compute it with block::normalized_input".into(),
                ));
            }
            let witness = NormWitness {
                input: h.to_vec(),
                scale: w.scale.clone(),
                bias: w.bias.clone(),
                output: input.to_vec(),
            };
            let ranges = norm_ranges(&norm, &witness)?;
            Some((norm, witness, ranges))
        }
        (None, _, _) => None,
        _ => return Err(AttentionError::CheckFailed { step: "norm weights" }),
    };
    let BlockForward {
        projections,
        mut witnesses,
        rotation_shape,
        rotation_witnesses,
        inputs,
        mut witness,
        attention_output,
        projected,
        query_key_norms,
        attention_output_norm,
        middle,
        feed_forward,
        output,
    } = block_forward(shape, mask, softmax, input, residual_values, weights, Some(params))?;
    #[cfg(test)]
    let (mlp_honest_output, output) = (output.clone(), attack_mlp::output(output));
    #[cfg(test)]
    let (honest_output, output) = (output.clone(), cheating_residual::output(output));
    if let Some(boundary) = ends.output
        && boundary.values != output
    {
        return Err(AttentionError::InvalidShape(
            "the committed output boundary is not this block's output (the forward pass that committed it computed another one)"
                .into(),
        ));
    }
    witnesses.push(ProjectionWitness {
        input: attention_output,
        weights: weights.output.clone(),
        bias: weights.output_bias.clone(),
        output: projected,
    });
    let ranges: Vec<ProjectionRanges> =
        witnesses.iter().zip(&projections).map(|(w, p)| projection_ranges(p, w)).collect::<Result<_, _>>()?;
    let mut rotation_ranges_data: Vec<RotaryRanges> = Vec::with_capacity(2);
    if let Some(rotation) = &rotation_shape {
        for r in &rotation_witnesses {
            rotation_ranges_data.push(rotation_ranges(rotation, r)?);
        }
    }
    let softmax_witness =
        witness.softmax.take().ok_or(AttentionError::CheckFailed { step: "softmax witness" })?;
    let multiplicities = softmax_multiplicities(&softmax_params, &softmax_witness)?;
    let mut softmax_data = SoftmaxProverData::new(a, softmax_witness, multiplicities, &softmax_params);
    timings.witness = start.elapsed();

    // The tables the proof commits to, keyed.
    // The output norms' data, in proof order (a half's, if the shape proves its norm).
    let output_norm_sources = [
        (BlockHalf::Attention, attention_output_norm.as_ref()),
        (BlockHalf::FeedForward, feed_forward.as_ref().and_then(|f| f.output_norm.as_ref())),
    ];
    let start = Instant::now();
    let layouts = Layouts::new::<M>(shape, softmax)?;
    let grid = |values: &[i64], width: usize, vars: usize| pad(values, a.seq_len, width, a.seq_vars(), vars);
    let mut owned: Vec<Owned> = Vec::new();
    {
        use BlockPolynomial::*;
        let mut push = |key: BlockPolynomial, values: Vec<i64>| -> Result<(), AttentionError> {
            let (num_vars, _) = layouts.of(key)?;
            owned.push(Owned { key, num_vars, values });
            Ok(())
        };
        push(AttentionInput(0), grid(&inputs.queries, a.model_width(), a.model_vars()))?;
        push(AttentionInput(1), grid(&inputs.keys, a.model_width(), a.model_vars()))?;
        push(AttentionInput(2), grid(&inputs.values, a.value_model_width(), a.value_model_vars()))?;
        push(AttentionOutput, grid(&witnesses[3].input, a.value_model_width(), a.value_model_vars()))?;
        push(Projected, grid(&witnesses[3].output, shape.model_width, shape.model_vars()))?;
        if ends.output.is_some() {
            push(Output, grid(&output, shape.model_width, shape.model_vars()))?;
        }
        if let Some(f) = &feed_forward {
            push(MiddleHiddenState, grid(&middle, shape.model_width, shape.model_vars()))?;
            push(MlpInput, grid(&f.norm_witness.output, shape.model_width, shape.model_vars()))?;
            for (part, values) in norm_tables(&f.norm, &f.norm_ranges) {
                push(MlpNorm(part), values)?;
            }
            for (key, values) in mlp_tables(&f.mlp, &f.mlp_witness, &f.mlp_ranges)? {
                push(Mlp(key), values)?;
            }
            if let Some(n) = &f.post_norm {
                push(PostNormInput, grid(&n.witness.input, shape.model_width, shape.model_vars()))?;
                for (part, values) in norm_tables(&n.shape, &n.ranges) {
                    push(PostNorm(part), values)?;
                }
            }
        }
        for (half, data) in output_norm_sources {
            if let Some(n) = data {
                push(NormedOutput(half), grid(&n.witness.output, shape.model_width, shape.model_vars()))?;
                for (part, values) in norm_tables(&n.shape, &n.ranges) {
                    push(OutputNorm(half, part), values)?;
                }
            }
        }
        for (p, n) in query_key_norms.iter().enumerate() {
            push(HeadNormInput(p), grid(&n.witness.input, a.model_width(), a.model_vars()))?;
            for (part, values) in norm_tables(&n.shape, &n.ranges) {
                push(HeadNorm(p, part), values)?;
            }
        }
        for (p, (r, projection)) in ranges.iter().zip(&projections).enumerate() {
            push(LowMultiplicities(p), r.low_multiplicities.clone())?;
            if projection.has_high_digit() {
                push(HighDigits(p), r.high_digits.clone())?;
                push(HighMultiplicities(p), r.high_multiplicities.clone())?;
            }
        }
        for (p, (w, r)) in rotation_witnesses.iter().zip(&rotation_ranges_data).enumerate() {
            push(RotaryInput(p), grid(&w.input, a.model_width(), a.model_vars()))?;
            push(RotaryMultiplicities(p), r.remainder_multiplicities.clone())?;
        }
        let output_ranges = ranges
            .iter()
            .zip(&projections)
            .filter(|(_, p)| p.output_bits.is_some())
            .map(|(r, _)| r.output_multiplicities.clone())
            .chain(rotation_ranges_data.iter().map(|r| r.output_multiplicities.clone()));
        for (k, values) in output_ranges.enumerate() {
            push(OutputMultiplicities(k), values)?;
        }
        if let Some((norm, _, r)) = &norm_data {
            for (part, values) in norm_tables(norm, r) {
                push(Norm(part), values)?;
            }
        }
    }
    let output_kind = if ends.output.is_some() { OutputKind::Committed } else { OutputKind::Public };
    let statement_keys = statement_polynomials(shape, output_kind);
    let proof_keys = proof_polynomials(shape);
    let sources = TableSources { tables: &tables, hidden_state: hidden_state.as_deref(), owned: &owned };
    let softmax_columns = softmax_column_tables(a, &softmax_params, &softmax_data)?;
    let commit = |key: BlockPolynomial,
                  rng: &mut dyn ProverRng|
     -> Result<(HyraxCommitment, M::Blinds), AttentionError> {
        let (num_vars, column_vars) = layouts.of(key)?;
        match sources.table(shape, key, &softmax_columns)? {
            PolynomialTable::Integers { num_vars: n, values } if n == num_vars => {
                M::commit_table(params, num_vars, column_vars, values, rng)
            }
            _ => Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
        }
    };
    let (input_commitment, input_blinds) = match committed_input {
        Some(boundary) => (boundary.commitment.clone(), boundary.blinds.clone()),
        None => commit(BlockPolynomial::Input, rng)?,
    };
    let hidden = match (shape.has_hidden_state(), ends.input) {
        (true, Some(b)) => Some((b.commitment.clone(), b.blinds.clone())),
        (true, None) => Some(commit(BlockPolynomial::HiddenState, rng)?),
        (false, _) => None,
    };
    let statement = ModelStatement {
        shape: *shape,
        mask,
        softmax,
        input: input_commitment,
        residual: hidden.as_ref().map(|(c, _)| c.clone()),
        model: model.clone(),
        output: match ends.output {
            Some(b) => LayerOutput::Committed(b.commitment.clone()),
            None => LayerOutput::Public(output.clone()),
        },
    };
    statement.validate()?;
    let mut commitments = Vec::with_capacity(proof_keys.len());
    let mut blinds = Vec::with_capacity(proof_keys.len());
    for key in &proof_keys {
        let (c, b) = commit(*key, rng)?;
        commitments.push(c);
        blinds.push(b);
    }
    timings.commit = start.elapsed();

    let start = Instant::now();
    let mut transcript = absorb_statement::<M>(&statement, &commitments);
    let t = &mut transcript;
    let (mut session, session_commitment) =
        M::start_prover(params, &|| block_zk_schedule(shape, softmax, output_kind), t, rng)?;
    let mut prover = M::prover(params, &mut session, rng);
    // Every lookup of the layer in one batch, before any step (block_lookup_statements order).
    let witness_refs: Vec<&ProjectionWitness> = witnesses.iter().collect();
    let range_refs: Vec<&ProjectionRanges> = ranges.iter().collect();
    let projection_inputs = ProjectionInputs::new(&projections, &witness_refs, &range_refs)?;
    let mlp_inputs = match &feed_forward {
        Some(f) => Some(MlpInputs::new(&f.mlp, &f.mlp_witness, &f.mlp_ranges)?),
        None => None,
    };
    let rotation_tables = match &rotation_shape {
        Some(rotation) => rotation_witnesses
            .iter()
            .map(|w| RotationTables::new(rotation, w))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let (lookups, mut lookup_claims, softmax_block_values) = {
        let mut parts = Vec::new();
        if let Some((norm, witness, ranges)) = &norm_data {
            parts.push(norm_lookups(norm, witness, ranges)?);
        }
        if let (Some(f), Some(mlp)) = (&feed_forward, &mlp_inputs) {
            parts.push(norm_lookups(&f.norm, &f.norm_witness, &f.norm_ranges)?);
            parts.push(mlp.lookups(&f.mlp)?);
            if let Some(n) = &f.post_norm {
                parts.push(norm_lookups(&n.shape, &n.witness, &n.ranges)?);
            }
        }
        for (_, data) in output_norm_sources {
            if let Some(n) = data {
                parts.push(norm_lookups(&n.shape, &n.witness, &n.ranges)?);
            }
        }
        for n in &query_key_norms {
            parts.push(norm_lookups(&n.shape, &n.witness, &n.ranges)?);
        }
        parts.push(projection_inputs.lookups()?);
        if let Some(rotation) = &rotation_shape {
            for (tables, r) in rotation_tables.iter().zip(&rotation_ranges_data) {
                parts.push(tables.lookups(rotation, r)?);
            }
        }
        let (softmax_parts, block_values) = softmax_lookups(a, &softmax_params, &softmax_data)?;
        parts.push(softmax_parts);
        let (proof, claims) = prove_lookup_parts::<M>(&mut prover, &parts, t)?;
        (proof, claims.into_iter(), block_values)
    };
    let mut next_claims = || lookup_claims.next().ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS });
    let (norm_proof, norm_claims) = match &norm_data {
        Some((norm, witness, ranges)) => {
            let (proof, claims) = prove_norm::<M>(&mut prover, norm, witness, ranges, next_claims()?, t)?;
            (Some(proof), norm_block_claims(claims, &NormKeys::attention(shape))?)
        }
        None => (None, Vec::new()),
    };
    let (feed_forward_proofs, feed_forward_claims) = match &feed_forward {
        Some(f) => {
            let (norm, norm_claims) =
                prove_norm::<M>(&mut prover, &f.norm, &f.norm_witness, &f.norm_ranges, next_claims()?, t)?;
            let mlp_inputs = mlp_inputs.as_ref().ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?;
            let (mlp, mlp_claims) = prove_mlp::<M>(&mut prover, &f.mlp, mlp_inputs, next_claims()?, t)?;
            let mut keyed = norm_block_claims(norm_claims, &NormKeys::mlp(shape)?)?;
            keyed.extend(mlp_block_claims(shape, mlp_claims)?);
            (Some((norm, mlp)), keyed)
        }
        None => (None, Vec::new()),
    };
    let (post_norm_proof, post_norm_claims) = match feed_forward.as_ref().and_then(|f| f.post_norm.as_ref()) {
        Some(n) => {
            let (proof, claims) =
                prove_norm::<M>(&mut prover, &n.shape, &n.witness, &n.ranges, next_claims()?, t)?;
            let mut keyed = norm_block_claims(claims, &NormKeys::post(shape)?)?;
            let public_output = match ends.output {
                Some(_) => None,
                None => {
                    let targets = public_output_targets(shape, &mut keyed, &output, |c| {
                        M::prover_constant(&prover, c)
                    })?;
                    Some(M::prove_zero(&mut prover, STEP_PUBLIC_OUTPUT, targets, t)?)
                }
            };
            (Some((proof, public_output)), keyed)
        }
        None => (None, Vec::new()),
    };
    let mut output_norm_proofs = OutputNormProofs { attention: None, feed_forward: None };
    let mut output_norm_claims = Vec::new();
    for (half, data) in output_norm_sources {
        if let Some(n) = data {
            let (proof, claims) =
                prove_norm::<M>(&mut prover, &n.shape, &n.witness, &n.ranges, next_claims()?, t)?;
            output_norm_claims.extend(norm_block_claims(claims, &NormKeys::output(shape, half)?)?);
            match half {
                BlockHalf::Attention => output_norm_proofs.attention = Some(proof),
                BlockHalf::FeedForward => output_norm_proofs.feed_forward = Some(proof),
            }
        }
    }
    let mut query_key_norm_proofs = Vec::with_capacity(query_key_norms.len());
    for (p, n) in query_key_norms.iter().enumerate() {
        let (proof, claims) =
            prove_norm::<M>(&mut prover, &n.shape, &n.witness, &n.ranges, next_claims()?, t)?;
        output_norm_claims.extend(norm_block_claims(claims, &NormKeys::query_key(shape, p)?)?);
        query_key_norm_proofs.push(proof);
    }
    let vars = shape.table_vars();
    let r_z = t.challenge_fields(LABEL_RESIDUAL_POINT, vars[0]);
    let residual_table = match shape.residual {
        Residual::HiddenState => hidden_state.as_ref().unwrap_or(&tables[0]),
        Residual::LayerInput => &tables[0],
    };
    let alpha = DenseMultilinearExtension::from_i64(vars[0], residual_table)?.evaluate(&r_z)?;
    #[cfg(test)]
    let alpha = alpha + output_value(shape, &output, &r_z)? - output_value(shape, &honest_output, &r_z)?;
    #[cfg(test)]
    let mlp_delta = output_value(shape, &output, &r_z)? - output_value(shape, &mlp_honest_output, &r_z)?;
    #[cfg(test)]
    let alpha = alpha + attack_mlp::alpha_shift() * mlp_delta;
    let (mut sent, mut held) = M::send(&mut prover, LABEL_RESIDUAL_VALUE, &[alpha], t);
    let (residual_sent, alpha_held) = match (sent.pop(), held.pop()) {
        (Some(s), Some(h)) => (s, h),
        _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
    };
    // The output at r_z: the public integers' MLE, or the committed output's value, sent and
    // claimed on the commitment.
    let (committed_output, public_value, output_claims) = match ends.output {
        // A post-norm block's output is claimed by its norm, not at r_z.
        _ if shape.post_norm.is_some() => (None, M::prover_constant(&prover, Fr::from(0u64)), Vec::new()),
        None => (None, M::prover_constant(&prover, output_value(shape, &output, &r_z)?), Vec::new()),
        Some(_) => {
            let eta = output_value(shape, &output, &r_z)?;
            let (mut sent, mut held) = M::send(&mut prover, LABEL_COMMITTED_OUTPUT, &[eta], t);
            let (eta_sent, eta_held) = match (sent.pop(), held.pop()) {
                (Some(s), Some(h)) => (s, h),
                _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
            };
            let claim = (BlockPolynomial::Output, EvalClaim { point: r_z.clone(), value: eta_held.clone() });
            (Some(eta_sent), eta_held, vec![claim])
        }
    };
    let mut post_norm_residual_values = Vec::new();
    let (middle_sent, projected_value, residual_claims) = match feed_forward_proofs.is_some() {
        // Y(r_z) = Z̃(r_z) − α, Y₂(r_z) = H̃′(r_z) − Z̃(r_z), Z̃(r_z) = ζ sent.
        true => {
            let zeta = DenseMultilinearExtension::from_i64(
                vars[0],
                &pad(&middle, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars()),
            )?
            .evaluate(&r_z)?;
            #[cfg(test)]
            let zeta = zeta + attack_mlp::zeta_shift() * mlp_delta;
            let (mut sent, mut held) = M::send(&mut prover, LABEL_MIDDLE_VALUE, &[zeta], t);
            let (middle_sent, zeta_held) = match (sent.pop(), held.pop()) {
                (Some(s), Some(h)) => (s, h),
                _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
            };
            let residual_claims = match feed_forward.as_ref().and_then(|f| f.post_norm.as_ref()) {
                Some(n) => {
                    let at_r_z = |values: &[i64]| -> Result<Fr, AttentionError> {
                        let padded =
                            pad(values, a.seq_len, shape.model_width, a.seq_vars(), shape.model_vars());
                        Ok(DenseMultilinearExtension::from_i64(vars[0], &padded)?.evaluate(&r_z)?)
                    };
                    let mlp_input = feed_forward
                        .as_ref()
                        .map(|f| &f.norm_witness.output)
                        .ok_or(AttentionError::CheckFailed { step: STEP_CLAIMS })?;
                    let values = [at_r_z(mlp_input)?, at_r_z(&n.witness.input)?];
                    #[cfg(test)]
                    let values = attack_post_norm::residual_values(values);
                    let (sent, held) = M::send(&mut prover, LABEL_POST_NORM_VALUES, &values, t);
                    let [xi, sigma] = <[_; 2]>::try_from(held)
                        .map_err(|_| AttentionError::CheckFailed { step: STEP_CLAIMS })?;
                    post_norm_residual_values = sent;
                    post_norm_residual_claims(&r_z, &zeta_held, &xi, &sigma)
                }
                None => middle_residual_claims(shape, &r_z, &zeta_held, &public_value),
            };
            (Some(middle_sent), zeta_held.plus_scaled(-Fr::one(), &alpha_held), residual_claims)
        }
        false => (None, public_value.plus_scaled(-Fr::one(), &alpha_held), Vec::new()),
    };
    let (projection_proofs, mut claims) =
        prove_projections::<M>(&mut prover, &projection_inputs, next_claims()?, t)?;
    drop(projection_inputs);
    let mut shared_heads = Vec::new();
    if shape.is_grouped() {
        // W_k, b_k, W_v, b_v: the expanded tables' claims become claims on the committed ones.
        let compact = [&tables[2], &tables[5], &tables[3], &tables[6]];
        for (k, (reduction, table)) in shape.shared_heads().iter().zip(compact).enumerate() {
            let c = &mut claims[1 + k / 2];
            let claim = if k % 2 == 0 { &mut c.weights } else { &mut c.bias };
            let (proof, reduced) = prove_shared_heads::<M>(&mut prover, reduction, table, claim, t)?;
            *claim = reduced;
            shared_heads.push(proof);
        }
    }
    let mut rotations = Vec::with_capacity(2);
    let mut rotation_claims = Vec::with_capacity(2);
    if let Some(rotation) = &rotation_shape {
        for rotation_table in &rotation_tables {
            let (p, c) = prove_rotation::<M>(&mut prover, rotation, rotation_table, next_claims()?, t)?;
            rotations.push(p);
            rotation_claims.push(c);
        }
    }
    timings.statement = start.elapsed();

    let point = t.challenge_fields(LABEL_OUTPUT_POINT, a.value_model_vars() + a.seq_vars());
    let o_value = matrix_mle(a.seq_len, a.value_model_width(), &witness.output)?.evaluate(&point)?;
    let (mut sent, mut held) = M::send(&mut prover, LABEL_OUTPUT_VALUE, &[o_value], t);
    let (output_sent, output_claim) = match (sent.pop(), held.pop()) {
        (Some(s), Some(value)) => (s, EvalClaim { point, value }),
        _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
    };
    let (attention, chain_claims) = prove_chain_steps::<M>(
        &mut prover,
        a,
        mask,
        softmax,
        &mut witness,
        Some((
            &mut softmax_data,
            SoftmaxLookupOutcome { claims: next_claims()?, block_values: softmax_block_values },
        )),
        &output_claim,
        t,
        &mut timings,
    )?;

    let start = Instant::now();
    let keyed = block_claims(
        shape,
        &claims,
        &rotation_claims,
        chain_claims,
        output_claim,
        &r_z,
        &alpha_held,
        projected_value,
        [
            norm_claims,
            feed_forward_claims,
            post_norm_claims,
            output_norm_claims,
            residual_claims,
            output_claims,
        ]
        .concat(),
    );
    let order: Vec<BlockPolynomial> = statement_keys.iter().chain(&proof_keys).copied().collect();
    let opening_claims = opening_claims(&order, keyed, STEP_CLAIMS)?;
    let statement_commitments: Vec<(&HyraxCommitment, &M::Blinds)> =
        std::iter::once((&statement.input, &input_blinds))
            .chain(hidden.as_ref().map(|(c, b)| (c, b)))
            .chain(statement.model.tables.iter().zip(model_blinds))
            .chain(ends.output.map(|b| (&b.commitment, &b.blinds)))
            .collect();
    let softmax_columns = softmax_column_tables(a, &softmax_params, &softmax_data)?;
    let mut polynomials = Vec::with_capacity(order.len());
    for (key, (commitment, blind)) in
        order.iter().zip(statement_commitments.into_iter().chain(commitments.iter().zip(&blinds)))
    {
        polynomials.push((sources.table(shape, *key, &softmax_columns)?, commitment, blind));
    }
    let openings = M::prove_openings(&mut prover, params, &polynomials, &opening_claims, t)?;
    drop(polynomials);
    drop(prover);
    let session_proof = M::finish_prover(params, session, t, rng)?;
    timings.open = start.elapsed();
    let proof = ModelBlockProof {
        version: crate::PROOF_FORMAT_VERSION,
        commitments,
        session: session_commitment,
        lookups,
        norm: norm_proof,
        feed_forward: match (feed_forward_proofs, middle_sent) {
            (Some((norm, mlp)), Some(middle_value)) => Some(FeedForwardProof { norm, mlp, middle_value }),
            (None, None) => None,
            _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
        },
        post_norm: post_norm_proof.map(|(norm, public_output)| PostNormProof {
            norm,
            public_output,
            residual_values: post_norm_residual_values,
        }),
        output_norms: output_norm_proofs,
        query_key_norms: query_key_norm_proofs,
        residual_input: residual_sent,
        committed_output,
        projections: projection_proofs,
        shared_heads,
        rotations,
        output_value: output_sent,
        attention,
        openings,
        session_proof,
    };
    Ok((statement, proof, timings, opening_claims))
}

/// Verifies a block proof of mode `M` from the statement alone (commitments and output).
///
/// # Errors
/// Statement errors, [`AttentionError::UnsupportedVersion`],
/// [`AttentionError::CheckFailed`] (`"model layer proof shape"`) for commitments or parts of
/// the wrong number or size, the first failing check, and (zero knowledge) the failing group
/// equations at the end.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_block<M: Mode>(
    params: &HyraxParams,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
) -> Result<VerifierTimings, AttentionError> {
    let (mut timings, Pending(pending)) = verify_block_pending::<M>(params, statement, proof)?;
    let start = Instant::now();
    M::check_pending(vec![pending]).map_err(|(_, error)| error)?;
    timings.protocol += start.elapsed();
    Ok(timings)
}

/// [`verify_block`] but for its final group equations, left weighed for the caller to check
/// ([`Mode::check_pending`], with other proofs' in one MSM: a chain's layers).
///
/// # Errors
/// As [`verify_block`], but for the final group equations' failure, which
/// [`Mode::check_pending`] reports. **The caller must check the returned checks**: until
/// then nothing is verified.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) fn verify_block_pending<M: Mode>(
    params: &HyraxParams,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
) -> Result<(VerifierTimings, Pending<M>), AttentionError> {
    if proof.version != crate::PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    statement.validate()?;
    require_proven_softmax(statement.softmax)?;
    let shape = &statement.shape;
    let softmax = statement.softmax;
    let a = &shape.attention;
    let shape_error = AttentionError::CheckFailed { step: STEP_SHAPE };
    let proof_keys = proof_polynomials(shape);
    let layouts = Layouts::new::<M>(shape, softmax)?;
    if proof.commitments.len() != proof_keys.len()
        || proof.projections.projections.len() != 4
        || proof.shared_heads.len() != if shape.is_grouped() { 4 } else { 0 }
        || proof.rotations.len() != if shape.rotary.is_some() { 2 } else { 0 }
        || proof.norm.is_some() != shape.norm.is_some()
        || proof.feed_forward.is_some() != shape.mlp.is_some()
        || proof.post_norm.is_some() != shape.post_norm.is_some()
        || BlockHalf::BOTH
            .iter()
            .any(|h| proof.output_norms.of(*h).is_some() != shape.output_norms.of(*h).is_some())
        || proof.query_key_norms.len() != if shape.query_key_norms.is_some() { 2 } else { 0 }
        || proof.committed_output.is_some()
            != (statement.output.kind() == OutputKind::Committed && shape.post_norm.is_none())
    {
        return Err(shape_error);
    }
    for (key, commitment) in proof_keys.iter().zip(&proof.commitments) {
        let (num_vars, column_vars) = layouts.of(*key)?;
        if commitment.num_vars != num_vars || commitment.column_vars().ok() != Some(column_vars) {
            return Err(shape_error);
        }
    }
    // The weights in the mode's layout (the statement's validation admits either mode's).
    for (i, commitment) in statement.model.tables.iter().enumerate() {
        let (num_vars, column_vars) = layouts.of(BlockPolynomial::Weight(i))?;
        if commitment.num_vars != num_vars || commitment.column_vars().ok() != Some(column_vars) {
            return Err(shape_error);
        }
    }
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = absorb_statement::<M>(statement, &proof.commitments);
    let t = &mut transcript;
    let output_kind = statement.output.kind();
    let mut session =
        M::start_verifier(&|| block_zk_schedule(shape, softmax, output_kind), &proof.session, t)?;
    let mut verifier = M::verifier(params, &mut session);
    let lookup_statements = block_lookup_statements(shape, softmax)?;
    let mut lookup_claims =
        verify_lookup_parts::<M>(&mut verifier, &lookup_statements, &proof.lookups, t)?.into_iter();
    let mut next_claims = || lookup_claims.next().ok_or(AttentionError::CheckFailed { step: STEP_SHAPE });
    let norm_claims = match (shape.norm_shape(), &proof.norm) {
        (Some(norm), Some(p)) => norm_block_claims(
            verify_norm::<M>(&mut verifier, &norm, p, next_claims()?, t)?,
            &NormKeys::attention(shape),
        )?,
        (None, None) => Vec::new(),
        _ => return Err(shape_error),
    };
    let feed_forward_claims = match (shape.mlp_norm_shape(), shape.mlp_shape(), &proof.feed_forward) {
        (Some(norm), Some(mlp), Some(p)) => {
            let norm_claims = verify_norm::<M>(&mut verifier, &norm, &p.norm, next_claims()?, t)?;
            let mlp_claims = verify_mlp::<M>(&mut verifier, &mlp, &p.mlp, next_claims()?, t)?;
            let mut keyed = norm_block_claims(norm_claims, &NormKeys::mlp(shape)?)?;
            keyed.extend(mlp_block_claims(shape, mlp_claims)?);
            keyed
        }
        (None, None, None) => Vec::new(),
        _ => return Err(shape_error),
    };
    let post_norm_claims = match (shape.post_norm_shape(), &proof.post_norm) {
        (Some(norm), Some(p)) => {
            let claims = verify_norm::<M>(&mut verifier, &norm, &p.norm, next_claims()?, t)?;
            let mut keyed = norm_block_claims(claims, &NormKeys::post(shape)?)?;
            match (&statement.output, &p.public_output) {
                (LayerOutput::Public(output), Some(zero)) => {
                    let public_start = Instant::now();
                    let targets = public_output_targets(shape, &mut keyed, output, |c| {
                        M::verifier_constant(&verifier, c)
                    })?;
                    timings.public_evaluations += public_start.elapsed();
                    M::verify_zero(&mut verifier, STEP_PUBLIC_OUTPUT, targets, zero, t)?;
                }
                (LayerOutput::Committed(_), None) => {}
                _ => return Err(shape_error),
            }
            keyed
        }
        (None, None) => Vec::new(),
        _ => return Err(shape_error),
    };
    let mut output_norm_claims = Vec::new();
    for half in BlockHalf::BOTH {
        match (shape.output_norm_shape(half), proof.output_norms.of(half)) {
            (Some(norm), Some(p)) => {
                let claims = verify_norm::<M>(&mut verifier, &norm, p, next_claims()?, t)?;
                output_norm_claims.extend(norm_block_claims(claims, &NormKeys::output(shape, half)?)?);
            }
            (None, None) => {}
            _ => return Err(shape_error),
        }
    }
    for (p, norm_proof) in proof.query_key_norms.iter().enumerate() {
        let norm = shape.query_key_norm_shape(p).ok_or(shape_error.clone())?;
        let claims = verify_norm::<M>(&mut verifier, &norm, norm_proof, next_claims()?, t)?;
        output_norm_claims.extend(norm_block_claims(claims, &NormKeys::query_key(shape, p)?)?);
    }
    let model_vars = shape.table_vars().first().copied().unwrap_or(0);
    let r_z = t.challenge_fields(LABEL_RESIDUAL_POINT, model_vars);
    let alpha = M::receive(&verifier, LABEL_RESIDUAL_VALUE, std::slice::from_ref(&proof.residual_input), t)
        .pop()
        .ok_or(shape_error.clone())?;
    let (public_value, output_claims) = match (&statement.output, &proof.committed_output) {
        // A post-norm block's output is claimed by its norm, not at r_z.
        (_, None) if shape.post_norm.is_some() => {
            (M::verifier_constant(&verifier, Fr::from(0u64)), Vec::new())
        }
        (LayerOutput::Public(output), None) => {
            let public_start = Instant::now();
            let value = M::verifier_constant(&verifier, output_value(shape, output, &r_z)?);
            timings.public_evaluations += public_start.elapsed();
            (value, Vec::new())
        }
        (LayerOutput::Committed(_), Some(sent)) => {
            let eta = M::receive(&verifier, LABEL_COMMITTED_OUTPUT, std::slice::from_ref(sent), t)
                .pop()
                .ok_or(shape_error.clone())?;
            let claim = (BlockPolynomial::Output, EvalClaim { point: r_z.clone(), value: eta.clone() });
            (eta, vec![claim])
        }
        _ => return Err(shape_error),
    };
    let (projected_value, residual_claims) = match &proof.feed_forward {
        Some(p) => {
            let zeta = M::receive(&verifier, LABEL_MIDDLE_VALUE, std::slice::from_ref(&p.middle_value), t)
                .pop()
                .ok_or(shape_error.clone())?;
            let residual_claims = match &proof.post_norm {
                Some(post) => {
                    let [xi, sigma] = <[_; 2]>::try_from(M::receive(
                        &verifier,
                        LABEL_POST_NORM_VALUES,
                        &post.residual_values,
                        t,
                    ))
                    .map_err(|_| shape_error.clone())?;
                    post_norm_residual_claims(&r_z, &zeta, &xi, &sigma)
                }
                None => middle_residual_claims(shape, &r_z, &zeta, &public_value),
            };
            (zeta.plus_scaled(-Fr::one(), &alpha), residual_claims)
        }
        None => (public_value.plus_scaled(-Fr::one(), &alpha), Vec::new()),
    };
    let projections = shape.projections();
    let mut claims =
        verify_projections::<M>(&mut verifier, &projections, &proof.projections, next_claims()?, t)?;
    if shape.is_grouped() {
        for (k, (reduction, p)) in shape.shared_heads().iter().zip(&proof.shared_heads).enumerate() {
            let c = claims.get_mut(1 + k / 2).ok_or(AttentionError::CheckFailed { step: "shared heads" })?;
            let claim = if k % 2 == 0 { &mut c.weights } else { &mut c.bias };
            *claim = verify_shared_heads::<M>(&mut verifier, reduction, p, claim, t)?;
        }
    }
    let mut rotation_claims = Vec::with_capacity(2);
    if let Some(rotary) = shape.rotary {
        let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
        for p in &proof.rotations {
            rotation_claims.push(verify_rotation::<M>(&mut verifier, &rotation, p, next_claims()?, t)?);
        }
    }
    let point = t.challenge_fields(LABEL_OUTPUT_POINT, a.value_model_vars() + a.seq_vars());
    let value = M::receive(&verifier, LABEL_OUTPUT_VALUE, std::slice::from_ref(&proof.output_value), t)
        .pop()
        .ok_or(shape_error.clone())?;
    let output_claim = EvalClaim { point, value };
    let chain_claims = verify_chain_steps::<M>(
        &mut verifier,
        a,
        statement.mask,
        softmax,
        &output_claim,
        &proof.attention,
        next_claims()?,
        t,
    )?;
    if next_claims().is_ok() {
        return Err(shape_error);
    }
    let keyed = block_claims(
        shape,
        &claims,
        &rotation_claims,
        chain_claims,
        output_claim,
        &r_z,
        &alpha,
        projected_value,
        [
            norm_claims,
            feed_forward_claims,
            post_norm_claims,
            output_norm_claims,
            residual_claims,
            output_claims,
        ]
        .concat(),
    );
    let order: Vec<BlockPolynomial> =
        statement_polynomials(shape, output_kind).into_iter().chain(proof_keys).collect();
    let opening_claims = opening_claims(&order, keyed, STEP_CLAIMS)?;
    let commitments: Vec<&HyraxCommitment> = std::iter::once(&statement.input)
        .chain(&statement.residual)
        .chain(&statement.model.tables)
        .chain(statement.output.commitment())
        .chain(&proof.commitments)
        .collect();
    if commitments.len() != order.len() {
        return Err(shape_error);
    }
    M::verify_openings(&mut verifier, params, &commitments, &opening_claims, &proof.openings, t)?;
    drop(verifier);
    let pending = M::close_verifier(params, session, &proof.session_proof, t)?;
    timings.protocol += start.elapsed();
    Ok((timings, Pending(pending)))
}

/// A verification's final checks, not made yet ([`verify_block_pending`]): the type is
/// `#[must_use]` where `M::PendingChecks` alone, in generic code, is not.
#[must_use = "the proof is not verified until its pending checks are checked (Mode::check_pending)"]
pub(crate) struct Pending<M: Mode>(pub(crate) M::PendingChecks);

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::mode::{Plain, Zk};
    use crate::{AttentionShape, SoftmaxParams};
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    pub(super) fn setup(
        residual: Residual,
    ) -> (ModelShape, SoftmaxMode, ModelWeights, Vec<i64>, Option<Vec<i64>>) {
        let shape = ModelShape {
            attention: AttentionShape::new(5, 2, 4, 4).unwrap(),
            model_width: 12,
            shifts: [6, 5, 7, 14],
            residual,
            key_value_heads: 2,
            rotary: None,
            norm: None,
            mlp: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        };
        let softmax = SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(1.0 / 1600.0, 8).unwrap());
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut draw =
            |n: usize, bound: i64| (0..n).map(|_| rng.gen_range(-bound..=bound)).collect::<Vec<_>>();
        let a = &shape.attention;
        let d = shape.model_width;
        let weights = ModelWeights {
            queries: draw(d * a.model_width(), 127),
            keys: draw(d * a.model_width(), 127),
            values: draw(d * a.value_model_width(), 127),
            queries_bias: draw(a.model_width(), 1000),
            keys_bias: draw(a.model_width(), 1000),
            values_bias: draw(a.value_model_width(), 1000),
            output: draw(a.value_model_width() * d, 127),
            output_bias: draw(d, 1000),
            norm: None,
            feed_forward: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        };
        let x = draw(a.seq_len * d, 127);
        let h = (residual == Residual::HiddenState).then(|| draw(a.seq_len * d, 1 << 20));
        (shape, softmax, weights, x, h)
    }

    /// The 32-byte encodings of every final claim's value (the evaluations of X, H, the
    /// weights and every intermediate at the proof's points: what a plain proof reveals about
    /// them), and the proof's bytes.
    fn claim_values_and_bytes<M: Mode>(
        value: impl Fn(&M::ProverValue) -> Fr,
        residual: Residual,
    ) -> (Vec<Vec<u8>>, Vec<u8>) {
        let (shape, softmax, weights, x, h) = setup(residual);
        let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let (model, blinds) = commit_model_with::<M>(&params, &shape, &weights, &mut rng).unwrap();
        let (statement, proof, _, claims) = prove_block_with_claims::<M>(
            &params,
            &shape,
            MaskKind::Causal,
            softmax,
            &x,
            h.as_deref(),
            &BlockEnds::default(),
            &weights,
            &model,
            &blinds,
            &mut rng,
        )
        .unwrap();
        verify_block::<M>(&params, &statement, &proof).unwrap();
        let encodings = claims
            .iter()
            .map(|c| {
                let mut bytes = Vec::new();
                value(&c.value).serialize_compressed(&mut bytes).unwrap();
                bytes
            })
            .collect();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        (encodings, bytes)
    }

    #[test]
    fn no_claim_value_appears_in_a_zero_knowledge_block_proof() {
        for residual in [Residual::LayerInput, Residual::HiddenState] {
            let (values, bytes) =
                claim_values_and_bytes::<Zk>(|v: &zkmha_zk::CommittedValue| v.opening.value, residual);
            assert!(values.len() > 30);
            for (k, value) in values.iter().enumerate() {
                assert!(
                    !bytes.windows(32).any(|w| w == value.as_slice()),
                    "claim {k}'s value is in the proof"
                );
            }
        }
    }

    #[test]
    fn the_plain_block_proof_sends_claim_values_in_the_clear() {
        // The other side of the test above, so that it can fail: the plain proof sends α, Õ(r)
        // and the projections' values in the clear.
        let (values, bytes) = claim_values_and_bytes::<Plain>(|v: &Fr| *v, Residual::LayerInput);
        let found = values.iter().filter(|v| bytes.windows(32).any(|w| w == v.as_slice())).count();
        assert!(found >= 2, "{found} claim values in the plain proof");
    }
}

/// A malicious prover of a false output `Z' = Z + e_0`: it sends `α' = α + Z̃'(r_z) − Z̃(r_z)`,
/// so that the claim the residual leaves on `Y`, `Z̃'(r_z) − α'`, stays true and only the claim
/// on the residual `R` is false; the final opening rejects it, in both modes.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod cheating_residual {
    use super::*;
    use crate::mode::{Plain, Zk};
    use ark_std::rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use std::cell::Cell;

    thread_local! {
        static CHEAT: Cell<bool> = const { Cell::new(false) };
    }

    /// The prover's hook: the claimed output.
    pub(super) fn output(mut output: Vec<i64>) -> Vec<i64> {
        if CHEAT.with(Cell::get) {
            output[0] += 1;
        }
        output
    }

    fn attempt<M: Mode>(residual: Residual) -> Result<VerifierTimings, AttentionError> {
        let (shape, softmax, weights, x, h) = super::tests::setup(residual);
        let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (model, blinds) = commit_model_with::<M>(&params, &shape, &weights, &mut rng).unwrap();
        let prove = |rng: &mut ChaCha20Rng| {
            prove_block::<M>(
                &params,
                &shape,
                MaskKind::Causal,
                softmax,
                &x,
                h.as_deref(),
                &weights,
                &model,
                &blinds,
                rng,
            )
            .unwrap()
        };
        let (honest, _, _) = prove(&mut rng);
        CHEAT.with(|c| c.set(true));
        let (statement, proof, _) = prove(&mut rng);
        CHEAT.with(|c| c.set(false));
        assert_ne!(statement.output, honest.output, "the cheating prover claims a false output");
        verify_block::<M>(&params, &statement, &proof)
    }

    /// The same cheat with a committed output (a chain's boundary): the boundary holds the
    /// false output, so the prover's own check passes, and `α` compensates as above.
    fn attempt_committed<M: Mode>() -> Result<VerifierTimings, AttentionError> {
        let (shape, softmax, weights, x, h) = super::tests::setup(Residual::HiddenState);
        let h = h.unwrap();
        let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (model, blinds) = commit_model_with::<M>(&params, &shape, &weights, &mut rng).unwrap();
        let mut false_output =
            block_output(&shape, MaskKind::Causal, softmax, &x, Some(&h), &weights).unwrap();
        false_output[0] += 1;
        let input = commit_boundary::<M>(&params, &shape, softmax, h, &mut rng).unwrap();
        let output = commit_boundary::<M>(&params, &shape, softmax, false_output, &mut rng).unwrap();
        CHEAT.with(|c| c.set(true));
        let proved = prove_linked_block::<M>(
            &params,
            &shape,
            MaskKind::Causal,
            softmax,
            &x,
            BlockEnds { input: Some(&input), output: Some(&output) },
            &weights,
            &model,
            &blinds,
            &mut rng,
        );
        CHEAT.with(|c| c.set(false));
        let (statement, proof, _) = proved.unwrap();
        assert_eq!(statement.output, LayerOutput::Committed(output.commitment));
        verify_block::<M>(&params, &statement, &proof)
    }

    #[test]
    fn a_false_committed_output_with_a_compensating_residual_value_is_rejected_in_the_plain_mode() {
        assert_eq!(
            attempt_committed::<Plain>().map(|_| ()),
            Err(AttentionError::CheckFailed { step: "openings" })
        );
    }

    #[test]
    fn a_false_committed_output_with_a_compensating_residual_value_is_rejected_in_zero_knowledge() {
        assert!(matches!(attempt_committed::<Zk>(), Err(AttentionError::ZeroKnowledge { .. })));
    }

    #[test]
    fn a_false_output_with_a_compensating_residual_value_is_rejected_in_the_plain_mode() {
        for residual in [Residual::LayerInput, Residual::HiddenState] {
            assert_eq!(
                attempt::<Plain>(residual).map(|_| ()),
                Err(AttentionError::CheckFailed { step: "openings" })
            );
        }
    }

    #[test]
    fn a_false_output_with_a_compensating_residual_value_is_rejected_in_zero_knowledge() {
        for residual in [Residual::LayerInput, Residual::HiddenState] {
            assert!(matches!(attempt::<Zk>(residual), Err(AttentionError::ZeroKnowledge { .. })));
        }
    }
}

// Test-only hooks of the padding-junk regression below: a malicious prover that absorbs the
// statement of a narrower model (`from` columns proven, `to` absorbed) while proving the wider
// computation, whose padded tables are the narrower model's with junk in the padding.
#[cfg(test)]
thread_local! {
    static ABSORB_AS: std::cell::Cell<Option<(usize, usize)>> = const { std::cell::Cell::new(None) };
}

/// The width the transcript absorbs for `width` (itself, but under the regression's hook).
#[cfg(test)]
pub(crate) fn absorbed_width(width: usize) -> usize {
    match ABSORB_AS.with(std::cell::Cell::get) {
        Some((from, to)) if width == from => to,
        _ => width,
    }
}

/// The width the transcript absorbs for `width`.
#[cfg(not(test))]
#[inline]
pub(crate) fn absorbed_width(width: usize) -> usize {
    width
}

/// The output the transcript absorbs (itself, but under the regression's hook).
#[cfg(test)]
pub(crate) fn absorbed_output(output: &[i64], width: usize) -> std::borrow::Cow<'_, [i64]> {
    match ABSORB_AS.with(std::cell::Cell::get) {
        Some((from, to)) if width == from => {
            std::borrow::Cow::Owned(output.chunks(from).flat_map(|row| row[..to].to_vec()).collect())
        }
        _ => std::borrow::Cow::Borrowed(output),
    }
}

/// The output the transcript absorbs.
#[cfg(not(test))]
#[inline]
pub(crate) fn absorbed_output(output: &[i64], _width: usize) -> std::borrow::Cow<'_, [i64]> {
    std::borrow::Cow::Borrowed(output)
}

/// Malicious-prover regression (found by a fresh-context review of this file): junk in the
/// padding of the committed tables. The statement is a `d = 12` model (tables padded to
/// `d̂ = 16`); the prover commits `W_q` with a non-zero padded row 12, `b_o` with a non-zero
/// padded entry 12 and `X` with padded column 12 at −1, and proves the `d = 13` computation on
/// those very tables while absorbing the `d = 12` statement. Before the projections' sum-check
/// carried the public selector `[j < d]`, both verifiers accepted an output `Z` that the
/// `d × n` weights do not compute (24 of 60 entries differ); now the selector's closed form
/// `prefix(12, ρ)` is not the prover's `prefix(13, ρ)`.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod padding_junk {
    use super::*;
    use crate::AttentionShape;
    use crate::mode::{Plain, Zk};
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// The verdict on the forged statement, its output and the honest block's.
    fn attack<M: Mode>() -> (Result<VerifierTimings, AttentionError>, Vec<i64>, Vec<i64>) {
        let softmax =
            SoftmaxMode::Exponential(crate::SoftmaxParams::for_score_scale(1.0 / 1600.0, 8).unwrap());
        let shape12 = ModelShape {
            attention: AttentionShape::new(5, 2, 4, 4).unwrap(),
            model_width: 12,
            shifts: [6, 5, 7, 14],
            residual: Residual::LayerInput,
            key_value_heads: 2,
            rotary: None,
            norm: None,
            mlp: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        };
        let shape13 = ModelShape { model_width: 13, ..shape12 };
        let a = shape12.attention;
        let (n, nv) = (a.model_width(), a.value_model_width());
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut draw =
            |k: usize, bound: i64| (0..k).map(|_| rng.gen_range(-bound..=bound)).collect::<Vec<_>>();
        // The honest d = 12 model and input.
        let w12 = ModelWeights {
            queries: draw(12 * n, 127),
            keys: draw(12 * n, 127),
            values: draw(12 * nv, 127),
            queries_bias: draw(n, 1000),
            keys_bias: draw(n, 1000),
            values_bias: draw(nv, 1000),
            output: draw(nv * 12, 127),
            output_bias: draw(12, 1000),
            norm: None,
            feed_forward: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        };
        let x12 = draw(a.seq_len * 12, 127);
        // The same tables with junk at index 12 (a padded row or column for d = 12).
        let k_o = shape12.shifts[3];
        let mut w13 = w12.clone();
        w13.queries.extend(vec![3000i64; n]);
        w13.keys.extend(vec![0i64; n]);
        w13.values.extend(vec![0i64; nv]);
        w13.output = w12.output.chunks(12).flat_map(|r| [r, &[0][..]].concat()).collect();
        w13.output_bias.push(1i64 << k_o);
        let x13: Vec<i64> = x12.chunks(12).flat_map(|r| [r, &[-1][..]].concat()).collect();
        let params = block_hyrax_params::<M>(&shape12, softmax).unwrap();
        let (model, blinds) = commit_model_with::<M>(&params, &shape13, &w13, &mut rng).unwrap();
        ABSORB_AS.with(|c| c.set(Some((13, 12))));
        let proved = prove_block::<M>(
            &params,
            &shape13,
            MaskKind::Causal,
            softmax,
            &x13,
            None,
            &w13,
            &model,
            &blinds,
            &mut rng,
        );
        ABSORB_AS.with(|c| c.set(None));
        let (st13, proof, _) = proved.unwrap();
        assert!(st13.output.public().unwrap().chunks(13).all(|r| r[12] == 0), "Z's padded column is 0");
        let z12: Vec<i64> = st13.output.public().unwrap().chunks(13).flat_map(|r| r[..12].to_vec()).collect();
        let statement = ModelStatement { shape: shape12, output: LayerOutput::Public(z12.clone()), ..st13 };
        // The honest d = 12 block on the committed tensors' d × n and s × d parts.
        let (m12, b12) = commit_model_with::<M>(&params, &shape12, &w12, &mut rng).unwrap();
        let (honest, _, _) = prove_block::<M>(
            &params,
            &shape12,
            MaskKind::Causal,
            softmax,
            &x12,
            None,
            &w12,
            &m12,
            &b12,
            &mut rng,
        )
        .unwrap();
        (verify_block::<M>(&params, &statement, &proof), z12, honest.output.public().unwrap().to_vec())
    }

    fn rejected<M: Mode>() {
        let (result, z, honest) = attack::<M>();
        assert_ne!(z, honest, "the forged output is false");
        assert_eq!(
            result.map(|_| ()),
            Err(AttentionError::CheckFailed { step: "projection input selector" })
        );
    }

    #[test]
    fn padding_junk_in_the_committed_tables_is_rejected_in_the_plain_mode() {
        rejected::<Plain>();
    }

    #[test]
    fn padding_junk_in_the_committed_tables_is_rejected_in_zero_knowledge() {
        rejected::<Zk>();
    }
}

#[cfg(test)]
#[path = "block_attack_mlp.rs"]
mod attack_mlp;

#[cfg(test)]
#[path = "block_attack_output_norms.rs"]
mod attack_output_norms;

#[cfg(test)]
#[path = "block_attack_post_norm.rs"]
mod attack_post_norm;
