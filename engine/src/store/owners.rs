//! The owner index: which objects each field manager owns fields of, and which managers own a
//! field path across the objects of a resource — maintained in the batch of every write, so
//! that [`Store::objects_managed_by`], [`Store::owners_of`] and [`Store::managers`] are index
//! scans rather than scans of every object. Also the administrative writes built on it:
//! [`Store::rename_manager`] and [`Store::release`].
//!
//! Keys (column family `owners`, see `engine/STORAGE.md`):
//! - `M ‖ manager ‖ 0x00 ‖ object prefix` → [`Owned`] (the manager's entries and fields there);
//! - `G ‖ type id ‖ path ‖ 0x00 ‖ manager ‖ 0x00 ‖ object prefix` → the members directly below
//!   `path` (one key per level of the manager's field set), and `P` keys for the members a
//!   level cannot hold (`owner_index.rs`).

use super::commit::Plan;
use super::history_record::Who;
use super::keys::EventType;
use super::keys::{self, CF_OWNERS};
use super::kv::Flow;
use super::owner_index::{esc, manager_key, Owned};
use super::selectors::LabelSelector;
use super::Store;
use crate::merge::Operation;
use crate::{Error, Result};
use fieldstore_codec::{fields_binary, fields_v1, Set};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One object a manager owns fields of.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedObject {
    /// The resource (`plural` or `plural.group`).
    pub resource: String,
    /// The namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The manager's managedFields entries there: `Apply`, `Update`, `Update/status`, …
    pub operations: Vec<String>,
    /// How many field paths it owns.
    pub field_count: u64,
    /// The fields it owns, as FieldsV1 JSON.
    pub fields: Value,
}

/// A page of the objects a manager owns fields of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagedPage {
    /// The objects, in key order (resource, namespace, name).
    pub items: Vec<ManagedObject>,
    /// Where the next page starts; `None` on the last page.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Who owns a field path of one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    /// The namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The field (the path asked for, or one under it).
    pub path: String,
    /// The manager owning it.
    pub manager: String,
}

/// A manager and how much it owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagerSummary {
    /// The manager's name.
    pub manager: String,
    /// Objects it owns fields of.
    pub objects: u64,
    /// Field paths it owns, summed over those objects.
    pub fields: u64,
}

/// Splits `bytes` at the first NUL.
fn split_nul(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = bytes.iter().position(|&b| b == 0)?;
    Some((&bytes[..i], &bytes[i + 1..]))
}

fn corrupt() -> Error {
    Error::Corrupt("malformed owner index key".into())
}

fn utf8(b: &[u8]) -> Result<String> {
    String::from_utf8(b.to_vec()).map_err(|_| corrupt())
}

impl Store {
    /// The objects `manager` owns fields of (of one resource, or of all), in key order, with
    /// the fields owned in each; at most `limit` (all with `None`).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource.
    pub fn objects_managed_by(&self, manager: &str, resource: Option<&str>, limit: Option<usize>) -> Result<Vec<ManagedObject>> {
        Ok(self.objects_managed_by_page(manager, resource, limit, None)?.items)
    }

    /// A page of [`Store::objects_managed_by`]: at most `limit` objects starting at
    /// `continue_token` (from the previous page; `None` for the first).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource; [`Error::BadRequest`] for a malformed token.
    pub fn objects_managed_by_page(
        &self,
        manager: &str,
        resource: Option<&str>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ManagedPage> {
        let mut prefix = manager_key(manager, &[]);
        let plen = prefix.len();
        if let Some(r) = resource {
            prefix.extend_from_slice(&keys::type_prefix(self.resolve(r)?.id));
        }
        let end = keys::prefix_end(&prefix);
        let start = match continue_token.filter(|t| !t.is_empty()) {
            None => prefix.clone(),
            Some(t) => {
                let object = unhex(t)
                    .filter(|o| keys::parse_object_prefix(o).is_ok())
                    .ok_or_else(|| Error::BadRequest(format!("invalid continue token {t:?}")))?;
                let mut k = manager_key(manager, &object);
                if !k.starts_with(&prefix) {
                    return Err(Error::BadRequest(format!("continue token {t:?} is not of this query")));
                }
                k.truncate(plen + object.len());
                k
            }
        };
        let reg = self.core().registry.read().clone_index();
        let mut out = Vec::new();
        let mut next = None;
        self.core().kv.scan(CF_OWNERS, &start, end.as_deref(), &mut |k, v| {
            if limit.is_some_and(|l| out.len() >= l) {
                next = Some(hex(&k[plen..]));
                return Ok(Flow::Stop);
            }
            let (type_id, namespace, name) = keys::parse_object_prefix(&k[plen..])?;
            let owned: Owned = bincode::deserialize(v).map_err(|_| corrupt())?;
            let set = fields_binary::decode(&owned.set)?;
            let fields = fields_v1::to_value(&set);
            out.push(ManagedObject {
                resource: reg.get(&type_id).cloned().unwrap_or_default(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                operations: owned.operations,
                field_count: owned.fields,
                fields,
            });
            Ok(Flow::Continue)
        })?;
        Ok(ManagedPage { items: out, continue_token: next })
    }

    /// Which objects of `resource` have the field `path` (or fields under it; printed as
    /// Kubernetes prints paths) and who owns it in each, ordered by path, manager and object.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource.
    pub fn owners_of(&self, resource: &str, path: &str) -> Result<Vec<Owner>> {
        let t = self.resolve(resource)?;
        let path = esc(if path == "." { "" } else { path });
        let kv = &self.core().kv;
        let mut found: Vec<Owner> = Vec::new();
        // Adds the owners one index key names: the path (`P`) or the paths of `elements` below
        // it (`G`; the empty element is the path itself).
        let mut add = |path: &[u8], rest: &[u8], elements: Option<&[u8]>| -> Result<()> {
            let (m, prefix) = split_nul(rest).ok_or_else(corrupt)?;
            let (_, namespace, name) = keys::parse_object_prefix(prefix)?;
            let owner = |path: String| -> Result<Owner> {
                Ok(Owner { namespace: namespace.to_string(), name: name.to_string(), path, manager: utf8(m)? })
            };
            match elements {
                None => found.push(owner(utf8(path)?)?),
                Some(elements) => {
                    let path = std::str::from_utf8(path).map_err(|_| corrupt())?;
                    for element in elements.split(|&b| b == 0) {
                        found.push(owner(format!("{path}{}", std::str::from_utf8(element).map_err(|_| corrupt())?))?);
                    }
                }
            }
            Ok(())
        };
        let head = 1 + t.id.to_be_bytes().len();
        // The members outside levels (`P`) at or under the path, and every member of the
        // levels at or under it (`G`).
        for kind in [b'P', b'G'] {
            let mut start = vec![kind];
            start.extend_from_slice(&t.id.to_be_bytes());
            start.extend_from_slice(path.as_bytes());
            let end = keys::prefix_end(&start);
            kv.scan(CF_OWNERS, &start, end.as_deref(), &mut |k, v| {
                let (p, rest) = split_nul(&k[head..]).ok_or_else(corrupt)?;
                if crate::history::path_matches(std::str::from_utf8(p).map_err(|_| corrupt())?, &path) {
                    add(p, rest, (kind == b'G').then_some(v))?;
                }
                Ok(Flow::Continue)
            })?;
        }
        // The path itself, when it is a member without children (its parent's level holds its
        // last element; a member with children is the empty element of its own level, read
        // above).
        if let Some(at) = path.rfind(['.', '[']) {
            let (parent, element) = path.split_at(at);
            let mut start = vec![b'G'];
            start.extend_from_slice(&t.id.to_be_bytes());
            start.extend_from_slice(parent.as_bytes());
            start.push(0);
            let end = keys::prefix_end(&start);
            kv.scan(CF_OWNERS, &start, end.as_deref(), &mut |k, v| {
                if v.split(|&b| b == 0).any(|e| e == element.as_bytes()) {
                    add(path.as_bytes(), &k[start.len()..], None)?;
                }
                Ok(Flow::Continue)
            })?;
        }
        // In path, manager, object order (namespace, then name: the order of object prefixes).
        // A stable sort by path keeps the order of the scans within a path, which is manager,
        // object order unless the path came from two levels (a member with children for some
        // managers and objects, without for others): those runs are sorted again.
        found.sort_by(|a, b| a.path.cmp(&b.path));
        fn order(o: &Owner) -> (&str, &str, &str) {
            (&o.manager, &o.namespace, &o.name)
        }
        for run in found.chunk_by_mut(|a, b| a.path == b.path) {
            if !run.is_sorted_by(|a, b| order(a) <= order(b)) {
                run.sort_by(|a, b| order(a).cmp(&order(b)));
            }
        }
        Ok(found)
    }

    /// Every manager owning fields (of one resource, or of any) with counts of objects and
    /// fields, by name.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown resource.
    pub fn managers(&self, resource: Option<&str>) -> Result<Vec<ManagerSummary>> {
        let type_id = resource.map(|r| self.resolve(r).map(|t| t.id)).transpose()?;
        let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        self.core().kv.scan(CF_OWNERS, b"M", Some(b"N"), &mut |k, v| {
            let (m, prefix) = split_nul(&k[1..]).ok_or_else(corrupt)?;
            let (tid, _, _) = keys::parse_object_prefix(prefix)?;
            if type_id.is_some_and(|t| t != tid) {
                return Ok(Flow::Continue);
            }
            let owned: Owned = bincode::deserialize(v).map_err(|_| corrupt())?;
            let e = by.entry(utf8(m)?).or_default();
            e.0 += 1;
            e.1 += owned.fields;
            Ok(Flow::Continue)
        })?;
        Ok(by.into_iter().map(|(manager, (objects, fields))| ManagerSummary { manager, objects, fields }).collect())
    }

    /// Renames field manager `from` to `to` in every object it owns fields of (its entries
    /// merge with `to`'s entries of the same operation, API version and subresource). Each
    /// object changed is an Update, recorded in history. Returns how many objects changed.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for an empty name; storage errors.
    pub fn rename_manager(&self, from: &str, to: &str) -> Result<usize> {
        if from.is_empty() || to.is_empty() {
            return Err(Error::BadRequest("manager names may not be empty".into()));
        }
        let who = Who {
            manager: to.into(),
            operation: Some(Operation::Update),
            subresource: String::new(),
            note: format!("renamed manager {from:?} to {to:?}"),
        };
        self.rewrite_managed(from, None, None, &who, |entries| {
            for e in entries.iter_mut() {
                if e.get("manager").and_then(Value::as_str) == Some(from) {
                    e["manager"] = Value::String(to.into());
                }
            }
            merge_duplicate_entries(entries)
        })
    }

    /// Drops `manager`'s ownership (every entry of it) from the objects it owns fields of,
    /// optionally only of one resource and only those matching a label selector; the fields
    /// keep their values. Each object changed is an Update, recorded in history. Returns how
    /// many objects changed.
    ///
    /// # Errors
    /// [`Error::BadRequest`] for a malformed selector; storage errors.
    pub fn release(&self, manager: &str, resource: Option<&str>, label_selector: Option<&str>) -> Result<usize> {
        let selector = label_selector.filter(|s| !s.is_empty()).map(LabelSelector::parse).transpose()?;
        let who = Who {
            manager: manager.into(),
            operation: Some(Operation::Update),
            subresource: String::new(),
            note: format!("released ownership of manager {manager:?}"),
        };
        self.rewrite_managed(manager, resource, selector.as_ref(), &who, |entries| {
            entries.retain(|e| e.get("manager").and_then(Value::as_str) != Some(manager));
            Ok(())
        })
    }

    /// Rewrites the managedFields of every object `manager` owns fields of.
    fn rewrite_managed(
        &self,
        manager: &str,
        resource: Option<&str>,
        selector: Option<&LabelSelector>,
        who: &Who,
        edit: impl Fn(&mut Vec<Value>) -> Result<()>,
    ) -> Result<usize> {
        let objects = self.objects_managed_by(manager, resource, None)?;
        let mut changed = 0;
        for o in objects {
            let t = self.resolve(&o.resource)?;
            let wrote = std::cell::Cell::new(false);
            self.write_loop(&t, &o.namespace, &o.name, false, who, |cur, _| {
                wrote.set(false);
                let Some(live) = cur else { return Ok(Plan::NoOp(Value::Null)) };
                if selector.is_some_and(|s| !s.matches(live.pointer("/metadata/labels"))) {
                    return Ok(Plan::NoOp(live.clone()));
                }
                let mut new = live.clone();
                let mut entries = match new.pointer_mut("/metadata/managedFields") {
                    Some(Value::Array(a)) => std::mem::take(a),
                    _ => Vec::new(),
                };
                edit(&mut entries)?;
                if let Some(Value::Object(m)) = new.get_mut("metadata") {
                    if entries.is_empty() {
                        m.remove("managedFields");
                    } else {
                        m.insert("managedFields".into(), Value::Array(entries));
                    }
                }
                if &new == live {
                    return Ok(Plan::NoOp(new));
                }
                wrote.set(true);
                Ok(Plan::Put(new, EventType::Modified))
            })?;
            if wrote.get() {
                changed += 1;
            }
        }
        Ok(changed)
    }
}

/// Merges managedFields entries that now share manager, operation, API version and
/// subresource: their field sets are united, the latest time kept.
fn merge_duplicate_entries(entries: &mut Vec<Value>) -> Result<()> {
    let id = |e: &Value| {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        (s("manager"), s("operation"), s("apiVersion"), s("subresource"))
    };
    let mut out: Vec<Value> = Vec::with_capacity(entries.len());
    for e in entries.drain(..) {
        match out.iter_mut().find(|o| id(o) == id(&e)) {
            None => out.push(e),
            Some(o) => {
                let set = |v: &Value| -> Result<Set> {
                    Ok(fields_v1::from_json(v.get("fieldsV1").map(Value::to_string).unwrap_or_else(|| "{}".into()).as_bytes())?)
                };
                let merged = set(o)?.union(&set(&e)?);
                o["fieldsV1"] = serde_json::from_str(&fields_v1::to_json_string(&merged)).unwrap_or(Value::Null);
                let t = |v: &Value| v.get("time").and_then(Value::as_str).unwrap_or("").to_string();
                if t(&e) > t(o) {
                    o["time"] = Value::String(t(&e));
                }
            }
        }
    }
    *entries = out;
    Ok(())
}
