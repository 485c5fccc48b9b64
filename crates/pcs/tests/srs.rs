//! Regression tests for the reference string's checks: the audit's all-identity string (which
//! made HyperKZG open one point to two values) and other degenerate or inconsistent strings are
//! refused by `read_from_file` with a named error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_ec::{AffineRepr, CurveGroup};
use ark_std::rand::{SeedableRng, rngs::StdRng};
use zkmha_pcs::{G1Affine, G2Affine, PcsError, StructuredReferenceString};

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("zkmha-srs-test-{name}-{}.bin", std::process::id()))
}

/// Writes `srs` to a file and reads it back with the full checks.
fn round_trip(srs: &StructuredReferenceString, name: &str) -> Result<StructuredReferenceString, PcsError> {
    let path = temp_path(name);
    srs.write_to_file(&path).unwrap();
    let back = StructuredReferenceString::read_from_file(&path);
    let _ = std::fs::remove_file(&path);
    back
}

#[test]
fn an_honest_string_is_accepted() {
    let srs = StructuredReferenceString::insecure_for_testing(8, 5);
    assert_eq!(round_trip(&srs, "honest").unwrap(), srs);
    // The smallest string (0 variables: 3 G1 powers) too.
    let small = StructuredReferenceString::insecure_for_testing(0, 5);
    assert_eq!(round_trip(&small, "small").unwrap(), small);
}

/// The audit's reproducer: every point the identity. It used to pass the 16 sampled pairing
/// checks (the identity satisfies them all) and let HyperKZG open a commitment to two values.
#[test]
fn an_all_identity_string_is_refused() {
    let n = 4;
    let srs = StructuredReferenceString {
        powers_g1: vec![G1Affine::zero(); 1 << n],
        powers_g2: vec![G2Affine::zero(); 4],
    };
    assert_eq!(round_trip(&srs, "identity"), Err(PcsError::SrsIdentityPoint { group: 1, index: 0 }));
}

#[test]
fn an_identity_g2_power_is_refused() {
    let mut srs = StructuredReferenceString::insecure_for_testing(4, 6);
    srs.powers_g2 = vec![G2Affine::zero(); 4];
    assert_eq!(round_trip(&srs, "identity-g2"), Err(PcsError::SrsIdentityPoint { group: 2, index: 0 }));
}

/// Secret τ = 0: every power after the first is the identity.
#[test]
fn a_zero_secret_is_refused() {
    let mut srs = StructuredReferenceString::insecure_for_testing(4, 6);
    let (g, h) = (srs.powers_g1[0], srs.powers_g2[0]);
    srs.powers_g1 = std::iter::once(g).chain(std::iter::repeat_n(G1Affine::zero(), 15)).collect();
    srs.powers_g2 = vec![h, G2Affine::zero(), G2Affine::zero(), G2Affine::zero()];
    assert_eq!(round_trip(&srs, "zero"), Err(PcsError::SrsIdentityPoint { group: 1, index: 1 }));
}

/// Secret τ = 1 or −1: consistent powers of a secret everyone knows.
#[test]
fn a_secret_of_plus_or_minus_one_is_refused() {
    let srs = StructuredReferenceString::insecure_for_testing(4, 6);
    let (g, h) = (srs.powers_g1[0], srs.powers_g2[0]);
    let ones = StructuredReferenceString { powers_g1: vec![g; 16], powers_g2: vec![h; 4] };
    assert_eq!(round_trip(&ones, "one"), Err(PcsError::SrsKnownSecret));
    let alternating = StructuredReferenceString {
        powers_g1: (0..16).map(|i| if i % 2 == 0 { g } else { -g }).collect(),
        powers_g2: (0..4).map(|i| if i % 2 == 0 { h } else { -h }).collect(),
    };
    assert_eq!(round_trip(&alternating, "minus-one"), Err(PcsError::SrsKnownSecret));
}

/// One wrong point among 2^12 powers: the former check's 16 evenly spaced samples (pairs
/// starting at multiples of 255) missed indices 2049 and 4095 (it caught 1); the randomized
/// check over every pair catches all three.
#[test]
fn one_corrupted_point_in_the_middle_is_refused() {
    let srs = StructuredReferenceString::insecure_for_testing(12, 8);
    for index in [2049, 4095, 1] {
        let mut broken = srs.clone();
        broken.powers_g1[index] = (broken.powers_g1[index] + broken.powers_g1[0]).into_affine();
        assert_eq!(round_trip(&broken, "corrupted"), Err(PcsError::InconsistentSrs), "index {index}");
        // Every seed catches it (the check's failure probability is 2^-128).
        for seed in 0..4 {
            assert_eq!(
                broken.check_consistency_with_rng(&mut StdRng::seed_from_u64(seed)),
                Err(PcsError::InconsistentSrs)
            );
        }
    }
}

/// Swapping two powers keeps every point valid and non-identity but breaks the chain.
#[test]
fn swapped_points_are_refused() {
    let mut srs = StructuredReferenceString::insecure_for_testing(6, 9);
    srs.powers_g1.swap(20, 21);
    assert_eq!(round_trip(&srs, "swapped"), Err(PcsError::InconsistentSrs));
}

/// G2 powers of another secret than the G1 powers.
#[test]
fn g2_powers_of_another_secret_are_refused() {
    let mut srs = StructuredReferenceString::insecure_for_testing(4, 10);
    let other = StructuredReferenceString::insecure_for_testing(4, 11);
    srs.powers_g2 = other.powers_g2.clone();
    assert_eq!(round_trip(&srs, "other-g2"), Err(PcsError::InconsistentSrs));
    // Only the last G2 power wrong.
    let mut srs = StructuredReferenceString::insecure_for_testing(4, 10);
    srs.powers_g2[3] = other.powers_g2[3];
    assert_eq!(round_trip(&srs, "last-g2"), Err(PcsError::InconsistentSrs));
}

#[test]
fn a_too_short_string_is_refused() {
    let srs = StructuredReferenceString::insecure_for_testing(4, 12);
    let short = StructuredReferenceString {
        powers_g1: srs.powers_g1[..2].to_vec(),
        powers_g2: srs.powers_g2.clone(),
    };
    assert_eq!(round_trip(&short, "short-g1"), Err(PcsError::SrsTooShort { g1: 2, g2: 4 }));
    let short = StructuredReferenceString {
        powers_g1: srs.powers_g1.clone(),
        powers_g2: srs.powers_g2[..3].to_vec(),
    };
    assert_eq!(round_trip(&short, "short-g2"), Err(PcsError::SrsTooShort { g1: 16, g2: 3 }));
}

/// Measures loading a realistic string (2^`ZKMHA_SRS_BENCH_VARS`, default 2^20 powers): the
/// decoding (curve and subgroup checks), the former 16-pair spot check, and the full check. Run
/// with `cargo test --release -p zkmha-pcs --test suite srs:: -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run by hand"]
fn time_loading_a_large_string() {
    use ark_ec::pairing::Pairing;
    use ark_serialize::CanonicalDeserialize;
    use zkmha_pcs::Bn254;
    let n: usize = std::env::var("ZKMHA_SRS_BENCH_VARS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let srs = StructuredReferenceString::insecure_for_testing(n, 13);
    let path = temp_path("large");
    srs.write_to_file(&path).unwrap();
    let start = std::time::Instant::now();
    let bytes = std::fs::read(&path).unwrap();
    let decoded = StructuredReferenceString::deserialize_compressed(&bytes[..]).unwrap();
    let decode = start.elapsed();
    // The former check: all G2 pairs and 16 evenly spaced G1 pairs, two pairings each.
    let start = std::time::Instant::now();
    let (g, g_tau, h, h_tau) =
        (decoded.powers_g1[0], decoded.powers_g1[1], decoded.powers_g2[0], decoded.powers_g2[1]);
    for pair in decoded.powers_g2.windows(2) {
        assert_eq!(Bn254::pairing(g, pair[1]), Bn254::pairing(g_tau, pair[0]));
    }
    let last = decoded.powers_g1.len() - 1;
    for i in (0..last).step_by((last / 16).max(1)) {
        let (a, b) = (decoded.powers_g1[i], decoded.powers_g1[i + 1]);
        assert_eq!(Bn254::pairing(b, h), Bn254::pairing(a, h_tau));
    }
    let former = start.elapsed();
    let start = std::time::Instant::now();
    decoded.check_consistency().unwrap();
    let check = start.elapsed();
    let start = std::time::Instant::now();
    StructuredReferenceString::read_from_file(&path).unwrap();
    let total = start.elapsed();
    let _ = std::fs::remove_file(&path);
    println!(
        "2^{n} powers ({} MB): decode {decode:.2?}; former spot check {former:.2?} (load {:.2?}); \
         full check {check:.2?}; read_from_file now {total:.2?}",
        bytes.len() >> 20,
        decode + former
    );
}

/// The parallel decoder reads exactly what `write_to_file` (the derived encoding) writes, and
/// refuses truncated files, lengths longer than the file, trailing bytes and invalid points.
#[test]
fn malformed_files_are_refused_as_undecodable() {
    let srs = StructuredReferenceString::insecure_for_testing(3, 14);
    let path = temp_path("malformed");
    srs.write_to_file(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let write = |b: &[u8]| {
        std::fs::write(&path, b).unwrap();
        StructuredReferenceString::read_from_file(&path)
    };
    assert_eq!(write(&bytes).unwrap(), srs);
    for cut in [0, 4, 8, 40, bytes.len() - 1] {
        assert!(matches!(write(&bytes[..cut]), Err(PcsError::Serialization(_))), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(write(&longer), Err(PcsError::Serialization(_))));
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(write(&huge), Err(PcsError::Serialization(_))));
    let mut off_curve = bytes.clone();
    off_curve[8 + 32 + 3] ^= 0x10;
    assert!(matches!(write(&off_curve), Err(PcsError::Serialization(_)) | Err(PcsError::InconsistentSrs)));
    let _ = std::fs::remove_file(&path);
}
