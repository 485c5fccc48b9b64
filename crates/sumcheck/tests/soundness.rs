//! One named test per attack on the sum-check verifier, each asserting its specific error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::*;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"soundness";

struct Honest {
    shape: SumOfProducts,
    mles: Vec<DenseMultilinearExtension>,
    claim: SumcheckClaim,
    proof: ProductSumcheckProof,
}

fn honest(num_vars: usize, degree: usize) -> Honest {
    let shape = SumOfProducts::product(degree).unwrap();
    let mles = random_mles(degree, num_vars, 2024);
    let sum = brute_force_sum(&shape, &mles);
    let (proof, _) = prove_product(&shape, mles.clone(), sum, &mut Transcript::new(DOMAIN)).unwrap();
    Honest { shape, mles, claim: SumcheckClaim::new(num_vars, degree, sum), proof }
}

fn verify_and_discharge(
    h: &Honest,
    claim: &SumcheckClaim,
    proof: &ProductSumcheckProof,
) -> Result<(), SumcheckError> {
    let claims = verify_product(&h.shape, claim, proof, &mut Transcript::new(DOMAIN))?;
    for (mle, c) in h.mles.iter().zip(&claims) {
        c.check(mle.evaluate(&c.point)?)?;
    }
    Ok(())
}

#[test]
fn honest_proof_is_accepted() {
    let h = honest(8, 3);
    assert_eq!(verify_and_discharge(&h, &h.claim, &h.proof), Ok(()));
}

#[test]
fn corrupted_round_is_rejected() {
    let h = honest(8, 3);
    for round in [0, 4, 7] {
        for position in 0..3 {
            let mut proof = h.proof.clone();
            proof.sumcheck.rounds[round].evaluations[position] += Fr::one();
            assert_eq!(
                verify_and_discharge(&h, &h.claim, &proof),
                Err(SumcheckError::FinalEvaluationMismatch)
            );
        }
    }
}

#[test]
fn wrong_claimed_sum_is_rejected() {
    let h = honest(8, 2);
    let mut claim = h.claim;
    claim.claimed_sum += Fr::one();
    assert_eq!(verify_and_discharge(&h, &claim, &h.proof), Err(SumcheckError::FinalEvaluationMismatch));
}

#[test]
fn proof_for_a_wrong_sum_is_rejected() {
    // A prover that runs the honest algorithm on a false claim.
    let h = honest(6, 2);
    let false_sum = h.claim.claimed_sum + Fr::one();
    let (proof, _) =
        prove_product(&h.shape, h.mles.clone(), false_sum, &mut Transcript::new(DOMAIN)).unwrap();
    let claim = SumcheckClaim::new(6, 2, false_sum);
    assert_eq!(verify_and_discharge(&h, &claim, &proof), Err(SumcheckError::FinalEvaluationMismatch));
}

#[test]
fn truncated_proof_is_rejected() {
    let h = honest(8, 3);
    let mut proof = h.proof.clone();
    proof.sumcheck.rounds.pop();
    assert_eq!(
        verify_and_discharge(&h, &h.claim, &proof),
        Err(SumcheckError::WrongRoundCount { expected: 8, got: 7 })
    );
}

#[test]
fn extended_proof_is_rejected() {
    let h = honest(8, 3);
    let mut proof = h.proof.clone();
    let extra = proof.sumcheck.rounds[0].clone();
    proof.sumcheck.rounds.push(extra);
    assert_eq!(
        verify_and_discharge(&h, &h.claim, &proof),
        Err(SumcheckError::WrongRoundCount { expected: 8, got: 9 })
    );
}

#[test]
fn wrong_degree_round_is_rejected() {
    let h = honest(8, 3);
    let mut longer = h.proof.clone();
    longer.sumcheck.rounds[2].evaluations.push(Fr::one());
    assert_eq!(
        verify_and_discharge(&h, &h.claim, &longer),
        Err(SumcheckError::WrongDegree { round: 2, degree: 3, expected: 3, got: 4 })
    );
    let mut shorter = h.proof.clone();
    shorter.sumcheck.rounds[5].evaluations.truncate(1);
    assert_eq!(
        verify_and_discharge(&h, &h.claim, &shorter),
        Err(SumcheckError::WrongDegree { round: 5, degree: 3, expected: 3, got: 1 })
    );
    // A claim of another degree than the shape's.
    let claim = SumcheckClaim::new(8, 2, h.claim.claimed_sum);
    assert!(matches!(verify_and_discharge(&h, &claim, &h.proof), Err(SumcheckError::InvalidClaim(_))));
}

#[test]
fn swapped_rounds_are_rejected() {
    let h = honest(8, 3);
    let mut proof = h.proof.clone();
    proof.sumcheck.rounds.swap(2, 3);
    assert_eq!(verify_and_discharge(&h, &h.claim, &proof), Err(SumcheckError::FinalEvaluationMismatch));
}

#[test]
fn transcript_desync_is_rejected() {
    // The verifier absorbed a different statement before the sum-check.
    let h = honest(8, 3);
    let mut transcript = Transcript::new(DOMAIN);
    transcript.append_field(b"statement", &Fr::one());
    let claims = verify_product(&h.shape, &h.claim, &h.proof, &mut transcript).unwrap_or_default();
    // Either the final check fails, or the returned claims are not the MLEs' values.
    let discharged = !claims.is_empty()
        && h.mles.iter().zip(&claims).all(|(m, c)| m.evaluate(&c.point).unwrap() == c.value);
    assert!(!discharged);
    let mut transcript = Transcript::new(DOMAIN);
    transcript.append_field(b"statement", &Fr::one());
    assert_eq!(
        verify_product(&h.shape, &h.claim, &h.proof, &mut transcript).map(|_| ()),
        Err(SumcheckError::FinalEvaluationMismatch)
    );
    // Another domain separator.
    assert_eq!(
        verify_product(&h.shape, &h.claim, &h.proof, &mut Transcript::new(b"other")).map(|_| ()),
        Err(SumcheckError::FinalEvaluationMismatch)
    );
}

#[test]
fn wrong_final_value_is_rejected() {
    let h = honest(8, 3);
    // The prover lies about one MLE's final value: the product no longer matches.
    let mut proof = h.proof.clone();
    proof.final_evaluations[1] += Fr::one();
    assert_eq!(verify_and_discharge(&h, &h.claim, &proof), Err(SumcheckError::FinalEvaluationMismatch));
    // Consistent lie: scale two values so the product still matches; the discharge catches it.
    let mut proof = h.proof.clone();
    let two = Fr::from(2u64);
    proof.final_evaluations[0] *= two;
    proof.final_evaluations[1] *= zkmha_field::Field::inverse(&two).unwrap();
    assert_eq!(verify_and_discharge(&h, &h.claim, &proof), Err(SumcheckError::FinalEvaluationMismatch));
    // A missing final value.
    let mut proof = h.proof.clone();
    proof.final_evaluations.pop();
    assert!(matches!(verify_and_discharge(&h, &h.claim, &proof), Err(SumcheckError::WrongLength { .. })));
}

#[test]
fn generic_verifier_final_value_check() {
    let h = honest(5, 2);
    let eval = verify(&h.claim, &h.proof.sumcheck, &mut Transcript::new(DOMAIN)).unwrap();
    let actual = evaluate_shape(&h.shape, &h.mles, &eval.point);
    assert_eq!(eval.check(actual), Ok(()));
    assert_eq!(eval.check(actual + Fr::one()), Err(SumcheckError::FinalEvaluationMismatch));
}

#[test]
fn invalid_claims_are_rejected_before_reading_the_proof() {
    let h = honest(4, 2);
    for claim in [
        SumcheckClaim::new(4, 0, h.claim.claimed_sum),
        SumcheckClaim::new(4, MAX_DEGREE + 1, h.claim.claimed_sum),
        SumcheckClaim::new(MAX_NUM_VARS + 1, 2, h.claim.claimed_sum),
    ] {
        assert!(matches!(
            verify(&claim, &h.proof.sumcheck, &mut Transcript::new(DOMAIN)),
            Err(SumcheckError::InvalidClaim(_))
        ));
    }
}

mod batched {
    use super::*;

    fn batch() -> (Vec<SumOfProducts>, Vec<Vec<DenseMultilinearExtension>>, Vec<SumcheckClaim>, SumcheckProof)
    {
        let spec = [(6usize, 2usize), (4, 3)];
        let shapes: Vec<SumOfProducts> =
            spec.iter().map(|&(_, d)| SumOfProducts::product(d).unwrap()).collect();
        let mles: Vec<Vec<DenseMultilinearExtension>> =
            spec.iter().enumerate().map(|(i, &(n, d))| random_mles(d, n, i as u64)).collect();
        let sums: Vec<Fr> = shapes.iter().zip(&mles).map(|(s, m)| brute_force_sum(s, m)).collect();
        let mut instances: Vec<ProductSumcheck> = shapes
            .iter()
            .zip(&mles)
            .map(|(s, m)| ProductSumcheck::new(s.clone(), m.clone()).unwrap())
            .collect();
        let refs: Vec<&mut dyn SumcheckInstance> =
            instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
        let (proof, _) = prove_batched(refs, &sums, &mut Transcript::new(DOMAIN)).unwrap();
        let claims = spec.iter().zip(&sums).map(|(&(n, d), s)| SumcheckClaim::new(n, d, *s)).collect();
        (shapes, mles, claims, proof)
    }

    fn check(
        shapes: &[SumOfProducts],
        mles: &[Vec<DenseMultilinearExtension>],
        claims: &[SumcheckClaim],
        proof: &SumcheckProof,
    ) -> Result<(), SumcheckError> {
        let outcome = verify_batched(claims, proof, &mut Transcript::new(DOMAIN))?;
        let values: Vec<Fr> = (0..claims.len())
            .map(|i| evaluate_shape(&shapes[i], &mles[i], outcome.instance_point(i).unwrap()))
            .collect();
        outcome.check(&values)
    }

    #[test]
    fn honest_batch_is_accepted() {
        let (s, m, c, p) = batch();
        assert_eq!(check(&s, &m, &c, &p), Ok(()));
    }

    #[test]
    fn one_wrong_sum_in_a_batch_is_rejected() {
        let (s, m, mut c, p) = batch();
        c[1].claimed_sum += Fr::one();
        assert_eq!(check(&s, &m, &c, &p), Err(SumcheckError::FinalEvaluationMismatch));
    }

    #[test]
    fn reordered_batch_is_rejected() {
        let (s, m, mut c, p) = batch();
        c.swap(0, 1);
        let s2 = vec![s[1].clone(), s[0].clone()];
        let m2 = vec![m[1].clone(), m[0].clone()];
        // Same claims in another order: the transcript differs, so the proof fails.
        assert!(check(&s2, &m2, &c, &p).is_err());
    }

    #[test]
    fn empty_batch_and_wrong_value_count_are_rejected() {
        let (_, _, c, p) = batch();
        assert!(matches!(
            verify_batched(&[], &p, &mut Transcript::new(DOMAIN)),
            Err(SumcheckError::InvalidClaim(_))
        ));
        let outcome = verify_batched(&c, &p, &mut Transcript::new(DOMAIN)).unwrap();
        assert!(matches!(outcome.check(&[Fr::one()]), Err(SumcheckError::WrongLength { .. })));
    }
}
