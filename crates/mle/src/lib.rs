//! Dense multilinear extensions (MLEs) over the BN254 scalar field.
//!
//! ```text
//! f̃(x_0, …, x_{n−1}) = Σ_{b ∈ {0,1}ⁿ} f[b] · eq(b, x)
//! eq(b, x)           = Π_i (b_i x_i + (1 − b_i)(1 − x_i))
//! index(b)           = Σ_i b_i · 2^i            (little-endian: index bit i is variable x_i)
//! ```
//!
//! The variable order is written down once, in `docs/CONVENTIONS.md`, and pinned by the
//! tests of this crate:
//!
//! * a point is a slice `point[i] = x_i`, the value of the variable carried by index bit `i`;
//! * a row-major matrix `M[i][j]` with `R` rows and `C` columns is padded to `R̂ × Ĉ`
//!   (next powers of two) and stored at index `i·Ĉ + j`, so the **column bits are the
//!   low variables** and the row bits the high ones: `M̃(row point, column point)` is
//!   evaluated at `[column point ‖ row point]` ([`matrix_point`]);
//! * a tensor of shape `[a_0, …, a_{k−1}]` is padded axis by axis and stored row-major, so
//!   the last axis owns the lowest variables ([`tensor_point`]).
//!
//! Sum-check in this project binds the **highest** variable first
//! ([`DenseMultilinearExtension::bind_highest_in_place`]): the two halves of the table are
//! the two values of `x_{n−1}`, which makes binding contiguous, in place and parallel.

mod dense;
mod eq;
mod error;
mod layout;
mod small;

pub use dense::{DenseMultilinearExtension, bind_highest};
pub use eq::{eq_evaluation, eq_table, eq_table_sequential, fold_rows};
pub use error::MleError;
pub use layout::{log2_ceil, matrix_point, pad_matrix, pad_tensor, padded_len, tensor_point};
pub use small::SmallMultilinearExtension;
pub use zkmha_field::Fr;

/// Below this many output entries, table-wide operations run on one thread.
///
/// Rayon's task overhead is a few microseconds; 2¹² field operations take about 40 µs.
pub const PARALLEL_THRESHOLD: usize = 1 << 12;

/// The largest number of variables accepted (2³² entries would need 128 GiB).
pub const MAX_NUM_VARS: usize = 32;
