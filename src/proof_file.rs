//! `zkmha prove` / `zkmha verify`: committed-mode proof files.
//!
//! File layout: the magic bytes `ZKMHA\0` (`ZKMHAZ` for a zero-knowledge proof), a
//! little-endian u32 file-format version, then the statement and the proof in arkworks'
//! compressed encoding.

use crate::layer::{ShapeArgs, random_inputs};
use crate::model_cli::{self, ModelArgs, ModelInputArgs};
use anyhow::{Context, Result, bail};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::path::PathBuf;
use std::time::Instant;
use zkmha_attention::{
    CommittedLayerProof, CommittedStatement, ZkLayerProof, hyrax_params_for, prove_layer_committed,
    prove_layer_zk, verify_layer_committed, verify_layer_zk, zk_hyrax_params_for,
};

const MAGIC: &[u8; 6] = b"ZKMHA\0";
/// The magic bytes of a zero-knowledge proof file.
const MAGIC_ZK: &[u8; 6] = b"ZKMHAZ";
/// The zero-knowledge proof file's format version (2: one relations proof per sum-check
/// instead of product proofs).
const FILE_VERSION_ZK: u32 = 2;
/// 2: sparse Hyrax commitments and the softmax proof with batched lookups; 3: one Hyrax layout
/// per layer, tiled softmax columns, one final opening for every committed polynomial.
/// 4: the layer proof carries the output value of a committed output (absent here).
const FILE_VERSION: u32 = 4;

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
    /// A zero-knowledge proof: Q, K, V (and the softmax's columns) committed with blinding,
    /// every sum-check and lookup masked, every claim committed (attention layers; not model
    /// layers yet).
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
    /// Print one JSON object (model-layer proofs).
    #[arg(long)]
    pub json: bool,
}

/// Proves a committed layer and writes the file.
///
/// # Errors
/// Impossible shapes or an unwritable file.
pub fn prove(args: &ProveArgs) -> Result<()> {
    if args.zk && args.model.model.is_some() {
        bail!(
            "--zk is not available for model layers yet: the projections and the proven softmax are not covered (docs/ZERO_KNOWLEDGE.md)"
        );
    }
    if args.model.model.is_some() {
        return model_cli::prove(
            &args.model,
            args.layer.heads,
            args.layer.mask,
            &args.model_input,
            &args.out,
        );
    }
    if args.model_input.input.is_some() || args.model_input.tokens.is_some() || args.model_input.vk.is_some()
    {
        bail!("--input, --tokens and --vk need --model FILE");
    }
    let shape = args.layer.shape()?;
    let inputs = random_inputs(&shape, args.layer.seed);
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
    std::fs::write(&args.out, &bytes).with_context(|| format!("could not write {}", args.out.display()))?;
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
    std::fs::write(&args.out, &bytes).with_context(|| format!("could not write {}", args.out.display()))?;
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

/// Verifies a zero-knowledge proof file's contents (after the magic bytes).
fn verify_zero_knowledge(path: &std::path::Path, rest: &[u8]) -> Result<()> {
    let (version, mut rest) = rest.split_at(4.min(rest.len()));
    let version = u32::from_le_bytes(version.try_into().unwrap_or([0; 4]));
    if version != FILE_VERSION_ZK {
        bail!(
            "{} has zero-knowledge file format version {version}; this zkmha reads version {FILE_VERSION_ZK}",
            path.display()
        );
    }
    let statement = CommittedStatement::deserialize_compressed(&mut rest)
        .map_err(|e| anyhow::anyhow!("{} is corrupt: the statement does not decode ({e})", path.display()))?;
    let proof = ZkLayerProof::deserialize_compressed(&mut rest)
        .map_err(|e| anyhow::anyhow!("{} is corrupt: the proof does not decode ({e})", path.display()))?;
    if !rest.is_empty() {
        bail!("{} is corrupt: {} unexpected bytes after the proof", path.display(), rest.len());
    }
    let start = Instant::now();
    let params = zk_hyrax_params_for(&statement.shape, statement.softmax)?;
    let setup = start.elapsed();
    let start = Instant::now();
    verify_layer_zk(&params, &statement, &proof).map_err(|e| anyhow::anyhow!("the proof is invalid: {e}"))?;
    let s = &statement.shape;
    println!(
        "valid (zero-knowledge proof): attention layer s = {}, h = {}, m = {}, m_v = {}, mask = {} ({})",
        s.seq_len,
        s.heads,
        s.head_dim,
        s.value_head_dim,
        statement.mask,
        softmax_words(statement.softmax)
    );
    println!(
        "verified in {:.2} ms (+ {:.2} ms deriving the generators)",
        start.elapsed().as_secs_f64() * 1e3,
        setup.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Reads a proof file and verifies it without the inputs.
///
/// # Errors
/// A missing, foreign or corrupt file, or a proof that does not verify (one sentence each).
pub fn verify(args: &VerifyArgs) -> Result<()> {
    match (&args.vk, model_cli::is_model_proof(&args.proof)) {
        (Some(vk), true) => return model_cli::verify(&args.proof, vk, args.json),
        (None, true) => {
            bail!("{} is a model-layer proof: pass the model's verifier key with --vk", args.proof.display())
        }
        (Some(_), false) => bail!("{} is not a model-layer proof: it needs no --vk", args.proof.display()),
        (None, false) => {}
    }
    let bytes =
        std::fs::read(&args.proof).with_context(|| format!("could not read {}", args.proof.display()))?;
    if let Some(rest) = bytes.strip_prefix(MAGIC_ZK) {
        return verify_zero_knowledge(&args.proof, rest);
    }
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        bail!("{} is not a zkmha proof file", args.proof.display());
    };
    let (version, mut rest) = rest.split_at(4.min(rest.len()));
    let version = u32::from_le_bytes(version.try_into().unwrap_or([0; 4]));
    if version != FILE_VERSION {
        bail!(
            "{} has file format version {version}; this zkmha reads version {FILE_VERSION}",
            args.proof.display()
        );
    }
    let statement = CommittedStatement::deserialize_compressed(&mut rest).map_err(|e| {
        anyhow::anyhow!("{} is corrupt: the statement does not decode ({e})", args.proof.display())
    })?;
    let proof = CommittedLayerProof::deserialize_compressed(&mut rest).map_err(|e| {
        anyhow::anyhow!("{} is corrupt: the proof does not decode ({e})", args.proof.display())
    })?;
    if !rest.is_empty() {
        bail!("{} is corrupt: {} unexpected bytes after the proof", args.proof.display(), rest.len());
    }
    let start = Instant::now();
    let params = hyrax_params_for(&statement.shape, statement.softmax);
    let setup = start.elapsed();
    let timings = verify_layer_committed(&params, &statement, &proof)
        .map_err(|e| anyhow::anyhow!("the proof is invalid: {e}"))?;
    let s = &statement.shape;
    println!(
        "valid: attention layer s = {}, h = {}, m = {}, m_v = {}, mask = {} ({})",
        s.seq_len,
        s.heads,
        s.head_dim,
        s.value_head_dim,
        statement.mask,
        if statement.softmax.is_proven() {
            "softmax proven in fixed point"
        } else {
            "softmax not proven: linear attention"
        }
    );
    println!(
        "verified in {:.2} ms (+ {:.2} ms hashing and evaluating the public output, {:.2} ms deriving the generators)",
        timings.protocol.as_secs_f64() * 1e3,
        timings.public_evaluations.as_secs_f64() * 1e3,
        setup.as_secs_f64() * 1e3
    );
    Ok(())
}
