//! The gated MLP's exact entrywise product `P = A ⊙ U`, never committed: a claim on `P` in,
//! claims on `A` and `U` out. Round trips on many shapes (non-powers of two included), an
//! `i128` reference, and one test per attack — each run in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::hadamard::*;
use zkmha_field::{Fr, One, Zero, fr_from_i64};
use zkmha_sumcheck::EvalClaim;

use crate::modes::TestMode;
use zkmha_field::Field;

in_both_modes!(
    round_trips_on_many_shapes,
    rejects_a_false_claim_on_the_product,
    rejects_a_product_off_by_one,
    rejects_another_tensor_through_the_openings,
    rejects_a_tampered_eq_factor,
    the_shape_is_absorbed,
    non_integer_product_claims,
    garbage_in_the_padding_of_the_claimed_product,
    claim_points_of_the_wrong_length,
);

fn shape(rows: usize, width: usize) -> HadamardShape {
    HadamardShape { rows, width }
}

fn witness(shape: &HadamardShape, seed: u64) -> HadamardWitness {
    let mut rng = StdRng::seed_from_u64(seed);
    let count = shape.rows * shape.width;
    let left: Vec<i64> = (0..count).map(|_| rng.gen_range(-30_000..30_000)).collect();
    let right: Vec<i64> = (0..count).map(|_| rng.gen_range(-30_000..30_000)).collect();
    let output = compute_hadamard(shape, &left, &right).unwrap();
    HadamardWitness { left, right, output }
}

fn padded(shape: &HadamardShape, values: &[i64]) -> Vec<Fr> {
    let width = shape.width.next_power_of_two();
    let mut out = vec![Fr::zero(); width * shape.rows.next_power_of_two()];
    for (i, row) in values.chunks(shape.width).enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[i * width + j] = fr_from_i64(*v);
        }
    }
    out
}

struct Run<M: TestMode> {
    shape: HadamardShape,
    witness: HadamardWitness,
    /// The claim on `P` as the verifier holds it.
    claim: EvalClaim<M::Value>,
    proof: HadamardProofOf<M>,
    claims: HadamardClaims<M::ProverValue>,
    extra: M::Extra,
}

/// Proves a claim on `P` as `witness.output` holds it (plus `offset`), from `witness`'s `A`
/// and `U`: the claim comes from the tensor the caller's next step read.
fn prove<M: TestMode>(shape: HadamardShape, witness: HadamardWitness, offset: Fr, seed: u64) -> Run<M> {
    let schedule = hadamard_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (claim, public) = M::claim(&padded(&shape, &witness.output), offset, &mut rng);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_hadamard::<M>(p, &shape, &witness, &claim, t));
    Run { shape, witness, claim: public, proof, claims, extra }
}

/// Verifies against `shape` and opens the claims against `A` and `U`.
fn check_with<M: TestMode>(
    run: &Run<M>,
    shape: &HadamardShape,
    [left, right]: [&[i64]; 2],
) -> Result<(), AttentionError> {
    let schedule = hadamard_zk_schedule(shape)?;
    let claims =
        M::verify(&schedule, &run.extra, |v, t| verify_hadamard::<M>(v, shape, &run.claim, &run.proof, t))?;
    let p = &run.claims;
    let fine = M::discharges(&padded(shape, left), &p.left, &claims.left)
        && M::discharges(&padded(shape, right), &p.right, &claims.right);
    if fine { Ok(()) } else { Err(AttentionError::CheckFailed { step: "openings" }) }
}

fn check<M: TestMode>(run: &Run<M>) -> Result<(), AttentionError> {
    check_with(run, &run.shape, [&run.witness.left, &run.witness.right])
}

fn round_trips_on_many_shapes<M: TestMode>() {
    for (rows, width) in [(1, 1), (1, 6), (3, 5), (8, 16), (5, 33)] {
        let shape = shape(rows, width);
        let r = prove::<M>(shape, witness(&shape, (rows * 11 + width) as u64), Fr::zero(), 4);
        check(&r).unwrap_or_else(|e| panic!("{rows}×{width}: {e}"));
    }
    // The widest products either side of 2^31.
    let edge = shape(1, 4);
    let w = HadamardWitness {
        left: vec![1 << 15, -(1 << 15), 32_769, -1],
        right: vec![(1 << 15) - 1, (1 << 15) - 1, -32_767, 0],
        output: vec![],
    };
    let output = compute_hadamard(&edge, &w.left, &w.right).unwrap();
    check(&prove::<M>(edge, HadamardWitness { output, ..w }, Fr::zero(), 5)).unwrap();
}

#[test]
fn the_product_is_the_integer_product() {
    let w = witness(&shape(4, 9), 9);
    for ((a, u), p) in w.left.iter().zip(&w.right).zip(&w.output) {
        assert_eq!(i128::from(*p), i128::from(*a) * i128::from(*u), "{a}·{u} → {p}");
    }
    let out = compute_hadamard(&shape(1, 1), &[1 << 16], &[1 << 15]);
    assert!(matches!(out, Err(AttentionError::ValueOutOfRange { tensor: "P", .. })), "{out:?}");
    let out = compute_hadamard(&shape(1, 1), &[i64::MAX], &[2]);
    assert!(matches!(out, Err(AttentionError::ValueOutOfRange { tensor: "P", .. })), "{out:?}");
    let out = compute_hadamard(&shape(1, 2), &[1], &[1]);
    assert!(matches!(out, Err(AttentionError::WrongTensorSize { .. })), "{out:?}");
    assert!(matches!(shape(0, 3).validate(), Err(AttentionError::InvalidShape(_))));
    assert!(matches!(shape(1 << 13, 1 << 14).validate(), Err(AttentionError::InvalidShape(_))));
}

fn rejects_a_false_claim_on_the_product<M: TestMode>() {
    let shape = shape(3, 5);
    let r = prove::<M>(shape, witness(&shape, 3), Fr::one(), 6);
    assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"));
}

/// A malicious prover whose next step read `P' = A ⊙ U ± 1` at one entry (the claim is on
/// `P'`), proving from the honest `A` and `U`.
fn rejects_a_product_off_by_one<M: TestMode>() {
    let shape = shape(3, 5);
    let honest = witness(&shape, 3);
    for (index, delta) in [(0, 1), (7, -1), (14, 1)] {
        let mut cheat = honest.clone();
        cheat.output[index] += delta;
        let r = prove::<M>(shape, cheat, Fr::zero(), 7);
        assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"), "entry {index}");
    }
}

fn rejects_another_tensor_through_the_openings<M: TestMode>() {
    let shape = shape(3, 5);
    let r = prove::<M>(shape, witness(&shape, 8), Fr::zero(), 8);
    let w = &r.witness;
    for k in 0..2 {
        let mut tensors = [w.left.clone(), w.right.clone()];
        tensors[k][2] += 1;
        let [a, u] = &tensors;
        assert!(check_with(&r, &r.shape, [a, u]).is_err(), "tensor {k} changed and accepted");
    }
}

fn rejects_a_tampered_eq_factor<M: TestMode>() {
    let shape = shape(3, 5);
    let mut r = prove::<M>(shape, witness(&shape, 10), Fr::zero(), 9);
    M::tamper_public(&mut r.proof.sumcheck, 0, 0);
    assert_eq!(check(&r).unwrap_err(), M::public_factor_error("hadamard product"));
}

fn the_shape_is_absorbed<M: TestMode>() {
    let shape = shape(3, 5);
    let r = prove::<M>(shape, witness(&shape, 6), Fr::zero(), 10);
    let w = &r.witness;
    // Same grid (4 × 8), other sizes: only the absorbed shape tells them apart.
    for other in [HadamardShape { width: 6, ..shape }, HadamardShape { rows: 4, ..shape }] {
        let schedule = hadamard_zk_schedule(&other).unwrap();
        let result =
            M::verify(&schedule, &r.extra, |v, t| verify_hadamard::<M>(v, &other, &r.claim, &r.proof, t));
        assert!(result.is_err(), "{other:?} accepted a proof of {shape:?}");
    }
    // A claim on another grid is refused by name.
    let other = HadamardShape { width: 9, ..shape };
    let result = check_with(&r, &other, [&w.left, &w.right]);
    assert!(matches!(result, Err(AttentionError::CheckFailed { step: "hadamard product" })), "{result:?}");
}

// ---------------------------------------------------------------------------------------------
// The fresh-context review of 2026-11-27, kept as regressions.
// Review attacks (09380bd): claims on P' ≠ A ⊙ U that a next step might hold.
// ---------------------------------------------------------------------------------------------

/// Proves the claim that `table` (the padded grid of some P') has at a random point, from the
/// honest `A`, `U` of `witness`.
fn prove_table<M: TestMode>(
    shape: HadamardShape,
    witness: HadamardWitness,
    table: &[Fr],
    seed: u64,
) -> Run<M> {
    let schedule = hadamard_zk_schedule(&shape).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (claim, public) = M::claim(table, Fr::zero(), &mut rng);
    let ((proof, claims), extra) =
        M::prove(&schedule, &mut rng, |p, t| prove_hadamard::<M>(p, &shape, &witness, &claim, t));
    Run { shape, witness, claim: public, proof, claims, extra }
}

/// P' = A ⊙ U + 1/2 at one entry, and P' = A ⊙ U + (1/2 at one entry, −1/2 at another) (the
/// same row sum): rejected.
fn non_integer_product_claims<M: TestMode>() {
    let shape = shape(3, 5);
    let w = witness(&shape, 21);
    let half = Fr::from(2u64).inverse().unwrap();
    let honest = padded(&shape, &w.output);
    for changes in [vec![(0usize, half)], vec![(1, half), (2, -half)], vec![(9, -half)]] {
        let mut t = honest.clone();
        for (i, d) in &changes {
            t[*i] += *d;
        }
        let r = prove_table::<M>(shape, w.clone(), &t, 3);
        assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"), "{changes:?}");
    }
}

/// P' = A ⊙ U on the real entries, junk on the padded grid (columns ≥ n, rows ≥ s).
fn garbage_in_the_padding_of_the_claimed_product<M: TestMode>() {
    let shape = shape(3, 5); // grid 4 × 8
    let w = witness(&shape, 22);
    let honest = padded(&shape, &w.output);
    for index in [5usize, 7, 8 * 3, 8 * 3 + 7] {
        let mut t = honest.clone();
        t[index] += Fr::from(12345u64);
        let r = prove_table::<M>(shape, w.clone(), &t, 4);
        assert_eq!(check(&r).unwrap_err(), M::false_claim_error("hadamard product"), "{index}");
    }
}

fn claim_points_of_the_wrong_length<M: TestMode>() {
    let shape = shape(3, 5);
    let r = prove::<M>(shape, witness(&shape, 23), Fr::zero(), 5);
    for extra in [1usize, 2] {
        let mut claim = r.claim.clone();
        let point: Vec<Fr> =
            claim.point.iter().copied().chain(std::iter::repeat_n(Fr::one(), extra)).collect();
        claim.point = point;
        let schedule = hadamard_zk_schedule(&shape).unwrap();
        let result =
            M::verify(&schedule, &r.extra, |v, t| verify_hadamard::<M>(v, &shape, &claim, &r.proof, t));
        assert!(
            matches!(result, Err(AttentionError::CheckFailed { step: "hadamard product" })),
            "{result:?}"
        );
    }
    let mut claim = r.claim.clone();
    claim.point.pop();
    let schedule = hadamard_zk_schedule(&shape).unwrap();
    let result = M::verify(&schedule, &r.extra, |v, t| verify_hadamard::<M>(v, &shape, &claim, &r.proof, t));
    assert!(matches!(result, Err(AttentionError::CheckFailed { step: "hadamard product" })), "{result:?}");
}
