//! Fixed-point softmax: the parameters, the public tables and the prover's witness.
//!
//! ```text
//! integer scores S (ĥ × ŝ × ŝ), real exponent of a score = S · c  (c = s_q·s_k/√m)
//! M = round(c · 2^(g+k))                          exponent in units of 2^-g, k extra bits
//! per row (h, i): an integer shift ẑ (≈ log-sum-exp of the row, in units of 2^-g)
//! kept entries:   ẑ·2^k + 2^(k−1) − S·M = x·2^k + ρ,   0 ≤ ρ < 2^k,   x = lo + 2^16·hi ≥ 0
//!                 e = T(lo) = round(2^f · exp(−lo / 2^g)),   flag = [hi = 0]
//!                 A = e·flag                       (≈ 2^f · softmax, exp(−x/2^g) < 2^-(f+1) once hi > 0)
//! masked entries: A = 0 (the proof multiplies by the zeroifier z), and so are the padded
//!                 heads' (head ≥ h): their rows are fully masked, so all their columns are 0
//! rows i < s, head < h:  R = Σ_j A ∈ [2^f − δ, 2^f + δ),   u = R − 2^f + δ ∈ [0, 2^tolerance_bits),  δ = 2^(tolerance_bits − 1)
//! ```
//!
//! What an accepted row guarantees, whatever shift the prover chose (the shift is pinned only
//! by the row sum): write `c' = M / 2^(g+k)` (the public scale the proof uses), `a_j = S_j·c'`,
//! `P_j = 2^f·exp(a_j)/Σ_kept exp(a)` (the exact fixed-point target) and `n` the row's kept
//! entries (at most s). The relation gives `x_j = ẑ − S_j·M/2^k + ε_j` with `|ε_j| ≤ 1/2` (the
//! remainder is range-checked, and ẑ·2^k is an integer however ẑ was chosen), the table gives
//! `A_j = 2^f·exp(−x_j/2^g) + τ_j` with `|τ_j| ≤ 1/2` (a zero for `hi > 0` included), so
//!
//! ```text
//! R = E·Σ_j P_j·e^(−ε_j/2^g) + Σ_j τ_j   with  E = exp(LSE(a) − ẑ/2^g)
//! ⇒ E ∈ [(R − n/2)/2^f · e^(−θ), (R + n/2)/2^f · e^(θ)],  θ = 2^−(g+1)
//! ⇒ |A_j − P_j| ≤ 1/2 + P_j·((1 + β)·e^(2^−g) − 1),   β = (δ + n/2) / 2^f
//! ```
//!
//! ([`SoftmaxParams::entry_error_bound`]): the row sum proves the shift is the row's
//! log-sum-exp within `ln(1 + β) + θ` nats. An honest prover, which picks the shift whose row
//! sum is nearest `2^f`, stays far inside it (ACCURACY.md); a prover that re-shifts a row as
//! far as the tolerance allows reaches it but cannot pass it.
//!
//! The table `T` is computed with a deterministic `exp` (only IEEE-754 +, −, ×, ÷, which are
//! exactly rounded everywhere), so prover and verifier build the same table on any machine.

use crate::witness::keeps;
use crate::{AttentionError, AttentionShape, MaskKind};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;

/// Bits of `lo` and of `hi` (the exponent argument `x < 2^32`).
pub const DIGIT_BITS: usize = 16;

/// Public parameters of the fixed-point softmax.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct SoftmaxParams {
    /// `M`: one unit of score is `M / 2^(g+k)` natural-exponent units.
    pub multiplier: u64,
    /// `k`: extra fractional bits of `S·M`, dropped with rounding (`1 ≤ k ≤ 16`).
    pub shift: u32,
    /// `g`: the exponent's fractional bits (`1 ≤ g ≤ 12`).
    pub exponent_bits: u32,
    /// `f`: probabilities are integers scaled by `2^f` (`1 ≤ f ≤ 24`).
    pub output_bits: u32,
    /// Row sums lie within `2^f ± 2^(tolerance_bits − 1)` (`1 ≤ tolerance_bits ≤ 16`).
    pub tolerance_bits: u32,
}

impl SoftmaxParams {
    /// Defaults for a real score scale `c` (real exponent per unit of integer score, `1/√m`
    /// included) and the longest row's kept entries (the tokens `s`; a larger count only
    /// widens the tolerance): `g = 8`, `f = 16`, `k = 16`, the tolerance from the honest
    /// prover's error (rounding of the shift, of `x` and of each table entry).
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`] when `c` is not positive and finite or too large.
    pub fn for_score_scale(score_scale: f64, row_len: usize) -> Result<Self, AttentionError> {
        let (g, k, f) = (8u32, 16u32, 16u32);
        let multiplier = (score_scale * 2f64.powi((g + k) as i32)).round();
        if !score_scale.is_finite()
            || score_scale <= 0.0
            || !(1.0..=(1u64 << 40) as f64).contains(&multiplier)
        {
            return Err(AttentionError::NumericRange(format!(
                "the score scale {score_scale} gives the softmax multiplier {multiplier}, outside [1, 2^40]"
            )));
        }
        // |R − 2^f| ≤ 2^(f−g−1) (shift step) + 2^(f−g−1) (rounding of x) + s/2 (table rounding
        // of the kept entries).
        let bound = (1u64 << (f - g)) + row_len as u64 / 2 + 1;
        let tolerance_bits = (bound.next_power_of_two().trailing_zeros() + 1).min(16);
        Ok(Self { multiplier: multiplier as u64, shift: k, exponent_bits: g, output_bits: f, tolerance_bits })
    }

    /// Checks the ranges the protocol relies on.
    ///
    /// # Errors
    /// [`AttentionError::NumericRange`].
    pub fn validate(&self) -> Result<(), AttentionError> {
        let ok = (1..=16).contains(&self.shift)
            && (1..=12).contains(&self.exponent_bits)
            && (1..=24).contains(&self.output_bits)
            && (1..=16).contains(&self.tolerance_bits)
            && self.tolerance_bits <= self.output_bits
            && (1..=1u64 << 40).contains(&self.multiplier);
        if ok {
            Ok(())
        } else {
            Err(AttentionError::NumericRange(format!("invalid softmax parameters {self:?}")))
        }
    }

    /// The largest `|A_j − P_j|` of any accepted proof (honest or not) for an entry whose exact
    /// fixed-point softmax is `reference` (`P_j = 2^f·softmax_j` at the public scale
    /// `M/2^(g+k)`) in a row of `row_len` kept entries: `1/2 + P_j·((1 + β)·e^(2^−g) − 1)`,
    /// `β = (δ + row_len/2)/2^f` (derived in this module's docs).
    pub fn entry_error_bound(&self, reference: f64, row_len: usize) -> f64 {
        let beta = (self.tolerance() as f64 + row_len as f64 / 2.0) / self.one() as f64;
        let step = (2f64).powi(-(self.exponent_bits as i32));
        0.5 + reference.abs() * ((1.0 + beta) * step.exp() - 1.0)
    }

    /// `δ`: the allowed distance of a row sum from `2^f`.
    pub fn tolerance(&self) -> i64 {
        1i64 << (self.tolerance_bits - 1)
    }

    /// `2^f`, the fixed-point 1.
    pub fn one(&self) -> i64 {
        1i64 << self.output_bits
    }

    /// `T(lo) = round(2^f · exp(−lo / 2^g))` for `lo < 2^16`.
    pub fn exp_table(&self) -> Vec<i64> {
        let scale = f64::from(1u32 << self.output_bits);
        let step = 1.0 / f64::from(1u32 << self.exponent_bits);
        let mut table = vec![0i64; 1usize << DIGIT_BITS];
        // exp(−x/2^g) decreases: once an entry rounds to 0, every later one does too.
        for (lo, entry) in table.iter_mut().enumerate() {
            let value = scale * deterministic_exp_neg(lo as f64 * step);
            if value < 0.5 {
                break;
            }
            *entry = value.round() as i64;
        }
        table
    }
}

/// `exp(−a)` for `a ≥ 0` from IEEE-754 basic operations only: `exp(−a) = exp(−a/2^n)^(2^n)`
/// with a Taylor series for the reduced argument (relative error below 1e-10 up to a = 70).
pub fn deterministic_exp_neg(a: f64) -> f64 {
    if a > 700.0 {
        return 0.0;
    }
    let mut squarings = 0;
    let mut reduced = a;
    while reduced > 1.0 / 1024.0 {
        reduced /= 2.0;
        squarings += 1;
    }
    // Σ_{n ≤ 8} (−r)^n / n!  with |r| ≤ 2^-10: truncation below 2^-90.
    let mut term = 1.0;
    let mut sum = 1.0;
    for n in 1..=8 {
        term *= -reduced / f64::from(n);
        sum += term;
    }
    for _ in 0..squarings {
        sum *= sum;
    }
    sum
}

/// The softmax witness (all tensors `ĥ × ŝ × ŝ`, index `(head·ŝ + i)·ŝ + j`, except the
/// per-row ones, index `head·ŝ + i`).
#[derive(Clone, Debug, Default)]
pub struct SoftmaxWitness {
    /// `lo`: the low 16 bits of `x`.
    pub low: Vec<i64>,
    /// `hi`: `x >> 16`.
    pub high: Vec<i64>,
    /// `ρ`: the dropped `k` bits.
    pub remainder: Vec<i64>,
    /// `e = T(lo)`.
    pub exponential: Vec<i64>,
    /// `[hi = 0]`.
    pub flag: Vec<i64>,
    /// `ẑ`, per row.
    pub shift: Vec<i64>,
    /// `u = R − 2^f + δ` for rows `i < s`, else 0, per row.
    pub row_excess: Vec<i64>,
    /// `A = z·e·flag`: the fixed-point probabilities.
    pub attention: Vec<i64>,
    /// The integer scores `QK̂` the witness was computed from (the softmax proof reads them;
    /// the layer keeps no field-element copy in this mode).
    pub scores: Vec<i64>,
}

/// Computes the fixed-point softmax of integer scores `scores` (`ĥ × ŝ × ŝ`, masked and
/// padded entries ignored).
///
/// # Errors
/// [`AttentionError::NumericRange`] when a score times `M` leaves `i64`, an exponent argument
/// does not fit 32 bits, or no shift brings a row sum within the tolerance.
pub fn compute_softmax_witness(
    shape: &AttentionShape,
    mask: MaskKind,
    params: &SoftmaxParams,
    scores: &[i64],
) -> Result<SoftmaxWitness, AttentionError> {
    params.validate()?;
    let (sp, hp, s) = (shape.padded_seq_len(), shape.padded_heads(), shape.seq_len);
    let table = params.exp_table();
    let rows: Vec<Result<RowWitness, AttentionError>> = (0..hp * sp)
        .into_par_iter()
        .map(|row| {
            let (head, i) = (row / sp, row % sp);
            let scores = scores.get(row * sp..(row + 1) * sp).unwrap_or_default();
            row_witness(params, &table, scores, |j| head < shape.heads && keeps(mask, s, i, j), sp)
        })
        .collect();
    let (entries, row_count) = (hp * sp * sp, hp * sp);
    let tensor = || Vec::with_capacity(entries);
    let mut witness = SoftmaxWitness {
        low: tensor(),
        high: tensor(),
        remainder: tensor(),
        exponential: tensor(),
        flag: tensor(),
        shift: Vec::with_capacity(row_count),
        row_excess: Vec::with_capacity(row_count),
        attention: tensor(),
        scores: Vec::new(),
    };
    for row in rows {
        let row = row?;
        witness.low.extend(row.low);
        witness.high.extend(row.high);
        witness.remainder.extend(row.remainder);
        witness.exponential.extend(row.exponential);
        witness.flag.extend(row.flag);
        witness.attention.extend(row.attention);
        witness.shift.push(row.shift);
        witness.row_excess.push(row.row_excess);
    }
    Ok(witness)
}

struct RowWitness {
    low: Vec<i64>,
    high: Vec<i64>,
    remainder: Vec<i64>,
    exponential: Vec<i64>,
    flag: Vec<i64>,
    attention: Vec<i64>,
    shift: i64,
    row_excess: i64,
}

fn row_witness(
    params: &SoftmaxParams,
    table: &[i64],
    scores: &[i64],
    kept: impl Fn(usize) -> bool,
    width: usize,
) -> Result<RowWitness, AttentionError> {
    let k = params.shift;
    let one = params.one();
    let mut row = RowWitness {
        low: vec![0; width],
        high: vec![0; width],
        remainder: vec![0; width],
        exponential: vec![table.first().copied().unwrap_or(0); width],
        flag: vec![1; width],
        attention: vec![0; width],
        shift: 0,
        row_excess: 0,
    };
    let scaled: Vec<(usize, i128)> = (0..width)
        .filter(|&j| kept(j))
        .map(|j| (j, i128::from(scores.get(j).copied().unwrap_or(0)) * i128::from(params.multiplier)))
        .collect();
    let Some(max) = scaled.iter().map(|(_, v)| *v).max() else {
        return Ok(row); // a padded row: every entry masked
    };
    if max.unsigned_abs() >= 1u128 << 100 {
        return Err(AttentionError::NumericRange("a score times the softmax multiplier is too large".into()));
    }
    // The real log-sum-exp in units of 2^-g, then the nearby integer shifts.
    let unit = f64::from(1u32 << k);
    let exponent_unit = f64::from(1u32 << params.exponent_bits);
    let top = max as f64 / unit;
    let sum: f64 = scaled.iter().map(|(_, v)| ((*v as f64 / unit - top) / exponent_unit).exp()).sum();
    let lse = top + exponent_unit * sum.ln();
    // x ≥ 0 for every kept entry needs ẑ·2^k + 2^(k−1) ≥ max S·M.
    let lowest = (max - (1i128 << (k - 1))).div_euclid(1i128 << k)
        + i128::from((max - (1i128 << (k - 1))).rem_euclid(1i128 << k) != 0);
    let centre = lse.round() as i128;
    let mut best: Option<(i64, i128)> = None;
    for shift in (centre - 2).max(lowest)..=(centre + 3).max(lowest + 1) {
        let mut total = 0i64;
        let mut fits = true;
        for (_, v) in &scaled {
            let x = ((shift << k) + (1i128 << (k - 1)) - v) >> k;
            if x >> (2 * DIGIT_BITS) != 0 {
                fits = false;
                break;
            }
            if x < 1 << DIGIT_BITS {
                total += table.get(x as usize).copied().unwrap_or(0);
            }
        }
        if !fits {
            continue;
        }
        let distance = (total - one).abs();
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, shift));
        }
    }
    let Some((distance, shift)) = best else {
        return Err(AttentionError::NumericRange(
            "the scores of a row spread beyond 2^32 exponent units; lower the score scale".into(),
        ));
    };
    if distance >= params.tolerance() {
        return Err(AttentionError::NumericRange(format!(
            "no row shift brings the row sum within 2^{} ± {} (best distance {distance})",
            params.output_bits,
            params.tolerance()
        )));
    }
    row.shift =
        i64::try_from(shift).map_err(|_| AttentionError::NumericRange("row shift beyond i64".into()))?;
    let mut total = 0i64;
    for (j, v) in scaled {
        let numerator = (shift << k) + (1i128 << (k - 1)) - v;
        let x = numerator >> k;
        let (lo, hi) = ((x & 0xFFFF) as i64, (x >> DIGIT_BITS) as i64);
        let e = table.get(lo as usize).copied().unwrap_or(0);
        let flag = i64::from(hi == 0);
        row.low[j] = lo;
        row.high[j] = hi;
        row.remainder[j] = (numerator & ((1i128 << k) - 1)) as i64;
        row.exponential[j] = e;
        row.flag[j] = flag;
        row.attention[j] = e * flag;
        total += e * flag;
    }
    row.row_excess = total - one + params.tolerance();
    Ok(row)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_exp_matches_the_library_exp() {
        for i in 0..5000 {
            let a = i as f64 * 0.0137;
            let (ours, theirs) = (deterministic_exp_neg(a), (-a).exp());
            assert!((ours - theirs).abs() <= 1e-10 * theirs.max(1e-300), "a = {a}: {ours} vs {theirs}");
        }
    }

    /// A plain reference: float softmax of the real exponents, scaled by 2^f.
    fn reference_row(params: &SoftmaxParams, scores: &[i64]) -> Vec<f64> {
        let c = params.multiplier as f64 / 2f64.powi((params.exponent_bits + params.shift) as i32);
        let max = scores.iter().map(|&s| s as f64 * c).fold(f64::MIN, f64::max);
        let exps: Vec<f64> = scores.iter().map(|&s| (s as f64 * c - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        exps.iter().map(|e| e / sum * params.one() as f64).collect()
    }

    #[test]
    fn rows_match_the_float_reference_within_the_bound() {
        let shape = AttentionShape::new(16, 1, 4, 4).unwrap();
        let params = SoftmaxParams::for_score_scale(0.05, 16).unwrap();
        let rows: Vec<Vec<i64>> = vec![
            vec![0; 16],                                             // all equal
            (0..16).map(|j| if j == 3 { 400 } else { 0 }).collect(), // one dominant
            (0..16).map(|j| j * 37 - 300).collect(),
            (0..16).map(|j| if j % 2 == 0 { 1 << 20 } else { -(1 << 20) }).collect(), // huge spread
            (0..16).map(|j| -(1i64 << 24) + j).collect(),                             // very negative
        ];
        for scores in rows {
            let mut tensor = vec![0i64; 16 * 16];
            tensor[15 * 16..].copy_from_slice(&scores); // the last row sees every column (causal)
            let w = compute_softmax_witness(&shape, MaskKind::Causal, &params, &tensor).unwrap();
            let ours = &w.attention[15 * 16..];
            let reference = reference_row(&params, &scores);
            let total: i64 = ours.iter().sum();
            assert!((total - params.one()).abs() < params.tolerance(), "{scores:?}");
            for (a, r) in ours.iter().zip(&reference) {
                // Per entry: table rounding (0.5) and the shift/rounding of x (≤ 2^-g relative).
                let bound = 0.5 + r * 2.0 * 2f64.powi(-(params.exponent_bits as i32)) + 1.0;
                assert!((*a as f64 - r).abs() <= bound, "{a} vs {r} for {scores:?}");
            }
            // The first row is causal: only j = 0 is kept, so it carries all the mass.
            assert_eq!(w.attention[..16].iter().filter(|&&a| a != 0).count(), 1);
            assert!((w.attention[0] - params.one()).abs() < params.tolerance());
        }
    }

    #[test]
    fn a_spread_beyond_the_tables_is_reported() {
        let shape = AttentionShape::new(2, 1, 4, 4).unwrap();
        let params = SoftmaxParams::for_score_scale(0.05, 2).unwrap();
        let scores = vec![0, 0, 1i64 << 30, -(1i64 << 30)];
        assert!(matches!(
            compute_softmax_witness(&shape, MaskKind::None, &params, &scores),
            Err(AttentionError::NumericRange(_))
        ));
    }

    #[test]
    fn padded_rows_are_zero_and_relations_hold() {
        let shape = AttentionShape::new(5, 3, 4, 4).unwrap();
        let params = SoftmaxParams::for_score_scale(0.01, 8).unwrap();
        let (sp, hp) = (shape.padded_seq_len(), shape.padded_heads());
        let scores: Vec<i64> = (0..hp * sp * sp).map(|t| (t as i64 * 7919) % 2001 - 1000).collect();
        let w = compute_softmax_witness(&shape, MaskKind::None, &params, &scores).unwrap();
        let k = params.shift;
        for t in 0..hp * sp * sp {
            let (row, j) = (t / sp, t % sp);
            let i = row % sp;
            if row / sp < shape.heads && keeps(MaskKind::None, 5, i, j) {
                let lhs = (i128::from(w.shift[row]) << k) + (1i128 << (k - 1))
                    - i128::from(scores[t]) * i128::from(params.multiplier);
                let rhs = ((i128::from(w.low[t]) + (i128::from(w.high[t]) << 16)) << k)
                    + i128::from(w.remainder[t]);
                assert_eq!(lhs, rhs, "entry {t}");
                assert!((0..1 << k).contains(&w.remainder[t]));
            } else {
                assert_eq!(w.attention[t], 0);
            }
            assert!((0..1 << 16).contains(&w.low[t]) && (0..1 << 16).contains(&w.high[t]));
            assert_eq!(w.flag[t], i64::from(w.high[t] == 0));
        }
        for row in 0..hp * sp {
            let excess = w.row_excess[row];
            assert!((0..1 << params.tolerance_bits).contains(&excess));
            if row % sp >= 5 || row / sp >= shape.heads {
                assert_eq!(excess, 0);
            }
        }
    }
}
