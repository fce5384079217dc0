//! FieldsV1 bytes as Kubernetes' structured-merge-diff wrote them
//! (`tests/fixtures/fields_v1/golden.jsonl`, one document per line) must decode and re-encode to
//! exactly the same bytes, and survive the binary form unchanged.

use fieldstore_codec::{fields_binary, fields_v1};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/fields_v1/golden.jsonl");

/// Fewer documents than this means the fixture was truncated or not generated.
const MIN_LINES: usize = 100;

fn golden_lines() -> Vec<String> {
    let text =
        std::fs::read_to_string(GOLDEN).unwrap_or_else(|e| panic!("cannot read {GOLDEN}: {e} (generate it with tests/fixtures/regen.sh)"));
    let lines: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    assert!(lines.len() >= MIN_LINES, "{GOLDEN} has {} documents, expected at least {MIN_LINES}", lines.len());
    lines
}

#[test]
fn json_round_trip_is_byte_identical() {
    let mut failures = Vec::new();
    for (n, line) in golden_lines().iter().enumerate() {
        match fields_v1::from_json(line.as_bytes()) {
            Ok(set) => {
                let again = fields_v1::to_json_string(&set);
                if again != *line {
                    failures.push(format!("line {}:\n  want {line}\n  got  {again}", n + 1));
                }
                let parsed: serde_json::Value = serde_json::from_str(line).expect("golden lines are JSON");
                if fields_v1::to_value(&set) != parsed {
                    failures.push(format!("line {}: to_value differs from the parsed text", n + 1));
                }
                let mut written = Vec::new();
                fields_v1::write_value_json(&set, &mut written);
                if written != serde_json::to_vec(&parsed).expect("a value serialises") {
                    failures.push(format!("line {}: write_value_json differs from serde_json's text of the value", n + 1));
                }
            }
            Err(e) => failures.push(format!("line {}: {e}\n  {line}", n + 1)),
        }
    }
    assert!(failures.is_empty(), "{} golden documents do not round-trip:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn binary_round_trip_is_equal_and_smaller() {
    let (mut json_bytes, mut binary_bytes) = (0usize, 0usize);
    for (n, line) in golden_lines().iter().enumerate() {
        let set = fields_v1::from_json(line.as_bytes()).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let bytes = fields_binary::encode(&set);
        let back = fields_binary::decode(&bytes).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        assert_eq!(back, set, "line {}: binary round trip changed the set", n + 1);
        assert_eq!(fields_v1::to_json_string(&back), fields_v1::to_json_string(&set), "line {}", n + 1);
        json_bytes += line.len();
        binary_bytes += bytes.len();
    }
    println!("golden: JSON {json_bytes} bytes, binary {binary_bytes} bytes");
    // Real managedFields are small sets; the string table still pays off across a document.
    assert!(binary_bytes * 2 < json_bytes, "binary {binary_bytes} bytes vs JSON {json_bytes} bytes");
}
