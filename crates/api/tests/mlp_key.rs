//! A key made for one activation must not prove a model file whose config
//! names another (the proof would attest the key's activation, not the model's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_api::example_model::write_safetensors;
use zkmha_api::{Model, ModelInput, ModelOptions, WeightCommitments, commit_model, prove};

fn gpt2_tensors() -> Vec<(String, Vec<usize>)> {
    let d = 16;
    [
        ("wte.weight", vec![40, d]),
        ("wpe.weight", vec![32, d]),
        ("h.0.ln_1.weight", vec![d]),
        ("h.0.ln_1.bias", vec![d]),
        ("h.0.attn.c_attn.weight", vec![d, 3 * d]),
        ("h.0.attn.c_attn.bias", vec![3 * d]),
        ("h.0.attn.c_proj.weight", vec![d, d]),
        ("h.0.attn.c_proj.bias", vec![d]),
        ("h.0.ln_2.weight", vec![d]),
        ("h.0.ln_2.bias", vec![d]),
        ("h.0.mlp.c_fc.weight", vec![d, 4 * d]),
        ("h.0.mlp.c_fc.bias", vec![4 * d]),
        ("h.0.mlp.c_proj.weight", vec![4 * d, d]),
        ("h.0.mlp.c_proj.bias", vec![d]),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), s))
    .collect()
}

fn config(activation: &str) -> String {
    format!(
        "{{\"model_type\": \"gpt2\", \"n_head\": 4, \"n_embd\": 16, \"n_positions\": 32, \
         \"activation_function\": \"{activation}\"}}"
    )
}

#[test]
fn a_key_of_another_activation_does_not_prove_the_model() {
    let dir = std::env::temp_dir().join(format!("zkmha-mlp-key-review-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = write_safetensors(&dir, 3, &gpt2_tensors(), Some(&config("gelu_new"))).unwrap();
    let model = Model::open(&path, &ModelOptions::default()).unwrap();
    let committed = commit_model(&model, WeightCommitments::Binding).unwrap();
    // The same weights, but the config now says the erf GELU: another model.
    let path = write_safetensors(&dir, 3, &gpt2_tensors(), Some(&config("gelu"))).unwrap();
    let model = Model::open(&path, &ModelOptions::default()).unwrap();
    assert_eq!(model.activation(), Some(zkmha_attention::activation::Activation::GeluErf));
    let proved = prove(&committed.key, None, &model, &ModelInput::Tokens(vec![1, 2, 3, 4]));
    assert!(
        proved.is_err(),
        "a key made for gelu_new proved a model file whose config says gelu: {:?}",
        proved.map(|p| p.accuracy)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
