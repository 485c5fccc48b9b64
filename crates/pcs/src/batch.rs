//! Many evaluation claims on Hyrax-committed polynomials, at arbitrary points, answered by
//! one sum-check and as few openings as the column widths allow.
//!
//! ```text
//! claims   f_{c(t)}(p_t) = y_t,  t = 1..k,  on committed f_1..f_m (any sizes, any points)
//! absorb   m and every commitment, k and every (c(t), p_t, y_t);  draw β_1..β_k
//! reduce   E_f = Σ_{t: c(t) = f} β_t·eq(p_t, ·),   Σ_x E_f(x)·f(x) = Σ_{t: c(t) = f} β_t·y_t
//!          one batched degree-2 sum-check over all f → point r;  f is bound at r_f = r[..n_f]
//! send     v_f = f(r_f);  the verifier evaluates E_f(r_f) itself and checks Σ_f α_f·E_f(r_f)·v_f = c
//! open     polynomials with the same column count ⌈n_f/2⌉ share the column point r[..⌈n_f/2⌉]:
//!          one `Hyrax::open_batch` per column count
//! ```
//!
//! Soundness: a false `y_t` survives the β-combination with probability ≤ 1/|F| and the
//! sum-check with ≤ 2·n/|F|; then each `v_f` is bound to its commitment by the opening.

use crate::hyrax::split_vars;
use crate::{Hyrax, HyraxCommitment, HyraxParams, HyraxProof, PcsError};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
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

/// The claim `f_polynomial(point) = value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpeningClaim {
    /// Index of the polynomial in the batch.
    pub polynomial: usize,
    /// The point (`num_vars` coordinates of that polynomial, variable order).
    pub point: Vec<Fr>,
    /// The claimed value.
    pub value: Fr,
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

/// Indices of the polynomials grouped by column count, smallest count first.
fn groups_by_column_count(num_vars: &[usize]) -> Vec<Vec<usize>> {
    let mut counts: Vec<usize> = num_vars.iter().map(|&n| split_vars(n).1).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .map(|count| (0..num_vars.len()).filter(|&f| split_vars(num_vars[f]).1 == count).collect())
        .collect()
}

impl Hyrax {
    /// Proves every claim in `claims` on `polynomials` (each with its commitment): one
    /// sum-check, then one opening per distinct column count.
    ///
    /// # Errors
    /// [`PcsError::InvalidBatch`] (a claim on a missing polynomial, a polynomial without
    /// claims), [`PcsError::WrongPointLength`], or [`PcsError::Sumcheck`].
    pub fn open_multi(
        polynomials: &[(&DenseMultilinearExtension, &HyraxCommitment)],
        claims: &[OpeningClaim],
        transcript: &mut Transcript,
    ) -> Result<MultiOpeningProof, PcsError> {
        let commitments: Vec<&HyraxCommitment> = polynomials.iter().map(|(_, c)| *c).collect();
        absorb_statement(&commitments, claims, transcript)?;
        let weights = transcript.challenge_fields(LABEL_CLAIM_WEIGHTS, claims.len());

        let shape = SumOfProducts::product(2)?;
        let mut instances = Vec::with_capacity(polynomials.len());
        let mut sums = Vec::with_capacity(polynomials.len());
        for (f, (mle, _)) in polynomials.iter().enumerate() {
            let mut combined = vec![Fr::from(0u64); 1usize << mle.num_vars()];
            let mut sum = Fr::from(0u64);
            for (claim, weight) in claims.iter().zip(&weights).filter(|(c, _)| c.polynomial == f) {
                for (e, x) in combined.iter_mut().zip(eq_table(&claim.point)) {
                    *e += *weight * x;
                }
                sum += *weight * claim.value;
            }
            let eq = DenseMultilinearExtension::new(mle.num_vars(), combined)?;
            instances.push(ProductSumcheck::new(shape.clone(), vec![eq, (*mle).clone()])?);
            sums.push(sum);
        }
        let dyn_instances: Vec<&mut dyn SumcheckInstance> =
            instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
        let (sumcheck, reduced) = prove_batched(dyn_instances, &sums, transcript)?;

        let mut evaluations = Vec::with_capacity(polynomials.len());
        for (f, (mle, _)) in polynomials.iter().enumerate() {
            let point = reduced.instance_point(f).ok_or(PcsError::InvalidBatch("reduced point"))?;
            evaluations.push(mle.evaluate(point)?);
        }
        let num_vars: Vec<usize> = polynomials.iter().map(|(m, _)| m.num_vars()).collect();
        let mut openings = Vec::new();
        for group in groups_by_column_count(&num_vars) {
            let mut items = Vec::with_capacity(group.len());
            for &f in &group {
                let point = reduced.instance_point(f).ok_or(PcsError::InvalidBatch("reduced point"))?;
                items.push((polynomials[f].0, polynomials[f].1, point));
            }
            openings.push(Self::open_batch(&items, transcript)?.0);
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
        let weights = transcript.challenge_fields(LABEL_CLAIM_WEIGHTS, claims.len());
        if proof.evaluations.len() != commitments.len() {
            return Err(PcsError::MalformedProof("one evaluation per polynomial"));
        }
        let sumcheck_claims: Vec<SumcheckClaim> = (0..commitments.len())
            .zip(commitments)
            .map(|(f, commitment)| {
                let sum = claims
                    .iter()
                    .zip(&weights)
                    .filter(|(c, _)| c.polynomial == f)
                    .map(|(c, w)| *w * c.value)
                    .sum();
                SumcheckClaim::new(commitment.num_vars, 2, sum)
            })
            .collect();
        let reduced = verify_batched(&sumcheck_claims, &proof.sumcheck, transcript)?;
        let mut products = Vec::with_capacity(commitments.len());
        for (f, evaluation) in proof.evaluations.iter().enumerate() {
            let point = reduced.instance_point(f).ok_or(PcsError::InvalidBatch("reduced point"))?;
            let mut eq = Fr::from(0u64);
            for (claim, weight) in claims.iter().zip(&weights).filter(|(c, _)| c.polynomial == f) {
                eq += *weight * eq_evaluation(&claim.point, point)?;
            }
            products.push(eq * evaluation);
        }
        reduced.check(&products)?;

        let num_vars: Vec<usize> = commitments.iter().map(|c| c.num_vars).collect();
        let groups = groups_by_column_count(&num_vars);
        if groups.len() != proof.openings.len() {
            return Err(PcsError::MalformedProof("one opening per column count"));
        }
        for (group, opening) in groups.iter().zip(&proof.openings) {
            let mut items = Vec::with_capacity(group.len());
            for &f in group {
                let point = reduced.instance_point(f).ok_or(PcsError::InvalidBatch("reduced point"))?;
                let commitment = commitments.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                let value = proof.evaluations.get(f).ok_or(PcsError::InvalidBatch("polynomial index"))?;
                items.push((*commitment, point, *value));
            }
            Self::verify_batch(params, &items, opening, transcript)?;
        }
        Ok(())
    }
}

/// Splits claims into groups whose points share their column part (same column count and
/// same low coordinates), in order of first appearance: each group is one Hyrax opening.
pub fn groups_sharing_columns(points: &[(usize, &[Fr])]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, point) in points.iter().enumerate() {
        let joins = groups.iter_mut().find(|group| {
            group
                .first()
                .and_then(|&g| points.get(g))
                .is_some_and(|first| Hyrax::can_batch(&[*first, *point]))
        });
        match joins {
            Some(group) => group.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

impl Hyrax {
    /// Opens claims at points that share column parts in as few openings as that allows (one
    /// per group of [`groups_sharing_columns`]), without a reducing sum-check.
    ///
    /// # Errors
    /// As [`Hyrax::open_batch`].
    pub fn open_grouped(
        items: &[(&DenseMultilinearExtension, &HyraxCommitment, &[Fr])],
        transcript: &mut Transcript,
    ) -> Result<Vec<HyraxProof>, PcsError> {
        let points: Vec<(usize, &[Fr])> = items.iter().map(|(f, _, p)| (f.num_vars(), *p)).collect();
        let mut proofs = Vec::new();
        for group in groups_sharing_columns(&points) {
            let batch: Vec<_> = group.iter().map(|&i| items[i]).collect();
            proofs.push(Self::open_batch(&batch, transcript)?.0);
        }
        Ok(proofs)
    }

    /// Verifies openings made by [`Hyrax::open_grouped`].
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for a wrong number of openings, else as
    /// [`Hyrax::verify_batch`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_grouped(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], Fr)],
        proofs: &[HyraxProof],
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let points: Vec<(usize, &[Fr])> = items.iter().map(|(c, p, _)| (c.num_vars, *p)).collect();
        let groups = groups_sharing_columns(&points);
        if groups.len() != proofs.len() {
            return Err(PcsError::MalformedProof("one opening per group of shared column points"));
        }
        for (group, proof) in groups.iter().zip(proofs) {
            let batch: Vec<_> = group.iter().filter_map(|&i| items.get(i).copied()).collect();
            Self::verify_batch(params, &batch, proof, transcript)?;
        }
        Ok(())
    }
}
