//! Malicious provers of blocks with output norms (Gemma 2's and 3's `Z = H + norm_a(Y)`, `H' =
//! Z + norm_f(Y₂)`): each changes the honest prover at one step. Each must be rejected by
//! `verify_block` in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use super::*;
use crate::mode::{Plain, Zk};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::cell::Cell;

use super::attack_mlp::common;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cheat {
    Honest,
    /// The residual adds the half's output `Y` itself, not its norm (the model without the
    /// output norm, proven under a statement that has it); the norm is proven honestly.
    SkipNorm(BlockHalf),
    /// The norm is run on `Y + e_0` (another input than the committed `Y`), honestly from
    /// there on.
    ShiftedInput(BlockHalf),
    /// The norm is run with the norm before the attention's `γ`, `β` (the wrong weight table).
    FirstNormWeights(BlockHalf),
    /// QK-norm on `Q` (0) or `K` (1): the rotation reads the projection's output, not its
    /// norm (the model without the QK-norm, proven under a statement that has it).
    SkipHeadNorm(usize),
    /// QK-norm: the norm on `Q` run with `K`'s weights, or the reverse.
    SwappedHeadNormWeights(usize),
}

thread_local! {
    static CHEAT: Cell<Cheat> = const { Cell::new(Cheat::Honest) };
}

fn cheat() -> Cheat {
    CHEAT.with(Cell::get)
}

pub(super) fn weights(
    half: BlockHalf,
    w: &zkmha_nn::NormWeights,
    all: &ModelWeights,
) -> zkmha_nn::NormWeights {
    match cheat() {
        Cheat::FirstNormWeights(h) if h == half => all.norm.clone().unwrap(),
        _ => w.clone(),
    }
}

pub(super) fn input(half: BlockHalf, mut input: Vec<i64>) -> Vec<i64> {
    if cheat() == Cheat::ShiftedInput(half) {
        input[0] += 1;
    }
    input
}

pub(super) fn rotated<'a>(p: usize, projected: &'a Vec<i64>, normed: &'a Vec<i64>) -> &'a Vec<i64> {
    if cheat() == Cheat::SkipHeadNorm(p) { projected } else { normed }
}

pub(super) fn head_weights(p: usize, w: &zkmha_nn::NormWeights, all: &ModelWeights) -> zkmha_nn::NormWeights {
    match cheat() {
        Cheat::SwappedHeadNormWeights(q) if q == p => {
            let norms = all.query_key_norms.as_ref().unwrap();
            if p == 0 { norms.key.clone() } else { norms.query.clone() }
        }
        _ => w.clone(),
    }
}

pub(super) fn added<'a>(half: BlockHalf, output: &'a [i64], normed: &'a [i64]) -> &'a [i64] {
    if cheat() == Cheat::SkipNorm(half) { output } else { normed }
}

fn shapes() -> Vec<ModelShape> {
    use common::{base, grouped, rotary, with_mlp, with_norm, with_output_norms, with_query_key_norms};
    use zkmha_nn::NormKind;
    let rms = |shape| with_norm(shape, NormKind::Rms);
    let first = |shape: ModelShape| common::modes(&shape)[0].1;
    let second = |shape: ModelShape| common::modes(&shape)[1].1;
    vec![
        second(with_output_norms(with_mlp(rms(base(3, 2, 4, 4, 10)), true, 20))),
        first(with_output_norms(with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Layer), false, 24))),
        // One token (the norms' appended zero row); the attention half alone.
        first(with_output_norms(rms(base(1, 2, 4, 4, 12)))),
        first(with_output_norms(with_mlp(rms(rotary(grouped(6, 4, 1, 4, 4, 16))), true, 24))),
        // Gemma 3's whole layer: QK-norm, grouped heads, rotations, both output norms.
        second(with_query_key_norms(with_output_norms(with_mlp(
            rms(rotary(grouped(5, 4, 1, 4, 4, 12))),
            true,
            24,
        )))),
        // One token, one head, the QK-norm alone.
        first(with_query_key_norms(rms(rotary(base(1, 1, 4, 4, 6))))),
    ]
}

fn attempt<M: Mode>(
    shape: &ModelShape,
    cheat_with: Cheat,
) -> Result<Result<VerifierTimings, AttentionError>, AttentionError> {
    let softmax = common::modes(shape)[0].0;
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let weights = common::weights(shape, 5);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &weights, &mut rng).unwrap();
    let h = common::hidden_state(shape, 5).unwrap();
    let x = normalized_input(shape, &weights, &h).unwrap();
    CHEAT.with(|c| c.set(cheat_with));
    let proved = prove_block::<M>(
        &params,
        shape,
        MaskKind::Causal,
        softmax,
        &x,
        Some(&h),
        &weights,
        &model,
        &blinds,
        &mut rng,
    );
    CHEAT.with(|c| c.set(Cheat::Honest));
    let (statement, proof, _) = proved?;
    Ok(verify_block::<M>(&params, &statement, &proof))
}

fn run<M: Mode>() {
    let mut report = Vec::new();
    for (i, shape) in shapes().iter().enumerate() {
        let honest = attempt::<M>(shape, Cheat::Honest);
        assert!(matches!(honest, Ok(Ok(_))), "honest {i}: {honest:?}");
        let halves: &[BlockHalf] = match (shape.output_norms.attention, shape.mlp) {
            (None, _) => &[],
            (Some(_), Some(_)) => &BlockHalf::BOTH,
            (Some(_), None) => &[BlockHalf::Attention],
        };
        let mut cheats: Vec<Cheat> = halves
            .iter()
            .flat_map(|&h| [Cheat::SkipNorm(h), Cheat::ShiftedInput(h), Cheat::FirstNormWeights(h)])
            .collect();
        if shape.query_key_norms.is_some() {
            cheats.extend((0..2).flat_map(|p| [Cheat::SkipHeadNorm(p), Cheat::SwappedHeadNormWeights(p)]));
        }
        for cheat_with in cheats {
            let outcome = attempt::<M>(shape, cheat_with);
            let line = format!("{} shape {i} {cheat_with:?}: {outcome:?}", std::any::type_name::<M>());
            println!("{line}");
            // The prover must get a proof out (else the test shows nothing of the verifier).
            assert!(outcome.is_ok(), "the malicious prover failed to prove: {line}");
            report.push((line, matches!(outcome, Ok(Ok(_)))));
        }
    }
    let accepted: Vec<_> = report.iter().filter(|(_, a)| *a).map(|(l, _)| l.clone()).collect();
    assert!(accepted.is_empty(), "FORGERIES ACCEPTED: {accepted:#?}");
}

#[test]
fn malicious_output_and_query_key_norm_provers_are_rejected_in_the_plain_mode() {
    run::<Plain>();
}

#[test]
fn malicious_output_and_query_key_norm_provers_are_rejected_in_zero_knowledge() {
    run::<Zk>();
}
