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
use crate::verdict::Verdict;
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
const FILE_VERSION_ZK: u32 = 4;
/// 2: sparse Hyrax commitments and the softmax proof with batched lookups; 3: one Hyrax layout
/// per layer, tiled softmax columns, one final opening for every committed polynomial.
/// 4: the layer proof carries the output value of a committed output (absent here).
/// 5: Hyrax rows absorbed, V's padding over its rows (the trust issue).
/// 6: the one layer driver's proof, `LayerProof<Plain>`, and the lookups written once.
const FILE_VERSION: u32 = 6;

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
}

/// Proves a committed layer and writes the file.
///
/// # Errors
/// Impossible shapes or an unwritable file.
pub fn prove(args: &ProveArgs) -> Result<()> {
    if args.model.model.is_some() {
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
    let extra = &args.model_input;
    if extra.transparent {
        bail!("--transparent applies to model layers (--model); an attention layer is plain unless --zk");
    }
    if extra.tokens.is_some() || extra.text.is_some() || extra.vk.is_some() {
        bail!(
            "--tokens, --text and --vk need --model FILE (an attention layer takes its Q, K, V with --input)"
        );
    }
    let (shape, inputs) = match &extra.input {
        Some(path) => {
            if args.layer.seed.is_some() {
                bail!("--seed draws random inputs and --input gives them: pass one of the two");
            }
            let l = &args.layer;
            let read = read_attention_inputs(path, l.heads(), l.head_dim, l.value_head_dim(), l.seq)?;
            println!("inputs: Q, K, V from {}", path.display());
            read
        }
        None => {
            let shape = args.layer.shape()?;
            let inputs = match (args.zk, args.layer.seed) {
                // Hidden inputs must not be reproducible from a public seed.
                (true, None) => {
                    let mut rng = zkmha_zk::secure_rng()
                        .context("the operating system gave no randomness for the inputs")?;
                    crate::layer::random_inputs_from(&shape, &mut rng)
                }
                (_, seed) => random_inputs(&shape, seed.unwrap_or(1)),
            };
            if args.zk && args.layer.seed.is_some() {
                eprintln!(
                    "warning: --seed makes the hidden inputs reproducible by anyone who knows it; without it \
                     they come from the operating system's randomness"
                );
            }
            match (args.zk, args.layer.seed) {
                (true, None) => println!(
                    "inputs: random, from the operating system's randomness (a demo: pass --input FILE for your own Q, K, V)"
                ),
                (_, seed) => println!(
                    "inputs: random, seed {} (a demo: pass --input FILE for your own Q, K, V)",
                    seed.unwrap_or(1)
                ),
            }
            (shape, inputs)
        }
    };
    let start = Instant::now();
    let softmax = args.layer.softmax_mode(&shape)?;
    if args.zk {
        return prove_zero_knowledge(args, &shape, softmax, &inputs, start);
    }
    let params = hyrax_params_for(&shape, softmax);
    let (statement, proof, timings) =
        prove_layer_committed(&params, &shape, args.layer.mask(), softmax, &inputs)?;
    let mut bytes = Vec::with_capacity(1 << 20);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FILE_VERSION.to_le_bytes());
    statement.serialize_compressed(&mut bytes).context("could not encode the statement")?;
    let statement_bytes = bytes.len();
    proof.serialize_compressed(&mut bytes).context("could not encode the proof")?;
    crate::files::write_file(&args.out, &bytes)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let sub_protocols =
        timings.unpadding + timings.attention_values + timings.masking + timings.qk + timings.padding;
    println!(
        "proved in {:.1} ms: forward pass {:.1} ms, statement {:.1} ms, attention sub-protocols {:.1} ms, \
         softmax commitments {:.1} ms, softmax proof {:.1} ms (lookups {:.1}, sum-check {:.1}), \
         commit to Q, K, V {:.1} ms, openings (softmax columns and Q, K, V in one) {:.1} ms; {}",
        ms(start.elapsed()),
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
        bytes.len() - statement_bytes
    );
    Ok(())
}

/// `zkmha prove --zk`: the zero-knowledge committed layer.
fn prove_zero_knowledge(
    args: &ProveArgs,
    shape: &zkmha_attention::AttentionShape,
    softmax: zkmha_attention::SoftmaxMode,
    inputs: &zkmha_attention::AttentionInputs,
    start: Instant,
) -> Result<()> {
    let params = zk_hyrax_params_for(shape, softmax)?;
    let mut rng = zkmha_zk::secure_rng().context("the operating system gave no randomness for the masks")?;
    let (statement, proof) = prove_layer_zk(&params, shape, args.layer.mask(), softmax, inputs, &mut rng)?;
    let elapsed = start.elapsed();
    let mut bytes = Vec::with_capacity(1 << 20);
    bytes.extend_from_slice(MAGIC_ZK);
    bytes.extend_from_slice(&FILE_VERSION_ZK.to_le_bytes());
    statement.serialize_compressed(&mut bytes).context("could not encode the statement")?;
    let statement_bytes = bytes.len();
    proof.serialize_compressed(&mut bytes).context("could not encode the proof")?;
    crate::files::write_file(&args.out, &bytes)?;
    println!(
        "proved in {:.1} ms (zero knowledge: Q, K, V committed with blinding, every sum-check masked, every claim committed; {})",
        elapsed.as_secs_f64() * 1e3,
        softmax_words(softmax)
    );
    println!(
        "wrote {}: statement {} bytes (hiding commitments to Q, K, V and the output), proof {} bytes",
        args.out.display(),
        statement_bytes,
        bytes.len() - statement_bytes
    );
    Ok(())
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
    match (&args.vk, model_cli::is_model_proof(&args.proof)) {
        (Some(vk), true) => return model_cli::verify(&args.proof, vk, named, args.json),
        (None, true) => {
            bail!("{} is a model-layer proof: pass the model's verifier key with --vk", args.proof.display())
        }
        (Some(_), false) => bail!("{} is not a model-layer proof: it needs no --vk", args.proof.display()),
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
    let report = match &file {
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
    report.print(args.json);
    Ok(())
}
