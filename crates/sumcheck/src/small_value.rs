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
//! round j < J (J = 3 for d = 2, J = 2 for d ∈ {3, 4}), prior challenges c (|c| = j),
//! bound prefix b ∈ {0,1}^j:
//!   f_k(c, X, x) = Σ_b eq(b, c) · u_k(b, X, x),   u_k(b, X, x) = f_k(b, 0, x) + X·(f_k(b, 1, x) − f_k(b, 0, x))
//!   s_j(X) = Σ_{(b_1..b_d)} Π_k eq(b_k, c) · A_X[b_1..b_d],   A_X[b_1..b_d] = Σ_x Π_k u_k(b_k, X, x)   (in ℤ)
//! ```
//!
//! The accumulators `A_X` are exact `i128` sums (|u| < 2^27, so a product of four is below
//! 2^108 and a chunk of 2^12 products below 2^120), reduced to the field once per chunk.
//! After challenge J the tables are bound at once, `f_k(c, x) = Σ_b eq(b, c)·f_k(b, x)`, one
//! [`SmallLinearCombination`] per entry (a single modular reduction), and the remaining
//! rounds run on [`ProductSumcheck`]'s field kernel. Round j costs `d·(d−1)·2^{j·d}` integer
//! multiplications per point of a table a `2^{j+1}`-th the size, so J stops where that
//! outgrows the field work it replaces.

#![allow(clippy::indexing_slicing)] // prover kernels: every table length is checked at construction

use crate::SumcheckError;
use crate::product::{FinalEvaluations, ProductSumcheck, SumOfProducts};
use crate::protocol::SumcheckInstance;
use rayon::prelude::*;
use zkmha_field::{Fr, One, SmallLinearCombination, Zero, fr_from_i128};
use zkmha_mle::{PARALLEL_THRESHOLD, SmallMultilinearExtension};

/// Rounds computed in integer arithmetic before the tables become field elements, for a
/// product of `degree` factors.
pub const fn small_value_rounds(degree: usize) -> usize {
    if degree <= 2 { 3 } else { 2 }
}

/// The largest number of factors the integer bound allows.
pub const MAX_SMALL_VALUE_DEGREE: usize = 4;

/// Hypercube points summed in one `i128` chunk (see the module docs for the bound).
const CHUNK: usize = 1 << 12;

/// Bound prefixes in an integer round: `2^j` with `j < J ≤ 3`.
const MAX_PREFIXES: usize = 4;

/// Tuples of prefixes, one per factor: `2^{j·d}` ≤ 16 for the rounds J allows.
const MAX_TUPLES: usize = 16;

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
            challenges: Vec::with_capacity(small_value_rounds(mles.len())),
            small_rounds: small_value_rounds(mles.len()).min(num_vars),
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

    fn small_round<const D: usize>(&self, evaluations: &mut [Fr]) {
        let j = self.challenges.len();
        let len = self.small[0].len();
        let block = len >> (j + 1);
        let prefixes = 1usize << j;
        let mask = prefixes - 1;
        let tuples = 1usize << (j * D);
        debug_assert!(prefixes <= MAX_PREFIXES && tuples <= MAX_TUPLES);
        let mut offsets = [0usize; MAX_PREFIXES];
        for (b, offset) in offsets.iter_mut().enumerate().take(prefixes) {
            *offset = Self::prefix_offset(len, j, b);
        }
        let tables: [&[i32]; D] = core::array::from_fn(|k| self.small[k].as_slice());

        // acc[p][tuple] = Σ_x Π_k u_k(b_k(tuple), point_p, x), exactly, per chunk of x.
        let chunk_sums = |start: usize| -> Vec<Fr> {
            let mut acc = [[0i128; MAX_TUPLES]; D];
            // u[k][b][p] = u_k(b, point_p, x), message points 0, 2, …, D − 1, ∞
            let mut u = [[[0i64; D]; MAX_PREFIXES]; D];
            for x in start..(start + CHUNK).min(block) {
                for k in 0..D {
                    for b in 0..prefixes {
                        let low = i64::from(tables[k][offsets[b] + x]);
                        let diff = i64::from(tables[k][offsets[b] + block + x]) - low;
                        u[k][b][0] = low;
                        let mut value = low + diff;
                        for p in 1..D - 1 {
                            value += diff;
                            u[k][b][p] = value;
                        }
                        // ∞: the slope; the product of slopes is the X^d coefficient.
                        u[k][b][D - 1] = diff;
                    }
                }
                for p in 0..D {
                    for tuple in 0..tuples {
                        // |u| < 2^27, so the first two factors multiply exactly in an i64.
                        let pair = u[0][tuple & mask][p] * u[1][(tuple >> j) & mask][p];
                        let mut product = i128::from(pair);
                        for k in 2..D {
                            product *= i128::from(u[k][(tuple >> (k * j)) & mask][p]);
                        }
                        acc[p][tuple] += product;
                    }
                }
            }
            acc.iter().flat_map(|row| row[..tuples].iter().map(|&v| fr_from_i128(v))).collect()
        };
        let add = |a: Vec<Fr>, b: Vec<Fr>| a.into_iter().zip(b).map(|(x, y)| x + y).collect::<Vec<_>>();
        let zero = || vec![Fr::zero(); D * tuples];
        let sums = if block >= self.parallel_threshold {
            (0..block).into_par_iter().step_by(CHUNK).map(chunk_sums).reduce(zero, add)
        } else {
            (0..block).step_by(CHUNK).map(chunk_sums).fold(zero(), add)
        };
        let weights = self.prefix_weights();
        let tuple_weights: Vec<Fr> =
            (0..tuples).map(|tuple| (0..D).map(|k| weights[(tuple >> (k * j)) & mask]).product()).collect();
        for (p, out) in evaluations.iter_mut().enumerate() {
            *out = tuple_weights.iter().zip(&sums[p * tuples..(p + 1) * tuples]).map(|(w, s)| *w * s).sum();
        }
    }

    /// Binds the small tables at all challenges so far and switches to the field kernel.
    fn materialize(&mut self) {
        let j = self.challenges.len();
        let len = self.small.first().map_or(1, Vec::len);
        let bound_len = len >> j;
        // Σ_b eq(b, c) = 1, so Σ_b eq(b, c)·(v_b + 2^24) − 2^24 = Σ_b eq(b, c)·v_b with
        // non-negative integers on the left.
        let shift = 1i64 << SmallMultilinearExtension::SMALL_VALUE_BITS;
        let weights = self.prefix_weights();
        let Some(combination) = SmallLinearCombination::new(&weights, -Fr::from(shift as u64)) else {
            return;
        };
        let offsets: Vec<usize> = (0..1usize << j).map(|b| Self::prefix_offset(len, j, b)).collect();
        let threshold = self.parallel_threshold;
        let tables: Vec<Vec<Fr>> = self
            .small
            .iter()
            .map(|table| {
                let bind = |x: usize| -> Fr {
                    let mut values = [0u32; SmallLinearCombination::MAX_WEIGHTS];
                    for (value, &offset) in values.iter_mut().zip(&offsets) {
                        *value = (i64::from(table[offset + x]) + shift) as u32;
                    }
                    combination.combine(&values[..offsets.len()])
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
            None => match self.small.len() {
                2 => self.small_round::<2>(evaluations),
                3 => self.small_round::<3>(evaluations),
                _ => self.small_round::<4>(evaluations),
            },
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
