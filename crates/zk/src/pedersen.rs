//! Pedersen commitments to single values, and the Σ-protocols that let a verifier check
//! arithmetic on committed values (Wahby et al. 2018, Hyrax, Appendix A).
//!
//! ```text
//! commitment   C = v·U + β·H                     U, H: HyraxParams' value and blinding generators
//! linear       Σ_i λ_i·C_i commits to Σ_i λ_i·v_i with blinding Σ_i λ_i·β_i (no proof needed)
//! opening      "C commits to the public t":  P → V  A = k·H;   c ← transcript;   P → V  z = k + c·β
//!              V checks  z·H = A + c·(C − t·U)
//! product      "C_z commits to x·y" for C_x, C_y, C_z:
//!              P → V  α = b₁U + b₂H,  β = b₃U + b₄H,  δ = b₃·C_x + b₅H;   c ← transcript
//!              P → V  z₁ = b₁ + c·x, z₂ = b₂ + c·β_x, z₃ = b₃ + c·y, z₄ = b₄ + c·β_y, z₅ = b₅ + c·(β_z − β_x·y)
//!              V checks  α + c·C_x = z₁U + z₂H,   β + c·C_y = z₃U + z₄H,   δ + c·C_z = z₃·C_x + z₅H
//! ```
//!
//! Both are special-sound (two answers to two challenges give the witness, or a discrete-log
//! relation between `U` and `H`) and honest-verifier zero knowledge: the responses are uniform
//! and the first messages are the unique values that make the checks pass
//! ([`OpeningProof::simulate`], [`ProductProof::simulate`]).

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::relation::Combination;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, Zero};
use zkmha_pcs::{G1Affine, G1Projective, GroupEquation, HyraxParams};
use zkmha_transcript::Transcript;

const LABEL_OPENING_STATEMENT: &[u8] = b"zk/opening/statement";
const LABEL_OPENING_VALUE: &[u8] = b"zk/opening/value";
const LABEL_OPENING_FIRST: &[u8] = b"zk/opening/first-message";
const LABEL_OPENING_CHALLENGE: &[u8] = b"zk/opening/challenge";
const LABEL_OPENING_RESPONSE: &[u8] = b"zk/opening/response";
const LABEL_PRODUCT_STATEMENT: &[u8] = b"zk/product/statement";
const LABEL_PRODUCT_FIRST: &[u8] = b"zk/product/first-message";
const LABEL_PRODUCT_CHALLENGE: &[u8] = b"zk/product/challenge";
const LABEL_PRODUCT_RESPONSES: &[u8] = b"zk/product/responses";

/// What the prover knows about a committed value: `C = value·U + blinding·H`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueOpening {
    /// `v`.
    pub value: Fr,
    /// `β`.
    pub blinding: Fr,
}

impl ValueOpening {
    /// `v` with a uniform blinding factor.
    pub fn hide<R: RngCore + CryptoRng>(value: Fr, rng: &mut R) -> Self {
        Self { value, blinding: Fr::rand(rng) }
    }

    /// A public value: blinding 0, so `C = v·U` is computable by anyone.
    pub fn public(value: Fr) -> Self {
        Self { value, blinding: Fr::zero() }
    }

    /// `C = v·U + β·H`.
    pub fn commit(&self, params: &HyraxParams) -> G1Projective {
        params.pedersen(self.value, self.blinding)
    }

    /// The opening of `self + λ·other`'s commitment (`C + λ·C'`).
    pub fn add_scaled(&self, lambda: Fr, other: &ValueOpening) -> Self {
        Self { value: self.value + lambda * other.value, blinding: self.blinding + lambda * other.blinding }
    }
}

fn absorb_points(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len());
    for point in points {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}

/// Proof that a commitment opens to a public value.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct OpeningProof {
    /// `A = k·H`.
    pub first_message: G1Affine,
    /// `z = k + c·β`.
    pub response: Fr,
}

impl OpeningProof {
    /// Proves that `commitment` (`= opening.commit(params)`) commits to `opening.value`.
    pub fn prove<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitment: G1Affine,
        opening: &ValueOpening,
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Self {
        absorb_points(transcript, LABEL_OPENING_STATEMENT, &[commitment]);
        transcript.append_field(LABEL_OPENING_VALUE, &opening.value);
        let nonce = Fr::rand(rng);
        let first_message = G1Affine::from(params.blinding_times(nonce));
        absorb_points(transcript, LABEL_OPENING_FIRST, &[first_message]);
        let challenge = transcript.challenge_field(LABEL_OPENING_CHALLENGE);
        let response = nonce + challenge * opening.blinding;
        transcript.append_field(LABEL_OPENING_RESPONSE, &response);
        Self { first_message, response }
    }

    /// Checks that `commitment` commits to `value`.
    ///
    /// # Errors
    /// [`ZkError::OpeningMismatch`].
    pub fn verify(
        &self,
        params: &HyraxParams,
        commitment: G1Affine,
        value: Fr,
        transcript: &mut Transcript,
    ) -> Result<(), ZkError> {
        let mut checks = DeferredChecks::new();
        self.verify_deferred(params, commitment, value, transcript, &mut checks);
        checks.finish(transcript)
    }

    /// [`Self::verify`] with its group equation left in `checks`.
    pub fn verify_deferred(
        &self,
        params: &HyraxParams,
        commitment: G1Affine,
        value: Fr,
        transcript: &mut Transcript,
        checks: &mut DeferredChecks,
    ) {
        absorb_points(transcript, LABEL_OPENING_STATEMENT, &[commitment]);
        transcript.append_field(LABEL_OPENING_VALUE, &value);
        absorb_points(transcript, LABEL_OPENING_FIRST, &[self.first_message]);
        let challenge = transcript.challenge_field(LABEL_OPENING_CHALLENGE);
        transcript.append_field(LABEL_OPENING_RESPONSE, &self.response);
        checks.push(self.equation(params, commitment, value, challenge), ZkError::OpeningMismatch);
    }

    /// `z·H − A − c·C + c·t·U = 0`.
    fn equation(
        &self,
        params: &HyraxParams,
        commitment: G1Affine,
        value: Fr,
        challenge: Fr,
    ) -> GroupEquation {
        GroupEquation::new(
            vec![params.blinding_generator, self.first_message, commitment, params.value_generator],
            vec![self.response, -Fr::from(1u64), -challenge, challenge * value],
        )
    }

    /// [`Self::prove`] for a commitment given as a combination (never evaluated): the
    /// transcript must already determine the combination, so only the value is absorbed —
    /// hence crate-private (the zero-knowledge sum-check's masked sum, whose parts it absorbed).
    pub(crate) fn prove_combination<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        opening: &ValueOpening,
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Self {
        transcript.append_field(LABEL_OPENING_VALUE, &opening.value);
        let nonce = Fr::rand(rng);
        let first_message = G1Affine::from(params.blinding_times(nonce));
        absorb_points(transcript, LABEL_OPENING_FIRST, &[first_message]);
        let challenge = transcript.challenge_field(LABEL_OPENING_CHALLENGE);
        let response = nonce + challenge * opening.blinding;
        transcript.append_field(LABEL_OPENING_RESPONSE, &response);
        Self { first_message, response }
    }

    /// [`Self::verify_deferred`] for a commitment given as a combination (which the transcript
    /// must already determine, as for [`Self::prove_combination`]).
    pub(crate) fn verify_combination_deferred(
        &self,
        params: &HyraxParams,
        commitment: &Combination,
        value: Fr,
        transcript: &mut Transcript,
        checks: &mut DeferredChecks,
    ) {
        transcript.append_field(LABEL_OPENING_VALUE, &value);
        absorb_points(transcript, LABEL_OPENING_FIRST, &[self.first_message]);
        let challenge = transcript.challenge_field(LABEL_OPENING_CHALLENGE);
        transcript.append_field(LABEL_OPENING_RESPONSE, &self.response);
        let mut bases = vec![params.blinding_generator, self.first_message, params.value_generator];
        let mut scalars = vec![self.response, -Fr::from(1u64), challenge * value];
        for (s, p) in &commitment.0 {
            bases.push(*p);
            scalars.push(-challenge * s);
        }
        checks.push(GroupEquation::new(bases, scalars), ZkError::OpeningMismatch);
    }

    /// The interactive check for a given challenge.
    ///
    /// # Errors
    /// [`ZkError::OpeningMismatch`].
    pub fn check_with_challenge(
        &self,
        params: &HyraxParams,
        commitment: G1Affine,
        value: Fr,
        challenge: Fr,
    ) -> Result<(), ZkError> {
        self.equation(params, commitment, value, challenge).holds().map_err(|_| ZkError::OpeningMismatch)
    }

    /// The honest-verifier simulator: an accepting answer for any commitment and value.
    pub fn simulate<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitment: G1Affine,
        value: Fr,
        challenge: Fr,
        rng: &mut R,
    ) -> Self {
        let response = Fr::rand(rng);
        let first_message = G1Affine::from(
            params.blinding_generator * response - (commitment - params.value_generator * value) * challenge,
        );
        Self { first_message, response }
    }
}

/// Proof that a committed value is the product of two committed values.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProductProof {
    /// `α, β, δ`.
    pub first_messages: [G1Affine; 3],
    /// `z₁ … z₅`.
    pub responses: [Fr; 5],
}

impl ProductProof {
    /// Proves that `commitments[2]` commits to the product of what `commitments[0..2]` commit
    /// to (the prover's openings in the same order).
    pub fn prove<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitments: [G1Affine; 3],
        openings: [&ValueOpening; 3],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Self {
        let [x, y, z] = openings;
        let b: [Fr; 5] = std::array::from_fn(|_| Fr::rand(rng));
        let alpha = params.pedersen(b[0], b[1]);
        let beta = params.pedersen(b[2], b[3]);
        let delta = commitments[0] * b[2] + params.blinding_times(b[4]);
        let first_messages = [alpha.into(), beta.into(), delta.into()];
        absorb_points(transcript, LABEL_PRODUCT_STATEMENT, &commitments);
        absorb_points(transcript, LABEL_PRODUCT_FIRST, &first_messages);
        let c = transcript.challenge_field(LABEL_PRODUCT_CHALLENGE);
        let responses = [
            b[0] + c * x.value,
            b[1] + c * x.blinding,
            b[2] + c * y.value,
            b[3] + c * y.blinding,
            b[4] + c * (z.blinding - x.blinding * y.value),
        ];
        transcript.append_fields(LABEL_PRODUCT_RESPONSES, &responses);
        Self { first_messages, responses }
    }

    /// Checks the product relation of the three commitments.
    ///
    /// # Errors
    /// [`ZkError::ProductMismatch`].
    pub fn verify(
        &self,
        params: &HyraxParams,
        commitments: [G1Affine; 3],
        transcript: &mut Transcript,
    ) -> Result<(), ZkError> {
        let mut checks = DeferredChecks::new();
        self.verify_deferred(params, commitments, transcript, &mut checks);
        checks.finish(transcript)
    }

    /// [`Self::verify`] with its three group equations left in `checks`.
    pub fn verify_deferred(
        &self,
        params: &HyraxParams,
        commitments: [G1Affine; 3],
        transcript: &mut Transcript,
        checks: &mut DeferredChecks,
    ) {
        absorb_points(transcript, LABEL_PRODUCT_STATEMENT, &commitments);
        absorb_points(transcript, LABEL_PRODUCT_FIRST, &self.first_messages);
        let c = transcript.challenge_field(LABEL_PRODUCT_CHALLENGE);
        transcript.append_fields(LABEL_PRODUCT_RESPONSES, &self.responses);
        for equation in self.equations(params, commitments, c) {
            checks.push(equation, ZkError::ProductMismatch);
        }
    }

    /// `α + c·C_x − z₁U − z₂H = 0`, `β + c·C_y − z₃U − z₄H = 0`, `δ + c·C_z − z₃·C_x − z₅H = 0`.
    fn equations(&self, params: &HyraxParams, commitments: [G1Affine; 3], c: Fr) -> [GroupEquation; 3] {
        let (u, h) = (params.value_generator, params.blinding_generator);
        let [alpha, beta, delta] = self.first_messages;
        let [z1, z2, z3, z4, z5] = self.responses;
        let [cx, cy, cz] = commitments;
        let one = Fr::from(1u64);
        [
            GroupEquation::new(vec![alpha, cx, u, h], vec![one, c, -z1, -z2]),
            GroupEquation::new(vec![beta, cy, u, h], vec![one, c, -z3, -z4]),
            GroupEquation::new(vec![delta, cz, cx, h], vec![one, c, -z3, -z5]),
        ]
    }

    /// The interactive checks for a given challenge.
    ///
    /// # Errors
    /// [`ZkError::ProductMismatch`].
    pub fn check_with_challenge(
        &self,
        params: &HyraxParams,
        commitments: [G1Affine; 3],
        c: Fr,
    ) -> Result<(), ZkError> {
        self.equations(params, commitments, c)
            .iter()
            .try_for_each(|e| e.holds().map_err(|_| ZkError::ProductMismatch))
    }

    /// The honest-verifier simulator: an accepting answer for any three commitments.
    pub fn simulate<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitments: [G1Affine; 3],
        c: Fr,
        rng: &mut R,
    ) -> Self {
        let (u, h) = (params.value_generator, params.blinding_generator);
        let responses: [Fr; 5] = std::array::from_fn(|_| Fr::rand(rng));
        let [z1, z2, z3, z4, z5] = responses;
        let [cx, cy, cz] = commitments;
        let alpha = u * z1 + h * z2 - cx * c;
        let beta = u * z3 + h * z4 - cy * c;
        let delta = cx * z3 + h * z5 - cz * c;
        Self { first_messages: [alpha.into(), beta.into(), delta.into()], responses }
    }
}
