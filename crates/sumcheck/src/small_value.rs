//! Sum-check for a product of MLEs whose hypercube values are small integers.
//!
//! ```text
//! g(x) = Π_{k<d} f_k(x),  f_k(b) ∈ ℤ with |f_k(b)| < 2^24 on the hypercube,  d ≤ 4
//! ```
//!
//! Quantized attention witnesses are such integers. Before any challenge, and in the round
//! after the first, the round polynomial is a weighted sum of *integer* products (the
//! small-value idea of Bagad–Dao–Domb–Thaler 2025, with the binding delayed):
//!
//! ```text
//! round j ∈ {0, 1}, prior challenges c (|c| = j), bound prefix b ∈ {0,1}^j:
//!   f_k(c, X, x) = Σ_b eq(b, c) · u_k(b, X, x),   u_k(b, X, x) = f_k(b, 0, x) + X·(f_k(b, 1, x) − f_k(b, 0, x))
//!   s_j(X) = Σ_{(b_1..b_d)} Π_k eq(b_k, c) · A_X[b_1..b_d],   A_X[b_1..b_d] = Σ_x Π_k u_k(b_k, X, x)   (in ℤ)
//! ```
//!
//! The accumulators `A_X` are exact `i128` sums (|u| < 2^27, so a product of four is below
//! 2^108 and a chunk of 2^12 products below 2^120), reduced to the field once per chunk.
//! After the second challenge the tables are bound at once, `f_k(c_1, c_2, x) =
//! Σ_b eq(b, c)·f_k(b, x)`, with cheap field-by-integer products ([`SmallMultiplier`]),
//! and the remaining rounds run on [`ProductSumcheck`]'s field kernel.

#![allow(clippy::indexing_slicing)] // prover kernels: every table length is checked at construction

use crate::SumcheckError;
use crate::product::{FinalEvaluations, ProductSumcheck, SumOfProducts};
use crate::protocol::SumcheckInstance;
use rayon::prelude::*;
use zkmha_field::{Fr, One, SmallMultiplier, Zero, fr_from_i128};
use zkmha_mle::{PARALLEL_THRESHOLD, SmallMultilinearExtension};

/// Rounds computed in integer arithmetic before the tables become field elements.
pub const SMALL_VALUE_ROUNDS: usize = 2;

/// The largest number of factors the integer bound allows.
pub const MAX_SMALL_VALUE_DEGREE: usize = 4;

/// Hypercube points summed in one `i128` chunk (see the module docs for the bound).
const CHUNK: usize = 1 << 12;

/// The prover's instance for `Π_k f_k` over small-integer MLEs.
#[derive(Clone, Debug)]
pub struct SmallValueProductSumcheck {
    small: Vec<Vec<i32>>,
    challenges: Vec<Fr>,
    small_rounds: usize,
    num_vars: usize,
    dense: Option<ProductSumcheck>,
    parallel_threshold: usize,
}

impl SmallValueProductSumcheck {
    /// An instance for the product of `mles` (2 to 4 of them, same number of variables).
    ///
    /// # Errors
    /// [`SumcheckError::InvalidInstance`] for another number of factors or mismatched sizes.
    pub fn new(mles: &[SmallMultilinearExtension]) -> Result<Self, SumcheckError> {
        if !(2..=MAX_SMALL_VALUE_DEGREE).contains(&mles.len()) {
            return Err(SumcheckError::InvalidInstance(format!(
                "the small-value kernel takes 2 to {MAX_SMALL_VALUE_DEGREE} factors, got {}",
                mles.len()
            )));
        }
        let num_vars = mles[0].num_vars();
        if mles.iter().any(|m| m.num_vars() != num_vars) {
            return Err(SumcheckError::InvalidInstance("MLEs with different numbers of variables".into()));
        }
        let mut instance = Self {
            small: mles.iter().map(|m| m.values().to_vec()).collect(),
            challenges: Vec::with_capacity(SMALL_VALUE_ROUNDS),
            small_rounds: SMALL_VALUE_ROUNDS.min(num_vars),
            num_vars,
            dense: None,
            parallel_threshold: PARALLEL_THRESHOLD,
        };
        if instance.small_rounds == 0 {
            instance.materialize();
        }
        Ok(instance)
    }

    /// Uses threads only for rounds with at least `threshold` pairs (`usize::MAX`: never).
    /// The proof is identical for every threshold.
    #[must_use]
    pub fn with_parallel_threshold(mut self, threshold: usize) -> Self {
        self.parallel_threshold = threshold;
        if let Some(dense) = self.dense.take() {
            self.dense = Some(dense.with_parallel_threshold(threshold));
        }
        self
    }

    /// `Σ_x Π_k f_k(x)`, computed exactly in integers.
    pub fn claimed_sum(&self) -> Fr {
        if let Some(dense) = &self.dense {
            return dense.claimed_sum();
        }
        let len = self.small[0].len();
        (0..len)
            .step_by(CHUNK)
            .map(|start| {
                let sum: i128 = (start..(start + CHUNK).min(len))
                    .map(|x| self.small.iter().map(|t| i128::from(t[x])).product::<i128>())
                    .sum();
                fr_from_i128(sum)
            })
            .sum()
    }

    fn degree_internal(&self) -> usize {
        self.small.len().max(self.dense.as_ref().map_or(0, |d| d.shape().degree()))
    }

    /// Offset in the original table of bound prefix `b` (bit `i` is the variable bound by
    /// challenge `i`, i.e. `x_{n−1−i}`).
    fn prefix_offset(len: usize, bits: usize, b: usize) -> usize {
        (0..bits).filter(|i| (b >> i) & 1 == 1).map(|i| len >> (i + 1)).sum()
    }

    /// `eq(b, c)` for every prefix `b` of the challenges so far.
    fn prefix_weights(&self) -> Vec<Fr> {
        let j = self.challenges.len();
        (0..1usize << j)
            .map(|b| {
                self.challenges.iter().enumerate().fold(Fr::one(), |acc, (i, c)| {
                    if (b >> i) & 1 == 1 { acc * c } else { acc * (Fr::one() - c) }
                })
            })
            .collect()
    }

    fn small_round(&self, evaluations: &mut [Fr]) {
        let d = self.small.len();
        let j = self.challenges.len();
        let len = self.small[0].len();
        let block = len >> (j + 1);
        let prefixes = 1usize << j;
        let tuples = 1usize << (j * d);
        let offsets: Vec<usize> = (0..prefixes).map(|b| Self::prefix_offset(len, j, b)).collect();
        // Evaluation points 0, 2, 3, …, d.
        let points: Vec<i64> = core::iter::once(0).chain(2..=d as i64).collect();

        let chunk_sums = |range: core::ops::Range<usize>| -> Vec<Fr> {
            let mut acc = vec![0i128; d * tuples];
            // u[(k·prefixes + b)·d + p] = u_k(b, point_p, x)
            let mut u = vec![0i64; d * prefixes * d];
            for x in range {
                for k in 0..d {
                    let table = &self.small[k];
                    for (b, &offset) in offsets.iter().enumerate() {
                        let low = i64::from(table[offset + x]);
                        let diff = i64::from(table[offset + block + x]) - low;
                        for (p, &t) in points.iter().enumerate() {
                            u[(k * prefixes + b) * d + p] = low + t * diff;
                        }
                    }
                }
                for tuple in 0..tuples {
                    for p in 0..d {
                        let mut product = 1i128;
                        for k in 0..d {
                            let b = (tuple >> (k * j)) & (prefixes - 1);
                            product *= i128::from(u[(k * prefixes + b) * d + p]);
                        }
                        acc[p * tuples + tuple] += product;
                    }
                }
            }
            acc.into_iter().map(fr_from_i128).collect()
        };
        let add = |a: Vec<Fr>, b: Vec<Fr>| a.into_iter().zip(b).map(|(x, y)| x + y).collect::<Vec<_>>();
        let ranges: Vec<_> = (0..block).step_by(CHUNK).map(|s| s..(s + CHUNK).min(block)).collect();
        let sums = if block >= self.parallel_threshold {
            ranges.into_par_iter().map(chunk_sums).reduce(|| vec![Fr::zero(); d * tuples], add)
        } else {
            ranges.into_iter().map(chunk_sums).fold(vec![Fr::zero(); d * tuples], add)
        };
        let weights = self.prefix_weights();
        let tuple_weights: Vec<Fr> = (0..tuples)
            .map(|tuple| (0..d).map(|k| weights[(tuple >> (k * j)) & (prefixes - 1)]).product())
            .collect();
        for (p, out) in evaluations.iter_mut().enumerate() {
            *out = tuple_weights.iter().zip(&sums[p * tuples..(p + 1) * tuples]).map(|(w, s)| *w * s).sum();
        }
    }

    /// Binds the small tables at all challenges so far and switches to the field kernel.
    fn materialize(&mut self) {
        let j = self.challenges.len();
        let len = self.small.first().map_or(1, Vec::len);
        let bound_len = len >> j;
        let multipliers: Vec<SmallMultiplier> =
            self.prefix_weights().into_iter().map(SmallMultiplier::new).collect();
        let offsets: Vec<usize> = (0..1usize << j).map(|b| Self::prefix_offset(len, j, b)).collect();
        let threshold = self.parallel_threshold;
        let tables: Vec<Vec<Fr>> = self
            .small
            .iter()
            .map(|table| {
                let bind = |x: usize| -> Fr {
                    multipliers
                        .iter()
                        .zip(&offsets)
                        .map(|(m, &offset)| m.mul_i64(i64::from(table[offset + x])))
                        .sum()
                };
                if bound_len >= threshold {
                    (0..bound_len).into_par_iter().with_min_len(1024).map(bind).collect()
                } else {
                    (0..bound_len).map(bind).collect()
                }
            })
            .collect();
        let degree = self.small.len();
        self.small = Vec::new();
        // `new` checked 2 ≤ degree ≤ 4, so the product shape exists.
        if let Ok(shape) = SumOfProducts::product(degree) {
            self.dense = Some(
                ProductSumcheck::from_tables(shape, tables, self.num_vars).with_parallel_threshold(threshold),
            );
        }
    }
}

impl SumcheckInstance for SmallValueProductSumcheck {
    fn num_vars(&self) -> usize {
        self.num_vars
    }

    fn degree(&self) -> usize {
        self.degree_internal()
    }

    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]) {
        match &mut self.dense {
            Some(dense) => dense.round_evaluations(previous_claim, evaluations),
            None => self.small_round(evaluations),
        }
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        self.num_vars = self.num_vars.saturating_sub(1);
        match &mut self.dense {
            Some(dense) => dense.bind_in_place(challenge),
            None => {
                self.challenges.push(challenge);
                if self.challenges.len() == self.small_rounds {
                    self.materialize();
                }
            }
        }
    }
}

impl FinalEvaluations for SmallValueProductSumcheck {
    fn final_evaluations(&self) -> Vec<Fr> {
        self.dense.as_ref().map_or_else(Vec::new, ProductSumcheck::final_evaluations)
    }
}
