//! CustomResourceDefinitions and custom resources from untrusted bytes: the definition's checks
//! (`crd::definition`), reading its schema, and defaulting and validating an object against it
//! (with itself as the old object, for ratcheting) must never panic. Input: a JSON document,
//! either a definition or `[definition, object, old object]`.
#![no_main]

use fieldstore_engine::crd::{defaults, definition, validation, Structural};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else { return };
    let (mut crd, object, old) = match doc {
        Value::Array(mut a) if !a.is_empty() => {
            let old = if a.len() > 2 { a.remove(2) } else { Value::Null };
            let object = if a.len() > 1 { a.remove(1) } else { Value::Null };
            (a.remove(0), object, old)
        }
        other => (other, Value::Null, Value::Null),
    };
    definition::default(&mut crd);
    let _ = definition::check(&crd, None);
    let _ = definition::check(&crd, Some(&crd));
    let schema = crd.pointer("/spec/versions/0/schema/openAPIV3Schema").cloned().unwrap_or(Value::Null);
    let s = Structural::read(&schema);
    let mut object = object;
    defaults::apply(&s, &mut object);
    let _ = validation::validate(&s, &object, None);
    let _ = validation::validate(&s, &object, Some(&old));
});
