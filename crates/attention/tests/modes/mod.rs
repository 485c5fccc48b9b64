//! What a test needs of each proof mode, shared by the suites generic over the mode
//! (`tests/steps.rs`, `tests/projection.rs`): claims on a table, a prover and a verifier around
//! one step, the mode's own way of tampering with a proof, and the error each attack must
//! produce. `in_both_modes!` runs each generic test once per mode.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::mode::{Mode, Plain, PlainProductProof, Zk, ZkProver, ZkVerifier};
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, ZkInnerProductProof};
use zkmha_sumcheck::{EvalClaim, SumcheckError};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, ValueOpening, VerifierMasks,
    ZkError, ZkProductProof,
};

const DOMAIN: &[u8] = b"step-tests";

/// What a test needs of a mode besides [`Mode`]: claims on a table, a prover and a verifier
/// around one step, and the mode's own way of tampering with a proof.
pub trait TestMode: Mode {
    /// Extra proof data outside the step (the zero-knowledge masks' commitment and openings).
    type Extra;

    /// A true claim on `table` at a random point, as the prover and as the verifier hold it;
    /// `offset` is added to its value (a false claim when non-zero).
    fn claim(
        table: &[Fr],
        offset: Fr,
        rng: &mut ChaCha20Rng,
    ) -> (EvalClaim<Self::ProverValue>, EvalClaim<Self::Value>);

    /// Runs one step's prover.
    fn prove<T>(
        entries: &[(usize, usize)],
        rng: &mut ChaCha20Rng,
        step: impl FnOnce(&mut Self::Prover<'_>, &mut Transcript) -> Result<T, AttentionError>,
    ) -> (T, Self::Extra);

    /// Runs one step's verifier and every deferred check.
    fn verify<T>(
        entries: &[(usize, usize)],
        extra: &Self::Extra,
        step: impl FnOnce(&mut Self::Verifier<'_>, &mut Transcript) -> Result<T, AttentionError>,
    ) -> Result<T, AttentionError>;

    /// Whether a verified claim is the prover's and true of `table`.
    fn discharges(
        table: &[Fr],
        prover: &EvalClaim<Self::ProverValue>,
        verifier: &EvalClaim<Self::Value>,
    ) -> bool;

    /// Adds 1 to a public factor's value at the end of the first member: factor `factor` of
    /// the shape, the `public`-th of its public factors.
    fn tamper_public(proof: &mut Self::ProductProof, factor: usize, public: usize);

    /// Multiplies a public factor's value at the end of the first member by `by`: factor
    /// `factor` of the shape, the `public`-th of its public factors.
    fn scale_public(proof: &mut Self::ProductProof, factor: usize, public: usize, by: Fr);

    /// Adds 1 to a round message of the sum-check.
    fn tamper_round(proof: &mut Self::ProductProof);

    /// The error of a false claim proven honestly otherwise.
    fn false_claim_error(step: &'static str) -> AttentionError;

    /// The error of a tampered public factor.
    fn public_factor_error(step: &'static str) -> AttentionError;

    /// The error of sent values that do not satisfy a step's linear relation.
    fn false_relation_error(step: &'static str) -> AttentionError;

    /// The error of a lookup whose rows are not all in its table.
    fn lookup_error() -> AttentionError;

    /// Changes a sent value (to the value plus one, or its commitment plus a generator).
    fn tamper_sent(sent: &mut Self::Sent);
}

pub fn params() -> &'static HyraxParams {
    static PARAMS: std::sync::OnceLock<HyraxParams> = std::sync::OnceLock::new();
    // 2^12 generators: enough for the masks of the softmax (its lookups' trees have 17
    // levels) and of four projections with their range lookups.
    PARAMS.get_or_init(|| HyraxParams::new(24))
}

pub fn mle(table: &[Fr]) -> DenseMultilinearExtension {
    DenseMultilinearExtension::from_vector_padded(table.to_vec()).unwrap()
}

pub fn random_point(table: &[Fr], rng: &mut ChaCha20Rng) -> (Vec<Fr>, Fr) {
    let m = mle(table);
    let point: Vec<Fr> = (0..m.num_vars()).map(|_| Fr::rand(rng)).collect();
    let value = m.evaluate(&point).unwrap();
    (point, value)
}

impl TestMode for Plain {
    type Extra = ();

    fn claim(table: &[Fr], offset: Fr, rng: &mut ChaCha20Rng) -> (EvalClaim, EvalClaim) {
        let (point, value) = random_point(table, rng);
        let claim = EvalClaim { point, value: value + offset };
        (claim.clone(), claim)
    }

    fn prove<T>(
        _entries: &[(usize, usize)],
        _rng: &mut ChaCha20Rng,
        step: impl FnOnce(&mut (), &mut Transcript) -> Result<T, AttentionError>,
    ) -> (T, ()) {
        (step(&mut (), &mut Transcript::new(DOMAIN)).unwrap(), ())
    }

    fn verify<T>(
        _entries: &[(usize, usize)],
        _extra: &(),
        step: impl FnOnce(&mut (), &mut Transcript) -> Result<T, AttentionError>,
    ) -> Result<T, AttentionError> {
        step(&mut (), &mut Transcript::new(DOMAIN))
    }

    fn discharges(table: &[Fr], prover: &EvalClaim, verifier: &EvalClaim) -> bool {
        prover == verifier && mle(table).evaluate(&verifier.point).unwrap() == verifier.value
    }

    fn tamper_public(proof: &mut PlainProductProof, factor: usize, _public: usize) {
        proof.final_evaluations[0][factor] += Fr::one();
    }

    fn scale_public(proof: &mut PlainProductProof, factor: usize, _public: usize, by: Fr) {
        proof.final_evaluations[0][factor] *= by;
    }

    fn tamper_round(proof: &mut PlainProductProof) {
        proof.sumcheck.rounds[0].evaluations[0] += Fr::one();
    }

    fn false_claim_error(step: &'static str) -> AttentionError {
        AttentionError::Sumcheck { step, source: SumcheckError::FinalEvaluationMismatch }
    }

    fn public_factor_error(step: &'static str) -> AttentionError {
        // The changed value no longer gives the sum-check's final value.
        AttentionError::Sumcheck { step, source: SumcheckError::FinalEvaluationMismatch }
    }

    fn false_relation_error(step: &'static str) -> AttentionError {
        AttentionError::CheckFailed { step }
    }

    fn lookup_error() -> AttentionError {
        AttentionError::Lookup(zkmha_lookup::LookupError::RelationMismatch)
    }

    fn tamper_sent(sent: &mut Fr) {
        *sent += Fr::one();
    }
}

/// The zero-knowledge masks of one step: their commitment and their openings' argument.
pub type Masks = (G1Affine, ZkInnerProductProof);

/// One step's mask schedule: its masked sum-checks' `(variables, degree)` in proof order.
fn schedule(entries: &[(usize, usize)]) -> MaskSchedule {
    MaskSchedule(entries.to_vec())
}

impl TestMode for Zk {
    type Extra = Masks;

    fn claim(
        table: &[Fr],
        offset: Fr,
        rng: &mut ChaCha20Rng,
    ) -> (EvalClaim<CommittedValue>, EvalClaim<Combination>) {
        let (point, value) = random_point(table, rng);
        let opening = ValueOpening::hide(value + offset, rng);
        let commitment = G1Affine::from(opening.commit(params()));
        let hidden = CommittedValue::new(commitment, opening);
        (
            EvalClaim { point: point.clone(), value: hidden },
            EvalClaim { point, value: Combination::point(commitment) },
        )
    }

    fn prove<T>(
        entries: &[(usize, usize)],
        rng: &mut ChaCha20Rng,
        step: impl FnOnce(&mut ZkProver<'_>, &mut Transcript) -> Result<T, AttentionError>,
    ) -> (T, Masks) {
        let mut transcript = Transcript::new(DOMAIN);
        let (mut masks, commitment) =
            ProverMasks::commit(params(), schedule(entries), &mut transcript, rng).unwrap();
        let out =
            step(&mut ZkProver { params: params(), masks: &mut masks, rng: &mut *rng }, &mut transcript)
                .unwrap();
        let openings = masks.prove_openings(params(), &mut transcript, rng).unwrap();
        (out, (commitment, openings))
    }

    fn verify<T>(
        entries: &[(usize, usize)],
        extra: &Masks,
        step: impl FnOnce(&mut ZkVerifier<'_>, &mut Transcript) -> Result<T, AttentionError>,
    ) -> Result<T, AttentionError> {
        let wrap = |source| AttentionError::ZeroKnowledge { step: "the group equations", source };
        let mut transcript = Transcript::new(DOMAIN);
        let mut masks = VerifierMasks::absorb(schedule(entries), extra.0, &mut transcript);
        let mut checks = DeferredChecks::new();
        let out = step(
            &mut ZkVerifier { params: params(), masks: &mut masks, checks: &mut checks },
            &mut transcript,
        )?;
        masks.verify_openings(params(), &extra.1, &mut transcript, &mut checks).map_err(wrap)?;
        checks.finish(&transcript).map_err(wrap)?;
        Ok(out)
    }

    fn discharges(
        table: &[Fr],
        prover: &EvalClaim<CommittedValue>,
        verifier: &EvalClaim<Combination>,
    ) -> bool {
        prover.point == verifier.point
            && prover.value.commitment.evaluate() == verifier.value.evaluate()
            && prover.value.opening.commit(params()) == verifier.value.evaluate()
            && mle(table).evaluate(&verifier.point).unwrap() == prover.value.opening.value
    }

    fn tamper_public(proof: &mut ZkProductProof, _factor: usize, public: usize) {
        proof.factors.public_values[public] += Fr::one();
    }

    fn scale_public(proof: &mut ZkProductProof, _factor: usize, public: usize, by: Fr) {
        proof.factors.public_values[public] *= by;
    }

    fn tamper_round(proof: &mut ZkProductProof) {
        proof.sumcheck.sumcheck.rounds[0].evaluations[0] += Fr::one();
    }

    fn false_claim_error(_step: &'static str) -> AttentionError {
        AttentionError::ZeroKnowledge { step: "the group equations", source: ZkError::RelationMismatch }
    }

    fn public_factor_error(step: &'static str) -> AttentionError {
        AttentionError::CheckFailed { step }
    }

    fn false_relation_error(_step: &'static str) -> AttentionError {
        AttentionError::ZeroKnowledge { step: "the group equations", source: ZkError::RelationMismatch }
    }

    fn lookup_error() -> AttentionError {
        // A lookup's sums are relations between commitments in zero knowledge.
        AttentionError::ZeroKnowledge { step: "the group equations", source: ZkError::RelationMismatch }
    }

    fn tamper_sent(sent: &mut G1Affine) {
        *sent = G1Affine::from(*sent + params().value_generator);
    }
}

/// Each test, once per mode.
#[macro_export]
macro_rules! in_both_modes {
    ($($test:ident),* $(,)?) => {
        mod plain {
            $(#[test] fn $test() { super::$test::<zkmha_attention::mode::Plain>() })*
        }
        mod zero_knowledge {
            $(#[test] fn $test() { super::$test::<zkmha_attention::mode::Zk>() })*
        }
    };
}
