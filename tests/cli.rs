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
    assert!(stdout.contains("attention-layer proof is not built yet"), "{stdout}");
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
