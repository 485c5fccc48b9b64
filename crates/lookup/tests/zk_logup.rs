//! Zero-knowledge logUp: round trips whose committed claims open to the plain columns' MLEs,
//! hidden values, and one tamper test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};
use zkmha_lookup::*;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{G1Affine, HyraxParams, ZkInnerProductProof};
use zkmha_transcript::Transcript;
use zkmha_zk::mode::{Zk, ZkProver, ZkVerifier};
use zkmha_zk::{
    Combination, CommittedValue, DeferredChecks, MaskSchedule, ProverMasks, VerifierMasks, ZkError,
};

/// The zero-knowledge proof.
type ZkLookupProof = LookupProofOf<Zk>;

const DOMAIN: &[u8] = b"zk-logup-test";

type Evaluator = Box<dyn Fn(&[Fr]) -> Result<Vec<Fr>, LookupError>>;
type Entry = Box<dyn Fn(usize, usize) -> i64 + Sync>;

fn random_column(n: usize, bits: usize, rng: &mut ChaCha20Rng) -> Vec<i64> {
    (0..1usize << n).map(|_| rng.gen_range(0..1i64 << bits)).collect()
}

fn square_table(bits: usize) -> FunctionTable {
    FunctionTable::new("square", bits, (0..1i64 << bits).map(|y| y * y - 7).collect()).unwrap()
}

/// One lookup's data: table, columns, multiplicities.
struct Case {
    table: Box<dyn LookupTable>,
    columns: Vec<Vec<i64>>,
    counts: Vec<i64>,
}

impl Case {
    fn range(bits: usize, n: usize, rng: &mut ChaCha20Rng) -> Self {
        let table = RangeTable::new(bits).unwrap();
        let column = random_column(n, bits, rng);
        let counts = multiplicities(&table, &[&column]).unwrap();
        Self { table: Box::new(table), columns: vec![column], counts }
    }

    fn square(bits: usize, n: usize, rng: &mut ChaCha20Rng) -> Self {
        let table = square_table(bits);
        let inputs = random_column(n, bits, rng);
        let outputs: Vec<i64> = inputs.iter().map(|x| x * x - 7).collect();
        let counts = multiplicities(&table, &[&inputs, &outputs]).unwrap();
        Self { table: Box::new(table), columns: vec![inputs, outputs], counts }
    }

    fn witness_vars(&self) -> usize {
        self.columns[0].len().trailing_zeros() as usize
    }

    fn statement(&self) -> (&dyn LookupTable, usize) {
        (self.table.as_ref(), self.witness_vars())
    }
}

fn schedule(cases: &[Case]) -> MaskSchedule {
    let statements: Vec<(&dyn LookupTable, usize)> = cases.iter().map(Case::statement).collect();
    MaskSchedule(zk_lookup_schedule(&statements))
}

fn params(cases: &[Case]) -> HyraxParams {
    HyraxParams::new((2 * schedule(cases).generator_vars()).max(2))
}

struct Proved {
    proof: ZkLookupProof,
    claims: Vec<LookupClaims<CommittedValue>>,
    masks: (G1Affine, ZkInnerProductProof),
}

fn prove(params: &HyraxParams, cases: &[Case], seed: u64) -> Proved {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let evaluators: Vec<Evaluator> = cases
        .iter()
        .map(|c| {
            let columns = c.columns.clone();
            let n = c.witness_vars();
            Box::new(move |point: &[Fr]| {
                Ok(columns
                    .iter()
                    .map(|column| {
                        DenseMultilinearExtension::from_i64(n, column).unwrap().evaluate(point).unwrap()
                    })
                    .collect())
            }) as Evaluator
        })
        .collect();
    let entries: Vec<Entry> = cases
        .iter()
        .map(|c| {
            let columns = c.columns.clone();
            Box::new(move |row: usize, column: usize| columns[column][row]) as Entry
        })
        .collect();
    let witnesses: Vec<LookupWitness> = cases
        .iter()
        .zip(&evaluators)
        .zip(&entries)
        .map(|((c, evaluate), entry)| LookupWitness {
            num_vars: c.witness_vars(),
            entry: entry.as_ref(),
            evaluate: evaluate.as_ref(),
        })
        .collect();
    let lookups: Vec<Lookup> = cases
        .iter()
        .zip(&witnesses)
        .map(|(c, w)| Lookup { table: c.table.as_ref(), witness: w, multiplicities: &c.counts })
        .collect();
    let mut transcript = Transcript::new(DOMAIN);
    let (mut masks, commitment) =
        ProverMasks::commit(params, schedule(cases), &mut transcript, &mut rng).unwrap();
    let mut prover = ZkProver { params, masks: &mut masks, rng: &mut rng };
    let (proof, claims) = prove_lookups::<Zk>(&mut prover, &lookups, &mut transcript).unwrap();
    let masks_proof = masks.prove_openings(params, &mut transcript, &mut rng).unwrap();
    Proved { proof, claims, masks: (commitment, masks_proof) }
}

fn verify(
    params: &HyraxParams,
    cases: &[Case],
    proof: &ZkLookupProof,
    masks: &(G1Affine, ZkInnerProductProof),
) -> Result<Vec<LookupClaims<Combination>>, LookupError> {
    let statements: Vec<(&dyn LookupTable, usize)> = cases.iter().map(Case::statement).collect();
    let mut transcript = Transcript::new(DOMAIN);
    let mut verifier_masks = VerifierMasks::absorb(schedule(cases), masks.0, &mut transcript);
    let mut checks = DeferredChecks::new();
    let mut verifier = ZkVerifier { params, masks: &mut verifier_masks, checks: &mut checks };
    let claims = verify_lookups::<Zk>(&mut verifier, &statements, proof, &mut transcript)?;
    verifier_masks.verify_openings(params, &masks.1, &mut transcript, &mut checks)?;
    checks.finish(&transcript)?;
    Ok(claims)
}

/// The prover's committed claims open to the columns' and multiplicities' MLEs, and the
/// verifier's combinations are the same commitments.
fn check_claims(params: &HyraxParams, cases: &[Case], p: &Proved, verified: &[LookupClaims<Combination>]) {
    let _ = params;
    for ((case, claims), seen) in cases.iter().zip(&p.claims).zip(verified) {
        assert_eq!(claims.witness_point, seen.witness_point);
        assert_eq!(claims.table_point, seen.table_point);
        for (column, value) in case.columns.iter().zip(&claims.columns) {
            let mle = DenseMultilinearExtension::from_i64(case.witness_vars(), column).unwrap();
            assert_eq!(mle.evaluate(&claims.witness_point).unwrap(), value.opening.value);
        }
        let t = case.counts.len().trailing_zeros() as usize;
        let mle = DenseMultilinearExtension::from_i64(t, &case.counts).unwrap();
        assert_eq!(mle.evaluate(&claims.table_point).unwrap(), claims.multiplicities.opening.value);
        let commitments =
            |v: &[CommittedValue]| v.iter().map(|c| c.commitment.evaluate()).collect::<Vec<_>>();
        assert_eq!(
            commitments(&claims.columns),
            seen.columns.iter().map(Combination::evaluate).collect::<Vec<_>>()
        );
        assert_eq!(claims.multiplicities.commitment.evaluate(), seen.multiplicities.evaluate());
        assert_eq!(claims.multiplicities.commitment.evaluate(), claims.multiplicities.opening.commit(params));
    }
}

#[test]
fn lookups_round_trip_on_many_sizes_against_the_plain_columns() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let batches: Vec<Vec<Case>> = vec![
        vec![Case::range(3, 4, &mut rng)],
        vec![Case::range(1, 0, &mut rng)],
        vec![Case::range(2, 1, &mut rng)],
        vec![Case::square(3, 5, &mut rng)],
        vec![Case::range(8, 3, &mut rng), Case::square(2, 6, &mut rng), Case::range(4, 0, &mut rng)],
    ];
    for (index, cases) in batches.iter().enumerate() {
        let params = params(cases);
        let p = prove(&params, cases, index as u64);
        let verified =
            verify(&params, cases, &p.proof, &p.masks).unwrap_or_else(|e| panic!("batch {index}: {e}"));
        check_claims(&params, cases, &p, &verified);
        let mut bytes = Vec::new();
        p.proof.serialize_compressed(&mut bytes).unwrap();
        assert_eq!(ZkLookupProof::deserialize_compressed(&bytes[..]).unwrap(), p.proof);
    }
}

#[test]
fn a_value_outside_the_table_is_rejected() {
    // A cheating prover claims 16 ∈ [0, 16) by counting it as 15.
    let table = RangeTable::new(4).unwrap();
    let column = vec![1, 2, 16, 3, 0, 0, 5, 5];
    let counts = multiplicities(&table, &[&[1, 2, 15, 3, 0, 0, 5, 5]]).unwrap();
    let cases = vec![Case { table: Box::new(table), columns: vec![column], counts }];
    let params = params(&cases);
    let p = prove(&params, &cases, 2);
    assert_eq!(
        verify(&params, &cases, &p.proof, &p.masks).unwrap_err(),
        LookupError::ZeroKnowledge(ZkError::RelationMismatch)
    );
}

#[test]
fn a_wrong_multiplicity_or_function_output_is_rejected() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut wrong_count = Case::range(5, 6, &mut rng);
    wrong_count.counts[7] += 1;
    let mut wrong_output = Case::square(4, 2, &mut rng);
    wrong_output.columns[1][0] += 1;
    for cases in [vec![wrong_count], vec![wrong_output]] {
        let params = params(&cases);
        let p = prove(&params, &cases, 4);
        assert_eq!(
            verify(&params, &cases, &p.proof, &p.masks).unwrap_err(),
            LookupError::ZeroKnowledge(ZkError::RelationMismatch)
        );
    }
}

#[test]
fn tampered_commitments_and_layers_are_rejected() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let cases = vec![Case::range(6, 7, &mut rng), Case::square(3, 4, &mut rng)];
    let params = params(&cases);
    let p = prove(&params, &cases, 6);
    let other = params.value_generator;
    let rejected = |bad: &ZkLookupProof| verify(&params, &cases, bad, &p.masks).is_err();

    let mut bad = p.proof.clone();
    bad.witness_values[1][1] = other;
    assert_eq!(
        verify(&params, &cases, &bad, &p.masks).unwrap_err(),
        LookupError::ZeroKnowledge(ZkError::RelationMismatch)
    );
    let mut bad = p.proof.clone();
    bad.roots[0][1] = other;
    assert_eq!(
        verify(&params, &cases, &bad, &p.masks).unwrap_err(),
        LookupError::ZeroKnowledge(ZkError::RelationMismatch)
    );
    let mut bad = p.proof.clone();
    bad.fractions.first_layers[1][0] = other;
    assert!(rejected(&bad));
    let mut bad = p.proof.clone();
    bad.fractions.layers[2].factors.hidden_values[0] = other;
    assert!(rejected(&bad));
    let mut bad = p.proof.clone();
    bad.fractions.layers[0].sumcheck.sumcheck.rounds[0].evaluations[0] += Fr::one();
    assert!(rejected(&bad));
    let mut bad = p.proof.clone();
    bad.fractions.layers[1].factors.public_values[0] += Fr::one();
    assert_eq!(verify(&params, &cases, &bad, &p.masks).unwrap_err(), LookupError::LayerMismatch { layer: 3 });
    let mut bad = p.proof.clone();
    bad.relations.blinding_response += Fr::one();
    assert_eq!(
        verify(&params, &cases, &bad, &p.masks).unwrap_err(),
        LookupError::ZeroKnowledge(ZkError::RelationMismatch)
    );
}

#[test]
fn malformed_proofs_get_typed_errors() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let cases = vec![Case::range(4, 3, &mut rng)];
    let params = params(&cases);
    let p = prove(&params, &cases, 8);
    let mut bad = p.proof.clone();
    bad.witness_values[0].pop();
    assert!(matches!(verify(&params, &cases, &bad, &p.masks), Err(LookupError::MalformedProof(_))));
    let mut bad = p.proof.clone();
    bad.fractions.first_layers[0].pop();
    assert!(matches!(verify(&params, &cases, &bad, &p.masks), Err(LookupError::MalformedProof(_))));
    let mut bad = p.proof.clone();
    bad.fractions.layers.pop();
    assert!(matches!(verify(&params, &cases, &bad, &p.masks), Err(LookupError::MalformedProof(_))));
    let mut bad = p.proof.clone();
    bad.roots.clear();
    assert!(matches!(verify(&params, &cases, &bad, &p.masks), Err(LookupError::MalformedProof(_))));
}

#[test]
fn two_proofs_differ_and_no_hidden_value_is_sent_in_the_clear() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let cases = vec![Case::range(5, 6, &mut rng), Case::square(3, 3, &mut rng)];
    let params = params(&cases);
    let (a, b) = (prove(&params, &cases, 10), prove(&params, &cases, 11));
    assert_ne!(a.proof, b.proof);
    // Every field element the proof sends.
    let p = &a.proof;
    let mut sent: Vec<Fr> = Vec::new();
    for layer in &p.fractions.layers {
        sent.extend(layer.sumcheck.sumcheck.rounds.iter().flat_map(|r| r.evaluations.clone()));
        sent.push(layer.sumcheck.masked_sum);
        sent.push(layer.sumcheck.masked_sum_proof.response);
        sent.extend(&layer.factors.public_values);
        sent.extend(&layer.factors.relations.factor_responses);
        sent.push(layer.factors.relations.blinding_response);
    }
    sent.extend(&p.relations.factor_responses);
    sent.push(p.relations.blinding_response);
    sent.extend(a.masks.1.responses);
    // The witness-dependent values: column and multiplicity evaluations.
    let mut secrets: Vec<Fr> = Vec::new();
    for claims in &a.claims {
        secrets.extend(claims.columns.iter().map(|c| c.opening.value));
        secrets.push(claims.multiplicities.opening.value);
    }
    assert!(!secrets.is_empty());
    assert!(sent.iter().all(|v| !secrets.contains(v)));
}
