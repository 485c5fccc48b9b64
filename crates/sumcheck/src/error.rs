use thiserror::Error;

/// Errors of the sum-check crate. Every malformed proof maps to one of these; the
/// verifier never panics.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SumcheckError {
    /// The proof has another number of rounds than the claim has variables.
    #[error("the proof has {got} rounds, the claim has {expected} variables")]
    WrongRoundCount {
        /// Variables of the claim.
        expected: usize,
        /// Rounds in the proof.
        got: usize,
    },
    /// A round message has another number of evaluations than the claimed degree needs.
    #[error("round {round} sends {got} evaluations, degree {degree} needs {expected}")]
    WrongDegree {
        /// The round (0-based).
        round: usize,
        /// The claimed degree.
        degree: usize,
        /// Evaluations a round of that degree sends.
        expected: usize,
        /// Evaluations sent.
        got: usize,
    },
    /// The final value does not match the polynomial's value at the random point: the
    /// claimed sum or a round message was wrong, or the transcripts diverged.
    #[error("the final sum-check value does not match the polynomial at the random point")]
    FinalEvaluationMismatch,
    /// A claim that no sum-check can prove (degree 0 or above the maximum, too many variables).
    #[error("invalid claim: {0}")]
    InvalidClaim(&'static str),
    /// The proof or instance lists another number of values than expected.
    #[error("expected {expected} {what}, got {got}")]
    WrongLength {
        /// What was counted.
        what: &'static str,
        /// Expected count.
        expected: usize,
        /// Actual count.
        got: usize,
    },
    /// The witness does not fit the instance description.
    #[error("invalid instance: {0}")]
    InvalidInstance(String),
    /// An error from the MLE crate.
    #[error(transparent)]
    Mle(#[from] zkmha_mle::MleError),
}
