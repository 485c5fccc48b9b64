//! A zero-knowledge inner-product argument of logarithmic size (Bulletproofs' folding with
//! blinded cross terms, and a Σ-protocol for the last element; the "proof of dot product with
//! logarithmic communication" of Hyrax, Wahby et al. 2018, Appendix A).
//!
//! ```text
//! statement  C_a = Σ_i a_i·G_i + α·H   (a hidden, N = 2^k entries, zero-padded)
//!            C_v = v·U + β·H,  v = ⟨a, b⟩   (b public)
//! x ← V;  U' = x·U;  P = C_a + x·C_v = ⟨a, G⟩ + ⟨a, b⟩·U' + γ·H,  γ = α + x·β
//! round j (halves lo/hi by the top index bit):
//!   P → V  L = ⟨a_lo, G_hi⟩ + ⟨a_lo, b_hi⟩·U' + l·H,   R = ⟨a_hi, G_lo⟩ + ⟨a_hi, b_lo⟩·U' + r·H   (l, r uniform)
//!   e ← V;  a ← e·a_lo + e⁻¹·a_hi,  b ← e⁻¹·b_lo + e·b_hi,  G ← e⁻¹·G_lo + e·G_hi,
//!           P ← P + e²·L + e⁻²·R,  γ ← γ + e²·l + e⁻²·r
//! last     P = a·G + a·b·U' + γ·H for single a, b, G:
//!   P → V  A = d·(G + b·U') + s·H;   c ← V;   P → V  z₁ = d + c·a,  z₂ = s + c·γ
//!   V      z₁·(G + b·U') + z₂·H = A + c·P, with G = Σ_i s_i·G_i and b = Σ_i s_i·b_i,
//!          s_i = Π_j e_j^{±1} (+ where round j's bit of i is 1): one MSM of N + 2k + 5 points
//! ```
//!
//! **A derived `C_a`** (`ZkInnerProductProof::prove_derived`, `equation_derived`: crate-private):
//! when the caller's transcript already determines `C_a` — a combination, with challenge
//! coefficients, of commitments it has absorbed (a Hyrax batch opening's rows) — `C_a` is not
//! absorbed again: `x` and every later challenge depend on it through the transcript that
//! fixed its parts. The verifier then never computes `C_a`: its terms (bases and scalars) go
//! into the group equation, and a caller that defers the equation (a chain's layers) checks
//! them in its one final MSM.
//!
//! Zero knowledge: every `L`, `R` carries a fresh uniform multiple of `H`, `A` a fresh `s·H`,
//! and `z₁, z₂` are shifted by the uniform `d, s`; a simulator picks `L, R` uniform and `z₁, z₂`
//! uniform and solves for `A`. The proof is `2k + 1` points and 2 field elements (for N = 512:
//! 19 points, 672 bytes) where the linear proof of dot product sends N field elements.

use crate::hyrax::GroupEquation;
use crate::{G1Affine, G1Projective, HyraxParams, PcsError};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::Field;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use rayon::prelude::*;
use zkmha_field::{Fr, One, Zero};
use zkmha_transcript::Transcript;

const LABEL_STATEMENT: &[u8] = b"pcs/ipa/statement";
const LABEL_DERIVED_STATEMENT: &[u8] = b"pcs/ipa/derived-statement";
const LABEL_VALUE_WEIGHT: &[u8] = b"pcs/ipa/value-weight";
const LABEL_ROUND: &[u8] = b"pcs/ipa/round";
const LABEL_ROUND_CHALLENGE: &[u8] = b"pcs/ipa/round-challenge";
const LABEL_LAST: &[u8] = b"pcs/ipa/last";
const LABEL_LAST_CHALLENGE: &[u8] = b"pcs/ipa/last-challenge";
const LABEL_RESPONSES: &[u8] = b"pcs/ipa/responses";

/// A logarithmic-size zero-knowledge inner-product proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkInnerProductProof {
    /// `(L_j, R_j)` per round.
    pub rounds: Vec<(G1Affine, G1Affine)>,
    /// `A = d·(G + b·U') + s·H`.
    pub last_commitment: G1Affine,
    /// `z₁, z₂`.
    pub responses: [Fr; 2],
}

fn absorb_points(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len());
    for point in points {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}

/// The generators for `length` entries (padded to a power of two), and that power.
fn generators(params: &HyraxParams, length: usize) -> Result<(&[G1Affine], usize), PcsError> {
    let padded = length.max(1).next_power_of_two();
    let available = params.generators.len().trailing_zeros() as usize;
    let bases = params
        .generators
        .get(..padded)
        .ok_or(PcsError::SrsTooSmall { needed: padded.trailing_zeros() as usize, available })?;
    Ok((bases, padded))
}

/// Absorbs the statement (`C_a` unless the transcript already determines it) and draws `x`.
fn absorb_statement(
    transcript: &mut Transcript,
    vector: Option<G1Affine>,
    value: G1Affine,
    public: &[Fr],
) -> Fr {
    match vector {
        Some(vector) => absorb_points(transcript, LABEL_STATEMENT, &[vector, value]),
        None => absorb_points(transcript, LABEL_DERIVED_STATEMENT, &[value]),
    }
    transcript.append_fields(LABEL_STATEMENT, public);
    transcript.challenge_field(LABEL_VALUE_WEIGHT)
}

/// `C_a` as the verifier holds it: a point, or (derived) the terms of a combination it never
/// computes.
enum VectorCommitment<'a> {
    Point(G1Affine),
    Derived(&'a [G1Affine], &'a [Fr]),
}

fn nonzero_challenge(transcript: &mut Transcript, label: &'static [u8]) -> Result<(Fr, Fr), PcsError> {
    let e = transcript.challenge_field(label);
    let inverse = e.inverse().ok_or(PcsError::DegenerateChallenge)?;
    Ok((e, inverse))
}

impl ZkInnerProductProof {
    /// Proves `⟨a, b⟩ = v` for `C_a = Σ a_i·G_i + α·H` and `C_v = v·U + β·H` (the caller's
    /// commitments, passed for the transcript), without revealing `a` or `v`.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] when the generators are fewer than `a`'s padded length,
    /// [`PcsError::MalformedProof`] when `a` and `b` differ in length,
    /// [`PcsError::DegenerateChallenge`] for a zero challenge (probability ~2^-250).
    #[allow(clippy::too_many_arguments)]
    pub fn prove<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        (vector_commitment, vector, vector_blinding): (G1Affine, &[Fr], Fr),
        (value_commitment, value_blinding): (G1Affine, Fr),
        public: &[Fr],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<Self, PcsError> {
        Self::prove_with(
            params,
            (Some(vector_commitment), vector, vector_blinding),
            (value_commitment, value_blinding),
            public,
            transcript,
            rng,
        )
    }

    /// [`Self::prove`] for a `C_a` the caller's transcript already determines (the module's
    /// notes): `C_a` is not absorbed, so the prover need not compute it.
    ///
    /// **Sound only when the transcript fixes `C_a`**: every base of its combination absorbed
    /// and every scalar drawn from (or fixed by) the transcript before this call, as
    /// `Hyrax::open_batch_committed_log` does. A `C_a` the prover could still choose would
    /// not be bound by the argument's challenges — hence crate-private (absorbing the terms
    /// instead, ~11 k rows a GPT-2 layer, would cost about as much as 10 % of their MSM).
    ///
    /// # Errors
    /// As [`Self::prove`].
    pub(crate) fn prove_derived<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        (vector, vector_blinding): (&[Fr], Fr),
        (value_commitment, value_blinding): (G1Affine, Fr),
        public: &[Fr],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<Self, PcsError> {
        Self::prove_with(
            params,
            (None, vector, vector_blinding),
            (value_commitment, value_blinding),
            public,
            transcript,
            rng,
        )
    }

    fn prove_with<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        (vector_commitment, vector, vector_blinding): (Option<G1Affine>, &[Fr], Fr),
        (value_commitment, value_blinding): (G1Affine, Fr),
        public: &[Fr],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<Self, PcsError> {
        if vector.len() != public.len() {
            return Err(PcsError::MalformedProof("the vector and the public vector differ in length"));
        }
        let (bases, padded) = generators(params, vector.len())?;
        let x = absorb_statement(transcript, vector_commitment, value_commitment, public);
        let mut a: Vec<Fr> = vector.to_vec();
        a.resize(padded, Fr::zero());
        let mut b: Vec<Fr> = public.to_vec();
        b.resize(padded, Fr::zero());
        // The folded generators are kept as g with G = scale·g: folding g ← g_lo + e²·g_hi and
        // scale ← scale·e⁻¹ costs one scalar multiplication per pair instead of two.
        let mut g: Vec<G1Projective> = bases.iter().map(|p| (*p).into()).collect();
        let mut scale = Fr::one();
        let mut gamma = vector_blinding + x * value_blinding;
        let mut rounds = Vec::with_capacity(padded.trailing_zeros() as usize);
        while a.len() > 1 {
            let half = a.len() / 2;
            let (a_lo, a_hi) = a.split_at(half);
            let (b_lo, b_hi) = b.split_at(half);
            let (g_lo, g_hi) = g.split_at(half);
            let (l_blind, r_blind) = (Fr::rand(rng), Fr::rand(rng));
            let g_hi_affine = G1Projective::normalize_batch(g_hi);
            let g_lo_affine = G1Projective::normalize_batch(g_lo);
            let cross_l: Fr = a_lo.iter().zip(b_hi).map(|(x, y)| *x * y).sum();
            let cross_r: Fr = a_hi.iter().zip(b_lo).map(|(x, y)| *x * y).sum();
            let scaled_lo: Vec<Fr> = a_lo.iter().map(|v| *v * scale).collect();
            let scaled_hi: Vec<Fr> = a_hi.iter().map(|v| *v * scale).collect();
            let l =
                G1Projective::msm_unchecked(&g_hi_affine, &scaled_lo) + params.pedersen(x * cross_l, l_blind);
            let r =
                G1Projective::msm_unchecked(&g_lo_affine, &scaled_hi) + params.pedersen(x * cross_r, r_blind);
            let (l, r) = (l.into_affine(), r.into_affine());
            absorb_points(transcript, LABEL_ROUND, &[l, r]);
            let (e, e_inv) = nonzero_challenge(transcript, LABEL_ROUND_CHALLENGE)?;
            let next_a: Vec<Fr> = a_lo.iter().zip(a_hi).map(|(lo, hi)| e * lo + e_inv * hi).collect();
            let next_b: Vec<Fr> = b_lo.iter().zip(b_hi).map(|(lo, hi)| e_inv * lo + e * hi).collect();
            let e_squared = e.square();
            let next_g: Vec<G1Projective> =
                g_lo.par_iter().zip(g_hi).map(|(lo, hi)| *lo + *hi * e_squared).collect();
            scale *= e_inv;
            gamma += e.square() * l_blind + e_inv.square() * r_blind;
            rounds.push((l, r));
            (a, b, g) = (next_a, next_b, next_g);
        }
        let (a, b, g) = (
            a.first().copied().unwrap_or_default(),
            b.first().copied().unwrap_or_default(),
            g.first().copied().unwrap_or_default() * scale,
        );
        let (d, s) = (Fr::rand(rng), Fr::rand(rng));
        let last_commitment = (g * d + params.pedersen(x * b * d, s)).into_affine();
        absorb_points(transcript, LABEL_LAST, &[last_commitment]);
        let c = transcript.challenge_field(LABEL_LAST_CHALLENGE);
        let responses = [d + c * a, s + c * gamma];
        transcript.append_fields(LABEL_RESPONSES, &responses);
        Ok(Self { rounds, last_commitment, responses })
    }

    /// The verifier's group equation for `C_a`, `C_v` and the public vector `b` (checked by the
    /// caller, alone or with others in one MSM).
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`], [`PcsError::MalformedProof`] for a wrong number of rounds,
    /// [`PcsError::DegenerateChallenge`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn equation(
        &self,
        params: &HyraxParams,
        vector_commitment: G1Affine,
        value_commitment: G1Affine,
        public: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, PcsError> {
        self.equation_with(
            params,
            VectorCommitment::Point(vector_commitment),
            value_commitment,
            public,
            transcript,
        )
    }

    /// The verifier's group equation of [`Self::prove_derived`]: `C_a = Σ_t scalars_t·bases_t`
    /// (never computed: its terms join the equation), not absorbed. **The caller must have
    /// absorbed every base and fixed every scalar by the transcript before this call**
    /// ([`Self::prove_derived`]'s precondition).
    ///
    /// # Errors
    /// As [`Self::equation`], and [`PcsError::MalformedProof`] for bases and scalars of
    /// different counts.
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub(crate) fn equation_derived(
        &self,
        params: &HyraxParams,
        (vector_bases, vector_scalars): (&[G1Affine], &[Fr]),
        value_commitment: G1Affine,
        public: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, PcsError> {
        if vector_bases.len() != vector_scalars.len() {
            return Err(PcsError::MalformedProof(
                "the derived commitment's bases and scalars differ in count",
            ));
        }
        let vector = VectorCommitment::Derived(vector_bases, vector_scalars);
        self.equation_with(params, vector, value_commitment, public, transcript)
    }

    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    fn equation_with(
        &self,
        params: &HyraxParams,
        vector_commitment: VectorCommitment<'_>,
        value_commitment: G1Affine,
        public: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, PcsError> {
        let (bases, padded) = generators(params, public.len())?;
        let k = padded.trailing_zeros() as usize;
        if self.rounds.len() != k {
            return Err(PcsError::MalformedProof("the inner-product proof has the wrong number of rounds"));
        }
        let absorbed = match vector_commitment {
            VectorCommitment::Point(point) => Some(point),
            VectorCommitment::Derived(..) => None,
        };
        let x = absorb_statement(transcript, absorbed, value_commitment, public);
        let mut challenges = Vec::with_capacity(k);
        for (l, r) in &self.rounds {
            absorb_points(transcript, LABEL_ROUND, &[*l, *r]);
            challenges.push(nonzero_challenge(transcript, LABEL_ROUND_CHALLENGE)?);
        }
        absorb_points(transcript, LABEL_LAST, &[self.last_commitment]);
        let c = transcript.challenge_field(LABEL_LAST_CHALLENGE);
        transcript.append_fields(LABEL_RESPONSES, &self.responses);
        // s_i = Π_j (e_j if round j's bit of i is 1, else e_j⁻¹); round 1 splits on the top bit.
        let mut s = vec![Fr::one(); padded];
        for (j, (e, e_inv)) in challenges.iter().enumerate() {
            let bit = k - 1 - j;
            for (i, si) in s.iter_mut().enumerate() {
                *si *= if (i >> bit) & 1 == 1 { *e } else { *e_inv };
            }
        }
        let b_last: Fr = s.iter().zip(public).map(|(si, bi)| *si * bi).sum();
        let [z1, z2] = self.responses;
        // z₁·Σ s_i G_i + z₁·b·x·U + z₂·H − A − c·(C_a + x·C_v + Σ_j e_j²·L_j + e_j⁻²·R_j) = 0
        let mut bases_out: Vec<G1Affine> = bases.to_vec();
        let mut scalars: Vec<Fr> = s.iter().map(|si| z1 * si).collect();
        bases_out.extend([
            params.value_generator,
            params.blinding_generator,
            self.last_commitment,
            value_commitment,
        ]);
        scalars.extend([z1 * b_last * x, z2, -Fr::one(), -(c * x)]);
        match vector_commitment {
            VectorCommitment::Point(point) => {
                bases_out.push(point);
                scalars.push(-c);
            }
            VectorCommitment::Derived(vector_bases, vector_scalars) => {
                bases_out.extend_from_slice(vector_bases);
                scalars.extend(vector_scalars.iter().map(|s| -c * s));
            }
        }
        for ((l, r), (e, e_inv)) in self.rounds.iter().zip(&challenges) {
            bases_out.extend([*l, *r]);
            scalars.extend([-(c * e.square()), -(c * e_inv.square())]);
        }
        Ok(GroupEquation::new(bases_out, scalars))
    }

    /// Verifies the proof alone.
    ///
    /// # Errors
    /// As [`Self::equation`], and [`PcsError::ZkCommitmentMismatch`] when it fails.
    pub fn verify(
        &self,
        params: &HyraxParams,
        vector_commitment: G1Affine,
        value_commitment: G1Affine,
        public: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        self.equation(params, vector_commitment, value_commitment, public, transcript)?
            .holds()
            .map_err(|_| PcsError::ZkCommitmentMismatch)
    }
}

/// The derived variant is crate-private (its precondition: the caller's transcript fixes
/// `C_a`), so its tests live here.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod derived_tests {
    use super::*;
    use ark_std::rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    const DOMAIN: &[u8] = b"ipa-test";

    struct Statement {
        params: HyraxParams,
        vector: Vec<Fr>,
        public: Vec<Fr>,
        vector_commitment: G1Affine,
        vector_blinding: Fr,
        value_commitment: G1Affine,
        value_blinding: Fr,
    }

    fn statement(length: usize, seed: u64) -> Statement {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let params = HyraxParams::new(20);
        let vector: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
        let public: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
        let (vector_blinding, value_blinding) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let vector_commitment =
            (vector.iter().zip(&params.generators).map(|(a, g)| *g * a).sum::<G1Projective>()
                + params.blinding_generator * vector_blinding)
                .into();
        // The plain reference inner product.
        let value: Fr = vector.iter().zip(&public).map(|(a, b)| *a * b).sum();
        let value_commitment =
            (params.value_generator * value + params.blinding_generator * value_blinding).into();
        Statement {
            params,
            vector,
            public,
            vector_commitment,
            vector_blinding,
            value_commitment,
            value_blinding,
        }
    }

    fn prove(s: &Statement, seed: u64) -> ZkInnerProductProof {
        ZkInnerProductProof::prove(
            &s.params,
            (s.vector_commitment, &s.vector, s.vector_blinding),
            (s.value_commitment, s.value_blinding),
            &s.public,
            &mut Transcript::new(DOMAIN),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap()
    }

    fn verify(
        s: &Statement,
        value_commitment: G1Affine,
        proof: &ZkInnerProductProof,
    ) -> Result<(), PcsError> {
        proof.verify(
            &s.params,
            s.vector_commitment,
            value_commitment,
            &s.public,
            &mut Transcript::new(DOMAIN),
        )
    }

    /// A derived `C_a` (not absorbed; the verifier's equation carries its terms): the vector
    /// commitment split into terms `C_a = 3·P + Q` with `P`, `Q` committing to parts of `a`.
    fn derived_terms(s: &Statement, seed: u64) -> (Vec<G1Affine>, Vec<Fr>) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let q_blinding = Fr::rand(&mut rng);
        let q: G1Affine =
            (s.params.generators[0] * Fr::from(5u64) + s.params.blinding_generator * q_blinding).into();
        // P = (C_a − Q)/3, so that 3·P + Q = C_a.
        let three_inverse = ark_ff::Field::inverse(&Fr::from(3u64)).unwrap();
        let p: G1Affine = ((G1Projective::from(s.vector_commitment) - q) * three_inverse).into();
        (vec![p, q], vec![Fr::from(3u64), Fr::from(1u64)])
    }

    fn prove_derived(s: &Statement, seed: u64) -> ZkInnerProductProof {
        ZkInnerProductProof::prove_derived(
            &s.params,
            (&s.vector, s.vector_blinding),
            (s.value_commitment, s.value_blinding),
            &s.public,
            &mut Transcript::new(DOMAIN),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap()
    }

    fn verify_derived(
        s: &Statement,
        (bases, scalars): (&[G1Affine], &[Fr]),
        value_commitment: G1Affine,
        proof: &ZkInnerProductProof,
    ) -> Result<(), PcsError> {
        proof
            .equation_derived(
                &s.params,
                (bases, scalars),
                value_commitment,
                &s.public,
                &mut Transcript::new(DOMAIN),
            )?
            .holds()
            .map_err(|_| PcsError::ZkCommitmentMismatch)
    }

    #[test]
    fn a_derived_vector_commitment_round_trips_and_binds_its_terms() {
        for length in [1, 2, 5, 64, 300] {
            let s = statement(length, 40 + length as u64);
            let (bases, scalars) = derived_terms(&s, 3);
            let proof = prove_derived(&s, 1);
            verify_derived(&s, (&bases, &scalars), s.value_commitment, &proof)
                .unwrap_or_else(|e| panic!("length {length}: {e}"));
            // Terms that combine to another vector commitment, another value, or a proof of the
            // absorbing variant: rejected.
            let other_scalars = vec![scalars[0], scalars[1] + Fr::from(1u64)];
            assert_eq!(
                verify_derived(&s, (&bases, &other_scalars), s.value_commitment, &proof),
                Err(PcsError::ZkCommitmentMismatch)
            );
            let other_value: G1Affine =
                (G1Projective::from(s.value_commitment) + s.params.value_generator).into();
            assert_eq!(
                verify_derived(&s, (&bases, &scalars), other_value, &proof),
                Err(PcsError::ZkCommitmentMismatch)
            );
            let absorbing = prove(&s, 1);
            assert_eq!(
                verify_derived(&s, (&bases, &scalars), s.value_commitment, &absorbing),
                Err(PcsError::ZkCommitmentMismatch)
            );
            assert_eq!(verify(&s, s.value_commitment, &proof), Err(PcsError::ZkCommitmentMismatch));
        }
        let s = statement(8, 9);
        let proof = prove_derived(&s, 1);
        let (bases, scalars) = derived_terms(&s, 3);
        assert!(matches!(
            verify_derived(&s, (&bases, &scalars[..1]), s.value_commitment, &proof),
            Err(PcsError::MalformedProof(_))
        ));
    }
}
