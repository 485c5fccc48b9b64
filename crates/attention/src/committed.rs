//! Committed inputs: the verifier sees commitments to `Q`, `K`, `V` instead of the tensors,
//! binding (plain) or hiding (zero knowledge); one driver for both ([`crate::layer`]).
//!
//! ```text
//! statement: shape, mask kind, softmax mode, Hyrax commitments C_Q, C_K, C_V, the output O
//! proof:     the layer proof in mode M, whose final opening also answers the three input
//!            claims (one layout for them and the softmax's columns, crate::commitment_layout)
//! verifier:  runs the chain to the claims Q(p_Q) = y_Q, K(p_K) = y_K, V(p_V) = y_V and checks
//!            them against the commitments in that opening; it never reads Q, K or V
//! ```
//!
//! Hyrax is the scheme here because its opening costs the prover no group operation and its
//! setup is transparent (the generators depend only on the shape); `docs/PCS.md` compares it
//! with HyperKZG, whose proofs are smaller but whose openings cost seconds at 2^20.

use crate::commitment_layout::{largest_committed_vars, table_column_vars, zk_layout_column_vars};
use crate::layer::{
    LayerInputs, LayerProof, LayerStatement, ProverInputs, ProverTimings, VerifierTimings, layer_layout,
    layer_zk_schedule, prove_layer_with, verify_layer_steps, verify_layer_with, witness_alongside_table,
};
use crate::mode::{Mode, Plain, ProverRng, Zk};
use crate::{AttentionError, AttentionInputs, AttentionShape, MaskKind, SoftmaxMode};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use std::time::Instant;
use zkmha_field::Fr;
use zkmha_pcs::{HyraxBlinds, HyraxCommitment, HyraxParams};

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

/// The public statement of a committed-inputs proof (either mode).
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

/// A plain committed-inputs proof: the layer proof, whose final opening covers `Q`, `K`, `V`.
pub type CommittedLayerProof = LayerProof<Plain>;

/// A zero-knowledge committed-inputs proof.
pub type ZkLayerProof = LayerProof<Zk>;

/// The Hyrax generators for `shape` and `softmax` in the plain mode (transparent: anyone
/// derives the same ones): enough for the inputs and, when the softmax is proven, for its
/// `ĥ × ŝ × ŝ` witness and its lookup's multiplicities.
pub fn hyrax_params_for(shape: &AttentionShape, softmax: SoftmaxMode) -> HyraxParams {
    HyraxParams::new(largest_committed_vars(shape, softmax))
}

/// The Hyrax generators a layer proof of mode `M` needs: the committed tables' and, in zero
/// knowledge, one per coefficient of all the masks together and the wider layout's.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a shape over the stated limits (checked first), and as
/// [`layer_zk_schedule`].
pub fn layer_hyrax_params<M: Mode>(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
) -> Result<HyraxParams, AttentionError> {
    // The stated limits first: nothing below is sized from an unchecked shape or parameters.
    shape.validate()?;
    if let SoftmaxMode::Exponential(params) = softmax {
        params.validate()?;
    }
    if !M::HIDING {
        return Ok(hyrax_params_for(shape, softmax));
    }
    let masks = 2 * layer_zk_schedule(shape, softmax, true)?.generator_vars();
    let columns = 2 * zk_layout_column_vars(shape, softmax);
    Ok(HyraxParams::new(largest_committed_vars(shape, softmax).max(masks).max(columns)))
}

/// [`layer_hyrax_params`] in zero knowledge.
///
/// # Errors
/// As [`layer_hyrax_params`].
pub fn zk_hyrax_params_for(
    shape: &AttentionShape,
    softmax: SoftmaxMode,
) -> Result<HyraxParams, AttentionError> {
    layer_hyrax_params::<Zk>(shape, softmax)
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

/// Commits to padded tables in mode `M`, in the layer's layout.
fn commit_padded_inputs<M: Mode>(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    padded: &[(usize, Vec<i64>); 3],
    rng: &mut dyn ProverRng,
) -> Result<(InputCommitments, Vec<M::Blinds>), AttentionError> {
    let layout = layer_layout::<M>(shape, softmax);
    let mut commitments = Vec::with_capacity(3);
    let mut blinds = Vec::with_capacity(3);
    for (num_vars, table) in padded {
        let (c, b) = M::commit_table(params, *num_vars, table_column_vars(*num_vars, layout), table, rng)?;
        commitments.push(c);
        blinds.push(b);
    }
    let [queries, keys, values]: [HyraxCommitment; 3] =
        commitments.try_into().map_err(|_| AttentionError::CheckFailed { step: "input commitment" })?;
    Ok((InputCommitments { queries, keys, values }, blinds))
}

/// Commits to `Q`, `K`, `V` in mode `M` (binding, or hiding with the blinds returned for the
/// prover), in the layout of a layer with this shape and softmax mode.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] / [`AttentionError::ValueOutOfRange`] for bad inputs,
/// [`AttentionError::Commitment`] when the generators are too few.
pub fn commit_inputs_with<M: Mode>(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    rng: &mut dyn ProverRng,
) -> Result<(InputCommitments, Vec<M::Blinds>), AttentionError> {
    inputs.validate(shape)?;
    commit_padded_inputs::<M>(params, shape, softmax, &padded_inputs(shape, inputs), rng)
}

/// [`commit_inputs_with`], binding.
///
/// # Errors
/// As [`commit_inputs_with`].
pub fn commit_inputs(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<InputCommitments, AttentionError> {
    use ark_std::rand::SeedableRng;
    // The plain mode draws nothing.
    let mut unused = ark_std::rand::rngs::StdRng::seed_from_u64(0);
    Ok(commit_inputs_with::<Plain>(params, shape, softmax, inputs, &mut unused)?.0)
}

/// [`commit_inputs_with`], hiding.
///
/// # Errors
/// As [`commit_inputs_with`].
pub fn commit_inputs_hiding<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    shape: &AttentionShape,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    rng: &mut R,
) -> Result<(InputCommitments, Vec<HyraxBlinds>), AttentionError> {
    commit_inputs_with::<Zk>(params, shape, softmax, inputs, rng)
}

impl CommittedStatement {
    /// The statement as the driver reads it.
    pub fn layer(&self) -> LayerStatement<'_> {
        LayerStatement {
            shape: &self.shape,
            mask: self.mask,
            softmax: self.softmax,
            inputs: LayerInputs::Committed(&self.commitments),
            output: &self.output,
        }
    }

    /// Checks the statement of a proof of mode `M` before anything is derived from it: the
    /// shape against the stated limits ([`AttentionShape::validate`]), the output's length and
    /// each commitment's size and layout. The verifiers run it first; a reader of proof files
    /// calls it before deriving the generators ([`layer_hyrax_params`]).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for a shape over the limits,
    /// [`AttentionError::WrongTensorSize`] for the output, [`AttentionError::CheckFailed`] for a
    /// commitment of the wrong size.
    pub fn validate_for<M: Mode>(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        crate::layer::check_output_len(&self.shape, &self.output)?;
        self.commitments.validate_layout(&self.shape, layer_layout::<M>(&self.shape, self.softmax))
    }

    /// [`Self::validate_for`] in the plain mode.
    ///
    /// # Errors
    /// As [`Self::validate_for`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.validate_for::<Plain>()
    }

    /// [`Self::validate_for`] in zero knowledge.
    ///
    /// # Errors
    /// As [`Self::validate_for`].
    pub fn validate_zk(&self) -> Result<(), AttentionError> {
        self.validate_for::<Zk>()
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

/// Runs the forward pass on inputs already committed with [`commit_inputs_with`] (in the same
/// mode) and proves it in mode `M`; the statement holds the commitments and the output.
///
/// # Errors
/// Invalid shapes or inputs ([`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`]), [`AttentionError::NumericRange`] for scores the softmax
/// tables cannot hold, [`AttentionError::CheckFailed`] when the blinds do not fit the
/// commitments, [`AttentionError::ZeroKnowledge`].
#[allow(clippy::too_many_arguments)]
pub fn prove_committed_layer<M: Mode>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    commitments: InputCommitments,
    blinds: &[M::Blinds],
    rng: &mut dyn ProverRng,
) -> Result<(CommittedStatement, LayerProof<M>, ProverTimings), AttentionError> {
    let mut timings = ProverTimings::default();
    let start = Instant::now();
    inputs.validate(shape)?;
    let mut witness = witness_alongside_table(shape, mask, softmax, inputs, Some(params))?;
    let padded = padded_inputs(shape, inputs);
    timings.witness = start.elapsed();
    #[cfg(test)]
    let output = cheating_output::output(witness.output.clone());
    #[cfg(not(test))]
    let output = witness.output.clone();
    let statement = CommittedStatement { shape: *shape, mask, softmax, commitments, output };
    statement.validate_for::<M>()?;
    let prover_inputs =
        ProverInputs::Committed { commitments: &statement.commitments, tables: &padded, blinds };
    let proof = prove_layer_with::<M>(
        params,
        shape,
        mask,
        softmax,
        prover_inputs,
        &mut witness,
        &statement.output,
        rng,
        &mut timings,
    )?;
    Ok((statement, proof, timings))
}

/// Verifies a committed-inputs proof of mode `M` from the statement (commitments and output)
/// and the transparent generators; checks the statement first
/// ([`CommittedStatement::validate_for`]).
///
/// # Errors
/// Statement errors, the first failing step, [`AttentionError::CheckFailed`] (`"openings"`)
/// for a plain opening that fails, [`AttentionError::ZeroKnowledge`] for a failing group
/// equation.
pub fn verify_committed_layer<M: Mode>(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &LayerProof<M>,
) -> Result<VerifierTimings, AttentionError> {
    verify_layer_with::<M>(params, statement.layer(), proof)
}

/// Commits to the inputs in mode `M` ([`commit_inputs_with`]: binding, or hiding), runs the
/// forward pass (linear attention or the fixed-point softmax) and proves it in mode `M`; the
/// statement holds the commitments and the output.
///
/// # Errors
/// As [`prove_committed_layer`] and [`commit_inputs_with`].
pub fn prove_layer_committed_with<M: Mode>(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
    rng: &mut dyn ProverRng,
) -> Result<(CommittedStatement, LayerProof<M>, ProverTimings), AttentionError> {
    let start = Instant::now();
    let (commitments, blinds) = commit_inputs_with::<M>(params, shape, softmax, inputs, rng)?;
    let commit = start.elapsed();
    let (statement, proof, mut timings) =
        prove_committed_layer::<M>(params, shape, mask, softmax, inputs, commitments, &blinds, rng)?;
    timings.commit = commit;
    Ok((statement, proof, timings))
}

/// [`prove_layer_committed_with`] in the plain mode (which draws nothing).
///
/// # Errors
/// As [`prove_layer_committed_with`].
pub fn prove_layer_committed(
    params: &HyraxParams,
    shape: &AttentionShape,
    mask: MaskKind,
    softmax: SoftmaxMode,
    inputs: &AttentionInputs,
) -> Result<(CommittedStatement, CommittedLayerProof, ProverTimings), AttentionError> {
    use ark_std::rand::SeedableRng;
    let mut unused = ark_std::rand::rngs::StdRng::seed_from_u64(0);
    prove_layer_committed_with::<Plain>(params, shape, mask, softmax, inputs, &mut unused)
}

/// [`verify_committed_layer`] in the plain mode.
///
/// # Errors
/// As [`verify_committed_layer`].
pub fn verify_layer_committed(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &CommittedLayerProof,
) -> Result<VerifierTimings, AttentionError> {
    verify_committed_layer::<Plain>(params, statement, proof)
}

/// The batching weights with which [`verify_committed_layer`] in zero knowledge combines the proof's deferred group
/// equations: drawn after the whole proof, its final responses included, is absorbed, so any
/// change to a prover message changes them (what the soundness tests check byte by byte).
///
/// # Errors
/// As [`verify_committed_layer`], for every check made before the group equations.
pub fn layer_zk_batching_weights(
    params: &HyraxParams,
    statement: &CommittedStatement,
    proof: &ZkLayerProof,
) -> Result<Vec<Fr>, AttentionError> {
    let mut timings = VerifierTimings::default();
    let ((masks, mut checks), mut transcript) =
        verify_layer_steps::<Zk>(params, statement.layer(), proof, &mut timings)?;
    masks
        .verify_openings(params, &proof.session_proof, &mut transcript, &mut checks)
        .map_err(|source| AttentionError::ZeroKnowledge { step: "masks", source })?;
    Ok(checks.weights(&transcript))
}

/// Malicious-prover regression (the audit's zero-knowledge forgery, `shared/audit/
/// audit_zk_forgery.rs`, made on the former zero-knowledge layer): the honest prover on the
/// true inputs with a false output `O'[0] = O[0] + 1` in the statement. The chain runs from the
/// true output's claim, so in the plain mode the first sum-check does not match the verifier's
/// `Õ'(r)`, and in zero knowledge the committed claim `y·U` is not what the prover opens. The
/// audit's forgery moved the last responses after the weights were known; that every proof
/// byte changes the weights is checked by
/// `tests/zk_layer.rs::any_changed_proof_byte_fails_to_parse_or_changes_the_batching_weights`.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod cheating_output {
    use super::*;
    use ark_std::rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use std::cell::Cell;
    use zkmha_field::One;

    thread_local! {
        static CHEAT: Cell<bool> = const { Cell::new(false) };
    }

    /// The prover's hook: the statement's output.
    pub(super) fn output(mut output: Vec<Fr>) -> Vec<Fr> {
        if CHEAT.with(Cell::get) {
            output[0] += Fr::one();
        }
        output
    }

    fn attempt<M: Mode>(softmax: SoftmaxMode) -> Result<VerifierTimings, AttentionError> {
        let shape = AttentionShape::new(7, 3, 3, 2).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut draw = |n: usize| (0..n).map(|_| rng.gen_range(-127i64..=127)).collect::<Vec<_>>();
        let inputs = AttentionInputs {
            queries: draw(shape.seq_len * shape.model_width()),
            keys: draw(shape.seq_len * shape.model_width()),
            values: draw(shape.seq_len * shape.value_model_width()),
        };
        let params = layer_hyrax_params::<M>(&shape, softmax).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let (commitments, blinds) =
            commit_inputs_with::<M>(&params, &shape, softmax, &inputs, &mut rng).unwrap();
        let prove = |rng: &mut ChaCha20Rng| {
            prove_committed_layer::<M>(
                &params,
                &shape,
                MaskKind::Causal,
                softmax,
                &inputs,
                commitments.clone(),
                &blinds,
                rng,
            )
            .unwrap_or_else(|e| panic!("{e:?}"))
        };
        let (honest, honest_proof, _) = prove(&mut rng);
        verify_committed_layer::<M>(&params, &honest, &honest_proof).unwrap();
        CHEAT.with(|c| c.set(true));
        let (statement, proof, _) = prove(&mut rng);
        CHEAT.with(|c| c.set(false));
        assert_ne!(statement.output, honest.output, "the cheating prover claims a false output");
        verify_committed_layer::<M>(&params, &statement, &proof)
    }

    fn softmax() -> SoftmaxMode {
        let scale = 4.0 / (3.0 * 127.0 * 127.0 / 3.0);
        SoftmaxMode::Exponential(crate::SoftmaxParams::for_score_scale(scale, 8).unwrap())
    }

    #[test]
    fn a_false_output_proven_from_the_true_one_is_rejected_in_the_plain_mode() {
        for softmax in [SoftmaxMode::Identity, softmax()] {
            assert!(
                matches!(attempt::<Plain>(softmax), Err(AttentionError::Sumcheck { step: "unpadding", .. })),
                "{softmax:?}"
            );
        }
    }

    #[test]
    fn a_false_output_proven_from_the_true_one_is_rejected_in_zero_knowledge() {
        for softmax in [SoftmaxMode::Identity, softmax()] {
            let verdict = attempt::<Zk>(softmax);
            assert!(
                matches!(
                    verdict,
                    Err(AttentionError::CheckFailed { step: "unpadding" }
                        | AttentionError::ZeroKnowledge { .. })
                ),
                "{softmax:?}: {verdict:?}"
            );
        }
    }
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
    use ark_std::rand::SeedableRng;
    use zkmha_field::Fr;

    /// The malicious prover's verdict in mode `M`.
    fn attempt<M: Mode>() -> Result<VerifierTimings, AttentionError> {
        let shape = AttentionShape::new(3, 2, 2, 2).unwrap(); // ŝ = 4: one padded row
        let (mask, softmax) = (MaskKind::Causal, SoftmaxMode::Identity);
        let inputs = AttentionInputs {
            queries: (0..12).map(|k| (k as i64 * 7) % 11 - 5).collect(),
            keys: (0..12).map(|k| (k as i64 * 5) % 13 - 6).collect(),
            values: (0..12).map(|k| (k as i64 * 3) % 7 - 3).collect(),
        };
        let params = layer_hyrax_params::<M>(&shape, softmax).unwrap();
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
        let mut rng = ark_std::rand::rngs::StdRng::seed_from_u64(0);
        let (commitments, blinds) =
            commit_padded_inputs::<M>(&params, &shape, softmax, &padded, &mut rng).unwrap();
        let statement =
            CommittedStatement { shape, mask, softmax, commitments, output: witness.output.clone() };
        let proof = prove_layer_with::<M>(
            &params,
            &shape,
            mask,
            softmax,
            ProverInputs::Committed { commitments: &statement.commitments, tables: &padded, blinds: &blinds },
            &mut witness,
            &statement.output,
            &mut rng,
            &mut ProverTimings::default(),
        )
        .unwrap();
        assert_ne!(statement.output, honest_output);
        verify_committed_layer::<M>(&params, &statement, &proof)
    }

    #[test]
    fn garbage_in_the_padded_rows_of_a_committed_v_is_rejected_in_the_plain_mode() {
        let result = attempt::<Plain>();
        assert!(matches!(result, Err(AttentionError::Sumcheck { step: "padding", .. })), "{result:?}");
    }

    #[test]
    fn garbage_in_the_padded_rows_of_a_committed_v_is_rejected_in_zero_knowledge() {
        let result = attempt::<Zk>();
        assert!(matches!(result, Err(AttentionError::ZeroKnowledge { .. })), "{result:?}");
    }
}
