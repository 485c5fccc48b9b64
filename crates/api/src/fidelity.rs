//! How far a proven output may lie from the model's float64 computation before the prover
//! says so.
//!
//! ```text
//! e = ‖proven − float64‖₂ / ‖float64‖₂      (relative L2, per layer output, chain boundary, logits)
//! e > FIDELITY_LIMIT (1 %)  ⇒  a FidelityWarning naming the value and e
//! ```
//!
//! A proof is valid for the quantized model its key fixes; a warning says that this model's
//! output on the input differs from the float64 model's by more than the project allows
//! (docs/ACCURACY.md), which is a defect of the calibration to report, not a number to trust.

/// The largest relative L2 error from float64 a proven output may have without a warning.
pub const FIDELITY_LIMIT: f64 = 0.01;

/// One proven output over [`FIDELITY_LIMIT`] from float64.
#[derive(Debug, Clone, PartialEq)]
pub struct FidelityWarning {
    /// What lies far: "layer 3's output", "the logits".
    pub what: String,
    /// Its relative L2 error from float64.
    pub relative_l2_error: f64,
}

impl std::fmt::Display for FidelityWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {:.2} % from float64, over the {:.0} % zkmha allows; the proof is valid for the quantized model its key fixes, which on this input differs from the model more than it should (docs/ACCURACY.md)",
            self.what,
            self.relative_l2_error * 100.0,
            FIDELITY_LIMIT * 100.0
        )
    }
}

/// The warnings for `measured` (what, relative L2 error): one for each over
/// [`FIDELITY_LIMIT`] (or not a number), in order.
///
/// ```
/// use zkmha_api::fidelity::fidelity_warnings;
/// let warnings = fidelity_warnings([("layer 0's output".to_string(), 0.004), ("the logits".to_string(), 0.027)]);
/// assert_eq!(warnings.len(), 1);
/// assert!(warnings[0].to_string().starts_with("the logits: 2.70 % from float64"));
/// ```
pub fn fidelity_warnings(measured: impl IntoIterator<Item = (String, f64)>) -> Vec<FidelityWarning> {
    measured
        .into_iter()
        .filter(|(_, error)| error.is_nan() || *error > FIDELITY_LIMIT)
        .map(|(what, relative_l2_error)| FidelityWarning { what, relative_l2_error })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn only_errors_over_the_limit_or_not_a_number_warn_in_order() {
        let measured = [
            ("a".to_string(), 0.01),
            ("b".to_string(), 0.0100001),
            ("c".to_string(), f64::NAN),
            ("d".to_string(), 0.0),
            ("e".to_string(), 0.5),
        ];
        let warnings = fidelity_warnings(measured);
        let named: Vec<&str> = warnings.iter().map(|w| w.what.as_str()).collect();
        assert_eq!(named, ["b", "c", "e"]);
        let sentence = warnings[2].to_string();
        assert!(sentence.starts_with("e: 50.00 % from float64, over the 1 % zkmha allows;"), "{sentence}");
        assert!(!sentence.contains('\n'));
    }
}
