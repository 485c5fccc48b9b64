//! Masking: from a claim on the masked scores `QK_M` to a claim on the scores `QK̂`.
//!
//! ```text
//! QK_M[head][i][j] = z[i][j] · QK̂[head][i][j] + m[i][j]            (ĥ × ŝ × ŝ; z, m shared by heads)
//! claim in:  QK_M(c) = y,   c = [c_j ‖ c_i ‖ c_h]
//! y_Z := y − m(c_i, c_j)                                            (closed form)
//! sum-check: y_Z = Σ_{t ∈ {0,1}^{log ĥŝŝ}} eq(t, c) · ẑ(t) · QK̂(t)  (degree 3)
//! verifier:  eq(u, c) and ẑ(u) = z(u_i, u_j)                        (closed forms, O(log))
//! claim out: QK̂(u) = v
//! ```
//!
//! `z` keeps `i < s ∧ j ≤ i` (causal) or `i < s ∧ j < s` (none); every padded row and
//! column is masked. `m = MASK · (1 − z)` with `MASK = −2^100`.

use crate::common::{check_structured, split_point, sumcheck_error};
use crate::structured::{mask_matrix, zeroifier};
use crate::witness::keeps;
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, One, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;

const STEP: &str = "masking";
const LABEL_CLAIM: &[u8] = b"attention/masking/claim";

/// The masking proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MaskingProof {
    /// Sum-check of `eq · ẑ · QK̂`.
    pub sumcheck: ProductSumcheckProof,
}

fn parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.seq_vars(), shape.seq_vars(), shape.head_vars()]
}

/// Proves the masking step for a claim on `QK_M`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length.
pub fn prove_masking(
    shape: &AttentionShape,
    mask: MaskKind,
    scores: &[Fr],
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(MaskingProof, EvalClaim), AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let (c_j, c_i) = (split[0], split[1]);
    let zeroified = claim.value - mask_matrix(mask, shape.seq_len, c_i, c_j);
    let sp = shape.padded_seq_len();
    let block: Vec<Fr> = (0..sp * sp)
        .map(|x| if keeps(mask, shape.seq_len, x / sp, x % sp) { Fr::one() } else { Fr::zero() })
        .collect();
    let zeroifier_table: Vec<Fr> = block.iter().cycle().take(scores.len()).copied().collect();
    let n = claim.point.len();
    let mles = vec![
        DenseMultilinearExtension::new(n, eq_table(&claim.point))?,
        DenseMultilinearExtension::new(n, zeroifier_table)?,
        DenseMultilinearExtension::new(n, scores.to_vec())?,
    ];
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let (sumcheck, claims) =
        prove_product(&product, mles, zeroified, transcript).map_err(sumcheck_error(STEP))?;
    let out = claims.into_iter().nth(2).ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((MaskingProof { sumcheck }, out))
}

/// Verifies the masking step; returns the claim on `QK̂`.
///
/// # Errors
/// [`AttentionError::Sumcheck`] or [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing)]
pub fn verify_masking(
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &EvalClaim,
    proof: &MaskingProof,
    transcript: &mut Transcript,
) -> Result<EvalClaim, AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let [c_j, c_i] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
    let zeroified = claim.value - mask_matrix(mask, shape.seq_len, c_i, c_j);
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    let sumcheck_claim = SumcheckClaim::new(claim.point.len(), 3, zeroified);
    let claims = verify_product(&product, &sumcheck_claim, &proof.sumcheck, transcript)
        .map_err(sumcheck_error(STEP))?;
    let [eq_claim, zeroifier_claim] = [0, 1].map(|k| claims.get(k));
    let point = eq_claim.map(|c| c.point.clone()).unwrap_or_default();
    check_structured(eq_claim, eq_evaluation(&point, &claim.point)?, STEP)?;
    let u = split_point(&point, &parts(shape), STEP)?;
    let [u_j, u_i] = [0, 1].map(|k| u.get(k).copied().unwrap_or_default());
    check_structured(zeroifier_claim, zeroifier(mask, shape.seq_len, u_i, u_j), STEP)?;
    claims.into_iter().nth(2).ok_or(AttentionError::CheckFailed { step: STEP })
}
