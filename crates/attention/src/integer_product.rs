//! Exact integer matrix products for the prover's witnesses (the projections' `X·W`, the
//! MLP's two layers): the forward pass and the remainders of a projection both need them, and
//! the naive `i128` loop was most of a GPT-2-sized layer's witness time.
//!
//! ```text
//! in   A (rows × inner), B (inner × columns), row-major i64
//! out  P = A·B over the integers, row-major, every entry exact (i128)
//! f64  when inner·max|A|·max|B| < 2^53: every product a·b and every partial sum of a row by a
//!      column is an integer below 2^53 in magnitude, which an f64 holds exactly, so a BLAS-like
//!      dgemm (ndarray's, any order of summation, fused or not) returns the exact integers
//! i128 otherwise: B transposed once, each entry summed in i128 (|a·b| < 2^126 per term, and
//!      the callers bound inner and the entries so the sum stays inside i128)
//! ```
//!
//! Nothing here is a verifier's: the proof checks whatever the prover computed, and a wrong
//! product only makes an honest proof fail. Tests compare both paths with the plain loop.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

/// Products of at least this many multiply-adds run in parallel (row blocks on rayon).
pub const PARALLEL_THRESHOLD: usize = 1 << 18;

/// Rows per parallel block.
const ROW_BLOCK: usize = 32;

/// The largest `inner·max|A|·max|B|` the f64 path takes (exclusive).
const F64_EXACT: u128 = 1 << 53;

/// `A·B` (`A` is `rows × inner`, `B` is `inner × columns`, both row-major), exact, in
/// parallel above [`PARALLEL_THRESHOLD`]. The callers check the sizes: `a.len() == rows·inner`
/// and `b.len() == inner·columns` (a shorter `a` gives fewer rows, a shorter `b` all zeros:
/// never a wrong entry), and bound the entries so that a row by a column stays inside `i128`
/// (the projections: `|X|, |W| < 2^31`; `A·V` checks `< 2^120` itself).
pub fn integer_product(a: &[i64], b: &[i64], rows: usize, inner: usize, columns: usize) -> Vec<i128> {
    product(
        a,
        b,
        rows,
        inner,
        columns,
        rows.saturating_mul(inner).saturating_mul(columns) >= PARALLEL_THRESHOLD,
    )
}

/// [`integer_product`] on one thread (the same result).
pub fn integer_product_sequential(
    a: &[i64],
    b: &[i64],
    rows: usize,
    inner: usize,
    columns: usize,
) -> Vec<i128> {
    product(a, b, rows, inner, columns, false)
}

/// `A·B` in f64 (the float64 reference's layers: not exact, any order of summation), through
/// dgemm in row blocks, in parallel above [`PARALLEL_THRESHOLD`]. Sizes as [`integer_product`].
pub fn float_product(a: &[f64], b: &[f64], rows: usize, inner: usize, columns: usize) -> Vec<f64> {
    let a = &a[..(rows * inner).min(a.len())];
    let rows = a.len().checked_div(inner).unwrap_or(rows);
    let mut out = vec![0f64; rows * columns];
    let Ok(b) = ArrayView2::from_shape((inner, columns), b.get(..inner * columns).unwrap_or_default()) else {
        return out;
    };
    if inner == 0 || columns == 0 {
        return out;
    }
    let block = |(a_rows, out_rows): (&[f64], &mut [f64])| {
        let block_rows = a_rows.len() / inner;
        if let (Ok(a), Ok(mut view)) = (
            ArrayView2::from_shape((block_rows, inner), a_rows),
            ArrayViewMut2::from_shape((block_rows, columns), out_rows),
        ) {
            general_mat_mul(1.0, &a, &b, 0.0, &mut view);
        }
    };
    if rows.saturating_mul(inner).saturating_mul(columns) >= PARALLEL_THRESHOLD {
        a.par_chunks(ROW_BLOCK * inner).zip(out.par_chunks_mut(ROW_BLOCK * columns)).for_each(block);
    } else {
        a.chunks(ROW_BLOCK * inner).zip(out.chunks_mut(ROW_BLOCK * columns)).for_each(block);
    }
    out
}

fn max_abs(values: &[i64]) -> u128 {
    u128::from(values.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0))
}

fn product(a: &[i64], b: &[i64], rows: usize, inner: usize, columns: usize, parallel: bool) -> Vec<i128> {
    let (a, b) = (&a[..(rows * inner).min(a.len())], &b[..(inner * columns).min(b.len())]);
    let rows = a.len().checked_div(inner).unwrap_or(rows);
    let mut out = vec![0i128; rows * columns];
    if inner == 0 || columns == 0 || b.len() < inner * columns {
        return out;
    }
    let bound = max_abs(a).saturating_mul(max_abs(b)).saturating_mul(inner as u128);
    if bound < F64_EXACT {
        let a: Vec<f64> = a.iter().map(|&v| v as f64).collect();
        let b: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let Ok(b) = ArrayView2::from_shape((inner, columns), &b) else { return out };
        let block = |(a_rows, out_rows): (&[f64], &mut [i128])| {
            let block_rows = a_rows.len() / inner;
            let mut c = vec![0f64; block_rows * columns];
            if let (Ok(a), Ok(mut view)) = (
                ArrayView2::from_shape((block_rows, inner), a_rows),
                ArrayViewMut2::from_shape((block_rows, columns), &mut c[..]),
            ) {
                general_mat_mul(1.0, &a, &b, 0.0, &mut view);
            }
            // Exact integers below 2^53: the conversion loses nothing.
            for (o, v) in out_rows.iter_mut().zip(&c) {
                *o = *v as i128;
            }
        };
        if parallel {
            a.par_chunks(ROW_BLOCK * inner).zip(out.par_chunks_mut(ROW_BLOCK * columns)).for_each(block);
        } else {
            a.chunks(ROW_BLOCK * inner).zip(out.chunks_mut(ROW_BLOCK * columns)).for_each(block);
        }
        return out;
    }
    // B transposed: each entry a dot product of two contiguous rows.
    let mut transposed = vec![0i64; inner * columns];
    for (j, row) in b.chunks(columns).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            transposed[c * inner + j] = v;
        }
    }
    let row = |(a_row, out_row): (&[i64], &mut [i128])| {
        for (o, column) in out_row.iter_mut().zip(transposed.chunks(inner)) {
            *o = a_row.iter().zip(column).map(|(&x, &w)| i128::from(x) * i128::from(w)).sum();
        }
    };
    if parallel {
        a.par_chunks(inner).zip(out.par_chunks_mut(columns)).for_each(row);
    } else {
        a.chunks(inner).zip(out.chunks_mut(columns)).for_each(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn reference(a: &[i64], b: &[i64], rows: usize, inner: usize, columns: usize) -> Vec<i128> {
        let mut out = vec![0i128; rows * columns];
        for i in 0..rows {
            for c in 0..columns {
                for j in 0..inner {
                    out[i * columns + c] += i128::from(a[i * inner + j]) * i128::from(b[j * columns + c]);
                }
            }
        }
        out
    }

    fn random(rng: &mut ChaCha20Rng, len: usize, bound: i64) -> Vec<i64> {
        (0..len).map(|_| rng.gen_range(-bound..=bound)).collect()
    }

    #[test]
    fn both_paths_equal_the_plain_loop_on_many_shapes() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for &(rows, inner, columns) in &[
            (1, 1, 1),
            (3, 5, 7),
            (33, 17, 65),
            (64, 64, 64),
            (70, 129, 31),
            (0, 4, 4),
            (4, 0, 4),
            (5, 3, 0),
        ] {
            // Small entries take the f64 path, large ones the i128 path.
            for bound in [1i64, 1 << 15, 1 << 40, i64::MAX] {
                let a = random(&mut rng, rows * inner, bound);
                let b = random(&mut rng, inner * columns, bound);
                let expected = reference(&a, &b, rows, inner, columns);
                assert_eq!(
                    integer_product(&a, &b, rows, inner, columns),
                    expected,
                    "{rows}×{inner}×{columns}, {bound}"
                );
                assert_eq!(integer_product_sequential(&a, &b, rows, inner, columns), expected);
            }
        }
    }

    #[test]
    fn the_float_product_is_the_plain_loop_up_to_rounding() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        for &(rows, inner, columns) in
            &[(1, 1, 1), (3, 5, 7), (70, 129, 31), (97, 96, 40), (0, 3, 2), (2, 0, 3)]
        {
            let a: Vec<f64> = (0..rows * inner).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let b: Vec<f64> = (0..inner * columns).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let got = float_product(&a, &b, rows, inner, columns);
            assert_eq!(got.len(), rows * columns);
            for i in 0..rows {
                for c in 0..columns {
                    let expected: f64 = (0..inner).map(|j| a[i * inner + j] * b[j * columns + c]).sum();
                    assert!((got[i * columns + c] - expected).abs() <= 1e-12 * (1.0 + expected.abs()));
                }
            }
        }
    }

    #[test]
    fn the_f64_path_is_exact_at_its_bound() {
        // inner·max|A|·max|B| = 2^53 − 2^27 < 2^53: every partial sum an exact f64, the largest
        // just below 2^53 (the edge where one more unit would round).
        let inner = 2;
        let a = vec![(1i64 << 26) - 1; 4 * inner];
        let b = vec![1i64 << 26; inner * 3];
        let product = integer_product(&a, &b, 4, inner, 3);
        assert!(product.iter().all(|&v| v == 2 * (((1i128 << 26) - 1) << 26)));
        // Just above: the i128 path, still exact (an odd sum no f64 holds).
        let a = vec![(1i64 << 27) + 1; 2];
        let b = vec![(1i64 << 27) + 1; 2];
        assert_eq!(integer_product(&a, &b, 1, 2, 1), vec![2 * ((1i128 << 27) + 1) * ((1i128 << 27) + 1)]);
    }

    #[test]
    fn the_parallel_product_is_the_sequential_one_above_the_threshold() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let (rows, inner, columns) = (97, 96, 40);
        assert!(rows * inner * columns >= PARALLEL_THRESHOLD);
        for bound in [1i64 << 20, 1 << 40] {
            let a = random(&mut rng, rows * inner, bound);
            let b = random(&mut rng, inner * columns, bound);
            assert_eq!(
                integer_product(&a, &b, rows, inner, columns),
                integer_product_sequential(&a, &b, rows, inner, columns)
            );
            assert_eq!(
                integer_product(&a, &b, rows, inner, columns),
                reference(&a, &b, rows, inner, columns)
            );
        }
    }
}
