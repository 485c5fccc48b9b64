//! Zero-knowledge variants of the attention sub-protocols: round trips on many shapes against
//! plain evaluation, claims that stay hidden, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::qk::{self, QkZkProof, prove_qk_zk, verify_qk_zk};
use zkmha_attention::unpadding::{self, UnpaddingZkProof, prove_unpadding_zk, verify_unpadding_zk};
use zkmha_attention::zk_claims::{CommittedClaim, WitnessClaim};
use zkmha_attention::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, ZkInnerProductProof};
use zkmha_transcript::Transcript;
use zkmha_zk::{DeferredChecks, MaskSchedule, ProverMasks, ValueOpening, VerifierMasks, ZkError};

const DOMAIN: &[u8] = b"zk-step-tests";

fn shapes() -> Vec<AttentionShape> {
    let mut out = Vec::new();
    for h in [1usize, 3, 8] {
        for s in [1usize, 7, 16] {
            out.push(AttentionShape::new(s, h, 3, 2).unwrap());
        }
    }
    out
}

fn setup(shape: &AttentionShape, seed: u64) -> (AttentionWitness, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-50i64..50)).collect::<Vec<_>>();
    let inputs = AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    };
    (compute_witness(shape, MaskKind::Causal, &inputs).unwrap(), ChaCha20Rng::seed_from_u64(seed + 1))
}

fn mle(table: &[Fr]) -> DenseMultilinearExtension {
    DenseMultilinearExtension::from_vector_padded(table.to_vec()).unwrap()
}

/// A hidden claim on `table` at a random point (the value from plain evaluation).
fn hidden_claim(params: &HyraxParams, table: &[Fr], rng: &mut ChaCha20Rng) -> WitnessClaim {
    let m = mle(table);
    let point: Vec<Fr> = (0..m.num_vars()).map(|_| Fr::rand(rng)).collect();
    let opening = ValueOpening::hide(m.evaluate(&point).unwrap(), rng);
    WitnessClaim { claim: CommittedClaim { point, commitment: opening.commit(params).into() }, opening }
}

/// The plain reference: the claim's opening is the table's value at its point, and the
/// verifier's commitment is the prover's.
fn discharges(params: &HyraxParams, table: &[Fr], prover: &WitnessClaim, verifier: &CommittedClaim) -> bool {
    prover.claim == *verifier
        && mle(table).evaluate(&verifier.point).unwrap() == prover.opening.value
        && G1Affine::from(prover.opening.commit(params)) == verifier.commitment
}

fn params() -> HyraxParams {
    HyraxParams::new(14)
}

/// A step's masks: their commitment and their openings' argument.
type Masks = (G1Affine, ZkInnerProductProof);

/// Proves one step between its mask's commitment and the masks' openings.
fn prove_step<T>(
    params: &HyraxParams,
    entry: (usize, usize),
    rng: &mut ChaCha20Rng,
    step: impl FnOnce(&mut ProverMasks, &mut Transcript, &mut ChaCha20Rng) -> Result<T, AttentionError>,
) -> (T, Masks) {
    let mut transcript = Transcript::new(DOMAIN);
    let (mut masks, commitment) =
        ProverMasks::commit(params, MaskSchedule(vec![entry]), &mut transcript, rng).unwrap();
    let out = step(&mut masks, &mut transcript, rng).unwrap();
    let openings = masks.prove_openings(params, &mut transcript, rng).unwrap();
    (out, (commitment, openings))
}

/// Verifies one step the same way: its equations and the masks' argument, checked at the end.
fn verify_step<T>(
    params: &HyraxParams,
    entry: (usize, usize),
    masks: &Masks,
    name: &'static str,
    step: impl FnOnce(&mut VerifierMasks, &mut Transcript, &mut DeferredChecks) -> Result<T, AttentionError>,
) -> Result<T, AttentionError> {
    let wrap = |source| AttentionError::ZeroKnowledge { step: name, source };
    let mut transcript = Transcript::new(DOMAIN);
    let mut verifier_masks = VerifierMasks::absorb(MaskSchedule(vec![entry]), masks.0, &mut transcript);
    let mut checks = DeferredChecks::new();
    let out = step(&mut verifier_masks, &mut transcript, &mut checks)?;
    verifier_masks.verify_openings(params, &masks.1, &mut transcript, &mut checks).map_err(wrap)?;
    checks.finish(&transcript).map_err(wrap)?;
    Ok(out)
}

fn verify_unpadding(
    params: &HyraxParams,
    shape: &AttentionShape,
    claim: &CommittedClaim,
    proof: &UnpaddingZkProof,
    masks: &Masks,
) -> Result<CommittedClaim, AttentionError> {
    verify_step(params, unpadding::zk_sumcheck_shape(shape), masks, "unpadding", |m, t, k| {
        verify_unpadding_zk(params, shape, claim, proof, m, t, k)
    })
}

fn verify_qk(
    params: &HyraxParams,
    shape: &AttentionShape,
    claim: &CommittedClaim,
    proof: &QkZkProof,
    masks: &Masks,
) -> Result<qk::QkCommittedClaims, AttentionError> {
    verify_step(params, qk::zk_sumcheck_shape(shape), masks, "batched QKᵀ", |m, t, k| {
        verify_qk_zk(params, shape, claim, proof, m, t, k)
    })
}

fn prove_qk(
    params: &HyraxParams,
    shape: &AttentionShape,
    w: &AttentionWitness,
    keys_hat: &[Fr],
    claim: &WitnessClaim,
    rng: &mut ChaCha20Rng,
) -> ((QkZkProof, qk::QkWitnessClaims), Masks) {
    prove_step(params, qk::zk_sumcheck_shape(shape), rng, |m, t, r| {
        prove_qk_zk(params, shape, &w.queries_hat, keys_hat, claim, m, t, r)
    })
}

fn prove_unpadding(
    params: &HyraxParams,
    shape: &AttentionShape,
    w: &AttentionWitness,
    claim: &WitnessClaim,
    rng: &mut ChaCha20Rng,
) -> ((UnpaddingZkProof, WitnessClaim), Masks) {
    prove_step(params, unpadding::zk_sumcheck_shape(shape), rng, |m, t, r| {
        prove_unpadding_zk(params, shape, &w.output_hat, claim, m, t, r)
    })
}

#[test]
fn unpadding_in_zero_knowledge_round_trips_against_the_reference() {
    let params = params();
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, n as u64);
        let padded_output =
            DenseMultilinearExtension::from_matrix(shape.seq_len, shape.value_model_width(), &w.output)
                .unwrap();
        let claim = hidden_claim(&params, padded_output.evaluations(), &mut rng);
        let ((proof, out), masks) = prove_unpadding(&params, shape, &w, &claim, &mut rng);
        let verified = verify_unpadding(&params, shape, &claim.claim, &proof, &masks).unwrap();
        assert!(discharges(&params, &w.output_hat, &out, &verified), "{shape:?}");
    }
}

#[test]
fn qk_in_zero_knowledge_round_trips_against_the_reference() {
    let params = params();
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, 30 + n as u64);
        let claim = hidden_claim(&params, &w.scores, &mut rng);
        let ((proof, out), masks) = prove_qk(&params, shape, &w, &w.keys_hat, &claim, &mut rng);
        let verified = verify_qk(&params, shape, &claim.claim, &proof, &masks).unwrap();
        assert!(discharges(&params, &w.queries_hat, &out.queries_hat, &verified.queries_hat), "{shape:?}");
        assert!(discharges(&params, &w.keys_hat, &out.keys_hat, &verified.keys_hat), "{shape:?}");
    }
}

#[test]
fn no_witness_value_appears_in_a_zero_knowledge_step() {
    // Every value the plain proof would send: the claim, the claims out and (through the
    // rounds) the tensors' partial sums; the zero-knowledge proof's field elements avoid the
    // first two, and its rounds are masked (crates/zk/tests cover the rounds).
    let params = params();
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, 50);
    let claim = hidden_claim(&params, &w.scores, &mut rng);
    let ((proof, out), masks) = prove_qk(&params, &shape, &w, &w.keys_hat, &claim, &mut rng);
    let secrets = [claim.value(), out.queries_hat.value(), out.keys_hat.value()];
    let p = &proof.product;
    let mut sent: Vec<Fr> = p.sumcheck.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()).collect();
    sent.extend(&p.factors.public_values);
    sent.push(p.sumcheck.masked_sum);
    sent.extend(masks.1.responses);
    sent.extend(&p.factors.relations.factor_responses);
    sent.push(p.factors.relations.blinding_response);
    assert!(sent.iter().all(|v| !secrets.contains(v)));
}

#[test]
fn a_false_claim_is_rejected() {
    let params = params();
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, 60);
    let mut claim = hidden_claim(&params, &w.scores, &mut rng);
    claim.opening.value += Fr::one();
    claim.claim.commitment = claim.opening.commit(&params).into();
    let ((proof, _), masks) = prove_qk(&params, &shape, &w, &w.keys_hat, &claim, &mut rng);
    assert_eq!(
        verify_qk(&params, &shape, &claim.claim, &proof, &masks),
        Err(AttentionError::ZeroKnowledge { step: "batched QKᵀ", source: ZkError::RelationMismatch })
    );
}

#[test]
fn another_heads_keys_are_rejected() {
    let params = params();
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, 61);
    let claim = hidden_claim(&params, &w.scores, &mut rng);
    let mut wrong = w.keys_hat.clone();
    wrong[shape.padded_head_dim() * (shape.heads - 1)] += Fr::one();
    let ((proof, _), masks) = prove_qk(&params, &shape, &w, &wrong, &claim, &mut rng);
    assert!(verify_qk(&params, &shape, &claim.claim, &proof, &masks).is_err());
}

#[test]
fn a_tampered_public_selector_is_a_named_check() {
    let params = params();
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, 62);
    let claim = hidden_claim(&params, &w.scores, &mut rng);
    let ((mut proof, _), masks) = prove_qk(&params, &shape, &w, &w.keys_hat, &claim, &mut rng);
    proof.product.factors.public_values[0] += Fr::one();
    assert_eq!(
        verify_qk(&params, &shape, &claim.claim, &proof, &masks),
        Err(AttentionError::CheckFailed { step: "batched QKᵀ" })
    );
    let (w, mut rng) = setup(&shape, 63);
    let padded =
        DenseMultilinearExtension::from_matrix(shape.seq_len, shape.value_model_width(), &w.output).unwrap();
    let claim = hidden_claim(&params, padded.evaluations(), &mut rng);
    let ((mut proof, _), masks) = prove_unpadding(&params, &shape, &w, &claim, &mut rng);
    proof.product.factors.public_values[0] += Fr::one();
    assert_eq!(
        verify_unpadding(&params, &shape, &claim.claim, &proof, &masks),
        Err(AttentionError::CheckFailed { step: "unpadding" })
    );
}

#[test]
fn a_claim_on_another_point_is_rejected() {
    let params = params();
    let shape = AttentionShape::new(16, 3, 3, 2).unwrap();
    let (w, mut rng) = setup(&shape, 64);
    let claim = hidden_claim(&params, &w.scores, &mut rng);
    let ((proof, out), masks) = prove_qk(&params, &shape, &w, &w.keys_hat, &claim, &mut rng);
    // A claim moved along u_j (which only the claims out depend on) passes the step but hands
    // on a claim on K̂ at the moved point that its value does not satisfy: the discharge (the
    // final opening in a layer) rejects it, as in the plain protocol.
    let mut moved = claim.claim.clone();
    moved.point[0] += Fr::one();
    let verified = verify_qk(&params, &shape, &moved, &proof, &masks).unwrap();
    assert!(!discharges(&params, &w.keys_hat, &out.keys_hat, &verified.keys_hat));
    // Moved along u_h, the selector check names the step.
    let mut head_moved = claim.claim.clone();
    *head_moved.point.last_mut().unwrap() += Fr::one();
    assert_eq!(
        verify_qk(&params, &shape, &head_moved, &proof, &masks),
        Err(AttentionError::CheckFailed { step: "batched QKᵀ" })
    );
    let mut short = claim.claim;
    short.point.pop();
    assert_eq!(
        verify_qk(&params, &shape, &short, &proof, &masks),
        Err(AttentionError::CheckFailed { step: "batched QKᵀ" })
    );
}

#[test]
fn attention_values_in_zero_knowledge_round_trip_against_the_reference() {
    use zkmha_attention::attention_values::{
        self, AttentionMatrix, prove_attention_values_zk, verify_attention_values_zk,
    };
    let params = params();
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, 70 + n as u64);
        let claim = hidden_claim(&params, &w.output_hat, &mut rng);
        let matrix = AttentionMatrix::Masked { scores: &w.scores, mask: MaskKind::Causal };
        let entry = attention_values::zk_sumcheck_shape(shape);
        let ((proof, out), masks) = prove_step(&params, entry, &mut rng, |m, t, r| {
            prove_attention_values_zk(&params, shape, matrix, &w.values_hat, &claim, m, t, r)
        });
        let verify = |proof: &attention_values::AttentionValuesZkProof| {
            verify_step(&params, entry, &masks, "softmax·V", |m, t, k| {
                verify_attention_values_zk(&params, shape, &claim.claim, proof, m, t, k)
            })
        };
        let verified = verify(&proof).unwrap();
        assert!(discharges(&params, &w.values_hat, &out.values_hat, &verified.values_hat), "{shape:?}");
        // A = QK_M as a tensor: masked entries hold the mask value.
        let sp = shape.padded_seq_len();
        let attention: Vec<Fr> = w
            .scores
            .iter()
            .enumerate()
            .map(|(x, v)| {
                if zkmha_attention::structured::zeroifier(
                    MaskKind::Causal,
                    shape.seq_len,
                    &bits((x / sp) % sp, shape.seq_vars()),
                    &bits(x % sp, shape.seq_vars()),
                ) == Fr::one()
                {
                    *v
                } else {
                    zkmha_attention::structured::mask_value()
                }
            })
            .collect();
        assert!(discharges(&params, &attention, &out.attention, &verified.attention), "{shape:?}");
        // Tampered: a selector value.
        let mut bad = proof.clone();
        bad.product.factors.public_values[0] += Fr::one();
        assert_eq!(verify(&bad), Err(AttentionError::CheckFailed { step: "softmax·V" }));
    }
}

/// The Boolean point of index `i` over `vars` variables.
fn bits(i: usize, vars: usize) -> Vec<Fr> {
    (0..vars).map(|b| Fr::from(((i >> b) & 1) as u64)).collect()
}

#[test]
fn masking_in_zero_knowledge_round_trips_against_the_reference() {
    use zkmha_attention::masking::{self, prove_masking_zk, verify_masking_zk};
    let params = params();
    for (n, shape) in shapes().iter().enumerate() {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let (w, mut rng) = setup(shape, 90 + n as u64);
            // A claim on QK_M = z ⊙ QK̂ + m.
            let sp = shape.padded_seq_len();
            let masked: Vec<Fr> = w
                .scores
                .iter()
                .enumerate()
                .map(|(x, v)| {
                    let (i, j) = ((x / sp) % sp, x % sp);
                    let kept = zkmha_attention::structured::zeroifier(
                        mask,
                        shape.seq_len,
                        &bits(i, shape.seq_vars()),
                        &bits(j, shape.seq_vars()),
                    );
                    if kept == Fr::one() { *v } else { zkmha_attention::structured::mask_value() }
                })
                .collect();
            let claim = hidden_claim(&params, &masked, &mut rng);
            let entry = masking::zk_sumcheck_shape(shape);
            let ((proof, out), masks) = prove_step(&params, entry, &mut rng, |m, t, r| {
                prove_masking_zk(&params, shape, mask, w.scores.clone(), &claim, m, t, r)
            });
            let verify = |kind: MaskKind| {
                verify_step(&params, entry, &masks, "masking", |m, t, k| {
                    verify_masking_zk(&params, shape, kind, &claim.claim, &proof, m, t, k)
                })
            };
            let verified = verify(mask).unwrap();
            assert!(discharges(&params, &w.scores, &out, &verified), "{shape:?}");
            // The other mask kind's claim does not verify.
            let other = if mask == MaskKind::Causal { MaskKind::None } else { MaskKind::Causal };
            if shape.seq_len > 1 {
                assert!(verify(other).is_err(), "{shape:?}");
            }
        }
    }
}

#[test]
fn padding_in_zero_knowledge_round_trips_against_the_reference() {
    use zkmha_attention::padding::{self, prove_padding_zk, verify_padding_zk};
    let params = params();
    for (n, shape) in shapes().iter().enumerate() {
        let (w, mut rng) = setup(shape, 110 + n as u64);
        let claims = [
            hidden_claim(&params, &w.queries_hat, &mut rng),
            hidden_claim(&params, &w.keys_hat, &mut rng),
            hidden_claim(&params, &w.values_hat, &mut rng),
        ];
        let inputs = [w.queries.as_slice(), w.keys.as_slice(), w.values.as_slice()];
        let refs = [&claims[0], &claims[1], &claims[2]];
        let entry = padding::zk_sumcheck_shape(shape);
        let ((proof, out), masks) = prove_step(&params, entry, &mut rng, |m, t, r| {
            prove_padding_zk(&params, shape, inputs, refs, m, t, r)
        });
        let verify = |committed: [&CommittedClaim; 3]| {
            verify_step(&params, entry, &masks, "padding", |m, t, k| {
                verify_padding_zk(&params, shape, committed, &proof, m, t, k)
            })
        };
        let verified = verify([&claims[0].claim, &claims[1].claim, &claims[2].claim]).unwrap();
        assert!(discharges(&params, &w.queries, &out.queries, &verified.queries), "{shape:?}");
        assert!(discharges(&params, &w.keys, &out.keys, &verified.keys), "{shape:?}");
        assert!(discharges(&params, &w.values, &out.values, &verified.values), "{shape:?}");
        // Swapping the Q and K claims is caught.
        assert!(verify([&claims[1].claim, &claims[0].claim, &claims[2].claim]).is_err(), "{shape:?}");
    }
}
