//! Many committed evaluation claims on hiding-Hyrax-committed polynomials, answered in zero
//! knowledge: `zkmha_pcs::Hyrax::open_multi` with the values hidden.
//!
//! ```text
//! claims   f_{c(t)}(p_t) ≐ C_t, t = 1..k: committed values (combinations), public points
//! absorb   m and every polynomial commitment, k and every (c(t), p_t); draw γ_f per polynomial
//!          and β_j per claim position (claim j of f weighs γ_f·β_j)
//! group    polynomials with the same size and the same claim points form a group G:
//!          E_G = Σ_j β_j·eq(p_j, ·);  member G: Σ_x Σ_{f∈G} γ_f·E_G(x)·f(x) = Σ_{f∈G} γ_f·Σ_j β_j·C_{f,j}
//!          one zero-knowledge batched sum of products (E_G public, each f hidden) → r,
//!          C(f(r_G)) per polynomial (r_G = r[..n_G]); V checks E_G(r_G)
//! open     the polynomials against their hiding commitments at r_G, values committed
//!          (zkmha_pcs::Hyrax::open_batch_committed_log, logarithmic size): one batch when the
//!          layouts allow, else one per column count (opening_batches), single-row commitments
//!          joining the widest multi-row batch; a batch whose points do not share their column
//!          part is opened one polynomial at a time
//! ```
//!
//! Every term of the reduction has one hidden factor, so its final relation is linear (no
//! product). Soundness as the plain multi-opening: a false claim survives the weights with
//! probability ≤ 2/|F| and the sum-check with ≤ 2·n/|F|.

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::product::{
    BatchMember, FactorValue, ZkProductProof, ZkProductShape, prove_zk_batched_products,
    verify_zk_batched_products_deferred,
};
use crate::relation::{Combination, CommittedValue, LinearValue};
use crate::sumcheck::{ProverMasks, VerifierMasks};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum, Zero, fr_from_i64};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_pcs::{
    G1Affine, Hyrax, HyraxBlinds, HyraxCommitment, HyraxParams, PcsError, PolynomialTable,
    ZkInnerProductProof, group_by_claim_points,
};
use zkmha_sumcheck::{FinalEvaluations, ProductSumcheck, ProductTerm, SumOfProducts, SumcheckInstance};
use zkmha_transcript::Transcript;

const LABEL_POLYNOMIALS: &[u8] = b"zk/multi/polynomials";
const LABEL_CLAIMS: &[u8] = b"zk/multi/claims";
const LABEL_WEIGHTS: &[u8] = b"zk/multi/claim-weights";

/// A claim `f_polynomial(point) ≐ value`, the value committed (a combination for the verifier,
/// with its opening for the prover): the plain opening claim with another value type.
pub type ZkOpeningClaim<V> = zkmha_pcs::OpeningClaim<V>;

/// The proof of a batch of [`ZkOpeningClaim`]s.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkMultiOpeningProof {
    /// The reducing zero-knowledge sum-check.
    pub reduction: ZkProductProof,
    /// The openings against committed values (logarithmic-size inner-product arguments): one
    /// for all, or one per polynomial.
    pub openings: Vec<ZkInnerProductProof>,
}

/// How the openings are batched (both sides derive it from the commitments and points): all
/// together when they can share one combined row ([`Hyrax::can_batch`]); else one batch per
/// column count of the multi-row commitments, each single-row commitment no wider than the
/// widest of them joining that one, smallest column count first; a batch that still cannot
/// share a row is split into single openings.
///
/// # Errors
/// [`ZkError::MaskOpening`] for a commitment whose row count is not a power of two.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn opening_batches(layout: &[(&HyraxCommitment, &[Fr])]) -> Result<Vec<Vec<usize>>, ZkError> {
    if Hyrax::can_batch(layout) {
        return Ok(vec![(0..layout.len()).collect()]);
    }
    let columns = layout
        .iter()
        .map(|(c, _)| c.column_vars().map_err(|_| malformed("a commitment's layout")))
        .collect::<Result<Vec<usize>, _>>()?;
    let widest_multi_row =
        layout.iter().zip(&columns).filter(|((c, _), _)| c.rows.len() > 1).map(|(_, &n)| n).max();
    let mut by_columns: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, ((commitment, _), &c)) in layout.iter().zip(&columns).enumerate() {
        let key = match widest_multi_row {
            Some(w) if commitment.rows.len() == 1 && c <= w => w,
            _ => c,
        };
        by_columns.entry(key).or_default().push(i);
    }
    let mut batches = Vec::with_capacity(by_columns.len());
    for batch in by_columns.into_values() {
        let members: Vec<(&HyraxCommitment, &[Fr])> =
            batch.iter().filter_map(|&i| layout.get(i)).copied().collect();
        if Hyrax::can_batch(&members) {
            batches.push(batch);
        } else {
            batches.extend(batch.into_iter().map(|i| vec![i]));
        }
    }
    Ok(batches)
}

/// The mask shape of the reduction for polynomials of these sizes.
pub fn zk_multi_opening_schedule(num_vars: &[usize]) -> (usize, usize) {
    (num_vars.iter().copied().max().unwrap_or(0), 2)
}

fn malformed(what: &'static str) -> ZkError {
    ZkError::MaskOpening(PcsError::InvalidBatch(what))
}

fn absorb_statement<V>(
    commitments: &[&HyraxCommitment],
    claims: &[ZkOpeningClaim<V>],
    transcript: &mut Transcript,
) -> Result<(), ZkError> {
    transcript.append_u64(LABEL_POLYNOMIALS, commitments.len() as u64);
    let mut bytes = Vec::new();
    for commitment in commitments {
        commitment
            .serialize_compressed(&mut bytes)
            .map_err(|e| ZkError::MaskOpening(PcsError::Serialization(e.to_string())))?;
    }
    transcript.append_bytes(LABEL_POLYNOMIALS, &bytes);
    transcript.append_u64(LABEL_CLAIMS, claims.len() as u64);
    for claim in claims {
        let commitment = commitments.get(claim.polynomial).ok_or(malformed("claim on no polynomial"))?;
        if claim.point.len() != commitment.num_vars {
            return Err(ZkError::MaskOpening(PcsError::WrongPointLength {
                expected: commitment.num_vars,
                got: claim.point.len(),
            }));
        }
        transcript.append_u64(LABEL_CLAIMS, claim.polynomial as u64);
        transcript.append_fields(LABEL_CLAIMS, &claim.point);
    }
    if (0..commitments.len()).any(|f| claims.iter().all(|c| c.polynomial != f)) {
        return Err(malformed("a polynomial without claims"));
    }
    Ok(())
}

/// Polynomials with the same number of variables and the same claim points, in order.
fn groups<V>(num_vars: &[usize], claims: &[ZkOpeningClaim<V>]) -> Vec<Vec<usize>> {
    let claims: Vec<(usize, &[Fr])> = claims.iter().map(|c| (c.polynomial, c.point.as_slice())).collect();
    group_by_claim_points(num_vars, &claims)
}

fn draw_weights<V>(
    transcript: &mut Transcript,
    polynomials: usize,
    claims: &[ZkOpeningClaim<V>],
) -> (Vec<Fr>, Vec<Fr>) {
    let most =
        (0..polynomials).map(|f| claims.iter().filter(|c| c.polynomial == f).count()).max().unwrap_or(0);
    (
        transcript.challenge_fields(LABEL_WEIGHTS, polynomials),
        transcript.challenge_fields(LABEL_WEIGHTS, most),
    )
}

/// A group's shape `Σ_{f∈G} γ_f·E·f` over `[E, f_1, …]` (E public) and its claimed sum.
fn group_member<V: LinearValue>(
    params: &HyraxParams,
    group: &[usize],
    claims: &[ZkOpeningClaim<V>],
    gammas: &[Fr],
    betas: &[Fr],
) -> Result<(ZkProductShape, V), ZkError> {
    let terms = group
        .iter()
        .enumerate()
        .map(|(k, f)| ProductTerm {
            coefficient: gammas.get(*f).copied().unwrap_or_default(),
            factors: vec![0, k + 1],
        })
        .collect();
    let shape = SumOfProducts::new(group.len() + 1, terms)?;
    let mut public = vec![false; group.len() + 1];
    if let Some(e) = public.first_mut() {
        *e = true;
    }
    let mut sum = V::constant(params, Fr::zero());
    for &f in group {
        let gamma = gammas.get(f).copied().ok_or(malformed("polynomial index"))?;
        for (claim, beta) in claims.iter().filter(|c| c.polynomial == f).zip(betas) {
            sum = sum.plus_scaled(gamma * beta, &claim.value);
        }
    }
    Ok((ZkProductShape::new(shape, public)?, sum))
}

/// A group's reduction instance: the sum-check of `E·Σ_f γ_f·f` runs on one combined table
/// (as the plain multi-opening), and each `f(r)` is evaluated once at the end, so the rounds
/// cost the same as one product of two tables whatever the group's size.
struct GroupReduction<'a> {
    inner: ProductSumcheck,
    tables: Vec<PolynomialTable<'a>>,
    /// The challenges so far (round `i` binds the highest unbound variable).
    challenges: Vec<Fr>,
}

impl SumcheckInstance for GroupReduction<'_> {
    fn num_vars(&self) -> usize {
        self.inner.num_vars()
    }
    fn degree(&self) -> usize {
        self.inner.degree()
    }
    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]) {
        self.inner.round_evaluations(previous_claim, evaluations);
    }
    fn bind_in_place(&mut self, challenge: Fr) {
        self.challenges.push(challenge);
        self.inner.bind_in_place(challenge);
    }
}

impl FinalEvaluations for GroupReduction<'_> {
    fn final_evaluations(&self) -> Vec<Fr> {
        let inner = self.inner.final_evaluations();
        let point: Vec<Fr> = self.challenges.iter().rev().copied().collect();
        let mut values = vec![inner.first().copied().unwrap_or_default()];
        // One eq table for the group (its polynomials share the point), integer tables read
        // directly with delayed reduction.
        let eq = eq_table(&point);
        values.extend(self.tables.iter().map(|table| {
            match table {
                PolynomialTable::Integers { values, .. } => eq
                    .par_chunks(4096)
                    .zip(values.par_chunks(4096))
                    .map(|(weights, entries)| {
                        let mut acc = UnreducedSum::new();
                        for (w, v) in weights.iter().zip(entries) {
                            if *v != 0 {
                                acc.add_product(w, &fr_from_i64(*v));
                            }
                        }
                        acc
                    })
                    .reduce(UnreducedSum::new, UnreducedSum::merge)
                    .finish(),
                other => other.evaluate(&point).unwrap_or_default(),
            }
        }));
        values
    }
}

/// Proves the claims on the polynomials (each with its hiding commitment and blinds).
///
/// # Errors
/// [`ZkError::MaskOpening`] for claims that do not fit the polynomials or openings that fail,
/// and the masked sum-check's errors.
pub fn prove_multi_opening_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    polynomials: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds)],
    claims: &[ZkOpeningClaim<CommittedValue>],
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<ZkMultiOpeningProof, ZkError> {
    let commitments: Vec<&HyraxCommitment> = polynomials.iter().map(|(_, c, _)| *c).collect();
    absorb_statement(&commitments, claims, transcript)?;
    let (gammas, betas) = draw_weights(transcript, polynomials.len(), claims);
    let num_vars: Vec<usize> = polynomials.iter().map(|(t, _, _)| t.num_vars()).collect();
    let groups = groups(&num_vars, claims);
    let mut shapes = Vec::with_capacity(groups.len());
    let mut sums = Vec::with_capacity(groups.len());
    let mut instances = Vec::with_capacity(groups.len());
    for group in &groups {
        let (shape, sum) = group_member(params, group, claims, &gammas, &betas)?;
        let first = *group.first().ok_or(malformed("empty group"))?;
        let vars = num_vars.get(first).copied().ok_or(malformed("polynomial index"))?;
        let mut eq = vec![Fr::zero(); 1usize << vars];
        for (claim, beta) in claims.iter().filter(|c| c.polynomial == first).zip(&betas) {
            for (e, x) in eq.iter_mut().zip(eq_table(&claim.point)) {
                *e += *beta * x;
            }
        }
        let mle = |values| DenseMultilinearExtension::new(vars, values).map_err(|_| malformed("table size"));
        let mut combined = vec![Fr::zero(); 1usize << vars];
        let mut tables = Vec::with_capacity(group.len());
        for &f in group {
            let (table, _, _) = polynomials.get(f).ok_or(malformed("polynomial index"))?;
            table.add_scaled_into(&mut combined, gammas.get(f).copied().unwrap_or_default());
            tables.push(*table);
        }
        let product = SumOfProducts::product(2)?;
        instances.push(GroupReduction {
            inner: ProductSumcheck::new(product, vec![mle(eq)?, mle(combined)?])?,
            tables,
            challenges: Vec::new(),
        });
        shapes.push(shape);
        sums.push(sum);
    }
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> =
        shapes.iter().zip(instances.iter_mut()).map(|(s, i)| (s, i as &mut dyn FinalEvaluations)).collect();
    let (reduction, outs, openings) =
        prove_zk_batched_products(params, members, &sums, masks, transcript, rng)?;
    drop(instances);
    let mut items = Vec::with_capacity(polynomials.len());
    let mut slots: Vec<Option<(Vec<Fr>, G1Affine, crate::ValueOpening)>> = vec![None; polynomials.len()];
    for ((group, out), openings) in groups.iter().zip(&outs).zip(&openings) {
        for (k, &f) in group.iter().enumerate() {
            match (out.values.get(k + 1), openings.get(k + 1)) {
                (Some(FactorValue::Hidden(c)), Some(Some(o))) => {
                    if let Some(slot) = slots.get_mut(f) {
                        *slot = Some((out.point.clone(), *c, *o));
                    }
                }
                _ => return Err(malformed("a polynomial's value in the clear")),
            }
        }
    }
    for ((table, commitment, blinds), slot) in polynomials.iter().zip(&slots) {
        let (point, c, o) = slot.as_ref().ok_or(malformed("a polynomial without a value"))?;
        items.push((*table, *commitment, *blinds, point.as_slice(), (*c, o.value, o.blinding)));
    }
    let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(_, c, _, p, _)| (*c, *p)).collect();
    let batches = opening_batches(&layout)?;
    let mut proofs = Vec::with_capacity(batches.len());
    for batch in batches {
        let chunk: Vec<_> = batch.iter().filter_map(|&i| items.get(i)).copied().collect();
        proofs.push(Hyrax::open_batch_committed_log(params, &chunk, transcript, rng)?);
    }
    Ok(ZkMultiOpeningProof { reduction, openings: proofs })
}

/// Verifies [`prove_multi_opening_zk`] with its group equations left in `checks`.
///
/// # Errors
/// [`ZkError::MaskOpening`] for claims that do not fit, wrong counts or a wrong public eq
/// value; the masked sum-check's errors; the equations fail
/// ([`ZkError::CommittedOpening`], [`ZkError::RelationMismatch`]) for a false claim.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_multi_opening_zk_deferred(
    params: &HyraxParams,
    commitments: &[&HyraxCommitment],
    claims: &[ZkOpeningClaim<Combination>],
    proof: &ZkMultiOpeningProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<(), ZkError> {
    absorb_statement(commitments, claims, transcript)?;
    let (gammas, betas) = draw_weights(transcript, commitments.len(), claims);
    let num_vars: Vec<usize> = commitments.iter().map(|c| c.num_vars).collect();
    let groups = groups(&num_vars, claims);
    let mut shapes = Vec::with_capacity(groups.len());
    let mut sums = Vec::with_capacity(groups.len());
    for group in &groups {
        let (shape, sum) = group_member(params, group, claims, &gammas, &betas)?;
        shapes.push(shape);
        sums.push(sum);
    }
    let mut members: Vec<BatchMember<'_>> = Vec::with_capacity(groups.len());
    for (shape, group) in shapes.iter().zip(&groups) {
        let vars = group.first().and_then(|f| num_vars.get(*f)).copied().ok_or(malformed("empty group"))?;
        members.push((shape, vars));
    }
    let outs = verify_zk_batched_products_deferred(
        params,
        &members,
        &sums,
        &proof.reduction,
        masks,
        transcript,
        checks,
    )?;
    let mut slots: Vec<Option<(Vec<Fr>, G1Affine)>> = vec![None; commitments.len()];
    for (group, out) in groups.iter().zip(&outs) {
        let first = *group.first().ok_or(malformed("empty group"))?;
        let mut eq = Fr::zero();
        for (claim, beta) in claims.iter().filter(|c| c.polynomial == first).zip(&betas) {
            eq += *beta * eq_evaluation(&claim.point, &out.point).map_err(|_| malformed("claim point"))?;
        }
        match out.values.first() {
            Some(FactorValue::Public(v)) if *v == eq => {}
            _ => return Err(malformed("the reduction's eq value")),
        }
        for (k, &f) in group.iter().enumerate() {
            match out.values.get(k + 1) {
                Some(FactorValue::Hidden(c)) => {
                    if let Some(slot) = slots.get_mut(f) {
                        *slot = Some((out.point.clone(), *c));
                    }
                }
                _ => return Err(malformed("a polynomial's value in the clear")),
            }
        }
    }
    let mut items = Vec::with_capacity(commitments.len());
    for (commitment, slot) in commitments.iter().zip(&slots) {
        let (point, c) = slot.as_ref().ok_or(malformed("a polynomial without a value"))?;
        items.push((*commitment, point.as_slice(), *c));
    }
    let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(c, p, _)| (*c, *p)).collect();
    let batches = opening_batches(&layout)?;
    if batches.len() != proof.openings.len() {
        return Err(malformed("one opening per batch"));
    }
    for (batch, opening) in batches.iter().zip(&proof.openings) {
        let chunk: Vec<_> = batch.iter().filter_map(|&i| items.get(i)).copied().collect();
        if chunk.len() != batch.len() {
            return Err(malformed("a batch member"));
        }
        let equation = Hyrax::batch_committed_log_equation(params, &chunk, opening, transcript)?;
        checks.push(equation, ZkError::CommittedOpening);
    }
    Ok(())
}
