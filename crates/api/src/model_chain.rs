//! Consecutive layers of a model proven as one inference: one key for the layers (each
//! layer's key, all at one residual stream scale), one proof file holding each layer's proof,
//! linked by the committed hidden states between the layers
//! ([`zkmha_attention::layer_chain`]).
//!
//! ```text
//! commit   calibrate every layer on the calibration tokens' real hidden states, the residual
//!          stream's scale f_h the smallest any layer needs; commit each layer's weights
//! prove    the quantized forward pass once: H_a → H_{a+1} → … → H_b; commit H_a … H_{b−1}
//!          (and H_b with a head); prove each layer from the two boundaries it joins (the
//!          last one's output public, or committed with a head); the head's logits from C(H_b)
//! verify   the links (byte-equal commitments where two layers meet), each layer against its
//!          own key; the chain's output is the last layer's public H_b, or the head's logits
//! ```
//!
//! A chain from layer 0 proven from token ids also proves its first hidden state `H_0`: the key
//! holds the embedding table's commitment (at the chain's scale), the proof the token ids and an
//! embedding proof ([`zkmha_attention::embedding`]) that `H_0`'s commitment — the first layer's
//! `H` — holds their rows (BERT's: word rows plus position rows that hold the token type 0 row
//! too, every input one segment; its layer 0 proves the embeddings' LayerNorm from `H_0` to
//! `X_0`). Otherwise (a deeper first layer, a hidden-state input) `H_a` is the prover's
//! committed input, as a single layer's `H` is.
//!
//! A chain from token ids to a model's last layer, whose final norm and LM head tied to the
//! embeddings are read ([`Model::final_norm`]), also proves the model's head
//! ([`zkmha_attention::head`]): the key holds the final norm's constants and weight
//! commitments, the proof the logits of the chosen positions ([`LogitPositions`]) and the
//! head's proof from the last boundary's commitment, which stays committed.

use crate::attention_layer::Hiding;
use crate::error::{Error, Result};
use crate::model_files::{ChainMagic, decode_header, encode_parts};
use crate::model_layer::{Model, ModelInput, ModelOptions, Stage, check_model_against_key};
use crate::verified::{Expected, Verified};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};
use zkmha_attention::AttentionError;
use zkmha_attention::block::{
    BlockEnds, Boundary, block_hyrax_params, block_output, commit_boundary, normalized_input,
    prove_linked_block,
};
use zkmha_attention::embedding::{
    EmbeddingKey, EmbeddingProof, EmbeddingShape, EmbeddingStatement, MAX_EMBEDDED_TOKENS, commit_table,
    embed, embedding_hyrax_params, pad_table, prove_embedding, quantize_table, table_hyrax_params,
    verify_embedding,
};
use zkmha_attention::head::{
    HeadKey, HeadProof, HeadStatement, HeadWeights, MAX_PUBLIC_LOGITS, commit_norm_weight, compute_head,
    head_hyrax_params, prove_head, verify_head,
};
use zkmha_attention::layer_chain::{ChainLink, MAX_CHAIN_LAYERS, check_chain_keys, verify_chain_ending};
use zkmha_attention::mode::{Mode, Plain, ProverRng, Zk};
use zkmha_attention::model_layer::{ModelWeights, OutputKind};
use zkmha_attention::model_quantization::{HeadQuantization, NormWeights};
use zkmha_attention::model_quantization::{ModelAccuracy, model_accuracy};
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments};

/// The verifier key of the consecutive layers `first_layer ..` of one model.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ChainKey {
    /// The model's index of the chain's first layer.
    pub first_layer: u64,
    /// Each layer's key, in order (one residual stream scale `f_h` for all).
    pub layers: Vec<ModelVerifierKey>,
    /// The embedding table's commitment (a chain from layer 0): proofs from token ids prove the
    /// first hidden state from it.
    pub embedding: Option<EmbeddingKey>,
    /// The model's head (a chain to the last layer of a model with a final norm; its LM head
    /// the embedding table or, untied, a table of its own): proofs from token ids prove the
    /// logits.
    pub head: Option<HeadKey>,
}

impl ChainKey {
    /// The model's layers the chain covers.
    pub fn layer_range(&self) -> Range<u64> {
        self.first_layer..self.first_layer.saturating_add(self.layers.len() as u64)
    }

    /// Checks the keys against the stated limits and that they can be chained.
    ///
    /// # Errors
    /// [`AttentionError::BrokenChain`], and as [`ModelVerifierKey::shape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        check_chain_keys(&self.layers)?;
        for key in &self.layers {
            key.shape(1)?;
        }
        if let Some(embedding) = &self.embedding {
            embedding.validate()?;
            let width = self.layers.first().map_or(0, |k| k.model_width as u64);
            if self.first_layer != 0 || embedding.shape.model_width != width {
                return Err(AttentionError::BrokenChain {
                    layer: 0,
                    reason: "an embedding table belongs to a chain from layer 0 of its width",
                });
            }
        }
        if let Some(head) = &self.head {
            let first = self.layers.first();
            head.validate(first.map_or(0, |k| k.model_width))?;
            let last = self.layers.len().saturating_sub(1);
            if self.embedding.is_none() {
                return Err(AttentionError::BrokenChain {
                    layer: last,
                    reason: "a head needs the embedding table (its tied LM head) in the key",
                });
            }
            if Some(head.quantization.hidden_fraction_bits)
                != first.map(|k| k.quantization.hidden_fraction_bits)
            {
                return Err(AttentionError::BrokenChain {
                    layer: last,
                    reason: "the head reads the residual stream at another scale than the layers",
                });
            }
        }
        Ok(())
    }
}

/// Beside a hiding chain key, what the model owner keeps: each layer's [`ModelSecret`].
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ChainSecret {
    /// Each layer's secret, in the key's order.
    pub layers: Vec<ModelSecret>,
    /// The embedding table commitment's blinds (one per row), when the key holds one.
    pub embedding: Option<Vec<zkmha_field::Fr>>,
    /// The final norm's weight commitments' blinds, when the key holds a head.
    pub head: Option<HeadSecret>,
}

/// The blinds of a head's weight commitments.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HeadSecret {
    /// `γ`'s rows' blinds.
    pub scale: Vec<zkmha_field::Fr>,
    /// `β`'s rows' blinds (a norm with a shift).
    pub bias: Option<Vec<zkmha_field::Fr>>,
    /// An untied LM head's rows' blinds.
    pub lm_head: Option<Vec<zkmha_field::Fr>>,
}

/// A chain key, and the secret of hiding commitments.
#[derive(Debug, Clone)]
pub struct CommittedChain {
    /// The key (to publish).
    pub key: ChainKey,
    /// The layers' blinds (to keep); `None` for binding commitments.
    pub secret: Option<ChainSecret>,
}

impl CommittedChain {
    /// The chain key with `description` for every layer's key instead of the default
    /// (`layer N (architecture)`); `None` keeps the default.
    ///
    /// # Errors
    /// [`Error::Description`] for one over [`crate::model_layer::MAX_DESCRIPTION_CHARS`]
    /// characters.
    pub fn describe(mut self, description: Option<&str>) -> Result<Self> {
        if let Some(description) = description {
            crate::model_layer::check_description(description)?;
            for key in &mut self.key.layers {
                key.description = description.to_string();
            }
        }
        Ok(self)
    }
}

/// The layer proofs of a chain in mode `M`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainProofOf<M: Mode> {
    /// The model's index of the chain's first layer.
    pub first_layer: u64,
    /// Each layer's statement and proof, in order.
    pub links: Vec<ChainLink<M>>,
    /// The token ids and the proof that the first layer's hidden state is their embeddings;
    /// `None` when that hidden state is the prover's committed input.
    pub embedding: Option<Box<EmbeddedTokens<M>>>,
    /// The logits and the proof that they are the head's of the last boundary; `None` when
    /// the chain ends in its last layer's public output.
    pub head: Option<Box<ProvenLogits<M>>>,
}

/// A chain's proven logits: the positions, the logits and the head's proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvenLogits<M: Mode> {
    /// The token positions whose logits are public (strictly increasing).
    pub positions: Vec<u64>,
    /// `|positions| × V` integers at `2^(f_y + f_h)` (the key's head), row-major.
    pub logits: Vec<i64>,
    /// The head's proof.
    pub proof: HeadProof<M>,
}

/// Which positions' logits a chain with a head proves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogitPositions {
    /// The last token's (the next-token prediction): `V` logits.
    #[default]
    Last,
    /// Every token's: `s × V` logits (for measuring a model's predictions over a text).
    All,
}

impl LogitPositions {
    fn positions(self, tokens: usize) -> Vec<u64> {
        match self {
            Self::Last => vec![tokens.saturating_sub(1) as u64],
            Self::All => (0..tokens as u64).collect(),
        }
    }
}

/// A chain's proven input: the token ids and their embedding proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddedTokens<M: Mode> {
    /// The token ids (public: the statement's input).
    pub ids: Vec<u64>,
    /// `H_0`'s commitment holds the ids' rows of the key's embedding table.
    pub proof: EmbeddingProof<M>,
}

/// A chain's proof: plain (binding keys) or zero-knowledge (hiding keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainProof {
    /// Plain layer proofs.
    Plain(ChainProofOf<Plain>),
    /// Zero-knowledge layer proofs.
    ZeroKnowledge(ChainProofOf<Zk>),
}

impl ChainProof {
    /// The model's index of the chain's first layer.
    pub fn first_layer(&self) -> u64 {
        match self {
            Self::Plain(p) => p.first_layer,
            Self::ZeroKnowledge(p) => p.first_layer,
        }
    }

    /// The number of layer proofs.
    pub fn layers(&self) -> usize {
        match self {
            Self::Plain(p) => p.links.len(),
            Self::ZeroKnowledge(p) => p.links.len(),
        }
    }

    /// The token ids its first hidden state is proven from (`None`: a committed input).
    pub fn token_ids(&self) -> Option<&[u64]> {
        match self {
            Self::Plain(p) => p.embedding.as_ref().map(|e| e.ids.as_slice()),
            Self::ZeroKnowledge(p) => p.embedding.as_ref().map(|e| e.ids.as_slice()),
        }
    }

    /// The proven logits' positions and integers (`None`: the chain ends in a public hidden
    /// state).
    pub fn logits(&self) -> Option<(&[u64], &[i64])> {
        match self {
            Self::Plain(p) => p.head.as_ref().map(|h| (h.positions.as_slice(), h.logits.as_slice())),
            Self::ZeroKnowledge(p) => p.head.as_ref().map(|h| (h.positions.as_slice(), h.logits.as_slice())),
        }
    }

    /// Whether the proofs are zero-knowledge.
    pub fn is_zero_knowledge(&self) -> bool {
        matches!(self, Self::ZeroKnowledge(_))
    }

    /// Each layer's statement.
    pub fn statements(&self) -> Vec<&zkmha_attention::model_layer::ModelStatement> {
        match self {
            Self::Plain(p) => p.links.iter().map(|l| &l.statement).collect(),
            Self::ZeroKnowledge(p) => p.links.iter().map(|l| &l.statement).collect(),
        }
    }

    /// The layer proofs' encoded length, without their statements.
    pub fn proof_bytes(&self) -> usize {
        match self {
            Self::Plain(p) => p.links.iter().map(|l| l.proof.compressed_size()).sum(),
            Self::ZeroKnowledge(p) => p.links.iter().map(|l| l.proof.compressed_size()).sum(),
        }
    }

    /// Each layer's proof's parts and their encoded lengths (`ModelBlockProof::part_sizes`),
    /// and each layer's statement's length.
    pub fn layer_part_sizes(&self) -> Vec<(usize, Vec<(&'static str, usize)>)> {
        match self {
            Self::Plain(p) => {
                p.links.iter().map(|l| (l.statement.compressed_size(), l.proof.part_sizes())).collect()
            }
            Self::ZeroKnowledge(p) => {
                p.links.iter().map(|l| (l.statement.compressed_size(), l.proof.part_sizes())).collect()
            }
        }
    }

    /// The encoded lengths of the embedding's and the head's proofs (0 where absent).
    pub fn end_sizes(&self) -> (usize, usize) {
        fn sizes<M: Mode>(p: &ChainProofOf<M>) -> (usize, usize) {
            (
                p.embedding.as_ref().map_or(0, |e| e.proof.compressed_size()),
                p.head.as_ref().map_or(0, |h| h.proof.compressed_size()),
            )
        }
        match self {
            Self::Plain(p) => sizes(p),
            Self::ZeroKnowledge(p) => sizes(p),
        }
    }

    /// The file's contents.
    ///
    /// # Errors
    /// [`Error::Encode`] (not expected: encoding into memory).
    pub fn encode(&self) -> Result<Vec<u8>> {
        fn parts<M: Mode>(
            p: &ChainProofOf<M>,
        ) -> Vec<(&zkmha_attention::model_layer::ModelStatement, &zkmha_attention::block::ModelBlockProof<M>)>
        {
            p.links.iter().map(|l| (&l.statement, &l.proof)).collect()
        }
        fn tokens<M: Mode>(p: &ChainProofOf<M>) -> Option<(&Vec<u64>, &EmbeddingProof<M>)> {
            p.embedding.as_ref().map(|e| (&e.ids, &e.proof))
        }
        type HeadParts<'p, M> = (&'p Vec<u64>, &'p Vec<i64>, &'p HeadProof<M>);
        fn head<M: Mode>(p: &ChainProofOf<M>) -> Option<HeadParts<'_, M>> {
            p.head.as_ref().map(|h| (&h.positions, &h.logits, &h.proof))
        }
        match self {
            Self::Plain(p) => {
                encode_parts(ChainMagic::Proof, &(p.first_layer, parts(p), tokens(p), head(p)), "chain proof")
            }
            Self::ZeroKnowledge(p) => encode_parts(
                ChainMagic::ZkProof,
                &(p.first_layer, parts(p), tokens(p), head(p)),
                "chain proof",
            ),
        }
    }

    /// Writes the chain's proof file; returns its length.
    ///
    /// # Errors
    /// As [`crate::files::write_file`].
    pub fn write(&self, path: &Path) -> Result<usize> {
        let bytes = self.encode()?;
        crate::files::write_file(path, &bytes)?;
        Ok(bytes.len())
    }

    /// Reads a chain's proof file of either mode: at most [`MAX_CHAIN_LAYERS`] layer proofs,
    /// each decoded within its own commitment-row budget
    /// ([`crate::model_files::MAX_DECODED_ROWS`]), the whole file within one more
    /// ([`crate::model_files::chain_row_budget`] of its length), and each statement checked
    /// against the stated limits.
    ///
    /// # Errors
    /// As [`crate::model_files::read_key`], and [`Error::UnacceptedStatement`].
    pub fn read(path: &Path) -> Result<Self> {
        if crate::model_files::has_magic(path, ChainMagic::ZkProof) {
            Ok(Self::ZeroKnowledge(read_links::<Zk>(path, ChainMagic::ZkProof)?))
        } else {
            Ok(Self::Plain(read_links::<Plain>(path, ChainMagic::Proof)?))
        }
    }
}

fn read_links<M: Mode>(path: &Path, magic: ChainMagic) -> Result<ChainProofOf<M>> {
    decode_header(path, magic, "chain proof", |rest| {
        // Each part has its own budget, and the whole file one more: without it, 1024 links of
        // identity rows would decode to 1024 × 72 MiB from ~128 MiB of file.
        let file_budget = crate::model_files::chain_row_budget(rest.len());
        zkmha_pcs::decode_with_row_budget(file_budget, || read_link_parts::<M>(path, rest))
    })
}

fn read_link_parts<M: Mode>(path: &Path, rest: &mut &[u8]) -> Result<ChainProofOf<M>> {
    let first_layer: u64 = crate::model_files::decode_part(rest, path, "chain proof")?;
    let count: u64 = crate::model_files::decode_part(rest, path, "chain proof")?;
    if count == 0 || count > MAX_CHAIN_LAYERS as u64 {
        return Err(Error::UnacceptedStatement {
            path: path.to_path_buf(),
            error: AttentionError::BrokenChain { layer: 0, reason: "a chain holds 1 to 1024 layer proofs" },
        });
    }
    let mut links = Vec::new();
    for _ in 0..count {
        let (statement, proof) =
            zkmha_pcs::decode_with_row_budget(crate::model_files::MAX_DECODED_ROWS, || {
                crate::model_files::decode_part::<(
                    zkmha_attention::model_layer::ModelStatement,
                    zkmha_attention::block::ModelBlockProof<M>,
                )>(rest, path, "chain proof")
            })?;
        // A chain's proof leaves the weight commitments out (they are the key's); one that
        // carries them (a link encoded as it was built) has them checked as a layer's.
        if statement.model.tables.is_empty() {
            statement.validate_without_weight_commitments()
        } else {
            statement.validate()
        }
        .map_err(|error| Error::UnacceptedStatement { path: path.to_path_buf(), error })?;
        links.push(ChainLink { statement, proof });
    }
    let tokens = 1..=MAX_EMBEDDED_TOKENS as u64;
    let embedding = if crate::model_files::decode_part::<bool>(rest, path, "chain proof")? {
        let ids = bounded_list::<u64>(rest, path, tokens.clone(), |count| {
            format!("an embedding proof takes 1 to {MAX_EMBEDDED_TOKENS} tokens, not {count}")
        })?;
        let proof = zkmha_pcs::decode_with_row_budget(crate::model_files::MAX_DECODED_ROWS, || {
            crate::model_files::decode_part::<EmbeddingProof<M>>(rest, path, "chain proof")
        })?;
        Some(Box::new(EmbeddedTokens { ids, proof }))
    } else {
        None
    };
    let head = if crate::model_files::decode_part::<bool>(rest, path, "chain proof")? {
        let positions = bounded_list::<u64>(rest, path, tokens, |count| {
            format!("a head proves 1 to {MAX_EMBEDDED_TOKENS} positions, not {count}")
        })?;
        let logits = bounded_list::<i64>(rest, path, 0..=MAX_PUBLIC_LOGITS, |count| {
            format!("a head proof carries at most {MAX_PUBLIC_LOGITS} logits, not {count}")
        })?;
        let proof = zkmha_pcs::decode_with_row_budget(crate::model_files::MAX_DECODED_ROWS, || {
            crate::model_files::decode_part::<HeadProof<M>>(rest, path, "chain proof")
        })?;
        Some(Box::new(ProvenLogits { positions, logits, proof }))
    } else {
        None
    };
    Ok(ChainProofOf { first_layer, links, embedding, head })
}

/// Decodes a count within `counts` (else [`Error::UnacceptedStatement`] with `refusal`'s
/// sentence, before anything is allocated), then that many `T`.
fn bounded_list<T: ark_serialize::CanonicalDeserialize>(
    rest: &mut &[u8],
    path: &Path,
    counts: std::ops::RangeInclusive<u64>,
    refusal: impl Fn(u64) -> String,
) -> Result<Vec<T>> {
    let count: u64 = crate::model_files::decode_part(rest, path, "chain proof")?;
    if !counts.contains(&count) {
        return Err(Error::UnacceptedStatement {
            path: path.to_path_buf(),
            error: AttentionError::InvalidShape(refusal(count)),
        });
    }
    (0..count).map(|_| crate::model_files::decode_part::<T>(rest, path, "chain proof")).collect()
}

/// Writes a chain key; returns the file's length.
///
/// # Errors
/// As [`crate::files::write_file`].
pub fn write_chain_key(path: &Path, key: &ChainKey) -> Result<usize> {
    let bytes = encode_parts(ChainMagic::Key, key, "chain key")?;
    crate::files::write_file(path, &bytes)?;
    Ok(bytes.len())
}

/// Reads a chain key and checks it ([`ChainKey::validate`]).
///
/// # Errors
/// As [`crate::model_files::read_key`].
pub fn read_chain_key(path: &Path) -> Result<ChainKey> {
    let key: ChainKey = decode_header(path, ChainMagic::Key, "chain key", |rest| {
        // A whole model's key: Llama-3-8B's layers alone hold ~1.2 M commitment rows, above
        // one file's 2^20, so the budget grows with the file as a chain proof's does.
        let budget = crate::model_files::chain_row_budget(rest.len());
        zkmha_pcs::decode_with_row_budget(budget, || {
            crate::model_files::decode_part::<ChainKey>(rest, path, "chain key")
        })
    })?;
    key.validate().map_err(|error| Error::UnusableKey { path: path.to_path_buf(), error })?;
    Ok(key)
}

/// Writes a chain's secret (readable by its owner only, where the system has permissions).
///
/// # Errors
/// As [`crate::files::write_private_file`].
pub fn write_chain_secret(path: &Path, secret: &ChainSecret) -> Result<()> {
    crate::files::write_private_file(path, &encode_parts(ChainMagic::Secret, secret, "chain secret")?)
}

/// Writes a chain key and, for hiding commitments, its secret, together
/// ([`crate::files::write_files`]): a failed run replaces neither. Returns the key file's
/// length.
///
/// # Errors
/// As [`crate::files::write_files`].
pub fn write_chain_key_and_secret(
    key_path: &Path,
    key: &ChainKey,
    secret: Option<(&Path, &ChainSecret)>,
) -> Result<usize> {
    let secret = secret
        .map(|(path, s)| encode_parts(ChainMagic::Secret, s, "chain secret").map(|b| (path, b)))
        .transpose()?;
    crate::model_files::write_key_files(key_path, &encode_parts(ChainMagic::Key, key, "chain key")?, secret)
}

/// Reads a chain's secret (checked against the key when proving).
///
/// # Errors
/// As [`read_chain_key`], without [`Error::UnusableKey`].
pub fn read_chain_secret(path: &Path) -> Result<ChainSecret> {
    decode_header(path, ChainMagic::Secret, "chain secret", |rest| {
        crate::model_files::decode_part::<ChainSecret>(rest, path, "chain secret")
    })
}

/// Reads the secret of the chain key at `key_path` from `secret`, or from the key's path with
/// `.secret` appended (checked against the key when proving).
///
/// # Errors
/// [`Error::MissingSecretFile`], or as [`read_chain_secret`].
pub fn read_chain_secret_for(key_path: &Path, secret: Option<&Path>) -> Result<ChainSecret> {
    let path = secret.map_or_else(|| crate::model_files::secret_path(key_path), Path::to_path_buf);
    if !path.exists() {
        return Err(Error::MissingSecretFile { key: key_path.to_path_buf(), secret: path });
    }
    read_chain_secret(&path)
}

/// Opens the layers `layers` of a model file (`options.layer` is not read).
///
/// # Errors
/// As [`Model::open`]; [`Error::ChainLayers`] for an empty range or one beyond
/// [`MAX_CHAIN_LAYERS`] layers.
pub fn open_layers(path: &Path, options: &ModelOptions, layers: Range<usize>) -> Result<Vec<Model>> {
    if layers.is_empty() || layers.len() > MAX_CHAIN_LAYERS {
        return Err(Error::ChainLayers {
            key: format!("1 to {MAX_CHAIN_LAYERS} layers"),
            given: format!("layers {}..{}", layers.start, layers.end),
        });
    }
    layers.map(|layer| Model::open(path, &ModelOptions { layer, ..options.clone() })).collect()
}

/// Checks that `models` are consecutive layers.
fn check_consecutive(models: &[Model]) -> Result<()> {
    let first = models.first().map(Model::layer).unwrap_or(0);
    if models.is_empty() || models.iter().enumerate().any(|(i, m)| m.layer() != first + i) {
        return Err(Error::ChainLayers {
            key: "consecutive layers".into(),
            given: format!("layers {:?}", models.iter().map(Model::layer).collect::<Vec<_>>()),
        });
    }
    Ok(())
}

/// Calibrates every layer of `models` (consecutive layers of one model file) on the
/// calibration tokens' real hidden states, at one residual stream scale — the smallest any
/// layer needs — and commits to each layer's weights.
///
/// ```
/// use zkmha_api::model_chain::{commit_chain, open_layers};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-chain-{}", std::process::id()));
/// let path = zkmha_api::example_model::write_llama(&dir, 7, 2)?;
/// let models = open_layers(&path, &Default::default(), 0..2)?;
/// let committed = commit_chain(&models, zkmha_api::WeightCommitments::Binding, &mut |_, _| {})?;
/// assert_eq!(committed.key.layers.len(), 2);
/// let scales: Vec<i32> = committed.key.layers.iter().map(|k| k.quantization.hidden_fraction_bits).collect();
/// assert_eq!(scales[0], scales[1]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`crate::commit_model`]; [`Error::ChainLayers`] for layers that are not consecutive.
pub fn commit_chain(
    models: &[Model],
    weight_commitments: WeightCommitments,
    progress: &mut dyn FnMut(usize, Stage),
) -> Result<CommittedChain> {
    let _span = tracing::info_span!("commit_chain", layers = models.len()).entered();
    check_consecutive(models)?;
    let first = models.first().ok_or(Error::EmptyInput)?;
    let ids = first.calibration_ids()?;
    let start = first.float_hidden_state(&ids)?;
    // The scale each layer would choose on its own; the chain takes the smallest.
    let mut hidden = start.clone();
    let mut scale = i32::MAX;
    for model in models {
        progress(model.layer(), Stage::Calibrating);
        let calibration = model.calibrate(hidden, None)?;
        scale = scale.min(calibration.quantization.hidden_fraction_bits);
        hidden = calibration.output;
    }
    let (embedding, embedding_blinds) = match embedding_table(first, scale)? {
        Some((shape, padded)) => {
            progress(first.layer(), Stage::Committing);
            let params = table_hyrax_params(&shape)?;
            let mut rng = crate::model_layer::secure_rng("the embedding table's blinds")?;
            match weight_commitments {
                WeightCommitments::Hiding => {
                    let (commitment, blinds) = commit_table::<Zk>(&params, &shape, &padded, &mut rng)?;
                    (Some(EmbeddingKey { shape, commitment }), Some(blinds.rows))
                }
                WeightCommitments::Binding => {
                    let (commitment, ()) = commit_table::<Plain>(&params, &shape, &padded, &mut rng)?;
                    (Some(EmbeddingKey { shape, commitment }), None)
                }
            }
        }
        None => (None, None),
    };
    let mut hidden = start;
    let mut keys = Vec::with_capacity(models.len());
    let mut secrets = Vec::with_capacity(models.len());
    for model in models {
        progress(model.layer(), Stage::Calibrating);
        let calibration = model.calibrate(hidden, Some(scale))?;
        hidden = calibration.output;
        progress(model.layer(), Stage::Committing);
        let committed = model.commit(calibration.quantization, weight_commitments)?;
        keys.push(committed.key);
        secrets.extend(committed.secret);
    }
    // The head: after the model's last layer, from the same calibration tokens.
    let last = models.last().ok_or(Error::EmptyInput)?;
    let (head, head_secret) = match (&embedding, last.final_norm()) {
        (Some(_), Ok((norm, epsilon))) => {
            progress(last.layer() + 1, Stage::Committing);
            let d = last.model_width();
            let quantization = HeadQuantization::calibrate(scale, d, &norm, epsilon, &hidden)?;
            let weights = quantization.quantize_norm(&norm)?;
            let lm_head = lm_head_table(last)?;
            let mut rng = crate::model_layer::secure_rng("the final norm's blinds")?;
            match weight_commitments {
                WeightCommitments::Hiding => {
                    let (key, blinds) = commit_head::<Zk>(quantization, d, &weights, lm_head, &mut rng)?;
                    let secret = HeadSecret {
                        scale: blinds.0.rows,
                        bias: blinds.1.map(|b| b.rows),
                        lm_head: blinds.2.map(|b| b.rows),
                    };
                    (Some(key), Some(secret))
                }
                WeightCommitments::Binding => {
                    (Some(commit_head::<Plain>(quantization, d, &weights, lm_head, &mut rng)?.0), None)
                }
            }
        }
        _ => (None, None),
    };
    progress(models.len() + first.layer(), Stage::Done);
    let key = ChainKey { first_layer: first.layer() as u64, layers: keys, embedding, head };
    key.validate()?;
    let secret = (weight_commitments == WeightCommitments::Hiding).then_some(ChainSecret {
        layers: secrets,
        embedding: embedding_blinds,
        head: head_secret,
    });
    Ok(CommittedChain { key, secret })
}

/// The blinds of a head's `γ`, (with a shift) `β` and (untied) LM head in mode `M`.
type HeadBlinds<M> = (<M as Mode>::Blinds, Option<<M as Mode>::Blinds>, Option<<M as Mode>::Blinds>);

/// An untied LM head's table: its shape (`V` token rows, no position rows), the table
/// quantized at its own scale `2^f_w` and padded, and `f_w`.
type LmHeadTable = (EmbeddingShape, Vec<i64>, i32);

/// The untied LM head of the model's last layer `last` ([`LmHeadTable`]); `None` when the head
/// is tied to the embeddings.
fn lm_head_table(last: &Model) -> Result<Option<LmHeadTable>> {
    let rows = last.file().untied_lm_head().map_err(|e| Error::ModelDiffersFromKey {
        error: AttentionError::InvalidShape(format!("the model's head is not proven: {e}")),
    })?;
    let Some(rows) = rows else {
        return Ok(None);
    };
    let d = last.model_width().max(1);
    let shape =
        EmbeddingShape { token_rows: (rows.len() / d) as u64, position_rows: 0, model_width: d as u64 };
    let fraction_bits = zkmha_attention::head::lm_head_fraction_bits(rows)?;
    let table = quantize_table(rows, fraction_bits)?;
    Ok(Some((shape, pad_table(&shape, &table)?, fraction_bits)))
}

/// Commits to the final norm's integer weights and (untied) the LM head's table in mode `M`:
/// the head's key and the blinds.
fn commit_head<M: Mode>(
    quantization: HeadQuantization,
    width: usize,
    weights: &zkmha_attention::model_quantization::NormWeights,
    lm_head: Option<LmHeadTable>,
    rng: &mut dyn ProverRng,
) -> Result<(HeadKey, HeadBlinds<M>)> {
    let params = zkmha_pcs::HyraxParams::new((width.next_power_of_two().trailing_zeros() as usize).max(1));
    let (scale, scale_blinds) = commit_norm_weight::<M>(&params, width, &weights.scale, rng)?;
    let bias = if weights.bias.is_empty() {
        None
    } else {
        Some(commit_norm_weight::<M>(&params, width, &weights.bias, rng)?)
    };
    let (bias, bias_blinds) = match bias {
        Some((c, b)) => (Some(c), Some(b)),
        None => (None, None),
    };
    let (lm_head, lm_head_blinds) = match lm_head {
        Some((shape, padded, fraction_bits)) => {
            let (commitment, blinds) = commit_table::<M>(&table_hyrax_params(&shape)?, &shape, &padded, rng)?;
            let table = zkmha_attention::embedding::EmbeddingKey { shape, commitment };
            (Some(zkmha_attention::head::LmHeadKey { table, fraction_bits }), Some(blinds))
        }
        None => (None, None),
    };
    Ok((HeadKey { quantization, scale, bias, lm_head }, (scale_blinds, bias_blinds, lm_head_blinds)))
}

/// The model's embedding table at the residual stream's scale `2^f_h`, padded: `None` for a
/// chain that does not start at layer 0.
fn embedding_table(first: &Model, hidden_fraction_bits: i32) -> Result<Option<(EmbeddingShape, Vec<i64>)>> {
    if first.layer() != 0 {
        return Ok(None);
    }
    let Some(zkmha_model::model_file::EmbeddingTables { tokens, positions }) = first.embedding_tables()?
    else {
        return Ok(None);
    };
    let d = first.model_width().max(1);
    let shape = EmbeddingShape {
        token_rows: (tokens.len() / d) as u64,
        position_rows: (positions.len() / d) as u64,
        model_width: d as u64,
    };
    let mut table = quantize_table(tokens, hidden_fraction_bits)?;
    table.extend(quantize_table(positions, hidden_fraction_bits)?);
    Ok(Some((shape, pad_table(&shape, &table)?)))
}

/// A chain's proof made by [`prove_chain`], checked against its key.
#[derive(Debug, Clone)]
pub struct ProvedChain {
    /// The layer proofs.
    pub proof: ChainProof,
    /// The chain's proven output `H_b` (`tokens × model_width`, row-major), as floats.
    pub output: Vec<f64>,
    /// The tokens.
    pub tokens: usize,
    /// `d_model`.
    pub model_width: usize,
    /// The token ids proven (given, or from the text).
    pub token_ids: Option<Vec<usize>>,
    /// Where the text's tokenizer came from.
    pub tokenizer: Option<String>,
    /// The output, and the chain's own part (`H_b − H_a`), against float64 run through the
    /// same layers from the same float input.
    pub accuracy: ModelAccuracy,
    /// Each boundary `H_{ℓ+1}` the chain proves against float64 through the same layers
    /// (relative L2 error, layer by layer: how the rounding errors grow).
    pub layer_errors: Vec<f64>,
    /// How long each layer's proof took.
    pub layer_times: Vec<Duration>,
    /// The proven logits (a key with a head, token input), against float64.
    pub logits: Option<ChainLogits>,
}

/// A chain's proven logits, as floats, with the next token each position predicts.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainLogits {
    /// The positions (strictly increasing).
    pub positions: Vec<u64>,
    /// `V`.
    pub vocabulary: usize,
    /// `|positions| × V`, row-major: the proven integers times `2^-(f_y + f_h)` (tied) or `2^-(f_y + f_w)` (untied).
    pub values: Vec<f64>,
    /// The largest logit's token at each position (the lowest id on a tie).
    pub predicted: Vec<usize>,
    /// float64's logits through the same layers from the same input (the prover's side only).
    pub reference: Option<Vec<f64>>,
}

impl ChainLogits {
    pub(crate) fn new(
        positions: Vec<u64>,
        vocabulary: usize,
        integers: &[i64],
        fraction_bits: i32,
        reference: Option<Vec<f64>>,
    ) -> Self {
        let unit = 2f64.powi(-fraction_bits);
        let values: Vec<f64> = integers.iter().map(|&l| l as f64 * unit).collect();
        let predicted = argmax_rows(&values, vocabulary);
        Self { positions, vocabulary, values, predicted, reference }
    }

    /// The positions where the proven logits and float64's predict the same next token, and
    /// the relative L2 error of the logits (`None` without a reference).
    pub fn against_reference(&self) -> Option<(usize, f64)> {
        let reference = self.reference.as_ref()?;
        let same = argmax_rows(reference, self.vocabulary)
            .iter()
            .zip(&self.predicted)
            .filter(|(a, b)| a == b)
            .count();
        Some((same, relative_l2(&self.values, reference)))
    }
}

/// Each row's largest entry's index (the first on a tie).
fn argmax_rows(values: &[f64], width: usize) -> Vec<usize> {
    values
        .chunks(width.max(1))
        .map(|row| row.iter().enumerate().fold(0, |best, (i, v)| if *v > row[best] { i } else { best }))
        .collect()
}

/// Proves the chain's layers `models` on `input` against `key` (with `secret` for hiding
/// keys: zero-knowledge proofs): the quantized forward pass once, the boundaries committed,
/// then each layer from its two boundaries; the chain is checked against the key before it is
/// returned.
///
/// ```
/// use zkmha_api::model_chain::{commit_chain, open_layers, prove_chain, verify_chain};
/// use zkmha_api::{ModelInput, WeightCommitments};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-prove-chain-{}", std::process::id()));
/// let models = open_layers(&zkmha_api::example_model::write_llama(&dir, 7, 2)?, &Default::default(), 0..2)?;
/// let committed = commit_chain(&models, WeightCommitments::Hiding, &mut |_, _| {})?;
/// let input = ModelInput::Tokens(vec![1, 2, 3]);
/// let proved = prove_chain(&committed.key, committed.secret.as_ref(), &models, &input, &mut |_, _| {})?;
/// let verified = verify_chain(&committed.key, &proved.proof)?;
/// // The whole model from tokens: the chain ends in the last token's proven logits.
/// let (logits, ours) = (verified.logits().ok_or("no logits")?, proved.logits.ok_or("no logits")?);
/// assert_eq!((&logits.positions, &logits.values), (&vec![2], &ours.values));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`crate::prove`] for each layer; [`Error::ChainLayers`] for models that are not the
/// key's layers, [`Error::ChainSecret`] for a secret of another chain.
pub fn prove_chain(
    key: &ChainKey,
    secret: Option<&ChainSecret>,
    models: &[Model],
    input: &ModelInput,
    progress: &mut dyn FnMut(usize, Stage),
) -> Result<ProvedChain> {
    prove_chain_with(key, secret, models, input, LogitPositions::Last, progress)
}

/// [`prove_chain`] with the positions whose logits a chain with a head proves (a key with a
/// head and token input: the chain's statement ends in those logits, the last hidden state
/// stays committed).
///
/// # Errors
/// As [`prove_chain`]; [`Error::ModelDiffersFromKey`] for a model whose head is not the key's.
pub fn prove_chain_with(
    key: &ChainKey,
    secret: Option<&ChainSecret>,
    models: &[Model],
    input: &ModelInput,
    logit_positions: LogitPositions,
    progress: &mut dyn FnMut(usize, Stage),
) -> Result<ProvedChain> {
    let _span = tracing::info_span!("prove_chain", layers = models.len()).entered();
    let prepared = prepare_layers(key, secret, models)?;
    prove_with_parts(
        &ChainParts { key, secret, models, prepared: &prepared },
        input,
        logit_positions,
        progress,
    )
}

/// [`prove_chain_with`] of a prover's checked parts, in the key's mode.
pub(crate) fn prove_with_parts(
    parts: &ChainParts<'_>,
    input: &ModelInput,
    logit_positions: LogitPositions,
    progress: &mut dyn FnMut(usize, Stage),
) -> Result<ProvedChain> {
    match &parts.prepared.blinds {
        LayerBlinds::Hiding(_) => prove_in_process::<Zk>(parts, input, logit_positions, progress),
        LayerBlinds::Binding => prove_in_process::<Plain>(parts, input, logit_positions, progress),
    }
}

/// The plan, the ends, every layer one after another, then the chain assembled and verified.
fn prove_in_process<M: ChainMode>(
    parts: &ChainParts<'_>,
    input: &ModelInput,
    logit_positions: LogitPositions,
    progress: &mut dyn FnMut(usize, Stage),
) -> Result<ProvedChain> {
    let mut plan = plan_chain::<M>(parts, input, logit_positions)?;
    plan.prove_ends(parts)?;
    let first = parts.key.first_layer as usize;
    let mut links = Vec::with_capacity(parts.key.layers.len());
    for l in 0..parts.key.layers.len() {
        let layer_key = parts.key.layers.get(l).ok_or(Error::EmptyInput)?;
        let estimate =
            crate::resources::estimate_model_layer(&layer_key.shape(plan.forward.tokens)?, Hiding::of::<M>());
        progress(first + l, Stage::Proving { estimate });
        let start = Instant::now();
        let _span = tracing::info_span!("prove_layer", layer = first + l).entered();
        let (input, output) = plan.ends_of(l)?;
        let weights = parts.prepared.weights.get(l).ok_or(Error::EmptyInput)?;
        let blinds = M::layer_blinds(&parts.prepared.blinds, l, layer_key)?;
        let mut rng = crate::model_layer::secure_rng("masks")?;
        let link =
            prove_link::<M>(layer_key, weights, &blinds, plan.forward.tokens, input, output, &mut rng)?;
        links.push((link, start.elapsed()));
    }
    progress(first + links.len(), Stage::Verifying);
    // Every link was proven here from the key's weights: a chain that does not verify is a
    // model that is not the key's.
    let proved = plan.assemble(parts, links).map_err(|error| match error {
        Error::InvalidProof { error } => Error::ModelDiffersFromKey { error },
        other => other,
    })?;
    progress(first + parts.key.layers.len(), Stage::Done);
    Ok(proved)
}

/// Checks that `models` are the key's layers, in order, and the key against its limits.
fn check_layers(key: &ChainKey, models: &[Model]) -> Result<()> {
    check_consecutive(models)?;
    key.validate()?;
    let given: Vec<u64> = models.iter().map(|m| m.layer() as u64).collect();
    if !given.iter().copied().eq(key.layer_range()) {
        return Err(Error::ChainLayers {
            key: format!("layers {}..{}", key.layer_range().start, key.layer_range().end),
            given: format!("layers {given:?}"),
        });
    }
    Ok(())
}

/// A chain's quantized forward pass on an input, before any proof: every boundary
/// `H_a … H_b` as the prover commits them, with what the embedding proof and the head need.
pub struct ForwardPass {
    /// The chain's float input (the embeddings of token ids, or the given hidden state).
    pub float_input: Vec<f64>,
    /// The tokens.
    pub tokens: usize,
    /// `d_model`.
    pub model_width: usize,
    /// The token ids (given, or from the text).
    pub token_ids: Option<Vec<usize>>,
    /// Where the text's tokenizer came from.
    pub tokenizer: Option<String>,
    /// Every boundary `H_a … H_b` at the residual stream's scale.
    pub boundaries: Vec<Vec<i64>>,
    /// Token input on a key with an embedding table: the key, the padded quantized table, the ids.
    embedding: Option<(EmbeddingKey, Vec<i64>, Vec<u64>)>,
    /// A key with a head and token input.
    head: Option<ForwardHead>,
    first_key: ModelVerifierKey,
}

/// The head of a forward pass: the key, the final norm quantized and in float64, and an untied
/// LM head's padded table (at the key's `2^f_w`).
struct ForwardHead {
    key: HeadKey,
    weights: NormWeights,
    float: NormWeights<f64>,
    lm_head: Option<Vec<i64>>,
}

/// A chain's forward pass against float64 through the same layers from the same float input.
#[derive(Debug, Clone)]
pub struct ChainMeasure {
    /// The last boundary `H_b`, as floats.
    pub output: Vec<f64>,
    /// The output, and the chain's own part (`H_b − H_a`), against float64.
    pub accuracy: ModelAccuracy,
    /// Each boundary `H_{ℓ+1}`'s relative L2 error, layer by layer.
    pub layer_errors: Vec<f64>,
    /// The head's logits against float64's (a key with a head, token input).
    pub logits: Option<ChainLogits>,
}

/// Runs the quantized forward pass of the chain's layers `models` on `input` against `key`,
/// without proving it: what [`prove_chain_with`] commits and proves.
///
/// # Errors
/// [`Error::ChainLayers`] for models that are not the key's layers, [`Error::EmptyInput`] for
/// no tokens, [`Error::ModelDiffersFromKey`] for an embedding table
/// or head that is not the key's, the memory check's and the witness's errors.
pub fn forward_pass(key: &ChainKey, models: &[Model], input: &ModelInput) -> Result<ForwardPass> {
    check_layers(key, models)?;
    forward_pass_with(key, models, &quantize_layers(key, models)?, input)
}

/// Each layer's integer weights at its key's quantization.
///
/// # Errors
/// The quantization's errors (a weight beyond its integer range).
pub(crate) fn quantize_layers(key: &ChainKey, models: &[Model]) -> Result<Vec<ModelWeights>> {
    key.layers
        .iter()
        .zip(models)
        .map(|(k, m)| Ok(k.quantization.quantize_weights(m.float_weights())?))
        .collect()
}

/// [`forward_pass`] with each layer's integer weights `weights` ([`quantize_layers`]), for
/// `models` already checked against the key.
pub(crate) fn forward_pass_with(
    key: &ChainKey,
    models: &[Model],
    weights: &[ModelWeights],
    input: &ModelInput,
) -> Result<ForwardPass> {
    let first = models.first().ok_or(Error::EmptyInput)?;
    let first_key = key.layers.first().ok_or(Error::EmptyInput)?;
    let d = first_key.model_width;
    let crate::model_layer::InputHiddenState { values: float_input, token_ids, tokenizer } =
        first.input_hidden_state(input, d)?;
    if float_input.is_empty() {
        return Err(Error::EmptyInput);
    }
    let tokens = float_input.len() / d;
    for (layer_key, model) in key.layers.iter().zip(models) {
        crate::resources::check_model_layer_memory(&layer_key.shape(tokens)?, model.max_memory())?;
    }
    // Token input on a key with an embedding table: H_0 is the ids' rows of the quantized
    // table (proven); otherwise the quantized float input (the prover's committed input).
    let embedding = match (&key.embedding, &token_ids) {
        (Some(embedding_key), Some(ids)) => {
            let differs = || Error::ModelDiffersFromKey {
                error: AttentionError::InvalidShape("the model's embedding table is not the key's".into()),
            };
            let (shape, padded) =
                embedding_table(first, first_key.quantization.hidden_fraction_bits)?.ok_or_else(differs)?;
            if shape != embedding_key.shape {
                return Err(differs());
            }
            Some((embedding_key.clone(), padded, ids.iter().map(|&id| id as u64).collect::<Vec<u64>>()))
        }
        _ => None,
    };
    // The head: a key with one and token ids (the first hidden state proven).
    let head = match (&key.head, &embedding) {
        (Some(head_key), Some(_)) => {
            let last = models.last().ok_or(Error::EmptyInput)?;
            let (norm, _) = last.final_norm().map_err(|e| Error::ModelDiffersFromKey {
                error: AttentionError::InvalidShape(format!("the key proves the model's head, but {e}")),
            })?;
            let lm_head = match (lm_head_table(last)?, &head_key.lm_head) {
                (None, None) => None,
                (Some((shape, padded, fraction_bits)), Some(key))
                    if shape == key.table.shape && fraction_bits == key.fraction_bits =>
                {
                    Some(padded)
                }
                _ => {
                    return Err(Error::ModelDiffersFromKey {
                        error: AttentionError::InvalidShape("the model's LM head is not the key's".into()),
                    });
                }
            };
            let weights = head_key.quantization.quantize_norm(&norm)?;
            Some(ForwardHead { key: head_key.clone(), weights, float: norm, lm_head })
        }
        _ => None,
    };
    let mut boundaries = vec![match &embedding {
        Some((embedding_key, padded, ids)) => embed(&embedding_key.shape, padded, ids)?,
        None => first_key.quantization.quantize_hidden_state(&float_input)?,
    }];
    for (layer_key, layer_weights) in key.layers.iter().zip(weights) {
        let link = Link::new(layer_key, layer_weights, tokens)?;
        let hidden = boundaries.last().ok_or(Error::EmptyInput)?;
        let x = link.input(hidden)?;
        let output =
            block_output(&link.shape, layer_key.mask, link.softmax, &x, link.residual(hidden), link.weights)?;
        boundaries.push(output);
    }
    Ok(ForwardPass {
        float_input,
        tokens,
        model_width: d,
        token_ids,
        tokenizer,
        boundaries,
        embedding,
        head,
        first_key: first_key.clone(),
    })
}

/// The forward pass of [`forward_pass`] against float64, with the head's logits at
/// `positions` (a key with a head and token input): the accuracy a proof of it would report,
/// in a fraction of the proving time.
///
/// # Errors
/// As [`forward_pass`].
pub fn chain_accuracy(
    key: &ChainKey,
    models: &[Model],
    input: &ModelInput,
    positions: LogitPositions,
) -> Result<ChainMeasure> {
    let forward = forward_pass(key, models, input)?;
    let positions = positions.positions(forward.tokens);
    let logits = forward.logits(&positions)?;
    forward.measure(models, logits.as_ref().map(|l| (positions.as_slice(), l.as_slice())))
}

impl ForwardPass {
    /// The head's integer logits of `positions` (`|positions| × V`), `None` without a head.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for more logits than one proof carries
    /// ([`MAX_PUBLIC_LOGITS`]), and as [`compute_head`].
    pub fn logits(&self, positions: &[u64]) -> Result<Option<Vec<i64>>> {
        let (Some(head), Some((embedding_key, padded, _)), Some(last)) =
            (&self.head, &self.embedding, self.boundaries.last())
        else {
            return Ok(None);
        };
        let table = head.key.table(embedding_key);
        if (positions.len() as u64).saturating_mul(table.shape.token_rows) > MAX_PUBLIC_LOGITS {
            return Err(AttentionError::InvalidShape(format!(
                "the logits of {} positions × {} tokens exceed the {MAX_PUBLIC_LOGITS} one proof carries: prove the last position's, or fewer tokens",
                positions.len(),
                table.shape.token_rows
            ))
            .into());
        }
        let norm = head.key.norm_shape(self.tokens, self.model_width);
        let (_, logits) = compute_head(
            &norm,
            &table.shape,
            head.lm_head.as_deref().unwrap_or(padded),
            last,
            &head.weights.scale,
            &head.weights.bias,
            positions,
        )?;
        Ok(Some(logits))
    }

    /// The boundaries and the head's logits (`positions`, integers) against float64 run
    /// through the same layers from the same float input.
    ///
    /// # Errors
    /// The float layers' errors.
    pub fn measure(&self, models: &[Model], logits: Option<(&[u64], &[i64])>) -> Result<ChainMeasure> {
        let quantization = &self.first_key.quantization;
        let last = self.boundaries.last().ok_or(Error::EmptyInput)?;
        let output = quantization.dequantize_output(last);
        let mut reference = self.float_input.clone();
        let mut layer_errors = Vec::with_capacity(models.len());
        for (model, boundary) in models.iter().zip(self.boundaries.iter().skip(1)) {
            reference = model.float_output(reference)?;
            layer_errors.push(relative_l2(&quantization.dequantize_output(boundary), &reference));
        }
        let accuracy = model_accuracy(&self.float_input, &output, &reference);
        let logits = match (logits, &self.head, &self.embedding) {
            (Some((positions, integers)), Some(head), Some((embedding_key, _, _))) => {
                let last = models.last().ok_or(Error::EmptyInput)?;
                let table = match last.file().untied_lm_head().ok().flatten() {
                    Some(rows) => rows,
                    None => last.embedding_tables()?.map(|t| t.tokens).unwrap_or(&[]),
                };
                let d = self.model_width;
                let normalized = zkmha_attention::model_quantization::float_norm(
                    &head.float,
                    last.file().norm_epsilon,
                    &reference,
                    d,
                );
                let reference: Vec<f64> = positions
                    .iter()
                    .flat_map(|&p| {
                        let y = &normalized[p as usize * d..(p as usize + 1) * d];
                        table.chunks(d).map(move |t| y.iter().zip(t).map(|(a, b)| a * b).sum::<f64>())
                    })
                    .collect();
                Some(ChainLogits::new(
                    positions.to_vec(),
                    head.key.table(embedding_key).shape.token_rows as usize,
                    integers,
                    head.key.logit_fraction_bits(),
                    Some(reference),
                ))
            }
            _ => None,
        };
        Ok(ChainMeasure { output, accuracy, layer_errors, logits })
    }
}

/// `‖a − b‖ / ‖b‖` (0 for two zero vectors).
fn relative_l2(a: &[f64], b: &[f64]) -> f64 {
    let difference: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    if norm == 0.0 { difference.sqrt() } else { (difference / norm).sqrt() }
}

/// One layer's integer shape, softmax and weights.
struct Link<'w> {
    shape: zkmha_attention::model_layer::ModelShape,
    softmax: zkmha_attention::SoftmaxMode,
    weights: &'w ModelWeights,
}

impl<'w> Link<'w> {
    fn new(key: &ModelVerifierKey, weights: &'w ModelWeights, tokens: usize) -> Result<Self> {
        let shape = key.shape(tokens)?;
        let softmax = key.quantization.softmax(&shape.attention)?;
        Ok(Self { shape, softmax, weights })
    }

    /// The block's input `X` from the boundary `hidden` entering it: `X = norm(H)` for a
    /// pre-norm layer (its residual adds to `H`), the boundary itself for a post-norm layer
    /// (BERT: the previous layer's normed output).
    fn input(&self, hidden: &[i64]) -> Result<Vec<i64>> {
        Ok(match self.shape.norm {
            Some(_) => normalized_input(&self.shape, self.weights, hidden)?,
            None => hidden.to_vec(),
        })
    }

    /// The hidden state `H` the block reads besides `X` (its residual's, or its norm's: BERT's
    /// layer 0 from the embeddings).
    fn residual<'h>(&self, hidden: &'h [i64]) -> Option<&'h [i64]> {
        self.shape.has_hidden_state().then_some(hidden)
    }
}

/// What a chain's prover holds: the key, the secret, the layers' models, their integer weights
/// and the weights' blinds (borrowed: [`prove_chain_with`], or owned by
/// [`crate::chain_tasks::ChainProver`]).
pub(crate) struct ChainParts<'a> {
    pub key: &'a ChainKey,
    pub secret: Option<&'a ChainSecret>,
    pub models: &'a [Model],
    pub prepared: &'a PreparedLayers,
}

/// Each layer's integer weights and the blinds of its weight commitments, checked against the
/// key once for every input proven.
#[derive(Debug, Clone)]
pub(crate) struct PreparedLayers {
    /// Each layer's integer weights at its key's quantization.
    pub weights: Vec<ModelWeights>,
    /// The weight commitments' blinds.
    pub blinds: LayerBlinds,
}

/// The blinds of every layer's weight commitments: a hiding key's (from its secret), or none.
#[derive(Debug, Clone)]
pub(crate) enum LayerBlinds {
    /// Binding commitments: plain proofs.
    Binding,
    /// Hiding commitments: each layer's rows' blinds, zero-knowledge proofs.
    Hiding(Vec<Vec<zkmha_pcs::HyraxBlinds>>),
}

/// Checks `models` and `secret` against `key` (the key's layers, in order; a secret of this
/// key, when hiding) and quantizes every layer's weights.
///
/// # Errors
/// [`Error::ChainLayers`], [`Error::ChainSecret`], [`Error::SecretRequired`],
/// [`Error::SecretNotNeeded`], and as [`check_model_against_key`].
pub(crate) fn prepare_layers(
    key: &ChainKey,
    secret: Option<&ChainSecret>,
    models: &[Model],
) -> Result<PreparedLayers> {
    check_layers(key, models)?;
    let secrets: Vec<Option<&ModelSecret>> = match (key.layers.first().map(|k| k.weight_commitments), secret)
    {
        (Some(WeightCommitments::Hiding), Some(s)) if s.layers.len() == key.layers.len() => {
            s.layers.iter().map(Some).collect()
        }
        (Some(WeightCommitments::Hiding), Some(_)) => return Err(Error::ChainSecret),
        (Some(WeightCommitments::Hiding), None) => return Err(Error::SecretRequired),
        (_, Some(_)) => return Err(Error::SecretNotNeeded),
        _ => vec![None; key.layers.len()],
    };
    let mut blinds = Vec::with_capacity(models.len());
    for ((layer_key, model), secret) in key.layers.iter().zip(models).zip(secrets) {
        blinds.push(check_model_against_key(layer_key, secret, model)?);
    }
    let blinds = if blinds.iter().all(Option::is_some) {
        LayerBlinds::Hiding(blinds.into_iter().flatten().collect())
    } else if blinds.iter().all(Option::is_none) {
        LayerBlinds::Binding
    } else {
        return Err(Error::ChainSecret);
    };
    Ok(PreparedLayers { weights: quantize_layers(key, models)?, blinds })
}

/// What differs between the modes when a chain is proven in parts: the blinds' types, and the
/// proof's variant.
pub(crate) trait ChainMode: Mode {
    /// Layer `l`'s weight blinds.
    fn layer_blinds(blinds: &LayerBlinds, l: usize, key: &ModelVerifierKey) -> Result<Vec<Self::Blinds>>;
    /// A table's blinds from the secret's rows (`None`: the secret has none).
    fn table_blinds(rows: Option<&Vec<zkmha_field::Fr>>) -> Result<Self::Blinds>;
    /// A head's weights' blinds: `γ`'s, `β`'s (with a shift), an untied LM head's.
    fn head_blinds(
        secret: Option<&HeadSecret>,
        has_bias: bool,
        has_lm_head: bool,
    ) -> Result<HeadBlinds<Self>>;
    /// A boundary's blinds as rows (`None` in the plain mode), for a task's job.
    fn blind_rows(blinds: &Self::Blinds) -> Option<Vec<zkmha_field::Fr>>;
    /// The blinds of a boundary from its rows.
    fn from_rows(rows: Option<Vec<zkmha_field::Fr>>) -> Option<Self::Blinds>;
    /// The chain's proof of this mode.
    fn wrap(proof: ChainProofOf<Self>) -> ChainProof;
}

impl ChainMode for Plain {
    fn layer_blinds(_: &LayerBlinds, _: usize, key: &ModelVerifierKey) -> Result<Vec<()>> {
        Ok(vec![(); key.commitment.tables.len()])
    }
    fn table_blinds(_: Option<&Vec<zkmha_field::Fr>>) -> Result<()> {
        Ok(())
    }
    fn head_blinds(
        _: Option<&HeadSecret>,
        has_bias: bool,
        has_lm_head: bool,
    ) -> Result<((), Option<()>, Option<()>)> {
        Ok(((), has_bias.then_some(()), has_lm_head.then_some(())))
    }
    fn blind_rows(_: &()) -> Option<Vec<zkmha_field::Fr>> {
        None
    }
    fn from_rows(rows: Option<Vec<zkmha_field::Fr>>) -> Option<()> {
        rows.is_none().then_some(())
    }
    fn wrap(proof: ChainProofOf<Self>) -> ChainProof {
        ChainProof::Plain(proof)
    }
}

impl ChainMode for Zk {
    fn layer_blinds(
        blinds: &LayerBlinds,
        l: usize,
        _: &ModelVerifierKey,
    ) -> Result<Vec<zkmha_pcs::HyraxBlinds>> {
        match blinds {
            LayerBlinds::Hiding(layers) => layers.get(l).cloned().ok_or(Error::ChainSecret),
            LayerBlinds::Binding => Err(Error::SecretRequired),
        }
    }
    fn table_blinds(rows: Option<&Vec<zkmha_field::Fr>>) -> Result<zkmha_pcs::HyraxBlinds> {
        rows.map(|rows| zkmha_pcs::HyraxBlinds { rows: rows.clone() }).ok_or(Error::ChainSecret)
    }
    fn head_blinds(
        secret: Option<&HeadSecret>,
        _: bool,
        has_lm_head: bool,
    ) -> Result<(zkmha_pcs::HyraxBlinds, Option<zkmha_pcs::HyraxBlinds>, Option<zkmha_pcs::HyraxBlinds>)>
    {
        let secret = secret.filter(|h| h.lm_head.is_some() == has_lm_head).ok_or(Error::ChainSecret)?;
        let blinds = |rows: &Vec<zkmha_field::Fr>| zkmha_pcs::HyraxBlinds { rows: rows.clone() };
        Ok((blinds(&secret.scale), secret.bias.as_ref().map(blinds), secret.lm_head.as_ref().map(blinds)))
    }
    fn blind_rows(blinds: &zkmha_pcs::HyraxBlinds) -> Option<Vec<zkmha_field::Fr>> {
        Some(blinds.rows.clone())
    }
    fn from_rows(rows: Option<Vec<zkmha_field::Fr>>) -> Option<zkmha_pcs::HyraxBlinds> {
        rows.map(|rows| zkmha_pcs::HyraxBlinds { rows })
    }
    fn wrap(proof: ChainProofOf<Self>) -> ChainProof {
        ChainProof::ZeroKnowledge(proof)
    }
}

/// A layer's committed input boundary and (but for the last layer of a chain without a head)
/// its committed output.
pub(crate) type LinkEnds<'p, B> = (&'p Boundary<B>, Option<&'p Boundary<B>>);

/// One input's chain before its layers are proven: the forward pass, the committed
/// boundaries each layer's proof joins, the proven logits' positions and integers, and (once
/// [`Self::prove_ends`] ran) the embedding's and the head's proofs and the accuracy.
pub(crate) struct PlanOf<M: Mode> {
    pub forward: ForwardPass,
    positions: Vec<u64>,
    logits: Vec<i64>,
    /// `H_a … H_{b−1}` committed (and `H_b` with a head).
    pub boundaries: Vec<Boundary<M::Blinds>>,
    ends: Option<ProvenEnds<M>>,
}

/// A plan's embedding and head proofs and its accuracy against float64.
struct ProvenEnds<M: Mode> {
    embedding: Option<Box<EmbeddedTokens<M>>>,
    head: Option<Box<ProvenLogits<M>>>,
    measure: ChainMeasure,
}

/// The forward pass of one input and its boundaries committed in mode `M`.
///
/// # Errors
/// As [`forward_pass`], [`ForwardPass::logits`] (too many logits are refused here, before any
/// layer is proven) and the commitments'.
pub(crate) fn plan_chain<M: ChainMode>(
    parts: &ChainParts<'_>,
    input: &ModelInput,
    logit_positions: LogitPositions,
) -> Result<PlanOf<M>> {
    let key = parts.key;
    let forward = {
        let _span = tracing::info_span!("forward_pass").entered();
        forward_pass_with(key, parts.models, &parts.prepared.weights, input)?
    };
    let positions = logit_positions.positions(forward.tokens);
    let logits = forward.logits(&positions)?.unwrap_or_default();
    let mut rng = crate::model_layer::secure_rng("boundary blinds")?;
    // With a head, the last boundary is committed too (the head proves the logits from it).
    let ends = if forward.head.is_some() { forward.boundaries.len() } else { key.layers.len() };
    let last_key = key.layers.last().ok_or(Error::EmptyInput)?;
    let _span = tracing::info_span!("commit_boundaries", count = ends).entered();
    let mut boundaries = Vec::with_capacity(ends);
    for (layer_key, hidden) in
        key.layers.iter().chain(std::iter::repeat(last_key)).zip(forward.boundaries.iter().take(ends))
    {
        let shape = layer_key.shape(forward.tokens)?;
        let softmax = layer_key.quantization.softmax(&shape.attention)?;
        let params = block_hyrax_params::<M>(&shape, softmax)?;
        let rng: &mut dyn ProverRng = &mut rng;
        boundaries.push(commit_boundary::<M>(&params, &shape, softmax, hidden.clone(), rng)?);
    }
    Ok(PlanOf { forward, positions, logits, boundaries, ends: None })
}

impl<M: ChainMode> PlanOf<M> {
    /// Layer `l`'s committed input boundary and (but for the last layer of a chain without a
    /// head) its committed output.
    pub fn ends_of(&self, l: usize) -> Result<LinkEnds<'_, M::Blinds>> {
        Ok((self.boundaries.get(l).ok_or(Error::EmptyInput)?, self.boundaries.get(l + 1)))
    }

    /// Proves the first boundary from the token ids (a key with an embedding table, token
    /// input) and the logits from the last one (a key with a head), and measures the forward
    /// pass against float64: the coordinator's work while the layers are proven.
    ///
    /// # Errors
    /// [`Error::ChainSecret`] for a secret without the tables' blinds; the proofs' errors.
    pub fn prove_ends(&mut self, parts: &ChainParts<'_>) -> Result<()> {
        let key = parts.key;
        let forward = &self.forward;
        let mut rng = crate::model_layer::secure_rng("masks")?;
        let table_blinds = match &forward.embedding {
            Some(_) => Some(M::table_blinds(parts.secret.and_then(|s| s.embedding.as_ref()))?),
            None => None,
        };
        let embedding = match (&forward.embedding, &table_blinds) {
            (Some((embedding_key, padded, ids)), Some(blinds)) => {
                let _span = tracing::info_span!("prove_embedding").entered();
                let first = self.boundaries.first().ok_or(Error::EmptyInput)?;
                let statement = EmbeddingStatement {
                    shape: embedding_key.shape,
                    ids: ids.clone(),
                    table: embedding_key.commitment.clone(),
                    hidden: first.commitment.clone(),
                };
                let params = embedding_hyrax_params::<M>(&statement)?;
                let proof = prove_embedding::<M>(&params, &statement, padded, blinds, first, &mut rng)?;
                Some(Box::new(EmbeddedTokens { ids: statement.ids, proof }))
            }
            _ => None,
        };
        let head = match (&forward.head, &forward.embedding, &table_blinds) {
            (Some(head), Some((embedding_key, padded, _)), Some(embedding_blinds)) => {
                let _span = tracing::info_span!("prove_head").entered();
                let last_key = key.layers.last().ok_or(Error::EmptyInput)?;
                let last = self.boundaries.last().ok_or(Error::EmptyInput)?;
                let (scale_blinds, bias_blinds, lm_head_blinds) = M::head_blinds(
                    parts.secret.and_then(|s| s.head.as_ref()),
                    !head.weights.bias.is_empty(),
                    head.lm_head.is_some(),
                )?;
                let table = head.key.table(embedding_key);
                let (padded, table_blinds) = match (&head.lm_head, &lm_head_blinds) {
                    (Some(lm_head), Some(blinds)) => (lm_head.as_slice(), blinds),
                    _ => (padded.as_slice(), embedding_blinds),
                };
                let statement = HeadStatement {
                    norm: head.key.norm_shape(forward.tokens, last_key.model_width),
                    table_shape: table.shape,
                    positions: self.positions.clone(),
                    table: table.commitment.clone(),
                    hidden: last.commitment.clone(),
                    scale: head.key.scale.clone(),
                    bias: head.key.bias.clone(),
                    logits: self.logits.clone(),
                    logit_fraction_bits: head.key.logit_fraction_bits(),
                };
                let weights = HeadWeights {
                    scale: &head.weights.scale,
                    bias: &head.weights.bias,
                    scale_blinds: &scale_blinds,
                    bias_blinds: bias_blinds.as_ref(),
                };
                let params = head_hyrax_params::<M>(&statement)?;
                let proof =
                    prove_head::<M>(&params, &statement, padded, table_blinds, last, &weights, &mut rng)?;
                Some(Box::new(ProvenLogits {
                    positions: statement.positions,
                    logits: statement.logits,
                    proof,
                }))
            }
            _ => None,
        };
        let measure = {
            let _span = tracing::info_span!("measure_against_float64").entered();
            let logits = head.as_ref().map(|h| (h.positions.as_slice(), h.logits.as_slice()));
            forward.measure(parts.models, logits)?
        };
        self.ends = Some(ProvenEnds { embedding, head, measure });
        Ok(())
    }

    /// The chain's proof from the layers' links (in order, each with its proving time) and
    /// the ends ([`Self::prove_ends`], run here if it was not), checked against the key.
    ///
    /// # Errors
    /// [`Error::InvalidProof`] for a chain that does not verify (a link proven from another
    /// boundary, with other weights), as [`verify_chain`].
    pub fn assemble(
        mut self,
        parts: &ChainParts<'_>,
        links: Vec<(ChainLink<M>, Duration)>,
    ) -> Result<ProvedChain> {
        if self.ends.is_none() {
            self.prove_ends(parts)?;
        }
        let ProvenEnds { embedding, head, measure } = self.ends.ok_or(Error::EmptyInput)?;
        let (links, layer_times): (Vec<ChainLink<M>>, Vec<Duration>) = links.into_iter().unzip();
        let proof = M::wrap(ChainProofOf { first_layer: parts.key.first_layer, links, embedding, head });
        verify_chain(parts.key, &proof)?;
        let ChainMeasure { output, accuracy, layer_errors, logits } = measure;
        Ok(ProvedChain {
            logits,
            proof,
            output,
            tokens: self.forward.tokens,
            model_width: self.forward.model_width,
            token_ids: self.forward.token_ids,
            tokenizer: self.forward.tokenizer,
            accuracy,
            layer_errors,
            layer_times,
        })
    }
}

/// Proves one layer of a chain from the two boundaries it joins (`output`: `None` for the
/// last layer of a chain that ends in a public hidden state): the link as a chain's proof
/// carries it, without the weight commitments.
///
/// # Errors
/// The layer's shape and proof's errors (a boundary of another shape, weights that are not
/// the key's surface when the chain is verified).
pub(crate) fn prove_link<M: Mode>(
    layer_key: &ModelVerifierKey,
    weights: &ModelWeights,
    layer_blinds: &[M::Blinds],
    tokens: usize,
    input: &Boundary<M::Blinds>,
    output: Option<&Boundary<M::Blinds>>,
    rng: &mut dyn ProverRng,
) -> Result<ChainLink<M>> {
    let link = Link::new(layer_key, weights, tokens)?;
    let params = block_hyrax_params::<M>(&link.shape, link.softmax)?;
    let x = link.input(&input.values)?;
    let (statement, proof, _) = prove_linked_block::<M>(
        &params,
        &link.shape,
        layer_key.mask,
        link.softmax,
        &x,
        BlockEnds { input: Some(input), output },
        link.weights,
        &layer_key.commitment,
        layer_blinds,
        rng,
    )?;
    // The weight commitments are the key's: the proof leaves them out.
    Ok(ChainLink { statement, proof }.without_weight_commitments())
}
/// Verifies a chain's proof against its key: the links, then every layer's proof against its
/// own key, the embedding proof and the head's; returns what it accepted (the token ids when the
/// first input is proven from them, the logits and their positions, or the last layer's public
/// output).
///
/// The caller must still check that the statement is the one it means
/// ([`verify_chain_expecting`]): a valid proof of tokens A verifies whatever the caller meant.
///
/// # Errors
/// [`Error::InvalidProof`]: the chain breaks or a layer's proof does not verify.
pub fn verify_chain(key: &ChainKey, proof: &ChainProof) -> Result<Verified> {
    verify_chain_expecting(key, proof, &Expected::default())
}

/// [`verify_chain`], refusing a statement other than the one `expected` before verifying.
///
/// ```
/// use zkmha_api::model_chain::{commit_chain, open_layers, prove_chain, verify_chain_expecting};
/// use zkmha_api::verified::Expected;
/// use zkmha_api::{ErrorKind, ModelInput, WeightCommitments};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-verify-chain-{}", std::process::id()));
/// let models = open_layers(&zkmha_api::example_model::write_llama(&dir, 7, 1)?, &Default::default(), 0..1)?;
/// let committed = commit_chain(&models, WeightCommitments::Hiding, &mut |_, _| {})?;
/// let input = ModelInput::Tokens(vec![1, 2, 3]);
/// let proved = prove_chain(&committed.key, committed.secret.as_ref(), &models, &input, &mut |_, _| {})?;
/// let ours = Expected { tokens: Some(vec![1, 2, 3]), positions: Some(vec![2]), layers: Some(0..1) };
/// let verified = verify_chain_expecting(&committed.key, &proved.proof, &ours)?;
/// assert_eq!(verified.token_ids(), Some(&[1u64, 2, 3][..]));
/// // A caller who means other tokens refuses the same valid proof.
/// let theirs = Expected { tokens: Some(vec![1, 2, 4]), ..Expected::default() };
/// let refused = verify_chain_expecting(&committed.key, &proved.proof, &theirs).unwrap_err();
/// assert_eq!(refused.kind(), ErrorKind::Refused);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::UnexpectedStatement`] ([`Verified::check`]: other token ids, a first input not
/// proven from token ids, other positions, other layers); then as [`verify_chain`].
pub fn verify_chain_expecting(key: &ChainKey, proof: &ChainProof, expected: &Expected) -> Result<Verified> {
    let _span = tracing::info_span!("verify_chain", layers = proof.layers()).entered();
    let start = Instant::now();
    // A key assembled in memory gets the checks a key file gets (the review of 2026-11-26:
    // an unvalidated key with a table and first layer 1 reported token ids).
    key.validate().map_err(|error| Error::InvalidProof { error })?;
    if proof.first_layer() != key.first_layer {
        return Err(Error::InvalidProof {
            error: AttentionError::BrokenChain {
                layer: 0,
                reason: "the proof starts at another layer than the key",
            },
        });
    }
    // What the proof states, refused before verifying when it is not what the caller expects
    // (a statement the key cannot read is a chain that does not verify: its error first).
    let claimed = Verified::of_chain(key, proof);
    if let Ok(claimed) = &claimed {
        claimed.check(expected)?;
    }
    let result = match proof {
        ChainProof::Plain(p) => verify_parts(key, p),
        ChainProof::ZeroKnowledge(p) => verify_parts(key, p),
    };
    result.map_err(|error| Error::InvalidProof { error })?;
    let mut verified = claimed?;
    verified.verify_time = start.elapsed();
    Ok(verified)
}

/// Verifies a chain's links, its embedding proof and its head's proof.
fn verify_parts<M: Mode>(key: &ChainKey, proof: &ChainProofOf<M>) -> std::result::Result<(), AttentionError> {
    let last_output = if proof.head.is_some() { OutputKind::Committed } else { OutputKind::Public };
    verify_chain_ending(&key.layers, &proof.links, last_output)?;
    verify_tokens(key, proof)?;
    verify_logits(key, proof)
}

/// Verifies a chain's head proof (when it has one) against the key's head and table and the
/// last layer's committed output.
///
/// # Errors
/// [`AttentionError::BrokenChain`] for logits without a head in the key, without proven
/// token ids, or after a last layer whose output is not committed; the head proof's errors.
fn verify_logits<M: Mode>(
    key: &ChainKey,
    proof: &ChainProofOf<M>,
) -> std::result::Result<(), AttentionError> {
    let Some(head) = &proof.head else {
        return Ok(());
    };
    let layer = proof.links.len().saturating_sub(1);
    let broken = |reason| AttentionError::BrokenChain { layer, reason };
    let (Some(head_key), Some(embedding)) = (&key.head, &key.embedding) else {
        return Err(broken("the proof proves logits but the key has no head"));
    };
    if proof.embedding.is_none() {
        return Err(broken("logits are proven only from proven token ids"));
    }
    let last = proof.links.last().map(|l| &l.statement).ok_or(broken("no layer proofs"))?;
    let zkmha_attention::model_layer::LayerOutput::Committed(hidden) = &last.output else {
        return Err(broken("the last layer's output is public, but a head follows it"));
    };
    // The LM head: the embedding table (tied) or the key's own table (untied).
    let table = head_key.table(embedding);
    let statement = HeadStatement {
        norm: head_key.norm_shape(last.shape.attention.seq_len, last.shape.model_width),
        table_shape: table.shape,
        positions: head.positions.clone(),
        table: table.commitment.clone(),
        hidden: hidden.clone(),
        scale: head_key.scale.clone(),
        bias: head_key.bias.clone(),
        logits: head.logits.clone(),
        logit_fraction_bits: head_key.logit_fraction_bits(),
    };
    let params = head_hyrax_params::<M>(&statement)?;
    verify_head::<M>(&params, &statement, &head.proof)
}

/// Verifies a chain's embedding proof (when it has one) against the key's table and the first
/// layer's hidden state.
///
/// # Errors
/// [`AttentionError::BrokenChain`] for an embedding proof without a table in the key, a first
/// layer without a committed hidden state or ids of another count than its tokens; the
/// embedding proof's errors.
fn verify_tokens<M: Mode>(
    key: &ChainKey,
    proof: &ChainProofOf<M>,
) -> std::result::Result<(), AttentionError> {
    let Some(tokens) = &proof.embedding else {
        return Ok(());
    };
    let broken = |reason| AttentionError::BrokenChain { layer: 0, reason };
    let embedding = key
        .embedding
        .as_ref()
        .ok_or(broken("the proof embeds its tokens but the key has no embedding table"))?;
    let first = proof.links.first().map(|l| &l.statement).ok_or(broken("no layer proofs"))?;
    let hidden =
        first.residual.clone().ok_or(broken("the first layer has no committed hidden state to embed"))?;
    if tokens.ids.len() != first.shape.attention.seq_len {
        return Err(broken("the embedded token ids are not the first layer's tokens"));
    }
    let statement = EmbeddingStatement {
        shape: embedding.shape,
        ids: tokens.ids.clone(),
        table: embedding.commitment.clone(),
        hidden,
    };
    let params = embedding_hyrax_params::<M>(&statement)?;
    verify_embedding::<M>(&params, &statement, &tokens.proof)
}
