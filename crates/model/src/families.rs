//! One layer's attention weights from a safetensors or GGUF file of one of three model
//! families, by their usual Hugging Face tensor names, after [`crate::architecture`] has
//! checked that the file computes what the proof covers.
//!
//! ```text
//! family  tensors of layer N (any prefix, e.g. "bert." or "transformer.")      stored as
//! BERT    encoder.layer.N.attention.self.{query,key,value}.{weight,bias}        [out, in]
//!         encoder.layer.N.attention.output.{dense,LayerNorm}.{weight,bias}
//! BERT    encoder.layer.N.intermediate.dense.{weight,bias} (the MLP's up),       [out, in]
//!         encoder.layer.N.output.dense.{weight,bias} (its down),
//!         encoder.layer.N.output.LayerNorm.{weight,bias} (the norm after the MLP's residual)
//! GPT-2   h.N.attn.c_attn.{weight,bias} (Q | K | V fused), h.N.attn.c_proj.*     [in, out] (Conv1D)
//! GPT-2   h.N.ln_2.{weight,bias}, h.N.mlp.{c_fc,c_proj}.{weight,bias}            [in, out] (Conv1D)
//! Llama   model.layers.N.self_attn.{q,k,v,o}_proj.weight, biases by the         [out, in]
//!         architecture (qwen2: q, k, v; llama with attention_bias: all four; GGUF llama: those
//!         present; no metadata: q, k, v where present); k_proj and v_proj may have fewer rows
//!         than q_proj: grouped-query attention
//! Llama   model.layers.N.post_attention_layernorm.weight,                        [out, in]
//!         model.layers.N.mlp.{gate,up,down}_proj.weight (biases where the metadata allows)
//! Gemma 3 a Llama layer, plus self_attn.{q,k}_norm.weight (width m, reordered with W_q's
//!         and W_k's rotary pairs), pre_feedforward_layernorm.weight (the MLP's norm),
//!         post_attention_layernorm.weight and post_feedforward_layernorm.weight (the norms on
//!         each half's output); every norm scale 1 + w in Hugging Face's layout
//! out     every weight as [in, out] row-major (Y = X·W), absent biases as zeros
//! ```
//!
//! F32, F16 and BF16 tensors are read exactly into f64 (`half` converts the 16-bit formats).
//! GGUF files ([`crate::gguf`]) are read through the same names: `blk.N.attn_q.weight` is
//! Llama's `layers.N.self_attn.q_proj.weight` (and BERT's `…attention.self.query.weight`),
//! `blk.N.attn_qkv.weight` GPT-2's `h.N.attn.c_attn.weight` (transposed back to Conv1D's
//! `[in, out]`), `token_embd.weight` the token embeddings, `blk.N.attn_norm.*` the norm before
//! attention, `blk.N.ffn_norm.*` the norm before the MLP, `blk.N.ffn_{gate,up,down}.*` the
//! MLP's projections (GPT-2's transposed back to Conv1D's `[in, out]`). GGUF bert (llama.cpp's
//! BERT converter): `token_embd`, `position_embd`, `token_types` and `token_embd_norm` are the
//! embeddings and their LayerNorm, `blk.N.attn_{q,k,v,output}` the attention,
//! `blk.N.attn_output_norm` the norm after its residual, `blk.N.ffn_up` and `blk.N.ffn_down`
//! `intermediate.dense` and `output.dense`, `blk.N.layer_output_norm` `output.LayerNorm`; any
//! other tensor of a BERT GGUF file (a classifier head `cls`, `cls.output`) is refused
//! ([`architecture::check_bert_gguf_tensors`]). Hugging Face checkpoints and GGUF qwen2 pair
//! rotary dimension `t` with `t + m/2`;
//! GGUF llama files come permuted to adjacent pairs, which the proof rotates: the others' Q and
//! K columns (weights and biases) are reordered alike. GGUF gemma3 (halves, like Hugging
//! Face's): `attn_{q,k}_norm` are the QK-norm, `ffn_norm` the MLP's norm, `post_attention_norm`
//! and `post_ffw_norm` the norms on each half's output, their scales stored as `1 + w`.

use crate::architecture::{self, ArchitectureMetadata, BiasRule, MetadataSource, Unsupported};
use crate::gguf::{self, TensorType};
use crate::{ModelError, Tensor};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use zkmha_nn::{
    FeedForwardWeights, LinearWeights, MlpWeights, NormKind, NormWeights, OutputNormWeights,
    QueryKeyNormWeights,
};

/// A model family: which tensor names and layouts to expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// BERT-style encoders (biases, no mask).
    Bert,
    /// GPT-2-style decoders (fused Q|K|V weights in Conv1D layout, biases).
    Gpt2,
    /// Llama-style decoders (grouped-query attention, rotary embeddings; biases as the
    /// architecture says: none for llama and mistral, Q, K, V for qwen2).
    Llama,
}

impl Family {
    /// The family's name on the command line (`bert`, `gpt2`, `llama`).
    pub fn name(self) -> &'static str {
        match self {
            Family::Bert => "bert",
            Family::Gpt2 => "gpt2",
            Family::Llama => "llama",
        }
    }
}

impl Entry {
    /// `count` values from value `first` (row-aligned: GGUF rows are whole blocks).
    ///
    /// # Errors
    /// [`ModelError::UnsupportedTensorType`] for a GGUF type this reader does not decode.
    fn decode(&self, bytes: &[u8], first: usize, count: usize) -> Result<Vec<f64>, ModelError> {
        let data = bytes.get(self.range.clone()).unwrap_or(&[]);
        Ok(match self.encoding {
            Encoding::Safetensors(dtype) if !safetensors_decodes(dtype) => {
                return Err(ModelError::UnsupportedTensorType {
                    name: self.original.clone(),
                    type_name: dtype.to_string(),
                });
            }
            Encoding::Safetensors(dtype) => {
                let width = match dtype {
                    Dtype::F64 => 8,
                    Dtype::F32 => 4,
                    _ => 2,
                };
                let part = data.get(first * width..(first + count) * width).unwrap_or(&[]);
                safetensors_decode(dtype, part)
            }
            Encoding::Gguf(kind) => gguf::decode(kind, data, first, count),
            Encoding::GgufUnsupported(code) => {
                return Err(ModelError::UnsupportedTensorType {
                    name: self.original.clone(),
                    type_name: gguf::ggml_type_name(code),
                });
            }
        })
    }
}

impl Family {
    /// The family whose query-projection tensors (of any layer) the names contain, if
    /// exactly one family's do.
    pub fn detect<'a>(names: impl IntoIterator<Item = &'a str> + Clone) -> Option<Self> {
        let has = |suffix: &str| names.clone().into_iter().any(|n| n.ends_with(suffix));
        let found: Vec<Family> = [
            (Family::Bert, ".attention.self.query.weight"),
            (Family::Gpt2, ".attn.c_attn.weight"),
            (Family::Llama, ".self_attn.q_proj.weight"),
        ]
        .into_iter()
        .filter(|(_, name)| has(name))
        .map(|(family, _)| family)
        .collect();
        match found.as_slice() {
            [family] => Some(*family),
            _ => None,
        }
    }
}

/// One layer's attention weights, `[in, out]` row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionWeights {
    /// The family they were read as.
    pub family: Family,
    /// `d_model`.
    pub model_width: usize,
    /// Query heads `h`.
    pub heads: usize,
    /// Key/value heads (`h` except under grouped-query attention).
    pub key_value_heads: usize,
    /// Head width `m`.
    pub head_dim: usize,
    /// `W_q`: `d_model × h·m`.
    pub queries: Vec<f64>,
    /// `W_k`: `d_model × h_kv·m`.
    pub keys: Vec<f64>,
    /// `W_v`: `d_model × h_kv·m`.
    pub values: Vec<f64>,
    /// `W_o`: `h·m × d_model`.
    pub output: Vec<f64>,
    /// `b_q` (`h·m`), zeros when the family has none.
    pub queries_bias: Vec<f64>,
    /// `b_k` (`h_kv·m`).
    pub keys_bias: Vec<f64>,
    /// `b_v` (`h_kv·m`).
    pub values_bias: Vec<f64>,
    /// `b_o` (`d_model`).
    pub output_bias: Vec<f64>,
}

/// How a tensor's bytes encode its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Safetensors(Dtype),
    Gguf(TensorType),
    /// A GGUF type this reader does not decode (its ggml code): an error when read.
    GgufUnsupported(u32),
}

/// One tensor: its row-major shape and where its bytes are; decoded on first use.
struct Entry {
    shape: Vec<usize>,
    encoding: Encoding,
    range: Range<usize>,
    /// GGUF stores GPT-2's Conv1D weights as `[out, in]`: transposed back to `[in, out]`.
    transpose: bool,
    /// Its name in the file (a GGUF name, before mapping).
    original: String,
    decoded: OnceLock<Tensor>,
}

/// A model file's bytes: memory-mapped, so that only the pages of the tensors a proof reads
/// are ever loaded (a 30-layer GGUF file for a layer-0 proof touches a few MB of it).
struct FileBytes(memmap2::Mmap);

impl FileBytes {
    fn map(path: &Path) -> Result<Self, ModelError> {
        let io = |e: std::io::Error| ModelError::Io { path: path.to_path_buf(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and private to this process; as with any memory map,
        // another process truncating or rewriting the file while it is mapped is outside what
        // this program can guard against (the prover's inputs are the user's own files, read
        // once; a changed file changes the commitments, which the proof then attests).
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(Self(map))
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// The float tensors of a model file (safetensors or GGUF), decoded into f64 on demand, and
/// what the file's own metadata says about the model.
pub struct TensorFile {
    bytes: FileBytes,
    tensors: HashMap<String, Entry>,
    /// A GGUF file's whole metadata (its tokenizer included); empty for safetensors.
    gguf_metadata: HashMap<String, gguf::MetadataValue>,
    /// The family, head counts and norm constants the file names (GGUF metadata).
    pub metadata: FileMetadata,
}

/// What a model file's metadata says (GGUF: `general.architecture` and
/// `<arch>.attention.*`, `<arch>.rope.*`; safetensors: the `config.json` beside it, merged by
/// [`crate::model_file::ModelFile::open`]); empty for a bare safetensors file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileMetadata {
    /// The family of the metadata's architecture, when it is a supported one.
    pub family: Option<Family>,
    /// The architecture and the fields that change the attention block.
    pub architecture: ArchitectureMetadata,
    /// Query heads.
    pub heads: Option<usize>,
    /// Key/value heads.
    pub key_value_heads: Option<usize>,
    /// The norm's ε.
    pub norm_epsilon: Option<f64>,
    /// The rotary embeddings' base.
    pub rope_base: Option<f64>,
    /// Whether `W_q`, `W_k` list each head's rotary pairs next to each other (`2t, 2t+1`:
    /// GGUF, whose converter permutes them) rather than half a head apart (`t, t + m/2`:
    /// Hugging Face checkpoints).
    pub interleaved_rotary_pairs: bool,
    /// The id every text opens with, as config.json's `bos_token_id` says (for a checkpoint
    /// without its tokenizer: the calibration still opens as the model's inputs do).
    pub bos_token_id: Option<usize>,
}

fn safetensors_decode(dtype: Dtype, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        Dtype::F32 => {
            bytes.chunks_exact(4).map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()
        }
        Dtype::F16 => {
            bytes.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f64()).collect()
        }
        Dtype::F64 => bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect(),
        _ => bytes.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f64()).collect(),
    }
}

/// The safetensors types decoded as floats (the others are indexed, so that the layer's
/// tensor check sees them, and refused when read).
fn safetensors_decodes(dtype: Dtype) -> bool {
    matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64)
}

/// A GGUF tensor name as the Hugging Face name the family readers use, and whether its
/// matrix is stored transposed relative to that name's layout.
fn hugging_face_name(family: Option<Family>, gemma3: bool, name: &str) -> (String, bool) {
    let Some(rest) = name.strip_prefix("blk.") else {
        let mapped = match (family, name) {
            (Some(Family::Llama), "token_embd.weight") => "embed_tokens.weight",
            (Some(Family::Gpt2), "token_embd.weight") => "wte.weight",
            (Some(Family::Gpt2), "position_embd.weight") => "wpe.weight",
            (Some(Family::Bert), "token_embd.weight") => "embeddings.word_embeddings.weight",
            (Some(Family::Bert), "position_embd.weight") => "embeddings.position_embeddings.weight",
            (Some(Family::Bert), "token_types.weight") => "embeddings.token_type_embeddings.weight",
            (Some(Family::Bert), "token_embd_norm.weight") => "embeddings.LayerNorm.weight",
            (Some(Family::Bert), "token_embd_norm.bias") => "embeddings.LayerNorm.bias",
            (Some(Family::Llama), "output_norm.weight") => "norm.weight",
            (Some(Family::Gpt2), "output_norm.weight") => "ln_f.weight",
            (Some(Family::Gpt2), "output_norm.bias") => "ln_f.bias",
            (Some(Family::Llama | Family::Gpt2), "output.weight") => "lm_head.weight",
            _ => name,
        };
        return (mapped.to_string(), false);
    };
    let Some((layer, part)) = rest.split_once('.') else {
        return (name.to_string(), false);
    };
    let llama = |projection: &str, kind: &str| format!("layers.{layer}.self_attn.{projection}_proj.{kind}");
    let bert_layer = |part: &str| format!("encoder.layer.{layer}.{part}");
    let bert = |part: &str| bert_layer(&format!("attention.{part}"));
    // Gemma 3 (llama.cpp's gemma3): its QK-norm, the norms on each half's output, and its
    // ffn_norm, which is Hugging Face's pre_feedforward_layernorm (post_attention_layernorm
    // being the attention's output norm).
    let gemma_norm = match part {
        "attn_q_norm.weight" => Some("self_attn.q_norm.weight"),
        "attn_k_norm.weight" => Some("self_attn.k_norm.weight"),
        "post_attention_norm.weight" => Some("post_attention_layernorm.weight"),
        "ffn_norm.weight" => Some("pre_feedforward_layernorm.weight"),
        "post_ffw_norm.weight" => Some("post_feedforward_layernorm.weight"),
        _ => None,
    };
    if let (Some(Family::Llama), true, Some(norm)) = (family, gemma3, gemma_norm) {
        return (format!("layers.{layer}.{norm}"), false);
    }
    let mapped = match (family, part) {
        (Some(Family::Llama), "attn_q.weight") => llama("q", "weight"),
        (Some(Family::Llama), "attn_k.weight") => llama("k", "weight"),
        (Some(Family::Llama), "attn_v.weight") => llama("v", "weight"),
        (Some(Family::Llama), "attn_output.weight") => llama("o", "weight"),
        (Some(Family::Llama), "attn_q.bias") => llama("q", "bias"),
        (Some(Family::Llama), "attn_k.bias") => llama("k", "bias"),
        (Some(Family::Llama), "attn_v.bias") => llama("v", "bias"),
        (Some(Family::Llama), "attn_output.bias") => llama("o", "bias"),
        (Some(Family::Bert), "attn_q.weight") => bert("self.query.weight"),
        (Some(Family::Bert), "attn_q.bias") => bert("self.query.bias"),
        (Some(Family::Bert), "attn_k.weight") => bert("self.key.weight"),
        (Some(Family::Bert), "attn_k.bias") => bert("self.key.bias"),
        (Some(Family::Bert), "attn_v.weight") => bert("self.value.weight"),
        (Some(Family::Bert), "attn_v.bias") => bert("self.value.bias"),
        (Some(Family::Bert), "attn_output.weight") => bert("output.dense.weight"),
        (Some(Family::Bert), "attn_output.bias") => bert("output.dense.bias"),
        (Some(Family::Bert), "attn_output_norm.weight") => bert("output.LayerNorm.weight"),
        (Some(Family::Bert), "attn_output_norm.bias") => bert("output.LayerNorm.bias"),
        (Some(Family::Bert), "ffn_up.weight") => bert_layer("intermediate.dense.weight"),
        (Some(Family::Bert), "ffn_up.bias") => bert_layer("intermediate.dense.bias"),
        (Some(Family::Bert), "ffn_down.weight") => bert_layer("output.dense.weight"),
        (Some(Family::Bert), "ffn_down.bias") => bert_layer("output.dense.bias"),
        (Some(Family::Bert), "layer_output_norm.weight") => bert_layer("output.LayerNorm.weight"),
        (Some(Family::Bert), "layer_output_norm.bias") => bert_layer("output.LayerNorm.bias"),
        (Some(Family::Llama), "attn_norm.weight") => format!("layers.{layer}.input_layernorm.weight"),
        (Some(Family::Gpt2), "attn_qkv.weight") => return (format!("h.{layer}.attn.c_attn.weight"), true),
        (Some(Family::Gpt2), "attn_qkv.bias") => format!("h.{layer}.attn.c_attn.bias"),
        (Some(Family::Gpt2), "attn_output.weight") => return (format!("h.{layer}.attn.c_proj.weight"), true),
        (Some(Family::Gpt2), "attn_output.bias") => format!("h.{layer}.attn.c_proj.bias"),
        (Some(Family::Gpt2), "attn_norm.weight") => format!("h.{layer}.ln_1.weight"),
        (Some(Family::Gpt2), "attn_norm.bias") => format!("h.{layer}.ln_1.bias"),
        (Some(Family::Llama), "ffn_norm.weight") => format!("layers.{layer}.post_attention_layernorm.weight"),
        (Some(Family::Llama), "ffn_gate.weight") => format!("layers.{layer}.mlp.gate_proj.weight"),
        (Some(Family::Llama), "ffn_up.weight") => format!("layers.{layer}.mlp.up_proj.weight"),
        (Some(Family::Llama), "ffn_down.weight") => format!("layers.{layer}.mlp.down_proj.weight"),
        (Some(Family::Llama), "ffn_gate.bias") => format!("layers.{layer}.mlp.gate_proj.bias"),
        (Some(Family::Llama), "ffn_up.bias") => format!("layers.{layer}.mlp.up_proj.bias"),
        (Some(Family::Llama), "ffn_down.bias") => format!("layers.{layer}.mlp.down_proj.bias"),
        (Some(Family::Gpt2), "ffn_norm.weight") => format!("h.{layer}.ln_2.weight"),
        (Some(Family::Gpt2), "ffn_norm.bias") => format!("h.{layer}.ln_2.bias"),
        (Some(Family::Gpt2), "ffn_up.weight") => return (format!("h.{layer}.mlp.c_fc.weight"), true),
        (Some(Family::Gpt2), "ffn_up.bias") => format!("h.{layer}.mlp.c_fc.bias"),
        (Some(Family::Gpt2), "ffn_down.weight") => return (format!("h.{layer}.mlp.c_proj.weight"), true),
        (Some(Family::Gpt2), "ffn_down.bias") => format!("h.{layer}.mlp.c_proj.bias"),
        _ => name.to_string(),
    };
    (mapped, false)
}

impl TensorFile {
    /// Reads a safetensors or GGUF file (told apart by its first bytes) and indexes its float
    /// tensors (other types are indexed too, in safetensors and GGUF alike, and reading one
    /// is [`ModelError::UnsupportedTensorType`]); the file is memory-mapped, not read.
    ///
    /// # Errors
    /// [`ModelError::Io`], or [`ModelError::Corrupt`] / [`ModelError::CorruptGguf`].
    pub fn read(path: &Path) -> Result<Self, ModelError> {
        let bytes = FileBytes::map(path)?;
        if gguf::is_gguf(&bytes) {
            return Self::from_gguf(path, bytes);
        }
        let corrupt = |message: String| ModelError::Corrupt { path: path.to_path_buf(), message };
        // Validates the header and every tensor's range.
        SafeTensors::deserialize(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let (header, metadata) = SafeTensors::read_metadata(&bytes).map_err(|e| corrupt(e.to_string()))?;
        let data_start = header + 8;
        let tensors = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| {
                let (start, end) = info.data_offsets;
                let entry = Entry {
                    shape: info.shape.clone(),
                    encoding: Encoding::Safetensors(info.dtype),
                    range: data_start + start..data_start + end,
                    transpose: false,
                    original: name.clone(),
                    decoded: OnceLock::new(),
                };
                (name, entry)
            })
            .collect();
        Ok(Self { bytes, tensors, gguf_metadata: HashMap::new(), metadata: FileMetadata::default() })
    }

    fn from_gguf(path: &Path, bytes: FileBytes) -> Result<Self, ModelError> {
        let file = gguf::parse(&bytes)
            .map_err(|message| ModelError::CorruptGguf { path: path.to_path_buf(), message })?;
        let architecture = file.metadata.get("general.architecture").and_then(|v| v.as_text()).unwrap_or("");
        let family = architecture::family_of_architecture(architecture).ok();
        let gemma3 = architecture::is_gemma3(architecture);
        let key = |suffix: &str| file.metadata.get(&format!("{architecture}.{suffix}"));
        let metadata = FileMetadata {
            family,
            architecture: if architecture.is_empty() {
                ArchitectureMetadata::default()
            } else {
                architecture::from_gguf(architecture, &file.metadata)
            },
            heads: key("attention.head_count").and_then(|v| v.as_usize()),
            key_value_heads: key("attention.head_count_kv").and_then(|v| v.as_usize()),
            norm_epsilon: key("attention.layer_norm_rms_epsilon")
                .or_else(|| key("attention.layer_norm_epsilon"))
                .and_then(|v| v.as_f64()),
            rope_base: key("rope.freq_base").and_then(|v| v.as_f64()),
            // llama.cpp's converter permutes llama's Q and K rows to adjacent pairs; qwen2 and
            // gemma3 (rotated "NeoX" style) keep Hugging Face's halves.
            interleaved_rotary_pairs: architecture != "qwen2" && !gemma3,
            // A GGUF file carries its tokenizer, which says how a text opens.
            bos_token_id: None,
        };
        let tensors = file
            .tensors
            .into_iter()
            .map(|t| {
                let (name, transpose) = hugging_face_name(family, gemma3, &t.name);
                let mut shape = t.shape();
                if transpose {
                    shape.reverse();
                }
                let (encoding, range) = match t.data {
                    gguf::TensorData::Decodable { kind, range } => (Encoding::Gguf(kind), range),
                    gguf::TensorData::Unsupported { ggml_type } => {
                        (Encoding::GgufUnsupported(ggml_type), 0..0)
                    }
                };
                let entry =
                    Entry { shape, encoding, range, transpose, original: t.name, decoded: OnceLock::new() };
                (name, entry)
            })
            .collect();
        Ok(Self { bytes, tensors, gguf_metadata: file.metadata, metadata })
    }

    /// A GGUF file's metadata (empty for safetensors).
    pub fn gguf_metadata(&self) -> &HashMap<String, gguf::MetadataValue> {
        &self.gguf_metadata
    }

    fn entry(&self, name: &str) -> Result<&Entry, ModelError> {
        if let Some(e) = self.tensors.get(name) {
            return Ok(e);
        }
        let suffix = format!(".{name}");
        let mut suffixed = self.tensors.iter().filter(|(n, _)| n.ends_with(&suffix));
        match (suffixed.next(), suffixed.next()) {
            (Some((_, e)), None) => Ok(e),
            _ => Err(ModelError::MissingTensor(format!("{name}{}", self.close_matches(name)))),
        }
    }

    /// The tensor named `name`, or the single one whose name ends with `.name` (checkpoints
    /// prefix names with "bert.", "transformer.", …), decoded on first use.
    ///
    /// # Errors
    /// [`ModelError::MissingTensor`] naming the tensor and its closest matches.
    pub fn get(&self, name: &str) -> Result<&Tensor, ModelError> {
        let entry = self.entry(name)?;
        if let Some(tensor) = entry.decoded.get() {
            return Ok(tensor);
        }
        let count = entry.shape.iter().product();
        let mut data = entry.decode(&self.bytes, 0, count)?;
        if let (true, [rows, columns]) = (entry.transpose, entry.shape.as_slice()) {
            data = transpose(*columns, *rows, &data);
        }
        Ok(entry.decoded.get_or_init(|| Tensor { shape: entry.shape.clone(), data }))
    }

    /// The shape of the tensor named `name` (without decoding it).
    ///
    /// # Errors
    /// As [`TensorFile::get`].
    pub fn shape(&self, name: &str) -> Result<&[usize], ModelError> {
        Ok(&self.entry(name)?.shape)
    }

    /// Rows `ids` of the `[rows, columns]` matrix `name` (a token-embedding table), decoding
    /// only those rows.
    ///
    /// # Errors
    /// As [`TensorFile::get`]; [`ModelError::Input`] for a row outside the table or a tensor
    /// that is not a matrix.
    pub fn rows(&self, name: &str, ids: &[usize]) -> Result<Vec<f64>, ModelError> {
        let entry = self.entry(name)?;
        let (rows, columns) = match (entry.transpose, entry.shape.as_slice()) {
            (false, [rows, columns]) => (*rows, *columns),
            _ => return Err(ModelError::Input(format!("{name} is not a table of rows"))),
        };
        let mut out = Vec::with_capacity(ids.len() * columns);
        for &id in ids {
            if id >= rows {
                return Err(ModelError::Input(format!("token id {id} is outside the vocabulary of {rows}")));
            }
            out.extend(entry.decode(&self.bytes, id * columns, columns)?);
        }
        Ok(out)
    }

    /// `"; close matches: a, b, c"` (by normalized Levenshtein similarity), or nothing.
    fn close_matches(&self, name: &str) -> String {
        let mut scored: Vec<(f64, &str)> =
            self.tensors.keys().map(|n| (strsim::normalized_levenshtein(n, name), n.as_str())).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        let close: Vec<&str> = scored.iter().filter(|(s, _)| *s > 0.5).take(3).map(|(_, n)| *n).collect();
        if close.is_empty() { String::new() } else { format!("; close matches: {}", close.join(", ")) }
    }

    /// How many tensors `name` matches (exactly, or as the suffix `.name`).
    fn matches(&self, name: &str) -> usize {
        if self.tensors.contains_key(name) {
            return 1;
        }
        let suffix = format!(".{name}");
        self.tensors.keys().filter(|n| n.ends_with(&suffix)).count()
    }

    /// The names of every float tensor.
    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.tensors.keys().map(String::as_str)
    }

    /// Every float tensor's name and its name in the file (they differ for GGUF files, whose
    /// names are read as Hugging Face's).
    pub fn names_in_file(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.tensors.iter().map(|(name, entry)| (name.as_str(), entry.original.as_str()))
    }

    /// `value` rounded to the precision tensor `name` is stored in, as PyTorch rounds a
    /// constant it multiplies such a tensor by (`value.to(weight.dtype)`): BF16 and F16
    /// safetensors; `f32` otherwise (GGUF files are computed in `f32`).
    ///
    /// # Errors
    /// As [`TensorFile::shape`].
    pub fn round_to_storage(&self, name: &str, value: f64) -> Result<f64, ModelError> {
        Ok(match self.entry(name)?.encoding {
            Encoding::Safetensors(Dtype::BF16) => half::bf16::from_f64(value).to_f64(),
            Encoding::Safetensors(Dtype::F16) => half::f16::from_f64(value).to_f64(),
            Encoding::Safetensors(Dtype::F64) => value,
            _ => f64::from(value as f32),
        })
    }

    fn matrix(&self, name: &str) -> Result<(usize, usize, &[f64]), ModelError> {
        let t = self.get(name)?;
        match t.shape.as_slice() {
            [rows, columns] => Ok((*rows, *columns, &t.data)),
            _ => Err(ModelError::WrongTensor {
                name: name.into(),
                got: t.shape.clone(),
                expected: vec![0, 0],
                dtype: "a matrix".into(),
            }),
        }
    }

    fn vector(&self, name: &str, len: usize) -> Result<Vec<f64>, ModelError> {
        let t = self.get(name)?;
        if t.shape != [len] {
            return Err(ModelError::WrongTensor {
                name: name.into(),
                got: t.shape.clone(),
                expected: vec![len],
                dtype: "F32".into(),
            });
        }
        Ok(t.data.clone())
    }
}

/// `[rows, columns]` row-major → `[columns, rows]` row-major.
fn transpose(rows: usize, columns: usize, data: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; data.len()];
    for r in 0..rows {
        for c in 0..columns {
            out[c * rows + r] = data[r * columns + c];
        }
    }
    out
}

/// Reorders each head's columns from halves (`t` pairs with `t + m/2`) to adjacent pairs
/// (`2t`, `2t + 1`): new column `2t` is old `t`, new `2t + 1` is old `t + m/2`.
pub fn interleave_rotary_pairs(matrix: &[f64], columns: usize, head_dim: usize) -> Vec<f64> {
    let half = head_dim / 2;
    let mut out = matrix.to_vec();
    for (row_in, row_out) in matrix.chunks(columns.max(1)).zip(out.chunks_mut(columns.max(1))) {
        for (head_in, head_out) in row_in.chunks(head_dim.max(1)).zip(row_out.chunks_mut(head_dim.max(1))) {
            for t in 0..half.min(head_in.len() / 2) {
                head_out[2 * t] = head_in[t];
                head_out[2 * t + 1] = head_in[t + half];
            }
        }
    }
    out
}

/// Columns `start..start + width` of a `rows × columns` row-major matrix.
fn columns_of(rows: usize, columns: usize, data: &[f64], start: usize, width: usize) -> Vec<f64> {
    (0..rows).flat_map(|r| data[r * columns + start..r * columns + start + width].iter().copied()).collect()
}

fn shape_error(name: &str, got: Vec<usize>, expected: Vec<usize>) -> ModelError {
    ModelError::WrongTensor { name: name.into(), got, expected, dtype: "F32".into() }
}

/// Layer `layer`'s attention weights, read as the family the file's metadata names (refusing
/// an unsupported architecture, and a `family` that contradicts it), else as `family`, else
/// as the tensor names say; with `heads` query heads. Before reading, the metadata's refusals
/// and the layer's tensors are checked ([`architecture::check_layer_tensors`]; a BERT GGUF
/// file's tensors outside the layers too, [`architecture::check_bert_gguf_tensors`]); after, the
/// metadata's widths against the weights, partial rotary embeddings, the score scale and
/// sliding windows.
///
/// # Errors
/// [`ModelError::Unsupported`] for what the proof does not cover; [`ModelError::Input`] when
/// the family cannot be told or `heads` does not divide the width;
/// [`ModelError::MissingTensor`] (with close matches) or [`ModelError::WrongTensor`] for the
/// layer's tensors.
pub fn attention_weights(
    file: &TensorFile,
    layer: usize,
    heads: usize,
    family: Option<Family>,
) -> Result<AttentionWeights, ModelError> {
    let meta = &file.metadata.architecture;
    let family = match architecture::resolve_family(meta, file.names(), family)? {
        Some(f) => f,
        None => {
            return Err(ModelError::Input(
                "cannot tell the model family from the tensor names (BERT, GPT-2 or Llama); name it".into(),
            ));
        }
    };
    meta.check()?;
    let rule = meta.bias_rule();
    let architecture_name = match &meta.architecture {
        Some(name) => name.clone(),
        None => format!("the {} family (read from its tensor names)", family.name()),
    };
    architecture::check_layer_tensors(
        file.names_in_file(),
        family,
        layer,
        rule,
        meta.mlp_biases(),
        &architecture_name,
    )?;
    if family == Family::Bert && meta.source == Some(MetadataSource::Gguf) {
        architecture::check_bert_gguf_tensors(file.names_in_file().map(|(_, in_file)| in_file))?;
    }
    let weights = read_weights(file, layer, heads, family, rule)?;
    check_against_metadata(file, &weights, layer)?;
    Ok(weights)
}

/// The metadata's widths against the weights, and the refusals that need the head width.
fn check_against_metadata(file: &TensorFile, w: &AttentionWeights, layer: usize) -> Result<(), ModelError> {
    let meta = &file.metadata.architecture;
    let mismatch = |field: &str, metadata: usize, weights: usize| {
        Err(ModelError::Unsupported(Unsupported::MetadataMismatch { field: field.into(), metadata, weights }))
    };
    if let Some(d) = meta.hidden_size.filter(|&d| d != w.model_width) {
        return mismatch("hidden_size", d, w.model_width);
    }
    if let Some(v) = meta.value_head_dim.filter(|&v| v != meta.head_dim.unwrap_or(w.head_dim)) {
        return Err(Unsupported::ValueHeadWidth { key: meta.head_dim.unwrap_or(w.head_dim), value: v }.into());
    }
    if let Some(m) = meta.head_dim.filter(|&m| m != w.head_dim) {
        return mismatch("head_dim", m, w.head_dim);
    }
    if let Some(kv) = file.metadata.key_value_heads.filter(|&kv| kv != w.key_value_heads) {
        return mismatch("num_key_value_heads", kv, w.key_value_heads);
    }
    if w.family == Family::Llama
        && let Some(r) = meta.rotary_dims.filter(|&r| r != w.head_dim)
    {
        return Err(Unsupported::PartialRotary {
            what: format!("rope.dimension_count = {r} of head_dim {}", w.head_dim),
        }
        .into());
    }
    if let Some(scalar) = meta.query_pre_attn_scalar.filter(|&s| s != w.head_dim as f64) {
        return Err(Unsupported::ScoreScaling {
            field: "query_pre_attn_scalar".into(),
            value: scalar.to_string(),
        }
        .into());
    }
    // A sliding window is proven (the attention's mask, `ModelFile::attention_window`); a
    // chunked one, or one too long for the mask's 32 bits, is not.
    if let Some(window) = meta.window_for(layer)
        && (window.kind != "sliding" || u32::try_from(window.size).is_err())
    {
        return Err(
            Unsupported::SlidingWindow { layer, window: window.size, kind: window.kind.into() }.into()
        );
    }
    // Old Llama checkpoints store the rotary frequencies: they must be base^(−2t/m).
    let inv_freq = format!("layers.{layer}.self_attn.rotary_emb.inv_freq");
    if w.family == Family::Llama && file.matches(&inv_freq) > 0 {
        let stored = file.get(&inv_freq)?;
        let base = file.metadata.rope_base.unwrap_or(10_000.0);
        let m = w.head_dim as f64;
        let standard = stored.data.len() == w.head_dim / 2
            && stored.data.iter().enumerate().all(|(t, &f)| {
                let expected = base.powf(-2.0 * t as f64 / m);
                (f - expected).abs() <= 1e-2 * expected
            });
        if !standard {
            return Err(Unsupported::RopeScaling {
                kind: format!("{inv_freq} (frequencies other than base^(−2t/m) with base {base})"),
            }
            .into());
        }
    }
    Ok(())
}

fn read_weights(
    file: &TensorFile,
    layer: usize,
    heads: usize,
    family: Family,
    rule: BiasRule,
) -> Result<AttentionWeights, ModelError> {
    let divides = |width: usize| -> Result<usize, ModelError> {
        if heads == 0 || width == 0 || !width.is_multiple_of(heads) {
            return Err(ModelError::Input(format!("{heads} heads do not divide the model width {width}")));
        }
        Ok(width / heads)
    };
    match family {
        Family::Bert => {
            let name = |part: &str| format!("encoder.layer.{layer}.attention.{part}");
            let (d, d_in, w_q) = file.matrix(&name("self.query.weight"))?;
            if d != d_in {
                return Err(shape_error(&name("self.query.weight"), vec![d, d_in], vec![d_in, d_in]));
            }
            let head_dim = divides(d)?;
            let square = |part: &str| -> Result<Vec<f64>, ModelError> {
                let (rows, columns, w) = file.matrix(&name(part))?;
                if (rows, columns) != (d, d) {
                    return Err(shape_error(&name(part), vec![rows, columns], vec![d, d]));
                }
                Ok(transpose(d, d, w))
            };
            Ok(AttentionWeights {
                family,
                model_width: d,
                heads,
                key_value_heads: heads,
                head_dim,
                queries: transpose(d, d, w_q),
                keys: square("self.key.weight")?,
                values: square("self.value.weight")?,
                output: square("output.dense.weight")?,
                queries_bias: file.vector(&name("self.query.bias"), d)?,
                keys_bias: file.vector(&name("self.key.bias"), d)?,
                values_bias: file.vector(&name("self.value.bias"), d)?,
                output_bias: file.vector(&name("output.dense.bias"), d)?,
            })
        }
        Family::Gpt2 => {
            let name = |part: &str| format!("h.{layer}.attn.{part}");
            let (d, fused, w) = file.matrix(&name("c_attn.weight"))?;
            if fused != 3 * d {
                return Err(shape_error(&name("c_attn.weight"), vec![d, fused], vec![d, 3 * d]));
            }
            let head_dim = divides(d)?;
            let bias = file.vector(&name("c_attn.bias"), 3 * d)?;
            let (rows, columns, w_o) = file.matrix(&name("c_proj.weight"))?;
            if (rows, columns) != (d, d) {
                return Err(shape_error(&name("c_proj.weight"), vec![rows, columns], vec![d, d]));
            }
            Ok(AttentionWeights {
                family,
                model_width: d,
                heads,
                key_value_heads: heads,
                head_dim,
                queries: columns_of(d, 3 * d, w, 0, d),
                keys: columns_of(d, 3 * d, w, d, d),
                values: columns_of(d, 3 * d, w, 2 * d, d),
                output: w_o.to_vec(),
                queries_bias: bias[..d].to_vec(),
                keys_bias: bias[d..2 * d].to_vec(),
                values_bias: bias[2 * d..].to_vec(),
                output_bias: file.vector(&name("c_proj.bias"), d)?,
            })
        }
        Family::Llama => {
            let name = |part: &str| format!("layers.{layer}.self_attn.{part}_proj.weight");
            let (q_rows, d, w_q) = file.matrix(&name("q"))?;
            let head_dim = divides(q_rows)?;
            let (k_rows, k_in, w_k) = file.matrix(&name("k"))?;
            let (v_rows, v_in, w_v) = file.matrix(&name("v"))?;
            if k_in != d || v_in != d || k_rows != v_rows || !k_rows.is_multiple_of(head_dim) {
                return Err(shape_error(&name("k"), vec![k_rows, k_in], vec![k_rows - k_rows % head_dim, d]));
            }
            let key_value_heads = k_rows / head_dim;
            if key_value_heads == 0 || !heads.is_multiple_of(key_value_heads) {
                return Err(ModelError::Input(format!(
                    "{key_value_heads} key/value heads do not divide the {heads} query heads"
                )));
            }
            let (o_rows, o_in, w_o) = file.matrix(&name("o"))?;
            if (o_rows, o_in) != (d, q_rows) {
                return Err(shape_error(&name("o"), vec![o_rows, o_in], vec![d, q_rows]));
            }
            // The proven rotation pairs columns (2t, 2t+1) of each head; Hugging Face
            // checkpoints pair t with t + m/2: reorder their output columns (Q·Kᵀ is unchanged
            // when Q and K are reordered alike), biases included.
            let interleave = |w: Vec<f64>, columns: usize| {
                if file.metadata.interleaved_rotary_pairs {
                    w
                } else {
                    interleave_rotary_pairs(&w, columns, head_dim)
                }
            };
            let bias = |projection: &str, len: usize| -> Result<Vec<f64>, ModelError> {
                let name = format!("layers.{layer}.self_attn.{projection}_proj.bias");
                let required = match rule {
                    BiasRule::None => return Ok(vec![0.0; len]),
                    BiasRule::All => true,
                    BiasRule::QueryKeyValue => projection != "o",
                    BiasRule::Present | BiasRule::PresentQueryKeyValue => false,
                };
                if file.matches(&name) > 0 {
                    file.vector(&name, len)
                } else if required {
                    // The metadata says every projection has a bias (config.json's
                    // attention_bias: true); a checkpoint without one is not the model it names
                    // (transformers would draw the missing bias at random).
                    let why = match rule {
                        BiasRule::All => {
                            "its config says every attention projection has a bias (attention_bias: true)"
                        }
                        _ => "its architecture (qwen2) has biases on Q, K and V",
                    };
                    Err(ModelError::Input(format!(
                        "the model's weights have no {name}, but {why}: the checkpoint is not the model its metadata names"
                    )))
                } else {
                    Ok(vec![0.0; len])
                }
            };
            Ok(AttentionWeights {
                family,
                model_width: d,
                heads,
                key_value_heads,
                head_dim,
                queries: interleave(transpose(q_rows, d, w_q), q_rows),
                keys: interleave(transpose(k_rows, d, w_k), k_rows),
                values: transpose(v_rows, d, w_v),
                output: transpose(d, q_rows, w_o),
                queries_bias: interleave(bias("q", q_rows)?, q_rows),
                keys_bias: interleave(bias("k", k_rows)?, k_rows),
                values_bias: bias("v", v_rows)?,
                output_bias: bias("o", d)?,
            })
        }
    }
}

/// Layer `layer`'s norm after the MLP's residual, which the block proves: BERT's
/// `output.LayerNorm` (a post-norm layer's output, `H' = LN(X₂ + MLP(X₂))`); `None` for the
/// pre-norm families.
///
/// # Errors
/// [`ModelError::MissingTensor`] or [`ModelError::WrongTensor`] for its tensors.
pub fn post_norm_weights(
    file: &TensorFile,
    layer: usize,
    family: Family,
    model_width: usize,
) -> Result<Option<NormWeights<f64>>, ModelError> {
    Ok(match family {
        Family::Bert => {
            let name = |part: &str| format!("encoder.layer.{layer}.output.LayerNorm.{part}");
            Some(NormWeights {
                kind: NormKind::Layer,
                scale: file.vector(&name("weight"), model_width)?,
                bias: file.vector(&name("bias"), model_width)?,
            })
        }
        Family::Gpt2 | Family::Llama => None,
    })
}

/// Layer `layer`'s half after the attention block, `[in, out]` row-major: the norm before the
/// MLP and the MLP (GPT-2: `ln_2`, `mlp.c_fc`, `mlp.c_proj`; Llama: `post_attention_layernorm`,
/// `mlp.{gate,up,down}_proj`, their biases where present, else zeros; BERT:
/// `attention.output.LayerNorm` — the norm after the attention's residual, whose output the MLP
/// reads and its residual adds to — `intermediate.dense`, `output.dense`; the norm after the
/// MLP's residual is [`post_norm_weights`]). Call it after [`attention_weights`], which
/// checks the layer's tensors against the architecture.
///
/// # Errors
/// [`ModelError::MissingTensor`] or [`ModelError::WrongTensor`] for the layer's tensors
/// (widths other than `model_width`, up and gate projections of different widths);
/// [`Unsupported::MetadataMismatch`] for an MLP of another width than the metadata's
/// (`intermediate_size`, `<arch>.feed_forward_length`).
pub fn feed_forward_weights(
    file: &TensorFile,
    layer: usize,
    family: Family,
    model_width: usize,
) -> Result<Option<FeedForwardWeights<f64>>, ModelError> {
    // Gemma 3's MLP norm is its pre_feedforward_layernorm (its post_attention_layernorm is
    // the attention's output norm).
    let mlp_norm = if file.metadata.architecture.is_gemma3() {
        "pre_feedforward_layernorm.weight"
    } else {
        "post_attention_layernorm.weight"
    };
    let scale_offset = file.metadata.architecture.norm_scale_offset();
    let d = model_width;
    let weights = match family {
        Family::Bert => {
            let name = |part: &str| format!("encoder.layer.{layer}.{part}");
            let (hidden, rows, w_up) = file.matrix(&name("intermediate.dense.weight"))?;
            if rows != d || hidden == 0 {
                return Err(shape_error(
                    &name("intermediate.dense.weight"),
                    vec![hidden, rows],
                    vec![hidden, d],
                ));
            }
            let (rows, columns, w_down) = file.matrix(&name("output.dense.weight"))?;
            if (rows, columns) != (d, hidden) {
                return Err(shape_error(&name("output.dense.weight"), vec![rows, columns], vec![d, hidden]));
            }
            FeedForwardWeights {
                norm: NormWeights {
                    kind: NormKind::Layer,
                    scale: file.vector(&name("attention.output.LayerNorm.weight"), d)?,
                    bias: file.vector(&name("attention.output.LayerNorm.bias"), d)?,
                },
                mlp: MlpWeights {
                    // PyTorch's Linear stores [out, in]: transposed to [in, out].
                    up: LinearWeights {
                        weights: transpose(hidden, d, w_up),
                        bias: file.vector(&name("intermediate.dense.bias"), hidden)?,
                    },
                    gate: None,
                    down: LinearWeights {
                        weights: transpose(d, hidden, w_down),
                        bias: file.vector(&name("output.dense.bias"), d)?,
                    },
                },
            }
        }
        Family::Gpt2 => {
            let name = |part: &str| format!("h.{layer}.{part}");
            let (rows, hidden, w_up) = file.matrix(&name("mlp.c_fc.weight"))?;
            if rows != d || hidden == 0 {
                return Err(shape_error(&name("mlp.c_fc.weight"), vec![rows, hidden], vec![d, hidden]));
            }
            let (rows, columns, w_down) = file.matrix(&name("mlp.c_proj.weight"))?;
            if (rows, columns) != (hidden, d) {
                return Err(shape_error(&name("mlp.c_proj.weight"), vec![rows, columns], vec![hidden, d]));
            }
            FeedForwardWeights {
                norm: NormWeights {
                    kind: NormKind::Layer,
                    scale: file.vector(&name("ln_2.weight"), d)?,
                    bias: file.vector(&name("ln_2.bias"), d)?,
                },
                mlp: MlpWeights {
                    up: LinearWeights {
                        weights: w_up.to_vec(),
                        bias: file.vector(&name("mlp.c_fc.bias"), hidden)?,
                    },
                    gate: None,
                    down: LinearWeights {
                        weights: w_down.to_vec(),
                        bias: file.vector(&name("mlp.c_proj.bias"), d)?,
                    },
                },
            }
        }
        Family::Llama => {
            let name = |part: &str| format!("layers.{layer}.{part}");
            let projection = |which: &str, outputs: Option<usize>, inputs: usize| {
                let weight = name(&format!("mlp.{which}_proj.weight"));
                let (rows, columns, w) = file.matrix(&weight)?;
                let expected_rows = outputs.unwrap_or(rows);
                if rows != expected_rows || columns != inputs || rows == 0 {
                    return Err(shape_error(&weight, vec![rows, columns], vec![expected_rows, inputs]));
                }
                let bias = name(&format!("mlp.{which}_proj.bias"));
                let bias = if file.matches(&bias) > 0 { file.vector(&bias, rows)? } else { vec![0.0; rows] };
                Ok::<_, ModelError>((rows, LinearWeights { weights: transpose(rows, columns, w), bias }))
            };
            let (hidden, up) = projection("up", None, d)?;
            let (_, gate) = projection("gate", Some(hidden), d)?;
            let (_, down) = projection("down", Some(d), hidden)?;
            FeedForwardWeights {
                norm: NormWeights {
                    kind: NormKind::Rms,
                    scale: file.vector(&name(mlp_norm), d)?.into_iter().map(|w| w + scale_offset).collect(),
                    bias: Vec::new(),
                },
                mlp: MlpWeights { up, gate: Some(gate), down },
            }
        }
    };
    let hidden = weights.mlp.up.bias.len();
    if let Some(n) = file.metadata.architecture.intermediate_size.filter(|&n| n != hidden) {
        return Err(Unsupported::MetadataMismatch {
            field: "intermediate_size".into(),
            metadata: n,
            weights: hidden,
        }
        .into());
    }
    Ok(Some(weights))
}

/// Gemma 3's norms of layer `layer` beyond a Llama layer's, `None` for other architectures:
/// the QK-norm (`self_attn.{q,k}_norm`, one scale of width `head_dim` shared by every head,
/// reordered as `W_q`'s and `W_k`'s columns are when the file pairs rotary dimensions half a
/// head apart, so that each scale stays with its dimension) and the norms on each half's
/// output (`post_attention_layernorm`, `post_feedforward_layernorm`); each scale `1 + w` for a
/// Hugging Face checkpoint. Call it after [`attention_weights`], which checks the layer's
/// tensors against the architecture.
///
/// # Errors
/// [`ModelError::MissingTensor`] or [`ModelError::WrongTensor`] for the layer's norm tensors.
pub fn gemma3_norm_weights(
    file: &TensorFile,
    layer: usize,
    head_dim: usize,
    model_width: usize,
) -> Result<Option<Gemma3Norms>, ModelError> {
    if !file.metadata.architecture.is_gemma3() {
        return Ok(None);
    }
    let offset = file.metadata.architecture.norm_scale_offset();
    let rms = |part: &str, width: usize| -> Result<NormWeights<f64>, ModelError> {
        let scale = file.vector(&format!("layers.{layer}.{part}"), width)?.into_iter().map(|w| w + offset);
        Ok(NormWeights { kind: NormKind::Rms, scale: scale.collect(), bias: Vec::new() })
    };
    let head_norm = |part: &str| -> Result<NormWeights<f64>, ModelError> {
        let mut norm = rms(part, head_dim)?;
        if !file.metadata.interleaved_rotary_pairs {
            norm.scale = interleave_rotary_pairs(&norm.scale, head_dim, head_dim);
        }
        Ok(norm)
    };
    let query_key = QueryKeyNormWeights {
        query: head_norm("self_attn.q_norm.weight")?,
        key: head_norm("self_attn.k_norm.weight")?,
    };
    let output = OutputNormWeights {
        attention: Some(rms("post_attention_layernorm.weight", model_width)?),
        feed_forward: Some(rms("post_feedforward_layernorm.weight", model_width)?),
    };
    Ok(Some(Gemma3Norms { query_key, output }))
}

/// Gemma 3's norms beyond a Llama layer's ([`gemma3_norm_weights`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Gemma3Norms {
    /// The QK-norm.
    pub query_key: QueryKeyNormWeights<f64>,
    /// The norms on each half's output.
    pub output: OutputNormWeights<f64>,
}
