//! The layer proof: every sub-protocol chained from the output back to the inputs.
//!
//! ```text
//! statement: shape (s, h, m, m_v), mask kind, softmax mode, Q, K, V (public integers), O (claimed)
//! absorb the statement; draw r = [r_col ‖ r_row];  y = Õ(r)
//!   unpadding      Õ(r)            → Ô(q)                      (q = [q_m ‖ q_h ‖ q_i])
//!   softmax·V      Ô(q)            → Ã([t_j ‖ q_i ‖ t_h]),  V̂([q_m ‖ t_h ‖ t_j])
//!   softmax slot   Ã(p)            → QK̃_M(p)                   (identity: linear attention)
//!   masking        QK̃_M(p)         → QK̂(u)
//!   batched QKᵀ    QK̂(u)           → Q̂([w ‖ u_i]),  K̂([w ‖ u_j])
//!   padding        Q̂, K̂, V̂ claims  → Q, K, V claims             (one batched sum-check)
//! the verifier discharges the Q, K, V claims by evaluating the public inputs' MLEs
//! ```
//!
//! Soundness: each sum-check errs with probability ≤ (variables · degree)/|F|, the batching
//! with ≤ 1/|F|; every structured factor is recomputed by the verifier.

use crate::attention_values::AttentionValuesProof;
use crate::chain::{ChainProof, prove_chain_steps, verify_chain_steps};
use crate::committed::InputCommitments;
use crate::masking::MaskingProof;
use crate::mode::Plain;
use crate::padding::{InputClaims, PaddingProof};
use crate::qk::QkProof;
use crate::softmax::{
    SoftmaxCommitments, SoftmaxMode, SoftmaxSlotProof, SoftmaxStageTimings, commit_softmax,
    softmax_commitment_list, softmax_opening_tables,
};
use crate::unpadding::UnpaddingProof;
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, compute_witness_for_mode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::{Duration, Instant};
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, MultiOpeningProof, OpeningClaim, PolynomialTable};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

/// The proof format this code writes and reads.
pub const PROOF_FORMAT_VERSION: u32 = 11;

pub(crate) const DOMAIN: &[u8] = b"attention-layer";
/// The zero-knowledge layer's transcript domain (`crate::zk_layer`).
pub(crate) const DOMAIN_ZK: &[u8] = b"attention-layer-zk";
pub(crate) const LABEL_MASK: &[u8] = b"attention/statement/mask";
pub(crate) const LABEL_SOFTMAX: &[u8] = b"attention/statement/softmax";
const LABEL_QUERIES: &[u8] = b"attention/statement/queries";
const LABEL_KEYS: &[u8] = b"attention/statement/keys";
const LABEL_VALUES: &[u8] = b"attention/statement/values";
const LABEL_OUTPUT: &[u8] = b"attention/statement/output";
pub(crate) const LABEL_OUTPUT_POINT: &[u8] = b"attention/output-point";
const LABEL_OUTPUT_VALUE: &[u8] = b"attention/output-value";
pub(crate) const LABEL_COMMITMENTS: &[u8] = b"attention/statement/commitments";

/// The public statement of a layer proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionStatement {
    /// Shapes.
    pub shape: AttentionShape,
    /// Mask kind.
    pub mask: MaskKind,
    /// What the softmax slot holds.
    pub softmax: SoftmaxMode,
    /// `Q`, `K`, `V` (public in this mode).
    pub inputs: AttentionInputs,
    /// The claimed output `O`, `s × h·m_v`, row-major.
    pub output: Vec<Fr>,
}

impl AttentionStatement {
    /// Absorbs the whole statement. The tensors enter as BLAKE3 digests of their canonical
    /// encodings (inputs: little-endian i64; output: 32-byte field elements), so the transcript
    /// binds every entry while absorbing a few hundred bytes.
    fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        transcript.append_u64(LABEL_MASK, u64::from(self.mask.code()));
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        for (label, data) in [
            (LABEL_QUERIES, &self.inputs.queries),
            (LABEL_KEYS, &self.inputs.keys),
            (LABEL_VALUES, &self.inputs.values),
        ] {
            let mut hasher = blake3::Hasher::new();
            hasher.update(&(data.len() as u64).to_le_bytes());
            let mut bytes = Vec::with_capacity(8 * 4096);
            for chunk in data.chunks(4096) {
                bytes.clear();
                bytes.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
                hasher.update(&bytes);
            }
            transcript.append_bytes(label, hasher.finalize().as_bytes());
        }
        absorb_output(&self.output, transcript);
    }

    fn validate(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        self.inputs.validate(&self.shape)?;
        check_output_len(&self.shape, &self.output)
    }
}

/// A layer proof (serializable; carries its format version).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct AttentionLayerProof {
    /// [`PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// Unpadding.
    pub unpadding: UnpaddingProof,
    /// `softmax·V`.
    pub attention_values: AttentionValuesProof,
    /// Commitments to the softmax witness (exponential mode), absorbed right after the
    /// statement.
    pub softmax_commitments: Option<SoftmaxCommitments>,
    /// The softmax slot.
    pub softmax: SoftmaxSlotProof,
    /// Masking (linear attention only: the proven softmax multiplies by the zeroifier itself).
    pub masking: Option<MaskingProof>,
    /// Batched `QKᵀ`.
    pub qk: QkProof,
    /// Padding of Q, K, V.
    pub padding: PaddingProof,
    /// One multi-point opening of every committed polynomial's claims: the softmax's columns
    /// (exponential mode) and `Q`, `K`, `V` (committed mode); absent when nothing is committed.
    pub openings: Option<MultiOpeningProof>,
    /// `Õ(r)` when the output itself is committed (a model layer's intermediate): the
    /// verifier cannot evaluate it, so it is sent and its claim joins the final opening.
    pub output_value: Option<Fr>,
}

/// The committed inputs as the prover holds them: commitments and the padded integer tables
/// `(num_vars, entries)` of `Q`, `K`, `V`.
pub(crate) struct CommittedInputTables<'a> {
    pub(crate) commitments: &'a InputCommitments,
    pub(crate) tables: &'a [(usize, Vec<i64>); 3],
    /// Further committed polynomials and their claims for the final opening (a model layer's
    /// projections): claim indices count `Q`, `K`, `V` as 0, 1, 2 and `extra_items` from 3.
    pub(crate) extra_items: Vec<(PolynomialTable<'a>, &'a HyraxCommitment)>,
    pub(crate) extra_claims: Vec<OpeningClaim>,
    /// The index (counted as for `extra_claims`) of a committed output `O`: its claim then
    /// joins the final opening instead of being evaluated from a public output.
    pub(crate) output_polynomial: Option<usize>,
}

/// The verifier's side of [`CommittedInputTables`].
pub(crate) struct CommittedInputs<'a> {
    pub(crate) commitments: &'a InputCommitments,
    pub(crate) extra_commitments: Vec<&'a HyraxCommitment>,
    pub(crate) extra_claims: Vec<OpeningClaim>,
    pub(crate) output_polynomial: Option<usize>,
}

/// The committed-mode claims of the final opening, the same list on both sides: `Q`, `K`, `V`
/// at `base..base + 3`, then the extra claims (indices counted from `base`), then the committed
/// output's claim.
fn committed_claims(
    base: usize,
    input_claims: &InputClaims,
    extra: &[OpeningClaim],
    output_polynomial: Option<usize>,
    output_claim: &EvalClaim,
) -> Vec<OpeningClaim> {
    let claim = |polynomial: usize, c: &EvalClaim| OpeningClaim {
        polynomial,
        point: c.point.clone(),
        value: c.value,
    };
    let inputs = [&input_claims.queries, &input_claims.keys, &input_claims.values];
    let mut claims: Vec<OpeningClaim> = inputs.iter().enumerate().map(|(k, c)| claim(base + k, c)).collect();
    claims.extend(extra.iter().map(|c| OpeningClaim { polynomial: c.polynomial + base, ..c.clone() }));
    if let Some(index) = output_polynomial {
        claims.push(claim(base + index, output_claim));
    }
    claims
}

/// Prover wall-clock time per stage.
#[derive(Clone, Debug, Default)]
pub struct ProverTimings {
    /// The forward pass (witness).
    pub witness: Duration,
    /// Absorbing the statement and evaluating the output claim.
    pub statement: Duration,
    /// Unpadding.
    pub unpadding: Duration,
    /// `softmax·V`.
    pub attention_values: Duration,
    /// Masking.
    pub masking: Duration,
    /// Committing to the softmax witness (exponential mode).
    pub softmax_commit: Duration,
    /// The proven softmax: lookup, sum-check and openings (exponential mode).
    pub softmax: Duration,
    /// The proven softmax's stages (exponential mode).
    pub softmax_stages: SoftmaxStageTimings,
    /// Batched `QKᵀ`.
    pub qk: Duration,
    /// Padding.
    pub padding: Duration,
    /// Committing to the inputs (committed mode).
    pub commit: Duration,
    /// The final multi-point opening of every committed polynomial (softmax columns, and
    /// `Q`, `K`, `V` in committed mode).
    pub open: Duration,
}

impl ProverTimings {
    /// Sum of the stages.
    pub fn total(&self) -> Duration {
        self.witness
            + self.statement
            + self.unpadding
            + self.attention_values
            + self.masking
            + self.softmax_commit
            + self.softmax
            + self.qk
            + self.padding
            + self.open
    }
}

/// Verifier wall-clock time.
#[derive(Clone, Debug, Default)]
pub struct VerifierTimings {
    /// The protocol: sum-checks, closed forms, transcript (without the statement digest).
    pub protocol: Duration,
    /// Reading the public tensors: hashing them into the transcript and evaluating their MLEs
    /// for the output claim and the final input claims (linear in their size; replaced by
    /// commitments in committed mode).
    pub public_evaluations: Duration,
}

pub(crate) fn matrix_mle(
    rows: usize,
    columns: usize,
    data: &[Fr],
) -> Result<DenseMultilinearExtension, AttentionError> {
    Ok(DenseMultilinearExtension::from_matrix(rows, columns, data)?)
}

/// Checks that `output` holds `s · h·m_v` entries.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`].
pub(crate) fn check_output_len(shape: &AttentionShape, output: &[Fr]) -> Result<(), AttentionError> {
    let expected = shape.seq_len * shape.value_model_width();
    if output.len() != expected {
        return Err(AttentionError::WrongTensorSize {
            tensor: "O",
            rows: shape.seq_len,
            columns: shape.value_model_width(),
            expected,
            got: output.len(),
        });
    }
    Ok(())
}

/// Absorbs the output (a BLAKE3 digest of its canonical encoding).
pub(crate) fn absorb_output(output: &[Fr], transcript: &mut Transcript) {
    use rayon::prelude::*;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(output.len() as u64).to_le_bytes());
    // Serializing (leaving Montgomery form) costs more than hashing: chunks in parallel,
    // hashed in order.
    let chunks: Vec<Vec<u8>> = output
        .par_chunks(4096)
        .map(|chunk| {
            let mut bytes = Vec::with_capacity(32 * chunk.len());
            for value in chunk {
                // Writing a field element into a Vec cannot fail.
                let _ = value.serialize_compressed(&mut bytes);
            }
            bytes
        })
        .collect();
    for bytes in &chunks {
        hasher.update(bytes);
    }
    transcript.append_bytes(LABEL_OUTPUT, hasher.finalize().as_bytes());
}

/// Everything after the statement: draws the output point and runs every sub-protocol from
/// the output back to the claims on the inputs (prover side).
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_chain(
    shape: &AttentionShape,
    mask: MaskKind,
    softmax_mode: SoftmaxMode,
    hyrax: &HyraxParams,
    witness: &mut crate::AttentionWitness,
    committed_inputs: Option<CommittedInputTables<'_>>,
    transcript: &mut Transcript,
    timings: &mut ProverTimings,
) -> Result<(AttentionLayerProof, InputClaims), AttentionError> {
    // The softmax witness is committed before the first challenge.
    let start = Instant::now();
    let mut softmax_data = match (softmax_mode, witness.softmax.take()) {
        (SoftmaxMode::Exponential(params), Some(softmax)) => {
            let (commitments, data) = commit_softmax(hyrax, shape, &params, softmax)?;
            commitments.append_to_transcript(transcript);
            Some((commitments, data))
        }
        (SoftmaxMode::Exponential(_), None) => {
            return Err(AttentionError::CheckFailed { step: "softmax witness" });
        }
        (SoftmaxMode::Identity, _) => None,
    };
    timings.softmax_commit = start.elapsed();

    let start = Instant::now();
    let point = transcript.challenge_fields(LABEL_OUTPUT_POINT, shape.value_model_vars() + shape.seq_vars());
    let output = matrix_mle(shape.seq_len, shape.value_model_width(), &witness.output)?;
    let output_claim = EvalClaim { value: output.evaluate(&point)?, point };
    let committed_output = committed_inputs.as_ref().and_then(|inputs| inputs.output_polynomial);
    let output_value = committed_output.map(|_| output_claim.value);
    if let Some(value) = &output_value {
        transcript.append_field(LABEL_OUTPUT_VALUE, value);
    }
    timings.statement += start.elapsed();

    let (steps, chain_claims) = prove_chain_steps::<Plain>(
        &mut (),
        shape,
        mask,
        softmax_mode,
        witness,
        softmax_data.as_mut().map(|(_, data)| data),
        &output_claim,
        transcript,
        timings,
    )?;
    let input_claims = chain_claims.inputs;

    // Every committed polynomial's claims, one multi-point opening.
    let start = Instant::now();
    let mut items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> = Vec::new();
    let mut claims = Vec::new();
    if let (SoftmaxMode::Exponential(params), Some((commitments, data))) = (softmax_mode, &softmax_data) {
        items.extend(softmax_opening_tables(shape, &params, commitments, data)?);
        claims.extend(chain_claims.softmax);
    }
    if let Some(inputs) = committed_inputs {
        let c = inputs.commitments;
        let base = items.len();
        for ((num_vars, values), commitment) in inputs.tables.iter().zip([&c.queries, &c.keys, &c.values]) {
            items.push((PolynomialTable::Integers { num_vars: *num_vars, values }, commitment));
        }
        claims.extend(committed_claims(
            base,
            &input_claims,
            &inputs.extra_claims,
            inputs.output_polynomial,
            &output_claim,
        ));
        items.extend(inputs.extra_items);
    }
    let openings = if items.is_empty() {
        None
    } else {
        Some(
            Hyrax::open_multi(&items, &claims, transcript)
                .map_err(|_| AttentionError::CheckFailed { step: "openings" })?,
        )
    };
    drop(items);
    timings.open = start.elapsed();
    let ChainProof { unpadding, attention_values, softmax, masking, qk, padding } = steps;
    let proof = AttentionLayerProof {
        version: PROOF_FORMAT_VERSION,
        unpadding,
        attention_values,
        softmax_commitments: softmax_data.map(|(c, _)| c),
        softmax,
        masking,
        qk,
        padding,
        openings,
        output_value,
    };
    Ok((proof, input_claims))
}

/// The verifier's mirror of [`prove_chain`]: returns the claims on `Q`, `K`, `V` the caller
/// must discharge (already discharged by the final opening when `input_commitments` is given),
/// and the output claim's evaluation time (public-tensor work).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_chain(
    shape: &AttentionShape,
    mask: MaskKind,
    softmax_mode: SoftmaxMode,
    hyrax: &HyraxParams,
    output: &[Fr],
    proof: &AttentionLayerProof,
    committed_inputs: Option<CommittedInputs<'_>>,
    transcript: &mut Transcript,
    timings: &mut VerifierTimings,
) -> Result<InputClaims, AttentionError> {
    if proof.version != PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    let start = Instant::now();
    match (softmax_mode, &proof.softmax_commitments) {
        (SoftmaxMode::Exponential(params), Some(commitments)) => {
            commitments.validate(shape, &params)?;
            commitments.append_to_transcript(transcript);
        }
        (SoftmaxMode::Identity, None) => {}
        _ => return Err(AttentionError::CheckFailed { step: "softmax commitments" }),
    }
    let point = transcript.challenge_fields(LABEL_OUTPUT_POINT, shape.value_model_vars() + shape.seq_vars());
    timings.protocol += start.elapsed();
    let start = Instant::now();
    let committed_output = committed_inputs.as_ref().and_then(|inputs| inputs.output_polynomial);
    let output_claim = match (committed_output, proof.output_value) {
        (None, None) => {
            let output_mle = matrix_mle(shape.seq_len, shape.value_model_width(), output)?;
            EvalClaim { value: output_mle.evaluate(&point)?, point }
        }
        (Some(_), Some(value)) => {
            transcript.append_field(LABEL_OUTPUT_VALUE, &value);
            EvalClaim { value, point }
        }
        _ => return Err(AttentionError::CheckFailed { step: "output value" }),
    };
    timings.public_evaluations += start.elapsed();

    let start = Instant::now();
    let steps = ChainProof {
        unpadding: proof.unpadding.clone(),
        attention_values: proof.attention_values.clone(),
        softmax: proof.softmax.clone(),
        masking: proof.masking.clone(),
        qk: proof.qk.clone(),
        padding: proof.padding.clone(),
    };
    let chain_claims =
        verify_chain_steps::<Plain>(&mut (), shape, mask, softmax_mode, &output_claim, &steps, transcript)?;
    let (input_claims, softmax_claims) = (chain_claims.inputs, chain_claims.softmax);

    let mut commitments: Vec<&HyraxCommitment> = Vec::new();
    let mut claims = Vec::new();
    if let Some(softmax) = &proof.softmax_commitments {
        commitments.extend(softmax_commitment_list(softmax));
        claims.extend(softmax_claims);
    }
    if let Some(inputs) = committed_inputs {
        let c = inputs.commitments;
        let base = commitments.len();
        commitments.extend([&c.queries, &c.keys, &c.values]);
        claims.extend(committed_claims(
            base,
            &input_claims,
            &inputs.extra_claims,
            inputs.output_polynomial,
            &output_claim,
        ));
        commitments.extend(inputs.extra_commitments);
    }
    match (&proof.openings, commitments.is_empty()) {
        (None, true) => {}
        (Some(openings), false) => Hyrax::verify_multi(hyrax, &commitments, &claims, openings, transcript)
            .map_err(|_| AttentionError::CheckFailed { step: "openings" })?,
        _ => return Err(AttentionError::CheckFailed { step: "openings" }),
    }
    timings.protocol += start.elapsed();
    Ok(input_claims)
}

/// The forward pass, with the commitment's table of multiples built alongside it when
/// `hyrax` is given (the table depends only on the generators; a no-op once built).
pub(crate) fn witness_alongside_table(
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    hyrax: Option<&HyraxParams>,
) -> Result<crate::AttentionWitness, AttentionError> {
    let (witness, ()) = rayon::join(
        || compute_witness_for_mode(shape, mask, softmax, inputs),
        || {
            if let Some(hyrax) = hyrax {
                hyrax.prepare_small_table();
            }
        },
    );
    witness
}

/// Runs the forward pass and proves it, with public inputs (the softmax witness is still
/// committed: its generators are derived from the shape, [`crate::hyrax_params_for`]).
///
/// # Errors
/// Invalid shapes or inputs ([`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`]), [`AttentionError::NumericRange`] for scores the
/// softmax tables cannot hold.
pub fn prove_layer(
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<(AttentionStatement, AttentionLayerProof, ProverTimings), AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    let hyrax = crate::hyrax_params_for(shape, softmax);
    let mut witness =
        witness_alongside_table(shape, mask, softmax, inputs, softmax.is_proven().then_some(&hyrax))?;
    timings.witness = start.elapsed();
    let statement = AttentionStatement {
        shape: *shape,
        mask,
        softmax,
        inputs: inputs.clone(),
        output: witness.output.clone(),
    };
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.statement = start.elapsed();
    let (proof, _) = prove_chain(
        shape,
        mask,
        statement.softmax,
        &hyrax,
        &mut witness,
        None,
        &mut transcript,
        &mut timings,
    )?;
    Ok((statement, proof, timings))
}

/// Verifies a layer proof against its statement (public inputs).
///
/// # Errors
/// [`AttentionError::UnsupportedVersion`], statement errors, or the first failing step
/// ([`AttentionError::Sumcheck`] / [`AttentionError::CheckFailed`]).
#[deny(clippy::indexing_slicing)]
pub fn verify_layer(
    statement: &AttentionStatement,
    proof: &AttentionLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    if proof.version != PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    statement.validate()?;
    let shape = &statement.shape;
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.public_evaluations += start.elapsed();
    let hyrax = crate::hyrax_params_for(shape, statement.softmax);
    let input_claims = verify_chain(
        shape,
        statement.mask,
        statement.softmax,
        &hyrax,
        &statement.output,
        proof,
        None,
        &mut transcript,
        &mut timings,
    )?;

    // Public inputs: the verifier evaluates their MLEs itself.
    let start = Instant::now();
    let inputs = &statement.inputs;
    for (step, data, columns, claim) in [
        ("input Q", &inputs.queries, shape.model_width(), &input_claims.queries),
        ("input K", &inputs.keys, shape.model_width(), &input_claims.keys),
        ("input V", &inputs.values, shape.value_model_width(), &input_claims.values),
    ] {
        let field: Vec<Fr> = data.iter().map(|&v| zkmha_field::fr_from_i64(v)).collect();
        let mle = matrix_mle(shape.seq_len, columns, &field)?;
        if mle.evaluate(&claim.point)? != claim.value {
            return Err(AttentionError::CheckFailed { step });
        }
    }
    timings.public_evaluations += start.elapsed();
    Ok(timings)
}
