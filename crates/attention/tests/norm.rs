//! Layer norms (RMSNorm, LayerNorm): round trips on many shapes, a float64 reference of each
//! family's norm, and one test per attack — each run in both modes (`modes::TestMode`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::norm::*;
use zkmha_field::{Fr, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;

use crate::modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes,
    rejects_a_wrong_output,
    rejects_wrong_digit_values,
    rejects_junk_in_an_unused_digit_slot,
    rejects_a_wrong_input_high_digit,
    rejects_a_changed_round_and_public_factors,
    rejects_another_input_or_output_through_the_openings,
    the_shape_is_absorbed,
    a_proof_of_the_other_kind_is_rejected,
);

fn shape(kind: NormKind, rows: usize, width: usize, bias: bool, shift_bits: u32) -> NormShape {
    NormShape {
        kind,
        rows,
        width,
        epsilon: 3,
        // c·q ≈ 2^k·(the normalized value): k = f − 2 keeps |Y| ≲ |γ|·|n|/4 + |β| below 2^15.
        scale_bits: shift_bits.saturating_sub(2).max(1),
        shift_bits,
        output_bits: 16,
        bias,
        remainder_digits: 4,
    }
}

fn tensors(shape: &NormShape, seed: u64) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let input = (0..shape.rows * shape.width).map(|_| rng.gen_range(-3000..=3000)).collect();
    let scale = (0..shape.width).map(|_| rng.gen_range(-1500..=1500)).collect();
    let bias =
        if shape.bias { (0..shape.width).map(|_| rng.gen_range(-2000..=2000)).collect() } else { Vec::new() };
    (input, scale, bias)
}

fn honest(shape: &NormShape, seed: u64) -> (NormWitness, NormRanges) {
    let (input, scale, bias) = tensors(shape, seed);
    let output = compute_norm(shape, &input, &scale, &bias).unwrap();
    let witness = NormWitness { input, scale, bias, output };
    let ranges = norm_ranges(shape, &witness).unwrap();
    (witness, ranges)
}

struct Run<M: TestMode> {
    shape: NormShape,
    witness: NormWitness,
    ranges: NormRanges,
    proof: NormAloneProofOf<M>,
    claims: NormClaims<M::ProverValue>,
    extra: M::Extra,
}

fn prove<M: TestMode>(shape: NormShape, witness: NormWitness, ranges: NormRanges) -> Run<M> {
    let schedule = norm_alone_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_norm_alone::<M>(p, &shape, &witness, &ranges, t));
    Run { shape, witness, ranges, proof, claims, extra }
}

fn run<M: TestMode>(shape: NormShape, seed: u64) -> Run<M> {
    let (witness, ranges) = honest(&shape, seed);
    prove::<M>(shape, witness, ranges)
}

fn verify<M: TestMode>(
    shape: &NormShape,
    proof: &NormAloneProofOf<M>,
    extra: &M::Extra,
) -> Result<NormClaims<M::Value>, AttentionError> {
    let schedule = norm_alone_zk_schedule(shape)?;
    M::verify(&schedule, extra, |v, t| verify_norm_alone::<M>(v, shape, proof, t))
}

/// `values` (`rows × columns`) zero-padded to `2^row_vars × 2^column_vars`, as field elements.
fn padded(values: &[i64], rows: usize, columns: usize, row_vars: usize, column_vars: usize) -> Vec<Fr> {
    let width = 1usize << column_vars;
    let mut out = vec![Fr::from(0u64); width << row_vars];
    for (i, row) in values.chunks(columns.max(1)).take(rows).enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[i * width + j] = fr_from_i64(*v);
        }
    }
    out
}

fn counts(values: &[i64]) -> Vec<Fr> {
    let vars = values.len().trailing_zeros() as usize;
    DenseMultilinearExtension::from_i64(vars, values).unwrap().evaluations().to_vec()
}

/// The tables every claim is about, as the verifier's openings would hold them.
struct Tables {
    input: Vec<Fr>,
    output: Vec<Fr>,
    scale: Vec<Fr>,
    bias: Vec<Fr>,
    digits: Vec<Fr>,
    high: Vec<Fr>,
    input_high: Vec<Fr>,
}

fn tables(shape: &NormShape, witness: &NormWitness, ranges: &NormRanges) -> Tables {
    let (rv, cv) = (shape.row_vars(), shape.column_vars());
    Tables {
        input: padded(&witness.input, shape.rows, shape.width, rv, cv),
        output: padded(&witness.output, shape.rows, shape.width, rv, cv),
        scale: padded(&witness.scale, 1, shape.width, 0, cv),
        bias: padded(&witness.bias, 1, shape.width, 0, cv),
        digits: ranges.digits.iter().map(|&v| fr_from_i64(v)).collect(),
        high: ranges.high_remainders.iter().map(|&v| fr_from_i64(v)).collect(),
        input_high: ranges.input_high.iter().map(|&v| fr_from_i64(v)).collect(),
    }
}

/// Verifies and discharges every claim against `tables`.
fn check_against<M: TestMode>(
    run: &Run<M>,
    proof: &NormAloneProofOf<M>,
    t: &Tables,
) -> Result<(), AttentionError> {
    let claims = verify::<M>(&run.shape, proof, &run.extra)?;
    let p = &run.claims;
    let mut fine = p.input.len() == claims.input.len()
        && p.digits.len() == claims.digits.len()
        && p.multiplicities.len() == claims.multiplicities.len();
    for (a, b) in p.input.iter().zip(&claims.input) {
        fine &= M::discharges(&t.input, a, b);
    }
    for (a, b) in p.digits.iter().zip(&claims.digits) {
        fine &= M::discharges(&t.digits, a, b);
    }
    fine &= M::discharges(&t.output, &p.output, &claims.output);
    fine &= M::discharges(&t.scale, &p.scale, &claims.scale);
    fine &= match (&p.bias, &claims.bias) {
        (Some(a), Some(b)) => M::discharges(&t.bias, a, b),
        (None, None) => !run.shape.bias,
        _ => false,
    };
    fine &= match (&p.high_remainders, &claims.high_remainders) {
        (Some(a), Some(b)) => M::discharges(&t.high, a, b),
        (None, None) => !run.shape.has_high_digit(),
        _ => false,
    };
    fine &= M::discharges(&t.input_high, &p.input_high, &claims.input_high);
    let multiplicities = run.ranges.multiplicities();
    fine &= multiplicities.len() == p.multiplicities.len();
    for ((a, b), m) in p.multiplicities.iter().zip(&claims.multiplicities).zip(multiplicities) {
        fine &= M::discharges(&counts(m), a, b);
    }
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

fn check<M: TestMode>(run: &Run<M>, proof: &NormAloneProofOf<M>) -> Result<(), AttentionError> {
    check_against(run, proof, &tables(&run.shape, &run.witness, &run.ranges))
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for kind in [NormKind::Rms, NormKind::Layer] {
        for (rows, width, bias, shift) in [
            (1, 2, false, 12),
            (3, 5, true, 16),
            (4, 8, true, 24),
            (7, 12, false, 30),
            (2, 33, true, 20),
            (5, 1, true, 14),
        ] {
            let shape = shape(kind, rows, width, bias, shift);
            let r = run::<M>(shape, (rows * 31 + width) as u64);
            check(&r, &r.proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        }
        // The most remainder digits (u, v < 2^128: the review's shift by 128 bits).
        let widest = NormShape { remainder_digits: MAX_NORM_REMAINDER_DIGITS, ..shape(kind, 3, 4, true, 20) };
        let r = run::<M>(widest, 5);
        check(&r, &r.proof).unwrap();
    }
}

/// A float64 reference of each family's norm: the proven integers are within the fixed
/// point's error of `x·γ/rms(x) + β` and `(x − μ)·γ/σ + β`.
#[test]
fn the_norm_is_the_float_norm_in_fixed_point() {
    let (a, g, o) = (8u32, 10u32, 10u32);
    let epsilon = 1e-5;
    let mut rng = StdRng::seed_from_u64(5);
    for kind in [NormKind::Rms, NormKind::Layer] {
        let (rows, width) = (6usize, 48usize);
        let x: Vec<f64> = (0..rows * width).map(|_| rng.gen_range(-4.0..4.0) + 0.5).collect();
        let gamma: Vec<f64> = (0..width).map(|_| rng.gen_range(0.5..1.5)).collect();
        let beta: Vec<f64> = (0..width).map(|_| rng.gen_range(-0.5..0.5)).collect();
        let quantize = |v: &[f64], bits: u32| -> Vec<i64> {
            v.iter().map(|x| (x * f64::from(1u32 << bits)).round() as i64).collect()
        };
        // k so that q ≈ 2^16–2^18 on rows of norm ~2.3 (RMSNorm: q ≈ 2^k / rms(X); LayerNorm:
        // q ≈ 2^k / (d·σ(X)), d = 48).
        let k = match kind {
            NormKind::Rms => 27,
            NormKind::Layer => 31,
        };
        let shape = NormShape {
            kind,
            rows,
            width,
            epsilon: epsilon_image(kind, width, epsilon, a),
            scale_bits: k,
            shift_bits: k + g - o,
            output_bits: 16,
            bias: true,
            remainder_digits: 5,
        };
        let (xq, gq, bq) = (quantize(&x, a), quantize(&gamma, g), quantize(&beta, o));
        let y = compute_norm(&shape, &xq, &gq, &bq).unwrap();
        let mut worst = 0f64;
        for i in 0..rows {
            let row: Vec<f64> =
                xq[i * width..(i + 1) * width].iter().map(|&v| v as f64 / f64::from(1u32 << a)).collect();
            let mean = row.iter().sum::<f64>() / width as f64;
            let (center, denominator) = match kind {
                NormKind::Rms => {
                    (0.0, (row.iter().map(|v| v * v).sum::<f64>() / width as f64 + epsilon).sqrt())
                }
                NormKind::Layer => (
                    mean,
                    (row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / width as f64 + epsilon)
                        .sqrt(),
                ),
            };
            for j in 0..width {
                let gamma = gq[j] as f64 / f64::from(1u32 << g);
                let beta = bq[j] as f64 / f64::from(1u32 << o);
                let reference = (row[j] - center) / denominator * gamma + beta;
                let proven = y[i * width + j] as f64 / f64::from(1u32 << o);
                worst = worst.max((proven - reference).abs());
            }
        }
        // One rounding of the output (2^-11) and q's relative error (≤ 2^-16) on |n·γ| < 8.
        assert!(worst <= 1.0 / f64::from(1u32 << o), "{kind:?}: worst error {worst}");
        // And the proof goes through on these constants (two remainder digits).
        assert!(shape.has_high_digit());
        let witness = NormWitness { input: xq, scale: gq, bias: bq, output: y };
        let ranges = norm_ranges(&shape, &witness).unwrap();
        let r = prove::<zkmha_attention::mode::Plain>(shape, witness, ranges);
        check(&r, &r.proof).unwrap();
    }
}

fn rejects_a_wrong_output<M: TestMode>() {
    for kind in [NormKind::Rms, NormKind::Layer] {
        let shape = shape(kind, 5, 6, true, 20);
        let (witness, ranges) = honest(&shape, 7);
        // An output off by one: its remainder leaves the range, so the prover cannot count it.
        let mut bad = witness.clone();
        bad.output[4] += 1;
        assert!(matches!(norm_ranges(&shape, &bad), Err(AttentionError::Lookup(_))), "{kind:?}");
        // A prover that goes on with the output range's multiplicities recounted (and the honest
        // remainder digits): the remainder's range lookup rejects it.
        let bits = shape.output_bits;
        let mut output_counts = vec![0i64; 1 << bits];
        let padded_width = 1usize << shape.column_vars();
        let mut padded_output = vec![0i64; padded_width << shape.row_vars()];
        for (k, y) in bad.output.iter().enumerate() {
            padded_output[(k / shape.width) * padded_width + k % shape.width] = *y;
        }
        for y in padded_output {
            output_counts[(y + (1 << (bits - 1))) as usize] += 1;
        }
        let ranges = NormRanges { output_multiplicities: output_counts, ..ranges };
        let cheat = prove::<M>(shape, bad, ranges);
        assert_eq!(
            verify::<M>(&cheat.shape, &cheat.proof, &cheat.extra).err(),
            Some(M::lookup_error()),
            "{kind:?}"
        );
    }
    // An output outside the output range is refused by name.
    let narrow = NormShape { output_bits: 4, ..shape(NormKind::Rms, 2, 4, true, 12) };
    let (input, scale, bias) = tensors(&narrow, 1);
    let output = compute_norm(&narrow, &input, &scale, &bias).unwrap();
    let witness = NormWitness { input, scale, bias, output };
    let verdict = norm_ranges(&narrow, &witness).err();
    assert!(matches!(verdict, Some(AttentionError::ValueOutOfRange { tensor: "Y", .. })), "{verdict:?}");
}

fn rejects_wrong_digit_values<M: TestMode>() {
    let r = run::<M>(shape(NormKind::Layer, 6, 8, true, 24), 8);
    // A changed e_k breaks the digits' relations (checked at once in the plain mode; in zero
    // knowledge the changed commitment changes every later challenge first, and a prover who
    // sends it consistently is norm.rs's malicious-prover test).
    for k in [0, 1, 3, r.proof.digit_values.len() - 1] {
        let mut proof = r.proof.clone();
        M::tamper_sent(&mut proof.digit_values[k]);
        let verdict = check(&r, &proof);
        if M::HIDING {
            assert!(verdict.is_err(), "e_{k}");
        } else {
            assert_eq!(verdict, Err(M::false_relation_error("norm digits")), "e_{k}");
        }
    }
    let mut proof = r.proof.clone();
    proof.digit_values.pop();
    assert_eq!(check(&r, &proof), Err(AttentionError::CheckFailed { step: "norm digits" }));
}

fn rejects_junk_in_an_unused_digit_slot<M: TestMode>() {
    // n_d = 2: slots 0..6 in use of 8, slots 6 and 7 unused (u, v < (2q + 1)·T < 2^32).
    let shape = NormShape { remainder_digits: 2, ..shape(NormKind::Rms, 3, 4, false, 18) };
    let (witness, mut ranges) = honest(&shape, 9);
    let slots = 1usize << shape.slot_vars();
    assert!(shape.slots() < slots);
    ranges.digits[slots + shape.slots()] = 5;
    ranges.digit_multiplicities[0] -= 1;
    ranges.digit_multiplicities[5] += 1;
    let cheat = prove::<M>(shape, witness, ranges);
    assert_eq!(check(&cheat, &cheat.proof), Err(M::false_relation_error("norm digits")));
}

fn rejects_a_wrong_input_high_digit<M: TestMode>() {
    // X's range: X + 2^28 = X_lo + 2^15·X_hi. A high digit one too large makes X_lo negative
    // (the honest low multiplicities cannot count it): the low digit's lookup rejects it.
    let shape = shape(NormKind::Layer, 3, 5, true, 20);
    let (witness, mut ranges) = honest(&shape, 14);
    let old = ranges.input_high[2];
    ranges.input_high[2] += 1;
    ranges.input_high_multiplicities[old as usize] -= 1;
    ranges.input_high_multiplicities[old as usize + 1] += 1;
    let cheat = prove::<M>(shape, witness, ranges);
    assert_eq!(verify::<M>(&cheat.shape, &cheat.proof, &cheat.extra).err(), Some(M::lookup_error()));
}

/// The proof's `step`-th sum-check: the output's, the rows', the squares', the row sums'.
fn sumcheck_mut<M: TestMode>(proof: &mut NormAloneProofOf<M>, step: usize) -> &mut M::ProductProof {
    match step {
        0 => &mut proof.output,
        1 => &mut proof.rows,
        2 => &mut proof.squares,
        _ => proof.sums.as_mut().unwrap(),
    }
}

fn rejects_a_changed_round_and_public_factors<M: TestMode>() {
    let r = run::<M>(shape(NormKind::Layer, 6, 8, true, 24), 10);
    for step in 0..4 {
        let mut proof = r.proof.clone();
        let sumcheck = sumcheck_mut::<M>(&mut proof, step);
        M::tamper_round(sumcheck);
        assert!(check(&r, &proof).is_err(), "round of sum-check {step}");
    }
    // Each sum-check's public factor (eq with the selectors) against its closed form.
    for (step, name) in
        [(0, "norm output"), (1, "norm inverse square root"), (2, "norm squares"), (3, "norm row sums")]
    {
        let mut proof = r.proof.clone();
        let sumcheck = sumcheck_mut::<M>(&mut proof, step);
        M::tamper_public(sumcheck, 0, 0);
        assert_eq!(check(&r, &proof), Err(M::public_factor_error(name)), "{name}");
    }
}

/// A change to the tables the verifier's openings hold.
type Change = Box<dyn Fn(&mut Tables)>;

fn rejects_another_input_or_output_through_the_openings<M: TestMode>() {
    let r = run::<M>(shape(NormKind::Rms, 4, 8, true, 20), 11);
    let honest_tables = tables(&r.shape, &r.witness, &r.ranges);
    check_against(&r, &r.proof, &honest_tables).unwrap();
    // Another X; an output with one entry moved by 1/2^f (a field element, not an integer);
    // other weights; another digit stack.
    let f_inverse = zkmha_field::Field::inverse(&Fr::from(1u64 << r.shape.shift_bits)).unwrap();
    let changes: Vec<Change> = vec![
        Box::new(|t| t.input[1] += Fr::from(1u64)),
        Box::new(move |t| t.output[2] += f_inverse),
        Box::new(|t| t.scale[0] += Fr::from(1u64)),
        Box::new(|t| t.bias[3] += Fr::from(1u64)),
        Box::new(|t| t.digits[0] += Fr::from(1u64)),
        Box::new(|t| t.high[5] += Fr::from(1u64)),
        Box::new(|t| t.input_high[3] += Fr::from(1u64)),
    ];
    for (k, change) in changes.iter().enumerate() {
        let mut t = tables(&r.shape, &r.witness, &r.ranges);
        change(&mut t);
        assert_eq!(
            check_against(&r, &r.proof, &t),
            Err(AttentionError::CheckFailed { step: "openings" }),
            "change {k}"
        );
    }
}

fn the_shape_is_absorbed<M: TestMode>() {
    let r = run::<M>(shape(NormKind::Rms, 5, 6, true, 20), 12);
    for other in [
        NormShape { epsilon: 4, ..r.shape },
        NormShape { scale_bits: r.shape.scale_bits - 1, ..r.shape },
        NormShape { shift_bits: 19, ..r.shape },
        NormShape { output_bits: 15, ..r.shape },
        NormShape { rows: 6, ..r.shape },
        NormShape { width: 7, ..r.shape },
        NormShape { remainder_digits: 5, ..r.shape },
    ] {
        assert!(verify::<M>(&other, &r.proof, &r.extra).is_err(), "{other:?}");
    }
}

fn a_proof_of_the_other_kind_is_rejected<M: TestMode>() {
    let r = run::<M>(shape(NormKind::Rms, 3, 4, false, 14), 13);
    let layer = NormShape { kind: NormKind::Layer, ..r.shape };
    assert!(verify::<M>(&layer, &r.proof, &r.extra).is_err());
    let l = run::<M>(shape(NormKind::Layer, 3, 4, false, 14), 13);
    let rms = NormShape { kind: NormKind::Rms, ..l.shape };
    assert!(verify::<M>(&rms, &l.proof, &l.extra).is_err());
    let mut proof = l.proof.clone();
    proof.sums = None;
    assert_eq!(check(&l, &proof), Err(AttentionError::CheckFailed { step: "norm row sums" }));
}

#[test]
fn bad_shapes_and_inputs_get_typed_errors() {
    let good = shape(NormKind::Rms, 2, 4, false, 12);
    for bad in [
        NormShape { rows: 0, ..good },
        NormShape { width: 0, ..good },
        NormShape { epsilon: 0, ..good },
        NormShape { scale_bits: 49, ..good },
        NormShape { shift_bits: 0, ..good },
        NormShape { shift_bits: 41, ..good },
        NormShape { output_bits: 21, ..good },
        NormShape { remainder_digits: 0, ..good },
        NormShape { remainder_digits: 9, ..good },
        NormShape { rows: MAX_NORM_ROWS + 1, ..good },
    ] {
        assert!(matches!(compute_norm(&bad, &[], &[], &[]), Err(AttentionError::InvalidShape(_))), "{bad:?}");
    }
    let input = vec![1i64 << zkmha_attention::norm::NORM_INPUT_BOUND_BITS; 8];
    assert!(matches!(
        compute_norm(&good, &input, &[1; 4], &[]),
        Err(AttentionError::ValueOutOfRange { tensor: "X", .. })
    ));
    assert!(matches!(
        compute_norm(&good, &[1; 8], &[1; 3], &[]),
        Err(AttentionError::WrongTensorSize { tensor: "γ", .. })
    ));
    assert!(matches!(
        compute_norm(&good, &[1; 8], &[1; 4], &[1; 4]),
        Err(AttentionError::WrongTensorSize { tensor: "β", .. })
    ));
    // A scale k too large for a zero row: q = ⌊2^48·sqrt(4/3)⌋ > 2^32.
    let wide = NormShape { scale_bits: 48, ..good };
    assert!(matches!(compute_norm(&wide, &[0; 8], &[1; 4], &[]), Err(AttentionError::NumericRange(_))));
    // Remainders u, v that need more digits than the shape has.
    let short = NormShape { remainder_digits: 1, scale_bits: 30, ..good };
    let (input, scale, bias) = tensors(&short, 3);
    let output = compute_norm(&short, &input, &scale, &bias).unwrap();
    assert!(matches!(
        norm_ranges(&short, &NormWitness { input, scale, bias, output }),
        Err(AttentionError::NumericRange(_))
    ));
}

#[test]
fn the_integer_norm_is_exact() {
    // One row, RMSNorm, by hand: x = (3, 4), E = 1, d = 2: T = 26, q = ⌊2^8·sqrt(2/26)⌋ = 71
    // (71²·26 = 131 066 ≤ 2^17 = 131 072 < 72²·26 = 134 784), y = ⌊(x·71·γ + 2^7)/2^8⌋.
    let shape = NormShape {
        kind: NormKind::Rms,
        rows: 1,
        width: 2,
        epsilon: 1,
        scale_bits: 8,
        shift_bits: 8,
        output_bits: 16,
        bias: false,
        remainder_digits: 2,
    };
    let numerator = 2u128 << 16;
    let q = (0u128..).take_while(|q| q * q * 26 <= numerator).last().unwrap();
    assert_eq!(q, 71);
    let y = compute_norm(&shape, &[3, 4], &[256, 512], &[]).unwrap();
    assert_eq!(y, vec![(3 * 71 * 256 + 128) >> 8, (4 * 71 * 512 + 128) >> 8]);
    // LayerNorm of a constant row: every centered value is 0, so is the output (plus β).
    let layer = NormShape { kind: NormKind::Layer, bias: true, ..shape };
    assert_eq!(compute_norm(&layer, &[9, 9], &[100, 100], &[5, -5]).unwrap(), vec![5, -5]);
}
