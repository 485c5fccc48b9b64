//! BERT's post-norm layer proven as one block: `Z = X + Y`, `X₂ = norm₂(Z)`, `Y₂ = MLP(X₂)`,
//! `H' = norm_p(X₂ + Y₂)`, in both modes: round trips on several shapes (one token, widths that
//! are not powers of two, grouped heads, LayerNorm and RMSNorm), the output against a plain
//! composition of the steps' forward passes, a committed output (a chain's boundary), and
//! statements that drop or change the post-norm, its weights or the output. The malicious
//! provers are in `src/block_attack_post_norm.rs` (they change the honest prover at one step).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common::{
    self, base, block_input, embedding_norm_layer, grouped, hidden_state, modes as softmax_modes,
    post_norm_layer, weights,
};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::block::{
    BlockEnds, ModelBlockProof, block_hyrax_params, block_output, commit_boundary, commit_model_with,
    prove_block, prove_linked_block, verify_block,
};
use zkmha_attention::mlp::compute_mlp;
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::norm::{BlockNorm, NormKind, compute_norm};
use zkmha_attention::{AttentionError, MaskKind, Residual, SoftmaxMode};
use zkmha_pcs::HyraxParams;

in_both_modes!(
    round_trips_on_several_shapes,
    a_committed_output_round_trips_and_binds_its_commitment,
    rejects_a_statement_without_or_with_a_changed_post_norm,
    rejects_another_models_post_norm_weights,
    rejects_a_changed_output,
    rejects_a_proof_without_its_post_norm_part,
    three_post_norm_layers_chain_through_their_inputs,
    layer_zero_binds_its_hidden_state_and_its_norm,
);

fn shapes() -> Vec<ModelShape> {
    vec![
        // all-MiniLM-L6-v2's layer in miniature: LayerNorms with β, the erf GELU.
        post_norm_layer(base(5, 2, 4, 4, 10), NormKind::Layer, 24),
        // One token: the norms' appended zero row.
        post_norm_layer(base(1, 2, 4, 4, 12), NormKind::Layer, 16),
        // Widths that are not powers of two.
        post_norm_layer(base(3, 1, 2, 2, 3), NormKind::Layer, 5),
        post_norm_layer(base(7, 3, 4, 4, 9), NormKind::Layer, 11),
        // RMSNorm, grouped heads.
        post_norm_layer(grouped(6, 4, 2, 4, 4, 16), NormKind::Rms, 20),
        // BERT's layer 0: the embeddings' LayerNorm from H to X proven too (its residual on X).
        embedding_norm_layer(base(4, 2, 4, 4, 10), 20),
        embedding_norm_layer(base(1, 2, 4, 4, 12), 16),
    ]
}

struct Proved<M: Mode> {
    params: HyraxParams,
    statement: ModelStatement,
    proof: ModelBlockProof<M>,
}

fn prove<M: Mode>(shape: &ModelShape, softmax: SoftmaxMode, seed: u64) -> Proved<M> {
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let w = weights(shape, seed);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &w, &mut rng).unwrap();
    let x = block_input(shape, seed);
    let h = hidden_state(shape, seed);
    let (statement, proof, _) = prove_block::<M>(
        &params,
        shape,
        MaskKind::None,
        softmax,
        &x,
        h.as_deref(),
        &w,
        &model,
        &blinds,
        &mut rng,
    )
    .unwrap();
    Proved { params, statement, proof }
}

fn round_trips_on_several_shapes<M: Mode>() {
    for shape in shapes() {
        for (softmax, shape) in softmax_modes(&shape) {
            let p = prove::<M>(&shape, softmax, 3);
            verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        }
    }
}

/// The block's output, plainly: the attention block alone (no MLP, no post-norm) gives
/// `Z = X + Y`; then `X₂ = norm₂(Z)`, `Y₂ = MLP(X₂)`, `H' = norm_p(X₂ + Y₂)`, each step's
/// forward pass on its own.
#[test]
fn the_output_is_the_post_norm_of_the_normed_middle_plus_the_mlp() {
    for shape in shapes() {
        let [_, (softmax, shape)] = softmax_modes(&shape);
        let w = weights(&shape, 4);
        // X: the input, or (BERT's layer 0) the norm of the hidden state H, on its own.
        let x = block_input(&shape, 4);
        let h = hidden_state(&shape, 4);
        if let (Some(norm), Some(h)) = (shape.norm_shape(), &h) {
            let n = w.norm.as_ref().unwrap();
            assert_eq!(x, compute_norm(&norm, h, &n.scale, &n.bias).unwrap());
        }
        let bare = ModelShape { norm: None, mlp: None, post_norm: None, ..shape };
        let bare_weights = ModelWeights { norm: None, feed_forward: None, post_norm: None, ..w.clone() };
        let z = block_output(&bare, MaskKind::None, softmax, &x, None, &bare_weights).unwrap();
        let f = w.feed_forward.as_ref().unwrap();
        let x2 = compute_norm(&shape.mlp_norm_shape().unwrap(), &z, &f.norm.scale, &f.norm.bias).unwrap();
        let y2 = compute_mlp(&shape.mlp_shape().unwrap(), &x2, &f.mlp).unwrap().output().to_vec();
        let sum: Vec<i64> = x2.iter().zip(&y2).map(|(a, b)| a + b).collect();
        let post = w.post_norm.as_ref().unwrap();
        let post_shape = shape.post_norm_shape().unwrap();
        let expected = compute_norm(&post_shape, &sum, &post.scale, &post.bias).unwrap();
        // The post-norm did something, and the residual adds to X₂, not Z.
        assert_ne!(expected, sum);
        let pre_norm_residual: Vec<i64> = z.iter().zip(&y2).map(|(a, b)| a + b).collect();
        let other = compute_norm(&post_shape, &pre_norm_residual, &post.scale, &post.bias).unwrap();
        assert_ne!(expected, other, "{shape:?}: the two residuals are told apart");
        let output = block_output(&shape, MaskKind::None, softmax, &x, h.as_deref(), &w).unwrap();
        assert_eq!(output, expected, "{shape:?}");
    }
}

fn a_committed_output_round_trips_and_binds_its_commitment<M: Mode>() {
    for shape in [shapes()[0], shapes()[1]] {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let w = weights(&shape, 9);
        let (model, blinds) = commit_model_with::<M>(&params, &shape, &w, &mut rng).unwrap();
        let x = block_input(&shape, 9);
        let output = block_output(&shape, MaskKind::None, softmax, &x, None, &w).unwrap();
        let boundary = commit_boundary::<M>(&params, &shape, softmax, output.clone(), &mut rng).unwrap();
        let ends = BlockEnds { input: None, output: Some(&boundary) };
        let (statement, proof, _) = prove_linked_block::<M>(
            &params,
            &shape,
            MaskKind::None,
            softmax,
            &x,
            ends,
            &w,
            &model,
            &blinds,
            &mut rng,
        )
        .unwrap();
        assert!(proof.committed_output.is_none(), "the post-norm claims the output, not r_z");
        verify_block::<M>(&params, &statement, &proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        // A commitment to another output (one entry off) is refused.
        let mut wrong = output.clone();
        wrong[0] += 1;
        let other = commit_boundary::<M>(&params, &shape, softmax, wrong, &mut rng).unwrap();
        let mut forged = statement.clone();
        forged.output = zkmha_attention::model_layer::LayerOutput::Committed(other.commitment);
        assert!(verify_block::<M>(&params, &forged, &proof).is_err());
        // The committed output's proof does not verify as a public one, nor the reverse.
        let mut public = statement.clone();
        public.output = zkmha_attention::model_layer::LayerOutput::Public(output);
        assert!(verify_block::<M>(&params, &public, &proof).is_err());
    }
}

fn rejects_a_statement_without_or_with_a_changed_post_norm<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[0]);
    let p = prove::<M>(&shape, softmax, 5);
    let norm = shape.post_norm.unwrap();
    let changed = [
        None,
        Some(BlockNorm { epsilon: norm.epsilon + 1, ..norm }),
        Some(BlockNorm { scale_bits: norm.scale_bits - 1, ..norm }),
        Some(BlockNorm { shift_bits: norm.shift_bits + 1, ..norm }),
        Some(BlockNorm { kind: NormKind::Rms, ..norm }),
    ];
    for post_norm in changed {
        let statement = ModelStatement { shape: ModelShape { post_norm, ..shape }, ..p.statement.clone() };
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{post_norm:?}");
    }
}

fn rejects_another_models_post_norm_weights<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[0]);
    let p = prove::<M>(&shape, softmax, 6);
    let other = prove::<M>(&shape, softmax, 7);
    // The post-norm's tables are the last two (γ_p, β_p: LayerNorm).
    let n = p.statement.model.tables.len();
    for table in n - 2..n {
        let mut statement = p.statement.clone();
        statement.model.tables[table] = other.statement.model.tables[table].clone();
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "weight table {table}");
    }
    // And the MLP norm's γ₂ in γ_p's place.
    let mut statement = p.statement.clone();
    statement.model.tables.swap(n - 2, 8);
    assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err());
}

fn rejects_a_changed_output<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[3]);
    let p = prove::<M>(&shape, softmax, 8);
    for index in [0, 17, p.statement.output.public().unwrap().len() - 1] {
        let mut statement = p.statement.clone();
        statement.output.public_mut().unwrap()[index] -= 1;
        // (The output is absorbed with the statement: the first check that reads a challenge
        // fails; the malicious provers keep the transcript and meet the public output's check.)
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "entry {index}");
    }
}

fn rejects_a_proof_without_its_post_norm_part<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[1]);
    let p = prove::<M>(&shape, softmax, 10);
    let shape_error = Some(AttentionError::CheckFailed { step: "model layer proof shape" });
    let mut proof = p.proof.clone();
    proof.post_norm = None;
    assert_eq!(verify_block::<M>(&p.params, &p.statement, &proof).err(), shape_error);
    let mut proof = p.proof.clone();
    proof.post_norm.as_mut().unwrap().public_output = None;
    assert_eq!(verify_block::<M>(&p.params, &p.statement, &proof).err(), shape_error);
    let mut proof = p.proof.clone();
    proof.post_norm.as_mut().unwrap().residual_values.pop();
    assert_eq!(verify_block::<M>(&p.params, &p.statement, &proof).err(), shape_error);
}

#[test]
fn the_post_norm_needs_the_post_norm_block() {
    let [(_, shape), _] = softmax_modes(&shapes()[0]);
    shape.validate().unwrap();
    let norm = shape.post_norm.unwrap();
    let invalid = [
        ModelShape { mlp: None, ..shape },
        ModelShape { residual: Residual::HiddenState, ..shape },
        ModelShape { norm: Some(norm), residual: Residual::HiddenState, ..shape },
        ModelShape {
            output_norms: common::with_output_norms(common::with_norm(shape, NormKind::Layer)).output_norms,
            ..shape
        },
    ];
    for bad in invalid {
        assert!(matches!(bad.validate(), Err(AttentionError::InvalidShape(_))), "{bad:?}");
    }
    // Shapes and weights must agree.
    let [(softmax, _), _] = softmax_modes(&shape);
    let params = block_hyrax_params::<zkmha_attention::mode::Plain>(&shape, softmax).unwrap();
    let w = weights(&shape, 1);
    let mut short = w.clone();
    short.post_norm.as_mut().unwrap().bias.pop();
    let mut rms = w.clone();
    rms.post_norm.as_mut().unwrap().kind = NormKind::Rms;
    for bad in [ModelWeights { post_norm: None, ..w.clone() }, short, rms] {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let committed = commit_model_with::<zkmha_attention::mode::Plain>(&params, &shape, &bad, &mut rng);
        assert!(
            matches!(
                committed,
                Err(AttentionError::InvalidShape(_) | AttentionError::WrongTensorSize { .. })
            ),
            "{committed:?}"
        );
    }
    let bare = ModelShape { post_norm: None, ..shape };
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    // (The bare shape's MLP needs a norm before it: it is refused as a shape.)
    assert!(commit_model_with::<zkmha_attention::mode::Plain>(&params, &bare, &w, &mut rng).is_err());
}

/// Three post-norm layers chained: layer ℓ's input `X_ℓ` is the boundary layer ℓ − 1 outputs
/// (committed once, byte-equal on both sides); proven out of order, the links hold and every
/// proof verifies. A layer proven from another input, a layer repeated, and an input boundary
/// on a block that is not post-norm are refused.
fn three_post_norm_layers_chain_through_their_inputs<M: Mode>() {
    use zkmha_attention::layer_chain::check_links;
    let [(softmax, shape), _] = softmax_modes(&shapes()[0]);
    let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let layers: Vec<ModelWeights> = (0..3).map(|l| weights(&shape, 30 + l)).collect();
    let models: Vec<_> =
        layers.iter().map(|w| commit_model_with::<M>(&params, &shape, w, &mut rng).unwrap()).collect();
    let mut values = vec![block_input(&shape, 30)];
    for w in &layers {
        let next = block_output(&shape, MaskKind::None, softmax, values.last().unwrap(), None, w).unwrap();
        values.push(next);
    }
    let boundaries: Vec<_> = values
        .iter()
        .map(|v| commit_boundary::<M>(&params, &shape, softmax, v.clone(), &mut rng).unwrap())
        .collect();
    let mut prove = |l: usize, input: usize| {
        let ends = BlockEnds { input: Some(&boundaries[input]), output: (l < 2).then(|| &boundaries[l + 1]) };
        let (model, blinds) = &models[l];
        prove_linked_block::<M>(
            &params,
            &shape,
            MaskKind::None,
            softmax,
            &values[input],
            ends,
            &layers[l],
            model,
            blinds,
            &mut rng,
        )
    };
    // Out of order: 2, 0, 1.
    let mut links: Vec<Option<(ModelStatement, ModelBlockProof<M>)>> = vec![None, None, None];
    for l in [2, 0, 1] {
        let (statement, proof, _) = prove(l, l).unwrap();
        links[l] = Some((statement, proof));
    }
    let links: Vec<(ModelStatement, ModelBlockProof<M>)> = links.into_iter().map(Option::unwrap).collect();
    check_links(links.iter().map(|(s, _)| s), 3).unwrap();
    for (l, (statement, proof)) in links.iter().enumerate() {
        assert_eq!(statement.input, boundaries[l].commitment, "layer {l} starts from its boundary");
        verify_block::<M>(&params, statement, proof).unwrap_or_else(|e| panic!("layer {l}: {e}"));
    }
    // Layer 1 proven from layer 0's input (another hidden state): its values are not the
    // boundary it claims as output, so the prover refuses; proven with its own output boundary
    // left public, the links break.
    assert!(matches!(prove(1, 0), Err(AttentionError::InvalidShape(_))));
    let broken = [links[0].clone(), links[0].clone(), links[2].clone()];
    assert!(matches!(
        check_links(broken.iter().map(|(s, _)| s), 3),
        Err(AttentionError::BrokenChain { layer: 1, .. })
    ));
    // A post-norm statement's boundary is its input X whatever other commitment it holds: one
    // naming the previous output as a residual, on another input, does not link.
    let mut posing = links.clone();
    posing[1].0.residual = posing[0].0.output.commitment().cloned();
    posing[1].0.input = boundaries[0].commitment.clone();
    assert!(matches!(
        check_links(posing.iter().map(|(s, _)| s), 3),
        Err(AttentionError::BrokenChain { layer: 1, .. })
    ));
    let swapped = [links[1].clone(), links[0].clone(), links[2].clone()];
    assert!(matches!(
        check_links(swapped.iter().map(|(s, _)| s), 3),
        Err(AttentionError::BrokenChain { .. })
    ));
    // An input boundary on a block without the post-norm (BERT's attention block alone).
    let bare = ModelShape { mlp: None, post_norm: None, ..shape };
    let bare_weights = ModelWeights { feed_forward: None, post_norm: None, ..layers[0].clone() };
    let (model, blinds) = commit_model_with::<M>(&params, &bare, &bare_weights, &mut rng).unwrap();
    let refused = prove_linked_block::<M>(
        &params,
        &bare,
        MaskKind::None,
        softmax,
        &values[0],
        BlockEnds { input: Some(&boundaries[0]), output: None },
        &bare_weights,
        &model,
        &blinds,
        &mut rng,
    );
    assert!(matches!(refused, Err(AttentionError::InvalidShape(_))));
}

/// BERT's layer 0 (the embeddings' LayerNorm from `H` to `X` proven, the residual on `X`): its
/// statement commits to `H` and states the norm; one without `H`, with `X`'s commitment or
/// another `H`'s in its place, or without the norm, is refused.
fn layer_zero_binds_its_hidden_state_and_its_norm<M: Mode>() {
    let [(softmax, shape), _] = softmax_modes(&shapes()[5]);
    assert!(shape.norm.is_some() && shape.has_hidden_state());
    let p = prove::<M>(&shape, softmax, 11);
    verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap();
    let other = prove::<M>(&shape, softmax, 12);
    let mut without = p.statement.clone();
    without.residual = None;
    let mut x_as_h = p.statement.clone();
    x_as_h.residual = Some(p.statement.input.clone());
    let mut other_h = p.statement.clone();
    other_h.residual = other.statement.residual.clone();
    let mut no_norm = p.statement.clone();
    no_norm.shape.norm = None;
    no_norm.residual = None;
    for (what, statement) in
        [("no H", without), ("X as H", x_as_h), ("another H", other_h), ("no norm", no_norm)]
    {
        assert!(verify_block::<M>(&p.params, &statement, &p.proof).is_err(), "{what}");
    }
}
