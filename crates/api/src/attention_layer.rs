//! Attention layers of their own: `Q`, `K`, `V` given (not computed from a model), committed,
//! and the layer proven on them — `zkmha prove` without `--model`, and the Python package's
//! `prove_attention` / `verify_attention`.
//!
//! ```text
//! statement   the commitments to Q, K, V (hiding in zero knowledge), the shape, the mask, the
//!             softmax's parameters, and the public output O (s × h·m_v integers)
//! relation    O = unpad(concat_h(softmax(mask(Q_h·K_hᵀ)) · V_h))   (softmax: the fixed-point
//!             exponential with its lookups, or the identity for linear attention)
//! ```
//!
//! The verifier reads the statement and the proof, nothing else. What it must still decide is
//! whether the statement is the one it expects: a prover may pick any softmax parameters,
//! mask and head split the proof system can prove, so [`verify_attention`] compares the
//! softmax with the default for the shape ([`default_softmax`]) unless the caller names the
//! expected one, and the mask and the heads with the caller's [`Expected`] where it fixes
//! them — before any verification work.

use crate::error::{Error, Result};
use crate::layer_files::{EncodedLayerProof, LayerProof, attention_output_integers};
use crate::verified::Verified;
use std::time::{Duration, Instant};
use zkmha_attention::mode::Zk;
pub use zkmha_attention::{AttentionInputs, AttentionShape};
use zkmha_attention::{
    MaskKind, ProverTimings, SoftmaxMode, SoftmaxParams, hyrax_params_for, prove_layer_committed,
    prove_layer_committed_with, verify_committed_layer, verify_layer_committed, zk_hyrax_params_for,
};

/// The score scale that gives uniform inputs in −127..=127 scores of standard deviation 4 (a
/// head's score has standard deviation √m · 127²/3): the default softmax's.
///
/// ```
/// assert!((zkmha_api::attention_layer::default_score_scale(64) * 8.0 * 127.0 * 127.0 / 3.0 - 4.0).abs() < 1e-12);
/// ```
pub fn default_score_scale(head_dim: usize) -> f64 {
    4.0 / ((head_dim as f64).sqrt() * 127.0 * 127.0 / 3.0)
}

/// The proven softmax for `shape` at `score_scale` (the default's when `None`).
///
/// # Errors
/// A score scale the fixed-point softmax cannot represent ([`Error::Attention`]).
pub fn exponential_softmax(shape: &AttentionShape, score_scale: Option<f64>) -> Result<SoftmaxMode> {
    Ok(SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(
        score_scale.unwrap_or_else(|| default_score_scale(shape.head_dim)),
        shape.seq_len,
    )?))
}

/// The softmax a verifier expects of a proof of `shape` unless told otherwise: the proven
/// exponential at [`default_score_scale`] (what `zkmha prove` uses without `--softmax` or
/// `--score-scale`).
///
/// # Errors
/// As [`exponential_softmax`] (not for a shape within the stated limits).
pub fn default_softmax(shape: &AttentionShape) -> Result<SoftmaxMode> {
    exponential_softmax(shape, None)
}

/// Whether the proof hides `Q`, `K`, `V`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hiding {
    /// Plain: binding commitments, sum-checks in the clear (smaller, faster; `Q`, `K`, `V` are
    /// not hidden).
    Plain,
    /// Zero knowledge: hiding commitments, every sum-check and lookup masked, every claim
    /// committed; the masks from the operating system's randomness.
    ZeroKnowledge,
}

impl Hiding {
    /// The hiding of proofs in mode `M`.
    pub fn of<M: zkmha_attention::mode::Mode>() -> Hiding {
        if M::HIDING { Hiding::ZeroKnowledge } else { Hiding::Plain }
    }
}

/// A proven attention layer.
#[derive(Debug)]
pub struct ProvedAttention {
    /// The statement and the proof, as the file holds them.
    pub file: LayerProof,
    /// The file's contents (write them with [`crate::files::write_file`]).
    pub encoded: EncodedLayerProof,
    /// The output `O` (`s × h·m_v`, row-major) as integers; `None` when an entry is not a
    /// 64-bit integer (linear attention with a causal or sliding mask: a masked score is the field's
    /// mask value, not an integer).
    pub output: Option<Vec<i64>>,
    /// The plain prover's stages (`None` in zero knowledge).
    pub timings: Option<ProverTimings>,
    /// The time to prove.
    pub elapsed: Duration,
}

/// Commits to `Q`, `K`, `V`, runs the layer and proves it.
///
/// ```
/// use zkmha_api::attention_layer::{Hiding, default_softmax, prove_attention, verify_attention};
/// use zkmha_api::MaskKind;
/// let shape = zkmha_api::attention_layer::AttentionShape::new(3, 2, 4, 4)?;
/// let draw = |n: usize, k: i64| (0..n as i64).map(|i| (i * 7 + k) % 11 - 5).collect::<Vec<_>>();
/// let inputs = zkmha_api::attention_layer::AttentionInputs { queries: draw(24, 1), keys: draw(24, 2), values: draw(24, 3) };
/// let proved = prove_attention(&shape, MaskKind::Causal, default_softmax(&shape)?, &inputs, Hiding::ZeroKnowledge)?;
/// // The verifier needs the file alone.
/// let verified = verify_attention(&proved.file, &Default::default())?;
/// let zkmha_api::ProvenOutput::Attention { values, .. } = &verified.verified.output else { unreachable!() };
/// assert_eq!(values, &proved.output);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// A shape outside the stated limits, inputs of the wrong size or out of the proven range
/// ([`Error::Attention`]), no randomness
/// from the operating system ([`Error::Randomness`]), an encoding failure (not expected).
pub fn prove_attention(
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    hiding: Hiding,
) -> Result<ProvedAttention> {
    shape.validate()?;
    inputs.validate(shape)?;
    let start = Instant::now();
    let (file, timings) = match hiding {
        Hiding::ZeroKnowledge => {
            let params = zk_hyrax_params_for(shape, softmax)?;
            let mut rng =
                zkmha_zk::secure_rng().map_err(|source| Error::Randomness { purpose: "masks", source })?;
            let (statement, proof, _) =
                prove_layer_committed_with::<Zk>(&params, shape, mask, softmax, inputs, &mut rng)?;
            (LayerProof::ZeroKnowledge(statement, Box::new(proof)), None)
        }
        Hiding::Plain => {
            let params = hyrax_params_for(shape, softmax);
            let (statement, proof, timings) = prove_layer_committed(&params, shape, mask, softmax, inputs)?;
            (LayerProof::Plain(statement, Box::new(proof)), Some(timings))
        }
    };
    let elapsed = start.elapsed();
    let encoded = file.encode()?;
    let output = attention_output_integers(file.statement()).ok();
    Ok(ProvedAttention { file, encoded, output, timings, elapsed })
}

/// What a valid attention-layer proof established, and how long deriving its generators took.
#[derive(Debug, Clone)]
pub struct VerifiedAttention {
    /// The statement (shape, mask, softmax, the commitments to `Q`, `K`, `V`) and the proven
    /// output `O` ([`crate::ProvenOutput::Attention`]: `None` as in [`ProvedAttention::output`]).
    pub verified: Verified,
    /// Deriving the commitment scheme's generators (not in `verified.verify_time`).
    pub setup: Duration,
}

/// What a verifier expects of an attention-layer proof besides its validity. The default
/// expects the default softmax for the proof's shape and fixes neither the mask nor the head
/// split.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Expected {
    /// The softmax ([`default_softmax`] of the proof's shape when `None`).
    pub softmax: Option<SoftmaxMode>,
    /// The mask, when the caller fixes it.
    pub mask: Option<MaskKind>,
    /// The number of heads `h`, when the caller fixes it.
    pub heads: Option<usize>,
    /// The head width `m` of `Q` and `K`, when the caller fixes it.
    pub head_dim: Option<usize>,
}

/// Verifies an attention-layer proof with nothing but itself, after checking the statement
/// against its limits and against `expected` (the softmax, and the mask and the head split
/// where the caller fixes them).
///
/// The caller must still check that the statement's commitments to `Q`, `K`, `V` are the ones
/// it means (`zkmha inspect` shows their fingerprints): the proof says that *some* committed
/// inputs give `O`.
///
/// # Errors
/// [`Error::Attention`] for a statement outside the stated limits, then
/// [`Error::UnexpectedSoftmax`] or [`Error::UnexpectedStatement`] (checked before verifying),
/// then [`Error::InvalidProof`] for a proof that does not verify.
pub fn verify_attention(file: &LayerProof, expected: &Expected) -> Result<VerifiedAttention> {
    let statement = file.statement();
    match file {
        LayerProof::Plain(..) => statement.validate()?,
        LayerProof::ZeroKnowledge(..) => statement.validate_zk()?,
    }
    let softmax = match expected.softmax {
        Some(softmax) => softmax,
        None => default_softmax(&statement.shape)?,
    };
    if statement.softmax != softmax {
        return Err(Error::UnexpectedSoftmax {
            proof: crate::softmax_spec(statement.softmax),
            expected: crate::softmax_spec(softmax),
        });
    }
    let shape = &statement.shape;
    let differs = |what: &'static str, proof: String, expected: Option<String>| match expected {
        Some(expected) if expected != proof => Err(Error::UnexpectedStatement { what, proof, expected }),
        _ => Ok(()),
    };
    differs("mask", statement.mask.to_string(), expected.mask.map(|m| m.to_string()))?;
    differs("number of heads", shape.heads.to_string(), expected.heads.map(|h| h.to_string()))?;
    differs("head width", shape.head_dim.to_string(), expected.head_dim.map(|m| m.to_string()))?;
    let start = Instant::now();
    let (setup, verified) = match file {
        LayerProof::Plain(statement, proof) => {
            let params = hyrax_params_for(&statement.shape, statement.softmax);
            let setup = start.elapsed();
            (setup, verify_layer_committed(&params, statement, proof).map(|_| ()))
        }
        LayerProof::ZeroKnowledge(statement, proof) => {
            let params = zk_hyrax_params_for(&statement.shape, statement.softmax)?;
            let setup = start.elapsed();
            (setup, verify_committed_layer::<Zk>(&params, statement, proof).map(|_| ()))
        }
    };
    verified.map_err(|error| Error::InvalidProof { error })?;
    let mut accepted = Verified::of_attention(statement, file.is_zero_knowledge());
    accepted.verify_time = start.elapsed().saturating_sub(setup);
    Ok(VerifiedAttention { verified: accepted, setup })
}
