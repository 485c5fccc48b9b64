//! Each attention sub-protocol on its own, in both modes from the same tests: an honest round
//! trip on many shapes (non-powers of two included) whose claims out are discharged against the
//! plain tensors, and one test per attack, each run plainly and in zero knowledge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::attention_values::{
    self, AttentionMatrix, prove_attention_values, verify_attention_values,
};
use zkmha_attention::fixed_point::{DIGIT_BITS, SoftmaxParams, SoftmaxWitness};
use zkmha_attention::grouped_query::{
    SharedHeadsShape, expand_heads, prove_shared_heads, verify_shared_heads,
};
use zkmha_attention::masking::{self, prove_masking, prove_masking_dense, verify_masking};
use zkmha_attention::mode::{Plain, Zk};
use zkmha_attention::padding::{self, prove_padding, verify_padding};
use zkmha_attention::qk::{self, prove_qk, verify_qk};
use zkmha_attention::softmax::{
    ExponentialSoftmaxProofOf, SlotClaims, SlotOutput, SlotProverOutput, SoftmaxProverData, prove_slot_alone,
    slot_alone_zk_schedule, softmax_column_tables, softmax_multiplicities, verify_slot_alone,
};
use zkmha_attention::structured::mask_value;
use zkmha_attention::unpadding::{self, prove_unpadding, verify_unpadding};
use zkmha_attention::*;
use zkmha_field::{Field, Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::PolynomialTable;
use zkmha_sumcheck::EvalClaim;

use crate::modes::TestMode;

in_both_modes!(
    unpadding_round_trips,
    unpadding_rejects_a_false_claim_and_a_changed_weight,
    attention_values_round_trip,
    attention_values_reject_another_values_tensor,
    masking_round_trips_with_either_prover,
    masking_rejects_the_other_mask_kind,
    qk_round_trips,
    qk_rejects_a_false_claim,
    qk_rejects_another_heads_keys,
    qk_names_a_changed_selector,
    qk_rejects_claims_at_moved_points,
    padding_round_trips,
    padding_rejects_swapped_and_false_claims,
    padding_rejects_a_changed_value_row,
    a_changed_round_is_rejected_in_every_step,
    shared_heads_round_trip,
    shared_heads_reject_a_false_claim_and_another_table,
    softmax_round_trips,
    softmax_rejects_a_probability_that_is_not_a_table_value,
    softmax_rejects_a_probability_from_another_exponent,
    softmax_rejects_a_row_whose_sum_is_out_of_the_bound,
    softmax_rejects_a_masked_entry_made_non_zero,
    softmax_rejects_a_probability_in_a_padded_head,
    softmax_rejects_a_wrong_shift,
    softmax_rejects_a_false_claim,
    softmax_rejects_sent_values_that_break_its_relations,
    softmax_rejects_a_changed_round_and_public_factor,
);

fn shapes() -> Vec<AttentionShape> {
    let mut out = Vec::new();
    for h in [1usize, 3, 8] {
        for s in [1usize, 7, 16, 33] {
            out.push(AttentionShape::new(s, h, 3, 2).unwrap());
        }
    }
    out
}

fn setup(shape: &AttentionShape, mask: MaskKind, seed: u64) -> (AttentionWitness, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-50i64..50)).collect::<Vec<_>>();
    let inputs = AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    };
    (compute_witness(shape, mask, &inputs).unwrap(), ChaCha20Rng::seed_from_u64(seed + 1))
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

fn padded_output(shape: &AttentionShape, w: &AttentionWitness) -> Vec<Fr> {
    DenseMultilinearExtension::from_matrix(shape.seq_len, shape.value_model_width(), &w.output)
        .unwrap()
        .evaluations()
        .to_vec()
}

fn zero() -> Fr {
    Fr::from(0u64)
}

// ---------------------------------------------------------------- unpadding

type UnpaddingRun<M> = (
    (
        unpadding::UnpaddingProof<<M as zkmha_attention::mode::ProductMode>::ProductProof>,
        EvalClaim<<M as zkmha_attention::mode::ProductMode>::ProverValue>,
    ),
    <M as TestMode>::Extra,
);

fn prove_unpadding_step<M: TestMode>(
    shape: &AttentionShape,
    output_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    rng: &mut ChaCha20Rng,
) -> UnpaddingRun<M> {
    M::prove(&[unpadding::zk_sumcheck_shape(shape)], rng, |p, t| {
        prove_unpadding::<M>(p, shape, output_hat, claim, t)
    })
}

fn verify_unpadding_step<M: TestMode>(
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &unpadding::UnpaddingProof<M::ProductProof>,
    extra: &M::Extra,
) -> Result<EvalClaim<M::Value>, AttentionError> {
    M::verify(&[unpadding::zk_sumcheck_shape(shape)], extra, |v, t| {
        verify_unpadding::<M>(v, shape, claim, proof, t)
    })
}

fn unpadding_round_trips<M: TestMode>() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, n as u64);
        let (claim, public) = M::claim(&padded_output(shape, &w), zero(), &mut rng);
        let ((proof, out), extra) = prove_unpadding_step::<M>(shape, &w.output_hat, &claim, &mut rng);
        let verified = verify_unpadding_step::<M>(shape, &public, &proof, &extra).unwrap();
        assert!(M::discharges(&w.output_hat, &out, &verified), "{shape:?}");
    }
}

fn unpadding_rejects_a_false_claim_and_a_changed_weight<M: TestMode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 5);
    let (claim, public) = M::claim(&padded_output(&shape, &w), Fr::one(), &mut rng);
    let ((proof, _), extra) = prove_unpadding_step::<M>(&shape, &w.output_hat, &claim, &mut rng);
    assert_eq!(
        verify_unpadding_step::<M>(&shape, &public, &proof, &extra),
        Err(M::false_claim_error("unpadding"))
    );
    let (claim, public) = M::claim(&padded_output(&shape, &w), zero(), &mut rng);
    let ((mut proof, _), extra) = prove_unpadding_step::<M>(&shape, &w.output_hat, &claim, &mut rng);
    M::tamper_public(&mut proof.product, 1, 0);
    assert_eq!(
        verify_unpadding_step::<M>(&shape, &public, &proof, &extra),
        Err(M::public_factor_error("unpadding"))
    );
}

// ---------------------------------------------------------------- softmax·V

type AttentionValuesRun<M> = (
    (
        attention_values::AttentionValuesProof<<M as zkmha_attention::mode::ProductMode>::ProductProof>,
        attention_values::AttentionValuesClaims<<M as zkmha_attention::mode::ProductMode>::ProverValue>,
    ),
    <M as TestMode>::Extra,
);

fn prove_attention_values_step<M: TestMode>(
    shape: &AttentionShape,
    mask: MaskKind,
    w: &AttentionWitness,
    values_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    rng: &mut ChaCha20Rng,
) -> AttentionValuesRun<M> {
    let matrix = AttentionMatrix::Masked { scores: &w.scores, mask };
    M::prove(&[attention_values::zk_sumcheck_shape(shape)], rng, |p, t| {
        prove_attention_values::<M>(p, shape, matrix, values_hat, claim, t)
    })
}

fn verify_attention_values_step<M: TestMode>(
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &attention_values::AttentionValuesProof<M::ProductProof>,
    extra: &M::Extra,
) -> Result<attention_values::AttentionValuesClaims<M::Value>, AttentionError> {
    M::verify(&[attention_values::zk_sumcheck_shape(shape)], extra, |v, t| {
        verify_attention_values::<M>(v, shape, claim, proof, t)
    })
}

fn attention_values_round_trip<M: TestMode>() {
    for (n, shape) in shapes().iter().enumerate() {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (w, mut rng) = setup(shape, mask, 10 + n as u64);
            let (claim, public) = M::claim(&w.output_hat, zero(), &mut rng);
            let ((proof, out), extra) =
                prove_attention_values_step::<M>(shape, mask, &w, &w.values_hat, &claim, &mut rng);
            let verified = verify_attention_values_step::<M>(shape, &public, &proof, &extra).unwrap();
            let attention = attention_tensor(shape, mask, &w.scores);
            assert!(M::discharges(&attention, &out.attention, &verified.attention), "{shape:?} {mask}");
            assert!(M::discharges(&w.values_hat, &out.values_hat, &verified.values_hat), "{shape:?} {mask}");
            let mut bad = proof.clone();
            M::tamper_public(&mut bad.product, 0, 0);
            assert_eq!(
                verify_attention_values_step::<M>(shape, &public, &bad, &extra).err(),
                Some(M::public_factor_error("softmax·V"))
            );
        }
    }
}

fn attention_values_reject_another_values_tensor<M: TestMode>() {
    // The malicious prover: V̂ with one entry changed, the claim still the true one.
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 15);
    let (claim, public) = M::claim(&w.output_hat, zero(), &mut rng);
    let mut wrong = w.values_hat.clone();
    wrong[0] += Fr::one();
    let ((proof, _), extra) =
        prove_attention_values_step::<M>(&shape, MaskKind::Causal, &w, &wrong, &claim, &mut rng);
    assert_eq!(
        verify_attention_values_step::<M>(&shape, &public, &proof, &extra).err(),
        Some(M::false_claim_error("softmax·V"))
    );
}

// ---------------------------------------------------------------- masking

fn masking_round_trips_with_either_prover<M: TestMode>() {
    for (n, shape) in shapes().iter().enumerate() {
        let windows = [1usize, 2, 5].into_iter().filter_map(MaskKind::sliding);
        for mask in [MaskKind::Causal, MaskKind::None].into_iter().chain(windows) {
            let (w, mut rng) = setup(shape, mask, 20 + n as u64);
            let (claim, public) = M::claim(&attention_tensor(shape, mask, &w.scores), zero(), &mut rng);
            let entry = [masking::zk_sumcheck_shape(shape)];
            for dense in [false, true] {
                let ((proof, out), extra) = M::prove(&entry, &mut rng, |p, t| {
                    if dense {
                        prove_masking_dense::<M>(p, shape, mask, &w.scores, &claim, t)
                    } else {
                        prove_masking::<M>(p, shape, mask, w.scores.clone(), &claim, t)
                    }
                });
                let verified =
                    M::verify(&entry, &extra, |v, t| verify_masking::<M>(v, shape, mask, &public, &proof, t))
                        .unwrap();
                assert!(M::discharges(&w.scores, &out, &verified), "{shape:?} {mask} dense: {dense}");
            }
        }
    }
}

fn masking_rejects_the_other_mask_kind<M: TestMode>() {
    let sliding = |w: usize| MaskKind::sliding(w).unwrap();
    let pairs = [
        (MaskKind::Causal, MaskKind::None),
        (MaskKind::None, MaskKind::Causal),
        (sliding(1), MaskKind::Causal),
        (MaskKind::Causal, sliding(1)),
        (sliding(2), sliding(3)),
        (sliding(3), sliding(2)),
        (sliding(5), MaskKind::Causal),
    ];
    for seq_len in [2usize, 7, 16] {
        let shape = AttentionShape::new(seq_len, 3, 3, 2).unwrap();
        let sp = shape.padded_seq_len();
        for (mask, other) in pairs {
            // Two windows both at least as long as the sequence keep the same scores.
            if (0..sp * sp)
                .all(|x| keeps(mask, seq_len, x / sp, x % sp) == keeps(other, seq_len, x / sp, x % sp))
            {
                continue;
            }
            let (w, mut rng) = setup(&shape, mask, 25);
            let (claim, public) = M::claim(&attention_tensor(&shape, mask, &w.scores), zero(), &mut rng);
            let entry = [masking::zk_sumcheck_shape(&shape)];
            let ((proof, _), extra) = M::prove(&entry, &mut rng, |p, t| {
                prove_masking::<M>(p, &shape, mask, w.scores.clone(), &claim, t)
            });
            let result =
                M::verify(&entry, &extra, |v, t| verify_masking::<M>(v, &shape, other, &public, &proof, t));
            assert!(result.is_err(), "{shape:?} {mask} stated as {other}");
        }
    }
}

// ---------------------------------------------------------------- batched QKᵀ

type QkRun<M> = (
    (
        qk::QkProof<<M as zkmha_attention::mode::ProductMode>::ProductProof>,
        qk::QkClaims<<M as zkmha_attention::mode::ProductMode>::ProverValue>,
    ),
    <M as TestMode>::Extra,
);

fn prove_qk_step<M: TestMode>(
    shape: &AttentionShape,
    w: &AttentionWitness,
    keys_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    rng: &mut ChaCha20Rng,
) -> QkRun<M> {
    M::prove(&[qk::zk_sumcheck_shape(shape)], rng, |p, t| {
        prove_qk::<M>(p, shape, &w.queries_hat, keys_hat, claim, t)
    })
}

fn verify_qk_step<M: TestMode>(
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &qk::QkProof<M::ProductProof>,
    extra: &M::Extra,
) -> Result<qk::QkClaims<M::Value>, AttentionError> {
    M::verify(&[qk::zk_sumcheck_shape(shape)], extra, |v, t| verify_qk::<M>(v, shape, claim, proof, t))
}

fn qk_round_trips<M: TestMode>() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, 30 + n as u64);
        let (claim, public) = M::claim(&w.scores, zero(), &mut rng);
        let ((proof, out), extra) = prove_qk_step::<M>(shape, &w, &w.keys_hat, &claim, &mut rng);
        let verified = verify_qk_step::<M>(shape, &public, &proof, &extra).unwrap();
        assert!(M::discharges(&w.queries_hat, &out.queries_hat, &verified.queries_hat), "{shape:?}");
        assert!(M::discharges(&w.keys_hat, &out.keys_hat, &verified.keys_hat), "{shape:?}");
    }
}

fn qk_rejects_a_false_claim<M: TestMode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 60);
    let (claim, public) = M::claim(&w.scores, Fr::one(), &mut rng);
    let ((proof, _), extra) = prove_qk_step::<M>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    assert_eq!(
        verify_qk_step::<M>(&shape, &public, &proof, &extra).err(),
        Some(M::false_claim_error("batched QKᵀ"))
    );
}

fn qk_rejects_another_heads_keys<M: TestMode>() {
    // The malicious prover: the last head's keys changed in one entry.
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 61);
    let (claim, public) = M::claim(&w.scores, zero(), &mut rng);
    let mut wrong = w.keys_hat.clone();
    wrong[shape.padded_head_dim() * (shape.heads - 1)] += Fr::one();
    let ((proof, _), extra) = prove_qk_step::<M>(&shape, &w, &wrong, &claim, &mut rng);
    assert_eq!(
        verify_qk_step::<M>(&shape, &public, &proof, &extra).err(),
        Some(M::false_claim_error("batched QKᵀ"))
    );
}

fn qk_names_a_changed_selector<M: TestMode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 62);
    let (claim, public) = M::claim(&w.scores, zero(), &mut rng);
    let ((mut proof, _), extra) = prove_qk_step::<M>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    M::tamper_public(&mut proof.product, 0, 0);
    assert_eq!(
        verify_qk_step::<M>(&shape, &public, &proof, &extra).err(),
        Some(M::public_factor_error("batched QKᵀ"))
    );
}

fn qk_rejects_claims_at_moved_points<M: TestMode>() {
    let shape = AttentionShape::new(16, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 64);
    let (claim, public) = M::claim(&w.scores, zero(), &mut rng);
    let ((proof, out), extra) = prove_qk_step::<M>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    // Moved along u_j (which only the claims out depend on) the step passes but hands on a
    // claim on K̂ at the moved point that its value does not satisfy: the final opening of a
    // layer rejects it.
    let mut moved = public.clone();
    moved.point[0] += Fr::one();
    let verified = verify_qk_step::<M>(&shape, &moved, &proof, &extra).unwrap();
    assert!(!M::discharges(&w.keys_hat, &out.keys_hat, &verified.keys_hat));
    // Moved along u_h, the selector check names the step.
    let mut head_moved = public.clone();
    *head_moved.point.last_mut().unwrap() += Fr::one();
    assert_eq!(
        verify_qk_step::<M>(&shape, &head_moved, &proof, &extra).err(),
        Some(AttentionError::CheckFailed { step: "batched QKᵀ" })
    );
    let mut short = public;
    short.point.pop();
    assert_eq!(
        verify_qk_step::<M>(&shape, &short, &proof, &extra).err(),
        Some(AttentionError::CheckFailed { step: "batched QKᵀ" })
    );
}

// ---------------------------------------------------------------- padding

type PaddingRun<M> = (
    (
        padding::PaddingProof<<M as zkmha_attention::mode::ProductMode>::ProductProof>,
        padding::InputClaims<<M as zkmha_attention::mode::ProductMode>::ProverValue>,
    ),
    <M as TestMode>::Extra,
);

fn prove_padding_step<M: TestMode>(
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    claims: &[EvalClaim<M::ProverValue>; 3],
    rng: &mut ChaCha20Rng,
) -> PaddingRun<M> {
    let refs = [&claims[0], &claims[1], &claims[2]];
    M::prove(&[padding::zk_sumcheck_shape(shape)], rng, |p, t| prove_padding::<M>(p, shape, inputs, refs, t))
}

fn verify_padding_step<M: TestMode>(
    shape: &AttentionShape,
    claims: [&EvalClaim<M::Value>; 3],
    proof: &padding::PaddingProof<M::ProductProof>,
    extra: &M::Extra,
) -> Result<padding::InputClaims<M::Value>, AttentionError> {
    M::verify(&[padding::zk_sumcheck_shape(shape)], extra, |v, t| {
        verify_padding::<M>(v, shape, claims, proof, t)
    })
}

#[allow(clippy::type_complexity)]
fn padding_claims<M: TestMode>(
    w: &AttentionWitness,
    offsets: [Fr; 3],
    rng: &mut ChaCha20Rng,
) -> ([EvalClaim<M::ProverValue>; 3], [EvalClaim<M::Value>; 3]) {
    let [(q, q_public), (k, k_public), (v, v_public)] = [
        M::claim(&w.queries_hat, offsets[0], rng),
        M::claim(&w.keys_hat, offsets[1], rng),
        M::claim(&w.values_hat, offsets[2], rng),
    ];
    ([q, k, v], [q_public, k_public, v_public])
}

fn padding_round_trips<M: TestMode>() {
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, MaskKind::Causal, 40 + n as u64);
        let (claims, public) = padding_claims::<M>(&w, [zero(); 3], &mut rng);
        let inputs = [w.queries.as_slice(), w.keys.as_slice(), w.values.as_slice()];
        let ((proof, out), extra) = prove_padding_step::<M>(shape, inputs, &claims, &mut rng);
        let verified =
            verify_padding_step::<M>(shape, [&public[0], &public[1], &public[2]], &proof, &extra).unwrap();
        assert!(M::discharges(&w.queries, &out.queries, &verified.queries), "{shape:?}");
        assert!(M::discharges(&w.keys, &out.keys, &verified.keys), "{shape:?}");
        assert!(M::discharges(&w.values, &out.values, &verified.values), "{shape:?}");
    }
}

fn padding_rejects_swapped_and_false_claims<M: TestMode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let inputs_of = |w: &AttentionWitness| [w.queries.clone(), w.keys.clone(), w.values.clone()];
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 45);
    let [q, k, v] = inputs_of(&w);
    let (claims, public) = padding_claims::<M>(&w, [zero(); 3], &mut rng);
    let ((proof, _), extra) = prove_padding_step::<M>(&shape, [&q, &k, &v], &claims, &mut rng);
    assert!(verify_padding_step::<M>(&shape, [&public[1], &public[0], &public[2]], &proof, &extra).is_err());
    for false_one in 0..3 {
        let mut offsets = [zero(); 3];
        offsets[false_one] = Fr::one();
        let (claims, public) = padding_claims::<M>(&w, offsets, &mut rng);
        let ((proof, _), extra) = prove_padding_step::<M>(&shape, [&q, &k, &v], &claims, &mut rng);
        assert_eq!(
            verify_padding_step::<M>(&shape, [&public[0], &public[1], &public[2]], &proof, &extra).err(),
            Some(M::false_claim_error("padding")),
            "claim {false_one}"
        );
    }
}

fn padding_rejects_a_changed_value_row<M: TestMode>() {
    // The malicious prover: the claim on V̂ is true, but V's padded row (i ≥ s, which V̂ never
    // reads) is filled in: the row factor [i < s] keeps it out, so the claim on V it hands on
    // is false for the real V (padded with zeros), and the layer's opening rejects it.
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 46);
    let (claims, public) = padding_claims::<M>(&w, [zero(); 3], &mut rng);
    let mut filled = w.values.clone();
    let width = 1usize << shape.value_model_vars();
    filled[shape.seq_len * width] += Fr::one();
    let ((proof, out), extra) =
        prove_padding_step::<M>(&shape, [&w.queries, &w.keys, &filled], &claims, &mut rng);
    let verified =
        verify_padding_step::<M>(&shape, [&public[0], &public[1], &public[2]], &proof, &extra).unwrap();
    assert!(!M::discharges(&w.values, &out.values, &verified.values));
    // A changed real row: the claim on V̂ no longer holds.
    let mut changed = w.values.clone();
    changed[0] += Fr::one();
    let ((proof, _), extra) =
        prove_padding_step::<M>(&shape, [&w.queries, &w.keys, &changed], &claims, &mut rng);
    assert_eq!(
        verify_padding_step::<M>(&shape, [&public[0], &public[1], &public[2]], &proof, &extra).err(),
        Some(M::false_claim_error("padding"))
    );
}

// ---------------------------------------------------------------- every step

fn a_changed_round_is_rejected_in_every_step<M: TestMode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 80);
    let (claim, public) = M::claim(&padded_output(&shape, &w), zero(), &mut rng);
    let ((mut proof, _), extra) = prove_unpadding_step::<M>(&shape, &w.output_hat, &claim, &mut rng);
    M::tamper_round(&mut proof.product);
    assert!(verify_unpadding_step::<M>(&shape, &public, &proof, &extra).is_err());
    let (claim, public) = M::claim(&w.output_hat, zero(), &mut rng);
    let ((mut proof, _), extra) =
        prove_attention_values_step::<M>(&shape, MaskKind::Causal, &w, &w.values_hat, &claim, &mut rng);
    M::tamper_round(&mut proof.product);
    assert!(verify_attention_values_step::<M>(&shape, &public, &proof, &extra).is_err());
    let (claim, public) = M::claim(&w.scores, zero(), &mut rng);
    let ((mut proof, _), extra) = prove_qk_step::<M>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    M::tamper_round(&mut proof.product);
    assert!(verify_qk_step::<M>(&shape, &public, &proof, &extra).is_err());
    let (claims, public) = padding_claims::<M>(&w, [zero(); 3], &mut rng);
    let ((mut proof, _), extra) =
        prove_padding_step::<M>(&shape, [&w.queries, &w.keys, &w.values], &claims, &mut rng);
    M::tamper_round(&mut proof.product);
    assert!(verify_padding_step::<M>(&shape, [&public[0], &public[1], &public[2]], &proof, &extra).is_err());
}

// ---------------------------------------------------------------- zero knowledge only

#[test]
fn no_witness_value_appears_in_a_zero_knowledge_step() {
    // Every value the plain proof would send: the claim, the claims out and (through the
    // rounds) the tensors' partial sums; the zero-knowledge proof's field elements avoid the
    // first two, and its rounds are masked (crates/zk/tests cover the rounds).
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 50);
    let (claim, _) = Zk::claim(&w.scores, zero(), &mut rng);
    let ((proof, out), masks) = prove_qk_step::<Zk>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    let secrets =
        [claim.value.opening.value, out.queries_hat.value.opening.value, out.keys_hat.value.opening.value];
    let p = &proof.product;
    let mut sent: Vec<Fr> = p.sumcheck.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()).collect();
    sent.extend(&p.factors.public_values);
    sent.push(p.sumcheck.masked_sum);
    sent.extend(masks.1.responses);
    sent.extend(&p.factors.relations.factor_responses);
    sent.push(p.factors.relations.blinding_response);
    assert!(sent.iter().all(|v| !secrets.contains(v)));
}

#[test]
fn the_plain_proof_sends_the_values_the_zero_knowledge_proof_hides() {
    // The other side of the test above, so that it can fail: the same step in the plain mode
    // sends the claims out's values in the clear.
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, MaskKind::Causal, 50);
    let (claim, _) = Plain::claim(&w.scores, zero(), &mut rng);
    let ((proof, out), ()) = prove_qk_step::<Plain>(&shape, &w, &w.keys_hat, &claim, &mut rng);
    let sent: Vec<Fr> = proof.product.final_evaluations.concat();
    assert!(sent.contains(&out.queries_hat.value) && sent.contains(&out.keys_hat.value));
}

// ---------------------------------------------------------------- grouped-query shared heads

/// `(shape, compact, full)`: `h_kv` key/value heads of width `m` shared by `h` query heads,
/// `2^row_vars` rows, both tables padded as the model block lays them out.
fn shared_tables(
    heads: usize,
    kv: usize,
    m: usize,
    row_vars: usize,
) -> (SharedHeadsShape, Vec<i64>, Vec<i64>) {
    let shape =
        SharedHeadsShape { heads, key_value_heads: kv, head_dim_vars: m.trailing_zeros() as usize, row_vars };
    let rows = 1usize << row_vars;
    let compact: Vec<i64> = (0..rows * kv * m).map(|k| (k as i64 * 37) % 101 - 50).collect();
    let full = expand_heads(&compact, rows, heads, kv, m);
    let pad = |t: &[i64], width: usize, vars: usize| {
        let padded_width = 1usize << (vars - row_vars);
        let mut out = vec![0i64; 1 << vars];
        for (r, row) in t.chunks(width).enumerate() {
            out[r * padded_width..r * padded_width + width].copy_from_slice(row);
        }
        out
    };
    let (full_vars, compact_vars) = shape.num_vars();
    (shape, pad(&compact, kv * m, compact_vars), pad(&full, heads * m, full_vars))
}

fn as_field(table: &[i64]) -> Vec<Fr> {
    table.iter().map(|v| zkmha_field::fr_from_i64(*v)).collect()
}

#[allow(clippy::type_complexity)]
fn prove_shared_step<M: TestMode>(
    shape: &SharedHeadsShape,
    compact: &[i64],
    claim: &EvalClaim<M::ProverValue>,
    rng: &mut ChaCha20Rng,
) -> ((zkmha_attention::grouped_query::SharedHeadsProofOf<M>, EvalClaim<M::ProverValue>), M::Extra) {
    M::prove(&[], rng, |p, t| prove_shared_heads::<M>(p, shape, compact, claim, t))
}

fn shared_heads_round_trip<M: TestMode>() {
    for (n, (heads, kv, m, row_vars)) in
        [(4, 2, 4usize, 3), (6, 2, 2, 2), (9, 3, 4, 1), (3, 1, 2, 0), (8, 8, 2, 1)].into_iter().enumerate()
    {
        let (shape, compact, full) = shared_tables(heads, kv, m, row_vars);
        let mut rng = ChaCha20Rng::seed_from_u64(90 + n as u64);
        let (claim, public) = M::claim(&as_field(&full), zero(), &mut rng);
        let ((proof, out), extra) = prove_shared_step::<M>(&shape, &compact, &claim, &mut rng);
        let verified =
            M::verify(&[], &extra, |v, t| verify_shared_heads::<M>(v, &shape, &proof, &public, t)).unwrap();
        assert!(M::discharges(&as_field(&compact), &out, &verified), "{heads}/{kv}");
    }
}

fn shared_heads_reject_a_false_claim_and_another_table<M: TestMode>() {
    let (shape, compact, full) = shared_tables(6, 2, 2, 2);
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let (claim, public) = M::claim(&as_field(&full), Fr::one(), &mut rng);
    let ((proof, _), extra) = prove_shared_step::<M>(&shape, &compact, &claim, &mut rng);
    assert_eq!(
        M::verify(&[], &extra, |v, t| verify_shared_heads::<M>(v, &shape, &proof, &public, t)).err(),
        Some(M::false_relation_error("shared heads"))
    );
    // The malicious prover: the true claim, values from a compact table with one entry changed.
    let (claim, public) = M::claim(&as_field(&full), zero(), &mut rng);
    let mut other = compact.clone();
    other[0] += 1;
    let ((proof, _), extra) = prove_shared_step::<M>(&shape, &other, &claim, &mut rng);
    assert_eq!(
        M::verify(&[], &extra, |v, t| verify_shared_heads::<M>(v, &shape, &proof, &public, t)).err(),
        Some(M::false_relation_error("shared heads"))
    );
}

#[test]
fn shared_heads_send_no_value_in_zero_knowledge() {
    let (shape, compact, full) = shared_tables(6, 2, 2, 2);
    let mut rng = ChaCha20Rng::seed_from_u64(98);
    let (claim, _) = Zk::claim(&as_field(&full), zero(), &mut rng);
    let ((proof, out), _) = prove_shared_step::<Zk>(&shape, &compact, &claim, &mut rng);
    let (plain_claim, _) = Plain::claim(&as_field(&full), zero(), &mut ChaCha20Rng::seed_from_u64(98));
    let ((plain, _), ()) = prove_shared_step::<Plain>(&shape, &compact, &plain_claim, &mut rng);
    // The plain proof sends the u_c; the zero-knowledge one commitments and responses only.
    let mut sent = proof.relation.factor_responses.clone();
    sent.push(proof.relation.blinding_response);
    assert!(plain.values.iter().all(|u| !sent.contains(u)));
    assert_eq!(proof.values.len(), plain.values.len());
    assert!(!sent.contains(&out.value.opening.value));
}

// ---------------------------------------------------------------- softmax

/// Scores of standard deviation ≈ 3 for inputs in −127..=127.
fn softmax_params(shape: &AttentionShape) -> SoftmaxParams {
    let scale = 3.0 / ((shape.head_dim as f64).sqrt() * 127.0 * 127.0 / 3.0);
    SoftmaxParams::for_score_scale(scale, shape.padded_seq_len()).unwrap()
}

/// A softmax slot to prove: the (possibly tampered) witness and the prover's data from it.
struct SoftmaxCase {
    shape: AttentionShape,
    mask: MaskKind,
    params: SoftmaxParams,
    witness: SoftmaxWitness,
    data: SoftmaxProverData,
}

/// Which multiplicities a cheating prover commits to.
#[derive(Clone, Copy)]
enum Counts {
    /// The honest witness's.
    Honest,
    /// The changed witness's (each lookup whose rows are still in its table passes).
    Recounted,
    /// The changed witness's for the exponent and remainder lookups, the honest row sums'.
    RowSumsHonest,
}

/// The causal softmax of random inputs of `shape`, changed by `tamper` (a cheating prover's
/// witness), with the multiplicities `counts`.
fn softmax_case(
    shape: AttentionShape,
    seed: u64,
    tamper: impl FnOnce(&mut SoftmaxWitness, &AttentionShape, &SoftmaxParams),
    counts: Counts,
) -> SoftmaxCase {
    let (mask, params) = (MaskKind::Causal, softmax_params(&shape));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    let inputs = AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    };
    let w = compute_witness_for_mode(&shape, mask, SoftmaxMode::Exponential(params), &inputs).unwrap();
    let mut witness = w.softmax.unwrap();
    let honest = witness.clone();
    tamper(&mut witness, &shape, &params);
    let multiplicities = match counts {
        Counts::Honest => softmax_multiplicities(&params, &honest).unwrap(),
        Counts::Recounted => softmax_multiplicities(&params, &witness).unwrap(),
        Counts::RowSumsHonest => {
            let mut counted = witness.clone();
            counted.row_excess = honest.row_excess.clone();
            softmax_multiplicities(&params, &counted).unwrap()
        }
    };
    let data = SoftmaxProverData::new(&shape, witness.clone(), multiplicities, &params);
    SoftmaxCase { shape, mask, params, witness, data }
}

/// The slot's default case: six tokens, two heads.
fn softmax_default(tamper: impl FnOnce(&mut SoftmaxWitness, &AttentionShape, &SoftmaxParams)) -> SoftmaxCase {
    softmax_case(AttentionShape::new(6, 2, 4, 4).unwrap(), 8, tamper, Counts::Honest)
}

/// The tensor index of (head, i, j).
fn tensor_index(shape: &AttentionShape, head: usize, i: usize, j: usize) -> usize {
    let sp = shape.padded_seq_len();
    (head * sp + i) * sp + j
}

type SoftmaxRun<M> = (
    SlotProverOutput<M>,
    EvalClaim<<M as zkmha_attention::mode::ProductMode>::Value>,
    <M as TestMode>::Extra,
    Option<zkmha_lookup::LookupProofOf<M>>,
);

/// Proves the slot on a claim on the case's `A` (plus `offset`).
fn prove_softmax_step<M: TestMode>(case: &SoftmaxCase, offset: Fr, rng: &mut ChaCha20Rng) -> SoftmaxRun<M> {
    let (claim, public) = M::claim(&as_field(&case.witness.attention), offset, rng);
    let schedule = slot_alone_zk_schedule(&case.shape, &case.params).unwrap();
    let mode = SoftmaxMode::Exponential(case.params);
    let ((lookups, out), extra) = M::prove(&schedule, rng, |p, t| {
        prove_slot_alone::<M>(p, mode, &case.shape, case.mask, &claim, Some(&case.data), t)
    });
    (out, public, extra, lookups)
}

fn verify_softmax_step<M: TestMode>(
    case: &SoftmaxCase,
    public: &EvalClaim<M::Value>,
    (lookups, proof): (Option<&zkmha_lookup::LookupProofOf<M>>, &ExponentialSoftmaxProofOf<M>),
    extra: &M::Extra,
) -> Result<SlotClaims<M::Value>, AttentionError> {
    let schedule = slot_alone_zk_schedule(&case.shape, &case.params).unwrap();
    let mode = SoftmaxMode::Exponential(case.params);
    M::verify(&schedule, extra, |v, t| {
        verify_slot_alone::<M>(v, mode, &case.shape, case.mask, public, lookups, Some(proof), t)
    })
}

/// Proves and verifies a case honestly otherwise: the verifier's answer.
fn softmax_verdict<M: TestMode>(case: &SoftmaxCase) -> Result<SlotClaims<M::Value>, AttentionError> {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let (out, public, extra, lookups) = prove_softmax_step::<M>(case, zero(), &mut rng);
    verify_softmax_step::<M>(
        case,
        &public,
        (lookups.as_ref(), out.proof.exponential.as_ref().unwrap()),
        &extra,
    )
}

fn softmax_round_trips<M: TestMode>() {
    // Powers of two and not, one token, padded heads.
    for (k, (s, h)) in [(6, 2), (5, 3), (1, 1), (9, 1), (3, 4)].into_iter().enumerate() {
        let case = softmax_case(
            AttentionShape::new(s, h, 4, 4).unwrap(),
            300 + k as u64,
            |_, _, _| {},
            Counts::Honest,
        );
        let mut rng = ChaCha20Rng::seed_from_u64(k as u64);
        let (out, public, extra, lookups) = prove_softmax_step::<M>(&case, zero(), &mut rng);
        let (output, claims) = verify_softmax_step::<M>(
            &case,
            &public,
            (lookups.as_ref(), out.proof.exponential.as_ref().unwrap()),
            &extra,
        )
        .unwrap();
        let (SlotOutput::Scores(prover), SlotOutput::Scores(verifier)) = (&out.output, &output) else {
            panic!("the proven softmax leaves a claim on the scores");
        };
        assert!(M::discharges(&as_field(&case.witness.scores), prover, verifier), "s = {s}, h = {h}");
        // Every claim on a committed column is the prover's and true of the column.
        let columns = softmax_column_tables(&case.shape, &case.params, &case.data).unwrap();
        assert_eq!(out.opening_claims.len(), claims.len());
        assert_eq!(claims.len(), 12);
        for (p, v) in out.opening_claims.iter().zip(&claims) {
            assert_eq!(p.polynomial, v.polynomial);
            let PolynomialTable::Integers { values, .. } = &columns[v.polynomial] else {
                panic!("integer columns");
            };
            let prover = EvalClaim { point: p.point.clone(), value: p.value.clone() };
            let verifier = EvalClaim { point: v.point.clone(), value: v.value.clone() };
            assert!(
                M::discharges(&as_field(values), &prover, &verifier),
                "s = {s}, h = {h}, {}",
                v.polynomial
            );
        }
    }
}

fn softmax_rejects_a_probability_that_is_not_a_table_value<M: TestMode>() {
    let case = softmax_default(|w, shape, _| {
        let t = tensor_index(shape, 1, 4, 2);
        w.exponential[t] += 1;
        w.attention[t] += 1;
    });
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::lookup_error()));
}

fn softmax_rejects_a_probability_from_another_exponent<M: TestMode>() {
    // A table row (lo + 1, T(lo + 1)): the lookup passes, the exponent relation does not.
    let case = softmax_case(
        AttentionShape::new(6, 2, 4, 4).unwrap(),
        8,
        |w, shape, params| {
            let t = tensor_index(shape, 0, 5, 1);
            w.low[t] += 1;
            w.exponential[t] = params.exp_table()[w.low[t] as usize];
            w.attention[t] = w.exponential[t] * w.flag[t];
        },
        Counts::Recounted,
    );
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::false_claim_error("softmax")));
}

fn softmax_rejects_a_row_whose_sum_is_out_of_the_bound<M: TestMode>() {
    // Every entry of one row consistent with a shift 40 units too high (probabilities 15 %
    // too small), the exponent and remainder lookups' multiplicities recounted: each entry
    // passes, the row-sum range check alone does not.
    let shift_row = |w: &mut SoftmaxWitness, shape: &AttentionShape, params: &SoftmaxParams| {
        let table = params.exp_table();
        let (head, i) = (1, 3);
        let row = head * shape.padded_seq_len() + i;
        w.shift[row] += 40;
        let mut total = 0;
        for j in 0..=i {
            let t = tensor_index(shape, head, i, j);
            let x = w.low[t] + (w.high[t] << DIGIT_BITS) + 40;
            w.low[t] = x & 0xFFFF;
            w.high[t] = x >> DIGIT_BITS;
            w.exponential[t] = table[w.low[t] as usize];
            w.flag[t] = i64::from(w.high[t] == 0);
            w.attention[t] = w.exponential[t] * w.flag[t];
            total += w.attention[t];
        }
        w.row_excess[row] = total - params.one() + params.tolerance();
        assert!(w.row_excess[row] < 0, "the test needs a row sum below the bound");
    };
    let shape = AttentionShape::new(6, 2, 4, 4).unwrap();
    let case = softmax_case(shape, 8, shift_row, Counts::RowSumsHonest);
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::lookup_error()));
    // Control: the honest slot, its multiplicities counted the same way, is accepted.
    let case = softmax_case(shape, 8, |_, _, _| {}, Counts::RowSumsHonest);
    assert!(softmax_verdict::<M>(&case).is_ok());
}

fn softmax_rejects_a_masked_entry_made_non_zero<M: TestMode>() {
    // (i = 1, j = 4) is masked (causal): the claimed A carries a probability there.
    let case = softmax_default(|w, shape, _| w.attention[tensor_index(shape, 0, 1, 4)] = 77);
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::false_claim_error("softmax")));
}

fn softmax_rejects_a_probability_in_a_padded_head<M: TestMode>() {
    // Three heads padded to four: head 3 exists only as padding, fully masked.
    let shape = AttentionShape::new(6, 3, 4, 4).unwrap();
    let honest = softmax_case(shape, 11, |_, _, _| {}, Counts::Honest);
    let padded = tensor_index(&shape, 3, 0, 0)..tensor_index(&shape, 4, 0, 0);
    let w = &honest.witness;
    for column in [&w.low, &w.high, &w.attention, &w.remainder] {
        assert!(column[padded.clone()].iter().all(|&v| v == 0), "padded head not zero");
    }
    assert!(softmax_verdict::<M>(&honest).is_ok());
    let case = softmax_case(
        shape,
        11,
        |w, shape, _| w.attention[tensor_index(shape, 3, 2, 1)] = 500,
        Counts::Honest,
    );
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::false_claim_error("softmax")));
}

fn softmax_rejects_a_wrong_shift<M: TestMode>() {
    let case = softmax_default(|w, shape, _| w.shift[shape.padded_seq_len() + 2] += 1);
    assert_eq!(softmax_verdict::<M>(&case).err(), Some(M::false_claim_error("softmax")));
}

fn softmax_rejects_a_false_claim<M: TestMode>() {
    let case = softmax_default(|_, _, _| {});
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (out, public, extra, lookups) = prove_softmax_step::<M>(&case, Fr::one(), &mut rng);
    let verdict = verify_softmax_step::<M>(
        &case,
        &public,
        (lookups.as_ref(), out.proof.exponential.as_ref().unwrap()),
        &extra,
    );
    assert_eq!(verdict.err(), Some(M::false_claim_error("softmax")));
}

fn softmax_rejects_sent_values_that_break_its_relations<M: TestMode>() {
    let case = softmax_default(|_, _, _| {});
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let (out, public, extra, lookups) = prove_softmax_step::<M>(&case, zero(), &mut rng);
    let honest = out.proof.exponential.unwrap();
    let verdict = |change: &dyn Fn(&mut ExponentialSoftmaxProofOf<M>)| {
        let mut proof = honest.clone();
        change(&mut proof);
        verify_softmax_step::<M>(&case, &public, (lookups.as_ref(), &proof), &extra).err()
    };
    assert_eq!(verdict(&|_| {}), None);
    // Each value at t* enters one relation: the last message before them (plain: nothing
    // follows them; zero knowledge: the relations proof).
    for k in 0..6 {
        assert_eq!(
            verdict(&|p| M::tamper_sent(&mut p.final_values[k])),
            Some(M::false_relation_error("softmax relations")),
            "final value {k}"
        );
    }
    // A block value at r changes every later challenge.
    for k in 0..4 {
        assert!(verdict(&|p| M::tamper_sent(&mut p.lookup_values[k])).is_some(), "lookup value {k}");
    }
    assert_eq!(
        verdict(&|p| {
            p.final_values.pop();
        }),
        Some(AttentionError::CheckFailed { step: "softmax final values" })
    );
    assert_eq!(
        verdict(&|p| {
            p.lookup_values.pop();
        }),
        Some(AttentionError::CheckFailed { step: "softmax lookup values" })
    );
}

fn softmax_rejects_a_changed_round_and_public_factor<M: TestMode>() {
    let case = softmax_default(|_, _, _| {});
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let (out, public, extra, lookups) = prove_softmax_step::<M>(&case, zero(), &mut rng);
    let honest = out.proof.exponential.unwrap();
    let mut proof = honest.clone();
    M::tamper_round(&mut proof.sumcheck);
    assert!(verify_softmax_step::<M>(&case, &public, (lookups.as_ref(), &proof), &extra).is_err());
    // The zeroifier z, I1's second factor and its second public one.
    let mut proof = honest.clone();
    M::tamper_public(&mut proof.sumcheck, 1, 1);
    assert_eq!(
        verify_softmax_step::<M>(&case, &public, (lookups.as_ref(), &proof), &extra).err(),
        Some(M::public_factor_error("softmax"))
    );
    // Both public factors of I1 changed, their product kept: only the closed forms catch it.
    let mut proof = honest;
    let two = Fr::from(2u64);
    M::scale_public(&mut proof.sumcheck, 0, 0, two);
    M::scale_public(&mut proof.sumcheck, 1, 1, two.inverse().unwrap());
    assert_eq!(
        verify_softmax_step::<M>(&case, &public, (lookups.as_ref(), &proof), &extra).err(),
        Some(AttentionError::CheckFailed { step: "softmax" })
    );
}
