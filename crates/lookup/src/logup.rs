//! The logUp lookup: every row of the witness columns is a row of a public table.
//!
//! ```text
//! statement  the table (name, t, c), the witness size n; commitments to the witness columns
//!            and to m are absorbed by the caller before this protocol starts
//! challenges α, γ
//! witness    Σ_x 1/(α − Σ_k γ^k·w_k(x))       GKR fractional sum, unit leaves   → root a/b, leaf r_w
//! table      Σ_y m(y)/(α − Σ_k γ^k·T_k(y))    GKR fractional sum                → root a'/b', leaf r_t
//! check      a·b' = a'·b, b ≠ 0 ≠ b'
//!            leaf r_w: P sends w_k(r_w); V checks α − Σ_k γ^k·w_k(r_w) = q(r_w)
//!            leaf r_t: V evaluates T_k(r_t) itself and checks α − Σ_k γ^k·T_k(r_t) = q'(r_t)
//! out        claims w_k(r_w) = v_k and m(r_t) = p'(r_t): the caller discharges them (openings of
//!            the committed columns, or later steps of a layer proof)
//! one row    a witness of one row (n = 0) is proved as two copies of it (the check becomes
//!            a·b' = 2·a'·b) and its claims sit at the empty point
//! batch      several lookups absorb all their statements, then draw (α, γ) each; their
//!            2 per lookup fraction trees run as one batch (`fraction::prove_fraction_sums`)
//! ```

use crate::LookupError;
use crate::fraction::{FractionLeaves, FractionSumProof, prove_fraction_sums, verify_fraction_sums};
use crate::table::LookupTable;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, Zero, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const LABEL_TABLE: &[u8] = b"lookup/table";
const LABEL_SHAPE: &[u8] = b"lookup/shape";
const LABEL_ALPHA: &[u8] = b"lookup/alpha";
const LABEL_GAMMA: &[u8] = b"lookup/gamma";
const LABEL_WITNESS_VALUES: &[u8] = b"lookup/witness-values";

/// A logUp proof of one or several lookups (their fractional sums batched).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LookupProof {
    /// The fractional sums, trees in the order witness 1, table 1, witness 2, table 2, ….
    pub fractions: FractionSumProof,
    /// Per lookup, `w_k(r_w)`, one per column.
    pub witness_values: Vec<Vec<Fr>>,
}

/// What a lookup leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupClaims {
    /// `w_k(r_w) = v_k`, one per witness column (all at the same point).
    pub columns: Vec<EvalClaim>,
    /// `m(r_t) = value` on the multiplicities.
    pub multiplicities: EvalClaim,
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

/// Proves that every row of `columns` is a row of `table`, given the `multiplicities` the
/// caller committed to (from [`multiplicities`]).
///
/// # Errors
/// As [`multiplicities`] for bad columns, [`LookupError::WrongLength`] for multiplicities of
/// another size, [`LookupError::ZeroDenominator`] when a challenge hits a table row.
pub fn prove_lookup(
    table: &dyn LookupTable,
    columns: &[&[i64]],
    multiplicities: &[i64],
    transcript: &mut Transcript,
) -> Result<(LookupProof, LookupClaims), LookupError> {
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
    prove_lookup_with(table, &witness, multiplicities, transcript)
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

/// [`prove_lookup`] for a [`LookupWitness`].
///
/// # Errors
/// As [`prove_lookup`], and whatever `evaluate` returns.
pub fn prove_lookup_with(
    table: &dyn LookupTable,
    witness: &LookupWitness<'_>,
    multiplicities: &[i64],
    transcript: &mut Transcript,
) -> Result<(LookupProof, LookupClaims), LookupError> {
    let (proof, mut claims) = prove_lookups(&[Lookup { table, witness, multiplicities }], transcript)?;
    let claims = claims.pop().ok_or(LookupError::MalformedProof("no lookup"))?;
    Ok((proof, claims))
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

/// Proves several lookups with one batched fractional-sum proof (one sum-check per tree
/// depth for all of them). Returns one [`LookupClaims`] per lookup, in order.
///
/// # Errors
/// As [`prove_lookup`], and whatever an `evaluate` returns.
pub fn prove_lookups(
    lookups: &[Lookup<'_>],
    transcript: &mut Transcript,
) -> Result<(LookupProof, Vec<LookupClaims>), LookupError> {
    let challenges = start_lookups(lookups, transcript)?;
    let trees = lookup_trees(lookups, &challenges)?;
    let (fractions, _, leaves) = prove_fraction_sums(trees, transcript)?;
    let mut witness_values = Vec::with_capacity(lookups.len());
    let mut all_claims = Vec::with_capacity(lookups.len());
    for (lookup, pair) in lookups.iter().zip(leaves.chunks(2)) {
        let [witness_leaf, table_leaf] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let witness_point = witness_leaf.point.get(..lookup.witness.num_vars).unwrap_or_default().to_vec();
        let values = (lookup.witness.evaluate)(&witness_point)?;
        if values.len() != lookup.table.num_columns() {
            return Err(LookupError::WrongLength {
                what: "witness values",
                expected: lookup.table.num_columns(),
                got: values.len(),
            });
        }
        all_claims.push(LookupClaims {
            columns: values.iter().map(|v| EvalClaim { point: witness_point.clone(), value: *v }).collect(),
            multiplicities: EvalClaim { point: table_leaf.point.clone(), value: table_leaf.numerator },
        });
        witness_values.push(values);
    }
    for values in &witness_values {
        transcript.append_fields(LABEL_WITNESS_VALUES, values);
    }
    Ok((LookupProof { fractions, witness_values }, all_claims))
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

/// Verifies a [`LookupProof`] for a witness of `2^witness_vars` rows.
///
/// # Errors
/// As [`verify_lookups`].
pub fn verify_lookup(
    table: &dyn LookupTable,
    witness_vars: usize,
    proof: &LookupProof,
    transcript: &mut Transcript,
) -> Result<LookupClaims, LookupError> {
    verify_lookups(&[(table, witness_vars)], proof, transcript)?
        .pop()
        .ok_or(LookupError::MalformedProof("no lookup"))
}

/// Verifies lookups proved with [`prove_lookups`]; `lookups` gives each table and its
/// witness size `2^witness_vars`. Returns one [`LookupClaims`] per lookup, which the caller
/// must discharge.
///
/// # Errors
/// [`LookupError::SumMismatch`] (a row outside the table, wrong multiplicities),
/// [`LookupError::LeafMismatch`] (witness values that do not match the leaf), the errors of
/// the fractional sums, or [`LookupError::MalformedProof`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookups(
    lookups: &[(&dyn LookupTable, usize)],
    proof: &LookupProof,
    transcript: &mut Transcript,
) -> Result<Vec<LookupClaims>, LookupError> {
    if proof.witness_values.len() != lookups.len()
        || proof.witness_values.iter().zip(lookups).any(|(v, (table, _))| v.len() != table.num_columns())
    {
        return Err(LookupError::MalformedProof("one witness value per column"));
    }
    let challenges = absorb_statements(lookups, transcript);
    let trees: Vec<(usize, bool)> = lookups
        .iter()
        .flat_map(|(table, witness_vars)| [((*witness_vars).max(1), true), (table.num_vars(), false)])
        .collect();
    let (roots, leaves) = verify_fraction_sums(&trees, &proof.fractions, transcript)?;
    let mut all_claims = Vec::with_capacity(lookups.len());
    for (index, ((table, witness_vars), &(alpha, gamma))) in lookups.iter().zip(&challenges).enumerate() {
        let (Some(witness_root), Some(table_root), Some(witness_leaf), Some(table_leaf), Some(values)) = (
            roots.get(2 * index),
            roots.get(2 * index + 1),
            leaves.get(2 * index),
            leaves.get(2 * index + 1),
            proof.witness_values.get(index),
        ) else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        // A one-row witness is proved as two copies of its row: twice the table's sum.
        let copies = Fr::from(if *witness_vars == 0 { 2u64 } else { 1 });
        if witness_root.numerator * table_root.denominator
            != copies * table_root.numerator * witness_root.denominator
        {
            return Err(LookupError::SumMismatch);
        }
        if fold(alpha, gamma, &table.evaluate_columns(&table_leaf.point)?) != table_leaf.denominator {
            return Err(LookupError::LeafMismatch);
        }
        if fold(alpha, gamma, values) != witness_leaf.denominator {
            return Err(LookupError::LeafMismatch);
        }
        let witness_point = witness_leaf.point.get(..*witness_vars).unwrap_or_default().to_vec();
        all_claims.push(LookupClaims {
            columns: values.iter().map(|v| EvalClaim { point: witness_point.clone(), value: *v }).collect(),
            multiplicities: EvalClaim { point: table_leaf.point.clone(), value: table_leaf.numerator },
        });
    }
    for values in &proof.witness_values {
        transcript.append_fields(LABEL_WITNESS_VALUES, values);
    }
    Ok(all_claims)
}
