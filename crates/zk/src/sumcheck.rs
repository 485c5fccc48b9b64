//! The zero-knowledge sum-check: Libra's mask, committed and opened in zero knowledge.
//!
//! ```text
//! claim:   SumcheckClaim { num_vars n, degree d, claimed_sum S }      Σ_x g(x) = S
//! P → V    C_p: hiding vector commitment to the mask's 1 + n·d coefficients
//!          (absorbed before anything the prover sends about p)
//! P ↔ V    masked sum-check (zkmha_sumcheck::prove_masked): P = Σ p, ρ, rounds of g + ρp
//!          → (g + ρp)(r) = v'
//! P → V    p(r) and a proof of dot product ⟨coefficients, (1, r_0, …, r_{n−1}^d)⟩ = p(r)
//!          against C_p (zkmha_pcs::Hyrax::prove_inner_product_zk)
//! out:     EvalClaim { point r, value v' − ρ·p(r) }   — the caller must check g(r) = value
//! ```
//!
//! The verifier sees `C_p` (uniform: hiding), `P`, the rounds, `p(r)` and the opening (a
//! simulator makes both without `p`); `docs/ZERO_KNOWLEDGE.md` gives the argument. Soundness:
//! the masked sum-check's `(n·d + 1)/|F|` plus the opening's (binding under discrete log).

use crate::ZkError;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::Fr;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, ZkOpeningProof};
use zkmha_sumcheck::{
    EvalClaim, MaskPolynomial, MaskedSumcheckProof, SumcheckClaim, SumcheckInstance, prove_masked,
    verify_masked,
};
use zkmha_transcript::Transcript;

/// Transcript label of the mask's commitment.
pub const LABEL_MASK_COMMITMENT: &[u8] = b"zk/sumcheck/mask-commitment";

/// A zero-knowledge sum-check proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkSumcheckProof {
    /// Hiding commitment to the mask's coefficients (one row).
    pub mask_commitment: HyraxCommitment,
    /// The mask's sum and the masked rounds.
    pub masked: MaskedSumcheckProof,
    /// `p(r)`.
    pub mask_value: Fr,
    /// Proof that `p(r)` is the committed mask's value.
    pub mask_opening: ZkOpeningProof,
}

/// Variables of the vector commitment to a mask for `num_vars` variables of degree `degree`
/// (`1 + n·d` coefficients, padded to a power of two).
pub fn mask_commitment_vars(num_vars: usize, degree: usize) -> usize {
    (1 + num_vars * degree).next_power_of_two().trailing_zeros() as usize
}

fn absorb_commitment(transcript: &mut Transcript, commitment: &HyraxCommitment) {
    let mut bytes = Vec::new();
    let _ = commitment.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_MASK_COMMITMENT, &bytes);
}

/// Proves `Σ_x g(x) = claimed_sum` in zero knowledge (round messages hidden); returns the proof
/// and the claim `g(r) = value` the caller must discharge (and, for zero knowledge, hide).
///
/// # Errors
/// [`ZkError::Sumcheck`] for an invalid claim, [`ZkError::MaskOpening`] when the generators
/// are too few for the mask (`2^mask_commitment_vars(n, d)` are needed).
pub fn prove_zk_sumcheck<I: SumcheckInstance + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    instance: &mut I,
    claimed_sum: Fr,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkSumcheckProof, EvalClaim), ZkError> {
    let mask = MaskPolynomial::random(instance.num_vars(), instance.degree(), rng)?;
    let (mask_commitment, blinds) = Hyrax::commit_vector_hiding(params, mask.coefficients(), rng)?;
    absorb_commitment(transcript, &mask_commitment);
    let (masked, masked_claim) = prove_masked(instance, claimed_sum, &mask, transcript)?;
    let public = MaskPolynomial::evaluation_vector(mask.num_vars(), mask.degree(), &masked_claim.point)?;
    let (mask_opening, mask_value) = Hyrax::prove_inner_product_zk(
        params,
        mask.coefficients(),
        &mask_commitment,
        &blinds,
        &public,
        transcript,
        rng,
    )?;
    let claim = masked_claim.unmask(mask_value);
    Ok((ZkSumcheckProof { mask_commitment, masked, mask_value, mask_opening }, claim))
}

/// Verifies a zero-knowledge sum-check of `claim`.
///
/// # Errors
/// [`ZkError::MaskCommitmentShape`], [`ZkError::Sumcheck`] (malformed rounds),
/// [`ZkError::MaskOpening`] (a mask value that is not the committed mask's). A wrong sum or
/// round makes the returned value differ from `g(point)`: the caller's check rejects it.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_zk_sumcheck(
    params: &HyraxParams,
    claim: &SumcheckClaim,
    proof: &ZkSumcheckProof,
    transcript: &mut Transcript,
) -> Result<EvalClaim, ZkError> {
    claim.validate()?;
    let expected = mask_commitment_vars(claim.num_vars, claim.degree);
    if proof.mask_commitment.num_vars != expected {
        return Err(ZkError::MaskCommitmentShape {
            num_vars: claim.num_vars,
            degree: claim.degree,
            expected,
            got: proof.mask_commitment.num_vars,
        });
    }
    absorb_commitment(transcript, &proof.mask_commitment);
    let masked_claim = verify_masked(claim, &proof.masked, transcript)?;
    let public = MaskPolynomial::evaluation_vector(claim.num_vars, claim.degree, &masked_claim.point)?;
    Hyrax::verify_inner_product_zk(
        params,
        &proof.mask_commitment,
        &public,
        proof.mask_value,
        &proof.mask_opening,
        transcript,
    )?;
    Ok(masked_claim.unmask(proof.mask_value))
}
