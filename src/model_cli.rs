//! `zkmha commit-model`, `zkmha prove --model`, `zkmha verify --vk`, `zkmha inspect`: one
//! attention layer of a model file, proven from its input and the committed weights.
//!
//! Model layers are proven in zero knowledge by default (hiding weight commitments, the
//! block's zero-knowledge mode); `--transparent` keeps the plain mode, for debugging.
//!
//! Files (magic bytes, a little-endian u32 version, arkworks' compressed encoding):
//! `ZKMHA-VK\0` + `ModelVerifierKey` (the verifier key: architecture, scales, the kind of
//! weight commitments, the model commitment); `ZKMHA-SECRET\0` + `ModelSecret` (beside a
//! hiding key: the weight commitments' blinds, which the model owner keeps to prove with);
//! `ZKMHA-MODEL-ZK\0` + `ModelStatement` + `ModelBlockProof<Zk>` (a zero-knowledge
//! model-layer proof); `ZKMHA-MODEL\0` + `ModelStatement` + `ModelBlockProof<Plain>` (a plain
//! one).

use crate::layer::parse_mask;
use crate::proof_file::MAX_DECODED_ROWS;
use crate::report::{self, Accepted, Kind, ModelPart, SoftmaxSource, SoftmaxSpec, sanitize};
use crate::verdict::{Usage, Verdict};
use anyhow::{Context, Result, anyhow, bail};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zkmha_attention::block::{ModelBlockProof, block_hyrax_params, commit_model_with, prove_block};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_attention::model_layer::{
    ModelShape, ModelStatement, ModelWeights, commit_model, weights_hyrax_params,
};
use zkmha_attention::model_quantization::{ModelQuantization, model_accuracy, reference_model_layer};
use zkmha_attention::rope::RotaryParams;
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments, verify_with_key};
use zkmha_attention::{AttentionShape, MaskKind, Residual};
use zkmha_model::ModelError;
use zkmha_model::architecture::MetadataSource;
use zkmha_model::families::Family;
use zkmha_model::model_file::{ModelFile, calibration_ids};

const KEY_MAGIC: &[u8] = b"ZKMHA-VK\0";
const PROOF_MAGIC: &[u8] = b"ZKMHA-MODEL\0";
const ZK_PROOF_MAGIC: &[u8] = b"ZKMHA-MODEL-ZK\0";
const SECRET_MAGIC: &[u8] = b"ZKMHA-SECRET\0";
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
const FILE_VERSION: u32 = 7;
/// Tokens of the calibration input that fixes the scales.
const CALIBRATION_TOKENS: usize = 64;
/// Fraction bits of the rotary tables (Llama): cosines and sines to 2^−14.
const ROTARY_FRACTION_BITS: u32 = 14;

fn parse_family(text: &str) -> Result<Family, String> {
    match text {
        "bert" => Ok(Family::Bert),
        "gpt2" => Ok(Family::Gpt2),
        "llama" => Ok(Family::Llama),
        _ => Err(format!("unknown family '{text}': use bert, gpt2 or llama")),
    }
}

fn residual_name(residual: Residual) -> &'static str {
    match residual {
        Residual::LayerInput => "X",
        Residual::HiddenState => "the hidden state",
    }
}

fn heads_text(heads: usize, key_value_heads: usize, head_dim: usize) -> String {
    if heads == key_value_heads {
        format!("{heads} heads of {head_dim}")
    } else {
        format!("{heads} query heads of {head_dim} sharing {key_value_heads} key/value heads")
    }
}

/// The exit status of a model the proof does not cover (an architecture, a bias, a norm, a
/// window, a scaling): distinct from other errors (1).
/// Whether `error` is a refusal of a model the proof does not cover.
pub fn is_unsupported_model(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        matches!(
            e.downcast_ref::<ModelError>(),
            Some(ModelError::Unsupported(_) | ModelError::UnsupportedTensorType { .. })
        )
    })
}

/// Where the architecture was read from, in words.
fn architecture_source(file: &ModelFile) -> &'static str {
    match file.architecture_source {
        Some(MetadataSource::ConfigJson) => "config.json",
        Some(MetadataSource::Gguf) => "GGUF metadata",
        None => "tensor names",
    }
}

/// Which model file and layer.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// The model file: GGUF (heads and family from its metadata) or safetensors (with
    /// config.json beside it, or --heads).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// The layer (default 0).
    #[arg(long)]
    pub layer: Option<usize>,
    /// The model family (bert, gpt2, llama), for files without metadata (no config.json
    /// model_type, no GGUF general.architecture); detected from the tensor names by default.
    /// It cannot override what the metadata says.
    #[arg(long, value_parser = parse_family)]
    pub family: Option<Family>,
}

impl ModelArgs {
    /// The layer (0 unless given).
    pub fn layer(&self) -> usize {
        self.layer.unwrap_or(0)
    }
}

/// Options of `zkmha commit-model`.
#[derive(clap::Args, Debug, Clone)]
pub struct CommitModelArgs {
    /// The model and layer.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Attention heads; read from config.json beside the file by default.
    #[arg(long)]
    pub heads: Option<usize>,
    /// The mask; by default none for BERT and causal for the decoders.
    #[arg(long, value_parser = parse_mask)]
    pub mask: Option<MaskKind>,
    /// Where to write the verifier key (the model commitment, scales and shapes).
    #[arg(long)]
    pub out: PathBuf,
    /// Binding weight commitments, for plain proofs (`prove --transparent`), which reveal
    /// evaluations of the weights: for debugging. By default the commitments are hiding, for
    /// zero-knowledge proofs.
    #[arg(long)]
    pub transparent: bool,
    /// Where to write the model secret: the hiding commitments' blinds, needed to prove and
    /// never to be published (default: the key's path with `.secret` appended).
    #[arg(long, conflicts_with = "transparent")]
    pub secret: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What `zkmha prove --model` reads besides the model.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModelInputArgs {
    /// With --model: the hidden state entering the layer (s × d_model; for BERT that is X
    /// itself, for GPT-2 and Llama X is the layer's norm of it), a .npy file (float32 or
    /// float64) or a safetensors file holding one float tensor. Without: the attention
    /// layer's own Q, K, V as integers, a safetensors file with tensors q, k, v (s × h·m,
    /// s × h·m_v) or a (3, s, h·m) .npy file.
    #[arg(long, conflicts_with_all = ["tokens", "text"])]
    pub input: Option<PathBuf>,
    /// Token ids (comma-separated): the hidden state is the model's embeddings (layer 0).
    #[arg(long, value_delimiter = ',', conflicts_with = "text")]
    pub tokens: Option<Vec<usize>>,
    /// Text, tokenized by the model's own tokenizer (the tokenizer.json beside a safetensors
    /// file, or a GGUF file's metadata) into the token ids of layer 0's input.
    #[arg(long)]
    pub text: Option<String>,
    /// The verifier key from `zkmha commit-model` (made here when absent).
    #[arg(long)]
    pub vk: Option<PathBuf>,
    /// Where to write the output tensor (.npy): with --model Z (float64, s × d_model), without
    /// the attention layer's O (int64, s × h·m_v).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// With --model: a plain proof, which reveals evaluations of the weights and the
    /// activations (for debugging; needs a key from `commit-model --transparent`). Model
    /// layers are proven in zero knowledge by default.
    #[arg(long, conflicts_with = "zk")]
    pub transparent: bool,
    /// The model secret of a hiding --vk (default: the key's path with `.secret` appended).
    #[arg(long, requires = "vk")]
    pub secret: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A spinner on stderr for one step (hidden when stderr is not a terminal or under --json).
fn step(message: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(message.to_string());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn encode<T: CanonicalSerialize>(magic: &[u8], parts: &T) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(1 << 16);
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FILE_VERSION.to_le_bytes());
    parts.serialize_compressed(&mut bytes).context("could not encode")?;
    Ok(bytes)
}

fn decode<T: CanonicalDeserialize>(path: &Path, magic: &[u8], what: &str) -> Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    let Some(rest) = bytes.strip_prefix(magic) else {
        bail!("{} is not a zkmha {what} file", path.display());
    };
    let (version, mut rest) = rest.split_at(4.min(rest.len()));
    let version = u32::from_le_bytes(version.try_into().unwrap_or([0; 4]));
    if version != FILE_VERSION {
        bail!(
            "{} has {what} file version {version}; this zkmha reads version {FILE_VERSION}",
            path.display()
        );
    }
    let value = zkmha_pcs::decode_with_row_budget(MAX_DECODED_ROWS, || {
        crate::proof_file::decode_part::<T>(&mut rest, path, what)
    })?;
    if !rest.is_empty() {
        bail!("{} is corrupt: {} unexpected bytes after the {what}", path.display(), rest.len());
    }
    Ok(value)
}

/// Reads a verifier key and checks its shapes against the stated limits.
fn read_key(path: &Path) -> Result<ModelVerifierKey> {
    let key = decode::<ModelVerifierKey>(path, KEY_MAGIC, "verifier key")?;
    key.shape(1).map_err(|e| anyhow!("{} is not a usable verifier key: {e}", path.display()))?;
    Ok(key)
}

/// Whether two paths name one file (the same path, or one existing file).
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// The default path of a key's model secret: the key's with `.secret` appended.
fn secret_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".secret");
    PathBuf::from(name)
}

/// Reads the model secret of `key` and returns its blinds.
fn read_secret(path: &Path, key: &ModelVerifierKey, key_path: &Path) -> Result<Vec<zkmha_pcs::HyraxBlinds>> {
    if !path.exists() {
        bail!(
            "the verifier key {} holds hiding commitments and its model secret {} is missing: pass --secret FILE (written by zkmha commit-model beside the key)",
            key_path.display(),
            path.display()
        );
    }
    let secret = decode::<ModelSecret>(path, SECRET_MAGIC, "model secret")?;
    secret.blinds_for(key).map_err(|_| {
        anyhow!("{} is the model secret of another verifier key than {}", path.display(), key_path.display())
    })
}

/// A decoded model-layer proof file.
enum ModelProofFile {
    /// `zkmha prove --model --transparent`.
    Plain(ModelStatement, Box<ModelBlockProof<Plain>>),
    /// `zkmha prove --model` (zero knowledge).
    ZeroKnowledge(ModelStatement, Box<ModelBlockProof<Zk>>),
}

impl ModelProofFile {
    fn statement(&self) -> &ModelStatement {
        match self {
            Self::Plain(statement, _) | Self::ZeroKnowledge(statement, _) => statement,
        }
    }
}

/// Reads a model-layer proof of either mode and checks its statement (the shapes against
/// the stated limits, the output's length, every commitment's size).
fn read_proof(path: &Path) -> Result<ModelProofFile> {
    let file = if starts_with(path, ZK_PROOF_MAGIC) {
        let (statement, proof) =
            decode::<(ModelStatement, ModelBlockProof<Zk>)>(path, ZK_PROOF_MAGIC, "proof")?;
        ModelProofFile::ZeroKnowledge(statement, Box::new(proof))
    } else {
        let (statement, proof) =
            decode::<(ModelStatement, ModelBlockProof<Plain>)>(path, PROOF_MAGIC, "proof")?;
        ModelProofFile::Plain(statement, Box::new(proof))
    };
    file.statement()
        .validate()
        .map_err(|e| anyhow!("{} holds a statement this verifier does not accept: {e}", path.display()))?;
    Ok(file)
}

/// Whether the file at `path` starts with `magic`.
fn starts_with(path: &Path, magic: &[u8]) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; magic.len()];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == magic
}

/// Whether `path` starts with the magic bytes of a model-layer proof (either mode).
pub fn is_model_proof(path: &Path) -> bool {
    starts_with(path, PROOF_MAGIC) || starts_with(path, ZK_PROOF_MAGIC)
}

/// A short fingerprint of the model commitment (to publish alongside the model).
fn fingerprint(key: &ModelVerifierKey) -> String {
    report::fingerprint(&key.commitment)
}

struct Loaded {
    file: ModelFile,
    float: zkmha_attention::model_quantization::FloatModelWeights,
    head_dim: usize,
    key_value_heads: usize,
    mask: MaskKind,
}

fn load(args: &ModelArgs, heads: Option<usize>, mask: Option<MaskKind>, quiet: bool) -> Result<Loaded> {
    let Some(path) = &args.model else {
        bail!(Usage("--model FILE is required".into()));
    };
    let bar = step("reading the model", quiet);
    let file = ModelFile::open(path, args.family, heads)?;
    let weights = file.attention_weights(args.layer())?;
    let mut float = weights.float_model_weights();
    // Pre-norm decoders: the norm from H to X is proven with the block.
    float.norm = file.norm_weights(args.layer())?;
    bar.finish_and_clear();
    let mask = mask.unwrap_or(match file.family {
        Family::Bert => MaskKind::None,
        Family::Gpt2 | Family::Llama => MaskKind::Causal,
    });
    Ok(Loaded { head_dim: weights.head_dim, key_value_heads: weights.key_value_heads, file, float, mask })
}

/// Calibrates the scales and commits to the weights: the verifier key, and the model secret of
/// hiding commitments.
fn make_key(
    loaded: &Loaded,
    args: &ModelArgs,
    weight_commitments: WeightCommitments,
    quiet: bool,
) -> Result<(ModelVerifierKey, Option<ModelSecret>)> {
    let file = &loaded.file;
    let d = loaded.float.output_bias.len();
    let tokens = file.max_tokens().map_or(CALIBRATION_TOKENS, |n| n.min(CALIBRATION_TOKENS));
    let ids = calibration_ids(file.vocabulary_size()?, tokens);
    let bar = step("calibrating the fixed-point scales", quiet);
    // Layer 0's hidden state through this layer's norm: a stand-in for the layer's inputs.
    let calibration = file.block_input(args.layer(), file.embed(&ids)?)?;
    let x = &calibration.input;
    let attention = AttentionShape::new(ids.len(), file.heads, loaded.head_dim, loaded.head_dim)?;
    let residual = file.residual();
    let kv = loaded.key_value_heads;
    let rotary = match file.family {
        Family::Llama => {
            let base = file.rope_base;
            if base.fract() != 0.0 || !(2.0..=1e12).contains(&base) {
                bail!(
                    "the rotary base {base} is not a whole number from 2 to 10^12, which the proven rotation needs"
                );
            }
            Some(RotaryParams { base: base as u64, fraction_bits: ROTARY_FRACTION_BITS })
        }
        Family::Bert | Family::Gpt2 => None,
    };
    let calibration_shape = ModelShape {
        attention,
        model_width: d,
        shifts: [1; 4],
        residual,
        key_value_heads: kv,
        rotary,
        norm: None,
        mlp: None,
    };
    let mut quantization = ModelQuantization::calibrate(&calibration_shape, &loaded.float, x)?;
    if let (Some(norm), Some(hidden)) = (&loaded.float.norm, &calibration.residual) {
        quantization.calibrate_norm(d, norm, file.norm_epsilon, hidden)?;
    }
    bar.finish_and_clear();
    let bar = step("committing to the weights", quiet);
    let shape = quantization.model_shape(attention, d, residual, kv, rotary);
    let integers = quantization.quantize_weights(&loaded.float)?;
    let params = weights_hyrax_params(&shape);
    let (commitment, blinds) = match weight_commitments {
        WeightCommitments::Binding => (commit_model(&params, &shape, &integers)?, None),
        WeightCommitments::Hiding => {
            let mut rng = zkmha_zk::secure_rng()
                .context("the operating system gave no randomness for the commitments' blinds")?;
            let (commitment, blinds) = commit_model_with::<Zk>(&params, &shape, &integers, &mut rng)?;
            (commitment, Some(blinds))
        }
    };
    bar.finish_and_clear();
    let key = ModelVerifierKey {
        description: format!(
            "{} layer {} ({})",
            file.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
            args.layer(),
            file.architecture_name()
        ),
        model_width: d,
        heads: file.heads,
        head_dim: loaded.head_dim,
        value_head_dim: loaded.head_dim,
        mask: loaded.mask,
        residual,
        key_value_heads: kv,
        rotary,
        quantization,
        weight_commitments,
        commitment,
    };
    let secret = blinds.map(|blinds| ModelSecret::new(&key, &blinds));
    Ok((key, secret))
}

/// The kind of weight commitments asked for: hiding unless `--transparent`.
fn commitments_for(transparent: bool) -> WeightCommitments {
    if transparent { WeightCommitments::Binding } else { WeightCommitments::Hiding }
}

/// In words, for the reports.
fn commitments_name(kind: WeightCommitments) -> &'static str {
    match kind {
        WeightCommitments::Binding => "binding (plain proofs)",
        WeightCommitments::Hiding => "hiding (zero-knowledge proofs)",
    }
}

/// Writes the model secret (readable by its owner only, where the system has permissions).
fn write_secret(path: &Path, secret: &ModelSecret) -> Result<()> {
    crate::files::write_private_file(path, &encode(SECRET_MAGIC, secret)?)
}

/// The projections with a non-zero bias (`Q`, `K`, `V`, `O`).
fn bias_names(float: &zkmha_attention::model_quantization::FloatModelWeights) -> Vec<&'static str> {
    [
        ("Q", &float.queries_bias),
        ("K", &float.keys_bias),
        ("V", &float.values_bias),
        ("O", &float.output_bias),
    ]
    .into_iter()
    .filter(|(_, b)| b.iter().any(|&x| x != 0.0))
    .map(|(name, _)| name)
    .collect()
}

/// Runs `zkmha commit-model`.
///
/// # Errors
/// A missing or malformed model, or an unwritable key file (one sentence each).
pub fn commit(args: &CommitModelArgs) -> Result<()> {
    if args.secret.as_ref().is_some_and(|secret| same_file(secret, &args.out)) {
        bail!(Usage("--secret and --out name the same file: the key would overwrite its secret".into()));
    }
    let start = Instant::now();
    let loaded = load(&args.model, args.heads, args.mask, args.json)?;
    let (key, secret) = make_key(&loaded, &args.model, commitments_for(args.transparent), args.json)?;
    let bytes = encode(KEY_MAGIC, &key)?;
    let secret_file = secret.as_ref().map(|_| args.secret.clone().unwrap_or_else(|| secret_path(&args.out)));
    // The key first: if the secret cannot be written, an earlier secret at its path (another
    // key's, perhaps published) is left as it was.
    crate::files::write_file(&args.out, &bytes)?;
    if let (Some(secret), Some(path)) = (&secret, &secret_file) {
        write_secret(path, secret).with_context(|| {
            format!("the verifier key {} was written but cannot prove without its secret", args.out.display())
        })?;
    }
    let q = &key.quantization;
    if args.json {
        println!(
            "{}",
            json!({
                "verifier_key": args.out.display().to_string(),
                "bytes": bytes.len(),
                "model": sanitize(&key.description),
                "architecture": loaded.file.architecture_name(),
                "architecture_source": architecture_source(&loaded.file),
                "biases": bias_names(&loaded.float),
                "commitment": fingerprint(&key),
                "weight_commitments": weight_commitments_code(key.weight_commitments),
                "secret": secret_file.as_ref().map(|p| p.display().to_string()),
                "model_width": key.model_width,
                "heads": key.heads,
                "head_dim": key.head_dim,
                "mask": key.mask.to_string(),
                "shifts": q.shifts,
                "input_fraction_bits": q.input_fraction_bits,
                "weight_fraction_bits": q.weight_fraction_bits,
                "ms": ms(start.elapsed()),
            })
        );
        return Ok(());
    }
    println!(
        "committed to {}: d_model = {}, {}, mask {}{}{}",
        sanitize(&key.description),
        key.model_width,
        heads_text(key.heads, key.key_value_heads, key.head_dim),
        key.mask,
        key.rotary.map(|r| format!(", rotary embeddings (base {})", r.base)).unwrap_or_default(),
        match bias_names(&loaded.float).as_slice() {
            [] => ", no biases".to_string(),
            names => format!(", biases on {}", names.join(", ")),
        }
    );
    println!(
        "architecture {} (from the {}{})",
        loaded.file.architecture_name(),
        architecture_source(&loaded.file),
        if loaded.file.architecture.is_none() {
            ": no config.json model_type or GGUF general.architecture, so features the names do not \
             show (norm weight offsets, embedding scales) cannot be checked"
        } else {
            ""
        }
    );
    println!(
        "fixed point: X at 2^-{}, weights at 2^-{:?}, shifts k = {:?} (calibrated on a fixed token sample)",
        q.input_fraction_bits, q.weight_fraction_bits, q.shifts
    );
    if let Some(norm) = q.norm {
        println!(
            "proven norm: {} from H to X (γ at 2^-{}, E = {}, q = ⌊2^{}·sqrt(d/T)⌋, shift {}, {} remainder digits)",
            norm.block.kind.name(),
            norm.scale_fraction_bits,
            norm.block.epsilon,
            norm.block.scale_bits,
            norm.block.shift_bits,
            norm.block.remainder_digits
        );
    }
    println!(
        "model commitment {} ({}); wrote the verifier key {} ({} bytes) in {:.1} ms",
        fingerprint(&key),
        commitments_name(key.weight_commitments),
        args.out.display(),
        bytes.len(),
        ms(start.elapsed())
    );
    if let Some(path) = &secret_file {
        println!(
            "wrote the model secret {} (the commitments' blinds: keep it private; zkmha prove --vk reads it beside the key)",
            path.display()
        );
    }
    Ok(())
}

/// Reads X (`rows × columns`) from a .npy or safetensors file.
fn read_input(path: &Path, columns: usize) -> Result<Vec<f64>> {
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    let (shape, data): (Vec<usize>, Vec<f64>) = if bytes.starts_with(b"\x93NUMPY") {
        let npy = npyz::NpyFile::new(&bytes[..])
            .map_err(|e| anyhow!("{} is not a valid .npy file: {e}", path.display()))?;
        if npy.order() != npyz::Order::C {
            bail!("{} is stored in Fortran order; write it in C order (numpy's default)", path.display());
        }
        let shape: Vec<usize> = npy.shape().iter().map(|&n| n as usize).collect();
        let data = match npy.dtype() {
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 8 => {
                npy.into_vec::<f64>().map_err(|e| anyhow!("{} is corrupt: {e}", path.display()))?
            }
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 4 => npy
                .into_vec::<f32>()
                .map_err(|e| anyhow!("{} is corrupt: {e}", path.display()))?
                .into_iter()
                .map(f64::from)
                .collect(),
            other => bail!("{} holds {other:?} values; X must be float32 or float64", path.display()),
        };
        (shape, data)
    } else {
        let file = zkmha_model::families::TensorFile::read(path)?;
        let names: Vec<&str> = file.names().collect();
        let [name] = names.as_slice() else {
            bail!("{} must hold exactly one float tensor (X); it holds {}", path.display(), names.len());
        };
        let t = file.get(name)?;
        (t.shape.clone(), t.data.clone())
    };
    match shape.as_slice() {
        [_, c] if *c == columns => Ok(data),
        _ => bail!("{} has shape {shape:?}; the layer input must be (tokens × {columns})", path.display()),
    }
}

/// Runs `zkmha prove --model`.
///
/// # Errors
/// Missing or malformed files, bad inputs, a key made for another model (one sentence each).
pub fn prove(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    args: &ModelInputArgs,
    out: &Path,
) -> Result<()> {
    // Every file this run writes must be a different one: the proof, Z, the key made here.
    if args.output.as_ref().is_some_and(|z| same_file(z, out)) {
        bail!(Usage(
            "--out and --output name the same file: the output tensor would overwrite the proof".into()
        ));
    }
    for input in [&args.vk, &args.secret, &args.input].into_iter().flatten() {
        if same_file(input, out) || args.output.as_ref().is_some_and(|z| same_file(z, input)) {
            bail!(Usage(format!(
                "{} is read by this run and would be overwritten: write the proof and Z elsewhere",
                input.display()
            )));
        }
    }
    let quiet = args.json;
    let start = Instant::now();
    let loaded = load(model, heads, mask, quiet)?;
    let wanted = commitments_for(args.transparent);
    let (key, secret, made_here) = match &args.vk {
        Some(path) => {
            let key = read_key(path)?;
            match (key.weight_commitments, wanted) {
                (WeightCommitments::Hiding, WeightCommitments::Binding) => bail!(
                    "the verifier key {} holds hiding commitments, for zero-knowledge proofs: --transparent needs a key from zkmha commit-model --transparent",
                    path.display()
                ),
                (WeightCommitments::Binding, WeightCommitments::Hiding) => bail!(
                    "the verifier key {} holds binding commitments (zkmha commit-model --transparent): pass --transparent for a plain proof, or make a hiding key (zkmha commit-model without --transparent) for a zero-knowledge one",
                    path.display()
                ),
                _ => {}
            }
            let secret = match key.weight_commitments {
                WeightCommitments::Hiding => {
                    let secret_file = args.secret.clone().unwrap_or_else(|| secret_path(path));
                    Some(read_secret(&secret_file, &key, path)?)
                }
                WeightCommitments::Binding => None,
            };
            (key, secret, false)
        }
        None => {
            let (key, secret) = make_key(&loaded, model, wanted, quiet)?;
            let blinds = secret.map(|s| s.blinds_for(&key)).transpose()?;
            (key, blinds, true)
        }
    };
    if let Some(m) = mask
        && m != key.mask
    {
        bail!("--mask {m} differs from the verifier key's mask {}", key.mask);
    }
    if key.residual != loaded.file.residual() {
        bail!("the verifier key was made for a model of another family (its residual differs)");
    }
    let d = key.model_width;
    let ids = match (&args.tokens, &args.text) {
        (Some(ids), _) => Some(ids.clone()),
        (None, Some(text)) => {
            let tokenizer = loaded.file.tokenizer()?;
            let ids = tokenizer.encode(text)?;
            if !args.json {
                eprintln!("tokenized by {}: {} tokens {ids:?}", tokenizer.source, ids.len());
            }
            Some(ids)
        }
        (None, None) => None,
    };
    let token_ids = ids.clone();
    let hidden = match (&args.input, ids) {
        (Some(path), _) => read_input(path, d)?,
        (None, Some(_)) if model.layer() != 0 => bail!(Usage(format!(
            "layer {}'s input depends on the layers before it: pass its hidden state with --input (only layer 0's comes from token ids)",
            model.layer()
        ))),
        (None, Some(ids)) => loaded.file.embed(&ids)?,
        (None, None) => {
            bail!(Usage("pass the layer input: --input FILE.npy, --tokens 1,2,3 or --text \"...\"".into()))
        }
    };
    if hidden.is_empty() {
        bail!("the input has no tokens");
    }
    let block_input = loaded.file.block_input(model.layer(), hidden)?;
    let (x, residual) = (&block_input.input, block_input.residual.as_deref());
    let s = x.len() / d;
    let shape = key.shape(s)?;
    let softmax = key.quantization.softmax(&shape.attention)?;
    let integers = key.quantization.quantize_weights(&loaded.float)?;
    // H first: a bad entry in it is named as H's, not as the X computed from it.
    let hidden_state = residual.map(|h| key.quantization.quantize_hidden_state(h)).transpose()?;
    // A proven norm: X is the integer norm of H (the float X is the accuracy reference only).
    let input = match (&shape.norm, &hidden_state) {
        (Some(_), Some(h)) => zkmha_attention::block::normalized_input(&shape, &integers, h)?,
        _ => key.quantization.quantize_input(x)?,
    };
    let proved = match &secret {
        None => prove_in::<Plain>(
            &key,
            &shape,
            softmax,
            &input,
            hidden_state.as_deref(),
            &integers,
            &vec![(); key.commitment.tables.len()],
            quiet,
        )?,
        Some(blinds) => {
            prove_in::<Zk>(&key, &shape, softmax, &input, hidden_state.as_deref(), &integers, blinds, quiet)?
        }
    };
    let (statement, bytes, prove_time) = (proved.statement, proved.bytes, proved.prove_time);
    // A hiding key made here is new: the verifier needs it (a binding one anyone can remake
    // with zkmha commit-model --transparent).
    let key_file = (made_here && key.weight_commitments == WeightCommitments::Hiding).then(|| {
        let mut name = out.as_os_str().to_owned();
        name.push(".vk");
        PathBuf::from(name)
    });
    if let Some(path) = &key_file {
        crate::files::write_file(path, &encode(KEY_MAGIC, &key)?)?;
    }
    crate::files::write_file(out, &bytes)?;
    let z = key.quantization.dequantize_output(&statement.output);
    if let Some(path) = &args.output {
        crate::files::write_npy(path, s, d, &z)?;
    }
    let report = reference_model_layer(&shape, key.mask, &loaded.float, x, residual)
        .map(|r| model_accuracy(residual.unwrap_or(x), &z, &r))?;
    if args.json {
        println!(
            "{}",
            json!({
                "proof": out.display().to_string(),
                "proof_bytes": bytes.len(),
                "model": sanitize(&key.description),
                "tokens": s,
                "token_ids": token_ids,
                "prove_ms": ms(prove_time),
                "total_ms": ms(start.elapsed()),
                "relative_l2_error": report.output.relative_l2_error,
                "attention_relative_l2_error": report.attention.relative_l2_error,
                "output": args.output.as_ref().map(|p| p.display().to_string()),
                "verifier_key": key_file.as_ref().map(|p| p.display().to_string()),
                "zero_knowledge": secret.is_some(),
            })
        );
        return Ok(());
    }
    println!(
        "proved {} on {s} tokens in {:.1} s (Q, K, V and output projections{}{}, attention with the softmax proven, residual)",
        sanitize(&key.description),
        prove_time.as_secs_f64(),
        if key.key_value_heads != key.heads { ", shared key/value heads" } else { "" },
        if key.rotary.is_some() { ", rotary embeddings" } else { "" }
    );
    println!(
        "output Z ({s} × {d}) against float64: relative L2 error {:.3} % (the attention's part Y: {:.3} %)",
        report.output.relative_l2_error * 100.0,
        report.attention.relative_l2_error * 100.0
    );
    println!("{}", proven_scope(&key));
    match secret {
        Some(_) => println!("{ZERO_KNOWLEDGE_MODEL}"),
        None => println!("{NOT_ZERO_KNOWLEDGE}"),
    }
    println!(
        "wrote {} ({} bytes){}",
        out.display(),
        bytes.len(),
        args.output.as_ref().map(|p| format!(" and {}", p.display())).unwrap_or_default()
    );
    if let Some(path) = &key_file {
        println!(
            "wrote the verifier key {} (hiding commitments made for this proof, model commitment {}; zkmha commit-model makes one key for many proofs)",
            path.display(),
            fingerprint(&key)
        );
    }
    Ok(())
}

/// What a model-layer proof covers beyond the attention block, and what it does not, in one
/// sentence for the key's kind of layer.
fn proven_scope(key: &ModelVerifierKey) -> String {
    match (key.residual, key.quantization.norm) {
        (Residual::LayerInput, _) => {
            "not proven: the layer norm that follows (and, for token input, the embedding lookup and its norm)".into()
        }
        (Residual::HiddenState, Some(norm)) => format!(
            "proven: X = {}(H) in fixed point (ε, γ{} from the committed model; H committed, Z = H + Y); not proven: for token input the embedding lookup",
            norm.block.kind.name(),
            if norm.block.bias { ", β" } else { "" }
        ),
        (Residual::HiddenState, None) => "not proven: the layer norm from the hidden state H to X (H and X are committed separately; Z = H + Y is proven), and for token input the embedding lookup".into(),
    }
}

/// Printed after a zero-knowledge model-layer proof.
pub const ZERO_KNOWLEDGE_MODEL: &str = "zero knowledge: the weights, X, H and every intermediate are committed with blinding, every sum-check is masked and every claim committed; the proof shows the output Z and nothing else about the weights or the input (docs/ZERO_KNOWLEDGE.md)";

/// A proof made and checked by [`prove_in`], encoded.
struct Proved {
    statement: ModelStatement,
    bytes: Vec<u8>,
    prove_time: Duration,
}

/// Proves the block in mode `M` against `key`, checks the proof against the key (a model
/// file that differs from the committed one is caught here, not by the first verifier) and
/// encodes it.
#[allow(clippy::too_many_arguments)]
fn prove_in<M: Mode>(
    key: &ModelVerifierKey,
    shape: &ModelShape,
    softmax: zkmha_attention::SoftmaxMode,
    input: &[i64],
    hidden_state: Option<&[i64]>,
    weights: &ModelWeights,
    blinds: &[M::Blinds],
    quiet: bool,
) -> Result<Proved> {
    let params = block_hyrax_params::<M>(shape, softmax)?;
    let mut rng = zkmha_zk::secure_rng().context("the operating system gave no randomness for the masks")?;
    let bar = step("proving", quiet);
    let start = Instant::now();
    let (statement, proof, _) = prove_block::<M>(
        &params,
        shape,
        key.mask,
        softmax,
        input,
        hidden_state,
        weights,
        &key.commitment,
        blinds,
        &mut rng,
    )?;
    let prove_time = start.elapsed();
    bar.finish_and_clear();
    let bar = step("verifying", quiet);
    verify_with_key(key, &statement, &proof).map_err(|e| {
        anyhow!("the proof does not verify against the verifier key ({e}): is the key made from this model file and layer?")
    })?;
    bar.finish_and_clear();
    let bytes = encode(if M::HIDING { ZK_PROOF_MAGIC } else { PROOF_MAGIC }, &(&statement, &proof))?;
    Ok(Proved { statement, bytes, prove_time })
}

/// Printed after every proof that is not zero-knowledge.
pub const NOT_ZERO_KNOWLEDGE: &str = "not zero-knowledge: the proof reveals evaluations of the committed tensors at random points (model layers are proven in zero knowledge without --transparent, attention layers with --zk; docs/ZERO_KNOWLEDGE.md)";

/// Runs `zkmha verify --vk`: checks the proof's softmax against the key's (or the one
/// named), verifies, and prints what it accepted.
///
/// # Errors
/// Missing, corrupt or over-the-limits files, a refused softmax ([`Verdict::Refused`]), or an
/// invalid proof ([`Verdict::Invalid`]); one sentence each.
pub fn verify(
    proof_path: &Path,
    key_path: &Path,
    named: Option<&SoftmaxSpec>,
    output: Option<&Path>,
    json_output: bool,
) -> Result<()> {
    let key = read_key(key_path)?;
    let file = read_proof(proof_path)?;
    let statement = file.statement();
    // The key fixes the softmax (a proof with another one is invalid: `check_statement`); a
    // softmax named on the command line must be the proof's as well.
    let source = match named {
        Some(_) => report::accept_softmax(statement.softmax, statement.softmax, SoftmaxSource::Named, named)?,
        None => SoftmaxSource::VerifierKey,
    };
    let start = Instant::now();
    let (result, kind) = match &file {
        ModelProofFile::Plain(statement, proof) => {
            (verify_with_key(&key, statement, proof), Kind::ModelLayer)
        }
        ModelProofFile::ZeroKnowledge(statement, proof) => {
            (verify_with_key(&key, statement, proof), Kind::ZeroKnowledgeModelLayer)
        }
    };
    let elapsed = start.elapsed();
    if let Err(e) = result {
        return Err(Verdict::Invalid(format!("invalid: {e}")).into());
    }
    let a = &statement.shape.attention;
    // Only a valid proof's output is written: Z as `prove --output` writes it.
    if let Some(path) = output {
        let z = key.quantization.dequantize_output(&statement.output);
        crate::files::write_npy(path, a.seq_len, statement.shape.model_width, &z)?;
    }
    let mut commitments = vec![("X", report::fingerprint(&statement.input))];
    if let Some(hidden) = &statement.residual {
        commitments.push(("H", report::fingerprint(hidden)));
    }
    let shape = &statement.shape;
    let accepted = Accepted {
        kind,
        shape: *a,
        model: Some(ModelPart {
            description: key.description.clone(),
            commitment: report::fingerprint(&statement.model),
            model_width: shape.model_width,
            key_value_heads: shape.key_value_heads,
            shifts: shape.shifts,
            residual: residual_name(shape.residual),
            rotary: shape.rotary.map(|r| (r.base, r.fraction_bits)),
        }),
        mask: statement.mask,
        softmax: statement.softmax,
        softmax_source: source,
        commitments,
        output: ("Z", a.seq_len, shape.model_width, report::fingerprint(&statement.output)),
        // The generators are derived inside the key's verification.
        verify_ms: ms(elapsed),
        setup_ms: None,
        output_file: output.map(|p| p.display().to_string()),
    };
    accepted.print(json_output);
    Ok(())
}

/// Options of `zkmha inspect`.
#[derive(clap::Args, Debug, Clone)]
pub struct InspectArgs {
    /// A file zkmha writes: a proof (attention or model layer, either mode), a verifier key
    /// or a model secret.
    pub file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn size<T: CanonicalSerialize>(value: &T) -> usize {
    value.compressed_size()
}

/// Runs `zkmha inspect`: what the file holds and the fingerprints of its commitments (as
/// `verify` shows them); nothing is verified.
///
/// # Errors
/// A missing, foreign or corrupt file.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    if crate::proof_file::is_layer_proof(&args.file) {
        return crate::proof_file::inspect_layer(&args.file, args.json);
    }
    if starts_with(&args.file, SECRET_MAGIC) {
        return inspect_secret(&args.file, args.json);
    }
    if is_model_proof(&args.file) {
        let file = read_proof(&args.file)?;
        let statement = file.statement();
        let a = &statement.shape.attention;
        let (zero_knowledge, proof_bytes, parts) = match &file {
            ModelProofFile::Plain(_, proof) => (false, size(proof.as_ref()), proof.part_sizes()),
            ModelProofFile::ZeroKnowledge(_, proof) => (true, size(proof.as_ref()), proof.part_sizes()),
        };
        let mut fingerprints = vec![("X", report::fingerprint(&statement.input))];
        if let Some(hidden) = &statement.residual {
            fingerprints.push(("H", report::fingerprint(hidden)));
        }
        let model_commitment = report::fingerprint(&statement.model);
        let output = report::fingerprint(&statement.output);
        if args.json {
            let parts: serde_json::Map<String, serde_json::Value> =
                parts.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            let commitments: serde_json::Map<String, serde_json::Value> =
                fingerprints.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            println!(
                "{}",
                json!({
                    "kind": if zero_knowledge { "zero-knowledge model layer proof" } else { "model layer proof" },
                    "zero_knowledge": zero_knowledge,
                    "tokens": a.seq_len, "heads": a.heads, "head_dim": a.head_dim, "value_head_dim": a.value_head_dim,
                    "model_width": statement.shape.model_width, "shifts": statement.shape.shifts,
                    "mask": statement.mask.to_string(), "softmax_proven": statement.softmax.is_proven(),
                    "statement_bytes": size(statement), "proof_bytes": proof_bytes, "parts": parts,
                    "verified": false,
                    "softmax": report::softmax_spec(statement.softmax),
                    "model_commitment": model_commitment,
                    "commitments": commitments,
                    "output": {"name": "Z", "rows": a.seq_len, "columns": statement.shape.model_width, "blake3": output},
                })
            );
            return Ok(());
        }
        println!(
            "{}model layer proof: {} tokens, d_model = {}, {} heads of {} (values {}), mask {}, shifts k = {:?}",
            if zero_knowledge { "zero-knowledge " } else { "" },
            a.seq_len,
            statement.shape.model_width,
            a.heads,
            a.head_dim,
            a.value_head_dim,
            statement.mask,
            statement.shape.shifts
        );
        println!(
            "statement: commitment to X, the model commitment, the output Z ({} × {}): {} bytes",
            a.seq_len,
            statement.shape.model_width,
            size(statement)
        );
        let shown: Vec<String> = fingerprints.iter().map(|(name, f)| format!("{name} {f}")).collect();
        println!(
            "model commitment {model_commitment}; commitments: {}; output Z: BLAKE3 {output} (not verified: zkmha verify --vk checks it)",
            shown.join(", ")
        );
        println!("proof: {proof_bytes} bytes");
        for (name, bytes) in parts {
            println!("  {name:<24} {bytes:>9} bytes");
        }
        return Ok(());
    }
    if !starts_with(&args.file, KEY_MAGIC) {
        // Read for its sentence: a missing file, or not a zkmha file.
        std::fs::read(&args.file).with_context(|| format!("could not read {}", args.file.display()))?;
        bail!(
            "{} is not a zkmha file (inspect reads attention- and model-layer proofs, verifier keys and model secrets)",
            args.file.display()
        );
    }
    let key = read_key(&args.file)?;
    let q = &key.quantization;
    if args.json {
        println!(
            "{}",
            json!({"kind": "verifier key", "model": sanitize(&key.description), "description_authenticated": false, "commitment": fingerprint(&key), "model_width": key.model_width,
                   "heads": key.heads, "key_value_heads": key.key_value_heads, "head_dim": key.head_dim,
                   "mask": key.mask.to_string(), "residual": residual_name(key.residual),
                   "rotary_base": key.rotary.map(|r| r.base), "shifts": q.shifts, "bytes": size(&key),
                   "weight_commitments": weight_commitments_code(key.weight_commitments),
                   "commitment_digest": hex(&key.commitment_digest())})
        );
        return Ok(());
    }
    println!(
        "verifier key: \"{}\" (its description: unauthenticated) (d_model = {}, {}, mask {}, residual on {}{})",
        sanitize(&key.description),
        key.model_width,
        heads_text(key.heads, key.key_value_heads, key.head_dim),
        key.mask,
        residual_name(key.residual),
        key.rotary.map(|r| format!(", rotary base {}", r.base)).unwrap_or_default()
    );
    println!(
        "model commitment {} ({}; commitment digest {}, as its model secret names it); X at 2^-{}, weights at 2^-{:?}, shifts {:?}; {} bytes",
        fingerprint(&key),
        commitments_name(key.weight_commitments),
        hex(&key.commitment_digest()),
        q.input_fraction_bits,
        q.weight_fraction_bits,
        q.shifts,
        size(&key)
    );
    Ok(())
}

/// The kind of weight commitments as the JSON reports name it.
fn weight_commitments_code(kind: WeightCommitments) -> &'static str {
    match kind {
        WeightCommitments::Binding => "binding",
        WeightCommitments::Hiding => "hiding",
    }
}

/// Lower-case hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `zkmha inspect` of a model secret: which key it belongs to (the key's commitment digest,
/// as `inspect` of the key shows it) and how many blinds it holds; the blinds are not shown.
fn inspect_secret(path: &Path, json_output: bool) -> Result<()> {
    let secret = decode::<ModelSecret>(path, SECRET_MAGIC, "model secret")?;
    let tables = secret.blinds.len();
    let rows: usize = secret.blinds.iter().map(Vec::len).sum();
    let digest = hex(&secret.key_digest);
    if json_output {
        println!(
            "{}",
            json!({"kind": "model secret", "key_commitment_digest": digest, "tables": tables, "blinds": rows,
                   "bytes": size(&secret)})
        );
        return Ok(());
    }
    println!(
        "model secret (keep it private) of the verifier key with commitment digest {digest}: {rows} blinds over {tables} weight commitments; {} bytes",
        size(&secret)
    );
    Ok(())
}
