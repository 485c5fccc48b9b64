//! The sum-check demonstration: prove, verify, discharge, and report timings.

use anyhow::{Context, Result, bail, ensure};
use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, SmallMultilinearExtension};
use zkmha_sumcheck::{
    FinalEvaluations, ProductSumcheck, SmallValueProductSumcheck, SumOfProducts, SumcheckClaim,
    prove_instance_with_evaluations, verify_product,
};
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"zkmha-demo-sumcheck";

/// Options of `zkmha sumcheck`.
#[derive(clap::Args, Debug, Clone)]
pub struct SumcheckArgs {
    /// Number of variables of each MLE (tables of 2^n entries), 1 to 24.
    #[arg(long, default_value_t = 20)]
    pub num_vars: usize,
    /// Degrees to run: products of this many MLEs, each 1 to 4 (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [2usize, 3])]
    pub degrees: Vec<usize>,
    /// Seed of the random inputs (ChaCha20).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object (its `rows`: one per polynomial) instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Default for SumcheckArgs {
    fn default() -> Self {
        Self { num_vars: 20, degrees: vec![2, 3], seed: 1, json: false }
    }
}

struct Row {
    name: String,
    degree: usize,
    num_vars: usize,
    prove: Duration,
    verify: Duration,
    discharge: Duration,
    proof_bytes: usize,
}

/// Runs the demonstration.
///
/// # Errors
/// Out-of-range options, or a proof that fails to verify (which would be a bug).
pub fn run(args: &SumcheckArgs) -> Result<()> {
    ensure!((1..=24).contains(&args.num_vars), "--num-vars must be between 1 and 24, got {}", args.num_vars);
    ensure!(!args.degrees.is_empty(), "--degrees needs at least one degree");
    if let Some(bad) = args.degrees.iter().find(|d| !(1..=4).contains(*d)) {
        bail!("--degrees takes degrees from 1 to 4, got {bad}");
    }
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut rows = Vec::new();
    for &degree in &args.degrees {
        let shape = SumOfProducts::product(degree)?;
        let random: Vec<DenseMultilinearExtension> = (0..degree)
            .map(|_| {
                let table = (0..1usize << args.num_vars).map(|_| Fr::rand(&mut rng)).collect();
                DenseMultilinearExtension::new(args.num_vars, table)
            })
            .collect::<Result<_, _>>()?;
        let instance = ProductSumcheck::new(shape.clone(), random.clone())?;
        let sum = instance.claimed_sum();
        rows.push(run_one(format!("product of {degree} random MLEs"), &shape, instance, sum, &random)?);

        if degree >= 2 {
            let small: Vec<SmallMultilinearExtension> = (0..degree)
                .map(|_| {
                    let values: Vec<i64> = (0..1usize << args.num_vars)
                        .map(|_| rng.gen_range(-(1i64 << 16) + 1..1i64 << 16))
                        .collect();
                    SmallMultilinearExtension::new(args.num_vars, &values)
                })
                .collect::<Result<_, _>>()?;
            let instance = SmallValueProductSumcheck::new(&small)?;
            let sum = instance.claimed_sum();
            let dense: Vec<DenseMultilinearExtension> =
                small.iter().map(SmallMultilinearExtension::to_dense).collect();
            rows.push(run_one(
                format!("product of {degree} MLEs, |v| < 2^16"),
                &shape,
                instance,
                sum,
                &dense,
            )?);
        }
    }
    print_rows(&rows, args);
    Ok(())
}

fn run_one<I: FinalEvaluations>(
    name: String,
    shape: &SumOfProducts,
    mut instance: I,
    sum: Fr,
    mles: &[DenseMultilinearExtension],
) -> Result<Row> {
    let num_vars = instance.num_vars();
    let start = Instant::now();
    let (proof, _) = prove_instance_with_evaluations(&mut instance, sum, &mut Transcript::new(DOMAIN));
    let prove = start.elapsed();

    let start = Instant::now();
    let claim = SumcheckClaim::new(num_vars, shape.degree(), sum);
    let claims = verify_product(shape, &claim, &proof, &mut Transcript::new(DOMAIN))
        .context("the sample proof did not verify")?;
    let verify = start.elapsed();

    // The inputs are public here, so the verifier discharges the final claims itself.
    let start = Instant::now();
    for (mle, eval) in mles.iter().zip(&claims) {
        eval.check(mle.evaluate(&eval.point)?).context("a final evaluation claim is false")?;
    }
    let discharge = start.elapsed();
    Ok(Row {
        name,
        degree: shape.degree(),
        num_vars,
        prove,
        verify,
        discharge,
        proof_bytes: ark_serialize::CanonicalSerialize::compressed_size(&proof),
    })
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_rows(rows: &[Row], args: &SumcheckArgs) {
    let json = args.json;
    if json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "polynomial": r.name,
                    "degree": r.degree,
                    "num_vars": r.num_vars,
                    "prove_ms": millis(r.prove),
                    "verify_ms": millis(r.verify),
                    "discharge_ms": millis(r.discharge),
                    "proof_bytes": r.proof_bytes,
                })
            })
            .collect();
        println!("{}", serde_json::json!({ "num_vars": args.num_vars, "seed": args.seed, "rows": rows }));
        return;
    }
    println!("zkmha {} — sum-check engine", env!("CARGO_PKG_VERSION"));
    println!(
        "Proves and verifies Σ_x Π_k f_k(x) over BN254 on {} threads (the engine alone; `zkmha layer` proves an attention layer).",
        rayon::current_num_threads()
    );
    println!();
    println!(
        "{:<36} {:>8} {:>12} {:>12} {:>14} {:>10}",
        "polynomial", "num_vars", "prove", "verify", "discharge*", "proof"
    );
    for r in rows {
        println!(
            "{:<36} {:>8} {:>9.1} ms {:>9.3} ms {:>11.1} ms {:>7} B",
            r.name,
            r.num_vars,
            millis(r.prove),
            millis(r.verify),
            millis(r.discharge),
            r.proof_bytes
        );
    }
    println!();
    println!("* discharge: the verifier evaluates each public MLE at the final point itself (O(2^n));");
    println!("  with committed inputs this becomes an opening proof.");
}
