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
//! zero knowledge (prove_qk_zk / verify_qk_zk): the claim in is a commitment to y, the same
//! sum-check runs through zkmha_zk::prove_zk_product with b public and Q̂, K̂ hidden: the
//! claims out are commitments to Q̂(w, u_i) and K̂(w, u_j), b(w) is checked in the clear
//! ```

use crate::common::{check_structured, fold_rows, split_point, sumcheck_error};
use crate::structured::head_selector;
use crate::zk_claims::{
    CommittedClaim, WitnessClaim, check_public, hidden, prove_dense_product, witness, zk_error,
};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_pcs::HyraxParams;
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    DeferredChecks, ProverMasks, VerifierMasks, ZkProductProof, ZkProductShape, verify_zk_product_deferred,
};

const STEP: &str = "batched QKᵀ";
const LABEL_CLAIM: &[u8] = b"attention/qk/claim";

/// The batched `QKᵀ` proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct QkProof {
    /// Sum-check of `b · Q̂(u_i, ·) · K̂(u_j, ·)`.
    pub sumcheck: ProductSumcheckProof,
}

/// Claims on `Q̂` and `K̂`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QkClaims {
    /// On `Q̂` (`ŝ × ĥm̂`).
    pub queries_hat: EvalClaim,
    /// On `K̂` (`ŝ × ĥm̂`).
    pub keys_hat: EvalClaim,
}

fn parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.seq_vars(), shape.seq_vars(), shape.head_vars()]
}

fn outputs(u_i: &[Fr], u_j: &[Fr], w: &[Fr], q: Fr, k: Fr) -> QkClaims {
    QkClaims {
        queries_hat: EvalClaim { point: [w, u_i].concat(), value: q },
        keys_hat: EvalClaim { point: [w, u_j].concat(), value: k },
    }
}

/// Proves the step for a claim on `QK̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length.
pub fn prove_qk(
    shape: &AttentionShape,
    queries_hat: &[Fr],
    keys_hat: &[Fr],
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(QkProof, QkClaims), AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let (u_i, u_j, mles) = tables(shape, queries_hat, keys_hat, &claim.point)?;
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let (sumcheck, claims) =
        prove_product(&product, mles, claim.value, transcript).map_err(sumcheck_error(STEP))?;
    let out = outputs(&u_i, &u_j, &claims[0].point, claims[1].value, claims[2].value);
    Ok((QkProof { sumcheck }, out))
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
    let n = shape.head_vars() + shape.head_dim_vars();
    let mles = vec![
        DenseMultilinearExtension::new(n, selector)?,
        DenseMultilinearExtension::new(n, fold_rows(queries_hat, columns, u_i))?,
        DenseMultilinearExtension::new(n, fold_rows(keys_hat, columns, u_j))?,
    ];
    Ok((u_i.to_vec(), u_j.to_vec(), mles))
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (shape.head_vars() + shape.head_dim_vars(), 3)
}

/// `b` public, `Q̂` and `K̂` hidden.
fn zk_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    ZkProductShape::new(product, vec![true, false, false]).map_err(zk_error(STEP))
}

/// The zero-knowledge `QKᵀ` proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct QkZkProof {
    /// The zero-knowledge sum-check of `b · Q̂(u_i, ·) · K̂(u_j, ·)`.
    pub product: ZkProductProof,
}

/// Committed claims on `Q̂` and `K̂` (verifier side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QkCommittedClaims {
    /// On `Q̂`.
    pub queries_hat: CommittedClaim,
    /// On `K̂`.
    pub keys_hat: CommittedClaim,
}

/// Committed claims on `Q̂` and `K̂` with their openings (prover side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QkWitnessClaims {
    /// On `Q̂`.
    pub queries_hat: WitnessClaim,
    /// On `K̂`.
    pub keys_hat: WitnessClaim,
}

/// Proves the step in zero knowledge for a committed claim on `QK̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length,
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
#[allow(clippy::too_many_arguments)]
pub fn prove_qk_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    queries_hat: &[Fr],
    keys_hat: &[Fr],
    claim: &WitnessClaim,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(QkZkProof, QkWitnessClaims), AttentionError> {
    let (u_i, u_j, mles) = tables(shape, queries_hat, keys_hat, &claim.claim.point)?;
    let (product, claims, openings) =
        prove_dense_product(params, &zk_shape()?, mles, claim, masks, transcript, rng, STEP)?;
    let w = &claims.point;
    let out = QkWitnessClaims {
        queries_hat: witness(&claims.values, &openings, 1, [w, u_i.as_slice()].concat(), STEP)?,
        keys_hat: witness(&claims.values, &openings, 2, [w, u_j.as_slice()].concat(), STEP)?,
    };
    Ok((QkZkProof { product }, out))
}

/// Verifies the zero-knowledge step; returns the committed claims on `Q̂` and `K̂`, with the
/// group equations left in `checks`.
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] or [`AttentionError::CheckFailed`] (the selector `b`).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub fn verify_qk_zk(
    params: &HyraxParams,
    shape: &AttentionShape,
    claim: &CommittedClaim,
    proof: &QkZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<QkCommittedClaims, AttentionError> {
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let [u_j, u_i, u_h] = [0, 1, 2].map(|k| split.get(k).copied().unwrap_or_default());
    let n = shape.head_vars() + shape.head_dim_vars();
    let claims = verify_zk_product_deferred(
        params,
        &zk_shape()?,
        n,
        claim.commitment,
        &proof.product,
        masks,
        transcript,
        checks,
    )
    .map_err(zk_error(STEP))?;
    let w = &claims.point;
    check_public(claims.values.first(), head_selector(shape.head_dim_vars(), u_h, w), STEP)?;
    Ok(QkCommittedClaims {
        queries_hat: hidden(claims.values.get(1), [w, u_i].concat(), STEP)?,
        keys_hat: hidden(claims.values.get(2), [w, u_j].concat(), STEP)?,
    })
}

/// Verifies the step; returns the claims on `Q̂` and `K̂`.
///
/// # Errors
/// [`AttentionError::Sumcheck`] or [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing)]
pub fn verify_qk(
    shape: &AttentionShape,
    claim: &EvalClaim,
    proof: &QkProof,
    transcript: &mut Transcript,
) -> Result<QkClaims, AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let [u_j, u_i, u_h] = [0, 1, 2].map(|k| split.get(k).copied().unwrap_or_default());
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let sumcheck_claim = SumcheckClaim::new(shape.head_vars() + shape.head_dim_vars(), 3, claim.value);
    let claims = verify_product(&product, &sumcheck_claim, &proof.sumcheck, transcript)
        .map_err(sumcheck_error(STEP))?;
    let [selector, q, k] = [0, 1, 2].map(|i| claims.get(i));
    let w = selector.map(|c| c.point.clone()).unwrap_or_default();
    check_structured(selector, head_selector(shape.head_dim_vars(), u_h, &w), STEP)?;
    match (q, k) {
        (Some(q), Some(k)) => Ok(outputs(u_i, u_j, &w, q.value, k.value)),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}
