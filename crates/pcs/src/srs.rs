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

    /// Checks that the string is made of powers of one secret, every point of it, with a
    /// randomized check whose weights come from the operating system's generator (so the
    /// author of the string cannot choose them). See
    /// [`Self::check_consistency_with_rng`].
    ///
    /// # Errors
    /// As [`Self::check_consistency_with_rng`].
    pub fn check_consistency(&self) -> Result<(), PcsError> {
        self.check_consistency_with_rng(&mut rand::thread_rng())
    }

    /// Checks that the string is made of powers of one secret, with weights drawn from `rng`:
    ///
    /// 1. at least 3 G1 and 4 G2 powers ([`PcsError::SrsTooShort`]);
    /// 2. no point is the identity ([`PcsError::SrsIdentityPoint`]): an all-identity string
    ///    satisfies every pairing equation and makes any opening verify;
    /// 3. the secret is not 1 or −1, whose powers everyone knows
    ///    ([`PcsError::SrsKnownSecret`]; 0 is caught by 2);
    /// 4. with τ defined by `[τ]₂ = τ·[1]₂`, `P_{i+1} = τ·P_i` for **every** consecutive pair
    ///    of G1 powers: two independent random combinations with 64-bit weights `r_i`,
    ///    `e(Σ r_i·P_{i+1}, [1]₂) = e(Σ r_i·P_i, [τ]₂)` (two multi-scalar multiplications and
    ///    one two-pairing product each), so a string with any wrong point passes with
    ///    probability at most 2^-128;
    /// 5. the G2 powers likewise: `e([1]₁, Σ s_j·Q_{j+1}) = e([τ]₁, Σ s_j·Q_j)`
    ///    ([`PcsError::InconsistentSrs`] for 4 and 5).
    ///
    /// Curve and subgroup membership are checked when a file is decoded
    /// ([`Self::read_from_file`]).
    ///
    /// # Errors
    /// [`PcsError::SrsTooShort`], [`PcsError::SrsIdentityPoint`], [`PcsError::SrsKnownSecret`],
    /// [`PcsError::InconsistentSrs`].
    pub fn check_consistency_with_rng<R: rand::RngCore + ?Sized>(&self, rng: &mut R) -> Result<(), PcsError> {
        use ark_ec::{AffineRepr, VariableBaseMSM};
        let (g1, g2) = (&self.powers_g1, &self.powers_g2);
        let (Some(&g), Some(&g_tau), Some(_), Some(&h), Some(&h_tau), Some(_)) =
            (g1.first(), g1.get(1), g1.get(2), g2.first(), g2.get(1), g2.get(3))
        else {
            return Err(PcsError::SrsTooShort { g1: g1.len(), g2: g2.len() });
        };
        if let Some(index) = g1.iter().position(|p| p.is_zero()) {
            return Err(PcsError::SrsIdentityPoint { group: 1, index });
        }
        if let Some(index) = g2.iter().position(|p| p.is_zero()) {
            return Err(PcsError::SrsIdentityPoint { group: 2, index });
        }
        if g_tau == g || g_tau == -g {
            return Err(PcsError::SrsKnownSecret);
        }
        let pairs = g1.len() - 1;
        for _ in 0..2 {
            let weights: Vec<u64> = (0..pairs).map(|_| rng.next_u64()).collect();
            let lower = G1Projective::msm_u64(&g1[..pairs], &weights);
            let upper = G1Projective::msm_u64(&g1[1..], &weights);
            if !pairing_product_is_one(upper, h.into(), -lower, h_tau.into()) {
                return Err(PcsError::InconsistentSrs);
            }
        }
        let pairs = g2.len() - 1;
        for _ in 0..2 {
            let weights: Vec<u64> = (0..pairs).map(|_| rng.next_u64()).collect();
            let lower = G2Projective::msm_u64(&g2[..pairs], &weights);
            let upper = G2Projective::msm_u64(&g2[1..], &weights);
            if !pairing_product_is_one(g.into(), upper, -G1Projective::from(g_tau), lower) {
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
    /// ceremony), validating every point (on the curve, in the prime-order subgroup), then
    /// checks its structure with [`Self::check_consistency`].
    ///
    /// # Errors
    /// [`PcsError::Io`], [`PcsError::Serialization`], and the errors of
    /// [`Self::check_consistency_with_rng`].
    pub fn read_from_file(path: &std::path::Path) -> Result<Self, PcsError> {
        let bytes = std::fs::read(path).map_err(|e| PcsError::Io(format!("{}: {e}", path.display())))?;
        let srs = Self::decode_compressed(&bytes)
            .map_err(|e| PcsError::Serialization(format!("{}: {e}", path.display())))?;
        srs.check_consistency()?;
        Ok(srs)
    }

    /// Decodes [`Self::write_to_file`]'s bytes (each vector: its length as a little-endian
    /// `u64`, then its compressed points), decompressing and validating the points in parallel
    /// (decompression dominates loading), refusing a declared length longer than the bytes and
    /// trailing bytes.
    fn decode_compressed(bytes: &[u8]) -> Result<Self, String> {
        use ark_ec::AffineRepr;
        use rayon::prelude::*;
        fn points<P: CanonicalDeserialize + Send>(
            bytes: &mut &[u8],
            size: usize,
            name: &str,
        ) -> Result<Vec<P>, String> {
            let (len, rest) =
                bytes.split_first_chunk::<8>().ok_or(format!("the {name} length is cut off"))?;
            let len = u64::from_le_bytes(*len);
            let total = usize::try_from(len)
                .ok()
                .and_then(|l| l.checked_mul(size))
                .filter(|&total| total <= rest.len())
                .ok_or(format!("{len} {name} points declared, fewer present"))?;
            let (body, rest) = rest.split_at(total);
            let decoded = body
                .par_chunks_exact(size)
                .enumerate()
                .map(|(i, c)| P::deserialize_compressed(c).map_err(|e| format!("{name} point {i}: {e}")))
                .collect::<Result<Vec<P>, String>>()?;
            *bytes = rest;
            Ok(decoded)
        }
        let mut rest = bytes;
        let powers_g1 = points::<G1Affine>(&mut rest, G1Affine::generator().compressed_size(), "G1")?;
        let powers_g2 = points::<G2Affine>(&mut rest, G2Affine::generator().compressed_size(), "G2")?;
        if !rest.is_empty() {
            return Err(format!("{} bytes after the reference string", rest.len()));
        }
        Ok(Self { powers_g1, powers_g2 })
    }
}

/// `e(a, b)·e(c, d) = 1`, with one final exponentiation.
fn pairing_product_is_one(a: G1Projective, b: G2Projective, c: G1Projective, d: G2Projective) -> bool {
    use ark_ec::pairing::PairingOutput;
    let [a, c] = [a, c].map(G1Affine::from);
    let [b, d] = [b, d].map(G2Affine::from);
    Bn254::multi_pairing([a, c], [b, d]) == PairingOutput::default()
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
