//! `zkmha layer`: prove and verify one multi-head attention layer on random integer inputs.

use anyhow::{Result, bail};
use ark_serialize::CanonicalSerialize;
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};
use zkmha_api::attention_layer::Hiding;
use zkmha_api::resources::Estimate;
use zkmha_attention::{
    AttentionInputs, AttentionShape, MaskKind, ProverTimings, SoftmaxMode, VerifierTimings, prove_layer,
    verify_layer,
};

/// The layer's shape, mask and inputs, shared by `zkmha layer` and `zkmha prove`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ShapeArgs {
    /// Tokens s (default 128; with --input, the file's).
    #[arg(long)]
    pub seq: Option<usize>,
    /// Heads h (default 8; with --model, the model's).
    #[arg(long)]
    pub heads: Option<usize>,
    /// Query/key head width m (default 64).
    #[arg(long)]
    pub head_dim: Option<usize>,
    /// Value head width m_v (defaults to the head width).
    #[arg(long)]
    pub value_head_dim: Option<usize>,
    /// Mask: causal (decoders), none (encoders) or sliding:W (causal, the W most recent tokens
    /// kept); default causal (with --model: none for BERT; for decoders causal, or the sliding
    /// window the model declares for the layer).
    #[arg(long, value_parser = parse_mask)]
    pub mask: Option<MaskKind>,
    /// Seed of the random inputs (ChaCha20; entries in −127..=127, like 8-bit quantized
    /// activations); default 1. `prove --zk` without it draws the inputs from the operating
    /// system's randomness instead: inputs from a public seed are no secret, since anyone can
    /// try seeds against the proof's public output.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Softmax: exp (fixed-point softmax, proven with lookups; the default) or linear (no
    /// softmax: linear attention, the softmax is not proven).
    #[arg(long, value_parser = parse_softmax)]
    pub softmax: Option<SoftmaxChoice>,
    /// Real exponent per unit of integer score (1/√m and the input scales included); by
    /// default one that gives the random inputs scores of standard deviation 4.
    #[arg(long)]
    pub score_scale: Option<f64>,
    /// The most memory the proof may use (e.g. 20G, 512M): a layer whose estimate from its
    /// shape exceeds it is refused before proving (exit code 6). Default: the machine's memory.
    #[arg(long, value_parser = zkmha_api::resources::parse_memory_size)]
    pub max_memory: Option<u64>,
}

/// The softmax choice on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxChoice {
    /// Fixed-point softmax, proven.
    Exponential,
    /// Linear attention (identity slot).
    Linear,
}

/// Parses `exp` or `linear`.
///
/// # Errors
/// Any other word.
pub fn parse_softmax(text: &str) -> Result<SoftmaxChoice, String> {
    match text {
        "exp" => Ok(SoftmaxChoice::Exponential),
        "linear" => Ok(SoftmaxChoice::Linear),
        other => Err(format!("unknown softmax '{other}': use exp or linear")),
    }
}

/// The softmax mode for `choice`.
///
/// # Errors
/// A score scale the fixed-point softmax cannot represent.
pub fn softmax_mode(
    shape: &AttentionShape,
    choice: SoftmaxChoice,
    score_scale: Option<f64>,
) -> Result<SoftmaxMode> {
    Ok(match choice {
        SoftmaxChoice::Linear => SoftmaxMode::Identity,
        SoftmaxChoice::Exponential => zkmha_api::attention_layer::exponential_softmax(shape, score_scale)?,
    })
}

impl ShapeArgs {
    /// The checked shape.
    ///
    /// # Errors
    /// Impossible shapes, as one sentence.
    pub fn shape(&self) -> Result<AttentionShape> {
        Ok(AttentionShape::new(self.seq(), self.heads(), self.head_dim(), self.value_head_dim())?)
    }

    /// `m` (64 unless given).
    pub fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(64)
    }

    /// The options given that shape or draw an attention layer of its own, which a model layer
    /// (`--model`) takes from the model instead: `--seq`, `--head-dim`, `--value-head-dim`,
    /// `--seed`, `--softmax`, `--score-scale`.
    pub fn attention_only_options(&self) -> Vec<&'static str> {
        [
            ("--seq", self.seq.is_some()),
            ("--head-dim", self.head_dim.is_some()),
            ("--value-head-dim", self.value_head_dim.is_some()),
            ("--seed", self.seed.is_some()),
            ("--softmax", self.softmax.is_some()),
            ("--score-scale", self.score_scale.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// `s` (128 unless given).
    pub fn seq(&self) -> usize {
        self.seq.unwrap_or(128)
    }

    /// `m_v` (the head width unless given).
    pub fn value_head_dim(&self) -> usize {
        self.value_head_dim.unwrap_or_else(|| self.head_dim())
    }

    /// `h` (8 unless given).
    pub fn heads(&self) -> usize {
        self.heads.unwrap_or(8)
    }

    /// The mask (causal unless given).
    pub fn mask(&self) -> MaskKind {
        self.mask.unwrap_or(MaskKind::Causal)
    }

    /// Refuses a layer of `shape` whose estimated memory exceeds `--max-memory` or the
    /// machine's memory; returns the estimate of its proof's time and memory.
    ///
    /// # Errors
    /// `zkmha_api::Error::MemoryEstimate` (exit code 6).
    pub fn check_memory(&self, shape: &AttentionShape, hiding: Hiding) -> Result<Estimate> {
        zkmha_api::resources::check_layer_memory(shape, self.max_memory)?;
        Ok(zkmha_api::resources::estimate_layer(shape, hiding))
    }

    /// The softmax mode these options ask for.
    ///
    /// # Errors
    /// As [`softmax_mode`].
    pub fn softmax_mode(&self, shape: &AttentionShape) -> Result<SoftmaxMode> {
        softmax_mode(shape, self.softmax.unwrap_or(SoftmaxChoice::Exponential), self.score_scale)
    }
}

/// Options of `zkmha layer`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LayerArgs {
    /// Shape, mask and inputs.
    #[command(flatten)]
    pub layer: ShapeArgs,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
}

pub use zkmha_api::parse_mask;

/// One proved-and-verified layer.
pub struct LayerRun {
    /// Prover stages.
    pub prover: ProverTimings,
    /// Verifier split.
    pub verifier: VerifierTimings,
    /// Serialized proof size.
    pub proof_bytes: usize,
}

/// Random integer inputs for `shape`.
pub fn random_inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
    random_inputs_from(shape, &mut ChaCha20Rng::seed_from_u64(seed))
}

/// Random inputs in −127..=127 drawn from `rng`.
pub fn random_inputs_from(shape: &AttentionShape, rng: &mut impl Rng) -> AttentionInputs {
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

/// Proves and verifies one layer.
///
/// # Errors
/// Invalid shapes, or a proof that does not verify (a bug).
pub fn run_layer(shape: AttentionShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Result<LayerRun> {
    run_layer_with_inputs(shape, mask, softmax, &random_inputs(&shape, seed))
}

/// Proves and verifies one layer on given inputs.
///
/// # Errors
/// Invalid inputs, or a proof that does not verify (a bug).
pub fn run_layer_with_inputs(
    shape: AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<LayerRun> {
    let (statement, proof, prover) = prove_layer(&shape, mask, softmax, inputs)?;
    let verifier = match verify_layer(&statement, &proof) {
        Ok(timings) => timings,
        Err(e) => bail!("the layer proof did not verify: {e}"),
    };
    Ok(LayerRun { prover, verifier, proof_bytes: proof.compressed_size() })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `zkmha layer`.
///
/// # Errors
/// Impossible shapes (one sentence), or a failed verification.
pub fn run(args: &LayerArgs) -> Result<()> {
    let shape = args.layer.shape()?;
    let estimate = args.layer.check_memory(&shape, Hiding::Plain)?;
    let _span =
        tracing::info_span!("layer", seq = shape.seq_len, heads = shape.heads, head_dim = shape.head_dim)
            .entered();
    let softmax = args.layer.softmax_mode(&shape)?;
    let start = Instant::now();
    let progress = crate::progress::Progress::step(
        &format!("proving ({}) and verifying the attention layer", estimate.describe()),
        args.json,
    );
    let run = run_layer(shape, args.layer.mask(), softmax, args.layer.seed.unwrap_or(1))?;
    progress.finish();
    let softmax_name = if softmax.is_proven() { "exp (proven)" } else { "identity (not proven)" };
    let wall = start.elapsed();
    let p = &run.prover;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "seq": shape.seq_len,
                "heads": shape.heads,
                "head_dim": shape.head_dim,
                "value_head_dim": shape.value_head_dim,
                "mask": args.layer.mask().to_string(),
                "softmax": softmax_name,
                "estimate": estimate.to_json(),
                "prove_ms": ms(p.total()),
                "witness_ms": ms(p.witness),
                "unpadding_ms": ms(p.unpadding),
                "softmax_v_ms": ms(p.attention_values),
                "softmax_commit_ms": ms(p.softmax_commit),
                "softmax_ms": ms(p.softmax),
                "masking_ms": ms(p.masking),
                "qk_ms": ms(p.qk),
                "padding_ms": ms(p.padding),
                "verify_ms": ms(run.verifier.protocol),
                "verify_public_inputs_ms": ms(run.verifier.public_evaluations),
                "proof_bytes": run.proof_bytes,
                "valid": true,
            })
        );
        return Ok(());
    }
    println!("zkmha {} — multi-head attention layer proof", env!("CARGO_PKG_VERSION"));
    println!(
        "layer: s = {} tokens, h = {} heads, m = {}, m_v = {}, d_model = {}, mask = {}, {} threads",
        shape.seq_len,
        shape.heads,
        shape.head_dim,
        shape.value_head_dim,
        shape.model_width(),
        args.layer.mask(),
        rayon::current_num_threads()
    );
    if let SoftmaxMode::Exponential(params) = softmax {
        println!(
            "proven: O = unpad(concat_h(softmax(mask(Q_h K_h^T)) · V_h)), softmax in fixed point: probabilities × 2^{}, \
             exponent resolution 2^-{}, rows sum to 1 ± {:.4}",
            params.output_bits,
            params.exponent_bits,
            params.tolerance() as f64 / params.one() as f64
        );
        println!("        (lookups); Q, K, V and O are public and the verifier reads them.");
    } else {
        println!(
            "proven: O = unpad(concat_h(mask(Q_h K_h^T) · V_h)) — linear attention. Softmax is NOT proven"
        );
        println!("        (--softmax linear); Q, K, V and O are public and the verifier reads them.");
    }
    println!();
    println!("prover stage                       time");
    for (name, d) in [
        ("forward pass (witness)", p.witness),
        ("commit to the softmax witness", p.softmax_commit),
        ("statement digest, output claim", p.statement),
        ("unpadding", p.unpadding),
        ("softmax·V", p.attention_values),
        ("softmax proof", p.softmax),
        ("  of which lookups", p.softmax_stages.lookups),
        ("  of which sum-check", p.softmax_stages.sumcheck),
        ("masking", p.masking),
        ("batched QK^T", p.qk),
        ("padding (Q, K, V batched)", p.padding),
        ("openings (committed columns)", p.open),
    ]
    .into_iter()
    .filter(|(name, d)| !(name.starts_with("  of which") && d.is_zero()))
    {
        println!("  {name:<30} {:>9.1} ms", ms(d));
    }
    println!("  {:<30} {:>9.1} ms", "total", ms(p.total()));
    println!();
    println!("verifier (protocol)                {:>9.2} ms", ms(run.verifier.protocol));
    println!(
        "verifier (hashing and evaluating the public Q, K, V, O) {:.2} ms",
        ms(run.verifier.public_evaluations)
    );
    println!("proof size                         {:>9} bytes", run.proof_bytes);
    println!("wall clock (prove + verify)        {:>9.1} ms", ms(wall));
    println!("result: valid");
    Ok(())
}
