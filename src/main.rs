//! `zkmha`: the command-line program of the zkmha prover.
//!
//! `zkmha` (no arguments) proves and verifies a default attention layer ("Attention Is All
//! You Need": d_model 512, 8 heads of width 64, 128 tokens, causal) and prints per-stage
//! timings; `zkmha sumcheck` runs the sum-check engine alone.
//!
//! Exit codes ([`verdict`]): 0 success (`verify`: valid), 1 `verify`: the proof is invalid,
//! 2 bad input (unreadable, corrupt or over-the-limits files, bad values) or another failure,
//! 3 `verify`: the proof's softmax is refused (name it with `--softmax-params`), 4 a model
//! feature the proof does not cover, 5 usage (options), 6 out of resources (disk, memory).
//! Under `--json` every command prints one JSON object on stdout, a failure as well
//! (`{"error": …, "kind": …, "exit_code": …}`). With `RUST_LOG` set (`RUST_LOG=info`), the
//! stages' `tracing` spans and their times go to stderr; nothing changes without it.

mod accuracy;
mod allocator;
mod attention_input;
mod bench;
mod bench_block;
mod chain_cli;
mod demo;
mod layer;
mod model_cli;
mod progress;
mod proof_file;
mod report;
mod verdict;

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
    /// Prove a model file's attention layer (--model) or a random layer, and write a proof file.
    Prove(Box<proof_file::ProveArgs>),
    /// Verify a proof file without the inputs (a model-layer proof with its --vk).
    Verify(proof_file::VerifyArgs),
    /// Commit to a model layer's weights: write its verifier key.
    CommitModel(model_cli::CommitModelArgs),
    /// Show what a proof or verifier-key file holds.
    Inspect(model_cli::InspectArgs),
    /// Write the hidden state entering a model layer, computed in float64 through the layers
    /// before it (not proven): a deeper layer's input for `prove --input`.
    HiddenState(model_cli::HiddenStateArgs),
    /// Accuracy of the proven fixed-point attention against float64 on a real model.
    Accuracy(accuracy::AccuracyArgs),
    /// Benchmarks of the layer proof.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// Score tensors up to this many entries (`ĥ·ŝ·ŝ`; s = 1024, h = 16) keep freed memory in the
/// heap (faster: no fresh pages per step, `allocator`); larger ones leave glibc's defaults,
/// which map multi-gigabyte tables on their own and return them when freed, so the peak stays
/// near the live memory instead of growing with the heap's holes.
const RETAIN_FREED_MEMORY_UP_TO: usize = 1 << 24;

/// `ĥ·ŝ·ŝ` of the layer a command proves (0 for commands that prove no layer).
fn score_entries(command: &Option<Command>) -> usize {
    let shape = match command {
        Some(Command::Layer(args)) => &args.layer,
        Some(Command::Prove(args)) => &args.layer,
        _ => return 0,
    };
    shape.heads().next_power_of_two().saturating_mul(shape.seq().next_power_of_two().saturating_pow(2))
}

impl Command {
    /// Whether the command prints JSON (`--json`).
    fn json(&self) -> bool {
        match self {
            Command::Layer(args) => args.json,
            Command::Sumcheck(args) => args.json,
            Command::Prove(args) => args.model_input.json,
            Command::Verify(args) => args.json,
            Command::CommitModel(args) => args.json,
            Command::Inspect(args) => args.json,
            Command::HiddenState(args) => args.json,
            Command::Accuracy(args) => args.json,
            Command::Bench(bench::BenchCommand::Heads(args)) => args.json,
            Command::Bench(bench::BenchCommand::Block(args)) => args.json,
        }
    }
}

/// With `RUST_LOG` set: the `tracing` spans it selects (`info`: the library's stages, the
/// layer proofs), each printed on stderr when it closes, with its time.
fn log_to_stderr() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::fmt::format::FmtSpan;
    if std::env::var_os(EnvFilter::DEFAULT_ENV).is_none() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // The command line did not parse, so `--json` is looked for among the words.
            let json = std::env::args_os().skip(1).any(|word| word == "--json");
            std::process::exit(verdict::report_usage(&error, json));
        }
    };
    let json = cli.command.as_ref().is_some_and(Command::json);
    quiet_on_closed_pipe();
    report_file_size_limits();
    log_to_stderr();
    // Before any other thread exists (a `mallopt` requirement).
    if score_entries(&cli.command) <= RETAIN_FREED_MEMORY_UP_TO {
        allocator::retain_freed_memory();
    }
    let result = match cli.command {
        Some(Command::Layer(args)) => layer::run(&args),
        Some(Command::Sumcheck(args)) => demo::run(&args),
        Some(Command::Bench(command)) => bench::run(&command),
        Some(Command::Prove(args)) => proof_file::prove(&args),
        Some(Command::Verify(args)) => proof_file::verify(&args),
        Some(Command::CommitModel(args)) => model_cli::commit(&args),
        Some(Command::Inspect(args)) => model_cli::inspect(&args),
        Some(Command::HiddenState(args)) => model_cli::hidden_state(&args),
        Some(Command::Accuracy(args)) => accuracy::run(&args),
        None => layer::run(&layer::LayerArgs::default()),
    };
    if let Err(error) = result {
        std::process::exit(verdict::report(&error, json));
    }
}

/// Restores the default action of `SIGPIPE` (ending the process quietly), as other Unix
/// tools have it: Rust ignores the signal, so `zkmha inspect f | head -3` panicked in
/// `println!` once `head` had closed the pipe. No output is lost that anyone reads.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn quiet_on_closed_pipe() {
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SAFETY: `signal` sets the disposition of one signal to its default; it is called before
    // any other thread exists and takes plain integers (SIGPIPE is 13 on Linux and the BSDs).
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

/// Ignores `SIGXFSZ`, so that a write past the file-size limit (`ulimit -f`) fails with
/// `EFBIG` — reported in one sentence with exit code 6, its temporary file removed and any
/// earlier file left whole — instead of killing the process silently (exit 153) with a
/// partial temporary file behind it.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn report_file_size_limits() {
    const SIGXFSZ: i32 = 25;
    const SIG_IGN: usize = 1;
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SAFETY: as in `quiet_on_closed_pipe`: one signal's disposition set to "ignore", before
    // any other thread exists (SIGXFSZ is 25 on Linux and the BSDs).
    unsafe {
        signal(SIGXFSZ, SIG_IGN);
    }
}

/// Elsewhere there is no `SIGXFSZ`.
#[cfg(not(unix))]
pub fn report_file_size_limits() {}

/// Elsewhere there is no `SIGPIPE`.
#[cfg(not(unix))]
pub fn quiet_on_closed_pipe() {}
