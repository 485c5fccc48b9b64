//! Malformed model-layer, committed-layer and zero-knowledge proofs (from the trust issue's
//! adversarial review).
//!
//! Bytes of an honest proof's compressed encoding (every `stride`-th position) are changed in
//! several ways, 8-byte windows there are set to huge lengths, and the file is cut short; each
//! changed file is decoded (under the CLI's row budget) and, if it decodes to another proof,
//! verified. The verifier must neither panic nor accept. CI samples every 401st byte; the
//! review ran every 31st (about 40,000 changed files, 3 minutes):
//! `ZKMHA_MUTATION_STRIDE=31 cargo test --release -p zkmha-attention --test suite
//! malformed_proofs -- --nocapture --test-threads=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{SeedableRng, rngs::StdRng};
use std::panic::{AssertUnwindSafe, catch_unwind};
use zkmha_attention::model_layer::*;
use zkmha_attention::rope::RotaryParams;
use zkmha_attention::*;

use crate::common::{draw, weights};

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "<non-string panic>".into())
}

/// The mutations of one file: each sampled byte XOR 1, 0x80, set to 0 and 0xff; every sampled
/// 8-byte window set to 2^40 and to u64::MAX.
fn mutations(bytes: &[u8], stride: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        for (name, f) in [
            ("xor1", (|b: u8| b ^ 1) as fn(u8) -> u8),
            ("xor80", |b: u8| b ^ 0x80),
            ("zero", |_| 0),
            ("ff", |_| 0xff),
        ] {
            let mut m = bytes.to_vec();
            m[pos] = f(m[pos]);
            if m != bytes {
                out.push((format!("{name}@{pos}"), m));
            }
        }
        if pos + 8 <= bytes.len() {
            for (name, value) in [("len2^40", 1u64 << 40), ("lenmax", u64::MAX)] {
                let mut m = bytes.to_vec();
                m[pos..pos + 8].copy_from_slice(&value.to_le_bytes());
                out.push((format!("{name}@{pos}"), m));
            }
        }
        pos += stride;
    }
    // Truncations.
    for cut in [1usize, 8, 32, 100] {
        if cut < bytes.len() {
            out.push((format!("truncate-{cut}"), bytes[..bytes.len() - cut].to_vec()));
        }
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    tried: usize,
    decoded_changed: usize,
    rejected: usize,
    panics: Vec<String>,
    accepted: Vec<String>,
}

/// Decodes every mutation (with the CLI's row budget) and verifies the changed proofs.
fn sweep<P: CanonicalDeserialize + CanonicalSerialize>(
    original: &[u8],
    stride: usize,
    verify: &dyn Fn(&P) -> bool,
) -> Tally {
    let mut tally = Tally::default();
    for (name, m) in mutations(original, stride) {
        tally.tried += 1;
        let decoded = catch_unwind(AssertUnwindSafe(|| {
            zkmha_pcs::decode_with_row_budget(1 << 20, || P::deserialize_compressed(&m[..]))
        }));
        let proof = match decoded {
            Err(p) => {
                tally.panics.push(format!("decode {name}: {}", panic_text(&*p)));
                continue;
            }
            Ok(Err(_)) => continue,
            Ok(Ok(p)) => p,
        };
        let mut again = Vec::new();
        proof.serialize_compressed(&mut again).unwrap();
        if again == original {
            continue;
        }
        tally.decoded_changed += 1;
        match catch_unwind(AssertUnwindSafe(|| verify(&proof))) {
            Err(p) => tally.panics.push(format!("verify {name}: {}", panic_text(&*p))),
            Ok(true) => tally.accepted.push(name),
            Ok(false) => tally.rejected += 1,
        }
    }
    tally
}

fn report(what: &str, tally: &Tally) {
    println!(
        "{what}: {} mutations, {} decoded to another proof, {} rejected, {} panics, {} ACCEPTED",
        tally.tried,
        tally.decoded_changed,
        tally.rejected,
        tally.panics.len(),
        tally.accepted.len()
    );
    for p in tally.panics.iter().take(20) {
        println!("  PANIC {p}");
    }
    for a in tally.accepted.iter().take(20) {
        println!("  ACCEPTED {a}");
    }
}

fn stride() -> usize {
    std::env::var("ZKMHA_MUTATION_STRIDE").ok().and_then(|s| s.parse().ok()).filter(|&s| s > 0).unwrap_or(401)
}

#[test]
fn malformed_model_layer_proofs_neither_panic_nor_verify() {
    // Llama's combination: pre-norm, grouped-query, rotary; the output projection in two digits.
    let attention = AttentionShape::new(3, 4, 2, 2).unwrap();
    let shape = ModelShape {
        attention,
        model_width: 5,
        shifts: [6, 6, 6, 20],
        residual: Residual::HiddenState,
        key_value_heads: 2,
        rotary: Some(RotaryParams { base: 10_000, fraction_bits: 12 }),
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let scale = 1.0 / (attention.head_dim as f64 * 400.0);
    let softmax =
        SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(scale, attention.padded_seq_len()).unwrap());
    let params = model_hyrax_params(&shape, softmax);
    let w = weights(&shape, 5);
    let model = commit_model(&params, &shape, &w).unwrap();
    let x = draw(&mut StdRng::seed_from_u64(6), 3 * 5, 127);
    let h = draw(&mut StdRng::seed_from_u64(7), 3 * 5, 1 << 20);
    let (statement, proof, _) =
        prove_model_layer(&params, &shape, MaskKind::Causal, softmax, &x, Some(&h), &w, &model).unwrap();
    verify_model_layer(&params, &statement, &proof).unwrap();
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    println!("model-layer proof: {} bytes", bytes.len());
    let tally =
        sweep::<ModelLayerProof>(&bytes, stride(), &|p| verify_model_layer(&params, &statement, p).is_ok());
    report("model layer proof", &tally);

    // The statement too (a reader validates it before deriving generators).
    let mut sbytes = Vec::new();
    statement.serialize_compressed(&mut sbytes).unwrap();
    let st = sweep::<ModelStatement>(&sbytes, stride().min(13), &|s| {
        s.validate().is_ok() && {
            let p = model_hyrax_params(&s.shape, s.softmax);
            verify_model_layer(&p, s, &proof).is_ok()
        }
    });
    report("model layer statement", &st);
    assert!(tally.panics.is_empty() && st.panics.is_empty(), "panics in the verifier");
    assert!(tally.accepted.is_empty() && st.accepted.is_empty(), "FORGERY: a changed proof verified");
}

#[test]
fn malformed_committed_and_zero_knowledge_proofs_neither_panic_nor_verify() {
    let shape = AttentionShape::new(3, 3, 2, 3).unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let inputs = AttentionInputs {
        queries: draw(&mut rng, 3 * 6, 40),
        keys: draw(&mut rng, 3 * 6, 40),
        values: draw(&mut rng, 3 * 9, 40),
    };
    let softmax = SoftmaxMode::Exponential(
        SoftmaxParams::for_score_scale(1.0 / 400.0, shape.padded_seq_len()).unwrap(),
    );
    for mode in [softmax, SoftmaxMode::Identity] {
        let hyrax = hyrax_params_for(&shape, mode);
        let (statement, proof, _) =
            prove_layer_committed(&hyrax, &shape, MaskKind::Causal, mode, &inputs).unwrap();
        verify_layer_committed(&hyrax, &statement, &proof).unwrap();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        let tally = sweep::<CommittedLayerProof>(&bytes, stride(), &|p| {
            verify_layer_committed(&hyrax, &statement, p).is_ok()
        });
        report(&format!("committed layer ({mode:?})"), &tally);
        assert!(tally.panics.is_empty(), "panics in the verifier");
        assert!(tally.accepted.is_empty(), "FORGERY: a changed proof verified");

        let zk = zk_hyrax_params_for(&shape, mode).unwrap();
        let mut zrng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
        let (statement, proof, _) = prove_layer_committed_with::<zkmha_attention::mode::Zk>(
            &zk,
            &shape,
            MaskKind::Causal,
            mode,
            &inputs,
            &mut zrng,
        )
        .unwrap();
        verify_committed_layer::<zkmha_attention::mode::Zk>(&zk, &statement, &proof).unwrap();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        let tally = sweep::<ZkLayerProof>(&bytes, stride() * 3, &|p| {
            verify_committed_layer::<zkmha_attention::mode::Zk>(&zk, &statement, p).is_ok()
        });
        report(&format!("zero-knowledge layer ({mode:?})"), &tally);
        assert!(tally.panics.is_empty(), "panics in the verifier");
        assert!(tally.accepted.is_empty(), "FORGERY: a changed proof verified");
    }
}
