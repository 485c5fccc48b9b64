use thiserror::Error;

/// Errors of the attention protocol.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AttentionError {
    /// Shapes that no attention layer has.
    #[error("invalid attention shape: {0}")]
    InvalidShape(String),
    /// An input tensor that does not match the shape.
    #[error("{tensor} should have {expected} entries ({rows} × {columns}), got {got}")]
    WrongTensorSize {
        /// Which tensor.
        tensor: &'static str,
        /// Expected rows.
        rows: usize,
        /// Expected columns.
        columns: usize,
        /// `rows · columns`.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// An input value outside the supported integer range.
    #[error("{tensor}[{index}] = {value} is outside its supported range ±2^{bound_bits}")]
    ValueOutOfRange {
        /// Which tensor.
        tensor: &'static str,
        /// Flat index.
        index: usize,
        /// The value.
        value: i64,
        /// The range's bits: `|value| < 2^bound_bits` (signed ranges `[−2^b, 2^b)`).
        bound_bits: u32,
    },
    /// A claim or a final value did not check out: the named step rejects the proof.
    #[error("the {step} check failed")]
    CheckFailed {
        /// The sub-protocol step that failed.
        step: &'static str,
    },
    /// A value outside what the fixed-point encoding can represent (scores too large for the
    /// softmax tables, a scale out of range, NaN or infinite floats).
    #[error("{0}")]
    NumericRange(String),
    /// A lookup argument failed.
    #[error("lookup: {0}")]
    Lookup(#[from] zkmha_lookup::LookupError),
    /// A commitment or opening failed.
    #[error("commitment: {0}")]
    Commitment(#[from] zkmha_pcs::PcsError),
    /// A proof of another format version.
    #[error("unsupported proof format version {0}")]
    UnsupportedVersion(u32),
    /// A sum-check inside a sub-protocol failed.
    #[error("{step}: {source}")]
    Sumcheck {
        /// The sub-protocol.
        step: &'static str,
        /// The sum-check error.
        source: zkmha_sumcheck::SumcheckError,
    },
    /// A zero-knowledge step failed (its sum-check, a Σ-protocol or a committed relation).
    #[error("{step}: {source}")]
    ZeroKnowledge {
        /// The sub-protocol.
        step: &'static str,
        /// The zero-knowledge error.
        source: zkmha_zk::ZkError,
    },
    /// Layer proofs that do not chain (the commitments where two layers meet differ, a layer
    /// missing or in another's place, keys that cannot be chained).
    #[error("the chain breaks at its layer {layer}: {reason}")]
    BrokenChain {
        /// The layer, counted from the chain's first.
        layer: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A layer proof of a chain that does not verify.
    #[error("the chain's layer {layer} does not verify: {source}")]
    InChainLayer {
        /// The layer, counted from the chain's first.
        layer: usize,
        /// Why.
        source: Box<AttentionError>,
    },
    /// An MLE error (a malformed point or table).
    #[error(transparent)]
    Mle(#[from] zkmha_mle::MleError),
}

impl From<zkmha_zk::mode::ModeError> for AttentionError {
    /// A step's error under the same name.
    fn from(error: zkmha_zk::mode::ModeError) -> Self {
        use zkmha_zk::mode::ModeError;
        match error {
            ModeError::CheckFailed { step } => AttentionError::CheckFailed { step },
            ModeError::Sumcheck { step, source } => AttentionError::Sumcheck { step, source },
            ModeError::ZeroKnowledge { step, source } => AttentionError::ZeroKnowledge { step, source },
        }
    }
}
