//! The model's head: the final norm and the LM head after a chain's last layer, proven from
//! the last boundary's commitment to public logits. One implementation for both modes
//! ([`crate::mode`]).
//!
//! ```text
//! tensors    H: s × d, the chain's last boundary (committed by the forward pass, as every
//!            boundary: padded to ŝ × d̂, index i·d̂ + j, MLE point [column ‖ row])
//!            T: the tied embedding table (crate::embedding: one Hyrax row per table row, its
//!            token rows 0..V at the residual stream's scale 2^f_h)
//!            γ, β: the final norm's weights (d̂ each, committed in the key)
//! relation   Y = norm(H)                    (crate::norm: RMSNorm or LayerNorm, Y at 2^f_y,
//!                                            |Y| ≤ 2^15, Y = 0 on its padding)
//!            L(p, v) = Σ_{j<d} Y(P_p, j)·T(v, j)   for the public positions P (strictly
//!            increasing, < s) and every token v < V: exact integers at 2^(f_y + f_h)
//! statement  the norm's shape, the table's shape, P, C(T), C(H), C(γ), C(β), L — absorbed
//!            first, then the proof's commitments: Y, the norm's digit stack G, R_hi, X_hi and
//!            multiplicities
//! proof      the norm (crate::norm::prove_norm_alone: its lookups, then its steps): claims on H, Y, γ, β, G, R_hi, X_hi, ...
//!            r_v ← F^(log V̂), r_p ← F^(log P̂);  the verifier computes L̃(r_v ‖ r_p) itself
//!            Σ_g A(g)·Y(g)·W(g) = L̃(r_v ‖ r_p)    over the norm's grid g = (c, i), degree 3
//!              A(c, i) = a(i) = Σ_p eq(r_p, p)·[P_p = i]      public (Ã(ρ) = Σ_p eq(r_p, p)·eq(ρ_i, P_p))
//!              W(c, i) = w(c) = Σ_{v<V} eq(r_v, v)·T(v, c)    the tied table's rows combined:
//!              C_w = Σ_{v<V} eq(r_v, v)·C_v, the verifier's own MSM over the V token rows
//!            → ρ = (ρ_c ‖ ρ_i): Y(ρ), w(ρ_c)
//!            one multi-point opening of every claim (H, Y, γ, β, w, G, R_hi, X_hi, mults)
//! ```
//!
//! Why it holds over the integers: the norm makes `Y` integers with `|Y| ≤ 2^15`, zero on its
//! padded rows and columns; `T`'s entries are the model owner's integers (`|T| < 2^27` when the
//! key was made, [`crate::embedding::EMBEDDING_ENTRY_BOUND_BITS`]; the verifier cannot check
//! that bound from `C(T)`: it trusts the key's maker for it, as the embedding step does), so
//! every true logit is an integer of magnitude below `2^15·2^27·2^14 = 2^56`, and a public logit is an `i64`: the identity mod p is
//! the identity over the integers. The sum-check's identity is `Σ_p eq(r_p, p)·Σ_v eq(r_v, v)·
//! (Y·Tᵀ)(P_p, v) = L̃(r_v ‖ r_p)`, the multilinear extensions of the true and the public logits
//! at a random point: public logits that differ anywhere agree there with probability at most
//! `(log V̂ + log P̂)/|F|`. `Y`'s padded columns are zero (the norm proves it), so `T`'s padded
//! columns never count; `A` is zero on the padded and unselected rows.
//!
//! What the statement shows: the logits of the positions `P` only — the last boundary stays
//! committed (the chain's last layer's output is a commitment when a head follows).
//!
//! Costs: the prover one norm over `s` rows, the logits `|P|·V·d` multiply-adds and the
//! combination `w` (`V·d`); the verifier `L̃` (`|P|·V`), an MSM over `V` row commitments and the
//! openings. The statement carries the logits (`8·|P|·V` bytes in a chain's file).

use crate::AttentionError;
use crate::block::Boundary;
use crate::chain::opening_claims;
use crate::common::check_tensor_sizes;
use crate::embedding::EmbeddingShape;
use crate::mode::{Mode, ProverRng, product_of, prove_dense, verify_single};
use crate::norm::{
    NormAloneProofOf, NormPolynomial, NormShape, NormWitness, claim_on_grid, compute_norm,
    norm_alone_zk_schedule, norm_polynomial_vars, norm_polynomials, norm_ranges, norm_tables,
    prove_norm_alone, verify_norm_alone,
};
use crate::projection::pad;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, Zero, fr_from_i64};
use zkmha_mle::{DenseMultilinearExtension, eq_table, log2_ceil};
use zkmha_pcs::{HyraxCommitment, HyraxParams, PolynomialTable, split_vars};
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;
use zkmha_zk::{MaskSchedule, ZkProductShape, zk_multi_opening_schedule};

const STEP: &str = "logits";
const STEP_SHAPE: &str = "head proof shape";
const STEP_CLAIMS: &str = "head claims";
const DOMAIN: &[u8] = b"zkmha/head";
const LABEL_MODE: &[u8] = b"head/mode";
const LABEL_SHAPE: &[u8] = b"head/shape";
const LABEL_POSITIONS: &[u8] = b"head/positions";
const LABEL_COMMITMENTS: &[u8] = b"head/commitments";
const LABEL_LOGITS: &[u8] = b"head/logits";
const LABEL_PROOF_COMMITMENTS: &[u8] = b"head/proof-commitments";
const LABEL_VOCABULARY_POINT: &[u8] = b"head/vocabulary-point";
const LABEL_POSITION_POINT: &[u8] = b"head/position-point";

/// The most public logits one head proof carries (`|P|·V`: 256 positions of a 65 536-token
/// vocabulary, 128 MiB as integers).
pub const MAX_PUBLIC_LOGITS: u64 = 1 << 24;

/// The part of a chain key that proves the head: the final norm's constants and the
/// commitments to its weights, and the LM head's table when it is not the key's embedding
/// table (tied embeddings).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HeadKey {
    /// The final norm's constants and the scales
    /// ([`crate::model_quantization::HeadQuantization`]).
    pub quantization: crate::model_quantization::HeadQuantization,
    /// `C(γ)` (`d̂` entries).
    pub scale: HyraxCommitment,
    /// `C(β)` (`d̂` entries), when the norm has a shift.
    pub bias: Option<HyraxCommitment>,
    /// An untied LM head (`lm_head.weight`): its own table, committed as an embedding table
    /// is (one Hyrax row per token row, no position rows) at its own scale; `None` when the
    /// head is tied to the key's embedding table.
    pub lm_head: Option<LmHeadKey>,
}

/// An untied LM head's table `T` (`V × d`, the logits `Y·Tᵀ`): its shape, commitment and
/// scale `2^f_w` (the logits are then at `2^(f_y + f_w)`).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct LmHeadKey {
    /// The table: `V` token rows of width `d`, no position rows.
    pub table: crate::embedding::EmbeddingKey,
    /// `f_w`: `T = T_int / 2^f_w`.
    pub fraction_bits: i32,
}

/// An untied LM head's scale `f_w`: its largest entry at 16 bits, as the layers' weights
/// (the logits `|Y·Tᵀ| < 2^15·2^15·2^14` stay far below the `2^56` the head allows).
///
/// # Errors
/// [`AttentionError::NumericRange`] for a NaN or infinite entry.
pub fn lm_head_fraction_bits(rows: &[f64]) -> Result<i32, AttentionError> {
    let largest = crate::model_quantization::largest(rows, "lm_head.weight")?;
    Ok(crate::model_quantization::fraction_bits(largest, 16).clamp(-32, 48))
}

impl HeadKey {
    /// The logits' fraction bits: `f_y + f_h` (tied: the embedding table is at the residual
    /// stream's scale) or `f_y + f_w` (untied).
    pub fn logit_fraction_bits(&self) -> i32 {
        match &self.lm_head {
            Some(lm_head) => self.quantization.output_fraction_bits + lm_head.fraction_bits,
            None => self.quantization.logit_fraction_bits(),
        }
    }

    /// The LM head's table: its own (untied) or `embedding`'s (tied).
    pub fn table<'a>(
        &'a self,
        embedding: &'a crate::embedding::EmbeddingKey,
    ) -> &'a crate::embedding::EmbeddingKey {
        self.lm_head.as_ref().map_or(embedding, |lm_head| &lm_head.table)
    }

    /// The final norm's shape on `rows` tokens of width `width`.
    pub fn norm_shape(&self, rows: usize, width: usize) -> NormShape {
        self.quantization.norm.block.shape(rows, width)
    }

    /// Checks the norm's constants and the weights' commitments against a model of width
    /// `width`.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self, width: usize) -> Result<(), AttentionError> {
        let norm = self.norm_shape(1, width);
        norm.validate()?;
        let fits = |c: &HyraxCommitment| c.num_vars == norm.column_vars() && c.column_vars().is_ok();
        let bias_fits = match &self.bias {
            Some(b) => norm.bias && fits(b),
            None => !norm.bias,
        };
        if !fits(&self.scale) || !bias_fits {
            return Err(AttentionError::InvalidShape(
                "the final norm's weight commitments do not have the model's width".into(),
            ));
        }
        if let Some(lm_head) = &self.lm_head {
            lm_head.table.validate()?;
            let shape = lm_head.table.shape;
            // |T| < 2^27 at 2^f_w: a scale beyond the model's fixed-point range is not one.
            if shape.position_rows != 0
                || shape.model_width != width as u64
                || !(-32..=48).contains(&lm_head.fraction_bits)
            {
                return Err(AttentionError::InvalidShape(
                    "the LM head's table does not have the model's width, has position rows, or a scale out of range"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// What the verifier of a head proof sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadStatement {
    /// The final norm on the chain's `s` tokens and width `d`.
    pub norm: NormShape,
    /// The LM head's table's shape: the tied embedding table's (its `V` token rows) or an
    /// untied head's own.
    pub table_shape: EmbeddingShape,
    /// `P`: the positions whose logits are public (strictly increasing, each `< s`).
    pub positions: Vec<u64>,
    /// `C(T)`, from the key.
    pub table: HyraxCommitment,
    /// `C(H)`: the chain's last boundary.
    pub hidden: HyraxCommitment,
    /// `C(γ)`, from the key.
    pub scale: HyraxCommitment,
    /// `C(β)`, from the key, when the norm has a shift.
    pub bias: Option<HyraxCommitment>,
    /// `L`: `|P| × V`, row-major, at `2^logit_fraction_bits`.
    pub logits: Vec<i64>,
    /// The logits' scale, from the key (`f_y + f_h` tied, `f_y + f_w` untied): absorbed, so a
    /// key whose scales were edited does not verify a proof made for another.
    pub logit_fraction_bits: i32,
}

/// A polynomial a head proof opens, in the opening's order ([`HeadStatement::polynomials`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadPolynomial {
    /// `H`, the last boundary (statement).
    HiddenState,
    /// `γ` (statement).
    Scale,
    /// `β` (statement).
    Bias,
    /// `w`, the table's token rows combined (the verifier's own commitment).
    CombinedRows,
    /// `Y`, the final norm's output (proof).
    Output,
    /// One of the norm's own polynomials (proof).
    Norm(NormPolynomial),
}

impl HeadStatement {
    /// `log ŝ + log d̂`: `H`'s variables, as a boundary is committed.
    pub fn hidden_vars(&self) -> usize {
        log2_ceil(self.norm.rows) + log2_ceil(self.norm.width)
    }

    /// `log V̂`.
    fn vocabulary_vars(&self) -> usize {
        log2_ceil(usize::try_from(self.table_shape.token_rows).unwrap_or(usize::MAX))
    }

    /// `log P̂`.
    fn position_vars(&self) -> usize {
        log2_ceil(self.positions.len())
    }

    /// Checks the shapes, the positions, the logits' count and every commitment's size (before
    /// anything is allocated from them).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming what does not fit.
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.norm.validate()?;
        self.table_shape.validate()?;
        let invalid = |what: &str| Err(AttentionError::InvalidShape(format!("a head statement's {what}")));
        if self.table_shape.model_width != self.norm.width as u64 {
            return invalid("table is not of the norm's width");
        }
        if self.positions.is_empty()
            || self.positions.len() > self.norm.rows
            || self.positions.windows(2).any(|w| w.first() >= w.get(1))
            || self.positions.iter().any(|&p| p >= self.norm.rows as u64)
        {
            return invalid("positions are not strictly increasing token positions");
        }
        let count = (self.positions.len() as u64).checked_mul(self.table_shape.token_rows);
        if count.is_none_or(|c| c > MAX_PUBLIC_LOGITS) {
            return Err(AttentionError::InvalidShape(format!(
                "a head proof carries at most {MAX_PUBLIC_LOGITS} logits ({} positions × {} tokens)",
                self.positions.len(),
                self.table_shape.token_rows
            )));
        }
        if count != Some(self.logits.len() as u64) {
            return invalid("logits are not one per position and token");
        }
        let fits = |c: &HyraxCommitment, vars: usize| c.num_vars == vars && c.column_vars().is_ok();
        let bias_fits = match &self.bias {
            Some(b) => self.norm.bias && fits(b, self.norm.column_vars()),
            None => !self.norm.bias,
        };
        if !fits(&self.table, self.table_shape.num_vars())
            || self.table.column_vars().ok() != Some(self.table_shape.column_vars())
            || !fits(&self.hidden, self.hidden_vars())
            || !fits(&self.scale, self.norm.column_vars())
            || !bias_fits
        {
            return invalid("commitments do not have its shapes' sizes");
        }
        Ok(())
    }

    /// The polynomials the statement commits to, then the proof's, in the opening's order.
    pub fn polynomials(&self) -> Vec<HeadPolynomial> {
        let mut out = vec![HeadPolynomial::HiddenState, HeadPolynomial::Scale];
        if self.norm.bias {
            out.push(HeadPolynomial::Bias);
        }
        out.push(HeadPolynomial::CombinedRows);
        out.extend(proof_polynomials(&self.norm));
        out
    }

    /// A polynomial's variables.
    fn vars(&self, polynomial: HeadPolynomial) -> Result<usize, AttentionError> {
        Ok(match polynomial {
            HeadPolynomial::HiddenState => self.hidden_vars(),
            HeadPolynomial::Scale | HeadPolynomial::Bias => self.norm.column_vars(),
            HeadPolynomial::CombinedRows => self.table_shape.column_vars(),
            HeadPolynomial::Output => self.norm.grid_vars(),
            HeadPolynomial::Norm(part) => norm_polynomial_vars(&self.norm, part)?,
        })
    }

    fn transcript<M: Mode>(&self, proof_commitments: &[HyraxCommitment]) -> Transcript {
        let mut transcript = Transcript::new(DOMAIN);
        transcript.append_bytes(LABEL_MODE, M::NAME.as_bytes());
        let n = &self.norm;
        for value in [
            n.rows as u64,
            n.width as u64,
            n.epsilon,
            u64::from(n.scale_bits),
            u64::from(n.shift_bits),
            u64::from(n.output_bits),
            u64::from(n.bias),
            u64::from(n.remainder_digits),
            u64::from(n.kind == crate::norm::NormKind::Layer),
            self.table_shape.token_rows,
            self.table_shape.position_rows,
            self.table_shape.model_width,
            // Two's complement of the (possibly negative) scale.
            i64::from(self.logit_fraction_bits) as u64,
        ] {
            transcript.append_u64(LABEL_SHAPE, value);
        }
        transcript.append_u64(LABEL_POSITIONS, self.positions.len() as u64);
        for p in &self.positions {
            transcript.append_u64(LABEL_POSITIONS, *p);
        }
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = self.table.serialize_compressed(&mut bytes);
        let _ = self.hidden.serialize_compressed(&mut bytes);
        let _ = self.scale.serialize_compressed(&mut bytes);
        let _ = self.bias.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        let logits: Vec<u8> = self.logits.iter().flat_map(|l| l.to_le_bytes()).collect();
        transcript.append_bytes(LABEL_LOGITS, &logits);
        let mut bytes = Vec::new();
        let _ = proof_commitments.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_PROOF_COMMITMENTS, &bytes);
        transcript
    }
}

/// The polynomials a head proof commits to: `Y`, then the norm's own.
fn proof_polynomials(norm: &NormShape) -> Vec<HeadPolynomial> {
    std::iter::once(HeadPolynomial::Output)
        .chain(norm_polynomials(norm).into_iter().map(HeadPolynomial::Norm))
        .collect()
}

/// A head proof in mode `M`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HeadProof<M: Mode> {
    /// [`crate::PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// `C(Y)` and the norm's commitments, in [`HeadStatement::polynomials`] order.
    pub commitments: Vec<HyraxCommitment>,
    /// The session's opening (the masks' commitment in zero knowledge).
    pub session: M::SessionCommitment,
    /// The final norm (its lookups a batch of their own).
    pub norm: NormAloneProofOf<M>,
    /// The logits' sum-check.
    pub logits: M::ProductProof,
    /// The opening of every claim.
    pub openings: M::OpeningProof,
    /// The session's close.
    pub session_proof: M::SessionProof,
}

/// `A·Y·W`, `A` public.
fn logits_sum() -> Result<ZkProductShape, AttentionError> {
    product_of(STEP, vec![true, false, false])
}

/// The masks a head proof uses (zero knowledge): the norm's, the logits' sum-check, the
/// opening.
fn schedule(statement: &HeadStatement) -> Result<MaskSchedule, AttentionError> {
    let mut schedule = norm_alone_zk_schedule(&statement.norm)?;
    schedule.push((statement.norm.grid_vars(), 3));
    let sizes =
        statement.polynomials().into_iter().map(|p| statement.vars(p)).collect::<Result<Vec<_>, _>>()?;
    schedule.push(zk_multi_opening_schedule(&sizes));
    Ok(MaskSchedule(schedule))
}

/// The Hyrax generators a head proof of mode `M` needs: every opened polynomial's columns and,
/// in zero knowledge, the masks'.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate.
pub fn head_hyrax_params<M: Mode>(statement: &HeadStatement) -> Result<HyraxParams, AttentionError> {
    statement.validate()?;
    let columns = |c: &HyraxCommitment| c.column_vars().map_err(AttentionError::from);
    let mut vars = 2 * columns(&statement.table)?.max(columns(&statement.hidden)?);
    for polynomial in statement.polynomials() {
        vars = vars.max(statement.vars(polynomial)?);
    }
    if M::HIDING {
        vars = vars.max(2 * schedule(statement)?.generator_vars());
    }
    Ok(HyraxParams::new(vars))
}

/// Column variables of a head's own committed tables (the square layout).
fn column_vars(num_vars: usize) -> usize {
    split_vars(num_vars).1
}

/// Commits to the final norm's weight `values` (`d` of them, padded to `d̂`) in mode `M`.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for another length; [`AttentionError::Commitment`] for
/// too few generators.
pub fn commit_norm_weight<M: Mode>(
    params: &HyraxParams,
    width: usize,
    values: &[i64],
    rng: &mut dyn ProverRng,
) -> Result<(HyraxCommitment, M::Blinds), AttentionError> {
    check_tensor_sizes(&[("the final norm's weight", values.len(), 1, width)])?;
    let vars = log2_ceil(width).max(1);
    let mut padded = values.to_vec();
    padded.resize(1 << vars, 0);
    M::commit_table(params, vars, column_vars(vars), &padded, rng)
}

/// The final norm's integer weights and their blinds, as the prover holds them.
#[derive(Clone, Copy, Debug)]
pub struct HeadWeights<'a, B> {
    /// `γ` (`d`).
    pub scale: &'a [i64],
    /// `β` (`d`; empty without a shift).
    pub bias: &'a [i64],
    /// `γ`'s blinds.
    pub scale_blinds: &'a B,
    /// `β`'s blinds (with a shift).
    pub bias_blinds: Option<&'a B>,
}

/// `Y = norm(H)` and the logits `L(p, v) = Σ_j Y(P_p, j)·T(v, j)` (`|P| × V`, row-major) for the
/// boundary `hidden` (`s × d`) and the padded table (from [`crate::embedding::pad_table`]).
///
/// # Errors
/// As [`compute_norm`]; [`AttentionError::WrongTensorSize`] for a table of another size,
/// [`AttentionError::InvalidShape`] for positions outside the tokens.
pub fn compute_head(
    norm: &NormShape,
    table_shape: &EmbeddingShape,
    padded_table: &[i64],
    hidden: &[i64],
    scale: &[i64],
    bias: &[i64],
    positions: &[u64],
) -> Result<(Vec<i64>, Vec<i64>), AttentionError> {
    let output = compute_norm(norm, hidden, scale, bias)?;
    let logits = compute_logits(norm, table_shape, padded_table, &output, positions)?;
    Ok((output, logits))
}

fn compute_logits(
    norm: &NormShape,
    table_shape: &EmbeddingShape,
    padded_table: &[i64],
    output: &[i64],
    positions: &[u64],
) -> Result<Vec<i64>, AttentionError> {
    table_shape.validate()?;
    let (d, vocabulary) = (norm.width, table_shape.token_rows as usize);
    let stride = 1usize << table_shape.column_vars();
    check_tensor_sizes(&[
        ("the padded embedding table", padded_table.len(), 1 << table_shape.row_vars(), stride),
        ("Y", output.len(), norm.rows, d),
    ])?;
    if table_shape.model_width != d as u64 || positions.iter().any(|&p| p >= norm.rows as u64) {
        return Err(AttentionError::InvalidShape(
            "the head's positions or table do not fit its tokens".into(),
        ));
    }
    let mut logits = vec![0i64; positions.len() * vocabulary];
    for (row, &p) in logits.chunks_mut(vocabulary.max(1)).zip(positions) {
        let y = &output[p as usize * d..(p as usize + 1) * d];
        row.par_iter_mut().enumerate().for_each(|(v, out)| {
            let t = &padded_table[v * stride..v * stride + d];
            // |Y| < 2^15, |T| < 2^27, d ≤ 2^14: below 2^56.
            *out = y.iter().zip(t).map(|(a, b)| a * b).sum();
        });
    }
    Ok(logits)
}

/// `eq(r_v, v)` for the token rows `v < V`.
fn token_weights(vocabulary: usize, point: &[Fr]) -> Vec<(usize, Fr)> {
    eq_table(point).into_iter().take(vocabulary).enumerate().collect()
}

/// `L̃(r_v ‖ r_p)` of the public logits.
fn logits_at(statement: &HeadStatement, r_v: &[Fr], r_p: &[Fr]) -> Fr {
    let vocabulary = statement.table_shape.token_rows as usize;
    let eq_v = eq_table(r_v);
    let eq_p = eq_table(r_p);
    statement
        .logits
        .chunks(vocabulary.max(1))
        .zip(&eq_p)
        .map(|(row, e)| *e * row.iter().zip(&eq_v).map(|(l, w)| fr_from_i64(*l) * w).sum::<Fr>())
        .sum()
}

/// `ã(ρ_i) = Σ_p eq(r_p, p)·eq(ρ_i, P_p)`.
fn selected_rows_at(positions: &[u64], r_p: &[Fr], rho_i: &[Fr]) -> Fr {
    let eq_i = eq_table(rho_i);
    eq_table(r_p)
        .iter()
        .zip(positions)
        .map(|(e, &p)| *e * eq_i.get(p as usize).copied().unwrap_or_else(Fr::zero))
        .sum()
}

/// Proves in mode `M` that `statement.logits` are the head's logits of the committed last
/// boundary `hidden`: `padded_table` is the tied table (from [`crate::embedding::pad_table`])
/// whose commitment `statement.table` is, with its `table_blinds`; `weights` the final norm's.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate or logits that are
/// not the head's (the honest prover refuses), the norm's errors for a hidden state outside its
/// range, and the sum-checks' and openings' errors.
pub fn prove_head<M: Mode>(
    params: &HyraxParams,
    statement: &HeadStatement,
    padded_table: &[i64],
    table_blinds: &M::Blinds,
    hidden: &Boundary<M::Blinds>,
    weights: &HeadWeights<'_, M::Blinds>,
    rng: &mut dyn ProverRng,
) -> Result<HeadProof<M>, AttentionError> {
    statement.validate()?;
    let norm = &statement.norm;
    let (output, logits) = compute_head(
        norm,
        &statement.table_shape,
        padded_table,
        &hidden.values,
        weights.scale,
        weights.bias,
        &statement.positions,
    )?;
    if hidden.commitment != statement.hidden || logits != statement.logits {
        return Err(AttentionError::InvalidShape(
            "the public logits are not the committed hidden state's".into(),
        ));
    }
    prove_unchecked::<M>(params, statement, padded_table, table_blinds, hidden, weights, output, rng)
}

/// [`prove_head`] without the check that the logits are the head's, on the norm output
/// `output` (a cheating prover's protocol, for the malicious-prover tests).
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_unchecked<M: Mode>(
    params: &HyraxParams,
    statement: &HeadStatement,
    padded_table: &[i64],
    table_blinds: &M::Blinds,
    hidden: &Boundary<M::Blinds>,
    weights: &HeadWeights<'_, M::Blinds>,
    output: Vec<i64>,
    rng: &mut dyn ProverRng,
) -> Result<HeadProof<M>, AttentionError> {
    let norm = &statement.norm;
    let witness = NormWitness {
        input: hidden.values.clone(),
        scale: weights.scale.to_vec(),
        bias: weights.bias.to_vec(),
        output,
    };
    let ranges = norm_ranges(norm, &witness)?;
    let padded_output = pad(&witness.output, norm.rows, norm.width, norm.row_vars(), norm.column_vars());
    let mut tables: Vec<(HeadPolynomial, Vec<i64>)> = vec![(HeadPolynomial::Output, padded_output)];
    tables.extend(
        norm_tables(norm, &ranges).into_iter().map(|(part, values)| (HeadPolynomial::Norm(part), values)),
    );
    let mut commitments = Vec::with_capacity(tables.len());
    let mut blinds = Vec::with_capacity(tables.len());
    for (key, values) in &tables {
        let vars = statement.vars(*key)?;
        let (c, b) = M::commit_table(params, vars, column_vars(vars), values, rng)?;
        commitments.push(c);
        blinds.push(b);
    }

    let mut transcript = statement.transcript::<M>(&commitments);
    let t = &mut transcript;
    let (mut session, session_commitment) = M::start_prover(params, &|| schedule(statement), t, rng)?;
    let mut prover = M::prover(params, &mut session, rng);
    let (norm_proof, norm_claims) = prove_norm_alone::<M>(&mut prover, norm, &witness, &ranges, t)?;

    // The logits.
    let r_v = t.challenge_fields(LABEL_VOCABULARY_POINT, statement.vocabulary_vars());
    let r_p = t.challenge_fields(LABEL_POSITION_POINT, statement.position_vars());
    let vocabulary = statement.table_shape.token_rows as usize;
    let token_weights = token_weights(vocabulary, &r_v);
    let combined = crate::embedding::combined_row(&statement.table_shape, padded_table, &token_weights);
    let (grid_vars, columns) = (norm.grid_vars(), norm.column_vars());
    let width = 1usize << columns;
    let mut selected = vec![Fr::zero(); 1 << norm.row_vars()];
    for (e, &p) in eq_table(&r_p).into_iter().zip(&statement.positions) {
        selected[p as usize] += e;
    }
    let broadcast_rows: Vec<Fr> = selected.iter().flat_map(|a| std::iter::repeat_n(*a, width)).collect();
    let broadcast_columns: Vec<Fr> = (0..selected.len()).flat_map(|_| combined.iter().copied()).collect();
    let y = DenseMultilinearExtension::from_i64(grid_vars, &tables[0].1)?;
    let claimed = M::prover_constant(&prover, logits_at(statement, &r_v, &r_p));
    let (logits_proof, outcome) = prove_dense::<M>(
        &mut prover,
        STEP,
        &logits_sum()?,
        vec![
            DenseMultilinearExtension::new(grid_vars, broadcast_rows)?,
            y,
            DenseMultilinearExtension::new(grid_vars, broadcast_columns)?,
        ],
        &claimed,
        t,
    )?;
    let rho = outcome.point.clone();
    let rho_c = rho.get(..columns).ok_or(AttentionError::CheckFailed { step: STEP })?.to_vec();
    let mut keyed = keyed_norm_claims(statement, norm_claims)?;
    keyed.push((HeadPolynomial::Output, outcome.hidden(1, rho.clone(), STEP)?));
    keyed.push((HeadPolynomial::CombinedRows, outcome.hidden(2, rho_c, STEP)?));

    let order = statement.polynomials();
    let claims = opening_claims(&order, keyed, STEP_CLAIMS)?;
    let combined_commitment = statement.table.combine_rows(&token_weights)?;
    let combined_blinds = M::combine_blinds(table_blinds, &token_weights)?;
    let combined = DenseMultilinearExtension::new(statement.table_shape.column_vars(), combined)?;
    let (s, d) = (norm.rows, norm.width);
    let hidden_table = pad(&hidden.values, s, d, log2_ceil(s), log2_ceil(d));
    let bias_blinds = weights.bias_blinds;
    let padded_weight = |values: &[i64]| {
        let mut padded = values.to_vec();
        padded.resize(1 << columns, 0);
        padded
    };
    let (scale_table, bias_table) = (padded_weight(weights.scale), padded_weight(weights.bias));
    let mut polynomials: Vec<(PolynomialTable<'_>, &HyraxCommitment, &M::Blinds)> = vec![
        (
            PolynomialTable::Integers { num_vars: statement.hidden_vars(), values: &hidden_table },
            &statement.hidden,
            &hidden.blinds,
        ),
        (
            PolynomialTable::Integers { num_vars: columns, values: &scale_table },
            &statement.scale,
            weights.scale_blinds,
        ),
    ];
    match (&statement.bias, bias_blinds) {
        (Some(c), Some(b)) => {
            polynomials.push((PolynomialTable::Integers { num_vars: columns, values: &bias_table }, c, b))
        }
        (None, None) => {}
        _ => {
            return Err(AttentionError::InvalidShape(
                "the final norm's shift and its blinds disagree".into(),
            ));
        }
    }
    polynomials.push((PolynomialTable::Field(&combined), &combined_commitment, &combined_blinds));
    for (((key, values), c), b) in tables.iter().zip(&commitments).zip(&blinds) {
        polynomials.push((PolynomialTable::Integers { num_vars: statement.vars(*key)?, values }, c, b));
    }
    let openings = M::prove_openings(&mut prover, params, &polynomials, &claims, t)?;
    drop(polynomials);
    drop(prover);
    let session_proof = M::finish_prover(params, session, t, rng)?;
    Ok(HeadProof {
        version: crate::PROOF_FORMAT_VERSION,
        commitments,
        session: session_commitment,
        norm: norm_proof,
        logits: logits_proof,
        openings,
        session_proof,
    })
}

/// The norm's claims keyed by the head's polynomials (its input's onto `H`'s grid).
fn keyed_norm_claims<V: zkmha_zk::LinearValue>(
    statement: &HeadStatement,
    claims: crate::norm::NormClaims<V>,
) -> Result<Vec<(HeadPolynomial, EvalClaim<V>)>, AttentionError> {
    let mut out = Vec::new();
    for claim in claims.input {
        out.push((HeadPolynomial::HiddenState, claim_on_grid(claim, statement.hidden_vars(), STEP_CLAIMS)?));
    }
    out.push((HeadPolynomial::Output, claims.output));
    out.push((HeadPolynomial::Scale, claims.scale));
    match claims.bias {
        Some(bias) if statement.norm.bias => out.push((HeadPolynomial::Bias, bias)),
        None if !statement.norm.bias => {}
        _ => return Err(AttentionError::CheckFailed { step: STEP_CLAIMS }),
    }
    out.extend(claims.digits.into_iter().map(|c| (HeadPolynomial::Norm(NormPolynomial::Digits), c)));
    out.extend(claims.high_remainders.map(|c| (HeadPolynomial::Norm(NormPolynomial::HighRemainders), c)));
    out.push((HeadPolynomial::Norm(NormPolynomial::InputHigh), claims.input_high));
    out.extend(
        claims
            .multiplicities
            .into_iter()
            .enumerate()
            .map(|(k, c)| (HeadPolynomial::Norm(NormPolynomial::Multiplicities(k)), c)),
    );
    Ok(out)
}

/// Verifies a head proof of mode `M` against its statement.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate,
/// [`AttentionError::UnsupportedVersion`], [`AttentionError::CheckFailed`] (`"head proof
/// shape"` for commitments of the wrong number or size, the norm's steps, `"logits"`,
/// `"openings"`) for a failing check, and (zero knowledge) [`AttentionError::ZeroKnowledge`]
/// for failing group equations.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_head<M: Mode>(
    params: &HyraxParams,
    statement: &HeadStatement,
    proof: &HeadProof<M>,
) -> Result<(), AttentionError> {
    statement.validate()?;
    if proof.version != crate::PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    let norm = &statement.norm;
    let own = proof_polynomials(norm);
    if proof.commitments.len() != own.len() {
        return Err(AttentionError::CheckFailed { step: STEP_SHAPE });
    }
    for (key, commitment) in own.iter().zip(&proof.commitments) {
        let vars = statement.vars(*key)?;
        if commitment.num_vars != vars || commitment.column_vars().ok() != Some(column_vars(vars)) {
            return Err(AttentionError::CheckFailed { step: STEP_SHAPE });
        }
    }
    let mut transcript = statement.transcript::<M>(&proof.commitments);
    let t = &mut transcript;
    let mut session = M::start_verifier(&|| schedule(statement), &proof.session, t)?;
    let mut verifier = M::verifier(params, &mut session);
    let norm_claims = verify_norm_alone::<M>(&mut verifier, norm, &proof.norm, t)?;

    let r_v = t.challenge_fields(LABEL_VOCABULARY_POINT, statement.vocabulary_vars());
    let r_p = t.challenge_fields(LABEL_POSITION_POINT, statement.position_vars());
    let claimed = M::verifier_constant(&verifier, logits_at(statement, &r_v, &r_p));
    let outcome = verify_single::<M>(
        &mut verifier,
        STEP,
        &logits_sum()?,
        norm.grid_vars(),
        &claimed,
        &proof.logits,
        t,
    )?;
    let (rho_c, rho_i) = outcome
        .point
        .split_at_checked(norm.column_vars())
        .ok_or(AttentionError::CheckFailed { step: STEP })?;
    outcome.check_public(0, selected_rows_at(&statement.positions, &r_p, rho_i), STEP)?;
    let mut keyed = keyed_norm_claims(statement, norm_claims)?;
    keyed.push((HeadPolynomial::Output, outcome.hidden(1, outcome.point.clone(), STEP)?));
    keyed.push((HeadPolynomial::CombinedRows, outcome.hidden(2, rho_c.to_vec(), STEP)?));

    let order = statement.polynomials();
    let claims = opening_claims(&order, keyed, STEP_CLAIMS)?;
    let token_weights = token_weights(statement.table_shape.token_rows as usize, &r_v);
    let combined = statement.table.combine_rows(&token_weights)?;
    let mut commitments: Vec<&HyraxCommitment> = vec![&statement.hidden, &statement.scale];
    commitments.extend(statement.bias.as_ref());
    commitments.push(&combined);
    commitments.extend(&proof.commitments);
    M::verify_openings(&mut verifier, params, &commitments, &claims, &proof.openings, t)?;
    drop(verifier);
    M::finish_verifier(params, session, &proof.session_proof, t)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::embedding::{commit_table, pad_table, quantize_table};
    use crate::mode::{Plain, Zk};
    use crate::model_quantization::{HeadQuantization, float_norm};
    use crate::norm::NormKind;
    use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
    use zkmha_nn::NormWeights;

    const F_H: i32 = 10;

    /// A head on random floats: its key's constants, integer weights, table and last boundary,
    /// with the float64 logits beside them.
    struct Setup {
        quantization: HeadQuantization,
        table_shape: EmbeddingShape,
        padded_table: Vec<i64>,
        hidden: Vec<i64>,
        scale: Vec<i64>,
        bias: Vec<i64>,
        rows: usize,
        width: usize,
        float_logits: Vec<f64>,
    }

    fn setup(kind: NormKind, rows: usize, width: usize, vocabulary: u64, positions: u64, seed: u64) -> Setup {
        let mut rng = StdRng::seed_from_u64(seed);
        let hidden: Vec<f64> = (0..rows * width).map(|_| rng.gen_range(-3.0..3.0)).collect();
        let norm = NormWeights {
            kind,
            scale: (0..width).map(|_| rng.gen_range(0.5..1.5)).collect(),
            bias: if kind == NormKind::Layer {
                (0..width).map(|_| rng.gen_range(-0.2..0.2)).collect()
            } else {
                Vec::new()
            },
        };
        let table_rows = (vocabulary + positions) as usize;
        let table: Vec<f64> = (0..table_rows * width).map(|_| rng.gen_range(-0.5..0.5)).collect();
        let quantization = HeadQuantization::calibrate(F_H, width, &norm, 1e-5, &hidden).unwrap();
        let weights = quantization.quantize_norm(&norm).unwrap();
        let table_shape =
            EmbeddingShape { token_rows: vocabulary, position_rows: positions, model_width: width as u64 };
        let padded_table = pad_table(&table_shape, &quantize_table(&table, F_H).unwrap()).unwrap();
        let normalized = float_norm(&norm, 1e-5, &hidden, width);
        let float_logits = normalized
            .chunks(width)
            .flat_map(|y| {
                table
                    .chunks(width)
                    .take(vocabulary as usize)
                    .map(|t| y.iter().zip(t).map(|(a, b)| a * b).sum())
            })
            .collect();
        Setup {
            quantization,
            table_shape,
            padded_table,
            hidden: hidden.iter().map(|h| (h * 2f64.powi(F_H)).round() as i64).collect(),
            scale: weights.scale,
            bias: weights.bias,
            rows,
            width,
            float_logits,
        }
    }

    /// What a (possibly cheating) prover is given.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Cheat {
        /// The honest prover.
        None,
        /// Claims logits one larger at one entry.
        ChangedLogit,
        /// Claims the logits of another table: one entry of the table it combines changed.
        AnotherTable,
        /// Claims the logits of position 0 for the last position.
        AnotherPosition,
        /// Proves from another hidden state under the committed one's commitment.
        AnotherHiddenState,
        /// Proves honestly; the verifier's key states the logits at another scale.
        AnotherScale,
    }

    fn run<M: Mode>(s: &Setup, positions: &[u64], cheat: Cheat) -> Result<Vec<i64>, AttentionError> {
        let mut rng = StdRng::seed_from_u64(99);
        let norm = s.quantization.norm.block.shape(s.rows, s.width);
        let commit_params = HyraxParams::new(24);
        let (table, table_blinds) =
            commit_table::<M>(&commit_params, &s.table_shape, &s.padded_table, &mut rng).unwrap();
        let (scale, scale_blinds) =
            commit_norm_weight::<M>(&commit_params, s.width, &s.scale, &mut rng).unwrap();
        let bias =
            norm.bias.then(|| commit_norm_weight::<M>(&commit_params, s.width, &s.bias, &mut rng).unwrap());
        let hidden_vars = log2_ceil(s.rows) + log2_ceil(s.width);
        let padded_hidden = pad(&s.hidden, s.rows, s.width, log2_ceil(s.rows), log2_ceil(s.width));
        let (commitment, blinds) =
            M::commit_table(&commit_params, hidden_vars, hidden_vars / 2, &padded_hidden, &mut rng).unwrap();
        let mut hidden = Boundary { values: s.hidden.clone(), commitment, blinds };
        let (output, mut logits) =
            compute_head(&norm, &s.table_shape, &s.padded_table, &s.hidden, &s.scale, &s.bias, positions)
                .unwrap();
        let mut combined_table = s.padded_table.clone();
        let mut output = output;
        match cheat {
            Cheat::None | Cheat::AnotherScale => {}
            Cheat::ChangedLogit => logits[0] += 1,
            Cheat::AnotherTable => {
                combined_table[0] += 1;
                logits = compute_logits(&norm, &s.table_shape, &combined_table, &output, positions).unwrap();
            }
            Cheat::AnotherPosition => {
                let first = compute_logits(&norm, &s.table_shape, &s.padded_table, &output, &[0]).unwrap();
                let v = s.table_shape.token_rows as usize;
                let last = logits.len() - v;
                logits[last..].copy_from_slice(&first);
            }
            Cheat::AnotherHiddenState => {
                hidden.values[0] += 1 << 8;
                output = compute_norm(&norm, &hidden.values, &s.scale, &s.bias).unwrap();
                logits = compute_logits(&norm, &s.table_shape, &s.padded_table, &output, positions).unwrap();
            }
        }
        let mut statement = HeadStatement {
            norm,
            table_shape: s.table_shape,
            positions: positions.to_vec(),
            table,
            hidden: hidden.commitment.clone(),
            scale,
            bias: bias.as_ref().map(|(c, _)| c.clone()),
            logits,
            logit_fraction_bits: s.quantization.logit_fraction_bits(),
        };
        let params = head_hyrax_params::<M>(&statement).unwrap();
        let weights = HeadWeights {
            scale: &s.scale,
            bias: &s.bias,
            scale_blinds: &scale_blinds,
            bias_blinds: bias.as_ref().map(|(_, b)| b),
        };
        let proof = if matches!(cheat, Cheat::None | Cheat::AnotherScale) {
            prove_head::<M>(&params, &statement, &s.padded_table, &table_blinds, &hidden, &weights, &mut rng)?
        } else {
            prove_unchecked::<M>(
                &params,
                &statement,
                &combined_table,
                &table_blinds,
                &hidden,
                &weights,
                output,
                &mut rng,
            )?
        };
        // The proof round-trips through its encoding.
        let mut bytes = Vec::new();
        proof.serialize_compressed(&mut bytes).unwrap();
        let decoded = HeadProof::<M>::deserialize_compressed(bytes.as_slice()).unwrap();
        if cheat == Cheat::AnotherScale {
            statement.logit_fraction_bits += 3;
        }
        verify_head::<M>(&params, &statement, &decoded)?;
        Ok(statement.logits)
    }

    /// The logits a plain triple loop gives from the unpadded integers.
    fn reference_logits(s: &Setup, positions: &[u64]) -> Vec<i64> {
        let norm = s.quantization.norm.block.shape(s.rows, s.width);
        let y = compute_norm(&norm, &s.hidden, &s.scale, &s.bias).unwrap();
        let stride = 1usize << s.table_shape.column_vars();
        let mut out = Vec::new();
        for &p in positions {
            for v in 0..s.table_shape.token_rows as usize {
                let mut sum = 0i64;
                for j in 0..s.width {
                    sum += y[p as usize * s.width + j] * s.padded_table[v * stride + j];
                }
                out.push(sum);
            }
        }
        out
    }

    fn round_trips<M: Mode>() {
        for (k, (kind, rows, width, vocabulary, positions)) in [
            (NormKind::Rms, 1, 2, 1, 0),
            (NormKind::Rms, 3, 6, 7, 0),
            (NormKind::Layer, 5, 12, 33, 5),
            (NormKind::Rms, 8, 16, 64, 0),
            (NormKind::Layer, 6, 3, 5, 6),
        ]
        .into_iter()
        .enumerate()
        {
            let s = setup(kind, rows, width, vocabulary, positions, k as u64);
            let all: Vec<u64> = (0..rows as u64).collect();
            let last = [rows as u64 - 1];
            let some: Vec<u64> = (0..rows as u64).step_by(2).collect();
            for chosen in [&last[..], &all, &some] {
                let logits = run::<M>(&s, chosen, Cheat::None).unwrap_or_else(|e| {
                    panic!("{kind:?} {rows}×{width}, V = {vocabulary}, P = {chosen:?}: {e}")
                });
                assert_eq!(logits, reference_logits(&s, chosen));
            }
            // Against float64: the dequantized logits of every position.
            let logits = reference_logits(&s, &all);
            let scale = 2f64.powi(-s.quantization.logit_fraction_bits());
            let (mut error, mut norm) = (0.0, 0.0);
            for (l, f) in logits.iter().zip(&s.float_logits) {
                error += (*l as f64 * scale - f).powi(2);
                norm += f * f;
            }
            assert!((error / norm).sqrt() < 0.01, "{kind:?} {rows}×{width}: {}", (error / norm).sqrt());
        }
    }

    #[test]
    fn heads_round_trip_in_the_plain_mode() {
        round_trips::<Plain>();
    }

    #[test]
    fn heads_round_trip_in_zero_knowledge() {
        round_trips::<Zk>();
    }

    fn rejected<M: Mode>(cheat: Cheat) -> AttentionError {
        let s = setup(NormKind::Layer, 5, 12, 9, 5, 7);
        run::<M>(&s, &[2, 4], cheat).expect_err("a cheating head proof verified")
    }

    fn is_step(error: &AttentionError, wanted: &str) -> bool {
        match error {
            AttentionError::CheckFailed { step }
            | AttentionError::Sumcheck { step, .. }
            | AttentionError::ZeroKnowledge { step, .. } => *step == wanted,
            _ => false,
        }
    }

    /// The cheat is rejected at `plain_step` in the plain mode and by the group equations in
    /// zero knowledge (where every claim is a commitment, so the mismatch surfaces there).
    fn rejected_at(cheat: Cheat, plain_step: &str) {
        let plain = rejected::<Plain>(cheat);
        assert!(is_step(&plain, plain_step), "{cheat:?}: {plain}");
        let zk = rejected::<Zk>(cheat);
        assert!(matches!(zk, AttentionError::ZeroKnowledge { .. }), "{cheat:?}: {zk}");
    }

    #[test]
    fn a_statement_of_another_logit_scale_is_rejected() {
        // The scale is absorbed: an honest proof does not verify under a key whose logits'
        // scale was edited (the integers alike, their meaning 8 times smaller).
        // Every challenge changes, so the first check to fail is the lookups' (plain) — not
        // the statement's validation.
        for error in [rejected::<Plain>(Cheat::AnotherScale), rejected::<Zk>(Cheat::AnotherScale)] {
            assert!(!matches!(error, AttentionError::InvalidShape(_)), "{error}");
        }
    }

    #[test]
    fn a_changed_public_logit_is_rejected() {
        rejected_at(Cheat::ChangedLogit, STEP);
    }

    #[test]
    fn logits_of_another_table_are_rejected() {
        rejected_at(Cheat::AnotherTable, "openings");
    }

    #[test]
    fn logits_of_another_position_are_rejected() {
        rejected_at(Cheat::AnotherPosition, STEP);
    }

    #[test]
    fn logits_of_another_hidden_state_are_rejected() {
        rejected_at(Cheat::AnotherHiddenState, "openings");
    }

    #[test]
    fn statements_that_do_not_fit_are_refused_by_name() {
        let s = setup(NormKind::Rms, 4, 8, 6, 0, 3);
        let norm = s.quantization.norm.block.shape(s.rows, s.width);
        let params = HyraxParams::new(16);
        let mut rng = StdRng::seed_from_u64(1);
        let (table, ()) = commit_table::<Plain>(&params, &s.table_shape, &s.padded_table, &mut rng).unwrap();
        let (scale, ()) = commit_norm_weight::<Plain>(&params, s.width, &s.scale, &mut rng).unwrap();
        let padded = pad(&s.hidden, 4, 8, 2, 3);
        let (hidden, ()) = Plain::commit_table(&params, 5, 2, &padded, &mut rng).unwrap();
        let good = HeadStatement {
            norm,
            table_shape: s.table_shape,
            positions: vec![1, 3],
            table,
            hidden,
            scale,
            bias: None,
            logits: vec![0; 12],
            logit_fraction_bits: 20,
        };
        good.validate().unwrap();
        let refused = |change: &dyn Fn(&mut HeadStatement), what: &str| {
            let mut bad = good.clone();
            change(&mut bad);
            match bad.validate() {
                Err(AttentionError::InvalidShape(message)) => assert!(message.contains(what), "{message}"),
                other => panic!("{what}: {other:?}"),
            }
        };
        refused(&|b| b.positions = vec![3, 1], "positions");
        refused(&|b| b.positions = vec![1, 1], "positions");
        refused(&|b| b.positions = vec![4], "positions");
        refused(&|b| b.positions = Vec::new(), "positions");
        refused(&|b| b.logits.push(0), "logits");
        refused(&|b| b.hidden.num_vars += 1, "commitments");
        refused(&|b| b.bias = Some(b.scale.clone()), "commitments");
        refused(&|b| b.table_shape.model_width = 9, "width");
    }
}
