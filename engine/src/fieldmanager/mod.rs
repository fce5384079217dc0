//! The apiserver's field manager on top of the [`Updater`]: managedFields in and out of objects,
//! with the rules Kubernetes adds around structured-merge-diff.
//!
//! [`FieldManager`] mirrors `k8s.io/apimachinery/pkg/util/managedfields/internal` (formerly
//! `k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager`): the chain of `FieldManager`,
//! `capManagersManager`, `buildManagerInfoManager`, `managedFieldsUpdater`, `stripMetaManager`
//! and `structuredMergeManager`, without the parts that deal with `last-applied-configuration`
//! annotations, version conversion and probabilistic skipping of untracked objects.
//!
//! - managedFields are decoded from the object (or, for non-apply writes to the main resource,
//!   from the new object when it carries valid ones), reconciled with schema changes
//!   ([`reconcile_managed_fields`]) and written back in Kubernetes' JSON form and order;
//! - an entry's identity is (manager, operation, API version for updates, subresource), so an
//!   applier and an updater of the same name are two entries;
//! - fields of the type meta and server-owned metadata are never tracked;
//! - an Update entry's time moves when the write took fields, an Apply entry's when the apply
//!   changed the object;
//! - more than [`DEFAULT_MAX_UPDATE_MANAGERS`] Update entries are folded into
//!   [`ANCIENT_CHANGES`] entries;
//! - reset fields keep their live values and are owned by nobody new.

mod cap;
mod entries;
mod reconcile;
mod reset;
mod strip;
mod time;

pub use cap::{ANCIENT_CHANGES, DEFAULT_MAX_UPDATE_MANAGERS};
#[cfg(feature = "store")]
pub(crate) use entries::{fields_set, from_stored, put_managed_fields, take_managed_fields, Decoded, StoredEntry};
pub use reconcile::reconcile_managed_fields;
pub use time::Time;

/// How a caller that knows a live object's managers hands them over: called when the write needs
/// them (again when it merges a second time), giving what decoding the live object's
/// managedFields would.
pub(crate) type KnownManagers<'a> = &'a dyn Fn() -> std::result::Result<entries::Decoded, String>;

use crate::merge::{ManagedFields, ManagerKey, Operation, Updater, VersionedSet};
use crate::schema::{Schema, TypeRef};
use crate::typed::{self, ValidationError, ValidationErrors};
use crate::{Error, Result};
use fieldstore_codec::managed_fields::{ManagedFieldsEntry, MANAGER_MAX_LEN};
use fieldstore_codec::Set;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The manager name of non-apply writes that name none (the apiserver's default when neither
/// the `fieldManager` parameter nor a user agent gives one).
pub const UNKNOWN_MANAGER: &str = "unknown";

/// Tracks field ownership of the objects of one resource, written at one API version through one
/// endpoint (the main resource or a subresource).
///
/// All API versions share the schema; the configured version is the one requests are made at:
/// it is recorded in the entries written and checked against apply configurations.
///
/// # Examples
///
/// ```
/// use fieldstore_engine::fieldmanager::{FieldManager, Time};
/// use fieldstore_engine::schema::{Schema, DEDUCED_TYPE};
/// use serde_json::json;
///
/// let schema = Schema::deduced();
/// let root = schema.named(DEDUCED_TYPE).unwrap();
/// let fm = FieldManager::new(&schema, &root, "v1");
/// let now = Time::from_unix_seconds(1_704_164_645);
/// let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}});
/// let created = fm.apply(None, &config, "kubectl", false, &now).unwrap();
/// assert_eq!(created.object["metadata"]["managedFields"][0]["manager"], "kubectl");
/// // Applying the same configuration again changes nothing: the store can skip the write.
/// let again = fm.apply(Some(&created.object), &config, "kubectl", false, &now).unwrap();
/// assert!(again.is_noop());
/// ```
#[derive(Debug, Clone)]
pub struct FieldManager<'s> {
    schema: &'s Schema,
    root: &'s TypeRef,
    api_version: String,
    kind: Option<String>,
    subresource: String,
    reset_fields: BTreeMap<(String, String), Set>,
    max_update_managers: usize,
    strict_reset_fields: bool,
    strip: Set,
    atomic_index: std::sync::Arc<reconcile::AtomicIndex>,
    created_from: Option<&'s Value>,
}

/// The outcome of a successful apply.
#[derive(Debug, Clone)]
pub struct ApplyOutcome {
    /// The object to store, with its `metadata.managedFields`.
    pub object: Value,
    /// Whether the object apart from its managedFields changed.
    pub object_changed: bool,
    /// Whether the managedFields changed (entries, sets, versions or times).
    pub managed_fields_changed: bool,
    managers: ManagedFields,
    times: entries::Times,
    /// The sets of `object`'s managedFields entries, in order.
    written: Vec<Set>,
}

impl ApplyOutcome {
    /// The object, and the sets of its managedFields entries in order (what a store encodes
    /// without parsing the FieldsV1 documents again).
    pub(crate) fn into_written(self) -> (Value, Vec<Set>) {
        (self.object, self.written)
    }

    /// Whether the apply changed nothing at all, so the store can skip the write (and keep its
    /// resourceVersion).
    #[must_use]
    pub fn is_noop(&self) -> bool {
        !self.object_changed && !self.managed_fields_changed
    }

    /// The managedFields entries, in order, with their `FieldsV1` text. Serialize these with
    /// [`encode_entries`](fieldstore_codec::managed_fields::encode_entries) for bytes identical
    /// to the apiserver's: a `serde_json::Value` sorts the keys of `FieldsV1` documents.
    #[must_use]
    pub fn managed_fields(&self) -> Vec<ManagedFieldsEntry> {
        entries::encode(&self.managers, &self.times)
    }
}

/// The outcome of a successful update.
#[derive(Debug, Clone)]
pub struct UpdateOutcome {
    /// The object to store, with its `metadata.managedFields`.
    pub object: Value,
    managers: ManagedFields,
    times: entries::Times,
    /// The sets of `object`'s managedFields entries, in order.
    written: Vec<Set>,
}

impl UpdateOutcome {
    /// The object, and the sets of its managedFields entries in order (what a store encodes
    /// without parsing the FieldsV1 documents again).
    pub(crate) fn into_written(self) -> (Value, Vec<Set>) {
        (self.object, self.written)
    }

    /// The managedFields entries, in order (see [`ApplyOutcome::managed_fields`]).
    #[must_use]
    pub fn managed_fields(&self) -> Vec<ManagedFieldsEntry> {
        entries::encode(&self.managers, &self.times)
    }
}

/// The key the write being recorded is tracked under until it is merged into its manager's
/// entry (the apiserver's `"current-operation"`). No decoded entry can have it: they all have a
/// manager and, for updates, an API version.
fn current_operation() -> ManagerKey {
    ManagerKey { manager: String::new(), operation: Operation::Update, api_version: String::new(), subresource: String::new() }
}

impl FieldManager<'static> {
    /// As [`FieldManager::new`], over a schema that lives for the rest of the process (a store's
    /// registered types): what the walk needs of the schema is computed once per schema and
    /// shared by every field manager over it.
    #[cfg(feature = "store")]
    #[must_use]
    pub(crate) fn over_static_schema(schema: &'static Schema, root: &'static TypeRef, api_version: impl Into<String>) -> Self {
        FieldManager::with_index(schema, root, api_version.into(), reconcile::AtomicIndex::shared(schema))
    }
}

impl<'s> FieldManager<'s> {
    /// A field manager for objects of type `root` in `schema`, written at `api_version` through
    /// the main resource, with no reset fields, at most [`DEFAULT_MAX_UPDATE_MANAGERS`] Update
    /// entries and strict reset-field mode off.
    #[must_use]
    pub fn new(schema: &'s Schema, root: &'s TypeRef, api_version: impl Into<String>) -> Self {
        FieldManager::with_index(schema, root, api_version.into(), std::sync::Arc::new(reconcile::AtomicIndex::new(schema)))
    }

    fn with_index(
        schema: &'s Schema,
        root: &'s TypeRef,
        api_version: String,
        atomic_index: std::sync::Arc<reconcile::AtomicIndex>,
    ) -> Self {
        FieldManager {
            schema,
            root,
            api_version,
            kind: None,
            subresource: String::new(),
            reset_fields: BTreeMap::new(),
            max_update_managers: DEFAULT_MAX_UPDATE_MANAGERS,
            strict_reset_fields: false,
            strip: strip::strip_set(),
            atomic_index,
            created_from: None,
        }
    }

    /// Also checks the `kind` of apply configurations (the apiserver's version check); off by
    /// default.
    #[must_use]
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// What an [`update`](Self::update) that creates its object compares the new object with, in
    /// place of nothing: kube-apiserver compares a create with `New()` of the kind, whose Go zero
    /// value ([`builtin::zero_value`](crate::schema::builtin::zero_value)) always has some
    /// members (`spec.template`, `status`), so those get no `"."` entry in the writer's set.
    #[must_use]
    pub fn with_created_from(mut self, zero: &'s Value) -> Self {
        self.created_from = Some(zero);
        self
    }

    /// Writes go through `subresource` (e.g. `status`); empty for the main resource.
    #[must_use]
    pub fn with_subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// Declares the fields the resource's strategy resets on writes at `api_version` through
    /// `subresource` (empty for the main resource); only the entry matching this manager's
    /// version and subresource is used.
    #[must_use]
    pub fn with_reset_fields(mut self, api_version: impl Into<String>, subresource: impl Into<String>, fields: Set) -> Self {
        self.reset_fields.insert((api_version.into(), subresource.into()), fields);
        self
    }

    /// Keeps at most `max` Update entries per object (default [`DEFAULT_MAX_UPDATE_MANAGERS`]).
    #[must_use]
    pub fn with_max_update_managers(mut self, max: usize) -> Self {
        self.max_update_managers = max;
        self
    }

    /// In strict mode an apply configuration that sets reset fields is rejected instead of
    /// having them ignored (off by default, as in Kubernetes).
    #[must_use]
    pub fn with_strict_reset_fields(mut self, strict: bool) -> Self {
        self.strict_reset_fields = strict;
        self
    }

    fn updater(&self) -> Updater<'s> {
        Updater::new(self.schema, self.root)
    }

    fn reset(&self) -> Option<&Set> {
        self.reset_fields.get(&(self.api_version.clone(), self.subresource.clone())).filter(|s| !s.is_empty())
    }

    /// Applies `config` as `manager` to `live` (`None` to create).
    ///
    /// The config is merged into the live object and the manager's Apply entry becomes exactly
    /// the fields of the config (less the untracked ones and the reset fields). The entry's time
    /// is set to `now` when the object changed.
    ///
    /// # Errors
    /// - [`Error::Invalid`]: the manager is empty, longer than 128 bytes or not printable (as the
    ///   apiserver validates `PatchOptions`); the config does not fit the schema; in strict mode,
    ///   the config sets reset fields (each is listed);
    /// - [`Error::BadRequest`]: the config is at another API version or of another kind, carries
    ///   `metadata.managedFields`, or the live object's managedFields cannot be decoded; the
    ///   resulting object's `metadata` is not an object (so managedFields cannot be stored);
    /// - [`Error::Conflict`]: other managers own fields the config changes, and `force` is off.
    pub fn apply(&self, live: Option<&Value>, config: &Value, manager: &str, force: bool, now: &Time) -> Result<ApplyOutcome> {
        self.apply_config(Live::whole(live), None, Cow::Borrowed(config), manager, force, now)
    }

    /// [`apply`](Self::apply) where the caller knows the live object's managers already (a
    /// store decodes them from the binary sets it keeps, not from the managedFields JSON it
    /// shows), and gives the live object in its parts ([`Live::parts`]).
    #[cfg(feature = "store")]
    pub(crate) fn apply_known(
        &self,
        live: Live<'_>,
        known: Option<KnownManagers<'_>>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &Time,
    ) -> Result<ApplyOutcome> {
        self.apply_config(live, known, Cow::Borrowed(config), manager, force, now)
    }

    /// [`apply`](Self::apply) with a config the caller gives up (a request body it has just
    /// parsed): the parts of the object that are exactly the config's are moved out of it rather
    /// than copied (see [`Updater::apply_owned`]).
    ///
    /// # Errors
    /// Those of [`apply`](Self::apply).
    pub fn apply_owned(&self, live: Option<&Value>, config: Value, manager: &str, force: bool, now: &Time) -> Result<ApplyOutcome> {
        self.apply_config(Live::whole(live), None, Cow::Owned(config), manager, force, now)
    }

    fn apply_config(
        &self,
        live: Live<'_>,
        known: Option<KnownManagers<'_>>,
        mut config: Cow<'_, Value>,
        manager: &str,
        force: bool,
        now: &Time,
    ) -> Result<ApplyOutcome> {
        validate_manager(manager, true)?;
        let Live { view: live_view, managed_fields: live_managed_fields } = live;
        let decoded = match (live_managed_fields, known) {
            (Some(_), Some(known)) => known(),
            (Some(mf), None) => entries::decode(mf),
            (None, _) => Ok(entries::Decoded::default()),
        }
        .map_err(|e| Error::BadRequest(format!("failed to decode managed fields: {e}")))?;
        self.check_type(&config)?;
        if config.get("metadata").and_then(|m| m.get("managedFields")).is_some_and(|v| !v.is_null()) {
            return Err(Error::BadRequest("metadata.managedFields must be nil".into()));
        }

        // A store's live managedFields are as it wrote them: their documents can be kept.
        let kept = live_managed_fields.filter(|_| known.is_some()).and_then(|mf| entries::Kept::new(Cow::Borrowed(mf), &decoded.managers));
        let entries::Decoded { mut managers, mut times, entries: entry_count } = decoded;
        let duplicates = entry_count != managers.len();
        let reconciled = reconcile::reconcile_with(self.schema, &self.atomic_index, self.root, &mut managers)?;
        let key = ManagerKey::apply(manager).with_subresource(self.subresource.clone());
        let before = managers.get(&key).cloned();
        let others_before = managers.len() - usize::from(before.is_some());

        let mut applier_set = None;
        if let Some(reset) = self.reset() {
            // Most configurations set no reset field: a lookup per reset path tells, before the
            // config's whole field set is computed.
            if sets_any(&config, reset) {
                // The field set needs a valid config; the apply below validates it otherwise.
                self.updater().validate(&config)?;
                let set = typed::to_field_set(self.schema, self.root, &config).map_err(Error::Invalid)?.difference(&self.strip);
                let touched = reset::touched(&set, reset);
                if !touched.is_empty() {
                    if self.strict_reset_fields {
                        return Err(Error::Invalid(self.reset_errors(&touched)));
                    }
                    reset::restore(config.to_mut(), &live_view, reset, true);
                    applier_set = Some(set.recursive_difference(reset));
                }
            }
            // Structured-merge-diff means to take reset fields out of the applier's previous set
            // too (its result is discarded); without that, pruning could delete them.
            if let Some(prev) = managers.get_mut(&key) {
                prev.set = prev.set.recursive_difference(reset);
            }
        }

        // The applier's entry is stored without the untracked fields its config sets (apiVersion,
        // kind, metadata.name, ...). With them added back, the merge's walk can tell that the
        // config's fields are still exactly the applier's, without building the config's set;
        // they are stripped again below.
        if applier_set.is_none() {
            if let (Some(prev), Some(untracked)) = (managers.get_mut(&key), self.untracked_fields_of(&config)) {
                prev.set = prev.set.union(&untracked);
            }
        }

        let updater = self.updater().validating();
        let applied = match config {
            Cow::Owned(c) => updater.apply_owned(&live_view, c, &self.api_version, managers, &key, force)?,
            Cow::Borrowed(c) => updater.apply(&live_view, c, &self.api_version, managers, &key, force)?,
        };
        let mut managers = applied.managers;
        if let Some(set) = applier_set {
            managers.insert(key.clone(), VersionedSet::new(set, self.api_version.clone(), true));
        }
        strip::strip_manager(&mut managers, &key, &self.strip);
        if applied.changed {
            times.insert(key.clone(), now.clone());
        }
        times.retain(|k, _| managers.contains_key(k));

        // Without a change to the object, other entries cannot have changed but by disappearing.
        let after = managers.get(&key);
        let others_after = managers.len() - usize::from(after.is_some());
        let managed_fields_changed =
            applied.changed || reconciled || duplicates || after != before.as_ref() || others_after != others_before;

        let mut object = applied.object.unwrap_or_else(|| live_view.into_owned());
        let written = entries::set_managed_fields(&mut object, &managers, &times, kept)?;
        Ok(ApplyOutcome { object, object_changed: applied.changed, managed_fields_changed, managers, times, written })
    }

    /// Records a non-apply write (create, update, patch) by `manager` that replaces `live`
    /// (`None` for a create) with `new`, returning `new` with its managedFields.
    ///
    /// An empty `manager` is recorded as [`UNKNOWN_MANAGER`]; callers that have a user agent
    /// derive a name from it first with [`manager_from_user_agent`], as the apiserver does.
    ///
    /// The managedFields to start from are those of `new` when it carries valid, non-empty ones
    /// and the write is to the main resource (clients may edit managedFields), `[{}]` in `new`
    /// starts from none, and otherwise those of `live`, reset to none when they cannot be decoded.
    /// Fields whose value changed move to the manager's Update entry, whose time becomes `now`
    /// when it took any. Reset fields get their live values back.
    ///
    /// # Errors
    /// - [`Error::Invalid`]: the manager is longer than 128 bytes or not printable; the objects
    ///   do not fit the schema;
    /// - [`Error::BadRequest`]: `new` or its `metadata` is not a JSON object while there are
    ///   managedFields to store.
    pub fn update(&self, live: Option<&Value>, new: Value, manager: &str, now: &Time) -> Result<UpdateOutcome> {
        self.update_known(live, None, new, manager, now)
    }

    /// [`update`](Self::update) where the caller knows `live`'s managers already (a store decodes
    /// them from the binary sets it keeps). When `new` carries managedFields equal to `live`'s
    /// (a client writing back what it read), they are not decoded again.
    pub(crate) fn update_known(
        &self,
        live: Option<&Value>,
        known: Option<KnownManagers<'_>>,
        mut new: Value,
        manager: &str,
        now: &Time,
    ) -> Result<UpdateOutcome> {
        validate_manager(manager, false)?;
        let name = if manager.is_empty() { UNKNOWN_MANAGER } else { manager };
        let key = ManagerKey::update(name, self.api_version.clone()).with_subresource(self.subresource.clone());

        let live_managed_fields = live.and_then(entries::managed_fields_of);
        let from_live = || match (live_managed_fields, known) {
            (Some(_), Some(known)) => known().unwrap_or_default(),
            (Some(mf), None) => entries::decode(mf).unwrap_or_default(),
            (None, _) => entries::Decoded::default(),
        };
        let sent = entries::take_managed_fields(&mut new);
        let (decoded, source) = match &sent {
            _ if !self.subresource.is_empty() => (from_live(), Source::Live),
            Some(mf) if entries::is_reset(mf) => (entries::Decoded::default(), Source::Client),
            // The same JSON decodes to the same managers (or fails the same way, and then so does
            // the fallback to live's).
            Some(mf) if known.is_some() && live_managed_fields == Some(mf) => (from_live(), Source::SentBack),
            Some(mf) => match entries::decode(mf) {
                Ok(d) if !d.managers.is_empty() => (d, Source::Client),
                _ => (from_live(), Source::Live),
            },
            None => (from_live(), Source::Live),
        };
        // A store's live managedFields are as it wrote them: their documents can be kept.
        let kept = match (source, sent) {
            _ if known.is_none() => None,
            (Source::SentBack, Some(sent)) => entries::Kept::new(Cow::Owned(sent), &decoded.managers),
            (Source::Live, _) => live_managed_fields.and_then(|mf| entries::Kept::new(Cow::Borrowed(mf), &decoded.managers)),
            _ => None,
        };
        let entries::Decoded { mut managers, mut times, .. } = decoded;
        reconcile::reconcile_with(self.schema, &self.atomic_index, self.root, &mut managers)?;
        let nothing = Value::Object(serde_json::Map::new());
        let reset = self.reset();
        if let Some(reset) = reset {
            reset::restore(&mut new, live.unwrap_or(&nothing), reset, false);
        }

        let current = current_operation();
        let compared = match (live, self.created_from) {
            (None, Some(zero)) => zero,
            (None, None) => &nothing,
            (Some(live), _) => live,
        };
        // The new object is validated in the same walk (every write is checked against the schema,
        // not only applies). It has no managedFields: live's are compared as they are rather than
        // copying live without them, and their going is not a removal.
        let mut managers =
            self.updater().validating().update_except(compared, &new, &self.api_version, managers, &current, managed_fields_path())?;
        if let Some(vs) = managers.remove(&current) {
            let mut set = strip::stripped(vs.set, &self.strip);
            if let Some(reset) = reset {
                set = set.recursive_difference(reset);
            }
            if !set.is_empty() {
                let set = match managers.get(&key) {
                    Some(previous) => set.union(&previous.set),
                    None => set,
                };
                managers.insert(key.clone(), VersionedSet::new(set, vs.api_version, false));
                times.insert(key, now.clone());
            }
        }
        cap::cap_update_managers(&mut managers, &mut times, self.max_update_managers);
        times.retain(|k, _| managers.contains_key(k));

        let written = entries::set_managed_fields(&mut new, &managers, &times, kept)?;
        Ok(UpdateOutcome { object: new, managers, times, written })
    }

    /// The apiserver's checks that an apply configuration is of this resource's kind and version.
    fn check_type(&self, config: &Value) -> Result<()> {
        let api_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if let Some(kind) = &self.kind {
            let got = config.get("kind").and_then(Value::as_str).unwrap_or("");
            if got != kind || api_version != self.api_version {
                return Err(Error::BadRequest(format!("invalid object type: {}", gvk_string(api_version, got))));
            }
        }
        if api_version != self.api_version {
            return Err(Error::BadRequest(format!(
                "Incorrect version specified in apply patch. Specified patch version: {api_version}, expected: {}",
                self.api_version
            )));
        }
        Ok(())
    }

    /// The untracked fields `config` sets, as they are in its field set; `None` when they
    /// cannot be told (the apply then reports why).
    ///
    /// A map's field set is the union of its fields' sets, each depending on the field's value
    /// alone, so the part of the config's set in the strip set is that of the config's top-level
    /// fields the strip set reaches.
    fn untracked_fields_of(&self, config: &Value) -> Option<Set> {
        let Value::Object(root) = config else { return None };
        let reached = |k: &str| {
            let pe = fieldstore_codec::PathElement::FieldName(k.into());
            self.strip.has_member(&pe) || self.strip.child(&pe).is_some()
        };
        let top: serde_json::Map<String, Value> = root.iter().filter(|(k, _)| reached(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let set = typed::to_field_set(self.schema, self.root, &Value::Object(top)).ok()?;
        Some(set.intersection(&self.strip))
    }

    fn reset_errors(&self, touched: &Set) -> ValidationErrors {
        let endpoint =
            if self.subresource.is_empty() { "the main resource".to_string() } else { format!("the {} subresource", self.subresource) };
        let mut errs = Vec::new();
        touched.leaves().iterate(|p| {
            errs.push(ValidationError {
                path: p.to_string(),
                message: format!("Forbidden: field is reset by the server on writes through {endpoint} and may not be applied"),
            });
        });
        ValidationErrors(errs)
    }
}

/// Whether `v` has a value at some member path of `set`.
fn sets_any(v: &Value, set: &Set) -> bool {
    let mut found = false;
    set.iterate(|p| found = found || crate::value_at(v, p).is_some());
    found
}

/// Where an update's managers come from.
#[derive(Clone, Copy)]
enum Source {
    /// Live's managedFields.
    Live,
    /// The client's, equal to live's (sent back as read).
    SentBack,
    /// The client's own (or none, for `[{}]`).
    Client,
}

/// The set of `metadata.managedFields`.
fn managed_fields_path() -> &'static Set {
    static PATH: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    PATH.get_or_init(|| Set::from_paths([&fieldstore_codec::Path::fields(["metadata", "managedFields"])]))
}

/// The live object an apply merges into: without its managedFields (`view`), and those.
pub(crate) struct Live<'a> {
    view: Cow<'a, Value>,
    managed_fields: Option<&'a Value>,
}

impl<'a> Live<'a> {
    /// A live object given without its managedFields (`view`: a store takes them out of its own
    /// copy for the write and puts them back after, rather than copy the rest without them),
    /// and those (`None`: it had none).
    #[cfg(feature = "store")]
    pub(crate) fn parts(view: &'a Value, managed_fields: Option<&'a Value>) -> Self {
        Live { view: Cow::Borrowed(view), managed_fields }
    }

    /// `live` as a whole object: its managedFields found in it, the view a copy without them
    /// (none: an empty object).
    fn whole(live: Option<&'a Value>) -> Self {
        Live { view: without_managed_fields(live), managed_fields: live.and_then(entries::managed_fields_of) }
    }
}

/// `live` without its managedFields (an apply must not see them), or an empty object to create.
fn without_managed_fields(live: Option<&Value>) -> Cow<'_, Value> {
    let Some(live) = live else {
        return Cow::Owned(Value::Object(serde_json::Map::new()));
    };
    let (Value::Object(root), Some(Value::Object(meta))) = (live, live.get("metadata")) else {
        return Cow::Borrowed(live);
    };
    if !meta.contains_key("managedFields") {
        return Cow::Borrowed(live);
    }
    // Copy around the managedFields rather than copying them too, then dropping them.
    let meta: serde_json::Map<String, Value> =
        meta.iter().filter(|(k, _)| *k != "managedFields").map(|(k, v)| (k.clone(), v.clone())).collect();
    let root = root.iter().map(|(k, v)| (k.clone(), if k == "metadata" { Value::Object(meta.clone()) } else { v.clone() })).collect();
    Cow::Owned(Value::Object(root))
}

/// Go's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The apiserver's validation of the `fieldManager` option: required for apply, at most 128
/// bytes, printable characters only.
fn validate_manager(manager: &str, apply: bool) -> Result<()> {
    let mut errs = Vec::new();
    let err = |message: String| ValidationError { path: "fieldManager".into(), message };
    if apply && manager.is_empty() {
        errs.push(err("Required value: is required for apply patch".into()));
    }
    if manager.len() > MANAGER_MAX_LEN {
        errs.push(err(format!("Too long: may not be more than {MANAGER_MAX_LEN} bytes")));
    }
    for (i, c) in manager.char_indices() {
        if !is_print(c) {
            errs.push(err(format!("Invalid value: {manager:?}: invalid character U+{:04X} (at position {i})", u32::from(c))));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(ValidationErrors(errs)))
    }
}

/// Go's `unicode.IsPrint`, approximately: no control characters, no space but the ASCII one.
fn is_print(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// The manager name the apiserver derives from a user agent when a non-apply write names none:
/// the part before the first `/`, without unprintable characters, cut to 128 bytes.
///
/// # Examples
///
/// ```
/// use fieldstore_engine::fieldmanager::manager_from_user_agent;
///
/// assert_eq!(manager_from_user_agent("kubectl/v1.30.0 (linux/amd64) kubernetes/abc"), "kubectl");
/// assert_eq!(manager_from_user_agent(""), "");
/// ```
#[must_use]
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|&c| is_print(c)) {
        if out.len() + c.len_utf8() > MANAGER_MAX_LEN {
            break;
        }
        out.push(c);
    }
    out
}

/// The managers of `obj` as decoded from its managedFields (empty when it has none).
///
/// # Errors
/// [`Error::BadRequest`] describing the first invalid entry.
pub fn decode_managed_fields(obj: &Value) -> Result<ManagedFields> {
    match entries::managed_fields_of(obj) {
        Some(mf) => entries::decode(mf).map(|d| d.managers).map_err(|e| Error::BadRequest(format!("failed to decode managed fields: {e}"))),
        None => Ok(ManagedFields::new()),
    }
}
