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
use zkmha_field::{Fr, One};
use zkmha_lookup::{LookupClaims, RangeTable};
use zkmha_sumcheck::EvalClaim;
use zkmha_zk::LinearValue;

/// Largest `b` of a rescaling step's output range ([`crate::projection`], [`crate::rope`], the
/// MLP): one lookup table of at most `2^16` rows.
pub const MAX_OUTPUT_BITS: u32 = 16;

/// Largest `b` of a norm's output range: `2^20` rows (the norms on a half's output,
/// [`crate::norm::OUTPUT_NORM_OUTPUT_BITS`]).
pub const MAX_NORM_OUTPUT_BITS: u32 = 20;

/// `Y + 2^(b−1) ∈ [0, 2^b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SignedRange {
    bits: u32,
}

impl SignedRange {
    /// The range of `b`-bit signed integers.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] unless `1 ≤ b ≤ 16` ([`MAX_OUTPUT_BITS`]).
    pub(crate) fn new(bits: u32) -> Result<Self, AttentionError> {
        Self::at_most(bits, MAX_OUTPUT_BITS)
    }

    /// A norm's output range.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] unless `1 ≤ b ≤ 20` ([`MAX_NORM_OUTPUT_BITS`]).
    pub(crate) fn for_norm(bits: u32) -> Result<Self, AttentionError> {
        Self::at_most(bits, MAX_NORM_OUTPUT_BITS)
    }

    fn at_most(bits: u32, most: u32) -> Result<Self, AttentionError> {
        if (1..=most).contains(&bits) {
            Ok(Self { bits })
        } else {
            Err(AttentionError::InvalidShape(format!("an output range takes 1 to {most} bits, not {bits}")))
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
                None => {
                    return Err(AttentionError::ValueOutOfRange {
                        tensor,
                        index,
                        value: *y,
                        bound_bits: self.bits - 1,
                    });
                }
            }
        }
        Ok(counts)
    }
}

/// A rescaling step's two lookups over one grid of `grid_vars` variables, in proof order: its
/// remainder `D ∈ [0, 2^k)` and its output range `Y + 2^(b−1) ∈ [0, 2^b)`.
#[derive(Clone, Debug)]
pub(crate) struct RescaledLookups {
    remainder: RangeTable,
    output: RangeTable,
    output_range: SignedRange,
    grid_vars: usize,
}

/// What a rescaling step's lookups leave: the claim on `D` at the shared leaf point `r`, the
/// two multiplicities' claims, and the output range's target `column − y − 2^(b−1)` (zero when
/// the sent `y = Ỹ(r)` is the output range's column less its offset).
pub(crate) type RescaledClaims<V> = (EvalClaim<V>, [EvalClaim<V>; 2], V);

impl RescaledLookups {
    /// A `shift_bits`-bit remainder and a `output_bits`-bit output over `grid_vars` variables.
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] for an output range outside `1..=16` bits, the table's
    /// errors for a shift out of its range.
    pub(crate) fn new(shift_bits: u32, output_bits: u32, grid_vars: usize) -> Result<Self, AttentionError> {
        let output_range = SignedRange::new(output_bits)?;
        Ok(Self {
            remainder: RangeTable::new(shift_bits as usize)?,
            output: output_range.table()?,
            output_range,
            grid_vars,
        })
    }

    /// The tables, remainder's first.
    pub(crate) fn tables(&self) -> [&RangeTable; 2] {
        [&self.remainder, &self.output]
    }

    /// Splits the two lookups' claims (both sides): `step` names a malformed lookup,
    /// `output_step` lookups at two leaf points.
    ///
    /// # Errors
    /// [`AttentionError::CheckFailed`].
    pub(crate) fn claims<V: LinearValue>(
        &self,
        claims: Vec<LookupClaims<V>>,
        output: &V,
        one: &V,
        [step, output_step]: [&'static str; 2],
    ) -> Result<RescaledClaims<V>, AttentionError> {
        let fail = || AttentionError::CheckFailed { step };
        let [remainder, output_range] = <[LookupClaims<V>; 2]>::try_from(claims).map_err(|_| fail())?;
        let (remainder_value, output_column) =
            match (remainder.columns.as_slice(), output_range.columns.as_slice()) {
                ([a], [b]) => (a.clone(), b.clone()),
                _ => return Err(fail()),
            };
        if remainder.witness_point.len() != self.grid_vars {
            return Err(fail());
        }
        // The two lookups share one tree depth, so one leaf point.
        if output_range.witness_point != remainder.witness_point {
            return Err(AttentionError::CheckFailed { step: output_step });
        }
        let offset = self.output_range.offset_field();
        let target = output_column.plus_scaled(-Fr::one(), output).plus_scaled(-offset, one);
        let multiplicities = [
            EvalClaim { point: remainder.table_point, value: remainder.multiplicities },
            EvalClaim { point: output_range.table_point, value: output_range.multiplicities },
        ];
        Ok((EvalClaim { point: remainder.witness_point, value: remainder_value }, multiplicities, target))
    }
}

/// `v − 2^(k−1) + 2^k·y`: the rounded relation's claimed product `T(r)` from the remainder's
/// value `v` and the output's `y`.
pub(crate) fn rescaled_product<V: LinearValue>(shift_bits: u32, remainder: &V, output: &V, one: &V) -> V {
    let k = shift_bits;
    remainder.plus_scaled(-Fr::from(1u64 << (k - 1)), one).plus_scaled(Fr::from(1u64 << k), output)
}
