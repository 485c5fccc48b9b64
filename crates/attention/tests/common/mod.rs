//! Test helpers shared by the model-layer test files: shapes, random integer weights and
//! inputs, and the plain reference of a block.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::model_layer::{ModelShape, ModelWeights};
use zkmha_attention::projection::{ProjectionShape, compute_projection};
use zkmha_attention::quantization::signed_field_to_f64;
use zkmha_attention::{
    AttentionInputs, AttentionShape, MaskKind, Residual, SoftmaxMode, SoftmaxParams, compute_witness_for_mode,
};

/// `n` integers uniform in `[−bound, bound]`.
pub fn draw(rng: &mut StdRng, n: usize, bound: i64) -> Vec<i64> {
    (0..n).map(|_| rng.gen_range(-bound..=bound)).collect()
}

/// Random 8-bit weights and 10-bit biases of `shape` (seeded).
pub fn weights(shape: &ModelShape, seed: u64) -> ModelWeights {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = &shape.attention;
    let d = shape.model_width;
    // Under grouped-query attention W_k, W_v and their biases have h_kv heads.
    let (k, v) = (shape.key_value_heads * a.head_dim, shape.key_value_heads * a.value_head_dim);
    ModelWeights {
        queries: draw(&mut rng, d * a.model_width(), 127),
        keys: draw(&mut rng, d * k, 127),
        values: draw(&mut rng, d * v, 127),
        queries_bias: draw(&mut rng, a.model_width(), 1000),
        keys_bias: draw(&mut rng, k, 1000),
        values_bias: draw(&mut rng, v, 1000),
        output: draw(&mut rng, a.value_model_width() * d, 127),
        output_bias: draw(&mut rng, d, 1000),
        norm: shape.norm.map(|norm| {
            // γ of either sign, 6 to 8 bits; β (LayerNorm) 8 bits: X = norm(H) stays near 2^10.
            let mut rng = StdRng::seed_from_u64(seed + 7);
            let scale =
                (0..d).map(|_| rng.gen_range(64..=256) * if rng.r#gen::<bool>() { 1 } else { -1 }).collect();
            let bias = if norm.bias { draw(&mut rng, d, 256) } else { Vec::new() };
            zkmha_nn::NormWeights { kind: norm.kind, scale, bias }
        }),
        feed_forward: shape.mlp.zip(shape.mlp_shape()).map(|(mlp, mlp_shape)| {
            let mut rng = StdRng::seed_from_u64(seed + 13);
            let d = shape.model_width;
            let scale =
                (0..d).map(|_| rng.gen_range(64..=256) * if rng.r#gen::<bool>() { 1 } else { -1 }).collect();
            let bias = if mlp.norm.bias { draw(&mut rng, d, 256) } else { Vec::new() };
            let mut linear = |p| {
                let projection: zkmha_attention::projection::ProjectionShape =
                    mlp_shape.projection(p).unwrap();
                zkmha_nn::LinearWeights {
                    weights: draw(&mut rng, projection.inputs * projection.outputs, 127),
                    bias: draw(&mut rng, projection.outputs, 1000),
                }
            };
            use zkmha_attention::mlp::MlpProjection;
            let up = linear(MlpProjection::Up);
            let gate = mlp.params.gate.map(|_| linear(MlpProjection::Gate));
            let down = linear(MlpProjection::Down);
            zkmha_nn::FeedForwardWeights {
                norm: zkmha_nn::NormWeights { kind: mlp.norm.kind, scale, bias },
                mlp: zkmha_nn::MlpWeights { up, gate, down },
            }
        }),
        output_norms: {
            // γ of either sign, 6 to 8 bits, like the norms': norm(Y) stays near 2^10.
            let mut rng = StdRng::seed_from_u64(seed + 29);
            let mut norm = |n: Option<zkmha_attention::norm::BlockNorm>| {
                n.map(|n| {
                    let scale = (0..d)
                        .map(|_| rng.gen_range(64..=256) * if rng.r#gen::<bool>() { 1 } else { -1 })
                        .collect();
                    let bias = if n.bias { draw(&mut rng, d, 256) } else { Vec::new() };
                    zkmha_nn::NormWeights { kind: n.kind, scale, bias }
                })
            };
            zkmha_nn::OutputNormWeights {
                attention: norm(shape.output_norms.attention),
                feed_forward: norm(shape.output_norms.feed_forward),
            }
        },
        query_key_norms: shape.query_key_norms.map(|norms| {
            // γ of either sign, 6 to 8 bits, width m: the normed heads stay near 2^9.
            let mut rng = StdRng::seed_from_u64(seed + 31);
            let m = a.head_dim;
            let mut norm = |n: zkmha_attention::norm::BlockNorm| {
                let scale = (0..m)
                    .map(|_| rng.gen_range(64..=256) * if rng.r#gen::<bool>() { 1 } else { -1 })
                    .collect();
                let bias = if n.bias { draw(&mut rng, m, 256) } else { Vec::new() };
                zkmha_nn::NormWeights { kind: n.kind, scale, bias }
            };
            zkmha_nn::QueryKeyNormWeights { query: norm(norms.query), key: norm(norms.key) }
        }),
        post_norm: shape.post_norm.map(|n| {
            // γ of either sign, 6 to 8 bits, like the norms': H' stays near 2^10.
            let mut rng = StdRng::seed_from_u64(seed + 37);
            let scale =
                (0..d).map(|_| rng.gen_range(64..=256) * if rng.r#gen::<bool>() { 1 } else { -1 }).collect();
            let bias = if n.bias { draw(&mut rng, d, 256) } else { Vec::new() };
            zkmha_nn::NormWeights { kind: n.kind, scale, bias }
        }),
    }
}

pub fn input(shape: &ModelShape, seed: u64) -> Vec<i64> {
    draw(&mut StdRng::seed_from_u64(seed), shape.attention.seq_len * shape.model_width, 127)
}

/// A pre-norm decoder's hidden state (wider than X: it is not normalized), when the shape's
/// residual takes one.
/// Under a proven norm, `|H| ≤ 3150` (within the norm's `2^20`, with an offset so LayerNorm's
/// mean is not 0).
pub fn hidden_state(shape: &ModelShape, seed: u64) -> Option<Vec<i64>> {
    shape.has_hidden_state().then(|| {
        let n = shape.attention.seq_len * shape.model_width;
        match shape.norm {
            None => draw(&mut StdRng::seed_from_u64(seed + 1000), n, 1 << 24),
            Some(_) => {
                draw(&mut StdRng::seed_from_u64(seed + 11), n, 3000).into_iter().map(|h| h + 150).collect()
            }
        }
    })
}

/// `shape` with its norm from `H` to `X` proven: RMSNorm without a shift, or LayerNorm with one
/// (`f = k`, so `X ≈ γ·(the normalized value) + β`).
pub fn with_norm(shape: ModelShape, kind: zkmha_nn::NormKind) -> ModelShape {
    let (scale_bits, bias) = match kind {
        zkmha_nn::NormKind::Rms => (24, false),
        zkmha_nn::NormKind::Layer => (28, true),
    };
    let norm = zkmha_attention::norm::BlockNorm {
        kind,
        epsilon: 3,
        scale_bits,
        shift_bits: scale_bits,
        bias,
        remainder_digits: 4,
    };
    ModelShape { residual: Residual::HiddenState, norm: Some(norm), ..shape }
}

/// The block's input: random under no proven norm, else `X = norm(H)`.
pub fn block_input(shape: &ModelShape, seed: u64) -> Vec<i64> {
    match shape.norm {
        None => input(shape, seed + 100),
        Some(_) => zkmha_attention::block::normalized_input(
            shape,
            &weights(shape, seed),
            &hidden_state(shape, seed).unwrap(),
        )
        .unwrap(),
    }
}

/// The proven softmax with shifts that keep every intermediate in range (its outputs are
/// about 2^16·|V|, hence the large output shift).
pub fn modes(shape: &ModelShape) -> [(SoftmaxMode, ModelShape); 2] {
    // Projected entries are about 127·127·√d / 2^6; a scale that gives scores of a few units.
    let scale = 1.0 / (shape.attention.head_dim as f64 * 400.0);
    let exponential = SoftmaxMode::Exponential(
        SoftmaxParams::for_score_scale(scale, shape.attention.padded_seq_len()).unwrap(),
    );
    // k_o = 20 checks the output projection's remainder in two digits; the second mode keeps
    // every remainder in one digit (and differs per projection).
    [
        (exponential, ModelShape { shifts: [6, 6, 6, 20], ..*shape }),
        (exponential, ModelShape { shifts: [6, 5, 7, 14], ..*shape }),
    ]
}

pub fn base(s: usize, h: usize, m: usize, mv: usize, d: usize) -> ModelShape {
    ModelShape {
        attention: AttentionShape::new(s, h, m, mv).unwrap(),
        model_width: d,
        shifts: [0; 4],
        residual: Residual::LayerInput,
        key_value_heads: h,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    }
}

/// `shape` (with its norm proven) with its MLP proven: GPT-2's dense GELU MLP after a
/// LayerNorm, or Llama's gated SiLU MLP after an RMSNorm, of hidden width `hidden`, with
/// shifts that keep every intermediate in range on `weights`' 8-bit weights.
pub fn with_mlp(shape: ModelShape, gated: bool, hidden: usize) -> ModelShape {
    use zkmha_attention::activation::Activation;
    use zkmha_attention::mlp::{BlockMlp, GatedProduct, MlpParams};
    let norm = shape.norm.expect("the MLP needs the proven norm before the attention");
    let params = MlpParams {
        hidden,
        activation: if gated { Activation::Silu } else { Activation::GeluTanh },
        activation_input_fraction_bits: 10,
        activation_output_fraction_bits: 10,
        activation_input_bits: 16,
        up_shift: 8,
        gate: gated.then_some(GatedProduct { gate_shift: 8, up_bits: 16 }),
        // The exact product P = A ⊙ U sits 2^12 above A: the down projection rescales it.
        down_shift: if gated { 20 } else { 8 },
    };
    ModelShape { mlp: Some(BlockMlp { norm, params }), ..shape }
}

/// Gemma 2's and 3's "sandwich": the norms on the attention's and (with the MLP) the MLP's
/// outputs before their residuals, of the block norm's kind and constants.
pub fn with_output_norms(shape: ModelShape) -> ModelShape {
    let norm = shape.norm.expect("the output norms need the proven norm before the attention");
    let output_norms = zkmha_attention::model_layer::OutputNorms {
        attention: Some(norm),
        feed_forward: shape.mlp.map(|m| m.norm),
    };
    ModelShape { output_norms, ..shape }
}

/// BERT's post-norm layer on `shape` (its residual on `X`): `X₂ = norm₂(X + Y)`, the dense GELU
/// (erf) MLP of hidden width `hidden` on it, `H' = norm_p(X₂ + MLP(X₂))`, both norms of `kind`
/// with `with_norm`'s constants.
pub fn post_norm_layer(shape: ModelShape, kind: zkmha_nn::NormKind, hidden: usize) -> ModelShape {
    let normed = with_mlp(with_norm(shape, kind), false, hidden);
    let mut mlp = normed.mlp.expect("with_mlp sets the MLP");
    mlp.params.activation = zkmha_attention::activation::Activation::GeluErf;
    ModelShape {
        residual: Residual::LayerInput,
        norm: None,
        mlp: Some(mlp),
        post_norm: normed.norm,
        ..normed
    }
}

/// BERT's layer 0 from its embeddings: [`post_norm_layer`] with the norm from `H` (the
/// embeddings' sum) to `X` proven (the embeddings' LayerNorm), the residual on `X`.
pub fn embedding_norm_layer(shape: ModelShape, hidden: usize) -> ModelShape {
    let layer = post_norm_layer(shape, zkmha_nn::NormKind::Layer, hidden);
    ModelShape { norm: layer.post_norm, ..layer }
}

/// Gemma 3's QK-norm: a norm on every query and key head before the rotation (RMSNorm, the
/// block norm's constants but for `ε`, which differs between the two).
pub fn with_query_key_norms(shape: ModelShape) -> ModelShape {
    let norm = shape.norm.expect("the QK-norm tests build on the pre-norm block");
    let query = zkmha_attention::norm::BlockNorm { epsilon: 2, ..norm };
    let query_key_norms = Some(zkmha_attention::model_layer::QueryKeyNorms { query, key: norm });
    ModelShape { query_key_norms, ..shape }
}

/// The plain reference: project, attend (the witness code), project the output, add X (or
/// the hidden state).
pub fn reference(shape: &ModelShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Vec<i64> {
    let a = &shape.attention;
    let (w, x) = (weights(shape, seed), input(shape, seed + 100));
    let project =
        |input: &[i64], inputs: usize, weights: &[i64], bias: &[i64], outputs: usize, shift: u32| {
            let p = ProjectionShape { rows: a.seq_len, inputs, outputs, shift, output_bits: None };
            compute_projection(&p, input, weights, bias).unwrap()
        };
    let d = shape.model_width;
    // Grouped-query attention, plainly: query head h reads key/value head h / (h / h_kv).
    let group = a.heads / shape.key_value_heads;
    let repeat = |compact: &[i64], rows: usize, width: usize| -> Vec<i64> {
        let narrow = shape.key_value_heads * width;
        (0..rows)
            .flat_map(|r| (0..a.heads * width).map(move |c| (r, c)))
            .map(|(r, c)| compact[r * narrow + (c / width / group) * width + c % width])
            .collect()
    };
    let (keys, keys_bias) = (repeat(&w.keys, d, a.head_dim), repeat(&w.keys_bias, 1, a.head_dim));
    let values = repeat(&w.values, d, a.value_head_dim);
    let values_bias = repeat(&w.values_bias, 1, a.value_head_dim);
    let mut inputs = AttentionInputs {
        queries: project(&x, d, &w.queries, &w.queries_bias, a.model_width(), shape.shifts[0]),
        keys: project(&x, d, &keys, &keys_bias, a.model_width(), shape.shifts[1]),
        values: project(&x, d, &values, &values_bias, a.value_model_width(), shape.shifts[2]),
    };
    // Rotary embeddings: Q and K rotated (the rotation's own reference, tested on its own).
    if let Some(rotary) = shape.rotary {
        let rotation = rotary.shape(a.seq_len, a.heads, a.head_dim);
        inputs.queries = zkmha_attention::rope::compute_rotation(&rotation, &inputs.queries).unwrap();
        inputs.keys = zkmha_attention::rope::compute_rotation(&rotation, &inputs.keys).unwrap();
    }
    let attention: Vec<i64> = compute_witness_for_mode(a, mask, softmax, &inputs)
        .unwrap()
        .output
        .iter()
        .map(|v| signed_field_to_f64(v) as i64)
        .collect();
    let projected = project(&attention, a.value_model_width(), &w.output, &w.output_bias, d, shape.shifts[3]);
    let residual = hidden_state(shape, seed).unwrap_or(x);
    residual.iter().zip(&projected).map(|(a, b)| a + b).collect()
}

pub fn small() -> ModelShape {
    base(6, 2, 4, 4, 10)
}

pub fn pre_norm(shape: ModelShape) -> ModelShape {
    ModelShape { residual: Residual::HiddenState, ..shape }
}

pub fn grouped(s: usize, h: usize, kv: usize, m: usize, mv: usize, d: usize) -> ModelShape {
    ModelShape { key_value_heads: kv, ..base(s, h, m, mv, d) }
}

pub fn rotary(shape: ModelShape) -> ModelShape {
    use zkmha_attention::rope::RotaryParams;
    ModelShape { rotary: Some(RotaryParams { base: 10_000, fraction_bits: 12 }), ..shape }
}

/// The block proven in mode `M` on `shape`'s random weights (seed `seed`), input (seed
/// `seed + 100`) and hidden state (seed `seed`), masks and blinds from a ChaCha20 seeded with
/// `seed`: the generators, the statement and the proof, checked to verify.
pub fn proven_block<M: zkmha_attention::mode::Mode>(
    shape: &ModelShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    seed: u64,
) -> (
    zkmha_pcs::HyraxParams,
    zkmha_attention::model_layer::ModelStatement,
    zkmha_attention::block::ModelBlockProof<M>,
) {
    use rand_chacha::rand_core::SeedableRng as _;
    use zkmha_attention::block::{block_hyrax_params, commit_model_with, prove_block, verify_block};
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let w = weights(shape, seed);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &w, &mut rng).unwrap();
    let h = hidden_state(shape, seed);
    let x = block_input(shape, seed);
    let (statement, proof, _) =
        prove_block::<M>(&params, shape, mask, softmax, &x, h.as_deref(), &w, &model, &blinds, &mut rng)
            .unwrap();
    verify_block::<M>(&params, &statement, &proof).unwrap();
    (params, statement, proof)
}

/// A pre-norm block (`shape.norm` set, its MLP too where `shape.mlp` is) proven in mode `M`:
/// the generators, the statement, the proof, the weights and the hidden state it was proven on.
pub struct PreNormBlock<M: zkmha_attention::mode::Mode> {
    pub params: zkmha_pcs::HyraxParams,
    pub statement: zkmha_attention::model_layer::ModelStatement,
    pub proof: zkmha_attention::block::ModelBlockProof<M>,
    pub weights: ModelWeights,
    pub hidden: Vec<i64>,
}

/// Proves a pre-norm block in mode `M` on `shape`'s random weights (seed `seed`) and hidden
/// state (seed `hidden_seed`), `X` the proven norm of it, causal, masks and blinds from a
/// ChaCha20 seeded with `seed` (not verified: the callers' attacks start from it).
pub fn prove_pre_norm<M: zkmha_attention::mode::Mode>(
    shape: &ModelShape,
    softmax: SoftmaxMode,
    seed: u64,
    hidden_seed: u64,
) -> PreNormBlock<M> {
    use rand_chacha::rand_core::SeedableRng as _;
    use zkmha_attention::block::{block_hyrax_params, commit_model_with, normalized_input, prove_block};
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let w = weights(shape, seed);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &w, &mut rng).unwrap();
    let h = hidden_state(shape, hidden_seed).unwrap();
    let x = normalized_input(shape, &w, &h).unwrap();
    let (statement, proof, _) = prove_block::<M>(
        &params,
        shape,
        MaskKind::Causal,
        softmax,
        &x,
        Some(&h),
        &w,
        &model,
        &blinds,
        &mut rng,
    )
    .unwrap();
    PreNormBlock { params, statement, proof, weights: w, hidden: h }
}
