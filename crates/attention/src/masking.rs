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
//! Both modes (`crate::mode`): `eq` and `ẑ` public, `QK̂` hidden; in zero knowledge, from a
//! commitment `C` to `y`, the claimed sum's commitment is `C − m(c_i, c_j)·U`.
//!
//! `z` keeps `i < s ∧ j ≤ i` (causal) or `i < s ∧ j < s` (none); every padded row and
//! column is masked. `m = MASK · (1 − z)` with `MASK = −2^100`.

use crate::common::{split_point, sumcheck_error};
use crate::mode::{Mode, PlainProductProof, ProductOutcome, Proved, product_of, single, verify_single};
use crate::structured::{mask_matrix, zeroifier};
use crate::witness::keeps;
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, One, UnreducedSum, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::{EvalClaim, FinalEvaluations, ProductSumcheck, SumOfProducts, SumcheckInstance};
use zkmha_transcript::Transcript;
use zkmha_zk::{LinearValue, ZkProductShape};

const STEP: &str = "masking";

/// The masking proof (`P` the mode's product proof: plain by default).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MaskingProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The sum-check of `eq · ẑ · QK̂`.
    pub product: P,
}

fn parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.seq_vars(), shape.seq_vars(), shape.head_vars()]
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

/// Proves the masking step in mode `M` for a claim on `QK_M`, consuming the score tensor
/// `QK̂`; returns the claim on `QK̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length; in zero knowledge
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
pub fn prove_masking<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    scores: Vec<Fr>,
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<MaskingProof<M::ProductProof>, EvalClaim<M::ProverValue>> {
    let mut instance = MaskingInstance::new(shape, mask, scores, &claim.point)?;
    prove_instance::<M>(prover, shape, mask, &mut instance, claim, transcript)
}

/// The masking proof with the generic dense prover (three materialized tables): the reference
/// the structured prover is tested against.
///
/// # Errors
/// As [`prove_masking`].
pub fn prove_masking_dense<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    scores: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<MaskingProof<M::ProductProof>, EvalClaim<M::ProverValue>> {
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
    let mut instance = ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?;
    prove_instance::<M>(prover, shape, mask, &mut instance, claim, transcript)
}

/// The sum-check from `y_Z = y − m(c_i, c_j)` with either prover instance.
fn prove_instance<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    instance: &mut dyn FinalEvaluations,
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<MaskingProof<M::ProductProof>, EvalClaim<M::ProverValue>> {
    let one = M::prover_constant(prover, Fr::one());
    let zeroified = claim.value.plus_scaled(-mask_at(shape, mask, &claim.point)?, &one);
    let product_shape = product_shape()?;
    let (product, outcomes) =
        M::prove_products(prover, STEP, vec![(&product_shape, instance)], &[&zeroified], transcript)?;
    let out: ProductOutcome<M::ProverValue> = single(outcomes, STEP)?;
    let claim_out = out.hidden(2, out.point.clone(), STEP)?;
    Ok((MaskingProof { product }, claim_out))
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (2 * shape.seq_vars() + shape.head_vars(), 3)
}

/// `eq` and `ẑ` public, `QK̂` hidden.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    product_of(STEP, vec![true, true, false])
}

/// `m(c_i, c_j)` for a claim point `c`.
#[deny(clippy::indexing_slicing)]
fn mask_at(shape: &AttentionShape, mask: MaskKind, point: &[Fr]) -> Result<Fr, AttentionError> {
    let split = split_point(point, &parts(shape), STEP)?;
    let [c_j, c_i] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
    Ok(mask_matrix(mask, shape.seq_len, c_i, c_j))
}

/// Verifies the masking step in mode `M`; returns the claim on `QK̂` (in zero knowledge with
/// the group equations left in the verifier's deferred checks).
///
/// # Errors
/// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
/// [`AttentionError::CheckFailed`] (`eq` or `ẑ`).
#[deny(clippy::indexing_slicing)]
pub fn verify_masking<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &EvalClaim<M::Value>,
    proof: &MaskingProof<M::ProductProof>,
    transcript: &mut Transcript,
) -> Result<EvalClaim<M::Value>, AttentionError> {
    let one = M::verifier_constant(verifier, Fr::one());
    let zeroified = claim.value.plus_scaled(-mask_at(shape, mask, &claim.point)?, &one);
    let out = verify_single::<M>(
        verifier,
        STEP,
        &product_shape()?,
        claim.point.len(),
        &zeroified,
        &proof.product,
        transcript,
    )?;
    let point = &out.point;
    out.check_public(0, eq_evaluation(point, &claim.point)?, STEP)?;
    let u = split_point(point, &parts(shape), STEP)?;
    let [u_j, u_i] = [0, 1].map(|k| u.get(k).copied().unwrap_or_default());
    out.check_public(1, zeroifier(mask, shape.seq_len, u_i, u_j), STEP)?;
    Ok(out.hidden(2, point.clone(), STEP)?)
}
