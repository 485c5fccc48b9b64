//! The public entry points absorb their statement before their first challenge, whatever their
//! caller absorbed (the adversarial review's `audit_relations_statement.rs`, turn 3): a
//! statement chosen after the challenges is rejected, and every part of a statement moves the
//! challenges drawn after it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::CanonicalSerialize;
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Field, Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::{FinalEvaluations, ProductSumcheck, SumOfProducts};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, ProverRelation,
    QuadraticRelation, RelationsProof, ValueOpening, VerifierMasks, ZkError, ZkProductShape,
    prove_zk_batched_products, prove_zk_sumcheck_committed, verify_zk_batched_products_deferred,
    verify_zk_sumcheck_committed_deferred,
};

const DOMAIN: &[u8] = b"zk-statement-binding-test";

fn committed(params: &HyraxParams, value: Fr, rng: &mut ChaCha20Rng) -> CommittedValue {
    let opening = ValueOpening::hide(value, rng);
    CommittedValue::new(G1Affine::from(opening.commit(params)), opening)
}

fn absorb(t: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::new();
    for p in points {
        p.serialize_compressed(&mut bytes).unwrap();
    }
    t.append_bytes(label, &bytes);
}

/// The review's attack: the challenges `c` and `ρ` replayed from the proof alone (as they were
/// drawn before the proof absorbed its statement) and a false statement solved for them —
/// `T' = T + e·U` (commits to `x·y + e`) and `C_x' = C_x + f·U` with `f = −ρ₁·e/ρ₀`, so that the
/// `U`-components of the two brackets cancel. Before the fix the verifier drew exactly these
/// challenges and accepted; now its challenges depend on the statement, which depends on `ρ`
/// through `f`, and it rejects.
#[test]
fn a_relations_statement_chosen_after_the_challenges_is_rejected() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let (x, y) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let cx = committed(&params, x, &mut rng);
    let cy = committed(&params, y, &mut rng);
    let target = committed(&params, x * y, &mut rng); // honest: T commits to x·y
    let relation = ProverRelation { target: target.clone(), terms: vec![(0, cy.clone())] };
    // The caller absorbs nothing: the proof must bind the statement itself.
    let proof = RelationsProof::prove(
        &params,
        std::slice::from_ref(&cx),
        std::slice::from_ref(&relation),
        &mut Transcript::new(DOMAIN),
        &mut rng,
    )
    .unwrap();
    let honest = [cx.commitment.clone()];
    assert_eq!(proof.verify(&params, &honest, &[relation.statement()], &mut Transcript::new(DOMAIN)), Ok(()));

    let mut t = Transcript::new(DOMAIN);
    t.append_shape(b"zk/relations/shape", &[1, 1, 1]);
    absorb(&mut t, b"zk/relations/first-messages", &proof.factor_messages);
    absorb(&mut t, b"zk/relations/first-messages", &proof.relation_messages);
    let _c = t.challenge_field(b"zk/relations/challenge");
    t.append_fields(b"zk/relations/responses", &proof.factor_responses);
    let rho = t.challenge_fields(b"zk/relations/weights", 2);
    let e = Fr::one();
    let f = -(rho[1] * e) * rho[0].inverse().unwrap();
    let u = Combination::point(params.value_generator);
    let factor = cx.commitment.clone().add_scaled(f, &u);
    let forged_target = target.commitment.clone().add_scaled(e, &u);
    assert_ne!((x + f) * y, x * y + e);
    let relations =
        vec![QuadraticRelation { target: forged_target, terms: vec![(0, cy.commitment.clone())] }];
    let factors = [factor];
    assert_eq!(
        proof.verify(&params, &factors, &relations, &mut Transcript::new(DOMAIN)),
        Err(ZkError::RelationMismatch)
    );
}

fn mles(num_vars: usize, count: usize, seed: u64) -> Vec<DenseMultilinearExtension> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            DenseMultilinearExtension::new(num_vars, (0..1 << num_vars).map(|_| Fr::rand(&mut rng)).collect())
                .unwrap()
        })
        .collect()
}

fn sum_of_products(mles: &[DenseMultilinearExtension]) -> Fr {
    (0..1usize << mles[0].num_vars()).map(|x| mles.iter().map(|f| f.evaluations()[x]).product::<Fr>()).sum()
}

/// The committed sum-check absorbs its claim (a combination the caller never absorbed): the
/// same proof verified against a claim that differs by `U` leaves a different transcript.
#[test]
fn a_committed_sum_checks_claim_moves_its_challenges() {
    let params = HyraxParams::new(6);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let tables = mles(3, 2, 4);
    let sum = sum_of_products(&tables);
    // S as a combination of two commitments: S = a + b.
    let a = committed(&params, Fr::from(5u64), &mut rng);
    let b = committed(&params, sum - Fr::from(5u64), &mut rng);
    let claim = a.add_scaled(Fr::one(), &b);
    let schedule = MaskSchedule(vec![(3, 2)]);
    let mut transcript = Transcript::new(DOMAIN);
    let (mut masks, masks_commitment) =
        ProverMasks::commit(&params, schedule.clone(), &mut transcript, &mut rng).unwrap();
    let mut instance = ProductSumcheck::new(SumOfProducts::product(2).unwrap(), tables).unwrap();
    let (proof, _, _) =
        prove_zk_sumcheck_committed(&params, &mut instance, &claim, &mut masks, &mut transcript, &mut rng)
            .unwrap();
    let after = |claim: &Combination| {
        let mut transcript = Transcript::new(DOMAIN);
        let mut masks = VerifierMasks::absorb(schedule.clone(), masks_commitment, &mut transcript);
        let mut checks = DeferredChecks::new();
        verify_zk_sumcheck_committed_deferred(
            &params,
            3,
            2,
            claim,
            &proof,
            &mut masks,
            &mut transcript,
            &mut checks,
        )
        .unwrap();
        transcript.challenge_field(b"after")
    };
    let u = Combination::point(params.value_generator);
    assert_eq!(after(&claim.commitment), transcript.challenge_field(b"after"));
    assert_ne!(after(&claim.commitment), after(&claim.commitment.clone().add_scaled(Fr::one(), &u)));
}

/// A batch absorbs its members' claims before drawing their weights: the same proof verified
/// against another claim for one member leaves a different transcript.
#[test]
fn a_batchs_claims_move_its_weights() {
    let params = HyraxParams::new(6);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let shape = ZkProductShape::new(SumOfProducts::product(2).unwrap(), vec![false, false]).unwrap();
    let (first, second) = (mles(2, 2, 6), mles(3, 2, 7));
    let claims = vec![
        committed(&params, sum_of_products(&first), &mut rng),
        committed(&params, sum_of_products(&second), &mut rng),
    ];
    let mut instances = [
        ProductSumcheck::new(SumOfProducts::product(2).unwrap(), first).unwrap(),
        ProductSumcheck::new(SumOfProducts::product(2).unwrap(), second).unwrap(),
    ];
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> =
        instances.iter_mut().map(|i| (&shape, i as &mut dyn FinalEvaluations)).collect();
    let schedule = MaskSchedule(vec![(3, 2)]);
    let mut transcript = Transcript::new(DOMAIN);
    let (mut masks, masks_commitment) =
        ProverMasks::commit(&params, schedule.clone(), &mut transcript, &mut rng).unwrap();
    let (proof, _, _) =
        prove_zk_batched_products(&params, members, &claims, &mut masks, &mut transcript, &mut rng).unwrap();
    let shapes: Vec<BatchMember> = vec![(&shape, 2), (&shape, 3)];
    let after = |claims: &[Combination]| {
        let mut transcript = Transcript::new(DOMAIN);
        let mut masks = VerifierMasks::absorb(schedule.clone(), masks_commitment, &mut transcript);
        let mut checks = DeferredChecks::new();
        verify_zk_batched_products_deferred(
            &params,
            &shapes,
            claims,
            &proof,
            &mut masks,
            &mut transcript,
            &mut checks,
        )
        .unwrap();
        transcript.challenge_field(b"after")
    };
    let honest: Vec<Combination> = claims.iter().map(|c| c.commitment.clone()).collect();
    let mut other = honest.clone();
    other[1] = other[1].clone().add_scaled(Fr::one(), &Combination::point(params.value_generator));
    assert_eq!(after(&honest), transcript.challenge_field(b"after"));
    assert_ne!(after(&honest), after(&other));
}
