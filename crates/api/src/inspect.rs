//! What a file zkmha writes holds, without verifying anything: [`read`] decodes any file kind
//! (checking it as verifying would: limits, sizes), [`Inspection::to_json`] describes it as
//! `zkmha inspect --json` prints it (shapes, sizes, the fingerprints of its commitments).

use crate::error::{Error, Result};
use crate::layer_files::LayerProof;
use crate::model_files::{self, FileKind, ModelProof};
use crate::{fingerprint, softmax_spec};
use ark_serialize::CanonicalSerialize;
use serde_json::{Value, json};
use std::path::Path;
use zkmha_attention::Residual;
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments};

/// Characters of an untrusted text shown at most.
const MAX_SHOWN_CHARS: usize = 200;

/// Whether `c` may not be shown as itself: control characters, and the invisible formatting
/// characters that reorder or hide text (bidirectional overrides and isolates, zero-width
/// characters, the byte-order mark).
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
}

/// An untrusted text made safe to print: a backslash becomes `\\`, every control or
/// invisible formatting character `\u{…}` (so no escape sequence reaches the terminal and
/// nothing is hidden), and text beyond 200 characters is cut with a note.
///
/// ```
/// assert_eq!(zkmha_api::inspect::sanitize("a\u{202e}b"), "a\\u{202e}b");
/// ```
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * MAX_SHOWN_CHARS));
    for c in text.chars().take(MAX_SHOWN_CHARS) {
        match c {
            '\\' => out.push_str("\\\\"),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    let total = text.chars().count();
    if total > MAX_SHOWN_CHARS {
        out.push_str(&format!("… ({} more characters)", total - MAX_SHOWN_CHARS));
    }
    out
}

/// What the residual of a key or statement adds to, in words.
pub fn residual_name(residual: Residual) -> &'static str {
    match residual {
        Residual::LayerInput => "X",
        Residual::HiddenState => "the hidden state",
    }
}

/// The kind of weight commitments as the JSON reports name it.
pub fn weight_commitments_code(kind: WeightCommitments) -> &'static str {
    match kind {
        WeightCommitments::Binding => "binding",
        WeightCommitments::Hiding => "hiding",
    }
}

/// Lower-case hex digits of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A decoded file of any kind zkmha writes.
#[derive(Debug, Clone)]
pub enum Inspection {
    /// An attention-layer proof.
    LayerProof(LayerProof),
    /// A model-layer proof.
    ModelProof(Box<ModelProof>),
    /// A verifier key.
    VerifierKey(Box<ModelVerifierKey>),
    /// A model secret.
    ModelSecret(ModelSecret),
    /// A chain's proof.
    ChainProof(Box<crate::model_chain::ChainProof>),
    /// A chain key.
    ChainKey(Box<crate::model_chain::ChainKey>),
    /// A chain's secret.
    ChainSecret(crate::model_chain::ChainSecret),
}

/// Reads a file of any kind zkmha writes (chosen by its magic bytes), checked as verifying
/// would check it; nothing is verified.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-inspect-{}", std::process::id()));
/// let model = zkmha_api::Model::open(&zkmha_api::example_model::write_bert(&dir, 1)?, &Default::default())?;
/// let committed = zkmha_api::commit_model(&model, zkmha_api::WeightCommitments::Binding)?;
/// zkmha_api::model_files::write_key(&dir.join("model.vk"), &committed.key)?;
/// let json = zkmha_api::inspect::read(&dir.join("model.vk"))?.to_json();
/// assert_eq!((json["kind"].as_str(), json["heads"].as_u64()), (Some("verifier key"), Some(4)));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Read`] for a missing file, [`Error::UnknownFile`] for one of no zkmha kind, and
/// the errors of the kind's reader.
pub fn read(path: &Path) -> Result<Inspection> {
    match model_files::file_kind(path) {
        Some(FileKind::LayerProof) => Ok(Inspection::LayerProof(LayerProof::read(path)?)),
        Some(FileKind::ModelProof) => Ok(Inspection::ModelProof(Box::new(ModelProof::read(path)?))),
        Some(FileKind::VerifierKey) => Ok(Inspection::VerifierKey(Box::new(model_files::read_key(path)?))),
        Some(FileKind::ModelSecret) => Ok(Inspection::ModelSecret(model_files::read_secret(path)?)),
        Some(FileKind::ChainProof) => {
            Ok(Inspection::ChainProof(Box::new(crate::model_chain::ChainProof::read(path)?)))
        }
        Some(FileKind::ChainKey) => {
            Ok(Inspection::ChainKey(Box::new(crate::model_chain::read_chain_key(path)?)))
        }
        Some(FileKind::ChainSecret) => {
            Ok(Inspection::ChainSecret(crate::model_chain::read_chain_secret(path)?))
        }
        None => {
            // Read for its error: a missing file, or not a zkmha file.
            model_files::read_bytes(path)?;
            Err(Error::UnknownFile { path: path.to_path_buf() })
        }
    }
}

/// The fingerprints of a model-layer statement's commitments (X, and H where committed).
pub fn model_commitments(
    statement: &zkmha_attention::model_layer::ModelStatement,
) -> Vec<(&'static str, String)> {
    let mut commitments = vec![("X", fingerprint(&statement.input))];
    if let Some(hidden) = &statement.residual {
        commitments.push(("H", fingerprint(hidden)));
    }
    if let Some(output) = statement.output.commitment() {
        commitments.push(("H'", fingerprint(output)));
    }
    commitments
}

/// A chain link's weight commitments as `inspect` shows them: the fingerprint of those a link
/// carries, `None` where the proof leaves them out (they are the key's, as `prove` writes
/// chains).
pub fn link_weight_commitments(statement: &zkmha_attention::model_layer::ModelStatement) -> Option<String> {
    (!statement.model.tables.is_empty()).then(|| fingerprint(&statement.model))
}

/// The fingerprints of an attention-layer statement's commitments (Q, K, V).
pub fn layer_commitments(statement: &zkmha_attention::CommittedStatement) -> Vec<(&'static str, String)> {
    let c = &statement.commitments;
    vec![("Q", fingerprint(&c.queries)), ("K", fingerprint(&c.keys)), ("V", fingerprint(&c.values))]
}

/// The norms a model layer proves, by kind (`null` where it has none): before the attention,
/// before the MLP, on every query and key head, on each half's output.
fn norms(shape: &zkmha_attention::model_layer::ModelShape) -> Value {
    use zkmha_attention::model_layer::BlockHalf;
    json!({
        "input": shape.norm.map(|n| n.kind.name()),
        "mlp": shape.mlp.map(|m| m.norm.kind.name()),
        "query_key": shape.query_key_norms.map(|n| n.query.kind.name()),
        "attention_output": shape.output_norms.of(BlockHalf::Attention).map(|n| n.kind.name()),
        "mlp_output": shape.output_norms.of(BlockHalf::FeedForward).map(|n| n.kind.name()),
        "post": shape.post_norm.map(|n| n.kind.name()),
    })
}

fn object(pairs: &[(&'static str, String)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

impl Inspection {
    /// One JSON object: the kind, shapes, sizes and fingerprints (`"verified": false` on
    /// proofs), as `zkmha inspect --json` prints it.
    pub fn to_json(&self) -> Value {
        match self {
            Inspection::LayerProof(file) => {
                let statement = file.statement();
                let s = &statement.shape;
                let kind = if file.is_zero_knowledge() {
                    "zero-knowledge attention layer"
                } else {
                    "attention layer"
                };
                json!({
                    "kind": format!("{kind} proof"),
                    "zero_knowledge": file.is_zero_knowledge(),
                    "verified": false,
                    "tokens": s.seq_len, "heads": s.heads, "head_dim": s.head_dim,
                    "value_head_dim": s.value_head_dim,
                    "mask": statement.mask.to_string(),
                    "softmax_proven": statement.softmax.is_proven(),
                    "softmax": softmax_spec(statement.softmax),
                    "commitments": object(&layer_commitments(statement)),
                    "output": {"name": "O", "rows": s.seq_len, "columns": s.value_model_width(), "blake3": fingerprint(&statement.output)},
                    "statement_bytes": statement.compressed_size(),
                    "proof_bytes": file.proof_bytes(),
                })
            }
            Inspection::ModelProof(file) => {
                let statement = file.statement();
                let a = &statement.shape.attention;
                let zero_knowledge = file.is_zero_knowledge();
                let parts: serde_json::Map<String, Value> =
                    file.part_sizes().iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
                json!({
                    "kind": if zero_knowledge { "zero-knowledge model layer proof" } else { "model layer proof" },
                    "zero_knowledge": zero_knowledge,
                    "tokens": a.seq_len, "heads": a.heads, "head_dim": a.head_dim, "value_head_dim": a.value_head_dim,
                    "model_width": statement.shape.model_width, "shifts": statement.shape.shifts,
                    "mask": statement.mask.to_string(), "softmax_proven": statement.softmax.is_proven(),
                    "statement_bytes": statement.compressed_size(), "proof_bytes": file.proof_bytes(), "parts": parts,
                    "verified": false,
                    "softmax": softmax_spec(statement.softmax),
                    "model_commitment": fingerprint(&statement.model),
                    "commitments": object(&model_commitments(statement)),
                    "output": {"name": if statement.shape.mlp.is_some() { "H'" } else { "Z" }, "rows": a.seq_len, "columns": statement.shape.model_width, "blake3": fingerprint(&statement.output)},
                    "norms": norms(&statement.shape),
                })
            }
            Inspection::VerifierKey(key) => {
                let q = &key.quantization;
                json!({"kind": "verifier key", "fingerprint": fingerprint(key.as_ref()), "model": sanitize(&key.description), "description_authenticated": false,
                       "commitment": fingerprint(&key.commitment), "model_width": key.model_width,
                       "heads": key.heads, "key_value_heads": key.key_value_heads, "head_dim": key.head_dim,
                       "mask": key.mask.to_string(), "residual": residual_name(key.residual),
                       "rotary_base": key.rotary.map(|r| r.base), "shifts": q.shifts, "bytes": key.compressed_size(),
                       "weight_commitments": weight_commitments_code(key.weight_commitments),
                       "commitment_digest": hex(&key.commitment_digest()),
                       "norms": norms(&q.model_shape(
                           zkmha_attention::AttentionShape { seq_len: 1, heads: key.heads, head_dim: key.head_dim, value_head_dim: key.value_head_dim },
                           key.model_width, key.residual, key.key_value_heads, key.rotary))})
            }
            Inspection::ChainProof(proof) => {
                let statements = proof.statements();
                let part_sizes = proof.layer_part_sizes();
                let (embedding_bytes, head_bytes) = proof.end_sizes();
                let layers: Vec<Value> = statements
                    .iter()
                    .zip(&part_sizes)
                    .enumerate()
                    .map(|(i, (statement, (statement_bytes, parts)))| {
                        let parts: serde_json::Map<String, Value> =
                            parts.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
                        json!({
                            "statement_bytes": statement_bytes,
                            "parts": parts,
                            "layer": proof.first_layer().saturating_add(i as u64),
                            "model_commitment": link_weight_commitments(statement),
                            "commitments": object(&model_commitments(statement)),
                            "output": if statement.output.public().is_some() { "public" } else { "committed" },
                        })
                    })
                    .collect();
                let first = statements.first();
                json!({
                    "kind": if proof.is_zero_knowledge() { "zero-knowledge chain proof" } else { "chain proof" },
                    "zero_knowledge": proof.is_zero_knowledge(),
                    "verified": false,
                    "first_layer": proof.first_layer(),
                    "tokens": first.map(|s| s.shape.attention.seq_len),
                    "model_width": first.map(|s| s.shape.model_width),
                    "proof_bytes": proof.proof_bytes(),
                    "embedding_proof_bytes": embedding_bytes,
                    "head_proof_bytes": head_bytes,
                    "token_ids": proof.token_ids(),
                    "logits": proof.logits().map(|(positions, logits)| json!({"positions": positions, "count": logits.len()})),
                    "layers": layers,
                    "output": statements.last().map(|s| json!({"name": "H'", "rows": s.shape.attention.seq_len, "columns": s.shape.model_width, "blake3": fingerprint(&s.output)})),
                })
            }
            Inspection::ChainKey(key) => {
                let layers: Vec<Value> = key
                    .layers
                    .iter()
                    .map(|k| json!({"model": sanitize(&k.description), "commitment": fingerprint(&k.commitment)}))
                    .collect();
                json!({"kind": "chain key", "fingerprint": fingerprint(key.as_ref()), "first_layer": key.first_layer, "layers": layers,
                       "description_authenticated": false,
                       "hidden_fraction_bits": key.layers.first().map(|k| k.quantization.hidden_fraction_bits),
                       "embedding": key.embedding.as_ref().map(|e| json!({
                           "token_rows": e.shape.token_rows, "position_rows": e.shape.position_rows,
                           "model_width": e.shape.model_width, "commitment": fingerprint(&e.commitment)})),
                       "head": key.head.as_ref().map(|h| json!({
                           "norm": if h.bias.is_some() { "LayerNorm" } else { "RMSNorm" },
                           "logit_fraction_bits": h.logit_fraction_bits(),
                           "scale_commitment": fingerprint(&h.scale),
                           "lm_head": match &h.lm_head {
                               None => json!("tied"),
                               Some(own) => json!({"token_rows": own.table.shape.token_rows,
                                   "fraction_bits": own.fraction_bits,
                                   "commitment": fingerprint(&own.table.commitment)}),
                           }})),
                       "weight_commitments": key.layers.first().map(|k| weight_commitments_code(k.weight_commitments)),
                       "bytes": key.compressed_size()})
            }
            Inspection::ChainSecret(secret) => {
                json!({"kind": "chain secret", "layers": secret.layers.len(), "bytes": secret.compressed_size()})
            }
            Inspection::ModelSecret(secret) => {
                json!({"kind": "model secret", "key_commitment_digest": hex(&secret.key_digest),
                       "tables": secret.blinds.len(), "blinds": secret.blinds.iter().map(Vec::len).sum::<usize>(),
                       "bytes": secret.compressed_size()})
            }
        }
    }
}
