//! Multilinear polynomial commitments on BN254: HyperKZG and Hyrax behind one trait,
//! [`MultilinearCommitmentScheme`].
//!
//! The scheme is HyperKZG (Gemini's reduction of a multilinear evaluation to univariate KZG
//! openings, as in Nova's `hyperkzg`), written on arkworks primitives because no maintained
//! crate offers it: ark-poly-commit's multilinear KZG puts its proofs in G2 (G2 multi-scalar
//! multiplications for every opening, n + 1 pairings to verify) and its Hyrax has √N-sized
//! commitments.
//!
//! ```text
//! commit  f ∈ F^{2^n}:   C = Σ_i f[i]·[τ^i]₁                       (the table as univariate coefficients)
//! open    f̃(u) = v:      fold F_{k+1}(Y) = (1 − u_k)·E_k(Y) + u_k·O_k(Y),  F_k(X) = E_k(X²) + X·O_k(X²)
//!                        commit F_1 … F_{n−1};  r ← transcript
//!                        send F_k(r), F_k(−r), F_k(r²) for every k
//!                        V checks F_{k+1}(r²) = (1−u_k)(F_k(r)+F_k(−r))/2 + u_k(F_k(r)−F_k(−r))/(2r),  F_n := v
//!                        q ← transcript;  B = Σ q^k F_k;  W = (B − I)/Z,  Z = (X−r)(X+r)(X−r²)
//! verify                 e(C_B − [I(τ)]₁, [1]₂) = e([W]₁, [Z(τ)]₂)     (two pairings)
//! ```
//!
//! Proof: n − 1 + 1 group elements and 3n field elements. The structured reference string of
//! [`StructuredReferenceString::insecure_for_testing`] has a known trapdoor: **never use it
//! for real proofs**; load the output of a public ceremony with
//! [`StructuredReferenceString::read_from_file`].

mod batch;
mod batch_affine;
mod error;
mod hiding;
mod hyperkzg;
pub mod hyrax;
mod inner_product;
mod scheme;
mod srs;

pub use batch::{MultiOpeningProof, OpeningClaim, group_by_claim_points};
pub use error::PcsError;
pub use hiding::{HyraxBlinds, ZkCommittedOpeningProof, ZkOpeningProof};
pub use hyperkzg::{Commitment, HyperKzg, OpeningProof};
pub use hyrax::{
    GroupEquation, Hyrax, HyraxCommitment, HyraxParams, HyraxProof, PolynomialTable, decode_with_row_budget,
    split_vars,
};
pub use inner_product::ZkInnerProductProof;
pub use scheme::MultilinearCommitmentScheme;
pub use srs::{ProverKey, StructuredReferenceString, VerifierKey};

/// BN254's groups and pairing.
pub use ark_bn254::{Bn254, G1Affine, G1Projective, G2Affine, G2Projective};
