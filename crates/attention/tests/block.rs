//! The model block written once for both modes (`zkmha_attention::block`): round trips
//! against the plain reference on many shapes (post- and pre-norm, grouped-query attention,
//! RoPE, non-powers of two), and one test per attack, each in the plain and the
//! zero-knowledge mode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_attention::block::{ModelBlockProof, block_hyrax_params, proof_polynomials, verify_block};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_attention::model_layer::{ModelShape, ModelStatement};
use zkmha_attention::{AttentionError, MaskKind, SoftmaxMode};
use zkmha_pcs::HyraxParams;

use crate::common::{
    base, grouped, hidden_state, input, modes, pre_norm, proven_block, reference, rotary, small, weights,
};
use crate::modes::TestMode;

struct Run<M: Mode> {
    params: HyraxParams,
    statement: ModelStatement,
    proof: ModelBlockProof<M>,
}

fn run<M: Mode>(shape: &ModelShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Run<M> {
    let (params, statement, proof) = proven_block::<M>(shape, mask, softmax, seed);
    Run { params, statement, proof }
}

fn round_trips_against_the_plain_reference<M: Mode>() {
    let mut shapes: Vec<(SoftmaxMode, ModelShape)> = Vec::new();
    for (s, h, m, mv, d) in [(5, 2, 4, 4, 12), (3, 1, 2, 3, 16)] {
        shapes.extend(modes(&base(s, h, m, mv, d)));
    }
    let [(softmax, shape), _] = modes(&small());
    shapes.push((softmax, pre_norm(shape)));
    let [(softmax, shape), _] = modes(&grouped(6, 4, 2, 4, 2, 9));
    shapes.push((softmax, shape));
    let [_, (softmax, shape)] = modes(&rotary(base(5, 2, 4, 4, 12)));
    shapes.push((softmax, pre_norm(shape)));
    for (softmax, shape) in shapes {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let r = run::<M>(&shape, mask, softmax, 1);
            verify_block::<M>(&r.params, &r.statement, &r.proof)
                .unwrap_or_else(|e| panic!("{}: {shape:?} {mask}: {e}", M::NAME));
            assert_eq!(
                r.statement.output.public().unwrap(),
                reference(&shape, mask, softmax, 1),
                "{shape:?} {mask}"
            );
            // Through bytes.
            let mut bytes = Vec::new();
            (&r.statement, &r.proof).serialize_compressed(&mut bytes).unwrap();
            let (statement, proof) =
                <(ModelStatement, ModelBlockProof<M>)>::deserialize_compressed(bytes.as_slice()).unwrap();
            verify_block::<M>(&r.params, &statement, &proof).unwrap();
        }
    }
}

fn a_sliding_window_round_trips_and_binds_its_size<M: Mode>() {
    // Grouped-query attention with RoPE, pre-norm, 7 tokens and windows of 1, 3 and 8: the
    // output equals the plain reference's for that window, and a statement of another window
    // (or the causal mask) is rejected.
    let shape = pre_norm(rotary(grouped(7, 4, 2, 4, 4, 12)));
    for (window, softmax) in [(1, 0), (3, 1), (8, 1)] {
        let (softmax, shape) = modes(&shape)[softmax];
        let mask = MaskKind::sliding(window).unwrap();
        let r = run::<M>(&shape, mask, softmax, 9);
        verify_block::<M>(&r.params, &r.statement, &r.proof)
            .unwrap_or_else(|e| panic!("{}: window {window}: {e}", M::NAME));
        assert_eq!(
            r.statement.output.public().unwrap(),
            reference(&shape, mask, softmax, 9),
            "window {window}"
        );
        if window < 7 {
            assert_ne!(reference(&shape, mask, softmax, 9), reference(&shape, MaskKind::Causal, softmax, 9));
        }
        for other in [MaskKind::Causal, MaskKind::sliding(window + 1).unwrap()] {
            let mut bad = r.statement.clone();
            bad.mask = other;
            assert!(verify_block::<M>(&r.params, &bad, &r.proof).is_err(), "window {window} as {other}");
        }
    }
}

fn rejects_a_changed_output<M: Mode>() {
    let [(softmax, shape), _] = modes(&small());
    let mut r = run::<M>(&shape, MaskKind::Causal, softmax, 2);
    r.statement.output.public_mut().unwrap()[7] += 1;
    assert!(verify_block::<M>(&r.params, &r.statement, &r.proof).is_err());
}

fn rejects_another_model_input_or_hidden_state<M: Mode>() {
    let [(softmax, shape), _] = modes(&pre_norm(small()));
    let r = run::<M>(&shape, MaskKind::Causal, softmax, 3);
    let other = run::<M>(&shape, MaskKind::Causal, softmax, 4);
    let mut bad = r.statement.clone();
    bad.model = other.statement.model.clone();
    assert!(verify_block::<M>(&r.params, &bad, &r.proof).is_err());
    let mut bad = r.statement.clone();
    bad.input = other.statement.input.clone();
    assert!(verify_block::<M>(&r.params, &bad, &r.proof).is_err());
    let mut bad = r.statement.clone();
    bad.residual = other.statement.residual.clone();
    assert!(verify_block::<M>(&r.params, &bad, &r.proof).is_err());
    let mut bad = r.statement.clone();
    bad.residual = None;
    assert_eq!(
        verify_block::<M>(&r.params, &bad, &r.proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "residual commitment" })
    );
}

fn rejects_tampered_and_missing_parts<M: TestMode>() {
    let [(softmax, shape), _] = modes(&rotary(grouped(6, 4, 2, 4, 2, 9)));
    let r = run::<M>(&shape, MaskKind::Causal, softmax, 5);
    let verify = |proof: &ModelBlockProof<M>| verify_block::<M>(&r.params, &r.statement, proof).map(|_| ());
    verify(&r.proof).unwrap();
    let shape_error = Err(AttentionError::CheckFailed { step: "model layer proof shape" });
    // Sent values: α, Õ(r), a projection's y, a shared-heads value, a rotation's output value.
    let mut bad = r.proof.clone();
    M::tamper_sent(&mut bad.residual_input);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    M::tamper_sent(&mut bad.output_value);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    M::tamper_sent(&mut bad.projections.projections[3].values[0]);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    M::tamper_sent(&mut bad.shared_heads[2].values[0]);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    M::tamper_sent(&mut bad.rotations[1].output_value);
    assert!(verify(&bad).is_err());
    // Commitments: swapped, missing, one of another size.
    let keys = proof_polynomials(&shape);
    assert_eq!(r.proof.commitments.len(), keys.len());
    let mut bad = r.proof.clone();
    bad.commitments.swap(0, 1);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    bad.commitments.pop();
    assert_eq!(verify(&bad), shape_error);
    let mut bad = r.proof.clone();
    bad.commitments.swap(0, 2);
    assert_eq!(verify(&bad), shape_error, "V is narrower than Q here");
    // Parts: missing rotations, shared-head reductions, projections.
    let mut bad = r.proof.clone();
    bad.rotations.pop();
    assert_eq!(verify(&bad), shape_error);
    let mut bad = r.proof.clone();
    bad.shared_heads.pop();
    assert_eq!(verify(&bad), shape_error);
    let mut bad = r.proof.clone();
    bad.projections.projections.pop();
    assert_eq!(verify(&bad), shape_error);
    // The attention's steps and the version.
    let mut bad = r.proof.clone();
    M::tamper_round(&mut bad.attention.qk.product);
    assert!(verify(&bad).is_err());
    let mut bad = r.proof.clone();
    bad.version += 1;
    assert_eq!(verify(&bad), Err(AttentionError::UnsupportedVersion(r.proof.version + 1)));
}

fn a_proof_of_one_mode_is_not_a_proof_of_the_other<M: Mode>() {
    // The bytes of a proof of one mode do not parse as the other's (or, parsed, do not verify:
    // the transcript absorbs the mode's name).
    let [(softmax, shape), _] = modes(&small());
    let r = run::<M>(&shape, MaskKind::Causal, softmax, 6);
    let mut bytes = Vec::new();
    r.proof.serialize_compressed(&mut bytes).unwrap();
    if M::HIDING {
        let parsed = ModelBlockProof::<Plain>::deserialize_compressed(bytes.as_slice());
        let plain_params = block_hyrax_params::<Plain>(&shape, softmax).unwrap();
        assert!(
            parsed.is_err() || verify_block::<Plain>(&plain_params, &r.statement, &parsed.unwrap()).is_err()
        );
    } else {
        let parsed = ModelBlockProof::<Zk>::deserialize_compressed(bytes.as_slice());
        let zk_params = block_hyrax_params::<Zk>(&shape, softmax).unwrap();
        assert!(parsed.is_err() || verify_block::<Zk>(&zk_params, &r.statement, &parsed.unwrap()).is_err());
    }
}

in_both_modes!(
    round_trips_against_the_plain_reference,
    a_sliding_window_round_trips_and_binds_its_size,
    rejects_a_changed_output,
    rejects_another_model_input_or_hidden_state,
    rejects_tampered_and_missing_parts,
    a_proof_of_one_mode_is_not_a_proof_of_the_other,
);

#[test]
fn the_model_layer_functions_are_the_plain_block() {
    // `prove_model_layer`, `commit_model` and `model_hyrax_params` are the plain mode's block.
    let [(softmax, shape), _] = modes(&rotary(pre_norm(grouped(6, 4, 2, 4, 2, 9))));
    let r = run::<Plain>(&shape, MaskKind::Causal, softmax, 7);
    let params = zkmha_attention::model_layer::model_hyrax_params(&shape, softmax);
    assert_eq!(params.max_num_vars, r.params.max_num_vars);
    let w = weights(&shape, 7);
    let model = zkmha_attention::model_layer::commit_model(&params, &shape, &w).unwrap();
    assert_eq!(model, r.statement.model);
    let h = hidden_state(&shape, 7);
    let (statement, proof, _) = zkmha_attention::model_layer::prove_model_layer(
        &params,
        &shape,
        MaskKind::Causal,
        softmax,
        &input(&shape, 107),
        h.as_deref(),
        &w,
        &model,
    )
    .unwrap();
    assert_eq!((statement, proof), (r.statement, r.proof));
}
