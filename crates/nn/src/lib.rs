//! The tensors of a transformer layer that the model loaders (`zkmha-model`) produce and the
//! prover (`zkmha-attention`) consumes, with no proof machinery: the loaders depend on this
//! crate alone.
//!
//! ```text
//! ModelWeights<T>       W_q (d_model × h·m), W_k (d_model × h_kv·m), W_v (d_model × h_kv·m_v),
//!                       b_q, b_k, b_v, W_o (h·m_v × d_model), b_o (d_model), row-major;
//!                       T = f64 as loaded (FloatModelWeights), i64 once quantized
//! FloatAttentionInputs  Q, K (s × h·m), V (s × h·m_v), row-major floats
//! AttentionDims         s, h, m, m_v as a loader reads them (the prover checks them against
//!                       its stated limits)
//! Residual              what the block's residual adds Y to: X (post-norm) or H (pre-norm)
//! NormWeights<T>        the norm from H to X of a pre-norm decoder: its kind, γ (d_model),
//!                       β (d_model, or empty for a norm without a shift)
//! MlpWeights<T>         an MLP's linear layers: up (d_model × n), gate (d_model × n, gated
//!                       MLPs), down (n × d_model), each with its bias (zeros when the model
//!                       has none)
//! FeedForwardWeights<T> the half of a pre-norm layer after the attention: its norm and MLP
//! OutputNormWeights<T>  the norms on each half's output before its residual (Gemma 2, 3)
//! QueryKeyNormWeights<T> the norms on every query and key head (Gemma 3's QK-norm)
//! Activation            the MLP's activation (GELU in erf or tanh form, SiLU), by the name
//!                       the model's config gives it
//! ```

/// A layer's attention weights, row-major: `W_q` (`d_model × h·m`), `W_k` (`d_model ×
/// h_kv·m`), `W_v` (`d_model × h_kv·m_v`), the biases (`h·m`, `h_kv·m`, `h_kv·m_v`), `W_o`
/// (`h·m_v × d_model`), `b_o` (`d_model`). Integers (`i64`, the default) once quantized.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelWeights<T = i64> {
    /// `W_q`.
    pub queries: Vec<T>,
    /// `W_k`.
    pub keys: Vec<T>,
    /// `W_v`.
    pub values: Vec<T>,
    /// `b_q`.
    pub queries_bias: Vec<T>,
    /// `b_k`.
    pub keys_bias: Vec<T>,
    /// `b_v`.
    pub values_bias: Vec<T>,
    /// `W_o`.
    pub output: Vec<T>,
    /// `b_o`.
    pub output_bias: Vec<T>,
    /// The norm from the hidden state `H` to `X` when the block proves it (pre-norm
    /// decoders), else `None`.
    pub norm: Option<NormWeights<T>>,
    /// The norm and MLP after the attention when the block proves them (pre-norm decoders:
    /// `H' = Z + MLP(norm₂(Z))`), else `None`.
    pub feed_forward: Option<FeedForwardWeights<T>>,
    /// The norms on each half's output before its residual (Gemma 2 and 3: `H + norm(Y)`),
    /// when the model has them.
    pub output_norms: OutputNormWeights<T>,
    /// The norms on every query and key head before the rotation (Gemma 3's `q_norm`,
    /// `k_norm`), when the model has them.
    pub query_key_norms: Option<QueryKeyNormWeights<T>>,
    /// The norm on the layer's output, after the MLP's residual, when the block proves it
    /// (BERT's post-norm layer: `output.LayerNorm`, `H' = norm_p(X₂ + MLP(X₂))`), else `None`.
    pub post_norm: Option<NormWeights<T>>,
}

/// The QK-norm's weights: one norm over each query head's `m` entries, one over each key
/// head's (`γ` and `β` of width `m`, shared by every head).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueryKeyNormWeights<T = i64> {
    /// The norm on the query heads.
    pub query: NormWeights<T>,
    /// The norm on the key heads.
    pub key: NormWeights<T>,
}

/// The norms a layer applies to each half's output before adding it to the residual stream
/// (Gemma 2's and 3's `post_attention_layernorm` and `post_feedforward_layernorm`: `Z = H +
/// norm(Y)`, `H' = Z + norm(Y₂)`); `None` where the model adds the output as it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputNormWeights<T = i64> {
    /// The norm on the attention's output projection.
    pub attention: Option<NormWeights<T>>,
    /// The norm on the MLP's output.
    pub feed_forward: Option<NormWeights<T>>,
}

impl<T> Default for OutputNormWeights<T> {
    fn default() -> Self {
        Self { attention: None, feed_forward: None }
    }
}

/// Which half of a layer: the attention (with its output projection) or the MLP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BlockHalf {
    /// The attention half: `Y = O·W_o + b_o`.
    Attention,
    /// The MLP half: `Y₂ = MLP(X₂)`.
    FeedForward,
}

impl BlockHalf {
    /// Both halves, in the model commitment's order.
    pub const BOTH: [BlockHalf; 2] = [BlockHalf::Attention, BlockHalf::FeedForward];
}

impl<T> OutputNormWeights<T> {
    /// The norm on `half`'s output.
    pub fn of(&self, half: BlockHalf) -> Option<&NormWeights<T>> {
        match half {
            BlockHalf::Attention => self.attention.as_ref(),
            BlockHalf::FeedForward => self.feed_forward.as_ref(),
        }
    }

    /// Whether the layer has neither.
    pub fn is_empty(&self) -> bool {
        self.attention.is_none() && self.feed_forward.is_none()
    }
}

/// A linear layer's weights: `W` (`inputs × outputs`, row-major) and `b` (`outputs`; zeros for a
/// model without one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinearWeights<T = i64> {
    /// `W`.
    pub weights: Vec<T>,
    /// `b`.
    pub bias: Vec<T>,
}

/// An MLP's weights: `W_up`, `b_up` (`d × n`), `W_gate`, `b_gate` (`d × n`, gated MLPs only),
/// `W_down`, `b_down` (`n × d`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MlpWeights<T = i64> {
    /// The up projection (GPT-2's `c_fc`, Llama's `up_proj`).
    pub up: LinearWeights<T>,
    /// The gate projection (Llama's `gate_proj`), `None` for a dense MLP.
    pub gate: Option<LinearWeights<T>>,
    /// The down projection (GPT-2's `c_proj`, Llama's `down_proj`).
    pub down: LinearWeights<T>,
}

/// The half of a pre-norm layer after the attention: the norm from `Z` to the MLP's input
/// (GPT-2's `ln_2`, Llama's `post_attention_layernorm`) and the MLP.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FeedForwardWeights<T = i64> {
    /// The norm's weights.
    pub norm: NormWeights<T>,
    /// The MLP's.
    pub mlp: MlpWeights<T>,
}

/// An MLP's activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Activation {
    /// `x·Φ(x) = x·(1 + erf(x/√2))/2` (BERT's `gelu`).
    GeluErf,
    /// `x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2` (GPT-2's `gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    /// `x·σ(x) = x/(1 + e^−x)` (Llama's SwiGLU gate, `silu`).
    Silu,
}

impl Activation {
    /// The one-byte code absorbed into transcripts.
    pub fn code(self) -> u8 {
        match self {
            Activation::GeluErf => 1,
            Activation::GeluTanh => 2,
            Activation::Silu => 3,
        }
    }

    /// The activation with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        [Activation::GeluErf, Activation::GeluTanh, Activation::Silu].into_iter().find(|a| a.code() == code)
    }

    /// The activation a model's config names (`hidden_act`, `activation_function`, as
    /// Hugging Face's `ACT2FN` defines them), or `None` for one this crate does not have
    /// (`relu`, `quick_gelu`, `gelu_10`, …: a loader refuses those by name).
    ///
    /// ```
    /// use zkmha_nn::Activation;
    /// assert_eq!(Activation::from_name("gelu_new"), Some(Activation::GeluTanh));
    /// assert_eq!(Activation::from_name("gelu"), Some(Activation::GeluErf));
    /// assert_eq!(Activation::from_name("quick_gelu"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "gelu" => Some(Activation::GeluErf),
            // gelu_fast writes the same polynomial as x·(1 + 0.044715·x²).
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Activation::GeluTanh),
            "silu" | "swish" => Some(Activation::Silu),
            _ => None,
        }
    }

    /// The name Hugging Face's configs use for it.
    pub fn name(self) -> &'static str {
        match self {
            Activation::GeluErf => "gelu",
            Activation::GeluTanh => "gelu_new",
            Activation::Silu => "silu",
        }
    }

    /// The function in float64 (libm: the same bits on every machine).
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Activation::GeluErf => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            Activation::GeluTanh => {
                let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + libm::tanh(inner))
            }
            Activation::Silu => x / (1.0 + libm::exp(-x)),
        }
    }
}

/// Which norm a layer applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum NormKind {
    /// `y = x·γ / sqrt(mean(x²) + ε) (+ β)`: Llama, Qwen2, Gemma.
    Rms,
    /// `y = (x − mean(x))·γ / sqrt(var(x) + ε) + β`: GPT-2, BERT.
    Layer,
}

impl NormKind {
    /// The one-byte code absorbed into transcripts and written in files.
    pub fn code(self) -> u8 {
        match self {
            NormKind::Rms => 1,
            NormKind::Layer => 2,
        }
    }

    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(NormKind::Rms),
            2 => Some(NormKind::Layer),
            _ => None,
        }
    }

    /// `RMSNorm` or `LayerNorm`.
    pub fn name(self) -> &'static str {
        match self {
            NormKind::Rms => "RMSNorm",
            NormKind::Layer => "LayerNorm",
        }
    }
}

/// A norm's weights: its kind, the scale `γ` and the shift `β` (`d_model` each; `β` empty
/// when the norm has none). Its `ε` is a constant of the shape, not a weight.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NormWeights<T = i64> {
    /// RMSNorm or LayerNorm.
    pub kind: NormKind,
    /// `γ`.
    pub scale: Vec<T>,
    /// `β` (empty without a shift).
    pub bias: Vec<T>,
}

impl<T> ModelWeights<T> {
    /// The lengths of `W_q`, `W_k`, `W_v`, `b_q`, `b_k`, `b_v`, `W_o`, `b_o`.
    pub fn lengths(&self) -> [usize; 8] {
        [
            self.queries.len(),
            self.keys.len(),
            self.values.len(),
            self.queries_bias.len(),
            self.keys_bias.len(),
            self.values_bias.len(),
            self.output.len(),
            self.output_bias.len(),
        ]
    }
}

/// A layer's weights as a model file holds them.
pub type FloatModelWeights = ModelWeights<f64>;

/// Float inputs of one attention layer (`s × h·m`, `s × h·m`, `s × h·m_v`, row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct FloatAttentionInputs {
    /// Q.
    pub queries: Vec<f64>,
    /// K.
    pub keys: Vec<f64>,
    /// V.
    pub values: Vec<f64>,
}

/// An attention layer's sizes as a loader reads them: `s` tokens, `h` heads of width `m`
/// (queries and keys) and `m_v` (values). Unchecked: the prover's `AttentionShape::new` checks
/// them against its stated limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionDims {
    /// `s`.
    pub seq_len: usize,
    /// `h`.
    pub heads: usize,
    /// `m`.
    pub head_dim: usize,
    /// `m_v`.
    pub value_head_dim: usize,
}

/// What the block's residual adds the attention's contribution `Y` to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Residual {
    /// `Z = X + Y`: post-norm encoders (BERT), whose layer norm follows the residual.
    LayerInput,
    /// `Z = H + Y` where `X = norm(H)`: pre-norm decoders (GPT-2, Llama). `H` is committed
    /// beside `X`; the norm between them is not proven.
    HiddenState,
}

impl Residual {
    /// The one-byte code absorbed into transcripts and written in files.
    pub fn code(self) -> u8 {
        match self {
            Residual::LayerInput => 1,
            Residual::HiddenState => 2,
        }
    }

    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Residual::LayerInput),
            2 => Some(Residual::HiddenState),
            _ => None,
        }
    }
}

/// `CanonicalSerialize`/`CanonicalDeserialize` for a fieldless enum written as its one-byte
/// `code()`, read back with `from_code` (an unknown byte is `InvalidData`). The
/// caller's crate depends on `ark-serialize`.
#[macro_export]
macro_rules! serialize_as_code {
    ($type:ty) => {
        impl ark_serialize::CanonicalSerialize for $type {
            fn serialize_with_mode<W: ark_serialize::Write>(
                &self,
                writer: W,
                compress: ark_serialize::Compress,
            ) -> Result<(), ark_serialize::SerializationError> {
                self.code().serialize_with_mode(writer, compress)
            }
            fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
                self.code().serialized_size(compress)
            }
        }
        impl ark_serialize::Valid for $type {
            fn check(&self) -> Result<(), ark_serialize::SerializationError> {
                Ok(())
            }
        }
        impl ark_serialize::CanonicalDeserialize for $type {
            fn deserialize_with_mode<R: ark_serialize::Read>(
                reader: R,
                compress: ark_serialize::Compress,
                validate: ark_serialize::Validate,
            ) -> Result<Self, ark_serialize::SerializationError> {
                let code = u8::deserialize_with_mode(reader, compress, validate)?;
                <$type>::from_code(code).ok_or(ark_serialize::SerializationError::InvalidData)
            }
        }
    };
}

serialize_as_code!(Residual);
serialize_as_code!(NormKind);
serialize_as_code!(Activation);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

    #[test]
    fn the_residual_round_trips_through_its_code_and_refuses_others() {
        for residual in [Residual::LayerInput, Residual::HiddenState] {
            let mut bytes = Vec::new();
            residual.serialize_compressed(&mut bytes).unwrap();
            assert_eq!(bytes, [residual.code()]);
            assert_eq!(Residual::deserialize_compressed(bytes.as_slice()).unwrap(), residual);
        }
        for code in [0u8, 3, 255] {
            assert!(Residual::deserialize_compressed([code].as_slice()).is_err());
        }
    }

    #[test]
    fn lengths_are_in_the_documented_order() {
        let w = ModelWeights {
            queries: vec![0; 1],
            keys: vec![0; 2],
            values: vec![0; 3],
            queries_bias: vec![0; 4],
            keys_bias: vec![0; 5],
            values_bias: vec![0; 6],
            output: vec![0; 7],
            output_bias: vec![0; 8],
            norm: None,
            feed_forward: None,
            output_norms: Default::default(),
            query_key_norms: None,
            post_norm: None,
        };
        assert_eq!(w.lengths(), [1, 2, 3, 4, 5, 6, 7, 8]);
    }
}
