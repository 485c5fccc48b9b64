//! The sum-check protocol: one prover loop and its mirrored verifier loop.
//!
//! ```text
//! claim:  Σ_{x ∈ {0,1}ⁿ} g(x) = c₀,   deg_{x_i} g ≤ d
//! round j = 1..n (binding x_{n−j}, the highest unbound variable):
//!   P → V : s_j(0), s_j(2), …, s_j(d−1), s_j(∞) where s_j(X) = Σ_{x} g(x_0..x_{n−j−1}, X, r_{j−1}, …, r_1)
//!                                                 and s_j(∞) is its X^d coefficient (d = 1: s_j(0) only)
//!   V     : s_j(1) := c_{j−1} − s_j(0)           (the round check s_j(0) + s_j(1) = c_{j−1}, by construction)
//!   V → P : r_j ← transcript;   c_j := s_j(r_j)
//! output: EvalClaim { point = (r_n, …, r_1) in variable order, value = c_n }
//!         the caller must check g(point) = c_n
//! ```
//!
//! Soundness error ≤ n·d / |F| per claim (Schwartz–Zippel over the rounds).

use crate::univariate::{decompress, evaluate_from_evaluations};
use crate::{EvalClaim, SumcheckClaim, SumcheckError};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, Zero};
use zkmha_transcript::Transcript;

/// Transcript label of a round message.
pub const LABEL_ROUND: &[u8] = b"sumcheck/round";
/// Transcript label of a round challenge.
pub const LABEL_CHALLENGE: &[u8] = b"sumcheck/challenge";

/// The prover's side of one sum-check: the polynomial `g`, held in a form that can give
/// its round polynomials and bind variables.
///
/// Implement this for a structured `g` to give the engine a fast round kernel; the
/// ready implementations are [`crate::ProductSumcheck`] (sums of products of dense MLEs)
/// and [`crate::SmallValueProductSumcheck`] (products of small-integer MLEs).
pub trait SumcheckInstance {
    /// Number of variables `n`.
    fn num_vars(&self) -> usize;

    /// Degree `d` of `g` in each variable.
    fn degree(&self) -> usize;

    /// Writes the round message of the round polynomial `s` for the highest unbound
    /// variable: `s(0), s(2), …, s(d−1), s(∞)` (`d` values; `s(∞)` is the coefficient of
    /// `X^d`; for `d = 1` just `s(0)`). `previous_claim = s(0) + s(1)`, for kernels that
    /// prefer to derive `s(0)` from `s(1)`.
    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]);

    /// Fixes the highest unbound variable to `challenge`, in place.
    fn bind_in_place(&mut self, challenge: Fr);
}

/// One round message: `s(0), s(2), …, s(d−1), s(∞)` ([`crate::univariate`]).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct RoundPolynomial {
    /// `s(0)`, then `s(2..d)`, then the coefficient of `X^d`; `s(1)` is derived from the
    /// running claim.
    pub evaluations: Vec<Fr>,
}

/// A sum-check proof: one message per variable.
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SumcheckProof {
    /// Round messages, first round first.
    pub rounds: Vec<RoundPolynomial>,
}

impl SumcheckProof {
    /// Size in bytes (compressed encoding).
    pub fn size_in_bytes(&self) -> usize {
        self.compressed_size()
    }
}

/// Proves `Σ_x g(x) = claimed_sum` for the instance `g`.
///
/// Absorbs the claim, then runs the rounds. Returns the proof and the claim
/// `g(point) = value` at the random point: the same [`EvalClaim`] the verifier obtains.
/// An instance whose real sum differs from `claimed_sum` yields a proof that fails.
pub fn prove<I: SumcheckInstance + ?Sized>(
    instance: &mut I,
    claimed_sum: Fr,
    transcript: &mut Transcript,
) -> (SumcheckProof, EvalClaim) {
    let num_vars = instance.num_vars();
    let degree = instance.degree();
    SumcheckClaim::new(num_vars, degree, claimed_sum).append_to_transcript(transcript);
    let mut running = claimed_sum;
    let mut rounds = Vec::with_capacity(num_vars);
    let mut challenges = Vec::with_capacity(num_vars);
    for _ in 0..num_vars {
        let mut evaluations = vec![Fr::zero(); degree];
        instance.round_evaluations(running, &mut evaluations);
        transcript.append_fields(LABEL_ROUND, &evaluations);
        let challenge = transcript.challenge_field(LABEL_CHALLENGE);
        running = evaluate_from_evaluations(&decompress(&evaluations, running), challenge);
        instance.bind_in_place(challenge);
        challenges.push(challenge);
        rounds.push(RoundPolynomial { evaluations });
    }
    challenges.reverse();
    (SumcheckProof { rounds }, EvalClaim { point: challenges, value: running })
}

/// Verifies a sum-check proof of `claim` and returns the evaluation claim the caller must
/// discharge.
///
/// # Errors
/// [`SumcheckError::InvalidClaim`], [`SumcheckError::WrongRoundCount`] or
/// [`SumcheckError::WrongDegree`]. A wrong sum or a corrupted round is not detected here:
/// it makes the returned value differ from `g(point)`, which the caller's check rejects
/// ([`EvalClaim::check`]).
pub fn verify(
    claim: &SumcheckClaim,
    proof: &SumcheckProof,
    transcript: &mut Transcript,
) -> Result<EvalClaim, SumcheckError> {
    claim.validate()?;
    if proof.rounds.len() != claim.num_vars {
        return Err(SumcheckError::WrongRoundCount { expected: claim.num_vars, got: proof.rounds.len() });
    }
    claim.append_to_transcript(transcript);
    let mut running = claim.claimed_sum;
    let mut challenges = Vec::with_capacity(claim.num_vars);
    for (round, message) in proof.rounds.iter().enumerate() {
        if message.evaluations.len() != claim.degree {
            return Err(SumcheckError::WrongDegree {
                round,
                degree: claim.degree,
                expected: claim.degree,
                got: message.evaluations.len(),
            });
        }
        transcript.append_fields(LABEL_ROUND, &message.evaluations);
        let challenge = transcript.challenge_field(LABEL_CHALLENGE);
        running = evaluate_from_evaluations(&decompress(&message.evaluations, running), challenge);
        challenges.push(challenge);
    }
    challenges.reverse();
    Ok(EvalClaim { point: challenges, value: running })
}
