//! Rotary position embeddings: round trips on many shapes, the plain (float) rotation as the
//! reference, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::AttentionError;
use zkmha_attention::rope::*;
use zkmha_field::{Fr, One, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

fn shape(rows: usize, heads: usize, head_dim: usize) -> RotaryShape {
    RotaryShape { rows, heads, head_dim, base: 10_000, fraction_bits: 14, output_bits: ROTARY_OUTPUT_BITS }
}

fn input(shape: &RotaryShape, seed: u64, bound: i64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..shape.rows * shape.width()).map(|_| rng.gen_range(-bound..=bound)).collect()
}

/// A padded `s × n` table's MLE at `point`.
fn evaluate(shape: &RotaryShape, values: &[i64], point: &[Fr]) -> Fr {
    let width = shape.width().next_power_of_two();
    let mut padded = vec![0i64; width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width()).enumerate() {
        padded[i * width..i * width + row.len()].copy_from_slice(row);
    }
    DenseMultilinearExtension::from_i64(point.len(), &padded).unwrap().evaluate(point).unwrap()
}

fn holds(claim: &EvalClaim, actual: Fr) -> bool {
    claim.value == actual
}

struct Run {
    shape: RotaryShape,
    witness: RotaryWitness,
    ranges: RotaryRanges,
    proof: RotaryProof,
}

fn run(shape: RotaryShape, seed: u64) -> Run {
    let p = input(&shape, seed, 2047);
    let witness = RotaryWitness { output: compute_rotation(&shape, &p).unwrap(), input: p };
    let ranges = rotation_ranges(&shape, &witness).unwrap();
    let (proof, _) = prove_rotation(&shape, &witness, &ranges, &mut Transcript::new(b"rope")).unwrap();
    Run { shape, witness, ranges, proof }
}

/// Verifies and discharges every claim against the true tensors.
fn check(run: &Run, proof: &RotaryProof) -> Result<(), AttentionError> {
    let claims = verify_rotation(&run.shape, proof, &mut Transcript::new(b"rope"))?;
    let counts = |bits: u32, values: &[i64], point: &[Fr]| {
        DenseMultilinearExtension::from_i64(bits as usize, values).unwrap().evaluate(point).unwrap()
    };
    let m =
        counts(run.shape.fraction_bits, &run.ranges.remainder_multiplicities, &claims.multiplicities.point);
    let m_r =
        counts(run.shape.output_bits, &run.ranges.output_multiplicities, &claims.output_multiplicities.point);
    let fine = holds(&claims.input, evaluate(&run.shape, &run.witness.input, &claims.input.point))
        && holds(&claims.output, evaluate(&run.shape, &run.witness.output, &claims.output.point))
        && holds(&claims.multiplicities, m)
        && holds(&claims.output_multiplicities, m_r);
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

#[test]
fn round_trips_on_many_shapes() {
    for (rows, heads, head_dim) in [(1, 1, 2), (5, 3, 4), (8, 2, 8), (13, 9, 4), (3, 1, 64), (6, 4, 2)] {
        let r = run(shape(rows, heads, head_dim), rows as u64);
        check(&r, &r.proof).unwrap_or_else(|e| panic!("{:?}: {e}", r.shape));
    }
}

#[test]
fn the_rotation_is_the_float_rotation_of_each_pair() {
    let shape = shape(7, 2, 8);
    let p = input(&shape, 3, 2047);
    let r = compute_rotation(&shape, &p).unwrap();
    let (n, m) = (shape.width(), shape.head_dim);
    for i in 0..shape.rows {
        for c in (0..n).step_by(2) {
            let theta = i as f64 * 10_000f64.powf(-2.0 * ((c % m) / 2) as f64 / m as f64);
            let (x, y) = (p[i * n + c] as f64, p[i * n + c + 1] as f64);
            let (rx, ry) = (x * theta.cos() - y * theta.sin(), x * theta.sin() + y * theta.cos());
            // One rounding of the tables (≤ 2^−15 each, times |x| + |y| < 2^12) and one of R.
            assert!((r[i * n + c] as f64 - rx).abs() <= 0.75, "{i} {c}: {} vs {rx}", r[i * n + c]);
            assert!((r[i * n + c + 1] as f64 - ry).abs() <= 0.75, "{i} {c}: {} vs {ry}", r[i * n + c + 1]);
        }
    }
    // Position 0 is the identity.
    assert_eq!(r[..n], p[..n]);
}

#[test]
fn rejects_a_wrong_output() {
    let r = run(shape(5, 3, 4), 7);
    // An output off by one: its remainder leaves the range, so the prover cannot build the
    // lookup; a prover that sends y off by one fails the sum-check.
    let mut bad = r.witness.clone();
    bad.output[4] += 1;
    assert!(matches!(rotation_ranges(&r.shape, &bad), Err(AttentionError::Lookup(_))));
    // A prover that goes on with the honest multiplicities: the range lookup rejects it.
    if let Ok((proof, _)) = prove_rotation(&r.shape, &bad, &r.ranges, &mut Transcript::new(b"rope")) {
        assert!(matches!(
            verify_rotation(&r.shape, &proof, &mut Transcript::new(b"rope")),
            Err(AttentionError::Lookup(_))
        ));
    }
    // A sent y off by one: the output range's column claim (at the same point) disagrees.
    let mut proof = r.proof.clone();
    proof.output_value += Fr::one();
    assert_eq!(check(&r, &proof), Err(AttentionError::CheckFailed { step: "rotary embedding output range" }));
    // The output range's own lookup claim.
    let mut proof = r.proof.clone();
    proof.lookup.witness_values[1][0] += Fr::one();
    assert!(check(&r, &proof).is_err());
    // An input whose rotation leaves the output range is refused by name.
    let wide = shape(3, 1, 4);
    let p = vec![30_000i64; 12];
    let witness = RotaryWitness { output: compute_rotation(&wide, &p).unwrap(), input: p };
    assert!(matches!(
        rotation_ranges(&wide, &witness),
        Err(AttentionError::ValueOutOfRange { tensor: "R", .. })
    ));
}

#[test]
fn rejects_wrong_pair_values_and_final_values() {
    let r = run(shape(6, 2, 4), 8);
    for k in 0..2 {
        let mut proof = r.proof.clone();
        proof.pair_values[k] += Fr::one();
        assert_eq!(check(&r, &proof), Err(AttentionError::CheckFailed { step: "rotary embedding" }), "a_{k}");
    }
    // The sum-check's final values of eq, P, C, Pσ, S: each is recomputed by the verifier.
    for k in 0..5 {
        let mut proof = r.proof.clone();
        proof.sumcheck.final_evaluations[k] += Fr::one();
        assert!(check(&r, &proof).is_err(), "final value {k}");
    }
}

#[test]
fn rejects_another_input_through_the_openings() {
    let r = run(shape(4, 2, 8), 9);
    // The proof of P against a verifier that opens another P'.
    let other = run(shape(4, 2, 8), 10);
    let swapped =
        Run { witness: RotaryWitness { input: other.witness.input.clone(), ..r.witness.clone() }, ..r };
    assert_eq!(check(&swapped, &swapped.proof), Err(AttentionError::CheckFailed { step: "openings" }));
}

#[test]
fn the_shape_is_absorbed() {
    let r = run(shape(5, 2, 4), 11);
    for other in [
        RotaryShape { base: 10_001, ..r.shape },
        RotaryShape { fraction_bits: 13, ..r.shape },
        RotaryShape { heads: 3, ..r.shape },
        RotaryShape { output_bits: 15, ..r.shape },
    ] {
        assert!(verify_rotation(&other, &r.proof, &mut Transcript::new(b"rope")).is_err(), "{other:?}");
    }
}

#[test]
fn bad_shapes_and_inputs_get_typed_errors() {
    for bad in
        [shape(0, 1, 2), shape(2, 1, 6), shape(2, 1, 1), RotaryShape { fraction_bits: 17, ..shape(2, 1, 2) }]
    {
        assert!(matches!(compute_rotation(&bad, &[]), Err(AttentionError::InvalidShape(_))), "{bad:?}");
    }
    let s = shape(2, 1, 4);
    assert!(matches!(
        compute_rotation(&s, &[0; 7]),
        Err(AttentionError::WrongTensorSize { tensor: "P", .. })
    ));
    let mut p = vec![0i64; 8];
    p[3] = 1 << 40;
    assert!(matches!(
        compute_rotation(&s, &p),
        Err(AttentionError::ValueOutOfRange { tensor: "P", index: 3, .. })
    ));
    let _ = fr_from_i64(0);
}
