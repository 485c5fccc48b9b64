//! Padding: from claims on `Q̂`, `K̂`, `V̂` to claims on the inputs `Q`, `K`, `V`, in one batched
//! sum-check.
//!
//! ```text
//! Q̂ = Q·P,  K̂ = K·P  (P: d × ĥm̂),    V̂ = V·P_v  (P_v: d_v × ĥm̂_v)
//! P[x][head·m̂ + c] = 1  iff  x = head·m + c, head < h, c < m
//! claims in:  Q̂(a_q, w_q) = y_q,  K̂(a_k, w_k) = y_k,  V̂(a_v, w_v) = y_v
//! batched sum-check (random coefficients α, claims of log d and log d_v variables):
//!   y_q = Σ_{x ∈ {0,1}^{log d}}   Q(a_q, x) · P(x, w_q)
//!   y_k = Σ_{x ∈ {0,1}^{log d}}   K(a_k, x) · P(x, w_k)
//!   y_v = Σ_{x ∈ {0,1}^{log d_v}} V(a_v, x) · P_v(x, w_v)
//! verifier:  P(z, w) = head_padding(h, m, z, w)   (O(h·m)), and Σ α_t (input_t · P_t) = final value
//! claims out: Q at [z_q ‖ a_q], K at [z_k ‖ a_k], V at [z_v ‖ a_v]
//!
//! zero knowledge (prove_padding_zk / verify_padding_zk): the three claims are commitments,
//! the batch runs through zkmha_zk::prove_zk_batched_products with P public and the folded
//! inputs hidden: the claims out on Q, K, V are commitments
//! ```

use crate::common::{fold_rows, split_point, sumcheck_error};
use crate::structured::head_padding;
use crate::zk_claims::{CommittedClaim, WitnessClaim, check_public, hidden, witness, zk_error};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_pcs::HyraxParams;
use zkmha_sumcheck::FinalEvaluations;
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheck, SumOfProducts, SumcheckClaim, SumcheckInstance, SumcheckProof, prove_batched,
    verify_batched,
};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, ProverMasks, VerifierMasks, ZkProductProof,
    ZkProductShape, prove_zk_batched_products, verify_zk_batched_products_deferred,
};

const STEP: &str = "padding";
const LABEL_CLAIMS: &[u8] = b"attention/padding/claims";
const LABEL_FINAL: &[u8] = b"attention/padding/final-evaluations";

/// The padding proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct PaddingProof {
    /// The batched sum-check.
    pub sumcheck: SumcheckProof,
    /// `[input(z), P(z, w)]` for Q, K and V, in that order.
    pub final_evaluations: Vec<[Fr; 2]>,
}

/// Claims on the layer inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputClaims {
    /// On `Q` padded to `ŝ × d`.
    pub queries: EvalClaim,
    /// On `K` padded to `ŝ × d`.
    pub keys: EvalClaim,
    /// On `V` padded to `ŝ × d_v`.
    pub values: EvalClaim,
}

/// `(input columns log₂, padded-head width log₂, head width)` for Q, K, V.
fn layout(shape: &AttentionShape) -> [(usize, usize, usize); 3] {
    let qk = (shape.model_vars(), shape.head_vars() + shape.head_dim_vars(), shape.head_dim);
    let v = (shape.value_model_vars(), shape.head_vars() + shape.value_head_dim_vars(), shape.value_head_dim);
    [qk, qk, v]
}

/// Proves the padding of Q, K, V for the three claims (in that order).
///
/// # Errors
/// [`AttentionError::CheckFailed`] for claim points of the wrong length.
pub fn prove_padding(
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    claims: [&EvalClaim; 3],
    transcript: &mut Transcript,
) -> Result<(PaddingProof, InputClaims), AttentionError> {
    transcript.append_fields(LABEL_CLAIMS, &claims.map(|c| c.value));
    let (mut instances, rows) = instances(shape, inputs, claims.map(|c| c.point.as_slice()))?;
    let refs: Vec<&mut dyn SumcheckInstance> =
        instances.iter_mut().map(|i| i as &mut dyn SumcheckInstance).collect();
    let sums = claims.map(|c| c.value);
    let (sumcheck, outcome) = prove_batched(refs, &sums, transcript).map_err(sumcheck_error(STEP))?;
    let final_evaluations: Vec<[Fr; 2]> = instances
        .iter()
        .map(|i| {
            let values = i.final_evaluations();
            [values[0], values[1]]
        })
        .collect();
    transcript.append_fields(LABEL_FINAL, &final_evaluations.concat());
    let claims_out = input_claims(&outcome.point, &layout(shape), &rows, &final_evaluations)?;
    Ok((PaddingProof { sumcheck, final_evaluations }, claims_out))
}

/// The three instances `input(a, ·)·P(·, w)` and the row points `a`.
#[allow(clippy::type_complexity)]
fn instances(
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    points: [&[Fr]; 3],
) -> Result<(Vec<ProductSumcheck>, Vec<Vec<Fr>>), AttentionError> {
    let mut instances = Vec::with_capacity(3);
    let mut rows = Vec::with_capacity(3);
    for ((input, point), (input_vars, padded_vars, width)) in inputs.iter().zip(points).zip(layout(shape)) {
        let split = split_point(point, &[padded_vars, shape.seq_vars()], STEP)?;
        let (w, a) = (split[0], split[1]);
        let padded_width = 1usize << (padded_vars - shape.head_vars());
        let column_weights = eq_table(w);
        let mut padding_column = vec![Fr::zero(); 1 << input_vars];
        for head in 0..shape.heads {
            for c in 0..width {
                padding_column[head * width + c] = column_weights[head * padded_width + c];
            }
        }
        let folded = fold_rows(input, 1 << input_vars, a);
        let mles = vec![
            DenseMultilinearExtension::new(input_vars, folded)?,
            DenseMultilinearExtension::new(input_vars, padding_column)?,
        ];
        let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
        instances.push(ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?);
        rows.push(a.to_vec());
    }
    Ok((instances, rows))
}

/// The `(variables, degree)` of the step's zero-knowledge (batched) sum-check.
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (layout(shape).iter().map(|(vars, _, _)| *vars).max().unwrap_or(0), 2)
}

/// The folded input hidden, `P` public.
fn zk_shape() -> Result<ZkProductShape, AttentionError> {
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    ZkProductShape::new(product, vec![false, true]).map_err(zk_error(STEP))
}

/// The zero-knowledge padding proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct PaddingZkProof {
    /// The zero-knowledge batch of the three products.
    pub product: ZkProductProof,
}

/// Committed claims on `Q`, `K`, `V` (verifier side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputCommittedClaims {
    /// On `Q`.
    pub queries: CommittedClaim,
    /// On `K`.
    pub keys: CommittedClaim,
    /// On `V`.
    pub values: CommittedClaim,
}

/// Committed claims on `Q`, `K`, `V` with their openings (prover side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputWitnessClaims {
    /// On `Q`.
    pub queries: WitnessClaim,
    /// On `K`.
    pub keys: WitnessClaim,
    /// On `V`.
    pub values: WitnessClaim,
}

/// Proves the padding of Q, K, V in zero knowledge for three committed claims.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for claim points of the wrong length,
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
#[allow(clippy::too_many_arguments)]
pub fn prove_padding_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    claims: [&WitnessClaim; 3],
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(PaddingZkProof, InputWitnessClaims), AttentionError> {
    let (mut instances, rows) = instances(shape, inputs, claims.map(|c| c.claim.point.as_slice()))?;
    let zk_shape = zk_shape()?;
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> =
        instances.iter_mut().map(|i| (&zk_shape, i as &mut dyn FinalEvaluations)).collect();
    let sums: Vec<CommittedValue> =
        claims.iter().map(|c| CommittedValue::new(c.claim.commitment, c.opening)).collect();
    let (product, outs, openings) =
        prove_zk_batched_products(params, members, &sums, masks, transcript, rng).map_err(zk_error(STEP))?;
    let mut claims_out = Vec::with_capacity(3);
    for ((out, opening), row) in outs.iter().zip(&openings).zip(&rows) {
        claims_out.push(witness(&out.values, opening, 0, [out.point.as_slice(), row].concat(), STEP)?);
    }
    let mut claims_out = claims_out.into_iter();
    match (claims_out.next(), claims_out.next(), claims_out.next()) {
        (Some(queries), Some(keys), Some(values)) => {
            Ok((PaddingZkProof { product }, InputWitnessClaims { queries, keys, values }))
        }
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

/// Verifies the zero-knowledge padding step; returns the committed claims on `Q`, `K`, `V`,
/// with the group equations left in `checks`.
///
/// # Errors
/// [`AttentionError::ZeroKnowledge`] or [`AttentionError::CheckFailed`] (a padding matrix).
#[deny(clippy::indexing_slicing)]
#[allow(clippy::too_many_arguments)]
pub fn verify_padding_zk(
    params: &HyraxParams,
    shape: &AttentionShape,
    claims: [&CommittedClaim; 3],
    proof: &PaddingZkProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<InputCommittedClaims, AttentionError> {
    let layout = layout(shape);
    let zk_shape = zk_shape()?;
    let members: Vec<BatchMember<'_>> = layout.iter().map(|&(vars, _, _)| (&zk_shape, vars)).collect();
    let commitments: Vec<Combination> = claims.iter().map(|c| Combination::point(c.commitment)).collect();
    let outs = verify_zk_batched_products_deferred(
        params,
        &members,
        &commitments,
        &proof.product,
        masks,
        transcript,
        checks,
    )
    .map_err(zk_error(STEP))?;
    let mut claims_out = Vec::with_capacity(3);
    for ((claim, &(_, padded_vars, width)), out) in claims.iter().zip(&layout).zip(&outs) {
        let split = split_point(&claim.point, &[padded_vars, shape.seq_vars()], STEP)?;
        let [w, a] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
        check_public(out.values.get(1), head_padding(shape.heads, width, &out.point, w), STEP)?;
        claims_out.push(hidden(out.values.first(), [out.point.as_slice(), a].concat(), STEP)?);
    }
    let mut claims_out = claims_out.into_iter();
    match (claims_out.next(), claims_out.next(), claims_out.next()) {
        (Some(queries), Some(keys), Some(values)) => Ok(InputCommittedClaims { queries, keys, values }),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

#[deny(clippy::indexing_slicing)]
fn input_claims(
    point: &[Fr],
    layout: &[(usize, usize, usize); 3],
    rows: &[Vec<Fr>],
    finals: &[[Fr; 2]],
) -> Result<InputClaims, AttentionError> {
    let mut out = Vec::with_capacity(3);
    for ((&(input_vars, _, _), row), values) in layout.iter().zip(rows).zip(finals) {
        let z = point.get(..input_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
        out.push(EvalClaim { point: [z, row.as_slice()].concat(), value: values[0] });
    }
    let mut out = out.into_iter();
    match (out.next(), out.next(), out.next()) {
        (Some(queries), Some(keys), Some(values)) => Ok(InputClaims { queries, keys, values }),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

/// Verifies the padding step; returns the claims on `Q`, `K`, `V`.
///
/// # Errors
/// [`AttentionError::Sumcheck`] or [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing)]
pub fn verify_padding(
    shape: &AttentionShape,
    claims: [&EvalClaim; 3],
    proof: &PaddingProof,
    transcript: &mut Transcript,
) -> Result<InputClaims, AttentionError> {
    transcript.append_fields(LABEL_CLAIMS, &claims.map(|c| c.value));
    if proof.final_evaluations.len() != 3 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let layout = layout(shape);
    let sumcheck_claims: Vec<SumcheckClaim> =
        layout.iter().zip(claims).map(|(&(vars, _, _), c)| SumcheckClaim::new(vars, 2, c.value)).collect();
    let outcome =
        verify_batched(&sumcheck_claims, &proof.sumcheck, transcript).map_err(sumcheck_error(STEP))?;
    let products: Vec<Fr> = proof.final_evaluations.iter().map(|[input, padding]| *input * padding).collect();
    outcome.check(&products).map_err(sumcheck_error(STEP))?;
    let mut rows = Vec::with_capacity(3);
    for (i, ((claim, &(_, padded_vars, width)), values)) in
        claims.iter().zip(&layout).zip(&proof.final_evaluations).enumerate()
    {
        let split = split_point(&claim.point, &[padded_vars, shape.seq_vars()], STEP)?;
        let [w, a] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
        let z = outcome.instance_point(i).ok_or(AttentionError::CheckFailed { step: STEP })?;
        if values[1] != head_padding(shape.heads, width, z, w) {
            return Err(AttentionError::CheckFailed { step: STEP });
        }
        rows.push(a.to_vec());
    }
    transcript.append_fields(LABEL_FINAL, &proof.final_evaluations.concat());
    input_claims(&outcome.point, &layout, &rows, &proof.final_evaluations)
}
