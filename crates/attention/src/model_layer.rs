//! An attention layer proven from its input `X` and the model's weights: the `Q`, `K`, `V`
//! projections in fixed point ([`crate::projection`]) and the attention on their outputs
//! ([`crate::committed`]), in one proof.
//!
//! ```text
//! model      W_q, W_k (d_model × h·m), W_v (d_model × h·m_v), b_q, b_k, b_v  (integers)
//!            → ModelCommitment, made once and reused by every proof of the model
//! relation   Q = round((X·W_q + b_q) / 2^k), K, V likewise;  O = attention(Q, K, V)
//! statement  shapes (attention, d_model, k), mask, softmax mode, commitment to X (s × d_model),
//!            the model commitment, the output O — absorbed first
//! proof      commitments to Q, K, V and to the three projections' range multiplicities
//!            (absorbed next); the three projection proofs; the attention proof on the
//!            committed Q, K, V, whose final multi-point opening also answers every
//!            projection claim (X at three points, the weights, the biases, Q, K, V, the
//!            multiplicities)
//! ```
//!
//! Not yet here (issue 6 continues): the output projection and the residual, real model
//! files and their quantization, GQA and RoPE, the command line. The commitments to `X` and
//! the weights use their own Hyrax layout when it differs from the attention's, so their
//! claims may take a second combined row in the final opening.

use crate::commitment_layout::{largest_committed_vars, table_column_vars};
use crate::committed::{InputCommitments, commit_padded_inputs, padded_inputs};
use crate::layer::{
    AttentionLayerProof, CommittedInputTables, CommittedInputs, ProverTimings, VerifierTimings,
    absorb_output, check_output_len, prove_chain, verify_chain, witness_alongside_table,
};
use crate::projection::{
    ProjectionClaims, ProjectionProof, ProjectionShape, ProjectionWitness, compute_projection,
    projection_multiplicities, prove_projection, verify_projection,
};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::Instant;
use zkmha_field::Fr;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, OpeningClaim, PolynomialTable, split_vars};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"attention-model-layer";
const LABEL_SHAPE: &[u8] = b"attention/model/shape";
const LABEL_MASK: &[u8] = b"attention/model/mask";
const LABEL_SOFTMAX: &[u8] = b"attention/model/softmax";
const LABEL_COMMITMENTS: &[u8] = b"attention/model/commitments";
const LABEL_INTERMEDIATES: &[u8] = b"attention/model/intermediates";

/// The shapes of a model layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelShape {
    /// The attention on the projections' outputs.
    pub attention: AttentionShape,
    /// `d_model`: the columns of `X`, the rows of the weights.
    pub model_width: usize,
    /// The projections' rescaling shift `k`.
    pub shift: u32,
}

impl ModelShape {
    /// Checks every dimension.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.attention.validate()?;
        for projection in self.projections() {
            projection.validate()?;
        }
        Ok(())
    }

    /// The `Q`, `K`, `V` projections' shapes.
    pub fn projections(&self) -> [ProjectionShape; 3] {
        let a = &self.attention;
        let shape = |outputs| ProjectionShape {
            rows: a.seq_len,
            inputs: self.model_width,
            outputs,
            shift: self.shift,
        };
        [shape(a.model_width()), shape(a.model_width()), shape(a.value_model_width())]
    }

    /// `log d̂_model`.
    fn model_vars(&self) -> usize {
        self.model_width.next_power_of_two().trailing_zeros() as usize
    }

    /// The variables of the input and weight tables: `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`,
    /// `b_v` (padded to powers of two).
    fn table_vars(&self) -> [usize; 7] {
        let a = &self.attention;
        let m = self.model_vars();
        [
            a.seq_vars() + m,
            m + a.model_vars(),
            m + a.model_vars(),
            m + a.value_model_vars(),
            a.model_vars(),
            a.model_vars(),
            a.value_model_vars(),
        ]
    }

    /// The Hyrax layout (column variables) of `X`, the weights and the multiplicities.
    fn layout(&self, softmax: SoftmaxMode) -> usize {
        split_vars(self.largest_vars(softmax)).1
    }

    fn largest_vars(&self, softmax: SoftmaxMode) -> usize {
        let tables = self.table_vars().into_iter().max().unwrap_or(0);
        tables.max(self.shift as usize).max(largest_committed_vars(&self.attention, softmax))
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.attention.append_to_transcript(transcript);
        transcript.append_shape(LABEL_SHAPE, &[self.model_width, self.shift as usize]);
    }
}

/// The Hyrax generators for a model layer (transparent, derived from the shape).
pub fn model_hyrax_params(shape: &ModelShape, softmax: SoftmaxMode) -> HyraxParams {
    HyraxParams::new(shape.largest_vars(softmax))
}

/// A layer's quantized weights, row-major: `W_q`, `W_k` (`d_model × h·m`), `W_v`
/// (`d_model × h·m_v`), the biases (`h·m`, `h·m`, `h·m_v`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelWeights {
    /// `W_q`.
    pub queries: Vec<i64>,
    /// `W_k`.
    pub keys: Vec<i64>,
    /// `W_v`.
    pub values: Vec<i64>,
    /// `b_q`.
    pub queries_bias: Vec<i64>,
    /// `b_k`.
    pub keys_bias: Vec<i64>,
    /// `b_v`.
    pub values_bias: Vec<i64>,
}

/// Commitments to a layer's weights, made once per model and reused by every proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelCommitment {
    /// To `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, in that order.
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
    /// The model commitment.
    pub model: ModelCommitment,
    /// The claimed output `O`, `s × h·m_v`, row-major.
    pub output: Vec<Fr>,
}

/// A model-layer proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelLayerProof {
    /// Commitments to `Q`, `K`, `V` (the attention's layout).
    pub intermediates: InputCommitments,
    /// Commitments to the three projections' range multiplicities.
    pub multiplicities: Vec<HyraxCommitment>,
    /// The `Q`, `K`, `V` projections.
    pub projections: Vec<ProjectionProof>,
    /// The attention on `Q`, `K`, `V`; its final opening answers every claim above.
    pub layer: AttentionLayerProof,
}

/// `M` (`rows × columns`, row-major) zero-padded to `2^row_vars × 2^column_vars`.
fn pad(values: &[i64], rows: usize, columns: usize, row_vars: usize, column_vars: usize) -> Vec<i64> {
    let width = 1usize << column_vars;
    let mut out = vec![0i64; width << row_vars];
    for (r, row) in values.chunks(columns.max(1)).take(rows).enumerate() {
        out[r * width..r * width + row.len()].copy_from_slice(row);
    }
    out
}

/// The padded `X`, `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v` tables, after checking sizes.
fn padded_tables(
    shape: &ModelShape,
    input: &[i64],
    weights: &ModelWeights,
) -> Result<[Vec<i64>; 7], AttentionError> {
    let a = &shape.attention;
    let (d, n, nv) = (shape.model_width, a.model_width(), a.value_model_width());
    let sizes = [
        ("X", input.len(), a.seq_len, d),
        ("W_q", weights.queries.len(), d, n),
        ("W_k", weights.keys.len(), d, n),
        ("W_v", weights.values.len(), d, nv),
        ("b_q", weights.queries_bias.len(), 1, n),
        ("b_k", weights.keys_bias.len(), 1, n),
        ("b_v", weights.values_bias.len(), 1, nv),
    ];
    for (tensor, got, rows, columns) in sizes {
        if got != rows * columns {
            return Err(AttentionError::WrongTensorSize {
                tensor,
                rows,
                columns,
                expected: rows * columns,
                got,
            });
        }
    }
    let (sv, mv) = (a.seq_vars(), shape.model_vars());
    let (qv, vv) = (a.model_vars(), a.value_model_vars());
    Ok([
        pad(input, a.seq_len, d, sv, mv),
        pad(&weights.queries, d, n, mv, qv),
        pad(&weights.keys, d, n, mv, qv),
        pad(&weights.values, d, nv, mv, vv),
        pad(&weights.queries_bias, 1, n, 0, qv),
        pad(&weights.keys_bias, 1, n, 0, qv),
        pad(&weights.values_bias, 1, nv, 0, vv),
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
    softmax: SoftmaxMode,
    weights: &ModelWeights,
) -> Result<ModelCommitment, AttentionError> {
    shape.validate()?;
    let empty_input = vec![0i64; shape.attention.seq_len * shape.model_width];
    let tables = padded_tables(shape, &empty_input, weights)?;
    let vars = shape.table_vars();
    let layout = shape.layout(softmax);
    let commitments = tables
        .iter()
        .zip(vars)
        .skip(1)
        .map(|(table, n)| commit_table(params, layout, n, table))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ModelCommitment { tables: commitments })
}

impl ModelStatement {
    fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        transcript.append_u64(LABEL_MASK, u64::from(self.mask.code()));
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = (&self.input, &self.model).serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        absorb_output(&self.output, transcript);
    }

    fn validate(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        check_output_len(&self.shape.attention, &self.output)?;
        let layout = self.shape.layout(self.softmax);
        let vars = self.shape.table_vars();
        let tables: Vec<&HyraxCommitment> = std::iter::once(&self.input).chain(&self.model.tables).collect();
        if tables.len() != vars.len()
            || tables
                .iter()
                .zip(vars)
                .any(|(c, n)| c.num_vars != n || c.column_vars().ok() != Some(table_column_vars(n, layout)))
        {
            return Err(AttentionError::CheckFailed { step: "model commitment shape" });
        }
        Ok(())
    }
}

/// Absorbs the commitments the prover makes after the statement.
fn absorb_intermediates(
    intermediates: &InputCommitments,
    multiplicities: &[HyraxCommitment],
    transcript: &mut Transcript,
) {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail.
    let _ = (intermediates, multiplicities).serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_INTERMEDIATES, &bytes);
}

/// The final opening's claims from the three projections, indexed as
/// `[Q, K, V, X, W_q, W_k, W_v, b_q, b_k, b_v, m_q, m_k, m_v]`.
fn projection_opening_claims(claims: &[ProjectionClaims]) -> Vec<OpeningClaim> {
    let claim = |polynomial: usize, c: &EvalClaim| OpeningClaim {
        polynomial,
        point: c.point.clone(),
        value: c.value,
    };
    claims
        .iter()
        .enumerate()
        .flat_map(|(p, c)| {
            [
                claim(p, &c.output),
                claim(3, &c.input),
                claim(4 + p, &c.weights),
                claim(7 + p, &c.bias),
                claim(10 + p, &c.multiplicities),
            ]
        })
        .collect()
}

/// Runs the projections and the attention on `X` (`s × d_model`, integers) with the committed
/// weights and proves it all.
///
/// # Errors
/// Bad shapes or tensors, projection outputs the attention cannot take
/// ([`AttentionError::ValueOutOfRange`]: choose a larger shift), a model commitment of the
/// wrong shape, and the sub-protocols' errors.
#[allow(clippy::too_many_arguments)]
pub fn prove_model_layer(
    params: &HyraxParams,
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    input: &[i64],
    weights: &ModelWeights,
    model: &ModelCommitment,
) -> Result<(ModelStatement, ModelLayerProof, ProverTimings), AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    shape.validate()?;
    let tables = padded_tables(shape, input, weights)?;
    let projections = shape.projections();
    let biases = [&weights.queries_bias, &weights.keys_bias, &weights.values_bias];
    let matrices = [&weights.queries, &weights.keys, &weights.values];
    let mut witnesses = Vec::with_capacity(3);
    for ((projection, w), b) in projections.iter().zip(matrices).zip(biases) {
        let output = compute_projection(projection, input, w, b)?;
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
    let mut witness = witness_alongside_table(&shape.attention, mask, softmax, &inputs, Some(params))?;
    timings.witness = start.elapsed();

    let start = Instant::now();
    let layout = shape.layout(softmax);
    let vars = shape.table_vars();
    let statement = ModelStatement {
        shape: *shape,
        mask,
        softmax,
        input: commit_table(params, layout, vars[0], &tables[0])?,
        model: model.clone(),
        output: witness.output.clone(),
    };
    statement.validate()?;
    let padded = padded_inputs(&shape.attention, &inputs);
    let intermediates = commit_padded_inputs(params, &shape.attention, softmax, &padded)?;
    let counts = witnesses
        .iter()
        .zip(&projections)
        .map(|(w, p)| projection_multiplicities(p, w))
        .collect::<Result<Vec<_>, _>>()?;
    let multiplicities = counts
        .iter()
        .map(|m| commit_table(params, layout, shape.shift as usize, m))
        .collect::<Result<Vec<_>, _>>()?;
    timings.commit = start.elapsed();

    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    absorb_intermediates(&intermediates, &multiplicities, &mut transcript);
    let mut projection_proofs = Vec::with_capacity(3);
    let mut claims = Vec::with_capacity(3);
    for ((projection, w), m) in projections.iter().zip(&witnesses).zip(&counts) {
        let (p, c) = prove_projection(projection, w, m, &mut transcript)?;
        projection_proofs.push(p);
        claims.push(c);
    }
    drop(witnesses);
    timings.statement = start.elapsed();

    let mut extra_items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> =
        vec![(integers(vars[0], &tables[0]), &statement.input)];
    for ((table, n), commitment) in tables.iter().zip(vars).skip(1).zip(&statement.model.tables) {
        extra_items.push((integers(n, table), commitment));
    }
    for (count, commitment) in counts.iter().zip(&multiplicities) {
        extra_items.push((integers(shape.shift as usize, count), commitment));
    }
    let committed = CommittedInputTables {
        commitments: &intermediates,
        tables: &padded,
        extra_items,
        extra_claims: projection_opening_claims(&claims),
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
    let proof = ModelLayerProof { intermediates, multiplicities, projections: projection_proofs, layer };
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
    let shape = &statement.shape;
    let attention = &shape.attention;
    proof.intermediates.validate(attention, statement.softmax)?;
    let layout = shape.layout(statement.softmax);
    let table_vars = shape.shift as usize;
    if proof.multiplicities.len() != 3
        || proof.projections.len() != 3
        || proof.multiplicities.iter().any(|c| {
            c.num_vars != table_vars || c.column_vars().ok() != Some(table_column_vars(table_vars, layout))
        })
    {
        return Err(AttentionError::CheckFailed { step: "model layer proof shape" });
    }
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    absorb_intermediates(&proof.intermediates, &proof.multiplicities, &mut transcript);
    let mut claims = Vec::with_capacity(3);
    for (projection, p) in shape.projections().iter().zip(&proof.projections) {
        claims.push(verify_projection(projection, p, &mut transcript)?);
    }
    let extra_commitments: Vec<&HyraxCommitment> = std::iter::once(&statement.input)
        .chain(&statement.model.tables)
        .chain(&proof.multiplicities)
        .collect();
    timings.protocol += start.elapsed();
    verify_chain(
        attention,
        statement.mask,
        statement.softmax,
        params,
        &statement.output,
        &proof.layer,
        Some(CommittedInputs {
            commitments: &proof.intermediates,
            extra_commitments,
            extra_claims: projection_opening_claims(&claims),
        }),
        &mut transcript,
        &mut timings,
    )?;
    Ok(timings)
}
