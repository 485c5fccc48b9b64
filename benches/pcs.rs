//! Commitment schemes: commit (random field elements and 8-bit integers), open, verify.
//! Ids: `pcs/{hyperkzg,hyrax}/{commit,commit-8bit,open,verify}/nv{16,18,20}`.

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Duration;
use zkmha_field::Fr;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{HyperKzg, Hyrax, HyraxParams, StructuredReferenceString};
use zkmha_transcript::Transcript;

fn bench_pcs(c: &mut Criterion) {
    let mut group = c.benchmark_group("pcs");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let mut rng = StdRng::seed_from_u64(1);
    for n in [16usize, 18, 20] {
        let f = DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect())
            .unwrap_or_else(|e| unreachable!("{e}"));
        let small: Vec<i64> = (0..1usize << n).map(|_| rng.gen_range(-127i64..=127)).collect();
        let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();

        let params = HyraxParams::new(n);
        group.bench_function(format!("hyrax/commit/nv{n}"), |b| b.iter(|| Hyrax::commit(&params, &f)));
        group.bench_function(format!("hyrax/commit-8bit/nv{n}"), |b| {
            b.iter(|| Hyrax::commit_small(&params, n, &small))
        });
        let commitment = Hyrax::commit(&params, &f).unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hyrax/open/nv{n}"), |b| {
            b.iter(|| Hyrax::open(&f, &commitment, &point, &mut Transcript::new(b"bench")))
        });
        let (proof, value) = Hyrax::open(&f, &commitment, &point, &mut Transcript::new(b"bench"))
            .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hyrax/verify/nv{n}"), |b| {
            b.iter(|| {
                Hyrax::verify(&params, &commitment, &point, value, &proof, &mut Transcript::new(b"bench"))
            })
        });

        // HyperKZG's random-scalar MSMs take seconds at nv20: measured up to nv18 here.
        if n > 18 {
            continue;
        }
        let srs = StructuredReferenceString::insecure_for_testing(n, 1);
        let pk = srs.prover_key(n).unwrap_or_else(|e| unreachable!("{e}"));
        let vk = srs.verifier_key().unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hyperkzg/commit/nv{n}"), |b| b.iter(|| HyperKzg::commit(&pk, &f)));
        group.bench_function(format!("hyperkzg/commit-8bit/nv{n}"), |b| {
            b.iter(|| HyperKzg::commit_small(&pk, &small))
        });
        let commitment = HyperKzg::commit(&pk, &f).unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hyperkzg/open/nv{n}"), |b| {
            b.iter(|| HyperKzg::open(&pk, &f, &commitment, &point, &mut Transcript::new(b"bench")))
        });
        let (proof, value) = HyperKzg::open(&pk, &f, &commitment, &point, &mut Transcript::new(b"bench"))
            .unwrap_or_else(|e| unreachable!("{e}"));
        group.bench_function(format!("hyperkzg/verify/nv{n}"), |b| {
            b.iter(|| {
                HyperKzg::verify(&vk, &commitment, &point, value, &proof, &mut Transcript::new(b"bench"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pcs);
criterion_main!(benches);
