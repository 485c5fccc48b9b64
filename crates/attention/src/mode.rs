//! One sub-protocol, two modes: the plain proof (claims are field values) and the
//! zero-knowledge proof (claims are Pedersen commitments) from the same code.
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
//! A step is written once as `fn prove_x<M: Mode>` / `fn verify_x<M: Mode>`; its proof type is
//! generic over [`Mode::ProductProof`], so a plain proof never parses as a zero-knowledge one.

use crate::AttentionError;
use crate::common::sumcheck_error;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use std::fmt::Debug;
use zkmha_field::{Fr, Zero};
use zkmha_lookup::{
    Lookup, LookupProof, LookupTable, ZkLookupClaims, ZkLookupProof, prove_lookups_zk, verify_lookups_zk,
};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::ZkInnerProductProof;
use zkmha_pcs::{
    G1Affine, Hyrax, HyraxBlinds, HyraxCommitment, HyraxParams, MultiOpeningProof, OpeningClaim,
    PolynomialTable,
};
use zkmha_sumcheck::{
    EvalClaim, FinalEvaluations, ProductSumcheck, SumOfProducts, SumcheckClaim, SumcheckInstance,
    SumcheckProof, prove, prove_batched, verify, verify_batched,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, FactorValue, LinearValue, MaskSchedule,
    ProverMasks, ProverRelation, QuadraticRelation, RelationsProof, ValueOpening, VerifierMasks, ZkError,
    ZkMultiOpeningProof, ZkProductClaims, ZkProductProof, ZkProductShape, prove_multi_opening_zk,
    prove_zk_batched_products, prove_zk_product, verify_multi_opening_zk_deferred,
    verify_zk_batched_products_deferred, verify_zk_product_deferred,
};

const LABEL_STEP: &[u8] = b"mode/plain/step";
/// The final opening's step name (both modes).
pub(crate) const STEP_OPENINGS: &str = "openings";
const STEP_MASKS: &str = "masks";
const LABEL_CLAIMS: &[u8] = b"mode/plain/claims";
const LABEL_FINAL_EVALUATIONS: &[u8] = b"mode/plain/final-evaluations";

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
    /// [`AttentionError::CheckFailed`] naming `step` when factor `k` is missing, hidden or
    /// differs.
    pub fn check_public(&self, k: usize, expected: Fr, step: &'static str) -> Result<(), AttentionError> {
        match self.factors.get(k) {
            Some(Factor::Public(value)) if *value == expected => Ok(()),
            _ => Err(AttentionError::CheckFailed { step }),
        }
    }

    /// Hidden factor `k` as a claim at `point`.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] naming `step` when factor `k` is missing or public.
    pub fn hidden(
        &self,
        k: usize,
        point: Vec<Fr>,
        step: &'static str,
    ) -> Result<EvalClaim<V>, AttentionError> {
        match self.factors.get(k) {
            Some(Factor::Hidden(value)) => Ok(EvalClaim { point, value: value.clone() }),
            _ => Err(AttentionError::CheckFailed { step }),
        }
    }
}

/// A step's prover result: its proof and the claims it hands on.
pub type Proved<P, C> = Result<(P, C), AttentionError>;

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

/// What a proof mode does with a step's sum of products.
pub trait Mode: Sized + Clone + Debug + PartialEq + Eq + 'static {
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
    /// The proof of a batch of lookups (their witness columns' values in the clear, or
    /// committed).
    type LookupProof: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// The proof that linear combinations of values are zero (nothing in the plain mode, where
    /// the verifier checks them; a relations proof in zero knowledge).
    type ZeroProof: Clone + Debug + Default + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// The prover's secret data for opening a committed table (nothing in the plain mode; the
    /// rows' blinding factors in zero knowledge).
    type Blinds: Clone + Debug + Send + Sync;
    /// The proof of the final opening of every committed polynomial's claims.
    type OpeningProof: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// The prover's state for one proof (nothing in the plain mode; the masks of every
    /// sum-check in zero knowledge).
    type ProverSession;
    /// The verifier's state for one proof (nothing in the plain mode; the masks' commitment and
    /// the deferred group equations in zero knowledge).
    type VerifierSession;
    /// What a proof sends to open its session (nothing; the masks' commitment), absorbed
    /// before the first challenge.
    type SessionCommitment: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;
    /// What a proof sends to close it (nothing; the masks' values at their points, in one
    /// inner-product argument), absorbed before the final group equations' weights.
    type SessionProof: Clone + Debug + PartialEq + Eq + CanonicalSerialize + CanonicalDeserialize;

    /// Opens the prover's session: in zero knowledge commits to the masks of `schedule()`
    /// (every masked sum-check of the proof, in order) and absorbs the commitment.
    ///
    /// # Errors
    /// The schedule's error, [`AttentionError::ZeroKnowledge`] for too few generators.
    fn start_prover(
        params: &HyraxParams,
        schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        transcript: &mut Transcript,
        rng: &mut dyn ProverRng,
    ) -> Result<(Self::ProverSession, Self::SessionCommitment), AttentionError>;

    /// The prover's context over its session.
    fn prover<'a>(
        params: &'a HyraxParams,
        session: &'a mut Self::ProverSession,
        rng: &'a mut dyn ProverRng,
    ) -> Self::Prover<'a>;

    /// Closes the prover's session (in zero knowledge: every mask's value at its point).
    ///
    /// # Errors
    /// [`AttentionError::ZeroKnowledge`] when masks are left unused.
    fn finish_prover(
        params: &HyraxParams,
        session: Self::ProverSession,
        transcript: &mut Transcript,
        rng: &mut dyn ProverRng,
    ) -> Result<Self::SessionProof, AttentionError>;

    /// Opens the verifier's session: absorbs the masks' commitment with `schedule()`.
    ///
    /// # Errors
    /// The schedule's error.
    fn start_verifier(
        schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        commitment: &Self::SessionCommitment,
        transcript: &mut Transcript,
    ) -> Result<Self::VerifierSession, AttentionError>;

    /// The verifier's context over its session.
    fn verifier<'a>(params: &'a HyraxParams, session: &'a mut Self::VerifierSession) -> Self::Verifier<'a>;

    /// Closes the verifier's session: checks the masks' openings and then every deferred
    /// group equation in one multi-scalar multiplication.
    ///
    /// # Errors
    /// [`AttentionError::ZeroKnowledge`] for a failing equation.
    fn finish_verifier(
        params: &HyraxParams,
        session: Self::VerifierSession,
        proof: &Self::SessionProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError>;
    /// What the prover needs besides the transcript.
    type Prover<'a>;
    /// What the verifier needs besides the transcript.
    type Verifier<'a>;

    /// Commits to an integer table of `num_vars` variables with `column_vars` column variables
    /// (binding; hiding in zero knowledge, its blinds drawn from `rng`).
    ///
    /// # Errors
    /// [`AttentionError::Commitment`] for too few generators or a table of the wrong size.
    fn commit_table(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        rng: &mut dyn ProverRng,
    ) -> Result<(HyraxCommitment, Self::Blinds), AttentionError>;

    /// Proves every claim on the committed polynomials in one multi-point opening (claim
    /// `polynomial` indices count in `polynomials`; every polynomial needs a claim).
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] (`"openings"`) for claims that do not fit, and in zero
    /// knowledge [`AttentionError::ZeroKnowledge`].
    fn prove_openings(
        prover: &mut Self::Prover<'_>,
        params: &HyraxParams,
        polynomials: &[(PolynomialTable<'_>, &HyraxCommitment, &Self::Blinds)],
        claims: &[OpeningClaim<Self::ProverValue>],
        transcript: &mut Transcript,
    ) -> Result<Self::OpeningProof, AttentionError>;

    /// Verifies [`Mode::prove_openings`] (in zero knowledge with the group equations left in
    /// the deferred checks).
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] (`"openings"`) for a claim a commitment does not open
    /// to (plain) or a malformed proof; [`AttentionError::ZeroKnowledge`] in zero knowledge.
    fn verify_openings(
        verifier: &mut Self::Verifier<'_>,
        params: &HyraxParams,
        commitments: &[&HyraxCommitment],
        claims: &[OpeningClaim<Self::Value>],
        proof: &Self::OpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError>;

    /// Proves `Σ_x g_i(x) = claims[i]` for every member (one sum-check for all).
    ///
    /// # Errors
    /// [`AttentionError::Sumcheck`] or [`AttentionError::ZeroKnowledge`] naming `step`:
    /// lists of different lengths, an empty batch, an instance whose degree is not its shape's,
    /// too few generators for the masks.
    fn prove_products(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        members: Vec<ProverMember<'_>>,
        claims: &[&Self::ProverValue],
        transcript: &mut Transcript,
    ) -> Proved<Self::ProductProof, Vec<ProductOutcome<Self::ProverValue>>>;

    /// Verifies [`Mode::prove_products`] for members of the given shapes and numbers of
    /// variables. The caller must check every public factor against its closed form.
    ///
    /// # Errors
    /// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
    /// [`AttentionError::CheckFailed`] naming `step`. In zero knowledge the group equations
    /// are left in the verifier's deferred checks.
    fn verify_products(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Self::Value],
        proof: &Self::ProductProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ProductOutcome<Self::Value>>, AttentionError>;

    /// Proves several lookups with one batched fractional-sum proof; per lookup, the claims
    /// on its witness columns (at one point) and on its multiplicities.
    ///
    /// # Errors
    /// [`AttentionError::Lookup`]: a row outside its table, wrong multiplicities, lengths that
    /// do not fit.
    fn prove_lookups(
        prover: &mut Self::Prover<'_>,
        lookups: &[Lookup<'_>],
        transcript: &mut Transcript,
    ) -> Proved<Self::LookupProof, Vec<ZkLookupClaims<Self::ProverValue>>>;

    /// Verifies [`Mode::prove_lookups`] for `(table, witness num_vars)` pairs. The caller
    /// must discharge every claim (the columns' and the multiplicities').
    ///
    /// # Errors
    /// [`AttentionError::Lookup`] (in zero knowledge the group equations are left in the
    /// verifier's deferred checks, where a false lookup fails).
    fn verify_lookups(
        verifier: &mut Self::Verifier<'_>,
        lookups: &[(&dyn LookupTable, usize)],
        proof: &Self::LookupProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ZkLookupClaims<Self::Value>>, AttentionError>;

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

    /// Absorbs what [`Mode::send`] sent under `label`; the values as the verifier holds them.
    fn receive(
        verifier: &Self::Verifier<'_>,
        label: &'static [u8],
        sent: &[Self::Sent],
        transcript: &mut Transcript,
    ) -> Vec<Self::Value>;

    /// Proves that every target is zero (plain: nothing to send; the verifier checks).
    ///
    /// # Errors
    /// [`AttentionError::ZeroKnowledge`] naming `step` when the relations proof fails.
    fn prove_zero(
        prover: &mut Self::Prover<'_>,
        step: &'static str,
        targets: Vec<Self::ProverValue>,
        transcript: &mut Transcript,
    ) -> Result<Self::ZeroProof, AttentionError>;

    /// Verifies that every target is zero: at once in the plain mode, as a relations proof
    /// whose group equation is left in the deferred checks in zero knowledge.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`] naming `step` for a plain target that is not zero,
    /// [`AttentionError::ZeroKnowledge`] for a malformed relations proof.
    fn verify_zero(
        verifier: &mut Self::Verifier<'_>,
        step: &'static str,
        targets: Vec<Self::Value>,
        proof: &Self::ZeroProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError>;
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

impl Mode for Plain {
    const NAME: &'static str = "plain";
    const HIDING: bool = false;
    type Value = Fr;
    type ProverValue = Fr;
    type ProductProof = PlainProductProof;
    type Sent = Fr;
    type LookupProof = LookupProof;
    type ZeroProof = ();
    type Blinds = ();
    type OpeningProof = MultiOpeningProof;
    type ProverSession = ();
    type VerifierSession = ();
    type SessionCommitment = ();
    type SessionProof = ();

    fn start_prover(
        _params: &HyraxParams,
        _schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        _transcript: &mut Transcript,
        _rng: &mut dyn ProverRng,
    ) -> Result<((), ()), AttentionError> {
        Ok(((), ()))
    }

    fn prover<'a>(_params: &'a HyraxParams, _session: &'a mut (), _rng: &'a mut dyn ProverRng) {}

    fn finish_prover(
        _params: &HyraxParams,
        _session: (),
        _transcript: &mut Transcript,
        _rng: &mut dyn ProverRng,
    ) -> Result<(), AttentionError> {
        Ok(())
    }

    fn start_verifier(
        _schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        _commitment: &(),
        _transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        Ok(())
    }

    fn verifier<'a>(_params: &'a HyraxParams, _session: &'a mut ()) {}

    fn finish_verifier(
        _params: &HyraxParams,
        _session: (),
        _proof: &(),
        _transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        Ok(())
    }

    type Prover<'a> = ();
    type Verifier<'a> = ();

    fn commit_table(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        _rng: &mut dyn ProverRng,
    ) -> Result<(HyraxCommitment, ()), AttentionError> {
        Ok((Hyrax::commit_small_with_columns(params, num_vars, column_vars, values)?, ()))
    }

    fn prove_openings(
        _prover: &mut (),
        _params: &HyraxParams,
        polynomials: &[(PolynomialTable<'_>, &HyraxCommitment, &())],
        claims: &[OpeningClaim<Fr>],
        transcript: &mut Transcript,
    ) -> Result<MultiOpeningProof, AttentionError> {
        let items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> =
            polynomials.iter().map(|(table, commitment, ())| (*table, *commitment)).collect();
        Hyrax::open_multi(&items, claims, transcript)
            .map_err(|_| AttentionError::CheckFailed { step: STEP_OPENINGS })
    }

    fn verify_openings(
        _verifier: &mut (),
        params: &HyraxParams,
        commitments: &[&HyraxCommitment],
        claims: &[OpeningClaim<Fr>],
        proof: &MultiOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        Hyrax::verify_multi(params, commitments, claims, proof, transcript)
            .map_err(|_| AttentionError::CheckFailed { step: STEP_OPENINGS })
    }

    fn prove_products(
        _prover: &mut (),
        step: &'static str,
        mut members: Vec<ProverMember<'_>>,
        claims: &[&Fr],
        transcript: &mut Transcript,
    ) -> Result<(PlainProductProof, Vec<ProductOutcome<Fr>>), AttentionError> {
        let sums: Vec<Fr> = claims.iter().map(|c| **c).collect();
        if members.len() != sums.len() || members.is_empty() {
            return Err(AttentionError::CheckFailed { step });
        }
        if members.iter().any(|(shape, instance)| instance.degree() != shape.shape().degree()) {
            return Err(AttentionError::CheckFailed { step });
        }
        transcript.append_bytes(LABEL_STEP, step.as_bytes());
        transcript.append_fields(LABEL_CLAIMS, &sums);
        let (sumcheck, points) = match members.as_mut_slice() {
            [(_, instance)] => {
                let (proof, claim) = prove(&mut **instance, sums[0], transcript);
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
                    .ok_or(AttentionError::CheckFailed { step })?;
                (proof, points)
            }
        };
        let final_evaluations: Vec<Vec<Fr>> = members.iter().map(|(_, i)| i.final_evaluations()).collect();
        transcript.append_fields(LABEL_FINAL_EVALUATIONS, &final_evaluations.concat());
        let outcomes = members
            .iter()
            .zip(points)
            .zip(&final_evaluations)
            .map(|(((shape, _), point), values)| ProductOutcome {
                point,
                factors: factors(shape, values.iter().map(|v| (*v, *v))),
            })
            .collect();
        Ok((PlainProductProof { sumcheck, final_evaluations }, outcomes))
    }

    #[deny(clippy::indexing_slicing)]
    fn verify_products(
        _verifier: &mut (),
        step: &'static str,
        members: &[BatchMember<'_>],
        claims: &[&Fr],
        proof: &PlainProductProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ProductOutcome<Fr>>, AttentionError> {
        let sums: Vec<Fr> = claims.iter().map(|c| **c).collect();
        if members.len() != sums.len()
            || members.is_empty()
            || proof.final_evaluations.len() != members.len()
            || members.iter().zip(&proof.final_evaluations).any(|((s, _), v)| v.len() != s.shape().num_mles())
        {
            return Err(AttentionError::CheckFailed { step });
        }
        transcript.append_bytes(LABEL_STEP, step.as_bytes());
        transcript.append_fields(LABEL_CLAIMS, &sums);
        let sumcheck_claims: Vec<SumcheckClaim> = members
            .iter()
            .zip(&sums)
            .map(|((shape, num_vars), sum)| SumcheckClaim::new(*num_vars, shape.shape().degree(), *sum))
            .collect();
        let combined = members
            .iter()
            .zip(&proof.final_evaluations)
            .map(|((shape, _), values)| shape.shape().combine(values))
            .collect::<Result<Vec<Fr>, _>>()
            .map_err(sumcheck_error(step))?;
        let points = match (sumcheck_claims.as_slice(), combined.as_slice()) {
            ([claim], [value]) => {
                let end = verify(claim, &proof.sumcheck, transcript).map_err(sumcheck_error(step))?;
                end.check(*value).map_err(sumcheck_error(step))?;
                vec![end.point]
            }
            _ => {
                let outcome = verify_batched(&sumcheck_claims, &proof.sumcheck, transcript)
                    .map_err(sumcheck_error(step))?;
                outcome.check(&combined).map_err(sumcheck_error(step))?;
                (0..members.len())
                    .map(|k| outcome.instance_point(k).map(<[Fr]>::to_vec))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(AttentionError::CheckFailed { step })?
            }
        };
        transcript.append_fields(LABEL_FINAL_EVALUATIONS, &proof.final_evaluations.concat());
        Ok(members
            .iter()
            .zip(points)
            .zip(&proof.final_evaluations)
            .map(|(((shape, _), point), values)| ProductOutcome {
                point,
                factors: factors(shape, values.iter().map(|v| (*v, *v))),
            })
            .collect())
    }

    fn prove_lookups(
        _prover: &mut (),
        lookups: &[Lookup<'_>],
        transcript: &mut Transcript,
    ) -> Result<(LookupProof, Vec<ZkLookupClaims<Fr>>), AttentionError> {
        let (proof, claims) = zkmha_lookup::prove_lookups(lookups, transcript)?;
        Ok((proof, claims.into_iter().map(ZkLookupClaims::from).collect()))
    }

    fn verify_lookups(
        _verifier: &mut (),
        lookups: &[(&dyn LookupTable, usize)],
        proof: &LookupProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ZkLookupClaims<Fr>>, AttentionError> {
        let claims = zkmha_lookup::verify_lookups(lookups, proof, transcript)?;
        Ok(claims.into_iter().map(ZkLookupClaims::from).collect())
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

    fn prove_zero(
        _prover: &mut (),
        _step: &'static str,
        _targets: Vec<Fr>,
        _transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        Ok(())
    }

    fn verify_zero(
        _verifier: &mut (),
        step: &'static str,
        targets: Vec<Fr>,
        _proof: &(),
        _transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        if targets.iter().all(Zero::is_zero) { Ok(()) } else { Err(AttentionError::CheckFailed { step }) }
    }
}

fn zk_error(step: &'static str) -> impl Fn(ZkError) -> AttentionError {
    move |source| AttentionError::ZeroKnowledge { step, source }
}

/// The zero-knowledge outcome: hidden factors' commitments (with their openings on the
/// prover's side).
fn zk_outcome<V>(
    claims: ZkProductClaims,
    mut hidden: impl FnMut(usize, G1Affine) -> Option<V>,
    step: &'static str,
) -> Result<ProductOutcome<V>, AttentionError> {
    let factors = claims
        .values
        .iter()
        .enumerate()
        .map(|(k, value)| match value {
            FactorValue::Public(v) => Some(Factor::Public(*v)),
            FactorValue::Hidden(c) => hidden(k, *c).map(Factor::Hidden),
        })
        .collect::<Option<Vec<_>>>()
        .ok_or(AttentionError::CheckFailed { step })?;
    Ok(ProductOutcome { point: claims.point, factors })
}

impl Mode for Zk {
    const NAME: &'static str = "zero-knowledge";
    const HIDING: bool = true;
    type Value = Combination;
    type ProverValue = CommittedValue;
    type ProductProof = ZkProductProof;
    type Sent = G1Affine;
    type LookupProof = ZkLookupProof;
    type ZeroProof = RelationsProof;
    type Blinds = HyraxBlinds;
    type OpeningProof = ZkMultiOpeningProof;
    type ProverSession = ProverMasks;
    type VerifierSession = (VerifierMasks, DeferredChecks);
    type SessionCommitment = G1Affine;
    type SessionProof = ZkInnerProductProof;

    fn start_prover(
        params: &HyraxParams,
        schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        transcript: &mut Transcript,
        rng: &mut dyn ProverRng,
    ) -> Result<(ProverMasks, G1Affine), AttentionError> {
        // A proof makes hundreds of Pedersen commitments `v·U + β·H`: fixed-base tables for
        // `U` and `H` (built once per parameters) make each a few additions.
        params.prepare_pedersen_tables();
        ProverMasks::commit(params, schedule()?, transcript, &mut &mut *rng).map_err(zk_error(STEP_MASKS))
    }

    fn prover<'a>(
        params: &'a HyraxParams,
        session: &'a mut ProverMasks,
        rng: &'a mut dyn ProverRng,
    ) -> ZkProver<'a> {
        ZkProver { params, masks: session, rng }
    }

    fn finish_prover(
        params: &HyraxParams,
        session: ProverMasks,
        transcript: &mut Transcript,
        rng: &mut dyn ProverRng,
    ) -> Result<ZkInnerProductProof, AttentionError> {
        session.prove_openings(params, transcript, &mut &mut *rng).map_err(zk_error(STEP_MASKS))
    }

    fn start_verifier(
        schedule: &dyn Fn() -> Result<MaskSchedule, AttentionError>,
        commitment: &G1Affine,
        transcript: &mut Transcript,
    ) -> Result<(VerifierMasks, DeferredChecks), AttentionError> {
        Ok((VerifierMasks::absorb(schedule()?, *commitment, transcript), DeferredChecks::new()))
    }

    fn verifier<'a>(
        params: &'a HyraxParams,
        session: &'a mut (VerifierMasks, DeferredChecks),
    ) -> ZkVerifier<'a> {
        let (masks, checks) = session;
        ZkVerifier { params, masks, checks }
    }

    fn finish_verifier(
        params: &HyraxParams,
        session: (VerifierMasks, DeferredChecks),
        proof: &ZkInnerProductProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        let (masks, mut checks) = session;
        masks.verify_openings(params, proof, transcript, &mut checks).map_err(zk_error(STEP_MASKS))?;
        checks.finish(transcript).map_err(zk_error("the proof's group equations"))
    }

    type Prover<'a> = ZkProver<'a>;
    type Verifier<'a> = ZkVerifier<'a>;

    fn commit_table(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        rng: &mut dyn ProverRng,
    ) -> Result<(HyraxCommitment, HyraxBlinds), AttentionError> {
        Ok(Hyrax::commit_small_hiding(params, num_vars, column_vars, values, &mut &mut *rng)?)
    }

    fn prove_openings(
        prover: &mut ZkProver<'_>,
        params: &HyraxParams,
        polynomials: &[(PolynomialTable<'_>, &HyraxCommitment, &HyraxBlinds)],
        claims: &[OpeningClaim<CommittedValue>],
        transcript: &mut Transcript,
    ) -> Result<ZkMultiOpeningProof, AttentionError> {
        prove_multi_opening_zk(params, polynomials, claims, prover.masks, transcript, &mut prover.rng)
            .map_err(zk_error(STEP_OPENINGS))
    }

    fn verify_openings(
        verifier: &mut ZkVerifier<'_>,
        params: &HyraxParams,
        commitments: &[&HyraxCommitment],
        claims: &[OpeningClaim<Combination>],
        proof: &ZkMultiOpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        verify_multi_opening_zk_deferred(
            params,
            commitments,
            claims,
            proof,
            verifier.masks,
            transcript,
            verifier.checks,
        )
        .map_err(zk_error(STEP_OPENINGS))
    }

    fn prove_products(
        prover: &mut ZkProver<'_>,
        step: &'static str,
        mut members: Vec<ProverMember<'_>>,
        claims: &[&CommittedValue],
        transcript: &mut Transcript,
    ) -> Result<(ZkProductProof, Vec<ProductOutcome<CommittedValue>>), AttentionError> {
        let params = prover.params;
        let mut rng = &mut *prover.rng;
        let (proof, outs, openings) = match (members.as_mut_slice(), claims) {
            ([(shape, instance)], [claim]) => {
                let (proof, out, openings) = prove_zk_product(
                    params,
                    shape,
                    &mut **instance,
                    (G1Affine::from(claim.commitment.evaluate()), &claim.opening),
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
    ) -> Result<Vec<ProductOutcome<Combination>>, AttentionError> {
        let outs = match (members, claims) {
            ([(shape, num_vars)], [claim]) => vec![
                verify_zk_product_deferred(
                    verifier.params,
                    shape,
                    *num_vars,
                    G1Affine::from(claim.evaluate()),
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

    fn prove_lookups(
        prover: &mut ZkProver<'_>,
        lookups: &[Lookup<'_>],
        transcript: &mut Transcript,
    ) -> Result<(ZkLookupProof, Vec<ZkLookupClaims<CommittedValue>>), AttentionError> {
        Ok(prove_lookups_zk(prover.params, lookups, prover.masks, transcript, &mut prover.rng)?)
    }

    fn verify_lookups(
        verifier: &mut ZkVerifier<'_>,
        lookups: &[(&dyn LookupTable, usize)],
        proof: &ZkLookupProof,
        transcript: &mut Transcript,
    ) -> Result<Vec<ZkLookupClaims<Combination>>, AttentionError> {
        Ok(verify_lookups_zk(verifier.params, lookups, proof, verifier.masks, transcript, verifier.checks)?)
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

    fn prove_zero(
        prover: &mut ZkProver<'_>,
        step: &'static str,
        targets: Vec<CommittedValue>,
        transcript: &mut Transcript,
    ) -> Result<RelationsProof, AttentionError> {
        let relations: Vec<ProverRelation> =
            targets.into_iter().map(|target| ProverRelation { target, terms: Vec::new() }).collect();
        RelationsProof::prove(prover.params, &[], &relations, transcript, &mut &mut *prover.rng)
            .map_err(zk_error(step))
    }

    fn verify_zero(
        verifier: &mut ZkVerifier<'_>,
        step: &'static str,
        targets: Vec<Combination>,
        proof: &RelationsProof,
        transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        let relations: Vec<QuadraticRelation> =
            targets.into_iter().map(|target| QuadraticRelation { target, terms: Vec::new() }).collect();
        proof
            .verify_deferred(verifier.params, &[], &relations, transcript, verifier.checks)
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

/// The product of one factor per flag, `public[k]` marking factor `k` as one the verifier
/// evaluates itself.
///
/// # Errors
/// [`AttentionError::Sumcheck`] for no factors.
pub(crate) fn product_of(step: &'static str, public: Vec<bool>) -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(public.len()).map_err(sumcheck_error(step))?;
    ZkProductShape::new(product, public).map_err(zk_error(step))
}

/// A sum of products whose factors are flagged public (`public[k]`: the verifier evaluates
/// factor `k` itself).
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] for flags that do not fit the sum.
pub(crate) fn sum_of_products(
    step: &'static str,
    sum: SumOfProducts,
    public: Vec<bool>,
) -> Result<ZkProductShape, AttentionError> {
    ZkProductShape::new(sum, public).map_err(zk_error(step))
}

/// A one-claim step's sum of products over dense tables: the proof and the outcome.
///
/// # Errors
/// [`AttentionError::Sumcheck`] for tables that do not fit the shape, and as
/// [`Mode::prove_products`].
pub(crate) fn prove_dense<M: Mode>(
    prover: &mut M::Prover<'_>,
    step: &'static str,
    shape: &ZkProductShape,
    tables: Vec<DenseMultilinearExtension>,
    claim: &M::ProverValue,
    transcript: &mut Transcript,
) -> Proved<M::ProductProof, ProductOutcome<M::ProverValue>> {
    let mut instance = ProductSumcheck::new(shape.shape().clone(), tables).map_err(sumcheck_error(step))?;
    let (proof, outcomes) =
        M::prove_products(prover, step, vec![(shape, &mut instance)], &[claim], transcript)?;
    Ok((proof, single(outcomes, step)?))
}

/// Verifies a one-claim step's sum of products over `num_vars` variables: the outcome.
///
/// # Errors
/// As [`Mode::verify_products`].
pub(crate) fn verify_single<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    step: &'static str,
    shape: &ZkProductShape,
    num_vars: usize,
    claim: &M::Value,
    proof: &M::ProductProof,
    transcript: &mut Transcript,
) -> Result<ProductOutcome<M::Value>, AttentionError> {
    let outcomes = M::verify_products(verifier, step, &[(shape, num_vars)], &[claim], proof, transcript)?;
    single(outcomes, step)
}

/// The one outcome of a single-member step.
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming `step` unless there is exactly one.
pub(crate) fn single<V>(
    outcomes: Vec<ProductOutcome<V>>,
    step: &'static str,
) -> Result<ProductOutcome<V>, AttentionError> {
    let mut outcomes = outcomes.into_iter();
    match (outcomes.next(), outcomes.next()) {
        (Some(outcome), None) => Ok(outcome),
        _ => Err(AttentionError::CheckFailed { step }),
    }
}

/// Test support: a step's prover and verifier run in zero knowledge around their masks, with
/// every deferred group equation checked (in-crate malicious-prover tests use it with provers
/// changed at one step).
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) mod zk_test_support {
    use super::*;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_zk::MaskSchedule;

    /// Proves with `prove` and verifies its output with `verify` in zero knowledge; the
    /// verifier's error, or the group equations' as `ZeroKnowledge { "the group equations" }`.
    pub(crate) fn zk_round<T, R>(
        schedule: Vec<(usize, usize)>,
        prove: impl FnOnce(&mut ZkProver<'_>, &mut Transcript) -> Result<T, AttentionError>,
        verify: impl FnOnce(&mut ZkVerifier<'_>, &mut Transcript, &T) -> Result<R, AttentionError>,
    ) -> Result<R, AttentionError> {
        let schedule = MaskSchedule(schedule);
        let params = HyraxParams::new((2 * schedule.generator_vars()).max(16));
        let mut rng = StdRng::seed_from_u64(17);
        let mut t = Transcript::new(b"zk-round");
        let (mut masks, commitment) =
            ProverMasks::commit(&params, schedule.clone(), &mut t, &mut rng).unwrap();
        let out = prove(&mut ZkProver { params: &params, masks: &mut masks, rng: &mut rng }, &mut t).unwrap();
        let openings = masks.prove_openings(&params, &mut t, &mut rng).unwrap();
        let mut t = Transcript::new(b"zk-round");
        let mut masks = VerifierMasks::absorb(schedule, commitment, &mut t);
        let mut checks = DeferredChecks::new();
        let verified = verify(
            &mut ZkVerifier { params: &params, masks: &mut masks, checks: &mut checks },
            &mut t,
            &out,
        )?;
        let wrap = |source| AttentionError::ZeroKnowledge { step: "the group equations", source };
        masks.verify_openings(&params, &openings, &mut t, &mut checks).map_err(wrap)?;
        checks.finish(&t).map_err(wrap)?;
        Ok(verified)
    }
}
