//! The crate's integration tests as one test binary: one link, and the generic provers and
//! verifiers the files share compiled once instead of once per file (the README's test command
//! builds in minutes, not tens of minutes). Each file is a module; run one with
//! `cargo test --test suite FILE::`.

mod architecture;
mod families;
mod gguf;
mod minilm;
mod minilm_block;
mod mlp_loader;
mod review_gemma3_loader;
