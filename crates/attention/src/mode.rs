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
//! generic over [`ProductMode::ProductProof`], so a plain proof never parses as a zero-knowledge
//! one. The core — sums of products, sent values, linear relations, the modes `Plain` and `Zk`
//! themselves — is `zkmha_zk::mode` (re-exported here), where the lookup crate can build on it
//! too; [`Mode`] adds what the attention's drivers need: commitments, the final opening, the
//! lookups and the proof session.

use crate::AttentionError;
use crate::common::sumcheck_error;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::fmt::Debug;
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::ZkInnerProductProof;
use zkmha_pcs::{
    G1Affine, Hyrax, HyraxBlinds, HyraxCommitment, HyraxParams, MultiOpeningProof, OpeningClaim,
    PolynomialTable,
};
use zkmha_sumcheck::{ProductSumcheck, SumOfProducts};
use zkmha_transcript::Transcript;
pub use zkmha_zk::mode::{
    Factor, ModeError, Plain, PlainProductProof, ProductMode, ProductOutcome, ProverMember, ProverRng, Zk,
    ZkProver, ZkVerifier,
};
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, VerifierMasks, WeightedChecks,
    ZkError, ZkMultiOpeningProof, ZkProductShape, prove_multi_opening_zk, verify_multi_opening_zk_deferred,
};

/// The final opening's step name (both modes).
pub(crate) const STEP_OPENINGS: &str = "openings";
const STEP_MASKS: &str = "masks";

/// A step's prover result: its proof and the claims it hands on.
pub type Proved<P, C> = Result<(P, C), AttentionError>;

/// A mode of the attention proofs: the core ([`ProductMode`]) with commitments, the final
/// opening, the lookups and the proof session.
pub trait Mode: ProductMode {
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
    /// A closed verifier session's checks not made yet (nothing; the group equations with
    /// their batching weights drawn, `zkmha_zk::WeightedChecks`), for one MSM across proofs.
    type PendingChecks: Send;

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
    ) -> Result<(), AttentionError> {
        let pending = Self::close_verifier(params, session, proof, transcript)?;
        Self::check_pending(vec![pending]).map_err(|(_, error)| error)
    }

    /// Closes the verifier's session as [`Mode::finish_verifier`] does, but leaves the final
    /// group equations' check to [`Mode::check_pending`] (their weights are drawn here, from
    /// `transcript` after the whole proof).
    ///
    /// # Errors
    /// [`AttentionError::ZeroKnowledge`] for the masks' openings.
    fn close_verifier(
        params: &HyraxParams,
        session: Self::VerifierSession,
        proof: &Self::SessionProof,
        transcript: &mut Transcript,
    ) -> Result<Self::PendingChecks, AttentionError>;

    /// Makes the checks several closed sessions left, together (one MSM in zero knowledge:
    /// `zkmha_zk::check_together`).
    ///
    /// # Errors
    /// The index of the first session, in order, whose own checks fail, and its error
    /// ([`AttentionError::ZeroKnowledge`]).
    fn check_pending(pending: Vec<Self::PendingChecks>) -> Result<(), (usize, AttentionError)>;

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

    /// The blinds of the combination `Σ_u w_u·C_u` of a commitment's rows
    /// ([`HyraxCommitment::combine_rows`]): nothing, or `Σ_u w_u·b_u`.
    ///
    /// # Errors
    /// [`AttentionError::Commitment`] for a row the blinds do not have.
    fn combine_blinds(blinds: &Self::Blinds, weights: &[(usize, Fr)])
    -> Result<Self::Blinds, AttentionError>;

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
}

impl Mode for Plain {
    type Blinds = ();
    type OpeningProof = MultiOpeningProof;
    type ProverSession = ();
    type VerifierSession = ();
    type SessionCommitment = ();
    type SessionProof = ();
    type PendingChecks = ();

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

    fn close_verifier(
        _params: &HyraxParams,
        _session: (),
        _proof: &(),
        _transcript: &mut Transcript,
    ) -> Result<(), AttentionError> {
        Ok(())
    }

    fn check_pending(_pending: Vec<()>) -> Result<(), (usize, AttentionError)> {
        Ok(())
    }

    fn commit_table(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        _rng: &mut dyn ProverRng,
    ) -> Result<(HyraxCommitment, ()), AttentionError> {
        Ok((Hyrax::commit_small_with_columns(params, num_vars, column_vars, values)?, ()))
    }

    fn combine_blinds(_blinds: &(), _weights: &[(usize, Fr)]) -> Result<(), AttentionError> {
        Ok(())
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
}

fn zk_error(step: &'static str) -> impl Fn(ZkError) -> AttentionError {
    move |source| AttentionError::ZeroKnowledge { step, source }
}

impl Mode for Zk {
    type Blinds = HyraxBlinds;
    type OpeningProof = ZkMultiOpeningProof;
    type ProverSession = ProverMasks;
    type VerifierSession = (VerifierMasks, DeferredChecks);
    type SessionCommitment = G1Affine;
    type SessionProof = ZkInnerProductProof;
    type PendingChecks = WeightedChecks;

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

    fn close_verifier(
        params: &HyraxParams,
        session: (VerifierMasks, DeferredChecks),
        proof: &ZkInnerProductProof,
        transcript: &mut Transcript,
    ) -> Result<WeightedChecks, AttentionError> {
        let (masks, mut checks) = session;
        masks.verify_openings(params, proof, transcript, &mut checks).map_err(zk_error(STEP_MASKS))?;
        Ok(checks.weigh(transcript))
    }

    fn check_pending(pending: Vec<WeightedChecks>) -> Result<(), (usize, AttentionError)> {
        zkmha_zk::check_together(pending)
            .map_err(|(index, error)| (index, zk_error("the proof's group equations")(error)))
    }

    fn commit_table(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
        rng: &mut dyn ProverRng,
    ) -> Result<(HyraxCommitment, HyraxBlinds), AttentionError> {
        Ok(Hyrax::commit_small_hiding(params, num_vars, column_vars, values, &mut &mut *rng)?)
    }

    fn combine_blinds(blinds: &HyraxBlinds, weights: &[(usize, Fr)]) -> Result<HyraxBlinds, AttentionError> {
        Ok(blinds.combine_rows(weights)?)
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
