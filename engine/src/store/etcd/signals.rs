//! Change signals: etcd watches on the revision key, the compacted revision and the types,
//! which wake the follower ([`Signals`]) when another process wrote.

use super::super::keys::{CF_META, META_COMPACTED, META_REVISION};
use super::super::kv::Changed;
use super::head::Head;
use super::layout::prefix_end;
use super::Etcd;
use etcd_client::WatchOptions;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the watches of [`Etcd::watch_changes`] saw since the follower last asked.
pub(super) struct Signals {
    bits: AtomicU8,
    revision: AtomicU64,
    wake: (flume::Sender<()>, flume::Receiver<()>),
    /// Set when the store closes: the watch tasks end.
    closed: AtomicBool,
}

impl Signals {
    /// No signal yet.
    pub(super) fn new() -> Signals {
        Signals { bits: AtomicU8::new(0), revision: AtomicU64::new(0), wake: flume::bounded(1), closed: AtomicBool::new(false) }
    }

    /// Sets `bits` (with the newest applied revision seen, if any) and wakes the follower.
    fn raise(&self, bits: u8, revision: Option<u64>) {
        if let Some(r) = revision {
            self.revision.fetch_max(r, Ordering::SeqCst);
        }
        self.bits.fetch_or(bits, Ordering::SeqCst);
        let _ = self.wake.0.try_send(());
    }

    /// What changed, waiting at most `timeout` for a signal (after which everything may have:
    /// a poll).
    pub(super) fn wait(&self, timeout: Duration) -> Changed {
        let _ = self.wake.1.recv_timeout(timeout);
        let bits = self.bits.swap(0, Ordering::SeqCst);
        if bits == 0 {
            // Nothing signalled within the timeout: look at everything (a poll).
            return Changed { bits: Changed::ALL, revision: None };
        }
        let revision = self.revision.load(Ordering::SeqCst);
        Changed { bits, revision: (revision > 0).then_some(revision) }
    }

    /// Ends the watch tasks (the store closes).
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl Etcd {
    /// Watches the revision key, the compacted revision and the types; each change sets its
    /// bit in `signals` (with the newest applied revision seen) and wakes the follower. A watch
    /// that breaks is made again, with every bit set (what happened meanwhile is unknown).
    pub(super) fn watch_changes(&self, signals: &Arc<Signals>) {
        let ranges = [
            (self.key(CF_META, META_REVISION), None, Changed::REVISION),
            (self.key(CF_META, META_COMPACTED), None, Changed::COMPACTED),
            (self.family_prefix(b't'), Some(prefix_end(&self.family_prefix(b't'))), Changed::TYPES),
        ];
        for (key, end, bit) in ranges {
            let (signals, mut client) = (signals.clone(), self.client.clone());
            self.rt().spawn(async move {
                while !signals.closed.load(Ordering::SeqCst) {
                    let options = end.clone().map(|e| WatchOptions::new().with_range(e));
                    if let Ok((_watcher, mut stream)) = client.watch(key.clone(), options).await {
                        signals.raise(Changed::ALL, None);
                        while let Ok(Some(resp)) = stream.message().await {
                            let newest = resp
                                .events()
                                .iter()
                                .filter_map(|e| e.kv().and_then(|kv| Head::decode(kv.value()).ok()))
                                .filter(|h| h.pending.is_none())
                                .map(|h| h.revision)
                                .max();
                            signals.raise(bit, newest.filter(|_| bit == Changed::REVISION));
                            if signals.closed.load(Ordering::SeqCst) {
                                return;
                            }
                        }
                    }
                    signals.raise(Changed::ALL, None);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        }
    }
}
