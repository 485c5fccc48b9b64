//! The zero-knowledge sum-of-products sum-check: shapes with public and hidden factors against
//! a plain reference, hidden values, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, ZkInnerProductProof};
use zkmha_sumcheck::{ProductSumcheck, ProductTerm, SumOfProducts, SumcheckError};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, FactorValue, MaskSchedule, ProverMasks, ValueOpening,
    VerifierMasks, ZkError, ZkProductClaims, ZkProductProof, ZkProductShape, prove_zk_product,
    prove_zk_product_combined, verify_zk_product_combined_deferred, verify_zk_product_deferred,
};

const DOMAIN: &[u8] = b"zk-product-test";

struct Case {
    shape: SumOfProducts,
    public: Vec<bool>,
    mles: Vec<DenseMultilinearExtension>,
}

impl Case {
    fn zk_shape(&self) -> ZkProductShape {
        ZkProductShape::new(self.shape.clone(), self.public.clone()).unwrap()
    }
}

fn term(coefficient: u64, factors: &[usize]) -> ProductTerm {
    ProductTerm { coefficient: Fr::from(coefficient), factors: factors.to_vec() }
}

fn case(num_vars: usize, num_mles: usize, terms: Vec<ProductTerm>, public: &[bool], seed: u64) -> Case {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mles = (0..num_mles)
        .map(|_| {
            DenseMultilinearExtension::new(num_vars, (0..1 << num_vars).map(|_| Fr::rand(&mut rng)).collect())
                .unwrap()
        })
        .collect();
    Case { shape: SumOfProducts::new(num_mles, terms).unwrap(), public: public.to_vec(), mles }
}

/// The plain reference sum `Σ_x g(x)`.
fn reference_sum(c: &Case) -> Fr {
    let n = c.mles[0].num_vars();
    (0..1usize << n)
        .map(|x| c.shape.combine(&c.mles.iter().map(|f| f.evaluations()[x]).collect::<Vec<_>>()).unwrap())
        .sum()
}

struct Proved {
    proof: ZkProductProof,
    claims: ZkProductClaims,
    openings: Vec<Option<ValueOpening>>,
    claim_commitment: G1Affine,
    masks: (G1Affine, ZkInnerProductProof),
}

fn schedule(c: &Case) -> MaskSchedule {
    MaskSchedule(vec![(c.mles[0].num_vars(), c.shape.degree())])
}

fn prove_with(params: &HyraxParams, c: &Case, sum: Fr, seed: u64, transcript: &mut Transcript) -> Proved {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let opening = ValueOpening::hide(sum, &mut rng);
    let claim_commitment = G1Affine::from(opening.commit(params));
    let (mut masks, masks_commitment) =
        ProverMasks::commit(params, schedule(c), transcript, &mut rng).unwrap();
    let mut instance = ProductSumcheck::new(c.shape.clone(), c.mles.clone()).unwrap();
    let (proof, claims, openings) = prove_zk_product(
        params,
        &c.zk_shape(),
        &mut instance,
        (claim_commitment, &opening),
        &mut masks,
        transcript,
        &mut rng,
    )
    .unwrap();
    let masks_proof = masks.prove_openings(params, transcript, &mut rng).unwrap();
    Proved { proof, claims, openings, claim_commitment, masks: (masks_commitment, masks_proof) }
}

fn prove(params: &HyraxParams, c: &Case, sum: Fr, seed: u64) -> Proved {
    prove_with(params, c, sum, seed, &mut Transcript::new(DOMAIN))
}

fn verify_with(
    params: &HyraxParams,
    c: &Case,
    commitment: G1Affine,
    proof: &ZkProductProof,
    (masks_commitment, masks_proof): &(G1Affine, ZkInnerProductProof),
    transcript: &mut Transcript,
) -> Result<ZkProductClaims, ZkError> {
    let n = c.mles[0].num_vars();
    let mut masks = VerifierMasks::absorb(schedule(c), *masks_commitment, transcript);
    let mut checks = DeferredChecks::new();
    let claims = verify_zk_product_deferred(
        params,
        &c.zk_shape(),
        n,
        commitment,
        proof,
        &mut masks,
        transcript,
        &mut checks,
    )?;
    masks.verify_openings(params, masks_proof, transcript, &mut checks)?;
    checks.finish(transcript)?;
    Ok(claims)
}

/// Verifies `proof` with the masks of `p` (the proof under test may be a tampered copy).
fn verify(
    params: &HyraxParams,
    c: &Case,
    commitment: G1Affine,
    proof: &ZkProductProof,
    p: &Proved,
) -> Result<ZkProductClaims, ZkError> {
    verify_with(params, c, commitment, proof, &p.masks, &mut Transcript::new(DOMAIN))
}

fn cases() -> Vec<Case> {
    vec![
        case(4, 1, vec![term(1, &[0])], &[false], 1),
        case(5, 2, vec![term(1, &[0, 1])], &[false, false], 2),
        case(6, 3, vec![term(1, &[0, 1, 2])], &[true, false, false], 3),
        case(3, 3, vec![term(1, &[0, 1, 2])], &[false, false, false], 4),
        case(5, 3, vec![term(2, &[0, 0]), term(1, &[0, 1]), term(3, &[2])], &[false, false, true], 5),
        case(4, 2, vec![term(1, &[0, 1]), term(5, &[1])], &[true, true], 6),
        case(1, 2, vec![term(7, &[0, 1, 1])], &[false, false], 7),
    ]
}

#[test]
fn round_trips_with_public_and_hidden_factors_against_the_reference() {
    let params = HyraxParams::new(10);
    for (index, c) in cases().iter().enumerate() {
        let p = prove(&params, c, reference_sum(c), 1);
        let verified = verify(&params, c, p.claim_commitment, &p.proof, &p).unwrap();
        assert_eq!(verified, p.claims, "case {index}");
        for (k, (value, opening)) in verified.values.iter().zip(&p.openings).enumerate() {
            let truth = c.mles[k].evaluate(&verified.point).unwrap();
            match (value, opening) {
                (FactorValue::Public(v), None) => assert_eq!(*v, truth),
                (FactorValue::Hidden(commitment), Some(o)) => {
                    assert_eq!(o.value, truth);
                    assert_eq!(G1Affine::from(o.commit(&params)), *commitment);
                }
                _ => panic!("case {index}: factor {k} has the wrong kind"),
            }
        }
        let mut bytes = Vec::new();
        p.proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(ZkProductProof::deserialize_compressed(&bytes[..]).unwrap(), p.proof);
    }
}

#[test]
fn hidden_factor_values_never_appear_in_the_proof() {
    let params = HyraxParams::new(10);
    let c = &cases()[4];
    let p = prove(&params, c, reference_sum(c), 2);
    let hidden: Vec<Fr> = p.openings.iter().flatten().map(|o| o.value).collect();
    let proof = &p.proof;
    let mut sent: Vec<Fr> =
        proof.sumcheck.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()).collect();
    sent.extend(&proof.factors.public_values);
    sent.extend(&proof.factors.relations.factor_responses);
    sent.push(proof.factors.relations.blinding_response);
    sent.push(proof.sumcheck.masked_sum);
    assert!(sent.iter().all(|v| !hidden.contains(v)));
    // The point's g(r) is hidden too.
    let values: Vec<Fr> = c.mles.iter().map(|f| f.evaluate(&p.claims.point).unwrap()).collect();
    assert!(!sent.contains(&c.shape.combine(&values).unwrap()));
}

#[test]
fn a_false_sum_is_rejected_by_the_relation() {
    let params = HyraxParams::new(10);
    let c = &cases()[2];
    let p = prove(&params, c, reference_sum(c) + Fr::one(), 3);
    assert_eq!(verify(&params, c, p.claim_commitment, &p.proof, &p).unwrap_err(), ZkError::RelationMismatch);
}

#[test]
fn a_tampered_public_value_is_rejected() {
    let params = HyraxParams::new(10);
    let c = &cases()[2];
    let mut p = prove(&params, c, reference_sum(c), 4);
    p.proof.factors.public_values[0] += Fr::one();
    assert!(verify(&params, c, p.claim_commitment, &p.proof, &p).is_err());
}

#[test]
fn a_hidden_value_swapped_for_another_commitment_is_rejected() {
    let params = HyraxParams::new(10);
    let c = &cases()[1];
    let mut p = prove(&params, c, reference_sum(c), 5);
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let other = p.openings[0].unwrap().value + Fr::one();
    p.proof.factors.hidden_values[0] = G1Affine::from(ValueOpening::hide(other, &mut rng).commit(&params));
    assert_eq!(verify(&params, c, p.claim_commitment, &p.proof, &p).unwrap_err(), ZkError::RelationMismatch);
}

#[test]
fn tampered_products_and_relation_are_rejected() {
    let params = HyraxParams::new(10);
    let c = &cases()[3];
    let p = prove(&params, c, reference_sum(c), 6);
    let mut partial = p.proof.clone();
    partial.factors.partial_products[0] = params.value_generator;
    assert_eq!(verify(&params, c, p.claim_commitment, &partial, &p).unwrap_err(), ZkError::RelationMismatch);
    let mut response = p.proof.clone();
    response.factors.relations.factor_responses[0] += Fr::one();
    assert_eq!(verify(&params, c, p.claim_commitment, &response, &p).unwrap_err(), ZkError::RelationMismatch);
    let mut relation = p.proof.clone();
    relation.factors.relations.blinding_response += Fr::one();
    assert_eq!(verify(&params, c, p.claim_commitment, &relation, &p).unwrap_err(), ZkError::RelationMismatch);
    let mut missing = p.proof.clone();
    missing.factors.partial_products.pop();
    assert!(matches!(
        verify(&params, c, p.claim_commitment, &missing, &p),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
}

#[test]
fn wrong_counts_of_values_are_typed_errors() {
    let params = HyraxParams::new(10);
    let c = &cases()[4];
    let p = prove(&params, c, reference_sum(c), 7);
    let mut extra = p.proof.clone();
    extra.factors.public_values.push(Fr::one());
    assert!(matches!(
        verify(&params, c, p.claim_commitment, &extra, &p),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
    let mut fewer = p.proof.clone();
    fewer.factors.hidden_values.pop();
    assert!(matches!(
        verify(&params, c, p.claim_commitment, &fewer, &p),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
    assert!(matches!(
        ZkProductShape::new(c.shape.clone(), vec![true]),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
}

#[test]
fn prover_and_verifier_transcripts_end_in_the_same_state() {
    // What follows in a chain draws its challenges from the same transcript.
    let params = HyraxParams::new(10);
    for c in &cases() {
        let mut prover = Transcript::new(DOMAIN);
        let p = prove_with(&params, c, reference_sum(c), 3, &mut prover);
        let mut verifier = Transcript::new(DOMAIN);
        verify_with(&params, c, p.claim_commitment, &p.proof, &p.masks, &mut verifier).unwrap();
        assert_eq!(prover.challenge_field(b"next"), verifier.challenge_field(b"next"));
    }
}

/// A claim given as a combination `C_1 + λ·C_2` of commitments (never evaluated): the honest
/// sum proves and verifies with the reference's values; a false sum (the honest prover's claim
/// off by one) and the honest proof checked against another combination are rejected.
#[test]
fn a_claim_kept_as_a_combination_proves_and_a_false_one_is_rejected() {
    let params = HyraxParams::new(10);
    let lambda = Fr::from(7u64);
    for (index, c) in cases().iter().enumerate() {
        let run = |sum: Fr, verified_against: Option<Fr>| {
            let mut rng = ChaCha20Rng::seed_from_u64(40 + index as u64);
            // sum = first + λ·second, split at random between two committed values.
            let second = ValueOpening::hide(Fr::rand(&mut rng), &mut rng);
            let first = ValueOpening::hide(sum - lambda * second.value, &mut rng);
            let (c1, c2) = (G1Affine::from(first.commit(&params)), G1Affine::from(second.commit(&params)));
            let claim = CommittedValue::new(c1, first).add_scaled(lambda, &CommittedValue::new(c2, second));
            let mut transcript = Transcript::new(DOMAIN);
            let (mut masks, masks_commitment) =
                ProverMasks::commit(&params, schedule(c), &mut transcript, &mut rng).unwrap();
            let mut instance = ProductSumcheck::new(c.shape.clone(), c.mles.clone()).unwrap();
            let (proof, claims, _) = prove_zk_product_combined(
                &params,
                &c.zk_shape(),
                &mut instance,
                &claim,
                &mut masks,
                &mut transcript,
                &mut rng,
            )
            .unwrap();
            let masks_proof = masks.prove_openings(&params, &mut transcript, &mut rng).unwrap();
            // The verifier's combination: the one proven, or one off by `shift·U`.
            let mut combination = Combination::point(c1).add_scaled(lambda, &Combination::point(c2));
            if let Some(shift) = verified_against {
                combination = combination.add_scaled(shift, &Combination::point(params.value_generator));
            }
            let mut transcript = Transcript::new(DOMAIN);
            let mut verifier_masks = VerifierMasks::absorb(schedule(c), masks_commitment, &mut transcript);
            let mut checks = DeferredChecks::new();
            let verified = verify_zk_product_combined_deferred(
                &params,
                &c.zk_shape(),
                c.mles[0].num_vars(),
                &combination,
                &proof,
                &mut verifier_masks,
                &mut transcript,
                &mut checks,
            )?;
            verifier_masks.verify_openings(&params, &masks_proof, &mut transcript, &mut checks)?;
            checks.finish(&transcript)?;
            assert_eq!(verified, claims, "case {index}");
            Ok::<_, ZkError>(verified)
        };
        let verified = run(reference_sum(c), None).unwrap();
        for (k, value) in verified.values.iter().enumerate() {
            if let FactorValue::Public(v) = value {
                assert_eq!(*v, c.mles[k].evaluate(&verified.point).unwrap(), "case {index}");
            }
        }
        assert!(run(reference_sum(c) + Fr::one(), None).is_err(), "case {index}: a false sum");
        assert!(run(reference_sum(c), Some(Fr::one())).is_err(), "case {index}: another combination");
    }
}
