//! Adversarial review of 7193c90 (the block's MLP half), from outside the crate: every
//! `BlockMlp` field changed in the statement, swapped proof parts, the attention-only output,
//! and mutated `feed_forward` parts (must error, never panic). Both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;

use crate::common::{base, hidden_state, modes as softmax_modes, weights, with_mlp, with_norm};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::activation::Activation;
use zkmha_attention::block::{
    FeedForwardProof, ModelBlockProof, block_hyrax_params, commit_model_with, normalized_input, prove_block,
    verify_block,
};
use zkmha_attention::mlp::{BlockMlp, GatedProduct};
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{ModelShape, ModelStatement, ModelWeights};
use zkmha_attention::norm::NormKind;
use zkmha_attention::{AttentionError, MaskKind, SoftmaxMode};
use zkmha_pcs::HyraxParams;

in_both_modes!(
    every_block_mlp_field_is_bound,
    swapped_proof_parts_are_rejected,
    the_attention_only_output_is_rejected,
    mutated_feed_forward_parts_error_without_panicking,
);

use crate::common::PreNormBlock as Proved;

fn prove_with<M: Mode>(shape: &ModelShape, softmax: SoftmaxMode, seed: u64, hseed: u64) -> Proved<M> {
    common::prove_pre_norm(shape, softmax, seed, hseed)
}

fn shapes() -> Vec<(SoftmaxMode, ModelShape)> {
    [
        with_mlp(with_norm(base(5, 2, 4, 4, 10), NormKind::Layer), false, 24),
        with_mlp(with_norm(base(3, 2, 4, 4, 10), NormKind::Rms), true, 20),
        with_mlp(with_norm(base(1, 2, 4, 4, 12), NormKind::Rms), true, 16),
    ]
    .iter()
    .map(|s| softmax_modes(s)[0])
    .collect()
}

fn verify_caught<M: Mode>(
    params: &HyraxParams,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
) -> Result<Result<(), AttentionError>, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        verify_block::<M>(params, statement, proof).map(|_| ())
    }))
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn every_block_mlp_field_is_bound<M: Mode>() {
    for (softmax, shape) in shapes() {
        let p = prove_with::<M>(&shape, softmax, 1, 1);
        verify_block::<M>(&p.params, &p.statement, &p.proof).unwrap();
        let mlp = shape.mlp.unwrap();
        let mut changed: Vec<(&str, BlockMlp)> = Vec::new();
        let mut add = |name, f: &dyn Fn(&mut BlockMlp)| {
            let mut m = mlp;
            f(&mut m);
            changed.push((name, m));
        };
        add("hidden+1", &|m| m.params.hidden += 1);
        add("hidden-1", &|m| m.params.hidden -= 1);
        add("hidden*2", &|m| m.params.hidden *= 2);
        add("hidden=0", &|m| m.params.hidden = 0);
        add("hidden=1", &|m| m.params.hidden = 1);
        add("hidden=2^40", &|m| m.params.hidden = 1 << 40);
        add("hidden=usize::MAX", &|m| m.params.hidden = usize::MAX);
        add("hidden=2^63+1", &|m| m.params.hidden = (1 << 63) + 1);
        add("act in bits=0", &|m| m.params.activation_input_bits = 0);
        add("act out frac=40", &|m| m.params.activation_output_fraction_bits = 40);
        add("up_shift=0", &|m| m.params.up_shift = 0);
        add("down_shift=u32::MAX", &|m| m.params.down_shift = u32::MAX);
        add("norm epsilon=0", &|m| m.norm.epsilon = 0);
        add("norm remainder_digits=0", &|m| m.norm.remainder_digits = 0);
        add("norm remainder_digits=u32::MAX", &|m| m.norm.remainder_digits = u32::MAX);
        add("activation GeluErf", &|m| m.params.activation = Activation::GeluErf);
        add("activation GeluTanh", &|m| m.params.activation = Activation::GeluTanh);
        add("activation Silu", &|m| m.params.activation = Activation::Silu);
        add("act in frac+1", &|m| m.params.activation_input_fraction_bits += 1);
        add("act out frac+1", &|m| m.params.activation_output_fraction_bits += 1);
        add("act in bits-1", &|m| m.params.activation_input_bits -= 1);
        add("act in bits+1", &|m| m.params.activation_input_bits += 1);
        add("up_shift+1", &|m| m.params.up_shift += 1);
        add("down_shift+1", &|m| m.params.down_shift += 1);
        add("down_shift-1", &|m| m.params.down_shift -= 1);
        add("gate toggled", &|m| {
            m.params.gate = match m.params.gate {
                Some(_) => None,
                None => Some(GatedProduct { gate_shift: 8, up_bits: 16 }),
            }
        });
        if mlp.params.gate.is_some() {
            add("gate_shift+1", &|m| m.params.gate.as_mut().unwrap().gate_shift += 1);
            add("up_bits+1", &|m| m.params.gate.as_mut().unwrap().up_bits += 1);
            add("up_bits-1", &|m| m.params.gate.as_mut().unwrap().up_bits -= 1);
            add("gate_shift-1", &|m| m.params.gate.as_mut().unwrap().gate_shift -= 1);
            add("gate_shift=0", &|m| m.params.gate.as_mut().unwrap().gate_shift = 0);
            add("gate_shift=300", &|m| m.params.gate.as_mut().unwrap().gate_shift = 300);
            add("up_bits=0", &|m| m.params.gate.as_mut().unwrap().up_bits = 0);
        }
        add("norm kind", &|m| {
            m.norm.kind = match m.norm.kind {
                NormKind::Rms => NormKind::Layer,
                NormKind::Layer => NormKind::Rms,
            }
        });
        add("norm epsilon+1", &|m| m.norm.epsilon += 1);
        add("norm scale_bits+1", &|m| m.norm.scale_bits += 1);
        add("norm shift_bits-1", &|m| m.norm.shift_bits -= 1);
        add("norm bias toggled", &|m| m.norm.bias = !m.norm.bias);
        add("norm remainder_digits+1", &|m| m.norm.remainder_digits += 1);
        add("norm remainder_digits-1", &|m| m.norm.remainder_digits -= 1);
        for (name, m) in changed {
            if m == mlp {
                continue;
            }
            let statement =
                ModelStatement { shape: ModelShape { mlp: Some(m), ..shape }, ..p.statement.clone() };
            let r = verify_caught::<M>(&p.params, &statement, &p.proof);
            println!("{} s={} {name}: {r:?}", M::NAME, shape.attention.seq_len);
            assert!(matches!(r, Ok(Err(_))), "{name}: {r:?}");
        }
        // The first norm changed alone (the MLP's norm unchanged).
        let mut first = shape.norm.unwrap();
        first.epsilon += 1;
        let statement =
            ModelStatement { shape: ModelShape { norm: Some(first), ..shape }, ..p.statement.clone() };
        assert!(matches!(verify_caught::<M>(&p.params, &statement, &p.proof), Ok(Err(_))));
    }
}

fn swapped_proof_parts_are_rejected<M: Mode>() {
    for (softmax, shape) in shapes() {
        let p = prove_with::<M>(&shape, softmax, 2, 2);
        // The same model, another hidden state.
        let other = prove_with::<M>(&shape, softmax, 2, 3);
        let ff = p.proof.feed_forward.clone().unwrap();
        let mut tries: Vec<(&str, ModelBlockProof<M>)> = Vec::new();
        // The first and the second norm's proofs swapped (same norm constants in these shapes).
        let mut q = p.proof.clone();
        let first = q.norm.clone().unwrap();
        q.norm = Some(ff.norm.clone());
        q.feed_forward = Some(FeedForwardProof { norm: first.clone(), ..ff.clone() });
        tries.push(("norms swapped", q));
        let mut q = p.proof.clone();
        q.feed_forward = Some(FeedForwardProof { norm: first, ..ff.clone() });
        tries.push(("second norm = first norm's proof", q));
        let mut q = p.proof.clone();
        q.feed_forward =
            Some(FeedForwardProof { middle_value: p.proof.residual_input.clone(), ..ff.clone() });
        tries.push(("zeta = alpha", q));
        let mut q = p.proof.clone();
        q.residual_input = ff.middle_value.clone();
        tries.push(("alpha = zeta", q));
        let mut q = p.proof.clone();
        q.feed_forward = other.proof.feed_forward.clone();
        tries.push(("feed_forward of another H", q));
        let mut q = other.proof.clone();
        q.feed_forward = p.proof.feed_forward.clone();
        tries.push(("other proof, this feed_forward", q));
        let mut q = p.proof.clone();
        q.feed_forward =
            Some(FeedForwardProof { mlp: other.proof.feed_forward.clone().unwrap().mlp, ..ff.clone() });
        tries.push(("mlp of another H", q));
        for (name, q) in tries {
            let r = verify_caught::<M>(&p.params, &p.statement, &q);
            println!("{} s={} {name}: {r:?}", M::NAME, shape.attention.seq_len);
            assert!(matches!(r, Ok(Err(_))), "{name}: {r:?}");
        }
        // The other proof's statement output with this proof.
        let statement = ModelStatement { output: other.statement.output.clone(), ..p.statement.clone() };
        assert!(matches!(verify_caught::<M>(&p.params, &statement, &p.proof), Ok(Err(_))));
    }
}

/// The statement's output replaced by the attention half's `Z` (the MLP left out), the proof
/// unchanged; and the proof of the block without the MLP offered with the MLP's statement.
fn the_attention_only_output_is_rejected<M: Mode>() {
    for (softmax, shape) in shapes() {
        let p = prove_with::<M>(&shape, softmax, 4, 4);
        let attention_shape = ModelShape { mlp: None, ..shape };
        let w = weights(&shape, 4);
        let aw = ModelWeights { feed_forward: None, ..w.clone() };
        let params = block_hyrax_params::<M>(&attention_shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (model, blinds) = commit_model_with::<M>(&params, &attention_shape, &aw, &mut rng).unwrap();
        let h = hidden_state(&shape, 4).unwrap();
        let x = normalized_input(&shape, &w, &h).unwrap();
        let (a_statement, a_proof, _) = prove_block::<M>(
            &params,
            &attention_shape,
            MaskKind::Causal,
            softmax,
            &x,
            Some(&h),
            &aw,
            &model,
            &blinds,
            &mut rng,
        )
        .unwrap();
        assert_ne!(a_statement.output, p.statement.output);
        let statement = ModelStatement { output: a_statement.output.clone(), ..p.statement.clone() };
        assert!(matches!(verify_caught::<M>(&p.params, &statement, &p.proof), Ok(Err(_))));
        // The MLP statement with the attention-only proof (plus the MLP proof part grafted on).
        let mut grafted = a_proof.clone();
        grafted.feed_forward = p.proof.feed_forward.clone();
        let r = verify_caught::<M>(&p.params, &p.statement, &grafted);
        assert!(matches!(r, Ok(Err(_))), "{r:?}");
        // The attention-only statement (MLP weights dropped from the model) with the MLP proof.
        let r = verify_caught::<M>(&params, &a_statement, &p.proof);
        assert!(matches!(r, Ok(Err(_))), "{r:?}");
    }
}

fn mutated_feed_forward_parts_error_without_panicking<M: Mode>() {
    let n: usize = std::env::var("FUZZ_N").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    for (softmax, shape) in shapes() {
        let p = prove_with::<M>(&shape, softmax, 6, 6);
        let ff = p.proof.feed_forward.clone().unwrap();
        let parts: Vec<(&str, Vec<u8>)> = {
            let ser = |x: &dyn Fn(&mut Vec<u8>)| {
                let mut b = Vec::new();
                x(&mut b);
                b
            };
            vec![
                ("norm", ser(&|b| ff.norm.serialize_compressed(b).unwrap())),
                ("mlp", ser(&|b| ff.mlp.serialize_compressed(b).unwrap())),
                ("whole", ser(&|b| ff.serialize_compressed(b).unwrap())),
            ]
        };
        let mut r = StdRng::seed_from_u64(9);
        let (mut parsed, mut panics, mut accepted) = (0, Vec::new(), 0);
        for (name, bytes) in &parts {
            for _ in 0..n {
                let mut b = bytes.clone();
                match r.gen_range(0..4) {
                    0 => {
                        let i = r.gen_range(0..b.len());
                        b[i] ^= 1 << r.gen_range(0..8);
                    }
                    1 => {
                        let i = r.gen_range(0..b.len());
                        b[i] = r.r#gen();
                    }
                    2 => {
                        // A length prefix (or anything) made small.
                        let i = r.gen_range(0..b.len().saturating_sub(8));
                        let v: u64 = r.gen_range(0..4);
                        b[i..i + 8].copy_from_slice(&v.to_le_bytes());
                    }
                    _ => {
                        let cut = r.gen_range(0..b.len());
                        b.truncate(cut);
                    }
                }
                let mut q = p.proof.clone();
                let ok = match *name {
                    "norm" => zkmha_attention::norm::NormProofOf::<M>::deserialize_compressed(b.as_slice())
                        .map(|x| q.feed_forward.as_mut().unwrap().norm = x)
                        .is_ok(),
                    "mlp" => zkmha_attention::mlp::MlpProof::<M>::deserialize_compressed(b.as_slice())
                        .map(|x| q.feed_forward.as_mut().unwrap().mlp = x)
                        .is_ok(),
                    _ => FeedForwardProof::<M>::deserialize_compressed(b.as_slice())
                        .map(|x| q.feed_forward = Some(x))
                        .is_ok(),
                };
                if !ok {
                    continue;
                }
                parsed += 1;
                match verify_caught::<M>(&p.params, &p.statement, &q) {
                    Err(msg) => panics.push(format!("{name}: {msg}")),
                    Ok(Ok(())) if q != p.proof => accepted += 1,
                    _ => {}
                }
            }
        }
        println!(
            "{} s={}: {} mutations, {parsed} parsed, {} panics, {accepted} accepted",
            M::NAME,
            shape.attention.seq_len,
            3 * n,
            panics.len()
        );
        assert!(panics.is_empty(), "{panics:#?}");
        assert_eq!(accepted, 0);
    }
}

/// A statement's `BlockMlp::hidden` above 2^63: `ModelShape::validate` computes `table_vars()`
/// (the MLP's projections' `next_power_of_two`) before it validates the MLP. Release builds wrap
/// and refuse the shape by its size; with overflow checks (debug builds) this must not panic.
#[test]
fn a_huge_hidden_width_is_refused_without_panicking() {
    let shape = with_mlp(with_norm(base(3, 2, 4, 4, 10), NormKind::Rms), true, 20);
    for hidden in [usize::MAX, (1 << 63) + 1] {
        let mut m = shape.mlp.unwrap();
        m.params.hidden = hidden;
        let bad = ModelShape { mlp: Some(m), ..shape };
        let r = std::panic::catch_unwind(|| bad.validate());
        assert!(matches!(r, Ok(Err(_))), "hidden = {hidden}: {:?}", r.map_err(|_| "panicked"));
    }
}
