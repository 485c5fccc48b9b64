//! A committed output table pinned to bounded integers: the range check a rescaling step
//! ([`crate::projection`], [`crate::rope`]) adds for its committed output.
//!
//! ```text
//! relation   Y + 2^(b−1) ∈ [0, 2^b)  entrywise over the padded grid  (|Y| ≤ 2^(b−1), Y ∈ ℤ)
//! lookup     one more range lookup in the step's batch, over the same grid as its remainder
//!            D: logUp's trees of one depth share their leaf point r, so the lookup's column
//!            claim is (Ỹ + 2^(b−1))(r) at the very point where the step already sends y = Ỹ(r)
//! relation   the column claim equals y + 2^(b−1) at D's point (a linear relation in either
//!            mode: checked at once, or proven on commitments): no new opening of Y, one new
//!            claim on the multiplicities m_Y (2^b entries)
//! ```
//!
//! Why: a rescaling relation `T + 2^(k−1) − 2^k·Y = D` with only `D ∈ [0, 2^k)` holds mod p
//! for the field element `Y' = Y + (D − D')/2^k` as well (the audit's forgery: `V' = V ± 1/2`).
//! With `Y` and `D` both range-checked every term is an integer far below p/2, so the relation
//! holds over the integers and `Y = ⌊(T + 2^(k−1))/2^k⌋` is the only accepted table.

use crate::AttentionError;
use zkmha_field::Fr;
use zkmha_lookup::RangeTable;

/// Largest `b`: one lookup table of at most `2^16` rows.
pub const MAX_OUTPUT_BITS: u32 = 16;

/// `Y + 2^(b−1) ∈ [0, 2^b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SignedRange {
    bits: u32,
}

impl SignedRange {
    /// The range of `b`-bit signed integers.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] unless `1 ≤ b ≤ 16`.
    pub(crate) fn new(bits: u32) -> Result<Self, AttentionError> {
        if (1..=MAX_OUTPUT_BITS).contains(&bits) {
            Ok(Self { bits })
        } else {
            Err(AttentionError::InvalidShape(format!(
                "an output range takes 1 to {MAX_OUTPUT_BITS} bits, not {bits}"
            )))
        }
    }

    pub(crate) fn bits(self) -> u32 {
        self.bits
    }

    /// `2^(b−1)`.
    pub(crate) fn offset(self) -> i64 {
        1i64 << (self.bits - 1)
    }

    /// `2^(b−1)` in the field.
    pub(crate) fn offset_field(self) -> Fr {
        Fr::from(self.offset() as u64)
    }

    pub(crate) fn table(self) -> Result<RangeTable, AttentionError> {
        Ok(RangeTable::new(self.bits as usize)?)
    }

    /// The looked-up column `Y + 2^(b−1)` of a padded output table (saturating: a value out of
    /// range stays out of range).
    pub(crate) fn entries(self, padded_output: &[i64]) -> Vec<i64> {
        padded_output.iter().map(|y| y.saturating_add(self.offset())).collect()
    }

    /// The multiplicities of the column for a padded output table.
    ///
    /// # Errors
    /// [`AttentionError::ValueOutOfRange`] naming `tensor` and the first entry outside
    /// `[−2^(b−1), 2^(b−1))` (an input far outside the range the scales were calibrated on).
    pub(crate) fn multiplicities(
        self,
        tensor: &'static str,
        padded_output: &[i64],
    ) -> Result<Vec<i64>, AttentionError> {
        let mut counts = vec![0i64; 1usize << self.bits];
        for (index, y) in padded_output.iter().enumerate() {
            let slot = usize::try_from(y.saturating_add(self.offset())).ok().and_then(|v| counts.get_mut(v));
            match slot {
                Some(count) => *count += 1,
                None => return Err(AttentionError::ValueOutOfRange { tensor, index, value: *y }),
            }
        }
        Ok(counts)
    }
}
