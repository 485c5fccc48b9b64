//! The fixed-point projection `Y = round((X·W + b) / 2^k)`: round trips on many shapes, the
//! reference, and one test per attack — each run in both modes (`modes::TestMode`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::mode::Plain;
use zkmha_attention::projection::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;

use crate::modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes_and_the_claims_hold,
    rejects_an_output_that_is_not_the_rounded_product,
    rejects_wrong_multiplicities,
    rejects_tampered_messages,
    outputs_outside_the_output_range_are_refused,
    claims_catch_other_tensors,
    rejects_wrong_high_digits,
    several_projections_share_one_batched_sum_check,
);

fn shape(rows: usize, inputs: usize, outputs: usize, shift: u32) -> ProjectionShape {
    ProjectionShape { rows, inputs, outputs, shift, output_bits: Some(16) }
}

fn witness(shape: &ProjectionShape, seed: u64) -> ProjectionWitness {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut draw = |n: usize, bound: i64| (0..n).map(|_| rng.gen_range(-bound..=bound)).collect::<Vec<i64>>();
    let input = draw(shape.rows * shape.inputs, 127);
    let weights = draw(shape.inputs * shape.outputs, 127);
    let bias = draw(shape.outputs, 1 << 12);
    let output = compute_projection(shape, &input, &weights, &bias).unwrap();
    ProjectionWitness { input, weights, bias, output }
}

/// `M` zero-padded to `2^row_vars × 2^column_vars`, as an MLE.
fn padded(values: &[i64], rows: usize, columns: usize, row_vars: usize, column_vars: usize) -> Vec<Fr> {
    let width = 1usize << column_vars;
    let mut out = vec![0i64; width << row_vars];
    for r in 0..rows {
        for c in 0..columns {
            out[r * width + c] = values[r * columns + c];
        }
    }
    integers(row_vars + column_vars, &out)
}

/// An integer table as field elements.
fn integers(num_vars: usize, values: &[i64]) -> Vec<Fr> {
    DenseMultilinearExtension::from_i64(num_vars, values).unwrap().evaluations().to_vec()
}

/// Whether every claim is the prover's and true of the tensors (evaluated directly: the
/// reference for the claims).
fn discharge<M: TestMode>(
    shape: &ProjectionShape,
    w: &ProjectionWitness,
    ranges: &ProjectionRanges,
    prover: &ProjectionClaims<M::ProverValue>,
    verifier: &ProjectionClaims<M::Value>,
) -> bool {
    let (rv, iv, ov) = (shape.row_vars(), shape.input_vars(), shape.output_vars());
    let (low_bits, high_bits) = shape.digits();
    let high = match (&prover.high, &verifier.high) {
        (Some(p), Some(v)) => {
            let digits = integers(shape.grid_vars(), &ranges.high_digits);
            let counts = integers(high_bits as usize, &ranges.high_multiplicities);
            M::discharges(&digits, &p.at_remainder, &v.at_remainder)
                && M::discharges(&digits, &p.at_lookup, &v.at_lookup)
                && M::discharges(&counts, &p.multiplicities, &v.multiplicities)
        }
        (None, None) => high_bits == 0,
        _ => false,
    };
    let output_range =
        match (&prover.output_multiplicities, &verifier.output_multiplicities, shape.output_bits) {
            (Some(p), Some(v), Some(bits)) => {
                M::discharges(&integers(bits as usize, &ranges.output_multiplicities), p, v)
            }
            (None, None, None) => true,
            _ => false,
        };
    M::discharges(&padded(&w.input, shape.rows, shape.inputs, rv, iv), &prover.input, &verifier.input)
        && M::discharges(
            &padded(&w.weights, shape.inputs, shape.outputs, iv, ov),
            &prover.weights,
            &verifier.weights,
        )
        && M::discharges(&padded(&w.bias, 1, shape.outputs, 0, ov), &prover.bias, &verifier.bias)
        && M::discharges(
            &padded(&w.output, shape.rows, shape.outputs, rv, ov),
            &prover.output,
            &verifier.output,
        )
        && M::discharges(
            &integers(low_bits as usize, &ranges.low_multiplicities),
            &prover.multiplicities,
            &verifier.multiplicities,
        )
        && high
        && output_range
}

/// A proof, the prover's claims and the mode's extra data.
type Run<M> = (
    ProjectionsAloneProofOf<M>,
    Vec<ProjectionClaims<<M as zkmha_attention::mode::ProductMode>::ProverValue>>,
    <M as TestMode>::Extra,
);

fn prove_all<M: TestMode>(
    shapes: &[ProjectionShape],
    witnesses: &[&ProjectionWitness],
    ranges: &[&ProjectionRanges],
) -> Run<M> {
    let schedule = projection_alone_zk_schedule(shapes).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_projections_alone::<M>(p, shapes, witnesses, ranges, t));
    (proof, claims, extra)
}

fn verify_all<M: TestMode>(
    shapes: &[ProjectionShape],
    proof: &ProjectionsAloneProofOf<M>,
    extra: &M::Extra,
) -> Result<Vec<ProjectionClaims<M::Value>>, AttentionError> {
    // The verifier's schedule is the statement's (an invalid shape has none: refused first).
    let schedule = projection_alone_zk_schedule(shapes)?;
    M::verify(&schedule, extra, |v, t| verify_projections_alone::<M>(v, shapes, proof, t))
}

fn prove<M: TestMode>(shape: &ProjectionShape, w: &ProjectionWitness, ranges: &ProjectionRanges) -> Run<M> {
    prove_all::<M>(&[*shape], &[w], &[ranges])
}

fn verify<M: TestMode>(
    shape: &ProjectionShape,
    proof: &ProjectionsAloneProofOf<M>,
    extra: &M::Extra,
) -> Result<ProjectionClaims<M::Value>, AttentionError> {
    verify_all::<M>(&[*shape], proof, extra).map(|mut c| c.remove(0))
}

/// Proves `w` with `ranges` (a cheating prover's, perhaps) and returns the verifier's answer.
fn verdict<M: TestMode>(
    shape: &ProjectionShape,
    w: &ProjectionWitness,
    ranges: &ProjectionRanges,
) -> Result<ProjectionClaims<M::Value>, AttentionError> {
    let (proof, _, extra) = prove::<M>(shape, w, ranges);
    verify::<M>(shape, &proof, &extra)
}

fn round_trips_on_many_shapes_and_the_claims_hold<M: TestMode>() {
    for (k, s) in [
        (1, 1, 1, 1),
        (3, 5, 7, 4),
        (7, 16, 3, 8),
        (16, 33, 12, 10),
        (5, 64, 64, 12),
        (2, 3, 130, 20),
        (3, 5, 6, 16),
        (6, 9, 5, 17),
        (5, 7, 3, 24),
        (4, 6, 9, 32),
    ]
    .into_iter()
    .map(|(s, d, n, k)| (k, shape(s, d, n, k)))
    {
        let w = witness(&s, k as u64);
        let ranges = projection_ranges(&s, &w).unwrap();
        let (proof, prover_claims, extra) = prove::<M>(&s, &w, &ranges);
        let claims = verify::<M>(&s, &proof, &extra).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert!(discharge::<M>(&s, &w, &ranges, &prover_claims[0], &claims), "{s:?}");
    }
}

#[test]
fn the_rounding_matches_a_plain_reference() {
    let s = shape(9, 21, 13, 7);
    let w = witness(&s, 3);
    for i in 0..s.rows {
        for c in 0..s.outputs {
            let acc: i64 =
                (0..s.inputs).map(|j| w.input[i * s.inputs + j] * w.weights[j * s.outputs + c]).sum::<i64>()
                    + w.bias[c];
            // Round half up: ⌊acc/2^k + 1/2⌋ (exact in f64 at these sizes).
            let expected = (acc as f64 / f64::from(1u32 << s.shift) + 0.5).floor() as i64;
            assert_eq!(w.output[i * s.outputs + c], expected, "({i}, {c})");
        }
    }
    // Ties round up, negative values included.
    let tie = shape(1, 1, 2, 2);
    assert_eq!(compute_projection(&tie, &[1], &[6, -6], &[0, 0]).unwrap(), vec![2, -1]);
}

/// The multiplicities of `Y + 2^(b−1)` over the padded grid, counting only the entries in
/// `[0, 2^b)` (a cheating prover's best).
fn output_counts(shape: &ProjectionShape, output: &[i64]) -> Vec<i64> {
    let bits = shape.output_bits.unwrap();
    let mut counts = vec![0i64; 1 << bits];
    let width = 1usize << shape.output_vars();
    let mut padded = vec![0i64; width << shape.row_vars()];
    for (i, row) in output.chunks(shape.outputs).enumerate() {
        padded[i * width..i * width + row.len()].copy_from_slice(row);
    }
    for y in padded {
        if let Some(count) = usize::try_from(y + (1 << (bits - 1))).ok().and_then(|k| counts.get_mut(k)) {
            *count += 1;
        }
    }
    counts
}

fn rejects_an_output_that_is_not_the_rounded_product<M: TestMode>() {
    let s = shape(6, 10, 5, 6);
    let honest = witness(&s, 4);
    let ranges = projection_ranges(&s, &honest).unwrap();
    for delta in [1i64, -1] {
        let mut w = honest.clone();
        w.output[7] += delta;
        assert!(projection_ranges(&s, &w).is_err());
        // The output range counted for the changed output: only the remainder's range fails.
        let ranges =
            ProjectionRanges { output_multiplicities: output_counts(&s, &w.output), ..ranges.clone() };
        assert_eq!(verdict::<M>(&s, &w, &ranges).err(), Some(M::lookup_error()), "delta {delta}");
    }
}

fn rejects_wrong_multiplicities<M: TestMode>() {
    let s = shape(4, 8, 4, 5);
    let w = witness(&s, 5);
    let mut ranges = projection_ranges(&s, &w).unwrap();
    let multiplicities = &mut ranges.low_multiplicities;
    let used = multiplicities.iter().position(|&m| m > 0).unwrap();
    multiplicities[used] -= 1;
    let other = (used + 1) % multiplicities.len();
    multiplicities[other] += 1;
    assert_eq!(verdict::<M>(&s, &w, &ranges).err(), Some(M::lookup_error()));
}

fn rejects_tampered_messages<M: TestMode>() {
    let s = shape(5, 12, 6, 8);
    let w = witness(&s, 6);
    let ranges = projection_ranges(&s, &w).unwrap();
    let (proof, _, extra) = prove::<M>(&s, &w, &ranges);
    let check = |proof: &ProjectionsAloneProofOf<M>| verify::<M>(&s, proof, &extra);
    assert!(check(&proof).is_ok());
    // y: the output range's relation (the last message before it). Plain checks it at once; in
    // zero knowledge it is a deferred group equation, and the changed commitment has already
    // moved the sum-check's point, so the input selector's closed form fails first.
    let mut bad = proof.clone();
    M::tamper_sent(&mut bad.projections[0].values[0]);
    let expected = if M::HIDING {
        AttentionError::CheckFailed { step: "projection input selector" }
    } else {
        M::false_relation_error("projection output range")
    };
    assert_eq!(check(&bad).err(), Some(expected));
    // β, a round of the sum-check.
    let mut bad = proof.clone();
    M::tamper_sent(&mut bad.projections[0].values[1]);
    assert!(check(&bad).is_err());
    let mut bad = proof.clone();
    M::tamper_round(&mut bad.sumcheck);
    assert!(check(&bad).is_err());
    // Values missing.
    let mut bad = proof.clone();
    bad.projections[0].values.pop();
    assert_eq!(check(&bad).err(), Some(AttentionError::CheckFailed { step: "projection" }));
    // Another statement: a different shift, width or output range.
    for other in [
        shape(5, 12, 6, 9),
        shape(5, 12, 7, 8),
        ProjectionShape { output_bits: Some(15), ..s },
        ProjectionShape { output_bits: None, ..s },
    ] {
        assert!(verify::<M>(&other, &proof, &extra).is_err(), "{other:?}");
    }
    // Without the output range, a changed y is caught by the sum-check alone.
    let unchecked = ProjectionShape { output_bits: None, ..s };
    let ranges = projection_ranges(&unchecked, &w).unwrap();
    let (mut bad, _, extra) = prove::<M>(&unchecked, &w, &ranges);
    assert!(verify::<M>(&unchecked, &bad, &extra).is_ok());
    M::tamper_sent(&mut bad.projections[0].values[0]);
    assert!(verify::<M>(&unchecked, &bad, &extra).is_err());
}

/// The output range: an output outside `[−2^(b−1), 2^(b−1))` cannot be proven (a named error
/// for the honest prover; the lookup rejects a prover that goes on).
fn outputs_outside_the_output_range_are_refused<M: TestMode>() {
    let s = ProjectionShape { output_bits: Some(4), ..shape(3, 4, 3, 2) };
    let w = witness(&s, 12);
    assert!(w.output.iter().any(|y| !(-8..8).contains(y)), "the test needs a wide output");
    assert!(matches!(projection_ranges(&s, &w), Err(AttentionError::ValueOutOfRange { tensor: "Y", .. })));
    let wide = ProjectionShape { output_bits: Some(16), ..s };
    let ranges = projection_ranges(&wide, &w).unwrap();
    let (proof, _, extra) = prove::<M>(&wide, &w, &ranges);
    verify::<M>(&wide, &proof, &extra).unwrap();
    // Claimed with the narrow range: the honest proof of the wide one does not verify.
    assert!(verify::<M>(&s, &proof, &extra).is_err());
    // A prover that goes on with the narrow range, counting the entries that fit: the others
    // leave the table.
    let narrow = ProjectionRanges { output_multiplicities: output_counts(&s, &w.output), ..ranges.clone() };
    assert_eq!(verdict::<M>(&s, &w, &narrow).err(), Some(M::lookup_error()));
    assert!(matches!(
        projection_ranges(&ProjectionShape { output_bits: Some(17), ..s }, &w),
        Err(AttentionError::InvalidShape(_))
    ));
}

fn claims_catch_other_tensors<M: TestMode>() {
    // An honest proof about (X, W, b, Y) does not discharge against another W or X: the
    // caller's openings are what tie the claims to the committed tensors.
    let s = shape(4, 9, 5, 6);
    let w = witness(&s, 7);
    let ranges = projection_ranges(&s, &w).unwrap();
    let (proof, prover, extra) = prove::<M>(&s, &w, &ranges);
    let claims = verify::<M>(&s, &proof, &extra).unwrap();
    assert!(discharge::<M>(&s, &w, &ranges, &prover[0], &claims));
    let mut other = w.clone();
    other.weights[3] += 1;
    assert!(!discharge::<M>(&s, &other, &ranges, &prover[0], &claims));
    let mut other = w.clone();
    other.input[2] -= 1;
    assert!(!discharge::<M>(&s, &other, &ranges, &prover[0], &claims));
    let mut other = w;
    other.bias[0] += 1;
    assert!(!discharge::<M>(&s, &other, &ranges, &prover[0], &claims));
}

#[test]
fn bad_inputs_get_typed_errors() {
    let s = shape(3, 4, 2, 5);
    let w = witness(&s, 8);
    let mut short = w.clone();
    short.weights.pop();
    assert!(matches!(
        projection_ranges(&s, &short),
        Err(AttentionError::WrongTensorSize { tensor: "W", .. })
    ));
    let mut big = w.clone();
    big.input[1] = 1 << 40;
    assert!(matches!(
        projection_ranges(&s, &big),
        Err(AttentionError::ValueOutOfRange { tensor: "X", index: 1, .. })
    ));
    assert!(matches!(projection_ranges(&shape(3, 4, 2, 0), &w), Err(AttentionError::InvalidShape(_))));
    assert!(matches!(projection_ranges(&shape(0, 4, 2, 5), &w), Err(AttentionError::InvalidShape(_))));
    assert!(matches!(
        compute_projection(&shape(3, 4, 2, 33), &w.input, &w.weights, &w.bias),
        Err(AttentionError::InvalidShape(_))
    ));
}

/// Two digits (`k > 16`): the committed high digits are checked against the low digit's
/// range and their own.
fn rejects_wrong_high_digits<M: TestMode>() {
    let s = shape(5, 8, 6, 24);
    assert_eq!(s.digits(), (12, 12));
    let w = witness(&s, 9);
    let honest = projection_ranges(&s, &w).unwrap();
    assert_eq!(honest.high_digits.len(), 8 * 8);
    let (proof, prover, extra) = prove::<M>(&s, &w, &honest);
    let claims = verify::<M>(&s, &proof, &extra).unwrap();
    assert!(claims.high.is_some());
    assert!(discharge::<M>(&s, &w, &honest, &prover[0], &claims));
    // One unit moved from the low digit to the high one, the high digits recounted: the low
    // digit leaves its range.
    let mut moved = honest.clone();
    moved.high_digits[3] += 1;
    moved.high_multiplicities = vec![0; 1 << 12];
    for &h in &moved.high_digits {
        moved.high_multiplicities[h as usize] += 1;
    }
    assert_eq!(verdict::<M>(&s, &w, &moved).err(), Some(M::lookup_error()));
    // An output one below the rounded product (D grows by 2^24) whose high digit absorbs it:
    // the low digit stays in range, the high digit leaves its own.
    let mut low_output = w.clone();
    low_output.output[3] -= 1;
    let mut wide = honest.clone();
    wide.high_digits[3] += 1 << 12;
    wide.output_multiplicities = output_counts(&s, &low_output.output);
    assert_eq!(verdict::<M>(&s, &low_output, &wide).err(), Some(M::lookup_error()));
    // The sent h = D_hi(r) changes the remainder the sum-check starts from.
    let mut bad = proof.clone();
    M::tamper_sent(bad.projections[0].high_digit_value.as_mut().unwrap());
    assert!(verify::<M>(&s, &bad, &extra).is_err());
    // Dropping h (a one-digit proof shape) is refused before anything else.
    let mut bad = proof.clone();
    bad.projections[0].high_digit_value = None;
    assert_eq!(
        verify::<M>(&s, &bad, &extra).err(),
        Some(AttentionError::CheckFailed { step: "projection high digit" })
    );
    // Claims made against other high digits do not discharge.
    let mut other = honest;
    other.high_digits[0] += 1;
    assert!(!discharge::<M>(&s, &w, &other, &prover[0], &claims));
}

fn several_projections_share_one_batched_sum_check<M: TestMode>() {
    // Q, K, V-like projections of one X, and an output projection of another width.
    let shapes = [shape(6, 12, 8, 6), shape(6, 12, 8, 5), shape(6, 12, 4, 7), shape(6, 4, 12, 20)];
    let witnesses: Vec<ProjectionWitness> =
        shapes.iter().enumerate().map(|(k, s)| witness(s, 40 + k as u64)).collect();
    let ranges: Vec<ProjectionRanges> =
        shapes.iter().zip(&witnesses).map(|(s, w)| projection_ranges(s, w).unwrap()).collect();
    let (proof, prover_claims, extra) =
        prove_all::<M>(&shapes, &witnesses.iter().collect::<Vec<_>>(), &ranges.iter().collect::<Vec<_>>());
    let claims = verify_all::<M>(&shapes, &proof, &extra).unwrap();
    for (((s, w), r), (p, c)) in
        shapes.iter().zip(&witnesses).zip(&ranges).zip(prover_claims.iter().zip(&claims))
    {
        assert!(discharge::<M>(s, w, r, p, c), "{s:?}");
    }
    // A changed output of any one member breaks the batch.
    for k in 0..4 {
        let mut bad = proof.clone();
        M::tamper_sent(&mut bad.projections[k].values[1]);
        assert!(verify_all::<M>(&shapes, &bad, &extra).is_err(), "member {k}");
    }
    // A proof for three projections read as four, or the members reordered.
    let mut short = proof.clone();
    short.projections.pop();
    assert_eq!(
        verify_all::<M>(&shapes, &short, &extra).err(),
        Some(AttentionError::CheckFailed { step: "projection" })
    );
    let mut swapped = proof.clone();
    swapped.projections.swap(0, 1);
    assert!(verify_all::<M>(&shapes, &swapped, &extra).is_err());
}

/// The plain proof's final values (the selector, `x`, `w` per member, in the clear): a wrong
/// one of any member breaks the batch's last check.
#[test]
fn a_wrong_final_value_of_any_member_breaks_the_plain_batch() {
    let shapes = [shape(6, 12, 8, 6), shape(6, 4, 12, 20)];
    let witnesses: Vec<ProjectionWitness> =
        shapes.iter().enumerate().map(|(k, s)| witness(s, 50 + k as u64)).collect();
    let ranges: Vec<ProjectionRanges> =
        shapes.iter().zip(&witnesses).map(|(s, w)| projection_ranges(s, w).unwrap()).collect();
    let (proof, _, ()) = prove_all::<Plain>(
        &shapes,
        &witnesses.iter().collect::<Vec<_>>(),
        &ranges.iter().collect::<Vec<_>>(),
    );
    for k in 0..2 {
        for factor in 0..3 {
            let mut bad = proof.clone();
            bad.sumcheck.final_evaluations[k][factor] += Fr::one();
            assert!(
                matches!(verify_all::<Plain>(&shapes, &bad, &()), Err(AttentionError::Sumcheck { .. })),
                "member {k}, factor {factor}"
            );
        }
    }
    // The input selector [j < d] doubled and x halved keep the batch's final value: only the
    // selector's closed form prefix(d, ρ) catches it.
    let half = zkmha_field::Field::inverse(&Fr::from(2u64)).unwrap();
    for k in 0..2 {
        let mut bad = proof.clone();
        bad.sumcheck.final_evaluations[k][0] *= Fr::from(2u64);
        bad.sumcheck.final_evaluations[k][1] *= half;
        assert_eq!(
            verify_all::<Plain>(&shapes, &bad, &()).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "projection input selector" }),
            "member {k}"
        );
    }
}
