//! A memory estimate before proving an attention layer, from its shape alone, and the
//! machine's memory to hold it against: a layer that would not fit is refused in one sentence
//! instead of growing until the system kills it.
//!
//! The prover's peak grows with the softmax's score entries `ĥ·ŝ²` and with the entries of Q,
//! K and V `ŝ·ĥ·(2m̂ + m̂_v)` (every size padded to a power of two). Measured peaks
//! (`/usr/bin/time -v zkmha layer`, m = 64 unless named, 2 cores, 2026-11), against the
//! estimate: s = 128, h = 8: 0.11 GB (0.14); s = 128, h = 8, m = 1024: 0.54 GB (0.61);
//! s = 256, h = 4: 0.13 GB (0.20); s = 512, h = 12: 1.15 GB (1.35); s = 2048, h = 8: 6.64 GB
//! (7.12, glibc's defaults above 2^24 score entries); s = 2048, h = 16: 12.94 GB
//! (docs/BENCHMARKS.md; 14.1). The estimate is the measured peaks' upper side.
//!
//! A model layer adds its weights (every table padded to a power of two, held as floats,
//! integers and field elements) and, with an MLP, its hidden entries `ŝ·n̂` (twice for a gated
//! MLP: `G`, `U`, their activation and product). Measured peaks (`/usr/bin/time -v zkmha prove
//! --model`, zero-knowledge, 2026-11-26) against [`estimate_model_layer_memory`], in GiB: the
//! GPT-2-small-shaped layer (`benches/make_gpt2_small.py`, 12.6 M padded weight entries,
//! n = 3 072) at s = 32: 1.36 (1.44), s = 128: 1.60 (1.66), s = 512: 3.10 (3.17); SmolLM2-135M
//! layer 0 (8.9 M, gated n = 1 536) at s = 16: 0.88 (1.04), s = 64: 0.99 (1.13).

use crate::error::{Error, Result};
use zkmha_attention::AttentionShape;
use zkmha_attention::model_layer::ModelShape;

/// Bytes of the prover's peak per score entry up to [`RETAINED_ENTRIES`] (the command line
/// keeps freed memory in the heap there).
pub const BYTES_PER_ENTRY: u64 = 240;
/// Bytes of the prover's peak per score entry above [`RETAINED_ENTRIES`].
pub const BYTES_PER_LARGE_ENTRY: u64 = 195;
/// Bytes of the prover's peak per entry of Q, K and V.
pub const BYTES_PER_INPUT_ENTRY: u64 = 150;
/// Score entries up to which the command line keeps freed memory in the heap.
pub const RETAINED_ENTRIES: u64 = 1 << 24;
/// The prover's peak that does not grow with the scores (tables, the program itself).
pub const FIXED_BYTES: u64 = 100 << 20;

/// `n` padded to a power of two (saturating).
fn padded(n: usize) -> u64 {
    (n.max(1) as u64).checked_next_power_of_two().unwrap_or(u64::MAX)
}

/// `ĥ·ŝ²`: the score entries of `shape`, heads and tokens padded to powers of two.
pub fn score_entries(heads: usize, seq_len: usize) -> u64 {
    padded(heads).saturating_mul(padded(seq_len).saturating_mul(padded(seq_len)))
}

/// The estimated peak memory of proving an attention layer of `shape`, in bytes.
///
/// ```
/// let shape = zkmha_attention::AttentionShape::new(512, 12, 64, 64)?;
/// let gigabytes = zkmha_api::resources::estimate_layer_memory(&shape) as f64 / 1e9;
/// assert!((1.15..1.5).contains(&gigabytes), "{gigabytes}"); // measured: 1.15 GB
/// # Ok::<(), zkmha_attention::AttentionError>(())
/// ```
pub fn estimate_layer_memory(shape: &AttentionShape) -> u64 {
    let entries = score_entries(shape.heads, shape.seq_len);
    let per_entry = if entries <= RETAINED_ENTRIES { BYTES_PER_ENTRY } else { BYTES_PER_LARGE_ENTRY };
    let widths = padded(shape.head_dim).saturating_mul(2).saturating_add(padded(shape.value_head_dim));
    let inputs = padded(shape.seq_len).saturating_mul(padded(shape.heads)).saturating_mul(widths);
    FIXED_BYTES
        .saturating_add(entries.saturating_mul(per_entry))
        .saturating_add(inputs.saturating_mul(BYTES_PER_INPUT_ENTRY))
}

/// Bytes of a model layer's peak per padded weight entry.
pub const BYTES_PER_WEIGHT_ENTRY: u64 = 110;
/// Bytes of a model layer's peak per entry `ŝ·n̂` of its MLP's hidden width (a gated MLP's
/// count twice).
pub const BYTES_PER_MLP_ENTRY: u64 = 320;

/// The estimated peak memory of proving a model layer of `shape` (the attention block, its
/// weights, its MLP), in bytes.
///
/// ```
/// use zkmha_attention::model_layer::ModelShape;
/// let attention = zkmha_attention::AttentionShape::new(512, 12, 64, 64)?;
/// let shape = ModelShape {
///     attention,
///     model_width: 768,
///     shifts: [1; 4],
///     residual: zkmha_attention::Residual::HiddenState,
///     key_value_heads: 12,
///     rotary: None,
///     norm: None,
///     mlp: None,
/// };
/// let gigabytes = zkmha_api::resources::estimate_model_layer_memory(&shape) as f64 / 1e9;
/// assert!((1.5..2.5).contains(&gigabytes), "{gigabytes}");
/// # Ok::<(), zkmha_attention::AttentionError>(())
/// ```
pub fn estimate_model_layer_memory(shape: &ModelShape) -> u64 {
    let mlp_entries = shape.mlp.map_or(0, |mlp| {
        let tensors = if mlp.params.gate.is_some() { 2 } else { 1 };
        padded(shape.attention.seq_len).saturating_mul(padded(mlp.params.hidden)).saturating_mul(tensors)
    });
    estimate_layer_memory(&shape.attention)
        .saturating_add(shape.padded_weight_entries().saturating_mul(BYTES_PER_WEIGHT_ENTRY))
        .saturating_add(mlp_entries.saturating_mul(BYTES_PER_MLP_ENTRY))
}

/// Refuses a model layer whose [`estimate_model_layer_memory`] exceeds `limit` (by default
/// the machine's memory); returns the estimate.
///
/// # Errors
/// [`Error::MemoryEstimate`] ([`crate::ErrorKind::OutOfResources`]).
pub fn check_model_layer_memory(shape: &ModelShape, limit: Option<u64>) -> Result<u64> {
    check_estimate(
        estimate_model_layer_memory(shape),
        score_entries(shape.attention.heads, shape.attention.seq_len),
        limit,
    )
}

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo), where the system says.
pub fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kilobytes.checked_mul(1024)
}

/// Parses a memory size: a whole number of bytes, or with a suffix K, M, G or T (powers of
/// 1024; `GiB`, `GB` and `g` read alike).
///
/// ```
/// assert_eq!(zkmha_api::resources::parse_memory_size("20G"), Ok(20 << 30));
/// assert_eq!(zkmha_api::resources::parse_memory_size("512MiB"), Ok(512 << 20));
/// assert!(zkmha_api::resources::parse_memory_size("lots").is_err());
/// ```
///
/// # Errors
/// Text that is not such a size, in one sentence.
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("'{text}' is not a memory size: write e.g. 20G, 512M or a number of bytes")),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a memory size: write e.g. 20G, 512M or a number of bytes"))?;
    value.checked_mul(1 << shift).ok_or_else(|| format!("'{text}' is more memory than 2^64 bytes"))
}

/// Refuses a layer whose [`estimate_layer_memory`] exceeds `limit` (by default the machine's
/// memory; nothing is refused where the system does not say it); returns the estimate.
///
/// ```
/// let shape = zkmha_attention::AttentionShape::new(4096, 16, 64, 64)?;
/// let error = zkmha_api::resources::check_layer_memory(&shape, Some(16 << 30)).unwrap_err();
/// assert_eq!(error.kind(), zkmha_api::ErrorKind::OutOfResources);
/// # Ok::<(), zkmha_attention::AttentionError>(())
/// ```
///
/// # Errors
/// [`Error::MemoryEstimate`] ([`crate::ErrorKind::OutOfResources`]).
pub fn check_layer_memory(shape: &AttentionShape, limit: Option<u64>) -> Result<u64> {
    check_estimate(estimate_layer_memory(shape), score_entries(shape.heads, shape.seq_len), limit)
}

fn check_estimate(estimate: u64, entries: u64, limit: Option<u64>) -> Result<u64> {
    let (allowed, given) = match limit {
        Some(limit) => (limit, true),
        None => match machine_memory() {
            Some(memory) => (memory, false),
            None => return Ok(estimate),
        },
    };
    if estimate > allowed {
        return Err(Error::MemoryEstimate { estimate, allowed, given, entries });
    }
    Ok(estimate)
}
