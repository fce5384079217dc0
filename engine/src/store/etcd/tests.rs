//! The etcd backend's own tests, each against a single etcd member of its own: a commit whose
//! answer was lost, intents and commit ids left behind, guards, a staged commit left half done.
#![allow(clippy::unwrap_used)]

use super::super::keys::{CF_HISTORY, CF_META, CF_OBJECTS, META_REVISION};
use super::super::kv::{Batch, Committed, Guard, Kv};
use super::head::Head;
use super::layout::prefix_end;
use super::Etcd;
use etcd_client::{GetOptions, Txn, TxnOp};

/// The test etcd member (shared with the integration tests and benches).
#[path = "../../../../tests/support/etcd_member.rs"]
mod etcd_test_member;

use etcd_test_member::Member;

/// A single etcd member for one test, stopped when dropped; `None` without an etcd binary.
fn etcd() -> Option<(String, Member, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let member = Member::single(dir.path().join("etcd"), &[])?;
    Some((member.url(), member, dir))
}

/// A commit whose answer was lost (it applied, the committer does not know): sent again,
/// its compare fails, and the commit id tells it was this commit — never reported as lost,
/// never applied twice. Another commit's id at that revision is a lost race.
#[test]
fn a_commit_whose_answer_was_lost_resolves_by_its_id() {
    let Some((url, _member, _dir)) = etcd() else { return };
    let kv = Etcd::connect(&[url], "/unit").unwrap();
    let id = [7u8; 16];
    let mut batch = Batch::default();
    batch.put(CF_OBJECTS, b"k".to_vec(), b"v".to_vec());
    let ops = || {
        let mut ops: Vec<TxnOp> = kv.groups(&batch.ops).pop().unwrap();
        ops.push(TxnOp::put(kv.key(CF_META, META_REVISION), Head { revision: 1, id, pending: None }.encode(), None));
        ops.push(TxnOp::put(kv.commit_key(1), id.to_vec(), None));
        Txn::new().when([kv.head_is(None)]).and_then(ops)
    };
    // The first try applies; its answer is "lost".
    assert!(kv.txn(ops()).unwrap());
    assert_eq!(kv.resend_commit(ops, 1, &id, true).unwrap(), Committed::Yes);
    assert_eq!(kv.resend_commit(ops, 1, &[8u8; 16], true).unwrap(), Committed::Raced);
    // Without a lost answer, a failed compare is a race.
    assert_eq!(kv.resend_commit(ops, 1, &id, false).unwrap(), Committed::Raced);
    assert_eq!(kv.revision().unwrap(), 1);
    assert_eq!(kv.get(CF_OBJECTS, b"k").unwrap(), Some(b"v".to_vec()));
    // An intent staged on base 0 by a server that died before committing: garbage now
    // that the store is at 1; one staged on base 1 (a commit in progress) is kept. Commit
    // ids go with compaction.
    let (dead, live) = (kv.intent_prefix(0, &[9u8; 16]), kv.intent_prefix(1, &[9u8; 16]));
    for k in [&dead, &live] {
        assert!(kv.txn(Txn::new().and_then([TxnOp::put(k.clone(), b"chunk".to_vec(), None)])).unwrap());
    }
    kv.collect_garbage(0).unwrap();
    assert_eq!(kv.read(&dead).unwrap(), None);
    assert_eq!(kv.read(&live).unwrap(), Some(b"chunk".to_vec()));
    assert_eq!(kv.read(&kv.commit_key(1)).unwrap(), Some(id.to_vec()));
    kv.collect_garbage(2).unwrap();
    assert_eq!(kv.read(&kv.commit_key(1)).unwrap(), None);
    // Guards: a commit applies only when each guard's range holds no key.
    let guarded = |revision: u64, from: &[u8], to: &[u8]| {
        let mut b = Batch { revision: Some(revision), ..Batch::default() };
        b.put(CF_OBJECTS, format!("g{revision}").into_bytes(), b"v".to_vec());
        b.guards.push(Guard { cf: CF_OBJECTS, from: from.to_vec(), to: to.to_vec() });
        kv.commit(b, revision - 1, true).unwrap()
    };
    assert_eq!(guarded(2, b"j", b"ka"), Committed::Raced, "k is in [j, ka)");
    assert_eq!(kv.revision().unwrap(), 1);
    assert_eq!(guarded(2, b"ka", b"kz"), Committed::Yes, "[ka, kz) is empty");
    assert_eq!(kv.revision().unwrap(), 2);
}

/// A server killed between a staged commit's transaction and the application of its
/// operations: nothing of it is visible, no other commit can slip in, and the next
/// process that reads the revision finishes it from the intent, whole.
#[test]
fn a_staged_commit_left_half_done_is_finished_by_the_next_reader() {
    let Some((url, _member, _dir)) = etcd() else { return };
    let first = Etcd::connect(std::slice::from_ref(&url), "/staged").unwrap();
    let mut batch = Batch { revision: Some(1), ..Batch::default() };
    for i in 0..300u32 {
        batch.put(CF_OBJECTS, format!("obj-{i:03}").into_bytes(), vec![b'a' + (i % 26) as u8; 8 << 10]);
    }
    batch.put(CF_HISTORY, b"big".to_vec(), vec![b'h'; 700 << 10]);
    assert!(first.groups(&batch.ops).len() > 1, "larger than one transaction");
    let id = [3u8; 16];
    let compares = [first.head_is(None)];
    // The commit transaction went through; the process "dies" before finishing.
    assert!(first.stage(&batch.ops, 0, 1, &id, &compares).unwrap().is_some());
    drop(first);
    let raw = Etcd::connect(std::slice::from_ref(&url), "/staged").unwrap();
    assert_eq!(raw.read(&raw.key(CF_OBJECTS, b"obj-000")).unwrap(), None, "nothing visible yet");
    // Another commit on the old base loses.
    let mut other = Batch { revision: Some(1), ..Batch::default() };
    other.put(CF_OBJECTS, b"other".to_vec(), b"x".to_vec());
    // (`commit` first finishes the pending revision it finds, then reports the race.)
    assert_eq!(raw.commit(other, 0, true).unwrap(), Committed::Raced);
    assert_eq!(raw.revision().unwrap(), 1);
    for i in [0u32, 150, 299] {
        let v = raw.get(CF_OBJECTS, format!("obj-{i:03}").as_bytes()).unwrap().unwrap();
        assert_eq!(v, vec![b'a' + (i % 26) as u8; 8 << 10]);
    }
    assert_eq!(raw.get(CF_HISTORY, b"big").unwrap().unwrap().len(), 700 << 10);
    assert_eq!(raw.get(CF_OBJECTS, b"other").unwrap(), None);
    let intent = raw.intent_prefix(0, &id);
    let left = raw.run({
        let mut kv = raw.kv.clone();
        let (from, to) = (intent.clone(), prefix_end(&intent));
        async move { kv.get(from, Some(GetOptions::new().with_range(to).with_count_only())).await }
    });
    assert_eq!(left.unwrap().count(), 0, "the intent is removed");
}
