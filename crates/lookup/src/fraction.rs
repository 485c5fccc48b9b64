//! A GKR proof of a sum of fractions (Papini–Haböck, "Improving logarithmic derivative
//! lookups using GKR", 2023): the logUp sums without committing to any inverse.
//!
//! ```text
//! leaves     p_n(x), q_n(x), x ∈ {0,1}ⁿ   (p_n ≡ 1 for a witness side: "unit numerators")
//! layer k−1  p_{k−1}(x) = p_k(x,0)·q_k(x,1) + p_k(x,1)·q_k(x,0)
//!            q_{k−1}(x) = q_k(x,0)·q_k(x,1)          (x ∈ {0,1}^{k−1}, the split is the top variable)
//! root       Σ_x p_n(x)/q_n(x) = p_0/q_0
//!
//! P → V      the 1-variable layer p_1(0), p_1(1), q_1(0), q_1(1): the root follows;  μ ← V
//! per layer  claim p_k(r) = P, q_k(r) = Q, r ∈ F^k;  λ ← V;
//!            sum-check  Σ_x eq(r,x)·[p0·q1 + p1·q0 + λ·q0·q1](x) = P + λ·Q   (degree 3, k variables)
//!            → ρ; P → V  p0, p1, q0, q1 at ρ (q0, q1 only for unit leaves); V checks the final value;
//!            μ ← V;  next claim at (ρ ‖ μ):  P = (1−μ)·p0 + μ·p1,  Q = (1−μ)·q0 + μ·q1
//! out        the root (p_0, q_0) and the leaf claim p_n(r_n) = P, q_n(r_n) = Q (the caller checks
//!            them against the columns the leaves are made of)
//!
//! batch      several trees (any depths) run together: the roots first, one shared μ, then per
//!            depth k one batched sum-check over every tree deeper than k (shared challenges,
//!            so every tree's claim point at depth k is the same); a tree of depth d leaves
//!            its leaf claim after depth d − 1. The proof carries one sum-check per depth
//!            instead of one per tree and depth.
//! ```
//!
//! Soundness: each layer's sum-check errs with probability ≤ 3k/|F|, each random line
//! (λ, μ) with ≤ 2/|F|, the batching coefficients with ≤ 1/|F|.

use crate::LookupError;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Field, Fr, One, UnreducedSum, Zero};
use zkmha_mle::{PARALLEL_THRESHOLD, eq_evaluation, eq_table_sequential};
use zkmha_sumcheck::{FinalEvaluations, ProductTerm, SumOfProducts, SumcheckInstance};
use zkmha_transcript::Transcript;
use zkmha_zk::mode::{Factor, ModeError, ProductMode, ProductOutcome, ProverMember};
use zkmha_zk::{BatchMember, LinearValue, ZkProductShape};

const LABEL_FIRST_LAYER: &[u8] = b"lookup/fraction/first-layer";
const STEP_LAYER: &str = "fraction layer";
const LABEL_LINE: &[u8] = b"lookup/fraction/line";
const LABEL_LAMBDA: &[u8] = b"lookup/fraction/lambda";

/// A fraction `numerator / denominator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fraction {
    /// Numerator.
    pub numerator: Fr,
    /// Denominator.
    pub denominator: Fr,
}

/// One layer's sum-check instance `Σ_x eq(r,x)·[p0·q1 + p1·q0 + λ·q0·q1](x)` (or
/// `eq·[q0 + q1 + λ·q0·q1]` for unit leaves), written by hand because the generic
/// sum-of-products kernel evaluates every term at every point and keeps `eq` as a table.
///
/// Split eq (Gruen, "Some improvements for the PIOP for ZeroCheck", 2024; Dao–Thaler): with
/// the top remaining variable `X` and the rest `y`, the round polynomial is
/// `s(X) = P·eq(r_X, X)·T(X)`, `T(X) = Σ_y eq(r_y, y)·g(X, y)` of degree 2, `P` the eq factor
/// of the variables already bound. The kernel sums `T(0)` and `T(∞)` only, with
/// `eq(r_y, ·) = E_low ⊗ E_high` from two tables of `√` size rebuilt each round; `T(1)` comes
/// from the previous claim. No `eq` table of the layer's size is built or bound.
pub(crate) struct LayerInstance {
    lambda: Fr,
    /// The claim point `r` (variable order); round `i` binds `r[len_vars − 1]`.
    point: Vec<Fr>,
    /// `P`: `Π eq(r_j, c_j)` over the bound variables.
    bound_eq: Fr,
    /// The layer's `p` (absent for unit leaves) and `q`, whole: `p0, q0` are the first
    /// `len` entries, `p1, q1` the `len` entries from `offset` on (the halves bind in place,
    /// without copying the layer apart).
    numerators: Option<Vec<Fr>>,
    denominators: Vec<Fr>,
    offset: usize,
    len: usize,
    threshold: usize,
}

/// Binds the highest variable of `table[..2·half]` in place (the result in `table[..half]`).
fn bind_prefix(table: &mut [Fr], half: usize, r: Fr, threshold: usize) {
    let (lo, hi) = table.split_at_mut(half);
    let step = |(l, h): (&mut Fr, &Fr)| *l += r * (*h - *l);
    if half >= threshold {
        lo.par_iter_mut().zip(hi[..half].par_iter()).with_min_len(1024).for_each(step);
    } else {
        lo.iter_mut().zip(hi[..half].iter()).for_each(step);
    }
}

/// `Σ_y E(y)·[t0, t0λ, t∞]` parts for one run of pairs: `[Σ E·(first part of g(0)),
/// Σ E·q0·q1 at 0, Σ E·(g at ∞ without λ), Σ E·q0·q1 at ∞]`, so λ is applied once.
type Partial = [Fr; 4];

fn add_partial(mut a: Partial, b: Partial) -> Partial {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
    a
}

impl LayerInstance {
    /// The unweighted parts of pair `x`.
    #[inline(always)]
    fn pair(&self, x: usize, half: usize) -> Partial {
        let (q, o) = (&self.denominators, self.offset);
        let (a0, b0) = (q[x], q[o + x]);
        let (a_inf, b_inf) = (q[x + half] - a0, q[o + x + half] - b0);
        match &self.numerators {
            None => [a0 + b0, a0 * b0, Fr::zero(), a_inf * b_inf],
            Some(p) => {
                let (c0, d0) = (p[x], p[o + x]);
                let (c_inf, d_inf) = (p[x + half] - c0, p[o + x + half] - d0);
                [c0 * b0 + d0 * a0, a0 * b0, c_inf * b_inf + d_inf * a_inf, a_inf * b_inf]
            }
        }
    }

    /// `Σ_y eq(r_y, y)·parts(y)` over the `half` pairs, with `eq(r_y, ·) = E_low ⊗ E_high`.
    fn weighted_sums(&self, half: usize) -> Partial {
        let rest = self.point.get(..half.trailing_zeros() as usize).unwrap_or_default();
        let (low_point, high_point) = rest.split_at(rest.len() / 2);
        let (low, high) = (eq_table_sequential(low_point), eq_table_sequential(high_point));
        let unit = self.numerators.is_none();
        let block = |(h, e_high): (usize, &Fr)| {
            // One reduction per block and part (the inner products are delayed).
            let mut acc = [UnreducedSum::new(); 4];
            for (l, e_low) in low.iter().enumerate() {
                let parts = self.pair(h * low.len() + l, half);
                for (k, (a, v)) in acc.iter_mut().zip(&parts).enumerate() {
                    if !(unit && k == 2) {
                        a.add_product(e_low, v);
                    }
                }
            }
            acc.map(|a| a.finish() * e_high)
        };
        if half >= self.threshold {
            high.par_iter().enumerate().map(block).reduce(|| [Fr::zero(); 4], add_partial)
        } else {
            high.iter().enumerate().map(block).fold([Fr::zero(); 4], add_partial)
        }
    }

    /// `[p0, p1, q0, q1]` (or `[q0, q1]`) once every variable is bound.
    fn final_values(&self) -> Vec<Fr> {
        let q = &self.denominators;
        let at = |v: &[Fr], i: usize| v.get(i).copied().unwrap_or_else(Fr::zero);
        match &self.numerators {
            None => vec![at(q, 0), at(q, self.offset)],
            Some(p) => vec![at(p, 0), at(p, self.offset), at(q, 0), at(q, self.offset)],
        }
    }

    /// `T(1)` computed directly (when `P·r_X = 0` and it cannot be derived).
    fn direct_at_one(&self, half: usize) -> Fr {
        let rest = self.point.get(..half.trailing_zeros() as usize).unwrap_or_default();
        let eq = eq_table_sequential(rest);
        let (q, o) = (&self.denominators, self.offset);
        (0..half)
            .map(|x| {
                let (a, b) = (q[x + half], q[o + x + half]);
                let g = match &self.numerators {
                    None => a + b + self.lambda * a * b,
                    Some(p) => p[x + half] * b + p[o + x + half] * a + self.lambda * a * b,
                };
                eq[x] * g
            })
            .sum()
    }
}

impl SumcheckInstance for LayerInstance {
    fn num_vars(&self) -> usize {
        self.len.trailing_zeros() as usize
    }

    fn degree(&self) -> usize {
        3
    }

    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]) {
        let half = self.len / 2;
        let r_x = self.point.get(half.trailing_zeros() as usize).copied().unwrap_or_else(Fr::zero);
        let [g0, g0_product, g_inf, g_inf_product] = self.weighted_sums(half);
        let t0 = g0 + self.lambda * g0_product;
        let t_inf = g_inf + self.lambda * g_inf_product;
        // s(0) + s(1) = P·((1 − r_X)·T(0) + r_X·T(1)) = claim.
        let t1 = match (self.bound_eq * r_x).inverse() {
            Some(inverse) => (previous_claim - self.bound_eq * (Fr::one() - r_x) * t0) * inverse,
            None => self.direct_at_one(half),
        };
        let t2 = t1 + t1 - t0 + t_inf + t_inf;
        if let [s0, s2, leading] = evaluations {
            *s0 = self.bound_eq * (Fr::one() - r_x) * t0;
            *s2 = self.bound_eq * (r_x + r_x + r_x - Fr::one()) * t2;
            *leading = self.bound_eq * (r_x + r_x - Fr::one()) * t_inf;
        }
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        let (half, offset, threshold) = (self.len / 2, self.offset, self.threshold);
        let r_x = self.point.get(half.trailing_zeros() as usize).copied().unwrap_or_else(Fr::zero);
        self.bound_eq *= (Fr::one() - r_x) * (Fr::one() - challenge) + r_x * challenge;
        bind_prefix(&mut self.denominators, half, challenge, threshold);
        bind_prefix(&mut self.denominators[offset..], half, challenge, threshold);
        if let Some(p) = &mut self.numerators {
            bind_prefix(p, half, challenge, threshold);
            bind_prefix(&mut p[offset..], half, challenge, threshold);
        }
        self.len = half;
    }
}

/// `[eq(r, ρ), p0, p1, q0, q1]` (unit leaves: `[eq(r, ρ), q0, q1]`) once every variable is
/// bound: `bound_eq` is then `eq(r, ρ)`. With [`layer_shape`] this is the layer's sum-check as
/// a sum of products, the form the zero-knowledge sum-checks take (`eq` public, the halves
/// hidden; `docs/ZERO_KNOWLEDGE.md`).
impl FinalEvaluations for LayerInstance {
    fn final_evaluations(&self) -> Vec<Fr> {
        let mut values = vec![self.bound_eq];
        values.extend(self.final_values());
        values
    }
}

/// The layer's polynomial as a sum of products over `[eq, p0, p1, q0, q1]`:
/// `eq·p0·q1 + eq·p1·q0 + λ·eq·q0·q1`; for unit leaves over `[eq, q0, q1]`:
/// `eq·q0 + eq·q1 + λ·eq·q0·q1`.
///
/// # Errors
/// None in practice (the shape is well formed); [`LookupError::Sumcheck`] otherwise.
pub fn layer_shape(unit: bool, lambda: Fr) -> Result<SumOfProducts, LookupError> {
    let term = |coefficient: Fr, factors: &[usize]| ProductTerm { coefficient, factors: factors.to_vec() };
    let one = Fr::one();
    let shape = if unit {
        SumOfProducts::new(3, vec![term(one, &[0, 1]), term(one, &[0, 2]), term(lambda, &[0, 1, 2])])
    } else {
        SumOfProducts::new(5, vec![term(one, &[0, 1, 4]), term(one, &[0, 2, 3]), term(lambda, &[0, 3, 4])])
    };
    Ok(shape?)
}

/// One layer of a fraction tree: numerators (absent for unit leaves) and denominators.
type Layer = (Option<Vec<Fr>>, Vec<Fr>);

/// The leaves of one fraction tree, as the prover holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FractionLeaves {
    /// Numerators (`None`: every numerator is 1) and denominators.
    Dense {
        /// `p_n`, or `None` for unit numerators.
        numerators: Option<Vec<Fr>>,
        /// `q_n`.
        denominators: Vec<Fr>,
    },
    /// Unit numerators and denominators `dictionary[indices[x]]`: a lookup's witness side,
    /// whose rows repeat table rows (4 bytes per leaf instead of 32). Neither the leaves nor
    /// the layer above them are stored as field elements: the GKR rebuilds them from the
    /// indices when it reaches them (one multiplication per node), which keeps the prover's
    /// memory for the largest trees at their smaller layers.
    Indexed {
        /// The distinct denominators (shared: the witness trees of a batch read one
        /// dictionary of its tables' folded rows).
        dictionary: std::sync::Arc<Vec<Fr>>,
        /// One dictionary index per leaf.
        indices: Vec<u32>,
    },
}

/// An indexed tree's leaves kept as the dictionary and the indices.
type IndexedLeaves = (std::sync::Arc<Vec<Fr>>, Vec<u32>);

impl FractionLeaves {
    fn len(&self) -> usize {
        match self {
            FractionLeaves::Dense { denominators, .. } => denominators.len(),
            FractionLeaves::Indexed { indices, .. } => indices.len(),
        }
    }

    fn is_unit(&self) -> bool {
        match self {
            FractionLeaves::Dense { numerators, .. } => numerators.is_none(),
            FractionLeaves::Indexed { .. } => true,
        }
    }
}

/// Two layers above indexed leaves, without the layer between: node `x` combines the leaves
/// `x, x + 2q` and `x + q, x + 3q` (`q` = a quarter of the leaves) into the two children, then
/// the children into the node.
fn two_above_indexed_leaves(dictionary: &[Fr], indices: &[u32]) -> Layer {
    let quarter = indices.len() / 4;
    let leaf = |x: usize| dictionary[indices[x] as usize];
    let (p, q): (Vec<Fr>, Vec<Fr>) = (0..quarter)
        .into_par_iter()
        .with_min_len(4096)
        .map(|x| {
            let (a0, b0, a1, b1) = (leaf(x), leaf(x + 2 * quarter), leaf(x + quarter), leaf(x + 3 * quarter));
            let (p0, q0, p1, q1) = (a0 + b0, a0 * b0, a1 + b1, a1 * b1);
            (p0 * q1 + p1 * q0, q0 * q1)
        })
        .unzip();
    (Some(p), q)
}

/// `q_n` of indexed leaves as field elements.
fn indexed_leaves(dictionary: &[Fr], indices: &[u32]) -> Layer {
    (None, indices.par_iter().with_min_len(4096).map(|&i| dictionary[i as usize]).collect())
}

/// The layer above indexed leaves: `p = q(x,0) + q(x,1)`, `q = q(x,0)·q(x,1)`.
fn above_indexed_leaves(dictionary: &[Fr], indices: &[u32]) -> Layer {
    let half = indices.len() / 2;
    let (p, q): (Vec<Fr>, Vec<Fr>) = (0..half)
        .into_par_iter()
        .with_min_len(4096)
        .map(|x| {
            let (a, b) = (dictionary[indices[x] as usize], dictionary[indices[x + half] as usize]);
            (a + b, a * b)
        })
        .unzip();
    (Some(p), q)
}

/// The layers of the fraction tree, leaves first: `(p_k, q_k)` for `k = n, …, 1`.
fn build_layers(numerators: Option<Vec<Fr>>, denominators: Vec<Fr>) -> Vec<Layer> {
    let mut layers = vec![(numerators, denominators)];
    while let Some((p, q)) = layers.last() {
        if q.len() <= 2 {
            break;
        }
        let half = q.len() / 2;
        let (q0, q1) = q.split_at(half);
        let min_len = if half >= PARALLEL_THRESHOLD { 1024 } else { usize::MAX };
        let next_p = match p {
            Some(p) => {
                let (p0, p1) = p.split_at(half);
                (0..half)
                    .into_par_iter()
                    .with_min_len(min_len)
                    .map(|x| p0[x] * q1[x] + p1[x] * q0[x])
                    .collect()
            }
            None => (0..half).into_par_iter().with_min_len(min_len).map(|x| q0[x] + q1[x]).collect(),
        };
        let next_q = (0..half).into_par_iter().with_min_len(min_len).map(|x| q0[x] * q1[x]).collect();
        layers.push((Some(next_p), next_q));
    }
    layers
}

/// The prover's trees, layer by layer (the plain and the zero-knowledge proofs walk them
/// alike): stored layers leaves first; indexed trees of depth ≥ 3 keep their leaves as
/// indices and store neither the leaves nor the layer above them.
pub(crate) struct TreeLayers {
    /// Each tree's depth.
    pub(crate) depths: Vec<usize>,
    /// Whether each tree has unit numerators.
    pub(crate) units: Vec<bool>,
    indexed: Vec<Option<IndexedLeaves>>,
    layers: Vec<Vec<Layer>>,
}

impl TreeLayers {
    /// Checks the trees and builds their stored layers.
    pub(crate) fn new(trees: Vec<FractionLeaves>) -> Result<Self, LookupError> {
        if trees.is_empty() {
            return Err(LookupError::WrongLength { what: "fraction trees", expected: 1, got: 0 });
        }
        let mut depths = Vec::with_capacity(trees.len());
        for tree in &trees {
            let len = tree.len();
            let n = len.trailing_zeros() as usize;
            if len < 2 || !len.is_power_of_two() {
                return Err(LookupError::WrongLength {
                    what: "fraction leaves",
                    expected: 1 << n.max(1),
                    got: len,
                });
            }
            match tree {
                FractionLeaves::Dense { numerators: Some(p), denominators }
                    if p.len() != denominators.len() =>
                {
                    return Err(LookupError::WrongLength {
                        what: "numerators",
                        expected: denominators.len(),
                        got: p.len(),
                    });
                }
                FractionLeaves::Indexed { dictionary, indices }
                    if indices.par_iter().any(|&i| i as usize >= dictionary.len()) =>
                {
                    return Err(LookupError::MalformedProof("a leaf index outside its dictionary"));
                }
                _ => {}
            }
            depths.push(n);
        }
        let units: Vec<bool> = trees.iter().map(FractionLeaves::is_unit).collect();
        // Stored layers (leaves first); indexed trees of depth ≥ 3 keep their leaves as indices
        // and store neither the leaves nor the layer above them.
        let mut indexed: Vec<Option<IndexedLeaves>> = Vec::with_capacity(trees.len());
        let mut layers: Vec<Vec<Layer>> = Vec::with_capacity(trees.len());
        for (tree, &depth) in trees.into_iter().zip(&depths) {
            match tree {
                FractionLeaves::Indexed { dictionary, indices } if depth >= 3 => {
                    let (p, q) = two_above_indexed_leaves(&dictionary, &indices);
                    layers.push(build_layers(p, q));
                    indexed.push(Some((dictionary, indices)));
                }
                FractionLeaves::Indexed { dictionary, indices } => {
                    let (p, q) = indexed_leaves(&dictionary, &indices);
                    layers.push(build_layers(p, q));
                    indexed.push(None);
                }
                FractionLeaves::Dense { numerators, denominators } => {
                    layers.push(build_layers(numerators, denominators));
                    indexed.push(None);
                }
            }
        }

        Ok(Self { depths, units, indexed, layers })
    }

    /// Takes each tree's first layer `p_1(0), p_1(1), q_1(0), q_1(1)` (`p = 1` for unit leaves
    /// of one variable).
    pub(crate) fn first_layers(&mut self) -> Result<Vec<Vec<Fr>>, LookupError> {
        let mut first_layers = Vec::with_capacity(self.layers.len());
        for tree in &mut self.layers {
            let (top_p, top_q) = tree.pop().ok_or(LookupError::MalformedProof("no layer"))?;
            let top_p = top_p.unwrap_or_else(|| vec![Fr::one(); 2]);
            first_layers.push(vec![top_p[0], top_p[1], top_q[0], top_q[1]]);
        }
        Ok(first_layers)
    }

    /// Tree `t`'s sum-check instance of depth `depth` (its layer `depth + 1`: stored, or
    /// rebuilt from an indexed tree's leaves) at the claim point.
    pub(crate) fn layer_instance(
        &mut self,
        t: usize,
        depth: usize,
        point: &[Fr],
        lambda: Fr,
    ) -> Result<LayerInstance, LookupError> {
        let missing = LookupError::MalformedProof("missing layer");
        let (p, q) = match (self.layers.get_mut(t).and_then(Vec::pop), self.indexed.get(t)) {
            (Some(layer), _) => layer,
            (None, Some(Some((dictionary, indices)))) if Some(&(depth + 1)) == self.depths.get(t) => {
                indexed_leaves(dictionary, indices)
            }
            (None, Some(Some((dictionary, indices)))) => above_indexed_leaves(dictionary, indices),
            _ => return Err(missing),
        };
        let half = q.len() / 2;
        Ok(LayerInstance {
            lambda,
            point: point.to_vec(),
            bound_eq: Fr::one(),
            numerators: p,
            denominators: q,
            offset: half,
            len: half,
            threshold: PARALLEL_THRESHOLD,
        })
    }
}

/// A proof of one or several fractional sums in a mode: `S` a sent value, `P` a layer's
/// (batched) sum-of-products proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct FractionSumProof<
    S: CanonicalSerialize + CanonicalDeserialize,
    P: CanonicalSerialize + CanonicalDeserialize,
> {
    /// Per tree: `p_1(0), p_1(1), q_1(0), q_1(1)` (only the `q`s for unit leaves of one
    /// variable, whose `p`s are the constant 1).
    pub first_layers: Vec<Vec<S>>,
    /// Depths 1, 2, …, (deepest tree) − 1: one batched sum of products each.
    pub layers: Vec<P>,
}

/// A [`FractionSumProof`] in mode `M`.
pub type FractionSumProofOf<M> = FractionSumProof<<M as ProductMode>::Sent, <M as ProductMode>::ProductProof>;

/// A fractional-sum proof in mode `M` and each tree's results as the prover holds them.
pub type ProvedFractions<M> = (FractionSumProofOf<M>, Vec<FractionTree<<M as ProductMode>::ProverValue>>);

/// One tree's results, values as the mode holds them (`Fr` plain; committed in zero
/// knowledge): its first layer, from which its root follows, and its leaf claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FractionTree<V> {
    /// `p_1(0), p_1(1), q_1(0), q_1(1)`: the root is `p_0 = p0·q1 + p1·q0`, `q_0 = q0·q1`.
    pub first_layer: [V; 4],
    /// The leaf point `r_n`.
    pub leaf_point: Vec<Fr>,
    /// `p_n(r_n)` (the constant 1 for unit leaves).
    pub leaf_numerator: V,
    /// `q_n(r_n)`.
    pub leaf_denominator: V,
}

impl FractionTree<Fr> {
    /// The root `p_0/q_0` (plain values).
    pub fn root(&self) -> Fraction {
        let [p0, p1, q0, q1] = self.first_layer;
        Fraction { numerator: p0 * q1 + p1 * q0, denominator: q0 * q1 }
    }
}

/// The `(variables, degree)` of the masked sum-checks of trees of the given depths, in proof
/// order (for the caller's mask schedule in zero knowledge).
pub fn zk_fraction_schedule(depths: &[usize]) -> Vec<(usize, usize)> {
    let deepest = depths.iter().copied().max().unwrap_or(0);
    (1..deepest).map(|depth| (depth, 3)).collect()
}

/// A layer's member shape: `eq` public, the halves hidden.
fn member_shape(unit: bool, lambda: Fr) -> Result<ZkProductShape, LookupError> {
    let shape = layer_shape(unit, lambda)?;
    let mut public = vec![false; shape.num_mles()];
    if let Some(eq) = public.first_mut() {
        *eq = true;
    }
    Ok(ZkProductShape::new(shape, public)?)
}

/// Whether tree `t` of depth `n` and unit flag `unit` runs its unit-leaf layer at `depth`.
fn unit_layer(n: usize, unit: bool, depth: usize) -> bool {
    unit && n == depth + 1
}

/// Records the leaf claims of the trees of depth `depth`.
fn finish<V: Clone>(
    leaves: &mut [Option<(Vec<Fr>, V, V)>],
    trees: &[(usize, bool)],
    point: &[Fr],
    claims: &[(V, V)],
    depth: usize,
) {
    for ((slot, (n, _)), (p, q)) in leaves.iter_mut().zip(trees).zip(claims) {
        if *n == depth {
            *slot = Some((point.to_vec(), p.clone(), q.clone()));
        }
    }
}

/// Assembles the trees' results.
fn results<V: Clone>(
    first_layers: Vec<[V; 4]>,
    leaves: Vec<Option<(Vec<Fr>, V, V)>>,
) -> Result<Vec<FractionTree<V>>, LookupError> {
    first_layers
        .into_iter()
        .zip(leaves)
        .map(|(first_layer, leaf)| {
            let (leaf_point, leaf_numerator, leaf_denominator) =
                leaf.ok_or(LookupError::MalformedProof("a tree without its leaf claim"))?;
            Ok(FractionTree { first_layer, leaf_point, leaf_numerator, leaf_denominator })
        })
        .collect()
}

/// The next claims from a layer's hidden values at the line point `μ`.
fn next_claims<V: LinearValue>(hidden: &[V], one: &V, mu: Fr) -> Result<(V, V), LookupError> {
    match hidden {
        [q0, q1] => Ok((one.clone(), V::line(q0, q1, mu))),
        [p0, p1, q0, q1] => Ok((V::line(p0, p1, mu), V::line(q0, q1, mu))),
        _ => Err(LookupError::MalformedProof("wrong number of layer values")),
    }
}

/// A layer's hidden values: its outcome's factors after the public `eq` (which the verifier
/// has computed or checked itself).
fn layer_values<V: Clone>(outcome: &ProductOutcome<V>) -> Result<Vec<V>, LookupError> {
    let (_, rest) =
        outcome.factors.split_first().ok_or(LookupError::MalformedProof("a layer without values"))?;
    rest.iter()
        .map(|factor| match factor {
            Factor::Hidden(value) => Ok(value.clone()),
            Factor::Public(_) => Err(LookupError::MalformedProof("a layer value made public")),
        })
        .collect()
}

/// A layer's sum-of-products error: a final value that does not fit (plain), a public `eq`
/// that is not `eq(r, ρ)` or values of the wrong count are the layer's mismatch.
fn layer_error(depth: usize) -> impl Fn(ModeError) -> LookupError {
    move |error| match error {
        ModeError::Sumcheck { .. } | ModeError::CheckFailed { .. } => {
            LookupError::LayerMismatch { layer: depth + 1 }
        }
        other => other.into(),
    }
}

/// Proves several fractional sums in mode `M` (each tree's leaves dense or indexed, any depths
/// ≥ 1): the first layers sent, then one batched sum of products per depth. Returns the proof
/// and each tree's results (first layer and leaf claim, at a prefix of one shared point), whose
/// relations the caller proves.
///
/// # Errors
/// [`LookupError::WrongLength`] for a tree that is not `2^n` long with `n ≥ 1`, or an empty
/// batch; [`LookupError::MalformedProof`] for an index outside its dictionary; the mode's
/// errors.
pub fn prove_fraction_sums<M: ProductMode>(
    prover: &mut M::Prover<'_>,
    trees: Vec<FractionLeaves>,
    transcript: &mut Transcript,
) -> Result<ProvedFractions<M>, LookupError> {
    let mut layers = TreeLayers::new(trees)?;
    let values = layers.first_layers()?;
    let shapes: Vec<(usize, bool)> =
        layers.depths.iter().copied().zip(layers.units.iter().copied()).collect();
    let one = M::prover_constant(prover, Fr::one());
    let mut sent = Vec::with_capacity(values.len());
    let mut first_layers = Vec::with_capacity(values.len());
    for (values, &(n, unit)) in values.iter().zip(&shapes) {
        let [p0, p1, q0, q1] = values.as_slice() else {
            return Err(LookupError::MalformedProof("the first layer has four values"));
        };
        if unit && n == 1 {
            let (s, mut held) = M::send(prover, LABEL_FIRST_LAYER, &[*q0, *q1], transcript);
            let (Some(q1), Some(q0)) = (held.pop(), held.pop()) else {
                return Err(LookupError::MalformedProof("the first layer has four values"));
            };
            sent.push(s);
            first_layers.push([one.clone(), one.clone(), q0, q1]);
        } else {
            let (s, held) = M::send(prover, LABEL_FIRST_LAYER, &[*p0, *p1, *q0, *q1], transcript);
            let layer: [M::ProverValue; 4] = held
                .try_into()
                .map_err(|_| LookupError::MalformedProof("the first layer has four values"))?;
            sent.push(s);
            first_layers.push(layer);
        }
    }
    let mu = transcript.challenge_field(LABEL_LINE);
    let mut point = vec![mu];
    let mut claims: Vec<(M::ProverValue, M::ProverValue)> = first_layers
        .iter()
        .map(|[p0, p1, q0, q1]| (LinearValue::line(p0, p1, mu), LinearValue::line(q0, q1, mu)))
        .collect();
    let mut leaves = vec![None; shapes.len()];
    finish(&mut leaves, &shapes, &point, &claims, 1);

    let deepest = shapes.iter().map(|(n, _)| *n).max().unwrap_or(1);
    let mut proofs = Vec::with_capacity(deepest.saturating_sub(1));
    for depth in 1..deepest {
        let lambda = transcript.challenge_field(LABEL_LAMBDA);
        let active: Vec<usize> = (0..shapes.len()).filter(|&t| shapes[t].0 > depth).collect();
        let mut member_shapes = Vec::with_capacity(active.len());
        let mut instances = Vec::with_capacity(active.len());
        let mut sums = Vec::with_capacity(active.len());
        for &t in &active {
            let (n, unit) = shapes[t];
            member_shapes.push(member_shape(unit_layer(n, unit, depth), lambda)?);
            instances.push(layers.layer_instance(t, depth, &point, lambda)?);
            let (p, q) = &claims[t];
            sums.push(p.plus_scaled(lambda, q));
        }
        let members: Vec<ProverMember<'_>> = member_shapes
            .iter()
            .zip(instances.iter_mut())
            .map(|(shape, instance)| (shape, instance as &mut dyn FinalEvaluations))
            .collect();
        let sum_refs: Vec<&M::ProverValue> = sums.iter().collect();
        let (proof, outcomes) =
            M::prove_products_computed(prover, STEP_LAYER, members, &sum_refs, transcript)
                .map_err(layer_error(depth))?;
        drop(instances);
        let mu = transcript.challenge_field(LABEL_LINE);
        for (&t, outcome) in active.iter().zip(&outcomes) {
            claims[t] = next_claims(&layer_values(outcome)?, &one, mu)?;
        }
        point = outcomes.first().map(|o| o.point.clone()).unwrap_or_default();
        point.push(mu);
        finish(&mut leaves, &shapes, &point, &claims, depth + 1);
        proofs.push(proof);
    }
    Ok((FractionSumProof { first_layers: sent, layers: proofs }, results(first_layers, leaves)?))
}

/// Verifies [`prove_fraction_sums`] for trees of the given `(num_vars, unit_leaves)`. Returns
/// each tree's first layer and leaf claim, whose relations the caller must check (in zero
/// knowledge the group equations are left in the verifier's deferred checks).
///
/// # Errors
/// [`LookupError::MalformedProof`] for wrong counts, [`LookupError::LayerMismatch`] for a layer
/// whose values do not fit (plain) or a wrong public `eq` value, and the mode's errors.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_fraction_sums<M: ProductMode>(
    verifier: &mut M::Verifier<'_>,
    trees: &[(usize, bool)],
    proof: &FractionSumProofOf<M>,
    transcript: &mut Transcript,
) -> Result<Vec<FractionTree<M::Value>>, LookupError> {
    let deepest = trees.iter().map(|(n, _)| *n).max().unwrap_or(0);
    if trees.is_empty() || trees.iter().any(|(n, _)| *n == 0) {
        return Err(LookupError::MalformedProof("every tree needs a variable"));
    }
    if proof.first_layers.len() != trees.len() || proof.layers.len() != deepest - 1 {
        return Err(LookupError::MalformedProof("wrong number of layers"));
    }
    let one = M::verifier_constant(verifier, Fr::one());
    let mut first_layers = Vec::with_capacity(trees.len());
    for (sent, &(n, unit)) in proof.first_layers.iter().zip(trees) {
        let held = M::receive(verifier, LABEL_FIRST_LAYER, sent, transcript);
        let layer = match (held.as_slice(), unit && n == 1) {
            ([q0, q1], true) => [one.clone(), one.clone(), q0.clone(), q1.clone()],
            ([p0, p1, q0, q1], false) => [p0.clone(), p1.clone(), q0.clone(), q1.clone()],
            _ => return Err(LookupError::MalformedProof("wrong number of first-layer values")),
        };
        first_layers.push(layer);
    }
    let mu = transcript.challenge_field(LABEL_LINE);
    let mut point = vec![mu];
    let mut claims: Vec<(M::Value, M::Value)> = first_layers
        .iter()
        .map(|[p0, p1, q0, q1]| (LinearValue::line(p0, p1, mu), LinearValue::line(q0, q1, mu)))
        .collect();
    let mut leaves = vec![None; trees.len()];
    finish(&mut leaves, trees, &point, &claims, 1);
    for (index, layer) in proof.layers.iter().enumerate() {
        let depth = index + 1;
        let lambda = transcript.challenge_field(LABEL_LAMBDA);
        let active: Vec<usize> =
            (0..trees.len()).filter(|&t| trees.get(t).is_some_and(|(n, _)| *n > depth)).collect();
        let mut member_shapes = Vec::with_capacity(active.len());
        let mut sums = Vec::with_capacity(active.len());
        for &t in &active {
            let (Some(&(n, unit)), Some((p, q))) = (trees.get(t), claims.get(t)) else {
                return Err(LookupError::MalformedProof("tree index"));
            };
            member_shapes.push(member_shape(unit_layer(n, unit, depth), lambda)?);
            sums.push(p.plus_scaled(lambda, q));
        }
        let members: Vec<BatchMember<'_>> = member_shapes.iter().map(|shape| (shape, depth)).collect();
        let sum_refs: Vec<&M::Value> = sums.iter().collect();
        // The public eq(r, ρ): computed here, not sent (plain), or checked against what is sent.
        let eq = |_: usize, reduced: &[Fr]| {
            eq_evaluation(&point, reduced)
                .map(|eq| vec![eq])
                .map_err(|_| ModeError::CheckFailed { step: STEP_LAYER })
        };
        let outcomes =
            M::verify_products_computed(verifier, STEP_LAYER, &members, &sum_refs, layer, transcript, &eq)
                .map_err(layer_error(depth))?;
        let mu = transcript.challenge_field(LABEL_LINE);
        let reduced = outcomes.first().map(|o| o.point.clone()).unwrap_or_default();
        for (&t, outcome) in active.iter().zip(&outcomes) {
            let next = next_claims(&layer_values(outcome)?, &one, mu)?;
            if let Some(slot) = claims.get_mut(t) {
                *slot = next;
            }
        }
        point = reduced;
        point.push(mu);
        finish(&mut leaves, trees, &point, &claims, depth + 1);
    }
    results(first_layers, leaves)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_field::Field;
    use zkmha_mle::DenseMultilinearExtension;
    use zkmha_zk::mode::Plain;

    /// Proves one tree in the plain mode.
    fn prove_one(
        numerators: Option<Vec<Fr>>,
        denominators: Vec<Fr>,
    ) -> (FractionSumProofOf<Plain>, FractionTree<Fr>) {
        let trees = vec![FractionLeaves::Dense { numerators, denominators }];
        let (proof, mut results) =
            prove_fraction_sums::<Plain>(&mut (), trees, &mut Transcript::new(b"t")).unwrap();
        (proof, results.pop().unwrap())
    }

    #[test]
    fn root_is_the_sum_and_leaf_claims_match_the_leaves() {
        let mut rng = StdRng::seed_from_u64(3);
        for n in 1..=6 {
            for unit in [true, false] {
                let q: Vec<Fr> = (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect();
                let p: Vec<Fr> = (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect();
                let numerators = if unit { None } else { Some(p.as_slice()) };
                let (proof, tree) = prove_one(numerators.map(<[Fr]>::to_vec), q.clone());
                let root = tree.root();
                let expected: Fr = q
                    .iter()
                    .enumerate()
                    .map(|(i, q)| numerators.map_or(Fr::one(), |p| p[i]) * q.inverse().unwrap_or_default())
                    .sum();
                assert_eq!(root.numerator * root.denominator.inverse().unwrap_or_default(), expected);
                let verified =
                    verify_fraction_sums::<Plain>(&mut (), &[(n, unit)], &proof, &mut Transcript::new(b"t"))
                        .unwrap();
                assert_eq!(verified, vec![tree.clone()]);
                let q_mle = DenseMultilinearExtension::new(n, q.clone()).unwrap();
                assert_eq!(
                    q_mle.evaluate(&tree.leaf_point).unwrap_or_default(),
                    tree.leaf_denominator,
                    "n = {n}"
                );
                let p_value = if unit {
                    Fr::one()
                } else {
                    DenseMultilinearExtension::new(n, p.clone())
                        .and_then(|m| m.evaluate(&tree.leaf_point))
                        .unwrap_or_default()
                };
                assert_eq!(p_value, tree.leaf_numerator, "n = {n}");
            }
        }
    }

    #[test]
    fn batched_trees_of_different_depths_match_their_leaves_and_reject_tampering() {
        let mut rng = StdRng::seed_from_u64(9);
        let shapes = [(1usize, true), (3, false), (6, true), (3, true), (5, false)];
        let trees: Vec<(Option<Vec<Fr>>, Vec<Fr>)> = shapes
            .iter()
            .map(|&(n, unit)| {
                let q: Vec<Fr> = (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect();
                let p = (!unit).then(|| (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect());
                (p, q)
            })
            .collect();
        let dense = trees
            .iter()
            .map(|(p, q)| FractionLeaves::Dense { numerators: p.clone(), denominators: q.clone() })
            .collect();
        let (proof, results) =
            prove_fraction_sums::<Plain>(&mut (), dense, &mut Transcript::new(b"b")).unwrap();
        assert_eq!(proof.layers.len(), 5, "one layer proof per depth, not per tree");
        let verify = |proof: &FractionSumProofOf<Plain>| {
            verify_fraction_sums::<Plain>(&mut (), &shapes, proof, &mut Transcript::new(b"b"))
        };
        assert_eq!(verify(&proof).unwrap(), results);
        for ((p, q), tree) in trees.iter().zip(&results) {
            let root = tree.root();
            let n = q.len().trailing_zeros() as usize;
            let expected: Fr = q
                .iter()
                .enumerate()
                .map(|(i, q)| p.as_ref().map_or(Fr::one(), |p| p[i]) * q.inverse().unwrap_or_default())
                .sum();
            assert_eq!(root.numerator * root.denominator.inverse().unwrap_or_default(), expected);
            let q_mle = DenseMultilinearExtension::new(n, q.clone()).unwrap();
            assert_eq!(q_mle.evaluate(&tree.leaf_point).unwrap(), tree.leaf_denominator);
            let p_value = p.as_ref().map_or(Fr::one(), |p| {
                DenseMultilinearExtension::new(n, p.clone()).unwrap().evaluate(&tree.leaf_point).unwrap()
            });
            assert_eq!(p_value, tree.leaf_numerator);
        }
        // A shallow tree's value at depth 2 (the (3, false) tree is the first still descending;
        // its values follow the public eq).
        let mut bad = proof.clone();
        bad.layers[1].final_evaluations[0][1] += Fr::one();
        assert_eq!(verify(&bad), Err(LookupError::LayerMismatch { layer: 3 }));
        // The public eq is not sent: the verifier computes it.
        assert_eq!(proof.layers[1].final_evaluations[0].len(), 4, "p0, p1, q0, q1");
        let mut bad = proof.clone();
        bad.layers[1].final_evaluations[0].insert(0, Fr::one());
        assert_eq!(verify(&bad), Err(LookupError::LayerMismatch { layer: 3 }));
        let mut bad = proof.clone();
        bad.first_layers[4][2] += Fr::one();
        assert!(verify(&bad).is_err());
        let mut bad = proof.clone();
        bad.layers[3].final_evaluations.pop();
        assert_eq!(verify(&bad), Err(LookupError::LayerMismatch { layer: 5 }));
        // Unit leaves of one variable send their first layer's denominators only.
        let mut bad = proof;
        bad.first_layers[0].insert(0, Fr::one());
        assert_eq!(verify(&bad), Err(LookupError::MalformedProof("wrong number of first-layer values")));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod indexed_tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
    use zkmha_zk::mode::Plain;

    #[test]
    fn indexed_leaves_prove_exactly_like_their_dense_denominators() {
        let mut rng = StdRng::seed_from_u64(11);
        let dictionary: Vec<Fr> = (0..5).map(|_| Fr::rand(&mut rng)).collect();
        // Depths 1 and 2 are materialized at once; from 3 on the two lowest layers are rebuilt.
        for depths in [vec![1usize], vec![2, 4], vec![3], vec![7, 5, 3], vec![9, 9]] {
            let indices: Vec<Vec<u32>> =
                depths.iter().map(|&n| (0..1usize << n).map(|_| rng.gen_range(0..5u32)).collect()).collect();
            let dense: Vec<FractionLeaves> = indices
                .iter()
                .map(|ix| FractionLeaves::Dense {
                    numerators: None,
                    denominators: ix.iter().map(|&i| dictionary[i as usize]).collect(),
                })
                .collect();
            let indexed: Vec<FractionLeaves> = indices
                .iter()
                .map(|ix| FractionLeaves::Indexed {
                    dictionary: dictionary.clone().into(),
                    indices: ix.clone(),
                })
                .collect();
            let expected = prove_fraction_sums::<Plain>(&mut (), dense, &mut Transcript::new(b"i")).unwrap();
            let got = prove_fraction_sums::<Plain>(&mut (), indexed, &mut Transcript::new(b"i")).unwrap();
            assert_eq!(got, expected, "depths {depths:?}");
        }
        let bad = FractionLeaves::Indexed { dictionary: dictionary.into(), indices: vec![0, 1, 2, 5] };
        assert_eq!(
            prove_fraction_sums::<Plain>(&mut (), vec![bad], &mut Transcript::new(b"i")).map(|_| ()),
            Err(LookupError::MalformedProof("a leaf index outside its dictionary"))
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod kernel_tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_sumcheck::{SumcheckClaim, prove, verify};

    #[test]
    fn layer_kernel_matches_brute_force() {
        let mut rng = StdRng::seed_from_u64(1);
        for general in [false, true] {
            for k in 1..5 {
                let n = 1usize << k;
                let mut r = || (0..n).map(|_| Fr::rand(&mut rng)).collect::<Vec<Fr>>();
                let (q0, q1, p0, p1) = (r(), r(), r(), r());
                let mut point: Vec<Fr> = (0..k).map(|_| Fr::rand(&mut rng)).collect();
                if k % 2 == 0 {
                    // A zero coordinate: T(1) cannot be derived from the claim in that round.
                    point[k - 1] = Fr::zero();
                }
                let eq = eq_table_sequential(&point);
                let lambda = Fr::from(7u64);
                let g = |x: usize| {
                    if general {
                        eq[x] * (p0[x] * q1[x] + p1[x] * q0[x] + lambda * q0[x] * q1[x])
                    } else {
                        eq[x] * (q0[x] + q1[x] + lambda * q0[x] * q1[x])
                    }
                };
                let total: Fr = (0..n).map(g).sum();
                let make = |threshold: usize| LayerInstance {
                    lambda,
                    point: point.clone(),
                    bound_eq: Fr::one(),
                    numerators: general.then(|| [p0.clone(), p1.clone()].concat()),
                    denominators: [q0.clone(), q1.clone()].concat(),
                    offset: n,
                    len: n,
                    threshold,
                };
                let mut instance = make(usize::MAX);
                let mut parallel = make(1);
                let mut t = Transcript::new(b"k");
                let (proof, claim) = prove(&mut instance, total, &mut t);
                let (parallel_proof, _) = prove(&mut parallel, total, &mut Transcript::new(b"k"));
                assert_eq!(parallel_proof, proof, "the parallel twin gives the same proof");
                let mut t = Transcript::new(b"k");
                let verified = verify(&SumcheckClaim::new(k, 3, total), &proof, &mut t).unwrap();
                assert_eq!(verified, claim);
                let at = |v: &[Fr]| {
                    zkmha_mle::DenseMultilinearExtension::new(k, v.to_vec())
                        .unwrap()
                        .evaluate(&claim.point)
                        .unwrap()
                };
                let expected = if general {
                    at(&eq) * (at(&p0) * at(&q1) + at(&p1) * at(&q0) + lambda * at(&q0) * at(&q1))
                } else {
                    at(&eq) * (at(&q0) + at(&q1) + lambda * at(&q0) * at(&q1))
                };
                assert_eq!(claim.value, expected, "general {general}, k {k}");
                // The same value as a sum of products of the final evaluations, eq first.
                let finals = instance.final_evaluations();
                assert_eq!(finals[0], at(&eq));
                assert_eq!(layer_shape(!general, lambda).unwrap().combine(&finals).unwrap(), claim.value);
            }
        }
    }

    /// A layer's sum-check through the zero-knowledge sum of products (the first step of
    /// zero-knowledge lookups): `eq` public, the half-tables hidden, their committed values at
    /// the point the half-tables' own evaluations.
    #[test]
    fn a_layer_runs_as_a_zero_knowledge_sum_of_products() {
        use rand_chacha::ChaCha20Rng;
        use zkmha_pcs::{G1Affine, HyraxParams};
        use zkmha_zk::{
            DeferredChecks, FactorValue, MaskSchedule, ProverMasks, ValueOpening, VerifierMasks,
            ZkProductShape, prove_zk_product, verify_zk_product_deferred,
        };
        let params = HyraxParams::new(10);
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for general in [false, true] {
            let k = 5;
            let n = 1usize << k;
            let mut r = || (0..n).map(|_| Fr::rand(&mut rng)).collect::<Vec<Fr>>();
            let (q0, q1, p0, p1) = (r(), r(), r(), r());
            let point: Vec<Fr> = (0..k).map(|_| Fr::rand(&mut rng)).collect();
            let eq = eq_table_sequential(&point);
            let lambda = Fr::from(11u64);
            let total: Fr = (0..n)
                .map(|x| {
                    let g = if general {
                        p0[x] * q1[x] + p1[x] * q0[x] + lambda * q0[x] * q1[x]
                    } else {
                        q0[x] + q1[x] + lambda * q0[x] * q1[x]
                    };
                    eq[x] * g
                })
                .sum();
            let mut instance = LayerInstance {
                lambda,
                point: point.clone(),
                bound_eq: Fr::one(),
                numerators: general.then(|| [p0.clone(), p1.clone()].concat()),
                denominators: [q0.clone(), q1.clone()].concat(),
                offset: n,
                len: n,
                threshold: usize::MAX,
            };
            let shape = layer_shape(!general, lambda).unwrap();
            let public: Vec<bool> = (0..shape.num_mles()).map(|i| i == 0).collect();
            let zk_shape = ZkProductShape::new(shape, public).unwrap();
            let opening = ValueOpening::hide(total, &mut rng);
            let commitment = G1Affine::from(opening.commit(&params));
            let schedule = MaskSchedule(vec![(k, 3)]);
            let mut transcript = Transcript::new(b"zk-layer");
            let (mut masks, masks_commitment) =
                ProverMasks::commit(&params, schedule.clone(), &mut transcript, &mut rng).unwrap();
            let (proof, claims, openings) = prove_zk_product(
                &params,
                &zk_shape,
                &mut instance,
                (commitment, &opening),
                &mut masks,
                &mut transcript,
                &mut rng,
            )
            .unwrap();
            let argument = masks.prove_openings(&params, &mut transcript, &mut rng).unwrap();

            let mut transcript = Transcript::new(b"zk-layer");
            let mut verifier_masks = VerifierMasks::absorb(schedule, masks_commitment, &mut transcript);
            let mut checks = DeferredChecks::new();
            let verified = verify_zk_product_deferred(
                &params,
                &zk_shape,
                k,
                commitment,
                &proof,
                &mut verifier_masks,
                &mut transcript,
                &mut checks,
            )
            .unwrap();
            verifier_masks.verify_openings(&params, &argument, &mut transcript, &mut checks).unwrap();
            checks.finish(&transcript).unwrap();
            assert_eq!(verified, claims);
            let at = |v: &[Fr]| {
                zkmha_mle::DenseMultilinearExtension::new(k, v.to_vec())
                    .unwrap()
                    .evaluate(&claims.point)
                    .unwrap()
            };
            assert_eq!(claims.values[0], FactorValue::Public(at(&eq)));
            let halves: Vec<&Vec<Fr>> = if general { vec![&p0, &p1, &q0, &q1] } else { vec![&q0, &q1] };
            for (opening, half) in openings.iter().skip(1).zip(halves) {
                assert_eq!(opening.unwrap().value, at(half), "general {general}");
            }
        }
    }
}
