//! Attention-layer proof files (`zkmha prove` without `--model`), read and encoded.
//!
//! Layout: the magic bytes `ZKMHA\0` (`ZKMHAZ` for a zero-knowledge proof), a little-endian
//! u32 file-format version, then the statement and the proof in arkworks' compressed
//! encoding.
//!
//! Reading ([`LayerProof::read`]): the statement is decoded first and checked
//! (`CommittedStatement::validate`: the shape against the stated limits of
//! `zkmha_attention`'s shape module, the output's length, every commitment's size) before the
//! proof is decoded; arkworks' decoder grows a vector as its items arrive (no allocation from
//! a length prefix), commitments are capped per commitment and per file
//! ([`crate::model_files::MAX_DECODED_ROWS`]), so a file decodes to at most a small multiple
//! of its length.

use crate::error::{Error, Result};
use crate::model_files::{MAX_DECODED_ROWS, ProofFile, decode_part, read_bytes, split_version};
use ark_serialize::CanonicalSerialize;
use std::path::Path;
use zkmha_attention::{CommittedLayerProof, CommittedStatement, ZkLayerProof};

const MAGIC: &[u8; 6] = b"ZKMHA\0";
/// The magic bytes of a zero-knowledge proof file.
const MAGIC_ZK: &[u8; 6] = b"ZKMHAZ";
/// The zero-knowledge proof file's format version (2: one relations proof per sum-check
/// instead of product proofs; 3: every final response absorbed, V's padding over its rows;
/// 4: the one layer driver's proof, `LayerProof<Zk>`, and the lookups written once;
/// 6: each batch of lookups' tables in a few tagged trees; 7: its witnesses in one tree, or
/// one per witness size, and a product's lone claim not absorbed again; 8: the softmax's
/// lookups proven before the chain's steps, the layer's one batch; 9: the relations proofs,
/// the committed sum-checks and the batches absorb their statements).
const FILE_VERSION_ZK: u32 = 9;
/// 2: sparse Hyrax commitments and the softmax proof with batched lookups; 3: one Hyrax layout
/// per layer, tiled softmax columns, one final opening for every committed polynomial.
/// 4: the layer proof carries the output value of a committed output (absent here).
/// 5: Hyrax rows absorbed, V's padding over its rows (the trust issue).
/// 6: the one layer driver's proof, `LayerProof<Plain>`, and the lookups written once.
/// 8: each batch of lookups' tables in a few tagged trees.
/// 9: each batch of lookups' witnesses in one tree, or one per witness size.
/// 10: the softmax's lookups proven before the chain's steps, the layer's one batch.
const FILE_VERSION: u32 = 10;

/// A decoded attention-layer proof file: `zkmha prove --out` (plain) or `zkmha prove --zk
/// --out` (zero-knowledge).
pub type LayerProof = ProofFile<CommittedStatement, CommittedLayerProof, ZkLayerProof>;

/// An encoded attention-layer proof file.
#[derive(Debug, Clone)]
pub struct EncodedLayerProof {
    /// The file's contents.
    pub bytes: Vec<u8>,
    /// How many of them (with the magic bytes and the version) precede the proof.
    pub statement_bytes: usize,
}

fn encode<P: CanonicalSerialize>(
    magic: &[u8],
    version: u32,
    statement: &CommittedStatement,
    proof: &P,
) -> Result<EncodedLayerProof> {
    let mut bytes = Vec::with_capacity(1 << 20);
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&version.to_le_bytes());
    statement
        .serialize_compressed(&mut bytes)
        .map_err(|source| Error::Encode { what: "statement", source })?;
    let statement_bytes = bytes.len();
    proof.serialize_compressed(&mut bytes).map_err(|source| Error::Encode { what: "proof", source })?;
    Ok(EncodedLayerProof { bytes, statement_bytes })
}

impl LayerProof {
    /// The file's contents.
    ///
    /// # Errors
    /// [`Error::Encode`] (not expected: encoding into memory).
    pub fn encode(&self) -> Result<EncodedLayerProof> {
        match self {
            Self::Plain(statement, proof) => encode(MAGIC, FILE_VERSION, statement, proof.as_ref()),
            Self::ZeroKnowledge(statement, proof) => {
                encode(MAGIC_ZK, FILE_VERSION_ZK, statement, proof.as_ref())
            }
        }
    }

    /// Reads an attention-layer proof file: the statement is decoded and checked against the
    /// stated limits and its own sizes before the proof is decoded.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("zkmha-doc-layer-{}.proof", std::process::id()));
    /// std::fs::write(&path, b"ZKMHA\0\x0a\0\0\0")?;
    /// let error = zkmha_api::layer_files::LayerProof::read(&path).unwrap_err();
    /// assert!(error.to_string().contains("is corrupt: the statement does not decode"), "{error}");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Read`], [`Error::NotZkmhaFile`], [`Error::Version`], [`Error::Corrupt`],
    /// [`Error::UnacceptedStatement`] or [`Error::TrailingBytes`], naming the file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = read_bytes(path)?;
        let (zero_knowledge, rest) = if let Some(rest) = bytes.strip_prefix(MAGIC_ZK) {
            (true, rest)
        } else if let Some(rest) = bytes.strip_prefix(MAGIC) {
            (false, rest)
        } else {
            return Err(Error::NotZkmhaFile { path: path.to_path_buf(), kind: "attention-layer proof" });
        };
        let (version, mut rest) = split_version(rest);
        let (expected, format) = if zero_knowledge {
            (FILE_VERSION_ZK, "zero-knowledge file format")
        } else {
            (FILE_VERSION, "file format")
        };
        if version != expected {
            return Err(Error::Version { path: path.to_path_buf(), format, found: version, expected });
        }
        zkmha_pcs::decode_with_row_budget(MAX_DECODED_ROWS, || {
            let statement: CommittedStatement = decode_part(&mut rest, path, "statement")?;
            let checked = if zero_knowledge { statement.validate_zk() } else { statement.validate() };
            checked.map_err(|error| Error::UnacceptedStatement { path: path.to_path_buf(), error })?;
            let file = if zero_knowledge {
                Self::ZeroKnowledge(statement, Box::new(decode_part(&mut rest, path, "proof")?))
            } else {
                Self::Plain(statement, Box::new(decode_part(&mut rest, path, "proof")?))
            };
            if !rest.is_empty() {
                return Err(Error::TrailingBytes {
                    path: path.to_path_buf(),
                    count: rest.len(),
                    what: "proof",
                });
            }
            Ok(file)
        })
    }
}

/// Whether `path` starts with the magic bytes of an attention-layer proof (either mode).
pub fn is_layer_proof(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 6];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok()
        && (&head == MAGIC || &head == MAGIC_ZK)
}

/// The output O of an attention-layer statement as integers (each entry an integer, negative
/// ones as `p − |v|`).
///
/// # Errors
/// [`Error::OutputOutOfRange`]: an entry outside the 64-bit integers (a statement no honest
/// prover makes).
pub fn attention_output_integers(statement: &CommittedStatement) -> Result<Vec<i64>> {
    use zkmha_field::PrimeField;
    let half = zkmha_field::Fr::MODULUS_MINUS_ONE_DIV_TWO;
    let small = |x: zkmha_field::Fr| -> Option<i64> {
        let limbs = x.into_bigint();
        let words = limbs.as_ref();
        let (low, high) = words.split_first()?;
        (high.iter().all(|&w| w == 0) && *low <= i64::MAX as u64).then_some(*low as i64)
    };
    statement
        .output
        .iter()
        .map(|&x| {
            let value = if x.into_bigint() <= half { small(x) } else { small(-x).map(|v| -v) };
            value.ok_or(Error::OutputOutOfRange)
        })
        .collect()
}
