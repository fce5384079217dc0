//! Tests of CEL validation rules: compile errors, outcomes, messages, paths, reasons, transition
//! rules, cost refusal and the runtime budget.

use serde_json::{json, Value};

use super::*;

mod libraries;

const AT: &str = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";

fn compile(schema: Value) -> Rules {
    match Rules::compile(&schema, AT) {
        Ok(Some(r)) => r,
        Ok(None) => panic!("no rules"),
        Err(e) => panic!("compile errors: {e:?}"),
    }
}

fn compile_err(schema: Value) -> Vec<ValidationError> {
    match Rules::compile(&schema, AT) {
        Ok(_) => panic!("compiled"),
        Err(e) => e,
    }
}

/// A schema of `ty` (a JSON schema object without rules) with the one rule `rule`.
fn with_rule(mut schema: Value, rule: Value) -> Value {
    schema["x-kubernetes-validations"] = json!([rule]);
    schema
}

fn check(rules: &Rules, value: Value) -> Vec<ValidationError> {
    rules.check(&value, None, "spec", &mut Budget::new())
}

fn messages(errs: &[ValidationError]) -> Vec<String> {
    errs.iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
}

/// Evaluates `rule` on `value` under `schema`: true when it passes.
fn eval(schema: Value, rule: &str, value: Value) -> bool {
    let rules = compile(with_rule(schema, json!({"rule": rule})));
    let errs = check(&rules, value);
    assert!(errs.len() <= 1, "{errs:?}");
    if let Some(e) = errs.first() {
        assert!(e.message.contains("failed rule"), "{rule}: {}", e.message);
    }
    errs.is_empty()
}

fn obj(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn strings() -> Value {
    json!({"type": "string", "maxLength": 256})
}

fn string_list() -> Value {
    json!({"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 64}})
}

// ---------------------------------------------------------------------------------------------
// Compilation

#[test]
fn no_rules_is_none() {
    assert!(Rules::compile(&json!({"type": "object"}), AT).unwrap().is_none());
    assert!(Rules::compile(&json!({"type": "object", "x-kubernetes-validations": []}), AT).unwrap().is_none());
}

#[test]
fn syntax_error_is_refused_with_kube_shape() {
    let errs = compile_err(with_rule(obj(json!({"x": {"type": "integer"}})), json!({"rule": "self.x =="})));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].path, format!("{AT}[0].rule"));
    assert!(
        errs[0].message.starts_with(
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.x ==\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: \
             compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        errs[0].message
    );
}

#[test]
fn undeclared_reference_is_refused() {
    let errs = compile_err(with_rule(obj(json!({})), json!({"rule": "foo == 1"})));
    assert!(
        errs[0]
            .message
            .ends_with("compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"),
        "{}",
        errs[0].message
    );
}

#[test]
fn undeclared_function_is_refused() {
    let errs = compile_err(with_rule(strings(), json!({"rule": "self.frobnicate()"})));
    assert!(errs[0].message.contains("undeclared reference to 'frobnicate'"), "{}", errs[0].message);
}

#[test]
fn undefined_field_is_refused() {
    let errs = compile_err(with_rule(obj(json!({"replicas": {"type": "integer"}})), json!({"rule": "self.nonExistingField > 0"})));
    assert!(errs[0].message.contains("compilation failed: ERROR: <input>:1:"), "{}", errs[0].message);
    assert!(errs[0].message.contains("undefined field 'nonExistingField'"), "{}", errs[0].message);
    // has() of an undeclared field too.
    let errs = compile_err(with_rule(obj(json!({})), json!({"rule": "has(self.nope)"})));
    assert!(errs[0].message.contains("undefined field 'nope'"), "{}", errs[0].message);
}

#[test]
fn mismatched_operands_are_refused() {
    let errs = compile_err(with_rule(json!({"type": "integer"}), json!({"rule": "self == true"})));
    assert!(errs[0].message.contains("found no matching overload for '_==_' applied to '(int, bool)'"), "{}", errs[0].message);
}

#[test]
fn non_bool_rule_is_refused() {
    let errs = compile_err(with_rule(obj(json!({"r": {"type": "integer"}})), json!({"rule": "self.r + 1"})));
    assert!(errs[0].message.ends_with(": cel expression must evaluate to a bool"), "{}", errs[0].message);
}

#[test]
fn rule_fields_are_checked() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [
        {"rule": "  "},
        {"rule": "true", "message": " "},
        {"rule": "true", "message": "a\nb"},
        {"rule": "true &&\ntrue"},
        {"rule": "true", "messageExpression": " "},
        {"rule": "true", "reason": "FieldValueWrong"},
        {"rule": "true", "fieldPath": ".b"},
        {"rule": "true", "fieldPath": "a"},
    ]});
    let errs = messages(&compile_err(schema));
    assert_eq!(
        errs,
        vec![
            format!("{AT}[0].rule: Required value: rule is not specified"),
            format!("{AT}[1].message: Invalid value: \" \": message must be non-empty if specified"),
            format!("{AT}[2].message: Invalid value: \"a\\nb\": message must not contain line breaks"),
            format!("{AT}[3].message: Required value: message must be specified if rule contains line breaks"),
            format!("{AT}[4].messageExpression: Required value: messageExpression must be non-empty if specified"),
            format!(
                "{AT}[5].reason: Unsupported value: \"FieldValueWrong\": supported values: \"FieldValueDuplicate\", \
                 \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
            ),
            format!("{AT}[6].fieldPath: Invalid value: \".b\": fieldPath must be a valid path"),
            format!("{AT}[7].fieldPath: Invalid value: \"a\": fieldPath must be a valid path"),
        ]
    );
}

#[test]
fn optional_old_self_needs_a_transition_rule() {
    let errs = compile_err(with_rule(strings(), json!({"rule": "self.size() > 1", "optionalOldSelf": true})));
    assert_eq!(
        messages(&errs),
        vec![format!("{AT}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule")]
    );
    compile(with_rule(strings(), json!({"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true})));
}

#[test]
fn message_expression_is_compiled() {
    let errs = compile_err(with_rule(strings(), json!({"rule": "true", "messageExpression": "self.nope("})));
    assert_eq!(errs[0].path, format!("{AT}[0].messageExpression"));
    assert!(errs[0].message.contains("messageExpression compilation failed: ERROR: <input>:1:"), "{}", errs[0].message);
    let errs = compile_err(with_rule(strings(), json!({"rule": "true", "messageExpression": "self.size()"})));
    assert!(errs[0].message.ends_with(": must evaluate to a string"), "{}", errs[0].message);
}

#[test]
fn deep_nesting_is_refused_without_overflow() {
    let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
    let errs = compile_err(with_rule(strings(), json!({"rule": deep})));
    assert!(errs[0].message.contains("nesting exceeds limit"), "{}", &errs[0].message[..200.min(errs[0].message.len())]);
    let negations = format!("{}true", "!".repeat(5000));
    assert!(Rules::compile(&with_rule(strings(), json!({"rule": negations})), AT).is_err());
    let lists = format!("{}1{} == 1", "[".repeat(3000), "]".repeat(3000));
    assert!(Rules::compile(&with_rule(strings(), json!({"rule": lists})), AT).is_err());
    // At the limit it parses and runs.
    let ok = format!("{}true{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
    let rules = compile(with_rule(strings(), json!({"rule": ok})));
    assert!(check(&rules, json!("x")).is_empty());
}

#[test]
fn overlong_rule_is_refused() {
    let long = format!("self == '{}'", "a".repeat(MAX_EXPRESSION_CODE_POINTS));
    let errs = compile_err(with_rule(strings(), json!({"rule": long})));
    assert!(errs[0].message.contains("expression code point size exceeds limit"), "{}", &errs[0].message[..300]);
}

// ---------------------------------------------------------------------------------------------
// Cost

#[test]
fn unbounded_expensive_rule_is_refused_at_compile_time() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let errs = compile_err(with_rule(schema, json!({"rule": "self.all(x, x.matches('^[a-z]+$'))"})));
    assert_eq!(
        messages(&errs),
        vec![format!(
            "{AT}[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying \
             the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        )]
    );
    // Bounded, the same rule is fine.
    let bounded = json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64}});
    let rules = compile(with_rule(bounded, json!({"rule": "self.all(x, x.matches('^[a-z]+$'))"})));
    assert!(rules.estimated_cost() < 1000, "{}", rules.estimated_cost());
}

/// cel-go's model charges a prefix test by the prefix: over an unbounded list of unbounded
/// strings it is about four million, which kube-apiserver accepts, and so does this.
#[test]
fn unbounded_cheap_rule_is_accepted() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let rules = compile(with_rule(schema, json!({"rule": "self.all(x, x.startsWith('a'))"})));
    assert!(rules.estimated_cost() > 1_000_000 && rules.estimated_cost() < STATIC_ESTIMATED_COST_LIMIT, "{}", rules.estimated_cost());
}

#[test]
fn quadratic_rule_over_ten_thousand_items_is_refused() {
    let schema = json!({"type": "array", "maxItems": 10000, "items": {"type": "integer"}});
    let errs = compile_err(with_rule(schema.clone(), json!({"rule": "self.all(x, self.exists(y, y == x))"})));
    assert!(errs[0].message.starts_with("Forbidden: estimated rule cost exceeds budget by factor of"), "{}", errs[0].message);
    // Linear over the same list is accepted.
    compile(with_rule(schema, json!({"rule": "self.all(x, x > 0)"})));
}

#[test]
fn cost_factor_is_worded_as_kube() {
    assert_eq!(
        cost_error_message("estimated rule cost", 12_000_000, STATIC_ESTIMATED_COST_LIMIT),
        "estimated rule cost exceeds budget by factor of 1.200000x (try simplifying the rule, or adding maxItems, \
         maxProperties, and maxLength where arrays, maps, and strings are declared)"
    );
    assert!(cost_error_message("x", 54_000_000, 10_000_000).contains("factor of 5.4x"));
}

#[test]
fn cardinality_multiplies_the_estimate() {
    let item = with_rule(json!({"type": "string", "maxLength": 1000}), json!({"rule": "self.contains('a')"}));
    let list = json!({"type": "array", "items": item.clone()});
    let card = cardinality::items(1, &list);
    assert!(card > 1_000_000);
    let errs = match Rules::compile_with(&item, AT, CompileOptions { cardinality: card, root: false }) {
        Err(e) => e,
        Ok(_) => panic!("compiled"),
    };
    assert!(errs[0].message.starts_with("Forbidden: estimated rule cost exceeds budget"), "{}", errs[0].message);
    let bounded = json!({"type": "array", "maxItems": 10, "items": item.clone()});
    let card = cardinality::items(1, &bounded);
    assert_eq!(card, 10);
    assert!(Rules::compile_with(&item, AT, CompileOptions { cardinality: card, root: false }).is_ok());
}

#[test]
fn crd_total_is_limited() {
    let rules = compile(with_rule(json!({"type": "string", "maxLength": 100000}), json!({"rule": "self.contains('a')"})));
    let mut total = CrdCost::new();
    total.add(&rules, 50_000);
    let errs = total.check("spec.validation.openAPIV3Schema");
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs[0].path, format!("{AT}[0].rule"));
    assert_eq!(errs[0].message, "Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit");
    assert_eq!(errs[1].path, "spec.validation.openAPIV3Schema");
    assert!(
        errs[1].message.starts_with(
            "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of"
        ),
        "{}",
        errs[1].message
    );
    let mut small = CrdCost::new();
    small.add(&rules, 1);
    assert!(small.check("x").is_empty());
}

#[test]
fn runtime_budget_stops_rules_with_one_error() {
    let schema = json!({"type": "array", "maxItems": 10000, "items": {"type": "integer"}});
    let rules = compile(with_rule(schema, json!({"rule": "self.all(x, x >= 0)"})));
    let value = Value::Array((0..10000).map(|i| json!(i)).collect());
    // The whole budget: fine, and spent by the rule's bound.
    let mut budget = Budget::new();
    assert!(rules.check(&value, None, "spec", &mut budget).is_empty());
    assert!(budget.remaining() < RUNTIME_CEL_COST_BUDGET);
    // A small budget: refused before running, one error, then nothing more runs.
    let mut budget = Budget::with_limit(1000);
    let errs = rules.check(&value, None, "spec.items", &mut budget);
    assert_eq!(
        messages(&errs),
        vec!["spec.items: Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"]
    );
    assert!(budget.is_exhausted());
    assert!(rules.check(&json!([1]), None, "spec.items", &mut budget).is_empty());
}

#[test]
fn repeated_nodes_exhaust_the_object_budget() {
    let item = with_rule(json!({"type": "string", "maxLength": 100000}), json!({"rule": "self.contains('zz')"}));
    let rules = compile(item);
    let long = Value::String(format!("{}zz", "a".repeat(90000)));
    let mut budget = Budget::new();
    let mut errors = Vec::new();
    for i in 0..2000 {
        errors.extend(rules.check(&long, None, &format!("spec.items[{i}]"), &mut budget));
    }
    assert_eq!(errors.len(), 1, "{:?}", messages(&errors[..3.min(errors.len())]));
    assert!(errors[0].message.contains("running out of cost budget"));
    assert!(budget.is_exhausted());
}

#[test]
fn per_call_limit_refuses_an_expensive_evaluation() {
    let schema = json!({"type": "array", "maxItems": 10000, "items": {"type": "string", "maxLength": 1000}});
    let rules = compile(with_rule(schema, json!({"rule": "self.all(x, x.contains('b'))"})));
    let value = Value::Array((0..10000).map(|_| json!("a".repeat(1000))).collect());
    let errs = check(&rules, value);
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("call cost exceeds limit for rule: self.all(x, x.contains('b'))"), "{}", errs[0].message);
}

// ---------------------------------------------------------------------------------------------
// Evaluation

#[test]
fn default_message_shows_a_scalar_value() {
    let rules = compile(with_rule(strings(), json!({"rule": "self.startsWith('a')"})));
    assert_eq!(messages(&check(&rules, json!("b"))), vec!["spec: Invalid value: \"b\": failed rule: self.startsWith('a')"]);
    let untyped = with_rule(json!({"x-kubernetes-int-or-string": true}), json!({"rule": "self == 1"}));
    let rules = compile(untyped);
    assert_eq!(messages(&check(&rules, json!(2))), vec!["spec: Invalid value: 2: failed rule: self == 1"]);
}

#[test]
fn message_and_reasons() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "x-kubernetes-validations": [
        {"rule": "self.a > 1", "message": " a must exceed 1 "},
        {"rule": "self.a > 2", "message": "forbidden", "reason": "FieldValueForbidden"},
        {"rule": "self.a > 3", "message": "required", "reason": "FieldValueRequired"},
        {"rule": "self.a > 4", "reason": "FieldValueDuplicate"},
        {"rule": "self.a > 5", "reason": "FieldValueInvalid"},
    ]});
    let rules = compile(schema);
    assert_eq!(
        messages(&check(&rules, json!({"a": 0}))),
        vec![
            "spec: Invalid value: a must exceed 1",
            "spec: Forbidden: forbidden",
            "spec: Required value: required",
            "spec: Duplicate value: \"object\"",
            "spec: Invalid value: failed rule: self.a > 5",
        ]
    );
}

#[test]
fn message_expression_is_used_and_falls_back() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "s": {"type": "string"}},
    "x-kubernetes-validations": [
        {"rule": "self.a > 1", "messageExpression": "'a is ' + string(self.a)", "message": "static"},
        {"rule": "self.a > 1", "messageExpression": "self.s", "message": "fallback"},
        {"rule": "self.a > 1", "messageExpression": "'   '", "message": "blank"},
    ]});
    let rules = compile(schema);
    assert_eq!(
        messages(&check(&rules, json!({"a": 0}))),
        vec!["spec: Invalid value: a is 0", "spec: Invalid value: fallback", "spec: Invalid value: blank",]
    );
}

#[test]
fn field_path_moves_the_error() {
    let schema = json!({"type": "object", "properties": {
        "x": {"type": "object", "properties": {"y": {"type": "integer"}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "dotted.name": {"type": "string"},
    }, "x-kubernetes-validations": [
        {"rule": "self.x.y > 0", "fieldPath": ".x.y"},
        {"rule": "false", "fieldPath": ".m['k.1']"},
        {"rule": "false", "fieldPath": "['dotted.name']"},
    ]});
    let rules = compile(schema);
    let errs = check(&rules, json!({"x": {"y": 0}}));
    let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, vec!["spec.x.y", "spec.m[k.1]", "spec.dotted.name"]);
}

#[test]
fn absent_field_has_and_access() {
    let schema = obj(json!({"a": {"type": "integer"}, "b": {"type": "integer"}}));
    assert!(eval(schema.clone(), "!has(self.a) || self.a > 0", json!({})));
    assert!(eval(schema.clone(), "has(self.a)", json!({"a": 1})));
    let rules = compile(with_rule(schema, json!({"rule": "self.a == 1"})));
    assert_eq!(
        messages(&check(&rules, json!({"b": 1}))),
        vec!["spec: Invalid value: \"object\": no such key: a evaluating rule: self.a == 1"]
    );
}

#[test]
fn transition_rules_need_an_old_value() {
    let schema = with_rule(strings(), json!({"rule": "self == oldSelf", "message": "immutable", "reason": "FieldValueForbidden"}));
    let rules = compile(schema);
    assert_eq!(rules.transition_rules(), vec![0]);
    assert_eq!(
        messages(&rules.uncorrelatable_errors("spec.validation.openAPIV3Schema.properties[spec].properties[list]")),
        vec![format!(
            "{AT}[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the \
             schema within spec.validation.openAPIV3Schema.properties[spec].properties[list]"
        )]
    );
    let mut b = Budget::new();
    assert!(rules.check(&json!("a"), None, "spec.name", &mut b).is_empty(), "skipped on create");
    assert!(rules.check(&json!("a"), Some(&json!("a")), "spec.name", &mut b).is_empty());
    assert_eq!(messages(&rules.check(&json!("b"), Some(&json!("a")), "spec.name", &mut b)), vec!["spec.name: Forbidden: immutable"]);
}

#[test]
fn optional_old_self_runs_on_create() {
    let schema = with_rule(
        json!({"type": "integer"}),
        json!({"rule": "oldSelf.hasValue() ? self >= oldSelf.value() : self < 10", "optionalOldSelf": true}),
    );
    let rules = compile(schema);
    let mut b = Budget::new();
    assert!(rules.check(&json!(5), None, "spec.n", &mut b).is_empty());
    assert_eq!(rules.check(&json!(50), None, "spec.n", &mut b).len(), 1, "evaluated on create with oldSelf none");
    assert!(rules.check(&json!(50), Some(&json!(40)), "spec.n", &mut b).is_empty());
    assert_eq!(rules.check(&json!(30), Some(&json!(40)), "spec.n", &mut b).len(), 1);
}

#[test]
fn macros() {
    let s = string_list();
    assert!(eval(s.clone(), "self.all(x, x.size() < 5)", json!(["a", "bb"])));
    assert!(!eval(s.clone(), "self.all(x, x.size() < 2)", json!(["a", "bb"])));
    assert!(eval(s.clone(), "self.exists(x, x == 'bb')", json!(["a", "bb"])));
    assert!(eval(s.clone(), "self.exists_one(x, x == 'a')", json!(["a", "bb", "a2"])));
    assert!(!eval(s.clone(), "self.exists_one(x, x.startsWith('a'))", json!(["a", "bb", "a2"])));
    assert!(eval(s.clone(), "self.map(x, x + '!') == ['a!', 'bb!']", json!(["a", "bb"])));
    assert!(eval(s.clone(), "self.filter(x, x.size() > 1) == ['bb']", json!(["a", "bb"])));
    assert!(eval(s, "size(self) == 2 && self.size() == 2", json!(["a", "bb"])));
}

// ---------------------------------------------------------------------------------------------
// The schemas and objects of Kubernetes' conformance tests (test/e2e/apimachinery/
// crd_validation_rules.go), with the outcomes they require.

fn conformance_spec() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.x + self.y > 0"},
            {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
            {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}
        ],
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "integer"},
            "firstArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
            "secondArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
            "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}
        }
    })
}

#[test]
fn conformance_rules_pass_and_fail() {
    let rules = compile(conformance_spec());
    let ok = json!({"x": 1, "y": 0, "firstArray": [3, 4], "secondArray": [5, 10], "largeArray": [2, 2]});
    assert!(check(&rules, ok).is_empty());
    let errs = check(&rules, json!({"x": 0, "y": 0}));
    assert!(errs.iter().any(|e| e.message.contains("failed rule")), "{errs:?}");
}

#[test]
fn conformance_runtime_cost_limit() {
    let rules = compile(conformance_spec());
    let spec = json!({"largeArray": vec![20; 725]});
    let errs = check(&rules, spec);
    assert!(errs.iter().any(|e| e.message.contains("call cost exceeds limit")), "{errs:?}");
}

#[test]
fn conformance_estimated_cost_limit_with_cardinality() {
    let inner = json!({"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]});
    let outer = json!({"type": "array", "items": inner.clone()});
    let path = "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations";
    let options = CompileOptions { cardinality: cardinality::items(1, &outer), root: false };
    let errs = match Rules::compile_with(&inner, path, options) {
        Err(e) => e,
        Ok(_) => panic!("compiled"),
    };
    assert!(errs[0].message.contains("exceeds budget"), "{}", errs[0].message);
}

#[test]
fn conformance_compile_errors_and_transition() {
    let errs = compile_err(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.z == 100"}],
        "properties": {"x": {"type": "integer"}}}));
    assert!(errs[0].message.contains("undefined field 'z'"));
    let errs = compile_err(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self = 42"}]}));
    assert!(errs[0].message.contains("Syntax error"), "{}", errs[0].message);
    let rules = compile(json!({"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf"}]}));
    let mut b = Budget::new();
    assert!(rules.check(&json!(10), None, "spec.num", &mut b).is_empty());
    let errs = rules.check(&json!(9), Some(&json!(10)), "spec.num", &mut b);
    assert_eq!(messages(&errs), vec!["spec.num: Invalid value: 9: failed rule: self > oldSelf"]);
}

#[test]
fn unchanged_values_are_ratcheted() {
    let schema = json!({"type": "integer", "x-kubernetes-validations": [
        {"rule": "self < 10", "message": "too big"},
        {"rule": "self == oldSelf", "message": "immutable"}
    ]});
    let rules = compile(schema);
    let mut b = Budget::new();
    // Created valid earlier, the limit tightened since: an unchanged value still passes; what
    // it fails is reported apart (kube-apiserver's warnings), transition rules still errors.
    assert!(rules.check(&json!(20), Some(&json!(20)), "spec.n", &mut b).is_empty());
    let mut ratcheted = Vec::new();
    assert!(rules.check_ratcheted(&json!(20), Some(&json!(20)), "spec.n", &mut b, &mut ratcheted).is_empty());
    assert_eq!(messages(&ratcheted), vec!["spec.n: Invalid value: 20: too big"]);
    // Changed, both rules run.
    assert_eq!(
        messages(&rules.check(&json!(21), Some(&json!(20)), "spec.n", &mut b)),
        vec!["spec.n: Invalid value: 21: too big", "spec.n: Invalid value: 21: immutable"]
    );
    // On create nothing is ratcheted.
    assert_eq!(rules.check(&json!(20), None, "spec.n", &mut b).len(), 1);
}

#[test]
fn optional_syntax() {
    let schema = obj(
        json!({"a": {"type": "integer"}, "m": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string", "maxLength": 8}}}),
    );
    assert!(eval(schema.clone(), "self.?a.orValue(5) == 5", json!({})));
    assert!(eval(schema.clone(), "self.?a.orValue(5) == 1", json!({"a": 1})));
    assert!(eval(schema.clone(), "self.m[?'k'].orValue('none') == 'v'", json!({"m": {"k": "v"}})));
    assert!(eval(schema, "!self.?m.hasValue()", json!({})));
}

#[test]
fn member_functions_on_the_wrong_type_are_refused() {
    let schema = obj(json!({"n": {"type": "integer"}, "l": string_list(), "s": strings()}));
    for (rule, want) in [
        ("self.n.startsWith('a')", "found no matching overload for 'startsWith' applied to 'int.(string)'"),
        ("self.s.isSorted()", "found no matching overload for 'isSorted' applied to 'string.()'"),
        ("size(self.n) > 0", "found no matching overload for 'size' applied to '(int)'"),
        ("self.l.lowerAscii() == ''", "found no matching overload for 'lowerAscii' applied to 'list(string).()'"),
    ] {
        let errs = compile_err(with_rule(schema.clone(), json!({"rule": rule})));
        assert!(errs[0].message.contains(want), "{rule}: {}", errs[0].message);
    }
    // Dyn receivers are checked when evaluated.
    compile(with_rule(json!({"x-kubernetes-int-or-string": true}), json!({"rule": "self.startsWith('a')"})));
}

#[test]
fn two_variable_comprehensions() {
    let map = json!({"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string", "maxLength": 16}});
    let value = json!({"a": "x", "b": "yy"});
    assert!(eval(map.clone(), "self.all(k, v, k.size() == 1 && v.size() >= 1)", value.clone()));
    assert!(eval(map.clone(), "self.exists(k, v, k == 'b' && v == 'yy')", value.clone()));
    assert!(eval(map.clone(), "self.existsOne(k, v, v.size() == 2)", value.clone()));
    // (A map's keys have no length bound a schema can state: concatenating them costs the 3 MiB
    // worst case, as in kube-apiserver.)
    assert!(eval(map.clone(), "self.transformList(k, v, v + '!') == ['x!', 'yy!']", value.clone()));
    assert!(eval(map.clone(), "self.transformList(k, v, v.size() > 1, k) == ['b']", value.clone()));
    assert!(eval(map.clone(), "self.transformMap(k, v, v + '!') == {'a': 'x!', 'b': 'yy!'}", value.clone()));
    assert!(eval(map.clone(), "self.transformMap(k, v, k == 'a', v) == {'a': 'x'}", value.clone()));
    assert!(eval(map, "self.transformMapEntry(k, v, {v: k}) == {'x': 'a', 'yy': 'b'}", value));
    let list = string_list();
    assert!(eval(list.clone(), "self.all(i, v, i < 2 && v != '')", json!(["p", "q"])));
    assert!(eval(list.clone(), "self.transformList(i, v, string(i) + v) == ['0p', '1q']", json!(["p", "q"])));
    // The variables shadow outer names, and inner comprehensions rebinding them are respected.
    assert!(eval(list.clone(), "self.all(i, v, ['z'].all(v, v == 'z') && v != 'z')", json!(["p", "q"])));
    // Nested, each sees its own pair; the inner names shadow the outer ones.
    let nested = json!({"type": "array", "maxItems": 4, "items": {"type": "array", "maxItems": 4, "items": {"type": "integer"}}});
    assert!(eval(nested.clone(), "self.all(i, row, row.all(j, x, x == i * 10 + j))", json!([[0, 1], [10, 11]])));
    assert!(eval(nested, "self.all(i, v, v.all(i, v, i < 2 && v >= 0))", json!([[0, 1], [10, 11]])));
    // Undeclared variables in the body are still refused.
    assert!(Rules::compile(&with_rule(list, json!({"rule": "self.all(i, v, w == 1)"})), AT).is_err());
}
