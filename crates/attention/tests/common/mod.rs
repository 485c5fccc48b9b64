//! Test helpers shared by the model-layer test files: random integer weights of a shape.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::model_layer::{ModelShape, ModelWeights};

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
    }
}
