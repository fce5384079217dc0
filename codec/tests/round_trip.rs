//! Property tests of the two FieldsV1 forms: random sets survive JSON and binary round trips, and
//! the JSON form is byte-stable (JSON → set → JSON gives the same bytes).

use fieldstore_codec::{fields_binary, fields_v1, Error, Path, PathElement, Set};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Strings that exercise Go's JSON escaping (`<>&`, quotes, controls, U+2028) and non-ASCII.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["a", "b", "name", "image", ""]).prop_map(str::to_string),
        1 => "[a-z<>&\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}\u{2029}é世😀 .:/{}]{0,8}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..3).prop_map(Value::from),
        Just(json!(1.0)),
        Just(json!(-0.0)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(1e21)),
        Just(json!(1e-7)),
        Just(json!(123456.789)),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        prop::num::f64::SUBNORMAL.prop_map(Value::from),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number(), text().prop_map(Value::String),]
}

/// Values as found in keys and set-list items, nested lists and maps included.
fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn element() -> impl Strategy<Value = PathElement> {
    prop_oneof![
        4 => text().prop_map(PathElement::field),
        2 => prop::collection::btree_map(text(), value(), 0..3)
            .prop_map(|m| PathElement::key(m.into_iter().map(|(k, v)| (k.into(), v)).collect())),
        1 => value().prop_map(PathElement::Value),
        1 => any::<i64>().prop_map(PathElement::Index),
        1 => (0i64..4).prop_map(PathElement::Index),
    ]
}

fn set() -> impl Strategy<Value = Set> {
    let path = prop::collection::vec(element(), 1..6).prop_map(Path);
    // Extending earlier paths makes members that are also prefixes (`".":{}`) common.
    (prop::collection::vec(path, 0..12), prop::collection::vec((any::<prop::sample::Index>(), element()), 0..8)).prop_map(
        |(mut paths, extensions)| {
            for (i, pe) in extensions {
                if !paths.is_empty() {
                    let p = paths[i.index(paths.len())].child(pe);
                    paths.push(p);
                }
            }
            Set::from_paths(&paths)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_is_byte_stable(s in set()) {
        let json = fields_v1::to_json_string(&s);
        let back = fields_v1::from_json(json.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
        prop_assert_eq!(fields_v1::to_json_string(&back), json);
    }

    #[test]
    fn set_json_set_is_equal(s in set()) {
        let json = fields_v1::to_json(&s);
        let back = fields_v1::from_json(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, s, "via {}", String::from_utf8_lossy(&json));
    }

    #[test]
    fn set_binary_set_is_equal(s in set()) {
        let bytes = fields_binary::encode(&s);
        let back = fields_binary::decode(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &s);
        prop_assert_eq!(fields_binary::encode(&back), bytes, "binary re-encoding is not a fixed point");
    }

    #[test]
    fn damaged_binary_is_an_error_or_a_valid_set(s in set(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4), cut in any::<prop::sample::Index>()) {
        let mut bytes = fields_binary::encode(&s);
        for (i, b) in edits {
            let i = i.index(bytes.len());
            bytes[i] = b;
        }
        bytes.truncate(cut.index(bytes.len() + 1).max(1));
        match fields_binary::decode(&bytes) {
            Ok(got) => prop_assert_eq!(fields_binary::decode(&fields_binary::encode(&got)).ok(), Some(got)),
            Err(e) => prop_assert!(matches!(e, Error::FieldsBinary { offset, .. } if offset <= bytes.len()), "{e}"),
        }
    }
}

#[test]
fn members_that_are_also_prefixes_survive_both_forms() {
    let json = br#"{"f:spec":{".":{},"f:items":{".":{},"k:{\"name\":\"a\"}":{".":{},"f:image":{}}}}}"#;
    let set = fields_v1::from_json(json).unwrap();
    assert!(set.has(&Path::fields(["spec"])) && set.has(&Path::fields(["spec", "items"])));
    assert_eq!(fields_v1::to_json(&set), json);
    assert_eq!(fields_binary::decode(&fields_binary::encode(&set)).unwrap(), set);
}
