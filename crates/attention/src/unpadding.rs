//! Unpadding: from a claim on the layer output `O` to a claim on the padded heads' output `Ô`.
//!
//! ```text
//! O[i][y] = [i < s] · Σ_x Ô[i][x] · U[x][y]        O: s × h·m_v (padded ŝ × d_v),  Ô: ŝ × ĥm̂_v
//! claim in:  Õ(r_row, r_col) = y
//! sum-check: y = Σ_{i ∈ {0,1}^{log ŝ}} Σ_{x ∈ {0,1}^{log ĥm̂_v}} Ô(i, x) · W(i, x)
//!            W(i, x) = eq(i, r_row)·[i < s] · U(x, r_col)       (degree 2, log ŝ + log ĥm̂_v variables)
//! verifier:  W(q_i, q_x) = prefix_eq_pair_sum(s, q_i, r_row) · head_padding(h, m_v, r_col, q_x)
//! claim out: Ô(q_i, q_x) = v
//! ```
//!
//! Zero knowledge (`prove_unpadding_zk` / `verify_unpadding_zk`): the same sum-check through
//! `zkmha_zk::prove_zk_product` from a committed `y`, `W` public, `Ô` hidden: the claim out is a
//! commitment to `Ô(q_i, q_x)`.
//!
//! Unlike the spec, the row selector `[i < s]` is part of the relation: `O` holds only the real
//! rows, so the padded rows of `Ô` (which carry masked values) never reach the output.

use crate::common::{check_structured, split_point, sumcheck_error};
use crate::structured::{head_padding, prefix_eq_pair_sum};
use crate::zk_claims::{
    CommittedClaim, WitnessClaim, check_public, hidden, prove_dense_product, witness, zk_error,
};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_pcs::HyraxParams;
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    DeferredChecks, ProverMasks, VerifierMasks, ZkProductProof, ZkProductShape, verify_zk_product_deferred,
};

const STEP: &str = "unpadding";
const LABEL_CLAIM: &[u8] = b"attention/unpadding/claim";

/// The unpadding proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct UnpaddingProof {
    /// Sum-check of `Ô · W`.
    pub sumcheck: ProductSumcheckProof,
}

fn num_vars(shape: &AttentionShape) -> usize {
    shape.seq_vars() + shape.head_vars() + shape.value_head_dim_vars()
}

/// Proves the unpadding step for a claim on `O` at `[r_col ‖ r_row]`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length.
pub fn prove_unpadding(
    shape: &AttentionShape,
    output_hat: &[Fr],
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(UnpaddingProof, EvalClaim), AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let mles = tables(shape, output_hat, &claim.point)?;
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let (sumcheck, claims) =
        prove_product(&product, mles, claim.value, transcript).map_err(sumcheck_error(STEP))?;
    let out = claims.into_iter().next().ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((UnpaddingProof { sumcheck }, out))
}

/// `[Ô, W]` for a claim point `[r_col ‖ r_row]`.
fn tables(
    shape: &AttentionShape,
    output_hat: &[Fr],
    point: &[Fr],
) -> Result<Vec<DenseMultilinearExtension>, AttentionError> {
    let parts = split_point(point, &[shape.value_model_vars(), shape.seq_vars()], STEP)?;
    let (r_col, r_row) = (parts[0], parts[1]);
    let rows = eq_table(r_row);
    let columns = eq_table(r_col);
    let (hp, mvp) = (shape.padded_heads(), shape.padded_value_head_dim());
    let width = hp * mvp;
    // U(x, r_col) for x = head·m̂_v + c
    let mut unpad = vec![Fr::zero(); width];
    for head in 0..shape.heads {
        for c in 0..shape.value_head_dim {
            unpad[head * mvp + c] = columns[head * shape.value_head_dim + c];
        }
    }
    let mut weights = vec![Fr::zero(); shape.padded_seq_len() * width];
    for (i, row_weight) in rows.iter().enumerate().take(shape.seq_len) {
        for (slot, u) in weights[i * width..(i + 1) * width].iter_mut().zip(&unpad) {
            *slot = *row_weight * u;
        }
    }
    let n = num_vars(shape);
    Ok(vec![
        DenseMultilinearExtension::new(n, output_hat.to_vec())?,
        DenseMultilinearExtension::new(n, weights)?,
    ])
}

/// `W`'s closed form at the sum-check's point `[q_x ‖ q_i]`.
fn weight_value(shape: &AttentionShape, r_col: &[Fr], r_row: &[Fr], point: &[Fr]) -> Fr {
    let cols = shape.head_vars() + shape.value_head_dim_vars();
    let (q_x, q_i) = point.split_at(cols.min(point.len()));
    prefix_eq_pair_sum(shape.seq_len, q_i, r_row)
        * head_padding(shape.heads, shape.value_head_dim, r_col, q_x)
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (num_vars(shape), 2)
}

/// `Ô` hidden, `W` public.
fn zk_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    ZkProductShape::new(product, vec![false, true]).map_err(zk_error(STEP))
}

/// The zero-knowledge unpadding proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct UnpaddingZkProof {
    /// The zero-knowledge sum-check of `Ô · W`.
    pub product: ZkProductProof,
}

/// Proves the unpadding step in zero knowledge for a committed claim on `O`; returns the
/// committed claim on `Ô` with its opening.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length,
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
#[allow(clippy::too_many_arguments)]
pub fn prove_unpadding_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    output_hat: &[Fr],
    claim: &WitnessClaim,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(UnpaddingZkProof, WitnessClaim), AttentionError> {
    let mles = tables(shape, output_hat, &claim.claim.point)?;
    let (product, claims, openings) =
        prove_dense_product(params, &zk_shape()?, mles, claim, masks, transcript, rng, STEP)?;
    let out = witness(&claims.values, &openings, 0, claims.point.clone(), STEP)?;
    Ok((UnpaddingZkProof { product }, out))
}

/// Verifies the zero-knowledge unpadding step; returns the committed claim on `Ô`, with the
/// group equations left in `checks`.
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] or [`AttentionError::CheckFailed`] (the weights `W`).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub fn verify_unpadding_zk(
    params: &HyraxParams,
    shape: &AttentionShape,
    claim: &CommittedClaim,
    proof: &UnpaddingZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<CommittedClaim, AttentionError> {
    let parts = split_point(&claim.point, &[shape.value_model_vars(), shape.seq_vars()], STEP)?;
    let [r_col, r_row] = [0, 1].map(|k| parts.get(k).copied().unwrap_or_default());
    let claims = verify_zk_product_deferred(
        params,
        &zk_shape()?,
        num_vars(shape),
        claim.commitment,
        &proof.product,
        masks,
        transcript,
        checks,
    )
    .map_err(zk_error(STEP))?;
    check_public(claims.values.get(1), weight_value(shape, r_col, r_row, &claims.point), STEP)?;
    hidden(claims.values.first(), claims.point.clone(), STEP)
}

/// Verifies the unpadding step; returns the claim on `Ô` the caller must discharge.
///
/// # Errors
/// [`AttentionError::Sumcheck`] or [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing)]
pub fn verify_unpadding(
    shape: &AttentionShape,
    claim: &EvalClaim,
    proof: &UnpaddingProof,
    transcript: &mut Transcript,
) -> Result<EvalClaim, AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let parts = split_point(&claim.point, &[shape.value_model_vars(), shape.seq_vars()], STEP)?;
    let (r_col, r_row) =
        (parts.first().copied().unwrap_or_default(), parts.get(1).copied().unwrap_or_default());
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let sumcheck_claim = SumcheckClaim::new(num_vars(shape), 2, claim.value);
    let claims = verify_product(&product, &sumcheck_claim, &proof.sumcheck, transcript)
        .map_err(sumcheck_error(STEP))?;
    let weight_claim = claims.get(1);
    let point = weight_claim.map(|c| c.point.clone()).unwrap_or_default();
    check_structured(weight_claim, weight_value(shape, r_col, r_row, &point), STEP)?;
    claims.into_iter().next().ok_or(AttentionError::CheckFailed { step: STEP })
}
