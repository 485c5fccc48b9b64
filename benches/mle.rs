//! MLE kernels: in-place binding, eq tables, evaluation, at n = 16, 18, 20.

mod common;

use ark_std::UniformRand;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::time::Duration;
use zkmha_field::Fr;
use zkmha_mle::eq_table;

fn bench_mle(c: &mut Criterion) {
    let mut group = c.benchmark_group("mle");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    let mut rng = ark_std::test_rng();
    for num_vars in [16usize, 18, 20] {
        let mle = common::random_mles(1, num_vars, 1).remove(0);
        let r = Fr::rand(&mut rng);
        let point: Vec<Fr> = (0..num_vars).map(|_| Fr::rand(&mut rng)).collect();
        group.bench_function(format!("bind_highest_in_place/nv{num_vars}"), |b| {
            b.iter_batched_ref(
                || mle.clone(),
                |m| m.bind_highest_in_place(r).unwrap_or_else(|e| unreachable!("{e}")),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("eq_table/nv{num_vars}"), |b| b.iter(|| eq_table(&point)));
        group.bench_function(format!("evaluate/nv{num_vars}"), |b| {
            b.iter(|| mle.evaluate(&point).unwrap_or_else(|e| unreachable!("{e}")))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_mle);
criterion_main!(benches);
