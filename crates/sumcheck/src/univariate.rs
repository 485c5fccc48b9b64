//! Round polynomials: evaluations at `0, 1, …, d` and the compressed round message.
//!
//! ```text
//! message (d ≥ 2): [ s(0), s(2), …, s(d−1), s(∞) ]      s(∞) := the coefficient of X^d
//! message (d = 1): [ s(0) ]
//! s(1) = running claim − s(0)
//! s(d) = Σ_{i<d} s(i)·L_i(d) + s(∞)·d!                 (L_i: Lagrange basis on 0..d−1)
//! ```
//!
//! Sending the leading coefficient instead of `s(d)` lets the prover skip stepping every
//! factor to `X = d`: the factor's value "at ∞" is its slope, already computed.

use zkmha_field::{Field, Fr, One, Zero};

/// `i!` and `1/i!` for `i = 0..=MAX_DEGREE + 1`, computed once per process.
fn factorials() -> &'static (Vec<Fr>, Vec<Fr>) {
    static TABLE: std::sync::OnceLock<(Vec<Fr>, Vec<Fr>)> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let top = crate::MAX_DEGREE + 1;
        let factorial: Vec<Fr> = core::iter::once(Fr::one())
            .chain((1..=top as u64).scan(Fr::one(), |acc, i| {
                *acc *= Fr::from(i);
                Some(*acc)
            }))
            .collect();
        // (top)! is a product of small non-zero integers, invertible in a 254-bit field.
        let mut inverse = vec![Fr::zero(); top + 1];
        let mut running =
            factorial.last().copied().unwrap_or_else(Fr::one).inverse().unwrap_or_else(Fr::zero);
        for i in (0..=top).rev() {
            if let Some(slot) = inverse.get_mut(i) {
                *slot = running;
            }
            running *= Fr::from(i.max(1) as u64);
        }
        (factorial, inverse)
    })
}

/// `i!` for `i ≤ MAX_DEGREE + 1` (1 beyond: callers never ask).
fn factorial(i: usize) -> Fr {
    factorials().0.get(i).copied().unwrap_or_else(Fr::one)
}

/// `1/i!` for `i ≤ MAX_DEGREE + 1`.
fn inverse_factorial(i: usize) -> Fr {
    factorials().1.get(i).copied().unwrap_or_else(Fr::one)
}

/// `s(x)` for the polynomial of degree ≤ `d` with `s(i) = evaluations[i]`, `i = 0..=d`.
///
/// Lagrange form with prefix and suffix products, O(d) multiplications, no inversion
/// (the denominators `Π_{j≠i} (i − j) = (−1)^{d−i} i! (d−i)!` come from a table), and
/// correct at every `x`, including `0..=d`. Degrees above [`crate::MAX_DEGREE`] give 0.
pub fn evaluate_from_evaluations(evaluations: &[Fr], x: Fr) -> Fr {
    let Some(degree) = evaluations.len().checked_sub(1) else {
        return Fr::zero();
    };
    if degree > crate::MAX_DEGREE {
        return Fr::zero();
    }
    let nodes: Vec<Fr> = (0..=degree as u64).map(|i| x - Fr::from(i)).collect();
    // suffix[i] = Π_{j ≥ i} (x − j), with suffix[d + 1] = 1
    let mut suffix: Vec<Fr> = nodes
        .iter()
        .rev()
        .scan(Fr::one(), |acc, node| {
            *acc *= node;
            Some(*acc)
        })
        .collect();
    suffix.reverse();
    suffix.push(Fr::one());
    let mut result = Fr::zero();
    let mut prefix = Fr::one();
    for (i, ((value, node), after)) in evaluations.iter().zip(&nodes).zip(suffix.iter().skip(1)).enumerate() {
        let mut inverse = inverse_factorial(i) * inverse_factorial(degree - i);
        if (degree - i) % 2 == 1 {
            inverse = -inverse;
        }
        result += *value * prefix * after * inverse;
        prefix *= node;
    }
    result
}

/// The full evaluations `s(0), s(1), …, s(d)` of a round message of degree `d = message.len()`
/// (see the module docs), given the running claim `s(0) + s(1)`.
pub fn decompress(message: &[Fr], running_claim: Fr) -> Vec<Fr> {
    let degree = message.len();
    let mut full = Vec::with_capacity(degree + 1);
    let Some((s0, rest)) = message.split_first() else {
        return full;
    };
    full.push(*s0);
    full.push(running_claim - s0);
    if let Some((leading, middle)) = rest.split_last() {
        full.extend_from_slice(middle);
        // s(d) from s(0..d−1) and the leading coefficient.
        full.push(evaluate_from_evaluations(&full, Fr::from(degree as u64)) + *leading * factorial(degree));
    }
    full
}

/// The coefficient of `X^d` of the polynomial with `s(i) = evaluations[i]`, `i = 0..=d`:
/// `Σ_i s(i) / Π_{j≠i} (i − j)`.
pub fn leading_coefficient(evaluations: &[Fr]) -> Fr {
    let Some(degree) = evaluations.len().checked_sub(1) else {
        return Fr::zero();
    };
    evaluations
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let mut inverse = inverse_factorial(i) * inverse_factorial(degree - i);
            if (degree - i) % 2 == 1 {
                inverse = -inverse;
            }
            *value * inverse
        })
        .sum()
}

/// The round message (module docs) of the polynomial with evaluations `s(0..=d)`.
pub fn compress(evaluations: &[Fr]) -> Vec<Fr> {
    let degree = evaluations.len().saturating_sub(1);
    let mut message: Vec<Fr> = evaluations.iter().take(1).copied().collect();
    if degree >= 2 {
        message.extend(evaluations.iter().skip(2).take(degree - 2));
        message.push(leading_coefficient(evaluations));
    }
    message
}

/// Extends the evaluations at `0..=d` of a polynomial of degree ≤ d to the points `0..=target`.
pub fn extend_evaluations(evaluations: &[Fr], target_degree: usize) -> Vec<Fr> {
    let mut out = evaluations.to_vec();
    for point in evaluations.len()..=target_degree {
        out.push(evaluate_from_evaluations(evaluations, Fr::from(point as u64)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;

    fn horner(coefficients: &[Fr], x: Fr) -> Fr {
        coefficients.iter().rev().fold(Fr::zero(), |acc, c| acc * x + c)
    }

    #[test]
    fn interpolation_reproduces_random_polynomials() {
        let mut rng = ark_std::test_rng();
        for degree in 0..=8usize {
            let coefficients: Vec<Fr> = (0..=degree).map(|_| Fr::rand(&mut rng)).collect();
            let evaluations: Vec<Fr> =
                (0..=degree as u64).map(|i| horner(&coefficients, Fr::from(i))).collect();
            for _ in 0..5 {
                let x = Fr::rand(&mut rng);
                assert_eq!(evaluate_from_evaluations(&evaluations, x), horner(&coefficients, x));
            }
            for i in 0..=degree as u64 {
                assert_eq!(evaluate_from_evaluations(&evaluations, Fr::from(i)), evaluations[i as usize]);
            }
            let extended = extend_evaluations(&evaluations, degree + 3);
            for (i, value) in extended.iter().enumerate() {
                assert_eq!(*value, horner(&coefficients, Fr::from(i as u64)));
            }
        }
    }

    #[test]
    fn compression_round_trips_for_every_degree() {
        let mut rng = ark_std::test_rng();
        for degree in 1..=8usize {
            let coefficients: Vec<Fr> = (0..=degree).map(|_| Fr::rand(&mut rng)).collect();
            let evaluations: Vec<Fr> =
                (0..=degree as u64).map(|i| horner(&coefficients, Fr::from(i))).collect();
            assert_eq!(leading_coefficient(&evaluations), coefficients[degree]);
            let message = compress(&evaluations);
            assert_eq!(message.len(), degree);
            assert_eq!(decompress(&message, evaluations[0] + evaluations[1]), evaluations);
        }
        // degree 2: [s(0), s(∞)]; s(X) = 3 + 4X + 5X²: s(0) = 3, s(1) = 12, s(∞) = 5.
        let full = decompress(&[Fr::from(3u64), Fr::from(5u64)], Fr::from(15u64));
        assert_eq!(full, vec![Fr::from(3u64), Fr::from(12u64), Fr::from(31u64)]);
    }
}
