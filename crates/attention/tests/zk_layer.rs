//! The zero-knowledge committed layer, what only zero knowledge has: two proofs of one
//! statement that differ, no witness value in the proof, tampering with its hiding parts, every
//! proof byte absorbed before the batching weights. Round trips and the attacks both modes share
//! are in `layer_both_modes.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_attention::attention_values::verify_attention_values;
use zkmha_attention::layer::{layer_transcript, layer_zk_schedule, output_point};
use zkmha_attention::lookup_batch::verify_lookup_parts;
use zkmha_attention::masking::verify_masking;
use zkmha_attention::mode::{ProductMode, Zk, ZkVerifier};
use zkmha_attention::padding::verify_padding;
use zkmha_attention::qk::verify_qk;
use zkmha_attention::softmax::{
    ExponentialSoftmaxProofOf, SlotOutput, softmax_lookup_statements, verify_slot,
};
use zkmha_attention::unpadding::verify_unpadding;
use zkmha_attention::zk_claims::CommittedClaim;
use zkmha_attention::*;
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::HyraxParams;
use zkmha_zk::{DeferredChecks, VerifierMasks};

fn inputs(shape: &AttentionShape, seed: u64) -> AttentionInputs {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

/// [`verify_committed_layer`] in zero knowledge, without its timings.
fn verify_zk(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &ZkLayerProof,
) -> Result<(), AttentionError> {
    verify_committed_layer::<Zk>(params, statement, proof).map(|_| ())
}

struct Proved {
    params: HyraxParams,
    statement: CommittedStatement,
    proof: ZkLayerProof,
}

fn prove(shape: &AttentionShape, mask: MaskKind, seed: u64) -> Proved {
    prove_with(shape, mask, SoftmaxMode::Identity, seed)
}

fn prove_with(shape: &AttentionShape, mask: MaskKind, softmax: SoftmaxMode, seed: u64) -> Proved {
    let params = zk_hyrax_params_for(shape, softmax).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed + 1000);
    let (statement, proof, _) =
        prove_layer_committed_with::<Zk>(&params, shape, mask, softmax, &inputs(shape, seed), &mut rng)
            .unwrap();
    Proved { params, statement, proof }
}

/// The proven softmax for inputs in [−127, 127] (the score scale of the default layer).
fn softmax_for(shape: &AttentionShape) -> SoftmaxMode {
    let scale = 4.0 / (shape.head_dim as f64 * 127.0 * 127.0 / 3.0);
    SoftmaxMode::Exponential(SoftmaxParams::for_score_scale(scale, shape.padded_seq_len()).unwrap())
}

#[test]
fn two_proofs_of_the_same_statement_differ() {
    let shape = AttentionShape::new(16, 4, 8, 8).unwrap();
    let params = zk_hyrax_params_for(&shape, SoftmaxMode::Identity).unwrap();
    let x = inputs(&shape, 5);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (commitments, blinds) =
        commit_inputs_hiding(&params, &shape, SoftmaxMode::Identity, &x, &mut rng).unwrap();
    let prove_again = |seed: u64| {
        prove_committed_layer::<Zk>(
            &params,
            &shape,
            MaskKind::Causal,
            SoftmaxMode::Identity,
            &x,
            commitments.clone(),
            &blinds,
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap()
    };
    let (first_statement, first, _) = prove_again(2);
    let (second_statement, second, _) = prove_again(3);
    assert_eq!(first_statement, second_statement);
    assert_ne!(first, second);
    assert_ne!(first.chain.unpadding, second.chain.unpadding);
    assert_ne!(first.chain.padding, second.chain.padding);
    assert_ne!(first.openings, second.openings);
    verify_zk(&params, &first_statement, &first).unwrap();
    verify_zk(&params, &second_statement, &second).unwrap();
    // Hiding: committing to the same inputs again gives other commitments.
    let (again, _) = commit_inputs_hiding(&params, &shape, SoftmaxMode::Identity, &x, &mut rng).unwrap();
    assert_ne!(again, commitments);
}

fn mle(table: &[Fr]) -> DenseMultilinearExtension {
    DenseMultilinearExtension::from_vector_padded(table.to_vec()).unwrap()
}

/// Whether the field element's canonical bytes appear anywhere in the serialized proof.
fn appears_in(proof: &ZkLayerProof, value: &Fr) -> bool {
    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    let mut needle = Vec::new();
    value.serialize_compressed(&mut needle).unwrap();
    bytes.windows(needle.len()).any(|window| window == needle)
}

#[test]
fn no_value_the_plain_proof_would_reveal_is_in_the_proof() {
    // Replay the verifier's chain to learn every claim's point, rebuild each claim's value from
    // the witness (what a plain proof sends), and look for them among the proof's values.
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let mask = MaskKind::Causal;
    let p = prove(&shape, mask, 21);
    let w = compute_witness(&shape, mask, &inputs(&shape, 21)).unwrap();
    let params = &p.params;
    verify_zk(params, &p.statement, &p.proof).unwrap();
    let claims = replay(params, &p.statement, &p.proof);
    let sp = shape.padded_seq_len();
    let attention: Vec<Fr> = w
        .scores
        .iter()
        .enumerate()
        .map(|(x, v)| {
            if zkmha_attention::structured::zeroifier(
                mask,
                shape.seq_len,
                &bits((x / sp) % sp, 3),
                &bits(x % sp, 3),
            ) == Fr::one()
            {
                *v
            } else {
                zkmha_attention::structured::mask_value()
            }
        })
        .collect();
    let tensors: [&[Fr]; 9] = [
        &w.output_hat,
        &attention,
        &w.values_hat,
        &w.scores,
        &w.queries_hat,
        &w.keys_hat,
        &w.queries,
        &w.keys,
        &w.values,
    ];
    let secrets: Vec<Fr> =
        claims.iter().zip(tensors).map(|(c, t)| mle(t).evaluate(&c.point).unwrap()).collect();
    // The search finds what is there (a public factor value of a sum-check).
    assert!(appears_in(&p.proof, &p.proof.chain.qk.product.factors.public_values[0]));
    for secret in &secrets {
        assert!(!appears_in(&p.proof, secret), "a witness evaluation appears in the proof");
    }
}

/// The Boolean point of index `i` over `vars` variables.
fn bits(i: usize, vars: usize) -> Vec<Fr> {
    (0..vars).map(|b| Fr::from(((i >> b) & 1) as u64)).collect()
}

/// The verifier's chain, returning the committed claims in the order Ô, A, V̂, QK̂, Q̂, K̂, Q,
/// K, V (the same steps as `verify_committed_layer::<Zk>`, whose transcript this must match).
fn replay(params: &HyraxParams, statement: &CommittedStatement, proof: &ZkLayerProof) -> Vec<CommittedClaim> {
    let shape = &statement.shape;
    let mut t = layer_transcript::<Zk>(statement.layer());
    let schedule = layer_zk_schedule(shape, statement.softmax, true).unwrap();
    let mut m = VerifierMasks::absorb(schedule, proof.session, &mut t);
    let point = output_point(shape, &mut t);
    let t = &mut t;
    let v = &mut ZkVerifier { params, masks: &mut m, checks: &mut DeferredChecks::new() };
    let output = CommittedClaim { value: Zk::verifier_constant(v, output_value(statement, &point)), point };
    let proof = &proof.chain;
    let output_hat = verify_unpadding::<Zk>(v, shape, &output, &proof.unpadding, t).unwrap();
    let av = verify_attention_values::<Zk>(v, shape, &output_hat, &proof.attention_values, t).unwrap();
    let (slot, _) =
        verify_slot::<Zk>(v, statement.softmax, shape, statement.mask, &av.attention, None, t).unwrap();
    let SlotOutput::MaskedScores(masked) = slot else { panic!("linear attention") };
    let masking = proof.masking.as_ref().unwrap();
    let scores = verify_masking::<Zk>(v, shape, statement.mask, &masked, masking, t).unwrap();
    let qk = verify_qk::<Zk>(v, shape, &scores, &proof.qk, t).unwrap();
    let inputs =
        verify_padding::<Zk>(v, shape, [&qk.queries_hat, &qk.keys_hat, &av.values_hat], &proof.padding, t)
            .unwrap();
    vec![
        output_hat,
        av.attention,
        av.values_hat,
        scores,
        qk.queries_hat,
        qk.keys_hat,
        inputs.queries,
        inputs.keys,
        inputs.values,
    ]
}

/// `Õ(point)` of the statement's output.
fn output_value(statement: &CommittedStatement, point: &[Fr]) -> Fr {
    let shape = &statement.shape;
    DenseMultilinearExtension::from_matrix(shape.seq_len, shape.value_model_width(), &statement.output)
        .unwrap()
        .evaluate(point)
        .unwrap()
}

fn slot(proof: &mut ZkLayerProof) -> &mut ExponentialSoftmaxProofOf<Zk> {
    proof.chain.softmax.exponential.as_mut().unwrap()
}

#[test]
fn two_softmax_proofs_differ_and_tampering_is_rejected() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let softmax = softmax_for(&shape);
    let p = prove_with(&shape, MaskKind::Causal, softmax, 50);
    let q = prove_with(&shape, MaskKind::Causal, softmax, 50 + 1);
    assert_ne!(p.proof.chain.softmax, q.proof.chain.softmax);
    let check = |proof: &ZkLayerProof| verify_zk(&p.params, &p.statement, proof);
    check(&p.proof).unwrap();

    let mut bad = p.proof.clone();
    bad.softmax_lookups.as_mut().unwrap().fractions.layers[1].sumcheck.sumcheck.rounds[0].evaluations[1] +=
        Fr::one();
    assert!(check(&bad).is_err());
    let mut bad = p.proof.clone();
    slot(&mut bad).lookup_values[2] = p.params.value_generator;
    assert!(check(&bad).is_err());
    let mut bad = p.proof.clone();
    slot(&mut bad).final_values[3] = p.params.value_generator;
    assert!(check(&bad).is_err());
    let mut bad = p.proof.clone();
    slot(&mut bad).relations.blinding_response += Fr::one();
    assert!(check(&bad).is_err());
    let mut bad = p.proof.clone();
    slot(&mut bad).sumcheck.factors.public_values[1] += Fr::one();
    assert_eq!(check(&bad), Err(AttentionError::CheckFailed { step: "softmax" }));
    // The softmax's commitments swapped (lo for hi).
    let mut bad = p.proof.clone();
    let commitments = bad.softmax_commitments.as_mut().unwrap();
    std::mem::swap(&mut commitments.low, &mut commitments.high);
    assert!(check(&bad).is_err());
    let mut bad = p.proof.clone();
    bad.openings.as_mut().unwrap().openings[0].responses[0] += Fr::one();
    assert_eq!(
        check(&bad),
        Err(AttentionError::ZeroKnowledge {
            step: "the proof's group equations",
            source: zkmha_zk::ZkError::CommittedOpening
        })
    );
    // A proof of the other mode.
    let mut bad = p.proof.clone();
    bad.softmax_commitments = None;
    assert_eq!(check(&bad), Err(AttentionError::CheckFailed { step: "the proof's softmax mode" }));
    let linear = prove(&shape, MaskKind::Causal, 52);
    let mut statement = linear.statement.clone();
    statement.softmax = softmax;
    assert!(verify_zk(&p.params, &statement, &linear.proof).is_err());
}

#[test]
fn tampered_proofs_are_rejected_with_the_failing_step() {
    let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
    let p = prove(&shape, MaskKind::Causal, 34);
    let check = |proof: &ZkLayerProof| verify_zk(&p.params, &p.statement, proof);

    let mut round = p.proof.clone();
    round.chain.qk.product.sumcheck.sumcheck.rounds[0].evaluations[0] += Fr::one();
    assert!(check(&round).is_err());

    let mut selector = p.proof.clone();
    selector.chain.attention_values.product.factors.public_values[0] += Fr::one();
    assert_eq!(check(&selector), Err(AttentionError::CheckFailed { step: "softmax·V" }));

    let mut opening = p.proof.clone();
    opening.openings.as_mut().unwrap().openings[0].responses[0] += Fr::one();
    assert_eq!(
        check(&opening),
        Err(AttentionError::ZeroKnowledge {
            step: "the proof's group equations",
            source: zkmha_zk::ZkError::CommittedOpening
        })
    );

    let mut mask_openings = p.proof.clone();
    mask_openings.session_proof.responses[0] += Fr::one();
    assert_eq!(
        check(&mask_openings),
        Err(AttentionError::ZeroKnowledge {
            step: "the proof's group equations",
            source: zkmha_zk::ZkError::MaskOpening(zkmha_pcs::PcsError::ZkCommitmentMismatch)
        })
    );

    let mut masks = p.proof.clone();
    masks.session = p.params.value_generator;
    assert!(check(&masks).is_err());

    let mut missing = p.proof.clone();
    missing.openings = None;
    assert_eq!(check(&missing), Err(AttentionError::CheckFailed { step: "openings" }));

    let mut version = p.proof.clone();
    version.version += 1;
    assert!(matches!(check(&version), Err(AttentionError::UnsupportedVersion(_))));

    let mut bytes = Vec::new();
    p.proof.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 9, bytes.len() / 3, bytes.len() - 1] {
        assert!(ZkLayerProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
}

/// The integer column's MLE at a point.
fn small_mle_at(values: &[i64], point: &[Fr]) -> Fr {
    let table: Vec<Fr> = values.iter().map(|v| zkmha_field::fr_from_i64(*v)).collect();
    mle(&table).evaluate(point).unwrap()
}

#[test]
fn no_value_the_plain_softmax_would_reveal_is_in_the_zero_knowledge_proof() {
    // Replay the verifier to the softmax's point t*, rebuild what the plain slot sends there
    // (ē, ō, ẑ, QK̂, lo, hi: its final values) from the witness, and look for their bytes
    // anywhere in the serialized proof.
    // Two heads (a power of two): the witness columns cover the whole tensor.
    let shape = AttentionShape::new(7, 2, 3, 2).unwrap();
    let (mask, softmax) = (MaskKind::Causal, softmax_for(&shape));
    let SoftmaxMode::Exponential(params) = softmax else { unreachable!() };
    let p = prove_with(&shape, mask, softmax, 60);
    let w = compute_witness_for_mode(&shape, mask, softmax, &inputs(&shape, 60)).unwrap();
    let s = w.softmax.as_ref().unwrap();
    let statement = &p.statement;
    let pp = &p.params;
    let mut t = layer_transcript::<Zk>(statement.layer());
    let commitments = p.proof.softmax_commitments.as_ref().unwrap();
    let slot = p.proof.chain.softmax.exponential.as_ref().unwrap();
    commitments.append_to_transcript(&mut t);
    let schedule = layer_zk_schedule(&shape, softmax, true).unwrap();
    let mut m = VerifierMasks::absorb(schedule, p.proof.session, &mut t);
    let t = &mut t;
    let v = &mut ZkVerifier { params: pp, masks: &mut m, checks: &mut DeferredChecks::new() };
    let statements = [softmax_lookup_statements(&shape, &params).unwrap()];
    let lookups = p.proof.softmax_lookups.as_ref().unwrap();
    let softmax_claims = verify_lookup_parts::<Zk>(v, &statements, lookups, t).unwrap().pop().unwrap();
    let point = output_point(&shape, t);
    let output = CommittedClaim { value: Zk::verifier_constant(v, output_value(statement, &point)), point };
    let output_hat = verify_unpadding::<Zk>(v, &shape, &output, &p.proof.chain.unpadding, t).unwrap();
    let av =
        verify_attention_values::<Zk>(v, &shape, &output_hat, &p.proof.chain.attention_values, t).unwrap();
    let (scores, _) =
        verify_slot::<Zk>(v, softmax, &shape, mask, &av.attention, Some((slot, softmax_claims)), t).unwrap();
    let SlotOutput::Scores(scores) = scores else { panic!("the proven softmax") };
    let t_star = &scores.point;
    assert_eq!(s.low.len(), 1 << t_star.len());
    let rows = &t_star[shape.seq_vars()..];
    let one = params.one();
    let complement: Vec<i64> = s.exponential.iter().map(|e| one - e).collect();
    let overflow: Vec<i64> = s.flag.iter().map(|f| 1 - f).collect();
    let secrets = [
        small_mle_at(&complement, t_star),
        small_mle_at(&overflow, t_star),
        small_mle_at(&s.shift, rows),
        small_mle_at(&s.scores, t_star),
        small_mle_at(&s.low, t_star),
        small_mle_at(&s.high, t_star),
    ];
    let mut bytes = Vec::new();
    p.proof.serialize_compressed(&mut bytes).unwrap();
    // The search finds what is there (a public factor value of the slot's sum-check).
    let mut present = Vec::new();
    slot.sumcheck.factors.public_values[0].serialize_compressed(&mut present).unwrap();
    assert!(bytes.windows(present.len()).any(|window| window == present));
    for (index, secret) in secrets.iter().enumerate() {
        let mut needle = Vec::new();
        secret.serialize_compressed(&mut needle).unwrap();
        assert!(
            !bytes.windows(needle.len()).any(|window| window == needle),
            "final value {index} is in the proof"
        );
    }
}

/// "Absorb before you draw", checked on the bytes: any change to any byte of a
/// zero-knowledge proof either makes it unparsable, fails a check made before the group
/// equations, or changes the weights that combine the group equations — so no prover message,
/// final responses included, can be chosen after those weights are known.
#[test]
fn any_changed_proof_byte_fails_to_parse_or_changes_the_batching_weights() {
    let shape = AttentionShape::new(5, 2, 2, 2).unwrap();
    for softmax in [SoftmaxMode::Identity, softmax_for(&shape)] {
        let p = prove_with(&shape, MaskKind::Causal, softmax, 3);
        let weights = layer_zk_batching_weights(&p.params, &p.statement, &p.proof).unwrap();
        let mut bytes = Vec::new();
        p.proof.serialize_compressed(&mut bytes).unwrap();
        let (mut parsed, mut rejected, mut changed) = (0, 0, 0);
        // Every byte of the tail (the openings and the masks' inner-product argument, which end
        // with the final responses), every 41st elsewhere (a time budget on 2 cores).
        let tail = bytes.len().saturating_sub(768);
        for index in (0..bytes.len()).filter(|i| *i >= tail || i % 41 == 0) {
            let mut mutated = bytes.clone();
            mutated[index] ^= 1 << (index % 8);
            let Ok(proof) = ZkLayerProof::deserialize_compressed(&mutated[..]) else { continue };
            parsed += 1;
            match layer_zk_batching_weights(&p.params, &p.statement, &proof) {
                Err(_) => rejected += 1,
                Ok(w) => {
                    assert_ne!(
                        w,
                        weights,
                        "{softmax:?}: byte {index} of {} leaves the weights unchanged",
                        bytes.len()
                    );
                    changed += 1;
                }
            }
        }
        // Most changes break a field check before the group equations; the others must reach
        // them with other weights.
        assert!(
            changed > 0,
            "{softmax:?}: {parsed} parsed, {rejected} rejected early, none reached the weights"
        );
    }
}
