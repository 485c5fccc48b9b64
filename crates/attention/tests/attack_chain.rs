//! The fresh-context review of the layer chain (2026-11-26), kept as regressions: malicious
//! provers against `layer_chain::verify_chain`, `check_links` and `block::verify_block` with
//! committed outputs, each of which must be rejected. The first was accepted before the links
//! compared the layers' token counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{base, hidden_state, modes as softmax_modes, with_mlp, with_norm};
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_attention::block::{
    BlockEnds, Boundary, ModelBlockProof, block_hyrax_params, block_output, commit_boundary,
    commit_model_with, normalized_input, prove_linked_block, verify_block,
};
use zkmha_attention::layer_chain::{ChainLink, check_links, verify_chain};
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{LayerOutput, ModelCommitment, ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::model_quantization::{MlpQuantization, ModelQuantization, NormQuantization};
use zkmha_attention::norm::NormKind;
use zkmha_attention::verifier_key::{ModelVerifierKey, WeightCommitments};
use zkmha_attention::{AttentionError, MaskKind, Residual, SoftmaxMode};

in_both_modes!(
    a_chain_whose_layers_have_different_token_counts_is_rejected,
    statement_malleability_is_rejected,
    a_forged_committed_output_value_is_rejected,
    links_without_weight_commitments_verify_against_their_own_keys_only,
);

/// The layer shape of tests/layer_chain.rs (gated Llama-like, `d_model = 10`, RMSNorm), for
/// the `s` the key is asked for.
fn template() -> ModelShape {
    let [(_, shape), _] = softmax_modes(&with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Rms), true, 20));
    shape
}

/// A verifier key for the template's layer with `commitment` (any sequence length): score
/// scale 2^−10/√4 = 1/2048 (the tests use 1/1600).
fn key<M: Mode>(commitment: ModelCommitment) -> ModelVerifierKey {
    let t = template();
    // γ's scale as the calibration sets it: f = k + g − f_x (ModelQuantization::check_norm_scales).
    let g = |n: zkmha_attention::norm::BlockNorm| n.shift_bits as i32 - n.scale_bits as i32 + 5;
    let quantization = ModelQuantization {
        input_fraction_bits: 5,
        hidden_fraction_bits: 5,
        weight_fraction_bits: [6, 6, 6, 6],
        shifts: t.shifts,
        norm: Some(NormQuantization { block: t.norm.unwrap(), scale_fraction_bits: g(t.norm.unwrap()) }),
        mlp: Some(MlpQuantization {
            block: t.mlp.unwrap(),
            norm_scale_fraction_bits: g(t.mlp.unwrap().norm),
            // As the calibration sets them (ModelQuantization::check_mlp_scales): the gate lands
            // the activation's input at 2^10 (5 + 13 − 8), the down projection Y₂ at 2^5
            // (20 = 10 + (5 + 9 − 8) + 9 − 5).
            weight_fraction_bits: [9, 13, 9],
        }),
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    ModelVerifierKey {
        description: "attack".into(),
        model_width: t.model_width,
        heads: t.attention.heads,
        head_dim: t.attention.head_dim,
        value_head_dim: t.attention.value_head_dim,
        mask: MaskKind::Causal,
        residual: Residual::HiddenState,
        key_value_heads: t.key_value_heads,
        rotary: None,
        quantization,
        weight_commitments: WeightCommitments::of::<M>(),
        commitment,
    }
}

fn shape_softmax(key: &ModelVerifierKey, s: usize) -> (ModelShape, SoftmaxMode) {
    let shape = key.shape(s).unwrap();
    let softmax = key.quantization.softmax(&shape.attention).unwrap();
    (shape, softmax)
}

fn forward(shape: &ModelShape, softmax: SoftmaxMode, w: &ModelWeights, h: &[i64]) -> Vec<i64> {
    let x = normalized_input(shape, w, h).unwrap();
    block_output(shape, MaskKind::Causal, softmax, &x, Some(h), w).unwrap()
}

#[allow(clippy::too_many_arguments)]
fn prove<M: Mode>(
    shape: &ModelShape,
    softmax: SoftmaxMode,
    w: &ModelWeights,
    model: &(ModelCommitment, Vec<M::Blinds>),
    input: &Boundary<M::Blinds>,
    output: Option<&Boundary<M::Blinds>>,
    rng: &mut ChaCha20Rng,
) -> ChainLink<M> {
    let params = block_hyrax_params::<M>(shape, softmax).unwrap();
    let x = normalized_input(shape, w, &input.values).unwrap();
    let (statement, proof, _) = prove_linked_block::<M>(
        &params,
        shape,
        MaskKind::Causal,
        softmax,
        &x,
        BlockEnds { input: Some(input), output },
        w,
        &model.0,
        &model.1,
        rng,
    )
    .unwrap();
    ChainLink { statement, proof }
}

/// The attack (statement: "every layer maps H_ℓ to H_{ℓ+1} on the chain's tokens"): layer 0 is
/// proven for s = 5 tokens, layer 1 for s = 8. Both pad to ŝ = 8 rows, so the boundary H_1's
/// commitment (5 real rows, 3 zero padded rows) is byte-equal to an 8-token hidden state whose
/// last 3 tokens are zero. Each layer's proof verifies alone; before `check_links` compared
/// the layers' token counts the chain verified too, reporting an 8-token output H_2 although,
/// for the committed 8-token H_0 (its 3 padded rows zero, pinned by C(H_0)),
/// layer_1(layer_0(H_0)) differs from H_2: tokens 5..7 never went through layer 0.
fn a_chain_whose_layers_have_different_token_counts_is_rejected<M: Mode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let probe = key::<M>(ModelCommitment { tables: Vec::new() });
    let (shape5, softmax5) = shape_softmax(&probe, 5);
    let (shape8, softmax8) = shape_softmax(&probe, 8);
    let params = block_hyrax_params::<M>(&shape5, softmax5).unwrap();
    let weights: Vec<ModelWeights> = (0..2u64).map(|l| common::weights(&shape5, 10 + l)).collect();
    let models: Vec<(ModelCommitment, Vec<M::Blinds>)> =
        weights.iter().map(|w| commit_model_with::<M>(&params, &shape5, w, &mut rng).unwrap()).collect();
    let keys: Vec<ModelVerifierKey> = models.iter().map(|(c, _)| key::<M>(c.clone())).collect();

    // The forward pass: layer 0 on 5 tokens, its output extended by 3 zero tokens, layer 1 on 8.
    let h0 = hidden_state(&shape5, 7).unwrap();
    let h1 = forward(&shape5, softmax5, &weights[0], &h0);
    let mut h1_8 = h1.clone();
    h1_8.extend(vec![0i64; 3 * 10]);
    let h2 = forward(&shape8, softmax8, &weights[1], &h1_8);

    let b0 = commit_boundary::<M>(&params, &shape5, softmax5, h0.clone(), &mut rng).unwrap();
    let b1_5 = commit_boundary::<M>(&params, &shape5, softmax5, h1.clone(), &mut rng).unwrap();
    // The same commitment and blinds, read as 8 tokens.
    let b1_8 =
        Boundary { values: h1_8.clone(), commitment: b1_5.commitment.clone(), blinds: b1_5.blinds.clone() };

    let l0 = prove::<M>(&shape5, softmax5, &weights[0], &models[0], &b0, Some(&b1_5), &mut rng);
    let l1 = prove::<M>(&shape8, softmax8, &weights[1], &models[1], &b1_8, None, &mut rng);
    assert_eq!(l0.statement.shape.attention.seq_len, 5);
    assert_eq!(l1.statement.shape.attention.seq_len, 8);

    let verdict = verify_chain::<M>(&keys, &[l0.clone(), l1.clone()]);

    // The statement is false: the honest 8-token forward pass from the committed H_0.
    let mut h0_8 = h0.clone();
    h0_8.extend(vec![0i64; 3 * 10]);
    if !M::HIDING {
        // C(H_0) (committed for 5 tokens) is the commitment of the 8-token H_0 with zero rows.
        let c8 = commit_boundary::<M>(&params, &shape8, softmax8, h0_8.clone(), &mut rng).unwrap();
        assert_eq!(Some(&c8.commitment), l0.statement.residual.as_ref());
    }
    let true_h1 = forward(&shape8, softmax8, &weights[0], &h0_8);
    let true_h2 = forward(&shape8, softmax8, &weights[1], &true_h1);
    assert_eq!(&true_h1[..50], &h1[..], "tokens 0..4 agree (causal)");
    assert_ne!(&true_h1[50..], &h1_8[50..], "layer 0 would have changed tokens 5..7");
    assert_ne!(true_h2, h2, "the chain's 8-token output is not layer_1(layer_0(H_0))");
    assert_eq!(l1.statement.output, LayerOutput::Public(h2.clone()));
    // Each layer's proof verifies alone; the chain does not.
    for (key, link) in keys.iter().zip([&l0, &l1]) {
        zkmha_attention::verifier_key::verify_with_key(key, &link.statement, &link.proof).unwrap();
    }
    assert_eq!(
        verdict.map(|_| ()),
        Err(AttentionError::BrokenChain {
            layer: 1,
            reason: "it is proven on another number of tokens (or another width) than the chain's first layer"
        })
    );
}

/// An honest 2-layer chain on s = 5 tokens in mode `M` (seeds: the randomness, the weights,
/// `H_0`): the boundaries `H_0`, `H_1` committed, layer 0's output committed, layer 1's public.
struct TwoLayers<M: Mode> {
    params: zkmha_pcs::HyraxParams,
    models: Vec<(ModelCommitment, Vec<M::Blinds>)>,
    keys: Vec<ModelVerifierKey>,
    h1: Vec<i64>,
    b0: Boundary<M::Blinds>,
    b1: Boundary<M::Blinds>,
    l0: ChainLink<M>,
    l1: ChainLink<M>,
}

fn two_layers<M: Mode>(seed: u64, weight_seed: u64, hidden_seed: u64) -> TwoLayers<M> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let probe = key::<M>(ModelCommitment { tables: Vec::new() });
    let (shape, softmax) = shape_softmax(&probe, 5);
    let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
    let weights: Vec<ModelWeights> = (0..2u64).map(|l| common::weights(&shape, weight_seed + l)).collect();
    let models: Vec<(ModelCommitment, Vec<M::Blinds>)> =
        weights.iter().map(|w| commit_model_with::<M>(&params, &shape, w, &mut rng).unwrap()).collect();
    let keys: Vec<ModelVerifierKey> = models.iter().map(|(c, _)| key::<M>(c.clone())).collect();
    let h0 = hidden_state(&shape, hidden_seed).unwrap();
    let h1 = forward(&shape, softmax, &weights[0], &h0);
    let b0 = commit_boundary::<M>(&params, &shape, softmax, h0, &mut rng).unwrap();
    let b1 = commit_boundary::<M>(&params, &shape, softmax, h1.clone(), &mut rng).unwrap();
    let l0 = prove::<M>(&shape, softmax, &weights[0], &models[0], &b0, Some(&b1), &mut rng);
    let l1 = prove::<M>(&shape, softmax, &weights[1], &models[1], &b1, None, &mut rng);
    TwoLayers { params, models, keys, h1, b0, b1, l0, l1 }
}

/// Statement malleability on an honest 2-layer chain (s = 5): kind flipped, commitments
/// swapped, η removed; every one must be rejected.
fn statement_malleability_is_rejected<M: Mode>() {
    let TwoLayers { params, keys, h1, b0, b1, l0, l1, .. } = two_layers::<M>(6, 20, 8);
    verify_chain::<M>(&keys, &[l0.clone(), l1.clone()]).unwrap();
    let v = |s: &ModelStatement, p: &ModelBlockProof<M>| verify_block::<M>(&params, s, p).map(|_| ());
    let mut report = Vec::new();
    // (a) layer 0's committed output flipped to the public H_1 (the proof still has η).
    let mut s = l0.statement.clone();
    s.output = LayerOutput::Public(h1.clone());
    report.push(("kind flipped to public, η kept", v(&s, &l0.proof)));
    // (b) ... and η dropped: a plain-shaped proof for the public statement.
    let mut p = l0.proof.clone();
    p.committed_output = None;
    report.push(("kind flipped to public, η dropped", v(&s, &p)));
    // (c) committed statement, η dropped.
    report.push(("committed, η dropped", v(&l0.statement, &p)));
    // (d) last layer's public output turned into a commitment of it, η absent.
    let mut s = l1.statement.clone();
    s.output = LayerOutput::Committed(b1.commitment.clone());
    report.push(("public → committed, no η", v(&s, &l1.proof)));
    // (e) output and residual commitments swapped.
    let mut s = l0.statement.clone();
    s.output = LayerOutput::Committed(b0.commitment.clone());
    s.residual = Some(b1.commitment.clone());
    report.push(("residual and output swapped", v(&s, &l0.proof)));
    // (f) the same proof with its output commitment replaced by its residual.
    let mut s = l0.statement.clone();
    s.output = LayerOutput::Committed(b0.commitment.clone());
    report.push(("output := residual commitment", v(&s, &l0.proof)));
    // (g) a chain of one layer whose output is committed; a chain ending with layer 0.
    report.push((
        "1-layer chain with committed output",
        verify_chain::<M>(&keys[..1], std::slice::from_ref(&l0)).map(|_| ()),
    ));
    // (h) check_links with 0 layers.
    report.push(("check_links on no layers", check_links(std::iter::empty(), 0)));
    report.push(("verify_chain on no layers", verify_chain::<M>(&[], &[]).map(|_| ())));
    let accepted: Vec<_> = report.iter().filter(|(_, r)| r.is_ok()).collect();
    assert!(accepted.is_empty(), "ACCEPTED: {accepted:?}");
}

/// A plain proof's η (committed_output) or ζ changed after proving: rejected (the transcript
/// absorbs it, and the openings check it).
fn a_forged_committed_output_value_is_rejected<M: Mode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let probe = key::<M>(ModelCommitment { tables: Vec::new() });
    let (shape, softmax) = shape_softmax(&probe, 5);
    let params = block_hyrax_params::<M>(&shape, softmax).unwrap();
    let w = common::weights(&shape, 30);
    let model = commit_model_with::<M>(&params, &shape, &w, &mut rng).unwrap();
    let h0 = hidden_state(&shape, 9).unwrap();
    let h1 = forward(&shape, softmax, &w, &h0);
    let b0 = commit_boundary::<M>(&params, &shape, softmax, h0, &mut rng).unwrap();
    let b1 = commit_boundary::<M>(&params, &shape, softmax, h1, &mut rng).unwrap();
    let l0 = prove::<M>(&shape, softmax, &w, &model, &b0, Some(&b1), &mut rng);
    // η replaced by α (another valid-looking sent value of the same proof).
    let mut p = l0.proof.clone();
    p.committed_output = Some(p.residual_input.clone());
    let r = verify_block::<M>(&params, &l0.statement, &p).map(|_| ());
    assert!(r.is_err());
}

/// A chain's proof leaves each layer's weight commitments out (`ChainLink::
/// without_weight_commitments`, chain files): the verifier reads the layer key's in their
/// place. The honest chain verifies; the keys swapped, or a link carrying another layer's
/// commitments, do not; and such a statement validates only as a link's.
fn links_without_weight_commitments_verify_against_their_own_keys_only<M: Mode>() {
    let TwoLayers { models, keys, l0, l1, .. } = two_layers::<M>(8, 30, 9);
    let lean = [l0.clone().without_weight_commitments(), l1.clone().without_weight_commitments()];
    assert!(lean.iter().all(|l| l.statement.model.tables.is_empty()));
    verify_chain::<M>(&keys, &lean).unwrap();
    // The full links verify as before.
    verify_chain::<M>(&keys, &[l0, l1.clone()]).unwrap();
    // Each proof is checked against its own key's commitments.
    let swapped = [keys[1].clone(), keys[0].clone()];
    assert!(matches!(verify_chain::<M>(&swapped, &lean), Err(AttentionError::InChainLayer { layer: 0, .. })));
    // A link that carries commitments must carry its key's: layer 0's in layer 1's link.
    let mut other = lean[1].clone();
    other.statement.model = models[0].0.clone();
    assert!(matches!(
        verify_chain::<M>(&keys, &[lean[0].clone(), other]),
        Err(AttentionError::InChainLayer { layer: 1, .. })
    ));
    // A statement without weight commitments is a link's, never a layer proof's on its own.
    lean[0].statement.validate_without_weight_commitments().unwrap();
    assert!(lean[0].statement.validate().is_err());
    assert!(l1.statement.validate_without_weight_commitments().is_err());
    l1.statement.validate().unwrap();
}

/// The layers' final group equations are checked in one MSM across the chain
/// (`Mode::check_pending`, `zkmha_zk::check_together`): the masks' last inner-product response
/// changed in either layer's proof — a false equation that only that MSM sees — fails the
/// joint check, named by its layer as verifying that layer alone names it; with both layers
/// false the first is named.
#[test]
fn a_false_final_response_in_any_layer_fails_the_joint_check_by_its_layer() {
    use zkmha_attention::mode::Zk;
    let TwoLayers { params, keys, l0, l1, .. } = two_layers::<Zk>(10, 40, 11);
    verify_chain::<Zk>(&keys, &[l0.clone(), l1.clone()]).unwrap();
    let shifted = |link: &ChainLink<Zk>, by: i64| {
        let mut link = link.clone();
        link.proof.session_proof.responses[1] += zkmha_field::fr_from_i64(by);
        link
    };
    let forged = |link: &ChainLink<Zk>| shifted(link, 1);
    let alone = verify_block::<Zk>(&params, &l1.statement, &forged(&l1).proof).unwrap_err();
    assert!(
        matches!(&alone, AttentionError::ZeroKnowledge { step: "the proof's group equations", .. }),
        "{alone:?}"
    );
    for (links, layer) in
        [([forged(&l0), l1.clone()], 0), ([l0.clone(), forged(&l1)], 1), ([forged(&l0), forged(&l1)], 0)]
    {
        match verify_chain::<Zk>(&keys, &links) {
            Err(AttentionError::InChainLayer { layer: named, source }) => {
                assert_eq!(named, layer);
                assert_eq!(format!("{source:?}"), format!("{alone:?}"));
            }
            other => panic!("layer {layer}'s false equation: {other:?}"),
        }
    }
    // Opposite errors on the bases the layers share (the same response +1 in layer 0, −1 in
    // layer 1) do not cancel: each layer's combination is weighted again after both are fixed.
    let opposite = verify_chain::<Zk>(&keys, &[shifted(&l0, 1), shifted(&l1, -1)]);
    assert!(matches!(opposite, Err(AttentionError::InChainLayer { layer: 0, .. })), "{opposite:?}");
    // The final equations are checked last, for every layer at once: a layer failing an
    // earlier check (layer 1's proof of another format version) is named before a layer
    // whose final equations are false (layer 0).
    let mut old_format = l1.clone();
    old_format.proof.version += 1;
    match verify_chain::<Zk>(&keys, &[forged(&l0), old_format]) {
        Err(AttentionError::InChainLayer { layer: 1, source }) => {
            assert!(matches!(*source, AttentionError::UnsupportedVersion(_)), "{source:?}")
        }
        other => panic!("layer 1's other format: {other:?}"),
    }
}
