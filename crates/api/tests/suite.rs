//! The crate's integration tests as one test binary: one link, and the generic provers and
//! verifiers the files share compiled once instead of once per file (the README's test command
//! builds in minutes, not tens of minutes). Each file is a module; run one with
//! `cargo test --test suite FILE::`.

mod attention_layer;
mod bert_gguf;
mod chain;
mod chain_tasks;
mod deeper_layers;
mod gemma3;
mod head;
mod mlp_key;
mod verified;
