//! Inputs shared by the benchmarks: random and small-integer MLEs from fixed seeds.
#![allow(dead_code)]

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, SmallMultilinearExtension};

/// `count` MLEs of random field elements.
pub fn random_mles(count: usize, num_vars: usize, seed: u64) -> Vec<DenseMultilinearExtension> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let table = (0..1usize << num_vars).map(|_| Fr::rand(&mut rng)).collect();
            DenseMultilinearExtension::new(num_vars, table).unwrap_or_else(|e| unreachable!("{e}"))
        })
        .collect()
}

/// `count` MLEs of integers with |v| < 2^16, the range of quantized attention witnesses.
pub fn small_mles(count: usize, num_vars: usize, seed: u64) -> Vec<SmallMultilinearExtension> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let values: Vec<i64> =
                (0..1usize << num_vars).map(|_| rng.gen_range(-(1i64 << 16) + 1..1i64 << 16)).collect();
            SmallMultilinearExtension::new(num_vars, &values).unwrap_or_else(|e| unreachable!("{e}"))
        })
        .collect()
}
