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
//! both modes (crate::mode): P and V's row factor public, the (folded) inputs hidden; in
//! zero knowledge the claims in and out are commitments
//! ```

use crate::common::{fold_rows, split_point, sumcheck_error};
use crate::mode::{Mode, PlainProductProof, ProductOutcome, Proved};
use crate::structured::{head_padding, prefix_eq_pair_sum};
use crate::{AttentionError, AttentionShape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::{EvalClaim, FinalEvaluations, ProductSumcheck, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{BatchMember, ZkProductShape};

const STEP: &str = "padding";

/// The padding proof (`P` the mode's product proof: plain by default).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct PaddingProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The batch of the three products (Q, K, V in that order): `[input(z), P(z, w)]` for Q
    /// and K, `[V(z), P_v(z_x, w), eq·[i < s](z_i)]` for V.
    pub product: P,
}

/// Claims on the layer inputs (values in the clear by default, hidden in zero knowledge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputClaims<V = Fr> {
    /// On `Q` padded to `ŝ × d`.
    pub queries: EvalClaim<V>,
    /// On `K` padded to `ŝ × d`.
    pub keys: EvalClaim<V>,
    /// On `V` padded to `ŝ × d_v`.
    pub values: EvalClaim<V>,
}

/// `(input columns log₂, padded-head width log₂, head width)` for Q, K, V.
fn layout(shape: &AttentionShape) -> [(usize, usize, usize); 3] {
    let qk = (shape.model_vars(), shape.head_vars() + shape.head_dim_vars(), shape.head_dim);
    let v = (shape.value_model_vars(), shape.head_vars() + shape.value_head_dim_vars(), shape.value_head_dim);
    [qk, qk, v]
}

/// Proves the padding of Q, K, V in mode `M` for the three claims (in that order).
///
/// # Errors
/// [`AttentionError::CheckFailed`] for claim points of the wrong length; in zero knowledge
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
pub fn prove_padding<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    inputs: [&[Fr]; 3],
    claims: [&EvalClaim<M::ProverValue>; 3],
    transcript: &mut Transcript,
) -> Proved<PaddingProof<M::ProductProof>, InputClaims<M::ProverValue>> {
    let (mut instances, rows) = instances(shape, inputs, claims.map(|c| c.point.as_slice()))?;
    let [two, three] = product_shapes()?;
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> = instances
        .iter_mut()
        .enumerate()
        .map(|(k, i)| (if k < 2 { &two } else { &three }, i as &mut dyn FinalEvaluations))
        .collect();
    let values = claims.map(|c| &c.value);
    let (product, outcomes) = M::prove_products(prover, STEP, members, &values, transcript)?;
    Ok((PaddingProof { product }, input_claims(&outcomes, &rows)?))
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
fn product_shapes() -> Result<[ZkProductShape; 2], AttentionError> {
    let zk_error = |source| AttentionError::ZeroKnowledge { step: STEP, source };
    let two = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let three = SumOfProducts::product(3).map_err(sumcheck_error(STEP))?;
    Ok([
        ZkProductShape::new(two, vec![false, true]).map_err(zk_error)?,
        ZkProductShape::new(three, vec![false, true, true]).map_err(zk_error)?,
    ])
}

/// The claims on Q and K at `[z ‖ a]` (`a` their row points), on V at its own point.
#[deny(clippy::indexing_slicing)]
fn input_claims<V: Clone>(
    outcomes: &[ProductOutcome<V>],
    rows: &[Vec<Fr>],
) -> Result<InputClaims<V>, AttentionError> {
    let mut out = Vec::with_capacity(3);
    for (k, (outcome, row)) in outcomes.iter().zip(rows).enumerate() {
        let point = if k < 2 { [outcome.point.as_slice(), row].concat() } else { outcome.point.clone() };
        out.push(outcome.hidden(0, point, STEP)?);
    }
    let mut out = out.into_iter();
    match (out.next(), out.next(), out.next()) {
        (Some(queries), Some(keys), Some(values)) => Ok(InputClaims { queries, keys, values }),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

/// Verifies the padding step in mode `M`; returns the claims on `Q`, `K`, `V` (in zero
/// knowledge with the group equations left in the verifier's deferred checks).
///
/// # Errors
/// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
/// [`AttentionError::CheckFailed`] (a padding matrix or V's row factor).
#[deny(clippy::indexing_slicing)]
pub fn verify_padding<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    claims: [&EvalClaim<M::Value>; 3],
    proof: &PaddingProof<M::ProductProof>,
    transcript: &mut Transcript,
) -> Result<InputClaims<M::Value>, AttentionError> {
    let layout = layout(shape);
    let [two, three] = product_shapes()?;
    let members: Vec<BatchMember<'_>> = instance_shapes(shape)
        .iter()
        .enumerate()
        .map(|(k, &(vars, _))| (if k < 2 { &two } else { &three }, vars))
        .collect();
    let values = claims.map(|c| &c.value);
    let outcomes = M::verify_products(verifier, STEP, &members, &values, &proof.product, transcript)?;
    if outcomes.len() != 3 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let mut rows = Vec::with_capacity(3);
    for (k, ((claim, &(input_vars, padded_vars, width)), out)) in
        claims.iter().zip(&layout).zip(&outcomes).enumerate()
    {
        let split = split_point(&claim.point, &[padded_vars, shape.seq_vars()], STEP)?;
        let [w, a] = [0, 1].map(|k| split.get(k).copied().unwrap_or_default());
        let (z, row_point) =
            out.point.split_at_checked(input_vars).ok_or(AttentionError::CheckFailed { step: STEP })?;
        out.check_public(1, head_padding(shape.heads, width, z, w), STEP)?;
        if k == 2 {
            out.check_public(2, prefix_eq_pair_sum(shape.seq_len, row_point, a), STEP)?;
        }
        rows.push(a.to_vec());
    }
    input_claims(&outcomes, &rows)
}
