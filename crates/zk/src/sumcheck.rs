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
//! P → V C_v = p(r)·U + β_v·H and a proof of dot product ⟨coefficients, (1, r_0, …, r_{n−1}^d)⟩
//!       = p(r) against C_p, with the value committed (Hyrax::prove_inner_product_committed)
//! out:  CommittedEvalClaim { point r, commitment C_g = c_n·U − ρ·C_v }     commits to g(r)
//!       the caller must prove C_g's relation to its own committed values
//! ```
//!
//! Zero knowledge (`docs/ZERO_KNOWLEDGE.md`): `c₀` and the rounds are the image of the mask's
//! `1 + n·d` uniform coefficients under a triangular map with non-zero diagonal (`2^n·ρ` for
//! `a₀`, `2^t·ρ` for `c_{t,k}`), so they are uniform among consistent transcripts whatever `g`
//! is; `C_p`, `C_P`, `C_v` are hiding and the two Σ-protocols have simulators. Soundness: the
//! sum-check's `n·d/|F|`, `1/|F|` for ρ, and the binding of the commitments.

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::pedersen::{OpeningProof, ValueOpening};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::Fr;
use zkmha_pcs::{G1Affine, G1Projective, Hyrax, HyraxCommitment, HyraxParams, ZkCommittedOpeningProof};
use zkmha_sumcheck::{
    MaskPolynomial, SumcheckClaim, SumcheckInstance, SumcheckProof, prove_masked_rounds, verify,
};
use zkmha_transcript::Transcript;

/// Transcript label of the statement (variables, degree, claim commitment).
pub const LABEL_STATEMENT: &[u8] = b"zk/sumcheck/statement";
/// Transcript label of the mask's commitments.
pub const LABEL_MASK_COMMITMENT: &[u8] = b"zk/sumcheck/mask-commitment";
/// Transcript label of the mask weight `ρ`.
pub const LABEL_MASK_WEIGHT: &[u8] = b"zk/sumcheck/mask-weight";
/// Transcript label of the masked sum `c₀`.
pub const LABEL_MASKED_SUM: &[u8] = b"zk/sumcheck/masked-sum";

/// A zero-knowledge sum-check proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkSumcheckProof {
    /// Hiding commitment to the mask's coefficients (one row).
    pub mask_commitment: HyraxCommitment,
    /// `C_P`, commitment to the mask's sum.
    pub mask_sum_commitment: G1Affine,
    /// `c₀ = S + ρ·P`.
    pub masked_sum: Fr,
    /// `C_S + ρ·C_P` opens to `c₀`.
    pub masked_sum_proof: OpeningProof,
    /// The rounds of `g + ρ·p`.
    pub sumcheck: SumcheckProof,
    /// `C_v`, commitment to `p(r)`.
    pub mask_value_commitment: G1Affine,
    /// `C_v` commits to the committed mask's value at `r`.
    pub mask_opening: ZkCommittedOpeningProof,
}

/// What a zero-knowledge sum-check leaves to its caller: a commitment to `g(point)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedEvalClaim {
    /// The random point, in variable order.
    pub point: Vec<Fr>,
    /// `C_g`, a Pedersen commitment to `g(point)`.
    pub commitment: G1Affine,
}

/// Variables of the vector commitment to a mask for `num_vars` variables of degree `degree`
/// (`1 + n·d` coefficients, padded to a power of two).
pub fn mask_commitment_vars(num_vars: usize, degree: usize) -> usize {
    (1 + num_vars * degree).next_power_of_two().trailing_zeros() as usize
}

fn absorb_statement(transcript: &mut Transcript, num_vars: usize, degree: usize, claim: &G1Affine) {
    let mut bytes = Vec::with_capacity(48);
    bytes.extend_from_slice(&(num_vars as u64).to_le_bytes());
    bytes.extend_from_slice(&(degree as u64).to_le_bytes());
    let _ = claim.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_STATEMENT, &bytes);
}

fn absorb_mask(transcript: &mut Transcript, commitment: &HyraxCommitment, sum: &G1Affine) {
    let mut bytes = Vec::new();
    let _ = commitment.serialize_compressed(&mut bytes);
    let _ = sum.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_MASK_COMMITMENT, &bytes);
}

/// Proves `Σ_x g(x) = S` in zero knowledge for a committed `S` (`claim_commitment`, opened by
/// `claim`; a public `S` is [`ValueOpening::public`]). Returns the proof, the committed claim
/// on `g(point)` and its opening (the prover's).
///
/// # Errors
/// [`ZkError::Sumcheck`] for an invalid claim, [`ZkError::MaskOpening`] when the generators
/// are too few for the mask (`2^mask_commitment_vars(n, d)` are needed).
pub fn prove_zk_sumcheck<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claim_commitment: G1Affine,
    claim: &ValueOpening,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, CommittedEvalClaim, ValueOpening), ZkError> {
    let (num_vars, degree) = (instance.num_vars(), instance.degree());
    absorb_statement(transcript, num_vars, degree, &claim_commitment);
    let mask = MaskPolynomial::random(num_vars, degree, rng)?;
    let (mask_commitment, blinds) = Hyrax::commit_vector_hiding(params, mask.coefficients(), rng)?;
    let mask_sum = ValueOpening::hide(mask.sum(), rng);
    let mask_sum_commitment = G1Affine::from(mask_sum.commit(params));
    absorb_mask(transcript, &mask_commitment, &mask_sum_commitment);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);

    let masked_opening = claim.add_scaled(weight, &mask_sum);
    transcript.append_field(LABEL_MASKED_SUM, &masked_opening.value);
    let masked_commitment = G1Affine::from(claim_commitment + mask_sum_commitment * weight);
    let masked_sum_proof = OpeningProof::prove(params, masked_commitment, &masked_opening, transcript, rng);

    let (sumcheck, masked_claim) = prove_masked_rounds(instance, claim.value, &mask, weight, transcript)?;
    let public = MaskPolynomial::evaluation_vector(num_vars, degree, &masked_claim.point)?;
    let (mask_opening, mask_value_commitment, (mask_value, mask_value_blinding)) =
        Hyrax::prove_inner_product_committed(
            params,
            mask.coefficients(),
            &mask_commitment,
            &blinds,
            &public,
            transcript,
            rng,
        )?;
    let commitment = final_commitment(params, masked_claim.value, weight, mask_value_commitment);
    let opening = ValueOpening {
        value: masked_claim.value - weight * mask_value,
        blinding: -(weight * mask_value_blinding),
    };
    let proof = ZkSumcheckProof {
        mask_commitment,
        mask_sum_commitment,
        masked_sum: masked_opening.value,
        masked_sum_proof,
        sumcheck,
        mask_value_commitment,
        mask_opening,
    };
    Ok((proof, CommittedEvalClaim { point: masked_claim.point, commitment }, opening))
}

/// `C_g = c_n·U − ρ·C_v`.
fn final_commitment(params: &HyraxParams, value: Fr, weight: Fr, mask_value: G1Affine) -> G1Affine {
    G1Affine::from(params.value_generator * value - G1Projective::from(mask_value) * weight)
}

/// Verifies a zero-knowledge sum-check of `Σ_x g(x) = S` (`n` variables, degree `d`) for the
/// commitment `claim_commitment` to `S`.
///
/// # Errors
/// [`ZkError::MaskCommitmentShape`], [`ZkError::OpeningMismatch`] (the masked sum),
/// [`ZkError::Sumcheck`] (malformed rounds), [`ZkError::MaskOpening`] (the mask's value). A
/// false claim or round makes the returned commitment differ from one to `g(point)`: the
/// caller's relation check rejects it.
pub fn verify_zk_sumcheck(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim_commitment: G1Affine,
    proof: &ZkSumcheckProof,
    transcript: &mut Transcript,
) -> Result<CommittedEvalClaim, ZkError> {
    let mut checks = DeferredChecks::new();
    let claim = verify_zk_sumcheck_deferred(
        params,
        num_vars,
        degree,
        claim_commitment,
        proof,
        transcript,
        &mut checks,
    )?;
    checks.finish(transcript)?;
    Ok(claim)
}

/// [`verify_zk_sumcheck`] with its group equations left in `checks` (the caller finishes them
/// after the whole proof is absorbed).
///
/// # Errors
/// As [`verify_zk_sumcheck`], except the group equations' errors, which `checks` returns.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_zk_sumcheck_deferred(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim_commitment: G1Affine,
    proof: &ZkSumcheckProof,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<CommittedEvalClaim, ZkError> {
    SumcheckClaim::new(num_vars, degree, Fr::from(0u64)).validate()?;
    let expected = mask_commitment_vars(num_vars, degree);
    if proof.mask_commitment.num_vars != expected {
        return Err(ZkError::MaskCommitmentShape {
            num_vars,
            degree,
            expected,
            got: proof.mask_commitment.num_vars,
        });
    }
    absorb_statement(transcript, num_vars, degree, &claim_commitment);
    absorb_mask(transcript, &proof.mask_commitment, &proof.mask_sum_commitment);
    let weight = transcript.challenge_field(LABEL_MASK_WEIGHT);
    transcript.append_field(LABEL_MASKED_SUM, &proof.masked_sum);
    let masked_commitment = G1Affine::from(claim_commitment + proof.mask_sum_commitment * weight);
    proof.masked_sum_proof.verify_deferred(params, masked_commitment, proof.masked_sum, transcript, checks);
    let rounds =
        verify(&SumcheckClaim::new(num_vars, degree, proof.masked_sum), &proof.sumcheck, transcript)?;
    let public = MaskPolynomial::evaluation_vector(num_vars, degree, &rounds.point)?;
    let equations = Hyrax::inner_product_committed_equations(
        params,
        &proof.mask_commitment,
        &public,
        proof.mask_value_commitment,
        &proof.mask_opening,
        transcript,
    )?;
    for equation in equations {
        checks.push(equation, ZkError::MaskOpening(zkmha_pcs::PcsError::ZkCommitmentMismatch));
    }
    let commitment = final_commitment(params, rounds.value, weight, proof.mask_value_commitment);
    Ok(CommittedEvalClaim { point: rounds.point, commitment })
}
