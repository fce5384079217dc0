//! Requests to etcd: run on the client's runtime while the caller waits on a channel, their
//! errors as the store's, and re-sent while etcd is briefly unreachable.

use super::Etcd;
use crate::{Error, Result};
use etcd_client::Txn;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a commit whose outcome is unknown keeps being re-sent before it answers 504.
pub(super) const COMMIT_PATIENCE: Duration = Duration::from_secs(60);

/// An etcd client error as the store's; a timeout when etcd may only have been unreachable.
pub(super) fn etcd_err(e: &etcd_client::Error) -> Error {
    let timeout = match e {
        etcd_client::Error::GRpcStatus(s) => {
            matches!(s.code(), tonic::Code::DeadlineExceeded | tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown)
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => false,
    };
    Error::Etcd { message: e.to_string(), timeout }
}

/// Whether a request may have failed only because etcd was briefly unreachable (a leader
/// change, a member restarting): worth sending again.
pub(super) fn transient(e: &Error) -> bool {
    matches!(e, Error::Etcd { timeout: true, .. })
}

impl Etcd {
    /// The client's runtime.
    pub(super) fn rt(&self) -> &tokio::runtime::Runtime {
        match &self.rt {
            Some(rt) => rt,
            None => unreachable!("the etcd client runtime is only taken when dropping"),
        }
    }

    /// Runs `f` on the client runtime and waits for it here.
    pub(super) fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = flume::bounded(1);
        self.rt().spawn(async move {
            let _ = tx.send(f.await);
        });
        // The runtime lives as long as `self`, and the task always sends.
        rx.recv().unwrap_or_else(|_| unreachable!("the etcd client runtime dropped a request"))
    }

    /// The value of `key`.
    pub(super) fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut kv = self.kv.clone();
        let key = key.to_vec();
        let mut resp = self.run(async move { kv.get(key, None).await }).map_err(|e| etcd_err(&e))?;
        Ok(resp.take_kvs().into_iter().next().map(|kv| kv.into_key_value().1))
    }

    /// Reads `key`, re-sending while etcd is briefly unreachable.
    pub(super) fn read_patiently(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.patiently(|| self.read(key))
    }

    /// Calls `f` again, with growing pauses, while it fails only because etcd was briefly
    /// unreachable, for at most [`COMMIT_PATIENCE`].
    pub(super) fn patiently<T>(&self, mut f: impl FnMut() -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + COMMIT_PATIENCE;
        let mut pause = Duration::from_millis(20);
        loop {
            match f() {
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    /// Sends a transaction; whether its compares held (and its operations applied).
    pub(super) fn txn(&self, txn: Txn) -> Result<bool> {
        let mut kv = self.kv.clone();
        let resp = self.run(async move { kv.txn(txn).await }).map_err(|e| etcd_err(&e))?;
        Ok(resp.succeeded())
    }
}
