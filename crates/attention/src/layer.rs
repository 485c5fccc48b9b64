//! The attention layer's one driver, for both modes (plain and zero-knowledge) and both kinds
//! of inputs (public tensors, or commitments to them).
//!
//! ```text
//! statement: shape (s, h, m, m_v), mask kind, softmax mode, the output O (public), and
//!            Q, K, V as public tensors or as commitments C_Q, C_K, C_V (hiding in zero knowledge)
//! absorb: the domain, the mode's name, the whole statement (tensors as BLAKE3 digests)
//! proven softmax: commit to its eight columns (mode M) and absorb the commitments
//! open the session (zero knowledge: one hiding commitment to every sum-check's mask)
//! draw r;  y = Õ(r), public (a constant claim in either mode)
//!   chain (crate::chain)   O(r) → claims on Q, K, V and on the softmax's columns
//!   public inputs          the verifier evaluates Q̃, K̃, Ṽ at the claims' points; the prover
//!                          proves claim − evaluation = 0 (M::prove_zero: checked at once when
//!                          plain, a relations proof on the committed claims in zero knowledge)
//!   openings               every committed polynomial's claims (the softmax's columns, then
//!                          Q, K, V when committed) in one M::prove_openings
//! close the session (zero knowledge: the masks' values in one inner-product argument); the
//! verifier checks every deferred group equation in one MSM, with weights drawn after the
//! whole proof is absorbed
//! ```
//!
//! Soundness: each sum-check errs with probability ≤ (variables · degree)/|F|, the batching
//! with ≤ 1/|F|; every structured factor is recomputed by the verifier; every committed
//! polynomial is opened at every point a claim names it.

use crate::block::BlockPolynomial;
use crate::chain::{
    ChainClaims, ChainProofOf, chain_zk_schedule, opening_claims, prove_chain_steps, verify_chain_steps,
};
use crate::commitment_layout::{layout_column_vars, zk_layout_column_vars};
use crate::committed::InputCommitments;
use crate::lookup_batch::{lookup_parts_zk_schedule, prove_lookup_parts, verify_lookup_parts};
use crate::mode::{Mode, Plain, ProverRng};
use crate::softmax::{
    SoftmaxCommitments, SoftmaxLookupOutcome, SoftmaxMode, SoftmaxProverData, SoftmaxStageTimings,
    commit_softmax_with, softmax_column_tables, softmax_commitment_list, softmax_lookup_statements,
    softmax_lookups, softmax_multiplicities, softmax_tables, tensor_vars,
};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, compute_witness_for_mode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::{Duration, Instant};
use zkmha_field::{Fr, One};
use zkmha_lookup::{LookupProofOf, LookupTable};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{HyraxCommitment, HyraxParams, OpeningClaim, PolynomialTable};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::{LinearValue, MaskSchedule, zk_multi_opening_schedule};

/// The proof format this code writes and reads.
pub const PROOF_FORMAT_VERSION: u32 = 15;

pub(crate) const DOMAIN: &[u8] = b"attention-layer";
const LABEL_MODE: &[u8] = b"attention/statement/mode";
const LABEL_MASK: &[u8] = b"attention/statement/mask";
const LABEL_SOFTMAX: &[u8] = b"attention/statement/softmax";
const LABEL_QUERIES: &[u8] = b"attention/statement/queries";
const LABEL_KEYS: &[u8] = b"attention/statement/keys";
const LABEL_VALUES: &[u8] = b"attention/statement/values";
const LABEL_OUTPUT: &[u8] = b"attention/statement/output";
pub(crate) const LABEL_OUTPUT_POINT: &[u8] = b"attention/output-point";
const LABEL_COMMITMENTS: &[u8] = b"attention/statement/commitments";
const STEP_PUBLIC_INPUTS: &str = "public inputs";
const STEP_OPENINGS: &str = "openings";
const STEP_SOFTMAX_MODE: &str = "the proof's softmax mode";
/// The softmax's committed columns ([`softmax_commitment_list`]).
const SOFTMAX_COLUMNS: usize = 8;

/// The public statement of a layer proof with public inputs.
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

/// The inputs as a statement holds them.
#[derive(Clone, Copy, Debug)]
pub enum LayerInputs<'a> {
    /// The tensors: the verifier evaluates their MLEs itself.
    Public(&'a AttentionInputs),
    /// Commitments to the padded tensors: their claims join the final opening.
    Committed(&'a InputCommitments),
}

/// A layer's public statement as the driver reads it (either kind of inputs).
#[derive(Clone, Copy, Debug)]
pub struct LayerStatement<'a> {
    /// Shapes.
    pub shape: &'a AttentionShape,
    /// Mask kind.
    pub mask: MaskKind,
    /// What the softmax slot holds.
    pub softmax: SoftmaxMode,
    /// `Q`, `K`, `V`, public or committed.
    pub inputs: LayerInputs<'a>,
    /// The claimed output `O`, `s × h·m_v`, row-major.
    pub output: &'a [Fr],
}

impl AttentionStatement {
    /// The statement as the driver reads it.
    pub fn layer(&self) -> LayerStatement<'_> {
        LayerStatement {
            shape: &self.shape,
            mask: self.mask,
            softmax: self.softmax,
            inputs: LayerInputs::Public(&self.inputs),
            output: &self.output,
        }
    }
}

/// The inputs as the prover holds them.
pub(crate) enum ProverInputs<'a, M: Mode> {
    /// Public tensors.
    Public(&'a AttentionInputs),
    /// Committed: the commitments, the padded integer tables `(num_vars, entries)` and the
    /// blinds, in the order `Q`, `K`, `V`.
    Committed {
        commitments: &'a InputCommitments,
        tables: &'a [(usize, Vec<i64>); 3],
        blinds: &'a [M::Blinds],
    },
}

impl<M: Mode> ProverInputs<'_, M> {
    fn statement(&self) -> LayerInputs<'_> {
        match self {
            ProverInputs::Public(inputs) => LayerInputs::Public(inputs),
            ProverInputs::Committed { commitments, .. } => LayerInputs::Committed(commitments),
        }
    }
}

impl LayerInputs<'_> {
    fn committed(&self) -> bool {
        matches!(self, LayerInputs::Committed(_))
    }
}

/// A layer proof in mode `M` (serializable; carries its format version).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LayerProof<M: Mode> {
    /// [`PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// Commitments to the softmax's columns (proven softmax), absorbed right after the
    /// statement.
    pub softmax_commitments: Option<SoftmaxCommitments>,
    /// What opens the mode's session (zero knowledge: the masks' commitment).
    pub session: M::SessionCommitment,
    /// The proven softmax's lookups, the layer's one batch (`crate::lookup_batch`).
    pub softmax_lookups: Option<LookupProofOf<M>>,
    /// The chain's steps, from the output back to the inputs.
    pub chain: ChainProofOf<M>,
    /// Public inputs: that the input claims are the inputs' evaluations.
    pub public_inputs: Option<M::ZeroProof>,
    /// Every committed polynomial's claims in one opening; absent when nothing is committed
    /// (public inputs and linear attention).
    pub openings: Option<M::OpeningProof>,
    /// What closes the session (zero knowledge: the masks' values at their points).
    pub session_proof: M::SessionProof,
}

/// A plain layer proof (public or committed inputs).
pub type AttentionLayerProof = LayerProof<Plain>;

/// The column variables of the layer's commitments in mode `M`: the plain layout
/// ([`layout_column_vars`]) or the zero-knowledge one ([`zk_layout_column_vars`]).
pub fn layer_layout<M: Mode>(shape: &AttentionShape, softmax: SoftmaxMode) -> usize {
    if M::HIDING { zk_layout_column_vars(shape, softmax) } else { layout_column_vars(shape, softmax) }
}

/// The sizes of the polynomials a layer opens, in opening order: the softmax's eight columns
/// (proven softmax), then `Q`, `K`, `V` (committed inputs).
fn opened_sizes(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    committed_inputs: bool,
) -> Result<Vec<usize>, AttentionError> {
    let mut sizes = Vec::with_capacity(11);
    if let SoftmaxMode::Exponential(params) = softmax {
        let tables = softmax_tables(&params)?;
        let (n, n_rows) = tensor_vars(shape);
        sizes.extend([
            n,
            n,
            n,
            n,
            n_rows,
            tables.exponent.num_vars(),
            tables.remainder.num_vars(),
            tables.row_sum.num_vars(),
        ]);
    }
    if committed_inputs {
        let s = shape.seq_vars();
        sizes.extend([s + shape.model_vars(), s + shape.model_vars(), s + shape.value_model_vars()]);
    }
    Ok(sizes)
}

/// The `(variables, degree)` of every zero-knowledge sum-check of a layer, in proof order: the
/// proven softmax's lookup batch, the chain's, then the final opening's (when anything is
/// committed).
///
/// # Errors
/// [`AttentionError::Lookup`] for softmax parameters out of range.
pub fn layer_zk_schedule(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    committed_inputs: bool,
) -> Result<MaskSchedule, AttentionError> {
    let mut schedule = match softmax {
        SoftmaxMode::Exponential(params) => {
            lookup_parts_zk_schedule(&[softmax_lookup_statements(shape, &params)?])
        }
        SoftmaxMode::Identity => Vec::new(),
    };
    schedule.extend(chain_zk_schedule(shape, softmax)?);
    let sizes = opened_sizes(shape, softmax, committed_inputs)?;
    if !sizes.is_empty() {
        schedule.push(zk_multi_opening_schedule(&sizes));
    }
    Ok(MaskSchedule(schedule))
}

/// The transcript after the statement (the first step of proving and verifying; a reader
/// replaying a proof starts here).
pub fn layer_transcript<M: Mode>(statement: LayerStatement<'_>) -> Transcript {
    let LayerStatement { shape, mask, softmax, inputs, output } = statement;
    let mut transcript = Transcript::new(DOMAIN);
    transcript.append_bytes(LABEL_MODE, M::NAME.as_bytes());
    shape.append_to_transcript(&mut transcript);
    mask.absorb(&mut transcript, LABEL_MASK);
    softmax.append_to_transcript(LABEL_SOFTMAX, &mut transcript);
    match inputs {
        // The tensors enter as BLAKE3 digests of their canonical encodings (little-endian
        // i64), so the transcript binds every entry while absorbing a few hundred bytes.
        LayerInputs::Public(inputs) => {
            for (label, data) in
                [(LABEL_QUERIES, &inputs.queries), (LABEL_KEYS, &inputs.keys), (LABEL_VALUES, &inputs.values)]
            {
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
        }
        LayerInputs::Committed(commitments) => {
            let mut bytes = Vec::new();
            // Serializing into a Vec cannot fail.
            let _ = commitments.serialize_compressed(&mut bytes);
            transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        }
    }
    absorb_output(output, &mut transcript);
    transcript
}

/// The output point drawn after the statement, the softmax's commitments and the session.
pub fn output_point(shape: &AttentionShape, transcript: &mut Transcript) -> Vec<Fr> {
    transcript.challenge_fields(LABEL_OUTPUT_POINT, shape.value_model_vars() + shape.seq_vars())
}

/// The evaluations of the public inputs' MLEs at their claims' points.
fn public_input_values(
    shape: &AttentionShape,
    inputs: &AttentionInputs,
    points: [&[Fr]; 3],
) -> Result<[Fr; 3], AttentionError> {
    let mut values = [Fr::from(0u64); 3];
    for ((value, (data, columns)), point) in values
        .iter_mut()
        .zip([
            (&inputs.queries, shape.model_width()),
            (&inputs.keys, shape.model_width()),
            (&inputs.values, shape.value_model_width()),
        ])
        .zip(points)
    {
        let field: Vec<Fr> = data.iter().map(|&v| zkmha_field::fr_from_i64(v)).collect();
        *value = matrix_mle(shape.seq_len, columns, &field)?.evaluate(point)?;
    }
    Ok(values)
}

/// The polynomials of the final opening, in order: the softmax's columns (proven softmax),
/// then `Q`, `K`, `V` (committed inputs).
fn opened_polynomials(softmax: bool, committed_inputs: bool) -> Vec<BlockPolynomial> {
    let mut order = Vec::with_capacity(SOFTMAX_COLUMNS + 3);
    if softmax {
        order.extend((0..SOFTMAX_COLUMNS).map(BlockPolynomial::Softmax));
    }
    if committed_inputs {
        order.extend((0..3).map(BlockPolynomial::AttentionInput));
    }
    order
}

/// The final opening's claims, keyed by their polynomials and placed on `order` (public
/// inputs' claims are discharged before, not opened).
fn final_claims<V>(
    chain: ChainClaims<V>,
    order: &[BlockPolynomial],
    committed_inputs: bool,
) -> Result<Vec<OpeningClaim<V>>, AttentionError> {
    let keyed = chain
        .keyed()
        .into_iter()
        .filter(|(key, _)| committed_inputs || !matches!(key, BlockPolynomial::AttentionInput(_)))
        .collect();
    opening_claims(order, keyed, STEP_OPENINGS)
}

/// Proves a layer in mode `M` from its witness: the statement's output `output` is absorbed
/// (the honest prover's is `witness.output`), the chain runs on the witness.
///
/// # Errors
/// The softmax's commitment and multiplicities' errors, the steps' errors,
/// [`AttentionError::ZeroKnowledge`] in zero knowledge.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_layer_with<M: Mode>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: ProverInputs<'_, M>,
    witness: &mut crate::AttentionWitness,
    output: &[Fr],
    rng: &mut dyn ProverRng,
    timings: &mut ProverTimings,
) -> Result<LayerProof<M>, AttentionError> {
    let start = Instant::now();
    let committed_inputs = inputs.statement().committed();
    let statement = LayerStatement { shape, mask, softmax, inputs: inputs.statement(), output };
    let mut transcript = layer_transcript::<M>(statement);
    let t = &mut transcript;
    timings.statement += start.elapsed();

    // The softmax's columns are committed before the first challenge.
    let start = Instant::now();
    let layout = layer_layout::<M>(shape, softmax);
    let mut softmax_data = match (softmax, witness.softmax.take()) {
        (SoftmaxMode::Exponential(softmax_params), Some(softmax_witness)) => {
            let multiplicities = softmax_multiplicities(&softmax_params, &softmax_witness)?;
            let data = SoftmaxProverData::new(shape, softmax_witness, multiplicities, &softmax_params);
            let (commitments, blinds) =
                commit_softmax_with::<M>(params, shape, &softmax_params, &data, layout, rng)?;
            commitments.append_to_transcript(t);
            Some((softmax_params, commitments, blinds, data))
        }
        (SoftmaxMode::Exponential(_), None) => {
            return Err(AttentionError::CheckFailed { step: "softmax witness" });
        }
        (SoftmaxMode::Identity, _) => None,
    };
    timings.softmax_commit = start.elapsed();

    let start = Instant::now();
    let (mut session, session_commitment) =
        M::start_prover(params, &|| layer_zk_schedule(shape, softmax, committed_inputs), t, rng)?;
    let mut prover = M::prover(params, &mut session, rng);
    // The softmax's lookups: the layer's one batch.
    let (softmax_lookups, softmax_outcome) = match &softmax_data {
        Some((softmax_params, _, _, data)) => {
            let (prepared, block_values) = softmax_lookups(shape, softmax_params, data)?;
            let (proof, mut claims) = prove_lookup_parts::<M>(&mut prover, &[prepared], t)?;
            let claims = claims.pop().ok_or(AttentionError::CheckFailed { step: STEP_SOFTMAX_MODE })?;
            (Some(proof), Some(SoftmaxLookupOutcome { claims, block_values }))
        }
        None => (None, None),
    };
    let point = output_point(shape, t);
    let value = matrix_mle(shape.seq_len, shape.value_model_width(), &witness.output)?.evaluate(&point)?;
    let output_claim = EvalClaim { point, value: M::prover_constant(&prover, value) };
    timings.statement += start.elapsed();

    let (chain, chain_claims) = prove_chain_steps::<M>(
        &mut prover,
        shape,
        mask,
        softmax,
        witness,
        softmax_data.as_mut().map(|(_, _, _, data)| data).zip(softmax_outcome),
        &output_claim,
        t,
        timings,
    )?;

    let start = Instant::now();
    let public_inputs = match &inputs {
        ProverInputs::Public(x) => {
            let c = &chain_claims.inputs;
            let claims = [&c.queries, &c.keys, &c.values];
            let values = public_input_values(shape, x, claims.map(|claim| claim.point.as_slice()))?;
            let targets = claims
                .iter()
                .zip(values)
                .map(|(claim, v)| claim.value.plus_scaled(-Fr::one(), &M::prover_constant(&prover, v)))
                .collect();
            Some(M::prove_zero(&mut prover, STEP_PUBLIC_INPUTS, targets, t)?)
        }
        ProverInputs::Committed { .. } => None,
    };

    // Every committed polynomial's claims, one opening.
    let mut polynomials: Vec<(PolynomialTable<'_>, &HyraxCommitment, &M::Blinds)> = Vec::new();
    if let Some((softmax_params, commitments, blinds, data)) = &softmax_data {
        let tables = softmax_column_tables(shape, softmax_params, data)?;
        polynomials.extend(
            tables
                .into_iter()
                .zip(softmax_commitment_list(commitments))
                .zip(blinds)
                .map(|((p, c), b)| (p, c, b)),
        );
    }
    if let ProverInputs::Committed { commitments: c, tables, blinds } = &inputs {
        if blinds.len() != 3 {
            return Err(AttentionError::CheckFailed { step: "input commitment" });
        }
        for (((num_vars, values), commitment), blind) in
            tables.iter().zip([&c.queries, &c.keys, &c.values]).zip(*blinds)
        {
            polynomials.push((PolynomialTable::Integers { num_vars: *num_vars, values }, commitment, blind));
        }
    }
    let order = opened_polynomials(softmax_data.is_some(), committed_inputs);
    let claims = final_claims(chain_claims, &order, committed_inputs)?;
    let openings = if polynomials.is_empty() {
        None
    } else {
        Some(M::prove_openings(&mut prover, params, &polynomials, &claims, t)?)
    };
    drop(polynomials);
    drop(prover);
    let session_proof = M::finish_prover(params, session, t, rng)?;
    timings.open = start.elapsed();
    Ok(LayerProof {
        version: PROOF_FORMAT_VERSION,
        softmax_commitments: softmax_data.map(|(_, commitments, _, _)| commitments),
        session: session_commitment,
        softmax_lookups,
        chain,
        public_inputs,
        openings,
        session_proof,
    })
}

/// Everything the verifier of a layer in mode `M` checks but the session's close: returns the
/// session (zero knowledge: the masks and the deferred group equations) and the transcript.
/// Checks the statement first: the shape against the stated limits, the output's length, the
/// public inputs' sizes or each commitment's size and layout.
///
/// # Errors
/// Statement errors, [`AttentionError::UnsupportedVersion`], a proof of the other softmax mode
/// or with parts the statement does not call for ([`AttentionError::CheckFailed`]), the first
/// failing step.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) fn verify_layer_steps<M: Mode>(
    params: &HyraxParams,
    statement: LayerStatement<'_>,
    proof: &LayerProof<M>,
    timings: &mut VerifierTimings,
) -> Result<(M::VerifierSession, Transcript), AttentionError> {
    let LayerStatement { shape, mask, softmax, inputs, output } = statement;
    if proof.version != PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    // The stated limits first: nothing below is sized from an unchecked shape or parameters.
    shape.validate()?;
    if let SoftmaxMode::Exponential(params) = softmax {
        params.validate()?;
    }
    check_output_len(shape, output)?;
    let layout = layer_layout::<M>(shape, softmax);
    match inputs {
        LayerInputs::Public(x) => x.validate(shape)?,
        LayerInputs::Committed(c) => c.validate_layout(shape, layout)?,
    }
    let start = Instant::now();
    let mut transcript = layer_transcript::<M>(statement);
    timings.public_evaluations += start.elapsed();
    let start = Instant::now();
    let t = &mut transcript;
    match (softmax, &proof.softmax_commitments, &proof.chain.masking) {
        (SoftmaxMode::Exponential(p), Some(commitments), None) => {
            commitments.validate_layout(shape, &softmax_tables(&p)?, layout)?;
            commitments.append_to_transcript(t);
        }
        (SoftmaxMode::Identity, None, Some(_)) => {}
        _ => return Err(AttentionError::CheckFailed { step: STEP_SOFTMAX_MODE }),
    }
    let committed_inputs = inputs.committed();
    let mut session =
        M::start_verifier(&|| layer_zk_schedule(shape, softmax, committed_inputs), &proof.session, t)?;
    let mut verifier = M::verifier(params, &mut session);
    let softmax_claims = match (softmax, &proof.softmax_lookups) {
        (SoftmaxMode::Exponential(p), Some(lookups)) => {
            let statements = [softmax_lookup_statements(shape, &p)?];
            let mut claims = verify_lookup_parts::<M>(&mut verifier, &statements, lookups, t)?;
            claims.pop().ok_or(AttentionError::CheckFailed { step: STEP_SOFTMAX_MODE })?
        }
        (SoftmaxMode::Identity, None) => Vec::new(),
        _ => return Err(AttentionError::CheckFailed { step: STEP_SOFTMAX_MODE }),
    };
    let point = output_point(shape, t);
    timings.protocol += start.elapsed();
    let start = Instant::now();
    let value = matrix_mle(shape.seq_len, shape.value_model_width(), output)?.evaluate(&point)?;
    let output_claim = EvalClaim { point, value: M::verifier_constant(&verifier, value) };
    timings.public_evaluations += start.elapsed();

    let start = Instant::now();
    let chain_claims = verify_chain_steps::<M>(
        &mut verifier,
        shape,
        mask,
        softmax,
        &output_claim,
        &proof.chain,
        softmax_claims,
        t,
    )?;
    timings.protocol += start.elapsed();
    match (inputs, &proof.public_inputs) {
        (LayerInputs::Public(x), Some(zero)) => {
            let start = Instant::now();
            let c = &chain_claims.inputs;
            let claims = [&c.queries, &c.keys, &c.values];
            let values = public_input_values(shape, x, claims.map(|claim| claim.point.as_slice()))?;
            timings.public_evaluations += start.elapsed();
            let targets = claims
                .iter()
                .zip(values)
                .map(|(claim, v)| claim.value.plus_scaled(-Fr::one(), &M::verifier_constant(&verifier, v)))
                .collect();
            M::verify_zero(&mut verifier, STEP_PUBLIC_INPUTS, targets, zero, t)?;
        }
        (LayerInputs::Committed(_), None) => {}
        _ => return Err(AttentionError::CheckFailed { step: STEP_PUBLIC_INPUTS }),
    }

    let start = Instant::now();
    let mut commitments: Vec<&HyraxCommitment> = Vec::new();
    if let Some(softmax_commitments) = &proof.softmax_commitments {
        commitments.extend(softmax_commitment_list(softmax_commitments));
    }
    if let LayerInputs::Committed(c) = inputs {
        commitments.extend([&c.queries, &c.keys, &c.values]);
    }
    let order = opened_polynomials(proof.softmax_commitments.is_some(), committed_inputs);
    let claims = final_claims(chain_claims, &order, committed_inputs)?;
    match (&proof.openings, commitments.is_empty()) {
        (None, true) => {}
        (Some(openings), false) => {
            M::verify_openings(&mut verifier, params, &commitments, &claims, openings, t)?
        }
        _ => return Err(AttentionError::CheckFailed { step: STEP_OPENINGS }),
    }
    drop(verifier);
    timings.protocol += start.elapsed();
    Ok((session, transcript))
}

/// Verifies a layer proof in mode `M` (see [`verify_layer_steps`] for what is checked first),
/// closing the session: in zero knowledge the masks' openings and then every deferred group
/// equation in one multi-scalar multiplication.
///
/// # Errors
/// As [`verify_layer_steps`]; [`AttentionError::ZeroKnowledge`] for a failing group equation.
pub(crate) fn verify_layer_with<M: Mode>(
    params: &HyraxParams,
    statement: LayerStatement<'_>,
    proof: &LayerProof<M>,
) -> Result<VerifierTimings, AttentionError> {
    let mut timings = VerifierTimings::default();
    let (session, mut transcript) = verify_layer_steps::<M>(params, statement, proof, &mut timings)?;
    let start = Instant::now();
    M::finish_verifier(params, session, &proof.session_proof, &mut transcript)?;
    timings.protocol += start.elapsed();
    Ok(timings)
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
    use ark_std::rand::SeedableRng;
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    let hyrax = crate::hyrax_params_for(shape, softmax);
    let mut witness =
        witness_alongside_table(shape, mask, softmax, inputs, softmax.is_proven().then_some(&hyrax))?;
    timings.witness = start.elapsed();
    let output = witness.output.clone();
    // The plain mode draws nothing.
    let mut unused = ark_std::rand::rngs::StdRng::seed_from_u64(0);
    let proof = prove_layer_with::<Plain>(
        &hyrax,
        shape,
        mask,
        softmax,
        ProverInputs::Public(inputs),
        &mut witness,
        &output,
        &mut unused,
        &mut timings,
    )?;
    let statement = AttentionStatement { shape: *shape, mask, softmax, inputs: inputs.clone(), output };
    Ok((statement, proof, timings))
}

/// Verifies a layer proof against its statement (public inputs).
///
/// # Errors
/// [`AttentionError::UnsupportedVersion`], statement errors, or the first failing step
/// ([`AttentionError::Sumcheck`] / [`AttentionError::CheckFailed`]; `"public inputs"` when a
/// claim on `Q`, `K` or `V` is not the input's evaluation).
pub fn verify_layer(
    statement: &AttentionStatement,
    proof: &AttentionLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    statement.shape.validate()?;
    let hyrax = crate::hyrax_params_for(&statement.shape, statement.softmax);
    verify_layer_with::<Plain>(&hyrax, statement.layer(), proof)
}

/// Public inputs in both modes, and a malicious prover that proves the forward pass of inputs
/// `X` under a statement naming `X'` (one entry changed): the chain is honest for `X`, so only
/// the check that the input claims are the statement's inputs' evaluations can catch it.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod public_inputs {
    use super::*;
    use crate::mode::Zk;
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn attempt<M: Mode>(softmax: SoftmaxMode, change: bool) -> Result<VerifierTimings, AttentionError> {
        let shape = AttentionShape::new(5, 3, 2, 3).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
        let inputs = AttentionInputs {
            queries: draw(shape.seq_len * shape.model_width()),
            keys: draw(shape.seq_len * shape.model_width()),
            values: draw(shape.seq_len * shape.value_model_width()),
        };
        let params = crate::layer_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut witness = compute_witness_for_mode(&shape, MaskKind::Causal, softmax, &inputs).unwrap();
        let output = witness.output.clone();
        let mut claimed = inputs.clone();
        if change {
            claimed.values[4] += 1;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let proof = prove_layer_with::<M>(
            &params,
            &shape,
            MaskKind::Causal,
            softmax,
            ProverInputs::Public(&claimed),
            &mut witness,
            &output,
            &mut rng,
            &mut ProverTimings::default(),
        )
        .unwrap();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(LayerProof::<M>::deserialize_compressed(&bytes[..]).unwrap(), proof);
        let statement = LayerInputs::Public(&claimed);
        let statement = LayerStatement {
            shape: &shape,
            mask: MaskKind::Causal,
            softmax,
            inputs: statement,
            output: &output,
        };
        verify_layer_with::<M>(&params, statement, &proof)
    }

    fn softmax() -> SoftmaxMode {
        let scale = 4.0 / (2.0 * 127.0 * 127.0 / 3.0);
        SoftmaxMode::Exponential(crate::SoftmaxParams::for_score_scale(scale, 8).unwrap())
    }

    #[test]
    fn public_inputs_prove_and_verify_in_both_modes() {
        for softmax in [SoftmaxMode::Identity, softmax()] {
            attempt::<Plain>(softmax, false).unwrap();
            attempt::<Zk>(softmax, false).unwrap();
        }
    }

    #[test]
    fn a_proof_of_other_public_inputs_is_rejected_in_the_plain_mode() {
        for softmax in [SoftmaxMode::Identity, softmax()] {
            assert_eq!(
                attempt::<Plain>(softmax, true).map(|_| ()),
                Err(AttentionError::CheckFailed { step: STEP_PUBLIC_INPUTS })
            );
        }
    }

    #[test]
    fn a_proof_of_other_public_inputs_is_rejected_in_zero_knowledge() {
        for softmax in [SoftmaxMode::Identity, softmax()] {
            let verdict = attempt::<Zk>(softmax, true);
            assert!(matches!(verdict, Err(AttentionError::ZeroKnowledge { .. })), "{verdict:?}");
        }
    }
}

/// The review's findings (2026-11-26): statements the verifier must refuse before deriving
/// anything from them.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod statement_limits {
    use super::*;

    #[test]
    fn an_input_of_i64_min_is_out_of_range() {
        // `i64::MIN.abs()` overflows: the bound is checked on unsigned magnitudes.
        let shape = AttentionShape::new(2, 1, 1, 1).unwrap();
        let inputs = AttentionInputs { queries: vec![0, 0], keys: vec![0, 0], values: vec![i64::MIN, 0] };
        assert!(matches!(inputs.validate(&shape), Err(AttentionError::ValueOutOfRange { tensor: "V", .. })));
        assert!(matches!(
            crate::prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs),
            Err(AttentionError::ValueOutOfRange { .. })
        ));
    }

    #[test]
    fn invalid_softmax_parameters_are_refused_before_any_table_is_built() {
        let shape = AttentionShape::new(5, 3, 2, 3).unwrap();
        let inputs = AttentionInputs { queries: vec![1; 30], keys: vec![2; 30], values: vec![3; 45] };
        let scale = 4.0 / (2.0 * 127.0 * 127.0 / 3.0);
        let good = crate::SoftmaxParams::for_score_scale(scale, 8).unwrap();
        let (statement, proof, _) =
            crate::prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Exponential(good), &inputs).unwrap();
        for bad in [
            crate::SoftmaxParams { output_bits: 40, ..good },
            crate::SoftmaxParams { exponent_bits: 40, ..good },
            crate::SoftmaxParams { tolerance_bits: 0, ..good },
            crate::SoftmaxParams { shift: 0, ..good },
        ] {
            let softmax = SoftmaxMode::Exponential(bad);
            let params = HyraxParams::new(4);
            let layer = LayerStatement { softmax, ..statement.layer() };
            let verdict = verify_layer_with::<Plain>(&params, layer, &proof);
            assert!(verdict.is_err(), "{bad:?}");
            assert!(crate::layer_hyrax_params::<Plain>(&shape, softmax).is_err(), "{bad:?}");
        }
    }
}
