//! A plain product sum-check whose full-size tables never exist: its factors are read through
//! a closure until the first challenge is bound.
//!
//! ```text
//! g(x) = Π_{k<D} f_k(x),   f_k(t) written by values(t, out) for t < 2^n   (D = 2, 3 or 4)
//! round 1   s(X) = Σ_{x ∈ {0,1}^{n−1}} Π_k f_k(X, x)          pairs (x, x + 2^{n−1}) from the closure
//! bind r₁   f_k(r₁, x) = f_k(0, x) + r₁·(f_k(1, x) − f_k(0, x))   written to tables of 2^{n−1}
//! then      ProductSumcheck's kernel on those tables (same messages as a ProductSumcheck on
//!           the full tables: tested)
//! ```
//!
//! Memory: `D` tables of `2^{n−1}` field elements at most, instead of `D` of `2^n` — for
//! factors that are cheap to recompute (small integers, eq from two √-size tables), half the
//! peak of materializing them. The closure is called twice per index (round 1, then the bind).

#![allow(clippy::indexing_slicing)] // prover kernel: every table length is fixed at construction

use crate::SumcheckError;
use crate::product::{ProductSumcheck, SumOfProducts, accumulate_pair};
use crate::protocol::SumcheckInstance;
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum, Zero};
use zkmha_mle::PARALLEL_THRESHOLD;

/// Indices handed to one rayon task.
const INDICES_PER_TASK: usize = 2048;

/// `Σ_x Π_k f_k(x)` with the factors read from `values` until the first bind.
pub struct StreamedProductSumcheck<V>
where
    V: Fn(usize, &mut [Fr]) + Sync,
{
    num_vars: usize,
    factors: usize,
    values: V,
    inner: Option<ProductSumcheck>,
    parallel_threshold: usize,
}

impl<V> StreamedProductSumcheck<V>
where
    V: Fn(usize, &mut [Fr]) + Sync,
{
    /// A product of `factors` MLEs over `num_vars` variables; `values(t, out)` writes
    /// `f_0(t), …, f_{D−1}(t)` into `out` (`D` entries) for `t < 2^num_vars`.
    ///
    /// # Errors
    /// [`SumcheckError::InvalidInstance`] for `factors` outside `2..=4`.
    pub fn new(num_vars: usize, factors: usize, values: V) -> Result<Self, SumcheckError> {
        let shape = SumOfProducts::product(factors)?;
        if !(2..=4).contains(&factors) {
            return Err(SumcheckError::InvalidInstance("a streamed product has 2 to 4 factors".into()));
        }
        let mut instance =
            Self { num_vars, factors, values, inner: None, parallel_threshold: PARALLEL_THRESHOLD };
        if num_vars == 0 {
            // No round: the single entry is the table.
            let mut single = vec![Fr::zero(); factors];
            (instance.values)(0, &mut single);
            let tables = single.into_iter().map(|v| vec![v]).collect();
            instance.inner = Some(ProductSumcheck::from_tables(shape, tables, 0));
        }
        Ok(instance)
    }

    /// Uses threads only for rounds with at least `threshold` pairs (`usize::MAX`: never).
    /// The proof is identical for every threshold.
    #[must_use]
    pub fn with_parallel_threshold(mut self, threshold: usize) -> Self {
        self.parallel_threshold = threshold;
        self
    }

    /// Each factor's value at the bound point, once every round has run.
    pub fn final_evaluations(&self) -> Vec<Fr> {
        self.inner.as_ref().map(ProductSumcheck::final_evaluations).unwrap_or_default()
    }

    fn first_round<const D: usize>(&self, evaluations: &mut [Fr]) {
        let half = 1usize << (self.num_vars - 1);
        let accumulate = |mut acc: [UnreducedSum; D], x: usize| {
            let mut low = [Fr::zero(); D];
            let mut high = [Fr::zero(); D];
            (self.values)(x, &mut low);
            (self.values)(x + half, &mut high);
            accumulate_pair::<D>(&mut acc, &low, &mut high);
            acc
        };
        let merge = |a: [UnreducedSum; D], b: [UnreducedSum; D]| core::array::from_fn(|j| a[j].merge(b[j]));
        let sums = if half >= self.parallel_threshold {
            (0..half)
                .into_par_iter()
                .with_min_len(INDICES_PER_TASK)
                .fold(|| [UnreducedSum::new(); D], accumulate)
                .reduce(|| [UnreducedSum::new(); D], merge)
        } else {
            (0..half).fold([UnreducedSum::new(); D], accumulate)
        };
        for (out, sum) in evaluations.iter_mut().zip(sums.iter()) {
            *out = sum.finish();
        }
    }

    fn bound_tables<const D: usize>(&self, r: Fr) -> Vec<Vec<Fr>> {
        let half = 1usize << (self.num_vars - 1);
        let mut tables: Vec<Vec<Fr>> = (0..D).map(|_| vec![Fr::zero(); half]).collect();
        let chunk = if half >= self.parallel_threshold { INDICES_PER_TASK } else { half };
        let mut per_table: Vec<std::slice::ChunksMut<'_, Fr>> =
            tables.iter_mut().map(|t| t.chunks_mut(chunk)).collect();
        let tasks: Vec<(usize, Vec<&mut [Fr]>)> = (0..half.div_ceil(chunk))
            .map(|c| (c * chunk, per_table.iter_mut().filter_map(Iterator::next).collect()))
            .collect();
        let work = |(start, mut slices): (usize, Vec<&mut [Fr]>)| {
            let mut low = [Fr::zero(); D];
            let mut high = [Fr::zero(); D];
            let len = slices.first().map_or(0, |s| s.len());
            for i in 0..len {
                (self.values)(start + i, &mut low);
                (self.values)(start + i + half, &mut high);
                for k in 0..D {
                    slices[k][i] = low[k] + r * (high[k] - low[k]);
                }
            }
        };
        if half >= self.parallel_threshold {
            tasks.into_par_iter().for_each(work);
        } else {
            tasks.into_iter().for_each(work);
        }
        tables
    }
}

impl<V> crate::FinalEvaluations for StreamedProductSumcheck<V>
where
    V: Fn(usize, &mut [Fr]) + Sync,
{
    fn final_evaluations(&self) -> Vec<Fr> {
        StreamedProductSumcheck::final_evaluations(self)
    }
}

impl<V> SumcheckInstance for StreamedProductSumcheck<V>
where
    V: Fn(usize, &mut [Fr]) + Sync,
{
    fn num_vars(&self) -> usize {
        self.inner.as_ref().map_or(self.num_vars, SumcheckInstance::num_vars)
    }

    fn degree(&self) -> usize {
        self.factors
    }

    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]) {
        if let Some(inner) = &mut self.inner {
            return inner.round_evaluations(previous_claim, evaluations);
        }
        match self.factors {
            2 => self.first_round::<2>(evaluations),
            3 => self.first_round::<3>(evaluations),
            _ => self.first_round::<4>(evaluations),
        }
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        if let Some(inner) = &mut self.inner {
            return inner.bind_in_place(challenge);
        }
        let tables = match self.factors {
            2 => self.bound_tables::<2>(challenge),
            3 => self.bound_tables::<3>(challenge),
            _ => self.bound_tables::<4>(challenge),
        };
        // The shape of a plain product of `factors` tables always exists (2..=4 checked).
        if let Ok(shape) = SumOfProducts::product(self.factors) {
            self.inner = Some(
                ProductSumcheck::from_tables(shape, tables, self.num_vars - 1)
                    .with_parallel_threshold(self.parallel_threshold),
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::protocol::prove;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_mle::DenseMultilinearExtension;
    use zkmha_transcript::Transcript;

    #[test]
    fn same_proof_as_the_materialized_product() {
        let mut rng = StdRng::seed_from_u64(9);
        for (n, d) in [(1usize, 2usize), (3, 3), (6, 4), (13, 4), (14, 3)] {
            let tables: Vec<Vec<Fr>> =
                (0..d).map(|_| (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect()).collect();
            let sum: Fr = (0..1usize << n).map(|x| tables.iter().map(|t| t[x]).product::<Fr>()).sum();
            let mles = tables.iter().map(|t| DenseMultilinearExtension::new(n, t.clone()).unwrap()).collect();
            let mut plain = ProductSumcheck::new(SumOfProducts::product(d).unwrap(), mles).unwrap();
            let (expected, _) = prove(&mut plain, sum, &mut Transcript::new(b"s"));
            let values = |t: usize, out: &mut [Fr]| {
                for (o, table) in out.iter_mut().zip(&tables) {
                    *o = table[t];
                }
            };
            for threshold in [PARALLEL_THRESHOLD, usize::MAX] {
                let mut streamed =
                    StreamedProductSumcheck::new(n, d, values).unwrap().with_parallel_threshold(threshold);
                let (proof, _) = prove(&mut streamed, sum, &mut Transcript::new(b"s"));
                assert_eq!(proof, expected, "n = {n}, d = {d}");
                assert_eq!(streamed.final_evaluations(), plain.final_evaluations());
            }
        }
        let zero_vars =
            StreamedProductSumcheck::new(0, 2, |_, out: &mut [Fr]| out.fill(Fr::from(3u64))).unwrap();
        assert_eq!(zero_vars.final_evaluations(), vec![Fr::from(3u64); 2]);
        assert!(StreamedProductSumcheck::new(3, 5, |_, _: &mut [Fr]| {}).is_err());
        assert!(StreamedProductSumcheck::new(3, 1, |_, _: &mut [Fr]| {}).is_err());
    }
}
