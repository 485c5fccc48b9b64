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
//! Q5_0     blocks of 32: d (f16), h (u32), 16 bytes of nibbles; x_j = d·(n_j + 16·h_j − 16)
//! Q5_1     blocks of 32: d, m (f16), h (u32), nibbles;           x_j = d·(n_j + 16·h_j) + m
//!          (h_j = bit j of h)
//! K-quants super-blocks of 256 values in sub-blocks of 16 or 32, each with its own scale
//!          (and minimum), the scales themselves quantized against the super-block's d (and dmin):
//! Q2_K     scales[16] (4-bit scale | 4-bit min), q[64] (2 bits), d, dmin (f16);
//!          x = d·sc·q − dmin·m                                   (sub-blocks of 16)
//! Q3_K     hmask[32] (the third bit), q[64] (2 bits), scales[12] (16 × 6 bits), d (f16);
//!          x = d·(sc − 32)·(q − 4·[high bit clear])             (sub-blocks of 16)
//! Q4_K     d, dmin (f16), scales[12] (8 × 6-bit scale, 8 × 6-bit min), q[128] (4 bits);
//!          x = d·sc·q − dmin·m                                   (sub-blocks of 32)
//! Q5_K     as Q4_K, plus qh[32] (the fifth bit)                  (sub-blocks of 32)
//! Q6_K     ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (i8), d (f16);
//!          x = d·sc·(q − 32)                                     (sub-blocks of 16)
//! Q8_K     d (f32), q[256] (i8), bsums[16] (unused here);       x = d·q
//! other    parsed (name, shape), never decoded: an error naming the tensor and its type
//!          only when the proof reads that tensor
//! ```
//!
//! The products and sums are taken in f32, as ggml and gguf-py take them, so every value is
//! bit-exact with theirs (then widened to f64).
//!
//! Written by hand rather than taken from candle-core's `gguf_file` (which decodes the
//! K-quants too): candle brings a whole tensor framework (its gemm kernels, its own `half`,
//! `safetensors` and thread pools: minutes of compile time on the project's 2 cores for ~300
//! lines used), and it dequantizes a whole tensor into an f32 tensor, where the proof wants
//! single rows (an embedding table's few token rows) in f64. The other GGUF crates on
//! crates.io stop at the metadata. This reader bounds-checks every read of an untrusted
//! file, leaves tensors of types it does not decode alone until one is asked for, and
//! decodes one tensor (or one row range) on demand; its values are pinned against gguf-py's
//! `dequantize` on real tensors and on random blocks of every type (`tests/gguf.rs`).

use std::collections::HashMap;

/// A metadata value (arrays of strings and of numbers are kept: a tokenizer's tokens, merges,
/// scores and token types; other arrays only as their length).
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
    /// An array of strings.
    TextArray(Vec<String>),
    /// An array of numbers (any integer or float type), as f64.
    NumberArray(Vec<f64>),
    /// Any other array (of booleans): its length.
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

    /// The value as a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            MetadataValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as an array of strings.
    pub fn as_texts(&self) -> Option<&[String]> {
        match self {
            MetadataValue::TextArray(v) => Some(v),
            _ => None,
        }
    }

    /// The value as an array of numbers.
    pub fn as_numbers(&self) -> Option<&[f64]> {
        match self {
            MetadataValue::NumberArray(v) => Some(v),
            _ => None,
        }
    }
}

/// A tensor type this reader decodes (the ggml type codes are in [`TensorType::from_ggml`]).
#[allow(non_camel_case_types)]
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
    /// ggml type 6.
    Q5_0,
    /// ggml type 7.
    Q5_1,
    /// ggml type 10.
    Q2_K,
    /// ggml type 11.
    Q3_K,
    /// ggml type 12.
    Q4_K,
    /// ggml type 13.
    Q5_K,
    /// ggml type 14.
    Q6_K,
    /// ggml type 15.
    Q8_K,
}

/// Every type [`decode`] handles.
pub const DECODED_TYPES: [TensorType; 14] = [
    TensorType::F32,
    TensorType::F16,
    TensorType::BF16,
    TensorType::Q8_0,
    TensorType::Q4_0,
    TensorType::Q4_1,
    TensorType::Q5_0,
    TensorType::Q5_1,
    TensorType::Q2_K,
    TensorType::Q3_K,
    TensorType::Q4_K,
    TensorType::Q5_K,
    TensorType::Q6_K,
    TensorType::Q8_K,
];

/// Values per K-quant super-block.
const QK_K: usize = 256;

impl TensorType {
    /// The type of ggml type code `code`, if this reader decodes it.
    pub fn from_ggml(code: u32) -> Option<Self> {
        DECODED_TYPES.into_iter().find(|t| t.ggml_code() == code)
    }

    /// Its ggml type code.
    pub fn ggml_code(self) -> u32 {
        match self {
            TensorType::F32 => 0,
            TensorType::F16 => 1,
            TensorType::Q4_0 => 2,
            TensorType::Q4_1 => 3,
            TensorType::Q5_0 => 6,
            TensorType::Q5_1 => 7,
            TensorType::Q8_0 => 8,
            TensorType::Q2_K => 10,
            TensorType::Q3_K => 11,
            TensorType::Q4_K => 12,
            TensorType::Q5_K => 13,
            TensorType::Q6_K => 14,
            TensorType::Q8_K => 15,
            TensorType::BF16 => 30,
        }
    }

    /// Values per block and bytes per block.
    pub fn block(self) -> (usize, usize) {
        match self {
            TensorType::F32 => (1, 4),
            TensorType::F16 | TensorType::BF16 => (1, 2),
            TensorType::Q8_0 => (32, 34),
            TensorType::Q4_0 => (32, 18),
            TensorType::Q4_1 => (32, 20),
            TensorType::Q5_0 => (32, 22),
            TensorType::Q5_1 => (32, 24),
            TensorType::Q2_K => (QK_K, 84),
            TensorType::Q3_K => (QK_K, 110),
            TensorType::Q4_K => (QK_K, 144),
            TensorType::Q5_K => (QK_K, 176),
            TensorType::Q6_K => (QK_K, 210),
            TensorType::Q8_K => (QK_K, 292),
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
            TensorType::Q5_0 => "Q5_0",
            TensorType::Q5_1 => "Q5_1",
            TensorType::Q2_K => "Q2_K",
            TensorType::Q3_K => "Q3_K",
            TensorType::Q4_K => "Q4_K",
            TensorType::Q5_K => "Q5_K",
            TensorType::Q6_K => "Q6_K",
            TensorType::Q8_K => "Q8_K",
        }
    }
}

/// The names of [`DECODED_TYPES`], comma-separated (for messages).
pub fn decoded_type_names() -> String {
    DECODED_TYPES.map(TensorType::name).join(", ")
}

/// The name llama.cpp gives ggml type `code` (for messages about types this reader does
/// not decode), or `"type N"`.
pub fn ggml_type_name(code: u32) -> String {
    if let Some(t) = TensorType::from_ggml(code) {
        return t.name().to_string();
    }
    let name = match code {
        9 => "Q8_1",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        _ => return format!("type {code}"),
    };
    format!("{name} (type {code})")
}

/// Where a tensor's values are, when this reader decodes its type.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// A type [`decode`] handles, and the tensor's bytes' range in the file (checked to lie
    /// inside it).
    Decodable {
        /// Its type.
        kind: TensorType,
        /// Its bytes' range in the file.
        range: std::ops::Range<usize>,
    },
    /// A type this reader does not decode (its ggml code): harmless until the tensor is read.
    Unsupported {
        /// The ggml type code.
        ggml_type: u32,
    },
}

/// One tensor of a GGUF file: where its bytes are, decoded on demand.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufTensor {
    /// Its name in the file.
    pub name: String,
    /// `ne` (contiguous dimension first).
    pub dims: Vec<usize>,
    /// Its type and where its bytes are.
    pub data: TensorData,
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
                match item {
                    9 => return Err("nested metadata arrays are not GGUF".into()),
                    8 => {
                        // Each string takes at least its 8-byte length: the count is bounded
                        // by the bytes left before anything is allocated.
                        let n = self.count(8)?;
                        let mut texts = Vec::with_capacity(n);
                        for _ in 0..n {
                            texts.push(self.string()?);
                        }
                        MetadataValue::TextArray(texts)
                    }
                    7 => {
                        let n = self.count(1)?;
                        self.take(n)?;
                        MetadataValue::Array(n as u64)
                    }
                    _ => {
                        let width = match item {
                            0 | 1 => 1,
                            2 | 3 => 2,
                            4..=6 => 4,
                            10..=12 => 8,
                            other => return Err(format!("unknown metadata array type {other}")),
                        };
                        let n = self.count(width)?;
                        let mut numbers = Vec::with_capacity(n);
                        for _ in 0..n {
                            numbers.push(match self.value(item)? {
                                MetadataValue::Integer(v) => v as f64,
                                MetadataValue::Float(v) => v,
                                _ => return Err("a number array holds a non-number".into()),
                            });
                        }
                        MetadataValue::NumberArray(numbers)
                    }
                }
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
/// field past the end, a tensor (of a decoded type) outside the file or not whole blocks.
/// Tensors of other types are kept as [`TensorData::Unsupported`], not refused.
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
            tensors.push(GgufTensor { name, dims, data: TensorData::Unsupported { ggml_type: code } });
            continue;
        };
        // llama.cpp places every tensor at a multiple of the alignment: an offset between
        // would read the data shifted, as values that are not the model's.
        if offset % alignment as u64 != 0 {
            return Err(format!(
                "tensor {name}'s data offset {offset} is not a multiple of the file's alignment ({alignment} bytes)"
            ));
        }
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
        tensors.push(GgufTensor { name, dims, data: TensorData::Decodable { kind, range } });
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
    let mut out = Vec::with_capacity(count.div_ceil(per_block) * per_block);
    let mut values = [0f32; QK_K];
    for block in blocks {
        let values = &mut values[..per_block];
        decode_block(kind, block, values);
        out.extend(values.iter().map(|&v| f64::from(v)));
    }
    out.truncate(count);
    out
}

fn f16_at(block: &[u8], at: usize) -> f32 {
    f16([block[at], block[at + 1]])
}

/// One block of `kind` (exactly `kind.block().1` bytes) into its `kind.block().0` values,
/// in f32 with ggml's order of operations (`dequantize_row_*` in ggml-quants.c).
fn decode_block(kind: TensorType, block: &[u8], y: &mut [f32]) {
    match kind {
        TensorType::F32 => y[0] = f32::from_le_bytes([block[0], block[1], block[2], block[3]]),
        TensorType::F16 => y[0] = f16_at(block, 0),
        TensorType::BF16 => y[0] = half::bf16::from_le_bytes([block[0], block[1]]).to_f32(),
        TensorType::Q8_0 => {
            let d = f16_at(block, 0);
            for (y, &q) in y.iter_mut().zip(&block[2..34]) {
                *y = d * f32::from(q as i8);
            }
        }
        TensorType::Q4_0 | TensorType::Q4_1 => {
            let d = f16_at(block, 0);
            let (m, nibbles) = match kind {
                TensorType::Q4_1 => (f16_at(block, 2), &block[4..20]),
                _ => (0.0, &block[2..18]),
            };
            let value = |n: u8| match kind {
                TensorType::Q4_1 => d * f32::from(n) + m,
                _ => d * f32::from(i16::from(n) - 8),
            };
            for (j, &b) in nibbles.iter().enumerate() {
                y[j] = value(b & 0x0F);
                y[j + 16] = value(b >> 4);
            }
        }
        TensorType::Q5_0 | TensorType::Q5_1 => {
            let d = f16_at(block, 0);
            let (m, rest) = match kind {
                TensorType::Q5_1 => (f16_at(block, 2), &block[4..24]),
                _ => (0.0, &block[2..22]),
            };
            let high = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            for (j, &b) in rest[4..20].iter().enumerate() {
                let x0 = (b & 0x0F) | (((high >> j) << 4) & 0x10) as u8;
                let x1 = (b >> 4) | ((high >> (j + 12)) & 0x10) as u8;
                (y[j], y[j + 16]) = match kind {
                    TensorType::Q5_1 => (f32::from(x0) * d + m, f32::from(x1) * d + m),
                    _ => (f32::from(i16::from(x0) - 16) * d, f32::from(i16::from(x1) - 16) * d),
                };
            }
        }
        TensorType::Q2_K => {
            let (scales, quants) = (&block[0..16], &block[16..80]);
            let (d, dmin) = (f16_at(block, 80), f16_at(block, 82));
            let mut at = 0;
            for (half_block, q) in quants.chunks_exact(32).enumerate() {
                for (j, shift) in [0, 2, 4, 6].into_iter().enumerate() {
                    for part in 0..2 {
                        let sc = scales[half_block * 8 + j * 2 + part];
                        let (dl, ml) = (d * f32::from(sc & 0x0F), dmin * f32::from(sc >> 4));
                        for &b in &q[part * 16..part * 16 + 16] {
                            y[at] = dl * f32::from((b >> shift) & 3) - ml;
                            at += 1;
                        }
                    }
                }
            }
        }
        TensorType::Q3_K => {
            let (high_mask, quants) = (&block[0..32], &block[32..96]);
            let scales = q3_k_scales(&block[96..108]);
            let d = f16_at(block, 108);
            let mut at = 0;
            for (half_block, q) in quants.chunks_exact(32).enumerate() {
                for (j, shift) in [0, 2, 4, 6].into_iter().enumerate() {
                    let bit = 1u8 << (half_block * 4 + j);
                    for part in 0..2 {
                        let dl = d * f32::from(i16::from(scales[half_block * 8 + j * 2 + part]) - 32);
                        for l in part * 16..part * 16 + 16 {
                            let low = i16::from((q[l] >> shift) & 3);
                            let value = if high_mask[l] & bit != 0 { low } else { low - 4 };
                            y[at] = dl * f32::from(value);
                            at += 1;
                        }
                    }
                }
            }
        }
        TensorType::Q4_K | TensorType::Q5_K => {
            let (d, dmin, scales) = (f16_at(block, 0), f16_at(block, 2), &block[4..16]);
            let (high, quants) = match kind {
                TensorType::Q5_K => (Some(&block[16..48]), &block[48..176]),
                _ => (None, &block[16..144]),
            };
            for (j, q) in quants.chunks_exact(32).enumerate() {
                for part in 0..2 {
                    let (sc, m) = k4_scale_min(2 * j + part, scales);
                    let (d1, m1) = (d * f32::from(sc), dmin * f32::from(m));
                    let bit = 1u8 << (2 * j + part);
                    for l in 0..32 {
                        let low = if part == 0 { q[l] & 0x0F } else { q[l] >> 4 };
                        let fifth = high.map_or(0, |h| if h[l] & bit != 0 { 16 } else { 0 });
                        y[64 * j + 32 * part + l] = d1 * f32::from(low + fifth) - m1;
                    }
                }
            }
        }
        TensorType::Q6_K => {
            let (low, high, scales) = (&block[0..128], &block[128..192], &block[192..208]);
            let d = f16_at(block, 208);
            for n in 0..2 {
                let (ql, qh, sc) = (&low[64 * n..], &high[32 * n..], &scales[8 * n..]);
                for l in 0..32 {
                    let is = l / 16;
                    let q = [
                        (ql[l] & 0x0F) | ((qh[l] & 3) << 4),
                        (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4),
                        (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                        (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                    ];
                    for (k, q) in q.into_iter().enumerate() {
                        let scale = f32::from(sc[is + 2 * k] as i8);
                        y[128 * n + 32 * k + l] = d * scale * f32::from(i16::from(q) - 32);
                    }
                }
            }
        }
        TensorType::Q8_K => {
            let d = f32::from_le_bytes([block[0], block[1], block[2], block[3]]);
            for (y, &q) in y.iter_mut().zip(&block[4..260]) {
                *y = d * f32::from(q as i8);
            }
        }
    }
}

/// Q4_K's and Q5_K's `get_scale_min_k4`: sub-block `j`'s 6-bit scale and minimum, packed in
/// 12 bytes (the first four sub-blocks' in the low 6 bits of bytes 0–7, the last four's low
/// 4 bits in bytes 8–11 and high 2 bits in the top bits of bytes 0–7).
fn k4_scale_min(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// Q3_K's sixteen 6-bit scales (0..63, used as `sc − 32`) from their 12 packed bytes: the low
/// 4 bits of scale `i` in the nibbles of bytes 0–7 (`i < 8`: low nibble of byte `i`; else the
/// high nibble of byte `i − 8`), the high 2 bits in bytes 8–11 (bits `2·(i / 4)` of byte
/// `8 + i mod 4`), as ggml unpacks them with its `kmask` words.
fn q3_k_scales(packed: &[u8]) -> [u8; 16] {
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let word = |i: usize| {
        u32::from_le_bytes([packed[4 * i], packed[4 * i + 1], packed[4 * i + 2], packed[4 * i + 3]])
    };
    let (a0, a1, tmp) = (word(0), word(1), word(2));
    let words = [
        (a0 & KMASK2) | ((tmp & KMASK1) << 4),
        (a1 & KMASK2) | (((tmp >> 2) & KMASK1) << 4),
        ((a0 >> 4) & KMASK2) | (((tmp >> 4) & KMASK1) << 4),
        ((a1 >> 4) & KMASK2) | (((tmp >> 6) & KMASK1) << 4),
    ];
    let mut out = [0u8; 16];
    for (i, w) in words.into_iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}
