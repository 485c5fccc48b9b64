//! Closed-form evaluations of the structured matrices of the protocol, so the verifier never
//! materializes them.
//!
//! ```text
//! prefix_eq_sum(n, r)           = Σ_{i<n} eq(i, r)                                   O(log)
//! prefix_eq_pair_sum(n, a, b)   = Σ_{i<n} eq(i, a)·eq(i, b)                          O(log)
//! zeroifier(causal, s, r, c)    = Σ_{i<s} Σ_{j≤i} eq(i, r)·eq(j, c)                  O(log), bit DP
//! zeroifier(none, s, r, c)      = prefix_eq_sum(s, r) · prefix_eq_sum(s, c)          O(log)
//! mask_matrix(kind, s, r, c)    = MASK · (1 − zeroifier(kind, s, r, c))              O(log)
//! head_padding(h, w, u, p)      = Σ_{head<h} Σ_{c<w} eq(head·w + c, u)·eq(head·ŵ + c, p)   O(h·w)
//! ```
//!
//! `head_padding` is the MLE of the padding matrix `P[i][j]` (`i = head·m + c`,
//! `j = head·m̂ + c`) at row point `u`, column point `p`; the unpadding matrix is its transpose:
//! `U(x, y) = head_padding(h, m_v, y, x)`. Points are in the project's variable order
//! (`docs/CONVENTIONS.md`); each function is tested against its materialized MLE.

use crate::MaskKind;
use zkmha_field::{Fr, One, Zero};
use zkmha_mle::{eq_evaluation, eq_table, log2_ceil};

/// The value written into masked score entries: `−2^100`, outside the range of any real score
/// (integer inputs below 2^31 and head widths below 2^20 give |score| < 2^82).
pub fn mask_value() -> Fr {
    -Fr::from(2u64).pow_u64(100)
}

trait PowU64 {
    fn pow_u64(self, e: u64) -> Self;
}
impl PowU64 for Fr {
    fn pow_u64(self, e: u64) -> Self {
        zkmha_field::Field::pow(&self, [e])
    }
}

/// `Σ_{i < bound} Π_k w_k(i_k)` over `i ∈ {0,1}^n`, where `weights[k] = (w_k(0), w_k(1))`.
///
/// The `i < bound` are grouped by the highest bit `k` where `i` has 0 and `bound` has 1: above
/// `k` they copy `bound`, below it they are free, and a free bit contributes `w(0) + w(1)`.
fn weighted_prefix_sum(bound: usize, weights: &[(Fr, Fr)]) -> Fr {
    let n = weights.len();
    if n < usize::BITS as usize && bound >= 1usize << n {
        return weights.iter().map(|(w0, w1)| *w0 + w1).product();
    }
    // free[k] = Π_{j<k} (w_j(0) + w_j(1))
    let mut free = Vec::with_capacity(n + 1);
    free.push(Fr::one());
    for (w0, w1) in weights {
        let last = free.last().copied().unwrap_or_else(Fr::one);
        free.push(last * (*w0 + w1));
    }
    let mut total = Fr::zero();
    let mut above = Fr::one();
    for k in (0..n).rev() {
        let (w0, w1) = weights.get(k).copied().unwrap_or_default();
        if (bound >> k) & 1 == 1 {
            total += above * w0 * free.get(k).copied().unwrap_or_else(Fr::one);
            above *= w1;
        } else {
            above *= w0;
        }
    }
    total
}

/// `Σ_{i < bound} eq(i, r)`: the MLE of the indicator `[i < bound]` at `r`.
pub fn prefix_eq_sum(bound: usize, r: &[Fr]) -> Fr {
    let weights: Vec<(Fr, Fr)> = r.iter().map(|x| (Fr::one() - x, *x)).collect();
    weighted_prefix_sum(bound, &weights)
}

/// `Σ_{i < bound} eq(i, a)·eq(i, b)` (`a` and `b` of equal length).
pub fn prefix_eq_pair_sum(bound: usize, a: &[Fr], b: &[Fr]) -> Fr {
    let weights: Vec<(Fr, Fr)> =
        a.iter().zip(b).map(|(x, y)| ((Fr::one() - x) * (Fr::one() - y), *x * y)).collect();
    weighted_prefix_sum(bound, &weights)
}

/// The MLE of the padded zeroifier `z[i][j]` (1 where the score is kept) at row point `r`,
/// column point `c` (both `log ŝ` coordinates).
///
/// Causal: `z[i][j] = [i < s ∧ j ≤ i]`; none: `z[i][j] = [i < s ∧ j < s]`; a sliding window
/// of `w`: `z[i][j] = [i < s ∧ j ≤ i ∧ i − j < w]`, the causal zeroifier less the entries
/// `j + w ≤ i` ([`shifted_lower_sum`]). O(log ŝ) field operations in every case.
pub fn zeroifier(kind: MaskKind, seq_len: usize, r: &[Fr], c: &[Fr]) -> Fr {
    match kind {
        MaskKind::None => prefix_eq_sum(seq_len, r) * prefix_eq_sum(seq_len, c),
        MaskKind::Causal => causal_zeroifier(seq_len, r, c),
        MaskKind::Sliding { window } => {
            causal_zeroifier(seq_len, r, c) - shifted_lower_sum(seq_len, window.get() as usize, r, c)
        }
    }
}

/// `Σ_{i<s} Σ_{j + w ≤ i} eq(i, r)·eq(j, c)` over `i, j ∈ {0,1}^n` (`n` = the shorter
/// point's length): the entries a window of `w` drops from the causal mask.
///
/// A dynamic programme over the bits, *lowest* first, as the addition `j + w` runs: the
/// state is the carry of `j + w` into the next bit, whether the low bits so far have
/// `(j + w) ≤ i`, and whether they have `i < s` (a higher bit that differs overrides a lower
/// one, so each comparison is the last difference seen). At the end the carry must be 0 and
/// `w` must have no bit at or above `n` (else `j + w ≥ 2^n > i`); `s` with a bit at or above
/// `n` has `i < s` for every `i`.
fn shifted_lower_sum(seq_len: usize, window: usize, r: &[Fr], c: &[Fr]) -> Fr {
    let n = r.len().min(c.len());
    let high = |value: usize| n < usize::BITS as usize && value >> n != 0;
    if high(window) {
        return Fr::zero();
    }
    // state index: 4·carry + 2·[(j + w) ≤ i so far] + [i < s so far]
    let mut state = [Fr::zero(); 8];
    state[2] = Fr::one();
    for k in 0..n {
        let bit = |value: usize| if k < usize::BITS as usize { (value >> k) & 1 } else { 0 };
        let (w_bit, s_bit) = (bit(window), bit(seq_len));
        let (rk, ck) = (r.get(k).copied().unwrap_or_default(), c.get(k).copied().unwrap_or_default());
        let wi = [Fr::one() - rk, rk];
        let wj = [Fr::one() - ck, ck];
        let mut next = [Fr::zero(); 8];
        for (index, weight) in state.iter().enumerate() {
            if weight.is_zero() {
                continue;
            }
            let (carry, at_most, below) = (index >> 2, (index >> 1) & 1 == 1, index & 1 == 1);
            for (i_bit, i_weight) in wi.iter().enumerate() {
                let below_next = if i_bit == s_bit { below } else { i_bit < s_bit };
                for (j_bit, j_weight) in wj.iter().enumerate() {
                    let sum = j_bit + w_bit + carry;
                    let (out_bit, carry_next) = (sum & 1, sum >> 1);
                    let at_most_next = if out_bit == i_bit { at_most } else { out_bit < i_bit };
                    let slot = 4 * carry_next + 2 * usize::from(at_most_next) + usize::from(below_next);
                    if let Some(entry) = next.get_mut(slot) {
                        *entry += *weight * i_weight * j_weight;
                    }
                }
            }
        }
        state = next;
    }
    // carry 0, (j + w) ≤ i, and i < s (by the low bits, or by a bit of s above them)
    if high(seq_len) { state[2] + state[3] } else { state[3] }
}

/// `Σ_{i<s} Σ_{j≤i} eq(i, r)·eq(j, c)` by a dynamic programme over the bits, highest first,
/// with the states (i vs s ∈ {equal so far, below}) × (j vs i ∈ {equal so far, below}).
fn causal_zeroifier(seq_len: usize, r: &[Fr], c: &[Fr]) -> Fr {
    let n = r.len().min(c.len());
    // state index: 2·[i < s decided] + [j < i decided]
    let mut state = [Fr::zero(); 4];
    let whole = n < usize::BITS as usize && seq_len >= 1usize << n;
    state[if whole { 2 } else { 0 }] = Fr::one();
    for k in (0..n).rev() {
        let s_bit = (seq_len >> k) & 1;
        let (rk, ck) = (r.get(k).copied().unwrap_or_default(), c.get(k).copied().unwrap_or_default());
        let wi = [Fr::one() - rk, rk];
        let wj = [Fr::one() - ck, ck];
        let mut next = [Fr::zero(); 4];
        for (index, weight) in state.iter().enumerate() {
            if weight.is_zero() {
                continue;
            }
            let (i_below, j_below) = (index >> 1 == 1, index & 1 == 1);
            for i_bit in 0..2usize {
                if !i_below && i_bit > s_bit {
                    continue;
                }
                let i_next = i_below || i_bit < s_bit;
                for j_bit in 0..2usize {
                    if !j_below && j_bit > i_bit {
                        continue;
                    }
                    let j_next = j_below || j_bit < i_bit;
                    let slot = 2 * usize::from(i_next) + usize::from(j_next);
                    if let Some(entry) = next.get_mut(slot) {
                        *entry += *weight * wi[i_bit] * wj[j_bit];
                    }
                }
            }
        }
        state = next;
    }
    // accept i < s (strictly) and j ≤ i (either state)
    state[2] + state[3]
}

/// The MLE of the mask matrix `m[i][j] = MASK · (1 − z[i][j])` at (`r`, `c`).
pub fn mask_matrix(kind: MaskKind, seq_len: usize, r: &[Fr], c: &[Fr]) -> Fr {
    mask_value() * (Fr::one() - zeroifier(kind, seq_len, r, c))
}

/// `Σ_{head<h} Σ_{c<w} eq(head·w + c, unpadded)·eq(head·ŵ + c, padded)`, `ŵ = 2^⌈log₂ w⌉`.
///
/// The padding matrix `P` (rows: the `h·w` real columns, padded to a power of two; columns:
/// `ĥ·ŵ`) at row point `unpadded` and column point `padded`. O(h·w) after two eq tables
/// of the points (the lengths are `⌈log₂(h·w)⌉` and `⌈log₂ h⌉ + ⌈log₂ w⌉`).
pub fn head_padding(heads: usize, width: usize, unpadded: &[Fr], padded: &[Fr]) -> Fr {
    let width_vars = log2_ceil(width);
    let (padded_low, padded_high) = padded.split_at(width_vars.min(padded.len()));
    let rows = eq_table(unpadded);
    let within_head = eq_table(padded_low);
    let head_weights = eq_table(padded_high);
    let mut total = Fr::zero();
    for (head, head_weight) in head_weights.iter().enumerate().take(heads) {
        let mut sum = Fr::zero();
        for (c, weight) in within_head.iter().enumerate().take(width) {
            if let Some(row) = rows.get(head * width + c) {
                sum += *row * weight;
            }
        }
        total += sum * head_weight;
    }
    total
}

/// The MLE of the head-selector vector `b[x] = eq(⌊x / m̂⌋, r_head)` at `point`
/// (`log m̂` low coordinates, then `log ĥ`).
pub fn head_selector(head_dim_vars: usize, r_head: &[Fr], point: &[Fr]) -> Fr {
    point.get(head_dim_vars..).and_then(|high| eq_evaluation(high, r_head).ok()).unwrap_or_else(Fr::zero)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_mle::{DenseMultilinearExtension, matrix_point, padded_len};

    fn random_point(n: usize, rng: &mut StdRng) -> Vec<Fr> {
        (0..n).map(|_| Fr::rand(rng)).collect()
    }

    fn mle_of_matrix(
        rows: usize,
        cols: usize,
        entry: impl Fn(usize, usize) -> bool,
    ) -> DenseMultilinearExtension {
        let data: Vec<Fr> = (0..rows)
            .flat_map(|i| (0..cols).map(move |j| (i, j)))
            .map(|(i, j)| Fr::from(u64::from(entry(i, j))))
            .collect();
        DenseMultilinearExtension::from_matrix(rows, cols, &data).unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn prefix_sums_match_materialized_indicator() {
        let mut rng = StdRng::seed_from_u64(1);
        for n in 0..=6usize {
            for bound in 0..=(1usize << n) {
                let r = random_point(n, &mut rng);
                let a = random_point(n, &mut rng);
                let table: Vec<Fr> = (0..1usize << n).map(|i| Fr::from(u64::from(i < bound))).collect();
                let mle =
                    DenseMultilinearExtension::new(n, table.clone()).unwrap_or_else(|e| unreachable!("{e}"));
                assert_eq!(
                    prefix_eq_sum(bound, &r),
                    mle.evaluate(&r).unwrap_or_default(),
                    "n={n} bound={bound}"
                );
                let ea = eq_table(&a);
                let er = eq_table(&r);
                let direct: Fr = (0..bound).map(|i| ea[i] * er[i]).sum();
                assert_eq!(prefix_eq_pair_sum(bound, &a, &r), direct);
            }
        }
    }

    #[test]
    fn zeroifiers_and_masks_match_materialized_matrices() {
        let mut rng = StdRng::seed_from_u64(2);
        for s in [1usize, 2, 3, 5, 7, 8, 16, 33] {
            let padded = padded_len(s);
            let n = zkmha_mle::log2_ceil(s);
            let windows =
                [1usize, 2, 3, s.saturating_sub(1).max(1), s, s + 1, padded, 2 * padded + 1, 1 << 31];
            let slidings = windows.iter().filter_map(|&w| MaskKind::sliding(w));
            for kind in [MaskKind::Causal, MaskKind::None].into_iter().chain(slidings) {
                let keep = |i: usize, j: usize| match kind {
                    MaskKind::Causal => i < s && j <= i,
                    MaskKind::None => i < s && j < s,
                    MaskKind::Sliding { window } => i < s && j <= i && i < j + window.get() as usize,
                };
                let z = mle_of_matrix(padded, padded, keep);
                let mask_data: Vec<Fr> = (0..padded * padded)
                    .map(|x| if keep(x / padded, x % padded) { Fr::zero() } else { mask_value() })
                    .collect();
                let m = DenseMultilinearExtension::from_matrix(padded, padded, &mask_data)
                    .unwrap_or_else(|e| unreachable!("{e}"));
                for _ in 0..4 {
                    let (r, c) = (random_point(n, &mut rng), random_point(n, &mut rng));
                    let point = matrix_point(&r, &c);
                    assert_eq!(
                        zeroifier(kind, s, &r, &c),
                        z.evaluate(&point).unwrap_or_default(),
                        "{kind:?} s={s}"
                    );
                    assert_eq!(mask_matrix(kind, s, &r, &c), m.evaluate(&point).unwrap_or_default());
                }
            }
        }
    }

    #[test]
    fn head_padding_matches_materialized_padding_and_unpadding_matrices() {
        let mut rng = StdRng::seed_from_u64(3);
        for (h, w) in [(1usize, 1usize), (1, 3), (3, 2), (3, 5), (8, 4), (12, 3), (5, 7)] {
            let (hp, wp) = (padded_len(h), padded_len(w));
            let rows = padded_len(h * w);
            let cols = hp * wp;
            // P[i][j] = 1 iff j mod ŵ < w, j / ŵ < h, i = (j / ŵ)·w + j mod ŵ
            let p = mle_of_matrix(rows, cols, |i, j| j % wp < w && j / wp < h && i == (j / wp) * w + j % wp);
            // U[i][j] = 1 iff j / w < h, i / ŵ = j / w, i mod ŵ = j mod w
            let u = mle_of_matrix(cols, rows, |i, j| j / w < h && i / wp == j / w && i % wp == j % w);
            for _ in 0..4 {
                let row = random_point(zkmha_mle::log2_ceil(rows), &mut rng);
                let col = random_point(zkmha_mle::log2_ceil(cols), &mut rng);
                assert_eq!(
                    head_padding(h, w, &row, &col),
                    p.evaluate(&matrix_point(&row, &col)).unwrap_or_default()
                );
                assert_eq!(
                    head_padding(h, w, &row, &col),
                    u.evaluate(&matrix_point(&col, &row)).unwrap_or_default()
                );
            }
        }
    }

    #[test]
    fn head_selector_matches_materialized_vector() {
        let mut rng = StdRng::seed_from_u64(4);
        for (head_vars, dim_vars) in [(0usize, 0usize), (0, 3), (2, 0), (2, 3), (4, 6)] {
            let r_head = random_point(head_vars, &mut rng);
            let heads = eq_table(&r_head);
            let table: Vec<Fr> =
                (0..1usize << (head_vars + dim_vars)).map(|x| heads[x >> dim_vars]).collect();
            let b = DenseMultilinearExtension::new(head_vars + dim_vars, table)
                .unwrap_or_else(|e| unreachable!("{e}"));
            let point = random_point(head_vars + dim_vars, &mut rng);
            assert_eq!(head_selector(dim_vars, &r_head, &point), b.evaluate(&point).unwrap_or_default());
        }
    }
}

/// The closed forms against materialized MLEs on further non-power-of-two shapes (s = 7, 9,
/// 12, 48, 100; h = 3, 9, 12; widths 48, 100), from the audit.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod closed_forms_on_more_shapes {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_mle::{DenseMultilinearExtension, matrix_point, padded_len};

    fn pt(n: usize, rng: &mut StdRng) -> Vec<Fr> {
        (0..n).map(|_| Fr::rand(rng)).collect()
    }

    fn mle(rows: usize, cols: usize, entry: impl Fn(usize, usize) -> Fr) -> DenseMultilinearExtension {
        let data: Vec<Fr> =
            (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| entry(i, j)).collect();
        DenseMultilinearExtension::from_matrix(rows, cols, &data).unwrap()
    }

    #[test]
    fn zeroifier_mask_prefix_on_more_lengths() {
        let mut rng = StdRng::seed_from_u64(11);
        for s in [7usize, 9, 12, 31, 48, 64, 65, 100, 127, 128] {
            let sp = padded_len(s);
            let n = zkmha_mle::log2_ceil(s);
            let windows = [1usize, 2, 3, s.saturating_sub(1).max(1), s, s + 1, sp, 2 * sp + 1, 1 << 31];
            let slidings = windows.iter().filter_map(|&w| MaskKind::sliding(w));
            for kind in [MaskKind::Causal, MaskKind::None].into_iter().chain(slidings) {
                let keep = |i: usize, j: usize| match kind {
                    MaskKind::Causal => i < s && j <= i,
                    MaskKind::None => i < s && j < s,
                    MaskKind::Sliding { window } => i < s && j <= i && i < j + window.get() as usize,
                };
                let z = mle(sp, sp, |i, j| Fr::from(u64::from(keep(i, j))));
                let m = mle(sp, sp, |i, j| if keep(i, j) { Fr::zero() } else { mask_value() });
                for _ in 0..3 {
                    let (r, c) = (pt(n, &mut rng), pt(n, &mut rng));
                    let p = matrix_point(&r, &c);
                    assert_eq!(zeroifier(kind, s, &r, &c), z.evaluate(&p).unwrap(), "{kind:?} s={s}");
                    assert_eq!(mask_matrix(kind, s, &r, &c), m.evaluate(&p).unwrap(), "{kind:?} s={s}");
                }
            }
            let b = pt(n, &mut rng);
            let r = pt(n, &mut rng);
            let ind =
                DenseMultilinearExtension::new(n, (0..sp).map(|i| Fr::from(u64::from(i < s))).collect())
                    .unwrap();
            assert_eq!(prefix_eq_sum(s, &r), ind.evaluate(&r).unwrap());
            let (ea, eb) = (eq_table(&r), eq_table(&b));
            assert_eq!(prefix_eq_pair_sum(s, &r, &b), (0..s).map(|i| ea[i] * eb[i]).sum::<Fr>());
        }
    }

    #[test]
    fn head_padding_on_more_shapes() {
        let mut rng = StdRng::seed_from_u64(12);
        for (h, w) in [(12usize, 48usize), (9, 100), (3, 48), (12, 7), (9, 64), (1, 100), (3, 1)] {
            let (hp, wp) = (padded_len(h), padded_len(w));
            let rows = padded_len(h * w);
            let cols = hp * wp;
            let p = mle(rows, cols, |i, j| {
                Fr::from(u64::from(j % wp < w && j / wp < h && i == (j / wp) * w + j % wp))
            });
            for _ in 0..2 {
                let row = pt(zkmha_mle::log2_ceil(rows), &mut rng);
                let col = pt(zkmha_mle::log2_ceil(cols), &mut rng);
                assert_eq!(
                    head_padding(h, w, &row, &col),
                    p.evaluate(&matrix_point(&row, &col)).unwrap(),
                    "h={h} w={w}"
                );
            }
        }
    }
}
