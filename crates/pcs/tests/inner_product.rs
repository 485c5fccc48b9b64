//! The logarithmic-size zero-knowledge inner-product argument: round trips on many lengths
//! against a plain inner product, hidden values, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::Fr;
use zkmha_pcs::*;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"ipa-test";

struct Statement {
    params: HyraxParams,
    vector: Vec<Fr>,
    public: Vec<Fr>,
    vector_commitment: G1Affine,
    vector_blinding: Fr,
    value_commitment: G1Affine,
    value_blinding: Fr,
}

fn statement(length: usize, seed: u64) -> Statement {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = HyraxParams::new(20);
    let vector: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
    let public: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
    let (vector_blinding, value_blinding) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let vector_commitment =
        (vector.iter().zip(&params.generators).map(|(a, g)| *g * a).sum::<G1Projective>()
            + params.blinding_generator * vector_blinding)
            .into();
    // The plain reference inner product.
    let value: Fr = vector.iter().zip(&public).map(|(a, b)| *a * b).sum();
    let value_commitment =
        (params.value_generator * value + params.blinding_generator * value_blinding).into();
    Statement { params, vector, public, vector_commitment, vector_blinding, value_commitment, value_blinding }
}

fn prove(s: &Statement, seed: u64) -> ZkInnerProductProof {
    ZkInnerProductProof::prove(
        &s.params,
        (s.vector_commitment, &s.vector, s.vector_blinding),
        (s.value_commitment, s.value_blinding),
        &s.public,
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap()
}

fn verify(s: &Statement, value_commitment: G1Affine, proof: &ZkInnerProductProof) -> Result<(), PcsError> {
    proof.verify(&s.params, s.vector_commitment, value_commitment, &s.public, &mut Transcript::new(DOMAIN))
}

#[test]
fn round_trips_on_many_lengths() {
    for length in [1, 2, 3, 13, 64, 300, 1024] {
        let s = statement(length, length as u64);
        let proof = prove(&s, 1);
        verify(&s, s.value_commitment, &proof).unwrap_or_else(|e| panic!("length {length}: {e}"));
        assert_eq!(proof.rounds.len(), length.next_power_of_two().trailing_zeros() as usize);
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(ZkInnerProductProof::deserialize_compressed(&bytes[..]).unwrap(), proof);
    }
}

#[test]
fn a_commitment_to_another_value_is_rejected() {
    let s = statement(37, 2);
    let proof = prove(&s, 1);
    let other = (G1Projective::from(s.value_commitment) + s.params.value_generator).into();
    assert_eq!(verify(&s, other, &proof), Err(PcsError::ZkCommitmentMismatch));
}

#[test]
fn a_prover_with_another_vector_is_rejected() {
    // The prover runs on a vector that is not the committed one (same claimed value commitment).
    let s = statement(16, 3);
    let mut other = statement(16, 3);
    other.vector[5] += Fr::from(1u64);
    let proof = prove(&other, 1);
    assert_eq!(verify(&s, s.value_commitment, &proof), Err(PcsError::ZkCommitmentMismatch));
}

#[test]
fn tampered_proofs_are_rejected() {
    let s = statement(50, 4);
    let proof = prove(&s, 1);
    let g = s.params.generators[3];
    let mut round = proof.clone();
    round.rounds[2].0 = g;
    assert_eq!(verify(&s, s.value_commitment, &round), Err(PcsError::ZkCommitmentMismatch));
    let mut right = proof.clone();
    right.rounds[0].1 = g;
    assert_eq!(verify(&s, s.value_commitment, &right), Err(PcsError::ZkCommitmentMismatch));
    let mut last = proof.clone();
    last.last_commitment = g;
    assert_eq!(verify(&s, s.value_commitment, &last), Err(PcsError::ZkCommitmentMismatch));
    for k in 0..2 {
        let mut response = proof.clone();
        response.responses[k] += Fr::from(1u64);
        assert_eq!(verify(&s, s.value_commitment, &response), Err(PcsError::ZkCommitmentMismatch));
    }
    let mut short = proof;
    short.rounds.pop();
    assert!(matches!(verify(&s, s.value_commitment, &short), Err(PcsError::MalformedProof(_))));
}

#[test]
fn proofs_are_randomized_and_hide_the_vector() {
    let s = statement(32, 5);
    let (first, second) = (prove(&s, 1), prove(&s, 2));
    assert_ne!(first, second);
    for proof in [&first, &second] {
        assert!(proof.responses.iter().all(|z| !s.vector.contains(z)));
    }
    verify(&s, s.value_commitment, &first).unwrap();
    verify(&s, s.value_commitment, &second).unwrap();
}

#[test]
fn too_few_generators_and_mismatched_lengths_are_errors() {
    let s = statement(8, 6);
    let small = HyraxParams::new(4);
    let result = ZkInnerProductProof::prove(
        &small,
        (s.vector_commitment, &[Fr::from(1u64); 9], s.vector_blinding),
        (s.value_commitment, s.value_blinding),
        &[Fr::from(1u64); 9],
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(1),
    );
    assert!(matches!(result, Err(PcsError::SrsTooSmall { .. })));
    let result = ZkInnerProductProof::prove(
        &s.params,
        (s.vector_commitment, &s.vector, s.vector_blinding),
        (s.value_commitment, s.value_blinding),
        &s.public[..7],
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(1),
    );
    assert!(matches!(result, Err(PcsError::MalformedProof(_))));
}
