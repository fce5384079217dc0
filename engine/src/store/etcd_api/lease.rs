//! Leases: granted and revoked through the committer (a revocation deletes the lease's keys
//! at one revision), kept alive and read in memory. A grant is persisted (`meta`,
//! `lease/<id>` → TTL); after a restart every lease gets a full TTL again (as etcd after a
//! leader change) and its keys are found from their latest versions.

use super::super::etcd_state::{Lease, Leases};
use super::super::kv::{Flow, Kv};
use super::layout::{lease_id, split_version_key, unescape, Version, CF_ETCD, CF_LEASES, LEASE_PREFIX};
use super::txn::{Answer, Request};
use super::{EtcdApiError, Store};
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// A lease as `LeaseTimeToLive` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The lease id.
    pub id: i64,
    /// Seconds left (rounded down).
    pub ttl: i64,
    /// The TTL it was granted.
    pub granted_ttl: i64,
    /// The keys attached to it (when asked for).
    pub keys: Vec<Vec<u8>>,
}

/// The lease table of a store being opened: its grants, each key's latest version's lease.
pub(crate) fn load(kv: &dyn Kv) -> Result<Leases> {
    let mut leases = Leases::default();
    let end = super::super::keys::prefix_end(LEASE_PREFIX);
    kv.scan(CF_LEASES, LEASE_PREFIX, end.as_deref(), &mut |k, v| {
        let id = lease_id(k)?;
        let ttl = i64::from_be_bytes(v.try_into().map_err(|_| Error::Corrupt("malformed lease record".into()))?);
        let deadline = Instant::now() + Duration::from_secs(u64::try_from(ttl).unwrap_or(0));
        leases.map.insert(id, Lease { granted: ttl, deadline, keys: Default::default() });
        leases.last_id = leases.last_id.max(id);
        Ok(Flow::Continue)
    })?;
    if leases.map.is_empty() {
        return Ok(leases);
    }
    let mut last: Option<Vec<u8>> = None;
    kv.scan(CF_ETCD, &[], None, &mut |k, v| {
        let (escaped, _) = split_version_key(k)?;
        if last.as_deref() == Some(escaped) {
            return Ok(Flow::Continue);
        }
        last = Some(escaped.to_vec());
        if !Version::is_tombstone(v) {
            let version = Version::decode(v)?;
            if let Some(l) = leases.map.get_mut(&version.lease) {
                l.keys.insert(unescape(escaped)?.0);
            }
        }
        Ok(Flow::Continue)
    })?;
    Ok(leases)
}

fn seconds_left(deadline: Instant) -> i64 {
    i64::try_from(deadline.saturating_duration_since(Instant::now()).as_secs()).unwrap_or(i64::MAX)
}

impl Store {
    /// Grants a lease of `ttl` seconds (etcd raises it to its minimum, 2 s), with id `id` (0:
    /// one is picked). Returns the id and the TTL granted.
    ///
    /// # Errors
    /// [`EtcdApiError::LeaseExists`], [`EtcdApiError::LeaseTtlTooLarge`].
    pub async fn etcd_lease_grant_async(&self, ttl: i64, id: i64) -> Result<(i64, i64)> {
        match self.etcd_job(Request::Grant { id, ttl }).await? {
            (Answer::Granted { id, ttl }, _) => Ok((id, ttl)),
            _ => Err(Error::Corrupt("unexpected answer to a lease grant".into())),
        }
    }

    /// [`Store::etcd_lease_grant_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_lease_grant_async`].
    pub fn etcd_lease_grant(&self, ttl: i64, id: i64) -> Result<(i64, i64)> {
        super::super::wait::block_on(self.etcd_lease_grant_async(ttl, id))
    }

    /// Revokes a lease and deletes its keys (at one revision, when it has any). Returns the
    /// store's revision after it.
    ///
    /// # Errors
    /// [`EtcdApiError::LeaseNotFound`].
    pub async fn etcd_lease_revoke_async(&self, id: i64) -> Result<u64> {
        self.etcd_job(Request::Revoke { id }).await.map(|(_, rev)| rev)
    }

    /// [`Store::etcd_lease_revoke_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_lease_revoke_async`].
    pub fn etcd_lease_revoke(&self, id: i64) -> Result<u64> {
        super::super::wait::block_on(self.etcd_lease_revoke_async(id))
    }

    /// Renews a lease for its granted TTL; returns that TTL, or 0 when the lease does not exist
    /// (etcd's keep-alive answer).
    #[must_use]
    pub fn etcd_lease_keep_alive(&self, id: i64) -> i64 {
        let mut leases = self.core().etcd.leases.lock();
        match leases.map.get_mut(&id) {
            Some(l) if l.deadline > Instant::now() => {
                l.deadline = Instant::now() + Duration::from_secs(u64::try_from(l.granted).unwrap_or(0));
                l.granted
            }
            _ => 0,
        }
    }

    /// A lease's remaining and granted TTL, and its keys when `keys`.
    ///
    /// # Errors
    /// [`EtcdApiError::LeaseNotFound`].
    pub fn etcd_lease_time_to_live(&self, id: i64, keys: bool) -> Result<LeaseInfo> {
        let leases = self.core().etcd.leases.lock();
        let l = leases.map.get(&id).ok_or(Error::EtcdApi(EtcdApiError::LeaseNotFound))?;
        Ok(LeaseInfo {
            id,
            ttl: seconds_left(l.deadline),
            granted_ttl: l.granted,
            keys: if keys { l.keys.iter().cloned().collect() } else { Vec::new() },
        })
    }

    /// The ids of every lease.
    #[must_use]
    pub fn etcd_leases(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.core().etcd.leases.lock().map.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Revokes every lease past its deadline (deleting its keys); returns how many. Run
    /// periodically by the server (`fieldstore serve --etcd-api`).
    ///
    /// # Errors
    /// Storage errors.
    pub async fn etcd_expire_leases_async(&self) -> Result<usize> {
        let now = Instant::now();
        let expired: Vec<i64> = self.core().etcd.leases.lock().map.iter().filter(|(_, l)| l.deadline <= now).map(|(id, _)| *id).collect();
        let mut n = 0;
        for id in expired {
            match self.etcd_lease_revoke_async(id).await {
                Ok(_) => n += 1,
                // Revoked meanwhile.
                Err(Error::EtcdApi(EtcdApiError::LeaseNotFound)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// [`Store::etcd_expire_leases_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_expire_leases_async`].
    pub fn etcd_expire_leases(&self) -> Result<usize> {
        super::super::wait::block_on(self.etcd_expire_leases_async())
    }
}
