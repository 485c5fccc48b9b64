//! The logUp lookup: every row of the witness columns is a row of a public table, in either
//! mode (plain values, or committed values in zero knowledge: `zkmha_zk::mode`).
//!
//! ```text
//! statement  every lookup's table (name, t, c) and witness size n; commitments to the witness
//!            columns and to each m are absorbed by the caller before this protocol starts
//! layout     (crate::layout) groups: lookups into equal range tables share one table block;
//!            the witnesses in one tree (or one per witness size: lookups of equal size end at
//!            one point r_w[..n]), the groups' tables packed into a few table trees
//!            (aligned blocks), group g's rows folded with its tag g
//! challenges α, γ (one pair for the batch);  fold(v, g) = α − Σ_{k<C} γ^k·v_k − γ^C·g
//! witness    per lookup Σ_x 1/q(x), q(x) = fold(w_i(x), g_i) (x < 2^{n_i}; a one-row witness
//!            pads its tree of two leaves)
//! table      per table tree  Σ_y p(y)/q(y), in group g's block q = fold(T_g, g), p = Σ_{i∈g} m_i
//!            (GKR fractional sums of every tree in one batch → roots a_j/b_j, leaf claims at r_j)
//! P → V      per tree a_j, b_j; running sums N_k, D_k (k = 2 … K−1); per lookup w_{i,k} at its
//!            witness point r_w[..n_i] and m_i at its table point r_t[..t_g] (sent: in the clear
//!            or committed)
//! relations  (one M::prove_relations for the whole batch; plain: checked at once)
//!            b_j = q0·q1,  a_j = q0·p1 + q1·p0                          (each tree's first layer)
//!            N_k = N_{k−1}·b_k ± a_k·D_{k−1},  D_k = D_{k−1}·b_k,  0 = N_{K−1}·b_K ± a_K·D_{K−1}
//!                                       (+ witness trees, − table trees: Σ witness = Σ table)
//!            q_w(r) = Σ_blocks eq(r[n_i..], offset_i)·fold(w_i(r[..n_i]), g_i) + pad(r)·fold(T_0(0), g_0)
//!            q_t(r) = Σ_blocks eq(r[t_g..], offset_g)·fold(T_g(r[..t_g]), g) + pad(r)   (V evaluates T_g)
//!            p_t(r) = Σ_blocks eq(r[t_g..], offset_g)·Σ_{i∈g} m_i + [tree 0]·(witness padding)·eq(r, 0)
//! out        claims w_{i,k}(r_w[..n_i]) and m_i(r_t[..t_g]): the caller discharges them
//!            (openings of the committed columns, or later steps of a layer proof)
//! padding    a witness tree's free leaves are row 0 of the first table block, counted by the
//!            verifier; a table tree's free leaves are 0/1
//! ```
//!
//! The tag keeps the tables of one batch apart: a row of group h's table is not a row of group
//! g's (`fold(v, g) ≠ fold(v, h)` unless γ hits a root fixed before it was drawn). Nothing of
//! the layout is read from the proof: both sides derive it from the statement.
//!
//! **The caller must bind the witness columns and the multiplicities before α and γ are drawn**
//! (commit to them and absorb the commitments, or derive them from tensors so bound): logUp is
//! sound only for a witness fixed before its challenges. A witness chosen after α can satisfy
//! the sum identity with rows outside the table (a one-row witness `w = α − 2/S`, or two rows
//! with `α − fold(row) = 0`, which make `a = b = 0`); the review of 2026-11-26
//! (`a3_degenerate_root_with_an_adaptive_witness`) built both. Hence no `b ≠ 0` check either:
//! for a bound witness the fractional sum-checks tie `b` to the product of the leaves
//! `α − Σ_k γ^k·w_k(x)`, which is 0 only if `α` hits one of `2^n` values fixed in advance
//! (probability `2^n/|F|`; likewise `b'` with `2^t/|F|`), and for an unbound one it would not
//! help. Every caller in `zkmha_attention` (projections, rotations, the softmax, the norm, the
//! MLP's activations) commits its witness columns and multiplicities before the first challenge
//! of its proof — or, for the activation not yet wired into a block, states that its caller
//! must.

use crate::LookupError;
use crate::fraction::{
    FractionLeaves, FractionSumProof, FractionTree, prove_fraction_sums, verify_fraction_sums,
    zk_fraction_schedule,
};
use crate::layout::{BatchLayout, Block, Tree};
use crate::table::LookupTable;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, One, Zero, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_transcript::Transcript;
use zkmha_zk::LinearValue;
use zkmha_zk::mode::{ModeError, ProductMode, Relation};

const LABEL_TABLE: &[u8] = b"lookup/table";
const LABEL_SHAPE: &[u8] = b"lookup/shape";
const LABEL_ALPHA: &[u8] = b"lookup/alpha";
const LABEL_GAMMA: &[u8] = b"lookup/gamma";
const LABEL_ROOTS: &[u8] = b"lookup/roots";
const LABEL_WITNESS_VALUES: &[u8] = b"lookup/witness-values";
const LABEL_RUNNING_SUMS: &[u8] = b"lookup/running-sums";
const LABEL_MULTIPLICITY_VALUES: &[u8] = b"lookup/multiplicity-values";
const STEP_RELATIONS: &str = "lookup relations";

/// A logUp proof of one or several lookups (their fractional sums batched, the trees laid out
/// by `layout::BatchLayout`: one witness tree or one per witness size, a few table trees): `S` a sent value, `P` a layer's sum-of-products proof, `Z` the
/// relations' proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LookupProof<
    S: CanonicalSerialize + CanonicalDeserialize,
    P: CanonicalSerialize + CanonicalDeserialize,
    Z: CanonicalSerialize + CanonicalDeserialize,
> {
    /// The fractional sums: the witness trees, then the table trees.
    pub fractions: FractionSumProof<S, P>,
    /// Per tree, in the same order: its root `a, b` (the fraction `a/b`).
    pub roots: Vec<Vec<S>>,
    /// The running sums `N_k, D_k` of the roots (`N_k/D_k = Σ_{j≤k} ±a_j/b_j`, witness trees
    /// `+`, table trees `−`) for `k = 2, …, K − 1` of `K` trees.
    pub running_sums: Vec<Vec<S>>,
    /// Per lookup, `w_k(r_w)`, one per column.
    pub witness_values: Vec<Vec<S>>,
    /// Per lookup, `m(r_t)`: its multiplicities at its table block's point.
    pub multiplicity_values: Vec<S>,
    /// The roots', running sums' and leaves' relations.
    pub relations: Z,
}

/// A [`LookupProof`] in mode `M`.
pub type LookupProofOf<M> =
    LookupProof<<M as ProductMode>::Sent, <M as ProductMode>::ProductProof, <M as ProductMode>::ZeroProof>;

/// A lookup proof in mode `M` and each lookup's claims as the prover holds them.
pub type ProvedLookups<M> = (LookupProofOf<M>, Vec<LookupClaims<<M as ProductMode>::ProverValue>>);

/// What a lookup leaves to the caller: claims whose values are as the mode holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupClaims<V = Fr> {
    /// `r_w`, where every column's claim is.
    pub witness_point: Vec<Fr>,
    /// `w_k(r_w)`, one per column.
    pub columns: Vec<V>,
    /// `r_t`, the multiplicities' point.
    pub table_point: Vec<Fr>,
    /// `m(r_t)`.
    pub multiplicities: V,
}

/// How often each table row is used by the witness rows.
///
/// # Errors
/// [`LookupError::ValueNotInTable`] for the first row missing from the table,
/// [`LookupError::WrongLength`] for columns of different lengths or the wrong count.
pub fn multiplicities(table: &dyn LookupTable, columns: &[&[i64]]) -> Result<Vec<i64>, LookupError> {
    check_columns(table, columns)?;
    let rows = columns.first().map_or(0, |c| c.len());
    let mut counts = vec![0i64; 1usize << table.num_vars()];
    let mut tuple = vec![0i64; columns.len()];
    for index in 0..rows {
        for (t, column) in tuple.iter_mut().zip(columns) {
            *t = column[index];
        }
        let row = table.index_of(&tuple).ok_or(LookupError::ValueNotInTable {
            table: table.name(),
            index,
            value: tuple.first().copied().unwrap_or(0),
        })?;
        counts[row] += 1;
    }
    Ok(counts)
}

fn check_columns(table: &dyn LookupTable, columns: &[&[i64]]) -> Result<usize, LookupError> {
    if columns.len() != table.num_columns() {
        return Err(LookupError::WrongLength {
            what: "witness columns",
            expected: table.num_columns(),
            got: columns.len(),
        });
    }
    let rows = columns.first().map_or(0, |c| c.len());
    if rows == 0 || !rows.is_power_of_two() || columns.iter().any(|c| c.len() != rows) {
        return Err(LookupError::WrongLength {
            what: "witness rows (equal, 2^n)",
            expected: rows.next_power_of_two().max(1),
            got: rows,
        });
    }
    Ok(rows.trailing_zeros() as usize)
}

/// Absorbs every lookup's statement (table name and shape, witness size), then draws the
/// batch's `(α, γ)`.
fn absorb_statements(lookups: &[(&dyn LookupTable, usize)], transcript: &mut Transcript) -> (Fr, Fr) {
    transcript.append_u64(LABEL_SHAPE, lookups.len() as u64);
    for (table, witness_vars) in lookups {
        transcript.append_bytes(LABEL_TABLE, table.name().as_bytes());
        transcript.append_shape(LABEL_SHAPE, &[table.num_vars(), table.num_columns(), *witness_vars]);
    }
    (transcript.challenge_field(LABEL_ALPHA), transcript.challenge_field(LABEL_GAMMA))
}

/// The batch's fold of a row of group `tag`: `α − Σ_{c<C} γ^c·values[c] − γ^C·tag` (the
/// missing columns of a narrower table read 0).
#[derive(Clone, Copy, Debug)]
struct Fold {
    alpha: Fr,
    gamma: Fr,
    /// `γ^C`.
    tag_power: Fr,
}

impl Fold {
    fn new(alpha: Fr, gamma: Fr, columns: usize) -> Self {
        let tag_power = (0..columns).fold(Fr::one(), |acc, _| acc * gamma);
        Self { alpha, gamma, tag_power }
    }

    fn row(&self, values: &[Fr], tag: usize) -> Fr {
        let mut power = Fr::one();
        let mut acc = self.alpha - self.tag_power * Fr::from(tag as u64);
        for v in values {
            acc -= power * v;
            power *= self.gamma;
        }
        acc
    }

    fn integers(&self, values: &[i64], tag: usize) -> Fr {
        self.row(&values.iter().copied().map(fr_from_i64).collect::<Vec<_>>(), tag)
    }
}

/// # Errors
/// As [`multiplicities`] for bad columns, as [`prove_lookups`] otherwise.
pub fn prove_lookup<M: ProductMode>(
    prover: &mut M::Prover<'_>,
    table: &dyn LookupTable,
    columns: &[&[i64]],
    multiplicities: &[i64],
    transcript: &mut Transcript,
) -> Result<(LookupProofOf<M>, LookupClaims<M::ProverValue>), LookupError> {
    let witness_vars = check_columns(table, columns)?;
    let witness = LookupWitness {
        num_vars: witness_vars,
        entry: &|row: usize, column: usize| columns[column][row],
        evaluate: &|point: &[Fr]| {
            columns
                .iter()
                .map(|column| DenseMultilinearExtension::from_i64(witness_vars, column)?.evaluate(point))
                .collect::<Result<Vec<Fr>, _>>()
                .map_err(LookupError::from)
        },
    };
    let (proof, mut claims) =
        prove_lookups::<M>(prover, &[Lookup { table, witness: &witness, multiplicities }], transcript)?;
    let claims = claims.pop().ok_or(LookupError::MalformedProof("no lookup"))?;
    Ok((proof, claims))
}

/// Every column's MLE at a point (the caller's evaluator for a [`LookupWitness`]).
pub type ColumnEvaluator<'a> = &'a dyn Fn(&[Fr]) -> Result<Vec<Fr>, LookupError>;

/// A witness given by functions instead of materialized columns (for witnesses assembled
/// from other tensors, whose MLEs the caller evaluates more cheaply itself).
pub struct LookupWitness<'a> {
    /// `n`: the witness has `2^n` rows.
    pub num_vars: usize,
    /// Entry `(row, column)`.
    pub entry: &'a (dyn Fn(usize, usize) -> i64 + Sync),
    /// Every column's MLE at a point of `n` coordinates.
    pub evaluate: ColumnEvaluator<'a>,
}

/// One lookup of a batch: the table, the witness and the multiplicities the caller committed to.
pub struct Lookup<'a> {
    /// The table.
    pub table: &'a dyn LookupTable,
    /// The witness.
    pub witness: &'a LookupWitness<'a>,
    /// `m`, one count per table row.
    pub multiplicities: &'a [i64],
}

/// The `(variables, degree)` of the masked sum-checks of a batch of lookups in zero
/// knowledge, in proof order: none for a batch that [`prove_lookups`] refuses (empty, or a
/// witness above [`crate::MAX_WITNESS_VARS`] variables).
pub fn zk_lookup_schedule(lookups: &[(&dyn LookupTable, usize)]) -> Vec<(usize, usize)> {
    let Ok(layout) = BatchLayout::new(lookups) else {
        return Vec::new();
    };
    let depths: Vec<usize> = layout.tree_shapes().iter().map(|(n, _)| *n).collect();
    zk_fraction_schedule(&depths)
}

/// What both sides hold after the fractional sums and the sent values.
struct BatchValues<V> {
    /// Per tree (witness trees, then table trees).
    trees: Vec<FractionTree<V>>,
    /// Per tree, `[a, b]`.
    roots: Vec<Vec<V>>,
    /// `[N_k, D_k]` for `k = 2, …, K − 1`.
    running_sums: Vec<Vec<V>>,
    /// Per lookup, its columns at its witness point.
    witness_values: Vec<Vec<V>>,
    /// Per lookup, `m(r_t)`.
    multiplicity_values: Vec<V>,
}

/// The public numbers of the relations: per group its table's columns at its point, and the
/// pad row (row 0 of the pad group).
struct TableValues {
    columns: Vec<Vec<Fr>>,
    pad_row: Vec<Fr>,
}

/// Each item's tree and block among `trees` (`items` items: lookups for the witness trees,
/// groups for the table trees).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn slots(trees: &[Tree], items: usize) -> Vec<Option<(usize, Block)>> {
    let mut slots = vec![None; items];
    for (t, tree) in trees.iter().enumerate() {
        for block in &tree.blocks {
            if let Some(slot) = slots.get_mut(block.item) {
                *slot = Some((t, *block));
            }
        }
    }
    slots
}

/// The points of a lookup: its witness point and its table point (prefixes of its trees'
/// leaf points).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn lookup_points<V>(
    layout: &BatchLayout,
    trees: &[FractionTree<V>],
    lookup: usize,
    table_vars: usize,
) -> Result<(Vec<Fr>, Vec<Fr>), LookupError> {
    let missing = LookupError::MalformedProof("a lookup outside the layout");
    let (w, block) = slots(&layout.witness_trees, layout.group_of.len())
        .get(lookup)
        .copied()
        .flatten()
        .ok_or(missing.clone())?;
    let group = *layout.group_of.get(lookup).ok_or(missing.clone())?;
    let (t, _) = slots(&layout.table_trees, layout.group_tables.len())
        .get(group)
        .copied()
        .flatten()
        .ok_or(missing.clone())?;
    let witness_tree = trees.get(w).ok_or(missing.clone())?;
    let table_tree = trees.get(layout.witness_trees.len() + t).ok_or(missing.clone())?;
    let witness_point = witness_tree.leaf_point.get(..block.num_vars).ok_or(missing.clone())?.to_vec();
    let table_point = table_tree.leaf_point.get(..table_vars).ok_or(missing)?.to_vec();
    Ok((witness_point, table_point))
}

/// The batch's factors and relations, for either side (module docs: the roots, their running
/// sums to zero, each witness tree's leaf, each table tree's leaf).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn batch_relations<V: LinearValue>(
    layout: &BatchLayout,
    values: &BatchValues<V>,
    fold: &Fold,
    tables: &TableValues,
    constant: &dyn Fn(Fr) -> V,
) -> Result<(Vec<V>, Vec<Relation<V>>), LookupError> {
    let malformed = |what| LookupError::MalformedProof(what);
    let tree_count = values.trees.len();
    if values.roots.len() != tree_count || values.running_sums.len() != tree_count.saturating_sub(2) {
        return Err(malformed("one root per tree and K − 2 running sums"));
    }
    let mut factors = Vec::new();
    let mut relations = Vec::new();
    // The roots: b = q0·q1, a = q0·p1 + q1·p0.
    let mut roots = Vec::with_capacity(tree_count);
    for (tree, root) in values.trees.iter().zip(&values.roots) {
        let [p0, p1, q0, q1] = &tree.first_layer;
        let [a, b] = root.as_slice() else {
            return Err(malformed("two values per root"));
        };
        let at = factors.len();
        factors.extend([q0.clone(), q1.clone()]);
        relations.push((b.clone(), vec![(at, q1.clone())]));
        relations.push((a.clone(), vec![(at, p1.clone()), (at + 1, p0.clone())]));
        roots.push((a.clone(), b.clone()));
    }
    // Σ_witness a/b − Σ_table a/b = 0, one tree at a time.
    let sign = |k: usize| if k < layout.witness_trees.len() { Fr::one() } else { -Fr::one() };
    let ((a, b), rest) = roots.split_first().ok_or(malformed("no tree"))?;
    let (mut numerator, mut denominator) = (a.clone(), b.clone());
    for (k, (a, b)) in rest.iter().enumerate().map(|(k, r)| (k + 1, r)) {
        let at = factors.len();
        factors.extend([numerator.clone(), denominator.clone()]);
        let terms = vec![(at, b.clone()), (at + 1, a.times(sign(k)))];
        if k + 1 == tree_count {
            relations.push((constant(Fr::zero()), terms));
        } else {
            let [n, d] = values.running_sums.get(k - 1).map(Vec::as_slice).unwrap_or_default() else {
                return Err(malformed("two values per running sum"));
            };
            relations.push((n.clone(), terms));
            relations.push((d.clone(), vec![(at + 1, b.clone())]));
            (numerator, denominator) = (n.clone(), d.clone());
        }
    }
    // Each witness tree's leaf: q(r) = Σ_blocks ω·fold(w_i(r[..n_i]), g_i) + pad·fold(pad row).
    let (witness_trees, table_trees) = values.trees.split_at(layout.witness_trees.len());
    let pad_fold = fold.row(&tables.pad_row, layout.pad_group());
    for (tree, result) in layout.witness_trees.iter().zip(witness_trees) {
        let point = &result.leaf_point;
        let mut known = tree.padding_weight(point) * pad_fold;
        let mut leaf = result.leaf_denominator.clone();
        for block in &tree.blocks {
            let weight = tree.block_weight(block, point);
            let group = *layout.group_of.get(block.item).ok_or(malformed("a lookup outside the layout"))?;
            let columns = values.witness_values.get(block.item).ok_or(malformed("witness values"))?;
            known += weight * (fold.alpha - fold.tag_power * Fr::from(group as u64));
            let mut power = weight;
            for column in columns {
                leaf = leaf.plus_scaled(power, column);
                power *= fold.gamma;
            }
        }
        relations.push((leaf.plus_scaled(-Fr::one(), &constant(known)), Vec::new()));
    }
    // Each table tree's leaf: q(r) = Σ_blocks ω·fold(T_g(r[..t_g]), g) + pad·1 (public), and
    // p(r) = Σ_blocks ω·Σ_{i∈g} m_i(r[..t_g]) (+ the witness padding's count at leaf 0 of tree 0).
    for (index, (tree, result)) in layout.table_trees.iter().zip(table_trees).enumerate() {
        let point = &result.leaf_point;
        let mut denominator = tree.padding_weight(point);
        let mut numerator = result.leaf_numerator.clone();
        if index == 0 {
            let at_zero = point.iter().fold(Fr::one(), |acc, r| acc * (Fr::one() - r));
            let count = Fr::from(layout.witness_padding() as u64) * at_zero;
            numerator = numerator.plus_scaled(-Fr::one(), &constant(count));
        }
        for block in &tree.blocks {
            let weight = tree.block_weight(block, point);
            let columns = tables.columns.get(block.item).ok_or(malformed("table values"))?;
            denominator += weight * fold.row(columns, block.item);
            for member in layout.members(block.item) {
                let m = values.multiplicity_values.get(member).ok_or(malformed("multiplicity values"))?;
                numerator = numerator.plus_scaled(-weight, m);
            }
        }
        relations.push((result.leaf_denominator.plus_scaled(-Fr::one(), &constant(denominator)), Vec::new()));
        relations.push((numerator, Vec::new()));
    }
    Ok((factors, relations))
}

/// The relations' error: a plain relation that does not hold is a lookup that fails.
fn relations_error(error: ModeError) -> LookupError {
    match error {
        ModeError::CheckFailed { .. } => LookupError::RelationMismatch,
        other => other.into(),
    }
}

/// Each group's table's columns at its table point (the verifier's own evaluation).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn table_values<V>(
    layout: &BatchLayout,
    tables: &[&dyn LookupTable],
    trees: &[FractionTree<V>],
) -> Result<TableValues, LookupError> {
    let mut columns = Vec::with_capacity(layout.group_tables.len());
    for (group, &first) in layout.group_tables.iter().enumerate() {
        let table = tables.get(first).ok_or(LookupError::MalformedProof("a group without its table"))?;
        let point =
            lookup_points(layout, trees, layout.members(group).next().unwrap_or(first), table.num_vars())?.1;
        columns.push(table.evaluate_columns(&point)?);
    }
    let pad_table = layout
        .group_tables
        .get(layout.pad_group())
        .and_then(|&first| tables.get(first))
        .ok_or(LookupError::MalformedProof("a group without its table"))?;
    let pad_row = pad_table.row(0).into_iter().map(fr_from_i64).collect();
    Ok(TableValues { columns, pad_row })
}

/// Proves several lookups in mode `M` with one batched fractional-sum proof (`layout::BatchLayout`:
/// the witnesses in one tree or one per size, every table of the batch in a few table trees, told
/// apart by a tag) and one relations proof. Returns one [`LookupClaims`] per
/// lookup, in order.
///
/// # Errors
/// [`LookupError::WrongLength`] for multiplicities of another size or witness values of
/// another count, [`LookupError::ZeroDenominator`] when a challenge hits a table row, whatever
/// an `evaluate` returns, and the mode's errors.
pub fn prove_lookups<M: ProductMode>(
    prover: &mut M::Prover<'_>,
    lookups: &[Lookup<'_>],
    transcript: &mut Transcript,
) -> Result<ProvedLookups<M>, LookupError> {
    for lookup in lookups {
        if lookup.multiplicities.len() != 1usize << lookup.table.num_vars() {
            return Err(LookupError::WrongLength {
                what: "multiplicities",
                expected: 1usize << lookup.table.num_vars(),
                got: lookup.multiplicities.len(),
            });
        }
    }
    let statements: Vec<(&dyn LookupTable, usize)> =
        lookups.iter().map(|l| (l.table, l.witness.num_vars)).collect();
    let layout = BatchLayout::new(&statements)?;
    let (alpha, gamma) = absorb_statements(&statements, transcript);
    let fold = Fold::new(alpha, gamma, layout.columns);
    let leaves = batch_trees(lookups, &layout, &fold)?;
    let (fractions, trees) = prove_fraction_sums::<M>(prover, leaves, transcript)?;

    let mut roots = Vec::with_capacity(trees.len());
    let mut held_roots = Vec::with_capacity(trees.len());
    let clear_roots: Vec<(Fr, Fr)> = trees
        .iter()
        .map(|t| {
            let [p0, p1, q0, q1] = t.first_layer.each_ref().map(M::clear);
            (p0 * q1 + p1 * q0, q0 * q1)
        })
        .collect();
    for &(a, b) in &clear_roots {
        let (sent, held) = M::send(prover, LABEL_ROOTS, &[a, b], transcript);
        roots.push(sent);
        held_roots.push(held);
    }
    let mut running_sums = Vec::new();
    let mut held_running = Vec::new();
    let witness_trees = layout.witness_trees.len();
    if let Some((&(mut n, mut d), rest)) = clear_roots.split_first() {
        for (k, &(a, b)) in rest.iter().enumerate().take(clear_roots.len().saturating_sub(2)) {
            let sign = if k + 1 < witness_trees { Fr::one() } else { -Fr::one() };
            (n, d) = (n * b + sign * a * d, d * b);
            let (sent, held) = M::send(prover, LABEL_RUNNING_SUMS, &[n, d], transcript);
            running_sums.push(sent);
            held_running.push(held);
        }
    }
    let mut witness_values = Vec::with_capacity(lookups.len());
    let mut held_columns = Vec::with_capacity(lookups.len());
    let mut multiplicity_values = Vec::with_capacity(lookups.len());
    let mut held_multiplicities = Vec::with_capacity(lookups.len());
    let mut points = Vec::with_capacity(lookups.len());
    for (index, lookup) in lookups.iter().enumerate() {
        let (witness_point, table_point) = lookup_points(&layout, &trees, index, lookup.table.num_vars())?;
        let values = (lookup.witness.evaluate)(&witness_point)?;
        if values.len() != lookup.table.num_columns() {
            return Err(LookupError::WrongLength {
                what: "witness values",
                expected: lookup.table.num_columns(),
                got: values.len(),
            });
        }
        let (sent, held) = M::send(prover, LABEL_WITNESS_VALUES, &values, transcript);
        witness_values.push(sent);
        held_columns.push(held);
        let m = DenseMultilinearExtension::from_i64(lookup.table.num_vars(), lookup.multiplicities)?
            .evaluate(&table_point)?;
        let (mut sent, mut held) = M::send(prover, LABEL_MULTIPLICITY_VALUES, &[m], transcript);
        let (Some(sent), Some(held)) = (sent.pop(), held.pop()) else {
            return Err(LookupError::MalformedProof("one multiplicity value"));
        };
        multiplicity_values.push(sent);
        held_multiplicities.push(held);
        points.push((witness_point, table_point));
    }
    let tables: Vec<&dyn LookupTable> = lookups.iter().map(|l| l.table).collect();
    let table_numbers = table_values(&layout, &tables, &trees)?;
    let values = BatchValues {
        trees,
        roots: held_roots,
        running_sums: held_running,
        witness_values: held_columns,
        multiplicity_values: held_multiplicities,
    };
    let (factors, relations) = {
        let constant = |c: Fr| M::prover_constant(prover, c);
        batch_relations(&layout, &values, &fold, &table_numbers, &constant)?
    };
    let relations = M::prove_relations(prover, STEP_RELATIONS, factors, relations, transcript)?;
    let claims = points
        .into_iter()
        .zip(values.witness_values.into_iter().zip(values.multiplicity_values))
        .map(|((witness_point, table_point), (columns, multiplicities))| LookupClaims {
            witness_point,
            columns,
            table_point,
            multiplicities,
        })
        .collect();
    let proof =
        LookupProof { fractions, roots, running_sums, witness_values, multiplicity_values, relations };
    Ok((proof, claims))
}

/// The batch's trees (`layout::BatchLayout`): the witness trees' leaves are indices into the
/// tables' folded rows, one dictionary shared by every witness tree (4 bytes a leaf, no
/// multiplication); a witness row outside its table (only a cheating prover's) is folded and
/// appended to that tree's own copy. The table trees hold
/// each group's folded rows and its lookups' multiplicities added.
fn batch_trees(
    lookups: &[Lookup<'_>],
    layout: &BatchLayout,
    fold: &Fold,
) -> Result<Vec<FractionLeaves>, LookupError> {
    let too_many = || LookupError::MalformedProof("too many rows");
    // Each group's folded rows, one after another (the dictionary), and where each starts.
    let mut dictionary = Vec::new();
    let mut starts = Vec::with_capacity(layout.group_tables.len());
    for (group, &first) in layout.group_tables.iter().enumerate() {
        let table = lookups.get(first).ok_or(too_many())?.table;
        starts.push(dictionary.len());
        let rows: Vec<Fr> = (0..1usize << table.num_vars())
            .into_par_iter()
            .with_min_len(1024)
            .map(|y| fold.integers(&table.row(y), group))
            .collect();
        dictionary.extend(rows);
    }
    let pad_index = starts.get(layout.pad_group()).copied().ok_or(too_many())?;
    let pad_index = u32::try_from(pad_index).map_err(|_| too_many())?;
    if dictionary.par_iter().any(Zero::is_zero) {
        return Err(LookupError::ZeroDenominator);
    }
    // One dictionary for every witness tree; a tree with rows outside its table (only a
    // cheating prover's) gets a copy with them appended.
    let shared = std::sync::Arc::new(dictionary);
    let mut trees = Vec::with_capacity(layout.witness_trees.len() + layout.table_trees.len());
    for tree in &layout.witness_trees {
        let mut indices = vec![pad_index; 1usize << tree.num_vars];
        let mut own = std::sync::Arc::clone(&shared);
        for block in &tree.blocks {
            let lookup = lookups.get(block.item).ok_or(too_many())?;
            let group = *layout.group_of.get(block.item).ok_or(too_many())?;
            let start = *starts.get(group).ok_or(too_many())?;
            let (table, witness) = (lookup.table, lookup.witness);
            let columns = table.num_columns();
            let slots =
                indices.get_mut(block.offset..block.offset + (1usize << block.num_vars)).ok_or(too_many())?;
            slots.par_iter_mut().with_min_len(1024).enumerate().for_each_init(
                || vec![0i64; columns],
                |tuple, (row, slot)| {
                    for (column, value) in tuple.iter_mut().enumerate() {
                        *value = (witness.entry)(row, column);
                    }
                    *slot =
                        table.index_of(tuple).and_then(|y| u32::try_from(start + y).ok()).unwrap_or(u32::MAX);
                },
            );
            for (row, slot) in slots.iter_mut().enumerate().filter(|(_, slot)| **slot == u32::MAX) {
                let tuple: Vec<i64> = (0..columns).map(|column| (witness.entry)(row, column)).collect();
                let folded = fold.integers(&tuple, group);
                if folded.is_zero() {
                    return Err(LookupError::ZeroDenominator);
                }
                let own = std::sync::Arc::make_mut(&mut own);
                *slot = u32::try_from(own.len()).map_err(|_| too_many())?;
                own.push(folded);
            }
        }
        trees.push(FractionLeaves::Indexed { dictionary: own, indices });
    }
    for (index, tree) in layout.table_trees.iter().enumerate() {
        let size = 1usize << tree.num_vars;
        let mut counts = vec![0i64; size];
        let mut denominators = vec![Fr::one(); size];
        for block in &tree.blocks {
            let start = *starts.get(block.item).ok_or(too_many())?;
            let rows = 1usize << block.num_vars;
            let folded = shared.get(start..start + rows).ok_or(too_many())?;
            denominators
                .get_mut(block.offset..block.offset + rows)
                .ok_or(too_many())?
                .copy_from_slice(folded);
            let slots = counts.get_mut(block.offset..block.offset + rows).ok_or(too_many())?;
            for member in layout.members(block.item) {
                let m = lookups.get(member).ok_or(too_many())?.multiplicities;
                for (slot, &count) in slots.iter_mut().zip(m) {
                    *slot += count;
                }
            }
        }
        if index == 0
            && let Some(first) = counts.first_mut()
        {
            *first += i64::try_from(layout.witness_padding()).map_err(|_| too_many())?;
        }
        let numerators = counts.into_par_iter().with_min_len(4096).map(fr_from_i64).collect();
        trees.push(FractionLeaves::Dense { numerators: Some(numerators), denominators });
    }
    Ok(trees)
}

/// Verifies a [`LookupProof`] of one lookup for a witness of `2^witness_vars` rows.
///
/// # Errors
/// As [`verify_lookups`].
pub fn verify_lookup<M: ProductMode>(
    verifier: &mut M::Verifier<'_>,
    table: &dyn LookupTable,
    witness_vars: usize,
    proof: &LookupProofOf<M>,
    transcript: &mut Transcript,
) -> Result<LookupClaims<M::Value>, LookupError> {
    verify_lookups::<M>(verifier, &[(table, witness_vars)], proof, transcript)?
        .pop()
        .ok_or(LookupError::MalformedProof("no lookup"))
}

/// Verifies lookups proved with [`prove_lookups`]; `lookups` gives each table and its
/// witness size `2^witness_vars`. The transcript must already bind the witness columns and the
/// multiplicities (their commitments absorbed; see the module's notes). Returns one
/// [`LookupClaims`] per lookup, which the caller must discharge (in zero knowledge the group
/// equations are left in the verifier's deferred checks, where a false lookup fails).
///
/// # Errors
/// [`LookupError::RelationMismatch`] (plain: a row outside the table, wrong multiplicities,
/// witness values that do not match the leaf), [`LookupError::MalformedProof`] for wrong
/// counts, [`LookupError::InvalidTable`] for an empty batch or a witness above
/// [`crate::MAX_WITNESS_VARS`] variables, the fractional sums' errors and the mode's.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookups<M: ProductMode>(
    verifier: &mut M::Verifier<'_>,
    lookups: &[(&dyn LookupTable, usize)],
    proof: &LookupProofOf<M>,
    transcript: &mut Transcript,
) -> Result<Vec<LookupClaims<M::Value>>, LookupError> {
    let layout = BatchLayout::new(lookups)?;
    let tree_count = layout.witness_trees.len() + layout.table_trees.len();
    if proof.roots.len() != tree_count
        || proof.roots.iter().any(|r| r.len() != 2)
        || proof.running_sums.len() != tree_count.saturating_sub(2)
        || proof.running_sums.iter().any(|r| r.len() != 2)
        || proof.witness_values.len() != lookups.len()
        || proof.witness_values.iter().zip(lookups).any(|(v, (table, _))| v.len() != table.num_columns())
        || proof.multiplicity_values.len() != lookups.len()
    {
        return Err(LookupError::MalformedProof(
            "two values per root and running sum, one value per column and one multiplicity per lookup",
        ));
    }
    let (alpha, gamma) = absorb_statements(lookups, transcript);
    let fold = Fold::new(alpha, gamma, layout.columns);
    let trees = verify_fraction_sums::<M>(verifier, &layout.tree_shapes(), &proof.fractions, transcript)?;
    let roots: Vec<Vec<M::Value>> =
        proof.roots.iter().map(|sent| M::receive(verifier, LABEL_ROOTS, sent, transcript)).collect();
    let running_sums: Vec<Vec<M::Value>> = proof
        .running_sums
        .iter()
        .map(|sent| M::receive(verifier, LABEL_RUNNING_SUMS, sent, transcript))
        .collect();
    let mut witness_values = Vec::with_capacity(lookups.len());
    let mut multiplicity_values = Vec::with_capacity(lookups.len());
    for (columns, m) in proof.witness_values.iter().zip(&proof.multiplicity_values) {
        witness_values.push(M::receive(verifier, LABEL_WITNESS_VALUES, columns, transcript));
        let mut held = M::receive(verifier, LABEL_MULTIPLICITY_VALUES, std::slice::from_ref(m), transcript);
        multiplicity_values.push(held.pop().ok_or(LookupError::MalformedProof("one multiplicity value"))?);
    }
    let tables: Vec<&dyn LookupTable> = lookups.iter().map(|(table, _)| *table).collect();
    let table_numbers = table_values(&layout, &tables, &trees)?;
    let mut points = Vec::with_capacity(lookups.len());
    for (index, (table, _)) in lookups.iter().enumerate() {
        points.push(lookup_points(&layout, &trees, index, table.num_vars())?);
    }
    let values = BatchValues { trees, roots, running_sums, witness_values, multiplicity_values };
    let (factors, relations) = {
        let constant = |c: Fr| M::verifier_constant(verifier, c);
        batch_relations(&layout, &values, &fold, &table_numbers, &constant)?
    };
    M::verify_relations(verifier, STEP_RELATIONS, factors, relations, &proof.relations, transcript)
        .map_err(relations_error)?;
    Ok(points
        .into_iter()
        .zip(values.witness_values.into_iter().zip(values.multiplicity_values))
        .map(|((witness_point, table_point), (columns, multiplicities))| LookupClaims {
            witness_point,
            columns,
            table_point,
            multiplicities,
        })
        .collect())
}
