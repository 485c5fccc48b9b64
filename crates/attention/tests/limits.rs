//! The stated limits: a statement whose size fields were changed to huge values is rejected by
//! its validation before anything is sized from them. A counting allocator measures the peak
//! memory of decoding, validating and verifying such a statement.
#![allow(unsafe_code)] // the counting allocator below (test only)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use zkmha_attention::model_layer::ModelShape;
use zkmha_attention::*;

/// Bytes allocated and not yet freed, and their peak since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        // SAFETY: the caller's layout, as received.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as a new block while both exist.
        let live = LIVE.fetch_add(new_size, Ordering::SeqCst) + new_size;
        PEAK.fetch_max(live, Ordering::SeqCst);
        // SAFETY: as received.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time (the counters are global).
static SERIAL: Mutex<()> = Mutex::new(());

/// `f`'s result and the most bytes it had allocated at once beyond what was live before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let result = f();
    (result, PEAK.load(Ordering::SeqCst).saturating_sub(before))
}

fn inputs(shape: &AttentionShape) -> AttentionInputs {
    let draw = |n: usize| (0..n).map(|k| (k as i64 * 37) % 255 - 127).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

fn is_too_large(result: &Result<(), AttentionError>) -> bool {
    matches!(result, Err(AttentionError::InvalidShape(m)) if m.contains("too large"))
}

#[test]
fn size_fields_over_the_limits_are_rejected_before_anything_is_sized_from_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let shape = AttentionShape::new(3, 2, 2, 2).unwrap();
    let softmax = SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(0.05, 4).unwrap());
    let params = hyrax_params_for(&shape, softmax);
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::Causal, softmax, &inputs(&shape)).unwrap();
    let mut bytes = Vec::new();
    statement.serialize_compressed(&mut bytes).unwrap();
    // The statement starts with the four sizes (s, h, m, m_v), 8 bytes each.
    for field in 0..4 {
        for value in [1u64 << 40, u64::MAX, 1 << 63, 1 << 30, 1 << 20] {
            let mut mutated = bytes.clone();
            mutated[8 * field..8 * field + 8].copy_from_slice(&value.to_le_bytes());
            let (checked, peak) = peak_of(|| {
                let statement = CommittedStatement::deserialize_compressed(&mutated[..]).unwrap();
                let checked = statement.validate();
                (statement, checked)
            });
            let (mutated_statement, checked) = checked;
            assert!(is_too_large(&checked), "field {field} = {value}: {checked:?}");
            // Decoding and validating: the statement itself and a little more.
            assert!(peak < 4 * bytes.len() + (64 << 10), "field {field} = {value}: {peak} bytes");
            // Every other entry point that sizes something from the shape checks it first.
            let (zk, peak) = peak_of(|| zk_hyrax_params_for(&mutated_statement.shape, softmax).map(|_| ()));
            assert!(is_too_large(&zk), "{zk:?}");
            assert!(peak < 16 << 10, "zero-knowledge generators: {peak} bytes");
            let (zk_statement, peak) = peak_of(|| mutated_statement.validate_zk());
            assert!(is_too_large(&zk_statement) && peak < 16 << 10, "{zk_statement:?}, {peak} bytes");
            let (verified, peak) =
                peak_of(|| verify_layer_committed(&params, &mutated_statement, &proof).map(|_| ()));
            assert!(is_too_large(&verified), "{verified:?}");
            assert!(peak < 16 << 10, "verifier: {peak} bytes");
        }
    }
    // Unchanged, the same statement passes (the test can fail).
    let statement = CommittedStatement::deserialize_compressed(&bytes[..]).unwrap();
    assert!(statement.validate().is_ok());
    assert!(verify_layer_committed(&params, &statement, &proof).is_ok());
}

#[test]
fn model_shapes_over_the_limits_are_rejected_without_allocating() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = ModelShape {
        attention: AttentionShape::new(4, 2, 4, 4).unwrap(),
        model_width: 16,
        shifts: [8; 4],
        residual: Residual::LayerInput,
        key_value_heads: 2,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    assert!(base.validate().is_ok());
    let huge = [1usize << 40, usize::MAX, 1 << 63];
    for value in huge {
        for shape in [
            ModelShape { model_width: value, ..base },
            ModelShape { key_value_heads: value, ..base },
            ModelShape { attention: AttentionShape { seq_len: value, ..base.attention }, ..base },
            ModelShape { attention: AttentionShape { heads: value, ..base.attention }, ..base },
        ] {
            let (result, peak) = peak_of(|| shape.validate());
            assert!(result.is_err(), "{shape:?}");
            assert!(peak < 16 << 10, "{peak} bytes");
        }
        let (result, _) = peak_of(|| ModelShape { model_width: value, ..base }.validate());
        assert!(is_too_large(&result), "{result:?}");
    }
    let over = ModelShape { model_width: model_layer::MAX_MODEL_WIDTH + 1, ..base };
    assert!(is_too_large(&over.validate()));
    // GPT-2-small's and Llama-2-70B's widths are inside the limits.
    for (d, h, m, s) in [(768, 12, 64, 2048), (8192, 64, 128, 512)] {
        let shape = ModelShape {
            attention: AttentionShape::new(s, h, m, m).unwrap(),
            model_width: d,
            key_value_heads: h,
            ..base
        };
        assert!(shape.validate().is_ok(), "d_model {d}");
    }
}
