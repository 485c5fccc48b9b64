//! The fresh-context review of the exact gated product (2026-11-27, commit 09380bd), kept as
//! regressions: malicious provers against `P = A ⊙ U` (never committed) inside a whole MLP —
//! wrong, non-integer, replaced or padded `P'`, factors that are not the committed ones, proof
//! parts from another run, dropped or added, tampered rounds, degenerate and grid-equal shapes,
//! malformed proof bytes — each run in both modes; none accepted, none panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use rand_chacha::ChaCha20Rng;
use std::collections::HashMap;
use zkmha_attention::AttentionError;
use zkmha_attention::activation::{Activation, activation_multiplicities};
use zkmha_attention::hadamard::compute_hadamard;
use zkmha_attention::mlp::*;
use zkmha_attention::projection::compute_projection;
use zkmha_field::{Fr, fr_from_i64};

mod modes;

use modes::TestMode;

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

// ---------------------------------------------------------------------------------------------
// Review attacks (09380bd): the exact, uncommitted gated product P = A ⊙ U.
// ---------------------------------------------------------------------------------------------

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_attention::mode::{Plain, Zk};

in_both_modes!(
    review_honest_round_trip,
    review_p_prime_off_by_deltas_at_many_entries,
    review_p_prime_whole_tensor_replaced,
    review_factors_negated_or_swapped_same_product,
    review_product_witness_factors_not_the_committed_ones,
    review_product_proof_from_another_run,
    review_product_dropped_or_added,
    review_tampered_product_round_and_eq_factor,
    review_one_entry_and_degenerate_shapes,
    review_grid_equal_shapes_are_absorbed,
    review_malformed_product_bytes_never_panic,
);

fn gated_shapes() -> Vec<MlpShape> {
    vec![
        gated(3, 5, 7),
        gated(2, 4, 8),
        MlpShape { output_bits: None, ..with(gated(3, 9, 11), |p| p.down_shift = 27) },
    ]
}

fn review_honest_round_trip<M: TestMode>() {
    for (k, shape) in gated_shapes().into_iter().enumerate() {
        check(&run::<M>(shape, 40 + k as u64)).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

/// The down projection proven from `P' = A ⊙ U + δ` at one entry (first, middle, last real
/// entry), δ small and large (|P'| stays < 2^31 so the projection prover accepts it).
fn review_p_prime_off_by_deltas_at_many_entries<M: TestMode>() {
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
fn review_p_prime_whole_tensor_replaced<M: TestMode>() {
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
fn review_factors_negated_or_swapped_same_product<M: TestMode>() {
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
fn review_product_witness_factors_not_the_committed_ones<M: TestMode>() {
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

fn review_product_proof_from_another_run<M: TestMode>() {
    let shape = gated(3, 5, 7);
    let a = run::<M>(shape, 1);
    let b = run::<M>(shape, 2);
    let mut spliced = run::<M>(shape, 1);
    spliced.proof.product = b.proof.product.clone();
    assert!(check(&spliced).is_err(), "another run's product proof accepted");
    // And the honest one still passes.
    check(&a).unwrap();
}

fn review_product_dropped_or_added<M: TestMode>() {
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

fn review_tampered_product_round_and_eq_factor<M: TestMode>() {
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
fn review_one_entry_and_degenerate_shapes<M: TestMode>() {
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
fn review_grid_equal_shapes_are_absorbed<M: TestMode>() {
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
fn review_malformed_product_bytes_never_panic<M: TestMode>() {
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
        let Ok(proof) = MlpProof::<M>::deserialize_compressed(&m[..]) else { continue };
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
fn review_structurally_malformed_plain_product_proofs() {
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
    for (k, v) in variants.into_iter().enumerate() {
        r.proof.product = Some(zkmha_attention::hadamard::HadamardProof { sumcheck: v });
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_with(&r, &shape, &tables)));
        match out {
            Err(_) => panic!("variant {k}: the verifier panicked"),
            Ok(Ok(())) => panic!("variant {k}: accepted"),
            Ok(Err(e)) => eprintln!("plain variant {k}: {e}"),
        }
    }
}

/// The same in zero knowledge: the factor values' vectors and the rounds.
#[test]
fn review_structurally_malformed_zk_product_proofs() {
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
    for (k, v) in variants.into_iter().enumerate() {
        r.proof.product = Some(zkmha_attention::hadamard::HadamardProof { sumcheck: v });
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_with(&r, &shape, &tables)));
        match out {
            Err(_) => panic!("variant {k}: the verifier panicked"),
            Ok(Ok(())) => panic!("variant {k}: accepted"),
            Ok(Err(e)) => eprintln!("zk variant {k}: {e}"),
        }
    }
}

/// Which check refuses the wide shapes. tests/mlp.rs `refuses_shapes_and_weights_that_disagree`
/// says "|A| ≤ 2^15 + 1 and |U| < 2^16 would let A ⊙ U reach 2^31" for `up_bits: 17`, but on
/// its shape |A| ≤ 2^12 and 17 bits is refused by the up projection's output range (1..=16),
/// not by the product's bound; the product's bound is reached only with a wider activation.
#[test]
fn review_which_check_refuses_a_wide_product() {
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
