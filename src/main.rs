//! `zkmha`: the command-line program of the zkmha prover.
//!
//! Today it runs the foundation: it proves and verifies sample sum-checks (products of
//! dense MLEs, random or small-integer values) and prints timings. The attention-layer
//! commands arrive with the attention protocol.

mod demo;

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
    /// Prove and verify sample sum-checks and print timings (the default command).
    Sumcheck(demo::SumcheckArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Sumcheck(args)) => demo::run(&args),
        None => demo::run(&demo::SumcheckArgs::default()),
    };
    if let Err(error) = result {
        eprintln!("error: {error:#}");
        std::process::exit(1);
    }
}
