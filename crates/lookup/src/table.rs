//! Public lookup tables: the prover reads their rows, the verifier evaluates their columns'
//! MLEs at one point itself (closed forms where the table has structure); no table is sent.

use crate::LookupError;
use zkmha_field::{Fr, fr_from_i64};
use zkmha_mle::DenseMultilinearExtension;

/// The largest table: `2^MAX_TABLE_VARS` rows (the verifier may evaluate a table in
/// `O(2^t)`).
pub const MAX_TABLE_VARS: usize = 20;

/// A public table of `2^num_vars` rows and `num_columns` integer columns.
pub trait LookupTable {
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
