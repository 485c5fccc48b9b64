//! The gated MLP's rescaled entrywise product `P = round(A ⊙ U / 2^k)`: round trips on many
//! shapes, an `i128` reference, and one test per attack — each run in both modes (the
//! non-integer output is in the module's own tests: it needs the prover's internals).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::hadamard::*;
use zkmha_field::{Fr, fr_from_i64};

mod modes;

use modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes,
    rejects_an_output_off_by_one,
    rejects_another_tensor_through_the_openings,
    the_shape_is_absorbed,
);

fn shape(rows: usize, width: usize) -> HadamardShape {
    HadamardShape { rows, width, shift_bits: 10, output_bits: 14 }
}

fn witness(shape: &HadamardShape, seed: u64) -> HadamardWitness {
    let mut rng = StdRng::seed_from_u64(seed);
    let count = shape.rows * shape.width;
    let left: Vec<i64> = (0..count).map(|_| rng.gen_range(-3000..3000)).collect();
    let right: Vec<i64> = (0..count).map(|_| rng.gen_range(-2000..2000)).collect();
    let output = compute_hadamard(shape, &left, &right).unwrap();
    HadamardWitness { left, right, output }
}

struct Run<M: TestMode> {
    shape: HadamardShape,
    witness: HadamardWitness,
    ranges: HadamardRanges,
    proof: HadamardProofOf<M>,
    claims: HadamardClaims<M::ProverValue>,
    extra: M::Extra,
}

fn prove<M: TestMode>(shape: HadamardShape, witness: HadamardWitness, ranges: HadamardRanges) -> Run<M> {
    let schedule = hadamard_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_hadamard::<M>(p, &shape, &witness, &ranges, t));
    Run { shape, witness, ranges, proof, claims, extra }
}

fn run<M: TestMode>(shape: HadamardShape, seed: u64) -> Run<M> {
    let witness = witness(&shape, seed);
    let ranges = hadamard_ranges(&shape, &witness).unwrap();
    prove::<M>(shape, witness, ranges)
}

fn padded(shape: &HadamardShape, values: &[i64]) -> Vec<Fr> {
    let width = shape.width.next_power_of_two();
    let mut out = vec![Fr::from(0u64); width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width).enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[i * width + j] = fr_from_i64(*v);
        }
    }
    out
}

fn plain(values: &[i64]) -> Vec<Fr> {
    values.iter().map(|v| fr_from_i64(*v)).collect()
}

/// Verifies against `shape` and opens every claim against `tensors` (`A`, `U`, `P`).
fn check_with<M: TestMode>(
    run: &Run<M>,
    shape: &HadamardShape,
    [left, right, output]: [&[i64]; 3],
) -> Result<(), AttentionError> {
    let schedule = hadamard_zk_schedule(shape)?;
    let claims = M::verify(&schedule, &run.extra, |v, t| verify_hadamard::<M>(v, shape, &run.proof, t))?;
    let p = &run.claims;
    let fine = M::discharges(&padded(shape, left), &p.left, &claims.left)
        && M::discharges(&padded(shape, right), &p.right, &claims.right)
        && M::discharges(&padded(shape, output), &p.output, &claims.output)
        && M::discharges(
            &plain(&run.ranges.remainder_multiplicities),
            &p.multiplicities,
            &claims.multiplicities,
        )
        && M::discharges(
            &plain(&run.ranges.output_multiplicities),
            &p.output_multiplicities,
            &claims.output_multiplicities,
        );
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

fn check<M: TestMode>(run: &Run<M>) -> Result<(), AttentionError> {
    let w = &run.witness;
    check_with(run, &run.shape, [&w.left, &w.right, &w.output])
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for (rows, width) in [(1, 1), (1, 6), (3, 5), (8, 16), (5, 33)] {
        let r = run::<M>(shape(rows, width), (rows * 11 + width) as u64);
        check(&r).unwrap_or_else(|e| panic!("{rows}×{width}: {e}"));
    }
    // The widest shift, a one-bit-wide output range (P ∈ {−1, 0}).
    let narrow = HadamardShape { rows: 2, width: 3, shift_bits: 16, output_bits: 1 };
    let w = HadamardWitness {
        left: vec![1, -2, 3, 0, 255, -255],
        right: vec![7, 9, -11, 5, 127, 255],
        output: vec![],
    };
    let output = compute_hadamard(&narrow, &w.left, &w.right).unwrap();
    let w = HadamardWitness { output, ..w };
    let ranges = hadamard_ranges(&narrow, &w).unwrap();
    check(&prove::<M>(narrow, w, ranges)).unwrap();
}

#[test]
fn the_product_is_the_rounded_integer_product() {
    let shape = shape(4, 9);
    let w = witness(&shape, 9);
    for ((a, u), p) in w.left.iter().zip(&w.right).zip(&w.output) {
        // Round half up, floor division on negatives: 2^10·p ≤ a·u + 512 < 2^10·(p + 1).
        let product = i128::from(*a) * i128::from(*u) + 512;
        assert!(i128::from(*p) * 1024 <= product && product < (i128::from(*p) + 1) * 1024, "{a}·{u} → {p}");
    }
    assert_eq!(compute_hadamard(&shape, &[-1; 36], &[512; 36]).unwrap()[0], 0, "−0.5 rounds up to 0");
    assert_eq!(compute_hadamard(&shape, &[-1; 36], &[513; 36]).unwrap()[0], -1);
    let out = compute_hadamard(&HadamardShape { output_bits: 4, ..shape }, &[1000; 36], &[1000; 36]);
    assert!(matches!(out, Err(AttentionError::ValueOutOfRange { tensor: "P", .. })), "{out:?}");
}

fn rejects_an_output_off_by_one<M: TestMode>() {
    let shape = shape(3, 5);
    let honest = witness(&shape, 3);
    let ranges = hadamard_ranges(&shape, &honest).unwrap();
    for (index, delta) in [(0, 1), (7, -1), (14, 1)] {
        let mut cheat = honest.clone();
        cheat.output[index] += delta;
        assert!(hadamard_ranges(&shape, &cheat).is_err(), "the honest prover refuses");
        let r = prove::<M>(shape, cheat, ranges.clone());
        assert_eq!(check(&r).unwrap_err(), M::lookup_error());
    }
}

fn rejects_another_tensor_through_the_openings<M: TestMode>() {
    let r = run::<M>(shape(3, 5), 8);
    let w = &r.witness;
    for k in 0..3 {
        let mut tensors = [w.left.clone(), w.right.clone(), w.output.clone()];
        tensors[k][2] += 1;
        let [a, u, p] = &tensors;
        assert!(check_with(&r, &r.shape, [a, u, p]).is_err(), "tensor {k} changed and accepted");
    }
}

fn the_shape_is_absorbed<M: TestMode>() {
    let shape = shape(3, 5);
    let r = run::<M>(shape, 6);
    let w = &r.witness;
    for other in [
        HadamardShape { shift_bits: 9, ..shape },
        HadamardShape { output_bits: 15, ..shape },
        HadamardShape { width: 6, ..shape },
        HadamardShape { rows: 4, ..shape },
    ] {
        let result = check_with(&r, &other, [&w.left, &w.right, &w.output]);
        assert!(result.is_err(), "{other:?} accepted a proof of {shape:?}");
    }
}
