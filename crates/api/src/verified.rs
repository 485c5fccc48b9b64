//! What a verifier accepted: one value for every proof kind (attention layers, model layers,
//! chains), with the statement the proof is about and its output, and what a caller expects
//! of it.
//!
//! ```text
//! Verified = (kind, mode, key's fingerprint and description, layers,
//!             input:  token ids proven (a chain from layer 0 with the key's embedding table)
//!                   | a committed hidden state (nothing says where it came from)
//!                   | committed Q, K, V (an attention layer),
//!             output: logits at positions | a hidden state H' (or Z) | O,
//!             the output's digest, the time taken)
//! ```
//!
//! An array alone proves nothing: a proof of tokens A verifies whatever the caller meant. A
//! caller that means tokens B says so with an [`Expected`]; [`Verified::check`] refuses a
//! proof of another statement ([`Error::UnexpectedStatement`], exit code 3 on the command
//! line), and the verify functions that take an [`Expected`] check it before verifying.

use crate::model_chain::{ChainKey, ChainLogits, ChainProof};
use crate::model_files::ModelProof;
use crate::{Error, Result, fingerprint};
use serde_json::{Value, json};
use std::ops::Range;
use std::path::Path;
use std::time::Duration;
use zkmha_attention::model_layer::{ModelShape, ModelStatement};
use zkmha_attention::verifier_key::ModelVerifierKey;
use zkmha_attention::{AttentionShape, CommittedStatement, MaskKind, SoftmaxMode};

/// Which kind of proof was verified.
#[derive(Debug, Clone, PartialEq)]
pub enum ProofKind {
    /// An attention layer of its own (`Q`, `K`, `V` committed by the prover): its shape, mask
    /// and softmax.
    AttentionLayer {
        /// Tokens, heads and head widths.
        shape: AttentionShape,
        /// The mask.
        mask: MaskKind,
        /// The softmax.
        softmax: SoftmaxMode,
    },
    /// One layer of a model against its verifier key.
    ModelLayer,
    /// Consecutive layers of a model (a whole model from tokens to logits when the chain key
    /// has the embedding table and the head) against a chain key.
    Chain,
}

impl ProofKind {
    /// Its name, as `--json` reports and Python's `Verified.kind` give it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AttentionLayer { .. } => "attention layer",
            Self::ModelLayer => "model layer",
            Self::Chain => "chain",
        }
    }
}

/// Whether the proof hides the weights and the intermediate values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofMode {
    /// Plain: the proof reveals evaluations of the committed tensors at random points.
    Plain,
    /// Zero knowledge.
    ZeroKnowledge,
}

impl ProofMode {
    /// `"plain"` or `"zero-knowledge"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::ZeroKnowledge => "zero-knowledge",
        }
    }

    fn of(zero_knowledge: bool) -> Self {
        if zero_knowledge { Self::ZeroKnowledge } else { Self::Plain }
    }
}

/// The verifier key a proof was accepted against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyIdentity {
    /// [`fingerprint`] of the key (a layer's or a chain's), as `zkmha inspect` shows it.
    pub fingerprint: String,
    /// The key's description (the model owner's words: unauthenticated).
    pub description: String,
}

/// What the proof's first input is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProvenInput {
    /// Token ids, proven to be the first layer's input through the key's embedding table.
    TokenIds(Vec<u64>),
    /// A hidden state committed by the prover: the proof does not say where it came from.
    CommittedHiddenState {
        /// Its commitment's [`fingerprint`].
        commitment: String,
    },
    /// The `Q`, `K`, `V` an attention layer's prover committed to (their fingerprints).
    CommittedAttentionInputs {
        /// `Q`'s commitment.
        queries: String,
        /// `K`'s commitment.
        keys: String,
        /// `V`'s commitment.
        values: String,
    },
}

impl ProvenInput {
    /// In words, for refusals and reports.
    pub fn describe(&self) -> String {
        match self {
            Self::TokenIds(ids) => format!("token ids {ids:?}"),
            Self::CommittedHiddenState { .. } => {
                "a committed hidden state, not proven from token ids".to_string()
            }
            Self::CommittedAttentionInputs { .. } => {
                "committed Q, K, V, not proven from token ids".to_string()
            }
        }
    }
}

/// The proven output.
#[derive(Debug, Clone, PartialEq)]
pub enum ProvenOutput {
    /// A chain's logits at its positions (the model's head).
    Logits(ChainLogits),
    /// A layer's (or a chain's last layer's) hidden state, as floats.
    HiddenState {
        /// `H'` (a whole layer) or `Z` (an attention block).
        name: &'static str,
        /// Tokens.
        rows: usize,
        /// `d_model`.
        columns: usize,
        /// Row-major: the proven integers times the key's output unit.
        values: Vec<f64>,
    },
    /// An attention layer's `O` as integers.
    Attention {
        /// Tokens.
        rows: usize,
        /// `h·m_v`.
        columns: usize,
        /// Row-major; `None` for an output outside `i64` (a proof can be valid with one).
        values: Option<Vec<i64>>,
    },
}

impl ProvenOutput {
    /// Its name: `logits`, `H'`, `Z` or `O`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Logits(_) => "logits",
            Self::HiddenState { name, .. } => name,
            Self::Attention { .. } => "O",
        }
    }

    /// Rows and columns.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Self::Logits(l) => (l.positions.len(), l.vocabulary),
            Self::HiddenState { rows, columns, .. } | Self::Attention { rows, columns, .. } => {
                (*rows, *columns)
            }
        }
    }

    /// The values as floats (an attention layer's integers converted), row-major; `None` for an
    /// attention output outside `i64`.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        match self {
            Self::Logits(l) => Some(l.values.clone()),
            Self::HiddenState { values, .. } => Some(values.clone()),
            Self::Attention { values, .. } => values.as_ref().map(|v| v.iter().map(|&x| x as f64).collect()),
        }
    }
}

/// What a verifier accepted: the statement and the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The kind of proof.
    pub kind: ProofKind,
    /// Its mode.
    pub mode: ProofMode,
    /// The key it was verified against (`None`: an attention layer, verified on its own).
    pub key: Option<KeyIdentity>,
    /// The model's layers it covers (`None`: an attention layer, or one model layer, whose key
    /// does not say which layer of its model it is).
    pub layers: Option<Range<u64>>,
    /// The number of tokens.
    pub tokens: usize,
    /// The first input.
    pub input: ProvenInput,
    /// The output.
    pub output: ProvenOutput,
    /// [`fingerprint`] of the output as the proof states it (the public integers of a layer's
    /// output; a chain's logits with their positions).
    pub output_digest: String,
    /// How long the verification took.
    pub verify_time: Duration,
}

/// What a caller expects of a proof besides its validity: each field that is `Some` must be
/// what the proof states, else the proof is refused ([`Error::UnexpectedStatement`]).
///
/// ```
/// use zkmha_api::verified::Expected;
/// let expected = Expected { tokens: Some(vec![3, 1, 4]), ..Expected::default() };
/// assert!(expected.positions.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// The token ids the proof must be proven from (a chain whose first input is a committed
    /// hidden state is refused).
    pub tokens: Option<Vec<u64>>,
    /// The positions whose logits the proof must prove.
    pub positions: Option<Vec<u64>>,
    /// The model's layers the proof must cover (`a..b`).
    pub layers: Option<Range<u64>>,
}

impl Expected {
    /// Whether it expects nothing.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl Verified {
    /// The proven token ids (`None`: the first input is committed, not proven from ids).
    pub fn token_ids(&self) -> Option<&[u64]> {
        match &self.input {
            ProvenInput::TokenIds(ids) => Some(ids),
            _ => None,
        }
    }

    /// The positions of the proven logits (`None`: the output is not logits).
    pub fn positions(&self) -> Option<&[u64]> {
        match &self.output {
            ProvenOutput::Logits(l) => Some(&l.positions),
            _ => None,
        }
    }

    /// The proven logits (`None`: the output is a hidden state or `O`).
    pub fn logits(&self) -> Option<&ChainLogits> {
        match &self.output {
            ProvenOutput::Logits(l) => Some(l),
            _ => None,
        }
    }

    /// Refuses a statement other than the one `expected`.
    ///
    /// # Errors
    /// [`Error::UnexpectedStatement`] naming the first part that differs: the token ids (or an
    /// input not proven from token ids), the logit positions (or an output that is not logits),
    /// the layers.
    pub fn check(&self, expected: &Expected) -> Result<()> {
        let refuse = |what: &'static str, proof: String, expected: String| {
            Err(Error::UnexpectedStatement { what, proof, expected })
        };
        if let Some(tokens) = &expected.tokens
            && self.token_ids() != Some(tokens.as_slice())
        {
            return refuse("input", self.input.describe(), format!("token ids {tokens:?}"));
        }
        if let Some(positions) = &expected.positions
            && self.positions() != Some(positions.as_slice())
        {
            let proof = match self.positions() {
                Some(p) => format!("logits at positions {p:?}"),
                None => format!("{} ({}), no logits", self.output.name(), self.kind.name()),
            };
            return refuse("output", proof, format!("logits at positions {positions:?}"));
        }
        if let Some(layers) = &expected.layers
            && self.layers.as_ref() != Some(layers)
        {
            let proof = match &self.layers {
                Some(l) => format!("layers {}..{}", l.start, l.end),
                None => "not stated: a single layer's key does not say which layer it is".to_string(),
            };
            return refuse("layers", proof, format!("layers {}..{}", layers.start, layers.end));
        }
        Ok(())
    }

    /// The statement as JSON (no arrays but the token ids and positions): what `zkmha verify
    /// --json` prints and a web page shows.
    pub fn statement_json(&self) -> Value {
        let (rows, columns) = self.output.shape();
        json!({
            "kind": self.kind.name(),
            "mode": self.mode.name(),
            "key": self.key.as_ref().map(|k| json!({"fingerprint": k.fingerprint, "description": k.description})),
            "layers": self.layers.as_ref().map(|l| [l.start, l.end]),
            "tokens": self.tokens,
            "input": match &self.input {
                ProvenInput::TokenIds(_) => json!({"kind": "token ids"}),
                ProvenInput::CommittedHiddenState { commitment } => {
                    json!({"kind": "committed hidden state", "commitment": commitment})
                }
                ProvenInput::CommittedAttentionInputs { queries, keys, values } => {
                    json!({"kind": "committed Q, K, V", "Q": queries, "K": keys, "V": values})
                }
            },
            "token_ids": self.token_ids(),
            "positions": self.positions(),
            "output": {"name": self.output.name(), "rows": rows, "columns": columns, "blake3": self.output_digest},
            "verify_ms": self.verify_time.as_secs_f64() * 1e3,
        })
    }

    /// Writes the proven output with what it is about as one .npz file (`numpy.load`):
    /// `output` (float64; an attention layer's `O` int64), `token_ids` (uint64) when the input
    /// is proven from token ids, `positions` (uint64) when the output is logits.
    ///
    /// # Errors
    /// [`Error::OutputOutOfRange`] for an attention output outside `i64`; as
    /// [`crate::files::write_npz`].
    pub fn write_npz(&self, path: &Path) -> Result<()> {
        use crate::files::{NpzArray, write_npz};
        let (rows, columns) = self.output.shape();
        let output = match &self.output {
            ProvenOutput::Logits(l) => NpzArray::Float64 { rows, columns, values: &l.values },
            ProvenOutput::HiddenState { values, .. } => NpzArray::Float64 { rows, columns, values },
            ProvenOutput::Attention { values, .. } => {
                NpzArray::Int64 { rows, columns, values: values.as_deref().ok_or(Error::OutputOutOfRange)? }
            }
        };
        let mut arrays = vec![("output", output)];
        arrays.extend(self.token_ids().map(|ids| ("token_ids", NpzArray::UInt64(ids))));
        arrays.extend(self.positions().map(|p| ("positions", NpzArray::UInt64(p))));
        write_npz(path, &arrays)
    }

    /// A model layer's statement against its key (before or after verifying: the time is zero).
    pub(crate) fn of_model_layer(key: &ModelVerifierKey, proof: &ModelProof) -> Result<Self> {
        let statement = proof.statement();
        let values = statement.output.public().ok_or(Error::ChainLink)?;
        Ok(Self {
            kind: ProofKind::ModelLayer,
            mode: ProofMode::of(proof.is_zero_knowledge()),
            key: Some(KeyIdentity { fingerprint: fingerprint(key), description: key.description.clone() }),
            layers: None,
            tokens: statement.shape.attention.seq_len,
            input: committed_input(statement),
            output: ProvenOutput::HiddenState {
                name: output_name(&statement.shape),
                rows: statement.shape.attention.seq_len,
                columns: statement.shape.model_width,
                values: key.quantization.dequantize_output(values),
            },
            output_digest: fingerprint(&statement.output),
            verify_time: Duration::ZERO,
        })
    }

    /// A chain's statement against its key (the time zero). The key must be validated.
    pub(crate) fn of_chain(key: &ChainKey, proof: &ChainProof) -> Result<Self> {
        let statements = proof.statements();
        let (first, last) = match (statements.first(), statements.last()) {
            (Some(first), Some(last)) => (*first, *last),
            _ => return Err(Error::EmptyInput),
        };
        let last_key = key.layers.last().ok_or(Error::EmptyInput)?;
        let tokens = last.shape.attention.seq_len;
        let (output, output_digest) = match (proof.logits(), &key.head, &key.embedding) {
            (Some((positions, integers)), Some(head), Some(embedding)) => {
                let logits = ChainLogits::new(
                    positions.to_vec(),
                    head.table(embedding).shape.token_rows as usize,
                    integers,
                    head.logit_fraction_bits(),
                    None,
                );
                (ProvenOutput::Logits(logits), logits_digest(positions, integers))
            }
            // A proof with logits that the key cannot read does not verify; it is never
            // returned.
            (Some(_), _, _) => return Err(Error::ChainLink),
            (None, _, _) => {
                let values = last.output.public().ok_or(Error::ChainLink)?;
                let output = ProvenOutput::HiddenState {
                    name: output_name(&last.shape),
                    rows: tokens,
                    columns: last.shape.model_width,
                    values: last_key.quantization.dequantize_output(values),
                };
                (output, fingerprint(&last.output))
            }
        };
        Ok(Self {
            kind: ProofKind::Chain,
            mode: ProofMode::of(proof.is_zero_knowledge()),
            key: Some(KeyIdentity {
                fingerprint: fingerprint(key),
                description: key.layers.first().map(|k| k.description.clone()).unwrap_or_default(),
            }),
            layers: Some(key.layer_range()),
            tokens,
            input: match proof.token_ids() {
                Some(ids) => ProvenInput::TokenIds(ids.to_vec()),
                None => committed_input(first),
            },
            output,
            output_digest,
            verify_time: Duration::ZERO,
        })
    }

    /// An attention layer's statement (the time zero).
    pub(crate) fn of_attention(statement: &CommittedStatement, zero_knowledge: bool) -> Self {
        let c = &statement.commitments;
        let shape = statement.shape;
        Self {
            kind: ProofKind::AttentionLayer { shape, mask: statement.mask, softmax: statement.softmax },
            mode: ProofMode::of(zero_knowledge),
            key: None,
            layers: None,
            tokens: shape.seq_len,
            input: ProvenInput::CommittedAttentionInputs {
                queries: fingerprint(&c.queries),
                keys: fingerprint(&c.keys),
                values: fingerprint(&c.values),
            },
            output: ProvenOutput::Attention {
                rows: shape.seq_len,
                columns: shape.value_model_width(),
                values: crate::layer_files::attention_output_integers(statement).ok(),
            },
            output_digest: fingerprint(&statement.output),
            verify_time: Duration::ZERO,
        }
    }
}

/// Reads a verifier key and a proof — a model layer's with its key, or a chain's with its chain
/// key, told apart by the proof file's kind — and verifies the proof, refusing a statement
/// other than the one `expected` before verifying.
///
/// # Errors
/// The readers' errors (a missing, foreign or corrupt file: [`crate::ErrorKind::BadInput`]),
/// then as [`crate::verify_expecting`] and [`crate::model_chain::verify_chain_expecting`].
pub fn verify_files(key_path: &Path, proof_path: &Path, expected: &Expected) -> Result<Verified> {
    use crate::model_files::{FileKind, file_kind};
    if file_kind(proof_path) == Some(FileKind::ChainProof) {
        let key = crate::model_chain::read_chain_key(key_path)?;
        let proof = ChainProof::read(proof_path)?;
        return crate::model_chain::verify_chain_expecting(&key, &proof, expected);
    }
    let key = crate::model_files::read_key(key_path)?;
    let proof = ModelProof::read(proof_path)?;
    crate::verify_expecting(&key, &proof, expected)
}

/// The token ids of `text` by the tokenizer of the model file `model` (its GGUF metadata, or
/// the tokenizer.json beside it): what a caller expects a proof from text to be proven from.
///
/// # Errors
/// [`Error::Model`]: the file cannot be read or has no tokenizer.
pub fn text_tokens(model: &Path, text: &str) -> Result<Vec<u64>> {
    let file = zkmha_model::model_file::ModelFile::open(model, None, None)?;
    Ok(file.tokenizer()?.encode(text)?.into_iter().map(|id| id as u64).collect())
}

/// A layer's output's name: `H'` for a whole layer (with its MLP), `Z` for an attention block.
pub fn output_name(shape: &ModelShape) -> &'static str {
    if shape.mlp.is_some() { "H'" } else { "Z" }
}

/// The committed hidden state a layer starts from (`H` where the layer has one, else `X`).
fn committed_input(statement: &ModelStatement) -> ProvenInput {
    let commitment = match &statement.residual {
        Some(hidden) => fingerprint(hidden),
        None => fingerprint(&statement.input),
    };
    ProvenInput::CommittedHiddenState { commitment }
}

/// The digest of proven logits: [`fingerprint`] of the positions' count, the positions and the
/// integers (two's complement), as one list of `u64`.
fn logits_digest(positions: &[u64], integers: &[i64]) -> String {
    let mut words = Vec::with_capacity(1 + positions.len() + integers.len());
    words.push(positions.len() as u64);
    words.extend_from_slice(positions);
    words.extend(integers.iter().map(|&l| l as u64));
    fingerprint(&words)
}
