//! The library's errors: one sentence each, the underlying error kept as its source where
//! there is one ([`Error::kind`] sorts them into the command line's exit codes).

use std::path::PathBuf;
use zkmha_attention::AttentionError;
use zkmha_model::ModelError;

/// A decoder's error in words: a file that ends early says so rather than the I/O error's
/// debug form.
fn describe_decode_error(error: &ark_serialize::SerializationError) -> String {
    match error {
        ark_serialize::SerializationError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the file ends before it does".to_string()
        }
        other => other.to_string(),
    }
}

/// What went wrong, in the classes the command line gives distinct exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// An unreadable, foreign, corrupt or over-the-limits file, a value the proof cannot take,
    /// or another failure.
    BadInput,
    /// A well-formed proof that does not verify.
    InvalidProof,
    /// A well-formed proof of another statement than the one expected (an attention layer's
    /// softmax other than the expected one).
    Refused,
    /// The model has a feature the proof does not cover.
    UnsupportedModel,
    /// Arguments that do not go together (an input the layer cannot take this way).
    Usage,
    /// The machine ran out of disk, quota or memory.
    OutOfResources,
}

/// The errors of `zkmha-api`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written (the earlier file at `path`, if any, is left as it was).
    #[error("could not write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A path to write to that names no file (`/`, `..`).
    #[error("could not write {}: not a file name", path.display())]
    NotAFileName {
        /// The path.
        path: PathBuf,
    },
    /// A tensor could not be encoded as .npy.
    #[error("could not encode {}", path.display())]
    EncodeNpy {
        /// The file it was for.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A value could not be encoded (arkworks' encoder).
    #[error("could not encode the {what}")]
    Encode {
        /// What was encoded.
        what: &'static str,
        /// Why.
        #[source]
        source: ark_serialize::SerializationError,
    },
    /// A file that does not start with the magic bytes of the kind expected.
    #[error("{} is not a zkmha {kind} file", path.display())]
    NotZkmhaFile {
        /// The file.
        path: PathBuf,
        /// The kind expected ("verifier key", "model secret", "proof").
        kind: &'static str,
    },
    /// A file of no kind zkmha writes.
    #[error(
        "{} is not a zkmha file (inspect reads attention- and model-layer proofs, verifier keys, model secrets, and chain keys, proofs and secrets)",
        path.display()
    )]
    UnknownFile {
        /// The file.
        path: PathBuf,
    },
    /// A file of another format version.
    #[error("{} has {format} version {found}; this zkmha reads version {expected}", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The format's name ("verifier key file", "zero-knowledge file format").
        format: &'static str,
        /// The file's version.
        found: u32,
        /// The version this library reads.
        expected: u32,
    },
    /// A part of a file that does not decode.
    #[error("{} is corrupt: the {what} does not decode ({})", path.display(), describe_decode_error(error))]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The part.
        what: &'static str,
        /// The decoder's error (in the sentence).
        error: ark_serialize::SerializationError,
    },
    /// Bytes after the last part of a file.
    #[error("{} is corrupt: {count} unexpected bytes after the {what}", path.display())]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// How many.
        count: usize,
        /// The last part.
        what: &'static str,
    },
    /// Layers that are not the chain's (another range, not consecutive, none).
    #[error("the chain needs {key}, but got {given}")]
    ChainLayers {
        /// What the chain (or its key) covers.
        key: String,
        /// What was given.
        given: String,
    },
    /// A chain's package, job or link (`chain_tasks`) that this version does not read, or
    /// that belongs to another chain, layer or mode.
    #[error("a chain task's part is refused: {reason}")]
    Task {
        /// Why, in words.
        reason: String,
    },
    /// A chain secret that does not hold one secret per layer of the key.
    #[error("the chain secret does not hold one layer secret per layer of the chain key")]
    ChainSecret,
    /// A layer proof whose output is committed (one link of a chain), read where a layer's
    /// public output is needed.
    #[error(
        "this proof is one layer of a chain (its output is committed, not public): verify the chain it belongs to"
    )]
    ChainLink,
    /// A statement outside the stated limits or inconsistent with itself.
    #[error("{} holds a statement this verifier does not accept: {error}", path.display())]
    UnacceptedStatement {
        /// The file.
        path: PathBuf,
        /// What is wrong (in the sentence).
        error: AttentionError,
    },
    /// Weights whose calibrated scales leave the stated limits: no key is written.
    #[error(
        "layer {layer}'s weights cannot be committed: the scales calibrated from them leave the proof's limits ({error}); a weight far outside the model's range (such as 3·10^38) does this"
    )]
    UnusableWeights {
        /// The layer.
        layer: usize,
        /// What is out of range.
        error: AttentionError,
    },
    /// A verifier key whose shapes are outside the stated limits.
    #[error("{} is not a usable verifier key: {error}", path.display())]
    UnusableKey {
        /// The file.
        path: PathBuf,
        /// What is wrong (in the sentence).
        error: AttentionError,
    },
    /// A hiding verifier key whose model secret is not at the expected path.
    #[error(
        "the verifier key {} holds hiding commitments and its model secret {} is missing: pass --secret FILE (written by zkmha commit-model beside the key)",
        key.display(),
        secret.display()
    )]
    MissingSecretFile {
        /// The verifier key.
        key: PathBuf,
        /// Where its secret was looked for.
        secret: PathBuf,
    },
    /// A model secret file of another verifier key.
    #[error("{} is the model secret of another verifier key than {}", secret.display(), key.display())]
    SecretFileOfAnotherKey {
        /// The model secret.
        secret: PathBuf,
        /// The verifier key.
        key: PathBuf,
    },
    /// A hiding verifier key given without its model secret.
    #[error(
        "the verifier key holds hiding commitments: proving needs its model secret (written by commit_model beside the key)"
    )]
    SecretRequired,
    /// A model secret given with a binding verifier key, which has none.
    #[error("the verifier key holds binding commitments, for plain proofs: it has no model secret")]
    SecretNotNeeded,
    /// A model secret of another verifier key.
    #[error("the model secret belongs to another verifier key")]
    SecretOfAnotherKey,
    /// A mask asked for that differs from the key's.
    #[error("the mask {given} differs from the verifier key's mask {key}")]
    MaskDiffers {
        /// The mask asked for.
        given: zkmha_attention::MaskKind,
        /// The key's.
        key: zkmha_attention::MaskKind,
    },
    /// A key of a model with another residual (another family).
    #[error("the verifier key was made for a model of another family (its residual differs)")]
    ResidualDiffers,
    /// A key whose MLP has another activation than the model file's config names.
    #[error(
        "the verifier key proves the MLP with {key}, the model file's config names {model}: is the key made from this model file?"
    )]
    ActivationDiffers {
        /// The key's activation (its Hugging Face name).
        key: &'static str,
        /// The model file's.
        model: &'static str,
    },
    /// A key made with another norm ε or rotary base than the model file's config names (the
    /// weight commitments do not cover them).
    #[error(
        "the verifier key was made with {field} {key}, the model file's config says {model}: is the key made from this model file?"
    )]
    ConfigDiffersFromKey {
        /// What differs ("the norm's ε", "the rotary base").
        field: &'static str,
        /// The key's (for ε: its integer image at the key's scale).
        key: String,
        /// The model file's.
        model: String,
    },
    /// A key whose layer has an MLP half and a model layer without one, or the reverse.
    #[error(
        "the verifier key {key} the MLP after the attention block, the model file's layer {model}: is the key made from this model file and layer?"
    )]
    LayerDiffersFromKey {
        /// What the key covers ("proves" / "does not prove").
        key: &'static str,
        /// What the model file's layer has ("has one" / "has none").
        model: &'static str,
    },
    /// The proof made does not verify against the key: the model differs from the committed one.
    #[error(
        "the proof does not verify against the verifier key ({error}): is the key made from this model file and layer?"
    )]
    ModelDiffersFromKey {
        /// The verifier's error (in the sentence).
        error: AttentionError,
    },
    /// A proof that does not verify.
    #[error("invalid: {error}")]
    InvalidProof {
        /// The check that failed (in the sentence).
        error: AttentionError,
    },
    /// An attention-layer proof whose softmax is not the one expected.
    #[error("refused: the proof's softmax ({proof}) is not the one expected ({expected})")]
    UnexpectedSoftmax {
        /// The proof's, as `zkmha verify --softmax-params` names it.
        proof: String,
        /// The expected one.
        expected: String,
    },
    /// A valid-looking proof of another statement than the caller expects: other token ids (or
    /// an input not proven from token ids), logit positions or layers, or an attention layer's
    /// other mask or head split. Checked before any verification work.
    #[error("refused: the proof's {what} ({proof}) is not the one expected ({expected})")]
    UnexpectedStatement {
        /// What differs ("input", "output", "layers", "mask", "number of heads", "head width").
        what: &'static str,
        /// The proof's.
        proof: String,
        /// The expected one.
        expected: String,
    },
    /// Token ids for a layer other than 0, whose input is the layers' before it.
    #[error(
        "layer {layer}'s input depends on the layers before it: pass its hidden state with --input (only layer 0's comes from token ids; zkmha hidden-state computes it from token ids, unproven)"
    )]
    TokensNeedLayerZero {
        /// The layer.
        layer: usize,
    },
    /// An input without tokens.
    #[error("the input has no tokens")]
    EmptyInput,
    /// A hidden state whose rows are not `d_model` wide.
    #[error(
        "the input has {entries} entries in rows of {columns}; the layer input must be (tokens × {model_width})"
    )]
    InputWidth {
        /// Entries given.
        entries: usize,
        /// The width given.
        columns: usize,
        /// The model's width.
        model_width: usize,
    },
    /// An input file that cannot be the layer's input.
    #[error("{} {problem}", path.display())]
    InputFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it, completing the sentence.
        problem: String,
    },
    /// A rotary base the proven rotation cannot take.
    #[error("the rotary base {base} is not a whole number from 2 to 10^12, which the proven rotation needs")]
    RotaryBase {
        /// The model's base.
        base: f64,
    },
    /// An output entry outside the 64-bit integers (a statement no honest prover makes).
    #[error("an output entry is not a 64-bit integer")]
    OutputOutOfRange,
    /// The operating system gave no randomness.
    #[error("the operating system gave no randomness for the {purpose}")]
    Randomness {
        /// What it was for.
        purpose: &'static str,
        /// Why.
        #[source]
        source: rand::Error,
    },
    /// A layer past the model's last.
    #[error("the model's layers are 0 to {}: there is no layer {layer}", count.saturating_sub(1))]
    NoSuchLayer {
        /// The layer asked for.
        layer: usize,
        /// The model's layers.
        count: usize,
    },
    /// A key of the other kind than the proof asked for: a binding key (plain proofs, which
    /// reveal evaluations of the weights) without asking for a plain proof, or a hiding key
    /// with it. Checked before proving.
    #[error("the verifier key {} holds {held} commitments: {advice}", path.display())]
    KeyMode {
        /// The key file.
        path: PathBuf,
        /// "binding" or "hiding".
        held: &'static str,
        /// What to do.
        advice: &'static str,
    },
    /// A secret whose checksum does not match its bytes: found before proving, not after.
    #[error("{} is a damaged {what}: its checksum does not match its contents (a byte changed or lost); prove with an intact copy, or commit the model again", path.display())]
    DamagedFile {
        /// The file.
        path: PathBuf,
        /// What it is ("model secret").
        what: &'static str,
    },
    /// A key description longer than a key holds.
    #[error(
        "the key's description holds {chars} characters; at most {} (it is shown beside every verdict)",
        crate::model_layer::MAX_DESCRIPTION_CHARS
    )]
    Description {
        /// Its length.
        chars: usize,
    },
    /// An output that cannot be written as a file: a folder, or in a folder that does not
    /// exist. Checked before any work.
    #[error("{what}: write it to a file in an existing folder")]
    UnwritablePath {
        /// The output and why.
        what: String,
    },
    /// Two of a run's files that must differ name one file.
    #[error("{what}: it would be overwritten; write elsewhere")]
    SameFile {
        /// The two files, by the names the user gave them.
        what: String,
    },
    /// A layer whose estimated memory exceeds what this process may use: the machine's
    /// memory (or `--max-memory`), its control group's limit, or the address space its
    /// `ulimit -v` leaves.
    #[error(
        "this layer's proof needs about {} of memory (estimated from its shape at the measured bytes per entry: {entries} score entries ĥ·ŝ², the entries of Q, K and V and, in a model layer, its weights and MLP), more than {} {}: use fewer tokens or heads, {}",
        crate::resources::describe_bytes(*estimate),
        limit.describe(),
        crate::resources::describe_bytes(*allowed),
        limit.advice()
    )]
    MemoryEstimate {
        /// The estimate in bytes.
        estimate: u64,
        /// The memory allowed in bytes.
        allowed: u64,
        /// What limits it.
        limit: crate::resources::MemoryLimit,
        /// `ĥ·ŝ²`.
        entries: u64,
    },
    /// The model file (its reading, its architecture, its tokenizer).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The proof system (shapes, values, commitments).
    #[error(transparent)]
    Attention(#[from] AttentionError),
    /// The commitment scheme's setup.
    #[error(transparent)]
    Commitment(#[from] zkmha_pcs::PcsError),
}

impl Error {
    /// The class of the error (the command line's exit code follows it).
    pub fn kind(&self) -> ErrorKind {
        use std::io::ErrorKind as Io;
        match self {
            Error::InvalidProof { .. } => ErrorKind::InvalidProof,
            Error::UnexpectedSoftmax { .. } | Error::UnexpectedStatement { .. } => ErrorKind::Refused,
            Error::Model(ModelError::Unsupported(_) | ModelError::UnsupportedTensorType { .. }) => {
                ErrorKind::UnsupportedModel
            }
            Error::TokensNeedLayerZero { .. } => ErrorKind::Usage,
            Error::MemoryEstimate { .. } => ErrorKind::OutOfResources,
            Error::SameFile { .. }
            | Error::UnwritablePath { .. }
            | Error::KeyMode { .. }
            | Error::Description { .. }
            | Error::NoSuchLayer { .. } => ErrorKind::Usage,
            Error::Read { source, .. } | Error::Write { source, .. }
                if matches!(
                    source.kind(),
                    Io::StorageFull | Io::QuotaExceeded | Io::OutOfMemory | Io::FileTooLarge
                ) =>
            {
                ErrorKind::OutOfResources
            }
            _ => ErrorKind::BadInput,
        }
    }
}

/// The library's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
