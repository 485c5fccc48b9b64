//! Fresh-context review of issue 20 (output norms, QK-norm): mixed norm kinds (β on some
//! tables, not on others), one token/one head, s not a power of two with the QK-norm,
//! statement/proof mismatches that must give an error (never a panic), swapped proof parts
//! and swapped weight tables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use crate::common;
use crate::common::{base, grouped, modes as softmax_modes, rotary, with_mlp, with_norm};
use std::panic::{AssertUnwindSafe, catch_unwind};
use zkmha_attention::block::{ModelBlockProof, verify_block};
use zkmha_attention::mode::Mode;
use zkmha_attention::model_layer::{ModelShape, ModelStatement, OutputNorms, QueryKeyNorms};
use zkmha_attention::norm::{BlockNorm, NormKind};

in_both_modes!(
    mixed_kinds_round_trip_and_bind_every_table,
    mismatched_statements_are_errors_not_panics,
    swapped_and_foreign_proof_parts_are_errors_not_panics,
);

fn rms(epsilon: u64) -> BlockNorm {
    BlockNorm {
        kind: NormKind::Rms,
        epsilon,
        scale_bits: 24,
        shift_bits: 24,
        bias: false,
        remainder_digits: 4,
    }
}

fn layer(epsilon: u64) -> BlockNorm {
    BlockNorm {
        kind: NormKind::Layer,
        epsilon,
        scale_bits: 28,
        shift_bits: 28,
        bias: true,
        remainder_digits: 4,
    }
}

/// Shapes mixing kinds: β on some of the new tables and not on others.
fn shapes() -> Vec<ModelShape> {
    let gemma = with_mlp(with_norm(rotary(grouped(6, 4, 2, 4, 4, 16)), NormKind::Rms), true, 24);
    vec![
        // LayerNorm on the attention's output, RMSNorm on the MLP's; Q LayerNorm, K RMSNorm.
        ModelShape {
            output_norms: OutputNorms { attention: Some(layer(3)), feed_forward: Some(rms(5)) },
            query_key_norms: Some(QueryKeyNorms { query: layer(2), key: rms(7) }),
            ..gemma
        },
        // The reverse: RMSNorm on the attention's output, LayerNorm on the MLP's; Q RMS, K Layer.
        ModelShape {
            output_norms: OutputNorms { attention: Some(rms(3)), feed_forward: Some(layer(5)) },
            query_key_norms: Some(QueryKeyNorms { query: rms(2), key: layer(7) }),
            ..gemma
        },
        // Only the MLP's output norm, and the QK-norm (Layer on both).
        ModelShape {
            output_norms: OutputNorms { attention: None, feed_forward: Some(layer(5)) },
            query_key_norms: Some(QueryKeyNorms { query: layer(2), key: layer(3) }),
            ..gemma
        },
        // s = 3 (not a power of two), h = 2, m = 2 (the narrowest head), LayerNorm QK-norm.
        ModelShape {
            query_key_norms: Some(QueryKeyNorms { query: layer(2), key: layer(3) }),
            ..with_norm(rotary(base(3, 2, 2, 2, 5)), NormKind::Layer)
        },
        // One token, one head, m = 2: every norm's appended zero row (LayerNorm).
        ModelShape {
            output_norms: OutputNorms { attention: Some(layer(3)), feed_forward: None },
            query_key_norms: Some(QueryKeyNorms { query: layer(2), key: rms(3) }),
            ..with_norm(rotary(base(1, 1, 2, 2, 3)), NormKind::Rms)
        },
        // s = 5, h = 4 sharing one key/value head, the MLP's output norm only, no QK-norm.
        ModelShape {
            output_norms: OutputNorms { attention: None, feed_forward: Some(rms(4)) },
            ..with_mlp(with_norm(grouped(5, 4, 1, 2, 2, 6), NormKind::Layer), false, 12)
        },
    ]
}

fn verify_no_panic<M: Mode>(
    params: &zkmha_pcs::HyraxParams,
    statement: &ModelStatement,
    proof: &ModelBlockProof<M>,
    what: &str,
) -> bool {
    match catch_unwind(AssertUnwindSafe(|| verify_block::<M>(params, statement, proof))) {
        Ok(r) => {
            println!("{what}: {:?}", r.as_ref().err());
            r.is_ok()
        }
        Err(_) => panic!("VERIFIER PANICKED: {what}"),
    }
}

fn mixed_kinds_round_trip_and_bind_every_table<M: Mode>() {
    for (k, shape) in shapes().into_iter().enumerate() {
        for (softmax, shape) in softmax_modes(&shape) {
            shape.validate().unwrap_or_else(|e| panic!("shape {k}: {e}"));
            let p = common::prove_pre_norm::<M>(&shape, softmax, 40 + k as u64, 41);
            assert!(
                verify_no_panic::<M>(&p.params, &p.statement, &p.proof, &format!("honest {k}")),
                "honest {k}"
            );
            // Every weight table: another model's (the new tables are the last ones), and
            // each new table swapped with every other table of the same size.
            let other = common::prove_pre_norm::<M>(&shape, softmax, 90 + k as u64, 41);
            let n = p.statement.model.tables.len();
            for t in 0..n {
                let mut statement = p.statement.clone();
                statement.model.tables[t] = other.statement.model.tables[t].clone();
                if statement.model.tables[t] == p.statement.model.tables[t] {
                    continue;
                }
                assert!(
                    !verify_no_panic::<M>(
                        &p.params,
                        &statement,
                        &p.proof,
                        &format!("{k}: table {t} foreign")
                    ),
                    "FORGERY shape {k}: another model's table {t} accepted"
                );
            }
            for t in 8..n {
                for u in 0..n {
                    let (a, b) = (&p.statement.model.tables[t], &p.statement.model.tables[u]);
                    if t == u || a.num_vars != b.num_vars || a == b {
                        continue;
                    }
                    let mut statement = p.statement.clone();
                    statement.model.tables.swap(t, u);
                    assert!(
                        !verify_no_panic::<M>(&p.params, &statement, &p.proof, &format!("{k}: swap {t} {u}")),
                        "FORGERY shape {k}: tables {t} and {u} swapped accepted"
                    );
                }
            }
        }
    }
}

fn statement_variants(shape: &ModelShape) -> Vec<(String, ModelShape)> {
    let mut out = Vec::new();
    let flip = |n: BlockNorm| BlockNorm { bias: !n.bias, ..n };
    let kind = |n: BlockNorm| BlockNorm {
        kind: if n.kind == NormKind::Rms { NormKind::Layer } else { NormKind::Rms },
        ..n
    };
    let o = shape.output_norms;
    for (name, f) in [("flip bias", &flip as &dyn Fn(BlockNorm) -> BlockNorm), ("other kind", &kind)] {
        if let Some(n) = o.attention {
            out.push((
                format!("attention output norm {name}"),
                ModelShape { output_norms: OutputNorms { attention: Some(f(n)), ..o }, ..*shape },
            ));
        }
        if let Some(n) = o.feed_forward {
            out.push((
                format!("feed-forward output norm {name}"),
                ModelShape { output_norms: OutputNorms { feed_forward: Some(f(n)), ..o }, ..*shape },
            ));
        }
        if let Some(q) = shape.query_key_norms {
            out.push((
                format!("query norm {name}"),
                ModelShape { query_key_norms: Some(QueryKeyNorms { query: f(q.query), ..q }), ..*shape },
            ));
            out.push((
                format!("key norm {name}"),
                ModelShape { query_key_norms: Some(QueryKeyNorms { key: f(q.key), ..q }), ..*shape },
            ));
        }
    }
    out.push((
        "output norms swapped".into(),
        ModelShape {
            output_norms: OutputNorms { attention: o.feed_forward, feed_forward: o.attention },
            ..*shape
        },
    ));
    out.push(("no output norms".into(), ModelShape { output_norms: OutputNorms::default(), ..*shape }));
    if o.attention.is_none() {
        out.push((
            "attention output norm added".into(),
            ModelShape { output_norms: OutputNorms { attention: Some(rms(9)), ..o }, ..*shape },
        ));
    }
    if shape.mlp.is_some() && o.feed_forward.is_none() {
        out.push((
            "feed-forward output norm added".into(),
            ModelShape { output_norms: OutputNorms { feed_forward: Some(rms(9)), ..o }, ..*shape },
        ));
    }
    match shape.query_key_norms {
        Some(q) => {
            out.push(("no QK-norm".into(), ModelShape { query_key_norms: None, ..*shape }));
            out.push((
                "QK swapped".into(),
                ModelShape { query_key_norms: Some(QueryKeyNorms { query: q.key, key: q.query }), ..*shape },
            ));
            out.push((
                "QK-norm and output norms swapped".into(),
                ModelShape {
                    output_norms: OutputNorms {
                        attention: o.attention.map(|_| q.query),
                        feed_forward: o.feed_forward.map(|_| q.key),
                    },
                    query_key_norms: Some(QueryKeyNorms {
                        query: o.attention.unwrap_or(q.query),
                        key: o.feed_forward.unwrap_or(q.key),
                    }),
                    ..*shape
                },
            ));
        }
        None if shape.rotary.is_some() => {
            out.push((
                "QK-norm added".into(),
                ModelShape { query_key_norms: Some(QueryKeyNorms { query: rms(2), key: rms(2) }), ..*shape },
            ));
        }
        None => {}
    }
    out
}

fn mismatched_statements_are_errors_not_panics<M: Mode>() {
    for (k, shape) in shapes().into_iter().enumerate() {
        let [(softmax, shape), _] = softmax_modes(&shape);
        let p = common::prove_pre_norm::<M>(&shape, softmax, 50 + k as u64, 51);
        for (name, changed) in statement_variants(&shape) {
            if changed == shape {
                continue;
            }
            let statement = ModelStatement { shape: changed, ..p.statement.clone() };
            assert!(
                !verify_no_panic::<M>(&p.params, &statement, &p.proof, &format!("{k}: {name}")),
                "FORGERY shape {k}: {name} accepted"
            );
        }
    }
}

fn swapped_and_foreign_proof_parts_are_errors_not_panics<M: Mode>() {
    let all = shapes();
    let proved: Vec<_> = all
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let [(softmax, shape), _] = softmax_modes(shape);
            common::prove_pre_norm::<M>(&shape, softmax, 60 + k as u64, 61)
        })
        .collect();
    for (k, p) in proved.iter().enumerate() {
        let check = |proof: &ModelBlockProof<M>, what: String| {
            assert!(
                !verify_no_panic::<M>(&p.params, &p.statement, proof, &format!("{k}: {what}")),
                "FORGERY shape {k}: {what} accepted"
            );
        };
        let o = &p.proof.output_norms;
        if o.attention.is_some() && o.feed_forward.is_some() {
            let mut proof = p.proof.clone();
            std::mem::swap(&mut proof.output_norms.attention, &mut proof.output_norms.feed_forward);
            check(&proof, "output norm proofs swapped".into());
        }
        if p.proof.query_key_norms.len() == 2 {
            let mut proof = p.proof.clone();
            proof.query_key_norms.swap(0, 1);
            check(&proof, "QK-norm proofs swapped".into());
            let mut proof = p.proof.clone();
            proof.query_key_norms.push(proof.query_key_norms[0].clone());
            check(&proof, "a third QK-norm proof".into());
            if let Some(a) = &o.attention {
                let mut proof = p.proof.clone();
                proof.query_key_norms[0] = a.clone();
                check(&proof, "the attention's output norm proof as Q's".into());
            }
            if let Some(n) = &p.proof.norm {
                let mut proof = p.proof.clone();
                proof.query_key_norms[1] = n.clone();
                check(&proof, "the first norm's proof as K's".into());
            }
        }
        if let (Some(n), Some(_)) = (&p.proof.norm, &o.attention) {
            let mut proof = p.proof.clone();
            proof.output_norms.attention = Some(n.clone());
            check(&proof, "the first norm's proof as the attention's output norm".into());
        }
        // Every other shape's output-norm and QK-norm proofs in this one's slots.
        for (j, q) in proved.iter().enumerate() {
            if j == k {
                continue;
            }
            let mut proof = p.proof.clone();
            let mut changed = false;
            if o.attention.is_some() && q.proof.output_norms.attention.is_some() {
                proof.output_norms.attention = q.proof.output_norms.attention.clone();
                changed = true;
            }
            if o.feed_forward.is_some() && q.proof.output_norms.feed_forward.is_some() {
                proof.output_norms.feed_forward = q.proof.output_norms.feed_forward.clone();
                changed = true;
            }
            if p.proof.query_key_norms.len() == 2 && q.proof.query_key_norms.len() == 2 {
                proof.query_key_norms = q.proof.query_key_norms.clone();
                changed = true;
            }
            if changed {
                check(&proof, format!("shape {j}'s norm proofs"));
            }
            // The whole proof of another shape under this statement.
            check(&q.proof, format!("shape {j}'s whole proof"));
        }
        // Dropped parts.
        let mut proof = p.proof.clone();
        proof.query_key_norms.clear();
        if !p.proof.query_key_norms.is_empty() {
            check(&proof, "no QK-norm proofs".into());
        }
        let mut proof = p.proof.clone();
        proof.output_norms = zkmha_attention::block::OutputNormProofs { attention: None, feed_forward: None };
        if o.attention.is_some() || o.feed_forward.is_some() {
            check(&proof, "no output norm proofs".into());
        }
        // One fewer / one more commitment.
        let mut proof = p.proof.clone();
        proof.commitments.pop();
        check(&proof, "one commitment fewer".into());
        let mut proof = p.proof.clone();
        let c = proof.commitments[0].clone();
        proof.commitments.push(c);
        check(&proof, "one commitment more".into());
        // Each new commitment swapped with every other of the same size.
        let keys = zkmha_attention::block::proof_polynomials(&p.statement.shape);
        for (i, key) in keys.iter().enumerate() {
            use zkmha_attention::block::BlockPolynomial::*;
            if !matches!(
                key,
                NormedOutput(_) | OutputNorm(..) | HeadNormInput(_) | HeadNorm(..) | RotaryInput(_)
            ) {
                continue;
            }
            for j in 0..keys.len() {
                let (a, b) = (&p.proof.commitments[i], &p.proof.commitments[j]);
                if i == j || a.num_vars != b.num_vars || a == b {
                    continue;
                }
                let mut proof = p.proof.clone();
                proof.commitments.swap(i, j);
                check(&proof, format!("commitments {key:?} and {:?} swapped", keys[j]));
            }
        }
    }
}
