//! Adversarial review of 7193c90 (the block's MLP half): malicious provers that change the
//! honest prover at one step. Each must be rejected by `verify_block` in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use super::*;
use crate::mode::{Plain, Zk};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::cell::Cell;

#[path = "../tests/common/mod.rs"]
pub(super) mod common;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cheat {
    Honest,
    /// `Z' = Z + 1` at entry 0, everything after it computed honestly from `Z'`.
    MiddleEntry,
    /// `Z' = Z + 1` at the last entry.
    MiddleLast,
    /// The second norm run with the first norm's `γ`, `β` (claims keyed to the wrong table?).
    FirstNormWeights,
    /// Gated MLP: the gate's and up projection's weights swapped.
    SwapGateUp,
    /// Dense MLP: `W_down`'s bias set to zero.
    ZeroDownBias,
    /// The output moved by 1 at entry 0; ζ shifted to keep `Ỹ₂(r_z)` true.
    OutputZeta,
    /// The output moved by 1 at entry 0; ζ and α shifted: both projections' claims true.
    OutputZetaAlpha,
    /// The output moved by 1 at entry 0, nothing else.
    Output,
}

thread_local! {
    static CHEAT: Cell<Cheat> = const { Cell::new(Cheat::Honest) };
}

fn cheat() -> Cheat {
    CHEAT.with(Cell::get)
}

pub(super) fn middle(mut middle: Vec<i64>) -> Vec<i64> {
    match cheat() {
        Cheat::MiddleEntry => middle[0] += 1,
        Cheat::MiddleLast => {
            let n = middle.len();
            middle[n - 1] -= 3;
        }
        _ => {}
    }
    middle
}

pub(super) fn feed_forward_weights(
    w: &zkmha_nn::FeedForwardWeights,
    all: &ModelWeights,
) -> zkmha_nn::FeedForwardWeights {
    let mut w = w.clone();
    match cheat() {
        Cheat::FirstNormWeights => w.norm = all.norm.clone().unwrap(),
        Cheat::SwapGateUp => {
            let gate = w.mlp.gate.clone().unwrap();
            w.mlp.gate = Some(w.mlp.up.clone());
            w.mlp.up = gate;
        }
        Cheat::ZeroDownBias => w.mlp.down.bias.iter_mut().for_each(|b| *b = 0),
        _ => {}
    }
    w
}

pub(super) fn output(mut output: Vec<i64>) -> Vec<i64> {
    if matches!(cheat(), Cheat::OutputZeta | Cheat::OutputZetaAlpha | Cheat::Output) {
        output[0] += 1;
    }
    output
}

pub(super) fn zeta_shift() -> Fr {
    if matches!(cheat(), Cheat::OutputZeta | Cheat::OutputZetaAlpha) { Fr::one() } else { Fr::from(0u64) }
}

pub(super) fn alpha_shift() -> Fr {
    if cheat() == Cheat::OutputZetaAlpha { Fr::one() } else { Fr::from(0u64) }
}

fn shapes() -> Vec<ModelShape> {
    use common::{base, with_mlp, with_norm};
    use zkmha_nn::NormKind;
    vec![
        common::modes(&with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Layer), false, 24))[0].1,
        common::modes(&with_mlp(with_norm(base(3, 2, 4, 4, 10), NormKind::Rms), true, 20))[1].1,
        // One token (the norms' appended zero row).
        common::modes(&with_mlp(with_norm(base(1, 2, 4, 4, 12), NormKind::Rms), true, 16))[0].1,
    ]
}

fn attempt<M: Mode>(
    shape: &ModelShape,
    cheat_with: Cheat,
) -> Result<Result<VerifierTimings, AttentionError>, AttentionError> {
    let softmax = common::modes(shape)[0].0;
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let weights = common::weights(shape, 3);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &weights, &mut rng).unwrap();
    let h = common::hidden_state(shape, 3).unwrap();
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
    let cheats = [
        Cheat::MiddleEntry,
        Cheat::MiddleLast,
        Cheat::FirstNormWeights,
        Cheat::SwapGateUp,
        Cheat::ZeroDownBias,
        Cheat::OutputZeta,
        Cheat::OutputZetaAlpha,
        Cheat::Output,
    ];
    let mut report = Vec::new();
    for (i, shape) in shapes().iter().enumerate() {
        let honest = attempt::<M>(shape, Cheat::Honest);
        assert!(matches!(honest, Ok(Ok(_))), "honest {i}: {honest:?}");
        for cheat_with in cheats {
            let gated = shape.mlp.unwrap().params.gate.is_some();
            if (cheat_with == Cheat::SwapGateUp && !gated) || (cheat_with == Cheat::ZeroDownBias && gated) {
                continue;
            }
            let outcome = attempt::<M>(shape, cheat_with);
            let line = format!("{} shape {i} {cheat_with:?}: {outcome:?}", std::any::type_name::<M>());
            println!("{line}");
            report.push((line, matches!(outcome, Ok(Ok(_)))));
        }
    }
    let accepted: Vec<_> = report.iter().filter(|(_, a)| *a).map(|(l, _)| l.clone()).collect();
    assert!(accepted.is_empty(), "FORGERIES ACCEPTED: {accepted:#?}");
}

#[test]
fn malicious_mlp_provers_are_rejected_in_the_plain_mode() {
    run::<Plain>();
}

#[test]
fn malicious_mlp_provers_are_rejected_in_zero_knowledge() {
    run::<Zk>();
}
