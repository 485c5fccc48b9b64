//! The model-layer file kinds: verifier keys, model secrets and model-layer proofs, read and
//! written (through [`crate::files`]: a temporary name, then renamed).
//!
//! Layout (magic bytes, a little-endian u32 version, arkworks' compressed encoding):
//! `ZKMHA-VK\0` + `ModelVerifierKey` (the verifier key: architecture, scales, the kind of
//! weight commitments, the model commitment); `ZKMHA-SECRET\0` + `ModelSecret` (beside a
//! hiding key: the weight commitments' blinds, which the model owner keeps to prove with);
//! `ZKMHA-MODEL-ZK\0` + `ModelStatement` + `ModelBlockProof<Zk>` (a zero-knowledge
//! model-layer proof); `ZKMHA-MODEL\0` + `ModelStatement` + `ModelBlockProof<Plain>` (a plain
//! one).
//!
//! Reading decodes at most [`MAX_DECODED_ROWS`] commitment rows and checks every statement and
//! key against the stated limits before it is returned.

use crate::error::{Error, Result};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::path::{Path, PathBuf};
use zkmha_attention::block::ModelBlockProof;
use zkmha_attention::mode::{Plain, Zk};
use zkmha_attention::model_layer::ModelStatement;
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments};

const KEY_MAGIC: &[u8] = b"ZKMHA-VK\0";
const PROOF_MAGIC: &[u8] = b"ZKMHA-MODEL\0";
const ZK_PROOF_MAGIC: &[u8] = b"ZKMHA-MODEL-ZK\0";
const SECRET_MAGIC: &[u8] = b"ZKMHA-SECRET\0";

/// The chain file kinds' magic bytes ([`crate::model_chain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainMagic {
    /// `ZKMHA-CHAIN-VK\0` + `ChainKey`.
    Key,
    /// `ZKMHA-CHAIN-SECRET\0` + `ChainSecret`.
    Secret,
    /// `ZKMHA-CHAIN\0` + the first layer, then each layer's statement and plain proof.
    Proof,
    /// `ZKMHA-CHAIN-ZK\0` + the first layer, then each layer's statement and zero-knowledge
    /// proof.
    ZkProof,
}

impl ChainMagic {
    fn bytes(self) -> &'static [u8] {
        match self {
            Self::Key => b"ZKMHA-CHAIN-VK\0",
            Self::Secret => b"ZKMHA-CHAIN-SECRET\0",
            Self::Proof => b"ZKMHA-CHAIN\0",
            Self::ZkProof => b"ZKMHA-CHAIN-ZK\0",
        }
    }
}

/// A chain file's contents: its magic bytes, the version, `parts`.
///
/// # Errors
/// [`Error::Encode`] (not expected: encoding into memory).
pub(crate) fn encode_parts<T: CanonicalSerialize>(
    magic: ChainMagic,
    parts: &T,
    what: &'static str,
) -> Result<Vec<u8>> {
    encode(magic.bytes(), parts, what)
}

/// Whether the file at `path` starts with `magic`'s bytes.
pub(crate) fn has_magic(path: &Path, magic: ChainMagic) -> bool {
    starts_with(path, magic.bytes())
}

/// Reads a chain file: checks its magic bytes and version, decodes with `read`, and refuses
/// trailing bytes.
///
/// # Errors
/// As [`read_key`], and `read`'s.
pub(crate) fn decode_header<T>(
    path: &Path,
    magic: ChainMagic,
    what: &'static str,
    read: impl FnOnce(&mut &[u8]) -> Result<T>,
) -> Result<T> {
    decode_with(path, magic.bytes(), what, read)
}
/// 1: the first model-layer proofs (projections with two-digit remainders, committed weights).
/// 2: the residual's kind in the shape and key; a committed hidden state for pre-norm decoders.
/// 3: range-checked Q, K, V and rotations (their multiplicities in the proof); keys of
/// checked architectures.
/// 4: the block's proofs, one implementation for both modes; keys name their weight
/// commitments (binding or hiding); zero-knowledge proofs and the model secret.
/// 5: the lookups written once for both modes (the proofs' format; keys and secrets as in 4,
/// their version follows the proofs').
/// 6: the proven norm from H to X (its constants in the shape and key, γ and β committed).
/// 7: the shape and key carry the proven MLP's constants (absent from keys the command line
/// makes so far), the block proof its second half.
/// 8: keys carry the residual stream's scale `f_h` apart from `X`'s; the command line's keys
/// and proofs of GPT-2 and Llama layers cover the whole layer (its MLP half included).
/// 9: a statement's output is public or committed (a chain's boundary), the proof opens a
/// committed one; chain files.
/// 10: the norm's input range is ±2^28; chain keys hold the embedding table's commitment and
/// chain proofs from token ids the ids and their embedding proof.
/// 11: chain keys may hold the model's head (the final norm), chain proofs the logits and
/// the head's proof.
/// 12: the gated MLP's product is exact and never committed (keys lose its shift and range,
/// proofs its commitment and lookups).
/// 13: chain proofs leave each layer's weight commitments out (they are the key's); keys are
/// calibrated with 16-bit weights and 12-bit `Q`, `K`, 13-bit `V` (a key of 12 commits to
/// other integers).
/// 14: a chain key's head may hold an untied LM head's table (its commitment and scale `f_w`)
/// and the chain secret its blinds; a layer's key may state a sliding-window mask.
/// 15: a layer's shape states its output norms and QK-norm (Gemma 3), proofs carry their
/// norm proofs.
/// 16: a layer's shape states its post-norm (BERT's whole layer: its MLP and the norm on its
/// output), keys its constants, proofs its norm proof; every layer's transcript absorbs it.
/// 17: each batch of lookups proves its tables in a few trees (equal range tables once, the
/// tables told apart by a tag), with per-tree roots, their running sums and each lookup's
/// multiplicity value.
/// 18: each batch of lookups proves its witnesses in one tree, or one per witness size; a
/// zero-knowledge product's lone claim is not absorbed again (a combination, as in a batch).
/// 19: every lookup of a layer in one batch before any step (`zkmha_attention::lookup_batch`);
/// the head's norm carries its own batch.
/// 20: zero-knowledge transcripts absorb every relations proof's statement (its factors',
/// targets' and terms' combinations), every committed sum-check's claim and a batch's claims
/// before its weights (plain proofs unchanged); secrets end in a BLAKE3 checksum of their
/// bytes, checked before proving.
const FILE_VERSION: u32 = 20;

/// The most commitment rows one file may decode to in all (2^20 rows, 72 MiB of points):
/// an identity row costs one bitmap bit in a file but a 72-byte point in memory, so without
/// a total a file of sparse commitments would decode to ~600 times its length. A valid proof
/// of the largest shape within the stated limits (`zkmha_attention::MAX_TENSOR_VARS`) has
/// fewer than 2^19.
pub const MAX_DECODED_ROWS: u64 = 1 << 20;

/// The most commitment rows a chain's proof or key file of `file_length` bytes may decode to in all:
/// [`MAX_DECODED_ROWS`] and one row per 8 bytes of file beyond it.
///
/// Each part of a chain file (a layer's statement and proof, the embedding's, the head's) has
/// [`MAX_DECODED_ROWS`] of its own, but a file holds up to 1024 layers, so the parts' budgets
/// alone would let ~128 MiB of identity rows decode to ~72 GiB. With this total a file
/// decodes to at most 72 MiB plus 9 times its length. An honest row is mostly a 32-byte
/// compressed point (identity rows are padding, fewer than the points around them), so a
/// valid proof stays well inside: GPT-2-small's 12 layers at 512 tokens, 8.3 MB, may decode
/// 2^20 + 1.04 M rows.
///
/// ```
/// use zkmha_api::model_files::{MAX_DECODED_ROWS, chain_row_budget};
/// assert_eq!(chain_row_budget(0), MAX_DECODED_ROWS);
/// assert_eq!(chain_row_budget(8 << 20), MAX_DECODED_ROWS + (1 << 20));
/// ```
pub fn chain_row_budget(file_length: usize) -> u64 {
    MAX_DECODED_ROWS.saturating_add(file_length as u64 / 8)
}

/// Decodes one `T` from `rest` (advancing it); a decoding failure is [`Error::Corrupt`].
///
/// ```
/// let bytes = 7u64.to_le_bytes();
/// let mut rest = &bytes[..];
/// let value: u64 = zkmha_api::model_files::decode_part(&mut rest, "x.bin".as_ref(), "count")?;
/// assert_eq!((value, rest.len()), (7, 0));
/// # Ok::<(), zkmha_api::Error>(())
/// ```
///
/// # Errors
/// [`Error::Corrupt`] naming `path` and `what` when the bytes do not decode.
pub fn decode_part<T: CanonicalDeserialize>(rest: &mut &[u8], path: &Path, what: &'static str) -> Result<T> {
    T::deserialize_compressed(rest).map_err(|error| Error::Corrupt { path: path.to_path_buf(), what, error })
}

/// Reads `path` whole.
///
/// # Errors
/// [`Error::Read`] naming the file.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Read { path: path.to_path_buf(), source })
}

/// The little-endian version after the magic bytes, and the rest (a short file reads as
/// version 0).
pub(crate) fn split_version(rest: &[u8]) -> (u32, &[u8]) {
    let (version, rest) = rest.split_at(4.min(rest.len()));
    (u32::from_le_bytes(version.try_into().unwrap_or([0; 4])), rest)
}

/// Whether a file kind ends in a checksum: the secrets, whose blinds nothing else checks
/// before a whole proof is made with them (a changed blind makes a proof that does not
/// verify, found only after proving).
fn is_sealed(magic: &[u8]) -> bool {
    magic == SECRET_MAGIC || magic == ChainMagic::Secret.bytes()
}

/// The length of a sealed file's checksum: BLAKE3 of every byte before it.
const CHECKSUM_BYTES: usize = 32;

fn encode<T: CanonicalSerialize>(magic: &[u8], parts: &T, what: &'static str) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(1 << 16);
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FILE_VERSION.to_le_bytes());
    parts.serialize_compressed(&mut bytes).map_err(|source| Error::Encode { what, source })?;
    if is_sealed(magic) {
        let checksum = blake3::hash(&bytes);
        bytes.extend_from_slice(checksum.as_bytes());
    }
    Ok(bytes)
}

fn decode<T: CanonicalDeserialize>(path: &Path, magic: &[u8], what: &'static str) -> Result<T> {
    decode_with(path, magic, what, |rest| {
        zkmha_pcs::decode_with_row_budget(MAX_DECODED_ROWS, || decode_part::<T>(rest, path, what))
    })
}

fn decode_with<T>(
    path: &Path,
    magic: &[u8],
    what: &'static str,
    read: impl FnOnce(&mut &[u8]) -> Result<T>,
) -> Result<T> {
    let mut bytes = read_bytes(path)?;
    if !bytes.starts_with(magic) {
        return Err(Error::NotZkmhaFile { path: path.to_path_buf(), kind: what });
    }
    if is_sealed(magic) {
        let body = bytes.len().saturating_sub(CHECKSUM_BYTES).max(magic.len());
        let intact = bytes.get(body..).is_some_and(|checksum| {
            checksum.len() == CHECKSUM_BYTES
                && bytes.get(..body).is_some_and(|contents| blake3::hash(contents).as_bytes() == checksum)
        });
        // A file of another version is reported as such, not as damaged.
        let (version, _) = split_version(&bytes[magic.len()..]);
        if !intact && version == FILE_VERSION {
            return Err(Error::DamagedFile { path: path.to_path_buf(), what });
        }
        bytes.truncate(body);
    }
    let Some(rest) = bytes.strip_prefix(magic) else {
        return Err(Error::NotZkmhaFile { path: path.to_path_buf(), kind: what });
    };
    let (version, mut rest) = split_version(rest);
    if version != FILE_VERSION {
        let format = match what {
            "verifier key" => "verifier key file",
            "model secret" => "model secret file",
            "chain key" => "chain key file",
            "chain secret" => "chain secret file",
            "chain proof" => "chain proof file",
            _ => "proof file",
        };
        return Err(Error::Version {
            path: path.to_path_buf(),
            format,
            found: version,
            expected: FILE_VERSION,
        });
    }
    let value = read(&mut rest)?;
    if !rest.is_empty() {
        return Err(Error::TrailingBytes { path: path.to_path_buf(), count: rest.len(), what });
    }
    Ok(value)
}

/// Whether the file at `path` starts with `magic`.
fn starts_with(path: &Path, magic: &[u8]) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; magic.len()];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == magic
}

/// The kinds of file zkmha writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// An attention-layer proof ([`crate::layer_files`]).
    LayerProof,
    /// A model-layer proof ([`ModelProof`]).
    ModelProof,
    /// A verifier key ([`read_key`]).
    VerifierKey,
    /// A model secret ([`read_secret`]).
    ModelSecret,
    /// A chain's proof, of either mode ([`crate::model_chain::ChainProof`]).
    ChainProof,
    /// A chain key ([`crate::model_chain::read_chain_key`]).
    ChainKey,
    /// A chain's secret ([`crate::model_chain::read_chain_secret`]).
    ChainSecret,
}

/// The kind of the file at `path`, from its magic bytes (nothing else is read or checked);
/// `None` for a missing file or one zkmha does not write.
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-kind-{}.txt", std::process::id()));
/// std::fs::write(&path, b"not a proof")?;
/// assert_eq!(zkmha_api::model_files::file_kind(&path), None);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn file_kind(path: &Path) -> Option<FileKind> {
    if crate::layer_files::is_layer_proof(path) {
        Some(FileKind::LayerProof)
    } else if starts_with(path, PROOF_MAGIC) || starts_with(path, ZK_PROOF_MAGIC) {
        Some(FileKind::ModelProof)
    } else if starts_with(path, KEY_MAGIC) {
        Some(FileKind::VerifierKey)
    } else if starts_with(path, SECRET_MAGIC) {
        Some(FileKind::ModelSecret)
    } else if has_magic(path, ChainMagic::Proof) || has_magic(path, ChainMagic::ZkProof) {
        Some(FileKind::ChainProof)
    } else if has_magic(path, ChainMagic::Key) {
        Some(FileKind::ChainKey)
    } else if has_magic(path, ChainMagic::Secret) {
        Some(FileKind::ChainSecret)
    } else {
        None
    }
}

/// A verifier key's file contents.
///
/// # Errors
/// [`Error::Encode`] (not expected: encoding into memory).
pub fn encode_key(key: &ModelVerifierKey) -> Result<Vec<u8>> {
    encode(KEY_MAGIC, key, "verifier key")
}

/// Writes a verifier key; returns the file's length.
///
/// # Errors
/// As [`crate::files::write_file`].
pub fn write_key(path: &Path, key: &ModelVerifierKey) -> Result<usize> {
    let bytes = encode_key(key)?;
    crate::files::write_file(path, &bytes)?;
    Ok(bytes.len())
}

/// Reads a verifier key and checks its shapes against the stated limits.
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-foreign-{}.vk", std::process::id()));
/// std::fs::write(&path, b"not a key")?;
/// let error = zkmha_api::model_files::read_key(&path).unwrap_err();
/// assert!(matches!(error, zkmha_api::Error::NotZkmhaFile { kind: "verifier key", .. }));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// [`Error::Read`], [`Error::NotZkmhaFile`], [`Error::Version`], [`Error::Corrupt`],
/// [`Error::TrailingBytes`] or [`Error::UnusableKey`], naming the file.
pub fn read_key(path: &Path) -> Result<ModelVerifierKey> {
    let key = decode::<ModelVerifierKey>(path, KEY_MAGIC, "verifier key")?;
    key.shape(1).map_err(|error| Error::UnusableKey { path: path.to_path_buf(), error })?;
    Ok(key)
}

/// Writes a model secret (readable by its owner only, where the system has permissions).
///
/// # Errors
/// As [`crate::files::write_private_file`].
pub fn write_secret(path: &Path, secret: &ModelSecret) -> Result<()> {
    crate::files::write_private_file(path, &encode(SECRET_MAGIC, secret, "model secret")?)
}

/// Writes a verifier key and, for hiding commitments, its secret, together
/// ([`crate::files::write_files`]): a failed run replaces neither, so a new key never sits
/// beside an old secret. Returns the key file's length.
///
/// # Errors
/// As [`crate::files::write_files`].
pub fn write_key_and_secret(
    key_path: &Path,
    key: &ModelVerifierKey,
    secret: Option<(&Path, &ModelSecret)>,
) -> Result<usize> {
    let secret =
        secret.map(|(path, s)| encode(SECRET_MAGIC, s, "model secret").map(|b| (path, b))).transpose()?;
    write_key_files(key_path, &encode_key(key)?, secret)
}

/// Writes a key's bytes and, where given, its secret's, together
/// ([`crate::files::write_files`]); returns the key's length.
pub(crate) fn write_key_files(
    key_path: &Path,
    key: &[u8],
    secret: Option<(&Path, Vec<u8>)>,
) -> Result<usize> {
    let mut files = vec![crate::files::FileToWrite::public(key_path, key)];
    if let Some((path, bytes)) = &secret {
        files.push(crate::files::FileToWrite::private(path, bytes));
    }
    crate::files::write_files(&files)?;
    Ok(key.len())
}

/// Refuses a key of the other kind than asked for: a plain proof (`transparent`) needs a
/// binding key, a zero-knowledge one a hiding key (`key_path` names the key in the sentence).
///
/// ```
/// use zkmha_api::model_files::check_key_mode;
/// use zkmha_attention::verifier_key::WeightCommitments;
/// let key = std::path::Path::new("m.vk");
/// assert!(check_key_mode(key, WeightCommitments::Hiding, false).is_ok());
/// let error = check_key_mode(key, WeightCommitments::Binding, false).unwrap_err();
/// assert_eq!(error.kind(), zkmha_api::ErrorKind::Usage);
/// ```
///
/// # Errors
/// [`Error::KeyMode`] ([`crate::ErrorKind::Usage`]).
pub fn check_key_mode(key_path: &Path, held: WeightCommitments, transparent: bool) -> Result<()> {
    match (held, transparent) {
        (WeightCommitments::Binding, false) => Err(Error::KeyMode {
            path: key_path.to_path_buf(),
            held: "binding",
            advice: "its proofs are plain and reveal evaluations of the weights; ask for one (transparent=True, --transparent) or commit without transparent for a zero-knowledge proof",
        }),
        (WeightCommitments::Hiding, true) => Err(Error::KeyMode {
            path: key_path.to_path_buf(),
            held: "hiding",
            advice: "it proves in zero knowledge; a plain proof needs a key committed with transparent=True (--transparent)",
        }),
        _ => Ok(()),
    }
}

/// Reads a model secret (not checked against any key: [`read_secret_for`] does).
///
/// # Errors
/// As [`read_key`], without [`Error::UnusableKey`].
pub fn read_secret(path: &Path) -> Result<ModelSecret> {
    decode::<ModelSecret>(path, SECRET_MAGIC, "model secret")
}

/// The default path of a key's model secret: the key's with `.secret` appended.
///
/// ```
/// use std::path::Path;
/// assert_eq!(zkmha_api::model_files::secret_path(Path::new("m.vk")), Path::new("m.vk.secret"));
/// ```
pub fn secret_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".secret");
    PathBuf::from(name)
}

/// Reads the model secret of the hiding key `key` (read from `key_path`) from `secret`, or
/// from the key's path with `.secret` appended, and checks that it is that key's.
///
/// # Errors
/// [`Error::MissingSecretFile`], [`Error::SecretFileOfAnotherKey`], or as [`read_secret`].
pub fn read_secret_for(
    key: &ModelVerifierKey,
    key_path: &Path,
    secret: Option<&Path>,
) -> Result<ModelSecret> {
    let path = secret.map_or_else(|| secret_path(key_path), Path::to_path_buf);
    if !path.exists() {
        return Err(Error::MissingSecretFile { key: key_path.to_path_buf(), secret: path });
    }
    let read = read_secret(&path)?;
    match read.blinds_for(key) {
        Ok(_) => Ok(read),
        Err(_) => Err(Error::SecretFileOfAnotherKey { secret: path, key: key_path.to_path_buf() }),
    }
}

/// A proof with its statement, of either mode: [`ModelProof`] and
/// [`crate::layer_files::LayerProof`].
#[derive(Debug, Clone)]
pub enum ProofFile<Statement, PlainProof, ZeroKnowledgeProof> {
    /// A plain proof: reveals evaluations of the committed tensors.
    Plain(Statement, Box<PlainProof>),
    /// A zero-knowledge proof.
    ZeroKnowledge(Statement, Box<ZeroKnowledgeProof>),
}

impl<Statement, PlainProof: CanonicalSerialize, ZeroKnowledgeProof: CanonicalSerialize>
    ProofFile<Statement, PlainProof, ZeroKnowledgeProof>
{
    /// The statement: the shape, the commitments, the output.
    pub fn statement(&self) -> &Statement {
        match self {
            Self::Plain(statement, _) | Self::ZeroKnowledge(statement, _) => statement,
        }
    }

    /// Whether the proof is zero-knowledge.
    pub fn is_zero_knowledge(&self) -> bool {
        matches!(self, Self::ZeroKnowledge(..))
    }

    /// The proof's encoded length without the statement.
    pub fn proof_bytes(&self) -> usize {
        match self {
            Self::Plain(_, proof) => proof.compressed_size(),
            Self::ZeroKnowledge(_, proof) => proof.compressed_size(),
        }
    }
}

/// A model-layer proof with its statement: plain (a binding key's) or zero-knowledge (a
/// hiding key's).
pub type ModelProof = ProofFile<ModelStatement, ModelBlockProof<Plain>, ModelBlockProof<Zk>>;

impl ModelProof {
    /// The sizes of the proof's parts, by name.
    pub fn part_sizes(&self) -> Vec<(&'static str, usize)> {
        match self {
            Self::Plain(_, proof) => proof.part_sizes(),
            Self::ZeroKnowledge(_, proof) => proof.part_sizes(),
        }
    }

    /// The file's contents.
    ///
    /// # Errors
    /// [`Error::Encode`] (not expected: encoding into memory).
    pub fn encode(&self) -> Result<Vec<u8>> {
        match self {
            Self::Plain(statement, proof) => encode(PROOF_MAGIC, &(statement, proof.as_ref()), "proof"),
            Self::ZeroKnowledge(statement, proof) => {
                encode(ZK_PROOF_MAGIC, &(statement, proof.as_ref()), "proof")
            }
        }
    }

    /// Writes the proof file; returns its length.
    ///
    /// # Errors
    /// As [`crate::files::write_file`].
    pub fn write(&self, path: &Path) -> Result<usize> {
        let bytes = self.encode()?;
        crate::files::write_file(path, &bytes)?;
        Ok(bytes.len())
    }

    /// Reads a model-layer proof of either mode and checks its statement (the shapes against
    /// the stated limits, the output's length, every commitment's size).
    ///
    /// # Errors
    /// As [`read_key`], and [`Error::UnacceptedStatement`].
    pub fn read(path: &Path) -> Result<Self> {
        let file = if starts_with(path, ZK_PROOF_MAGIC) {
            let (statement, proof) =
                decode::<(ModelStatement, ModelBlockProof<Zk>)>(path, ZK_PROOF_MAGIC, "model-layer proof")?;
            Self::ZeroKnowledge(statement, Box::new(proof))
        } else {
            let (statement, proof) =
                decode::<(ModelStatement, ModelBlockProof<Plain>)>(path, PROOF_MAGIC, "model-layer proof")?;
            Self::Plain(statement, Box::new(proof))
        };
        file.statement()
            .validate()
            .map_err(|error| Error::UnacceptedStatement { path: path.to_path_buf(), error })?;
        Ok(file)
    }
}

/// Whether `path` starts with the magic bytes of a model-layer proof (either mode).
pub fn is_model_proof(path: &Path) -> bool {
    file_kind(path) == Some(FileKind::ModelProof)
}

/// Whether `path` starts with the magic bytes of a model secret.
pub fn is_model_secret(path: &Path) -> bool {
    file_kind(path) == Some(FileKind::ModelSecret)
}

/// Whether `path` starts with the magic bytes of a verifier key.
pub fn is_verifier_key(path: &Path) -> bool {
    file_kind(path) == Some(FileKind::VerifierKey)
}
