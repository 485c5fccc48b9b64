//! Committed mode: the verifier sees commitments to `Q`, `K`, `V` instead of the tensors.
//!
//! ```text
//! statement: shape, mask kind, softmax mode, Hyrax commitments C_Q, C_K, C_V, the output O
//! proof:     the layer proof, whose final multi-point opening also answers the three input
//!            claims (one combined row for them and the softmax's columns: one layout,
//!            `crate::commitment_layout`)
//! verifier:  runs the chain to the claims Q(p_Q) = y_Q, K(p_K) = y_K, V(p_V) = y_V and checks each
//!            against its commitment; it never reads Q, K or V
//! ```
//!
//! Hyrax is the scheme here because its opening costs the prover no group operation and its
//! setup is transparent (the generators depend only on the shape); `docs/PCS.md` compares it
//! with HyperKZG, whose proofs are smaller but whose openings cost seconds at 2^20.

use crate::commitment_layout::{largest_committed_vars, layout_column_vars, table_column_vars};
use crate::layer::{
    AttentionLayerProof, CommittedInputTables, CommittedInputs, DOMAIN, LABEL_COMMITMENTS, LABEL_MASK,
    LABEL_SOFTMAX, ProverTimings, VerifierTimings, absorb_output, check_output_len, prove_chain,
    verify_chain, witness_alongside_table,
};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::time::Instant;
use zkmha_field::Fr;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, PcsError};
use zkmha_transcript::Transcript;

/// Commitments to the padded `Q`, `K` (`ŝ × d`) and `V` (`ŝ × d_v`).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct InputCommitments {
    /// To `Q`.
    pub queries: HyraxCommitment,
    /// To `K`.
    pub keys: HyraxCommitment,
    /// To `V`.
    pub values: HyraxCommitment,
}

/// The public statement of a committed-mode proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct CommittedStatement {
    /// Shapes.
    pub shape: AttentionShape,
    /// Mask kind.
    pub mask: MaskKind,
    /// What the softmax slot holds.
    pub softmax: SoftmaxMode,
    /// Commitments to the inputs.
    pub commitments: InputCommitments,
    /// The claimed output `O`, `s × h·m_v`, row-major.
    pub output: Vec<Fr>,
}

/// A committed-mode proof: the layer proof, whose final opening covers `Q`, `K`, `V`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct CommittedLayerProof {
    /// The layer proof.
    pub layer: AttentionLayerProof,
}

/// The Hyrax generators for `shape` and `softmax` (transparent: anyone derives the same ones):
/// enough for the inputs and, when the softmax is proven, for its `ĥ × ŝ × ŝ` witness and its
/// lookup's multiplicities.
pub fn hyrax_params_for(shape: &AttentionShape, softmax: SoftmaxMode) -> HyraxParams {
    HyraxParams::new(largest_committed_vars(shape, softmax))
}

fn pcs_error(step: &'static str) -> impl Fn(PcsError) -> AttentionError {
    move |_| AttentionError::CheckFailed { step }
}

/// `Q`, `K`, `V` padded with zeros to their power-of-two matrices, as integers.
pub(crate) fn padded_inputs(shape: &AttentionShape, inputs: &AttentionInputs) -> [(usize, Vec<i64>); 3] {
    let pad = |data: &[i64], columns: usize, column_vars: usize| -> (usize, Vec<i64>) {
        let width = 1usize << column_vars;
        let mut out = vec![0i64; shape.padded_seq_len() * width];
        for (i, row) in data.chunks(columns.max(1)).enumerate() {
            out[i * width..i * width + row.len()].copy_from_slice(row);
        }
        (shape.seq_vars() + column_vars, out)
    };
    [
        pad(&inputs.queries, shape.model_width(), shape.model_vars()),
        pad(&inputs.keys, shape.model_width(), shape.model_vars()),
        pad(&inputs.values, shape.value_model_width(), shape.value_model_vars()),
    ]
}

/// Commits to the inputs in the layout of a layer with this shape and softmax mode
/// ([`crate::commitment_layout`]).
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] / [`AttentionError::ValueOutOfRange`] for bad inputs, or
/// [`AttentionError::CheckFailed`] when the generators are too few for the shape.
pub fn commit_inputs(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<InputCommitments, AttentionError> {
    inputs.validate(shape)?;
    commit_padded_inputs(params, shape, softmax, &padded_inputs(shape, inputs))
}

pub(crate) fn commit_padded_inputs(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    [q, k, v]: &[(usize, Vec<i64>); 3],
) -> Result<InputCommitments, AttentionError> {
    let layout = layout_column_vars(shape, softmax);
    let commit = |(num_vars, table): &(usize, Vec<i64>)| {
        Hyrax::commit_small_with_columns(params, *num_vars, table_column_vars(*num_vars, layout), table)
            .map_err(pcs_error("input commitment"))
    };
    Ok(InputCommitments { queries: commit(q)?, keys: commit(k)?, values: commit(v)? })
}

impl CommittedStatement {
    pub(crate) fn append_to_transcript(&self, transcript: &mut Transcript) {
        self.shape.append_to_transcript(transcript);
        transcript.append_u64(LABEL_MASK, u64::from(self.mask.code()));
        self.softmax.append_to_transcript(LABEL_SOFTMAX, transcript);
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = self.commitments.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        absorb_output(&self.output, transcript);
    }

    /// Checks the statement of a plain committed-mode proof before anything is derived from
    /// it: the shape against the stated limits ([`AttentionShape::validate`]), the output's
    /// length and each commitment's size and layout. [`verify_layer_committed`] runs it
    /// first; a reader of proof files calls it before deriving the generators
    /// ([`hyrax_params_for`]).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for a shape over the limits,
    /// [`AttentionError::WrongTensorSize`] for the output, [`AttentionError::CheckFailed`] for a
    /// commitment of the wrong size.
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        self.validate_layout(layout_column_vars(&self.shape, self.softmax))
    }

    /// [`Self::validate`] for a zero-knowledge proof's statement (its commitments' layout is
    /// the zero-knowledge layer's; call it before [`crate::zk_hyrax_params_for`]).
    ///
    /// # Errors
    /// As [`Self::validate`].
    pub fn validate_zk(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        self.validate_layout(crate::commitment_layout::zk_layout_column_vars(&self.shape, self.softmax))
    }

    /// [`Self::validate`] for the commitments' layout `layout` (the zero-knowledge layer's).
    pub(crate) fn validate_layout(&self, layout: usize) -> Result<(), AttentionError> {
        let shape = &self.shape;
        shape.validate()?;
        check_output_len(shape, &self.output)?;
        self.commitments.validate_layout(shape, layout)
    }
}

impl InputCommitments {
    /// Checks each commitment's size and layout against the shape, for the layout `layout`.
    pub(crate) fn validate_layout(
        &self,
        shape: &AttentionShape,
        layout: usize,
    ) -> Result<(), AttentionError> {
        let c = self;
        for (commitment, vars) in [
            (&c.queries, shape.seq_vars() + shape.model_vars()),
            (&c.keys, shape.seq_vars() + shape.model_vars()),
            (&c.values, shape.seq_vars() + shape.value_model_vars()),
        ] {
            if commitment.num_vars != vars
                || commitment.column_vars().ok() != Some(table_column_vars(vars, layout))
            {
                return Err(AttentionError::CheckFailed { step: "input commitment shape" });
            }
        }
        Ok(())
    }
}

/// Commits to the inputs, runs the forward pass and proves it; the statement holds the
/// commitments, not the tensors.
///
/// # Errors
/// As [`crate::prove_layer`] and [`commit_inputs`].
pub fn prove_layer_committed(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<(CommittedStatement, CommittedLayerProof, ProverTimings), AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    let mut witness = witness_alongside_table(shape, mask, softmax, inputs, Some(params))?;
    timings.witness = start.elapsed();
    let start = Instant::now();
    let padded = padded_inputs(shape, inputs);
    let commitments = commit_padded_inputs(params, shape, softmax, &padded)?;
    timings.commit = start.elapsed();
    let statement =
        CommittedStatement { shape: *shape, mask, softmax, commitments, output: witness.output.clone() };
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.statement = start.elapsed();
    let committed = CommittedInputTables {
        commitments: &statement.commitments,
        tables: &padded,
        extra_items: Vec::new(),
        extra_claims: Vec::new(),
        output_polynomial: None,
    };
    let (layer, _) = prove_chain(
        shape,
        mask,
        statement.softmax,
        params,
        &mut witness,
        Some(committed),
        &mut transcript,
        &mut timings,
    )?;
    Ok((statement, CommittedLayerProof { layer }, timings))
}

/// Verifies a committed-mode proof using only the statement (commitments and output) and the
/// transparent generators.
///
/// # Errors
/// Statement errors, the first failing sub-protocol, or [`AttentionError::CheckFailed`] naming
/// the input whose opening fails.
#[deny(clippy::indexing_slicing)]
pub fn verify_layer_committed(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &CommittedLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    statement.validate()?;
    let shape = &statement.shape;
    let mut timings = VerifierTimings::default();
    let start = Instant::now();
    let mut transcript = Transcript::new(DOMAIN);
    statement.append_to_transcript(&mut transcript);
    timings.public_evaluations += start.elapsed();
    verify_chain(
        shape,
        statement.mask,
        statement.softmax,
        params,
        &statement.output,
        &proof.layer,
        Some(CommittedInputs {
            commitments: &statement.commitments,
            extra_commitments: Vec::new(),
            extra_claims: Vec::new(),
            output_polynomial: None,
        }),
        &mut transcript,
        &mut timings,
    )?;
    Ok(timings)
}

/// Malicious-prover regression (the audit's reproducer): in committed linear-attention
/// (identity) mode a prover puts garbage in a padded row `j ≥ s` of the committed `V`; it would
/// reach every real output row through the masked scores (`MASK·V[j]`), so the claimed `O` is
/// not the linear attention of the `s × h·m_v` matrix `V`. At 30b0ad6 the verifier accepted it;
/// the padding step now restricts `V̂` to the rows `i < s`, so the prover's `V̂` claim is false.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod padded_values_regression {
    use super::*;
    use crate::layer::prove_chain;

    #[test]
    fn garbage_in_the_padded_rows_of_a_committed_v_is_rejected() {
        let shape = AttentionShape::new(3, 2, 2, 2).unwrap(); // ŝ = 4: one padded row
        let (mask, softmax) = (MaskKind::Causal, SoftmaxMode::Identity);
        let inputs = AttentionInputs {
            queries: (0..12).map(|k| (k as i64 * 7) % 11 - 5).collect(),
            keys: (0..12).map(|k| (k as i64 * 5) % 13 - 6).collect(),
            values: (0..12).map(|k| (k as i64 * 3) % 7 - 3).collect(),
        };
        let params = hyrax_params_for(&shape, softmax);
        let mut witness = crate::compute_witness_for_mode(&shape, mask, softmax, &inputs).unwrap();
        let honest_output = witness.output.clone();
        let mut padded = padded_inputs(&shape, &inputs);
        let (s, sp) = (shape.seq_len, shape.padded_seq_len());
        let d_v = 1usize << shape.value_model_vars();
        let width_hat = shape.padded_heads() * shape.padded_value_head_dim();
        // V[3][0] = 1 in the padded row (head 0, column 0).
        padded[2].1[3 * d_v] = 1;
        witness.values[3 * d_v] += Fr::from(1u64);
        witness.values_hat[3 * width_hat] += Fr::from(1u64);
        for i in 0..sp {
            // A[0][i][3] = MASK for every row (column 3 ≥ s is masked).
            witness.output_hat[i * width_hat] += crate::structured::mask_value();
            if i < s {
                witness.output[i * shape.value_model_width()] += crate::structured::mask_value();
            }
        }
        let commitments = commit_padded_inputs(&params, &shape, softmax, &padded).unwrap();
        let statement =
            CommittedStatement { shape, mask, softmax, commitments, output: witness.output.clone() };
        let mut transcript = Transcript::new(DOMAIN);
        statement.append_to_transcript(&mut transcript);
        let committed = CommittedInputTables {
            commitments: &statement.commitments,
            tables: &padded,
            extra_items: Vec::new(),
            extra_claims: Vec::new(),
            output_polynomial: None,
        };
        let mut timings = ProverTimings::default();
        let (layer, _) = prove_chain(
            &shape,
            mask,
            softmax,
            &params,
            &mut witness,
            Some(committed),
            &mut transcript,
            &mut timings,
        )
        .unwrap();
        let result = verify_layer_committed(&params, &statement, &CommittedLayerProof { layer });
        assert_ne!(statement.output, honest_output);
        assert!(matches!(result, Err(AttentionError::Sumcheck { step: "padding", .. })), "{result:?}");
    }
}
