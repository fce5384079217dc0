//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and ReplicationControllers
//! (`kubectl scale`): an `autoscaling/v1` Scale read from the object, and writes of it (a new
//! Scale, or a patch of the current one) that set the object's `spec.replicas`.

use super::super::address::ObjectKey;
use super::super::core::now_time;
use super::super::history_record::Who;
use super::super::meta::{check_preconditions, finish_update, prepare_update};
use super::super::options::{GetOptions, WriteOptions};
use super::super::Store;
use crate::merge::Operation;
use crate::patch::{PatchMeta, PatchType};
use crate::{Error, Result};
use serde_json::{json, Value};

/// The resources with a `scale` subresource.
pub const SCALABLE: [&str; 4] = ["deployments.apps", "replicasets.apps", "statefulsets.apps", "replicationcontrollers"];

/// A write of a Scale.
#[derive(Debug, Clone)]
pub enum ScaleChange {
    /// A new Scale (a PUT); its `metadata.resourceVersion`, when set, is a precondition.
    Replace(Value),
    /// A patch of the current Scale (a strategic merge patch is read as a JSON merge patch:
    /// a Scale has no lists).
    Patch(PatchType, Value),
}

/// The Scale of an object.
#[must_use]
pub fn scale_of(o: &Value) -> Value {
    let meta = o.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    // The selector as a string, as kube-apiserver renders a label selector's matchLabels.
    let selector = match o.pointer("/spec/selector/matchLabels").or_else(|| o.pointer("/spec/selector")).and_then(Value::as_object) {
        Some(m) => m.iter().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect::<Vec<_>>().join(","),
        None => String::new(),
    };
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp")},
        "spec": {"replicas": o.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {"replicas": o.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}

impl Store {
    /// The Scale of an object of a [`SCALABLE`] resource.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an object that does not exist or a resource without `scale`;
    /// those of [`Store::get`].
    pub fn scale(&self, key: &ObjectKey) -> Result<Value> {
        self.scalable(&key.resource)?;
        Ok(scale_of(&self.get(key, &GetOptions::default())?))
    }

    /// Writes an object's Scale: sets its `spec.replicas` (as `opts.manager`, an update through
    /// the `scale` subresource: its managedFields entry says so), and answers the new Scale.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the Scale's `spec.replicas` is not a non-negative 32-bit
    /// integer; [`Error::Patch`]; [`Error::Precondition`] for a stale resourceVersion; those of
    /// [`Store::update`].
    pub fn update_scale(&self, key: &ObjectKey, change: &ScaleChange, opts: &WriteOptions) -> Result<Value> {
        let t = self.scalable(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        let now = now_time();
        let who = Who { manager: opts.manager.clone(), operation: Some(Operation::Update), subresource: "scale".into(), ..Who::default() };
        // Recorded as its own `subresource: scale` entry, as kube-apiserver records it.
        let manager = t.main.clone().with_subresource("scale");
        let out = self.write_loop(&t, &ns, name, opts.dry_run, &who, |cur| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            let scale = match change {
                ScaleChange::Replace(s) => {
                    check_preconditions(&t, name, live, &json!({"metadata": {"resourceVersion": s.pointer("/metadata/resourceVersion")}}))?;
                    s.clone()
                }
                ScaleChange::Patch(kind, p) => {
                    let kind = if *kind == PatchType::Strategic { PatchType::Merge } else { *kind };
                    crate::patch::apply(kind, &scale_of(live), p, &PatchMeta::untyped())?
                }
            };
            let replicas = scale
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .and_then(|r| i32::try_from(r).ok())
                .filter(|r| *r >= 0)
                .ok_or_else(|| Error::BadRequest("spec.replicas: a non-negative 32-bit integer is required".into()))?;
            let mut new = live.clone();
            if let Some(Value::Object(spec)) = new.get_mut("spec") {
                spec.insert("replicas".into(), Value::from(replicas));
            } else if let Value::Object(root) = &mut new {
                root.insert("spec".into(), json!({ "replicas": replicas }));
            }
            let new = prepare_update(&t, false, live, new);
            let mut out = manager.update(Some(live), new, &opts.manager, &now)?.object;
            untimed_scale_entry(&mut out, &opts.manager);
            Ok(finish_update(live, out, false))
        })?;
        Ok(scale_of(&out))
    }

    fn scalable(&self, resource: &str) -> Result<std::sync::Arc<super::super::types::Registered>> {
        let t = self.resolve(resource)?;
        if !SCALABLE.contains(&t.spec.resource().as_str()) {
            return Err(Error::NotFound { resource: format!("{}/scale", t.spec.resource()), name: String::new() });
        }
        Ok(t)
    }
}

/// kube-apiserver's scale entry has no `time` (its conversion between the Scale's managedFields
/// and the object's drops it), and so sorts first, as an entry without time does.
fn untimed_scale_entry(o: &mut Value, manager: &str) {
    if let Some(Value::Array(entries)) = o.pointer_mut("/metadata/managedFields") {
        if let Some(i) = entries.iter().position(|e| e["manager"] == manager && e["subresource"] == "scale") {
            let mut e = entries.remove(i);
            if let Value::Object(m) = &mut e {
                m.remove("time");
            }
            entries.insert(0, e);
        }
    }
}
