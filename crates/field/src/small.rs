//! Multiplication of a fixed field element by many machine integers.

use crate::Fr;
use crate::consts::{INV, MODULUS, geq_modulus, sub_modulus};
use ark_ff::{BigInt, Field};

/// A field element prepared for repeated multiplication by machine integers.
///
/// ```text
/// stored  S = a · 2⁶⁴ · R mod p          (the Montgomery form of a · 2⁶⁴)
/// mul(v)  = REDC₆₄(S · |v|) = a · |v| · R mod p,   negated when v < 0
/// ```
///
/// `REDC₆₄` is one word of Montgomery reduction, so a product costs a 4×1 limb
/// multiplication and one reduction step instead of a full 4×4 Montgomery product:
/// this is what makes binding a small-integer witness to a random challenge cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallMultiplier {
    scaled: [u64; 4],
}

impl SmallMultiplier {
    /// Prepares `a` (one full field multiplication).
    pub fn new(a: Fr) -> Self {
        let two_64 = Fr::from(2u64).pow([64u64]);
        Self { scaled: (a * two_64).0.0 }
    }

    /// `a · v` for an unsigned machine word.
    #[inline(always)]
    pub fn mul_u64(&self, v: u64) -> Fr {
        // X = S · v, five limbs, X < p · 2⁶⁴.
        let mut x = [0u64; 5];
        let mut carry = 0u128;
        for i in 0..4 {
            let t = u128::from(self.scaled[i]) * u128::from(v) + carry;
            x[i] = t as u64;
            carry = t >> 64;
        }
        x[4] = carry as u64;
        // One Montgomery step: (X + k·p) / 2⁶⁴ with k chosen so the low word vanishes;
        // X < p·2⁶⁴ so the result is below 2p.
        redc_single_word(&x)
    }

    /// `a · v` for a signed machine word.
    #[inline(always)]
    pub fn mul_i64(&self, v: i64) -> Fr {
        let product = self.mul_u64(v.unsigned_abs());
        if v < 0 { -product } else { product }
    }
}

/// A fixed affine combination `c + Σ_i w_i · u_i` of field weights with small unsigned integers,
/// reduced once.
///
/// ```text
/// stored   S_i = w_i · 2⁶⁴ · R mod p
/// combine  X = C + Σ_i S_i · u_i  (C the scaled constant; five limbs, X < 2³⁰¹ for m ≤ 16, u_i < 2³²)
///          REDC₆₄(X) = (c + Σ_i w_i u_i) · R mod p   (< 2p, one conditional subtraction)
/// ```
///
/// Binding a small-integer table at several challenges at once (`Σ_b eq(b, c) · f(b, x)`) is
/// one such combination per entry: about `4m + 5` word multiplications instead of `m`
/// Montgomery products.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmallLinearCombination {
    scaled: Vec<[u64; 4]>,
    constant: [u64; 4],
}

impl SmallLinearCombination {
    /// The most weights a combination may have (keeps `X` below 2³²⁰).
    pub const MAX_WEIGHTS: usize = 16;

    /// Prepares `constant + Σ_i w_i · u_i` (one field multiplication per weight). Returns
    /// `None` for more than [`Self::MAX_WEIGHTS`] weights.
    pub fn new(weights: &[Fr], constant: Fr) -> Option<Self> {
        if weights.len() > Self::MAX_WEIGHTS {
            return None;
        }
        Some(Self {
            scaled: weights.iter().map(|w| SmallMultiplier::new(*w).scaled).collect(),
            constant: SmallMultiplier::new(constant).scaled,
        })
    }

    /// `constant + Σ_i w_i · values[i]` (extra values beyond the weights are ignored).
    #[inline(always)]
    pub fn combine(&self, values: &[u32]) -> Fr {
        // Column sums without carries: each product is below 2⁹⁶, so 16 of them plus the
        // constant stay below 2¹⁰¹; the carries are resolved once.
        let mut columns = self.constant.map(u128::from);
        for (s, &v) in self.scaled.iter().zip(values) {
            let v = u128::from(v);
            for i in 0..4 {
                columns[i] += u128::from(s[i]) * v;
            }
        }
        let mut x = [0u64; 5];
        let mut carry = 0u128;
        for i in 0..4 {
            let t = columns[i] + carry;
            x[i] = t as u64;
            carry = t >> 64;
        }
        x[4] = carry as u64;
        redc_single_word(&x)
    }
}

/// `(X + k·p) / 2⁶⁴ mod p` for `X < p · 2⁶⁴`-ish inputs whose result is below `2p`.
#[inline(always)]
fn redc_single_word(x: &[u64; 5]) -> Fr {
    let k = x[0].wrapping_mul(INV);
    let mut carry = (u128::from(k) * u128::from(MODULUS[0]) + u128::from(x[0])) >> 64;
    let mut y = [0u64; 4];
    for i in 1..4 {
        let t = u128::from(k) * u128::from(MODULUS[i]) + u128::from(x[i]) + carry;
        y[i - 1] = t as u64;
        carry = t >> 64;
    }
    let top = u128::from(x[4]) + carry;
    y[3] = top as u64;
    debug_assert!(top >> 64 == 0);
    if geq_modulus(&y) {
        sub_modulus(&mut y);
    }
    Fr::new_unchecked(BigInt(y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fr_from_i64;
    use ark_std::UniformRand;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_field_multiplication(seed in any::<u64>(), v in any::<i64>(), w in any::<u64>()) {
            use ark_std::rand::{SeedableRng, rngs::StdRng};
            let a = Fr::rand(&mut StdRng::seed_from_u64(seed));
            let m = SmallMultiplier::new(a);
            prop_assert_eq!(m.mul_i64(v), a * fr_from_i64(v));
            prop_assert_eq!(m.mul_u64(w), a * Fr::from(w));
        }
    }

    #[test]
    fn linear_combination_matches_field_arithmetic() {
        let mut rng = ark_std::test_rng();
        for m in [0usize, 1, 2, 4, 8, 16] {
            let weights: Vec<Fr> = (0..m).map(|_| Fr::rand(&mut rng)).collect();
            let constant = Fr::rand(&mut rng);
            let combination =
                SmallLinearCombination::new(&weights, constant).unwrap_or_else(|| unreachable!());
            for values in [vec![u32::MAX; m], (0..m as u32).collect(), vec![0; m]] {
                let expected: Fr =
                    constant + weights.iter().zip(&values).map(|(w, v)| *w * Fr::from(*v)).sum::<Fr>();
                assert_eq!(combination.combine(&values), expected);
            }
            let values: Vec<u32> = (0..m).map(|_| u32::rand(&mut rng)).collect();
            let expected: Fr =
                constant + weights.iter().zip(&values).map(|(w, v)| *w * Fr::from(*v)).sum::<Fr>();
            assert_eq!(combination.combine(&values), expected);
        }
        let minus_one = vec![-Fr::from(1u64); 16];
        let combination =
            SmallLinearCombination::new(&minus_one, -Fr::from(1u64)).unwrap_or_else(|| unreachable!());
        assert_eq!(combination.combine(&[u32::MAX; 16]), -Fr::from(16 * u64::from(u32::MAX) + 1));
        assert!(SmallLinearCombination::new(&[Fr::from(1u64); 17], Fr::from(0u64)).is_none());
    }

    #[test]
    fn extreme_operands() {
        let minus_one = -Fr::from(1u64);
        let m = SmallMultiplier::new(minus_one);
        assert_eq!(m.mul_u64(u64::MAX), minus_one * Fr::from(u64::MAX));
        assert_eq!(m.mul_u64(0), Fr::from(0u64));
        assert_eq!(m.mul_i64(i64::MIN), minus_one * fr_from_i64(i64::MIN));
        let zero = SmallMultiplier::new(Fr::from(0u64));
        assert_eq!(zero.mul_u64(u64::MAX), Fr::from(0u64));
        let mut rng = ark_std::test_rng();
        for _ in 0..1000 {
            let a = Fr::rand(&mut rng);
            assert_eq!(SmallMultiplier::new(a).mul_u64(u64::MAX), a * Fr::from(u64::MAX));
        }
    }
}
