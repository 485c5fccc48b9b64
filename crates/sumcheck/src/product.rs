//! Sum-check for sums of products of dense MLEs, with a fast round kernel.
//!
//! ```text
//! g(x) = Σ_t c_t · Π_{k ∈ T_t} f_k(x)          (public shape: the terms T_t and coefficients c_t)
//! claim: Σ_{x ∈ {0,1}ⁿ} g(x) = S
//! out:   one EvalClaim f_k(r) = v_k per MLE, with Σ_t c_t Π_{k ∈ T_t} v_k checked by the verifier
//! ```
//!
//! Work per round, for `P` pairs `(f(0,x), f(1,x))` and a single product of `d` factors:
//! `d − 1` multiplications per message point (`0, 2, …, d − 1` and `∞`, the slope product; `s(1)` is derived),
//! the last of them without modular reduction ([`UnreducedSum`]), plus `d` to bind. The
//! tables are bound in place and keep their allocation.

#![allow(clippy::indexing_slicing)] // prover kernels: every table length is checked at construction

use crate::protocol::{SumcheckInstance, SumcheckProof, prove, verify};
use crate::{EvalClaim, SumcheckClaim, SumcheckError};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, One, UnreducedSum, Zero};
use zkmha_mle::{DenseMultilinearExtension, PARALLEL_THRESHOLD};
use zkmha_transcript::Transcript;

/// Transcript label of the final MLE evaluations.
pub const LABEL_FINAL_EVALUATIONS: &[u8] = b"sumcheck/product/final-evaluations";

/// Pairs handed to one rayon task: large enough to amortise scheduling, small enough
/// to balance two cores.
const PAIRS_PER_TASK: usize = 2048;

/// Quadruples handed to one rayon task by the fused bind-and-evaluate kernel.
const FUSED_QUADS_PER_TASK: usize = 1024;

/// One term `c · Π_{k ∈ factors} f_k`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProductTerm {
    /// The coefficient `c`.
    pub coefficient: Fr,
    /// Indices of the MLEs multiplied (an index may repeat: `f_k²`).
    pub factors: Vec<usize>,
}

/// The public shape of `g = Σ_t c_t Π_{k ∈ T_t} f_k` over `num_mles` MLEs.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SumOfProducts {
    num_mles: usize,
    terms: Vec<ProductTerm>,
}

impl SumOfProducts {
    /// A shape from its terms.
    ///
    /// # Errors
    /// [`SumcheckError::InvalidInstance`] when there is no term, a term has no factor, or
    /// a factor index is not below `num_mles`.
    pub fn new(num_mles: usize, terms: Vec<ProductTerm>) -> Result<Self, SumcheckError> {
        if terms.is_empty() {
            return Err(SumcheckError::InvalidInstance("a sum of products needs a term".into()));
        }
        for term in &terms {
            if term.factors.is_empty() {
                return Err(SumcheckError::InvalidInstance("a term needs a factor".into()));
            }
            if let Some(bad) = term.factors.iter().find(|&&k| k >= num_mles) {
                return Err(SumcheckError::InvalidInstance(format!(
                    "factor index {bad} but only {num_mles} MLEs"
                )));
            }
        }
        Ok(Self { num_mles, terms })
    }

    /// The single product `f_0 · f_1 · … · f_{num_mles−1}`.
    ///
    /// # Errors
    /// [`SumcheckError::InvalidInstance`] when `num_mles` is 0.
    pub fn product(num_mles: usize) -> Result<Self, SumcheckError> {
        Self::new(num_mles, vec![ProductTerm { coefficient: Fr::one(), factors: (0..num_mles).collect() }])
    }

    /// Number of MLEs the shape refers to.
    pub fn num_mles(&self) -> usize {
        self.num_mles
    }

    /// The terms.
    pub fn terms(&self) -> &[ProductTerm] {
        &self.terms
    }

    /// Degree of `g` in each variable: the largest number of factors in a term.
    pub fn degree(&self) -> usize {
        self.terms.iter().map(|t| t.factors.len()).max().unwrap_or(0)
    }

    /// `g` from the values of its MLEs at one point.
    ///
    /// # Errors
    /// [`SumcheckError::WrongLength`] unless there is one value per MLE.
    #[deny(clippy::indexing_slicing)]
    pub fn combine(&self, values: &[Fr]) -> Result<Fr, SumcheckError> {
        if values.len() != self.num_mles {
            return Err(SumcheckError::WrongLength {
                what: "MLE evaluations",
                expected: self.num_mles,
                got: values.len(),
            });
        }
        let mut sum = Fr::zero();
        for term in &self.terms {
            let mut product = term.coefficient;
            for &k in &term.factors {
                product *= values.get(k).copied().ok_or(SumcheckError::WrongLength {
                    what: "MLE evaluations",
                    expected: self.num_mles,
                    got: values.len(),
                })?;
            }
            sum += product;
        }
        Ok(sum)
    }

    /// A single product of distinct MLEs with coefficient 1, in order: the fast kernel's case.
    fn is_plain_product(&self) -> bool {
        self.terms.len() == 1
            && self.terms[0].coefficient.is_one()
            && self.terms[0].factors.iter().copied().eq(0..self.num_mles)
    }
}

/// The prover's instance for a [`SumOfProducts`] over dense MLEs.
#[derive(Clone, Debug)]
pub struct ProductSumcheck {
    shape: SumOfProducts,
    tables: Vec<Vec<Fr>>,
    num_vars: usize,
    parallel_threshold: usize,
    /// A challenge received but not yet applied: plain products bind it in the same
    /// pass as the next round's evaluation (one sweep over memory instead of two).
    pending: Option<Fr>,
}

impl ProductSumcheck {
    /// An instance for `shape` over `mles` (all with the same number of variables).
    ///
    /// # Errors
    /// [`SumcheckError::InvalidInstance`] when the MLE count or the variable counts disagree.
    pub fn new(shape: SumOfProducts, mles: Vec<DenseMultilinearExtension>) -> Result<Self, SumcheckError> {
        if mles.len() != shape.num_mles() {
            return Err(SumcheckError::InvalidInstance(format!(
                "the shape has {} MLEs, {} were given",
                shape.num_mles(),
                mles.len()
            )));
        }
        let num_vars = mles.first().map_or(0, DenseMultilinearExtension::num_vars);
        if mles.iter().any(|m| m.num_vars() != num_vars) {
            return Err(SumcheckError::InvalidInstance("MLEs with different numbers of variables".into()));
        }
        let tables = mles.into_iter().map(DenseMultilinearExtension::into_evaluations).collect();
        Ok(Self { shape, tables, num_vars, parallel_threshold: PARALLEL_THRESHOLD, pending: None })
    }

    /// Raw tables of length `2^num_vars` (crate-internal, lengths already checked).
    pub(crate) fn from_tables(shape: SumOfProducts, tables: Vec<Vec<Fr>>, num_vars: usize) -> Self {
        Self { shape, tables, num_vars, parallel_threshold: PARALLEL_THRESHOLD, pending: None }
    }

    /// Uses threads only for rounds with at least `threshold` pairs (`usize::MAX`: never).
    /// The proof is identical for every threshold.
    #[must_use]
    pub fn with_parallel_threshold(mut self, threshold: usize) -> Self {
        self.parallel_threshold = threshold;
        self
    }

    /// The shape of `g`.
    pub fn shape(&self) -> &SumOfProducts {
        &self.shape
    }

    /// `Σ_x g(x)` over the current tables.
    pub fn claimed_sum(&self) -> Fr {
        let len = self.tables.first().map_or(0, Vec::len);
        let sum_at = |x: usize| {
            self.shape
                .terms
                .iter()
                .map(|t| t.factors.iter().fold(t.coefficient, |acc, &k| acc * self.tables[k][x]))
                .sum::<Fr>()
        };
        if len >= self.parallel_threshold {
            (0..len).into_par_iter().map(sum_at).sum()
        } else {
            (0..len).map(sum_at).sum()
        }
    }

    /// Each MLE's value at the bound point (its table's first entry; after all rounds,
    /// the table has one entry).
    pub fn final_evaluations(&self) -> Vec<Fr> {
        self.tables.iter().map(|t| t.first().copied().unwrap_or_else(Fr::zero)).collect()
    }

    fn round_plain_product<const D: usize>(&self, evaluations: &mut [Fr]) {
        let half = self.tables[0].len() / 2;
        let tables: [&[Fr]; D] = core::array::from_fn(|k| self.tables[k].as_slice());
        let accumulate = |mut acc: [UnreducedSum; D], x: usize| {
            let low: [Fr; D] = core::array::from_fn(|k| tables[k][x]);
            let mut value: [Fr; D] = core::array::from_fn(|k| tables[k][x + half]);
            accumulate_pair::<D>(&mut acc, &low, &mut value);
            acc
        };
        let sums = if half >= self.parallel_threshold {
            (0..half)
                .into_par_iter()
                .with_min_len(PAIRS_PER_TASK)
                .fold(|| [UnreducedSum::new(); D], accumulate)
                .reduce(|| [UnreducedSum::new(); D], |a, b| core::array::from_fn(|j| a[j].merge(b[j])))
        } else {
            (0..half).fold([UnreducedSum::new(); D], accumulate)
        };
        for (out, sum) in evaluations.iter_mut().zip(sums.iter()) {
            *out = sum.finish();
        }
    }

    /// Binds the pending challenge `r` and evaluates the next round in one pass.
    ///
    /// ```text
    /// for x < len/4, each table t:   t[x]       ← t[x]       + r·(t[x + len/2]       − t[x])
    ///                                t[x + q]   ← t[x + q]   + r·(t[x + len/2 + q]   − t[x + q])   (q = len/4)
    /// then (t[x], t[x + q]) is the pair (f(0, x), f(1, x)) of the new round
    /// ```
    fn bind_and_round_plain_product<const D: usize>(&mut self, r: Fr, evaluations: &mut [Fr]) {
        let len = self.tables[0].len();
        let half = len / 2;
        let quarter = len / 4;
        let chunk = if quarter >= self.parallel_threshold { FUSED_QUADS_PER_TASK } else { quarter.max(1) };
        type Quad<'a> = (&'a mut [Fr], &'a mut [Fr], &'a [Fr], &'a [Fr]);
        let mut per_table: Vec<std::vec::IntoIter<Quad<'_>>> = self
            .tables
            .iter_mut()
            .map(|t| {
                let (low, high) = t.split_at_mut(half);
                let (q0, q1) = low.split_at_mut(quarter);
                let (q2, q3) = high.split_at(quarter);
                q0.chunks_mut(chunk)
                    .zip(q1.chunks_mut(chunk))
                    .zip(q2.chunks(chunk).zip(q3.chunks(chunk)))
                    .map(|((a, b), (c, d))| (a, b, c, d))
                    .collect::<Vec<Quad<'_>>>()
                    .into_iter()
            })
            .collect();
        let tasks: Vec<[Quad<'_>; D]> = (0..quarter.div_ceil(chunk))
            .filter_map(|_| {
                let parts: Vec<Quad<'_>> = per_table.iter_mut().filter_map(Iterator::next).collect();
                parts.try_into().ok()
            })
            .collect();
        let work = |mut task: [Quad<'_>; D]| -> [UnreducedSum; D] {
            let mut acc = [UnreducedSum::new(); D];
            let n = task[0].0.len();
            for x in 0..n {
                let mut low = [Fr::zero(); D];
                let mut value = [Fr::zero(); D];
                for k in 0..D {
                    let (q0, q1, q2, q3) = &mut task[k];
                    let b0 = q0[x] + r * (q2[x] - q0[x]);
                    let b1 = q1[x] + r * (q3[x] - q1[x]);
                    q0[x] = b0;
                    q1[x] = b1;
                    low[k] = b0;
                    value[k] = b1;
                }
                accumulate_pair::<D>(&mut acc, &low, &mut value);
            }
            acc
        };
        let merge = |a: [UnreducedSum; D], b: [UnreducedSum; D]| core::array::from_fn(|j| a[j].merge(b[j]));
        let sums = if quarter >= self.parallel_threshold {
            tasks.into_par_iter().map(work).reduce(|| [UnreducedSum::new(); D], merge)
        } else {
            tasks.into_iter().map(work).fold([UnreducedSum::new(); D], merge)
        };
        for table in &mut self.tables {
            table.truncate(half);
        }
        for (out, sum) in evaluations.iter_mut().zip(sums.iter()) {
            *out = sum.finish();
        }
    }

    fn round_general(&self, evaluations: &mut [Fr]) {
        let degree = self.shape.degree();
        let half = self.tables[0].len() / 2;
        let num_mles = self.tables.len();
        let terms = &self.shape.terms;
        // per message point j (0, 2, …, d−1, ∞) and term t: Σ_x Π_{k ∈ T_t} f_k(X, x)
        let new_acc = || vec![UnreducedSum::new(); degree * terms.len()];
        let accumulate = |(mut acc, mut values): (Vec<UnreducedSum>, Vec<Fr>), x: usize| {
            // values[k·degree + j] = f_k at the j-th message point: 0, 2, …, d−1, ∞ (the slope)
            for k in 0..num_mles {
                let low = self.tables[k][x];
                let high = self.tables[k][x + half];
                values[k * degree] = low;
                if degree >= 2 {
                    let diff = high - low;
                    let mut v = high;
                    for j in 1..degree - 1 {
                        v += diff;
                        values[k * degree + j] = v;
                    }
                    values[k * degree + degree - 1] = diff;
                }
            }
            for (t, term) in terms.iter().enumerate() {
                for j in 0..degree {
                    // A term of lower degree has no X^d coefficient.
                    if degree >= 2 && j == degree - 1 && term.factors.len() < degree {
                        continue;
                    }
                    let slot = &mut acc[t * degree + j];
                    match term.factors.split_last() {
                        Some((last, [])) => slot.add_product(&values[*last * degree + j], &Fr::one()),
                        Some((last, rest)) => {
                            let partial = rest
                                .iter()
                                .skip(1)
                                .fold(values[rest[0] * degree + j], |p, &k| p * values[k * degree + j]);
                            slot.add_product(&partial, &values[*last * degree + j]);
                        }
                        None => {}
                    }
                }
            }
            (acc, values)
        };
        let fresh = || (new_acc(), vec![Fr::zero(); num_mles * degree]);
        let sums = if half >= self.parallel_threshold {
            (0..half)
                .into_par_iter()
                .with_min_len(PAIRS_PER_TASK)
                .fold(fresh, accumulate)
                .map(|(acc, _)| acc)
                .reduce(new_acc, |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect())
        } else {
            (0..half).fold(fresh(), accumulate).0
        };
        for (j, out) in evaluations.iter_mut().enumerate() {
            *out = terms
                .iter()
                .enumerate()
                .map(|(t, term)| term.coefficient * sums[t * degree + j].finish())
                .sum();
        }
    }
}

/// Adds one pair's contribution to the round message `s(0), s(2), …, s(D−1), s(∞)` of a
/// plain product: `low = f(0, x)`, `value = f(1, x)` (overwritten while stepping).
#[inline(always)]
pub(crate) fn accumulate_pair<const D: usize>(
    acc: &mut [UnreducedSum; D],
    low: &[Fr; D],
    value: &mut [Fr; D],
) {
    let diff: [Fr; D] = core::array::from_fn(|k| value[k] - low[k]);
    let partial = low[1..D - 1].iter().fold(low[0], |p, v| p * v);
    acc[0].add_product(&partial, &low[D - 1]);
    // s(1) is derived from the claim; step from f(1) to f(2), …, f(D − 1).
    for slot in acc[1..D - 1].iter_mut() {
        for k in 0..D {
            value[k] += diff[k];
        }
        let partial = value[1..D - 1].iter().fold(value[0], |p, v| p * v);
        slot.add_product(&partial, &value[D - 1]);
    }
    // The X^D coefficient is the product of the slopes.
    let partial = diff[1..D - 1].iter().fold(diff[0], |p, v| p * v);
    acc[D - 1].add_product(&partial, &diff[D - 1]);
}

impl SumcheckInstance for ProductSumcheck {
    fn num_vars(&self) -> usize {
        self.num_vars
    }

    fn degree(&self) -> usize {
        self.shape.degree()
    }

    fn round_evaluations(&mut self, _previous_claim: Fr, evaluations: &mut [Fr]) {
        if let Some(r) = self.pending.take() {
            match self.tables.len() {
                2 => return self.bind_and_round_plain_product::<2>(r, evaluations),
                3 => return self.bind_and_round_plain_product::<3>(r, evaluations),
                4 => return self.bind_and_round_plain_product::<4>(r, evaluations),
                _ => self.bind_now(r),
            }
        }
        if self.shape.is_plain_product() {
            match self.tables.len() {
                2 => return self.round_plain_product::<2>(evaluations),
                3 => return self.round_plain_product::<3>(evaluations),
                4 => return self.round_plain_product::<4>(evaluations),
                _ => {}
            }
        }
        self.round_general(evaluations);
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        if let Some(r) = self.pending.take() {
            self.bind_now(r);
        }
        let fusable = self.shape.is_plain_product() && (2..=4).contains(&self.tables.len());
        // Defer while a next round exists to fuse with (tables of at least 4 entries).
        if fusable && self.tables.first().is_some_and(|t| t.len() >= 4) {
            self.pending = Some(challenge);
        } else {
            self.bind_now(challenge);
        }
        self.num_vars = self.num_vars.saturating_sub(1);
    }
}

impl ProductSumcheck {
    fn bind_now(&mut self, challenge: Fr) {
        let threshold = self.parallel_threshold;
        for table in &mut self.tables {
            let half = table.len() / 2;
            let (lo, hi) = table.split_at_mut(half);
            let step = |(l, h): (&mut Fr, &Fr)| *l += challenge * (*h - *l);
            if half >= threshold {
                lo.par_iter_mut().zip(hi.par_iter()).with_min_len(PAIRS_PER_TASK).for_each(step);
            } else {
                lo.iter_mut().zip(hi.iter()).for_each(step);
            }
            table.truncate(half);
        }
    }
}

/// A sum-check proof for a [`SumOfProducts`], with the MLE values at the final point.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProductSumcheckProof {
    /// The round messages.
    pub sumcheck: SumcheckProof,
    /// `f_k(r)` for every MLE, in shape order.
    pub final_evaluations: Vec<Fr>,
}

/// Proves `Σ_x g(x) = claimed_sum` for `g` given by `shape` over `mles`.
///
/// Returns the proof and one [`EvalClaim`] per MLE, which the caller must discharge.
///
/// # Errors
/// As [`ProductSumcheck::new`].
pub fn prove_product(
    shape: &SumOfProducts,
    mles: Vec<DenseMultilinearExtension>,
    claimed_sum: Fr,
    transcript: &mut Transcript,
) -> Result<(ProductSumcheckProof, Vec<EvalClaim>), SumcheckError> {
    let mut instance = ProductSumcheck::new(shape.clone(), mles)?;
    Ok(prove_instance_with_evaluations(&mut instance, claimed_sum, transcript))
}

/// [`prove_product`] for an instance already built (or a small-value one).
pub fn prove_instance_with_evaluations<I: FinalEvaluations>(
    instance: &mut I,
    claimed_sum: Fr,
    transcript: &mut Transcript,
) -> (ProductSumcheckProof, Vec<EvalClaim>) {
    let (sumcheck, claim) = prove(instance, claimed_sum, transcript);
    let final_evaluations = instance.final_evaluations();
    transcript.append_fields(LABEL_FINAL_EVALUATIONS, &final_evaluations);
    let claims = final_evaluations
        .iter()
        .map(|value| EvalClaim { point: claim.point.clone(), value: *value })
        .collect();
    (ProductSumcheckProof { sumcheck, final_evaluations }, claims)
}

/// An instance whose MLE values at the final point can be read after the last round.
pub trait FinalEvaluations: SumcheckInstance {
    /// Each MLE's value at the bound point.
    fn final_evaluations(&self) -> Vec<Fr>;
}

impl FinalEvaluations for ProductSumcheck {
    fn final_evaluations(&self) -> Vec<Fr> {
        ProductSumcheck::final_evaluations(self)
    }
}

/// Verifies a [`ProductSumcheckProof`] of `claim` for `shape`.
///
/// Checks the rounds and that `g` evaluated from the sent MLE values equals the final
/// round value. Returns one [`EvalClaim`] per MLE; the caller must still check each
/// MLE's value at the point (the proof only asserts them).
///
/// # Errors
/// [`SumcheckError::InvalidClaim`] when `claim.degree` differs from the shape's degree, the
/// errors of [`verify`], [`SumcheckError::WrongLength`] for a wrong number of final values,
/// and [`SumcheckError::FinalEvaluationMismatch`] when the values do not give the final claim.
#[deny(clippy::indexing_slicing)]
pub fn verify_product(
    shape: &SumOfProducts,
    claim: &SumcheckClaim,
    proof: &ProductSumcheckProof,
    transcript: &mut Transcript,
) -> Result<Vec<EvalClaim>, SumcheckError> {
    if claim.degree != shape.degree() {
        return Err(SumcheckError::InvalidClaim("the claim's degree is not the shape's degree"));
    }
    let final_claim = verify(claim, &proof.sumcheck, transcript)?;
    final_claim.check(shape.combine(&proof.final_evaluations)?)?;
    transcript.append_fields(LABEL_FINAL_EVALUATIONS, &proof.final_evaluations);
    Ok(proof
        .final_evaluations
        .iter()
        .map(|value| EvalClaim { point: final_claim.point.clone(), value: *value })
        .collect())
}
