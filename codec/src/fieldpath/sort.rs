//! Sorting path elements by their leading bytes first.
//!
//! A set built from a large list in random key order sorts tens of thousands of elements whose
//! keys live in separate allocations; a comparison sort that reads both keys at every step
//! misses the cache at every step once the list outgrows it. When every element is of one kind
//! whose order is the byte order of one string (field names; single-field item keys of one
//! name with string values; string set members), each element's first 16 bytes, read once in a
//! single pass, decide almost every comparison without touching the element again (what
//! databases call abbreviated keys).

use super::PathElement;
use serde_json::Value;

/// Sorts `v` by the path element `pe` gives of each entry and folds entries with equal elements
/// into the first of them with `merge`.
pub(crate) fn sort_dedup_by_element<T>(v: &mut Vec<T>, pe: impl Fn(&T) -> &PathElement, mut merge: impl FnMut(&mut T, T)) {
    /// Below this length a plain sort touches little enough memory.
    const ABBREVIATE_FROM: usize = 64;
    if v.windows(2).all(|w| pe(&w[0]) < pe(&w[1])) {
        return;
    }
    let abbreviated = if v.len() >= ABBREVIATE_FROM { abbreviations(v, &pe) } else { None };
    let Some(mut order) = abbreviated else {
        v.sort_unstable_by(|a, b| pe(a).cmp(pe(b)));
        let mut out: Vec<T> = Vec::with_capacity(v.len());
        for t in std::mem::take(v) {
            match out.last_mut() {
                Some(last) if pe(last) == pe(&t) => merge(last, t),
                _ => out.push(t),
            }
        }
        *v = out;
        return;
    };
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| pe(&v[a.1 as usize]).cmp(pe(&v[b.1 as usize]))));
    let mut slots: Vec<Option<T>> = std::mem::take(v).into_iter().map(Some).collect();
    let mut last_prefix = None;
    for (p, i) in order {
        let Some(t) = slots[i as usize].take() else { continue };
        // Different abbreviations are different elements; only equal ones are read again.
        match v.last_mut() {
            Some(last) if last_prefix == Some(p) && pe(last) == pe(&t) => merge(last, t),
            _ => v.push(t),
        }
        last_prefix = Some(p);
    }
}

/// Each element's 16-byte abbreviation and position, when all share one abbreviable kind: an
/// abbreviation order-preserving within that kind (`a < b` implies `abbr(a) <= abbr(b)`).
fn abbreviations<T>(v: &[T], pe: &impl Fn(&T) -> &PathElement) -> Option<Vec<(u128, u32)>> {
    u32::try_from(v.len()).ok()?;
    let first = pe(v.first()?);
    let mut out = Vec::with_capacity(v.len());
    for (i, t) in v.iter().enumerate() {
        let bytes = string_of(pe(t), first)?;
        out.push((prefix(bytes), i as u32));
    }
    Some(out)
}

/// The string whose byte order is `e`'s order among elements of `first`'s kind, or `None` when
/// `e` is not of an abbreviable kind or not of `first`'s.
fn string_of<'a>(e: &'a PathElement, first: &PathElement) -> Option<&'a [u8]> {
    match (e, first) {
        (PathElement::FieldName(n), PathElement::FieldName(_)) => Some(n.as_bytes()),
        (PathElement::Value(Value::String(s)), PathElement::Value(Value::String(_))) => Some(s.as_bytes()),
        (PathElement::Key(k), PathElement::Key(f)) => match (&k[..], &f[..]) {
            // One key field of the same name: the order is that of the values.
            ([(n, Value::String(s))], [(m, Value::String(_))]) if n == m => Some(s.as_bytes()),
            _ => None,
        },
        _ => None,
    }
}

/// A string's abbreviation: its first 16 bytes, big-endian, zero-padded. Comparing two of these
/// orders strings as their bytes do, except that equal abbreviations say nothing (unless both
/// strings are of the same length of at most 16 bytes, when they are equal).
pub fn prefix(bytes: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    u128::from_be_bytes(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn key(name: &str, v: Value) -> PathElement {
        PathElement::Key(Arc::from(vec![(Arc::from(name), v)]))
    }

    fn check(mut v: Vec<PathElement>) {
        let mut want = v.clone();
        want.sort();
        want.dedup();
        sort_dedup_by_element(&mut v, |e| e, |_, _| {});
        assert_eq!(v, want);
    }

    #[test]
    fn long_runs_sort_as_the_plain_sort_does() {
        // Shared prefixes longer than 16 bytes, prefixes of one another, empty strings, bytes
        // past 0x7f, and the zero byte that padding also uses.
        let words: Vec<String> = (0..300u32)
            .map(|i| match i % 6 {
                0 => format!("a-very-long-shared-prefix-{:05}", i.wrapping_mul(7919) % 1000),
                1 => "ab".repeat((i % 9) as usize),
                2 => format!("ü{i}"),
                3 => format!("ab\u{0}{i}"),
                4 => String::new(),
                _ => format!("{:x}", i.wrapping_mul(2_654_435_761)),
            })
            .collect();
        check(words.iter().map(|w| PathElement::FieldName(Arc::from(w.as_str()))).collect());
        check(words.iter().map(|w| PathElement::Value(Value::String(w.clone()))).collect());
        check(words.iter().map(|w| key("name", Value::String(w.clone()))).collect());
    }

    #[test]
    fn mixed_kinds_fall_back_to_the_plain_sort() {
        let mut v: Vec<PathElement> = (0..200u32).map(|i| key("name", Value::String(format!("{:x}", i.wrapping_mul(40503))))).collect();
        v.push(key("other", Value::String("a".into())));
        v.push(key("name", Value::from(3)));
        v.push(PathElement::FieldName(Arc::from("f")));
        v.push(PathElement::Index(4));
        v.push(PathElement::Index(4));
        v.push(PathElement::Value(Value::String("x".into())));
        v.rotate_left(7);
        check(v);
    }

    #[test]
    fn pairs_sort_by_their_element_and_equal_ones_merge() {
        let mut v: Vec<(PathElement, usize)> = (0..500usize)
            .map(|i| (PathElement::FieldName(Arc::from(format!("k{:x}", i.wrapping_mul(2_654_435_761) % 100_003).as_str())), i))
            .collect();
        // Duplicates: every element appears twice, with positions that sum when merged.
        v.extend(v.clone().into_iter().map(|(pe, i)| (pe, i + 1000)));
        v.rotate_left(333);
        let mut want: Vec<(PathElement, usize)> = Vec::new();
        let mut sorted = v.clone();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (pe, i) in sorted {
            match want.last_mut() {
                Some(last) if last.0 == pe => last.1 += i,
                _ => want.push((pe, i)),
            }
        }
        sort_dedup_by_element(&mut v, |p| &p.0, |a, b| a.1 += b.1);
        assert_eq!(v, want);
    }
}
