//! A generic sum-check engine with typed claims, batching and structure-aware kernels.
//!
//! ```text
//! in:   SumcheckClaim { num_vars: n, degree: d, claimed_sum: S }     — Σ_{x ∈ {0,1}ⁿ} g(x) = S
//! out:  EvalClaim { point: r, value: v }                              — the caller must check g(r) = v
//! ```
//!
//! * [`prove`] / [`verify`]: the protocol for any [`SumcheckInstance`] (a sub-protocol
//!   supplies its own round kernel by implementing the trait).
//! * [`ProductSumcheck`], [`prove_product`] / [`verify_product`]: sums of products of dense
//!   MLEs, with the MLE values at the final point carried in the proof.
//! * [`SmallValueProductSumcheck`]: products of small-integer MLEs (quantized witnesses),
//!   with the first rounds in integer arithmetic.
//! * [`StreamedProductSumcheck`]: a plain product whose factors come from a closure until the
//!   first challenge (tables of half size at most).
//! * [`prove_batched`] / [`verify_batched`]: several claims (any numbers of variables and
//!   degrees) in one sum-check with random coefficients.
//! * [`prove_masked`] / [`verify_masked`]: Libra's masked sum-check (zero-knowledge round
//!   messages; the caller commits to the [`MaskPolynomial`] and opens it).
//!
//! Round messages are `s(0), s(2), …, s(d)`; `s(1)` is derived from the running claim.
//! Variables are bound from the highest (`x_{n−1}`) down; the returned points are in
//! variable order (`point[i] = x_i`), as everywhere in the project (`docs/CONVENTIONS.md`).
//!
//! The verifier code paths return [`SumcheckError`] on every malformed input and never panic.

// Verifier code must not panic on proof bytes: indexing is denied crate-wide and allowed
// only in the two prover kernel modules, whose table lengths are checked at construction.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]

mod batched;
mod claim;
mod error;
mod masked;
mod product;
mod protocol;
mod small_value;
mod streamed;
pub mod univariate;

pub use batched::{Batch, BatchedEvalClaim, prove_batched, verify_batched};
pub use claim::{EvalClaim, MAX_DEGREE, MAX_NUM_VARS, SumcheckClaim};
pub use error::SumcheckError;
pub use masked::{
    LABEL_MASK_SUM, LABEL_MASK_WEIGHT, MaskPolynomial, MaskedEvalClaim, MaskedSumcheckProof, prove_masked,
    prove_masked_rounds, verify_masked,
};
pub use product::{
    FinalEvaluations, LABEL_FINAL_EVALUATIONS, ProductSumcheck, ProductSumcheckProof, ProductTerm,
    SumOfProducts, prove_instance_with_evaluations, prove_product, verify_product,
};
pub use protocol::{
    LABEL_CHALLENGE, LABEL_ROUND, RoundPolynomial, SumcheckInstance, SumcheckProof, prove, verify,
};
pub use small_value::{MAX_SMALL_VALUE_DEGREE, SmallValueProductSumcheck, small_value_rounds};
pub use streamed::StreamedProductSumcheck;
