//! Padding: from claims on `Q̂`, `K̂`, `V̂` to claims on the inputs `Q`, `K`, `V`, in one batched
//! sum-check.
//!
//! ```text
//! Q̂ = Q·P,  K̂ = K·P  (P: d × ĥm̂),    V̂ = I_s·V·P_v  (P_v: d_v × ĥm̂_v, I_s = diag([i < s]))
//! P[x][head·m̂ + c] = 1  iff  x = head·m + c, head < h, c < m
//! claims in:  Q̂(a_q, w_q) = y_q,  K̂(a_k, w_k) = y_k,  V̂(a_v, w_v) = y_v
//! batched sum-check (random coefficients α, claims of log d and log d_v + log ŝ variables):
//!   y_q = Σ_{x ∈ {0,1}^{log d}}   Q(a_q, x) · P(x, w_q)
//!   y_k = Σ_{x ∈ {0,1}^{log d}}   K(a_k, x) · P(x, w_k)
//!   y_v = Σ_{x, i}  V(i, x) · P_v(x, w_v) · eq(a_v, i)·[i < s]      (degree 3)
//! verifier:  P(z, w) = head_padding(h, m, z, w)   (O(h·m)),
//!            Σ_i eq(ρ_i, i)·eq(a_v, i)·[i < s] = prefix_eq_pair_sum(s, ρ_i, a_v)   (O(s)),
//!            and Σ α_t (the products) = final value
//! claims out: Q at [z_q ‖ a_q], K at [z_k ‖ a_k], V at [z_v ‖ ρ_i]
//!
//! V's padded rows (i ≥ s) are thus never part of V̂: in linear attention a masked score is the
//! constant MASK, not 0, so an unconstrained padded row of a committed V would reach every
//! output row through MASK·V[i] (the audit's forgery). Q's and K's padded rows only reach
//! masked scores, which mask(·) replaces whatever they are.
//!
//! zero knowledge (prove_padding_zk / verify_padding_zk): the three claims are commitments,
//! the batch runs through zkmha_zk::prove_zk_batched_products with P public and the folded
//! inputs hidden: the claims out on Q, K, V are commitments
//! ```

use crate::common::{fold_rows, split_point, sumcheck_error};
use crate::structured::{head_padding, prefix_eq_pair_sum};
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
    /// `[input(z), P(z, w)]` for Q and K, `[V(z), P_v(z_x, w), eq·[i < s](z_i)]` for V, in
    /// that order.
    pub final_evaluations: Vec<Vec<Fr>>,
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
    let final_evaluations: Vec<Vec<Fr>> = instances.iter().map(|i| i.final_evaluations()).collect();
    transcript.append_fields(LABEL_FINAL, &final_evaluations.concat());
    let claims_out = input_claims(&outcome, &rows, &final_evaluations)?;
    Ok((PaddingProof { sumcheck, final_evaluations }, claims_out))
}

/// The instances `Q(a, ·)·P(·, w)`, `K(a, ·)·P(·, w)` and `V(·, ·)·P_v(·, w)·eq(a, ·)[· < s]`,
/// and the row points of Q and K (V's comes out of the sum-check).
#[allow(clippy::type_complexity)]
fn instances(
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    points: [&[Fr]; 3],
) -> Result<(Vec<ProductSumcheck>, Vec<Vec<Fr>>), AttentionError> {
    let mut instances = Vec::with_capacity(3);
    let mut rows = Vec::with_capacity(3);
    for (k, ((input, point), (input_vars, padded_vars, width))) in
        inputs.iter().zip(points).zip(layout(shape)).enumerate()
    {
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
        if k < 2 {
            let folded = fold_rows(input, 1 << input_vars, a);
            let mles = vec![
                DenseMultilinearExtension::new(input_vars, folded)?,
                DenseMultilinearExtension::new(input_vars, padding_column)?,
            ];
            let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
            instances.push(ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?);
            rows.push(a.to_vec());
        } else {
            // V over (x, i): the rows restricted to i < s by a public row factor.
            let num_vars = input_vars + shape.seq_vars();
            let row_weights = eq_table(a);
            let width = 1usize << input_vars;
            let columns: Vec<Fr> = (0..1usize << num_vars).map(|g| padding_column[g % width]).collect();
            let row_factor: Vec<Fr> = (0..1usize << num_vars)
                .map(|g| if g / width < shape.seq_len { row_weights[g / width] } else { Fr::zero() })
                .collect();
            let mles = vec![
                DenseMultilinearExtension::new(num_vars, input.to_vec())?,
                DenseMultilinearExtension::new(num_vars, columns)?,
                DenseMultilinearExtension::new(num_vars, row_factor)?,
            ];
            let product = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
            instances.push(ProductSumcheck::new(product, mles).map_err(sumcheck_error(STEP))?);
            rows.push(a.to_vec());
        }
    }
    Ok((instances, rows))
}

/// `(variables, degree)` of the Q, K and V instances.
fn instance_shapes(shape: &AttentionShape) -> [(usize, usize); 3] {
    let [q, k, v] = layout(shape).map(|(vars, _, _)| vars);
    [(q, 2), (k, 2), (v + shape.seq_vars(), 3)]
}

/// The `(variables, degree)` of the step's zero-knowledge (batched) sum-check.
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    let shapes = instance_shapes(shape);
    (
        shapes.iter().map(|(vars, _)| *vars).max().unwrap_or(0),
        shapes.iter().map(|(_, d)| *d).max().unwrap_or(2),
    )
}

/// The (folded) input hidden, `P` and V's row factor public: Q and K's shape, then V's.
fn zk_shapes() -> Result<[ZkProductShape; 2], AttentionError> {
    let two = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let three = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    Ok([
        ZkProductShape::new(two, vec![false, true]).map_err(zk_error(STEP))?,
        ZkProductShape::new(three, vec![false, true, true]).map_err(zk_error(STEP))?,
    ])
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
    let [two, three] = zk_shapes()?;
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> = instances
        .iter_mut()
        .enumerate()
        .map(|(k, i)| (if k < 2 { &two } else { &three }, i as &mut dyn FinalEvaluations))
        .collect();
    let sums: Vec<CommittedValue> =
        claims.iter().map(|c| CommittedValue::new(c.claim.commitment, c.opening)).collect();
    let (product, outs, openings) =
        prove_zk_batched_products(params, members, &sums, masks, transcript, rng).map_err(zk_error(STEP))?;
    let mut claims_out = Vec::with_capacity(3);
    for (k, ((out, opening), row)) in outs.iter().zip(&openings).zip(&rows).enumerate() {
        let point = if k < 2 { [out.point.as_slice(), row].concat() } else { out.point.clone() };
        claims_out.push(witness(&out.values, opening, 0, point, STEP)?);
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
    let [two, three] = zk_shapes()?;
    let members: Vec<BatchMember<'_>> = instance_shapes(shape)
        .iter()
        .enumerate()
        .map(|(k, &(vars, _))| (if k < 2 { &two } else { &three }, vars))
        .collect();
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
    for (k, ((claim, &(input_vars, padded_vars, width)), out)) in
        claims.iter().zip(&layout).zip(&outs).enumerate()
    {
        let split = split_point(&claim.point, &[padded_vars, shape.seq_vars()], STEP)?;
        let [w, a] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
        let (z, rows) =
            out.point.split_at_checked(input_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
        check_public(out.values.get(1), head_padding(shape.heads, width, z, w), STEP)?;
        if k < 2 {
            claims_out.push(hidden(out.values.first(), [out.point.as_slice(), a].concat(), STEP)?);
        } else {
            check_public(out.values.get(2), prefix_eq_pair_sum(shape.seq_len, rows, a), STEP)?;
            claims_out.push(hidden(out.values.first(), out.point.clone(), STEP)?);
        }
    }
    let mut claims_out = claims_out.into_iter();
    match (claims_out.next(), claims_out.next(), claims_out.next()) {
        (Some(queries), Some(keys), Some(values)) => Ok(InputCommittedClaims { queries, keys, values }),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

/// The claims on Q and K at `[z ‖ a]`, on V at its own point.
#[deny(clippy::indexing_slicing)]
fn input_claims(
    outcome: &zkmha_sumcheck::BatchedEvalClaim,
    rows: &[Vec<Fr>],
    finals: &[Vec<Fr>],
) -> Result<InputClaims, AttentionError> {
    let mut out = Vec::with_capacity(3);
    for (k, (row, values)) in rows.iter().zip(finals).enumerate() {
        let z = outcome.instance_point(k).ok_or(AttentionError::CheckFailed { step: STEP })?;
        let value = *values.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
        let point = if k < 2 { [z, row.as_slice()].concat() } else { z.to_vec() };
        out.push(EvalClaim { point, value });
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
    let shapes = instance_shapes(shape);
    let sumcheck_claims: Vec<SumcheckClaim> = shapes
        .iter()
        .zip(claims)
        .map(|(&(vars, degree), c)| SumcheckClaim::new(vars, degree, c.value))
        .collect();
    let outcome =
        verify_batched(&sumcheck_claims, &proof.sumcheck, transcript).map_err(sumcheck_error(STEP))?;
    if proof.final_evaluations.iter().zip(&shapes).any(|(values, (_, degree))| values.len() != *degree) {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let products: Vec<Fr> = proof.final_evaluations.iter().map(|values| values.iter().product()).collect();
    outcome.check(&products).map_err(sumcheck_error(STEP))?;
    let mut rows = Vec::with_capacity(3);
    for (k, ((claim, &(input_vars, padded_vars, width)), values)) in
        claims.iter().zip(&layout).zip(&proof.final_evaluations).enumerate()
    {
        let split = split_point(&claim.point, &[padded_vars, shape.seq_vars()], STEP)?;
        let [w, a] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
        let point = outcome.instance_point(k).ok_or(AttentionError::CheckFailed { step: STEP })?;
        let (z, row_point) =
            point.split_at_checked(input_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
        let mut expected = vec![head_padding(shape.heads, width, z, w)];
        if k == 2 {
            expected.push(prefix_eq_pair_sum(shape.seq_len, row_point, a));
        }
        if values.get(1..) != Some(expected.as_slice()) {
            return Err(AttentionError::CheckFailed { step: STEP });
        }
        rows.push(a.to_vec());
    }
    transcript.append_fields(LABEL_FINAL, &proof.final_evaluations.concat());
    input_claims(&outcome, &rows, &proof.final_evaluations)
}
