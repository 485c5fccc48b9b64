//! `softmax·V`: from a claim on `Ô` to claims on the attention matrix `A` and on `V̂`, with the
//! permuted `Ṽ` (equation (2) of the spec).
//!
//! ```text
//! Ô[i][head·m̂_v + c] = Σ_j A[head][i][j] · Ṽ[head][j][c],     Ṽ[head][j][c] = V̂[j][head·m̂_v + c]
//! claim in:  Ô(q_i, (q_m, q_h)) = y
//! sum-check over (head, j) ∈ {0,1}^{log ĥ} × {0,1}^{log ŝ}   (j low):
//!            y = Σ b(head, j) · Ã(head, q_i, j) · Ṽ(head, j, q_m),    b(head, j) = eq(head, q_h)
//! verifier:  b(t_h, t_j) = eq(t_h, q_h)
//! claims out: Ã(t_h, q_i, t_j)   — tensor point [t_j ‖ q_i ‖ t_h]
//!             V̂(t_j, (q_m, t_h)) — matrix point [q_m ‖ t_h ‖ t_j]  (the coordinate swap Ṽ → V̂)
//!
//! zero knowledge (prove_attention_values_zk / verify_attention_values_zk): the same sum-check
//! through zkmha_zk::prove_zk_product from a committed y; b public, Ã and Ṽ hidden: the claims
//! out are commitments
//! ```

use crate::common::{check_structured, split_point, sumcheck_error};
use crate::structured::mask_value;
use crate::witness::keeps;
use crate::zk_claims::{
    CommittedClaim, WitnessClaim, check_public, hidden, prove_dense_product, witness, zk_error,
};
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_pcs::HyraxParams;
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    DeferredChecks, ProverMasks, VerifierMasks, ZkProductProof, ZkProductShape, verify_zk_product_deferred,
};

const STEP: &str = "softmax·V";
const LABEL_CLAIM: &[u8] = b"attention/attention-values/claim";

/// The `softmax·V` proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct AttentionValuesProof {
    /// Sum-check of `b · Ã · Ṽ`.
    pub sumcheck: ProductSumcheckProof,
}

/// Claims produced by the step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionValuesClaims {
    /// On the attention matrix `A` (`ĥ × ŝ × ŝ`).
    pub attention: EvalClaim,
    /// On `V̂` (`ŝ × ĥm̂_v`).
    pub values_hat: EvalClaim,
}

fn claim_parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.value_head_dim_vars(), shape.head_vars(), shape.seq_vars()]
}

fn outputs(
    shape: &AttentionShape,
    q_m: &[Fr],
    q_i: &[Fr],
    point: &[Fr],
    a: Fr,
    v: Fr,
) -> AttentionValuesClaims {
    let (t_j, t_h) = point.split_at(shape.seq_vars().min(point.len()));
    let attention = EvalClaim { point: [t_j, q_i, t_h].concat(), value: a };
    let values_hat = EvalClaim { point: [q_m, t_h, t_j].concat(), value: v };
    AttentionValuesClaims { attention, values_hat }
}

/// The attention matrix `A` as the prover holds it.
#[derive(Clone, Copy, Debug)]
pub enum AttentionMatrix<'a> {
    /// Linear attention: `A = QK_M = z ⊙ QK̂ + m`, derived on the fly from the scores.
    Masked {
        /// `QK̂`, `ĥ × ŝ × ŝ`.
        scores: &'a [Fr],
        /// The mask.
        mask: MaskKind,
    },
    /// `A` itself, `ĥ × ŝ × ŝ` integers (the proven softmax's fixed-point probabilities).
    Explicit(&'a [i64]),
}

/// Proves the step for a claim on `Ô` at `[q_m ‖ q_h ‖ q_i]`, given `A` and `V̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length.
pub fn prove_attention_values(
    shape: &AttentionShape,
    attention: AttentionMatrix<'_>,
    values_hat: &[Fr],
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(AttentionValuesProof, AttentionValuesClaims), AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let (q_m, q_i, mles) = tables(shape, attention, values_hat, &claim.point)?;
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let (sumcheck, claims) =
        prove_product(&product, mles, claim.value, transcript).map_err(sumcheck_error(STEP))?;
    let point = claims[0].point.clone();
    let out = outputs(shape, &q_m, &q_i, &point, claims[1].value, claims[2].value);
    Ok((AttentionValuesProof { sumcheck }, out))
}

/// `(q_m, q_i, [b, Ã(·, q_i, ·), Ṽ(·, ·, q_m)])` for a claim point `[q_m ‖ q_h ‖ q_i]`.
#[allow(clippy::type_complexity)]
fn tables(
    shape: &AttentionShape,
    attention: AttentionMatrix<'_>,
    values_hat: &[Fr],
    point: &[Fr],
) -> Result<(Vec<Fr>, Vec<Fr>, Vec<DenseMultilinearExtension>), AttentionError> {
    let parts = split_point(point, &claim_parts(shape), STEP)?;
    let (q_m, q_h, q_i) = (parts[0], parts[1], parts[2]);
    let (sp, hp, mvp) = (shape.padded_seq_len(), shape.padded_heads(), shape.padded_value_head_dim());
    let head_weights = eq_table(q_h);
    let selector: Vec<Fr> = (0..hp * sp).map(|x| head_weights[x / sp]).collect();
    // Ã(head, q_i, j) = Σ_{i kept} eq(i, q_i)·QK̂[head][i][j] + MASK · Σ_{i masked} eq(i, q_i)
    let row_weights = eq_table(q_i);
    let mask_fr = mask_value();
    let folded_attention: Vec<Fr> = (0..hp * sp)
        .into_par_iter()
        .with_min_len(64)
        .map(|x| {
            let (head, j) = (x / sp, x % sp);
            let mut kept = UnreducedSum::new();
            let mut masked = Fr::zero();
            for (i, w) in row_weights.iter().enumerate() {
                match attention {
                    AttentionMatrix::Masked { scores, mask } => {
                        if keeps(mask, shape.seq_len, i, j) {
                            kept.add_product(w, &scores[(head * sp + i) * sp + j]);
                        } else {
                            masked += w;
                        }
                    }
                    AttentionMatrix::Explicit(a) => {
                        let value = a[(head * sp + i) * sp + j];
                        if value != 0 {
                            kept.add_product(w, &zkmha_field::fr_from_i64(value));
                        }
                    }
                }
            }
            kept.finish() + mask_fr * masked
        })
        .collect();
    // Ṽ(head, j, q_m) = Σ_c eq(c, q_m) V̂[j][head·m̂_v + c]
    let value_weights = eq_table(q_m);
    let columns = hp * mvp;
    let folded_values: Vec<Fr> = (0..hp * sp)
        .into_par_iter()
        .with_min_len(256)
        .map(|x| {
            let (head, j) = (x / sp, x % sp);
            let row = &values_hat[j * columns + head * mvp..j * columns + (head + 1) * mvp];
            let mut acc = UnreducedSum::new();
            for (w, v) in value_weights.iter().zip(row) {
                acc.add_product(w, v);
            }
            acc.finish()
        })
        .collect();
    let n = shape.head_vars() + shape.seq_vars();
    let mles = vec![
        DenseMultilinearExtension::new(n, selector)?,
        DenseMultilinearExtension::new(n, folded_attention)?,
        DenseMultilinearExtension::new(n, folded_values)?,
    ];
    Ok((q_m.to_vec(), q_i.to_vec(), mles))
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (shape.head_vars() + shape.seq_vars(), 3)
}

/// `b` public, `Ã` and `Ṽ` hidden.
fn zk_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    ZkProductShape::new(product, vec![true, false, false]).map_err(zk_error(STEP))
}

/// The points of the claims out on `A` and `V̂` for the sum-check point `[t_j ‖ t_h]`.
fn output_points(shape: &AttentionShape, q_m: &[Fr], q_i: &[Fr], point: &[Fr]) -> (Vec<Fr>, Vec<Fr>) {
    let (t_j, t_h) = point.split_at(shape.seq_vars().min(point.len()));
    ([t_j, q_i, t_h].concat(), [q_m, t_h, t_j].concat())
}

/// The zero-knowledge `softmax·V` proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct AttentionValuesZkProof {
    /// The zero-knowledge sum-check of `b · Ã · Ṽ`.
    pub product: ZkProductProof,
}

/// Committed claims on `A` and `V̂` (verifier side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionValuesCommittedClaims {
    /// On `A`.
    pub attention: CommittedClaim,
    /// On `V̂`.
    pub values_hat: CommittedClaim,
}

/// Committed claims on `A` and `V̂` with their openings (prover side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionValuesWitnessClaims {
    /// On `A`.
    pub attention: WitnessClaim,
    /// On `V̂`.
    pub values_hat: WitnessClaim,
}

/// Proves the step in zero knowledge for a committed claim on `Ô`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length,
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
#[allow(clippy::too_many_arguments)]
pub fn prove_attention_values_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    attention: AttentionMatrix<'_>,
    values_hat: &[Fr],
    claim: &WitnessClaim,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(AttentionValuesZkProof, AttentionValuesWitnessClaims), AttentionError> {
    let (q_m, q_i, mles) = tables(shape, attention, values_hat, &claim.claim.point)?;
    let (product, claims, openings) =
        prove_dense_product(params, &zk_shape()?, mles, claim, masks, transcript, rng, STEP)?;
    let (a_point, v_point) = output_points(shape, &q_m, &q_i, &claims.point);
    let out = AttentionValuesWitnessClaims {
        attention: witness(&claims.values, &openings, 1, a_point, STEP)?,
        values_hat: witness(&claims.values, &openings, 2, v_point, STEP)?,
    };
    Ok((AttentionValuesZkProof { product }, out))
}

/// Verifies the zero-knowledge step; returns the committed claims on `A` and `V̂`, with the
/// group equations left in `checks`.
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] or [`AttentionError::CheckFailed`] (the selector `b`).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub fn verify_attention_values_zk(
    params: &HyraxParams,
    shape: &AttentionShape,
    claim: &CommittedClaim,
    proof: &AttentionValuesZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<AttentionValuesCommittedClaims, AttentionError> {
    let parts = split_point(&claim.point, &claim_parts(shape), STEP)?;
    let [q_m, q_h, q_i] = [0, 1, 2].map(|k| parts.get(k).copied().unwrap_or_default());
    let n = shape.head_vars() + shape.seq_vars();
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
    let t_h = claims.point.get(shape.seq_vars()..).unwrap_or_default();
    check_public(claims.values.first(), eq_evaluation(t_h, q_h)?, STEP)?;
    let (a_point, v_point) = output_points(shape, q_m, q_i, &claims.point);
    Ok(AttentionValuesCommittedClaims {
        attention: hidden(claims.values.get(1), a_point, STEP)?,
        values_hat: hidden(claims.values.get(2), v_point, STEP)?,
    })
}

/// Verifies the step; returns the claims on `A` and `V̂`.
///
/// # Errors
/// [`AttentionError::Sumcheck`] or [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing)]
pub fn verify_attention_values(
    shape: &AttentionShape,
    claim: &EvalClaim,
    proof: &AttentionValuesProof,
    transcript: &mut Transcript,
) -> Result<AttentionValuesClaims, AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let parts = split_point(&claim.point, &claim_parts(shape), STEP)?;
    let [q_m, q_h, q_i] = [0, 1, 2].map(|k| parts.get(k).copied().unwrap_or_default());
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let sumcheck_claim = SumcheckClaim::new(shape.head_vars() + shape.seq_vars(), 3, claim.value);
    let claims = verify_product(&product, &sumcheck_claim, &proof.sumcheck, transcript)
        .map_err(sumcheck_error(STEP))?;
    let [selector, attention, values] = [0, 1, 2].map(|k| claims.get(k));
    let point = selector.map(|c| c.point.clone()).unwrap_or_default();
    let t_h = point.get(shape.seq_vars()..).unwrap_or_default();
    check_structured(selector, eq_evaluation(t_h, q_h)?, STEP)?;
    let (a, v) = match (attention, values) {
        (Some(a), Some(v)) => (a.value, v.value),
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    Ok(outputs(shape, q_m, q_i, &point, a, v))
}
