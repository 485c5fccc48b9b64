//! HyperKZG: commit, open and verify (see the crate docs for the relation).

use crate::srs::{msm, msm_signed, to_affine};
use crate::{Bn254, G1Affine, G1Projective, PcsError, ProverKey, VerifierKey};
use ark_ec::pairing::Pairing;
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_transcript::Transcript;

const LABEL_COMMITMENT: &[u8] = b"pcs/hyperkzg/commitment";
const LABEL_POINT: &[u8] = b"pcs/hyperkzg/point";
const LABEL_VALUE: &[u8] = b"pcs/hyperkzg/value";
const LABEL_FOLDS: &[u8] = b"pcs/hyperkzg/fold-commitments";
const LABEL_R: &[u8] = b"pcs/hyperkzg/r";
const LABEL_EVALUATIONS: &[u8] = b"pcs/hyperkzg/evaluations";
const LABEL_Q: &[u8] = b"pcs/hyperkzg/q";

/// A commitment to a multilinear polynomial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Commitment {
    /// `Σ_i f[i]·[τ^i]₁`.
    pub point: G1Affine,
}

/// An opening proof of `f̃(u) = v`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct OpeningProof {
    /// Commitments to the folded polynomials `F_1 … F_{n−1}`.
    pub fold_commitments: Vec<G1Affine>,
    /// `[F_k(r), F_k(−r), F_k(r²)]` for `k = 0 … n−1` (one entry when `n = 0`).
    pub evaluations: Vec<[Fr; 3]>,
    /// `[(B − I)/Z]₁`.
    pub quotient: G1Affine,
}

/// The HyperKZG scheme over BN254.
#[derive(Clone, Copy, Debug, Default)]
pub struct HyperKzg;

fn absorb_statement(transcript: &mut Transcript, commitment: &Commitment, point: &[Fr], value: &Fr) {
    let mut bytes = Vec::new();
    // Serializing a curve point into a Vec cannot fail.
    let _ = commitment.point.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_COMMITMENT, &bytes);
    transcript.append_fields(LABEL_POINT, point);
    transcript.append_field(LABEL_VALUE, value);
}

fn absorb_points(transcript: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::with_capacity(32 * points.len() + 8);
    let _ = points.serialize_compressed(&mut bytes);
    transcript.append_bytes(label, &bytes);
}

/// `Σ_i c[i]·x^i`.
fn horner(coefficients: &[Fr], x: Fr) -> Fr {
    coefficients.iter().rev().fold(Fr::zero(), |acc, c| acc * x + c)
}

/// The value `F_{k+1}(r²)` must have, from `F_k(r)`, `F_k(−r)` and `u_k`.
fn fold_value(at_r: Fr, at_minus_r: Fr, u: Fr, half: Fr, half_over_r: Fr) -> Fr {
    let even = (at_r + at_minus_r) * half;
    let odd = (at_r - at_minus_r) * half_over_r;
    even + u * (odd - even)
}

/// The monomial coefficients of the parabola through `(x_j, y_j)`, `j < 3`.
fn interpolate_three(x: [Fr; 3], y: [Fr; 3]) -> Option<[Fr; 3]> {
    let mut out = [Fr::zero(); 3];
    for j in 0..3 {
        let (a, b) = (x[(j + 1) % 3], x[(j + 2) % 3]);
        let scale = y[j] * ((x[j] - a) * (x[j] - b)).inverse()?;
        // (X − a)(X − b) = X² − (a + b)X + ab
        out[0] += scale * a * b;
        out[1] -= scale * (a + b);
        out[2] += scale;
    }
    Some(out)
}

/// Divides `coefficients` (in place) by `(X − root)`; the remainder must be zero.
fn divide_by_linear(coefficients: &mut Vec<Fr>, root: Fr) {
    let mut carry = Fr::zero();
    for c in coefficients.iter_mut().rev() {
        let next = *c + carry * root;
        *c = carry;
        carry = next;
    }
    // Position i now holds the quotient's coefficient of X^i; the top position holds 0 and
    // `carry` the remainder (zero for an exact division).
    coefficients.pop();
}

impl HyperKzg {
    /// Commits to `f`.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] when `f` has more variables than the key.
    pub fn commit(key: &ProverKey, f: &DenseMultilinearExtension) -> Result<Commitment, PcsError> {
        if f.num_vars() > key.num_vars {
            return Err(PcsError::SrsTooSmall { needed: f.num_vars(), available: key.num_vars });
        }
        Ok(Commitment { point: msm(&key.powers_g1, f.evaluations()).into_affine() })
    }

    /// Commits to a table of small integers (quantized tensors) with ark-ec's small-scalar
    /// multi-scalar multiplication: `Σ f⁺[i]·[τ^i] − Σ f⁻[i]·[τ^i]`.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] when the table is longer than the key.
    pub fn commit_small(key: &ProverKey, values: &[i64]) -> Result<Commitment, PcsError> {
        if values.len() > key.powers_g1.len() {
            return Err(PcsError::SrsTooSmall {
                needed: values.len().next_power_of_two().ilog2() as usize,
                available: key.num_vars,
            });
        }
        let point = msm_signed(&key.powers_g1, values);
        Ok(Commitment { point: point.into_affine() })
    }

    /// Opens `f` at `point`; returns the proof and `f̃(point)`.
    ///
    /// The commitment, point and value are absorbed first, so the caller's transcript binds
    /// them.
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`], [`PcsError::SrsTooSmall`], or
    /// [`PcsError::DegenerateChallenge`] (negligible).
    pub fn open(
        key: &ProverKey,
        f: &DenseMultilinearExtension,
        commitment: &Commitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(OpeningProof, Fr), PcsError> {
        let n = f.num_vars();
        if point.len() != n {
            return Err(PcsError::WrongPointLength { expected: n, got: point.len() });
        }
        if n > key.num_vars {
            return Err(PcsError::SrsTooSmall { needed: n, available: key.num_vars });
        }
        // Fold: polys[k] = F_k, binding x_k = u_k each time (lowest variable first).
        let mut polys: Vec<Vec<Fr>> = vec![f.evaluations().to_vec()];
        for u in point.iter().take(n.saturating_sub(1)) {
            let previous = polys.last().map_or(&[][..], Vec::as_slice);
            let next: Vec<Fr> =
                previous.par_chunks(2).map(|pair| pair[0] + *u * (pair[1] - pair[0])).collect();
            polys.push(next);
        }
        let value = match (polys.last(), point.last()) {
            (Some(last), Some(u)) if last.len() == 2 => last[0] + *u * (last[1] - last[0]),
            (Some(last), _) => last.first().copied().unwrap_or_else(Fr::zero),
            _ => Fr::zero(),
        };
        absorb_statement(transcript, commitment, point, &value);
        let folds: Vec<G1Projective> = polys[1..].iter().map(|p| msm(&key.powers_g1, p)).collect();
        let fold_commitments = to_affine(&folds);
        absorb_points(transcript, LABEL_FOLDS, &fold_commitments);
        let r = transcript.challenge_field(LABEL_R);
        let xs = [r, -r, r.square()];
        if r.is_zero() || xs[2] == r || xs[2] == xs[1] {
            return Err(PcsError::DegenerateChallenge);
        }
        let evaluations: Vec<[Fr; 3]> = polys.par_iter().map(|p| xs.map(|x| horner(p, x))).collect();
        transcript.append_fields(LABEL_EVALUATIONS, &evaluations.concat());
        let q = transcript.challenge_field(LABEL_Q);
        // B = Σ q^k F_k
        let mut combined = vec![Fr::zero(); 1usize << n];
        let mut power = Fr::one();
        for p in &polys {
            combined.par_iter_mut().zip(p.par_iter()).for_each(|(b, c)| *b += power * c);
            power *= q;
        }
        let at: Vec<Fr> =
            (0..3).map(|j| evaluations.iter().rev().fold(Fr::zero(), |acc, e| acc * q + e[j])).collect();
        let interpolant =
            interpolate_three(xs, [at[0], at[1], at[2]]).ok_or(PcsError::DegenerateChallenge)?;
        for (c, i) in combined.iter_mut().zip(interpolant) {
            *c -= i;
        }
        for root in xs {
            divide_by_linear(&mut combined, root);
        }
        let quotient = msm(&key.powers_g1, &combined).into_affine();
        Ok((OpeningProof { fold_commitments, evaluations, quotient }, value))
    }

    /// Verifies that the polynomial committed in `commitment` has `value` at `point`.
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`], [`PcsError::DegenerateChallenge`],
    /// [`PcsError::EvaluationChainMismatch`] or [`PcsError::PairingCheckFailed`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify(
        key: &VerifierKey,
        commitment: &Commitment,
        point: &[Fr],
        value: Fr,
        proof: &OpeningProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let n = point.len();
        if proof.fold_commitments.len() != n.saturating_sub(1) {
            return Err(PcsError::MalformedProof("wrong number of fold commitments"));
        }
        if proof.evaluations.len() != n.max(1) {
            return Err(PcsError::MalformedProof("wrong number of evaluations"));
        }
        absorb_statement(transcript, commitment, point, &value);
        absorb_points(transcript, LABEL_FOLDS, &proof.fold_commitments);
        let r = transcript.challenge_field(LABEL_R);
        let xs = [r, -r, r.square()];
        let two_r_inverse = (r + r).inverse();
        let (Some(half_over_r), Some(half)) = (two_r_inverse, Fr::from(2u64).inverse()) else {
            return Err(PcsError::DegenerateChallenge);
        };
        if xs[2] == r || xs[2] == xs[1] {
            return Err(PcsError::DegenerateChallenge);
        }
        transcript.append_fields(LABEL_EVALUATIONS, &proof.evaluations.concat());
        // The folding chain, ending at the claimed value.
        if n == 0 {
            if proof.evaluations.iter().any(|e| e.iter().any(|v| *v != value)) {
                return Err(PcsError::EvaluationChainMismatch { round: 0 });
            }
        } else {
            for (k, (e, u)) in proof.evaluations.iter().zip(point).enumerate() {
                let target = proof.evaluations.get(k + 1).map_or(value, |next| next[2]);
                if fold_value(e[0], e[1], *u, half, half_over_r) != target {
                    return Err(PcsError::EvaluationChainMismatch { round: k });
                }
            }
        }
        let q = transcript.challenge_field(LABEL_Q);
        // C_B = C_0 + Σ_{k≥1} q^k C_k
        let mut scalars = Vec::with_capacity(n.max(1));
        let mut power = Fr::one();
        for _ in 0..n.max(1) {
            scalars.push(power);
            power *= q;
        }
        let mut bases = Vec::with_capacity(n.max(1));
        bases.push(commitment.point);
        bases.extend_from_slice(&proof.fold_commitments);
        let combined = G1Projective::msm(&bases, &scalars).map_err(|_| PcsError::MalformedProof("length"))?;
        let at = [0, 1, 2].map(|j| {
            proof
                .evaluations
                .iter()
                .rev()
                .fold(Fr::zero(), |acc, e| acc * q + e.get(j).copied().unwrap_or_default())
        });
        let interpolant = interpolate_three(xs, at).ok_or(PcsError::DegenerateChallenge)?;
        let interpolant_commitment = G1Projective::msm(&key.powers_g1, &interpolant)
            .map_err(|_| PcsError::MalformedProof("verifier key"))?;
        // Z(X) = (X² − r²)(X − r²) = X³ − r²X² − r²X + r⁴
        let r2 = xs[2];
        let vanishing = [r2.square(), -r2, -r2, Fr::one()];
        let vanishing_commitment = ark_bn254::G2Projective::msm(&key.powers_g2, &vanishing)
            .map_err(|_| PcsError::MalformedProof("verifier key"))?;
        let h = key.powers_g2.first().ok_or(PcsError::MalformedProof("verifier key"))?;
        let left = (combined - interpolant_commitment).into_affine();
        let check = Bn254::multi_pairing(
            [left, (-proof.quotient.into_group()).into_affine()],
            [*h, vanishing_commitment.into_affine()],
        );
        if check.0.is_one() { Ok(()) } else { Err(PcsError::PairingCheckFailed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_by_linear_factors_is_exact() {
        // (X − 2)(X − 3)(X + 1) = X³ − 4X² + X + 6
        let mut p = vec![Fr::from(6u64), Fr::from(1u64), -Fr::from(4u64), Fr::one()];
        divide_by_linear(&mut p, Fr::from(2u64));
        assert_eq!(p, vec![-Fr::from(3u64), -Fr::from(2u64), Fr::one()]);
        divide_by_linear(&mut p, Fr::from(3u64));
        divide_by_linear(&mut p, -Fr::one());
        assert_eq!(p, vec![Fr::one()]);
    }

    #[test]
    fn interpolation_through_three_points() {
        let xs = [Fr::from(2u64), -Fr::from(2u64), Fr::from(4u64)];
        let poly = [Fr::from(7u64), Fr::from(5u64), Fr::from(3u64)];
        let ys = xs.map(|x| horner(&poly, x));
        assert_eq!(interpolate_three(xs, ys), Some(poly));
    }
}
