//! The equality polynomial: the table `eq(·, r)` over the hypercube and single evaluations.

use crate::{Fr, MleError, PARALLEL_THRESHOLD};
use rayon::prelude::*;
use zkmha_field::One;

/// `eq(a, b) = Π_i (a_i b_i + (1 − a_i)(1 − b_i))` in O(n).
///
/// # Errors
/// [`MleError::WrongPointLength`] when the points differ in length.
pub fn eq_evaluation(a: &[Fr], b: &[Fr]) -> Result<Fr, MleError> {
    if a.len() != b.len() {
        return Err(MleError::WrongPointLength { expected: a.len(), got: b.len() });
    }
    Ok(a.iter().zip(b).fold(Fr::one(), |acc, (x, y)| {
        let xy = *x * y;
        acc * (Fr::one() - x - y + xy + xy)
    }))
}

/// The table `T[b] = eq(b, r)` for every `b ∈ {0,1}ⁿ`, index little-endian (bit `i` is `b_i`).
///
/// One multiplication per entry: entries are built by doubling, `T'[b] = T[b]·(1 − r_k)` and
/// `T'[b + 2^k] = T[b]·r_k`, computed as `hi = lo·r_k; lo −= hi`. Parallel above
/// [`PARALLEL_THRESHOLD`]; [`eq_table_sequential`] is the single-threaded twin.
pub fn eq_table(r: &[Fr]) -> Vec<Fr> {
    eq_table_with_threshold(r, PARALLEL_THRESHOLD)
}

/// [`eq_table`] on one thread; gives identical results.
pub fn eq_table_sequential(r: &[Fr]) -> Vec<Fr> {
    eq_table_with_threshold(r, usize::MAX)
}

fn eq_table_with_threshold(r: &[Fr], threshold: usize) -> Vec<Fr> {
    let mut table = vec![Fr::from(0u64); 1usize << r.len()];
    table[0] = Fr::one();
    for (k, rk) in r.iter().enumerate() {
        let half = 1usize << k;
        let (lo, rest) = table.split_at_mut(half);
        let hi = &mut rest[..half];
        let step = |(l, h): (&mut Fr, &mut Fr)| {
            *h = *l * rk;
            *l -= *h;
        };
        if half >= threshold {
            lo.par_iter_mut().zip(hi.par_iter_mut()).with_min_len(1024).for_each(step);
        } else {
            lo.iter_mut().zip(hi.iter_mut()).for_each(step);
        }
    }
    table
}

/// `fold[x] = Σ_i eq(i, row_point) · matrix[i·columns + x]`: a row-major matrix of
/// `2^row_point.len()` rows with its row variables (the high ones) bound to `row_point`.
///
/// One unreduced inner product per column, columns in parallel.
pub fn fold_rows(matrix: &[Fr], columns: usize, row_point: &[Fr]) -> Vec<Fr> {
    use zkmha_field::UnreducedSum;
    let weights = eq_table(row_point);
    (0..columns)
        .into_par_iter()
        .with_min_len(64)
        .map(|x| {
            let mut acc = UnreducedSum::new();
            for (i, w) in weights.iter().enumerate() {
                if let Some(entry) = matrix.get(i * columns + x) {
                    acc.add_product(w, entry);
                }
            }
            acc.finish()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use zkmha_field::Zero;

    fn naive_eq(bits: usize, r: &[Fr]) -> Fr {
        r.iter().enumerate().fold(Fr::one(), |acc, (i, ri)| {
            if (bits >> i) & 1 == 1 { acc * ri } else { acc * (Fr::one() - ri) }
        })
    }

    #[test]
    fn table_matches_naive_product_and_little_endian_order() {
        let mut rng = ark_std::test_rng();
        for n in 0..=8 {
            let r: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
            let table = eq_table(&r);
            assert_eq!(table.len(), 1 << n);
            for (b, value) in table.iter().enumerate() {
                assert_eq!(*value, naive_eq(b, &r));
            }
            assert_eq!(table, eq_table_sequential(&r));
        }
    }

    #[test]
    fn fold_rows_binds_the_high_variables() {
        let mut rng = ark_std::test_rng();
        let matrix: Vec<Fr> = (0..32).map(|_| Fr::rand(&mut rng)).collect(); // 4 × 8
        let rows: Vec<Fr> = (0..2).map(|_| Fr::rand(&mut rng)).collect();
        let cols: Vec<Fr> = (0..3).map(|_| Fr::rand(&mut rng)).collect();
        let folded = fold_rows(&matrix, 8, &rows);
        let direct: Fr =
            eq_table(&[cols.clone(), rows].concat()).iter().zip(&matrix).map(|(e, m)| *e * m).sum();
        let via_fold: Fr = eq_table(&cols).iter().zip(&folded).map(|(e, m)| *e * m).sum();
        assert_eq!(direct, via_fold);
    }

    #[test]
    fn parallel_table_equals_sequential_twin() {
        let mut rng = ark_std::test_rng();
        let r: Vec<Fr> = (0..15).map(|_| Fr::rand(&mut rng)).collect();
        assert_eq!(eq_table_with_threshold(&r, 1), eq_table_sequential(&r));
    }

    #[test]
    fn evaluation_matches_table_on_boolean_points() {
        let mut rng = ark_std::test_rng();
        let r: Vec<Fr> = (0..5).map(|_| Fr::rand(&mut rng)).collect();
        let table = eq_table(&r);
        for b in 0..32usize {
            let boolean: Vec<Fr> = (0..5).map(|i| Fr::from(((b >> i) & 1) as u64)).collect();
            assert_eq!(eq_evaluation(&boolean, &r), Ok(table[b]));
        }
        let s: Vec<Fr> = (0..5).map(|_| Fr::rand(&mut rng)).collect();
        let direct: Fr = eq_table(&s).iter().zip(&table).map(|(x, y)| *x * y).sum();
        assert_eq!(eq_evaluation(&s, &r), Ok(direct));
        assert!(eq_evaluation(&s, &r[..4]).is_err());
        assert!(!direct.is_zero());
    }
}
