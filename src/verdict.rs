//! `zkmha`'s exit codes, the errors that select their own, and the error report (one sentence
//! on stderr; under `--json` also one JSON object on stdout).
//!
//! | code | kind | meaning |
//! |---|---|---|
//! | 0 | — | success (`verify`: the proof is valid) |
//! | 1 | `invalid` | `verify`: the proof is invalid (a well-formed statement whose proof does not verify) |
//! | 2 | `bad_input` | bad input: an unreadable, foreign, corrupt or over-the-limits file, a value the proof cannot take, or any other failure of any command |
//! | 3 | `refused` | `verify`: refused — the proof's softmax is not the expected one (not the default for its shape, nor the one named with `--softmax-params`) |
//! | 4 | `unsupported_model` | `commit-model`, `prove --model`: the model has an architecture feature the proof does not cover, or a tensor the proof reads is in a GGUF type zkmha does not decode (refused by name) |
//! | 5 | `usage` | the command line: an unknown or missing option, options that conflict, an option the mode ignores |
//! | 6 | `out_of_resources` | the machine: the disk or quota is full, or memory ran out |

use serde_json::json;

/// The proof does not verify.
pub const INVALID: i32 = 1;
/// A bad file or value, or another failure.
pub const BAD_INPUT: i32 = 2;
/// The proof's softmax parameters are not accepted.
pub const REFUSED: i32 = 3;
/// The model file has a feature the proof does not cover.
pub const UNSUPPORTED_MODEL: i32 = 4;
/// A usage error: the options themselves are wrong.
pub const USAGE: i32 = 5;
/// The machine ran out of disk, quota or memory.
pub const OUT_OF_RESOURCES: i32 = 6;

/// A verification outcome other than "valid" that has its own exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The proof does not verify (the sentence says which check failed).
    Invalid(String),
    /// The statement is well-formed but not accepted (the sentence says what to name).
    Refused(String),
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Invalid(sentence) | Verdict::Refused(sentence) => f.write_str(sentence),
        }
    }
}

impl std::error::Error for Verdict {}

/// Options that do not go together, or an option the mode ignores (exit code [`USAGE`]):
/// `bail!(Usage(format!(…)))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Whether an I/O error means the machine ran out of something (disk, quota, memory, the
/// largest file size allowed).
fn is_out_of_resources(error: &anyhow::Error) -> bool {
    use std::io::ErrorKind;
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                ErrorKind::StorageFull
                    | ErrorKind::QuotaExceeded
                    | ErrorKind::OutOfMemory
                    | ErrorKind::FileTooLarge
            )
        }) || cause.downcast_ref::<std::collections::TryReserveError>().is_some()
    })
}

/// Whether `error` is a refusal of a model the proof does not cover (from `zkmha_model`
/// directly; the library's are told by [`zkmha_api::Error::kind`]).
fn is_unsupported_model(error: &anyhow::Error) -> bool {
    use zkmha_model::ModelError;
    error.chain().any(|e| {
        matches!(
            e.downcast_ref::<ModelError>(),
            Some(ModelError::Unsupported(_) | ModelError::UnsupportedTensorType { .. })
        )
    })
}

/// The exit code of a failed command.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    use zkmha_api::ErrorKind;
    let library =
        error.chain().find_map(|cause| cause.downcast_ref::<zkmha_api::Error>()).map(zkmha_api::Error::kind);
    match error.chain().find_map(|cause| cause.downcast_ref::<Verdict>()) {
        Some(Verdict::Invalid(_)) => INVALID,
        Some(Verdict::Refused(_)) => REFUSED,
        None if library == Some(ErrorKind::InvalidProof) => INVALID,
        None if library == Some(ErrorKind::Refused) => REFUSED,
        None if library == Some(ErrorKind::UnsupportedModel) || is_unsupported_model(error) => {
            UNSUPPORTED_MODEL
        }
        None if library == Some(ErrorKind::Usage) => USAGE,
        None if library == Some(ErrorKind::OutOfResources) => OUT_OF_RESOURCES,
        None if error.chain().any(|cause| cause.is::<Usage>()) => USAGE,
        None if is_out_of_resources(error) => OUT_OF_RESOURCES,
        None => BAD_INPUT,
    }
}

/// The name of an exit code in the JSON error report.
pub fn kind_name(code: i32) -> &'static str {
    match code {
        INVALID => "invalid",
        REFUSED => "refused",
        UNSUPPORTED_MODEL => "unsupported_model",
        USAGE => "usage",
        OUT_OF_RESOURCES => "out_of_resources",
        _ => "bad_input",
    }
}

/// The JSON object printed on stdout for a failure under `--json`.
pub fn error_json(sentence: &str, code: i32) -> serde_json::Value {
    json!({"error": sentence, "kind": kind_name(code), "exit_code": code})
}

/// Reports a failed command (the sentence on stderr; under `--json` also one JSON object on
/// stdout) and returns its exit code.
pub fn report(error: &anyhow::Error, json_output: bool) -> i32 {
    let code = exit_code(error);
    let sentence = format!("{error:#}");
    eprintln!("error: {sentence}");
    if json_output {
        println!("{}", error_json(&sentence, code));
    }
    code
}

/// Reports a command line clap refused (an unknown, missing or conflicting option): clap's
/// message on stderr, under `--json` one JSON object on stdout; exit code [`USAGE`]. Help and
/// version requests print as clap prints them and exit 0.
pub fn report_usage(error: &clap::Error, json_output: bool) -> i32 {
    use clap::error::ErrorKind;
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = error.print();
        return 0;
    }
    let _ = error.print();
    if json_output {
        // clap's message up to its usage line: "error: …" and the lines that continue it.
        let rendered = error.render().to_string();
        let message: Vec<&str> =
            rendered.trim_start().lines().take_while(|line| !line.trim().is_empty()).map(str::trim).collect();
        let sentence = message.join(" ");
        let sentence = sentence.strip_prefix("error: ").unwrap_or(&sentence);
        println!("{}", error_json(sentence, USAGE));
    }
    USAGE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_has_its_code() {
        assert_eq!(exit_code(&anyhow::Error::new(Verdict::Invalid("invalid: x".into()))), INVALID);
        assert_eq!(exit_code(&anyhow::Error::new(Verdict::Refused("refused: y".into()))), REFUSED);
        assert_eq!(exit_code(&anyhow::anyhow!("could not read f")), BAD_INPUT);
        let wrapped = anyhow::Error::new(Verdict::Invalid("invalid".into())).context("while verifying");
        assert_eq!(exit_code(&wrapped), INVALID);
        assert_eq!(exit_code(&anyhow::Error::new(Usage("--a and --b".into())).context("x")), USAGE);
        let full = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::StorageFull))
            .context("could not write f");
        assert_eq!(exit_code(&full), OUT_OF_RESOURCES);
        let missing = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("could not read f");
        assert_eq!(exit_code(&missing), BAD_INPUT);
    }

    #[test]
    fn the_library_errors_have_the_codes_of_their_kinds() {
        let memory = zkmha_api::Error::MemoryEstimate {
            estimate: 2,
            allowed: 1,
            limit: zkmha_api::resources::MemoryLimit::Given,
            entries: 1,
        };
        assert_eq!(exit_code(&anyhow::Error::new(memory).context("while proving")), OUT_OF_RESOURCES);
        let invalid = zkmha_api::Error::InvalidProof {
            error: zkmha_attention::AttentionError::CheckFailed { step: "final" },
        };
        assert_eq!(exit_code(&anyhow::Error::new(invalid)), INVALID);
        assert_eq!(exit_code(&anyhow::Error::new(zkmha_api::Error::TokensNeedLayerZero { layer: 1 })), USAGE);
        assert_eq!(exit_code(&anyhow::Error::new(zkmha_api::Error::EmptyInput)), BAD_INPUT);
        let unsupported =
            zkmha_model::ModelError::Unsupported(zkmha_model::architecture::Unsupported::Architecture {
                name: "t5".into(),
                reason: "an encoder-decoder".into(),
            });
        assert_eq!(exit_code(&anyhow::Error::new(zkmha_api::Error::Model(unsupported))), UNSUPPORTED_MODEL);
    }

    #[test]
    fn the_json_error_names_its_kind_and_code() {
        let value = error_json("a \"quoted\" path\nand a line", USAGE);
        let parsed: serde_json::Value =
            serde_json::from_str(&value.to_string()).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(parsed["kind"], "usage");
        assert_eq!(parsed["exit_code"], USAGE);
        assert_eq!(parsed["error"], "a \"quoted\" path\nand a line");
        for code in [INVALID, BAD_INPUT, REFUSED, UNSUPPORTED_MODEL, USAGE, OUT_OF_RESOURCES] {
            assert_eq!(error_json("x", code)["exit_code"], code);
        }
    }
}
