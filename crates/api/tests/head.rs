//! The model's head through the library: a whole Llama-style model proven from tokens to
//! logits (the final norm and the tied LM head, `zkmha_attention::head`), in both modes, the
//! logits against float64, and the chains that must not verify: changed logits or positions,
//! a dropped head, another input's head proof, another model's final norm, a key without a
//! head. Models whose head the proof does not cover say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;
use zkmha_api::model_chain::{
    ChainKey, ChainProof, ChainProofOf, CommittedChain, LogitPositions, ProvedChain, commit_chain,
    open_layers, prove_chain_with, verify_chain,
};
use zkmha_api::{Error, Model, ModelInput, WeightCommitments, example_model};
use zkmha_attention::AttentionError;
use zkmha_attention::mode::Mode;
use zkmha_model::model_file::HeadUnavailable;

const LAYERS: usize = 2;
const TOKENS: [usize; 6] = [3, 1, 4, 1, 5, 9];

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zkmha-head-{name}-{}", std::process::id()))
}

fn models(name: &str, seed: u32) -> Vec<Model> {
    let path = example_model::write_llama(&dir(name), seed, LAYERS).unwrap();
    open_layers(&path, &Default::default(), 0..LAYERS).unwrap()
}

fn proved(
    models: &[Model],
    kind: WeightCommitments,
    tokens: &[usize],
    positions: LogitPositions,
) -> (CommittedChain, ProvedChain) {
    let committed = commit_chain(models, kind, &mut |_, _| {}).unwrap();
    let input = ModelInput::Tokens(tokens.to_vec());
    let proved = prove_chain_with(
        &committed.key,
        committed.secret.as_ref(),
        models,
        &input,
        positions,
        &mut |_, _| {},
    )
    .unwrap();
    (committed, proved)
}

fn invalid(result: Result<zkmha_api::Verified, Error>) -> AttentionError {
    match result {
        Err(Error::InvalidProof { error }) => error,
        other => panic!("expected an invalid proof, got {other:?}"),
    }
}

/// `proof` with its head changed by `change`.
fn with_head(proof: &ChainProof, change: impl Fn(&mut Option<(Vec<u64>, Vec<i64>)>)) -> ChainProof {
    fn edit<M: Mode>(
        p: &ChainProofOf<M>,
        change: impl Fn(&mut Option<(Vec<u64>, Vec<i64>)>),
    ) -> ChainProofOf<M> {
        let mut q = p.clone();
        let mut parts = q.head.as_ref().map(|h| (h.positions.clone(), h.logits.clone()));
        change(&mut parts);
        q.head = match (q.head.take(), parts) {
            (Some(mut h), Some((positions, logits))) => {
                h.positions = positions;
                h.logits = logits;
                Some(h)
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

/// Every position's logits of a six-token input, both modes: the verifier returns the
/// prover's logits, and they are near float64's through the same layers.
#[test]
fn every_positions_logits_are_proven_near_float64_in_both_modes() {
    let models = models("all", 7);
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proved) = proved(&models, kind, &TOKENS, LogitPositions::All);
        let verified = verify_chain(&committed.key, &proved.proof).unwrap();
        let logits = verified.logits().unwrap().clone();
        let ours = proved.logits.unwrap();
        assert_eq!(logits.positions, (0..TOKENS.len() as u64).collect::<Vec<_>>());
        assert_eq!(logits.values.len(), TOKENS.len() * example_model::VOCABULARY);
        assert_eq!((&logits.values, &logits.predicted), (&ours.values, &ours.predicted));
        let (same, error) = ours.against_reference().unwrap();
        assert!(error < 0.03, "{kind:?}: the logits' relative L2 error {error}");
        assert!(same + 1 >= TOKENS.len(), "{kind:?}: {same} of {} next tokens as float64", TOKENS.len());
    }
}

/// Changed logits, positions that are not the proof's, a dropped head, another input's head
/// proof, another model's final norm and a key without a head do not verify.
#[test]
fn the_proven_logits_cannot_be_changed() {
    let models = models("changed", 7);
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proved) = proved(&models, kind, &TOKENS, LogitPositions::Last);
        let key = &committed.key;
        let changed = with_head(&proved.proof, |head| {
            if let Some((_, logits)) = head {
                logits[7] += 1;
            }
        });
        // (The logits are absorbed first, so the first check after them fails; the in-crate
        // malicious provers, which absorb the changed logits too, meet the logits' own check.)
        invalid(verify_chain(key, &changed));
        let moved = with_head(&proved.proof, |head| {
            if let Some((positions, _)) = head {
                positions[0] = 4;
            }
        });
        assert!(verify_chain(key, &moved).is_err(), "{kind:?}: the logits of position 5 as position 4's");
        // Without its head the chain's last output is committed: it is not a public output.
        let dropped = with_head(&proved.proof, |head| *head = None);
        assert!(matches!(
            invalid(verify_chain(key, &dropped)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("committed, not public")
        ));
        // Another input's head proof (and logits) on this chain.
        let (_, another) = {
            let input = ModelInput::Tokens(vec![2, 7, 1, 8, 2, 8]);
            let p = prove_chain_with(
                key,
                committed.secret.as_ref(),
                &models,
                &input,
                LogitPositions::Last,
                &mut |_, _| {},
            )
            .unwrap();
            (0, p)
        };
        let mixed = match (&proved.proof, &another.proof) {
            (ChainProof::Plain(p), ChainProof::Plain(a)) => {
                ChainProof::Plain(ChainProofOf { head: a.head.clone(), ..p.clone() })
            }
            (ChainProof::ZeroKnowledge(p), ChainProof::ZeroKnowledge(a)) => {
                ChainProof::ZeroKnowledge(ChainProofOf { head: a.head.clone(), ..p.clone() })
            }
            _ => unreachable!(),
        };
        assert!(verify_chain(key, &mixed).is_err(), "{kind:?}: another input's logits");
        // Another model's final norm in our key.
        let theirs = commit_chain(&models_seeded("theirs", 8), kind, &mut |_, _| {}).unwrap();
        let swapped = ChainKey { head: theirs.key.head.clone(), ..key.clone() };
        assert!(swapped.validate().is_ok());
        assert!(verify_chain(&swapped, &proved.proof).is_err(), "{kind:?}: another model's final norm");
        // A key without the head.
        let headless = ChainKey { head: None, ..key.clone() };
        assert!(matches!(
            invalid(verify_chain(&headless, &proved.proof)),
            AttentionError::BrokenChain { reason, .. } if reason.contains("no head")
        ));
    }
}

fn models_seeded(name: &str, seed: u32) -> Vec<Model> {
    models(name, seed)
}

/// The head is proven only where the proof covers it; elsewhere the model says why, and the
/// chain ends in its last layer's public output.
#[test]
fn models_whose_head_is_not_proven_say_why() {
    let models = models("why", 7);
    assert!(matches!(
        models[0].final_norm(),
        Err(HeadUnavailable::NotLastLayer { layer: 0, layers: Some(2) })
    ));
    assert!(models[1].final_norm().is_ok());
    // A softcapping of the logits.
    let config = example_model::llama_config(LAYERS).replace('}', ", \"final_logit_softcapping\": 30.0}");
    let path = example_model::write_safetensors(
        &dir("capped"),
        7,
        &example_model::llama_tensors(LAYERS),
        Some(&config),
    )
    .unwrap();
    let capped = open_layers(&path, &Default::default(), 0..LAYERS).unwrap();
    assert!(
        matches!(capped[1].final_norm(), Err(HeadUnavailable::LogitChange(c)) if c.contains("softcapping"))
    );
    // BERT has no LM head.
    let bert =
        Model::open(&example_model::write_bert(&dir("bert"), 1).unwrap(), &Default::default()).unwrap();
    assert!(bert.final_norm().is_err());
    for name in ["all", "changed", "theirs", "why", "capped", "bert"] {
        let _ = std::fs::remove_dir_all(dir(name));
    }
}

/// A vocabulary above 2^16 rows (70 000 tokens, as Llama 3's 128 256 and Qwen2's 151 936 are):
/// the embedding table's commitment holds one row per token, ids above 2^16 are embedded, and
/// the head proves all 70 000 logits of the last position near float64.
#[test]
fn a_vocabulary_above_two_to_the_sixteen_is_embedded_and_its_logits_proven() {
    const LARGE: usize = 70_000;
    let mut tensors = example_model::llama_tensors(1);
    tensors[0] = ("model.embed_tokens.weight".to_string(), vec![LARGE, example_model::MODEL_WIDTH]);
    let config = example_model::llama_config(1);
    let path =
        example_model::write_safetensors(&dir("large-vocabulary"), 7, &tensors, Some(&config)).unwrap();
    let models = open_layers(&path, &Default::default(), 0..1).unwrap();
    let tokens = [3, 69_999, 65_536, 1, 40_000];
    let (committed, proved) = proved(&models, WeightCommitments::Hiding, &tokens, LogitPositions::Last);
    let embedding = committed.key.embedding.as_ref().unwrap();
    assert_eq!(embedding.shape.token_rows, LARGE as u64);
    let verified = verify_chain(&committed.key, &proved.proof).unwrap();
    assert_eq!(verified.token_ids(), Some(&[3u64, 69_999, 65_536, 1, 40_000][..]));
    let logits = verified.logits().unwrap().clone();
    assert_eq!((logits.vocabulary, logits.values.len()), (LARGE, LARGE));
    let ours = proved.logits.unwrap();
    assert_eq!((&logits.values, &logits.predicted), (&ours.values, &ours.predicted));
    let (_, error) = ours.against_reference().unwrap();
    assert!(error < 0.03, "the logits' relative L2 error {error}");
    // Another token id above 2^16 is another statement.
    let changed = with_tokens_changed(&proved.proof);
    assert!(verify_chain(&committed.key, &changed).is_err());
    let _ = std::fs::remove_dir_all(dir("large-vocabulary"));
}

/// `proof` with its second token id changed to 65 537.
fn with_tokens_changed(proof: &ChainProof) -> ChainProof {
    fn edit<M: Mode>(p: &ChainProofOf<M>) -> ChainProofOf<M> {
        let mut q = p.clone();
        if let Some(embedding) = q.embedding.as_mut() {
            embedding.ids[1] = 65_537;
        }
        q
    }
    match proof {
        ChainProof::Plain(p) => ChainProof::Plain(edit(p)),
        ChainProof::ZeroKnowledge(p) => ChainProof::ZeroKnowledge(edit(p)),
    }
}

/// An LM head of its own (`lm_head.weight`, as Llama 3 8B's and Mistral 7B's): committed in the
/// chain key as a table of its own at its own scale, the logits proven against it in both
/// modes near float64's `Y·Wᵀ` (not the embeddings'); a key whose head is the embedding table,
/// or another model's LM head, does not verify the proof.
#[test]
fn an_untied_lm_head_is_committed_and_its_logits_proven() {
    let untied = |name: &str, seed: u32| {
        let mut tensors = example_model::llama_tensors(LAYERS);
        tensors.push((
            "lm_head.weight".to_string(),
            vec![example_model::VOCABULARY, example_model::MODEL_WIDTH],
        ));
        let config = example_model::llama_config(LAYERS);
        let path = example_model::write_safetensors(&dir(name), seed, &tensors, Some(&config)).unwrap();
        open_layers(&path, &Default::default(), 0..LAYERS).unwrap()
    };
    let models = untied("untied", 7);
    let lm_head = models[1].file().untied_lm_head().unwrap().unwrap();
    assert_eq!(lm_head.len(), example_model::VOCABULARY * example_model::MODEL_WIDTH);
    assert!(models[1].final_norm().is_ok());
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, proven) = proved(&models, kind, &TOKENS, LogitPositions::All);
        let head = committed.key.head.as_ref().unwrap();
        let own = head.lm_head.as_ref().unwrap();
        assert_ne!(&own.table.commitment, &committed.key.embedding.as_ref().unwrap().commitment);
        assert_eq!(own.table.shape.token_rows, example_model::VOCABULARY as u64);
        let verified = verify_chain(&committed.key, &proven.proof).unwrap();
        let logits = verified.logits().unwrap().clone();
        let ours = proven.logits.unwrap();
        assert_eq!((&logits.values, &logits.predicted), (&ours.values, &ours.predicted));
        let (same, error) = ours.against_reference().unwrap();
        assert!(error < 0.03, "{kind:?}: the logits' relative L2 error {error} against Y·Wᵀ");
        assert!(same + 1 >= TOKENS.len(), "{kind:?}: {same} of {} next tokens as float64", TOKENS.len());
        // A key that says the head is tied (the embedding table's commitment) refuses it.
        let mut tied = committed.key.clone();
        tied.head.as_mut().unwrap().lm_head = None;
        assert!(verify_chain(&tied, &proven.proof).is_err(), "{kind:?}");
        // So does a key with another model's LM head.
        let other = untied("untied-other", 8);
        let (theirs, _) = proved(&other, kind, &TOKENS[..2], LogitPositions::Last);
        let mut swapped = committed.key.clone();
        swapped.head.as_mut().unwrap().lm_head = theirs.key.head.unwrap().lm_head;
        assert!(verify_chain(&swapped, &proven.proof).is_err(), "{kind:?}");
    }
    for name in ["untied", "untied-other"] {
        let _ = std::fs::remove_dir_all(dir(name));
    }
}

/// An untied LM head of more rows than one commitment holds is not proven, and says so before
/// any layer is committed: `final_norm` names it, so a chain leaves the head out.
#[test]
fn an_untied_lm_head_beyond_two_to_the_eighteen_rows_is_left_out_by_name() {
    let rows = (1usize << 18) + 1;
    let mut tensors = example_model::llama_tensors(1);
    tensors.push(("lm_head.weight".to_string(), vec![rows, example_model::MODEL_WIDTH]));
    let config = example_model::llama_config(1);
    let path = example_model::write_safetensors(&dir("huge-head"), 7, &tensors, Some(&config)).unwrap();
    let models = open_layers(&path, &Default::default(), 0..1).unwrap();
    let refused = models[0].final_norm().unwrap_err();
    assert_eq!(refused, HeadUnavailable::TooManyTokens { rows, limit: 1 << 18 });
    assert_eq!(
        refused.to_string(),
        "its LM head has 262145 token rows, more than the 262144 the proof commits to"
    );
    let _ = std::fs::remove_dir_all(dir("huge-head"));
}
