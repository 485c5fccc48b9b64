//! Many evaluation claims on Hyrax-committed polynomials, at arbitrary points, answered by
//! one sum-check and as few openings as the column widths allow.
//!
//! ```text
//! claims   f_{c(t)}(p_t) = y_t,  t = 1..k,  on committed f_1..f_m (any sizes, any points)
//! absorb   m and every commitment, k and every (c(t), p_t, y_t);  draw γ_f per polynomial and
//!          β_j per claim position: claim j of f weighs γ_f·β_j
//! group    polynomials with the same size and the same claim points (in order) form a group G:
//!          E_G = Σ_j β_j·eq(p_j, ·),   Σ_x E_G(x)·Σ_{f∈G} γ_f·f(x) = Σ_{f∈G} γ_f·Σ_j β_j·y_{f,j}
//!          one batched degree-2 sum-check over all groups → point r;  G is bound at r_G = r[..n_G]
//! send     v_f = f(r_G);  the verifier evaluates E_G(r_G) and checks Σ_G α_G·E_G(r_G)·Σ_{f∈G} γ_f·v_f = c
//! open     polynomials with the same column count c share the column point r[..c] (and a
//!          single-row polynomial, n_f < c, joins them: its point r[..n_f] is a prefix):
//!          one `Hyrax::open_batch` per group — one in all when every commitment has one layout
//! ```
//!
//! Soundness: a false `y_t` survives the (γ, β)-combination with probability ≤ 2/|F| and the
//! sum-check with ≤ 2·n/|F|; then each `v_f` is bound to its commitment by the opening.

use crate::hyrax::{GroupEquation, PolynomialTable};
use crate::{Hyrax, HyraxCommitment, HyraxParams, HyraxProof, PcsError};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{
    ProductSumcheck, SumOfProducts, SumcheckClaim, SumcheckInstance, SumcheckProof, prove_batched,
    verify_batched,
};
use zkmha_transcript::Transcript;

const LABEL_POLYNOMIALS: &[u8] = b"pcs/multi/polynomials";
const LABEL_COMMITMENT: &[u8] = b"pcs/multi/commitment";
const LABEL_CLAIMS: &[u8] = b"pcs/multi/claims";
const LABEL_CLAIM: &[u8] = b"pcs/multi/claim";
const LABEL_POINT: &[u8] = b"pcs/multi/point";
const LABEL_VALUE: &[u8] = b"pcs/multi/value";
const LABEL_CLAIM_WEIGHTS: &[u8] = b"pcs/multi/claim-weights";
const LABEL_MSM_WEIGHTS: &[u8] = b"pcs/multi/msm-weights";

/// The claim `f_polynomial(point) = value`. The value is a field element here; the
/// zero-knowledge multi-opening (`zkmha_zk::ZkOpeningClaim`) uses the same struct with a
/// committed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpeningClaim<V = Fr> {
    /// Index of the polynomial in the batch.
    pub polynomial: usize,
    /// The point (`num_vars` coordinates of that polynomial, variable order).
    pub point: Vec<Fr>,
    /// The claimed value.
    pub value: V,
}

/// The proof of a batch of [`OpeningClaim`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MultiOpeningProof {
    /// The reducing sum-check (one instance per polynomial).
    pub sumcheck: SumcheckProof,
    /// `v_f = f(r_f)`, one per polynomial.
    pub evaluations: Vec<Fr>,
    /// One batched opening per column count, smallest count first.
    pub openings: Vec<HyraxProof>,
}

impl MultiOpeningProof {
    /// Size in bytes (compressed encoding).
    pub fn size_in_bytes(&self) -> usize {
        self.compressed_size()
    }
}

fn absorb_statement(
    commitments: &[&HyraxCommitment],
    claims: &[OpeningClaim],
    transcript: &mut Transcript,
) -> Result<(), PcsError> {
    transcript.append_u64(LABEL_POLYNOMIALS, commitments.len() as u64);
    let mut bytes = Vec::new();
    for commitment in commitments {
        bytes.clear();
        commitment.serialize_compressed(&mut bytes).map_err(|e| PcsError::Serialization(e.to_string()))?;
        transcript.append_bytes(LABEL_COMMITMENT, &bytes);
    }
    transcript.append_u64(LABEL_CLAIMS, claims.len() as u64);
    for claim in claims {
        let commitment =
            commitments.get(claim.polynomial).ok_or(PcsError::InvalidBatch("claim on no polynomial"))?;
        if claim.point.len() != commitment.num_vars {
            return Err(PcsError::WrongPointLength { expected: commitment.num_vars, got: claim.point.len() });
        }
        transcript.append_u64(LABEL_CLAIM, claim.polynomial as u64);
        transcript.append_fields(LABEL_POINT, &claim.point);
        transcript.append_field(LABEL_VALUE, &claim.value);
    }
    if (0..commitments.len()).any(|f| claims.iter().all(|c| c.polynomial != f)) {
        return Err(PcsError::InvalidBatch("a polynomial without claims"));
    }
    Ok(())
}

/// Indices of the polynomials grouped into openings: polynomials with the same column count
/// share one combined row, and a single-row polynomial joins the narrowest multi-row group at
/// least as wide (its point, a prefix of the shared reduced point, is then a prefix of the
/// group's column point); single rows wider than every multi-row group form one group. With
/// one layout for every commitment (`c` columns, or one row when `n < c`) there is one group.
fn opening_groups(commitments: &[&HyraxCommitment]) -> Result<Vec<Vec<usize>>, PcsError> {
    let layouts: Vec<(usize, bool)> = commitments
        .iter()
        .map(|c| Ok((c.column_vars()?, c.rows.len() == 1)))
        .collect::<Result<_, PcsError>>()?;
    let mut widths: Vec<usize> = layouts.iter().filter(|(_, single)| !single).map(|(c, _)| *c).collect();
    widths.sort_unstable();
    widths.dedup();
    let widest_single = layouts.iter().filter(|(_, single)| *single).map(|(c, _)| *c).max();
    let key = |&(c, single): &(usize, bool)| -> usize {
        if single {
            widths.iter().copied().find(|&w| w >= c).unwrap_or(widest_single.unwrap_or(c))
        } else {
            c
        }
    };
    let mut keys: Vec<usize> = layouts.iter().map(key).collect();
    keys.sort_unstable();
    keys.dedup();
    Ok(keys.into_iter().map(|k| (0..layouts.len()).filter(|&f| key(&layouts[f]) == k).collect()).collect())
}

/// The polynomials grouped by their claims: same number of variables and the same claim
/// points in the same order. Each group is one sum-check instance `E·Σ_f γ_f·f`.
fn groups_by_points(num_vars: &[usize], claims: &[OpeningClaim]) -> Vec<Vec<usize>> {
    let claims: Vec<(usize, &[Fr])> = claims.iter().map(|c| (c.polynomial, c.point.as_slice())).collect();
    group_by_claim_points(num_vars, &claims)
}

/// Polynomials (given by their numbers of variables) grouped by their claims `(polynomial,
/// point)`: same number of variables and the same claim points in the same order — the groups
/// of a multi-point opening's reduction (also used by the zero-knowledge one).
pub fn group_by_claim_points(num_vars: &[usize], claims: &[(usize, &[Fr])]) -> Vec<Vec<usize>> {
    let points_of = |f: usize| -> Vec<&[Fr]> {
        claims.iter().filter(|(p, _)| *p == f).map(|(_, point)| *point).collect()
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for f in 0..num_vars.len() {
        let joins = groups.iter_mut().find(|g| {
            g.first().is_some_and(|&first| {
                num_vars.get(first) == num_vars.get(f) && points_of(first) == points_of(f)
            })
        });
        match joins {
            Some(group) => group.push(f),
            None => groups.push(vec![f]),
        }
    }
    groups
}

/// Draws `γ_f` (one per polynomial) and `β_j` (one per claim position within a polynomial):
/// claim `j` of polynomial `f` has weight `γ_f·β_j`, so polynomials sharing their points share
/// `E = Σ_j β_j·eq(p_j, ·)`. A false claim survives with probability ≤ 2/|F|.
fn draw_weights(
    transcript: &mut Transcript,
    polynomials: usize,
    claims: &[OpeningClaim],
) -> (Vec<Fr>, Vec<Fr>) {
    let most =
        (0..polynomials).map(|f| claims.iter().filter(|c| c.polynomial == f).count()).max().unwrap_or(0);
    (
        transcript.challenge_fields(LABEL_CLAIM_WEIGHTS, polynomials),
        transcript.challenge_fields(LABEL_CLAIM_WEIGHTS, most),
    )
}

/// `(points of f, Σ_j β_j·y_{f,j})` for every polynomial.
fn claims_of(f: usize, claims: &[OpeningClaim], betas: &[Fr]) -> (Vec<Vec<Fr>>, Fr) {
    let mine: Vec<&OpeningClaim> = claims.iter().filter(|c| c.polynomial == f).collect();
    let sum = mine.iter().zip(betas).map(|(c, b)| *b * c.value).sum();
    (mine.iter().map(|c| c.point.clone()).collect(), sum)
}

impl Hyrax {
    /// Proves every claim in `claims` on `polynomials` (each with its commitment): one
    /// sum-check (one instance per group of polynomials sharing their claim points), then one
    /// opening per distinct column count.
    ///
    /// # Errors
    /// [`PcsError::InvalidBatch`] (a claim on a missing polynomial, a polynomial without
    /// claims), [`PcsError::WrongPointLength`], or [`PcsError::Sumcheck`].
    pub fn open_multi(
        polynomials: &[(PolynomialTable<'_>, &HyraxCommitment)],
        claims: &[OpeningClaim],
        transcript: &mut Transcript,
    ) -> Result<MultiOpeningProof, PcsError> {
        let commitments: Vec<&HyraxCommitment> = polynomials.iter().map(|(_, c)| *c).collect();
        absorb_statement(&commitments, claims, transcript)?;
        let (gammas, betas) = draw_weights(transcript, polynomials.len(), claims);
        let num_vars: Vec<usize> = polynomials.iter().map(|(m, _)| m.num_vars()).collect();
        let groups = groups_by_points(&num_vars, claims);

        let shape = SumOfProducts::product(2)?;
        let mut instances = Vec::with_capacity(groups.len());
        let mut sums = Vec::with_capacity(groups.len());
        for group in &groups {
            let first = *group.first().ok_or(PcsError::InvalidBatch("empty group"))?;
            let vars = num_vars[first];
            let (points, _) = claims_of(first, claims, &betas);
            let mut eq = vec![Fr::from(0u64); 1usize << vars];
            for (point, beta) in points.iter().zip(&betas) {
                let table = eq_table(point);
                eq.par_iter_mut().zip(table.par_iter()).for_each(|(e, x)| *e += *beta * x);
            }
            let mut combined = vec![Fr::from(0u64); 1usize << vars];
            let mut sum = Fr::from(0u64);
            for &f in group {
                polynomials[f].0.add_scaled_into(&mut combined, gammas[f]);
                sum += gammas[f] * claims_of(f, claims, &betas).1;
            }
            instances.push(ProductSumcheck::new(
                shape.clone(),
                vec![
                    DenseMultilinearExtension::new(vars, eq)?,
                    DenseMultilinearExtension::new(vars, combined)?,
                ],
            )?);
            sums.push(sum);
        }
        let dyn_instances: Vec<&mut dyn SumcheckInstance> =
            instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
        let (sumcheck, reduced) = prove_batched(dyn_instances, &sums, transcript)?;

        let mut points = vec![Vec::new(); polynomials.len()];
        for (g, group) in groups.iter().enumerate() {
            let point = reduced.instance_point(g).ok_or(PcsError::InvalidBatch("reduced point"))?;
            for &f in group {
                points[f] = point.to_vec();
            }
        }
        let evaluations = polynomials
            .iter()
            .zip(&points)
            .map(|((table, _), point)| table.evaluate(point))
            .collect::<Result<Vec<Fr>, _>>()?;
        let mut openings = Vec::new();
        for group in opening_groups(&commitments)? {
            let items: Vec<_> =
                group.iter().map(|&f| (polynomials[f].0, polynomials[f].1, points[f].as_slice())).collect();
            openings.push(Self::open_batch_tables(&items, transcript)?.0);
        }
        Ok(MultiOpeningProof { sumcheck, evaluations, openings })
    }

    /// Verifies a [`MultiOpeningProof`] for `claims` on the committed polynomials.
    ///
    /// # Errors
    /// [`PcsError::InvalidBatch`], [`PcsError::WrongPointLength`], [`PcsError::MalformedProof`]
    /// (wrong counts), [`PcsError::Sumcheck`] (the reduction, including a wrong claimed value),
    /// or the errors of [`Hyrax::verify_batch`] (an evaluation that is not the committed one).
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_multi(
        params: &HyraxParams,
        commitments: &[&HyraxCommitment],
        claims: &[OpeningClaim],
        proof: &MultiOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        absorb_statement(commitments, claims, transcript)?;
        let (gammas, betas) = draw_weights(transcript, commitments.len(), claims);
        if proof.evaluations.len() != commitments.len() {
            return Err(PcsError::MalformedProof("one evaluation per polynomial"));
        }
        let num_vars: Vec<usize> = commitments.iter().map(|c| c.num_vars).collect();
        let groups = groups_by_points(&num_vars, claims);
        let mut sumcheck_claims = Vec::with_capacity(groups.len());
        for group in &groups {
            let first = *group.first().ok_or(PcsError::InvalidBatch("empty group"))?;
            let mut sum = Fr::from(0u64);
            for &f in group {
                let gamma = gammas.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                sum += *gamma * claims_of(f, claims, &betas).1;
            }
            let vars = num_vars.get(first).copied().ok_or(PcsError::InvalidBatch("polynomial index"))?;
            sumcheck_claims.push(SumcheckClaim::new(vars, 2, sum));
        }
        let reduced = verify_batched(&sumcheck_claims, &proof.sumcheck, transcript)?;
        let mut products = Vec::with_capacity(groups.len());
        let mut points: Vec<&[Fr]> = vec![&[]; commitments.len()];
        for (g, group) in groups.iter().enumerate() {
            let point = reduced.instance_point(g).ok_or(PcsError::InvalidBatch("reduced point"))?;
            let first = *group.first().ok_or(PcsError::InvalidBatch("empty group"))?;
            let mut eq = Fr::from(0u64);
            for (claim_point, beta) in claims_of(first, claims, &betas).0.iter().zip(&betas) {
                eq += *beta * eq_evaluation(claim_point, point)?;
            }
            let mut combined = Fr::from(0u64);
            for &f in group {
                let gamma = gammas.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                let value = proof.evaluations.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                combined += *gamma * value;
                if let Some(slot) = points.get_mut(f) {
                    *slot = point;
                }
            }
            products.push(eq * combined);
        }
        reduced.check(&products)?;

        let column_groups = opening_groups(commitments)?;
        if column_groups.len() != proof.openings.len() {
            return Err(PcsError::MalformedProof("one opening per column count"));
        }
        let mut checks = Vec::with_capacity(column_groups.len());
        for (group, opening) in column_groups.iter().zip(&proof.openings) {
            let mut items = Vec::with_capacity(group.len());
            for &f in group {
                let point = points.get(f).copied().ok_or(PcsError::InvalidBatch("polynomial index"))?;
                let commitment = commitments.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                let value = proof.evaluations.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                items.push((*commitment, point, *value));
            }
            checks.push(Self::batch_check(params, &items, opening, transcript)?);
        }
        // The openings' group equations in one MSM, weighted by challenges drawn after every
        // equation is absorbed (from a copy: the transcript goes on exactly as the prover's).
        GroupEquation::all_hold_for_transcript(transcript, LABEL_MSM_WEIGHTS, &checks)
    }
}
