//! The fractional sums of [`crate::fraction`] in zero knowledge: every value the plain proof
//! sends in the clear is a Pedersen commitment, every layer's sum-check is masked.
//!
//! ```text
//! first layer  P → V  C(p_1(0)), C(p_1(1)), C(q_1(0)), C(q_1(1)) per tree (p = 1 is public for
//!                     unit leaves of one variable: not sent);  μ ← V
//!              claims C_P = (1−μ)·C_{p0} + μ·C_{p1}, C_Q likewise (combinations, never evaluated)
//! depth k      λ ← V; one zero-knowledge sum of products (zkmha_zk::prove_zk_batched_products)
//!              over every tree deeper than k from the committed claims C_P + λ·C_Q, shape
//!              crate::layer_shape (eq public: V checks its value eq(r, ρ), the rest committed)
//!              → ρ, C(p0), C(p1), C(q0), C(q1) at ρ;  μ ← V;  next claims: the lines at μ
//! out          per tree the first layer's four committed values (the root is
//!              p_0 = p0·q1 + p1·q0, q_0 = q0·q1 of them) and the committed leaf claim
//!              p_n(r_n), q_n(r_n) — the caller proves its relations on them
//! ```
//!
//! Zero knowledge: the first layers and every layer's values are hiding commitments, each
//! sum-check is the masked one of `zkmha_zk` (its rounds uniform), the eq values are public
//! functions of the challenges. Soundness: as the plain proof, with each layer's final
//! relation proved on the committed values (`zkmha_zk::RelationsProof`).

use crate::LookupError;
use crate::fraction::{FractionLeaves, TreeLayers, layer_shape};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Fr, One};
use zkmha_mle::eq_evaluation;
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::FinalEvaluations;
use zkmha_transcript::Transcript;
use zkmha_zk::{
    BatchMember, Combination, CommittedValue, DeferredChecks, FactorValue, LinearValue, ProverMasks,
    ValueOpening, VerifierMasks, ZkProductClaims, ZkProductProof, ZkProductShape, prove_zk_batched_products,
    verify_zk_batched_products_deferred,
};

const LABEL_FIRST_LAYER: &[u8] = b"lookup/zk-fraction/first-layer";
const LABEL_LINE: &[u8] = b"lookup/zk-fraction/line";
const LABEL_LAMBDA: &[u8] = b"lookup/zk-fraction/lambda";

/// A zero-knowledge proof of one or several fractional sums.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkFractionSumProof {
    /// Per tree: commitments to `p_1(0), p_1(1), q_1(0), q_1(1)` (only the `q`s for unit leaves
    /// of one variable).
    pub first_layers: Vec<Vec<G1Affine>>,
    /// Depths 1, 2, …, (deepest tree) − 1.
    pub layers: Vec<ZkProductProof>,
}

/// One tree's committed results: combinations for the verifier, committed values (with their
/// openings) for the prover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkFractionTree<V> {
    /// `p_1(0), p_1(1), q_1(0), q_1(1)`.
    pub first_layer: [V; 4],
    /// The leaf point `r_n`.
    pub leaf_point: Vec<Fr>,
    /// `p_n(r_n)` (the public 1 for unit leaves).
    pub leaf_numerator: V,
    /// `q_n(r_n)`.
    pub leaf_denominator: V,
}

/// The `(variables, degree)` of the masked sum-checks of trees of the given depths, in proof
/// order (for the caller's mask schedule).
pub fn zk_fraction_schedule(depths: &[usize]) -> Vec<(usize, usize)> {
    let deepest = depths.iter().copied().max().unwrap_or(0);
    (1..deepest).map(|depth| (depth, 3)).collect()
}

fn member_shape(unit: bool, lambda: Fr) -> Result<ZkProductShape, LookupError> {
    let shape = layer_shape(unit, lambda)?;
    let mut public = vec![false; shape.num_mles()];
    if let Some(eq) = public.first_mut() {
        *eq = true;
    }
    Ok(ZkProductShape::new(shape, public)?)
}

/// Whether tree `t` of depth `n` and unit flag `unit` runs its unit-leaf layer at `depth`.
fn unit_layer(n: usize, unit: bool, depth: usize) -> bool {
    unit && n == depth + 1
}

/// The leaf claims of trees of depth `depth` (`claims` as `(P, Q)`).
fn finish<V: Clone>(
    leaves: &mut [Option<(Vec<Fr>, V, V)>],
    trees: &[(usize, bool)],
    point: &[Fr],
    claims: &[(V, V)],
    depth: usize,
) {
    for ((slot, (n, _)), (p, q)) in leaves.iter_mut().zip(trees).zip(claims) {
        if *n == depth {
            *slot = Some((point.to_vec(), p.clone(), q.clone()));
        }
    }
}

/// Assembles the trees' results.
fn results<V: Clone>(
    first_layers: Vec<[V; 4]>,
    leaves: Vec<Option<(Vec<Fr>, V, V)>>,
) -> Result<Vec<ZkFractionTree<V>>, LookupError> {
    first_layers
        .into_iter()
        .zip(leaves)
        .map(|(first_layer, leaf)| {
            let (leaf_point, leaf_numerator, leaf_denominator) =
                leaf.ok_or(LookupError::MalformedProof("a tree without its leaf claim"))?;
            Ok(ZkFractionTree { first_layer, leaf_point, leaf_numerator, leaf_denominator })
        })
        .collect()
}

fn absorb_points(transcript: &mut Transcript, points: &[Vec<G1Affine>]) {
    let mut bytes = Vec::new();
    for point in points.iter().flatten() {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(LABEL_FIRST_LAYER, &bytes);
}

/// Proves several fractional sums in zero knowledge (leaves as in
/// [`crate::prove_fraction_sums`]), with the masks scheduled by [`zk_fraction_schedule`].
///
/// # Errors
/// As [`crate::prove_fraction_sums`], and [`LookupError::ZeroKnowledge`] from the masked
/// sum-checks.
pub fn prove_fraction_sums_zk<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    trees: Vec<FractionLeaves>,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkFractionSumProof, Vec<ZkFractionTree<CommittedValue>>), LookupError> {
    let mut layers = TreeLayers::new(trees)?;
    let values = layers.first_layers()?;
    let shapes: Vec<(usize, bool)> =
        layers.depths.iter().copied().zip(layers.units.iter().copied()).collect();
    let one = CommittedValue::public(params, Fr::one());
    let mut sent = Vec::with_capacity(values.len());
    let mut first_layers = Vec::with_capacity(values.len());
    for (values, &(n, unit)) in values.iter().zip(&shapes) {
        let mut commitments = Vec::with_capacity(4);
        let mut hide = |value: Fr| {
            let opening = ValueOpening::hide(value, rng);
            let commitment = G1Affine::from(opening.commit(params));
            commitments.push(commitment);
            CommittedValue::new(commitment, opening)
        };
        let [p0, p1, q0, q1] = values.as_slice() else {
            return Err(LookupError::MalformedProof("the first layer has four values"));
        };
        let (p0, p1) = if unit && n == 1 { (one.clone(), one.clone()) } else { (hide(*p0), hide(*p1)) };
        let (q0, q1) = (hide(*q0), hide(*q1));
        sent.push(commitments);
        first_layers.push([p0, p1, q0, q1]);
    }
    absorb_points(transcript, &sent);
    let mu = transcript.challenge_field(LABEL_LINE);
    let mut point = vec![mu];
    let mut claims: Vec<(CommittedValue, CommittedValue)> = first_layers
        .iter()
        .map(|[p0, p1, q0, q1]| (LinearValue::line(p0, p1, mu), LinearValue::line(q0, q1, mu)))
        .collect();
    let mut leaves = vec![None; shapes.len()];
    finish(&mut leaves, &shapes, &point, &claims, 1);

    let deepest = shapes.iter().map(|(n, _)| *n).max().unwrap_or(1);
    let mut proofs = Vec::with_capacity(deepest.saturating_sub(1));
    for depth in 1..deepest {
        let lambda = transcript.challenge_field(LABEL_LAMBDA);
        let active: Vec<usize> = (0..shapes.len()).filter(|&t| shapes[t].0 > depth).collect();
        let mut zk_shapes = Vec::with_capacity(active.len());
        let mut instances = Vec::with_capacity(active.len());
        let mut sums = Vec::with_capacity(active.len());
        for &t in &active {
            let (n, unit) = shapes[t];
            zk_shapes.push(member_shape(unit_layer(n, unit, depth), lambda)?);
            instances.push(layers.layer_instance(t, depth, &point, lambda)?);
            let (p, q) = &claims[t];
            sums.push(p.add_scaled(lambda, q));
        }
        let members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)> = zk_shapes
            .iter()
            .zip(instances.iter_mut())
            .map(|(z, i)| (z, i as &mut dyn FinalEvaluations))
            .collect();
        let (proof, outs, openings) =
            prove_zk_batched_products(params, members, &sums, masks, transcript, rng)?;
        drop(instances);
        let mu = transcript.challenge_field(LABEL_LINE);
        for ((&t, out), openings) in active.iter().zip(&outs).zip(&openings) {
            let hidden: Vec<CommittedValue> = out
                .values
                .iter()
                .zip(openings)
                .filter_map(|(value, opening)| match (value, opening) {
                    (FactorValue::Hidden(c), Some(o)) => Some(CommittedValue::new(*c, *o)),
                    _ => None,
                })
                .collect();
            claims[t] = next_claims(&hidden, &one, mu)?;
        }
        point = outs.first().map(|o| o.point.clone()).unwrap_or_default();
        point.push(mu);
        finish(&mut leaves, &shapes, &point, &claims, depth + 1);
        proofs.push(proof);
    }
    Ok((ZkFractionSumProof { first_layers: sent, layers: proofs }, results(first_layers, leaves)?))
}

/// The next claims from a layer's committed values at the line point `μ`.
fn next_claims<V: LinearValue>(hidden: &[V], one: &V, mu: Fr) -> Result<(V, V), LookupError> {
    match hidden {
        [q0, q1] => Ok((one.clone(), V::line(q0, q1, mu))),
        [p0, p1, q0, q1] => Ok((V::line(p0, p1, mu), V::line(q0, q1, mu))),
        _ => Err(LookupError::MalformedProof("wrong number of layer values")),
    }
}

/// Verifies [`prove_fraction_sums_zk`] for trees of the given `(num_vars, unit_leaves)`, with
/// the group equations left in `checks`. Returns each tree's committed first layer and leaf
/// claim, whose relations the caller must check.
///
/// # Errors
/// [`LookupError::MalformedProof`] for wrong counts, [`LookupError::LayerMismatch`] for a
/// wrong public eq value, and the masked sum-checks' errors.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_fraction_sums_zk(
    params: &HyraxParams,
    trees: &[(usize, bool)],
    proof: &ZkFractionSumProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<Vec<ZkFractionTree<Combination>>, LookupError> {
    let deepest = trees.iter().map(|(n, _)| *n).max().unwrap_or(0);
    if trees.is_empty() || trees.iter().any(|(n, _)| *n == 0) {
        return Err(LookupError::MalformedProof("every tree needs a variable"));
    }
    if proof.first_layers.len() != trees.len() || proof.layers.len() != deepest - 1 {
        return Err(LookupError::MalformedProof("wrong number of layers"));
    }
    let one = Combination::constant(params, Fr::one());
    let mut first_layers = Vec::with_capacity(trees.len());
    for (sent, &(n, unit)) in proof.first_layers.iter().zip(trees) {
        let point = |c: &G1Affine| Combination::point(*c);
        let layer = match (sent.as_slice(), unit && n == 1) {
            ([q0, q1], true) => [one.clone(), one.clone(), point(q0), point(q1)],
            ([p0, p1, q0, q1], false) => [point(p0), point(p1), point(q0), point(q1)],
            _ => return Err(LookupError::MalformedProof("wrong number of first-layer commitments")),
        };
        first_layers.push(layer);
    }
    absorb_points(transcript, &proof.first_layers);
    let mu = transcript.challenge_field(LABEL_LINE);
    let mut point = vec![mu];
    let mut claims: Vec<(Combination, Combination)> = first_layers
        .iter()
        .map(|[p0, p1, q0, q1]| (LinearValue::line(p0, p1, mu), LinearValue::line(q0, q1, mu)))
        .collect();
    let mut leaves = vec![None; trees.len()];
    finish(&mut leaves, trees, &point, &claims, 1);
    for (index, layer) in proof.layers.iter().enumerate() {
        let depth = index + 1;
        let lambda = transcript.challenge_field(LABEL_LAMBDA);
        let active: Vec<usize> =
            (0..trees.len()).filter(|&t| trees.get(t).is_some_and(|(n, _)| *n > depth)).collect();
        let mut zk_shapes = Vec::with_capacity(active.len());
        let mut sums = Vec::with_capacity(active.len());
        for &t in &active {
            let (Some(&(n, unit)), Some((p, q))) = (trees.get(t), claims.get(t)) else {
                return Err(LookupError::MalformedProof("tree index"));
            };
            zk_shapes.push(member_shape(unit_layer(n, unit, depth), lambda)?);
            sums.push(p.plus_scaled(lambda, q));
        }
        let members: Vec<BatchMember<'_>> = zk_shapes.iter().map(|z| (z, depth)).collect();
        let outs =
            verify_zk_batched_products_deferred(params, &members, &sums, layer, masks, transcript, checks)?;
        let mu = transcript.challenge_field(LABEL_LINE);
        let reduced = outs.first().map(|o| o.point.clone()).unwrap_or_default();
        let eq = eq_evaluation(&point, &reduced)?;
        for (&t, out) in active.iter().zip(&outs) {
            let hidden = check_layer_values(out, eq, depth)?;
            let next = next_claims(&hidden, &one, mu)?;
            if let Some(slot) = claims.get_mut(t) {
                *slot = next;
            }
        }
        point = reduced;
        point.push(mu);
        finish(&mut leaves, trees, &point, &claims, depth + 1);
    }
    results(first_layers, leaves)
}

/// The public eq value must be `eq(r, ρ)`; returns the committed values.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn check_layer_values(out: &ZkProductClaims, eq: Fr, depth: usize) -> Result<Vec<Combination>, LookupError> {
    let mut hidden = Vec::with_capacity(4);
    for (k, value) in out.values.iter().enumerate() {
        match (k, value) {
            (0, FactorValue::Public(v)) if *v == eq => {}
            (0, _) => return Err(LookupError::LayerMismatch { layer: depth + 1 }),
            (_, FactorValue::Hidden(c)) => hidden.push(Combination::point(*c)),
            (_, FactorValue::Public(_)) => {
                return Err(LookupError::MalformedProof("a layer value in the clear"));
            }
        }
    }
    Ok(hidden)
}
