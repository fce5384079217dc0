//! What kube-apiserver's naming and establishing controllers do once a client wrote a
//! CustomResourceDefinition: the definition's status gets its accepted names and its
//! `NamesAccepted` and `Established` conditions ([`definitions::establish`]), written through
//! the status subresource as manager `kube-apiserver`. The store runs them right after the
//! client's write commits, before the client hears (the answer is the definition as the
//! client's own write left it, as kube-apiserver answers), and on open for a definition whose
//! status was never written (the process stopped in between).

use super::commit::Plan;
use super::definitions::{self, establish, others_of_group, CRDS};
use super::history_record::Who;
use super::meta::finish_update;
use super::Store;
use crate::Result;
use serde_json::Value;

/// The manager Kubernetes' CRD controllers write a definition's status as.
const CONTROLLERS: &str = "kube-apiserver";

impl Store {
    /// What kube-apiserver's naming and establishing controllers do once a client wrote the
    /// definition `name`: its status gets [`establish`]'s accepted names and conditions, written
    /// through the status subresource as manager [`CONTROLLERS`] (an Update entry of its own).
    /// Nothing is written when they are already so.
    ///
    /// # Errors
    /// Those of a write of the status.
    pub(super) async fn establish_definition(&self, name: &str) -> Result<()> {
        let t = self.resolve(CRDS)?;
        let Some(fm) = t.status.as_ref() else { return Ok(()) };
        let now = super::core::now_time();
        let time = Value::String(now.as_str().to_string());
        let who = Who {
            manager: CONTROLLERS.into(),
            operation: Some(crate::merge::Operation::Update),
            subresource: "status".into(),
            note: String::new(),
        };
        self.write_loop_async(&t, "", name, false, &who, |cur, known| {
            // A definition being deleted is the clean-up's.
            let Some(live) = cur.filter(|l| !definitions::deleting(l)) else { return Ok(Plan::NoOp(Value::Null)) };
            let specs = self.core().registry.read().specs();
            let mut new = live.clone();
            if !establish(&mut new, &others_of_group(live, &specs), &time) {
                return Ok(Plan::NoOp(Value::Null));
            }
            let out = fm.update_known(Some(live), known, new, CONTROLLERS, &now)?.object;
            Ok(finish_update(live, out, false))
        })
        .await
        .map(|_| ())
    }
}
