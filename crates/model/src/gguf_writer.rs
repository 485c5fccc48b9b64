//! GGUF files written here, for tests and examples: the format's bytes from metadata and raw
//! tensors ([`gguf_bytes`]), and a BERT checkpoint (safetensors, `config.json`,
//! `tokenizer.json`) written as llama.cpp's BERT converter lays it out ([`write_bert_gguf`]),
//! since no BERT GGUF file ships in a wheel the tests can install. Not a converter for
//! models to use: tensors are written as F32 (llama.cpp's converter writes F16 or F32), and
//! only what the tests read is written.
//!
//! ```text
//! Hugging Face (any "bert." prefix)                 llama.cpp's GGUF name
//! embeddings.{word,position,token_type}_embeddings  token_embd, position_embd, token_types
//! embeddings.LayerNorm                              token_embd_norm
//! encoder.layer.N.attention.self.{query,key,value}  blk.N.attn_{q,k,v}
//! encoder.layer.N.attention.output.dense            blk.N.attn_output
//! encoder.layer.N.attention.output.LayerNorm        blk.N.attn_output_norm
//! encoder.layer.N.intermediate.dense                blk.N.ffn_up
//! encoder.layer.N.output.dense                      blk.N.ffn_down
//! encoder.layer.N.output.LayerNorm                  blk.N.layer_output_norm
//! embeddings.position_ids, pooler.dense             not written (as llama.cpp's converter)
//! ```

use crate::ModelError;
use crate::families::TensorFile;
use std::path::Path;

/// A tensor to write: its name, `ne` (GGUF's dimensions, innermost first), ggml type code and
/// raw bytes.
#[derive(Clone, Debug)]
pub struct RawTensor {
    /// The tensor's name.
    pub name: String,
    /// Its dimensions, innermost (contiguous) first: PyTorch's `[out, in]` is `[in, out]`.
    pub dims: Vec<u64>,
    /// The ggml type code (0 for F32).
    pub code: u32,
    /// The tensor's bytes in that type.
    pub bytes: Vec<u8>,
}

/// A metadata value to write.
#[derive(Clone, Debug)]
pub enum Meta<'a> {
    /// `uint32`.
    U32(u32),
    /// `float32`.
    F32(f32),
    /// A string.
    Text(&'a str),
    /// `bool`.
    Bool(bool),
    /// An array of strings.
    Texts(Vec<&'a str>),
    /// An array of `int32`.
    I32s(Vec<i32>),
    /// An array of `float32`.
    F32s(Vec<f32>),
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A GGUF v3 file (alignment 32) of `metadata` and `tensors`, in that order.
pub fn gguf_bytes(metadata: &[(&str, Meta<'_>)], tensors: &[RawTensor]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    let array = |out: &mut Vec<u8>, code: u32, len: usize| {
        out.extend_from_slice(&9u32.to_le_bytes());
        out.extend_from_slice(&code.to_le_bytes());
        out.extend_from_slice(&(len as u64).to_le_bytes());
    };
    for (key, value) in metadata {
        string(&mut out, key);
        match value {
            Meta::U32(v) => {
                out.extend_from_slice(&4u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Meta::F32(v) => {
                out.extend_from_slice(&6u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Meta::Text(s) => {
                out.extend_from_slice(&8u32.to_le_bytes());
                string(&mut out, s);
            }
            Meta::Bool(b) => {
                out.extend_from_slice(&7u32.to_le_bytes());
                out.push(u8::from(*b));
            }
            Meta::Texts(items) => {
                array(&mut out, 8, items.len());
                items.iter().for_each(|item| string(&mut out, item));
            }
            Meta::F32s(items) => {
                array(&mut out, 6, items.len());
                items.iter().for_each(|item| out.extend_from_slice(&item.to_le_bytes()));
            }
            Meta::I32s(items) => {
                array(&mut out, 5, items.len());
                items.iter().for_each(|item| out.extend_from_slice(&item.to_le_bytes()));
            }
        }
    }
    let mut offset = 0u64;
    for t in tensors {
        string(&mut out, &t.name);
        out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.code.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset += (t.bytes.len() as u64).div_ceil(32) * 32;
    }
    let pad = |out: &mut Vec<u8>| out.resize(out.len().div_ceil(32) * 32, 0);
    pad(&mut out);
    for t in tensors {
        out.extend_from_slice(&t.bytes);
        pad(&mut out);
    }
    out
}

/// llama.cpp's spelling of a WordPiece token ("phantom space", its BERT converter): control
/// tokens kept, continuations without their "##", every other token with "▁".
pub fn phantom(token: &str, control: bool) -> String {
    if control {
        token.to_string()
    } else if let Some(piece) = token.strip_prefix("##") {
        piece.to_string()
    } else {
        format!("\u{2581}{token}")
    }
}

/// A WordPiece `tokenizer.json`'s vocabulary in id order as llama.cpp's BERT converter writes
/// it: the tokens in [`phantom`] spelling and their types (3 for the special tokens, the
/// `added_tokens` marked special; 1 for the others).
///
/// # Errors
/// [`ModelError::Io`] or [`ModelError::Corrupt`] for an unreadable file or one without a
/// `model.vocab` of unique ids `0..n`.
pub fn word_piece_vocabulary(tokenizer_json: &Path) -> Result<(Vec<String>, Vec<i32>), ModelError> {
    let json = read_json(tokenizer_json)?;
    let corrupt =
        |message: &str| ModelError::Corrupt { path: tokenizer_json.into(), message: message.into() };
    let vocab = json["model"]["vocab"].as_object().ok_or_else(|| corrupt("it has no model.vocab"))?;
    let mut by_id = vec![None; vocab.len()];
    for (token, id) in vocab {
        let slot = id.as_u64().and_then(|id| by_id.get_mut(usize::try_from(id).ok()?));
        match slot {
            Some(slot @ None) => *slot = Some(token.as_str()),
            _ => return Err(corrupt(&format!("the id of {token:?} is not one of 0..{}", vocab.len()))),
        }
    }
    let special: Vec<&str> = json["added_tokens"]
        .as_array()
        .map(|tokens| {
            tokens.iter().filter(|t| t["special"] == true).filter_map(|t| t["content"].as_str()).collect()
        })
        .unwrap_or_default();
    let tokens: Vec<&str> = by_id.into_iter().flatten().collect();
    let types = tokens.iter().map(|t| if special.contains(t) { 3 } else { 1 }).collect();
    Ok((tokens.iter().map(|t| phantom(t, special.contains(t))).collect(), types))
}

fn read_json(path: &Path) -> Result<serde_json::Value, ModelError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ModelError::Io { path: path.into(), message: e.to_string() })?;
    serde_json::from_str(&text).map_err(|e| ModelError::Corrupt { path: path.into(), message: e.to_string() })
}

/// llama.cpp's GGUF name of a BERT checkpoint's tensor (its "bert." prefix removed), `None`
/// for what its converter leaves out (`embeddings.position_ids`, the pooler).
fn bert_gguf_name(name: &str) -> Result<Option<String>, ModelError> {
    let name = name.strip_prefix("bert.").unwrap_or(name);
    if name == "embeddings.position_ids" || name.starts_with("pooler.") {
        return Ok(None);
    }
    let global = [
        ("embeddings.word_embeddings.", "token_embd."),
        ("embeddings.position_embeddings.", "position_embd."),
        ("embeddings.token_type_embeddings.", "token_types."),
        ("embeddings.LayerNorm.", "token_embd_norm."),
    ];
    for (hugging_face, gguf) in global {
        if let Some(kind) = name.strip_prefix(hugging_face) {
            return Ok(Some(format!("{gguf}{kind}")));
        }
    }
    let layer = [
        ("attention.self.query.", "attn_q."),
        ("attention.self.key.", "attn_k."),
        ("attention.self.value.", "attn_v."),
        ("attention.output.dense.", "attn_output."),
        ("attention.output.LayerNorm.", "attn_output_norm."),
        ("intermediate.dense.", "ffn_up."),
        ("output.dense.", "ffn_down."),
        ("output.LayerNorm.", "layer_output_norm."),
    ];
    let mapped = name.strip_prefix("encoder.layer.").and_then(|rest| rest.split_once('.')).and_then(
        |(index, part)| {
            layer
                .iter()
                .find_map(|(hugging_face, gguf)| part.strip_prefix(hugging_face).map(|kind| (gguf, kind)))
                .map(|(gguf, kind)| format!("blk.{index}.{gguf}{kind}"))
        },
    );
    mapped
        .map(Some)
        .ok_or_else(|| ModelError::Input(format!("{name} has no name in llama.cpp's BERT layout")))
}

/// Writes the BERT checkpoint in `dir` (`model.safetensors`, `config.json`, a WordPiece
/// `tokenizer.json`; a sentence-transformers `1_Pooling/config.json` where present) to `out`
/// as llama.cpp's BERT converter lays it out: its tensor names (the table above), every
/// tensor as F32 with its dimensions innermost first, the `bert.*` metadata it writes, and
/// the vocabulary in its spelling ([`word_piece_vocabulary`]).
///
/// # Errors
/// [`ModelError::Io`] / [`ModelError::Corrupt`] for unreadable files, [`ModelError::Input`]
/// for a tensor or a `config.json` field llama.cpp's BERT layout has no place for.
pub fn write_bert_gguf(dir: &Path, out: &Path) -> Result<(), ModelError> {
    let source = TensorFile::read(&dir.join("model.safetensors"))?;
    let config = read_json(&dir.join("config.json"))?;
    let field = |key: &str| {
        config[key]
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| ModelError::Input(format!("config.json has no {key}")))
    };
    let mut names: Vec<&str> = source.names().collect();
    names.sort_unstable();
    let mut tensors = Vec::new();
    for name in names {
        let Some(gguf_name) = bert_gguf_name(name)? else { continue };
        let t = source.get(name)?;
        tensors.push(RawTensor {
            name: gguf_name,
            dims: t.shape.iter().rev().map(|&n| n as u64).collect(),
            code: 0,
            bytes: t.data.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect(),
        });
    }
    let (tokens, types) = word_piece_vocabulary(&dir.join("tokenizer.json"))?;
    let id = |token: &str| -> Result<u32, ModelError> {
        let position = tokens.iter().position(|t| t == token);
        position
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| ModelError::Input(format!("the vocabulary has no {token}")))
    };
    let epsilon = config["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32;
    let mut metadata = vec![
        ("general.architecture", Meta::Text("bert")),
        ("bert.block_count", Meta::U32(field("num_hidden_layers")?)),
        ("bert.context_length", Meta::U32(field("max_position_embeddings")?)),
        ("bert.embedding_length", Meta::U32(field("hidden_size")?)),
        ("bert.feed_forward_length", Meta::U32(field("intermediate_size")?)),
        ("bert.attention.head_count", Meta::U32(field("num_attention_heads")?)),
        ("bert.attention.layer_norm_epsilon", Meta::F32(epsilon)),
        ("bert.attention.causal", Meta::Bool(false)),
        ("tokenizer.ggml.model", Meta::Text("bert")),
        ("tokenizer.ggml.tokens", Meta::Texts(tokens.iter().map(String::as_str).collect())),
        ("tokenizer.ggml.token_type", Meta::I32s(types)),
        ("tokenizer.ggml.token_type_count", Meta::U32(field("type_vocab_size")?)),
        ("tokenizer.ggml.unknown_token_id", Meta::U32(id("[UNK]")?)),
        ("tokenizer.ggml.cls_token_id", Meta::U32(id("[CLS]")?)),
        ("tokenizer.ggml.seperator_token_id", Meta::U32(id("[SEP]")?)),
        ("tokenizer.ggml.padding_token_id", Meta::U32(id("[PAD]")?)),
    ];
    // llama.cpp's pooling types: 1 mean, 2 the [CLS] token (not part of the proof, which
    // ends at the last layer's hidden state).
    let pooling = dir.join("1_Pooling").join("config.json");
    if pooling.is_file() {
        let pooling = read_json(&pooling)?;
        if pooling["pooling_mode_mean_tokens"] == true {
            metadata.push(("bert.pooling_type", Meta::U32(1)));
        } else if pooling["pooling_mode_cls_token"] == true {
            metadata.push(("bert.pooling_type", Meta::U32(2)));
        }
    }
    std::fs::write(out, gguf_bytes(&metadata, &tensors))
        .map_err(|e| ModelError::Io { path: out.into(), message: e.to_string() })
}
