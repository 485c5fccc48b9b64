//! One sub-protocol, two modes: the plain proof (claims are field values) and the
//! zero-knowledge proof (claims are Pedersen commitments) from the same code — the core every
//! protocol crate builds on (`zkmha_lookup`'s fractional sums, `zkmha_attention`'s steps,
//! whose `Mode` adds commitments, openings, lookups and the proof session).
//!
//! ```text
//! a step:     claims on its output in, claims on its inputs out (the GKR direction)
//!             its relation a sum of products Σ_x Σ_t c_t·Π_k f_k(x) over tables it builds;
//!             the factors the verifier evaluates itself (eq tables, selectors, padding
//!             matrices) are public, the others (the tensors) hidden
//! Plain       the step's name and its claim values absorbed; the sum-check (several claims: one
//!             batched sum-check); every factor's value at the end in the clear and absorbed;
//!             the verifier checks Σ_t c_t·Π_k f_k = the final value at once
//! Zk          claim values committed (C = v·U + β·H); the masked sum-check
//!             (zkmha_zk::prove_zk_product, batched: prove_zk_batched_products); the public
//!             factors' values in the clear, the hidden ones committed, and one relations proof
//!             that they give the committed final value; group checks deferred to the end
//! out         per member the sum-check's point and per factor Factor::Public(value) — the
//!             step checks it against the factor's closed form — or Factor::Hidden(claim
//!             value), the claim the step passes on
//! ```
//!
//! A step is written once as `fn prove_x<M: ProductMode>` / `fn verify_x<M: ProductMode>`; its
//! proof type is generic over [`ProductMode::ProductProof`], so a plain proof never parses as a
//! zero-knowledge one.

use crate::{
    BatchMember, Combination, CommittedValue, DeferredChecks, FactorValue, LinearValue, ProverMasks,
    ProverRelation, QuadraticRelation, RelationsProof, ValueOpening, VerifierMasks, ZkError, ZkProductClaims,
    ZkProductProof, ZkProductShape, prove_zk_batched_products, prove_zk_product_combined,
    verify_zk_batched_products_deferred, verify_zk_product_combined_deferred,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use std::fmt::Debug;
use thiserror::Error;
use zkmha_field::{Fr, Zero};
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::{
    EvalClaim, FinalEvaluations, SumcheckClaim, SumcheckError, SumcheckInstance, SumcheckProof, prove,
    prove_batched, verify, verify_batched,
};
use zkmha_transcript::Transcript;

const LABEL_STEP: &[u8] = b"mode/plain/step";
const LABEL_CLAIMS: &[u8] = b"mode/plain/claims";
const LABEL_FINAL_EVALUATIONS: &[u8] = b"mode/plain/final-evaluations";

/// Why a step failed, naming it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModeError {
    /// A check of the step failed (lengths, a public factor's closed form, a plain relation).
    #[error("the {step} check failed")]
    CheckFailed {
        /// The step.
        step: &'static str,
    },
    /// The step's (plain) sum-check failed.
    #[error("{step}: {source}")]
    Sumcheck {
        /// The step.
        step: &'static str,
        /// The sum-check's error.
        #[source]
        source: SumcheckError,
    },
    /// The step's zero-knowledge proof failed.
    #[error("{step}: {source}")]
    ZeroKnowledge {
        /// The step.
        step: &'static str,
        /// The zero-knowledge error.
        #[source]
        source: ZkError,
    },
}

fn sumcheck_error(step: &'static str) -> impl Fn(SumcheckError) -> ModeError {
    move |source| ModeError::Sumcheck { step, source }
}

fn zk_error(step: &'static str) -> impl Fn(ZkError) -> ModeError {
    move |source| ModeError::ZeroKnowledge { step, source }
}

/// A factor's value at the end of a step's sum-check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Factor<V> {
    /// A public factor's value, for the verifier to check against its closed form.
    Public(Fr),
    /// A hidden factor's value (in the clear in the plain mode, committed in zero knowledge):
    /// a claim the step passes on.
    Hidden(V),
}

/// One member's outcome: the sum-check's point (its lowest variables for a batch member) and
/// its factors' values, in shape order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductOutcome<V> {
    /// The point, in variable order.
    pub point: Vec<Fr>,
    /// One per factor.
    pub factors: Vec<Factor<V>>,
}

impl<V: Clone> ProductOutcome<V> {
    /// Checks that public factor `k` has the value `expected` (its closed form).
    ///
    /// # Errors
    /// [`ModeError::CheckFailed`] naming `step` when factor `k` is missing, hidden or
    /// differs.
    pub fn check_public(&self, k: usize, expected: Fr, step: &'static str) -> Result<(), ModeError> {
        match self.factors.get(k) {
            Some(Factor::Public(value)) if *value == expected => Ok(()),
            _ => Err(ModeError::CheckFailed { step }),
        }
    }

    /// Hidden factor `k` as a claim at `point`.
    ///
    /// # Errors
    /// [`ModeError::CheckFailed`] naming `step` when factor `k` is missing or public.
    pub fn hidden(&self, k: usize, point: Vec<Fr>, step: &'static str) -> Result<EvalClaim<V>, ModeError> {
        match self.factors.get(k) {
            Some(Factor::Hidden(value)) => Ok(EvalClaim { point, value: value.clone() }),
            _ => Err(ModeError::CheckFailed { step }),
        }
    }
}

/// A step's prover result: its proof and the claims it hands on.
pub type Proved<P, C> = Result<(P, C), ModeError>;

/// A step's public factors computed by the verifier: `(member, its point) → the member's public
/// factors' values, in shape order`.
pub type PublicValues<'a> = &'a dyn Fn(usize, &[Fr]) -> Result<Vec<Fr>, ModeError>;

/// A relation `target = Σ_i factors[index_i]·term_i`: `(target, [(index_i, term_i)])`.
pub type Relation<V> = (V, Vec<(usize, V)>);

/// A member of a step's (batched) sum-check on the prover's side: which factors are public,
/// and the instance over the step's tables.
pub type ProverMember<'a> = (&'a ZkProductShape, &'a mut dyn FinalEvaluations);

/// A source of masks and blinding factors (any cryptographically secure generator).
pub trait ProverRng: RngCore + CryptoRng {}

impl<R: RngCore + CryptoRng + ?Sized> ProverRng for R {}

/// The prover's side of the zero-knowledge mode: the generators, the sum-checks' masks
/// (committed before the first challenge) and the randomness.
pub struct ZkProver<'a> {
    /// The Pedersen/Hyrax generators.
    pub params: &'a HyraxParams,
    /// The masks, one per sum-check in proof order.
    pub masks: &'a mut ProverMasks,
    /// Masks and blinds come from here.
    pub rng: &'a mut dyn ProverRng,
}

/// The verifier's side of the zero-knowledge mode: the generators, the masks' commitment and
/// the group equations, checked together at the end.
pub struct ZkVerifier<'a> {
    /// The Pedersen/Hyrax generators.
    pub params: &'a HyraxParams,
    /// The masks' commitment and schedule.
    pub masks: &'a mut VerifierMasks,
    /// The deferred group equations.
    pub checks: &'a mut DeferredChecks,
}

/// What a proof mode does with a step's claims: sums of products, sent values, linear
/// relations.
pub trait ProductMode: Sized + Clone + Debug + PartialEq + Eq + 'static {
    /// The mode's name, for messages (and absorbed by the drivers, so that a proof of one
    /// mode never verifies as the other).
    const NAME: &'static str;
    /// Whether commitments hide (zero knowledge).
    const HIDING: bool;
    /// A claim's value as the verifier holds it (`Fr`, or a combination of commitments).
    type Value: LinearValue + Debug + PartialEq + Eq;
    /// A claim's value as the prover holds it (`Fr`, or a committed value with its opening).
    type ProverValue: LinearValue + Debug + PartialEq + Eq;
    /// The proof of a step's (batched) sum of products.
    type ProductProof: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// A value as a proof sends it (`Fr`, or a hiding commitment to it).
    type Sent: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// The proof that linear combinations of values are zero (nothing in the plain mode, where
    /// the verifier checks them; a relations proof in zero knowledge).
    type ZeroProof: Clone + Debug + Default + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// What the prover needs besides the transcript.
    type Prover<'a>;
    /// What the verifier needs besides the transcript.
    type Verifier<'a>;

    /// Proves `Σ_x g_i(x) = claims[i]` for every member (one sum-check for all).
    ///
    /// The claims are absorbed here (in zero knowledge as the pairs of their combinations,
    /// never evaluated) before the first challenge; a step should still build them from values
    /// it sent or absorbed, public constants and challenges.
    ///
    /// # Errors
    /// [`ModeError::Sumcheck`] or [`ModeError::ZeroKnowledge`] naming `step`:
    /// lists of different lengths, an empty batch, an instance whose degree is not its shape's,
    /// too few generators for the masks.
    fn prove_products(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        members: Vec<ProverMember<'_>>,
        claims: &[&Self::ProverValue],
        transcript: &mut Transcript,
    ) -> Proved<Self::ProductProof, Vec<ProductOutcome<Self::ProverValue>>>;

    /// Verifies [`ProductMode::prove_products`] for members of the given shapes and numbers of
    /// variables. The caller must check every public factor against its closed form (the
    /// claims are absorbed as in [`ProductMode::prove_products`]).
    ///
    /// # Errors
    /// [`ModeError::Sumcheck`], [`ModeError::ZeroKnowledge`] or
    /// [`ModeError::CheckFailed`] naming `step`. In zero knowledge the group equations
    /// are left in the verifier's deferred checks.
    fn verify_products(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Self::Value],
        proof: &Self::ProductProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ProductOutcome<Self::Value>>, ModeError>;

    /// [`ProductMode::prove_products`] for members whose public factors the verifier computes
    /// itself at the sum-check's point ([`ProductMode::verify_products_computed`]): the plain
    /// proof does not carry their values.
    ///
    /// # Errors
    /// As [`ProductMode::prove_products`].
    fn prove_products_computed(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        members: Vec<ProverMember<'_>>,
        claims: &[&Self::ProverValue],
        transcript: &mut Transcript,
    ) -> Proved<Self::ProductProof, Vec<ProductOutcome<Self::ProverValue>>> {
        Self::prove_products(prover, step, members, claims, transcript)
    }

    /// Verifies [`ProductMode::prove_products_computed`]: `public(member, point)` gives a
    /// member's public factors' values (shape order) at its point, and every public factor is
    /// checked against them here (plain: they are what the final value is checked with; zero
    /// knowledge: the values the proof sends must equal them).
    ///
    /// # Errors
    /// As [`ProductMode::verify_products`]; [`ModeError::CheckFailed`] naming `step` for a
    /// public value that differs, and whatever `public` returns.
    fn verify_products_computed(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Self::Value],
        proof: &Self::ProductProof,
        transcript: &mut Transcript,
        public: PublicValues<'_>,
    ) -> Result<Vec<ProductOutcome<Self::Value>>, ModeError> {
        let outcomes = Self::verify_products(verifier, step, members, claims, proof, transcript)?;
        for (member, outcome) in outcomes.iter().enumerate() {
            let sent = outcome.factors.iter().filter_map(|f| match f {
                Factor::Public(v) => Some(*v),
                Factor::Hidden(_) => None,
            });
            if !sent.eq(public(member, &outcome.point)?) {
                return Err(ModeError::CheckFailed { step });
            }
        }
        Ok(outcomes)
    }

    /// The public constant `c` as a prover value (`c·U` with blinding 0 in zero knowledge).
    fn prover_constant(prover: &Self::Prover<'_>, c: Fr) -> Self::ProverValue;

    /// The public constant `c` as a verifier value.
    fn verifier_constant(verifier: &Self::Verifier<'_>, c: Fr) -> Self::Value;

    /// Sends `values` (in the clear, or committed with fresh blinding) and absorbs what is
    /// sent under `label`; returns it and the values as the prover now holds them.
    fn send(
        prover: &mut Self::Prover<'_>,
        label: &'static [u8],
        values: &[Fr],
        transcript: &mut Transcript,
    ) -> (Vec<Self::Sent>, Vec<Self::ProverValue>);

    /// Absorbs what [`ProductMode::send`] sent under `label`; the values as the verifier holds them.
    fn receive(
        verifier: &Self::Verifier<'_>,
        label: &'static [u8],
        sent: &[Self::Sent],
        transcript: &mut Transcript,
    ) -> Vec<Self::Value>;

    /// The prover's value in the clear (its opening's value in zero knowledge).
    fn clear(value: &Self::ProverValue) -> Fr;

    /// Proves relations `target = Σ_i factors[index_i]·term_i` (linear ones have no terms):
    /// plain, nothing to send (the verifier checks them); zero knowledge, one relations proof.
    ///
    /// # Errors
    /// [`ModeError::ZeroKnowledge`] naming `step` for a term naming a missing factor.
    fn prove_relations(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        factors: Vec<Self::ProverValue>,
        relations: Vec<Relation<Self::ProverValue>>,
        transcript: &mut Transcript,
    ) -> Result<Self::ZeroProof, ModeError>;

    /// Verifies [`ProductMode::prove_relations`]: at once in the plain mode, as a relations
    /// proof whose group equation is left in the deferred checks in zero knowledge.
    ///
    /// # Errors
    /// [`ModeError::CheckFailed`] naming `step` for a plain relation that does not hold,
    /// [`ModeError::ZeroKnowledge`] for a malformed relations proof.
    fn verify_relations(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        factors: Vec<Self::Value>,
        relations: Vec<Relation<Self::Value>>,
        proof: &Self::ZeroProof,
        transcript: &mut Transcript,
    ) -> Result<(), ModeError>;

    /// Proves that every target is zero ([`ProductMode::prove_relations`] without factors).
    ///
    /// # Errors
    /// As [`ProductMode::prove_relations`].
    fn prove_zero(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        targets: Vec<Self::ProverValue>,
        transcript: &mut Transcript,
    ) -> Result<Self::ZeroProof, ModeError> {
        let relations = targets.into_iter().map(|target| (target, Vec::new())).collect();
        Self::prove_relations(prover, step, Vec::new(), relations, transcript)
    }

    /// Verifies [`ProductMode::prove_zero`].
    ///
    /// # Errors
    /// As [`ProductMode::verify_relations`].
    fn verify_zero(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        targets: Vec<Self::Value>,
        proof: &Self::ZeroProof,
        transcript: &mut Transcript,
    ) -> Result<(), ModeError> {
        let relations = targets.into_iter().map(|target| (target, Vec::new())).collect();
        Self::verify_relations(verifier, step, Vec::new(), relations, proof, transcript)
    }
}

/// Claims in the clear, relations checked at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plain {}

/// Claims committed, relations proven, group checks deferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zk {}

/// A plain proof of a (batched) sum of products.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct PlainProductProof {
    /// The sum-check (batched when the step has several claims).
    pub sumcheck: SumcheckProof,
    /// Per member, every factor's value at the end, in shape order.
    pub final_evaluations: Vec<Vec<Fr>>,
}

fn factors<V>(shape: &ZkProductShape, values: impl IntoIterator<Item = (Fr, V)>) -> Vec<Factor<V>> {
    shape
        .public()
        .iter()
        .zip(values)
        .map(|(&public, (clear, value))| if public { Factor::Public(clear) } else { Factor::Hidden(value) })
        .collect()
}

/// The plain prover of a (batched) sum of products; `omit_public`: the proof carries the
/// hidden factors' final values only (the verifier computes the public ones).
fn plain_prove(
    step: &'static str,
    mut members: Vec<ProverMember<'_>>,
    claims: &[&Fr],
    transcript: &mut Transcript,
    omit_public: bool,
) -> Result<(PlainProductProof, Vec<ProductOutcome<Fr>>), ModeError> {
    let sums: Vec<Fr> = claims.iter().map(|c| **c).collect();
    if members.len() != sums.len() || members.is_empty() {
        return Err(ModeError::CheckFailed { step });
    }
    if members.iter().any(|(shape, instance)| instance.degree() != shape.shape().degree()) {
        return Err(ModeError::CheckFailed { step });
    }
    transcript.append_bytes(LABEL_STEP, step.as_bytes());
    transcript.append_fields(LABEL_CLAIMS, &sums);
    let (sumcheck, points) = match (members.as_mut_slice(), sums.as_slice()) {
        ([(_, instance)], [sum]) => {
            let (proof, claim) = prove(&mut **instance, *sum, transcript);
            (proof, vec![claim.point])
        }
        _ => {
            let instances: Vec<&mut dyn SumcheckInstance> =
                members.iter_mut().map(|(_, i)| &mut **i as &mut dyn SumcheckInstance).collect();
            let (proof, outcome) =
                prove_batched(instances, &sums, transcript).map_err(sumcheck_error(step))?;
            let points = (0..sums.len())
                .map(|k| outcome.instance_point(k).map(<[Fr]>::to_vec))
                .collect::<Option<Vec<_>>>()
                .ok_or(ModeError::CheckFailed { step })?;
            (proof, points)
        }
    };
    let values: Vec<Vec<Fr>> = members.iter().map(|(_, i)| i.final_evaluations()).collect();
    let final_evaluations: Vec<Vec<Fr>> = if omit_public {
        members
            .iter()
            .zip(&values)
            .map(|((shape, _), v)| {
                v.iter().zip(shape.public()).filter(|(_, p)| !**p).map(|(v, _)| *v).collect()
            })
            .collect()
    } else {
        values.clone()
    };
    transcript.append_fields(LABEL_FINAL_EVALUATIONS, &final_evaluations.concat());
    let outcomes = members
        .iter()
        .zip(points)
        .zip(&values)
        .map(|(((shape, _), point), values)| ProductOutcome {
            point,
            factors: factors(shape, values.iter().map(|v| (*v, *v))),
        })
        .collect();
    Ok((PlainProductProof { sumcheck, final_evaluations }, outcomes))
}

/// Every factor's value in shape order: the sent ones, or the computed public ones merged with
/// the sent hidden ones.
#[deny(clippy::indexing_slicing)]
fn plain_values(
    step: &'static str,
    shape: &ZkProductShape,
    sent: &[Fr],
    computed: Option<Vec<Fr>>,
) -> Result<Vec<Fr>, ModeError> {
    let fail = || ModeError::CheckFailed { step };
    let Some(public) = computed else {
        return if sent.len() == shape.shape().num_mles() { Ok(sent.to_vec()) } else { Err(fail()) };
    };
    let flags = shape.public();
    if public.len() != flags.iter().filter(|p| **p).count() || sent.len() + public.len() != flags.len() {
        return Err(fail());
    }
    let (mut public, mut hidden) = (public.into_iter(), sent.iter().copied());
    flags.iter().map(|&p| if p { public.next() } else { hidden.next() }.ok_or_else(fail)).collect()
}

/// The plain verifier; `public`: the verifier computes the public factors at each member's
/// point (the proof carries the hidden ones only).
#[deny(clippy::indexing_slicing)]
fn plain_verify(
    step: &'static str,
    members: &[BatchMember<'_>],
    claims: &[&Fr],
    proof: &PlainProductProof,
    transcript: &mut Transcript,
    public: Option<PublicValues<'_>>,
) -> Result<Vec<ProductOutcome<Fr>>, ModeError> {
    let sums: Vec<Fr> = claims.iter().map(|c| **c).collect();
    if members.len() != sums.len() || members.is_empty() || proof.final_evaluations.len() != members.len() {
        return Err(ModeError::CheckFailed { step });
    }
    transcript.append_bytes(LABEL_STEP, step.as_bytes());
    transcript.append_fields(LABEL_CLAIMS, &sums);
    let sumcheck_claims: Vec<SumcheckClaim> = members
        .iter()
        .zip(&sums)
        .map(|((shape, num_vars), sum)| SumcheckClaim::new(*num_vars, shape.shape().degree(), *sum))
        .collect();
    let values_at = |points: &[Vec<Fr>]| -> Result<Vec<Vec<Fr>>, ModeError> {
        members
            .iter()
            .zip(&proof.final_evaluations)
            .zip(points)
            .enumerate()
            .map(|(member, (((shape, _), sent), point))| {
                let computed = public.map(|f| f(member, point)).transpose()?;
                plain_values(step, shape, sent, computed)
            })
            .collect()
    };
    let combine = |values: &[Vec<Fr>]| -> Result<Vec<Fr>, ModeError> {
        members
            .iter()
            .zip(values)
            .map(|((shape, _), v)| shape.shape().combine(v).map_err(sumcheck_error(step)))
            .collect()
    };
    let (points, values) = match sumcheck_claims.as_slice() {
        [claim] => {
            let end = verify(claim, &proof.sumcheck, transcript).map_err(sumcheck_error(step))?;
            let points = vec![end.point.clone()];
            let values = values_at(&points)?;
            let combined = combine(&values)?;
            end.check(*combined.first().ok_or(ModeError::CheckFailed { step })?)
                .map_err(sumcheck_error(step))?;
            (points, values)
        }
        _ => {
            let outcome = verify_batched(&sumcheck_claims, &proof.sumcheck, transcript)
                .map_err(sumcheck_error(step))?;
            let points = (0..members.len())
                .map(|k| outcome.instance_point(k).map(<[Fr]>::to_vec))
                .collect::<Option<Vec<_>>>()
                .ok_or(ModeError::CheckFailed { step })?;
            let values = values_at(&points)?;
            outcome.check(&combine(&values)?).map_err(sumcheck_error(step))?;
            (points, values)
        }
    };
    transcript.append_fields(LABEL_FINAL_EVALUATIONS, &proof.final_evaluations.concat());
    Ok(members
        .iter()
        .zip(points)
        .zip(&values)
        .map(|(((shape, _), point), values)| ProductOutcome {
            point,
            factors: factors(shape, values.iter().map(|v| (*v, *v))),
        })
        .collect())
}

impl ProductMode for Plain {
    const NAME: &'static str = "plain";
    const HIDING: bool = false;
    type Value = Fr;
    type ProverValue = Fr;
    type ProductProof = PlainProductProof;
    type Sent = Fr;
    type ZeroProof = ();
    type Prover<'a> = ();
    type Verifier<'a> = ();

    fn prove_products(
        _prover: &mut (),
        step: &'static str,
        members: Vec<ProverMember<'_>>,
        claims: &[&Fr],
        transcript: &mut Transcript,
    ) -> Result<(PlainProductProof, Vec<ProductOutcome<Fr>>), ModeError> {
        plain_prove(step, members, claims, transcript, false)
    }

    fn prove_products_computed(
        _prover: &mut (),
        step: &'static str,
        members: Vec<ProverMember<'_>>,
        claims: &[&Fr],
        transcript: &mut Transcript,
    ) -> Result<(PlainProductProof, Vec<ProductOutcome<Fr>>), ModeError> {
        plain_prove(step, members, claims, transcript, true)
    }

    fn verify_products(
        _verifier: &mut (),
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Fr],
        proof: &PlainProductProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ProductOutcome<Fr>>, ModeError> {
        plain_verify(step, members, claims, proof, transcript, None)
    }

    fn verify_products_computed(
        _verifier: &mut (),
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Fr],
        proof: &PlainProductProof,
        transcript: &mut Transcript,
        public: PublicValues<'_>,
    ) -> Result<Vec<ProductOutcome<Fr>>, ModeError> {
        plain_verify(step, members, claims, proof, transcript, Some(public))
    }

    fn prover_constant(_prover: &(), c: Fr) -> Fr {
        c
    }

    fn verifier_constant(_verifier: &(), c: Fr) -> Fr {
        c
    }

    fn send(
        _prover: &mut (),
        label: &'static [u8],
        values: &[Fr],
        transcript: &mut Transcript,
    ) -> (Vec<Fr>, Vec<Fr>) {
        transcript.append_fields(label, values);
        (values.to_vec(), values.to_vec())
    }

    fn receive(_verifier: &(), label: &'static [u8], sent: &[Fr], transcript: &mut Transcript) -> Vec<Fr> {
        transcript.append_fields(label, sent);
        sent.to_vec()
    }

    fn clear(value: &Fr) -> Fr {
        *value
    }

    fn prove_relations(
        _prover: &mut (),
        _step: &'static str,
        _factors: Vec<Fr>,
        _relations: Vec<Relation<Fr>>,
        _transcript: &mut Transcript,
    ) -> Result<(), ModeError> {
        Ok(())
    }

    fn verify_relations(
        _verifier: &mut (),
        step: &'static str,
        factors: Vec<Fr>,
        relations: Vec<Relation<Fr>>,
        _proof: &(),
        _transcript: &mut Transcript,
    ) -> Result<(), ModeError> {
        for (target, terms) in relations {
            let mut sum = Fr::zero();
            for (index, term) in terms {
                sum += *factors.get(index).ok_or(ModeError::CheckFailed { step })? * term;
            }
            if sum != target {
                return Err(ModeError::CheckFailed { step });
            }
        }
        Ok(())
    }
}

/// The zero-knowledge outcome: hidden factors' commitments (with their openings on the
/// prover's side).
fn zk_outcome<V>(
    claims: ZkProductClaims,
    mut hidden: impl FnMut(usize, G1Affine) -> Option<V>,
    step: &'static str,
) -> Result<ProductOutcome<V>, ModeError> {
    let factors = claims
        .values
        .iter()
        .enumerate()
        .map(|(k, value)| match value {
            FactorValue::Public(v) => Some(Factor::Public(*v)),
            FactorValue::Hidden(c) => hidden(k, *c).map(Factor::Hidden),
        })
        .collect::<Option<Vec<_>>>()
        .ok_or(ModeError::CheckFailed { step })?;
    Ok(ProductOutcome { point: claims.point, factors })
}

impl ProductMode for Zk {
    const NAME: &'static str = "zero-knowledge";
    const HIDING: bool = true;
    type Value = Combination;
    type ProverValue = CommittedValue;
    type ProductProof = ZkProductProof;
    type Sent = G1Affine;
    type ZeroProof = RelationsProof;
    type Prover<'a> = ZkProver<'a>;
    type Verifier<'a> = ZkVerifier<'a>;

    fn prove_products(
        prover: &mut ZkProver<'_>,
        step: &'static str,
        mut members: Vec<ProverMember<'_>>,
        claims: &[&CommittedValue],
        transcript: &mut Transcript,
    ) -> Result<(ZkProductProof, Vec<ProductOutcome<CommittedValue>>), ModeError> {
        let params = prover.params;
        let mut rng = &mut *prover.rng;
        // A claim stays a combination of commitments, absorbed as its pairs (evaluating it to
        // absorb the point was one small MSM per step on both sides).
        let (proof, outs, openings) = match (members.as_mut_slice(), claims) {
            ([(shape, instance)], [claim]) => {
                let (proof, out, openings) = prove_zk_product_combined(
                    params,
                    shape,
                    &mut **instance,
                    claim,
                    prover.masks,
                    transcript,
                    &mut rng,
                )
                .map_err(zk_error(step))?;
                (proof, vec![out], vec![openings])
            }
            _ => {
                let sums: Vec<CommittedValue> = claims.iter().map(|c| (*c).clone()).collect();
                prove_zk_batched_products(params, members, &sums, prover.masks, transcript, &mut rng)
                    .map_err(zk_error(step))?
            }
        };
        let outcomes = outs
            .into_iter()
            .zip(openings)
            .map(|(out, openings)| {
                zk_outcome(
                    out,
                    |k, commitment| {
                        openings
                            .get(k)
                            .copied()
                            .flatten()
                            .map(|opening| CommittedValue::new(commitment, opening))
                    },
                    step,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((proof, outcomes))
    }

    #[deny(clippy::indexing_slicing)]
    fn verify_products(
        verifier: &mut ZkVerifier<'_>,
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Combination],
        proof: &ZkProductProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ProductOutcome<Combination>>, ModeError> {
        let outs = match (members, claims) {
            ([(shape, num_vars)], [claim]) => vec![
                verify_zk_product_combined_deferred(
                    verifier.params,
                    shape,
                    *num_vars,
                    claim,
                    proof,
                    verifier.masks,
                    transcript,
                    verifier.checks,
                )
                .map_err(zk_error(step))?,
            ],
            _ => {
                let commitments: Vec<Combination> = claims.iter().map(|c| (*c).clone()).collect();
                verify_zk_batched_products_deferred(
                    verifier.params,
                    members,
                    &commitments,
                    proof,
                    verifier.masks,
                    transcript,
                    verifier.checks,
                )
                .map_err(zk_error(step))?
            }
        };
        outs.into_iter()
            .map(|out| zk_outcome(out, |_, commitment| Some(Combination::point(commitment)), step))
            .collect()
    }

    fn prover_constant(prover: &ZkProver<'_>, c: Fr) -> CommittedValue {
        CommittedValue::public(prover.params, c)
    }

    fn verifier_constant(verifier: &ZkVerifier<'_>, c: Fr) -> Combination {
        Combination::scaled_point(c, verifier.params.value_generator)
    }

    fn send(
        prover: &mut ZkProver<'_>,
        label: &'static [u8],
        values: &[Fr],
        transcript: &mut Transcript,
    ) -> (Vec<G1Affine>, Vec<CommittedValue>) {
        let hidden: Vec<CommittedValue> = values
            .iter()
            .map(|v| {
                let opening = ValueOpening::hide(*v, &mut prover.rng);
                CommittedValue::new(opening.commit(prover.params).into(), opening)
            })
            .collect();
        let sent: Vec<G1Affine> = hidden.iter().map(|h| G1Affine::from(h.commitment.evaluate())).collect();
        absorb_points(transcript, label, &sent);
        (sent, hidden)
    }

    fn receive(
        _verifier: &ZkVerifier<'_>,
        label: &'static [u8],
        sent: &[G1Affine],
        transcript: &mut Transcript,
    ) -> Vec<Combination> {
        absorb_points(transcript, label, sent);
        sent.iter().map(|c| Combination::point(*c)).collect()
    }

    fn clear(value: &CommittedValue) -> Fr {
        value.opening.value
    }

    fn prove_relations(
        prover: &mut ZkProver<'_>,
        step: &'static str,
        factors: Vec<CommittedValue>,
        relations: Vec<Relation<CommittedValue>>,
        transcript: &mut Transcript,
    ) -> Result<RelationsProof, ModeError> {
        let relations: Vec<ProverRelation> =
            relations.into_iter().map(|(target, terms)| ProverRelation { target, terms }).collect();
        RelationsProof::prove(prover.params, &factors, &relations, transcript, &mut &mut *prover.rng)
            .map_err(zk_error(step))
    }

    fn verify_relations(
        verifier: &mut ZkVerifier<'_>,
        step: &'static str,
        factors: Vec<Combination>,
        relations: Vec<Relation<Combination>>,
        proof: &RelationsProof,
        transcript: &mut Transcript,
    ) -> Result<(), ModeError> {
        let relations: Vec<QuadraticRelation> =
            relations.into_iter().map(|(target, terms)| QuadraticRelation { target, terms }).collect();
        proof
            .verify_deferred(verifier.params, &factors, &relations, transcript, verifier.checks)
            .map_err(zk_error(step))
    }
}

/// Absorbs commitments under `label` (their compressed encodings).
fn absorb_points(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len());
    for point in points {
        // Writing into a vector cannot fail.
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}
