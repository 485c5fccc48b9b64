//! Batched `QKᵀ` across all heads: from a claim on the scores `QK̂` to claims on `Q̂` and `K̂`
//! (equation (1) of the spec).
//!
//! ```text
//! QK̂[head][i][j] = Σ_{c<m̂} Q̂[i][head·m̂ + c] · K̂[j][head·m̂ + c]
//! claim in:  QK̂(u) = y,   u = [u_j ‖ u_i ‖ u_h]
//! sum-check: y = Σ_{x ∈ {0,1}^{log ĥm̂}} b(x) · Q̂(u_i, x) · K̂(u_j, x),   b(x) = eq(⌊x/m̂⌋, u_h)
//! verifier:  b(w) = eq(w_head, u_h)                                       (closed form)
//! claims out: Q̂ at [w ‖ u_i],  K̂ at [w ‖ u_j]
//!
//! both modes (crate::mode): b public, Q̂ and K̂ hidden; in zero knowledge y and the claims
//! out are commitments, b(w) is checked in the clear
//! ```

use crate::common::{fold_rows, split_point};
use crate::mode::{Mode, PlainProductProof, Proved, product_of, prove_dense, verify_single};
use crate::structured::head_selector;
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::ZkProductShape;

const STEP: &str = "batched QKᵀ";

/// The batched `QKᵀ` proof (`P` the mode's product proof: plain by default).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct QkProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The sum-check of `b · Q̂(u_i, ·) · K̂(u_j, ·)`.
    pub product: P,
}

/// Claims on `Q̂` and `K̂` (values in the clear by default, hidden in zero knowledge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QkClaims<V = Fr> {
    /// On `Q̂` (`ŝ × ĥm̂`).
    pub queries_hat: EvalClaim<V>,
    /// On `K̂` (`ŝ × ĥm̂`).
    pub keys_hat: EvalClaim<V>,
}

fn parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.seq_vars(), shape.seq_vars(), shape.head_vars()]
}

fn num_vars(shape: &AttentionShape) -> usize {
    shape.head_vars() + shape.head_dim_vars()
}

/// `b` public, `Q̂` and `K̂` hidden.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    product_of(STEP, vec![true, false, false])
}

/// Proves the step for a claim on `QK̂`, in mode `M`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length; in zero knowledge
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
pub fn prove_qk<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    queries_hat: &[Fr],
    keys_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<QkProof<M::ProductProof>, QkClaims<M::ProverValue>> {
    let (u_i, u_j, mles) = tables(shape, queries_hat, keys_hat, &claim.point)?;
    let (product, out) = prove_dense::<M>(prover, STEP, &product_shape()?, mles, &claim.value, transcript)?;
    let w = &out.point;
    let claims = QkClaims {
        queries_hat: out.hidden(1, [w, u_i.as_slice()].concat(), STEP)?,
        keys_hat: out.hidden(2, [w, u_j.as_slice()].concat(), STEP)?,
    };
    Ok((QkProof { product }, claims))
}

/// `(u_i, u_j, [b, Q̂(u_i, ·), K̂(u_j, ·)])` for a claim point `[u_j ‖ u_i ‖ u_h]`.
#[allow(clippy::type_complexity)]
fn tables(
    shape: &AttentionShape,
    queries_hat: &[Fr],
    keys_hat: &[Fr],
    point: &[Fr],
) -> Result<(Vec<Fr>, Vec<Fr>, Vec<DenseMultilinearExtension>), AttentionError> {
    let split = split_point(point, &parts(shape), STEP)?;
    let (u_j, u_i, u_h) = (split[0], split[1], split[2]);
    let columns = shape.padded_heads() * shape.padded_head_dim();
    let head_weights = eq_table(u_h);
    let selector: Vec<Fr> = (0..columns).map(|x| head_weights[x >> shape.head_dim_vars()]).collect();
    let n = num_vars(shape);
    let mles = vec![
        DenseMultilinearExtension::new(n, selector)?,
        DenseMultilinearExtension::new(n, fold_rows(queries_hat, columns, u_i))?,
        DenseMultilinearExtension::new(n, fold_rows(keys_hat, columns, u_j))?,
    ];
    Ok((u_i.to_vec(), u_j.to_vec(), mles))
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (num_vars(shape), 3)
}

/// Verifies the step in mode `M`; returns the claims on `Q̂` and `K̂` (in zero knowledge with
/// the group equations left in the verifier's deferred checks).
///
/// # Errors
/// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
/// [`AttentionError::CheckFailed`] (the selector `b`).
#[deny(clippy::indexing_slicing)]
pub fn verify_qk<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &QkProof<M::ProductProof>,
    transcript: &mut Transcript,
) -> Result<QkClaims<M::Value>, AttentionError> {
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let [u_j, u_i, u_h] = [0, 1, 2].map(|k| split.get(k).copied().unwrap_or_default());
    let out = verify_single::<M>(
        verifier,
        STEP,
        &product_shape()?,
        num_vars(shape),
        &claim.value,
        &proof.product,
        transcript,
    )?;
    let w = &out.point;
    out.check_public(0, head_selector(shape.head_dim_vars(), u_h, w), STEP)?;
    Ok(QkClaims {
        queries_hat: out.hidden(1, [w, u_i].concat(), STEP)?,
        keys_hat: out.hidden(2, [w, u_j].concat(), STEP)?,
    })
}
