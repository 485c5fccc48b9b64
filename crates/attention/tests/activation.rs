//! MLP activations (GELU in both forms, SiLU) by one lookup: round trips on many shapes, the
//! float64 functions as the reference, and one test per attack — each run in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::activation::*;
use zkmha_field::{Fr, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;

use crate::modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes,
    rejects_an_output_that_is_not_the_activation,
    rejects_another_input_or_output_through_the_openings,
    the_shape_is_absorbed,
);

const KINDS: [Activation; 3] = [Activation::GeluErf, Activation::GeluTanh, Activation::Silu];

fn shape(activation: Activation, rows: usize, width: usize) -> ActivationShape {
    ActivationShape {
        activation,
        rows,
        width,
        input_fraction_bits: 10,
        output_fraction_bits: 10,
        input_bits: 14,
    }
}

fn input(shape: &ActivationShape, seed: u64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let half = 1i64 << (shape.input_bits - 1);
    (0..shape.rows * shape.width).map(|_| rng.gen_range(-half..half)).collect()
}

struct Run<M: TestMode> {
    shape: ActivationShape,
    witness: ActivationWitness,
    multiplicities: Vec<i64>,
    proof: ActivationProofOf<M>,
    claims: ActivationClaims<M::ProverValue>,
    extra: M::Extra,
}

fn prove<M: TestMode>(
    shape: ActivationShape,
    witness: ActivationWitness,
    multiplicities: Vec<i64>,
) -> Run<M> {
    let schedule = activation_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_activation::<M>(p, &shape, &witness, &multiplicities, t));
    Run { shape, witness, multiplicities, proof, claims, extra }
}

fn run<M: TestMode>(shape: ActivationShape, seed: u64) -> Run<M> {
    let x = input(&shape, seed);
    let witness = ActivationWitness { output: compute_activation(&shape, &x).unwrap(), input: x };
    let multiplicities = activation_multiplicities(&shape, &witness).unwrap();
    prove::<M>(shape, witness, multiplicities)
}

fn verify<M: TestMode>(
    shape: &ActivationShape,
    proof: &ActivationProofOf<M>,
    extra: &M::Extra,
) -> Result<ActivationClaims<M::Value>, AttentionError> {
    let schedule = activation_zk_schedule(shape)?;
    M::verify(&schedule, extra, |v, t| verify_activation::<M>(v, shape, proof, t))
}

/// A padded `s × n` table, as field elements.
fn padded(shape: &ActivationShape, values: &[i64]) -> Vec<Fr> {
    let width = shape.width.next_power_of_two();
    let mut padded = vec![Fr::from(0u64); width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width).enumerate() {
        for (j, v) in row.iter().enumerate() {
            padded[i * width + j] = fr_from_i64(*v);
        }
    }
    padded
}

/// Verifies and discharges every claim against `input`, `output`.
fn check_against<M: TestMode>(run: &Run<M>, input: &[i64], output: &[i64]) -> Result<(), AttentionError> {
    let claims = verify::<M>(&run.shape, &run.proof, &run.extra)?;
    let counts = DenseMultilinearExtension::from_i64(run.shape.input_bits as usize, &run.multiplicities)
        .unwrap()
        .evaluations()
        .to_vec();
    let p = &run.claims;
    let fine = M::discharges(&padded(&run.shape, input), &p.input, &claims.input)
        && M::discharges(&padded(&run.shape, output), &p.output, &claims.output)
        && M::discharges(&counts, &p.multiplicities, &claims.multiplicities);
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for activation in KINDS {
        for (rows, width) in [(1, 1), (1, 5), (3, 7), (8, 16), (5, 33)] {
            let r = run::<M>(shape(activation, rows, width), (rows * 7 + width) as u64);
            check_against(&r, &r.witness.input, &r.witness.output)
                .unwrap_or_else(|e| panic!("{activation:?} {rows}×{width}: {e}"));
        }
    }
}

#[test]
fn the_tables_are_the_float_functions_rounded() {
    // Independent forms: Φ by its series-free identity erf(x/√2); the tanh form; x/(1+e^−x).
    let gelu = |x: f64| 0.5 * x * (1.0 + libm::erf(x / 2f64.sqrt()));
    let gelu_tanh =
        |x: f64| 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh());
    let silu = |x: f64| x * (1.0 / (1.0 + (-x).exp()));
    for (activation, f) in [
        (Activation::GeluErf, &gelu as &dyn Fn(f64) -> f64),
        (Activation::GeluTanh, &gelu_tanh),
        (Activation::Silu, &silu),
    ] {
        let s = shape(activation, 1, 1 << 14);
        let x: Vec<i64> = (-(1i64 << 13)..1 << 13).collect();
        let y = compute_activation(&s, &x).unwrap();
        for (xi, yi) in x.iter().zip(&y) {
            let reference = f(*xi as f64 / 1024.0) * 1024.0;
            assert!(
                (*yi as f64 - reference).abs() <= 0.5 + 1e-9,
                "{activation:?}({xi}) = {yi}, not {reference}"
            );
        }
        // act(0) = 0: the padding is a row of the table.
        assert_eq!(compute_activation(&s, &vec![0; 1 << 14]).unwrap()[0], 0);
    }
    // The two GELU forms agree to about 10^-3 on [−8, 8).
    let (a, b) = (shape(Activation::GeluErf, 1, 1 << 14), shape(Activation::GeluTanh, 1, 1 << 14));
    let x: Vec<i64> = (-(1i64 << 13)..1 << 13).collect();
    let (ya, yb) = (compute_activation(&a, &x).unwrap(), compute_activation(&b, &x).unwrap());
    assert!(ya.iter().zip(&yb).all(|(p, q)| (p - q).abs() <= 2), "GELU forms differ by more than 2/1024");
    assert!(ya != yb, "the forms are different functions");
}

fn rejects_an_output_that_is_not_the_activation<M: TestMode>() {
    let r = run::<M>(shape(Activation::Silu, 4, 6), 3);
    let mut bad = r.witness.clone();
    bad.output[5] += 1;
    // The honest prover cannot count a pair outside the table.
    assert!(matches!(activation_multiplicities(&r.shape, &bad), Err(AttentionError::Lookup(_))));
    // A cheating prover that goes on with the honest multiplicities: the lookup rejects it.
    let cheat = prove::<M>(r.shape, bad, r.multiplicities.clone());
    assert_eq!(verify::<M>(&cheat.shape, &cheat.proof, &cheat.extra).err(), Some(M::lookup_error()));
    // An input outside the table's domain is refused by name.
    let mut x = r.witness.input.clone();
    x[2] = 1 << 13;
    assert!(matches!(
        compute_activation(&r.shape, &x),
        Err(AttentionError::ValueOutOfRange { tensor: "X", .. })
    ));
}

fn rejects_another_input_or_output_through_the_openings<M: TestMode>() {
    let r = run::<M>(shape(Activation::GeluTanh, 3, 5), 4);
    let (mut x, mut y) = (r.witness.input.clone(), r.witness.output.clone());
    check_against(&r, &x, &y).unwrap();
    x[1] += 1;
    assert_eq!(check_against(&r, &x, &y), Err(AttentionError::CheckFailed { step: "openings" }));
    x[1] -= 1;
    y[4] -= 1;
    assert_eq!(check_against(&r, &x, &y), Err(AttentionError::CheckFailed { step: "openings" }));
}

fn the_shape_is_absorbed<M: TestMode>() {
    let r = run::<M>(shape(Activation::GeluErf, 3, 5), 5);
    for other in [
        ActivationShape { activation: Activation::GeluTanh, ..r.shape },
        ActivationShape { input_fraction_bits: 9, ..r.shape },
        ActivationShape { output_fraction_bits: 11, ..r.shape },
        ActivationShape { rows: 4, ..r.shape },
        ActivationShape { width: 6, ..r.shape },
        ActivationShape { rows: 5, width: 3, ..r.shape },
        ActivationShape { input_bits: 13, ..r.shape },
    ] {
        assert!(verify::<M>(&other, &r.proof, &r.extra).is_err(), "{other:?}");
    }
}

#[test]
fn bad_shapes_get_typed_errors() {
    let good = shape(Activation::Silu, 2, 2);
    for bad in [
        ActivationShape { rows: 0, ..good },
        ActivationShape { width: 0, ..good },
        ActivationShape { input_bits: 0, ..good },
        ActivationShape { input_bits: 17, ..good },
        ActivationShape { input_fraction_bits: 25, ..good },
        ActivationShape { rows: 1 << 14, width: 1 << 13, ..good },
    ] {
        assert!(matches!(compute_activation(&bad, &[]), Err(AttentionError::InvalidShape(_))), "{bad:?}");
    }
    assert!(matches!(
        compute_activation(&good, &[0; 3]),
        Err(AttentionError::WrongTensorSize { tensor: "X", .. })
    ));
}
