//! The zero-knowledge sum-check on committed claims: Libra's mask with its sum and its final
//! value kept in commitments, so that everything sent in the clear is uniformly random.
//!
//! ```text
//! in:   C_S, a Pedersen commitment to S (a public S enters as S·U), and n, d:  Σ_x g(x) = S
//! P → V C_p: hiding vector commitment to the mask's 1 + n·d coefficients; C_P = P·U + β_P·H
//!       for the mask's sum P = Σ_x p(x)
//! V → P ρ ← transcript
//! P → V c₀ = S + ρ·P and a proof that C_S + ρ·C_P opens to c₀         (pedersen::OpeningProof)
//! P ↔ V the rounds of g + ρ·p from c₀ (zkmha_sumcheck::prove_masked_rounds) → point r, c_n
//! P → V C_v = p(r)·U + β_v·H; the proof that it is the committed mask's value is deferred:
//!       at the end of the proof, one logarithmic-size inner-product argument shows
//!       ⟨all masks, (λ_1·R_1 ‖ λ_2·R_2 ‖ …)⟩ = Σ_i λ_i·p_i(r_i) against C_m and Σ_i λ_i·C_{v_i}
//!       (R_i = (1, r_0, …, r_{n−1}^d), λ_i drawn after every C_{v_i}; ProverMasks::prove_openings)
//! out:  CommittedEvalClaim { point r, commitment C_g = c_n·U − ρ·C_v }     commits to g(r)
//!       the caller must prove C_g's relation to its own committed values
//! ```
//!
//! Zero knowledge (`docs/ZERO_KNOWLEDGE.md`): `c₀` and the rounds are the image of the mask's
//! `1 + n·d` uniform coefficients under a triangular map with non-zero diagonal (`2^n·ρ` for
//! `a₀`, `2^t·ρ` for `c_{t,k}`), so they are uniform among consistent transcripts whatever `g`
//! is; `C_m`, `C_P`, `C_v` are hiding and the Σ-protocols and the inner-product argument have
//! simulators. Soundness: the sum-check's `n·d/|F|`, `1/|F|` for ρ, and binding: every mask is
//! fixed by `C_m` before any sum-check's challenge (committing a mask later, even to a
//! separate block, would let a prover change an earlier sum-check's effective mask).

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::pedersen::{OpeningProof, ValueOpening};
use crate::relation::{Combination, CommittedValue, absorb_combinations};
use ark_ec::VariableBaseMSM;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, Zero};
use zkmha_pcs::{G1Affine, G1Projective, GroupEquation, HyraxParams, PcsError, ZkInnerProductProof};
use zkmha_sumcheck::{
    MaskPolynomial, SumcheckClaim, SumcheckError, SumcheckInstance, SumcheckProof, prove_masked_rounds,
    verify,
};
use zkmha_transcript::Transcript;

/// Transcript label of the statement (variables, degree; a single-point claim's commitment).
pub const LABEL_STATEMENT: &[u8] = b"zk/sumcheck/statement";
/// Transcript label of the mask's sum commitment.
pub const LABEL_MASK_COMMITMENT: &[u8] = b"zk/sumcheck/mask-commitment";
/// Transcript label of the mask weight `ρ`.
pub const LABEL_MASK_WEIGHT: &[u8] = b"zk/sumcheck/mask-weight";
/// Transcript label of the masked sum `c₀`.
pub const LABEL_MASKED_SUM: &[u8] = b"zk/sumcheck/masked-sum";
/// Transcript label of the mask's value commitment.
pub const LABEL_MASK_VALUE: &[u8] = b"zk/sumcheck/mask-value";
const LABEL_MASKS: &[u8] = b"zk/masks/commitment";
const LABEL_MASK_WEIGHTS: &[u8] = b"zk/masks/opening-weights";

/// A zero-knowledge sum-check proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkSumcheckProof {
    /// `C_P`, commitment to the mask's sum.
    pub mask_sum_commitment: G1Affine,
    /// `c₀ = S + ρ·P`.
    pub masked_sum: Fr,
    /// `C_S + ρ·C_P` opens to `c₀`.
    pub masked_sum_proof: OpeningProof,
    /// The rounds of `g + ρ·p`.
    pub sumcheck: SumcheckProof,
    /// `C_v`, commitment to `p(r)` (proven with all masks' values at the end).
    pub mask_value_commitment: G1Affine,
}

/// What a zero-knowledge sum-check leaves to its caller: a commitment to `g(point)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedEvalClaim {
    /// The random point, in variable order.
    pub point: Vec<Fr>,
    /// `C_g`, a Pedersen commitment to `g(point)`.
    pub commitment: G1Affine,
}

/// The `(num_vars, degree)` of every zero-knowledge sum-check of a proof, in order: what both
/// sides know before the proof starts, so every mask can be committed up front.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaskSchedule(pub Vec<(usize, usize)>);

impl MaskSchedule {
    /// Coefficients of all masks together (`Σ_i 1 + n_i·d_i`).
    pub fn total_length(&self) -> usize {
        self.0.iter().map(|(n, d)| 1 + n * d).sum()
    }

    /// Variables of the generators the masks need (`⌈log₂ total⌉`).
    pub fn generator_vars(&self) -> usize {
        self.total_length().max(1).next_power_of_two().trailing_zeros() as usize
    }

    fn offsets(&self) -> Vec<usize> {
        self.0
            .iter()
            .scan(0, |acc, (n, d)| {
                let start = *acc;
                *acc += 1 + n * d;
                Some(start)
            })
            .collect()
    }
}

fn absorb_masks(transcript: &mut Transcript, schedule: &MaskSchedule, commitment: &G1Affine) {
    let mut bytes = Vec::with_capacity(40 + 16 * schedule.0.len());
    bytes.extend_from_slice(&(schedule.0.len() as u64).to_le_bytes());
    for (n, d) in &schedule.0 {
        bytes.extend_from_slice(&(*n as u64).to_le_bytes());
        bytes.extend_from_slice(&(*d as u64).to_le_bytes());
    }
    let _ = commitment.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_MASKS, &bytes);
}

fn schedule_error(what: &'static str) -> ZkError {
    ZkError::Sumcheck(SumcheckError::InvalidInstance(format!("mask schedule: {what}")))
}

/// A used mask's value at its sum-check's point (prover side).
#[derive(Clone, Debug)]
struct UsedMask {
    commitment: G1Affine,
    opening: ValueOpening,
    public: Vec<Fr>,
}

/// Every mask of a proof, committed up front (the prover's side).
#[derive(Clone, Debug)]
pub struct ProverMasks {
    schedule: MaskSchedule,
    masks: Vec<MaskPolynomial>,
    blinding: Fr,
    commitment: G1Affine,
    used: Vec<UsedMask>,
}

impl ProverMasks {
    /// Draws one mask per scheduled sum-check, commits to all of them in one hiding vector
    /// commitment and absorbs it (and the schedule); returns the masks and the commitment
    /// for the proof.
    ///
    /// # Errors
    /// [`ZkError::MaskOpening`] when the generators are fewer than the masks' coefficients,
    /// [`ZkError::Sumcheck`] for an invalid degree.
    pub fn commit<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        schedule: MaskSchedule,
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<(Self, G1Affine), ZkError> {
        let masks = schedule
            .0
            .iter()
            .map(|(n, d)| MaskPolynomial::random(*n, *d, rng))
            .collect::<Result<Vec<_>, _>>()?;
        let vector: Vec<Fr> = masks.iter().flat_map(|m| m.coefficients().iter().copied()).collect();
        let bases =
            params.generators.get(..vector.len()).ok_or(ZkError::MaskOpening(PcsError::SrsTooSmall {
                needed: schedule.generator_vars(),
                available: params.generators.len().trailing_zeros() as usize,
            }))?;
        let blinding = Fr::rand(rng);
        let commitment = G1Affine::from(
            G1Projective::msm_unchecked(bases, &vector) + params.blinding_generator * blinding,
        );
        absorb_masks(transcript, &schedule, &commitment);
        Ok((Self { schedule, masks, blinding, commitment, used: Vec::new() }, commitment))
    }

    /// The next scheduled mask, checked against the sum-check's shape.
    fn take(&self, num_vars: usize, degree: usize) -> Result<MaskPolynomial, ZkError> {
        let index = self.used.len();
        match (self.schedule.0.get(index), self.masks.get(index)) {
            (Some(&(n, d)), Some(mask)) if n == num_vars && d == degree => Ok(mask.clone()),
            (Some(_), _) => Err(schedule_error("a sum-check of another shape than scheduled")),
            _ => Err(schedule_error("more sum-checks than scheduled")),
        }
    }

    /// Proves, once all scheduled sum-checks ran, that every mask value commitment holds its
    /// mask's value at its point: one inner-product argument for `Σ_i λ_i·p_i(r_i)`.
    ///
    /// # Errors
    /// [`ZkError::Sumcheck`] when not every scheduled mask was used, [`ZkError::MaskOpening`]
    /// for too few generators.
    pub fn prove_openings<R: RngCore + CryptoRng>(
        self,
        params: &HyraxParams,
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<ZkInnerProductProof, ZkError> {
        if self.used.len() != self.schedule.0.len() {
            return Err(schedule_error("fewer sum-checks than scheduled"));
        }
        let commitments: Vec<G1Affine> = self.used.iter().map(|u| u.commitment).collect();
        let weights = opening_weights(transcript, &commitments);
        let public =
            weighted_public(&self.schedule, self.used.iter().map(|u| u.public.as_slice()), &weights)?;
        let vector: Vec<Fr> = self.masks.iter().flat_map(|m| m.coefficients().iter().copied()).collect();
        let (value_commitment, value_blinding) =
            self.used.iter().zip(&weights).fold((G1Projective::zero(), Fr::zero()), |(c, b), (u, w)| {
                (c + u.commitment * w, b + u.opening.blinding * w)
            });
        Ok(ZkInnerProductProof::prove(
            params,
            (self.commitment, &vector, self.blinding),
            (value_commitment.into(), value_blinding),
            &public,
            transcript,
            rng,
        )?)
    }
}

fn opening_weights(transcript: &mut Transcript, commitments: &[G1Affine]) -> Vec<Fr> {
    let mut bytes = Vec::with_capacity(32 * commitments.len());
    for c in commitments {
        let _ = c.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(LABEL_MASK_WEIGHTS, &bytes);
    transcript.challenge_fields(LABEL_MASK_WEIGHTS, commitments.len())
}

/// `(λ_1·R_1 ‖ λ_2·R_2 ‖ …)` laid out like the concatenated masks.
fn weighted_public<'a>(
    schedule: &MaskSchedule,
    publics: impl Iterator<Item = &'a [Fr]>,
    weights: &[Fr],
) -> Result<Vec<Fr>, ZkError> {
    let mut out = vec![Fr::zero(); schedule.total_length()];
    for (((start, (n, d)), public), weight) in
        schedule.offsets().into_iter().zip(&schedule.0).zip(publics).zip(weights)
    {
        let block =
            out.get_mut(start..start + 1 + n * d).ok_or(schedule_error("a mask outside the vector"))?;
        if block.len() != public.len() {
            return Err(schedule_error("a mask's evaluation vector of the wrong length"));
        }
        for (slot, r) in block.iter_mut().zip(public) {
            *slot = *weight * r;
        }
    }
    Ok(out)
}

/// Every mask of a proof (the verifier's side): the commitment and what each sum-check left.
#[derive(Clone, Debug)]
pub struct VerifierMasks {
    schedule: MaskSchedule,
    commitment: G1Affine,
    used: Vec<(G1Affine, Vec<Fr>)>,
}

impl VerifierMasks {
    /// Absorbs the masks' commitment (and the schedule), as [`ProverMasks::commit`] did.
    pub fn absorb(schedule: MaskSchedule, commitment: G1Affine, transcript: &mut Transcript) -> Self {
        absorb_masks(transcript, &schedule, &commitment);
        Self { schedule, commitment, used: Vec::new() }
    }

    fn check_next(&self, num_vars: usize, degree: usize) -> Result<(), ZkError> {
        match self.schedule.0.get(self.used.len()) {
            Some(&(n, d)) if n == num_vars && d == degree => Ok(()),
            Some(_) => Err(schedule_error("a sum-check of another shape than scheduled")),
            None => Err(schedule_error("more sum-checks than scheduled")),
        }
    }

    /// Checks the masks' inner-product argument (its equation left in `checks`).
    ///
    /// # Errors
    /// [`ZkError::Sumcheck`] when not every scheduled mask was used, [`ZkError::MaskOpening`]
    /// for a malformed argument.
    pub fn verify_openings(
        self,
        params: &HyraxParams,
        proof: &ZkInnerProductProof,
        transcript: &mut Transcript,
        checks: &mut DeferredChecks,
    ) -> Result<(), ZkError> {
        if self.used.len() != self.schedule.0.len() {
            return Err(schedule_error("fewer sum-checks than scheduled"));
        }
        let commitments: Vec<G1Affine> = self.used.iter().map(|(c, _)| *c).collect();
        let weights = opening_weights(transcript, &commitments);
        let public = weighted_public(&self.schedule, self.used.iter().map(|(_, p)| p.as_slice()), &weights)?;
        let value_commitment: G1Projective = commitments.iter().zip(&weights).map(|(c, w)| *c * w).sum();
        let equation: GroupEquation =
            proof.equation(params, self.commitment, value_commitment.into(), &public, transcript)?;
        checks.push(equation, ZkError::MaskOpening(PcsError::ZkCommitmentMismatch));
        Ok(())
    }
}

/// The statement: the shape and the claim's combination (its pairs, never evaluated), absorbed
/// before the mask weight `ρ`. A claim the transcript did not fix could be chosen after `ρ`
/// (`S = Σ g + ρ·(Σ p − P)` for a false mask sum `P`), so the public entry points absorb it
/// whatever their caller did; [`prove_claim_absorbed`] is for callers that absorbed it
/// themselves (a batch absorbs its members' claims before drawing their weights).
fn absorb_statement(
    transcript: &mut Transcript,
    num_vars: usize,
    degree: usize,
    claim: Option<&Combination>,
) {
    transcript.append_shape(LABEL_STATEMENT, &[num_vars, degree]);
    if let Some(claim) = claim {
        absorb_combinations(transcript, LABEL_STATEMENT, [claim]);
    }
}

pub(crate) fn absorb_point(transcript: &mut Transcript, label: &'static [u8], point: &G1Affine) {
    let mut bytes = Vec::with_capacity(32);
    let _ = point.serialize_compressed(&mut bytes);
    transcript.append_bytes(label, &bytes);
}

/// Proves `Σ_x g(x) = S` in zero knowledge for a committed `S` (`claim_commitment`, opened by
/// `claim`; a public `S` is [`ValueOpening::public`]), with the next mask of `masks`. Returns
/// the proof, the committed claim on `g(point)` and its opening (the prover's).
///
/// # Errors
/// [`ZkError::Sumcheck`] for an invalid claim or a sum-check the schedule does not expect.
pub fn prove_zk_sumcheck<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claim_commitment: G1Affine,
    claim: &ValueOpening,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, CommittedEvalClaim, ValueOpening), ZkError> {
    let claim = CommittedValue::new(claim_commitment, *claim);
    let (proof, point, value) =
        prove_zk_sumcheck_committed(params, instance, &claim, masks, transcript, rng)?;
    let commitment = G1Affine::from(value.commitment.evaluate());
    Ok((proof, CommittedEvalClaim { point, commitment }, value.opening))
}

/// [`prove_zk_sumcheck`] for a claim given as a combination of commitments (never evaluated;
/// absorbed as its pairs with the statement). Returns the proof, the point and the committed
/// `g(point)` (`C_g = c_n·U − ρ·C_v`, also a combination).
///
/// # Errors
/// As [`prove_zk_sumcheck`].
pub fn prove_zk_sumcheck_committed<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claim: &CommittedValue,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, Vec<Fr>, CommittedValue), ZkError> {
    prove_claim(params, instance, claim, Some(&claim.commitment), masks, transcript, rng)
}

/// [`prove_zk_sumcheck_committed`] for a claim the caller's transcript already fixes (it
/// absorbed the claim's parts and drew its scalars): the claim is not absorbed again.
pub(crate) fn prove_claim_absorbed<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claim: &CommittedValue,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, Vec<Fr>, CommittedValue), ZkError> {
    prove_claim(params, instance, claim, None, masks, transcript, rng)
}

fn prove_claim<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claim: &CommittedValue,
    absorbed: Option<&Combination>,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, Vec<Fr>, CommittedValue), ZkError> {
    let (num_vars, degree) = (instance.num_vars(), instance.degree());
    absorb_statement(transcript, num_vars, degree, absorbed);
    let mask = masks.take(num_vars, degree)?;
    let mask_sum = ValueOpening::hide(mask.sum(), rng);
    let mask_sum_commitment = G1Affine::from(mask_sum.commit(params));
    absorb_point(transcript, LABEL_MASK_COMMITMENT, &mask_sum_commitment);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);

    let masked_opening = claim.opening.add_scaled(weight, &mask_sum);
    transcript.append_field(LABEL_MASKED_SUM, &masked_opening.value);
    let masked_sum_proof = OpeningProof::prove_combination(params, &masked_opening, transcript, rng);

    let (sumcheck, masked_claim) =
        prove_masked_rounds(instance, claim.opening.value, &mask, weight, transcript)?;
    let public = MaskPolynomial::evaluation_vector(num_vars, degree, &masked_claim.point)?;
    let mask_value = ValueOpening::hide(mask.evaluate(&masked_claim.point)?, rng);
    let mask_value_commitment = G1Affine::from(mask_value.commit(params));
    absorb_point(transcript, LABEL_MASK_VALUE, &mask_value_commitment);
    masks.used.push(UsedMask { commitment: mask_value_commitment, opening: mask_value, public });
    let value = CommittedValue {
        commitment: final_commitment(params, masked_claim.value, weight, mask_value_commitment),
        opening: ValueOpening {
            value: masked_claim.value - weight * mask_value.value,
            blinding: -(weight * mask_value.blinding),
        },
    };
    let proof = ZkSumcheckProof {
        mask_sum_commitment,
        masked_sum: masked_opening.value,
        masked_sum_proof,
        sumcheck,
        mask_value_commitment,
    };
    Ok((proof, masked_claim.point, value))
}

/// `C_g = c_n·U − ρ·C_v`.
fn final_commitment(params: &HyraxParams, value: Fr, weight: Fr, mask_value: G1Affine) -> Combination {
    Combination(vec![(value, params.value_generator), (-weight, mask_value)])
}

/// Verifies a zero-knowledge sum-check of `Σ_x g(x) = S` (`n` variables, degree `d`) for the
/// commitment `claim_commitment` to `S`, with its group equations left in `checks` and its
/// mask's value left in `masks` (checked by [`VerifierMasks::verify_openings`]).
///
/// # Errors
/// [`ZkError::Sumcheck`] (an invalid claim, malformed rounds, a sum-check the schedule does not
/// expect). A false claim or round makes the returned commitment differ from one to
/// `g(point)` (the caller's relation check rejects it) or breaks an equation in `checks`.
#[allow(clippy::too_many_arguments)]
pub fn verify_zk_sumcheck_deferred(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim_commitment: G1Affine,
    proof: &ZkSumcheckProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<CommittedEvalClaim, ZkError> {
    let claim = Combination::point(claim_commitment);
    let (point, commitment) = verify_zk_sumcheck_committed_deferred(
        params, num_vars, degree, &claim, proof, masks, transcript, checks,
    )?;
    Ok(CommittedEvalClaim { point, commitment: G1Affine::from(commitment.evaluate()) })
}

/// [`verify_zk_sumcheck_deferred`] for a claim given as a combination (never evaluated;
/// absorbed as its pairs with the statement); returns the point and `C_g` as a combination.
///
/// # Errors
/// As [`verify_zk_sumcheck_deferred`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
pub fn verify_zk_sumcheck_committed_deferred(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim: &Combination,
    proof: &ZkSumcheckProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<(Vec<Fr>, Combination), ZkError> {
    verify_claim(params, (num_vars, degree), claim, true, proof, masks, transcript, checks)
}

/// [`verify_zk_sumcheck_committed_deferred`] for a claim the transcript already fixes (see
/// [`prove_claim_absorbed`]).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_claim_absorbed(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim: &Combination,
    proof: &ZkSumcheckProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<(Vec<Fr>, Combination), ZkError> {
    verify_claim(params, (num_vars, degree), claim, false, proof, masks, transcript, checks)
}

#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
fn verify_claim(
    params: &HyraxParams,
    (num_vars, degree): (usize, usize),
    claim: &Combination,
    absorb: bool,
    proof: &ZkSumcheckProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<(Vec<Fr>, Combination), ZkError> {
    SumcheckClaim::new(num_vars, degree, Fr::from(0u64)).validate()?;
    masks.check_next(num_vars, degree)?;
    absorb_statement(transcript, num_vars, degree, absorb.then_some(claim));
    absorb_point(transcript, LABEL_MASK_COMMITMENT, &proof.mask_sum_commitment);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);
    transcript.append_field(LABEL_MASKED_SUM, &proof.masked_sum);
    let masked = claim.clone().add_scaled(weight, &Combination::point(proof.mask_sum_commitment));
    proof.masked_sum_proof.verify_combination_deferred(params, &masked, proof.masked_sum, transcript, checks);
    let rounds =
        verify(&SumcheckClaim::new(num_vars, degree, proof.masked_sum), &proof.sumcheck, transcript)?;
    let public = MaskPolynomial::evaluation_vector(num_vars, degree, &rounds.point)?;
    absorb_point(transcript, LABEL_MASK_VALUE, &proof.mask_value_commitment);
    masks.used.push((proof.mask_value_commitment, public));
    let commitment = final_commitment(params, rounds.value, weight, proof.mask_value_commitment);
    Ok((rounds.point, commitment))
}
