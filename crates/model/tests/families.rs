//! The three families' safetensors loaders on small files the test writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use safetensors::tensor::{Dtype, TensorView, serialize};
use std::path::PathBuf;
use zkmha_model::ModelError;
use zkmha_model::families::*;

/// A tensor of `shape` whose entry at flat index `k` is `base + k/1000` (distinct, exact in f16
/// only for small files: F32 here unless `dtype` says otherwise).
struct Spec {
    name: String,
    shape: Vec<usize>,
    base: f32,
}

fn spec(name: &str, shape: &[usize], base: f32) -> Spec {
    Spec { name: name.into(), shape: shape.to_vec(), base }
}

fn value(base: f32, k: usize) -> f32 {
    base + k as f32 / 1000.0
}

fn write(file: &str, specs: &[Spec], dtype: Dtype) -> PathBuf {
    let buffers: Vec<Vec<u8>> = specs
        .iter()
        .map(|s| {
            let n: usize = s.shape.iter().product();
            (0..n)
                .flat_map(|k| match dtype {
                    Dtype::BF16 => half::bf16::from_f32(value(s.base, k)).to_le_bytes().to_vec(),
                    Dtype::F16 => half::f16::from_f32(value(s.base, k)).to_le_bytes().to_vec(),
                    _ => value(s.base, k).to_le_bytes().to_vec(),
                })
                .collect()
        })
        .collect();
    let views: Vec<(String, TensorView)> = specs
        .iter()
        .zip(&buffers)
        .map(|(s, b)| (s.name.clone(), TensorView::new(dtype, s.shape.clone(), b).unwrap()))
        .collect();
    let bytes = serialize(views, None).unwrap();
    let path = std::env::temp_dir().join(format!("zkmha-families-{}-{file}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn bert(layer: usize, d: usize, prefix: &str) -> Vec<Spec> {
    let name = |part: &str| format!("{prefix}encoder.layer.{layer}.attention.{part}");
    vec![
        spec(&name("self.query.weight"), &[d, d], 1.0),
        spec(&name("self.query.bias"), &[d], 2.0),
        spec(&name("self.key.weight"), &[d, d], 3.0),
        spec(&name("self.key.bias"), &[d], 4.0),
        spec(&name("self.value.weight"), &[d, d], 5.0),
        spec(&name("self.value.bias"), &[d], 6.0),
        spec(&name("output.dense.weight"), &[d, d], 7.0),
        spec(&name("output.dense.bias"), &[d], 8.0),
    ]
}

#[test]
fn bert_weights_are_transposed_to_input_by_output() {
    let d = 6;
    let path = write("bert", &bert(1, d, "bert."), Dtype::F32);
    let file = TensorFile::read(&path).unwrap();
    let w = attention_weights(&file, 1, 3, None).unwrap();
    assert_eq!((w.family, w.model_width, w.heads, w.key_value_heads, w.head_dim), (Family::Bert, d, 3, 3, 2));
    // PyTorch's Linear stores [out, in]: W_q[in = i][out = o] is the stored entry (o, i).
    for i in 0..d {
        for o in 0..d {
            assert_eq!(w.queries[i * d + o], f64::from(value(1.0, o * d + i)));
            assert_eq!(w.output[i * d + o], f64::from(value(7.0, o * d + i)));
        }
    }
    assert_eq!(w.values_bias[4], f64::from(value(6.0, 4)));
    // Heads that do not divide the width: one sentence.
    match attention_weights(&file, 1, 4, None) {
        Err(ModelError::Input(message)) => assert_eq!(message, "4 heads do not divide the model width 6"),
        other => panic!("{other:?}"),
    }
    // A layer the file lacks names the tensor and its close matches.
    match attention_weights(&file, 2, 3, Some(Family::Bert)) {
        Err(ModelError::MissingTensor(message)) => {
            assert!(
                message.starts_with("encoder.layer.2.attention.self.query.weight; close matches: "),
                "{message}"
            );
            assert!(message.contains("bert.encoder.layer.1.attention.self.query.weight"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn gpt2_splits_the_fused_projection() {
    let d = 4;
    let specs = vec![
        spec("h.0.attn.c_attn.weight", &[d, 3 * d], 1.0),
        spec("h.0.attn.c_attn.bias", &[3 * d], 2.0),
        spec("h.0.attn.c_proj.weight", &[d, d], 3.0),
        spec("h.0.attn.c_proj.bias", &[d], 4.0),
    ];
    let path = write("gpt2", &specs, Dtype::F32);
    let file = TensorFile::read(&path).unwrap();
    let w = attention_weights(&file, 0, 2, None).unwrap();
    assert_eq!(w.family, Family::Gpt2);
    // Conv1D stores [in, out]: K is the middle third of the columns.
    for i in 0..d {
        for o in 0..d {
            assert_eq!(w.keys[i * d + o], f64::from(value(1.0, i * 3 * d + d + o)));
            assert_eq!(w.output[i * d + o], f64::from(value(3.0, i * d + o)));
        }
    }
    assert_eq!(w.values_bias[1], f64::from(value(2.0, 2 * d + 1)));
    // A fused weight of the wrong width.
    let bad = write("gpt2-bad", &[spec("h.0.attn.c_attn.weight", &[d, 2 * d], 1.0)], Dtype::F32);
    assert!(matches!(
        attention_weights(&TensorFile::read(&bad).unwrap(), 0, 2, None),
        Err(ModelError::WrongTensor { .. })
    ));
    std::fs::remove_file(path).unwrap();
    std::fs::remove_file(bad).unwrap();
}

#[test]
fn llama_has_grouped_key_value_heads_and_no_biases() {
    // d = 8, 4 query heads of 2, 2 key/value heads: k_proj and v_proj have 4 rows.
    let specs = vec![
        spec("model.layers.0.self_attn.q_proj.weight", &[8, 8], 1.0),
        spec("model.layers.0.self_attn.k_proj.weight", &[4, 8], 2.0),
        spec("model.layers.0.self_attn.v_proj.weight", &[4, 8], 3.0),
        spec("model.layers.0.self_attn.o_proj.weight", &[8, 8], 4.0),
    ];
    for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
        let path = write(&format!("llama-{dtype:?}"), &specs, dtype);
        let file = TensorFile::read(&path).unwrap();
        let w = attention_weights(&file, 0, 4, None).unwrap();
        assert_eq!((w.family, w.heads, w.key_value_heads, w.head_dim), (Family::Llama, 4, 2, 2));
        assert_eq!(w.keys.len(), 8 * 4);
        assert!(w.queries_bias.iter().chain(&w.output_bias).all(|b| *b == 0.0));
        // Exact conversion of the stored format (bf16/f16 round the written value once).
        let stored = |k: usize| match dtype {
            Dtype::BF16 => half::bf16::from_f32(value(2.0, k)).to_f64(),
            Dtype::F16 => half::f16::from_f32(value(2.0, k)).to_f64(),
            _ => f64::from(value(2.0, k)),
        };
        assert_eq!(w.keys[5 * 4 + 3], stored(3 * 8 + 5), "{dtype:?}");
        // 3 query heads cannot share 2 key/value heads.
        assert!(matches!(attention_weights(&file, 0, 3, None), Err(ModelError::Input(_))));
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn unknown_or_corrupt_files_get_one_sentence() {
    let path = write("none", &[spec("something.else", &[2], 1.0)], Dtype::F32);
    let file = TensorFile::read(&path).unwrap();
    match attention_weights(&file, 0, 1, None) {
        Err(ModelError::Input(message)) => assert!(message.starts_with("cannot tell the model family")),
        other => panic!("{other:?}"),
    }
    std::fs::write(&path, b"not a safetensors file").unwrap();
    assert!(matches!(TensorFile::read(&path), Err(ModelError::Corrupt { .. })));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(TensorFile::read(&path), Err(ModelError::Io { .. })));
}

#[test]
fn the_real_minilm_file_reads_as_bert() {
    let dir = match zkmha_model::find_minilm() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let file = TensorFile::read(&dir.join("model.safetensors")).unwrap();
    let w = attention_weights(&file, 0, 12, None).unwrap();
    assert_eq!((w.family, w.model_width, w.head_dim, w.key_value_heads), (Family::Bert, 384, 32, 12));
    let stored = file.get("encoder.layer.0.attention.self.query.weight").unwrap();
    assert_eq!(w.queries[5 * 384 + 7], stored.data[7 * 384 + 5]);
    assert!(attention_weights(&file, 5, 12, None).is_ok());
    assert!(matches!(attention_weights(&file, 6, 12, None), Err(ModelError::MissingTensor(_))));
}

#[test]
fn hugging_face_rotary_halves_become_adjacent_pairs() {
    // One row, two heads of 4: head columns [a0 a1 b0 b1] (t pairs with t + 2) become
    // [a0 b0 a1 b1].
    let row = [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0];
    assert_eq!(interleave_rotary_pairs(&row, 8, 4), vec![0.0, 2.0, 1.0, 3.0, 10.0, 12.0, 11.0, 13.0]);
    // Width 2: nothing moves.
    assert_eq!(interleave_rotary_pairs(&row, 8, 2), row.to_vec());
}
