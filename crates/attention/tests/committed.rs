//! Committed mode: the verifier checks the layer without Q, K, V.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::*;
use zkmha_field::{Fr, One};

fn inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

#[test]
fn committed_layer_verifies_without_the_inputs() {
    for (s, h, m, mv) in [(1usize, 1usize, 1usize, 1usize), (7, 3, 4, 2), (16, 8, 2, 3), (33, 12, 3, 5)] {
        let shape = AttentionShape::new(s, h, m, mv).unwrap();
        let params = hyrax_params_for(&shape, SoftmaxMode::Identity);
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (statement, proof, _) =
                prove_layer_committed(&params, &shape, mask, SoftmaxMode::Identity, &inputs(&shape, 1))
                    .unwrap();
            verify_layer_committed(&params, &statement, &proof)
                .unwrap_or_else(|e| panic!("{shape:?} {mask}: {e}"));
            // Through bytes, as the CLI ships them.
            let mut bytes = Vec::new();
            statement.serialize_compressed(&mut bytes).unwrap();
            proof.serialize_compressed(&mut bytes).unwrap();
            let mut reader = &bytes[..];
            let statement2 = CommittedStatement::deserialize_compressed(&mut reader).unwrap();
            let proof2 = CommittedLayerProof::deserialize_compressed(&mut reader).unwrap();
            assert!(verify_layer_committed(&params, &statement2, &proof2).is_ok());
        }
    }
}

#[test]
fn swapped_committed_input_is_rejected() {
    let shape = AttentionShape::new(7, 3, 4, 2).unwrap();
    let params = hyrax_params_for(&shape, SoftmaxMode::Identity);
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs(&shape, 1))
            .unwrap();
    let other = commit_inputs(&params, &shape, SoftmaxMode::Identity, &inputs(&shape, 2)).unwrap();
    for k in 0..3 {
        let mut swapped = statement.clone();
        match k {
            0 => swapped.commitments.queries = other.queries.clone(),
            1 => swapped.commitments.keys = other.keys.clone(),
            _ => swapped.commitments.values = other.values.clone(),
        }
        assert!(verify_layer_committed(&params, &swapped, &proof).is_err(), "input {k}");
    }
    // Q and K commitments exchanged.
    let mut exchanged = statement.clone();
    std::mem::swap(&mut exchanged.commitments.queries, &mut exchanged.commitments.keys);
    assert!(verify_layer_committed(&params, &exchanged, &proof).is_err());
}

#[test]
fn tampered_opening_and_output_are_rejected() {
    // n = log ŝ + log d = 4 + 5: the 5 column variables lie inside the shared column point.
    let shape = AttentionShape::new(16, 4, 8, 8).unwrap();
    let params = hyrax_params_for(&shape, SoftmaxMode::Identity);
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::None, SoftmaxMode::Identity, &inputs(&shape, 3))
            .unwrap();
    assert_eq!(proof.openings.as_ref().unwrap().openings.len(), 1, "the three claims share one opening");
    let mut bad = proof.clone();
    bad.openings.as_mut().unwrap().openings[0].combined_row[0] += Fr::one();
    assert_eq!(
        verify_layer_committed(&params, &statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "openings" })
    );
    let mut bad = proof.clone();
    bad.openings = None;
    assert_eq!(
        verify_layer_committed(&params, &statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "openings" })
    );
    let mut wrong = statement.clone();
    wrong.output[0] += Fr::one();
    assert!(verify_layer_committed(&params, &wrong, &proof).is_err());
    let mut wrong_shape = statement.clone();
    wrong_shape.commitments.values.num_vars += 1;
    assert_eq!(
        verify_layer_committed(&params, &wrong_shape, &proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "input commitment shape" })
    );
    // The same table committed in another layout (square instead of the layer's) is another
    // statement: rejected before any check.
    let mut other_layout = statement.clone();
    let padded: Vec<i64> = vec![1; other_layout.commitments.keys.rows.len() << 5];
    let n = other_layout.commitments.keys.num_vars;
    other_layout.commitments.keys =
        zkmha_pcs::Hyrax::commit_small_with_columns(&params, n, 4, &padded).unwrap();
    assert_eq!(
        verify_layer_committed(&params, &other_layout, &proof).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "input commitment shape" })
    );
}

#[test]
fn different_value_width_still_shares_one_opening() {
    // d = 2^⌈log₂ 12⌉ = 16 and d_v = 2^⌈log₂ 3⌉ = 4: Q, K have 8 variables, V 6; with one
    // layout (4 column variables) all three claims reduce to one point and one combined row.
    let shape = AttentionShape::new(16, 3, 4, 1).unwrap();
    let params = hyrax_params_for(&shape, SoftmaxMode::Identity);
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs(&shape, 5))
            .unwrap();
    let openings = proof.openings.as_ref().unwrap();
    assert_eq!(openings.openings.len(), 1);
    assert_eq!(openings.openings[0].combined_row.len(), 16);
    assert!(verify_layer_committed(&params, &statement, &proof).is_ok());
    for k in 0..3 {
        let mut bad = proof.clone();
        bad.openings.as_mut().unwrap().evaluations[k] += Fr::one();
        assert_eq!(
            verify_layer_committed(&params, &statement, &bad).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "openings" }),
            "input {k}"
        );
    }
}
