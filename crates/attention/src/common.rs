//! Helpers shared by the sub-protocols: row folds, point splitting, error mapping.

use crate::AttentionError;
use zkmha_field::Fr;
use zkmha_sumcheck::SumcheckError;

pub(crate) use zkmha_mle::fold_rows;

/// Splits a point into consecutive parts of the given lengths (lowest variables first).
///
/// # Errors
/// [`AttentionError::CheckFailed`] when the lengths do not add up to the point's length.
#[deny(clippy::indexing_slicing)]
pub(crate) fn split_point<'a>(
    point: &'a [Fr],
    lengths: &[usize],
    step: &'static str,
) -> Result<Vec<&'a [Fr]>, AttentionError> {
    if lengths.iter().sum::<usize>() != point.len() {
        return Err(AttentionError::CheckFailed { step });
    }
    let mut parts = Vec::with_capacity(lengths.len());
    let mut rest = point;
    for &length in lengths {
        let (head, tail) = rest.split_at(length);
        parts.push(head);
        rest = tail;
    }
    Ok(parts)
}

/// Maps a sum-check error of sub-protocol `step`.
pub(crate) fn sumcheck_error(step: &'static str) -> impl Fn(SumcheckError) -> AttentionError {
    move |source| AttentionError::Sumcheck { step, source }
}

/// Checks `(tensor, length, rows, columns)`: each length is `rows · columns`.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for the first that is not.
pub(crate) fn check_tensor_sizes(
    tensors: &[(&'static str, usize, usize, usize)],
) -> Result<(), AttentionError> {
    for &(tensor, got, rows, columns) in tensors {
        if got != rows * columns {
            return Err(AttentionError::WrongTensorSize {
                tensor,
                rows,
                columns,
                expected: rows * columns,
                got,
            });
        }
    }
    Ok(())
}
