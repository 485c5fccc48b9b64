//! Floats in, fixed point through the proof, floats out — and how far that lands from float64.
//!
//! ```text
//! quantize   q = round(x / s),  s = max|x| / (2^(b−1) − 1)     per tensor, symmetric, b bits
//!            (NaN or ±∞ is an error; |q| ≤ 2^(b−1) − 1 by construction, never wrapped)
//! scores     S = q_Q·q_Kᵀ exact;  real exponent = S · s_Q·s_K/√m  →  SoftmaxParams::for_score_scale
//! output     O = A·q_V exact (A = 2^f-scaled probabilities)  →  O_real = O · s_V / 2^f
//! ```
//!
//! Defaults (measured on the layer-0 attention of all-MiniLM-L6-v2, `docs/ACCURACY.md`):
//! 10-bit inputs, `f = 16`, `g = 8`, `k = 16`.

use crate::softmax::SoftmaxMode;
use crate::{
    AttentionError, AttentionInputs, AttentionShape, MaskKind, SoftmaxParams, compute_witness_for_mode,
};
use ark_ff::{BigInteger, PrimeField};
use zkmha_field::Fr;

/// The default input width in bits.
pub const DEFAULT_INPUT_BITS: u32 = 10;

/// A tensor as integers and the scale that maps them back (`x ≈ scale · q`).
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedTensor {
    /// The integers.
    pub values: Vec<i64>,
    /// The scale.
    pub scale: f64,
}

/// Quantizes `tensor` symmetrically to `bits` bits.
///
/// # Errors
/// [`AttentionError::NumericRange`] for a NaN or infinite entry or `bits` outside `2..=24`.
pub fn quantize(tensor: &[f64], bits: u32, name: &str) -> Result<QuantizedTensor, AttentionError> {
    if !(2..=24).contains(&bits) {
        return Err(AttentionError::NumericRange(format!(
            "{bits}-bit quantization is not supported (2 to 24 bits)"
        )));
    }
    if let Some(index) = tensor.iter().position(|x| !x.is_finite()) {
        return Err(AttentionError::NumericRange(format!(
            "{name}[{index}] is {}, not a finite number",
            tensor[index]
        )));
    }
    let largest = tensor.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
    let top = f64::from((1u32 << (bits - 1)) - 1);
    let scale = if largest > 0.0 { largest / top } else { 1.0 };
    let values =
        tensor.iter().map(|x| ((x / scale).round() as i64).clamp(-(top as i64), top as i64)).collect();
    Ok(QuantizedTensor { values, scale })
}

pub use zkmha_nn::FloatAttentionInputs;

/// The quantized layer: integer inputs, the proven softmax's parameters, the output scale.
#[derive(Clone, Debug)]
pub struct QuantizedAttention {
    /// Integer Q, K, V.
    pub inputs: AttentionInputs,
    /// The fixed-point softmax.
    pub softmax: SoftmaxParams,
    /// `s_V / 2^f`: the real value of one unit of the integer output.
    pub output_scale: f64,
}

/// Quantizes the inputs with `bits` bits and derives the softmax parameters.
///
/// # Errors
/// As [`quantize`], [`SoftmaxParams::for_score_scale`], and
/// [`AttentionError::WrongTensorSize`] for inputs of the wrong size.
pub fn quantize_attention(
    shape: &AttentionShape,
    inputs: &FloatAttentionInputs,
    bits: u32,
) -> Result<QuantizedAttention, AttentionError> {
    shape.validate()?;
    for (tensor, data, columns) in [
        ("Q", &inputs.queries, shape.model_width()),
        ("K", &inputs.keys, shape.model_width()),
        ("V", &inputs.values, shape.value_model_width()),
    ] {
        if data.len() != shape.seq_len * columns {
            return Err(AttentionError::WrongTensorSize {
                tensor,
                rows: shape.seq_len,
                columns,
                expected: shape.seq_len * columns,
                got: data.len(),
            });
        }
    }
    let q = quantize(&inputs.queries, bits, "Q")?;
    let k = quantize(&inputs.keys, bits, "K")?;
    let v = quantize(&inputs.values, bits, "V")?;
    let score_scale = q.scale * k.scale / (shape.head_dim as f64).sqrt();
    let softmax = SoftmaxParams::for_score_scale(score_scale, shape.seq_len)?;
    Ok(QuantizedAttention {
        inputs: AttentionInputs { queries: q.values, keys: k.values, values: v.values },
        output_scale: v.scale / softmax.one() as f64,
        softmax,
    })
}

/// Float64 attention: `concat_h(softmax(mask(Q_h K_hᵀ)/√m) · V_h)`, `s × h·m_v`.
pub fn reference_attention(
    shape: &AttentionShape,
    mask: MaskKind,
    inputs: &FloatAttentionInputs,
) -> Vec<f64> {
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let norm = 1.0 / (m as f64).sqrt();
    let mut out = vec![0.0; s * h * mv];
    for head in 0..h {
        for i in 0..s {
            let kept: Vec<usize> = (0..s).filter(|&j| crate::keeps(mask, s, i, j)).collect();
            let z: Vec<f64> = kept
                .iter()
                .map(|&j| {
                    (0..m)
                        .map(|x| {
                            inputs.queries[i * h * m + head * m + x] * inputs.keys[j * h * m + head * m + x]
                        })
                        .sum::<f64>()
                        * norm
                })
                .collect();
            let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for (&j, w) in kept.iter().zip(&weights) {
                for c in 0..mv {
                    out[i * h * mv + head * mv + c] += w / total * inputs.values[j * h * mv + head * mv + c];
                }
            }
        }
    }
    out
}

/// How far the fixed-point output lands from float64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccuracyReport {
    /// `max |O − O_ref|`.
    pub max_absolute_error: f64,
    /// `‖O − O_ref‖₂ / ‖O_ref‖₂`.
    pub relative_l2_error: f64,
    /// `⟨O, O_ref⟩ / (‖O‖·‖O_ref‖)`.
    pub cosine_similarity: f64,
}

/// Compares two outputs.
pub fn compare(ours: &[f64], reference: &[f64]) -> AccuracyReport {
    let mut max_abs = 0.0f64;
    let (mut diff2, mut ref2, mut ours2, mut dot) = (0.0, 0.0, 0.0, 0.0);
    for (a, b) in ours.iter().zip(reference) {
        max_abs = max_abs.max((a - b).abs());
        diff2 += (a - b) * (a - b);
        ref2 += b * b;
        ours2 += a * a;
        dot += a * b;
    }
    AccuracyReport {
        max_absolute_error: max_abs,
        relative_l2_error: if ref2 > 0.0 { (diff2 / ref2).sqrt() } else { diff2.sqrt() },
        cosine_similarity: if ours2 > 0.0 && ref2 > 0.0 { dot / (ours2.sqrt() * ref2.sqrt()) } else { 1.0 },
    }
}

/// A field element holding a signed integer below 2^120 in magnitude, as `f64`.
pub fn signed_field_to_f64(value: &Fr) -> f64 {
    let positive = value.into_bigint();
    if positive.num_bits() <= 126 { big_to_f64(&positive) } else { -big_to_f64(&(-*value).into_bigint()) }
}

fn big_to_f64(big: &<Fr as PrimeField>::BigInt) -> f64 {
    big.as_ref().iter().rev().fold(0.0, |acc, limb| acc * 2f64.powi(64) + *limb as f64)
}

/// Quantizes, runs the fixed-point forward pass the proof proves (the same witness code), and
/// compares its dequantized output with float64. Returns the report and the dequantized output.
///
/// # Errors
/// As [`quantize_attention`] and [`compute_witness_for_mode`].
pub fn accuracy(
    shape: &AttentionShape,
    mask: MaskKind,
    inputs: &FloatAttentionInputs,
    bits: u32,
) -> Result<(AccuracyReport, Vec<f64>), AttentionError> {
    let quantized = quantize_attention(shape, inputs, bits)?;
    let witness = compute_witness_for_mode(
        shape,
        mask,
        SoftmaxMode::Exponential(quantized.softmax),
        &quantized.inputs,
    )?;
    let ours: Vec<f64> =
        witness.output.iter().map(|v| signed_field_to_f64(v) * quantized.output_scale).collect();
    let reference = reference_attention(shape, mask, inputs);
    Ok((compare(&ours, &reference), ours))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use zkmha_field::fr_from_i128;

    #[test]
    fn quantization_rounds_and_rejects_non_finite_values() {
        let q = quantize(&[0.5, -1.0, 0.25, 0.0], 8, "x").unwrap();
        assert_eq!(q.values, vec![64, -127, 32, 0]);
        assert!((q.scale - 1.0 / 127.0).abs() < 1e-15);
        assert!(matches!(quantize(&[1.0, f64::NAN], 8, "x"), Err(AttentionError::NumericRange(_))));
        assert!(matches!(quantize(&[f64::INFINITY], 8, "x"), Err(AttentionError::NumericRange(_))));
        assert!(matches!(quantize(&[1.0], 40, "x"), Err(AttentionError::NumericRange(_))));
        assert_eq!(quantize(&[0.0, 0.0], 8, "x").unwrap().values, vec![0, 0]);
    }

    #[test]
    fn signed_field_values_convert_back() {
        for v in [0i128, 1, -1, 123_456_789_012, -(1i128 << 100), (1i128 << 110) + 5] {
            assert_eq!(signed_field_to_f64(&fr_from_i128(v)), v as f64);
        }
    }

    #[test]
    fn random_layers_are_accurate() {
        // Smooth random inputs (like activations): relative L2 error well below 1 %.
        let shape = AttentionShape::new(24, 3, 16, 8).unwrap();
        let wave = |n: usize, phase: f64| -> Vec<f64> {
            (0..n).map(|i| ((i as f64) * 0.37 + phase).sin() * 2.0).collect()
        };
        let inputs = FloatAttentionInputs {
            queries: wave(24 * 48, 0.1),
            keys: wave(24 * 48, 1.3),
            values: wave(24 * 24, 2.2),
        };
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (report, _) = accuracy(&shape, mask, &inputs, DEFAULT_INPUT_BITS).unwrap();
            assert!(report.relative_l2_error < 0.01, "{report:?}");
            assert!(report.cosine_similarity > 0.9999, "{report:?}");
        }
        // Fewer bits, more error: the report can fail.
        let (coarse, _) = accuracy(&shape, MaskKind::Causal, &inputs, 4).unwrap();
        assert!(coarse.relative_l2_error > 0.01, "{coarse:?}");
    }
}
