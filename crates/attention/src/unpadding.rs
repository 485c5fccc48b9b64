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
//! Both modes (`crate::mode`): `W` public, `Ô` hidden; in zero knowledge `y` and the claim out
//! are commitments.
//!
//! Unlike the spec, the row selector `[i < s]` is part of the relation: `O` holds only the real
//! rows, so the padded rows of `Ô` (which carry masked values) never reach the output.

use crate::common::split_point;
use crate::mode::{Mode, PlainProductProof, Proved, product_of, prove_dense, verify_single};
use crate::structured::{head_padding, prefix_eq_pair_sum};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::ZkProductShape;

const STEP: &str = "unpadding";

/// The unpadding proof (`P` the mode's product proof: plain by default).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct UnpaddingProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The sum-check of `Ô · W`.
    pub product: P,
}

fn num_vars(shape: &AttentionShape) -> usize {
    shape.seq_vars() + shape.head_vars() + shape.value_head_dim_vars()
}

/// `Ô` hidden, `W` public.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    product_of(STEP, vec![false, true])
}

/// Proves the unpadding step in mode `M` for a claim on `O` at `[r_col ‖ r_row]`; returns the
/// claim on `Ô`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length; in zero knowledge
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
pub fn prove_unpadding<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    output_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<UnpaddingProof<M::ProductProof>, EvalClaim<M::ProverValue>> {
    let mles = tables(shape, output_hat, &claim.point)?;
    let (product, out) = prove_dense::<M>(prover, STEP, &product_shape()?, mles, &claim.value, transcript)?;
    let claim_out = out.hidden(0, out.point.clone(), STEP)?;
    Ok((UnpaddingProof { product }, claim_out))
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

/// Verifies the unpadding step in mode `M`; returns the claim on `Ô` the caller must
/// discharge (in zero knowledge with the group equations left in the verifier's deferred
/// checks).
///
/// # Errors
/// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
/// [`AttentionError::CheckFailed`] (the weights `W`).
#[deny(clippy::indexing_slicing)]
pub fn verify_unpadding<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &UnpaddingProof<M::ProductProof>,
    transcript: &mut Transcript,
) -> Result<EvalClaim<M::Value>, AttentionError> {
    let parts = split_point(&claim.point, &[shape.value_model_vars(), shape.seq_vars()], STEP)?;
    let [r_col, r_row] = [0, 1].map(|k| parts.get(k).copied().unwrap_or_default());
    let out = verify_single::<M>(
        verifier,
        STEP,
        &product_shape()?,
        num_vars(shape),
        &claim.value,
        &proof.product,
        transcript,
    )?;
    out.check_public(1, weight_value(shape, r_col, r_row, &out.point), STEP)?;
    Ok(out.hidden(0, out.point.clone(), STEP)?)
}
