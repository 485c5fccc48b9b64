//! The structured reference string: `[τ^i]₁` for `i < 2^n` and `[τ^i]₂` for `i ≤ 3`.

use crate::{Bn254, G1Affine, G1Projective, G2Affine, G2Projective, PcsError};
use ark_ec::pairing::Pairing;
use ark_ec::{CurveGroup, PrimeGroup, ScalarMul};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};

/// Powers of a secret `τ` in both groups.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct StructuredReferenceString {
    /// `[τ^i]₁`, `i < 2^max_num_vars`.
    pub powers_g1: Vec<G1Affine>,
    /// `[τ^i]₂`, `i ≤ 3`.
    pub powers_g2: Vec<G2Affine>,
}

/// What the prover needs for polynomials of up to `num_vars` variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProverKey {
    /// Variables supported.
    pub num_vars: usize,
    /// `[τ^i]₁`, `i < 2^num_vars`.
    pub powers_g1: Vec<G1Affine>,
}

/// What the verifier needs: three G1 and four G2 powers (a few hundred bytes).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct VerifierKey {
    /// `[1]₁, [τ]₁, [τ²]₁`.
    pub powers_g1: Vec<G1Affine>,
    /// `[1]₂, [τ]₂, [τ²]₂, [τ³]₂`.
    pub powers_g2: Vec<G2Affine>,
}

impl StructuredReferenceString {
    /// **Insecure**: a reference string whose secret is derived from `seed`, so anyone can
    /// forge openings with it. For tests and demonstrations only.
    pub fn insecure_for_testing(max_num_vars: usize, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let tau = Fr::rand(&mut rng);
        let size = 1usize << max_num_vars;
        let mut powers = Vec::with_capacity(size);
        let mut current = Fr::one();
        for _ in 0..size.max(4) {
            powers.push(current);
            current *= tau;
        }
        let g1 = G1Projective::generator().batch_mul(&powers[..size.max(3)]);
        let g2 = G2Projective::generator().batch_mul(&powers[..4]);
        Self { powers_g1: g1, powers_g2: g2 }
    }

    /// Variables of the largest polynomial this string can commit to.
    pub fn max_num_vars(&self) -> usize {
        self.powers_g1.len().checked_ilog2().map_or(0, |l| l as usize)
    }

    /// The prover key for `num_vars` variables.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`].
    pub fn prover_key(&self, num_vars: usize) -> Result<ProverKey, PcsError> {
        let size = 1usize << num_vars;
        if self.powers_g1.len() < size.max(3) {
            return Err(PcsError::SrsTooSmall { needed: num_vars, available: self.max_num_vars() });
        }
        Ok(ProverKey { num_vars, powers_g1: self.powers_g1[..size].to_vec() })
    }

    /// The verifier key.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] for a string with fewer than 3 G1 or 4 G2 powers.
    pub fn verifier_key(&self) -> Result<VerifierKey, PcsError> {
        match (self.powers_g1.get(..3), self.powers_g2.get(..4)) {
            (Some(g1), Some(g2)) => Ok(VerifierKey { powers_g1: g1.to_vec(), powers_g2: g2.to_vec() }),
            _ => Err(PcsError::SrsTooSmall { needed: 2, available: self.max_num_vars() }),
        }
    }

    /// Checks with pairings that the string is made of powers of one secret, on `samples`
    /// consecutive pairs spread over the G1 powers (all of G2).
    ///
    /// # Errors
    /// [`PcsError::InconsistentSrs`].
    pub fn check_consistency(&self, samples: usize) -> Result<(), PcsError> {
        let (Some(h), Some(h_tau)) = (self.powers_g2.first(), self.powers_g2.get(1)) else {
            return Err(PcsError::InconsistentSrs);
        };
        let g = self.powers_g1.first().ok_or(PcsError::InconsistentSrs)?;
        // [τ^{i+1}]₂ against [τ^i]₂ using [τ]₁
        let g_tau = self.powers_g1.get(1).ok_or(PcsError::InconsistentSrs)?;
        for pair in self.powers_g2.windows(2) {
            if Bn254::pairing(g, pair[1]) != Bn254::pairing(g_tau, pair[0]) {
                return Err(PcsError::InconsistentSrs);
            }
        }
        let last = self.powers_g1.len().saturating_sub(1);
        let step = (last / samples.max(1)).max(1);
        for i in (0..last).step_by(step) {
            let (Some(a), Some(b)) = (self.powers_g1.get(i), self.powers_g1.get(i + 1)) else { break };
            if Bn254::pairing(b, h) != Bn254::pairing(a, h_tau) {
                return Err(PcsError::InconsistentSrs);
            }
        }
        Ok(())
    }

    /// Writes the string (compressed points).
    ///
    /// # Errors
    /// [`PcsError::Io`].
    pub fn write_to_file(&self, path: &std::path::Path) -> Result<(), PcsError> {
        let file =
            std::fs::File::create(path).map_err(|e| PcsError::Io(format!("{}: {e}", path.display())))?;
        self.serialize_compressed(std::io::BufWriter::new(file))
            .map_err(|e| PcsError::Io(format!("{}: {e}", path.display())))
    }

    /// Reads a string written by [`Self::write_to_file`] (or converted from a public
    /// ceremony), validating every point, then spot-checks its consistency.
    ///
    /// # Errors
    /// [`PcsError::Io`], [`PcsError::Serialization`], [`PcsError::InconsistentSrs`].
    pub fn read_from_file(path: &std::path::Path) -> Result<Self, PcsError> {
        let file = std::fs::File::open(path).map_err(|e| PcsError::Io(format!("{}: {e}", path.display())))?;
        let srs = Self::deserialize_compressed(std::io::BufReader::new(file))
            .map_err(|e| PcsError::Serialization(format!("{}: {e}", path.display())))?;
        srs.check_consistency(16)?;
        Ok(srs)
    }
}

/// `Σ_i scalars[i]·bases[i]`.
pub(crate) fn msm(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    use ark_ec::VariableBaseMSM;
    let n = bases.len().min(scalars.len());
    G1Projective::msm_unchecked(&bases[..n], &scalars[..n])
}

/// Normalizes many projective points at once.
pub(crate) fn to_affine(points: &[G1Projective]) -> Vec<G1Affine> {
    G1Projective::normalize_batch(points)
}

/// `Σ_i values[i]·bases[i]` for signed machine integers, with ark-ec's small-scalar MSMs:
/// the positive and negative parts separately, 8-bit scalars when every |v| < 2^8 (quantized
/// activations), else 16, 32 or 64 bits.
pub(crate) fn msm_signed(bases: &[G1Affine], values: &[i64]) -> G1Projective {
    use ark_ec::VariableBaseMSM;
    let n = bases.len().min(values.len());
    let (bases, values) = (&bases[..n], &values[..n]);
    let largest = values.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
    let positive = values.iter().map(|&v| if v > 0 { v as u64 } else { 0 });
    let negative = values.iter().map(|&v| if v < 0 { v.unsigned_abs() } else { 0 });
    macro_rules! signed {
        ($ty:ty, $f:ident) => {{
            let p: Vec<$ty> = positive.map(|v| v as $ty).collect();
            let q: Vec<$ty> = negative.map(|v| v as $ty).collect();
            G1Projective::$f(bases, &p) - G1Projective::$f(bases, &q)
        }};
    }
    if largest < 1 << 8 {
        signed!(u8, msm_u8)
    } else if largest < 1 << 16 {
        signed!(u16, msm_u16)
    } else if largest < 1 << 32 {
        signed!(u32, msm_u32)
    } else {
        signed!(u64, msm_u64)
    }
}
