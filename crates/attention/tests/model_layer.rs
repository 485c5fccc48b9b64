//! The model layer: projections from X and committed weights, then attention, in one proof.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::model_layer::*;
use zkmha_attention::projection::compute_projection;
use zkmha_attention::*;
use zkmha_field::{Fr, One};

fn draw(rng: &mut StdRng, n: usize, bound: i64) -> Vec<i64> {
    (0..n).map(|_| rng.gen_range(-bound..=bound)).collect()
}

fn weights(shape: &ModelShape, seed: u64) -> ModelWeights {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = &shape.attention;
    let d = shape.model_width;
    ModelWeights {
        queries: draw(&mut rng, d * a.model_width(), 127),
        keys: draw(&mut rng, d * a.model_width(), 127),
        values: draw(&mut rng, d * a.value_model_width(), 127),
        queries_bias: draw(&mut rng, a.model_width(), 1000),
        keys_bias: draw(&mut rng, a.model_width(), 1000),
        values_bias: draw(&mut rng, a.value_model_width(), 1000),
    }
}

fn input(shape: &ModelShape, seed: u64) -> Vec<i64> {
    draw(&mut StdRng::seed_from_u64(seed), shape.attention.seq_len * shape.model_width, 127)
}

fn modes(shape: &ModelShape) -> [SoftmaxMode; 2] {
    // Projected entries are about 127·127·√d / 2^k; a scale that gives scores of a few units.
    let scale = 1.0 / (shape.attention.head_dim as f64 * 400.0);
    [
        SoftmaxMode::Identity,
        SoftmaxMode::Exponential(
            SoftmaxParams::for_score_scale(scale, shape.attention.padded_seq_len()).unwrap(),
        ),
    ]
}

struct Run {
    params: zkmha_pcs::HyraxParams,
    statement: ModelStatement,
    proof: ModelLayerProof,
}

fn run(shape: &ModelShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Run {
    let params = model_hyrax_params(shape, softmax);
    let w = weights(shape, seed);
    let model = commit_model(&params, shape, softmax, &w).unwrap();
    let (statement, proof, _) =
        prove_model_layer(&params, shape, mask, softmax, &input(shape, seed + 100), &w, &model).unwrap();
    Run { params, statement, proof }
}

#[test]
fn round_trips_and_the_output_is_attention_of_the_projections() {
    for (s, h, m, mv, d, k) in
        [(5usize, 2usize, 4usize, 4usize, 12usize, 6u32), (8, 3, 4, 2, 7, 5), (3, 1, 2, 3, 16, 8)]
    {
        let shape =
            ModelShape { attention: AttentionShape::new(s, h, m, mv).unwrap(), model_width: d, shift: k };
        for softmax in modes(&shape) {
            for mask in [MaskKind::Causal, MaskKind::None] {
                let r = run(&shape, mask, softmax, 1);
                verify_model_layer(&r.params, &r.statement, &r.proof)
                    .unwrap_or_else(|e| panic!("{shape:?} {mask} {softmax:?}: {e}"));
                // The reference: project with the plain function, then the attention witness.
                let w = weights(&shape, 1);
                let x = input(&shape, 101);
                let project = |weights: &[i64], bias: &[i64], outputs: usize| {
                    let p = projection::ProjectionShape { rows: s, inputs: d, outputs, shift: k };
                    compute_projection(&p, &x, weights, bias).unwrap()
                };
                let inputs = AttentionInputs {
                    queries: project(&w.queries, &w.queries_bias, h * m),
                    keys: project(&w.keys, &w.keys_bias, h * m),
                    values: project(&w.values, &w.values_bias, h * mv),
                };
                let expected =
                    compute_witness_for_mode(&shape.attention, mask, softmax, &inputs).unwrap().output;
                assert_eq!(r.statement.output, expected, "{shape:?}");
                // Through bytes.
                let mut bytes = Vec::new();
                (&r.statement, &r.proof).serialize_compressed(&mut bytes).unwrap();
                let (statement, proof) =
                    <(ModelStatement, ModelLayerProof)>::deserialize_compressed(bytes.as_slice()).unwrap();
                assert!(verify_model_layer(&r.params, &statement, &proof).is_ok());
            }
        }
    }
}

fn small() -> ModelShape {
    ModelShape { attention: AttentionShape::new(6, 2, 4, 4).unwrap(), model_width: 10, shift: 6 }
}

#[test]
fn rejects_a_changed_output() {
    for softmax in modes(&small()) {
        let r = run(&small(), MaskKind::Causal, softmax, 2);
        let mut wrong = r.statement.clone();
        wrong.output[3] += Fr::one();
        assert!(verify_model_layer(&r.params, &wrong, &r.proof).is_err());
    }
}

#[test]
fn rejects_another_input_or_another_model() {
    let shape = small();
    for softmax in modes(&shape) {
        let r = run(&shape, MaskKind::Causal, softmax, 3);
        let other = run(&shape, MaskKind::Causal, softmax, 4);
        // X committed to other values. The commitments are part of the statement, so every
        // challenge changes: the projections' lookups are the first check to fail.
        let mut swapped = r.statement.clone();
        swapped.input = other.statement.input.clone();
        assert!(matches!(verify_model_layer(&r.params, &swapped, &r.proof), Err(AttentionError::Lookup(_))));
        // The same proof against the commitment to other weights, one table at a time.
        for t in 0..6 {
            let mut model = r.statement.clone();
            model.model.tables[t] = other.statement.model.tables[t].clone();
            assert!(
                matches!(verify_model_layer(&r.params, &model, &r.proof), Err(AttentionError::Lookup(_))),
                "weight table {t}"
            );
        }
        // A prover that commits to other Q, K or V than the projections give.
        for t in 0..3 {
            let mut proof = r.proof.clone();
            let c = &other.proof.intermediates;
            match t {
                0 => proof.intermediates.queries = c.queries.clone(),
                1 => proof.intermediates.keys = c.keys.clone(),
                _ => proof.intermediates.values = c.values.clone(),
            }
            assert!(verify_model_layer(&r.params, &r.statement, &proof).is_err(), "intermediate {t}");
        }
    }
}

#[test]
fn rejects_tampered_projection_proofs_and_missing_parts() {
    let shape = small();
    let r = run(&shape, MaskKind::Causal, SoftmaxMode::Identity, 5);
    let mut bad = r.proof.clone();
    bad.projections[1].output_value += Fr::one();
    assert!(matches!(
        verify_model_layer(&r.params, &r.statement, &bad),
        Err(AttentionError::Sumcheck { .. })
    ));
    let mut bad = r.proof.clone();
    bad.projections[2].sumcheck.final_evaluations[0] += Fr::one();
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    let mut bad = r.proof.clone();
    bad.projections.pop();
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "model layer proof shape" })
    );
    let mut bad = r.proof.clone();
    bad.multiplicities.swap(0, 1);
    assert!(verify_model_layer(&r.params, &r.statement, &bad).is_err());
    // The final opening answers Q, K, V and the ten projection tables (X, three weights, three
    // biases, three multiplicity columns): a wrong evaluation of any of them fails it.
    let openings = r.proof.layer.openings.as_ref().unwrap();
    assert_eq!(openings.evaluations.len(), 13);
    for k in 0..13 {
        let mut bad = r.proof.clone();
        bad.layer.openings.as_mut().unwrap().evaluations[k] += Fr::one();
        assert_eq!(
            verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "openings" }),
            "polynomial {k}"
        );
    }
    let mut bad = r.proof;
    bad.layer.openings = None;
    assert_eq!(
        verify_model_layer(&r.params, &r.statement, &bad).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "openings" })
    );
}

#[test]
fn bad_inputs_get_one_typed_error() {
    let shape = small();
    let params = model_hyrax_params(&shape, SoftmaxMode::Identity);
    let w = weights(&shape, 6);
    let model = commit_model(&params, &shape, SoftmaxMode::Identity, &w).unwrap();
    let mut x = input(&shape, 6);
    x.pop();
    assert!(matches!(
        prove_model_layer(&params, &shape, MaskKind::Causal, SoftmaxMode::Identity, &x, &w, &model),
        Err(AttentionError::WrongTensorSize { tensor: "X", .. })
    ));
    let mut short = w.clone();
    short.keys_bias.pop();
    assert!(matches!(
        commit_model(&params, &shape, SoftmaxMode::Identity, &short),
        Err(AttentionError::WrongTensorSize { tensor: "b_k", .. })
    ));
    // A model commitment made for another shape is rejected before any proving.
    let other_shape = ModelShape { model_width: 20, ..shape };
    let other_params = model_hyrax_params(&other_shape, SoftmaxMode::Identity);
    let other =
        commit_model(&other_params, &other_shape, SoftmaxMode::Identity, &weights(&other_shape, 7)).unwrap();
    assert!(matches!(
        prove_model_layer(
            &params,
            &shape,
            MaskKind::Causal,
            SoftmaxMode::Identity,
            &input(&shape, 6),
            &w,
            &other
        ),
        Err(AttentionError::CheckFailed { step: "model commitment shape" })
    ));
}
