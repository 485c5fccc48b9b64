//! A transformer's MLP in fixed point, proven in either mode from one code path: GPT-2's and
//! BERT's `W₂·act(W₁·x + b₁) + b₂` (dense, [`MlpParams::gate`] `None`) and Llama's SwiGLU
//! `W_down·(SiLU(W_gate·x) ⊙ W_up·x)` (gated, [`GatedProduct`]; GeGLU with a GELU). Like the
//! steps it is made of, it needs no claim on its output: it ties the committed tensors together
//! and hands claims on every one of them, keyed by [`MlpPolynomial`], to the caller's openings.
//! Built for the whole-transformer issue; not yet wired into a block.
//!
//! ```text
//! dense      U = round((X·W_up + b_up) / 2^k_up)          projection, no output range of its
//!                                                          own: the activation's lookup pins U
//!            A = act(U)                                    crate::activation (U ∈ [−2^(b−1), 2^(b−1)))
//!            Y = round((A·W_down + b_down) / 2^k_down)     projection
//! gated      G = round((X·W_gate + b_gate) / 2^k_gate)     projection, pinned by the activation
//!            U = round((X·W_up + b_up) / 2^k_up)           projection, output range b_up bits
//!            A = act(G)                                    crate::activation
//!            P = A ⊙ U                                     crate::hadamard, exact, not committed
//!            Y = round((P·W_down + b_down) / 2^k_down)     projection (its claim on P goes to
//!                                                          the product, which reduces it to A, U)
//! absorb     the whole shape; the caller absorbs its commitments to X, the weights, U, G, A,
//!            Y, the projections' high digits and every multiplicity before
//! proof      the projections (up, down; or gate, up, down: one batch of lookups, one batched
//!            sum-check);
//!            the activation's lookup; the gated product
//! claims out on X, every W and b, U, G, A, Y and every multiplicity (mlp_polynomials)
//! ```
//!
//! What the caller must still do: open every claim against its commitment (a claim left
//! unopened is a relation left unproven), pin `X` to integers with `|X| < 2^31` and zero
//! padded rows (the norm before it does both; then `U`, `G` and `A` are zero on the padded
//! rows too, each forced by its rounding, `P = A ⊙ U` with them, and so is `Y` once it is
//! pinned to integers), and pin
//! `Y` when the shape names no output range for it (the block's residual `H' = Z + Y` with `Z`
//! range-checked and `H'` public does; under an output norm, that norm's input range). Padded columns (`c ≥ n`) of `U`, `G`, `A`, `P` are zero
//! only when the weights' and biases' padding is; whatever they hold, the down projection's
//! selector `[j < n]` keeps them out of `Y`. Integer soundness: every tensor
//! entering a product is an integer of bounded size — `U` and `G` by the activation's table,
//! `A` by its outputs (`|A| ≤ 2^(b−1−a+o) + 1 < 2^31`, checked by [`MlpShape::validate`]), the
//! gated `U` by its output range, and `P = A ⊙ U` exactly, `|P| < 2^31` (checked by
//! [`MlpShape::validate`]) — so every relation holds over the integers (see each step's
//! module). Until 2026-11-27 the gated product was rounded to 16 bits (`P = round(A ⊙ U /
//! 2^k_p)`, committed, its remainder and output range-checked); the exact product replaced it
//! for accuracy (`docs/ACCURACY.md`). The fresh-context review of 2026-11-26 (non-integer `U`, `G`, `Y` at
//! real and padded entries, every absorbed shape field, the other gating, swapped and dropped
//! proof parts, the claims' keys, ~10 000 malformed proofs, one-entry shapes; both modes) found
//! no forgery and no panic; its notes on the padding and on `|A|` are applied above.

use crate::AttentionError;
use crate::activation::{
    Activation, ActivationClaims, ActivationShape, ActivationWitness, activation_claims,
    activation_lookup_statements, activation_lookups, activation_multiplicities, compute_activation,
};
use crate::hadamard::{
    HadamardClaims, HadamardProofOf, HadamardShape, HadamardWitness, compute_hadamard, hadamard_zk_schedule,
    prove_hadamard, verify_hadamard,
};
use crate::lookup_batch::{
    Alone, AloneProof, LookupStatement, PreparedLookup, lookup_parts_zk_schedule, prove_alone, verify_alone,
};
use crate::mode::Mode;
use crate::norm::BlockNorm;
use crate::projection::{
    ProjectionClaims, ProjectionInputs, ProjectionRanges, ProjectionShape, ProjectionWitness,
    ProjectionsProofOf, compute_projection, projection_lookup_statements, projection_ranges,
    projection_zk_schedule, prove_projections, verify_projections,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use zkmha_field::{Fr, One};
use zkmha_lookup::LookupClaims;
use zkmha_sumcheck::EvalClaim;
use zkmha_transcript::Transcript;

const STEP: &str = "mlp";
const LABEL_SHAPE: &[u8] = b"attention/mlp/shape";

/// One of the MLP's projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MlpProjection {
    /// `W_up` (`d → n`): the activation's input in a dense MLP, the product's right factor in
    /// a gated one.
    Up,
    /// `W_gate` (`d → n`, gated MLPs): the activation's input.
    Gate,
    /// `W_down` (`n → d`): the MLP's output.
    Down,
}

/// A gated MLP's own constants (Llama's SwiGLU, Gemma's GeGLU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct GatedProduct {
    /// `k_gate`: the gate projection's shift.
    pub gate_shift: u32,
    /// `b_up`: the up projection's output range (`|U| ≤ 2^(b_up − 1)`). The product `P = A ⊙ U`
    /// is exact ([`crate::hadamard`]): the down projection rescales it.
    pub up_bits: u32,
}

/// An MLP's constants, independent of the sequence: what a model's verifier key holds (the
/// block adds the token count, the model width and `Y`'s range, [`MlpParams::shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct MlpParams {
    /// The hidden width `n`.
    pub hidden: usize,
    /// The activation.
    pub activation: Activation,
    /// `a`: the activation's input scale (`U = u·2^a` dense, `G` gated).
    pub activation_input_fraction_bits: u32,
    /// `o`: the activation's output scale (`A = act(u)·2^o`).
    pub activation_output_fraction_bits: u32,
    /// `b`: the activation's input range, `[−2^(b−1), 2^(b−1))` (`1..=16`).
    pub activation_input_bits: u32,
    /// `k_up`: the up projection's shift.
    pub up_shift: u32,
    /// `None`: a dense MLP, `Y = W_down·act(W_up·x + b_up) + b_down` (GPT-2, BERT); `Some`: a
    /// gated one, `Y = W_down·(act(W_gate·x) ⊙ W_up·x)`, with its own constants.
    pub gate: Option<GatedProduct>,
    /// `k_down`: the down projection's shift.
    pub down_shift: u32,
}

impl MlpParams {
    /// The MLP's shape on `rows × width` inputs, with `Y` range-checked to `output_bits`
    /// (`None`: the caller pins it).
    pub fn shape(&self, rows: usize, width: usize, output_bits: Option<u32>) -> MlpShape {
        MlpShape { rows, width, output_bits, params: *self }
    }
}

/// The MLP half of a pre-norm block (`H' = Z + MLP(norm₂(Z))`): the norm's constants and the
/// MLP's, chosen at calibration and kept in the verifier key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, CanonicalSerialize, CanonicalDeserialize)]
pub struct BlockMlp {
    /// The norm from `Z` to the MLP's input (GPT-2's `ln_2`, Llama's `post_attention_layernorm`).
    pub norm: BlockNorm,
    /// The MLP.
    pub params: MlpParams,
}

/// The public shape of an MLP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MlpShape {
    /// Tokens `s`.
    pub rows: usize,
    /// The model width `d` (the input's and the output's columns).
    pub width: usize,
    /// `Some(b)`: `Y` is range-checked to `b` bits here; `None`: the caller pins it.
    pub output_bits: Option<u32>,
    /// The constants.
    pub params: MlpParams,
}

impl MlpShape {
    /// The projections in proof order: up and down (dense); gate, up and down (gated).
    pub fn projection_order(&self) -> Vec<MlpProjection> {
        match self.params.gate {
            None => vec![MlpProjection::Up, MlpProjection::Down],
            Some(_) => vec![MlpProjection::Gate, MlpProjection::Up, MlpProjection::Down],
        }
    }

    /// The shape of one projection (`None`: the gate of a dense MLP).
    pub fn projection(&self, projection: MlpProjection) -> Option<ProjectionShape> {
        let (rows, width, hidden, p) = (self.rows, self.width, self.params.hidden, &self.params);
        let widening =
            |shift, output_bits| ProjectionShape { rows, inputs: width, outputs: hidden, shift, output_bits };
        match (projection, p.gate) {
            (MlpProjection::Up, None) => Some(widening(p.up_shift, None)),
            (MlpProjection::Up, Some(gate)) => Some(widening(p.up_shift, Some(gate.up_bits))),
            (MlpProjection::Gate, None) => None,
            (MlpProjection::Gate, Some(gate)) => Some(widening(gate.gate_shift, None)),
            (MlpProjection::Down, _) => Some(ProjectionShape {
                rows,
                inputs: hidden,
                outputs: width,
                shift: p.down_shift,
                output_bits: self.output_bits,
            }),
        }
    }

    /// The projection the activation reads: up (dense) or gate (gated).
    pub fn activated_projection(&self) -> MlpProjection {
        match self.params.gate {
            None => MlpProjection::Up,
            Some(_) => MlpProjection::Gate,
        }
    }

    /// The variables of a polynomial's table (`None`: not one of this shape's).
    pub fn polynomial_vars(&self, key: MlpPolynomial) -> Option<usize> {
        use MlpPolynomial::*;
        let projection = |p| self.projection(p);
        let high = |p| projection(p).filter(ProjectionShape::has_high_digit);
        match key {
            Input => projection(MlpProjection::Up).map(|s| s.row_vars() + s.input_vars()),
            Weights(p) => projection(p).map(|s| s.input_vars() + s.output_vars()),
            Bias(p) => projection(p).map(|s| s.output_vars()),
            Projected(p) => projection(p).map(|s| s.grid_vars()),
            Activated => Some(self.activation_shape().grid_vars()),
            LowMultiplicities(p) => projection(p).map(|s| s.digits().0 as usize),
            HighDigits(p) => high(p).map(|s| s.grid_vars()),
            HighMultiplicities(p) => high(p).map(|s| s.digits().1 as usize),
            OutputMultiplicities(p) => projection(p).and_then(|s| s.output_bits).map(|b| b as usize),
            ActivationMultiplicities => Some(self.params.activation_input_bits as usize),
        }
    }

    /// The most variables of a polynomial the proof commits to ([`mlp_polynomials`]).
    pub fn largest_vars(&self) -> usize {
        mlp_polynomials(self).into_iter().filter_map(|k| self.polynomial_vars(k)).max().unwrap_or(0)
    }

    /// The projections' shapes in proof order.
    pub fn projections(&self) -> Vec<ProjectionShape> {
        self.projection_order().into_iter().filter_map(|p| self.projection(p)).collect()
    }

    /// The activation's shape (over `s × n`).
    pub fn activation_shape(&self) -> ActivationShape {
        let p = &self.params;
        ActivationShape {
            activation: p.activation,
            rows: self.rows,
            width: p.hidden,
            input_fraction_bits: p.activation_input_fraction_bits,
            output_fraction_bits: p.activation_output_fraction_bits,
            input_bits: p.activation_input_bits,
        }
    }

    /// The gated product's shape (gated MLPs).
    pub fn product_shape(&self) -> Option<HadamardShape> {
        self.params.gate.map(|_| HadamardShape { rows: self.rows, width: self.params.hidden })
    }

    /// Checks every step's shape, and that the activation's outputs fit the next step's
    /// inputs (`|A| < 2^31`: GELU and SiLU are `x` times a factor in `(0, 1)`, so `|act(x)| ≤
    /// |x|` and `|A| ≤ 2^(b−1−a+o) + 1`, the rounding's half included; gated, the exact
    /// product `|A|·|U| ≤ (2^(b−1−a+o) + 1)·2^(b_up−1) < 2^31` too).
    ///
    /// # Errors
    /// [`AttentionError::InvalidShape`] naming the first limit it breaks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        for shape in self.projections() {
            shape.validate()?;
        }
        self.activation_shape().validate()?;
        if let Some(product) = self.product_shape() {
            product.validate()?;
        }
        let magnitude = i64::from(self.params.activation_input_bits)
            - 1
            - i64::from(self.params.activation_input_fraction_bits)
            + i64::from(self.params.activation_output_fraction_bits);
        if magnitude > 30 {
            return Err(AttentionError::InvalidShape(format!(
                "the activation's outputs reach 2^{magnitude}: the next projection takes |A| < 2^31"
            )));
        }
        if let Some(gate) = self.params.gate
            && magnitude + i64::from(gate.up_bits) - 1 > 30
        {
            return Err(AttentionError::InvalidShape(format!(
                "the gated product reaches 2^{}: the down projection takes |A ⊙ U| < 2^31",
                magnitude + i64::from(gate.up_bits) - 1
            )));
        }
        Ok(())
    }

    fn append_to_transcript(&self, transcript: &mut Transcript) {
        let p = &self.params;
        let (gated, gate_shift, up_bits) = match p.gate {
            None => (0, 0, 0),
            Some(g) => (1, g.gate_shift, g.up_bits),
        };
        transcript.append_shape(
            LABEL_SHAPE,
            &[
                self.rows,
                self.width,
                p.hidden,
                usize::from(p.activation.code()),
                p.activation_input_fraction_bits as usize,
                p.activation_output_fraction_bits as usize,
                p.activation_input_bits as usize,
                p.up_shift as usize,
                gated,
                gate_shift as usize,
                up_bits as usize,
                p.down_shift as usize,
                self.output_bits.map_or(0, |b| b as usize),
            ],
        );
    }
}

pub use zkmha_nn::{LinearWeights, MlpWeights};

/// The weights of `projection` (`None`: the gate of a dense MLP).
pub(crate) fn weights_of<T>(weights: &MlpWeights<T>, projection: MlpProjection) -> Option<&LinearWeights<T>> {
    match projection {
        MlpProjection::Up => Some(&weights.up),
        MlpProjection::Gate => weights.gate.as_ref(),
        MlpProjection::Down => Some(&weights.down),
    }
}

/// Every tensor of an MLP's forward pass and every range datum the caller commits: the
/// prover's data. Built by [`compute_mlp`]; a cheating prover (tests) may change any of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlpWitness {
    /// Per projection in [`MlpShape::projection_order`]: its input, weights and output (the
    /// output of the down projection is the MLP's `Y`).
    pub projections: Vec<(MlpProjection, ProjectionWitness)>,
    /// `A = act(U or G)`, with its input.
    pub activation: ActivationWitness,
    /// `P = A ⊙ U` (gated MLPs; never committed).
    pub product: Option<HadamardWitness>,
}

impl MlpWitness {
    /// The projection's witness.
    pub fn projection(&self, projection: MlpProjection) -> Option<&ProjectionWitness> {
        self.projections.iter().find(|(p, _)| *p == projection).map(|(_, w)| w)
    }

    /// `Y`, the MLP's output (`s × d`, row-major).
    pub fn output(&self) -> &[i64] {
        self.projection(MlpProjection::Down).map_or(&[], |w| w.output.as_slice())
    }
}

/// The range data the caller commits beside the tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlpRanges {
    /// Per projection in [`MlpShape::projection_order`].
    pub projections: Vec<ProjectionRanges>,
    /// The activation's multiplicities.
    pub activation: Vec<i64>,
}

/// The integer forward pass of the MLP on `input` (`s × d`, row-major).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::WrongTensorSize`], weights missing for
/// a projection of the shape, or [`AttentionError::ValueOutOfRange`] for an activation input or
/// a range-checked output outside its range (an input far from the calibration's).
pub fn compute_mlp(
    shape: &MlpShape,
    input: &[i64],
    weights: &MlpWeights,
) -> Result<MlpWitness, AttentionError> {
    shape.validate()?;
    let missing = || AttentionError::InvalidShape("the MLP's shape and weights disagree on the gate".into());
    if weights.gate.is_some() != shape.params.gate.is_some() {
        return Err(missing());
    }
    let project = |projection: MlpProjection, input: &[i64]| -> Result<ProjectionWitness, AttentionError> {
        let projection_shape = shape.projection(projection).ok_or_else(missing)?;
        let linear = weights_of(weights, projection).ok_or_else(missing)?;
        let output = compute_projection(&projection_shape, input, &linear.weights, &linear.bias)?;
        if let Some(bits) = projection_shape.output_bits {
            let half = 1i64 << (bits - 1);
            if let Some((index, &value)) =
                output.iter().enumerate().find(|(_, v)| !(-half..half).contains(*v))
            {
                let tensor = match projection {
                    MlpProjection::Up => "U (the MLP's up projection)",
                    MlpProjection::Gate => "G (the MLP's gate projection)",
                    MlpProjection::Down => "Y₂ (the MLP's down projection)",
                };
                return Err(AttentionError::ValueOutOfRange {
                    tensor,
                    index,
                    value,
                    bound_bits: half.trailing_zeros(),
                });
            }
        }
        Ok(ProjectionWitness {
            input: input.to_vec(),
            weights: linear.weights.clone(),
            bias: linear.bias.clone(),
            output,
        })
    };
    let activated_projection = shape.activated_projection();
    let mut projections = Vec::new();
    let pre_activation = project(activated_projection, input)?;
    let activation_input = pre_activation.output.clone();
    projections.push((activated_projection, pre_activation));
    let activated = compute_activation(&shape.activation_shape(), &activation_input)?;
    let activation = ActivationWitness { input: activation_input, output: activated.clone() };
    let (product, down_input) = match shape.product_shape() {
        None => (None, activated),
        Some(product_shape) => {
            let up = project(MlpProjection::Up, input)?;
            let output = compute_hadamard(&product_shape, &activated, &up.output)?;
            let product =
                HadamardWitness { left: activated, right: up.output.clone(), output: output.clone() };
            projections.push((MlpProjection::Up, up));
            (Some(product), output)
        }
    };
    projections.push((MlpProjection::Down, project(MlpProjection::Down, &down_input)?));
    Ok(MlpWitness { projections, activation, product })
}

/// The range data of `witness` (what the caller commits beside the tensors).
///
/// # Errors
/// As the steps' range functions: a remainder or an output out of range (a witness that is
/// not the forward pass), a pair not in the activation's table.
pub fn mlp_ranges(shape: &MlpShape, witness: &MlpWitness) -> Result<MlpRanges, AttentionError> {
    let projections = shape
        .projection_order()
        .into_iter()
        .map(|p| {
            let projection_shape = shape.projection(p).ok_or(AttentionError::CheckFailed { step: STEP })?;
            let projection_witness =
                witness.projection(p).ok_or(AttentionError::CheckFailed { step: STEP })?;
            projection_ranges(&projection_shape, projection_witness)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let activation = activation_multiplicities(&shape.activation_shape(), &witness.activation)?;
    Ok(MlpRanges { projections, activation })
}

/// A polynomial an MLP's claims are about (what the caller commits or holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MlpPolynomial {
    /// `X` (`ŝ × d̂`).
    Input,
    /// A projection's `W`.
    Weights(MlpProjection),
    /// A projection's `b`.
    Bias(MlpProjection),
    /// A projection's output over `ŝ × n̂` (`U`, `G`), or the MLP's output `Y` (`ŝ × d̂`,
    /// [`MlpProjection::Down`]).
    Projected(MlpProjection),
    /// `A = act(·)` (`ŝ × n̂`).
    Activated,
    /// A projection's (low digit's) range multiplicities.
    LowMultiplicities(MlpProjection),
    /// A two-digit projection's high remainder digits (`ŝ × n̂` grid of its output).
    HighDigits(MlpProjection),
    /// Their range multiplicities.
    HighMultiplicities(MlpProjection),
    /// A range-checked projection output's multiplicities.
    OutputMultiplicities(MlpProjection),
    /// The activation's lookup multiplicities (`2^b`).
    ActivationMultiplicities,
}

/// The polynomials the caller commits for the proof (besides `X` and the weights, which the
/// statement holds), in one order.
pub fn mlp_polynomials(shape: &MlpShape) -> Vec<MlpPolynomial> {
    use MlpPolynomial::*;
    let mut out = Vec::new();
    for p in shape.projection_order() {
        out.extend([Projected(p), LowMultiplicities(p)]);
        if let Some(projection) = shape.projection(p) {
            if projection.has_high_digit() {
                out.extend([HighDigits(p), HighMultiplicities(p)]);
            }
            if projection.output_bits.is_some() {
                out.push(OutputMultiplicities(p));
            }
        }
    }
    out.extend([Activated, ActivationMultiplicities]);
    out
}

/// The tables of [`mlp_polynomials`], in its order, padded to their MLE layouts (what the
/// caller commits).
///
/// # Errors
/// [`AttentionError::CheckFailed`] for a witness or range data of another shape.
pub fn mlp_tables(
    shape: &MlpShape,
    witness: &MlpWitness,
    ranges: &MlpRanges,
) -> Result<Vec<(MlpPolynomial, Vec<i64>)>, AttentionError> {
    use MlpPolynomial::*;
    let fail = || AttentionError::CheckFailed { step: STEP };
    let order = shape.projection_order();
    let grid = |values: &[i64], columns: usize| {
        let row_vars = shape.rows.next_power_of_two().trailing_zeros() as usize;
        let column_vars = columns.next_power_of_two().trailing_zeros() as usize;
        crate::projection::pad(values, shape.rows, columns, row_vars, column_vars)
    };
    mlp_polynomials(shape)
        .into_iter()
        .map(|key| {
            let projection =
                |p: MlpProjection| -> Result<(&ProjectionWitness, &ProjectionRanges, usize), AttentionError> {
                    let k = order.iter().position(|q| *q == p).ok_or_else(fail)?;
                    let outputs = shape.projection(p).ok_or_else(fail)?.outputs;
                    Ok((
                        witness.projection(p).ok_or_else(fail)?,
                        ranges.projections.get(k).ok_or_else(fail)?,
                        outputs,
                    ))
                };
            let values = match key {
                Projected(p) => {
                    let (w, _, outputs) = projection(p)?;
                    grid(&w.output, outputs)
                }
                LowMultiplicities(p) => projection(p)?.1.low_multiplicities.clone(),
                HighDigits(p) => projection(p)?.1.high_digits.clone(),
                HighMultiplicities(p) => projection(p)?.1.high_multiplicities.clone(),
                OutputMultiplicities(p) => projection(p)?.1.output_multiplicities.clone(),
                Activated => grid(&witness.activation.output, shape.params.hidden),
                ActivationMultiplicities => ranges.activation.clone(),
                Input | Weights(_) | Bias(_) => return Err(fail()),
            };
            Ok((key, values))
        })
        .collect()
}

/// An MLP's proof in mode `M`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct MlpProof<M: Mode> {
    /// The projections, in [`MlpShape::projection_order`] (their lookups and the
    /// activation's are the layer's batch: [`mlp_lookup_statements`]).
    pub projections: ProjectionsProofOf<M>,
    /// The gated product (gated MLPs).
    pub product: Option<HadamardProofOf<M>>,
}

/// Every claim of an MLP keyed by its polynomial (a polynomial may carry several, at
/// different points).
pub type MlpClaims<V> = Vec<(MlpPolynomial, EvalClaim<V>)>;

/// The masked sum-checks of an MLP in zero knowledge after its lookups (the layer's batch),
/// in proof order.
///
/// # Errors
/// As [`MlpShape::validate`].
pub fn mlp_zk_schedule(shape: &MlpShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    shape.validate()?;
    let mut schedule = projection_zk_schedule(&shape.projections())?;
    if let Some(product) = shape.product_shape() {
        schedule.extend(hadamard_zk_schedule(&product)?);
    }
    Ok(schedule)
}

/// The steps' claims keyed by their polynomials, in one order for both sides.
fn keyed<V: Clone>(
    shape: &MlpShape,
    projections: Vec<ProjectionClaims<V>>,
    activation: ActivationClaims<V>,
    product: Option<HadamardClaims<V>>,
) -> Result<MlpClaims<V>, AttentionError> {
    use MlpPolynomial::*;
    let order = shape.projection_order();
    if projections.len() != order.len() {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let activated_projection = shape.activated_projection();
    let mut out = Vec::new();
    for (p, c) in order.into_iter().zip(projections) {
        match (p, shape.params.gate) {
            (MlpProjection::Down, None) => out.push((Activated, c.input)),
            // The product's claim: the gated product reduces it to A and U (below).
            (MlpProjection::Down, Some(_)) => {}
            _ => out.push((Input, c.input)),
        }
        out.extend([
            (Weights(p), c.weights),
            (Bias(p), c.bias),
            (Projected(p), c.output),
            (LowMultiplicities(p), c.multiplicities),
        ]);
        if let Some(high) = c.high {
            out.extend([
                (HighDigits(p), high.at_remainder),
                (HighDigits(p), high.at_lookup),
                (HighMultiplicities(p), high.multiplicities),
            ]);
        }
        if let Some(m) = c.output_multiplicities {
            out.push((OutputMultiplicities(p), m));
        }
    }
    out.extend([
        (Projected(activated_projection), activation.input),
        (Activated, activation.output),
        (ActivationMultiplicities, activation.multiplicities),
    ]);
    match (product, shape.product_shape()) {
        (Some(c), Some(_)) => out.extend([(Activated, c.left), (Projected(MlpProjection::Up), c.right)]),
        (None, None) => {}
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    }
    Ok(out)
}

/// The down projection's claim on its input (the last projection's): the gated product's
/// claim on `P`.
fn down_input_claim<V>(claims: &[ProjectionClaims<V>]) -> Result<&EvalClaim<V>, AttentionError> {
    claims.last().map(|c| &c.input).ok_or(AttentionError::CheckFailed { step: STEP })
}

/// An MLP's lookups, as the layer's batch states them ([`crate::lookup_batch`]): its
/// projections' ([`projection_lookup_statements`], in [`MlpShape::projection_order`]), then
/// its activation's.
///
/// # Errors
/// As [`MlpShape::validate`].
pub fn mlp_lookup_statements(shape: &MlpShape) -> Result<Vec<LookupStatement<'static>>, AttentionError> {
    shape.validate()?;
    let mut statements = projection_lookup_statements(&shape.projections())?;
    statements.extend(activation_lookup_statements(&shape.activation_shape())?);
    Ok(statements)
}

/// An MLP's prover data, computed once for the layer's lookup batch and the steps.
pub struct MlpInputs<'a> {
    projections: ProjectionInputs<'a>,
    witness: &'a MlpWitness,
    ranges: &'a MlpRanges,
}

impl<'a> MlpInputs<'a> {
    /// The prover's data of `witness` with its range data ([`compute_mlp`], [`mlp_ranges`]; a
    /// cheating prover may pass others).
    ///
    /// # Errors
    /// Bad shapes or tensors, range data of the wrong size, a witness of another gating.
    pub fn new(
        shape: &MlpShape,
        witness: &'a MlpWitness,
        ranges: &'a MlpRanges,
    ) -> Result<Self, AttentionError> {
        shape.validate()?;
        let order = shape.projection_order();
        let mismatch = || AttentionError::InvalidShape("the MLP's witness does not match its shape".into());
        let witnesses = order
            .iter()
            .map(|p| witness.projection(*p).ok_or_else(mismatch))
            .collect::<Result<Vec<_>, _>>()?;
        if ranges.projections.len() != order.len() {
            return Err(mismatch());
        }
        let projection_ranges: Vec<&ProjectionRanges> = ranges.projections.iter().collect();
        let projections = ProjectionInputs::new(&shape.projections(), &witnesses, &projection_ranges)?;
        Ok(Self { projections, witness, ranges })
    }

    /// The MLP's lookups for the layer's batch, in [`mlp_lookup_statements`] order.
    ///
    /// # Errors
    /// Bad shapes or tensors.
    pub fn lookups(&self, shape: &MlpShape) -> Result<Vec<PreparedLookup<'_>>, AttentionError> {
        let mut lookups = self.projections.lookups()?;
        lookups.extend(activation_lookups(
            &shape.activation_shape(),
            &self.witness.activation,
            &self.ranges.activation,
        )?);
        Ok(lookups)
    }
}

/// Splits an MLP's lookup claims: the projections', then the activation's.
fn split_claims<V>(
    shape: &MlpShape,
    mut claims: Vec<LookupClaims<V>>,
) -> Result<[Vec<LookupClaims<V>>; 2], AttentionError> {
    let projections = projection_lookup_statements(&shape.projections())?.len();
    if claims.len() != projections + 1 {
        return Err(AttentionError::CheckFailed { step: STEP });
    }
    let activation = claims.split_off(projections);
    Ok([claims, activation])
}

/// Proves the MLP of `inputs` in mode `M` from its lookups' claims (the layer's batch,
/// [`MlpInputs::lookups`]). The caller has committed to and absorbed every polynomial of
/// [`mlp_polynomials`], `X` and the weights.
///
/// # Errors
/// Bad shapes or tensors, range data of the wrong size, a witness of another gating, lookup
/// claims of the wrong count, the steps' errors.
pub fn prove_mlp<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &MlpShape,
    inputs: &MlpInputs<'_>,
    claims: Vec<LookupClaims<M::ProverValue>>,
    transcript: &mut Transcript,
) -> Result<(MlpProof<M>, MlpClaims<M::ProverValue>), AttentionError> {
    shape.validate()?;
    let witness = inputs.witness;
    let mismatch = || AttentionError::InvalidShape("the MLP's witness does not match its shape".into());
    let [projection_lookups, activation_lookups] = split_claims(shape, claims)?;
    shape.append_to_transcript(transcript);
    let (projections, projection_claims) =
        prove_projections::<M>(prover, &inputs.projections, projection_lookups, transcript)?;
    let one = M::prover_constant(prover, Fr::one());
    let activation_claims = activation_claims(&shape.activation_shape(), activation_lookups, &one)?;
    let (product, product_claims) = match (shape.product_shape(), &witness.product) {
        (None, None) => (None, None),
        (Some(product_shape), Some(product)) => {
            let claim = down_input_claim(&projection_claims)?;
            let (proof, claims) = prove_hadamard::<M>(prover, &product_shape, product, claim, transcript)?;
            (Some(proof), Some(claims))
        }
        _ => return Err(mismatch()),
    };
    let claims = keyed(shape, projection_claims, activation_claims, product_claims)?;
    Ok((MlpProof { projections, product }, claims))
}

/// An MLP proven alone (its lookups a batch of their own): tests.
pub type MlpAloneProof<M> = AloneProof<M, MlpProof<M>>;

/// [`mlp_zk_schedule`] with the MLP's own lookup batch first ([`prove_mlp_alone`]).
///
/// # Errors
/// As [`mlp_zk_schedule`].
pub fn mlp_alone_zk_schedule(shape: &MlpShape) -> Result<Vec<(usize, usize)>, AttentionError> {
    let mut schedule = lookup_parts_zk_schedule(&[mlp_lookup_statements(shape)?]);
    schedule.extend(mlp_zk_schedule(shape)?);
    Ok(schedule)
}

/// Proves an MLP alone: its lookups, then [`prove_mlp`].
///
/// # Errors
/// As [`MlpInputs::new`] and [`prove_mlp`].
pub fn prove_mlp_alone<M: Mode>(
    prover: &mut M::Prover<'_>,
    shape: &MlpShape,
    witness: &MlpWitness,
    ranges: &MlpRanges,
    transcript: &mut Transcript,
) -> Result<(MlpAloneProof<M>, MlpClaims<M::ProverValue>), AttentionError> {
    let inputs = MlpInputs::new(shape, witness, ranges)?;
    prove_alone::<M, _, _>(prover, inputs.lookups(shape)?, transcript, |p, claims, t| {
        prove_mlp::<M>(p, shape, &inputs, claims, t)
    })
}

/// Verifies [`prove_mlp_alone`].
///
/// # Errors
/// As [`verify_mlp`].
pub fn verify_mlp_alone<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &MlpShape,
    proof: &MlpAloneProof<M>,
    transcript: &mut Transcript,
) -> Result<MlpClaims<M::Value>, AttentionError> {
    let Alone { lookups, steps } = proof;
    verify_alone::<M, _>(verifier, mlp_lookup_statements(shape)?, lookups, transcript, |v, claims, t| {
        verify_mlp::<M>(v, shape, steps, claims, t)
    })
}

/// Verifies an MLP in mode `M` from its lookups' claims (the layer's batch, in
/// [`mlp_lookup_statements`] order); returns every claim the caller must discharge (openings
/// of each polynomial at each of its points).
///
/// # Errors
/// [`AttentionError::InvalidShape`], [`AttentionError::CheckFailed`] for a proof of another
/// gating, the steps' errors (in zero knowledge the relations' group equations are left in the
/// deferred checks).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_mlp<M: Mode>(
    verifier: &mut M::Verifier<'_>,
    shape: &MlpShape,
    proof: &MlpProof<M>,
    claims: Vec<LookupClaims<M::Value>>,
    transcript: &mut Transcript,
) -> Result<MlpClaims<M::Value>, AttentionError> {
    shape.validate()?;
    let [projection_lookups, activation_lookups] = split_claims(shape, claims)?;
    shape.append_to_transcript(transcript);
    let projection_claims = verify_projections::<M>(
        verifier,
        &shape.projections(),
        &proof.projections,
        projection_lookups,
        transcript,
    )?;
    let one = M::verifier_constant(verifier, Fr::one());
    let activation_claims = activation_claims(&shape.activation_shape(), activation_lookups, &one)?;
    let product_claims = match (shape.product_shape(), &proof.product) {
        (None, None) => None,
        (Some(product_shape), Some(product)) => {
            let claim = down_input_claim(&projection_claims)?;
            Some(verify_hadamard::<M>(verifier, &product_shape, claim, product, transcript)?)
        }
        _ => return Err(AttentionError::CheckFailed { step: STEP }),
    };
    keyed(shape, projection_claims, activation_claims, product_claims)
}
