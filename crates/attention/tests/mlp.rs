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

use crate::modes::TestMode;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_attention::mode::{Plain, Zk};

in_both_modes!(
    round_trips_on_many_shapes,
    every_polynomial_is_opened,
    rejects_an_activation_output_that_is_not_the_activation,
    rejects_a_pre_activation_that_is_not_the_rounded_projection,
    rejects_a_product_that_is_not_the_product,
    rejects_an_output_that_is_not_the_rounded_projection,
    rejects_a_proof_of_the_other_gating,
    the_shape_is_absorbed,
    honest_round_trip,
    p_prime_off_by_deltas_at_many_entries,
    p_prime_whole_tensor_replaced,
    factors_negated_or_swapped_same_product,
    product_witness_factors_not_the_committed_ones,
    product_proof_from_another_run,
    product_dropped_or_added,
    tampered_product_round_and_eq_factor,
    one_entry_and_degenerate_shapes,
    grid_equal_shapes_are_absorbed,
    malformed_product_bytes_never_panic,
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
    proof: MlpAloneProof<M>,
    claims: MlpClaims<M::ProverValue>,
    extra: M::Extra,
}

fn prove<M: TestMode>(shape: MlpShape, witness: MlpWitness, ranges: MlpRanges) -> Run<M> {
    let schedule = mlp_alone_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_mlp_alone::<M>(p, &shape, &witness, &ranges, t));
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
    let schedule = mlp_alone_zk_schedule(shape)?;
    let claims = M::verify(&schedule, &run.extra, |v, t| verify_mlp_alone::<M>(v, shape, &run.proof, t))?;
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
    // product's own bound; `which_check_refuses_a_wide_product` has the edge at 2^30).
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

// ---------------------------------------------------------------------------------------------
// The fresh-context review of 2026-11-27, kept as regressions.
// Review attacks (09380bd): the exact, uncommitted gated product P = A ⊙ U.
// ---------------------------------------------------------------------------------------------

fn gated_shapes() -> Vec<MlpShape> {
    vec![
        gated(3, 5, 7),
        gated(2, 4, 8),
        MlpShape { output_bits: None, ..with(gated(3, 9, 11), |p| p.down_shift = 27) },
    ]
}

fn honest_round_trip<M: TestMode>() {
    for (k, shape) in gated_shapes().into_iter().enumerate() {
        check(&run::<M>(shape, 40 + k as u64)).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

/// The down projection proven from `P' = A ⊙ U + δ` at one entry (first, middle, last real
/// entry), δ small and large (|P'| stays < 2^31 so the projection prover accepts it).
fn p_prime_off_by_deltas_at_many_entries<M: TestMode>() {
    for shape in gated_shapes() {
        let count = shape.rows * shape.params.hidden;
        for index in [0, count / 2, count - 1] {
            for delta in [1i64, -1, 2, 1 << 20, -(1 << 29)] {
                let r = cheat::<M>(shape, |shape, witness| {
                    let product = witness.product.as_mut().unwrap();
                    let mut p = product.output.clone();
                    p[index] += delta;
                    set_down_input(shape, witness, p);
                });
                let e = check(&r).unwrap_err();
                // With an output range on Y a large δ can leave Y's range first (rejected by
                // the down projection's output-range lookup before the product is reached).
                let expected = e == M::false_claim_error("hadamard product")
                    || (shape.output_bits.is_some() && e == M::lookup_error());
                assert!(expected, "{shape:?} {index} {delta}: {e:?}");
            }
        }
    }
}

/// Whole-tensor replacements: P' = 0, P' = 2·(A⊙U), P' = A (dropping U), P' = U.
fn p_prime_whole_tensor_replaced<M: TestMode>() {
    let shape = gated(3, 5, 7);
    for which in 0..4 {
        let r = cheat::<M>(shape, |shape, witness| {
            let product = witness.product.as_ref().unwrap();
            let p: Vec<i64> = match which {
                0 => vec![0; product.output.len()],
                1 => product.output.iter().map(|v| 2 * v).collect(),
                2 => product.left.clone(),
                _ => product.right.clone(),
            };
            set_down_input(shape, witness, p);
        });
        assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"), "variant {which}");
    }
}

/// The product's sum-check run on factors whose product is the true P but which are not the
/// committed A and U: (−A)⊙(−U) and U⊙A. The sum-check passes; the claims must fail at the
/// openings (A(ρ) claimed as −a, …).
fn factors_negated_or_swapped_same_product<M: TestMode>() {
    let shape = gated(3, 5, 7);
    for which in 0..2 {
        let r = cheat::<M>(shape, |_, witness| {
            let product = witness.product.as_mut().unwrap();
            if which == 0 {
                product.left.iter_mut().for_each(|v| *v = -*v);
                product.right.iter_mut().for_each(|v| *v = -*v);
            } else {
                std::mem::swap(&mut product.left, &mut product.right);
            }
        });
        let e = check(&r).unwrap_err();
        assert_eq!(e, AttentionError::CheckFailed { step: "openings" }, "variant {which}");
    }
}

/// A consistent lie: the product's factors A' = A + 1 at one entry (not the committed A), the
/// down projection proven from A' ⊙ U: the sum-check holds, the opening of A must fail.
fn product_witness_factors_not_the_committed_ones<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let r = cheat::<M>(shape, |shape, witness| {
        let product_shape = shape.product_shape().unwrap();
        let product = witness.product.as_mut().unwrap();
        product.left[4] += 1;
        product.output = compute_hadamard(&product_shape, &product.left, &product.right).unwrap();
        let p = product.output.clone();
        set_down_input(shape, witness, p);
    });
    assert_eq!(check(&r).unwrap_err(), AttentionError::CheckFailed { step: "openings" });
}

fn product_proof_from_another_run<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let a = run::<M>(shape, 1);
    let b = run::<M>(shape, 2);
    let mut spliced = run::<M>(shape, 1);
    spliced.proof.product = b.proof.product.clone();
    assert!(check(&spliced).is_err(), "another run's product proof accepted");
    // And the honest one still passes.
    check(&a).unwrap();
}

fn product_dropped_or_added<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let mut r = run::<M>(shape, 3);
    let product = r.proof.product.take();
    assert_eq!(check(&r).unwrap_err(), AttentionError::CheckFailed { step: "mlp" });
    // A dense MLP's proof with a product proof attached.
    let dense_shape = dense(Activation::Silu, 3, 5, 7);
    let mut d = run::<M>(dense_shape, 3);
    d.proof.product = product;
    assert_eq!(check(&d).unwrap_err(), AttentionError::CheckFailed { step: "mlp" });
}

fn tampered_product_round_and_eq_factor<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let mut r = run::<M>(shape, 4);
    M::tamper_round(&mut r.proof.product.as_mut().unwrap().sumcheck);
    let e = check(&r).unwrap_err();
    assert!(
        matches!(
            e,
            AttentionError::Sumcheck { .. }
                | AttentionError::ZeroKnowledge { .. }
                | AttentionError::CheckFailed { step: "hadamard product" }
        ),
        "round: {e:?}"
    );
    let mut r = run::<M>(shape, 4);
    M::tamper_public(&mut r.proof.product.as_mut().unwrap().sumcheck, 0, 0);
    assert_eq!(check(&r).unwrap_err(), M::public_factor_error("hadamard product"));
    // eq factor scaled by 0: the final value collapses to 0.
    let mut r = run::<M>(shape, 4);
    M::scale_public(&mut r.proof.product.as_mut().unwrap().sumcheck, 0, 0, Fr::from(0u64));
    assert!(check(&r).is_err());
}

/// Grids with zero variables (s = 1, n = 1: the product's sum-check has no rounds) and one.
fn one_entry_and_degenerate_shapes<M: TestMode>() {
    for (rows, width, hidden) in [(1, 1, 1), (1, 3, 1), (2, 1, 1), (1, 1, 2), (1, 2, 3)] {
        let shape = gated(rows, width, hidden);
        check(&run::<M>(shape, 9)).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        for delta in [1i64, -1] {
            let r = cheat::<M>(shape, |shape, witness| {
                let mut p = witness.product.as_ref().unwrap().output.clone();
                let last = p.len() - 1;
                p[last] += delta;
                set_down_input(shape, witness, p);
            });
            let e = check(&r).unwrap_err();
            assert_eq!(e, M::false_claim_error("hadamard product"), "{shape:?}");
        }
    }
}

/// The same padded grid for other rows or hidden widths: only the absorbed shape separates them.
fn grid_equal_shapes_are_absorbed<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let r = run::<M>(shape, 2);
    let honest = tables(&shape, &r.witness, &r.ranges);
    for other in [
        MlpShape { rows: 4, ..shape },
        MlpShape { width: 6, ..shape },
        with(shape, |p| p.hidden = 8),
        with(shape, |p| p.hidden = 6),
    ] {
        assert!(check_with(&r, &other, &honest).is_err(), "{other:?} accepted a proof of {shape:?}");
    }
}

/// ~1500 byte-level mutations of the serialized proof's product part (the last field): bit
/// flips, random bytes, truncations, extensions. Never a panic, never an acceptance.
fn malformed_product_bytes_never_panic<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let mut r = run::<M>(shape, 5);
    let honest_proof = r.proof.clone();
    let tables = tables(&shape, &r.witness, &r.ranges);
    let mut bytes = Vec::new();
    r.proof.serialize_compressed(&mut bytes).unwrap();
    let mut product_bytes = Vec::new();
    r.proof.product.serialize_compressed(&mut product_bytes).unwrap();
    let start = bytes.len() - product_bytes.len();
    let mut rng = StdRng::seed_from_u64(77);
    let (mut parsed, mut panics) = (0, 0);
    for trial in 0..1500 {
        let mut m = bytes.clone();
        match trial % 5 {
            0 => {
                let i = rng.gen_range(start..m.len());
                m[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => {
                let i = rng.gen_range(start..m.len());
                m[i] = rng.r#gen();
            }
            2 => m.truncate(rng.gen_range(start..m.len())),
            3 => {
                // A length prefix (8 bytes, little endian) set to a small other value.
                let i = rng.gen_range(start..m.len().saturating_sub(8));
                let v: u64 = rng.gen_range(0..6);
                m[i..i + 8].copy_from_slice(&v.to_le_bytes());
            }
            _ => {
                let extra: Vec<u8> = (0..rng.gen_range(1..100)).map(|_| rng.r#gen()).collect();
                let i = rng.gen_range(start..m.len());
                m.splice(i..i, extra);
            }
        }
        let Ok(proof) = MlpAloneProof::<M>::deserialize_compressed(&m[..]) else { continue };
        if proof == honest_proof {
            continue;
        }
        parsed += 1;
        r.proof = proof;
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_with(&r, &shape, &tables)));
        match outcome {
            Err(_) => panics += 1,
            Ok(Ok(())) => panic!("trial {trial}: a malformed product proof accepted"),
            Ok(Err(_)) => {}
        }
    }
    assert_eq!(panics, 0, "{panics} panics among {parsed} parsed malformed proofs");
    eprintln!("{parsed} malformed proofs parsed and rejected");
}

/// Structural mutations of the product's proof (plain): final evaluations of other lengths or
/// member counts, rounds dropped or added, round messages of other degrees. Never a panic,
/// never an acceptance.
#[test]
fn structurally_malformed_plain_product_proofs() {
    use zkmha_attention::mode::PlainProductProof;
    let shape = gated(3, 5, 7);
    let mut r = run::<Plain>(shape, 6);
    let honest = r.proof.product.clone().unwrap();
    let tables = tables(&shape, &r.witness, &r.ranges);
    let mut variants: Vec<PlainProductProof> = Vec::new();
    let base = honest.sumcheck.clone();
    for len in [0usize, 1, 2, 4, 5] {
        let mut p = base.clone();
        p.final_evaluations[0].resize(len, Fr::from(1u64));
        variants.push(p);
    }
    let mut p = base.clone();
    p.final_evaluations.clear();
    variants.push(p);
    let mut p = base.clone();
    p.final_evaluations.push(base.final_evaluations[0].clone());
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.rounds.pop();
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.rounds.push(base.sumcheck.rounds[0].clone());
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.rounds.clear();
    variants.push(p);
    for len in [0usize, 1, 2, 4, 8] {
        let mut p = base.clone();
        p.sumcheck.rounds[0].evaluations.resize(len, Fr::from(3u64));
        variants.push(p);
        let mut p = base.clone();
        let last = p.sumcheck.rounds.len() - 1;
        p.sumcheck.rounds[last].evaluations.resize(len, Fr::from(3u64));
        variants.push(p);
    }
    refuse_every_variant(&mut r, &shape, &tables, variants);
}

/// The same in zero knowledge: the factor values' vectors and the rounds.
#[test]
fn structurally_malformed_zk_product_proofs() {
    use zkmha_zk::ZkProductProof;
    let shape = gated(3, 5, 7);
    let mut r = run::<Zk>(shape, 6);
    let honest = r.proof.product.clone().unwrap();
    let tables = tables(&shape, &r.witness, &r.ranges);
    let base: ZkProductProof = honest.sumcheck.clone();
    let mut variants: Vec<ZkProductProof> = Vec::new();
    for len in [0usize, 2, 3] {
        let mut p = base.clone();
        p.factors.public_values.resize(len, Fr::from(1u64));
        variants.push(p);
    }
    for len in [0usize, 1, 3, 4] {
        let mut p = base.clone();
        let fill = base.factors.hidden_values[0];
        p.factors.hidden_values.resize(len, fill);
        variants.push(p);
    }
    let mut p = base.clone();
    p.factors.partial_products.push(base.factors.hidden_values[0]);
    variants.push(p);
    let mut p = base.clone();
    p.factors.hidden_values.swap(0, 1);
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.sumcheck.rounds.pop();
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.sumcheck.rounds.push(base.sumcheck.sumcheck.rounds[0].clone());
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.sumcheck.rounds.clear();
    variants.push(p);
    for len in [0usize, 1, 2, 4, 8] {
        let mut p = base.clone();
        p.sumcheck.sumcheck.rounds[0].evaluations.resize(len, Fr::from(3u64));
        variants.push(p);
    }
    let mut p = base.clone();
    p.sumcheck.masked_sum += Fr::from(1u64);
    variants.push(p);
    let mut p = base.clone();
    p.sumcheck.mask_value_commitment = base.sumcheck.mask_sum_commitment;
    variants.push(p);
    refuse_every_variant(&mut r, &shape, &tables, variants);
}

/// Verifies `run` with each product proof of `variants` in its place: none accepted, none
/// panics.
fn refuse_every_variant<M: TestMode>(
    run: &mut Run<M>,
    shape: &MlpShape,
    tables: &HashMap<MlpPolynomial, Vec<Fr>>,
    variants: Vec<M::ProductProof>,
) {
    for (k, v) in variants.into_iter().enumerate() {
        run.proof.product = Some(zkmha_attention::hadamard::HadamardProof { sumcheck: v });
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_with(run, shape, tables)));
        match out {
            Err(_) => panic!("variant {k}: the verifier panicked"),
            Ok(Ok(())) => panic!("variant {k}: accepted"),
            Ok(Err(_)) => {}
        }
    }
}

/// Which check refuses the wide shapes: `up_bits: 17` is refused by the up projection's
/// output range (1..=16), not by the product's bound; the product's bound is reached only with
/// a wider activation, and met exactly at `2^30`.
#[test]
fn which_check_refuses_a_wide_product() {
    let shape = gated(2, 3, 4);
    let seventeen = with(shape, |p| p.gate = Some(GatedProduct { up_bits: 17, ..GATE }));
    let e = seventeen.validate().unwrap_err();
    assert!(format!("{e}").contains("output range"), "{e}");
    // |A| ≤ 2^20 (b = 13, a = 0, o = 8) and |U| ≤ 2^15: the product's own check.
    let wide = with(shape, |p| {
        p.activation_input_fraction_bits = 0;
        p.activation_output_fraction_bits = 8;
        p.gate = Some(GatedProduct { up_bits: 16, ..GATE });
    });
    let e = wide.validate().unwrap_err();
    assert!(format!("{e}").contains("gated product reaches 2^35"), "{e}");
    // One bit less of U or of A passes exactly at the bound: 2^20·2^10 = 2^30.
    let edge = with(wide, |p| p.gate = Some(GatedProduct { up_bits: 11, ..GATE }));
    edge.validate().unwrap();
}
