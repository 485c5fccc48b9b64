//! GGUF model files (llama.cpp's format): the header, the metadata, the tensor table, and
//! the exact dequantization of the tensor types the attention layers use.
//!
//! ```text
//! file     "GGUF", version u32 (2 or 3), tensor count u64, metadata count u64,
//!          metadata (key string, type u32, value)*, tensor infos (name string, n_dims u32,
//!          ne u64 × n_dims, type u32, offset u64)*, padding to general.alignment (32),
//!          tensor data (each at data start + offset); little-endian; string = u64 length + UTF-8
//! layout   ne[0] is the contiguous dimension: a weight with ne = [in, out] is stored as `out`
//!          rows of `in` values, i.e. row-major [out, in]
//! F32      x
//! F16      x = f16 (BF16 likewise)
//! Q8_0     blocks of 32: d (f16), q_0..q_31 (i8);          x_j = d·q_j
//! Q4_0     blocks of 32: d (f16), 16 bytes of nibbles;     x_j = d·(n_j − 8)
//! Q4_1     blocks of 32: d, m (f16), 16 bytes of nibbles;  x_j = d·n_j + m
//!          (n_j = low nibble of byte j for j < 16, high nibble of byte j − 16 otherwise)
//! ```
//!
//! The products and sums are taken in f32, as ggml and gguf-py take them, so every value is
//! bit-exact with theirs (then widened to f64).
//!
//! Written by hand: the GGUF crates on crates.io either stop at the metadata (no
//! dequantization) or come inside a whole tensor framework (candle); this reader is small,
//! bounds-checks every read of an untrusted file, and decodes one tensor (or one row range)
//! on demand.

use std::collections::HashMap;

/// A metadata value (arrays are kept only as their length, except arrays of numbers).
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataValue {
    /// Any integer type.
    Integer(i128),
    /// `f32` or `f64`.
    Float(f64),
    /// `bool`.
    Bool(bool),
    /// A string.
    Text(String),
    /// An array (its length; the values are not needed here).
    Array(u64),
}

impl MetadataValue {
    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_usize(&self) -> Option<usize> {
        match self {
            MetadataValue::Integer(v) => usize::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The value as a float (integers convert).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            MetadataValue::Float(v) => Some(*v),
            MetadataValue::Integer(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The value as text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            MetadataValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// A tensor type this reader decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorType {
    /// ggml type 0.
    F32,
    /// ggml type 1.
    F16,
    /// ggml type 30.
    BF16,
    /// ggml type 8.
    Q8_0,
    /// ggml type 2.
    Q4_0,
    /// ggml type 3.
    Q4_1,
}

impl TensorType {
    fn from_ggml(code: u32) -> Option<Self> {
        Some(match code {
            0 => TensorType::F32,
            1 => TensorType::F16,
            30 => TensorType::BF16,
            8 => TensorType::Q8_0,
            2 => TensorType::Q4_0,
            3 => TensorType::Q4_1,
            _ => return None,
        })
    }

    /// Values per block and bytes per block.
    pub fn block(self) -> (usize, usize) {
        match self {
            TensorType::F32 => (1, 4),
            TensorType::F16 | TensorType::BF16 => (1, 2),
            TensorType::Q8_0 => (32, 34),
            TensorType::Q4_0 => (32, 18),
            TensorType::Q4_1 => (32, 20),
        }
    }

    /// The type's name as llama.cpp prints it.
    pub fn name(self) -> &'static str {
        match self {
            TensorType::F32 => "F32",
            TensorType::F16 => "F16",
            TensorType::BF16 => "BF16",
            TensorType::Q8_0 => "Q8_0",
            TensorType::Q4_0 => "Q4_0",
            TensorType::Q4_1 => "Q4_1",
        }
    }
}

/// One tensor of a GGUF file: where its bytes are, decoded on demand.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufTensor {
    /// Its name in the file.
    pub name: String,
    /// `ne` (contiguous dimension first).
    pub dims: Vec<usize>,
    /// Its type.
    pub kind: TensorType,
    /// Its bytes' range in the file.
    pub range: std::ops::Range<usize>,
}

impl GgufTensor {
    /// The number of values.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether it holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row-major shape (`ne` reversed: `[out, in]` for a weight).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }
}

/// A parsed GGUF file (the bytes stay with the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct Gguf {
    /// The format version (2 or 3).
    pub version: u32,
    /// The metadata.
    pub metadata: HashMap<String, MetadataValue>,
    /// The tensors, in file order.
    pub tensors: Vec<GgufTensor>,
}

/// Bounds-checked little-endian reads of an untrusted buffer.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
            format!("the file ends at byte {} inside a field of {n} bytes at {}", self.bytes.len(), self.at)
        })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A count of items of at least `item_bytes` each: never more than the bytes left allow
    /// (a corrupt count cannot make the reader allocate).
    fn count(&mut self, item_bytes: usize) -> Result<usize, String> {
        let n = self.u64()?;
        let left = (self.bytes.len() - self.at) / item_bytes.max(1);
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= left)
            .ok_or_else(|| format!("a count of {n} items runs past the file's end"))
    }

    fn string(&mut self) -> Result<String, String> {
        let n = self.count(1)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
    }

    fn value(&mut self, kind: u32) -> Result<MetadataValue, String> {
        Ok(match kind {
            0 => MetadataValue::Integer(i128::from(self.array::<1>()?[0])),
            1 => MetadataValue::Integer(i128::from(self.array::<1>()?[0] as i8)),
            2 => MetadataValue::Integer(i128::from(u16::from_le_bytes(self.array()?))),
            3 => MetadataValue::Integer(i128::from(i16::from_le_bytes(self.array()?))),
            4 => MetadataValue::Integer(i128::from(self.u32()?)),
            5 => MetadataValue::Integer(i128::from(i32::from_le_bytes(self.array()?))),
            6 => MetadataValue::Float(f64::from(f32::from_le_bytes(self.array()?))),
            7 => MetadataValue::Bool(self.array::<1>()?[0] != 0),
            8 => MetadataValue::Text(self.string()?),
            9 => {
                let item = self.u32()?;
                if item == 9 {
                    return Err("nested metadata arrays are not GGUF".into());
                }
                let n = self.count(1)?;
                for _ in 0..n {
                    self.value(item)?;
                }
                MetadataValue::Array(n as u64)
            }
            10 => MetadataValue::Integer(i128::from(self.u64()?)),
            11 => MetadataValue::Integer(i128::from(i64::from_le_bytes(self.array()?))),
            12 => MetadataValue::Float(f64::from_le_bytes(self.array()?)),
            other => return Err(format!("unknown metadata type {other}")),
        })
    }
}

/// Whether `bytes` start like a GGUF file.
pub fn is_gguf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"GGUF")
}

/// Parses a GGUF file's header, metadata and tensor table, and checks that every tensor's
/// bytes lie inside the file.
///
/// # Errors
/// One sentence (without the path) saying what is wrong: not GGUF, an unsupported version, a
/// field past the end, an unknown tensor type (named), a tensor outside the file.
pub fn parse(bytes: &[u8]) -> Result<Gguf, String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"GGUF" {
        return Err("it does not start with the GGUF magic".into());
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(format!("GGUF version {version} is not supported (2 and 3 are)"));
    }
    let tensor_count = r.count(24)?;
    let metadata_count = r.count(12)?;
    let mut metadata = HashMap::with_capacity(metadata_count);
    for _ in 0..metadata_count {
        let key = r.string()?;
        let kind = r.u32()?;
        let value = r.value(kind)?;
        metadata.insert(key, value);
    }
    let mut infos = Vec::with_capacity(tensor_count);
    for _ in 0..tensor_count {
        let name = r.string()?;
        let n_dims = r.u32()? as usize;
        if n_dims == 0 || n_dims > 4 {
            return Err(format!("tensor {name} has {n_dims} dimensions"));
        }
        let mut dims = Vec::with_capacity(n_dims);
        for _ in 0..n_dims {
            let n = r.u64()?;
            dims.push(usize::try_from(n).map_err(|_| format!("tensor {name} is too large"))?);
        }
        let code = r.u32()?;
        let offset = r.u64()?;
        infos.push((name, dims, code, offset));
    }
    let alignment = metadata.get("general.alignment").and_then(MetadataValue::as_usize).unwrap_or(32);
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(format!("general.alignment {alignment} is not a power of two"));
    }
    let data_start = r.at.div_ceil(alignment) * alignment;
    let mut tensors = Vec::with_capacity(infos.len());
    for (name, dims, code, offset) in infos {
        let Some(kind) = TensorType::from_ggml(code) else {
            return Err(format!(
                "tensor {name} has ggml type {code}, which this reader does not decode (F32, F16, BF16, Q8_0, Q4_0, Q4_1)"
            ));
        };
        let (per_block, block_bytes) = kind.block();
        let count = dims.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
        let range = count
            .filter(|&n| dims.first().is_some_and(|&row| row % per_block == 0) && n % per_block == 0)
            .and_then(|n| (n / per_block).checked_mul(block_bytes))
            .and_then(|size| {
                let start = usize::try_from(offset).ok()?.checked_add(data_start)?;
                Some(start..start.checked_add(size)?)
            })
            .filter(|range| range.end <= bytes.len())
            .ok_or_else(|| {
                format!("tensor {name}'s data ({dims:?} of {}) lies outside the file", kind.name())
            })?;
        tensors.push(GgufTensor { name, dims, kind, range });
    }
    Ok(Gguf { version, metadata, tensors })
}

fn f16(bytes: [u8; 2]) -> f32 {
    half::f16::from_le_bytes(bytes).to_f32()
}

/// Decodes `count` values of a `kind` tensor from `bytes`, its first value at `first` (for
/// block types both a multiple of the block size); `bytes` is the whole tensor.
///
/// # Panics
/// Never for ranges [`parse`] produced and values inside them: callers check `first` and
/// `count` against the tensor's length first.
pub fn decode(kind: TensorType, bytes: &[u8], first: usize, count: usize) -> Vec<f64> {
    let (per_block, block_bytes) = kind.block();
    let blocks = bytes.chunks_exact(block_bytes).skip(first / per_block).take(count.div_ceil(per_block));
    let mut out = Vec::with_capacity(count);
    for block in blocks {
        match kind {
            TensorType::F32 => {
                out.push(f64::from(f32::from_le_bytes([block[0], block[1], block[2], block[3]])))
            }
            TensorType::F16 => out.push(f64::from(f16([block[0], block[1]]))),
            TensorType::BF16 => out.push(half::bf16::from_le_bytes([block[0], block[1]]).to_f64()),
            TensorType::Q8_0 => {
                let d = f16([block[0], block[1]]);
                out.extend(block[2..].iter().map(|&q| f64::from(d * f32::from(q as i8))));
            }
            TensorType::Q4_0 | TensorType::Q4_1 => {
                let d = f16([block[0], block[1]]);
                let (m, nibbles) = match kind {
                    TensorType::Q4_1 => (f16([block[2], block[3]]), &block[4..]),
                    _ => (0.0, &block[2..]),
                };
                let value = |n: u8| -> f64 {
                    match kind {
                        TensorType::Q4_1 => f64::from(d * f32::from(n) + m),
                        _ => f64::from(d * f32::from(i16::from(n) - 8)),
                    }
                };
                out.extend(nibbles.iter().map(|&b| value(b & 0x0F)));
                out.extend(nibbles.iter().map(|&b| value(b >> 4)));
            }
        }
    }
    out.truncate(count);
    out
}
