//! What goes into a sum-check and what comes out of it.

use crate::SumcheckError;
use ark_serialize::{
    CanonicalDeserialize, CanonicalSerialize, Compress, Read, SerializationError, Valid, Validate, Write,
};
use zkmha_field::Fr;
use zkmha_transcript::Transcript;

/// The largest round-polynomial degree a claim may state.
pub const MAX_DEGREE: usize = 32;

/// The most variables a claim may state.
pub const MAX_NUM_VARS: usize = 40;

const LABEL_NUM_VARS: &[u8] = b"sumcheck/claim/num-vars";
const LABEL_DEGREE: &[u8] = b"sumcheck/claim/degree";
const LABEL_SUM: &[u8] = b"sumcheck/claim/sum";

/// The public statement `Σ_{x ∈ {0,1}^num_vars} g(x) = claimed_sum` for a `g` of degree at
/// most `degree` in each variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct SumcheckClaim {
    /// Number of variables of `g`.
    pub num_vars: usize,
    /// Degree of `g` in each variable (the degree of every round polynomial).
    pub degree: usize,
    /// The claimed sum over the hypercube.
    pub claimed_sum: Fr,
}

impl SumcheckClaim {
    /// A claim.
    pub fn new(num_vars: usize, degree: usize, claimed_sum: Fr) -> Self {
        Self { num_vars, degree, claimed_sum }
    }

    /// Checks that some sum-check can prove this claim.
    ///
    /// # Errors
    /// [`SumcheckError::InvalidClaim`] for degree 0, a degree above [`MAX_DEGREE`] or more
    /// than [`MAX_NUM_VARS`] variables.
    pub fn validate(&self) -> Result<(), SumcheckError> {
        if self.degree == 0 {
            return Err(SumcheckError::InvalidClaim("degree must be at least 1"));
        }
        if self.degree > MAX_DEGREE {
            return Err(SumcheckError::InvalidClaim("degree above the supported maximum"));
        }
        if self.num_vars > MAX_NUM_VARS {
            return Err(SumcheckError::InvalidClaim("too many variables"));
        }
        Ok(())
    }

    /// Absorbs the whole claim (variables, degree, sum).
    pub fn append_to_transcript(&self, transcript: &mut Transcript) {
        transcript.append_u64(LABEL_NUM_VARS, self.num_vars as u64);
        transcript.append_u64(LABEL_DEGREE, self.degree as u64);
        transcript.append_field(LABEL_SUM, &self.claimed_sum);
    }
}

/// A claim `p(point) = value` that the caller must still discharge: by evaluating `p`
/// itself, with a further sum-check, or with a commitment opening.
///
/// `point[i]` is the value of variable `x_i` (the project's little-endian order). The value
/// is a field element by default; a zero-knowledge proof carries it hidden (`V` a commitment
/// to it, or on the prover's side the commitment with its opening).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalClaim<V = Fr> {
    /// The evaluation point, in variable order.
    pub point: Vec<Fr>,
    /// The claimed value at the point (in the clear or hidden).
    pub value: V,
}

// Written out rather than derived: the derive would demand that every `V` serialize, and the
// prover's hidden values (a commitment with its opening) never leave the prover.
impl<V: CanonicalSerialize> CanonicalSerialize for EvalClaim<V> {
    fn serialize_with_mode<W: Write>(
        &self,
        mut writer: W,
        compress: Compress,
    ) -> Result<(), SerializationError> {
        self.point.serialize_with_mode(&mut writer, compress)?;
        self.value.serialize_with_mode(&mut writer, compress)
    }

    fn serialized_size(&self, compress: Compress) -> usize {
        self.point.serialized_size(compress) + self.value.serialized_size(compress)
    }
}

impl<V: Valid> Valid for EvalClaim<V> {
    fn check(&self) -> Result<(), SerializationError> {
        self.point.check()?;
        self.value.check()
    }
}

impl<V: CanonicalDeserialize> CanonicalDeserialize for EvalClaim<V> {
    fn deserialize_with_mode<R: Read>(
        mut reader: R,
        compress: Compress,
        validate: Validate,
    ) -> Result<Self, SerializationError> {
        let point = Vec::<Fr>::deserialize_with_mode(&mut reader, compress, validate)?;
        let value = V::deserialize_with_mode(&mut reader, compress, validate)?;
        Ok(Self { point, value })
    }
}

impl EvalClaim {
    /// Compares the claimed value with the value the caller computed.
    ///
    /// # Errors
    /// [`SumcheckError::FinalEvaluationMismatch`] when they differ.
    pub fn check(&self, actual: Fr) -> Result<(), SumcheckError> {
        if actual == self.value { Ok(()) } else { Err(SumcheckError::FinalEvaluationMismatch) }
    }
}
