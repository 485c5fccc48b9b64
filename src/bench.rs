//! `zkmha bench heads`: prover time, verifier time and proof size against the number of heads,
//! batched (one proof for all heads) and as one separate proof per head.

use crate::layer::{
    SoftmaxChoice, parse_mask, parse_softmax, random_inputs, run_layer_with_inputs, softmax_mode,
};
use crate::progress::Progress;
use anyhow::{Context, Result, ensure};
use plotters::prelude::*;
use std::time::Duration;
use zkmha_attention::{AttentionInputs, AttentionShape, MaskKind};

/// Options of `zkmha bench heads`.
#[derive(clap::Args, Debug, Clone)]
pub struct HeadsArgs {
    /// Head counts to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4, 8, 12, 16])]
    pub heads: Vec<usize>,
    /// Tokens s.
    #[arg(long, default_value_t = 128)]
    pub seq: usize,
    /// Head width m (= m_v).
    #[arg(long, default_value_t = 64)]
    pub head_dim: usize,
    /// Mask: causal, none or sliding:W (a window of W tokens).
    #[arg(long, default_value = "causal", value_parser = parse_mask)]
    pub mask: MaskKind,
    /// Print one JSON object (its `points`: one per head count) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw the results as an SVG plot into this file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Skip the one-proof-per-head comparison.
    #[arg(long)]
    pub no_separate: bool,
    /// Softmax: exp (proven) or linear (not proven).
    #[arg(long, default_value = "exp", value_parser = parse_softmax)]
    pub softmax: SoftmaxChoice,
}

/// Which benchmark to run.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum BenchCommand {
    /// Prover time, verifier time and proof size against the number of heads.
    Heads(HeadsArgs),
    /// The attention block proven from X and committed weights (projections, attention,
    /// output projection, residual) on random 8-bit tensors.
    Block(crate::bench_block::BlockArgs),
}

struct Point {
    heads: usize,
    prove: Duration,
    verify: Duration,
    verify_public: Duration,
    proof_bytes: usize,
    separate: Option<(Duration, Duration, usize)>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Head `k`'s columns of a row-major `rows × (heads·width)` matrix.
fn head_slice(data: &[i64], rows: usize, heads: usize, width: usize, k: usize) -> Vec<i64> {
    (0..rows)
        .flat_map(|i| data[(i * heads + k) * width..(i * heads + k + 1) * width].iter().copied())
        .collect()
}

/// Runs the benchmark.
///
/// # Errors
/// Impossible shapes, an unwritable plot file, or a failed verification.
pub fn run(command: &BenchCommand) -> Result<()> {
    let args = match command {
        BenchCommand::Heads(args) => args,
        BenchCommand::Block(args) => return crate::bench_block::run(args),
    };
    ensure!(!args.heads.is_empty(), "--heads needs at least one head count");
    let mut points = Vec::new();
    let mut progress = Progress::counted("bench heads", args.heads.len() as u64, "head counts", args.json);
    for &heads in &args.heads {
        progress.start_item(format!("{heads} heads"));
        let shape = AttentionShape::new(args.seq, heads, args.head_dim, args.head_dim)?;
        let inputs = random_inputs(&shape, heads as u64);
        let softmax = softmax_mode(&shape, args.softmax, None)?;
        let run = run_layer_with_inputs(shape, args.mask, softmax, &inputs)?;
        let separate = if args.no_separate {
            None
        } else {
            let single = AttentionShape::new(args.seq, 1, args.head_dim, args.head_dim)?;
            let (mut prove, mut verify, mut bytes) = (Duration::ZERO, Duration::ZERO, 0);
            for k in 0..heads {
                let part = AttentionInputs {
                    queries: head_slice(&inputs.queries, args.seq, heads, args.head_dim, k),
                    keys: head_slice(&inputs.keys, args.seq, heads, args.head_dim, k),
                    values: head_slice(&inputs.values, args.seq, heads, args.head_dim, k),
                };
                let r = run_layer_with_inputs(
                    single,
                    args.mask,
                    softmax_mode(&single, args.softmax, None)?,
                    &part,
                )?;
                prove += r.prover.total();
                verify += r.verifier.protocol;
                bytes += r.proof_bytes;
            }
            Some((prove, verify, bytes))
        };
        let point = Point {
            heads,
            prove: run.prover.total(),
            verify: run.verifier.protocol,
            verify_public: run.verifier.public_evaluations,
            proof_bytes: run.proof_bytes,
            separate,
        };
        points.push(point);
    }
    progress.finish();
    if !args.json {
        print_table(&points, args);
    }
    if let Some(path) = &args.plot {
        draw(&points, args, path)
            .with_context(|| format!("could not write the plot to {}", path.display()))?;
        if !args.json {
            println!("plot written to {}", path.display());
        }
    }
    if args.json {
        print_json(&points, args);
    }
    Ok(())
}

fn print_json(points: &[Point], args: &HeadsArgs) {
    let points: Vec<serde_json::Value> = points
        .iter()
        .map(|p| {
            let mut point = serde_json::json!({
                "heads": p.heads,
                "prove_ms": ms(p.prove),
                "verify_ms": ms(p.verify),
                "verify_public_inputs_ms": ms(p.verify_public),
                "proof_bytes": p.proof_bytes,
            });
            if let (Some((prove, verify, bytes)), Some(map)) = (p.separate, point.as_object_mut()) {
                map.insert("separate_prove_ms".into(), serde_json::json!(ms(prove)));
                map.insert("separate_verify_ms".into(), serde_json::json!(ms(verify)));
                map.insert("separate_proof_bytes".into(), serde_json::json!(bytes));
            }
            point
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "seq": args.seq,
            "head_dim": args.head_dim,
            "mask": args.mask.to_string(),
            "softmax_proven": args.softmax == SoftmaxChoice::Exponential,
            "plot": args.plot.as_ref().map(|p| p.display().to_string()),
            "points": points,
        })
    );
}

fn print_table(points: &[Point], args: &HeadsArgs) {
    println!(
        "zkmha bench heads — s = {}, m = m_v = {}, mask = {}, softmax: {}",
        args.seq,
        args.head_dim,
        args.mask,
        match args.softmax {
            SoftmaxChoice::Exponential => "exp (fixed point, proven with lookups)",
            SoftmaxChoice::Linear => "identity slot (linear attention; softmax not proven)",
        }
    );
    println!("verify = protocol only; hashing and evaluating the public tensors is the last column.");
    println!();
    println!(
        "{:>5} {:>11} {:>10} {:>10} | {:>14} {:>14} {:>13} | {:>12}",
        "heads",
        "prove ms",
        "verify ms",
        "proof B",
        "per-head prove",
        "per-head verify",
        "per-head B",
        "public ms"
    );
    for p in points {
        let (sp, sv, sb) =
            p.separate.map_or(("-".to_string(), "-".to_string(), "-".to_string()), |(a, b, c)| {
                (format!("{:.1}", ms(a)), format!("{:.2}", ms(b)), c.to_string())
            });
        println!(
            "{:>5} {:>11.1} {:>10.2} {:>10} | {:>14} {:>14} {:>13} | {:>12.1}",
            p.heads,
            ms(p.prove),
            ms(p.verify),
            p.proof_bytes,
            sp,
            sv,
            sb,
            ms(p.verify_public)
        );
    }
}

fn draw(points: &[Point], args: &HeadsArgs, path: &std::path::Path) -> Result<()> {
    let root = SVGBackend::new(path, (1200, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let max_heads = points.iter().map(|p| p.heads).max().unwrap_or(1) as f64;
    type Series = (&'static str, Box<dyn Fn(&Point) -> Option<f64>>, Box<dyn Fn(&Point) -> Option<f64>>);
    let series: [Series; 3] = [
        (
            "prover time (ms)",
            Box::new(|p: &Point| Some(ms(p.prove))),
            Box::new(|p: &Point| p.separate.map(|s| ms(s.0))),
        ),
        (
            "verifier time (ms, protocol)",
            Box::new(|p: &Point| Some(ms(p.verify))),
            Box::new(|p: &Point| p.separate.map(|s| ms(s.1))),
        ),
        (
            "proof size (KB)",
            Box::new(|p: &Point| Some(p.proof_bytes as f64 / 1024.0)),
            Box::new(|p: &Point| p.separate.map(|s| s.2 as f64 / 1024.0)),
        ),
    ];
    for (panel, (title, batched, separate)) in panels.iter().zip(series.iter()) {
        let top =
            points.iter().flat_map(|p| [batched(p), separate(p)]).flatten().fold(0.0f64, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{title}, s = {}, m = {}", args.seq, args.head_dim), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..max_heads + 1.0, 0f64..top.max(1e-3))?;
        chart.configure_mesh().x_desc("heads").draw()?;
        let batched_points: Vec<(f64, f64)> =
            points.iter().filter_map(|p| batched(p).map(|y| (p.heads as f64, y))).collect();
        chart
            .draw_series(LineSeries::new(batched_points.clone(), BLUE.stroke_width(2)))?
            .label("one proof, all heads")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE));
        chart.draw_series(batched_points.iter().map(|&(x, y)| Circle::new((x, y), 3, BLUE.filled())))?;
        let separate_points: Vec<(f64, f64)> =
            points.iter().filter_map(|p| separate(p).map(|y| (p.heads as f64, y))).collect();
        if !separate_points.is_empty() {
            chart
                .draw_series(LineSeries::new(separate_points.clone(), RED.stroke_width(2)))?
                .label("one proof per head")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
            chart.draw_series(separate_points.iter().map(|&(x, y)| Circle::new((x, y), 3, RED.filled())))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
