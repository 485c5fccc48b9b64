//! Helpers shared by the sum-check integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ark_std::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::{ProductTerm, SumOfProducts};

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn random_mle(num_vars: usize, rng: &mut StdRng) -> DenseMultilinearExtension {
    DenseMultilinearExtension::new(num_vars, (0..1usize << num_vars).map(|_| Fr::rand(rng)).collect())
        .unwrap()
}

pub fn random_mles(count: usize, num_vars: usize, seed: u64) -> Vec<DenseMultilinearExtension> {
    let mut rng = rng(seed);
    (0..count).map(|_| random_mle(num_vars, &mut rng)).collect()
}

/// A shape mixing degrees: c0·f0·f1·…·f_{d−1} + c1·f0 + c2·f1² (for d ≥ 2).
pub fn mixed_shape(degree: usize, seed: u64) -> SumOfProducts {
    let mut rng = rng(seed);
    let mles = degree.max(2);
    let mut terms = vec![ProductTerm { coefficient: Fr::rand(&mut rng), factors: (0..degree).collect() }];
    terms.push(ProductTerm { coefficient: Fr::rand(&mut rng), factors: vec![0] });
    if degree >= 2 {
        terms.push(ProductTerm { coefficient: Fr::one(), factors: vec![1, 1] });
    }
    SumOfProducts::new(mles, terms).unwrap()
}

/// The plain definition of g(point) from the MLEs' evaluations.
pub fn evaluate_shape(shape: &SumOfProducts, mles: &[DenseMultilinearExtension], point: &[Fr]) -> Fr {
    let values: Vec<Fr> = mles.iter().map(|m| m.evaluate(point).unwrap()).collect();
    shape.combine(&values).unwrap()
}

/// Σ_x g(x), straight from the definition.
pub fn brute_force_sum(shape: &SumOfProducts, mles: &[DenseMultilinearExtension]) -> Fr {
    let n = mles[0].num_vars();
    (0..1usize << n)
        .map(|x| {
            let values: Vec<Fr> = mles.iter().map(|m| m.evaluations()[x]).collect();
            shape.combine(&values).unwrap()
        })
        .sum()
}
