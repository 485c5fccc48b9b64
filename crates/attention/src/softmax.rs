//! The softmax slot: a claim on the attention probabilities `A` becomes a claim on the
//! scores.
//!
//! ```text
//! identity (linear attention):  A = QK_M,  so  Ã(p) = v  ⇒  QK̃_M(p) = v   (no proof; masking follows)
//!
//! exponential (fixed-point softmax, `crate::fixed_point`), tensors over t = [t_j ‖ t_i ‖ t_h]:
//! committed  lo, hi, ρ, e, flag (ĥŝŝ), ẑ (ĥŝ), multiplicities m — absorbed after the statement
//! lookup     one logUp into the segmented table
//!              (0, lo, e = T(lo)),  (1, hi, flag = [hi = 0]),  (2, ρ, 0) with ρ < 2^k,  (3, u, 0) with u < 2^tol
//!            where u(i,h) = [i < s]·(Σ_j A − 2^f + δ) sits at j = 0 (0 elsewhere)      → point (r ‖ c)
//!            P sends lo, hi, ρ, e, flag at r and ũ at (r_i, r_h); V checks the lookup's column
//!            claims against them
//! sum-check  β_a, β_b ← V;  one batched sum-check over t:
//!   I1  Σ_t (β_a·eq(p,t) + β_b·eq((r_i,r_h),(t_i,t_h))) · z(t) · e(t) · flag(t)
//!         = β_a·v + β_b·(ũ(r_i,r_h) + (2^f − δ)·Σ_{i<s} eq(r_i, i))                       (A = z·e·flag; row sums)
//!   I2  Σ_t eq(r,t) · z(t) · L(t) = 0,   L = ẑ·2^k + 2^(k−1) − QK̂·M − (lo + 2^16·hi)·2^k − ρ   (kept entries)
//!            → t*; P sends e, flag, ẑ, QK̂, lo, hi, ρ at t*; V evaluates eq, z (closed forms) and L
//! openings   every committed column at r and t* (ẑ at the (i, h) parts), m at the lookup's table
//!            point: one multi-point opening (`Hyrax::open_multi`)
//! claim out  QK̂(t*)  — the masking step is not needed: z enters the products directly
//! ```
//!
//! Masked entries are zero because `z` multiplies `A`; a kept entry's `A` is the table value of
//! its own exponent argument, which the relation ties to its score and the row's shift; the
//! row-sum lookup pins the shift (rows of `A` sum to `2^f ± δ`). Fully masked padded rows
//! (`i ≥ s`) only reach rows of `Ô` that unpadding drops.

use crate::common::sumcheck_error;
use crate::fixed_point::{DIGIT_BITS, SoftmaxParams, SoftmaxWitness};
use crate::structured::{prefix_eq_sum, zeroifier};
use crate::witness::keeps;
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, One, UnreducedSum, Zero, fr_from_i64};
use zkmha_lookup::{
    LookupProof, LookupTable, LookupWitness, Segment, SegmentOutput, SegmentedTable, identity_column,
    prove_lookup_with, verify_lookup, zero_indicator,
};
use zkmha_mle::{DenseMultilinearExtension, eq_evaluation, eq_table, fold_rows};
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, MultiOpeningProof, OpeningClaim, PolynomialTable};
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheck, SumOfProducts, SumcheckClaim, SumcheckInstance, SumcheckProof, prove_batched,
    verify_batched,
};
use zkmha_transcript::Transcript;

const STEP: &str = "softmax";
const LABEL_MODE: &[u8] = b"attention/softmax/mode";
const LABEL_COMMITMENTS: &[u8] = b"attention/softmax/commitments";
const LABEL_LOOKUP_VALUES: &[u8] = b"attention/softmax/lookup-values";
const LABEL_BATCH: &[u8] = b"attention/softmax/batch";
const LABEL_FINAL_VALUES: &[u8] = b"attention/softmax/final-values";

/// What sits between the masked scores and `softmax·V`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SoftmaxMode {
    /// `A = QK_M`: the layer proves linear attention; softmax is **not** proven.
    Identity,
    /// The fixed-point softmax of `crate::fixed_point`, proven with lookups.
    Exponential(SoftmaxParams),
}

impl SoftmaxMode {
    /// The code written into proofs and transcripts.
    pub fn code(self) -> u8 {
        match self {
            SoftmaxMode::Identity => 1,
            SoftmaxMode::Exponential(_) => 2,
        }
    }

    /// Whether the softmax is proven.
    pub fn is_proven(self) -> bool {
        matches!(self, SoftmaxMode::Exponential(_))
    }

    /// Absorbs the mode and its parameters.
    pub(crate) fn append_to_transcript(&self, label: &'static [u8], transcript: &mut Transcript) {
        transcript.append_u64(label, u64::from(self.code()));
        if let SoftmaxMode::Exponential(p) = self {
            transcript.append_shape(
                label,
                &[
                    p.multiplier as usize,
                    p.shift as usize,
                    p.exponent_bits as usize,
                    p.output_bits as usize,
                    p.tolerance_bits as usize,
                ],
            );
        }
    }
}

impl CanonicalSerialize for SoftmaxMode {
    fn serialize_with_mode<W: ark_serialize::Write>(
        &self,
        mut writer: W,
        compress: ark_serialize::Compress,
    ) -> Result<(), ark_serialize::SerializationError> {
        self.code().serialize_with_mode(&mut writer, compress)?;
        if let SoftmaxMode::Exponential(params) = self {
            params.serialize_with_mode(&mut writer, compress)?;
        }
        Ok(())
    }
    fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
        1 + match self {
            SoftmaxMode::Identity => 0,
            SoftmaxMode::Exponential(params) => params.serialized_size(compress),
        }
    }
}

impl ark_serialize::Valid for SoftmaxMode {
    fn check(&self) -> Result<(), ark_serialize::SerializationError> {
        match self {
            SoftmaxMode::Identity => Ok(()),
            SoftmaxMode::Exponential(params) => {
                params.validate().map_err(|_| ark_serialize::SerializationError::InvalidData)
            }
        }
    }
}

impl CanonicalDeserialize for SoftmaxMode {
    fn deserialize_with_mode<R: ark_serialize::Read>(
        mut reader: R,
        compress: ark_serialize::Compress,
        validate: ark_serialize::Validate,
    ) -> Result<Self, ark_serialize::SerializationError> {
        match u8::deserialize_with_mode(&mut reader, compress, validate)? {
            1 => Ok(SoftmaxMode::Identity),
            2 => {
                let params = SoftmaxParams::deserialize_with_mode(&mut reader, compress, validate)?;
                params.validate().map_err(|_| ark_serialize::SerializationError::InvalidData)?;
                Ok(SoftmaxMode::Exponential(params))
            }
            _ => Err(ark_serialize::SerializationError::InvalidData),
        }
    }
}

/// Commitments to the softmax witness (made before the first challenge).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SoftmaxCommitments {
    /// To `lo`.
    pub low: HyraxCommitment,
    /// To `hi`.
    pub high: HyraxCommitment,
    /// To `ρ`.
    pub remainder: HyraxCommitment,
    /// To `e = T(lo)`.
    pub exponential: HyraxCommitment,
    /// To `flag = [hi = 0]`.
    pub flag: HyraxCommitment,
    /// To the row shifts `ẑ`.
    pub shift: HyraxCommitment,
    /// To the lookup's multiplicities.
    pub multiplicities: HyraxCommitment,
}

/// The proof of the exponential softmax.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ExponentialSoftmaxProof {
    /// The lookup.
    pub lookup: LookupProof,
    /// `lo, hi, ρ, e, flag` at `r`, `ũ` at `(r_i, r_h)`.
    pub lookup_values: Vec<Fr>,
    /// The batched sum-check of I1 and I2.
    pub sumcheck: SumcheckProof,
    /// `e, flag, ẑ, QK̂, lo, hi, ρ` at `t*` (`ẑ` at `(t*_i, t*_h)`).
    pub final_values: Vec<Fr>,
    /// Openings of every committed column.
    pub openings: MultiOpeningProof,
}

/// The slot's proof.
#[derive(Clone, Debug, Default, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SoftmaxSlotProof {
    /// Present for the exponential softmax.
    pub exponential: Option<ExponentialSoftmaxProof>,
}

/// The claim the slot leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotOutput {
    /// On the masked scores `QK_M` (identity): the masking step follows.
    MaskedScores(EvalClaim),
    /// On the scores `QK̂` (exponential): the `QKᵀ` step follows directly.
    Scores(EvalClaim),
}

/// The segmented lookup table of the exponential softmax.
///
/// # Errors
/// [`AttentionError::Lookup`] for parameters out of range.
pub fn softmax_table(params: &SoftmaxParams) -> Result<SegmentedTable, AttentionError> {
    Ok(SegmentedTable::new(
        "softmax",
        vec![
            Segment { bits: DIGIT_BITS, output: SegmentOutput::Function(params.exp_table()) },
            Segment { bits: DIGIT_BITS, output: SegmentOutput::IsZero },
            Segment { bits: params.shift as usize, output: SegmentOutput::Zero },
            Segment { bits: params.tolerance_bits as usize, output: SegmentOutput::Zero },
        ],
    )?)
}

/// Variables of the `ĥ × ŝ × ŝ` tensors and of the per-row `ĥ × ŝ` ones.
fn tensor_vars(shape: &AttentionShape) -> (usize, usize) {
    (2 * shape.seq_vars() + shape.head_vars(), shape.seq_vars() + shape.head_vars())
}

/// What the prover keeps from the commitment phase.
pub struct SoftmaxProverData {
    /// The witness.
    pub witness: SoftmaxWitness,
    /// The lookup's multiplicities.
    pub multiplicities: Vec<i64>,
}

/// The lookup's multiplicities for a softmax witness, counted directly from the witness
/// columns (each entry is checked against its segment).
///
/// # Errors
/// [`AttentionError::Lookup`] when a witness row is outside the table (a bug or a range the
/// parameters cannot hold).
pub fn softmax_multiplicities(
    shape: &AttentionShape,
    params: &SoftmaxParams,
    witness: &SoftmaxWitness,
) -> Result<Vec<i64>, AttentionError> {
    let table = softmax_table(params)?;
    let exp = params.exp_table();
    let rows = 1usize << table.row_vars();
    let sp = shape.padded_seq_len();
    let n = witness.low.len();
    let outside = |index: usize, value: i64| {
        AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable { table: "softmax", index, value })
    };
    let in_range = |v: i64, bits: u32| (0..1i64 << bits).contains(&v);
    let counts = (0..n)
        .into_par_iter()
        .fold(
            || Ok(vec![0i64; 4 * rows]),
            |counts: Result<Vec<i64>, AttentionError>, t| {
                let mut counts = counts?;
                let (lo, hi, rho) = (witness.low[t], witness.high[t], witness.remainder[t]);
                if !in_range(lo, DIGIT_BITS as u32) || exp[lo as usize] != witness.exponential[t] {
                    return Err(outside(t, lo));
                }
                if !in_range(hi, DIGIT_BITS as u32) || witness.flag[t] != i64::from(hi == 0) {
                    return Err(outside(n + t, hi));
                }
                if !in_range(rho, params.shift) {
                    return Err(outside(2 * n + t, rho));
                }
                let u = if t % sp == 0 { witness.row_excess.get(t / sp).copied().unwrap_or(0) } else { 0 };
                if !in_range(u, params.tolerance_bits) {
                    return Err(outside(3 * n + t, u));
                }
                counts[lo as usize] += 1;
                counts[rows + hi as usize] += 1;
                counts[2 * rows + rho as usize] += 1;
                counts[3 * rows + u as usize] += 1;
                Ok(counts)
            },
        )
        .reduce(
            || Ok(vec![0i64; 4 * rows]),
            |a, b| {
                let mut a = a?;
                for (x, y) in a.iter_mut().zip(b?) {
                    *x += y;
                }
                Ok(a)
            },
        )?;
    Ok(counts)
}

/// Commits to the softmax witness (computing its multiplicities).
///
/// # Errors
/// As [`softmax_multiplicities`] and [`commit_softmax_data`].
pub fn commit_softmax(
    hyrax: &HyraxParams,
    shape: &AttentionShape,
    params: &SoftmaxParams,
    witness: SoftmaxWitness,
) -> Result<(SoftmaxCommitments, SoftmaxProverData), AttentionError> {
    let multiplicities = softmax_multiplicities(shape, params, &witness)?;
    commit_softmax_data(hyrax, shape, params, SoftmaxProverData { witness, multiplicities })
}

/// Commits to a witness and multiplicities as given (a cheating prover's entry point in tests:
/// nothing is checked here, the verifier rejects what does not fit).
///
/// # Errors
/// [`AttentionError::Commitment`] for generators that are too few or tables of the wrong size.
pub fn commit_softmax_data(
    hyrax: &HyraxParams,
    shape: &AttentionShape,
    params: &SoftmaxParams,
    data: SoftmaxProverData,
) -> Result<(SoftmaxCommitments, SoftmaxProverData), AttentionError> {
    let (n, n_rows) = tensor_vars(shape);
    let table = softmax_table(params)?;
    let w = &data.witness;
    let commit = |vars: usize, values: &[i64]| Hyrax::commit_small(hyrax, vars, values);
    let commitments = SoftmaxCommitments {
        low: commit(n, &w.low)?,
        high: commit(n, &w.high)?,
        remainder: commit(n, &w.remainder)?,
        exponential: commit(n, &w.exponential)?,
        flag: commit(n, &w.flag)?,
        shift: commit(n_rows, &w.shift)?,
        multiplicities: commit(table.num_vars(), &data.multiplicities)?,
    };
    Ok((commitments, data))
}

impl SoftmaxCommitments {
    /// Absorbs the commitments.
    pub fn append_to_transcript(&self, transcript: &mut Transcript) {
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = self.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
    }

    /// Checks every commitment's size against the shape.
    fn validate(&self, shape: &AttentionShape, table_vars: usize) -> Result<(), AttentionError> {
        let (n, n_rows) = tensor_vars(shape);
        let sizes = [
            (&self.low, n),
            (&self.high, n),
            (&self.remainder, n),
            (&self.exponential, n),
            (&self.flag, n),
            (&self.shift, n_rows),
            (&self.multiplicities, table_vars),
        ];
        if sizes.iter().all(|(c, vars)| c.num_vars == *vars) {
            Ok(())
        } else {
            Err(AttentionError::CheckFailed { step: "softmax commitment shape" })
        }
    }
}

/// The lookup's claimed column values from the segment values at `r` (the verifier's check).
fn merged_columns(tag_point: &[Fr], r_j: &[Fr], [lo, hi, rho, e, flag, u]: [Fr; 6]) -> [Fr; 3] {
    let w = eq_table(tag_point);
    let weight = |s: usize| w.get(s).copied().unwrap_or_else(Fr::zero);
    let u_embedded = u * zero_indicator(r_j);
    [
        identity_column(tag_point),
        weight(0) * lo + weight(1) * hi + weight(2) * rho + weight(3) * u_embedded,
        weight(0) * e + weight(1) * flag,
    ]
}

/// `L(t*)` from the values at `t*`.
fn relation_value(params: &SoftmaxParams, [shift, score, lo, hi, rho]: [Fr; 5]) -> Fr {
    let two_k = Fr::from(1u64 << params.shift);
    shift * two_k + Fr::from(1u64 << (params.shift - 1))
        - score * Fr::from(params.multiplier)
        - (lo + Fr::from(1u64 << DIGIT_BITS) * hi) * two_k
        - rho
}

fn evaluate_small(vars: usize, values: &[i64], point: &[Fr]) -> Result<Fr, AttentionError> {
    Ok(DenseMultilinearExtension::from_i64(vars, values)?.evaluate(point)?)
}

/// Several integer columns' MLEs at one point: one `eq` table, one pass per column
/// (delayed reduction), instead of binding each column variable by variable.
fn evaluate_columns(point: &[Fr], columns: &[&[i64]]) -> Vec<Fr> {
    let eq = eq_table(point);
    columns
        .iter()
        .map(|column| {
            eq.par_chunks(1 << 12)
                .zip(column.par_chunks(1 << 12))
                .map(|(weights, values)| {
                    let mut acc = UnreducedSum::new();
                    for (w, v) in weights.iter().zip(values) {
                        if *v != 0 {
                            acc.add_product(w, &fr_from_i64(*v));
                        }
                    }
                    acc
                })
                .reduce(UnreducedSum::new, UnreducedSum::merge)
                .finish()
        })
        .collect()
}

fn mle(vars: usize, values: Vec<Fr>) -> Result<DenseMultilinearExtension, AttentionError> {
    Ok(DenseMultilinearExtension::new(vars, values)?)
}

/// The per-row part `(t_i, t_h)` of a tensor point `[t_j ‖ t_i ‖ t_h]`.
fn row_part(shape: &AttentionShape, point: &[Fr]) -> Vec<Fr> {
    point.get(shape.seq_vars()..).unwrap_or_default().to_vec()
}

/// Everything the exponential prover reads.
pub struct ExponentialProverInput<'a> {
    /// The Hyrax generators.
    pub hyrax: &'a HyraxParams,
    /// The commitments made before the first challenge.
    pub commitments: &'a SoftmaxCommitments,
    /// The witness and multiplicities.
    pub data: &'a SoftmaxProverData,
    /// The scores `QK̂` (`ĥ × ŝ × ŝ`).
    pub scores: &'a [Fr],
}

/// Proves the slot: turns the claim on `A` into a claim on `QK_M` (identity) or `QK̂`.
///
/// # Errors
/// [`AttentionError::CheckFailed`] when the exponential mode lacks its witness, and the
/// errors of the lookup, the sum-check and the openings.
pub fn prove_slot(
    mode: SoftmaxMode,
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &EvalClaim,
    input: Option<ExponentialProverInput<'_>>,
    transcript: &mut Transcript,
) -> Result<(SoftmaxSlotProof, SlotOutput), AttentionError> {
    mode.append_to_transcript(LABEL_MODE, transcript);
    let params = match (mode, input) {
        (SoftmaxMode::Identity, _) => {
            return Ok((SoftmaxSlotProof::default(), SlotOutput::MaskedScores(claim.clone())));
        }
        (SoftmaxMode::Exponential(params), Some(input)) => (params, input),
        (SoftmaxMode::Exponential(_), None) => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    let (params, input) = params;
    let (proof, out) = prove_exponential(shape, mask, &params, claim, &input, transcript)?;
    Ok((SoftmaxSlotProof { exponential: Some(proof) }, SlotOutput::Scores(out)))
}

fn prove_exponential(
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    claim: &EvalClaim,
    input: &ExponentialProverInput<'_>,
    transcript: &mut Transcript,
) -> Result<(ExponentialSoftmaxProof, EvalClaim), AttentionError> {
    params.validate()?;
    let (n, n_rows) = tensor_vars(shape);
    let (sp, s) = (shape.padded_seq_len(), shape.seq_len);
    let w = &input.data.witness;
    let table = softmax_table(params)?;

    // Lookup, over the four blocks (lo, e), (hi, flag), (ρ, 0), (u at j = 0, 0), never
    // materialized; the merged columns' values at the leaf point come from the blocks' values.
    // Padded rows (i ≥ s) hold 0 in the witness already (fixed_point::row_witness).
    let row_excess = &w.row_excess;
    let block_size = 1usize << n;
    let entry = |row: usize, column: usize| -> i64 {
        let (block, t) = (row >> n, row & (block_size - 1));
        match (column, block) {
            (0, _) => block as i64,
            (1, 0) => w.low[t],
            (1, 1) => w.high[t],
            (1, 2) => w.remainder[t],
            (1, _) if t % sp == 0 => row_excess[t / sp],
            (1, _) => 0,
            (_, 0) => w.exponential[t],
            (_, 1) => w.flag[t],
            _ => 0,
        }
    };
    let block_values = std::cell::OnceCell::new();
    let evaluate = |point: &[Fr]| -> Result<Vec<Fr>, zkmha_lookup::LookupError> {
        let (r, tag_point) = point.split_at(n.min(point.len()));
        let mut values = evaluate_columns(r, &[&w.low, &w.high, &w.remainder, &w.exponential, &w.flag]);
        let r_rows = row_part(shape, r);
        let u = DenseMultilinearExtension::from_i64(n_rows, row_excess)?.evaluate(&r_rows)?;
        values.push(u);
        let [lo, hi, rho, e, flag, u] = <[Fr; 6]>::try_from(values.clone())
            .map_err(|_| zkmha_lookup::LookupError::MalformedProof("block values"))?;
        let merged = merged_columns(tag_point, &r[..shape.seq_vars()], [lo, hi, rho, e, flag, u]);
        let _ = block_values.set(values);
        Ok(merged.to_vec())
    };
    let witness = LookupWitness { num_vars: n + 2, entry: &entry, evaluate: &evaluate };
    let (lookup, lookup_claims) =
        prove_lookup_with(&table, &witness, &input.data.multiplicities, transcript)?;
    let big_point = lookup_claims.columns.first().map(|c| c.point.clone()).unwrap_or_default();
    let (r, _) = big_point.split_at(n.min(big_point.len()));
    let r_rows = row_part(shape, r);
    let lookup_values = block_values.get().cloned().ok_or(AttentionError::CheckFailed { step: STEP })?;
    transcript.append_fields(LABEL_LOOKUP_VALUES, &lookup_values);

    // Batched sum-check of I1 (probabilities and row sums) and I2 (the exponent relation).
    let betas = transcript.challenge_fields(LABEL_BATCH, 2);
    let (beta_a, beta_b) = (betas[0], betas[1]);
    let eq_p = eq_table(&claim.point);
    let eq_rows = eq_table(&r_rows);
    let combined: Vec<Fr> =
        eq_p.par_iter().enumerate().map(|(t, e)| beta_a * e + beta_b * eq_rows[t / sp]).collect();
    let zeros: Vec<Fr> = (0..1usize << n)
        .into_par_iter()
        .map(|t| if keeps(mask, s, (t / sp) % sp, t % sp) { Fr::one() } else { Fr::zero() })
        .collect();
    let to_fr = |v: &[i64]| -> Vec<Fr> { v.par_iter().map(|&x| fr_from_i64(x)).collect() };
    let two_k = Fr::from(1u64 << params.shift);
    let half = Fr::from(1u64 << (params.shift - 1));
    let multiplier = Fr::from(params.multiplier);
    let digit = Fr::from(1u64 << DIGIT_BITS);
    let relation: Vec<Fr> = (0..1usize << n)
        .into_par_iter()
        .map(|t| {
            fr_from_i64(w.shift[t / sp]) * two_k + half
                - input.scores[t] * multiplier
                - (fr_from_i64(w.low[t]) + digit * fr_from_i64(w.high[t])) * two_k
                - fr_from_i64(w.remainder[t])
        })
        .collect();
    let claim_one = beta_a * claim.value
        + beta_b
            * (lookup_values[5]
                + Fr::from((params.one() - params.tolerance()) as u64)
                    * prefix_eq_sum(s, &r_rows[..shape.seq_vars()]));
    let mut probabilities = ProductSumcheck::new(
        SumOfProducts::product(4).map_err(sumcheck_error(STEP))?,
        vec![
            mle(n, combined)?,
            mle(n, zeros.clone())?,
            mle(n, to_fr(&w.exponential))?,
            mle(n, to_fr(&w.flag))?,
        ],
    )
    .map_err(sumcheck_error(STEP))?;
    let mut exponents = ProductSumcheck::new(
        SumOfProducts::product(3).map_err(sumcheck_error(STEP))?,
        vec![mle(n, eq_table(r))?, mle(n, zeros)?, mle(n, relation)?],
    )
    .map_err(sumcheck_error(STEP))?;
    let instances: Vec<&mut dyn SumcheckInstance> = vec![&mut probabilities, &mut exponents];
    let (sumcheck, reduced) =
        prove_batched(instances, &[claim_one, Fr::zero()], transcript).map_err(sumcheck_error(STEP))?;
    let t_star = reduced.point.clone();
    let t_rows = row_part(shape, &t_star);
    let [e_t, flag_t, lo_t, hi_t, rho_t] = <[Fr; 5]>::try_from(evaluate_columns(
        &t_star,
        &[&w.exponential, &w.flag, &w.low, &w.high, &w.remainder],
    ))
    .map_err(|_| AttentionError::CheckFailed { step: STEP })?;
    let score_t = fold_rows(input.scores, 1, &t_star).first().copied().unwrap_or_else(Fr::zero);
    let final_values =
        vec![e_t, flag_t, evaluate_small(n_rows, &w.shift, &t_rows)?, score_t, lo_t, hi_t, rho_t];
    transcript.append_fields(LABEL_FINAL_VALUES, &final_values);

    // Openings.
    let c = input.commitments;
    let integers = |num_vars, values| PolynomialTable::Integers { num_vars, values };
    let polynomials = [
        integers(n, &w.low),
        integers(n, &w.high),
        integers(n, &w.remainder),
        integers(n, &w.exponential),
        integers(n, &w.flag),
        integers(n_rows, &w.shift),
        integers(table.num_vars(), &input.data.multiplicities),
    ];
    let commitments = commitment_list(c);
    let items: Vec<(PolynomialTable<'_>, &HyraxCommitment)> =
        polynomials.iter().copied().zip(commitments.iter().copied()).collect();
    let claims =
        opening_claims(r, &lookup_values, &t_star, &t_rows, &final_values, &lookup_claims.multiplicities);
    let openings = Hyrax::open_multi(&items, &claims, transcript)?;
    let out = EvalClaim { point: t_star, value: final_values[3] };
    Ok((ExponentialSoftmaxProof { lookup, lookup_values, sumcheck, final_values, openings }, out))
}

fn commitment_list(c: &SoftmaxCommitments) -> [&HyraxCommitment; 7] {
    [&c.low, &c.high, &c.remainder, &c.exponential, &c.flag, &c.shift, &c.multiplicities]
}

/// The opening claims: each tensor column at `r` and `t*`, `ẑ` at `t*`'s row part, `m` at the
/// lookup's table point. Values: `lookup_values = [lo, hi, ρ, e, flag, ũ]` at `r`,
/// `final_values = [e, flag, ẑ, QK̂, lo, hi, ρ]` at `t*`.
#[deny(clippy::indexing_slicing)]
fn opening_claims(
    r: &[Fr],
    lookup_values: &[Fr],
    t_star: &[Fr],
    t_rows: &[Fr],
    final_values: &[Fr],
    multiplicity: &EvalClaim,
) -> Vec<OpeningClaim> {
    let at = |v: &[Fr], k: usize| v.get(k).copied().unwrap_or_else(Fr::zero);
    let claim = |polynomial: usize, point: &[Fr], value: Fr| OpeningClaim {
        polynomial,
        point: point.to_vec(),
        value,
    };
    vec![
        claim(0, r, at(lookup_values, 0)),
        claim(0, t_star, at(final_values, 4)),
        claim(1, r, at(lookup_values, 1)),
        claim(1, t_star, at(final_values, 5)),
        claim(2, r, at(lookup_values, 2)),
        claim(2, t_star, at(final_values, 6)),
        claim(3, r, at(lookup_values, 3)),
        claim(3, t_star, at(final_values, 0)),
        claim(4, r, at(lookup_values, 4)),
        claim(4, t_star, at(final_values, 1)),
        claim(5, t_rows, at(final_values, 2)),
        claim(6, &multiplicity.point, multiplicity.value),
    ]
}

/// Verifies the slot; returns the claim on `QK_M` (identity) or `QK̂` (exponential).
///
/// # Errors
/// [`AttentionError::CheckFailed`] naming the failing check, or the lookup's, sum-check's or
/// openings' errors.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_slot(
    mode: SoftmaxMode,
    shape: &AttentionShape,
    mask: MaskKind,
    claim: &EvalClaim,
    proof: &SoftmaxSlotProof,
    exponential: Option<(&HyraxParams, &SoftmaxCommitments)>,
    transcript: &mut Transcript,
) -> Result<SlotOutput, AttentionError> {
    mode.append_to_transcript(LABEL_MODE, transcript);
    match (mode, &proof.exponential, exponential) {
        (SoftmaxMode::Identity, None, _) => Ok(SlotOutput::MaskedScores(claim.clone())),
        (SoftmaxMode::Exponential(params), Some(proof), Some((hyrax, commitments))) => {
            verify_exponential(shape, mask, &params, claim, proof, hyrax, commitments, transcript)
                .map(SlotOutput::Scores)
        }
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}

#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
fn verify_exponential(
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    claim: &EvalClaim,
    proof: &ExponentialSoftmaxProof,
    hyrax: &HyraxParams,
    commitments: &SoftmaxCommitments,
    transcript: &mut Transcript,
) -> Result<EvalClaim, AttentionError> {
    params.validate()?;
    let (n, _) = tensor_vars(shape);
    let s = shape.seq_len;
    let table = softmax_table(params)?;
    commitments.validate(shape, table.num_vars())?;
    if claim.point.len() != n {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let lookup_claims = verify_lookup(&table, n + 2, &proof.lookup, transcript)?;
    let [lo, hi, rho, e, flag, u] = proof.lookup_values.as_slice() else {
        return Err(AttentionError::CheckFailed { step: "softmax lookup values" });
    };
    let big_point = lookup_claims.columns.first().map(|c| c.point.clone()).unwrap_or_default();
    if big_point.len() != n + 2 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let (r, tag_point) = big_point.split_at(n);
    let r_rows = row_part(shape, r);
    let r_j = r.get(..shape.seq_vars()).unwrap_or_default();
    let expected = merged_columns(tag_point, r_j, [*lo, *hi, *rho, *e, *flag, *u]);
    let claimed: Vec<Fr> = lookup_claims.columns.iter().map(|c| c.value).collect();
    if claimed != expected {
        return Err(AttentionError::CheckFailed { step: "softmax lookup columns" });
    }
    transcript.append_fields(LABEL_LOOKUP_VALUES, &proof.lookup_values);

    let betas = transcript.challenge_fields(LABEL_BATCH, 2);
    let [beta_a, beta_b] = betas.as_slice() else {
        return Err(AttentionError::CheckFailed { step: STEP });
    };
    let r_i = r_rows.get(..shape.seq_vars()).unwrap_or_default();
    let claim_one = *beta_a * claim.value
        + *beta_b * (*u + Fr::from((params.one() - params.tolerance()) as u64) * prefix_eq_sum(s, r_i));
    let claims = [SumcheckClaim::new(n, 4, claim_one), SumcheckClaim::new(n, 3, Fr::zero())];
    let reduced = verify_batched(&claims, &proof.sumcheck, transcript).map_err(sumcheck_error(STEP))?;
    let [f_e, f_flag, f_shift, f_score, f_lo, f_hi, f_rho] = proof.final_values.as_slice() else {
        return Err(AttentionError::CheckFailed { step: "softmax final values" });
    };
    let t_star = reduced.point.clone();
    let t_rows = row_part(shape, &t_star);
    let (t_j, t_i) = (
        t_star.get(..shape.seq_vars()).unwrap_or_default(),
        t_rows.get(..shape.seq_vars()).unwrap_or_default(),
    );
    let z = zeroifier(mask, s, t_i, t_j);
    let combined =
        *beta_a * eq_evaluation(&claim.point, &t_star)? + *beta_b * eq_evaluation(&r_rows, &t_rows)?;
    let relation = relation_value(params, [*f_shift, *f_score, *f_lo, *f_hi, *f_rho]);
    reduced
        .check(&[combined * z * f_e * f_flag, eq_evaluation(r, &t_star)? * z * relation])
        .map_err(|_| AttentionError::CheckFailed { step: "softmax sum-check" })?;
    transcript.append_fields(LABEL_FINAL_VALUES, &proof.final_values);

    let list = commitment_list(commitments);
    let claims = opening_claims(
        r,
        &proof.lookup_values,
        &t_star,
        &t_rows,
        &proof.final_values,
        &lookup_claims.multiplicities,
    );
    Hyrax::verify_multi(hyrax, &list, &claims, &proof.openings, transcript)
        .map_err(|_| AttentionError::CheckFailed { step: "softmax openings" })?;
    Ok(EvalClaim { point: t_star, value: *f_score })
}
