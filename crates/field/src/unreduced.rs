//! Inner products with one modular reduction for the whole sum.

use crate::Fr;
use crate::consts::reduce_once_or_more;
use ark_ff::{BigInt, PrimeField};

/// An accumulator for `Σ a_i · b_i` that defers the modular reduction to the end.
///
/// ```text
/// each product of Montgomery forms   A·B = a·b·R²      (< 2⁵⁰⁸, eight limbs, not reduced)
/// the sum X = Σ A_i·B_i               (nine limbs: room for 2⁶⁸ products)
/// finish: X = L + H·2²⁵⁶ and R = 2²⁵⁶, so X·R⁻¹ ≡ REDC(L) + H  (mod p)
/// ```
///
/// A product costs the 16 word multiplications of the schoolbook product, about
/// half of a Montgomery multiplication; `finish` costs about two multiplications.
/// Accumulators merge with [`UnreducedSum::merge`], so parallel folds give the same
/// value as the sequential loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnreducedSum {
    limbs: [u64; 9],
}

impl UnreducedSum {
    /// The empty sum.
    #[inline(always)]
    pub const fn new() -> Self {
        Self { limbs: [0; 9] }
    }

    /// Adds `a · b` without reducing.
    #[inline(always)]
    pub fn add_product(&mut self, a: &Fr, b: &Fr) {
        let a = &a.0.0;
        let b = &b.0.0;
        let mut product = [0u64; 8];
        for i in 0..4 {
            let mut carry = 0u128;
            for j in 0..4 {
                let t = u128::from(a[i]) * u128::from(b[j]) + u128::from(product[i + j]) + carry;
                product[i + j] = t as u64;
                carry = t >> 64;
            }
            product[i + 4] = carry as u64;
        }
        self.add_limbs(&product);
    }

    #[inline(always)]
    fn add_limbs(&mut self, x: &[u64; 8]) {
        let mut carry = false;
        for i in 0..8 {
            let (s1, c1) = self.limbs[i].overflowing_add(x[i]);
            let (s2, c2) = s1.overflowing_add(u64::from(carry));
            self.limbs[i] = s2;
            carry = c1 | c2;
        }
        self.limbs[8] = self.limbs[8].wrapping_add(u64::from(carry));
    }

    /// Adds another accumulator (for parallel folds).
    #[inline(always)]
    pub fn merge(mut self, other: Self) -> Self {
        let mut carry = false;
        for i in 0..9 {
            let (s1, c1) = self.limbs[i].overflowing_add(other.limbs[i]);
            let (s2, c2) = s1.overflowing_add(u64::from(carry));
            self.limbs[i] = s2;
            carry = c1 | c2;
        }
        self
    }

    /// The reduced field element `Σ a_i · b_i`.
    pub fn finish(&self) -> Fr {
        let mut low = [self.limbs[0], self.limbs[1], self.limbs[2], self.limbs[3]];
        let mut high = [self.limbs[4], self.limbs[5], self.limbs[6], self.limbs[7]];
        reduce_once_or_more(&mut low);
        reduce_once_or_more(&mut high);
        // REDC(L): `into_bigint` performs exactly one Montgomery reduction.
        let low_term = Fr::new_unchecked(Fr::new_unchecked(BigInt(low)).into_bigint());
        // H = high + limbs[8]·2²⁵⁶, and the Montgomery form of the integer v is v·R = v·2²⁵⁶.
        let high_term = Fr::new_unchecked(BigInt(high)) + Fr::from(self.limbs[8]);
        low_term + high_term
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;

    #[test]
    fn matches_plain_inner_product() {
        let mut rng = ark_std::test_rng();
        for len in [0usize, 1, 2, 7, 100, 5000] {
            let a: Vec<Fr> = (0..len).map(|_| Fr::rand(&mut rng)).collect();
            let b: Vec<Fr> = (0..len).map(|_| Fr::rand(&mut rng)).collect();
            let mut acc = UnreducedSum::new();
            for (x, y) in a.iter().zip(&b) {
                acc.add_product(x, y);
            }
            let expected: Fr = a.iter().zip(&b).map(|(x, y)| *x * y).sum();
            assert_eq!(acc.finish(), expected, "len {len}");
        }
    }

    #[test]
    fn extreme_values_and_merge() {
        let big = -Fr::from(1u64);
        let mut left = UnreducedSum::new();
        let mut right = UnreducedSum::new();
        for i in 0..300_000u64 {
            if i % 2 == 0 {
                left.add_product(&big, &big);
            } else {
                right.add_product(&big, &big);
            }
        }
        assert_eq!(left.merge(right).finish(), Fr::from(300_000u64));
    }
}
