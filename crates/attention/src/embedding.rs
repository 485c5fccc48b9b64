//! Token embeddings: the first hidden state `H_0` of a chain of layers proven to be rows of the
//! model's committed embedding table, for public token ids. One implementation for both modes
//! ([`crate::mode`]).
//!
//! ```text
//! tables     T: the embedding table, R × d: the token rows 0..V, then (GPT-2) the position
//!            rows V..V+P; committed once by the model owner, padded to R̂ × d̂ (index v·d̂ + j,
//!            MLE point [column ‖ row], little-endian), one Hyrax row per table row:
//!            C(T) = (C_v)_v, C_v = Σ_j T(v, j)·G_j (+ b_v·H hiding)
//!            H: s × d, the chain's first boundary (the first layer's residual commitment),
//!            padded to ŝ × d̂ as the block commits it
//! relation   H(i, j) = T(id_i, j) [+ T(V + i, j) with positions] for i < s, j < d;
//!            H = 0 on its padded rows, and on its padded columns as T is
//! statement  the shape (V, P, d), the token ids, C(T), C(H) — absorbed first
//! proof      r = (r_c ‖ r_i) ← F^(log d̂ + log ŝ);  P sends y = H̃(r) (absorbed)
//!            c(v) = Σ_{i<s} eq(r_i, i)·([id_i = v] [+ [V + i = v]])   (public, ≤ 2s non-zeros)
//!            w = Σ_v c(v)·T(v, ·) ∈ F^d̂, committed by C_w = Σ_v c(v)·C_v — the verifier's
//!              own MSM over ≤ 2s rows of the key (hiding: blind Σ_v c(v)·b_v, the prover's)
//!            one multi-point opening: H at r and w at r_c, both to y
//! ```
//!
//! Sound by Schwartz–Zippel: `w̃(r_c) = Σ_{i<s} eq(r_i, i)·Σ_k T̃(r_c, row_k(i)) = G(r)`, where
//! `G` is the multilinear extension of the table the relation says `H` is (its rows `≥ s`
//! zero); `C_w` binds `w` (Hyrax's binding), so both openings to one `y` give `H̃(r) = G(r)`. If
//! `H` differs anywhere — a real entry, a padded row or a padded column — then `H̃ ≠ G` and
//! they agree at the random `r` with probability at most `(log d̂ + log ŝ)/|F|`. `H`'s entries
//! are integers because `T`'s are (the model owner committed them) and the relation fixes every
//! entry of `H`: no range check is needed here (the first layer's norm range-checks `H` again).
//!
//! Costs: the prover `O(s·d)` and two small openings; the verifier an MSM over at most `2s`
//! rows and the openings; the key one point per table row (at most [`MAX_EMBEDDING_ROWS`],
//! the decoder's limit of rows in one commitment: larger vocabularies would need the table
//! split).
//!
//! Zero knowledge: `y` and the openings are hidden as every step's are; the token ids are public
//! (they are the statement).

use crate::AttentionError;
use crate::block::Boundary;
use crate::common::check_tensor_sizes;
use crate::mode::{Mode, ProverRng};
use crate::projection::pad;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use std::collections::BTreeMap;
use zkmha_field::{Fr, Zero, fr_from_i64};
use zkmha_mle::{DenseMultilinearExtension, eq_table, log2_ceil};
use zkmha_pcs::{HyraxCommitment, HyraxParams, OpeningClaim, PolynomialTable};
use zkmha_transcript::Transcript;
use zkmha_zk::{MaskSchedule, zk_multi_opening_schedule};

const STEP: &str = "embedding";
const STEP_SHAPE: &str = "embedding proof shape";
const DOMAIN: &[u8] = b"zkmha/embedding";
const LABEL_MODE: &[u8] = b"embedding/mode";
const LABEL_SHAPE: &[u8] = b"embedding/shape";
const LABEL_IDS: &[u8] = b"embedding/token-ids";
const LABEL_COMMITMENTS: &[u8] = b"embedding/commitments";
const LABEL_POINT: &[u8] = b"embedding/hidden-point";
const LABEL_HIDDEN: &[u8] = b"embedding/hidden-value";

/// The largest table: `R̂·d̂ ≤ 2^30` entries.
pub const MAX_EMBEDDING_VARS: usize = 30;
/// The most table rows (tokens and positions): `2^18`, the most rows one decoded commitment
/// holds (GPT-2's 50 257 + 1 024, SmolLM2's 49 152, Llama 2's 32 000, Llama 3's 128 256,
/// Qwen2's 151 936, Gemma 3's 262 144). The key holds one point per row (8 MiB at 2^18); the
/// head's verifier combines every token row in one MSM.
pub const MAX_EMBEDDING_ROWS: u64 = 1 << 18;
/// The most tokens one proof embeds (the block's limit).
pub const MAX_EMBEDDED_TOKENS: usize = crate::shape::MAX_SEQ_LEN;

/// The public shape of an embedding table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct EmbeddingShape {
    /// `V`: the token rows (the vocabulary).
    pub token_rows: u64,
    /// `P`: the position rows after them (GPT-2's learned positions; 0 for rotary models).
    pub position_rows: u64,
    /// `d`: the model's width.
    pub model_width: u64,
}

impl EmbeddingShape {
    /// `R = V + P`.
    pub fn rows(&self) -> u64 {
        self.token_rows.saturating_add(self.position_rows)
    }

    /// `log R̂`.
    pub fn row_vars(&self) -> usize {
        log2_ceil(usize::try_from(self.rows()).unwrap_or(usize::MAX))
    }

    /// `log d̂`.
    pub fn column_vars(&self) -> usize {
        log2_ceil(usize::try_from(self.model_width).unwrap_or(usize::MAX))
    }

    /// `log R̂ + log d̂`: the committed table's variables.
    pub fn num_vars(&self) -> usize {
        self.row_vars() + self.column_vars()
    }

    /// Checks the shape against the limits.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for an empty table or one beyond
    /// [`MAX_EMBEDDING_VARS`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.token_rows == 0 || self.model_width < 2 {
            return Err(AttentionError::InvalidShape(
                "an embedding table needs tokens and at least two columns".into(),
            ));
        }
        if self.model_width > crate::model_layer::MAX_MODEL_WIDTH as u64
            || self.rows() > MAX_EMBEDDING_ROWS
            || self.num_vars() > MAX_EMBEDDING_VARS
        {
            return Err(AttentionError::InvalidShape(format!(
                "an embedding table of {} rows × {} columns exceeds the limit of {MAX_EMBEDDING_ROWS} rows (tokens and positions) and 2^{MAX_EMBEDDING_VARS} padded entries",
                self.rows(),
                self.model_width
            )));
        }
        Ok(())
    }

    /// The table rows token `i` adds up: `[id_i]`, and `V + i` with positions.
    fn token_table_rows(&self, ids: &[u64]) -> Result<Vec<(u64, Option<u64>)>, AttentionError> {
        if ids.is_empty() || ids.len() > MAX_EMBEDDED_TOKENS {
            return Err(AttentionError::InvalidShape(format!(
                "an embedding proof takes 1 to {MAX_EMBEDDED_TOKENS} tokens, not {}",
                ids.len()
            )));
        }
        if self.position_rows > 0 && ids.len() as u64 > self.position_rows {
            return Err(AttentionError::InvalidShape(format!(
                "{} tokens exceed the model's {} positions",
                ids.len(),
                self.position_rows
            )));
        }
        ids.iter()
            .enumerate()
            .map(|(i, &id)| {
                if id >= self.token_rows {
                    return Err(AttentionError::InvalidShape(format!(
                        "token id {id} (position {i}) is outside the vocabulary of {} tokens",
                        self.token_rows
                    )));
                }
                Ok((id, (self.position_rows > 0).then(|| self.token_rows + i as u64)))
            })
            .collect()
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_u64(LABEL_SHAPE, self.token_rows);
        transcript.append_u64(LABEL_SHAPE, self.position_rows);
        transcript.append_u64(LABEL_SHAPE, self.model_width);
    }
}

/// The largest `|entry|` of a quantized table: `2^27`, so a token row plus a position row
/// stays inside the first layer's norm input range (`±2^28`).
pub const EMBEDDING_ENTRY_BOUND_BITS: u32 = crate::norm::NORM_INPUT_BOUND_BITS - 1;

/// A table of floats at the residual stream's scale: `round(x·2^f_h)`.
///
/// # Errors
/// [`AttentionError::NumericRange`] for a value that is not finite or beyond
/// [`EMBEDDING_ENTRY_BOUND_BITS`] at that scale.
pub fn quantize_table(values: &[f64], fraction_bits: i32) -> Result<Vec<i64>, AttentionError> {
    crate::model_quantization::scale(values, fraction_bits, EMBEDDING_ENTRY_BOUND_BITS, "E")
}

/// The part of a chain's verifier key that proves its first hidden state from token ids: the
/// table's shape and commitment (at the chain's residual stream scale).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct EmbeddingKey {
    /// The table's shape.
    pub shape: EmbeddingShape,
    /// `C(T)`.
    pub commitment: HyraxCommitment,
}

impl EmbeddingKey {
    /// Checks the shape against the limits and the commitment's size and layout.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        if self.commitment.num_vars != self.shape.num_vars()
            || self.commitment.column_vars().ok() != Some(table_column_vars(&self.shape))
        {
            return Err(AttentionError::InvalidShape(
                "the embedding table's commitment does not have its shape's size".into(),
            ));
        }
        Ok(())
    }
}

/// What the verifier of an embedding proof sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingStatement {
    /// The table's shape.
    pub shape: EmbeddingShape,
    /// The token ids (`s` of them), public.
    pub ids: Vec<u64>,
    /// `C(T)`, from the model's key.
    pub table: HyraxCommitment,
    /// `C(H)`: the first layer's residual commitment.
    pub hidden: HyraxCommitment,
}

impl EmbeddingStatement {
    /// `log ŝ + log d̂`: `H`'s variables, as the block commits it.
    pub fn hidden_vars(&self) -> usize {
        log2_ceil(self.ids.len()) + self.shape.column_vars()
    }

    /// Checks the shape, the ids and both commitments' sizes (before anything is allocated from
    /// them).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for a shape, ids or commitments that do not fit.
    pub fn validate(&self) -> Result<(), AttentionError> {
        self.shape.validate()?;
        self.shape.token_table_rows(&self.ids)?;
        let fits = |c: &HyraxCommitment, vars: usize| c.num_vars == vars && c.column_vars().is_ok();
        // One commitment row per table row: the verifier combines the rows the ids name.
        let one_row_per_token = self.table.column_vars().ok() == Some(table_column_vars(&self.shape));
        if !fits(&self.table, self.shape.num_vars())
            || !one_row_per_token
            || !fits(&self.hidden, self.hidden_vars())
        {
            return Err(AttentionError::InvalidShape(
                "the embedding table's or the hidden state's commitment does not have the statement's size"
                    .into(),
            ));
        }
        Ok(())
    }

    fn transcript<M: Mode>(&self) -> Transcript {
        let mut transcript = Transcript::new(DOMAIN);
        transcript.append_bytes(LABEL_MODE, M::NAME.as_bytes());
        self.shape.append_to_transcript(&mut transcript);
        transcript.append_u64(LABEL_IDS, self.ids.len() as u64);
        for id in &self.ids {
            transcript.append_u64(LABEL_IDS, *id);
        }
        let mut bytes = Vec::new();
        // Serializing into a Vec cannot fail.
        let _ = self.table.serialize_compressed(&mut bytes);
        let _ = self.hidden.serialize_compressed(&mut bytes);
        transcript.append_bytes(LABEL_COMMITMENTS, &bytes);
        transcript
    }
}

/// An embedding proof in mode `M`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct EmbeddingProof<M: Mode> {
    /// [`crate::PROOF_FORMAT_VERSION`].
    pub version: u32,
    /// The session's opening (the masks' commitment in zero knowledge).
    pub session: M::SessionCommitment,
    /// `y = H̃(r)`.
    pub hidden_value: M::Sent,
    /// The opening of `H` at `r` and of the table rows' combination `w` at `r_c`.
    pub openings: M::OpeningProof,
    /// The session's close.
    pub session_proof: M::SessionProof,
}

/// The masks an embedding proof of `statement`'s sizes uses (zero knowledge).
fn schedule(shape: &EmbeddingShape, hidden_vars: usize) -> Result<MaskSchedule, AttentionError> {
    Ok(MaskSchedule(vec![zk_multi_opening_schedule(&[hidden_vars, shape.column_vars()])]))
}

/// The table's Hyrax column variables: `log d̂`, one commitment row per table row.
pub fn table_column_vars(shape: &EmbeddingShape) -> usize {
    shape.column_vars()
}

/// The Hyrax generators an embedding proof of mode `M` needs: the table's and `H`'s columns
/// and, in zero knowledge, the masks'.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate.
pub fn embedding_hyrax_params<M: Mode>(
    statement: &EmbeddingStatement,
) -> Result<HyraxParams, AttentionError> {
    statement.validate()?;
    let columns = |c: &HyraxCommitment| c.column_vars().map_err(AttentionError::from);
    let mut vars =
        (2 * columns(&statement.table)?.max(columns(&statement.hidden)?)).max(statement.hidden.num_vars);
    if M::HIDING {
        vars = vars.max(2 * schedule(&statement.shape, statement.hidden_vars())?.generator_vars());
    }
    Ok(HyraxParams::new(vars))
}

/// The generators to commit a table of `shape` with (a prefix of every proof's).
pub fn table_hyrax_params(shape: &EmbeddingShape) -> Result<HyraxParams, AttentionError> {
    shape.validate()?;
    // The commitment checks the table's size against the generators' variables.
    Ok(HyraxParams::new(shape.num_vars().max(2 * table_column_vars(shape))))
}

/// The table `R × d` (row-major) padded to `R̂ × d̂`.
///
/// # Errors
/// [`AttentionError::WrongTensorSize`] for a table of another size.
pub fn pad_table(shape: &EmbeddingShape, table: &[i64]) -> Result<Vec<i64>, AttentionError> {
    shape.validate()?;
    let (rows, width) = (shape.rows() as usize, shape.model_width as usize);
    check_tensor_sizes(&[("the embedding table", table.len(), rows, width)])?;
    Ok(pad(table, rows, width, shape.row_vars(), shape.column_vars()))
}

/// Commits the padded table (from [`pad_table`]) in mode `M`: binding, or hiding with blinds the
/// model owner keeps.
///
/// # Errors
/// [`AttentionError::Commitment`] for too few generators or a table of the wrong size.
pub fn commit_table<M: Mode>(
    params: &HyraxParams,
    shape: &EmbeddingShape,
    padded: &[i64],
    rng: &mut dyn ProverRng,
) -> Result<(HyraxCommitment, M::Blinds), AttentionError> {
    shape.validate()?;
    M::commit_table(params, shape.num_vars(), table_column_vars(shape), padded, rng)
}

/// `H` for the token ids: each token's table rows added (`s × d`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`] for ids outside the vocabulary or more tokens than
/// positions; [`AttentionError::WrongTensorSize`] for a padded table of another size.
pub fn embed(shape: &EmbeddingShape, padded: &[i64], ids: &[u64]) -> Result<Vec<i64>, AttentionError> {
    shape.validate()?;
    check_padded(shape, padded)?;
    let width = shape.model_width as usize;
    let stride = 1usize << shape.column_vars();
    let row = |v: u64| &padded[v as usize * stride..v as usize * stride + width];
    let mut out = Vec::with_capacity(ids.len() * width);
    for (token, position) in shape.token_table_rows(ids)? {
        match position {
            Some(p) => out.extend(row(token).iter().zip(row(p)).map(|(a, b)| a.saturating_add(*b))),
            None => out.extend_from_slice(row(token)),
        }
    }
    Ok(out)
}

fn check_padded(shape: &EmbeddingShape, padded: &[i64]) -> Result<(), AttentionError> {
    check_tensor_sizes(&[(
        "the padded embedding table",
        padded.len(),
        1 << shape.row_vars(),
        1 << shape.column_vars(),
    )])
}

/// `c(v) = Σ_{i<s} eq(r_i, i)·[row_k(i) = v]` at its non-zero rows, in row order.
fn row_weights(
    shape: &EmbeddingShape,
    ids: &[u64],
    row_point: &[Fr],
) -> Result<Vec<(usize, Fr)>, AttentionError> {
    let eq = eq_table(row_point);
    let mut weights: BTreeMap<usize, Fr> = BTreeMap::new();
    for ((token, position), e) in shape.token_table_rows(ids)?.into_iter().zip(&eq) {
        for v in std::iter::once(token).chain(position) {
            *weights.entry(v as usize).or_insert_with(Fr::zero) += e;
        }
    }
    Ok(weights.into_iter().collect())
}

/// Table rows per parallel task of [`combined_row`] (below it, one sequential pass).
const PARALLEL_ROWS: usize = 1 << 10;

/// `w = Σ_v c(v)·T(v, ·)` over the padded columns (the embedding's ids' rows, or the head's
/// every token row): in parallel over chunks of [`PARALLEL_ROWS`] rows when there are more, the
/// same sum (field addition is exact) as the sequential pass.
pub(crate) fn combined_row(shape: &EmbeddingShape, padded: &[i64], weights: &[(usize, Fr)]) -> Vec<Fr> {
    let stride = 1usize << shape.column_vars();
    let width = (shape.model_width as usize).min(stride);
    let accumulate = |chunk: &[(usize, Fr)]| {
        let mut row = vec![Fr::zero(); stride];
        for (v, c) in chunk {
            for (out, x) in row.iter_mut().zip(&padded[v * stride..v * stride + width]) {
                if *x != 0 {
                    *out += fr_from_i64(*x) * c;
                }
            }
        }
        row
    };
    if weights.len() <= PARALLEL_ROWS {
        return accumulate(weights);
    }
    use rayon::prelude::*;
    weights.par_chunks(PARALLEL_ROWS).map(accumulate).reduce(
        || vec![Fr::zero(); stride],
        |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        },
    )
}

/// Proves in mode `M` that the committed boundary `hidden` holds the embeddings of
/// `statement.ids`: `padded` is the table (from [`pad_table`]) whose commitment
/// `statement.table` is, with its `table_blinds`.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate or a boundary that
/// is not the ids' embeddings (the honest prover refuses), [`AttentionError::WrongTensorSize`]
/// for a table of another size, and the openings' errors.
pub fn prove_embedding<M: Mode>(
    params: &HyraxParams,
    statement: &EmbeddingStatement,
    padded: &[i64],
    table_blinds: &M::Blinds,
    hidden: &Boundary<M::Blinds>,
    rng: &mut dyn ProverRng,
) -> Result<EmbeddingProof<M>, AttentionError> {
    statement.validate()?;
    let shape = &statement.shape;
    check_padded(shape, padded)?;
    if hidden.commitment != statement.hidden || embed(shape, padded, &statement.ids)? != hidden.values {
        return Err(AttentionError::InvalidShape(
            "the committed hidden state is not the token ids' embeddings".into(),
        ));
    }
    let s = statement.ids.len();
    let hidden_table = pad(&hidden.values, s, shape.model_width as usize, log2_ceil(s), shape.column_vars());
    prove_unchecked::<M>(
        params,
        statement,
        padded,
        table_blinds,
        &hidden_table,
        &hidden.blinds,
        SentValue::Committed,
        rng,
    )
}

/// The value a prover sends for `H̃(r)`: the committed table's (honest: the two agree) or the
/// embeddings' (a cheating prover's way through the sum-check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SentValue {
    /// `H̃(r)` from the table the prover committed.
    Committed,
    /// `Σ_v c(v)·T̃(r_c ‖ v)`: what the embeddings give.
    #[cfg_attr(not(test), allow(dead_code))]
    Embedded,
}

/// [`prove_embedding`] without the check that `hidden` is the embeddings (a cheating prover's
/// protocol, for the malicious-prover tests), sending `sent` for `H̃(r)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_unchecked<M: Mode>(
    params: &HyraxParams,
    statement: &EmbeddingStatement,
    padded: &[i64],
    table_blinds: &M::Blinds,
    hidden_table: &[i64],
    hidden_blinds: &M::Blinds,
    sent_value: SentValue,
    rng: &mut dyn ProverRng,
) -> Result<EmbeddingProof<M>, AttentionError> {
    let shape = &statement.shape;
    let column_vars = shape.column_vars();
    let hidden_vars = statement.hidden_vars();

    let mut transcript = statement.transcript::<M>();
    let t = &mut transcript;
    let (mut session, session_commitment) =
        M::start_prover(params, &|| schedule(shape, hidden_vars), t, rng)?;
    let mut prover = M::prover(params, &mut session, rng);
    let r = t.challenge_fields(LABEL_POINT, hidden_vars);
    let (r_c, r_i) = r.split_at(column_vars);
    let weights = row_weights(shape, &statement.ids, r_i)?;
    let combined = DenseMultilinearExtension::new(column_vars, combined_row(shape, padded, &weights))?;
    let y = match sent_value {
        SentValue::Committed => {
            DenseMultilinearExtension::from_i64(hidden_vars, hidden_table)?.evaluate(&r)?
        }
        SentValue::Embedded => combined.evaluate(r_c)?,
    };
    let (sent, held) = M::send(&mut prover, LABEL_HIDDEN, &[y], t);
    let (hidden_value, claim) = match (sent.into_iter().next(), held.into_iter().next()) {
        (Some(s), Some(h)) => (s, h),
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    let combined_commitment = statement.table.combine_rows(&weights)?;
    let combined_blinds = M::combine_blinds(table_blinds, &weights)?;
    let claims = vec![
        OpeningClaim { polynomial: 0, point: r.clone(), value: claim.clone() },
        OpeningClaim { polynomial: 1, point: r_c.to_vec(), value: claim },
    ];
    let polynomials = [
        (
            PolynomialTable::Integers { num_vars: hidden_vars, values: hidden_table },
            &statement.hidden,
            hidden_blinds,
        ),
        (PolynomialTable::Field(&combined), &combined_commitment, &combined_blinds),
    ];
    let openings = M::prove_openings(&mut prover, params, &polynomials, &claims, t)?;
    drop(prover);
    let session_proof = M::finish_prover(params, session, t, rng)?;
    Ok(EmbeddingProof {
        version: crate::PROOF_FORMAT_VERSION,
        session: session_commitment,
        hidden_value,
        openings,
        session_proof,
    })
}

/// Verifies an embedding proof of mode `M` against its statement.
///
/// # Errors
/// [`AttentionError::InvalidShape`] for a statement that does not validate,
/// [`AttentionError::UnsupportedVersion`], [`AttentionError::CheckFailed`] (`"embedding"`,
/// `"openings"`) for a failing check, and (zero knowledge) [`AttentionError::ZeroKnowledge`]
/// for failing group equations.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_embedding<M: Mode>(
    params: &HyraxParams,
    statement: &EmbeddingStatement,
    proof: &EmbeddingProof<M>,
) -> Result<(), AttentionError> {
    statement.validate()?;
    if proof.version != crate::PROOF_FORMAT_VERSION {
        return Err(AttentionError::UnsupportedVersion(proof.version));
    }
    let shape = &statement.shape;
    let hidden_vars = statement.hidden_vars();
    let column_vars = shape.column_vars();
    let mut transcript = statement.transcript::<M>();
    let t = &mut transcript;
    let mut session = M::start_verifier(&|| schedule(shape, hidden_vars), &proof.session, t)?;
    let mut verifier = M::verifier(params, &mut session);
    let r = t.challenge_fields(LABEL_POINT, hidden_vars);
    let (r_c, r_i) =
        r.split_at_checked(column_vars).ok_or(AttentionError::CheckFailed { step: STEP_SHAPE })?;
    let claim = M::receive(&verifier, LABEL_HIDDEN, std::slice::from_ref(&proof.hidden_value), t)
        .into_iter()
        .next()
        .ok_or(AttentionError::CheckFailed { step: STEP_SHAPE })?;
    let weights = row_weights(shape, &statement.ids, r_i)?;
    let combined = statement.table.combine_rows(&weights)?;
    let claims = vec![
        OpeningClaim { polynomial: 0, point: r.clone(), value: claim.clone() },
        OpeningClaim { polynomial: 1, point: r_c.to_vec(), value: claim },
    ];
    M::verify_openings(&mut verifier, params, &[&statement.hidden, &combined], &claims, &proof.openings, t)?;
    drop(verifier);
    M::finish_verifier(params, session, &proof.session_proof, t)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    use crate::mode::{Plain, Zk};
    use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};

    /// A cheating prover: the honest embeddings of `ids` with `change` applied to the padded
    /// `H` it commits, sending `sent` for `H̃(r)`; the verifier's verdict.
    fn cheat<M: Mode>(
        shape: EmbeddingShape,
        ids: &[u64],
        sent: SentValue,
        change: impl Fn(&mut Vec<i64>, &[i64]),
    ) -> Result<(), AttentionError> {
        let mut rng = StdRng::seed_from_u64(5);
        let table: Vec<i64> =
            (0..shape.rows() * shape.model_width).map(|_| rng.gen_range(-300i64..300)).collect();
        let padded = pad_table(&shape, &table).unwrap();
        let table_params = table_hyrax_params(&shape).unwrap();
        let (table_commitment, table_blinds) =
            commit_table::<M>(&table_params, &shape, &padded, &mut rng).unwrap();
        let s = ids.len();
        let honest = embed(&shape, &padded, ids).unwrap();
        let mut hidden = pad(&honest, s, shape.model_width as usize, log2_ceil(s), shape.column_vars());
        change(&mut hidden, &padded);
        let hidden_vars = log2_ceil(s) + shape.column_vars();
        let (hidden_commitment, hidden_blinds) = M::commit_table(
            &HyraxParams::new(2 * hidden_vars),
            hidden_vars,
            zkmha_pcs::split_vars(hidden_vars).1,
            &hidden,
            &mut rng,
        )
        .unwrap();
        let statement = EmbeddingStatement {
            shape,
            ids: ids.to_vec(),
            table: table_commitment,
            hidden: hidden_commitment,
        };
        let params = embedding_hyrax_params::<M>(&statement).unwrap();
        let proof = prove_unchecked::<M>(
            &params,
            &statement,
            &padded,
            &table_blinds,
            &hidden,
            &hidden_blinds,
            sent,
            &mut rng,
        )?;
        verify_embedding::<M>(&params, &statement, &proof)
    }

    /// A change to the padded `H` a cheating prover commits (given the padded table).
    type Attack = Box<dyn Fn(&mut Vec<i64>, &[i64])>;

    const GPT: EmbeddingShape = EmbeddingShape { token_rows: 13, position_rows: 7, model_width: 6 };
    const LLAMA: EmbeddingShape = EmbeddingShape { token_rows: 21, position_rows: 0, model_width: 5 };
    const IDS: [u64; 5] = [4, 12, 0, 4, 9];

    fn all_cheats<M: Mode>() {
        let width = |shape: &EmbeddingShape| 1usize << shape.column_vars();
        for shape in [GPT, LLAMA] {
            assert!(cheat::<M>(shape, &IDS, SentValue::Committed, |_, _| {}).is_ok(), "honest {shape:?}");
            let w = width(&shape);
            let attacks: Vec<(&str, Attack)> = vec![
                ("one entry off by one", Box::new(move |h: &mut Vec<i64>, _: &[i64]| h[w + 2] += 1)),
                (
                    "a row of another token",
                    Box::new(move |h: &mut Vec<i64>, t: &[i64]| {
                        for j in 0..w {
                            h[3 * w + j] += t[5 * w + j] - t[4 * w + j];
                        }
                    }),
                ),
                ("junk in a padded row", Box::new(move |h: &mut Vec<i64>, _: &[i64]| h[6 * w] = 7)),
                ("junk in a padded column", Box::new(move |h: &mut Vec<i64>, _: &[i64]| h[w - 1] = -3)),
            ];
            for (name, attack) in &attacks {
                for sent in [SentValue::Committed, SentValue::Embedded] {
                    let verdict = cheat::<M>(shape, &IDS, sent, attack);
                    assert!(verdict.is_err(), "{} accepted {name} ({sent:?}) on {shape:?}", M::NAME);
                    if !M::HIDING {
                        assert!(
                            matches!(
                                verdict,
                                Err(AttentionError::CheckFailed { step: crate::mode::STEP_OPENINGS })
                            ),
                            "{name} ({sent:?}): {verdict:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_cheating_embedding_is_rejected_plain() {
        all_cheats::<Plain>();
    }

    #[test]
    fn a_cheating_embedding_is_rejected_zero_knowledge() {
        all_cheats::<Zk>();
    }

    /// The verifier's combination of the key's rows is the commitment to the prover's
    /// combined row `w` (the closed form against the materialized row).
    #[test]
    fn the_parallel_combined_row_is_the_sequential_one() {
        let mut rng = StdRng::seed_from_u64(9);
        let shape =
            EmbeddingShape { token_rows: 3 * PARALLEL_ROWS as u64 + 5, position_rows: 0, model_width: 3 };
        let table: Vec<i64> =
            (0..shape.rows() * shape.model_width).map(|_| rng.gen_range(-99i64..99)).collect();
        let padded = pad_table(&shape, &table).unwrap();
        let weights: Vec<(usize, Fr)> =
            (0..shape.token_rows as usize).map(|v| (v, Fr::from(rng.gen_range(1u64..1000)))).collect();
        let sequential = weights
            .chunks(PARALLEL_ROWS)
            .map(|chunk| combined_row(&shape, &padded, chunk))
            .fold(vec![Fr::zero(); 4], |a, b| a.iter().zip(&b).map(|(x, y)| *x + y).collect());
        assert_eq!(combined_row(&shape, &padded, &weights), sequential);
    }

    #[test]
    fn combined_rows_commit_to_the_combined_row() {
        use ark_std::UniformRand;
        let mut rng = StdRng::seed_from_u64(8);
        for (shape, ids) in [
            (EmbeddingShape { token_rows: 11, position_rows: 0, model_width: 3 }, vec![3u64, 0, 10, 3, 7]),
            (EmbeddingShape { token_rows: 9, position_rows: 6, model_width: 5 }, vec![8u64, 1, 1]),
            (EmbeddingShape { token_rows: 2, position_rows: 1, model_width: 2 }, vec![0u64]),
        ] {
            let table: Vec<i64> =
                (0..shape.rows() * shape.model_width).map(|_| rng.gen_range(-99i64..99)).collect();
            let padded = pad_table(&shape, &table).unwrap();
            let params = table_hyrax_params(&shape).unwrap();
            let (commitment, ()) = commit_table::<Plain>(&params, &shape, &padded, &mut rng).unwrap();
            let row_point: Vec<Fr> = (0..log2_ceil(ids.len())).map(|_| Fr::rand(&mut rng)).collect();
            let weights = row_weights(&shape, &ids, &row_point).unwrap();
            let row =
                DenseMultilinearExtension::new(shape.column_vars(), combined_row(&shape, &padded, &weights))
                    .unwrap();
            let direct = zkmha_pcs::Hyrax::commit_with_columns(&params, &row, shape.column_vars()).unwrap();
            assert_eq!(commitment.combine_rows(&weights).unwrap(), direct, "{shape:?}");
            // w̃(r_c) is the embeddings' MLE at (r_c ‖ r_i).
            let column_point: Vec<Fr> = (0..shape.column_vars()).map(|_| Fr::rand(&mut rng)).collect();
            let embedded = embed(&shape, &padded, &ids).unwrap();
            let hidden = pad(
                &embedded,
                ids.len(),
                shape.model_width as usize,
                log2_ceil(ids.len()),
                shape.column_vars(),
            );
            let mle =
                DenseMultilinearExtension::from_i64(log2_ceil(ids.len()) + shape.column_vars(), &hidden)
                    .unwrap();
            assert_eq!(
                row.evaluate(&column_point).unwrap(),
                mle.evaluate(&[column_point, row_point].concat()).unwrap()
            );
        }
    }
}
