//! Hiding Hyrax: blinded row commitments and zero-knowledge openings (the proof of dot
//! product of Wahby et al. 2018, §A, in its one-round linear form).
//!
//! ```text
//! commit     C_i = Σ_j M[i][j]·G_j + b_i·H            b_i uniform (HyraxBlinds, prover only)
//! statement  commitments, point u = [u_col ‖ u_row] (or a public vector R), claimed value v
//! combine    C_w = Σ_i L_i·C_i  commits to w = Lᵀ·M with blinding β = Σ_i L_i·b_i,
//!            R = eq(·, u_col),  ⟨w, R⟩ = v                     (batches: Σ_t ρ_t·(…) as in open_batch)
//! P → V      A = Σ_j d_j·G_j + r_A·H,  δ = ⟨d, R⟩               d, r_A uniform
//! V → P      c ← transcript
//! P → V      z = c·w + d,  z_β = c·β + r_A
//! V checks   ⟨z, R⟩ = c·v + δ   and   Σ_j z_j·G_j + z_β·H = c·C_w + A
//! ```
//!
//! Zero knowledge (honest verifier, then Fiat–Shamir): the commitments are uniform group
//! elements whatever the table (each row has its own uniform `b_i`); `z` and `z_β` are uniform
//! (shifted by the uniform `d`, `r_A`), and `δ`, `A` are the unique values that make the two
//! checks pass, so a simulator picks `z, z_β` uniformly and solves for `δ` and `A` without `w`.
//! Special soundness: two accepting answers to `c ≠ c'` give `w = (z − z')/(c − c')` and
//! `β = (z_β − z_β')/(c − c')` with `C_w = Σ_j w_j·G_j + β·H` and `⟨w, R⟩ = v`, so a false `v`
//! needs a discrete-log relation between `G_1, …, G_k, H` (hashed to the curve, none known).
//!
//! The proof is one group element and `2^c + 3` field elements: one more point and three more
//! field elements than the plain opening's combined row `w`, which this one never reveals.

use crate::ZkInnerProductProof;
use crate::hyrax::{GroupEquation, absorb, batch_layout, combined_commitment_terms, combined_row_and_value};
use crate::{G1Affine, G1Projective, Hyrax, HyraxCommitment, HyraxParams, PcsError, PolynomialTable};
use ark_ec::scalar_mul::ScalarMul;
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use rayon::prelude::*;
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_transcript::Transcript;

const LABEL_ZK_BATCH: &[u8] = b"pcs/hyrax-zk/batch-coefficients";
const LABEL_ZK_MASK_COMMITMENT: &[u8] = b"pcs/hyrax-zk/mask-commitment";
const LABEL_ZK_MASK_VALUE: &[u8] = b"pcs/hyrax-zk/mask-value";
const LABEL_ZK_CHALLENGE: &[u8] = b"pcs/hyrax-zk/challenge";
const LABEL_ZK_PUBLIC_VECTOR: &[u8] = b"pcs/hyrax-zk/public-vector";

/// The blinding factors of a hiding commitment, one per row (the prover's secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HyraxBlinds {
    /// `b_i`.
    pub rows: Vec<Fr>,
}

impl HyraxBlinds {
    /// The blind of the combination `Σ_u w_u·C_u` of a commitment's rows
    /// ([`crate::HyraxCommitment::combine_rows`]): `Σ_u w_u·b_u`, one row.
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for a row the blinds do not have.
    pub fn combine_rows(&self, weights: &[(usize, Fr)]) -> Result<HyraxBlinds, PcsError> {
        let mut blind = Fr::zero();
        for (row, weight) in weights {
            blind +=
                *self.rows.get(*row).ok_or(PcsError::MalformedProof("a combination names a missing row"))?
                    * weight;
        }
        Ok(HyraxBlinds { rows: vec![blind] })
    }
}

/// A zero-knowledge opening: a proof of dot product that never shows the combined row.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkOpeningProof {
    /// `A = Σ_j d_j·G_j + r_A·H`.
    pub mask_commitment: G1Affine,
    /// `δ = ⟨d, R⟩`.
    pub mask_value: Fr,
    /// `z = c·w + d`.
    pub response: Vec<Fr>,
    /// `z_β = c·β + r_A`.
    pub blinding_response: Fr,
}

/// A zero-knowledge opening whose value stays hidden in a Pedersen commitment
/// `C_v = v·U + β_v·H`: the proof of dot product with `δ` committed as `B = δ·U + r_B·H`, and
/// `⟨z, R⟩·U + z_δ·H = c·C_v + B` in place of the field check.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkCommittedOpeningProof {
    /// `A = Σ_j d_j·G_j + r_A·H`.
    pub mask_commitment: G1Affine,
    /// `B = ⟨d, R⟩·U + r_B·H`.
    pub mask_value_commitment: G1Affine,
    /// `z = c·w + d`.
    pub response: Vec<Fr>,
    /// `z_β = c·β + r_A`.
    pub blinding_response: Fr,
    /// `z_δ = c·β_v + r_B`.
    pub value_blinding_response: Fr,
}

const LABEL_ZK_VALUE_COMMITMENT: &[u8] = b"pcs/hyrax-zk/value-commitment";
const LABEL_ZK_EQUATION_WEIGHT: &[u8] = b"pcs/hyrax-zk/equation-weight";

/// `Σ z_j·G_j + z_β·H − c·C − A = 0` and `⟨z, R⟩·U + z_δ·H − c·C_v − B = 0`.
fn committed_equations(
    params: &HyraxParams,
    generators: &[G1Affine],
    combined: (Vec<G1Affine>, Vec<Fr>),
    public: &[Fr],
    value_commitment: G1Affine,
    proof: &ZkCommittedOpeningProof,
    challenge: Fr,
) -> [GroupEquation; 2] {
    let inner: Fr = proof.response.iter().zip(public).map(|(z, r)| *z * r).sum();
    let (mut bases, combined_scalars) = combined;
    let mut scalars: Vec<Fr> = combined_scalars.into_iter().map(|s| -(challenge * s)).collect();
    bases.extend_from_slice(generators);
    scalars.extend_from_slice(&proof.response);
    bases.extend([params.blinding_generator, proof.mask_commitment]);
    scalars.extend([proof.blinding_response, -Fr::from(1u64)]);
    let rows = GroupEquation { bases, scalars };
    let value = GroupEquation {
        bases: vec![
            params.value_generator,
            params.blinding_generator,
            value_commitment,
            proof.mask_value_commitment,
        ],
        scalars: vec![inner, proof.value_blinding_response, -challenge, -Fr::from(1u64)],
    };
    [rows, value]
}

const LABEL_ZK_RESPONSES: &[u8] = b"pcs/hyrax-zk/responses";

impl ZkOpeningProof {
    /// Absorbs the final responses `z`, `z_β` (after the challenge, before anything else).
    fn absorb_responses(&self, transcript: &mut Transcript) {
        transcript.append_fields(LABEL_ZK_RESPONSES, &self.response);
        transcript.append_field(LABEL_ZK_RESPONSES, &self.blinding_response);
    }
}

impl ZkCommittedOpeningProof {
    /// Absorbs the final responses `z`, `z_β`, `z_δ` (after the challenge, before anything
    /// else).
    fn absorb_responses(&self, transcript: &mut Transcript) {
        transcript.append_fields(LABEL_ZK_RESPONSES, &self.response);
        transcript.append_fields(LABEL_ZK_RESPONSES, &[self.blinding_response, self.value_blinding_response]);
    }
}

impl ZkCommittedOpeningProof {
    /// The honest-verifier simulator of [`Hyrax::prove_inner_product_committed`]: an
    /// accepting answer for any vector commitment, value commitment and challenge, made without
    /// the vector or the value (`z`, `z_β`, `z_δ` uniform; `A` and `B` solved from the checks).
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] when `commitment` is not a vector commitment long enough
    /// for `public`.
    pub fn simulate<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value_commitment: G1Affine,
        challenge: Fr,
        rng: &mut R,
    ) -> Result<Self, PcsError> {
        let (generators, padded_public) = Hyrax::vector_layout(params, commitment, public)?;
        let row = commitment_row(commitment)?;
        let response: Vec<Fr> = generators.iter().map(|_| Fr::rand(rng)).collect();
        let (blinding_response, value_blinding_response) = (Fr::rand(rng), Fr::rand(rng));
        let inner: Fr = response.iter().zip(&padded_public).map(|(z, r)| *z * r).sum();
        let mask_commitment = (G1Projective::msm_unchecked(generators, &response)
            + params.blinding_generator * blinding_response
            - row * challenge)
            .into_affine();
        let mask_value_commitment = (params.value_generator * inner
            + params.blinding_generator * value_blinding_response
            - value_commitment * challenge)
            .into_affine();
        Ok(Self {
            mask_commitment,
            mask_value_commitment,
            response,
            blinding_response,
            value_blinding_response,
        })
    }
}

/// The prover's half of the proof of dot product with a committed value: `row` (blinding
/// `β`) against `public`, the value's blinding `β_v`.
fn prove_dot_product_committed<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    generators: &[G1Affine],
    (row, blinding): (&[Fr], Fr),
    public: &[Fr],
    value_blinding: Fr,
    transcript: &mut Transcript,
    rng: &mut R,
) -> ZkCommittedOpeningProof {
    let mask: Vec<Fr> = (0..generators.len()).map(|_| Fr::rand(rng)).collect();
    let (mask_blinding, mask_value_blinding) = (Fr::rand(rng), Fr::rand(rng));
    let mask_commitment = (G1Projective::msm_unchecked(generators, &mask)
        + params.blinding_generator * mask_blinding)
        .into_affine();
    let mask_value: Fr = mask.iter().zip(public).map(|(d, r)| *d * r).sum();
    let mask_value_commitment = params.pedersen(mask_value, mask_value_blinding).into_affine();
    absorb_point(transcript, LABEL_ZK_MASK_COMMITMENT, mask_commitment);
    absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, mask_value_commitment);
    let challenge = transcript.challenge_field(LABEL_ZK_CHALLENGE);
    let response = row.iter().zip(&mask).map(|(w, d)| challenge * w + d).collect();
    let proof = ZkCommittedOpeningProof {
        mask_commitment,
        mask_value_commitment,
        response,
        blinding_response: challenge * blinding + mask_blinding,
        value_blinding_response: challenge * value_blinding + mask_value_blinding,
    };
    proof.absorb_responses(transcript);
    proof
}

/// Adds `b_i·H` to each row (fixed-base batch multiplication: one table for all rows).
fn blind_rows<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    commitment: HyraxCommitment,
    rng: &mut R,
) -> (HyraxCommitment, HyraxBlinds) {
    let blinds: Vec<Fr> = commitment.rows.iter().map(|_| Fr::rand(rng)).collect();
    let shifts = G1Projective::from(params.blinding_generator).batch_mul(&blinds);
    let rows: Vec<G1Projective> =
        commitment.rows.par_iter().zip(&shifts).map(|(row, shift)| row.into_group() + shift).collect();
    (
        HyraxCommitment { num_vars: commitment.num_vars, rows: G1Projective::normalize_batch(&rows) },
        HyraxBlinds { rows: blinds },
    )
}

/// The prover's half of the proof of dot product for `C_w` (blinding `β`), `⟨w, R⟩ = v`.
fn prove_dot_product<R: RngCore + CryptoRng>(
    generators: &[G1Affine],
    blinding_generator: G1Affine,
    row: &[Fr],
    blinding: Fr,
    public: &[Fr],
    transcript: &mut Transcript,
    rng: &mut R,
) -> ZkOpeningProof {
    let mask: Vec<Fr> = row.iter().map(|_| Fr::rand(rng)).collect();
    let mask_blinding = Fr::rand(rng);
    let commitment = G1Projective::msm_unchecked(generators, &mask) + blinding_generator * mask_blinding;
    let mask_commitment = commitment.into_affine();
    let mask_value: Fr = mask.iter().zip(public).map(|(d, r)| *d * r).sum();
    absorb_mask(transcript, &mask_commitment, &mask_value);
    let challenge = transcript.challenge_field(LABEL_ZK_CHALLENGE);
    let response = row.iter().zip(&mask).map(|(w, d)| challenge * w + d).collect();
    let proof = ZkOpeningProof {
        mask_commitment,
        mask_value,
        response,
        blinding_response: challenge * blinding + mask_blinding,
    };
    proof.absorb_responses(transcript);
    proof
}

const LABEL_ZK_COMMITTED_VECTOR: &[u8] = b"pcs/hyrax-zk/committed-vector";

fn absorb_point(transcript: &mut Transcript, label: &'static [u8], point: G1Affine) {
    let mut bytes = Vec::with_capacity(32);
    let _ = point.serialize_compressed(&mut bytes);
    transcript.append_bytes(label, &bytes);
}

/// The one row of a vector commitment.
fn commitment_row(commitment: &HyraxCommitment) -> Result<G1Affine, PcsError> {
    match commitment.rows.as_slice() {
        [row] => Ok(*row),
        _ => Err(PcsError::MalformedProof("a vector commitment has one row")),
    }
}

fn absorb_mask(transcript: &mut Transcript, commitment: &G1Affine, value: &Fr) {
    let mut bytes = Vec::with_capacity(32);
    let _ = commitment.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_ZK_MASK_COMMITMENT, &bytes);
    transcript.append_field(LABEL_ZK_MASK_VALUE, value);
}

/// The verifier's half: checks `⟨z, R⟩ = c·v + δ` and returns the group equation
/// `Σ_j z_j·G_j + z_β·H − c·C_w − A = 0` with `C_w = Σ_k s_k·B_k` given as terms.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn check_dot_product(
    generators: &[G1Affine],
    blinding_generator: G1Affine,
    combined: (Vec<G1Affine>, Vec<Fr>),
    public: &[Fr],
    value: Fr,
    proof: &ZkOpeningProof,
    transcript: &mut Transcript,
) -> Result<GroupEquation, PcsError> {
    absorb_mask(transcript, &proof.mask_commitment, &proof.mask_value);
    let challenge = transcript.challenge_field(LABEL_ZK_CHALLENGE);
    proof.absorb_responses(transcript);
    dot_product_equations(generators, blinding_generator, combined, public, value, proof, challenge)
}

/// The interactive verifier's checks for a given challenge `c`.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn dot_product_equations(
    generators: &[G1Affine],
    blinding_generator: G1Affine,
    combined: (Vec<G1Affine>, Vec<Fr>),
    public: &[Fr],
    value: Fr,
    proof: &ZkOpeningProof,
    challenge: Fr,
) -> Result<GroupEquation, PcsError> {
    if proof.response.len() != generators.len() || public.len() != generators.len() {
        return Err(PcsError::MalformedProof("the zero-knowledge opening's response has the wrong length"));
    }
    let inner: Fr = proof.response.iter().zip(public).map(|(z, r)| *z * r).sum();
    if inner != challenge * value + proof.mask_value {
        return Err(PcsError::ZkInnerProductMismatch);
    }
    let (mut bases, scalars) = combined;
    let mut scalars: Vec<Fr> = scalars.into_iter().map(|s| -(challenge * s)).collect();
    bases.extend_from_slice(generators);
    scalars.extend_from_slice(&proof.response);
    bases.push(blinding_generator);
    scalars.push(proof.blinding_response);
    bases.push(proof.mask_commitment);
    scalars.push(-Fr::from(1u64));
    Ok(GroupEquation { bases, scalars })
}

impl ZkOpeningProof {
    /// The honest-verifier simulator of [`Hyrax::prove_inner_product_zk`]: an accepting answer
    /// for any `value` and challenge `c`, made without the committed vector (`z`, `z_β`
    /// uniform; `δ = ⟨z, R⟩ − c·v`, `A = Σ_j z_j·G_j + z_β·H − c·C`). Its output has the
    /// distribution of a real proof of a true value, which is the zero-knowledge argument.
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] when `commitment` is not a vector commitment long enough
    /// for `public`.
    pub fn simulate<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value: Fr,
        challenge: Fr,
        rng: &mut R,
    ) -> Result<Self, PcsError> {
        let (generators, padded_public) = Hyrax::vector_layout(params, commitment, public)?;
        let row = commitment.rows.first().copied().ok_or(PcsError::MalformedProof("empty commitment"))?;
        let response: Vec<Fr> = generators.iter().map(|_| Fr::rand(rng)).collect();
        let blinding_response = Fr::rand(rng);
        let inner: Fr = response.iter().zip(&padded_public).map(|(z, r)| *z * r).sum();
        let mask_commitment = (G1Projective::msm_unchecked(generators, &response)
            + params.blinding_generator * blinding_response
            - row * challenge)
            .into_affine();
        Ok(Self { mask_commitment, mask_value: inner - challenge * value, response, blinding_response })
    }
}

impl Hyrax {
    /// A hiding commitment to a table of small integers (layout as
    /// [`Hyrax::commit_small_with_columns`]); the blinds stay with the prover.
    ///
    /// # Errors
    /// As [`Hyrax::commit_small_with_columns`].
    pub fn commit_small_hiding<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        rng: &mut R,
    ) -> Result<(HyraxCommitment, HyraxBlinds), PcsError> {
        let plain = Self::commit_small_with_columns(params, num_vars, column_vars, values)?;
        Ok(blind_rows(params, plain, rng))
    }

    /// A hiding commitment to a field table (layout as [`Hyrax::commit_with_columns`]).
    ///
    /// # Errors
    /// As [`Hyrax::commit_with_columns`].
    pub fn commit_hiding<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        f: &DenseMultilinearExtension,
        column_vars: usize,
        rng: &mut R,
    ) -> Result<(HyraxCommitment, HyraxBlinds), PcsError> {
        let plain = Self::commit_with_columns(params, f, column_vars)?;
        Ok(blind_rows(params, plain, rng))
    }

    /// A hiding commitment to a short vector (one row, zero-padded to a power of two): for
    /// values opened by [`Self::prove_inner_product_zk`], such as a sum-check's mask.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] when the vector is longer than the generators.
    pub fn commit_vector_hiding<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        vector: &[Fr],
        rng: &mut R,
    ) -> Result<(HyraxCommitment, HyraxBlinds), PcsError> {
        let table = DenseMultilinearExtension::from_vector_padded(vector.to_vec())?;
        Self::commit_hiding(params, &table, table.num_vars(), rng)
    }

    /// Proves `⟨vector, public⟩ = value` for a vector committed with
    /// [`Self::commit_vector_hiding`], without revealing the vector; returns the proof and
    /// the value.
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] when the commitment is not one row or the lengths differ.
    pub fn prove_inner_product_zk<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        vector: &[Fr],
        commitment: &HyraxCommitment,
        blinds: &HyraxBlinds,
        public: &[Fr],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<(ZkOpeningProof, Fr), PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        if vector.len() != public.len() {
            return Err(PcsError::MalformedProof("the vector and the public vector differ in length"));
        }
        let blinding = blinds.rows.first().copied().ok_or(PcsError::MalformedProof("no blinding factor"))?;
        let mut row = vector.to_vec();
        row.resize(generators.len(), Fr::zero());
        let value: Fr = vector.iter().zip(public).map(|(a, b)| *a * b).sum();
        Self::absorb_vector_statement(transcript, commitment, public, &value);
        let proof = prove_dot_product(
            generators,
            params.blinding_generator,
            &row,
            blinding,
            &padded_public,
            transcript,
            rng,
        );
        Ok((proof, value))
    }

    /// Verifies [`Self::prove_inner_product_zk`].
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for wrong lengths, [`PcsError::ZkInnerProductMismatch`]
    /// or [`PcsError::ZkCommitmentMismatch`] for a false value or a forged proof.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_inner_product_zk(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value: Fr,
        proof: &ZkOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        let row = commitment.rows.first().copied().ok_or(PcsError::MalformedProof("empty commitment"))?;
        Self::absorb_vector_statement(transcript, commitment, public, &value);
        check_dot_product(
            generators,
            params.blinding_generator,
            (vec![row], vec![Fr::from(1u64)]),
            &padded_public,
            value,
            proof,
            transcript,
        )?
        .holds()
        .map_err(|_| PcsError::ZkCommitmentMismatch)
    }

    /// The interactive verifier of [`Self::prove_inner_product_zk`] for a challenge `c` given
    /// by the caller (the non-interactive [`Self::verify_inner_product_zk`] draws `c` from the
    /// transcript): what [`ZkOpeningProof::simulate`] is checked against.
    ///
    /// # Errors
    /// As [`Self::verify_inner_product_zk`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn check_inner_product_zk_with_challenge(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value: Fr,
        proof: &ZkOpeningProof,
        challenge: Fr,
    ) -> Result<(), PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        let row = commitment.rows.first().copied().ok_or(PcsError::MalformedProof("empty commitment"))?;
        dot_product_equations(
            generators,
            params.blinding_generator,
            (vec![row], vec![Fr::from(1u64)]),
            &padded_public,
            value,
            proof,
            challenge,
        )?
        .holds()
        .map_err(|_| PcsError::ZkCommitmentMismatch)
    }

    /// Proves `⟨vector, public⟩ = v` for a committed vector, with `v` itself committed:
    /// returns the proof, `C_v = v·U + β_v·H` and the prover's `(v, β_v)`.
    ///
    /// # Errors
    /// As [`Self::prove_inner_product_zk`].
    #[allow(clippy::type_complexity)]
    pub fn prove_inner_product_committed<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        vector: &[Fr],
        commitment: &HyraxCommitment,
        blinds: &HyraxBlinds,
        public: &[Fr],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<(ZkCommittedOpeningProof, G1Affine, (Fr, Fr)), PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        if vector.len() != public.len() {
            return Err(PcsError::MalformedProof("the vector and the public vector differ in length"));
        }
        let blinding = blinds.rows.first().copied().ok_or(PcsError::MalformedProof("no blinding factor"))?;
        let value: Fr = vector.iter().zip(public).map(|(a, b)| *a * b).sum();
        let value_blinding = Fr::rand(rng);
        let value_commitment =
            (params.value_generator * value + params.blinding_generator * value_blinding).into_affine();
        transcript.append_fields(LABEL_ZK_PUBLIC_VECTOR, public);
        absorb_point(transcript, LABEL_ZK_COMMITTED_VECTOR, commitment_row(commitment)?);
        absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, value_commitment);
        let mut row = vector.to_vec();
        row.resize(generators.len(), Fr::zero());
        let proof = prove_dot_product_committed(
            params,
            generators,
            (&row, blinding),
            &padded_public,
            value_blinding,
            transcript,
            rng,
        );
        Ok((proof, value_commitment, (value, value_blinding)))
    }

    /// Verifies [`Self::prove_inner_product_committed`] against the value commitment `C_v`.
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for wrong lengths or shapes, [`PcsError::ZkCommitmentMismatch`]
    /// when either group equation fails.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_inner_product_committed(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value_commitment: G1Affine,
        proof: &ZkCommittedOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let equations = Self::inner_product_committed_equations(
            params,
            commitment,
            public,
            value_commitment,
            proof,
            transcript,
        )?;
        // Weights drawn after both equations (every response) are absorbed, from a copy: the
        // transcript goes on exactly as the prover's.
        GroupEquation::all_hold_for_transcript(transcript, LABEL_ZK_EQUATION_WEIGHT, &equations)
            .map_err(|_| PcsError::ZkCommitmentMismatch)
    }

    /// [`Self::verify_inner_product_committed`] without its final group check: the two group
    /// equations are returned for the caller to check (with others, in one MSM).
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for wrong lengths or shapes.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn inner_product_committed_equations(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value_commitment: G1Affine,
        proof: &ZkCommittedOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<[GroupEquation; 2], PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        if proof.response.len() != generators.len() {
            return Err(PcsError::MalformedProof(
                "the zero-knowledge opening's response has the wrong length",
            ));
        }
        let row = commitment_row(commitment)?;
        transcript.append_fields(LABEL_ZK_PUBLIC_VECTOR, public);
        absorb_point(transcript, LABEL_ZK_COMMITTED_VECTOR, row);
        absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, value_commitment);
        absorb_point(transcript, LABEL_ZK_MASK_COMMITMENT, proof.mask_commitment);
        absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, proof.mask_value_commitment);
        let challenge = transcript.challenge_field(LABEL_ZK_CHALLENGE);
        proof.absorb_responses(transcript);
        Ok(committed_equations(
            params,
            generators,
            (vec![row], vec![Fr::from(1u64)]),
            &padded_public,
            value_commitment,
            proof,
            challenge,
        ))
    }

    /// The interactive verifier of [`Self::prove_inner_product_committed`] for a challenge
    /// given by the caller; what [`ZkCommittedOpeningProof::simulate`] is checked against.
    ///
    /// # Errors
    /// As [`Self::verify_inner_product_committed`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn check_inner_product_committed_with_challenge(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value_commitment: G1Affine,
        proof: &ZkCommittedOpeningProof,
        challenge: Fr,
    ) -> Result<(), PcsError> {
        let (generators, padded_public) = Self::vector_layout(params, commitment, public)?;
        if proof.response.len() != generators.len() {
            return Err(PcsError::MalformedProof(
                "the zero-knowledge opening's response has the wrong length",
            ));
        }
        let row = commitment_row(commitment)?;
        let equations = committed_equations(
            params,
            generators,
            (vec![row], vec![Fr::from(1u64)]),
            &padded_public,
            value_commitment,
            proof,
            challenge,
        );
        equations.iter().try_for_each(|e| e.holds().map_err(|_| PcsError::ZkCommitmentMismatch))
    }

    fn vector_layout<'p>(
        params: &'p HyraxParams,
        commitment: &HyraxCommitment,
        public: &[Fr],
    ) -> Result<(&'p [G1Affine], Vec<Fr>), PcsError> {
        if commitment.rows.len() != 1 {
            return Err(PcsError::MalformedProof("a vector commitment has one row"));
        }
        let generators = Self::bases(params, commitment.num_vars, commitment.num_vars)?;
        if public.len() > generators.len() {
            return Err(PcsError::MalformedProof("the public vector is longer than the commitment"));
        }
        let mut padded = public.to_vec();
        padded.resize(generators.len(), Fr::zero());
        Ok((generators, padded))
    }

    fn absorb_vector_statement(
        transcript: &mut Transcript,
        commitment: &HyraxCommitment,
        public: &[Fr],
        value: &Fr,
    ) {
        transcript.append_fields(LABEL_ZK_PUBLIC_VECTOR, public);
        absorb(transcript, commitment, &[], value);
    }

    /// The verifier's side shared by the openings against committed values: absorbs the batch,
    /// draws its coefficients and returns them with `C_v = Σ_t ρ_t·s_t·C_{v_t}`.
    fn absorb_committed_batch(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], G1Affine)],
        scales: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(Vec<Fr>, G1Projective), PcsError> {
        for (commitment, point, value_commitment) in items {
            Self::check_size(params, commitment.num_vars)?;
            absorb(transcript, commitment, point, &Fr::zero());
            absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, *value_commitment);
        }
        let coefficients = transcript.challenge_fields(LABEL_ZK_BATCH, items.len());
        let combined_value =
            items.iter().zip(&coefficients).zip(scales).map(|(((_, _, c), r), s)| *c * (*r * s)).sum();
        Ok((coefficients, combined_value))
    }

    /// The prover's side shared by the openings against committed values: checks each item,
    /// absorbs the batch, draws its coefficients and combines the rows. Returns the generators,
    /// the column point, the combined row, its blinding and the combined value's blinding.
    #[allow(clippy::type_complexity)]
    fn combine_committed_batch<'p>(
        params: &'p HyraxParams,
        items: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds, &[Fr], (G1Affine, Fr, Fr))],
        transcript: &mut Transcript,
    ) -> Result<(&'p [G1Affine], Vec<Fr>, Vec<Fr>, Fr, Fr), PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(_, c, _, p, _)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let generators = Self::bases(params, column_point.len(), column_point.len())?;
        let mut rows = Vec::with_capacity(items.len());
        for (f, commitment, blinds, point, (value_commitment, value, _)) in items {
            if blinds.rows.len() != commitment.rows.len() {
                return Err(PcsError::MalformedProof("one blinding factor per committed row"));
            }
            let (row, actual) = combined_row_and_value(*f, point, commitment.column_vars()?)?;
            if actual != *value {
                return Err(PcsError::MalformedProof(
                    "a committed value is not the table's value at the point",
                ));
            }
            absorb(transcript, commitment, point, &Fr::zero());
            absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, *value_commitment);
            rows.push(row);
        }
        let coefficients = transcript.challenge_fields(LABEL_ZK_BATCH, items.len());
        let mut combined_row = vec![Fr::zero(); generators.len()];
        let (mut blinding, mut value_blinding) = (Fr::zero(), Fr::zero());
        for (((row, c), (_, commitment, blinds, point, (_, _, beta))), s) in
            rows.iter().zip(&coefficients).zip(items).zip(&scales)
        {
            combined_row.par_iter_mut().zip(row.par_iter()).for_each(|(w, x)| *w += *c * x);
            let row_point = point.get(commitment.column_vars()?..).unwrap_or_default();
            blinding += *c * blinds.rows.iter().zip(eq_table(row_point)).map(|(b, l)| *b * l).sum::<Fr>();
            value_blinding += *c * s * beta;
        }
        Ok((generators, column_point.to_vec(), combined_row, blinding, value_blinding))
    }

    /// Opens several hidden polynomials at points sharing their column part (as
    /// [`Hyrax::open_batch_tables`]) against values that stay committed: each item carries the
    /// Pedersen commitment `C_{v_t} = v_t·U + β_t·H` to its value and the prover's `(v_t, β_t)`
    /// (the values come from earlier steps of a proof, already committed). Nothing about the
    /// tables or the values is revealed.
    ///
    /// # Errors
    /// As [`Self::open_batch_zk`], and [`PcsError::MalformedProof`] when a claimed value is not
    /// the table's (the prover's own check: such a proof could not verify).
    #[allow(clippy::type_complexity)]
    pub fn open_batch_committed<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        items: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds, &[Fr], (G1Affine, Fr, Fr))],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<ZkCommittedOpeningProof, PcsError> {
        let (generators, column_point, combined_row, blinding, value_blinding) =
            Self::combine_committed_batch(params, items, transcript)?;
        Ok(prove_dot_product_committed(
            params,
            generators,
            (&combined_row, blinding),
            &eq_table(&column_point),
            value_blinding,
            transcript,
            rng,
        ))
    }

    /// The group equations of [`Self::open_batch_committed`]'s proof, for the caller's
    /// deferred check (`items`: commitment, point, value commitment).
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`] or [`PcsError::MalformedProof`] for malformed batches or
    /// responses.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn batch_committed_equations(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], G1Affine)],
        proof: &ZkCommittedOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<[GroupEquation; 2], PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(c, p, _)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let generators = Self::bases(params, column_point.len(), column_point.len())?;
        if proof.response.len() != generators.len() {
            return Err(PcsError::MalformedProof(
                "the zero-knowledge opening's response has the wrong length",
            ));
        }
        let (coefficients, combined_value) =
            Self::absorb_committed_batch(params, items, &scales, transcript)?;
        let combined = combined_commitment_terms(&layout, &coefficients)?;
        absorb_point(transcript, LABEL_ZK_MASK_COMMITMENT, proof.mask_commitment);
        absorb_point(transcript, LABEL_ZK_VALUE_COMMITMENT, proof.mask_value_commitment);
        let challenge = transcript.challenge_field(LABEL_ZK_CHALLENGE);
        proof.absorb_responses(transcript);
        Ok(committed_equations(
            params,
            generators,
            combined,
            &eq_table(column_point),
            combined_value.into_affine(),
            proof,
            challenge,
        ))
    }

    /// [`Self::open_batch_committed`] with a proof of logarithmic size: the combined row's
    /// inner product with the column point's eq vector is proved by a
    /// [`ZkInnerProductProof`] against the combined row's commitment (`2·log₂(columns) + 1`
    /// points and 2 field elements instead of one field element per column), so a layout of
    /// few, wide rows costs little in the proof.
    ///
    /// # Errors
    /// As [`Self::open_batch_committed`].
    #[allow(clippy::type_complexity)]
    pub fn open_batch_committed_log<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        items: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds, &[Fr], (G1Affine, Fr, Fr))],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<ZkInnerProductProof, PcsError> {
        let (generators, column_point, combined_row, blinding, value_blinding) =
            Self::combine_committed_batch(params, items, transcript)?;
        let public = eq_table(&column_point);
        debug_assert!(generators.len() >= combined_row.len());
        let value: Fr = combined_row.iter().zip(&public).map(|(a, b)| *a * b).sum();
        let value_commitment = params.pedersen(value, value_blinding).into_affine();
        // The combined row's commitment is the rows' combination with the coefficients just
        // drawn: the transcript determines it, so the argument does not absorb it.
        ZkInnerProductProof::prove_derived(
            params,
            (&combined_row, blinding),
            (value_commitment, value_blinding),
            &public,
            transcript,
            rng,
        )
    }

    /// The group equation of [`Self::open_batch_committed_log`]'s proof, for the caller's
    /// deferred check (`items`: commitment, point, value commitment).
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`] or [`PcsError::MalformedProof`] for malformed batches or
    /// proofs.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn batch_committed_log_equation(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], G1Affine)],
        proof: &ZkInnerProductProof,
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(c, p, _)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let (coefficients, combined_value) =
            Self::absorb_committed_batch(params, items, &scales, transcript)?;
        // The combined row's commitment, never computed: its rows join the equation (and a
        // caller's one final MSM).
        let (bases, scalars) = combined_commitment_terms(&layout, &coefficients)?;
        proof.equation_derived(
            params,
            (&bases, &scalars),
            combined_value.into_affine(),
            &eq_table(column_point),
            transcript,
        )
    }

    /// Opens several hidden polynomials at points sharing their column part (as
    /// [`Hyrax::open_batch_tables`]) in zero knowledge: the values `f_t(point_t)` are returned
    /// (and are public), the rows and their combination are not revealed.
    ///
    /// # Errors
    /// As [`Hyrax::open_batch_tables`], and [`PcsError::MalformedProof`] when a commitment's
    /// blinds do not match its rows.
    pub fn open_batch_zk<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        items: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds, &[Fr])],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<(ZkOpeningProof, Vec<Fr>), PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(_, c, _, p)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let generators = Self::bases(params, column_point.len(), column_point.len())?;
        let mut rows = Vec::with_capacity(items.len());
        let mut values = Vec::with_capacity(items.len());
        for (f, commitment, blinds, point) in items {
            if blinds.rows.len() != commitment.rows.len() {
                return Err(PcsError::MalformedProof("one blinding factor per committed row"));
            }
            let (row, value) = combined_row_and_value(*f, point, commitment.column_vars()?)?;
            absorb(transcript, commitment, point, &value);
            rows.push(row);
            values.push(value);
        }
        let coefficients = transcript.challenge_fields(LABEL_ZK_BATCH, items.len());
        let mut combined_row = vec![Fr::zero(); generators.len()];
        let mut blinding = Fr::zero();
        let mut value = Fr::zero();
        for ((((row, c), (_, commitment, blinds, point)), v), s) in
            rows.iter().zip(&coefficients).zip(items).zip(&values).zip(&scales)
        {
            combined_row.par_iter_mut().zip(row.par_iter()).for_each(|(w, x)| *w += *c * x);
            let row_point = point.get(commitment.column_vars()?..).unwrap_or_default();
            let weights = eq_table(row_point);
            blinding += *c * blinds.rows.iter().zip(&weights).map(|(b, l)| *b * l).sum::<Fr>();
            value += *c * v * s;
        }
        let proof = prove_dot_product(
            generators,
            params.blinding_generator,
            &combined_row,
            blinding,
            &eq_table(column_point),
            transcript,
            rng,
        );
        debug_assert_eq!(
            combined_row.iter().zip(eq_table(column_point)).map(|(w, r)| *w * r).sum::<Fr>(),
            value
        );
        Ok((proof, values))
    }

    /// Verifies [`Self::open_batch_zk`].
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`], [`PcsError::MalformedProof`],
    /// [`PcsError::ZkInnerProductMismatch`] (a value) or [`PcsError::ZkCommitmentMismatch`]
    /// (the group equation).
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_batch_zk(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], Fr)],
        proof: &ZkOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(c, p, _)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let generators = Self::bases(params, column_point.len(), column_point.len())?;
        for (commitment, point, value) in items {
            Self::check_size(params, commitment.num_vars)?;
            absorb(transcript, commitment, point, value);
        }
        let coefficients = transcript.challenge_fields(LABEL_ZK_BATCH, items.len());
        let value: Fr =
            items.iter().zip(&coefficients).zip(&scales).map(|(((_, _, v), c), s)| *c * v * s).sum();
        let combined = combined_commitment_terms(&layout, &coefficients)?;
        check_dot_product(
            generators,
            params.blinding_generator,
            combined,
            &eq_table(column_point),
            value,
            proof,
            transcript,
        )?
        .holds()
        .map_err(|_| PcsError::ZkCommitmentMismatch)
    }
}
