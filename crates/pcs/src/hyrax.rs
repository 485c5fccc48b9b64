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
//! zero-knowledge (`w` reveals a combination of rows); the hiding variant (blinded rows and a
//! proof of dot product) is `crate::hiding`.

use crate::batch_affine::{Scratch, add_pairs, sum_segments_in_place};
use crate::srs::msm_signed;
use crate::{G1Affine, G1Projective, PcsError};
use ark_ec::{AdditiveGroup, AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{BigInteger, PrimeField};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rayon::prelude::*;
use zkmha_field::Fr;
use zkmha_mle::{DenseMultilinearExtension, eq_table, fold_rows};
use zkmha_transcript::Transcript;

const LABEL_COMMITMENT: &[u8] = b"pcs/hyrax/commitment";
const LABEL_POINT: &[u8] = b"pcs/hyrax/point";
const LABEL_VALUE: &[u8] = b"pcs/hyrax/value";
const LABEL_EQUATIONS: &[u8] = b"pcs/group-equations";
const GENERATOR_DOMAIN: &[u8] = b"zkmha hyrax generators v1";
/// The hash index of `H` (the `G_j` use `0..2^c`).
const BLINDING_GENERATOR_INDEX: u64 = u64::MAX;
/// The hash index of `U`.
const VALUE_GENERATOR_INDEX: u64 = u64::MAX - 1;

/// Public generators for tables of up to `2^max_num_vars` entries (transparent).
#[derive(Clone, Debug)]
pub struct HyraxParams {
    /// Variables supported.
    pub max_num_vars: usize,
    /// `G_j`, `j < 2^⌈max_num_vars/2⌉`.
    pub generators: Vec<G1Affine>,
    /// `H`, the blinding generator of hiding commitments (`crate::hiding`), hashed to the
    /// curve like the `G_j` at an index none of them uses.
    pub blinding_generator: G1Affine,
    /// `U`, the value generator of Pedersen commitments to single values (`v·U + β·H`), hashed
    /// like `H`.
    pub value_generator: G1Affine,
    /// `k·G_j` for `k = 1..=SMALL_TABLE` (row-major by `j`), built on first use by
    /// [`Hyrax::commit_small`].
    small_multiples: std::sync::OnceLock<Vec<G1Affine>>,
    /// Fixed-base tables of `U` and `H` for the prover's Pedersen commitments
    /// ([`HyraxParams::prepare_pedersen_tables`]).
    pedersen_tables: std::sync::OnceLock<[FixedBaseTable; 2]>,
}

/// Bits per window of the fixed-base tables: 64 windows of 16 multiples, built with ~1 000
/// additions; a multiplication is then 64 mixed additions (~5× faster than a variable-base
/// one) — a table that pays for itself within a dozen multiplications.
const FIXED_BASE_WINDOW: usize = 4;

/// `table[j][i] = i·2^{4j}·B` for one base `B`. Written by hand: ark-ec's
/// `BatchMulPreprocessing` sizes its window for batches and returns affine points, one
/// inversion per call.
#[derive(Clone, Debug)]
struct FixedBaseTable {
    windows: Vec<Vec<G1Affine>>,
}

impl FixedBaseTable {
    fn new(base: G1Affine) -> Self {
        let count = (Fr::MODULUS_BIT_SIZE as usize).div_ceil(FIXED_BASE_WINDOW);
        let mut windows = Vec::with_capacity(count);
        let mut window_base = G1Projective::from(base);
        for _ in 0..count {
            let mut multiples = Vec::with_capacity(1 << FIXED_BASE_WINDOW);
            let mut acc = G1Projective::ZERO;
            for _ in 0..1usize << FIXED_BASE_WINDOW {
                multiples.push(acc);
                acc += window_base;
            }
            windows.push(G1Projective::normalize_batch(&multiples));
            for _ in 0..FIXED_BASE_WINDOW {
                window_base.double_in_place();
            }
        }
        Self { windows }
    }

    fn mul(&self, scalar: Fr) -> G1Projective {
        let bits = scalar.into_bigint();
        let mut acc = G1Projective::ZERO;
        for (j, window) in self.windows.iter().enumerate() {
            let mut index = 0usize;
            for b in 0..FIXED_BASE_WINDOW {
                if bits.get_bit(j * FIXED_BASE_WINDOW + b) {
                    index |= 1 << b;
                }
            }
            if index != 0
                && let Some(point) = window.get(index)
            {
                acc += point;
            }
        }
        acc
    }
}

/// Largest |value| committed through the table of multiples (a signed 8-bit digit).
const SMALL_TABLE: usize = 128;

/// Points summed together per batch-affine block (≈ 300 KB, inside a core's L2 cache).
const ROW_BLOCK_POINTS: usize = 4096;

/// A commitment: one group element per matrix row.
///
/// Encoded sparsely: `num_vars`, the row count, a bitmap of the rows that are not the
/// identity, then those rows. An all-zero row commits to the identity, and some committed
/// columns are almost all zero (the softmax's overflow digits), so their commitments shrink
/// to the bitmap. Written by hand because the derived encoding spends a full point on each
/// identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HyraxCommitment {
    /// Variables of the committed polynomial.
    pub num_vars: usize,
    /// `C_i`.
    pub rows: Vec<G1Affine>,
}

impl HyraxCommitment {
    /// Column variables of the committed matrix view: `num_vars − log2(rows)` (the
    /// commitment's layout; see [`Hyrax::commit_small_with_columns`]).
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] when the row count is not a power of two or exceeds the
    /// table.
    pub fn column_vars(&self) -> Result<usize, PcsError> {
        let rows = self.rows.len();
        if !rows.is_power_of_two() {
            return Err(PcsError::MalformedProof("row count is not a power of two"));
        }
        self.num_vars
            .checked_sub(rows.trailing_zeros() as usize)
            .ok_or(PcsError::MalformedProof("more rows than table entries"))
    }
}

impl HyraxCommitment {
    /// The commitment to the combination `Σ_u w_u·M[u, ·]` of the committed matrix's rows, as a
    /// one-row commitment of `column_vars()` variables: `Σ_u w_u·C_u` (an MSM over the rows
    /// named; hiding commitments combine their blinds alike, [`crate::HyraxBlinds::combine_rows`]).
    ///
    /// # Errors
    /// [`PcsError::MalformedProof`] for a malformed commitment or a row it does not have.
    pub fn combine_rows(&self, weights: &[(usize, Fr)]) -> Result<HyraxCommitment, PcsError> {
        let num_vars = self.column_vars()?;
        let mut bases = Vec::with_capacity(weights.len());
        let mut scalars = Vec::with_capacity(weights.len());
        for (row, weight) in weights {
            bases.push(
                *self.rows.get(*row).ok_or(PcsError::MalformedProof("a combination names a missing row"))?,
            );
            scalars.push(*weight);
        }
        let combined = crate::srs::msm(&bases, &scalars).into_affine();
        Ok(HyraxCommitment { num_vars, rows: vec![combined] })
    }
}

/// Most rows a decoded commitment may claim: 2^18 rows — an embedding table commits one row
/// per token (vocabularies of up to 262 144 tokens: Gemma 3's, Qwen2's 151 936, Llama 3's
/// 128 256); square-layout tables of up to 2^32 entries need 2^16 and the attention layers'
/// stated limits give at most 2^15 — so a corrupt length cannot make the decoder allocate
/// without bound. A decoded commitment holds at most 2^18 points (18 MiB), and only after
/// its file has supplied the 2^15-byte bitmap (and the reader's row budget covers them).
const MAX_ENCODED_ROWS: u64 = 1 << 18;

/// The fewest points a commitment decodes side by side (a square root each, ~8 µs): below
/// it, one thread (the same rows in the same order either way).
const PARALLEL_DECODED_ROWS: usize = 64;

thread_local! {
    /// Rows the commitments decoded on this thread may still claim ([`decode_with_row_budget`]).
    static ROWS_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

/// Runs `decode` on this thread with at most `max_rows` commitment rows decoded in all.
///
/// An identity row costs one bitmap bit in the encoding but a whole point (72 bytes) in
/// memory, so a file of many sparse commitments would decode to ~600 times its length; a
/// reader of untrusted files bounds the total here (every decoded [`HyraxCommitment`]
/// draws its row count from the budget; one over it fails to decode). Nested calls see the
/// smaller budget; the previous one is restored afterwards.
pub fn decode_with_row_budget<T>(max_rows: u64, decode: impl FnOnce() -> T) -> T {
    /// Restores the enclosing budget, less what was used, also if `decode` unwinds.
    struct Restore {
        previous: u64,
        budget: u64,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            let used = self.budget.saturating_sub(ROWS_LEFT.with(std::cell::Cell::get));
            let rest = if self.previous == u64::MAX { u64::MAX } else { self.previous.saturating_sub(used) };
            ROWS_LEFT.with(|left| left.set(rest));
        }
    }
    let previous = ROWS_LEFT.with(std::cell::Cell::get);
    let budget = previous.min(max_rows);
    ROWS_LEFT.with(|left| left.set(budget));
    let _restore = Restore { previous, budget };
    decode()
}

/// Draws `rows` from this thread's decoding budget: false when it does not cover them.
fn draw_decoded_rows(rows: u64) -> bool {
    ROWS_LEFT.with(|left| match left.get().checked_sub(rows) {
        Some(rest) => {
            left.set(rest);
            true
        }
        None => false,
    })
}

impl CanonicalSerialize for HyraxCommitment {
    fn serialize_with_mode<W: ark_serialize::Write>(
        &self,
        mut writer: W,
        compress: ark_serialize::Compress,
    ) -> Result<(), ark_serialize::SerializationError> {
        self.num_vars.serialize_with_mode(&mut writer, compress)?;
        (self.rows.len() as u64).serialize_with_mode(&mut writer, compress)?;
        let mut bitmap = vec![0u8; self.rows.len().div_ceil(8)];
        for (k, row) in self.rows.iter().enumerate() {
            if !row.is_zero()
                && let Some(byte) = bitmap.get_mut(k / 8)
            {
                *byte |= 1 << (k % 8);
            }
        }
        writer.write_all(&bitmap)?;
        for row in self.rows.iter().filter(|row| !row.is_zero()) {
            row.serialize_with_mode(&mut writer, compress)?;
        }
        Ok(())
    }

    fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
        let points = self.rows.iter().filter(|row| !row.is_zero()).count();
        self.num_vars.serialized_size(compress)
            + 8
            + self.rows.len().div_ceil(8)
            + points * G1Affine::zero().serialized_size(compress)
    }
}

impl ark_serialize::Valid for HyraxCommitment {
    fn check(&self) -> Result<(), ark_serialize::SerializationError> {
        self.rows.check()
    }
}

impl CanonicalDeserialize for HyraxCommitment {
    fn deserialize_with_mode<R: ark_serialize::Read>(
        mut reader: R,
        compress: ark_serialize::Compress,
        validate: ark_serialize::Validate,
    ) -> Result<Self, ark_serialize::SerializationError> {
        let num_vars = usize::deserialize_with_mode(&mut reader, compress, validate)?;
        let count = u64::deserialize_with_mode(&mut reader, compress, validate)?;
        if count > MAX_ENCODED_ROWS {
            return Err(ark_serialize::SerializationError::InvalidData);
        }
        if !draw_decoded_rows(count) {
            return Err(ark_serialize::SerializationError::IoError(std::io::Error::other(
                "the commitments claim more rows in all than the reader's limit",
            )));
        }
        let count = count as usize;
        let mut bitmap = vec![0u8; count.div_ceil(8)];
        reader.read_exact(&mut bitmap)?;
        // Unused bits of the last byte must be 0 (again one encoding per commitment).
        if !count.is_multiple_of(8) && bitmap.last().is_some_and(|byte| byte >> (count % 8) != 0) {
            return Err(ark_serialize::SerializationError::InvalidData);
        }
        let present = |k: usize| bitmap.get(k / 8).is_some_and(|byte| byte >> (k % 8) & 1 == 1);
        // The present rows' encodings are read first (at most 2^18 of them, bounded above),
        // then decoded — one square root each — side by side above a size threshold.
        let point_size = G1Affine::zero().serialized_size(compress);
        let points = (0..count).filter(|k| present(*k)).count();
        let mut encodings = vec![0u8; points * point_size];
        reader.read_exact(&mut encodings)?;
        let decode = |encoding: &[u8]| -> Result<G1Affine, ark_serialize::SerializationError> {
            let row = G1Affine::deserialize_with_mode(encoding, compress, validate)?;
            // One encoding per commitment: the identity is never written as a point.
            if row.is_zero() { Err(ark_serialize::SerializationError::InvalidData) } else { Ok(row) }
        };
        let decoded: Vec<G1Affine> = if points >= PARALLEL_DECODED_ROWS {
            encodings.par_chunks(point_size).map(decode).collect::<Result<_, _>>()?
        } else {
            encodings.chunks(point_size).map(decode).collect::<Result<_, _>>()?
        };
        let mut decoded = decoded.into_iter();
        let rows = (0..count)
            .map(
                |k| if present(k) { decoded.next().unwrap_or_else(G1Affine::zero) } else { G1Affine::zero() },
            )
            .collect();
        Ok(Self { num_vars, rows })
    }
}

/// An opening: the rows combined with the row weights.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct HyraxProof {
    /// `w = Lᵀ·M`.
    pub combined_row: Vec<Fr>,
}

/// `(row variables, column variables)` of the default (square) matrix view.
pub fn split_vars(num_vars: usize) -> (usize, usize) {
    (num_vars / 2, num_vars - num_vars / 2)
}

impl HyraxParams {
    /// Derives the generators for up to `max_num_vars` variables.
    pub fn new(max_num_vars: usize) -> Self {
        let (_, columns) = split_vars(max_num_vars);
        let generators = derived_generators(1usize << columns);
        let blinding_generator = hash_to_g1(BLINDING_GENERATOR_INDEX);
        let value_generator = hash_to_g1(VALUE_GENERATOR_INDEX);
        Self {
            max_num_vars,
            generators,
            blinding_generator,
            value_generator,
            small_multiples: std::sync::OnceLock::new(),
            pedersen_tables: std::sync::OnceLock::new(),
        }
    }

    /// Builds fixed-base tables of `U` and `H` (about 2 000 additions), after which
    /// [`Self::pedersen`] and [`Self::blinding_times`] use them: for provers, who make dozens of
    /// Pedersen commitments per proof (a verifier gains nothing from them).
    pub fn prepare_pedersen_tables(&self) {
        let _ = self.pedersen_tables.get_or_init(|| {
            [FixedBaseTable::new(self.value_generator), FixedBaseTable::new(self.blinding_generator)]
        });
    }

    /// `v·U + β·H` (with the fixed-base tables once prepared).
    pub fn pedersen(&self, value: Fr, blinding: Fr) -> G1Projective {
        match self.pedersen_tables.get() {
            Some([u, h]) => u.mul(value) + h.mul(blinding),
            None => self.value_generator * value + self.blinding_generator * blinding,
        }
    }

    /// `β·H` (with the fixed-base table once prepared).
    pub fn blinding_times(&self, blinding: Fr) -> G1Projective {
        match self.pedersen_tables.get() {
            Some([_, h]) => h.mul(blinding),
            None => self.blinding_generator * blinding,
        }
    }

    /// Builds the table of small multiples used by [`Hyrax::commit_small`] now (it is built on
    /// first use otherwise), e.g. alongside other work.
    pub fn prepare_small_table(&self) {
        let _ = self.small_multiples();
    }

    /// `k·G_j` for `k = 1..=128` and every generator, in affine form (built once, row-major
    /// by `j`: `table[j·128 + k − 1] = k·G_j`). Each thread owns a run of generators and fills
    /// the multiples in seven doubling levels, `(n + m)·G = n·G + m·G` for `m ≤ n`, each level
    /// one batch of affine additions sharing one inversion.
    fn small_multiples(&self) -> &[G1Affine] {
        self.small_multiples.get_or_init(|| {
            let per_task = self.generators.len().div_ceil(rayon::current_num_threads().max(1)).max(1);
            self.generators
                .par_chunks(per_task)
                .flat_map_iter(|generators| {
                    let mut table = vec![G1Affine::zero(); generators.len() * SMALL_TABLE];
                    for (multiples, g) in table.chunks_mut(SMALL_TABLE).zip(generators) {
                        multiples[0] = *g;
                    }
                    let mut scratch = Scratch::default();
                    let mut known = 1;
                    while known < SMALL_TABLE {
                        let count = known.min(SMALL_TABLE - known);
                        let (lefts, rights): (Vec<G1Affine>, Vec<G1Affine>) = table
                            .chunks(SMALL_TABLE)
                            .flat_map(|multiples| {
                                (0..count).map(move |m| (multiples[known - 1], multiples[m]))
                            })
                            .unzip();
                        let sums = add_pairs(&lefts, &rights, &mut scratch);
                        for (multiples, new) in table.chunks_mut(SMALL_TABLE).zip(sums.chunks(count)) {
                            multiples[known..known + count].copy_from_slice(new);
                        }
                        known += count;
                    }
                    table
                })
                .collect()
        })
    }
}

/// The generators derived so far in this process (a prefix of the one transparent sequence).
static GENERATORS: std::sync::RwLock<Vec<G1Affine>> = std::sync::RwLock::new(Vec::new());

/// The first `count` generators `hash_to_g1(0..count)`, derived once per process: every
/// layer of a chain (prover and verifier alike) asks for the same ones, and each costs a
/// square root on the curve.
fn derived_generators(count: usize) -> Vec<G1Affine> {
    if let Ok(known) = GENERATORS.read()
        && known.len() >= count
    {
        return known[..count].to_vec();
    }
    let mut known = match GENERATORS.write() {
        Ok(guard) => guard,
        // A thread that panicked while extending left a prefix of valid generators.
        Err(poisoned) => poisoned.into_inner(),
    };
    let have = known.len() as u64;
    if (have as usize) < count {
        let more: Vec<G1Affine> = (have..count as u64).into_par_iter().map(hash_to_g1).collect();
        known.extend(more);
    }
    known[..count].to_vec()
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

/// Commits row by row, with one parallel task per thread, each running its rows in sequence.
///
/// ark-ec's MSM is itself parallel; one task per row nests its joins so deeply that large
/// tables (2^22 entries) overflow rayon's thread stacks, and fully sequential rows leave the
/// small MSMs badly parallelized.
fn rows_in_groups<T: Sync>(
    values: &[T],
    width: usize,
    commit_row: impl Fn(&[T]) -> G1Projective + Sync,
) -> Vec<G1Projective> {
    let rows = values.len().div_ceil(width.max(1));
    let per_task = rows.div_ceil(rayon::current_num_threads().max(1)).max(1);
    values
        .par_chunks(width.max(1) * per_task)
        .flat_map_iter(|group| group.chunks(width.max(1)).map(&commit_row).collect::<Vec<_>>())
        .collect()
}

/// `(Lᵀ·M, f̃(point))` for the matrix view of `f` and `L = eq(·, row part of point)`.
pub(crate) fn combined_row_and_value(
    f: PolynomialTable<'_>,
    point: &[Fr],
    columns: usize,
) -> Result<(Vec<Fr>, Fr), PcsError> {
    if point.len() != f.num_vars() {
        return Err(PcsError::WrongPointLength { expected: f.num_vars(), got: point.len() });
    }
    if columns > f.num_vars() {
        return Err(PcsError::MalformedProof("more column variables than variables"));
    }
    let (column_point, row_point) = point.split_at(columns);
    let row = f.fold_rows(1usize << columns, row_point);
    let value = row.iter().zip(eq_table(column_point)).map(|(w, r)| *w * r).sum();
    Ok((row, value))
}

/// A committed polynomial's table as the prover holds it: field elements, or small integers
/// (the openings then read the integers directly instead of a field copy of the table).
#[derive(Clone, Copy, Debug)]
pub enum PolynomialTable<'a> {
    /// Field elements.
    Field(&'a DenseMultilinearExtension),
    /// `2^num_vars` integers.
    Integers {
        /// Variables.
        num_vars: usize,
        /// The entries.
        values: &'a [i64],
    },
}

/// Rows of this many entries per parallel task in the integer kernels.
const INTEGER_CHUNK: usize = 1 << 12;

impl PolynomialTable<'_> {
    /// Variables.
    pub fn num_vars(&self) -> usize {
        match self {
            PolynomialTable::Field(f) => f.num_vars(),
            PolynomialTable::Integers { num_vars, .. } => *num_vars,
        }
    }

    /// `out[x] += γ·f[x]`.
    pub fn add_scaled_into(&self, out: &mut [Fr], gamma: Fr) {
        match self {
            PolynomialTable::Field(f) => {
                out.par_iter_mut().zip(f.evaluations().par_iter()).for_each(|(o, x)| *o += gamma * x);
            }
            PolynomialTable::Integers { values, .. } => {
                let scaled = zkmha_field::SmallMultiplier::new(gamma);
                out.par_iter_mut().zip(values.par_iter()).for_each(|(o, x)| {
                    if *x != 0 {
                        *o += scaled.mul_i64(*x);
                    }
                });
            }
        }
    }

    /// `f(point)`.
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`].
    pub fn evaluate(&self, point: &[Fr]) -> Result<Fr, PcsError> {
        if point.len() != self.num_vars() {
            return Err(PcsError::WrongPointLength { expected: self.num_vars(), got: point.len() });
        }
        match self {
            PolynomialTable::Field(f) => Ok(f.evaluate(point)?),
            PolynomialTable::Integers { values, .. } => {
                let eq = eq_table(point);
                Ok(eq
                    .par_chunks(INTEGER_CHUNK)
                    .zip(values.par_chunks(INTEGER_CHUNK))
                    .map(|(weights, values)| {
                        let mut acc = zkmha_field::UnreducedSum::new();
                        for (w, v) in weights.iter().zip(values) {
                            if *v != 0 {
                                acc.add_product(w, &zkmha_field::fr_from_i64(*v));
                            }
                        }
                        acc
                    })
                    .reduce(zkmha_field::UnreducedSum::new, zkmha_field::UnreducedSum::merge)
                    .finish())
            }
        }
    }

    /// `Lᵀ·M` for the matrix view with `width` columns and `L = eq(·, row_point)`.
    fn fold_rows(&self, width: usize, row_point: &[Fr]) -> Vec<Fr> {
        match self {
            PolynomialTable::Field(f) => fold_rows(f.evaluations(), width, row_point),
            PolynomialTable::Integers { values, .. } => {
                let weights = eq_table(row_point);
                (0..width)
                    .into_par_iter()
                    .with_min_len(64)
                    .map(|x| {
                        let mut acc = zkmha_field::UnreducedSum::new();
                        for (i, w) in weights.iter().enumerate() {
                            match values.get(i * width + x) {
                                Some(v) if *v != 0 => acc.add_product(w, &zkmha_field::fr_from_i64(*v)),
                                _ => {}
                            }
                        }
                        acc.finish()
                    })
                    .collect()
            }
        }
    }
}

pub(crate) fn absorb(transcript: &mut Transcript, commitment: &HyraxCommitment, point: &[Fr], value: &Fr) {
    let mut bytes = Vec::new();
    let _ = commitment.serialize_compressed(&mut bytes);
    transcript.append_bytes(LABEL_COMMITMENT, &bytes);
    transcript.append_fields(LABEL_POINT, point);
    transcript.append_field(LABEL_VALUE, value);
}

/// Values up to this many bits go through signed base-256 digits and the table of multiples;
/// larger ones through ark-ec's small-scalar MSM.
const DIGIT_PATH_BITS: u32 = 40;

/// `Σ_j M[i][j]·G_j` for every row of a table whose entries are at most 128 in absolute value:
/// one table look-up and one batch-affine addition per non-zero entry.
fn small_row_sums<T: Copy + Into<i64> + Sync>(
    params: &HyraxParams,
    values: &[T],
    width: usize,
) -> Vec<G1Affine> {
    let table = params.small_multiples();
    let per_task = (values.len() / width).div_ceil(rayon::current_num_threads().max(1)).max(1);
    values
        .par_chunks(width * per_task)
        .flat_map_iter(|rows| {
            // Blocks of rows small enough that every tree level stays in cache.
            let block_rows = (ROW_BLOCK_POINTS / width).max(1);
            let mut points = Vec::with_capacity(block_rows * width);
            let mut lengths = Vec::with_capacity(block_rows);
            let mut scratch = Scratch::default();
            let mut sums = Vec::with_capacity(rows.len() / width);
            for block in rows.chunks(block_rows * width) {
                points.clear();
                lengths.clear();
                for row in block.chunks(width) {
                    let before = points.len();
                    for (j, &v) in row.iter().enumerate() {
                        let v: i64 = v.into();
                        if v != 0 {
                            let multiple = table[j * SMALL_TABLE + v.unsigned_abs() as usize - 1];
                            points.push(if v > 0 { multiple } else { -multiple });
                        }
                    }
                    lengths.push(points.len() - before);
                }
                sums.extend(sum_segments_in_place(&mut points, &mut lengths, &mut scratch));
            }
            sums
        })
        .collect()
}

/// The Hyrax scheme.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hyrax;

impl Hyrax {
    pub(crate) fn check_size(params: &HyraxParams, num_vars: usize) -> Result<(), PcsError> {
        if num_vars > params.max_num_vars {
            return Err(PcsError::SrsTooSmall { needed: num_vars, available: params.max_num_vars });
        }
        Ok(())
    }

    /// The generators of a `2^column_vars`-column layout for `num_vars` variables.
    pub(crate) fn bases(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
    ) -> Result<&[G1Affine], PcsError> {
        Self::check_size(params, num_vars)?;
        if column_vars > num_vars {
            return Err(PcsError::MalformedProof("more column variables than variables"));
        }
        let available = params.generators.len().trailing_zeros() as usize;
        params
            .generators
            .get(..1usize << column_vars)
            .ok_or(PcsError::SrsTooSmall { needed: column_vars, available })
    }

    /// Commits to `f`.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`].
    pub fn commit(params: &HyraxParams, f: &DenseMultilinearExtension) -> Result<HyraxCommitment, PcsError> {
        Self::commit_with_columns(params, f, split_vars(f.num_vars()).1)
    }

    /// Commits to `f` viewed as a matrix with `2^column_vars` columns.
    ///
    /// # Errors
    /// [`PcsError::SrsTooSmall`] (too few generators for the columns, or too many variables)
    /// or [`PcsError::MalformedProof`] for `column_vars > num_vars`.
    pub fn commit_with_columns(
        params: &HyraxParams,
        f: &DenseMultilinearExtension,
        column_vars: usize,
    ) -> Result<HyraxCommitment, PcsError> {
        let bases = Self::bases(params, f.num_vars(), column_vars)?;
        let rows =
            rows_in_groups(f.evaluations(), bases.len(), |row| G1Projective::msm_unchecked(bases, row));
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
        Self::commit_small_with_columns(params, num_vars, split_vars(num_vars).1, values)
    }

    /// [`Self::commit_small`] with the matrix view of `2^column_vars` columns (a layout shared
    /// by every polynomial of a batch lets all their openings share one combined row).
    ///
    /// # Errors
    /// As [`Self::commit_small`] and [`Self::commit_with_columns`].
    pub fn commit_small_with_columns(
        params: &HyraxParams,
        num_vars: usize,
        column_vars: usize,
        values: &[i64],
    ) -> Result<HyraxCommitment, PcsError> {
        let bases = Self::bases(params, num_vars, column_vars)?;
        if values.len() != 1usize << num_vars {
            return Err(PcsError::MalformedProof("table length is not 2^num_vars"));
        }
        let width = bases.len();
        let largest = values.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
        if largest <= SMALL_TABLE as u64 {
            // 8-bit values: one table look-up and one batch-affine addition per non-zero entry.
            return Ok(HyraxCommitment { num_vars, rows: small_row_sums(params, values, width) });
        }
        if largest < 1 << DIGIT_PATH_BITS {
            // Signed base-256 digits v = Σ_d 256^d·v_d, v_d ∈ [−128, 127]: one table pass per
            // digit level (zero digits cost nothing), then C_i = Σ_d 256^d·C_{i,d} (Horner).
            let mut rest: Vec<i64> = values.to_vec();
            let mut levels = Vec::new();
            while rest.iter().any(|&v| v != 0) {
                let digits: Vec<i8> = rest
                    .iter_mut()
                    .map(|v| {
                        let digit = ((*v + 128).rem_euclid(256) - 128) as i8;
                        *v = (*v - i64::from(digit)) >> 8;
                        digit
                    })
                    .collect();
                levels.push(small_row_sums(params, &digits, width));
            }
            let rows = values.len() / width;
            let mut combined = vec![G1Projective::ZERO; rows];
            for level in levels.iter().rev() {
                combined.par_iter_mut().zip(level).for_each(|(acc, row)| {
                    for _ in 0..8 {
                        acc.double_in_place();
                    }
                    *acc += row;
                });
            }
            return Ok(HyraxCommitment { num_vars, rows: G1Projective::normalize_batch(&combined) });
        }
        let rows = rows_in_groups(values, width, |row| msm_signed(bases, row));
        Ok(HyraxCommitment { num_vars, rows: G1Projective::normalize_batch(&rows) })
    }

    /// Opens `f` at `point` (`[column part ‖ row part]`, split by the commitment's layout);
    /// returns the proof and `f̃(point)`.
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`], or [`PcsError::MalformedProof`] for a malformed
    /// commitment.
    pub fn open(
        f: &DenseMultilinearExtension,
        commitment: &HyraxCommitment,
        point: &[Fr],
        transcript: &mut Transcript,
    ) -> Result<(HyraxProof, Fr), PcsError> {
        let (proof, values) = Self::open_batch(&[(f, commitment, point)], transcript)?;
        let value = values.first().copied().ok_or(PcsError::MalformedProof("empty batch"))?;
        Ok((proof, value))
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
        Self::verify_batch(params, &[(commitment, point, value)], proof, transcript)
    }
}

const LABEL_BATCH: &[u8] = b"pcs/hyrax/batch-coefficients";
const LABEL_COMBINED_ROW: &[u8] = b"pcs/hyrax/combined-row";

/// The shared column point of a batch and each member's scale: the batch's combined row has
/// the widest member's `2^c` columns and its column point is that member's `point[..c]`.
/// A member with fewer columns must be a single row (`c_f = n_f`) whose whole point is a
/// prefix of that column point; its row, padded with zeros, contributes
/// `f(point)·Π_{c_f ≤ t < c}(1 − column_point_t)` to the inner product.
pub(crate) fn batch_layout<'a>(
    items: &[(&HyraxCommitment, &'a [Fr])],
) -> Result<(&'a [Fr], Vec<Fr>), PcsError> {
    let mut widest: Option<(usize, &'a [Fr])> = None;
    let mut columns = Vec::with_capacity(items.len());
    for (commitment, point) in items {
        if point.len() != commitment.num_vars {
            return Err(PcsError::WrongPointLength { expected: commitment.num_vars, got: point.len() });
        }
        let c = commitment.column_vars()?;
        columns.push(c);
        if widest.is_none_or(|(w, _)| c > w) {
            widest = Some((c, point.get(..c).unwrap_or_default()));
        }
    }
    let (width, column_point) = widest.ok_or(PcsError::MalformedProof("empty batch"))?;
    let mut scales = Vec::with_capacity(items.len());
    for ((commitment, point), c) in items.iter().zip(columns) {
        let own = point.get(..c).unwrap_or_default();
        if column_point.get(..c) != Some(own) || (c < width && commitment.rows.len() != 1) {
            return Err(PcsError::MalformedProof("batched points must share their column part"));
        }
        let tail = column_point.get(c..).unwrap_or_default();
        scales.push(tail.iter().map(|r| Fr::from(1u64) - r).product());
    }
    debug_assert_eq!(column_point.len(), width);
    Ok((column_point, scales))
}

impl Hyrax {
    /// Whether a batch of openings can share one combined row: the points agree on the widest
    /// layout's column part, and every narrower commitment is a single row whose point is a
    /// prefix of it.
    pub fn can_batch(items: &[(&HyraxCommitment, &[Fr])]) -> bool {
        batch_layout(items).is_ok()
    }

    /// Opens several polynomials at points sharing their column part with one combined row
    /// `w = Σ_t ρ_t·L_tᵀ·M_t` (random `ρ_t` drawn after every statement is absorbed).
    ///
    /// # Errors
    /// [`PcsError::WrongPointLength`], or [`PcsError::MalformedProof`] when the points do not
    /// share their column part ([`Self::can_batch`]).
    pub fn open_batch(
        items: &[(&DenseMultilinearExtension, &HyraxCommitment, &[Fr])],
        transcript: &mut Transcript,
    ) -> Result<(HyraxProof, Vec<Fr>), PcsError> {
        let tables: Vec<_> = items.iter().map(|(f, c, p)| (PolynomialTable::Field(f), *c, *p)).collect();
        Self::open_batch_tables(&tables, transcript)
    }

    /// [`Self::open_batch`] for tables of either kind.
    ///
    /// # Errors
    /// As [`Self::open_batch`].
    pub fn open_batch_tables(
        items: &[(PolynomialTable<'_>, &HyraxCommitment, &[Fr])],
        transcript: &mut Transcript,
    ) -> Result<(HyraxProof, Vec<Fr>), PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(_, c, p)| (*c, *p)).collect();
        let (column_point, _) = batch_layout(&layout)?;
        let width = 1usize << column_point.len();
        let mut rows = Vec::with_capacity(items.len());
        let mut values = Vec::with_capacity(items.len());
        for (f, commitment, point) in items {
            let (row, value) = combined_row_and_value(*f, point, commitment.column_vars()?)?;
            absorb(transcript, commitment, point, &value);
            rows.push(row);
            values.push(value);
        }
        let coefficients = transcript.challenge_fields(LABEL_BATCH, items.len());
        let mut combined_row = vec![Fr::from(0u64); width];
        for (row, c) in rows.iter().zip(&coefficients) {
            combined_row.par_iter_mut().zip(row.par_iter()).for_each(|(w, x)| *w += *c * x);
        }
        // The proof's only message: absorbed before any later challenge or batching weight.
        transcript.append_fields(LABEL_COMBINED_ROW, &combined_row);
        Ok((HyraxProof { combined_row }, values))
    }

    /// Verifies a batch opened with [`Self::open_batch`].
    ///
    /// # Errors
    /// As [`Self::verify`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub fn verify_batch(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], Fr)],
        proof: &HyraxProof,
        transcript: &mut Transcript,
    ) -> Result<(), PcsError> {
        let check = Self::batch_check(params, items, proof, transcript)?;
        check.holds()
    }

    /// Everything [`Self::verify_batch`] checks except the final group equation, which is
    /// returned as an [`GroupEquation`] (so several batches can share one MSM).
    ///
    /// # Errors
    /// As [`Self::verify`].
    #[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    pub(crate) fn batch_check(
        params: &HyraxParams,
        items: &[(&HyraxCommitment, &[Fr], Fr)],
        proof: &HyraxProof,
        transcript: &mut Transcript,
    ) -> Result<GroupEquation, PcsError> {
        let layout: Vec<(&HyraxCommitment, &[Fr])> = items.iter().map(|(c, p, _)| (*c, *p)).collect();
        let (column_point, scales) = batch_layout(&layout)?;
        let columns = column_point.len();
        let generators = Self::bases(params, columns, columns)?;
        for (commitment, point, value) in items {
            Self::check_size(params, commitment.num_vars)?;
            absorb(transcript, commitment, point, value);
        }
        let coefficients = transcript.challenge_fields(LABEL_BATCH, items.len());
        if proof.combined_row.len() != 1usize << columns {
            return Err(PcsError::MalformedProof("combined row has the wrong length"));
        }
        transcript.append_fields(LABEL_COMBINED_ROW, &proof.combined_row);
        let right = eq_table(column_point);
        let inner: Fr = proof.combined_row.iter().zip(&right).map(|(w, r)| *w * r).sum();
        let expected_value: Fr =
            items.iter().zip(&coefficients).zip(&scales).map(|(((_, _, v), c), s)| *c * v * s).sum();
        if inner != expected_value {
            return Err(PcsError::EvaluationChainMismatch { round: 0 });
        }
        let (mut bases, mut scalars) = combined_commitment_terms(&layout, &coefficients)?;
        bases.extend_from_slice(generators);
        scalars.extend(proof.combined_row.iter().map(|w| -*w));
        Ok(GroupEquation { bases, scalars })
    }
}

/// `Σ_t ρ_t·Σ_i L_{t,i}·C_{t,i}` as MSM terms: the commitment to the batch's combined row.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) fn combined_commitment_terms(
    items: &[(&HyraxCommitment, &[Fr])],
    coefficients: &[Fr],
) -> Result<(Vec<G1Affine>, Vec<Fr>), PcsError> {
    let mut bases = Vec::new();
    let mut scalars = Vec::new();
    for ((commitment, point), coefficient) in items.iter().zip(coefficients) {
        let row_point = point.get(commitment.column_vars()?..).unwrap_or_default();
        // Identity rows (all-zero rows of the matrix) add nothing: left out of the MSM.
        for (row, weight) in commitment.rows.iter().zip(eq_table(row_point)) {
            if !row.is_zero() {
                bases.push(*row);
                scalars.push(weight * coefficient);
            }
        }
    }
    Ok((bases, scalars))
}

/// A group equation `Σ_k s_k·B_k = 0` left for the end of a verification: several of them
/// are checked with one MSM, weighted by random coefficients.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupEquation {
    /// `B_k`.
    pub bases: Vec<G1Affine>,
    /// `s_k`.
    pub scalars: Vec<Fr>,
}

impl GroupEquation {
    /// The equation `Σ_k scalars[k]·bases[k] = 0`.
    pub fn new(bases: Vec<G1Affine>, scalars: Vec<Fr>) -> Self {
        Self { bases, scalars }
    }

    /// Checks this equation alone.
    ///
    /// # Errors
    /// [`PcsError::PairingCheckFailed`] when it does not hold, [`PcsError::MalformedProof`]
    /// when the bases and scalars differ in number.
    pub fn holds(&self) -> Result<(), PcsError> {
        Self::all_hold(std::slice::from_ref(self), &[Fr::from(1u64)])
    }

    /// One weight per equation, drawn from a copy of `transcript` after absorbing every
    /// equation (its bases and scalars), so that the weights depend on every prover message
    /// the equations contain — final Σ-protocol and inner-product responses included — even
    /// where a protocol forgot to absorb one. `transcript` itself is not advanced.
    pub fn combination_weights(
        transcript: &Transcript,
        label: &'static [u8],
        equations: &[GroupEquation],
    ) -> Vec<Fr> {
        let mut copy = transcript.clone();
        copy.append_u64(LABEL_EQUATIONS, equations.len() as u64);
        for equation in equations {
            copy.append_serialized(LABEL_EQUATIONS, &equation.bases);
            copy.append_fields(LABEL_EQUATIONS, &equation.scalars);
        }
        copy.challenge_fields(label, equations.len())
    }

    /// Checks every equation at once, weighted by [`Self::combination_weights`]: a false
    /// equation passes with probability at most 1/|F| (the weights are drawn after every
    /// equation is fixed).
    ///
    /// # Errors
    /// As [`Self::all_hold`].
    pub fn all_hold_for_transcript(
        transcript: &Transcript,
        label: &'static [u8],
        equations: &[GroupEquation],
    ) -> Result<(), PcsError> {
        let weights = Self::combination_weights(transcript, label, equations);
        Self::all_hold(equations, &weights)
    }

    /// Checks `Σ_g ρ_g·(equation g)` with one MSM. With the `ρ_g` drawn after every equation
    /// is fixed (as [`Self::combination_weights`] does), a false equation passes with
    /// probability at most 1/|F|; weights a prover can learn before it fixes an equation's
    /// last message let it cancel one false equation with another.
    ///
    /// # Errors
    /// As [`Self::holds`], and [`PcsError::MalformedProof`] unless there is one weight per
    /// equation.
    ///
    /// A base that occurs in several equations (the commitment generators of every opening,
    /// `U` and `H` of every Σ-protocol: half the bases of a GPT-2 layer's checks) enters the
    /// MSM once, with its scalars summed: the same sum, about half the MSM.
    pub fn all_hold(checks: &[GroupEquation], weights: &[Fr]) -> Result<(), PcsError> {
        if checks.len() != weights.len() {
            return Err(PcsError::MalformedProof("one weight per equation"));
        }
        Self::all_hold_weighted(checks.iter().zip(weights.iter().copied()))
    }

    /// Checks `Σ_g weight_g·(equation g)` with one MSM, each distinct base once, for equations
    /// and weights given in pairs (several verifications' together, without copying them).
    /// The caller draws the weights after every equation is fixed ([`Self::all_hold`]).
    ///
    /// # Errors
    /// [`PcsError::PairingCheckFailed`] when the sum is not zero, [`PcsError::MalformedProof`]
    /// when an equation's bases and scalars differ in number.
    pub fn all_hold_weighted<'a>(
        terms: impl Iterator<Item = (&'a GroupEquation, Fr)> + Clone,
    ) -> Result<(), PcsError> {
        if terms.clone().any(|(check, _)| check.bases.len() != check.scalars.len()) {
            return Err(PcsError::MalformedProof("msm sizes"));
        }
        let (bases, scalars) = merged_terms(terms);
        let total = G1Projective::msm(&bases, &scalars).map_err(|_| PcsError::MalformedProof("msm sizes"))?;
        if total == G1Projective::ZERO { Ok(()) } else { Err(PcsError::PairingCheckFailed) }
    }
}

/// `Σ_g weight_g·Σ_k s_{g,k}·B_{g,k}` as one list of distinct bases (first occurrence order)
/// and their summed scalars; identity bases, which add nothing, are left out.
fn merged_terms<'a>(
    terms: impl Iterator<Item = (&'a GroupEquation, Fr)> + Clone,
) -> (Vec<G1Affine>, Vec<Fr>) {
    let count: usize = terms.clone().map(|(c, _)| c.bases.len()).sum();
    let mut index = std::collections::HashMap::with_capacity(count);
    let mut bases = Vec::with_capacity(count);
    let mut scalars: Vec<Fr> = Vec::with_capacity(count);
    for (check, weight) in terms {
        for (base, scalar) in check.bases.iter().zip(&check.scalars) {
            if base.is_zero() {
                continue;
            }
            let term = *scalar * weight;
            match index.entry(*base) {
                std::collections::hash_map::Entry::Occupied(at) => {
                    if let Some(sum) = scalars.get_mut(*at.get()) {
                        *sum += term;
                    }
                }
                std::collections::hash_map::Entry::Vacant(at) => {
                    at.insert(bases.len());
                    bases.push(*base);
                    scalars.push(term);
                }
            }
        }
    }
    (bases, scalars)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
    use zkmha_field::One;

    /// The process-wide generators are the transparent sequence whatever order they are asked
    /// for in (shorter, longer, shorter again), as the parameters of every size expect.
    #[test]
    fn cached_generators_are_the_derived_sequence() {
        let direct: Vec<G1Affine> = (0..40u64).map(hash_to_g1).collect();
        for count in [3usize, 40, 17, 1, 40] {
            assert_eq!(derived_generators(count), direct[..count]);
        }
        assert_eq!(HyraxParams::new(10).generators, direct[..32]);
    }

    #[test]
    fn commitments_encode_identity_rows_as_bitmap_bits_only() {
        let params = HyraxParams::new(8);
        // 16 rows of 16: rows 0..12 all zero, so their commitments are the identity.
        let values: Vec<i64> = (0..256).map(|k| if k >= 12 * 16 { k % 7 } else { 0 }).collect();
        let commitment = Hyrax::commit_small(&params, 8, &values).unwrap();
        assert_eq!(commitment.rows.iter().filter(|r| r.is_zero()).count(), 12);
        let mut bytes = Vec::new();
        commitment.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(bytes.len(), commitment.compressed_size());
        assert_eq!(bytes.len(), 8 + 8 + 2 + 4 * 32, "four points and a two-byte bitmap");
        assert_eq!(HyraxCommitment::deserialize_compressed(bytes.as_slice()).unwrap(), commitment);
        // Non-canonical or corrupt encodings are errors, not panics.
        let mut extra_bit = bytes.clone();
        extra_bit[16] |= 1; // row 0 marked present: the next 32 bytes are read as its point
        assert!(HyraxCommitment::deserialize_compressed(extra_bit.as_slice()).is_err());
        let mut huge = bytes.clone();
        huge[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(HyraxCommitment::deserialize_compressed(huge.as_slice()).is_err());
        assert!(HyraxCommitment::deserialize_compressed(&bytes[..bytes.len() - 1]).is_err());
        // A point marked present that is the identity.
        let mut identity = bytes[..16].to_vec();
        identity.extend_from_slice(&[0x01, 0x00]);
        G1Affine::zero().serialize_compressed(&mut identity).unwrap();
        assert!(HyraxCommitment::deserialize_compressed(identity.as_slice()).is_err());
        // Unused bitmap bits set.
        let odd = HyraxCommitment { num_vars: 2, rows: vec![G1Affine::zero(); 3] };
        let mut odd_bytes = Vec::new();
        odd.serialize_compressed(&mut odd_bytes).unwrap();
        assert_eq!(HyraxCommitment::deserialize_compressed(odd_bytes.as_slice()).unwrap(), odd);
        odd_bytes[16] = 0x80;
        assert!(HyraxCommitment::deserialize_compressed(odd_bytes.as_slice()).is_err());
    }

    /// Equations that share bases (as every opening shares the generators) are checked with
    /// each base once: the merged terms give the plain weighted sum, term by term, and a false
    /// equation among true ones — also one whose error sits on a shared base — still fails.
    #[test]
    fn shared_bases_enter_the_check_once_and_decide_it_as_the_plain_sum() {
        let mut rng = StdRng::seed_from_u64(5);
        let points: Vec<G1Affine> = (0..6).map(|_| G1Projective::rand(&mut rng).into_affine()).collect();
        // True equations over shared bases: a·P0 + b·P1 − (a·P0 + b·P1) with the sum as a base.
        let true_equation = |rng: &mut StdRng, i: usize, j: usize| {
            let (a, b) = (Fr::rand(rng), Fr::rand(rng));
            let sum = (points[i] * a + points[j] * b).into_affine();
            GroupEquation::new(vec![points[i], points[j], sum, G1Affine::zero()], vec![a, b, -Fr::one(), a])
        };
        let mut equations: Vec<GroupEquation> =
            (0..8).map(|k| true_equation(&mut rng, k % 6, (k * 5 + 1) % 6)).collect();
        let weights: Vec<Fr> = (0..8).map(|_| Fr::rand(&mut rng)).collect();
        let (bases, scalars) = merged_terms(equations.iter().zip(weights.iter().copied()));
        assert!(bases.len() < equations.iter().map(|e| e.bases.len()).sum::<usize>());
        let distinct: std::collections::HashSet<G1Affine> = bases.iter().copied().collect();
        assert_eq!((distinct.len(), distinct.contains(&G1Affine::zero())), (bases.len(), false));
        let plain = |equations: &[GroupEquation]| -> G1Projective {
            equations
                .iter()
                .zip(&weights)
                .flat_map(|(e, w)| e.bases.iter().zip(&e.scalars).map(move |(b, s)| *b * (*s * w)))
                .sum()
        };
        let merged: G1Projective = bases.iter().zip(&scalars).map(|(b, s)| *b * s).sum();
        assert_eq!(merged, plain(&equations));
        assert_eq!(GroupEquation::all_hold(&equations, &weights), Ok(()));
        // One scalar on a shared base off by one: the merged check fails as the plain one does.
        equations[3].scalars[0] += Fr::one();
        assert_ne!(plain(&equations), G1Projective::ZERO);
        assert_eq!(GroupEquation::all_hold(&equations, &weights), Err(PcsError::PairingCheckFailed));
        // A length mismatch inside one equation is refused even when the totals would agree.
        let mut uneven = equations.clone();
        uneven[0].scalars.pop();
        uneven[1].scalars.push(Fr::one());
        assert_eq!(GroupEquation::all_hold(&uneven, &weights), Err(PcsError::MalformedProof("msm sizes")));
    }

    /// A commitment of many rows decodes its points side by side (PARALLEL_DECODED_ROWS): the
    /// same rows in the same order as one thread, identity rows in place, and a present row
    /// encoded as the identity refused as on one thread.
    #[test]
    fn many_rows_decode_side_by_side_to_the_same_commitment() {
        let params = HyraxParams::new(14);
        // 128 rows of 128; every fifth row zero (an identity row).
        let values: Vec<i64> =
            (0..1i64 << 14).map(|k| if (k / 128) % 5 == 0 { 0 } else { k % 11 - 5 }).collect();
        let commitment = Hyrax::commit_small(&params, 14, &values).unwrap();
        assert_eq!(commitment.rows.len(), 128);
        assert_eq!(commitment.rows.iter().filter(|r| r.is_zero()).count(), 26);
        let mut bytes = Vec::new();
        commitment.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(HyraxCommitment::deserialize_compressed(bytes.as_slice()).unwrap(), commitment);
        let mut uncompressed = Vec::new();
        commitment.serialize_uncompressed(&mut uncompressed).unwrap();
        assert_eq!(HyraxCommitment::deserialize_uncompressed(uncompressed.as_slice()).unwrap(), commitment);
        // The 50th present point replaced by the identity's encoding.
        let mut identity = Vec::new();
        G1Affine::zero().serialize_compressed(&mut identity).unwrap();
        let at = 8 + 8 + 16 + 49 * 32;
        bytes[at..at + 32].copy_from_slice(&identity);
        assert!(HyraxCommitment::deserialize_compressed(bytes.as_slice()).is_err());
        // Cut short inside the points.
        assert!(HyraxCommitment::deserialize_compressed(&bytes[..at]).is_err());
    }

    #[test]
    fn one_commitment_claims_at_most_two_to_the_eighteen_rows() {
        // 2^18 rows (an embedding table of a 262 144-token vocabulary) decode ...
        let most = HyraxCommitment { num_vars: 28, rows: vec![G1Affine::zero(); 1 << 18] };
        let mut bytes = Vec::new();
        most.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(HyraxCommitment::deserialize_compressed(bytes.as_slice()).ok(), Some(most));
        // ... a claim of one more is refused from its length, before the bitmap is read.
        let mut over = Vec::new();
        28usize.serialize_compressed(&mut over).unwrap();
        ((1u64 << 18) + 1).serialize_compressed(&mut over).unwrap();
        let refused = HyraxCommitment::deserialize_compressed(over.as_slice());
        assert!(matches!(refused, Err(ark_serialize::SerializationError::InvalidData)), "{refused:?}");
    }

    #[test]
    fn a_row_budget_bounds_the_rows_decoded_in_all() {
        let commitment = HyraxCommitment { num_vars: 8, rows: vec![G1Affine::zero(); 16] };
        let mut bytes = Vec::new();
        commitment.serialize_compressed(&mut bytes).unwrap();
        let three = [bytes.clone(), bytes.clone(), bytes].concat();
        let decode = || <[HyraxCommitment; 3]>::deserialize_compressed(three.as_slice());
        assert!(decode_with_row_budget(48, decode).is_ok());
        let over = decode_with_row_budget(47, decode);
        assert!(matches!(over, Err(ark_serialize::SerializationError::IoError(_))), "{over:?}");
        // Nested: the inner budget is the smaller one, and what it used leaves the outer one.
        decode_with_row_budget(60, || {
            assert!(decode_with_row_budget(1000, decode).is_ok());
            assert!(decode_with_row_budget(1000, decode).is_err(), "12 rows left");
        });
        // Outside any budget, nothing is limited (beyond MAX_ENCODED_ROWS per commitment).
        for _ in 0..4 {
            assert!(decode().is_ok());
        }
    }

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
        // Every small path (table of multiples for |v| ≤ 128, signed base-256 digits below
        // 2^40, small-scalar MSM above) agrees
        // (scale 0: every row sums to the identity)
        // with the field commitment.
        for scale in [0i64, 1, 1000, 1 << 20, -(1 << 33), 1 << 45] {
            let values: Vec<i64> = (0..512)
                .map(|i| ((i * 37 % 255) - 127) * scale + (i * i * 7919) % (scale.abs() + 1))
                .collect();
            let f = DenseMultilinearExtension::from_i64(9, &values).unwrap_or_else(|e| unreachable!("{e}"));
            assert_eq!(Hyrax::commit_small(&params, 9, &values), Hyrax::commit(&params, &f));
        }
    }

    #[test]
    fn batched_openings_share_one_row() {
        let mut rng = StdRng::seed_from_u64(2);
        let params = HyraxParams::new(9);
        let random = |n: usize, rng: &mut StdRng| {
            DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(rng)).collect())
                .unwrap_or_else(|e| unreachable!("{e}"))
        };
        // n = 8 and n = 7 both have 4 column variables; the column points agree, the rows differ.
        let (f, g, h) = (random(8, &mut rng), random(8, &mut rng), random(7, &mut rng));
        let column: Vec<Fr> = (0..4).map(|_| Fr::rand(&mut rng)).collect();
        let mut point = |rows: usize| -> Vec<Fr> {
            column.iter().copied().chain((0..rows).map(|_| Fr::rand(&mut rng))).collect()
        };
        let (pf, pg, ph) = (point(4), point(4), point(3));
        let commit =
            |m: &DenseMultilinearExtension| Hyrax::commit(&params, m).unwrap_or_else(|e| unreachable!("{e}"));
        let (cf, cg, ch) = (commit(&f), commit(&g), commit(&h));
        let (proof, values) =
            Hyrax::open_batch(&[(&f, &cf, &pf), (&g, &cg, &pg), (&h, &ch, &ph)], &mut Transcript::new(b"b"))
                .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(values[0], f.evaluate(&pf).unwrap_or_default());
        assert_eq!(values[2], h.evaluate(&ph).unwrap_or_default());
        let items = [
            (&cf, pf.as_slice(), values[0]),
            (&cg, pg.as_slice(), values[1]),
            (&ch, ph.as_slice(), values[2]),
        ];
        assert_eq!(Hyrax::verify_batch(&params, &items, &proof, &mut Transcript::new(b"b")), Ok(()));
        let mut wrong = items;
        wrong[1].2 += Fr::one();
        assert!(Hyrax::verify_batch(&params, &wrong, &proof, &mut Transcript::new(b"b")).is_err());
        let swapped = [
            (&cg, pf.as_slice(), values[0]),
            (&cf, pg.as_slice(), values[1]),
            (&ch, ph.as_slice(), values[2]),
        ];
        assert!(Hyrax::verify_batch(&params, &swapped, &proof, &mut Transcript::new(b"b")).is_err());
        let mut other_column = pg.clone();
        other_column[0] += Fr::one();
        assert!(!Hyrax::can_batch(&[(&cf, &pf), (&cg, &other_column)]));
        assert!(
            Hyrax::open_batch(&[(&f, &cf, &pf), (&g, &cg, &other_column)], &mut Transcript::new(b"b"))
                .is_err()
        );
    }

    #[test]
    fn any_column_layout_opens_and_narrow_single_rows_join_a_wider_batch() {
        let mut rng = StdRng::seed_from_u64(3);
        let params = HyraxParams::new(10);
        let values = |n: usize, rng: &mut StdRng| -> Vec<i64> {
            (0..1usize << n).map(|_| i64::from(rng.gen_range(-500i32..500))).collect()
        };
        // Every layout of a 2^8 table (1 to 2^5 columns: the generators allow 2^5) opens.
        let f = values(8, &mut rng);
        let mle = DenseMultilinearExtension::from_i64(8, &f).unwrap();
        let point: Vec<Fr> = (0..8).map(|_| Fr::rand(&mut rng)).collect();
        for columns in 0..=5 {
            let c = Hyrax::commit_small_with_columns(&params, 8, columns, &f).unwrap();
            assert_eq!(c.rows.len(), 1 << (8 - columns));
            assert_eq!(c.column_vars(), Ok(columns));
            assert_eq!(Hyrax::commit_with_columns(&params, &mle, columns).unwrap(), c);
            let (proof, value) = Hyrax::open(&mle, &c, &point, &mut Transcript::new(b"l")).unwrap();
            assert_eq!(proof.combined_row.len(), 1 << columns);
            assert_eq!(value, mle.evaluate(&point).unwrap());
            assert_eq!(Hyrax::verify(&params, &c, &point, value, &proof, &mut Transcript::new(b"l")), Ok(()));
        }
        assert!(matches!(
            Hyrax::commit_small_with_columns(&params, 8, 6, &f),
            Err(PcsError::SrsTooSmall { .. })
        ));
        assert!(Hyrax::commit_small_with_columns(&params, 3, 4, &f[..8]).is_err());
        // A row count that is not a power of two is a malformed commitment, not a panic.
        let odd = HyraxCommitment { num_vars: 8, rows: vec![G1Affine::zero(); 3] };
        assert!(odd.column_vars().is_err());
        assert!(
            Hyrax::verify(
                &params,
                &odd,
                &point,
                Fr::one(),
                &HyraxProof { combined_row: vec![] },
                &mut Transcript::new(b"l")
            )
            .is_err()
        );

        // A 2^9 table with 2^5 columns, and single rows of 2^3 and 2^5 entries at prefixes of
        // its column point: one combined row of 2^5 entries.
        let (g, h, k) = (values(9, &mut rng), values(3, &mut rng), values(5, &mut rng));
        let cg = Hyrax::commit_small_with_columns(&params, 9, 5, &g).unwrap();
        let ch = Hyrax::commit_small_with_columns(&params, 3, 3, &h).unwrap();
        let ck = Hyrax::commit_small_with_columns(&params, 5, 5, &k).unwrap();
        let pg: Vec<Fr> = (0..9).map(|_| Fr::rand(&mut rng)).collect();
        let (ph, pk) = (pg[..3].to_vec(), pg[..5].to_vec());
        let items = [
            (PolynomialTable::Integers { num_vars: 9, values: &g }, &cg, pg.as_slice()),
            (PolynomialTable::Integers { num_vars: 3, values: &h }, &ch, ph.as_slice()),
            (PolynomialTable::Integers { num_vars: 5, values: &k }, &ck, pk.as_slice()),
        ];
        let (proof, opened) = Hyrax::open_batch_tables(&items, &mut Transcript::new(b"j")).unwrap();
        assert_eq!(proof.combined_row.len(), 32);
        for ((table, _, point), value) in items.iter().zip(&opened) {
            assert_eq!(*value, table.evaluate(point).unwrap());
        }
        let claims = [
            (&cg, pg.as_slice(), opened[0]),
            (&ch, ph.as_slice(), opened[1]),
            (&ck, pk.as_slice(), opened[2]),
        ];
        assert_eq!(Hyrax::verify_batch(&params, &claims, &proof, &mut Transcript::new(b"j")), Ok(()));
        let mut wrong = claims;
        wrong[1].2 += Fr::one();
        assert_eq!(
            Hyrax::verify_batch(&params, &wrong, &proof, &mut Transcript::new(b"j")),
            Err(PcsError::EvaluationChainMismatch { round: 0 })
        );
        // The narrow member's point must be a prefix of the shared column point.
        let mut moved = ph.clone();
        moved[0] += Fr::one();
        assert!(!Hyrax::can_batch(&[(&cg, &pg), (&ch, &moved)]));
        // A narrow member of several rows cannot join (its rows would need other row weights).
        let c_multi = Hyrax::commit_small_with_columns(&params, 5, 3, &k).unwrap();
        assert!(!Hyrax::can_batch(&[(&cg, &pg), (&c_multi, &pk)]));
    }
}
