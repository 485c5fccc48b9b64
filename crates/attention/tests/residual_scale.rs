//! The residual stream's scale `f_h` against `X`'s `f_x`. Where the residual
//! adds to `X` itself (BERT: `Z = X + Y`), the integers prove `Z_int = X_int + Y_int`, so the
//! verified output `Z_int / 2^f_h` is `X + Y` only when `f_h == f_x`: a key that says
//! otherwise makes the verifier report `2^(f_x − f_h)·X + Y` as the layer's `Z`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_attention::model_layer::{ModelCommitment, ModelShape};
use zkmha_attention::model_quantization::{FloatModelWeights, ModelQuantization};
use zkmha_attention::verifier_key::{ModelVerifierKey, WeightCommitments};
use zkmha_attention::{AttentionShape, MaskKind, Residual};

fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2.0 * scale
        })
        .collect()
}

#[test]
fn a_key_whose_residual_is_x_must_keep_the_residual_stream_at_x_scale() {
    let (s, h, m, d) = (6, 2, 4, 8);
    let shape = ModelShape {
        attention: AttentionShape::new(s, h, m, m).unwrap(),
        model_width: d,
        shifts: [1; 4],
        residual: Residual::LayerInput,
        key_value_heads: h,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let n = h * m;
    let weights = FloatModelWeights {
        queries: values(d * n, 1, 0.5),
        keys: values(d * n, 2, 0.5),
        values: values(d * n, 3, 0.5),
        queries_bias: values(n, 4, 0.1),
        keys_bias: values(n, 5, 0.1),
        values_bias: values(n, 6, 0.1),
        output: values(n * d, 7, 0.5),
        output_bias: values(d, 8, 0.05),
        norm: None,
        feed_forward: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let x = values(s * d, 9, 1.0);
    let q = ModelQuantization::calibrate(&shape, &weights, &x).unwrap();
    assert_eq!(q.hidden_fraction_bits, q.input_fraction_bits, "calibrate keeps f_h = f_x");
    let key = |quantization: ModelQuantization| ModelVerifierKey {
        description: String::new(),
        model_width: d,
        heads: h,
        head_dim: m,
        value_head_dim: m,
        mask: MaskKind::None,
        residual: Residual::LayerInput,
        key_value_heads: h,
        rotary: None,
        quantization,
        weight_commitments: WeightCommitments::Binding,
        commitment: ModelCommitment { tables: Vec::new() },
    };
    key(q).shape(s).unwrap();
    // The same integers, proofs and shapes (f_h is not in the shape), but the verified output
    // would be read at 2^−(f_x − 2): 4·(X + Y); with k_o raised by 2 to match (Y at 2^f_h),
    // 4·X + Y — a residual no BERT layer has, under a key that says "Z = X + Y".
    let skewed = ModelQuantization { hidden_fraction_bits: q.input_fraction_bits - 2, ..q };
    assert!(
        key(skewed).shape(s).is_err(),
        "a key with residual X and f_h = {} ≠ f_x = {} is accepted: its verified Z is not X + Y",
        skewed.hidden_fraction_bits,
        skewed.input_fraction_bits
    );
}
