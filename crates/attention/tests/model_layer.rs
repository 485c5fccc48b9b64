//! The model layer: Q, K, V projected from X with committed weights, attention, the output
//! projection and the residual, in one proof.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_attention::block::{BlockPolynomial, proof_polynomials, statement_polynomials};
use zkmha_attention::model_layer::*;
use zkmha_attention::*;
use zkmha_field::{Fr, One};

use crate::common::{base, grouped, hidden_state, input, modes, pre_norm, reference, rotary, small, weights};

struct Run {
    params: zkmha_pcs::HyraxParams,
    statement: ModelStatement,
    proof: ModelLayerProof,
}

/// Where the commitment to `key` sits in the proof's commitments.
fn at(shape: &ModelShape, key: BlockPolynomial) -> usize {
    proof_polynomials(shape).iter().position(|k| *k == key).unwrap()
}

fn run(shape: &ModelShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Run {
    let params = model_hyrax_params(shape, softmax);
    let w = weights(shape, seed);
    let model = commit_model(&params, shape, &w).unwrap();
    let h = hidden_state(shape, seed);
    let (statement, proof, _) =
        prove_model_layer(&params, shape, mask, softmax, &input(shape, seed + 100), h.as_deref(), &w, &model)
            .unwrap();
    Run { params, statement, proof }
}

#[test]
fn round_trips_and_the_output_is_the_plain_block() {
    for (s, h, m, mv, d) in [(5, 2, 4, 4, 12), (8, 3, 4, 2, 7), (3, 1, 2, 3, 16)] {
        for (softmax, shape) in modes(&base(s, h, m, mv, d)) {
            for mask in [MaskKind::Causal, MaskKind::None] {
                let r = run(&shape, mask, softmax, 1);
                verify_model_layer(&r.params, &r.statement, &r.proof)
                    .unwrap_or_else(|e| panic!("{shape:?} {mask} {softmax:?}: {e}"));
                assert_eq!(
                    r.statement.output.public().unwrap(),
                    reference(&shape, mask, softmax, 1),
                    "{shape:?} {mask}"
                );
                // Through bytes.
                let mut bytes = Vec::new();
                (&r.statement, &r.proof).serialize_compressed(&mut bytes).unwrap();
                let (statement, proof) =
                    <(ModelStatement, ModelLayerProof)>::deserialize_compressed(bytes.as_slice()).unwrap();
                assert!(verify_model_layer(&r.params, &statement, &proof).is_ok());
            }
        }
    }
}

#[test]
fn rejects_a_changed_output() {
    for (softmax, shape) in modes(&small()) {
        let r = run(&shape, MaskKind::Causal, softmax, 2);
        let mut wrong = r.statement.clone();
        wrong.output.public_mut().unwrap()[3] += 1;
        assert!(verify_model_layer(&r.params, &wrong, &r.proof).is_err());
    }
}

#[test]
fn rejects_another_input_or_another_model() {
    for (softmax, shape) in modes(&small()) {
        let r = run(&shape, MaskKind::Causal, softmax, 3);
        let other = run(&shape, MaskKind::Causal, softmax, 4);
        // X committed to other values. The commitments are part of the statement, so every
        // challenge changes: the projections' lookups are the first check to fail.
        let mut swapped = r.statement.clone();
        swapped.input = other.statement.input.clone();
        assert!(matches!(verify_model_layer(&r.params, &swapped, &r.proof), Err(AttentionError::Lookup(_))));
        // The same proof against the commitment to other weights, one table at a time.
        for t in 0..8 {
            let mut model = r.statement.clone();
            model.model.tables[t] = other.statement.model.tables[t].clone();
            assert!(
                matches!(verify_model_layer(&r.params, &model, &r.proof), Err(AttentionError::Lookup(_))),
                "weight table {t}"
            );
        }
        // A prover that commits to other Q, K, V, O or Y than the block gives.
        use BlockPolynomial::{AttentionInput, AttentionOutput, Projected};
        for key in [AttentionInput(0), AttentionInput(1), AttentionInput(2), AttentionOutput, Projected] {
            let mut proof = r.proof.clone();
            let t = at(&shape, key);
            proof.commitments[t] = other.proof.commitments[t].clone();
            assert!(verify_model_layer(&r.params, &r.statement, &proof).is_err(), "{key:?}");
        }
    }
}

#[test]
fn rejects_tampered_parts_and_missing_parts() {
    let [(softmax, shape), _] = modes(&small());
    let r = run(&shape, MaskKind::Causal, softmax, 5);
    // K's sent output value: its own output range's column claim no longer matches it (the
    // output projection's, which has no range check, fails the batched sum-check).
    let mut bad = r.proof.clone();
    bad.projections.projections[1].values[0] += Fr::one();
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "projection output range" })
    );
    let mut bad = r.proof.clone();
    bad.projections.projections[3].values[0] += Fr::one();
    assert!(matches!(
        verify_model_layer(&r.params, &r.statement, &bad),
        Err(AttentionError::Sumcheck { .. })
    ));
    let mut bad = r.proof.clone();
    bad.projections.sumcheck.final_evaluations[3][1] += Fr::one();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    let mut bad = r.proof.clone();
    bad.projections.projections.pop();
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    let (low_q, low_o) = (
        at(&shape, BlockPolynomial::LowMultiplicities(0)),
        at(&shape, BlockPolynomial::LowMultiplicities(3)),
    );
    bad.commitments.swap(low_q, low_o);
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // A wrong residual input value.
    let mut bad = r.proof.clone();
    bad.residual_input += Fr::one();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // The output projection's remainder (k_o = 20) has two digits: its high digits and their
    // multiplicities are committed; swapped or missing commitments are rejected.
    let keys = proof_polynomials(&shape);
    let high = [BlockPolynomial::HighDigits(3), BlockPolynomial::HighMultiplicities(3)];
    assert_eq!(keys.iter().filter(|k| matches!(k, BlockPolynomial::HighDigits(_))).count(), 1);
    let (digits, multiplicities) = (at(&shape, high[0]), at(&shape, high[1]));
    let mut bad = r.proof.clone();
    bad.commitments.swap(digits, multiplicities);
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    bad.commitments.remove(multiplicities);
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    bad.projections.projections[3].high_digit_value =
        bad.projections.projections[3].high_digit_value.map(|h| h + Fr::one());
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // The final opening answers the softmax's 8 columns, Q, K, V, X, the eight weight tables,
    // the four multiplicity columns, O, Y, D_hi, m_hi and the three output ranges'
    // multiplicities: a wrong evaluation of any of them fails it.
    let opened = statement_polynomials(&shape, OutputKind::Public).len() + keys.len();
    assert_eq!((r.proof.openings.evaluations.len(), opened), (31, 31));
    for k in 0..31 {
        let mut bad = r.proof.clone();
        bad.openings.evaluations[k] += Fr::one();
        assert_eq!(
            verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "openings" }),
            "polynomial {k}"
        );
    }
    // The attention output's claim value is sent (O is committed): a wrong one fails.
    let mut bad = r.proof.clone();
    bad.output_value += Fr::one();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // No opening at all.
    let mut bad = r.proof;
    bad.openings.evaluations.clear();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
}

#[test]
fn bad_inputs_get_one_typed_error() {
    let [(softmax, shape), _] = modes(&small());
    let params = model_hyrax_params(&shape, softmax);
    // Linear attention is refused with one sentence.
    assert!(matches!(
        prove_model_layer(
            &params,
            &shape,
            MaskKind::Causal,
            SoftmaxMode::Identity,
            &input(&shape, 6),
            None,
            &weights(&shape, 6),
            &commit_model(&params, &shape, &weights(&shape, 6)).unwrap(),
        ),
        Err(AttentionError::InvalidShape(_))
    ));
    let w = weights(&shape, 6);
    let model = commit_model(&params, &shape, &w).unwrap();
    let mut x = input(&shape, 6);
    x.pop();
    assert!(matches!(
        prove_model_layer(&params, &shape, MaskKind::Causal, softmax, &x, None, &w, &model),
        Err(AttentionError::WrongTensorSize { tensor: "X", .. })
    ));
    let mut short = w.clone();
    short.output_bias.pop();
    assert!(matches!(
        commit_model(&params, &shape, &short),
        Err(AttentionError::WrongTensorSize { tensor: "b_o", .. })
    ));
    // A model commitment made for another shape is rejected before any proving.
    let other_shape = ModelShape { model_width: 20, ..shape };
    let other_params = model_hyrax_params(&other_shape, softmax);
    let other = commit_model(&other_params, &other_shape, &weights(&other_shape, 7)).unwrap();
    assert!(matches!(
        prove_model_layer(&params, &shape, MaskKind::Causal, softmax, &input(&shape, 6), None, &w, &other),
        Err(AttentionError::CheckFailed { step: "model commitment shape" })
    ));
    // A shift too small for the intermediate values: the projected Q leaves the attention's
    // input range, one typed error.
    let tight = ModelShape { shifts: [1, 1, 1, shape.shifts[3]], ..shape };
    let large = vec![1i64 << 24; shape.attention.seq_len * shape.model_width];
    assert!(matches!(
        prove_model_layer(&params, &tight, MaskKind::Causal, softmax, &large, None, &w, &model),
        Err(AttentionError::ValueOutOfRange { .. })
    ));
}

#[test]
fn one_model_commitment_serves_every_sequence_length() {
    let [(softmax, shape), _] = modes(&small());
    let w = weights(&shape, 8);
    // Committed once, with the weights' own generators and no sequence length in sight.
    let once = ModelShape { attention: AttentionShape::new(1, 2, 4, 4).unwrap(), ..shape };
    let model = commit_model(&weights_hyrax_params(&once), &once, &w).unwrap();
    for seq_len in [3, 6, 17] {
        let s = ModelShape { attention: AttentionShape::new(seq_len, 2, 4, 4).unwrap(), ..shape };
        let params = model_hyrax_params(&s, softmax);
        assert_eq!(commit_model(&params, &s, &w).unwrap(), model, "s = {seq_len}");
        let (statement, proof, _) =
            prove_model_layer(&params, &s, MaskKind::Causal, softmax, &input(&s, 9), None, &w, &model)
                .unwrap();
        verify_model_layer(&params, &statement, &proof).unwrap_or_else(|e| panic!("s = {seq_len}: {e}"));
    }
}

#[test]
fn pre_norm_residual_adds_to_the_committed_hidden_state() {
    for (s, h, m, mv, d) in [(5, 2, 4, 4, 12), (3, 1, 2, 3, 7)] {
        for (softmax, shape) in modes(&pre_norm(base(s, h, m, mv, d))) {
            let r = run(&shape, MaskKind::Causal, softmax, 11);
            verify_model_layer(&r.params, &r.statement, &r.proof)
                .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            assert!(r.statement.residual.is_some());
            assert_eq!(
                r.statement.output.public().unwrap(),
                reference(&shape, MaskKind::Causal, softmax, 11),
                "{shape:?}"
            );
        }
    }
}

#[test]
fn pre_norm_rejects_another_hidden_state_and_a_missing_one() {
    let [(softmax, shape), _] = modes(&pre_norm(small()));
    let r = run(&shape, MaskKind::Causal, softmax, 12);
    let other = run(&shape, MaskKind::Causal, softmax, 13);
    // H committed to other values: the statement's digest changes every challenge.
    let mut swapped = r.statement.clone();
    swapped.residual = other.statement.residual.clone();
    assert!(verify_model_layer(&r.params, &swapped, &r.proof).is_err());
    // The output of the same block on another H (a prover adding Y to a hidden state it did
    // not commit to).
    let mut wrong = r.statement.clone();
    wrong.output.public_mut().unwrap()[0] += 1;
    assert!(verify_model_layer(&r.params, &wrong, &r.proof).is_err());
    // α = H̃(r_z) off by one (it is absorbed, so the next challenges move and an early check
    // fails; were it not, the final opening would).
    let mut bad = r.proof.clone();
    bad.residual_input += Fr::one();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // No commitment to H, or one under a post-norm shape.
    let mut missing = r.statement.clone();
    missing.residual = None;
    assert_eq!(
        verify_model_layer(&r.params, &missing, &r.proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "residual commitment" })
    );
    let mut post_norm = r.statement.clone();
    post_norm.shape.residual = Residual::LayerInput;
    assert_eq!(
        verify_model_layer(&r.params, &post_norm, &r.proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "residual commitment" })
    );
    // The opening answers H as one more polynomial (32 with k_o = 20's high digits and the
    // three output ranges).
    assert_eq!(r.proof.openings.evaluations.len(), 32);
    // The prover needs H exactly when the shape says so.
    let w = weights(&shape, 12);
    let model = commit_model(&r.params, &shape, &w).unwrap();
    let x = input(&shape, 112);
    assert!(matches!(
        prove_model_layer(&r.params, &shape, MaskKind::Causal, softmax, &x, None, &w, &model),
        Err(AttentionError::InvalidShape(_))
    ));
    let post = ModelShape { residual: Residual::LayerInput, ..shape };
    assert!(matches!(
        prove_model_layer(&r.params, &post, MaskKind::Causal, softmax, &x, Some(&x), &w, &model),
        Err(AttentionError::InvalidShape(_))
    ));
    let short = vec![0i64; x.len() - 1];
    assert!(matches!(
        prove_model_layer(&r.params, &shape, MaskKind::Causal, softmax, &x, Some(&short), &w, &model),
        Err(AttentionError::WrongTensorSize { tensor: "H", .. })
    ));
}

#[test]
fn grouped_query_attention_round_trips_against_the_plain_block() {
    // Groups of 2, of 3 (not a power of two), one shared head; m ≠ m_v; pre-norm as well.
    for shape in [
        grouped(5, 4, 2, 4, 4, 12),
        grouped(6, 6, 2, 4, 2, 10),
        grouped(3, 3, 1, 2, 4, 7),
        ModelShape { residual: Residual::HiddenState, ..grouped(4, 4, 1, 4, 4, 9) },
    ] {
        for (softmax, shape) in modes(&shape) {
            let r = run(&shape, MaskKind::Causal, softmax, 21);
            verify_model_layer(&r.params, &r.statement, &r.proof)
                .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            assert_eq!(r.proof.shared_heads.len(), 4);
            assert_eq!(
                r.statement.output.public().unwrap(),
                reference(&shape, MaskKind::Causal, softmax, 21),
                "{shape:?}"
            );
        }
    }
}

#[test]
fn grouped_query_attention_rejects_tampering() {
    let [(softmax, shape), _] = modes(&grouped(6, 4, 2, 4, 4, 10));
    let r = run(&shape, MaskKind::Causal, softmax, 22);
    // A wrong shared-head value, for each of W_k, b_k, W_v, b_v.
    for k in 0..4 {
        for c in 0..2 {
            let mut bad = r.proof.clone();
            bad.shared_heads[k].values[c] += Fr::one();
            assert_eq!(
                verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
                Err(AttentionError::CheckFailed { step: "shared heads" }),
                "table {k}, head {c}"
            );
        }
    }
    // Values moved between key/value heads keep no sum but by chance.
    let mut bad = r.proof.clone();
    bad.shared_heads[0].values.swap(0, 1);
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    let mut bad = r.proof.clone();
    bad.shared_heads.pop();
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    bad.shared_heads[2].values.push(Fr::one());
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "shared heads" })
    );
    // The same proof read as a layer without sharing: its commitments have another shape.
    let mut plain = r.statement.clone();
    plain.shape.key_value_heads = 4;
    assert_eq!(
        verify_model_layer(&r.params, &plain, &r.proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model commitment shape" })
    );
    // Another model's compact W_k (same shape).
    let other = run(&shape, MaskKind::Causal, softmax, 23);
    let mut swapped = r.statement.clone();
    swapped.model.tables[1] = other.statement.model.tables[1].clone();
    assert!(verify_model_layer(&r.params, &swapped, &r.proof).is_err());
    // Shapes that cannot share heads.
    let params = model_hyrax_params(&shape, softmax);
    for bad_shape in [grouped(6, 4, 3, 4, 4, 10), grouped(6, 4, 0, 4, 4, 10), grouped(6, 4, 2, 3, 4, 10)] {
        assert!(matches!(
            commit_model(&params, &bad_shape, &weights(&shape, 22)),
            Err(AttentionError::InvalidShape(_))
        ));
    }
}

#[test]
fn rotary_embeddings_round_trip_against_the_plain_block() {
    // Llama's combination (pre-norm, grouped, rotated) and rotation alone; m = 2, 4, 8.
    for shape in [
        rotary(ModelShape { residual: Residual::HiddenState, ..grouped(6, 6, 2, 4, 4, 12) }),
        rotary(base(5, 2, 8, 4, 9)),
        rotary(grouped(3, 4, 1, 2, 2, 7)),
    ] {
        for (softmax, shape) in modes(&shape) {
            let r = run(&shape, MaskKind::Causal, softmax, 31);
            verify_model_layer(&r.params, &r.statement, &r.proof)
                .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            let rotary = proof_polynomials(&shape)
                .into_iter()
                .filter(|k| {
                    matches!(k, BlockPolynomial::RotaryInput(_) | BlockPolynomial::RotaryMultiplicities(_))
                })
                .count();
            assert_eq!((rotary, r.proof.rotations.len()), (4, 2));
            assert_eq!(
                r.statement.output.public().unwrap(),
                reference(&shape, MaskKind::Causal, softmax, 31),
                "{shape:?}"
            );
        }
    }
}

#[test]
fn rotary_embeddings_reject_tampering() {
    let [(softmax, shape), _] = modes(&rotary(grouped(6, 4, 2, 4, 4, 10)));
    let r = run(&shape, MaskKind::Causal, softmax, 32);
    for k in 0..2 {
        let mut bad = r.proof.clone();
        bad.rotations[k].pair_values[1] += Fr::one();
        assert_eq!(
            verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "rotary embedding pair values" }),
            "rotation {k}"
        );
        let mut bad = r.proof.clone();
        bad.rotations[k].output_value += Fr::one();
        assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err(), "rotation {k} output");
    }
    // Q_pre and K_pre swapped; a rotation missing; the commitments absent.
    let (q_pre, k_pre) =
        (at(&shape, BlockPolynomial::RotaryInput(0)), at(&shape, BlockPolynomial::RotaryInput(1)));
    let mut bad = r.proof.clone();
    bad.commitments.swap(q_pre, k_pre);
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    let mut bad = r.proof.clone();
    bad.rotations.pop();
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    bad.commitments.retain(|c| c != &r.proof.commitments[q_pre] && c != &r.proof.commitments[k_pre]);
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    // The statement read without rotation, or with another base: rejected.
    let mut plain = r.statement.clone();
    plain.shape.rotary = None;
    assert!(verify_model_layer(&r.params, &plain, &r.proof).is_err());
    let mut other_base = r.statement.clone();
    other_base.shape.rotary =
        other_base.shape.rotary.map(|p| zkmha_attention::rope::RotaryParams { base: 500_000, ..p });
    assert!(verify_model_layer(&r.params, &other_base, &r.proof).is_err());
    // A prover that skips the rotation (commits the unrotated Q as the attention's Q) cannot
    // open Q where the rotation's claim lands: the same proof with Q's commitment from an
    // unrotated run fails.
    let unrotated = run(&ModelShape { rotary: None, ..shape }, MaskKind::Causal, softmax, 32);
    let unrotated_shape = ModelShape { rotary: None, ..shape };
    let mut bad = r.proof.clone();
    bad.commitments[at(&shape, BlockPolynomial::AttentionInput(0))] =
        unrotated.proof.commitments[at(&unrotated_shape, BlockPolynomial::AttentionInput(0))].clone();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
}
