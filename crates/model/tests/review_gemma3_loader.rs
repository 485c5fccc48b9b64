//! The fresh-context review's tests of the Gemma 3 loader (issue 20): Gemma 3 files it read as
//! another function before their fixes — an EmbeddingGemma config, a tied `lm_head.weight`, a
//! multimodal config, Hugging Face's defaults, the local rotary base without a window. Each
//! asserts what the model computes (or that it is refused).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use safetensors::tensor::{Dtype, TensorView, serialize};
use std::path::{Path, PathBuf};
use zkmha_model::ModelError;
use zkmha_model::model_file::ModelFile;

const D: usize = 8;

/// Writes `model.safetensors` (F32) with the given data per tensor and `config.json`.
fn write_with(dir_name: &str, tensors: &[(String, Vec<usize>, Vec<f32>)], config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-review-{}-{dir_name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let buffers: Vec<Vec<u8>> =
        tensors.iter().map(|(_, _, data)| data.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .zip(&buffers)
        .map(|((name, shape, _), b)| (name.clone(), TensorView::new(Dtype::F32, shape.clone(), b).unwrap()))
        .collect();
    let path = dir.join("model.safetensors");
    std::fs::write(&path, serialize(views, None).unwrap()).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    path
}

fn cleanup(path: &Path) {
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// Gemma 3 tensors (as architecture.rs's gemma3_checkpoint), names prefixed by `prefix`
/// (`model.` for Gemma3ForCausalLM, `language_model.model.` for Gemma3ForConditionalGeneration).
fn gemma3_checkpoint(prefix: &str, layers: usize) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut shapes = vec![(format!("{prefix}embed_tokens.weight"), vec![10, D])];
    for layer in 0..layers {
        let l = format!("{prefix}layers.{layer}.");
        shapes.extend([
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
    shapes.push((format!("{prefix}norm.weight"), vec![D]));
    shapes
        .into_iter()
        .enumerate()
        .map(|(t, (name, shape))| {
            let n: usize = shape.iter().product();
            let data = (0..n).map(|k| t as f32 + k as f32 / 1000.0).collect();
            (name, shape, data)
        })
        .collect()
}

const TEXT_CONFIG: &str = "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 4, \
     \"hidden_size\": 8, \"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \
     \"rope_local_base_freq\": 10000.0, \"query_pre_attn_scalar\": 4, \"sliding_window\": 4, \
     \"sliding_window_pattern\": 2, \"hidden_activation\": \"gelu_pytorch_tanh\", \
     \"max_position_embeddings\": 32768";

fn text_config(extra: &str) -> String {
    format!(
        "{{\"model_type\": \"gemma3_text\", \"architectures\": [\"Gemma3ForCausalLM\"], {TEXT_CONFIG}{extra}}}"
    )
}

/// Whether opening the file and reading layer 0 is refused (any error).
fn refused(path: &Path) -> bool {
    ModelFile::open(path, None, None).and_then(|f| f.layer_weights(0).map(|_| ())).is_err()
}

/// EmbeddingGemma (model_type gemma3_text, `use_bidirectional_attention: true`): HF's layers
/// attend bidirectionally; the loader must refuse it, not prove a causal mask.
#[test]
fn review_bidirectional_gemma3_is_refused() {
    let path = write_with(
        "bidirectional",
        &gemma3_checkpoint("model.", 2),
        &text_config(", \"use_bidirectional_attention\": true"),
    );
    let outcome = refused(&path);
    cleanup(&path);
    assert!(outcome, "use_bidirectional_attention = true was read as a causal Gemma 3 decoder");
}

/// A tied Gemma 3 checkpoint that stores `lm_head.weight` (equal to the table): the LM head
/// is the table itself, not the √d-scaled embedding table.
#[test]
fn review_gemma3_explicit_tied_lm_head_is_unscaled() {
    let mut tensors = gemma3_checkpoint("model.", 1);
    let table = tensors[0].2.clone();
    tensors.push(("lm_head.weight".into(), vec![10, D], table.clone()));
    let path = write_with("tied-lm-head", &tensors, &text_config(""));
    let file = ModelFile::open(&path, None, None).unwrap();
    let head = file.untied_lm_head().unwrap().map(<[f64]>::to_vec);
    let scale = file.embedding_scale().unwrap();
    let embedding = file.embedding_tables().unwrap().unwrap().tokens.to_vec();
    cleanup(&path);
    let table: Vec<f64> = table.iter().map(|v| f64::from(*v)).collect();
    assert!(scale != 1.0);
    // The chain reads `untied_lm_head()`, else the embedding's (scaled) table.
    let effective = head.unwrap_or(embedding);
    assert_eq!(effective, table, "the LM head reads the √d-scaled table: logits × {scale}");
}

/// Gemma 3 4B–27B: config.json is Gemma3ForConditionalGeneration's, the text model's fields
/// nested under text_config (rope_theta, sliding_window, rope_scaling, query_pre_attn_scalar).
/// With only the language model's tensors, the loader must read text_config or refuse.
#[test]
fn review_gemma3_conditional_generation_config_is_read_or_refused() {
    let config = format!(
        "{{\"model_type\": \"gemma3\", \"architectures\": [\"Gemma3ForConditionalGeneration\"], \
         \"text_config\": {{\"model_type\": \"gemma3_text\", {TEXT_CONFIG}, \
         \"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": 8.0}}}}, \
         \"vision_config\": {{\"model_type\": \"siglip_vision_model\"}}}}"
    );
    let path = write_with("conditional", &gemma3_checkpoint("language_model.model.", 2), &config);
    // Without --heads: the error says "no config.json beside it" (there is one).
    let without_heads = ModelFile::open(&path, None, None).map(|_| ()).map_err(|e| e.to_string());
    println!("conditional, no --heads: {without_heads:?}");
    // With --heads 2 (what the error asks for):
    let outcome = match ModelFile::open(&path, None, Some(2)) {
        Err(e) => Err(e.to_string()),
        Ok(file) => match file.layer_weights(1) {
            Err(e) => Err(e.to_string()),
            Ok(_) => Ok((file.attention_window(0), file.rope_base_for(1))),
        },
    };
    cleanup(&path);
    // text_config says: layer 0 slides (window 4), layer 1 is global with base 10^6 and a
    // linear rope scaling of 8 (which must be refused).
    assert!(
        outcome.is_err(),
        "read as {outcome:?} (HF: window Some(4) on layer 0; layer 1 base 1e6 with linear ×8 rope scaling)"
    );
}

/// Gemma3TextConfig's defaults when a key is absent: rope_theta 1e6, sliding_window 4096,
/// query_pre_attn_scalar 256 (refused for a head width of 4).
#[test]
fn review_gemma3_config_defaults_are_hugging_faces() {
    let config = "{\"model_type\": \"gemma3_text\", \"num_attention_heads\": 2, \
        \"num_key_value_heads\": 1, \"head_dim\": 4, \"hidden_size\": 8, \"max_position_embeddings\": 32768, \
        \"query_pre_attn_scalar\": 4}";
    let path = write_with("defaults", &gemma3_checkpoint("model.", 6), config);
    let file = ModelFile::open(&path, None, None).unwrap();
    file.layer_weights(5).unwrap();
    assert_eq!(file.rope_base_for(5), 1_000_000.0, "global layer's rotary base (HF default rope_theta 1e6)");
    assert_eq!(file.rope_base_for(0), 10_000.0, "sliding layer's (HF default rope_local_base_freq)");
    assert_eq!(file.attention_window(0), Some(4096), "layer 0's window (HF default sliding_window 4096)");
    assert_eq!(file.norm_epsilon, 1e-6, "HF default rms_norm_eps");
    cleanup(&path);
    // Without query_pre_attn_scalar: HF's 256, not this head width.
    let path = write_with(
        "defaults-scalar",
        &gemma3_checkpoint("model.", 1),
        &config.replace(", \"query_pre_attn_scalar\": 4", ""),
    );
    let refused = ModelFile::open(&path, None, None).unwrap().layer_weights(0);
    cleanup(&path);
    assert!(
        matches!(refused, Err(ModelError::Unsupported(zkmha_model::architecture::Unsupported::ScoreScaling { ref value, .. })) if value == "256"),
        "{refused:?}"
    );
}

/// Control: the ambiguity of a vision tower's tensors (Gemma3ForConditionalGeneration with its
/// SigLIP tower) gives what error?
#[test]
fn review_gemma3_with_vision_tower_error() {
    let mut tensors = gemma3_checkpoint("language_model.model.", 1);
    for name in ["self_attn.q_proj.weight", "self_attn.k_proj.weight", "layer_norm1.weight"] {
        tensors.push((format!("vision_tower.vision_model.encoder.layers.0.{name}"), vec![D], vec![0.5; D]));
    }
    let config = format!(
        "{{\"model_type\": \"gemma3\", \"architectures\": [\"Gemma3ForConditionalGeneration\"], \
         \"text_config\": {{\"model_type\": \"gemma3_text\", {TEXT_CONFIG}}}}}"
    );
    let path = write_with("vision", &tensors, &config);
    let outcome = ModelFile::open(&path, None, Some(2)).and_then(|f| f.layer_weights(0).map(|_| ()));
    cleanup(&path);
    println!("vision tower: {outcome:?}");
    assert!(matches!(outcome, Err(ModelError::Unsupported(_))), "{outcome:?}");
}

/// Gemma 3's sliding layers rotate with rope_local_base_freq whether or not a window is in
/// effect (HF: `position_embeddings_local` when layer_types[i] is sliding_attention; Gemma 3
/// ignores `use_sliding_window`). The loader ties the local base to a window being read, so
/// `use_sliding_window: false` (README: "left alone") or `sliding_window: null` rotates the
/// sliding layers with the global base.
#[test]
fn review_gemma3_local_rope_base_does_not_depend_on_the_window() {
    for extra in [
        ", \"use_sliding_window\": false",
        ", \"sliding_window\": null, \
        \"layer_types\": [\"sliding_attention\", \"full_attention\"]",
    ] {
        let path = write_with("local-base", &gemma3_checkpoint("model.", 2), &text_config(extra));
        let file = ModelFile::open(&path, None, None).unwrap();
        file.layer_weights(0).unwrap();
        let base = file.rope_base_for(0);
        cleanup(&path);
        assert_eq!(base, 10_000.0, "{extra}: sliding layer 0's rotary base");
    }
}
