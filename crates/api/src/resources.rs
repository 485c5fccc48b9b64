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
//! layer 0 (8.9 M, gated n = 1 536) at s = 16: 0.88 (1.04), s = 64: 0.99 (1.13). SmolLM2's
//! layer 3 at 8 tokens from a hidden state peaked at 1.12 GB over an estimate of 1.10 GB (a
//! review, 2026-11-27): [`FIXED_BYTES`] went from 100 to 130 MiB, adding 0.03 GiB to every
//! estimate above.

use crate::attention_layer::Hiding;
use crate::error::{Error, Result};
use zkmha_attention::AttentionShape;
use zkmha_attention::model_layer::ModelShape;

/// A proof's cost, estimated from its shape before proving: the prover's peak memory and its
/// time on the machine the rates were measured on (2 cores, `--release`; see [`TimeRates`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The prover's peak memory, in bytes.
    pub memory_bytes: u64,
    /// Seconds to prove on the measured 2-core machine (fewer with more cores).
    pub seconds: f64,
}

impl Estimate {
    /// The estimate in words: `estimated about 26 s, 1.4 GiB on 2 cores`.
    pub fn describe(&self) -> String {
        format!(
            "estimated {}, {} on 2 cores",
            describe_seconds(self.seconds),
            describe_bytes(self.memory_bytes)
        )
    }

    /// The sum of two estimates (layers proven one after another: the times add, the peak is
    /// the larger).
    pub fn then(self, other: Estimate) -> Estimate {
        Estimate {
            memory_bytes: self.memory_bytes.max(other.memory_bytes),
            seconds: self.seconds + other.seconds,
        }
    }

    /// As JSON: `{"memory_bytes": …, "seconds": …}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "memory_bytes": self.memory_bytes, "seconds": self.seconds })
    }
}

/// `512 MiB`, `3.1 GiB`: a size in the unit that suits it.
pub fn describe_bytes(bytes: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    if bytes < 1 << 30 {
        format!("{:.0} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.1} GiB", bytes as f64 / (1024.0 * MIB))
    }
}

/// `under a second`, `about 12 s`, `about 3.4 min`, `about 1.2 h`.
fn describe_seconds(seconds: f64) -> String {
    if seconds < 1.0 {
        "under a second".to_string()
    } else if seconds < 120.0 {
        format!("about {seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("about {:.1} min", seconds / 60.0)
    } else {
        format!("about {:.1} h", seconds / 3600.0)
    }
}

/// Seconds of proving per unit of a layer's shape, fitted (least squares on the relative
/// error) to the prover times of `zkmha prove --json` measured on 2 cores (AMD EPYC,
/// `--release`, 2026-11-27; docs/BENCHMARKS.md, "Estimates from the shape"): seven attention
/// layers (within 5 %); tiny model layers for the fixed costs; then layer 0 of
/// all-MiniLM-L6-v2, SmolLM2-135M and the GPT-2-small-shaped model at 16 to 512 tokens
/// (within 6 %). **Not refit since the witnesses' products became exact f64 products
/// (2026-11-29)**: a model layer's estimate is now high, most for large layers (GPT-2-small
/// at 512 tokens: 36.9 s estimated, 19.9 s measured; docs/BENCHMARKS.md).
///
/// ```text
/// t = fixed + score·ĥŝ² + input·ŝĥ(2m̂ + m̂_v)                               an attention layer
///   + block + tables·[a norm or an MLP] + weight·(padded weight entries)
///   + width·ŝd̂ + mlp·ŝn̂                                                    a model layer adds
///   + width·(ŝd̂·[output norms] + 2ŝĥm̂·[a QK-norm])                         Gemma's norms add
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeRates {
    /// Seconds that do not grow with the shape.
    pub fixed: f64,
    /// Seconds per score entry `ĥ·ŝ²`.
    pub score: f64,
    /// Seconds per entry of Q, K and V.
    pub input: f64,
    /// Seconds a model layer adds whatever its size (projections, residual).
    pub block: f64,
    /// Seconds a model layer with a proven norm or MLP adds for their lookup tables.
    pub tables: f64,
    /// Seconds per padded weight entry (a model layer).
    pub weight: f64,
    /// Seconds per entry `ŝ·d̂` of a model layer's hidden state (projections, norms, residual).
    pub width: f64,
    /// Seconds per entry `ŝ·n̂` of an MLP's hidden width (dense or gated alike).
    pub mlp: f64,
}

/// The plain prover's rates.
pub const PLAIN_RATES: TimeRates = TimeRates {
    fixed: 0.16,
    score: 1.36e-6,
    input: 6.83e-7,
    block: 0.13,
    tables: 0.80,
    weight: 1.55e-7,
    width: 8.26e-6,
    mlp: 1.02e-5,
};
/// The zero-knowledge prover's rates.
pub const ZERO_KNOWLEDGE_RATES: TimeRates = TimeRates {
    fixed: 0.379,
    score: 1.37e-6,
    input: 7.01e-7,
    block: 0.28,
    tables: 1.55,
    weight: 1.97e-7,
    width: 1.07e-5,
    mlp: 9.44e-6,
};

impl TimeRates {
    /// The rates of a prover that hides (or not).
    pub fn of(hiding: Hiding) -> TimeRates {
        match hiding {
            Hiding::Plain => PLAIN_RATES,
            Hiding::ZeroKnowledge => ZERO_KNOWLEDGE_RATES,
        }
    }
}

/// The entries of Q, K and V `ŝ·ĥ·(2m̂ + m̂_v)`, padded.
fn input_entries(shape: &AttentionShape) -> u64 {
    let widths = padded(shape.head_dim).saturating_mul(2).saturating_add(padded(shape.value_head_dim));
    padded(shape.seq_len).saturating_mul(padded(shape.heads)).saturating_mul(widths)
}

/// The entries of a model layer's MLP activations `ŝ·n̂` (twice for a gated MLP).
fn mlp_entries(shape: &ModelShape) -> u64 {
    shape.mlp.map_or(0, |mlp| {
        let tensors = if mlp.params.gate.is_some() { 2 } else { 1 };
        padded(shape.attention.seq_len).saturating_mul(padded(mlp.params.hidden)).saturating_mul(tensors)
    })
}

/// The estimated time and memory of proving an attention layer of `shape`.
///
/// ```
/// use zkmha_api::attention_layer::Hiding;
/// let shape = zkmha_attention::AttentionShape::new(512, 12, 64, 64)?;
/// let plain = zkmha_api::resources::estimate_layer(&shape, Hiding::Plain);
/// let hidden = zkmha_api::resources::estimate_layer(&shape, Hiding::ZeroKnowledge);
/// assert!(plain.seconds < hidden.seconds && plain.memory_bytes == hidden.memory_bytes);
/// # Ok::<(), zkmha_attention::AttentionError>(())
/// ```
pub fn estimate_layer(shape: &AttentionShape, hiding: Hiding) -> Estimate {
    let rates = TimeRates::of(hiding);
    let seconds = rates.fixed
        + rates.score * score_entries(shape.heads, shape.seq_len) as f64
        + rates.input * input_entries(shape) as f64;
    Estimate { memory_bytes: estimate_layer_memory(shape), seconds }
}

/// The estimated time and memory of proving a model layer of `shape` (the attention block,
/// its weights, its MLP).
pub fn estimate_model_layer(shape: &ModelShape, hiding: Hiding) -> Estimate {
    let rates = TimeRates::of(hiding);
    let attention = estimate_layer(&shape.attention, hiding);
    let tokens = padded(shape.attention.seq_len);
    // Gemma's extra norms are each a norm step over the hidden state (on each half's output)
    // or over the query and key heads (the QK-norm): counted as hidden-state entries.
    let output_norms =
        [shape.output_norms.attention, shape.output_norms.feed_forward].iter().flatten().count();
    let head_entries = tokens
        .saturating_mul(padded(shape.attention.heads))
        .saturating_mul(padded(shape.attention.head_dim))
        .saturating_mul(2);
    let hidden = tokens
        .saturating_mul(padded(shape.model_width))
        .saturating_mul(1 + output_norms as u64)
        .saturating_add(if shape.query_key_norms.is_some() { head_entries } else { 0 });
    let mlp = shape.mlp.map_or(0, |mlp| tokens.saturating_mul(padded(mlp.params.hidden)));
    let tables = if shape.norm.is_some() || shape.mlp.is_some() { rates.tables } else { 0.0 };
    let seconds = attention.seconds
        + rates.block
        + tables
        + rates.weight * shape.padded_weight_entries() as f64
        + rates.width * hidden as f64
        + rates.mlp * mlp as f64;
    Estimate { memory_bytes: estimate_model_layer_memory(shape), seconds }
}

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
pub const FIXED_BYTES: u64 = 130 << 20;

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
    FIXED_BYTES
        .saturating_add(entries.saturating_mul(per_entry))
        .saturating_add(input_entries(shape).saturating_mul(BYTES_PER_INPUT_ENTRY))
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
///     output_norms: Default::default(),
///     query_key_norms: None,
///     post_norm: None,
/// };
/// let gigabytes = zkmha_api::resources::estimate_model_layer_memory(&shape) as f64 / 1e9;
/// assert!((1.5..2.5).contains(&gigabytes), "{gigabytes}");
/// # Ok::<(), zkmha_attention::AttentionError>(())
/// ```
pub fn estimate_model_layer_memory(shape: &ModelShape) -> u64 {
    estimate_layer_memory(&shape.attention)
        .saturating_add(shape.padded_weight_entries().saturating_mul(BYTES_PER_WEIGHT_ENTRY))
        .saturating_add(mlp_entries(shape).saturating_mul(BYTES_PER_MLP_ENTRY))
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
/// assert!(zkmha_api::resources::parse_memory_size("0G").is_err());
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
    if value == 0 {
        return Err(format!("'{text}' is no memory: write e.g. 20G, 512M or a number of bytes"));
    }
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
    let Some((allowed, limit)) = memory_limit(limit) else { return Ok(estimate) };
    if estimate > allowed {
        return Err(Error::MemoryEstimate { estimate, allowed, limit, entries });
    }
    Ok(estimate)
}

/// What limits the memory a proof may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryLimit {
    /// `--max-memory` (`max_memory` in the library and Python).
    Given,
    /// The machine's memory (`MemTotal`).
    Machine,
    /// The control group's `memory.max` (a container's limit).
    ControlGroup,
    /// The address space left under `ulimit -v` (`RLIMIT_AS`), what the process has mapped
    /// already taken off.
    AddressSpace,
}

impl MemoryLimit {
    /// The limit in words, before its size: "this machine's".
    pub fn describe(self) -> &'static str {
        match self {
            MemoryLimit::Given => "the --max-memory of",
            MemoryLimit::Machine => "this machine's",
            MemoryLimit::ControlGroup => "the limit of this process's control group (memory.max) of",
            MemoryLimit::AddressSpace => "the address space this process's limit (ulimit -v) leaves,",
        }
    }

    /// What to do about it.
    pub fn advice(self) -> &'static str {
        match self {
            MemoryLimit::Given => "or raise --max-memory",
            MemoryLimit::Machine => "or pass --max-memory SIZE to try anyway",
            MemoryLimit::ControlGroup => "or run it in a control group (container) with more memory",
            MemoryLimit::AddressSpace => "or raise the limit (ulimit -v)",
        }
    }
}

/// The memory a proof may use and what limits it: the smallest of `given` (or, without it,
/// the machine's memory), the control group's limit and the address space `ulimit -v` leaves
/// — the last two hard limits that no `--max-memory` lifts. `None` where the system says
/// none of them.
///
/// ```
/// use zkmha_api::resources::{MemoryLimit, memory_limit};
/// let (allowed, limit) = memory_limit(Some(1 << 20)).unwrap();
/// assert!(allowed <= 1 << 20);
/// assert!(limit == MemoryLimit::Given || allowed < 1 << 20);
/// ```
pub fn memory_limit(given: Option<u64>) -> Option<(u64, MemoryLimit)> {
    let soft = match given {
        Some(bytes) => Some((bytes, MemoryLimit::Given)),
        None => machine_memory().map(|bytes| (bytes, MemoryLimit::Machine)),
    };
    [
        soft,
        control_group_memory().map(|b| (b, MemoryLimit::ControlGroup)),
        address_space_left().map(|b| (b, MemoryLimit::AddressSpace)),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|(bytes, _)| *bytes)
}

/// The control group's memory limit in bytes (cgroup v2 `memory.max` of this process's
/// group, or v1's `memory.limit_in_bytes`); `None` for "max" or where there is none.
pub fn control_group_memory() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let group = |prefix: &str| {
        groups.lines().find_map(|line| {
            line.split_once(prefix).map(|(_, path)| path.trim().trim_end_matches('/').to_string())
        })
    };
    let mut candidates = Vec::new();
    if let Some(path) = group("0::") {
        candidates.push(format!("/sys/fs/cgroup{path}/memory.max"));
    }
    candidates.push("/sys/fs/cgroup/memory.max".to_string());
    if let Some(path) = group(":memory:") {
        candidates.push(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"));
    }
    candidates.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".to_string());
    let limit = candidates
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())?;
    // v1 writes "no limit" as a number near 2^63.
    (limit < 1 << 60).then_some(limit)
}

/// The address space left under the soft `RLIMIT_AS` (`ulimit -v`, from /proc/self/limits),
/// less what the process has mapped already (`VmSize`); `None` when unlimited or unknown.
pub fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|line| line.starts_with("Max address space"))?;
    let soft: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped = status
        .lines()
        .find(|line| line.starts_with("VmSize:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kilobytes| kilobytes.parse::<u64>().ok())
        .map_or(0, |kilobytes| kilobytes.saturating_mul(1024));
    Some(soft.saturating_sub(mapped))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn layer(seq: usize, heads: usize, head_dim: usize, hiding: Hiding) -> Estimate {
        estimate_layer(&AttentionShape::new(seq, heads, head_dim, head_dim).unwrap(), hiding)
    }

    #[test]
    fn estimates_grow_with_every_dimension_and_zero_knowledge_costs_more() {
        for hiding in [Hiding::Plain, Hiding::ZeroKnowledge] {
            let base = layer(128, 4, 64, hiding);
            for bigger in [layer(256, 4, 64, hiding), layer(128, 8, 64, hiding), layer(128, 4, 128, hiding)] {
                assert!(
                    bigger.seconds > base.seconds && bigger.memory_bytes > base.memory_bytes,
                    "{bigger:?}"
                );
            }
        }
        let (plain, hidden) = (layer(512, 12, 64, Hiding::Plain), layer(512, 12, 64, Hiding::ZeroKnowledge));
        assert!(hidden.seconds > plain.seconds);
        assert_eq!(hidden.memory_bytes, plain.memory_bytes);
    }

    #[test]
    fn layers_one_after_another_add_their_times_and_keep_the_larger_peak() {
        let (a, b) = (layer(64, 2, 64, Hiding::Plain), layer(512, 12, 64, Hiding::Plain));
        let both = a.then(b);
        assert_eq!(both.memory_bytes, b.memory_bytes);
        assert!((both.seconds - (a.seconds + b.seconds)).abs() < 1e-12);
    }

    #[test]
    fn the_estimate_in_words_names_its_unit() {
        let words = |seconds| Estimate { memory_bytes: 3 << 29, seconds }.describe();
        assert_eq!(describe_bytes(5 << 20), "5 MiB");
        assert_eq!(words(0.2), "estimated under a second, 1.5 GiB on 2 cores");
        assert_eq!(words(42.0), "estimated about 42 s, 1.5 GiB on 2 cores");
        assert_eq!(words(600.0), "estimated about 10.0 min, 1.5 GiB on 2 cores");
        assert_eq!(words(9000.0), "estimated about 2.5 h, 1.5 GiB on 2 cores");
    }
}
