//! Where a batch of lookups sits in its fraction trees: the witnesses in one tree (or one per
//! witness size), the tables of the whole batch in a few table trees, told apart by a tag.
//!
//! ```text
//! groups    the batch's tables; lookups into range tables of the same bits share one group
//!           (one table block, multiplicities added), every other lookup has its own
//! tag       group g's rows are folded with g:  fold(row, g) = α − Σ_{c<C} γ^c·row_c − γ^C·g
//!           (C the widest table's column count, narrower rows read 0 in the missing columns)
//! blocks    each group's 2^t rows: one aligned block of a table tree, sorted by size (largest
//!           first), so block i of a tree of N variables holds the indices offset_i + [0, 2^{t_i})
//!           and its MLE part is  eq(r[t_i..N], bits of offset_i / 2^{t_i}) · block_i(r[..t_i])
//! trees     the table blocks are packed into trees of 2^N leaves: the whole rest in one tree
//!           when that pads at most a sixteenth of the batch, else a tree of the largest power
//!           of two that the rest fills exactly (blocks in descending order fill it exactly);
//!           the witnesses (blocks sorted the same way, one after another) all in one witness
//!           tree when that pads no more than one tree per witness size would (or a sixteenth
//!           of their rows), else one tree per size; either way every witness of size 2^n ends
//!           at its tree's r[..n], one point for the lookups of equal size (what the callers read)
//! padding   a witness tree's free leaves hold row 0 of the first table
//!           block (tree 0, offset 0), whose multiplicity the verifier adds itself; a table
//!           tree's free leaves are 0/1 (zero numerator, denominator 1); the free leaves' MLE
//!           is (1 − Σ_blocks eq_prefix)
//! ```
//!
//! Both sides derive the layout from the public statement (each lookup's table and witness
//! size), so nothing of it is read from a proof.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::LookupError;
use crate::table::LookupTable;
use zkmha_field::{Fr, One};

/// The largest witness a lookup may declare: `2^MAX_WITNESS_VARS` rows.
pub const MAX_WITNESS_VARS: usize = 32;

/// One aligned block of a tree: `item` (a lookup or a group) at `offset`, `2^num_vars` leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub item: usize,
    pub offset: usize,
    pub num_vars: usize,
}

/// One fraction tree of `2^num_vars` leaves and its blocks (the rest is padding).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    pub num_vars: usize,
    pub blocks: Vec<Block>,
}

impl Tree {
    /// Leaves that no block holds.
    pub fn padding(&self) -> usize {
        (1usize << self.num_vars) - self.blocks.iter().map(|b| 1usize << b.num_vars).sum::<usize>()
    }

    /// `eq(r[n..N], bits of offset / 2^n)`: block `block`'s weight in the tree's MLE at `point`.
    pub fn block_weight(&self, block: &Block, point: &[Fr]) -> Fr {
        let high = point.get(block.num_vars..self.num_vars).unwrap_or_default();
        let index = block.offset >> block.num_vars;
        high.iter().enumerate().fold(Fr::one(), |acc, (bit, r)| {
            if (index >> bit) & 1 == 1 { acc * r } else { acc * (Fr::one() - r) }
        })
    }

    /// The padding's MLE at `point`: `1 − Σ_blocks eq_prefix`.
    pub fn padding_weight(&self, point: &[Fr]) -> Fr {
        self.blocks.iter().fold(Fr::one(), |acc, block| acc - self.block_weight(block, point))
    }
}

/// The layout of a batch of lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BatchLayout {
    /// `C`: the widest table's columns (the tag's power of γ).
    pub columns: usize,
    /// Per group, the lookup whose table it is (the first into it).
    pub group_tables: Vec<usize>,
    /// Per lookup, its group.
    pub group_of: Vec<usize>,
    /// Per lookup, `n` (its witness has `2^n` rows).
    pub witness_vars: Vec<usize>,
    /// The witness trees: blocks are lookups.
    pub witness_trees: Vec<Tree>,
    /// The table trees: blocks are groups.
    pub table_trees: Vec<Tree>,
}

impl BatchLayout {
    /// The layout of lookups into `tables` with witnesses of `2^witness_vars` rows.
    ///
    /// # Errors
    /// [`LookupError::InvalidTable`] for an empty batch or a witness above
    /// [`MAX_WITNESS_VARS`] variables.
    pub fn new(lookups: &[(&dyn LookupTable, usize)]) -> Result<Self, LookupError> {
        if lookups.is_empty() {
            return Err(LookupError::InvalidTable("a batch needs a lookup"));
        }
        if lookups.iter().any(|(_, n)| *n > MAX_WITNESS_VARS) {
            return Err(LookupError::InvalidTable("a witness of more than 2^32 rows"));
        }
        let mut group_tables: Vec<usize> = Vec::new();
        let mut group_of = Vec::with_capacity(lookups.len());
        for (index, (table, _)) in lookups.iter().enumerate() {
            let shared = range_bits(*table).and_then(|bits| {
                group_tables.iter().position(|&first| {
                    lookups.get(first).and_then(|(other, _)| range_bits(*other)) == Some(bits)
                })
            });
            match shared {
                Some(group) => group_of.push(group),
                None => {
                    group_of.push(group_tables.len());
                    group_tables.push(index);
                }
            }
        }
        let columns = lookups.iter().map(|(table, _)| table.num_columns()).max().unwrap_or(1);
        let witness_vars: Vec<usize> = lookups.iter().map(|(_, n)| *n).collect();
        let witness_items: Vec<(usize, usize)> = witness_vars.iter().copied().enumerate().collect();
        let table_items: Vec<(usize, usize)> = group_tables
            .iter()
            .enumerate()
            .map(|(group, &first)| (group, lookups.get(first).map_or(1, |(table, _)| table.num_vars())))
            .collect();
        Ok(Self {
            columns,
            group_tables,
            group_of,
            witness_vars,
            witness_trees: pack_witnesses(witness_items),
            table_trees: pack(table_items),
        })
    }

    /// Every tree's `(num_vars, unit leaves)`: the witness trees, then the table trees.
    pub fn tree_shapes(&self) -> Vec<(usize, bool)> {
        let witness = self.witness_trees.iter().map(|t| (t.num_vars, true));
        witness.chain(self.table_trees.iter().map(|t| (t.num_vars, false))).collect()
    }

    /// Witness padding leaves in all witness trees (row 0 of the pad group, each).
    pub fn witness_padding(&self) -> usize {
        self.witness_trees.iter().map(Tree::padding).sum()
    }

    /// The group whose row 0 pads the witness trees: the first block of table tree 0.
    pub fn pad_group(&self) -> usize {
        self.table_trees.first().and_then(|t| t.blocks.first()).map_or(0, |b| b.item)
    }

    /// The lookups of group `group`.
    pub fn members(&self, group: usize) -> impl Iterator<Item = usize> + '_ {
        self.group_of.iter().enumerate().filter(move |(_, g)| **g == group).map(|(i, _)| i)
    }
}

/// A range table's bits (sealed to [`crate::RangeTable`]), and only when its shape agrees.
fn range_bits(table: &dyn LookupTable) -> Option<usize> {
    table
        .range_bits(crate::table::sealed::Token)
        .filter(|&bits| table.num_vars() == bits && table.num_columns() == 1)
}

/// Blocks of `items` (sorted largest first) one after another from offset 0: each aligned,
/// since every block before it is a larger or equal power of two.
fn consecutive_blocks(items: &[(usize, usize)]) -> (Vec<Block>, usize) {
    let mut offset = 0;
    let blocks = items
        .iter()
        .map(|&(item, num_vars)| {
            let block = Block { item, offset, num_vars };
            offset += 1usize << num_vars;
            block
        })
        .collect();
    (blocks, offset)
}

/// A tree of at least two leaves holding `items` (sorted largest first) consecutively.
fn tree_of(items: &[(usize, usize)]) -> Tree {
    let (blocks, total) = consecutive_blocks(items);
    Tree { num_vars: total.next_power_of_two().max(2).trailing_zeros() as usize, blocks }
}

/// Packs the witnesses `(lookup, num_vars)` (the module's rule): every witness of one size in
/// one tree, where its block ends at the tree's point `r[..n]` like every other block of that
/// size (the callers read the columns of lookups of equal size at one point); all of them in
/// one tree when that pads no more than one tree per size would (or a sixteenth of the rows),
/// else one tree per size.
fn pack_witnesses(mut items: Vec<(usize, usize)>) -> Vec<Tree> {
    items.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let rows: usize = items.iter().map(|(_, n)| 1usize << n).sum();
    let sizes: Vec<&[(usize, usize)]> = items.chunk_by(|a, b| a.1 == b.1).collect();
    let per_size: Vec<Tree> = sizes.iter().map(|class| tree_of(class)).collect();
    let one = tree_of(&items);
    let padding = |trees: &[Tree]| trees.iter().map(Tree::padding).sum::<usize>();
    if one.padding() <= padding(&per_size).max(rows / 16) { vec![one] } else { per_size }
}

/// Packs items `(item, num_vars)` into trees (the module's rule): largest blocks first.
fn pack(mut items: Vec<(usize, usize)>) -> Vec<Tree> {
    items.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut trees = Vec::new();
    let mut rest = items.as_slice();
    let batch: usize = items.iter().map(|(_, n)| 1usize << n).sum();
    while !rest.is_empty() {
        let total: usize = rest.iter().map(|(_, n)| 1usize << n).sum();
        let up = total.next_power_of_two();
        let (size, whole) = if up - total <= batch / 16 { (up, true) } else { (up / 2, false) };
        // At least two leaves, and never smaller than the largest block (it is not: the
        // largest block is a power of two no larger than the total).
        let largest = rest.first().map_or(1, |(_, n)| 1usize << n);
        let size = size.max(2).max(largest);
        let mut blocks = Vec::new();
        let mut offset = 0;
        let mut taken = 0;
        for &(item, num_vars) in rest {
            if !whole && offset + (1usize << num_vars) > size {
                break;
            }
            blocks.push(Block { item, offset, num_vars });
            offset += 1usize << num_vars;
            taken += 1;
        }
        trees.push(Tree { num_vars: size.trailing_zeros() as usize, blocks });
        rest = rest.get(taken..).unwrap_or_default();
    }
    trees
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::table::{FunctionTable, RangeTable};
    use ark_std::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};
    use zkmha_mle::DenseMultilinearExtension;

    /// Every block lies inside its tree, aligned, without overlap; every item is placed once.
    fn check_trees(trees: &[Tree], items: &[(usize, usize)]) {
        check_blocks(trees, items);
        for tree in trees {
            let batch: usize = items.iter().map(|(_, n)| 1usize << n).sum();
            assert!(tree.padding() <= batch / 16 || tree.padding() == 1, "{tree:?}");
        }
    }

    /// [`check_trees`] without the padding bound.
    fn check_blocks(trees: &[Tree], items: &[(usize, usize)]) {
        let mut seen = vec![0; items.len()];
        for tree in trees {
            let mut used = vec![false; 1 << tree.num_vars];
            for block in &tree.blocks {
                assert_eq!(block.offset % (1 << block.num_vars), 0, "aligned");
                for leaf in block.offset..block.offset + (1 << block.num_vars) {
                    assert!(!used[leaf], "overlap");
                    used[leaf] = true;
                }
                assert_eq!(items[block.item].1, block.num_vars);
                seen[block.item] += 1;
            }
            assert_eq!(used.iter().filter(|u| !**u).count(), tree.padding());
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    /// The witnesses: placed once and aligned; every size in one tree (so lookups of equal size
    /// end at one point); one tree unless that pads more than a tree per size.
    #[test]
    fn witnesses_of_one_size_share_a_tree() {
        let cases: Vec<(Vec<usize>, Vec<usize>)> = vec![
            (vec![0], vec![1]),
            (vec![1], vec![1]),
            (vec![0, 0, 0], vec![2]),
            // One tree pads 3·2^19 − 2^13, one tree per size 3·2^19: one tree.
            (vec![19, 19, 19, 19, 19, 13], vec![22]),
            (vec![19, 19, 19, 19, 13], vec![21, 13]),
            (vec![19, 19, 19, 19, 18, 18], vec![21, 19]),
            (vec![20, 20, 16, 15, 14, 16], vec![21, 17, 15, 14]),
            (vec![21, 21, 19], vec![22, 19]),
            (vec![19; 11], vec![23]),
            (vec![3, 0, 0, 1, 5, 2], vec![5, 3, 2, 1, 1]),
            (vec![4, 4, 4], vec![6]),
            (vec![9, 19, 19, 9], vec![20, 10]),
        ];
        for (sizes, depths) in cases {
            let items: Vec<(usize, usize)> = sizes.iter().copied().enumerate().collect();
            let trees = pack_witnesses(items.clone());
            check_blocks(&trees, &items);
            assert_eq!(trees.iter().map(|t| t.num_vars).collect::<Vec<_>>(), depths, "{sizes:?}");
            for n in &sizes {
                let holding = trees.iter().filter(|t| t.blocks.iter().any(|b| b.num_vars == *n)).count();
                assert_eq!(holding, 1, "witnesses of 2^{n} rows in {holding} trees: {sizes:?}");
            }
        }
    }

    #[test]
    fn packing_places_every_block_aligned_once() {
        let cases: Vec<Vec<usize>> = vec![
            vec![0],
            vec![1],
            vec![19, 19, 19, 19, 19, 13],
            vec![20, 20, 16, 15, 14, 16],
            vec![21, 21, 19],
            vec![19; 11],
            vec![23, 22, 13],
            vec![3, 0, 0, 1, 5, 2],
            vec![4, 4, 4],
        ];
        for sizes in cases {
            let items: Vec<(usize, usize)> = sizes.iter().copied().enumerate().collect();
            let trees = pack(items.clone());
            check_trees(&trees, &items);
        }
        // Eleven 2^19 witnesses: 2^22 + 2^20 + 2^19 without padding.
        let trees = pack((0..11).map(|i| (i, 19)).collect());
        assert_eq!(trees.iter().map(|t| t.num_vars).collect::<Vec<_>>(), vec![22, 20, 19]);
        // A small remainder is padded into one tree: 2^20 + (2^16 + 2^15 + 2^14 → 2^17).
        let trees = pack(vec![(0, 20), (1, 16), (2, 15), (3, 14)]);
        assert_eq!(trees.iter().map(|t| t.num_vars).collect::<Vec<_>>(), vec![20, 17]);
    }

    /// The closed-form weights against the MLE of the materialized indicator of each block.
    #[test]
    fn block_and_padding_weights_are_the_indicators_mles() {
        let mut rng = StdRng::seed_from_u64(7);
        for sizes in [vec![3usize, 0, 0, 1, 2], vec![2, 2, 2], vec![4, 1]] {
            let items: Vec<(usize, usize)> = sizes.iter().copied().enumerate().collect();
            for tree in pack(items) {
                let point: Vec<Fr> = (0..tree.num_vars).map(|_| Fr::rand(&mut rng)).collect();
                let mut free = vec![Fr::one(); 1 << tree.num_vars];
                for block in &tree.blocks {
                    let mut indicator = vec![Fr::from(0u64); 1 << tree.num_vars];
                    for leaf in block.offset..block.offset + (1 << block.num_vars) {
                        indicator[leaf] = Fr::one();
                        free[leaf] = Fr::from(0u64);
                    }
                    // eq_prefix times the block's own MLE of ones (1 at any point).
                    let mle = DenseMultilinearExtension::new(tree.num_vars, indicator).unwrap();
                    assert_eq!(mle.evaluate(&point).unwrap(), tree.block_weight(block, &point));
                }
                let mle = DenseMultilinearExtension::new(tree.num_vars, free).unwrap();
                assert_eq!(mle.evaluate(&point).unwrap(), tree.padding_weight(&point));
            }
        }
    }

    /// Rows 100..356 under the name "range" (the fresh-context review's misdeclared table).
    struct Posing;

    impl LookupTable for Posing {
        fn name(&self) -> &'static str {
            "range"
        }
        fn num_vars(&self) -> usize {
            8
        }
        fn num_columns(&self) -> usize {
            1
        }
        fn row(&self, index: usize) -> Vec<i64> {
            vec![100 + index as i64]
        }
        fn index_of(&self, tuple: &[i64]) -> Option<usize> {
            match tuple {
                [v] if (100..356).contains(v) => Some((*v - 100) as usize),
                _ => None,
            }
        }
        fn evaluate_columns(&self, point: &[Fr]) -> Result<Vec<Fr>, LookupError> {
            Ok(vec![crate::identity_column(point) + Fr::from(100u64)])
        }
    }

    #[test]
    fn equal_range_tables_share_a_group_and_others_do_not() {
        let (r8, r8b, r9) =
            (RangeTable::new(8).unwrap(), RangeTable::new(8).unwrap(), RangeTable::new(9).unwrap());
        let f = FunctionTable::new("f", 8, (0..256).collect()).unwrap();
        let g = FunctionTable::new("f", 8, (0..256).collect()).unwrap();
        let lookups: Vec<(&dyn LookupTable, usize)> = vec![(&r8, 3), (&f, 4), (&r9, 3), (&r8b, 5), (&g, 4)];
        let layout = BatchLayout::new(&lookups).unwrap();
        assert_eq!(layout.group_of, vec![0, 1, 2, 0, 3]);
        assert_eq!(layout.group_tables, vec![0, 1, 2, 4]);
        assert_eq!(layout.columns, 2);
        assert_eq!(layout.members(0).collect::<Vec<_>>(), vec![0, 3]);
        assert!(BatchLayout::new(&[]).is_err());
        // A table named like a range, of a range's shape, is not a range: its own group.
        let posing = Posing;
        let lookups: Vec<(&dyn LookupTable, usize)> = vec![(&r8, 3), (&posing, 3), (&r8b, 2)];
        assert_eq!(BatchLayout::new(&lookups).unwrap().group_of, vec![0, 1, 0]);
        assert!(BatchLayout::new(&[(&r8 as &dyn LookupTable, 33)]).is_err());
    }
}
