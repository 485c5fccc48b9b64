//! logUp: honest round trips against plain references, and one test per attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use zkmha_field::{Fr, One};
use zkmha_lookup::*;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::{Hyrax, HyraxCommitment, HyraxParams, PcsError};
use zkmha_transcript::Transcript;
use zkmha_zk::mode::Plain;

/// The plain mode's proof.
type LookupProof = LookupProofOf<Plain>;

fn prove_lookup(
    table: &dyn LookupTable,
    columns: &[&[i64]],
    counts: &[i64],
    transcript: &mut Transcript,
) -> Result<(LookupProof, LookupClaims), LookupError> {
    zkmha_lookup::prove_lookup::<Plain>(&mut (), table, columns, counts, transcript)
}

fn verify_lookup(
    table: &dyn LookupTable,
    witness_vars: usize,
    proof: &LookupProof,
    transcript: &mut Transcript,
) -> Result<LookupClaims, LookupError> {
    zkmha_lookup::verify_lookup::<Plain>(&mut (), table, witness_vars, proof, transcript)
}

fn random_column(n: usize, bits: usize, rng: &mut StdRng) -> Vec<i64> {
    (0..1usize << n).map(|_| rng.gen_range(0..1i64 << bits)).collect()
}

fn square_table(bits: usize) -> FunctionTable {
    FunctionTable::new("square", bits, (0..1i64 << bits).map(|y| y * y - 7).collect()).unwrap()
}

/// The claims must be the columns' and the multiplicities' MLEs at the returned points.
fn check_claims(columns: &[&[i64]], counts: &[i64], claims: &LookupClaims) {
    for (column, claim) in columns.iter().zip(&claims.columns) {
        let n = column.len().trailing_zeros() as usize;
        let mle = DenseMultilinearExtension::from_i64(n, column).unwrap();
        assert_eq!(mle.evaluate(&claims.witness_point).unwrap(), *claim);
    }
    let t = counts.len().trailing_zeros() as usize;
    let mle = DenseMultilinearExtension::from_i64(t, counts).unwrap();
    assert_eq!(mle.evaluate(&claims.table_point).unwrap(), claims.multiplicities);
}

#[test]
fn range_lookups_round_trip_on_many_sizes() {
    let mut rng = StdRng::seed_from_u64(1);
    for bits in [1usize, 3, 8] {
        for n in [0usize, 1, 2, 5, 9] {
            let table = RangeTable::new(bits).unwrap();
            let column = random_column(n, bits, &mut rng);
            let counts = multiplicities(&table, &[&column]).unwrap();
            assert_eq!(counts.iter().sum::<i64>(), 1 << n);
            let (proof, claims) =
                prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
            let verified = verify_lookup(&table, n, &proof, &mut Transcript::new(b"l")).unwrap();
            assert_eq!(verified, claims, "bits {bits}, n {n}");
            check_claims(&[&column], &counts, &claims);
        }
    }
}

#[test]
fn tuple_lookups_round_trip() {
    let mut rng = StdRng::seed_from_u64(2);
    for (bits, n) in [(2usize, 3usize), (6, 7), (10, 4)] {
        let table = square_table(bits);
        let inputs = random_column(n, bits, &mut rng);
        let outputs: Vec<i64> = inputs.iter().map(|x| x * x - 7).collect();
        let counts = multiplicities(&table, &[&inputs, &outputs]).unwrap();
        let (proof, claims) =
            prove_lookup(&table, &[&inputs, &outputs], &counts, &mut Transcript::new(b"l")).unwrap();
        assert_eq!(verify_lookup(&table, n, &proof, &mut Transcript::new(b"l")).unwrap(), claims);
        check_claims(&[&inputs, &outputs], &counts, &claims);
    }
}

#[test]
fn the_prover_refuses_values_outside_the_table() {
    let table = RangeTable::new(4).unwrap();
    let column = vec![1, 2, 16, 3];
    assert_eq!(
        multiplicities(&table, &[&column]),
        Err(LookupError::ValueNotInTable { table: "range", index: 2, value: 16 })
    );
    let table = square_table(3);
    assert!(matches!(
        multiplicities(&table, &[&[1, 2], &[1 - 7, 5]]),
        Err(LookupError::ValueNotInTable { table: "square", index: 1, .. })
    ));
}

#[test]
fn rejects_a_value_outside_the_table() {
    // A cheating prover claims 16 ∈ [0, 16) by counting it as 15.
    let table = RangeTable::new(4).unwrap();
    let column = vec![1, 2, 16, 3, 0, 0, 5, 5];
    let mut counts = multiplicities(&table, &[&[1, 2, 15, 3, 0, 0, 5, 5]]).unwrap();
    let (proof, _) = prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 3, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
    // Or with the count left out altogether.
    counts[15] = 0;
    let (proof, _) = prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 3, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
}

#[test]
fn rejects_a_wrong_multiplicity() {
    let mut rng = StdRng::seed_from_u64(3);
    let table = RangeTable::new(5).unwrap();
    let column = random_column(6, 5, &mut rng);
    let mut counts = multiplicities(&table, &[&column]).unwrap();
    counts[7] += 1;
    let (proof, _) = prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 6, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
}

#[test]
fn rejects_a_wrong_function_output() {
    let table = square_table(4);
    let inputs = vec![1, 2, 3, 4];
    let outputs = vec![1 - 7, 4 - 7, 10, 16 - 7];
    let counts = multiplicities(&table, &[&inputs, &[1 - 7, 4 - 7, 9 - 7, 16 - 7]]).unwrap();
    let (proof, _) = prove_lookup(&table, &[&inputs, &outputs], &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 2, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
}

#[test]
fn rejects_tampered_witness_values_and_layers() {
    let mut rng = StdRng::seed_from_u64(4);
    let table = RangeTable::new(6).unwrap();
    let column = random_column(7, 6, &mut rng);
    let counts = multiplicities(&table, &[&column]).unwrap();
    let (proof, _) = prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
    let verify = |p: &LookupProof| verify_lookup(&table, 7, p, &mut Transcript::new(b"l"));

    let mut bad = proof.clone();
    bad.witness_values[0][0] += Fr::one();
    assert_eq!(verify(&bad), Err(LookupError::RelationMismatch));

    let mut bad = proof.clone();
    bad.fractions.layers[2].final_evaluations[0][1] += Fr::one();
    assert_eq!(verify(&bad), Err(LookupError::LayerMismatch { layer: 4 }));

    let mut bad = proof.clone();
    bad.fractions.layers[0].sumcheck.rounds[0].evaluations[0] += Fr::one();
    assert_eq!(verify(&bad), Err(LookupError::LayerMismatch { layer: 2 }));

    let mut bad = proof.clone();
    bad.fractions.first_layers[1][0] += Fr::one();
    assert!(verify(&bad).is_err());

    let mut bad = proof.clone();
    bad.fractions.layers.pop();
    assert_eq!(verify(&bad), Err(LookupError::MalformedProof("wrong number of layers")));

    let mut bad = proof.clone();
    bad.witness_values[0].push(Fr::one());
    assert_eq!(
        verify(&bad),
        Err(LookupError::MalformedProof(
            "two values per root and running sum, one value per column and one multiplicity per lookup"
        ))
    );

    // A false root sent beside the true first layer: the roots' relation fails.
    let mut bad = proof.clone();
    bad.roots[0][1] += Fr::one();
    assert_eq!(verify(&bad), Err(LookupError::RelationMismatch));

    // A proof for another witness size or another table.
    assert_eq!(
        verify_lookup(&table, 6, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::MalformedProof("wrong number of layers"))
    );
    assert!(verify_lookup(&RangeTable::new(5).unwrap(), 7, &proof, &mut Transcript::new(b"l")).is_err());

    let mut bytes = Vec::new();
    proof.serialize_compressed(&mut bytes).unwrap();
    for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
        assert!(LookupProof::deserialize_compressed(&bytes[..cut]).is_err());
    }
}

/// The committed-multiplicities flow: commit to m, absorb, prove; open m at the claim.
fn prove_committed(
    table: &RangeTable,
    column: &[i64],
    counts: &[i64],
    absorbed: &HyraxCommitment,
) -> (LookupProof, zkmha_pcs::HyraxProof) {
    let mut transcript = Transcript::new(b"l");
    let mut bytes = Vec::new();
    absorbed.serialize_compressed(&mut bytes).unwrap();
    transcript.append_bytes(b"m", &bytes);
    let (proof, claims) = prove_lookup(table, &[column], counts, &mut transcript).unwrap();
    let m = DenseMultilinearExtension::from_i64(table.num_vars(), counts).unwrap();
    let (opening, _) = Hyrax::open(&m, absorbed, &claims.table_point, &mut transcript).unwrap();
    (proof, opening)
}

fn verify_committed(
    params: &HyraxParams,
    table: &RangeTable,
    n: usize,
    commitment: &HyraxCommitment,
    proof: &LookupProof,
    opening: &zkmha_pcs::HyraxProof,
) -> Result<(), String> {
    let mut transcript = Transcript::new(b"l");
    let mut bytes = Vec::new();
    commitment.serialize_compressed(&mut bytes).unwrap();
    transcript.append_bytes(b"m", &bytes);
    let claims = verify_lookup(table, n, proof, &mut transcript).map_err(|e| format!("{e:?}"))?;
    Hyrax::verify(params, commitment, &claims.table_point, claims.multiplicities, opening, &mut transcript)
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn rejects_a_tampered_multiplicity_commitment() {
    let mut rng = StdRng::seed_from_u64(5);
    let table = RangeTable::new(6).unwrap();
    let params = HyraxParams::new(6);
    let column = random_column(8, 6, &mut rng);
    let counts = multiplicities(&table, &[&column]).unwrap();
    let commitment = Hyrax::commit_small(&params, 6, &counts).unwrap();
    let (proof, opening) = prove_committed(&table, &column, &counts, &commitment);
    assert_eq!(verify_committed(&params, &table, 8, &commitment, &proof, &opening), Ok(()));

    // The verifier holds a commitment to other multiplicities.
    let mut other = counts.clone();
    other.swap(0, 1);
    let other_commitment = Hyrax::commit_small(&params, 6, &other).unwrap();
    assert!(verify_committed(&params, &table, 8, &other_commitment, &proof, &opening).is_err());
    // A prover that absorbs the other commitment but proves with the true counts: the
    // lookup passes, the opening of m against the commitment fails.
    let (proof, opening) = prove_committed(&table, &column, &counts, &other_commitment);
    assert_eq!(
        verify_committed(&params, &table, 8, &other_commitment, &proof, &opening),
        Err(format!("{:?}", PcsError::PairingCheckFailed))
    );
}

#[test]
fn segmented_lookups_round_trip_and_reject_cross_segment_rows() {
    let mut rng = StdRng::seed_from_u64(6);
    let exp: Vec<i64> = (0..256).map(|i| (4096.0 * (-(i as f64) / 16.0).exp()).round() as i64).collect();
    let table = SegmentedTable::new(
        "softmax-like",
        vec![
            Segment { bits: 8, output: SegmentOutput::Function(exp.clone()) },
            Segment { bits: 5, output: SegmentOutput::IsZero },
            Segment { bits: 7, output: SegmentOutput::Zero },
        ],
    )
    .unwrap();
    let n = 6;
    let mut tags = Vec::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (tag, bits) in [(0i64, 8usize), (1, 5), (2, 7), (3, 0)] {
        for _ in 0..1usize << n {
            let x = rng.gen_range(0..1i64 << bits);
            tags.push(tag);
            inputs.push(x);
            outputs.push(match tag {
                0 => exp[x as usize],
                1 => i64::from(x == 0),
                _ => 0,
            });
        }
    }
    let columns: [&[i64]; 3] = [&tags, &inputs, &outputs];
    let counts = multiplicities(&table, &columns).unwrap();
    let (proof, claims) = prove_lookup(&table, &columns, &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(verify_lookup(&table, n + 2, &proof, &mut Transcript::new(b"l")).unwrap(), claims);
    check_claims(&columns, &counts, &claims);

    // An input of the range segment (7 bits) used with the 5-bit segment's tag.
    let mut bad_inputs = inputs.clone();
    bad_inputs[(1 << n) + 3] = 100;
    let mut bad_outputs = outputs.clone();
    bad_outputs[(1 << n) + 3] = 0;
    let mut honest_like = columns.map(<[i64]>::to_vec);
    honest_like[1][(1 << n) + 3] = 1;
    honest_like[2][(1 << n) + 3] = 0;
    let refs: Vec<&[i64]> = honest_like.iter().map(Vec::as_slice).collect();
    let counts = multiplicities(&table, &refs).unwrap();
    let (proof, _) =
        prove_lookup(&table, &[&tags, &bad_inputs, &bad_outputs], &counts, &mut Transcript::new(b"l"))
            .unwrap();
    assert_eq!(
        verify_lookup(&table, n + 2, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
}

#[test]
fn a_one_row_witness_is_proved_as_two_copies_and_a_wrong_count_is_rejected() {
    let table = RangeTable::new(4).unwrap();
    let column = vec![9i64];
    let counts = multiplicities(&table, &[&column]).unwrap();
    assert_eq!(counts.iter().sum::<i64>(), 1);
    let (proof, claims) = prove_lookup(&table, &[&column], &counts, &mut Transcript::new(b"l")).unwrap();
    assert!(claims.witness_point.is_empty());
    assert_eq!(claims.columns[0], Fr::from(9u64));
    assert_eq!(verify_lookup(&table, 0, &proof, &mut Transcript::new(b"l")).unwrap(), claims);
    // Counting the row twice (the padded copy) is a wrong multiplicity.
    let mut doubled = counts.clone();
    doubled[9] = 2;
    let (proof, _) = prove_lookup(&table, &[&column], &doubled, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 0, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
    // A value outside the table.
    let (proof, _) = prove_lookup(&table, &[&[16i64]], &counts, &mut Transcript::new(b"l")).unwrap();
    assert_eq!(
        verify_lookup(&table, 0, &proof, &mut Transcript::new(b"l")),
        Err(LookupError::RelationMismatch)
    );
}

type Entry<'a> = dyn Fn(usize, usize) -> i64 + Sync + 'a;
type Evaluator<'a> = dyn Fn(&[Fr]) -> Result<Vec<Fr>, LookupError> + 'a;

/// A [`LookupWitness`] over materialized columns.
fn witness_of<'a>(
    num_vars: usize,
    entry: &'a (dyn Fn(usize, usize) -> i64 + Sync),
    evaluate: ColumnEvaluator<'a>,
) -> LookupWitness<'a> {
    LookupWitness { num_vars, entry, evaluate }
}

#[test]
fn batched_lookups_round_trip_and_a_bad_member_is_rejected() {
    let mut rng = StdRng::seed_from_u64(30);
    let range = RangeTable::new(5).unwrap();
    let square = square_table(4);
    let small = RangeTable::new(2).unwrap();
    let a = random_column(8, 5, &mut rng);
    let x = random_column(3, 4, &mut rng);
    let y: Vec<i64> = x.iter().map(|v| v * v - 7).collect();
    let one_row = vec![3i64];
    for bad_member in [false, true] {
        let mut b = one_row.clone();
        if bad_member {
            b[0] = 4; // outside [0, 4)
        }
        let counts = [
            multiplicities(&range, &[&a]).unwrap(),
            multiplicities(&square, &[&x, &y]).unwrap(),
            multiplicities(&small, &[&one_row]).unwrap(),
        ];
        let columns: [Vec<&[i64]>; 3] = [vec![&a], vec![&x, &y], vec![&b]];
        let entries: Vec<Box<Entry<'_>>> = columns
            .iter()
            .map(|c| {
                let c = c.clone();
                Box::new(move |row: usize, col: usize| c[col][row]) as Box<Entry<'_>>
            })
            .collect();
        let evaluators: Vec<Box<Evaluator<'_>>> = columns
            .iter()
            .map(|c| {
                let c = c.clone();
                Box::new(move |point: &[Fr]| {
                    c.iter()
                        .map(|col| {
                            DenseMultilinearExtension::from_i64(point.len(), col)?
                                .evaluate(point)
                                .map_err(LookupError::from)
                        })
                        .collect::<Result<Vec<Fr>, LookupError>>()
                }) as Box<Evaluator<'_>>
            })
            .collect();
        let vars = [8usize, 3, 0];
        let witnesses: Vec<LookupWitness<'_>> =
            (0..3).map(|k| witness_of(vars[k], entries[k].as_ref(), evaluators[k].as_ref())).collect();
        let tables: [&dyn LookupTable; 3] = [&range, &square, &small];
        let lookups: Vec<Lookup<'_>> = (0..3)
            .map(|k| Lookup { table: tables[k], witness: &witnesses[k], multiplicities: &counts[k] })
            .collect();
        let (proof, claims) = prove_lookups::<Plain>(&mut (), &lookups, &mut Transcript::new(b"m")).unwrap();
        let statements: Vec<(&dyn LookupTable, usize)> = (0..3).map(|k| (tables[k], vars[k])).collect();
        let verified = verify_lookups::<Plain>(&mut (), &statements, &proof, &mut Transcript::new(b"m"));
        if bad_member {
            assert_eq!(verified, Err(LookupError::RelationMismatch));
        } else {
            assert_eq!(verified.unwrap(), claims);
            check_claims(&[&a], &counts[0], &claims[0]);
            check_claims(&[&x, &y], &counts[1], &claims[1]);
            assert_eq!(claims[2].columns[0], Fr::from(3u64));
            // One fractional-sum layer proof per depth for all six trees.
            assert_eq!(proof.fractions.layers.len(), 7);
        }
    }
}
