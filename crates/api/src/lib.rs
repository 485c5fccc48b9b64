//! The zkmha library: commit to one attention layer of a model file, prove the layer on an
//! input in zero knowledge, verify the proof with the verifier key alone, and read and write
//! every file kind zkmha uses (verifier keys, model secrets, model- and attention-layer
//! proofs). The `zkmha` command line and the Python package are thin layers over it.
//!
//! ```
//! use zkmha_api::{Model, ModelInput, WeightCommitments, commit_model, model_files, prove, verify};
//! let dir = std::env::temp_dir().join(format!("zkmha-doc-crate-{}", std::process::id()));
//! // A tiny synthetic BERT-style model (a GGUF or safetensors file of a real one works alike).
//! let model = Model::open(&zkmha_api::example_model::write_bert(&dir, 1)?, &Default::default())?;
//! // The model owner commits once: the key is published, the secret kept.
//! let committed = commit_model(&model, WeightCommitments::Hiding)?;
//! model_files::write_key(&dir.join("model.vk"), &committed.key)?;
//! // Proving needs the model, the key and its secret.
//! let proved = prove(&committed.key, committed.secret.as_ref(), &model, &ModelInput::Tokens(vec![3, 1, 4]))?;
//! proved.proof.write(&dir.join("layer.proof"))?;
//! // The verifier reads the key and the proof, nothing else.
//! let key = model_files::read_key(&dir.join("model.vk"))?;
//! let proof = model_files::ModelProof::read(&dir.join("layer.proof"))?;
//! let verified = verify(&key, &proof)?;
//! assert_eq!(verified.output.to_f64(), Some(proved.output));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Attention layers on their own (`zkmha prove` without `--model`: `Q`, `K`, `V` given and
//! committed) are proven and verified by [`attention_layer`], their files read and encoded by
//! [`layer_files`].

pub mod attention_layer;
pub mod chain_tasks;
mod error;
pub mod example_model;
pub mod fidelity;
pub mod files;
pub mod inspect;
pub mod layer_files;
pub mod model_chain;
pub mod model_files;
pub mod model_layer;
pub mod resources;
pub mod verified;

pub use error::{Error, ErrorKind, Result};
pub use model_layer::{
    CommittedModel, FloatHalves, Model, ModelInput, ModelOptions, ProvedLayer, Stage, commit_model,
    commit_model_with_progress, prove, prove_with_progress, read_hidden_state, verify, verify_expecting,
};
pub use verified::{Expected, ProofKind, ProofMode, ProvenInput, ProvenOutput, Verified};
pub use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments};
pub use zkmha_attention::{MaskKind, SoftmaxMode};
pub use zkmha_model::families::Family;

use ark_serialize::CanonicalSerialize;

/// Hex digits of a [`fingerprint`] (128 bits).
pub const FINGERPRINT_HEX_DIGITS: usize = 32;

/// A short fingerprint of a commitment, a key or an output: the first 128 bits of the BLAKE3
/// hash of its compressed encoding, in hex (as `zkmha verify` and `inspect` show them).
///
/// ```
/// let fingerprint = zkmha_api::fingerprint(&42u64);
/// assert_eq!(fingerprint.len(), zkmha_api::FINGERPRINT_HEX_DIGITS);
/// assert_eq!(fingerprint, zkmha_api::fingerprint(&42u64));
/// ```
pub fn fingerprint<T: CanonicalSerialize>(value: &T) -> String {
    let mut bytes = Vec::with_capacity(value.compressed_size());
    // Serializing into a Vec cannot fail.
    let _ = value.serialize_compressed(&mut bytes);
    let hex = blake3::hash(&bytes).to_hex();
    hex.get(..FINGERPRINT_HEX_DIGITS).unwrap_or_default().to_string()
}

/// The softmax as `zkmha verify --softmax-params` names it: `linear`, or
/// `multiplier=M,shift=K,exponent_bits=G,output_bits=F,tolerance_bits=T`.
///
/// ```
/// assert_eq!(zkmha_api::softmax_spec(zkmha_api::SoftmaxMode::Identity), "linear");
/// ```
pub fn softmax_spec(mode: SoftmaxMode) -> String {
    match mode {
        SoftmaxMode::Identity => "linear".to_string(),
        SoftmaxMode::Exponential(p) => format!(
            "multiplier={},shift={},exponent_bits={},output_bits={},tolerance_bits={}",
            p.multiplier, p.shift, p.exponent_bits, p.output_bits, p.tolerance_bits
        ),
    }
}

/// The softmax parameters' names in a spec, in [`softmax_spec`]'s order.
const SOFTMAX_SPEC_KEYS: [&str; 5] =
    ["multiplier", "shift", "exponent_bits", "output_bits", "tolerance_bits"];

/// Parses a softmax as [`softmax_spec`] writes it: `linear`, or the five `name=value` pairs
/// (any order, each once). The parameters are not checked against what the proof system can
/// prove: a spec names what a verifier expects, and only equality with a proof's matters.
///
/// ```
/// use zkmha_api::{SoftmaxMode, parse_softmax_spec, softmax_spec};
/// assert_eq!(parse_softmax_spec(" linear "), Ok(SoftmaxMode::Identity));
/// let spec = "shift=16,multiplier=5,exponent_bits=8,output_bits=16,tolerance_bits=9";
/// let mode = parse_softmax_spec(spec)?;
/// assert_eq!(softmax_spec(mode), "multiplier=5,shift=16,exponent_bits=8,output_bits=16,tolerance_bits=9");
/// assert!(parse_softmax_spec("multiplier=5").unwrap_err().contains("shift is missing"));
/// # Ok::<(), String>(())
/// ```
///
/// # Errors
/// An unknown, missing or repeated name, or a value that is not a whole number in range, in
/// one sentence.
pub fn parse_softmax_spec(text: &str) -> Result<SoftmaxMode, String> {
    let text = text.trim();
    if text == "linear" {
        return Ok(SoftmaxMode::Identity);
    }
    let mut values: [Option<u64>; 5] = [None; 5];
    for pair in text.split(',') {
        let (name, value) = pair.split_once('=').ok_or_else(|| {
            format!("'{pair}' is not name=value: name the softmax as `zkmha verify` prints it (multiplier=…,shift=…,exponent_bits=…,output_bits=…,tolerance_bits=…) or `linear`")
        })?;
        let (name, value) = (name.trim(), value.trim());
        let index = SOFTMAX_SPEC_KEYS.iter().position(|key| *key == name).ok_or_else(|| {
            format!("unknown softmax parameter '{name}': use {}", SOFTMAX_SPEC_KEYS.join(", "))
        })?;
        let number = value.parse::<u64>().map_err(|_| format!("{name}={value} is not a whole number"))?;
        match values.get_mut(index) {
            Some(slot @ None) => *slot = Some(number),
            _ => return Err(format!("{name} is named twice")),
        }
    }
    let mut numbers = [0u64; 5];
    for ((key, value), number) in SOFTMAX_SPEC_KEYS.iter().zip(values).zip(&mut numbers) {
        *number =
            value.ok_or_else(|| format!("{key} is missing: name all of {}", SOFTMAX_SPEC_KEYS.join(", ")))?;
    }
    let [multiplier, shift, exponent_bits, output_bits, tolerance_bits] = numbers;
    let small = |name: &str, value: u64| {
        u32::try_from(value).map_err(|_| format!("{name}={value} is larger than any softmax zkmha proves"))
    };
    Ok(SoftmaxMode::Exponential(zkmha_attention::SoftmaxParams {
        multiplier,
        shift: small("shift", shift)?,
        exponent_bits: small("exponent_bits", exponent_bits)?,
        output_bits: small("output_bits", output_bits)?,
        tolerance_bits: small("tolerance_bits", tolerance_bits)?,
    }))
}

/// Parses a mask's name: `causal`, `none` or `sliding:W` (a causal mask that keeps the `W`
/// most recent tokens, `1 ≤ W < 2^32`) — what [`MaskKind`]'s `Display` writes.
///
/// ```
/// assert_eq!(zkmha_api::parse_mask("causal"), Ok(zkmha_api::MaskKind::Causal));
/// assert_eq!(zkmha_api::parse_mask("sliding:512"), Ok(zkmha_api::MaskKind::sliding(512).unwrap()));
/// assert!(zkmha_api::parse_mask("diagonal").is_err());
/// assert!(zkmha_api::parse_mask("sliding:0").is_err());
/// assert!(zkmha_api::parse_mask("sliding:+5").is_err() && zkmha_api::parse_mask("sliding:05").is_err());
/// ```
///
/// # Errors
/// Any other word, or a window that is not a whole number from 1 to 2^32 − 1, in a sentence
/// naming the forms.
pub fn parse_mask(text: &str) -> Result<MaskKind, String> {
    match text {
        "causal" => Ok(MaskKind::Causal),
        "none" => Ok(MaskKind::None),
        other => match other.strip_prefix("sliding:") {
            Some(window) => (window.bytes().all(|b| b.is_ascii_digit()) && !window.starts_with('0'))
                .then(|| window.parse::<usize>().ok())
                .flatten()
                .and_then(MaskKind::sliding)
                .ok_or_else(|| {
                    format!("the window of '{other}' must be a whole number of tokens from 1 to {}", u32::MAX)
                }),
            None => {
                Err(format!("unknown mask '{other}': use causal, none or sliding:W (a window of W tokens)"))
            }
        },
    }
}

/// Parses a model family's name: `bert`, `gpt2` or `llama`.
///
/// ```
/// assert_eq!(zkmha_api::parse_family("llama"), Ok(zkmha_api::Family::Llama));
/// assert!(zkmha_api::parse_family("t5").is_err());
/// ```
///
/// # Errors
/// Any other word, in a sentence naming the three.
pub fn parse_family(text: &str) -> Result<Family, String> {
    match text {
        "bert" => Ok(Family::Bert),
        "gpt2" => Ok(Family::Gpt2),
        "llama" => Ok(Family::Llama),
        _ => Err(format!("unknown family '{text}': use bert, gpt2 or llama")),
    }
}
