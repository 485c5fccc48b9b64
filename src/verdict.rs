//! `zkmha`'s exit codes, and the two errors of `zkmha verify` that select their own.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (`verify`: the proof is valid) |
//! | 1 | `verify`: the proof is invalid (a well-formed statement whose proof does not verify) |
//! | 2 | bad input: an unreadable, foreign, corrupt or over-the-limits file, bad options (clap's usage errors exit 2 as well), or any other failure of any command |
//! | 3 | `verify`: refused — the proof's softmax is not the expected one (not the default for its shape, nor the one named with `--softmax-params`) |
//! | 4 | `commit-model`, `prove --model`: the model has an architecture feature the proof does not cover, or a tensor the proof reads is in a GGUF type zkmha does not decode (refused by name) |

/// The proof does not verify.
pub const INVALID: i32 = 1;
/// A bad file, bad options, or another failure.
pub const BAD_INPUT: i32 = 2;
/// The proof's softmax parameters are not accepted.
pub const REFUSED: i32 = 3;
/// The model file has a feature the proof does not cover.
pub const UNSUPPORTED_MODEL: i32 = 4;

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

/// The exit code of a failed command.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    match error.chain().find_map(|cause| cause.downcast_ref::<Verdict>()) {
        Some(Verdict::Invalid(_)) => INVALID,
        Some(Verdict::Refused(_)) => REFUSED,
        None if crate::model_cli::is_unsupported_model(error) => UNSUPPORTED_MODEL,
        None => BAD_INPUT,
    }
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
    }
}
