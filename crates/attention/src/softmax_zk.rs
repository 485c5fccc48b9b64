//! The exponential softmax slot of [`crate::softmax`] in zero knowledge: the same relations,
//! every value committed, every sum-check masked.
//!
//! ```text
//! commitments  the eight softmax columns with blinding (hiding Hyrax; commit_softmax_hiding),
//!              absorbed after the statement
//! in           a committed claim C_A on A at p
//! lookups      the three lookups in zero knowledge (zkmha_lookup::prove_lookups_zk) → committed
//!              column values at (r ‖ tag), r_ρ, r_u and multiplicities at their table points
//! P → V        C(lo), C(hi), C(ē), C(ō) at r
//! relations    C(w_0) ≐ id(tag)·U,  C(w_1) ≐ W_0·C(lo) + W_1·C(hi),  C(w_2) ≐ W_0·C(ē) + W_1·C(ō)
//!              (W = eq(tag, ·): the exponent lookup's merged columns)
//! sum-check    β_a, β_b ← V; one zero-knowledge batch of sums of products
//!                I1  comb·z·e·flag   from β_a·C_A + β_b·(C_u + (2^f − δ)·kept(r_u)·U)
//!                I2  eq_ρ·z·D        from C_ρ
//!              (comb, z, eq_ρ public: V checks them)  → t*, committed e, flag, D at t*
//! P → V        C(ē), C(ō), C(ẑ), C(QK̂), C(lo), C(hi) at t*  (ẑ at t*'s row part)
//! relations    C_e ≐ 2^f·U − C(ē),  C_flag ≐ U − C(ō),
//!              C_D ≐ 2^k·C(ẑ) + 2^(k−1)·U − M·C(QK̂) − 2^k·C(lo) − 2^(k+16)·C(hi)
//! out          C(QK̂) at t* (the QKᵀ step follows), committed claims on the eight columns for
//!              the layer's zero-knowledge multi-point opening
//! ```
//!
//! All the slot's relations are linear (the products sit inside the sum-checks' own relation
//! proofs) and go into one relations proof at the end of the slot.

use crate::commitment_layout::{permute_point, table_column_vars, zk_layout_column_vars};
use crate::fixed_point::{DIGIT_BITS, SoftmaxParams};
use crate::softmax::{
    ExponentialProverInput, SlotLookups, SoftmaxCommitments, SoftmaxMode, SoftmaxProverData,
    evaluate_columns, evaluate_small, kept_rows, row_part, slot_instances, softmax_tables, tensor_order,
    tensor_vars,
};
use crate::structured::{prefix_eq_sum, zeroifier};
use crate::zk_claims::{CommittedClaim, WitnessClaim, zk_error};
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, One, Zero};
use zkmha_lookup::{
    Lookup, LookupTable, ZkLookupClaims, ZkLookupProof, identity_column, prove_lookups_zk, verify_lookups_zk,
    zk_lookup_schedule,
};
use zkmha_mle::{eq_evaluation, eq_table};
use zkmha_pcs::{G1Affine, Hyrax, HyraxBlinds, HyraxParams};
use zkmha_sumcheck::{FinalEvaluations, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, FactorValue, LinearValue, ProverMasks,
    ProverRelation, QuadraticRelation, RelationsProof, ValueOpening, VerifierMasks, ZkOpeningClaim,
    ZkProductProof, ZkProductShape, prove_zk_batched_products, verify_zk_batched_products_deferred,
};

const STEP: &str = "softmax (zero knowledge)";
const LABEL_LOOKUP_VALUES: &[u8] = b"attention/softmax-zk/lookup-values";
const LABEL_BATCH: &[u8] = b"attention/softmax-zk/batch";
const LABEL_FINAL_VALUES: &[u8] = b"attention/softmax-zk/final-values";

/// The zero-knowledge proof of the exponential softmax.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ExponentialSoftmaxZkProof {
    /// The three lookups in zero knowledge.
    pub lookups: ZkLookupProof,
    /// `C(lo), C(hi), C(ē), C(ō)` at the exponent lookup's point `r`.
    pub lookup_values: Vec<G1Affine>,
    /// The batched sum-check of I1 and I2.
    pub sumcheck: ZkProductProof,
    /// `C(ē), C(ō), C(ẑ), C(QK̂), C(lo), C(hi)` at `t*`.
    pub final_values: Vec<G1Affine>,
    /// The slot's linear relations.
    pub relations: RelationsProof,
}

/// The masked sum-checks of the slot, in proof order: the lookups' fraction depths, then the
/// batch of I1 and I2.
///
/// # Errors
/// [`AttentionError::Lookup`] for parameters out of range.
pub fn softmax_zk_schedule(
    shape: &AttentionShape,
    params: &SoftmaxParams,
) -> Result<Vec<(usize, usize)>, AttentionError> {
    let (n, n_rows) = tensor_vars(shape);
    let tables = softmax_tables(params)?;
    let mut schedule = zk_lookup_schedule(&lookup_statements(&tables, n, n_rows));
    schedule.push((n, 4));
    Ok(schedule)
}

fn lookup_statements(
    tables: &crate::softmax::SoftmaxTables,
    n: usize,
    n_rows: usize,
) -> Vec<(&dyn LookupTable, usize)> {
    vec![(&tables.exponent, n + 1), (&tables.remainder, n), (&tables.row_sum, n_rows)]
}

/// Commits to the softmax data with blinding, in the layer's layout; returns the blinds in
/// [`crate::softmax::softmax_commitment_list`] order.
///
/// # Errors
/// [`AttentionError::Commitment`] when the generators are too few.
pub fn commit_softmax_hiding<R: RngCore + CryptoRng>(
    hyrax: &HyraxParams,
    shape: &AttentionShape,
    params: &SoftmaxParams,
    data: &SoftmaxProverData,
    rng: &mut R,
) -> Result<(SoftmaxCommitments, Vec<HyraxBlinds>), AttentionError> {
    let (n, n_rows) = tensor_vars(shape);
    let tables = softmax_tables(params)?;
    let layout = zk_layout_column_vars(shape, SoftmaxMode::Exponential(*params));
    let (w, m) = (&data.witness, &data.multiplicities);
    let [lo, hi, e_bar, o_bar] = &data.committed;
    let columns: [(usize, &[i64]); 8] = [
        (n, lo),
        (n, hi),
        (n, e_bar),
        (n, o_bar),
        (n_rows, &w.shift),
        (tables.exponent.num_vars(), &m.exponent),
        (tables.remainder.num_vars(), &m.remainder),
        (tables.row_sum.num_vars(), &m.row_sum),
    ];
    let mut commitments = Vec::with_capacity(8);
    let mut blinds = Vec::with_capacity(8);
    for (vars, values) in columns {
        let (c, b) = Hyrax::commit_small_hiding(hyrax, vars, table_column_vars(vars, layout), values, rng)?;
        commitments.push(c);
        blinds.push(b);
    }
    let mut c = commitments.into_iter();
    let mut next = || c.next().ok_or(AttentionError::CheckFailed { step: STEP });
    let commitments = SoftmaxCommitments {
        low: next()?,
        high: next()?,
        exponent_complement: next()?,
        overflow: next()?,
        shift: next()?,
        exponent_multiplicities: next()?,
        remainder_multiplicities: next()?,
        row_sum_multiplicities: next()?,
    };
    Ok((commitments, blinds))
}

fn sent(values: &[CommittedValue]) -> Vec<G1Affine> {
    values.iter().map(|v| G1Affine::from(v.commitment.evaluate())).collect()
}

fn absorb(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len());
    for point in points {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}

/// The slot's shapes: I1 = comb·z·e·flag, I2 = eq_ρ·z·D, the first two factors public.
fn shapes() -> Result<[ZkProductShape; 2], AttentionError> {
    let shape = |factors: usize| -> Result<ZkProductShape, AttentionError> {
        let product = SumOfProducts::product(factors)
            .map_err(|source| AttentionError::Sumcheck { step: STEP, source })?;
        let public = (0..factors).map(|k| k < 2).collect();
        ZkProductShape::new(product, public).map_err(zk_error(STEP))
    };
    Ok([shape(4)?, shape(3)?])
}

/// The exponent lookup's merged columns from the block values: `[id(tag), W_0·lo + W_1·hi,
/// W_0·ē + W_1·ō]` as relations `C(w_k) − merged ≐ 0`.
fn merged_relations<V: LinearValue>(
    params: &HyraxParams,
    tag_point: &[Fr],
    columns: &[V],
    [lo, hi, e_bar, o_bar]: &[V; 4],
) -> Result<Vec<V>, AttentionError> {
    let w = eq_table(tag_point);
    let weight = |s: usize| w.get(s).copied().unwrap_or_else(Fr::zero);
    let [c0, c1, c2] = columns else {
        return Err(AttentionError::CheckFailed { step: "softmax lookup columns" });
    };
    Ok(vec![
        c0.plus_scaled(-identity_column(tag_point), &V::constant(params, Fr::one())),
        c1.plus_scaled(-weight(0), lo).plus_scaled(-weight(1), hi),
        c2.plus_scaled(-weight(0), e_bar).plus_scaled(-weight(1), o_bar),
    ])
}

/// The relations at `t*`: `e − (2^f − ē)`, `flag − (1 − ō)`, `D − (2^k·ẑ + 2^(k−1) − M·QK̂ −
/// 2^k·lo − 2^(k+16)·hi)`, each `≐ 0`.
fn final_relations<V: LinearValue>(
    params: &HyraxParams,
    softmax: &SoftmaxParams,
    [e, flag, d]: [&V; 3],
    [e_bar, o_bar, shift, score, lo, hi]: [&V; 6],
) -> Vec<V> {
    let one = V::constant(params, Fr::one());
    let two_k = Fr::from(1u64 << softmax.shift);
    let constant = Fr::from(1u64 << (softmax.shift - 1));
    vec![
        e.plus_scaled(-Fr::from(softmax.one() as u64), &one).plus_scaled(Fr::one(), e_bar),
        flag.plus_scaled(-Fr::one(), &one).plus_scaled(Fr::one(), o_bar),
        d.plus_scaled(-two_k, shift)
            .plus_scaled(-constant, &one)
            .plus_scaled(Fr::from(softmax.multiplier), score)
            .plus_scaled(two_k, lo)
            .plus_scaled(two_k * Fr::from(1u64 << DIGIT_BITS), hi),
    ]
}

/// The committed claims on the eight columns (the layer's final opening), as in
/// `softmax::opening_claims`.
fn column_claims<V: Clone>(
    r: &[Fr],
    [lo_r, hi_r, e_bar_r, o_bar_r]: &[V; 4],
    t_committed: &[Fr],
    t_rows: &[Fr],
    [e_bar_t, o_bar_t, shift_t, _, lo_t, hi_t]: [&V; 6],
    lookups: [&ZkLookupClaims<V>; 3],
) -> Vec<ZkOpeningClaim<V>> {
    let claim = |polynomial: usize, point: &[Fr], value: &V| ZkOpeningClaim {
        polynomial,
        point: point.to_vec(),
        value: value.clone(),
    };
    let [exponent, remainder, row_sum] = lookups;
    vec![
        claim(0, r, lo_r),
        claim(0, t_committed, lo_t),
        claim(1, r, hi_r),
        claim(1, t_committed, hi_t),
        claim(2, r, e_bar_r),
        claim(2, t_committed, e_bar_t),
        claim(3, r, o_bar_r),
        claim(3, t_committed, o_bar_t),
        claim(4, t_rows, shift_t),
        claim(5, &exponent.table_point, &exponent.multiplicities),
        claim(6, &remainder.table_point, &remainder.multiplicities),
        claim(7, &row_sum.table_point, &row_sum.multiplicities),
    ]
}

/// What the zero-knowledge slot returns to the prover's layer.
pub struct SlotZkOutput {
    /// The proof.
    pub proof: ExponentialSoftmaxZkProof,
    /// The committed claim on `QK̂` at `t*`.
    pub scores: WitnessClaim,
    /// Committed claims on the eight columns, for the final opening.
    pub opening_claims: Vec<ZkOpeningClaim<CommittedValue>>,
}

/// Proves the exponential softmax in zero knowledge: a committed claim on `A` becomes one on
/// `QK̂`.
///
/// # Errors
/// As [`crate::softmax::prove_slot`], and [`AttentionError::ZeroKnowledge`].
#[allow(clippy::too_many_arguments)]
pub fn prove_softmax_zk<R: RngCore + CryptoRng>(
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    claim: &WitnessClaim,
    input: &ExponentialProverInput<'_>,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<SlotZkOutput, AttentionError> {
    params.validate()?;
    let hyrax = input.hyrax;
    let (n, n_rows) = tensor_vars(shape);
    let w = &input.data.witness;
    let m = &input.data.multiplicities;
    let tables = softmax_tables(params)?;

    // The lookups, as in the plain slot (blocks of the committed columns, never materialized).
    let [c_lo, c_hi, c_e_bar, c_o_bar] = &input.data.committed;
    let slot_lookups = SlotLookups::new(shape, input.data);
    let [witness, remainder_witness, row_sum_witness] = slot_lookups.witnesses();
    let (lookups, claims) = prove_lookups_zk(
        hyrax,
        &[
            Lookup { table: &tables.exponent, witness: &witness, multiplicities: &m.exponent },
            Lookup { table: &tables.remainder, witness: &remainder_witness, multiplicities: &m.remainder },
            Lookup { table: &tables.row_sum, witness: &row_sum_witness, multiplicities: &m.row_sum },
        ],
        masks,
        transcript,
        rng,
    )?;
    let [exponent, remainder, row_sum] = <[ZkLookupClaims<CommittedValue>; 3]>::try_from(claims)
        .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let (r, tag_point) = exponent.witness_point.split_at(n.min(exponent.witness_point.len()));
    let blocks = slot_lookups.block_values().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let hide = |value: Fr, rng: &mut R| {
        let opening = ValueOpening::hide(value, rng);
        CommittedValue::new(G1Affine::from(opening.commit(hyrax)), opening)
    };
    let block_committed: Vec<CommittedValue> = blocks.iter().map(|v| hide(*v, rng)).collect();
    let lookup_values = sent(&block_committed);
    absorb(transcript, LABEL_LOOKUP_VALUES, &lookup_values);
    let block_committed = <[CommittedValue; 4]>::try_from(block_committed)
        .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let mut targets = merged_relations(hyrax, tag_point, &exponent.columns, &block_committed)?;

    // The batched sum-check of I1 and I2.
    let remainder_claim = remainder.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let row_sum_claim = row_sum.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let r_rows = &row_sum.witness_point;
    let betas = transcript.challenge_fields(LABEL_BATCH, 2);
    let (beta_a, beta_b) = (betas[0], betas[1]);
    let constant = Fr::from((params.one() - params.tolerance()) as u64) * kept_rows(shape, r_rows);
    let claim_a = claim.value.clone();
    let claim_one = claim_a
        .times(beta_a)
        .plus_scaled(beta_b, &row_sum_claim.plus_scaled(constant, &CommittedValue::public(hyrax, Fr::one())));
    let (mut probabilities, mut exponents) = slot_instances(
        shape,
        mask,
        params,
        input.data,
        [&claim.point, &remainder.witness_point, r_rows],
        (beta_a, beta_b),
    )?;
    let [shape_one, shape_two] = shapes()?;
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> =
        vec![(&shape_one, &mut probabilities), (&shape_two, &mut exponents)];
    let (sumcheck, outs, openings) = prove_zk_batched_products(
        hyrax,
        members,
        &[claim_one, remainder_claim.clone()],
        masks,
        transcript,
        rng,
    )
    .map_err(zk_error(STEP))?;
    drop((probabilities, exponents));
    let hidden = |member: usize, k: usize| -> Result<CommittedValue, AttentionError> {
        match (outs.get(member).and_then(|o| o.values.get(k)), openings.get(member).and_then(|o| o.get(k))) {
            (Some(FactorValue::Hidden(c)), Some(Some(o))) => Ok(CommittedValue::new(*c, *o)),
            _ => Err(AttentionError::CheckFailed { step: STEP }),
        }
    };
    let (e, flag, d) = (hidden(0, 2)?, hidden(0, 3)?, hidden(1, 2)?);
    let t_star = outs.first().map(|o| o.point.clone()).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let t_rows = row_part(shape, &t_star);
    let t_committed = permute_point(&input.data.order, &t_star);
    let at_t = evaluate_columns(&t_committed, &[c_e_bar, c_o_bar, c_lo, c_hi]);
    let score_t = evaluate_columns(&t_star, &[&w.scores]).first().copied().unwrap_or_else(Fr::zero);
    let values = [
        at_t.first().copied().unwrap_or_default(),
        at_t.get(1).copied().unwrap_or_default(),
        evaluate_small(n_rows, &w.shift, &t_rows)?,
        score_t,
        at_t.get(2).copied().unwrap_or_default(),
        at_t.get(3).copied().unwrap_or_default(),
    ];
    let finals: Vec<CommittedValue> = values.iter().map(|v| hide(*v, rng)).collect();
    let final_values = sent(&finals);
    absorb(transcript, LABEL_FINAL_VALUES, &final_values);
    let [e_bar_t, o_bar_t, shift_t, score_c, lo_t, hi_t] =
        <[CommittedValue; 6]>::try_from(finals).map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let final_six = [&e_bar_t, &o_bar_t, &shift_t, &score_c, &lo_t, &hi_t];
    targets.extend(final_relations(hyrax, params, [&e, &flag, &d], final_six));
    let relations: Vec<ProverRelation> =
        targets.into_iter().map(|target| ProverRelation { target, terms: Vec::new() }).collect();
    let relations = RelationsProof::prove(hyrax, &[], &relations, transcript, rng).map_err(zk_error(STEP))?;

    let opening_claims = column_claims(
        r,
        &block_committed,
        &t_committed,
        &t_rows,
        final_six,
        [&exponent, &remainder, &row_sum],
    );
    let scores = WitnessClaim { point: t_star, value: score_c.clone() };
    let proof = ExponentialSoftmaxZkProof { lookups, lookup_values, sumcheck, final_values, relations };
    Ok(SlotZkOutput { proof, scores, opening_claims })
}

/// Verifies [`prove_softmax_zk`]'s proof with its group equations left in `checks`; returns
/// the committed claim on `QK̂` and the committed claims on the eight columns
/// ([`crate::softmax::softmax_commitment_list`] order) that the caller must open.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming the failing check, [`AttentionError::Lookup`],
/// [`AttentionError::ZeroKnowledge`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn verify_softmax_zk(
    hyrax: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    claim: &CommittedClaim,
    proof: &ExponentialSoftmaxZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<(CommittedClaim, Vec<ZkOpeningClaim<Combination>>), AttentionError> {
    params.validate()?;
    let (n, n_rows) = tensor_vars(shape);
    let s = shape.seq_len;
    let tables = softmax_tables(params)?;
    if claim.point.len() != n {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let claims = verify_lookups_zk(
        hyrax,
        &lookup_statements(&tables, n, n_rows),
        &proof.lookups,
        masks,
        transcript,
        checks,
    )?;
    let [exponent, remainder, row_sum] = <[ZkLookupClaims<Combination>; 3]>::try_from(claims)
        .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    if exponent.witness_point.len() != n + 1 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let (r, tag_point) = exponent.witness_point.split_at(n);
    let blocks: [Combination; 4] = match proof.lookup_values.as_slice() {
        [a, b, c, d] => [*a, *b, *c, *d].map(Combination::point),
        _ => return Err(AttentionError::CheckFailed { step: "softmax lookup values" }),
    };
    absorb(transcript, LABEL_LOOKUP_VALUES, &proof.lookup_values);
    let mut targets = merged_relations(hyrax, tag_point, &exponent.columns, &blocks)?;

    let remainder_claim = remainder.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let row_sum_claim = row_sum.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let r_rows = row_sum.witness_point.as_slice();
    let betas = transcript.challenge_fields(LABEL_BATCH, 2);
    let [beta_a, beta_b] = betas.as_slice() else {
        return Err(AttentionError::CheckFailed { step: STEP });
    };
    let constant = Fr::from((params.one() - params.tolerance()) as u64) * kept_rows(shape, r_rows);
    let claim_one = claim
        .value
        .clone()
        .times(*beta_a)
        .plus_scaled(*beta_b, &row_sum_claim.plus_scaled(constant, &Combination::constant(hyrax, Fr::one())));
    let [shape_one, shape_two] = shapes()?;
    let members: [BatchMember<'_>; 2] = [(&shape_one, n), (&shape_two, n)];
    let outs = verify_zk_batched_products_deferred(
        hyrax,
        &members,
        &[claim_one, remainder_claim.clone()],
        &proof.sumcheck,
        masks,
        transcript,
        checks,
    )
    .map_err(zk_error(STEP))?;
    let t_star = outs.first().map(|o| o.point.clone()).ok_or(AttentionError::CheckFailed { step: STEP })?;
    let t_rows = row_part(shape, &t_star);
    let (t_j, t_i) = (
        t_star.get(..shape.seq_vars()).unwrap_or_default(),
        t_rows.get(..shape.seq_vars()).unwrap_or_default(),
    );
    let t_h = t_rows.get(shape.seq_vars()..).unwrap_or_default();
    let z = zeroifier(mask, s, t_i, t_j) * prefix_eq_sum(shape.heads, t_h);
    let combined =
        *beta_a * eq_evaluation(&claim.point, &t_star)? + *beta_b * eq_evaluation(r_rows, &t_rows)?;
    let eq_rho = eq_evaluation(&remainder.witness_point, &t_star)?;
    let value = |member: usize, k: usize| outs.get(member).and_then(|o| o.values.get(k)).copied();
    let public_ok = [(value(0, 0), combined), (value(0, 1), z), (value(1, 0), eq_rho), (value(1, 1), z)]
        .iter()
        .all(|(v, expected)| matches!(v, Some(FactorValue::Public(x)) if x == expected));
    if !public_ok {
        return Err(AttentionError::CheckFailed { step: "softmax sum-check public factors" });
    }
    let hidden = |member: usize, k: usize| match value(member, k) {
        Some(FactorValue::Hidden(c)) => Ok(Combination::point(c)),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    };
    let (e, flag, d) = (hidden(0, 2)?, hidden(0, 3)?, hidden(1, 2)?);
    let finals: [Combination; 6] = match proof.final_values.as_slice() {
        [a, b, c, d, e, f] => [*a, *b, *c, *d, *e, *f].map(Combination::point),
        _ => return Err(AttentionError::CheckFailed { step: "softmax final values" }),
    };
    absorb(transcript, LABEL_FINAL_VALUES, &proof.final_values);
    let [e_bar_t, o_bar_t, shift_t, score_c, lo_t, hi_t] = &finals;
    let final_six = [e_bar_t, o_bar_t, shift_t, score_c, lo_t, hi_t];
    targets.extend(final_relations(hyrax, params, [&e, &flag, &d], final_six));
    let relations: Vec<QuadraticRelation> =
        targets.into_iter().map(|target| QuadraticRelation { target, terms: Vec::new() }).collect();
    proof.relations.verify_deferred(hyrax, &[], &relations, transcript, checks).map_err(zk_error(STEP))?;

    let t_committed = permute_point(&tensor_order(shape, params), &t_star);
    let opening_claims =
        column_claims(r, &blocks, &t_committed, &t_rows, final_six, [&exponent, &remainder, &row_sum]);
    let score = proof.final_values.get(3).copied().ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((CommittedClaim { point: t_star, value: Combination::point(score) }, opening_claims))
}
