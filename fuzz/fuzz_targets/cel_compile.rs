//! CEL validation rules (`fieldstore_engine::crd::cel`): arbitrary text as the rule (and the
//! messageExpression) of a small schema must compile or be refused without panicking, nesting
//! however deep; what compiles must evaluate on a few values, old values and a small budget
//! without panicking, and spend no more than the budget it was given.
#![no_main]

use fieldstore_engine::crd::cel::{Budget, Rules};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const PATH: &str = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first line is the rule, the rest (if any) the messageExpression.
    let (rule, message) = match text.split_once('\n') {
        Some((r, m)) => (r.to_owned(), Some(m.to_owned())),
        None => (text.to_string(), None),
    };
    let mut entry = json!({"rule": rule});
    if let Some(m) = message {
        entry["messageExpression"] = Value::String(m);
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 64},
            "replicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 32}},
            "labels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string", "maxLength": 32}},
            "port": {"x-kubernetes-int-or-string": true},
            "start": {"type": "string", "format": "date-time"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        },
        "x-kubernetes-validations": [entry]
    });
    let Ok(Some(rules)) = Rules::compile(&schema, PATH) else { return };
    let values = [
        json!({}),
        json!({"name": "a", "replicas": 3, "ratio": 0.5, "tags": ["x", "y"], "labels": {"k": "v"}, "port": "80%",
               "start": "2024-01-01T00:00:00Z", "extra": {"deep": [1, {"x": null}]}}),
        json!({"replicas": -9223372036854775808i64, "tags": [], "port": 8080, "start": "not a time"}),
        json!("not an object"),
    ];
    for (i, value) in values.iter().enumerate() {
        for old in [None, Some(&values[(i + 1) % values.len()])] {
            let limit = 5_000;
            let mut budget = Budget::with_limit(limit);
            let errors = rules.check(value, old, "spec", &mut budget);
            assert!(budget.remaining() <= limit);
            for e in &errors {
                assert!(e.path.starts_with("spec"), "error outside the node: {}", e.path);
            }
        }
    }
});
