//! `zkmha`: the command-line program of the zkmha prover.
//!
//! `zkmha` (no arguments) proves and verifies a default attention layer ("Attention Is All
//! You Need": d_model 512, 8 heads of width 64, 128 tokens, causal) and prints per-stage
//! timings; `zkmha sumcheck` runs the sum-check engine alone.

mod accuracy;
mod allocator;
mod bench;
mod demo;
mod layer;
mod proof_file;

use clap::{Parser, Subcommand};

/// Sum-check based prover and verifier for multi-head attention.
#[derive(Parser, Debug)]
#[command(name = "zkmha", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove and verify one attention layer on random integer inputs (the default command).
    Layer(layer::LayerArgs),
    /// Prove and verify sample sum-checks and print timings.
    Sumcheck(demo::SumcheckArgs),
    /// Prove a layer with committed inputs and write a proof file.
    Prove(proof_file::ProveArgs),
    /// Verify a proof file without the inputs.
    Verify(proof_file::VerifyArgs),
    /// Accuracy of the proven fixed-point attention against float64 on a real model.
    Accuracy(accuracy::AccuracyArgs),
    /// Benchmarks of the layer proof.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() {
    allocator::retain_freed_memory();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Layer(args)) => layer::run(&args),
        Some(Command::Sumcheck(args)) => demo::run(&args),
        Some(Command::Bench(command)) => bench::run(&command),
        Some(Command::Prove(args)) => proof_file::prove(&args),
        Some(Command::Verify(args)) => proof_file::verify(&args),
        Some(Command::Accuracy(args)) => accuracy::run(&args),
        None => layer::run(&layer::LayerArgs::default()),
    };
    if let Err(error) = result {
        eprintln!("error: {error:#}");
        std::process::exit(1);
    }
}
