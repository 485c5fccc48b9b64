//! Rotary position embeddings: round trips on many shapes, the plain (float) rotation as the
//! reference, and one test per attack — each run in both modes (`modes::TestMode`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::mode::Plain;
use zkmha_attention::rope::*;
use zkmha_field::{Fr, One, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;

use crate::modes::TestMode;

in_both_modes!(
    round_trips_on_many_shapes,
    rejects_a_wrong_output,
    rejects_wrong_pair_values,
    rejects_a_changed_round_and_public_factor,
    rejects_another_input_through_the_openings,
    the_shape_is_absorbed,
);

fn shape(rows: usize, heads: usize, head_dim: usize) -> RotaryShape {
    RotaryShape { rows, heads, head_dim, base: 10_000, fraction_bits: 14, output_bits: ROTARY_OUTPUT_BITS }
}

fn input(shape: &RotaryShape, seed: u64, bound: i64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..shape.rows * shape.width()).map(|_| rng.gen_range(-bound..=bound)).collect()
}

/// A padded `s × n` table, as field elements.
fn padded(shape: &RotaryShape, values: &[i64]) -> Vec<Fr> {
    let width = shape.width().next_power_of_two();
    let mut padded = vec![0i64; width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width()).enumerate() {
        padded[i * width..i * width + row.len()].copy_from_slice(row);
    }
    padded.into_iter().map(fr_from_i64).collect()
}

struct Run<M: TestMode> {
    shape: RotaryShape,
    witness: RotaryWitness,
    ranges: RotaryRanges,
    proof: RotaryAloneProofOf<M>,
    claims: RotaryClaims<M::ProverValue>,
    extra: M::Extra,
}

fn honest(shape: RotaryShape, seed: u64) -> (RotaryWitness, RotaryRanges) {
    let p = input(&shape, seed, 2047);
    let witness = RotaryWitness { output: compute_rotation(&shape, &p).unwrap(), input: p };
    let ranges = rotation_ranges(&shape, &witness).unwrap();
    (witness, ranges)
}

/// Proves `witness` with `ranges` (a cheating prover's, perhaps).
fn prove<M: TestMode>(shape: RotaryShape, witness: RotaryWitness, ranges: RotaryRanges) -> Run<M> {
    let schedule = rotation_alone_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_rotation_alone::<M>(p, &shape, &witness, &ranges, t));
    Run { shape, witness, ranges, proof, claims, extra }
}

fn run<M: TestMode>(shape: RotaryShape, seed: u64) -> Run<M> {
    let (witness, ranges) = honest(shape, seed);
    prove::<M>(shape, witness, ranges)
}

fn verify<M: TestMode>(
    shape: &RotaryShape,
    proof: &RotaryAloneProofOf<M>,
    extra: &M::Extra,
) -> Result<RotaryClaims<M::Value>, AttentionError> {
    let schedule = rotation_alone_zk_schedule(shape)?;
    M::verify(&schedule, extra, |v, t| verify_rotation_alone::<M>(v, shape, proof, t))
}

/// Verifies and discharges every claim against the true tensors.
fn check<M: TestMode>(run: &Run<M>, proof: &RotaryAloneProofOf<M>) -> Result<(), AttentionError> {
    let claims = verify::<M>(&run.shape, proof, &run.extra)?;
    let counts = |bits: u32, values: &[i64]| {
        DenseMultilinearExtension::from_i64(bits as usize, values).unwrap().evaluations().to_vec()
    };
    let p = &run.claims;
    let fine = M::discharges(&padded(&run.shape, &run.witness.input), &p.input, &claims.input)
        && M::discharges(&padded(&run.shape, &run.witness.output), &p.output, &claims.output)
        && M::discharges(
            &counts(run.shape.fraction_bits, &run.ranges.remainder_multiplicities),
            &p.multiplicities,
            &claims.multiplicities,
        )
        && M::discharges(
            &counts(run.shape.output_bits, &run.ranges.output_multiplicities),
            &p.output_multiplicities,
            &claims.output_multiplicities,
        );
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for (rows, heads, head_dim) in [(1, 1, 2), (5, 3, 4), (8, 2, 8), (13, 9, 4), (3, 1, 64), (6, 4, 2)] {
        let r = run::<M>(shape(rows, heads, head_dim), rows as u64);
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

fn rejects_a_wrong_output<M: TestMode>() {
    let r = run::<M>(shape(5, 3, 4), 7);
    // An output off by one: its remainder leaves the range, so the prover cannot build the
    // lookup's multiplicities.
    let mut bad = r.witness.clone();
    bad.output[4] += 1;
    assert!(matches!(rotation_ranges(&r.shape, &bad), Err(AttentionError::Lookup(_))));
    // A prover that goes on, its output range's multiplicities recounted: the remainder's range
    // lookup rejects it.
    let bits = r.shape.output_bits;
    let mut counts = vec![0i64; 1 << bits];
    for y in padded_integers(&r.shape, &bad.output) {
        counts[(y + (1 << (bits - 1))) as usize] += 1;
    }
    let ranges = RotaryRanges { output_multiplicities: counts, ..r.ranges.clone() };
    let cheat = prove::<M>(r.shape, bad, ranges);
    assert_eq!(verify::<M>(&cheat.shape, &cheat.proof, &cheat.extra).err(), Some(M::lookup_error()));
    // A sent y off by one (the output range's column claim disagrees, and every later
    // challenge changes; a consistent cheating prover of y is in rope.rs's forgery tests).
    let mut proof = r.proof.clone();
    M::tamper_sent(&mut proof.output_value);
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

/// A padded `s × n` integer table.
fn padded_integers(shape: &RotaryShape, values: &[i64]) -> Vec<i64> {
    let width = shape.width().next_power_of_two();
    let mut padded = vec![0i64; width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width()).enumerate() {
        padded[i * width..i * width + row.len()].copy_from_slice(row);
    }
    padded
}

fn rejects_wrong_pair_values<M: TestMode>() {
    let r = run::<M>(shape(6, 2, 4), 8);
    for k in 0..2 {
        let mut proof = r.proof.clone();
        M::tamper_sent(&mut proof.pair_values[k]);
        assert_eq!(check(&r, &proof), Err(M::false_relation_error("rotary embedding pair values")), "a_{k}");
    }
    let mut proof = r.proof.clone();
    proof.pair_values.pop();
    assert_eq!(check(&r, &proof), Err(AttentionError::CheckFailed { step: "rotary embedding pair values" }));
}

fn rejects_a_changed_round_and_public_factor<M: TestMode>() {
    let r = run::<M>(shape(6, 2, 4), 8);
    let mut proof = r.proof.clone();
    M::tamper_round(&mut proof.sumcheck);
    assert!(check(&r, &proof).is_err());
    // C and S (factors 2 and 4, the second and third public ones): each checked against its
    // closed form; eq doubled, C and S halved (the sum unchanged): only the closed forms catch
    // it.
    for (factor, public) in [(2, 1), (4, 2)] {
        let mut proof = r.proof.clone();
        M::tamper_public(&mut proof.sumcheck, factor, public);
        assert_eq!(check(&r, &proof), Err(M::public_factor_error("rotary embedding")), "factor {factor}");
    }
    let mut proof = r.proof.clone();
    let two = Fr::from(2u64);
    let half = zkmha_field::Field::inverse(&two).unwrap();
    M::scale_public(&mut proof.sumcheck, 0, 0, two);
    M::scale_public(&mut proof.sumcheck, 2, 1, half);
    M::scale_public(&mut proof.sumcheck, 4, 2, half);
    assert_eq!(check(&r, &proof), Err(AttentionError::CheckFailed { step: "rotary embedding" }));
}

fn rejects_another_input_through_the_openings<M: TestMode>() {
    let r = run::<M>(shape(4, 2, 8), 9);
    // The proof of P against a verifier that opens another P'.
    let (other, _) = honest(shape(4, 2, 8), 10);
    let swapped = Run::<M> { witness: RotaryWitness { input: other.input, ..r.witness.clone() }, ..r };
    assert_eq!(check(&swapped, &swapped.proof), Err(AttentionError::CheckFailed { step: "openings" }));
}

fn the_shape_is_absorbed<M: TestMode>() {
    let r = run::<M>(shape(5, 2, 4), 11);
    for other in [
        RotaryShape { base: 10_001, ..r.shape },
        RotaryShape { fraction_bits: 13, ..r.shape },
        RotaryShape { heads: 3, ..r.shape },
        RotaryShape { output_bits: 15, ..r.shape },
    ] {
        assert!(verify::<M>(&other, &r.proof, &r.extra).is_err(), "{other:?}");
    }
}

/// The plain proof's final values of eq, P, C, Pσ, S (in the clear): each is checked; C (or
/// S) doubled with P (or Pσ) halved keeps the sum-check's final value, and only C's (S's)
/// closed form catches it.
#[test]
fn a_changed_final_value_of_the_plain_proof_is_rejected() {
    let r = run::<Plain>(shape(6, 2, 4), 8);
    for k in 0..5 {
        let mut proof = r.proof.clone();
        proof.sumcheck.final_evaluations[0][k] += Fr::one();
        assert!(check(&r, &proof).is_err(), "final value {k}");
    }
    let two = Fr::from(2u64);
    let half = zkmha_field::Field::inverse(&two).unwrap();
    for (table, hidden) in [(2, 1), (4, 3)] {
        let mut proof = r.proof.clone();
        proof.sumcheck.final_evaluations[0][table] *= two;
        proof.sumcheck.final_evaluations[0][hidden] *= half;
        assert_eq!(
            check(&r, &proof),
            Err(AttentionError::CheckFailed { step: "rotary embedding" }),
            "{table}"
        );
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
}

/// Two rotations (a layer's Q and K) in one layer batch, the malicious prover's parts swapped
/// (K's lookups in Q's slot and back), every step after it honest on the claims it gets. The
/// verifier hands each rotation its own slot's claims: the proof does not verify with claims
/// that discharge against Q's and K's tables (the fresh-context review of 2026-11-29).
#[test]
fn swapped_parts_of_a_layer_batch_are_rejected() {
    use zkmha_attention::lookup_batch::{prove_lookup_parts, verify_lookup_parts};
    use zkmha_transcript::Transcript;
    let s = shape(4, 2, 8);
    let (wq, rq) = honest(s, 21);
    let (wk, rk) = honest(s, 22);
    let (tq, tk) = (RotationTables::new(&s, &wq).unwrap(), RotationTables::new(&s, &wk).unwrap());
    let attempt = |swap: bool| -> Result<(), AttentionError> {
        let mut t = Transcript::new(b"review");
        let parts = if swap {
            vec![tk.lookups(&s, &rk).unwrap(), tq.lookups(&s, &rq).unwrap()]
        } else {
            vec![tq.lookups(&s, &rq).unwrap(), tk.lookups(&s, &rk).unwrap()]
        };
        let (lookups, mut claims) = prove_lookup_parts::<Plain>(&mut (), &parts, &mut t)?;
        let (ck, cq) = (claims.pop().unwrap(), claims.pop().unwrap());
        let (pq, held_q) = prove_rotation::<Plain>(&mut (), &s, &tq, cq, &mut t)?;
        let (pk, held_k) = prove_rotation::<Plain>(&mut (), &s, &tk, ck, &mut t)?;
        let mut t = Transcript::new(b"review");
        let statements = vec![rotation_lookup_statements(&s)?, rotation_lookup_statements(&s)?];
        let mut claims = verify_lookup_parts::<Plain>(&mut (), &statements, &lookups, &mut t)?;
        let (ck, cq) = (claims.pop().unwrap(), claims.pop().unwrap());
        let vq = verify_rotation::<Plain>(&mut (), &s, &pq, cq, &mut t)?;
        let vk = verify_rotation::<Plain>(&mut (), &s, &pk, ck, &mut t)?;
        let fine = |w: &RotaryWitness, p: &RotaryClaims<Fr>, v: &RotaryClaims<Fr>| {
            <Plain as TestMode>::discharges(&padded(&s, &w.input), &p.input, &v.input)
                && <Plain as TestMode>::discharges(&padded(&s, &w.output), &p.output, &v.output)
        };
        if fine(&wq, &held_q, &vq) && fine(&wk, &held_k, &vk) {
            Ok(())
        } else {
            Err(AttentionError::CheckFailed { step: "openings" })
        }
    };
    attempt(false).unwrap();
    let verdict = attempt(true);
    assert!(verdict.is_err(), "swapped parts accepted");
}
