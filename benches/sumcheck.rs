//! Sum-check proving: ours against ark-linear-sumcheck (arkworks 0.4, `parallel` feature) on
//! the same polynomials, and the small-value kernel against the field kernel.
//!
//! Ids: `sumcheck/ours/deg{2,3}/nv{16,18,20}`, `sumcheck/arkworks/deg{2,3}/nv{16,18,20}`,
//! `sumcheck/ours-small-values/...` and `sumcheck/ours-dense-small-values/...` (the same small
//! integers given to the field kernel). Our prover takes ownership of its tables and binds them
//! in place, so each timed run is handed a fresh copy made outside the timing (criterion's
//! `iter_batched`); ark-linear-sumcheck's `prove` borrows the polynomial and copies the tables
//! itself, inside its timing — that copy is part of its API's cost.

mod common;

use ark_ff_04::PrimeField as _;
use ark_std::rc::Rc;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::time::Duration;
use zkmha_field::{BigInteger, Fr, PrimeField};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::{ProductSumcheck, SmallValueProductSumcheck, SumOfProducts, SumcheckInstance, prove};
use zkmha_transcript::Transcript;

type ArkFr = ark_bn254_04::Fr;

fn to_ark04(mle: &DenseMultilinearExtension) -> ark_poly_04::DenseMultilinearExtension<ArkFr> {
    let evaluations = mle
        .evaluations()
        .iter()
        .map(|v| ArkFr::from_le_bytes_mod_order(&v.into_bigint().to_bytes_le()))
        .collect();
    ark_poly_04::DenseMultilinearExtension::from_evaluations_vec(mle.num_vars(), evaluations)
}

/// Proves and hands the instance back, so that freeing its tables is not timed.
fn prove_ours<I: SumcheckInstance>(mut instance: I, sum: Fr) -> I {
    let (proof, _) = prove(&mut instance, sum, &mut Transcript::new(b"bench"));
    std::hint::black_box(proof);
    instance
}

fn bench_sumcheck(c: &mut Criterion) {
    let mut group = c.benchmark_group("sumcheck");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(8));
    for degree in [2usize, 3] {
        for num_vars in [16usize, 18, 20] {
            let id = format!("deg{degree}/nv{num_vars}");
            let shape = SumOfProducts::product(degree).unwrap_or_else(|e| unreachable!("{e}"));
            let mles = common::random_mles(degree, num_vars, 42);
            let instance =
                ProductSumcheck::new(shape.clone(), mles.clone()).unwrap_or_else(|e| unreachable!("{e}"));
            let sum = instance.claimed_sum();
            group.bench_function(format!("ours/{id}"), |b| {
                b.iter_batched(|| instance.clone(), |i| prove_ours(i, sum), BatchSize::PerIteration)
            });

            let ark_mles: Vec<_> = mles.iter().map(|m| Rc::new(to_ark04(m))).collect();
            let mut polynomial =
                ark_linear_sumcheck::ml_sumcheck::data_structures::ListOfProductsOfPolynomials::new(num_vars);
            polynomial.add_product(ark_mles, ArkFr::from(1u64));
            group.bench_function(format!("arkworks/{id}"), |b| {
                b.iter(|| {
                    let proof = ark_linear_sumcheck::ml_sumcheck::MLSumcheck::prove(&polynomial);
                    std::hint::black_box(proof.is_ok())
                })
            });

            let small = common::small_mles(degree, num_vars, 7);
            let fast = SmallValueProductSumcheck::new(&small).unwrap_or_else(|e| unreachable!("{e}"));
            let small_sum = fast.claimed_sum();
            group.bench_function(format!("ours-small-values/{id}"), |b| {
                b.iter_batched(|| fast.clone(), |i| prove_ours(i, small_sum), BatchSize::PerIteration)
            });
            let dense = ProductSumcheck::new(shape, small.iter().map(|m| m.to_dense()).collect())
                .unwrap_or_else(|e| unreachable!("{e}"));
            group.bench_function(format!("ours-dense-small-values/{id}"), |b| {
                b.iter_batched(|| dense.clone(), |i| prove_ours(i, small_sum), BatchSize::PerIteration)
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_sumcheck);
criterion_main!(benches);
