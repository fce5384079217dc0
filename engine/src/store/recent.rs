//! The committer's memory of its recent commits: the latest state of every object it committed
//! in its last [`CAPACITY`] commits. A writer that read an object after the oldest of them
//! (`read_at`, the revision visible when it read) needs no second read of that object by the
//! committer: a commit to it since would be remembered here, and none means the version the
//! writer read is still the latest. Only for a store no other process writes (RocksDB); a shared
//! backend checks in the transaction itself.

use std::collections::{HashMap, VecDeque};

/// How many commits are remembered (about 100 bytes each).
pub(super) const CAPACITY: usize = 1 << 16;

/// The latest state of objects committed recently: by object prefix, the revision of the newest
/// version and whether it is a tombstone.
pub(super) struct Recent {
    latest: HashMap<Vec<u8>, (u64, bool)>,
    order: VecDeque<(u64, Vec<u8>)>,
    /// Every commit after this revision is remembered.
    covered_after: u64,
    capacity: usize,
}

/// What [`Recent::state`] knows of an object.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Known {
    /// Committed after the writer read it: its latest state.
    Since(u64, bool),
    /// Not committed after the writer read it: what the writer read is the latest.
    Unchanged,
    /// The writer read before what is remembered: the store must be read.
    Unknown,
}

impl Recent {
    /// Remembers the commits after revision `start` (the store's visible revision when the
    /// committer starts), at most `capacity`.
    pub(super) fn new(start: u64, capacity: usize) -> Recent {
        Recent { latest: HashMap::new(), order: VecDeque::new(), covered_after: start, capacity }
    }

    /// What is known of the object at `prefix` for a writer that read it when revision
    /// `read_at` was visible.
    pub(super) fn state(&self, prefix: &[u8], read_at: u64) -> Known {
        if read_at < self.covered_after {
            return Known::Unknown;
        }
        match self.latest.get(prefix) {
            Some(&(rev, tomb)) if rev > read_at => Known::Since(rev, tomb),
            _ => Known::Unchanged,
        }
    }

    /// Remembers a committed version of the object at `prefix`.
    pub(super) fn record(&mut self, prefix: &[u8], rev: u64, tombstone: bool) {
        self.latest.insert(prefix.to_vec(), (rev, tombstone));
        self.order.push_back((rev, prefix.to_vec()));
        while self.order.len() > self.capacity {
            let Some((old, p)) = self.order.pop_front() else { break };
            self.covered_after = self.covered_after.max(old);
            if self.latest.get(&p).is_some_and(|&(r, _)| r == old) {
                self.latest.remove(&p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_only_what_it_covers() {
        let mut r = Recent::new(10, 2);
        assert_eq!(r.state(b"a", 9), Known::Unknown);
        assert_eq!(r.state(b"a", 10), Known::Unchanged);
        r.record(b"a", 11, false);
        assert_eq!(r.state(b"a", 10), Known::Since(11, false));
        assert_eq!(r.state(b"a", 11), Known::Unchanged);
        r.record(b"b", 12, true);
        assert_eq!(r.state(b"b", 11), Known::Since(12, true));
        // A third commit pushes the first out: readers before it are unknown now.
        r.record(b"c", 13, false);
        assert_eq!(r.state(b"a", 10), Known::Unknown);
        assert_eq!(r.state(b"a", 11), Known::Unchanged);
        assert_eq!(r.state(b"c", 12), Known::Since(13, false));
        // The same object again: its newest commit counts.
        r.record(b"c", 14, true);
        r.record(b"d", 15, false);
        assert_eq!(r.state(b"c", 13), Known::Since(14, true));
    }
}
