//! The proven fixed-point softmax: round trips through the layer on many shapes, agreement
//! with plain references, and the plain slot with its commitments and openings. The attacks on
//! the slot's witness run in both modes in `tests/steps.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::fixed_point::deterministic_exp_neg;
use zkmha_attention::mode::Plain;
use zkmha_attention::quantization::signed_field_to_f64;
use zkmha_attention::softmax::*;
use zkmha_attention::*;
use zkmha_field::{Fr, One, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

fn random_inputs(shape: &AttentionShape, seed: u64, bound: i64) -> AttentionInputs {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-bound..=bound)).collect::<Vec<_>>();
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width()),
        keys: draw(shape.seq_len * shape.model_width()),
        values: draw(shape.seq_len * shape.value_model_width()),
    }
}

fn params_for(shape: &AttentionShape) -> SoftmaxParams {
    // Scores of standard deviation ≈ 3 for inputs in −127..=127.
    let scale = 3.0 / ((shape.head_dim as f64).sqrt() * 127.0 * 127.0 / 3.0);
    SoftmaxParams::for_score_scale(scale, shape.padded_seq_len()).unwrap()
}

/// Float softmax attention of the same integer inputs, in units of `2^f · V`.
fn float_reference(
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    inputs: &AttentionInputs,
) -> Vec<f64> {
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let c = params.multiplier as f64 / 2f64.powi((params.exponent_bits + params.shift) as i32);
    let mut out = vec![0.0; s * h * mv];
    for head in 0..h {
        for i in 0..s {
            let kept: Vec<usize> = (0..s).filter(|&j| keeps(mask, s, i, j)).collect();
            let z: Vec<f64> = kept
                .iter()
                .map(|&j| {
                    (0..m)
                        .map(|x| {
                            (inputs.queries[i * h * m + head * m + x] * inputs.keys[j * h * m + head * m + x])
                                as f64
                        })
                        .sum::<f64>()
                        * c
                })
                .collect();
            let max = z.iter().copied().fold(f64::MIN, f64::max);
            let total: f64 = z.iter().map(|v| (v - max).exp()).sum();
            for (&j, zj) in kept.iter().zip(&z) {
                let p = (zj - max).exp() / total * params.one() as f64;
                for c in 0..mv {
                    out[i * h * mv + head * mv + c] += p * inputs.values[j * h * mv + head * mv + c] as f64;
                }
            }
        }
    }
    out
}

#[test]
fn layers_with_the_proven_softmax_round_trip_and_match_the_float_reference() {
    for (n, (s, h, m, mv)) in
        [(1usize, 1usize, 1usize, 1usize), (3, 2, 4, 4), (7, 3, 5, 2), (16, 2, 8, 8), (33, 1, 4, 3)]
            .into_iter()
            .enumerate()
    {
        for mask in [MaskKind::Causal, MaskKind::None] {
            let shape = AttentionShape::new(s, h, m, mv).unwrap();
            let params = params_for(&shape);
            let inputs = random_inputs(&shape, n as u64, 127);
            let mode = SoftmaxMode::Exponential(params);
            let (statement, proof, _) = prove_layer(&shape, mask, mode, &inputs).unwrap();
            assert!(verify_layer(&statement, &proof).is_ok(), "{shape:?} {mask:?}");
            assert!(proof.chain.masking.is_none());

            // Against the float reference: each probability is within 0.5 + 2^-g·p + 1 of
            // 2^f·softmax, so each output within (ŝ + 2^(f−g+1))·max|V| (a loose, documented bound).
            let reference = float_reference(&shape, mask, &params, &inputs);
            let max_v = inputs.values.iter().map(|v| v.abs()).max().unwrap_or(0) as f64;
            let bound =
                (s as f64 + 2.0 * params.one() as f64 / 2f64.powi(params.exponent_bits as i32) + 2.0) * max_v;
            for (ours, theirs) in statement.output.iter().zip(&reference) {
                let ours = signed_field_to_f64(ours);
                assert!((ours - theirs).abs() <= bound, "{ours} vs {theirs} (bound {bound}) for {shape:?}");
            }
        }
    }
}

#[test]
fn one_combined_row_opens_every_committed_column_of_the_layer() {
    let shape = AttentionShape::new(12, 3, 4, 4).unwrap();
    let mode = SoftmaxMode::Exponential(params_for(&shape));
    let inputs = random_inputs(&shape, 6, 127);
    let (statement, proof, _) = prove_layer(&shape, MaskKind::Causal, mode, &inputs).unwrap();
    let openings = proof.openings.as_ref().unwrap();
    // Eight softmax columns of 2^9, 2^6, 2^17, 2^k and 2^t entries: one layout, one row.
    assert_eq!(openings.evaluations.len(), 8);
    assert_eq!(openings.openings.len(), 1);
    assert!(verify_layer(&statement, &proof).is_ok());
    for k in 0..8 {
        let mut bad = proof.clone();
        bad.openings.as_mut().unwrap().evaluations[k] += Fr::one();
        assert_eq!(
            verify_layer(&statement, &bad).map(|_| ()),
            Err(AttentionError::CheckFailed { step: "openings" }),
            "column {k}"
        );
    }
    let mut missing = proof.clone();
    missing.openings = None;
    assert_eq!(
        verify_layer(&statement, &missing).map(|_| ()),
        Err(AttentionError::CheckFailed { step: "openings" })
    );
    // In committed mode the same opening also answers Q, K and V: 11 polynomials, one row.
    let params = hyrax_params_for(&shape, mode);
    let (_, committed, _) = prove_layer_committed(&params, &shape, MaskKind::Causal, mode, &inputs).unwrap();
    let openings = committed.openings.as_ref().unwrap();
    assert_eq!((openings.evaluations.len(), openings.openings.len()), (11, 1));
}

#[test]
fn committed_layers_prove_the_softmax_too() {
    let shape = AttentionShape::new(12, 3, 4, 4).unwrap();
    let mode = SoftmaxMode::Exponential(params_for(&shape));
    let params = hyrax_params_for(&shape, mode);
    let (statement, proof, _) =
        prove_layer_committed(&params, &shape, MaskKind::Causal, mode, &random_inputs(&shape, 4, 127))
            .unwrap();
    assert!(verify_layer_committed(&params, &statement, &proof).is_ok());
    // The statement names the mode: a verifier told "linear attention" rejects.
    let mut linear = statement.clone();
    linear.softmax = SoftmaxMode::Identity;
    assert!(verify_layer_committed(&params, &linear, &proof).is_err());
    // Other softmax parameters (another scale) are another statement.
    let mut other = statement;
    if let SoftmaxMode::Exponential(p) = &mut other.softmax {
        p.multiplier += 1;
    }
    assert!(verify_layer_committed(&params, &other, &proof).is_err());
}

/// One slot run with a (possibly tampered) witness: commit, claim on the given `A`, prove.
struct SlotRun {
    shape: AttentionShape,
    mask: MaskKind,
    params: SoftmaxParams,
    hyrax: zkmha_pcs::HyraxParams,
    commitments: SoftmaxCommitments,
    claim: EvalClaim,
    /// The slot's lookups (in a layer, part of the layer's one batch).
    lookups: Option<zkmha_lookup::LookupProofOf<Plain>>,
    proof: SoftmaxSlotProof,
    /// The opening of the slot's claims on its committed columns (in a layer, part of the
    /// layer's final opening).
    openings: zkmha_pcs::MultiOpeningProof,
}

fn slot_shape() -> (AttentionShape, MaskKind, SoftmaxParams, AttentionWitness) {
    let shape = AttentionShape::new(6, 2, 4, 4).unwrap();
    let params = params_for(&shape);
    let mask = MaskKind::Causal;
    let witness = compute_witness_for_mode(
        &shape,
        mask,
        SoftmaxMode::Exponential(params),
        &random_inputs(&shape, 8, 127),
    )
    .unwrap();
    (shape, mask, params, witness)
}

/// Proves the slot for `softmax` (tampered or not) with `multiplicities`; the claim is on the
/// attention matrix `attention` at a random point.
fn run_slot(
    tamper: impl FnOnce(&mut SoftmaxWitness, &AttentionShape),
    honest_multiplicities: bool,
) -> SlotRun {
    run_slot_with(slot_shape(), tamper, honest_multiplicities)
}

/// [`run_slot`] on a given shape, mask, parameters and witness.
fn run_slot_with(
    (shape, mask, params, witness): (AttentionShape, MaskKind, SoftmaxParams, AttentionWitness),
    tamper: impl FnOnce(&mut SoftmaxWitness, &AttentionShape),
    honest_multiplicities: bool,
) -> SlotRun {
    let mut softmax = witness.softmax.clone().unwrap();
    let honest = softmax_multiplicities(&params, &softmax).unwrap();
    tamper(&mut softmax, &shape);
    let multiplicities =
        if honest_multiplicities { honest } else { softmax_multiplicities(&params, &softmax).unwrap() };
    let hyrax = hyrax_params_for(&shape, SoftmaxMode::Exponential(params));
    let (commitments, data) = commit_softmax_data(
        &hyrax,
        &shape,
        &params,
        SoftmaxProverData::new(&shape, softmax.clone(), multiplicities, &params),
    )
    .unwrap();
    let n = 2 * shape.seq_vars() + shape.head_vars();
    let mut rng = StdRng::seed_from_u64(5);
    let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
    let a = DenseMultilinearExtension::from_i64(n, &softmax.attention).unwrap();
    let claim = EvalClaim { value: a.evaluate(&point).unwrap(), point };
    let mut transcript = Transcript::new(b"slot");
    commitments.append_to_transcript(&mut transcript);
    let mode = SoftmaxMode::Exponential(params);
    let (lookups, slot) =
        prove_slot_alone::<Plain>(&mut (), mode, &shape, mask, &claim, Some(&data), &mut transcript).unwrap();
    let tables = softmax_opening_tables(&shape, &params, &commitments, &data).unwrap();
    let openings = zkmha_pcs::Hyrax::open_multi(&tables, &slot.opening_claims, &mut transcript).unwrap();
    SlotRun { shape, mask, params, hyrax, commitments, claim, lookups, proof: slot.proof, openings }
}

fn verify_run(run: &SlotRun) -> Result<SlotOutput, AttentionError> {
    verify_run_with(run, run.params)
}

/// Verifies `run` as if the statement carried the softmax parameters `params`.
fn verify_run_with(run: &SlotRun, params: SoftmaxParams) -> Result<SlotOutput, AttentionError> {
    let mut transcript = Transcript::new(b"slot");
    run.commitments.append_to_transcript(&mut transcript);
    let (output, claims) = verify_slot_alone::<Plain>(
        &mut (),
        SoftmaxMode::Exponential(params),
        &run.shape,
        run.mask,
        &run.claim,
        run.lookups.as_ref(),
        run.proof.exponential.as_ref(),
        &mut transcript,
    )?;
    let commitments = softmax_commitment_list(&run.commitments);
    zkmha_pcs::Hyrax::verify_multi(&run.hyrax, &commitments, &claims, &run.openings, &mut transcript)
        .map_err(|_| AttentionError::CheckFailed { step: "softmax openings" })?;
    Ok(output)
}

#[test]
fn the_honest_slot_verifies_and_names_the_scores() {
    let run = run_slot(|_, _| {}, true);
    let (_, _, _, witness) = slot_shape();
    match verify_run(&run).unwrap() {
        SlotOutput::Scores(claim) => {
            let n = claim.point.len();
            let scores = witness.softmax.as_ref().unwrap().scores.clone();
            let scores = DenseMultilinearExtension::from_i64(n, &scores).unwrap();
            assert_eq!(scores.evaluate(&claim.point).unwrap(), claim.value);
        }
        other => panic!("expected a claim on the scores, got {other:?}"),
    }
}

#[test]
fn rejects_tampered_proof_messages_and_commitments() {
    let run = run_slot(|_, _| {}, true);
    assert!(verify_run(&run).is_ok());
    let tampered = |f: &dyn Fn(&mut ExponentialSoftmaxProof)| {
        let mut bad =
            SlotRun { proof: run.proof.clone(), commitments: run.commitments.clone(), ..clone_run(&run) };
        f(bad.proof.exponential.as_mut().unwrap());
        verify_run(&bad)
    };
    // A changed block value changes the challenges after it: the sum-check fails first.
    for k in [0, 3] {
        assert!(matches!(
            tampered(&|p| p.lookup_values[k] += Fr::one()),
            Err(AttentionError::Sumcheck { step: "softmax", .. })
        ));
    }
    assert_eq!(
        tampered(&|p| p.final_values[3] += Fr::one()),
        Err(AttentionError::CheckFailed { step: "softmax relations" })
    );
    let mut bad_opening = clone_run(&run);
    bad_opening.openings.evaluations[2] += Fr::one();
    assert_eq!(verify_run(&bad_opening), Err(AttentionError::CheckFailed { step: "softmax openings" }));
    assert!(matches!(
        tampered(&|p| p.sumcheck.sumcheck.rounds[1].evaluations[0] += Fr::one()),
        Err(AttentionError::Sumcheck { step: "softmax", .. })
    ));
    let mut bad_lookup = clone_run(&run);
    bad_lookup.lookups.as_mut().unwrap().witness_values[0][1] += Fr::one();
    assert!(matches!(verify_run(&bad_lookup), Err(AttentionError::Lookup(_))));
    assert_eq!(
        tampered(&|p| {
            p.final_values.pop();
        }),
        Err(AttentionError::CheckFailed { step: "softmax final values" })
    );
    // A commitment swapped for one to other values.
    let mut swapped = clone_run(&run);
    assert_ne!(swapped.commitments.overflow, swapped.commitments.low);
    swapped.commitments.overflow = swapped.commitments.low.clone();
    assert!(verify_run(&swapped).is_err());
    // No proof at all for the exponential mode.
    let mut missing = clone_run(&run);
    missing.proof = SoftmaxSlotProof::default();
    assert_eq!(verify_run(&missing), Err(AttentionError::CheckFailed { step: "softmax" }));
}

fn clone_run(run: &SlotRun) -> SlotRun {
    SlotRun {
        shape: run.shape,
        mask: run.mask,
        params: run.params,
        hyrax: run.hyrax.clone(),
        commitments: run.commitments.clone(),
        claim: run.claim.clone(),
        lookups: run.lookups.clone(),
        proof: run.proof.clone(),
        openings: run.openings.clone(),
    }
}

#[test]
fn the_exp_table_is_the_rounded_exponential() {
    let params = SoftmaxParams::for_score_scale(0.001, 128).unwrap();
    let table = params.exp_table();
    assert_eq!(table[0], params.one());
    for (x, value) in table.iter().enumerate().step_by(97) {
        let exact = params.one() as f64 * (-(x as f64) / 2f64.powi(params.exponent_bits as i32)).exp();
        assert!((*value as f64 - exact).abs() <= 0.5 + 1e-6, "T({x}) = {value}, exp gives {exact}");
        assert!((deterministic_exp_neg(x as f64 / 256.0) - (-(x as f64) / 256.0).exp()).abs() < 1e-12);
    }
    let _ = fr_from_i64(0);
}

#[test]
fn invalid_softmax_parameters_are_an_error_not_a_panic() {
    let run = run_slot(|_, _| {}, true);
    for broken in [
        SoftmaxParams { shift: 0, ..run.params },
        SoftmaxParams { multiplier: 0, ..run.params },
        SoftmaxParams { tolerance_bits: 30, ..run.params },
        SoftmaxParams { exponent_bits: 0, ..run.params },
    ] {
        let result = verify_run_with(&run, broken);
        assert!(matches!(result, Err(AttentionError::NumericRange(_))), "{broken:?}: {result:?}");
    }
}
