//! The zero-knowledge multi-point opening: committed claims on hiding Hyrax commitments,
//! round trips (one layout, several sizes and points) and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, Hyrax, HyraxBlinds, HyraxCommitment, HyraxParams, PolynomialTable};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, ValueOpening, VerifierMasks,
    ZkError, ZkMultiOpeningProof, ZkOpeningClaim, prove_multi_opening_zk, verify_multi_opening_zk_deferred,
    zk_multi_opening_schedule,
};

const DOMAIN: &[u8] = b"zk-multi-opening-test";
const COLUMN_VARS: usize = 3;

struct Setup {
    params: HyraxParams,
    tables: Vec<(usize, Vec<i64>)>,
    commitments: Vec<HyraxCommitment>,
    blinds: Vec<HyraxBlinds>,
    claims: Vec<ZkOpeningClaim<CommittedValue>>,
}

/// Polynomials of `sizes` variables; claims at the given `(polynomial, point index)` pairs
/// (a point index is shared by polynomials of one size); `offset` added to the first value.
fn setup(sizes: &[usize], claims: &[(usize, usize)], offset: Fr, seed: u64) -> Setup {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = HyraxParams::new(8);
    let mut tables = Vec::new();
    let mut commitments = Vec::new();
    let mut blinds = Vec::new();
    for &n in sizes {
        let values: Vec<i64> = (0..1usize << n).map(|_| rng.gen_range(-100..100)).collect();
        let (c, b) = Hyrax::commit_small_hiding(&params, n, COLUMN_VARS.min(n), &values, &mut rng).unwrap();
        tables.push((n, values));
        commitments.push(c);
        blinds.push(b);
    }
    let points: Vec<Vec<Fr>> = (0..4).map(|_| (0..8).map(|_| Fr::rand(&mut rng)).collect()).collect();
    let claims = claims
        .iter()
        .enumerate()
        .map(|(i, &(f, p))| {
            let (n, values) = &tables[f];
            let point = points[p][..*n].to_vec();
            let mut value =
                DenseMultilinearExtension::from_i64(*n, values).unwrap().evaluate(&point).unwrap();
            if i == 0 {
                value += offset;
            }
            let opening = ValueOpening::hide(value, &mut rng);
            ZkOpeningClaim {
                polynomial: f,
                point,
                value: CommittedValue::new(opening.commit(&params).into(), opening),
            }
        })
        .collect();
    Setup { params, tables, commitments, blinds, claims }
}

fn schedule(s: &Setup) -> MaskSchedule {
    let sizes: Vec<usize> = s.tables.iter().map(|(n, _)| *n).collect();
    MaskSchedule(vec![zk_multi_opening_schedule(&sizes)])
}

fn prove(s: &Setup, seed: u64) -> (ZkMultiOpeningProof, G1Affine, zkmha_pcs::ZkInnerProductProof) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut transcript = Transcript::new(DOMAIN);
    let (mut masks, commitment) =
        ProverMasks::commit(&s.params, schedule(s), &mut transcript, &mut rng).unwrap();
    let polynomials: Vec<(PolynomialTable, &HyraxCommitment, &HyraxBlinds)> = s
        .tables
        .iter()
        .zip(&s.commitments)
        .zip(&s.blinds)
        .map(|(((n, values), c), b)| (PolynomialTable::Integers { num_vars: *n, values }, c, b))
        .collect();
    let proof =
        prove_multi_opening_zk(&s.params, &polynomials, &s.claims, &mut masks, &mut transcript, &mut rng)
            .unwrap();
    let masks_proof = masks.prove_openings(&s.params, &mut transcript, &mut rng).unwrap();
    (proof, commitment, masks_proof)
}

fn verify(
    s: &Setup,
    claims: &[ZkOpeningClaim<Combination>],
    (proof, commitment, masks_proof): &(ZkMultiOpeningProof, G1Affine, zkmha_pcs::ZkInnerProductProof),
) -> Result<(), ZkError> {
    let mut transcript = Transcript::new(DOMAIN);
    let mut masks = VerifierMasks::absorb(schedule(s), *commitment, &mut transcript);
    let mut checks = DeferredChecks::new();
    let commitments: Vec<&HyraxCommitment> = s.commitments.iter().collect();
    verify_multi_opening_zk_deferred(
        &s.params,
        &commitments,
        claims,
        proof,
        &mut masks,
        &mut transcript,
        &mut checks,
    )?;
    masks.verify_openings(&s.params, masks_proof, &mut transcript, &mut checks)?;
    checks.finish(&transcript)
}

fn verifier_claims(s: &Setup) -> Vec<ZkOpeningClaim<Combination>> {
    s.claims
        .iter()
        .map(|c| ZkOpeningClaim {
            polynomial: c.polynomial,
            point: c.point.clone(),
            value: c.value.commitment.clone(),
        })
        .collect()
}

/// (polynomial sizes, claims as (polynomial, point index)).
type Case = (&'static [usize], &'static [(usize, usize)]);
const CASES: &[Case] = &[
    (&[4], &[(0, 0)]),
    (&[6, 6, 6], &[(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)]),
    (&[7, 5, 2], &[(0, 0), (1, 1), (2, 0), (2, 3), (0, 2)]),
];

#[test]
fn true_claims_verify_on_many_sizes() {
    for (i, (sizes, claims)) in CASES.iter().enumerate() {
        let s = setup(sizes, claims, Fr::from(0u64), i as u64);
        let proved = prove(&s, 10 + i as u64);
        verify(&s, &verifier_claims(&s), &proved).unwrap_or_else(|e| panic!("case {i}: {e}"));
    }
}

#[test]
fn a_false_claim_is_rejected() {
    for (i, (sizes, claims)) in CASES.iter().enumerate() {
        let s = setup(sizes, claims, Fr::one(), i as u64);
        let proved = prove(&s, 20);
        assert!(verify(&s, &verifier_claims(&s), &proved).is_err(), "case {i}");
    }
}

#[test]
fn a_swapped_claim_commitment_or_opening_is_rejected() {
    let (sizes, claims) = CASES[2];
    let s = setup(sizes, claims, Fr::from(0u64), 3);
    let proved = prove(&s, 30);
    let mut swapped = verifier_claims(&s);
    swapped[1].value = swapped[2].value.clone();
    assert!(verify(&s, &swapped, &proved).is_err());
    let mut bad = proved.clone();
    bad.0.openings[0].responses[0] += Fr::one();
    assert_eq!(verify(&s, &verifier_claims(&s), &bad), Err(ZkError::CommittedOpening));
    let mut bad = proved.clone();
    bad.0.openings.push(bad.0.openings[0].clone());
    assert!(matches!(verify(&s, &verifier_claims(&s), &bad), Err(ZkError::MaskOpening(_))));
}
