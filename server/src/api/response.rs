//! What the request layer answers ([`Response`]), before a door encodes it.

use fieldstore_engine::store::{ListStream, ObjectList, Revision, TypeSpec, Watch, Written};
use fieldstore_engine::{Reason, Status};
use serde_json::Value;

/// The answer to a [`super::Request`].
pub enum Response {
    /// An object (get, delete, the scale subresource).
    Object(Value),
    /// What a write made, with its warnings.
    Written(Written),
    /// An object at a revision, or none when it did not exist then.
    ObjectAt(Option<Value>),
    /// A page of a list, each object as its JSON text.
    ListJson {
        /// The page.
        page: ObjectList<Vec<u8>>,
        /// The listed type.
        spec: TypeSpec,
    },
    /// A list to read as it is sent.
    ListStream {
        /// The list, at its revision, not read yet.
        stream: ListStream,
        /// The listed type.
        spec: TypeSpec,
    },
    /// A page of a list, as objects.
    List {
        /// The page.
        page: ObjectList,
        /// The listed type.
        spec: TypeSpec,
    },
    /// The objects a deleteCollection deleted or started to delete.
    Deleted {
        /// The objects.
        items: Vec<Value>,
        /// Their type.
        spec: TypeSpec,
    },
    /// An open watch.
    Watch(Opened),
    /// An answer of history or of the owner index, as the JSON its engine type serialises to.
    Json(Value),
    /// How many objects a manager administration changed.
    Count(u64),
    /// The store's revisions.
    Revision {
        /// The current revision.
        revision: Revision,
        /// The compacted revision.
        compacted: Revision,
    },
    /// Registered types.
    Types(Vec<TypeSpec>),
}

/// A watch opened for a caller: the store's watch, the caller's watch slot (released when this
/// is dropped) and the watched type.
pub struct Opened {
    /// The store's watch.
    pub watch: Watch,
    /// The watched type.
    pub spec: TypeSpec,
    /// The caller's watch slot.
    pub slot: super::WatchSlot,
}

/// The failure of a door that got a response of another kind than its request's (a bug).
#[must_use]
pub fn mismatch(expected: &str) -> Status {
    Status::failure(Reason::InternalError, format!("the request layer answered something other than {expected}"))
}

impl Response {
    /// The object of [`Response::Object`], or the object written of [`Response::Written`].
    ///
    /// # Errors
    /// 500 for another response.
    pub fn object(self) -> Result<Value, Status> {
        match self {
            Response::Object(v) => Ok(v),
            Response::Written(w) => Ok(std::sync::Arc::unwrap_or_clone(w.object)),
            _ => Err(mismatch("an object")),
        }
    }

    /// What [`Response::Written`] holds.
    ///
    /// # Errors
    /// 500 for another response.
    pub fn written(self) -> Result<Written, Status> {
        match self {
            Response::Written(w) => Ok(w),
            Response::Object(object) => Ok(Written { object: object.into(), warnings: Vec::new(), created: false }),
            _ => Err(mismatch("a written object")),
        }
    }

    /// The JSON of [`Response::Json`].
    ///
    /// # Errors
    /// 500 for another response.
    pub fn json(self) -> Result<Value, Status> {
        match self {
            Response::Json(v) => Ok(v),
            _ => Err(mismatch("JSON")),
        }
    }

    /// The count of [`Response::Count`].
    ///
    /// # Errors
    /// 500 for another response.
    pub fn count(self) -> Result<u64, Status> {
        match self {
            Response::Count(n) => Ok(n),
            _ => Err(mismatch("a count")),
        }
    }

    /// The watch of [`Response::Watch`].
    ///
    /// # Errors
    /// 500 for another response.
    pub fn opened(self) -> Result<Opened, Status> {
        match self {
            Response::Watch(o) => Ok(o),
            _ => Err(mismatch("a watch")),
        }
    }
}
