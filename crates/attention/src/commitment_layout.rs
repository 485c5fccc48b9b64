//! One Hyrax layout for every polynomial a layer commits to, and the tiled variable order of
//! the `ĥ × ŝ × ŝ` softmax columns.
//!
//! ```text
//! layout     c = ⌈n_max/2⌉ column variables, n_max = the largest committed table of the layer;
//!            a table of n variables is a matrix of 2^min(n, c) columns (one row when n ≤ c)
//!            ⇒ every opening claim, once reduced to prefixes of one point, shares one
//!              combined row of 2^c entries (zkmha_pcs::Hyrax::open_multi)
//! tiles      a tensor index t = [t_j ‖ t_i ‖ t_h] (variable order: j bits low, then i, then head)
//!            is committed in the order  [j_0..j_{a−1} ‖ i_0..i_{b−1} ‖ j_a.. ‖ i_b.. ‖ t_h],
//!            a = ⌈c/2⌉, b = c − a  (identity when c ≥ 2·log ŝ)
//!            ⇒ a Hyrax row is a 2^b × 2^a tile of one head's (i, j) matrix, and under the
//!              causal mask the tiles above the diagonal are all zero: their row commitment is
//!              the identity (a bitmap bit in the proof, nothing in the verifier's MSM)
//! claims     committed(t') = tensor(t)  with  t'_k = t_{order[k]}:  a claim on the tensor at
//!            a point p is a claim on the committed table at  p' = (p_{order[k]})_k
//! ```

use crate::{AttentionShape, SoftmaxMode};
use rayon::prelude::*;
use zkmha_field::Fr;
use zkmha_pcs::split_vars;

/// Variables of the softmax lookup table (two segments of 2^16 rows).
pub(crate) const SOFTMAX_TABLE_VARS: usize = 17;

/// The largest table a layer of this shape commits to (inputs `Q`, `K`, `V`; the softmax's
/// `ĥ × ŝ × ŝ` columns and its exponent table's multiplicities when the softmax is proven).
pub fn largest_committed_vars(shape: &AttentionShape, softmax: SoftmaxMode) -> usize {
    let inputs = shape.seq_vars() + shape.model_vars().max(shape.value_model_vars());
    let softmax_vars = match softmax {
        SoftmaxMode::Identity => 0,
        SoftmaxMode::Exponential(_) => (2 * shape.seq_vars() + shape.head_vars()).max(SOFTMAX_TABLE_VARS),
    };
    inputs.max(softmax_vars)
}

/// The layer's column variables `c = ⌈n_max/2⌉` (so the generators number `2^c`).
pub fn layout_column_vars(shape: &AttentionShape, softmax: SoftmaxMode) -> usize {
    split_vars(largest_committed_vars(shape, softmax)).1
}

/// The zero-knowledge layer's column variables: the plain layout's, one more for the proven
/// softmax (at most `n_max`). Hiding commitments blind every row (none is the identity), so
/// their size is the number of rows; the zero-knowledge openings are logarithmic in the row
/// width (`zkmha_pcs::Hyrax::open_batch_committed_log`), so wider rows shrink the proof, but
/// the inner-product argument's prover folds one generator per column. Measured on the default
/// layer (docs/BENCHMARKS.md, before the opening shared its eq tables): one more variable
/// gave +20.7 % proof and 1.47× prover time, two more +4.3 % and 1.50×.
pub fn zk_layout_column_vars(shape: &AttentionShape, softmax: SoftmaxMode) -> usize {
    let plain = layout_column_vars(shape, softmax);
    match softmax {
        SoftmaxMode::Identity => plain,
        SoftmaxMode::Exponential(_) => (plain + 1).min(largest_committed_vars(shape, softmax)),
    }
}

/// Column variables of a committed table of `num_vars` variables under the layer's layout.
pub fn table_column_vars(num_vars: usize, layout: usize) -> usize {
    num_vars.min(layout)
}

/// The committed variable order of the `ĥ × ŝ × ŝ` tensors: `order[k]` is the tensor variable
/// at committed position `k`.
pub fn tensor_variable_order(shape: &AttentionShape, layout: usize) -> Vec<usize> {
    let seq = shape.seq_vars();
    let n = 2 * seq + shape.head_vars();
    let columns = table_column_vars(n, layout);
    if columns >= 2 * seq {
        return (0..n).collect();
    }
    let a = columns.div_ceil(2);
    let b = columns - a;
    (0..a).chain(seq..seq + b).chain(a..seq).chain(seq + b..2 * seq).chain(2 * seq..n).collect()
}

/// `p'` with `p'_k = p_{order[k]}`: the committed table's point for a tensor point.
pub fn permute_point(order: &[usize], point: &[Fr]) -> Vec<Fr> {
    order.iter().filter_map(|&v| point.get(v).copied()).collect()
}

/// A variable order as runs of consecutive variables, to move indices between the tensor and
/// the committed order (bit `k` of a committed index is bit `order[k]` of the tensor index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexPermutation {
    /// `(committed start, tensor start, length)` of each run.
    runs: Vec<(usize, usize, usize)>,
}

impl IndexPermutation {
    /// The permutation of `order`.
    pub fn new(order: &[usize]) -> Self {
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (k, &v) in order.iter().enumerate() {
            match runs.last_mut() {
                Some((start, from, len)) if *start + *len == k && *from + *len == v => *len += 1,
                _ => runs.push((k, v, 1)),
            }
        }
        Self { runs }
    }

    /// The committed index of tensor index `t`.
    #[inline]
    pub fn committed_index(&self, t: usize) -> usize {
        self.runs.iter().map(|&(start, from, len)| ((t >> from) & ((1usize << len) - 1)) << start).sum()
    }

    /// The tensor index of committed index `c`.
    #[inline]
    pub fn tensor_index(&self, c: usize) -> usize {
        self.runs.iter().map(|&(start, from, len)| ((c >> start) & ((1usize << len) - 1)) << from).sum()
    }

    /// `out[t'] = value(t)` for the `len` tensor indices, in the committed order.
    pub fn permuted<T: Send>(&self, len: usize, value: impl Fn(usize) -> T + Sync) -> Vec<T> {
        (0..len).into_par_iter().with_min_len(1 << 12).map(|c| value(self.tensor_index(c))).collect()
    }
}

/// The tensor's entries in the committed order: `out[t'] = values[t]`, where bit `k` of `t'`
/// is bit `order[k]` of `t`.
pub fn permute_values<T: Copy + Default + Send + Sync>(order: &[usize], values: &[T]) -> Vec<T> {
    IndexPermutation::new(order).permuted(values.len(), |t| values.get(t).copied().unwrap_or_default())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_mle::DenseMultilinearExtension;

    #[test]
    fn the_committed_table_at_the_permuted_point_is_the_tensor_at_the_point() {
        let mut rng = StdRng::seed_from_u64(1);
        for (seq, heads, layout) in [(6, 3, 4), (8, 1, 3), (5, 2, 9), (16, 2, 5), (4, 4, 1)] {
            let shape = AttentionShape::new(seq, heads, 2, 2).unwrap();
            let n = 2 * shape.seq_vars() + shape.head_vars();
            let order = tensor_variable_order(&shape, layout);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "a permutation");
            let values: Vec<i64> = (0..1i64 << n).map(|v| v * 7 % 23 - 11).collect();
            let permuted = permute_values(&order, &values);
            let permutation = IndexPermutation::new(&order);
            for t in 0..values.len() {
                assert_eq!(permutation.tensor_index(permutation.committed_index(t)), t);
            }
            // Bit by bit, the plain definition.
            for (t, v) in values.iter().enumerate() {
                let committed: usize = order.iter().enumerate().map(|(k, &var)| ((t >> var) & 1) << k).sum();
                assert_eq!(permuted[committed], *v);
            }
            let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
            let tensor = DenseMultilinearExtension::from_i64(n, &values).unwrap();
            let table = DenseMultilinearExtension::from_i64(n, &permuted).unwrap();
            assert_eq!(
                table.evaluate(&permute_point(&order, &point)).unwrap(),
                tensor.evaluate(&point).unwrap()
            );
        }
    }

    #[test]
    fn causal_tiles_above_the_diagonal_are_whole_zero_rows() {
        // ŝ = 16, c = 5: tiles of 2^2 query rows × 2^3 key columns.
        let shape = AttentionShape::new(16, 1, 2, 2).unwrap();
        let order = tensor_variable_order(&shape, 5);
        assert_eq!(order, vec![0, 1, 2, 4, 5, 3, 6, 7]);
        let causal: Vec<i64> = (0..256).map(|t| i64::from(t % 16 <= t / 16)).collect();
        let permuted = permute_values(&order, &causal);
        let zero_rows = permuted.chunks(32).filter(|row| row.iter().all(|v| *v == 0)).count();
        // Query blocks 0..4 (4 rows each), key blocks 0..2 (8 columns each): block (I, J) is
        // zero when 4I + 3 < 8J: (0, 1) and (1, 1).
        assert_eq!(zero_rows, 2);
        // The plain layout has no zero row at all.
        assert_eq!(causal.chunks(32).filter(|row| row.iter().all(|v| *v == 0)).count(), 0);
    }
}
