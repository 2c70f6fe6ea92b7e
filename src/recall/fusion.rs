//! Reciprocal rank fusion: the full-text ranking and the vector ranking of one search made
//! one. Each list gives an item `1 / (k + rank)`; an item both lists found sums both. It
//! needs no scores that compare across the two (bm25 and cosine do not), and a good item of
//! either list stays near the top.

use std::collections::HashMap;
use std::hash::Hash;

/// The constant of the fusion: large enough that the first few ranks of one list do not
/// drown the other list (the value the method was published with).
pub const FUSION_K: f64 = 60.0;

/// The items of `rankings` (each best first) fused, best first, each with its fused score.
/// Ties keep the order in which the items were first seen, list by list.
pub fn fuse<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<(T, f64)> {
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut seen = 0usize;
    for ranking in rankings {
        for (index, item) in ranking.iter().enumerate() {
            let gain = 1.0 / (FUSION_K + (index + 1) as f64);
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += gain;
        }
    }
    let mut fused: Vec<(T, f64, usize)> = scores
        .into_iter()
        .map(|(item, (score, first))| (item, score, first))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused
        .into_iter()
        .map(|(item, score, _)| (item, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(fused: &[(char, f64)]) -> String {
        fused.iter().map(|(item, _)| *item).collect()
    }

    #[test]
    fn one_list_keeps_its_order() {
        assert_eq!(order(&fuse(&[vec!['a', 'b', 'c']])), "abc");
    }

    #[test]
    fn an_item_both_lists_found_rises_above_one_found_by_one_list() {
        // `c` is third in both; `a` and `x` are first in one list only.
        let fused = fuse(&[vec!['a', 'b', 'c'], vec!['x', 'y', 'c']]);
        assert_eq!(fused[0].0, 'c');
        assert_eq!(order(&fused[1..3]), "ax");
    }

    #[test]
    fn ties_keep_the_order_first_seen() {
        assert_eq!(order(&fuse(&[vec!['a'], vec!['b']])), "ab");
        assert_eq!(order(&fuse(&[vec!['b'], vec!['a']])), "ba");
    }

    #[test]
    fn nothing_found_is_nothing_fused() {
        assert!(fuse::<char>(&[vec![], vec![]]).is_empty());
    }

    #[test]
    fn scores_are_the_sum_of_the_reciprocal_ranks() {
        let fused = fuse(&[vec!['a'], vec!['b', 'a']]);
        let expected = 1.0 / 61.0 + 1.0 / 62.0;
        assert!((fused[0].1 - expected).abs() < 1e-12);
    }
}
