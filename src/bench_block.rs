//! `zkmha bench block`: the attention block proven from X and committed weights (the Q, K, V
//! projections, attention, the output projection and the residual) on random 8-bit X and
//! weights, in the plain and the zero-knowledge mode side by side (`prove --model` uses the
//! same code: `--transparent` the plain mode). The
//! residual adds to a separately committed hidden state, as in GPT-2 (pre-norm).

use crate::progress::Progress;
use anyhow::{Result, ensure};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};
use zkmha_attention::ProverTimings;
use zkmha_attention::block::{block_hyrax_params, commit_model_with, prove_block, verify_block};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_attention::model_layer::{ModelShape, ModelWeights};
use zkmha_attention::projection::compute_projection;
use zkmha_attention::{AttentionShape, MaskKind, Residual, SoftmaxMode, SoftmaxParams};

/// Options of `zkmha bench block`.
#[derive(clap::Args, Debug, Clone)]
pub struct BlockArgs {
    /// Tokens s.
    #[arg(long, default_value_t = 128)]
    pub seq: usize,
    /// Heads h.
    #[arg(long, default_value_t = 8)]
    pub heads: usize,
    /// Head width m (= m_v).
    #[arg(long, default_value_t = 64)]
    pub head_dim: usize,
    /// d_model (the width of X).
    #[arg(long, default_value_t = 512)]
    pub model_width: usize,
    /// Seed of the random 8-bit X and weights (ChaCha20).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Runs of each mode, interleaved (plain, zero knowledge, plain, …); medians are printed.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Print one JSON object (medians, milliseconds and bytes).
    #[arg(long)]
    pub json: bool,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Standard deviation of integers.
fn spread(values: &[i64]) -> f64 {
    let n = values.len().max(1) as f64;
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    (values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n).sqrt().max(1.0)
}

/// Runs the benchmark once and prints the stages.
///
/// # Errors
/// Impossible shapes, values out of range, or a failed verification.
pub fn run(args: &BlockArgs) -> Result<()> {
    let attention = AttentionShape::new(args.seq, args.heads, args.head_dim, args.head_dim)?;
    ensure!(args.model_width > 0, "--model-width must be positive");
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut draw = |n: usize, bound: i64| (0..n).map(|_| rng.gen_range(-bound..=bound)).collect::<Vec<i64>>();
    let (d, n) = (args.model_width, attention.model_width());
    let input = draw(args.seq * d, 127);
    let hidden_state = draw(args.seq * d, 1 << 20);
    let weights = ModelWeights {
        queries: draw(d * n, 127),
        keys: draw(d * n, 127),
        values: draw(d * n, 127),
        queries_bias: draw(n, 1000),
        keys_bias: draw(n, 1000),
        values_bias: draw(n, 1000),
        output: draw(n * d, 127),
        output_bias: draw(d, 1000),
        norm: None,
        feed_forward: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    // Q, K, V of standard deviation ≈ 2^7 (shift), scores of standard deviation 4 in exponent
    // units (score scale), an output shift that keeps |Y| < 2^31 (|O| ≤ 2^16·max|V|).
    let shift =
        ((127.0 / 3f64.sqrt()).powi(2) * (d as f64).sqrt() / 128.0).log2().round().clamp(1.0, 20.0) as u32;
    let shape = ModelShape {
        attention,
        model_width: d,
        shifts: [shift, shift, shift, 12],
        residual: Residual::HiddenState,
        key_value_heads: args.heads,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let project = |w: &[i64], b: &[i64]| compute_projection(&shape.projections()[0], &input, w, b);
    let (q, k) =
        (project(&weights.queries, &weights.queries_bias)?, project(&weights.keys, &weights.keys_bias)?);
    let score_scale = 4.0 / (spread(&q) * spread(&k) * (args.head_dim as f64).sqrt());
    let softmax = SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(score_scale, attention.seq_len)?);

    if !args.json {
        println!(
            "attention block s = {}, h = {}, m = {}, d_model = {}, shifts k = {shift}, k_o = 12 (random 8-bit X and weights, causal, softmax proven, residual on a committed hidden state)",
            args.seq, args.heads, args.head_dim, d
        );
    }
    ensure!(args.runs > 0, "--runs must be positive");
    let inputs = (input.as_slice(), hidden_state.as_slice(), &weights);
    let (mut plain, mut zk) = (Vec::with_capacity(args.runs), Vec::with_capacity(args.runs));
    let mut progress = Progress::counted("bench block", args.runs as u64, "runs", args.json);
    for run in 0..args.runs {
        progress.start_item(format!("run {} (plain and zero knowledge)", run + 1));
        let seed = args.seed.wrapping_add(run as u64);
        plain.push(measure::<Plain>(&shape, softmax, inputs, seed)?);
        zk.push(measure::<Zk>(&shape, softmax, inputs, seed)?);
    }
    progress.finish();
    let (plain, zk) = (Measured::median(plain), Measured::median(zk));
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "seq": args.seq, "heads": args.heads, "head_dim": args.head_dim, "model_width": d,
                "shifts": [shift, shift, shift, 12], "runs": args.runs,
                "plain": plain.to_json(), "zero_knowledge": zk.to_json(),
                "prove_ratio": zk.prove.as_secs_f64() / plain.prove.as_secs_f64(),
                "proof_ratio": zk.bytes as f64 / plain.bytes as f64,
            })
        );
        return Ok(());
    }
    plain.report("block, plain");
    zk.report("block, zero-knowledge");
    println!(
        "zero knowledge / plain: prove {:.2}×, proof {:+.1} % (medians of {} interleaved runs)",
        zk.prove.as_secs_f64() / plain.prove.as_secs_f64(),
        (zk.bytes as f64 / plain.bytes as f64 - 1.0) * 100.0,
        args.runs
    );
    println!("(random 8-bit tensors in the block's shape; real weights enter with the model-file loader)");
    Ok(())
}

/// One run of one mode.
struct Measured {
    commit_model: Duration,
    prove: Duration,
    timings: ProverTimings,
    verify: Duration,
    protocol: Duration,
    bytes: usize,
    parts: Vec<(&'static str, usize)>,
}

impl Measured {
    /// The run of median prove time, with every duration replaced by its median.
    fn median(mut runs: Vec<Measured>) -> Measured {
        fn median_of(mut values: Vec<Duration>) -> Duration {
            values.sort();
            values[values.len() / 2]
        }
        let pick = |f: &dyn Fn(&Measured) -> Duration| median_of(runs.iter().map(f).collect());
        let commit_model = pick(&|m| m.commit_model);
        let verify = pick(&|m| m.verify);
        let protocol = pick(&|m| m.protocol);
        let timings = ProverTimings {
            witness: pick(&|m| m.timings.witness),
            commit: pick(&|m| m.timings.commit),
            statement: pick(&|m| m.timings.statement),
            softmax: pick(&|m| m.timings.softmax),
            open: pick(&|m| m.timings.open),
            ..ProverTimings::default()
        };
        runs.sort_by_key(|m| m.prove);
        let middle = runs.swap_remove(runs.len() / 2);
        Measured { commit_model, verify, protocol, timings, ..middle }
    }

    fn to_json(&self) -> serde_json::Value {
        let parts: serde_json::Map<String, serde_json::Value> =
            self.parts.iter().map(|(name, b)| (name.to_string(), serde_json::json!(b))).collect();
        serde_json::json!({
            "commit_model_ms": ms(self.commit_model),
            "prove_ms": ms(self.prove),
            "forward_ms": ms(self.timings.witness),
            "commitments_ms": ms(self.timings.commit),
            "projections_ms": ms(self.timings.statement),
            "softmax_ms": ms(self.timings.softmax),
            "final_opening_ms": ms(self.timings.open),
            "verify_ms": ms(self.verify),
            "proof_bytes": self.bytes,
            "parts": parts,
        })
    }

    fn report(&self, name: &str) {
        println!("{name}");
        println!("  commit to the model (once per model)  {:>9.1} ms", ms(self.commit_model));
        println!(
            "  prove                                 {:>9.1} ms: forward {:.1}, commitments {:.1}, projections {:.1}, softmax {:.1}, final opening {:.1}",
            ms(self.prove),
            ms(self.timings.witness),
            ms(self.timings.commit),
            ms(self.timings.statement),
            ms(self.timings.softmax),
            ms(self.timings.open)
        );
        println!(
            "  verify                                {:>9.1} ms ({:.1} ms in the protocol's own count)",
            ms(self.verify),
            ms(self.protocol)
        );
        println!("  proof                                 {:>9} bytes", self.bytes);
        let parts: Vec<String> = self.parts.iter().map(|(name, b)| format!("{name} {b}")).collect();
        println!("    of which                            {}", parts.join(", "));
    }
}

/// The block in mode `M` on the same inputs.
fn measure<M: Mode>(
    shape: &ModelShape,
    softmax: SoftmaxMode,
    (input, hidden_state, weights): (&[i64], &[i64], &ModelWeights),
    seed: u64,
) -> Result<Measured> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5eed);
    let start = Instant::now();
    let params = block_hyrax_params::<M>(shape, softmax)?;
    let (model, blinds) = commit_model_with::<M>(&params, shape, weights, &mut rng)?;
    let commit_model_time = start.elapsed();
    let start = Instant::now();
    let (statement, proof, timings) = prove_block::<M>(
        &params,
        shape,
        MaskKind::Causal,
        softmax,
        input,
        Some(hidden_state),
        weights,
        &model,
        &blinds,
        &mut rng,
    )?;
    let prove = start.elapsed();
    let start = Instant::now();
    let verified = verify_block::<M>(&params, &statement, &proof)?;
    let verify = start.elapsed();
    let bytes = ark_serialize::CanonicalSerialize::compressed_size(&proof);
    Ok(Measured {
        commit_model: commit_model_time,
        prove,
        timings,
        verify,
        protocol: verified.protocol,
        bytes,
        parts: proof.part_sizes(),
    })
}
