//! The dense MLE: a table of `2^num_vars` evaluations over the hypercube.

use crate::layout::{log2_ceil, pad_tensor};
use crate::{Fr, MAX_NUM_VARS, MleError, PARALLEL_THRESHOLD};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{UnreducedSum, Zero};

/// A multilinear polynomial given by its evaluations on `{0,1}^num_vars`.
///
/// `evaluations[b]` is the value at the point whose coordinate `x_i` is bit `i` of `b`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct DenseMultilinearExtension {
    num_vars: usize,
    evaluations: Vec<Fr>,
}

impl DenseMultilinearExtension {
    /// Wraps a table of exactly `2^num_vars` evaluations.
    ///
    /// # Errors
    /// [`MleError::WrongTableLength`] or [`MleError::TooManyVariables`].
    pub fn new(num_vars: usize, evaluations: Vec<Fr>) -> Result<Self, MleError> {
        if num_vars > MAX_NUM_VARS {
            return Err(MleError::TooManyVariables { num_vars, max: MAX_NUM_VARS });
        }
        let expected = 1usize << num_vars;
        if evaluations.len() != expected {
            return Err(MleError::WrongTableLength { num_vars, expected, got: evaluations.len() });
        }
        Ok(Self { num_vars, evaluations })
    }

    /// The MLE of a vector zero-padded to the next power of two.
    ///
    /// # Errors
    /// [`MleError::TooManyVariables`] for vectors longer than `2^MAX_NUM_VARS`.
    pub fn from_vector_padded(mut values: Vec<Fr>) -> Result<Self, MleError> {
        let num_vars = log2_ceil(values.len());
        values.resize(1usize << num_vars, Fr::zero());
        Self::new(num_vars, values)
    }

    /// The MLE of a row-major tensor, every axis zero-padded to a power of two
    /// (the last axis owns the lowest variables).
    ///
    /// # Errors
    /// [`MleError::ShapeMismatch`] when `data` does not hold `Π shape` values.
    pub fn from_tensor(shape: &[usize], data: &[Fr]) -> Result<Self, MleError> {
        let padded = pad_tensor(shape, data)?;
        let num_vars = log2_ceil(padded.len());
        Self::new(num_vars, padded)
    }

    /// The MLE of a row-major `rows × columns` matrix: `M̃(row bits, column bits)`, column
    /// bits low (evaluate it at [`crate::matrix_point`]).
    ///
    /// # Errors
    /// [`MleError::ShapeMismatch`] when `data.len() != rows · columns`.
    pub fn from_matrix(rows: usize, columns: usize, data: &[Fr]) -> Result<Self, MleError> {
        Self::from_tensor(&[rows, columns], data)
    }

    /// The MLE of a table of signed integers (negative values become `p − |v|`).
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn from_i64(num_vars: usize, values: &[i64]) -> Result<Self, MleError> {
        Self::new(num_vars, values.iter().map(|&v| zkmha_field::fr_from_i64(v)).collect())
    }

    /// Number of variables `n`.
    pub fn num_vars(&self) -> usize {
        self.num_vars
    }

    /// The `2^n` evaluations.
    pub fn evaluations(&self) -> &[Fr] {
        &self.evaluations
    }

    /// Consumes the MLE and returns its table.
    pub fn into_evaluations(self) -> Vec<Fr> {
        self.evaluations
    }

    /// Mutable access to the table for in-place kernels (its length must not change).
    pub fn evaluations_mut(&mut self) -> &mut [Fr] {
        &mut self.evaluations
    }

    /// `Σ_b f[b]`, the sum over the hypercube.
    pub fn sum(&self) -> Fr {
        self.evaluations.iter().sum()
    }

    /// `f̃(point)` with `point[i] = x_i`, in `2^n` multiplications.
    ///
    /// # Errors
    /// [`MleError::WrongPointLength`] when `point.len() != num_vars`.
    pub fn evaluate(&self, point: &[Fr]) -> Result<Fr, MleError> {
        if point.len() != self.num_vars {
            return Err(MleError::WrongPointLength { expected: self.num_vars, got: point.len() });
        }
        let Some((last, rest)) = point.split_last() else {
            return Ok(self.evaluations[0]);
        };
        // Bind x_{n−1} into a half-size copy, then the rest in place: the MLE is unchanged.
        let half = self.evaluations.len() / 2;
        let (lo, hi) = self.evaluations.split_at(half);
        let mut folded: Vec<Fr> = if half >= PARALLEL_THRESHOLD {
            lo.par_iter().zip(hi).map(|(l, h)| *l + *last * (*h - l)).collect()
        } else {
            lo.iter().zip(hi).map(|(l, h)| *l + *last * (*h - l)).collect()
        };
        for r in rest.iter().rev() {
            bind_highest(&mut folded, *r, PARALLEL_THRESHOLD);
        }
        Ok(folded[0])
    }

    /// `Σ_b f[b] · weights[b]`, e.g. `f̃(r)` given `weights = eq_table(r)`, with one
    /// modular reduction for the whole sum.
    ///
    /// # Errors
    /// [`MleError::WrongTableLength`] when `weights` has another length.
    pub fn inner_product(&self, weights: &[Fr]) -> Result<Fr, MleError> {
        if weights.len() != self.evaluations.len() {
            return Err(MleError::WrongTableLength {
                num_vars: self.num_vars,
                expected: self.evaluations.len(),
                got: weights.len(),
            });
        }
        let fold = |mut acc: UnreducedSum, (a, b): (&Fr, &Fr)| {
            acc.add_product(a, b);
            acc
        };
        let acc = if weights.len() >= PARALLEL_THRESHOLD {
            self.evaluations
                .par_iter()
                .zip(weights)
                .with_min_len(1024)
                .fold(UnreducedSum::new, fold)
                .reduce(UnreducedSum::new, UnreducedSum::merge)
        } else {
            self.evaluations.iter().zip(weights).fold(UnreducedSum::new(), fold)
        };
        Ok(acc.finish())
    }

    /// Fixes the highest variable `x_{n−1} = r` in place: `f'[b] = f[b] + r·(f[b + 2^{n−1}] − f[b])`.
    ///
    /// This is the binding order of the sum-check prover. The table keeps its allocation.
    ///
    /// # Errors
    /// [`MleError::NoVariableToBind`] when `n = 0`.
    pub fn bind_highest_in_place(&mut self, r: Fr) -> Result<(), MleError> {
        self.bind_highest_in_place_with_threshold(r, PARALLEL_THRESHOLD)
    }

    /// [`Self::bind_highest_in_place`] on one thread below `threshold` pairs (`usize::MAX`:
    /// always sequential); results are identical for every threshold.
    ///
    /// # Errors
    /// [`MleError::NoVariableToBind`] when `n = 0`.
    pub fn bind_highest_in_place_with_threshold(&mut self, r: Fr, threshold: usize) -> Result<(), MleError> {
        if self.num_vars == 0 {
            return Err(MleError::NoVariableToBind);
        }
        bind_highest(&mut self.evaluations, r, threshold);
        self.num_vars -= 1;
        Ok(())
    }

    /// Fixes the lowest variable `x_0 = r` in place: `f'[b] = f[2b] + r·(f[2b+1] − f[2b])`.
    ///
    /// # Errors
    /// [`MleError::NoVariableToBind`] when `n = 0`.
    pub fn bind_lowest_in_place(&mut self, r: Fr) -> Result<(), MleError> {
        if self.num_vars == 0 {
            return Err(MleError::NoVariableToBind);
        }
        let half = self.evaluations.len() / 2;
        for b in 0..half {
            let lo = self.evaluations[2 * b];
            let hi = self.evaluations[2 * b + 1];
            self.evaluations[b] = lo + r * (hi - lo);
        }
        self.evaluations.truncate(half);
        self.num_vars -= 1;
        Ok(())
    }
}

/// Binds the highest variable of a raw table in place and truncates it to half length
/// (`t'[x] = t[x] + r·(t[x + h] − t[x])`), in parallel from `threshold` pairs on; the result
/// does not depend on the threshold. For sum-check kernels that keep their tables as vectors.
pub fn bind_highest(table: &mut Vec<Fr>, r: Fr, threshold: usize) {
    let half = table.len() / 2;
    let (lo, hi) = table.split_at_mut(half);
    let step = |(l, h): (&mut Fr, &Fr)| *l += r * (*h - *l);
    if half >= threshold {
        lo.par_iter_mut().zip(hi.par_iter()).with_min_len(1024).for_each(step);
    } else {
        lo.iter_mut().zip(hi.iter()).for_each(step);
    }
    table.truncate(half);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{eq_table, matrix_point, tensor_point};
    use ark_std::UniformRand;
    use proptest::prelude::*;
    use zkmha_field::One;

    fn random_vec(n: usize, seed: u64) -> Vec<Fr> {
        use ark_std::rand::{SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| Fr::rand(&mut rng)).collect()
    }

    /// The definition, term by term: Σ_b f[b] Π_i (b_i x_i + (1 − b_i)(1 − x_i)).
    fn naive_evaluate(table: &[Fr], point: &[Fr]) -> Fr {
        table
            .iter()
            .enumerate()
            .map(|(b, v)| {
                point
                    .iter()
                    .enumerate()
                    .fold(*v, |acc, (i, x)| if (b >> i) & 1 == 1 { acc * x } else { acc * (Fr::one() - x) })
            })
            .sum()
    }

    fn boolean_point(bits: usize, n: usize) -> Vec<Fr> {
        (0..n).map(|i| Fr::from(((bits >> i) & 1) as u64)).collect()
    }

    #[test]
    fn variable_order_is_little_endian() {
        // f[b] = b: on the hypercube, x_i must be bit i of the index.
        let f = DenseMultilinearExtension::new(3, (0..8u64).map(Fr::from).collect());
        let f = f.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(f.evaluate(&boolean_point(0b001, 3)), Ok(Fr::from(1u64)));
        assert_eq!(f.evaluate(&boolean_point(0b100, 3)), Ok(Fr::from(4u64)));
        // The MLE of b ↦ b is x_0 + 2x_1 + 4x_2 everywhere.
        let p = random_vec(3, 1);
        let linear = p[0] + p[1] * Fr::from(2u64) + p[2] * Fr::from(4u64);
        assert_eq!(f.evaluate(&p), Ok(linear));
    }

    #[test]
    fn matrix_order_column_bits_low() {
        // M is 3 × 5; padded 4 × 8; M[i][j] = 10 i + j.
        let data: Vec<Fr> = (0..3).flat_map(|i| (0..5).map(move |j| Fr::from(10 * i + j))).collect();
        let m = DenseMultilinearExtension::from_matrix(3, 5, &data);
        let m = m.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(m.num_vars(), 5);
        for i in 0..4usize {
            for j in 0..8usize {
                let point = matrix_point(&boolean_point(i, 2), &boolean_point(j, 3));
                let expected = if i < 3 && j < 5 { Fr::from((10 * i + j) as u64) } else { Fr::zero() };
                assert_eq!(m.evaluate(&point), Ok(expected), "M[{i}][{j}]");
            }
        }
        // A 3-axis tensor: the last axis is lowest.
        let t =
            DenseMultilinearExtension::from_tensor(&[2, 3, 2], &(0..12u64).map(Fr::from).collect::<Vec<_>>());
        let t = t.unwrap_or_else(|e| unreachable!("{e}"));
        let point = tensor_point(&[&boolean_point(1, 1), &boolean_point(2, 2), &boolean_point(1, 1)]);
        assert_eq!(t.evaluate(&point), Ok(Fr::from(6 + 2 * 2 + 1u64)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        #[test]
        fn evaluate_matches_definition(n in 0usize..8, seed in any::<u64>()) {
            let table = random_vec(1 << n, seed);
            let point = random_vec(n, seed ^ 0xabc);
            let f = DenseMultilinearExtension::new(n, table.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let expected = naive_evaluate(&table, &point);
            prop_assert_eq!(f.evaluate(&point), Ok(expected));
            prop_assert_eq!(f.inner_product(&eq_table(&point)), Ok(expected));
        }

        #[test]
        fn binding_highest_then_lowest_matches_evaluation(n in 1usize..8, seed in any::<u64>()) {
            let table = random_vec(1 << n, seed);
            let point = random_vec(n, seed.wrapping_add(7));
            let f = DenseMultilinearExtension::new(n, table).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let expected = f.evaluate(&point).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut g = f.clone();
            g.bind_highest_in_place(point[n - 1]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(g.num_vars(), n - 1);
            prop_assert_eq!(g.evaluate(&point[..n - 1]), Ok(expected));
            let mut h = f;
            h.bind_lowest_in_place(point[0]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(h.evaluate(&point[1..]), Ok(expected));
        }
    }

    #[test]
    fn parallel_binding_equals_sequential_twin() {
        let table = random_vec(1 << 14, 3);
        let r = random_vec(1, 4)[0];
        let mut a = DenseMultilinearExtension::new(14, table).unwrap_or_else(|e| unreachable!("{e}"));
        let mut b = a.clone();
        assert!(a.bind_highest_in_place_with_threshold(r, 1).is_ok());
        assert!(b.bind_highest_in_place_with_threshold(r, usize::MAX).is_ok());
        assert_eq!(a, b);
    }

    #[test]
    fn errors_are_typed() {
        assert!(matches!(
            DenseMultilinearExtension::new(2, vec![Fr::zero(); 3]),
            Err(MleError::WrongTableLength { expected: 4, got: 3, .. })
        ));
        let mut c =
            DenseMultilinearExtension::new(0, vec![Fr::one()]).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(c.bind_highest_in_place(Fr::one()), Err(MleError::NoVariableToBind));
        assert_eq!(c.evaluate(&[Fr::one()]), Err(MleError::WrongPointLength { expected: 0, got: 1 }));
        assert!(matches!(
            DenseMultilinearExtension::from_matrix(2, 2, &[Fr::one(); 3]),
            Err(MleError::ShapeMismatch { .. })
        ));
        assert!(matches!(DenseMultilinearExtension::new(40, vec![]), Err(MleError::TooManyVariables { .. })));
    }
}
