//! What a model computes, read from its own metadata, and the refusal of everything the proof
//! does not cover: "prove what the model computes", never a look-alike.
//!
//! ```text
//! metadata   config.json beside a safetensors file (model_type, architectures, and the fields
//!            that change the attention block), or the GGUF metadata (general.architecture,
//!            <arch>.attention.*, <arch>.rope.*); the tensor names only when there is neither
//!            (then a note says so), and --family only where the metadata is silent
//!
//! supported  bert                 BERT: biases on Q, K, V, O; absolute positions; no mask;
//!                                 post-norm layers, an erf-GELU MLP with biases (safetensors,
//!                                 or GGUF in llama.cpp's names: ffn_up, ffn_down,
//!                                 layer_output_norm; no activation key, BERT's is the erf GELU)
//!            gpt2                 GPT-2: fused Q|K|V (Conv1D), biases; causal
//!            llama, mistral       Llama family: RMSNorm before the block, grouped-query heads,
//!                                 rotary embeddings (unscaled, every pair of each head); biases
//!                                 only where the metadata says so (config attention_bias: all
//!                                 four; GGUF llama: those present, as llama.cpp applies them)
//!            qwen2                a Llama block with biases on Q, K, V (loaded and proven)
//!            gemma3, gemma3_text  Gemma 3's text decoder, a Llama-family layer with a QK-norm
//!                                 (q_norm/k_norm, attn_q_norm/attn_k_norm), a norm on each
//!                                 half's output (post_attention_layernorm and
//!                                 post_feedforward_layernorm; GGUF post_attention_norm,
//!                                 post_ffw_norm; its MLP's norm is pre_feedforward_layernorm,
//!                                 GGUF ffn_norm), norm scales 1 + w (Hugging Face; GGUF files
//!                                 store 1 + w), a gated tanh-GELU MLP, the √d_model embedding
//!                                 scale, every sliding_window_pattern-th layer global (6;
//!                                 llama.cpp's il % 6 == 5) and the others sliding with their
//!                                 own rotary base (rope_local_base_freq; 10 000 in GGUF),
//!                                 whatever window is read; Gemma3TextConfig's defaults where
//!                                 config.json is silent (rope_theta 10^6, sliding_window 4096,
//!                                 query_pre_attn_scalar 256, rms_norm_eps 10^-6)
//!            sliding windows      sliding_window (every layer, or per layer_types, or from
//!                                 Qwen2's max_window_layers; GGUF <arch>.attention.sliding_window):
//!                                 the layer's mask keeps i − j < w (ModelFile::attention_window)
//!
//! refused    (each a distinct [`Unsupported`] variant, one sentence naming the feature)
//!            another model_type / architecture (gemma, gemma2, qwen3, phi3, olmo2, roberta, …)
//!            metadata that names two architectures, or contradicts --family
//!            a bias tensor the architecture does not use (o_proj bias on qwen2 or mistral, …)
//!            a QK-norm (q_norm/k_norm, attn_q_norm/attn_k_norm, q_layernorm, …, qk_norm flags)
//!            outside gemma3
//!            a norm on the attention's output before the residual (post_attention_norm,
//!            attn_post_norm, Gemma-style post_attention_layernorm with pre_feedforward_layernorm)
//!            outside gemma3
//!            Gemma 3 27B's GGUF files (llama.cpp scales their scores by 1/√(d_model/h)), a
//!            GGUF gemma3 sliding_window_pattern other than llama.cpp's 6
//!            use_bidirectional_attention = true (EmbeddingGemma: no causal mask)
//!            a multimodal config.json (text_config, vision_config), whose nested text
//!            model's fields would otherwise be read as their defaults
//!            a chunked window in effect for the proven layer (attention_chunk_size), a
//!            sliding one of 2^32 tokens or more
//!            rotary scaling (rope_scaling / rope_parameters other than default,
//!            <arch>.rope.scaling.*, rope_freqs.weight, a non-standard rotary_emb.inv_freq)
//!            partial rotary embeddings (partial_rotary_factor < 1, rope.dimension_count < m)
//!            a score scaling other than 1/√m or a softcapping (query_pre_attn_scalar ≠ m,
//!            attn_logit_softcapping, attention_multiplier, <arch>.attention.scale,
//!            GPT-2 scale_attn_weights = false or scale_attn_by_inverse_layer_idx)
//!            BERT position_embedding_type other than absolute
//!            value heads of another width than key heads
//!            any other tensor of the layer the proof does not read
//!            a BERT GGUF file's tensors outside its layers other than its embeddings and their
//!            LayerNorm (llama.cpp's classifier head cls, cls.output); bert.attention.causal =
//!            true (llama.cpp then masks BERT's attention causally)
//!            an MLP activation other than gelu, gelu_new / gelu_pytorch_tanh / gelu_fast,
//!            silu / swish (GPT-2's activation_function; the others' hidden_act)
//!            MLP biases on a Llama-family layer whose config.json does not say mlp_bias
//!            (a llama model_type's: qwen2's and mistral's MLPs have none)
//!
//! harmless   tie_word_embeddings, attention_dropout, pretraining_tp,
//!            final_logit_softcapping and logit_scale (after the LM head: the head is then
//!            not proven, ModelFile::final_norm says why), a sliding
//!            window at least as long as the context, use_sliding_window = false
//! ```
//!
//! Metadata that contradicts the weights (hidden size, head width, key/value heads, the MLP's
//! width) is an error too ([`Unsupported::MetadataMismatch`]).

use crate::families::Family;
use crate::gguf::MetadataValue;
use std::collections::HashMap;

/// A feature of a model that the proof does not cover, or metadata that contradicts itself
/// or the weights: the model is refused rather than proven as something else.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unsupported {
    /// An architecture outside BERT, GPT-2 and the Llama family (llama, mistral, qwen2,
    /// gemma3).
    #[error("{name} is not supported: {reason}")]
    Architecture {
        /// The `model_type`, architecture class or `general.architecture`.
        name: String,
        /// What it computes that the proof does not.
        reason: String,
    },
    /// Two statements of the architecture that disagree.
    #[error("the model's metadata says {declared}, which contradicts {other}")]
    ConflictingArchitecture {
        /// What the metadata says.
        declared: String,
        /// The other statement (the `architectures` list, or `--family`).
        other: String,
    },
    /// A bias tensor the architecture does not use.
    #[error(
        "{tensor} is a bias {architecture} does not use: the file does not match its architecture, \
         so it is refused rather than proven with or without that bias"
    )]
    UnexpectedBias {
        /// The tensor.
        tensor: String,
        /// The architecture (or family, without metadata).
        architecture: String,
    },
    /// A norm on the queries and keys.
    #[error("{what} is a QK-norm (a norm on the queries and keys), which the proof does not cover")]
    QkNorm {
        /// The tensor or metadata field.
        what: String,
    },
    /// A norm on the attention's output before the residual.
    #[error(
        "{tensor} is a norm on the attention's output before the residual (post-attention norm), \
         which the proof does not cover"
    )]
    PostAttentionNorm {
        /// The tensor.
        tensor: String,
    },
    /// A chunked attention window in effect for the proven layer, or a sliding one of 2^32
    /// tokens or more (shorter sliding windows are proven).
    #[error(
        "layer {layer} attends through a {kind} window of {window} tokens, which the proof does not \
         cover (it proves full attention and sliding windows of up to 2^32 − 1 tokens)"
    )]
    SlidingWindow {
        /// The layer.
        layer: usize,
        /// The window in tokens.
        window: usize,
        /// "sliding" or "chunked".
        kind: String,
    },
    /// A window's size in config.json that is not a whole number of tokens.
    #[error(
        "config.json's {field} = {value} is not a whole number of tokens, so the window the model \
         attends through cannot be read"
    )]
    MalformedWindow {
        /// `sliding_window` or `attention_chunk_size`.
        field: String,
        /// The value as written.
        value: String,
    },
    /// Scaled rotary embeddings.
    #[error(
        "rotary scaling {kind} is not covered: the proof rotates pair t by position·base^(−2t/m), unscaled"
    )]
    RopeScaling {
        /// The scaling (type and where it was found).
        kind: String,
    },
    /// Rotary embeddings on part of each head.
    #[error("partial rotary embeddings ({what}) are not covered: the proof rotates every pair of each head")]
    PartialRotary {
        /// The field and value.
        what: String,
    },
    /// Attention scores scaled otherwise than by `1/√m`, or soft-capped.
    #[error("{field} = {value} changes the attention scores, which the proof scales by 1/√head_dim only")]
    ScoreScaling {
        /// The metadata field.
        field: String,
        /// Its value.
        value: String,
    },
    /// BERT with relative position embeddings in the attention.
    #[error(
        "position_embedding_type {kind} adds relative positions to the attention scores, which the \
         proof does not cover"
    )]
    PositionEmbedding {
        /// The type.
        kind: String,
    },
    /// Heads whose values are not as wide as their keys.
    #[error("heads with keys of {key} and values of {value} dimensions are not supported")]
    ValueHeadWidth {
        /// Key (and query) head width.
        key: usize,
        /// Value head width.
        value: usize,
    },
    /// Metadata that contradicts the weights.
    #[error("the metadata says {field} = {metadata}, the weights give {weights}")]
    MetadataMismatch {
        /// The field.
        field: String,
        /// What the metadata says.
        metadata: usize,
        /// What the tensors give.
        weights: usize,
    },
    /// Any other tensor of the layer.
    #[error("{tensor} is part of the layer but not of the proven computation")]
    UncoveredTensor {
        /// The tensor.
        tensor: String,
    },
    /// A tensor outside the layers that the proven computation does not read (a BERT GGUF
    /// file's classifier head).
    #[error("{tensor} is part of the model but not of the proven computation: {reason}")]
    UncoveredModelTensor {
        /// The tensor.
        tensor: String,
        /// What it is, and what the proof reads instead.
        reason: String,
    },
    /// A metadata field whose effect the proof does not cover or the loader does not read.
    #[error("{field} {reason}")]
    UnreadField {
        /// The field and its value, where it is (`config.json's use_bidirectional_attention =
        /// true`).
        field: String,
        /// What it does, and why it is refused.
        reason: String,
    },
    /// An MLP activation the proof does not have a table for.
    #[error(
        "the MLP's activation {name} is not covered: the proof has gelu (erf), gelu_new / \
         gelu_pytorch_tanh (tanh) and silu"
    )]
    Activation {
        /// The name the metadata gives it.
        name: String,
    },
}

/// Where the architecture was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataSource {
    /// `config.json` beside a safetensors file.
    ConfigJson,
    /// The GGUF file's own metadata.
    Gguf,
}

/// Which layers a window applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowLayers {
    /// Every layer.
    All,
    /// Layers from this index on (Qwen2's `max_window_layers`).
    From(usize),
    /// Layer `i` when entry `i` is true (`layer_types`).
    Listed(Vec<bool>),
    /// Every layer but each `n`-th (layer `i` when `(i + 1) % n ≠ 0`): Gemma 3's
    /// `sliding_window_pattern`, which llama.cpp fixes at 6 for its GGUF files.
    AllButEvery(usize),
}

impl WindowLayers {
    /// Whether layer `layer` is one of them.
    pub fn contains(&self, layer: usize) -> bool {
        match self {
            WindowLayers::All => true,
            WindowLayers::From(first) => layer >= *first,
            WindowLayers::Listed(layers) => layers.get(layer).copied().unwrap_or(false),
            WindowLayers::AllButEvery(n) => *n == 0 || !(layer + 1).is_multiple_of(*n),
        }
    }
}

/// An attention window of the metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Tokens.
    pub size: usize,
    /// The layers it applies to.
    pub layers: WindowLayers,
    /// "sliding" or "chunked".
    pub kind: &'static str,
}

/// Which Q, K, V, O biases a Llama-family layer has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BiasRule {
    /// None (llama without `attention_bias`, mistral): a bias tensor is refused.
    None,
    /// Q, K and V, required; an O bias is refused (qwen2).
    QueryKeyValue,
    /// All four, required (llama with `attention_bias`).
    All,
    /// Those present, any of the four (GGUF llama: llama.cpp adds each one present).
    Present,
    /// Q, K, V where present, an O bias refused (no metadata: tensor names only).
    PresentQueryKeyValue,
}

/// The supported architectures and their families.
fn family_of(architecture: &str) -> Option<Family> {
    match architecture {
        "bert" => Some(Family::Bert),
        "gpt2" => Some(Family::Gpt2),
        "llama" | "mistral" | "qwen2" | "gemma3" | "gemma3_text" => Some(Family::Llama),
        _ => None,
    }
}

/// Why an architecture is refused (one clause).
fn refusal_reason(architecture: &str) -> String {
    let known = match architecture {
        "gemma" => "its (1 + w) norm weights and √d_model embedding scale are not proven",
        "gemma2" => {
            "its post-attention and post-feed-forward norms, attention logit softcapping, (1 + w) \
             norm weights and embedding scale are not proven"
        }
        "qwen3" | "qwen3_moe" => "its QK-norm is not proven",
        "olmo2" => "its QK-norm and post-attention norm are not proven",
        "phi3" => "its fused qkv_proj and its long-context rotary scaling are not read",
        "phi" | "gpt_neox" | "gptj" | "stablelm" | "persimmon" => {
            "its partial rotary embeddings (and QK-norm where present) are not proven"
        }
        "roberta" | "xlm-roberta" | "camembert" => {
            "its position ids start after the padding index, which the BERT embedding here does not compute"
        }
        "smollm3" => "its layers without rotary embeddings (NoPE) are not proven",
        "llama4" => "its chunked attention, QK-norm and layers without rotary embeddings are not proven",
        "bloom" | "mpt" | "falcon" => "its ALiBi or parallel attention block is not proven",
        "mixtral" | "qwen2_moe" => {
            "it is not one of the supported model types (the attention may match, but it is not checked)"
        }
        _ => "",
    };
    if known.is_empty() {
        "the proof covers BERT (bert), GPT-2 (gpt2) and the Llama family (llama, mistral, qwen2, gemma3) only"
            .into()
    } else {
        known.into()
    }
}

/// The family of a supported architecture.
///
/// # Errors
/// [`Unsupported::Architecture`] for any other.
pub fn family_of_architecture(architecture: &str) -> Result<Family, Unsupported> {
    family_of(architecture).ok_or_else(|| Unsupported::Architecture {
        name: architecture.to_string(),
        reason: refusal_reason(architecture),
    })
}

/// The model type a Hugging Face class name stands for (`Qwen2ForCausalLM` → `qwen2`),
/// lower-cased; the class name itself when it is none of the supported ones.
fn class_architecture(class: &str) -> String {
    let end = ["For", "LMHead", "DoubleHeads", "Model"]
        .iter()
        .filter_map(|suffix| class.find(suffix))
        .min()
        .unwrap_or(class.len());
    let base = class[..end].to_lowercase();
    if family_of(&base).is_some() { base } else { class.to_string() }
}

/// The architecture a name stands for: Gemma 3's text model is `gemma3_text` in its config.json
/// and `Gemma3ForCausalLM` (read `gemma3`) in its class list.
fn canonical(architecture: &str) -> &str {
    match architecture {
        "gemma3_text" => "gemma3",
        other => other,
    }
}

/// Whether an architecture is Gemma 3's text decoder (`gemma3`, `gemma3_text`): a Llama-family
/// layer with a QK-norm, norms on each half's output, `(1 + w)` norm weights (Hugging Face;
/// GGUF files store `1 + w`), a `√d_model` embedding scale and its own rotary base on its
/// sliding-window layers.
pub fn is_gemma3(architecture: &str) -> bool {
    canonical(architecture) == "gemma3"
}

/// What the model's metadata says, beyond the family.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArchitectureMetadata {
    /// The architecture's name (`model_type` or `general.architecture`), when stated.
    pub architecture: Option<String>,
    /// Where it came from (`None`: no metadata).
    pub source: Option<MetadataSource>,
    /// Refusals found while reading (rotary scaling, softcapping, …), reported when the
    /// weights are read.
    pub refusals: Vec<Unsupported>,
    /// `attention_bias` / `qkv_bias` (config.json).
    pub attention_bias: Option<bool>,
    /// `hidden_size` / `n_embd` / `<arch>.embedding_length`.
    pub hidden_size: Option<usize>,
    /// `head_dim` / `<arch>.attention.key_length`.
    pub head_dim: Option<usize>,
    /// `<arch>.attention.value_length`.
    pub value_head_dim: Option<usize>,
    /// Dimensions rotated per head (`<arch>.rope.dimension_count`).
    pub rotary_dims: Option<usize>,
    /// `query_pre_attn_scalar`.
    pub query_pre_attn_scalar: Option<f64>,
    /// A window, if one is configured.
    pub window: Option<Window>,
    /// The rotary base of the window layers, when it is not the model's (Gemma 3:
    /// `rope_local_base_freq` in config.json; llama.cpp fixes it at 10 000 for its GGUF files).
    pub local_rope_base: Option<f64>,
    /// The layers Gemma 3 calls sliding (`layer_types`, else every layer but each
    /// `sliding_window_pattern`-th), which rotate with [`ArchitectureMetadata::local_rope_base`]
    /// whether a window is in effect or not.
    pub local_rope_layers: Option<WindowLayers>,
    /// The context length (`max_position_embeddings`, `n_positions`, `<arch>.context_length`).
    pub context_length: Option<usize>,
    /// The number of layers the metadata declares (`num_hidden_layers`, `n_layer`,
    /// `<arch>.block_count`) and the field that says it, checked against the tensors'.
    pub layer_count: Option<(usize, String)>,
    /// The MLP's hidden width (`intermediate_size`, `<arch>.feed_forward_length`), checked
    /// against the weights.
    pub intermediate_size: Option<usize>,
    /// config.json's `hidden_act`: the MLP's activation for BERT and the Llama family (GPT-2
    /// does not read it); GGUF files name none (their architecture fixes it).
    pub activation: Option<String>,
    /// config.json's `activation_function`: the MLP's activation for GPT-2 (the others do
    /// not read it).
    pub activation_function: Option<String>,
    /// `mlp_bias` (config.json).
    pub mlp_bias: Option<bool>,
    /// A change to the logits after the LM head (`final_logit_softcapping`, `logit_scale`,
    /// `<arch>.final_logit_softcapping`): the head is then not proven.
    pub logit_change: Option<String>,
}

impl ArchitectureMetadata {
    /// The Q, K, V, O bias rule of a Llama-family layer.
    pub fn bias_rule(&self) -> BiasRule {
        match (self.source, self.architecture.as_deref()) {
            (_, Some("qwen2")) => BiasRule::QueryKeyValue,
            (Some(MetadataSource::Gguf), _) => BiasRule::Present,
            (Some(MetadataSource::ConfigJson), Some("llama")) if self.attention_bias == Some(true) => {
                BiasRule::All
            }
            (Some(MetadataSource::ConfigJson), Some(_)) => BiasRule::None,
            // A config.json without model_type: its attention_bias flag, else the names.
            (_, _) => match self.attention_bias {
                Some(true) => BiasRule::All,
                Some(false) => BiasRule::None,
                None => BiasRule::PresentQueryKeyValue,
            },
        }
    }

    /// Whether a Llama-family layer may have biases on its MLP's projections: those a GGUF
    /// `llama` file has (llama.cpp's llama loader takes them as optional and applies them; its
    /// qwen2 loader has none, so a qwen2 file with them is refused), or when config.json says
    /// `mlp_bias: true` for a `llama` model (`mlp_bias` is LlamaConfig's: Qwen2's and Mistral's
    /// MLPs have no biases whatever the config says, and transformers drops such tensors).
    pub fn mlp_biases(&self) -> bool {
        let llama = self.architecture.as_deref().is_none_or(|a| a == "llama");
        match self.source {
            Some(MetadataSource::ConfigJson) => self.mlp_bias == Some(true) && llama,
            Some(MetadataSource::Gguf) => llama,
            None => true,
        }
    }

    /// The first refusal found while reading the metadata.
    ///
    /// # Errors
    /// That refusal.
    pub fn check(&self) -> Result<(), Unsupported> {
        match self.refusals.first() {
            Some(refusal) => Err(refusal.clone()),
            None => Ok(()),
        }
    }

    /// Whether a window is in effect for `layer` (shorter than the context).
    pub fn window_for(&self, layer: usize) -> Option<&Window> {
        let window = self.window.as_ref()?;
        if self.context_length.is_some_and(|context| window.size >= context) {
            return None;
        }
        self.is_window_layer(layer).then_some(window)
    }

    /// Whether the architecture is Gemma 3's text decoder ([`is_gemma3`]).
    pub fn is_gemma3(&self) -> bool {
        self.architecture.as_deref().is_some_and(is_gemma3)
    }

    /// What each RMSNorm scale read from the file is added to: 1 for a Gemma 3 checkpoint in
    /// Hugging Face's layout (its norms multiply by `1 + w`), 0 otherwise (GGUF files store
    /// `1 + w`: llama.cpp's converter adds the 1).
    pub fn norm_scale_offset(&self) -> f64 {
        if self.is_gemma3() && self.source != Some(MetadataSource::Gguf) { 1.0 } else { 0.0 }
    }

    /// Whether `layer` is one of the metadata's window layers, however long the context:
    /// Gemma 3 rotates those with their own base ([`ArchitectureMetadata::local_rope_base`]).
    pub fn is_window_layer(&self, layer: usize) -> bool {
        self.window.as_ref().is_some_and(|window| window.layers.contains(layer))
    }

    /// Whether `layer` rotates with [`ArchitectureMetadata::local_rope_base`] (Gemma 3's
    /// sliding layers).
    pub fn is_local_rope_layer(&self, layer: usize) -> bool {
        self.local_rope_base.is_some() && self.local_rope_layers.as_ref().is_some_and(|l| l.contains(layer))
    }
}

fn text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number(json: &serde_json::Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| json.get(*k).and_then(serde_json::Value::as_f64))
}

fn count(json: &serde_json::Value, keys: &[&str]) -> Option<usize> {
    keys.iter().find_map(|k| json.get(*k).and_then(serde_json::Value::as_u64)).map(|v| v as usize)
}

/// A rotary scaling object (`rope_scaling`, `rope_parameters`): `None` when absent, null or
/// of type "default".
fn rope_scaling(value: Option<&serde_json::Value>, field: &str) -> Option<Unsupported> {
    let value = value.filter(|v| !v.is_null())?;
    let kind = value.get("rope_type").or_else(|| value.get("type")).map(text);
    match kind.as_deref() {
        Some("default") => None,
        Some(kind) => Some(Unsupported::RopeScaling { kind: format!("{kind} ({field} in config.json)") }),
        None => Some(Unsupported::RopeScaling { kind: format!("{} ({field} in config.json)", text(value)) }),
    }
}

/// Reads a `config.json`: the architecture and every field that changes the attention block.
///
/// # Errors
/// [`Unsupported::Architecture`] for an unsupported `model_type` (or architecture class), and
/// [`Unsupported::ConflictingArchitecture`] when the two disagree. The other refusals are
/// collected in [`ArchitectureMetadata::refusals`].
pub fn from_config(json: &serde_json::Value) -> Result<ArchitectureMetadata, Unsupported> {
    let model_type = json.get("model_type").and_then(serde_json::Value::as_str).map(str::to_string);
    let classes: Vec<String> = json
        .get("architectures")
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.as_str().map(class_architecture)).collect())
        .unwrap_or_default();
    let architecture = match (model_type, classes.first()) {
        (Some(model_type), _) => {
            family_of_architecture(&model_type)?;
            if let Some(other) = classes.iter().find(|c| canonical(c) != canonical(&model_type)) {
                return Err(Unsupported::ConflictingArchitecture {
                    declared: format!("model_type {model_type}"),
                    other: format!("architectures {other}"),
                });
            }
            Some(model_type)
        }
        (None, Some(class)) => {
            family_of_architecture(class)?;
            Some(class.clone())
        }
        (None, None) => None,
    };
    // A multimodal checkpoint (Gemma3ForConditionalGeneration) nests its text model's fields:
    // read at the top level they would be another model's defaults.
    for nested in ["text_config", "vision_config"] {
        if json.get(nested).is_some_and(|v| !v.is_null()) {
            return Err(Unsupported::UnreadField {
                field: format!("config.json's {nested}"),
                reason:
                    "nests a multimodal model's configuration (such as Gemma3ForConditionalGeneration's), \
                         which is not read: the text model's fields would be taken from their defaults"
                        .into(),
            });
        }
    }
    let mut refusals = Vec::new();
    let mut refuse = |r: Unsupported| refusals.push(r);
    if json.get("use_bidirectional_attention").and_then(serde_json::Value::as_bool) == Some(true) {
        refuse(Unsupported::UnreadField {
            field: "config.json's use_bidirectional_attention = true".into(),
            reason: "makes the decoder attend both ways (EmbeddingGemma), which its proven causal and \
                     sliding masks do not"
                .into(),
        });
    }
    if let Some(r) = rope_scaling(json.get("rope_scaling"), "rope_scaling") {
        refuse(r);
    }
    if let Some(r) = rope_scaling(json.get("rope_parameters"), "rope_parameters") {
        refuse(r);
    }
    let partial = number(json, &["partial_rotary_factor"])
        .or_else(|| json.get("rope_parameters").and_then(|p| number(p, &["partial_rotary_factor"])));
    if let Some(factor) = partial.filter(|f| *f != 1.0) {
        refuse(Unsupported::PartialRotary { what: format!("partial_rotary_factor = {factor}") });
    }
    for field in ["rotary_dim", "rotary_pct"] {
        if let Some(value) = json.get(field).filter(|v| !v.is_null()) {
            refuse(Unsupported::PartialRotary { what: format!("{field} = {}", text(value)) });
        }
    }
    for field in ["attn_logit_softcapping", "attention_multiplier", "attention_scale"] {
        if let Some(value) = json.get(field).filter(|v| !v.is_null()) {
            refuse(Unsupported::ScoreScaling { field: field.into(), value: text(value) });
        }
    }
    if json.get("scale_attn_weights").and_then(serde_json::Value::as_bool) == Some(false) {
        refuse(Unsupported::ScoreScaling { field: "scale_attn_weights".into(), value: "false".into() });
    }
    if json.get("scale_attn_by_inverse_layer_idx").and_then(serde_json::Value::as_bool) == Some(true) {
        refuse(Unsupported::ScoreScaling {
            field: "scale_attn_by_inverse_layer_idx".into(),
            value: "true".into(),
        });
    }
    for field in ["qk_norm", "use_qk_norm", "qk_layernorm"] {
        if json.get(field).and_then(serde_json::Value::as_bool) == Some(true) {
            refuse(Unsupported::QkNorm { what: format!("config.json {field} = true") });
        }
    }
    if let Some(kind) = json.get("position_embedding_type").and_then(serde_json::Value::as_str)
        && kind != "absolute"
    {
        refuse(Unsupported::PositionEmbedding { kind: kind.into() });
    }
    let context_length = count(json, &["max_position_embeddings", "n_positions", "n_ctx"]);
    // A window's size that is not a whole number of tokens is refused, not read as none: a
    // layer proven with full attention would not be the model's.
    let window_field = |field: &str| match json.get(field).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(0) => Ok(None),
            Some(size) => Ok(Some(size as usize)),
            None => Err(Unsupported::MalformedWindow { field: field.into(), value: value.to_string() }),
        },
    };
    let gemma3 = architecture.as_deref().is_some_and(is_gemma3);
    let (mut window_size, chunk) =
        match (window_field("sliding_window"), window_field("attention_chunk_size")) {
            (Ok(window), Ok(chunk)) => (window, chunk),
            (Err(refusal), _) | (_, Err(refusal)) => {
                refuse(refusal);
                (None, None)
            }
        };
    // Gemma3TextConfig's window when the key is absent (a null one is no window).
    if gemma3 && json.get("sliding_window").is_none() {
        window_size = Some(4096);
    }
    // Hugging Face's Qwen2 (and Qwen2-MoE) default to no window, and to windows from layer 28
    // on when it is switched on; Mistral and the others apply a configured window; Gemma 3's
    // sliding layers do not read use_sliding_window.
    let qwen2 = matches!(architecture.as_deref(), Some("qwen2" | "qwen2_moe"));
    let use_window =
        gemma3 || json.get("use_sliding_window").and_then(serde_json::Value::as_bool).unwrap_or(!qwen2);
    let layer_types: Option<Vec<String>> = json
        .get("layer_types")
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().map(|t| t.as_str().unwrap_or("").to_string()).collect());
    let listed =
        |types: &[String]| WindowLayers::Listed(types.iter().map(|t| t != "full_attention").collect());
    let chunked_types =
        layer_types.as_ref().is_some_and(|types| types.iter().any(|t| t == "chunked_attention"));
    // Gemma 3's sliding layers (layer_types, else every sliding_window_pattern-th layer global,
    // 6 by default): their rotary base is rope_local_base_freq whatever window is read.
    let gemma3_sliding = gemma3.then(|| match &layer_types {
        Some(types) => listed(types),
        None => WindowLayers::AllButEvery(count(json, &["sliding_window_pattern"]).unwrap_or(6)),
    });
    let window = match (window_size, chunk, layer_types) {
        // A chunked window anywhere (Llama 4) is refused on every layer that is not full
        // attention, whatever else is configured.
        (size, Some(chunk), types) => Some(Window {
            size: chunk.min(size.unwrap_or(usize::MAX)),
            layers: types.as_deref().map_or(WindowLayers::All, listed),
            kind: "chunked",
        }),
        (Some(size), None, Some(types)) if chunked_types => {
            Some(Window { size, layers: listed(&types), kind: "chunked" })
        }
        (Some(size), None, Some(types)) if use_window => {
            Some(Window { size, layers: listed(&types), kind: "sliding" })
        }
        (Some(size), None, None) if gemma3 => Some(Window {
            size,
            layers: gemma3_sliding.clone().unwrap_or(WindowLayers::All),
            kind: "sliding",
        }),
        (Some(size), None, None) if use_window => Some(Window {
            size,
            layers: match count(json, &["max_window_layers"]) {
                Some(first) if json.get("use_sliding_window").is_some() => WindowLayers::From(first),
                None if qwen2 => WindowLayers::From(28),
                _ => WindowLayers::All,
            },
            kind: "sliding",
        }),
        _ => None,
    };
    Ok(ArchitectureMetadata {
        architecture,
        source: Some(MetadataSource::ConfigJson),
        refusals,
        attention_bias: ["attention_bias", "qkv_bias"]
            .iter()
            .find_map(|k| json.get(*k).and_then(serde_json::Value::as_bool)),
        hidden_size: count(json, &["hidden_size", "n_embd", "d_model"]),
        head_dim: count(json, &["head_dim"]),
        value_head_dim: None,
        rotary_dims: None,
        // Gemma3TextConfig's default is 256 (its default head width).
        query_pre_attn_scalar: number(json, &["query_pre_attn_scalar"]).or(gemma3.then_some(256.0)),
        window,
        // Gemma 3's sliding layers rotate with rope_local_base_freq (10 000 by default).
        local_rope_base: gemma3.then(|| number(json, &["rope_local_base_freq"]).unwrap_or(10_000.0)),
        local_rope_layers: gemma3_sliding,
        context_length,
        layer_count: ["num_hidden_layers", "n_layer"]
            .iter()
            .find_map(|field| count(json, &[field]).map(|n| (n, format!("config.json {field}")))),
        intermediate_size: count(json, &["intermediate_size"]),
        // Gemma 3's MLP reads hidden_activation (gelu_pytorch_tanh by default), the others
        // hidden_act.
        activation: if gemma3 {
            Some(
                json.get("hidden_activation")
                    .filter(|v| !v.is_null())
                    .map_or("gelu_pytorch_tanh".into(), text),
            )
        } else {
            json.get("hidden_act").filter(|v| !v.is_null()).map(text)
        },
        activation_function: json.get("activation_function").filter(|v| !v.is_null()).map(text),
        mlp_bias: json.get("mlp_bias").and_then(serde_json::Value::as_bool),
        logit_change: ["final_logit_softcapping", "logit_scale"].iter().find_map(|k| {
            number(json, &[k])
                .filter(|v| *v != 0.0 && !(*k == "logit_scale" && *v == 1.0))
                .map(|v| format!("{k} = {v}"))
        }),
    })
}

/// Reads a GGUF file's metadata for `architecture` (`general.architecture`): the keys that
/// change the attention block. Unsupported architectures are not refused here (a GGUF file
/// may hold only tensors); [`family_of_architecture`] refuses them when weights are read.
pub fn from_gguf(architecture: &str, metadata: &HashMap<String, MetadataValue>) -> ArchitectureMetadata {
    let key = |suffix: &str| metadata.get(&format!("{architecture}.{suffix}"));
    let size = |suffix: &str| key(suffix).and_then(MetadataValue::as_usize);
    let mut refusals = Vec::new();
    if let Some(kind) = key("rope.scaling.type").and_then(MetadataValue::as_text)
        && kind != "none"
    {
        refusals
            .push(Unsupported::RopeScaling { kind: format!("{kind} ({architecture}.rope.scaling.type)") });
    }
    for field in ["rope.scaling.factor", "rope.scale_linear", "rope.scaling.attn_factor"] {
        if let Some(factor) = key(field).and_then(MetadataValue::as_f64).filter(|f| *f != 0.0 && *f != 1.0) {
            refusals.push(Unsupported::RopeScaling { kind: format!("{architecture}.{field} = {factor}") });
        }
    }
    for field in ["attn_logit_softcapping", "attention.scale"] {
        if let Some(value) = key(field).and_then(MetadataValue::as_f64).filter(|v| *v != 0.0) {
            refusals.push(Unsupported::ScoreScaling {
                field: format!("{architecture}.{field}"),
                value: value.to_string(),
            });
        }
    }
    // llama.cpp masks a BERT file's attention causally when it says so; BERT's proven
    // attention has no mask.
    if architecture == "bert" && key("attention.causal").and_then(MetadataValue::as_bool) == Some(true) {
        refusals.push(Unsupported::UnreadField {
            field: "bert.attention.causal = true".into(),
            reason: "makes each token attend only to itself and the tokens before it, which BERT's \
                     proven attention (every token attends to every token) does not do"
                .into(),
        });
    }
    let gemma3 = is_gemma3(architecture);
    // llama.cpp's Gemma 3 loader computes with every 6th layer global (`il % 6 == 5`) unless
    // the file states a pattern, which recent versions read: a file that states another than
    // 6 is refused rather than matched to one version's reading.
    let pattern = key("attention.sliding_window_pattern");
    if gemma3 && pattern.is_some_and(|p| p.as_usize() != Some(6)) {
        refusals.push(Unsupported::UnreadField {
            field: format!("{architecture}.attention.sliding_window_pattern"),
            reason: "is not 6, the pattern llama.cpp's Gemma 3 loader computes with (every sixth layer \
                     global), so which layers slide is not known"
                .into(),
        });
    }
    let gemma3_sliding = gemma3.then_some(WindowLayers::AllButEvery(6));
    let window = size("attention.sliding_window").filter(|&w| w > 0).map(|size| Window {
        size,
        layers: gemma3_sliding.clone().unwrap_or(WindowLayers::All),
        kind: "sliding",
    });
    // Without a window llama.cpp slides no layer: every layer rotates with rope.freq_base.
    let local_rope_layers = window.as_ref().and(gemma3_sliding);
    ArchitectureMetadata {
        architecture: Some(architecture.to_string()),
        source: Some(MetadataSource::Gguf),
        refusals,
        attention_bias: None,
        hidden_size: size("embedding_length"),
        head_dim: size("attention.key_length"),
        value_head_dim: size("attention.value_length"),
        rotary_dims: size("rope.dimension_count"),
        // llama.cpp scales Gemma 3 27B's scores (its 62 layers) by 1/√(d_model/h), not 1/√m.
        query_pre_attn_scalar: match (
            size("block_count"),
            size("embedding_length"),
            size("attention.head_count"),
        ) {
            (Some(62), Some(d), Some(h)) if gemma3 && h > 0 => Some((d / h) as f64),
            _ => None,
        },
        window,
        // llama.cpp rotates Gemma 3's sliding layers with base 10 000 (rope.freq_base_swa
        // where a file states it).
        local_rope_base: gemma3
            .then(|| key("rope.freq_base_swa").and_then(MetadataValue::as_f64).unwrap_or(10_000.0)),
        local_rope_layers,
        context_length: size("context_length"),
        layer_count: size("block_count").map(|n| (n, format!("{architecture}.block_count"))),
        intermediate_size: size("feed_forward_length"),
        activation: None,
        activation_function: None,
        mlp_bias: None,
        logit_change: key("final_logit_softcapping")
            .and_then(MetadataValue::as_f64)
            .filter(|v| *v != 0.0)
            .map(|v| format!("{architecture}.final_logit_softcapping = {v}")),
    }
}

/// The family to read a file as: the metadata's architecture (refusing unsupported ones and a
/// contradicting `requested` family), else `requested`, else the tensor names.
///
/// # Errors
/// [`Unsupported::Architecture`], [`Unsupported::ConflictingArchitecture`]; `Ok(None)` when
/// nothing tells the family.
pub fn resolve_family<'a>(
    metadata: &ArchitectureMetadata,
    names: impl IntoIterator<Item = &'a str> + Clone,
    requested: Option<Family>,
) -> Result<Option<Family>, Unsupported> {
    match metadata.architecture.as_deref() {
        Some(architecture) => {
            let family = family_of_architecture(architecture)?;
            match requested {
                Some(r) if r != family => Err(Unsupported::ConflictingArchitecture {
                    declared: format!("{architecture} ({} family)", family.name()),
                    other: format!("--family {}", r.name()),
                }),
                _ => Ok(Some(family)),
            }
        }
        None => Ok(requested.or_else(|| Family::detect(names))),
    }
}

/// The part of `name` after layer `layer`'s prefix (`layers.N.`, `layer.N.`, `h.N.`,
/// `blk.N.`), if it is one of the layer's tensors.
fn layer_part(name: &str, layer: usize) -> Option<&str> {
    for container in ["layers", "layer", "h", "blk"] {
        let prefix = format!("{container}.{layer}.");
        if let Some(rest) = name.strip_prefix(&prefix) {
            return Some(rest);
        }
        if let Some(at) = name.find(&format!(".{prefix}")) {
            return Some(&name[at + 1 + prefix.len()..]);
        }
    }
    None
}

/// Gemma 3's norms beyond a Llama layer's, all proven: the QK-norm and the norms on each
/// half's output (its `post_attention_layernorm` is the attention's output norm, and
/// `pre_feedforward_layernorm` the MLP's input norm).
const GEMMA3_NORMS: [&str; 4] = [
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "pre_feedforward_layernorm.weight",
    "post_feedforward_layernorm.weight",
];

/// Whether a tensor part is a QK-norm.
fn is_qk_norm(part: &str) -> bool {
    [
        "q_norm",
        "k_norm",
        "q_layernorm",
        "k_layernorm",
        "query_layernorm",
        "key_layernorm",
        "query_norm",
        "key_norm",
    ]
    .iter()
    .any(|n| part.contains(n))
}

/// The layer's tensors checked against what the family's proven layer reads: QK-norms,
/// post-attention norms (both proven for Gemma 3, `architecture` `gemma3` or `gemma3_text`),
/// biases (by `rule` for the Llama family's attention, `mlp_biases` for
/// its MLP) and any other tensor of the layer are refused;
/// also a global `rope_freqs` table. `names` pairs each tensor's name as read (GGUF names
/// mapped to Hugging Face's) with its name in the file, which refusals quote.
///
/// # Errors
/// The first refusal, by tensor name.
pub fn check_layer_tensors<'a>(
    names: impl IntoIterator<Item = (&'a str, &'a str)>,
    family: Family,
    layer: usize,
    rule: BiasRule,
    mlp_biases: bool,
    architecture: &str,
) -> Result<(), Unsupported> {
    let names: Vec<(&str, &str)> = names.into_iter().collect();
    // (name in the file, the part after the layer's prefix in the name as read)
    let mut parts: Vec<(&str, &str)> =
        names.iter().filter_map(|(read, file)| layer_part(read, layer).map(|p| (*file, p))).collect();
    parts.sort_unstable();
    if let Some((_, name)) =
        names.iter().find(|(n, _)| *n == "rope_freqs.weight" || n.ends_with(".rope_freqs.weight"))
    {
        return Err(Unsupported::RopeScaling { kind: format!("per-frequency factors ({name})") });
    }
    // Gemma 3's QK-norm and norms on each half's output are proven (and required).
    let gemma3 = family == Family::Llama && is_gemma3(architecture);
    if let Some((name, _)) =
        parts.iter().find(|(_, p)| is_qk_norm(p) && !(gemma3 && GEMMA3_NORMS.contains(p)))
    {
        return Err(Unsupported::QkNorm { what: (*name).to_string() });
    }
    let has = |part: &str| parts.iter().any(|(_, p)| *p == part);
    let gemma_style = has("pre_feedforward_layernorm.weight") || !has("input_layernorm.weight");
    for (name, part) in parts.iter().filter(|(_, p)| !(gemma3 && GEMMA3_NORMS.contains(p))) {
        let post_norm = part.contains("post_attention_norm")
            || part.contains("attn_post_norm")
            || part.contains("post_attn_norm")
            || (family != Family::Bert && part.contains("attn_output_norm"))
            || (family == Family::Llama
                && part.starts_with("post_attention_layernorm")
                && gemma_style
                && !gemma3);
        if post_norm {
            return Err(Unsupported::PostAttentionNorm { tensor: (*name).to_string() });
        }
    }
    let expected: &[&str] = match family {
        Family::Bert => &[
            "attention.self.query.weight",
            "attention.self.query.bias",
            "attention.self.key.weight",
            "attention.self.key.bias",
            "attention.self.value.weight",
            "attention.self.value.bias",
            "attention.output.dense.weight",
            "attention.output.dense.bias",
            "attention.output.LayerNorm.weight",
            "attention.output.LayerNorm.bias",
            "intermediate.dense.weight",
            "intermediate.dense.bias",
            "output.dense.weight",
            "output.dense.bias",
            "output.LayerNorm.weight",
            "output.LayerNorm.bias",
        ],
        Family::Gpt2 => &[
            "attn.c_attn.weight",
            "attn.c_attn.bias",
            "attn.c_proj.weight",
            "attn.c_proj.bias",
            // The causal mask's buffers in older checkpoints.
            "attn.bias",
            "attn.masked_bias",
            "ln_1.weight",
            "ln_1.bias",
            "ln_2.weight",
            "ln_2.bias",
            "mlp.c_fc.weight",
            "mlp.c_fc.bias",
            "mlp.c_proj.weight",
            "mlp.c_proj.bias",
        ],
        Family::Llama => &[
            "self_attn.q_proj.weight",
            "self_attn.k_proj.weight",
            "self_attn.v_proj.weight",
            "self_attn.o_proj.weight",
            "self_attn.rotary_emb.inv_freq",
            "input_layernorm.weight",
            "post_attention_layernorm.weight",
            "mlp.gate_proj.weight",
            "mlp.up_proj.weight",
            "mlp.down_proj.weight",
        ],
    };
    for (name, part) in &parts {
        if family == Family::Llama
            && let Some(projection) =
                part.strip_prefix("self_attn.").and_then(|p| p.strip_suffix("_proj.bias"))
        {
            let allowed = match rule {
                BiasRule::None => false,
                BiasRule::All | BiasRule::Present => true,
                BiasRule::QueryKeyValue | BiasRule::PresentQueryKeyValue => projection != "o",
            };
            if !allowed {
                return Err(Unsupported::UnexpectedBias {
                    tensor: (*name).to_string(),
                    architecture: architecture.to_string(),
                });
            }
            continue;
        }
        if family == Family::Llama
            && let Some(projection) = part.strip_prefix("mlp.").and_then(|p| p.strip_suffix("_proj.bias"))
        {
            // llama.cpp applies the MLP biases a GGUF file has; a config.json says whether
            // the model has them (Llama's mlp_bias, false by default).
            let allowed = ["gate", "up", "down"].contains(&projection) && mlp_biases;
            if !allowed {
                return Err(Unsupported::UnexpectedBias {
                    tensor: (*name).to_string(),
                    architecture: architecture.to_string(),
                });
            }
            continue;
        }
        // Every family's whole layer is proven: every tensor must be read.
        if !(expected.contains(part) || (gemma3 && GEMMA3_NORMS.contains(part))) {
            return Err(Unsupported::UncoveredTensor { tensor: (*name).to_string() });
        }
    }
    Ok(())
}

/// The tensors outside the layers that a BERT GGUF file's proven computation reads: the
/// embeddings (word, position, token type) and their LayerNorm.
const BERT_GGUF_EMBEDDINGS: [&str; 5] = [
    "token_embd.weight",
    "position_embd.weight",
    "token_types.weight",
    "token_embd_norm.weight",
    "token_embd_norm.bias",
];

/// A BERT GGUF file's tensors outside its layers (`names`: the tensors' names in the file)
/// checked against what the proof reads: the embeddings and their LayerNorm. Anything else
/// is refused by name — llama.cpp's classifier head (`cls`, `cls.output`, which it applies to
/// the pooled output of a reranker or classifier), or a tensor this loader does not know. (The
/// layers' tensors are [`check_layer_tensors`]'.)
///
/// # Errors
/// [`Unsupported::UncoveredModelTensor`] naming the first such tensor.
pub fn check_bert_gguf_tensors<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), Unsupported> {
    let mut outside: Vec<&str> =
        names.into_iter().filter(|n| !n.starts_with("blk.") && !BERT_GGUF_EMBEDDINGS.contains(n)).collect();
    outside.sort_unstable();
    let Some(tensor) = outside.first() else {
        return Ok(());
    };
    let reason = if *tensor == "cls" || tensor.starts_with("cls.") {
        "it is a classifier head llama.cpp applies to the pooled output, and the proof ends at the \
         last layer's hidden state"
    } else {
        "outside its layers the proof reads a BERT GGUF file's token_embd, position_embd, \
         token_types and token_embd_norm only"
    };
    Err(Unsupported::UncoveredModelTensor { tensor: (*tensor).to_string(), reason: reason.into() })
}
