//! Honest openings verify; each attack is rejected with its specific error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_ec::{AffineRepr, CurveGroup};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::*;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"pcs-tests";

fn random_mle(n: usize, rng: &mut StdRng) -> DenseMultilinearExtension {
    DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(rng)).collect()).unwrap()
}

struct Setup {
    srs: StructuredReferenceString,
    pk: ProverKey,
    vk: VerifierKey,
}

fn setup(n: usize) -> Setup {
    let srs = StructuredReferenceString::insecure_for_testing(n.max(2), 7);
    let pk = srs.prover_key(n).unwrap();
    let vk = srs.verifier_key().unwrap();
    Setup { srs, pk, vk }
}

fn open(s: &Setup, f: &DenseMultilinearExtension, point: &[Fr]) -> (Commitment, OpeningProof, Fr) {
    let c = HyperKzg::commit(&s.pk, f).unwrap();
    let (proof, value) = HyperKzg::open(&s.pk, f, &c, point, &mut Transcript::new(DOMAIN)).unwrap();
    (c, proof, value)
}

fn verify(s: &Setup, c: &Commitment, point: &[Fr], value: Fr, proof: &OpeningProof) -> Result<(), PcsError> {
    HyperKzg::verify(&s.vk, c, point, value, proof, &mut Transcript::new(DOMAIN))
}

#[test]
fn honest_openings_verify_for_every_size() {
    let mut rng = StdRng::seed_from_u64(1);
    let s = setup(9);
    for n in 0..=9 {
        let f = random_mle(n, &mut rng);
        let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let (c, proof, value) = open(&s, &f, &point);
        assert_eq!(value, f.evaluate(&point).unwrap(), "n = {n}");
        assert_eq!(verify(&s, &c, &point, value, &proof), Ok(()), "n = {n}");
        // A smaller polynomial under a larger key commits the same way.
        if n < 9 {
            let pk_small = s.srs.prover_key(n).unwrap();
            assert_eq!(HyperKzg::commit(&pk_small, &f).unwrap(), c);
        }
    }
}

#[test]
fn small_integer_commitments_match_field_commitments() {
    let s = setup(8);
    let values: Vec<i64> = (0..256).map(|i| (i * 37 % 255) - 127).collect();
    let f = DenseMultilinearExtension::from_i64(8, &values).unwrap();
    assert_eq!(HyperKzg::commit_small(&s.pk, &values).unwrap(), HyperKzg::commit(&s.pk, &f).unwrap());
}

#[test]
fn wrong_value_is_rejected() {
    let mut rng = StdRng::seed_from_u64(2);
    let s = setup(6);
    let f = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (c, proof, value) = open(&s, &f, &point);
    // The value is absorbed before r, so the prover's evaluations were made at another r.
    assert_eq!(
        verify(&s, &c, &point, value + Fr::one(), &proof),
        Err(PcsError::EvaluationChainMismatch { round: 0 })
    );
}

#[test]
fn wrong_point_is_rejected() {
    let mut rng = StdRng::seed_from_u64(3);
    let s = setup(6);
    let f = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (c, proof, value) = open(&s, &f, &point);
    let mut other = point.clone();
    other[2] += Fr::one();
    assert!(matches!(verify(&s, &c, &other, value, &proof), Err(PcsError::EvaluationChainMismatch { .. })));
    assert_eq!(
        verify(&s, &c, &point[..5], value, &proof),
        Err(PcsError::MalformedProof("wrong number of fold commitments"))
    );
}

#[test]
fn commitment_to_another_polynomial_is_rejected() {
    let mut rng = StdRng::seed_from_u64(4);
    let s = setup(6);
    let f = random_mle(6, &mut rng);
    let g = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (_, proof, value) = open(&s, &f, &point);
    let other = HyperKzg::commit(&s.pk, &g).unwrap();
    // The commitment is absorbed before r: the chain breaks at once.
    assert_eq!(
        verify(&s, &other, &point, value, &proof),
        Err(PcsError::EvaluationChainMismatch { round: 0 })
    );
}

#[test]
fn proof_from_another_srs_is_rejected() {
    let mut rng = StdRng::seed_from_u64(5);
    let s = setup(6);
    let other_srs = StructuredReferenceString::insecure_for_testing(6, 99);
    let other =
        Setup { pk: other_srs.prover_key(6).unwrap(), vk: other_srs.verifier_key().unwrap(), srs: other_srs };
    let f = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (c, proof, value) = open(&other, &f, &point);
    assert_eq!(verify(&s, &c, &point, value, &proof), Err(PcsError::PairingCheckFailed));
}

#[test]
fn tampered_proof_parts_are_rejected() {
    let mut rng = StdRng::seed_from_u64(6);
    let s = setup(6);
    let f = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (c, proof, value) = open(&s, &f, &point);
    let mut bad = proof.clone();
    bad.quotient = (bad.quotient.into_group() + G1Affine::generator()).into_affine();
    assert_eq!(verify(&s, &c, &point, value, &bad), Err(PcsError::PairingCheckFailed));
    let mut bad = proof.clone();
    bad.fold_commitments[1] = (bad.fold_commitments[1].into_group() + G1Affine::generator()).into_affine();
    assert!(verify(&s, &c, &point, value, &bad).is_err());
    let mut bad = proof.clone();
    bad.evaluations[3][2] += Fr::one();
    assert_eq!(verify(&s, &c, &point, value, &bad), Err(PcsError::EvaluationChainMismatch { round: 2 }));
    let mut bad = proof.clone();
    bad.evaluations.pop();
    assert_eq!(
        verify(&s, &c, &point, value, &bad),
        Err(PcsError::MalformedProof("wrong number of evaluations"))
    );
}

#[test]
fn truncated_or_bit_flipped_bytes_are_rejected() {
    let mut rng = StdRng::seed_from_u64(8);
    let s = setup(6);
    let f = random_mle(6, &mut rng);
    let point: Vec<Fr> = (0..6).map(|_| Fr::rand(&mut rng)).collect();
    let (c, proof, value) = open(&s, &f, &point);
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    assert_eq!(OpeningProof::deserialize_compressed(&bytes[..]).unwrap(), proof);
    for cut in [0, 10, bytes.len() - 1] {
        assert!(OpeningProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
    for position in [9, bytes.len() / 2, bytes.len() - 5] {
        let mut flipped = bytes.clone();
        flipped[position] ^= 0x08;
        if let Ok(p) = OpeningProof::deserialize_compressed(&flipped[..]) {
            assert!(verify(&s, &c, &point, value, &p).is_err(), "flip at {position}");
        }
    }
}

#[test]
fn srs_round_trips_through_a_file_and_is_checked() {
    let s = setup(4);
    let path = std::env::temp_dir().join(format!("zkmha-srs-{}.bin", std::process::id()));
    s.srs.write_to_file(&path).unwrap();
    let back = StructuredReferenceString::read_from_file(&path).unwrap();
    assert_eq!(back, s.srs);
    let _ = std::fs::remove_file(&path);
    let mut broken = s.srs.clone();
    broken.powers_g1[3] = broken.powers_g1[2];
    assert_eq!(broken.check_consistency(), Err(PcsError::InconsistentSrs));
    assert!(matches!(s.srs.prover_key(10), Err(PcsError::SrsTooSmall { needed: 10, .. })));
    assert!(StructuredReferenceString::read_from_file(std::path::Path::new("/nonexistent/srs")).is_err());
}
