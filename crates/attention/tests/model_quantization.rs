//! Float weights and inputs through the proven block: scales, the float64 reference, and the
//! accuracy of the proven output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::model_layer::*;
use zkmha_attention::model_quantization::*;
use zkmha_attention::{AttentionError, AttentionShape, MaskKind, Residual};

/// Roughly Gaussian values of standard deviation `sigma` (sum of uniforms).
fn normal(rng: &mut StdRng, n: usize, sigma: f64) -> Vec<f64> {
    (0..n).map(|_| (0..4).map(|_| rng.gen_range(-1.0..1.0)).sum::<f64>() * sigma * 0.866).collect()
}

fn float_weights(shape: &ModelShape, seed: u64) -> FloatModelWeights {
    let mut rng = StdRng::seed_from_u64(seed);
    let (d, n, nv) = (shape.model_width, shape.attention.model_width(), shape.attention.value_model_width());
    let (k, v) = (
        shape.key_value_heads * shape.attention.head_dim,
        shape.key_value_heads * shape.attention.value_head_dim,
    );
    let sigma = 1.0 / (d as f64).sqrt();
    FloatModelWeights {
        queries: normal(&mut rng, d * n, 2.0 * sigma),
        keys: normal(&mut rng, d * k, 2.0 * sigma),
        values: normal(&mut rng, d * v, sigma),
        queries_bias: normal(&mut rng, n, 0.1),
        keys_bias: normal(&mut rng, k, 0.1),
        values_bias: normal(&mut rng, v, 0.1),
        output: normal(&mut rng, nv * d, 1.0 / (nv as f64).sqrt()),
        output_bias: normal(&mut rng, d, 0.05),
        norm: None,
        feed_forward: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    }
}

fn shape(s: usize, h: usize, m: usize, d: usize) -> ModelShape {
    ModelShape {
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
    }
}

#[test]
fn the_proven_block_matches_float64_within_one_percent() {
    use Residual::{HiddenState, LayerInput};
    let rope = Some(zkmha_attention::rope::RotaryParams { base: 10_000, fraction_bits: 14 });
    for (s, h, kv, m, d, mask, residual, rotary) in [
        (12, 2, 2, 8, 16, MaskKind::None, LayerInput, None),
        (9, 3, 3, 4, 10, MaskKind::Causal, LayerInput, None),
        (20, 4, 4, 8, 24, MaskKind::Causal, LayerInput, None),
        (11, 2, 2, 8, 16, MaskKind::Causal, HiddenState, None),
        // Grouped-query attention: 6 query heads share 2 key/value heads.
        (10, 6, 2, 4, 24, MaskKind::Causal, HiddenState, None),
        // Llama's block: grouped, rotated, pre-norm.
        (14, 4, 2, 8, 32, MaskKind::Causal, HiddenState, rope),
    ] {
        let base = ModelShape { key_value_heads: kv, rotary, ..shape(s, h, m, d) };
        let weights = float_weights(&base, s as u64);
        let x = normal(&mut StdRng::seed_from_u64(7 + s as u64), s * d, 1.0);
        // A pre-norm decoder's hidden state: not normalized, several times X's range.
        let hidden =
            (residual == HiddenState).then(|| normal(&mut StdRng::seed_from_u64(70 + s as u64), s * d, 6.0));
        let q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
        let model_shape = q.model_shape(base.attention, d, residual, kv, base.rotary);
        let softmax = q.softmax(&base.attention).unwrap();
        let integers = q.quantize_weights(&weights).unwrap();
        let params = model_hyrax_params(&model_shape, softmax);
        let model = commit_model(&params, &model_shape, &integers).unwrap();
        let input = q.quantize_input(&x).unwrap();
        let h = hidden.as_ref().map(|h| q.quantize_hidden_state(h).unwrap());
        let (statement, proof, _) =
            prove_model_layer(&params, &model_shape, mask, softmax, &input, h.as_deref(), &integers, &model)
                .unwrap();
        verify_model_layer(&params, &statement, &proof).unwrap();
        let ours = q.dequantize_output(statement.output.public().unwrap());
        let reference =
            reference_model_layer(&model_shape, mask, &weights, &x, hidden.as_deref(), 1e-5).unwrap();
        let report = model_accuracy(hidden.as_deref().unwrap_or(&x), &ours, &reference);
        assert!(report.output.relative_l2_error < 0.01, "{q:?} {report:?}");
        assert!(report.attention.relative_l2_error < 0.02, "{q:?} {report:?}");
    }
}

/// The float norm a pre-norm decoder applies: RMSNorm (γ) or LayerNorm (γ, β).
fn float_norm(
    kind: zkmha_nn::NormKind,
    h: &[f64],
    d: usize,
    norm: &zkmha_nn::NormWeights<f64>,
    eps: f64,
) -> Vec<f64> {
    let mut x = h.to_vec();
    for row in x.chunks_mut(d) {
        let mean = if kind == zkmha_nn::NormKind::Layer { row.iter().sum::<f64>() / d as f64 } else { 0.0 };
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
        for (j, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) / (var + eps).sqrt() * norm.scale[j] + norm.bias.get(j).copied().unwrap_or(0.0);
        }
    }
    x
}

/// The norm calibrated and proven with the block: the integer `X = norm(H_int)` within 0.5 % of
/// the float norm, the proven block within 1 % of float64 on `Z` — RMSNorm (Llama's block:
/// grouped, rotated) and LayerNorm with its shift (GPT-2's).
#[test]
fn the_proven_norm_matches_float64() {
    use zkmha_nn::{NormKind, NormWeights};
    let rope = Some(zkmha_attention::rope::RotaryParams { base: 10_000, fraction_bits: 14 });
    for (kind, kv, rotary, eps) in [(NormKind::Rms, 2, rope, 1e-5), (NormKind::Layer, 4, None, 1e-5)] {
        let (s, h, m, d) = (12, 4, 8, 32);
        let base =
            ModelShape { key_value_heads: kv, rotary, residual: Residual::HiddenState, ..shape(s, h, m, d) };
        let mut rng = StdRng::seed_from_u64(31);
        let norm = NormWeights {
            kind,
            scale: (0..d).map(|_| rng.gen_range(0.3..2.5)).collect(),
            bias: if kind == NormKind::Layer { normal(&mut rng, d, 0.2) } else { Vec::new() },
        };
        let weights = FloatModelWeights { norm: Some(norm.clone()), ..float_weights(&base, 5) };
        // A residual stream with one large row (an attention sink) and an offset.
        let mut hidden: Vec<f64> = normal(&mut rng, s * d, 3.0).iter().map(|v| v + 0.7).collect();
        for v in &mut hidden[..d] {
            *v *= 12.0;
        }
        let x = float_norm(kind, &hidden, d, &norm, eps);
        let mut q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
        q.calibrate_norm(d, &norm, eps, &hidden).unwrap();
        let model_shape = q.model_shape(base.attention, d, base.residual, kv, base.rotary);
        assert_eq!(model_shape.norm.map(|n| n.kind), Some(kind));
        let softmax = q.softmax(&base.attention).unwrap();
        let integers = q.quantize_weights(&weights).unwrap();
        let h = q.quantize_hidden_state(&hidden).unwrap();
        let input = zkmha_attention::block::normalized_input(&model_shape, &integers, &h).unwrap();
        let proven_x = q.dequantize_input(&input);
        let error = proven_x.iter().zip(&x).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt()
            / x.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(error < 0.005, "{kind:?}: X within {error} of the float norm ({q:?})");
        let params = model_hyrax_params(&model_shape, softmax);
        let model = commit_model(&params, &model_shape, &integers).unwrap();
        let (statement, proof, _) = prove_model_layer(
            &params,
            &model_shape,
            MaskKind::Causal,
            softmax,
            &input,
            Some(&h),
            &integers,
            &model,
        )
        .unwrap();
        verify_model_layer(&params, &statement, &proof).unwrap();
        let ours = q.dequantize_output(statement.output.public().unwrap());
        let reference =
            reference_model_layer(&model_shape, MaskKind::Causal, &weights, &x, Some(&hidden), 1e-5).unwrap();
        let report = model_accuracy(&hidden, &ours, &reference);
        assert!(report.output.relative_l2_error < 0.01, "{kind:?}: {report:?}");
        assert!(report.attention.relative_l2_error < 0.02, "{kind:?}: {report:?}");
    }
}

/// The whole pre-norm layer calibrated and proven: the attention block with its norm, then the
/// norm after it and the MLP (GPT-2's dense GELU MLP after LayerNorms, Llama's gated SiLU MLP
/// after RMSNorms, a hidden width that is not a power of two), `H'` within 1 % of float64 and
/// the MLP's own contribution `H' − Z` within 2 %.
#[test]
fn the_proven_mlp_matches_float64() {
    use zkmha_attention::activation::Activation;
    use zkmha_nn::{FeedForwardWeights, LinearWeights, MlpWeights, NormKind, NormWeights};
    for (kind, gated, activation) in
        [(NormKind::Layer, false, Activation::GeluTanh), (NormKind::Rms, true, Activation::Silu)]
    {
        let (s, h, m, d, n) = (12, 4, 8, 32, 72);
        let base = ModelShape { residual: Residual::HiddenState, ..shape(s, h, m, d) };
        let mut rng = StdRng::seed_from_u64(41);
        let norm = |rng: &mut StdRng| NormWeights {
            kind,
            scale: (0..d).map(|_| rng.gen_range(0.3..2.5)).collect(),
            bias: if kind == NormKind::Layer { normal(rng, d, 0.2) } else { Vec::new() },
        };
        let first_norm = norm(&mut rng);
        let second_norm = norm(&mut rng);
        let linear = |rng: &mut StdRng, inputs: usize, outputs: usize| LinearWeights {
            weights: normal(rng, inputs * outputs, 1.0 / (inputs as f64).sqrt()),
            bias: if gated { vec![0.0; outputs] } else { normal(rng, outputs, 0.1) },
        };
        let mlp = MlpWeights {
            up: linear(&mut rng, d, n),
            gate: gated.then(|| linear(&mut rng, d, n)),
            down: linear(&mut rng, n, d),
        };
        let feed_forward = FeedForwardWeights { norm: second_norm, mlp };
        let weights = FloatModelWeights {
            norm: Some(first_norm.clone()),
            feed_forward: Some(feed_forward.clone()),
            ..float_weights(&base, 5)
        };
        let eps = 1e-5;
        let hidden: Vec<f64> = normal(&mut rng, s * d, 3.0).iter().map(|v| v + 0.7).collect();
        let x = float_norm(kind, &hidden, d, &first_norm, eps);
        let mut q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
        q.calibrate_norm(d, &first_norm, eps, &hidden).unwrap();
        let attention_shape = q.model_shape(base.attention, d, base.residual, h, None);
        let middle =
            reference_model_layer(&attention_shape, MaskKind::Causal, &weights, &x, Some(&hidden), 1e-5)
                .unwrap();
        q.calibrate_mlp(d, &feed_forward, eps, activation, &middle).unwrap();
        let model_shape = q.model_shape(base.attention, d, base.residual, h, None);
        assert_eq!(model_shape.mlp.map(|m| m.params.gate.is_some()), Some(gated));
        let softmax = q.softmax(&base.attention).unwrap();
        let integers = q.quantize_weights(&weights).unwrap();
        let hidden_int = q.quantize_hidden_state(&hidden).unwrap();
        let input = zkmha_attention::block::normalized_input(&model_shape, &integers, &hidden_int).unwrap();
        let params = model_hyrax_params(&model_shape, softmax);
        let model = commit_model(&params, &model_shape, &integers).unwrap();
        let (statement, proof, _) = prove_model_layer(
            &params,
            &model_shape,
            MaskKind::Causal,
            softmax,
            &input,
            Some(&hidden_int),
            &integers,
            &model,
        )
        .unwrap();
        verify_model_layer(&params, &statement, &proof).unwrap();
        let ours = q.dequantize_output(statement.output.public().unwrap());
        let reference = reference_feed_forward(&feed_forward, eps, activation, &middle, d, None);
        // On H', and on the MLP's own contribution H' − Z.
        let report = model_accuracy(&middle, &ours, &reference);
        assert!(report.output.relative_l2_error < 0.01, "{kind:?}: {report:?} ({q:?})");
        assert!(report.attention.relative_l2_error < 0.02, "{kind:?}: {report:?} ({q:?})");
    }
}

#[test]
fn a_hidden_state_beyond_the_norms_range_is_refused_in_one_sentence() {
    use zkmha_nn::{NormKind, NormWeights};
    let base = ModelShape { residual: Residual::HiddenState, ..shape(4, 2, 4, 8) };
    let norm = NormWeights { kind: NormKind::Rms, scale: vec![1.0; 8], bias: Vec::new() };
    let weights = FloatModelWeights { norm: Some(norm.clone()), ..float_weights(&base, 5) };
    let x = normal(&mut StdRng::seed_from_u64(1), 32, 1.0);
    let mut q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    // H at 2^-f_h with f_h ≈ 13: a hidden state of 10^5 reaches 2^29.6, beyond the norm's 2^28.
    let hidden = vec![1.0e5; 32];
    assert!(matches!(q.calibrate_norm(8, &norm, 1e-5, &hidden), Err(AttentionError::NumericRange(_))));
    assert!(matches!(q.calibrate_norm(8, &norm, 0.0, &x), Err(AttentionError::NumericRange(_))));
    assert!(matches!(
        q.calibrate_norm(8, &NormWeights { scale: vec![1.0; 7], ..norm }, 1e-5, &x),
        Err(AttentionError::WrongTensorSize { tensor: "γ", .. })
    ));
}

#[test]
fn the_reference_is_the_plain_formula() {
    // One token, one head: softmax of one score is 1, so Z = X + (X·W_v + b_v)·W_o + b_o.
    let base = shape(1, 1, 2, 2);
    let w = FloatModelWeights {
        queries: vec![1.0, 0.0, 0.0, 1.0],
        keys: vec![0.5, 0.0, 0.0, 0.5],
        values: vec![1.0, 2.0, 3.0, 4.0],
        queries_bias: vec![0.0; 2],
        keys_bias: vec![0.0; 2],
        values_bias: vec![0.5, -0.5],
        output: vec![1.0, 0.0, 0.0, 2.0],
        output_bias: vec![0.25, 0.0],
        norm: None,
        feed_forward: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let x = [1.0, -1.0];
    // X·W_v + b_v = [1 − 3 + 0.5, 2 − 4 − 0.5] = [−1.5, −2.5]; ·W_o = [−1.5, −5]; + b_o.
    let z = reference_model_layer(&base, MaskKind::None, &w, &x, None, 1e-5).unwrap();
    assert_eq!(z, vec![1.0 - 1.25, -1.0 - 5.0]);
    // Pre-norm: the same Y added to the hidden state instead.
    let pre_norm = ModelShape { residual: zkmha_attention::Residual::HiddenState, ..base };
    let z = reference_model_layer(&pre_norm, MaskKind::None, &w, &x, Some(&[10.0, 20.0]), 1e-5).unwrap();
    assert_eq!(z, vec![10.0 - 1.25, 20.0 - 5.0]);
    // A post-norm shape adds to X even when H is given (BERT's layer 0: H feeds its norm).
    let z = reference_model_layer(&base, MaskKind::None, &w, &x, Some(&[10.0, 20.0]), 1e-5).unwrap();
    assert_eq!(z, vec![1.0 - 1.25, -1.0 - 5.0]);
    assert!(matches!(
        reference_model_layer(&pre_norm, MaskKind::None, &w, &x, Some(&[1.0]), 1e-5),
        Err(AttentionError::WrongTensorSize { tensor: "H", .. })
    ));
}

#[test]
fn scales_are_powers_of_two_and_the_residual_scales_match() {
    let base = shape(10, 2, 8, 16);
    let weights = float_weights(&base, 3);
    let x = normal(&mut StdRng::seed_from_u64(4), 10 * 16, 1.0);
    let q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    let f_x = q.input_fraction_bits;
    let [_, _, f_v, f_o] = q.weight_fraction_bits;
    // Y's scale is X's: k_o = f_v′ + f + f_o − f_x with f = 16.
    assert_eq!(q.shifts[3] as i32, (f_x + f_v - q.shifts[2] as i32) + 16 + f_o - f_x);
    let largest = x.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    // The largest |X_int| in [2^13, 2^14): 2–4× headroom in the proven norm's ±2^15.
    assert!(largest * 2f64.powi(f_x) < 16384.0 && largest * 2f64.powi(f_x + 1) >= 16383.0);
    assert!(q.shifts.iter().all(|k| (1..=32).contains(k)));
}

#[test]
fn bad_floats_get_one_sentence() {
    let base = shape(4, 1, 4, 4);
    let weights = float_weights(&base, 5);
    let mut x = vec![0.5; 16];
    let q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    x[3] = f64::NAN;
    let e = q.quantize_input(&x).unwrap_err();
    assert!(matches!(e, AttentionError::NumericRange(_)) && e.to_string().contains("X[3]"), "{e}");
    assert!(ModelQuantization::calibrate(&base, &weights, &x).is_err());
    // Far outside the calibrated range: refused, not clamped.
    let far = vec![1e12; 16];
    let e = q.quantize_input(&far).unwrap_err();
    assert!(e.to_string().contains("calibrated"), "{e}");
    // A hidden state takes a wider range than X, but not an unbounded one.
    assert!(q.quantize_hidden_state(&[1e3; 16]).is_ok());
    let e = q.quantize_hidden_state(&far).unwrap_err();
    assert!(e.to_string().contains("H[0]"), "{e}");
    let e = q.quantize_hidden_state(&[f64::NAN]).unwrap_err();
    assert!(e.to_string().contains("H[0]"), "{e}");
    let mut bad = weights.clone();
    bad.output[0] = f64::INFINITY;
    assert!(matches!(
        ModelQuantization::calibrate(&base, &bad, &[0.5; 16]),
        Err(AttentionError::NumericRange(_))
    ));
    bad = weights;
    bad.keys.pop();
    assert!(matches!(
        ModelQuantization::calibrate(&base, &bad, &[0.5; 16]),
        Err(AttentionError::WrongTensorSize { tensor: "W_k", .. })
    ));
}

#[test]
fn the_verifier_key_pins_the_commitment_shapes_mask_and_softmax() {
    use zkmha_attention::verifier_key::{ModelVerifierKey, WeightCommitments, verify_with_key};
    let base = shape(6, 2, 4, 8);
    let weights = float_weights(&base, 11);
    let x = normal(&mut StdRng::seed_from_u64(12), 6 * 8, 1.0);
    let q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    let model_shape = q.model_shape(base.attention, 8, Residual::LayerInput, 2, None);
    let integers = q.quantize_weights(&weights).unwrap();
    let commitment = commit_model(&weights_hyrax_params(&model_shape), &model_shape, &integers).unwrap();
    let key = ModelVerifierKey {
        description: "test".into(),
        model_width: 8,
        heads: 2,
        head_dim: 4,
        value_head_dim: 4,
        mask: MaskKind::Causal,
        residual: Residual::LayerInput,
        key_value_heads: 2,
        rotary: None,
        quantization: q,
        weight_commitments: WeightCommitments::Binding,
        commitment,
    };
    let softmax = q.softmax(&base.attention).unwrap();
    let params = model_hyrax_params(&model_shape, softmax);
    let (statement, proof, _) = prove_model_layer(
        &params,
        &model_shape,
        MaskKind::Causal,
        softmax,
        &q.quantize_input(&x).unwrap(),
        None,
        &integers,
        &key.commitment,
    )
    .unwrap();
    verify_with_key(&key, &statement, &proof).unwrap();
    let failure = |key: &ModelVerifierKey| verify_with_key(key, &statement, &proof).map(|_| ()).unwrap_err();
    let step = |e: AttentionError| match e {
        AttentionError::CheckFailed { step } => step,
        other => panic!("{other}"),
    };
    let other_mask = ModelVerifierKey { mask: MaskKind::None, ..key.clone() };
    assert_eq!(step(failure(&other_mask)), "verifier key: the proof uses another mask");
    let mut other_shifts = key.clone();
    other_shifts.quantization.shifts[0] += 1;
    assert_eq!(
        step(failure(&other_shifts)),
        "verifier key: the proof's shapes or shifts differ from the key's"
    );
    let pre_norm = ModelVerifierKey { residual: Residual::HiddenState, ..key.clone() };
    assert_eq!(step(failure(&pre_norm)), "verifier key: the proof's shapes or shifts differ from the key's");
    let mut other_scale = key.clone();
    other_scale.quantization.input_fraction_bits += 1;
    // (the residual stream with it: a key whose residual adds to X keeps f_h = f_x)
    other_scale.quantization.hidden_fraction_bits += 1;
    assert_eq!(step(failure(&other_scale)), "verifier key: the proof uses another softmax");
    let mut other_model = key.clone();
    other_model.commitment.tables.swap(0, 1);
    assert_eq!(step(failure(&other_model)), "verifier key: the proof is about another model commitment");
}

#[test]
fn a_hiding_key_takes_zero_knowledge_proofs_only_and_its_secret_is_tied_to_it() {
    use rand_chacha::ChaCha20Rng;
    use zkmha_attention::block::{block_hyrax_params, commit_model_with, prove_block};
    use zkmha_attention::mode::Zk;
    use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments, verify_with_key};
    let base = shape(5, 2, 4, 8);
    let weights = float_weights(&base, 21);
    let x = normal(&mut StdRng::seed_from_u64(22), 5 * 8, 1.0);
    let q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    let model_shape = q.model_shape(base.attention, 8, Residual::LayerInput, 2, None);
    let integers = q.quantize_weights(&weights).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let commit = |rng: &mut ChaCha20Rng| {
        commit_model_with::<Zk>(&weights_hyrax_params(&model_shape), &model_shape, &integers, rng).unwrap()
    };
    let (commitment, blinds) = commit(&mut rng);
    let key = ModelVerifierKey {
        description: "test".into(),
        model_width: 8,
        heads: 2,
        head_dim: 4,
        value_head_dim: 4,
        mask: MaskKind::Causal,
        residual: Residual::LayerInput,
        key_value_heads: 2,
        rotary: None,
        quantization: q,
        weight_commitments: WeightCommitments::Hiding,
        commitment,
    };
    // The secret round-trips through bytes and gives the blinds back for its key only.
    let secret = ModelSecret::new(&key, &blinds);
    let mut bytes = Vec::new();
    secret.serialize_compressed(&mut bytes).unwrap();
    let read = ModelSecret::deserialize_compressed(bytes.as_slice()).unwrap();
    assert_eq!(read.blinds_for(&key).unwrap(), blinds);
    let (other_commitment, _) = commit(&mut rng);
    let other_key = ModelVerifierKey { commitment: other_commitment, ..key.clone() };
    assert_eq!(read.blinds_for(&other_key), Err(AttentionError::CheckFailed { step: "model secret" }));
    let binding = ModelVerifierKey { weight_commitments: WeightCommitments::Binding, ..key.clone() };
    assert_eq!(read.blinds_for(&binding), Err(AttentionError::CheckFailed { step: "model secret" }));
    // A zero-knowledge proof verifies against the hiding key and not against the same key
    // labelled binding.
    let softmax = q.softmax(&base.attention).unwrap();
    let params = block_hyrax_params::<Zk>(&model_shape, softmax).unwrap();
    let (statement, proof, _) = prove_block::<Zk>(
        &params,
        &model_shape,
        MaskKind::Causal,
        softmax,
        &q.quantize_input(&x).unwrap(),
        None,
        &integers,
        &key.commitment,
        &blinds,
        &mut rng,
    )
    .unwrap();
    verify_with_key(&key, &statement, &proof).unwrap();
    assert!(matches!(
        verify_with_key(&binding, &statement, &proof),
        Err(AttentionError::CheckFailed { step }) if step.starts_with("verifier key: the proof's mode")
    ));
    // A plain proof against the hiding key (the same commitments, read as binding ones).
    let plain_params = model_hyrax_params(&model_shape, softmax);
    let plain = prove_model_layer(
        &plain_params,
        &model_shape,
        MaskKind::Causal,
        softmax,
        &q.quantize_input(&x).unwrap(),
        None,
        &integers,
        &key.commitment,
    )
    .unwrap();
    assert!(matches!(
        verify_with_key(&key, &plain.0, &plain.1),
        Err(AttentionError::CheckFailed { step }) if step.starts_with("verifier key: the proof's mode")
    ));
}

/// Gemma 3's layer calibrated and proven: RMSNorms with `(1 + w)`-like weights, the QK-norm on
/// every query head and on the one shared key head, rotations, the norms on both halves'
/// outputs, a gated GELU MLP; `H'` within 1 % of float64, and the attention's contribution
/// `Z − H` (the measure) within 2 %. Without the QK-norm and the output norms the
/// float function differs (the test can fail).
#[test]
fn the_proven_gemma_block_matches_float64() {
    use zkmha_attention::activation::Activation;
    use zkmha_nn::{
        FeedForwardWeights, LinearWeights, MlpWeights, NormKind, NormWeights, OutputNormWeights,
        QueryKeyNormWeights,
    };
    let (s, h, kv, m, d, n) = (12, 4, 1, 8, 32, 48);
    let rope = Some(zkmha_attention::rope::RotaryParams { base: 10_000, fraction_bits: 14 });
    let base = ModelShape {
        residual: Residual::HiddenState,
        key_value_heads: kv,
        rotary: rope,
        ..shape(s, h, m, d)
    };
    let mut rng = StdRng::seed_from_u64(43);
    let rms = |rng: &mut StdRng, width: usize, low: f64, high: f64| NormWeights {
        kind: NormKind::Rms,
        scale: (0..width).map(|_| rng.gen_range(low..high)).collect(),
        bias: Vec::new(),
    };
    let first_norm = rms(&mut rng, d, 0.5, 2.0);
    let query_key =
        QueryKeyNormWeights { query: rms(&mut rng, m, 0.5, 1.5), key: rms(&mut rng, m, 0.5, 1.5) };
    let output_norms = OutputNormWeights {
        attention: Some(rms(&mut rng, d, 0.2, 3.0)),
        feed_forward: Some(rms(&mut rng, d, 0.2, 3.0)),
    };
    let linear = |rng: &mut StdRng, inputs: usize, outputs: usize| LinearWeights {
        weights: normal(rng, inputs * outputs, 1.0 / (inputs as f64).sqrt()),
        bias: vec![0.0; outputs],
    };
    let mlp = MlpWeights {
        up: linear(&mut rng, d, n),
        gate: Some(linear(&mut rng, d, n)),
        down: linear(&mut rng, n, d),
    };
    let feed_forward = FeedForwardWeights { norm: rms(&mut rng, d, 0.5, 2.0), mlp };
    let zero_biases = |w: FloatModelWeights| FloatModelWeights {
        queries_bias: vec![0.0; w.queries_bias.len()],
        keys_bias: vec![0.0; w.keys_bias.len()],
        values_bias: vec![0.0; w.values_bias.len()],
        output_bias: vec![0.0; w.output_bias.len()],
        ..w
    };
    let weights = FloatModelWeights {
        norm: Some(first_norm.clone()),
        feed_forward: Some(feed_forward.clone()),
        output_norms: output_norms.clone(),
        query_key_norms: Some(query_key.clone()),
        ..zero_biases(float_weights(&base, 6))
    };
    let eps = 1e-6;
    let activation = Activation::GeluTanh;
    let hidden: Vec<f64> = normal(&mut rng, s * d, 4.0);
    let x = float_norm(NormKind::Rms, &hidden, d, &first_norm, eps);
    let mut q = ModelQuantization::calibrate(&base, &weights, &x).unwrap();
    q.calibrate_norm(d, &first_norm, eps, &hidden).unwrap();
    let float_shape = q.model_shape(base.attention, d, base.residual, kv, rope);
    let parts = reference_attention_parts(&float_shape, MaskKind::Causal, &weights, &x, eps);
    q.calibrate_query_key_norms(m, &query_key, eps, &parts.query_projection, &parts.key_projection).unwrap();
    let middle =
        reference_model_layer(&float_shape, MaskKind::Causal, &weights, &x, Some(&hidden), eps).unwrap();
    q.calibrate_mlp(d, &feed_forward, eps, activation, &middle).unwrap();
    let mlp_output = reference_mlp_output(&feed_forward, eps, activation, &middle, d);
    q.calibrate_output_norms(d, &weights, eps, Some(&parts.projected), Some(&mlp_output)).unwrap();
    let model_shape = q.model_shape(base.attention, d, base.residual, kv, rope);
    assert!(model_shape.query_key_norms.is_some() && model_shape.output_norms.feed_forward.is_some());
    let softmax = q.softmax(&base.attention).unwrap();
    let integers = q.quantize_weights(&weights).unwrap();
    let hidden_int = q.quantize_hidden_state(&hidden).unwrap();
    let input = zkmha_attention::block::normalized_input(&model_shape, &integers, &hidden_int).unwrap();
    let params = model_hyrax_params(&model_shape, softmax);
    let model = commit_model(&params, &model_shape, &integers).unwrap();
    let (statement, proof, _) = prove_model_layer(
        &params,
        &model_shape,
        MaskKind::Causal,
        softmax,
        &input,
        Some(&hidden_int),
        &integers,
        &model,
    )
    .unwrap();
    verify_model_layer(&params, &statement, &proof).unwrap();
    let ours = q.dequantize_output(statement.output.public().unwrap());
    let reference = reference_feed_forward(
        &feed_forward,
        eps,
        activation,
        &middle,
        d,
        output_norms.feed_forward.as_ref(),
    );
    let report = model_accuracy(&hidden, &ours, &reference);
    assert!(report.output.relative_l2_error < 0.01, "{report:?} ({q:?})");
    // The attention half alone (the measure): Z − H against float64's.
    let attention_shape = ModelShape {
        mlp: None,
        output_norms: OutputNorms { feed_forward: None, ..model_shape.output_norms },
        ..model_shape
    };
    let attention_integers = ModelWeights {
        feed_forward: None,
        output_norms: zkmha_nn::OutputNormWeights { feed_forward: None, ..integers.output_norms.clone() },
        ..integers.clone()
    };
    let params = model_hyrax_params(&attention_shape, softmax);
    let model = commit_model(&params, &attention_shape, &attention_integers).unwrap();
    let (statement, proof, _) = prove_model_layer(
        &params,
        &attention_shape,
        MaskKind::Causal,
        softmax,
        &input,
        Some(&hidden_int),
        &attention_integers,
        &model,
    )
    .unwrap();
    verify_model_layer(&params, &statement, &proof).unwrap();
    let z = q.dequantize_output(statement.output.public().unwrap());
    let attention_report = model_accuracy(&hidden, &z, &middle);
    assert!(attention_report.attention.relative_l2_error < 0.02, "{attention_report:?} ({q:?})");
    println!("layer: {report:?}\nattention half: {attention_report:?}");
    // Without the Gemma norms the float function is another one.
    let plain =
        FloatModelWeights { output_norms: Default::default(), query_key_norms: None, ..weights.clone() };
    let other =
        reference_model_layer(&float_shape, MaskKind::Causal, &plain, &x, Some(&hidden), eps).unwrap();
    assert!(model_accuracy(&hidden, &other, &middle).attention.relative_l2_error > 0.1);
}
