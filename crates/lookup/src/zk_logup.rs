//! The logUp lookups of [`crate::prove_lookups`] in zero knowledge: the fractional sums by
//! [`crate::zk_fraction`], the root and leaf checks as relations on committed values.
//!
//! ```text
//! statement  as the plain lookups (tables, witness sizes; the caller absorbed the commitments
//!            to the witness columns and multiplicities);  α, γ ← V per lookup
//! trees      the zero-knowledge fractional sums of every lookup's witness and table trees
//!            → committed first layers (p0, p1, q0, q1), (p0', p1', q0', q1') and leaf claims
//! P → V      per lookup C_a, C_b, C_a', C_b' (the roots a/b, a'/b') and C(w_k(r_w)) per column
//! relations  (one zkmha_zk::RelationsProof for the whole batch, per lookup)
//!            C_b ≐ q0·q1,  C_a ≐ q0·p1 + q1·p0,  C_b' ≐ q0'·q1',  C_a' ≐ q0'·p1' + q1'·p0'
//!            0 ≐ a·b' − c·a'·b                        (c = 2 for a one-row witness: two copies)
//!            C_Q(r_w) − α·U + Σ_k γ^k·C(w_k(r_w)) ≐ 0   (witness leaf, unit numerators)
//!            C_Q'(r_t) − (α − Σ_k γ^k·T_k(r_t))·U ≐ 0   (table leaf: V evaluates T_k itself)
//! out        committed claims w_k(r_w) and m(r_t) = C_P'(r_t): the caller discharges them
//! ```
//!
//! The plain verifier also rejects a root denominator `b = 0`; here `b` is hidden, and it is
//! not needed: the fractional sum-checks tie `b` to the product of the leaves
//! `α − Σ_k γ^k·w_k(x)` of columns committed before `α`, which is 0 only if `α` hits one of
//! `2^n` values fixed in advance (probability `2^n/|F|`; likewise `b'` with `2^t/|F|`).

use crate::LookupError;
use crate::fraction::FractionLeaves;
use crate::logup::{Lookup, absorb_statements, fold, lookup_trees, start_lookups};
use crate::table::LookupTable;
use crate::zk_fraction::{
    ZkFractionSumProof, ZkFractionTree, prove_fraction_sums_zk, verify_fraction_sums_zk,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, One, Zero};
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, LinearValue, ProverMasks, ProverRelation, QuadraticRelation,
    RelationsProof, ValueOpening, VerifierMasks,
};

const LABEL_ROOTS: &[u8] = b"lookup/zk/roots";
const LABEL_WITNESS_VALUES: &[u8] = b"lookup/zk/witness-values";

/// A zero-knowledge proof of one or several lookups.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkLookupProof {
    /// The fractional sums, trees in the order witness 1, table 1, witness 2, table 2, ….
    pub fractions: ZkFractionSumProof,
    /// Per lookup: `C_a, C_b, C_a', C_b'`.
    pub roots: Vec<[G1Affine; 4]>,
    /// Per lookup: `C(w_k(r_w))`, one per column.
    pub witness_values: Vec<Vec<G1Affine>>,
    /// The roots' and leaves' relations.
    pub relations: RelationsProof,
}

/// What a zero-knowledge lookup leaves to the caller: committed claims (combinations for the
/// verifier, committed values for the prover).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkLookupClaims<V> {
    /// `r_w`, where every column's claim is.
    pub witness_point: Vec<Fr>,
    /// `w_k(r_w)`, one per column.
    pub columns: Vec<V>,
    /// `r_t`, the multiplicities' point.
    pub table_point: Vec<Fr>,
    /// `m(r_t)`.
    pub multiplicities: V,
}

impl From<crate::LookupClaims> for ZkLookupClaims<Fr> {
    /// A plain lookup's claims in the generic form: its column claims all lie at one point
    /// (the witness tree's leaf point), which becomes `witness_point`.
    fn from(claims: crate::LookupClaims) -> Self {
        let witness_point = claims.columns.first().map(|c| c.point.clone()).unwrap_or_default();
        Self {
            witness_point,
            columns: claims.columns.into_iter().map(|c| c.value).collect(),
            table_point: claims.multiplicities.point,
            multiplicities: claims.multiplicities.value,
        }
    }
}

/// The trees' `(num_vars, unit)` of a batch of lookups.
fn tree_shapes(lookups: &[(&dyn LookupTable, usize)]) -> Vec<(usize, bool)> {
    lookups
        .iter()
        .flat_map(|(table, witness_vars)| [((*witness_vars).max(1), true), (table.num_vars(), false)])
        .collect()
}

/// The `(variables, degree)` of the masked sum-checks of a batch of lookups, in proof order.
pub fn zk_lookup_schedule(lookups: &[(&dyn LookupTable, usize)]) -> Vec<(usize, usize)> {
    let depths: Vec<usize> = tree_shapes(lookups).iter().map(|(n, _)| *n).collect();
    crate::zk_fraction::zk_fraction_schedule(&depths)
}

fn absorb(transcript: &mut Transcript, label: &'static [u8], points: impl Iterator<Item = G1Affine>) {
    let mut bytes = Vec::new();
    for point in points {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(label, &bytes);
}

/// A relation `(target, terms)` on either side.
type Relation<V> = (V, Vec<(usize, V)>);

/// One lookup's factors and relations, for either side: `roots = [a, b, a', b']`, `values`
/// the columns' committed values at `r_w`, `table_value` the public `α − Σ γ^k·T_k(r_t)`.
/// Factors (in order): `q0, q1, q0', q1', a, a'` from `offset` on.
#[allow(clippy::too_many_arguments)]
fn lookup_relations<V: LinearValue>(
    params: &HyraxParams,
    witness: &ZkFractionTree<V>,
    table: &ZkFractionTree<V>,
    roots: &[V; 4],
    values: &[V],
    (alpha, gamma): (Fr, Fr),
    table_value: Fr,
    copies: Fr,
    offset: usize,
) -> (Vec<V>, Vec<Relation<V>>) {
    let [p0, p1, q0, q1] = &witness.first_layer;
    let [t_p0, t_p1, t_q0, t_q1] = &table.first_layer;
    let [a, b, t_a, t_b] = roots;
    let factors = vec![q0.clone(), q1.clone(), t_q0.clone(), t_q1.clone(), a.clone(), t_a.clone()];
    let zero = V::constant(params, Fr::zero());
    let mut leaf = witness.leaf_denominator.plus_scaled(-alpha, &V::constant(params, Fr::one()));
    let mut power = Fr::one();
    for value in values {
        leaf = leaf.plus_scaled(power, value);
        power *= gamma;
    }
    let table_leaf = table.leaf_denominator.plus_scaled(-table_value, &V::constant(params, Fr::one()));
    let relations = vec![
        (b.clone(), vec![(offset, q1.clone())]),
        (a.clone(), vec![(offset, p1.clone()), (offset + 1, p0.clone())]),
        (t_b.clone(), vec![(offset + 2, t_q1.clone())]),
        (t_a.clone(), vec![(offset + 2, t_p1.clone()), (offset + 3, t_p0.clone())]),
        (zero, vec![(offset + 4, t_b.clone()), (offset + 5, b.times(-copies))]),
        (leaf, Vec::new()),
        (table_leaf, Vec::new()),
    ];
    (factors, relations)
}

/// Proves several lookups in zero knowledge (as [`crate::prove_lookups`]), with the masks
/// scheduled by [`zk_lookup_schedule`]. Returns the proof and per lookup its committed claims.
///
/// # Errors
/// As [`crate::prove_lookups`], and [`LookupError::ZeroKnowledge`].
pub fn prove_lookups_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    lookups: &[Lookup<'_>],
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkLookupProof, Vec<ZkLookupClaims<CommittedValue>>), LookupError> {
    let challenges = start_lookups(lookups, transcript)?;
    let trees: Vec<FractionLeaves> = lookup_trees(lookups, &challenges)?;
    // The roots' values, from the first layers (the prover's plain arithmetic).
    let (fractions, results) = prove_fraction_sums_zk(params, trees, masks, transcript, rng)?;
    let mut hide = |value: Fr| {
        let opening = ValueOpening::hide(value, rng);
        let commitment = G1Affine::from(opening.commit(params));
        (commitment, CommittedValue::new(commitment, opening))
    };
    let mut roots = Vec::with_capacity(lookups.len());
    let mut root_values = Vec::with_capacity(lookups.len());
    let mut witness_values = Vec::with_capacity(lookups.len());
    let mut column_values = Vec::with_capacity(lookups.len());
    for (lookup, pair) in lookups.iter().zip(results.chunks(2)) {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let value = |v: &CommittedValue| v.opening.value;
        let root = |t: &ZkFractionTree<CommittedValue>| {
            let [p0, p1, q0, q1] = t.first_layer.each_ref().map(value);
            (p0 * q1 + p1 * q0, q0 * q1)
        };
        let ((a, b), (t_a, t_b)) = (root(witness), root(table));
        let committed = [hide(a), hide(b), hide(t_a), hide(t_b)];
        roots.push(committed.each_ref().map(|(c, _)| *c));
        root_values.push(committed.map(|(_, v)| v));
        let witness_point = witness.leaf_point.get(..lookup.witness.num_vars).unwrap_or_default().to_vec();
        let values = (lookup.witness.evaluate)(&witness_point)?;
        if values.len() != lookup.table.num_columns() {
            return Err(LookupError::WrongLength {
                what: "witness values",
                expected: lookup.table.num_columns(),
                got: values.len(),
            });
        }
        let (sent, committed): (Vec<G1Affine>, Vec<CommittedValue>) =
            values.into_iter().map(&mut hide).unzip();
        witness_values.push(sent);
        column_values.push((witness_point, committed));
    }
    absorb(transcript, LABEL_ROOTS, roots.iter().flatten().copied());
    absorb(transcript, LABEL_WITNESS_VALUES, witness_values.iter().flatten().copied());
    let mut factors = Vec::new();
    let mut relations = Vec::new();
    let mut claims = Vec::with_capacity(lookups.len());
    for (((lookup, pair), roots), ((witness_point, values), challenge)) in lookups
        .iter()
        .zip(results.chunks(2))
        .zip(&root_values)
        .zip(column_values.into_iter().zip(&challenges))
    {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let table_value = fold(challenge.0, challenge.1, &lookup.table.evaluate_columns(&table.leaf_point)?);
        let copies = Fr::from(if lookup.witness.num_vars == 0 { 2u64 } else { 1 });
        let (f, r) = lookup_relations(
            params,
            witness,
            table,
            roots,
            &values,
            *challenge,
            table_value,
            copies,
            factors.len(),
        );
        factors.extend(f);
        relations.extend(r.into_iter().map(|(target, terms)| ProverRelation { target, terms }));
        claims.push(ZkLookupClaims {
            witness_point,
            columns: values,
            table_point: table.leaf_point.clone(),
            multiplicities: table.leaf_numerator.clone(),
        });
    }
    let relations = RelationsProof::prove(params, &factors, &relations, transcript, rng)?;
    Ok((ZkLookupProof { fractions, roots, witness_values, relations }, claims))
}

/// Verifies [`prove_lookups_zk`]'s proof; `lookups` gives each table and its witness size.
/// The group equations are left in `checks`. Returns per lookup the committed claims the
/// caller must discharge.
///
/// # Errors
/// [`LookupError::MalformedProof`] for wrong counts, and the fractional sums' errors; the
/// relations' equation in `checks` fails ([`zkmha_zk::ZkError::RelationMismatch`]) for a
/// row outside the table, wrong multiplicities or leaf values that do not fit.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_lookups_zk(
    params: &HyraxParams,
    lookups: &[(&dyn LookupTable, usize)],
    proof: &ZkLookupProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<Vec<ZkLookupClaims<Combination>>, LookupError> {
    if proof.roots.len() != lookups.len()
        || proof.witness_values.len() != lookups.len()
        || proof.witness_values.iter().zip(lookups).any(|(v, (table, _))| v.len() != table.num_columns())
    {
        return Err(LookupError::MalformedProof("one root set and one value per column for each lookup"));
    }
    let challenges = absorb_statements(lookups, transcript);
    let results =
        verify_fraction_sums_zk(params, &tree_shapes(lookups), &proof.fractions, masks, transcript, checks)?;
    absorb(transcript, LABEL_ROOTS, proof.roots.iter().flatten().copied());
    absorb(transcript, LABEL_WITNESS_VALUES, proof.witness_values.iter().flatten().copied());
    let mut factors = Vec::new();
    let mut relations = Vec::new();
    let mut claims = Vec::with_capacity(lookups.len());
    for ((((table_def, witness_vars), pair), (roots, sent)), challenge) in lookups
        .iter()
        .zip(results.chunks(2))
        .zip(proof.roots.iter().zip(&proof.witness_values))
        .zip(&challenges)
    {
        let [witness, table] = pair else {
            return Err(LookupError::MalformedProof("two trees per lookup"));
        };
        let roots = roots.map(Combination::point);
        let values: Vec<Combination> = sent.iter().map(|c| Combination::point(*c)).collect();
        let table_value = fold(challenge.0, challenge.1, &table_def.evaluate_columns(&table.leaf_point)?);
        let copies = Fr::from(if *witness_vars == 0 { 2u64 } else { 1 });
        let (f, r) = lookup_relations(
            params,
            witness,
            table,
            &roots,
            &values,
            *challenge,
            table_value,
            copies,
            factors.len(),
        );
        factors.extend(f);
        relations.extend(r.into_iter().map(|(target, terms)| QuadraticRelation { target, terms }));
        claims.push(ZkLookupClaims {
            witness_point: witness.leaf_point.get(..*witness_vars).unwrap_or_default().to_vec(),
            columns: values,
            table_point: table.leaf_point.clone(),
            multiplicities: table.leaf_numerator.clone(),
        });
    }
    proof.relations.verify_deferred(params, &factors, &relations, transcript, checks)?;
    Ok(claims)
}
