//! `zkmha_api::attention_layer`: attention layers of their own proven and verified through the
//! library in both modes, against a plain reference, with the softmax a verifier expects, and
//! refused or rejected when they are not what they claim.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_api::attention_layer::{
    AttentionInputs, AttentionShape, Expected, Hiding, default_softmax, prove_attention, verify_attention,
};
use zkmha_api::layer_files::LayerProof;
use zkmha_api::{Error, ErrorKind, MaskKind, SoftmaxMode, parse_softmax_spec, softmax_spec};

fn inputs(shape: &AttentionShape, seed: i64) -> AttentionInputs {
    let draw = |n: usize, k: i64| -> Vec<i64> {
        (0..n as i64).map(|i| ((i * 37 + k * 11 + seed * 5) % 19) - 9).collect()
    };
    AttentionInputs {
        queries: draw(shape.seq_len * shape.model_width(), 1),
        keys: draw(shape.seq_len * shape.model_width(), 2),
        values: draw(shape.seq_len * shape.value_model_width(), 3),
    }
}

/// Linear attention without a mask, written straightforwardly in integers:
/// O[i][h·m_v + c] = Σ_j (Σ_t Q[i][h·m + t]·K[j][h·m + t]) · V[j][h·m_v + c].
fn linear_reference(shape: &AttentionShape, x: &AttentionInputs) -> Vec<i64> {
    let (s, h, m, mv) = (shape.seq_len, shape.heads, shape.head_dim, shape.value_head_dim);
    let mut out = vec![0i64; s * h * mv];
    for head in 0..h {
        for i in 0..s {
            for j in 0..s {
                let score: i64 = (0..m)
                    .map(|t| x.queries[i * h * m + head * m + t] * x.keys[j * h * m + head * m + t])
                    .sum();
                for c in 0..mv {
                    out[i * h * mv + head * mv + c] += score * x.values[j * h * mv + head * mv + c];
                }
            }
        }
    }
    out
}

/// Linear attention expected, nothing else fixed.
fn linear() -> Expected {
    Expected { softmax: Some(SoftmaxMode::Identity), ..Expected::default() }
}

fn shapes() -> Vec<AttentionShape> {
    [(1, 1, 2, 2), (3, 2, 4, 4), (5, 3, 2, 3), (7, 1, 3, 1), (16, 2, 4, 4)]
        .into_iter()
        .map(|(s, h, m, mv)| AttentionShape::new(s, h, m, mv).unwrap())
        .collect()
}

#[test]
fn linear_layers_round_trip_in_both_modes_and_equal_the_plain_reference() {
    for shape in shapes() {
        for hiding in [Hiding::Plain, Hiding::ZeroKnowledge] {
            let x = inputs(&shape, shape.seq_len as i64);
            let proved = prove_attention(&shape, MaskKind::None, SoftmaxMode::Identity, &x, hiding).unwrap();
            assert_eq!(proved.output, Some(linear_reference(&shape, &x)), "{shape:?} {hiding:?}");
            assert_eq!(proved.file.is_zero_knowledge(), hiding == Hiding::ZeroKnowledge);
            assert_eq!(proved.timings.is_some(), hiding == Hiding::Plain);
            let verified = verify_attention(&proved.file, &linear()).unwrap();
            assert_eq!(output(&verified), proved.output);
            assert_eq!(accepted(&verified).0, shape);
        }
    }
}

#[test]
fn the_proven_softmax_round_trips_through_a_file_in_both_modes() {
    let dir = std::env::temp_dir().join(format!("zkmha-attention-layer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (k, shape) in shapes().into_iter().enumerate() {
        for (hiding, mask) in [(Hiding::Plain, MaskKind::Causal), (Hiding::ZeroKnowledge, MaskKind::None)] {
            let softmax = default_softmax(&shape).unwrap();
            let x = inputs(&shape, k as i64);
            let proved = prove_attention(&shape, mask, softmax, &x, hiding).unwrap();
            let path = dir.join(format!("{k}-{hiding:?}.proof"));
            zkmha_api::files::write_file(&path, &proved.encoded.bytes).unwrap();
            let file = LayerProof::read(&path).unwrap();
            let verified = verify_attention(&file, &Expected::default()).unwrap();
            assert!(proved.output.is_some());
            assert_eq!(output(&verified), proved.output, "{shape:?} {hiding:?}");
            assert_eq!(accepted(&verified).2, softmax);
            assert_eq!(file.statement().mask, mask);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_softmax_than_the_expected_one_is_refused_before_verifying() {
    let shape = AttentionShape::new(4, 2, 2, 2).unwrap();
    let x = inputs(&shape, 1);
    let linear = prove_attention(&shape, MaskKind::None, SoftmaxMode::Identity, &x, Hiding::Plain).unwrap();
    // Expected by default: the proven softmax of the shape.
    let refused = verify_attention(&linear.file, &Expected::default()).unwrap_err();
    assert!(matches!(refused, Error::UnexpectedSoftmax { .. }), "{refused}");
    assert_eq!(refused.kind(), ErrorKind::Refused);
    assert!(refused.to_string().contains("(linear)"), "{refused}");
    // Named, as `zkmha verify` prints it, it is accepted.
    let named = parse_softmax_spec(&softmax_spec(SoftmaxMode::Identity)).unwrap();
    assert!(
        verify_attention(&linear.file, &Expected { softmax: Some(named), ..Expected::default() }).is_ok()
    );
    // A proven softmax at another score scale is refused against the default too.
    let other = zkmha_api::attention_layer::exponential_softmax(&shape, Some(0.5)).unwrap();
    assert_ne!(other, default_softmax(&shape).unwrap());
    let scaled = prove_attention(&shape, MaskKind::None, other, &x, Hiding::ZeroKnowledge).unwrap();
    assert_eq!(verify_attention(&scaled.file, &Expected::default()).unwrap_err().kind(), ErrorKind::Refused);
    assert!(
        verify_attention(&scaled.file, &Expected { softmax: Some(other), ..Expected::default() }).is_ok()
    );
    // Refused before verifying: a linear proof with a changed output is refused, not invalid.
    let mut changed = linear;
    match &mut changed.file {
        LayerProof::Plain(statement, _) | LayerProof::ZeroKnowledge(statement, _) => {
            statement.output[0] += zkmha_field::Fr::from(1u64);
        }
    }
    assert_eq!(verify_attention(&changed.file, &Expected::default()).unwrap_err().kind(), ErrorKind::Refused);
    assert_eq!(verify_attention(&changed.file, &self::linear()).unwrap_err().kind(), ErrorKind::InvalidProof);
}

/// A true proof about another mask or another head split than the caller fixes is refused.
#[test]
fn another_mask_or_head_split_than_the_expected_one_is_refused() {
    // h = 1, m = 4 and h = 2, m = 2 give O of the same shape (s × h·m_v with m_v = 4 and 2).
    let wide = AttentionShape::new(4, 1, 4, 4).unwrap();
    let proved = prove_attention(
        &wide,
        MaskKind::Causal,
        default_softmax(&wide).unwrap(),
        &inputs(&wide, 5),
        Hiding::Plain,
    )
    .unwrap();
    let verified = verify_attention(&proved.file, &Expected::default()).unwrap();
    assert_eq!((accepted(&verified).1, accepted(&verified).0), (MaskKind::Causal, wide));
    let expect = |mask, heads, head_dim| Expected { mask, heads, head_dim, ..Expected::default() };
    assert!(verify_attention(&proved.file, &expect(Some(MaskKind::Causal), Some(1), Some(4))).is_ok());
    for (expected, what) in [
        (expect(Some(MaskKind::None), None, None), "mask"),
        (expect(None, Some(2), None), "number of heads"),
        (expect(None, None, Some(2)), "head width"),
    ] {
        let error = verify_attention(&proved.file, &expected).unwrap_err();
        assert!(matches!(&error, Error::UnexpectedStatement { what: w, .. } if *w == what), "{error}");
        assert_eq!(error.kind(), ErrorKind::Refused);
    }
}

#[test]
fn a_changed_output_is_an_invalid_proof_in_both_modes() {
    let shape = AttentionShape::new(5, 2, 3, 2).unwrap();
    for hiding in [Hiding::Plain, Hiding::ZeroKnowledge] {
        let x = inputs(&shape, 2);
        let mut proved =
            prove_attention(&shape, MaskKind::Causal, default_softmax(&shape).unwrap(), &x, hiding).unwrap();
        match &mut proved.file {
            LayerProof::Plain(statement, _) | LayerProof::ZeroKnowledge(statement, _) => {
                statement.output[3] += zkmha_field::Fr::from(1u64);
            }
        }
        let error = verify_attention(&proved.file, &Expected::default()).unwrap_err();
        assert!(matches!(error, Error::InvalidProof { .. }), "{hiding:?}: {error}");
        assert_eq!(error.kind(), ErrorKind::InvalidProof);
    }
}

#[test]
fn a_causal_linear_layer_proves_with_no_integer_output() {
    // Masked scores are the field's mask value: O is not a matrix of integers.
    let shape = AttentionShape::new(4, 1, 2, 2).unwrap();
    let proved =
        prove_attention(&shape, MaskKind::Causal, SoftmaxMode::Identity, &inputs(&shape, 3), Hiding::Plain)
            .unwrap();
    assert_eq!(proved.output, None);
    let verified = verify_attention(&proved.file, &linear()).unwrap();
    assert_eq!(output(&verified), None);
}

/// The proven O of a verified attention layer.
fn output(verified: &zkmha_api::attention_layer::VerifiedAttention) -> Option<Vec<i64>> {
    match &verified.verified.output {
        zkmha_api::ProvenOutput::Attention { values, .. } => values.clone(),
        other => panic!("not an attention output: {other:?}"),
    }
}

/// The shape, mask and softmax a verified attention layer is about.
fn accepted(
    verified: &zkmha_api::attention_layer::VerifiedAttention,
) -> (AttentionShape, MaskKind, SoftmaxMode) {
    match verified.verified.kind {
        zkmha_api::ProofKind::AttentionLayer { shape, mask, softmax } => (shape, mask, softmax),
        ref other => panic!("not an attention layer: {other:?}"),
    }
}

#[test]
fn inputs_of_the_wrong_size_or_out_of_range_are_bad_input() {
    let mut huge = AttentionShape::new(3, 1, 2, 2).unwrap();
    huge.seq_len = usize::MAX / 2;
    let error = prove_attention(
        &huge,
        MaskKind::None,
        SoftmaxMode::Identity,
        &inputs(&AttentionShape::new(3, 1, 2, 2).unwrap(), 0),
        Hiding::Plain,
    )
    .unwrap_err();
    assert!(matches!(error, Error::Attention(_)), "{error}");
    let shape = AttentionShape::new(3, 1, 2, 2).unwrap();
    let mut x = inputs(&shape, 0);
    x.values.pop();
    let error =
        prove_attention(&shape, MaskKind::None, SoftmaxMode::Identity, &x, Hiding::Plain).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadInput, "{error}");
    let mut x = inputs(&shape, 0);
    x.queries[0] = 1 << 40;
    let error =
        prove_attention(&shape, MaskKind::None, SoftmaxMode::Identity, &x, Hiding::Plain).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadInput, "{error}");
}
