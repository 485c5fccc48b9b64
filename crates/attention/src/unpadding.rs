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
//! Unlike the spec, the row selector `[i < s]` is part of the relation: `O` holds only the real
//! rows, so the padded rows of `Ô` (which carry masked values) never reach the output.

use crate::common::{check_structured, split_point, sumcheck_error};
use crate::structured::{head_padding, prefix_eq_pair_sum};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;

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
    let parts = split_point(&claim.point, &[shape.value_model_vars(), shape.seq_vars()], STEP)?;
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
    let mles = vec![
        DenseMultilinearExtension::new(n, output_hat.to_vec())?,
        DenseMultilinearExtension::new(n, weights)?,
    ];
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let (sumcheck, claims) =
        prove_product(&product, mles, claim.value, transcript).map_err(sumcheck_error(STEP))?;
    let out = claims.into_iter().next().ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((UnpaddingProof { sumcheck }, out))
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
    let cols = shape.head_vars() + shape.value_head_dim_vars();
    let (q_x, q_i) = point.split_at(cols.min(point.len()));
    let expected = prefix_eq_pair_sum(shape.seq_len, q_i, r_row)
        * head_padding(shape.heads, shape.value_head_dim, r_col, q_x);
    check_structured(weight_claim, expected, STEP)?;
    claims.into_iter().next().ok_or(AttentionError::CheckFailed { step: STEP })
}
