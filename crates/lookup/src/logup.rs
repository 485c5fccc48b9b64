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
//! ```

use crate::LookupError;
use crate::fraction::{FractionSumProof, prove_fraction_sum, verify_fraction_sum};
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

/// A logUp proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LookupProof {
    /// The witness side's fractional sum.
    pub witness_sum: FractionSumProof,
    /// The table side's fractional sum.
    pub table_sum: FractionSumProof,
    /// `w_k(r_w)`, one per column.
    pub witness_values: Vec<Fr>,
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

fn absorb_statement(table: &dyn LookupTable, witness_vars: usize, transcript: &mut Transcript) -> (Fr, Fr) {
    transcript.append_bytes(LABEL_TABLE, table.name().as_bytes());
    transcript.append_shape(LABEL_SHAPE, &[table.num_vars(), table.num_columns(), witness_vars]);
    (transcript.challenge_field(LABEL_ALPHA), transcript.challenge_field(LABEL_GAMMA))
}

/// `α − Σ_k γ^k·values[k]`.
fn fold(alpha: Fr, gamma: Fr, values: &[Fr]) -> Fr {
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
    let witness_vars = witness.num_vars;
    if multiplicities.len() != 1usize << table.num_vars() {
        return Err(LookupError::WrongLength {
            what: "multiplicities",
            expected: 1usize << table.num_vars(),
            got: multiplicities.len(),
        });
    }
    let (alpha, gamma) = absorb_statement(table, witness_vars, transcript);
    let rows = 1usize << witness_vars;
    let columns = table.num_columns();
    let table_denominators: Vec<Fr> = (0..multiplicities.len())
        .into_par_iter()
        .with_min_len(1024)
        .map(|y| fold(alpha, gamma, &table.row(y).into_iter().map(fr_from_i64).collect::<Vec<_>>()))
        .collect();
    // A witness row that is a table row has that row's denominator (a copy instead of
    // `columns` multiplications); any other row (only a cheating prover's) is folded.
    let witness_denominators: Vec<Fr> = (0..rows.max(2))
        .into_par_iter()
        .with_min_len(1024)
        .map_init(
            || vec![0i64; columns],
            |tuple, i| {
                for (column, value) in tuple.iter_mut().enumerate() {
                    *value = (witness.entry)(i % rows, column);
                }
                match table.index_of(tuple).and_then(|y| table_denominators.get(y)) {
                    Some(denominator) => *denominator,
                    None => fold(alpha, gamma, &tuple.iter().map(|&v| fr_from_i64(v)).collect::<Vec<_>>()),
                }
            },
        )
        .collect();
    if witness_denominators.par_iter().chain(table_denominators.par_iter()).any(Zero::is_zero) {
        return Err(LookupError::ZeroDenominator);
    }
    let counts: Vec<Fr> = multiplicities.iter().map(|&m| fr_from_i64(m)).collect();
    let (witness_sum, _, witness_leaf) = prove_fraction_sum(None, witness_denominators, transcript)?;
    let (table_sum, _, table_leaf) = prove_fraction_sum(Some(counts), table_denominators, transcript)?;
    let witness_point = witness_leaf.point.get(..witness_vars).unwrap_or_default().to_vec();
    let witness_values = (witness.evaluate)(&witness_point)?;
    if witness_values.len() != columns {
        return Err(LookupError::WrongLength {
            what: "witness values",
            expected: columns,
            got: witness_values.len(),
        });
    }
    transcript.append_fields(LABEL_WITNESS_VALUES, &witness_values);
    let claims = LookupClaims {
        columns: witness_values
            .iter()
            .map(|v| EvalClaim { point: witness_point.clone(), value: *v })
            .collect(),
        multiplicities: EvalClaim { point: table_leaf.point, value: table_leaf.numerator },
    };
    Ok((LookupProof { witness_sum, table_sum, witness_values }, claims))
}

/// Verifies a [`LookupProof`] for a witness of `2^witness_vars` rows.
///
/// # Errors
/// [`LookupError::SumMismatch`] (a row outside the table, wrong multiplicities),
/// [`LookupError::LeafMismatch`] (witness values that do not match the leaf), the errors of
/// the fractional sums, or [`LookupError::MalformedProof`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookup(
    table: &dyn LookupTable,
    witness_vars: usize,
    proof: &LookupProof,
    transcript: &mut Transcript,
) -> Result<LookupClaims, LookupError> {
    if proof.witness_values.len() != table.num_columns() {
        return Err(LookupError::MalformedProof("one witness value per column"));
    }
    let (alpha, gamma) = absorb_statement(table, witness_vars, transcript);
    let (witness_root, witness_leaf) =
        verify_fraction_sum(witness_vars.max(1), true, &proof.witness_sum, transcript)?;
    let (table_root, table_leaf) =
        verify_fraction_sum(table.num_vars(), false, &proof.table_sum, transcript)?;
    // A one-row witness is proved as two copies of its row: twice the table's sum.
    let copies = Fr::from(if witness_vars == 0 { 2u64 } else { 1 });
    if witness_root.numerator * table_root.denominator
        != copies * table_root.numerator * witness_root.denominator
    {
        return Err(LookupError::SumMismatch);
    }
    if fold(alpha, gamma, &table.evaluate_columns(&table_leaf.point)?) != table_leaf.denominator {
        return Err(LookupError::LeafMismatch);
    }
    if fold(alpha, gamma, &proof.witness_values) != witness_leaf.denominator {
        return Err(LookupError::LeafMismatch);
    }
    transcript.append_fields(LABEL_WITNESS_VALUES, &proof.witness_values);
    Ok(LookupClaims {
        columns: proof
            .witness_values
            .iter()
            .map(|v| EvalClaim {
                point: witness_leaf.point.get(..witness_vars).unwrap_or_default().to_vec(),
                value: *v,
            })
            .collect(),
        multiplicities: EvalClaim { point: table_leaf.point, value: table_leaf.numerator },
    })
}
