//! JSON and YAML documents (`fieldstore_codec::document`): arbitrary bytes must not panic, nor take
//! time beyond linear in their size (libFuzzer's `-timeout` catches a quadratic parse); whatever
//! parses is nested no deeper than the limit, and as JSON text parses again to the same value.
#![no_main]

use fieldstore_codec::document::{parse, parse_stream, Syntax};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const MAX_DEPTH: usize = 20;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    for syntax in [Syntax::Json, Syntax::Yaml] {
        let Ok(doc) = parse(data, syntax, MAX_DEPTH) else { continue };
        assert!(depth(&doc.value) <= MAX_DEPTH, "parsed deeper than the limit");
        let text = serde_json::to_vec(&doc.value).expect("a parsed value serialises");
        let again = parse(&text, Syntax::Json, MAX_DEPTH).expect("its JSON parses again");
        assert_eq!(again.value, doc.value, "JSON round trip changed the value");
        assert!(again.duplicates.is_empty());
    }
    if let Ok(docs) = parse_stream(data, MAX_DEPTH) {
        assert!(docs.iter().all(|d| depth(&d.value) <= MAX_DEPTH));
    }
});
