//! `opening_batches` on adversarial layouts (a fresh-context review's fuzz) never panics, and every batch it forms
//! passes Hyrax::can_batch.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_field::Fr;
use zkmha_pcs::{G1Affine, Hyrax, HyraxCommitment};
use zkmha_zk::multi_opening::opening_batches;

#[test]
fn opening_batches_on_random_layouts() {
    let mut rng = StdRng::seed_from_u64(5);
    let g = G1Affine::default();
    let shared: Vec<Fr> = (0..12).map(|i| Fr::from(i as u64 + 2)).collect();
    for _ in 0..20000 {
        let n = rng.gen_range(0..6);
        let mut commitments = Vec::new();
        let mut points = Vec::new();
        for _ in 0..n {
            let num_vars = rng.gen_range(0..10);
            let rows = match rng.gen_range(0..4) {
                0 => rng.gen_range(0..40),
                _ => 1usize << rng.gen_range(0..=num_vars.min(6)),
            };
            commitments.push(HyraxCommitment { num_vars, rows: vec![g; rows] });
            let len = if rng.gen_bool(0.9) { num_vars } else { rng.gen_range(0..12) };
            let p: Vec<Fr> = if rng.gen_bool(0.7) {
                shared[..len].to_vec()
            } else {
                (0..len).map(|_| Fr::from(rng.gen_range(0..3u64))).collect()
            };
            points.push(p);
        }
        let layout: Vec<(&HyraxCommitment, &[Fr])> =
            commitments.iter().zip(&points).map(|(c, p)| (c, p.as_slice())).collect();
        if let Ok(batches) = opening_batches(&layout) {
            let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "a partition");
            for b in &batches {
                let members: Vec<_> = b.iter().map(|&i| layout[i]).collect();
                // A single member that cannot batch with itself is left for the verifier to refuse.
                if b.len() > 1 {
                    assert!(Hyrax::can_batch(&members));
                }
            }
        }
    }
}
