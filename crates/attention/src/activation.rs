//! An MLP's activation in fixed point, entrywise by one lookup: GELU (erf or tanh form, as the
//! model's config names it: BERT's `gelu`, GPT-2's `gelu_new`) and SiLU (Llama's SwiGLU gate).
//! Like [`crate::rope`], it needs no claim on its output: it ties the committed `X` and `Y`
//! together and hands claims on both (and on the multiplicities) to the caller's openings. One
//! implementation for both modes ([`crate::mode`]); in a block its lookup is one of the layer's
//! batch ([`crate::lookup_batch`]), alone it is a batch of its own ([`prove_activation`]).
//!
//! ```text
//! tensors    X, Y: ŝ × n̂ (index i·n̂ + j, MLE points [column ‖ row]), zero-padded
//! table      T(t) = round(act((t − 2^(b−1)) / 2^a) · 2^o) for t ∈ [0, 2^b) (libm, so every
//!            machine builds the same integers); act(0) = 0 for every kind, so the padding
//!            (X = Y = 0) is a row of the table
//! relation   (X + 2^(b−1), Y) ∈ {(t, T(t))} entrywise  ⇔  X ∈ [−2^(b−1), 2^(b−1)) an integer and
//!            Y = T(X + 2^(b−1)), unique
//! absorb     the shape (kind, s, n, a, o, b); the caller absorbs its commitments to X, Y and the
//!            multiplicities before
//! lookup     logUp over the grid, two columns  → (X + 2^(b−1))(r) = w_0, Y(r) = w_1, m(r_t) = μ
//! claims out X(r) = w_0 − 2^(b−1), Y(r) = w_1, m(r_t) = μ
//! ```
//!
//! Sound for any `X`, `Y` fixed before the lookup's challenges (the caller commits them): a
//! pair outside the table makes the fractional sums differ except with probability
//! `O((ŝn̂ + 2^b)/|F|)` (the witness's and the table's poles, the columns' folding by `γ`) plus
//! the fractional sum-checks' error, and both columns are integers of the table's range, so
//! nothing holds only mod p. The fresh-context review of 2026-11-26 (every cheating pair on small
//! grids exhaustively, one-entry grids in both modes, every shape field, malformed and fuzzed
//! proofs) found no forgery and no panic.

use crate::AttentionError;
use crate::common::check_tensor_sizes;
use crate::lookup_batch::{LookupStatement, PreparedLookup, prove_lookup_parts};
use crate::mode::Mode;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, One};
use zkmha_lookup::{FunctionTable, LookupClaims, LookupTable, zk_lookup_schedule};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::LinearValue;

const STEP: &str = "activation";
const LABEL_SHAPE: &[u8] = b"attention/activation/shape";

/// Largest `b` (one table of at most `2^16` rows).
pub const MAX_ACTIVATION_INPUT_BITS: u32 = 16;
/// Largest `a` and `o`.
pub const MAX_ACTIVATION_FRACTION_BITS: u32 = 24;
/// Largest `s·n` (entries of `X`).
pub const MAX_ACTIVATION_ENTRIES: usize = 1 << 26;

pub use zkmha_nn::Activation;

/// The public shape of one activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActivationShape {
    /// The function.
    pub activation: Activation,
    /// Tokens `s`.
    pub rows: usize,
    /// Width `n` (the MLP's hidden width).
    pub width: usize,
    /// `a`: `X = x·2^a`.
    pub input_fraction_bits: u32,
    /// `o`: `Y = y·2^o`.
    pub output_fraction_bits: u32,
    /// `b`: `X ∈ [−2^(b−1), 2^(b−1))` (`1..=16`).
    pub input_bits: u32,
}

impl ActivationShape {
    /// Checks the shape against the stated limits.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the first limit it breaks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        let bad = |what: String| Err(AttentionError::InvalidShape(what));
        if self.rows == 0 || self.width == 0 || self.rows.saturating_mul(self.width) > MAX_ACTIVATION_ENTRIES
        {
            return bad(format!("an activation takes 1 to 2^26 entries, not {} × {}", self.rows, self.width));
        }
        if self.input_bits == 0 || self.input_bits > MAX_ACTIVATION_INPUT_BITS {
            return bad(format!(
                "an activation's input takes 1 to {MAX_ACTIVATION_INPUT_BITS} bits, not {}",
                self.input_bits
            ));
        }
        if self.input_fraction_bits > MAX_ACTIVATION_FRACTION_BITS
            || self.output_fraction_bits > MAX_ACTIVATION_FRACTION_BITS
        {
            return bad(format!(
                "an activation's scales take at most {MAX_ACTIVATION_FRACTION_BITS} fraction bits"
            ));
        }
        Ok(())
    }

    fn row_vars(&self) -> usize {
        self.rows.next_power_of_two().trailing_zeros() as usize
    }

    fn column_vars(&self) -> usize {
        self.width.next_power_of_two().trailing_zeros() as usize
    }

    /// `log ŝ + log n̂` (of a shape [`ActivationShape::validate`] accepts; every entry point
    /// validates first).
    pub fn grid_vars(&self) -> usize {
        self.row_vars() + self.column_vars()
    }

    /// `2^(b−1)`.
    fn offset(&self) -> i64 {
        1i64 << (self.input_bits - 1)
    }

    /// The table `T(t) = round(act((t − 2^(b−1))/2^a)·2^o)`.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] as [`ActivationShape::validate`].
    pub fn table(&self) -> Result<FunctionTable, AttentionError> {
        self.validate()?;
        let (input_scale, output_scale) = (
            libm::ldexp(1.0, -(self.input_fraction_bits as i32)),
            libm::ldexp(1.0, self.output_fraction_bits as i32),
        );
        let outputs = (0..1i64 << self.input_bits)
            .map(|t| {
                libm::round(self.activation.apply((t - self.offset()) as f64 * input_scale) * output_scale)
                    as i64
            })
            .collect();
        Ok(FunctionTable::new("activation", self.input_bits as usize, outputs)?)
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                usize::from(self.activation.code()),
                self.rows,
                self.width,
                self.input_fraction_bits as usize,
                self.output_fraction_bits as usize,
                self.input_bits as usize,
            ],
        );
    }

    /// `values` (`s × n`) zero-padded to the grid.
    fn pad(&self, values: &[i64]) -> Vec<i64> {
        crate::projection::pad(values, self.rows, self.width, self.row_vars(), self.column_vars())
    }
}

/// The reference activation `Y = T(X + 2^(b−1))` (`s × n`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`] for an input outside `[−2^(b−1), 2^(b−1))`.
pub fn compute_activation(shape: &ActivationShape, input: &[i64]) -> Result<Vec<i64>, AttentionError> {
    let table = shape.table()?;
    check_tensor_sizes(&[("X", input.len(), shape.rows, shape.width)])?;
    input
        .iter()
        .enumerate()
        .map(|(index, &x)| {
            usize::try_from(x.saturating_add(shape.offset())).ok().and_then(|t| table.output(t)).ok_or(
                AttentionError::ValueOutOfRange {
                    tensor: "X",
                    index,
                    value: x,
                    bound_bits: shape.input_bits - 1,
                },
            )
        })
        .collect()
}

/// `X` and `Y` (`s × n`, row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivationWitness {
    /// `X`.
    pub input: Vec<i64>,
    /// `Y`.
    pub output: Vec<i64>,
}

/// The multiplicities of `witness`'s pairs in the table (what the caller commits beside `X`,
/// `Y`), the padding's `ŝn̂ − sn` pairs `(2^(b−1), 0)` included.
///
/// # Errors
/// As [`compute_activation`]; [`AttentionError::Lookup`] for a pair not in the table (an output
/// that is not the activation of its input).
pub fn activation_multiplicities(
    shape: &ActivationShape,
    witness: &ActivationWitness,
) -> Result<Vec<i64>, AttentionError> {
    let table = shape.table()?;
    let [shifted, output] = lookup_columns(shape, witness)?;
    Ok(zkmha_lookup::multiplicities(&table, &[&shifted, &output])?)
}

/// The lookup's two columns over the padded grid: `X + 2^(b−1)` and `Y`.
fn lookup_columns(
    shape: &ActivationShape,
    witness: &ActivationWitness,
) -> Result<[Vec<i64>; 2], AttentionError> {
    check_tensor_sizes(&[
        ("X", witness.input.len(), shape.rows, shape.width),
        ("Y", witness.output.len(), shape.rows, shape.width),
    ])?;
    let shifted = shape.pad(&witness.input).iter().map(|x| x.saturating_add(shape.offset())).collect();
    Ok([shifted, shape.pad(&witness.output)])
}

/// An activation's proof in either mode: its lookup.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ActivationProof<L: CanonicalSerialize + CanonicalDeserialize> {
    /// The pairs' lookup.
    pub lookup: L,
}

/// An [`ActivationProof`] in mode `M`.
pub type ActivationProofOf<M> = ActivationProof<zkmha_lookup::LookupProofOf<M>>;

/// The claims an activation leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivationClaims<V = Fr> {
    /// On `X` (grid).
    pub input: EvalClaim<V>,
    /// On `Y` (grid).
    pub output: EvalClaim<V>,
    /// On the multiplicities (`2^b`).
    pub multiplicities: EvalClaim<V>,
}

/// The masked sum-checks of an activation in zero knowledge: its lookup's fraction depths.
///
/// # Errors
/// As [`ActivationShape::validate`].
pub fn activation_zk_schedule(shape: &ActivationShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    let table = shape.table()?;
    Ok(zk_lookup_schedule(&[(&table, shape.grid_vars())]))
}

fn claims<V: LinearValue>(
    shape: &ActivationShape,
    claims: Vec<LookupClaims<V>>,
    one: &V,
) -> Result<ActivationClaims<V>, AttentionError> {
    let fail = || AttentionError::CheckFailed { step: STEP };
    let [claim] = <[LookupClaims<V>; 1]>::try_from(claims).map_err(|_| fail())?;
    let [shifted, output] = <[V; 2]>::try_from(claim.columns).map_err(|_| fail())?;
    if claim.witness_point.len() != shape.grid_vars() {
        return Err(fail());
    }
    let point = claim.witness_point;
    Ok(ActivationClaims {
        input: EvalClaim {
            point: point.clone(),
            value: shifted.plus_scaled(-Fr::from(shape.offset() as u64), one),
        },
        output: EvalClaim { point, value: output },
        multiplicities: EvalClaim { point: claim.table_point, value: claim.multiplicities },
    })
}

/// An activation's lookup, as the layer's batch states it ([`crate::lookup_batch`]).
///
/// # Errors
/// As [`ActivationShape::validate`].
pub fn activation_lookup_statements(
    shape: &ActivationShape,
) -> Result<Vec<LookupStatement<'static>>, AttentionError> {
    Ok(vec![LookupStatement::new(shape.table()?, shape.grid_vars())])
}

/// Prepares the activation's lookup of `witness` with its multiplicities
/// ([`activation_multiplicities`]; a cheating prover may pass others) for the layer's batch.
///
/// # Errors
/// Bad shapes or tensors.
pub fn activation_lookups<'a>(
    shape: &ActivationShape,
    witness: &ActivationWitness,
    multiplicities: &'a [i64],
) -> Result<Vec<PreparedLookup<'a>>, AttentionError> {
    let [statement] = <[LookupStatement<'static>; 1]>::try_from(activation_lookup_statements(shape)?)
        .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let columns = std::sync::Arc::new(lookup_columns(shape, witness)?);
    let for_entry = std::sync::Arc::clone(&columns);
    Ok(vec![PreparedLookup {
        statement,
        entry: Box::new(move |row, column| for_entry[usize::from(column != 0)][row]),
        evaluate: Box::new(move |point| {
            columns
                .iter()
                .map(|c| Ok(DenseMultilinearExtension::from_i64(point.len(), c)?.evaluate(point)?))
                .collect()
        }),
        multiplicities,
    }])
}

/// The activation's claims from its lookup's (the layer's batch, or its own: the activation
/// sends nothing else); both sides call it.
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a lookup of the wrong structure.
pub fn activation_claims<V: LinearValue>(
    shape: &ActivationShape,
    lookup_claims: Vec<LookupClaims<V>>,
    one: &V,
) -> Result<ActivationClaims<V>, AttentionError> {
    claims(shape, lookup_claims, one)
}

/// Proves the activation of `witness` alone (its lookup a batch of its own) with its
/// multiplicities ([`activation_multiplicities`]; a cheating prover may pass others) in mode
/// `M`. The caller has committed to and absorbed `X`, `Y` and the multiplicities.
///
/// # Errors
/// Bad shapes or tensors, multiplicities of the wrong size, the lookup's errors.
pub fn prove_activation<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &ActivationShape,
    witness: &ActivationWitness,
    multiplicities: &[i64],
    transcript: &mut Transcript,
) -> Result<(ActivationProofOf<M>, ActivationClaims<M::ProverValue>), AttentionError> {
    shape.append_to_transcript(transcript);
    let lookups = activation_lookups(shape, witness, multiplicities)?;
    let (lookup, mut lookup_claims) = prove_lookup_parts::<M>(prover, &[lookups], transcript)?;
    let one = M::prover_constant(prover, Fr::one());
    let lookup_claims = lookup_claims.pop().ok_or(AttentionError::CheckFailed { step: STEP })?;
    Ok((ActivationProof { lookup }, claims(shape, lookup_claims, &one)?))
}

/// Verifies an activation in mode `M`; returns the claims the caller must discharge (openings
/// of `X`, `Y` and the multiplicities).
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookup's errors, [`AttentionError::CheckFailed`] for a
/// lookup of the wrong structure (in zero knowledge the relations' group equations are left in
/// the deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_activation<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &ActivationShape,
    proof: &ActivationProofOf<M>,
    transcript: &mut Transcript,
) -> Result<ActivationClaims<M::Value>, AttentionError> {
    let table = shape.table()?;
    shape.append_to_transcript(transcript);
    let lookup_claims = zkmha_lookup::verify_lookups::<M>(
        verifier,
        &[(&table as &dyn LookupTable, shape.grid_vars())],
        &proof.lookup,
        transcript,
    )?;
    let one = M::verifier_constant(verifier, Fr::one());
    claims(shape, lookup_claims, &one)
}
