//! The block with its norm proven (pre-norm decoders: `X = norm(H)`, RMSNorm or LayerNorm, γ
//! and β in the model commitment), in both modes: round trips on several shapes (one token,
//! a width that is not a power of two, grouped-query attention with rotary embeddings), the
//! same output as the block without the norm on `X = norm(H)`, and the attacks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{base, grouped, hidden_state, modes as softmax_modes, rotary, weights, with_norm};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::block::{
    block_hyrax_params, commit_model_with, normalized_input, prove_block, verify_block,
};
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::norm::{BlockNorm, NormKind};
use zkmha_attention::{AttentionError, MaskKind, Residual, SoftmaxMode};
use zkmha_nn::NormWeights;

in_both_modes!(
    round_trips_on_several_shapes,
    the_output_is_the_block_without_the_norm_on_its_output,
    rejects_another_input_hidden_state_or_norm_weights,
    rejects_a_changed_norm_or_a_missing_norm_proof,
);

use crate::common::PreNormBlock as Proved;

fn prove<M: Mode>(shape: &ModelShape, softmax: SoftmaxMode, seed: u64) -> Proved<M> {
    common::prove_pre_norm(shape, softmax, seed, seed)
}

fn shapes() -> Vec<ModelShape> {
    vec![
        with_norm(base(5, 2, 4, 4, 10), NormKind::Rms),
        with_norm(base(5, 2, 4, 4, 10), NormKind::Layer),
        with_norm(base(1, 2, 4, 4, 12), NormKind::Layer),
        with_norm(base(1, 1, 2, 2, 3), NormKind::Rms),
        with_norm(rotary(grouped(6, 4, 2, 4, 4, 16)), NormKind::Rms),
    ]
}

fn round_trips_on_several_shapes<M: Mode>() {
    for shape in shapes() {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 3);
        verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

fn the_output_is_the_block_without_the_norm_on_its_output<M: Mode>() {
    for shape in shapes().into_iter().take(3) {
        let [_, (softmax, shape)] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 4);
        // The same block, X and H committed side by side (the norm not proven).
        let plain_shape = ModelShape { norm: None, ..shape };
        let plain_weights = ModelWeights { norm: None, ..p.weights.clone() };
        let params = block_hyrax_params::<M>(&plain_shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (model, blinds) =
            commit_model_with::<M>(&params, &plain_shape, &plain_weights, &mut rng).unwrap();
        let x = normalized_input(&shape, &p.weights, &p.hidden).unwrap();
        let (statement, _, _) = prove_block::<M>(
            &params,
            &plain_shape,
            MaskKind::Causal,
            softmax,
            &x,
            Some(&p.hidden),
            &plain_weights,
            &model,
            &blinds,
            &mut rng,
        )
        .unwrap();
        assert_eq!(statement.output, p.statement.output, "{shape:?}");
        // The proven X is not the hidden state (the norm did something).
        assert_ne!(x, p.hidden);
    }
}

fn rejects_another_input_hidden_state_or_norm_weights<M: Mode>() {
    let shape = shapes()[1];
    let [(softmax, shape), _] = softmax_modes(&shape);
    let p = prove::<M>(&shape, softmax, 6);
    let other = prove::<M>(&shape, softmax, 7);
    // Another proof's X, H or model (its γ, β and every other weight) in the statement.
    for (name, statement) in [
        ("X", ModelStatement { input: other.statement.input.clone(), ..p.statement.clone() }),
        ("H", ModelStatement { residual: other.statement.residual.clone(), ..p.statement.clone() }),
    ] {
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{name}");
    }
    // Only γ (then only β) swapped for the other model's.
    for table in [8, 9] {
        let mut statement = p.statement.clone();
        statement.model.tables[table] = other.statement.model.tables[table].clone();
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "weight table {table}");
    }
    // The prover refuses an X that is not the norm of H.
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let (model, blinds) = commit_model_with::<M>(&p.params, &shape, &p.weights, &mut rng).unwrap();
    let mut x = normalized_input(&shape, &p.weights, &p.hidden).unwrap();
    x[3] += 1;
    let refused = prove_block::<M>(
        &p.params,
        &shape,
        MaskKind::Causal,
        softmax,
        &x,
        Some(&p.hidden),
        &p.weights,
        &model,
        &blinds,
        &mut rng,
    );
    assert!(matches!(refused, Err(AttentionError::InvalidShape(_))));
}

fn rejects_a_changed_norm_or_a_missing_norm_proof<M: Mode>() {
    let shape = shapes()[0];
    let [(softmax, shape), _] = softmax_modes(&shape);
    let p = prove::<M>(&shape, softmax, 9);
    let norm = shape.norm.unwrap();
    for changed in [
        BlockNorm { epsilon: norm.epsilon + 1, ..norm },
        BlockNorm { scale_bits: norm.scale_bits - 1, ..norm },
        BlockNorm { shift_bits: norm.shift_bits + 1, ..norm },
        BlockNorm { remainder_digits: norm.remainder_digits + 1, ..norm },
    ] {
        let statement =
            ModelStatement { shape: ModelShape { norm: Some(changed), ..shape }, ..p.statement.clone() };
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{changed:?}");
    }
    let mut proof = p.proof.clone();
    proof.norm = None;
    assert_eq!(
        verify_block::<M>(&p.params, &p.statement, &proof).err(),
        Some(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    // A statement without the norm, its proof's norm present.
    let statement = ModelStatement { shape: ModelShape { norm: None, ..shape }, ..p.statement.clone() };
    assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err());
}

#[test]
fn shapes_and_weights_must_agree_on_the_norm() {
    let [(softmax, shape), _] = softmax_modes(&with_norm(base(3, 2, 4, 4, 8), NormKind::Rms));
    let w = weights(&shape, 1);
    // A post-norm block cannot prove a norm from H to X.
    let post = ModelShape { residual: Residual::LayerInput, ..shape };
    assert!(matches!(post.validate(), Err(AttentionError::InvalidShape(_))));
    // Weights without the norm, or of the other kind, are refused by name.
    let h = hidden_state(&shape, 1).unwrap();
    let x = normalized_input(&shape, &w, &h).unwrap();
    let params = block_hyrax_params::<zkmha_attention::mode::Plain>(&shape, softmax).unwrap();
    for bad in [
        ModelWeights { norm: None, ..w.clone() },
        ModelWeights {
            norm: Some(NormWeights { kind: NormKind::Layer, ..w.norm.clone().unwrap() }),
            ..w.clone()
        },
    ] {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &bad, &mut rng);
        assert!(matches!(committed, Err(AttentionError::InvalidShape(_))), "{:?}", bad.norm.map(|n| n.kind));
    }
    assert_ne!(x, h);
}
