//! `zkmha prove` / `zkmha verify`: committed-mode proof files.
//!
//! File layout: the magic bytes `ZKMHA\0` (`ZKMHAZ` for a zero-knowledge proof), a
//! little-endian u32 file-format version, then the statement and the proof in arkworks'
//! compressed encoding.
//!
//! Reading a file ([`read_layer_file`]): the statement is decoded first and checked
//! (`CommittedStatement::validate`: the shape against the stated limits of
//! `zkmha_attention`'s shape module, the output's length, every commitment's size) before
//! the proof is decoded or any generator derived; arkworks' decoder grows a vector as its
//! items arrive (no allocation from a length prefix), commitments are capped per commitment
//! and per file ([`MAX_DECODED_ROWS`]), so a file decodes to at most a small multiple of its
//! length. `verify` then checks the softmax ([`crate::report`]), derives the generators and
//! verifies, and prints what it accepted.

use crate::attention_input::read_attention_inputs;
use crate::layer::{ShapeArgs, random_inputs};
use crate::layer::{SoftmaxChoice, softmax_mode};
use crate::model_cli::{self, ModelArgs, ModelInputArgs};
use crate::report::{self, Accepted, Kind, SoftmaxSource, SoftmaxSpec};
use crate::verdict::{Usage, Verdict};
use anyhow::{Context, Result, anyhow, bail};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkmha_attention::{
    AttentionShape, CommittedLayerProof, CommittedStatement, SoftmaxMode, ZkLayerProof, hyrax_params_for,
    prove_layer_committed, prove_layer_zk, verify_layer_committed, verify_layer_zk, zk_hyrax_params_for,
};

const MAGIC: &[u8; 6] = b"ZKMHA\0";
/// The magic bytes of a zero-knowledge proof file.
const MAGIC_ZK: &[u8; 6] = b"ZKMHAZ";
/// The zero-knowledge proof file's format version (2: one relations proof per sum-check
/// instead of product proofs; 3: every final response absorbed, V's padding over its rows;
/// 4: the one layer driver's proof, `LayerProof<Zk>`, and the lookups written once).
const FILE_VERSION_ZK: u32 = 5;
/// 2: sparse Hyrax commitments and the softmax proof with batched lookups; 3: one Hyrax layout
/// per layer, tiled softmax columns, one final opening for every committed polynomial.
/// 4: the layer proof carries the output value of a committed output (absent here).
/// 5: Hyrax rows absorbed, V's padding over its rows (the trust issue).
/// 6: the one layer driver's proof, `LayerProof<Plain>`, and the lookups written once.
const FILE_VERSION: u32 = 7;

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
    /// Where to write the proof file.
    #[arg(long)]
    pub out: PathBuf,
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
    /// Where to write the proven output once the proof is valid (.npy): an attention layer's
    /// O (int64, s × h·m_v), a model layer's Z (float64, s × d_model, as `prove --output`
    /// writes it). Nothing is written for a proof that is not valid.
    #[arg(long)]
    pub output: Option<PathBuf>,
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
        // Model layers are zero-knowledge by default (--zk says so again); --transparent
        // asks for the plain mode.
        return model_cli::prove(
            &args.model,
            args.layer.heads,
            args.layer.mask,
            &args.model_input,
            &args.out,
        );
    }
    let model_only: Vec<&str> = [
        ("--layer", args.model.layer.is_some()),
        ("--family", args.model.family.is_some()),
        ("--tokens", extra.tokens.is_some()),
        ("--text", extra.text.is_some()),
        ("--vk", extra.vk.is_some()),
        ("--secret", extra.secret.is_some()),
        ("--transparent", extra.transparent),
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
    if extra.output.as_ref().is_some_and(|o| model_cli::same_file(o, &args.out)) {
        bail!(Usage(
            "--out and --output name the same file: the output tensor would overwrite the proof".into()
        ));
    }
    if let (Some(input), Some(output)) = (&extra.input, &extra.output)
        && (model_cli::same_file(input, output) || model_cli::same_file(input, &args.out))
    {
        bail!(Usage(format!(
            "{} is read by this run and would be overwritten: write the proof and O elsewhere",
            input.display()
        )));
    }
    if let Some(input) = &extra.input
        && model_cli::same_file(input, &args.out)
    {
        bail!(Usage(format!(
            "{} is read by this run and would be overwritten: write the proof elsewhere",
            input.display()
        )));
    }
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
    if !extra.json {
        println!("{}", source.describe());
    }
    let start = Instant::now();
    let softmax = args.layer.softmax_mode(&shape)?;
    let proved = if args.zk {
        let params = zk_hyrax_params_for(&shape, softmax)?;
        let mut rng =
            zkmha_zk::secure_rng().context("the operating system gave no randomness for the masks")?;
        let (statement, proof) =
            prove_layer_zk(&params, &shape, args.layer.mask(), softmax, &inputs, &mut rng)?;
        encode_layer_file(MAGIC_ZK, FILE_VERSION_ZK, statement, &proof, None)?
    } else {
        let params = hyrax_params_for(&shape, softmax);
        let (statement, proof, timings) =
            prove_layer_committed(&params, &shape, args.layer.mask(), softmax, &inputs)?;
        encode_layer_file(MAGIC, FILE_VERSION, statement, &proof, Some(timings))?
    };
    let elapsed = start.elapsed();
    crate::files::write_file(&args.out, &proved.bytes)?;
    if let Some(path) = &extra.output {
        write_attention_output(path, &proved.statement)?;
    }
    let statement = &proved.statement;
    let (statement_bytes, proof_bytes) =
        (proved.statement_bytes, proved.bytes.len() - proved.statement_bytes);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if extra.json {
        let c = &statement.commitments;
        println!(
            "{}",
            serde_json::json!({
                "kind": if args.zk { Kind::ZeroKnowledgeLayer.name() } else { Kind::Layer.name() },
                "zero_knowledge": args.zk,
                "proof": args.out.display().to_string(),
                "statement_bytes": statement_bytes,
                "proof_bytes": proof_bytes,
                "inputs": source.json(),
                "seq": shape.seq_len, "heads": shape.heads, "head_dim": shape.head_dim,
                "value_head_dim": shape.value_head_dim,
                "mask": statement.mask.to_string(),
                "softmax_proven": softmax.is_proven(),
                "softmax": report::softmax_spec(softmax),
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
                args.out.display(),
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
                args.out.display(),
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

/// An encoded attention-layer proof file.
struct EncodedLayer {
    statement: CommittedStatement,
    bytes: Vec<u8>,
    statement_bytes: usize,
    timings: Option<zkmha_attention::ProverTimings>,
}

fn encode_layer_file<P: CanonicalSerialize>(
    magic: &[u8],
    version: u32,
    statement: CommittedStatement,
    proof: &P,
    timings: Option<zkmha_attention::ProverTimings>,
) -> Result<EncodedLayer> {
    let mut bytes = Vec::with_capacity(1 << 20);
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&version.to_le_bytes());
    statement.serialize_compressed(&mut bytes).context("could not encode the statement")?;
    let statement_bytes = bytes.len();
    proof.serialize_compressed(&mut bytes).context("could not encode the proof")?;
    Ok(EncodedLayer { statement, bytes, statement_bytes, timings })
}

/// The output O of an attention-layer statement as integers (each entry an integer, negative
/// ones as `p − |v|`).
///
/// # Errors
/// An entry outside the 64-bit integers (a statement no honest prover makes).
pub fn attention_output_integers(statement: &CommittedStatement) -> Result<Vec<i64>> {
    use zkmha_field::PrimeField;
    let half = zkmha_field::Fr::MODULUS_MINUS_ONE_DIV_TWO;
    let small = |x: zkmha_field::Fr| -> Option<i64> {
        let limbs = x.into_bigint();
        let words = limbs.as_ref();
        let (low, high) = words.split_first()?;
        (high.iter().all(|&w| w == 0) && *low <= i64::MAX as u64).then_some(*low as i64)
    };
    statement
        .output
        .iter()
        .map(|&x| {
            let value = if x.into_bigint() <= half { small(x) } else { small(-x).map(|v| -v) };
            value.ok_or_else(|| anyhow!("an output entry is not a 64-bit integer"))
        })
        .collect()
}

/// Writes an attention layer's output O (s × h·m_v, int64) as a .npy file.
fn write_attention_output(path: &Path, statement: &CommittedStatement) -> Result<()> {
    let values = attention_output_integers(statement)?;
    crate::files::write_npy(path, statement.shape.seq_len, statement.shape.value_model_width(), &values)
}

/// What a zero-knowledge proof covers of the softmax.
fn softmax_words(softmax: zkmha_attention::SoftmaxMode) -> &'static str {
    if softmax.is_proven() {
        "softmax proven in zero knowledge: its lookups and columns masked and committed"
    } else {
        "softmax not proven: linear attention"
    }
}

/// The most commitment rows one file may decode to in all (2^20 rows, 72 MiB of points):
/// an identity row costs one bitmap bit in a file but a 72-byte point in memory, so without
/// a total a file of sparse commitments would decode to ~600 times its length. A valid proof
/// of the largest shape within the stated limits (`zkmha_attention::MAX_TENSOR_VARS`) has
/// fewer than 2^19.
pub const MAX_DECODED_ROWS: u64 = 1 << 20;

/// Decodes one `T` from `rest` (advancing it); a decoding failure is "corrupt".
pub fn decode_part<T: CanonicalDeserialize>(rest: &mut &[u8], path: &Path, what: &str) -> Result<T> {
    T::deserialize_compressed(rest)
        .map_err(|e| anyhow!("{} is corrupt: the {what} does not decode ({e})", path.display()))
}

/// A decoded attention-layer proof file.
enum LayerFile {
    /// `zkmha prove --out`.
    Plain(CommittedStatement, Box<CommittedLayerProof>),
    /// `zkmha prove --zk --out`.
    ZeroKnowledge(CommittedStatement, Box<ZkLayerProof>),
}

/// Reads an attention-layer proof file: the statement is decoded and checked against the
/// stated limits and its own sizes before the proof is decoded; decoding allocates at most
/// the file's length times a small factor and [`MAX_DECODED_ROWS`] commitment rows.
fn read_layer_file(path: &Path) -> Result<LayerFile> {
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    let (zero_knowledge, rest) = if let Some(rest) = bytes.strip_prefix(MAGIC_ZK) {
        (true, rest)
    } else if let Some(rest) = bytes.strip_prefix(MAGIC) {
        (false, rest)
    } else {
        bail!("{} is not a zkmha proof file", path.display());
    };
    let (version, mut rest) = rest.split_at(4.min(rest.len()));
    let version = u32::from_le_bytes(version.try_into().unwrap_or([0; 4]));
    let (expected, words) = if zero_knowledge {
        (FILE_VERSION_ZK, "zero-knowledge file format")
    } else {
        (FILE_VERSION, "file format")
    };
    if version != expected {
        bail!("{} has {words} version {version}; this zkmha reads version {expected}", path.display());
    }
    zkmha_pcs::decode_with_row_budget(MAX_DECODED_ROWS, || {
        let statement: CommittedStatement = decode_part(&mut rest, path, "statement")?;
        let checked = if zero_knowledge { statement.validate_zk() } else { statement.validate() };
        checked.map_err(|e| {
            anyhow!("{} holds a statement this verifier does not accept: {e}", path.display())
        })?;
        let file = if zero_knowledge {
            LayerFile::ZeroKnowledge(statement, Box::new(decode_part(&mut rest, path, "proof")?))
        } else {
            LayerFile::Plain(statement, Box::new(decode_part(&mut rest, path, "proof")?))
        };
        if !rest.is_empty() {
            bail!("{} is corrupt: {} unexpected bytes after the proof", path.display(), rest.len());
        }
        Ok(file)
    })
}

/// The statement's commitments and output, as verify shows them.
fn attention_report(
    kind: Kind,
    statement: &CommittedStatement,
    softmax_source: SoftmaxSource,
    verify_ms: f64,
    setup_ms: f64,
) -> Accepted {
    let c = &statement.commitments;
    let s = &statement.shape;
    Accepted {
        kind,
        shape: *s,
        model: None,
        mask: statement.mask,
        softmax: statement.softmax,
        softmax_source,
        commitments: vec![
            ("Q", report::fingerprint(&c.queries)),
            ("K", report::fingerprint(&c.keys)),
            ("V", report::fingerprint(&c.values)),
        ],
        output: ("O", s.seq_len, s.value_model_width(), report::fingerprint(&statement.output)),
        verify_ms,
        setup_ms: Some(setup_ms),
        output_file: None,
    }
}

/// The softmax the CLI's prover chooses for `shape` (`zkmha prove` without --softmax or
/// --score-scale).
fn default_softmax(shape: &AttentionShape) -> Result<SoftmaxMode> {
    softmax_mode(shape, SoftmaxChoice::Exponential, None)
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
        for (input, flag) in [(Some(&args.proof), "--proof"), (args.vk.as_ref(), "--vk")] {
            if input.is_some_and(|input| model_cli::same_file(input, output)) {
                bail!(Usage(format!(
                    "--output and {flag} name the same file: the output would overwrite what verify reads"
                )));
            }
        }
    }
    match (&args.vk, model_cli::is_model_proof(&args.proof)) {
        (Some(vk), true) => {
            return model_cli::verify(&args.proof, vk, named, args.output.as_deref(), args.json);
        }
        (None, true) => {
            bail!(Usage(format!(
                "{} is a model-layer proof: pass the model's verifier key with --vk",
                args.proof.display()
            )))
        }
        (Some(_), false) => {
            bail!(Usage(format!("{} is not a model-layer proof: it needs no --vk", args.proof.display())))
        }
        (None, false) => {}
    }
    let file = read_layer_file(&args.proof)?;
    let (LayerFile::Plain(statement, _) | LayerFile::ZeroKnowledge(statement, _)) = &file;
    let source = report::accept_softmax(
        statement.softmax,
        default_softmax(&statement.shape)?,
        SoftmaxSource::Default,
        named,
    )?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut report = match &file {
        LayerFile::Plain(statement, proof) => {
            let start = Instant::now();
            let params = hyrax_params_for(&statement.shape, statement.softmax);
            let setup = start.elapsed();
            let timings = verify_layer_committed(&params, statement, proof)
                .map_err(|e| Verdict::Invalid(format!("invalid: the proof does not verify ({e})")))?;
            attention_report(
                Kind::Layer,
                statement,
                source,
                ms(timings.protocol + timings.public_evaluations),
                ms(setup),
            )
        }
        LayerFile::ZeroKnowledge(statement, proof) => {
            let start = Instant::now();
            let params = zk_hyrax_params_for(&statement.shape, statement.softmax)?;
            let setup = start.elapsed();
            let start = Instant::now();
            verify_layer_zk(&params, statement, proof)
                .map_err(|e| Verdict::Invalid(format!("invalid: the proof does not verify ({e})")))?;
            attention_report(Kind::ZeroKnowledgeLayer, statement, source, ms(start.elapsed()), ms(setup))
        }
    };
    if let Some(path) = &args.output {
        write_attention_output(path, statement)?;
        report.output_file = Some(path.display().to_string());
    }
    report.print(args.json);
    Ok(())
}

/// Whether `path` starts with the magic bytes of an attention-layer proof (either mode).
pub fn is_layer_proof(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 6];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok()
        && (&head == MAGIC || &head == MAGIC_ZK)
}

/// `zkmha inspect` of an attention-layer proof: the statement (shape, mask, softmax, the
/// fingerprints of Q, K, V and the output's digest, as `verify` shows them) and the sizes;
/// nothing is verified.
///
/// # Errors
/// A missing, foreign, corrupt or over-the-limits file.
pub fn inspect_layer(path: &Path, json: bool) -> Result<()> {
    let file = read_layer_file(path)?;
    let (kind, statement, proof_bytes) = match &file {
        LayerFile::Plain(statement, proof) => (Kind::Layer, statement, proof.compressed_size()),
        LayerFile::ZeroKnowledge(statement, proof) => {
            (Kind::ZeroKnowledgeLayer, statement, proof.compressed_size())
        }
    };
    let (s, c) = (&statement.shape, &statement.commitments);
    let fingerprints = [
        ("Q", report::fingerprint(&c.queries)),
        ("K", report::fingerprint(&c.keys)),
        ("V", report::fingerprint(&c.values)),
    ];
    let output = report::fingerprint(&statement.output);
    let statement_bytes = statement.compressed_size();
    if json {
        let commitments: serde_json::Map<String, serde_json::Value> =
            fingerprints.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        println!(
            "{}",
            serde_json::json!({
                "kind": format!("{} proof", kind.name()),
                "zero_knowledge": kind.is_zero_knowledge(),
                "verified": false,
                "tokens": s.seq_len, "heads": s.heads, "head_dim": s.head_dim,
                "value_head_dim": s.value_head_dim,
                "mask": statement.mask.to_string(),
                "softmax_proven": statement.softmax.is_proven(),
                "softmax": report::softmax_spec(statement.softmax),
                "commitments": commitments,
                "output": {"name": "O", "rows": s.seq_len, "columns": s.value_model_width(), "blake3": output},
                "statement_bytes": statement_bytes,
                "proof_bytes": proof_bytes,
            })
        );
        return Ok(());
    }
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
    let shown: Vec<String> = fingerprints.iter().map(|(name, f)| format!("{name} {f}")).collect();
    println!("commitments: {}", shown.join(", "));
    println!("output O ({} × {}): BLAKE3 {output}", s.seq_len, s.value_model_width());
    println!("statement: {statement_bytes} bytes; proof: {proof_bytes} bytes");
    Ok(())
}
