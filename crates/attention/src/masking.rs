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
//! Zero knowledge (`prove_masking_zk` / `verify_masking_zk`): from a commitment `C` to `y`, the
//! claimed sum's commitment is `C − m(c_i, c_j)·U`; the same sum-check runs through
//! `zkmha_zk::prove_zk_product` with `eq` and `ẑ` public and `QK̂` hidden.
//!
//! `z` keeps `i < s ∧ j ≤ i` (causal) or `i < s ∧ j < s` (none); every padded row and
//! column is masked. `m = MASK · (1 − z)` with `MASK = −2^100`.

use crate::common::{check_structured, split_point, sumcheck_error};
use crate::structured::{mask_matrix, zeroifier};
use crate::witness::keeps;
use crate::zk_claims::{CommittedClaim, WitnessClaim, check_public, hidden, witness, zk_error};
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use rayon::prelude::*;
use zkmha_field::{Fr, One, UnreducedSum, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::{
    EvalClaim, FinalEvaluations, ProductSumcheck, ProductSumcheckProof, SumOfProducts, SumcheckClaim,
    SumcheckInstance, prove_instance_with_evaluations, prove_product, verify_product,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    DeferredChecks, ProverMasks, ValueOpening, VerifierMasks, ZkProductProof, ZkProductShape,
    prove_zk_product, verify_zk_product_deferred,
};

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

/// Absorbs the claim on `QK_M` and returns `y_Z = y_M − m(c_i, c_j)`, the claimed sum over the
/// zeroified scores (prover and verifier alike).
#[deny(clippy::indexing_slicing)]
fn absorb_and_unmask(
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<Fr, AttentionError> {
    transcript.append_field(LABEL_CLAIM, &claim.value);
    let split = split_point(&claim.point, &parts(shape), STEP)?;
    let [c_j, c_i] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
    Ok(claim.value - mask_matrix(mask, shape.seq_len, c_i, c_j))
}

/// The prover's instance for `Σ_t eq(t, c)·ẑ(t)·QK̂(t)`, aware of its structure.
///
/// The head bits are the highest variables, so they are bound first, and `ẑ` does not depend
/// on them: during those rounds `ẑ` is exactly 0/1 and `eq` splits into a head part and a
/// (row, column) part, so a round costs two unreduced products per *kept* entry plus the
/// binding of the score table:
///
/// ```text
/// s(X) = Σ_{h'} eq_head(X, h') · G_{h'}(X),   G_{h'}(X) = Σ_{(i,j) kept} eq_ij(i, j) · QK̂(X, h', i, j)
/// ```
///
/// (degree 2 in `X`: the `X³` coefficient is 0). Once the head bits are bound, the rest is a
/// plain product over the `ŝ × ŝ` tables. The round messages are those of the dense product
/// of the three MLEs (tested), so the verifier is the generic one.
struct MaskingInstance {
    scores: Vec<Fr>,
    head_eq: Vec<Fr>,
    pair_eq: Vec<Fr>,
    keep: Vec<bool>,
    num_vars: usize,
    dense: Option<ProductSumcheck>,
}

impl MaskingInstance {
    fn new(
        shape: &AttentionShape,
        mask: MaskKind,
        scores: Vec<Fr>,
        point: &[Fr],
    ) -> Result<Self, AttentionError> {
        let split = split_point(point, &parts(shape), STEP)?;
        let pair_point = [split[0], split[1]].concat();
        let sp = shape.padded_seq_len();
        let keep = (0..sp * sp).map(|x| keeps(mask, shape.seq_len, x / sp, x % sp)).collect();
        let mut instance = Self {
            scores,
            head_eq: eq_table(split[2]),
            pair_eq: eq_table(&pair_point),
            keep,
            num_vars: point.len(),
            dense: None,
        };
        if instance.head_eq.len() == 1 {
            instance.switch_to_dense()?;
        }
        Ok(instance)
    }

    fn switch_to_dense(&mut self) -> Result<(), AttentionError> {
        let scale = self.head_eq.first().copied().unwrap_or_else(Fr::zero);
        let eq: Vec<Fr> = self.pair_eq.iter().map(|e| *e * scale).collect();
        let zeroifier: Vec<Fr> = self.keep.iter().map(|&k| if k { Fr::one() } else { Fr::zero() }).collect();
        let scores = std::mem::take(&mut self.scores);
        let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
        let n = self.num_vars;
        let mles = vec![
            DenseMultilinearExtension::new(n, eq)?,
            DenseMultilinearExtension::new(n, zeroifier)?,
            DenseMultilinearExtension::new(n, scores)?,
        ];
        self.dense = Some(ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?);
        Ok(())
    }
}

impl SumcheckInstance for MaskingInstance {
    fn num_vars(&self) -> usize {
        self.num_vars
    }

    fn degree(&self) -> usize {
        3
    }

    fn round_evaluations(&mut self, previous_claim: Fr, evaluations: &mut [Fr]) {
        if let Some(dense) = &mut self.dense {
            return dense.round_evaluations(previous_claim, evaluations);
        }
        let block = self.pair_eq.len();
        let half = self.head_eq.len() / 2;
        let (pair_eq, keep, scores) = (&self.pair_eq, &self.keep, &self.scores);
        // G[h'] at X = 0 and X = 1
        let sums: Vec<(Fr, Fr)> = (0..half)
            .into_par_iter()
            .map(|h| {
                let low = &scores[h * block..(h + 1) * block];
                let high = &scores[(h + half) * block..(h + half + 1) * block];
                let fold = |(mut a, mut b): (UnreducedSum, UnreducedSum), x: usize| {
                    if keep[x] {
                        a.add_product(&pair_eq[x], &low[x]);
                        b.add_product(&pair_eq[x], &high[x]);
                    }
                    (a, b)
                };
                let (a, b) = (0..block)
                    .into_par_iter()
                    .with_min_len(4096)
                    .fold(|| (UnreducedSum::new(), UnreducedSum::new()), fold)
                    .reduce(
                        || (UnreducedSum::new(), UnreducedSum::new()),
                        |x, y| (x.0.merge(y.0), x.1.merge(y.1)),
                    );
                (a.finish(), b.finish())
            })
            .collect();
        let mut at_zero = Fr::zero();
        let mut at_two = Fr::zero();
        for (h, (g0, g1)) in sums.iter().enumerate() {
            let (e0, e1) = (self.head_eq[h], self.head_eq[h + half]);
            at_zero += e0 * g0;
            at_two += (e1 + e1 - e0) * (*g1 + g1 - g0);
        }
        evaluations[0] = at_zero;
        evaluations[1] = at_two;
        evaluations[2] = Fr::zero();
    }

    fn bind_in_place(&mut self, challenge: Fr) {
        self.num_vars = self.num_vars.saturating_sub(1);
        if let Some(dense) = &mut self.dense {
            return dense.bind_in_place(challenge);
        }
        let block = self.pair_eq.len();
        let half = self.head_eq.len() / 2;
        let (low, high) = self.scores.split_at_mut(half * block);
        low.par_iter_mut()
            .zip(high.par_iter())
            .with_min_len(4096)
            .for_each(|(l, h)| *l += challenge * (*h - *l));
        self.scores.truncate(half * block);
        let (low, high) = self.head_eq.split_at_mut(half);
        for (l, h) in low.iter_mut().zip(high.iter()) {
            *l += challenge * (*h - *l);
        }
        self.head_eq.truncate(half);
        if half == 1 {
            // Lengths were checked at construction, so this cannot fail.
            let _ = self.switch_to_dense();
        }
    }
}

impl FinalEvaluations for MaskingInstance {
    fn final_evaluations(&self) -> Vec<Fr> {
        self.dense.as_ref().map(|d| d.final_evaluations()).unwrap_or_default()
    }
}

/// Proves the masking step for a claim on `QK_M`, consuming the score tensor `QK̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length.
pub fn prove_masking(
    shape: &AttentionShape,
    mask: MaskKind,
    scores: Vec<Fr>,
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(MaskingProof, EvalClaim), AttentionError> {
    let zeroified = absorb_and_unmask(shape, mask, claim, transcript)?;
    let mut instance = MaskingInstance::new(shape, mask, scores, &claim.point)?;
    let (sumcheck, claims) = prove_instance_with_evaluations(&mut instance, zeroified, transcript);
    let out = claims.into_iter().nth(2).ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((MaskingProof { sumcheck }, out))
}

/// The masking proof with the generic dense prover (three materialized tables): the reference
/// the structured prover is tested against.
///
/// # Errors
/// As [`prove_masking`].
pub fn prove_masking_dense(
    shape: &AttentionShape,
    mask: MaskKind,
    scores: &[Fr],
    claim: &EvalClaim,
    transcript: &mut Transcript,
) -> Result<(MaskingProof, EvalClaim), AttentionError> {
    let zeroified = absorb_and_unmask(shape, mask, claim, transcript)?;
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

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (2 * shape.seq_vars() + shape.head_vars(), 3)
}

/// `eq` and `ẑ` public, `QK̂` hidden.
fn zk_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    ZkProductShape::new(product, vec![true, true, false]).map_err(zk_error(STEP))
}

/// `m(c_i, c_j)` for a claim point `c`.
#[deny(clippy::indexing_slicing)]
fn mask_at(shape: &AttentionShape, mask: MaskKind, point: &[Fr]) -> Result<Fr, AttentionError> {
    let split = split_point(point, &parts(shape), STEP)?;
    let [c_j, c_i] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
    Ok(mask_matrix(mask, shape.seq_len, c_i, c_j))
}

/// The zero-knowledge masking proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MaskingZkProof {
    /// The zero-knowledge sum-check of `eq · ẑ · QK̂`.
    pub product: ZkProductProof,
}

/// Proves the masking step in zero knowledge for a committed claim on `QK_M`, consuming the
/// scores; returns the committed claim on `QK̂` with its opening.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length,
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
#[allow(clippy::too_many_arguments)]
pub fn prove_masking_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    scores: Vec<Fr>,
    claim: &WitnessClaim,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(MaskingZkProof, WitnessClaim), AttentionError> {
    let offset = mask_at(shape, mask, &claim.claim.point)?;
    let zeroified = ValueOpening { value: claim.opening.value - offset, blinding: claim.opening.blinding };
    let commitment = G1Affine::from(claim.claim.commitment - params.value_generator * offset);
    let mut instance = MaskingInstance::new(shape, mask, scores, &claim.claim.point)?;
    let (product, claims, openings) = prove_zk_product(
        params,
        &zk_shape()?,
        &mut instance,
        (commitment, &zeroified),
        masks,
        transcript,
        rng,
    )
    .map_err(zk_error(STEP))?;
    let out = witness(&claims.values, &openings, 2, claims.point.clone(), STEP)?;
    Ok((MaskingZkProof { product }, out))
}

/// Verifies the zero-knowledge masking step; returns the committed claim on `QK̂`, with the
/// group equations left in `checks`.
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] or [`AttentionError::CheckFailed`] (`eq` or `ẑ`).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub fn verify_masking_zk(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &CommittedClaim,
    proof: &MaskingZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<CommittedClaim, AttentionError> {
    let offset = mask_at(shape, mask, &claim.point)?;
    let commitment = G1Affine::from(claim.commitment - params.value_generator * offset);
    let claims = verify_zk_product_deferred(
        params,
        &zk_shape()?,
        claim.point.len(),
        commitment,
        &proof.product,
        masks,
        transcript,
        checks,
    )
    .map_err(zk_error(STEP))?;
    let point = &claims.point;
    check_public(claims.values.first(), eq_evaluation(point, &claim.point)?, STEP)?;
    let u = split_point(point, &parts(shape), STEP)?;
    let [u_j, u_i] = [0, 1].map(|k| u.get(k).copied().unwrap_or_default());
    check_public(claims.values.get(1), zeroifier(mask, shape.seq_len, u_i, u_j), STEP)?;
    hidden(claims.values.get(2), point.clone(), STEP)
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
    let zeroified = absorb_and_unmask(shape, mask, claim, transcript)?;
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
