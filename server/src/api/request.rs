//! What a client asks of the store, whatever door it came through: a [`Request`] with its typed
//! options, addressed by an [`ObjectKey`] or a [`Collection`].

use fieldstore_codec::document::Document;
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{
    Collection, DeleteOptions, GetOptions, HistoryQuery, ListOptions, ObjectKey, Revision, ScaleChange, WatchOptions, WriteOptions,
    WriteVerb,
};
use serde_json::Value;

/// How a list's objects come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListForm {
    /// As their JSON text, unparsed (for a door that sends the list on).
    Json,
    /// As objects (for a door that reads them: Tables, the CLI).
    Objects,
    /// As a [`fieldstore_engine::store::ListStream`], read in chunks as the door sends them
    /// (answered with [`super::Response::ListStream`]): every error of the list's options comes
    /// with the answer, none of them once its items are read but the store's own.
    Stream,
}

/// A request of the store, run by [`super::Api::run`] with the caller's identity.
#[derive(Debug, Clone)]
pub enum Request {
    /// One object, at the latest revision or as the options ask.
    Get {
        /// The object.
        key: ObjectKey,
        /// resourceVersion and its match.
        opts: GetOptions,
    },
    /// A page of a collection.
    List {
        /// What to list.
        of: Collection,
        /// Selectors, paging, resourceVersion.
        opts: ListOptions,
        /// How the objects come back.
        form: ListForm,
    },
    /// A watch of a collection (answered with [`super::Response::Watch`]).
    Watch {
        /// What to watch.
        of: Collection,
        /// From where, with which selectors and bookmarks.
        opts: WatchOptions,
    },
    /// A create, update or apply of an object body. An empty resource is the body's type; an
    /// empty namespace the body's.
    Write {
        /// Create, update or apply.
        verb: WriteVerb,
        /// Where it goes.
        of: Collection,
        /// The body, with the fields it set twice.
        body: Document,
        /// The body's size in bytes (large ones are merged on the blocking pool).
        body_len: usize,
        /// Manager, dry run, force, subresource, field validation.
        opts: WriteOptions,
    },
    /// A patch of an object ([`PatchType::Apply`] is a server-side apply of the patch).
    Patch {
        /// The object.
        key: ObjectKey,
        /// The patch's type.
        patch_type: PatchType,
        /// The patch, with the fields it set twice.
        patch: Document,
        /// The patch's size in bytes (a large apply is merged on the blocking pool).
        body_len: usize,
        /// Manager, dry run, force (apply only), subresource, field validation.
        opts: WriteOptions,
    },
    /// A delete (or the start of one, for an object with finalizers).
    Delete {
        /// The object.
        key: ObjectKey,
        /// Preconditions and dry run.
        opts: DeleteOptions,
    },
    /// Deletes of every object a list selects.
    DeleteCollection {
        /// What to delete.
        of: Collection,
        /// The selection.
        list: ListOptions,
        /// Preconditions and dry run.
        opts: DeleteOptions,
    },
    /// The `scale` subresource of an object.
    GetScale {
        /// The object.
        key: ObjectKey,
    },
    /// A write of the `scale` subresource.
    UpdateScale {
        /// The object.
        key: ObjectKey,
        /// The new Scale, or a patch of the current one.
        change: ScaleChange,
        /// Manager and dry run.
        opts: WriteOptions,
    },
    /// A namespace's `finalize` subresource: its `spec.finalizers` set to the body's.
    Finalize {
        /// The namespace.
        key: ObjectKey,
        /// The Namespace with the finalizers it keeps.
        object: Value,
        /// Manager and dry run.
        opts: WriteOptions,
    },
    /// Who set each field of an object, and when.
    Blame {
        /// The object.
        key: ObjectKey,
    },
    /// The values one field of an object had.
    FieldHistory {
        /// The object.
        key: ObjectKey,
        /// The field (`.data.a`).
        path: String,
        /// Paging.
        query: HistoryQuery,
    },
    /// The writes of an object, newest first.
    ObjectLog {
        /// The object.
        key: ObjectKey,
        /// At most this many.
        limit: Option<usize>,
    },
    /// An object as it was at a revision.
    ObjectAt {
        /// The object.
        key: ObjectKey,
        /// The revision.
        revision: Revision,
    },
    /// The managers owning a field path across a resource's objects.
    OwnersOf {
        /// The resource.
        resource: String,
        /// The field path.
        path: String,
    },
    /// A page of the objects a manager owns fields of.
    ObjectsManagedBy {
        /// The manager.
        manager: String,
        /// Only objects of this resource.
        resource: Option<String>,
        /// Page size.
        limit: Option<usize>,
        /// Where the previous page ended.
        continue_token: Option<String>,
    },
    /// Every manager, with how many objects and fields it owns.
    Managers {
        /// Only objects of this resource.
        resource: Option<String>,
    },
    /// Renames a manager in every object's managedFields.
    RenameManager {
        /// The old name.
        from: String,
        /// The new name.
        to: String,
    },
    /// Drops a manager's ownership from objects.
    Release {
        /// The manager.
        manager: String,
        /// Only objects of this resource.
        resource: Option<String>,
        /// Only objects these labels select.
        label_selector: Option<String>,
    },
    /// Compacts history before a revision (the current one when none).
    Compact {
        /// The revision.
        revision: Option<Revision>,
    },
    /// The current and the compacted revision.
    Revision,
    /// Makes every open watch send a bookmark now.
    RequestBookmark,
    /// Registers the type a CustomResourceDefinition defines.
    RegisterType {
        /// The definition.
        definition: Value,
    },
    /// Every registered type.
    ListTypes,
}

/// The name authorization rules use for type registration and the list of types; store-wide
/// calls (compaction, bookmarks, revisions, manager administration) are under `""`.
pub(super) const TYPES: &str = "customresourcedefinitions";

/// What a request addresses: an object, a collection, a resource (of a registered type, or
/// optionally one), the registered types, or the whole store.
pub(super) enum Address<'a> {
    /// One object.
    Object(&'a mut ObjectKey),
    /// The objects of a resource.
    Collection(&'a mut Collection),
    /// A resource, which must be registered.
    Resource(&'a mut String),
    /// Every resource, or one.
    AnyResource(&'a mut Option<String>),
    /// The registered types.
    Types,
    /// The whole store.
    Store,
}

impl Request {
    /// The verb authorization rules name for this request.
    pub fn verb(&self) -> &'static str {
        match self {
            Request::Get { .. }
            | Request::GetScale { .. }
            | Request::Blame { .. }
            | Request::FieldHistory { .. }
            | Request::ObjectLog { .. }
            | Request::ObjectAt { .. }
            | Request::Revision => "get",
            Request::List { .. }
            | Request::OwnersOf { .. }
            | Request::ObjectsManagedBy { .. }
            | Request::Managers { .. }
            | Request::ListTypes => "list",
            Request::Watch { .. } | Request::RequestBookmark => "watch",
            Request::Write { verb, .. } => verb.as_str(),
            Request::Patch { patch_type: PatchType::Apply, .. } => "apply",
            Request::Patch { .. } => "patch",
            Request::UpdateScale { change: ScaleChange::Replace(_), .. } | Request::Finalize { .. } => "update",
            Request::UpdateScale { .. } => "patch",
            Request::Delete { .. } => "delete",
            Request::DeleteCollection { .. } => "deletecollection",
            Request::Compact { .. } => "compact",
            Request::RenameManager { .. } | Request::Release { .. } | Request::RegisterType { .. } => "admin",
        }
    }

    /// What the request addresses, to be resolved and authorized.
    pub(super) fn address(&mut self) -> Address<'_> {
        match self {
            Request::Get { key, .. }
            | Request::Patch { key, .. }
            | Request::Delete { key, .. }
            | Request::GetScale { key }
            | Request::UpdateScale { key, .. }
            | Request::Finalize { key, .. }
            | Request::Blame { key }
            | Request::FieldHistory { key, .. }
            | Request::ObjectLog { key, .. }
            | Request::ObjectAt { key, .. } => Address::Object(key),
            Request::List { of, .. } | Request::Watch { of, .. } | Request::Write { of, .. } | Request::DeleteCollection { of, .. } => {
                Address::Collection(of)
            }
            Request::OwnersOf { resource, .. } => Address::Resource(resource),
            Request::ObjectsManagedBy { resource, .. } | Request::Managers { resource } | Request::Release { resource, .. } => {
                Address::AnyResource(resource)
            }
            Request::RegisterType { .. } | Request::ListTypes => Address::Types,
            Request::RenameManager { .. } | Request::Compact { .. } | Request::Revision | Request::RequestBookmark => Address::Store,
        }
    }
}
