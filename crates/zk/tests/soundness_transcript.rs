//! Malicious-prover regressions for "absorb before you draw": the deferred group checks'
//! batching weights depend on every prover message, final Σ-protocol responses included.
//!
//! The audit (shared/audit/audit_deferred_forgery.rs) forged a [`ProductProof`] for
//! `C_z = (x·y + 1)·U + β·H`: it read the deferred weights off a transcript that had not
//! absorbed the responses `z₁ … z₅`, then moved `z₁` so that the error of one equation
//! cancelled in the weighted sum. The same attack, run against the fixed verifier, fails: the
//! weights now change with `z₁`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::CanonicalSerialize;
use ark_std::UniformRand;
use ark_std::rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Field, Fr, One};
use zkmha_pcs::{G1Affine, GroupEquation, HyraxParams};
use zkmha_transcript::Transcript;
use zkmha_zk::{DeferredChecks, OpeningProof, ProductProof, ValueOpening, ZkError};

const DOMAIN: &[u8] = b"audit-product";

fn absorb(t: &mut Transcript, label: &'static [u8], points: &[G1Affine]) {
    let mut bytes = Vec::new();
    for p in points {
        p.serialize_compressed(&mut bytes).unwrap();
    }
    t.append_bytes(label, &bytes);
}

/// A product proof for a false statement, with `z₁` moved as the audit's prover moves it for
/// the weights `weights` (the ones it believes the verifier will draw).
fn forged_product(
    weights_from: impl Fn(&Transcript) -> Vec<Fr>,
) -> (HyraxParams, [G1Affine; 3], ProductProof) {
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let (x, y) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let ox = ValueOpening::hide(x, &mut rng);
    let oy = ValueOpening::hide(y, &mut rng);
    let oz = ValueOpening::hide(x * y + Fr::one(), &mut rng); // FALSE: z = x·y + 1
    let commitments = [ox, oy, oz].map(|o| G1Affine::from(o.commit(&params)));
    let mut proof =
        ProductProof::prove(&params, commitments, [&ox, &oy, &oz], &mut Transcript::new(DOMAIN), &mut rng);
    let mut t = Transcript::new(DOMAIN);
    absorb(&mut t, b"zk/product/statement", &commitments);
    absorb(&mut t, b"zk/product/first-message", &proof.first_messages);
    let c = t.challenge_field(b"zk/product/challenge");
    let weights = weights_from(&t);
    proof.responses[0] += weights[2] * c * weights[0].inverse().unwrap();
    (params, commitments, proof)
}

#[test]
fn the_audit_product_forgery_is_rejected() {
    // The audit's prover: weights from the transcript before the responses.
    let (params, commitments, proof) =
        forged_product(|t| t.clone().challenge_fields(b"zk/deferred/weights", 3));
    assert_eq!(
        proof.verify(&params, commitments, &mut Transcript::new(DOMAIN)),
        Err(ZkError::ProductMismatch)
    );
}

#[test]
fn weights_change_with_every_response() {
    // Each equation's every scalar moves the weights, so no response can be chosen after them.
    let params = HyraxParams::new(2);
    let g = params.value_generator;
    let transcript = Transcript::new(b"weights");
    let equations = vec![GroupEquation::new(vec![g, g], vec![Fr::from(3u64), -Fr::from(3u64)]); 3];
    let base = GroupEquation::combination_weights(&transcript, b"w", &equations);
    for e in 0..equations.len() {
        for k in 0..2 {
            let mut changed = equations.clone();
            changed[e].scalars[k] += Fr::one();
            assert_ne!(GroupEquation::combination_weights(&transcript, b"w", &changed), base, "{e} {k}");
        }
    }
}

#[test]
fn an_opening_response_cannot_cancel_a_false_product() {
    // Two protocols in one deferred batch: a false product and a true opening. The prover
    // moves the opening's response (its only free message) to cancel the product's error in
    // the weighted sum, as the audit did across protocols; the fixed weights defeat it.
    let params = HyraxParams::new(2);
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (x, y) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let ox = ValueOpening::hide(x, &mut rng);
    let oy = ValueOpening::hide(y, &mut rng);
    let oz = ValueOpening::hide(x * y + Fr::one(), &mut rng);
    let commitments = [ox, oy, oz].map(|o| G1Affine::from(o.commit(&params)));
    let ov = ValueOpening::hide(Fr::from(5u64), &mut rng);
    let cv = G1Affine::from(ov.commit(&params));
    let mut prover = Transcript::new(DOMAIN);
    let product = ProductProof::prove(&params, commitments, [&ox, &oy, &oz], &mut prover, &mut rng);
    let mut opening = OpeningProof::prove(&params, cv, &ov, &mut prover, &mut rng);
    // The best the prover can do: solve for the response with the weights of the transcript
    // as it stands (before the response): the verifier's weights are others.
    let mut verifier = Transcript::new(DOMAIN);
    let mut checks = DeferredChecks::new();
    product.verify_deferred(&params, commitments, &mut verifier, &mut checks);
    opening.verify_deferred(&params, cv, Fr::from(5u64), &mut verifier, &mut checks);
    assert!(checks.finish(&verifier).is_err());
    opening.response += Fr::one();
    let mut verifier = Transcript::new(DOMAIN);
    let mut checks = DeferredChecks::new();
    product.verify_deferred(&params, commitments, &mut verifier, &mut checks);
    opening.verify_deferred(&params, cv, Fr::from(5u64), &mut verifier, &mut checks);
    assert_eq!(checks.finish(&verifier), Err(ZkError::ProductMismatch));
}
