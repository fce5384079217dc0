//! Tests of CEL validation rules.

use serde_json::{json, Value};

use super::*;

fn compile(schema: Value) -> Rules {
    match Rules::compile(&schema, "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations") {
        Ok(Some(r)) => r,
        Ok(None) => panic!("no rules"),
        Err(e) => panic!("compile errors: {e:?}"),
    }
}

#[test]
fn simple_rule_passes_and_fails() {
    let rules = compile(json!({
        "type": "object",
        "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.replicas <= self.max"}]
    }));
    let mut b = Budget::new();
    assert!(rules.check(&json!({"replicas": 1, "max": 2}), None, "spec", &mut b).is_empty());
    let errs = rules.check(&json!({"replicas": 3, "max": 2}), None, "spec", &mut b);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].path, "spec");
    assert_eq!(errs[0].message, "Invalid value: \"object\": failed rule: self.replicas <= self.max");
}
