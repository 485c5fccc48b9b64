//! Every lookup attack in both modes, from one generic suite: a malicious prover (the honest
//! prover given false multiplicities or columns, or one tampered message) against the plain
//! and the zero-knowledge verifier, each rejecting with its mode's error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ark_std::rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zkmha_field::{Fr, One};
use zkmha_lookup::*;
use zkmha_mle::DenseMultilinearExtension;
use zkmha_pcs::HyraxParams;
use zkmha_transcript::Transcript;
use zkmha_zk::mode::{Plain, ProductMode, Zk, ZkProver, ZkVerifier};
use zkmha_zk::{DeferredChecks, MaskSchedule, ProverMasks, VerifierMasks, ZkError};

const DOMAIN: &[u8] = b"lookup-both-modes";

/// One lookup: table, witness columns (as the prover holds them), multiplicities.
struct Case {
    table: Box<dyn LookupTable>,
    columns: Vec<Vec<i64>>,
    counts: Vec<i64>,
}

impl Case {
    fn witness_vars(&self) -> usize {
        self.columns[0].len().trailing_zeros() as usize
    }
}

fn range(bits: usize, n: usize, rng: &mut ChaCha20Rng) -> Case {
    let table = RangeTable::new(bits).unwrap();
    let column: Vec<i64> = (0..1usize << n).map(|_| rng.gen_range(0..1i64 << bits)).collect();
    let counts = multiplicities(&table, &[&column]).unwrap();
    Case { table: Box::new(table), columns: vec![column], counts }
}

fn square(bits: usize, n: usize, rng: &mut ChaCha20Rng) -> Case {
    let table = FunctionTable::new("square", bits, (0..1i64 << bits).map(|y| y * y - 7).collect()).unwrap();
    let inputs: Vec<i64> = (0..1usize << n).map(|_| rng.gen_range(0..1i64 << bits)).collect();
    let outputs: Vec<i64> = inputs.iter().map(|x| x * x - 7).collect();
    let counts = multiplicities(&table, &[&inputs, &outputs]).unwrap();
    Case { table: Box::new(table), columns: vec![inputs, outputs], counts }
}

/// A mode's way to run the honest prover, the verifier, and its errors.
trait TestMode: ProductMode {
    /// Proves the cases (the honest prover on the given columns and counts), tampers with the
    /// proof, verifies; the verifier's verdict.
    fn round(cases: &[Case], tamper: &dyn Fn(&mut LookupProofOf<Self>)) -> Result<(), LookupError>;
    /// The error a false lookup gets.
    fn false_lookup() -> LookupError;
    /// Changes a sent value.
    fn tamper_sent(sent: &mut Self::Sent);
}

type Entry = Box<dyn Fn(usize, usize) -> i64 + Sync>;
type Evaluator = Box<dyn Fn(&[Fr]) -> Result<Vec<Fr>, LookupError>>;

/// Runs `f` on the cases as lookups.
fn with_lookups<T>(cases: &[Case], f: impl FnOnce(&[Lookup<'_>]) -> T) -> T {
    let entries: Vec<Entry> = cases
        .iter()
        .map(|c| {
            let columns = c.columns.clone();
            Box::new(move |row: usize, column: usize| columns[column][row]) as Entry
        })
        .collect();
    let evaluators: Vec<Evaluator> = cases
        .iter()
        .map(|c| {
            let (columns, n) = (c.columns.clone(), c.witness_vars());
            Box::new(move |point: &[Fr]| {
                columns
                    .iter()
                    .map(|column| Ok(DenseMultilinearExtension::from_i64(n, column)?.evaluate(point)?))
                    .collect()
            }) as Evaluator
        })
        .collect();
    let witnesses: Vec<LookupWitness<'_>> = cases
        .iter()
        .zip(entries.iter().zip(&evaluators))
        .map(|(c, (entry, evaluate))| LookupWitness {
            num_vars: c.witness_vars(),
            entry: entry.as_ref(),
            evaluate: evaluate.as_ref(),
        })
        .collect();
    let lookups: Vec<Lookup<'_>> = cases
        .iter()
        .zip(&witnesses)
        .map(|(c, w)| Lookup { table: c.table.as_ref(), witness: w, multiplicities: &c.counts })
        .collect();
    f(&lookups)
}

fn statements(cases: &[Case]) -> Vec<(&dyn LookupTable, usize)> {
    cases.iter().map(|c| (c.table.as_ref(), c.witness_vars())).collect()
}

impl TestMode for Plain {
    fn round(cases: &[Case], tamper: &dyn Fn(&mut LookupProofOf<Plain>)) -> Result<(), LookupError> {
        let (mut proof, _) = with_lookups(cases, |l| {
            prove_lookups::<Plain>(&mut (), l, &mut Transcript::new(DOMAIN)).unwrap()
        });
        tamper(&mut proof);
        verify_lookups::<Plain>(&mut (), &statements(cases), &proof, &mut Transcript::new(DOMAIN)).map(|_| ())
    }

    fn false_lookup() -> LookupError {
        LookupError::RelationMismatch
    }

    fn tamper_sent(sent: &mut Fr) {
        *sent += Fr::one();
    }
}

impl TestMode for Zk {
    fn round(cases: &[Case], tamper: &dyn Fn(&mut LookupProofOf<Zk>)) -> Result<(), LookupError> {
        let schedule = MaskSchedule(zk_lookup_schedule(&statements(cases)));
        let params = HyraxParams::new((2 * schedule.generator_vars()).max(2));
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut t = Transcript::new(DOMAIN);
        let (mut masks, commitment) =
            ProverMasks::commit(&params, schedule.clone(), &mut t, &mut rng).unwrap();
        let (mut proof, _) = with_lookups(cases, |l| {
            let mut prover = ZkProver { params: &params, masks: &mut masks, rng: &mut rng };
            prove_lookups::<Zk>(&mut prover, l, &mut t).unwrap()
        });
        let masks_proof = masks.prove_openings(&params, &mut t, &mut rng).unwrap();
        tamper(&mut proof);
        let mut t = Transcript::new(DOMAIN);
        let mut verifier_masks = VerifierMasks::absorb(schedule, commitment, &mut t);
        let mut checks = DeferredChecks::new();
        let mut verifier = ZkVerifier { params: &params, masks: &mut verifier_masks, checks: &mut checks };
        verify_lookups::<Zk>(&mut verifier, &statements(cases), &proof, &mut t)?;
        verifier_masks.verify_openings(&params, &masks_proof, &mut t, &mut checks)?;
        checks.finish(&t)?;
        Ok(())
    }

    fn false_lookup() -> LookupError {
        LookupError::ZeroKnowledge(ZkError::RelationMismatch)
    }

    fn tamper_sent(sent: &mut zkmha_pcs::G1Affine) {
        *sent = (*sent + zkmha_pcs::HyraxParams::new(1).value_generator).into();
    }
}

fn honest_batches_verify<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for cases in [
        vec![range(3, 4, &mut rng)],
        vec![range(1, 0, &mut rng)],
        vec![range(2, 1, &mut rng)],
        vec![square(3, 5, &mut rng)],
        vec![range(8, 3, &mut rng), square(2, 6, &mut rng), range(4, 0, &mut rng)],
    ] {
        assert_eq!(M::round(&cases, &|_| {}), Ok(()));
    }
}

fn a_value_outside_the_table_is_rejected<M: TestMode>() {
    // 16 ∈ [0, 16) claimed by counting it as 15.
    let table = RangeTable::new(4).unwrap();
    let counts = multiplicities(&table, &[&[1, 2, 15, 3, 0, 0, 5, 5]]).unwrap();
    let case = Case { table: Box::new(table), columns: vec![vec![1, 2, 16, 3, 0, 0, 5, 5]], counts };
    assert_eq!(M::round(&[case], &|_| {}), Err(M::false_lookup()));
}

fn a_wrong_multiplicity_or_function_output_is_rejected<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut wrong_count = range(5, 6, &mut rng);
    wrong_count.counts[7] += 1;
    let mut wrong_output = square(4, 2, &mut rng);
    wrong_output.columns[1][0] += 1;
    for case in [wrong_count, wrong_output] {
        assert_eq!(M::round(&[case], &|_| {}), Err(M::false_lookup()));
    }
}

fn a_one_row_witness_counted_twice_is_rejected<M: TestMode>() {
    let table = RangeTable::new(4).unwrap();
    let mut counts = multiplicities(&table, &[&[9]]).unwrap();
    counts[9] = 2; // the padded copy counted as a use
    let case = Case { table: Box::new(table), columns: vec![vec![9]], counts };
    assert_eq!(M::round(&[case], &|_| {}), Err(M::false_lookup()));
}

fn one_bad_member_of_a_batch_is_rejected<M: TestMode>() {
    for bad in 0..3 {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let mut cases = vec![range(5, 4, &mut rng), square(3, 2, &mut rng), range(2, 0, &mut rng)];
        cases[bad].counts[1] += 1;
        assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()), "member {bad}");
    }
}

fn a_changed_root_or_witness_value_is_rejected<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    // Witnesses 2^5 + 2^3 and tables 2^6 + 2^3: two witness trees and two table trees, so
    // two running sums.
    let cases = vec![range(6, 5, &mut rng), square(3, 3, &mut rng)];
    for tree in 0..4 {
        for value in 0..2 {
            let verdict = M::round(&cases, &|p| M::tamper_sent(&mut p.roots[tree][value]));
            assert_eq!(verdict, Err(M::false_lookup()), "root {tree} {value}");
        }
    }
    for sum in 0..2 {
        for value in 0..2 {
            let verdict = M::round(&cases, &|p| M::tamper_sent(&mut p.running_sums[sum][value]));
            assert_eq!(verdict, Err(M::false_lookup()), "running sum {sum} {value}");
        }
    }
    for lookup in 0..2 {
        let verdict = M::round(&cases, &|p| M::tamper_sent(&mut p.multiplicity_values[lookup]));
        assert_eq!(verdict, Err(M::false_lookup()), "multiplicity {lookup}");
    }
    assert_eq!(M::round(&cases, &|p| M::tamper_sent(&mut p.witness_values[1][1])), Err(M::false_lookup()));
}

/// The tag: a row of another table of the same batch, counted in that table's multiplicities,
/// is not a row of its own table (without the tag both tables' rows would fold alike).
fn a_row_of_another_table_in_the_batch_is_rejected<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let small = RangeTable::new(3).unwrap();
    let column = vec![1, 2, 200, 3];
    let mut small_counts = multiplicities(&small, &[&[1, 2, 0, 3]]).unwrap();
    small_counts[0] -= 1;
    let mut large = range(8, 2, &mut rng);
    large.counts[200] += 1;
    let case = Case { table: Box::new(small), columns: vec![column], counts: small_counts };
    assert_eq!(M::round(&[case, large], &|_| {}), Err(M::false_lookup()));
}

/// Lookups into equal range tables share one table block, their multiplicities added (moving
/// counts between lookups of one block changes nothing a lookup proves: logUp needs their sum,
/// and each lookup's own values are the caller's to open); a count moved to another table's
/// block is rejected.
fn shared_range_blocks_add_their_multiplicities<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let cases = vec![range(5, 3, &mut rng), range(5, 4, &mut rng), range(4, 4, &mut rng)];
    assert_eq!(M::round(&cases, &|_| {}), Ok(()));
    let mut moved = vec![range(5, 3, &mut rng), range(5, 4, &mut rng), range(4, 4, &mut rng)];
    let used = (0..32).find(|&y| moved[1].counts[y] > 0 && y < 16).unwrap();
    moved[1].counts[used] -= 1;
    moved[2].counts[used] += 1;
    assert_eq!(M::round(&moved, &|_| {}), Err(M::false_lookup()));
}

/// Padding: 2^3 + 2^0 witness rows are a tree of 2^3 and one of 2^1 whose second leaf is row 0
/// of the first table block, which the verifier counts itself; a prover that counts it too is
/// rejected.
fn witness_padding_is_counted_by_the_verifier<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(13);
    let cases = vec![range(4, 3, &mut rng), range(6, 0, &mut rng)];
    assert_eq!(M::round(&cases, &|_| {}), Ok(()));
    let mut padded = vec![range(6, 3, &mut rng), square(2, 0, &mut rng)];
    assert_eq!(M::round(&padded, &|_| {}), Ok(()));
    padded[0].counts[0] += 1;
    assert_eq!(M::round(&padded, &|_| {}), Err(M::false_lookup()));
}

fn a_changed_first_layer_value_is_rejected<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let cases = vec![range(6, 5, &mut rng)];
    for k in 0..4 {
        assert!(M::round(&cases, &|p| M::tamper_sent(&mut p.fractions.first_layers[1][k])).is_err(), "{k}");
    }
}

fn malformed_proofs_get_typed_errors<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let cases = vec![range(4, 3, &mut rng)];
    let malformed = |r: Result<(), LookupError>| matches!(r, Err(LookupError::MalformedProof(_)));
    assert!(malformed(M::round(&cases, &|p| {
        p.witness_values[0].pop();
    })));
    assert!(malformed(M::round(&cases, &|p| {
        p.roots[0].pop();
    })));
    assert!(malformed(M::round(&cases, &|p| {
        p.fractions.first_layers[0].pop();
    })));
    assert!(malformed(M::round(&cases, &|p| {
        p.fractions.layers.pop();
    })));
    assert!(malformed(M::round(&cases, &|p| p.roots.clear())));
}

/// a row outside its table in a witness packed with others (one tree: sizes 3,3,3,2),
/// and in each of two per-size trees (sizes 3, 0): every placement is rejected.
fn rows_outside_their_tables_in_packed_witness_trees_are_rejected<M: TestMode>() {
    let bad = |case: &mut Case, row: usize, bits: usize| {
        // Replace row `row` by 2^bits (outside [0, 2^bits)), counting it as the old value still.
        case.columns[0][row] = 1i64 << bits;
    };
    // One tree (32 leaves, 4 padding): a bad row in block 1 and in block 3 (the 2^2 one).
    for which in [0usize, 1, 3] {
        let mut rng = ChaCha20Rng::seed_from_u64(20 + which as u64);
        let mut cases =
            vec![range(4, 3, &mut rng), range(4, 3, &mut rng), range(5, 3, &mut rng), range(6, 2, &mut rng)];
        assert_eq!(M::round(&cases, &|_| {}), Ok(()), "honest {which}");
        let bits = [4, 4, 5, 6][which];
        bad(&mut cases[which], 1, bits);
        assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()), "one tree, block {which}");
    }
    // Per-size trees (8 + 2 leaves): bad rows in both trees at once (each tree copies the
    // shared dictionary), and in each alone.
    for mask in 1..4 {
        let mut rng = ChaCha20Rng::seed_from_u64(30);
        let mut cases = vec![range(4, 3, &mut rng), range(6, 0, &mut rng)];
        if mask & 1 != 0 {
            bad(&mut cases[0], 5, 4);
        }
        if mask & 2 != 0 {
            bad(&mut cases[1], 0, 6);
        }
        assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()), "per size, mask {mask}");
    }
    // A row of another table of the batch (4 is a row of the 6-bit table, not of the 2-bit
    // one), counted in that table's block.
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    let mut cases = vec![range(6, 3, &mut rng), range(2, 3, &mut rng), range(2, 0, &mut rng)];
    cases[1].columns[0][2] = 4; // a row of the 6-bit table, not of the 2-bit one
    cases[0].counts[4] += 1; // counted in the 6-bit table's block
    assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()));
    // The witness padding's count moved to the prover's multiplicities (the pad row counted
    // twice) or removed (one fewer): rejected in a one-tree layout with padding.
    for delta in [-1i64, 1] {
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        let mut cases =
            vec![range(4, 3, &mut rng), range(4, 3, &mut rng), range(5, 3, &mut rng), range(6, 2, &mut rng)];
        // pad group: the largest table block (6 bits, group 3) sits first in table tree 0.
        cases[3].counts[0] += delta;
        assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()), "pad delta {delta}");
    }
}

/// one-row witnesses (2^0) alone and mixed with larger ones, honest and false.
fn one_row_witnesses_packed_with_others<M: TestMode>() {
    let mut rng = ChaCha20Rng::seed_from_u64(40);
    for sizes in [vec![0usize, 0, 0], vec![0, 0], vec![1, 0, 0], vec![2, 0, 1, 0], vec![5, 0]] {
        let cases: Vec<Case> = sizes.iter().map(|&n| range(3, n, &mut rng)).collect();
        assert_eq!(M::round(&cases, &|_| {}), Ok(()), "{sizes:?}");
        for bad in 0..sizes.len() {
            let mut cases: Vec<Case> = sizes.iter().map(|&n| range(3, n, &mut rng)).collect();
            cases[bad].columns[0][0] = 8;
            assert_eq!(M::round(&cases, &|_| {}), Err(M::false_lookup()), "{sizes:?} bad {bad}");
        }
    }
}

/// lookups of equal size end at one witness point (one-tree and per-size layouts);
/// the returned claims in the plain mode are the witnesses' MLEs at that point.
fn lookups_of_equal_size_end_at_one_witness_point<M: TestMode>() {
    if M::HIDING {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(50);
    for sizes in
        [vec![3usize, 3, 3, 2], vec![3, 0, 3, 0], vec![4, 1, 4, 1, 0], vec![2, 2, 2, 2, 2], vec![6, 3, 6, 3]]
    {
        let cases: Vec<Case> = sizes.iter().map(|&n| range(4, n, &mut rng)).collect();
        let (proof, pclaims) = with_lookups(&cases, |l| {
            prove_lookups::<Plain>(&mut (), l, &mut Transcript::new(DOMAIN)).unwrap()
        });
        let claims =
            verify_lookups::<Plain>(&mut (), &statements(&cases), &proof, &mut Transcript::new(DOMAIN))
                .unwrap();
        assert_eq!(claims, pclaims);
        for i in 0..sizes.len() {
            let n = sizes[i];
            assert_eq!(claims[i].witness_point.len(), n);
            let v = DenseMultilinearExtension::from_i64(n, &cases[i].columns[0])
                .unwrap()
                .evaluate(&claims[i].witness_point)
                .unwrap();
            assert_eq!(claims[i].columns[0], v);
            for j in 0..sizes.len() {
                if sizes[j] == n {
                    assert_eq!(claims[i].witness_point, claims[j].witness_point, "{sizes:?} {i} {j}");
                }
            }
        }
    }
}

macro_rules! in_both_modes {
    ($($test:ident),* $(,)?) => {
        mod plain {
            $(#[test] fn $test() { super::$test::<zkmha_zk::mode::Plain>(); })*
        }
        mod zero_knowledge {
            $(#[test] fn $test() { super::$test::<zkmha_zk::mode::Zk>(); })*
        }
    };
}

in_both_modes!(
    rows_outside_their_tables_in_packed_witness_trees_are_rejected,
    one_row_witnesses_packed_with_others,
    lookups_of_equal_size_end_at_one_witness_point,
    honest_batches_verify,
    a_value_outside_the_table_is_rejected,
    a_wrong_multiplicity_or_function_output_is_rejected,
    a_one_row_witness_counted_twice_is_rejected,
    one_bad_member_of_a_batch_is_rejected,
    a_changed_root_or_witness_value_is_rejected,
    a_row_of_another_table_in_the_batch_is_rejected,
    shared_range_blocks_add_their_multiplicities,
    witness_padding_is_counted_by_the_verifier,
    a_changed_first_layer_value_is_rejected,
    malformed_proofs_get_typed_errors,
);
