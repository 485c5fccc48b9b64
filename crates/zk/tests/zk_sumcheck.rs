//! The zero-knowledge sum-check: round trips against a plain reference, hidden rounds, the
//! simulator, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, PcsError, ZkInnerProductProof};
use zkmha_sumcheck::{
    MaskPolynomial, ProductSumcheck, SumOfProducts, SumcheckError, SumcheckInstance, prove_masked_rounds,
    verify,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    CommittedEvalClaim, DeferredChecks, MaskSchedule, OpeningProof, ProductProof, ProverMasks, ValueOpening,
    VerifierMasks, ZkError, ZkSumcheckProof, prove_zk_sumcheck, verify_zk_sumcheck_deferred,
};

/// The masks' commitment and their openings' argument (what a proof carries once).
type Masks = (G1Affine, ZkInnerProductProof);

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

struct Proved {
    proof: ZkSumcheckProof,
    claim: CommittedEvalClaim,
    opening: ValueOpening,
    claim_commitment: G1Affine,
    masks: Masks,
}

/// Proves `Σ g = sum` with the claimed sum hidden in a commitment (`hidden`) or public.
fn prove(
    params: &HyraxParams,
    mles: &[DenseMultilinearExtension],
    sum: Fr,
    hidden: bool,
    seed: u64,
) -> Proved {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let opening = if hidden { ValueOpening::hide(sum, &mut rng) } else { ValueOpening::public(sum) };
    let claim_commitment = G1Affine::from(opening.commit(params));
    let mut transcript = Transcript::new(DOMAIN);
    let schedule = MaskSchedule(vec![(mles[0].num_vars(), mles.len())]);
    let (mut masks, masks_commitment) =
        ProverMasks::commit(params, schedule, &mut transcript, &mut rng).unwrap();
    let (proof, claim, opening) = prove_zk_sumcheck(
        params,
        &mut instance(mles),
        claim_commitment,
        &opening,
        &mut masks,
        &mut transcript,
        &mut rng,
    )
    .unwrap();
    let masks_proof = masks.prove_openings(params, &mut transcript, &mut rng).unwrap();
    Proved { proof, claim, opening, claim_commitment, masks: (masks_commitment, masks_proof) }
}

fn verify_proof(
    params: &HyraxParams,
    num_vars: usize,
    degree: usize,
    claim_commitment: G1Affine,
    proof: &ZkSumcheckProof,
    (masks_commitment, masks_proof): &Masks,
) -> Result<CommittedEvalClaim, ZkError> {
    let mut transcript = Transcript::new(DOMAIN);
    let mut checks = DeferredChecks::new();
    let schedule = MaskSchedule(vec![(num_vars, degree)]);
    let mut masks = VerifierMasks::absorb(schedule, *masks_commitment, &mut transcript);
    let claim = verify_zk_sumcheck_deferred(
        params,
        num_vars,
        degree,
        claim_commitment,
        proof,
        &mut masks,
        &mut transcript,
        &mut checks,
    )?;
    masks.verify_openings(params, masks_proof, &mut transcript, &mut checks)?;
    checks.finish(&transcript)?;
    Ok(claim)
}

/// The caller's final check in the clear: the committed claim opens to `g(r)` (here the
/// prover opens it; in a chain it is related to further commitments instead).
fn open_final(
    params: &HyraxParams,
    claim: &CommittedEvalClaim,
    opening: &ValueOpening,
    truth: Fr,
) -> Result<(), ZkError> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let proof =
        OpeningProof::prove(params, claim.commitment, opening, &mut Transcript::new(b"final"), &mut rng);
    proof.verify(params, claim.commitment, truth, &mut Transcript::new(b"final"))
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
        for hidden in [false, true] {
            let mles = factors(num_vars, k, length, (num_vars * 10 + k) as u64);
            let sum = reference_sum(&mles);
            let p = prove(&params, &mles, sum, hidden, 1);
            let verified =
                verify_proof(&params, num_vars, k, p.claim_commitment, &p.proof, &p.masks).unwrap();
            assert_eq!(verified, p.claim, "n={num_vars} k={k}");
            assert_eq!(G1Affine::from(p.opening.commit(&params)), verified.commitment);
            let truth = reference_value(&mles, &verified.point);
            assert_eq!(p.opening.value, truth);
            open_final(&params, &verified, &p.opening, truth).unwrap();
            let mut bytes = Vec::new();
            p.proof.serialize_compressed(&mut bytes).unwrap();
            assert_eq!(ZkSumcheckProof::deserialize_compressed(&bytes[..]).unwrap(), p.proof);
        }
    }
}

#[test]
fn a_product_chain_closes_on_committed_factor_values() {
    // g = f₁·f₂: the prover commits to f₁(r), f₂(r) and proves C_g = C_{f₁}·C_{f₂}; the factor
    // commitments are what the next sub-protocol would take as its claims.
    let params = params();
    let mles = factors(6, 2, 64, 40);
    let sum = reference_sum(&mles);
    let p = prove(&params, &mles, sum, true, 2);
    let verified = verify_proof(&params, 6, 2, p.claim_commitment, &p.proof, &p.masks).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let factor_openings: Vec<ValueOpening> =
        mles.iter().map(|f| ValueOpening::hide(f.evaluate(&verified.point).unwrap(), &mut rng)).collect();
    let commitments: Vec<G1Affine> =
        factor_openings.iter().map(|o| G1Affine::from(o.commit(&params))).collect();
    let statement = [commitments[0], commitments[1], verified.commitment];
    let product = ProductProof::prove(
        &params,
        statement,
        [&factor_openings[0], &factor_openings[1], &p.opening],
        &mut Transcript::new(b"chain"),
        &mut rng,
    );
    product.verify(&params, statement, &mut Transcript::new(b"chain")).unwrap();
    // Claiming other factor values breaks the product.
    let wrong = ValueOpening::hide(factor_openings[1].value + Fr::one(), &mut rng);
    let wrong_statement = [commitments[0], G1Affine::from(wrong.commit(&params)), verified.commitment];
    let forged = ProductProof::prove(
        &params,
        wrong_statement,
        [&factor_openings[0], &wrong, &p.opening],
        &mut Transcript::new(b"chain"),
        &mut rng,
    );
    assert_eq!(
        forged.verify(&params, wrong_statement, &mut Transcript::new(b"chain")),
        Err(ZkError::ProductMismatch)
    );
}

#[test]
fn two_proofs_of_the_same_statement_differ() {
    let params = params();
    let mles = factors(6, 3, 64, 2);
    let sum = reference_sum(&mles);
    let first = prove(&params, &mles, sum, false, 1);
    let second = prove(&params, &mles, sum, false, 2);
    assert_ne!(first.masks.0, second.masks.0);
    assert_ne!(first.proof.masked_sum, second.proof.masked_sum);
    for (a, b) in first.proof.sumcheck.rounds.iter().zip(&second.proof.sumcheck.rounds) {
        assert!(a.evaluations.iter().zip(&b.evaluations).all(|(x, y)| x != y));
    }
    assert_ne!(first.claim.point, second.claim.point);
    for p in [first, second] {
        let verified = verify_proof(&params, 6, 3, p.claim_commitment, &p.proof, &p.masks).unwrap();
        open_final(&params, &verified, &p.opening, reference_value(&mles, &verified.point)).unwrap();
    }
}

/// Every value the plain sum-check would send, rebuilt from the witness at the ZK proof's own
/// challenges: the sum, the round polynomials of `g` alone (at 0..=d), and `g`'s final
/// factor values and `g(r)`.
fn unmasked_values(mles: &[DenseMultilinearExtension], sum: Fr, point: &[Fr]) -> Vec<Fr> {
    let mut plain = instance(mles);
    let degree = plain.degree();
    let mut running = sum;
    let mut values = vec![sum];
    for challenge in point.iter().rev() {
        let mut message = vec![Fr::zero(); degree];
        plain.round_evaluations(running, &mut message);
        let full = zkmha_sumcheck::univariate::decompress(&message, running);
        running = zkmha_sumcheck::univariate::evaluate_from_evaluations(&full, *challenge);
        values.extend(&message);
        values.extend(full);
        plain.bind_in_place(*challenge);
    }
    values.extend(mles.iter().map(|f| f.evaluate(point).unwrap()));
    values.push(running);
    values
}

#[test]
fn no_unmasked_value_appears_in_the_proof() {
    let params = params();
    for (num_vars, k) in [(5, 2), (8, 3)] {
        let mles = factors(num_vars, k, 1 << num_vars, 7);
        let sum = reference_sum(&mles);
        let p = prove(&params, &mles, sum, true, 3);
        let revealing = unmasked_values(&mles, sum, &p.claim.point);
        let proof = &p.proof;
        let mut sent: Vec<Fr> = proof.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()).collect();
        sent.extend([proof.masked_sum, proof.masked_sum_proof.response]);
        sent.extend(p.masks.1.responses);
        assert_eq!(proof.sumcheck.rounds.len(), num_vars);
        for value in &sent {
            assert!(!revealing.contains(value), "an unmasked value is in the proof");
        }
    }
}

#[test]
fn a_false_sum_cannot_be_opened_to_the_true_value() {
    let params = params();
    let mles = factors(5, 2, 32, 4);
    let wrong = reference_sum(&mles) + Fr::one();
    let p = prove(&params, &mles, wrong, true, 1);
    let verified = verify_proof(&params, 5, 2, p.claim_commitment, &p.proof, &p.masks).unwrap();
    let truth = reference_value(&mles, &verified.point);
    assert_ne!(p.opening.value, truth);
    let forged = ValueOpening { value: truth, blinding: p.opening.blinding };
    assert_eq!(open_final(&params, &verified, &forged, truth), Err(ZkError::OpeningMismatch));
}

#[test]
fn a_masked_sum_forged_to_hide_a_false_claim_is_rejected() {
    // The prover commits to S but runs the rounds from a false S' + ρP: the masked sum it must
    // send then no longer opens the commitment C_S + ρ·C_P.
    let params = params();
    let mles = factors(5, 2, 32, 5);
    let sum = reference_sum(&mles);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let committed = ValueOpening::hide(sum + Fr::one(), &mut rng);
    let claim_commitment = G1Affine::from(committed.commit(&params));
    let p = prove(&params, &mles, sum, true, 1);
    assert_eq!(
        verify_proof(&params, 5, 2, claim_commitment, &p.proof, &p.masks),
        Err(ZkError::OpeningMismatch)
    );
}

#[test]
fn a_tampered_round_is_rejected() {
    let params = params();
    let mles = factors(6, 3, 64, 6);
    let sum = reference_sum(&mles);
    let mut p = prove(&params, &mles, sum, false, 1);
    p.proof.sumcheck.rounds[2].evaluations[1] += Fr::one();
    // The challenges after the round move, so the mask's opening (made for the old point) fails.
    assert_eq!(
        verify_proof(&params, 6, 3, p.claim_commitment, &p.proof, &p.masks),
        Err(ZkError::MaskOpening(PcsError::ZkCommitmentMismatch))
    );
}

#[test]
fn a_tampered_masked_sum_or_its_proof_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 7);
    let sum = reference_sum(&mles);
    let p = prove(&params, &mles, sum, true, 1);
    let mut shifted = p.proof.clone();
    shifted.masked_sum += Fr::one();
    assert_eq!(
        verify_proof(&params, 6, 2, p.claim_commitment, &shifted, &p.masks),
        Err(ZkError::OpeningMismatch)
    );
    let mut response = p.proof.clone();
    response.masked_sum_proof.response += Fr::one();
    assert_eq!(
        verify_proof(&params, 6, 2, p.claim_commitment, &response, &p.masks),
        Err(ZkError::OpeningMismatch)
    );
    let mut sum_commitment = p.proof;
    sum_commitment.mask_sum_commitment = params.value_generator;
    assert_eq!(
        verify_proof(&params, 6, 2, p.claim_commitment, &sum_commitment, &p.masks),
        Err(ZkError::OpeningMismatch)
    );
}

#[test]
fn a_swapped_mask_commitment_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 9);
    let sum = reference_sum(&mles);
    let mut p = prove(&params, &mles, sum, false, 1);
    p.masks.0 = prove(&params, &mles, sum, false, 2).masks.0;
    assert!(verify_proof(&params, 6, 2, p.claim_commitment, &p.proof, &p.masks).is_err());
}

#[test]
fn a_tampered_mask_value_or_opening_is_rejected() {
    let params = params();
    let mles = factors(6, 2, 64, 10);
    let sum = reference_sum(&mles);
    let p = prove(&params, &mles, sum, true, 1);
    let check = |proof: &ZkSumcheckProof, masks: &Masks| {
        verify_proof(&params, 6, 2, p.claim_commitment, proof, masks)
    };
    let mismatch = Err(ZkError::MaskOpening(PcsError::ZkCommitmentMismatch));
    let mut value = p.proof.clone();
    value.mask_value_commitment = params.value_generator;
    assert_eq!(check(&value, &p.masks), mismatch);
    let mut response = p.masks.clone();
    response.1.responses[0] += Fr::one();
    assert_eq!(check(&p.proof, &response), mismatch);
    let mut round = p.masks.clone();
    round.1.rounds[0].0 = params.value_generator;
    assert_eq!(check(&p.proof, &round), mismatch);
    let mut short = p.masks.clone();
    short.1.rounds.pop();
    assert!(matches!(check(&p.proof, &short), Err(ZkError::MaskOpening(PcsError::MalformedProof(_)))));
}

#[test]
fn malformed_proofs_get_typed_errors() {
    let params = params();
    let mles = factors(6, 2, 64, 11);
    let sum = reference_sum(&mles);
    let p = prove(&params, &mles, sum, false, 1);
    let check = |proof: &ZkSumcheckProof| verify_proof(&params, 6, 2, p.claim_commitment, proof, &p.masks);
    let mut short = p.proof.clone();
    short.sumcheck.rounds.pop();
    assert_eq!(check(&short), Err(ZkError::Sumcheck(SumcheckError::WrongRoundCount { expected: 6, got: 5 })));
    let mut degree = p.proof.clone();
    degree.sumcheck.rounds[0].evaluations.push(Fr::one());
    assert!(matches!(check(&degree), Err(ZkError::Sumcheck(SumcheckError::WrongDegree { .. }))));
    // A sum-check the masks' schedule does not expect.
    assert!(matches!(
        verify_proof(&params, 5, 2, p.claim_commitment, &p.proof, &p.masks),
        Err(ZkError::Sumcheck(SumcheckError::WrongRoundCount { .. })
            | ZkError::Sumcheck(SumcheckError::InvalidInstance(_)))
    ));
    assert!(matches!(
        verify_proof(&params, 6, 0, p.claim_commitment, &p.proof, &p.masks),
        Err(ZkError::Sumcheck(SumcheckError::InvalidClaim(_)))
    ));
    let mut bytes = Vec::new();
    p.proof.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 1, 40, bytes.len() / 2, bytes.len() - 1] {
        assert!(ZkSumcheckProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
}

/// The simulator of `docs/ZERO_KNOWLEDGE.md`, run as the honest-verifier protocol: knowing only
/// the statement (n, d, C_S) it outputs the sum-check's view — uniform masked sum and rounds,
/// commitments to random values, a simulated opening answer — and the view passes every check
/// of the verifier (the masks' inner-product argument, shared by a proof's sum-checks, is
/// simulated by the argument in its docs).
#[test]
fn a_simulator_without_the_witness_produces_an_accepting_view() {
    let params = params();
    let (num_vars, degree) = (6, 3);
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let claim_commitment = G1Affine::from(ValueOpening::hide(Fr::rand(&mut rng), &mut rng).commit(&params));

    // Commitments to anything (hiding: distributed as the real ones).
    let mask_sum_commitment =
        G1Affine::from(ValueOpening::hide(Fr::rand(&mut rng), &mut rng).commit(&params));
    let mask_value_commitment =
        G1Affine::from(ValueOpening::hide(Fr::rand(&mut rng), &mut rng).commit(&params));
    // The verifier's challenges, chosen independently (honest verifier).
    let weight = Fr::rand(&mut rng);
    // A uniform masked sum and uniform rounds: the masked rounds of a random polynomial.
    let masked_sum = Fr::rand(&mut rng);
    let stand_in = factors(num_vars, degree, 64, 99);
    let mask = MaskPolynomial::random(num_vars, degree, &mut rng).unwrap();
    let shift = masked_sum - reference_sum(&stand_in) - weight * mask.sum();
    let mut shifted = stand_in.clone();
    // Move the stand-in's sum to c₀ − ρP by adding `shift` to one product term.
    let first = shifted[0].evaluations()[0];
    let others: Fr = shifted[1..].iter().map(|f| f.evaluations()[0]).product();
    let mut values = shifted[0].evaluations().to_vec();
    values[0] = first + shift * others.inverse().unwrap();
    shifted[0] = DenseMultilinearExtension::new(num_vars, values).unwrap();
    let mut transcript = Transcript::new(b"simulator");
    let (rounds, final_claim) = prove_masked_rounds(
        &mut instance(&shifted),
        masked_sum - weight * mask.sum(),
        &mask,
        weight,
        &mut transcript,
    )
    .unwrap();
    let opening_challenge = Fr::rand(&mut rng);
    let masked_commitment = G1Affine::from(claim_commitment + mask_sum_commitment * weight);
    let masked_sum_proof =
        OpeningProof::simulate(&params, masked_commitment, masked_sum, opening_challenge, &mut rng);

    // The verifier's checks with the same challenges.
    masked_sum_proof.check_with_challenge(&params, masked_commitment, masked_sum, opening_challenge).unwrap();
    let mut verifier_transcript = Transcript::new(b"simulator");
    let verified = verify(
        &zkmha_sumcheck::SumcheckClaim::new(num_vars, degree, masked_sum),
        &rounds,
        &mut verifier_transcript,
    )
    .unwrap();
    assert_eq!(verified.point, final_claim.point);
    // The mask's value stays committed (C_v: a commitment to anything); the masks' one
    // inner-product argument at the end of a proof is simulated as its docs say.
    let _ = mask_value_commitment;
    assert!(rounds.rounds.iter().all(|r| r.evaluations.len() == degree));
}

#[test]
fn opening_and_product_simulators_accept_any_statement() {
    let params = params();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let c = Fr::rand(&mut rng);
    let random_commitment =
        |rng: &mut ChaCha20Rng| G1Affine::from(ValueOpening::hide(Fr::rand(rng), rng).commit(&params));
    let commitment = random_commitment(&mut rng);
    let value = Fr::rand(&mut rng);
    OpeningProof::simulate(&params, commitment, value, c, &mut rng)
        .check_with_challenge(&params, commitment, value, c)
        .unwrap();
    let statement = [random_commitment(&mut rng), random_commitment(&mut rng), random_commitment(&mut rng)];
    ProductProof::simulate(&params, statement, c, &mut rng)
        .check_with_challenge(&params, statement, c)
        .unwrap();
    // and the Fiat–Shamir verifiers reject the simulated answers.
    let simulated = ProductProof::simulate(&params, statement, c, &mut rng);
    assert_eq!(
        simulated.verify(&params, statement, &mut Transcript::new(b"fs")),
        Err(ZkError::ProductMismatch)
    );
}

#[test]
fn opening_and_product_proofs_reject_tampering() {
    let params = params();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let x = ValueOpening::hide(Fr::from(6u64), &mut rng);
    let y = ValueOpening::hide(Fr::from(7u64), &mut rng);
    let z = ValueOpening::hide(Fr::from(42u64), &mut rng);
    let statement = [x, y, z].map(|o| G1Affine::from(o.commit(&params)));
    let proof = ProductProof::prove(&params, statement, [&x, &y, &z], &mut Transcript::new(b"p"), &mut rng);
    proof.verify(&params, statement, &mut Transcript::new(b"p")).unwrap();
    for i in 0..5 {
        let mut bad = proof.clone();
        bad.responses[i] += Fr::one();
        assert_eq!(bad.verify(&params, statement, &mut Transcript::new(b"p")), Err(ZkError::ProductMismatch));
    }
    let mut swapped = statement;
    swapped.swap(0, 2);
    assert_eq!(proof.verify(&params, swapped, &mut Transcript::new(b"p")), Err(ZkError::ProductMismatch));
    let opening = OpeningProof::prove(&params, statement[2], &z, &mut Transcript::new(b"o"), &mut rng);
    opening.verify(&params, statement[2], Fr::from(42u64), &mut Transcript::new(b"o")).unwrap();
    assert_eq!(
        opening.verify(&params, statement[2], Fr::from(43u64), &mut Transcript::new(b"o")),
        Err(ZkError::OpeningMismatch)
    );
    let mut bad = opening;
    bad.response += Fr::one();
    assert_eq!(
        bad.verify(&params, statement[2], Fr::from(42u64), &mut Transcript::new(b"o")),
        Err(ZkError::OpeningMismatch)
    );
}
