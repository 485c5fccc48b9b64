//! The interface both schemes implement, so protocols can be written once.

use crate::{
    Commitment, HyperKzg, Hyrax, HyraxCommitment, HyraxParams, HyraxProof, OpeningProof, PcsError, ProverKey,
    VerifierKey,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_transcript::Transcript;

/// A commitment scheme for multilinear polynomials over BN254's scalar field.
///
/// ```text
/// commit(pp, f) → C;   open(pp, f, C, u) → (π, f̃(u));   verify(vp, C, u, v, π) → ok | error
/// ```
///
/// `open` and `verify` absorb `(C, u, v)` into the transcript before any challenge, so the
/// caller's transcript binds the claim. The caller must check that `C` is the commitment it
/// expects (from its statement): the scheme only proves "the polynomial in C has value v at u".
pub trait MultilinearCommitmentScheme {
    /// What the prover needs (a key or public generators).
    type ProverParams;
    /// What the verifier needs.
    type VerifierParams;
    /// A commitment.
    type Commitment: Clone + PartialEq + CanonicalSerialize + CanonicalDeserialize;
    /// An opening proof.
    type Proof: Clone + PartialEq + CanonicalSerialize + CanonicalDeserialize;

    /// Commits to `f`.
    ///
    /// # Errors
    /// When the parameters are too small for `f`.
    fn commit(
        params: &Self::ProverParams,
        f: &DenseMultilinearExtension,
    ) -> Result<Self::Commitment, PcsError>;

    /// Opens `f` at `point`; returns the proof and `f̃(point)`.
    ///
    /// # Errors
    /// A point of the wrong length, or parameters too small for `f`.
    fn open(
        params: &Self::ProverParams,
        f: &DenseMultilinearExtension,
        commitment: &Self::Commitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(Self::Proof, Fr), PcsError>;

    /// Checks an opening.
    ///
    /// # Errors
    /// The scheme's typed error for the first failing check.
    fn verify(
        params: &Self::VerifierParams,
        commitment: &Self::Commitment,
        point: &[Fr],
        value: Fr,
        proof: &Self::Proof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError>;
}

impl MultilinearCommitmentScheme for HyperKzg {
    type ProverParams = ProverKey;
    type VerifierParams = VerifierKey;
    type Commitment = Commitment;
    type Proof = OpeningProof;

    fn commit(params: &ProverKey, f: &DenseMultilinearExtension) -> Result<Commitment, PcsError> {
        HyperKzg::commit(params, f)
    }

    fn open(
        params: &ProverKey,
        f: &DenseMultilinearExtension,
        commitment: &Commitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(OpeningProof, Fr), PcsError> {
        HyperKzg::open(params, f, commitment, point, transcript)
    }

    fn verify(
        params: &VerifierKey,
        commitment: &Commitment,
        point: &[Fr],
        value: Fr,
        proof: &OpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        HyperKzg::verify(params, commitment, point, value, proof, transcript)
    }
}

impl MultilinearCommitmentScheme for Hyrax {
    type ProverParams = HyraxParams;
    type VerifierParams = HyraxParams;
    type Commitment = HyraxCommitment;
    type Proof = HyraxProof;

    fn commit(params: &HyraxParams, f: &DenseMultilinearExtension) -> Result<HyraxCommitment, PcsError> {
        Hyrax::commit(params, f)
    }

    fn open(
        params: &HyraxParams,
        f: &DenseMultilinearExtension,
        commitment: &HyraxCommitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(HyraxProof, Fr), PcsError> {
        if f.num_vars() > params.max_num_vars {
            return Err(PcsError::SrsTooSmall { needed: f.num_vars(), available: params.max_num_vars });
        }
        Hyrax::open(f, commitment, point, transcript)
    }

    fn verify(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        point: &[Fr],
        value: Fr,
        proof: &HyraxProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        Hyrax::verify(params, commitment, point, value, proof, transcript)
    }
}
