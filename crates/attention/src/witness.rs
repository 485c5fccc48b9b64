//! The forward computation: every tensor the prover needs, from integer inputs.
//!
//! ```text
//! Q̂ = Q·P,  K̂ = K·P,  V̂ = V·P_v                                   [ŝ × ĥm̂], [ŝ × ĥm̂_v]
//! QK̂[head, i, j] = Σ_c Q̂[i, head·m̂ + c] · K̂[j, head·m̂ + c]        [ĥ × ŝ × ŝ]
//! QK_M = z ⊙ QK̂ + m          (z, m over the padded ŝ × ŝ, shared by all heads)
//! A = slot(QK_M)              (the identity in linear-attention mode)
//! Ô[i, head·m̂_v + c] = Σ_j A[head, i, j] · V̂[j, head·m̂_v + c]     [ŝ × ĥm̂_v]
//! O = rows < s and real columns of Ô                                 [s × h·m_v]
//! ```
//!
//! Inputs are integers (|v| < 2^31); scores and the kept part of `A·V` are computed exactly
//! in `i128` and converted to field elements once. Masked entries contribute
//! `MASK · Σ_{masked j} V̂[j, ·]`, from integer column sums.

use crate::fixed_point::{SoftmaxWitness, compute_softmax_witness};
use crate::softmax::SoftmaxMode;
use crate::structured::mask_value;
use crate::{AttentionError, AttentionShape, MaskKind};
use rayon::prelude::*;
use zkmha_field::{Fr, Zero, fr_from_i64, fr_from_i128};

/// The largest magnitude of an input entry: `|v| < 2^31`.
pub const INPUT_BOUND_BITS: u32 = 31;

/// Public integer inputs of the layer, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionInputs {
    /// `Q`, `s × h·m`.
    pub queries: Vec<i64>,
    /// `K`, `s × h·m`.
    pub keys: Vec<i64>,
    /// `V`, `s × h·m_v`.
    pub values: Vec<i64>,
}

impl AttentionInputs {
    /// Checks sizes and ranges against `shape`.
    ///
    /// # Errors
    /// [`AttentionError::WrongTensorSize`] or [`AttentionError::ValueOutOfRange`].
    pub fn validate(&self, shape: &AttentionShape) -> Result<(), AttentionError> {
        let bound = 1i64 << INPUT_BOUND_BITS;
        for (tensor, data, columns) in [
            ("Q", &self.queries, shape.model_width()),
            ("K", &self.keys, shape.model_width()),
            ("V", &self.values, shape.value_model_width()),
        ] {
            let expected = shape.seq_len * columns;
            if data.len() != expected {
                return Err(AttentionError::WrongTensorSize {
                    tensor,
                    rows: shape.seq_len,
                    columns,
                    expected,
                    got: data.len(),
                });
            }
            if let Some((index, &value)) =
                data.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= bound.unsigned_abs())
            {
                return Err(AttentionError::ValueOutOfRange {
                    tensor,
                    index,
                    value,
                    bound_bits: INPUT_BOUND_BITS,
                });
            }
        }
        Ok(())
    }
}

/// Whether the score at (row `i`, column `j`) of the padded `ŝ × ŝ` matrix is kept.
pub fn keeps(kind: MaskKind, seq_len: usize, i: usize, j: usize) -> bool {
    match kind {
        MaskKind::Causal => i < seq_len && j <= i,
        MaskKind::None => i < seq_len && j < seq_len,
        MaskKind::Sliding { window } => i < seq_len && j <= i && i - j < window.get() as usize,
    }
}

/// Every tensor of the forward pass (field elements, padded, row-major).
#[derive(Clone, Debug)]
pub struct AttentionWitness {
    /// `Q` padded to `ŝ × d`.
    pub queries: Vec<Fr>,
    /// `K` padded to `ŝ × d`.
    pub keys: Vec<Fr>,
    /// `V` padded to `ŝ × d_v`.
    pub values: Vec<Fr>,
    /// `Q̂`, `ŝ × ĥm̂`.
    pub queries_hat: Vec<Fr>,
    /// `K̂`, `ŝ × ĥm̂`.
    pub keys_hat: Vec<Fr>,
    /// `V̂`, `ŝ × ĥm̂_v`.
    pub values_hat: Vec<Fr>,
    /// `QK̂`, `ĥ × ŝ × ŝ` (linear attention; empty with the proven softmax, whose witness holds
    /// the integer scores).
    pub scores: Vec<Fr>,
    /// `Ô`, `ŝ × ĥm̂_v`.
    pub output_hat: Vec<Fr>,
    /// `O`, `s × h·m_v` (not padded).
    pub output: Vec<Fr>,
    /// The fixed-point softmax witness (exponential mode only), with its integer scores and
    /// probabilities `A`.
    pub softmax: Option<SoftmaxWitness>,
}

/// Runs the forward pass in linear-attention mode (identity softmax slot).
///
/// # Errors
/// As [`AttentionInputs::validate`].
pub fn compute_witness(
    shape: &AttentionShape,
    mask: MaskKind,
    inputs: &AttentionInputs,
) -> Result<AttentionWitness, AttentionError> {
    compute_witness_inner(shape, mask, inputs, true)
}

/// The padded inputs, and the scores and linear-attention output when `linear_output` (the
/// proven softmax computes its own integer scores).
fn compute_witness_inner(
    shape: &AttentionShape,
    mask: MaskKind,
    inputs: &AttentionInputs,
    linear_output: bool,
) -> Result<AttentionWitness, AttentionError> {
    shape.validate()?;
    inputs.validate(shape)?;
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let (sp, hp, mp, mvp) = (
        shape.padded_seq_len(),
        shape.padded_heads(),
        shape.padded_head_dim(),
        shape.padded_value_head_dim(),
    );
    let (d, dv) = (1usize << shape.model_vars(), 1usize << shape.value_model_vars());

    let pad = |data: &[i64], columns: usize, padded_columns: usize| -> Vec<Fr> {
        let mut out = vec![Fr::zero(); sp * padded_columns];
        for i in 0..s {
            for x in 0..columns {
                out[i * padded_columns + x] = fr_from_i64(data[i * columns + x]);
            }
        }
        out
    };
    let spread = |data: &[i64], width: usize, padded_width: usize| -> Vec<Fr> {
        let columns = hp * padded_width;
        let mut out = vec![Fr::zero(); sp * columns];
        for i in 0..s {
            for head in 0..h {
                for c in 0..width {
                    out[i * columns + head * padded_width + c] =
                        fr_from_i64(data[i * h * width + head * width + c]);
                }
            }
        }
        out
    };
    let queries = pad(&inputs.queries, h * m, d);
    let keys = pad(&inputs.keys, h * m, d);
    let values = pad(&inputs.values, h * mv, dv);
    let queries_hat = spread(&inputs.queries, m, mp);
    let keys_hat = spread(&inputs.keys, m, mp);
    let values_hat = spread(&inputs.values, mv, mvp);

    // Exact integer arithmetic: i64 when the bounds allow it (8-bit inputs always do), else i128.
    let max_abs = |data: &[i64]| data.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0) as u128;
    let score_bound = max_abs(&inputs.queries) * max_abs(&inputs.keys) * m as u128;
    let output_bound = score_bound * max_abs(&inputs.values) * s as u128;
    // The proven softmax computes its own integer scores (no field-element copy of QK̂).
    let (scores, output_hat) = if !linear_output {
        (Vec::new(), Vec::new())
    } else if output_bound < 1u128 << 62 {
        forward::<i64>(shape, mask, inputs, linear_output)
    } else {
        forward::<i128>(shape, mask, inputs, linear_output)
    };
    let columns_v = hp * mvp;
    let output: Vec<Fr> = if output_hat.is_empty() {
        Vec::new()
    } else {
        (0..s)
            .flat_map(|i| (0..h).flat_map(move |head| (0..mv).map(move |c| (i, head, c))))
            .map(|(i, head, c)| output_hat[i * columns_v + head * mvp + c])
            .collect()
    };
    Ok(AttentionWitness {
        queries,
        keys,
        values,
        queries_hat,
        keys_hat,
        values_hat,
        scores,
        output_hat,
        output,
        softmax: None,
    })
}

/// Runs the forward pass for a softmax mode: [`compute_witness`] for the identity; for the
/// exponential softmax, the integer scores, their fixed-point softmax `A` (`2^f`-scaled) and
/// `O = A·V` in exact integers.
///
/// # Errors
/// As [`compute_witness`], and [`AttentionError::NumericRange`] when the scores or the output
/// leave the exact integer range or the softmax tables.
pub fn compute_witness_for_mode(
    shape: &AttentionShape,
    mask: MaskKind,
    mode: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<AttentionWitness, AttentionError> {
    let SoftmaxMode::Exponential(params) = mode else {
        return compute_witness(shape, mask, inputs);
    };
    let mut witness = compute_witness_inner(shape, mask, inputs, false)?;
    let (s, h, mv) = (shape.seq_len, shape.heads, shape.value_head_dim);
    let (sp, hp, mvp) = (shape.padded_seq_len(), shape.padded_heads(), shape.padded_value_head_dim());
    let max_abs = |data: &[i64]| data.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0) as u128;
    if max_abs(&inputs.queries) * max_abs(&inputs.keys) * shape.head_dim as u128 >= 1u128 << 62 {
        return Err(AttentionError::NumericRange("the scores Q·Kᵀ leave the 63-bit range".into()));
    }
    let (q, k, m) = (&inputs.queries, &inputs.keys, shape.head_dim);
    let scores: Vec<i64> = (0..hp * sp * sp)
        .into_par_iter()
        .with_min_len(256)
        .map(|t| {
            let (head, i, j) = (t / (sp * sp), (t / sp) % sp, t % sp);
            if head >= h || i >= s || j >= s {
                return 0;
            }
            let qi = &q[i * h * m + head * m..i * h * m + (head + 1) * m];
            let kj = &k[j * h * m + head * m..j * h * m + (head + 1) * m];
            qi.iter().zip(kj).map(|(a, b)| a * b).sum()
        })
        .collect();
    let mut softmax = compute_softmax_witness(shape, mask, &params, &scores)?;
    softmax.scores = scores;
    if (params.one() as u128) * max_abs(&inputs.values) * (s as u128) >= 1u128 << 120 {
        return Err(AttentionError::NumericRange("the output A·V leaves the 121-bit range".into()));
    }
    let v = &inputs.values;
    let columns = hp * mvp;
    let mut output_hat = vec![Fr::zero(); sp * columns];
    for head in 0..h {
        // A_head (s × s, its rows' first s entries) times V_head (s × m_v), exact.
        let a: Vec<i64> = (0..s)
            .flat_map(|i| softmax.attention[(head * sp + i) * sp..(head * sp + i) * sp + s].iter().copied())
            .collect();
        let v_head: Vec<i64> = (0..s)
            .flat_map(|j| v[j * h * mv + head * mv..j * h * mv + (head + 1) * mv].iter().copied())
            .collect();
        let product = crate::integer_product::integer_product(&a, &v_head, s, s, mv);
        output_hat.par_chunks_mut(columns).zip(product.par_chunks(mv.max(1))).for_each(|(out, row)| {
            for (o, &total) in out[head * mvp..head * mvp + mv].iter_mut().zip(row) {
                *o = fr_from_i128(total);
            }
        });
    }
    let output: Vec<Fr> = (0..s)
        .flat_map(|i| (0..h).flat_map(move |head| (0..mv).map(move |c| (i, head, c))))
        .map(|(i, head, c)| output_hat[i * columns + head * mvp + c])
        .collect();
    witness.output_hat = output_hat;
    witness.output = output;
    witness.softmax = Some(softmax);
    Ok(witness)
}

/// The forward pass in exact integers of type `T` (`i64` or `i128`, chosen by the caller from
/// the input bounds so nothing overflows), converted to field elements once.
///
/// Returns the padded scores `QK̂` `[ĥ × ŝ × ŝ]` and `Ô` `[ŝ × ĥm̂_v]`, where
/// `Ô[i][head·m̂_v + c] = Σ_{j kept} score·V[j] + MASK · Σ_{j masked, j < s} V[j]`.
fn forward<T>(
    shape: &AttentionShape,
    mask: MaskKind,
    inputs: &AttentionInputs,
    with_output: bool,
) -> (Vec<Fr>, Vec<Fr>)
where
    T: Copy
        + Default
        + Send
        + Sync
        + From<i64>
        + Into<i128>
        + core::ops::AddAssign
        + core::ops::Mul<Output = T>,
{
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let (sp, hp, mvp) = (shape.padded_seq_len(), shape.padded_heads(), shape.padded_value_head_dim());
    let (q, k, v) = (&inputs.queries, &inputs.keys, &inputs.values);
    let int_scores: Vec<T> = (0..h * s * s)
        .into_par_iter()
        .with_min_len(256)
        .map(|index| {
            let (head, i, j) = (index / (s * s), (index / s) % s, index % s);
            let qi = &q[i * h * m + head * m..i * h * m + head * m + m];
            let kj = &k[j * h * m + head * m..j * h * m + head * m + m];
            let mut acc = T::default();
            for (a, b) in qi.iter().zip(kj) {
                acc += T::from(*a) * T::from(*b);
            }
            acc
        })
        .collect();
    let mut scores = vec![Fr::zero(); hp * sp * sp];
    scores.par_chunks_mut(sp).enumerate().for_each(|(row, out)| {
        let (head, i) = (row / sp, row % sp);
        if head < h && i < s {
            for (o, score) in out.iter_mut().zip(&int_scores[(head * s + i) * s..(head * s + i + 1) * s]) {
                *o = fr_from_i128((*score).into());
            }
        }
    });
    if !with_output {
        return (scores, Vec::new());
    }
    let mask_fr = mask_value();
    let per_row = h * mv;
    let columns = hp * mvp;
    let mut output_hat = vec![Fr::zero(); sp * columns];
    output_hat.par_chunks_mut(columns).enumerate().for_each(|(i, out)| {
        let mut kept = vec![T::default(); per_row];
        let mut masked = vec![T::default(); per_row];
        for j in 0..s {
            let v_row = &v[j * per_row..(j + 1) * per_row];
            if keeps(mask, s, i, j) {
                for head in 0..h {
                    let score = int_scores[(head * s + i) * s + j];
                    let acc = &mut kept[head * mv..(head + 1) * mv];
                    for (o, value) in acc.iter_mut().zip(&v_row[head * mv..(head + 1) * mv]) {
                        *o += score * T::from(*value);
                    }
                }
            } else {
                for (o, value) in masked.iter_mut().zip(v_row) {
                    *o += T::from(*value);
                }
            }
        }
        for head in 0..h {
            for c in 0..mv {
                let x = head * mv + c;
                out[head * mvp + c] = fr_from_i128(kept[x].into()) + mask_fr * fr_from_i128(masked[x].into());
            }
        }
    });
    (scores, output_hat)
}
