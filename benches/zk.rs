//! What zero knowledge costs: the plain product sum-check against the zero-knowledge one
//! (masked rounds, committed claim and factor values, one product proof), and Hyrax's plain
//! commitment and opening of an 8-bit table against the hiding ones.
//!
//! Ids: `zk/product/{plain,zk}/{prove,verify}/nv{12,16,20}` (degree 3: a public factor and two
//! hidden ones, as in batched QKᵀ), `zk/hyrax/{plain,hiding}/{commit-8bit,open,verify}/nv{16,18}`,
//! and `zk/layer/{plain,zk}/{prove,verify}/seq128/heads8/dim64`: the committed default layer in
//! linear-attention mode (commitments included in prove), plain against zero-knowledge.

mod common;

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rand_chacha::ChaCha20Rng;
use std::time::Duration;
use zkmha_field::Fr;
use zkmha_pcs::{G1Affine, Hyrax, HyraxParams, PolynomialTable};
use zkmha_sumcheck::{
    ProductSumcheck, SumOfProducts, SumcheckClaim, prove_instance_with_evaluations, verify_product,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    DeferredChecks, MaskSchedule, ProverMasks, ValueOpening, VerifierMasks, ZkProductShape, prove_zk_product,
    verify_zk_product_deferred,
};

fn bench_product(c: &mut Criterion) {
    let mut group = c.benchmark_group("zk/product");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    let params = HyraxParams::new(12);
    for num_vars in [12usize, 16, 20] {
        let shape = SumOfProducts::product(3).unwrap_or_else(|e| unreachable!("{e}"));
        let zk_shape = ZkProductShape::new(shape.clone(), vec![true, false, false])
            .unwrap_or_else(|e| unreachable!("{e}"));
        let instance = ProductSumcheck::new(shape.clone(), common::random_mles(3, num_vars, 7))
            .unwrap_or_else(|e| unreachable!("{e}"));
        let sum = instance.claimed_sum();
        group.bench_function(format!("plain/prove/nv{num_vars}"), |b| {
            b.iter_batched(
                || instance.clone(),
                |mut i| prove_instance_with_evaluations(&mut i, sum, &mut Transcript::new(b"bench")),
                BatchSize::PerIteration,
            )
        });
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let opening = ValueOpening::hide(sum, &mut rng);
        let commitment = G1Affine::from(opening.commit(&params));
        let schedule = MaskSchedule(vec![(num_vars, 3)]);
        // The whole zero-knowledge proof of one sum-check: the mask's commitment, the
        // sum-check, its committed factor values and the mask's opening argument.
        let mut prove_zk = |mut i: ProductSumcheck| {
            let mut transcript = Transcript::new(b"bench");
            let (mut masks, masks_commitment) =
                ProverMasks::commit(&params, schedule.clone(), &mut transcript, &mut rng)
                    .unwrap_or_else(|e| unreachable!("{e}"));
            let (proof, _, _) = prove_zk_product(
                &params,
                &zk_shape,
                &mut i,
                (commitment, &opening),
                &mut masks,
                &mut transcript,
                &mut rng,
            )
            .unwrap_or_else(|e| unreachable!("{e}"));
            let openings = masks
                .prove_openings(&params, &mut transcript, &mut rng)
                .unwrap_or_else(|e| unreachable!("{e}"));
            (proof, masks_commitment, openings)
        };
        group.bench_function(format!("zk/prove/nv{num_vars}"), |b| {
            b.iter_batched(|| instance.clone(), &mut prove_zk, BatchSize::PerIteration)
        });
        let (plain, _) =
            prove_instance_with_evaluations(&mut instance.clone(), sum, &mut Transcript::new(b"bench"));
        let claim = SumcheckClaim::new(num_vars, 3, sum);
        group.bench_function(format!("plain/verify/nv{num_vars}"), |b| {
            b.iter(|| verify_product(&shape, &claim, &plain, &mut Transcript::new(b"bench")))
        });
        let (zk, masks_commitment, openings) = prove_zk(instance.clone());
        group.bench_function(format!("zk/verify/nv{num_vars}"), |b| {
            b.iter(|| {
                let mut transcript = Transcript::new(b"bench");
                let mut masks = VerifierMasks::absorb(schedule.clone(), masks_commitment, &mut transcript);
                let mut checks = DeferredChecks::new();
                verify_zk_product_deferred(
                    &params,
                    &zk_shape,
                    num_vars,
                    commitment,
                    &zk,
                    &mut masks,
                    &mut transcript,
                    &mut checks,
                )
                .and_then(|_| masks.verify_openings(&params, &openings, &mut transcript, &mut checks))
                .and_then(|()| checks.finish(&transcript))
            })
        });
        use ark_serialize::CanonicalSerialize;
        println!(
            "zk/product proof sizes (nv{num_vars}): plain {} B, zero-knowledge {} B (+ masks' commitment and argument {} B)",
            plain.compressed_size(),
            zk.compressed_size(),
            masks_commitment.compressed_size() + openings.compressed_size()
        );
    }
    group.finish();
}

fn bench_hyrax(c: &mut Criterion) {
    let mut group = c.benchmark_group("zk/hyrax");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let mut rng = StdRng::seed_from_u64(1);
    for n in [16usize, 18] {
        let columns = n - n / 2;
        let params = HyraxParams::new(n);
        params.prepare_small_table();
        let small: Vec<i64> = (0..1usize << n).map(|_| rng.gen_range(-127i64..=127)).collect();
        let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let table = PolynomialTable::Integers { num_vars: n, values: &small };
        let mut secure = ChaCha20Rng::seed_from_u64(2);
        group.bench_function(format!("plain/commit-8bit/nv{n}"), |b| {
            b.iter(|| Hyrax::commit_small_with_columns(&params, n, columns, &small))
        });
        group.bench_function(format!("hiding/commit-8bit/nv{n}"), |b| {
            b.iter(|| Hyrax::commit_small_hiding(&params, n, columns, &small, &mut secure))
        });
        let plain = Hyrax::commit_small_with_columns(&params, n, columns, &small)
            .unwrap_or_else(|e| unreachable!("{e}"));
        let (hiding, blinds) = Hyrax::commit_small_hiding(&params, n, columns, &small, &mut secure)
            .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("plain/open/nv{n}"), |b| {
            b.iter(|| Hyrax::open_batch_tables(&[(table, &plain, &point)], &mut Transcript::new(b"bench")))
        });
        group.bench_function(format!("hiding/open/nv{n}"), |b| {
            b.iter(|| {
                Hyrax::open_batch_zk(
                    &params,
                    &[(table, &hiding, &blinds, &point)],
                    &mut Transcript::new(b"bench"),
                    &mut secure,
                )
            })
        });
        let (plain_proof, values) =
            Hyrax::open_batch_tables(&[(table, &plain, &point)], &mut Transcript::new(b"bench"))
                .unwrap_or_else(|e| unreachable!("{e}"));
        let value = values[0];
        group.bench_function(format!("plain/verify/nv{n}"), |b| {
            b.iter(|| {
                Hyrax::verify_batch(
                    &params,
                    &[(&plain, &point, value)],
                    &plain_proof,
                    &mut Transcript::new(b"bench"),
                )
            })
        });
        let (zk_proof, _) = Hyrax::open_batch_zk(
            &params,
            &[(table, &hiding, &blinds, &point)],
            &mut Transcript::new(b"bench"),
            &mut secure,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hiding/verify/nv{n}"), |b| {
            b.iter(|| {
                Hyrax::verify_batch_zk(
                    &params,
                    &[(&hiding, &point, value)],
                    &zk_proof,
                    &mut Transcript::new(b"bench"),
                )
            })
        });
    }
    group.finish();
}

fn bench_layer(c: &mut Criterion) {
    use zkmha_attention::mode::Zk;
    use zkmha_attention::{
        AttentionInputs, AttentionShape, MaskKind, SoftmaxMode, hyrax_params_for, prove_layer_committed,
        prove_layer_committed_with, verify_committed_layer, verify_layer_committed, zk_hyrax_params_for,
    };
    let mut group = c.benchmark_group("zk/layer");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    let shape = AttentionShape::new(128, 8, 64, 64).unwrap_or_else(|e| unreachable!("{e}"));
    let mut rng = StdRng::seed_from_u64(1);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    let inputs = AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    };
    let scale = 4.0 / (8.0 * 127.0 * 127.0 / 3.0);
    let exponential = SoftmaxMode::Exponential(
        zkmha_attention::fixed_point::SoftmaxParams::for_score_scale(scale, shape.padded_seq_len())
            .unwrap_or_else(|e| unreachable!("{e}")),
    );
    let mask = MaskKind::Causal;
    for (mode, softmax) in [("linear", SoftmaxMode::Identity), ("softmax", exponential)] {
        let id = format!("{mode}/seq128/heads8/dim64");
        let plain_params = hyrax_params_for(&shape, softmax);
        plain_params.prepare_small_table();
        let zk_params = zk_hyrax_params_for(&shape, softmax).unwrap_or_else(|e| unreachable!("{e}"));
        zk_params.prepare_small_table();
        let mut secure = ChaCha20Rng::seed_from_u64(9);
        group.bench_function(format!("plain/prove/{id}"), |b| {
            b.iter(|| prove_layer_committed(&plain_params, &shape, mask, softmax, &inputs))
        });
        group.bench_function(format!("zk/prove/{id}"), |b| {
            b.iter(|| {
                prove_layer_committed_with::<Zk>(&zk_params, &shape, mask, softmax, &inputs, &mut secure)
            })
        });
        let (statement, proof, _) = prove_layer_committed(&plain_params, &shape, mask, softmax, &inputs)
            .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("plain/verify/{id}"), |b| {
            b.iter(|| verify_layer_committed(&plain_params, &statement, &proof))
        });
        let (zk_statement, zk_proof, _) =
            prove_layer_committed_with::<Zk>(&zk_params, &shape, mask, softmax, &inputs, &mut secure)
                .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("zk/verify/{id}"), |b| {
            b.iter(|| verify_committed_layer::<Zk>(&zk_params, &zk_statement, &zk_proof))
        });
        use ark_serialize::CanonicalSerialize;
        println!(
            "zk/layer proof sizes ({id}): plain {} B, zero-knowledge {} B",
            proof.compressed_size(),
            zk_proof.compressed_size()
        );
    }
    group.finish();
}

criterion_group!(benches, bench_product, bench_hyrax, bench_layer);
criterion_main!(benches);
