//! The zero-knowledge sum-check: round trips against a plain reference, hidden rounds, the
//! simulator, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{Hyrax, HyraxParams, PcsError, ZkOpeningProof};
use zkmha_sumcheck::{
    EvalClaim, MaskPolynomial, ProductSumcheck, SumOfProducts, SumcheckClaim, SumcheckError,
    SumcheckInstance, prove_masked, verify_masked,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{ZkError, ZkSumcheckProof, prove_zk_sumcheck, verify_zk_sumcheck};

const DOMAIN: &[u8] = b"zk-sumcheck-test";

/// `k` random factors over `num_vars` variables, each from `length` random entries zero-padded
/// (lengths that are not powers of two included).
fn factors(num_vars: usize, k: usize, length: usize, seed: u64) -> Vec<DenseMultilinearExtension> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..k)
        .map(|_| {
            let mut values: Vec<Fr> = (0..length.min(1 << num_vars)).map(|_| Fr::rand(&mut rng)).collect();
            values.resize(1 << num_vars, Fr::zero());
            DenseMultilinearExtension::new(num_vars, values).unwrap()
        })
        .collect()
}

fn instance(mles: &[DenseMultilinearExtension]) -> ProductSumcheck {
    ProductSumcheck::new(SumOfProducts::product(mles.len()).unwrap(), mles.to_vec()).unwrap()
}

/// The plain reference: `Σ_x Π_k f_k(x)` and `Π_k f̃_k(r)` by direct evaluation.
fn reference_sum(mles: &[DenseMultilinearExtension]) -> Fr {
    let n = mles[0].num_vars();
    (0..1usize << n).map(|x| mles.iter().map(|f| f.evaluations()[x]).product::<Fr>()).sum()
}

fn reference_value(mles: &[DenseMultilinearExtension], point: &[Fr]) -> Fr {
    mles.iter().map(|f| f.evaluate(point).unwrap()).product()
}

fn params() -> HyraxParams {
    HyraxParams::new(12)
}

fn prove(
    params: &HyraxParams,
    mles: &[DenseMultilinearExtension],
    sum: Fr,
    seed: u64,
) -> (ZkSumcheckProof, EvalClaim) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    prove_zk_sumcheck(params, &mut instance(mles), sum, &mut Transcript::new(DOMAIN), &mut rng).unwrap()
}

fn verify(
    params: &HyraxParams,
    claim: &SumcheckClaim,
    proof: &ZkSumcheckProof,
) -> Result<EvalClaim, ZkError> {
    verify_zk_sumcheck(params, claim, proof, &mut Transcript::new(DOMAIN))
}

#[test]
fn round_trips_on_many_shapes_against_the_reference() {
    let params = params();
    for (num_vars, k, length) in [
        (1, 1, 2),
        (1, 2, 1),
        (2, 3, 3),
        (3, 1, 5),
        (4, 2, 11),
        (5, 3, 32),
        (7, 4, 100),
        (10, 2, 1000),
        (0, 2, 1),
    ] {
        let mles = factors(num_vars, k, length, (num_vars * 10 + k) as u64);
        let sum = reference_sum(&mles);
        let (proof, prover_claim) = prove(&params, &mles, sum, 1);
        let claim = SumcheckClaim::new(num_vars, k, sum);
        let verifier_claim = verify(&params, &claim, &proof).unwrap();
        assert_eq!(prover_claim, verifier_claim, "n={num_vars} k={k}");
        verifier_claim.check(reference_value(&mles, &verifier_claim.point)).unwrap();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(ZkSumcheckProof::deserialize_compressed(&bytes[..]).unwrap(), proof);
    }
}

#[test]
fn two_proofs_of_the_same_statement_differ() {
    let params = params();
    let mles = factors(6, 3, 64, 2);
    let sum = reference_sum(&mles);
    let (first, first_claim) = prove(&params, &mles, sum, 1);
    let (second, second_claim) = prove(&params, &mles, sum, 2);
    assert_ne!(first.mask_commitment, second.mask_commitment);
    assert_ne!(first.masked.mask_sum, second.masked.mask_sum);
    for (a, b) in first.masked.sumcheck.rounds.iter().zip(&second.masked.sumcheck.rounds) {
        assert!(a.evaluations.iter().zip(&b.evaluations).all(|(x, y)| x != y));
    }
    assert_ne!(first_claim.point, second_claim.point);
    let claim = SumcheckClaim::new(6, 3, sum);
    verify(&params, &claim, &first).unwrap().check(reference_value(&mles, &first_claim.point)).unwrap();
    verify(&params, &claim, &second).unwrap().check(reference_value(&mles, &second_claim.point)).unwrap();
}

/// Every value the plain sum-check would send, rebuilt from the witness at the ZK proof's own
/// challenges: the round messages of `g` alone, and `g`'s final factor values.
fn unmasked_values(mles: &[DenseMultilinearExtension], sum: Fr, point: &[Fr]) -> Vec<Fr> {
    let mut plain = instance(mles);
    let degree = plain.degree();
    let mut running = sum;
    let mut values = Vec::new();
    for challenge in point.iter().rev() {
        let mut message = vec![Fr::zero(); degree];
        plain.round_evaluations(running, &mut message);
        let full = zkmha_sumcheck::univariate::decompress(&message, running);
        running = zkmha_sumcheck::univariate::evaluate_from_evaluations(&full, *challenge);
        values.extend(full);
        plain.bind_in_place(*challenge);
    }
    values.extend(mles.iter().map(|f| f.evaluate(point).unwrap()));
    values
}

#[test]
fn no_unmasked_round_value_appears_in_the_proof() {
    let params = params();
    for (num_vars, k) in [(5, 2), (8, 3)] {
        let mles = factors(num_vars, k, 1 << num_vars, 7);
        let sum = reference_sum(&mles);
        let (proof, claim) = prove(&params, &mles, sum, 3);
        let revealing = unmasked_values(&mles, sum, &claim.point);
        let mut sent: Vec<Fr> =
            proof.masked.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()).collect();
        sent.push(proof.masked.mask_sum);
        sent.push(proof.mask_value);
        sent.push(proof.mask_opening.mask_value);
        sent.push(proof.mask_opening.blinding_response);
        sent.extend(&proof.mask_opening.response);
        // Also the sums s(0) + s(1) and s(1), which a reader derives from the messages.
        let rounds = &proof.masked.sumcheck.rounds;
        assert_eq!(rounds.len(), num_vars);
        for value in &sent {
            assert!(!revealing.contains(value), "an unmasked value is in the proof");
        }
    }
}

#[test]
fn a_false_sum_is_caught_by_the_callers_final_check() {
    let params = params();
    let mles = factors(5, 2, 32, 4);
    let wrong = reference_sum(&mles) + Fr::one();
    let (proof, _) = prove(&params, &mles, wrong, 1);
    let claim = verify(&params, &SumcheckClaim::new(5, 2, wrong), &proof).unwrap();
    assert_eq!(
        claim.check(reference_value(&mles, &claim.point)),
        Err(SumcheckError::FinalEvaluationMismatch)
    );
}

#[test]
fn a_mask_value_forged_to_hide_a_false_sum_is_rejected() {
    // The cheating prover runs the masked rounds from a false sum, then claims the mask value
    // that would make the final check pass: the committed mask does not open to it.
    let params = params();
    let mles = factors(5, 2, 32, 5);
    let wrong = reference_sum(&mles) + Fr::one();
    let (mut proof, _) = prove(&params, &mles, wrong, 1);
    let masked = {
        let mut t = Transcript::new(DOMAIN);
        let mut bytes = Vec::new();
        proof.mask_commitment.serialize_compressed(&mut bytes).unwrap();
        t.append_bytes(zkmha_zk::sumcheck::LABEL_MASK_COMMITMENT, &bytes);
        verify_masked(&SumcheckClaim::new(5, 2, wrong), &proof.masked, &mut t).unwrap()
    };
    let truth = reference_value(&mles, &masked.point);
    proof.mask_value = (masked.value - truth) * masked.mask_weight.inverse().unwrap();
    assert_eq!(
        verify(&params, &SumcheckClaim::new(5, 2, wrong), &proof),
        Err(ZkError::MaskOpening(PcsError::ZkInnerProductMismatch))
    );
}

#[test]
fn a_tampered_round_is_rejected() {
    let params = params();
    let mles = factors(6, 3, 64, 6);
    let sum = reference_sum(&mles);
    let (mut proof, _) = prove(&params, &mles, sum, 1);
    proof.masked.sumcheck.rounds[2].evaluations[1] += Fr::one();
    // The challenges after the round move, so the mask's opening (made for the old point) fails.
    assert!(matches!(verify(&params, &SumcheckClaim::new(6, 3, sum), &proof), Err(ZkError::MaskOpening(_))));
}

#[test]
fn a_tampered_mask_sum_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 7);
    let sum = reference_sum(&mles);
    let (mut proof, _) = prove(&params, &mles, sum, 1);
    proof.masked.mask_sum += Fr::one();
    assert!(matches!(verify(&params, &SumcheckClaim::new(6, 2, sum), &proof), Err(ZkError::MaskOpening(_))));
}

#[test]
fn another_claimed_sum_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 8);
    let sum = reference_sum(&mles);
    let (proof, _) = prove(&params, &mles, sum, 1);
    assert!(matches!(
        verify(&params, &SumcheckClaim::new(6, 2, sum + Fr::one()), &proof),
        Err(ZkError::MaskOpening(_))
    ));
}

#[test]
fn a_swapped_mask_commitment_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 9);
    let sum = reference_sum(&mles);
    let (mut proof, _) = prove(&params, &mles, sum, 1);
    let (other, _) = prove(&params, &mles, sum, 2);
    proof.mask_commitment = other.mask_commitment;
    assert!(matches!(verify(&params, &SumcheckClaim::new(6, 2, sum), &proof), Err(ZkError::MaskOpening(_))));
}

#[test]
fn a_tampered_mask_value_or_opening_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 10);
    let sum = reference_sum(&mles);
    let claim = SumcheckClaim::new(6, 2, sum);
    let (proof, _) = prove(&params, &mles, sum, 1);
    let mut value = proof.clone();
    value.mask_value += Fr::one();
    assert_eq!(verify(&params, &claim, &value), Err(ZkError::MaskOpening(PcsError::ZkInnerProductMismatch)));
    let mut response = proof.clone();
    response.mask_opening.response[0] += Fr::one();
    assert_eq!(
        verify(&params, &claim, &response),
        Err(ZkError::MaskOpening(PcsError::ZkInnerProductMismatch))
    );
    let mut blinding = proof;
    blinding.mask_opening.blinding_response += Fr::one();
    assert_eq!(verify(&params, &claim, &blinding), Err(ZkError::MaskOpening(PcsError::ZkCommitmentMismatch)));
}

#[test]
fn malformed_proofs_get_typed_errors() {
    let params = params();
    let mles = factors(6, 2, 64, 11);
    let sum = reference_sum(&mles);
    let claim = SumcheckClaim::new(6, 2, sum);
    let (proof, _) = prove(&params, &mles, sum, 1);
    let mut short = proof.clone();
    short.masked.sumcheck.rounds.pop();
    assert_eq!(
        verify(&params, &claim, &short),
        Err(ZkError::Sumcheck(SumcheckError::WrongRoundCount { expected: 6, got: 5 }))
    );
    let mut degree = proof.clone();
    degree.masked.sumcheck.rounds[0].evaluations.push(Fr::one());
    assert!(matches!(
        verify(&params, &claim, &degree),
        Err(ZkError::Sumcheck(SumcheckError::WrongDegree { .. }))
    ));
    let mut shape = proof.clone();
    shape.mask_commitment = prove(&params, &factors(2, 1, 4, 1), Fr::zero(), 1).0.mask_commitment;
    assert!(matches!(verify(&params, &claim, &shape), Err(ZkError::MaskCommitmentShape { .. })));
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 1, 40, bytes.len() / 2, bytes.len() - 1] {
        assert!(ZkSumcheckProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
}

/// The simulator of `docs/ZERO_KNOWLEDGE.md`, run as the honest-verifier protocol: without `g`
/// (it knows the claim and, at the end, the one value `g(r)`), it produces the verifier's
/// whole view — mask commitment, mask sum, rounds, mask value, opening — and the view passes
/// every check with the real `g(r)`.
#[test]
fn a_simulator_without_the_witness_produces_an_accepting_view() {
    let params = params();
    let (num_vars, k) = (6, 3);
    let mles = factors(num_vars, k, 64, 12);
    let sum = reference_sum(&mles);
    let claim = SumcheckClaim::new(num_vars, k, sum);
    let mut rng = ChaCha20Rng::seed_from_u64(77);

    // The simulator: a stand-in polynomial with the claimed sum (the constant sum/2^n in the
    // first factor, ones elsewhere) and its own random mask.
    let constant = sum * Fr::from(1u64 << num_vars).inverse().unwrap();
    let stand_in: Vec<DenseMultilinearExtension> = (0..k)
        .map(|i| {
            DenseMultilinearExtension::new(
                num_vars,
                vec![if i == 0 { constant } else { Fr::one() }; 1 << num_vars],
            )
            .unwrap()
        })
        .collect();
    let mask = MaskPolynomial::random(num_vars, k, &mut rng).unwrap();
    let (mask_commitment, _) = Hyrax::commit_vector_hiding(&params, mask.coefficients(), &mut rng).unwrap();
    let mut simulator_transcript = Transcript::new(DOMAIN);
    let mut bytes = Vec::new();
    mask_commitment.serialize_compressed(&mut bytes).unwrap();
    simulator_transcript.append_bytes(zkmha_zk::sumcheck::LABEL_MASK_COMMITMENT, &bytes);
    let (masked, masked_claim) =
        prove_masked(&mut instance(&stand_in), sum, &mask, &mut simulator_transcript).unwrap();
    // One query of the real g at the point, then the mask value that makes the view consistent,
    // and a simulated opening of it for the verifier's challenge.
    let real_value = reference_value(&mles, &masked_claim.point);
    let mask_value = (masked_claim.value - real_value) * masked_claim.mask_weight.inverse().unwrap();
    let public = MaskPolynomial::evaluation_vector(num_vars, k, &masked_claim.point).unwrap();
    let challenge = Fr::rand(&mut rng);
    let opening =
        ZkOpeningProof::simulate(&params, &mask_commitment, &public, mask_value, challenge, &mut rng)
            .unwrap();

    // The verifier's checks on the simulated view.
    let mut verifier_transcript = Transcript::new(DOMAIN);
    verifier_transcript.append_bytes(zkmha_zk::sumcheck::LABEL_MASK_COMMITMENT, &bytes);
    let verified = verify_masked(&claim, &masked, &mut verifier_transcript).unwrap();
    Hyrax::check_inner_product_zk_with_challenge(
        &params,
        &mask_commitment,
        &public,
        mask_value,
        &opening,
        challenge,
    )
    .unwrap();
    verified.unmask(mask_value).check(real_value).unwrap();
    // and the stand-in's rounds are full-degree, like the real ones.
    assert!(masked.sumcheck.rounds.iter().all(|r| r.evaluations.last() != Some(&Fr::zero())));
}
