//! The Fiat–Shamir transcript: a thin, typed layer over `merlin` (STROBE-128).
//!
//! ```text
//! transcript  = merlin("zkmha-v1" ‖ protocol domain)
//! absorb      : label ‖ length-prefixed bytes           (merlin frames every message)
//! field elem  : 32 bytes, little-endian canonical form
//! vector      : u64 length, then each element
//! shape       : u64 rank, then each axis as u64
//! challenge   : 64 bytes from merlin, reduced mod p      (statistical bias < 2^-250)
//! ```
//!
//! Prover and verifier use this one type and call the same functions in the same order;
//! every protocol absorbs its whole public statement before drawing its first challenge
//! (forgetting part of it is the "Frozen Heart" class of Fiat–Shamir bugs). Labels are
//! `&'static [u8]` constants kept next to each protocol.

use ark_serialize::CanonicalSerialize;
use zkmha_field::{Fr, PrimeField};

/// The version tag mixed into every transcript of this project.
pub const PROJECT_DOMAIN: &[u8] = b"zkmha-v1";

/// A Fiat–Shamir transcript shared by prover and verifier.
#[derive(Clone)]
pub struct Transcript {
    inner: merlin::Transcript,
}

impl core::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Transcript { .. }")
    }
}

impl Transcript {
    /// A new transcript for a protocol named by `domain` (e.g. `b"attention-layer"`).
    pub fn new(domain: &'static [u8]) -> Self {
        let mut inner = merlin::Transcript::new(PROJECT_DOMAIN);
        inner.append_message(b"domain", domain);
        Self { inner }
    }

    /// Absorbs a byte string.
    pub fn append_bytes(&mut self, label: &'static [u8], bytes: &[u8]) {
        self.inner.append_message(label, bytes);
    }

    /// Absorbs an integer.
    pub fn append_u64(&mut self, label: &'static [u8], value: u64) {
        self.inner.append_u64(label, value);
    }

    /// Absorbs a field element (32 bytes, canonical little-endian).
    pub fn append_field(&mut self, label: &'static [u8], value: &Fr) {
        let mut bytes = [0u8; zkmha_field::FIELD_BYTES];
        // Serializing a field element into a 32-byte buffer cannot fail.
        let _ = value.serialize_compressed(&mut bytes[..]);
        self.inner.append_message(label, &bytes);
    }

    /// Absorbs a vector of field elements, length first.
    pub fn append_fields(&mut self, label: &'static [u8], values: &[Fr]) {
        self.inner.append_u64(label, values.len() as u64);
        let mut bytes = Vec::with_capacity(values.len() * zkmha_field::FIELD_BYTES);
        for value in values {
            let _ = value.serialize_compressed(&mut bytes);
        }
        self.inner.append_message(label, &bytes);
    }

    /// Absorbs a list of arkworks values (group elements, commitments) in their compressed
    /// canonical encoding, count first.
    pub fn append_serialized<T: CanonicalSerialize>(&mut self, label: &'static [u8], values: &[T]) {
        self.inner.append_u64(label, values.len() as u64);
        let mut bytes = Vec::with_capacity(values.first().map_or(0, |v| v.compressed_size()) * values.len());
        for value in values {
            // Serializing into a Vec cannot fail.
            let _ = value.serialize_compressed(&mut bytes);
        }
        self.inner.append_message(label, &bytes);
    }

    /// Absorbs a shape (rank, then each axis).
    pub fn append_shape(&mut self, label: &'static [u8], shape: &[usize]) {
        let mut bytes = Vec::with_capacity(8 * (shape.len() + 1));
        bytes.extend_from_slice(&(shape.len() as u64).to_le_bytes());
        for axis in shape {
            bytes.extend_from_slice(&(*axis as u64).to_le_bytes());
        }
        self.inner.append_message(label, &bytes);
    }

    /// Draws a field challenge: 64 bytes reduced modulo p.
    pub fn challenge_field(&mut self, label: &'static [u8]) -> Fr {
        let mut bytes = [0u8; 64];
        self.inner.challenge_bytes(label, &mut bytes);
        Fr::from_le_bytes_mod_order(&bytes)
    }

    /// Draws `count` field challenges.
    pub fn challenge_fields(&mut self, label: &'static [u8], count: usize) -> Vec<Fr> {
        (0..count).map(|_| self.challenge_field(label)).collect()
    }
}

/// A public statement or message that knows how to absorb itself.
pub trait AppendToTranscript {
    /// Absorbs `self` under `label`.
    fn append_to_transcript(&self, label: &'static [u8], transcript: &mut Transcript);
}

impl AppendToTranscript for Fr {
    fn append_to_transcript(&self, label: &'static [u8], transcript: &mut Transcript) {
        transcript.append_field(label, self);
    }
}

impl AppendToTranscript for [Fr] {
    fn append_to_transcript(&self, label: &'static [u8], transcript: &mut Transcript) {
        transcript.append_fields(label, self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_calls_give_same_challenges() {
        let run = |x: u64| {
            let mut t = Transcript::new(b"test");
            t.append_field(b"x", &Fr::from(x));
            t.append_shape(b"shape", &[3, 4]);
            t.challenge_fields(b"c", 3)
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        let c = run(5);
        assert_ne!(c[0], c[1]);
    }

    #[test]
    fn every_absorbed_part_changes_the_challenge() {
        let base = || {
            let mut t = Transcript::new(b"test");
            t.append_fields(b"v", &[Fr::from(1u64), Fr::from(2u64)]);
            t
        };
        let reference = base().challenge_field(b"c");
        let mut other_domain = Transcript::new(b"other");
        other_domain.append_fields(b"v", &[Fr::from(1u64), Fr::from(2u64)]);
        assert_ne!(other_domain.challenge_field(b"c"), reference);
        let mut other_label = Transcript::new(b"test");
        other_label.append_fields(b"w", &[Fr::from(1u64), Fr::from(2u64)]);
        assert_ne!(other_label.challenge_field(b"c"), reference);
        // Length-prefixing: [1,2] then [] differs from [1] then [2].
        let mut split_a = base();
        split_a.append_fields(b"v", &[]);
        let mut split_b = Transcript::new(b"test");
        split_b.append_fields(b"v", &[Fr::from(1u64)]);
        split_b.append_fields(b"v", &[Fr::from(2u64)]);
        assert_ne!(split_a.challenge_field(b"c"), split_b.challenge_field(b"c"));
        // Shapes [12] and [1, 2] do not collide.
        let mut s1 = Transcript::new(b"test");
        s1.append_shape(b"s", &[12]);
        let mut s2 = Transcript::new(b"test");
        s2.append_shape(b"s", &[1, 2]);
        assert_ne!(s1.challenge_field(b"c"), s2.challenge_field(b"c"));
        // The challenge label is bound too.
        assert_ne!(base().challenge_field(b"d"), reference);
    }

    #[test]
    fn challenges_use_the_whole_field() {
        // 64-byte reduction: challenges are not confined to 2^253 or below.
        let mut t = Transcript::new(b"range");
        let top = (0..64)
            .map(|_| t.challenge_field(b"c"))
            .filter(|c| c.into_bigint().const_num_bits() >= 253)
            .count();
        assert!(top > 0);
    }
}
