//! A fixed-point linear layer: `Y = round((X·W + b) / 2^k)`, the building block of the
//! `Q`, `K`, `V` projections and the output projection (issue 6). Claims on `Y` are not
//! needed: the step ties the tensors together, and its claims on `X`, `W`, `b`, `Y` and the
//! range multiplicities go to the caller's openings (or public evaluations).
//!
//! ```text
//! tensors    X: ŝ × d̂ (index i·d̂ + j),  W: d̂ × n̂ (j·n̂ + c),  b: n̂,  Y: ŝ × n̂ (i·n̂ + c),
//!            zero-padded to powers of two; MLE points [column ‖ row] (little-endian)
//! relation   D(i, c) = Σ_j X(i, j)·W(j, c) + [i < s]·b(c) + 2^(k−1) − 2^k·Y(i, c)  ∈ [0, 2^k)
//!            ⇔ Y = ⌊(X·W + b + 2^(k−1)) / 2^k⌋ on real rows (round half up), Y = 0 on padded rows
//! absorb     the shape (s, d, n, k); the caller absorbs its commitments before
//! lookup     D ∈ [0, 2^k) (logUp; D is never committed)    → D([r_c ‖ r_i]) = v,  m(r_t) = μ
//! P → V      y = Y([r_c ‖ r_i]),  β = b(r_c)
//! sum-check  Σ_j X([j ‖ r_i])·W([r_c ‖ j]) = v − prefix(s, r_i)·β − 2^(k−1) + 2^k·y   (log d̂ vars, degree 2)
//!            → ρ;  x = X([ρ ‖ r_i]),  w = W([r_c ‖ ρ]),  V checks x·w
//! claims out X([ρ ‖ r_i]) = x, W([r_c ‖ ρ]) = w, b(r_c) = β, Y([r_c ‖ r_i]) = y, m(r_t) = μ
//! ```
//!
//! `prefix(s, r_i) = Σ_{i<s} eq(r_i, i)` is the row selector's MLE (closed form). Soundness: the
//! lookup holds every entry of `D` in `[0, 2^k)` (so the rounding is the one above) with
//! probability ≥ 1 − O(ŝn̂/|F|), the sum-check errs with ≤ 2·log d̂/|F|.

use crate::AttentionError;
use crate::common::sumcheck_error;
use crate::structured::prefix_eq_sum;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum, Zero, fr_from_i64};
use zkmha_lookup::{Lookup, LookupProof, LookupWitness, RangeTable, prove_lookups, verify_lookups};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_sumcheck::{
    EvalClaim, ProductSumcheckProof, SumOfProducts, SumcheckClaim, prove_product, verify_product,
};
use zkmha_transcript::Transcript;

const STEP: &str = "projection";
const LABEL_SHAPE: &[u8] = b"attention/projection/shape";
const LABEL_VALUES: &[u8] = b"attention/projection/output-and-bias";

/// Largest `|entry|` of `X`, `W` and `b` (so every `D` is exact in `i128`).
pub const PROJECTION_BOUND_BITS: u32 = 31;

/// Largest table dimension (variables) a projection accepts.
const MAX_DIMENSION_VARS: usize = 24;

/// The public shape of `Y = round((X·W + b) / 2^k)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProjectionShape {
    /// Rows of `X` and `Y` (tokens) `s`.
    pub rows: usize,
    /// Columns of `X`, rows of `W` `d`.
    pub inputs: usize,
    /// Columns of `W` and `Y`, entries of `b` `n`.
    pub outputs: usize,
    /// The rescaling shift `k` (`1 ≤ k ≤ 20`: the remainder's range table).
    pub shift: u32,
}

impl ProjectionShape {
    /// Checks the dimensions and the shift.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        let dims = [self.rows, self.inputs, self.outputs];
        if dims.contains(&0) {
            return Err(AttentionError::InvalidShape(
                "a projection needs at least one row, input and output".into(),
            ));
        }
        if dims.iter().any(|d| d.next_power_of_two().trailing_zeros() as usize > MAX_DIMENSION_VARS) {
            return Err(AttentionError::InvalidShape(format!(
                "projection dimensions above 2^{MAX_DIMENSION_VARS} are not supported"
            )));
        }
        if !(1..=20).contains(&self.shift) {
            return Err(AttentionError::InvalidShape("the projection shift k must be 1 to 20 bits".into()));
        }
        Ok(())
    }

    /// `log ŝ`.
    pub fn row_vars(&self) -> usize {
        self.rows.next_power_of_two().trailing_zeros() as usize
    }

    /// `log d̂`.
    pub fn input_vars(&self) -> usize {
        self.inputs.next_power_of_two().trailing_zeros() as usize
    }

    /// `log n̂`.
    pub fn output_vars(&self) -> usize {
        self.outputs.next_power_of_two().trailing_zeros() as usize
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_shape(LABEL_SHAPE, &[self.rows, self.inputs, self.outputs, self.shift as usize]);
    }
}

/// The prover's tensors, unpadded and row-major: `X` (`s × d`), `W` (`d × n`), `b` (`n`),
/// `Y` (`s × n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionWitness {
    /// `X`.
    pub input: Vec<i64>,
    /// `W`.
    pub weights: Vec<i64>,
    /// `b`.
    pub bias: Vec<i64>,
    /// `Y`.
    pub output: Vec<i64>,
}

/// The proof.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ProjectionProof {
    /// `D ∈ [0, 2^k)`.
    pub lookup: LookupProof,
    /// `y = Y([r_c ‖ r_i])`.
    pub output_value: Fr,
    /// `β = b(r_c)`.
    pub bias_value: Fr,
    /// `Σ_j X([j ‖ r_i])·W([r_c ‖ j])`.
    pub sumcheck: ProductSumcheckProof,
}

/// What the step leaves to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionClaims {
    /// On `X` (`ŝ × d̂`).
    pub input: EvalClaim,
    /// On `W` (`d̂ × n̂`).
    pub weights: EvalClaim,
    /// On `b` (`n̂`).
    pub bias: EvalClaim,
    /// On `Y` (`ŝ × n̂`).
    pub output: EvalClaim,
    /// On the range multiplicities (`2^k`).
    pub multiplicities: EvalClaim,
}

/// `M` (`rows × columns`, row-major) zero-padded to `2^row_vars × 2^column_vars`.
pub(crate) fn pad(
    values: &[i64],
    rows: usize,
    columns: usize,
    row_vars: usize,
    column_vars: usize,
) -> Vec<i64> {
    let width = 1usize << column_vars;
    let mut out = vec![0i64; width << row_vars];
    for (r, row) in values.chunks(columns.max(1)).take(rows).enumerate() {
        out[r * width..r * width + row.len()].copy_from_slice(row);
    }
    out
}

impl ProjectionWitness {
    fn validate(&self, shape: &ProjectionShape) -> Result<(), AttentionError> {
        shape.validate()?;
        let (s, d, n) = (shape.rows, shape.inputs, shape.outputs);
        for (tensor, got, rows, columns) in [
            ("X", self.input.len(), s, d),
            ("W", self.weights.len(), d, n),
            ("b", self.bias.len(), 1, n),
            ("Y", self.output.len(), s, n),
        ] {
            if got != rows * columns {
                return Err(AttentionError::WrongTensorSize {
                    tensor,
                    rows,
                    columns,
                    expected: rows * columns,
                    got,
                });
            }
        }
        for (tensor, values) in [("X", &self.input), ("W", &self.weights), ("b", &self.bias)] {
            if let Some((index, v)) =
                values.iter().enumerate().find(|(_, v)| v.unsigned_abs() >= 1u64 << PROJECTION_BOUND_BITS)
            {
                return Err(AttentionError::ValueOutOfRange { tensor, index, value: *v });
            }
        }
        Ok(())
    }

    /// `D` over the padded `ŝ × n̂` grid (row-major), exact.
    fn remainders(&self, shape: &ProjectionShape) -> Vec<i128> {
        let (s, d, n, k) = (shape.rows, shape.inputs, shape.outputs, shape.shift);
        let width = 1usize << shape.output_vars();
        let half = 1i128 << (k - 1);
        (0..width << shape.row_vars())
            .into_par_iter()
            .with_min_len(256)
            .map(|index| {
                let (i, c) = (index / width, index % width);
                if i >= s || c >= n {
                    return half;
                }
                let acc: i128 = (0..d)
                    .map(|j| i128::from(self.input[i * d + j]) * i128::from(self.weights[j * n + c]))
                    .sum();
                acc + i128::from(self.bias[c]) + half - (i128::from(self.output[i * n + c]) << k)
            })
            .collect()
    }
}

/// The reference: `Y = ⌊(X·W + b + 2^(k−1)) / 2^k⌋` (round half up), row-major `s × n`.
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`],
/// [`AttentionError::ValueOutOfRange`], or [`AttentionError::NumericRange`] when an output
/// leaves `i64`.
pub fn compute_projection(
    shape: &ProjectionShape,
    input: &[i64],
    weights: &[i64],
    bias: &[i64],
) -> Result<Vec<i64>, AttentionError> {
    let (s, d, n, k) = (shape.rows, shape.inputs, shape.outputs, shape.shift);
    let placeholder = ProjectionWitness {
        input: input.to_vec(),
        weights: weights.to_vec(),
        bias: bias.to_vec(),
        output: vec![0; s * n],
    };
    placeholder.validate(shape)?;
    (0..s * n)
        .into_par_iter()
        .map(|index| {
            let (i, c) = (index / n, index % n);
            let acc: i128 =
                (0..d).map(|j| i128::from(input[i * d + j]) * i128::from(weights[j * n + c])).sum();
            let rounded = (acc + i128::from(bias[c]) + (1i128 << (k - 1))).div_euclid(1i128 << k);
            i64::try_from(rounded)
                .map_err(|_| AttentionError::NumericRange("a projection output leaves i64".into()))
        })
        .collect()
}

/// The range multiplicities of the witness's remainders `D` (`2^k` counts).
///
/// # Errors
/// As [`compute_projection`], or [`AttentionError::Lookup`] when a remainder is outside
/// `[0, 2^k)` (the output is not the rounded product).
pub fn projection_multiplicities(
    shape: &ProjectionShape,
    witness: &ProjectionWitness,
) -> Result<Vec<i64>, AttentionError> {
    witness.validate(shape)?;
    let mut counts = vec![0i64; 1usize << shape.shift];
    for (index, d) in witness.remainders(shape).into_iter().enumerate() {
        match usize::try_from(d).ok().and_then(|d| counts.get_mut(d)) {
            Some(count) => *count += 1,
            None => {
                return Err(AttentionError::Lookup(zkmha_lookup::LookupError::ValueNotInTable {
                    table: "range",
                    index,
                    value: i64::try_from(d).unwrap_or(i64::MAX),
                }));
            }
        }
    }
    Ok(counts)
}

/// `Σ_i eq(r_i, i)·M[i][·]` for an integer matrix with `width` columns.
fn fold_integer_rows(values: &[i64], width: usize, row_point: &[Fr]) -> Vec<Fr> {
    let weights = eq_table(row_point);
    (0..width)
        .into_par_iter()
        .with_min_len(64)
        .map(|x| {
            let mut acc = UnreducedSum::new();
            for (i, w) in weights.iter().enumerate() {
                if let Some(&v) = values.get(i * width + x)
                    && v != 0
                {
                    acc.add_product(w, &fr_from_i64(v));
                }
            }
            acc.finish()
        })
        .collect()
}

/// `Σ_c eq(r_c, c)·M[·][c]` for an integer matrix with `2^|r_c|` columns.
fn fold_integer_columns(values: &[i64], column_point: &[Fr]) -> Vec<Fr> {
    let weights = eq_table(column_point);
    values
        .par_chunks(weights.len().max(1))
        .map(|row| {
            let mut acc = UnreducedSum::new();
            for (w, &v) in weights.iter().zip(row) {
                if v != 0 {
                    acc.add_product(w, &fr_from_i64(v));
                }
            }
            acc.finish()
        })
        .collect()
}

/// `v − prefix(s, r_i)·β − 2^(k−1) + 2^k·y`: the claimed `Σ_j X·W`.
fn product_claim(shape: &ProjectionShape, r_i: &[Fr], remainder: Fr, output: Fr, bias: Fr) -> Fr {
    let two_k = Fr::from(1u64 << shape.shift);
    remainder - prefix_eq_sum(shape.rows, r_i) * bias - Fr::from(1u64 << (shape.shift - 1)) + two_k * output
}

/// Proves the projection for `witness` with its range `multiplicities`
/// ([`projection_multiplicities`]; a cheating prover may pass others).
///
/// # Errors
/// Bad shapes or tensors (as [`compute_projection`]), or the lookup's and sum-check's errors.
pub fn prove_projection(
    shape: &ProjectionShape,
    witness: &ProjectionWitness,
    multiplicities: &[i64],
    transcript: &mut Transcript,
) -> Result<(ProjectionProof, ProjectionClaims), AttentionError> {
    witness.validate(shape)?;
    shape.append_to_transcript(transcript);
    let (row_vars, input_vars, output_vars) = (shape.row_vars(), shape.input_vars(), shape.output_vars());
    let x = pad(&witness.input, shape.rows, shape.inputs, row_vars, input_vars);
    let w = pad(&witness.weights, shape.inputs, shape.outputs, input_vars, output_vars);
    let b = pad(&witness.bias, 1, shape.outputs, 0, output_vars);
    let y = pad(&witness.output, shape.rows, shape.outputs, row_vars, output_vars);
    // A cheating prover's remainder may not fit i64: clamp it (the lookup then fails on it).
    let remainders: Vec<i64> = witness
        .remainders(shape)
        .into_iter()
        .map(|d| i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX }))
        .collect();

    let table = RangeTable::new(shape.shift as usize)?;
    let entry = |row: usize, _: usize| remainders[row];
    let evaluate = |point: &[Fr]| -> Result<Vec<Fr>, zkmha_lookup::LookupError> {
        Ok(vec![DenseMultilinearExtension::from_i64(point.len(), &remainders)?.evaluate(point)?])
    };
    let lookup_witness =
        LookupWitness { num_vars: row_vars + output_vars, entry: &entry, evaluate: &evaluate };
    let (lookup, mut claims) =
        prove_lookups(&[Lookup { table: &table, witness: &lookup_witness, multiplicities }], transcript)?;
    let claims = claims.pop().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let remainder_claim = claims.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let (r_c, r_i) = remainder_claim.point.split_at(output_vars);

    let output_value =
        DenseMultilinearExtension::from_i64(row_vars + output_vars, &y)?.evaluate(&remainder_claim.point)?;
    let bias_value = DenseMultilinearExtension::from_i64(output_vars, &b)?.evaluate(r_c)?;
    transcript.append_fields(LABEL_VALUES, &[output_value, bias_value]);

    let sum = product_claim(shape, r_i, remainder_claim.value, output_value, bias_value);
    let mles = vec![
        DenseMultilinearExtension::new(input_vars, fold_integer_rows(&x, 1 << input_vars, r_i))?,
        DenseMultilinearExtension::new(input_vars, fold_integer_columns(&w, r_c))?,
    ];
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let (sumcheck, ends) = prove_product(&product, mles, sum, transcript).map_err(sumcheck_error(STEP))?;
    let out = projection_claims(
        r_c,
        r_i,
        ends.first().ok_or(AttentionError::CheckFailed { step: STEP })?,
        ends.get(1).map(|c| c.value).unwrap_or_else(Fr::zero),
        bias_value,
        output_value,
        claims.multiplicities,
    );
    Ok((ProjectionProof { lookup, output_value, bias_value, sumcheck }, out))
}

fn projection_claims(
    r_c: &[Fr],
    r_i: &[Fr],
    input_end: &EvalClaim,
    weights_value: Fr,
    bias_value: Fr,
    output_value: Fr,
    multiplicities: EvalClaim,
) -> ProjectionClaims {
    let rho = &input_end.point;
    ProjectionClaims {
        input: EvalClaim { point: [rho.as_slice(), r_i].concat(), value: input_end.value },
        weights: EvalClaim { point: [r_c, rho.as_slice()].concat(), value: weights_value },
        bias: EvalClaim { point: r_c.to_vec(), value: bias_value },
        output: EvalClaim { point: [r_c, r_i].concat(), value: output_value },
        multiplicities,
    }
}

/// Verifies the projection; returns the claims the caller must discharge.
///
/// # Errors
/// [`AttentionError::InvalidShape`], the lookup's errors, [`AttentionError::Sumcheck`] or
/// [`AttentionError::CheckFailed`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_projection(
    shape: &ProjectionShape,
    proof: &ProjectionProof,
    transcript: &mut Transcript,
) -> Result<ProjectionClaims, AttentionError> {
    shape.validate()?;
    shape.append_to_transcript(transcript);
    let (row_vars, input_vars, output_vars) = (shape.row_vars(), shape.input_vars(), shape.output_vars());
    let table = RangeTable::new(shape.shift as usize)?;
    let mut claims = verify_lookups(&[(&table, row_vars + output_vars)], &proof.lookup, transcript)?;
    let claims = claims.pop().ok_or(AttentionError::CheckFailed { step: STEP })?;
    let remainder_claim = claims.columns.first().ok_or(AttentionError::CheckFailed { step: STEP })?;
    if remainder_claim.point.len() != row_vars + output_vars {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let (r_c, r_i) = remainder_claim.point.split_at(output_vars);
    transcript.append_fields(LABEL_VALUES, &[proof.output_value, proof.bias_value]);
    let sum = product_claim(shape, r_i, remainder_claim.value, proof.output_value, proof.bias_value);
    let product = SumOfProducts::product(2).map_err(sumcheck_error(STEP))?;
    let ends = verify_product(&product, &SumcheckClaim::new(input_vars, 2, sum), &proof.sumcheck, transcript)
        .map_err(sumcheck_error(STEP))?;
    match ends.as_slice() {
        [input_end, weights_end] => Ok(projection_claims(
            r_c,
            r_i,
            input_end,
            weights_end.value,
            proof.bias_value,
            proof.output_value,
            claims.multiplicities,
        )),
        _ => Err(AttentionError::CheckFailed { step: STEP }),
    }
}
