//! Both schemes through the common trait: the same protocol code, the same guarantees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use zkmha_field::{Fr, One};
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::*;
use zkmha_transcript::Transcript;

fn exercise<S: MultilinearCommitmentScheme>(pp: &S::ProverParams, vp: &S::VerifierParams, max_vars: usize) {
    let mut rng = StdRng::seed_from_u64(11);
    for n in 0..=max_vars {
        let f = DenseMultilinearExtension::new(n, (0..1usize << n).map(|_| Fr::rand(&mut rng)).collect())
            .unwrap();
        let point: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let c = S::commit(pp, &f).unwrap();
        let (proof, value) = S::open(pp, &f, &c, &point, &mut Transcript::new(b"scheme")).unwrap();
        assert_eq!(value, f.evaluate(&point).unwrap());
        assert_eq!(S::verify(vp, &c, &point, value, &proof, &mut Transcript::new(b"scheme")), Ok(()));
        assert!(
            S::verify(vp, &c, &point, value + Fr::one(), &proof, &mut Transcript::new(b"scheme")).is_err()
        );
    }
    let too_big = DenseMultilinearExtension::new(max_vars + 1, vec![Fr::one(); 1 << (max_vars + 1)]).unwrap();
    assert!(matches!(S::commit(pp, &too_big), Err(PcsError::SrsTooSmall { .. })));
}

#[test]
fn hyperkzg_through_the_trait() {
    let srs = StructuredReferenceString::insecure_for_testing(7, 3);
    exercise::<HyperKzg>(&srs.prover_key(7).unwrap(), &srs.verifier_key().unwrap(), 7);
}

#[test]
fn hyrax_through_the_trait() {
    let params = HyraxParams::new(7);
    exercise::<Hyrax>(&params, &params, 7);
}
