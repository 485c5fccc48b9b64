use thiserror::Error;

/// Errors of the commitment scheme.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PcsError {
    /// The reference string supports fewer variables than asked for.
    #[error("the reference string supports {available} variables, {needed} are needed")]
    SrsTooSmall {
        /// Variables needed.
        needed: usize,
        /// Variables available.
        available: usize,
    },
    /// A point with another number of coordinates than the polynomial has variables.
    #[error("the point has {got} coordinates, the polynomial {expected} variables")]
    WrongPointLength {
        /// Variables.
        expected: usize,
        /// Coordinates.
        got: usize,
    },
    /// The proof has the wrong number of elements for the claimed number of variables.
    #[error("malformed opening proof: {0}")]
    MalformedProof(&'static str),
    /// A challenge hit a degenerate value (probability about 2^-250).
    #[error("degenerate challenge; prove again")]
    DegenerateChallenge,
    /// The folding chain of evaluations does not reach the claimed value.
    #[error("the evaluation chain breaks at round {round}")]
    EvaluationChainMismatch {
        /// The first inconsistent round.
        round: usize,
    },
    /// A zero-knowledge opening's response does not give the claimed value: a wrong value or
    /// a forged response.
    #[error("the zero-knowledge opening does not give the claimed value")]
    ZkInnerProductMismatch,
    /// A zero-knowledge opening's group equation fails: the response does not open the
    /// commitments (or the mask commitment was altered).
    #[error("the zero-knowledge opening does not match the commitments")]
    ZkCommitmentMismatch,
    /// The final pairing equation does not hold.
    #[error("the opening's pairing check failed")]
    PairingCheckFailed,
    /// A reference string too short to verify anything.
    #[error("the reference string has {g1} G1 and {g2} G2 powers; at least 3 and 4 are needed")]
    SrsTooShort {
        /// G1 powers in the string.
        g1: usize,
        /// G2 powers in the string.
        g2: usize,
    },
    /// A point of the reference string is the identity: a degenerate string under which any
    /// opening verifies.
    #[error(
        "power {index} of the reference string's G{group} points is the identity: the string is degenerate"
    )]
    SrsIdentityPoint {
        /// 1 or 2.
        group: u8,
        /// Index of the first identity point.
        index: usize,
    },
    /// The reference string's secret is 1 or −1, whose powers everyone knows.
    #[error("the reference string's secret is 1 or -1 ([τ]₁ = ±[1]₁): everyone knows it")]
    SrsKnownSecret,
    /// The reference string is inconsistent (not powers of one secret).
    #[error("the reference string is not a sequence of powers of one secret")]
    InconsistentSrs,
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// A batch of claims that does not fit together (a claim on a missing polynomial, a
    /// polynomial without claims).
    #[error("invalid batch of opening claims: {0}")]
    InvalidBatch(&'static str),
    /// The sum-check that reduces a batch of claims failed.
    #[error("the batch reduction failed: {0}")]
    Sumcheck(#[from] zkmha_sumcheck::SumcheckError),
    /// A table or point of the wrong size.
    #[error(transparent)]
    Mle(#[from] zkmha_mle::MleError),
    /// Bytes that do not decode.
    #[error("could not decode: {0}")]
    Serialization(String),
}
