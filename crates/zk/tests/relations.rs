//! Linear and quadratic relations on committed values (`RelationsProof`): round trips on
//! random statements against the plain arithmetic, the simulator, and one tamper test per
//! attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One, Zero};
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    Combination, CommittedValue, ProverRelation, QuadraticRelation, RelationsProof, ValueOpening, ZkError,
};

const DOMAIN: &[u8] = b"zk-relations-test";

fn committed(params: &HyraxParams, value: Fr, rng: &mut ChaCha20Rng) -> CommittedValue {
    let opening = ValueOpening::hide(value, rng);
    CommittedValue::new(G1Affine::from(opening.commit(params)), opening)
}

/// A random statement: `k` factors, `m` relations whose targets commit to the true value
/// `Σ x_i·y` plus `offset` (0: honest), each target a combination of a fresh commitment, a
/// public term and a scaled factor (linear parts the proof must carry).
fn statement(
    params: &HyraxParams,
    k: usize,
    m: usize,
    offset: Fr,
    rng: &mut ChaCha20Rng,
) -> (Vec<CommittedValue>, Vec<ProverRelation>) {
    let factors: Vec<CommittedValue> = (0..k).map(|_| committed(params, Fr::rand(rng), rng)).collect();
    let relations = (0..m)
        .map(|j| {
            let terms: Vec<(usize, CommittedValue)> = (0..j % 3 + usize::from(k > 0))
                .filter(|_| k > 0)
                .map(|t| {
                    let y = committed(params, Fr::rand(rng), rng)
                        .scaled(Fr::from(3u64 + t as u64))
                        .add_scaled(Fr::from(2u64), &CommittedValue::public(params, Fr::from(7u64)));
                    ((j + t) % k, y)
                })
                .collect();
            let value: Fr = terms.iter().map(|(i, y)| factors[*i].opening.value * y.opening.value).sum();
            // target = fresh commitment to (value − 5 − 2·x_0) + 5·U + 2·C_{x_0}
            let x0 = factors.first().map(|f| f.opening.value).unwrap_or_default();
            let fresh = committed(params, value + offset - Fr::from(5u64) - Fr::from(2u64) * x0, rng);
            let mut target = fresh.add_scaled(Fr::one(), &CommittedValue::public(params, Fr::from(5u64)));
            if let Some(f) = factors.first() {
                target = target.add_scaled(Fr::from(2u64), f);
            }
            ProverRelation { target, terms }
        })
        .collect();
    (factors, relations)
}

fn verifier_view(
    factors: &[CommittedValue],
    relations: &[ProverRelation],
) -> (Vec<Combination>, Vec<QuadraticRelation>) {
    (
        factors.iter().map(|f| f.commitment.clone()).collect(),
        relations.iter().map(ProverRelation::statement).collect(),
    )
}

fn prove(
    params: &HyraxParams,
    factors: &[CommittedValue],
    relations: &[ProverRelation],
    seed: u64,
) -> RelationsProof {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    RelationsProof::prove(params, factors, relations, &mut Transcript::new(DOMAIN), &mut rng).unwrap()
}

fn verify(
    params: &HyraxParams,
    factors: &[Combination],
    relations: &[QuadraticRelation],
    proof: &RelationsProof,
) -> Result<(), ZkError> {
    proof.verify(params, factors, relations, &mut Transcript::new(DOMAIN))
}

#[test]
fn true_relations_verify_on_many_shapes() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for (k, m) in [(0, 1), (1, 1), (1, 3), (2, 1), (3, 5), (5, 2), (7, 7)] {
        let (factors, relations) = statement(&params, k, m, Fr::zero(), &mut rng);
        let proof = prove(&params, &factors, &relations, k as u64);
        let (f, r) = verifier_view(&factors, &relations);
        verify(&params, &f, &r, &proof).unwrap_or_else(|e| panic!("k {k}, m {m}: {e}"));
        assert_eq!(proof.factor_messages.len(), k);
        assert_eq!(proof.relation_messages.len(), m);
    }
}

#[test]
fn a_false_relation_is_rejected() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for (k, m) in [(0, 1), (1, 1), (3, 4)] {
        let (factors, relations) = statement(&params, k, m, Fr::one(), &mut rng);
        let proof = prove(&params, &factors, &relations, 9);
        let (f, r) = verifier_view(&factors, &relations);
        assert_eq!(verify(&params, &f, &r, &proof), Err(ZkError::RelationMismatch), "k {k}, m {m}");
    }
}

#[test]
fn a_factor_swapped_after_proving_is_rejected() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (factors, relations) = statement(&params, 3, 3, Fr::zero(), &mut rng);
    let proof = prove(&params, &factors, &relations, 4);
    let (mut f, r) = verifier_view(&factors, &relations);
    f[1] = committed(&params, factors[1].opening.value + Fr::one(), &mut rng).commitment;
    assert_eq!(verify(&params, &f, &r, &proof), Err(ZkError::RelationMismatch));
}

#[test]
fn tampered_messages_and_responses_are_rejected() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let (factors, relations) = statement(&params, 2, 3, Fr::zero(), &mut rng);
    let proof = prove(&params, &factors, &relations, 5);
    let (f, r) = verifier_view(&factors, &relations);
    let generator = params.value_generator;
    let mut bad = proof.clone();
    bad.factor_messages[0] = generator;
    assert_eq!(verify(&params, &f, &r, &bad), Err(ZkError::RelationMismatch));
    let mut bad = proof.clone();
    bad.relation_messages[2] = generator;
    assert_eq!(verify(&params, &f, &r, &bad), Err(ZkError::RelationMismatch));
    let mut bad = proof.clone();
    bad.factor_responses[1] += Fr::one();
    assert_eq!(verify(&params, &f, &r, &bad), Err(ZkError::RelationMismatch));
    let mut bad = proof.clone();
    bad.blinding_response += Fr::one();
    assert_eq!(verify(&params, &f, &r, &bad), Err(ZkError::RelationMismatch));
}

#[test]
fn wrong_counts_are_malformed_not_a_panic() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let (factors, relations) = statement(&params, 2, 2, Fr::zero(), &mut rng);
    let proof = prove(&params, &factors, &relations, 6);
    let (f, mut r) = verifier_view(&factors, &relations);
    let mut short = proof.clone();
    short.factor_responses.pop();
    assert!(matches!(verify(&params, &f, &r, &short), Err(ZkError::MalformedRelation(_))));
    assert!(matches!(verify(&params, &f[..1], &r, &proof), Err(ZkError::MalformedRelation(_))));
    r[0].terms.push((9, Combination::point(params.value_generator)));
    assert!(matches!(verify(&params, &f, &r, &proof), Err(ZkError::MalformedRelation(_))));
    let mut bad_terms = relations.clone();
    bad_terms[0].terms.push((9, CommittedValue::public(&params, Fr::one())));
    let result = RelationsProof::prove(&params, &factors, &bad_terms, &mut Transcript::new(DOMAIN), &mut rng);
    assert!(matches!(result, Err(ZkError::MalformedRelation(_))));
}

#[test]
fn two_proofs_of_one_statement_differ_and_reveal_no_factor() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let (factors, relations) = statement(&params, 3, 2, Fr::zero(), &mut rng);
    let (a, b) = (prove(&params, &factors, &relations, 7), prove(&params, &factors, &relations, 8));
    assert_ne!(a, b);
    for proof in [&a, &b] {
        for x in &factors {
            assert!(!proof.factor_responses.contains(&x.opening.value));
            assert_ne!(proof.blinding_response, x.opening.value);
        }
    }
}

#[test]
fn the_simulator_answers_any_statement_without_the_witness() {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    // A false statement: only the simulator (knowing the challenges first) can answer it.
    let (factors, relations) = statement(&params, 3, 3, Fr::one(), &mut rng);
    let (f, r) = verifier_view(&factors, &relations);
    let c = Fr::rand(&mut rng);
    let weights: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let simulated = RelationsProof::simulate(&params, &f, &r, c, &weights, &mut rng).unwrap();
    simulated.check_with_challenges(&params, &f, &r, c, &weights).unwrap();
    let other = Fr::rand(&mut rng);
    assert_eq!(
        simulated.check_with_challenges(&params, &f, &r, other, &weights),
        Err(ZkError::RelationMismatch)
    );
}
