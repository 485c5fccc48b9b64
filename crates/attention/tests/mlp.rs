//! MLPs (GPT-2's dense GELU MLP, Llama's gated SiLU MLP) proven from their committed tensors:
//! round trips on many shapes (non-powers of two included), an independent integer reference
//! and a float64 one, and one test per attack — each run in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use std::collections::HashMap;
use zkmha_attention::AttentionError;
use zkmha_attention::activation::{Activation, activation_multiplicities};
use zkmha_attention::hadamard::{HadamardShape, HadamardWitness, compute_hadamard};
use zkmha_attention::mlp::*;
use zkmha_attention::projection::compute_projection;
use zkmha_field::{Fr, fr_from_i64};

mod modes;

use modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes,
    every_polynomial_is_opened,
    rejects_an_activation_output_that_is_not_the_activation,
    rejects_a_pre_activation_that_is_not_the_rounded_projection,
    rejects_a_product_that_is_not_the_product,
    rejects_an_output_that_is_not_the_rounded_projection,
    rejects_a_proof_of_the_other_gating,
    the_shape_is_absorbed,
);

fn dense(activation: Activation, rows: usize, width: usize, hidden: usize) -> MlpShape {
    MlpParams {
        hidden,
        activation,
        activation_input_fraction_bits: 6,
        activation_output_fraction_bits: 6,
        activation_input_bits: 13,
        up_shift: 6,
        gate: None,
        down_shift: 10,
    }
    .shape(rows, width, Some(16))
}

const GATE: GatedProduct = GatedProduct { gate_shift: 6, up_bits: 13 };

/// A gated MLP: the exact product `P = A ⊙ U` sits `2^8` above the dense MLP's `A` here, so
/// the down projection shifts 8 bits more.
fn gated(rows: usize, width: usize, hidden: usize) -> MlpShape {
    with(dense(Activation::Silu, rows, width, hidden), |p| {
        p.gate = Some(GATE);
        p.down_shift = 18;
    })
}

/// `shape` with its constants changed by `change`.
fn with(shape: MlpShape, change: impl FnOnce(&mut MlpParams)) -> MlpShape {
    let mut params = shape.params;
    change(&mut params);
    MlpShape { params, ..shape }
}

fn random(rng: &mut StdRng, count: usize, half: i64) -> Vec<i64> {
    (0..count).map(|_| rng.gen_range(-half..half)).collect()
}

fn linear(rng: &mut StdRng, inputs: usize, outputs: usize) -> LinearWeights {
    LinearWeights { weights: random(rng, inputs * outputs, 16), bias: random(rng, outputs, 256) }
}

/// Inputs and weights small enough that every tensor stays in its range on these shapes.
fn data(shape: &MlpShape, seed: u64) -> (Vec<i64>, MlpWeights) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (d, n) = (shape.width, shape.params.hidden);
    let input = random(&mut rng, shape.rows * d, 64);
    let up = linear(&mut rng, d, n);
    let gate = shape.params.gate.is_some().then(|| linear(&mut rng, d, n));
    let down = linear(&mut rng, n, d);
    (input, MlpWeights { up, gate, down })
}

/// `values` (`rows × columns`, row-major) zero-padded to `2^⌈log rows⌉ × 2^⌈log columns⌉`.
fn padded(values: &[i64], rows: usize, columns: usize) -> Vec<Fr> {
    let width = columns.next_power_of_two();
    let mut out = vec![Fr::from(0u64); width * rows.next_power_of_two()];
    for (i, row) in values.chunks(columns).enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[i * width + j] = fr_from_i64(*v);
        }
    }
    out
}

fn plain(values: &[i64]) -> Vec<Fr> {
    values.iter().map(|v| fr_from_i64(*v)).collect()
}

/// Every committed table of the MLP in its MLE layout: what the claims are opened against.
fn tables(shape: &MlpShape, witness: &MlpWitness, ranges: &MlpRanges) -> HashMap<MlpPolynomial, Vec<Fr>> {
    use MlpPolynomial::*;
    let (s, n) = (shape.rows, shape.params.hidden);
    let mut out = HashMap::new();
    for (k, p) in shape.projection_order().into_iter().enumerate() {
        let projection = shape.projection(p).unwrap();
        let w = witness.projection(p).unwrap();
        let r = &ranges.projections[k];
        if p != MlpProjection::Down {
            out.insert(Input, padded(&w.input, s, projection.inputs));
        }
        out.insert(Weights(p), padded(&w.weights, projection.inputs, projection.outputs));
        out.insert(Bias(p), padded(&w.bias, 1, projection.outputs));
        out.insert(Projected(p), padded(&w.output, s, projection.outputs));
        out.insert(LowMultiplicities(p), plain(&r.low_multiplicities));
        out.insert(HighDigits(p), plain(&r.high_digits));
        out.insert(HighMultiplicities(p), plain(&r.high_multiplicities));
        out.insert(OutputMultiplicities(p), plain(&r.output_multiplicities));
    }
    out.insert(Activated, padded(&witness.activation.output, s, n));
    out.insert(ActivationMultiplicities, plain(&ranges.activation));
    out
}

struct Run<M: TestMode> {
    shape: MlpShape,
    witness: MlpWitness,
    ranges: MlpRanges,
    proof: MlpProof<M>,
    claims: MlpClaims<M::ProverValue>,
    extra: M::Extra,
}

fn prove<M: TestMode>(shape: MlpShape, witness: MlpWitness, ranges: MlpRanges) -> Run<M> {
    let schedule = mlp_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_mlp::<M>(p, &shape, &witness, &ranges, t));
    Run { shape, witness, ranges, proof, claims, extra }
}

fn run<M: TestMode>(shape: MlpShape, seed: u64) -> Run<M> {
    let (input, weights) = data(&shape, seed);
    let witness = compute_mlp(&shape, &input, &weights).unwrap();
    let ranges = mlp_ranges(&shape, &witness).unwrap();
    prove::<M>(shape, witness, ranges)
}

/// Verifies `run`'s proof against `shape` and opens every claim against `tables`.
fn check_with<M: TestMode>(
    run: &Run<M>,
    shape: &MlpShape,
    tables: &HashMap<MlpPolynomial, Vec<Fr>>,
) -> Result<(), AttentionError> {
    let schedule = mlp_zk_schedule(shape)?;
    let claims = M::verify(&schedule, &run.extra, |v, t| verify_mlp::<M>(v, shape, &run.proof, t))?;
    if claims.len() != run.claims.len() {
        return Err(AttentionError::CheckFailed { step: "claim count" });
    }
    for ((key, verifier), (prover_key, prover)) in claims.iter().zip(&run.claims) {
        let table = tables.get(key).ok_or(AttentionError::CheckFailed { step: "a claim on no table" })?;
        if key != prover_key || !M::discharges(table, prover, verifier) {
            return Err(AttentionError::CheckFailed { step: "openings" });
        }
    }
    Ok(())
}

fn check<M: TestMode>(run: &Run<M>) -> Result<(), AttentionError> {
    check_with(run, &run.shape, &tables(&run.shape, &run.witness, &run.ranges))
}

fn shapes() -> Vec<MlpShape> {
    let mut out = Vec::new();
    for (rows, width, hidden) in [(1, 4, 8), (3, 5, 7), (5, 6, 20), (2, 16, 64)] {
        out.push(dense(Activation::GeluTanh, rows, width, hidden));
        out.push(gated(rows, width, hidden));
    }
    out.push(dense(Activation::GeluErf, 4, 3, 12));
    // Two-digit remainders in the up and down projections; no output range on Y.
    let wide_shifts = |p: &mut MlpParams| {
        p.up_shift = 20;
        p.down_shift = 18;
        p.activation_input_fraction_bits = 0;
    };
    out.push(MlpShape { output_bits: None, ..with(dense(Activation::GeluErf, 3, 6, 10), wide_shifts) });
    out.push(MlpShape { output_bits: None, ..with(gated(3, 9, 11), |p| p.down_shift = 27) });
    out
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for (k, shape) in shapes().into_iter().enumerate() {
        let r = run::<M>(shape, k as u64);
        check(&r).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

/// The forward pass written plainly: nested loops, round half up, the activation from the
/// float function rounded (not the lookup table).
fn reference(shape: &MlpShape, input: &[i64], weights: &MlpWeights) -> Vec<i64> {
    let (s, d, n) = (shape.rows, shape.width, shape.params.hidden);
    let round_shift = |value: i128, k: u32| ((value + (1 << (k - 1))) >> k) as i64;
    let project = |x: &[i64], linear: &LinearWeights, inputs: usize, outputs: usize, k: u32| {
        let mut out = vec![0i64; s * outputs];
        for i in 0..s {
            for c in 0..outputs {
                let mut acc = i128::from(linear.bias[c]);
                for j in 0..inputs {
                    acc += i128::from(x[i * inputs + j]) * i128::from(linear.weights[j * outputs + c]);
                }
                out[i * outputs + c] = round_shift(acc, k);
            }
        }
        out
    };
    let act = |u: i64| {
        let x = u as f64 / f64::from(1u32 << shape.params.activation_input_fraction_bits);
        (shape.params.activation.apply(x) * f64::from(1u32 << shape.params.activation_output_fraction_bits))
            .round() as i64
    };
    let hidden = match (shape.params.gate, &weights.gate) {
        (None, None) => {
            project(input, &weights.up, d, n, shape.params.up_shift).into_iter().map(act).collect::<Vec<_>>()
        }
        (Some(GatedProduct { gate_shift, .. }), Some(gate)) => {
            let g = project(input, gate, d, n, gate_shift);
            let u = project(input, &weights.up, d, n, shape.params.up_shift);
            g.into_iter().zip(u).map(|(g, u)| act(g) * u).collect()
        }
        _ => panic!("gating and weights disagree"),
    };
    project(&hidden, &weights.down, n, d, shape.params.down_shift)
}

#[test]
fn the_forward_pass_is_the_plain_reference() {
    for (k, shape) in shapes().into_iter().enumerate() {
        let (input, weights) = data(&shape, 100 + k as u64);
        let witness = compute_mlp(&shape, &input, &weights).unwrap();
        assert_eq!(witness.output(), reference(&shape, &input, &weights).as_slice(), "{shape:?}");
    }
}

#[test]
fn the_forward_pass_follows_the_float_mlp() {
    // x = X/2^6, w = W/2^4 and a bias B at the product's scale 2^10: every integer tensor is a
    // real one at a power-of-two scale, U at 2^(10−k_up), read by the activation at 2^a, so
    // the float MLP applies act(2^(10−k_up−a)·u). Compared at Y's scale.
    let dense_shape = with(dense(Activation::GeluTanh, 3, 8, 32), |p| p.down_shift = 4);
    let gated_shape = with(dense(Activation::Silu, 3, 8, 32), |p| {
        p.gate = Some(GatedProduct { gate_shift: 2, ..GATE });
        p.up_shift = 2;
        p.down_shift = 12;
    });
    for shape in [dense_shape, gated_shape] {
        let (input, weights) = data(&shape, 7);
        let witness = compute_mlp(&shape, &input, &weights).unwrap();
        let (s, d, n) = (shape.rows, shape.width, shape.params.hidden);
        let pow = |bits: i32| 2f64.powi(bits);
        let a = shape.params.activation_input_fraction_bits as i32;
        let o = shape.params.activation_output_fraction_bits as i32;
        let x: Vec<f64> = input.iter().map(|&v| v as f64 / 64.0).collect();
        // y = x·w + B/2^bias_bits, w = W/16.
        let linear = |x: &[f64], l: &LinearWeights, inputs: usize, outputs: usize, bias_bits: i32| {
            (0..s * outputs)
                .map(|index| {
                    let (i, c) = (index / outputs, index % outputs);
                    l.bias[c] as f64 / pow(bias_bits)
                        + (0..inputs)
                            .map(|j| x[i * inputs + j] * l.weights[j * outputs + c] as f64 / 16.0)
                            .sum::<f64>()
                })
                .collect::<Vec<f64>>()
        };
        let act = |u: f64, shift: u32| shape.params.activation.apply(u * pow(10 - shift as i32 - a));
        // The hidden tensor in real units and the scale its integers sit at.
        let (hidden, hidden_bits) = match (shape.params.gate, &weights.gate) {
            (None, None) => (
                linear(&x, &weights.up, d, n, 10)
                    .into_iter()
                    .map(|u| act(u, shape.params.up_shift))
                    .collect(),
                o,
            ),
            (Some(GatedProduct { gate_shift, .. }), Some(gate)) => {
                let g = linear(&x, gate, d, n, 10);
                let u = linear(&x, &weights.up, d, n, 10);
                let up_bits = 10 - shape.params.up_shift as i32;
                let product: Vec<f64> = g.iter().zip(&u).map(|(g, u)| act(*g, gate_shift) * u).collect();
                (product, o + up_bits)
            }
            _ => unreachable!(),
        };
        let y = linear(&hidden, &weights.down, n, d, hidden_bits + 4);
        let y_bits = hidden_bits + 4 - shape.params.down_shift as i32;
        let (mut error, mut norm) = (0f64, 0f64);
        for (integer, float) in witness.output().iter().zip(&y) {
            error += (*integer as f64 - float * pow(y_bits)).powi(2);
            norm += (float * pow(y_bits)).powi(2);
        }
        let relative = (error / norm).sqrt();
        assert!(relative < 0.05, "{shape:?}: relative L2 error {relative}");
    }
}

/// Every committed polynomial carries a claim: a table changed in one entry fails its
/// opening.
fn every_polynomial_is_opened<M: TestMode>() {
    for shape in [shapes()[1], shapes()[9], shapes()[10]] {
        let r = run::<M>(shape, 5);
        let honest = tables(&shape, &r.witness, &r.ranges);
        let mut keys: Vec<MlpPolynomial> = mlp_polynomials(&shape);
        keys.push(MlpPolynomial::Input);
        for p in shape.projection_order() {
            keys.extend([MlpPolynomial::Weights(p), MlpPolynomial::Bias(p)]);
        }
        for key in keys {
            let mut changed = honest.clone();
            let table = changed.get_mut(&key).unwrap_or_else(|| panic!("{key:?} has no table"));
            assert!(!table.is_empty(), "{key:?} is empty");
            table[0] += Fr::from(1u64);
            assert!(
                check_with(&r, &shape, &changed).is_err(),
                "{shape:?}: {key:?} changed and still accepted"
            );
        }
    }
}

/// Recomputes everything after the activation from `activated` (honest from there on).
fn after_activation(shape: &MlpShape, witness: &mut MlpWitness, activated: Vec<i64>) {
    witness.activation.output = activated.clone();
    let down_input = match (&mut witness.product, shape.product_shape()) {
        (Some(product), Some(product_shape)) => {
            product.left = activated.clone();
            product.output = compute_hadamard(&product_shape, &activated, &product.right).unwrap();
            product.output.clone()
        }
        _ => activated,
    };
    set_down_input(shape, witness, down_input);
}

fn set_down_input(shape: &MlpShape, witness: &mut MlpWitness, down_input: Vec<i64>) {
    let down_shape = shape.projection(MlpProjection::Down).unwrap();
    let (_, down) = witness.projections.iter_mut().find(|(p, _)| *p == MlpProjection::Down).unwrap();
    down.output = compute_projection(&down_shape, &down_input, &down.weights, &down.bias).unwrap();
    down.input = down_input;
}

/// The honest run's ranges for the parts the cheat leaves honest, the honest ones elsewhere
/// (a cheating prover cannot count a value the table does not hold).
fn cheat<M: TestMode>(shape: MlpShape, change: impl FnOnce(&MlpShape, &mut MlpWitness)) -> Run<M> {
    let (input, weights) = data(&shape, 11);
    let honest = compute_mlp(&shape, &input, &weights).unwrap();
    let honest_ranges = mlp_ranges(&shape, &honest).unwrap();
    let mut witness = honest.clone();
    change(&shape, &mut witness);
    assert_ne!(witness, honest);
    // Recount what still counts; keep the honest counts where the cheat left the table.
    let mut ranges = honest_ranges.clone();
    for (k, p) in shape.projection_order().into_iter().enumerate() {
        if let Ok(r) = zkmha_attention::projection::projection_ranges(
            &shape.projection(p).unwrap(),
            witness.projection(p).unwrap(),
        ) {
            ranges.projections[k] = r;
        }
    }
    if let Ok(m) = activation_multiplicities(&shape.activation_shape(), &witness.activation) {
        ranges.activation = m;
    }
    prove::<M>(shape, witness, ranges)
}

fn assert_rejected<M: TestMode>(run: &Run<M>) {
    let result = check(run);
    assert!(result.is_err(), "{:?}: a false MLP accepted", run.shape);
}

fn rejects_an_activation_output_that_is_not_the_activation<M: TestMode>() {
    for shape in [dense(Activation::GeluTanh, 3, 5, 7), gated(3, 5, 7)] {
        let r = cheat::<M>(shape, |shape, witness| {
            let mut activated = witness.activation.output.clone();
            activated[4] += 1;
            after_activation(shape, witness, activated);
        });
        assert_eq!(check(&r).unwrap_err(), M::lookup_error(), "{shape:?}");
    }
}

fn rejects_a_pre_activation_that_is_not_the_rounded_projection<M: TestMode>() {
    for shape in [dense(Activation::GeluTanh, 3, 5, 7), gated(3, 5, 7)] {
        let r = cheat::<M>(shape, |shape, witness| {
            // U (dense) or G (gated) one more at one entry, its activation honest from there.
            let first = shape.projection_order()[0];
            let (_, projection) = witness.projections.iter_mut().find(|(p, _)| *p == first).unwrap();
            projection.output[2] += 1;
            witness.activation.input = projection.output.clone();
            let activated = zkmha_attention::activation::compute_activation(
                &shape.activation_shape(),
                &witness.activation.input,
            )
            .unwrap();
            after_activation(shape, witness, activated);
        });
        assert_rejected(&r);
        assert_eq!(check(&r).unwrap_err(), M::lookup_error(), "{shape:?}");
    }
}

/// The down projection proven from `P' = A ⊙ U + 1` at one entry (`P` is never committed: its
/// claim must come out of the product's sum-check).
fn rejects_a_product_that_is_not_the_product<M: TestMode>() {
    let r = cheat::<M>(gated(3, 5, 7), |shape, witness| {
        let product = witness.product.as_mut().unwrap();
        product.output[6] += 1;
        let down_input = product.output.clone();
        set_down_input(shape, witness, down_input);
    });
    assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"));
}

fn rejects_an_output_that_is_not_the_rounded_projection<M: TestMode>() {
    for shape in [dense(Activation::GeluTanh, 3, 5, 7), gated(3, 5, 7)] {
        let r = cheat::<M>(shape, |_, witness| {
            let (_, down) = witness.projections.iter_mut().find(|(p, _)| *p == MlpProjection::Down).unwrap();
            down.output[0] -= 1;
        });
        assert_eq!(check(&r).unwrap_err(), M::lookup_error(), "{shape:?}");
    }
}

fn rejects_a_proof_of_the_other_gating<M: TestMode>() {
    let r = run::<M>(gated(3, 5, 7), 1);
    let other = dense(Activation::Silu, 3, 5, 7);
    let mut tables = tables(&r.shape, &r.witness, &r.ranges);
    tables.insert(
        MlpPolynomial::Projected(MlpProjection::Up),
        tables[&MlpPolynomial::Projected(MlpProjection::Gate)].clone(),
    );
    assert!(check_with(&r, &other, &tables).is_err());
}

fn the_shape_is_absorbed<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let r = run::<M>(shape, 2);
    let honest = tables(&shape, &r.witness, &r.ranges);
    let others = [
        with(shape, |p| p.activation = Activation::GeluTanh),
        with(shape, |p| p.activation_input_fraction_bits = 5),
        with(shape, |p| p.activation_output_fraction_bits = 7),
        with(shape, |p| p.up_shift = 7),
        with(shape, |p| p.down_shift = 9),
        with(shape, |p| p.gate = Some(GatedProduct { gate_shift: 5, ..GATE })),
        with(shape, |p| p.gate = Some(GatedProduct { up_bits: 14, ..GATE })),
        MlpShape { output_bits: Some(15), ..shape },
    ];
    for other in others {
        assert!(check_with(&r, &other, &honest).is_err(), "{other:?} accepted a proof of {shape:?}");
    }
}

#[test]
fn refuses_shapes_and_weights_that_disagree() {
    let shape = gated(2, 3, 4);
    let (input, mut weights) = data(&shape, 1);
    weights.gate = None;
    assert!(matches!(compute_mlp(&shape, &input, &weights), Err(AttentionError::InvalidShape(_))));
    let wide = with(shape, |p| {
        p.activation_output_fraction_bits = 24;
        p.activation_input_fraction_bits = 0;
    });
    assert!(matches!(wide.validate(), Err(AttentionError::InvalidShape(_))));
    // |A| ≤ 2^20 + 1 (b = 13, a = 0, o = 8) and |U| < 2^15 would let A ⊙ U reach 2^35 (the
    // product's own bound; `attack_gated_product` has the edge at 2^30).
    let wide_product = with(shape, |p| {
        p.activation_input_fraction_bits = 0;
        p.activation_output_fraction_bits = 8;
        p.gate = Some(GatedProduct { up_bits: 16, ..GATE });
    });
    assert!(
        matches!(wide_product.validate(), Err(AttentionError::InvalidShape(e)) if e.contains("gated product"))
    );
    let product = HadamardShape { rows: 1, width: 0 };
    assert!(matches!(product.validate(), Err(AttentionError::InvalidShape(_))));
    let product = HadamardShape { width: 1, ..product };
    let witness = HadamardWitness { left: vec![1 << 16], right: vec![1 << 15], output: vec![0] };
    assert!(matches!(
        compute_hadamard(&product, &witness.left, &witness.right),
        Err(AttentionError::ValueOutOfRange { tensor: "P", .. })
    ));
}
