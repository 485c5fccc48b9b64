//! `--layers A..B` from the command line: `commit-model` writes a chain key (and its secret),
//! `prove --model` one proof of the layers, `verify --vk` checks the chain (exit 0 valid, 1
//! invalid), `inspect` shows it; the chain's mistakes are one sentence and a distinct exit code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};
use zkmha_api::example_model;

fn zkmha() -> Command {
    let mut cmd = Command::cargo_bin("zkmha").unwrap();
    cmd.env_remove("RUST_LOG");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-chain-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The lines of stderr besides the progress lines (`zkmha: …`).
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.trim().lines().filter(|line| !line.starts_with("zkmha: ")).collect()
}

fn fails_with(cmd: &mut Command, code: i32, needle: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(stderr.contains(needle), "expected '{needle}' in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
}

#[test]
fn three_layers_commit_prove_verify_and_inspect() {
    let dir = scratch("round-trip");
    let model = example_model::write_llama(&dir.join("m"), 7, 3).unwrap();
    let (vk, proof, out) = (dir.join("chain.vk"), dir.join("chain.proof"), dir.join("h.npy"));
    // The whole model: --layers all.
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "all", "--out", s(&vk)])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("committed to layers 0..3")
                .and(predicate::str::contains("layer 2: model commitment")),
        );
    assert!(dir.join("chain.vk.secret").exists());
    let logits = dir.join("logits.npy");
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "0..3", "--vk", s(&vk), "--tokens", "1,5,7,9"])
        .args(["--out", s(&proof), "--output", s(&out), "--logits", s(&logits)])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("proved layers 0..3 on 4 tokens")
                .and(predicate::str::contains("relative L2 error"))
                .and(predicate::str::contains("proven logits of 1 position × 40 tokens: after position 3"))
                .and(predicate::str::contains("the same next token at"))
                .and(predicate::str::contains("the final norm and the logits"))
                .and(predicate::str::contains("not proven").not()),
        )
        // Stderr is not a terminal: a line per layer proof with the layers done and the time left.
        .stderr(
            predicate::str::contains("zkmha: proving the chain: 3 layers …")
                .and(predicate::str::contains("zkmha: layer 0: proving (estimated "))
                .and(predicate::str::contains(" on 2 cores) took "))
                .and(predicate::str::contains("zkmha: the chain: verifying"))
                .and(predicate::str::contains("(1 of 3 layers, about "))
                .and(predicate::str::contains("(3 of 3 layers)"))
                .and(predicate::str::contains("zkmha: proving the chain took ")),
        );
    let verified = dir.join("verified.npz");
    zkmha()
        .args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--output", s(&verified)])
        .assert()
        .success()
        .stdout(
            predicate::str::starts_with("valid: layers 0..3")
                .and(predicate::str::contains("input: the token ids [1, 5, 7, 9], proven"))
                .and(predicate::str::contains("proven logits of 1 position × 40 tokens")),
        );
    // What verify writes of a chain with a head is its logits, with the token ids and the
    // positions they are about.
    assert_eq!(crate::npz_names(&verified), ["output.npy", "token_ids.npy", "positions.npy"]);
    assert_eq!(crate::npz_member(&verified, "output.npy"), std::fs::read(&logits).unwrap());
    let json = zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!((json["valid"].as_bool(), json["layers"].as_u64()), (Some(true), Some(3)));
    assert_eq!(json["token_ids"], serde_json::json!([1, 5, 7, 9]));
    assert_eq!(
        (json["logits"]["positions"].clone(), json["logits"]["vocabulary"].as_u64()),
        (serde_json::json!([3]), Some(40))
    );
    let inspect = zkmha().args(["inspect", s(&proof), "--json"]).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(info["kind"], "zero-knowledge chain proof");
    assert_eq!(info["layers"][2]["output"], "committed");
    assert_eq!(info["logits"]["count"], 40);
    zkmha().args(["inspect", s(&vk)]).assert().success().stdout(
        predicate::str::starts_with("chain key: layers 0..3")
            .and(predicate::str::contains("embedding table: 40 token rows × 16"))
            .and(predicate::str::contains("head: the final norm (RMSNorm)")),
    );
    // A chain that stops before the last layer ends in its hidden state and says why.
    let (short_vk, short_proof) = (dir.join("short.vk"), dir.join("short.proof"));
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "0..2", "--out", s(&short_vk)])
        .assert()
        .success();
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "0..2", "--vk", s(&short_vk), "--tokens", "1,5"])
        .args(["--out", s(&short_proof), "--all-positions"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "no logits: the model's head is not proven: layer 1 is not the model's last layer (it has 3)",
            )
            .and(predicate::str::contains("not proven: the final norm and the logits")),
        );
    fails_with(
        zkmha()
            .args([
                "prove",
                "--model",
                s(&model),
                "--layers",
                "0..2",
                "--vk",
                s(&short_vk),
                "--tokens",
                "1,5",
            ])
            .args(["--out", s(&dir.join("x.proof")), "--logits", s(&dir.join("x.npy"))]),
        5,
        "--logits: this chain proves no logits",
    );
    assert!(!dir.join("x.proof").exists());

    // A chain key of other layers of the same model: the proof does not verify (exit 1).
    let other = dir.join("other.vk");
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "1..3", "--out", s(&other)])
        .assert()
        .success();
    fails_with(zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&other)]), 1, "the chain breaks");
    // The prover refuses a key of other layers than --layers names.
    fails_with(
        zkmha()
            .args(["prove", "--model", s(&model), "--layers", "0..3", "--vk", s(&other), "--tokens", "1,2"])
            .args(["--out", s(&dir.join("other.proof"))]),
        2,
        "the chain needs layers 1..3",
    );
    // One byte changed inside the proof: rejected or unreadable, never accepted.
    let mut bytes = std::fs::read(&proof).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 1;
    let tampered = dir.join("tampered.proof");
    std::fs::write(&tampered, &bytes).unwrap();
    let out = zkmha().args(["verify", "--proof", s(&tampered), "--vk", s(&vk)]).output().unwrap();
    assert!(matches!(out.status.code(), Some(1 | 2)), "{out:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn chain_usage_mistakes_are_one_sentence() {
    let dir = scratch("usage");
    let model = example_model::write_llama(&dir.join("m"), 7, 2).unwrap();
    // clap's refusal of the value (its usage lines follow the sentence).
    let out = zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "2..1", "--out", s(&dir.join("k"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no layer"));
    fails_with(
        zkmha().args([
            "prove",
            "--model",
            s(&model),
            "--layers",
            "0..2",
            "--tokens",
            "1",
            "--out",
            s(&dir.join("p")),
        ]),
        5,
        "--layers needs the chain key",
    );
    fails_with(
        zkmha().args(["commit-model", "--model", s(&model), "--layers", "0..3", "--out", s(&dir.join("k"))]),
        5,
        "the model's layers are 0 to 1: there is no layer 2",
    );
    let vk = dir.join("chain.vk");
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "0..2", "--out", s(&vk), "--transparent"])
        .assert()
        .success();
    let proof = dir.join("chain.proof");
    zkmha()
        .args([
            "prove",
            "--model",
            s(&model),
            "--layers",
            "0..2",
            "--vk",
            s(&vk),
            "--tokens",
            "3,4",
            "--transparent",
        ])
        .args(["--out", s(&proof)])
        .assert()
        .success()
        .stdout(predicate::str::contains("not zero-knowledge"));
    fails_with(zkmha().args(["verify", "--proof", s(&proof)]), 5, "pass the chain key with --vk");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dry_run_reports_the_forward_pass_a_proof_proves_and_writes_nothing() {
    let dir = scratch("dry-run");
    let model = example_model::write_llama(&dir.join("m"), 7, 2).unwrap();
    let (vk, proof) = (dir.join("chain.vk"), dir.join("chain.proof"));
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "all", "--out", s(&vk), "--transparent"])
        .assert()
        .success();
    let tokens = ["--tokens", "1,5,7,9,11"];
    let proved = zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--transparent"])
        .args(tokens)
        .args(["--all-positions", "--out", s(&proof), "--json"])
        .output()
        .unwrap();
    assert!(proved.status.success(), "{}", String::from_utf8_lossy(&proved.stderr));
    let proved: serde_json::Value = serde_json::from_slice(&proved.stdout).unwrap();
    // The layers' estimates from their shapes, added up.
    assert!(proved["estimate"]["seconds"].as_f64().is_some_and(|t| t > 0.0), "{proved}");
    assert!(proved["estimate"]["memory_bytes"].as_u64().is_some_and(|m| m > 0), "{proved}");
    let before: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    let dry = zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--transparent"])
        .args(tokens)
        .args(["--all-positions", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let dry: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
    // The same forward pass as the proof's: the same errors, the same predictions.
    assert_eq!((dry["dry_run"].as_bool(), dry["proven"].as_bool()), (Some(true), Some(false)));
    for field in ["relative_l2_error", "layers_relative_l2_error", "layer_relative_l2_errors", "tokens"] {
        assert_eq!(dry[field], proved[field], "{field}");
    }
    for field in ["positions", "predicted", "same_next_tokens_as_float64", "relative_l2_error"] {
        assert_eq!(dry["logits"][field], proved["logits"][field], "logits' {field}");
    }
    assert_eq!(dry["logits"]["predicted"].as_array().map(Vec::len), Some(5));
    let after: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before, after, "a dry run writes nothing");
    // In words: it says that nothing is proven.
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk)])
        .args(tokens)
        .arg("--dry-run")
        .assert()
        .success()
        .stdout(
            predicate::str::starts_with("dry run, nothing proven")
                .and(predicate::str::contains("the same next token as float64 at")),
        );
    // It proves nothing, so it takes no proof file, and it needs a chain (clap's refusals:
    // the usage exit code, its usage lines after the sentence).
    let refused = |cmd: &mut Command, needle: &str| {
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        assert!(stderr.contains(needle) && !stderr.contains("panicked"), "{stderr}");
    };
    refused(
        zkmha()
            .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--dry-run"])
            .args(tokens)
            .args(["--out", s(&proof)]),
        "--out",
    );
    refused(zkmha().args(["prove", "--model", s(&model), "--dry-run"]).args(tokens), "--layers");
    // Our own refusals: one sentence each.
    fails_with(
        zkmha()
            .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--dry-run"])
            .args(tokens)
            .args(["--seed", "3"]),
        5,
        "--seed shapes or draws an attention layer of its own",
    );
    fails_with(
        zkmha().args(["prove", "--layers", "all", "--vk", s(&vk), "--dry-run"]).args(tokens),
        5,
        "--dry-run apply to model layers, which need --model FILE",
    );
}

/// A scratch directory, a two-layer model in it and its hiding chain key.
fn two_layers_committed(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let model = example_model::write_llama(&dir.join("m"), 7, 2).unwrap();
    let vk = dir.join("chain.vk");
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "all", "--out", s(&vk)])
        .assert()
        .success();
    (dir, model, vk)
}

/// `zkmha verify` refuses a valid proof of other tokens, other positions or other layers than
/// the ones given (exit code 3, one sentence naming what differs), before verifying; `--text`
/// is tokenized by `--model`'s tokenizer; a chain from a committed hidden state is refused
/// when tokens are expected. The reproducer of the adversarial review, on the command line.
#[test]
fn verify_refuses_a_proof_of_other_tokens_positions_or_layers() {
    let (dir, model, vk) = two_layers_committed("expected");
    // A word-level tokenizer beside the model: "one five seven nine" is 1, 5, 7, 9.
    let vocabulary = serde_json::json!({"[UNK]": 0, "one": 1, "five": 5, "seven": 7, "eight": 8, "nine": 9});
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [], "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocabulary, "unk_token": "[UNK]"},
    });
    std::fs::write(model.with_file_name("tokenizer.json"), tokenizer.to_string()).unwrap();
    let proof = dir.join("a.proof");
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--tokens", "1,5,7,9"])
        .args(["--out", s(&proof)])
        .assert()
        .success();
    let verify = || {
        let mut cmd = zkmha();
        cmd.args(["verify", "--proof", s(&proof), "--vk", s(&vk)]);
        cmd
    };
    verify()
        .args(["--tokens", "1,5,7,9", "--positions", "3", "--layers", "0..2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("input: the token ids [1, 5, 7, 9], proven"));
    verify().args(["--text", "one five seven nine", "--model", s(&model)]).assert().success();
    fails_with(
        verify().args(["--tokens", "1,5,7,8"]),
        3,
        "refused: the proof's input (token ids [1, 5, 7, 9]) is not the one expected (token ids [1, 5, 7, 8])",
    );
    fails_with(
        verify().args(["--text", "one five seven eight", "--model", s(&model)]),
        3,
        "token ids [1, 5, 7, 8]",
    );
    fails_with(
        verify().args(["--positions", "0,1,2,3"]),
        3,
        "refused: the proof's output (logits at positions [3])",
    );
    fails_with(verify().args(["--layers", "0..1"]), 3, "refused: the proof's layers (layers 0..2)");
    // The refusal as one JSON object on --json is the same exit code.
    assert_eq!(verify().args(["--tokens", "2", "--json"]).output().unwrap().status.code(), Some(3));
    // Mistakes in what is expected are usage errors.
    for (args, needle) in
        [(vec!["--text", "one"], "--model"), (vec!["--layers", "all"], "names the layers expected")]
    {
        let out = verify().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(5));
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle));
    }
    fails_with(verify().args(["--output", s(&dir.join("out.npy"))]), 5, "as one .npz file");
    assert!(!dir.join("out.npy").exists());
    // A chain of layer 1 alone, from a committed hidden state, proves no token ids.
    let (deep_vk, deep_proof, hidden) = (dir.join("deep.vk"), dir.join("deep.proof"), dir.join("h.npy"));
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layers", "1..2", "--out", s(&deep_vk)])
        .assert()
        .success();
    zkmha()
        .args([
            "hidden-state",
            "--model",
            s(&model),
            "--layer",
            "1",
            "--tokens",
            "1,5,7,9",
            "--out",
            s(&hidden),
        ])
        .assert()
        .success();
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "1..2", "--vk", s(&deep_vk), "--input", s(&hidden)])
        .args(["--out", s(&deep_proof)])
        .assert()
        .success();
    zkmha()
        .args(["verify", "--proof", s(&deep_proof), "--vk", s(&deep_vk)])
        .assert()
        .success()
        .stdout(predicate::str::contains("not proven from token ids"));
    fails_with(
        zkmha().args(["verify", "--proof", s(&deep_proof), "--vk", s(&deep_vk), "--tokens", "1,5,7,9"]),
        3,
        "a committed hidden state, not proven from token ids",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tokens_file_proves_every_input_on_the_model_loaded_once() {
    let (dir, model, vk) = two_layers_committed("batch");
    let inputs = dir.join("inputs.txt");
    std::fs::write(&inputs, "# two inputs\n1,5,7,9\n\n3 4\n").unwrap();
    let proofs = dir.join("proofs");
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk)])
        .args(["--tokens-file", s(&inputs), "--out", s(&proofs), "--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["inputs"].as_array().unwrap().len(), 2);
    assert_eq!(report["inputs"][1]["tokens"], 2);
    assert_eq!(report["jobs"], 2);
    // Each proof verifies alone, and proves what a single `prove` of its input proves.
    let single = dir.join("single.proof");
    let logits = dir.join("single.npy");
    zkmha()
        .args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk), "--tokens", "1,5,7,9"])
        .args(["--out", s(&single), "--logits", s(&logits)])
        .assert()
        .success();
    let verified = |proof: &Path| {
        let out = zkmha().args(["verify", "--vk", s(&vk), "--proof", s(proof), "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (json["token_ids"].clone(), json["logits"].clone())
    };
    let first = verified(&proofs.join("input-1.proof"));
    assert_eq!(first, verified(&single));
    assert_eq!(verified(&proofs.join("input-2.proof")).0, serde_json::json!([3, 4]));
}

#[test]
fn a_bad_tokens_file_or_input_is_one_sentence() {
    let (dir, model, vk) = two_layers_committed("batch-bad");
    let prove = |file: &Path, out: &Path| {
        let mut cmd = zkmha();
        cmd.args(["prove", "--model", s(&model), "--layers", "all", "--vk", s(&vk)]).args([
            "--tokens-file",
            s(file),
            "--out",
            s(out),
        ]);
        cmd
    };
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "1,2\n3,x\n").unwrap();
    fails_with(&mut prove(&bad, &dir.join("o1")), 5, "line 2: \"x\" is not a token id");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "# nothing\n\n").unwrap();
    fails_with(&mut prove(&empty, &dir.join("o2")), 5, "holds no input");
    fails_with(&mut prove(&dir.join("missing.txt"), &dir.join("o3")), 2, "could not read --tokens-file");
    // A token outside the 40-token vocabulary on any line is found before the first input is
    // proven (issue 53: the work of line 1 was lost): nothing is proven.
    let mixed = dir.join("mixed.txt");
    std::fs::write(&mixed, "1,2,3\n4000\n").unwrap();
    fails_with(
        &mut prove(&mixed, &dir.join("o4")),
        2,
        "line 2: token id 4000 is outside the vocabulary of 40 tokens",
    );
    assert!(!dir.join("o4").join("input-1.proof").exists());
    // Under --json: one object with the sentence.
    let out = prove(&mixed, &dir.join("o5")).arg("--json").output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(report["exit_code"], 2);
    assert!(report["error"].as_str().unwrap().contains("line 2: token id 4000"), "{report}");
}
