//! The zero-knowledge committed layer: every claim of the chain is a commitment, every
//! sum-check masked, the inputs (and the softmax's columns) committed with blinding and opened
//! in zero knowledge (`docs/ZERO_KNOWLEDGE.md`).
//!
//! ```text
//! statement: shape, mask kind, softmax mode, hiding commitments to Q, K, V, the output O (public)
//! absorb the statement (domain "attention-layer-zk"); proven softmax: commit to its eight
//! columns with blinding and absorb them; commit to every sum-check's mask (mask_schedule) in
//! one hiding vector commitment; draw r;  y = Õ(r), public: C_y = y·U
//!   unpadding           C_y                → C_Ô
//!   attention_values    C_Ô               → C_A, C_V̂
//!   softmax slot        linear attention:  C_A → masking → C_QK̂        (A = QK_M)
//!                       proven softmax:    C_A → C_QK̂ and committed claims on its columns
//!   qk                  C_QK̂              → C_Q̂, C_K̂
//!   padding             C_Q̂, C_K̂, C_V̂     → C_Q, C_K, C_V at their points
//!   (each step the same function as the plain chain's, with the mode `Zk`)
//!   openings            linear: Q, K, V against their hiding commitments, values committed
//!                       (one batch when the points share their column part, else one each);
//!                       softmax: every committed polynomial's claims in one zero-knowledge
//!                       multi-point opening (zkmha_zk::prove_multi_opening_zk)
//!   masks               every mask's value at its point: one inner-product argument
//! the verifier checks every structured factor in the clear and all group equations of the
//! proof in one MSM at the end
//! ```

use crate::attention_values::AttentionValuesProof;
use crate::chain::{ChainProof, chain_zk_schedule, prove_chain_steps, verify_chain_steps};
use crate::commitment_layout::{largest_committed_vars, table_column_vars, zk_layout_column_vars};
use crate::committed::padded_inputs;
use crate::layer::{DOMAIN_ZK, LABEL_OUTPUT_POINT, matrix_mle, witness_alongside_table};
use crate::masking::MaskingProof;
use crate::mode::{Zk, ZkProver, ZkVerifier};
use crate::padding::PaddingProof;
use crate::qk::QkProof;
use crate::softmax::{
    ExponentialSoftmaxProofOf, SoftmaxCommitments, SoftmaxProverData, SoftmaxSlotProof,
    commit_softmax_hiding, softmax_commitment_list, softmax_multiplicities, softmax_opening_tables,
};
use crate::unpadding::UnpaddingProof;
use crate::zk_claims::{CommittedClaim, WitnessClaim, zk_error};
use crate::{
    AttentionError, AttentionInputs, AttentionShape, CommittedStatement, InputCommitments, MaskKind,
    SoftmaxMode,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::Fr;
use zkmha_pcs::{
    G1Affine, Hyrax, HyraxBlinds, HyraxCommitment, HyraxParams, PolynomialTable, ZkCommittedOpeningProof,
    ZkInnerProductProof,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, VerifierMasks, ZkMultiOpeningProof,
    ZkOpeningClaim, ZkProductProof, prove_multi_opening_zk, verify_multi_opening_zk_deferred,
    zk_multi_opening_schedule,
};

const STEP_OPENINGS: &str = "zero-knowledge openings";

/// A zero-knowledge committed-layer proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkLayerProof {
    /// [`crate::PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// Unpadding.
    pub unpadding: UnpaddingProof<ZkProductProof>,
    /// `softmax·V` (here `A = QK_M`).
    pub attention_values: AttentionValuesProof<ZkProductProof>,
    /// The proven softmax's commitments (made before the first challenge) and proof.
    pub softmax: Option<(SoftmaxCommitments, ExponentialSoftmaxProofOf<Zk>)>,
    /// Masking (linear attention only).
    pub masking: Option<MaskingProof<ZkProductProof>>,
    /// Batched `QKᵀ`.
    pub qk: QkProof<ZkProductProof>,
    /// Padding of Q, K, V.
    pub padding: PaddingProof<ZkProductProof>,
    /// One hiding commitment to every sum-check's mask, made before the first sum-check.
    pub masks: G1Affine,
    /// The masks' values at their sum-checks' points, all in one inner-product argument.
    pub mask_openings: ZkInnerProductProof,
    /// Linear attention: the inputs' openings against committed values (one for the three,
    /// or one each).
    pub openings: Vec<ZkCommittedOpeningProof>,
    /// Proven softmax: every committed polynomial's claims in one multi-point opening.
    pub multi_opening: Option<ZkMultiOpeningProof>,
}

/// The `(variables, degree)` of every zero-knowledge sum-check of the layer, in proof order.
///
/// # Errors
/// [`AttentionError::Lookup`] for softmax parameters out of range.
pub fn mask_schedule(shape: &AttentionShape, softmax: SoftmaxMode) -> Result<MaskSchedule, AttentionError> {
    let mut schedule = chain_zk_schedule(shape, softmax)?;
    if let SoftmaxMode::Exponential(params) = softmax {
        schedule.push(zk_multi_opening_schedule(&opened_sizes(shape, &params)?));
    }
    Ok(MaskSchedule(schedule))
}

/// The sizes of the polynomials the proven softmax's layer opens: the eight softmax columns,
/// then `Q`, `K`, `V`.
fn opened_sizes(
    shape: &AttentionShape,
    params: &crate::fixed_point::SoftmaxParams,
) -> Result<Vec<usize>, AttentionError> {
    use zkmha_lookup::LookupTable;
    let tables = crate::softmax::softmax_tables(params)?;
    let (n, n_rows) = (2 * shape.seq_vars() + shape.head_vars(), shape.seq_vars() + shape.head_vars());
    let s = shape.seq_vars();
    Ok(vec![
        n,
        n,
        n,
        n,
        n_rows,
        tables.exponent.num_vars(),
        tables.remainder.num_vars(),
        tables.row_sum.num_vars(),
        s + shape.model_vars(),
        s + shape.model_vars(),
        s + shape.value_model_vars(),
    ])
}

/// The Hyrax generators a zero-knowledge proof of `shape` needs: the committed tables' and
/// one per coefficient of all the masks together.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape over the stated limits (checked first), and as
/// [`mask_schedule`].
pub fn zk_hyrax_params_for(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
) -> Result<HyraxParams, AttentionError> {
    // The stated limits first: nothing below is sized from an unchecked shape.
    shape.validate()?;
    let masks = 2 * mask_schedule(shape, softmax)?.generator_vars();
    let columns = 2 * zk_layout_column_vars(shape, softmax);
    Ok(HyraxParams::new(largest_committed_vars(shape, softmax).max(masks).max(columns)))
}

/// The transcript after the statement (the first step of proving and verifying).
pub fn statement_transcript(statement: &CommittedStatement) -> Transcript {
    let mut transcript = Transcript::new(DOMAIN_ZK);
    statement.append_to_transcript(&mut transcript);
    transcript
}

/// The claim on the public output at the point drawn after the statement: its value is public,
/// so its commitment is `y·U` (the second step of proving and verifying; a reader replaying a
/// proof's claims starts here).
///
/// # Errors
/// [`AttentionError::Mle`] for an output of the wrong size.
pub fn output_claim(
    params: &HyraxParams,
    shape: &AttentionShape,
    output: &[Fr],
    transcript: &mut Transcript,
) -> Result<CommittedClaim, AttentionError> {
    let claim = output_witness_claim(params, shape, output, transcript)?;
    Ok(CommittedClaim { point: claim.point, value: claim.value.commitment })
}

fn output_witness_claim(
    params: &HyraxParams,
    shape: &AttentionShape,
    output: &[Fr],
    transcript: &mut Transcript,
) -> Result<WitnessClaim, AttentionError> {
    let point = transcript.challenge_fields(LABEL_OUTPUT_POINT, shape.value_model_vars() + shape.seq_vars());
    let value = matrix_mle(shape.seq_len, shape.value_model_width(), output)?.evaluate(&point)?;
    Ok(WitnessClaim { point, value: CommittedValue::public(params, value) })
}

/// Whether the three input claims can share one opening.
fn one_batch(commitments: [&HyraxCommitment; 3], points: [&[Fr]; 3]) -> bool {
    let items: Vec<(&HyraxCommitment, &[Fr])> = commitments.into_iter().zip(points).collect();
    Hyrax::can_batch(&items)
}

/// Hiding commitments to `Q`, `K`, `V` in the layer's layout, and their blinds (the prover's).
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] / [`AttentionError::ValueOutOfRange`] for bad inputs,
/// [`AttentionError::Commitment`] when the generators are too few.
pub fn commit_inputs_hiding<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    rng: &mut R,
) -> Result<(InputCommitments, Vec<HyraxBlinds>), AttentionError> {
    inputs.validate(shape)?;
    let layout = zk_layout_column_vars(shape, softmax);
    let mut commitments = Vec::with_capacity(3);
    let mut blinds = Vec::with_capacity(3);
    for (num_vars, table) in &padded_inputs(shape, inputs) {
        let (c, b) =
            Hyrax::commit_small_hiding(params, *num_vars, table_column_vars(*num_vars, layout), table, rng)?;
        commitments.push(c);
        blinds.push(b);
    }
    let [queries, keys, values]: [HyraxCommitment; 3] =
        commitments.try_into().map_err(|_| AttentionError::CheckFailed { step: "input commitment" })?;
    Ok((InputCommitments { queries, keys, values }, blinds))
}

/// Commits to `Q`, `K`, `V` with blinding, runs the forward pass (linear attention or the
/// fixed-point softmax) and proves it in zero knowledge; the statement holds the hiding
/// commitments and the output.
///
/// # Errors
/// As [`crate::prove_layer_committed`], and [`AttentionError::ZeroKnowledge`].
pub fn prove_layer_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    rng: &mut R,
) -> Result<(CommittedStatement, ZkLayerProof), AttentionError> {
    let (commitments, blinds) = commit_inputs_hiding(params, shape, softmax, inputs, rng)?;
    prove_committed_layer_zk(params, shape, mask, softmax, inputs, commitments, &blinds, rng)
}

/// [`prove_layer_zk`] for inputs already committed with [`commit_inputs_hiding`] (another
/// proof of the same statement).
///
/// # Errors
/// As [`prove_layer_zk`]; [`AttentionError::CheckFailed`] when the blinds do not fit the
/// commitments.
#[allow(clippy::too_many_arguments)]
pub fn prove_committed_layer_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    commitments: InputCommitments,
    blinds: &[HyraxBlinds],
    rng: &mut R,
) -> Result<(CommittedStatement, ZkLayerProof), AttentionError> {
    inputs.validate(shape)?;
    if blinds.len() != 3 {
        return Err(AttentionError::CheckFailed { step: "input commitment" });
    }
    let mut witness = witness_alongside_table(shape, mask, softmax, inputs, Some(params))?;
    params.prepare_pedersen_tables();
    let padded = padded_inputs(shape, inputs);
    let statement =
        CommittedStatement { shape: *shape, mask, softmax, commitments, output: witness.output.clone() };
    statement.validate_layout(zk_layout_column_vars(&statement.shape, statement.softmax))?;
    let mut transcript = statement_transcript(&statement);
    // The proven softmax's columns are committed (with blinding) before the first challenge.
    let mut softmax_data = match (softmax, witness.softmax.take()) {
        (SoftmaxMode::Exponential(p), Some(softmax_witness)) => {
            let multiplicities = softmax_multiplicities(&p, &softmax_witness)?;
            let data = SoftmaxProverData::new(shape, softmax_witness, multiplicities, &p);
            let (commitments, softmax_blinds) = commit_softmax_hiding(params, shape, &p, &data, rng)?;
            commitments.append_to_transcript(&mut transcript);
            Some((p, commitments, data, softmax_blinds))
        }
        (SoftmaxMode::Exponential(_), None) => {
            return Err(AttentionError::CheckFailed { step: "softmax witness" });
        }
        (SoftmaxMode::Identity, _) => None,
    };
    let (mut masks, masks_commitment) =
        ProverMasks::commit(params, mask_schedule(shape, softmax)?, &mut transcript, rng)
            .map_err(zk_error("masks"))?;
    let output = output_witness_claim(params, shape, &statement.output, &mut transcript)?;

    let t = &mut transcript;
    let mut prover = ZkProver { params, masks: &mut masks, rng: &mut *rng };
    let mut timings = crate::ProverTimings::default();
    let data = softmax_data.as_mut().map(|(_, _, data, _)| data);
    let (steps, chain_claims) = prove_chain_steps::<Zk>(
        &mut prover,
        shape,
        mask,
        softmax,
        &mut witness,
        data,
        &output,
        t,
        &mut timings,
    )?;
    let (input_claims, softmax_claims) = (chain_claims.inputs, chain_claims.softmax);
    let ChainProof { unpadding, attention_values, softmax: slot_proof, masking, qk, padding } = steps;
    let softmax_proof = slot_proof.exponential;
    let m = &mut masks;

    let c = &statement.commitments;
    let claims = [&input_claims.queries, &input_claims.keys, &input_claims.values];
    let mut openings = Vec::with_capacity(3);
    let mut multi_opening = None;
    match &softmax_data {
        Some((p, commitments, data, softmax_blinds)) => {
            let mut polynomials: Vec<(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds)> =
                softmax_opening_tables(shape, p, commitments, data)?
                    .into_iter()
                    .zip(softmax_blinds)
                    .map(|((table, commitment), blind)| (table, commitment, blind))
                    .collect();
            for (((num_vars, table), commitment), blind) in
                padded.iter().zip([&c.queries, &c.keys, &c.values]).zip(blinds)
            {
                polynomials.push((
                    PolynomialTable::Integers { num_vars: *num_vars, values: table },
                    commitment,
                    blind,
                ));
            }
            let mut all_claims = softmax_claims;
            for (k, claim) in claims.iter().enumerate() {
                all_claims.push(ZkOpeningClaim {
                    polynomial: 8 + k,
                    point: claim.point.clone(),
                    value: claim.value.clone(),
                });
            }
            multi_opening = Some(
                prove_multi_opening_zk(params, &polynomials, &all_claims, m, t, rng)
                    .map_err(zk_error(STEP_OPENINGS))?,
            );
        }
        None => {
            let items: Vec<_> = padded
                .iter()
                .zip([&c.queries, &c.keys, &c.values])
                .zip(blinds)
                .zip(claims)
                .map(|((((num_vars, table), commitment), blind), claim)| {
                    (
                        PolynomialTable::Integers { num_vars: *num_vars, values: table },
                        commitment,
                        blind,
                        claim.point.as_slice(),
                        (
                            G1Affine::from(claim.value.commitment.evaluate()),
                            claim.value.opening.value,
                            claim.value.opening.blinding,
                        ),
                    )
                })
                .collect();
            let together =
                one_batch([&c.queries, &c.keys, &c.values], claims.map(|claim| claim.point.as_slice()));
            let groups: Vec<&[_]> = if together { vec![&items[..]] } else { items.chunks(1).collect() };
            for group in groups {
                openings.push(Hyrax::open_batch_committed(params, group, t, rng)?);
            }
        }
    }
    let mask_openings = masks.prove_openings(params, t, rng).map_err(zk_error("masks"))?;
    let proof = ZkLayerProof {
        version: crate::PROOF_FORMAT_VERSION,
        unpadding,
        attention_values,
        softmax: softmax_data.map(|(_, commitments, _, _)| commitments).zip(softmax_proof),
        masking,
        qk,
        padding,
        masks: masks_commitment,
        mask_openings,
        openings,
        multi_opening,
    };
    Ok((statement, proof))
}

/// Verifies a zero-knowledge layer proof using only the statement and the generators.
///
/// # Errors
/// Statement errors, a proof of the other softmax mode ([`AttentionError::CheckFailed`]), the
/// first failing step ([`AttentionError::ZeroKnowledge`],
/// [`AttentionError::CheckFailed`]), or the failing group equation at the end.
#[deny(clippy::indexing_slicing)]
pub fn verify_layer_zk(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &ZkLayerProof,
) -> Result<(), AttentionError> {
    let (checks, transcript) = collect_layer_zk(params, statement, proof)?;
    checks.finish(&transcript).map_err(zk_error("the proof's group equations"))
}

/// The batching weights with which [`verify_layer_zk`] combines the proof's deferred group
/// equations: drawn after the whole proof, its final responses included, is absorbed, so any
/// change to a prover message changes them (what the soundness tests check byte by byte).
///
/// # Errors
/// As [`verify_layer_zk`], for every check made before the group equations.
pub fn layer_zk_batching_weights(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &ZkLayerProof,
) -> Result<Vec<Fr>, AttentionError> {
    let (checks, transcript) = collect_layer_zk(params, statement, proof)?;
    Ok(checks.weights(&transcript))
}

/// Everything [`verify_layer_zk`] checks but the final group equations, which are returned
/// with the transcript their weights are drawn from.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn collect_layer_zk(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &ZkLayerProof,
) -> Result<(DeferredChecks, Transcript), AttentionError> {
    if proof.version != crate::PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    statement.validate_layout(zk_layout_column_vars(&statement.shape, statement.softmax))?;
    let shape = &statement.shape;
    let mut transcript = statement_transcript(statement);
    let softmax = match (statement.softmax, &proof.softmax, &proof.masking) {
        (SoftmaxMode::Exponential(p), Some((commitments, slot)), None) => {
            let layout = zk_layout_column_vars(shape, statement.softmax);
            commitments.validate_layout(shape, &crate::softmax::softmax_tables(&p)?, layout)?;
            commitments.append_to_transcript(&mut transcript);
            Some((p, commitments, slot))
        }
        (SoftmaxMode::Identity, None, Some(_)) => None,
        _ => return Err(AttentionError::CheckFailed { step: "the proof's softmax mode" }),
    };
    let mut masks =
        VerifierMasks::absorb(mask_schedule(shape, statement.softmax)?, proof.masks, &mut transcript);
    let output = output_claim(params, shape, &statement.output, &mut transcript)?;

    let mut checks = DeferredChecks::new();
    let t = &mut transcript;
    let mut verifier = ZkVerifier { params, masks: &mut masks, checks: &mut checks };
    let steps = ChainProof {
        unpadding: proof.unpadding.clone(),
        attention_values: proof.attention_values.clone(),
        softmax: SoftmaxSlotProof { exponential: softmax.as_ref().map(|(_, _, slot)| (*slot).clone()) },
        masking: proof.masking.clone(),
        qk: proof.qk.clone(),
        padding: proof.padding.clone(),
    };
    let chain_claims = verify_chain_steps::<Zk>(
        &mut verifier,
        shape,
        statement.mask,
        statement.softmax,
        &output,
        &steps,
        t,
    )?;
    let inputs = chain_claims.inputs;
    let softmax_claims = softmax.map(|(_, commitments, _)| (commitments, chain_claims.softmax));
    let (m, k) = (&mut masks, &mut checks);

    let c = &statement.commitments;
    let claims = [&inputs.queries, &inputs.keys, &inputs.values];
    match (softmax_claims, &proof.multi_opening) {
        (Some((commitments, mut all_claims)), Some(multi_opening)) => {
            if !proof.openings.is_empty() {
                return Err(AttentionError::CheckFailed { step: STEP_OPENINGS });
            }
            let mut polynomials = softmax_commitment_list(commitments);
            polynomials.extend([&c.queries, &c.keys, &c.values]);
            for (index, claim) in claims.iter().enumerate() {
                all_claims.push(ZkOpeningClaim {
                    polynomial: 8 + index,
                    point: claim.point.clone(),
                    value: claim.value.clone(),
                });
            }
            verify_multi_opening_zk_deferred(params, &polynomials, &all_claims, multi_opening, m, t, k)
                .map_err(zk_error(STEP_OPENINGS))?;
        }
        (None, None) => {
            let items: Vec<(&HyraxCommitment, &[Fr], G1Affine)> = [&c.queries, &c.keys, &c.values]
                .into_iter()
                .zip(claims)
                .map(|(commitment, claim)| {
                    (commitment, claim.point.as_slice(), G1Affine::from(claim.value.evaluate()))
                })
                .collect();
            let together =
                one_batch([&c.queries, &c.keys, &c.values], claims.map(|claim| claim.point.as_slice()));
            let groups: Vec<&[_]> = if together { vec![&items[..]] } else { items.chunks(1).collect() };
            if groups.len() != proof.openings.len() {
                return Err(AttentionError::CheckFailed { step: STEP_OPENINGS });
            }
            for (group, opening) in groups.into_iter().zip(&proof.openings) {
                let equations = Hyrax::batch_committed_equations(params, group, opening, t)
                    .map_err(|_| AttentionError::CheckFailed { step: STEP_OPENINGS })?;
                for equation in equations {
                    k.push(equation, zkmha_zk::ZkError::CommittedOpening);
                }
            }
        }
        _ => return Err(AttentionError::CheckFailed { step: STEP_OPENINGS }),
    }
    masks.verify_openings(params, &proof.mask_openings, t, k).map_err(zk_error("masks"))?;
    Ok((checks, transcript))
}

/// Malicious-prover regression (the audit's zero-knowledge forgery, shared/audit/
/// audit_zk_forgery.rs): the honest prover on the true inputs with a false output `O'[0] =
/// O[0] + 1000` in the statement, the output claim's opening left at the true value (so the
/// first masked-sum opening equation is off by `c·(y − y')·U`), then the last responses moved —
/// the masks' inner-product `z₁` and the input opening's `z` — so that the error cancels in the
/// weighted sum of the deferred equations *for weights drawn before those responses*. Before
/// the fix the verifier drew exactly those weights and accepted (`forged_linear_default.zkp`);
/// now the responses are absorbed and the weights also cover every equation, so the forgery
/// is rejected.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod forgery_regression {
    use super::*;
    use crate::attention_values::{AttentionMatrix, prove_attention_values, verify_attention_values};
    use crate::masking::{prove_masking, verify_masking};
    use crate::padding::{prove_padding, verify_padding};
    use crate::qk::{prove_qk, verify_qk};
    use crate::softmax::{SlotOutput, prove_slot, verify_slot};
    use crate::unpadding::{prove_unpadding, verify_unpadding};
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use zkmha_field::Field;
    use zkmha_mle::eq_table;
    use zkmha_pcs::GroupEquation;

    fn inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
        AttentionInputs {
            queries: draw(shape.seq_len * shape.model_width()),
            keys: draw(shape.seq_len * shape.model_width()),
            values: draw(shape.seq_len * shape.value_model_width()),
        }
    }

    /// The honest linear-attention prover with one dishonest step (the output claim's opening).
    fn prove_false_output(
        params: &HyraxParams,
        shape: &AttentionShape,
        mask: MaskKind,
        inputs: &AttentionInputs,
        fake_output: Vec<Fr>,
        rng: &mut ChaCha20Rng,
    ) -> (CommittedStatement, ZkLayerProof) {
        let softmax = SoftmaxMode::Identity;
        let (commitments, blinds) = commit_inputs_hiding(params, shape, softmax, inputs, rng).unwrap();
        let witness = witness_alongside_table(shape, mask, softmax, inputs, Some(params)).unwrap();
        params.prepare_pedersen_tables();
        let padded = padded_inputs(shape, inputs);
        let statement = CommittedStatement { shape: *shape, mask, softmax, commitments, output: fake_output };
        let mut transcript = statement_transcript(&statement);
        let (mut masks, masks_commitment) =
            ProverMasks::commit(params, mask_schedule(shape, softmax).unwrap(), &mut transcript, rng)
                .unwrap();
        let fake = output_witness_claim(params, shape, &statement.output, &mut transcript).unwrap();
        let true_value = matrix_mle(shape.seq_len, shape.value_model_width(), &witness.output)
            .unwrap()
            .evaluate(&fake.point)
            .unwrap();
        let output = WitnessClaim {
            point: fake.point.clone(),
            value: CommittedValue {
                commitment: fake.value.commitment.clone(),
                opening: zkmha_zk::ValueOpening { value: true_value, blinding: Fr::from(0u64) },
            },
        };
        let t = &mut transcript;
        let mut prover = ZkProver { params, masks: &mut masks, rng: &mut *rng };
        let p = &mut prover;
        let (unpadding, output_hat) =
            prove_unpadding::<Zk>(p, shape, &witness.output_hat, &output, t).unwrap();
        let matrix = AttentionMatrix::Masked { scores: &witness.scores, mask };
        let (attention_values, av) =
            prove_attention_values::<Zk>(p, shape, matrix, &witness.values_hat, &output_hat, t).unwrap();
        let slot = prove_slot::<Zk>(p, softmax, shape, mask, &av.attention, None, t).unwrap();
        let SlotOutput::MaskedScores(masked) = slot.output else { panic!("linear attention") };
        let (masking, scores_claim) =
            prove_masking::<Zk>(p, shape, mask, witness.scores.clone(), &masked, t).unwrap();
        let (qk, qk_claims) =
            prove_qk::<Zk>(p, shape, &witness.queries_hat, &witness.keys_hat, &scores_claim, t).unwrap();
        let (padding, input_claims) = prove_padding::<Zk>(
            p,
            shape,
            [&witness.queries, &witness.keys, &witness.values],
            [&qk_claims.queries_hat, &qk_claims.keys_hat, &av.values_hat],
            t,
        )
        .unwrap();
        let c = &statement.commitments;
        let claims = [&input_claims.queries, &input_claims.keys, &input_claims.values];
        let items: Vec<_> = padded
            .iter()
            .zip([&c.queries, &c.keys, &c.values])
            .zip(&blinds)
            .zip(claims)
            .map(|((((num_vars, table), commitment), blind), claim)| {
                (
                    PolynomialTable::Integers { num_vars: *num_vars, values: table },
                    commitment,
                    blind,
                    claim.point.as_slice(),
                    (
                        G1Affine::from(claim.value.commitment.evaluate()),
                        claim.value.opening.value,
                        claim.value.opening.blinding,
                    ),
                )
            })
            .collect();
        let together =
            one_batch([&c.queries, &c.keys, &c.values], claims.map(|claim| claim.point.as_slice()));
        let groups: Vec<&[_]> = if together { vec![&items[..]] } else { items.chunks(1).collect() };
        let mut openings = Vec::new();
        for group in groups {
            openings.push(Hyrax::open_batch_committed(params, group, t, rng).unwrap());
        }
        let mask_openings = masks.prove_openings(params, t, rng).unwrap();
        let proof = ZkLayerProof {
            version: crate::PROOF_FORMAT_VERSION,
            unpadding,
            attention_values,
            softmax: None,
            masking: Some(masking),
            qk,
            padding,
            masks: masks_commitment,
            mask_openings,
            openings,
            multi_opening: None,
        };
        (statement, proof)
    }

    /// The deferred equations, the weights the *old* verifier drew (from the transcript
    /// alone), the output point and the opening groups' public vectors.
    fn attacker_view(
        params: &HyraxParams,
        statement: &CommittedStatement,
        proof: &ZkLayerProof,
    ) -> (Vec<GroupEquation>, Vec<Fr>, Vec<Fr>) {
        let (checks, transcript) = collect_layer_zk(params, statement, proof).unwrap();
        let equations = checks.equations().to_vec();
        let weights = transcript.clone().challenge_fields(b"zk/deferred/weights", equations.len());
        let mut t = statement_transcript(statement);
        VerifierMasks::absorb(
            mask_schedule(&statement.shape, statement.softmax).unwrap(),
            proof.masks,
            &mut t,
        );
        let output_point = output_claim(params, &statement.shape, &statement.output, &mut t).unwrap().point;
        (equations, weights, output_point)
    }

    #[test]
    fn the_audit_zero_knowledge_forgery_is_rejected() {
        let shape = AttentionShape::new(128, 8, 64, 64).unwrap();
        let mask = MaskKind::Causal;
        let params = zk_hyrax_params_for(&shape, SoftmaxMode::Identity).unwrap();
        let x = inputs(&shape, 7);
        let true_output = crate::compute_witness(&shape, mask, &x).unwrap().output;
        let mut fake_output = true_output.clone();
        fake_output[0] += Fr::from(1000u64);
        let mut rng = ChaCha20Rng::seed_from_u64(99);
        let (statement, mut proof) =
            prove_false_output(&params, &shape, mask, &x, fake_output.clone(), &mut rng);
        assert!(verify_layer_zk(&params, &statement, &proof).is_err());

        let (eqs, w, output_point) = attacker_view(&params, &statement, &proof);
        let n = eqs.len();
        let c0 = -eqs[0].scalars[3];
        let y = matrix_mle(shape.seq_len, shape.value_model_width(), &true_output)
            .unwrap()
            .evaluate(&output_point)
            .unwrap();
        let y_fake = matrix_mle(shape.seq_len, shape.value_model_width(), &fake_output)
            .unwrap()
            .evaluate(&output_point)
            .unwrap();
        let tau = w[0] * c0 * (y - y_fake);
        let u = params.value_generator;
        let m = proof.openings.len();
        assert_eq!(m, 1, "this shape opens Q, K, V in one batch");
        let ipa = &eqs[n - 1];
        let z1 = proof.mask_openings.responses[0];
        let mask_len = ipa.bases.iter().take_while(|b| **b != u).count();
        let columns = proof.openings[0].response.len();
        assert!(mask_len <= columns, "the audit's strategy A applies at this shape");
        let s: Vec<Fr> = (0..mask_len).map(|i| ipa.scalars[i] * z1.inverse().unwrap()).collect();
        let bx = ipa.scalars[mask_len] * z1.inverse().unwrap();
        let (row, val) = (n - 1 - 2 * m, n - 2 * m);
        let (l_ipa, l_row, l_val) = (w[n - 1], w[row], w[val]);
        // The opening's public vector R = eq(column point of the widest member, ·).
        let publics = opening_public(&params, &statement, &proof);
        let r = &publics[0];
        let sr: Fr = s.iter().zip(r).map(|(a, b)| *a * b).sum();
        let kappa = l_ipa * (bx - l_val * l_row.inverse().unwrap() * sr);
        let delta1 = -tau * kappa.inverse().unwrap();
        proof.mask_openings.responses[0] += delta1;
        for j in 0..mask_len {
            proof.openings[0].response[j] -= l_ipa * l_row.inverse().unwrap() * delta1 * s[j];
        }
        // Before the fix, moving the last responses left the transcript — hence the weights —
        // unchanged and the forged equations passed with them. Now the responses are absorbed:
        // the weights the attacker solved against are not the verifier's …
        let (_, weights_after, _) = attacker_view(&params, &statement, &proof);
        assert_ne!(weights_after, w, "the last responses are absorbed before the weights are drawn");
        // … and the forgery is rejected.
        assert!(matches!(
            verify_layer_zk(&params, &statement, &proof),
            Err(AttentionError::ZeroKnowledge { .. })
        ));
    }

    /// Per opening group, `eq(column point, ·)` (the widest member's column part).
    fn opening_public(
        params: &HyraxParams,
        statement: &CommittedStatement,
        proof: &ZkLayerProof,
    ) -> Vec<Vec<Fr>> {
        let shape = &statement.shape;
        let mut transcript = statement_transcript(statement);
        let mut masks = VerifierMasks::absorb(
            mask_schedule(shape, statement.softmax).unwrap(),
            proof.masks,
            &mut transcript,
        );
        let output = output_claim(params, shape, &statement.output, &mut transcript).unwrap();
        let mut checks = DeferredChecks::new();
        let t = &mut transcript;
        let v = &mut ZkVerifier { params, masks: &mut masks, checks: &mut checks };
        let output_hat = verify_unpadding::<Zk>(v, shape, &output, &proof.unpadding, t).unwrap();
        let av = verify_attention_values::<Zk>(v, shape, &output_hat, &proof.attention_values, t).unwrap();
        let (slot, _) =
            verify_slot::<Zk>(v, statement.softmax, shape, statement.mask, &av.attention, None, t).unwrap();
        let SlotOutput::MaskedScores(masked) = slot else { panic!("linear attention") };
        let masking = proof.masking.as_ref().unwrap();
        let scores = verify_masking::<Zk>(v, shape, statement.mask, &masked, masking, t).unwrap();
        let qk = verify_qk::<Zk>(v, shape, &scores, &proof.qk, t).unwrap();
        let inputs = verify_padding::<Zk>(
            v,
            shape,
            [&qk.queries_hat, &qk.keys_hat, &av.values_hat],
            &proof.padding,
            t,
        )
        .unwrap();
        let c = &statement.commitments;
        let mut widest: Option<(usize, Vec<Fr>)> = None;
        for (commitment, claim) in
            [&c.queries, &c.keys, &c.values].into_iter().zip([&inputs.queries, &inputs.keys, &inputs.values])
        {
            let cv = commitment.column_vars().unwrap();
            if widest.as_ref().is_none_or(|(w, _)| cv > *w) {
                widest = Some((cv, claim.point[..cv].to_vec()));
            }
        }
        vec![eq_table(&widest.unwrap().1)]
    }
}
