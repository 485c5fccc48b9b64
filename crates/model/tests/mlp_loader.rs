//! The MLP loaders against model files that would be proven as something other
//! than what Hugging Face transformers computes for them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use safetensors::tensor::{Dtype, TensorView, serialize};
use std::path::{Path, PathBuf};
use zkmha_model::ModelError;
use zkmha_model::architecture::Unsupported;
use zkmha_model::model_file::ModelFile;
use zkmha_nn::Activation;

const D: usize = 8;
const KV: usize = 4;
const N: usize = 16;

/// Writes `model.safetensors` (each tensor in its own dtype, values `0.25 + k/1000`) and
/// `config.json` into a fresh directory.
fn write(dir_name: &str, tensors: &[(String, Vec<usize>, Dtype)], config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-mlp-review-{}-{dir_name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let buffers: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, shape, dtype)| {
            let n: usize = shape.iter().product();
            (0..n)
                .flat_map(|k| {
                    let v = 0.25 + k as f64 / 1000.0;
                    match dtype {
                        Dtype::F64 => v.to_le_bytes().to_vec(),
                        Dtype::F32 => (v as f32).to_le_bytes().to_vec(),
                        other => panic!("{other:?}"),
                    }
                })
                .collect()
        })
        .collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .zip(&buffers)
        .map(|((name, shape, dtype), b)| (name.clone(), TensorView::new(*dtype, shape.clone(), b).unwrap()))
        .collect();
    let path = dir.join("model.safetensors");
    std::fs::write(&path, serialize(views, None).unwrap()).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    path
}

fn cleanup(path: &Path) {
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// One whole Llama-style layer (F32) plus `extra` tensors of layer 0.
fn llama(extra: &[(&str, Vec<usize>, Dtype)]) -> Vec<(String, Vec<usize>, Dtype)> {
    let l = "model.layers.0.";
    let mut tensors: Vec<(String, Vec<usize>, Dtype)> = [
        ("model.embed_tokens.weight".to_string(), vec![10, D]),
        (format!("{l}input_layernorm.weight"), vec![D]),
        (format!("{l}self_attn.q_proj.weight"), vec![D, D]),
        (format!("{l}self_attn.k_proj.weight"), vec![KV, D]),
        (format!("{l}self_attn.v_proj.weight"), vec![KV, D]),
        (format!("{l}self_attn.o_proj.weight"), vec![D, D]),
        (format!("{l}post_attention_layernorm.weight"), vec![D]),
        (format!("{l}mlp.gate_proj.weight"), vec![N, D]),
        (format!("{l}mlp.up_proj.weight"), vec![N, D]),
        (format!("{l}mlp.down_proj.weight"), vec![D, N]),
    ]
    .into_iter()
    .map(|(n, s)| (n, s, Dtype::F32))
    .collect();
    tensors.extend(extra.iter().map(|(n, s, t)| (format!("{l}{n}"), s.clone(), *t)));
    tensors
}

fn llama_config(model_type: &str, extra: &str) -> String {
    format!(
        "{{\"model_type\": \"{model_type}\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \
         \"hidden_size\": {D}, \"intermediate_size\": {N}, \"rms_norm_eps\": 1e-6, \
         \"rope_theta\": 10000.0, \"max_position_embeddings\": 32768{extra}}}"
    )
}

fn gpt2() -> Vec<(String, Vec<usize>, Dtype)> {
    [
        ("wte.weight", vec![10, D]),
        ("h.0.ln_1.weight", vec![D]),
        ("h.0.ln_1.bias", vec![D]),
        ("h.0.attn.c_attn.weight", vec![D, 3 * D]),
        ("h.0.attn.c_attn.bias", vec![3 * D]),
        ("h.0.attn.c_proj.weight", vec![D, D]),
        ("h.0.attn.c_proj.bias", vec![D]),
        ("h.0.ln_2.weight", vec![D]),
        ("h.0.ln_2.bias", vec![D]),
        ("h.0.mlp.c_fc.weight", vec![D, 4 * D]),
        ("h.0.mlp.c_fc.bias", vec![4 * D]),
        ("h.0.mlp.c_proj.weight", vec![4 * D, D]),
        ("h.0.mlp.c_proj.bias", vec![D]),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), s, Dtype::F32))
    .collect()
}

/// The activation the model file is proven with, after its weights are read.
fn proven_activation(path: &Path) -> Result<Activation, ModelError> {
    let file = ModelFile::open(path, None, None)?;
    file.attention_weights(0)?;
    file.feed_forward_weights(0)?;
    file.activation()
}

/// Hugging Face's GPT-2 reads `activation_function` only (GPT2MLP: `ACT2FN[config.activation_function]`);
/// the Llama family reads `hidden_act` only (LlamaMLP / Qwen2MLP / MistralMLP:
/// `ACT2FN[config.hidden_act]`). The other field is an unused extra attribute: a GPT-2 config
/// whose `activation_function` is relu computes ReLU whatever `hidden_act` says, and a Llama
/// config without `hidden_act` computes SiLU (the default) whatever `activation_function` says.
#[test]
fn the_activation_is_read_from_the_field_the_family_uses() {
    let path = write(
        "gpt2-both",
        &gpt2(),
        "{\"model_type\": \"gpt2\", \"n_head\": 4, \"hidden_act\": \"gelu_new\", \"activation_function\": \"relu\"}",
    );
    let gpt2_result = proven_activation(&path);
    cleanup(&path);
    let path =
        write("llama-actfn", &llama(&[]), &llama_config("llama", ", \"activation_function\": \"gelu\""));
    match proven_activation(&path) {
        Ok(Activation::Silu) | Err(_) => {}
        Ok(other) => panic!("Llama computes SiLU (hidden_act's default); proven as {other:?}"),
    }
    cleanup(&path);
    match gpt2_result {
        Err(ModelError::Unsupported(Unsupported::Activation { name })) => assert_eq!(name, "relu"),
        other => panic!("GPT-2 computes ReLU (activation_function); proven as {other:?}"),
    }
}

/// `mlp_bias` is a LlamaConfig field: Qwen2MLP and MistralMLP build their projections with
/// `bias=False` whatever the config says, so Hugging Face drops MLP bias tensors in a qwen2 or
/// mistral checkpoint (unexpected keys) and computes the MLP without them.
#[test]
fn mlp_bias_in_config_json_is_honoured_for_llama_only() {
    for model_type in ["qwen2", "mistral"] {
        let mut extra = vec![("mlp.up_proj.bias", vec![N], Dtype::F32)];
        if model_type == "qwen2" {
            extra.extend([
                ("self_attn.q_proj.bias", vec![D], Dtype::F32),
                ("self_attn.k_proj.bias", vec![KV], Dtype::F32),
                ("self_attn.v_proj.bias", vec![KV], Dtype::F32),
            ]);
        }
        let tensors = llama(&extra);
        let path = write(
            &format!("{model_type}-mlp-bias"),
            &tensors,
            &llama_config(model_type, ", \"mlp_bias\": true"),
        );
        let file = ModelFile::open(&path, None, None).unwrap();
        match file.attention_weights(0) {
            Err(ModelError::Unsupported(Unsupported::UnexpectedBias { tensor, .. })) => {
                assert_eq!(tensor, "model.layers.0.mlp.up_proj.bias");
            }
            other => {
                let ff = file.feed_forward_weights(0).unwrap().unwrap();
                panic!(
                    "{model_type} has no MLP biases in transformers; loaded ({:?}) with b_up[0] = {}",
                    other.map(|_| ()),
                    ff.mlp.up.bias[0]
                );
            }
        }
        cleanup(&path);
    }
}

/// A bias stored as F64 (torch.save of a float64 tensor; transformers casts it to the model's
/// dtype and adds it) must be read or refused, never taken as absent (zeros).
#[test]
fn an_mlp_bias_in_another_float_type_is_not_dropped() {
    let tensors = llama(&[("mlp.down_proj.bias", vec![D], Dtype::F64)]);
    let path = write("llama-f64-bias", &tensors, &llama_config("llama", ", \"mlp_bias\": true"));
    let file = ModelFile::open(&path, None, None).unwrap();
    let read = file.attention_weights(0).and_then(|_| file.feed_forward_weights(0));
    if let Ok(Some(ff)) = read {
        assert_eq!(ff.mlp.down.bias[0], 0.25, "the F64 down_proj bias was dropped");
    }
    cleanup(&path);
}

/// Malformed MLP tensors (zero widths, empty tensors, wrong bias lengths) are errors, not
/// panics or silent zeros.
#[test]
fn malformed_mlp_tensors_are_errors_not_panics() {
    let read = |tensors: &[(String, Vec<usize>, Dtype)], config: &str, name: &str| {
        let path = write(name, tensors, config);
        let result = std::panic::catch_unwind(|| {
            let file = ModelFile::open(&path, None, None)?;
            file.attention_weights(0)?;
            file.feed_forward_weights(0)
        });
        cleanup(&path);
        match result {
            Ok(r) => r.map(|_| ()),
            Err(_) => panic!("{name}: panicked"),
        }
    };
    let with = |mut tensors: Vec<(String, Vec<usize>, Dtype)>, suffix: &str, shape: Vec<usize>| {
        let at = tensors.iter().position(|(n, _, _)| n.ends_with(suffix)).unwrap();
        tensors[at].1 = shape;
        tensors
    };
    let llama_cfg = llama_config("llama", "");
    for (name, tensors) in [
        (
            "up-zero",
            with(
                with(with(llama(&[]), "up_proj.weight", vec![0, D]), "gate_proj.weight", vec![0, D]),
                "down_proj.weight",
                vec![D, 0],
            ),
        ),
        ("down-wrong", with(llama(&[]), "down_proj.weight", vec![D, N - 1])),
        ("down-transposed", with(llama(&[]), "down_proj.weight", vec![N, D])),
        ("norm-empty", with(llama(&[]), "post_attention_layernorm.weight", vec![0])),
        ("norm-matrix", with(llama(&[]), "post_attention_layernorm.weight", vec![D, 1])),
    ] {
        assert!(read(&tensors, &llama_cfg, name).is_err(), "{name} was read");
    }
    let bias = llama(&[("mlp.down_proj.bias", vec![N], Dtype::F32)]);
    assert!(read(&bias, &llama_config("llama", ", \"mlp_bias\": true"), "bias-len").is_err());
    let gpt2_cfg = "{\"model_type\": \"gpt2\", \"n_head\": 4}";
    for (name, tensors) in [
        ("gpt2-fc-zero", with(with(gpt2(), "c_fc.weight", vec![D, 0]), "mlp.c_proj.weight", vec![0, D])),
        ("gpt2-fc-bias", with(gpt2(), "c_fc.bias", vec![4 * D - 1])),
        ("gpt2-fc-transposed", with(gpt2(), "c_fc.weight", vec![4 * D, D])),
        ("gpt2-ln2-short", with(gpt2(), "ln_2.bias", vec![D - 1])),
    ] {
        assert!(read(&tensors, gpt2_cfg, name).is_err(), "{name} was read");
    }
}
