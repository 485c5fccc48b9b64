//! How matrices and tensors map onto hypercube indices (see the crate docs).

use crate::{Fr, MleError};

/// `⌈log₂ n⌉`, with `log2_ceil(0) = log2_ceil(1) = 0`.
pub const fn log2_ceil(n: usize) -> usize {
    if n <= 1 { 0 } else { (usize::BITS - (n - 1).leading_zeros()) as usize }
}

/// `2^⌈log₂ n⌉`, the padded length of an axis of length `n` (1 for 0 and 1).
pub const fn padded_len(n: usize) -> usize {
    1usize << log2_ceil(n)
}

/// The point at which `M̃(row point, column point)` is evaluated: `[column ‖ row]`.
///
/// Column bits are the low variables because a row-major matrix stores `M[i][j]` at
/// `i·Ĉ + j`.
pub fn matrix_point(row_point: &[Fr], column_point: &[Fr]) -> Vec<Fr> {
    let mut point = Vec::with_capacity(row_point.len() + column_point.len());
    point.extend_from_slice(column_point);
    point.extend_from_slice(row_point);
    point
}

/// The point for a tensor MLE given one point per axis, outermost axis first:
/// the last axis owns the lowest variables, so the parts are concatenated in reverse.
pub fn tensor_point(axis_points: &[&[Fr]]) -> Vec<Fr> {
    axis_points.iter().rev().flat_map(|p| p.iter().copied()).collect()
}

/// Pads a row-major `rows × columns` matrix with zeros to `padded_len(rows) × padded_len(columns)`.
///
/// # Errors
/// [`MleError::ShapeMismatch`] when `data.len() != rows · columns`.
pub fn pad_matrix<T: Copy + Default>(rows: usize, columns: usize, data: &[T]) -> Result<Vec<T>, MleError> {
    pad_tensor(&[rows, columns], data)
}

/// Pads a row-major tensor with zeros, every axis to its next power of two.
///
/// # Errors
/// [`MleError::ShapeMismatch`] when `data.len()` is not the product of `shape`.
pub fn pad_tensor<T: Copy + Default>(shape: &[usize], data: &[T]) -> Result<Vec<T>, MleError> {
    let expected = shape.iter().try_fold(1usize, |acc, &a| acc.checked_mul(a));
    if expected != Some(data.len()) {
        return Err(MleError::ShapeMismatch {
            shape: shape.to_vec(),
            expected: expected.unwrap_or(usize::MAX),
            got: data.len(),
        });
    }
    let padded: Vec<usize> = shape.iter().map(|&a| padded_len(a)).collect();
    let total_vars: usize = padded.iter().map(|&a| log2_ceil(a)).sum();
    if total_vars > crate::MAX_NUM_VARS {
        return Err(MleError::TooManyVariables { num_vars: total_vars, max: crate::MAX_NUM_VARS });
    }
    if padded == shape {
        return Ok(data.to_vec());
    }
    let mut out = vec![T::default(); padded.iter().product()];
    if data.is_empty() {
        return Ok(out);
    }
    // Copy each innermost row; the outer index is mixed-radix over the original shape.
    let inner = *shape.last().unwrap_or(&1);
    let outer_axes = &shape[..shape.len().saturating_sub(1)];
    let mut index = vec![0usize; outer_axes.len()];
    for row in data.chunks(inner.max(1)) {
        let mut offset = 0usize;
        for (axis, &i) in index.iter().enumerate() {
            offset = offset * padded[axis] + i;
        }
        offset *= *padded.last().unwrap_or(&1);
        out[offset..offset + row.len()].copy_from_slice(row);
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < outer_axes[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithms() {
        let cases = [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (64, 6), (65, 7)];
        for (n, log) in cases {
            assert_eq!(log2_ceil(n), log, "n = {n}");
            assert_eq!(padded_len(n), 1 << log);
        }
    }

    #[test]
    fn matrix_padding_places_entries_row_major() {
        let m: Vec<u32> = (1..=6).collect(); // 2 × 3
        let padded = pad_matrix(2, 3, &m).unwrap_or_default();
        assert_eq!(padded, vec![1, 2, 3, 0, 4, 5, 6, 0]);
        assert!(pad_matrix(2, 3, &m[..5]).is_err());
    }

    #[test]
    fn tensor_padding_three_axes() {
        // shape [3, 1, 3]: padded [4, 1, 4]
        let t: Vec<u32> = (1..=9).collect();
        let padded = pad_tensor(&[3, 1, 3], &t).unwrap_or_default();
        let mut expected = vec![0u32; 16];
        for a in 0..3 {
            for c in 0..3 {
                expected[a * 4 + c] = t[a * 3 + c];
            }
        }
        assert_eq!(padded, expected);
    }
}
