//! The logUp lookup: every row of the witness columns is a row of a public table, in either
//! mode (plain values, or committed values in zero knowledge: `zkmha_zk::mode`).
//!
//! ```text
//! statement  the table (name, t, c), the witness size n; commitments to the witness columns
//!            and to m are absorbed by the caller before this protocol starts
//! challenges α, γ
//! witness    Σ_x 1/(α − Σ_k γ^k·w_k(x))       GKR fractional sum, unit leaves   → root a/b, leaf r_w
//! table      Σ_y m(y)/(α − Σ_k γ^k·T_k(y))    GKR fractional sum                → root a'/b', leaf r_t
//! P → V      per lookup a, b, a', b' and w_k(r_w) per column (sent: in the clear or committed)
//! relations  (one M::prove_relations for the whole batch; plain: checked at once)
//!            b = q0·q1,  a = q0·p1 + q1·p0,  b' = q0'·q1',  a' = q0'·p1' + q1'·p0'
//!            0 = a·b' − c·a'·b                      (c = 2 for a one-row witness: two copies)
//!            q(r_w) − α + Σ_k γ^k·w_k(r_w) = 0      (witness leaf, unit numerators)
//!            q'(r_t) − (α − Σ_k γ^k·T_k(r_t)) = 0   (table leaf: V evaluates T_k itself)
//! out        claims w_k(r_w) and m(r_t) = p'(r_t): the caller discharges them (openings of
//!            the committed columns, or later steps of a layer proof)
//! one row    a witness of one row (n = 0) is proved as two copies of it and its claims sit at
//!            the empty point
//! batch      several lookups absorb all their statements, then draw (α, γ) each; their
//!            2 per lookup fraction trees run as one batch (`fraction::prove_fraction_sums`)
//! ```
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
const STEP_RELATIONS: &str = "lookup relations";

/// A logUp proof of one or several lookups (their fractional sums batched): `S` a sent value,
/// `P` a layer's sum-of-products proof, `Z` the relations' proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LookupProof<
    S: CanonicalSerialize + CanonicalDeserialize,
    P: CanonicalSerialize + CanonicalDeserialize,
    Z: CanonicalSerialize + CanonicalDeserialize,
> {
    /// The fractional sums, trees in the order witness 1, table 1, witness 2, table 2, ….
    pub fractions: FractionSumProof<S, P>,
    /// Per lookup: `a, b, a', b'` (the roots `a/b`, `a'/b'`).
    pub roots: Vec<Vec<S>>,
    /// Per lookup, `w_k(r_w)`, one per column.
    pub witness_values: Vec<Vec<S>>,
    /// The roots' and leaves' relations.
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

/// Absorbs every lookup's statement (table name and shape, witness size), then draws
/// `(α, γ)` per lookup.
pub(crate) fn absorb_statements(
    lookups: &[(&dyn LookupTable, usize)],
    transcript: &mut Transcript,
) -> Vec<(Fr, Fr)> {
    transcript.append_u64(LABEL_SHAPE, lookups.len() as u64);
    for (table, witness_vars) in lookups {
        transcript.append_bytes(LABEL_TABLE, table.name().as_bytes());
        transcript.append_shape(LABEL_SHAPE, &[table.num_vars(), table.num_columns(), *witness_vars]);
    }
    lookups
        .iter()
        .map(|_| (transcript.challenge_field(LABEL_ALPHA), transcript.challenge_field(LABEL_GAMMA)))
        .collect()
}

/// `α − Σ_k γ^k·values[k]`.
pub(crate) fn fold(alpha: Fr, gamma: Fr, values: &[Fr]) -> Fr {
    let mut power = Fr::from(1u64);
    let mut acc = alpha;
    for v in values {
        acc -= power * v;
        power *= gamma;
    }
    acc
}

/// Proves in mode `M` that every row of `columns` is a row of `table`, given the
/// `multiplicities` the caller committed to (from [`multiplicities`]).
///
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

/// The trees' `(num_vars, unit)` of a batch of lookups.
fn tree_shapes(lookups: &[(&dyn LookupTable, usize)]) -> Vec<(usize, bool)> {
    lookups
        .iter()
        .flat_map(|(table, witness_vars)| [((*witness_vars).max(1), true), (table.num_vars(), false)])
        .collect()
}

/// The `(variables, degree)` of the masked sum-checks of a batch of lookups in zero
/// knowledge, in proof order.
pub fn zk_lookup_schedule(lookups: &[(&dyn LookupTable, usize)]) -> Vec<(usize, usize)> {
    let depths: Vec<usize> = tree_shapes(lookups).iter().map(|(n, _)| *n).collect();
    zk_fraction_schedule(&depths)
}

/// One lookup's factors and relations, for either side: `roots = [a, b, a', b']`, `values`
/// the columns' values at `r_w`, `table_value` the public `α − Σ γ^k·T_k(r_t)` (as a value),
/// `alpha` the constant `α` (as a value). Factors (in order): `q0, q1, q0', q1', a, a'` from
/// `offset` on.
#[allow(clippy::too_many_arguments)]
fn lookup_relations<V: LinearValue>(
    witness: &FractionTree<V>,
    table: &FractionTree<V>,
    roots: &[V],
    values: &[V],
    gamma: Fr,
    (alpha, table_value, zero): (&V, &V, &V),
    copies: Fr,
    offset: usize,
) -> Result<(Vec<V>, Vec<Relation<V>>), LookupError> {
    let [p0, p1, q0, q1] = &witness.first_layer;
    let [t_p0, t_p1, t_q0, t_q1] = &table.first_layer;
    let [a, b, t_a, t_b] = roots else {
        return Err(LookupError::MalformedProof("four roots per lookup"));
    };
    let factors = vec![q0.clone(), q1.clone(), t_q0.clone(), t_q1.clone(), a.clone(), t_a.clone()];
    let mut leaf = witness.leaf_denominator.plus_scaled(-Fr::one(), alpha);
    let mut power = Fr::one();
    for value in values {
        leaf = leaf.plus_scaled(power, value);
        power *= gamma;
    }
    let table_leaf = table.leaf_denominator.plus_scaled(-Fr::one(), table_value);
    let relations = vec![
        (b.clone(), vec![(offset, q1.clone())]),
        (a.clone(), vec![(offset, p1.clone()), (offset + 1, p0.clone())]),
        (t_b.clone(), vec![(offset + 2, t_q1.clone())]),
        (t_a.clone(), vec![(offset + 2, t_p1.clone()), (offset + 3, t_p0.clone())]),
        (zero.clone(), vec![(offset + 4, t_b.clone()), (offset + 5, b.times(-copies))]),
        (leaf, Vec::new()),
        (table_leaf, Vec::new()),
    ];
    Ok((factors, relations))
}

/// The relations' error: a plain relation that does not hold is a lookup that fails.
fn relations_error(error: ModeError) -> LookupError {
    match error {
        ModeError::CheckFailed { .. } => LookupError::RelationMismatch,
        other => other.into(),
    }
}

/// Proves several lookups in mode `M` with one batched fractional-sum proof (one sum of
/// products per tree depth for all of them) and one relations proof. Returns one
/// [`LookupClaims`] per lookup, in order.
///
/// # Errors
/// [`LookupError::WrongLength`] for multiplicities of another size,
/// [`LookupError::ZeroDenominator`] when a challenge hits a table row, whatever an `evaluate`
/// returns, and the mode's errors.
pub fn prove_lookups<M: ProductMode>(
    prover: &mut M::Prover<'_>,
    lookups: &[Lookup<'_>],
    transcript: &mut Transcript,
) -> Result<ProvedLookups<M>, LookupError> {
    let challenges = start_lookups(lookups, transcript)?;
    let trees: Vec<FractionLeaves> = lookup_trees(lookups, &challenges)?;
    let (fractions, results) = prove_fraction_sums::<M>(prover, trees, transcript)?;
    // The roots' values and the columns' values at r_w, in the clear (the prover's).
    let mut root_values = Vec::with_capacity(4 * lookups.len());
    let mut column_values = Vec::with_capacity(lookups.len());
    for (lookup, pair) in lookups.iter().zip(results.chunks(2)) {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let root = |t: &FractionTree<M::ProverValue>| {
            let [p0, p1, q0, q1] = t.first_layer.each_ref().map(M::clear);
            (p0 * q1 + p1 * q0, q0 * q1)
        };
        let ((a, b), (t_a, t_b)) = (root(witness), root(table));
        root_values.push(vec![a, b, t_a, t_b]);
        let witness_point = witness.leaf_point.get(..lookup.witness.num_vars).unwrap_or_default().to_vec();
        let values = (lookup.witness.evaluate)(&witness_point)?;
        if values.len() != lookup.table.num_columns() {
            return Err(LookupError::WrongLength {
                what: "witness values",
                expected: lookup.table.num_columns(),
                got: values.len(),
            });
        }
        column_values.push((witness_point, values));
    }
    let mut roots = Vec::with_capacity(lookups.len());
    let mut held_roots = Vec::with_capacity(lookups.len());
    for values in &root_values {
        let (sent, held) = M::send(prover, LABEL_ROOTS, values, transcript);
        roots.push(sent);
        held_roots.push(held);
    }
    let mut witness_values = Vec::with_capacity(lookups.len());
    let mut held_columns = Vec::with_capacity(lookups.len());
    for (point, values) in column_values {
        let (sent, held) = M::send(prover, LABEL_WITNESS_VALUES, &values, transcript);
        witness_values.push(sent);
        held_columns.push((point, held));
    }
    let zero = M::prover_constant(prover, Fr::zero());
    let mut factors = Vec::new();
    let mut relations = Vec::new();
    let mut claims = Vec::with_capacity(lookups.len());
    for (((lookup, pair), roots), ((witness_point, values), &(alpha, gamma))) in
        lookups.iter().zip(results.chunks(2)).zip(&held_roots).zip(held_columns.into_iter().zip(&challenges))
    {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let table_value = fold(alpha, gamma, &lookup.table.evaluate_columns(&table.leaf_point)?);
        let constants = (&M::prover_constant(prover, alpha), &M::prover_constant(prover, table_value), &zero);
        let copies = Fr::from(if lookup.witness.num_vars == 0 { 2u64 } else { 1 });
        let (f, r) =
            lookup_relations(witness, table, roots, &values, gamma, constants, copies, factors.len())?;
        factors.extend(f);
        relations.extend(r);
        claims.push(LookupClaims {
            witness_point,
            columns: values,
            table_point: table.leaf_point.clone(),
            multiplicities: table.leaf_numerator.clone(),
        });
    }
    let relations = M::prove_relations(prover, STEP_RELATIONS, factors, relations, transcript)?;
    Ok((LookupProof { fractions, roots, witness_values, relations }, claims))
}

/// Checks the multiplicities' sizes, absorbs the statements and draws `(α, γ)` per lookup.
pub(crate) fn start_lookups(
    lookups: &[Lookup<'_>],
    transcript: &mut Transcript,
) -> Result<Vec<(Fr, Fr)>, LookupError> {
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
    Ok(absorb_statements(&statements, transcript))
}

/// The two fraction trees of each lookup (witness, then table): a witness row that is a table
/// row has that row's denominator, so the witness leaves are indices into the table's
/// denominators (4 bytes a leaf, no multiplication); any other row (only a cheating prover's)
/// is folded and appended to the dictionary. A one-row witness is proved as two copies of its
/// row.
pub(crate) fn lookup_trees(
    lookups: &[Lookup<'_>],
    challenges: &[(Fr, Fr)],
) -> Result<Vec<FractionLeaves>, LookupError> {
    let mut trees = Vec::with_capacity(2 * lookups.len());
    for (lookup, &(alpha, gamma)) in lookups.iter().zip(challenges) {
        let (table, witness) = (lookup.table, lookup.witness);
        let rows = 1usize << witness.num_vars;
        let columns = table.num_columns();
        let table_denominators: Vec<Fr> = (0..lookup.multiplicities.len())
            .into_par_iter()
            .with_min_len(1024)
            .map(|y| fold(alpha, gamma, &table.row(y).into_iter().map(fr_from_i64).collect::<Vec<_>>()))
            .collect();
        let entries = rows.max(2);
        let tuple_of =
            |i: usize| -> Vec<i64> { (0..columns).map(|column| (witness.entry)(i % rows, column)).collect() };
        let mut indices: Vec<u32> = (0..entries)
            .into_par_iter()
            .with_min_len(1024)
            .map_init(
                || vec![0i64; columns],
                |tuple, i| {
                    for (column, value) in tuple.iter_mut().enumerate() {
                        *value = (witness.entry)(i % rows, column);
                    }
                    table.index_of(tuple).and_then(|y| u32::try_from(y).ok()).unwrap_or(u32::MAX)
                },
            )
            .collect();
        let mut dictionary = table_denominators.clone();
        for (i, index) in indices.iter_mut().enumerate().filter(|(_, index)| **index == u32::MAX) {
            let tuple: Vec<Fr> = tuple_of(i).into_iter().map(fr_from_i64).collect();
            *index =
                u32::try_from(dictionary.len()).map_err(|_| LookupError::MalformedProof("too many rows"))?;
            dictionary.push(fold(alpha, gamma, &tuple));
        }
        if dictionary.par_iter().any(Zero::is_zero) {
            return Err(LookupError::ZeroDenominator);
        }
        let counts: Vec<Fr> = lookup.multiplicities.iter().map(|&m| fr_from_i64(m)).collect();
        trees.push(FractionLeaves::Indexed { dictionary, indices });
        trees.push(FractionLeaves::Dense { numerators: Some(counts), denominators: table_denominators });
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
/// [`LookupClaims`] per lookup, which the caller must discharge (in zero knowledge the group equations are left in the verifier's deferred
/// checks, where a false lookup fails).
///
/// # Errors
/// [`LookupError::RelationMismatch`] (plain: a row outside the table, wrong multiplicities,
/// witness values that do not match the leaf), [`LookupError::MalformedProof`] for wrong
/// counts, the fractional sums' errors and the mode's.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookups<M: ProductMode>(
    verifier: &mut M::Verifier<'_>,
    lookups: &[(&dyn LookupTable, usize)],
    proof: &LookupProofOf<M>,
    transcript: &mut Transcript,
) -> Result<Vec<LookupClaims<M::Value>>, LookupError> {
    if proof.roots.len() != lookups.len()
        || proof.roots.iter().any(|r| r.len() != 4)
        || proof.witness_values.len() != lookups.len()
        || proof.witness_values.iter().zip(lookups).any(|(v, (table, _))| v.len() != table.num_columns())
    {
        return Err(LookupError::MalformedProof("four roots and one value per column for each lookup"));
    }
    let challenges = absorb_statements(lookups, transcript);
    let results = verify_fraction_sums::<M>(verifier, &tree_shapes(lookups), &proof.fractions, transcript)?;
    let roots: Vec<Vec<M::Value>> =
        proof.roots.iter().map(|sent| M::receive(verifier, LABEL_ROOTS, sent, transcript)).collect();
    let values: Vec<Vec<M::Value>> = proof
        .witness_values
        .iter()
        .map(|sent| M::receive(verifier, LABEL_WITNESS_VALUES, sent, transcript))
        .collect();
    let zero = M::verifier_constant(verifier, Fr::zero());
    let mut factors = Vec::new();
    let mut relations = Vec::new();
    let mut claims = Vec::with_capacity(lookups.len());
    for ((((table_def, witness_vars), pair), (roots, values)), &(alpha, gamma)) in
        lookups.iter().zip(results.chunks(2)).zip(roots.iter().zip(values)).zip(&challenges)
    {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let table_value = fold(alpha, gamma, &table_def.evaluate_columns(&table.leaf_point)?);
        let constants =
            (&M::verifier_constant(verifier, alpha), &M::verifier_constant(verifier, table_value), &zero);
        let copies = Fr::from(if *witness_vars == 0 { 2u64 } else { 1 });
        let (f, r) =
            lookup_relations(witness, table, roots, &values, gamma, constants, copies, factors.len())?;
        factors.extend(f);
        relations.extend(r);
        claims.push(LookupClaims {
            witness_point: witness.leaf_point.get(..*witness_vars).unwrap_or_default().to_vec(),
            columns: values,
            table_point: table.leaf_point.clone(),
            multiplicities: table.leaf_numerator.clone(),
        });
    }
    M::verify_relations(verifier, STEP_RELATIONS, factors, relations, &proof.relations, transcript)
        .map_err(relations_error)?;
    Ok(claims)
}
