//! `zkmha prove` / `zkmha verify`: committed-mode proof files.
//!
//! The files' layout and reading (the statement checked before the proof is decoded, the
//! decoded size bounded): `zkmha_api::layer_files`. `verify` checks the softmax
//! ([`crate::report`]), derives the generators and verifies, and prints what it accepted.

use crate::attention_input::read_attention_inputs;
use crate::layer::{ShapeArgs, random_inputs};
use crate::model_cli::{self, ModelArgs, ModelInputArgs};
use crate::progress::Progress;
use crate::report::{self, Accepted, Kind, SoftmaxSource, SoftmaxSpec};
use crate::verdict::{Usage, Verdict};
use anyhow::{Context, Result, bail};
use ark_serialize::CanonicalSerialize;
use std::path::{Path, PathBuf};
use zkmha_api::attention_layer::{Expected, Hiding, prove_attention, verify_attention};
use zkmha_api::layer_files::{LayerProof, attention_output_integers};
use zkmha_attention::CommittedStatement;

/// Options of `zkmha prove`.
#[derive(clap::Args, Debug, Clone)]
pub struct ProveArgs {
    /// Shape, mask and inputs of a random layer (without --model); --heads and --mask also
    /// apply to a model.
    #[command(flatten)]
    pub layer: ShapeArgs,
    /// A model file's attention layer instead of a random one.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The model layer's input and verifier key.
    #[command(flatten)]
    pub model_input: ModelInputArgs,
    /// Where to write the proof file (not with --dry-run, which proves nothing).
    #[arg(long, required_unless_present = "dry_run")]
    pub out: Option<PathBuf>,
    /// A zero-knowledge proof of an attention layer: Q, K, V (and the softmax's columns)
    /// committed with blinding, every sum-check and lookup masked, every claim committed.
    /// Model layers (--model) are zero-knowledge without it (--transparent for plain ones).
    #[arg(long)]
    pub zk: bool,
}

/// Options of `zkmha verify`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerifyArgs {
    /// The proof file written by `zkmha prove`.
    #[arg(long)]
    pub proof: PathBuf,
    /// The verifier key of a model-layer proof (from `zkmha commit-model`).
    #[arg(long)]
    pub vk: Option<PathBuf>,
    /// Print what was accepted as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Accept this softmax instead of the default for the proof's shape (for a model layer:
    /// the verifier key's): `linear`, or
    /// `multiplier=M,shift=K,exponent_bits=G,output_bits=F,tolerance_bits=T` as verify prints
    /// it. A proof with another softmax is refused (exit code 3).
    #[arg(long, value_parser = report::parse_softmax_spec)]
    pub softmax_params: Option<SoftmaxSpec>,
    /// Where to write the proven output once the proof is valid, with what it is about, as one
    /// .npz (`numpy.load`): `output` — an attention layer's O (int64, s × h·m_v), a model
    /// layer's H' or Z (float64, s × d_model), a chain with a head its logits (float64,
    /// positions × vocabulary) — with `token_ids` when the input is proven from token ids and
    /// `positions` with logits. Nothing is written for a proof that is not valid.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Refuse the proof (exit code 3) unless it is proven from these token ids,
    /// comma-separated: only a chain from layer 0 whose key holds the embedding table proves
    /// its tokens, so any other proof is refused.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "text",
        help_heading = "What the proof must be about"
    )]
    pub tokens: Option<Vec<u64>>,
    /// Refuse the proof (exit code 3) unless it is proven from this text's token ids, by the
    /// tokenizer of --model.
    #[arg(long, requires = "model", help_heading = "What the proof must be about")]
    pub text: Option<String>,
    /// The model file whose tokenizer reads --text (nothing else is read from it).
    #[arg(long, requires = "text", help_heading = "What the proof must be about")]
    pub model: Option<PathBuf>,
    /// Refuse the proof (exit code 3) unless it proves the logits of these positions,
    /// comma-separated (the last token's by default when proven with `prove --layers all`).
    #[arg(long, value_delimiter = ',', help_heading = "What the proof must be about")]
    pub positions: Option<Vec<u64>>,
    /// Refuse the proof (exit code 3) unless it covers the model's layers A..B (a chain: a
    /// single layer's key does not say which layer it is).
    #[arg(long, value_parser = parse_expected_layers, help_heading = "What the proof must be about")]
    pub layers: Option<std::ops::Range<u64>>,
}

/// `--layers A..B` of `zkmha verify`: a range of the model's layers (not `all`: a verifier
/// names what it expects).
fn parse_expected_layers(text: &str) -> Result<std::ops::Range<u64>, String> {
    if text.trim() == "all" {
        return Err(
            "verify --layers names the layers expected, A..B: the key says how many a model has".into()
        );
    }
    let range = crate::chain_cli::parse_layers(text)?;
    Ok(range.start as u64..range.end as u64)
}

impl VerifyArgs {
    /// What the caller expects of the proof (the text tokenized by --model's tokenizer).
    ///
    /// # Errors
    /// A model file that cannot be read or has no tokenizer.
    fn expected(&self) -> Result<zkmha_api::Expected> {
        let tokens = match (&self.tokens, &self.text, &self.model) {
            (Some(ids), _, _) => Some(ids.clone()),
            (None, Some(text), Some(model)) => Some(zkmha_api::verified::text_tokens(model, text)?),
            _ => None,
        };
        Ok(zkmha_api::Expected { tokens, positions: self.positions.clone(), layers: self.layers.clone() })
    }
}

/// Proves a committed layer and writes the file.
///
/// # Errors
/// Impossible shapes or an unwritable file; options the mode ignores ([`Usage`]).
pub fn prove(args: &ProveArgs) -> Result<()> {
    let extra = &args.model_input;
    if args.model.model.is_some() {
        let ignored = args.layer.attention_only_options();
        if !ignored.is_empty() {
            bail!(Usage(format!(
                "{} {} an attention layer of its own; a model layer (--model) takes its shape and softmax from the model and its input from --input, --tokens or --text: leave {} out",
                ignored.join(", "),
                if ignored.len() == 1 { "shapes or draws" } else { "shape or draw" },
                if ignored.len() == 1 { "it" } else { "them" }
            )));
        }
        if extra.dry_run {
            let layers = args.model.layers.clone().ok_or_else(|| Usage("--dry-run needs --layers".into()))?;
            return crate::chain_cli::dry_run(
                &args.model,
                args.layer.heads,
                args.layer.mask,
                args.layer.max_memory,
                extra,
                layers,
            );
        }
    }
    // Required by clap but with --dry-run, which proves nothing (a model's chain) or is refused
    // below (an attention layer).
    let out = args.out.as_deref();
    if let (Some(out), true) = (out, args.model.model.is_some()) {
        // Model layers are zero-knowledge by default (--zk says so again); --transparent
        // asks for the plain mode.
        return model_cli::prove(
            &args.model,
            args.layer.heads,
            args.layer.mask,
            args.layer.max_memory,
            &args.model_input,
            out,
        );
    }
    let model_only: Vec<&str> = [
        ("--layer", args.model.layer.is_some()),
        ("--layers", args.model.layers.is_some()),
        ("--family", args.model.family.is_some()),
        ("--tokens", extra.tokens.is_some()),
        ("--text", extra.text.is_some()),
        ("--vk", extra.vk.is_some()),
        ("--secret", extra.secret.is_some()),
        ("--transparent", extra.transparent),
        ("--dry-run", extra.dry_run),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect();
    if !model_only.is_empty() {
        bail!(Usage(format!(
            "{} {} to model layers, which need --model FILE (an attention layer takes its Q, K, V with --input, and is plain unless --zk)",
            model_only.join(", "),
            if model_only.len() == 1 { "applies" } else { "apply" }
        )));
    }
    let Some(out) = out else {
        bail!(Usage("--out: where to write the proof".into()));
    };
    let reads: Vec<(&str, &Path)> = extra.input.iter().map(|input| ("--input", input.as_path())).collect();
    let mut writes = vec![("--out", out)];
    writes.extend(extra.output.as_deref().map(|output| ("--output", output)));
    zkmha_api::files::check_distinct_files(&reads, &writes)?;
    let (shape, inputs, source) = match &extra.input {
        Some(path) => {
            if args.layer.seed.is_some() {
                bail!(Usage("--seed draws random inputs and --input gives them: pass one of the two".into()));
            }
            let l = &args.layer;
            let (shape, inputs) =
                read_attention_inputs(path, l.heads(), l.head_dim(), l.value_head_dim(), l.seq)?;
            (shape, inputs, Inputs::File(path.clone()))
        }
        None => {
            let shape = args.layer.shape()?;
            let (inputs, source) = match (args.zk, args.layer.seed) {
                // Hidden inputs must not be reproducible from a public seed.
                (true, None) => {
                    let mut rng = zkmha_zk::secure_rng()
                        .context("the operating system gave no randomness for the inputs")?;
                    (crate::layer::random_inputs_from(&shape, &mut rng), Inputs::OperatingSystem)
                }
                (_, seed) => {
                    let seed = seed.unwrap_or(1);
                    (random_inputs(&shape, seed), Inputs::Seed(seed))
                }
            };
            if args.zk && args.layer.seed.is_some() {
                eprintln!(
                    "warning: --seed makes the hidden inputs reproducible by anyone who knows it; without it \
                     they come from the operating system's randomness"
                );
            }
            (shape, inputs, source)
        }
    };
    let hiding = if args.zk { Hiding::ZeroKnowledge } else { Hiding::Plain };
    let estimate = args.layer.check_memory(&shape, hiding)?;
    let _span = tracing::info_span!(
        "prove_layer",
        seq = shape.seq_len,
        heads = shape.heads,
        zero_knowledge = args.zk
    )
    .entered();
    if !extra.json {
        println!("{}", source.describe());
    }
    let softmax = args.layer.softmax_mode(&shape)?;
    let progress =
        Progress::step(&format!("proving the attention layer ({})", estimate.describe()), extra.json);
    let proved = prove_attention(&shape, args.layer.mask(), softmax, &inputs, hiding)?;
    progress.finish();
    let elapsed = proved.elapsed;
    zkmha_api::files::write_file(out, &proved.encoded.bytes)?;
    if let Some(path) = &extra.output {
        write_attention_output(path, proved.file.statement())?;
    }
    let statement = proved.file.statement();
    let (statement_bytes, proof_bytes) =
        (proved.encoded.statement_bytes, proved.encoded.bytes.len() - proved.encoded.statement_bytes);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if extra.json {
        let c = &statement.commitments;
        println!(
            "{}",
            serde_json::json!({
                "kind": if args.zk { Kind::ZeroKnowledgeLayer.name() } else { Kind::Layer.name() },
                "zero_knowledge": args.zk,
                "proof": out.display().to_string(),
                "statement_bytes": statement_bytes,
                "proof_bytes": proof_bytes,
                "inputs": source.json(),
                "seq": shape.seq_len, "heads": shape.heads, "head_dim": shape.head_dim,
                "value_head_dim": shape.value_head_dim,
                "mask": statement.mask.to_string(),
                "softmax_proven": softmax.is_proven(),
                "softmax": report::softmax_spec(softmax),
                "estimate": estimate.to_json(),
                "prove_ms": ms(elapsed),
                "commitments": {
                    "Q": report::fingerprint(&c.queries),
                    "K": report::fingerprint(&c.keys),
                    "V": report::fingerprint(&c.values),
                },
                "output": {
                    "name": "O", "rows": shape.seq_len, "columns": shape.value_model_width(),
                    "blake3": report::fingerprint(&statement.output),
                    "file": extra.output.as_ref().map(|p| p.display().to_string()),
                },
            })
        );
        return Ok(());
    }
    match (&proved.timings, args.zk) {
        (Some(timings), false) => {
            let sub_protocols =
                timings.unpadding + timings.attention_values + timings.masking + timings.qk + timings.padding;
            println!(
                "proved in {:.1} ms: forward pass {:.1} ms, statement {:.1} ms, attention sub-protocols {:.1} ms, \
                 softmax commitments {:.1} ms, softmax proof {:.1} ms (lookups {:.1}, sum-check {:.1}), \
                 commit to Q, K, V {:.1} ms, openings (softmax columns and Q, K, V in one) {:.1} ms; {}",
                ms(elapsed),
                ms(timings.witness),
                ms(timings.statement),
                ms(sub_protocols),
                ms(timings.softmax_commit),
                ms(timings.softmax),
                ms(timings.softmax_stages.lookups),
                ms(timings.softmax_stages.sumcheck),
                ms(timings.commit),
                ms(timings.open),
                if softmax.is_proven() {
                    "softmax proven (fixed point, lookups)"
                } else {
                    "softmax not proven (linear attention)"
                }
            );
            println!("{}", model_cli::NOT_ZERO_KNOWLEDGE);
            println!(
                "wrote {}: statement {} bytes (commitments to Q, K, V and the output), proof {} bytes",
                out.display(),
                statement_bytes,
                proof_bytes
            );
        }
        _ => {
            println!(
                "proved in {:.1} ms (zero knowledge: Q, K, V committed with blinding, every sum-check masked, every claim committed; {})",
                ms(elapsed),
                softmax_words(softmax)
            );
            println!(
                "wrote {}: statement {} bytes (hiding commitments to Q, K, V and the output), proof {} bytes",
                out.display(),
                statement_bytes,
                proof_bytes
            );
        }
    }
    if let Some(path) = &extra.output {
        println!(
            "wrote the output O ({} × {}, int64) to {}",
            shape.seq_len,
            shape.value_model_width(),
            path.display()
        );
    }
    Ok(())
}

/// Where an attention layer's Q, K, V came from.
enum Inputs {
    /// `--input FILE`.
    File(PathBuf),
    /// Random, from a public seed.
    Seed(u64),
    /// Random, from the operating system (`--zk` without `--seed`).
    OperatingSystem,
}

impl Inputs {
    fn describe(&self) -> String {
        match self {
            Inputs::File(path) => format!("inputs: Q, K, V from {}", path.display()),
            Inputs::Seed(seed) => {
                format!("inputs: random, seed {seed} (a demo: pass --input FILE for your own Q, K, V)")
            }
            Inputs::OperatingSystem => "inputs: random, from the operating system's randomness (a demo: pass --input FILE for your own Q, K, V)".into(),
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            Inputs::File(path) => serde_json::json!({"source": "file", "file": path.display().to_string()}),
            Inputs::Seed(seed) => serde_json::json!({"source": "seed", "seed": seed}),
            Inputs::OperatingSystem => serde_json::json!({"source": "operating system randomness"}),
        }
    }
}

/// Writes an attention layer's output O (s × h·m_v, int64) as a .npy file.
fn write_attention_output(path: &Path, statement: &CommittedStatement) -> Result<()> {
    let values = attention_output_integers(statement)?;
    Ok(zkmha_api::files::write_npy(
        path,
        statement.shape.seq_len,
        statement.shape.value_model_width(),
        &values,
    )?)
}

/// What a zero-knowledge proof covers of the softmax.
fn softmax_words(softmax: zkmha_attention::SoftmaxMode) -> &'static str {
    if softmax.is_proven() {
        "softmax proven in zero knowledge: its lookups and columns masked and committed"
    } else {
        "softmax not proven: linear attention"
    }
}

/// The statement's commitments and output, as verify shows them.
fn attention_report(
    kind: Kind,
    statement: &CommittedStatement,
    softmax_source: SoftmaxSource,
    verify_ms: f64,
    setup_ms: f64,
) -> Accepted {
    let s = &statement.shape;
    Accepted {
        kind,
        shape: *s,
        model: None,
        mask: statement.mask,
        softmax: statement.softmax,
        softmax_source,
        commitments: zkmha_api::inspect::layer_commitments(statement),
        output: ("O", s.seq_len, s.value_model_width(), report::fingerprint(&statement.output)),
        verify_ms,
        setup_ms: Some(setup_ms),
        output_file: None,
        statement: None,
    }
}

/// Reads a proof file and verifies it without the inputs; prints what it accepted.
///
/// # Errors
/// A missing, foreign, corrupt or over-the-limits file (exit code 2), a softmax that is not
/// the expected one ([`Verdict::Refused`], exit code 3), a proof that does not verify
/// ([`Verdict::Invalid`], exit code 1); one sentence each.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    let named = args.softmax_params.as_ref();
    if let Some(output) = &args.output {
        let mut reads = vec![("--proof", args.proof.as_path())];
        reads.extend(args.vk.as_deref().map(|vk| ("--vk", vk)));
        reads.extend(args.model.as_deref().map(|model| ("--model", model)));
        zkmha_api::files::check_distinct_files(&reads, &[("--output", output)])?;
        if output.extension().and_then(|e| e.to_str()) != Some("npz") {
            bail!(Usage(format!(
                "--output writes the proven output with what it is about (its token ids and positions) as one .npz file: name it with .npz, not {}",
                output.display()
            )));
        }
    }
    let expected = args.expected()?;
    if crate::chain_cli::is_chain(&args.proof) {
        let Some(vk) = &args.vk else {
            bail!(Usage(format!(
                "{} is a chain's proof: pass the chain key with --vk",
                args.proof.display()
            )));
        };
        if named.is_some() {
            bail!(Usage(
                "--softmax-params names one layer's softmax: a chain's keys fix each layer's".into()
            ));
        }
        return crate::chain_cli::verify(&args.proof, vk, &expected, args.output.as_deref(), args.json);
    }
    match (&args.vk, zkmha_api::model_files::is_model_proof(&args.proof)) {
        (Some(vk), true) => {
            return model_cli::verify(&args.proof, vk, named, &expected, args.output.as_deref(), args.json);
        }
        (None, true) => {
            bail!(Usage(format!(
                "{} is a model-layer proof: pass the model's verifier key with --vk",
                args.proof.display()
            )))
        }
        // A file that cannot be read is reported by the reader below, not as a usage mistake.
        (Some(_), false) if args.proof.is_file() => {
            bail!(Usage(format!("{} is not a model-layer proof: it needs no --vk", args.proof.display())))
        }
        (Some(_), false) => {}
        (None, false) => {}
    }
    let file = LayerProof::read(&args.proof)?;
    let statement = file.statement();
    let source = report::accept_softmax(
        statement.softmax,
        zkmha_api::attention_layer::default_softmax(&statement.shape)?,
        SoftmaxSource::Default,
        named,
    )?;
    let kind = if file.is_zero_knowledge() { Kind::ZeroKnowledgeLayer } else { Kind::Layer };
    let progress = Progress::step("verifying the attention layer", args.json);
    // The softmax is accepted above (with the CLI's sentences and exit code 3).
    let shape_expected = Expected { softmax: Some(statement.softmax), ..Expected::default() };
    let verified = match verify_attention(&file, &shape_expected) {
        Err(zkmha_api::Error::InvalidProof { error }) => {
            bail!(Verdict::Invalid(format!("invalid: the proof does not verify ({error})")))
        }
        verified => verified?,
    };
    progress.finish();
    // An attention layer's inputs are committed Q, K, V: token ids or logits expected refuse it.
    verified.verified.check(&expected)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut report =
        attention_report(kind, statement, source, ms(verified.verified.verify_time), ms(verified.setup));
    if let Some(path) = &args.output {
        verified.verified.write_npz(path)?;
        report.output_file = Some(path.display().to_string());
    }
    report.statement = Some(verified.verified);
    report.print(args.json);
    Ok(())
}

/// `zkmha inspect` of an attention-layer proof, as text: the statement (shape, mask, softmax,
/// the fingerprints of Q, K, V and the output's digest, as `verify` shows them) and the sizes;
/// nothing is verified.
pub fn print_layer_inspection(file: &LayerProof) {
    let kind = if file.is_zero_knowledge() { Kind::ZeroKnowledgeLayer } else { Kind::Layer };
    let statement = file.statement();
    let s = &statement.shape;
    println!(
        "{} proof (not verified: zkmha verify checks it): {} tokens, {} heads of {} (values {}), mask {}, softmax {}",
        kind.name(),
        s.seq_len,
        s.heads,
        s.head_dim,
        s.value_head_dim,
        statement.mask,
        report::softmax_spec(statement.softmax)
    );
    let shown: Vec<String> = zkmha_api::inspect::layer_commitments(statement)
        .iter()
        .map(|(name, f)| format!("{name} {f}"))
        .collect();
    println!("commitments: {}", shown.join(", "));
    println!(
        "output O ({} × {}): BLAKE3 {}",
        s.seq_len,
        s.value_model_width(),
        report::fingerprint(&statement.output)
    );
    println!("statement: {} bytes; proof: {} bytes", statement.compressed_size(), file.proof_bytes());
}
