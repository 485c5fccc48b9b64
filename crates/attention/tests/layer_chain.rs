//! Layers chained by committed boundary activations (`zkmha_attention::layer_chain`), in both
//! modes: three whole pre-norm layers proven from the boundaries one forward pass committed, in
//! another order than the layers', verify as one chain whose last output is the forward pass's;
//! layers swapped, repeated, missing, or proven from another hidden state break the chain by
//! name; a committed output that is not the layer's output is rejected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{base, hidden_state, modes as softmax_modes, with_mlp, with_norm};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::block::{
    BlockEnds, Boundary, ModelBlockProof, block_hyrax_params, block_output, commit_boundary,
    commit_model_with, normalized_input, prove_block, prove_linked_block, verify_block,
};
use zkmha_attention::layer_chain::check_links;
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{LayerOutput, ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::norm::NormKind;
use zkmha_attention::{AttentionError, MaskKind, SoftmaxMode};
use zkmha_pcs::HyraxParams;

in_both_modes!(
    three_layers_proven_out_of_order_verify_as_one_chain,
    layers_swapped_repeated_or_missing_break_the_chain,
    a_layer_proven_from_another_hidden_state_breaks_the_chain,
    a_public_output_inside_or_a_committed_last_output_breaks_the_chain,
    another_output_commitment_is_rejected,
    a_boundary_that_is_not_the_output_is_refused_by_the_prover,
);

const LAYERS: usize = 3;

/// A gated Llama-like layer (5 tokens, `d_model = 10`, 2 heads, hidden 20, RMSNorm).
fn shape() -> (SoftmaxMode, ModelShape) {
    let [(softmax, shape), _] =
        softmax_modes(&with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Rms), true, 20));
    (softmax, shape)
}

/// The chain's model and its forward pass: every layer's weights and commitment, the
/// boundaries `H_0 … H_3` (the first three committed).
struct Chain<M: Mode> {
    params: HyraxParams,
    shape: ModelShape,
    softmax: SoftmaxMode,
    weights: Vec<ModelWeights>,
    models: Vec<(zkmha_attention::model_layer::ModelCommitment, Vec<M::Blinds>)>,
    hidden: Vec<Vec<i64>>,
    boundaries: Vec<Boundary<M::Blinds>>,
    rng: ChaCha20Rng,
}

impl<M: Mode> Chain<M> {
    fn new() -> Self {
        let (softmax, shape) = shape();
        let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let weights: Vec<ModelWeights> =
            (0..LAYERS as u64).map(|l| common::weights(&shape, 10 + l)).collect();
        let models =
            weights.iter().map(|w| commit_model_with::<M>(&params, &shape, w, &mut rng).unwrap()).collect();
        let mut hidden = vec![hidden_state(&shape, 7).unwrap()];
        for w in &weights {
            let h = hidden.last().unwrap();
            let x = normalized_input(&shape, w, h).unwrap();
            hidden.push(block_output(&shape, MaskKind::Causal, softmax, &x, Some(h), w).unwrap());
        }
        let boundaries = hidden[..LAYERS]
            .iter()
            .map(|h| commit_boundary::<M>(&params, &shape, softmax, h.clone(), &mut rng).unwrap())
            .collect();
        Self { params, shape, softmax, weights, models, hidden, boundaries, rng }
    }

    /// Proves layer `l` from boundary `input` (the honest `H_l` unless given) to the next
    /// boundary (public for the last layer).
    fn prove(
        &mut self,
        l: usize,
        input: Option<&Boundary<M::Blinds>>,
        output: Option<&Boundary<M::Blinds>>,
    ) -> Result<(ModelStatement, ModelBlockProof<M>), AttentionError> {
        let input = input.unwrap_or(&self.boundaries[l]);
        let output = output.or(self.boundaries.get(l + 1));
        let x = normalized_input(&self.shape, &self.weights[l], &input.values).unwrap();
        let (model, blinds) = &self.models[l];
        let ends = BlockEnds { input: Some(input), output };
        let (statement, proof, _) = prove_linked_block::<M>(
            &self.params,
            &self.shape,
            MaskKind::Causal,
            self.softmax,
            &x,
            ends,
            &self.weights[l],
            model,
            blinds,
            &mut self.rng,
        )?;
        Ok((statement, proof))
    }

    fn prove_all(&mut self) -> Vec<(ModelStatement, ModelBlockProof<M>)> {
        (0..LAYERS).map(|l| self.prove(l, None, None).unwrap()).collect()
    }
}

fn verify_all<M: Mode>(params: &HyraxParams, links: &[(ModelStatement, ModelBlockProof<M>)]) {
    for (l, (statement, proof)) in links.iter().enumerate() {
        verify_block::<M>(params, statement, proof).unwrap_or_else(|e| panic!("layer {l}: {e}"));
    }
}

fn links<M: Mode>(proofs: &[&(ModelStatement, ModelBlockProof<M>)]) -> Result<(), AttentionError> {
    check_links(proofs.iter().map(|(s, _)| s), proofs.len())
}

fn broken(layer: usize, reason: &'static str) -> Result<(), AttentionError> {
    Err(AttentionError::BrokenChain { layer, reason })
}

const NOT_JOINED: &str = "its hidden state is not the previous layer's committed output";

/// Layer 2, then 0, then 1: each from the boundaries alone; the chain's last output is the
/// forward pass's `H_3`, and every layer's statement holds the boundaries' commitments as
/// they are.
fn three_layers_proven_out_of_order_verify_as_one_chain<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let third = chain.prove(2, None, None).unwrap();
    let first = chain.prove(0, None, None).unwrap();
    let second = chain.prove(1, None, None).unwrap();
    let proofs = [first, second, third];
    verify_all::<M>(&chain.params, &proofs);
    links::<M>(&proofs.iter().collect::<Vec<_>>()).unwrap();
    for (l, (statement, _)) in proofs.iter().enumerate() {
        assert_eq!(statement.residual.as_ref(), Some(&chain.boundaries[l].commitment));
    }
    assert_eq!(proofs[2].0.output, LayerOutput::Public(chain.hidden[3].clone()));
    // The layers are not the identity: every boundary differs from the one before.
    assert!(chain.hidden.windows(2).all(|w| w[0] != w[1]));
}

fn layers_swapped_repeated_or_missing_break_the_chain<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let p = chain.prove_all();
    assert_eq!(links::<M>(&[&p[1], &p[0], &p[2]]), broken(1, NOT_JOINED));
    assert_eq!(links::<M>(&[&p[0], &p[0], &p[2]]), broken(1, NOT_JOINED));
    assert_eq!(links::<M>(&[&p[0], &p[2]]), broken(1, NOT_JOINED));
    assert_eq!(links::<M>(&[&p[0], &p[1], &p[1]]), broken(2, NOT_JOINED));
    assert_eq!(
        check_links(p.iter().map(|(s, _)| s), 4),
        broken(3, "the chain has another number of layer proofs than its key has layers")
    );
}

/// Layer 1 proven honestly, but from a hidden state `H_1'` other than layer 0's output (one
/// entry moved by one): its own proof verifies; the chain does not.
fn a_layer_proven_from_another_hidden_state_breaks_the_chain<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let p = chain.prove_all();
    let mut other = chain.hidden[1].clone();
    other[3] += 1;
    let x = normalized_input(&chain.shape, &chain.weights[1], &other).unwrap();
    let next =
        block_output(&chain.shape, MaskKind::Causal, chain.softmax, &x, Some(&other), &chain.weights[1])
            .unwrap();
    let input =
        commit_boundary::<M>(&chain.params, &chain.shape, chain.softmax, other, &mut chain.rng).unwrap();
    let output =
        commit_boundary::<M>(&chain.params, &chain.shape, chain.softmax, next, &mut chain.rng).unwrap();
    let forged = chain.prove(1, Some(&input), Some(&output)).unwrap();
    verify_block::<M>(&chain.params, &forged.0, &forged.1).unwrap();
    assert_eq!(links::<M>(&[&p[0], &forged, &p[2]]), broken(1, NOT_JOINED));
    assert_eq!(links::<M>(&[&p[0], &forged]), broken(1, NOT_JOINED));
}

fn a_public_output_inside_or_a_committed_last_output_breaks_the_chain<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let p = chain.prove_all();
    assert_eq!(links::<M>(&[&p[0], &p[1]]), broken(1, "the last layer's output is committed, not public"));
    // Layer 0 with a public output (its plain block proof) before layer 1.
    let (model, blinds) = &chain.models[0];
    let x = normalized_input(&chain.shape, &chain.weights[0], &chain.hidden[0]).unwrap();
    let (statement, proof, _) = prove_block::<M>(
        &chain.params,
        &chain.shape,
        MaskKind::Causal,
        chain.softmax,
        &x,
        Some(&chain.hidden[0]),
        &chain.weights[0],
        model,
        blinds,
        &mut chain.rng,
    )
    .unwrap();
    let public = (statement, proof);
    assert_eq!(
        links::<M>(&[&public, &p[1], &p[2]]),
        broken(0, "its output is public, but it is not the last layer")
    );
}

/// Another boundary's commitment put in place of layer 0's output (the statement changed after
/// proving): the proof opens the claimed output against it and fails.
fn another_output_commitment_is_rejected<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let p = chain.prove_all();
    let (mut statement, proof) = p[0].clone();
    statement.output = LayerOutput::Committed(chain.boundaries[2].commitment.clone());
    assert!(verify_block::<M>(&chain.params, &statement, &proof).is_err());
    let (mut statement, proof) = p[1].clone();
    statement.residual = Some(chain.boundaries[2].commitment.clone());
    assert!(verify_block::<M>(&chain.params, &statement, &proof).is_err());
}

fn a_boundary_that_is_not_the_output_is_refused_by_the_prover<M: Mode>() {
    let mut chain = Chain::<M>::new();
    let mut wrong = chain.hidden[2].clone();
    wrong[0] += 1;
    let output =
        commit_boundary::<M>(&chain.params, &chain.shape, chain.softmax, wrong, &mut chain.rng).unwrap();
    let refused = chain.prove(1, None, Some(&output));
    assert!(
        matches!(&refused, Err(AttentionError::InvalidShape(m)) if m.contains("not this block's output")),
        "{refused:?}"
    );
}
