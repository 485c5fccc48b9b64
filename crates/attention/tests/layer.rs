//! The attention layer proof: a plain reference implementation, round trips over many shapes,
//! and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::structured::mask_value;
use zkmha_attention::*;
use zkmha_field::{Fr, One, Zero, fr_from_i64};
use zkmha_sumcheck::SumcheckError;

fn random_inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-1000i64..1000)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

/// The relation written straightforwardly, per head, without padding, in field arithmetic:
/// O[i][head·m_v + c] = Σ_j M[i][j] · V[j][head·m_v + c], M = masked Q_h K_hᵀ.
fn reference_output(shape: &AttentionShape, mask: MaskKind, inputs: &AttentionInputs) -> Vec<Fr> {
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let q = |i: usize, head: usize, c: usize| fr_from_i64(inputs.queries[i * h * m + head * m + c]);
    let k = |j: usize, head: usize, c: usize| fr_from_i64(inputs.keys[j * h * m + head * m + c]);
    let v = |j: usize, head: usize, c: usize| fr_from_i64(inputs.values[j * h * mv + head * mv + c]);
    let mut out = vec![Fr::zero(); s * h * mv];
    for head in 0..h {
        for i in 0..s {
            let row: Vec<Fr> = (0..s)
                .map(|j| {
                    let visible = match mask {
                        MaskKind::Causal => j <= i,
                        MaskKind::None => true,
                        MaskKind::Sliding { window } => j <= i && i - j < window.get() as usize,
                    };
                    if visible { (0..m).map(|c| q(i, head, c) * k(j, head, c)).sum() } else { mask_value() }
                })
                .collect();
            for c in 0..mv {
                out[i * h * mv + head * mv + c] = (0..s).map(|j| row[j] * v(j, head, c)).sum();
            }
        }
    }
    out
}

/// A named tampering of a proof.
type Tamper = (&'static str, fn(&mut AttentionLayerProof));

fn shapes() -> Vec<AttentionShape> {
    let mut out = Vec::new();
    for (h, m, mv) in [(1usize, 2usize, 3usize), (3, 4, 2), (8, 2, 1), (12, 3, 5)] {
        for s in [1usize, 7, 16, 33] {
            out.push(AttentionShape::new(s, h, m, mv).unwrap());
        }
    }
    out
}

/// Every mask, windows of 1, 3 and one longer than some sequences included.
fn masks() -> Vec<MaskKind> {
    let windows = [1usize, 3, 20].into_iter().filter_map(MaskKind::sliding);
    [MaskKind::Causal, MaskKind::None].into_iter().chain(windows).collect()
}

#[test]
fn witness_matches_plain_reference() {
    for (n, shape) in shapes().into_iter().enumerate() {
        for mask in masks() {
            let inputs = random_inputs(&shape, n as u64);
            let witness = compute_witness(&shape, mask, &inputs).unwrap();
            assert_eq!(witness.output, reference_output(&shape, mask, &inputs), "{shape:?} {mask}");
        }
    }
}

#[test]
fn layer_round_trips_on_many_shapes() {
    for (n, shape) in shapes().into_iter().enumerate() {
        for mask in masks() {
            let inputs = random_inputs(&shape, 100 + n as u64);
            let (statement, proof, _) = prove_layer(&shape, mask, SoftmaxMode::Identity, &inputs).unwrap();
            assert_eq!(statement.output, reference_output(&shape, mask, &inputs));
            verify_layer(&statement, &proof).unwrap_or_else(|e| panic!("{shape:?} {mask}: {e}"));
        }
    }
}

fn honest(shape: AttentionShape, mask: MaskKind) -> (AttentionStatement, AttentionLayerProof) {
    let inputs = random_inputs(&shape, 7);
    let (statement, proof, _) = prove_layer(&shape, mask, SoftmaxMode::Identity, &inputs).unwrap();
    (statement, proof)
}

fn default_case() -> (AttentionStatement, AttentionLayerProof) {
    honest(AttentionShape::new(7, 3, 4, 2).unwrap(), MaskKind::Causal)
}

fn final_mismatch(step: &'static str) -> AttentionError {
    AttentionError::Sumcheck { step, source: SumcheckError::FinalEvaluationMismatch }
}

#[test]
fn changed_output_entry_is_rejected() {
    let (mut statement, proof) = default_case();
    statement.output[5] += Fr::one();
    assert_eq!(verify_layer(&statement, &proof).map(|_| ()), Err(final_mismatch("unpadding")));
}

#[test]
fn changed_public_input_is_rejected() {
    for tensor in 0..3 {
        let (mut statement, proof) = default_case();
        match tensor {
            0 => statement.inputs.queries[3] += 1,
            1 => statement.inputs.keys[3] += 1,
            _ => statement.inputs.values[3] += 1,
        }
        // The statement is absorbed first, so every challenge changes.
        assert!(verify_layer(&statement, &proof).is_err(), "tensor {tensor}");
    }
}

#[test]
fn changed_mask_kind_is_rejected() {
    let (mut statement, proof) = default_case();
    statement.mask = MaskKind::None;
    assert!(verify_layer(&statement, &proof).is_err());
}

#[test]
fn changed_window_is_rejected() {
    // A window of 3 proven, then stated as 2, 4, causal or no window: the window is absorbed
    // with the statement, and the output of one window is not the output of another.
    let shape = AttentionShape::new(7, 3, 4, 2).unwrap();
    let (statement, proof) = honest(shape, MaskKind::sliding(3).unwrap());
    verify_layer(&statement, &proof).unwrap();
    for other in
        [MaskKind::sliding(2).unwrap(), MaskKind::sliding(4).unwrap(), MaskKind::Causal, MaskKind::None]
    {
        let mut changed = statement.clone();
        changed.mask = other;
        assert!(verify_layer(&changed, &proof).is_err(), "{other}");
    }
}

#[test]
fn output_of_a_wider_window_is_rejected_for_a_narrower_one() {
    // A malicious prover attends one token further back than the stated window of 3: it
    // computes the witness and proves with a window of 4, then states a window of 3. The
    // transcript is recomputed from the statement, so the proof is re-made for it here too:
    // the masking step's closed form is the stated window's, and the proof fails there.
    let shape = AttentionShape::new(7, 3, 4, 2).unwrap();
    let inputs = random_inputs(&shape, 21);
    let (narrow, wide) = (MaskKind::sliding(3).unwrap(), MaskKind::sliding(4).unwrap());
    let (honest_statement, _, _) = prove_layer(&shape, narrow, SoftmaxMode::Identity, &inputs).unwrap();
    let (mut statement, proof, _) = prove_layer(&shape, wide, SoftmaxMode::Identity, &inputs).unwrap();
    assert_ne!(statement.output, honest_statement.output);
    statement.mask = narrow;
    assert!(verify_layer(&statement, &proof).is_err());
}

#[test]
fn output_of_a_wrong_value_matrix_is_rejected() {
    // The prover computes O from V with one entry changed, but states the real V.
    let shape = AttentionShape::new(7, 3, 4, 2).unwrap();
    let inputs = random_inputs(&shape, 9);
    let mut wrong = inputs.clone();
    wrong.values[4] += 1;
    let (mut statement, proof, _) =
        prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &wrong).unwrap();
    statement.inputs = inputs;
    assert!(verify_layer(&statement, &proof).is_err());
}

#[test]
fn output_of_one_wrong_head_is_rejected() {
    let shape = AttentionShape::new(16, 3, 4, 2).unwrap();
    let inputs = random_inputs(&shape, 10);
    let (mut statement, proof, _) =
        prove_layer(&shape, MaskKind::None, SoftmaxMode::Identity, &inputs).unwrap();
    // Replace head 1 of every row with the other mask's values.
    let other = compute_witness(&shape, MaskKind::Causal, &inputs).unwrap().output;
    for i in 0..shape.seq_len {
        for c in 0..shape.value_head_dim {
            let x = i * shape.value_model_width() + shape.value_head_dim + c;
            statement.output[x] = other[x];
        }
    }
    assert_eq!(verify_layer(&statement, &proof).map(|_| ()), Err(final_mismatch("unpadding")));
}

#[test]
fn tampered_round_of_each_sub_protocol_is_rejected() {
    let cases: [Tamper; 5] = [
        ("unpadding", |p| p.chain.unpadding.product.sumcheck.rounds[1].evaluations[0] += Fr::one()),
        ("softmax·V", |p| p.chain.attention_values.product.sumcheck.rounds[0].evaluations[1] += Fr::one()),
        ("masking", |p| {
            p.chain.masking.as_mut().unwrap().product.sumcheck.rounds[2].evaluations[0] += Fr::one()
        }),
        ("batched QKᵀ", |p| p.chain.qk.product.sumcheck.rounds[0].evaluations[2] += Fr::one()),
        ("padding", |p| p.chain.padding.product.sumcheck.rounds[1].evaluations[0] += Fr::one()),
    ];
    for (step, tamper) in cases {
        let (statement, mut proof) = default_case();
        tamper(&mut proof);
        assert_eq!(verify_layer(&statement, &proof).map(|_| ()), Err(final_mismatch(step)), "{step}");
    }
}

#[test]
fn tampered_claims_passed_between_steps_are_rejected() {
    // A final MLE value handed on as the next step's claim.
    let cases: [Tamper; 4] = [
        ("unpadding", |p| p.chain.unpadding.product.final_evaluations[0][0] += Fr::one()),
        ("softmax·V", |p| p.chain.attention_values.product.final_evaluations[0][1] += Fr::one()),
        ("masking", |p| p.chain.masking.as_mut().unwrap().product.final_evaluations[0][2] += Fr::one()),
        ("batched QKᵀ", |p| p.chain.qk.product.final_evaluations[0][1] += Fr::one()),
    ];
    for (step, tamper) in cases {
        let (statement, mut proof) = default_case();
        tamper(&mut proof);
        assert_eq!(verify_layer(&statement, &proof).map(|_| ()), Err(final_mismatch(step)), "{step}");
    }
    // A consistent lie: scale the claim handed on and its partner so the product still
    // matches; the next step (or the input discharge) catches it.
    let (statement, mut proof) = default_case();
    let two = Fr::from(2u64);
    let finals = &mut proof.chain.qk.product.final_evaluations[0];
    finals[1] *= two;
    finals[2] *= zkmha_field::Field::inverse(&two).unwrap();
    assert!(verify_layer(&statement, &proof).is_err());
}

#[test]
fn tampered_structured_values_are_rejected() {
    // The prover's value for a matrix the verifier recomputes in closed form.
    let cases: [Tamper; 3] = [
        ("unpadding", |p| {
            let f = &mut p.chain.unpadding.product.final_evaluations[0];
            let inv = zkmha_field::Field::inverse(&Fr::from(3u64)).unwrap();
            f[1] *= Fr::from(3u64);
            f[0] *= inv;
        }),
        ("masking", |p| {
            let f = &mut p.chain.masking.as_mut().unwrap().product.final_evaluations[0];
            let inv = zkmha_field::Field::inverse(&Fr::from(3u64)).unwrap();
            f[1] *= Fr::from(3u64);
            f[2] *= inv;
        }),
        ("padding", |p| {
            let f = &mut p.chain.padding.product.final_evaluations[0];
            let inv = zkmha_field::Field::inverse(&Fr::from(3u64)).unwrap();
            f[1] *= Fr::from(3u64);
            f[0] *= inv;
        }),
    ];
    for (step, tamper) in cases {
        let (statement, mut proof) = default_case();
        tamper(&mut proof);
        assert_eq!(
            verify_layer(&statement, &proof).map(|_| ()),
            Err(AttentionError::CheckFailed { step }),
            "{step}"
        );
    }
}

#[test]
fn wrong_version_and_malformed_bytes_are_rejected() {
    let (statement, mut proof) = default_case();
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    let back = AttentionLayerProof::deserialize_compressed(&bytes[..]).unwrap();
    assert_eq!(back, proof);
    assert!(verify_layer(&statement, &back).is_ok());
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert!(AttentionLayerProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 3] ^= 0x40;
    if let Ok(p) = AttentionLayerProof::deserialize_compressed(&flipped[..]) {
        assert!(verify_layer(&statement, &p).is_err());
    }
    proof.version = 99;
    assert_eq!(verify_layer(&statement, &proof).map(|_| ()), Err(AttentionError::UnsupportedVersion(99)));
}

#[test]
fn malformed_proof_shapes_give_errors_not_panics() {
    let (statement, proof) = default_case();
    let mut short = proof.clone();
    short.chain.masking.as_mut().unwrap().product.sumcheck.rounds.pop();
    assert!(matches!(
        verify_layer(&statement, &short),
        Err(AttentionError::Sumcheck { step: "masking", .. })
    ));
    let mut no_finals = proof.clone();
    no_finals.chain.qk.product.final_evaluations.clear();
    assert!(verify_layer(&statement, &no_finals).is_err());
    let mut few_padding = proof.clone();
    few_padding.chain.padding.product.final_evaluations.pop();
    assert_eq!(
        verify_layer(&statement, &few_padding).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "padding" })
    );
    // A linear-attention proof that carries softmax pieces, or lacks its masking step.
    let mut slot = proof.clone();
    slot.softmax_commitments = Some(exponential_commitments());
    assert_eq!(
        verify_layer(&statement, &slot).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "the proof's softmax mode" })
    );
    let mut no_masking = proof;
    no_masking.chain.masking = None;
    assert_eq!(
        verify_layer(&statement, &no_masking).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "the proof's softmax mode" })
    );
}

#[test]
fn bad_statements_are_rejected_with_clear_errors() {
    let (mut statement, proof) = default_case();
    statement.output.pop();
    assert!(matches!(
        verify_layer(&statement, &proof),
        Err(AttentionError::WrongTensorSize { tensor: "O", .. })
    ));
    let shape = AttentionShape::new(4, 2, 3, 3).unwrap();
    let mut inputs = random_inputs(&shape, 1);
    inputs.keys.push(0);
    assert!(matches!(
        prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs),
        Err(AttentionError::WrongTensorSize { tensor: "K", .. })
    ));
    let mut inputs = random_inputs(&shape, 1);
    inputs.values[2] = 1 << 40;
    assert!(matches!(
        prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs),
        Err(AttentionError::ValueOutOfRange { tensor: "V", index: 2, .. })
    ));
}

#[test]
fn structured_masking_prover_matches_the_dense_prover() {
    use zkmha_attention::masking::{prove_masking, prove_masking_dense};
    use zkmha_attention::mode::Plain;
    use zkmha_sumcheck::EvalClaim;
    use zkmha_transcript::Transcript;
    for (s, h) in [(1usize, 1usize), (7, 3), (16, 1), (5, 8), (33, 2)] {
        let shape = AttentionShape::new(s, h, 2, 2).unwrap();
        for mask in [MaskKind::Causal, MaskKind::None] {
            let witness = compute_witness(&shape, mask, &random_inputs(&shape, 3)).unwrap();
            let n = 2 * shape.seq_vars() + shape.head_vars();
            let mut rng = StdRng::seed_from_u64(5);
            let point: Vec<Fr> = (0..n).map(|_| Fr::from(rng.gen_range(0u64..1 << 60))).collect();
            let claim = EvalClaim { point, value: Fr::from(42u64) };
            let structured = prove_masking::<Plain>(
                &mut (),
                &shape,
                mask,
                witness.scores.clone(),
                &claim,
                &mut Transcript::new(b"t"),
            )
            .unwrap();
            let dense = prove_masking_dense::<Plain>(
                &mut (),
                &shape,
                mask,
                &witness.scores,
                &claim,
                &mut Transcript::new(b"t"),
            )
            .unwrap();
            assert_eq!(structured, dense, "s={s} h={h} {mask}");
        }
    }
}

/// The softmax commitments of some small exponential-mode proof.
fn exponential_commitments() -> zkmha_attention::softmax::SoftmaxCommitments {
    let shape = AttentionShape::new(4, 2, 4, 4).unwrap();
    let params = SoftmaxParams::for_score_scale(0.05, 4).unwrap();
    let (_, proof, _) =
        prove_layer(&shape, MaskKind::Causal, SoftmaxMode::Exponential(params), &random_inputs(&shape, 9))
            .unwrap();
    proof.softmax_commitments.unwrap()
}
