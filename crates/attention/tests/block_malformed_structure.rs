//! Structured malformed zero-knowledge block proofs, a fresh-context review's cases (the batched lookups, the
//! widened commitments, the opening batches). Every one must be rejected without a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
use zkmha_attention::MaskKind;
use zkmha_attention::block::{ModelBlockProof, block_hyrax_params, verify_block};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_pcs::HyraxCommitment;

use crate::common::{grouped, modes, pre_norm, proven_block, rotary};

fn check<M: Mode>(
    name: &str,
    params: &zkmha_pcs::HyraxParams,
    statement: &zkmha_attention::model_layer::ModelStatement,
    proof: &ModelBlockProof<M>,
) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        verify_block::<M>(params, statement, proof)
    }));
    match r {
        Err(_) => panic!("{name}: verifier PANICKED"),
        Ok(Ok(_)) => panic!("{name}: ACCEPTED"),
        Ok(Err(e)) => println!("{name}: rejected ({e})"),
    }
}

fn runs<M: Mode>(
    seed: u64,
) -> (zkmha_pcs::HyraxParams, zkmha_attention::model_layer::ModelStatement, ModelBlockProof<M>) {
    let [(softmax, shape), _] = modes(&rotary(pre_norm(grouped(6, 4, 2, 4, 2, 9))));
    proven_block::<M>(&shape, MaskKind::Causal, softmax, seed)
}

#[test]
fn zk_structural_tampering() {
    let (params, st, proof) = runs::<Zk>(1);
    let (_, _, other) = runs::<Zk>(2);
    println!("opening batches: {}", proof.openings.openings.len());
    for (i, c) in proof.commitments.iter().enumerate() {
        println!("commitment {i}: num_vars {} rows {}", c.num_vars, c.rows.len());
    }
    let mut b = proof.clone();
    b.openings.openings.pop();
    check("openings pop", &params, &st, &b);
    let mut b = proof.clone();
    let first = b.openings.openings[0].clone();
    b.openings.openings.push(first);
    check("openings push", &params, &st, &b);
    if proof.openings.openings.len() > 1 {
        let mut b = proof.clone();
        b.openings.openings.swap(0, 1);
        check("openings swap", &params, &st, &b);
    }
    let mut b = proof.clone();
    b.lookups = other.lookups.clone();
    check("lookups from another proof", &params, &st, &b);
    let mut b = proof.clone();
    b.lookups.roots.pop();
    check("lookups roots pop", &params, &st, &b);
    let mut b = proof.clone();
    b.lookups.witness_values.swap(0, 1);
    check("lookups witness values swap", &params, &st, &b);
    let mut b = proof.clone();
    b.lookups.roots.swap(0, 1);
    check("lookups roots swap", &params, &st, &b);
    let mut b = proof.clone();
    b.lookups.witness_values[0].pop();
    check("lookups witness value pop", &params, &st, &b);
    let mut b = proof.clone();
    b.projections.projections.swap(0, 1);
    check("Q/K front messages swapped", &params, &st, &b);
    let mut b = proof.clone();
    b.projections.projections.swap(0, 2);
    check("Q/V front messages swapped", &params, &st, &b);
    for k in 0..4 {
        let mut b = proof.clone();
        let h = &mut b.projections.projections[k].high_digit_value;
        println!("projection {k} high digit: {}", h.is_some());
        *h = match h {
            Some(_) => None,
            None => Some(proof.residual_input),
        };
        check(&format!("high digit flipped {k}"), &params, &st, &b);
    }
    // Commitments in another layout: the plain (unwidened) one, and single-row.
    for i in 0..proof.commitments.len() {
        let c = &proof.commitments[i];
        for rows in [c.rows.len() * 4, c.rows.len() * 2, (c.rows.len() / 4).max(1), 1, 3] {
            if rows == c.rows.len() {
                continue;
            }
            let mut b = proof.clone();
            let mut r = c.rows.clone();
            r.resize(rows, c.rows[0]);
            b.commitments[i] = HyraxCommitment { num_vars: c.num_vars, rows: r };
            check(&format!("commitment {i} with {rows} rows"), &params, &st, &b);
        }
    }
    // Plain-mode params for a zero-knowledge proof (fewer generators).
    let [(softmax, shape), _] = modes(&rotary(pre_norm(grouped(6, 4, 2, 4, 2, 9))));
    let small = block_hyrax_params::<Plain>(&shape, softmax).unwrap();
    check("zk proof with plain params", &small, &st, &proof);
}

#[test]
fn plain_structural_tampering() {
    let (params, st, proof) = runs::<Plain>(1);
    let (_, _, other) = runs::<Plain>(2);
    let mut b = proof.clone();
    b.lookups = other.lookups.clone();
    check("lookups from another proof", &params, &st, &b);
    let mut b = proof.clone();
    b.projections.projections.swap(0, 1);
    check("Q/K front messages swapped", &params, &st, &b);
}
