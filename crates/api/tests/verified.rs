//! What a verifier accepted is bound (`zkmha_api::verified`): every verify entry point returns the
//! statement with the output, and a caller that says what it expects refuses a valid proof of
//! anything else — other tokens, other positions, other layers, a chain whose first input was
//! never proven from token ids, a single layer's committed input — before any verification
//! work; a proof against another model's key does not verify at all. The written output
//! carries its token ids and positions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::Read;
use std::path::PathBuf;
use zkmha_api::model_chain::{ChainProof, commit_chain, open_layers, prove_chain, verify_chain_expecting};
use zkmha_api::{
    Error, ErrorKind, Expected, ModelInput, ProofKind, ProofMode, ProvenInput, ProvenOutput, Verified,
    WeightCommitments, example_model,
};

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zkmha-verified-{name}-{}", std::process::id()))
}

/// The refusal's `what` (the part of the statement that differs), or a panic.
fn refused(result: Result<Verified, Error>) -> (&'static str, String) {
    match result {
        Err(error @ Error::UnexpectedStatement { what, .. }) => {
            assert_eq!(error.kind(), ErrorKind::Refused);
            (what, error.to_string())
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn tokens(ids: &[u64]) -> Expected {
    Expected { tokens: Some(ids.to_vec()), ..Expected::default() }
}

/// A two-layer model proven whole from tokens A in both modes: the result names A and the
/// last position; a caller expecting tokens B, other positions or other layers refuses it.
#[test]
fn a_proof_of_tokens_a_is_refused_by_a_caller_expecting_tokens_b() {
    let path = example_model::write_llama(&dir("chain"), 7, 2).unwrap();
    let models = open_layers(&path, &Default::default(), 0..2).unwrap();
    for kind in [WeightCommitments::Hiding, WeightCommitments::Binding] {
        let committed = commit_chain(&models, kind, &mut |_, _| {}).unwrap();
        let a = [3u64, 1, 4, 1, 5];
        let input = ModelInput::Tokens(a.iter().map(|&t| t as usize).collect());
        let proved =
            prove_chain(&committed.key, committed.secret.as_ref(), &models, &input, &mut |_, _| {}).unwrap();
        let key = &committed.key;
        let ours = Expected { tokens: Some(a.to_vec()), positions: Some(vec![4]), layers: Some(0..2) };
        let verified = verify_chain_expecting(key, &proved.proof, &ours).unwrap();
        assert_eq!(verified.kind, ProofKind::Chain);
        let mode =
            if kind == WeightCommitments::Hiding { ProofMode::ZeroKnowledge } else { ProofMode::Plain };
        assert_eq!(verified.mode, mode);
        assert_eq!(verified.token_ids(), Some(&a[..]));
        assert_eq!(verified.positions(), Some(&[4u64][..]));
        assert_eq!(verified.layers, Some(0..2));
        assert_eq!(verified.key.as_ref().unwrap().fingerprint, zkmha_api::fingerprint(key));
        assert_eq!(verified.logits().unwrap().values, proved.logits.as_ref().unwrap().values);
        // The digest names the logits and their positions: another position's proof differs.
        assert_eq!(verified.output_digest.len(), zkmha_api::FINGERPRINT_HEX_DIGITS);

        let (what, sentence) = refused(verify_chain_expecting(key, &proved.proof, &tokens(&[2, 7, 1, 8, 2])));
        assert_eq!(what, "input");
        assert!(sentence.contains("[3, 1, 4, 1, 5]") && sentence.contains("[2, 7, 1, 8, 2]"), "{sentence}");
        // A prefix or an extension of A is another statement too.
        refused(verify_chain_expecting(key, &proved.proof, &tokens(&a[..4])));
        refused(verify_chain_expecting(key, &proved.proof, &tokens(&[3, 1, 4, 1, 5, 9])));
        let positions = Expected { positions: Some(vec![3]), ..Expected::default() };
        assert_eq!(refused(verify_chain_expecting(key, &proved.proof, &positions)).0, "output");
        let all = Expected { positions: Some(vec![0, 1, 2, 3, 4]), ..Expected::default() };
        assert_eq!(refused(verify_chain_expecting(key, &proved.proof, &all)).0, "output");
        let layers = Expected { layers: Some(0..1), ..Expected::default() };
        assert_eq!(refused(verify_chain_expecting(key, &proved.proof, &layers)).0, "layers");
    }
}

/// The refusal comes before any verification work: a proof that would not verify is still
/// refused (not reported invalid) when its statement is not the one expected, and reported
/// invalid when it is.
#[test]
fn the_statement_is_checked_before_the_proof() {
    let path = example_model::write_llama(&dir("order"), 8, 1).unwrap();
    let models = open_layers(&path, &Default::default(), 0..1).unwrap();
    let committed = commit_chain(&models, WeightCommitments::Hiding, &mut |_, _| {}).unwrap();
    let input = ModelInput::Tokens(vec![1, 2, 3]);
    let proved =
        prove_chain(&committed.key, committed.secret.as_ref(), &models, &input, &mut |_, _| {}).unwrap();
    // Another model's key: the same proof does not verify against it.
    let other_path = example_model::write_llama(&dir("order-other"), 9, 1).unwrap();
    let other_models = open_layers(&other_path, &Default::default(), 0..1).unwrap();
    let other = commit_chain(&other_models, WeightCommitments::Hiding, &mut |_, _| {}).unwrap();
    let ours = tokens(&[1, 2, 3]);
    assert!(matches!(
        verify_chain_expecting(&other.key, &proved.proof, &ours),
        Err(Error::InvalidProof { .. })
    ));
    refused(verify_chain_expecting(&other.key, &proved.proof, &tokens(&[1, 2, 4])));
}

/// A chain from a committed hidden state proves no token ids: it verifies, says so, and any
/// caller expecting tokens refuses it (the reproducer's second case).
#[test]
fn a_chain_from_a_committed_hidden_state_is_refused_when_tokens_are_expected() {
    let path = example_model::write_llama(&dir("hidden"), 7, 2).unwrap();
    let models = open_layers(&path, &Default::default(), 1..2).unwrap();
    let committed = commit_chain(&models, WeightCommitments::Hiding, &mut |_, _| {}).unwrap();
    let values: Vec<f64> =
        (0..3 * example_model::MODEL_WIDTH).map(|i| ((i * 7) % 11) as f64 / 8.0 - 0.6).collect();
    let input = ModelInput::HiddenState { values, columns: example_model::MODEL_WIDTH };
    let proved =
        prove_chain(&committed.key, committed.secret.as_ref(), &models, &input, &mut |_, _| {}).unwrap();
    let verified = verify_chain_expecting(&committed.key, &proved.proof, &Expected::default()).unwrap();
    assert!(matches!(verified.input, ProvenInput::CommittedHiddenState { .. }), "{:?}", verified.input);
    assert_eq!(
        (verified.token_ids(), verified.positions(), verified.layers.clone()),
        (None, None, Some(1..2))
    );
    assert!(matches!(verified.output, ProvenOutput::HiddenState { .. }));
    let (what, sentence) =
        refused(verify_chain_expecting(&committed.key, &proved.proof, &tokens(&[3, 1, 4])));
    assert_eq!(what, "input");
    assert!(sentence.contains("not proven from token ids"), "{sentence}");
    // Positions expected of a chain without logits: refused too.
    let positions = Expected { positions: Some(vec![2]), ..Expected::default() };
    assert_eq!(refused(verify_chain_expecting(&committed.key, &proved.proof, &positions)).0, "output");
}

/// A single model layer proven "from tokens" proves its committed input, not the tokens: it is
/// refused when tokens are expected, and says which key it was verified against.
#[test]
fn a_single_layer_is_refused_when_tokens_or_layers_are_expected() {
    let model =
        zkmha_api::Model::open(&example_model::write_bert(&dir("layer"), 3).unwrap(), &Default::default())
            .unwrap();
    let committed = zkmha_api::commit_model(&model, WeightCommitments::Hiding).unwrap();
    let proved = zkmha_api::prove(
        &committed.key,
        committed.secret.as_ref(),
        &model,
        &ModelInput::Tokens(vec![1, 2, 3]),
    )
    .unwrap();
    let verified = zkmha_api::verify(&committed.key, &proved.proof).unwrap();
    assert_eq!((verified.kind.clone(), verified.mode), (ProofKind::ModelLayer, ProofMode::ZeroKnowledge));
    assert_eq!(verified.key.as_ref().unwrap().fingerprint, zkmha_api::fingerprint(&committed.key));
    assert!(matches!(verified.input, ProvenInput::CommittedHiddenState { .. }));
    assert_eq!(verified.output.to_f64(), Some(proved.output.clone()));
    let (what, _) = refused(zkmha_api::verify_expecting(&committed.key, &proved.proof, &tokens(&[1, 2, 3])));
    assert_eq!(what, "input");
    let layers = Expected { layers: Some(0..1), ..Expected::default() };
    assert_eq!(refused(zkmha_api::verify_expecting(&committed.key, &proved.proof, &layers)).0, "layers");
}

/// `verify --output`'s .npz holds the output with the token ids and positions it is about, as
/// numpy reads it: stored entries named `output.npy`, `token_ids.npy`, `positions.npy`.
#[test]
fn the_written_output_carries_its_token_ids_and_positions() {
    let path = example_model::write_llama(&dir("npz"), 7, 1).unwrap();
    let models = open_layers(&path, &Default::default(), 0..1).unwrap();
    let committed = commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {}).unwrap();
    let input = ModelInput::Tokens(vec![5, 6, 7, 8]);
    let proved = prove_chain(&committed.key, None, &models, &input, &mut |_, _| {}).unwrap();
    proved.proof.write(&dir("npz").join("p.proof")).unwrap();
    let proof = ChainProof::read(&dir("npz").join("p.proof")).unwrap();
    let verified = verify_chain_expecting(&committed.key, &proof, &Expected::default()).unwrap();
    let out = dir("npz").join("verified.npz");
    verified.write_npz(&out).unwrap();
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&out).unwrap()).unwrap();
    let names: Vec<String> =
        (0..archive.len()).map(|i| archive.by_index(i).unwrap().name().unwrap().to_string()).collect();
    assert_eq!(names, ["output.npy", "token_ids.npy", "positions.npy"]);
    let mut read = |name: &str| {
        let mut bytes = Vec::new();
        archive.by_name(name).unwrap().read_to_end(&mut bytes).unwrap();
        bytes
    };
    let ids: Vec<u64> = npyz::NpyFile::new(&read("token_ids.npy")[..]).unwrap().into_vec().unwrap();
    assert_eq!(ids, [5, 6, 7, 8]);
    let positions: Vec<u64> = npyz::NpyFile::new(&read("positions.npy")[..]).unwrap().into_vec().unwrap();
    assert_eq!(positions, [3]);
    let output_bytes = read("output.npy");
    let output = npyz::NpyFile::new(&output_bytes[..]).unwrap();
    let logits = verified.logits().unwrap();
    assert_eq!(output.shape(), [1, logits.vocabulary as u64]);
    assert_eq!(output.into_vec::<f64>().unwrap(), logits.values);
    let _ = std::fs::remove_dir_all(dir("npz"));
}
