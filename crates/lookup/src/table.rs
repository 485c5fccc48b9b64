//! Public lookup tables: the prover reads their rows, the verifier evaluates their columns'
//! MLEs at one point itself (closed forms where the table has structure); no table is sent.

use crate::LookupError;
use zkmha_field::{Fr, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;

/// The largest table: `2^MAX_TABLE_VARS` rows (the verifier may evaluate a table in
/// `O(2^t)`).
pub const MAX_TABLE_VARS: usize = 20;

/// A public table of `2^num_vars` rows and `num_columns` integer columns.
pub trait LookupTable: Sync {
    /// A short name, absorbed into the transcript and used in error messages.
    fn name(&self) -> &'static str;
    /// `t`: the table has `2^t` rows.
    fn num_vars(&self) -> usize;
    /// Columns per row (a lookup of tuples when above 1).
    fn num_columns(&self) -> usize;
    /// Row `index`.
    fn row(&self, index: usize) -> Vec<i64>;
    /// The row equal to `tuple`, if there is one.
    fn index_of(&self, tuple: &[i64]) -> Option<usize>;
    /// Every column's MLE at `point` (`t` coordinates).
    ///
    /// # Errors
    /// [`LookupError::WrongLength`] for a point of another length.
    fn evaluate_columns(&self, point: &[Fr]) -> Result<Vec<Fr>, LookupError>;
    /// `Some(bits)` only for a [`RangeTable`] (the range `[0, 2^bits)`): lookups of one batch
    /// into range tables of equal bits share one table block (their multiplicities added).
    /// `None` (the default) for every other table, which is its own block. Sealed: the token
    /// cannot be named outside this crate, so no other table can claim a range's rows (a
    /// table that did would have its lookups checked against the range's rows).
    fn range_bits(&self, _sealed: sealed::Token) -> Option<usize> {
        None
    }
}

/// The token that seals [`LookupTable::range_bits`].
pub(crate) mod sealed {
    /// Only this crate can name it.
    #[derive(Clone, Copy, Debug)]
    pub struct Token;
}

/// `Σ_i 2^i·r_i`: the MLE of the identity column `T(y) = y` (little-endian bits).
pub fn identity_column(point: &[Fr]) -> Fr {
    point.iter().rev().fold(Fr::from(0u64), |acc, r| acc + acc + r)
}

/// The range `[0, 2^bits)`: one column, `T(y) = y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeTable {
    bits: usize,
}

impl RangeTable {
    /// The range `[0, 2^bits)`.
    ///
    /// # Errors
    /// [`LookupError::InvalidTable`] for `bits` 0 or above [`MAX_TABLE_VARS`].
    pub fn new(bits: usize) -> Result<Self, LookupError> {
        if bits == 0 || bits > MAX_TABLE_VARS {
            return Err(LookupError::InvalidTable("a range needs 1 to 20 bits"));
        }
        Ok(Self { bits })
    }
}

impl LookupTable for RangeTable {
    fn name(&self) -> &'static str {
        "range"
    }
    fn num_vars(&self) -> usize {
        self.bits
    }
    fn num_columns(&self) -> usize {
        1
    }
    fn row(&self, index: usize) -> Vec<i64> {
        vec![index as i64]
    }
    fn index_of(&self, tuple: &[i64]) -> Option<usize> {
        match tuple {
            [v] if (0..1i64 << self.bits).contains(v) => Some(*v as usize),
            _ => None,
        }
    }
    fn evaluate_columns(&self, point: &[Fr]) -> Result<Vec<Fr>, LookupError> {
        if point.len() != self.bits {
            return Err(LookupError::WrongLength {
                what: "table point",
                expected: self.bits,
                got: point.len(),
            });
        }
        Ok(vec![identity_column(point)])
    }
    fn range_bits(&self, _sealed: sealed::Token) -> Option<usize> {
        Some(self.bits)
    }
}

/// A function on `[0, 2^bits)`: rows `(y, f(y))`. The outputs come from public parameters
/// (both sides build the same table); the verifier evaluates the output column's MLE in
/// `O(2^bits)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionTable {
    name: &'static str,
    bits: usize,
    outputs: Vec<i64>,
}

impl FunctionTable {
    /// The table of `outputs[y]` for `y < 2^bits`.
    ///
    /// # Errors
    /// [`LookupError::InvalidTable`] unless `outputs` has `2^bits` entries, `1 ≤ bits ≤ 20`.
    pub fn new(name: &'static str, bits: usize, outputs: Vec<i64>) -> Result<Self, LookupError> {
        if bits == 0 || bits > MAX_TABLE_VARS || outputs.len() != 1usize << bits {
            return Err(LookupError::InvalidTable("a function table has 2^bits outputs, 1 ≤ bits ≤ 20"));
        }
        Ok(Self { name, bits, outputs })
    }

    /// `f(y)`.
    pub fn output(&self, input: usize) -> Option<i64> {
        self.outputs.get(input).copied()
    }
}

impl LookupTable for FunctionTable {
    fn name(&self) -> &'static str {
        self.name
    }
    fn num_vars(&self) -> usize {
        self.bits
    }
    fn num_columns(&self) -> usize {
        2
    }
    fn row(&self, index: usize) -> Vec<i64> {
        vec![index as i64, self.outputs.get(index).copied().unwrap_or(0)]
    }
    fn index_of(&self, tuple: &[i64]) -> Option<usize> {
        match tuple {
            [x, y] if usize::try_from(*x).ok().and_then(|i| self.outputs.get(i)) == Some(y) => {
                Some(*x as usize)
            }
            _ => None,
        }
    }
    fn evaluate_columns(&self, point: &[Fr]) -> Result<Vec<Fr>, LookupError> {
        if point.len() != self.bits {
            return Err(LookupError::WrongLength {
                what: "table point",
                expected: self.bits,
                got: point.len(),
            });
        }
        let outputs = DenseMultilinearExtension::new(
            self.bits,
            self.outputs.iter().map(|&v| fr_from_i64(v)).collect(),
        )?;
        Ok(vec![identity_column(point), outputs.evaluate(point)?])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};

    #[test]
    fn closed_forms_match_the_materialized_columns() {
        let mut rng = StdRng::seed_from_u64(5);
        for bits in 1..=8 {
            let point: Vec<Fr> = (0..bits).map(|_| Fr::rand(&mut rng)).collect();
            let table = RangeTable::new(bits).unwrap();
            let column: Vec<Fr> = (0..1i64 << bits).map(fr_from_i64).collect();
            let mle = DenseMultilinearExtension::new(bits, column).unwrap();
            assert_eq!(
                table.evaluate_columns(&point).ok(),
                Some(vec![mle.evaluate(&point).unwrap_or_default()])
            );
            let outputs: Vec<i64> = (0..1i64 << bits).map(|y| 1000 - 3 * y * y).collect();
            let f = FunctionTable::new("square", bits, outputs.clone()).unwrap();
            let mle = DenseMultilinearExtension::from_i64(bits, &outputs).unwrap();
            assert_eq!(
                f.evaluate_columns(&point).ok().map(|c| c[1]),
                Some(mle.evaluate(&point).unwrap_or_default())
            );
            assert_eq!(
                f.index_of(&[3, 1000 - 27]).filter(|_| bits >= 2),
                if bits >= 2 { Some(3) } else { None }
            );
            assert_eq!(f.index_of(&[1, 0]), None);
            assert_eq!(table.index_of(&[1i64 << bits]), None);
            assert_eq!(table.index_of(&[-1]), None);
        }
    }
}

/// The output column of one segment of a [`SegmentedTable`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentOutput {
    /// Always 0 (a range check on the input).
    Zero,
    /// `[input = 0]`.
    IsZero,
    /// `[input ≠ 0]`.
    IsNonZero,
    /// `outputs[input]` (public, `2^bits` entries).
    Function(Vec<i64>),
    /// `constant − outputs[input]` (public, `2^bits` entries): the complement of a function,
    /// whose column is 0 where the function equals `constant` (cheaper to commit).
    ConstantMinus {
        /// The constant.
        constant: i64,
        /// The function subtracted.
        outputs: Vec<i64>,
    },
}

/// One segment: inputs `[0, 2^bits)` and their outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Input bits.
    pub bits: usize,
    /// The output column.
    pub output: SegmentOutput,
}

impl Segment {
    fn output_at(&self, input: usize) -> Option<i64> {
        match &self.output {
            SegmentOutput::Zero => Some(0),
            SegmentOutput::IsZero => Some(i64::from(input == 0)),
            SegmentOutput::IsNonZero => Some(i64::from(input != 0)),
            SegmentOutput::Function(outputs) => outputs.get(input).copied(),
            SegmentOutput::ConstantMinus { constant, outputs } => outputs.get(input).map(|v| constant - v),
        }
    }
}

/// Several tables in one: rows `(tag, input, output)`, segment `tag` at rows
/// `tag·2^T .. (tag + 1)·2^T` with `T` the largest segment's bits. A segment with fewer
/// bits repeats its row 0 as padding, and the segment count is padded to a power of two
/// with copies of an empty range segment, so every column has a closed form:
///
/// ```text
/// point = [r_low (T) ‖ r_tag],   w_s = eq(r_tag, s),   e_s = Π_{b_s ≤ i < T} (1 − r_low,i)
/// tag(r)    = Σ_i 2^i·r_tag,i
/// input(r)  = Σ_s w_s · id(r_low[..b_s]) · e_s
/// output(r) = Σ_s w_s · (out_s(r_low[..b_s]) · e_s + out_s(0) · (1 − e_s))
/// ```
///
/// One lookup into a segmented table proves several lookups with one fractional sum and
/// leaves all their witness claims at one point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentedTable {
    name: &'static str,
    segments: Vec<Segment>,
    row_vars: usize,
}

impl SegmentedTable {
    /// A table from its segments (at most 16, each of at most [`MAX_TABLE_VARS`] − 4 bits,
    /// function outputs of the right length).
    ///
    /// # Errors
    /// [`LookupError::InvalidTable`].
    pub fn new(name: &'static str, mut segments: Vec<Segment>) -> Result<Self, LookupError> {
        if segments.is_empty() || segments.len() > 16 {
            return Err(LookupError::InvalidTable("a segmented table has 1 to 16 segments"));
        }
        for segment in &segments {
            if segment.bits > MAX_TABLE_VARS - 4 {
                return Err(LookupError::InvalidTable("a segment has at most 16 bits"));
            }
            if let SegmentOutput::Function(outputs) | SegmentOutput::ConstantMinus { outputs, .. } =
                &segment.output
                && outputs.len() != 1usize << segment.bits
            {
                return Err(LookupError::InvalidTable("a function segment has 2^bits outputs"));
            }
        }
        let row_vars = segments.iter().map(|s| s.bits).max().unwrap_or(0);
        while !segments.len().is_power_of_two() {
            segments.push(Segment { bits: 0, output: SegmentOutput::Zero });
        }
        Ok(Self { name, segments, row_vars })
    }

    /// `T`: rows per segment are `2^T`.
    pub fn row_vars(&self) -> usize {
        self.row_vars
    }

    /// Segments, padding included.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Variables selecting the segment.
    pub fn tag_vars(&self) -> usize {
        self.segments.len().trailing_zeros() as usize
    }
}

/// `Π_i (1 − r_i)`: the MLE of `[x = 0]`.
pub fn zero_indicator(point: &[Fr]) -> Fr {
    point.iter().fold(Fr::from(1u64), |acc, r| acc * (Fr::from(1u64) - r))
}

/// The MLE of a public column, skipping its all-zero tail (a power-of-two prefix suffices).
fn evaluate_public_column(outputs: &[i64], point: &[Fr]) -> Result<Fr, LookupError> {
    let used = outputs.iter().rposition(|&v| v != 0).map_or(0, |last| last + 1);
    let vars = used.next_power_of_two().trailing_zeros() as usize;
    let vars = vars.min(point.len());
    let (low, high) = point.split_at(vars);
    let prefix = outputs.get(..1usize << vars).ok_or(LookupError::InvalidTable("short column"))?;
    let mle = DenseMultilinearExtension::new(vars, prefix.iter().map(|&v| fr_from_i64(v)).collect())?;
    Ok(mle.evaluate(low)? * zero_indicator(high))
}

impl LookupTable for SegmentedTable {
    fn name(&self) -> &'static str {
        self.name
    }
    fn num_vars(&self) -> usize {
        self.row_vars + self.tag_vars()
    }
    fn num_columns(&self) -> usize {
        3
    }
    fn row(&self, index: usize) -> Vec<i64> {
        let tag = index >> self.row_vars;
        let input = index & ((1usize << self.row_vars) - 1);
        match self.segments.get(tag) {
            Some(segment) => {
                let input = if input >> segment.bits == 0 { input } else { 0 };
                vec![tag as i64, input as i64, segment.output_at(input).unwrap_or(0)]
            }
            None => vec![0, 0, 0],
        }
    }
    fn index_of(&self, tuple: &[i64]) -> Option<usize> {
        let [tag, input, output] = tuple else { return None };
        let tag = usize::try_from(*tag).ok()?;
        let input = usize::try_from(*input).ok()?;
        let segment = self.segments.get(tag)?;
        (input >> segment.bits == 0 && segment.output_at(input) == Some(*output))
            .then_some((tag << self.row_vars) + input)
    }
    fn evaluate_columns(&self, point: &[Fr]) -> Result<Vec<Fr>, LookupError> {
        if point.len() != self.num_vars() {
            return Err(LookupError::WrongLength {
                what: "table point",
                expected: self.num_vars(),
                got: point.len(),
            });
        }
        let (low, tag_point) = point.split_at(self.row_vars);
        let weights = zkmha_mle::eq_table(tag_point);
        let (mut input, mut output) = (Fr::from(0u64), Fr::from(0u64));
        for (segment, weight) in self.segments.iter().zip(weights) {
            let (own, rest) = low.split_at(segment.bits.min(low.len()));
            let inside = zero_indicator(rest);
            input += weight * identity_column(own) * inside;
            let own_output = match &segment.output {
                SegmentOutput::Zero => Fr::from(0u64),
                SegmentOutput::IsZero => zero_indicator(own) * inside + (Fr::from(1u64) - inside),
                SegmentOutput::IsNonZero => (Fr::from(1u64) - zero_indicator(own)) * inside,
                SegmentOutput::Function(outputs) => {
                    let first = fr_from_i64(outputs.first().copied().unwrap_or(0));
                    evaluate_public_column(outputs, own)? * inside + first * (Fr::from(1u64) - inside)
                }
                SegmentOutput::ConstantMinus { constant, outputs } => {
                    let first = fr_from_i64(outputs.first().copied().unwrap_or(0));
                    fr_from_i64(*constant)
                        - evaluate_public_column(outputs, own)? * inside
                        - first * (Fr::from(1u64) - inside)
                }
            };
            output += weight * own_output;
        }
        Ok(vec![identity_column(tag_point), input, output])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod segmented_tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};

    #[test]
    fn segmented_columns_match_the_materialized_table() {
        let mut rng = StdRng::seed_from_u64(9);
        let exp: Vec<i64> = (0..64).map(|i| if i < 20 { 1000 - 50 * i } else { 0 }).collect();
        let table = SegmentedTable::new(
            "test",
            vec![
                Segment { bits: 6, output: SegmentOutput::Function(exp.clone()) },
                Segment { bits: 4, output: SegmentOutput::IsZero },
                Segment { bits: 2, output: SegmentOutput::Zero },
                Segment { bits: 3, output: SegmentOutput::IsNonZero },
                Segment {
                    bits: 5,
                    output: SegmentOutput::ConstantMinus { constant: 1000, outputs: exp[..32].to_vec() },
                },
            ],
        )
        .unwrap();
        assert_eq!(table.segments().len(), 8);
        assert_eq!(table.num_vars(), 9);
        assert_eq!(table.index_of(&[3, 5, 1]), Some(3 * 64 + 5));
        assert_eq!(table.index_of(&[3, 0, 0]), Some(3 * 64));
        assert_eq!(table.index_of(&[4, 2, 100]), Some(4 * 64 + 2));
        assert_eq!(table.index_of(&[4, 2, 900]), None);
        let rows: Vec<Vec<i64>> = (0..1usize << 9).map(|i| table.row(i)).collect();
        for (i, row) in rows.iter().enumerate() {
            // Every row (padding included) is found, at its own index or its segment's row 0.
            let found = table.index_of(row).unwrap();
            assert!(found == i || found == (i >> 6) << 6, "row {i}");
        }
        assert_eq!(table.index_of(&[1, 3, 0]), Some(64 + 3));
        assert_eq!(table.index_of(&[1, 0, 1]), Some(64));
        assert_eq!(table.index_of(&[1, 16, 0]), None);
        assert_eq!(table.index_of(&[0, 5, 0]), None);
        assert_eq!(table.index_of(&[8, 0, 0]), None);
        for _ in 0..4 {
            let point: Vec<Fr> = (0..9).map(|_| Fr::rand(&mut rng)).collect();
            let columns = table.evaluate_columns(&point).unwrap();
            for (k, value) in columns.iter().enumerate() {
                let column: Vec<i64> = rows.iter().map(|r| r[k]).collect();
                let mle = DenseMultilinearExtension::from_i64(9, &column).unwrap();
                assert_eq!(mle.evaluate(&point).unwrap(), *value, "column {k}");
            }
        }
    }
}
