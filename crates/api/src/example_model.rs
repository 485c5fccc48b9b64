//! Small synthetic models with seeded random weights, written as safetensors files: for
//! examples, doc-tests and tests that need a model file but not a real one (a real model's
//! layer proves the same way, only slower).

use crate::error::{Error, Result};
use safetensors::tensor::{Dtype, TensorView, serialize};
use std::path::{Path, PathBuf};

/// `d_model` of [`write_bert`]'s model.
pub const MODEL_WIDTH: usize = 16;
/// The vocabulary of [`write_bert`]'s model.
pub const VOCABULARY: usize = 40;

/// The hidden width of [`write_bert`]'s MLP.
pub const BERT_HIDDEN: usize = 32;

/// Writes a one-layer BERT-style model (`d_model` 16, 4 heads of 4, an erf-GELU MLP of 32, a
/// vocabulary of 40, 32 positions) to `dir/model.safetensors` with its `config.json`; returns
/// the model's path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-example-{}", std::process::id()));
/// let path = zkmha_api::example_model::write_bert(&dir, 7)?;
/// assert!(path.ends_with("model.safetensors") && dir.join("config.json").exists());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Write`] when `dir` cannot be made or written.
pub fn write_bert(dir: &Path, seed: u32) -> Result<PathBuf> {
    write_safetensors(dir, seed, &bert_tensors(None), Some(&bert_config(4)))
}

/// [`write_bert`] with `layers` whole post-norm layers.
///
/// # Errors
/// As [`write_bert`].
pub fn write_bert_layers(dir: &Path, seed: u32, layers: usize) -> Result<PathBuf> {
    write_safetensors(dir, seed, &bert_layer_tensors(layers, None), Some(&bert_config(4)))
}

/// The hidden width of [`write_llama`]'s MLP.
pub const LLAMA_HIDDEN: usize = 40;

/// Writes a Llama-style model with `layers` whole layers (seeded random weights) (`d_model` 16, 4 query heads of 4
/// sharing 2 key/value heads, rotary embeddings, RMSNorm, a gated SiLU MLP of 40, a vocabulary
/// of 40; Hugging Face's names) to `dir/model.safetensors` with its `config.json`; returns the
/// model's path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-llama-{}", std::process::id()));
/// let path = zkmha_api::example_model::write_llama(&dir, 7, 2)?;
/// assert!(path.ends_with("model.safetensors"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Write`] when `dir` cannot be made or written.
pub fn write_llama(dir: &Path, seed: u32, layers: usize) -> Result<PathBuf> {
    write_safetensors(dir, seed, &llama_tensors(layers), Some(&llama_config(layers)))
}

/// The tensors of [`write_llama`]'s model of `layers` layers (its final norm last).
pub fn llama_tensors(layers: usize) -> Vec<(String, Vec<usize>)> {
    let (d, hidden) = (MODEL_WIDTH, LLAMA_HIDDEN);
    let mut tensors = vec![("model.embed_tokens.weight".to_string(), vec![VOCABULARY, d])];
    for layer in 0..layers {
        let l = format!("model.layers.{layer}.");
        tensors.extend([
            (format!("{l}input_layernorm.weight"), vec![d]),
            (format!("{l}self_attn.q_proj.weight"), vec![d, d]),
            (format!("{l}self_attn.k_proj.weight"), vec![d / 2, d]),
            (format!("{l}self_attn.v_proj.weight"), vec![d / 2, d]),
            (format!("{l}self_attn.o_proj.weight"), vec![d, d]),
            (format!("{l}post_attention_layernorm.weight"), vec![d]),
            (format!("{l}mlp.gate_proj.weight"), vec![hidden, d]),
            (format!("{l}mlp.up_proj.weight"), vec![hidden, d]),
            (format!("{l}mlp.down_proj.weight"), vec![d, hidden]),
        ]);
    }
    // The final norm (the LM head is tied to the embeddings).
    tensors.push(("model.norm.weight".to_string(), vec![d]));
    tensors
}

/// The `config.json` of [`write_llama`]'s model.
pub fn llama_config(layers: usize) -> String {
    format!(
        "{{\"model_type\": \"llama\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \
         \"num_hidden_layers\": {layers}, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0, \"hidden_act\": \"silu\"}}"
    )
}

/// Writes a Gemma-3-style model with `layers` whole layers (seeded random weights; `d_model`
/// 16, 4 query heads of 4 sharing 1 key/value head, the QK-norm, the norms on each half's
/// output, a gated tanh-GELU MLP of 40, a vocabulary of 40, every second layer global and the
/// others sliding through a window of 2 tokens with their own rotary base; Hugging Face's
/// names, its norms' scales stored as `w` for `1 + w`) to `dir/model.safetensors` with its
/// `config.json`; returns the model's path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-gemma3-{}", std::process::id()));
/// let path = zkmha_api::example_model::write_gemma3(&dir, 7, 2)?;
/// let model = zkmha_api::Model::open(&path, &Default::default())?;
/// assert!(model.float_weights().query_key_norms.is_some());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Write`] when `dir` cannot be made or written.
pub fn write_gemma3(dir: &Path, seed: u32, layers: usize) -> Result<PathBuf> {
    write_safetensors(dir, seed, &gemma3_tensors(layers), Some(&gemma3_config(layers)))
}

/// The tensors of [`write_gemma3`]'s model of `layers` layers (its final norm last).
pub fn gemma3_tensors(layers: usize) -> Vec<(String, Vec<usize>)> {
    let (d, hidden, m) = (MODEL_WIDTH, LLAMA_HIDDEN, 4);
    let mut tensors = vec![("model.embed_tokens.weight".to_string(), vec![VOCABULARY, d])];
    for layer in 0..layers {
        let l = format!("model.layers.{layer}.");
        tensors.extend([
            (format!("{l}input_layernorm.weight"), vec![d]),
            (format!("{l}self_attn.q_proj.weight"), vec![d, d]),
            (format!("{l}self_attn.k_proj.weight"), vec![m, d]),
            (format!("{l}self_attn.v_proj.weight"), vec![m, d]),
            (format!("{l}self_attn.o_proj.weight"), vec![d, d]),
            (format!("{l}self_attn.q_norm.weight"), vec![m]),
            (format!("{l}self_attn.k_norm.weight"), vec![m]),
            (format!("{l}post_attention_layernorm.weight"), vec![d]),
            (format!("{l}pre_feedforward_layernorm.weight"), vec![d]),
            (format!("{l}post_feedforward_layernorm.weight"), vec![d]),
            (format!("{l}mlp.gate_proj.weight"), vec![hidden, d]),
            (format!("{l}mlp.up_proj.weight"), vec![hidden, d]),
            (format!("{l}mlp.down_proj.weight"), vec![d, hidden]),
        ]);
    }
    tensors.push(("model.norm.weight".to_string(), vec![d]));
    tensors
}

/// The `config.json` of [`write_gemma3`]'s model.
pub fn gemma3_config(layers: usize) -> String {
    format!(
        "{{\"model_type\": \"gemma3_text\", \"architectures\": [\"Gemma3ForCausalLM\"], \
         \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 4, \
         \"num_hidden_layers\": {layers}, \"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \
         \"rope_local_base_freq\": 10000.0, \"query_pre_attn_scalar\": 4, \"sliding_window\": 2, \
         \"sliding_window_pattern\": 2, \"max_position_embeddings\": 64, \
         \"hidden_activation\": \"gelu_pytorch_tanh\"}}"
    )
}

/// The tensors of [`write_bert`]'s model, less `drop` (to make a model that lacks one).
pub fn bert_tensors(drop: Option<&str>) -> Vec<(String, Vec<usize>)> {
    bert_layer_tensors(1, drop)
}

/// The tensors of a BERT-style model of `layers` layers ([`write_bert_layers`]), less `drop`.
pub fn bert_layer_tensors(layers: usize, drop: Option<&str>) -> Vec<(String, Vec<usize>)> {
    let (d, n) = (MODEL_WIDTH, BERT_HIDDEN);
    let mut tensors = vec![
        ("embeddings.word_embeddings.weight".to_string(), vec![VOCABULARY, d]),
        ("embeddings.position_embeddings.weight".to_string(), vec![32, d]),
        ("embeddings.token_type_embeddings.weight".to_string(), vec![2, d]),
        ("embeddings.LayerNorm.weight".to_string(), vec![d]),
        ("embeddings.LayerNorm.bias".to_string(), vec![d]),
    ];
    for layer in 0..layers {
        let l = format!("encoder.layer.{layer}.");
        tensors.extend([
            (format!("{l}attention.self.query.weight"), vec![d, d]),
            (format!("{l}attention.self.query.bias"), vec![d]),
            (format!("{l}attention.self.key.weight"), vec![d, d]),
            (format!("{l}attention.self.key.bias"), vec![d]),
            (format!("{l}attention.self.value.weight"), vec![d, d]),
            (format!("{l}attention.self.value.bias"), vec![d]),
            (format!("{l}attention.output.dense.weight"), vec![d, d]),
            (format!("{l}attention.output.dense.bias"), vec![d]),
            (format!("{l}attention.output.LayerNorm.weight"), vec![d]),
            (format!("{l}attention.output.LayerNorm.bias"), vec![d]),
            (format!("{l}intermediate.dense.weight"), vec![n, d]),
            (format!("{l}intermediate.dense.bias"), vec![n]),
            (format!("{l}output.dense.weight"), vec![d, n]),
            (format!("{l}output.dense.bias"), vec![d]),
            (format!("{l}output.LayerNorm.weight"), vec![d]),
            (format!("{l}output.LayerNorm.bias"), vec![d]),
        ]);
    }
    tensors.into_iter().filter(|(name, _)| Some(name.as_str()) != drop).collect()
}

/// The `config.json` of a BERT model with `heads` attention heads.
pub fn bert_config(heads: usize) -> String {
    format!("{{\"model_type\": \"bert\", \"num_attention_heads\": {heads}}}")
}

fn write_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Write { path: path.to_path_buf(), source }
}

/// Writes `dir/model.safetensors` (float32, seeded random values in ±0.3; norm gains near 1,
/// `*_proj.bias` three times as large, as Qwen2's are) and `dir/config.json` when given
/// (removing one left there otherwise); returns the model's path.
///
/// # Errors
/// [`Error::Write`] when `dir` cannot be made or written; [`Error::InputFile`] for a tensor
/// safetensors cannot encode.
pub fn write_safetensors(
    dir: &Path,
    seed: u32,
    tensors: &[(String, Vec<usize>)],
    config: Option<&str>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state as f32 / u32::MAX as f32 - 0.5) * 0.6
    };
    let buffers: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(name, shape)| {
            let gain = name.ends_with("LayerNorm.weight")
                || name.ends_with("ln_1.weight")
                || name.ends_with("ln_2.weight")
                || name.ends_with("input_layernorm.weight")
                || name.ends_with("post_attention_layernorm.weight")
                || name.ends_with("model.norm.weight")
                || name.ends_with("ln_f.weight");
            (0..shape.iter().product::<usize>())
                .flat_map(|_| {
                    let v = if gain {
                        1.0 + next()
                    } else if name.ends_with("_proj.bias") {
                        3.0 * next()
                    } else {
                        next()
                    };
                    v.to_le_bytes()
                })
                .collect()
        })
        .collect();
    let path = dir.join("model.safetensors");
    let encode_error = |e: safetensors::SafeTensorError| Error::InputFile {
        path: path.clone(),
        problem: format!("could not be encoded: {e}"),
    };
    let views = tensors
        .iter()
        .zip(&buffers)
        .map(|((name, shape), data)| {
            Ok((name.clone(), TensorView::new(Dtype::F32, shape.clone(), data).map_err(encode_error)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = serialize(views, None).map_err(encode_error)?;
    std::fs::write(&path, bytes).map_err(write_error(&path))?;
    let config_path = dir.join("config.json");
    match config {
        Some(text) => std::fs::write(&config_path, text).map_err(write_error(&config_path))?,
        None => {
            let _ = std::fs::remove_file(&config_path);
        }
    }
    Ok(path)
}
