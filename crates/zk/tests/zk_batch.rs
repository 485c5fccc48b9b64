//! Zero-knowledge batches of sum-of-products claims with different numbers of variables:
//! round trips against a plain reference, transcript agreement, and tampering.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::CanonicalSerialize;
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, ZkInnerProductProof};
use zkmha_sumcheck::{FinalEvaluations, ProductSumcheck, ProductTerm, SumOfProducts, SumcheckError};
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, FactorValue, MaskSchedule, ProverMasks,
    ValueOpening, VerifierMasks, ZkError, ZkProductClaims, ZkProductProof, ZkProductShape,
    prove_zk_batched_products, verify_zk_batched_products_deferred,
};

fn absorb_claims(transcript: &mut Transcript, claims: &[G1Affine]) {
    let mut bytes = Vec::new();
    for c in claims {
        c.serialize_compressed(&mut bytes).unwrap();
    }
    transcript.append_bytes(b"claims", &bytes);
}

const DOMAIN: &[u8] = b"zk-batch-test";

struct Member {
    shape: ZkProductShape,
    mles: Vec<DenseMultilinearExtension>,
}

fn member(num_vars: usize, terms: Vec<ProductTerm>, public: &[bool], seed: u64) -> Member {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mles = (0..public.len())
        .map(|_| {
            DenseMultilinearExtension::new(num_vars, (0..1 << num_vars).map(|_| Fr::rand(&mut rng)).collect())
                .unwrap()
        })
        .collect();
    let shape =
        ZkProductShape::new(SumOfProducts::new(public.len(), terms).unwrap(), public.to_vec()).unwrap();
    Member { shape, mles }
}

fn product(factors: &[usize]) -> Vec<ProductTerm> {
    vec![ProductTerm { coefficient: Fr::one(), factors: factors.to_vec() }]
}

fn members() -> Vec<Member> {
    vec![
        member(3, product(&[0, 1]), &[false, false], 1),
        member(5, product(&[0, 1, 2]), &[true, false, false], 2),
        member(
            5,
            vec![
                ProductTerm { coefficient: Fr::from(3u64), factors: vec![0] },
                ProductTerm { coefficient: Fr::one(), factors: vec![0, 1] },
            ],
            &[false, true],
            3,
        ),
        member(1, product(&[0]), &[false], 4),
    ]
}

fn reference_sum(m: &Member) -> Fr {
    let n = m.mles[0].num_vars();
    (0..1usize << n)
        .map(|x| {
            m.shape.shape().combine(&m.mles.iter().map(|f| f.evaluations()[x]).collect::<Vec<_>>()).unwrap()
        })
        .sum()
}

struct Proved {
    proof: ZkProductProof,
    claims: Vec<ZkProductClaims>,
    openings: Vec<Vec<Option<ValueOpening>>>,
    commitments: Vec<G1Affine>,
    transcript: Transcript,
    masks: (G1Affine, ZkInnerProductProof),
}

/// One zero-knowledge sum-check for the whole batch: `(max n_i, max d_i)`.
fn schedule(ms: &[Member]) -> MaskSchedule {
    let n = ms.iter().map(|m| m.mles[0].num_vars()).max().unwrap_or(0);
    let d = ms.iter().map(|m| m.shape.shape().degree()).max().unwrap_or(1);
    MaskSchedule(vec![(n, d)])
}

fn prove(params: &HyraxParams, ms: &[Member], sums: &[Fr], seed: u64) -> Proved {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let claims: Vec<(G1Affine, ValueOpening)> = sums
        .iter()
        .map(|s| {
            let o = ValueOpening::hide(*s, &mut rng);
            (G1Affine::from(o.commit(params)), o)
        })
        .collect();
    let mut instances: Vec<ProductSumcheck> =
        ms.iter().map(|m| ProductSumcheck::new(m.shape.shape().clone(), m.mles.clone()).unwrap()).collect();
    let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> = ms
        .iter()
        .zip(instances.iter_mut())
        .map(|(m, i)| (&m.shape, i as &mut dyn FinalEvaluations))
        .collect();
    let mut transcript = Transcript::new(DOMAIN);
    // The caller's transcript determines the claims (here: absorbs them).
    absorb_claims(&mut transcript, &claims.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    let claims: Vec<CommittedValue> = claims.iter().map(|(c, o)| CommittedValue::new(*c, *o)).collect();
    let (mut masks, masks_commitment) =
        ProverMasks::commit(params, schedule(ms), &mut transcript, &mut rng).unwrap();
    let (proof, claims_out, openings) =
        prove_zk_batched_products(params, members, &claims, &mut masks, &mut transcript, &mut rng).unwrap();
    let masks_proof = masks.prove_openings(params, &mut transcript, &mut rng).unwrap();
    Proved {
        proof,
        claims: claims_out,
        openings,
        commitments: claims.iter().map(|c| G1Affine::from(c.commitment.evaluate())).collect(),
        transcript,
        masks: (masks_commitment, masks_proof),
    }
}

fn verify(
    params: &HyraxParams,
    ms: &[Member],
    commitments: &[G1Affine],
    proof: &ZkProductProof,
    (masks_commitment, masks_proof): &(G1Affine, ZkInnerProductProof),
) -> Result<(Vec<ZkProductClaims>, Transcript), ZkError> {
    let shapes: Vec<BatchMember> = ms.iter().map(|m| (&m.shape, m.mles[0].num_vars())).collect();
    let mut transcript = Transcript::new(DOMAIN);
    absorb_claims(&mut transcript, commitments);
    let commitments: Vec<Combination> = commitments.iter().map(|c| Combination::point(*c)).collect();
    let mut masks = VerifierMasks::absorb(schedule(ms), *masks_commitment, &mut transcript);
    let mut checks = DeferredChecks::new();
    let claims = verify_zk_batched_products_deferred(
        params,
        &shapes,
        &commitments,
        proof,
        &mut masks,
        &mut transcript,
        &mut checks,
    )?;
    masks.verify_openings(params, masks_proof, &mut transcript, &mut checks)?;
    checks.finish(&transcript)?;
    Ok((claims, transcript))
}

#[test]
fn batches_of_different_sizes_round_trip_against_the_reference() {
    let params = HyraxParams::new(10);
    let ms = members();
    for count in 1..=ms.len() {
        let chosen = &ms[..count];
        let sums: Vec<Fr> = chosen.iter().map(reference_sum).collect();
        let mut p = prove(&params, chosen, &sums, count as u64);
        let (claims, mut transcript) = verify(&params, chosen, &p.commitments, &p.proof, &p.masks).unwrap();
        assert_eq!(claims, p.claims);
        assert_eq!(p.transcript.challenge_field(b"next"), transcript.challenge_field(b"next"));
        for ((m, c), openings) in chosen.iter().zip(&claims).zip(&p.openings) {
            assert_eq!(c.point.len(), m.mles[0].num_vars());
            for ((f, value), opening) in m.mles.iter().zip(&c.values).zip(openings) {
                let truth = f.evaluate(&c.point).unwrap();
                match (value, opening) {
                    (FactorValue::Public(v), None) => assert_eq!(*v, truth),
                    (FactorValue::Hidden(commitment), Some(o)) => {
                        assert_eq!(o.value, truth);
                        assert_eq!(G1Affine::from(o.commit(&params)), *commitment);
                    }
                    _ => panic!("a factor of the wrong kind"),
                }
            }
        }
    }
}

#[test]
fn one_false_member_sum_is_rejected() {
    let params = HyraxParams::new(10);
    let ms = members();
    let mut sums: Vec<Fr> = ms.iter().map(reference_sum).collect();
    sums[2] += Fr::one();
    let p = prove(&params, &ms, &sums, 9);
    assert_eq!(
        verify(&params, &ms, &p.commitments, &p.proof, &p.masks).unwrap_err(),
        ZkError::RelationMismatch
    );
}

#[test]
fn swapped_claims_are_rejected() {
    let params = HyraxParams::new(10);
    let ms = members();
    let sums: Vec<Fr> = ms.iter().map(reference_sum).collect();
    let p = prove(&params, &ms, &sums, 10);
    let mut swapped = p.commitments.clone();
    swapped.swap(1, 2);
    assert!(verify(&params, &ms, &swapped, &p.proof, &p.masks).is_err());
}

#[test]
fn a_tampered_member_value_is_rejected() {
    let params = HyraxParams::new(10);
    let ms = members();
    let sums: Vec<Fr> = ms.iter().map(reference_sum).collect();
    let mut p = prove(&params, &ms, &sums, 11);
    p.proof.factors.public_values[1] += Fr::one();
    assert!(verify(&params, &ms, &p.commitments, &p.proof, &p.masks).is_err());
}

#[test]
fn malformed_batches_get_typed_errors() {
    let params = HyraxParams::new(10);
    let ms = members();
    let sums: Vec<Fr> = ms.iter().map(reference_sum).collect();
    let p = prove(&params, &ms, &sums, 12);
    assert!(matches!(
        verify(&params, &ms, &p.commitments[..3], &p.proof, &p.masks),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
    assert!(matches!(
        verify(&params, &[], &[], &p.proof, &p.masks),
        Err(ZkError::Sumcheck(SumcheckError::InvalidClaim(_)))
    ));
    let mut fewer = p.proof.clone();
    fewer.factors.hidden_values.pop();
    assert!(matches!(
        verify(&params, &ms, &p.commitments, &fewer, &p.masks),
        Err(ZkError::Sumcheck(SumcheckError::WrongLength { .. }))
    ));
}
