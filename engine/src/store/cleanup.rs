//! What kube-apiserver's CRD finalizer controller does once a CustomResourceDefinition is
//! deleted: its `Terminating` condition turns `InstanceDeletionInProgress`, every object of its
//! type is deleted (those with finalizers are marked deleted and waited for: each one's last
//! finalizer, when removed, starts this again), then the type is retired (no longer served; the
//! history of its objects stays readable through the history verbs) and the definition's
//! finalizer removed, so that it goes. It runs in the background after the request that
//! deleted the definition has its answer, and again on open for every definition being deleted
//! (a restart in the middle resumes it).

use super::address::{Collection, ObjectKey};
use super::definitions::{self, CRDS, FINALIZER, IN_PROGRESS};
use super::history_record::Who;
use super::keys::{EventType, CF_TYPES};
use super::kv::{self, Batch};
use super::options::{DeleteOptions, GetOptions, ListOptions};
use super::Registered;
use super::{commit::Plan, Store};
use crate::{Error, Result};
use serde_json::{json, Value};
use std::sync::Arc;

impl Store {
    /// Cleans up after the definition `name` in the background, when it is being deleted.
    pub(super) fn clean_up_definition_later(&self, name: &str) {
        let store = Arc::downgrade(&self.inner);
        let name = name.to_string();
        // A failure (the store closing, a storage error) leaves the definition terminating:
        // the next trigger, or the next open, tries again.
        let _ = std::thread::Builder::new().name("fieldstore-crd-cleanup".into()).spawn(move || {
            if let Some(inner) = store.upgrade() {
                let _ = Store { inner }.clean_up_definition(&name);
            }
        });
    }

    /// Resumes the clean-up of every definition being deleted (after a restart), and
    /// establishes those written without their controllers' status.
    pub(super) fn resume_definition_cleanups(&self) -> Result<()> {
        if self.core().registry.read().get(CRDS).is_none() {
            return Ok(());
        }
        for crd in self.list(&Collection::new(CRDS, None), &ListOptions::default())?.items {
            let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) else { continue };
            if definitions::deleting(&crd) {
                self.clean_up_definition_later(name);
            } else if crd.pointer("/status/conditions").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                // Written, and the process stopped before its controllers' write.
                let _ = super::wait::block_on(self.establish_definition(name));
            }
        }
        Ok(())
    }

    /// The finalizer's work for the definition `name`, when it is being deleted: see the
    /// module's documentation.
    fn clean_up_definition(&self, name: &str) -> Result<()> {
        let crd = match self.get(&ObjectKey::new(CRDS, None, name), &GetOptions::default()) {
            Ok(v) if definitions::deleting(&v) => v,
            Ok(_) | Err(Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let resource = format!("{}.{}", s("/spec/names/plural"), s("/spec/group"));
        let t = self.core().registry.read().get(&resource).cloned().filter(|t| t.spec.terminating && !t.is_view());
        if let Some(t) = t {
            self.update_definition(name, |crd| {
                let Some(Value::Array(conds)) = crd.pointer_mut("/status/conditions") else { return false };
                let Some(c) = conds.iter_mut().find(|c| c["type"] == "Terminating") else { return false };
                if c["reason"] == IN_PROGRESS.0 {
                    return false;
                }
                c["reason"] = json!(IN_PROGRESS.0);
                c["message"] = json!(IN_PROGRESS.1);
                true
            })?;
            let all = Collection::new(resource.clone(), None);
            self.delete_collection(&all, &ListOptions::default(), &DeleteOptions::default())?;
            if !self.list(&all, &ListOptions { limit: Some(1), ..ListOptions::default() })?.items.is_empty() {
                return Ok(());
            }
            self.retire(&t)?;
        }
        // The definition, without its finalizer, goes (when no other holds it).
        self.update_definition(name, |crd| {
            let Some(Value::Array(f)) = crd.pointer_mut("/metadata/finalizers") else { return false };
            let before = f.len();
            f.retain(|v| v != FINALIZER);
            f.len() != before
        })
    }

    /// Retires type `t`: durably, then in the registry.
    fn retire(&self, t: &Registered) -> Result<()> {
        let mut spec = t.spec.clone();
        spec.retired = true;
        spec.terminating = false;
        let record = serde_json::to_vec(&spec).map_err(|e| Error::BadRequest(e.to_string()))?;
        let compiled = Registered::compile(t.id, spec)?;
        let put = kv::Op::Put { cf: CF_TYPES, key: t.id.to_be_bytes().to_vec(), value: record };
        self.core().kv.write(Batch { ops: vec![put], revision: None, guards: Vec::new() }, true)?;
        self.core().registry.write().insert(compiled);
        Ok(())
    }

    /// Writes the definition `name` (being deleted) as `change` changes it (when it tells it
    /// changed anything).
    fn update_definition(&self, name: &str, change: impl Fn(&mut Value) -> bool) -> Result<()> {
        let t = self.resolve(CRDS)?;
        self.write_loop(&t, "", name, false, &Who::default(), |cur, _| {
            let Some(live) = cur.filter(|l| definitions::deleting(l)) else {
                return Err(Error::NotFound { resource: CRDS.into(), name: name.into() });
            };
            let mut out = live.clone();
            Ok(if change(&mut out) { Plan::Put(out, EventType::Modified) } else { Plan::NoOp(out) })
        })
        .map(|_| ())
    }
}
