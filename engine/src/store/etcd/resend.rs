//! Commit transactions re-sent until etcd answers: a commit whose outcome is unknown (a
//! timeout, a leader change) is sent again as it is, and its commit id tells whether an
//! earlier try applied.

use super::super::kv::Committed;
use super::requests::{transient, COMMIT_PATIENCE};
use super::Etcd;
use crate::Result;
use etcd_client::Txn;
use std::time::{Duration, Instant};

impl Etcd {
    /// Sends the commit transaction `build()` until etcd answers; an unknown outcome (timeout)
    /// is resolved by re-sending: a failed compare after a lost answer is our own earlier try
    /// when the commit key of `revision` holds our id.
    pub(super) fn commit_txn(&self, build: impl Fn() -> Txn, revision: u64, id: &[u8; 16]) -> Result<Committed> {
        self.resend_commit(build, revision, id, false)
    }

    /// [`Etcd::commit_txn`], `unsure` from the start when an earlier try went unanswered.
    pub(super) fn resend_commit(&self, build: impl Fn() -> Txn, revision: u64, id: &[u8; 16], mut unsure: bool) -> Result<Committed> {
        let deadline = Instant::now() + COMMIT_PATIENCE;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.txn(build()) {
                Ok(true) => return Ok(Committed::Yes),
                Ok(false) if !unsure => return Ok(Committed::Raced),
                Ok(false) => {
                    let mine = self.read_patiently(&self.commit_key(revision))?.is_some_and(|v| v == id);
                    return Ok(if mine { Committed::Yes } else { Committed::Raced });
                }
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    unsure = true;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        }
    }
}
