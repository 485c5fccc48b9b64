//! One layer of a model file: open it ([`Model::open`]), commit to its weights
//! ([`commit_model`]: the verifier key, and the model secret of hiding commitments), prove it
//! on an input ([`prove`]) and verify the proof with the key alone ([`verify`]).
//!
//! Model layers are proven in zero knowledge with a hiding key (the default,
//! [`WeightCommitments::Hiding`]); a binding key gives plain proofs, for debugging.

use crate::attention_layer::Hiding;
use crate::error::{Error, Result};
use crate::model_files::ModelProof;
use crate::resources::Estimate;
use crate::verified::{Expected, Verified};
use std::path::Path;
use std::time::{Duration, Instant};
use zkmha_attention::activation::Activation;
use zkmha_attention::block::{block_hyrax_params, commit_model_with, prove_block};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_attention::model_layer::{
    ModelShape, ModelWeights, commit_model as commit_binding, weights_hyrax_params,
};
use zkmha_attention::model_quantization::NormWeights;
use zkmha_attention::model_quantization::{
    FloatModelWeights, ModelAccuracy, ModelQuantization, float_norm, model_accuracy,
    reference_attention_parts, reference_layer_output, reference_mlp_output, reference_model_layer,
};
use zkmha_attention::quantization::AccuracyReport;
use zkmha_attention::rope::RotaryParams;
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments, verify_with_key};
use zkmha_attention::{AttentionShape, MaskKind, Residual};
use zkmha_model::architecture::MetadataSource;
use zkmha_model::families::Family;
use zkmha_model::model_file::{HeadUnavailable, ModelFile, calibration_ids};

/// Tokens of the calibration input that fixes the scales.
const CALIBRATION_TOKENS: usize = 64;
/// Fraction bits of the rotary tables (Llama): cosines and sines to 2^−14.
const ROTARY_FRACTION_BITS: u32 = 14;

/// A step of [`commit_model_with_progress`] or [`prove_with_progress`], reported as it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stage {
    /// Calibrating the fixed-point scales on a fixed token sample.
    Calibrating,
    /// Committing to the weights.
    Committing,
    /// Proving the layer, and what it should cost ([`crate::resources`]' estimate from the
    /// shape).
    Proving {
        /// The time and memory estimated from the layer's shape.
        estimate: Estimate,
    },
    /// Checking the new proof against the key.
    Verifying,
    /// The last step has ended.
    Done,
}

impl Stage {
    /// The step in words, as the command line's progress shows it.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Calibrating => "calibrating the fixed-point scales",
            Stage::Committing => "committing to the weights",
            Stage::Proving { .. } => "proving",
            Stage::Verifying => "verifying",
            Stage::Done => "done",
        }
    }

    /// The step in words with its estimate: `proving (estimated about 40 s, 3.1 GiB on 2 cores)`.
    pub fn message(self) -> String {
        match self {
            Stage::Proving { estimate } => format!("proving ({})", estimate.describe()),
            _ => self.describe().to_string(),
        }
    }
}

/// Reports each [`Stage`] to the caller's progress and as a `tracing` span named `stage` (the
/// previous stage's span closes as the next starts; `RUST_LOG=info` in the command line shows
/// them with their times).
struct Stages<'a> {
    progress: &'a mut dyn FnMut(Stage),
    span: Option<tracing::span::EnteredSpan>,
}

impl<'a> Stages<'a> {
    fn new(progress: &'a mut dyn FnMut(Stage)) -> Self {
        Self { progress, span: None }
    }

    fn start(&mut self, stage: Stage) {
        self.span = None;
        (self.progress)(stage);
        if stage != Stage::Done {
            self.span = Some(tracing::info_span!("stage", name = stage.describe()).entered());
        }
    }
}

/// Which layer of a model file, and what its file may not say.
#[derive(Debug, Clone, Default)]
pub struct ModelOptions {
    /// The layer (0 by default).
    pub layer: usize,
    /// The model family, for files without metadata (no config.json `model_type`, no GGUF
    /// `general.architecture`); detected from the tensor names by default. It cannot override
    /// what the metadata says.
    pub family: Option<Family>,
    /// Attention heads; read from the file's metadata (or config.json beside it) by default.
    pub heads: Option<usize>,
    /// The mask; by default the model's own for the layer ([`model_mask`]).
    pub mask: Option<MaskKind>,
    /// The most memory a proof may need, in bytes ([`crate::resources`]'s estimate from the
    /// shape, checked before proving); the machine's memory by default.
    pub max_memory: Option<u64>,
}

/// One layer of a model file, its float weights read: for the pre-norm decoders (GPT-2, Llama)
/// the whole layer — norm, attention, residual, norm, MLP, residual — for BERT the attention
/// block (its norms after the block and its MLP are not proven yet).
pub struct Model {
    file: ModelFile,
    float: FloatModelWeights,
    /// The MLP's activation, when the layer's MLP is read.
    activation: Option<Activation>,
    head_dim: usize,
    key_value_heads: usize,
    mask: MaskKind,
    requested_mask: Option<MaskKind>,
    layer: usize,
    max_memory: Option<u64>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.file.path)
            .field("layer", &self.layer)
            .field("mask", &self.mask)
            .finish_non_exhaustive()
    }
}

/// The mask a model's layer attends through: none for BERT; for the decoders causal, or the
/// sliding window the metadata declares for that layer (Mistral, Qwen2's window layers).
///
/// # Errors
/// [`Error::Model`] for a window the mask cannot hold (2^32 tokens or more; the loader refuses
/// it first).
pub fn model_mask(file: &ModelFile, layer: usize) -> Result<MaskKind> {
    Ok(match (file.family, file.attention_window(layer)) {
        (Family::Bert, _) => MaskKind::None,
        (Family::Gpt2 | Family::Llama, None) => MaskKind::Causal,
        (Family::Gpt2 | Family::Llama, Some(window)) => MaskKind::sliding(window).ok_or_else(|| {
            zkmha_model::ModelError::from(zkmha_model::architecture::Unsupported::SlidingWindow {
                layer,
                window,
                kind: "sliding".into(),
            })
        })?,
    })
}

impl Model {
    /// Opens a GGUF or safetensors model file and reads one layer's attention weights (and,
    /// for pre-norm decoders, its two norms and its MLP, proven with the block).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("zkmha-doc-open-{}", std::process::id()));
    /// let path = zkmha_api::example_model::write_bert(&dir, 1)?;
    /// let model = zkmha_api::Model::open(&path, &Default::default())?;
    /// assert_eq!((model.layer(), model.model_width()), (0, 16));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Model`]: a missing or malformed file, a missing tensor, a feature the proof
    /// does not cover ([`crate::ErrorKind::UnsupportedModel`]).
    pub fn open(path: &Path, options: &ModelOptions) -> Result<Self> {
        let _span =
            tracing::info_span!("open_model", path = %path.display(), layer = options.layer).entered();
        let file = ModelFile::open(path, options.family, options.heads)?;
        if let Some(count) = file.layer_count()
            && options.layer >= count
        {
            return Err(Error::NoSuchLayer { layer: options.layer, count });
        }
        let weights = file.layer_weights(options.layer)?;
        let float = weights.float;
        let activation = float.feed_forward.is_some().then(|| file.activation()).transpose()?;
        let mask = options.mask.map_or_else(|| model_mask(&file, options.layer), Ok)?;
        Ok(Self {
            head_dim: weights.head_dim,
            key_value_heads: weights.key_value_heads,
            file,
            float,
            activation,
            mask,
            requested_mask: options.mask,
            layer: options.layer,
            max_memory: options.max_memory,
        })
    }

    /// The model file.
    pub fn file(&self) -> &ModelFile {
        &self.file
    }

    /// The layer.
    pub fn layer(&self) -> usize {
        self.layer
    }

    /// `d_model`.
    pub fn model_width(&self) -> usize {
        self.float.output_bias.len()
    }

    /// The mask (asked for, or the model's own for the layer: [`model_mask`]).
    pub fn mask(&self) -> MaskKind {
        self.mask
    }

    /// The model's embedding tables (layer 0's input): every token row and, for GPT-2, every
    /// position row (BERT's with the token type 0 row added), row-major.
    ///
    /// # Errors
    /// Missing or malformed embedding tensors.
    pub fn embedding_tables(&self) -> Result<Option<zkmha_model::model_file::EmbeddingTables<'_>>> {
        Ok(self.file.embedding_tables()?)
    }

    /// The model's head after this layer, when the proof covers it — this is the model's last
    /// layer, and its final norm and LM head (tied, or an untied one of at most
    /// [`zkmha_attention::embedding::MAX_EMBEDDING_ROWS`] rows) are read
    /// ([`zkmha_model::model_file::ModelFile::final_norm`]): the final norm's weights and `ε`.
    ///
    /// # Errors
    /// Why the head is not proven after this layer, in one sentence.
    pub fn final_norm(&self) -> std::result::Result<(NormWeights<f64>, f64), HeadUnavailable> {
        match self.file.layer_count() {
            Some(count) if count == self.layer + 1 => {}
            count => return Err(HeadUnavailable::NotLastLayer { layer: self.layer, layers: count }),
        }
        let norm = self.file.final_norm()?;
        if let Some(rows) = self.file.untied_lm_head()? {
            let (rows, limit) =
                (rows.len() / self.model_width().max(1), zkmha_attention::embedding::MAX_EMBEDDING_ROWS);
            if rows as u64 > limit {
                return Err(HeadUnavailable::TooManyTokens { rows, limit });
            }
        }
        Ok((norm, self.file.norm_epsilon))
    }

    /// The layer's float weights.
    pub fn float_weights(&self) -> &FloatModelWeights {
        &self.float
    }

    /// The most memory a proof of this layer may need, when given ([`ModelOptions::max_memory`]).
    pub fn max_memory(&self) -> Option<u64> {
        self.max_memory
    }

    /// The layer's float64 output on the float hidden state `hidden` entering it (`s ×
    /// d_model`): the reference a proof's output is compared with. For BERT, the attention
    /// block's `Z` on `X = hidden`.
    ///
    /// # Errors
    /// As [`Model::float_hidden_state`].
    pub fn float_output(&self, hidden: Vec<f64>) -> Result<Vec<f64>> {
        Ok(self.float_halves(hidden)?.output)
    }

    /// [`Model::float_output`] with the attention half's output `Z` too.
    ///
    /// # Errors
    /// As [`Model::float_hidden_state`].
    pub fn float_halves(&self, hidden: Vec<f64>) -> Result<FloatHalves> {
        let file = &self.file;
        let d = self.model_width();
        let shape =
            float_shape(file, self.layer, hidden.len() / d.max(1), self.head_dim, self.key_value_heads)?;
        let input = file.block_input(self.layer, hidden)?;
        let middle = reference_model_layer(
            &shape,
            self.mask,
            &self.float,
            &input.input,
            input.residual.as_deref(),
            file.norm_epsilon,
        )?;
        let output = reference_layer_output(&self.float, file.norm_epsilon, self.activation, &middle, d);
        Ok(FloatHalves { middle, output })
    }

    /// The MLP's activation, when the layer's MLP is proven (GPT-2, Llama).
    pub fn activation(&self) -> Option<Activation> {
        self.activation
    }

    /// Where the architecture was read from, in words.
    pub fn architecture_source(&self) -> &'static str {
        match self.file.architecture_source {
            Some(MetadataSource::ConfigJson) => "config.json",
            Some(MetadataSource::Gguf) => "GGUF metadata",
            None => "tensor names",
        }
    }

    /// The projections with a non-zero bias (`Q`, `K`, `V`, `O`).
    pub fn bias_names(&self) -> Vec<&'static str> {
        let float = &self.float;
        [
            ("Q", &float.queries_bias),
            ("K", &float.keys_bias),
            ("V", &float.values_bias),
            ("O", &float.output_bias),
        ]
        .into_iter()
        .filter(|(_, b)| b.iter().any(|&x| x != 0.0))
        .map(|(name, _)| name)
        .collect()
    }

    /// The hidden state entering layer 0 for `tokens` (the model's embeddings), `s × d_model`.
    ///
    /// # Errors
    /// [`Error::TokensNeedLayerZero`] for another layer; a token outside the vocabulary.
    pub fn embed(&self, tokens: &[usize]) -> Result<Vec<f64>> {
        if self.layer != 0 {
            return Err(Error::TokensNeedLayerZero { layer: self.layer });
        }
        Ok(self.file.embed(tokens)?)
    }

    /// The hidden state entering this layer for the token ids `ids`, in float64 and not
    /// proven: the embeddings through every layer before it (GPT-2 and Llama, whose whole
    /// layer is read: norm, attention, residual, norm, MLP, residual). Commitments calibrate
    /// their scales on it; it is also a deeper layer's input for `prove` (`ModelInput::HiddenState`)
    /// until the layers are chained. For BERT it is the hidden state after the layers before
    /// this one's `output.LayerNorm` (for layer 0 the embeddings' sum, before the LayerNorm the
    /// layer proves).
    ///
    /// ```
    /// use zkmha_api::{Model, ModelOptions};
    /// let dir = std::env::temp_dir().join(format!("zkmha-doc-float-{}", std::process::id()));
    /// let model = Model::open(&zkmha_api::example_model::write_bert(&dir, 1)?, &ModelOptions::default())?;
    /// assert_eq!(model.float_hidden_state(&[1, 2, 3])?.len(), 3 * model.model_width());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Model::embed`]'s tokens; the earlier layers' weights (missing, malformed or
    /// refused).
    pub fn float_hidden_state(&self, ids: &[usize]) -> Result<Vec<f64>> {
        let model = self;
        let file = &model.file;
        let mut hidden = file.embed(ids)?;
        let d = file.model_width()?;
        for layer in 0..model.layer {
            let _span = tracing::info_span!("float_layer", layer).entered();
            let weights = file.layer_weights(layer)?;
            let float = weights.float;
            let shape = float_shape(file, layer, ids.len(), weights.head_dim, weights.key_value_heads)?;
            let input = file.block_input(layer, hidden)?;
            // The layers before this one compute the model's function: each through its own
            // mask (a `--mask` asked for is this layer's, not theirs).
            let mask = model_mask(file, layer)?;
            let middle = reference_model_layer(
                &shape,
                mask,
                &float,
                &input.input,
                input.residual.as_deref(),
                file.norm_epsilon,
            )?;
            let activation = float.feed_forward.is_some().then(|| file.activation()).transpose()?;
            hidden = reference_layer_output(&float, file.norm_epsilon, activation, &middle, d);
        }
        Ok(hidden)
    }
}

/// A layer's float64 outputs ([`Model::float_halves`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FloatHalves {
    /// `Z`: the residual plus the attention's (normed) output.
    pub middle: Vec<f64>,
    /// The layer's output: `H'` with the MLP, else `Z`.
    pub output: Vec<f64>,
}

/// A verifier key, and the model secret of hiding commitments.
#[derive(Debug, Clone)]
pub struct CommittedModel {
    /// The verifier key: architecture, scales, the model commitment (to publish).
    pub key: ModelVerifierKey,
    /// The hiding commitments' blinds (to keep private and prove with); `None` for a binding
    /// key.
    pub secret: Option<ModelSecret>,
}

/// The most characters a key's description may hold.
pub const MAX_DESCRIPTION_CHARS: usize = 256;

/// A key's default description: `layer 3 (llama)` — never the model file's name.
pub fn default_description(layer: usize, architecture: &str) -> String {
    format!("layer {layer} ({architecture})")
}

/// Checks a key description the model owner chose: at most [`MAX_DESCRIPTION_CHARS`]
/// characters. (It is unauthenticated and shown escaped; nothing binds it to the weights.)
///
/// # Errors
/// [`Error::Description`].
pub fn check_description(description: &str) -> Result<()> {
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(Error::Description { chars });
    }
    Ok(())
}

impl CommittedModel {
    /// The key with `description` instead of the default (`layer N (architecture)`); `None`
    /// keeps the default.
    ///
    /// # Errors
    /// [`Error::Description`] for one over [`MAX_DESCRIPTION_CHARS`] characters.
    pub fn describe(mut self, description: Option<&str>) -> Result<Self> {
        if let Some(description) = description {
            check_description(description)?;
            self.key.description = description.to_string();
        }
        Ok(self)
    }
}

/// Calibrates the fixed-point scales (on a fixed token sample) and commits to the layer's
/// weights: the verifier key, and the model secret of hiding commitments.
///
/// ```
/// use zkmha_api::{Model, WeightCommitments, commit_model};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-commit-{}", std::process::id()));
/// let model = Model::open(&zkmha_api::example_model::write_bert(&dir, 1)?, &Default::default())?;
/// let committed = commit_model(&model, WeightCommitments::Hiding)?;
/// assert_eq!((committed.key.heads, committed.secret.is_some()), (4, true));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Model`] (the calibration tokens), [`Error::Attention`] (shapes or scales the
/// proof cannot take), [`Error::RotaryBase`], [`Error::Randomness`].
pub fn commit_model(model: &Model, weight_commitments: WeightCommitments) -> Result<CommittedModel> {
    commit_model_with_progress(model, weight_commitments, &mut |_| {})
}

/// [`commit_model`], telling `progress` each [`Stage`] as it starts.
///
/// # Errors
/// As [`commit_model`].
pub fn commit_model_with_progress(
    model: &Model,
    weight_commitments: WeightCommitments,
    progress: &mut dyn FnMut(Stage),
) -> Result<CommittedModel> {
    let _span =
        tracing::info_span!("commit_model", layer = model.layer, commitments = ?weight_commitments).entered();
    let mut stages = Stages::new(progress);
    stages.start(Stage::Calibrating);
    let ids = model.calibration_ids()?;
    let calibration = model.calibrate(model.float_hidden_state(&ids)?, None)?;
    stages.start(Stage::Committing);
    let committed = model.commit(calibration.quantization, weight_commitments)?;
    stages.start(Stage::Done);
    Ok(committed)
}

/// A layer's scales calibrated on a hidden state, and the layer's float output on it.
pub(crate) struct Calibration {
    /// The scales and shifts.
    pub quantization: ModelQuantization,
    /// The float layer's output on the calibration hidden state (the next layer's).
    pub output: Vec<f64>,
}

impl Model {
    /// The token ids every commitment calibrates on (fixed, from the vocabulary's size),
    /// opening as the model's tokenizer opens every text (Gemma's BOS, BERT's `[CLS]`), when it
    /// has one, else with config.json's `bos_token_id`: the first position's hidden states
    /// differ most from the others' (Gemma 3's BOS row is an order of magnitude wider), and
    /// every input the model is given has it.
    ///
    /// # Errors
    /// A model whose vocabulary's size cannot be read.
    pub fn calibration_ids(&self) -> Result<Vec<usize>> {
        let file = &self.file;
        let tokens = file.max_tokens().map_or(CALIBRATION_TOKENS, |n| n.min(CALIBRATION_TOKENS));
        let mut ids = calibration_ids(file.vocabulary_size()?, tokens);
        let vocabulary = file.vocabulary_size()?;
        // A tokenizer that opens a text with nothing is followed too: config.json's id only
        // stands in for a tokenizer the checkpoint lacks.
        let opening = match file.tokenizer() {
            Ok(tokenizer) => tokenizer.encode("").ok().and_then(|ids| ids.first().copied()),
            Err(_) => file.bos_token_id().filter(|&id| id < vocabulary),
        };
        if let (Some(first), Some(id)) = (ids.first_mut(), opening) {
            *first = id;
        }
        Ok(ids)
    }

    /// Calibrates the layer's scales on the float `hidden` state entering it (the calibration
    /// tokens' run through the layers before it), with the residual stream's scale
    /// `hidden_fraction_bits` when given (a chain's, the same for every layer) or chosen on
    /// this layer's own stream.
    pub(crate) fn calibrate(
        &self,
        hidden: Vec<f64>,
        hidden_fraction_bits: Option<i32>,
    ) -> Result<Calibration> {
        let model = self;
        let file = &model.file;
        let d = model.model_width();
        let tokens = hidden.len() / d.max(1);
        let calibration = file.block_input(model.layer, hidden)?;
        let x = &calibration.input;
        let calibration_shape =
            float_shape(file, model.layer, tokens, model.head_dim, model.key_value_heads)?;
        // The float layer on the calibration input: the residual stream H → Z → H' the scales
        // must hold, and Z, on which the MLP's scales are chosen.
        let middle = reference_model_layer(
            &calibration_shape,
            model.mask,
            &model.float,
            x,
            calibration.residual.as_deref(),
            file.norm_epsilon,
        )?;
        let eps = file.norm_epsilon;
        let feed_forward = model.float.feed_forward.as_ref().zip(model.activation);
        let layer_output =
            feed_forward.map(|_| reference_layer_output(&model.float, eps, model.activation, &middle, d));
        let mlp_input = feed_forward.map(|(weights, _)| float_norm(&weights.norm, eps, &middle, d));
        // A post-norm layer (BERT): X₂ + Y₂ into its last norm; its output H' is the next
        // layer's X, at X's scale like X₂ (both fit X's range).
        let post_norm_input =
            feed_forward.filter(|_| model.float.post_norm.is_some()).map(|(weights, activation)| {
                let y2 = reference_mlp_output(weights, eps, activation, &middle, d);
                float_norm(&weights.norm, eps, &middle, d)
                    .iter()
                    .zip(&y2)
                    .map(|(x, y)| x + y)
                    .collect::<Vec<_>>()
            });
        let mlp_input = match (&post_norm_input, mlp_input, &layer_output) {
            (Some(_), Some(x2), Some(output)) => Some([x2.as_slice(), output.as_slice()].concat()),
            (_, mlp_input, _) => mlp_input,
        };
        // Gemma 3's norms: the QK-norm's inputs (the Q and K projections), and each half's
        // output before and after its output norm, which bounds the residual stream's scale.
        let gemma_norms =
            model.float.query_key_norms.is_some() || model.float.output_norms.attention.is_some();
        let parts = gemma_norms
            .then(|| reference_attention_parts(&calibration_shape, model.mask, &model.float, x, eps));
        let mlp_output = feed_forward
            .filter(|_| model.float.output_norms.feed_forward.is_some())
            .map(|(weights, activation)| reference_mlp_output(weights, eps, activation, &middle, d));
        let normed: Vec<Vec<f64>> = [
            (model.float.output_norms.attention.as_ref(), parts.as_ref().map(|p| p.projected.as_slice())),
            (model.float.output_norms.feed_forward.as_ref(), mlp_output.as_deref()),
        ]
        .into_iter()
        .filter_map(|(norm, output)| Some(float_norm(norm?, eps, output?, d)))
        .collect();
        let normed: Vec<&[f64]> = normed.iter().map(Vec::as_slice).collect();
        let normed_scale = ModelQuantization::normed_output_fraction_bits(&normed)?;
        let at_scale = |f_h: i32| {
            ModelQuantization::calibrate_with_hidden_scale(
                &calibration_shape,
                &model.float,
                x,
                mlp_input.as_deref(),
                f_h,
            )
        };
        let mut quantization = match hidden_fraction_bits {
            Some(f_h) => at_scale(f_h)?,
            None => {
                // A post-norm layer's stream is X itself (its H, BERT's embeddings, only feeds
                // the norm that makes X).
                let residual = calibration
                    .residual
                    .as_ref()
                    .filter(|_| calibration_shape.residual == Residual::HiddenState);
                let stream: Vec<&[f64]> = match residual {
                    Some(hidden) => {
                        [Some(hidden.as_slice()), Some(middle.as_slice()), layer_output.as_deref()]
                            .into_iter()
                            .flatten()
                            .collect()
                    }
                    None => Vec::new(),
                };
                let quantization = ModelQuantization::calibrate_with_residual_stream(
                    &calibration_shape,
                    &model.float,
                    x,
                    mlp_input.as_deref(),
                    &stream,
                )?;
                match normed_scale {
                    Some(f_h) if f_h < quantization.hidden_fraction_bits => at_scale(f_h)?,
                    _ => quantization,
                }
            }
        };
        if let (Some(norm), Some(hidden)) = (&model.float.norm, &calibration.residual) {
            quantization.calibrate_norm(d, norm, eps, hidden)?;
        }
        if let (Some(query_key), Some(parts)) = (&model.float.query_key_norms, &parts) {
            quantization.calibrate_query_key_norms(
                model.head_dim,
                query_key,
                eps,
                &parts.query_projection,
                &parts.key_projection,
            )?;
        }
        if let Some((weights, activation)) = feed_forward {
            quantization.calibrate_mlp(d, weights, eps, activation, &middle)?;
        }
        if let (Some(norm), Some(sum)) = (&model.float.post_norm, &post_norm_input) {
            quantization.calibrate_post_norm(d, norm, eps, sum)?;
        }
        if !model.float.output_norms.is_empty() {
            quantization.calibrate_output_norms(
                d,
                &model.float,
                eps,
                parts.as_ref().map(|p| p.projected.as_slice()),
                mlp_output.as_deref(),
            )?;
        }
        Ok(Calibration { quantization, output: layer_output.unwrap_or(middle) })
    }

    /// Commits to the layer's weights at the scales of `quantization`: the verifier key and
    /// (hiding commitments) the model secret.
    pub(crate) fn commit(
        &self,
        quantization: ModelQuantization,
        weight_commitments: WeightCommitments,
    ) -> Result<CommittedModel> {
        let model = self;
        let file = &model.file;
        let d = model.model_width();
        let calibration_shape = float_shape(file, model.layer, 1, model.head_dim, model.key_value_heads)?;
        let (attention, residual, kv, rotary) = (
            calibration_shape.attention,
            calibration_shape.residual,
            calibration_shape.key_value_heads,
            calibration_shape.rotary,
        );
        let shape = quantization.model_shape(attention, d, residual, kv, rotary);
        let integers = quantization.quantize_weights(&model.float)?;
        let params = weights_hyrax_params(&shape);
        let (commitment, blinds) = match weight_commitments {
            WeightCommitments::Binding => (commit_binding(&params, &shape, &integers)?, None),
            WeightCommitments::Hiding => {
                let mut rng = secure_rng("commitments' blinds")?;
                let (commitment, blinds) = commit_model_with::<Zk>(&params, &shape, &integers, &mut rng)?;
                (commitment, Some(blinds))
            }
        };
        let key = ModelVerifierKey {
            // The layer and the architecture only: the file's name may say more about the
            // model than its owner means to publish (`CommittedModel::describe` sets another).
            description: default_description(model.layer, file.architecture_name()),
            model_width: d,
            heads: file.heads,
            head_dim: model.head_dim,
            value_head_dim: model.head_dim,
            mask: model.mask,
            residual,
            key_value_heads: kv,
            rotary,
            quantization,
            weight_commitments,
            commitment,
        };
        // The key must be one that `read_key` accepts and `prove` can use: weights whose
        // scales leave the stated limits (a weight of 3·10^38) are refused here, not by the
        // first proof.
        let unusable = |error| Error::UnusableWeights { layer: model.layer, error };
        let one_token = key.shape(1).map_err(unusable)?;
        key.quantization.softmax(&one_token.attention).map_err(unusable)?;
        let secret = blinds.map(|blinds| ModelSecret::new(&key, &blinds));
        Ok(CommittedModel { key, secret })
    }
}

/// The shape of a layer's float64 reference on `tokens` tokens (the attention's sizes, the
/// residual, the key/value heads, the rotary base; no scales).
fn float_shape(
    file: &ModelFile,
    layer: usize,
    tokens: usize,
    head_dim: usize,
    key_value_heads: usize,
) -> Result<ModelShape> {
    let rotary = match file.family {
        Family::Llama => {
            let base = file.rope_base_for(layer);
            if base.fract() != 0.0 || !(2.0..=1e12).contains(&base) {
                return Err(Error::RotaryBase { base });
            }
            Some(RotaryParams { base: base as u64, fraction_bits: ROTARY_FRACTION_BITS })
        }
        Family::Bert | Family::Gpt2 => None,
    };
    Ok(ModelShape {
        attention: AttentionShape::new(tokens, file.heads, head_dim, head_dim)?,
        model_width: file.model_width()?,
        shifts: [1; 4],
        residual: file.residual(),
        key_value_heads,
        rotary,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    })
}

pub(crate) fn secure_rng(purpose: &'static str) -> Result<rand_chacha::ChaCha20Rng> {
    zkmha_zk::secure_rng().map_err(|source| Error::Randomness { purpose, source })
}

/// The input of a model layer.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelInput {
    /// Token ids: layer 0's hidden state is the model's embeddings.
    Tokens(Vec<usize>),
    /// Text, tokenized by the model's own tokenizer into layer 0's token ids.
    Text(String),
    /// The hidden state entering the layer, `s × d_model` row-major (for BERT's layers after
    /// the first that is X itself; for GPT-2, Llama and BERT's layer 0 — the embeddings' sum —
    /// X is the layer's norm of it).
    HiddenState {
        /// The entries, row-major.
        values: Vec<f64>,
        /// The entries of a row: the model's `d_model`.
        columns: usize,
    },
}

/// A model-layer proof made by [`prove`], checked against its key.
#[derive(Debug, Clone)]
pub struct ProvedLayer {
    /// The statement and the proof.
    pub proof: ModelProof,
    /// The proven output (`tokens × model_width`, row-major), as floats: the layer's output
    /// `H'` (for BERT the post-norm layer's `output.LayerNorm`).
    pub output: Vec<f64>,
    /// The tokens.
    pub tokens: usize,
    /// `d_model`: the output's columns.
    pub model_width: usize,
    /// The token ids proven (given, or from the text).
    pub token_ids: Option<Vec<usize>>,
    /// Where the text's tokenizer came from.
    pub tokenizer: Option<String>,
    /// The output, and the layer's own part (the output less its input: `H' − H`, or
    /// `H' − X` for BERT), against float64.
    pub accuracy: ModelAccuracy,
    /// For a layer with its MLP: the attention half's part `Z − H` (`Z` committed in the
    /// proof, computed by the integer forward pass the proof proves) against float64's.
    pub attention_half: Option<AccuracyReport>,
    /// How long proving took (without the check against the key).
    pub prove_time: Duration,
    /// The time and memory estimated from the shape before proving.
    pub estimate: Estimate,
}

/// Proves `model`'s layer on `input` against `key` (with `secret` for a hiding key: a
/// zero-knowledge proof), and checks the proof against the key, so a model file that differs
/// from the committed one is caught here, not by the first verifier.
///
/// ```
/// use zkmha_api::{Model, ModelInput, WeightCommitments, commit_model, prove, verify};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-prove-{}", std::process::id()));
/// let model = Model::open(&zkmha_api::example_model::write_bert(&dir, 1)?, &Default::default())?;
/// let committed = commit_model(&model, WeightCommitments::Hiding)?;
/// let proved = prove(&committed.key, committed.secret.as_ref(), &model, &ModelInput::Tokens(vec![1, 2, 3]))?;
/// let verified = verify(&committed.key, &proved.proof)?;
/// assert_eq!(verified.output.shape(), (3, 16));
/// assert_eq!(verified.output.to_f64(), Some(proved.output));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::SecretRequired`], [`Error::SecretNotNeeded`], [`Error::SecretOfAnotherKey`],
/// [`Error::MaskDiffers`], [`Error::ResidualDiffers`], [`Error::ActivationDiffers`],
/// [`Error::ConfigDiffersFromKey`] (the norm's ε, the rotary base), [`Error::EmptyInput`],
/// [`Error::InputWidth`], [`Error::TokensNeedLayerZero`], [`Error::ModelDiffersFromKey`],
/// [`Error::LayerDiffersFromKey`], [`Error::MemoryEstimate`] (a layer whose estimate exceeds
/// [`ModelOptions::max_memory`] or the machine's memory),
/// [`Error::Model`] (a token outside the vocabulary, a tokenizer), [`Error::Attention`] (a
/// value the fixed point cannot take), [`Error::Randomness`].
pub fn prove(
    key: &ModelVerifierKey,
    secret: Option<&ModelSecret>,
    model: &Model,
    input: &ModelInput,
) -> Result<ProvedLayer> {
    prove_with_progress(key, secret, model, input, &mut |_| {})
}

/// [`prove`], telling `progress` each [`Stage`] as it starts.
///
/// # Errors
/// As [`prove`].
pub fn prove_with_progress(
    key: &ModelVerifierKey,
    secret: Option<&ModelSecret>,
    model: &Model,
    input: &ModelInput,
    progress: &mut dyn FnMut(Stage),
) -> Result<ProvedLayer> {
    let _span = tracing::info_span!("prove", layer = model.layer).entered();
    let mut stages = Stages::new(progress);
    let blinds = check_model_against_key(key, secret, model)?;
    let d = key.model_width;
    let InputHiddenState { values: hidden, token_ids, tokenizer } = model.input_hidden_state(input, d)?;
    if hidden.is_empty() {
        return Err(Error::EmptyInput);
    }
    let block_input = model.file.block_input(model.layer, hidden)?;
    let (x, residual) = (&block_input.input, block_input.residual.as_deref());
    let s = x.len() / d;
    let shape = key.shape(s)?;
    crate::resources::check_model_layer_memory(&shape, model.max_memory)?;
    let hiding = if blinds.is_some() { Hiding::ZeroKnowledge } else { Hiding::Plain };
    let estimate = crate::resources::estimate_model_layer(&shape, hiding);
    let softmax = key.quantization.softmax(&shape.attention)?;
    let integers = key.quantization.quantize_weights(&model.float)?;
    // H first: a bad entry in it is named as H's, not as the X computed from it.
    let hidden_state = residual.map(|h| key.quantization.quantize_hidden_state(h)).transpose()?;
    // A proven norm: X is the integer norm of H (the float X is the accuracy reference only).
    let layer_input = match (&shape.norm, &hidden_state) {
        (Some(_), Some(h)) => zkmha_attention::block::normalized_input(&shape, &integers, h)?,
        _ => key.quantization.quantize_input(x)?,
    };
    let inputs =
        BlockInputs { shape: &shape, softmax, input: &layer_input, hidden_state: hidden_state.as_deref() };
    let (proof, prove_time) = match &blinds {
        None => prove_in::<Plain>(
            key,
            &inputs,
            &integers,
            &vec![(); key.commitment.tables.len()],
            estimate,
            &mut stages,
        )?,
        Some(blinds) => prove_in::<Zk>(key, &inputs, &integers, blinds, estimate, &mut stages)?,
    };
    let output =
        key.quantization.dequantize_output(proof.statement().output.public().ok_or(Error::ChainLink)?);
    let middle = reference_model_layer(&shape, key.mask, &model.float, x, residual, model.file.norm_epsilon)?;
    // What the residual adds to: H (pre-norm), or X (also BERT's layer 0, whose H feeds its norm).
    let base = if shape.residual == Residual::HiddenState { residual.unwrap_or(x) } else { x };
    let (reference, attention_half) =
        match (&model.float.feed_forward, model.activation, shape.mlp.is_some(), base) {
            (Some(_), Some(_), true, h) => {
                let reference = reference_layer_output(
                    &model.float,
                    model.file.norm_epsilon,
                    model.activation,
                    &middle,
                    d,
                );
                // Z, committed in the proof, from the integer forward pass it proves.
                let halves = zkmha_attention::block::block_outputs(
                    &shape,
                    key.mask,
                    softmax,
                    &layer_input,
                    hidden_state.as_deref(),
                    &integers,
                )?;
                let proven_middle = key.quantization.dequantize_output(&halves.middle);
                (reference, Some(model_accuracy(h, &proven_middle, &middle).attention))
            }
            _ => (middle, None),
        };
    let accuracy = model_accuracy(base, &output, &reference);
    Ok(ProvedLayer {
        proof,
        output,
        tokens: s,
        model_width: d,
        token_ids,
        tokenizer,
        accuracy,
        attention_half,
        prove_time,
        estimate,
    })
}

/// The hiding key's blinds from `secret` (none for a binding key), after checking that the
/// model file's layer is the one `key` was made for, as far as the commitments do not say:
/// the mask, the residual, the MLP's presence and activation, the norm's ε and the rotary base.
///
/// # Errors
/// As [`prove`]'s checks.
pub(crate) fn check_model_against_key(
    key: &ModelVerifierKey,
    secret: Option<&ModelSecret>,
    model: &Model,
) -> Result<Option<Vec<zkmha_pcs::HyraxBlinds>>> {
    let blinds = match (key.weight_commitments, secret) {
        (WeightCommitments::Hiding, None) => return Err(Error::SecretRequired),
        (WeightCommitments::Binding, Some(_)) => return Err(Error::SecretNotNeeded),
        (WeightCommitments::Hiding, Some(secret)) => {
            Some(secret.blinds_for(key).map_err(|_| Error::SecretOfAnotherKey)?)
        }
        (WeightCommitments::Binding, None) => None,
    };
    if let Some(given) = model.requested_mask
        && given != key.mask
    {
        return Err(Error::MaskDiffers { given, key: key.mask });
    }
    if key.residual != model.file.residual() {
        return Err(Error::ResidualDiffers);
    }
    match (key.quantization.mlp.is_some(), model.float.feed_forward.is_some()) {
        (true, false) => return Err(Error::LayerDiffersFromKey { key: "proves", model: "has none" }),
        (false, true) => return Err(Error::LayerDiffersFromKey { key: "does not prove", model: "has one" }),
        _ => {}
    }
    // A key without the post-norm (BERT's output.LayerNorm) would prove another function of
    // the same weights (a model file of another family).
    if key.quantization.post_norm.is_some() != model.float.post_norm.is_some() {
        return Err(Error::ResidualDiffers);
    }
    // The weight commitments do not cover the activation: a key of another one would prove
    // the model's weights through a function its config does not name.
    if let (Some(mlp), Some(activation)) = (&key.quantization.mlp, model.activation)
        && mlp.block.params.activation != activation
    {
        return Err(Error::ActivationDiffers {
            key: mlp.block.params.activation.name(),
            model: activation.name(),
        });
    }
    check_config_against_key(key, model)?;
    Ok(blinds)
}

impl Model {
    /// The float hidden state `input` gives (`s × d_model`), with the token ids and the
    /// tokenizer's source when it holds tokens or text.
    ///
    /// # Errors
    /// [`Error::InputWidth`], [`Error::TokensNeedLayerZero`], [`Error::Model`] (a token outside
    /// the vocabulary, the tokenizer).
    pub(crate) fn input_hidden_state(&self, input: &ModelInput, d: usize) -> Result<InputHiddenState> {
        let (hidden, token_ids, tokenizer) = match input {
            ModelInput::Tokens(ids) => (self.embed(ids)?, Some(ids.clone()), None),
            ModelInput::Text(text) => {
                let tokenizer = self.file.tokenizer()?;
                let ids = tokenizer.encode(text)?;
                (self.embed(&ids)?, Some(ids), Some(tokenizer.source.to_string()))
            }
            ModelInput::HiddenState { values, columns } => {
                if *columns != d || values.len() % d != 0 {
                    return Err(Error::InputWidth {
                        entries: values.len(),
                        columns: *columns,
                        model_width: d,
                    });
                }
                (values.clone(), None, None)
            }
        };
        Ok(InputHiddenState { values: hidden, token_ids, tokenizer })
    }
}

/// The float hidden state a [`ModelInput`] gives, and where it came from.
pub(crate) struct InputHiddenState {
    /// `s × d_model`, row-major.
    pub values: Vec<f64>,
    /// The token ids (tokens or text).
    pub token_ids: Option<Vec<usize>>,
    /// The tokenizer's source (text).
    pub tokenizer: Option<String>,
}

/// The constants a key fixes that the weight commitments do not cover, against the model
/// file's config: the norms' `ε` (as the integer image the proof uses, at the key's residual
/// stream scale) and the rotary base.
fn check_config_against_key(key: &ModelVerifierKey, model: &Model) -> Result<()> {
    let file = &model.file;
    let norms = [
        key.quantization.norm.map(|n| n.block),
        key.quantization.mlp.map(|m| m.block.norm),
        key.quantization.post_norm.map(|n| n.block),
    ];
    if let Ok(scale) = u32::try_from(key.quantization.hidden_fraction_bits) {
        for norm in norms.into_iter().flatten() {
            let image =
                zkmha_attention::norm::epsilon_image(norm.kind, key.model_width, file.norm_epsilon, scale);
            if image != norm.epsilon {
                return Err(Error::ConfigDiffersFromKey {
                    field: "the norm's ε",
                    key: format!("E = {}", norm.epsilon),
                    model: format!("ε = {} (E = {image})", file.norm_epsilon),
                });
            }
        }
    }
    let rope_base = file.rope_base_for(model.layer);
    if let Some(rotary) = key.rotary
        && file.family == Family::Llama
        && rope_base != rotary.base as f64
    {
        return Err(Error::ConfigDiffersFromKey {
            field: "the rotary base",
            key: rotary.base.to_string(),
            model: rope_base.to_string(),
        });
    }
    Ok(())
}

/// What [`prove_in`] proves besides the weights.
struct BlockInputs<'a> {
    shape: &'a ModelShape,
    softmax: zkmha_attention::SoftmaxMode,
    input: &'a [i64],
    hidden_state: Option<&'a [i64]>,
}

/// The statement and proof of mode `M` in a [`ModelProof`].
trait IntoModelProof: Mode {
    fn into_model_proof(
        statement: zkmha_attention::model_layer::ModelStatement,
        proof: zkmha_attention::block::ModelBlockProof<Self>,
    ) -> ModelProof;
}

impl IntoModelProof for Plain {
    fn into_model_proof(
        statement: zkmha_attention::model_layer::ModelStatement,
        proof: zkmha_attention::block::ModelBlockProof<Self>,
    ) -> ModelProof {
        ModelProof::Plain(statement, Box::new(proof))
    }
}

impl IntoModelProof for Zk {
    fn into_model_proof(
        statement: zkmha_attention::model_layer::ModelStatement,
        proof: zkmha_attention::block::ModelBlockProof<Self>,
    ) -> ModelProof {
        ModelProof::ZeroKnowledge(statement, Box::new(proof))
    }
}

/// Proves the block in mode `M` against `key` and checks the proof against the key.
fn prove_in<M: IntoModelProof>(
    key: &ModelVerifierKey,
    inputs: &BlockInputs<'_>,
    weights: &ModelWeights,
    blinds: &[M::Blinds],
    estimate: Estimate,
    stages: &mut Stages<'_>,
) -> Result<(ModelProof, Duration)> {
    let params = block_hyrax_params::<M>(inputs.shape, inputs.softmax)?;
    let mut rng = secure_rng("masks")?;
    stages.start(Stage::Proving { estimate });
    let start = Instant::now();
    let (statement, proof, _) = prove_block::<M>(
        &params,
        inputs.shape,
        key.mask,
        inputs.softmax,
        inputs.input,
        inputs.hidden_state,
        weights,
        &key.commitment,
        blinds,
        &mut rng,
    )?;
    let prove_time = start.elapsed();
    stages.start(Stage::Verifying);
    verify_with_key(key, &statement, &proof).map_err(|error| Error::ModelDiffersFromKey { error })?;
    stages.start(Stage::Done);
    Ok((M::into_model_proof(statement, proof), prove_time))
}

/// Verifies a model-layer proof with its verifier key alone and returns what it accepted:
/// the statement (the key's fingerprint, the mode, the committed input) and the proven output.
///
/// See [`prove`] for an example. The caller must still check that the statement is the one it
/// means ([`verify_expecting`]): a valid proof of one input verifies whatever the caller meant.
///
/// # Errors
/// [`Error::InvalidProof`] ([`crate::ErrorKind::InvalidProof`]): the proof does not verify
/// against the key (another key, a changed output, a forged proof).
pub fn verify(key: &ModelVerifierKey, proof: &ModelProof) -> Result<Verified> {
    verify_expecting(key, proof, &Expected::default())
}

/// [`verify`], refusing a statement other than the one `expected` before verifying.
///
/// # Errors
/// [`Error::UnexpectedStatement`] ([`Verified::check`]): a model layer's input is a committed
/// hidden state, never token ids proven, and its output is no logits; then as [`verify`].
pub fn verify_expecting(key: &ModelVerifierKey, proof: &ModelProof, expected: &Expected) -> Result<Verified> {
    let _span = tracing::info_span!("verify", zero_knowledge = proof.is_zero_knowledge()).entered();
    let mut verified = Verified::of_model_layer(key, proof)?;
    verified.check(expected)?;
    let start = Instant::now();
    let result = match proof {
        ModelProof::Plain(statement, proof) => verify_with_key(key, statement, proof),
        ModelProof::ZeroKnowledge(statement, proof) => verify_with_key(key, statement, proof),
    };
    verified.verify_time = start.elapsed();
    result.map_err(|error| Error::InvalidProof { error })?;
    Ok(verified)
}

/// Reads a layer input (`tokens × columns`) from a .npy (float32 or float64, C order) or
/// safetensors file (one float tensor).
///
/// # Errors
/// [`Error::Read`]; [`Error::InputFile`] for a file that is not valid, in Fortran order, of
/// another type or shape; [`Error::Model`] for a safetensors file that does not parse.
pub fn read_hidden_state(path: &Path, columns: usize) -> Result<Vec<f64>> {
    let bytes = crate::model_files::read_bytes(path)?;
    let fail = |problem: String| Error::InputFile { path: path.to_path_buf(), problem };
    let (shape, data): (Vec<usize>, Vec<f64>) = if bytes.starts_with(b"\x93NUMPY") {
        let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| fail(crate::files::npy_header_problem(&e)))?;
        if npy.order() != npyz::Order::C {
            return Err(fail("is stored in Fortran order; write it in C order (numpy's default)".into()));
        }
        let shape: Vec<usize> = npy.shape().iter().map(|&n| n as usize).collect();
        if let npyz::DType::Plain(t) = npy.dtype() {
            let elements = npy.shape().iter().try_fold(1u64, |n, &m| n.checked_mul(m)).unwrap_or(u64::MAX);
            crate::files::check_npy_length(&bytes, elements, t.size_field()).map_err(fail)?;
        }
        let corrupt = |e: std::io::Error| fail(format!("is corrupt: {e}"));
        let data = match npy.dtype() {
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 8 => {
                npy.into_vec::<f64>().map_err(corrupt)?
            }
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 4 => {
                npy.into_vec::<f32>().map_err(corrupt)?.into_iter().map(f64::from).collect()
            }
            other => {
                return Err(fail(format!(
                    "holds {} values (numpy's dtype); X must be float32 or float64",
                    other.descr()
                )));
            }
        };
        (shape, data)
    } else {
        // Not a model: a tensor of a type the reader does not decode is a bad input (X must be
        // float32 or float64), not a model the proof does not cover.
        let file = zkmha_model::families::TensorFile::read(path).map_err(|error| match error {
            zkmha_model::ModelError::UnsupportedTensorType { name, type_name } => {
                fail(format!("holds {name} as {type_name}; X must be float32 or float64"))
            }
            zkmha_model::ModelError::Corrupt { message, .. } => {
                fail(format!("is neither a .npy file nor a valid safetensors file: {message}"))
            }
            other => other.into(),
        })?;
        let names: Vec<&str> = file.names().collect();
        let [name] = names.as_slice() else {
            return Err(fail(format!("must hold exactly one float tensor (X); it holds {}", names.len())));
        };
        let t = file.get(name).map_err(|error| match error {
            zkmha_model::ModelError::UnsupportedTensorType { name, type_name } => {
                fail(format!("holds {name} as {type_name}; X must be float32 or float64"))
            }
            other => other.into(),
        })?;
        (t.shape.clone(), t.data.clone())
    };
    match shape.as_slice() {
        [_, c] if *c == columns => Ok(data),
        _ => Err(fail(format!("has shape {shape:?}; the layer input must be (tokens × {columns})"))),
    }
}
