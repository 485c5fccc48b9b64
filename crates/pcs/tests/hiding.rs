//! Hiding Hyrax commitments and zero-knowledge openings (proof of dot product): round trips,
//! the hidden row, the simulator, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, fr_from_i64};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_pcs::G1Projective;
use zkmha_pcs::*;
use zkmha_transcript::Transcript;

const DOMAIN: &[u8] = b"hiding-test";

/// Small-integer tables of `sizes` variables sharing one column layout of `columns` variables.
struct Batch {
    params: HyraxParams,
    tables: Vec<(usize, Vec<i64>)>,
    commitments: Vec<HyraxCommitment>,
    blinds: Vec<HyraxBlinds>,
    points: Vec<Vec<Fr>>,
}

fn batch(sizes: &[usize], columns: usize, seed: u64) -> Batch {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = HyraxParams::new(sizes.iter().copied().max().unwrap().max(2 * columns));
    let tables: Vec<(usize, Vec<i64>)> =
        sizes.iter().map(|&n| (n, (0..1usize << n).map(|_| rng.gen_range(-300..300)).collect())).collect();
    let mut commitments = Vec::new();
    let mut blinds = Vec::new();
    for (n, values) in &tables {
        let (c, b) = Hyrax::commit_small_hiding(&params, *n, columns.min(*n), values, &mut rng).unwrap();
        commitments.push(c);
        blinds.push(b);
    }
    // Every point shares the column part.
    let column_point: Vec<Fr> = (0..columns).map(|_| Fr::rand(&mut rng)).collect();
    let points = sizes
        .iter()
        .map(|&n| {
            let mut p = column_point.clone();
            p.truncate(n.min(columns));
            p.extend((columns.min(n)..n).map(|_| Fr::rand(&mut rng)));
            p
        })
        .collect();
    Batch { params, tables, commitments, blinds, points }
}

fn reference_value(table: &(usize, Vec<i64>), point: &[Fr]) -> Fr {
    let f =
        DenseMultilinearExtension::new(table.0, table.1.iter().map(|v| fr_from_i64(*v)).collect()).unwrap();
    f.evaluate(point).unwrap()
}

fn open(b: &Batch, seed: u64) -> (ZkOpeningProof, Vec<Fr>) {
    let items: Vec<_> = b
        .tables
        .iter()
        .zip(&b.commitments)
        .zip(&b.blinds)
        .zip(&b.points)
        .map(|(((t, c), bl), p)| {
            (PolynomialTable::Integers { num_vars: t.0, values: &t.1 }, c, bl, p.as_slice())
        })
        .collect();
    Hyrax::open_batch_zk(
        &b.params,
        &items,
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap()
}

fn verify(b: &Batch, values: &[Fr], proof: &ZkOpeningProof) -> Result<(), PcsError> {
    let items: Vec<_> =
        b.commitments.iter().zip(&b.points).zip(values).map(|((c, p), v)| (c, p.as_slice(), *v)).collect();
    Hyrax::verify_batch_zk(&b.params, &items, proof, &mut Transcript::new(DOMAIN))
}

#[test]
fn zk_batches_round_trip_and_give_the_reference_values() {
    // Square, wide and tall layouts; a single narrow row joining a wider batch; odd sizes.
    for (sizes, columns) in [
        (vec![4], 2),
        (vec![7, 7, 5], 3),
        (vec![9, 6], 6),
        (vec![8, 3], 4),
        (vec![1], 1),
        (vec![10, 10, 10, 4], 4),
    ] {
        let b = batch(&sizes, columns, 3);
        let (proof, values) = open(&b, 11);
        for ((t, p), v) in b.tables.iter().zip(&b.points).zip(&values) {
            assert_eq!(*v, reference_value(t, p), "sizes {sizes:?}");
        }
        verify(&b, &values, &proof).unwrap();
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(ZkOpeningProof::deserialize_compressed(&bytes[..]).unwrap(), proof);
    }
}

#[test]
fn hiding_commitments_of_one_table_differ_and_both_open() {
    let b = batch(&[6], 3, 5);
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let (again, blinds) = Hyrax::commit_small_hiding(&b.params, 6, 3, &b.tables[0].1, &mut rng).unwrap();
    assert!(again.rows.iter().zip(&b.commitments[0].rows).all(|(x, y)| x != y), "every row is re-blinded");
    let plain = Hyrax::commit_small_with_columns(&b.params, 6, 3, &b.tables[0].1).unwrap();
    assert!(plain.rows.iter().all(|row| !again.rows.contains(row)), "no row equals the unblinded row");
    let other = Batch { commitments: vec![again], blinds: vec![blinds], ..b };
    let (proof, values) = open(&other, 1);
    verify(&other, &values, &proof).unwrap();
}

#[test]
fn the_combined_row_never_appears_in_the_proof() {
    let b = batch(&[8, 8], 4, 7);
    let (proof, values) = open(&b, 2);
    verify(&b, &values, &proof).unwrap();
    // Rebuild every row combination the plain opening would send: L_tᵀ·M_t for each table.
    let mut revealing = Vec::new();
    for (t, p) in b.tables.iter().zip(&b.points) {
        let width = 1 << 4;
        let weights = eq_table(&p[4..]);
        let row: Vec<Fr> = (0..width)
            .map(|j| weights.iter().enumerate().map(|(i, w)| *w * fr_from_i64(t.1[i * width + j])).sum())
            .collect();
        revealing.extend(row);
    }
    assert!(proof.response.iter().all(|z| !revealing.contains(z)));
    assert!(!revealing.contains(&proof.mask_value) && !revealing.contains(&proof.blinding_response));
}

#[test]
fn two_openings_of_one_statement_differ() {
    let b = batch(&[7], 3, 8);
    let (first, values) = open(&b, 1);
    let (second, again) = open(&b, 2);
    assert_eq!(values, again);
    assert_ne!(first.mask_commitment, second.mask_commitment);
    assert!(first.response.iter().zip(&second.response).all(|(x, y)| x != y));
    verify(&b, &values, &first).unwrap();
    verify(&b, &values, &second).unwrap();
}

#[test]
fn a_wrong_value_is_rejected() {
    let b = batch(&[6, 6], 3, 9);
    let (proof, mut values) = open(&b, 1);
    values[1] += Fr::from(1u64);
    assert_eq!(verify(&b, &values, &proof), Err(PcsError::ZkInnerProductMismatch));
}

#[test]
fn a_tampered_response_is_rejected() {
    let b = batch(&[6], 3, 10);
    let (mut proof, values) = open(&b, 1);
    proof.response[2] += Fr::from(1u64);
    assert_eq!(verify(&b, &values, &proof), Err(PcsError::ZkInnerProductMismatch));
}

#[test]
fn a_response_that_keeps_the_value_but_not_the_commitment_is_rejected() {
    // Shift z along a direction orthogonal to R: ⟨z, R⟩ is unchanged, the group equation is not.
    let b = batch(&[6], 3, 11);
    let (mut proof, values) = open(&b, 1);
    let r = eq_table(&b.points[0][..3]);
    proof.response[0] += r[1];
    proof.response[1] -= r[0];
    assert_eq!(verify(&b, &values, &proof), Err(PcsError::ZkCommitmentMismatch));
}

#[test]
fn a_tampered_blinding_response_is_rejected() {
    let b = batch(&[6], 3, 12);
    let (mut proof, values) = open(&b, 1);
    proof.blinding_response += Fr::from(1u64);
    assert_eq!(verify(&b, &values, &proof), Err(PcsError::ZkCommitmentMismatch));
}

#[test]
fn a_tampered_mask_commitment_or_mask_value_is_rejected() {
    let b = batch(&[6], 3, 13);
    let (proof, values) = open(&b, 1);
    let mut moved = proof.clone();
    moved.mask_commitment = b.params.generators[0];
    assert!(verify(&b, &values, &moved).is_err());
    let mut shifted = proof;
    shifted.mask_value += Fr::from(1u64);
    assert_eq!(verify(&b, &values, &shifted), Err(PcsError::ZkInnerProductMismatch));
}

#[test]
fn a_swapped_commitment_is_rejected() {
    let b = batch(&[6, 6], 3, 14);
    let (proof, values) = open(&b, 1);
    let swapped = Batch { commitments: vec![b.commitments[1].clone(), b.commitments[0].clone()], ..b };
    assert!(verify(&swapped, &values, &proof).is_err());
}

#[test]
fn a_short_response_is_malformed_not_a_panic() {
    let b = batch(&[6], 3, 15);
    let (mut proof, values) = open(&b, 1);
    proof.response.pop();
    assert!(matches!(verify(&b, &values, &proof), Err(PcsError::MalformedProof(_))));
    let mut bytes = Vec::new();
    open(&b, 1).0.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 10, bytes.len() - 1] {
        assert!(ZkOpeningProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
}

/// A vector of `length` random entries, its hiding commitment and a public vector.
fn vector_setup(length: usize, seed: u64) -> (HyraxParams, Vec<Fr>, HyraxCommitment, HyraxBlinds, Vec<Fr>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = HyraxParams::new(12);
    let vector: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
    let (commitment, blinds) = Hyrax::commit_vector_hiding(&params, &vector, &mut rng).unwrap();
    let public: Vec<Fr> = (0..length).map(|_| Fr::rand(&mut rng)).collect();
    (params, vector, commitment, blinds, public)
}

#[test]
fn inner_products_of_committed_vectors_round_trip_on_odd_lengths() {
    for length in [1, 2, 3, 13, 61, 64] {
        let (params, vector, commitment, blinds, public) = vector_setup(length, length as u64);
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let (proof, value) = Hyrax::prove_inner_product_zk(
            &params,
            &vector,
            &commitment,
            &blinds,
            &public,
            &mut Transcript::new(DOMAIN),
            &mut rng,
        )
        .unwrap();
        let reference: Fr = vector.iter().zip(&public).map(|(a, b)| *a * b).sum();
        assert_eq!(value, reference);
        Hyrax::verify_inner_product_zk(
            &params,
            &commitment,
            &public,
            value,
            &proof,
            &mut Transcript::new(DOMAIN),
        )
        .unwrap();
        assert_eq!(
            Hyrax::verify_inner_product_zk(
                &params,
                &commitment,
                &public,
                value + Fr::from(1u64),
                &proof,
                &mut Transcript::new(DOMAIN)
            ),
            Err(PcsError::ZkInnerProductMismatch)
        );
    }
}

#[test]
fn the_simulator_answers_any_value_without_the_vector() {
    // Honest-verifier zero knowledge: for a challenge fixed in advance, the simulator's
    // proof of an arbitrary (here false) value passes the interactive checks.
    let (params, vector, commitment, _, public) = vector_setup(13, 21);
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let challenge = Fr::rand(&mut rng);
    let true_value: Fr = vector.iter().zip(&public).map(|(a, b)| *a * b).sum();
    let false_value = true_value + Fr::from(5u64);
    let simulated =
        ZkOpeningProof::simulate(&params, &commitment, &public, false_value, challenge, &mut rng).unwrap();
    Hyrax::check_inner_product_zk_with_challenge(
        &params,
        &commitment,
        &public,
        false_value,
        &simulated,
        challenge,
    )
    .unwrap();
    // Fiat–Shamir takes the choice of the challenge away: the same proof fails non-interactively.
    assert!(
        Hyrax::verify_inner_product_zk(
            &params,
            &commitment,
            &public,
            false_value,
            &simulated,
            &mut Transcript::new(DOMAIN)
        )
        .is_err()
    );
}

#[test]
fn vector_commitments_reject_wrong_shapes() {
    let (params, vector, commitment, blinds, public) = vector_setup(5, 30);
    let mut longer = public.clone();
    longer.extend([Fr::from(1u64); 4]);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(matches!(
        Hyrax::prove_inner_product_zk(
            &params,
            &vector,
            &commitment,
            &blinds,
            &longer,
            &mut Transcript::new(DOMAIN),
            &mut rng
        ),
        Err(PcsError::MalformedProof(_))
    ));
    let table = batch(&[6], 3, 1);
    let (proof, value) = Hyrax::prove_inner_product_zk(
        &params,
        &vector,
        &commitment,
        &blinds,
        &public,
        &mut Transcript::new(DOMAIN),
        &mut rng,
    )
    .unwrap();
    // A many-row commitment is not a vector commitment.
    assert!(matches!(
        Hyrax::verify_inner_product_zk(
            &params,
            &table.commitments[0],
            &public,
            value,
            &proof,
            &mut Transcript::new(DOMAIN)
        ),
        Err(PcsError::MalformedProof(_))
    ));
}

/// Commitments `v·U + β·H` to each table's value at its point, with the prover's `(v, β)`.
fn value_commitments(b: &Batch, seed: u64) -> Vec<(G1Affine, Fr, Fr)> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    b.tables
        .iter()
        .zip(&b.points)
        .map(|(t, p)| {
            let (value, blinding) = (reference_value(t, p), Fr::rand(&mut rng));
            (
                (b.params.value_generator * value + b.params.blinding_generator * blinding).into(),
                value,
                blinding,
            )
        })
        .collect()
}

fn open_committed(b: &Batch, values: &[(G1Affine, Fr, Fr)]) -> Result<ZkCommittedOpeningProof, PcsError> {
    let items: Vec<_> = b
        .tables
        .iter()
        .zip(&b.commitments)
        .zip(&b.blinds)
        .zip(&b.points)
        .zip(values)
        .map(|((((t, c), bl), p), v)| {
            (PolynomialTable::Integers { num_vars: t.0, values: &t.1 }, c, bl, p.as_slice(), *v)
        })
        .collect();
    Hyrax::open_batch_committed(
        &b.params,
        &items,
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(5),
    )
}

fn verify_committed(b: &Batch, values: &[G1Affine], proof: &ZkCommittedOpeningProof) -> Result<(), PcsError> {
    let items: Vec<_> =
        b.commitments.iter().zip(&b.points).zip(values).map(|((c, p), v)| (c, p.as_slice(), *v)).collect();
    let equations = Hyrax::batch_committed_equations(&b.params, &items, proof, &mut Transcript::new(DOMAIN))?;
    equations.iter().try_for_each(|e| e.holds().map_err(|_| PcsError::ZkCommitmentMismatch))
}

#[test]
fn committed_value_batches_round_trip_and_reject_other_values() {
    for (sizes, columns) in [(vec![6], 3), (vec![7, 7, 5], 3), (vec![8, 3], 4), (vec![9, 9], 5)] {
        let b = batch(&sizes, columns, 40);
        let values = value_commitments(&b, 1);
        let proof = open_committed(&b, &values).unwrap();
        let commitments: Vec<G1Affine> = values.iter().map(|v| v.0).collect();
        verify_committed(&b, &commitments, &proof).unwrap();
        // The response never shows a combined row (rebuilt as in the public-value test).
        assert!(!proof.response.iter().any(|z| values.iter().any(|v| v.1 == *z)));
        // A commitment to another value for one of the tables fails the group equation.
        let mut other = commitments.clone();
        other[0] = (G1Projective::from(other[0]) + b.params.value_generator).into();
        assert_eq!(verify_committed(&b, &other, &proof), Err(PcsError::ZkCommitmentMismatch));
    }
}

#[test]
fn the_prover_refuses_a_value_that_is_not_the_tables() {
    let b = batch(&[6, 6], 3, 41);
    let mut values = value_commitments(&b, 2);
    values[1].1 += Fr::from(1u64);
    assert!(matches!(open_committed(&b, &values), Err(PcsError::MalformedProof(_))));
}

#[test]
fn tampered_committed_openings_are_rejected() {
    let b = batch(&[7, 7], 3, 42);
    let values = value_commitments(&b, 3);
    let commitments: Vec<G1Affine> = values.iter().map(|v| v.0).collect();
    let proof = open_committed(&b, &values).unwrap();
    let mut response = proof.clone();
    response.response[3] += Fr::from(1u64);
    assert_eq!(verify_committed(&b, &commitments, &response), Err(PcsError::ZkCommitmentMismatch));
    let mut value_blinding = proof.clone();
    value_blinding.value_blinding_response += Fr::from(1u64);
    assert_eq!(verify_committed(&b, &commitments, &value_blinding), Err(PcsError::ZkCommitmentMismatch));
    let mut short = proof;
    short.response.pop();
    assert!(matches!(verify_committed(&b, &commitments, &short), Err(PcsError::MalformedProof(_))));
}

fn open_committed_log(b: &Batch, values: &[(G1Affine, Fr, Fr)]) -> Result<ZkInnerProductProof, PcsError> {
    let items: Vec<_> = b
        .tables
        .iter()
        .zip(&b.commitments)
        .zip(&b.blinds)
        .zip(&b.points)
        .zip(values)
        .map(|((((t, c), bl), p), v)| {
            (PolynomialTable::Integers { num_vars: t.0, values: &t.1 }, c, bl, p.as_slice(), *v)
        })
        .collect();
    Hyrax::open_batch_committed_log(
        &b.params,
        &items,
        &mut Transcript::new(DOMAIN),
        &mut ChaCha20Rng::seed_from_u64(6),
    )
}

fn verify_committed_log(b: &Batch, values: &[G1Affine], proof: &ZkInnerProductProof) -> Result<(), PcsError> {
    let items: Vec<_> =
        b.commitments.iter().zip(&b.points).zip(values).map(|((c, p), v)| (c, p.as_slice(), *v)).collect();
    Hyrax::batch_committed_log_equation(&b.params, &items, proof, &mut Transcript::new(DOMAIN))?
        .holds()
        .map_err(|_| PcsError::ZkCommitmentMismatch)
}

#[test]
fn logarithmic_committed_openings_round_trip_and_reject_other_values_and_tampering() {
    for (sizes, columns) in [(vec![6], 3), (vec![7, 7, 5], 3), (vec![8, 3], 4), (vec![9, 9], 5)] {
        let b = batch(&sizes, columns, 50);
        let values = value_commitments(&b, 7);
        let proof = open_committed_log(&b, &values).unwrap();
        assert_eq!(proof.rounds.len(), columns);
        let commitments: Vec<G1Affine> = values.iter().map(|v| v.0).collect();
        verify_committed_log(&b, &commitments, &proof).unwrap();
        let mut other = commitments.clone();
        other[0] = (G1Projective::from(other[0]) + b.params.value_generator).into();
        assert_eq!(verify_committed_log(&b, &other, &proof), Err(PcsError::ZkCommitmentMismatch));
        let mut tampered = proof.clone();
        tampered.responses[1] += Fr::from(1u64);
        assert_eq!(verify_committed_log(&b, &commitments, &tampered), Err(PcsError::ZkCommitmentMismatch));
        let mut short = proof;
        short.rounds.pop();
        assert!(matches!(verify_committed_log(&b, &commitments, &short), Err(PcsError::MalformedProof(_))));
    }
    let b = batch(&[6, 6], 3, 51);
    let mut values = value_commitments(&b, 8);
    values[1].1 += Fr::from(1u64);
    assert!(matches!(open_committed_log(&b, &values), Err(PcsError::MalformedProof(_))));
}

#[test]
fn fixed_base_tables_give_the_same_commitments() {
    let params = HyraxParams::new(4);
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let mut scalars = vec![Fr::from(0u64), Fr::from(1u64), -Fr::from(1u64), Fr::from(15u64), Fr::from(16u64)];
    scalars.extend((0..20).map(|_| Fr::rand(&mut rng)));
    let plain: Vec<(G1Projective, G1Projective)> = scalars
        .iter()
        .zip(scalars.iter().rev())
        .map(|(v, b)| (params.pedersen(*v, *b), params.blinding_times(*b)))
        .collect();
    params.prepare_pedersen_tables();
    for ((v, b), (commitment, blinding)) in scalars.iter().zip(scalars.iter().rev()).zip(plain) {
        assert_eq!(params.pedersen(*v, *b), commitment);
        assert_eq!(params.pedersen(*v, *b), params.value_generator * v + params.blinding_generator * b);
        assert_eq!(params.blinding_times(*b), blinding);
    }
}

/// A malicious prover of the derived (not absorbed) `C_a` opens *another* table (one entry
/// changed, values committed to the changed table's) against the honest commitments. Its
/// combined row is not the committed rows' combination; since `C_a` is no longer in the
/// transcript, the prover's and verifier's challenges agree — the group equation alone
/// rejects it (the fresh-context review of 2026-11-29).
#[test]
fn a_derived_combined_row_of_another_table_is_rejected() {
    for (sizes, columns) in [(vec![6], 3), (vec![7, 7, 5], 3), (vec![8, 3], 4)] {
        let honest = batch(&sizes, columns, 70);
        let mut forged = batch(&sizes, columns, 70);
        forged.tables[0].1[5] += 1;
        let values = value_commitments(&forged, 9);
        // The forged opening, with the honest commitments and blinds.
        forged.commitments = honest.commitments.clone();
        forged.blinds = honest.blinds.clone();
        let proof = open_committed_log(&forged, &values).unwrap();
        let commitments: Vec<G1Affine> = values.iter().map(|v| v.0).collect();
        assert_eq!(
            verify_committed_log(&honest, &commitments, &proof),
            Err(PcsError::ZkCommitmentMismatch),
            "{sizes:?}"
        );
    }
}
