//! Batching several sum-check claims, with the same or different numbers of variables,
//! into one sum-check.
//!
//! ```text
//! claims:   Σ_{x ∈ {0,1}^{n_i}} g_i(x) = S_i,   i = 1..k,   n = max n_i,   d = max d_i
//! absorb:   k, then every claim (n_i, d_i, S_i);  draw α_1..α_k
//! combined: Σ_{x ∈ {0,1}ⁿ} Σ_i α_i g_i(x_0..x_{n_i−1}) = Σ_i α_i 2^{n−n_i} S_i
//! out:      the point r ∈ Fⁿ and the value c; g_i is bound at r[..n_i], its lowest variables,
//!           and the caller checks Σ_i α_i g_i(r[..n_i]) = c
//! ```
//!
//! A claim with fewer variables does not depend on the top `n − n_i` variables, so during
//! the first `n − n_i` rounds its round polynomial is the constant `c_i / 2` (its running
//! claim halves each round until it reaches `S_i`). Soundness: a false claim survives the
//! random combination with probability ≤ 1/|F|, then the sum-check's n·d/|F|.

use crate::protocol::{SumcheckInstance, SumcheckProof, prove, verify};
use crate::univariate::{compress, decompress, evaluate_from_evaluations, extend_evaluations};
use crate::{EvalClaim, SumcheckClaim, SumcheckError};
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_transcript::Transcript;

const LABEL_COUNT: &[u8] = b"sumcheck/batch/count";
const LABEL_COEFFICIENTS: &[u8] = b"sumcheck/batch/coefficients";

/// The outcome of a batched sum-check: the combined claim at the shared point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchedEvalClaim {
    /// The shared random point (`n = max n_i` coordinates, variable order).
    pub point: Vec<Fr>,
    /// The value `Σ_i α_i g_i(point[..n_i])` must have.
    pub value: Fr,
    /// The batching coefficients `α_i`.
    pub coefficients: Vec<Fr>,
    /// Each claim's number of variables.
    pub num_vars: Vec<usize>,
}

impl BatchedEvalClaim {
    /// The point at which claim `i`'s polynomial is evaluated: the lowest `n_i` coordinates.
    pub fn instance_point(&self, i: usize) -> Option<&[Fr]> {
        self.num_vars.get(i).and_then(|&n| self.point.get(..n))
    }

    /// Checks `Σ_i α_i values[i] = value`, where `values[i] = g_i(instance_point(i))`.
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] or [`SumcheckError::FinalEvaluationMismatch`].
    pub fn check(&self, values: &[Fr]) -> Result<(), SumcheckError> {
        if values.len() != self.coefficients.len() {
            return Err(SumcheckError::WrongLength {
                what: "instance values",
                expected: self.coefficients.len(),
                got: values.len(),
            });
        }
        let combined: Fr = self.coefficients.iter().zip(values).map(|(a, v)| *a * v).sum();
        EvalClaim { point: Vec::new(), value: self.value }.check(combined)
    }
}

fn absorb_batch(claims: &[SumcheckClaim], transcript: &mut Transcript) -> Result<Vec<Fr>, SumcheckError> {
    if claims.is_empty() {
        return Err(SumcheckError::InvalidClaim("a batch needs at least one claim"));
    }
    for claim in claims {
        claim.validate()?;
    }
    transcript.append_u64(LABEL_COUNT, claims.len() as u64);
    for claim in claims {
        claim.append_to_transcript(transcript);
    }
    Ok(transcript.challenge_fields(LABEL_COEFFICIENTS, claims.len()))
}

fn combined_claim(claims: &[SumcheckClaim], coefficients: &[Fr]) -> SumcheckClaim {
    let num_vars = claims.iter().map(|c| c.num_vars).max().unwrap_or(0);
    let degree = claims.iter().map(|c| c.degree).max().unwrap_or(1);
    let claimed_sum = claims
        .iter()
        .zip(coefficients)
        .map(|(c, a)| *a * c.claimed_sum * Fr::from(2u64).pow([(num_vars - c.num_vars) as u64]))
        .sum();
    SumcheckClaim { num_vars, degree, claimed_sum }
}

/// One claim of a batch, on the prover's side.
struct Member<'a> {
    instance: &'a mut dyn SumcheckInstance,
    coefficient: Fr,
    /// The running claim `s_i(r)` of the previous round (initially `2^{n−n_i} S_i`).
    running: Fr,
    /// The latest round polynomial's evaluations at `0..=d`.
    last_round: Vec<Fr>,
    /// `n − n_i`: the rounds before this instance starts binding.
    offset: usize,
}

/// The batch seen as one instance of `max n_i` variables and degree `max d_i`: the polynomial
/// `Σ_i α_i·g_i(x_0..x_{n_i−1})` over `n = max n_i` variables.
pub struct Batch<'a> {
    members: Vec<Member<'a>>,
    num_vars: usize,
    degree: usize,
    round: usize,
}

impl<'a> Batch<'a> {
    /// The combination `Σ_i coefficients[i]·g_i` of `instances` whose sums are `claimed_sums`
    /// (each member's kernel needs its own running claim), for callers that absorb the
    /// claims and draw the coefficients themselves (the zero-knowledge batch, whose sums are
    /// committed).
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] when the three lists differ in length,
    /// [`SumcheckError::InvalidClaim`] for an empty batch or an invalid member.
    pub fn new(
        instances: Vec<&'a mut dyn SumcheckInstance>,
        claimed_sums: &[Fr],
        coefficients: &[Fr],
    ) -> Result<Self, SumcheckError> {
        if instances.len() != claimed_sums.len() || instances.len() != coefficients.len() {
            return Err(SumcheckError::WrongLength {
                what: "claimed sums and coefficients",
                expected: instances.len(),
                got: claimed_sums.len().min(coefficients.len()),
            });
        }
        if instances.is_empty() {
            return Err(SumcheckError::InvalidClaim("a batch needs at least one claim"));
        }
        let claims: Vec<SumcheckClaim> = instances
            .iter()
            .zip(claimed_sums)
            .map(|(inst, sum)| SumcheckClaim::new(inst.num_vars(), inst.degree(), *sum))
            .collect();
        for claim in &claims {
            claim.validate()?;
        }
        let combined = combined_claim(&claims, coefficients);
        let members = instances
            .into_iter()
            .zip(&claims)
            .zip(coefficients)
            .map(|((instance, claim), coefficient)| {
                let offset = combined.num_vars - claim.num_vars;
                Member {
                    instance,
                    coefficient: *coefficient,
                    running: claim.claimed_sum * Fr::from(2u64).pow([offset as u64]),
                    last_round: Vec::new(),
                    offset,
                }
            })
            .collect();
        Ok(Batch { members, num_vars: combined.num_vars, degree: combined.degree, round: 0 })
    }

    /// `Σ_i α_i·2^{n−n_i}·S_i`, the combined polynomial's sum.
    pub fn claimed_sum(&self) -> Fr {
        self.members.iter().map(|m| m.coefficient * m.running).sum()
    }
}

impl SumcheckInstance for Batch<'_> {
    fn num_vars(&self) -> usize {
        self.num_vars
    }

    fn degree(&self) -> usize {
        self.degree
    }

    fn round_evaluations(&mut self, _previous_claim: Fr, evaluations: &mut [Fr]) {
        evaluations.iter_mut().for_each(|e| *e = Fr::zero());
        let half = Fr::from(2u64).inverse().unwrap_or_else(Fr::one);
        for member in &mut self.members {
            let full = if self.round >= member.offset {
                let mut own = vec![Fr::zero(); member.instance.degree()];
                member.instance.round_evaluations(member.running, &mut own);
                decompress(&own, member.running)
            } else {
                vec![member.running * half; 2]
            };
            let full = extend_evaluations(&full, self.degree);
            for (slot, value) in evaluations.iter_mut().zip(compress(&full)) {
                *slot += member.coefficient * value;
            }
            member.last_round = full;
        }
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        for member in &mut self.members {
            member.running = evaluate_from_evaluations(&member.last_round, challenge);
            if self.round >= member.offset {
                member.instance.bind_in_place(challenge);
            }
        }
        self.round += 1;
    }
}

/// Proves several claims `Σ g_i = claimed_sums[i]` in one sum-check.
///
/// # Errors
/// [`SumcheckError::WrongLength`] when the sums and instances differ in number, and
/// [`SumcheckError::InvalidClaim`] for an empty batch or an invalid claim.
pub fn prove_batched(
    instances: Vec<&mut dyn SumcheckInstance>,
    claimed_sums: &[Fr],
    transcript: &mut Transcript,
) -> Result<(SumcheckProof, BatchedEvalClaim), SumcheckError> {
    if instances.len() != claimed_sums.len() {
        return Err(SumcheckError::WrongLength {
            what: "claimed sums",
            expected: instances.len(),
            got: claimed_sums.len(),
        });
    }
    let claims: Vec<SumcheckClaim> = instances
        .iter()
        .zip(claimed_sums)
        .map(|(inst, sum)| SumcheckClaim::new(inst.num_vars(), inst.degree(), *sum))
        .collect();
    let coefficients = absorb_batch(&claims, transcript)?;
    let combined = combined_claim(&claims, &coefficients);
    let mut batch = Batch::new(instances, claimed_sums, &coefficients)?;
    let (proof, final_claim) = prove(&mut batch, combined.claimed_sum, transcript);
    let num_vars = claims.iter().map(|c| c.num_vars).collect();
    Ok((
        proof,
        BatchedEvalClaim { point: final_claim.point, value: final_claim.value, coefficients, num_vars },
    ))
}

/// Verifies a batched sum-check of `claims`.
///
/// # Errors
/// [`SumcheckError::InvalidClaim`] for an empty batch or an invalid claim, and the errors of
/// [`verify`]. The caller must still call [`BatchedEvalClaim::check`] with each `g_i`'s value.
pub fn verify_batched(
    claims: &[SumcheckClaim],
    proof: &SumcheckProof,
    transcript: &mut Transcript,
) -> Result<BatchedEvalClaim, SumcheckError> {
    let coefficients = absorb_batch(claims, transcript)?;
    let combined = combined_claim(claims, &coefficients);
    let final_claim = verify(&combined, proof, transcript)?;
    Ok(BatchedEvalClaim {
        point: final_claim.point,
        value: final_claim.value,
        coefficients,
        num_vars: claims.iter().map(|c| c.num_vars).collect(),
    })
}
