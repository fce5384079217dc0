//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and ReplicationControllers
//! (`kubectl scale`), and of custom resources whose CRD declares one (`subresources.scale`): an
//! `autoscaling/v1` Scale read from the object, and writes of it (a new Scale, or a patch of the
//! current one) that set the object's `spec.replicas` (a custom resource's `specReplicasPath`).

use super::super::address::ObjectKey;
use super::super::core::now_time;
use super::super::history_record::Who;
use super::super::meta::{check_preconditions, finish_update, prepare_update};
use super::super::options::{GetOptions, WriteOptions};
use super::super::types::{ScaleSubresource, TypeSpec};
use super::super::Store;
use crate::merge::Operation;
use crate::patch::{PatchMeta, PatchType};
use crate::typed::{ValidationError, ValidationErrors};
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

/// Whether objects of the type have a `scale` subresource: the [`SCALABLE`] built-in kinds and
/// custom resources whose CRD declares one.
#[must_use]
pub fn has_scale(spec: &TypeSpec) -> bool {
    spec.scale.is_some() || SCALABLE.contains(&spec.resource().as_str())
}

/// The fields of a JSON path of a CRD's `subresources.scale` (`.spec.replicas`).
fn fields(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|s| !s.is_empty())
}

/// What `o` holds at `path`.
fn at<'v>(o: &'v Value, path: &str) -> Option<&'v Value> {
    fields(path).try_fold(o, |v, f| v.get(f))
}

/// The Scale of an object of type `spec`.
#[must_use]
pub fn scale_of(spec: &TypeSpec, o: &Value) -> Value {
    let meta = o.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let (replicas, status_replicas, selector) = match &spec.scale {
        // A custom resource's, as kube-apiserver's: 0 for a missing number, the selector as the
        // string the path holds.
        Some(ScaleSubresource { spec_replicas_path, status_replicas_path, label_selector_path }) => (
            at(o, spec_replicas_path).filter(|v| v.is_i64()).cloned().unwrap_or(json!(0)),
            at(o, status_replicas_path).filter(|v| v.is_i64()).cloned().unwrap_or(json!(0)),
            label_selector_path.as_deref().and_then(|p| at(o, p)).and_then(Value::as_str).unwrap_or("").to_string(),
        ),
        // The selector as a string, as kube-apiserver renders a label selector's matchLabels.
        None => (
            o.pointer("/spec/replicas").cloned().unwrap_or(json!(1)),
            o.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            match o.pointer("/spec/selector/matchLabels").or_else(|| o.pointer("/spec/selector")).and_then(Value::as_object) {
                Some(m) => m.iter().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect::<Vec<_>>().join(","),
                None => String::new(),
            },
        ),
    };
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp")},
        "spec": {"replicas": replicas},
        "status": {"replicas": status_replicas, "selector": selector},
    })
}

/// Sets the desired replicas of `o` at `path` (a JSON path), making the objects on the way.
fn set_replicas(o: &mut Value, path: &str, replicas: i32) {
    // A path naming no field names nothing to set (never the object itself).
    if fields(path).next().is_none() {
        return;
    }
    let mut here = o;
    for f in fields(path) {
        if !here.is_object() {
            *here = json!({});
        }
        let Value::Object(m) = here else { return };
        here = m.entry(f).or_insert(Value::Null);
    }
    *here = Value::from(replicas);
}

impl Store {
    /// The Scale of an object of a resource with a `scale` subresource ([`has_scale`]).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an object that does not exist or a resource without `scale`;
    /// those of [`Store::get`].
    pub fn scale(&self, key: &ObjectKey) -> Result<Value> {
        let t = self.scalable(&key.resource)?;
        Ok(scale_of(&t.spec, &self.get(key, &GetOptions::default())?))
    }

    /// Writes an object's Scale: sets its `spec.replicas` (a custom resource's
    /// `specReplicasPath`; as `opts.manager`, an update through the `scale` subresource: its
    /// managedFields entry says so), and answers the new Scale.
    ///
    /// # Errors
    /// [`Error::BadRequest`] when the Scale's `spec.replicas` is not a 32-bit integer,
    /// [`Error::Invalid`] when it is negative; [`Error::Patch`]; [`Error::Precondition`] for a stale resourceVersion; those of
    /// [`Store::update`].
    pub fn update_scale(&self, key: &ObjectKey, change: &ScaleChange, opts: &WriteOptions) -> Result<Value> {
        let t = self.scalable(&key.resource)?;
        let ns = self.scope(&t, key.ns(), &Value::Null)?;
        let name = key.name.as_str();
        let now = now_time();
        let who = Who { manager: opts.manager.clone(), operation: Some(Operation::Update), subresource: "scale".into(), ..Who::default() };
        // Recorded as its own `subresource: scale` entry, as kube-apiserver records it.
        let manager = t.main.clone().with_subresource("scale");
        let out = self.write_loop(&t, &ns, name, opts.dry_run, &who, |cur, known| {
            let live = cur.ok_or_else(|| Error::NotFound { resource: t.spec.resource(), name: name.into() })?;
            let scale = match change {
                ScaleChange::Replace(s) => {
                    check_preconditions(&t, name, live, &json!({"metadata": {"resourceVersion": s.pointer("/metadata/resourceVersion")}}))?;
                    s.clone()
                }
                ScaleChange::Patch(kind, p) => {
                    let kind = if *kind == PatchType::Strategic { PatchType::Merge } else { *kind };
                    crate::patch::apply(kind, &scale_of(&t.spec, live), p, &PatchMeta::untyped())?
                }
            };
            let replicas = scale
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .and_then(|r| i32::try_from(r).ok())
                .ok_or_else(|| Error::BadRequest("spec.replicas: a non-negative 32-bit integer is required".into()))?;
            // kube-apiserver's Scale validation: 422 naming the field.
            if replicas < 0 && t.custom.is_none() {
                return Err(Error::Invalid(ValidationErrors(vec![ValidationError {
                    path: "spec.replicas".into(),
                    message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                }])));
            }
            let mut new = live.clone();
            let path = t.spec.scale.as_ref().map_or(".spec.replicas", |s| s.spec_replicas_path.as_str());
            set_replicas(&mut new, path, replicas);
            // A custom resource is validated as scaled by its schema, and the replicas at its
            // path (kube-apiserver's `ValidateScaleSpec`, naming the path as the CRD writes it).
            if let Some(schema) = &t.custom {
                let mut errs = crate::crd::validation::validate(schema, &new, Some(live));
                if replicas < 0 {
                    errs.push(ValidationError {
                        path: path.to_string(),
                        message: format!("Invalid value: {replicas}: should be a non-negative integer"),
                    });
                }
                if !errs.is_empty() {
                    return Err(Error::Invalid(ValidationErrors(errs)));
                }
            }
            let new = prepare_update(&t, false, live, new);
            let mut out = manager.update_known(Some(live), known, new, &opts.manager, &now)?.object;
            if t.spec.scale.is_some() {
                // kube-apiserver records no managedFields entry for a write to a custom
                // resource's scale: the object keeps the ones it had.
                keep_managed_fields(live, &mut out);
            } else {
                untimed_scale_entry(&mut out, &opts.manager);
            }
            Ok(finish_update(live, out, false))
        })?;
        Ok(scale_of(&t.spec, &out))
    }

    fn scalable(&self, resource: &str) -> Result<std::sync::Arc<super::super::types::Registered>> {
        let t = self.resolve(resource)?;
        if !has_scale(&t.spec) {
            return Err(Error::NotFound { resource: format!("{}/scale", t.spec.resource()), name: String::new() });
        }
        Ok(t)
    }
}

/// Puts `live`'s managedFields back on `out`.
fn keep_managed_fields(live: &Value, out: &mut Value) {
    let Some(Value::Object(meta)) = out.get_mut("metadata") else { return };
    match live.pointer("/metadata/managedFields") {
        Some(entries) => meta.insert("managedFields".into(), entries.clone()),
        None => meta.remove("managedFields"),
    };
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
