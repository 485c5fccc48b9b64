//! Group equations collected during a verification and checked at its end with one MSM.
//!
//! ```text
//! each Σ-protocol or opening leaves equations  E_g: Σ_k s_{g,k}·B_{g,k} = 0
//! at the end:  w_g ← a copy of the transcript after the whole proof and every equation
//!              (bases and scalars: the final responses) are absorbed
//!              check Σ_g w_g·E_g = 0 with one multi-scalar multiplication
//! ```
//!
//! A false equation survives the random combination with probability at most 1/|F|. One MSM
//! of all the points is several times cheaper than an MSM per equation (ark-ec's MSM costs
//! about 19 µs a point at 64 points, 7 µs at 2 000 on this machine). When the combination
//! fails, each equation is checked alone to name the first false one.
//!
//! Several verifications (the layers of a chain) can share that MSM ([`check_together`]):
//!
//! ```text
//! batch b:    its weights w_{b,g} drawn as above from its own transcript      (WeightedChecks)
//! together:   λ_b ← a fresh transcript after every batch's weights are absorbed
//!             check Σ_b λ_b·Σ_g w_{b,g}·E_{b,g} = 0 with one MSM (shared bases once)
//! ```
//!
//! Each batch's weights are a function of its equations (they are drawn after absorbing them),
//! so the `λ_b` are drawn after every batch's combination `E_b = Σ_g w_{b,g}·E_{b,g}` is fixed:
//! a false batch (`E_b ≠ 0`) survives with probability at most 1/|F| on top of its own 1/|F|.
//! The layers of a chain share most bases (the commitment generators), so their one MSM has
//! about half the points of their separate MSMs.

use crate::ZkError;
use zkmha_pcs::GroupEquation;
use zkmha_transcript::Transcript;

const LABEL_WEIGHTS: &[u8] = b"zk/deferred/weights";
const LABEL_BATCHES: &[u8] = b"zk/deferred/batches";
const LABEL_BATCH_WEIGHTS: &[u8] = b"zk/deferred/batch-weights";

/// Equations left for the end of a verification, each with the error that names it.
#[derive(Clone, Debug, Default)]
pub struct DeferredChecks {
    equations: Vec<GroupEquation>,
    errors: Vec<ZkError>,
}

impl DeferredChecks {
    /// No equations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an equation; `error` is returned if it turns out false.
    pub fn push(&mut self, equation: GroupEquation, error: ZkError) {
        self.equations.push(equation);
        self.errors.push(error);
    }

    /// Equations collected.
    pub fn len(&self) -> usize {
        self.equations.len()
    }

    /// Whether none were collected.
    pub fn is_empty(&self) -> bool {
        self.equations.is_empty()
    }

    /// The equations collected so far.
    pub fn equations(&self) -> &[GroupEquation] {
        &self.equations
    }

    /// The batching weights [`Self::finish`] draws for these equations from `transcript`
    /// (for tests and audits: they must change with every prover message).
    pub fn weights(&self, transcript: &Transcript) -> Vec<zkmha_field::Fr> {
        GroupEquation::combination_weights(transcript, LABEL_WEIGHTS, &self.equations)
    }

    /// Checks every equation, weighted by challenges drawn from a copy of `transcript` (which
    /// must have absorbed everything the equations depend on); `transcript` itself is not
    /// advanced.
    ///
    /// # Errors
    /// The error pushed with the first false equation.
    pub fn finish(self, transcript: &Transcript) -> Result<(), ZkError> {
        self.weigh(transcript).check()
    }

    /// Draws the batching weights [`Self::finish`] would draw, leaving the check itself for
    /// later: alone ([`WeightedChecks::check`]) or in one MSM with other verifications'
    /// ([`check_together`]).
    #[must_use = "nothing is checked until the weighed checks are"]
    pub fn weigh(self, transcript: &Transcript) -> WeightedChecks {
        // The weights are drawn after every equation — so every response in it — is absorbed:
        // a prover that learned them before fixing a message could cancel one false equation
        // with another.
        let weights = if self.equations.is_empty() { Vec::new() } else { self.weights(transcript) };
        WeightedChecks { equations: self.equations, errors: self.errors, weights }
    }
}

/// A verification's group equations with their batching weights drawn
/// ([`DeferredChecks::weigh`]), not yet checked.
#[derive(Clone, Debug, Default)]
#[must_use = "nothing is checked until `check` or `check_together` runs"]
pub struct WeightedChecks {
    equations: Vec<GroupEquation>,
    errors: Vec<ZkError>,
    weights: Vec<zkmha_field::Fr>,
}

impl WeightedChecks {
    /// Checks the equations: one MSM of their weighted sum, and when it fails each equation
    /// alone to name the first false one.
    ///
    /// # Errors
    /// The error pushed with the first false equation.
    pub fn check(self) -> Result<(), ZkError> {
        if self.equations.is_empty() || GroupEquation::all_hold(&self.equations, &self.weights).is_ok() {
            return Ok(());
        }
        for (equation, error) in self.equations.iter().zip(self.errors) {
            if equation.holds().is_err() {
                return Err(error);
            }
        }
        // Every equation holds alone but not their combination: only possible for malformed
        // equations (lengths), which the callers never build.
        Err(ZkError::OpeningMismatch)
    }
}

/// Checks several verifications' equations in one MSM: each batch's weighted combination,
/// weighted again by `λ_b` drawn after every batch's weights (the module's relation).
///
/// # Errors
/// The index of the first batch, in order, whose own check fails ([`WeightedChecks::check`])
/// and its error, when the joint check fails.
pub fn check_together(mut batches: Vec<WeightedChecks>) -> Result<(), (usize, ZkError)> {
    // One batch is checked as it is (no λ to draw).
    if batches.len() == 1
        && let Some(batch) = batches.pop()
    {
        return batch.check().map_err(|error| (0, error));
    }
    let mut transcript = Transcript::new(LABEL_BATCHES);
    transcript.append_u64(LABEL_BATCHES, batches.len() as u64);
    for batch in &batches {
        transcript.append_u64(LABEL_BATCHES, batch.weights.len() as u64);
        transcript.append_fields(LABEL_BATCHES, &batch.weights);
    }
    let lambdas = transcript.challenge_fields(LABEL_BATCH_WEIGHTS, batches.len());
    let well_formed = batches.iter().all(|b| b.equations.len() == b.weights.len());
    let terms = batches.iter().zip(&lambdas).flat_map(|(batch, lambda)| {
        batch.equations.iter().zip(batch.weights.iter().map(move |w| *w * lambda))
    });
    if well_formed && GroupEquation::all_hold_weighted(terms).is_ok() {
        return Ok(());
    }
    for (index, batch) in batches.into_iter().enumerate() {
        batch.check().map_err(|error| (index, error))?;
    }
    // Every batch holds alone but not their combination: only for malformed equations.
    Err((0, ZkError::OpeningMismatch))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use zkmha_field::Fr;
    use zkmha_pcs::{HyraxParams, PcsError};

    /// `a·G − a·G = 0` (true) or `a·G − (a+1)·G = 0` (false).
    fn equation(params: &HyraxParams, a: u64, truthful: bool) -> GroupEquation {
        let g = params.value_generator;
        let b = if truthful { a } else { a + 1 };
        GroupEquation::new(vec![g, g], vec![Fr::from(a), -Fr::from(b)])
    }

    /// Verifications checked in one MSM: all true pass, a false equation in any batch fails
    /// and is named with its batch, and the joint check agrees with each batch's own.
    #[test]
    fn batches_checked_together_pass_or_name_the_first_false_batch() {
        let params = HyraxParams::new(6);
        let batch = |label: &'static [u8], false_at: Option<u64>| {
            let mut checks = DeferredChecks::new();
            for a in 0..6 {
                let error = if a == 3 { ZkError::ProductMismatch } else { ZkError::OpeningMismatch };
                checks.push(equation(&params, a, false_at != Some(a)), error);
                // The commitment generators are shared by every batch, as by a chain's layers.
                let g = params.generators[a as usize];
                checks.push(
                    GroupEquation::new(vec![g, g], vec![Fr::from(a), -Fr::from(a)]),
                    ZkError::OpeningMismatch,
                );
            }
            checks.weigh(&Transcript::new(label))
        };
        let honest = || {
            vec![
                batch(b"layer 0", None),
                batch(b"layer 1", None),
                DeferredChecks::new().weigh(&Transcript::new(b"x")),
                batch(b"layer 3", None),
            ]
        };
        assert_eq!(check_together(honest()), Ok(()));
        assert_eq!(check_together(Vec::new()), Ok(()));
        for (bad, at) in [(0usize, 1u64), (1, 3), (3, 5)] {
            let mut batches = honest();
            batches[bad] = batch([b"layer 0".as_slice(), b"layer 1", b"", b"layer 3"][bad], Some(at));
            let expected = if at == 3 { ZkError::ProductMismatch } else { ZkError::OpeningMismatch };
            assert_eq!(batches[bad].clone().check(), Err(expected.clone()));
            assert_eq!(check_together(batches), Err((bad, expected)));
        }
        // A false batch among empty ones, and a false batch alone.
        let empty = || DeferredChecks::new().weigh(&Transcript::new(b"empty"));
        assert_eq!(
            check_together(vec![empty(), empty(), batch(b"layer 2", Some(3)), empty()]),
            Err((2, ZkError::ProductMismatch))
        );
        assert_eq!(check_together(vec![batch(b"alone", Some(4))]), Err((0, ZkError::OpeningMismatch)));
        // Two false batches: the first in order is named.
        let mut batches = honest();
        batches[1] = batch(b"layer 1", Some(0));
        batches[3] = batch(b"layer 3", Some(3));
        assert_eq!(check_together(batches), Err((1, ZkError::OpeningMismatch)));
    }

    #[test]
    fn the_first_false_equation_is_named_and_the_transcript_is_untouched() {
        let params = HyraxParams::new(2);
        let transcript = Transcript::new(b"deferred");
        let mut checks = DeferredChecks::new();
        checks.push(equation(&params, 3, true), ZkError::OpeningMismatch);
        checks.push(equation(&params, 4, false), ZkError::ProductMismatch);
        checks.push(equation(&params, 5, false), ZkError::MaskOpening(PcsError::ZkCommitmentMismatch));
        assert_eq!(checks.len(), 3);
        assert_eq!(checks.finish(&transcript), Err(ZkError::ProductMismatch));
        let mut all_true = DeferredChecks::new();
        for a in 0..10 {
            all_true.push(equation(&params, a, true), ZkError::OpeningMismatch);
        }
        all_true.finish(&transcript).unwrap();
        assert!(DeferredChecks::new().finish(&transcript).is_ok());
        let (mut before, mut after) = (Transcript::new(b"deferred"), transcript);
        assert_eq!(before.challenge_field(b"x"), after.challenge_field(b"x"));
    }
}
