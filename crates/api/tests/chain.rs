//! Consecutive layers proven as one inference through the library (`zkmha_api::model_chain`):
//! a three-layer Llama-style model committed at one residual stream scale, proven in both
//! modes from tokens, the chain's output against float64 run through the same layers, its
//! files read back, and the chains that must not verify: layers swapped, repeated or missing,
//! another model's key, another first layer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::CanonicalSerialize;
use std::path::PathBuf;
use std::sync::OnceLock;
use zkmha_api::model_chain::{
    ChainKey, ChainProof, CommittedChain, ProvedChain, commit_chain, open_layers, prove_chain,
    read_chain_key, read_chain_secret, verify_chain, write_chain_key, write_chain_secret,
};
use zkmha_api::{Error, Model, ModelInput, ModelOptions, WeightCommitments, example_model};
use zkmha_attention::AttentionError;
use zkmha_attention::model_layer::ModelStatement;

const LAYERS: usize = 3;

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zkmha-chain-{name}-{}", std::process::id()))
}

fn models(name: &str, layers: std::ops::Range<usize>) -> Vec<Model> {
    seeded_models(name, 7, layers)
}

fn seeded_models(name: &str, seed: u32, layers: std::ops::Range<usize>) -> Vec<Model> {
    let path = example_model::write_llama(&dir(name), seed, LAYERS).unwrap();
    open_layers(&path, &Default::default(), layers).unwrap()
}

fn proved(models: &[Model], kind: WeightCommitments) -> (CommittedChain, ProvedChain) {
    let committed = commit_chain(models, kind, &mut |_, _| {}).unwrap();
    let input = ModelInput::Tokens(vec![3, 1, 4, 1, 5]);
    let proved =
        prove_chain(&committed.key, committed.secret.as_ref(), models, &input, &mut |_, _| {}).unwrap();
    (committed, proved)
}

/// The three-layer model committed and proven once per kind from the tokens 3, 1, 4, 1, 5,
/// shared by the tests that only read (or clone and change) the proof: `proved` of the same
/// model file, which the tests otherwise repeated nine times.
fn shared(kind: WeightCommitments) -> &'static (CommittedChain, ProvedChain) {
    static BINDING: OnceLock<(CommittedChain, ProvedChain)> = OnceLock::new();
    static HIDING: OnceLock<(CommittedChain, ProvedChain)> = OnceLock::new();
    let cell = match kind {
        WeightCommitments::Binding => &BINDING,
        WeightCommitments::Hiding => &HIDING,
    };
    cell.get_or_init(|| proved(&models(&format!("shared-{kind:?}"), 0..LAYERS), kind))
}

fn invalid(result: Result<zkmha_api::Verified, Error>) -> AttentionError {
    match result {
        Err(Error::InvalidProof { error }) => error,
        other => panic!("expected an invalid proof, got {other:?}"),
    }
}

#[test]
fn three_layers_prove_and_verify_in_both_modes_near_float64() {
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proved) = shared(kind);
        let key = &committed.key;
        assert_eq!((key.first_layer, key.layers.len()), (0, LAYERS));
        let scales: Vec<i32> = key.layers.iter().map(|k| k.quantization.hidden_fraction_bits).collect();
        assert!(scales.windows(2).all(|w| w[0] == w[1]), "one residual stream scale: {scales:?}");
        assert_eq!(proved.proof.is_zero_knowledge(), kind == WeightCommitments::Hiding);
        let verified = verify_chain(key, &proved.proof).unwrap();
        // The whole model from tokens: the chain ends in the last token's logits, the last
        // hidden state stays committed.
        assert!(key.head.is_some());
        assert_eq!(verified.output.name(), "logits");
        let logits = verified.logits().unwrap();
        let proved_logits = proved.logits.as_ref().unwrap();
        assert_eq!(
            (logits.positions.as_slice(), logits.vocabulary),
            (&[4u64][..], example_model::VOCABULARY)
        );
        assert_eq!((&logits.values, &logits.predicted), (&proved_logits.values, &proved_logits.predicted));
        // From layer 0 of a Llama model: the tokens' embeddings are proven.
        assert!(key.embedding.is_some());
        assert_eq!(verified.token_ids(), Some(&[3u64, 1, 4, 1, 5][..]));
        assert_eq!(verified.tokens, 5);
        // The chain's output against float64 through the same three layers.
        let error = proved.accuracy.output.relative_l2_error;
        assert!(error < 0.02, "{kind:?}: relative L2 error {error}");
        let layers_error = proved.accuracy.attention.relative_l2_error;
        assert!(layers_error < 0.05, "{kind:?}: the layers' part {layers_error}");
    }
}

/// Each layer's statement holds the previous layer's output commitment as its hidden state;
/// only the last output is public.
#[test]
fn every_statement_links_to_the_next() {
    let (_, proved) = shared(WeightCommitments::Binding);
    let statements = proved.proof.statements();
    for pair in statements.windows(2) {
        assert_eq!(pair[0].output.commitment(), pair[1].residual.as_ref());
    }
    // A head follows the last layer: its output is committed, the head's input.
    assert!(statements[LAYERS - 1].output.commitment().is_some());
    // A chain that stops before the model's last layer has no head and ends in public.
    let shorter = self::models("links-shorter", 0..LAYERS - 1);
    let (committed, short) = self::proved(&shorter, WeightCommitments::Binding);
    assert!(committed.key.head.is_none() && short.logits.is_none());
    assert!(short.proof.statements()[LAYERS - 2].output.public().is_some());
    assert_eq!(
        verify_chain(&committed.key, &short.proof).unwrap().output.to_f64(),
        Some(short.output.clone())
    );
}

#[test]
fn files_round_trip_and_inspect() {
    let (committed, proved) = shared(WeightCommitments::Hiding);
    let d = dir("files");
    std::fs::create_dir_all(&d).unwrap();
    write_chain_key(&d.join("chain.vk"), &committed.key).unwrap();
    write_chain_secret(&d.join("chain.vk.secret"), committed.secret.as_ref().unwrap()).unwrap();
    proved.proof.write(&d.join("chain.proof")).unwrap();
    let key = read_chain_key(&d.join("chain.vk")).unwrap();
    assert_eq!(key, committed.key);
    assert_eq!(&read_chain_secret(&d.join("chain.vk.secret")).unwrap(), committed.secret.as_ref().unwrap());
    let proof = ChainProof::read(&d.join("chain.proof")).unwrap();
    assert_eq!(proof, proved.proof);
    let verified = verify_chain(&key, &proof).unwrap();
    assert_eq!(verified.logits().map(|l| l.values.clone()), proved.logits.as_ref().map(|l| l.values.clone()));
    let json = zkmha_api::inspect::read(&d.join("chain.proof")).unwrap().to_json();
    assert_eq!(json["kind"], "zero-knowledge chain proof");
    assert_eq!(json["layers"].as_array().map(Vec::len), Some(LAYERS));
    assert_eq!(json["layers"][1]["output"], "committed");
    assert_eq!(json["token_ids"], serde_json::json!([3, 1, 4, 1, 5]));
    // The weight commitments are the key's: the file leaves them out.
    assert!(proof.statements().iter().all(|s| s.model.tables.is_empty()));
    assert_eq!(json["layers"][0]["model_commitment"], serde_json::Value::Null);
    let weights: usize = key.layers.iter().map(|k| k.commitment.compressed_size()).sum();
    let with_weights: usize = proof
        .statements()
        .iter()
        .zip(&key.layers)
        .map(|(s, k)| ModelStatement { model: k.commitment.clone(), ..(*s).clone() }.compressed_size())
        .sum();
    let without: usize = proof.statements().iter().map(|s| s.compressed_size()).sum();
    assert_eq!(with_weights - without, weights - 8 * LAYERS, "only the tables' contents are left out");
    let json = zkmha_api::inspect::read(&d.join("chain.vk")).unwrap().to_json();
    assert_eq!((json["kind"].as_str(), json["first_layer"].as_u64()), (Some("chain key"), Some(0)));
    // A truncated chain file is refused with a sentence, not a panic.
    let bytes = std::fs::read(d.join("chain.proof")).unwrap();
    std::fs::write(d.join("cut.proof"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(ChainProof::read(&d.join("cut.proof")), Err(Error::Corrupt { .. })));
    std::fs::remove_dir_all(&d).unwrap();
}

fn rearranged(proof: &ChainProof, order: &[usize]) -> ChainProof {
    match proof {
        ChainProof::Plain(p) => {
            let mut q = p.clone();
            q.links = order.iter().map(|&i| p.links[i].clone()).collect();
            ChainProof::Plain(q)
        }
        ChainProof::ZeroKnowledge(p) => {
            let mut q = p.clone();
            q.links = order.iter().map(|&i| p.links[i].clone()).collect();
            ChainProof::ZeroKnowledge(q)
        }
    }
}

#[test]
fn layers_swapped_repeated_or_missing_do_not_verify() {
    let (committed, proved) = shared(WeightCommitments::Binding);
    let key = &committed.key;
    let joined = "its hidden state is not the previous layer's committed output";
    for (order, layer) in [([1, 0, 2], 1), ([0, 0, 2], 1), ([0, 2, 2], 1), ([0, 1, 1], 2)] {
        assert_eq!(
            invalid(verify_chain(key, &rearranged(&proved.proof, &order))),
            AttentionError::BrokenChain { layer, reason: joined },
            "{order:?}"
        );
    }
    assert!(matches!(
        invalid(verify_chain(key, &rearranged(&proved.proof, &[0, 1]))),
        AttentionError::BrokenChain { layer: 2, .. }
    ));
    // The key of layers 1..3 against the proof of 0..3, and the proof's layers 1 and 2 alone
    // (their links hold, but the first layer differs from the key's).
    let shorter = ChainKey { first_layer: 1, layers: key.layers[1..].to_vec(), embedding: None, head: None };
    assert!(matches!(invalid(verify_chain(&shorter, &proved.proof)), AttentionError::BrokenChain { .. }));
    let tail = rearranged(&proved.proof, &[1, 2]);
    assert!(matches!(invalid(verify_chain(key, &tail)), AttentionError::BrokenChain { .. }));
}

/// Each layer checks against its own key: the layers' keys in another order, or another
/// model's key, reject the proof (the weights' commitments differ).
#[test]
fn another_models_or_another_layers_key_does_not_verify() {
    let (committed, proved) = shared(WeightCommitments::Binding);
    let mut swapped = committed.key.clone();
    swapped.layers.swap(0, 1);
    assert!(matches!(
        invalid(verify_chain(&swapped, &proved.proof)),
        AttentionError::InChainLayer { layer: 0, .. }
    ));
    let other_dir = dir("keys-other");
    let other_path = example_model::write_llama(&other_dir, 8, LAYERS).unwrap();
    let other_models = open_layers(&other_path, &Default::default(), 0..LAYERS).unwrap();
    let other = commit_chain(&other_models, WeightCommitments::Binding, &mut |_, _| {}).unwrap();
    assert!(matches!(invalid(verify_chain(&other.key, &proved.proof)), AttentionError::InChainLayer { .. }));
    std::fs::remove_dir_all(&other_dir).unwrap();
}

#[test]
fn models_that_are_not_the_keys_layers_are_refused() {
    let all = models("refused", 0..LAYERS);
    let committed = commit_chain(&all[..2], WeightCommitments::Binding, &mut |_, _| {}).unwrap();
    let input = ModelInput::Tokens(vec![1, 2]);
    let result = prove_chain(&committed.key, None, &all[1..], &input, &mut |_, _| {});
    assert!(matches!(result, Err(Error::ChainLayers { .. })), "{result:?}");
    let path = dir("refused").join("model.safetensors");
    let mut gap = open_layers(&path, &Default::default(), 0..1).unwrap();
    gap.extend(open_layers(&path, &Default::default(), 2..3).unwrap());
    let result = commit_chain(&gap, WeightCommitments::Binding, &mut |_, _| {});
    assert!(matches!(result, Err(Error::ChainLayers { .. })), "{result:?}");
}

/// Applies `change` to the proof's embedded tokens in either mode.
fn with_tokens(proof: &ChainProof, change: impl Fn(&mut Option<Vec<u64>>, bool) -> bool) -> ChainProof {
    fn edit<M: zkmha_attention::mode::Mode>(
        p: &zkmha_api::model_chain::ChainProofOf<M>,
        change: impl Fn(&mut Option<Vec<u64>>, bool) -> bool,
    ) -> zkmha_api::model_chain::ChainProofOf<M> {
        let mut q = p.clone();
        let mut ids = q.embedding.as_ref().map(|e| e.ids.clone());
        let keep = change(&mut ids, true);
        q.embedding = match (q.embedding.take(), ids) {
            (Some(mut e), Some(ids)) if keep => {
                e.ids = ids;
                Some(e)
            }
            _ => None,
        };
        q
    }
    match proof {
        ChainProof::Plain(p) => ChainProof::Plain(edit(p, change)),
        ChainProof::ZeroKnowledge(p) => ChainProof::ZeroKnowledge(edit(p, change)),
    }
}

/// The token ids a chain from layer 0 is proven from are the statement: another id, another
/// proof's embedding, a key without the table or ids of another count do not verify; without
/// its embedding proof the chain verifies from a committed input only (no token ids).
#[test]
fn the_proven_token_ids_cannot_be_changed() {
    let models = models("tokens", 0..LAYERS);
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proved) = shared(kind);
        let key = &committed.key;
        let other = with_tokens(&proved.proof, |ids, _| {
            if let Some(ids) = ids {
                ids[2] = 9;
            }
            true
        });
        let error = invalid(verify_chain(key, &other));
        assert!(
            matches!(
                error,
                AttentionError::CheckFailed { step: "openings" } | AttentionError::ZeroKnowledge { .. }
            ),
            "{kind:?}: {error:?}"
        );
        let fewer = with_tokens(&proved.proof, |ids, _| {
            if let Some(ids) = ids {
                ids.pop();
            }
            true
        });
        assert!(matches!(
            invalid(verify_chain(key, &fewer)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("not the first layer's tokens")
        ));
        // Another input's embedding proof (five other tokens) on this chain.
        let input = ModelInput::Tokens(vec![2, 7, 1, 8, 2]);
        let another = prove_chain(key, committed.secret.as_ref(), &models, &input, &mut |_, _| {}).unwrap();
        let mixed = match (&proved.proof, &another.proof) {
            (ChainProof::Plain(p), ChainProof::Plain(a)) => {
                ChainProof::Plain(zkmha_api::model_chain::ChainProofOf {
                    embedding: a.embedding.clone(),
                    ..p.clone()
                })
            }
            (ChainProof::ZeroKnowledge(p), ChainProof::ZeroKnowledge(a)) => {
                ChainProof::ZeroKnowledge(zkmha_api::model_chain::ChainProofOf {
                    embedding: a.embedding.clone(),
                    ..p.clone()
                })
            }
            _ => unreachable!(),
        };
        assert!(verify_chain(key, &mixed).is_err(), "{kind:?}: another input's embedding");
        // Without its embedding proof the logits stand on nothing: refused.
        let dropped = with_tokens(&proved.proof, |_, _| false);
        assert!(matches!(
            invalid(verify_chain(key, &dropped)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("only from proven token ids")
        ));
        // Another model's embedding table in our key (a key that validates), and a key
        // assembled in memory that says the chain starts at layer 1 (the review of 2026-11-26).
        let theirs = commit_chain(&seeded_models("theirs", 8, 0..LAYERS), kind, &mut |_, _| {}).unwrap();
        let swapped = ChainKey { embedding: theirs.key.embedding.clone(), ..key.clone() };
        assert!(swapped.validate().is_ok());
        assert!(verify_chain(&swapped, &proved.proof).is_err(), "{kind:?}: another model's table");
        let deeper = ChainKey { first_layer: 1, ..key.clone() };
        assert!(matches!(
            invalid(verify_chain(&deeper, &proved.proof)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("chain from layer 0")
        ));
        // A key without the table.
        let bare = ChainKey { embedding: None, head: None, ..key.clone() };
        assert!(matches!(
            invalid(verify_chain(&bare, &proved.proof)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("no embedding table")
        ));
    }
}

/// Only a chain from layer 0 holds the table; a hidden-state input proves no token ids.
#[test]
fn only_token_input_at_layer_zero_is_embedded() {
    let deeper = models("deeper", 1..LAYERS);
    let committed = commit_chain(&deeper, WeightCommitments::Binding, &mut |_, _| {}).unwrap();
    assert!(committed.key.embedding.is_none());
    let input = ModelInput::Tokens(vec![3, 1, 4]);
    assert!(prove_chain(&committed.key, None, &deeper, &input, &mut |_, _| {}).is_err());
    let models = models("hidden-input", 0..2);
    let committed = commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {}).unwrap();
    let values = models[0].float_hidden_state(&[3, 1, 4]).unwrap();
    let input = ModelInput::HiddenState { values, columns: example_model::MODEL_WIDTH };
    let proved = prove_chain(&committed.key, None, &models, &input, &mut |_, _| {}).unwrap();
    assert_eq!(proved.proof.token_ids(), None);
    assert_eq!(verify_chain(&committed.key, &proved.proof).unwrap().token_ids(), None);
}

/// A chain file decodes within one commitment-row budget in all, not one per link: links of
/// sparse commitments (identity rows cost a bit in the file, a 72-byte point in memory) that
/// each fit a link's budget are refused together before they are allocated.
#[test]
fn a_chain_file_of_sparse_commitments_is_refused_within_one_budget() {
    let (_, proved) = shared(WeightCommitments::Binding);
    let ChainProof::Plain(honest) = &proved.proof else { panic!("a plain chain") };
    // 12 × 2^16 identity rows per link: 786 432 rows, within a link's 2^20.
    let sparse =
        zkmha_pcs::HyraxCommitment { num_vars: 32, rows: vec![zkmha_pcs::G1Affine::default(); 1 << 16] };
    let with_links = |count: usize, sparse_commitments: bool| {
        let mut proof = honest.clone();
        proof.links.truncate(count);
        for link in proof.links.iter_mut().filter(|_| sparse_commitments) {
            link.proof.commitments = vec![sparse.clone(); 12];
        }
        ChainProof::Plain(proof)
    };
    let d = dir("sparse");
    std::fs::create_dir_all(&d).unwrap();
    let one = d.join("one.proof");
    let honest_length = with_links(1, false).write(&one).unwrap();
    let length = with_links(1, true).write(&one).unwrap();
    assert!(length < honest_length + 12 * 8300, "identity rows cost one bit each: {length} bytes");
    // One such link decodes (its proof is then checked, and fails, when verifying) ...
    let read = ChainProof::read(&one).unwrap();
    assert!(matches!(&read, ChainProof::Plain(p) if p.links[0].proof.commitments.len() == 12));
    // ... two exceed the file's budget (2^20 rows and one per 8 bytes of file).
    let two = d.join("two.proof");
    let length = with_links(2, true).write(&two).unwrap();
    assert!(2 * 786_432 > zkmha_api::model_files::chain_row_budget(length));
    assert!(matches!(ChainProof::read(&two), Err(Error::Corrupt { .. })));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The counts a chain file states for its token ids and the head's positions and logits are
/// checked against their limits before anything is allocated: an empty id list, one position
/// too many and 2^24 + 1 logits are refused with a sentence, not read.
#[test]
fn a_chain_file_with_counts_beyond_their_limits_is_refused() {
    let (_, proved) = shared(WeightCommitments::Binding);
    let ChainProof::Plain(honest) = &proved.proof else { panic!("a plain chain") };
    let d = dir("counts");
    std::fs::create_dir_all(&d).unwrap();
    let refused = |edit: &dyn Fn(&mut zkmha_api::model_chain::ChainProofOf<zkmha_attention::mode::Plain>)| {
        let mut proof = honest.clone();
        edit(&mut proof);
        let path = d.join("edited.proof");
        ChainProof::Plain(proof).write(&path).unwrap();
        match ChainProof::read(&path) {
            Err(Error::UnacceptedStatement { error: AttentionError::InvalidShape(sentence), .. }) => sentence,
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    let sentence = refused(&|p| p.embedding.as_mut().unwrap().ids.clear());
    assert!(sentence.contains("tokens, not 0"), "{sentence}");
    let too_many = zkmha_attention::embedding::MAX_EMBEDDED_TOKENS + 1;
    let sentence = refused(&|p| p.head.as_mut().unwrap().positions = vec![0; too_many]);
    assert!(sentence.contains(&format!("positions, not {too_many}")), "{sentence}");
    // The logits' count changed in the honest file's bytes to 2^24 + 1: refused before any
    // logit is read.
    let mut bytes = std::fs::read({
        let path = d.join("honest.proof");
        proved.proof.write(&path).unwrap();
        path
    })
    .unwrap();
    let mut values = Vec::new(); // the logits' count, then the logits
    honest.head.as_ref().unwrap().logits.serialize_compressed(&mut values).unwrap();
    let at = bytes.windows(values.len()).position(|w| w == values.as_slice()).unwrap();
    bytes[at..at + 8].copy_from_slice(&((1u64 << 24) + 1).to_le_bytes());
    std::fs::write(d.join("logits.proof"), &bytes).unwrap();
    match ChainProof::read(&d.join("logits.proof")) {
        Err(Error::UnacceptedStatement { error: AttentionError::InvalidShape(sentence), .. }) => {
            assert!(sentence.contains("logits, not 16777217"), "{sentence}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A model whose layers attend through sliding windows (`layer_types`: sliding, full,
/// sliding; a window of 2 tokens): each layer's key holds the layer's own mask, the chain
/// proves and verifies near float64 run through the same windows, the windows change the
/// model's function (against the same weights without them), and a key that states another
/// mask for a layer refuses the proof.
#[test]
fn sliding_window_layers_are_proven_with_their_own_masks() {
    use zkmha_attention::MaskKind;
    let config = |extra: &str| {
        example_model::llama_config(LAYERS)
            .replace('}', &format!(", \"max_position_embeddings\": 64{extra}}}"))
    };
    let write = |name: &str, config: &str| {
        let tensors = example_model::llama_tensors(LAYERS);
        example_model::write_safetensors(&dir(name), 7, &tensors, Some(config)).unwrap()
    };
    let types = r#", "sliding_window": 2, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]"#;
    let windowed = open_layers(&write("windows", &config(types)), &Default::default(), 0..LAYERS).unwrap();
    let window = MaskKind::sliding(2).unwrap();
    let masks: Vec<MaskKind> = windowed.iter().map(Model::mask).collect();
    assert_eq!(masks, [window, MaskKind::Causal, window]);
    let (committed, proved) = proved(&windowed, WeightCommitments::Hiding);
    let key_masks: Vec<MaskKind> = committed.key.layers.iter().map(|layer| layer.mask).collect();
    assert_eq!(key_masks, masks);
    let statement_masks: Vec<MaskKind> = proved.proof.statements().iter().map(|s| s.mask).collect();
    assert_eq!(statement_masks, masks);
    verify_chain(&committed.key, &proved.proof).unwrap();
    let error = proved.accuracy.output.relative_l2_error;
    assert!(error < 0.02, "relative L2 error {error} against float64 through the same windows");
    // The same weights without windows compute another function on these 5 tokens.
    let full = open_layers(&write("no-windows", &config("")), &Default::default(), 0..LAYERS).unwrap();
    let ids = [3, 1, 4, 1, 5];
    let (with, without) =
        (windowed[2].float_hidden_state(&ids).unwrap(), full[2].float_hidden_state(&ids).unwrap());
    assert!(with.iter().zip(&without).any(|(a, b)| (a - b).abs() > 1e-3));
    // Asking for a layer's own mask changes nothing: the layers before it keep theirs.
    let asked = ModelOptions { layer: 2, mask: Some(window), ..Default::default() };
    let own = Model::open(&write("windows-asked", &config(types)), &asked).unwrap();
    assert_eq!(own.float_hidden_state(&ids).unwrap(), with);
    // The key decides each layer's mask: one stating full attention for layer 0 refuses.
    let mut key = committed.key.clone();
    key.layers[0].mask = MaskKind::Causal;
    assert!(verify_chain(&key, &proved.proof).is_err());
    for name in ["windows", "no-windows", "windows-asked"] {
        let _ = std::fs::remove_dir_all(dir(name));
    }
}

/// A Gemma-3-style model proven whole from tokens to logits: the embedding from the table
/// times `√d_model` (committed as the embedding), the LM head from the table itself (an
/// untied head in the key), each layer with its QK-norm, output norms, mask and rotary base
/// (sliding, global, sliding); near float64 through the same layers, and the logits near
/// float64's; without the embedding scale the float function is another one.
#[test]
fn a_gemma3_model_is_proven_from_tokens_to_logits() {
    use zkmha_attention::MaskKind;
    let path = example_model::write_gemma3(&dir("gemma3"), 7, LAYERS).unwrap();
    let models = open_layers(&path, &Default::default(), 0..LAYERS).unwrap();
    let masks: Vec<MaskKind> = models.iter().map(Model::mask).collect();
    let window = MaskKind::sliding(2).unwrap();
    assert_eq!(masks, [window, MaskKind::Causal, window]);
    let bases: Vec<f64> = (0..LAYERS).map(|l| models[0].file().rope_base_for(l)).collect();
    assert_eq!(bases, [10_000.0, 1_000_000.0, 10_000.0]);
    let (committed, proved) = proved(&models, WeightCommitments::Hiding);
    let key = &committed.key;
    assert!(key.embedding.is_some() && key.head.is_some());
    let rotary: Vec<u64> = key.layers.iter().map(|k| k.rotary.unwrap().base).collect();
    assert_eq!(rotary, [10_000, 1_000_000, 10_000]);
    assert!(key.layers.iter().all(|k| k.quantization.query_key_norms.is_some()));
    let verified = verify_chain(key, &proved.proof).unwrap();
    assert_eq!(verified.token_ids(), Some(&[3u64, 1, 4, 1, 5][..]));
    let error = proved.accuracy.output.relative_l2_error;
    assert!(error < 0.02, "relative L2 error {error} against float64");
    let logits = verified.logits().unwrap().clone();
    assert_eq!(logits.values, proved.logits.as_ref().unwrap().values);
    // The embedding scale is part of the function: the scaled table is the embedding's, the
    // table itself the head's.
    let file = models[0].file();
    let scale = file.embedding_scale().unwrap();
    assert_eq!(scale, f64::from(16f32.sqrt()));
    let head = file.untied_lm_head().unwrap().unwrap();
    let tokens = file.embedding_tables().unwrap().unwrap().tokens;
    assert!(tokens.iter().zip(head).all(|(t, h)| *t == h * scale));
    let _ = std::fs::remove_dir_all(dir("gemma3"));
}

/// A BERT-style model proven whole from token ids (post-norm layers: each layer's input `X` the
/// previous layer's normed output, committed once; layer 0 proves the embeddings' LayerNorm
/// from the proven embedding sum, word + position + token type 0): both modes verify, the output
/// is the last layer's `output.LayerNorm` near float64 through the same layers, the statements
/// link through their inputs, and a chain with a layer swapped, other token ids, an edited key
/// or another model's key does not verify.
#[test]
fn a_bert_model_is_proven_whole_as_one_chain() {
    let path = example_model::write_bert_layers(&dir("bert"), 7, LAYERS).unwrap();
    let models = open_layers(&path, &Default::default(), 0..LAYERS).unwrap();
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proved) = proved(&models, kind);
        let key = &committed.key;
        assert!(key.embedding.is_some() && key.head.is_none());
        assert!(
            key.layers.iter().all(|k| k.quantization.post_norm.is_some() && k.quantization.mlp.is_some())
        );
        let norms: Vec<bool> = key.layers.iter().map(|k| k.quantization.norm.is_some()).collect();
        assert_eq!(norms, [true, false, false], "layer 0 proves the embeddings' LayerNorm");
        let scales: Vec<(i32, i32)> = key
            .layers
            .iter()
            .map(|k| (k.quantization.input_fraction_bits, k.quantization.hidden_fraction_bits))
            .collect();
        assert!(
            scales.iter().all(|&(x, h)| x == h && h == scales[0].1),
            "one scale for X and the stream: {scales:?}"
        );
        let verified = verify_chain(key, &proved.proof).unwrap();
        assert_eq!(verified.token_ids(), Some(&[3u64, 1, 4, 1, 5][..]));
        let changed = with_tokens(&proved.proof, |ids, _| {
            if let Some(ids) = ids {
                ids[2] += 1;
            }
            true
        });
        assert!(verify_chain(key, &changed).is_err(), "other token ids");
        let error = proved.accuracy.output.relative_l2_error;
        assert!(error < 0.02, "{kind:?}: relative L2 error {error} against float64");
        // The output is the float model's last hidden state (its last layer's LayerNorm).
        let ids = [3, 1, 4, 1, 5];
        let float_output =
            models[LAYERS - 1].float_output(models[LAYERS - 1].float_hidden_state(&ids).unwrap()).unwrap();
        let ours = &verified.output.to_f64().unwrap();
        assert_eq!(ours.len(), float_output.len());
        let diff: f64 = ours.iter().zip(&float_output).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
        let norm: f64 = float_output.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(diff / norm < 0.02, "{kind:?}: {} against the float model's hidden state", diff / norm);
        // Layer 0 starts from the embeddings' commitment (its H), each later layer's input is
        // the previous layer's committed output.
        let statements = proved.proof.statements();
        assert!(statements[0].residual.is_some() && statements[1].residual.is_none());
        for l in 1..LAYERS {
            assert_eq!(Some(&statements[l].input), statements[l - 1].output.commitment(), "layer {l}");
        }
        // A key whose post-norm weight scale is edited (the proof does not read it) is refused.
        let mut edited = key.clone();
        edited.layers[1].quantization.post_norm.as_mut().unwrap().scale_fraction_bits += 1;
        assert!(verify_chain(&edited, &proved.proof).is_err());
        let swapped = rearranged(&proved.proof, &[1, 0, 2]);
        assert!(matches!(invalid(verify_chain(key, &swapped)), AttentionError::BrokenChain { .. }));
        let other = open_layers(
            &example_model::write_bert_layers(&dir("bert-other"), 8, LAYERS).unwrap(),
            &Default::default(),
            0..LAYERS,
        )
        .unwrap();
        let other_key = commit_chain(&other, kind, &mut |_, _| {}).unwrap().key;
        assert!(verify_chain(&other_key, &proved.proof).is_err());
    }
    for name in ["bert", "bert-other"] {
        let _ = std::fs::remove_dir_all(dir(name));
    }
}
