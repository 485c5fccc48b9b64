//! The zero-knowledge sum-check of a sum of products, ending on committed factor values.
//!
//! ```text
//! in:   shape g = Σ_t c_t·Π_{k∈T_t} f_k, which factors are public (the verifier evaluates them
//!       itself: eq tables, selectors), C_S (commits to S = Σ_x g(x))
//! P ↔ V zero-knowledge sum-check (crate::sumcheck) → point r, C_g (commits to g(r))
//! P → V public factors' values f_k(r) in the clear; C_k = f_k(r)·U + β_k·H for the others
//!       λ_t = c_t·Π_{public k ∈ T_t} f_k(r); a term with hidden factors h_1 … h_m:
//!       m = 0, 1   linear: λ_t·U or λ_t·C_{h_1} moves into the target
//!       m = 2      the quadratic term x·(λ_t·C_y), x the one of h_1, h_2 that more terms share
//!       m > 2      P → V commitments to the partial products P_1 = h_1·h_2, …, P_{m−2}, each a
//!                  relation "C_{P_j} commits to P_{j−1}·h_{j+1}"; the term is P_{m−2}·(λ_t·C_{h_m})
//! P ↔ V one relations proof (crate::relation): C_g − Σ linear terms commits to Σ quadratic
//!       terms, and every partial product is its product
//! out:  per factor, its public value or its commitment C_k at r — the caller must check the
//!       public ones and carry the committed ones into the next sub-protocol
//!
//! batch several claims C_{S_i} on g_i (n_i variables): absorb (count, n_i, d_i, C_{S_i}),
//!       draw α_i; the zero-knowledge sum-check of Σ_i α_i·g_i (zkmha_sumcheck::Batch) from
//!       Σ_i α_i·2^{n−n_i}·C_{S_i}; g_i's factors at r[..n_i]; the relation
//!       C_g = Σ_i α_i·Σ_t term_{i,t} as above
//! ```

use crate::ZkError;
use crate::deferred::DeferredChecks;
use crate::pedersen::ValueOpening;
use crate::relation::{
    Combination, CommittedValue, ProverRelation, QuadraticRelation, RelationsProof, absorb_combinations,
};
use crate::sumcheck::{
    ProverMasks, VerifierMasks, ZkSumcheckProof, prove_claim_absorbed, prove_zk_sumcheck_committed,
    verify_claim_absorbed, verify_zk_sumcheck_committed_deferred,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{CryptoRng, RngCore};
use zkmha_field::{Field, Fr, One, Zero};
use zkmha_pcs::{G1Affine, HyraxParams};
use zkmha_sumcheck::{Batch, FinalEvaluations, SumOfProducts, SumcheckError, SumcheckInstance};
use zkmha_transcript::Transcript;

const LABEL_PUBLIC_VALUES: &[u8] = b"zk/product/public-values";
const LABEL_HIDDEN_VALUES: &[u8] = b"zk/product/hidden-values";
const LABEL_BATCH_STATEMENT: &[u8] = b"zk/product/batch-statement";
const LABEL_BATCH_COEFFICIENTS: &[u8] = b"zk/product/batch-coefficients";

/// A zero-knowledge proof of a sum-of-products sum-check (or of a batch of them).
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct ZkProductProof {
    /// The masked sum-check, ending on `C_g`.
    pub sumcheck: ZkSumcheckProof,
    /// The factors' values and the proofs that they give `C_g`.
    pub factors: FactorValuesProof,
}

/// The factor values at the end of a sum-check and the proofs that they give its final value.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct FactorValuesProof {
    /// `f_k(r)` of the public factors, in factor order (members in order).
    pub public_values: Vec<Fr>,
    /// `C_k` of the hidden factors, in factor order (members in order).
    pub hidden_values: Vec<G1Affine>,
    /// Commitments to the partial products of terms with more than two hidden factors.
    pub partial_products: Vec<G1Affine>,
    /// That the hidden values give `C_g`, and the partial products their products.
    pub relations: RelationsProof,
}

/// A factor's value at the final point: in the clear (public factors) or committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorValue {
    /// The value, for the caller to check against its own evaluation.
    Public(Fr),
    /// A commitment to the value, for the caller to carry on.
    Hidden(G1Affine),
}

/// The factors' values at the sum-check's point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkProductClaims {
    /// The point, in variable order.
    pub point: Vec<Fr>,
    /// One per factor, in shape order.
    pub values: Vec<FactorValue>,
}

/// A sum of products and which of its factors are public (evaluated by the verifier itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkProductShape {
    shape: SumOfProducts,
    public: Vec<bool>,
}

impl ZkProductShape {
    /// `public[k]` marks factor `k` as public.
    ///
    /// # Errors
    /// [`ZkError::Sumcheck`] unless there is one flag per factor.
    pub fn new(shape: SumOfProducts, public: Vec<bool>) -> Result<Self, ZkError> {
        if public.len() != shape.num_mles() {
            return Err(ZkError::Sumcheck(SumcheckError::WrongLength {
                what: "public-factor flags",
                expected: shape.num_mles(),
                got: public.len(),
            }));
        }
        Ok(Self { shape, public })
    }

    /// The sum of products.
    pub fn shape(&self) -> &SumOfProducts {
        &self.shape
    }

    /// The public-factor flags.
    pub fn public(&self) -> &[bool] {
        &self.public
    }
}

/// A term: `c_t`, its public factors, its hidden factors (global numbers) in the order they
/// are multiplied.
type PlannedTerm = (Fr, Vec<usize>, Vec<usize>);

/// How the hidden factors of a batch enter the relations (the same walk for prover and
/// verifier, from the shapes alone). Hidden factors are numbered across members in order.
struct RelationPlan {
    /// Per member, per term.
    terms: Vec<Vec<PlannedTerm>>,
    /// The relation proof's factors: hidden factors (global numbers) and partial products
    /// (`Err(p)`: the `p`-th partial product), in order of first use.
    factors: Vec<Result<usize, usize>>,
}

/// The plan: a term with one hidden factor or none is linear (it moves to the target); a
/// term with two is one quadratic term, its relation factor the one of the two that more
/// two-factor terms share (so `p0·q1 + p1·q0 + λ·q0·q1` needs two relation factors, not
/// three); a term with `m > 2` chains `m − 2` committed partial products.
fn relation_plan(members: &[&ZkProductShape]) -> RelationPlan {
    let mut terms = Vec::with_capacity(members.len());
    let mut factors: Vec<Result<usize, usize>> = Vec::new();
    let mut offset = 0;
    let mut partials = 0;
    for zk_shape in members {
        let public = zk_shape.public.as_slice();
        let hidden_number = |k: usize| offset + public.iter().take(k).filter(|p| !**p).count();
        let mut frequency = vec![0usize; public.len()];
        for term in zk_shape.shape.terms() {
            let hidden: Vec<usize> =
                term.factors.iter().copied().filter(|k| !public.get(*k).copied().unwrap_or(true)).collect();
            if hidden.len() == 2 {
                for k in hidden {
                    if let Some(f) = frequency.get_mut(k) {
                        *f += 1;
                    }
                }
            }
        }
        let mut member_terms = Vec::with_capacity(zk_shape.shape.terms().len());
        for term in zk_shape.shape.terms() {
            let (mut public_factors, mut hidden) = (Vec::new(), Vec::new());
            for &k in &term.factors {
                if public.get(k).copied().unwrap_or(true) {
                    public_factors.push(k);
                } else {
                    hidden.push(k);
                }
            }
            if let [a, b] = hidden.as_slice() {
                let count = |k: &usize| frequency.get(*k).copied().unwrap_or(0);
                if count(b) > count(a) {
                    hidden.swap(0, 1);
                }
            }
            if hidden.len() >= 2 {
                let first = Ok(hidden_number(hidden.first().copied().unwrap_or(0)));
                if !factors.contains(&first) {
                    factors.push(first);
                }
                for _ in 2..hidden.len() {
                    factors.push(Err(partials));
                    partials += 1;
                }
            }
            let hidden_numbers = hidden.iter().map(|&k| hidden_number(k)).collect();
            member_terms.push((term.coefficient, public_factors, hidden_numbers));
        }
        offset += public.iter().filter(|p| !**p).count();
        terms.push(member_terms);
    }
    RelationPlan { terms, factors }
}

/// The relations of a plan, built from values `V` (the prover's committed values, or the
/// verifier's combinations) with `scale(v, λ)`, `add(a, λ, b)` and `unit` (the public 1).
struct Built<V> {
    factors: Vec<V>,
    /// `(target, terms)` of each relation: the partial products' first, the final one last.
    relations: Vec<(V, Vec<(usize, V)>)>,
}

#[allow(clippy::too_many_arguments)]
fn build_relations<V: Clone>(
    plan: &RelationPlan,
    scales: &[Fr],
    public_values: &[Vec<Fr>],
    hidden: &[V],
    partials: &[V],
    final_value: V,
    unit: V,
    scale: impl Fn(&V, Fr) -> V,
    add: impl Fn(&V, Fr, &V) -> V,
) -> Option<Built<V>> {
    let factor_of = |f: &Result<usize, usize>| match f {
        Ok(h) => hidden.get(*h).cloned(),
        Err(p) => partials.get(*p).cloned(),
    };
    let factors = plan.factors.iter().map(factor_of).collect::<Option<Vec<V>>>()?;
    let index_of = |f: Result<usize, usize>| plan.factors.iter().position(|g| *g == f);
    let mut relations = Vec::new();
    let mut target = final_value;
    let mut final_terms = Vec::new();
    let mut partial = 0;
    for ((member_terms, scale_i), values) in plan.terms.iter().zip(scales).zip(public_values) {
        for (coefficient, public_factors, hidden_numbers) in member_terms {
            let mut lambda = *scale_i * coefficient;
            for k in public_factors {
                lambda *= values.get(*k).copied()?;
            }
            match hidden_numbers.as_slice() {
                [] => target = add(&target, -lambda, &unit),
                [h] => target = add(&target, -lambda, hidden.get(*h)?),
                [first, rest @ ..] => {
                    let (last, middle) = rest.split_last()?;
                    let mut running = index_of(Ok(*first))?;
                    for h in middle {
                        let product = index_of(Err(partial))?;
                        relations
                            .push((partials.get(partial)?.clone(), vec![(running, hidden.get(*h)?.clone())]));
                        partial += 1;
                        running = product;
                    }
                    final_terms.push((running, scale(hidden.get(*last)?, lambda)));
                }
            }
        }
    }
    relations.push((target, final_terms));
    Some(Built { factors, relations })
}

fn absorb_values(transcript: &mut Transcript, public: &[Fr], hidden: &[G1Affine], partial: &[G1Affine]) {
    transcript.append_fields(LABEL_PUBLIC_VALUES, public);
    let mut bytes = Vec::with_capacity(32 * (hidden.len() + partial.len()));
    for point in hidden.iter().chain(partial) {
        let _ = point.serialize_compressed(&mut bytes);
    }
    transcript.append_bytes(LABEL_HIDDEN_VALUES, &bytes);
}

fn malformed(what: &'static str) -> ZkError {
    ZkError::MalformedRelation(what)
}

/// The prover's side of the relation `C_g = Σ_i scale_i·g_i(point_i)` for members given by
/// their shapes, weights and factor values.
#[allow(clippy::type_complexity)]
fn prove_factor_values<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    members: &[(&ZkProductShape, Fr, Vec<Fr>)],
    final_value: CommittedValue,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(FactorValuesProof, Vec<Vec<FactorValue>>, Vec<Vec<Option<ValueOpening>>>), ZkError> {
    let (mut public_values, mut hidden_values) = (Vec::new(), Vec::new());
    let (mut all_values, mut all_openings) = (Vec::new(), Vec::new());
    let mut hidden = Vec::new();
    for (zk_shape, _, evaluations) in members {
        let public = zk_shape.public.as_slice();
        if evaluations.len() != public.len() {
            return Err(ZkError::Sumcheck(SumcheckError::WrongLength {
                what: "factor values",
                expected: public.len(),
                got: evaluations.len(),
            }));
        }
        let mut openings = Vec::with_capacity(evaluations.len());
        let mut values = Vec::with_capacity(evaluations.len());
        for (is_public, value) in public.iter().zip(evaluations) {
            if *is_public {
                public_values.push(*value);
                values.push(FactorValue::Public(*value));
                openings.push(None);
            } else {
                let opening = ValueOpening::hide(*value, rng);
                let commitment = G1Affine::from(opening.commit(params));
                hidden_values.push(commitment);
                hidden.push(CommittedValue::new(commitment, opening));
                values.push(FactorValue::Hidden(commitment));
                openings.push(Some(opening));
            }
        }
        all_values.push(values);
        all_openings.push(openings);
    }
    let shapes: Vec<&ZkProductShape> = members.iter().map(|(z, _, _)| *z).collect();
    let plan = relation_plan(&shapes);
    // The partial products' values, in chain order.
    let mut partials = Vec::new();
    let mut partial_commitments = Vec::new();
    for member_terms in &plan.terms {
        for (_, _, hidden_numbers) in member_terms {
            let mut running = hidden_numbers.first().and_then(|h| hidden.get(*h)).map(|v| v.opening.value);
            for h in hidden_numbers.iter().skip(1).take(hidden_numbers.len().saturating_sub(2)) {
                let value =
                    running.unwrap_or_default() * hidden.get(*h).map(|v| v.opening.value).unwrap_or_default();
                let opening = ValueOpening::hide(value, rng);
                let commitment = G1Affine::from(opening.commit(params));
                partial_commitments.push(commitment);
                partials.push(CommittedValue::new(commitment, opening));
                running = Some(value);
            }
        }
    }
    absorb_values(transcript, &public_values, &hidden_values, &partial_commitments);
    let scales: Vec<Fr> = members.iter().map(|(_, s, _)| *s).collect();
    let evaluations: Vec<Vec<Fr>> = members.iter().map(|(_, _, e)| e.clone()).collect();
    let built = build_relations(
        &plan,
        &scales,
        &evaluations,
        &hidden,
        &partials,
        final_value,
        CommittedValue::public(params, Fr::one()),
        |v, l| v.scaled(l),
        |a, l, b| a.add_scaled(l, b),
    )
    .ok_or(malformed("the factor values do not fit the shapes"))?;
    let relations: Vec<ProverRelation> =
        built.relations.into_iter().map(|(target, terms)| ProverRelation { target, terms }).collect();
    let relations_proof = RelationsProof::prove(params, &built.factors, &relations, transcript, rng)?;
    let proof = FactorValuesProof {
        public_values,
        hidden_values,
        partial_products: partial_commitments,
        relations: relations_proof,
    };
    Ok((proof, all_values, all_openings))
}

/// The verifier's side of [`prove_factor_values`]: the members' factor values, with the
/// relations' equation left in `checks`.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn verify_factor_values(
    params: &HyraxParams,
    members: &[(&ZkProductShape, Fr)],
    final_commitment: Combination,
    proof: &FactorValuesProof,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<Vec<Vec<FactorValue>>, ZkError> {
    let wrong = |what, expected, got| ZkError::Sumcheck(SumcheckError::WrongLength { what, expected, got });
    let flags = || members.iter().flat_map(|(z, _)| z.public.iter());
    let public_count = flags().filter(|p| **p).count();
    let hidden_count = flags().count() - public_count;
    if proof.public_values.len() != public_count {
        return Err(wrong("public factor values", public_count, proof.public_values.len()));
    }
    if proof.hidden_values.len() != hidden_count {
        return Err(wrong("hidden factor commitments", hidden_count, proof.hidden_values.len()));
    }
    let shapes: Vec<&ZkProductShape> = members.iter().map(|(z, _)| *z).collect();
    let plan = relation_plan(&shapes);
    let expected_partials = plan.factors.iter().filter(|f| f.is_err()).count();
    if proof.partial_products.len() != expected_partials {
        return Err(wrong("partial products", expected_partials, proof.partial_products.len()));
    }
    absorb_values(transcript, &proof.public_values, &proof.hidden_values, &proof.partial_products);
    let (mut public_iter, mut hidden_iter) = (proof.public_values.iter(), proof.hidden_values.iter());
    let mut all_values = Vec::with_capacity(members.len());
    let mut public_values = Vec::with_capacity(members.len());
    for (zk_shape, _) in members {
        let mut values = Vec::with_capacity(zk_shape.public.len());
        let mut publics = Vec::with_capacity(zk_shape.public.len());
        for is_public in &zk_shape.public {
            let value = if *is_public {
                public_iter.next().map(|v| FactorValue::Public(*v))
            } else {
                hidden_iter.next().map(|c| FactorValue::Hidden(*c))
            };
            let value = value.ok_or(wrong("factor values", zk_shape.public.len(), 0))?;
            publics.push(match value {
                FactorValue::Public(v) => v,
                FactorValue::Hidden(_) => Fr::zero(),
            });
            values.push(value);
        }
        all_values.push(values);
        public_values.push(publics);
    }
    let hidden: Vec<Combination> = proof.hidden_values.iter().map(|c| Combination::point(*c)).collect();
    let partials: Vec<Combination> = proof.partial_products.iter().map(|c| Combination::point(*c)).collect();
    let scales: Vec<Fr> = members.iter().map(|(_, s)| *s).collect();
    let built = build_relations(
        &plan,
        &scales,
        &public_values,
        &hidden,
        &partials,
        final_commitment,
        Combination::point(params.value_generator),
        |v, l| v.scaled(l),
        |a, l, b| a.clone().add_scaled(l, b),
    )
    .ok_or(malformed("the factor values do not fit the shapes"))?;
    let relations: Vec<QuadraticRelation> =
        built.relations.into_iter().map(|(target, terms)| QuadraticRelation { target, terms }).collect();
    proof.relations.verify_deferred(params, &built.factors, &relations, transcript, checks)?;
    Ok(all_values)
}

fn degree_error() -> ZkError {
    ZkError::Sumcheck(SumcheckError::InvalidClaim("the instance's degree is not the shape's"))
}

/// Proves `Σ_x g(x) = S` for the committed `S` in zero knowledge; the shape marks the factors
/// the verifier evaluates itself. Returns the proof, the factor claims and the openings of the
/// hidden factors' commitments (in factor order, `None` for public factors).
///
/// # Errors
/// As [`prove_zk_sumcheck`], and [`ZkError::Sumcheck`] when the instance's degree differs
/// from the shape's.
#[allow(clippy::type_complexity)]
pub fn prove_zk_product<I: FinalEvaluations + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    zk_shape: &ZkProductShape,
    instance: &mut I,
    (claim_commitment, claim): (G1Affine, &ValueOpening),
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkProductProof, ZkProductClaims, Vec<Option<ValueOpening>>), ZkError> {
    let claim = CommittedValue::new(claim_commitment, *claim);
    // The degree is checked there.
    prove_zk_product_combined(params, zk_shape, instance, &claim, masks, transcript, rng)
}

/// [`prove_zk_product`] for a claim given as a combination of commitments (never evaluated:
/// absorbed as its pairs, which costs no group operation).
///
/// # Errors
/// As [`prove_zk_product`].
pub fn prove_zk_product_combined<I: FinalEvaluations + ?Sized, R: RngCore + CryptoRng>(
    params: &HyraxParams,
    zk_shape: &ZkProductShape,
    instance: &mut I,
    claim: &CommittedValue,
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkProductProof, ZkProductClaims, Vec<Option<ValueOpening>>), ZkError> {
    if instance.degree() != zk_shape.shape.degree() {
        return Err(degree_error());
    }
    let (sumcheck, point, final_value) =
        prove_zk_sumcheck_committed(params, instance, claim, masks, transcript, rng)?;
    let members = [(zk_shape, Fr::one(), instance.final_evaluations())];
    let (factors, values, openings) = prove_factor_values(params, &members, final_value, transcript, rng)?;
    let claims = ZkProductClaims { point, values: values.into_iter().next().unwrap_or_default() };
    Ok((ZkProductProof { sumcheck, factors }, claims, openings.into_iter().next().unwrap_or_default()))
}

/// Verifies [`prove_zk_product`]'s proof for `num_vars` variables, with its group equations
/// left in `checks` and its mask's value in `masks`.
///
/// # Errors
/// As [`verify_zk_sumcheck_deferred`]; [`ZkError::Sumcheck`] for wrong numbers of values.
/// The equations in `checks` fail ([`ZkError::ProductMismatch`], [`ZkError::OpeningMismatch`])
/// when the committed values do not give the sum-check's final value. The caller must check
/// the public values.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
pub fn verify_zk_product_deferred(
    params: &HyraxParams,
    zk_shape: &ZkProductShape,
    num_vars: usize,
    claim_commitment: G1Affine,
    proof: &ZkProductProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<ZkProductClaims, ZkError> {
    verify_zk_product_combined_deferred(
        params,
        zk_shape,
        num_vars,
        &Combination::point(claim_commitment),
        proof,
        masks,
        transcript,
        checks,
    )
}

/// Verifies [`prove_zk_product_combined`]'s proof: as [`verify_zk_product_deferred`] for a
/// claim given as a combination.
///
/// # Errors
/// As [`verify_zk_product_deferred`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[allow(clippy::too_many_arguments)]
pub fn verify_zk_product_combined_deferred(
    params: &HyraxParams,
    zk_shape: &ZkProductShape,
    num_vars: usize,
    claim: &Combination,
    proof: &ZkProductProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<ZkProductClaims, ZkError> {
    let (point, commitment) = verify_zk_sumcheck_committed_deferred(
        params,
        num_vars,
        zk_shape.shape.degree(),
        claim,
        &proof.sumcheck,
        masks,
        transcript,
        checks,
    )?;
    let values = verify_factor_values(
        params,
        &[(zk_shape, Fr::one())],
        commitment,
        &proof.factors,
        transcript,
        checks,
    )?;
    Ok(ZkProductClaims { point, values: values.into_iter().next().unwrap_or_default() })
}

/// A member of a zero-knowledge batch: its shape and its number of variables.
pub type BatchMember<'a> = (&'a ZkProductShape, usize);

/// Absorbs the batch's statement — the shapes and every member's claim (as its pairs) — and
/// draws the members' weights `α_i`: the combined claim `Σ_i α_i·2^{n−n_i}·C_i` is then fixed
/// by the transcript and not absorbed again.
fn absorb_batch_statement<'a>(
    transcript: &mut Transcript,
    members: &[BatchMember<'_>],
    claims: impl IntoIterator<Item = &'a Combination>,
) -> Vec<Fr> {
    let mut shape = vec![members.len()];
    for (zk_shape, num_vars) in members {
        shape.extend([*num_vars, zk_shape.shape.degree()]);
    }
    transcript.append_shape(LABEL_BATCH_STATEMENT, &shape);
    absorb_combinations(transcript, LABEL_BATCH_STATEMENT, claims);
    transcript.challenge_fields(LABEL_BATCH_COEFFICIENTS, members.len())
}

/// `Σ_i α_i·2^{n−n_i}·C_i` and each member's weight `α_i·2^{n−n_i}`.
fn batch_weights(members: &[BatchMember<'_>], coefficients: &[Fr]) -> (usize, Vec<Fr>) {
    let num_vars = members.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let weights = members
        .iter()
        .zip(coefficients)
        .map(|((_, n), a)| *a * Fr::from(2u64).pow([(num_vars - n) as u64]))
        .collect();
    (num_vars, weights)
}

/// Proves several committed claims `Σ_x g_i(x) = S_i` (sums of products, any numbers of
/// variables) with one zero-knowledge sum-check. The claims are combinations of commitments,
/// absorbed (as their pairs) before the members' weights are drawn. Returns the proof, per
/// member its factor claims (at the lowest `n_i` coordinates of the shared point) and its
/// hidden factors' openings.
///
/// # Errors
/// [`ZkError::Sumcheck`] for lists of different lengths, an empty batch or a degree that is
/// not the shape's, and the errors of [`prove_zk_sumcheck`].
#[allow(clippy::type_complexity)]
pub fn prove_zk_batched_products<R: RngCore + CryptoRng>(
    params: &HyraxParams,
    members: Vec<(&ZkProductShape, &mut dyn FinalEvaluations)>,
    claims: &[CommittedValue],
    masks: &mut ProverMasks,
    transcript: &mut Transcript,
    rng: &mut R,
) -> Result<(ZkProductProof, Vec<ZkProductClaims>, Vec<Vec<Option<ValueOpening>>>), ZkError> {
    if members.len() != claims.len() {
        return Err(ZkError::Sumcheck(SumcheckError::WrongLength {
            what: "batch claims",
            expected: members.len(),
            got: claims.len(),
        }));
    }
    if members.iter().any(|(z, i)| i.degree() != z.shape.degree()) {
        return Err(degree_error());
    }
    let shapes: Vec<BatchMember<'_>> = members.iter().map(|(z, i)| (*z, i.num_vars())).collect();
    let coefficients = absorb_batch_statement(transcript, &shapes, claims.iter().map(|c| &c.commitment));
    let (num_vars, weights) = batch_weights(&shapes, &coefficients);
    let combined = claims
        .iter()
        .zip(&weights)
        .fold(CommittedValue::public(params, Fr::zero()), |acc, (claim, w)| acc.add_scaled(*w, claim));
    let sums: Vec<Fr> = claims.iter().map(|c| c.opening.value).collect();
    let mut zk_shapes = Vec::with_capacity(members.len());
    let mut instances = Vec::with_capacity(members.len());
    for (zk_shape, instance) in members {
        zk_shapes.push(zk_shape);
        instances.push(instance);
    }
    let (sumcheck, point, final_value) = {
        let dyn_instances: Vec<&mut dyn SumcheckInstance> =
            instances.iter_mut().map(|i| &mut **i as &mut dyn SumcheckInstance).collect();
        let mut batch = Batch::new(dyn_instances, &sums, &coefficients)?;
        prove_claim_absorbed(params, &mut batch, &combined, masks, transcript, rng)?
    };
    debug_assert_eq!(point.len(), num_vars);
    let evaluated: Vec<(&ZkProductShape, Fr, Vec<Fr>)> = zk_shapes
        .iter()
        .zip(&coefficients)
        .zip(&instances)
        .map(|((z, a), i)| (*z, *a, i.final_evaluations()))
        .collect();
    let (factors, values, openings) = prove_factor_values(params, &evaluated, final_value, transcript, rng)?;
    let claims = shapes
        .iter()
        .zip(values)
        .map(|((_, n), values)| ZkProductClaims {
            point: point.get(..*n).unwrap_or_default().to_vec(),
            values,
        })
        .collect();
    Ok((ZkProductProof { sumcheck, factors }, claims, openings))
}

/// Verifies [`prove_zk_batched_products`] for members of the given shapes and numbers of
/// variables and the (combinations of) commitments to their sums, with the group equations
/// left in `checks`.
///
/// # Errors
/// [`ZkError::Sumcheck`] for an empty batch or lists of different lengths, and as
/// [`verify_zk_product_deferred`]. The caller must check every member's public values.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_zk_batched_products_deferred(
    params: &HyraxParams,
    members: &[BatchMember<'_>],
    claims: &[Combination],
    proof: &ZkProductProof,
    masks: &mut VerifierMasks,
    transcript: &mut Transcript,
    checks: &mut DeferredChecks,
) -> Result<Vec<ZkProductClaims>, ZkError> {
    if members.len() != claims.len() {
        return Err(ZkError::Sumcheck(SumcheckError::WrongLength {
            what: "batch claims",
            expected: members.len(),
            got: claims.len(),
        }));
    }
    if members.is_empty() {
        return Err(ZkError::Sumcheck(SumcheckError::InvalidClaim("a batch needs at least one claim")));
    }
    let coefficients = absorb_batch_statement(transcript, members, claims);
    let (num_vars, weights) = batch_weights(members, &coefficients);
    let degree = members.iter().map(|(z, _)| z.shape.degree()).max().unwrap_or(1);
    let combined =
        claims.iter().zip(&weights).fold(Combination::default(), |acc, (c, w)| acc.add_scaled(*w, c));
    let (point, commitment) = verify_claim_absorbed(
        params,
        num_vars,
        degree,
        &combined,
        &proof.sumcheck,
        masks,
        transcript,
        checks,
    )?;
    let weighted: Vec<(&ZkProductShape, Fr)> =
        members.iter().zip(&coefficients).map(|((z, _), a)| (*z, *a)).collect();
    let values = verify_factor_values(params, &weighted, commitment, &proof.factors, transcript, checks)?;
    Ok(members
        .iter()
        .zip(values)
        .map(|((_, n), values)| ZkProductClaims {
            point: point.get(..*n).unwrap_or_default().to_vec(),
            values,
        })
        .collect())
}
