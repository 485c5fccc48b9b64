//! Committed mode: the verifier sees commitments to `Q`, `K`, `V` instead of the tensors.
//!
//! ```text
//! statement: shape, mask kind, softmax mode, Hyrax commitments C_Q, C_K, C_V, the output O
//! proof:     the layer proof (unchanged) + batched Hyrax openings of the three input claims,
//!            one per group sharing a column point (one in all whenever d = d_v)
//! verifier:  runs the chain to the claims Q(p_Q) = y_Q, K(p_K) = y_K, V(p_V) = y_V and checks each
//!            against its commitment; it never reads Q, K or V
//! ```
//!
//! Hyrax is the scheme here because its opening costs the prover no group operation and its
//! setup is transparent (the generators depend only on the shape); `docs/PCS.md` compares it
//! with HyperKZG, whose proofs are smaller but whose openings cost seconds at 2^20.

use crate::layer::{
    AttentionLayerProof, DOMAIN, LABEL_COMMITMENTS, LABEL_MASK, LABEL_SOFTMAX, ProverTimings,
    VerifierTimings, absorb_output, check_output_len, prove_chain, verify_chain, witness_alongside_table,
};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::Instant;
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, HyraxProof, PcsError};
use zkmha_transcript::Transcript;

/// Commitments to the padded `Q`, `K` (`ŝ × d`) and `V` (`ŝ × d_v`).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct InputCommitments {
    /// To `Q`.
    pub queries: HyraxCommitment,
    /// To `K`.
    pub keys: HyraxCommitment,
    /// To `V`.
    pub values: HyraxCommitment,
}

/// The public statement of a committed-mode proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct CommittedStatement {
    /// Shapes.
    pub shape: AttentionShape,
    /// Mask kind.
    pub mask: MaskKind,
    /// What the softmax slot holds.
    pub softmax: SoftmaxMode,
    /// Commitments to the inputs.
    pub commitments: InputCommitments,
    /// The claimed output `O`, `s × h·m_v`, row-major.
    pub output: Vec<Fr>,
}

/// A committed-mode proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct CommittedLayerProof {
    /// The layer proof.
    pub layer: AttentionLayerProof,
    /// Openings of `Q`, `K`, `V` at the layer proof's final claims, one per group of claims
    /// sharing a column point (one for all three when `d = d_v`).
    pub openings: Vec<HyraxProof>,
}

/// The Hyrax generators for `shape` and `softmax` (transparent: anyone derives the same ones):
/// enough for the inputs and, when the softmax is proven, for its `ĥ × ŝ × ŝ` witness and its
/// lookup's multiplicities.
pub fn hyrax_params_for(shape: &AttentionShape, softmax: SoftmaxMode) -> HyraxParams {
    let inputs = shape.seq_vars() + shape.model_vars().max(shape.value_model_vars());
    let softmax_vars = match softmax {
        SoftmaxMode::Identity => 0,
        SoftmaxMode::Exponential(_) => (2 * shape.seq_vars() + shape.head_vars()).max(SOFTMAX_TABLE_VARS),
    };
    HyraxParams::new(inputs.max(softmax_vars))
}

/// Variables of the softmax lookup table (two segments of 2^16 rows).
const SOFTMAX_TABLE_VARS: usize = 17;

fn pcs_error(step: &'static str) -> impl Fn(PcsError) -> AttentionError {
    move |_| AttentionError::CheckFailed { step }
}

/// `Q`, `K`, `V` padded with zeros to their power-of-two matrices, as integers.
fn padded_inputs(shape: &AttentionShape, inputs: &AttentionInputs) -> [(usize, Vec<i64>); 3] {
    let pad = |data: &[i64], columns: usize, column_vars: usize| -> (usize, Vec<i64>) {
        let width = 1usize << column_vars;
        let mut out = vec![0i64; shape.padded_seq_len() * width];
        for (i, row) in data.chunks(columns.max(1)).enumerate() {
            out[i * width..i * width + row.len()].copy_from_slice(row);
        }
        (shape.seq_vars() + column_vars, out)
    };
    [
        pad(&inputs.queries, shape.model_width(), shape.model_vars()),
        pad(&inputs.keys, shape.model_width(), shape.model_vars()),
        pad(&inputs.values, shape.value_model_width(), shape.value_model_vars()),
    ]
}

/// Commits to the inputs.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] / [`AttentionError::ValueOutOfRange`] for bad inputs, or
/// [`AttentionError::CheckFailed`] when the generators are too few for the shape.
pub fn commit_inputs(
    params: &HyraxParams,
    shape: &AttentionShape,
    inputs: &AttentionInputs,
) -> Result<InputCommitments, AttentionError> {
    inputs.validate(shape)?;
    let [q, k, v] = padded_inputs(shape, inputs);
    let commit = |(num_vars, table): &(usize, Vec<i64>)| {
        Hyrax::commit_small(params, *num_vars, table).map_err(pcs_error("input commitment"))
    };
    Ok(InputCommitments { queries: commit(&q)?, keys: commit(&k)?, values: commit(&v)? })
}

impl CommittedStatement {
    fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        transcript.append_u64(LABEL_MASK, u64::from(self.mask.code()));
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = self.commitments.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        absorb_output(&self.output, transcript);
    }

    fn validate(&self) -> Result<(), AttentionError> {
        let shape = &self.shape;
        shape.validate()?;
        check_output_len(shape, &self.output)?;
        let c = &self.commitments;
        for (commitment, vars) in [
            (&c.queries, shape.seq_vars() + shape.model_vars()),
            (&c.keys, shape.seq_vars() + shape.model_vars()),
            (&c.values, shape.seq_vars() + shape.value_model_vars()),
        ] {
            if commitment.num_vars != vars {
                return Err(AttentionError::CheckFailed { step: "input commitment shape" });
            }
        }
        Ok(())
    }
}

/// Commits to the inputs, runs the forward pass and proves it; the statement holds the
/// commitments, not the tensors.
///
/// # Errors
/// As [`crate::prove_layer`] and [`commit_inputs`].
pub fn prove_layer_committed(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<(CommittedStatement, CommittedLayerProof, ProverTimings), AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    let mut witness = witness_alongside_table(shape, mask, softmax, inputs, Some(params))?;
    timings.witness = start.elapsed();
    let start = Instant::now();
    let commitments = commit_inputs(params, shape, inputs)?;
    timings.commit = start.elapsed();
    let statement =
        CommittedStatement { shape: *shape, mask, softmax, commitments, output: witness.output.clone() };
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.statement = start.elapsed();
    let (layer, claims) =
        prove_chain(shape, mask, statement.softmax, params, &mut witness, &mut transcript, &mut timings)?;

    let start = Instant::now();
    let qk_vars = shape.seq_vars() + shape.model_vars();
    let v_vars = shape.seq_vars() + shape.value_model_vars();
    let tables = [
        DenseMultilinearExtension::new(qk_vars, std::mem::take(&mut witness.queries))?,
        DenseMultilinearExtension::new(qk_vars, std::mem::take(&mut witness.keys))?,
        DenseMultilinearExtension::new(v_vars, std::mem::take(&mut witness.values))?,
    ];
    let c = &statement.commitments;
    let items = [
        (&tables[0], &c.queries, claims.queries.point.as_slice()),
        (&tables[1], &c.keys, claims.keys.point.as_slice()),
        (&tables[2], &c.values, claims.values.point.as_slice()),
    ];
    let openings = Hyrax::open_grouped(&items, &mut transcript).map_err(pcs_error("input opening"))?;
    timings.open = start.elapsed();
    Ok((statement, CommittedLayerProof { layer, openings }, timings))
}

/// Verifies a committed-mode proof using only the statement (commitments and output) and the
/// transparent generators.
///
/// # Errors
/// Statement errors, the first failing sub-protocol, or [`AttentionError::CheckFailed`] naming
/// the input whose opening fails.
#[deny(clippy::indexing_slicing)]
pub fn verify_layer_committed(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &CommittedLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    statement.validate()?;
    let shape = &statement.shape;
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.public_evaluations += start.elapsed();
    let claims = verify_chain(
        shape,
        statement.mask,
        statement.softmax,
        params,
        &statement.output,
        &proof.layer,
        &mut transcript,
        &mut timings,
    )?;
    let start = Instant::now();
    let c = &statement.commitments;
    let batch: Vec<(&HyraxCommitment, &[Fr], Fr)> =
        [(&c.queries, &claims.queries), (&c.keys, &claims.keys), (&c.values, &claims.values)]
            .into_iter()
            .map(|(c, claim)| (c, claim.point.as_slice(), claim.value))
            .collect();
    Hyrax::verify_grouped(params, &batch, &proof.openings, &mut transcript)
        .map_err(pcs_error("input openings"))?;
    timings.protocol += start.elapsed();
    Ok(timings)
}
