//! The crate's integration tests as one test binary: one link, and the generic provers and
//! verifiers the files share compiled once instead of once per file (the README's test command
//! builds in minutes, not tens of minutes). Each file is a module; run one with
//! `cargo test --test suite FILE::`.
mod common;
#[macro_use]
mod modes;

mod activation;
mod attack_block_mlp;
mod attack_chain;
mod attack_extra_norms;
mod block;
mod block_fuzz;
mod block_malformed_structure;
mod block_mlp;
mod block_norm;
mod block_output_norms;
mod block_post_norm;
mod committed;
mod embedding;
mod hadamard;
mod layer;
mod layer_both_modes;
mod layer_chain;
mod malformed_proofs;
mod mlp;
mod model_layer;
mod model_quantization;
mod norm;
mod product_bound;
mod projection;
mod residual_scale;
mod rope;
mod softmax;
mod steps;
mod zk_layer;
