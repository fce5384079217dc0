//! Leader election between the processes sharing a store: a lease per task, taken and renewed
//! by compare-and-swap.

use super::super::core::now_unix;
use super::Etcd;
use crate::Result;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use std::time::Duration;

impl Etcd {
    /// Whether this process leads `task` for the next `term`: a compare-and-swap on
    /// `x/lead/<task>` = holder ‖ " " ‖ expiry (unix millis), taken when free or expired,
    /// renewed by its holder. Clocks of the servers are assumed to agree within a term.
    pub(super) fn claim_lead(&self, task: &str, term: Duration) -> Result<bool> {
        let key = self.internal(&format!("lead/{task}"));
        let now = u64::try_from(now_unix().as_millis()).unwrap_or(u64::MAX);
        let current = self.read_patiently(&key)?;
        if let Some(v) = &current {
            let text = String::from_utf8_lossy(v);
            let (holder, until) = text.split_once(' ').unwrap_or(("", "0"));
            if holder != self.me && until.parse::<u64>().unwrap_or(0) > now {
                return Ok(false);
            }
        }
        let mine = format!("{} {}", self.me, now.saturating_add(u64::try_from(term.as_millis()).unwrap_or(u64::MAX)));
        let guard = match current {
            Some(v) => Compare::value(key.clone(), CompareOp::Equal, v),
            None => Compare::version(key.clone(), CompareOp::Equal, 0),
        };
        self.patiently(|| self.txn(Txn::new().when([guard.clone()]).and_then([TxnOp::put(key.clone(), mine.clone(), None)])))
    }
}
