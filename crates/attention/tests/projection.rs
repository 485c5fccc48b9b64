//! The fixed-point projection `Y = round((X·W + b) / 2^k)`: round trips on many shapes, the
//! reference, and one test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::AttentionError;
use zkmha_attention::projection::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

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
fn padded(
    values: &[i64],
    rows: usize,
    columns: usize,
    row_vars: usize,
    column_vars: usize,
) -> DenseMultilinearExtension {
    let width = 1usize << column_vars;
    let mut out = vec![0i64; width << row_vars];
    for r in 0..rows {
        for c in 0..columns {
            out[r * width + c] = values[r * columns + c];
        }
    }
    DenseMultilinearExtension::from_i64(row_vars + column_vars, &out).unwrap()
}

fn holds(mle: &DenseMultilinearExtension, claim: &EvalClaim) -> bool {
    mle.evaluate(&claim.point).unwrap() == claim.value
}

/// Discharges every claim by evaluating the tensors directly (the reference for the claims).
fn discharge(
    shape: &ProjectionShape,
    w: &ProjectionWitness,
    ranges: &ProjectionRanges,
    claims: &ProjectionClaims,
) -> bool {
    let (rv, iv, ov) = (shape.row_vars(), shape.input_vars(), shape.output_vars());
    let (low_bits, high_bits) = shape.digits();
    let high = match &claims.high {
        Some(h) => {
            let digits = DenseMultilinearExtension::from_i64(shape.grid_vars(), &ranges.high_digits).unwrap();
            let counts =
                DenseMultilinearExtension::from_i64(high_bits as usize, &ranges.high_multiplicities).unwrap();
            holds(&digits, &h.at_remainder)
                && holds(&digits, &h.at_lookup)
                && holds(&counts, &h.multiplicities)
        }
        None => high_bits == 0,
    };
    let output_range = match (&claims.output_multiplicities, shape.output_bits) {
        (Some(c), Some(bits)) => holds(
            &DenseMultilinearExtension::from_i64(bits as usize, &ranges.output_multiplicities).unwrap(),
            c,
        ),
        (None, None) => true,
        _ => false,
    };
    holds(&padded(&w.input, shape.rows, shape.inputs, rv, iv), &claims.input)
        && holds(&padded(&w.weights, shape.inputs, shape.outputs, iv, ov), &claims.weights)
        && holds(&padded(&w.bias, 1, shape.outputs, 0, ov), &claims.bias)
        && holds(&padded(&w.output, shape.rows, shape.outputs, rv, ov), &claims.output)
        && holds(
            &DenseMultilinearExtension::from_i64(low_bits as usize, &ranges.low_multiplicities).unwrap(),
            &claims.multiplicities,
        )
        && high
        && output_range
}

fn prove(shape: &ProjectionShape, w: &ProjectionWitness, ranges: &ProjectionRanges) -> ProjectionsProof {
    prove_projections(&[*shape], &[w], &[ranges], &mut Transcript::new(b"projection")).unwrap().0
}

fn verify(shape: &ProjectionShape, proof: &ProjectionsProof) -> Result<ProjectionClaims, AttentionError> {
    verify_projections(&[*shape], proof, &mut Transcript::new(b"projection")).map(|mut c| c.remove(0))
}

#[test]
fn round_trips_on_many_shapes_and_the_claims_hold() {
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
        let (proof, mut prover_claims) =
            prove_projections(&[s], &[&w], &[&ranges], &mut Transcript::new(b"projection")).unwrap();
        let claims = verify(&s, &proof).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert_eq!(claims, prover_claims.remove(0));
        assert!(discharge(&s, &w, &ranges, &claims), "{s:?}");
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

#[test]
fn rejects_an_output_that_is_not_the_rounded_product() {
    let s = shape(6, 10, 5, 6);
    let honest = witness(&s, 4);
    let ranges = projection_ranges(&s, &honest).unwrap();
    for delta in [1i64, -1] {
        let mut w = honest.clone();
        w.output[7] += delta;
        assert!(projection_ranges(&s, &w).is_err());
        let proof = prove(&s, &w, &ranges);
        assert!(matches!(verify(&s, &proof), Err(AttentionError::Lookup(_))), "delta {delta}");
    }
}

#[test]
fn rejects_wrong_multiplicities() {
    let s = shape(4, 8, 4, 5);
    let w = witness(&s, 5);
    let mut ranges = projection_ranges(&s, &w).unwrap();
    let multiplicities = &mut ranges.low_multiplicities;
    let used = multiplicities.iter().position(|&m| m > 0).unwrap();
    multiplicities[used] -= 1;
    let other = (used + 1) % multiplicities.len();
    multiplicities[other] += 1;
    assert!(matches!(verify(&s, &prove(&s, &w, &ranges)), Err(AttentionError::Lookup(_))));
}

#[test]
fn rejects_tampered_messages() {
    let s = shape(5, 12, 6, 8);
    let w = witness(&s, 6);
    let ranges = projection_ranges(&s, &w).unwrap();
    let proof = prove(&s, &w, &ranges);
    let mut bad = proof.clone();
    bad.projections[0].output_value += Fr::one();
    assert_eq!(verify(&s, &bad), Err(AttentionError::CheckFailed { step: "projection output range" }));
    // Without the output range, the sent y is caught by the sum-check.
    let unchecked = ProjectionShape { output_bits: None, ..s };
    let ranges = projection_ranges(&unchecked, &w).unwrap();
    let mut bad = prove(&unchecked, &w, &ranges);
    bad.projections[0].output_value += Fr::one();
    assert!(matches!(verify(&unchecked, &bad), Err(AttentionError::Sumcheck { .. })));
    // The output range's lookup claims are checked like the remainder's.
    let mut bad = proof.clone();
    bad.projections[0].lookup.witness_values[1][0] += Fr::one();
    assert!(verify(&s, &bad).is_err());
    let mut bad = proof.clone();
    bad.projections[0].bias_value += Fr::one();
    assert!(matches!(verify(&s, &bad), Err(AttentionError::Sumcheck { .. })));
    let mut bad = proof.clone();
    bad.sumcheck.rounds[0].evaluations[0] += Fr::one();
    assert!(matches!(verify(&s, &bad), Err(AttentionError::Sumcheck { .. })));
    let mut bad = proof.clone();
    bad.projections[0].final_values[1] += Fr::one();
    assert!(matches!(verify(&s, &bad), Err(AttentionError::Sumcheck { .. })));
    let mut bad = proof.clone();
    bad.projections[0].lookup.witness_values[0][0] += Fr::one();
    assert!(matches!(verify(&s, &bad), Err(AttentionError::Lookup(_))));
    // Another statement: a different shift or width.
    assert!(verify(&shape(5, 12, 6, 9), &proof).is_err());
    assert!(verify(&shape(5, 12, 7, 8), &proof).is_err());
    assert!(verify(&ProjectionShape { output_bits: Some(15), ..s }, &proof).is_err());
    assert!(verify(&ProjectionShape { output_bits: None, ..s }, &proof).is_err());
}

/// The output range: an output outside `[−2^(b−1), 2^(b−1))` cannot be proven (a named error
/// for the honest prover; the lookup rejects a prover that goes on).
#[test]
fn outputs_outside_the_output_range_are_refused() {
    let s = ProjectionShape { output_bits: Some(4), ..shape(3, 4, 3, 2) };
    let w = witness(&s, 12);
    assert!(w.output.iter().any(|y| !(-8..8).contains(y)), "the test needs a wide output");
    assert!(matches!(projection_ranges(&s, &w), Err(AttentionError::ValueOutOfRange { tensor: "Y", .. })));
    let wide = ProjectionShape { output_bits: Some(16), ..s };
    let ranges = projection_ranges(&wide, &w).unwrap();
    let proof = prove(&wide, &w, &ranges);
    verify(&wide, &proof).unwrap();
    // Claimed with the narrow range: the honest proof of the wide one does not verify.
    assert!(verify(&s, &proof).is_err());
    assert!(matches!(
        projection_ranges(&ProjectionShape { output_bits: Some(17), ..s }, &w),
        Err(AttentionError::InvalidShape(_))
    ));
}

#[test]
fn claims_catch_other_tensors() {
    // An honest proof about (X, W, b, Y) does not discharge against another W or X: the
    // caller's openings are what tie the claims to the committed tensors.
    let s = shape(4, 9, 5, 6);
    let w = witness(&s, 7);
    let ranges = projection_ranges(&s, &w).unwrap();
    let claims = verify(&s, &prove(&s, &w, &ranges)).unwrap();
    assert!(discharge(&s, &w, &ranges, &claims));
    let mut other = w.clone();
    other.weights[3] += 1;
    assert!(!discharge(&s, &other, &ranges, &claims));
    let mut other = w.clone();
    other.input[2] -= 1;
    assert!(!discharge(&s, &other, &ranges, &claims));
    let mut other = w;
    other.bias[0] += 1;
    assert!(!discharge(&s, &other, &ranges, &claims));
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
#[test]
fn rejects_wrong_high_digits() {
    let s = shape(5, 8, 6, 24);
    assert_eq!(s.digits(), (12, 12));
    let w = witness(&s, 9);
    let honest = projection_ranges(&s, &w).unwrap();
    assert_eq!(honest.high_digits.len(), 8 * 8);
    let claims = verify(&s, &prove(&s, &w, &honest)).unwrap();
    assert!(claims.high.is_some());
    assert!(discharge(&s, &w, &honest, &claims));
    // One unit moved from the low digit to the high one: the low digit leaves its range.
    let mut moved = honest.clone();
    moved.high_digits[3] += 1;
    assert!(matches!(verify(&s, &prove(&s, &w, &moved)), Err(AttentionError::Lookup(_))));
    // An output one below the rounded product (D grows by 2^24) whose high digit absorbs it:
    // the low digit stays in range, the high digit leaves its own.
    let mut low_output = w.clone();
    low_output.output[3] -= 1;
    let mut wide = honest.clone();
    wide.high_digits[3] += 1 << 12;
    assert!(matches!(verify(&s, &prove(&s, &low_output, &wide)), Err(AttentionError::Lookup(_))));
    // The sent h = D_hi(r) changes the remainder the sum-check starts from.
    let mut proof = prove(&s, &w, &honest);
    proof.projections[0].high_digit_value = proof.projections[0].high_digit_value.map(|h| h + Fr::one());
    assert!(matches!(verify(&s, &proof), Err(AttentionError::Sumcheck { .. })));
    // Dropping h (a one-digit proof shape) is refused before anything else.
    let mut proof = prove(&s, &w, &honest);
    proof.projections[0].high_digit_value = None;
    assert!(matches!(verify(&s, &proof), Err(AttentionError::CheckFailed { step: "projection high digit" })));
    // Claims made against other high digits do not discharge.
    let mut other = honest;
    other.high_digits[0] += 1;
    assert!(!discharge(&s, &w, &other, &claims));
}

#[test]
fn several_projections_share_one_batched_sum_check() {
    // Q, K, V-like projections of one X, and an output projection of another width.
    let shapes = [shape(6, 12, 8, 6), shape(6, 12, 8, 5), shape(6, 12, 4, 7), shape(6, 4, 12, 20)];
    let witnesses: Vec<ProjectionWitness> =
        shapes.iter().enumerate().map(|(k, s)| witness(s, 40 + k as u64)).collect();
    let ranges: Vec<ProjectionRanges> =
        shapes.iter().zip(&witnesses).map(|(s, w)| projection_ranges(s, w).unwrap()).collect();
    let (proof, prover_claims) = prove_projections(
        &shapes,
        &witnesses.iter().collect::<Vec<_>>(),
        &ranges.iter().collect::<Vec<_>>(),
        &mut Transcript::new(b"projection"),
    )
    .unwrap();
    let verify_all =
        |proof: &ProjectionsProof| verify_projections(&shapes, proof, &mut Transcript::new(b"projection"));
    let claims = verify_all(&proof).unwrap();
    assert_eq!(claims, prover_claims);
    for ((s, w), (r, c)) in shapes.iter().zip(&witnesses).zip(ranges.iter().zip(&claims)) {
        assert!(discharge(s, w, r, c), "{s:?}");
    }
    // A wrong final value of any one member breaks the batch.
    for k in 0..4 {
        let mut bad = proof.clone();
        bad.projections[k].final_values[0] += Fr::one();
        assert!(matches!(verify_all(&bad), Err(AttentionError::Sumcheck { .. })), "member {k}");
    }
    // A proof for three projections read as four, or the members reordered.
    let mut short = proof.clone();
    short.projections.pop();
    assert_eq!(verify_all(&short), Err(AttentionError::CheckFailed { step: "projection" }));
    let mut swapped = proof.clone();
    swapped.projections.swap(0, 1);
    assert!(verify_all(&swapped).is_err());
}
