//! The whole pre-norm layer in one proof: the block with its MLP proven (`X = norm(H)`, the
//! attention, `Z = H + Y`, `X₂ = norm₂(Z)`, `H' = Z + MLP(X₂)`; GPT-2's dense GELU MLP after a
//! LayerNorm, Llama's gated SiLU MLP after an RMSNorm), in both modes: round trips on several
//! shapes (one token, widths that are not powers of two, grouped-query attention with rotary
//! embeddings), the output against the attention block's `Z` and the MLP's forward pass, and
//! the attacks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{base, grouped, modes as softmax_modes, rotary, weights, with_mlp, with_norm};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::block::{
    block_hyrax_params, commit_model_with, normalized_input, prove_block, verify_block,
};
use zkmha_attention::mlp::{GatedProduct, compute_mlp};
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::norm::{NormKind, compute_norm};
use zkmha_attention::{AttentionError, MaskKind, SoftmaxMode};

in_both_modes!(
    round_trips_on_several_shapes,
    the_output_is_the_attention_block_then_the_mlp,
    rejects_another_models_mlp_weights,
    rejects_changed_mlp_constants_or_a_missing_mlp_proof,
    rejects_a_changed_output,
);

use crate::common::PreNormBlock as Proved;

fn prove<M: Mode>(shape: &ModelShape, softmax: SoftmaxMode, seed: u64) -> Proved<M> {
    common::prove_pre_norm(shape, softmax, seed, seed)
}

fn shapes() -> Vec<ModelShape> {
    vec![
        with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Layer), false, 24),
        with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Rms), true, 20),
        with_mlp(with_norm(base(1, 2, 4, 4, 12), NormKind::Rms), true, 16),
        with_mlp(with_norm(base(1, 1, 2, 2, 3), NormKind::Layer), false, 5),
        with_mlp(with_norm(rotary(grouped(6, 4, 2, 4, 4, 16)), NormKind::Rms), true, 40),
    ]
}

fn round_trips_on_several_shapes<M: Mode>() {
    for shape in shapes() {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 3);
        verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

/// `H' = Z + MLP(norm₂(Z))` with `Z` the output of the same block without the MLP (its own
/// proof) and the MLP's forward pass (tested against its plain reference in tests/mlp.rs).
fn the_output_is_the_attention_block_then_the_mlp<M: Mode>() {
    for shape in shapes().into_iter().take(3) {
        let [_, (softmax, shape)] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 4);
        let attention_shape = ModelShape { mlp: None, ..shape };
        let attention_weights = ModelWeights { feed_forward: None, ..p.weights.clone() };
        let params = block_hyrax_params::<M>(&attention_shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (model, blinds) =
            commit_model_with::<M>(&params, &attention_shape, &attention_weights, &mut rng).unwrap();
        let x = normalized_input(&shape, &p.weights, &p.hidden).unwrap();
        let (attention, _, _) = prove_block::<M>(
            &params,
            &attention_shape,
            MaskKind::Causal,
            softmax,
            &x,
            Some(&p.hidden),
            &attention_weights,
            &model,
            &blinds,
            &mut rng,
        )
        .unwrap();
        let z = attention.output.public().unwrap();
        let feed_forward = p.weights.feed_forward.as_ref().unwrap();
        let x2 = compute_norm(
            &shape.mlp_norm_shape().unwrap(),
            z,
            &feed_forward.norm.scale,
            &feed_forward.norm.bias,
        )
        .unwrap();
        let mlp = compute_mlp(&shape.mlp_shape().unwrap(), &x2, &feed_forward.mlp).unwrap();
        let expected: Vec<i64> = z.iter().zip(mlp.output()).map(|(z, y)| z + y).collect();
        assert_eq!(p.statement.output.public().unwrap(), expected, "{shape:?}");
        assert!(mlp.output().iter().any(|&y| y != 0), "the MLP did something");
    }
}

fn rejects_another_models_mlp_weights<M: Mode>() {
    for shape in [shapes()[0], shapes()[1]] {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 6);
        let other = prove::<M>(&shape, softmax, 7);
        // Each MLP table (γ₂, β₂, every W and b) swapped for the other model's.
        let first = 8 + 1 + usize::from(shape.norm.unwrap().bias);
        for table in first..p.statement.model.tables.len() {
            let mut statement = p.statement.clone();
            statement.model.tables[table] = other.statement.model.tables[table].clone();
            assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "weight table {table}");
        }
    }
}

fn rejects_changed_mlp_constants_or_a_missing_mlp_proof<M: Mode>() {
    let shape = shapes()[1];
    let [(softmax, shape), _] = softmax_modes(&shape);
    let p = prove::<M>(&shape, softmax, 9);
    let mlp = shape.mlp.unwrap();
    let gate = mlp.params.gate.unwrap();
    let mut changed = Vec::new();
    let changes: [fn(&mut zkmha_attention::mlp::BlockMlp); 7] = [
        |m| m.params.up_shift += 1,
        |m| m.params.down_shift -= 1,
        |m| m.params.activation_input_fraction_bits += 1,
        |m| m.params.activation_output_fraction_bits -= 1,
        |m| m.params.activation = zkmha_attention::activation::Activation::GeluErf,
        |m| m.norm.epsilon += 1,
        |m| m.norm.scale_bits -= 1,
    ];
    for change in changes {
        let mut m = mlp;
        change(&mut m);
        changed.push(m);
    }
    changed.push(zkmha_attention::mlp::BlockMlp {
        params: zkmha_attention::mlp::MlpParams {
            gate: Some(GatedProduct { gate_shift: gate.gate_shift + 1, ..gate }),
            ..mlp.params
        },
        ..mlp
    });
    for m in changed {
        let statement = ModelStatement { shape: ModelShape { mlp: Some(m), ..shape }, ..p.statement.clone() };
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{m:?}");
    }
    let mut proof = p.proof.clone();
    proof.feed_forward = None;
    assert_eq!(
        verify_block::<M>(&p.params, &p.statement, &proof).err(),
        Some(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    // A statement without the MLP, its proof's MLP present.
    let statement = ModelStatement { shape: ModelShape { mlp: None, ..shape }, ..p.statement.clone() };
    assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err());
}

/// The output moved by one at an entry (the residual `H' = Z + Y₂` no longer holds).
fn rejects_a_changed_output<M: Mode>() {
    let shape = shapes()[0];
    let [(softmax, shape), _] = softmax_modes(&shape);
    let p = prove::<M>(&shape, softmax, 11);
    for index in [0, 17, p.statement.output.public().unwrap().len() - 1] {
        let mut statement = p.statement.clone();
        statement.output.public_mut().unwrap()[index] += 1;
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "entry {index}");
    }
}

#[test]
fn shapes_and_weights_must_agree_on_the_mlp() {
    let [(softmax, shape), _] =
        softmax_modes(&with_mlp(with_norm(base(3, 2, 4, 4, 8), NormKind::Rms), true, 12));
    let w = weights(&shape, 1);
    // An MLP needs the proven norm before the attention.
    let without_norm = ModelShape { norm: None, ..shape };
    assert!(matches!(without_norm.validate(), Err(AttentionError::InvalidShape(_))));
    let params = block_hyrax_params::<zkmha_attention::mode::Plain>(&shape, softmax).unwrap();
    let mut dense_weights = w.clone();
    dense_weights.feed_forward.as_mut().unwrap().mlp.gate = None;
    for bad in [ModelWeights { feed_forward: None, ..w.clone() }, dense_weights] {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &bad, &mut rng);
        assert!(matches!(committed, Err(AttentionError::InvalidShape(_))), "{committed:?}");
    }
    let mut short = w.clone();
    short.feed_forward.as_mut().unwrap().mlp.down.bias.pop();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &short, &mut rng);
    assert!(
        matches!(committed, Err(AttentionError::WrongTensorSize { tensor: "b_down", .. })),
        "{committed:?}"
    );
}
