//! Libra's masked sum-check (Xie et al. 2019, §4.1): the round messages of `g` are hidden by
//! adding a random low-degree polynomial whose commitment the prover fixed in advance.
//!
//! ```text
//! mask:     p(x) = a₀ + Σ_{i<n} Σ_{k=1..d} c_{i,k}·x_i^k        (1 + n·d uniform coefficients)
//! prover:   commits to p (hiding; the caller absorbs the commitment), sends P = Σ_{x∈{0,1}ⁿ} p(x)
//! verifier: ρ ← transcript
//! both:     the sum-check of g + ρ·p with claim  Σ (g + ρp) = S + ρ·P   (degree d, n rounds)
//! output:   MaskedEvalClaim { point r, value v, mask_weight ρ }
//!           the caller opens p(r) from its commitment (zero-knowledge) and must then check
//!           g(r) = v − ρ·p(r)                                         ([`MaskedEvalClaim::unmask`])
//! ```
//!
//! Round `j` binds `x_t`, `t = n−1−j` (the engine's order, highest variable first), so with
//! `p_i(X) = Σ_k c_{i,k}·X^k`:
//!
//! ```text
//! s_j(X) = 2^t·(a₀ + Σ_{i>t} p_i(r_i) + p_t(X)) + 2^{t−1}·Σ_{i<t} p_i(1)       (t ≥ 1; the last term is 0 for t = 0)
//! P      = 2^n·a₀ + 2^{n−1}·Σ_i p_i(1)
//! p(r)   = ⟨coefficients, (1, r_0, r_0², …, r_0^d, r_1, …, r_{n−1}^d)⟩        ([`MaskPolynomial::evaluation_vector`])
//! ```
//!
//! Why it hides the rounds: each round message of `g + ρp` has `d` free coefficients, and the
//! `d` coefficients `c_{t,1..d}` enter that round alone, uniformly; `docs/ZERO_KNOWLEDGE.md`
//! gives the simulator. The final value `g(r)` is not hidden here: the caller hides it (a
//! randomized extension, or a value that is itself random).
//!
//! Soundness: as the plain sum-check (≤ n·d/|F|) plus 1/|F| for ρ, given that the commitment
//! to `p` binds.

use crate::protocol::prove;
use crate::univariate::{compress, decompress, evaluate_from_evaluations};
use crate::{EvalClaim, SumcheckClaim, SumcheckError, SumcheckInstance, SumcheckProof, verify};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_transcript::Transcript;

/// Transcript label of the mask's sum `P`.
pub const LABEL_MASK_SUM: &[u8] = b"sumcheck/masked/mask-sum";
/// Transcript label of the mask's weight `ρ`.
pub const LABEL_MASK_WEIGHT: &[u8] = b"sumcheck/masked/mask-weight";

/// A masking polynomial `p(x) = a₀ + Σ_i Σ_{k=1..d} c_{i,k}·x_i^k` (prover only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskPolynomial {
    num_vars: usize,
    degree: usize,
    /// `[a₀, c_{0,1}, …, c_{0,d}, c_{1,1}, …, c_{n−1,d}]`.
    coefficients: Vec<Fr>,
}

impl MaskPolynomial {
    /// A mask with uniform coefficients from a cryptographically secure generator.
    ///
    /// # Errors
    /// [`SumcheckError::InvalidClaim`] for degree 0 or above [`crate::MAX_DEGREE`].
    pub fn random<R: RngCore + CryptoRng>(
        num_vars: usize,
        degree: usize,
        rng: &mut R,
    ) -> Result<Self, SumcheckError> {
        SumcheckClaim::new(num_vars, degree, Fr::zero()).validate()?;
        let coefficients = (0..1 + num_vars * degree).map(|_| Fr::rand(rng)).collect();
        Ok(Self { num_vars, degree, coefficients })
    }

    /// A mask with the given coefficients (`[a₀, c_{0,1..d}, …, c_{n−1,1..d}]`).
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] unless there are `1 + num_vars·degree` of them, and
    /// [`SumcheckError::InvalidClaim`] for an invalid degree.
    pub fn from_coefficients(
        num_vars: usize,
        degree: usize,
        coefficients: Vec<Fr>,
    ) -> Result<Self, SumcheckError> {
        SumcheckClaim::new(num_vars, degree, Fr::zero()).validate()?;
        let expected = 1 + num_vars * degree;
        if coefficients.len() != expected {
            return Err(SumcheckError::WrongLength {
                what: "mask coefficients",
                expected,
                got: coefficients.len(),
            });
        }
        Ok(Self { num_vars, degree, coefficients })
    }

    /// Variables `n`.
    pub fn num_vars(&self) -> usize {
        self.num_vars
    }

    /// Degree `d` in each variable.
    pub fn degree(&self) -> usize {
        self.degree
    }

    /// The coefficient vector `[a₀, c_{0,1..d}, …]` (what the prover commits to).
    pub fn coefficients(&self) -> &[Fr] {
        &self.coefficients
    }

    /// `p_i(x) = Σ_k c_{i,k}·x^k` (Horner).
    fn variable_part(&self, variable: usize, x: Fr) -> Fr {
        let start = 1 + variable * self.degree;
        self.coefficients
            .get(start..start + self.degree)
            .unwrap_or_default()
            .iter()
            .rev()
            .fold(Fr::zero(), |acc, c| (acc + c) * x)
    }

    /// `P = Σ_{x ∈ {0,1}ⁿ} p(x)`.
    pub fn sum(&self) -> Fr {
        let constant = self.coefficients.first().copied().unwrap_or_default();
        let ones: Fr = (0..self.num_vars).map(|i| self.variable_part(i, Fr::one())).sum();
        let half = Fr::from(2u64).pow([self.num_vars.saturating_sub(1) as u64]);
        if self.num_vars == 0 { constant } else { half * (constant + constant + ones) }
    }

    /// `p(point)`.
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] for a point of another length.
    pub fn evaluate(&self, point: &[Fr]) -> Result<Fr, SumcheckError> {
        let vector = Self::evaluation_vector(self.num_vars, self.degree, point)?;
        Ok(vector.iter().zip(&self.coefficients).map(|(v, c)| *v * c).sum())
    }

    /// The public vector `(1, r_0, …, r_0^d, r_1, …, r_{n−1}^d)` with `p(r) = ⟨coefficients, ·⟩`:
    /// what a verifier needs to check an opening of the committed coefficients.
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] for a point of another length than `num_vars`.
    pub fn evaluation_vector(num_vars: usize, degree: usize, point: &[Fr]) -> Result<Vec<Fr>, SumcheckError> {
        if point.len() != num_vars {
            return Err(SumcheckError::WrongLength {
                what: "mask point coordinates",
                expected: num_vars,
                got: point.len(),
            });
        }
        let mut vector = Vec::with_capacity(1 + num_vars * degree);
        vector.push(Fr::one());
        for r in point {
            let mut power = Fr::one();
            for _ in 0..degree {
                power *= r;
                vector.push(power);
            }
        }
        Ok(vector)
    }
}

/// The masked proof: the mask's sum and the rounds of `g + ρ·p`.
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MaskedSumcheckProof {
    /// `P = Σ_x p(x)`.
    pub mask_sum: Fr,
    /// The rounds of `g + ρ·p`.
    pub sumcheck: SumcheckProof,
}

/// What a masked sum-check leaves to its caller: `(g + ρ·p)(point) = value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskedEvalClaim {
    /// The random point, in variable order.
    pub point: Vec<Fr>,
    /// `(g + ρ·p)(point)`.
    pub value: Fr,
    /// `ρ`.
    pub mask_weight: Fr,
}

impl MaskedEvalClaim {
    /// The claim on `g` once `p(point)` is known (opened from the mask's commitment):
    /// `g(point) = value − ρ·p(point)`.
    pub fn unmask(&self, mask_value: Fr) -> EvalClaim {
        EvalClaim { point: self.point.clone(), value: self.value - self.mask_weight * mask_value }
    }
}

/// `g + ρ·p` as an instance: the inner kernel's rounds plus `ρ` times the mask's.
struct MaskedInstance<'a, I: SumcheckInstance + ?Sized> {
    inner: &'a mut I,
    mask: &'a MaskPolynomial,
    weight: Fr,
    /// The inner polynomial's own running claim (its kernels may derive `s(0)` from it).
    inner_running: Fr,
    inner_message: Vec<Fr>,
    /// `a₀ + Σ_{bound i} p_i(r_i)`.
    bound: Fr,
    /// `Σ_{unbound i} p_i(1)`.
    unbound_ones: Fr,
    /// The next variable to bind.
    variable: usize,
}

impl<I: SumcheckInstance + ?Sized> MaskedInstance<'_, I> {
    /// The mask's round polynomial at `0..=d` for the variable being bound.
    fn mask_round(&self) -> Vec<Fr> {
        let t = self.variable;
        let below = self.unbound_ones - self.mask.variable_part(t, Fr::one());
        let scale = Fr::from(2u64).pow([t as u64]);
        let rest = if t == 0 { Fr::zero() } else { Fr::from(2u64).pow([t as u64 - 1]) * below };
        (0..=self.mask.degree as u64)
            .map(|x| scale * (self.bound + self.mask.variable_part(t, Fr::from(x))) + rest)
            .collect()
    }
}

impl<I: SumcheckInstance + ?Sized> SumcheckInstance for MaskedInstance<'_, I> {
    fn num_vars(&self) -> usize {
        self.inner.num_vars()
    }

    fn degree(&self) -> usize {
        self.inner.degree()
    }

    fn round_evaluations(&mut self, _previous_claim: Fr, evaluations: &mut [Fr]) {
        self.inner.round_evaluations(self.inner_running, evaluations);
        self.inner_message.clear();
        self.inner_message.extend_from_slice(evaluations);
        // The message format is linear in the polynomial, so the messages add.
        for (out, m) in evaluations.iter_mut().zip(compress(&self.mask_round())) {
            *out += self.weight * m;
        }
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        let inner_round = decompress(&self.inner_message, self.inner_running);
        self.inner_running = evaluate_from_evaluations(&inner_round, challenge);
        self.inner.bind_in_place(challenge);
        let t = self.variable;
        self.bound += self.mask.variable_part(t, challenge);
        self.unbound_ones -= self.mask.variable_part(t, Fr::one());
        self.variable = t.saturating_sub(1);
    }
}

/// A valid claim, and a mask of its variables and degree.
fn check_mask(claim: &SumcheckClaim, mask: &MaskPolynomial) -> Result<(), SumcheckError> {
    claim.validate()?;
    if mask.num_vars != claim.num_vars || mask.degree != claim.degree {
        return Err(SumcheckError::InvalidInstance(format!(
            "mask of {} variables and degree {} for a claim of {} variables and degree {}",
            mask.num_vars, mask.degree, claim.num_vars, claim.degree
        )));
    }
    Ok(())
}

/// Proves `Σ_x g(x) = claimed_sum` with the round messages masked by `mask`.
///
/// The caller must have absorbed a hiding commitment to `mask` into `transcript` before this
/// call (the weight `ρ` must not be predictable when the mask is chosen), and must open
/// `mask` at the returned point in zero knowledge.
///
/// # Errors
/// [`SumcheckError::InvalidInstance`] when the mask's variables or degree differ from the
/// instance's, [`SumcheckError::InvalidClaim`] for an invalid claim.
pub fn prove_masked<I: SumcheckInstance + ?Sized>(
    instance: &mut I,
    claimed_sum: Fr,
    mask: &MaskPolynomial,
    transcript: &mut Transcript,
) -> Result<(MaskedSumcheckProof, MaskedEvalClaim), SumcheckError> {
    let claim = SumcheckClaim::new(instance.num_vars(), instance.degree(), claimed_sum);
    check_mask(&claim, mask)?;
    claim.append_to_transcript(transcript);
    let mask_sum = mask.sum();
    transcript.append_field(LABEL_MASK_SUM, &mask_sum);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);
    let (sumcheck, masked_claim) = prove_masked_rounds(instance, claimed_sum, mask, weight, transcript)?;
    Ok((MaskedSumcheckProof { mask_sum, sumcheck }, masked_claim))
}

/// The rounds of `g + ρ·p` from the claim `claimed_sum + ρ·P`, for a weight `ρ` the caller
/// drew after fixing (committing to) the mask: for protocols that keep `P` itself hidden
/// ([`prove_masked`] sends it).
///
/// # Errors
/// As [`prove_masked`].
pub fn prove_masked_rounds<I: SumcheckInstance + ?Sized>(
    instance: &mut I,
    claimed_sum: Fr,
    mask: &MaskPolynomial,
    weight: Fr,
    transcript: &mut Transcript,
) -> Result<(SumcheckProof, MaskedEvalClaim), SumcheckError> {
    let claim = SumcheckClaim::new(instance.num_vars(), instance.degree(), claimed_sum);
    check_mask(&claim, mask)?;
    let unbound_ones = (0..mask.num_vars).map(|i| mask.variable_part(i, Fr::one())).sum();
    let mut masked = MaskedInstance {
        inner: instance,
        mask,
        weight,
        inner_running: claimed_sum,
        inner_message: Vec::with_capacity(claim.degree),
        bound: mask.coefficients.first().copied().unwrap_or_default(),
        unbound_ones,
        variable: claim.num_vars.saturating_sub(1),
    };
    let (sumcheck, final_claim) = prove(&mut masked, claimed_sum + weight * mask.sum(), transcript);
    Ok((
        sumcheck,
        MaskedEvalClaim { point: final_claim.point, value: final_claim.value, mask_weight: weight },
    ))
}

/// Verifies a masked sum-check of `claim` (the caller absorbed the mask's commitment first,
/// as the prover did).
///
/// # Errors
/// As [`verify`]. The caller must still open the mask at the returned point and check
/// `g(point)` against [`MaskedEvalClaim::unmask`].
pub fn verify_masked(
    claim: &SumcheckClaim,
    proof: &MaskedSumcheckProof,
    transcript: &mut Transcript,
) -> Result<MaskedEvalClaim, SumcheckError> {
    claim.validate()?;
    claim.append_to_transcript(transcript);
    transcript.append_field(LABEL_MASK_SUM, &proof.mask_sum);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);
    let combined =
        SumcheckClaim::new(claim.num_vars, claim.degree, claim.claimed_sum + weight * proof.mask_sum);
    let final_claim = verify(&combined, &proof.sumcheck, transcript)?;
    Ok(MaskedEvalClaim { point: final_claim.point, value: final_claim.value, mask_weight: weight })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use ark_std::rand::SeedableRng;

    /// The closed forms of `P` and `p(r)` against the sum and evaluation of the materialized mask.
    #[test]
    fn closed_forms_match_the_materialized_mask() {
        let mut rng = ark_std::rand::rngs::StdRng::seed_from_u64(5);
        for (n, d) in [(0, 1), (1, 1), (3, 2), (4, 3)] {
            let mask = MaskPolynomial::random(n, d, &mut rng).unwrap();
            let evaluate =
                |x: &[Fr]| mask.coefficients[0] + (0..n).map(|i| mask.variable_part(i, x[i])).sum::<Fr>();
            let sum: Fr = (0..1usize << n)
                .map(|b| evaluate(&(0..n).map(|i| Fr::from(((b >> i) & 1) as u64)).collect::<Vec<_>>()))
                .sum();
            assert_eq!(mask.sum(), sum);
            let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
            assert_eq!(mask.evaluate(&point).unwrap(), evaluate(&point));
        }
    }

    /// The public-sum variant end to end against a plain reference, and each tampered part
    /// caught by the caller's final check.
    #[test]
    fn masked_rounds_round_trip_and_reject_tampering() {
        use crate::{ProductSumcheck, SumOfProducts};
        use zkmha_mle::DenseMultilinearExtension;
        let mut rng = ark_std::rand::rngs::StdRng::seed_from_u64(9);
        for (n, k) in [(1, 1), (3, 2), (6, 3)] {
            let mles: Vec<DenseMultilinearExtension> = (0..k)
                .map(|_| {
                    DenseMultilinearExtension::new(n, (0..1 << n).map(|_| Fr::rand(&mut rng)).collect())
                        .unwrap()
                })
                .collect();
            let sum: Fr =
                (0..1usize << n).map(|x| mles.iter().map(|f| f.evaluations()[x]).product::<Fr>()).sum();
            let value_at = |point: &[Fr]| mles.iter().map(|f| f.evaluate(point).unwrap()).product::<Fr>();
            let mask = MaskPolynomial::random(n, k, &mut rng).unwrap();
            let mut instance =
                ProductSumcheck::new(SumOfProducts::product(k).unwrap(), mles.clone()).unwrap();
            let (proof, prover_claim) =
                prove_masked(&mut instance, sum, &mask, &mut Transcript::new(b"m")).unwrap();
            let claim = SumcheckClaim::new(n, k, sum);
            let check = |proof: &MaskedSumcheckProof| {
                let verified = verify_masked(&claim, proof, &mut Transcript::new(b"m")).unwrap();
                let unmasked = verified.unmask(mask.evaluate(&verified.point).unwrap());
                (verified, unmasked.check(value_at(&unmasked.point)))
            };
            let (verified, result) = check(&proof);
            assert_eq!(verified, prover_claim);
            result.unwrap();
            let mut sum_tampered = proof.clone();
            sum_tampered.mask_sum += Fr::one();
            assert_eq!(check(&sum_tampered).1, Err(SumcheckError::FinalEvaluationMismatch));
            let mut round_tampered = proof.clone();
            round_tampered.sumcheck.rounds[0].evaluations[0] += Fr::one();
            assert_eq!(check(&round_tampered).1, Err(SumcheckError::FinalEvaluationMismatch));
            // A mask of another shape is refused before anything is sent.
            let other = MaskPolynomial::random(n + 1, k, &mut rng).unwrap();
            let mut instance = ProductSumcheck::new(SumOfProducts::product(k).unwrap(), mles).unwrap();
            assert!(matches!(
                prove_masked(&mut instance, sum, &other, &mut Transcript::new(b"m")),
                Err(SumcheckError::InvalidInstance(_))
            ));
        }
    }
}
