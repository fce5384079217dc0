//! The updater: apply and update over managed fields.

use super::{Conflict, Conflicts, ManagedFields, ManagerKey, VersionedSet};
use crate::schema::{Schema, TypeRef};
use crate::typed::{self, Comparison, Fused, MergeOptions};
use crate::{Error, Result};
use fieldstore_codec::Set;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Applies configurations and records updates for objects of one type, keeping track of which
/// manager owns which field (structured-merge-diff's `merge.Updater`, with the identity version
/// converter: all versions share one schema).
#[derive(Debug, Clone, Copy)]
pub struct Updater<'s> {
    schema: &'s Schema,
    root: &'s TypeRef,
    /// Whether apply and update validate the object they are given (see [`Updater::validating`]).
    validating: bool,
}

/// The outcome of a successful apply.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The object after the apply; `None` when the object did not change (keep the live one).
    pub object: Option<Value>,
    /// Whether the object changed. Managed fields may change even when the object does not.
    pub changed: bool,
    /// Every manager's fields after the apply.
    pub managers: ManagedFields,
}

impl<'s> Updater<'s> {
    /// An updater for objects of type `root` in `schema`.
    pub fn new(schema: &'s Schema, root: &'s TypeRef) -> Self {
        Updater { schema, root, validating: false }
    }

    /// This updater, made to validate what it is given: [`apply`](Self::apply) validates the
    /// config and [`update`](Self::update) the new object, with the same result as calling
    /// [`validate`](Self::validate) first, but in the walk that merges or compares it, so a large
    /// object is read once instead of twice.
    #[must_use]
    pub fn validating(mut self) -> Self {
        self.validating = true;
        self
    }

    /// Checks `v` against the type (structured-merge-diff's `AsTyped`).
    ///
    /// # Errors
    /// [`Error::Invalid`] listing every problem.
    pub fn validate(&self, v: &Value) -> Result<()> {
        typed::validate(self.schema, self.root, v).map_err(Error::Invalid)
    }

    /// Applies `config` to `live` as `manager`: the config is merged in (its values win), the
    /// manager's set becomes exactly the config's fields, fields it applied before and no longer
    /// applies are removed unless another manager owns them, and fields other managers own with
    /// a different value conflict unless `force` takes them over.
    ///
    /// Both objects must have been validated, or the config is validated here by a
    /// [`validating`](Self::validating) updater.
    ///
    /// # Errors
    /// [`Error::Conflict`] with every conflicting (manager, field); [`Error::Invalid`] when the
    /// objects do not fit the schema (a validating updater: every problem of the config, as
    /// [`validate`](Self::validate) reports them).
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        managers: ManagedFields,
        manager: &ManagerKey,
        force: bool,
    ) -> Result<Applied> {
        self.apply_config(live, Cow::Borrowed(config), version, managers, manager, force)
    }

    /// [`apply`](Self::apply) with a config the caller gives up (a request body it has just
    /// parsed): the parts of the object that are exactly the config's are moved out of it rather
    /// than copied, so that creating an object, or a sole applier's re-apply with changes,
    /// copies nothing of the config.
    ///
    /// # Errors
    /// Those of [`apply`](Self::apply).
    pub fn apply_owned(
        &self,
        live: &Value,
        config: Value,
        version: &str,
        managers: ManagedFields,
        manager: &ManagerKey,
        force: bool,
    ) -> Result<Applied> {
        self.apply_config(live, Cow::Owned(config), version, managers, manager, force)
    }

    fn apply_config(
        &self,
        live: &Value,
        mut config: Cow<'_, Value>,
        version: &str,
        mut managers: ManagedFields,
        manager: &ManagerKey,
        force: bool,
    ) -> Result<Applied> {
        // With no other manager, the comparison only has to say whether anything changed.
        let alone = managers.keys().all(|k| k == manager);
        // The merge's walk also tells whether the config's fields are exactly the applier's; an
        // owned config's parts are left out of the merged object, to be moved in.
        let defer = matches!(config, Cow::Owned(_));
        let opts = MergeOptions { sets: !alone, validate: self.validating, owned: managers.get(manager).map(|l| &l.set), defer };
        let outcome = typed::merge_and_compare_with(self.schema, self.root, live, &config, opts).map_err(Error::Invalid)?;
        // `None`: the merge left the live object exactly as it was.
        let mut merged = if outcome.same { None } else { Some(outcome.value.unwrap_or(Value::Null)) };
        // An applier re-applying the same fields keeps its set: nothing to build, nothing to prune.
        let same_fields = |set: &Set| outcome.owned.unwrap_or_else(|| typed::is_field_set_of(self.schema, self.root, &config, set));
        let last = match managers.remove(manager) {
            Some(l) if same_fields(&l.set) => {
                managers.insert(manager.clone(), VersionedSet::new(l.set, version, true));
                None
            }
            last => {
                let set = typed::to_field_set(self.schema, self.root, &config).map_err(Error::Invalid)?;
                managers.insert(manager.clone(), VersionedSet::new(set, version, true));
                last
            }
        };
        // The config's parts the merged object lacks: copied now when pruning or comparing needs
        // the object whole; moved in once no conflict can need the config any more otherwise.
        let last = last.filter(|l| self.prunes(&managers, manager, l));
        let mut fill = outcome.fill;
        if let (Some(f), Some(m)) = (fill.take_if(|_| last.is_some() || matches!(outcome.fused, Fused::Unknown)), &mut merged) {
            f.put(m, config.to_mut(), false);
        }
        let (mut new_object, fused) = match self.prune(merged, live, &managers, last.as_ref())? {
            // Nothing pruned: what the merge saw is the change from live to merged.
            Pruned::Nothing(merged) => (merged, outcome.fused),
            Pruned::Some(pruned) => (Some(pruned), Fused::Unknown),
        };

        let (managers, changed) = match fused {
            Fused::Changed(changed) => {
                managers.retain(|_, vs| !vs.set.is_empty());
                (managers, changed)
            }
            // Known from the merge's walk: the new object is not read (it may still lack parts).
            Fused::Comparison(c) => {
                let changed = !c.is_same();
                (self.update_managers(live, &c, managers, manager, force, Some(&config))?, changed)
            }
            Fused::Unknown => {
                let c = typed::compare(self.schema, self.root, live, new_object.as_ref().unwrap_or(live)).map_err(Error::Invalid)?;
                (self.update_managers(live, &c, managers, manager, force, Some(&config))?, !c.is_same())
            }
        };
        if let (Some(f), Some(m)) = (fill, &mut new_object) {
            f.put(m, config.to_mut(), true);
        }
        // A change always comes with a merged object; `None` would mean the live one.
        let object = if changed { Some(new_object.unwrap_or_else(|| live.clone())) } else { None };
        Ok(Applied { object, changed, managers })
    }

    /// Records `new` replacing `live` as a write by `manager` (an update, never a conflict):
    /// fields whose value changed move to the manager, fields removed leave every manager.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the objects do not fit the schema (a
    /// [`validating`](Self::validating) updater: every problem of `new`, as
    /// [`validate`](Self::validate) reports them).
    pub fn update(&self, live: &Value, new: &Value, version: &str, managers: ManagedFields, manager: &ManagerKey) -> Result<ManagedFields> {
        self.update_except(live, new, version, managers, manager, &Set::new())
    }

    /// [`update`](Self::update) where what `live` has in `except` (and below it) and `new`
    /// lacks is not a removal: fields the new object never has (a stored object's
    /// managedFields), compared as they are rather than copying `live` without them.
    ///
    /// # Errors
    /// Those of [`update`](Self::update).
    pub fn update_except(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        managers: ManagedFields,
        manager: &ManagerKey,
        except: &Set,
    ) -> Result<ManagedFields> {
        let compare = if self.validating { typed::validate_and_compare } else { typed::compare };
        let mut c = compare(self.schema, self.root, live, new).map_err(Error::Invalid)?;
        if !except.is_empty() && !c.removed.is_empty() {
            c.removed = c.removed.recursive_difference(except);
        }
        let mut managers = self.update_managers(live, &c, managers, manager, true, None)?;
        let owned = managers.remove(manager).map(|v| v.set).unwrap_or_default();
        let set = owned.union(&c.modified).union(&c.added).difference(&c.removed);
        if !set.is_empty() {
            managers.insert(manager.clone(), VersionedSet::new(set, version, false));
        }
        Ok(managers)
    }

    /// Moves the fields `c` changed from `old` away from the managers other than `writer`, or
    /// reports them as conflicts when not forced.
    fn update_managers(
        &self,
        old: &Value,
        c: &Comparison,
        mut managers: ManagedFields,
        writer: &ManagerKey,
        force: bool,
        config: Option<&Value>,
    ) -> Result<ManagedFields> {
        let changed = c.modified.union(&c.added);
        let mut conflicts: Vec<(ManagerKey, Set)> = Vec::new();
        if !changed.is_empty() {
            for (key, vs) in &managers {
                if key == writer {
                    continue;
                }
                let hit = vs.set.intersection(&changed);
                if !hit.is_empty() {
                    conflicts.push((key.clone(), hit));
                }
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(Error::Conflict(self.conflicts(conflicts, old, config)));
        }
        for (key, hit) in conflicts {
            if let Some(vs) = managers.get_mut(&key) {
                vs.set = vs.set.difference(&hit);
            }
        }
        if !c.removed.is_empty() {
            for (key, vs) in managers.iter_mut() {
                if key != writer {
                    vs.set = vs.set.difference(&c.removed);
                }
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(managers)
    }

    fn conflicts(&self, sets: Vec<(ManagerKey, Set)>, live: &Value, config: Option<&Value>) -> Conflicts {
        // Looking values up is a scan per list level; beyond this many conflicts only the paths
        // are reported, so a huge conflict stays linear.
        const WITH_VALUES: usize = 256;
        let mut out = Vec::new();
        for (manager, set) in sets {
            set.iterate(|p| {
                let values = out.len() < WITH_VALUES;
                out.push(Conflict {
                    manager: manager.clone(),
                    path: p.clone(),
                    live: if values { crate::value_at(live, p).cloned() } else { None },
                    applied: if values { config.and_then(|c| crate::value_at(c, p)).cloned() } else { None },
                })
            });
        }
        out.sort_by(|a, b| a.manager.cmp(&b.manager).then_with(|| a.path.cmp(&b.path)));
        Conflicts(out)
    }

    /// Whether pruning may remove anything: the applier applied fields before (`last`) and no
    /// longer applies all of them. (When it still applies everything it applied before, every
    /// field it could remove is owned by its own new configuration.)
    fn prunes(&self, managers: &ManagedFields, applier: &ManagerKey, last: &VersionedSet) -> bool {
        !last.set.is_empty() && !managers.get(applier).is_some_and(|n| last.set.is_subset_of(&n.set))
    }

    /// Removes from `merged` the fields the applier applied last time (`last`, given when it
    /// [`prunes`](Self::prunes)) and no longer applies, unless another manager owns them
    /// (structured-merge-diff's prune, add-back-owned and add-back-dangling steps).
    fn prune(&self, merged: Option<Value>, live: &Value, managers: &ManagedFields, last: Option<&VersionedSet>) -> Result<Pruned> {
        let Some(last) = last else {
            return Ok(Pruned::Nothing(merged));
        };
        let merged = merged.unwrap_or_else(|| live.clone());
        let (s, tr) = (self.schema, self.root);
        let ensure = |set: &Set| typed::ensure_named_fields_are_members(s, tr, set);
        let fields = |v: &Value| typed::to_field_set(s, tr, v).map_err(Error::Invalid);
        let last_e = ensure(&last.set);

        let mut pruned = typed::remove_items(s, tr, &merged, &last_e);

        // Add back what any manager (the applier's new configuration included) owns.
        let mut by_version: BTreeMap<&str, Set> = BTreeMap::new();
        for vs in managers.values() {
            let e = by_version.entry(vs.api_version.as_str()).or_default();
            *e = e.union(&vs.set);
        }
        let merged_e = ensure(&fields(&merged)?);
        for managed in by_version.values() {
            let pruned_e = ensure(&fields(&pruned)?);
            let keep = pruned_e.union(&ensure(managed));
            pruned = typed::remove_items(s, tr, &merged, &merged_e.difference(&keep));
        }

        // Add back what the applier never owned: only its own former fields may go.
        let pruned_e = ensure(&fields(&pruned)?);
        Ok(Pruned::Some(typed::remove_items(s, tr, &merged, &merged_e.difference(&pruned_e).intersection(&last_e))))
    }
}

/// What pruning did to the merged object.
enum Pruned {
    /// Nothing could be removed; the merged object as it was (`None`: the live object).
    Nothing(Option<Value>),
    /// The pruned object (possibly equal to the merged one).
    Some(Value),
}
