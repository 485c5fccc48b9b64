//! `zkmha prove --input FILE` for an attention layer: the user's own Q, K, V.
//!
//! ```text
//! safetensors  three 2-D integer tensors q, k, v (I8, I16, I32 or I64): q and k s × h·m,
//!              v s × h·m_v
//! .npy         one 3-D integer array (3, s, h·m) in C order: q, k, v (m_v = m)
//! ```
//!
//! The shape comes from the file (s) and from `--heads`, `--head-dim`, `--value-head-dim`
//! (the widths must match); the values must lie in the range the layer proves
//! (`zkmha_attention::INPUT_BOUND_BITS`). Floats are refused: quantize them first.

use anyhow::{Context, Result, anyhow, bail};
use std::path::Path;
use zkmha_attention::{AttentionInputs, AttentionShape};

/// One integer matrix: its shape and values.
struct Matrix {
    shape: Vec<usize>,
    values: Vec<i64>,
}

/// Reads Q, K, V for the layer from `path` and checks them against the options.
///
/// # Errors
/// An unreadable or malformed file, float or unsupported values, shapes that do not match the
/// options, or values out of range (one sentence each).
pub fn read_attention_inputs(
    path: &Path,
    heads: usize,
    head_dim: usize,
    value_head_dim: usize,
    seq: Option<usize>,
) -> Result<(AttentionShape, AttentionInputs)> {
    let bytes = std::fs::read(path).with_context(|| format!("could not read {}", path.display()))?;
    let [q, k, v] = if bytes.starts_with(b"\x93NUMPY") {
        read_npy(path, &bytes)?
    } else {
        read_safetensors(path, &bytes)?
    };
    let rows = match q.shape.as_slice() {
        [rows, _] => *rows,
        other => bail!("{}: q has shape {other:?}; it must be (tokens × heads·head width)", path.display()),
    };
    if let Some(seq) = seq
        && seq != rows
    {
        bail!("--seq {seq} does not match the input's {rows} tokens (leave --seq out with --input)");
    }
    for (name, matrix, width) in [("q", &q, head_dim), ("k", &k, head_dim), ("v", &v, value_head_dim)] {
        if matrix.shape != [rows, heads * width] {
            bail!(
                "{}: {name} has shape {:?}, but {rows} tokens with --heads {heads} × width {width} need [{rows}, {}]",
                path.display(),
                matrix.shape,
                heads * width
            );
        }
    }
    let shape = AttentionShape::new(rows, heads, head_dim, value_head_dim)?;
    let inputs = AttentionInputs { queries: q.values, keys: k.values, values: v.values };
    inputs.validate(&shape).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok((shape, inputs))
}

fn read_npy(path: &Path, bytes: &[u8]) -> Result<[Matrix; 3]> {
    let npy = npyz::NpyFile::new(bytes)
        .map_err(|e| anyhow!("{} {}", path.display(), zkmha_api::files::npy_header_problem(&e)))?;
    if npy.order() != npyz::Order::C {
        bail!("{} is stored in Fortran order; write it in C order (numpy's default)", path.display());
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&n| n as usize).collect();
    if let npyz::DType::Plain(t) = npy.dtype() {
        let elements = npy.shape().iter().try_fold(1u64, |n, &m| n.checked_mul(m)).unwrap_or(u64::MAX);
        zkmha_api::files::check_npy_length(bytes, elements, t.size_field())
            .map_err(|problem| anyhow!("{} {problem}", path.display()))?;
    }
    let [3, rows, columns] = shape.as_slice() else {
        bail!(
            "{} has shape {shape:?}; a .npy input must be (3, tokens, heads·head width): q, k, v (use safetensors when v is narrower)",
            path.display()
        );
    };
    let (rows, columns) = (*rows, *columns);
    let corrupt = |e: std::io::Error| anyhow!("{} is corrupt: {e}", path.display());
    let values: Vec<i64> = match npy.dtype() {
        npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Int => match t.size_field() {
            1 => npy.into_vec::<i8>().map_err(corrupt)?.into_iter().map(i64::from).collect(),
            2 => npy.into_vec::<i16>().map_err(corrupt)?.into_iter().map(i64::from).collect(),
            4 => npy.into_vec::<i32>().map_err(corrupt)?.into_iter().map(i64::from).collect(),
            8 => npy.into_vec::<i64>().map_err(corrupt)?,
            size => bail!("{} holds {size}-byte integers; use int8, int16, int32 or int64", path.display()),
        },
        other => bail!(
            "{} holds {} values (numpy's dtype); the attention layer proves integers (int8 … int64): quantize the inputs first",
            path.display(),
            other.descr()
        ),
    };
    let block = rows * columns;
    let matrix =
        |k: usize| Matrix { shape: vec![rows, columns], values: values[k * block..(k + 1) * block].to_vec() };
    Ok([matrix(0), matrix(1), matrix(2)])
}

fn read_safetensors(path: &Path, bytes: &[u8]) -> Result<[Matrix; 3]> {
    use safetensors::{Dtype, SafeTensors};
    let file = SafeTensors::deserialize(bytes)
        .map_err(|e| anyhow!("{} is neither a .npy nor a valid safetensors file: {e}", path.display()))?;
    let read = |name: &str| -> Result<Matrix> {
        let tensor = file.tensor(name).map_err(|_| {
            anyhow!("{} has no tensor named {name:?}; an attention input holds q, k and v", path.display())
        })?;
        let data = tensor.data();
        let values: Vec<i64> = match tensor.dtype() {
            Dtype::I8 => data.iter().map(|b| i64::from(*b as i8)).collect(),
            Dtype::I16 => data.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
            Dtype::I32 => data
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            Dtype::I64 => data
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
            other => bail!(
                "{}: {name} holds {other:?} values; the attention layer proves integers (I8 … I64): quantize the inputs first",
                path.display()
            ),
        };
        Ok(Matrix { shape: tensor.shape().to_vec(), values })
    };
    Ok([read("q")?, read("k")?, read("v")?])
}
