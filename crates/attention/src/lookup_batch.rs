//! One logUp batch for every lookup of a layer proof: each sub-protocol (a norm, the
//! projections, an activation, a rotation, the softmax) states its lookups and prepares their
//! witnesses; the layer proves all of them in one [`zkmha_lookup::prove_lookups`] batch before
//! any sub-protocol's own steps, and hands each sub-protocol its claims, in order.
//!
//! ```text
//! parts      P_1, …, P_k: each a list of lookups (table T, witness size n), in the layer's order
//! batch      one logUp proof of the concatenation (zkmha_lookup: one fractional-sum proof, its
//!            depths shared by every tree, one relations proof)
//! out        part j's claims: the batch's claims j_0 … j_0 + |P_j| − 1, which part j's steps
//!            then reduce (GKR direction), exactly as if it had proved its lookups alone
//! ```
//!
//! Soundness is logUp's for the whole batch: every witness column and multiplicity is bound
//! by the layer's commitments (absorbed with the statement) before the batch's challenges, and
//! a sub-protocol's witness is a function of its committed tensors only — never of a challenge
//! — so preparing it before the sub-protocol's steps changes nothing it proves. Merging
//! saves every batch but one its fractional-sum depths (about 21 sum-checks each for a GPT-2
//! layer) and its relations proof.

use crate::AttentionError;
use crate::mode::Mode;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::borrow::Cow;
use zkmha_field::Fr;
use zkmha_lookup::{
    LookupClaims, LookupError, LookupProofOf, LookupTable, LookupWitness, zk_lookup_schedule,
};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_transcript::Transcript;

/// A witness row's entry `(row, column)`.
pub type EntryFn<'a> = Box<dyn Fn(usize, usize) -> i64 + Sync + 'a>;
/// Every column's MLE at a point.
pub type EvaluateFn<'a> = Box<dyn Fn(&[Fr]) -> Result<Vec<Fr>, LookupError> + 'a>;

/// One lookup a sub-protocol states: its table and its witness size `2^num_vars`.
pub struct LookupStatement<'a> {
    /// The table.
    pub table: Box<dyn LookupTable + 'a>,
    /// `n`: the witness has `2^n` rows.
    pub num_vars: usize,
}

impl<'a> LookupStatement<'a> {
    /// A statement of `table` for `2^num_vars` rows.
    pub fn new(table: impl LookupTable + 'a, num_vars: usize) -> Self {
        Self { table: Box::new(table), num_vars }
    }
}

/// One lookup a sub-protocol prepared for the layer's batch: its statement, its witness and
/// the multiplicities its layer committed to.
pub struct PreparedLookup<'a> {
    /// The table and the witness size.
    pub statement: LookupStatement<'a>,
    /// Entry `(row, column)` of the witness.
    pub entry: EntryFn<'a>,
    /// Every column's MLE at a point of `num_vars` coordinates.
    pub evaluate: EvaluateFn<'a>,
    /// `m`, one count per table row.
    pub multiplicities: &'a [i64],
}

impl<'a> PreparedLookup<'a> {
    /// A one-column witness: integers over `2^num_vars` rows (borrowed or owned).
    pub fn column(statement: LookupStatement<'a>, values: Cow<'a, [i64]>, multiplicities: &'a [i64]) -> Self {
        let values = std::sync::Arc::new(values);
        let for_entry = std::sync::Arc::clone(&values);
        Self {
            statement,
            entry: Box::new(move |row, _| for_entry[row]),
            evaluate: Box::new(move |point| {
                Ok(vec![DenseMultilinearExtension::from_i64(point.len(), &values)?.evaluate(point)?])
            }),
            multiplicities,
        }
    }
}

/// The statements of every part, flattened in order, as `zkmha_lookup` takes them.
fn flatten<'s>(parts: &'s [Vec<LookupStatement<'_>>]) -> Vec<(&'s dyn LookupTable, usize)> {
    parts.iter().flatten().map(|s| (s.table.as_ref(), s.num_vars)).collect()
}

/// Part `j`'s claims out of the batch's, by the parts' counts.
fn split<V>(
    counts: &[usize],
    claims: Vec<LookupClaims<V>>,
) -> Result<Vec<Vec<LookupClaims<V>>>, AttentionError> {
    if counts.iter().sum::<usize>() != claims.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let mut claims = claims.into_iter();
    Ok(counts.iter().map(|&count| claims.by_ref().take(count).collect()).collect())
}

const STEP: &str = "layer lookups";

/// A batch's proof and each part's claims, as the prover holds them.
pub type ProvedParts<M> =
    (LookupProofOf<M>, Vec<Vec<LookupClaims<<M as crate::mode::ProductMode>::ProverValue>>>);

/// Proves every part's lookups in one batch in mode `M`; returns the proof and each part's
/// claims, in the parts' order. The caller has bound every witness and multiplicity (committed
/// and absorbed) before this call.
///
/// # Errors
/// [`AttentionError::Lookup`] for an empty batch or the lookups' errors.
pub fn prove_lookup_parts<M: Mode>(
    prover: &mut M::Prover<'_>,
    parts: &[Vec<PreparedLookup<'_>>],
    transcript: &mut Transcript,
) -> Result<ProvedParts<M>, AttentionError> {
    let witnesses: Vec<LookupWitness<'_>> = parts
        .iter()
        .flatten()
        .map(|l| LookupWitness {
            num_vars: l.statement.num_vars,
            entry: l.entry.as_ref(),
            evaluate: l.evaluate.as_ref(),
        })
        .collect();
    let lookups: Vec<zkmha_lookup::Lookup<'_>> = parts
        .iter()
        .flatten()
        .zip(&witnesses)
        .map(|(l, witness)| zkmha_lookup::Lookup {
            table: l.statement.table.as_ref(),
            witness,
            multiplicities: l.multiplicities,
        })
        .collect();
    let (proof, claims) = zkmha_lookup::prove_lookups::<M>(prover, &lookups, transcript)?;
    let counts: Vec<usize> = parts.iter().map(Vec::len).collect();
    Ok((proof, split(&counts, claims)?))
}

/// Verifies [`prove_lookup_parts`]; returns each part's claims, in the parts' order, which the
/// parts' steps must discharge.
///
/// # Errors
/// The lookups' errors.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookup_parts<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    parts: &[Vec<LookupStatement<'_>>],
    proof: &LookupProofOf<M>,
    transcript: &mut Transcript,
) -> Result<Vec<Vec<LookupClaims<M::Value>>>, AttentionError> {
    let claims = zkmha_lookup::verify_lookups::<M>(verifier, &flatten(parts), proof, transcript)?;
    let counts: Vec<usize> = parts.iter().map(Vec::len).collect();
    split(&counts, claims)
}

/// The masked sum-checks of the batch in zero knowledge, in proof order.
pub fn lookup_parts_zk_schedule(parts: &[Vec<LookupStatement<'_>>]) -> Vec<(usize, usize)> {
    zk_lookup_schedule(&flatten(parts))
}

/// A sub-protocol proven alone (its lookups a batch of their own, then its steps): the
/// lookups' proof `L` and the steps' proof `P` (which it dereferences to).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Alone<L: CanonicalSerialize + CanonicalDeserialize, P: CanonicalSerialize + CanonicalDeserialize> {
    /// The lookups' batch.
    pub lookups: L,
    /// The steps after it.
    pub steps: P,
}

impl<L: CanonicalSerialize + CanonicalDeserialize, P: CanonicalSerialize + CanonicalDeserialize>
    std::ops::Deref for Alone<L, P>
{
    type Target = P;
    fn deref(&self) -> &P {
        &self.steps
    }
}

impl<L: CanonicalSerialize + CanonicalDeserialize, P: CanonicalSerialize + CanonicalDeserialize>
    std::ops::DerefMut for Alone<L, P>
{
    fn deref_mut(&mut self) -> &mut P {
        &mut self.steps
    }
}

/// An [`Alone`] proof in mode `M`.
pub type AloneProof<M, P> = Alone<LookupProofOf<M>, P>;

/// Proves a sub-protocol alone in mode `M`: its lookups in a batch of their own, then `steps`
/// from their claims (a head's norm; tests of one sub-protocol).
///
/// # Errors
/// As [`prove_lookup_parts`], and the steps' errors.
pub fn prove_alone<'x, M: Mode, P: CanonicalSerialize + CanonicalDeserialize, C>(
    prover: &mut M::Prover<'x>,
    lookups: Vec<PreparedLookup<'_>>,
    transcript: &mut Transcript,
    steps: impl FnOnce(
        &mut M::Prover<'x>,
        Vec<LookupClaims<M::ProverValue>>,
        &mut Transcript,
    ) -> Result<(P, C), AttentionError>,
) -> Result<(AloneProof<M, P>, C), AttentionError> {
    let (lookup_proof, mut claims) = prove_lookup_parts::<M>(prover, &[lookups], transcript)?;
    let claims = claims.pop().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let (proof, out) = steps(prover, claims, transcript)?;
    Ok((Alone { lookups: lookup_proof, steps: proof }, out))
}

/// Verifies [`prove_alone`].
///
/// # Errors
/// As [`verify_lookup_parts`], and the steps' errors.
pub fn verify_alone<'x, M: Mode, C>(
    verifier: &mut M::Verifier<'x>,
    statements: Vec<LookupStatement<'_>>,
    proof: &LookupProofOf<M>,
    transcript: &mut Transcript,
    steps: impl FnOnce(
        &mut M::Verifier<'x>,
        Vec<LookupClaims<M::Value>>,
        &mut Transcript,
    ) -> Result<C, AttentionError>,
) -> Result<C, AttentionError> {
    let mut claims = verify_lookup_parts::<M>(verifier, &[statements], proof, transcript)?;
    let claims = claims.pop().ok_or(AttentionError::CheckFailed { step: STEP })?;
    steps(verifier, claims, transcript)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::mode::zk_test_support::zk_round;
    use crate::mode::{Plain, Zk};
    use zkmha_lookup::{RangeTable, multiplicities};

    /// A part: one range lookup per `(bits, num_vars, seed)`, its column and multiplicities.
    struct Part {
        lookups: Vec<(usize, usize, Vec<i64>, Vec<i64>)>,
    }

    fn part(specs: &[(usize, usize, u64)]) -> Part {
        let lookups = specs
            .iter()
            .map(|&(bits, num_vars, seed)| {
                let column: Vec<i64> = (0..1usize << num_vars)
                    .map(|k| ((k as u64 * 7919 + seed * 104_729) % (1u64 << bits)) as i64)
                    .collect();
                let table = RangeTable::new(bits).unwrap();
                let m = multiplicities(&table, &[&column]).unwrap();
                (bits, num_vars, column, m)
            })
            .collect();
        Part { lookups }
    }

    fn statements(parts: &[Part]) -> Vec<Vec<LookupStatement<'static>>> {
        parts
            .iter()
            .map(|p| {
                p.lookups
                    .iter()
                    .map(|(bits, n, _, _)| LookupStatement::new(RangeTable::new(*bits).unwrap(), *n))
                    .collect()
            })
            .collect()
    }

    fn prepared(parts: &[Part]) -> Vec<Vec<PreparedLookup<'_>>> {
        let mut statements = statements(parts).into_iter();
        parts
            .iter()
            .map(|p| {
                let own = statements.next().unwrap();
                p.lookups
                    .iter()
                    .zip(own)
                    .map(|((_, _, column, m), s)| PreparedLookup::column(s, Cow::Borrowed(column), m))
                    .collect()
            })
            .collect()
    }

    /// Parts of several sub-protocols' shapes: grid-sized and small witnesses, equal and
    /// different range tables across parts, a one-row witness.
    fn parts() -> Vec<Part> {
        vec![
            part(&[(8, 6, 1), (8, 6, 2), (4, 6, 3), (6, 3, 4)]),
            part(&[(8, 5, 5), (10, 7, 6)]),
            part(&[(3, 0, 7)]),
            part(&[(8, 6, 8), (5, 4, 9), (8, 2, 10)]),
        ]
    }

    #[test]
    fn each_part_gets_its_own_claims_in_order_and_they_are_its_columns_values() {
        let parts = parts();
        let mut t = Transcript::new(b"batch");
        let (proof, prover_claims) = prove_lookup_parts::<Plain>(&mut (), &prepared(&parts), &mut t).unwrap();
        let verifier_claims = verify_lookup_parts::<Plain>(
            &mut (),
            &statements(&parts),
            &proof,
            &mut Transcript::new(b"batch"),
        )
        .unwrap();
        assert_eq!(prover_claims, verifier_claims);
        assert_eq!(verifier_claims.len(), parts.len());
        for (part, claims) in parts.iter().zip(&verifier_claims) {
            assert_eq!(claims.len(), part.lookups.len());
            for ((bits, n, column, m), claim) in part.lookups.iter().zip(claims) {
                assert_eq!(claim.witness_point.len(), *n);
                let value =
                    DenseMultilinearExtension::from_i64(*n, column).unwrap().evaluate(&claim.witness_point);
                assert_eq!(claim.columns, vec![value.unwrap()]);
                let mu = DenseMultilinearExtension::from_i64(*bits, m).unwrap().evaluate(&claim.table_point);
                assert_eq!(claim.multiplicities, mu.unwrap());
            }
        }
        // In zero knowledge the same batch verifies.
        let schedule = lookup_parts_zk_schedule(&statements(&parts));
        let verdict = zk_round(
            schedule,
            |p, t| prove_lookup_parts::<Zk>(p, &prepared(&parts), t),
            |v, t, (proof, _)| verify_lookup_parts::<Zk>(v, &statements(&parts), proof, t),
        );
        assert_eq!(
            verdict.map(|claims| claims.iter().map(Vec::len).collect::<Vec<_>>()),
            Ok(vec![4, 2, 1, 3])
        );
    }

    /// A malicious prover whose third part looks up a row outside its table (the column's
    /// entry `2^bits`, counted as row 0) among honest parts: rejected in both modes.
    #[test]
    fn a_row_outside_its_table_in_one_part_of_the_layer_batch_is_rejected() {
        let mut parts = parts();
        let (bits, _, column, m) = &mut parts[3].lookups[1];
        let row = column[5] as usize;
        m[row] -= 1;
        m[0] += 1;
        column[5] = 1 << *bits;
        let mut t = Transcript::new(b"batch");
        let (proof, _) = prove_lookup_parts::<Plain>(&mut (), &prepared(&parts), &mut t).unwrap();
        let verdict = verify_lookup_parts::<Plain>(
            &mut (),
            &statements(&parts),
            &proof,
            &mut Transcript::new(b"batch"),
        );
        assert!(matches!(verdict, Err(AttentionError::Lookup(_))), "{verdict:?}");
        let verdict = zk_round(
            lookup_parts_zk_schedule(&statements(&parts)),
            |p, t| prove_lookup_parts::<Zk>(p, &prepared(&parts), t),
            |v, t, (proof, _)| verify_lookup_parts::<Zk>(v, &statements(&parts), proof, t),
        );
        assert!(verdict.is_err(), "{:?}", verdict.map(|_| ()));
    }

    /// The verifier splits by the statements' counts: a batch verified against parts split
    /// differently (same lookups, another grouping) hands each part other claims — a
    /// sub-protocol then refuses them by their count — and against one lookup fewer it fails.
    #[test]
    fn the_parts_are_the_verifiers_own() {
        let parts = parts();
        let mut t = Transcript::new(b"batch");
        let (proof, _) = prove_lookup_parts::<Plain>(&mut (), &prepared(&parts), &mut t).unwrap();
        let mut regrouped = statements(&parts);
        let moved = regrouped[0].pop().unwrap();
        regrouped[1].insert(0, moved);
        let claims =
            verify_lookup_parts::<Plain>(&mut (), &regrouped, &proof, &mut Transcript::new(b"batch"))
                .unwrap();
        assert_eq!(claims.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 3, 1, 3]);
        let mut fewer = statements(&parts);
        fewer[3].pop();
        assert!(
            verify_lookup_parts::<Plain>(&mut (), &fewer, &proof, &mut Transcript::new(b"batch")).is_err()
        );
    }
}
