//! The attention layer proof: prover and verifier time against the number of heads, and the
//! GPT-2-small shape (s = 512, h = 12, m = 64, causal), all in linear-attention mode; the
//! default layer with the proven softmax, and in committed mode.

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use criterion::{Criterion, criterion_group};

#[path = "../src/allocator.rs"]
mod allocator;
use std::time::Duration;
use zkmha_attention::{
    AttentionInputs, AttentionShape, MaskKind, SoftmaxMode, SoftmaxParams, commit_inputs, hyrax_params_for,
    prove_layer, prove_layer_committed, verify_layer, verify_layer_committed,
};

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
            b.iter(|| {
                prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs)
                    .unwrap_or_else(|e| unreachable!("{e}"))
            })
        });
        let (statement, proof, _) = prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs)
            .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("verify/{id}"), |b| {
            b.iter(|| verify_layer(&statement, &proof).unwrap_or_else(|e| unreachable!("{e}")))
        });
    }
    // The proven softmax on the default layer (public inputs).
    let shape = AttentionShape::new(128, 8, 64, 64).unwrap_or_else(|e| unreachable!("{e}"));
    let default_inputs = inputs(&shape);
    let scale = 4.0 / (8.0 * 127.0 * 127.0 / 3.0);
    let softmax = SoftmaxMode::Exponential(
        SoftmaxParams::for_score_scale(scale, shape.padded_seq_len()).unwrap_or_else(|e| unreachable!("{e}")),
    );
    group.bench_function("prove-softmax/seq128/heads8/dim64", |b| {
        b.iter(|| {
            prove_layer(&shape, MaskKind::Causal, softmax, &default_inputs)
                .unwrap_or_else(|e| unreachable!("{e}"))
        })
    });
    let (statement, proof, _) = prove_layer(&shape, MaskKind::Causal, softmax, &default_inputs)
        .unwrap_or_else(|e| unreachable!("{e}"));
    group.bench_function("verify-softmax/seq128/heads8/dim64", |b| {
        b.iter(|| verify_layer(&statement, &proof).unwrap_or_else(|e| unreachable!("{e}")))
    });

    // Committed mode on the default layer (d_model 512, 8 heads, 128 tokens): the generators and
    // their table of multiples are derived once, as a long-running prover would.
    let shape = AttentionShape::new(128, 8, 64, 64).unwrap_or_else(|e| unreachable!("{e}"));
    let inputs = inputs(&shape);
    let params = hyrax_params_for(&shape, SoftmaxMode::Identity);
    let id = "seq128/heads8/dim64";
    group.bench_function(format!("commit-inputs/{id}"), |b| {
        b.iter(|| {
            commit_inputs(&params, &shape, SoftmaxMode::Identity, &inputs)
                .unwrap_or_else(|e| unreachable!("{e}"))
        })
    });
    group.bench_function(format!("prove-committed/{id}"), |b| {
        b.iter(|| {
            prove_layer_committed(&params, &shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs)
                .unwrap_or_else(|e| unreachable!("{e}"))
        })
    });
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs)
            .unwrap_or_else(|e| unreachable!("{e}"));
    group.bench_function(format!("verify-committed/{id}"), |b| {
        b.iter(|| verify_layer_committed(&params, &statement, &proof).unwrap_or_else(|e| unreachable!("{e}")))
    });
    group.finish();
}

criterion_group!(benches, bench_attention);
/// `criterion_main!` with the command-line program's allocator setting, so the numbers match
/// `zkmha` runs.
fn main() {
    allocator::retain_freed_memory();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
