//! Gemma 2's and 3's "sandwich" norms proven in the block: `Z = H + norm_a(Y)` and, with the
//! MLP, `H' = Z + norm_f(Y₂)`, in both modes: round trips on several shapes (one token, widths
//! that are not powers of two, grouped-query attention with rotary embeddings, RMSNorm and
//! LayerNorm), the output against a plain composition of the steps' forward passes, and
//! statements that drop or change an output norm. The malicious provers are in
//! `src/block_attack_output_norms.rs` (they change the honest prover at one step).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{
    base, grouped, modes as softmax_modes, rotary, weights, with_mlp, with_norm, with_output_norms,
    with_query_key_norms,
};
use zkmha_attention::block::{
    block_hyrax_params, block_output, commit_model_with, normalized_input, verify_block,
};
use zkmha_attention::mlp::compute_mlp;
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{BlockHalf, ModelShape, ModelStatement, ModelWeights, OutputNorms};
use zkmha_attention::norm::{NormKind, compute_norm};
use zkmha_attention::{AttentionError, MaskKind, SoftmaxMode};

in_both_modes!(
    round_trips_on_several_shapes,
    query_key_norms_round_trip_and_bind_their_constants_and_weights,
    rejects_a_statement_without_or_with_changed_output_norms,
    rejects_another_models_output_norm_weights,
    rejects_a_changed_output,
);

use crate::common::PreNormBlock as Proved;

fn prove<M: Mode>(shape: &ModelShape, softmax: SoftmaxMode, seed: u64) -> Proved<M> {
    common::prove_pre_norm(shape, softmax, seed, seed)
}

fn shapes() -> Vec<ModelShape> {
    vec![
        with_output_norms(with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Rms), true, 20)),
        with_output_norms(with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Layer), false, 24)),
        with_output_norms(with_mlp(with_norm(base(1, 2, 4, 4, 12), NormKind::Rms), true, 16)),
        with_output_norms(with_norm(base(3, 1, 2, 2, 3), NormKind::Rms)),
        with_output_norms(with_mlp(with_norm(rotary(grouped(6, 4, 1, 4, 4, 16)), NormKind::Rms), true, 40)),
    ]
}

fn round_trips_on_several_shapes<M: Mode>() {
    for shape in shapes() {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 3);
        verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

/// The block's output, plainly: the attention block without the output norms gives `H + Y`
/// (its own forward pass), so `Y` is known; then `Z = H + norm_a(Y)`, `X₂ = norm₂(Z)`,
/// `H' = Z + norm_f(MLP(X₂))`, each step's forward pass on its own.
#[test]
fn the_output_is_each_half_normed_before_its_residual() {
    for shape in shapes() {
        let [_, (softmax, shape)] = softmax_modes(&shape);
        let w = weights(&shape, 4);
        let h = common::hidden_state(&shape, 4).unwrap();
        let x = normalized_input(&shape, &w, &h).unwrap();
        let bare = ModelShape { mlp: None, output_norms: OutputNorms::default(), ..shape };
        let bare_weights = ModelWeights { feed_forward: None, output_norms: Default::default(), ..w.clone() };
        let z_bare = block_output(&bare, MaskKind::Causal, softmax, &x, Some(&h), &bare_weights).unwrap();
        let y: Vec<i64> = z_bare.iter().zip(&h).map(|(z, h)| z - h).collect();
        let norm_a = w.output_norms.attention.as_ref().unwrap();
        let normed = compute_norm(
            &shape.output_norm_shape(BlockHalf::Attention).unwrap(),
            &y,
            &norm_a.scale,
            &norm_a.bias,
        )
        .unwrap();
        assert_ne!(normed, y, "the norm did something");
        let z: Vec<i64> = h.iter().zip(&normed).map(|(h, y)| h + y).collect();
        let expected = match (shape.mlp, &w.feed_forward) {
            (Some(mlp), Some(f)) => {
                let x2 = compute_norm(
                    &mlp.norm.shape(shape.attention.seq_len, shape.model_width),
                    &z,
                    &f.norm.scale,
                    &f.norm.bias,
                )
                .unwrap();
                let y2 = compute_mlp(&shape.mlp_shape().unwrap(), &x2, &f.mlp).unwrap().output().to_vec();
                let norm_f = w.output_norms.feed_forward.as_ref().unwrap();
                let normed2 = compute_norm(
                    &shape.output_norm_shape(BlockHalf::FeedForward).unwrap(),
                    &y2,
                    &norm_f.scale,
                    &norm_f.bias,
                )
                .unwrap();
                z.iter().zip(&normed2).map(|(z, y)| z + y).collect::<Vec<_>>()
            }
            _ => z,
        };
        let output = block_output(&shape, MaskKind::Causal, softmax, &x, Some(&h), &w).unwrap();
        assert_eq!(output, expected, "{shape:?}");
    }
}

fn rejects_a_statement_without_or_with_changed_output_norms<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[0]);
    let p = prove::<M>(&shape, softmax, 5);
    let norm = shape.output_norms.attention.unwrap();
    let changed = [
        OutputNorms { attention: None, ..shape.output_norms },
        OutputNorms { feed_forward: None, ..shape.output_norms },
        OutputNorms {
            attention: Some(zkmha_attention::norm::BlockNorm { epsilon: norm.epsilon + 1, ..norm }),
            ..shape.output_norms
        },
        OutputNorms {
            feed_forward: Some(zkmha_attention::norm::BlockNorm { scale_bits: norm.scale_bits - 1, ..norm }),
            ..shape.output_norms
        },
        OutputNorms {
            attention: Some(zkmha_attention::norm::BlockNorm { shift_bits: norm.shift_bits + 1, ..norm }),
            ..shape.output_norms
        },
    ];
    for output_norms in changed {
        let statement = ModelStatement { shape: ModelShape { output_norms, ..shape }, ..p.statement.clone() };
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{output_norms:?}");
    }
    // The proof without a norm's part.
    let mut proof = p.proof.clone();
    proof.output_norms.feed_forward = None;
    assert_eq!(
        verify_block::<M>(&p.params, &p.statement, &proof).err(),
        Some(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
}

fn rejects_another_models_output_norm_weights<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[1]);
    let p = prove::<M>(&shape, softmax, 6);
    let other = prove::<M>(&shape, softmax, 7);
    // The output norms' tables are the last four (γ_a, β_a, γ_f, β_f: LayerNorm).
    let n = p.statement.model.tables.len();
    for table in n - 4..n {
        let mut statement = p.statement.clone();
        statement.model.tables[table] = other.statement.model.tables[table].clone();
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "weight table {table}");
    }
}

fn rejects_a_changed_output<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[4]);
    let p = prove::<M>(&shape, softmax, 8);
    for index in [0, 17, p.statement.output.public().unwrap().len() - 1] {
        let mut statement = p.statement.clone();
        statement.output.public_mut().unwrap()[index] -= 1;
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "entry {index}");
    }
}

#[test]
fn shapes_and_weights_must_agree_on_the_output_norms() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[0]);
    let w = weights(&shape, 1);
    // Each output norm needs its half: the attention's the norm before it, the MLP's the MLP.
    let without_norm = ModelShape {
        norm: None,
        mlp: None,
        output_norms: OutputNorms { feed_forward: None, ..shape.output_norms },
        ..shape
    };
    assert!(matches!(without_norm.validate(), Err(AttentionError::InvalidShape(_))));
    let without_mlp = ModelShape { mlp: None, ..shape };
    assert!(matches!(without_mlp.validate(), Err(AttentionError::InvalidShape(_))));
    let params = block_hyrax_params::<zkmha_attention::mode::Plain>(&shape, softmax).unwrap();
    let mut missing = w.clone();
    missing.output_norms.feed_forward = None;
    let mut layer_norm = w.clone();
    layer_norm.output_norms.attention.as_mut().unwrap().kind = NormKind::Layer;
    let mut short = w.clone();
    short.output_norms.attention.as_mut().unwrap().scale.pop();
    for bad in [missing, layer_norm, short] {
        let mut rng = <rand_chacha::ChaCha20Rng as ark_std::rand::SeedableRng>::seed_from_u64(2);
        let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &bad, &mut rng);
        assert!(
            matches!(
                committed,
                Err(AttentionError::InvalidShape(_) | AttentionError::WrongTensorSize { .. })
            ),
            "{committed:?}"
        );
    }
}

fn query_key_shapes() -> Vec<ModelShape> {
    vec![
        // Gemma 3's layer: grouped heads sharing one key/value head, both output norms.
        with_query_key_norms(with_output_norms(with_mlp(
            with_norm(rotary(grouped(5, 4, 1, 4, 4, 12)), NormKind::Rms),
            true,
            24,
        ))),
        with_query_key_norms(with_norm(rotary(base(3, 2, 8, 4, 7)), NormKind::Rms)),
        with_query_key_norms(with_norm(rotary(base(1, 1, 4, 4, 6)), NormKind::Rms)),
    ]
}

fn query_key_norms_round_trip_and_bind_their_constants_and_weights<M: Mode>() {
    for (k, shape) in query_key_shapes().into_iter().enumerate() {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = prove::<M>(&shape, softmax, 12);
        verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        if k > 0 {
            continue;
        }
        let norms = shape.query_key_norms.unwrap();
        let changed = [
            None,
            Some(zkmha_attention::model_layer::QueryKeyNorms { query: norms.key, key: norms.query }),
            Some(zkmha_attention::model_layer::QueryKeyNorms {
                key: zkmha_attention::norm::BlockNorm { shift_bits: norms.key.shift_bits + 1, ..norms.key },
                ..norms
            }),
        ];
        for query_key_norms in changed {
            let statement =
                ModelStatement { shape: ModelShape { query_key_norms, ..shape }, ..p.statement.clone() };
            assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{query_key_norms:?}");
        }
        // Another model's γ_q or γ_k (the last two tables).
        let other = prove::<M>(&shape, softmax, 13);
        let n = p.statement.model.tables.len();
        for table in n - 2..n {
            let mut statement = p.statement.clone();
            statement.model.tables[table] = other.statement.model.tables[table].clone();
            assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "weight table {table}");
        }
        let mut proof = p.proof.clone();
        proof.query_key_norms.pop();
        assert_eq!(
            verify_block::<M>(&p.params, &p.statement, &proof).err(),
            Some(AttentionError::CheckFailed { step: "model layer proof shape" })
        );
    }
}

/// The QK-norm reads the row-major `s × h·m` table as `(s·h) × m`: each query head of each
/// token normed on its own, as a plain loop over the heads computes it.
#[test]
fn the_query_key_norm_is_one_norm_per_head() {
    let shape = query_key_shapes()[1];
    let w = weights(&shape, 3);
    let a = &shape.attention;
    let (s, h, m) = (a.seq_len, a.heads, a.head_dim);
    let queries: Vec<i64> = (0..s * h * m).map(|i| ((i * 7919) % 2001) as i64 - 1000).collect();
    let gamma = &w.query_key_norms.as_ref().unwrap().query;
    let whole =
        compute_norm(&shape.query_key_norm_shape(0).unwrap(), &queries, &gamma.scale, &gamma.bias).unwrap();
    let one_head = zkmha_attention::norm::NormShape { rows: 1, ..shape.query_key_norm_shape(0).unwrap() };
    let by_head: Vec<i64> = queries
        .chunks(m)
        .flat_map(|head| compute_norm(&one_head, head, &gamma.scale, &gamma.bias).unwrap())
        .collect();
    assert_eq!(whole, by_head);
    // And the heads are not all alike (the test can fail).
    assert_ne!(whole[..m], whole[m..2 * m]);
}

#[test]
fn query_key_norms_need_the_rotation_and_power_of_two_heads() {
    let shape = query_key_shapes()[1];
    assert!(matches!(ModelShape { rotary: None, ..shape }.validate(), Err(AttentionError::InvalidShape(_))));
    let three_heads = with_query_key_norms(with_norm(rotary(base(3, 3, 8, 4, 7)), NormKind::Rms));
    assert!(matches!(three_heads.validate(), Err(AttentionError::InvalidShape(_))));
    let [(softmax, shape), _] = softmax_modes(&shape);
    let params = block_hyrax_params::<zkmha_attention::mode::Plain>(&shape, softmax).unwrap();
    let w = weights(&shape, 1);
    let mut short = w.clone();
    short.query_key_norms.as_mut().unwrap().key.scale.pop();
    for bad in [ModelWeights { query_key_norms: None, ..w.clone() }, short] {
        let mut rng = <rand_chacha::ChaCha20Rng as ark_std::rand::SeedableRng>::seed_from_u64(2);
        let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &bad, &mut rng);
        assert!(
            matches!(
                committed,
                Err(AttentionError::InvalidShape(_) | AttentionError::WrongTensorSize { .. })
            ),
            "{committed:?}"
        );
    }
}
