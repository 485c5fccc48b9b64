//! A model layer's floats as the proven block's integers ([`crate::model_layer`]), and back:
//! power-of-two scales, chosen once per model (calibration) and kept in the verifier key.
//!
//! ```text
//! scales     X = X_int / 2^f_x,  W_t = W_t,int / 2^f_t (t = q, k, v, o; per tensor),
//!            b_t,int = round(b_t · 2^(f_x + f_t)) for t = q, k, v  (the scale of X·W_t)
//! projection Q_int = round((X_int·W_q,int + b_q,int) / 2^k_q)  ⇒  Q = Q_int / 2^(f_x + f_q − k_q)
//!            (K, V likewise; k_t makes the calibration input's |Q_int| reach 2^(b − 1))
//! softmax    score scale 2^−(f_x+f_q−k_q) · 2^−(f_x+f_k−k_k) / √m  →  SoftmaxParams
//!            O_int = A·V_int with A = 2^f-scaled probabilities  ⇒  O = O_int / 2^(f_v′ + f)
//!            where f_v′ = f_x + f_v − k_v
//! output     Y_int = round((O_int·W_o,int + b_o,int) / 2^k_o) with k_o = f_v′ + f + f_o − f_x,
//!            so Y = Y_int / 2^f_x: the residual Z_int = R_int + Y_int is exact, Z = Z_int / 2^f_x
//!            (R = X, or the hidden state H = H_int / 2^f_x of a pre-norm decoder);
//!            b_o,int = round(b_o · 2^(f_x + k_o)); k_o ≤ 32 (f_o lowered if needed)
//! widths     X: 16 bits at calibration, weights 16 bits (W_o and W_down 20: their outputs land
//!            on the residual stream unrounded), Q and K 12 bits, V 13 bits
//!            (docs/ACCURACY.md: SmolLM2's 30 layers' last hidden state within 0.455 % of float64)
//! norm       (pre-norm decoders, when proven: crate::norm) H_int = round(H·2^f_h), |H_int| <
//!            2^28; E = the image of ε at 2^f_h; γ_int = round(γ·2^g) (16 bits), β_int =
//!            round(β·2^f_x); k so that q = ⌊2^k·sqrt(d/T)⌋ reaches 2^16 on the calibration
//!            input's largest row and stays below 2^32 on a zero row (T = E); f = k + g − f_x, so
//!            X_int = norm(H_int) is X at 2^f_x
//! mlp        (when proven: crate::mlp) Z_int at 2^f_x, X₂_int = norm₂(Z_int) at 2^f_x (as above);
//!            W_t,int = round(W_t·2^f_t) (16 bits), b_t,int = round(b_t·2^(f_x + f_t)) for
//!            t = up, gate; k_up (k_gate) so the calibration input's |U_int| (|G_int|) reaches
//!            2^13 (the activation's 16-bit domain, 4× headroom): U at 2^a, a = f_x + f_t − k_t;
//!            A = act at 2^a (o = a); gated: P_int = A_int·U_int exactly, at 2^p, p = a_g + a_u;
//!            down: W_down at 20 bits, k_down = h + f_down − f_h (h the down input's scale;
//!            f_down lowered where k_down would pass 32), so Y₂ sits at 2^f_h and H' = Z + Y₂
//!            is exact
//! ```
//!
//! Every choice is deterministic in the weights and the calibration input; the prover and
//! the verifier read the same [`ModelQuantization`] from the verifier key.

use crate::model_layer::{ModelShape, ModelWeights, check_attention_sizes};
use crate::projection::{BIAS_BOUND_BITS, MAX_SHIFT_BITS, ProjectionShape, compute_projection};
use crate::quantization::{AccuracyReport, FloatAttentionInputs, compare, reference_attention};
use crate::rope::RotaryParams;
use crate::{AttentionError, AttentionShape, MaskKind, Residual, SoftmaxMode, SoftmaxParams};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

/// Bits of the calibration input's largest `|X_int|`: at most `2^14 − 1`, so inputs up to 2–4×
/// the calibration's fit the proven norm's output range `|X| < 2^15` (with the largest at up to
/// `2^15 − 1`, a 512-token input of a GPT-2-small-shaped chain overflowed it by 2 % where the
/// 64 calibration tokens did not).
pub const INPUT_BITS: u32 = 15;
/// Bits of each weight tensor's largest `|W_int|` (14 before 2026-11-27: SmolLM2's 30 layers
/// from 0.493 % to 0.455 % on the last hidden state, `docs/ACCURACY.md`).
pub const WEIGHT_BITS: u32 = 16;
/// Bits of the largest `|W_int|` of the weights whose outputs land on the residual stream
/// (`W_o`, `W_down`): their outputs are not rounded to a few bits after them, so their own
/// precision shows (SmolLM2's `W_down` beside its massive activation, `docs/ACCURACY.md`).
/// Shifts above 32 bits lower it again.
pub const RESIDUAL_WEIGHT_BITS: u32 = 20;
/// Bits of the calibration input's largest `|Q_int|`, `|K_int|` (wider ones shrink the
/// softmax's score multiplier, whose rounding then dominates; 11 before 2026-11-27: SmolLM2's
/// deep layers' attention, `docs/ACCURACY.md`).
pub const QUERY_KEY_BITS: u32 = 12;
/// Bits of the calibration input's largest QK-normed `|Q_int|`, `|K_int|` where no input can
/// take them past the rotation's range ([`ModelQuantization::calibrate_query_key_norms`]):
/// Gemma 3 270M's global layer 11 has its attention half's `Z − H` at 2.9 % of float64 with
/// 12 bits, 1.2 % with 14 (`docs/ACCURACY.md`).
pub const QUERY_KEY_NORM_BITS: u32 = 14;
/// Bits of the calibration input's largest `|V_int|` (only `k_o` grows with them; 12 before
/// 2026-11-27).
pub const VALUE_BITS: u32 = 13;
/// Bits of the largest `|H_int|` a pre-norm decoder's hidden state may take (it is not
/// normalized: decoders' residual streams grow far beyond `X`'s range).
pub const HIDDEN_STATE_BOUND_BITS: u32 = 40;

use crate::activation::Activation;
use crate::mlp::{BlockMlp, GatedProduct, MlpParams};
use crate::norm::{
    BlockNorm, MAX_NORM_REMAINDER_DIGITS, MAX_NORM_SCALE_BITS, MAX_NORM_SHIFT_BITS, NORM_INPUT_BOUND_BITS,
    NORM_WEIGHT_BOUND_BITS, NormKind, epsilon_image,
};
pub use zkmha_nn::FloatModelWeights;
pub use zkmha_nn::NormWeights;
use zkmha_nn::{FeedForwardWeights, LinearWeights, MlpWeights, OutputNormWeights, QueryKeyNormWeights};

/// The finest residual stream scale `2^f_h` the calibration chooses.
pub const MAX_HIDDEN_FRACTION_BITS: i32 = 20;

/// The proven norm's constants and its weights' scale (part of the verifier key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct NormQuantization {
    /// The block's norm (kind, `E`, `k`, `f`, bias, digits).
    pub block: BlockNorm,
    /// `g`: `γ_int = round(γ·2^g)` (`β` sits at `X`'s scale `2^f_x`).
    pub scale_fraction_bits: i32,
}

/// The scales and shifts of a quantized model layer (part of the verifier key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ModelQuantization {
    /// `f_x`: `X = X_int / 2^f_x` (and the MLP's input `X₂` likewise).
    pub input_fraction_bits: i32,
    /// `f_h`: the residual stream — `H`, `Z`, `H'` — at `2^f_h`: `f_x` except where a pre-norm
    /// layer's hidden states are too wide for `X`'s scale
    /// ([`ModelQuantization::calibrate_with_residual_stream`]); the norms take `H` (`Z`) at
    /// `2^f_h` to `X` (`X₂`) at `2^f_x`, and the output projections (`W_o`, `W_down`) land at
    /// `2^f_h`, so both residuals stay exact.
    pub hidden_fraction_bits: i32,
    /// `f_q, f_k, f_v, f_o`.
    pub weight_fraction_bits: [i32; 4],
    /// `k_q, k_k, k_v, k_o`.
    pub shifts: [u32; 4],
    /// The norm from `H` to `X`, when the block proves it ([`ModelQuantization::calibrate_norm`]).
    pub norm: Option<NormQuantization>,
    /// The norm after the attention and the MLP, when the block proves them
    /// ([`ModelQuantization::calibrate_mlp`]).
    pub mlp: Option<MlpQuantization>,
    /// The norms on each half's output, when the block proves them
    /// ([`ModelQuantization::calibrate_output_norms`]).
    pub output_norms: OutputNormQuantization,
    /// The QK-norm, when the block proves it ([`ModelQuantization::calibrate_query_key_norms`]).
    pub query_key_norms: Option<QueryKeyNormQuantization>,
    /// The norm on the layer's output, when the block proves it (BERT's post-norm layer,
    /// [`ModelQuantization::calibrate_post_norm`]): `X₂ + Y₂` at `2^f_x` in, `H'` at `2^f_x`
    /// out (`β_p` there too).
    pub post_norm: Option<NormQuantization>,
}

/// A norm on a half's output: its constants, and the scale `2^f_y` the half's output lands at
/// (its input; its output is at the residual stream's scale).
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ScaledNormQuantization {
    /// The norm's constants and `γ`'s scale (`β` sits at `2^f_h`).
    pub norm: NormQuantization,
    /// `f_y`.
    pub input_fraction_bits: i32,
}

/// The output norms' constants (part of the verifier key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct OutputNormQuantization {
    /// The norm on `Y`.
    pub attention: Option<ScaledNormQuantization>,
    /// The norm on `Y₂`.
    pub feed_forward: Option<ScaledNormQuantization>,
}

/// The QK-norm's constants (part of the verifier key): the projections' outputs in at their
/// scales, the normed heads out at `2^o_q`, `2^o_k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct QueryKeyNormQuantization {
    /// The norm on the query heads.
    pub query: NormQuantization,
    /// The norm on the key heads.
    pub key: NormQuantization,
    /// `o_q`, `o_k` (`β_q`, `β_k` sit there too).
    pub output_fraction_bits: [i32; 2],
}

/// Bits of the calibration input's largest `|Y|` (`|Y₂|`) before an output norm: the norm
/// takes inputs up to `2^28`, so 16× headroom.
pub const OUTPUT_NORM_INPUT_BITS: u32 = 24;

/// The proven MLP's constants and its weights' scales (part of the verifier key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MlpQuantization {
    /// The block's MLP half (its norm's and the MLP's constants).
    pub block: BlockMlp,
    /// `g₂`: `γ₂_int = round(γ₂·2^g₂)` (`β₂` sits at `2^f_x`).
    pub norm_scale_fraction_bits: i32,
    /// `f_up`, `f_gate` (0 for a dense MLP), `f_down`.
    pub weight_fraction_bits: [i32; 3],
}

/// Bits of the calibration input's largest `|U_int|`, `|G_int|`, `|P_int|` (the activation's
/// domain and the product's range take 16: 4× headroom for other inputs).
pub const MLP_ACTIVATION_BITS: u32 = 14;

pub(crate) fn largest(values: &[f64], name: &str) -> Result<f64, AttentionError> {
    if let Some(index) = values.iter().position(|x| !x.is_finite()) {
        return Err(AttentionError::NumericRange(format!(
            "{name}[{index}] is {}, not a finite number",
            values[index]
        )));
    }
    Ok(values.iter().fold(0.0f64, |acc, x| acc.max(x.abs())))
}

/// The `f` with `largest · 2^f ≤ 2^(bits − 1) − 1` (largest `f`; `0` for an all-zero tensor).
pub(crate) fn fraction_bits(largest: f64, bits: u32) -> i32 {
    if largest == 0.0 {
        return 0;
    }
    let top = f64::from((1u32 << (bits - 1)) - 1);
    (top / largest).log2().floor() as i32
}

/// `round(x·2^f)` for every value, each below `2^bound_bits` in magnitude.
///
/// # Errors
/// [`AttentionError::NumericRange`] naming the tensor and the entry for a value that is not
/// finite or out of the bound.
pub(crate) fn scale(
    values: &[f64],
    fraction_bits: i32,
    bound_bits: u32,
    name: &str,
) -> Result<Vec<i64>, AttentionError> {
    let factor = 2f64.powi(fraction_bits);
    let bound = (1u64 << bound_bits) as f64;
    values
        .iter()
        .enumerate()
        .map(|(index, x)| {
            let v = (x * factor).round();
            if !v.is_finite() || v.abs() >= bound {
                return Err(AttentionError::NumericRange(format!(
                    "{name}[{index}] = {x} does not fit the model's fixed point (|{name}| < 2^{} at scale 2^{fraction_bits}); \
                     it is outside the range the model was calibrated for",
                    bound_bits as i32 - fraction_bits
                )));
            }
            Ok(v as i64)
        })
        .collect()
}

/// `X`'s fraction bits: the calibration input's and the MLP's input `X₂` (when proven) fit
/// `bits` bits ([`INPUT_BITS`]; a post-norm layer's [`POST_NORM_STREAM_BITS`]).
fn input_scale(
    calibration_input: &[f64],
    mlp_input: Option<&[f64]>,
    bits: u32,
) -> Result<i32, AttentionError> {
    let mut f_x = fraction_bits(largest(calibration_input, "X")?, bits);
    if let Some(x2) = mlp_input {
        let widest = largest(x2, "X₂")?;
        if widest > 0.0 {
            f_x = f_x.min(fraction_bits(widest, bits));
        }
    }
    Ok(f_x)
}

/// Bits of the calibration input's largest `|X|`, `|X₂|` and `|H'|` in a post-norm layer
/// (BERT, an MLP after a residual on `X`): its residual stream is `X` itself, and the norms
/// that make it (the MLP's, the post-norm) take it in
/// [`crate::norm::OUTPUT_NORM_OUTPUT_BITS`] = 20 bits: 2× headroom, as [`INPUT_BITS`] leaves
/// 16-bit outputs. At 15 bits all-MiniLM-L6-v2's six layers ended 1.07 % from float64.
pub const POST_NORM_STREAM_BITS: u32 = crate::norm::OUTPUT_NORM_OUTPUT_BITS - 1;

/// The bits `X` fills on the calibration input: [`POST_NORM_STREAM_BITS`] for a post-norm
/// layer (its residual on `X`, an MLP proven), else [`INPUT_BITS`].
fn stream_bits(shape: &ModelShape, mlp_input: Option<&[f64]>) -> u32 {
    if shape.residual == Residual::LayerInput && mlp_input.is_some() {
        POST_NORM_STREAM_BITS
    } else {
        INPUT_BITS
    }
}

impl ModelQuantization {
    /// Chooses the scales and shifts from the weights and a calibration input `X`
    /// (`s × d_model`).
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values or shifts out of reach,
    /// [`AttentionError::WrongTensorSize`] for tensors of the wrong size.
    pub fn calibrate(
        shape: &ModelShape,
        weights: &FloatModelWeights,
        calibration_input: &[f64],
    ) -> Result<Self, AttentionError> {
        Self::calibrate_with_residual_stream(shape, weights, calibration_input, None, &[])
    }

    /// [`ModelQuantization::calibrate`] for a pre-norm layer: `X`'s scale `2^f_x` holds the
    /// MLP's input `X₂` as well (`mlp_input`, in float, when the block proves the MLP), and the
    /// residual stream's scale `2^f_h` — `H`, `Z` and `H'` on the calibration input, in float
    /// (`residual_stream`) — is lowered from `f_x` until the widest of them fits the norms'
    /// input range with 2× headroom (`|H|·2^f_h < 2^(NORM_INPUT_BOUND_BITS − 1)`): the
    /// "massive activations" of deeper layers cost the residual stream's precision, not `X`'s.
    ///
    /// # Errors
    /// As [`ModelQuantization::calibrate`]; NaN or infinite values in `X₂` or the stream.
    pub fn calibrate_with_residual_stream(
        shape: &ModelShape,
        weights: &FloatModelWeights,
        calibration_input: &[f64],
        mlp_input: Option<&[f64]>,
        residual_stream: &[&[f64]],
    ) -> Result<Self, AttentionError> {
        check_sizes(shape, weights, calibration_input.len())?;
        let f_x = input_scale(calibration_input, mlp_input, stream_bits(shape, mlp_input))?;
        let mut f_h = if residual_stream.is_empty() { f_x } else { MAX_HIDDEN_FRACTION_BITS };
        for hidden in residual_stream {
            let widest = largest(hidden, "H")?;
            if widest > 0.0 {
                f_h = f_h.min(fraction_bits(widest, NORM_INPUT_BOUND_BITS));
            }
        }
        Self::calibrate_at(shape, weights, calibration_input, f_x, f_h)
    }

    /// The finest residual stream scale `2^f_h` at which the output norms' float outputs on
    /// the calibration input (`norm_a(Y)`, `norm_f(Y₂)`) fit the norms' 20-bit output range
    /// ([`crate::norm::OUTPUT_NORM_OUTPUT_BITS`]); `None` without output norms (or outputs all
    /// zero). A residual stream scale chosen on the stream alone must not be finer
    /// ([`ModelQuantization::calibrate_output_norms`] refuses it).
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values.
    pub fn normed_output_fraction_bits(normed_outputs: &[&[f64]]) -> Result<Option<i32>, AttentionError> {
        let mut finest = None;
        for normed in normed_outputs {
            let widest = largest(normed, "a normed half output")?;
            if widest > 0.0 {
                let fits = fraction_bits(widest, crate::norm::OUTPUT_NORM_OUTPUT_BITS);
                finest = Some(finest.map_or(fits, |f: i32| f.min(fits)));
            }
        }
        Ok(finest)
    }

    /// [`ModelQuantization::calibrate_with_residual_stream`] with the residual stream's scale
    /// given: `2^f_h` with `f_h = hidden_fraction_bits` (layers chained into one inference read
    /// the boundary between two layers at one scale: the smallest any of them needs).
    ///
    /// # Errors
    /// As [`ModelQuantization::calibrate_with_residual_stream`].
    pub fn calibrate_with_hidden_scale(
        shape: &ModelShape,
        weights: &FloatModelWeights,
        calibration_input: &[f64],
        mlp_input: Option<&[f64]>,
        hidden_fraction_bits: i32,
    ) -> Result<Self, AttentionError> {
        check_sizes(shape, weights, calibration_input.len())?;
        // A post-norm layer's residual stream is X itself: X at the stream's scale.
        let f_x = match shape.residual {
            Residual::LayerInput => hidden_fraction_bits,
            Residual::HiddenState => input_scale(calibration_input, mlp_input, INPUT_BITS)?,
        };
        Self::calibrate_at(shape, weights, calibration_input, f_x, hidden_fraction_bits)
    }

    /// The weights' scales and the shifts for `X` at `2^f_x` and the residual stream at
    /// `2^f_h`.
    fn calibrate_at(
        shape: &ModelShape,
        weights: &FloatModelWeights,
        calibration_input: &[f64],
        f_x: i32,
        f_h: i32,
    ) -> Result<Self, AttentionError> {
        let tensors = [&weights.queries, &weights.keys, &weights.values, &weights.output];
        let mut f_w = [0i32; 4];
        for (t, (f, (tensor, name))) in
            f_w.iter_mut().zip(tensors.iter().zip(["W_q", "W_k", "W_v", "W_o"])).enumerate()
        {
            *f = fraction_bits(
                largest(tensor, name)?,
                if t == 3 { RESIDUAL_WEIGHT_BITS } else { WEIGHT_BITS },
            );
        }
        let x = scale(calibration_input, f_x, 31, "X")?;
        let mut shifts = [0u32; 4];
        let [keys, keys_bias, values, values_bias] = shape.expanded_key_values(weights);
        let matrices = [&weights.queries, &keys, &values];
        let biases = [&weights.queries_bias, &keys_bias, &values_bias];
        let projections = shape.projections();
        for t in 0..3 {
            let w = scale(matrices[t], f_w[t], 31, "W")?;
            let b = scale(biases[t], f_x + f_w[t], BIAS_BOUND_BITS, "b")?;
            // The exact products (shift 1 keeps them but for one bit).
            let p = ProjectionShape { shift: 1, ..projections[t] };
            let raw = compute_projection(&p, &x, &w, &b)?;
            let top = raw.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0) * 2;
            let bits = if t == 2 { VALUE_BITS } else { QUERY_KEY_BITS };
            let limit = (1u64 << (bits - 1)) - 1;
            let mut k = 1u32;
            while k < MAX_SHIFT_BITS && (top >> k) > limit {
                k += 1;
            }
            shifts[t] = k;
        }
        let softmax_bits = softmax_output_bits();
        // k_o = f_v′ + f + f_o − f_h (Y lands on the residual stream's scale).
        let value_bits = f_x + f_w[2] - shifts[2] as i32;
        let (f_o, k_o) = landing_shift(value_bits + softmax_bits, f_w[3], f_h);
        f_w[3] = f_o;
        shifts[3] = k_o;
        Ok(Self {
            input_fraction_bits: f_x,
            hidden_fraction_bits: f_h,
            weight_fraction_bits: f_w,
            shifts,
            norm: None,
            mlp: None,
            output_norms: OutputNormQuantization::default(),
            query_key_norms: None,
            post_norm: None,
        })
    }

    /// Chooses the QK-norm's constants (after [`ModelQuantization::calibrate`]) from its float
    /// weights, `ε` and the calibration input's `Q` and `K` projections (`s × h·m`, the key
    /// heads repeated: [`reference_attention_parts`]): each projection at its own scale in,
    /// the normed heads out at the scale where the calibration's largest fills
    /// [`QUERY_KEY_NORM_BITS`] bits, where no input can take them (or their rotation) past
    /// the rotation's 15-bit range and the softmax's multiplier stays exact or at least
    /// `2^12`; else [`QUERY_KEY_BITS`] bits (as the projections' outputs without the norm).
    ///
    /// ```text
    /// bound   |y_j| ≤ √m·max|γ| + max|β| for every input: RMSNorm's y_j = γ_j·x_j·√m/√(Σx² + mε)
    ///         with x_j² ≤ Σx² (LayerNorm's likewise on x − μ); a rotated pair's entries
    ///         |y'| ≤ ‖(y_a, y_b)‖ ≤ √m·max|γ| + √2·max|β|
    /// ```
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values or a norm no shift can
    /// reach; [`AttentionError::WrongTensorSize`] for tensors of the wrong size.
    pub fn calibrate_query_key_norms(
        &mut self,
        head_dim: usize,
        weights: &QueryKeyNormWeights<f64>,
        epsilon: f64,
        query_projection: &[f64],
        key_projection: &[f64],
    ) -> Result<(), AttentionError> {
        let f_x = self.input_fraction_bits;
        let pairs = [(&weights.query, query_projection), (&weights.key, key_projection)];
        // [narrow, wide] output scales of Q's and K's norms.
        let mut scales = [[0i32; 2]; 2];
        for (p, (w, projection)) in pairs.into_iter().enumerate() {
            let normed = float_norm(w, epsilon, projection, head_dim);
            let widest = largest(&normed, "the QK-norm's output")?;
            let gain = largest(&w.scale, "γ")?;
            let shift = largest(&w.bias, "β")?;
            // The a-priori bound, with a margin for the integer norm's roundings.
            let bound = ((head_dim as f64).sqrt() * gain + std::f64::consts::SQRT_2 * shift) * 1.001;
            let safe = fraction_bits(bound, crate::model_layer::ROTATED_PROJECTION_OUTPUT_BITS);
            let narrow = fraction_bits(widest, QUERY_KEY_BITS);
            scales[p] = [narrow, narrow.max(fraction_bits(widest, QUERY_KEY_NORM_BITS).min(safe))];
        }
        let multiplier = |q: i32, k: i32| 2f64.powi(24 - q - k) / (head_dim as f64).sqrt();
        let wide = multiplier(scales[0][1], scales[1][1]);
        let output_fraction_bits = if wide.fract() == 0.0 || wide >= 4096.0 {
            [scales[0][1], scales[1][1]]
        } else {
            [scales[0][0], scales[1][0]]
        };
        let mut norms = Vec::with_capacity(2);
        for (p, (w, projection)) in pairs.into_iter().enumerate() {
            let input_scale = f_x + self.weight_fraction_bits[p] - self.shifts[p] as i32;
            norms.push(norm_constants(
                output_fraction_bits[p],
                input_scale,
                head_dim,
                w,
                epsilon,
                projection,
            )?);
        }
        self.query_key_norms =
            Some(QueryKeyNormQuantization { query: norms[0], key: norms[1], output_fraction_bits });
        Ok(())
    }

    /// Chooses the output norms' constants (after [`ModelQuantization::calibrate_mlp`] when
    /// the block proves its MLP) from their float weights, `ε` and the calibration input's
    /// half outputs before them (`Y`: [`AttentionParts::projected`]; `Y₂`:
    /// [`reference_mlp_output`]): each half's output lands at its own scale (the largest
    /// filling [`OUTPUT_NORM_INPUT_BITS`] bits: `W_o`'s or `W_down`'s shift is chosen again),
    /// and its norm takes it to the residual stream's `2^f_h`.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values, a normed output beyond the
    /// norm's 20-bit output range at `2^f_h` (a residual stream scale too fine for it), or a
    /// norm no shift can reach; [`AttentionError::WrongTensorSize`] for tensors of the wrong
    /// size; [`AttentionError::InvalidShape`] for a feed-forward output norm without the MLP.
    pub fn calibrate_output_norms(
        &mut self,
        model_width: usize,
        weights: &FloatModelWeights,
        epsilon: f64,
        attention_output: Option<&[f64]>,
        feed_forward_output: Option<&[f64]>,
    ) -> Result<(), AttentionError> {
        let d = model_width;
        let f_h = self.hidden_fraction_bits;
        let scaled = |norm: &NormWeights<f64>,
                      output: &[f64],
                      name: &str|
         -> Result<(i32, NormQuantization), AttentionError> {
            let input_scale = fraction_bits(largest(output, name)?, OUTPUT_NORM_INPUT_BITS);
            let normed = float_norm(norm, epsilon, output, d);
            let widest = largest(&normed, name)?;
            let fits = fraction_bits(widest, crate::norm::OUTPUT_NORM_OUTPUT_BITS);
            if widest > 0.0 && fits < f_h {
                return Err(AttentionError::NumericRange(format!(
                    "the norm on {name} reaches {widest:.3e}, beyond its 20-bit output range at the residual stream's scale 2^{f_h} (2^{fits} would hold it)"
                )));
            }
            Ok((input_scale, norm_constants(f_h, input_scale, d, norm, epsilon, output)?))
        };
        if let (Some(norm), Some(output)) = (&weights.output_norms.attention, attention_output) {
            let (f_y, quantization) = scaled(norm, output, "the attention's output")?;
            // W_o lands Y at 2^f_y: k_o = f_v′ + f + f_o − f_y.
            let value_bits = self.input_fraction_bits + self.weight_fraction_bits[2] - self.shifts[2] as i32;
            let f_o = fraction_bits(largest(&weights.output, "W_o")?, RESIDUAL_WEIGHT_BITS);
            let (f_o, k_o) = landing_shift(value_bits + softmax_output_bits(), f_o, f_y);
            self.weight_fraction_bits[3] = f_o;
            self.shifts[3] = k_o;
            self.output_norms.attention =
                Some(ScaledNormQuantization { norm: quantization, input_fraction_bits: f_y });
        }
        if let (Some(norm), Some(output)) = (&weights.output_norms.feed_forward, feed_forward_output) {
            let (Some(mlp), Some(feed_forward)) = (self.mlp.as_mut(), &weights.feed_forward) else {
                return Err(AttentionError::InvalidShape(
                    "a norm on the MLP's output needs the MLP calibrated first".into(),
                ));
            };
            let (f_y, quantization) = scaled(norm, output, "the MLP's output")?;
            // W_down lands Y₂ at 2^f_y.
            let p = mlp.block.params;
            let a = p.activation_output_fraction_bits as i32;
            let down_input = match p.gate {
                None => a,
                Some(_) => a + (self.input_fraction_bits + mlp.weight_fraction_bits[0] - p.up_shift as i32),
            };
            let f_down =
                fraction_bits(largest(&feed_forward.mlp.down.weights, "W_down")?, RESIDUAL_WEIGHT_BITS);
            let (f_down, down_shift) = landing_shift(down_input, f_down, f_y);
            mlp.weight_fraction_bits[2] = f_down;
            mlp.block.params.down_shift = down_shift;
            self.output_norms.feed_forward =
                Some(ScaledNormQuantization { norm: quantization, input_fraction_bits: f_y });
        }
        Ok(())
    }

    /// The scale `W_o` lands `Y` at: the attention output norm's input scale, else the
    /// residual stream's.
    fn attention_output_fraction_bits(&self) -> i32 {
        self.output_norms.attention.map_or(self.hidden_fraction_bits, |n| n.input_fraction_bits)
    }

    /// Chooses the proven norm's constants (after [`ModelQuantization::calibrate`], whose `f_x`
    /// is `H`'s scale too) from its float weights, its `ε` and the calibration input's hidden
    /// state `H` (`s × d_model`), so that the block proves `X = norm(H)`.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values, a hidden state beyond
    /// `2^20` at `X`'s scale, or a norm no shift can reach; [`AttentionError::WrongTensorSize`]
    /// for weights or a hidden state of the wrong size.
    pub fn calibrate_norm(
        &mut self,
        model_width: usize,
        norm: &NormWeights<f64>,
        epsilon: f64,
        hidden_state: &[f64],
    ) -> Result<(), AttentionError> {
        self.norm = Some(self.norm_constants(model_width, norm, epsilon, hidden_state)?);
        Ok(())
    }

    /// A proven norm's constants from `H`'s scale to `X`'s, from its weights, `ε` and its
    /// input.
    fn norm_constants(
        &self,
        model_width: usize,
        norm: &NormWeights<f64>,
        epsilon: f64,
        hidden_state: &[f64],
    ) -> Result<NormQuantization, AttentionError> {
        norm_constants(
            self.input_fraction_bits,
            self.hidden_fraction_bits,
            model_width,
            norm,
            epsilon,
            hidden_state,
        )
    }

    /// Chooses the proven MLP's constants (after [`ModelQuantization::calibrate`] and
    /// [`ModelQuantization::calibrate_norm`]) from its norm's and its own float weights, the
    /// norm's `ε`, the activation, and the calibration input's hidden state after the
    /// attention `Z` (`s × d_model`, the float block's output), so that the block proves
    /// `H' = Z + MLP(norm₂(Z))`.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values or scales no shift can
    /// reach; [`AttentionError::WrongTensorSize`] for tensors of the wrong size.
    pub fn calibrate_mlp(
        &mut self,
        model_width: usize,
        weights: &FeedForwardWeights<f64>,
        epsilon: f64,
        activation: Activation,
        middle: &[f64],
    ) -> Result<(), AttentionError> {
        let d = model_width;
        let f_x = self.input_fraction_bits;
        let norm = self.norm_constants(d, &weights.norm, epsilon, middle)?;
        let s = middle.len() / d.max(1);
        let n = weights.mlp.up.bias.len();
        let float_input = float_norm(&weights.norm, epsilon, middle, d);
        let x = scale(&float_input, f_x, 31, "X₂")?;
        let range_error = |what: &str| {
            AttentionError::NumericRange(format!(
                "the MLP's {what} cannot be reached with a shift of 1 to 32 bits"
            ))
        };
        // A widening projection's scale, integers and shift: |output| reaches 2^(MLP_ACTIVATION_BITS − 1).
        let widen =
            |linear: &LinearWeights<f64>, name: &str| -> Result<(i32, u32, Vec<i64>), AttentionError> {
                let f = fraction_bits(largest(&linear.weights, name)?, WEIGHT_BITS);
                let w = scale(&linear.weights, f, 31, name)?;
                let b = scale(&linear.bias, f_x + f, BIAS_BOUND_BITS, name)?;
                let shape = ProjectionShape { rows: s, inputs: d, outputs: n, shift: 1, output_bits: None };
                let raw = compute_projection(&shape, &x, &w, &b)?;
                let top = raw.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0) * 2;
                let limit = (1u64 << (MLP_ACTIVATION_BITS - 1)) - 1;
                let mut k = 1u32;
                while k < MAX_SHIFT_BITS && (top >> k) > limit {
                    k += 1;
                }
                let output = compute_projection(&ProjectionShape { shift: k, ..shape }, &x, &w, &b)?;
                Ok((f, k, output))
            };
        let (f_up, up_shift, up) = widen(&weights.mlp.up, "W_up")?;
        // The activation reads the gate (gated) or the up projection (dense).
        let (f_gate, activated_shift, activation_input) = match &weights.mlp.gate {
            Some(gate) => widen(gate, "W_gate")?,
            None => (0, up_shift, up.clone()),
        };
        let f_activated = if weights.mlp.gate.is_some() { f_gate } else { f_up };
        let a = f_x + f_activated - activated_shift as i32;
        let a =
            u32::try_from(a).map_err(|_| range_error("activation input scale (negative fraction bits)"))?;
        let activation_shape = crate::activation::ActivationShape {
            activation,
            rows: s,
            width: n,
            input_fraction_bits: a,
            output_fraction_bits: a,
            input_bits: crate::activation::MAX_ACTIVATION_INPUT_BITS,
        };
        // The calibration's activation inputs must sit in the activation's table.
        crate::activation::compute_activation(&activation_shape, &activation_input)?;
        let (gate, down_input_bits) = match &weights.mlp.gate {
            None => (None, a as i32),
            Some(_) => {
                // The product is exact: P sits at A's scale times U's.
                let up_fraction = f_x + f_up - up_shift as i32;
                let gate = GatedProduct {
                    gate_shift: activated_shift,
                    up_bits: crate::activation::MAX_ACTIVATION_INPUT_BITS,
                };
                (Some(gate), a as i32 + up_fraction)
            }
        };
        let mut f_down = fraction_bits(largest(&weights.mlp.down.weights, "W_down")?, RESIDUAL_WEIGHT_BITS);
        largest(&weights.mlp.down.bias, "b_down")?;
        // Y₂ lands on the residual stream's scale 2^f_h, so that H' = Z + Y₂ is exact.
        let mut down_shift = down_input_bits + f_down - self.hidden_fraction_bits;
        if down_shift > MAX_SHIFT_BITS as i32 {
            f_down -= down_shift - MAX_SHIFT_BITS as i32;
            down_shift = MAX_SHIFT_BITS as i32;
        }
        if down_shift < 1 {
            f_down += 1 - down_shift;
            down_shift = 1;
        }
        let params = MlpParams {
            hidden: n,
            activation,
            activation_input_fraction_bits: a,
            activation_output_fraction_bits: a,
            activation_input_bits: crate::activation::MAX_ACTIVATION_INPUT_BITS,
            up_shift,
            gate,
            down_shift: down_shift as u32,
        };
        params.shape(s, d, None).validate()?;
        self.mlp = Some(MlpQuantization {
            block: BlockMlp { norm: norm.block, params },
            norm_scale_fraction_bits: norm.scale_fraction_bits,
            weight_fraction_bits: [f_up, if gate.is_some() { f_gate } else { 0 }, f_down],
        });
        Ok(())
    }

    /// Checks that every norm's weight scale `2^g` agrees with its constants: `f = k + g − o`,
    /// `o` the norm's output scale (`f_x` for the norms before the attention and the MLP and
    /// the post-norm, `f_h` for the output norms, `o_q`, `o_k` for the QK-norm), as the
    /// calibration makes it. The proof does not read `g` (the prover quantizes `γ` with it):
    /// a key edited there would verify the same proofs while naming another scale.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the norm whose scale disagrees.
    pub fn check_norm_scales(&self) -> Result<(), AttentionError> {
        let f_x = self.input_fraction_bits;
        let mut norms: Vec<(&str, NormQuantization, i32)> = Vec::new();
        if let Some(n) = self.norm {
            norms.push(("the norm before the attention", n, f_x));
        }
        if let Some(m) = self.mlp {
            let n = NormQuantization { block: m.block.norm, scale_fraction_bits: m.norm_scale_fraction_bits };
            norms.push(("the MLP's norm", n, f_x));
        }
        if let Some(n) = self.post_norm {
            norms.push(("the norm on the layer's output", n, f_x));
        }
        for (name, n) in [
            ("the attention's output norm", self.output_norms.attention),
            ("the MLP's output norm", self.output_norms.feed_forward),
        ] {
            if let Some(n) = n {
                norms.push((name, n.norm, self.hidden_fraction_bits));
            }
        }
        if let Some(q) = self.query_key_norms {
            norms.push(("the QK-norm on the queries", q.query, q.output_fraction_bits[0]));
            norms.push(("the QK-norm on the keys", q.key, q.output_fraction_bits[1]));
        }
        for (name, n, output) in norms {
            let expected =
                i64::from(n.block.scale_bits) + i64::from(n.scale_fraction_bits) - i64::from(output);
            if i64::from(n.block.shift_bits) != expected {
                return Err(AttentionError::InvalidShape(format!(
                    "{name}'s weight scale 2^{} does not agree with its shift f = {} (k = {}, output at 2^{output})",
                    n.scale_fraction_bits, n.block.shift_bits, n.block.scale_bits
                )));
            }
        }
        Ok(())
    }

    /// Checks that the MLP's weight scales agree with its shifts as the calibration makes
    /// them: the activation reads `U` (dense) or `G` (gated) at `2^a` with
    /// `a = f_x + f_up − k_up` (or `f_x + f_gate − k_gate`), `f_gate = 0` for a dense MLP, and
    /// `W_down` lands `Y₂` at `2^f_h` (or its output norm's input scale `2^f_y`): `k_down =
    /// d + f_down − f_h`, `d` the down projection's
    /// input scale (`a`, or `a + f_x + f_up − k_up` for the gated product). The proof reads
    /// the shifts, not the scales: a key edited there would verify the same proofs.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the scale that disagrees.
    pub fn check_mlp_scales(&self) -> Result<(), AttentionError> {
        let Some(m) = self.mlp else { return Ok(()) };
        let p = m.block.params;
        let [f_up, f_gate, f_down] = m.weight_fraction_bits.map(i64::from);
        let (f_x, f_h) = (i64::from(self.input_fraction_bits), i64::from(self.hidden_fraction_bits));
        let a = i64::from(p.activation_input_fraction_bits);
        let up = f_x + f_up - i64::from(p.up_shift);
        let (activated, down_input) = match p.gate {
            None => (up, a),
            Some(g) => (f_x + f_gate - i64::from(g.gate_shift), a + up),
        };
        let bad = |what: &str| {
            Err(AttentionError::InvalidShape(format!("the MLP's {what} does not agree with its shifts")))
        };
        if p.gate.is_none() && f_gate != 0 {
            return bad("gate weight scale (a dense MLP has none)");
        }
        if activated != a || i64::from(p.activation_output_fraction_bits) != a {
            return bad(if p.gate.is_some() { "gate weight scale" } else { "up weight scale" });
        }
        // Y₂ lands at the residual stream's scale, or at its output norm's input scale (Gemma).
        let landing = self.output_norms.feed_forward.map_or(f_h, |n| i64::from(n.input_fraction_bits));
        if i64::from(p.down_shift) != down_input + f_down - landing {
            return bad(if p.gate.is_some() { "up or down weight scale" } else { "down weight scale" });
        }
        Ok(())
    }

    /// Chooses the post-norm's constants (after [`ModelQuantization::calibrate_mlp`], whose
    /// `X₂` and `Y₂` sit at `2^f_x`) from its float weights, `ε` and the calibration input's
    /// `X₂ + Y₂` (`s × d_model`, in float), so that the block proves `H' = norm_p(X₂ + Y₂)`
    /// (BERT's `output.LayerNorm`), `H'` at `2^f_x`: the next layer's input.
    ///
    /// # Errors
    /// As [`ModelQuantization::calibrate_norm`].
    pub fn calibrate_post_norm(
        &mut self,
        model_width: usize,
        norm: &NormWeights<f64>,
        epsilon: f64,
        sum: &[f64],
    ) -> Result<(), AttentionError> {
        self.post_norm = Some(self.norm_constants(model_width, norm, epsilon, sum)?);
        Ok(())
    }

    /// `2^−(f_x + f_q − k_q) · 2^−(f_x + f_k − k_k) / √m`: the real value of one unit of
    /// `Q_int·K_intᵀ` divided by `√m`.
    pub fn score_scale(&self, head_dim: usize) -> f64 {
        let f_x = self.input_fraction_bits;
        let [f_q, f_k, _, _] = self.weight_fraction_bits;
        let [k_q, k_k, _, _] = self.shifts;
        // Q and K as the attention reads them: the projections', or the QK-norm's outputs.
        let [q, k] = self
            .query_key_norms
            .map_or([f_x + f_q - k_q as i32, f_x + f_k - k_k as i32], |n| n.output_fraction_bits);
        2f64.powi(-q - k) / (head_dim as f64).sqrt()
    }

    /// The proven softmax for `attention` (its tolerance depends on the length).
    ///
    /// # Errors
    /// As [`SoftmaxParams::for_score_scale`].
    pub fn softmax(&self, attention: &AttentionShape) -> Result<SoftmaxMode, AttentionError> {
        Ok(SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(
            self.score_scale(attention.head_dim),
            attention.seq_len,
        )?))
    }

    /// The block's shape for `attention`, `model_width`, the residual's kind, the key/value
    /// heads and the rotary embedding.
    pub fn model_shape(
        &self,
        attention: AttentionShape,
        model_width: usize,
        residual: Residual,
        key_value_heads: usize,
        rotary: Option<RotaryParams>,
    ) -> ModelShape {
        ModelShape {
            attention,
            model_width,
            shifts: self.shifts,
            residual,
            key_value_heads,
            rotary,
            norm: self.norm.map(|n| n.block),
            mlp: self.mlp.map(|m| m.block),
            output_norms: crate::model_layer::OutputNorms {
                attention: self.output_norms.attention.map(|n| n.norm.block),
                feed_forward: self.output_norms.feed_forward.map(|n| n.norm.block),
            },
            query_key_norms: self
                .query_key_norms
                .map(|n| crate::model_layer::QueryKeyNorms { query: n.query.block, key: n.key.block }),
            post_norm: self.post_norm.map(|n| n.block),
        }
    }

    /// The integer weights.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for values the scales do not fit.
    pub fn quantize_weights(&self, weights: &FloatModelWeights) -> Result<ModelWeights, AttentionError> {
        let f_x = self.input_fraction_bits;
        let [f_q, f_k, f_v, f_o] = self.weight_fraction_bits;
        Ok(ModelWeights {
            queries: scale(&weights.queries, f_q, 31, "W_q")?,
            keys: scale(&weights.keys, f_k, 31, "W_k")?,
            values: scale(&weights.values, f_v, 31, "W_v")?,
            queries_bias: scale(&weights.queries_bias, f_x + f_q, BIAS_BOUND_BITS, "b_q")?,
            keys_bias: scale(&weights.keys_bias, f_x + f_k, BIAS_BOUND_BITS, "b_k")?,
            values_bias: scale(&weights.values_bias, f_x + f_v, BIAS_BOUND_BITS, "b_v")?,
            output: scale(&weights.output, f_o, 31, "W_o")?,
            output_bias: scale(
                &weights.output_bias,
                self.attention_output_fraction_bits() + self.shifts[3] as i32,
                BIAS_BOUND_BITS,
                "b_o",
            )?,
            norm: match (&self.norm, &weights.norm) {
                (Some(q), Some(w)) => Some(NormWeights {
                    kind: w.kind,
                    scale: scale(&w.scale, q.scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ")?,
                    bias: scale(&w.bias, f_x, NORM_WEIGHT_BOUND_BITS, "β")?,
                }),
                _ => None,
            },
            feed_forward: match (&self.mlp, &weights.feed_forward) {
                (Some(q), Some(w)) => Some(self.quantize_feed_forward(q, w)?),
                _ => None,
            },
            output_norms: OutputNormWeights {
                attention: self
                    .quantize_output_norm(self.output_norms.attention, &weights.output_norms.attention)?,
                feed_forward: self.quantize_output_norm(
                    self.output_norms.feed_forward,
                    &weights.output_norms.feed_forward,
                )?,
            },
            query_key_norms: match (&self.query_key_norms, &weights.query_key_norms) {
                (Some(q), Some(w)) => {
                    let norm = |n: &NormQuantization,
                                w: &NormWeights<f64>,
                                out: i32|
                     -> Result<NormWeights, AttentionError> {
                        Ok(NormWeights {
                            kind: w.kind,
                            scale: scale(&w.scale, n.scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ")?,
                            bias: scale(&w.bias, out, NORM_WEIGHT_BOUND_BITS, "β")?,
                        })
                    };
                    Some(QueryKeyNormWeights {
                        query: norm(&q.query, &w.query, q.output_fraction_bits[0])?,
                        key: norm(&q.key, &w.key, q.output_fraction_bits[1])?,
                    })
                }
                _ => None,
            },
            post_norm: match (&self.post_norm, &weights.post_norm) {
                (Some(q), Some(w)) => Some(NormWeights {
                    kind: w.kind,
                    scale: scale(&w.scale, q.scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ_p")?,
                    bias: scale(&w.bias, f_x, NORM_WEIGHT_BOUND_BITS, "β_p")?,
                }),
                _ => None,
            },
        })
    }

    /// An output norm's integer weights: `γ` at its scale, `β` at the residual stream's.
    fn quantize_output_norm(
        &self,
        q: Option<ScaledNormQuantization>,
        w: &Option<NormWeights<f64>>,
    ) -> Result<Option<NormWeights>, AttentionError> {
        Ok(match (q, w) {
            (Some(q), Some(w)) => Some(NormWeights {
                kind: w.kind,
                scale: scale(&w.scale, q.norm.scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ")?,
                bias: scale(&w.bias, self.hidden_fraction_bits, NORM_WEIGHT_BOUND_BITS, "β")?,
            }),
            _ => None,
        })
    }

    /// The integer norm and MLP weights at the scales of `q`.
    fn quantize_feed_forward(
        &self,
        q: &MlpQuantization,
        w: &FeedForwardWeights<f64>,
    ) -> Result<FeedForwardWeights, AttentionError> {
        let f_x = self.input_fraction_bits;
        let [f_up, f_gate, f_down] = q.weight_fraction_bits;
        let p = q.block.params;
        let linear = |l: &LinearWeights<f64>,
                      f: i32,
                      bias_bits: i32,
                      name: &str|
         -> Result<LinearWeights, AttentionError> {
            Ok(LinearWeights {
                weights: scale(&l.weights, f, 31, name)?,
                bias: scale(&l.bias, bias_bits, BIAS_BOUND_BITS, name)?,
            })
        };
        // The down projection's input scale: A's (dense) or P = A ⊙ U's (gated).
        let a = p.activation_output_fraction_bits as i32;
        let down_input = match p.gate {
            None => a,
            Some(_) => a + (f_x + f_up - p.up_shift as i32),
        };
        Ok(FeedForwardWeights {
            norm: NormWeights {
                kind: w.norm.kind,
                scale: scale(&w.norm.scale, q.norm_scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ₂")?,
                bias: scale(&w.norm.bias, f_x, NORM_WEIGHT_BOUND_BITS, "β₂")?,
            },
            mlp: MlpWeights {
                up: linear(&w.mlp.up, f_up, f_x + f_up, "W_up")?,
                gate: w.mlp.gate.as_ref().map(|g| linear(g, f_gate, f_x + f_gate, "W_gate")).transpose()?,
                down: linear(&w.mlp.down, f_down, down_input + f_down, "W_down")?,
            },
        })
    }

    /// The integer input `X_int = round(X · 2^f_x)`.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN, infinite or out-of-range values (one
    /// sentence naming the entry).
    pub fn quantize_input(&self, input: &[f64]) -> Result<Vec<i64>, AttentionError> {
        largest(input, "X")?;
        scale(input, self.input_fraction_bits, 31, "X")
    }

    /// The integer hidden state `H_int = round(H · 2^f_h)` of a pre-norm decoder (the
    /// residual stream's scale, `Y`'s too, so the residual is exact).
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN, infinite or out-of-range values (one
    /// sentence naming the entry).
    pub fn quantize_hidden_state(&self, hidden_state: &[f64]) -> Result<Vec<i64>, AttentionError> {
        largest(hidden_state, "H")?;
        scale(hidden_state, self.hidden_fraction_bits, HIDDEN_STATE_BOUND_BITS, "H")
    }

    /// The real output `Z = Z_int / 2^f_h` (or `H'`: the residual stream's scale).
    pub fn dequantize_output(&self, output: &[i64]) -> Vec<f64> {
        let unit = 2f64.powi(-self.hidden_fraction_bits);
        output.iter().map(|&z| z as f64 * unit).collect()
    }

    /// The real input `X = X_int / 2^f_x`.
    pub fn dequantize_input(&self, input: &[i64]) -> Vec<f64> {
        let unit = 2f64.powi(-self.input_fraction_bits);
        input.iter().map(|&z| z as f64 * unit).collect()
    }
}

/// A product at `2^input` times a weight at `2^f_w`, shifted by `k` to land at `2^target`:
/// `k = input + f_w − target`, with `f_w` lowered where `k` would pass the widest shift and
/// raised where it would fall below 1. Returns `(f_w, k)`.
fn landing_shift(input: i32, f_w: i32, target: i32) -> (i32, u32) {
    let mut f_w = f_w;
    let mut k = input + f_w - target;
    if k > MAX_SHIFT_BITS as i32 {
        f_w -= k - MAX_SHIFT_BITS as i32;
        k = MAX_SHIFT_BITS as i32;
    }
    if k < 1 {
        f_w += 1 - k;
        k = 1;
    }
    (f_w, k as u32)
}

/// `f`: the proven softmax's output bits (its `one` is `2^f`).
/// A proven norm's constants from `H` at `2^f_h` to its output at `2^f_x`, from its weights,
/// `ε` and its input (a block's norms, and the head's final norm).
fn norm_constants(
    f_x: i32,
    f_h: i32,
    model_width: usize,
    norm: &NormWeights<f64>,
    epsilon: f64,
    hidden_state: &[f64],
) -> Result<NormQuantization, AttentionError> {
    let d = model_width;
    let bias = !norm.bias.is_empty();
    crate::common::check_tensor_sizes(&[
        ("γ", norm.scale.len(), 1, d),
        ("β", norm.bias.len(), 1, if bias { d } else { 0 }),
        ("H", hidden_state.len(), hidden_state.len() / d.max(1), d),
    ])?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(AttentionError::NumericRange(format!(
            "the norm's ε is {epsilon}, not a positive number"
        )));
    }
    // H (or Z) at the residual stream's scale 2^f_h in, X (or X₂) at 2^f_x out: the
    // inverse square root cancels the input's scale but for ε's image E.
    let h = scale(hidden_state, f_h, NORM_INPUT_BOUND_BITS, "H")?;
    let a = u32::try_from(f_h).map_err(|_| {
        AttentionError::NumericRange(format!(
            "the proven norm needs the hidden state's scale 2^{f_h} to be a whole power ≥ 1"
        ))
    })?;
    let e = epsilon_image(norm.kind, d, epsilon, a);
    let g = fraction_bits(largest(&norm.scale, "γ")?, WEIGHT_BITS);
    largest(&norm.bias, "β")?;
    // The largest row's T, exactly as the norm computes it.
    let df = d as f64;
    let largest_t = h
        .chunks(d.max(1))
        .map(|row| {
            let sum: f64 = row.iter().map(|&x| x as f64).sum();
            let t: f64 = match norm.kind {
                NormKind::Rms => row.iter().map(|&x| (x as f64) * (x as f64)).sum(),
                NormKind::Layer => row.iter().map(|&x| (df * x as f64 - sum).powi(2)).sum(),
            };
            t + e as f64
        })
        .fold(e as f64, f64::max);
    // q ≈ 2^k·sqrt(d/T): at least 2^16 on the largest row, below 2^32 on a zero row (T = E).
    let wanted = (16.0 + 0.5 * (largest_t / df).log2()).ceil();
    let ceiling = (31.9 - 0.5 * (df / e as f64).log2()).floor();
    let k = wanted.min(ceiling).clamp(0.0, f64::from(MAX_NORM_SCALE_BITS)) as i32;
    let mut g = g;
    let mut f = k + g - f_x;
    if f > MAX_NORM_SHIFT_BITS as i32 {
        g -= f - MAX_NORM_SHIFT_BITS as i32;
        f = MAX_NORM_SHIFT_BITS as i32;
    }
    if f < 1 {
        g += 1 - f;
        f = 1;
    }
    // u, v < (2q + 1)·T ≤ 2^(k+1)·sqrt(d·T) + T, at the largest T any |H| < 2^20 gives.
    let bound = f64::from(1u32 << NORM_INPUT_BOUND_BITS);
    let t_bound = match norm.kind {
        NormKind::Rms => df * bound * bound,
        NormKind::Layer => df * (2.0 * df * bound).powi(2),
    } + e as f64;
    let remainder_bits = (2f64.powi(k + 1) * (df * t_bound).sqrt() + t_bound).log2().ceil() + 1.0;
    let digits = ((remainder_bits / 16.0).ceil() as u32).clamp(1, MAX_NORM_REMAINDER_DIGITS);
    let block = BlockNorm {
        kind: norm.kind,
        epsilon: e,
        scale_bits: k as u32,
        shift_bits: f as u32,
        bias,
        remainder_digits: digits,
    };
    Ok(NormQuantization { block, scale_fraction_bits: g })
}

/// The model's head (after the last layer): the final norm's constants, its output `Y`'s
/// scale `2^f_y` and the residual stream's `2^f_h`; the logits `Y·Tᵀ` are exact integers at
/// `2^(f_y + f_h)` (the tied embedding table `T` sits at `2^f_h`). Part of a chain key with a
/// head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HeadQuantization {
    /// The final norm (kind, `E`, `k`, `f`, bias, digits) and `γ`'s scale `2^g`.
    pub norm: NormQuantization,
    /// `f_y`: `Y = Y_int / 2^f_y` (`β` sits there too).
    pub output_fraction_bits: i32,
    /// `f_h`: the chain's residual stream scale, the table's.
    pub hidden_fraction_bits: i32,
}

impl HeadQuantization {
    /// Chooses the final norm's constants from its float weights, `ε` and the calibration
    /// input's last hidden state (`s × d_model`, at the chain's scale `2^f_h`): `Y` fills
    /// [`INPUT_BITS`] bits on it, as a block's `X` does.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for NaN or infinite values or a norm no shift can
    /// reach; [`AttentionError::WrongTensorSize`] for tensors of the wrong size.
    pub fn calibrate(
        hidden_fraction_bits: i32,
        model_width: usize,
        norm: &NormWeights<f64>,
        epsilon: f64,
        hidden_state: &[f64],
    ) -> Result<Self, AttentionError> {
        let output = float_norm(norm, epsilon, hidden_state, model_width);
        let f_y = fraction_bits(largest(&output, "Y")?, INPUT_BITS);
        let norm = norm_constants(f_y, hidden_fraction_bits, model_width, norm, epsilon, hidden_state)?;
        Ok(Self { norm, output_fraction_bits: f_y, hidden_fraction_bits })
    }

    /// The final norm's integer weights: `γ` at `2^g`, `β` at `2^f_y`.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] for values the scales do not fit.
    pub fn quantize_norm(&self, weights: &NormWeights<f64>) -> Result<NormWeights, AttentionError> {
        Ok(NormWeights {
            kind: weights.kind,
            scale: scale(&weights.scale, self.norm.scale_fraction_bits, NORM_WEIGHT_BOUND_BITS, "γ_f")?,
            bias: scale(&weights.bias, self.output_fraction_bits, NORM_WEIGHT_BOUND_BITS, "β_f")?,
        })
    }

    /// The logits' fraction bits `f_y + f_h`.
    pub fn logit_fraction_bits(&self) -> i32 {
        self.output_fraction_bits + self.hidden_fraction_bits
    }
}

fn softmax_output_bits() -> i32 {
    // Fixed by `SoftmaxParams::for_score_scale`; read it off a valid instance.
    SoftmaxParams::for_score_scale(1.0, 2).map(|p| p.output_bits as i32).unwrap_or(16)
}

fn check_sizes(
    shape: &ModelShape,
    weights: &FloatModelWeights,
    input_len: usize,
) -> Result<(), AttentionError> {
    check_attention_sizes(shape, input_len, weights)
}

/// `X·W + b` in float64 (`rows × inputs` times `inputs × outputs`).
fn affine(input: &[f64], rows: usize, inputs: usize, weights: &[f64], bias: &[f64]) -> Vec<f64> {
    let outputs = bias.len();
    let mut out = crate::integer_product::float_product(input, weights, rows, inputs, outputs);
    for row in out.chunks_mut(outputs.max(1)) {
        for (o, b) in row.iter_mut().zip(bias) {
            *o += b;
        }
    }
    out
}

/// Rotary embeddings in float64: row `i` (position `i`), pairs `(2t, 2t+1)` of each head
/// rotated by `i·base^(−2t/m)`.
fn rotate(values: &mut [f64], width: usize, head_dim: usize, base: f64) {
    for (i, row) in values.chunks_mut(width.max(1)).enumerate() {
        for (c, pair) in row.chunks_exact_mut(2).enumerate() {
            let t = (2 * c % head_dim.max(1)) / 2;
            let angle = i as f64 * base.powf(-2.0 * t as f64 / head_dim as f64);
            let (x, y) = (pair[0], pair[1]);
            pair[0] = x * angle.cos() - y * angle.sin();
            pair[1] = x * angle.sin() + y * angle.cos();
        }
    }
}

/// The float64 block: `Z = R + attention(X·W_q + b_q, X·W_k + b_k, X·W_v + b_v)·W_o + b_o`
/// with `R` the hidden state `residual` when given and the shape's residual adds to it, else
/// `X`; with the weights' QK-norm, the
/// norm (at `epsilon`) on every query and key head before the rotation, and with their
/// attention output norm `Z = R + norm_a(Y)` (Gemma 3).
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for tensors of the wrong size.
pub fn reference_model_layer(
    shape: &ModelShape,
    mask: MaskKind,
    weights: &FloatModelWeights,
    input: &[f64],
    residual: Option<&[f64]>,
    epsilon: f64,
) -> Result<Vec<f64>, AttentionError> {
    check_sizes(shape, weights, input.len())?;
    // What the residual adds to: H (pre-norm), or X (a post-norm layer, even one whose H is
    // given for the norm that made X: BERT's layer 0).
    let residual = match shape.residual {
        Residual::HiddenState => residual.unwrap_or(input),
        Residual::LayerInput => input,
    };
    if residual.len() != input.len() {
        return Err(AttentionError::WrongTensorSize {
            tensor: "H",
            rows: shape.attention.seq_len,
            columns: shape.model_width,
            expected: input.len(),
            got: residual.len(),
        });
    }
    let parts = reference_attention_parts(shape, mask, weights, input, epsilon);
    let added = match &weights.output_norms.attention {
        Some(norm) => float_norm(norm, epsilon, &parts.projected, shape.model_width),
        None => parts.projected,
    };
    Ok(residual.iter().zip(&added).map(|(r, y)| r + y).collect())
}

/// The float64 attention half's intermediates the calibration reads: the `Q` and `K`
/// projections before the QK-norm (`s × h·m`, the key heads repeated as the attention reads
/// them) and the output projection `Y` before its output norm.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionParts {
    /// `X·W_q + b_q`.
    pub query_projection: Vec<f64>,
    /// `X·W_k + b_k`, grouped heads repeated.
    pub key_projection: Vec<f64>,
    /// `Y = attention(…)·W_o + b_o`.
    pub projected: Vec<f64>,
}

/// The float64 attention half up to its output projection (Gemma 3: the QK-norm, with `ε`,
/// between the projections and the rotation). Sizes are the caller's to check
/// ([`reference_model_layer`] does).
pub fn reference_attention_parts(
    shape: &ModelShape,
    mask: MaskKind,
    weights: &FloatModelWeights,
    input: &[f64],
    epsilon: f64,
) -> AttentionParts {
    let (s, d) = (shape.attention.seq_len, shape.model_width);
    let (n, m) = (shape.attention.model_width(), shape.attention.head_dim);
    // Grouped-query attention: every query head reads its group's key/value head.
    let [keys, keys_bias, values, values_bias] = shape.expanded_key_values(weights);
    let query_projection = affine(input, s, d, &weights.queries, &weights.queries_bias);
    let key_projection = affine(input, s, d, &keys, &keys_bias);
    let (queries, keys) = match &weights.query_key_norms {
        // One norm over each head's m entries.
        Some(norms) => (
            float_norm(&norms.query, epsilon, &query_projection, m),
            float_norm(&norms.key, epsilon, &key_projection, m),
        ),
        None => (query_projection.clone(), key_projection.clone()),
    };
    let mut inputs =
        FloatAttentionInputs { queries, keys, values: affine(input, s, d, &values, &values_bias) };
    if let Some(rotary) = shape.rotary {
        rotate(&mut inputs.queries, n, m, rotary.base as f64);
        rotate(&mut inputs.keys, n, m, rotary.base as f64);
    }
    let attention = reference_attention(&shape.attention, mask, &inputs);
    let projected =
        affine(&attention, s, shape.attention.value_model_width(), &weights.output, &weights.output_bias);
    AttentionParts { query_projection, key_projection, projected }
}

/// A norm in float64 on `rows × width` (RMSNorm: `x·γ/sqrt(mean(x²) + ε)`; LayerNorm:
/// `(x − mean)·γ/sqrt(var + ε) + β`).
pub fn float_norm(weights: &NormWeights<f64>, epsilon: f64, input: &[f64], width: usize) -> Vec<f64> {
    let d = width.max(1) as f64;
    input
        .chunks(width.max(1))
        .flat_map(|row| {
            let mean = match weights.kind {
                NormKind::Rms => 0.0,
                NormKind::Layer => row.iter().sum::<f64>() / d,
            };
            let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / d;
            let inverse = 1.0 / (variance + epsilon).sqrt();
            row.iter()
                .enumerate()
                .map(|(j, x)| {
                    (x - mean) * inverse * weights.scale[j] + weights.bias.get(j).copied().unwrap_or(0.0)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The float64 second half of a pre-norm layer: `H' = Z + MLP(norm₂(Z))` (dense:
/// `act(X₂·W_up + b_up)·W_down + b_down`; gated: `(act(X₂·W_gate + b_gate) ⊙ (X₂·W_up + b_up))·W_down + b_down`),
/// or `H' = Z + norm_f(MLP(norm₂(Z)))` with an output norm (Gemma 2, 3).
pub fn reference_feed_forward(
    weights: &FeedForwardWeights<f64>,
    epsilon: f64,
    activation: Activation,
    middle: &[f64],
    width: usize,
    output_norm: Option<&NormWeights<f64>>,
) -> Vec<f64> {
    let down = reference_mlp_output(weights, epsilon, activation, middle, width);
    let added = match output_norm {
        Some(norm) => float_norm(norm, epsilon, &down, width),
        None => down,
    };
    middle.iter().zip(&added).map(|(z, y)| z + y).collect()
}

/// The float64 layer's output from the attention half's `Z` (`middle`) and the layer's
/// weights: `Z` itself without an MLP; a pre-norm layer's `H' = Z + MLP(norm₂(Z))` (or with
/// Gemma's output norm, [`reference_feed_forward`]); a post-norm layer's (BERT)
/// `H' = norm_p(X₂ + MLP(X₂))`, `X₂ = norm₂(Z)`. `activation` is the MLP's (`None` without one).
pub fn reference_layer_output(
    weights: &FloatModelWeights,
    epsilon: f64,
    activation: Option<Activation>,
    middle: &[f64],
    width: usize,
) -> Vec<f64> {
    let Some((feed_forward, activation)) = weights.feed_forward.as_ref().zip(activation) else {
        return middle.to_vec();
    };
    match &weights.post_norm {
        Some(post) => {
            let x2 = float_norm(&feed_forward.norm, epsilon, middle, width);
            let y2 = reference_mlp_output(feed_forward, epsilon, activation, middle, width);
            let sum: Vec<f64> = x2.iter().zip(&y2).map(|(x, y)| x + y).collect();
            float_norm(post, epsilon, &sum, width)
        }
        None => reference_feed_forward(
            feed_forward,
            epsilon,
            activation,
            middle,
            width,
            weights.output_norms.feed_forward.as_ref(),
        ),
    }
}

/// The float64 MLP's output `Y₂ = MLP(norm₂(Z))` (before any output norm).
pub fn reference_mlp_output(
    weights: &FeedForwardWeights<f64>,
    epsilon: f64,
    activation: Activation,
    middle: &[f64],
    width: usize,
) -> Vec<f64> {
    let rows = middle.len() / width.max(1);
    let x = float_norm(&weights.norm, epsilon, middle, width);
    let m = &weights.mlp;
    let n = m.up.bias.len();
    let up = affine(&x, rows, width, &m.up.weights, &m.up.bias);
    let hidden: Vec<f64> = match &m.gate {
        None => up.iter().map(|&u| activation.apply(u)).collect(),
        Some(gate) => {
            let g = affine(&x, rows, width, &gate.weights, &gate.bias);
            g.iter().zip(&up).map(|(&g, &u)| activation.apply(g) * u).collect()
        }
    };
    affine(&hidden, rows, n, &m.down.weights, &m.down.bias)
}

/// How far a proven block's output lands from float64: on `Z = R + Y` and on the attention's
/// own contribution `Y = Z − R`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelAccuracy {
    /// On `Z`.
    pub output: AccuracyReport,
    /// On `Y = Z − R`.
    pub attention: AccuracyReport,
}

/// Compares a dequantized output `Z` with the float64 reference on the same float residual
/// `R` (`X`, or the hidden state).
pub fn model_accuracy(residual: &[f64], ours: &[f64], reference: &[f64]) -> ModelAccuracy {
    let minus_input = |z: &[f64]| -> Vec<f64> { z.iter().zip(residual).map(|(z, r)| z - r).collect() };
    ModelAccuracy {
        output: compare(ours, reference),
        attention: compare(&minus_input(ours), &minus_input(reference)),
    }
}
