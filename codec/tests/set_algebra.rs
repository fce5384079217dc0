//! Model-based property tests of [`Set`]: random sets of paths checked against a `BTreeSet<Path>`.
//!
//! The alphabet is small so that sets overlap, share prefixes and hold paths that are both members
//! and prefixes of other members; it has all four element kinds, and numbers such as `1` and `1.0`
//! that structured-merge-diff treats as the same element.

use fieldstore_codec::{Path, PathElement, Set};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

type Model = BTreeSet<Path>;

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(1)),
        Just(json!(1.0)),
        Just(json!(2)),
        Just(json!(2.5)),
        Just(json!("x")),
        Just(json!("y")),
        Just(json!(true)),
        Just(json!(null)),
    ]
}

fn element() -> impl Strategy<Value = PathElement> {
    prop_oneof![
        3 => prop::sample::select(vec!["a", "b", "c"]).prop_map(PathElement::field),
        2 => prop::collection::btree_map(prop::sample::select(vec!["k", "n"]), scalar(), 1..=2)
            .prop_map(|m| PathElement::key(m.into_iter().map(|(k, v)| (k.into(), v)).collect())),
        1 => scalar().prop_map(PathElement::Value),
        1 => (0i64..3).prop_map(PathElement::Index),
    ]
}

fn path() -> impl Strategy<Value = Path> {
    prop::collection::vec(element(), 1..=4).prop_map(Path)
}

fn paths() -> impl Strategy<Value = Vec<Path>> {
    prop::collection::vec(path(), 0..24)
}

fn build(paths: &[Path]) -> (Set, Model) {
    (Set::from_paths(paths), paths.iter().cloned().collect())
}

fn listed(model: &Model) -> Vec<Path> {
    model.iter().cloned().collect()
}

/// Whether some member of `prefixes` is a prefix of `p` (or `p` itself).
fn under_any(p: &Path, prefixes: &Model) -> bool {
    prefixes.iter().any(|q| p.starts_with(q))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn paths_size_and_has_follow_the_model(a in paths(), probes in paths()) {
        let (set, model) = build(&a);
        let got = set.paths();
        prop_assert_eq!(&got, &listed(&model), "paths() must list the model in path order");
        prop_assert!(got.windows(2).all(|w| matches!(w, [x, y] if x < y)), "paths() not strictly sorted");
        prop_assert_eq!(set.size(), model.len());
        prop_assert_eq!(set.is_empty(), model.is_empty());
        for p in a.iter().chain(&probes) {
            prop_assert_eq!(set.has(p), model.contains(p), "has({})", p);
        }
        prop_assert!(!set.has(&Path::root()));
    }

    #[test]
    fn union_intersection_difference_follow_the_model(a in paths(), b in paths()) {
        let ((sa, ma), (sb, mb)) = (build(&a), build(&b));
        prop_assert_eq!(sa.union(&sb).paths(), listed(&ma.union(&mb).cloned().collect()));
        prop_assert_eq!(sa.intersection(&sb).paths(), listed(&ma.intersection(&mb).cloned().collect()));
        prop_assert_eq!(sa.difference(&sb).paths(), listed(&ma.difference(&mb).cloned().collect()));
    }

    #[test]
    fn recursive_difference_removes_whole_subtrees(a in paths(), b in paths()) {
        let ((sa, ma), (sb, mb)) = (build(&a), build(&b));
        let want: Model = ma.iter().filter(|p| !under_any(p, &mb)).cloned().collect();
        prop_assert_eq!(sa.recursive_difference(&sb).paths(), listed(&want));
    }

    /// A large set against a small one (either way round): the operations gallop through the
    /// large side instead of merging element by element.
    #[test]
    fn skewed_operations_follow_the_model(a in prop::collection::vec(path(), 40..160), b in prop::collection::vec(path(), 0..4), swap in any::<bool>()) {
        let ((sa, ma), (sb, mb)) = (build(&a), build(&b));
        let ((sa, ma), (sb, mb)) = if swap { ((sb, mb), (sa, ma)) } else { ((sa, ma), (sb, mb)) };
        prop_assert_eq!(sa.union(&sb).paths(), listed(&ma.union(&mb).cloned().collect()));
        prop_assert_eq!(sa.intersection(&sb).paths(), listed(&ma.intersection(&mb).cloned().collect()));
        prop_assert_eq!(sa.difference(&sb).paths(), listed(&ma.difference(&mb).cloned().collect()));
        let want: Model = ma.iter().filter(|p| !under_any(p, &mb)).cloned().collect();
        prop_assert_eq!(sa.recursive_difference(&sb).paths(), listed(&want));
        // Parts of the large set taken as the small one hit its elements exactly.
        let some: Vec<Path> = a.iter().step_by(7).cloned().collect();
        let (ss, ms) = build(&some);
        let (big, mbig) = build(&a);
        prop_assert_eq!(big.difference(&ss).paths(), listed(&mbig.difference(&ms).cloned().collect()));
        prop_assert_eq!(big.intersection(&ss).paths(), listed(&mbig.intersection(&ms).cloned().collect()));
        let want: Model = mbig.iter().filter(|p| !under_any(p, &ms)).cloned().collect();
        prop_assert_eq!(big.recursive_difference(&ss).paths(), listed(&want));
    }

    #[test]
    fn identities(a in paths(), b in paths()) {
        let ((sa, _), (sb, _)) = (build(&a), build(&b));
        let empty = Set::new();
        prop_assert_eq!(&sa.union(&empty), &sa);
        prop_assert_eq!(&empty.union(&sa), &sa);
        prop_assert_eq!(&sa.intersection(&sa), &sa);
        prop_assert!(sa.intersection(&empty).is_empty());
        prop_assert!(sa.difference(&sa).is_empty());
        prop_assert!(sa.recursive_difference(&sa).is_empty());
        prop_assert_eq!(&sa.difference(&empty), &sa);
        prop_assert_eq!(sa.union(&sb), sb.union(&sa));
        prop_assert_eq!(sa.intersection(&sb), sb.intersection(&sa));
        prop_assert!(sa.difference(&sb).intersection(&sb).is_empty());
        prop_assert_eq!(sa.union(&sb).size() + sa.intersection(&sb).size(), sa.size() + sb.size());
    }

    #[test]
    fn leaves_and_prefix_views_follow_the_model(a in paths(), prefix in path()) {
        let (set, model) = build(&a);
        let leaves: Model = model
            .iter()
            .filter(|p| !model.iter().any(|q| q.0.len() > p.0.len() && q.starts_with(p)))
            .cloned()
            .collect();
        prop_assert_eq!(set.leaves().paths(), listed(&leaves));

        let kept: Model = model.iter().filter(|p| p.starts_with(&prefix)).cloned().collect();
        prop_assert_eq!(set.filter_prefix(&prefix).paths(), listed(&kept));

        let below: Model = kept
            .iter()
            .filter(|p| p.0.len() > prefix.0.len())
            .map(|p| Path(p.0[prefix.0.len()..].to_vec()))
            .collect();
        prop_assert_eq!(set.with_prefix(&prefix).paths(), listed(&below));
    }

    #[test]
    fn iterate_visits_paths_in_order(a in paths()) {
        let (set, model) = build(&a);
        let mut seen = Vec::new();
        set.iterate(|p| seen.push(p.clone()));
        prop_assert_eq!(seen, listed(&model));
    }
}

#[test]
fn int_and_float_name_the_same_path() {
    let int = Path(vec![PathElement::field("a"), PathElement::Value(json!(1))]);
    let float = Path(vec![PathElement::field("a"), PathElement::Value(json!(1.0))]);
    let set = Set::from_paths([&int]);
    assert!(set.has(&float));
    assert_eq!(set.union(&Set::from_paths([&float])).size(), 1);
    assert!(set.difference(&Set::from_paths([&float])).is_empty());
}
