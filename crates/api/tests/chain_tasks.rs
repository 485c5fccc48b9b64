//! A chain's proof in parts (`zkmha_api::chain_tasks`), as a cluster proves it: packages, one
//! plan per input, one task per layer, the links assembled. The assembled proof verifies and
//! proves what the one-process prover proves (both modes); a batch's inputs are proven as each
//! alone; and the parts that must not fit are refused: a link proven from another input's
//! boundaries, parts of another chain, layer, version or mode, truncated parts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::sync::OnceLock;
use zkmha_api::chain_tasks::{ChainPlan, ChainProver, prove_layer_task};
use zkmha_api::model_chain::{
    CommittedChain, LogitPositions, ProvedChain, commit_chain, open_layers, prove_chain, verify_chain,
};
use zkmha_api::{Error, Model, ModelInput, WeightCommitments, example_model};
use zkmha_attention::AttentionError;

const LAYERS: usize = 2;

fn models(name: &str, seed: u32) -> Vec<Model> {
    let dir = std::env::temp_dir().join(format!("zkmha-tasks-{name}-{}", std::process::id()));
    let path = example_model::write_llama(&dir, seed, LAYERS).unwrap();
    open_layers(&path, &Default::default(), 0..LAYERS).unwrap()
}

fn tokens(ids: &[usize]) -> ModelInput {
    ModelInput::Tokens(ids.to_vec())
}

/// The two-layer model's key and its prover, once per kind.
fn shared(kind: WeightCommitments) -> &'static (CommittedChain, ChainProver) {
    static BINDING: OnceLock<(CommittedChain, ChainProver)> = OnceLock::new();
    static HIDING: OnceLock<(CommittedChain, ChainProver)> = OnceLock::new();
    let cell = match kind {
        WeightCommitments::Binding => &BINDING,
        WeightCommitments::Hiding => &HIDING,
    };
    cell.get_or_init(|| {
        let models = models(&format!("{kind:?}"), 7);
        let committed = commit_chain(&models, kind, &mut |_, _| {}).unwrap();
        let prover = ChainProver::new(committed.key.clone(), committed.secret.clone(), models).unwrap();
        (committed, prover)
    })
}

/// Every layer of `plan` proven as a worker proves it: from its package and its job alone.
fn links(prover: &ChainProver, plan: &ChainPlan) -> Vec<Vec<u8>> {
    let jobs = plan.jobs().unwrap();
    assert_eq!(jobs.len(), prover.layers());
    jobs.iter()
        .enumerate()
        .map(|(l, job)| prove_layer_task(&prover.package(l).unwrap(), job).unwrap())
        .collect()
}

fn task_error<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::Task { reason }) => reason,
        other => panic!("expected a refused part, got {other:?}"),
    }
}

#[test]
fn tasks_assemble_into_the_chain_the_one_process_prover_proves() {
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (committed, prover) = shared(kind);
        let input = tokens(&[3, 1, 4, 1, 5]);
        let mut plan = prover.plan(&input, LogitPositions::Last).unwrap();
        assert_eq!(plan.tokens(), 5);
        let links = links(prover, &plan);
        plan.prove_ends(prover).unwrap();
        let assembled = plan.assemble(prover, &links).unwrap();
        let verified = verify_chain(&committed.key, &assembled.proof).unwrap();
        assert_eq!(assembled.proof.is_zero_knowledge(), kind == WeightCommitments::Hiding);
        // The same statement as the one-process prover's: the same token ids and logits.
        let alone: ProvedChain =
            prove_chain(&committed.key, committed.secret.as_ref(), prover.models(), &input, &mut |_, _| {})
                .unwrap();
        assert_eq!(assembled.proof.token_ids(), alone.proof.token_ids());
        assert_eq!(assembled.proof.logits(), alone.proof.logits());
        assert_eq!(verified.logits().unwrap().values, alone.logits.unwrap().values);
        assert_eq!(assembled.layer_times.len(), LAYERS);
        // prove_ends is optional: assemble proves the ends itself.
        let plan = prover.plan(&input, LogitPositions::Last).unwrap();
        let links = self::links(prover, &plan);
        verify_chain(&committed.key, &plan.assemble(prover, &links).unwrap().proof).unwrap();
    }
}

#[test]
fn a_link_proven_from_another_inputs_boundaries_is_rejected() {
    // Malicious (or confused) worker results: layer 1's link of another plan — another input,
    // or (zero knowledge) the same input with other boundary blinds — among this plan's links.
    for kind in [WeightCommitments::Binding, WeightCommitments::Hiding] {
        let (_, prover) = shared(kind);
        for other_input in [tokens(&[2, 7, 1, 8, 2]), tokens(&[3, 1, 4, 1, 5])] {
            let same_input = other_input == tokens(&[3, 1, 4, 1, 5]);
            let plan = prover.plan(&tokens(&[3, 1, 4, 1, 5]), LogitPositions::Last).unwrap();
            let other = prover.plan(&other_input, LogitPositions::Last).unwrap();
            let mut mixed = links(prover, &plan);
            mixed[1] = links(prover, &other)[1].clone();
            match (plan.assemble(prover, &mixed), kind, same_input) {
                (Err(Error::InvalidProof { error: AttentionError::BrokenChain { .. } }), _, false) => {}
                (
                    Err(Error::InvalidProof { error: AttentionError::BrokenChain { .. } }),
                    WeightCommitments::Hiding,
                    true,
                ) => {}
                // Binding commitments of the same boundaries are the same commitments: the
                // other plan's link proves this chain's very statement, and may stand in it.
                (Ok(proved), WeightCommitments::Binding, true) => {
                    assert_eq!(proved.proof.token_ids(), Some(&[3, 1, 4, 1, 5][..]))
                }
                (result, _, _) => {
                    panic!("{kind:?}: a link of another plan gave {:?}", result.map(|p| p.tokens))
                }
            }
        }
    }
}

#[test]
fn links_out_of_order_or_missing_are_refused() {
    let (_, prover) = shared(WeightCommitments::Binding);
    let plan = prover.plan(&tokens(&[1, 2, 3]), LogitPositions::Last).unwrap();
    let mut links = links(prover, &plan);
    links.swap(0, 1);
    assert!(task_error(plan.assemble(prover, &links)).contains("link 0 is layer 1's"));
    let plan = prover.plan(&tokens(&[1, 2, 3]), LogitPositions::Last).unwrap();
    let links = self::links(prover, &plan);
    assert!(task_error(plan.assemble(prover, &links[..1])).contains("1 links for a chain of 2 layers"));
}

#[test]
fn parts_of_another_chain_layer_or_mode_are_refused() {
    let (_, binding) = shared(WeightCommitments::Binding);
    let (_, hiding) = shared(WeightCommitments::Hiding);
    let plan = binding.plan(&tokens(&[1, 2, 3]), LogitPositions::Last).unwrap();
    let jobs = plan.jobs().unwrap();
    // Layer 0's job with layer 1's package.
    let reason = task_error(prove_layer_task(&binding.package(1).unwrap(), &jobs[0]));
    assert!(reason.contains("not for the package"), "{reason}");
    // A plain job with the package of another chain (the hiding key of the same model).
    assert!(task_error(prove_layer_task(&hiding.package(0).unwrap(), &jobs[0])).contains("another chain"));
    // Links of the plain chain assembled into the hiding chain's plan, and a plan assembled by
    // another chain's prover.
    let links = links(binding, &plan);
    let hiding_plan = hiding.plan(&tokens(&[1, 2, 3]), LogitPositions::Last).unwrap();
    assert!(task_error(hiding_plan.assemble(hiding, &links)).contains("another chain"));
    assert!(task_error(plan.assemble(hiding, &links)).contains("another chain's"));
    assert!(task_error(binding.package(LAYERS)).contains("no layer"));
}

#[test]
fn truncated_foreign_or_other_version_parts_are_refused_without_a_panic() {
    let (_, prover) = shared(WeightCommitments::Binding);
    let plan = prover.plan(&tokens(&[1, 2, 3]), LogitPositions::Last).unwrap();
    let package = prover.package(0).unwrap();
    let job = plan.jobs().unwrap().remove(0);
    for cut in [0, 1, 3, job.len() / 2, job.len() - 1] {
        task_error(prove_layer_task(&package, &job[..cut]));
        task_error(prove_layer_task(&package[..cut.min(package.len() - 1)], &job));
    }
    // The version is the first field (a varint): version 2 is refused by its number.
    let mut newer = job.clone();
    newer[0] = 2;
    assert!(task_error(prove_layer_task(&package, &newer)).contains("format 2"));
    task_error(prove_layer_task(b"not a package", &job));
    // A part of another kind, and bytes after a part's end.
    assert!(task_error(prove_layer_task(&job, &job)).contains("a job where a package is expected"));
    let mut longer = job.clone();
    longer.push(0);
    assert!(task_error(prove_layer_task(&package, &longer)).contains("1 bytes after its end"));
    let mut links = links(prover, &plan);
    let cut = links[1].len() - 7;
    links[1].truncate(cut);
    task_error(plan.assemble(prover, &links));
}

#[test]
fn a_batch_proves_each_input_as_it_is_proven_alone() {
    let (committed, prover) = shared(WeightCommitments::Hiding);
    // Token 4000 is outside the 40-token vocabulary: that input fails, the others are proven.
    let inputs = [tokens(&[3, 1, 4]), tokens(&[4000]), tokens(&[5, 9, 2, 6]), tokens(&[5])];
    let proved = prover.prove_batch(&inputs, LogitPositions::Last, 2, 2);
    assert_eq!(proved.len(), inputs.len());
    assert!(proved[1].is_err(), "a token outside the vocabulary was proven");
    for (input, result) in inputs.iter().zip(&proved).filter(|(_, r)| r.is_ok()) {
        let batch = result.as_ref().unwrap();
        let alone = prover.prove(input, LogitPositions::Last).unwrap();
        verify_chain(&committed.key, &batch.proof).unwrap();
        assert_eq!(batch.proof.logits(), alone.proof.logits());
        assert_eq!(batch.proof.token_ids(), alone.proof.token_ids());
    }
    // One job, and more jobs than inputs, give the same results.
    for jobs in [1, 8] {
        let again = prover.prove_batch(&inputs[..1], LogitPositions::Last, jobs, 2);
        assert_eq!(again[0].as_ref().unwrap().proof.logits(), proved[0].as_ref().unwrap().proof.logits());
    }
    assert!(prover.batch_jobs(5) >= 1);
}

#[test]
fn the_prover_refuses_a_secret_or_models_that_are_not_the_keys() {
    let (committed, _) = shared(WeightCommitments::Hiding);
    assert!(matches!(
        ChainProver::new(committed.key.clone(), None, models("no-secret", 7)),
        Err(Error::SecretRequired)
    ));
    // Another model's weights of the same shape: refused when checked, or at the latest when
    // the proof made with them is checked against the key's commitments.
    let other = models("other", 11);
    if let Ok(prover) = ChainProver::new(committed.key.clone(), committed.secret.clone(), other) {
        assert!(matches!(
            prover.prove(&tokens(&[1, 2]), LogitPositions::Last),
            Err(Error::ModelDiffersFromKey { .. })
        ));
    }
    let one = models("one-layer", 7).into_iter().take(1).collect();
    assert!(matches!(
        ChainProver::new(committed.key.clone(), committed.secret.clone(), one),
        Err(Error::ChainLayers { .. })
    ));
}
