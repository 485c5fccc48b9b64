use thiserror::Error;

/// Errors of the multilinear-extension crate.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MleError {
    /// The evaluation table does not have `2^num_vars` entries.
    #[error("an MLE with {num_vars} variables needs {expected} evaluations, got {got}")]
    WrongTableLength {
        /// Variables requested.
        num_vars: usize,
        /// `2^num_vars`.
        expected: usize,
        /// Length supplied.
        got: usize,
    },
    /// A point does not have one coordinate per variable.
    #[error("a point for an MLE with {expected} variables has {got} coordinates")]
    WrongPointLength {
        /// Variables of the MLE.
        expected: usize,
        /// Coordinates supplied.
        got: usize,
    },
    /// The data does not match the stated shape.
    #[error("shape {shape:?} holds {expected} values, got {got}")]
    ShapeMismatch {
        /// The stated shape.
        shape: Vec<usize>,
        /// Product of the shape.
        expected: usize,
        /// Values supplied.
        got: usize,
    },
    /// More variables than [`crate::MAX_NUM_VARS`].
    #[error("{num_vars} variables exceed the supported maximum of {max}")]
    TooManyVariables {
        /// Variables requested.
        num_vars: usize,
        /// The maximum.
        max: usize,
    },
    /// A small-integer value lies outside the supported range.
    #[error("value {value} at index {index} is outside the small-integer range ±2^{bits}")]
    ValueOutOfRange {
        /// The offending value.
        value: i64,
        /// Its index in the table.
        index: usize,
        /// The range limit in bits.
        bits: u32,
    },
    /// Binding a variable of a constant (zero-variable) MLE.
    #[error("cannot bind a variable of an MLE with no variables")]
    NoVariableToBind,
}
