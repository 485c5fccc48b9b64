//! The crate's integration tests as one test binary: one link, and the generic provers and
//! verifiers the files share compiled once instead of once per file (the README's test command
//! builds in minutes, not tens of minutes). Each file is a module; run one with
//! `cargo test --test suite FILE::`.

mod multi_opening;
mod opening_batches;
mod relations;
mod soundness_transcript;
mod statement_binding;
mod zk_batch;
mod zk_product;
mod zk_sumcheck;
