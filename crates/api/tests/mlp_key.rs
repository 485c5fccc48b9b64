//! A key made for one activation, norm ε or rotary base must not prove a model file whose
//! config names another (the proof would attest the key's constants, not the model's: the
//! weight commitments do not cover them).
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

/// A Llama layer (hidden width 24) for the ε and rotary-base checks.
fn llama_tensors() -> Vec<(String, Vec<usize>)> {
    let (d, l) = (16, "model.layers.0.");
    [
        ("model.embed_tokens.weight".to_string(), vec![40, d]),
        (format!("{l}input_layernorm.weight"), vec![d]),
        (format!("{l}self_attn.q_proj.weight"), vec![d, d]),
        (format!("{l}self_attn.k_proj.weight"), vec![d / 2, d]),
        (format!("{l}self_attn.v_proj.weight"), vec![d / 2, d]),
        (format!("{l}self_attn.o_proj.weight"), vec![d, d]),
        (format!("{l}post_attention_layernorm.weight"), vec![d]),
        (format!("{l}mlp.gate_proj.weight"), vec![24, d]),
        (format!("{l}mlp.up_proj.weight"), vec![24, d]),
        (format!("{l}mlp.down_proj.weight"), vec![d, 24]),
    ]
    .to_vec()
}

fn llama_config(epsilon: &str, base: &str) -> String {
    format!(
        "{{\"model_type\": \"llama\", \"num_attention_heads\": 4, \"rms_norm_eps\": {epsilon}, \
         \"rope_theta\": {base}, \"hidden_act\": \"silu\"}}"
    )
}

#[test]
fn a_key_of_another_norm_epsilon_or_rotary_base_does_not_prove_the_model() {
    let dir = std::env::temp_dir().join(format!("zkmha-config-key-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = write_safetensors(&dir, 5, &llama_tensors(), Some(&llama_config("1e-5", "10000.0"))).unwrap();
    let model = Model::open(&path, &ModelOptions::default()).unwrap();
    let committed = commit_model(&model, WeightCommitments::Binding).unwrap();
    let input = ModelInput::Tokens(vec![1, 2, 3, 4]);
    prove(&committed.key, None, &model, &input).unwrap();
    for (config, field) in [
        (llama_config("1e-2", "10000.0"), "the norm's ε"),
        (llama_config("1e-5", "500000.0"), "the rotary base"),
    ] {
        let path = write_safetensors(&dir, 5, &llama_tensors(), Some(&config)).unwrap();
        let model = Model::open(&path, &ModelOptions::default()).unwrap();
        match prove(&committed.key, None, &model, &input) {
            Err(zkmha_api::Error::ConfigDiffersFromKey { field: found, .. }) => assert_eq!(found, field),
            other => panic!("{field}: {:?}", other.map(|p| p.accuracy)),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
