//! Hyrax (Wahby et al. 2018), without hiding: a transparent multilinear commitment whose
//! opening needs no multi-scalar multiplication from the prover.
//!
//! ```text
//! f ∈ F^{2^n} as a matrix M with 2^⌊n/2⌋ rows and 2^⌈n/2⌉ columns (column bits low)
//! commit   C_i = Σ_j M[i][j]·G_j                   one Pedersen commitment per row
//! open     u = [u_col ‖ u_row]:  L = eq(·, u_row), R = eq(·, u_col),  send w = Lᵀ·M
//! verify   Σ_i L_i·C_i = Σ_j w_j·G_j   and   ⟨w, R⟩ = v                (two MSMs of size √N)
//! ```
//!
//! The generators come from hashing to the curve (try-and-increment on BLAKE3 output), so
//! nobody knows a relation between them and there is no trusted setup. This variant is not
//! zero-knowledge (`w` reveals a combination of rows); the hiding variant adds blinding rows.

use crate::srs::msm_signed;
use crate::{G1Affine, G1Projective, PcsError};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::PrimeField;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::{Fr, UnreducedSum};
use zkmha_mle::{DenseMultilinearExtension, eq_table};
use zkmha_transcript::Transcript;

const LABEL_COMMITMENT: &[u8] = b"pcs/hyrax/commitment";
const LABEL_POINT: &[u8] = b"pcs/hyrax/point";
const LABEL_VALUE: &[u8] = b"pcs/hyrax/value";
const GENERATOR_DOMAIN: &[u8] = b"zkmha hyrax generators v1";

/// Public generators for tables of up to `2^max_num_vars` entries (transparent).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HyraxParams {
    /// Variables supported.
    pub max_num_vars: usize,
    /// `G_j`, `j < 2^⌈max_num_vars/2⌉`.
    pub generators: Vec<G1Affine>,
}

/// A commitment: one group element per matrix row.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HyraxCommitment {
    /// Variables of the committed polynomial.
    pub num_vars: usize,
    /// `C_i`.
    pub rows: Vec<G1Affine>,
}

/// An opening: the rows combined with the row weights.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HyraxProof {
    /// `w = Lᵀ·M`.
    pub combined_row: Vec<Fr>,
}

/// `(row variables, column variables)` of the matrix view.
pub fn split_vars(num_vars: usize) -> (usize, usize) {
    (num_vars / 2, num_vars - num_vars / 2)
}

impl HyraxParams {
    /// Derives the generators for up to `max_num_vars` variables.
    pub fn new(max_num_vars: usize) -> Self {
        let (_, columns) = split_vars(max_num_vars);
        let generators = (0..1u64 << columns).into_par_iter().map(hash_to_g1).collect();
        Self { max_num_vars, generators }
    }
}

/// Try-and-increment: the first `x = H(domain, index, counter)` that lies on the curve.
fn hash_to_g1(index: u64) -> G1Affine {
    for counter in 0u64.. {
        let mut hasher = blake3::Hasher::new();
        hasher.update(GENERATOR_DOMAIN);
        hasher.update(&index.to_le_bytes());
        hasher.update(&counter.to_le_bytes());
        let mut bytes = [0u8; 64];
        hasher.finalize_xof().fill(&mut bytes);
        let x = ark_bn254::Fq::from_le_bytes_mod_order(&bytes);
        if let Some(point) = G1Affine::get_point_from_x_unchecked(x, bytes[0] & 1 == 1) {
            // BN254's G1 has cofactor 1, so every curve point is in the group.
            if !point.is_zero() {
                return point;
            }
        }
    }
    G1Affine::generator()
}

fn absorb(transcript: &mut Transcript, commitment: &HyraxCommitment, point: &[Fr], value: &Fr) {
    let mut bytes = Vec::new();
    let _ = commitment.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_COMMITMENT, &bytes);
    transcript.append_fields(LABEL_POINT, point);
    transcript.append_field(LABEL_VALUE, value);
}

/// The Hyrax scheme.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hyrax;

impl Hyrax {
    fn check_size(params: &HyraxParams, num_vars: usize) -> Result<(), PcsError> {
        if num_vars > params.max_num_vars {
            return Err(PcsError::SrsTooSmall { needed: num_vars, available: params.max_num_vars });
        }
        Ok(())
    }

    /// Commits to `f`.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`].
    pub fn commit(params: &HyraxParams, f: &DenseMultilinearExtension) -> Result<HyraxCommitment, PcsError> {
        Self::check_size(params, f.num_vars())?;
        let (_, columns) = split_vars(f.num_vars());
        let width = 1usize << columns;
        let rows: Vec<G1Projective> = f
            .evaluations()
            .par_chunks(width)
            .map(|row| G1Projective::msm_unchecked(&params.generators[..width], row))
            .collect();
        Ok(HyraxCommitment { num_vars: f.num_vars(), rows: G1Projective::normalize_batch(&rows) })
    }

    /// Commits to a table of small integers (`2^num_vars` of them) with small-scalar MSMs.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`], or [`PcsError::MalformedProof`] for a table of another length.
    pub fn commit_small(
        params: &HyraxParams,
        num_vars: usize,
        values: &[i64],
    ) -> Result<HyraxCommitment, PcsError> {
        Self::check_size(params, num_vars)?;
        if values.len() != 1usize << num_vars {
            return Err(PcsError::MalformedProof("table length is not 2^num_vars"));
        }
        let (_, columns) = split_vars(num_vars);
        let width = 1usize << columns;
        let bases = &params.generators[..width];
        let rows: Vec<G1Projective> = values.par_chunks(width).map(|row| msm_signed(bases, row)).collect();
        Ok(HyraxCommitment { num_vars, rows: G1Projective::normalize_batch(&rows) })
    }

    /// Opens `f` at `point` (`[column part ‖ row part]`); returns the proof and `f̃(point)`.
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`].
    pub fn open(
        f: &DenseMultilinearExtension,
        commitment: &HyraxCommitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(HyraxProof, Fr), PcsError> {
        if point.len() != f.num_vars() {
            return Err(PcsError::WrongPointLength { expected: f.num_vars(), got: point.len() });
        }
        let (_, columns) = split_vars(f.num_vars());
        let (column_point, row_point) = point.split_at(columns);
        let left = eq_table(row_point);
        let right = eq_table(column_point);
        let width = 1usize << columns;
        let table = f.evaluations();
        let combined_row: Vec<Fr> = (0..width)
            .into_par_iter()
            .map(|j| {
                let mut acc = UnreducedSum::new();
                for (i, l) in left.iter().enumerate() {
                    acc.add_product(l, &table[i * width + j]);
                }
                acc.finish()
            })
            .collect();
        let value = combined_row.iter().zip(&right).map(|(w, r)| *w * r).sum();
        absorb(transcript, commitment, point, &value);
        Ok((HyraxProof { combined_row }, value))
    }

    /// Verifies an opening.
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`], [`PcsError::MalformedProof`],
    /// [`PcsError::EvaluationChainMismatch`] (the value) or [`PcsError::PairingCheckFailed`]
    /// (the commitment equation).
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify(
        params: &HyraxParams,
        commitment: &HyraxCommitment,
        point: &[Fr],
        value: Fr,
        proof: &HyraxProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        if point.len() != commitment.num_vars {
            return Err(PcsError::WrongPointLength { expected: commitment.num_vars, got: point.len() });
        }
        Self::check_size(params, commitment.num_vars)?;
        let (rows, columns) = split_vars(commitment.num_vars);
        if commitment.rows.len() != 1usize << rows {
            return Err(PcsError::MalformedProof("commitment has the wrong number of rows"));
        }
        if proof.combined_row.len() != 1usize << columns {
            return Err(PcsError::MalformedProof("combined row has the wrong length"));
        }
        absorb(transcript, commitment, point, &value);
        let (column_point, row_point) = point.split_at(columns);
        let right = eq_table(column_point);
        let inner: Fr = proof.combined_row.iter().zip(&right).map(|(w, r)| *w * r).sum();
        if inner != value {
            return Err(PcsError::EvaluationChainMismatch { round: 0 });
        }
        let left = eq_table(row_point);
        let generators =
            params.generators.get(..1usize << columns).ok_or(PcsError::MalformedProof("params"))?;
        let expected =
            G1Projective::msm(&commitment.rows, &left).map_err(|_| PcsError::MalformedProof("rows"))?;
        let actual = G1Projective::msm(generators, &proof.combined_row)
            .map_err(|_| PcsError::MalformedProof("row"))?;
        if expected == actual { Ok(()) } else { Err(PcsError::PairingCheckFailed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_field::One;

    #[test]
    fn round_trips_and_rejects_tampering() {
        let mut rng = StdRng::seed_from_u64(1);
        let params = HyraxParams::new(9);
        for n in 0..=9 {
            let f = DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect())
                .unwrap_or_else(|e| unreachable!("{e}"));
            let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
            let c = Hyrax::commit(&params, &f).unwrap_or_else(|e| unreachable!("{e}"));
            let (proof, value) = Hyrax::open(&f, &c, &point, &mut Transcript::new(b"t"))
                .unwrap_or_else(|e| unreachable!("{e}"));
            assert_eq!(value, f.evaluate(&point).unwrap_or_default());
            assert_eq!(Hyrax::verify(&params, &c, &point, value, &proof, &mut Transcript::new(b"t")), Ok(()));
            assert_eq!(
                Hyrax::verify(&params, &c, &point, value + Fr::one(), &proof, &mut Transcript::new(b"t")),
                Err(PcsError::EvaluationChainMismatch { round: 0 })
            );
            if n > 0 {
                // Shift the combined row so the inner product still matches: the group check fails.
                let mut bad = proof.clone();
                let right = eq_table(&point[..split_vars(n).1]);
                let (Some(r0), Some(r1)) = (right.first(), right.get(1)) else { continue };
                let delta = Fr::from(5u64);
                bad.combined_row[0] += delta * r1;
                bad.combined_row[1] -= delta * r0;
                assert_eq!(
                    Hyrax::verify(&params, &c, &point, value, &bad, &mut Transcript::new(b"t")),
                    Err(PcsError::PairingCheckFailed),
                    "n = {n}"
                );
            }
        }
        let values: Vec<i64> = (0..256).map(|i| (i * 37 % 255) - 127).collect();
        let f = DenseMultilinearExtension::from_i64(8, &values).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(Hyrax::commit_small(&params, 8, &values), Hyrax::commit(&params, &f));
    }
}
