//! The BN254 scalar field `Fr` and the arithmetic kernels that every zkmha prover shares.
//!
//! The whole project works over one field, the scalar field of BN254
//! (`p = 21888242871839275222246405745257275088548364400416034343698204186575808495617`).
//! Fixing the field lets the hot loops use two kernels that arkworks does not offer
//! for a generic `PrimeField`:
//!
//! ```text
//! SmallMultiplier(a).mul(v)      = a · v            for a ∈ Fr, v ∈ i64   (no full Montgomery product)
//! UnreducedSum::add_product(a,b) ; finish() = Σ a_i · b_i  (one reduction for the whole sum)
//! ```
//!
//! Both are written by hand because no maintained crate exposes them for arkworks'
//! Montgomery representation: ark-ff's `sum_of_products` only takes fixed-size arrays, and
//! ark-ff has no multiplication of a field element by a machine word. Each kernel is
//! tested against plain `Fr` arithmetic.

mod small;
mod unreduced;

pub use ark_bn254::Fr;
pub use ark_ff::{BigInteger, Field, One, PrimeField, Zero};
pub use small::{SmallLinearCombination, SmallMultiplier};
pub use unreduced::UnreducedSum;

/// Size of a field element in a proof (ark-serialize's compressed encoding).
pub const FIELD_BYTES: usize = 32;

/// Multiplication by one, prepared once: `mul_u64(v)` is then the Montgomery form of `v`,
/// four times cheaper than `Fr::from(v)` (which performs a full Montgomery product by R²).
fn one_multiplier() -> &'static SmallMultiplier {
    static ONE: std::sync::OnceLock<SmallMultiplier> = std::sync::OnceLock::new();
    ONE.get_or_init(|| SmallMultiplier::new(Fr::from(1u64)))
}

/// The field element `v` for a signed machine integer (negative values become `p − |v|`).
#[inline]
pub fn fr_from_i64(v: i64) -> Fr {
    one_multiplier().mul_i64(v)
}

/// The field element `v` for a signed 128-bit integer (negative values become `p − |v|`).
#[inline]
pub fn fr_from_i128(v: i128) -> Fr {
    if let Ok(small) = i64::try_from(v) {
        return fr_from_i64(small);
    }
    if v >= 0 { Fr::from(v as u128) } else { -Fr::from(v.unsigned_abs()) }
}

/// The modulus limbs and Montgomery constant, shared by the kernels.
pub(crate) mod consts {
    use ark_ff::PrimeField;

    /// p, little-endian 64-bit limbs.
    pub(crate) const MODULUS: [u64; 4] = <super::Fr as PrimeField>::MODULUS.0;

    /// −p⁻¹ mod 2⁶⁴, computed by Newton iteration at compile time.
    pub(crate) const INV: u64 = {
        let p0 = MODULUS[0];
        let mut inv: u64 = 1;
        let mut i = 0;
        while i < 6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(p0.wrapping_mul(inv)));
            i += 1;
        }
        inv.wrapping_neg()
    };

    /// `x ≥ p` for a four-limb integer.
    #[inline(always)]
    pub(crate) fn geq_modulus(x: &[u64; 4]) -> bool {
        for i in (0..4).rev() {
            if x[i] != MODULUS[i] {
                return x[i] > MODULUS[i];
            }
        }
        true
    }

    /// `x − p` in place, for `x ≥ p`.
    #[inline(always)]
    pub(crate) fn sub_modulus(x: &mut [u64; 4]) {
        let mut borrow = 0u64;
        for i in 0..4 {
            let (d1, b1) = x[i].overflowing_sub(MODULUS[i]);
            let (d2, b2) = d1.overflowing_sub(borrow);
            x[i] = d2;
            borrow = u64::from(b1 | b2);
        }
    }

    /// `x mod p` for any four-limb integer (`2²⁵⁶ < 6p`, so at most five subtractions).
    #[inline(always)]
    pub(crate) fn reduce_once_or_more(x: &mut [u64; 4]) {
        while geq_modulus(x) {
            sub_modulus(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn montgomery_inverse_constant_is_correct() {
        assert_eq!(consts::MODULUS[0].wrapping_mul(consts::INV), u64::MAX);
    }

    #[test]
    fn signed_conversions_match_field_arithmetic() {
        for v in [0i64, 1, -1, 12345, -98765, i64::MAX, i64::MIN] {
            let expected = if v >= 0 { Fr::from(v as u64) } else { -Fr::from(v.unsigned_abs()) };
            assert_eq!(fr_from_i64(v), expected, "{v}");
            assert_eq!(fr_from_i128(i128::from(v)), expected, "{v}");
        }
        assert_eq!(fr_from_i128(i128::MIN), -Fr::from(1u128 << 127));
    }

    #[test]
    fn signed_conversions_match_field_negation() {
        assert_eq!(fr_from_i64(-5) + Fr::from(5u64), Fr::zero());
        assert_eq!(fr_from_i64(i64::MIN), -Fr::from(1u128 << 63));
        assert_eq!(fr_from_i128(-(1i128 << 100)), -Fr::from(1u128 << 100));
        assert_eq!(fr_from_i128(7), Fr::from(7u64));
    }
}
