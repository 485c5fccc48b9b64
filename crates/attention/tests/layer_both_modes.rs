//! The attention layer with committed inputs, every property and attack in both modes from
//! one generic suite (`prove_committed_layer::<M>` / `verify_committed_layer::<M>`): round
//! trips on many shapes against the plain forward pass, then each attack rejected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::mode::Mode;
use zkmha_attention::*;
use zkmha_field::{Fr, One};
use zkmha_pcs::HyraxParams;

fn inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

/// The proven softmax for inputs in [−127, 127].
fn softmax_for(shape: &AttentionShape) -> SoftmaxMode {
    let scale = 4.0 / (shape.head_dim as f64 * 127.0 * 127.0 / 3.0);
    SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(scale, shape.padded_seq_len()).unwrap())
}

struct Proved<M: Mode> {
    params: HyraxParams,
    statement: CommittedStatement,
    proof: LayerProof<M>,
}

impl<M: Mode> Proved<M> {
    fn verify(&self, statement: &CommittedStatement, proof: &LayerProof<M>) -> Result<(), AttentionError> {
        verify_committed_layer::<M>(&self.params, statement, proof).map(|_| ())
    }
}

fn prove<M: Mode>(shape: &AttentionShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Proved<M> {
    let params = layer_hyrax_params::<M>(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed + 1000);
    let x = inputs(shape, seed);
    let (commitments, blinds) = commit_inputs_with::<M>(&params, shape, softmax, &x, &mut rng).unwrap();
    let (statement, proof, _) =
        prove_committed_layer::<M>(&params, shape, mask, softmax, &x, commitments, &blinds, &mut rng)
            .unwrap();
    Proved { params, statement, proof }
}

fn round_trips_on_many_shapes<M: Mode>() {
    for (n, (s, h, m, mv)) in
        [(1, 1, 1, 1), (7, 3, 3, 2), (13, 2, 5, 3), (16, 4, 8, 8)].into_iter().enumerate()
    {
        let shape = AttentionShape::new(s, h, m, mv).unwrap();
        for softmax in [SoftmaxMode::Identity, softmax_for(&shape)] {
            for mask in [MaskKind::Causal, MaskKind::None] {
                let p = prove::<M>(&shape, mask, softmax, n as u64);
                p.verify(&p.statement, &p.proof)
                    .unwrap_or_else(|e| panic!("{shape:?} {mask:?} {softmax:?}: {e}"));
                let plain =
                    compute_witness_for_mode(&shape, mask, softmax, &inputs(&shape, n as u64)).unwrap();
                assert_eq!(p.statement.output, plain.output, "the plain forward pass's output");
                let mut bytes = Vec::new();
                p.proof.serialize_compressed(&mut bytes).unwrap();
                assert_eq!(LayerProof::<M>::deserialize_compressed(&bytes[..]).unwrap(), p.proof);
                for cut in [0, bytes.len() / 2, bytes.len() - 1] {
                    assert!(LayerProof::<M>::deserialize_compressed(&bytes[..cut]).is_err());
                }
            }
        }
    }
}

fn a_wrong_output_is_rejected<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    for softmax in [SoftmaxMode::Identity, softmax_for(&shape)] {
        let p = prove::<M>(&shape, MaskKind::Causal, softmax, 30);
        let mut statement = p.statement.clone();
        statement.output[4] += Fr::one();
        assert!(p.verify(&statement, &p.proof).is_err(), "{softmax:?}");
    }
}

fn swapped_or_foreign_input_commitments_are_rejected<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 3).unwrap();
    for softmax in [SoftmaxMode::Identity, softmax_for(&shape)] {
        let p = prove::<M>(&shape, MaskKind::Causal, softmax, 31);
        let mut swapped = p.statement.clone();
        std::mem::swap(&mut swapped.commitments.queries, &mut swapped.commitments.keys);
        assert!(p.verify(&swapped, &p.proof).is_err());
        let other = prove::<M>(&shape, MaskKind::Causal, softmax, 32);
        let mut mixed = p.statement.clone();
        mixed.commitments.values = other.statement.commitments.values.clone();
        assert!(p.verify(&mixed, &p.proof).is_err());
    }
}

fn the_other_mask_or_softmax_mode_is_rejected<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let p = prove::<M>(&shape, MaskKind::Causal, softmax_for(&shape), 33);
    let mut statement = p.statement.clone();
    statement.mask = MaskKind::None;
    assert!(p.verify(&statement, &p.proof).is_err());
    let linear = prove::<M>(&shape, MaskKind::Causal, SoftmaxMode::Identity, 34);
    let mut statement = linear.statement.clone();
    statement.softmax = softmax_for(&shape);
    assert!(p.verify(&statement, &linear.proof).is_err());
    // The proof's parts of the other softmax mode.
    let mut bad = p.proof.clone();
    bad.softmax_commitments = None;
    assert_eq!(
        p.verify(&p.statement, &bad),
        Err(AttentionError::CheckFailed { step: "the proof's softmax mode" })
    );
    let mut bad = linear.proof.clone();
    bad.chain.masking = None;
    assert_eq!(
        linear.verify(&linear.statement, &bad),
        Err(AttentionError::CheckFailed { step: "the proof's softmax mode" })
    );
}

fn missing_or_unexpected_parts_are_rejected<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let p = prove::<M>(&shape, MaskKind::Causal, softmax_for(&shape), 35);
    let mut bad = p.proof.clone();
    bad.openings = None;
    assert_eq!(p.verify(&p.statement, &bad), Err(AttentionError::CheckFailed { step: "openings" }));
    let mut bad = p.proof.clone();
    bad.public_inputs = Some(Default::default());
    assert_eq!(p.verify(&p.statement, &bad), Err(AttentionError::CheckFailed { step: "public inputs" }));
    let mut bad = p.proof.clone();
    bad.version += 1;
    assert_eq!(p.verify(&p.statement, &bad), Err(AttentionError::UnsupportedVersion(bad.version)));
}

fn an_opening_of_another_proof_is_rejected<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let softmax = softmax_for(&shape);
    let p = prove::<M>(&shape, MaskKind::Causal, softmax, 36);
    let q = prove::<M>(&shape, MaskKind::Causal, softmax, 37);
    let mut bad = p.proof.clone();
    bad.openings = q.proof.openings.clone();
    assert!(p.verify(&p.statement, &bad).is_err());
    let mut bad = p.proof.clone();
    bad.session_proof = q.proof.session_proof.clone();
    bad.chain.qk = q.proof.chain.qk.clone();
    assert!(p.verify(&p.statement, &bad).is_err());
}

fn commitments_of_the_wrong_size_are_refused<M: Mode>() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let p = prove::<M>(&shape, MaskKind::Causal, SoftmaxMode::Identity, 38);
    let bigger = AttentionShape::new(9, 3, 3, 2).unwrap();
    let other = prove::<M>(&bigger, MaskKind::Causal, SoftmaxMode::Identity, 39);
    let mut statement = p.statement.clone();
    statement.commitments.keys = other.statement.commitments.keys.clone();
    assert_eq!(
        p.verify(&statement, &p.proof),
        Err(AttentionError::CheckFailed { step: "input commitment shape" })
    );
}

macro_rules! in_both_modes {
    ($($test:ident),* $(,)?) => {
        mod plain {
            $(#[test] fn $test() { super::$test::<zkmha_attention::mode::Plain>(); })*
        }
        mod zero_knowledge {
            $(#[test] fn $test() { super::$test::<zkmha_attention::mode::Zk>(); })*
        }
    };
}

in_both_modes!(
    round_trips_on_many_shapes,
    a_wrong_output_is_rejected,
    swapped_or_foreign_input_commitments_are_rejected,
    the_other_mask_or_softmax_mode_is_rejected,
    missing_or_unexpected_parts_are_rejected,
    an_opening_of_another_proof_is_rejected,
    commitments_of_the_wrong_size_are_refused,
);
