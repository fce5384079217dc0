//! The ordering of merged list items, replicating Go's `sort.SliceStable` (insertion sort and
//! SymMerge) so that ties land where apimachinery puts them.

use super::*;

/// One list item on its way to its final place: its ranks in the live list (`server`) and in
/// the list that orders it (`order`: the patch list or `$setElementOrder`).
pub(super) struct Ranked {
    pub(super) value: Value,
    pub(super) server: Option<usize>,
    pub(super) order: Option<usize>,
    pub(super) delete: bool,
}

/// Sorts `items` by rank as `normalizeSliceOrder` does: `sort.SliceStable` with a comparator
/// that calls an item without a rank "less" than anything; items carrying `$patch: delete` go to
/// the end first (`extractToDeleteItems`, lists of objects only).
pub(super) fn sort_by_rank(items: &mut Vec<Ranked>, rank: fn(&Ranked) -> Option<usize>) {
    if items.iter().any(|r| r.delete) {
        let (mut keep, deletes): (Vec<Ranked>, Vec<Ranked>) = std::mem::take(items).into_iter().partition(|r| !r.delete);
        sort_ranked(&mut keep, rank);
        keep.extend(deletes);
        *items = keep;
    } else {
        sort_ranked(items, rank);
    }
}

pub(super) fn sort_ranked(items: &mut [Ranked], rank: fn(&Ranked) -> Option<usize>) {
    if items.iter().all(|r| rank(r).is_some()) {
        // A strict weak order: every stable sort agrees with Go's.
        items.sort_by_key(rank);
    } else {
        // Not an order: only Go's own algorithm gives Go's result.
        go_stable_sort(items, |a, b| match (rank(a), rank(b)) {
            (Some(x), Some(y)) => x < y,
            _ => true,
        });
    }
}

/// Go's `sort.Stable`: insertion sorts of 20-item blocks, then `symMerge` passes.
pub(super) fn go_stable_sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool + Copy) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        go_insertion_sort(data, a, b, less);
        a = b;
        b += block;
    }
    go_insertion_sort(data, a, n, less);
    while block < n {
        let (mut a, mut b) = (0, 2 * block);
        while b <= n {
            go_sym_merge(data, a, a + block, b, less);
            a = b;
            b += 2 * block;
        }
        if a + block < n {
            go_sym_merge(data, a, a + block, n, less);
        }
        block *= 2;
    }
}

pub(super) fn go_insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

pub(super) fn go_sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: impl Fn(&T, &T) -> bool + Copy) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i.saturating_sub(1) {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        data[start..end].rotate_left(m - start);
    }
    if a < start && start < mid {
        go_sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        go_sym_merge(data, mid, end, b, less);
    }
}
