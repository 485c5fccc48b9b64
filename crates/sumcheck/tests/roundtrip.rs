//! Honest round trips, a brute-force reference, batching, and thread/sequential equality.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use proptest::prelude::*;
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, SmallMultilinearExtension};
use zkmha_sumcheck::univariate::{compress, evaluate_from_evaluations};
use zkmha_sumcheck::*;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"sumcheck-tests";

#[test]
fn product_round_trip_all_sizes_and_degrees() {
    for num_vars in 0..=12 {
        for degree in 1..=4 {
            let shapes = [SumOfProducts::product(degree).unwrap(), mixed_shape(degree, 7)];
            for shape in shapes {
                let mles = random_mles(shape.num_mles(), num_vars, (num_vars * 10 + degree) as u64);
                let sum = brute_force_sum(&shape, &mles);
                let mut pt = Transcript::new(DOMAIN);
                let (proof, prover_claims) = prove_product(&shape, mles.clone(), sum, &mut pt).unwrap();
                let claim = SumcheckClaim::new(num_vars, shape.degree(), sum);
                let mut vt = Transcript::new(DOMAIN);
                let claims = verify_product(&shape, &claim, &proof, &mut vt).unwrap();
                assert_eq!(claims, prover_claims);
                // Discharge: each final value is the MLE at the point.
                for (mle, c) in mles.iter().zip(&claims) {
                    assert_eq!(mle.evaluate(&c.point).unwrap(), c.value, "n={num_vars} d={degree}");
                }
                // Both transcripts end in the same state.
                assert_eq!(pt.challenge_field(b"end"), vt.challenge_field(b"end"));
            }
        }
    }
}

/// The plain reference: each round polynomial from the definition, by evaluating every MLE
/// at (x, t, r) for all x, and the engine's messages must equal it.
#[test]
fn round_messages_match_brute_force_reference() {
    for (num_vars, degree) in [(1, 2), (3, 2), (4, 3), (5, 1), (5, 4)] {
        let shape = mixed_shape(degree, 3);
        let mles = random_mles(shape.num_mles(), num_vars, 99);
        let sum = brute_force_sum(&shape, &mles);
        let mut transcript = Transcript::new(DOMAIN);
        let (proof, claims) = prove_product(&shape, mles.clone(), sum, &mut transcript).unwrap();
        // The challenges in round order are the point reversed.
        let challenges: Vec<Fr> = claims[0].point.iter().rev().copied().collect();
        for (round, message) in proof.sumcheck.rounds.iter().enumerate() {
            let free = num_vars - round - 1;
            let s = |t: Fr| -> Fr {
                (0..1usize << free)
                    .map(|x| {
                        let mut point: Vec<Fr> = (0..free).map(|i| Fr::from(((x >> i) & 1) as u64)).collect();
                        point.push(t);
                        point.extend(challenges[..round].iter().rev());
                        evaluate_shape(&shape, &mles, &point)
                    })
                    .sum()
            };
            // The message is s(0), s(2..d), and the X^d coefficient of the interpolant.
            let full: Vec<Fr> = (0..=degree as u64).map(|t| s(Fr::from(t))).collect();
            assert_eq!(message.evaluations, compress(&full), "round {round}");
        }
    }
}

#[test]
fn generic_sumcheck_verifier_returns_the_point_and_value() {
    let mles = random_mles(3, 6, 5);
    let shape = SumOfProducts::product(3).unwrap();
    let sum = brute_force_sum(&shape, &mles);
    let mut instance = ProductSumcheck::new(shape.clone(), mles.clone()).unwrap();
    assert_eq!(instance.claimed_sum(), sum);
    let (proof, prover_claim) = prove(&mut instance, sum, &mut Transcript::new(DOMAIN));
    let claim = SumcheckClaim::new(6, 3, sum);
    let eval = verify(&claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
    assert_eq!(eval, prover_claim);
    assert_eq!(eval.check(evaluate_shape(&shape, &mles, &eval.point)), Ok(()));
}

#[test]
fn batched_claims_with_different_sizes_and_degrees() {
    let sizes_and_degrees = [(5usize, 2usize), (3, 3), (5, 1), (0, 2), (7, 2)];
    let shapes: Vec<SumOfProducts> =
        sizes_and_degrees.iter().map(|&(_, d)| SumOfProducts::product(d).unwrap()).collect();
    let mles: Vec<Vec<DenseMultilinearExtension>> =
        sizes_and_degrees.iter().enumerate().map(|(i, &(n, d))| random_mles(d, n, 40 + i as u64)).collect();
    let sums: Vec<Fr> = shapes.iter().zip(&mles).map(|(s, m)| brute_force_sum(s, m)).collect();
    let mut instances: Vec<ProductSumcheck> =
        shapes.iter().zip(&mles).map(|(s, m)| ProductSumcheck::new(s.clone(), m.clone()).unwrap()).collect();
    let refs: Vec<&mut dyn SumcheckInstance> =
        instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
    let (proof, prover_claim) = prove_batched(refs, &sums, &mut Transcript::new(DOMAIN)).unwrap();

    let claims: Vec<SumcheckClaim> =
        sizes_and_degrees.iter().zip(&sums).map(|(&(n, d), s)| SumcheckClaim::new(n, d, *s)).collect();
    let outcome = verify_batched(&claims, &proof, &mut Transcript::new(DOMAIN)).unwrap();
    assert_eq!(outcome, prover_claim);
    assert_eq!(outcome.point.len(), 7);
    let values: Vec<Fr> = (0..claims.len())
        .map(|i| evaluate_shape(&shapes[i], &mles[i], outcome.instance_point(i).unwrap()))
        .collect();
    assert_eq!(outcome.check(&values), Ok(()));
    // Each instance's own final tables agree with the point it was handed.
    for (i, instance) in instances.iter().enumerate() {
        let expected: Vec<Fr> =
            mles[i].iter().map(|m| m.evaluate(outcome.instance_point(i).unwrap()).unwrap()).collect();
        assert_eq!(instance.final_evaluations(), expected);
    }
}

#[test]
fn parallel_and_sequential_provers_give_identical_proofs() {
    for (count, shape) in [
        (2, SumOfProducts::product(2).unwrap()),
        (3, SumOfProducts::product(3).unwrap()),
        (3, mixed_shape(3, 1)),
    ] {
        let mles = random_mles(count, 14, 8);
        let sum = brute_force_sum(&shape, &mles);
        let run = |threshold: usize| {
            let mut instance =
                ProductSumcheck::new(shape.clone(), mles.clone()).unwrap().with_parallel_threshold(threshold);
            prove(&mut instance, sum, &mut Transcript::new(DOMAIN))
        };
        assert_eq!(run(1), run(usize::MAX));
    }
}

#[test]
fn small_value_kernel_gives_the_dense_proof() {
    let mut rng = rng(77);
    for degree in 2..=4usize {
        for num_vars in [0usize, 1, 2, 3, 9, 13] {
            let small: Vec<SmallMultilinearExtension> = (0..degree)
                .map(|_| {
                    let values: Vec<i64> = (0..1usize << num_vars)
                        .map(|_| i64::from(u32::rand(&mut rng) % (1 << 17)) - (1 << 16))
                        .collect();
                    SmallMultilinearExtension::new(num_vars, &values).unwrap()
                })
                .collect();
            let dense: Vec<DenseMultilinearExtension> = small.iter().map(|m| m.to_dense()).collect();
            let shape = SumOfProducts::product(degree).unwrap();
            let sum = brute_force_sum(&shape, &dense);
            for threshold in [1, usize::MAX] {
                let mut fast =
                    SmallValueProductSumcheck::new(&small).unwrap().with_parallel_threshold(threshold);
                assert_eq!(fast.claimed_sum(), sum);
                let (fast_proof, _) =
                    prove_instance_with_evaluations(&mut fast, sum, &mut Transcript::new(DOMAIN));
                let (dense_proof, _) =
                    prove_product(&shape, dense.clone(), sum, &mut Transcript::new(DOMAIN)).unwrap();
                assert_eq!(fast_proof, dense_proof, "d={degree} n={num_vars}");
            }
        }
    }
    // Extreme values at the edge of the range, alternating signs.
    let edge = (1i64 << 24) - 1;
    for degree in 2..=4usize {
        let small: Vec<SmallMultilinearExtension> = (0..degree)
            .map(|k| {
                let values: Vec<i64> =
                    (0..1i64 << 11).map(|x| if (x + k as i64) % 3 == 0 { edge } else { -edge }).collect();
                SmallMultilinearExtension::new(11, &values).unwrap()
            })
            .collect();
        let dense: Vec<DenseMultilinearExtension> = small.iter().map(|m| m.to_dense()).collect();
        let shape = SumOfProducts::product(degree).unwrap();
        let sum = brute_force_sum(&shape, &dense);
        let mut fast = SmallValueProductSumcheck::new(&small).unwrap();
        assert_eq!(fast.claimed_sum(), sum);
        let (fast_proof, _) = prove_instance_with_evaluations(&mut fast, sum, &mut Transcript::new(DOMAIN));
        let (dense_proof, _) = prove_product(&shape, dense, sum, &mut Transcript::new(DOMAIN)).unwrap();
        assert_eq!(fast_proof, dense_proof, "edge values, degree {degree}");
    }
}

#[test]
fn proofs_serialize_and_deserialize() {
    let shape = mixed_shape(3, 2);
    let mles = random_mles(shape.num_mles(), 5, 1);
    let sum = brute_force_sum(&shape, &mles);
    let (proof, _) = prove_product(&shape, mles, sum, &mut Transcript::new(DOMAIN)).unwrap();
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    let back = ProductSumcheckProof::deserialize_compressed(&bytes[..]).unwrap();
    assert_eq!(back, proof);
    assert!(ProductSumcheckProof::deserialize_compressed(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn round_polynomial_interpolation_is_consistent() {
    let mut rng = rng(3);
    let evaluations: Vec<Fr> = (0..4).map(|_| Fr::rand(&mut rng)).collect();
    assert_eq!(evaluate_from_evaluations(&evaluations, Fr::from(2u64)), evaluations[2]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn product_round_trips_over_random_shapes(num_vars in 0usize..9, degree in 1usize..5, seed in any::<u64>()) {
        let shape = mixed_shape(degree, seed);
        let mles = random_mles(shape.num_mles(), num_vars, seed);
        let sum = brute_force_sum(&shape, &mles);
        let (proof, _) = prove_product(&shape, mles.clone(), sum, &mut Transcript::new(DOMAIN)).unwrap();
        let claim = SumcheckClaim::new(num_vars, shape.degree(), sum);
        let claims = verify_product(&shape, &claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
        for (mle, c) in mles.iter().zip(&claims) {
            prop_assert_eq!(mle.evaluate(&c.point).unwrap(), c.value);
        }
    }

    #[test]
    fn batched_round_trips_over_random_sizes(sizes in proptest::collection::vec((0usize..7, 1usize..4), 1..5), seed in any::<u64>()) {
        let shapes: Vec<SumOfProducts> = sizes.iter().map(|&(_, d)| SumOfProducts::product(d).unwrap()).collect();
        let mles: Vec<Vec<DenseMultilinearExtension>> =
            sizes.iter().enumerate().map(|(i, &(n, d))| random_mles(d, n, seed.wrapping_add(i as u64))).collect();
        let sums: Vec<Fr> = shapes.iter().zip(&mles).map(|(s, m)| brute_force_sum(s, m)).collect();
        let mut instances: Vec<ProductSumcheck> =
            shapes.iter().zip(&mles).map(|(s, m)| ProductSumcheck::new(s.clone(), m.clone()).unwrap()).collect();
        let refs: Vec<&mut dyn SumcheckInstance> = instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
        let (proof, _) = prove_batched(refs, &sums, &mut Transcript::new(DOMAIN)).unwrap();
        let claims: Vec<SumcheckClaim> = sizes.iter().zip(&sums).map(|(&(n, d), s)| SumcheckClaim::new(n, d, *s)).collect();
        let outcome = verify_batched(&claims, &proof, &mut Transcript::new(DOMAIN)).unwrap();
        let values: Vec<Fr> = (0..claims.len())
            .map(|i| evaluate_shape(&shapes[i], &mles[i], outcome.instance_point(i).unwrap()))
            .collect();
        prop_assert_eq!(outcome.check(&values), Ok(()));
    }
}
