//! Malicious provers of post-norm blocks (BERT's layer: `Z = X + Y`, `X₂ = norm₂(Z)`,
//! `H' = norm_p(X₂ + MLP(X₂))`): each changes the honest prover at one step and claims the
//! output it then computes — a false statement. Each must be rejected by `verify_block` in
//! both modes.
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
    /// The second residual adds the MLP's output to `Z` (a pre-norm layer's residual), not to
    /// the normed `X₂`; the post-norm is proven honestly on that sum.
    PreNormResidual,
    /// The post-norm runs on `S₂ + e_0` (another input than `X₂ + Y₂`), honestly from there.
    ShiftedSum,
    /// The post-norm runs with the MLP's norm's `γ₂`, `β₂` (the wrong weight table).
    MlpNormWeights,
    /// The output is `S₂` itself (the model without its last norm, stated as having it); the
    /// norm is proven honestly on `S₂`.
    SkipPostNorm,
    /// The honest output, but the second residual's sent values `ξ`, `σ` both moved by one
    /// (so the claim `Ỹ₂(r_z) = σ − ξ` stays true and only the claims on `X₂`, `S₂` are false).
    ResidualValues,
    /// BERT's layer 0 (the norm from `H` to `X` proven): the first residual adds `Y` to `H`
    /// (a pre-norm layer's), not to `X`.
    ResidualOnHidden,
}

thread_local! {
    static CHEAT: Cell<Cheat> = const { Cell::new(Cheat::Honest) };
}

fn cheat() -> Cheat {
    CHEAT.with(Cell::get)
}

/// The prover's hook on the post-norm's input `S₂` and weights.
pub(super) fn sum_and_weights(
    mut sum: Vec<i64>,
    middle: &[i64],
    mlp_output: &[i64],
    w: &zkmha_nn::NormWeights,
    all: &ModelWeights,
) -> (Vec<i64>, zkmha_nn::NormWeights) {
    let mut w = w.clone();
    match cheat() {
        Cheat::PreNormResidual => sum = middle.iter().zip(mlp_output).map(|(z, y)| z + y).collect(),
        Cheat::ShiftedSum => sum[0] += 1,
        Cheat::MlpNormWeights => w = all.feed_forward.as_ref().unwrap().norm.clone(),
        _ => {}
    }
    (sum, w)
}

/// The prover's hook on what the first residual adds `Y` to (`honest`), `H` given.
pub(super) fn residual_base<'a>(honest: &'a [i64], hidden: Option<&'a [i64]>) -> &'a [i64] {
    match (cheat(), hidden) {
        (Cheat::ResidualOnHidden, Some(h)) => h,
        _ => honest,
    }
}

/// The prover's hook on `ξ`, `σ` before they are sent.
pub(super) fn residual_values(values: [Fr; 2]) -> [Fr; 2] {
    if cheat() == Cheat::ResidualValues { values.map(|v| v + Fr::one()) } else { values }
}

/// The prover's hook on the block's output.
pub(super) fn output(post: &NormStepData) -> Vec<i64> {
    if cheat() == Cheat::SkipPostNorm { post.witness.input.clone() } else { post.witness.output.clone() }
}

fn shapes() -> Vec<ModelShape> {
    use common::{base, grouped, post_norm_layer};
    use zkmha_nn::NormKind;
    let first = |shape: ModelShape| common::modes(&shape)[0].1;
    let second = |shape: ModelShape| common::modes(&shape)[1].1;
    vec![
        second(post_norm_layer(base(3, 2, 4, 4, 10), NormKind::Layer, 20)),
        // One token (the norms' appended zero row).
        first(post_norm_layer(base(1, 2, 4, 4, 12), NormKind::Layer, 16)),
        first(post_norm_layer(grouped(5, 4, 2, 4, 4, 7), NormKind::Rms, 12)),
        // BERT's layer 0: the embeddings' LayerNorm from H to X proven, the residual on X.
        second(common::embedding_norm_layer(base(4, 2, 4, 4, 10), 20)),
    ]
}

/// Proves `shape`'s block with the prover changed by `cheat_with`, its output public or (a
/// chain's link) the boundary the cheating forward pass committed, and verifies it.
fn attempt<M: Mode>(
    shape: &ModelShape,
    cheat_with: Cheat,
    output_kind: OutputKind,
) -> Result<Result<VerifierTimings, AttentionError>, AttentionError> {
    let softmax = common::modes(shape)[0].0;
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(29);
    let weights = common::weights(shape, 5);
    let (model, blinds) = commit_model_with::<M>(&params, shape, &weights, &mut rng).unwrap();
    let x = common::block_input(shape, 5);
    let h = common::hidden_state(shape, 5);
    let h_boundary = h.clone().map(|h| commit_boundary::<M>(&params, shape, softmax, h, &mut rng).unwrap());
    let honest = block_output(shape, MaskKind::None, softmax, &x, h.as_deref(), &weights).unwrap();
    CHEAT.with(|c| c.set(cheat_with));
    // The cheating forward pass's output, committed as the boundary a chain would hold.
    let proved = block_output(shape, MaskKind::None, softmax, &x, h.as_deref(), &weights)
        .and_then(|claimed| commit_boundary::<M>(&params, shape, softmax, claimed, &mut rng))
        .and_then(|boundary| {
            let output = (output_kind == OutputKind::Committed).then_some(&boundary);
            let ends = BlockEnds { input: h_boundary.as_ref(), output };
            let proved = prove_linked_block::<M>(
                &params,
                shape,
                MaskKind::None,
                softmax,
                &x,
                ends,
                &weights,
                &model,
                &blinds,
                &mut rng,
            )?;
            Ok((proved, boundary.values.clone()))
        });
    CHEAT.with(|c| c.set(Cheat::Honest));
    let ((statement, proof, _), claimed) = proved?;
    if !matches!(cheat_with, Cheat::Honest | Cheat::ResidualValues) {
        // The statement is false: its output is not the block's.
        assert_ne!(claimed, honest, "{cheat_with:?} claims the true output");
    }
    Ok(verify_block::<M>(&params, &statement, &proof))
}

fn run<M: Mode>() {
    let mut report = Vec::new();
    let cheats = [
        Cheat::PreNormResidual,
        Cheat::ShiftedSum,
        Cheat::MlpNormWeights,
        Cheat::SkipPostNorm,
        Cheat::ResidualValues,
        Cheat::ResidualOnHidden,
    ];
    let kinds = [OutputKind::Public, OutputKind::Committed];
    for (i, shape) in shapes().iter().enumerate() {
        for kind in kinds {
            let honest = attempt::<M>(shape, Cheat::Honest, kind);
            assert!(matches!(honest, Ok(Ok(_))), "honest {i} {kind:?}: {honest:?}");
        }
        let applies = |c: &Cheat| *c != Cheat::ResidualOnHidden || shape.norm.is_some();
        for (cheat_with, kind) in cheats.into_iter().filter(applies).flat_map(|c| kinds.map(|k| (c, k))) {
            let outcome = attempt::<M>(shape, cheat_with, kind);
            let line =
                format!("{} shape {i} {cheat_with:?} {kind:?}: {outcome:?}", std::any::type_name::<M>());
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
fn malicious_post_norm_provers_are_rejected_in_the_plain_mode() {
    run::<Plain>();
}

#[test]
fn malicious_post_norm_provers_are_rejected_in_zero_knowledge() {
    run::<Zk>();
}
