//! The fresh-context review of the exact gated product (2026-11-27), kept as regressions: the
//! hadamard step alone against a non-integer `P'` (one entry ± 1/2, or two entries ± 1/2 with
//! the same sum), junk in the grid's padding, and claim points of the wrong length — each run
//! in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::AttentionError;
use zkmha_attention::hadamard::*;
use zkmha_field::{Fr, One, Zero, fr_from_i64};
use zkmha_sumcheck::EvalClaim;

mod modes;

use modes::TestMode;

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

// ---------------------------------------------------------------------------------------------
// Review attacks (09380bd): claims on P' ≠ A ⊙ U that a next step might hold.
// ---------------------------------------------------------------------------------------------

use zkmha_field::Field;

in_both_modes!(
    review_non_integer_product_claims,
    review_garbage_in_the_padding_of_the_claimed_product,
    review_claim_points_of_the_wrong_length,
);

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
fn review_non_integer_product_claims<M: TestMode>() {
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
fn review_garbage_in_the_padding_of_the_claimed_product<M: TestMode>() {
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

fn review_claim_points_of_the_wrong_length<M: TestMode>() {
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
