//! Token embeddings proven against the committed table (`zkmha_attention::embedding`): round
//! trips in both modes on several shapes (non-powers of two, with and without position rows,
//! one token), a plain reference, and one test per tampered statement or proof.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_attention::AttentionError;
use zkmha_attention::block::{Boundary, commit_boundary};
use zkmha_attention::embedding::{
    EmbeddingProof, EmbeddingShape, EmbeddingStatement, commit_table, embed, embedding_hyrax_params,
    pad_table, prove_embedding, table_hyrax_params, verify_embedding,
};
use zkmha_attention::mode::{Mode, Plain, Zk};
use zkmha_pcs::{HyraxCommitment, HyraxParams, split_vars};

struct Setup<M: Mode> {
    shape: EmbeddingShape,
    table: Vec<i64>,
    padded: Vec<i64>,
    commitment: HyraxCommitment,
    blinds: M::Blinds,
}

fn setup<M: Mode>(shape: EmbeddingShape, seed: u64) -> Setup<M> {
    let mut rng = StdRng::seed_from_u64(seed);
    let table: Vec<i64> =
        (0..shape.rows() * shape.model_width).map(|_| rng.gen_range(-5000i64..5000)).collect();
    let padded = pad_table(&shape, &table).unwrap();
    let (commitment, blinds) =
        commit_table::<M>(&table_hyrax_params(&shape).unwrap(), &shape, &padded, &mut rng).unwrap();
    Setup { shape, table, padded, commitment, blinds }
}

/// The boundary `H` as a chain's first layer commits it (`log ŝ + log d̂` variables).
fn boundary<M: Mode>(shape: &EmbeddingShape, values: Vec<i64>, seed: u64) -> Boundary<M::Blinds> {
    let s = values.len() / shape.model_width as usize;
    let vars = zkmha_mle::log2_ceil(s) + shape.column_vars();
    let padded = {
        let width = 1usize << shape.column_vars();
        let mut out = vec![0i64; width << zkmha_mle::log2_ceil(s)];
        for (i, row) in values.chunks(shape.model_width as usize).enumerate() {
            out[i * width..i * width + row.len()].copy_from_slice(row);
        }
        out
    };
    let params = HyraxParams::new(2 * split_vars(vars).1);
    let (commitment, blinds) =
        M::commit_table(&params, vars, split_vars(vars).1, &padded, &mut StdRng::seed_from_u64(seed))
            .unwrap();
    Boundary { values, commitment, blinds }
}

fn prove<M: Mode>(
    setup: &Setup<M>,
    ids: &[u64],
) -> (HyraxParams, EmbeddingStatement, EmbeddingProof<M>, Boundary<M::Blinds>) {
    let hidden = boundary::<M>(&setup.shape, embed(&setup.shape, &setup.padded, ids).unwrap(), 3);
    let statement = EmbeddingStatement {
        shape: setup.shape,
        ids: ids.to_vec(),
        table: setup.commitment.clone(),
        hidden: hidden.commitment.clone(),
    };
    let params = embedding_hyrax_params::<M>(&statement).unwrap();
    let proof = prove_embedding::<M>(
        &params,
        &statement,
        &setup.padded,
        &setup.blinds,
        &hidden,
        &mut StdRng::seed_from_u64(4),
    )
    .unwrap();
    (params, statement, proof, hidden)
}

/// The plain reference: each token's row, plus its position's row.
fn reference(shape: &EmbeddingShape, table: &[i64], ids: &[u64]) -> Vec<i64> {
    let d = shape.model_width as usize;
    let mut out = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        for j in 0..d {
            let mut v = table[id as usize * d + j];
            if shape.position_rows > 0 {
                v += table[(shape.token_rows as usize + i) * d + j];
            }
            out.push(v);
        }
    }
    out
}

const SHAPES: [(EmbeddingShape, &[u64]); 5] = [
    (EmbeddingShape { token_rows: 50, position_rows: 0, model_width: 12 }, &[3, 49, 0, 3, 17, 22, 8]),
    (EmbeddingShape { token_rows: 37, position_rows: 9, model_width: 7 }, &[36, 1, 1, 5, 0]),
    (EmbeddingShape { token_rows: 64, position_rows: 0, model_width: 16 }, &[63, 2, 9, 9]),
    (EmbeddingShape { token_rows: 5, position_rows: 3, model_width: 3 }, &[4]),
    (
        EmbeddingShape { token_rows: 300, position_rows: 20, model_width: 9 },
        &[299, 0, 150, 7, 7, 7, 8, 9, 10, 11, 12],
    ),
];

fn round_trips<M: Mode>() {
    for (k, (shape, ids)) in SHAPES.iter().enumerate() {
        let setup = setup::<M>(*shape, k as u64);
        assert_eq!(embed(shape, &setup.padded, ids).unwrap(), reference(shape, &setup.table, ids));
        let (params, statement, proof, _) = prove::<M>(&setup, ids);
        verify_embedding::<M>(&params, &statement, &proof).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

#[test]
fn embeddings_round_trip_plain() {
    round_trips::<Plain>();
}

#[test]
fn embeddings_round_trip_zero_knowledge() {
    round_trips::<Zk>();
}

fn tampered<M: Mode>() {
    let (shape, ids) = SHAPES[1];
    let made = setup::<M>(shape, 11);
    let (params, statement, proof, _) = prove::<M>(&made, ids);
    // Another token id in the statement.
    let mut other = statement.clone();
    other.ids[2] = 7;
    assert!(verify_embedding::<M>(&params, &other, &proof).is_err(), "another id");
    // Two tokens swapped.
    let mut swapped = statement.clone();
    swapped.ids.swap(0, 3);
    assert!(verify_embedding::<M>(&params, &swapped, &proof).is_err(), "swapped ids");
    // Another model's table.
    let another = setup::<M>(shape, 12);
    let mut table = statement.clone();
    table.table = another.commitment.clone();
    assert!(verify_embedding::<M>(&params, &table, &proof).is_err(), "another table");
    // Another hidden state (the embeddings of other ids, honestly committed).
    let (_, _, _, hidden) = prove::<M>(&made, &[0, 1, 2, 3, 4]);
    let mut moved = statement.clone();
    moved.hidden = hidden.commitment;
    assert!(verify_embedding::<M>(&params, &moved, &proof).is_err(), "another hidden state");
    // Another proof version.
    let mut versioned = proof.clone();
    versioned.version += 1;
    assert!(matches!(
        verify_embedding::<M>(&params, &statement, &versioned),
        Err(AttentionError::UnsupportedVersion(_))
    ));
    // The sent value swapped for another proof's.
    let (_, _, other_proof, _) = prove::<M>(&made, &[0, 1, 2, 3, 4]);
    let mut sent = proof.clone();
    sent.hidden_value = other_proof.hidden_value;
    assert!(verify_embedding::<M>(&params, &statement, &sent).is_err(), "another sent value");
}

#[test]
fn tampered_statements_and_proofs_are_rejected_plain() {
    tampered::<Plain>();
}

#[test]
fn tampered_statements_and_proofs_are_rejected_zero_knowledge() {
    tampered::<Zk>();
}

#[test]
fn bad_statements_are_refused_by_name() {
    let (shape, ids) = SHAPES[1];
    let setup = setup::<Plain>(shape, 2);
    let (params, statement, proof, _) = prove::<Plain>(&setup, ids);
    let refused = |s: &EmbeddingStatement| match verify_embedding::<Plain>(&params, s, &proof) {
        Err(AttentionError::InvalidShape(reason)) => reason,
        other => panic!("{other:?}"),
    };
    let mut outside = statement.clone();
    outside.ids[0] = shape.token_rows;
    assert!(refused(&outside).contains("outside the vocabulary"));
    let mut long = statement.clone();
    long.ids = vec![0; shape.position_rows as usize + 1];
    assert!(refused(&long).contains("positions"));
    let mut empty = statement.clone();
    empty.ids.clear();
    assert!(refused(&empty).contains("1 to"));
    let mut wide = statement.clone();
    wide.shape.token_rows = 1 << 30;
    assert!(refused(&wide).contains("exceeds the limit"));
    let mut small = statement.clone();
    small.hidden = setup.commitment.clone();
    assert!(refused(&small).contains("does not have the statement's size"));
    // The table committed in another layout (several table rows to a commitment row).
    let n = shape.num_vars();
    let square = <Plain as Mode>::commit_table(
        &HyraxParams::new(n),
        n,
        split_vars(n).1,
        &setup.padded,
        &mut StdRng::seed_from_u64(5),
    )
    .unwrap()
    .0;
    assert_ne!(square.rows.len(), setup.commitment.rows.len());
    let relaid = EmbeddingStatement { table: square, ..statement.clone() };
    assert!(refused(&relaid).contains("does not have the statement's size"));
    // The honest prover refuses a boundary that is not the embeddings.
    let hidden = boundary::<Plain>(&shape, vec![1; ids.len() * shape.model_width as usize], 9);
    let lie = EmbeddingStatement { hidden: hidden.commitment.clone(), ..statement.clone() };
    let params = embedding_hyrax_params::<Plain>(&lie).unwrap();
    let result =
        prove_embedding::<Plain>(&params, &lie, &setup.padded, &(), &hidden, &mut StdRng::seed_from_u64(1));
    assert!(matches!(result, Err(AttentionError::InvalidShape(_))));
}

/// The first layer's residual commitment, as `commit_boundary` makes it, is an embedding
/// statement's `H`: a chain's first boundary can be proven.
#[test]
fn a_block_boundary_is_an_embedding_statement_hidden_state() {
    use zkmha_attention::Residual;
    use zkmha_attention::model_layer::ModelShape;
    use zkmha_attention::{AttentionShape, SoftmaxMode};
    let shape = EmbeddingShape { token_rows: 40, position_rows: 0, model_width: 8 };
    let setup = setup::<Zk>(shape, 21);
    let ids = [5u64, 39, 2];
    let model = ModelShape {
        attention: AttentionShape::new(3, 2, 4, 4).unwrap(),
        model_width: 8,
        shifts: [8; 4],
        residual: Residual::HiddenState,
        key_value_heads: 2,
        rotary: None,
        norm: None,
        mlp: None,
        output_norms: Default::default(),
        query_key_norms: None,
        post_norm: None,
    };
    let params = HyraxParams::new(20);
    let values = embed(&shape, &setup.padded, &ids).unwrap();
    let hidden =
        commit_boundary::<Zk>(&params, &model, SoftmaxMode::Identity, values, &mut StdRng::seed_from_u64(2))
            .unwrap();
    let statement = EmbeddingStatement {
        shape,
        ids: ids.to_vec(),
        table: setup.commitment.clone(),
        hidden: hidden.commitment.clone(),
    };
    let params = embedding_hyrax_params::<Zk>(&statement).unwrap();
    let proof = prove_embedding::<Zk>(
        &params,
        &statement,
        &setup.padded,
        &setup.blinds,
        &hidden,
        &mut StdRng::seed_from_u64(3),
    )
    .unwrap();
    verify_embedding::<Zk>(&params, &statement, &proof).unwrap();
}
