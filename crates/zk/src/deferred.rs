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

use crate::ZkError;
use zkmha_pcs::GroupEquation;
use zkmha_transcript::Transcript;

const LABEL_WEIGHTS: &[u8] = b"zk/deferred/weights";

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
        if self.equations.is_empty() {
            return Ok(());
        }
        // The weights are drawn after every equation — so every response in it — is absorbed:
        // a prover that learned them before fixing a message could cancel one false equation
        // with another.
        let weights = self.weights(transcript);
        if GroupEquation::all_hold(&self.equations, &weights).is_ok() {
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
