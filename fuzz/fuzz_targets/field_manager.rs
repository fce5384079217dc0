//! The field manager on arbitrary JSON, as the store runs it: a short history of applies and
//! updates whose objects carry their managedFields as JSON. Updates may carry managedFields of
//! their own (clients may edit them), which the field manager decodes: untrusted input. Nothing
//! may panic, and after every write:
//!
//! - the object's managedFields are the entries `managed_fields()` gives, read as JSON (the
//!   object's are built from the sets, the entries' text is written from them);
//! - they decode again to managers with non-empty sets;
//! - applying the same config again by the same manager succeeds, and when it changes nothing
//!   (`is_noop`) its object is the object it was applied to (the store replies with it). Not
//!   every repeat is a no-op, as in structured-merge-diff: a config that sets a map
//!   to `{}` where pruning just removed the applier's old entries of it left `null`, which the
//!   same config then sets to `{}`.
//!
//! Input layout: split on `\0`, up to four ops; each op is one control byte then a JSON document:
//! bit 0 update (else apply), bits 1–2 the manager, bit 3 force. A document that is a JSON
//! object gets `apiVersion: v1` (the version the field manager is for) unless bit 4 is set.
#![no_main]

use fieldstore_codec::managed_fields::encode_entries;
use fieldstore_engine::fieldmanager::{decode_managed_fields, FieldManager, Time};
use fieldstore_engine::schema::{Schema, DEDUCED_TYPE};
use fieldstore_engine::TypeRef;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

fn schema() -> &'static (Schema, TypeRef) {
    static S: OnceLock<(Schema, TypeRef)> = OnceLock::new();
    S.get_or_init(|| {
        let s = Schema::deduced();
        let root = s.named(DEDUCED_TYPE).expect("deduced root type");
        (s, root)
    })
}

const MANAGERS: [&str; 3] = ["alice", "bob", "carol"];

/// The object's managedFields are the entries' text read as JSON.
fn check_entries(object: &Value, entries: &[fieldstore_codec::managed_fields::ManagedFieldsEntry]) {
    let listed = object.get("metadata").and_then(|m| m.get("managedFields"));
    if entries.is_empty() {
        assert!(listed.is_none(), "managedFields without entries in {object}");
        return;
    }
    let text: Value = serde_json::from_slice(&encode_entries(entries)).expect("entries are JSON");
    assert_eq!(listed, Some(&text), "the object's managedFields are not its entries");
    let managers = decode_managed_fields(object).expect("written managedFields decode");
    assert!(managers.values().all(|vs| !vs.set.is_empty()), "an entry with an empty set in {object}");
}

fuzz_target!(|data: &[u8]| {
    let (schema, root) = schema();
    let fm = FieldManager::new(schema, root, "v1");
    let now = Time::from_unix_seconds(1_700_000_000);
    let mut live: Option<Value> = None;
    for (step, chunk) in data.split(|&b| b == 0).take(4).enumerate() {
        let Some((&ctrl, doc)) = chunk.split_first() else {
            continue;
        };
        let Ok(mut object) = serde_json::from_slice::<Value>(doc) else {
            continue;
        };
        if let (Value::Object(m), false) = (&mut object, ctrl & 16 != 0) {
            m.insert("apiVersion".into(), Value::String("v1".into()));
        }
        let name = MANAGERS[usize::from((ctrl >> 1) & 3) % MANAGERS.len()];
        let now = Time::from_unix_seconds(now.unix_seconds() + step as i64);
        if ctrl & 1 == 1 {
            if let Ok(out) = fm.update(live.as_ref(), object, name, &now) {
                check_entries(&out.object, &out.managed_fields());
                live = Some(out.object);
            }
        } else {
            let force = ctrl & 8 != 0;
            if let Ok(out) = fm.apply(live.as_ref(), &object, name, force, &now) {
                check_entries(&out.object, &out.managed_fields());
                let later = Time::from_unix_seconds(now.unix_seconds() + 100);
                let again = fm.apply(Some(&out.object), &object, name, force, &later).expect("the same apply again succeeds");
                if again.is_noop() {
                    assert_eq!(again.object, out.object, "a no-op apply's object is not the live one");
                }
                live = Some(out.object);
            }
        }
    }
});
