//! The block's verifier on mutated proofs: a few hundred random byte changes per mode (bits
//! flipped, bytes and runs replaced); every one that still parses is rejected, none panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::MaskKind;
use zkmha_attention::block::{ModelBlockProof, verify_block};
use zkmha_attention::mode::{Mode, Plain, Zk};

use crate::common::{base, grouped, modes, pre_norm, proven_block, rotary, with_norm};
use zkmha_nn::NormKind;

fn fuzz<M: Mode>() {
    fuzz_shape::<M>(&rotary(pre_norm(grouped(6, 4, 2, 4, 2, 9))));
}

fn fuzz_shape<M: Mode>(shape: &zkmha_attention::model_layer::ModelShape) {
    let [(softmax, shape), _] = modes(shape);
    let (params, statement, proof) = proven_block::<M>(&shape, MaskKind::Causal, softmax, 1);
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    println!("{}: proof {} bytes", M::NAME, bytes.len());
    let mut r = StdRng::seed_from_u64(7);
    let (mut parsed, mut panics, mut accepted) = (0, 0, 0);
    let n: usize = std::env::var("FUZZ_N").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    for _ in 0..n {
        let mut b = bytes.clone();
        match r.gen_range(0..3) {
            0 => {
                let i = r.gen_range(0..b.len());
                b[i] ^= 1 << r.gen_range(0..8);
            }
            1 => {
                let i = r.gen_range(0..b.len());
                b[i] = r.r#gen();
            }
            _ => {
                let i = r.gen_range(0..b.len().saturating_sub(8));
                for k in 0..8 {
                    b[i + k] = r.r#gen();
                }
            }
        }
        let Ok(p) = ModelBlockProof::<M>::deserialize_compressed(b.as_slice()) else { continue };
        parsed += 1;
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            verify_block::<M>(&params, &statement, &p)
        }));
        match res {
            Err(_) => panics += 1,
            Ok(Ok(_)) => {
                if p != proof {
                    accepted += 1;
                }
            }
            Ok(Err(_)) => {}
        }
    }
    println!("{}: {n} mutations, {parsed} parsed, {panics} panics, {accepted} accepted", M::NAME);
    assert_eq!((panics, accepted), (0, 0));
}

#[test]
fn mutated_plain_proofs_are_rejected_without_a_panic() {
    fuzz::<Plain>()
}

#[test]
fn mutated_zero_knowledge_proofs_are_rejected_without_a_panic() {
    fuzz::<Zk>()
}

#[test]
fn mutated_proofs_of_a_block_with_its_norm_are_rejected_without_a_panic() {
    fuzz_shape::<Plain>(&with_norm(rotary(grouped(5, 4, 2, 4, 4, 10)), NormKind::Rms));
    fuzz_shape::<Zk>(&with_norm(base(5, 2, 4, 4, 10), NormKind::Layer));
}
