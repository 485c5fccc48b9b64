//! A model file opened for one attention layer: its architecture, head counts and norm
//! constants (from the file's metadata — GGUF, or a `config.json` beside a safetensors file —
//! else flags and the tensor names), its weights, and the layer input `X` computed from token
//! ids. What the proof does not cover is refused ([`crate::architecture`]).
//!
//! ```text
//! BERT    X = H = LayerNorm(E_word[ids] + E_position[0..s] + E_type[0])  (layer 0); Z = X + Y
//! GPT-2   H = E_token[ids] + E_position[0..s] (layer 0),  X = LayerNorm_1,ℓ(H);  Z = H + Y
//! Llama   H = E_token[ids] (layer 0),                     X = RMSNorm_ℓ(H) ⊙ g;  Z = H + Y
//! Gemma 3 H = E_token[ids]·√d (layer 0),                  X = RMSNorm_ℓ(H) ⊙ (1 + w);
//!         Z = H + RMSNorm_a(Y) (Y from QK-normed heads), H' = Z + RMSNorm_f(MLP(RMSNorm(Z)))
//! ```
//!
//! Deeper layers need the blocks before them: their hidden state `H` comes from a file
//! (`--input`), and the layer's own norm gives `X`.

use crate::ModelError;
use crate::architecture::{self, ArchitectureMetadata, MetadataSource, Unsupported};
use crate::families::{
    AttentionWeights, Family, TensorFile, attention_weights, feed_forward_weights, gemma3_norm_weights,
    post_norm_weights,
};
use crate::tokenizer::TextTokenizer;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use zkmha_nn::{Activation, FeedForwardWeights, FloatModelWeights, NormKind, NormWeights, Residual};

/// A model file and what its metadata says.
pub struct ModelFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its family.
    pub family: Family,
    /// The architecture its metadata names (`qwen2`, `llama`, …), if any.
    pub architecture: Option<String>,
    /// Where the architecture was read from (`None`: the tensor names or `--family`).
    pub architecture_source: Option<MetadataSource>,
    /// Query heads.
    pub heads: usize,
    /// The layer norm's (or RMS norm's) ε.
    pub norm_epsilon: f64,
    /// The rotary embeddings' frequency base (Llama; GGUF metadata, `rope_theta` in
    /// config.json, or 10 000).
    pub rope_base: f64,
    tensors: TensorFile,
    /// The token-embedding table times the embedding scale, when it is not 1 (Gemma 3).
    scaled_tokens: OnceLock<Vec<f64>>,
    /// BERT's position rows with the token type 0 row added (the single-segment input every
    /// text and token list is), made once.
    typed_positions: OnceLock<Vec<f64>>,
}

/// The `config.json` beside `path`, if there is one.
fn read_config(path: &Path) -> Result<Option<serde_json::Value>, ModelError> {
    let Some(file) = path.parent().map(|dir| dir.join("config.json")).filter(|f| f.is_file()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ModelError::Io { path: file.clone(), message: e.to_string() })?;
    let json = serde_json::from_str(&text).map_err(|e| {
        ModelError::Input(format!("{} (the model's config.json) is not valid JSON: {e}", file.display()))
    })?;
    Ok(Some(json))
}

/// Merges a `config.json` into a safetensors file's (empty) metadata.
fn merge_config(tensors: &mut TensorFile, json: &serde_json::Value) -> Result<(), ModelError> {
    let number = |keys: &[&str]| keys.iter().find_map(|k| json.get(*k));
    let count = |keys: &[&str]| number(keys).and_then(serde_json::Value::as_u64).map(|v| v as usize);
    let architecture = architecture::from_config(json)?;
    let meta = &mut tensors.metadata;
    meta.family =
        architecture.architecture.as_deref().and_then(|a| architecture::family_of_architecture(a).ok());
    meta.heads = count(&["num_attention_heads", "n_head"]);
    meta.key_value_heads = count(&["num_key_value_heads"]);
    meta.norm_epsilon =
        number(&["layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps"]).and_then(serde_json::Value::as_f64);
    meta.rope_base = number(&["rope_theta"])
        .or_else(|| json.get("rope_parameters").and_then(|p| p.get("rope_theta")))
        .and_then(serde_json::Value::as_f64);
    meta.bos_token_id = count(&["bos_token_id"]);
    meta.architecture = architecture;
    Ok(())
}

impl ModelFile {
    /// Opens a safetensors or GGUF file. The architecture comes from the file's metadata
    /// (GGUF) or the `config.json` beside it (safetensors); `family` only where they name
    /// none (else it must agree), then the tensor names. The head count comes from `heads`
    /// (which must agree with the metadata) or the metadata.
    ///
    /// # Errors
    /// [`ModelError::Io`] / [`ModelError::Corrupt`] for unreadable files,
    /// [`ModelError::Unsupported`] for an architecture the proof does not cover or metadata
    /// that contradicts `family` or `heads`, [`ModelError::Input`] when the family or the head
    /// count cannot be told.
    pub fn open(path: &Path, family: Option<Family>, heads: Option<usize>) -> Result<Self, ModelError> {
        let mut tensors = TensorFile::read(path)?;
        if tensors.metadata.architecture.source != Some(MetadataSource::Gguf)
            && let Some(json) = read_config(path)?
        {
            merge_config(&mut tensors, &json)?;
        }
        let meta = tensors.metadata.clone();
        let family = match architecture::resolve_family(&meta.architecture, tensors.names(), family)? {
            Some(f) => f,
            None => {
                return Err(ModelError::Input(format!(
                    "cannot tell the model family of {} from its metadata or tensor names; pass --family bert, gpt2 or llama",
                    path.display()
                )));
            }
        };
        if heads == Some(0) {
            return Err(ModelError::Input("--heads 0: a model has at least one attention head".into()));
        }
        if let (Some(flag), Some(declared)) = (heads, meta.heads)
            && flag != declared
        {
            return Err(Unsupported::ConflictingArchitecture {
                declared: format!("{declared} attention heads"),
                other: format!("--heads {flag}"),
            }
            .into());
        }
        check_declared_sizes(path, &meta.architecture, &tensors, family)?;
        let heads = heads.or(meta.heads).ok_or_else(|| {
            ModelError::Input(format!(
                "{} does not say how many attention heads the model has (neither its metadata nor a config.json beside it); pass --heads",
                path.display()
            ))
        })?;
        // Hugging Face's defaults where config.json is silent (Gemma3TextConfig's: ε 10^-6,
        // rope_theta 10^6); llama.cpp's rotary base for a GGUF file is 10 000 whatever the
        // architecture.
        let gemma3 = meta.architecture.is_gemma3() && meta.architecture.source != Some(MetadataSource::Gguf);
        let norm_epsilon = meta.norm_epsilon.unwrap_or(match family {
            Family::Bert => 1e-12,
            Family::Llama if gemma3 => 1e-6,
            Family::Gpt2 | Family::Llama => 1e-5,
        });
        if !(norm_epsilon.is_finite() && norm_epsilon > 0.0 && norm_epsilon < 1.0) {
            return Err(ModelError::Input(format!(
                "{}'s metadata declares the norms' ε = {norm_epsilon}, which no norm uses (it must lie between 0 and 1)",
                path.display()
            )));
        }
        let rope_base = meta.rope_base.unwrap_or(if gemma3 { 1_000_000.0 } else { 10_000.0 });
        Ok(Self {
            path: path.to_path_buf(),
            family,
            architecture: meta.architecture.architecture.clone(),
            architecture_source: meta.architecture.source,
            heads,
            norm_epsilon,
            rope_base,
            tensors,
            scaled_tokens: OnceLock::new(),
            typed_positions: OnceLock::new(),
        })
    }

    /// The architecture's name (`qwen2`), or the family's without metadata (`llama`).
    pub fn architecture_name(&self) -> &str {
        self.architecture.as_deref().unwrap_or(self.family.name())
    }

    /// Layer `layer`'s attention weights.
    ///
    /// # Errors
    /// As [`attention_weights`].
    pub fn attention_weights(&self, layer: usize) -> Result<AttentionWeights, ModelError> {
        attention_weights(&self.tensors, layer, self.heads, Some(self.family))
    }

    /// The sliding window layer `layer` attends through, in tokens (`i − j < window`), when
    /// the metadata declares one shorter than the context for that layer; `None` for full
    /// causal (or, BERT, bidirectional) attention. [`ModelFile::attention_weights`] refuses
    /// a chunked window.
    pub fn attention_window(&self, layer: usize) -> Option<usize> {
        let window = self.tensors.metadata.architecture.window_for(layer)?;
        (window.kind == "sliding").then_some(window.size)
    }

    /// Layer `layer`'s norm and MLP after the attention block (BERT: the norm after the
    /// attention's residual, `intermediate.dense` and `output.dense`). Read after
    /// [`ModelFile::attention_weights`], which checks the layer's tensors.
    ///
    /// # Errors
    /// As [`feed_forward_weights`].
    pub fn feed_forward_weights(&self, layer: usize) -> Result<Option<FeedForwardWeights<f64>>, ModelError> {
        feed_forward_weights(&self.tensors, layer, self.family, self.model_width()?)
    }

    /// The MLP's activation: the one config.json names in the field the family's Hugging Face
    /// model reads (GPT-2: `activation_function`; BERT and the Llama family: `hidden_act`; the
    /// other field is ignored, as transformers ignores it), else the architecture's (GGUF files
    /// name none): GPT-2's `gelu_new` (llama.cpp's GELU is the tanh form too), the Llama
    /// family's SiLU, BERT's erf GELU (the model's own, as `hidden_act: gelu` defines it;
    /// llama.cpp evaluates a BERT file's GELU in the tanh form, within 4.8·10⁻⁴ of it).
    ///
    /// # Errors
    /// [`Unsupported::Activation`] for a name the proof has no table for.
    pub fn activation(&self) -> Result<Activation, ModelError> {
        let metadata = &self.tensors.metadata.architecture;
        let named = match self.family {
            Family::Gpt2 => &metadata.activation_function,
            Family::Bert | Family::Llama => &metadata.activation,
        };
        match named {
            Some(name) => Activation::from_name(name)
                .ok_or_else(|| Unsupported::Activation { name: name.clone() }.into()),
            None => Ok(match self.family {
                Family::Bert => Activation::GeluErf,
                // llama.cpp's Gemma 3 MLP is a gated GELU (tanh form).
                Family::Llama if metadata.is_gemma3() => Activation::GeluTanh,
                Family::Gpt2 => Activation::GeluTanh,
                Family::Llama => Activation::Silu,
            }),
        }
    }

    /// The token-embedding table's rows (the vocabulary size).
    ///
    /// # Errors
    /// [`ModelError::MissingTensor`].
    pub fn vocabulary_size(&self) -> Result<usize, ModelError> {
        Ok(self.tensors.shape(self.token_embeddings())?.first().copied().unwrap_or(0))
    }

    /// The most tokens the position table takes (`None`: no table, as with rotary
    /// embeddings).
    pub fn max_tokens(&self) -> Option<usize> {
        let name = match self.family {
            Family::Bert => "embeddings.position_embeddings.weight",
            Family::Gpt2 => "wpe.weight",
            Family::Llama => return None,
        };
        self.tensors.shape(name).ok().and_then(|shape| shape.first().copied())
    }

    /// The tables a chain's first hidden state is proven from (`zkmha_attention::embedding`):
    /// every token row (`V × d_model`) and, for GPT-2 and BERT, every position row (`P ×
    /// d_model`; BERT's with the token type 0 row added: every input is one segment; empty for
    /// rotary models), row-major. Always `Some` (an `Option` for families to come).
    ///
    /// # Errors
    /// Missing or malformed embedding tensors.
    pub fn embedding_tables(&self) -> Result<Option<EmbeddingTables<'_>>, ModelError> {
        let d = self.model_width()?;
        let mut tokens = self.rows(self.token_embeddings(), self.vocabulary_size()?, d)?;
        // Gemma 3's table times √d_model: the embedding is proven from the scaled table, and
        // the LM head reads the table itself (ModelFile::untied_lm_head).
        let scale = self.embedding_scale()?;
        if scale != 1.0 {
            tokens = self.scaled_tokens.get_or_init(|| tokens.iter().map(|v| v * scale).collect());
        }
        match self.family {
            Family::Bert => {
                // BERT adds a position row and the token type's row to each token's: every input
                // is one segment (type 0), so its row joins every position row; the LayerNorm
                // after the sum is layer 0's norm (ModelFile::norm_weights).
                let rows = self.max_tokens().unwrap_or(0);
                let positions = self.rows("embeddings.position_embeddings.weight", rows, d)?;
                let types = self.rows("embeddings.token_type_embeddings.weight", 1, d)?;
                let positions = self.typed_positions.get_or_init(|| {
                    positions
                        .chunks(d.max(1))
                        .flat_map(|row| row.iter().zip(types).map(|(p, t)| p + t))
                        .collect()
                });
                Ok(Some(EmbeddingTables { tokens, positions }))
            }
            Family::Llama => Ok(Some(EmbeddingTables { tokens, positions: &[] })),
            Family::Gpt2 => {
                let rows = self.max_tokens().unwrap_or(0);
                Ok(Some(EmbeddingTables { tokens, positions: self.rows("wpe.weight", rows, d)? }))
            }
        }
    }

    fn token_embeddings(&self) -> &'static str {
        match self.family {
            Family::Bert => "embeddings.word_embeddings.weight",
            Family::Gpt2 => "wte.weight",
            Family::Llama => "embed_tokens.weight",
        }
    }

    /// An RMSNorm's scale as the model multiplies by it: `1 + w` for a Gemma 3 checkpoint in
    /// Hugging Face's layout, the stored values otherwise.
    fn rms_scale(&self, name: &str, len: usize) -> Result<Vec<f64>, ModelError> {
        let offset = self.tensors.metadata.architecture.norm_scale_offset();
        Ok(self.vector(name, len)?.iter().map(|w| w + offset).collect())
    }

    /// The rotary base of layer `layer`: Gemma 3's sliding-window layers have their own
    /// (`rope_local_base_freq`; 10 000 in llama.cpp), every other layer the model's.
    pub fn rope_base_for(&self, layer: usize) -> f64 {
        let metadata = &self.tensors.metadata.architecture;
        match metadata.local_rope_base {
            Some(local) if metadata.is_local_rope_layer(layer) => local,
            _ => self.rope_base,
        }
    }

    /// What the token embeddings are multiplied by before layer 0: Gemma 3's `√d_model`
    /// rounded as the model computes it (to the table's precision, as transformers does for a
    /// BF16 or F16 checkpoint; `f32` for GGUF, as llama.cpp), 1 for the others.
    ///
    /// # Errors
    /// A missing or malformed token-embedding table.
    pub fn embedding_scale(&self) -> Result<f64, ModelError> {
        if !self.tensors.metadata.architecture.is_gemma3() {
            return Ok(1.0);
        }
        let d = self.model_width()?;
        self.tensors.round_to_storage(self.token_embeddings(), (d as f64).sqrt())
    }

    fn vector(&self, name: &str, len: usize) -> Result<&[f64], ModelError> {
        let t = self.tensors.get(name)?;
        if t.shape != [len] {
            return Err(ModelError::WrongTensor {
                name: name.into(),
                got: t.shape.clone(),
                expected: vec![len],
                dtype: "float".into(),
            });
        }
        Ok(&t.data)
    }

    /// Rows `0..s` of a `[rows, d]` table (position embeddings).
    fn rows(&self, name: &str, s: usize, d: usize) -> Result<&[f64], ModelError> {
        let t = self.tensors.get(name)?;
        match t.shape.as_slice() {
            [rows, columns] if *columns == d && *rows >= s => Ok(&t.data[..s * d]),
            [rows, columns] if *columns == d => Err(ModelError::Input(format!(
                "{s} tokens: the model takes at most {rows} ({name} has {rows} positions)"
            ))),
            _ => Err(ModelError::WrongTensor {
                name: name.into(),
                got: t.shape.clone(),
                expected: vec![s, d],
                dtype: "float".into(),
            }),
        }
    }

    /// What the layer's residual adds the attention's output to: `X` for post-norm encoders
    /// (BERT), the hidden state before the norm for pre-norm decoders (GPT-2, Llama).
    pub fn residual(&self) -> Residual {
        match self.family {
            Family::Bert => Residual::LayerInput,
            Family::Gpt2 | Family::Llama => Residual::HiddenState,
        }
    }

    /// The model's own tokenizer: a GGUF file's metadata, else the `tokenizer.json` beside a
    /// safetensors file ([`crate::tokenizer`]).
    ///
    /// # Errors
    /// [`ModelError::Tokenizer`] when there is none or it cannot be rebuilt (named), as
    /// [`TextTokenizer::from_json`] for a `tokenizer.json` that does not parse.
    pub fn tokenizer(&self) -> Result<TextTokenizer, ModelError> {
        let metadata = self.tensors.gguf_metadata();
        if !metadata.is_empty() {
            return TextTokenizer::from_gguf(&self.path, metadata);
        }
        TextTokenizer::beside(&self.path)?.ok_or_else(|| ModelError::Tokenizer {
            path: self.path.clone(),
            message: "there is no tokenizer.json beside it; pass --tokens".into(),
        })
    }

    /// The id config.json says every text opens with (`bos_token_id`), for a checkpoint read
    /// without its tokenizer; `None` for GGUF files (their tokenizer says) or where unsaid.
    pub fn bos_token_id(&self) -> Option<usize> {
        self.tensors.metadata.bos_token_id
    }

    /// The hidden state entering layer 0 for the token ids `ids` (`s × d_model`, row-major).
    ///
    /// # Errors
    /// [`ModelError::Input`] for no tokens, an id outside the vocabulary or too many tokens;
    /// missing or malformed tensors.
    pub fn embed(&self, ids: &[usize]) -> Result<Vec<f64>, ModelError> {
        if ids.is_empty() {
            return Err(ModelError::Input("no tokens: pass at least one token id".into()));
        }
        let d = self.model_width()?;
        let s = ids.len();
        let mut h = self.tensors.rows(self.token_embeddings(), ids)?;
        let scale = self.embedding_scale()?;
        if scale != 1.0 {
            h.iter_mut().for_each(|v| *v *= scale);
        }
        match self.family {
            Family::Bert => {
                // The sum; its LayerNorm is layer 0's norm from H to X (ModelFile::block_input).
                let positions = self.rows("embeddings.position_embeddings.weight", s, d)?;
                let types = self.rows("embeddings.token_type_embeddings.weight", 1, d)?;
                for (i, row) in h.chunks_mut(d).enumerate() {
                    for (c, v) in row.iter_mut().enumerate() {
                        *v += positions[i * d + c] + types[c];
                    }
                }
            }
            Family::Gpt2 => {
                let positions = self.rows("wpe.weight", s, d)?;
                for (v, p) in h.iter_mut().zip(positions) {
                    *v += p;
                }
            }
            Family::Llama => {}
        }
        Ok(h)
    }

    /// Layer `layer`'s weights as the block proves them: the attention's, the norm before it
    /// (pre-norm decoders), the MLP with its norm (GPT-2, Llama), and Gemma 3's QK-norm and
    /// norms on each half's output.
    ///
    /// # Errors
    /// As [`ModelFile::attention_weights`], [`ModelFile::norm_weights`] and
    /// [`ModelFile::feed_forward_weights`].
    pub fn layer_weights(&self, layer: usize) -> Result<LayerWeights, ModelError> {
        let weights = self.attention_weights(layer)?;
        let mut float = weights.float_model_weights();
        float.norm = self.norm_weights(layer)?;
        float.feed_forward = self.feed_forward_weights(layer)?;
        float.post_norm = post_norm_weights(&self.tensors, layer, self.family, weights.model_width)?;
        if let Some(norms) = gemma3_norm_weights(&self.tensors, layer, weights.head_dim, weights.model_width)?
        {
            float.query_key_norms = Some(norms.query_key);
            float.output_norms = norms.output;
        }
        Ok(LayerWeights { head_dim: weights.head_dim, key_value_heads: weights.key_value_heads, float })
    }

    /// The attention block's input `X` of layer `layer` from the hidden state `hidden`
    /// entering it (`s × d_model`): `X = hidden` for BERT's layers after the first, `X =
    /// norm(hidden)` for pre-norm decoders (then the residual is `hidden`) and BERT's layer 0
    /// (`hidden` the embeddings' sum, the norm their LayerNorm; its residual adds to `X`).
    ///
    /// # Errors
    /// [`ModelError::Input`] for a hidden state that is not `s × d_model`; missing or
    /// malformed norm tensors.
    pub fn block_input(&self, layer: usize, hidden: Vec<f64>) -> Result<BlockInput, ModelError> {
        let d = self.model_width()?;
        if hidden.is_empty() || !hidden.len().is_multiple_of(d) {
            return Err(ModelError::Input(format!(
                "the hidden state has {} values, not a whole number of rows of {d}",
                hidden.len()
            )));
        }
        let eps = self.norm_epsilon;
        let mut x = hidden.clone();
        match self.family {
            // BERT's layer 0 norms the embeddings' sum (its residual then adds to X, not H).
            Family::Bert if layer == 0 => {
                let gamma = self.vector("embeddings.LayerNorm.weight", d)?;
                let beta = self.vector("embeddings.LayerNorm.bias", d)?;
                layer_norm(&mut x, d, gamma, beta, eps);
            }
            Family::Bert => return Ok(BlockInput { input: hidden, residual: None }),
            Family::Gpt2 => {
                let gamma = self.vector(&format!("h.{layer}.ln_1.weight"), d)?;
                let beta = self.vector(&format!("h.{layer}.ln_1.bias"), d)?;
                layer_norm(&mut x, d, gamma, beta, eps);
            }
            Family::Llama => {
                let gamma = self.rms_scale(&format!("layers.{layer}.input_layernorm.weight"), d)?;
                rms_norm(&mut x, d, &gamma, eps);
            }
        }
        Ok(BlockInput { input: x, residual: Some(hidden) })
    }

    /// The norm from the hidden state to `X` of layer `layer`, which the block proves
    /// (pre-norm decoders: GPT-2's LayerNorm with its shift, Llama's RMSNorm; BERT's layer 0:
    /// the embeddings' LayerNorm), or `None` (BERT's other layers: their norms follow the
    /// attention and the MLP, [`ModelFile::layer_weights`]'s MLP half and post-norm).
    ///
    /// # Errors
    /// Missing or malformed norm tensors.
    pub fn norm_weights(&self, layer: usize) -> Result<Option<NormWeights<f64>>, ModelError> {
        let d = self.model_width()?;
        Ok(match self.family {
            // Layer 0's: the embeddings' LayerNorm (the model's other norms follow the attention
            // and the MLP: the MLP half's and the post-norm).
            Family::Bert if layer == 0 => Some(NormWeights {
                kind: NormKind::Layer,
                scale: self.vector("embeddings.LayerNorm.weight", d)?.to_vec(),
                bias: self.vector("embeddings.LayerNorm.bias", d)?.to_vec(),
            }),
            Family::Bert => None,
            Family::Gpt2 => Some(NormWeights {
                kind: NormKind::Layer,
                scale: self.vector(&format!("h.{layer}.ln_1.weight"), d)?.to_vec(),
                bias: self.vector(&format!("h.{layer}.ln_1.bias"), d)?.to_vec(),
            }),
            Family::Llama => Some(NormWeights {
                kind: NormKind::Rms,
                scale: self.rms_scale(&format!("layers.{layer}.input_layernorm.weight"), d)?,
                bias: Vec::new(),
            }),
        })
    }

    /// The number of layers: one more than the largest layer index in the tensor names
    /// (`layers.N.`, `h.N.`, `layer.N.`), `None` when no name has one.
    pub fn layer_count(&self) -> Option<usize> {
        counted_layers(&self.tensors, self.family)
    }

    /// The model's head after its last layer, when the proof covers it: the final norm's
    /// weights (GPT-2's `ln_f` LayerNorm with its shift, Llama's `norm` RMSNorm); the LM head
    /// is the token embeddings or, untied, [`ModelFile::untied_lm_head`]. `Err` names why the
    /// head is not proven: BERT (no LM head in the models read), a missing final norm, a
    /// change to the logits, or an LM head of the wrong shape.
    ///
    /// # Errors
    /// [`HeadUnavailable`]; a malformed final norm or LM head is one too.
    pub fn final_norm(&self) -> Result<NormWeights<f64>, HeadUnavailable> {
        let d = self.model_width().map_err(|e| HeadUnavailable::Malformed(e.to_string()))?;
        let read = |name: &str| -> Result<Vec<f64>, HeadUnavailable> {
            if self.tensors.shape(name).is_err() {
                return Err(HeadUnavailable::MissingNorm(name.to_string()));
            }
            self.vector(name, d).map(<[f64]>::to_vec).map_err(|e| HeadUnavailable::Malformed(e.to_string()))
        };
        if let Some(change) = &self.tensors.metadata.architecture.logit_change {
            return Err(HeadUnavailable::LogitChange(change.clone()));
        }
        let norm = match self.family {
            Family::Bert => return Err(HeadUnavailable::Encoder),
            Family::Gpt2 => {
                NormWeights { kind: NormKind::Layer, scale: read("ln_f.weight")?, bias: read("ln_f.bias")? }
            }
            Family::Llama => {
                let offset = self.tensors.metadata.architecture.norm_scale_offset();
                let scale = read("norm.weight")?.into_iter().map(|w| w + offset).collect();
                NormWeights { kind: NormKind::Rms, scale, bias: Vec::new() }
            }
        };
        self.untied_lm_head()?;
        Ok(norm)
    }

    /// The LM head's rows (`V × d`, row-major) when it is not the table the embedding reads:
    /// an `lm_head.weight` (GGUF `output.weight`) that differs from the embedding table, or
    /// Gemma 3's token table itself (its embedding reads the table times `√d_model`); `None`
    /// for a tied head (no such tensor, or one equal to the table).
    ///
    /// # Errors
    /// [`HeadUnavailable::Malformed`] for an LM head that is not a `V × d` matrix.
    pub fn untied_lm_head(&self) -> Result<Option<&[f64]>, HeadUnavailable> {
        let malformed = |e: ModelError| HeadUnavailable::Malformed(e.to_string());
        // Gemma 3's head is tied to the table, which its embedding scales: the head's table is
        // then not the embedding's, whether lm_head.weight repeats the table or is absent.
        let scaled = self.embedding_scale().map_err(malformed)? != 1.0;
        if self.tensors.shape("lm_head.weight").is_err() {
            if scaled {
                let d = self.model_width().map_err(malformed)?;
                let rows = self.vocabulary_size().map_err(malformed)?;
                return self.rows(self.token_embeddings(), rows, d).map(Some).map_err(malformed);
            }
            return Ok(None);
        }
        let d = self.model_width().map_err(malformed)?;
        let head = self.tensors.get("lm_head.weight").map_err(malformed)?;
        if !matches!(head.shape.as_slice(), [rows, width] if *rows > 0 && *width == d) {
            return Err(HeadUnavailable::Malformed(format!(
                "lm_head.weight is {:?}, not a matrix of {d} columns",
                head.shape
            )));
        }
        let table = self.tensors.get(self.token_embeddings()).map_err(malformed)?;
        Ok((scaled || head.shape != table.shape || head.data != table.data).then_some(head.data.as_slice()))
    }

    /// `d_model` (the token-embedding table's columns).
    ///
    /// # Errors
    /// [`ModelError::MissingTensor`], [`ModelError::Input`] for a table that is not a matrix.
    pub fn model_width(&self) -> Result<usize, ModelError> {
        match self.tensors.shape(self.token_embeddings())? {
            [_, d] => Ok(*d),
            _ => Err(ModelError::Input("the token-embedding table is not a matrix".into())),
        }
    }

    /// Layer 0's block input for the token ids `ids`.
    ///
    /// # Errors
    /// As [`ModelFile::embed`] and [`ModelFile::block_input`].
    pub fn layer_input(&self, ids: &[usize]) -> Result<BlockInput, ModelError> {
        self.block_input(0, self.embed(ids)?)
    }
}

/// One layer's weights as the block proves them ([`ModelFile::layer_weights`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerWeights {
    /// Head width `m`.
    pub head_dim: usize,
    /// Key/value heads.
    pub key_value_heads: usize,
    /// Every weight of the layer, `[in, out]` row-major.
    pub float: FloatModelWeights,
}

/// An attention block's input: `X`, and the hidden state the residual adds to when it is not
/// `X` (pre-norm decoders).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockInput {
    /// `X` (`s × d_model`).
    pub input: Vec<f64>,
    /// `H` with `X = norm(H)` (pre-norm decoders, whose residual adds to it; BERT's layer 0,
    /// `H` the embeddings' sum, whose residual adds to `X`), else `None`.
    pub residual: Option<Vec<f64>>,
}

fn rms_norm(x: &mut [f64], d: usize, gamma: &[f64], eps: f64) {
    for row in x.chunks_mut(d) {
        let rms = (row.iter().map(|v| v * v).sum::<f64>() / d as f64 + eps).sqrt();
        for (v, g) in row.iter_mut().zip(gamma) {
            *v = *v / rms * g;
        }
    }
}

fn layer_norm(x: &mut [f64], d: usize, gamma: &[f64], beta: &[f64], eps: f64) {
    for row in x.chunks_mut(d) {
        let mean = row.iter().sum::<f64>() / d as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

impl AttentionWeights {
    /// The weights as the block's float weights (`W_k`, `W_v` and their biases with
    /// `key_value_heads` heads).
    pub fn float_model_weights(&self) -> FloatModelWeights {
        FloatModelWeights {
            queries: self.queries.clone(),
            keys: self.keys.clone(),
            values: self.values.clone(),
            queries_bias: self.queries_bias.clone(),
            keys_bias: self.keys_bias.clone(),
            values_bias: self.values_bias.clone(),
            output: self.output.clone(),
            output_bias: self.output_bias.clone(),
            norm: None,
            feed_forward: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        }
    }
}

/// A fixed calibration sequence: `tokens` ids spread over the vocabulary (deterministic, so
/// `commit-model` and `prove` agree on the scales).
pub fn calibration_ids(vocabulary: usize, tokens: usize) -> Vec<usize> {
    (0..tokens).map(|i| (i * 7919 + 101) % vocabulary.max(1)).collect()
}

/// Why a model's head (final norm and LM head) is not proven ([`ModelFile::final_norm`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeadUnavailable {
    /// BERT: the encoders read have no LM head.
    #[error("the model is an encoder (BERT): it has no LM head")]
    Encoder,
    /// The final norm's tensor is not in the file.
    #[error("the file has no final norm ({0})")]
    MissingNorm(String),
    /// An untied LM head of more token rows than one commitment holds.
    #[error("its LM head has {rows} token rows, more than the {limit} the proof commits to")]
    TooManyTokens {
        /// The LM head's rows.
        rows: usize,
        /// The most rows a committed table holds.
        limit: u64,
    },
    /// A change to the logits after the LM head (a softcapping or a scale).
    #[error("its logits are changed after the LM head ({0}), which the proof does not cover")]
    LogitChange(String),
    /// The chain ends before the model's last layer.
    #[error("layer {layer} is not the model's last layer{}", layers.map(|n| format!(" (it has {n})")).unwrap_or_default())]
    NotLastLayer {
        /// The chain's last layer.
        layer: usize,
        /// The model's layers, when the tensor names tell.
        layers: Option<usize>,
    },
    /// A final norm or LM head of the wrong shape.
    #[error("its head is malformed: {0}")]
    Malformed(String),
}

/// A model's embedding tables, row-major `× d_model` ([`ModelFile::embedding_tables`]).
#[derive(Clone, Copy, Debug)]
pub struct EmbeddingTables<'a> {
    /// Every token's row.
    pub tokens: &'a [f64],
    /// Every position's row (GPT-2's learned positions; empty for rotary models).
    pub positions: &'a [f64],
}

/// One more than the largest layer index in the tensor names of `family`'s layout.
fn counted_layers(tensors: &TensorFile, family: Family) -> Option<usize> {
    let word = match family {
        Family::Bert => "layer",
        Family::Gpt2 => "h",
        Family::Llama => "layers",
    };
    tensors
        .names()
        .filter_map(|name| {
            let parts: Vec<&str> = name.split('.').collect();
            parts.windows(2).find(|w| w[0] == word).and_then(|w| w[1].parse::<usize>().ok())
        })
        .max()
        .map(|last| last.saturating_add(1))
}

/// Refuses metadata that declares what no model is or what the tensors contradict: a layer
/// count of 0 or other than the tensors hold (`n_layer`, `num_hidden_layers`, GGUF
/// `block_count`), a context of fewer than 2 tokens (`n_positions`, `max_position_embeddings`,
/// `context_length`).
fn check_declared_sizes(
    path: &Path,
    metadata: &ArchitectureMetadata,
    tensors: &TensorFile,
    family: Family,
) -> Result<(), ModelError> {
    let malformed = |what: String| Err(ModelError::Input(format!("{}'s metadata {what}", path.display())));
    if let Some((declared, field)) = &metadata.layer_count {
        match counted_layers(tensors, family) {
            _ if *declared == 0 => return malformed(format!("declares no layer ({field} = 0)")),
            Some(counted) if counted != *declared => {
                return malformed(format!(
                    "declares {declared} layers ({field}) but its tensors hold {counted}"
                ));
            }
            _ => {}
        }
    }
    if let Some(context) = metadata.context_length
        && context < 2
    {
        return malformed(format!(
            "declares a context of {context} tokens (its context length), which holds no sequence to attend over"
        ));
    }
    Ok(())
}
