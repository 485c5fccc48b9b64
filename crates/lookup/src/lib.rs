//! logUp lookup arguments on sum-check.
//!
//! ```text
//! witness columns w_0..w_{c−1} (2^n rows), a table T_0..T_{c−1} (2^t rows), multiplicities m:
//!   Σ_x 1/(α − Σ_k γ^k·w_k(x))  =  Σ_y m(y)/(α − Σ_k γ^k·T_k(y))
//! holds for random α, γ (except with probability ≈ (2^n + 2^t)/|F|) iff every witness row is
//! a table row, m(y) counting its uses
//! ```
//!
//! Both sums are proven with a GKR fractional sum-check ([`fraction`]), so nothing but the
//! multiplicities is committed; the table's columns are public and evaluated by the verifier.

#![deny(missing_docs)]

mod error;
pub mod fraction;
mod layout;
mod logup;
mod table;

pub use error::LookupError;
pub use fraction::{
    Fraction, FractionLeaves, FractionSumProof, FractionSumProofOf, FractionTree, ProvedFractions,
    layer_shape, prove_fraction_sums, verify_fraction_sums, zk_fraction_schedule,
};
pub use layout::MAX_WITNESS_VARS;
pub use logup::{
    ColumnEvaluator, Lookup, LookupClaims, LookupProof, LookupProofOf, LookupWitness, ProvedLookups,
    multiplicities, prove_lookup, prove_lookups, verify_lookup, verify_lookups, zk_lookup_schedule,
};
pub use table::{
    FunctionTable, LookupTable, MAX_TABLE_VARS, RangeTable, Segment, SegmentOutput, SegmentedTable,
    identity_column, zero_indicator,
};
