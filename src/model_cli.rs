//! `zkmha commit-model`, `zkmha prove --model`, `zkmha verify --vk`, `zkmha inspect`: the
//! command line over `zkmha_api` (one attention layer of a model file, proven from its input
//! and the committed weights; the file kinds): options, progress on stderr, and what is printed.
//!
//! Model layers are proven in zero knowledge by default (hiding weight commitments, the
//! block's zero-knowledge mode); `--transparent` keeps the plain mode, for debugging. The
//! files' layouts: `zkmha_api::model_files`.

use crate::layer::parse_mask;
use crate::progress::Progress;
use crate::report::{self, Accepted, Kind, ModelPart, SoftmaxSource, SoftmaxSpec, sanitize};
use crate::verdict::Usage;
use anyhow::{Result, bail};
use ark_serialize::CanonicalSerialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zkmha_api::files::FileToWrite;
use zkmha_api::inspect::{Inspection, hex, residual_name, weight_commitments_code};
use zkmha_api::model_files::{self, ModelProof};
use zkmha_api::{Model, ModelInput, ModelOptions, Stage};
use zkmha_attention::model_layer::BlockHalf;
use zkmha_attention::verifier_key::{ModelVerifierKey, WeightCommitments};
use zkmha_attention::{MaskKind, Residual};
use zkmha_model::families::Family;

fn heads_text(heads: usize, key_value_heads: usize, head_dim: usize) -> String {
    if heads == key_value_heads {
        format!("{heads} heads of {head_dim}")
    } else {
        format!("{heads} query heads of {head_dim} sharing {key_value_heads} key/value heads")
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
    /// Consecutive layers A..B (A to B − 1) as one chain, or `all` (the whole model: from
    /// token ids to the logits, where the model's head is proven): `commit-model` writes their
    /// chain key, `prove` one proof of them all (with the chain key as --vk).
    #[arg(long, conflicts_with = "layer", value_parser = crate::chain_cli::parse_layers)]
    pub layers: Option<std::ops::Range<usize>>,
    /// The model family (bert, gpt2, llama), for files without metadata (no config.json
    /// model_type, no GGUF general.architecture); detected from the tensor names by default.
    /// It cannot override what the metadata says.
    #[arg(long, value_parser = zkmha_api::parse_family)]
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
    /// The mask (causal, none or sliding:W); by default the model's own for the layer: none for
    /// BERT; for decoders causal, or the sliding window the metadata declares.
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
    /// The key's description, shown (escaped, labelled unauthenticated) beside every verdict;
    /// at most 256 characters. By default the layer and the architecture (`layer 0 (llama)`),
    /// never the model file's name.
    #[arg(long)]
    pub description: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Options of `zkmha hidden-state`.
#[derive(clap::Args, Debug, Clone)]
pub struct HiddenStateArgs {
    /// The model and the layer whose input to write.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Attention heads; read from config.json beside the file by default.
    #[arg(long)]
    pub heads: Option<usize>,
    /// Token ids, comma-separated.
    #[arg(long, value_delimiter = ',', conflicts_with = "text")]
    pub tokens: Option<Vec<usize>>,
    /// Text, tokenized by the model's own tokenizer.
    #[arg(long)]
    pub text: Option<String>,
    /// Where to write the hidden state (.npy, float64, tokens × d_model).
    #[arg(long)]
    pub out: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `zkmha hidden-state`: the hidden state entering a layer, computed in float64 through
/// the layers before it — not proven — for `prove --input` until the layers are chained.
///
/// # Errors
/// A model that cannot be read or is refused, tokens outside the vocabulary, a file that
/// cannot be written.
pub fn hidden_state(args: &HiddenStateArgs) -> Result<()> {
    let start = Instant::now();
    if args.model.layers.is_some() {
        bail!(Usage("hidden-state writes one layer's input: name it with --layer, not --layers".into()));
    }
    let reads: Vec<(&str, &Path)> =
        args.model.model.iter().map(|m| ("the model file", m.as_path())).collect();
    zkmha_api::files::check_distinct_files(&reads, &[("--out", args.out.as_path())])?;
    let loaded = load(&args.model, args.heads, None, None, args.json)?;
    let ids = match (&args.tokens, &args.text) {
        (Some(ids), _) => ids.clone(),
        (None, Some(text)) => loaded.file().tokenizer()?.encode(text)?,
        (None, None) => bail!(Usage("pass the tokens: --tokens 1,2,3 or --text \"...\"".into())),
    };
    let hidden = loaded.float_hidden_state(&ids)?;
    let d = loaded.model_width();
    zkmha_api::files::write_npy(&args.out, ids.len(), d, &hidden)?;
    let layer = loaded.layer();
    let scope = if layer == 0 {
        "the embeddings".to_string()
    } else {
        format!("the embeddings through layers 0..{layer} in float64")
    };
    if args.json {
        println!(
            "{}",
            json!({
                "out": args.out.display().to_string(),
                "layer": layer,
                "tokens": ids.len(),
                "token_ids": ids,
                "model_width": d,
                "proven": false,
                "ms": ms(start.elapsed()),
            })
        );
        return Ok(());
    }
    println!(
        "wrote {} ({} × {d}, float64): the hidden state entering layer {layer}, {scope}; not proven — a proof of layer {layer} from it (zkmha prove --input) proves that layer alone",
        args.out.display(),
        ids.len()
    );
    Ok(())
}

/// What `zkmha prove --model` reads besides the model.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModelInputArgs {
    /// With --model: the hidden state entering the layer (s × d_model; for BERT's layers after
    /// the first that is X itself, for GPT-2, Llama and BERT's layer 0 — the embeddings' sum —
    /// X is the layer's norm of it), a .npy file (float32 or
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
    /// The verifier key from `zkmha commit-model`. Without --vk, prove commits to the model
    /// itself and writes the new hiding key beside the proof, as `<--out>.vk`.
    #[arg(long)]
    pub vk: Option<PathBuf>,
    /// Where to write the output tensor (.npy): with --model the layer's output (float64,
    /// s × d_model: H', for BERT the post-norm layer's output.LayerNorm), without
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
    /// With --layers to the model's last layer and token input (a chain key with a head):
    /// write the proven logits (.npy, float64, positions × vocabulary).
    #[arg(long, requires = "layers")]
    pub logits: Option<PathBuf>,
    /// With a head: prove every position's logits (the model's prediction at each token), not
    /// only the last position's.
    #[arg(long, requires = "layers")]
    pub all_positions: bool,
    /// With --layers: run the quantized forward pass the proof would prove (the key's
    /// calibration, every rounding the layers prove) and report it against float64 — each
    /// boundary, the logits and the next tokens — without proving or writing anything: a
    /// check of a key's accuracy on an input in a fraction of the proving time. It reads no
    /// secret and does not check the model's weights against the key's commitments, nor the
    /// key's kind against --transparent (a proof does).
    #[arg(long, requires = "layers", conflicts_with_all = ["out", "output", "logits"])]
    pub dry_run: bool,
    /// With --layers: many inputs, one per line of this file (token ids separated by commas or
    /// spaces; blank lines and lines from `#` skipped). The model is loaded and checked against
    /// the key once and the inputs proven --jobs at a time; --out names a directory, where the
    /// proof of the file's i-th input is `input-<i>.proof` (from 1; zero-padded to the count's
    /// digits: `input-01.proof` for 10 to 99 inputs).
    #[arg(long, requires = "layers", conflicts_with_all = ["tokens", "text", "input", "output", "logits", "dry_run"])]
    pub tokens_file: Option<PathBuf>,
    /// With --tokens-file: how many inputs to prove at once, each on its share of the cores
    /// (default: one per core, as many as the memory holds at the estimated peak; --max-memory
    /// applies to each input, so N jobs may use N times it).
    #[arg(long, requires = "tokens_file", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub jobs: Option<u64>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A progress callback for the library's steps: one [`Progress::step`] per [`Stage`] (a
/// spinner on a terminal, else a line as each starts and its time as it ends).
fn spinners(quiet: bool) -> impl FnMut(Stage) {
    let mut current: Option<Progress> = None;
    move |stage| {
        if let Some(done) = current.take() {
            done.finish();
        }
        if stage != Stage::Done {
            current = Some(Progress::step(&stage.message(), quiet));
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A short fingerprint of the model commitment (to publish alongside the model).
fn fingerprint(key: &ModelVerifierKey) -> String {
    report::fingerprint(&key.commitment)
}

/// Opens the model file's layer (with a spinner).
fn load(
    args: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    quiet: bool,
) -> Result<Model> {
    let Some(path) = &args.model else {
        bail!(Usage("--model FILE is required".into()));
    };
    let progress = Progress::step("reading the model", quiet);
    let options = ModelOptions { layer: args.layer(), family: args.family, heads, mask, max_memory };
    let model = Model::open(path, &options)?;
    progress.finish();
    Ok(model)
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

/// Refuses a `commit-model` whose key or secret would overwrite the model or each other.
///
/// # Errors
/// One sentence naming the two files.
pub fn check_commit_files(args: &CommitModelArgs) -> Result<()> {
    // The secret first, so that a clash reads "--secret and --out name the same file".
    let secret = match (&args.secret, args.transparent) {
        (Some(given), _) => Some(("--secret", given.clone())),
        (None, false) => Some(("the key's secret", model_files::secret_path(&args.out))),
        (None, true) => None,
    };
    let reads: Vec<(&str, &Path)> =
        args.model.model.iter().map(|m| ("the model file", m.as_path())).collect();
    let mut writes: Vec<(&str, &Path)> = secret.iter().map(|(name, path)| (*name, path.as_path())).collect();
    writes.push(("--out", args.out.as_path()));
    zkmha_api::files::check_distinct_files(&reads, &writes)?;
    if let Some(description) = &args.description {
        zkmha_api::model_layer::check_description(description)?;
    }
    Ok(())
}

/// Runs `zkmha commit-model`.
///
/// # Errors
/// A missing or malformed model, or an unwritable key file (one sentence each).
pub fn commit(args: &CommitModelArgs) -> Result<()> {
    if let Some(layers) = args.model.layers.clone() {
        return crate::chain_cli::commit(args, layers);
    }
    check_commit_files(args)?;
    let start = Instant::now();
    let loaded = load(&args.model, args.heads, args.mask, None, args.json)?;
    let committed = zkmha_api::commit_model_with_progress(
        &loaded,
        commitments_for(args.transparent),
        &mut spinners(args.json),
    )?;
    let committed = committed.describe(args.description.as_deref())?;
    let (key, secret) = (&committed.key, &committed.secret);
    let secret_file =
        secret.as_ref().map(|_| args.secret.clone().unwrap_or_else(|| model_files::secret_path(&args.out)));
    // Both written, then both renamed: a failed run leaves the earlier key and secret as they
    // were, never a new key beside an old secret.
    let bytes =
        model_files::write_key_and_secret(&args.out, key, secret_file.as_deref().zip(secret.as_ref()))?;
    let q = &key.quantization;
    if args.json {
        println!(
            "{}",
            json!({
                "verifier_key": args.out.display().to_string(),
                "bytes": bytes,
                "model": sanitize(&key.description),
                "architecture": loaded.file().architecture_name(),
                "architecture_source": loaded.architecture_source(),
                "biases": loaded.bias_names(),
                "commitment": fingerprint(key),
                "weight_commitments": weight_commitments_code(key.weight_commitments),
                "secret": secret_file.as_ref().map(|p| p.display().to_string()),
                "model_width": key.model_width,
                "heads": key.heads,
                "head_dim": key.head_dim,
                "mask": key.mask.to_string(),
                "shifts": q.shifts,
                "input_fraction_bits": q.input_fraction_bits,
                "hidden_fraction_bits": q.hidden_fraction_bits,
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
        match loaded.bias_names().as_slice() {
            [] => ", no biases".to_string(),
            names => format!(", biases on {}", names.join(", ")),
        }
    );
    println!(
        "architecture {} (from the {}{})",
        loaded.file().architecture_name(),
        loaded.architecture_source(),
        if loaded.file().architecture.is_none() {
            ": no config.json model_type or GGUF general.architecture, so features the names do not \
             show (norm weight offsets, embedding scales) cannot be checked"
        } else {
            ""
        }
    );
    println!(
        "fixed point: X at 2^-{}{}, weights at 2^-{:?}, shifts k = {:?} (calibrated on a fixed token sample{})",
        q.input_fraction_bits,
        if q.hidden_fraction_bits != q.input_fraction_bits {
            format!(", the residual stream H, Z, H' at 2^-{}", q.hidden_fraction_bits)
        } else {
            String::new()
        },
        q.weight_fraction_bits,
        q.shifts,
        if loaded.layer() > 0 && key.residual == Residual::HiddenState {
            ", through the float layers before this one"
        } else {
            ""
        }
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
    if let Some(norms) = q.query_key_norms {
        println!(
            "proven QK-norm: {} on every query head (γ at 2^-{}, out at 2^-{}) and key head (γ at 2^-{}, out at 2^-{})",
            norms.query.block.kind.name(),
            norms.query.scale_fraction_bits,
            norms.output_fraction_bits[0],
            norms.key.scale_fraction_bits,
            norms.output_fraction_bits[1]
        );
    }
    for (half, norm) in
        [("the attention's", q.output_norms.attention), ("the MLP's", q.output_norms.feed_forward)]
    {
        if let Some(norm) = norm {
            println!(
                "proven output norm: {} on {half} output (in at 2^-{}, γ at 2^-{}, out at the residual stream's 2^-{})",
                norm.norm.block.kind.name(),
                norm.input_fraction_bits,
                norm.norm.scale_fraction_bits,
                q.hidden_fraction_bits
            );
        }
    }
    println!(
        "model commitment {} ({}); wrote the verifier key {} ({} bytes) in {:.1} ms",
        fingerprint(key),
        commitments_name(key.weight_commitments),
        args.out.display(),
        bytes,
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

/// Runs `zkmha prove --model`.
///
/// # Errors
/// Missing or malformed files, bad inputs, a key made for another model (one sentence each).
pub fn prove(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    args: &ModelInputArgs,
    out: &Path,
) -> Result<()> {
    if args.jobs.is_some() && args.tokens_file.is_none() {
        bail!(Usage(
            "--jobs sets how many inputs of a --tokens-file are proven at once: pass --tokens-file, or drop --jobs"
                .into()
        ));
    }
    // Every file this run writes must be a different one (the proof, Z, the logits, the key
    // made here) and none a file it reads (the model, the key, its secret, the input).
    let secret = args.secret.clone().or_else(|| args.vk.as_deref().map(model_files::secret_path));
    let made_key = args.vk.is_none().then(|| {
        let mut name = out.as_os_str().to_owned();
        name.push(".vk");
        PathBuf::from(name)
    });
    let mut reads: Vec<(&str, &Path)> = model.model.iter().map(|m| ("the model file", m.as_path())).collect();
    reads.extend(args.vk.as_deref().map(|vk| ("the verifier key", vk)));
    reads.extend(secret.as_deref().map(|s| ("the key's secret", s)));
    reads.extend(args.input.as_deref().map(|input| ("--input", input)));
    let mut writes = vec![("--out", out)];
    writes.extend(args.output.as_deref().map(|z| ("--output", z)));
    writes.extend(args.logits.as_deref().map(|l| ("--logits", l)));
    writes.extend(made_key.as_deref().map(|k| ("the verifier key made here", k)));
    if let (Some(file), Some(layers)) = (&args.tokens_file, model.layers.clone()) {
        // The batch checks its own proofs' paths against what it reads.
        return crate::chain_cli::prove_batch(model, heads, mask, max_memory, args, out, layers, file);
    }
    zkmha_api::files::check_distinct_files(&reads, &writes)?;
    if let Some(layers) = model.layers.clone() {
        return crate::chain_cli::prove(model, heads, mask, max_memory, args, out, layers);
    }
    let quiet = args.json;
    let start = Instant::now();
    let loaded = load(model, heads, mask, max_memory, quiet)?;
    let wanted = commitments_for(args.transparent);
    let (key, secret, made_here) = match &args.vk {
        Some(path) => {
            let key = model_files::read_key(path)?;
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
                    Some(model_files::read_secret_for(&key, path, args.secret.as_deref())?)
                }
                WeightCommitments::Binding => None,
            };
            (key, secret, false)
        }
        None => {
            let committed = zkmha_api::commit_model_with_progress(&loaded, wanted, &mut spinners(quiet))?;
            (committed.key, committed.secret, true)
        }
    };
    if let Some(m) = mask
        && m != key.mask
    {
        bail!("--mask {m} differs from the verifier key's mask {}", key.mask);
    }
    let d = key.model_width;
    let input = model_input(args, d, &loaded)?;
    let proved =
        zkmha_api::prove_with_progress(&key, secret.as_ref(), &loaded, &input, &mut spinners(quiet))?;
    let s = proved.tokens;
    // A hiding key made here is new: the verifier needs it (a binding one anyone can remake
    // with zkmha commit-model --transparent).
    let key_file = made_key.filter(|_| made_here && key.weight_commitments == WeightCommitments::Hiding);
    // The key made here, the proof and Z written together: a failed run replaces none of them,
    // never leaving a new key beside an old proof.
    let key_bytes = key_file.as_ref().map(|_| model_files::encode_key(&key)).transpose()?;
    let proof_bytes = proved.proof.encode()?;
    let output_bytes = args
        .output
        .as_ref()
        .map(|path| zkmha_api::files::npy_bytes(path, s, d, &proved.output))
        .transpose()?;
    let mut files = Vec::new();
    if let (Some(path), Some(bytes)) = (&key_file, &key_bytes) {
        files.push(FileToWrite::public(path, bytes));
    }
    files.push(FileToWrite::public(out, &proof_bytes));
    if let (Some(path), Some(bytes)) = (&args.output, &output_bytes) {
        files.push(FileToWrite::public(path, bytes));
    }
    zkmha_api::files::write_files(&files)?;
    let bytes = proof_bytes.len();
    let report = &proved.accuracy;
    let warnings = zkmha_api::fidelity::fidelity_warnings([(
        format!("layer {}'s output", loaded.layer()),
        report.output.relative_l2_error,
    )]);
    crate::report::print_warnings(&warnings);
    if args.json {
        println!(
            "{}",
            json!({
                "proof": out.display().to_string(),
                "proof_bytes": bytes,
                "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "model": sanitize(&key.description),
                "tokens": s,
                "token_ids": proved.token_ids,
                "estimate": proved.estimate.to_json(),
                "prove_ms": ms(proved.prove_time),
                "total_ms": ms(start.elapsed()),
                "relative_l2_error": report.output.relative_l2_error,
                "attention_relative_l2_error": report.attention.relative_l2_error,
                "attention_half_relative_l2_error": proved.attention_half.map(|h| h.relative_l2_error),
                "output": args.output.as_ref().map(|p| p.display().to_string()),
                "verifier_key": key_file.as_ref().map(|p| p.display().to_string()),
                "zero_knowledge": secret.is_some(),
            })
        );
        return Ok(());
    }
    let mlp = key.quantization.mlp.map(|m| m.block);
    println!(
        "proved {} on {s} tokens in {:.1} s ({}Q, K, V and output projections{}{}{}, attention with the softmax proven, {}residual{})",
        sanitize(&key.description),
        proved.prove_time.as_secs_f64(),
        key.quantization.norm.map(|n| format!("{}, ", n.block.kind.name())).unwrap_or_default(),
        if key.key_value_heads != key.heads { ", shared key/value heads" } else { "" },
        if key.quantization.query_key_norms.is_some() { ", the QK-norm on every head" } else { "" },
        if key.rotary.is_some() { ", rotary embeddings" } else { "" },
        key.quantization
            .output_norms
            .attention
            .map(|n| format!("{} on its output, ", n.norm.block.kind.name()))
            .unwrap_or_default(),
        match mlp {
            Some(m) => format!(
                "; {}, the {} MLP ({} wide, {}), {}residual{}",
                m.norm.kind.name(),
                if m.params.gate.is_some() { "gated" } else { "dense" },
                m.params.hidden,
                m.params.activation.name(),
                key.quantization
                    .output_norms
                    .feed_forward
                    .map(|n| format!("{} on its output, ", n.norm.block.kind.name()))
                    .unwrap_or_default(),
                key.quantization
                    .post_norm
                    .map(|n| format!(" on the normed Z, {}", n.block.kind.name()))
                    .unwrap_or_default(),
            ),
            None => String::new(),
        }
    );
    let (output, part) = match mlp {
        Some(_) => ("the layer's output H'", "the layer's part H' − H"),
        None => ("output Z", "the attention's part Y"),
    };
    println!(
        "{output} ({s} × {d}) against float64: relative L2 error {:.3} % ({part}: {:.3} %{})",
        report.output.relative_l2_error * 100.0,
        report.attention.relative_l2_error * 100.0,
        proved
            .attention_half
            .map(|half| format!("; the attention half's part Z − H: {:.3} %", half.relative_l2_error * 100.0))
            .unwrap_or_default()
    );
    println!("{}", proven_scope(&key));
    match secret {
        Some(_) => println!("{ZERO_KNOWLEDGE_MODEL}"),
        None => println!("{NOT_ZERO_KNOWLEDGE}"),
    }
    println!(
        "wrote {} ({} bytes){}",
        out.display(),
        bytes,
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

/// The input `--input`, `--tokens` or `--text` names (text tokenized by `model`'s tokenizer,
/// the ids printed unless `--json`), for a first layer of `d` columns.
///
/// # Errors
/// None of them given ([`Usage`]), an unreadable file, a tokenizer that cannot encode.
pub fn model_input(args: &ModelInputArgs, d: usize, model: &Model) -> Result<ModelInput> {
    Ok(match (&args.input, &args.tokens, &args.text) {
        (Some(path), _, _) => {
            ModelInput::HiddenState { values: zkmha_api::read_hidden_state(path, d)?, columns: d }
        }
        (None, Some(ids), _) => ModelInput::Tokens(ids.clone()),
        (None, None, Some(text)) => {
            let tokenizer = model.file().tokenizer()?;
            let ids = tokenizer.encode(text)?;
            if !args.json {
                eprintln!("tokenized by {}: {} tokens {ids:?}", tokenizer.source, ids.len());
            }
            ModelInput::Tokens(ids)
        }
        (None, None, None) => {
            bail!(Usage("pass the layer input: --input FILE.npy, --tokens 1,2,3 or --text \"...\"".into()))
        }
    })
}

/// The name of a model-layer statement's output: the whole layer's `H'`, or the attention
/// block's `Z`.
pub fn output_name(shape: &zkmha_attention::model_layer::ModelShape) -> &'static str {
    zkmha_api::verified::output_name(shape)
}

/// What a model-layer proof covers beyond the attention block, and what it does not, in one
/// sentence for the key's kind of layer.
fn proven_scope(key: &ModelVerifierKey) -> String {
    if let (Some(norm), Some(mlp)) = (key.quantization.norm, key.quantization.mlp) {
        let q = &key.quantization;
        // Gemma's norms on each half's output wrap that half.
        let wrap = |norm: Option<zkmha_attention::model_quantization::ScaledNormQuantization>,
                    inner: String| {
            match norm {
                Some(n) => format!("{}({inner})", n.norm.block.kind.name()),
                None => inner,
            }
        };
        let attention = format!(
            "attention{}({}(H))",
            if q.query_key_norms.is_some() { " with the QK-norm" } else { "" },
            norm.block.kind.name()
        );
        return format!(
            "proven: the whole layer, H' = Z + {} with Z = H + {}, in fixed point (every weight, γ and β from the committed model; H, Z and the MLP's input committed); not proven: for token input the embedding lookup",
            wrap(q.output_norms.feed_forward, format!("MLP({}(Z))", mlp.block.norm.kind.name())),
            wrap(q.output_norms.attention, attention),
        );
    }
    if let (Some(mlp), Some(post)) = (key.quantization.mlp, key.quantization.post_norm) {
        return format!(
            "proven: the whole post-norm layer, H' = {}(X₂ + MLP(X₂)) with X₂ = {}(X + attention(X)){}, in fixed point (every weight, γ and β from the committed model; X, X + Y, X₂ and X₂ + MLP(X₂) committed); not proven: for token input the embedding lookup{}",
            post.block.kind.name(),
            mlp.block.norm.kind.name(),
            key.quantization.norm.map(|n| format!(" and X = {}(H)", n.block.kind.name())).unwrap_or_default(),
            if key.quantization.norm.is_some() { "" } else { " and its norm" },
        );
    }
    match (key.residual, key.quantization.norm) {
        (Residual::LayerInput, _) => {
            "not proven: the layer norm that follows, the MLP and its norm (and, for token input, the embedding lookup and its norm)".into()
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
pub const ZERO_KNOWLEDGE_MODEL: &str = "zero knowledge: the weights, X, H and every intermediate are committed with blinding, every sum-check is masked and every claim committed; the proof shows the statement's public values (a layer's output H' or Z; a chain's token ids, logit positions and logits, or its last output H') and the key's commitments and calibration constants, which depend on the weights (max |W| per table within a factor of 2, the shifts), and nothing else about the weights or the input (docs/ZERO_KNOWLEDGE.md)";

/// Printed after every proof that is not zero-knowledge.
pub const NOT_ZERO_KNOWLEDGE: &str = "not zero-knowledge: the proof reveals evaluations of the committed tensors at random points (model layers are proven in zero knowledge without --transparent, attention layers with --zk; docs/ZERO_KNOWLEDGE.md)";

/// Runs `zkmha verify --vk`: checks the proof's softmax against the key's (or the one
/// named), verifies, and prints what it accepted.
///
/// # Errors
/// Missing, corrupt or over-the-limits files, a refused softmax ([`crate::verdict::Verdict::Refused`]), or an
/// invalid proof (`zkmha_api::Error::InvalidProof`); one sentence each.
pub fn verify(
    proof_path: &Path,
    key_path: &Path,
    named: Option<&SoftmaxSpec>,
    expected: &zkmha_api::Expected,
    output: Option<&Path>,
    json_output: bool,
) -> Result<()> {
    let key = model_files::read_key(key_path)?;
    let file = ModelProof::read(proof_path)?;
    let statement = file.statement();
    // The key fixes the softmax (a proof with another one is invalid: `check_statement`); a
    // softmax named on the command line must be the proof's as well.
    let source = match named {
        Some(_) => report::accept_softmax(statement.softmax, statement.softmax, SoftmaxSource::Named, named)?,
        None => SoftmaxSource::VerifierKey,
    };
    let kind = if file.is_zero_knowledge() { Kind::ZeroKnowledgeModelLayer } else { Kind::ModelLayer };
    let progress = Progress::step("verifying", json_output);
    let verified = zkmha_api::verify_expecting(&key, &file, expected)?;
    progress.finish();
    let a = &statement.shape.attention;
    // Only a valid proof's output is written, with what it is about.
    if let Some(path) = output {
        verified.write_npz(path)?;
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
            norm: shape.norm.map(|n| n.kind.name()),
            mlp: shape.mlp.map(|m| report::MlpPart {
                norm: m.norm.kind.name(),
                gated: m.params.gate.is_some(),
                hidden: m.params.hidden,
                activation: m.params.activation.name(),
            }),
            query_key_norm: shape.query_key_norms.map(|n| n.query.kind.name()),
            output_norms: [BlockHalf::Attention, BlockHalf::FeedForward]
                .map(|half| shape.output_norms.of(half).map(|n| n.kind.name())),
            post_norm: shape.post_norm.map(|n| n.kind.name()),
        }),
        mask: statement.mask,
        softmax: statement.softmax,
        softmax_source: source,
        commitments: zkmha_api::inspect::model_commitments(statement),
        output: (output_name(shape), a.seq_len, shape.model_width, verified.output_digest.clone()),
        // The generators are derived inside the key's verification.
        verify_ms: ms(verified.verify_time),
        statement: Some(verified.clone()),
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

/// Runs `zkmha inspect`: what the file holds and the fingerprints of its commitments (as
/// `verify` shows them); nothing is verified.
///
/// # Errors
/// A missing, foreign or corrupt file.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let inspection = zkmha_api::inspect::read(&args.file)?;
    if args.json {
        println!("{}", inspection.to_json());
        return Ok(());
    }
    match &inspection {
        Inspection::LayerProof(file) => crate::proof_file::print_layer_inspection(file),
        Inspection::ModelProof(file) => print_model_proof(file),
        Inspection::VerifierKey(key) => print_key(key),
        Inspection::ChainProof(_) | Inspection::ChainKey(_) | Inspection::ChainSecret(_) => {
            crate::chain_cli::print_inspection(&inspection)
        }
        Inspection::ModelSecret(secret) => {
            let rows: usize = secret.blinds.iter().map(Vec::len).sum();
            println!(
                "model secret (keep it private) of the verifier key with commitment digest {}: {rows} blinds over {} weight commitments; {} bytes",
                hex(&secret.key_digest),
                secret.blinds.len(),
                secret.compressed_size()
            );
        }
    }
    Ok(())
}

/// `zkmha inspect` of a model-layer proof, as text.
fn print_model_proof(file: &ModelProof) {
    let statement = file.statement();
    let a = &statement.shape.attention;
    println!(
        "{}model layer proof: {} tokens, d_model = {}, {} heads of {} (values {}), mask {}, shifts k = {:?}",
        if file.is_zero_knowledge() { "zero-knowledge " } else { "" },
        a.seq_len,
        statement.shape.model_width,
        a.heads,
        a.head_dim,
        a.value_head_dim,
        statement.mask,
        statement.shape.shifts
    );
    let output = output_name(&statement.shape);
    println!(
        "statement: commitment to X, the model commitment, the output {output} ({} × {}): {} bytes",
        a.seq_len,
        statement.shape.model_width,
        statement.compressed_size()
    );
    let shown: Vec<String> = zkmha_api::inspect::model_commitments(statement)
        .iter()
        .map(|(name, f)| format!("{name} {f}"))
        .collect();
    println!(
        "model commitment {}; commitments: {}; output {output}: BLAKE3 {} (not verified: zkmha verify --vk checks it)",
        report::fingerprint(&statement.model),
        shown.join(", "),
        report::fingerprint(&statement.output)
    );
    println!("proof: {} bytes", file.proof_bytes());
    for (name, bytes) in file.part_sizes() {
        println!("  {name:<24} {bytes:>9} bytes");
    }
}

/// `zkmha inspect` of a verifier key, as text.
fn print_key(key: &ModelVerifierKey) {
    let q = &key.quantization;
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
        "model commitment {} ({}; commitment digest {}, as its model secret names it); X at 2^-{}, H at 2^-{}, weights at 2^-{:?}, shifts {:?}; {} bytes",
        fingerprint(key),
        commitments_name(key.weight_commitments),
        hex(&key.commitment_digest()),
        q.input_fraction_bits,
        q.hidden_fraction_bits,
        q.weight_fraction_bits,
        q.shifts,
        key.compressed_size()
    );
}
