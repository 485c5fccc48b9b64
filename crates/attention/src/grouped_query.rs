//! Grouped-query attention's shared key/value heads: a claim on the weights expanded to every
//! query head reduced to a claim on the committed, compact weights.
//!
//! ```text
//! shapes     h query heads share h_kv key/value heads in groups of g = h / h_kv; head widths
//!            m are powers of two, so a column index is (j, head) with j in the low bits
//! tables     W_kv: rows × h_kv·m (committed),  W_full: rows × h·m with
//!            W_full[x, (j, h)] = W_kv[x, (j, ⌊h/g⌋)] for h < h, 0 for padded heads
//! claim in   W̃_full(r_j, r_h, r_x) = v           (from the K or V projection)
//! relation   W̃_full(r_j, r_h, r_x) = Σ_{c < ĥ_kv} e(r_h, c)·W̃_kv(r_j, c, r_x),
//!            e(r_h, c) = Σ_{h < h, ⌊h/g⌋ = c} eq(r_h, h)        (the verifier's O(h) work)
//! proof      P sends u_c = W̃_kv(r_j, c, r_x) for every c < ĥ_kv (padded c included),
//!            absorbed; V checks Σ_c e(r_h, c)·u_c = v (zero knowledge: the u_c and v are
//!            commitments, and a relations proof shows Σ_c e(r_h, c)·C(u_c) − C_v commits to
//!            0); then ρ is drawn
//! claim out  W̃_kv(r_j, ρ, r_x) = Σ_c eq(ρ, c)·u_c   (the caller opens the commitment)
//! ```
//!
//! Sound by Schwartz–Zippel: the u's define a multilinear polynomial in `c`; if it is not
//! `W̃_kv(r_j, ·, r_x)`, the two differ at a random `ρ` but with probability `log ĥ_kv / |F|`.
//! Biases are the same with no row variables.

use crate::AttentionError;
use crate::mode::Mode;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, One, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::LinearValue;

const STEP: &str = "shared heads";
const LABEL_VALUES: &[u8] = b"grouped-query/shared-head-values";
const LABEL_POINT: &[u8] = b"grouped-query/shared-head-point";

/// How query heads share key/value heads, and where the head variables sit in a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedHeadsShape {
    /// Query heads `h`.
    pub heads: usize,
    /// Key/value heads `h_kv` (divides `h`).
    pub key_value_heads: usize,
    /// `log₂ m` (the head width is a power of two): the point's first `head_dim_vars`
    /// coordinates are `j`, the next ones the head.
    pub head_dim_vars: usize,
    /// Row variables after the columns (`log₂ rows` for a weight matrix, 0 for a bias).
    pub row_vars: usize,
}

impl SharedHeadsShape {
    fn head_vars(&self) -> usize {
        self.heads.next_power_of_two().trailing_zeros() as usize
    }

    fn key_value_vars(&self) -> usize {
        self.key_value_heads.next_power_of_two().trailing_zeros() as usize
    }

    /// Variables of the expanded (`full`) and the compact table.
    pub fn num_vars(&self) -> (usize, usize) {
        let base = self.head_dim_vars + self.row_vars;
        (base + self.head_vars(), base + self.key_value_vars())
    }

    fn check(&self) -> Result<(), AttentionError> {
        if self.key_value_heads == 0 || !self.heads.is_multiple_of(self.key_value_heads) {
            return Err(AttentionError::InvalidShape(format!(
                "{} key/value heads do not divide the {} query heads",
                self.key_value_heads, self.heads
            )));
        }
        Ok(())
    }

    /// `e(r_h, c)` for every `c < ĥ_kv`.
    fn group_weights(&self, head_point: &[Fr]) -> Vec<Fr> {
        let group = self.heads / self.key_value_heads.max(1);
        let eq = eq_table(head_point);
        let mut out = vec![Fr::zero(); 1 << self.key_value_vars()];
        for (h, e) in eq.iter().enumerate().take(self.heads) {
            if let Some(slot) = out.get_mut(h / group.max(1)) {
                *slot += e;
            }
        }
        out
    }

    /// Splits a full point into (j, head, rows).
    fn split<'a>(&self, point: &'a [Fr]) -> Option<(&'a [Fr], &'a [Fr], &'a [Fr])> {
        let (j, rest) = point.split_at_checked(self.head_dim_vars)?;
        let (head, rows) = rest.split_at_checked(self.head_vars())?;
        (rows.len() == self.row_vars).then_some((j, head, rows))
    }
}

/// Expands compact key/value columns (`rows × h_kv·m`) to every query head (`rows × h·m`).
pub fn expand_heads<T: Copy>(
    compact: &[T],
    rows: usize,
    heads: usize,
    key_value_heads: usize,
    head_dim: usize,
) -> Vec<T> {
    let (narrow, group) = (key_value_heads * head_dim, heads / key_value_heads.max(1));
    let mut out = Vec::with_capacity(rows * heads * head_dim);
    for row in compact.chunks(narrow.max(1)).take(rows) {
        for h in 0..heads {
            let start = (h / group.max(1)) * head_dim;
            out.extend_from_slice(row.get(start..start + head_dim).unwrap_or(&[]));
        }
    }
    out
}

/// The values `u_c` the prover sends (in the clear, or committed in zero knowledge) and, in
/// zero knowledge, the proof that they give the claim (plain: nothing, the verifier checks).
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SharedHeadsProof<
    S: CanonicalSerialize + CanonicalDeserialize = Fr,
    Z: CanonicalSerialize + CanonicalDeserialize = (),
> {
    /// `u_c = W̃_kv(r_j, c, r_x)` for `c < ĥ_kv`.
    pub values: Vec<S>,
    /// `Σ_c e(r_h, c)·u_c − v = 0`.
    pub relation: Z,
}

/// A [`SharedHeadsProof`] in mode `M`.
pub type SharedHeadsProofOf<M> =
    SharedHeadsProof<<M as crate::mode::ProductMode>::Sent, <M as crate::mode::ProductMode>::ZeroProof>;

/// `Σ_c e(r_h, c)·u_c − v`, zero for an honest proof.
fn discrepancy<V: LinearValue>(weights: &[Fr], values: &[V], claim: &V) -> V {
    weights.iter().zip(values).fold(claim.times(-Fr::one()), |acc, (e, u)| acc.plus_scaled(*e, u))
}

/// The compact point `(r_j, ρ, r_x)` and value `Σ_c eq(ρ, c)·u_c`, after the values and their
/// relation are absorbed.
fn reduce<V: LinearValue>(
    j: &[Fr],
    rows: &[Fr],
    values: &[V],
    transcript: &mut Transcript,
) -> Option<EvalClaim<V>> {
    let rho = transcript.challenge_fields(LABEL_POINT, values.len().trailing_zeros() as usize);
    let eq = eq_table(&rho);
    let (first, rest) = values.split_first()?;
    let value = rest
        .iter()
        .zip(eq.iter().skip(1))
        .fold(first.times(eq.first().copied().unwrap_or_default()), |acc, (u, e)| acc.plus_scaled(*e, u));
    let point = [j, &rho, rows].concat();
    Some(EvalClaim { point, value })
}

/// Proves, in mode `M`, that `claim` (on the expanded table) follows from the compact table
/// `compact` (padded, `2^num_vars().1` entries, column index `(j, c)` in the low bits).
///
/// # Errors
/// [`AttentionError::InvalidShape`] for groups that do not divide, a point or table of the
/// wrong size; in zero knowledge [`AttentionError::ZeroKnowledge`] when the relation's proof
/// fails.
pub fn prove_shared_heads<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &SharedHeadsShape,
    compact: &[i64],
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Result<(SharedHeadsProofOf<M>, EvalClaim<M::ProverValue>), AttentionError> {
    shape.check()?;
    let (_, compact_vars) = shape.num_vars();
    let (j, head, rows) = shape.split(&claim.point).ok_or_else(|| {
        AttentionError::InvalidShape("a shared-head claim's point has the wrong length".into())
    })?;
    let table = DenseMultilinearExtension::from_i64(compact_vars, compact)?;
    let values = (0..1usize << shape.key_value_vars())
        .map(|c| {
            let bits: Vec<Fr> = (0..shape.key_value_vars())
                .map(|b| if (c >> b) & 1 == 1 { Fr::one() } else { Fr::zero() })
                .collect();
            table.evaluate(&[j, &bits, rows].concat())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (sent, held) = M::send(prover, LABEL_VALUES, &values, transcript);
    let target = discrepancy(&shape.group_weights(head), &held, &claim.value);
    let relation = M::prove_zero(prover, STEP, vec![target], transcript)?;
    let out = reduce(j, rows, &held, transcript).ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((SharedHeadsProof { values: sent, relation }, out))
}

/// Checks a shared-heads proof of mode `M` against `claim` and returns the claim on the
/// compact table (in zero knowledge with the relation's group equation left in the deferred
/// checks). The caller's transcript must already determine `claim` (its commitment absorbed
/// when it was sent, or derived from absorbed values): the relation's challenge is drawn after
/// the `u_c` only.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a bad shape, [`AttentionError::CheckFailed`]
/// (`"shared heads"`) for a proof of the wrong length or (plain) values that do not add up to
/// the claim, [`AttentionError::ZeroKnowledge`] for a malformed relation proof.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_shared_heads<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &SharedHeadsShape,
    proof: &SharedHeadsProofOf<M>,
    claim: &EvalClaim<M::Value>,
    transcript: &mut Transcript,
) -> Result<EvalClaim<M::Value>, AttentionError> {
    shape.check()?;
    let fail = AttentionError::CheckFailed { step: STEP };
    let (j, head, rows) = shape.split(&claim.point).ok_or(fail.clone())?;
    if proof.values.len() != 1 << shape.key_value_vars() {
        return Err(fail);
    }
    let values = M::receive(verifier, LABEL_VALUES, &proof.values, transcript);
    let target = discrepancy(&shape.group_weights(head), &values, &claim.value);
    M::verify_zero(verifier, STEP, vec![target], &proof.relation, transcript)?;
    reduce(j, rows, &values, transcript).ok_or(fail)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::mode::Plain;
    use zkmha_field::fr_from_i64;

    /// A `rows × kv·m` compact table padded to powers of two, and its expansion.
    fn tables(shape: &SharedHeadsShape, m: usize) -> (Vec<i64>, Vec<i64>) {
        let rows = 1usize << shape.row_vars;
        let kv = shape.key_value_heads;
        let compact: Vec<i64> = (0..rows * kv * m).map(|k| (k as i64 * 37) % 101 - 50).collect();
        let full = expand_heads(&compact, rows, shape.heads, kv, m);
        let pad = |t: &[i64], width: usize, vars: usize| {
            let padded_width = 1usize << (vars - shape.row_vars);
            let mut out = vec![0i64; 1 << vars];
            for (r, row) in t.chunks(width).enumerate() {
                out[r * padded_width..r * padded_width + width].copy_from_slice(row);
            }
            out
        };
        let (full_vars, compact_vars) = shape.num_vars();
        (pad(&compact, kv * m, compact_vars), pad(&full, shape.heads * m, full_vars))
    }

    #[test]
    fn expanding_repeats_each_key_value_head_for_its_group() {
        // Two rows, 2 kv heads of width 2, 6 query heads (groups of 3).
        let compact = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(
            expand_heads(&compact, 2, 6, 2, 2),
            vec![1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 5, 6, 5, 6, 5, 6, 7, 8, 7, 8, 7, 8]
        );
    }

    #[test]
    fn the_reduced_claim_is_the_compact_tables_evaluation() {
        for (heads, kv, m, row_vars) in
            [(4, 2, 4usize, 3), (6, 2, 2, 2), (9, 3, 4, 1), (3, 1, 2, 0), (8, 8, 2, 1)]
        {
            let shape = SharedHeadsShape {
                heads,
                key_value_heads: kv,
                head_dim_vars: m.trailing_zeros() as usize,
                row_vars,
            };
            let (compact, full) = tables(&shape, m);
            let (full_vars, compact_vars) = shape.num_vars();
            let point: Vec<Fr> = (0..full_vars).map(|i| fr_from_i64(3 + 7 * i as i64)).collect();
            let value =
                DenseMultilinearExtension::from_i64(full_vars, &full).unwrap().evaluate(&point).unwrap();
            let claim = EvalClaim { point, value };
            let mut prover = Transcript::new(b"test");
            let (proof, out) =
                prove_shared_heads::<Plain>(&mut (), &shape, &compact, &claim, &mut prover).unwrap();
            let mut verifier = Transcript::new(b"test");
            let checked =
                verify_shared_heads::<Plain>(&mut (), &shape, &proof, &claim, &mut verifier).unwrap();
            assert_eq!(out, checked);
            let actual = DenseMultilinearExtension::from_i64(compact_vars, &compact)
                .unwrap()
                .evaluate(&out.point)
                .unwrap();
            assert_eq!(actual, out.value, "{heads}/{kv}");
            // A claim off by one is rejected.
            let wrong = EvalClaim { value: claim.value + Fr::one(), ..claim.clone() };
            assert_eq!(
                verify_shared_heads::<Plain>(&mut (), &shape, &proof, &wrong, &mut Transcript::new(b"test")),
                Err(AttentionError::CheckFailed { step: "shared heads" })
            );
        }
    }

    #[test]
    fn a_wrong_value_on_a_padded_head_passes_the_sum_but_not_the_opening() {
        // 3 kv heads padded to 4: u_3 has no weight in the sum, but moves the reduced claim
        // away from the committed table, so the caller's opening rejects it.
        let shape = SharedHeadsShape { heads: 9, key_value_heads: 3, head_dim_vars: 1, row_vars: 1 };
        let (compact, full) = tables(&shape, 2);
        let (full_vars, compact_vars) = shape.num_vars();
        let point: Vec<Fr> = (0..full_vars).map(|i| fr_from_i64(5 + i as i64)).collect();
        let value = DenseMultilinearExtension::from_i64(full_vars, &full).unwrap().evaluate(&point).unwrap();
        let claim = EvalClaim { point, value };
        let (mut proof, _) =
            prove_shared_heads::<Plain>(&mut (), &shape, &compact, &claim, &mut Transcript::new(b"t"))
                .unwrap();
        proof.values[3] += Fr::one();
        let out = verify_shared_heads::<Plain>(&mut (), &shape, &proof, &claim, &mut Transcript::new(b"t"))
            .unwrap();
        let actual = DenseMultilinearExtension::from_i64(compact_vars, &compact)
            .unwrap()
            .evaluate(&out.point)
            .unwrap();
        assert_ne!(actual, out.value);
    }

    #[test]
    fn groups_that_do_not_divide_are_refused() {
        let shape = SharedHeadsShape { heads: 4, key_value_heads: 3, head_dim_vars: 1, row_vars: 0 };
        let claim = EvalClaim { point: vec![Fr::zero(); 3], value: Fr::zero() };
        assert!(matches!(
            verify_shared_heads::<Plain>(
                &mut (),
                &shape,
                &SharedHeadsProof::default(),
                &claim,
                &mut Transcript::new(b"t")
            ),
            Err(AttentionError::InvalidShape(_))
        ));
        // A point of the wrong length.
        let shape = SharedHeadsShape { key_value_heads: 2, ..shape };
        assert_eq!(
            verify_shared_heads::<Plain>(
                &mut (),
                &shape,
                &SharedHeadsProof::default(),
                &claim,
                &mut Transcript::new(b"t")
            ),
            Err(AttentionError::CheckFailed { step: "shared heads" })
        );
    }
}
