//! The architecture comes from the model's own metadata (config.json beside a safetensors
//! file), and everything the proof does not cover is refused by name: one test per refusal,
//! each checking the specific error, on small files written here. The GGUF twins are in
//! `gguf.rs` (which has the GGUF writer).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use safetensors::tensor::{Dtype, TensorView, serialize};
use std::path::{Path, PathBuf};
use zkmha_model::ModelError;
use zkmha_model::architecture::Unsupported;
use zkmha_model::families::{Family, interleave_rotary_pairs};
use zkmha_model::model_file::ModelFile;

/// d_model 8, 4 query heads of 2 sharing 2 key/value heads.
const D: usize = 8;
const KV: usize = 4;

/// The value at flat index `k` of a tensor whose values start at `base`.
fn value(base: f32, k: usize) -> f32 {
    base + k as f32 / 1000.0
}

/// Writes `model.safetensors` (F32, `value(base, k)`) and, when given, `config.json` into a
/// fresh directory.
fn write(dir_name: &str, tensors: &[(String, Vec<usize>)], config: Option<&str>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-architecture-{}-{dir_name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let buffers: Vec<Vec<u8>> = tensors
        .iter()
        .enumerate()
        .map(|(t, (_, shape))| {
            let n: usize = shape.iter().product();
            (0..n).flat_map(|k| value(t as f32, k).to_le_bytes()).collect()
        })
        .collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .zip(&buffers)
        .map(|((name, shape), b)| (name.clone(), TensorView::new(Dtype::F32, shape.clone(), b).unwrap()))
        .collect();
    let path = dir.join("model.safetensors");
    std::fs::write(&path, serialize(views, None).unwrap()).unwrap();
    if let Some(config) = config {
        std::fs::write(dir.join("config.json"), config).unwrap();
    }
    path
}

fn cleanup(path: &Path) {
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// One Llama-style layer (Hugging Face names) plus `extra` tensors of layer 0's attention.
fn llama_tensors(layers: usize, extra: &[(&str, Vec<usize>)]) -> Vec<(String, Vec<usize>)> {
    let mut tensors = vec![("model.embed_tokens.weight".to_string(), vec![10, D])];
    for layer in 0..layers {
        let l = format!("model.layers.{layer}.");
        tensors.extend([
            (format!("{l}input_layernorm.weight"), vec![D]),
            (format!("{l}self_attn.q_proj.weight"), vec![D, D]),
            (format!("{l}self_attn.k_proj.weight"), vec![KV, D]),
            (format!("{l}self_attn.v_proj.weight"), vec![KV, D]),
            (format!("{l}self_attn.o_proj.weight"), vec![D, D]),
            (format!("{l}post_attention_layernorm.weight"), vec![D]),
            (format!("{l}mlp.gate_proj.weight"), vec![16, D]),
        ]);
    }
    tensors.extend(extra.iter().map(|(name, shape)| (format!("model.layers.0.{name}"), shape.clone())));
    tensors
}

fn config(model_type: &str, extra: &str) -> String {
    format!(
        "{{\"model_type\": \"{model_type}\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \
         \"hidden_size\": {D}, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, \
         \"max_position_embeddings\": 32768{extra}}}"
    )
}

/// The refusal of opening `path` and reading layer `layer`'s weights.
fn refusal(path: &Path, layer: usize) -> Unsupported {
    match ModelFile::open(path, None, None).and_then(|f| f.attention_weights(layer)) {
        Err(ModelError::Unsupported(refusal)) => refusal,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, the weights were read"),
    }
}

fn gemma3_tensors() -> Vec<(String, Vec<usize>)> {
    llama_tensors(
        1,
        &[
            ("self_attn.q_norm.weight", vec![2]),
            ("self_attn.k_norm.weight", vec![2]),
            ("pre_feedforward_layernorm.weight", vec![D]),
            ("post_feedforward_layernorm.weight", vec![D]),
        ],
    )
}

/// A Gemma 3 text checkpoint in Hugging Face's layout: `layers` layers of d_model 8, 2 query
/// heads of 4 sharing 1 key/value head, an MLP of 16, every norm of Gemma 3's layer.
fn gemma3_checkpoint(layers: usize) -> Vec<(String, Vec<usize>)> {
    let mut tensors = vec![("model.embed_tokens.weight".to_string(), vec![10, D])];
    for layer in 0..layers {
        let l = format!("model.layers.{layer}.");
        tensors.extend([
            (format!("{l}input_layernorm.weight"), vec![D]),
            (format!("{l}self_attn.q_proj.weight"), vec![D, D]),
            (format!("{l}self_attn.k_proj.weight"), vec![4, D]),
            (format!("{l}self_attn.v_proj.weight"), vec![4, D]),
            (format!("{l}self_attn.o_proj.weight"), vec![D, D]),
            (format!("{l}self_attn.q_norm.weight"), vec![4]),
            (format!("{l}self_attn.k_norm.weight"), vec![4]),
            (format!("{l}post_attention_layernorm.weight"), vec![D]),
            (format!("{l}pre_feedforward_layernorm.weight"), vec![D]),
            (format!("{l}post_feedforward_layernorm.weight"), vec![D]),
            (format!("{l}mlp.gate_proj.weight"), vec![16, D]),
            (format!("{l}mlp.up_proj.weight"), vec![16, D]),
            (format!("{l}mlp.down_proj.weight"), vec![D, 16]),
        ]);
    }
    tensors.extend([("model.norm.weight".to_string(), vec![D])]);
    tensors
}

/// Gemma 3 270M's config.json, scaled down (`extra` appended).
fn gemma3_config(extra: &str) -> String {
    format!(
        "{{\"model_type\": \"gemma3_text\", \"architectures\": [\"Gemma3ForCausalLM\"], \
         \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, \"hidden_size\": {D}, \
         \"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \"rope_local_base_freq\": 500.0, \
         \"query_pre_attn_scalar\": 4, \"sliding_window\": 4, \"sliding_window_pattern\": 2, \
         \"hidden_activation\": \"gelu_pytorch_tanh\", \"rope_scaling\": null, \
         \"final_logit_softcapping\": null, \"attn_logit_softcapping\": null, \
         \"max_position_embeddings\": 32768{extra}}}"
    )
}

/// The values `write` stores for tensor `name` of `tensors`, each plus `offset`.
fn stored(tensors: &[(String, Vec<usize>)], name: &str, offset: f64) -> Vec<f64> {
    let (t, (_, shape)) = tensors.iter().enumerate().find(|(_, (n, _))| n == name).unwrap();
    (0..shape.iter().product()).map(|k| f64::from(value(t as f32, k)) + offset).collect()
}

/// Gemma 3 in Hugging Face's layout is read as Gemma 3 computes: every norm's scale is
/// `1 + w`; the MLP's norm is `pre_feedforward_layernorm` and `post_attention_layernorm` the
/// attention's output norm; the QK-norm's scales are reordered with `W_q`'s and `W_k`'s rotary
/// pairs; the sliding layers (every layer but each `sliding_window_pattern`-th) rotate with
/// `rope_local_base_freq`; the MLP is a gated tanh GELU; the embeddings are scaled by
/// `√d_model` at the table's precision, and the LM head reads the table itself.
#[test]
fn a_gemma3_checkpoint_is_read_as_gemma3_computes_it() {
    let tensors = gemma3_checkpoint(2);
    let path = write("gemma3", &tensors, Some(&gemma3_config("")));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!(
        (file.family, file.architecture.as_deref(), file.heads),
        (Family::Llama, Some("gemma3_text"), 2)
    );
    let weights = file.layer_weights(0).unwrap();
    assert_eq!((weights.head_dim, weights.key_value_heads), (4, 1));
    let float = &weights.float;
    let plus_one = |name: &str| stored(&tensors, &format!("model.layers.0.{name}"), 1.0);
    assert_eq!(float.norm.as_ref().unwrap().scale, plus_one("input_layernorm.weight"));
    assert_eq!(float.feed_forward.as_ref().unwrap().norm.scale, plus_one("pre_feedforward_layernorm.weight"));
    assert_eq!(
        float.output_norms.attention.as_ref().unwrap().scale,
        plus_one("post_attention_layernorm.weight")
    );
    assert_eq!(
        float.output_norms.feed_forward.as_ref().unwrap().scale,
        plus_one("post_feedforward_layernorm.weight")
    );
    let query_key = float.query_key_norms.as_ref().unwrap();
    assert_eq!(query_key.query.scale, interleave_rotary_pairs(&plus_one("self_attn.q_norm.weight"), 4, 4));
    assert_eq!(query_key.key.scale, interleave_rotary_pairs(&plus_one("self_attn.k_norm.weight"), 4, 4));
    assert_ne!(query_key.query.scale, plus_one("self_attn.q_norm.weight"), "the reordering is visible");
    assert_eq!(file.final_norm().unwrap().scale, stored(&tensors, "model.norm.weight", 1.0));
    // Layer 0 slides with the local base, layer 1 (the pattern's second) is global.
    assert_eq!((file.attention_window(0), file.rope_base_for(0)), (Some(4), 500.0));
    assert_eq!((file.attention_window(1), file.rope_base_for(1)), (None, 1_000_000.0));
    assert_eq!(file.activation().unwrap(), zkmha_nn::Activation::GeluTanh);
    // √8 at F32, the table's precision.
    let scale = f64::from(8f32.sqrt());
    assert_eq!(file.embedding_scale().unwrap(), scale);
    let row = stored(&tensors, "model.embed_tokens.weight", 0.0)[D..2 * D].to_vec();
    let embedded = file.embed(&[1]).unwrap();
    assert_eq!(embedded, row.iter().map(|v| v * scale).collect::<Vec<_>>());
    let table = stored(&tensors, "model.embed_tokens.weight", 0.0);
    assert_eq!(file.untied_lm_head().unwrap(), Some(table.as_slice()));
    let tables = file.embedding_tables().unwrap().unwrap();
    assert_eq!(tables.tokens[D..2 * D], embedded[..]);
    cleanup(&path);
}

/// What Gemma 3's loader does not prove is refused by name: rotary scaling, a score softcap,
/// another score scale; Gemma 2 stays refused; a missing Gemma norm is a missing tensor, not
/// a layer read without it.
#[test]
fn gemma3_features_not_proven_are_refused() {
    let cases: [(&str, Unsupported); 3] = [
        (
            ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}",
            Unsupported::RopeScaling { kind: "linear (rope_scaling in config.json)".into() },
        ),
        (
            ", \"attn_logit_softcapping\": 50.0",
            Unsupported::ScoreScaling { field: "attn_logit_softcapping".into(), value: "50.0".into() },
        ),
        (
            ", \"query_pre_attn_scalar\": 3",
            Unsupported::ScoreScaling { field: "query_pre_attn_scalar".into(), value: "3".into() },
        ),
    ];
    for (extra, expected) in cases {
        // A later key wins in serde_json: the extra field overrides the base one.
        let path = write("gemma3-refused", &gemma3_checkpoint(1), Some(&gemma3_config(extra)));
        assert_eq!(refusal(&path, 0), expected, "{extra}");
        cleanup(&path);
    }
    let path = write("gemma2", &gemma3_checkpoint(1), Some(&config("gemma2", "")));
    let refused = match ModelFile::open(&path, None, None) {
        Err(ModelError::Unsupported(refused)) => refused,
        other => panic!("{:?}", other.map(|f| f.family)),
    };
    assert!(matches!(&refused, Unsupported::Architecture { name, .. } if name == "gemma2"), "{refused:?}");
    cleanup(&path);
    let without_k_norm: Vec<_> =
        gemma3_checkpoint(1).into_iter().filter(|(name, _)| !name.ends_with("k_norm.weight")).collect();
    let path = write("gemma3-no-k-norm", &without_k_norm, Some(&gemma3_config("")));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert!(
        matches!(file.layer_weights(0), Err(ModelError::MissingTensor(name)) if name.starts_with("layers.0.self_attn.k_norm.weight")),
    );
    cleanup(&path);
    // --family llama cannot override another architecture's metadata.
    let path = write("qwen3", &gemma3_checkpoint(1), Some(&config("qwen3", "")));
    assert!(matches!(
        ModelFile::open(&path, Some(Family::Llama), None),
        Err(ModelError::Unsupported(Unsupported::Architecture { name, .. })) if name == "qwen3"
    ));
    cleanup(&path);
}

/// Without any metadata, the same checkpoint is read by its tensor names, and its QK-norm
/// tensors refuse it.
#[test]
fn a_qk_norm_tensor_is_refused_without_metadata() {
    let path = write("gemma3-bare", &gemma3_tensors(), None);
    let file = ModelFile::open(&path, None, Some(4)).unwrap();
    assert_eq!((file.family, file.architecture.as_deref()), (Family::Llama, None));
    assert_eq!(
        refusal_of(&file, 0),
        Unsupported::QkNorm { what: "model.layers.0.self_attn.k_norm.weight".into() }
    );
    assert_eq!(
        refusal_of(&file, 0).to_string(),
        "model.layers.0.self_attn.k_norm.weight is a QK-norm (a norm on the queries and keys), which the \
         proof does not cover"
    );
    cleanup(&path);
    // A config.json flag saying so, on a model_type-less config.
    let path =
        write("qk-flag", &llama_tensors(1, &[]), Some("{\"num_attention_heads\": 4, \"qk_norm\": true}"));
    assert_eq!(refusal(&path, 0), Unsupported::QkNorm { what: "config.json qk_norm = true".into() });
    cleanup(&path);
}

fn refusal_of(file: &ModelFile, layer: usize) -> Unsupported {
    match file.attention_weights(layer) {
        Err(ModelError::Unsupported(refusal)) => refusal,
        other => panic!("{:?}", other.map(|w| w.family)),
    }
}

/// Gemma 2's layout: no QK-norm, but a norm on the attention's output (its
/// post_attention_layernorm, with pre_feedforward_layernorm before the MLP).
#[test]
fn a_post_attention_norm_is_refused() {
    let path =
        write("gemma2-bare", &llama_tensors(1, &[("pre_feedforward_layernorm.weight", vec![D])]), None);
    assert_eq!(
        refusal_of(&ModelFile::open(&path, None, Some(4)).unwrap(), 0),
        Unsupported::PostAttentionNorm { tensor: "model.layers.0.post_attention_layernorm.weight".into() }
    );
    cleanup(&path);
    let path = write(
        "post-norm",
        &llama_tensors(1, &[("post_attention_norm.weight", vec![D])]),
        Some(&config("llama", "")),
    );
    assert_eq!(
        refusal(&path, 0),
        Unsupported::PostAttentionNorm { tensor: "model.layers.0.post_attention_norm.weight".into() }
    );
    cleanup(&path);
}

#[test]
fn a_bias_the_architecture_does_not_use_is_refused() {
    // Llama without attention_bias: a Q bias would be ignored by the model.
    let q_bias = [("self_attn.q_proj.bias", vec![D])];
    let path = write("llama-q-bias", &llama_tensors(1, &q_bias), Some(&config("llama", "")));
    let refused = refusal(&path, 0);
    assert_eq!(
        refused,
        Unsupported::UnexpectedBias {
            tensor: "model.layers.0.self_attn.q_proj.bias".into(),
            architecture: "llama".into()
        }
    );
    assert!(
        refused.to_string().starts_with("model.layers.0.self_attn.q_proj.bias is a bias llama does not use")
    );
    cleanup(&path);
    // Qwen2 has Q, K, V biases, never an O bias.
    let biases = [
        ("self_attn.q_proj.bias", vec![D]),
        ("self_attn.k_proj.bias", vec![KV]),
        ("self_attn.v_proj.bias", vec![KV]),
        ("self_attn.o_proj.bias", vec![D]),
    ];
    let path = write("qwen2-o-bias", &llama_tensors(1, &biases), Some(&config("qwen2", "")));
    assert_eq!(
        refusal(&path, 0),
        Unsupported::UnexpectedBias {
            tensor: "model.layers.0.self_attn.o_proj.bias".into(),
            architecture: "qwen2".into()
        }
    );
    cleanup(&path);
    // Mistral: none at all.
    let path = write(
        "mistral-v-bias",
        &llama_tensors(1, &[("self_attn.v_proj.bias", vec![KV])]),
        Some(&config("mistral", "")),
    );
    assert!(
        matches!(refusal(&path, 0), Unsupported::UnexpectedBias { architecture, .. } if architecture == "mistral")
    );
    cleanup(&path);
    // No metadata: Q, K, V biases are read (as Qwen2's), an O bias is refused.
    let path = write("bare-o-bias", &llama_tensors(1, &[("self_attn.o_proj.bias", vec![D])]), None);
    assert!(matches!(
        refusal_of(&ModelFile::open(&path, None, Some(4)).unwrap(), 0),
        Unsupported::UnexpectedBias { tensor, .. } if tensor == "model.layers.0.self_attn.o_proj.bias"
    ));
    cleanup(&path);
}

/// Qwen2: a Llama block with Q, K, V biases, loaded exactly (Q and K reordered to adjacent
/// rotary pairs like their weights), never set to zero.
#[test]
fn qwen2_biases_are_loaded() {
    let biases = [
        ("self_attn.q_proj.bias", vec![D]),
        ("self_attn.k_proj.bias", vec![KV]),
        ("self_attn.v_proj.bias", vec![KV]),
    ];
    let tensors = llama_tensors(1, &biases);
    let stored = |name: &str| -> Vec<f64> {
        let t = tensors.iter().position(|(n, _)| n == name).unwrap();
        (0..tensors[t].1.iter().product()).map(|k| f64::from(value(t as f32, k))).collect()
    };
    let path = write(
        "qwen2",
        &tensors,
        Some(&config("qwen2", ", \"use_sliding_window\": false, \"sliding_window\": 4096")),
    );
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!((file.family, file.architecture.as_deref()), (Family::Llama, Some("qwen2")));
    let w = file.attention_weights(0).unwrap();
    let q = stored("model.layers.0.self_attn.q_proj.bias");
    let k = stored("model.layers.0.self_attn.k_proj.bias");
    assert!(q.iter().all(|&b| b != 0.0));
    assert_eq!(w.queries_bias, interleave_rotary_pairs(&q, D, 2));
    assert_eq!(w.keys_bias, interleave_rotary_pairs(&k, KV, 2));
    assert_eq!(w.values_bias, stored("model.layers.0.self_attn.v_proj.bias"));
    assert!(w.output_bias.iter().all(|&b| b == 0.0));
    cleanup(&path);
    // A Qwen2 file without its K bias is incomplete, not a zero bias.
    let path = write(
        "qwen2-no-k",
        &llama_tensors(1, &[biases[0].clone(), biases[2].clone()]),
        Some(&config("qwen2", "")),
    );
    match ModelFile::open(&path, None, None).unwrap().attention_weights(0) {
        Err(ModelError::Input(sentence)) => {
            assert!(
                sentence.contains("no layers.0.self_attn.k_proj.bias, but its architecture (qwen2)"),
                "{sentence}"
            )
        }
        other => panic!("{:?}", other.map(|w| w.family)),
    }
    cleanup(&path);
    // Llama with attention_bias but no o_proj bias (issue 54): named as the contradiction it is.
    let path = write(
        "llama-bias-no-o",
        &llama_tensors(1, &biases),
        Some(&config("llama", ", \"attention_bias\": true")),
    );
    match ModelFile::open(&path, None, None).unwrap().attention_weights(0) {
        Err(ModelError::Input(sentence)) => assert!(
            sentence.contains("no layers.0.self_attn.o_proj.bias, but its config says every attention projection has a bias (attention_bias: true)"),
            "{sentence}"
        ),
        other => panic!("{:?}", other.map(|w| w.family)),
    }
    cleanup(&path);
    // Llama with attention_bias: all four biases, required and loaded.
    let all = [biases[0].clone(), biases[1].clone(), biases[2].clone(), ("self_attn.o_proj.bias", vec![D])];
    let path =
        write("llama-bias", &llama_tensors(1, &all), Some(&config("llama", ", \"attention_bias\": true")));
    let w = ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    assert!(w.output_bias.iter().chain(&w.values_bias).all(|&b| b != 0.0));
    cleanup(&path);
    // Without metadata, Q, K, V biases present are read too.
    let path = write("bare-qkv", &llama_tensors(1, &biases), None);
    let w = ModelFile::open(&path, None, Some(4)).unwrap().attention_weights(0).unwrap();
    assert_eq!(w.values_bias, stored("model.layers.0.self_attn.v_proj.bias"));
    cleanup(&path);
}

#[test]
fn rope_scaling_is_refused() {
    let tensors = llama_tensors(1, &[]);
    for (scaling, kind) in [
        (
            "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"original_max_position_embeddings\": 8192}",
            "llama3 (rope_scaling in config.json)",
        ),
        ("{\"type\": \"linear\", \"factor\": 2.0}", "linear (rope_scaling in config.json)"),
    ] {
        let path = write("rope", &tensors, Some(&config("llama", &format!(", \"rope_scaling\": {scaling}"))));
        let refused = refusal(&path, 0);
        assert_eq!(refused, Unsupported::RopeScaling { kind: kind.into() });
        assert!(refused.to_string().starts_with(&format!("rotary scaling {kind} is not covered")));
        cleanup(&path);
    }
    // The newer rope_parameters field, likewise.
    let path = write(
        "rope-params",
        &tensors,
        Some(&config("llama", ", \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0}")),
    );
    assert!(matches!(refusal(&path, 0), Unsupported::RopeScaling { kind } if kind.starts_with("yarn")));
    cleanup(&path);
    // Null and "default" are plain rotary embeddings.
    for scaling in ["null", "{\"rope_type\": \"default\"}"] {
        let path = write(
            "rope-default",
            &tensors,
            Some(&config("llama", &format!(", \"rope_scaling\": {scaling}"))),
        );
        ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
        cleanup(&path);
    }
    // Stored rotary frequencies must be the standard ones.
    // (Heads of 2: one frequency, base^0 = 1.)
    for (frequencies, accepted) in [(vec![1.0f32], true), (vec![0.125], false)] {
        let mut with = tensors.clone();
        with.push(("model.layers.0.self_attn.rotary_emb.inv_freq".into(), vec![1]));
        let path = write("inv-freq", &with, Some(&config("llama", "")));
        // Overwrite the tensor's values with the frequencies.
        let bytes = std::fs::read(&path).unwrap();
        let (header, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let info = meta.info("model.layers.0.self_attn.rotary_emb.inv_freq").unwrap();
        let mut bytes = bytes.clone();
        for (i, f) in frequencies.iter().enumerate() {
            let at = header + 8 + info.data_offsets.0 + 4 * i;
            bytes[at..at + 4].copy_from_slice(&f.to_le_bytes());
        }
        std::fs::write(&path, bytes).unwrap();
        let read = ModelFile::open(&path, None, None).unwrap().attention_weights(0);
        assert_eq!(read.is_ok(), accepted, "{:?}", read.err());
        if !accepted {
            assert!(matches!(read, Err(ModelError::Unsupported(Unsupported::RopeScaling { .. }))));
        }
        cleanup(&path);
    }
}

#[test]
fn partial_rotary_embeddings_are_refused() {
    let path =
        write("partial", &llama_tensors(1, &[]), Some(&config("llama", ", \"partial_rotary_factor\": 0.5")));
    assert_eq!(refusal(&path, 0), Unsupported::PartialRotary { what: "partial_rotary_factor = 0.5".into() });
    cleanup(&path);
}

#[test]
fn sliding_windows_are_read_per_layer_and_chunked_ones_refused() {
    let tensors = llama_tensors(2, &[]);
    let window = |path: &std::path::Path, layer: usize| {
        let file = ModelFile::open(path, None, None).unwrap();
        file.attention_weights(layer).unwrap();
        file.attention_window(layer)
    };
    // Mistral 7B v0.1: a 4096-token window on every layer, in a 32768-token context.
    let path = write("mistral-window", &tensors, Some(&config("mistral", ", \"sliding_window\": 4096")));
    assert_eq!((window(&path, 0), window(&path, 1)), (Some(4096), Some(4096)));
    cleanup(&path);
    // No window, or one as long as the context: full attention.
    for extra in [", \"sliding_window\": null", ", \"sliding_window\": 32768"] {
        let path = write("mistral-full", &tensors, Some(&config("mistral", extra)));
        assert_eq!(window(&path, 1), None, "{extra}");
        cleanup(&path);
    }
    // Qwen2: off unless use_sliding_window; then from max_window_layers on.
    let biases: Vec<(String, Vec<usize>)> = (0..2)
        .flat_map(|l| {
            [("q", D), ("k", KV), ("v", KV)]
                .map(|(p, n)| (format!("model.layers.{l}.self_attn.{p}_proj.bias"), vec![n]))
        })
        .collect();
    let qwen2 = [tensors.clone(), biases].concat();
    let off = ", \"use_sliding_window\": false, \"sliding_window\": 4096, \"max_window_layers\": 1";
    let path = write("qwen2-off", &qwen2, Some(&config("qwen2", off)));
    assert_eq!((window(&path, 0), window(&path, 1)), (None, None));
    cleanup(&path);
    // Hugging Face's Qwen2 defaults: no window unless use_sliding_window, then from layer 28.
    for (extra, name) in [
        (", \"sliding_window\": 4096, \"max_window_layers\": 1", "qwen2-default"),
        (", \"use_sliding_window\": true, \"sliding_window\": 4096", "qwen2-from-28"),
    ] {
        let path = write(name, &qwen2, Some(&config("qwen2", extra)));
        assert_eq!((window(&path, 0), window(&path, 1)), (None, None), "{extra}");
        cleanup(&path);
    }
    let on = ", \"use_sliding_window\": true, \"sliding_window\": 4096, \"max_window_layers\": 1";
    let path = write("qwen2-on", &qwen2, Some(&config("qwen2", on)));
    assert_eq!((window(&path, 0), window(&path, 1)), (None, Some(4096)));
    cleanup(&path);
    // layer_types names each layer's kind.
    let types = ", \"sliding_window\": 512, \"layer_types\": [\"sliding_attention\", \"full_attention\"]";
    let path = write("layer-types", &tensors, Some(&config("llama", types)));
    assert_eq!((window(&path, 0), window(&path, 1)), (Some(512), None));
    cleanup(&path);
    // A chunked window (Llama 4's attention_chunk_size) is not proven; nor is a sliding window
    // too long for the mask's 32 bits (in a longer context).
    let path = write("chunked", &tensors, Some(&config("llama", ", \"attention_chunk_size\": 8192")));
    let refused = refusal(&path, 0);
    assert_eq!(refused, Unsupported::SlidingWindow { layer: 0, window: 8192, kind: "chunked".into() });
    assert_eq!(
        refused.to_string(),
        "layer 0 attends through a chunked window of 8192 tokens, which the proof does not cover (it proves \
         full attention and sliding windows of up to 2^32 − 1 tokens)"
    );
    cleanup(&path);
    // A chunk size beside a sliding window, or a layer type of chunked attention, is chunked.
    let both = ", \"sliding_window\": 8, \"attention_chunk_size\": 4";
    let path = write("chunk-and-window", &tensors, Some(&config("llama", both)));
    assert_eq!(refusal(&path, 0), Unsupported::SlidingWindow { layer: 0, window: 4, kind: "chunked".into() });
    cleanup(&path);
    let types = ", \"sliding_window\": 8, \"layer_types\": [\"chunked_attention\", \"full_attention\"]";
    let path = write("chunked-types", &tensors, Some(&config("llama", types)));
    assert_eq!(refusal(&path, 0), Unsupported::SlidingWindow { layer: 0, window: 8, kind: "chunked".into() });
    assert_eq!(window(&path, 1), None);
    cleanup(&path);
    // A size that is not a whole number of tokens is refused, not read as no window.
    for value in ["4096.0", "\"4096\"", "-1"] {
        let path =
            write("malformed", &tensors, Some(&config("mistral", &format!(", \"sliding_window\": {value}"))));
        let refused = refusal(&path, 0);
        assert_eq!(
            refused,
            Unsupported::MalformedWindow { field: "sliding_window".into(), value: value.into() }
        );
        assert!(refused.to_string().contains("is not a whole number of tokens"), "{refused}");
        cleanup(&path);
    }
    let long = ", \"sliding_window\": 4294967296, \"max_position_embeddings\": 8589934592";
    let path = write("long-window", &tensors, Some(&config("mistral", long)));
    assert_eq!(
        refusal(&path, 0),
        Unsupported::SlidingWindow { layer: 0, window: 1 << 32, kind: "sliding".into() }
    );
    cleanup(&path);
}

#[test]
fn score_scalings_and_softcapping_are_refused() {
    let tensors = llama_tensors(1, &[]);
    for (extra, field, value) in [
        (", \"attn_logit_softcapping\": 50.0", "attn_logit_softcapping", "50.0"),
        (", \"query_pre_attn_scalar\": 256", "query_pre_attn_scalar", "256"),
    ] {
        let path = write("scaling", &tensors, Some(&config("llama", extra)));
        let refused = refusal(&path, 0);
        assert_eq!(refused, Unsupported::ScoreScaling { field: field.into(), value: value.into() });
        assert!(
            refused
                .to_string()
                .ends_with("changes the attention scores, which the proof scales by 1/√head_dim only")
        );
        cleanup(&path);
    }
    // query_pre_attn_scalar equal to the head width is the usual scale; final_logit_softcapping
    // is after the last layer.
    let harmless =
        ", \"query_pre_attn_scalar\": 2, \"final_logit_softcapping\": 30.0, \"tie_word_embeddings\": true";
    let path = write("harmless", &tensors, Some(&config("llama", harmless)));
    ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    cleanup(&path);
    // GPT-2 without the 1/√m scale.
    let gpt2 = vec![
        ("wte.weight".to_string(), vec![10, D]),
        ("h.0.attn.c_attn.weight".to_string(), vec![D, 3 * D]),
        ("h.0.attn.c_attn.bias".to_string(), vec![3 * D]),
        ("h.0.attn.c_proj.weight".to_string(), vec![D, D]),
        ("h.0.attn.c_proj.bias".to_string(), vec![D]),
    ];
    let path = write(
        "gpt2-unscaled",
        &gpt2,
        Some("{\"model_type\": \"gpt2\", \"n_head\": 4, \"scale_attn_weights\": false}"),
    );
    assert_eq!(
        refusal(&path, 0),
        Unsupported::ScoreScaling { field: "scale_attn_weights".into(), value: "false".into() }
    );
    std::fs::write(path.with_file_name("config.json"), "{\"model_type\": \"gpt2\", \"n_head\": 4}").unwrap();
    ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    cleanup(&path);
}

fn bert_tensors(extra: &[(&str, Vec<usize>)]) -> Vec<(String, Vec<usize>)> {
    let l = "encoder.layer.0.attention.";
    let mut tensors: Vec<(String, Vec<usize>)> =
        vec![("embeddings.word_embeddings.weight".into(), vec![10, D])];
    for part in ["self.query", "self.key", "self.value", "output.dense"] {
        tensors.push((format!("{l}{part}.weight"), vec![D, D]));
        tensors.push((format!("{l}{part}.bias"), vec![D]));
    }
    tensors.extend(extra.iter().map(|(n, s)| (format!("{l}{n}"), s.clone())));
    tensors
}

#[test]
fn bert_relative_positions_and_unread_attention_tensors_are_refused() {
    let bert = "{\"model_type\": \"bert\", \"num_attention_heads\": 4, \"position_embedding_type\": \"relative_key\"}";
    let path =
        write("bert-relative", &bert_tensors(&[("self.distance_embedding.weight", vec![7, 2])]), Some(bert));
    assert_eq!(refusal(&path, 0), Unsupported::PositionEmbedding { kind: "relative_key".into() });
    // Without the flag, the tensor itself is still not read by the proof.
    std::fs::write(
        path.with_file_name("config.json"),
        "{\"model_type\": \"bert\", \"num_attention_heads\": 4}",
    )
    .unwrap();
    assert_eq!(
        refusal(&path, 0),
        Unsupported::UncoveredTensor {
            tensor: "encoder.layer.0.attention.self.distance_embedding.weight".into()
        }
    );
    cleanup(&path);
    // RoBERTa computes the same block but numbers positions from the padding index.
    let path = write(
        "roberta",
        &bert_tensors(&[]),
        Some("{\"model_type\": \"roberta\", \"num_attention_heads\": 4}"),
    );
    assert!(matches!(
        ModelFile::open(&path, None, None),
        Err(ModelError::Unsupported(Unsupported::Architecture { name, .. })) if name == "roberta"
    ));
    cleanup(&path);
}

#[test]
fn metadata_that_contradicts_the_weights_or_the_flags_is_refused() {
    let tensors = llama_tensors(1, &[]);
    let path = write("head-dim", &tensors, Some(&config("llama", ", \"head_dim\": 4")));
    assert_eq!(
        refusal(&path, 0),
        Unsupported::MetadataMismatch { field: "head_dim".into(), metadata: 4, weights: 2 }
    );
    // head_dim equal to the weights' (here d_model / heads) is fine.
    std::fs::write(path.with_file_name("config.json"), config("llama", ", \"head_dim\": 2")).unwrap();
    ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    // --heads and --family against the metadata.
    assert_eq!(
        ModelFile::open(&path, None, Some(2)).err().map(|e| e.to_string()),
        Some("the model's metadata says 4 attention heads, which contradicts --heads 2".into())
    );
    assert!(matches!(
        ModelFile::open(&path, Some(Family::Bert), None),
        Err(ModelError::Unsupported(Unsupported::ConflictingArchitecture { .. }))
    ));
    // model_type against the architectures list.
    let conflicting = "{\"model_type\": \"llama\", \"architectures\": [\"MistralForCausalLM\"], \"num_attention_heads\": 4}";
    std::fs::write(path.with_file_name("config.json"), conflicting).unwrap();
    assert_eq!(
        ModelFile::open(&path, None, None).err().map(|e| e.to_string()),
        Some("the model's metadata says model_type llama, which contradicts architectures mistral".into())
    );
    // Key/value heads.
    std::fs::write(
        path.with_file_name("config.json"),
        config("llama", "").replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4"),
    )
    .unwrap();
    assert_eq!(
        refusal(&path, 0),
        Unsupported::MetadataMismatch { field: "num_key_value_heads".into(), metadata: 4, weights: 2 }
    );
    cleanup(&path);
}

/// The supported architectures' names, and the classes of `architectures`, read as their
/// family; a Llama-family layer with a head width other than d_model / heads reads too (the
/// proof takes h·m ≠ d_model).
#[test]
fn supported_architectures_are_read_from_their_metadata() {
    for (model_type, classes) in
        [("llama", "LlamaForCausalLM"), ("mistral", "MistralForCausalLM"), ("qwen2", "Qwen2ForCausalLM")]
    {
        let biases: Vec<(&str, Vec<usize>)> = if model_type == "qwen2" {
            vec![
                ("self_attn.q_proj.bias", vec![D]),
                ("self_attn.k_proj.bias", vec![KV]),
                ("self_attn.v_proj.bias", vec![KV]),
            ]
        } else {
            vec![]
        };
        let extra = format!(", \"architectures\": [\"{classes}\"]");
        let path = write(model_type, &llama_tensors(1, &biases), Some(&config(model_type, &extra)));
        let file = ModelFile::open(&path, None, None).unwrap();
        assert_eq!((file.family, file.architecture_name()), (Family::Llama, model_type));
        file.attention_weights(0).unwrap();
        cleanup(&path);
    }
    // 4 heads of 4 on d_model 8 (q_proj has 16 rows).
    let mut wide = llama_tensors(1, &[]);
    wide[2].1 = vec![16, D];
    wide[3].1 = vec![8, D];
    wide[4].1 = vec![8, D];
    wide[5].1 = vec![D, 16];
    let path = write("wide", &wide, Some(&config("llama", ", \"head_dim\": 4")));
    let w = ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    assert_eq!((w.model_width, w.head_dim, w.key_value_heads), (D, 4, 2));
    cleanup(&path);
}

/// A GPT-2 layer with its MLP half (`d_model` 8, hidden width 12).
fn gpt2_tensors(extra: &[(&str, Vec<usize>)]) -> Vec<(String, Vec<usize>)> {
    let mut tensors: Vec<(String, Vec<usize>)> = [
        ("wte.weight", vec![10, D]),
        ("h.0.ln_1.weight", vec![D]),
        ("h.0.ln_1.bias", vec![D]),
        ("h.0.attn.c_attn.weight", vec![D, 3 * D]),
        ("h.0.attn.c_attn.bias", vec![3 * D]),
        ("h.0.attn.c_proj.weight", vec![D, D]),
        ("h.0.attn.c_proj.bias", vec![D]),
        ("h.0.ln_2.weight", vec![D]),
        ("h.0.ln_2.bias", vec![D]),
        ("h.0.mlp.c_fc.weight", vec![D, 12]),
        ("h.0.mlp.c_fc.bias", vec![12]),
        ("h.0.mlp.c_proj.weight", vec![12, D]),
        ("h.0.mlp.c_proj.bias", vec![D]),
    ]
    .into_iter()
    .map(|(name, shape)| (name.to_string(), shape))
    .collect();
    tensors.extend(extra.iter().map(|(name, shape)| (format!("h.0.{name}"), shape.clone())));
    tensors
}

/// The index of `name` in `tensors`: the base of its values (`value(base, k)`).
fn base_of(tensors: &[(String, Vec<usize>)], name: &str) -> f32 {
    tensors.iter().position(|(n, _)| n == name).unwrap() as f32
}

/// GPT-2's MLP is read in its Conv1D layout (`[in, out]`, as the prover takes it), `ln_2` as a
/// LayerNorm with its shift, the activation by `activation_function` (gelu_new: the tanh form;
/// the family's default without one).
#[test]
fn gpt2_mlp_reads_in_its_conv1d_layout_with_the_named_activation() {
    let tensors = gpt2_tensors(&[]);
    let gpt2 = "{\"model_type\": \"gpt2\", \"n_head\": 4, \"activation_function\": \"gelu_new\"}";
    let path = write("gpt2-mlp", &tensors, Some(gpt2));
    let file = ModelFile::open(&path, None, None).unwrap();
    file.attention_weights(0).unwrap();
    let ff = file.feed_forward_weights(0).unwrap().unwrap();
    assert_eq!(file.activation().unwrap(), zkmha_nn::Activation::GeluTanh);
    let at = |name: &str, k: usize| f64::from(value(base_of(&tensors, name), k));
    assert_eq!(ff.norm.kind, zkmha_nn::NormKind::Layer);
    assert_eq!((ff.norm.scale[3], ff.norm.bias[5]), (at("h.0.ln_2.weight", 3), at("h.0.ln_2.bias", 5)));
    assert!(ff.mlp.gate.is_none());
    assert_eq!(ff.mlp.up.weights.len(), D * 12);
    for k in [0, 13, D * 12 - 1] {
        assert_eq!(ff.mlp.up.weights[k], at("h.0.mlp.c_fc.weight", k));
        assert_eq!(ff.mlp.down.weights[k], at("h.0.mlp.c_proj.weight", k));
    }
    assert_eq!(ff.mlp.up.bias[11], at("h.0.mlp.c_fc.bias", 11));
    assert_eq!(ff.mlp.down.bias[7], at("h.0.mlp.c_proj.bias", 7));
    // Without config.json: the family's GELU (tanh form).
    std::fs::remove_file(path.with_file_name("config.json")).unwrap();
    let file = ModelFile::open(&path, None, Some(4)).unwrap();
    assert_eq!(file.activation().unwrap(), zkmha_nn::Activation::GeluTanh);
    // A c_proj of another width: named.
    let mut wrong = gpt2_tensors(&[]);
    wrong[11].1 = vec![11, D];
    let path = write("gpt2-mlp-wrong", &wrong, None);
    let file = ModelFile::open(&path, None, Some(4)).unwrap();
    assert!(matches!(
        file.feed_forward_weights(0),
        Err(ModelError::WrongTensor { name, .. }) if name == "h.0.mlp.c_proj.weight"
    ));
    cleanup(&path);
}

/// An activation the proof has no table for is refused by its name.
#[test]
fn an_mlp_activation_without_a_table_is_refused_by_name() {
    for (field, name) in [("activation_function", "relu"), ("activation_function", "quick_gelu")] {
        let config = format!("{{\"model_type\": \"gpt2\", \"n_head\": 4, \"{field}\": \"{name}\"}}");
        let path = write("gpt2-act", &gpt2_tensors(&[]), Some(&config));
        let file = ModelFile::open(&path, None, None).unwrap();
        match file.activation() {
            Err(ModelError::Unsupported(refusal)) => {
                assert_eq!(refusal, Unsupported::Activation { name: name.into() });
                assert!(refusal.to_string().contains(name), "{refusal}");
            }
            other => panic!("{other:?}"),
        }
        cleanup(&path);
    }
    let path =
        write("llama-act", &llama_mlp_tensors(&[]), Some(&config("llama", ", \"hidden_act\": \"gelu_10\"")));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert!(
        matches!(file.activation(), Err(ModelError::Unsupported(Unsupported::Activation { name })) if name == "gelu_10")
    );
    cleanup(&path);
}

/// A Llama layer with its whole MLP (gate, up, down; hidden width 12) plus `extra` tensors.
fn llama_mlp_tensors(extra: &[(&str, Vec<usize>)]) -> Vec<(String, Vec<usize>)> {
    let mut extra = extra.to_vec();
    extra.extend([("mlp.up_proj.weight", vec![16, D]), ("mlp.down_proj.weight", vec![D, 16])]);
    llama_tensors(1, &extra)
}

/// Llama's MLP `[out, in]` tensors are transposed to `[in, out]`; SiLU by `hidden_act`; MLP
/// biases only where config.json says `mlp_bias` (else refused: the model would not add them).
#[test]
fn llama_mlp_reads_transposed_and_its_biases_only_where_the_config_has_them() {
    let tensors = llama_mlp_tensors(&[]);
    let path = write("llama-mlp", &tensors, Some(&config("llama", ", \"hidden_act\": \"silu\"")));
    let file = ModelFile::open(&path, None, None).unwrap();
    file.attention_weights(0).unwrap();
    let ff = file.feed_forward_weights(0).unwrap().unwrap();
    assert_eq!(file.activation().unwrap(), zkmha_nn::Activation::Silu);
    assert_eq!((ff.norm.kind, ff.norm.bias.len()), (zkmha_nn::NormKind::Rms, 0));
    let at = |name: &str, k: usize| f64::from(value(base_of(&tensors, &format!("model.layers.0.{name}")), k));
    let gate = ff.mlp.gate.as_ref().unwrap();
    // Entry (input c, output r) is the file's (r, c).
    for (r, c) in [(0, 0), (15, 7), (3, 5)] {
        assert_eq!(gate.weights[c * 16 + r], at("mlp.gate_proj.weight", r * D + c));
        assert_eq!(ff.mlp.up.weights[c * 16 + r], at("mlp.up_proj.weight", r * D + c));
    }
    for (r, c) in [(0, 0), (7, 15), (2, 9)] {
        assert_eq!(ff.mlp.down.weights[c * D + r], at("mlp.down_proj.weight", r * 16 + c));
    }
    assert!(ff.mlp.up.bias.iter().chain(&gate.bias).chain(&ff.mlp.down.bias).all(|&b| b == 0.0));
    cleanup(&path);
    // Biases on the MLP: refused without mlp_bias, read with it.
    let biased = llama_mlp_tensors(&[("mlp.up_proj.bias", vec![16])]);
    let path = write("llama-mlp-bias", &biased, Some(&config("llama", "")));
    assert_eq!(
        refusal(&path, 0),
        Unsupported::UnexpectedBias {
            tensor: "model.layers.0.mlp.up_proj.bias".into(),
            architecture: "llama".into()
        }
    );
    std::fs::write(path.with_file_name("config.json"), config("llama", ", \"mlp_bias\": true")).unwrap();
    let file = ModelFile::open(&path, None, None).unwrap();
    file.attention_weights(0).unwrap();
    let ff = file.feed_forward_weights(0).unwrap().unwrap();
    assert_eq!(ff.mlp.up.bias[9], f64::from(value(base_of(&biased, "model.layers.0.mlp.up_proj.bias"), 9)));
    // An up projection of another width than the gate's: named.
    let mut wrong = llama_mlp_tensors(&[]);
    let up = wrong.iter().position(|(n, _)| n.ends_with("up_proj.weight")).unwrap();
    wrong[up].1 = vec![15, D];
    let path = write("llama-mlp-wrong", &wrong, Some(&config("llama", "")));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert!(matches!(
        file.feed_forward_weights(0),
        Err(ModelError::WrongTensor { name, .. }) if name == "layers.0.mlp.gate_proj.weight"
    ));
    cleanup(&path);
}

/// Every tensor of a GPT-2 or Llama layer is read by the proof of the whole layer: any other
/// (an extra MLP projection, a norm the block does not have) is refused by name.
#[test]
fn a_layer_tensor_the_whole_layer_proof_does_not_read_is_refused() {
    let path = write(
        "gpt2-extra",
        &gpt2_tensors(&[("mlp.c_fc2.weight", vec![D, 12])]),
        Some("{\"model_type\": \"gpt2\", \"n_head\": 4}"),
    );
    assert_eq!(refusal(&path, 0), Unsupported::UncoveredTensor { tensor: "h.0.mlp.c_fc2.weight".into() });
    cleanup(&path);
    let path = write(
        "llama-extra",
        &llama_mlp_tensors(&[("mlp.experts.0.weight", vec![D])]),
        Some(&config("llama", "")),
    );
    assert_eq!(
        refusal(&path, 0),
        Unsupported::UncoveredTensor { tensor: "model.layers.0.mlp.experts.0.weight".into() }
    );
    cleanup(&path);
}
