//! Linear and quadratic relations on committed values, all proved with one Σ-protocol.
//!
//! ```text
//! values     a committed value is a combination Σ_l s_l·P_l of points (commitments, U, H):
//!            linear operations are free and never evaluated (the scalars go into the MSMs)
//! statement  factors C_i (i < k) committing to x_i; relations j < m:
//!            "T_j commits to Σ_{(i, Y) ∈ terms_j} x_i·y(Y)"  (T_j, Y: combinations)
//! witness    x_i, r_i with C_i = x_i·U + r_i·H;  r'_j = τ_j − Σ x_i·s_Y, so T_j − Σ x_i·Y = r'_j·H
//! P → V      A_i = a_i·U + b_i·H,   B_j = Σ_{(i, Y)} a_i·Y + b'_j·H
//! c ← V;     P → V  z_i = a_i + c·x_i
//! ρ ← V;     P → V  w = Σ_i ρ_i·(b_i + c·r_i) + Σ_j ρ_{k+j}·(b'_j + c·r'_j)
//! V checks   Σ_i ρ_i·(A_i + c·C_i − z_i·U) + Σ_j ρ_{k+j}·(B_j + c·T_j − Σ_{(i, Y)} z_i·Y) = w·H
//! ```
//!
//! A relation without terms says "T_j commits to 0" (an opening to zero); with one term whose
//! `Y` is `C_y` it is the product relation of [`crate::ProductProof`] in 2 points and 2 field
//! elements instead of 3 and 5 (and `T_j` needs no commitment of its own when it is a
//! combination).
//!
//! Special soundness: each of the `k + m` bracketed points must be a known multiple of `H`
//! (answers to `k + m` independent `ρ` give each one), and two answers to two `c` give
//! `x_i, r_i` from `A_i` and then `T_j = Σ x_i·Y + r'_j·H`: under the discrete-log
//! assumption between `U` and `H`, `T_j` commits to `Σ x_i·y`. Honest-verifier zero
//! knowledge: `z_i = a_i + c·x_i` is uniform, and given `(c, ρ, z)` every bracket is
//! `ω·H` for a uniform `ω` (`b_i`, `b'_j` uniform) with `w = Σ ρ·ω`: the simulator picks the
//! `ω` and `z` uniformly and solves for `A_i`, `B_j` ([`RelationsProof::simulate`]).
//!
//! The proof absorbs its statement — the counts, every factor's combination, every relation's
//! target and terms ([`absorb_combinations`]: the pairs, not the points, so nothing is
//! evaluated) — before its first challenge, then its own messages. Without the statement in
//! the transcript `c` and `ρ` would not depend on it, and a prover choosing the statement after
//! them could move a false target's error into a factor (`tests/statement_binding.rs`).

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::pedersen::ValueOpening;
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, One, Zero};
use zkmha_pcs::{G1Affine, G1Projective, GroupEquation, HyraxParams};
use zkmha_transcript::Transcript;

const LABEL_SHAPE: &[u8] = b"zk/relations/shape";
const LABEL_STATEMENT: &[u8] = b"zk/relations/statement";
const LABEL_FIRST: &[u8] = b"zk/relations/first-messages";
const LABEL_CHALLENGE: &[u8] = b"zk/relations/challenge";
const LABEL_RESPONSES: &[u8] = b"zk/relations/responses";
const LABEL_WEIGHTS: &[u8] = b"zk/relations/weights";
const LABEL_BLINDING_RESPONSE: &[u8] = b"zk/relations/blinding-response";

/// A combination `Σ_l s_l·P_l` of points, kept unevaluated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Combination(pub Vec<(Fr, G1Affine)>);

impl Combination {
    /// The point itself.
    pub fn point(point: G1Affine) -> Self {
        Self(vec![(Fr::one(), point)])
    }

    /// `s·P`.
    pub fn scaled_point(scalar: Fr, point: G1Affine) -> Self {
        Self(vec![(scalar, point)])
    }

    /// `λ·self`.
    pub fn scaled(&self, lambda: Fr) -> Self {
        Self(self.0.iter().map(|(s, p)| (*s * lambda, *p)).collect())
    }

    /// `self + λ·other`.
    pub fn add_scaled(mut self, lambda: Fr, other: &Combination) -> Self {
        self.0.extend(other.0.iter().map(|(s, p)| (*s * lambda, *p)));
        self
    }

    /// The point it stands for (one MSM; tests and callers that need the point itself).
    pub fn evaluate(&self) -> G1Projective {
        let (scalars, points): (Vec<Fr>, Vec<G1Affine>) = self.0.iter().copied().unzip();
        G1Projective::msm(&points, &scalars).unwrap_or_default()
    }
}

/// A committed value as the prover holds it: the combination and its opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedValue {
    /// The commitment.
    pub commitment: Combination,
    /// What it commits to.
    pub opening: ValueOpening,
}

impl CommittedValue {
    /// A value committed in the single point `commitment`.
    pub fn new(commitment: G1Affine, opening: ValueOpening) -> Self {
        Self { commitment: Combination::point(commitment), opening }
    }

    /// A public value: `v·U`, blinding 0.
    pub fn public(params: &HyraxParams, value: Fr) -> Self {
        Self {
            commitment: Combination::scaled_point(value, params.value_generator),
            opening: ValueOpening::public(value),
        }
    }

    /// `λ·self`.
    pub fn scaled(&self, lambda: Fr) -> Self {
        Self {
            commitment: self.commitment.scaled(lambda),
            opening: ValueOpening::public(Fr::zero()).add_scaled(lambda, &self.opening),
        }
    }

    /// `self + λ·other`.
    pub fn add_scaled(&self, lambda: Fr, other: &CommittedValue) -> Self {
        Self {
            commitment: self.commitment.clone().add_scaled(lambda, &other.commitment),
            opening: self.opening.add_scaled(lambda, &other.opening),
        }
    }
}

/// Linear operations shared by the prover's [`CommittedValue`] and the verifier's
/// [`Combination`], so that one walk of a protocol's linear steps serves both sides.
pub trait LinearValue: Clone {
    /// `λ·self`.
    fn times(&self, lambda: Fr) -> Self;
    /// `self + λ·other`.
    fn plus_scaled(&self, lambda: Fr, other: &Self) -> Self;
    /// The public constant `v` (`v·U`, blinding 0).
    fn constant(params: &HyraxParams, value: Fr) -> Self;
    /// `(1 − μ)·a + μ·b`: the line through `a` and `b` at `μ`.
    fn line(a: &Self, b: &Self, mu: Fr) -> Self {
        a.times(Fr::one() - mu).plus_scaled(mu, b)
    }
}

/// A value in the clear (the plain mode of a protocol written once for both modes): the
/// constant needs no generators.
impl LinearValue for Fr {
    fn times(&self, lambda: Fr) -> Self {
        *self * lambda
    }
    fn plus_scaled(&self, lambda: Fr, other: &Self) -> Self {
        *self + lambda * other
    }
    fn constant(_params: &HyraxParams, value: Fr) -> Self {
        value
    }
}

impl LinearValue for Combination {
    fn times(&self, lambda: Fr) -> Self {
        self.scaled(lambda)
    }
    fn plus_scaled(&self, lambda: Fr, other: &Self) -> Self {
        self.clone().add_scaled(lambda, other)
    }
    fn constant(params: &HyraxParams, value: Fr) -> Self {
        Combination::scaled_point(value, params.value_generator)
    }
}

impl LinearValue for CommittedValue {
    fn times(&self, lambda: Fr) -> Self {
        self.scaled(lambda)
    }
    fn plus_scaled(&self, lambda: Fr, other: &Self) -> Self {
        self.add_scaled(lambda, other)
    }
    fn constant(params: &HyraxParams, value: Fr) -> Self {
        CommittedValue::public(params, value)
    }
}

/// A relation as the verifier states it: `target` commits to `Σ x_factor·y(Y)` over `terms`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuadraticRelation {
    /// `T`.
    pub target: Combination,
    /// `(factor index, Y)`.
    pub terms: Vec<(usize, Combination)>,
}

/// The prover's relation: the target's and every `Y`'s opening alongside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProverRelation {
    /// `T` and its opening.
    pub target: CommittedValue,
    /// `(factor index, Y with its opening)`.
    pub terms: Vec<(usize, CommittedValue)>,
}

impl ProverRelation {
    /// The verifier's statement of this relation.
    pub fn statement(&self) -> QuadraticRelation {
        QuadraticRelation {
            target: self.target.commitment.clone(),
            terms: self.terms.iter().map(|(i, y)| (*i, y.commitment.clone())).collect(),
        }
    }
}

/// The proof of several relations over shared factors.
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct RelationsProof {
    /// `A_i`, one per factor.
    pub factor_messages: Vec<G1Affine>,
    /// `B_j`, one per relation.
    pub relation_messages: Vec<G1Affine>,
    /// `z_i`, one per factor.
    pub factor_responses: Vec<Fr>,
    /// `w`.
    pub blinding_response: Fr,
}

fn absorb_messages(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len());
    for point in points {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}

fn msm(pairs: impl Iterator<Item = (Fr, G1Affine)>) -> G1Projective {
    let (scalars, points): (Vec<Fr>, Vec<G1Affine>) = pairs.unzip();
    G1Projective::msm(&points, &scalars).unwrap_or_default()
}

/// Absorbs combinations under `label` in a canonical form, without evaluating them: per
/// combination its points (compressed encodings) in increasing byte order, equal points merged,
/// each with its scalar, zero scalars left out. Two combinations absorb alike exactly when they
/// are the same formal sum of the same points, so the prover's [`CommittedValue`] and the
/// verifier's [`Combination`] of one value absorb alike however either was built, and the
/// transcript fixes the point each stands for (hashing costs no group operation).
pub(crate) fn absorb_combinations<'a>(
    transcript: &mut Transcript,
    label: &'static [u8],
    combinations: impl IntoIterator<Item = &'a Combination>,
) {
    let mut bytes = Vec::new();
    let mut count = 0u64;
    for combination in combinations {
        let mut pairs: Vec<(Vec<u8>, Fr)> = combination
            .0
            .iter()
            .map(|(s, p)| {
                let mut point = Vec::with_capacity(32);
                let _ = p.serialize_compressed(&mut point);
                (point, *s)
            })
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(Vec<u8>, Fr)> = Vec::with_capacity(pairs.len());
        for (point, scalar) in pairs {
            match merged.last_mut() {
                Some((last, sum)) if *last == point => *sum += scalar,
                _ => merged.push((point, scalar)),
            }
        }
        merged.retain(|(_, s)| !s.is_zero());
        bytes.extend_from_slice(&(merged.len() as u64).to_le_bytes());
        for (point, scalar) in &merged {
            bytes.extend_from_slice(point);
            let _ = scalar.serialize_compressed(&mut bytes);
        }
        count += 1;
    }
    bytes.extend_from_slice(&count.to_le_bytes());
    transcript.append_bytes(label, &bytes);
}

/// The statement: factors, then per relation its target and its terms' `Y`.
fn absorb_statement<'a>(
    transcript: &mut Transcript,
    factors: impl IntoIterator<Item = &'a Combination>,
    relations: impl IntoIterator<Item = (&'a Combination, Vec<&'a Combination>)>,
) {
    absorb_combinations(transcript, LABEL_STATEMENT, factors);
    let mut parts = Vec::new();
    for (target, terms) in relations {
        parts.push(target);
        parts.extend(terms);
    }
    absorb_combinations(transcript, LABEL_STATEMENT, parts);
}

impl RelationsProof {
    /// Proves the relations over the factors (each factor's commitment with its opening).
    ///
    /// # Errors
    /// [`ZkError::MalformedRelation`] when a term names a factor that is not there.
    pub fn prove<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        factors: &[CommittedValue],
        relations: &[ProverRelation],
        transcript: &mut Transcript,
        rng: &mut R,
    ) -> Result<Self, ZkError> {
        if relations.iter().flat_map(|r| &r.terms).any(|(i, _)| *i >= factors.len()) {
            return Err(ZkError::MalformedRelation("a term names a missing factor"));
        }
        transcript.append_shape(LABEL_SHAPE, &shape(factors.len(), relations.iter().map(|r| r.terms.len())));
        absorb_statement(
            transcript,
            factors.iter().map(|f| &f.commitment),
            relations
                .iter()
                .map(|r| (&r.target.commitment, r.terms.iter().map(|(_, y)| &y.commitment).collect())),
        );
        let nonces: Vec<(Fr, Fr)> = factors.iter().map(|_| (Fr::rand(rng), Fr::rand(rng))).collect();
        let relation_nonces: Vec<Fr> = relations.iter().map(|_| Fr::rand(rng)).collect();
        let factor_points: Vec<G1Projective> = nonces.iter().map(|(a, b)| params.pedersen(*a, *b)).collect();
        let relation_points: Vec<G1Projective> = relations
            .iter()
            .zip(&relation_nonces)
            .map(|(relation, b)| {
                let pairs = relation.terms.iter().flat_map(|(i, y)| {
                    let a = nonces.get(*i).map(|n| n.0).unwrap_or_default();
                    y.commitment.0.iter().map(move |(s, p)| (a * s, *p))
                });
                msm(pairs) + params.blinding_times(*b)
            })
            .collect();
        let factor_messages = G1Projective::normalize_batch(&factor_points);
        let relation_messages = G1Projective::normalize_batch(&relation_points);
        absorb_messages(transcript, LABEL_FIRST, &factor_messages);
        absorb_messages(transcript, LABEL_FIRST, &relation_messages);
        let c = transcript.challenge_field(LABEL_CHALLENGE);
        let factor_responses: Vec<Fr> =
            nonces.iter().zip(factors).map(|((a, _), x)| *a + c * x.opening.value).collect();
        transcript.append_fields(LABEL_RESPONSES, &factor_responses);
        let weights = transcript.challenge_fields(LABEL_WEIGHTS, factors.len() + relations.len());
        let mut blinding_response = Fr::zero();
        for ((weight, (_, b)), x) in weights.iter().zip(&nonces).zip(factors) {
            blinding_response += *weight * (*b + c * x.opening.blinding);
        }
        for ((weight, b), relation) in weights.iter().skip(factors.len()).zip(&relation_nonces).zip(relations)
        {
            // r' = τ − Σ x_i·s_Y.
            let mut remainder = relation.target.opening.blinding;
            for (i, y) in &relation.terms {
                let x = factors.get(*i).map(|f| f.opening.value).unwrap_or_default();
                remainder -= x * y.opening.blinding;
            }
            blinding_response += *weight * (*b + c * remainder);
        }
        transcript.append_field(LABEL_BLINDING_RESPONSE, &blinding_response);
        Ok(Self { factor_messages, relation_messages, factor_responses, blinding_response })
    }

    /// Checks the relations over the factors' commitments, leaving the group equation in
    /// `checks`.
    ///
    /// # Errors
    /// [`ZkError::MalformedRelation`] for counts that do not fit the statement; the equation
    /// fails with [`ZkError::RelationMismatch`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_deferred(
        &self,
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        transcript: &mut Transcript,
        checks: &mut DeferredChecks,
    ) -> Result<(), ZkError> {
        let equation = self.equation_from_transcript(params, factors, relations, transcript)?;
        checks.push(equation, ZkError::RelationMismatch);
        Ok(())
    }

    /// Checks the relations at once.
    ///
    /// # Errors
    /// As [`Self::verify_deferred`], with the equation checked here.
    pub fn verify(
        &self,
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        transcript: &mut Transcript,
    ) -> Result<(), ZkError> {
        let mut checks = DeferredChecks::new();
        self.verify_deferred(params, factors, relations, transcript, &mut checks)?;
        checks.finish(transcript)
    }

    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    fn equation_from_transcript(
        &self,
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, ZkError> {
        if self.factor_messages.len() != factors.len()
            || self.factor_responses.len() != factors.len()
            || self.relation_messages.len() != relations.len()
        {
            return Err(ZkError::MalformedRelation("one message per factor and per relation"));
        }
        if relations.iter().flat_map(|r| &r.terms).any(|(i, _)| *i >= factors.len()) {
            return Err(ZkError::MalformedRelation("a term names a missing factor"));
        }
        transcript.append_shape(LABEL_SHAPE, &shape(factors.len(), relations.iter().map(|r| r.terms.len())));
        absorb_statement(
            transcript,
            factors,
            relations.iter().map(|r| (&r.target, r.terms.iter().map(|(_, y)| y).collect())),
        );
        absorb_messages(transcript, LABEL_FIRST, &self.factor_messages);
        absorb_messages(transcript, LABEL_FIRST, &self.relation_messages);
        let c = transcript.challenge_field(LABEL_CHALLENGE);
        transcript.append_fields(LABEL_RESPONSES, &self.factor_responses);
        let weights = transcript.challenge_fields(LABEL_WEIGHTS, factors.len() + relations.len());
        transcript.append_field(LABEL_BLINDING_RESPONSE, &self.blinding_response);
        Ok(self.equation(params, factors, relations, c, &weights))
    }

    /// `Σ_i ρ_i·(A_i + c·C_i − z_i·U) + Σ_j ρ_{k+j}·(B_j + c·T_j − Σ z_i·Y) − w·H = 0`.
    fn equation(
        &self,
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        c: Fr,
        weights: &[Fr],
    ) -> GroupEquation {
        let (mut bases, mut scalars) = (Vec::new(), Vec::new());
        let mut push = |s: Fr, p: G1Affine| {
            scalars.push(s);
            bases.push(p);
        };
        let mut u_scalar = Fr::zero();
        let mut weight = weights.iter();
        for ((message, factor), z) in self.factor_messages.iter().zip(factors).zip(&self.factor_responses) {
            let rho = weight.next().copied().unwrap_or_default();
            push(rho, *message);
            for (s, p) in &factor.0 {
                push(rho * c * s, *p);
            }
            u_scalar -= rho * z;
        }
        for (message, relation) in self.relation_messages.iter().zip(relations) {
            let rho = weight.next().copied().unwrap_or_default();
            push(rho, *message);
            for (s, p) in &relation.target.0 {
                push(rho * c * s, *p);
            }
            for (i, y) in &relation.terms {
                let z = self.factor_responses.get(*i).copied().unwrap_or_default();
                for (s, p) in &y.0 {
                    push(-rho * z * s, *p);
                }
            }
        }
        push(u_scalar, params.value_generator);
        push(-self.blinding_response, params.blinding_generator);
        GroupEquation::new(bases, scalars)
    }

    /// The interactive check for given challenges `c` and `ρ`.
    ///
    /// # Errors
    /// [`ZkError::RelationMismatch`].
    pub fn check_with_challenges(
        &self,
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        c: Fr,
        weights: &[Fr],
    ) -> Result<(), ZkError> {
        if weights.len() != factors.len() + relations.len() || self.factor_messages.len() != factors.len() {
            return Err(ZkError::MalformedRelation("one weight per factor and per relation"));
        }
        self.equation(params, factors, relations, c, weights).holds().map_err(|_| ZkError::RelationMismatch)
    }

    /// The honest-verifier simulator: an accepting answer for any statement and challenges
    /// (the last weight must be non-zero).
    ///
    /// # Errors
    /// [`ZkError::MalformedRelation`] for counts that do not fit, or a zero last weight.
    pub fn simulate<R: RngCore + CryptoRng>(
        params: &HyraxParams,
        factors: &[Combination],
        relations: &[QuadraticRelation],
        c: Fr,
        weights: &[Fr],
        rng: &mut R,
    ) -> Result<Self, ZkError> {
        if weights.len() != factors.len() + relations.len() {
            return Err(ZkError::MalformedRelation("one weight per factor and per relation"));
        }
        let factor_responses: Vec<Fr> = factors.iter().map(|_| Fr::rand(rng)).collect();
        let omegas: Vec<Fr> = weights.iter().map(|_| Fr::rand(rng)).collect();
        let blinding_response = weights.iter().zip(&omegas).map(|(r, o)| *r * o).sum();
        let h = params.blinding_generator;
        let factor_points: Vec<G1Projective> = factors
            .iter()
            .zip(&factor_responses)
            .zip(&omegas)
            .map(|((factor, z), omega)| h * omega + params.value_generator * z - factor.scaled(c).evaluate())
            .collect();
        let relation_points: Vec<G1Projective> = relations
            .iter()
            .zip(omegas.iter().skip(factors.len()))
            .map(|(relation, omega)| {
                let mut point = h * omega - relation.target.scaled(c).evaluate();
                for (i, y) in &relation.terms {
                    let z = factor_responses.get(*i).copied().unwrap_or_default();
                    point += y.scaled(z).evaluate();
                }
                point
            })
            .collect();
        Ok(Self {
            factor_messages: G1Projective::normalize_batch(&factor_points),
            relation_messages: G1Projective::normalize_batch(&relation_points),
            factor_responses,
            blinding_response,
        })
    }
}

/// The counts the proof absorbs: factors, relations, terms of each.
fn shape(factors: usize, terms: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut shape = vec![factors];
    let terms: Vec<usize> = terms.collect();
    shape.push(terms.len());
    shape.extend(terms);
    shape
}
