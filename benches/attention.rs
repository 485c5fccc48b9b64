//! The attention layer proof: prover and verifier time against the number of heads, and the
//! GPT-2-small shape (s = 512, h = 12, m = 64, causal).

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Duration;
use zkmha_attention::{AttentionInputs, AttentionShape, MaskKind, prove_layer, verify_layer};

fn inputs(shape: &AttentionShape) -> AttentionInputs {
    let mut rng = StdRng::seed_from_u64(1);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

fn bench_attention(c: &mut Criterion) {
    let mut group = c.benchmark_group("attention");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    for (seq, heads) in [(128usize, 1usize), (128, 4), (128, 8), (128, 16), (512, 12)] {
        let shape = AttentionShape::new(seq, heads, 64, 64).unwrap_or_else(|e| unreachable!("{e}"));
        let inputs = inputs(&shape);
        let id = format!("seq{seq}/heads{heads}/dim64");
        group.bench_function(format!("prove/{id}"), |b| {
            b.iter(|| prove_layer(&shape, MaskKind::Causal, &inputs).unwrap_or_else(|e| unreachable!("{e}")))
        });
        let (statement, proof, _) =
            prove_layer(&shape, MaskKind::Causal, &inputs).unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("verify/{id}"), |b| {
            b.iter(|| verify_layer(&statement, &proof).unwrap_or_else(|e| unreachable!("{e}")))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_attention);
criterion_main!(benches);
