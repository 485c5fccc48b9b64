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
//! both modes (crate::mode): b public, Ã and Ṽ hidden; in zero knowledge y and the claims
//! out are commitments
//! ```

use crate::common::split_point;
use crate::mode::{Mode, PlainProductProof, Proved, product_of, prove_dense, verify_single};
use crate::structured::mask_value;
use crate::witness::keeps;
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum, Zero};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::ZkProductShape;

const STEP: &str = "softmax·V";

/// The `softmax·V` proof (`P` the mode's product proof: plain by default).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct AttentionValuesProof<P: CanonicalSerialize + CanonicalDeserialize = PlainProductProof> {
    /// The sum-check of `b · Ã · Ṽ`.
    pub product: P,
}

/// Claims produced by the step (values in the clear by default, hidden in zero knowledge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionValuesClaims<V = Fr> {
    /// On the attention matrix `A` (`ĥ × ŝ × ŝ`).
    pub attention: EvalClaim<V>,
    /// On `V̂` (`ŝ × ĥm̂_v`).
    pub values_hat: EvalClaim<V>,
}

fn claim_parts(shape: &AttentionShape) -> [usize; 3] {
    [shape.value_head_dim_vars(), shape.head_vars(), shape.seq_vars()]
}

fn num_vars(shape: &AttentionShape) -> usize {
    shape.head_vars() + shape.seq_vars()
}

/// `b` public, `Ã` and `Ṽ` hidden.
fn product_shape() -> Result<ZkProductShape, AttentionError> {
    product_of(STEP, vec![true, false, false])
}

/// The points of the claims out on `A` and `V̂` for the sum-check point `[t_j ‖ t_h]`.
fn output_points(shape: &AttentionShape, q_m: &[Fr], q_i: &[Fr], point: &[Fr]) -> (Vec<Fr>, Vec<Fr>) {
    let (t_j, t_h) = point.split_at(shape.seq_vars().min(point.len()));
    ([t_j, q_i, t_h].concat(), [q_m, t_h, t_j].concat())
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

/// Proves the step in mode `M` for a claim on `Ô` at `[q_m ‖ q_h ‖ q_i]`, given `A` and `V̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a claim point of the wrong length; in zero knowledge
/// [`AttentionError::ZeroKnowledge`] when the generators are too few for the masks.
pub fn prove_attention_values<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &AttentionShape,
    attention: AttentionMatrix<'_>,
    values_hat: &[Fr],
    claim: &EvalClaim<M::ProverValue>,
    transcript: &mut Transcript,
) -> Proved<AttentionValuesProof<M::ProductProof>, AttentionValuesClaims<M::ProverValue>> {
    let (q_m, q_i, mles) = tables(shape, attention, values_hat, &claim.point)?;
    let (product, out) = prove_dense::<M>(prover, STEP, &product_shape()?, mles, &claim.value, transcript)?;
    let (a_point, v_point) = output_points(shape, &q_m, &q_i, &out.point);
    let claims = AttentionValuesClaims {
        attention: out.hidden(1, a_point, STEP)?,
        values_hat: out.hidden(2, v_point, STEP)?,
    };
    Ok((AttentionValuesProof { product }, claims))
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
    let n = num_vars(shape);
    let mles = vec![
        DenseMultilinearExtension::new(n, selector)?,
        DenseMultilinearExtension::new(n, folded_attention)?,
        DenseMultilinearExtension::new(n, folded_values)?,
    ];
    Ok((q_m.to_vec(), q_i.to_vec(), mles))
}

/// The `(variables, degree)` of the step's zero-knowledge sum-check (for a proof's mask schedule).
pub fn zk_sumcheck_shape(shape: &AttentionShape) -> (usize, usize) {
    (num_vars(shape), 3)
}

/// Verifies the step in mode `M`; returns the claims on `A` and `V̂` (in zero knowledge with
/// the group equations left in the verifier's deferred checks).
///
/// # Errors
/// [`AttentionError::Sumcheck`], [`AttentionError::ZeroKnowledge`] or
/// [`AttentionError::CheckFailed`] (the selector `b`).
#[deny(clippy::indexing_slicing)]
pub fn verify_attention_values<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &AttentionShape,
    claim: &EvalClaim<M::Value>,
    proof: &AttentionValuesProof<M::ProductProof>,
    transcript: &mut Transcript,
) -> Result<AttentionValuesClaims<M::Value>, AttentionError> {
    let parts = split_point(&claim.point, &claim_parts(shape), STEP)?;
    let [q_m, q_h, q_i] = [0, 1, 2].map(|k| parts.get(k).copied().unwrap_or_default());
    let out = verify_single::<M>(
        verifier,
        STEP,
        &product_shape()?,
        num_vars(shape),
        &claim.value,
        &proof.product,
        transcript,
    )?;
    let t_h = out.point.get(shape.seq_vars()..).unwrap_or_default();
    out.check_public(0, eq_evaluation(t_h, q_h)?, STEP)?;
    let (a_point, v_point) = output_points(shape, q_m, q_i, &out.point);
    Ok(AttentionValuesClaims {
        attention: out.hidden(1, a_point, STEP)?,
        values_hat: out.hidden(2, v_point, STEP)?,
    })
}
