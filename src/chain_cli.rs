//! `--layers A..B` on `zkmha commit-model` and `zkmha prove --model`, and `zkmha verify` and
//! `zkmha inspect` of the files they write: consecutive layers of a model proven as one
//! inference, linked by the committed hidden states between them (`zkmha_api::model_chain`).

use crate::model_cli::{ModelArgs, ModelInputArgs};
use crate::progress::Progress;
use crate::report::sanitize;
use crate::verdict::Usage;
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::ops::Range;
use std::path::Path;
use std::time::Instant;
use zkmha_api::attention_layer::Hiding;
use zkmha_api::files::FileToWrite;
use zkmha_api::model_chain::{
    ChainKey, ChainLogits, ChainProof, ChainSecret, LogitPositions, chain_accuracy, commit_chain,
    open_layers, prove_chain_with, read_chain_key, read_chain_secret_for, verify_chain_expecting,
    write_chain_key_and_secret,
};
use zkmha_api::model_files;
use zkmha_api::resources::Estimate;
use zkmha_api::{ModelInput, ModelOptions, Stage, WeightCommitments};
use zkmha_attention::MaskKind;

/// `--layers all`: every layer of the model (resolved from the file's tensor names).
const ALL_LAYERS: Range<usize> = 0..usize::MAX;

/// The most layers `A..B` may name (GGUF's `block_count` and config.json's layer counts are
/// held to it too): a range past it names no model's layers.
const MAX_LAYER_INDEX: usize = 1 << 16;

/// Parses `A..B` (layers A to B − 1, as Rust writes a range), or `all` (the whole model).
///
/// # Errors
/// A sentence for anything else, or an empty range.
pub fn parse_layers(text: &str) -> Result<Range<usize>, String> {
    if text.trim() == "all" {
        return Ok(ALL_LAYERS);
    }
    let (start, end) =
        text.split_once("..").ok_or_else(|| format!("{text:?} is not a range A..B (layers A to B − 1)"))?;
    let number = |s: &str| {
        s.trim().parse::<usize>().map_err(|_| format!("{text:?} is not a range A..B (layers A to B − 1)"))
    };
    let (start, end) = (number(start)?, number(end)?);
    // Far past any model's last layer (and `usize::MAX` is how `all` is held).
    if end > MAX_LAYER_INDEX {
        return Err(format!(
            "{text:?}: layer {} is past any model's last (a model has at most {MAX_LAYER_INDEX} layers)",
            end - 1
        ));
    }
    if start >= end {
        return Err(format!("{text:?} holds no layer (A..B is layers A to B − 1)"));
    }
    Ok(start..end)
}

/// The fidelity warnings of a chain: each layer's output (its boundary) and the logits (the
/// same next tokens aside) over 1 % from float64.
fn chain_warnings(
    key: &ChainKey,
    layer_errors: &[f64],
    logits: Option<(usize, f64)>,
) -> Vec<zkmha_api::fidelity::FidelityWarning> {
    let layers =
        key.layer_range().zip(layer_errors).map(|(layer, &error)| (format!("layer {layer}'s output"), error));
    zkmha_api::fidelity::fidelity_warnings(
        layers.chain(logits.map(|(_, error)| ("the logits".to_string(), error))),
    )
}

/// What is printed of a chain's layers, `A..B`.
fn range_text(range: &Range<u64>) -> String {
    format!("layers {}..{}", range.start, range.end)
}

/// A progress callback for the chain's steps (none under --json): each step timed, the
/// `counted` stage counted (`total` of them, `unit`) with the time left.
fn progress(
    quiet: bool,
    message: &str,
    total: usize,
    unit: &'static str,
    counted: fn(&Stage) -> bool,
) -> impl FnMut(usize, Stage) {
    let mut progress = Some(Progress::counted(message, total as u64, unit, quiet));
    move |layer, stage| {
        if stage == Stage::Done {
            if let Some(done) = progress.take() {
                done.finish();
            }
        } else if let Some(progress) = progress.as_mut() {
            // The last check is the whole chain's, not a layer's.
            let what = match stage {
                Stage::Verifying => format!("the chain: {}", stage.message()),
                _ => format!("layer {layer}: {}", stage.message()),
            };
            if counted(&stage) { progress.start_item(what) } else { progress.start_step(what) }
        }
    }
}

fn open(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    layers: Range<usize>,
) -> Result<Vec<zkmha_api::Model>> {
    let Some(path) = &model.model else {
        bail!(Usage("--model FILE is required".into()));
    };
    let options = ModelOptions { layer: layers.start, family: model.family, heads, mask, max_memory };
    let layers = if layers == ALL_LAYERS {
        let first = zkmha_api::Model::open(path, &options)?;
        let Some(count) = first.file().layer_count() else {
            bail!(Usage(format!(
                "the tensor names of {} do not tell how many layers it has: name them with --layers A..B",
                path.display()
            )));
        };
        0..count
    } else {
        layers
    };
    Ok(open_layers(path, &options, layers)?)
}

/// `zkmha commit-model --layers A..B`: the chain key (and the chain secret beside a hiding
/// one).
///
/// # Errors
/// As `zkmha commit-model`.
pub fn commit(args: &crate::model_cli::CommitModelArgs, layers: Range<usize>) -> Result<()> {
    crate::model_cli::check_commit_files(args)?;
    let start = Instant::now();
    let models = open(&args.model, args.heads, args.mask, None, layers)?;
    let kind = if args.transparent { WeightCommitments::Binding } else { WeightCommitments::Hiding };
    // Each layer is calibrated twice: for the scale it would choose, then at the chain's.
    let committed = commit_chain(
        &models,
        kind,
        &mut progress(args.json, "committing the chain", 2 * models.len(), "layer calibrations", |stage| {
            *stage == Stage::Calibrating
        }),
    )?;
    let committed = committed.describe(args.description.as_deref())?;
    let secret_file = committed
        .secret
        .as_ref()
        .map(|_| args.secret.clone().unwrap_or_else(|| model_files::secret_path(&args.out)));
    // Both written, then both renamed: never a new key beside an old secret.
    let bytes = write_chain_key_and_secret(
        &args.out,
        &committed.key,
        secret_file.as_deref().zip(committed.secret.as_ref()),
    )?;
    let key = &committed.key;
    let f_h = key.layers.first().map(|k| k.quantization.hidden_fraction_bits);
    if args.json {
        println!(
            "{}",
            json!({
                "chain_key": args.out.display().to_string(),
                "fingerprint": zkmha_api::fingerprint(key),
                "bytes": bytes,
                "first_layer": key.first_layer,
                "layers": key.layers.len(),
                "models": key.layers.iter().map(|k| sanitize(&k.description)).collect::<Vec<_>>(),
                "commitments": key.layers.iter().map(|k| zkmha_api::fingerprint(&k.commitment)).collect::<Vec<_>>(),
                "weight_commitments": zkmha_api::inspect::weight_commitments_code(kind),
                "hidden_fraction_bits": f_h,
                "secret": secret_file.as_ref().map(|p| p.display().to_string()),
                "ms": start.elapsed().as_secs_f64() * 1e3,
            })
        );
        return Ok(());
    }
    println!(
        "committed to {} of {} ({} commitments): the residual stream at 2^-{} in every layer",
        range_text(&key.layer_range()),
        models.first().map(|m| m.file().path.display().to_string()).unwrap_or_default(),
        zkmha_api::inspect::weight_commitments_code(kind),
        f_h.unwrap_or_default()
    );
    for (layer, k) in key.layer_range().zip(&key.layers) {
        println!("  layer {layer}: model commitment {}", zkmha_api::fingerprint(&k.commitment));
    }
    println!(
        "wrote the chain key {} ({bytes} bytes; its fingerprint {}, which zkmha verify shows: publish it with the key) in {:.1} s",
        args.out.display(),
        zkmha_api::fingerprint(key),
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = &secret_file {
        println!("wrote the chain secret {} (the commitments' blinds: keep it private)", path.display());
    }
    Ok(())
}

/// The chain key `--vk` names, and its path.
fn chain_key(args: &ModelInputArgs) -> Result<(&Path, ChainKey)> {
    let Some(key_path) = &args.vk else {
        bail!(Usage(
            "--layers needs the chain key from zkmha commit-model --layers: pass it with --vk".into()
        ));
    };
    Ok((key_path, read_chain_key(key_path)?))
}

/// The secret of the chain key `key` (read from `--secret` or beside the key) for a
/// zero-knowledge proof, none for `--transparent`; a key of the other kind is refused.
fn chain_secret(args: &ModelInputArgs, key_path: &Path, key: &ChainKey) -> Result<Option<ChainSecret>> {
    let wanted = if args.transparent { WeightCommitments::Binding } else { WeightCommitments::Hiding };
    let kind = key.layers.first().map(|k| k.weight_commitments);
    if kind != Some(wanted) {
        bail!(
            "the chain key {} holds {} commitments: {}",
            key_path.display(),
            kind.map(zkmha_api::inspect::weight_commitments_code).unwrap_or("no"),
            if wanted == WeightCommitments::Binding {
                "--transparent needs a key from zkmha commit-model --layers --transparent"
            } else {
                "pass --transparent for a plain proof, or make a hiding key for a zero-knowledge one"
            }
        );
    }
    Ok(match wanted {
        WeightCommitments::Hiding => Some(read_chain_secret_for(key_path, args.secret.as_deref())?),
        WeightCommitments::Binding => None,
    })
}

/// The inputs of a `--tokens-file` with their line numbers (from 1): one list of token ids per
/// line that holds any (commas or spaces between them; `#` starts a comment).
///
/// # Errors
/// An unreadable file, a word that is not a token id (with its line), no input at all.
pub fn read_tokens_file(path: &Path) -> Result<Vec<(usize, Vec<usize>)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read --tokens-file {}", path.display()))?;
    let mut inputs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let ids = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|word| !word.is_empty())
            .map(|word| {
                word.parse::<usize>().map_err(|_| {
                    Usage(format!(
                        "--tokens-file {} line {}: {word:?} is not a token id",
                        path.display(),
                        number + 1
                    ))
                })
            })
            .collect::<Result<Vec<usize>, Usage>>()?;
        if !ids.is_empty() {
            inputs.push((number + 1, ids));
        }
    }
    if inputs.is_empty() {
        bail!(Usage(format!(
            "--tokens-file {} holds no input (one line of token ids per input)",
            path.display()
        )));
    }
    Ok(inputs)
}

/// One input's line of a batch's JSON report, and its error when it was not proven.
type InputReport = (serde_json::Value, Option<anyhow::Error>);

/// `zkmha prove --model M --layers A..B --vk CHAIN_KEY --tokens-file F --out DIR`: every input
/// of `F` proven on the model loaded once, `--jobs` at a time; input i's proof written to
/// `DIR/input-<i>.proof`.
///
/// # Errors
/// As [`prove`] for the key and the model; a bad tokens file; the first input that fails (after
/// every input was tried and every other proof written).
#[allow(clippy::too_many_arguments)]
pub fn prove_batch(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    args: &ModelInputArgs,
    out: &Path,
    layers: Range<usize>,
    tokens_file: &Path,
) -> Result<()> {
    let lines = read_tokens_file(tokens_file)?;
    let digits = lines.len().to_string().len();
    let proof_path = |i: usize| out.join(format!("input-{:0digits$}.proof", i + 1));
    // No proof may land on a file the run reads (the model, the key, its secret, the inputs).
    let (key_path, key) = chain_key(args)?;
    // Every input checked against the key's vocabulary before the first is proven.
    if let Some(embedding) = &key.embedding {
        for (line, ids) in &lines {
            if let Some(id) = ids.iter().find(|&&id| id as u64 >= embedding.shape.token_rows) {
                bail!(
                    "--tokens-file {} line {line}: token id {id} is outside the vocabulary of {} tokens (nothing was proven)",
                    tokens_file.display(),
                    embedding.shape.token_rows
                );
            }
        }
    }
    let inputs: Vec<Vec<usize>> = lines.into_iter().map(|(_, ids)| ids).collect();
    let secret_file = args.secret.clone().unwrap_or_else(|| model_files::secret_path(key_path));
    let mut reads: Vec<(&str, &Path)> = vec![("--tokens-file", tokens_file), ("the chain key", key_path)];
    reads.extend(model.model.iter().map(|m| ("the model file", m.as_path())));
    reads.push(("the key's secret", secret_file.as_path()));
    let paths: Vec<std::path::PathBuf> = (0..inputs.len()).map(proof_path).collect();
    let writes: Vec<(&str, &Path)> =
        paths.iter().map(|p| ("a proof of --tokens-file", p.as_path())).collect();
    // The proofs' folder first, so that their paths are checked in it.
    std::fs::create_dir_all(out)
        .with_context(|| format!("could not create the --out directory {}", out.display()))?;
    zkmha_api::files::check_distinct_files(&reads, &writes)?;
    let secret = chain_secret(args, key_path, &key)?;
    let start = Instant::now();
    let models = open(model, heads, mask, max_memory, layers)?;
    let prover = zkmha_api::chain_tasks::ChainProver::new(key, secret, models)?;
    let longest = inputs.iter().map(Vec::len).max().unwrap_or(1);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let jobs = args.jobs.map_or_else(|| prover.batch_jobs(longest), |j| j as usize).min(inputs.len());
    if !args.json {
        println!(
            "proving {} inputs on {} ({} layers loaded once), {jobs} at a time on {threads} threads",
            inputs.len(),
            range_text(&prover.key().layer_range()),
            prover.layers()
        );
    }
    let positions = if args.all_positions { LogitPositions::All } else { LogitPositions::Last };
    let model_inputs: Vec<ModelInput> = inputs.iter().cloned().map(ModelInput::Tokens).collect();
    // Each input's proof is written, and its line printed, as soon as it is proven.
    let reports: Vec<std::sync::Mutex<Option<InputReport>>> =
        inputs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let print = std::sync::Mutex::new(());
    prover.prove_batch_with(&model_inputs, positions, jobs, threads, &|i, result| {
        let path = proof_path(i);
        // A proof left by an earlier run must not stand for an input that fails now.
        if result.is_err() && path.exists() {
            let _ = std::fs::remove_file(&path);
        }
        let written = result.map_err(anyhow::Error::from).and_then(|proved| {
            let bytes = proved.proof.write(&path)?;
            Ok((proved, bytes))
        });
        let _line = print.lock();
        let report = match written {
            Ok((proved, bytes)) => {
                let predicted = proved.logits.as_ref().and_then(|l| l.predicted.last().copied());
                let seconds: f64 = proved.layer_times.iter().map(|t| t.as_secs_f64()).sum();
                if !args.json {
                    println!(
                        "input {}: {} tokens, wrote {} ({bytes} bytes){}",
                        i + 1,
                        proved.tokens,
                        path.display(),
                        predicted.map(|t| format!("; predicts token {t}")).unwrap_or_default()
                    );
                }
                let json = json!({
                    "input": i + 1,
                    "tokens": proved.tokens,
                    "proof": path.display().to_string(),
                    "proof_bytes": bytes,
                    "layer_prove_ms": seconds * 1e3,
                    "predicted_token": predicted,
                    "relative_l2_error": proved.accuracy.output.relative_l2_error,
                });
                (json, None)
            }
            Err(error) => {
                let sentence = format!("{error:#}");
                if !args.json {
                    println!("input {}: not proven: {sentence}", i + 1);
                }
                (json!({ "input": i + 1, "error": sentence }), Some(error))
            }
        };
        if let Some(slot) = reports.get(i)
            && let Ok(mut slot) = slot.lock()
        {
            *slot = Some(report);
        }
    });
    let mut first_error = None;
    let mut json_reports = Vec::with_capacity(inputs.len());
    for (i, slot) in reports.into_iter().enumerate() {
        let (json, error) = slot.into_inner().ok().flatten().unwrap_or_else(|| {
            (json!({ "input": i + 1, "error": "not proven" }), Some(anyhow::anyhow!("not proven")))
        });
        json_reports.push(json);
        if let (None, Some(error)) = (&first_error, error) {
            first_error = Some(error.context(format!("input {} of {}", i + 1, tokens_file.display())));
        }
    }
    let reports = json_reports;
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let mut report = json!({
            "inputs": reports,
            "jobs": jobs,
            "threads": threads,
            "total_ms": seconds * 1e3,
            "ms_per_input": seconds * 1e3 / inputs.len() as f64,
            "zero_knowledge": prover.zero_knowledge(),
        });
        if let Some(error) = &first_error {
            // One JSON object on stdout: the inputs' report with the failure's fields (what
            // `verdict::report` would print alone), then the failure's exit code. Every proof
            // is written (renamed into place) by now.
            let code = crate::verdict::exit_code(error);
            let sentence = format!("{error:#}");
            eprintln!("error: {sentence}");
            if let (Some(object), serde_json::Value::Object(failure)) =
                (report.as_object_mut(), crate::verdict::error_json(&sentence, code))
            {
                object.extend(failure);
            }
            println!("{report}");
            std::process::exit(code);
        }
        println!("{report}");
    } else {
        println!(
            "{} inputs in {seconds:.1} s ({:.1} s an input); {}",
            inputs.len(),
            seconds / inputs.len() as f64,
            if prover.zero_knowledge() {
                crate::model_cli::ZERO_KNOWLEDGE_MODEL
            } else {
                crate::model_cli::NOT_ZERO_KNOWLEDGE
            }
        );
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// `zkmha prove --model M --layers A..B --vk CHAIN_KEY`: the chain's proof.
///
/// # Errors
/// As `zkmha prove --model`; a key that is not a chain key of these layers.
pub fn prove(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    args: &ModelInputArgs,
    out: &Path,
    layers: Range<usize>,
) -> Result<()> {
    let (key_path, key) = chain_key(args)?;
    let secret = chain_secret(args, key_path, &key)?;
    let start = Instant::now();
    let models = open(model, heads, mask, max_memory, layers)?;
    let Some(first) = models.first() else {
        bail!(Usage("--layers names no layer".into()));
    };
    let input = crate::model_cli::model_input(args, first.model_width(), first)?;
    let tokens_given = args.tokens.is_some() || args.text.is_some();
    if args.logits.is_some() && (key.head.is_none() || !tokens_given) {
        bail!(Usage(format!(
            "--logits: this chain proves no logits ({}); it ends in its last layer's hidden state",
            head_absence(&key, &models, tokens_given)
        )));
    }
    let positions = if args.all_positions { LogitPositions::All } else { LogitPositions::Last };
    let proved = prove_chain_with(
        &key,
        secret.as_ref(),
        &models,
        &input,
        positions,
        &mut progress(args.json, "proving the chain", models.len(), "layers", |stage| {
            matches!(stage, Stage::Proving { .. })
        }),
    )?;
    if args.logits.is_some() && proved.logits.is_none() {
        bail!(Usage(format!(
            "--logits: this chain proves no logits ({}); it ends in its last layer's hidden state",
            head_absence(&key, &models, proved.proof.token_ids().is_some())
        )));
    }
    // The proof and its outputs written together: a failed run replaces none of them.
    let proof_bytes = proved.proof.encode()?;
    let output_bytes = args
        .output
        .as_ref()
        .map(|path| zkmha_api::files::npy_bytes(path, proved.tokens, proved.model_width, &proved.output))
        .transpose()?;
    let logits_bytes = match (&args.logits, &proved.logits) {
        (Some(path), Some(logits)) => Some(zkmha_api::files::npy_bytes(
            path,
            logits.positions.len(),
            logits.vocabulary,
            &logits.values,
        )?),
        _ => None,
    };
    let mut files = vec![FileToWrite::public(out, &proof_bytes)];
    for (path, bytes) in [(&args.output, &output_bytes), (&args.logits, &logits_bytes)] {
        if let (Some(path), Some(bytes)) = (path, bytes) {
            files.push(FileToWrite::public(path, bytes));
        }
    }
    zkmha_api::files::write_files(&files)?;
    let bytes = proof_bytes.len();
    let report = &proved.accuracy;
    let prove_seconds: f64 = proved.layer_times.iter().map(|t| t.as_secs_f64()).sum();
    let warnings = chain_warnings(
        &key,
        &proved.layer_errors,
        proved.logits.as_ref().and_then(|l| l.against_reference()),
    );
    crate::report::print_warnings(&warnings);
    if args.json {
        // The layers' estimates from their shapes, one after another.
        let hiding = if secret.is_some() { Hiding::ZeroKnowledge } else { Hiding::Plain };
        let mut estimate: Option<Estimate> = None;
        for layer_key in &key.layers {
            let layer = zkmha_api::resources::estimate_model_layer(&layer_key.shape(proved.tokens)?, hiding);
            estimate = Some(estimate.map_or(layer, |earlier| earlier.then(layer)));
        }
        println!(
            "{}",
            json!({
                "proof": out.display().to_string(),
                "proof_bytes": bytes,
                "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "first_layer": key.first_layer,
                "layers": key.layers.len(),
                "tokens": proved.tokens,
                "token_ids": proved.token_ids,
                "token_ids_proven": proved.proof.token_ids().is_some(),
                "estimate": estimate.map(|e| e.to_json()),
                "layer_prove_ms": proved.layer_times.iter().map(|t| t.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                "total_ms": start.elapsed().as_secs_f64() * 1e3,
                "relative_l2_error": report.output.relative_l2_error,
                "layers_relative_l2_error": report.attention.relative_l2_error,
                "layer_relative_l2_errors": proved.layer_errors,
                "output": args.output.as_ref().map(|p| p.display().to_string()),
                "logits": proved.logits.as_ref().map(|l| logits_json(l, args.logits.as_deref())),
                "zero_knowledge": secret.is_some(),
            })
        );
        return Ok(());
    }
    println!(
        "proved {} on {} tokens in {prove_seconds:.1} s ({:.1} s a layer), one proof per layer linked by the committed hidden states between them",
        range_text(&key.layer_range()),
        proved.tokens,
        prove_seconds / key.layers.len().max(1) as f64
    );
    println!(
        "the last layer's output ({} × {}) against float64 through the same layers: relative L2 error {:.3} % (the layers' part H_b − H_a: {:.3} %)",
        proved.tokens,
        proved.model_width,
        report.output.relative_l2_error * 100.0,
        report.attention.relative_l2_error * 100.0
    );
    if let Some(logits) = &proved.logits {
        print_logits(logits);
        if let Some((same, error)) = logits.against_reference() {
            println!(
                "  against float64 through the same model: the same next token at {same} of {} positions, logits' relative L2 error {:.3} %",
                logits.positions.len(),
                error * 100.0
            );
        }
    } else if proved.proof.token_ids().is_some() {
        println!("no logits: {}", head_absence(&key, &models, true));
    }
    println!("{}", chain_scope(&key, proved.proof.token_ids().is_some(), proved.logits.is_some()));
    println!(
        "{}",
        if secret.is_some() {
            crate::model_cli::ZERO_KNOWLEDGE_MODEL
        } else {
            crate::model_cli::NOT_ZERO_KNOWLEDGE
        }
    );
    let written: Vec<String> =
        [&args.output, &args.logits].into_iter().flatten().map(|p| p.display().to_string()).collect();
    println!(
        "wrote {} ({bytes} bytes){}",
        out.display(),
        if written.is_empty() { String::new() } else { format!(" and {}", written.join(" and ")) }
    );
    Ok(())
}

/// `zkmha prove --model M --layers A..B --vk CHAIN_KEY --dry-run`: the forward pass a proof
/// would prove, against float64, without a proof.
///
/// # Errors
/// As [`prove`] before its proof: a missing or unreadable key, models that are not its layers,
/// an input the forward pass refuses.
pub fn dry_run(
    model: &ModelArgs,
    heads: Option<usize>,
    mask: Option<MaskKind>,
    max_memory: Option<u64>,
    args: &ModelInputArgs,
    layers: Range<usize>,
) -> Result<()> {
    let (key_path, key) = chain_key(args)?;
    let start = Instant::now();
    let models = open(model, heads, mask, max_memory, layers)?;
    let Some(first) = models.first() else {
        bail!(Usage("--layers names no layer".into()));
    };
    let input = crate::model_cli::model_input(args, first.model_width(), first)?;
    let positions = if args.all_positions { LogitPositions::All } else { LogitPositions::Last };
    let measure = chain_accuracy(&key, &models, &input, positions)?;
    let seconds = start.elapsed().as_secs_f64();
    let tokens = measure.output.len() / first.model_width().max(1);
    let report = &measure.accuracy;
    let warnings = chain_warnings(
        &key,
        &measure.layer_errors,
        measure.logits.as_ref().and_then(|l| l.against_reference()),
    );
    crate::report::print_warnings(&warnings);
    if args.json {
        println!(
            "{}",
            json!({
                "dry_run": true,
                "warnings": warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "proven": false,
                "first_layer": key.first_layer,
                "layers": key.layers.len(),
                "tokens": tokens,
                "total_ms": seconds * 1e3,
                "relative_l2_error": report.output.relative_l2_error,
                "layers_relative_l2_error": report.attention.relative_l2_error,
                "layer_relative_l2_errors": measure.layer_errors,
                "logits": measure.logits.as_ref().map(|l| logits_json(l, None)),
            })
        );
        return Ok(());
    }
    println!(
        "dry run, nothing proven: the quantized forward pass of {} on {tokens} tokens in {seconds:.1} s, as a proof with {} would prove it",
        range_text(&key.layer_range()),
        key_path.display()
    );
    println!(
        "the last layer's output against float64 through the same layers: relative L2 error {:.3} % (the layers' part H_b − H_a: {:.3} %); each boundary: {}",
        report.output.relative_l2_error * 100.0,
        report.attention.relative_l2_error * 100.0,
        measure.layer_errors.iter().map(|e| format!("{:.3} %", e * 100.0)).collect::<Vec<_>>().join(", ")
    );
    if let Some(logits) = &measure.logits
        && let Some((same, error)) = logits.against_reference()
    {
        println!(
            "the logits of {} position{}: the same next token as float64 at {same} of them, logits' relative L2 error {:.3} %",
            logits.positions.len(),
            if logits.positions.len() == 1 { "" } else { "s" },
            error * 100.0
        );
    }
    Ok(())
}

/// Why a chain proves no logits, in words.
fn head_absence(key: &ChainKey, models: &[zkmha_api::Model], tokens_proven: bool) -> String {
    if !tokens_proven {
        return "logits are proven only from token ids (--tokens or --text) on a chain from layer 0".into();
    }
    match models.last().map(|m| m.final_norm()) {
        Some(Err(why)) => format!("the model's head is not proven: {why}"),
        _ if key.head.is_none() => "the chain key holds no head (made before heads were proven?)".into(),
        _ => "the chain proves no head".into(),
    }
}

/// The proven logits, as the reports print them.
fn print_logits(logits: &ChainLogits) {
    let last = logits.positions.len().saturating_sub(1);
    let (Some(position), Some(token)) = (logits.positions.get(last), logits.predicted.get(last)) else {
        return;
    };
    println!(
        "proven logits of {} position{} × {} tokens: after position {position} the model predicts token {token}{}",
        logits.positions.len(),
        if logits.positions.len() == 1 { "" } else { "s" },
        logits.vocabulary,
        if logits.positions.len() > 1 {
            format!(" (every position's prediction: {:?})", logits.predicted)
        } else {
            String::new()
        }
    );
}

/// The proven logits in a JSON report.
fn logits_json(logits: &ChainLogits, file: Option<&Path>) -> serde_json::Value {
    let against = logits.against_reference();
    json!({
        "positions": logits.positions,
        "vocabulary": logits.vocabulary,
        "predicted": logits.predicted,
        "file": file.map(|p| p.display().to_string()),
        "same_next_tokens_as_float64": against.map(|(same, _)| same),
        "relative_l2_error": against.map(|(_, error)| error),
    })
}

/// What a chain's proof covers, in one sentence: with its token ids proven (a chain from
/// layer 0 proven from tokens) or from a committed first input, ending in proven logits (the
/// model's head) or in the last layer's hidden state; a chain of post-norm layers (BERT) ends
/// in its last layer's normed output, the model's final hidden state.
pub fn chain_scope(key: &ChainKey, tokens_proven: bool, logits_proven: bool) -> &'static str {
    if key.layers.iter().all(|k| k.quantization.post_norm.is_some()) {
        if tokens_proven {
            "proven: the token ids' embeddings (rows of the committed word table plus position rows holding the token type 0 row: one segment) as the first layer's H, their LayerNorm (layer 0's norm), then every layer of the range whole (attention, residual, LayerNorm, MLP, residual, LayerNorm), each layer's input X the previous layer's committed output, the last layer's output its LayerNorm's (for a model's last layer, the final hidden state)"
        } else {
            "proven: every layer of the range whole (attention, residual, LayerNorm, MLP, residual, LayerNorm), each layer's input X the previous layer's committed output, the last layer's output its LayerNorm's (for a model's last layer, the final hidden state); not proven: the chain's first input (a committed hidden state: from tokens, only a chain from layer 0 proves its embeddings)"
        }
    } else if logits_proven {
        "proven: the token ids' embeddings (rows of the committed embedding table, and position rows) as the first layer's input, every layer of the model whole (norms, attention, MLP, residuals), each layer's input the previous layer's committed output, the final norm and the logits (through the key's LM head: the embedding table, or a table of its own) of the positions shown; the hidden states stay committed"
    } else if tokens_proven {
        "proven: the token ids' embeddings (rows of the committed embedding table, and position rows) as the first layer's input, then every layer of the range whole (norms, attention, MLP, residuals), each layer's input the previous layer's committed output; not proven: the final norm and the logits"
    } else {
        "proven: every layer of the range whole (norms, attention, MLP, residuals), each layer's input the previous layer's committed output; not proven: the chain's first input (a committed hidden state: from tokens, only a chain from layer 0 proves its embeddings), the final norm and the logits"
    }
}

/// `zkmha verify --vk CHAIN_KEY --proof CHAIN_PROOF`.
///
/// # Errors
/// Missing or corrupt files, a statement other than the one expected (exit code 3), an
/// invalid chain (exit code 1).
pub fn verify(
    proof_path: &Path,
    key_path: &Path,
    expected: &zkmha_api::Expected,
    output: Option<&Path>,
    json_output: bool,
) -> Result<()> {
    let progress = Progress::step("reading and verifying the chain", json_output);
    let key: ChainKey = read_chain_key(key_path)?;
    let proof = ChainProof::read(proof_path)?;
    let verified = verify_chain_expecting(&key, &proof, expected)?;
    progress.finish();
    if let Some(path) = output {
        verified.write_npz(path)?;
    }
    let tokens_proven = verified.token_ids().is_some();
    let scope = chain_scope(&key, tokens_proven, verified.logits().is_some());
    let (rows, columns) = verified.output.shape();
    if json_output {
        let mut report = json!({
            "valid": true,
            "kind": if proof.is_zero_knowledge() { "zero-knowledge chain" } else { "chain" },
            "first_layer": key.first_layer,
            "layers": key.layers.len(),
            "tokens": verified.tokens,
            "model_width": key.layers.first().map(|k| k.model_width),
            "output": {"name": verified.output.name(), "rows": rows, "columns": columns, "blake3": verified.output_digest},
            "output_file": output.map(|p| p.display().to_string()),
            "verify_ms": verified.verify_time.as_secs_f64() * 1e3,
            "token_ids": verified.token_ids(),
            "logits": verified.logits().map(|l| logits_json(l, output)),
            "proven": scope,
        });
        if let Some(map) = report.as_object_mut() {
            map.insert("statement".into(), crate::report::statement_json(&verified));
        }
        println!("{report}");
        return Ok(());
    }
    println!(
        "valid: {} of {} linked into one inference on {} tokens ({}); verified in {:.1} ms",
        range_text(&key.layer_range()),
        key.layers.first().map(|k| sanitize(&k.description)).unwrap_or_default(),
        verified.tokens,
        verified.mode.name(),
        verified.verify_time.as_secs_f64() * 1e3
    );
    for line in crate::report::statement_lines(&verified) {
        println!("{line}");
    }
    match verified.logits() {
        Some(logits) => print_logits(logits),
        None => println!(
            "output {} ({rows} × {columns}): BLAKE3 {}",
            verified.output.name(),
            verified.output_digest
        ),
    }
    if let Some(path) = output {
        println!(
            "wrote the proven {} with its token ids and positions to {}",
            verified.output.name(),
            path.display()
        );
    }
    println!("{scope}");
    Ok(())
}

/// Whether `path` is a chain's proof file.
pub fn is_chain(path: &Path) -> bool {
    model_files::file_kind(path) == Some(model_files::FileKind::ChainProof)
}

/// `zkmha inspect` of the chain file kinds, as text.
pub fn print_inspection(inspection: &zkmha_api::inspect::Inspection) {
    use zkmha_api::inspect::Inspection;
    match inspection {
        Inspection::ChainProof(proof) => {
            println!(
                "{}chain proof: layers {}..{}, {} bytes of layer proofs (not verified: zkmha verify --vk checks it)",
                if proof.is_zero_knowledge() { "zero-knowledge " } else { "" },
                proof.first_layer(),
                proof.first_layer().saturating_add(proof.layers() as u64),
                proof.proof_bytes()
            );
            if let Some(ids) = proof.token_ids() {
                println!("  the first layer's input embeds the token ids {ids:?}");
            }
            if let Some((positions, logits)) = proof.logits() {
                println!("  the head's logits of positions {positions:?} ({} integers)", logits.len());
            }
            for (i, statement) in proof.statements().iter().enumerate() {
                let commitments: Vec<String> = zkmha_api::inspect::model_commitments(statement)
                    .into_iter()
                    .map(|(name, f)| format!("{name} {f}"))
                    .collect();
                println!(
                    "  layer {}: model commitment {}; {}",
                    proof.first_layer().saturating_add(i as u64),
                    zkmha_api::inspect::link_weight_commitments(statement)
                        .unwrap_or_else(|| "the key's (not in the proof)".into()),
                    commitments.join(", ")
                );
            }
        }
        Inspection::ChainKey(key) => {
            println!(
                "chain key: {}; its fingerprint {} (what zkmha verify shows as the verifier key's)",
                range_text(&key.layer_range()),
                zkmha_api::fingerprint(key.as_ref())
            );
            if let Some(e) = &key.embedding {
                println!(
                    "  embedding table: {} token rows{} × {} (commitment {})",
                    e.shape.token_rows,
                    if e.shape.position_rows > 0 {
                        format!(" + {} position rows", e.shape.position_rows)
                    } else {
                        String::new()
                    },
                    e.shape.model_width,
                    zkmha_api::fingerprint(&e.commitment)
                );
            }
            if let Some(h) = &key.head {
                let lm_head = match &h.lm_head {
                    None => "the LM head tied to the embedding table".to_string(),
                    Some(own) => format!(
                        "an LM head of its own ({} token rows at 2^({}), commitment {})",
                        own.table.shape.token_rows,
                        -own.fraction_bits,
                        zkmha_api::fingerprint(&own.table.commitment)
                    ),
                };
                println!(
                    "  head: the final norm ({}) and {lm_head}, logits at 2^({})",
                    if h.bias.is_some() { "LayerNorm" } else { "RMSNorm" },
                    -h.logit_fraction_bits()
                );
            }
            for (layer, k) in key.layer_range().zip(&key.layers) {
                println!(
                    "  layer {layer}: {} (commitment {})",
                    sanitize(&k.description),
                    zkmha_api::fingerprint(&k.commitment)
                );
            }
        }
        Inspection::ChainSecret(secret) => {
            println!(
                "chain secret (keep it private): the blinds of {} layers' commitments",
                secret.layers.len()
            );
        }
        _ => {}
    }
}
