//! Each sub-protocol on its own: an honest round trip whose output claim is discharged against
//! the witness tensor, and rejection of a tampered claim and a tampered proof.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::attention_values::{AttentionMatrix, prove_attention_values, verify_attention_values};
use zkmha_attention::masking::{prove_masking, verify_masking};
use zkmha_attention::padding::{prove_padding, verify_padding};
use zkmha_attention::qk::{prove_qk, verify_qk};
use zkmha_attention::structured::mask_value;
use zkmha_attention::unpadding::{prove_unpadding, verify_unpadding};
use zkmha_attention::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"sub-protocol-tests";

fn shapes() -> Vec<AttentionShape> {
    let mut out = Vec::new();
    for h in [1usize, 3, 8, 12] {
        for s in [1usize, 7, 16, 33] {
            out.push(AttentionShape::new(s, h, 3, 2).unwrap());
        }
    }
    out
}

fn setup(shape: &AttentionShape, mask: MaskKind, seed: u64) -> (AttentionWitness, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-50i64..50)).collect::<Vec<_>>();
    let inputs = AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    };
    (compute_witness(shape, mask, &inputs).unwrap(), StdRng::seed_from_u64(seed + 1))
}

fn mle(table: &[Fr]) -> DenseMultilinearExtension {
    DenseMultilinearExtension::from_vector_padded(table.to_vec()).unwrap()
}

fn random_claim(table: &[Fr], rng: &mut StdRng) -> EvalClaim {
    let m = mle(table);
    let point: Vec<Fr> = (0..m.num_vars()).map(|_| Fr::rand(rng)).collect();
    EvalClaim { value: m.evaluate(&point).unwrap(), point }
}

fn discharge(table: &[Fr], claim: &EvalClaim) -> bool {
    mle(table).evaluate(&claim.point).unwrap() == claim.value
}

fn bumped(claim: &EvalClaim) -> EvalClaim {
    EvalClaim { point: claim.point.clone(), value: claim.value + Fr::one() }
}

/// The attention matrix `A = z ⊙ QK̂ + m` as a tensor (only tests build it).
fn attention_tensor(shape: &AttentionShape, mask: MaskKind, scores: &[Fr]) -> Vec<Fr> {
    let sp = shape.padded_seq_len();
    scores
        .iter()
        .enumerate()
        .map(
            |(x, score)| {
                if keeps(mask, shape.seq_len, (x / sp) % sp, x % sp) { *score } else { mask_value() }
            },
        )
        .collect()
}

#[test]
fn unpadding_round_trips_and_rejects_tampering() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, n as u64);
        let padded_output =
            DenseMultilinearExtension::from_matrix(shape.seq_len, shape.value_model_width(), &w.output)
                .unwrap();
        let claim = random_claim(padded_output.evaluations(), &mut rng);
        let (proof, out) =
            prove_unpadding(shape, &w.output_hat, &claim, &mut Transcript::new(DOMAIN)).unwrap();
        let verified = verify_unpadding(shape, &claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
        assert_eq!(verified, out);
        assert!(discharge(&w.output_hat, &verified), "{shape:?}");
        assert!(verify_unpadding(shape, &bumped(&claim), &proof, &mut Transcript::new(DOMAIN)).is_err());
        let mut bad = proof.clone();
        bad.sumcheck.final_evaluations[0] += Fr::one();
        assert!(verify_unpadding(shape, &claim, &bad, &mut Transcript::new(DOMAIN)).is_err());
    }
}

#[test]
fn attention_values_round_trips_and_rejects_tampering() {
    for (n, shape) in shapes().iter().enumerate() {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (w, mut rng) = setup(shape, mask, 10 + n as u64);
            let claim = random_claim(&w.output_hat, &mut rng);
            let (proof, out) = prove_attention_values(
                shape,
                AttentionMatrix::Masked { scores: &w.scores, mask },
                &w.values_hat,
                &claim,
                &mut Transcript::new(DOMAIN),
            )
            .unwrap();
            let verified =
                verify_attention_values(shape, &claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
            assert_eq!(verified, out);
            assert!(discharge(&attention_tensor(shape, mask, &w.scores), &verified.attention), "{shape:?}");
            assert!(discharge(&w.values_hat, &verified.values_hat), "{shape:?}");
            assert!(
                verify_attention_values(shape, &bumped(&claim), &proof, &mut Transcript::new(DOMAIN))
                    .is_err()
            );
            // A wrong witness: one entry of V̂ changed.
            let mut wrong = w.values_hat.clone();
            wrong[0] += Fr::one();
            let (bad, _) = prove_attention_values(
                shape,
                AttentionMatrix::Masked { scores: &w.scores, mask },
                &wrong,
                &claim,
                &mut Transcript::new(DOMAIN),
            )
            .unwrap();
            assert!(verify_attention_values(shape, &claim, &bad, &mut Transcript::new(DOMAIN)).is_err());
        }
    }
}

#[test]
fn masking_round_trips_and_rejects_tampering() {
    for (n, shape) in shapes().iter().enumerate() {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (w, mut rng) = setup(shape, mask, 20 + n as u64);
            let claim = random_claim(&attention_tensor(shape, mask, &w.scores), &mut rng);
            let (proof, out) =
                prove_masking(shape, mask, w.scores.clone(), &claim, &mut Transcript::new(DOMAIN)).unwrap();
            let verified = verify_masking(shape, mask, &claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
            assert_eq!(verified, out);
            assert!(discharge(&w.scores, &verified), "{shape:?} {mask}");
            assert!(
                verify_masking(shape, mask, &bumped(&claim), &proof, &mut Transcript::new(DOMAIN)).is_err()
            );
            // The other mask kind does not verify the same proof (unless nothing is masked differently).
            let other = if mask == MaskKind::Causal { MaskKind::None } else { MaskKind::Causal };
            if shape.seq_len > 1 {
                assert!(verify_masking(shape, other, &claim, &proof, &mut Transcript::new(DOMAIN)).is_err());
            }
        }
    }
}

#[test]
fn qk_round_trips_and_rejects_tampering() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, 30 + n as u64);
        let claim = random_claim(&w.scores, &mut rng);
        let (proof, out) =
            prove_qk(shape, &w.queries_hat, &w.keys_hat, &claim, &mut Transcript::new(DOMAIN)).unwrap();
        let verified = verify_qk(shape, &claim, &proof, &mut Transcript::new(DOMAIN)).unwrap();
        assert_eq!(verified, out);
        assert!(discharge(&w.queries_hat, &verified.queries_hat), "{shape:?}");
        assert!(discharge(&w.keys_hat, &verified.keys_hat), "{shape:?}");
        assert!(verify_qk(shape, &bumped(&claim), &proof, &mut Transcript::new(DOMAIN)).is_err());
        // A single head's keys changed.
        let mut wrong = w.keys_hat.clone();
        wrong[shape.padded_head_dim() * (shape.heads - 1)] += Fr::one();
        let (bad, _) = prove_qk(shape, &w.queries_hat, &wrong, &claim, &mut Transcript::new(DOMAIN)).unwrap();
        assert!(verify_qk(shape, &claim, &bad, &mut Transcript::new(DOMAIN)).is_err());
    }
}

#[test]
fn padding_round_trips_and_rejects_tampering() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, 40 + n as u64);
        let claims = [
            random_claim(&w.queries_hat, &mut rng),
            random_claim(&w.keys_hat, &mut rng),
            random_claim(&w.values_hat, &mut rng),
        ];
        let refs = [&claims[0], &claims[1], &claims[2]];
        let inputs = [w.queries.as_slice(), w.keys.as_slice(), w.values.as_slice()];
        let (proof, out) = prove_padding(shape, inputs, refs, &mut Transcript::new(DOMAIN)).unwrap();
        let verified = verify_padding(shape, refs, &proof, &mut Transcript::new(DOMAIN)).unwrap();
        assert_eq!(verified, out);
        assert!(discharge(&w.queries, &verified.queries), "{shape:?}");
        assert!(discharge(&w.keys, &verified.keys), "{shape:?}");
        assert!(discharge(&w.values, &verified.values), "{shape:?}");
        for k in 0..3 {
            let mut tampered = claims.clone();
            tampered[k] = bumped(&tampered[k]);
            let refs = [&tampered[0], &tampered[1], &tampered[2]];
            assert!(verify_padding(shape, refs, &proof, &mut Transcript::new(DOMAIN)).is_err());
        }
        // A wrong witness: V̂ claimed for a V with one entry changed.
        let mut wrong = w.values.clone();
        wrong[0] += Fr::one();
        let (bad, bad_out) =
            prove_padding(shape, [&w.queries, &w.keys, &wrong], refs, &mut Transcript::new(DOMAIN)).unwrap();
        let accepted = verify_padding(shape, refs, &bad, &mut Transcript::new(DOMAIN));
        // Either the sum-check fails, or the claim on V it hands on is false for the real V.
        assert!(accepted.is_err() || !discharge(&w.values, &bad_out.values));
    }
}
