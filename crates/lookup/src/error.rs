use thiserror::Error;

/// Errors of the lookup arguments. Every malformed proof maps to one of these; the verifier
/// never panics.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LookupError {
    /// A witness entry (or tuple) that the table does not contain: the prover cannot prove it.
    #[error("witness entry {index} ({value}) is not in the table {table}")]
    ValueNotInTable {
        /// The table's name.
        table: &'static str,
        /// Position in the witness.
        index: usize,
        /// The value (first column for tuples).
        value: i64,
    },
    /// Columns or tables of the wrong size or count.
    #[error("{what}: expected {expected}, got {got}")]
    WrongLength {
        /// What has the wrong length.
        what: &'static str,
        /// Expected.
        expected: usize,
        /// Found.
        got: usize,
    },
    /// A table too large or too small, or an invalid parameter.
    #[error("invalid table: {0}")]
    InvalidTable(&'static str),
    /// The proof has the wrong number of layers or values.
    #[error("malformed lookup proof: {0}")]
    MalformedProof(&'static str),
    /// A fraction layer's sum-check does not end at the claimed layer values.
    #[error("the fractional sum-check fails at layer {layer}")]
    LayerMismatch {
        /// Layer (number of variables of the layer below the claim, 1-based).
        layer: usize,
    },
    /// A zero denominator (the challenge hit a table value; probability ≈ table size / |F|).
    #[error("a zero denominator; prove again with a fresh transcript")]
    ZeroDenominator,
    /// The lookup's root or leaf relations fail (plain mode): a value outside the table, a
    /// wrong multiplicity, or witness values that do not give the leaf denominator.
    #[error(
        "the lookup's relations fail: a value is outside the table, a multiplicity is wrong or the witness values do not match the leaf"
    )]
    RelationMismatch,
    /// An error of the underlying sum-check.
    #[error(transparent)]
    Sumcheck(#[from] zkmha_sumcheck::SumcheckError),
    /// A zero-knowledge piece failed (a relation on committed values, a masked sum-check).
    #[error(transparent)]
    ZeroKnowledge(#[from] zkmha_zk::ZkError),
    /// An error of the MLE layer.
    #[error(transparent)]
    Mle(#[from] zkmha_mle::MleError),
    /// A step's sum of products or relations (either mode).
    #[error(transparent)]
    Step(#[from] zkmha_zk::mode::ModeError),
}
