//! Zero-knowledge pieces of the zkmha proofs.
//!
//! ```text
//! committed values: C = v·U + β·H; Σ-protocols for "C opens to t" and "C_z = C_x·C_y"
//!                (crate::pedersen)
//! zk sum-check:  Σ_x g(x) = S for a committed S, with Libra's masking polynomial p committed
//!                (hiding Hyrax) before the mask weight ρ is drawn, its sum and its final value
//!                kept in commitments; out: a commitment to g(r)   (crate::sumcheck)
//! zk products:   the same for g = Σ_t c_t Π f_k, ending on commitments to the hidden factors'
//!                values and product proofs that they give C_g      (crate::product)
//! randomness:    masks and blinds come from a CSPRNG seeded by the operating system
//!                (secure_rng); tests pass seeded generators
//! ```
//!
//! `docs/ZERO_KNOWLEDGE.md` gives the simulators, and says which proofs use these pieces yet.

// Verifier code must not panic on proof bytes.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]

pub mod deferred;
pub mod mode;
pub mod multi_opening;
pub mod pedersen;
pub mod product;
pub mod relation;
pub mod sumcheck;

pub use deferred::{DeferredChecks, WeightedChecks, check_together};
pub use multi_opening::{
    ZkMultiOpeningProof, ZkOpeningClaim, prove_multi_opening_zk, verify_multi_opening_zk_deferred,
    zk_multi_opening_schedule,
};
pub use pedersen::{OpeningProof, ProductProof, ValueOpening};
pub use product::{
    BatchMember, FactorValue, FactorValuesProof, ZkProductClaims, ZkProductProof, ZkProductShape,
    prove_zk_batched_products, prove_zk_product, prove_zk_product_combined,
    verify_zk_batched_products_deferred, verify_zk_product_combined_deferred, verify_zk_product_deferred,
};
pub use relation::{
    Combination, CommittedValue, LinearValue, ProverRelation, QuadraticRelation, RelationsProof,
};
pub use sumcheck::{
    CommittedEvalClaim, MaskSchedule, ProverMasks, VerifierMasks, ZkSumcheckProof, prove_zk_sumcheck,
    prove_zk_sumcheck_committed, verify_zk_sumcheck_committed_deferred, verify_zk_sumcheck_deferred,
};

use rand::SeedableRng;
use thiserror::Error;

/// Errors of the zero-knowledge layer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ZkError {
    /// The masked sum-check failed.
    #[error("the masked sum-check failed: {0}")]
    Sumcheck(#[from] zkmha_sumcheck::SumcheckError),
    /// The mask's commitment or its zero-knowledge opening failed.
    #[error("the mask's opening failed: {0}")]
    MaskOpening(#[from] zkmha_pcs::PcsError),
    /// A commitment does not open to the value it is claimed to: a false claim, a forged
    /// proof, or a transcript that diverged.
    #[error("a committed value does not open to the claimed value")]
    OpeningMismatch,
    /// A committed value is not the product of the two committed values it is claimed to be.
    #[error("a committed value is not the product it is claimed to be")]
    ProductMismatch,
    /// A committed table does not open to the committed value claimed for it.
    #[error("a committed table does not open to its claimed (committed) value")]
    CommittedOpening,
    /// Committed values do not satisfy the linear or quadratic relations claimed for them.
    #[error("committed values do not satisfy the relations claimed for them")]
    RelationMismatch,
    /// A relation proof or statement of the wrong shape.
    #[error("a malformed relation proof: {0}")]
    MalformedRelation(&'static str),
}

/// A cryptographically secure generator for masks and blinding factors: ChaCha20 seeded with
/// 32 bytes from the operating system (`getrandom`).
///
/// # Errors
/// When the operating system gives no randomness (the prover must not go on without it).
pub fn secure_rng() -> Result<rand_chacha::ChaCha20Rng, rand::Error> {
    rand_chacha::ChaCha20Rng::from_rng(rand::rngs::OsRng)
}
