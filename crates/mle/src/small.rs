//! MLEs whose hypercube values are small signed integers (quantized witnesses).

use crate::{DenseMultilinearExtension, MAX_NUM_VARS, MleError};
use zkmha_field::fr_from_i64;

/// A multilinear polynomial whose `2^num_vars` hypercube values are integers with
/// `|v| < 2^SMALL_VALUE_BITS`.
///
/// Provers keep such witnesses as machine integers until the first random challenge
/// arrives: sums of products then cost integer multiplications, not field ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmallMultilinearExtension {
    num_vars: usize,
    values: Vec<i32>,
}

impl SmallMultilinearExtension {
    /// Bits of the magnitude bound: `|v| < 2^24`.
    ///
    /// With up to four factors evaluated at points up to 4, a product of extrapolated
    /// values stays below 2^112, so chunks of 2^10 products sum exactly in an `i128`.
    pub const SMALL_VALUE_BITS: u32 = 24;

    /// Wraps `2^num_vars` integers, each with `|v| < 2^24`.
    ///
    /// # Errors
    /// [`MleError::WrongTableLength`], [`MleError::TooManyVariables`], or
    /// [`MleError::ValueOutOfRange`] naming the first value out of range.
    pub fn new(num_vars: usize, values: &[i64]) -> Result<Self, MleError> {
        if num_vars > MAX_NUM_VARS {
            return Err(MleError::TooManyVariables { num_vars, max: MAX_NUM_VARS });
        }
        let expected = 1usize << num_vars;
        if values.len() != expected {
            return Err(MleError::WrongTableLength { num_vars, expected, got: values.len() });
        }
        let bound = 1i64 << Self::SMALL_VALUE_BITS;
        let values = values
            .iter()
            .enumerate()
            .map(|(index, &value)| {
                if value.abs() < bound {
                    Ok(value as i32)
                } else {
                    Err(MleError::ValueOutOfRange { value, index, bits: Self::SMALL_VALUE_BITS })
                }
            })
            .collect::<Result<Vec<i32>, _>>()?;
        Ok(Self { num_vars, values })
    }

    /// Number of variables.
    pub fn num_vars(&self) -> usize {
        self.num_vars
    }

    /// The hypercube values.
    pub fn values(&self) -> &[i32] {
        &self.values
    }

    /// The same polynomial with field-element evaluations.
    pub fn to_dense(&self) -> DenseMultilinearExtension {
        let table = self.values.iter().map(|&v| fr_from_i64(i64::from(v))).collect();
        // The length was checked in `new`.
        DenseMultilinearExtension::new(self.num_vars, table)
            .unwrap_or_else(|_| unreachable!("length checked at construction"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_enforced_and_conversion_is_exact() {
        let ok = SmallMultilinearExtension::new(1, &[-5, (1 << 24) - 1]);
        let ok = ok.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(ok.to_dense().evaluations()[0], -zkmha_field::Fr::from(5u64));
        assert_eq!(
            SmallMultilinearExtension::new(1, &[0, 1 << 24]),
            Err(MleError::ValueOutOfRange { value: 1 << 24, index: 1, bits: 24 })
        );
        assert!(SmallMultilinearExtension::new(1, &[0]).is_err());
    }
}
