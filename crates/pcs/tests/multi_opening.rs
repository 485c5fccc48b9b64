//! Many claims at arbitrary points on several committed polynomials: one sum-check and one
//! Hyrax opening per column count.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::*;
use zkmha_sumcheck::SumcheckError;
use zkmha_transcript::Transcript;

struct Setup {
    params: HyraxParams,
    polynomials: Vec<DenseMultilinearExtension>,
    commitments: Vec<HyraxCommitment>,
    claims: Vec<OpeningClaim>,
}

/// Polynomials of `sizes` variables with `claims_per` claims each at random points; the claimed
/// values come from plain evaluation (the reference).
fn setup(sizes: &[usize], claims_per: usize, seed: u64) -> Setup {
    let mut rng = StdRng::seed_from_u64(seed);
    let params = HyraxParams::new(sizes.iter().copied().max().unwrap_or(0));
    let polynomials: Vec<DenseMultilinearExtension> = sizes
        .iter()
        .map(|&n| {
            DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect()).unwrap()
        })
        .collect();
    let commitments = polynomials.iter().map(|f| Hyrax::commit(&params, f).unwrap()).collect();
    let mut claims = Vec::new();
    for (index, f) in polynomials.iter().enumerate() {
        for _ in 0..claims_per {
            let point: Vec<Fr> = (0..f.num_vars()).map(|_| Fr::rand(&mut rng)).collect();
            let value = f.evaluate(&point).unwrap();
            claims.push(OpeningClaim { polynomial: index, point, value });
        }
    }
    Setup { params, polynomials, commitments, claims }
}

fn prove(s: &Setup) -> MultiOpeningProof {
    let items: Vec<(PolynomialTable, &HyraxCommitment)> =
        s.polynomials.iter().map(PolynomialTable::Field).zip(&s.commitments).collect();
    Hyrax::open_multi(&items, &s.claims, &mut Transcript::new(b"multi")).unwrap()
}

fn verify(
    s: &Setup,
    commitments: &[HyraxCommitment],
    claims: &[OpeningClaim],
    proof: &MultiOpeningProof,
) -> Result<(), PcsError> {
    let refs: Vec<&HyraxCommitment> = commitments.iter().collect();
    Hyrax::verify_multi(&s.params, &refs, claims, proof, &mut Transcript::new(b"multi"))
}

#[test]
fn round_trips_on_many_shapes() {
    for (seed, (sizes, claims_per)) in [
        (vec![1usize], 1usize),
        (vec![5], 3),
        (vec![3, 4, 7], 1),
        (vec![9, 8, 3, 5], 2),
        (vec![6, 6, 6], 2),
        (vec![2, 10], 3),
    ]
    .into_iter()
    .enumerate()
    {
        let s = setup(&sizes, claims_per, seed as u64);
        let proof = prove(&s);
        let mut counts: Vec<usize> = sizes.iter().map(|n| n - n / 2).collect();
        counts.sort_unstable();
        counts.dedup();
        assert_eq!(proof.openings.len(), counts.len(), "one opening per column count, {sizes:?}");
        assert_eq!(verify(&s, &s.commitments, &s.claims, &proof), Ok(()), "{sizes:?}");
    }
}

#[test]
fn rejects_a_wrong_claimed_value() {
    let s = setup(&[6, 4], 2, 10);
    let proof = prove(&s);
    let mut claims = s.claims.clone();
    claims[1].value += Fr::one();
    assert_eq!(
        verify(&s, &s.commitments, &claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
}

#[test]
fn rejects_a_wrong_point() {
    let s = setup(&[6, 4], 2, 11);
    let proof = prove(&s);
    let mut claims = s.claims.clone();
    claims[2].point[0] += Fr::one();
    assert_eq!(
        verify(&s, &s.commitments, &claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
}

#[test]
fn rejects_false_claims_proved_honestly() {
    // A prover that starts from a false value cannot finish the reduction.
    let mut s = setup(&[5, 5], 1, 12);
    s.claims[0].value += Fr::one();
    let proof = prove(&s);
    assert_eq!(
        verify(&s, &s.commitments, &s.claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
}

#[test]
fn rejects_a_commitment_to_another_polynomial() {
    let s = setup(&[6, 6], 1, 13);
    let other = setup(&[6, 6], 1, 14);
    let mut commitments = s.commitments.clone();
    commitments[1] = other.commitments[1].clone();
    // Swapped after proving: the commitments are part of the absorbed statement.
    let proof = prove(&s);
    assert_eq!(
        verify(&s, &commitments, &s.claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
    // A prover that absorbs the other commitment but opens its own polynomial passes the
    // reduction (the claims are true of its polynomial) and fails the opening.
    let items: Vec<(PolynomialTable, &HyraxCommitment)> =
        s.polynomials.iter().map(PolynomialTable::Field).zip(&commitments).collect();
    let proof = Hyrax::open_multi(&items, &s.claims, &mut Transcript::new(b"multi")).unwrap();
    assert_eq!(verify(&s, &commitments, &s.claims, &proof), Err(PcsError::PairingCheckFailed));
}

#[test]
fn one_msm_for_every_group_still_catches_a_bad_group() {
    // Two column counts, so two opening groups whose equations share the final MSM: a wrong
    // commitment in either group must fail it.
    for bad in [0usize, 1] {
        let s = setup(&[7, 3], 1, 40 + bad as u64);
        let other = setup(&[7, 3], 1, 50 + bad as u64);
        let mut commitments = s.commitments.clone();
        commitments[bad] = other.commitments[bad].clone();
        let items: Vec<(PolynomialTable, &HyraxCommitment)> =
            s.polynomials.iter().map(PolynomialTable::Field).zip(&commitments).collect();
        let proof = Hyrax::open_multi(&items, &s.claims, &mut Transcript::new(b"multi")).unwrap();
        assert_eq!(proof.openings.len(), 2);
        assert_eq!(
            verify(&s, &commitments, &s.claims, &proof),
            Err(PcsError::PairingCheckFailed),
            "group {bad}"
        );
    }
}

#[test]
fn rejects_a_tampered_evaluation() {
    let s = setup(&[7, 3], 2, 15);
    let mut proof = prove(&s);
    proof.evaluations[0] += Fr::one();
    assert_eq!(
        verify(&s, &s.commitments, &s.claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
}

#[test]
fn rejects_a_tampered_opening_row() {
    let s = setup(&[7, 3], 2, 16);
    let mut proof = prove(&s);
    proof.openings[1].combined_row[0] += Fr::one();
    assert!(matches!(
        verify(&s, &s.commitments, &s.claims, &proof),
        Err(PcsError::EvaluationChainMismatch { .. } | PcsError::PairingCheckFailed)
    ));
}

#[test]
fn rejects_a_tampered_sumcheck_round() {
    let s = setup(&[7, 3], 1, 17);
    let mut proof = prove(&s);
    proof.sumcheck.rounds[2].evaluations[0] += Fr::one();
    assert!(matches!(verify(&s, &s.commitments, &s.claims, &proof), Err(PcsError::Sumcheck(_))));
}

#[test]
fn rejects_missing_pieces_and_bad_batches() {
    let s = setup(&[6, 4], 1, 18);
    let proof = prove(&s);
    let mut short = proof.clone();
    short.evaluations.pop();
    assert_eq!(
        verify(&s, &s.commitments, &s.claims, &short),
        Err(PcsError::MalformedProof("one evaluation per polynomial"))
    );
    let mut short = proof.clone();
    short.openings.pop();
    assert_eq!(
        verify(&s, &s.commitments, &s.claims, &short),
        Err(PcsError::MalformedProof("one opening per column count"))
    );
    let mut claims = s.claims.clone();
    claims[0].polynomial = 5;
    assert_eq!(
        verify(&s, &s.commitments, &claims, &proof),
        Err(PcsError::InvalidBatch("claim on no polynomial"))
    );
    assert_eq!(
        verify(&s, &s.commitments, &s.claims[..1], &proof),
        Err(PcsError::InvalidBatch("a polynomial without claims"))
    );
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert!(MultiOpeningProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
    bytes[40] ^= 0x10;
    if let Ok(flipped) = MultiOpeningProof::deserialize_compressed(bytes.as_slice()) {
        assert!(verify(&s, &s.commitments, &s.claims, &flipped).is_err());
    }
}

#[test]
fn polynomials_sharing_their_points_share_one_instance() {
    let mut s = setup(&[6, 6, 6, 4], 0, 20);
    let mut rng = StdRng::seed_from_u64(21);
    let shared: Vec<Vec<Fr>> = (0..2).map(|_| (0..6).map(|_| Fr::rand(&mut rng)).collect()).collect();
    for f in 0..3 {
        for point in &shared {
            let value = s.polynomials[f].evaluate(point).unwrap();
            s.claims.push(OpeningClaim { polynomial: f, point: point.clone(), value });
        }
    }
    let own: Vec<Fr> = (0..4).map(|_| Fr::rand(&mut rng)).collect();
    s.claims.push(OpeningClaim {
        polynomial: 3,
        value: s.polynomials[3].evaluate(&own).unwrap(),
        point: own,
    });
    let proof = prove(&s);
    // Two instances (the three sharing polynomials, the fourth alone) in one batched sum-check
    // of 6 rounds; two column counts.
    assert_eq!(proof.sumcheck.rounds.len(), 6);
    assert_eq!(proof.openings.len(), 2);
    assert_eq!(verify(&s, &s.commitments, &s.claims, &proof), Ok(()));
    let mut claims = s.claims.clone();
    claims[3].value += Fr::one(); // polynomial 1 at the second shared point
    assert_eq!(
        verify(&s, &s.commitments, &claims, &proof),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
    let mut bad = proof.clone();
    bad.evaluations[2] += Fr::one();
    assert_eq!(
        verify(&s, &s.commitments, &s.claims, &bad),
        Err(PcsError::Sumcheck(SumcheckError::FinalEvaluationMismatch))
    );
}

#[test]
fn integer_tables_open_like_their_field_copies() {
    let mut rng = StdRng::seed_from_u64(30);
    let params = HyraxParams::new(7);
    let values: Vec<Vec<i64>> = [7usize, 5]
        .iter()
        .map(|&n| (0..1usize << n).map(|_| rng.gen_range(-300i64..300)).collect())
        .collect();
    let fields: Vec<DenseMultilinearExtension> = values
        .iter()
        .zip([7usize, 5])
        .map(|(v, n)| DenseMultilinearExtension::from_i64(n, v).unwrap())
        .collect();
    let commitments: Vec<HyraxCommitment> =
        values.iter().zip([7usize, 5]).map(|(v, n)| Hyrax::commit_small(&params, n, v).unwrap()).collect();
    let mut claims = Vec::new();
    for (index, f) in fields.iter().enumerate() {
        let point: Vec<Fr> = (0..f.num_vars()).map(|_| Fr::rand(&mut rng)).collect();
        claims.push(OpeningClaim { polynomial: index, value: f.evaluate(&point).unwrap(), point });
    }
    let as_integers: Vec<(PolynomialTable, &HyraxCommitment)> = values
        .iter()
        .zip([7usize, 5])
        .map(|(v, n)| PolynomialTable::Integers { num_vars: n, values: v })
        .zip(&commitments)
        .collect();
    let as_fields: Vec<(PolynomialTable, &HyraxCommitment)> =
        fields.iter().map(PolynomialTable::Field).zip(&commitments).collect();
    let from_integers = Hyrax::open_multi(&as_integers, &claims, &mut Transcript::new(b"multi")).unwrap();
    let from_fields = Hyrax::open_multi(&as_fields, &claims, &mut Transcript::new(b"multi")).unwrap();
    assert_eq!(from_integers, from_fields);
    let refs: Vec<&HyraxCommitment> = commitments.iter().collect();
    assert_eq!(
        Hyrax::verify_multi(&params, &refs, &claims, &from_integers, &mut Transcript::new(b"multi")),
        Ok(())
    );
}

#[test]
fn one_layout_for_every_commitment_gives_one_opening() {
    // Columns min(n, 5): the 2^9 and 2^8 tables are matrices of 2^5 columns, the 2^5 and 2^3
    // ones single rows; every claim reduces to prefixes of one point, so one combined row
    // answers all of them.
    let mut s = setup(&[9, 8, 5, 3], 2, 60);
    s.commitments = s
        .polynomials
        .iter()
        .map(|f| Hyrax::commit_with_columns(&s.params, f, f.num_vars().min(5)).unwrap())
        .collect();
    let proof = prove(&s);
    assert_eq!(proof.openings.len(), 1);
    assert_eq!(proof.openings[0].combined_row.len(), 32);
    assert_eq!(verify(&s, &s.commitments, &s.claims, &proof), Ok(()));
    for bad in 0..4 {
        // A wrong evaluation of any member, the narrow ones included, fails.
        let mut tampered = proof.clone();
        tampered.evaluations[bad] += Fr::one();
        assert!(verify(&s, &s.commitments, &s.claims, &tampered).is_err(), "member {bad}");
        // So does another polynomial's commitment in its place.
        let other = setup(&[9, 8, 5, 3], 2, 61);
        let mut commitments = s.commitments.clone();
        commitments[bad] = Hyrax::commit_with_columns(
            &s.params,
            &other.polynomials[bad],
            other.polynomials[bad].num_vars().min(5),
        )
        .unwrap();
        let items: Vec<(PolynomialTable, &HyraxCommitment)> =
            s.polynomials.iter().map(PolynomialTable::Field).zip(&commitments).collect();
        let proof = Hyrax::open_multi(&items, &s.claims, &mut Transcript::new(b"multi")).unwrap();
        assert_eq!(
            verify(&s, &commitments, &s.claims, &proof),
            Err(PcsError::PairingCheckFailed),
            "member {bad}"
        );
    }
}
