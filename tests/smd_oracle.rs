//! Differential test against structured-merge-diff: every committed oracle scenario under
//! `tests/fixtures/smd/` is replayed by fieldstore and its output compared with the oracle's
//! recorded output, op by op: success or failure, the resulting object (as a JSON value),
//! `changed`, every managedFields entry with its FieldsV1 **byte for byte**, and conflicts as
//! sets of (manager, operation, path). Error texts are not compared, only that both failed.

use fieldstore::codec::value;
use fieldstore::engine::replay::replay;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smd")
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default)]
    fatal: Option<String>,
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    changed: Option<bool>,
    #[serde(default)]
    object: Option<Value>,
    #[serde(default, borrow, rename = "managedFields")]
    managed_fields: Option<Vec<Entry<'a>>>,
    #[serde(default)]
    conflicts: Option<Vec<ConflictOut>>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Entry<'a> {
    manager: String,
    operation: String,
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(borrow, rename = "fieldsV1")]
    fields_v1: &'a RawValue,
}

#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct ConflictOut {
    manager: String,
    #[serde(default)]
    operation: String,
    path: String,
}

/// JSON equality as the oracle's compare.py sees it: numbers by value, objects unordered.
fn json_equal(a: &Value, b: &Value) -> bool {
    value::equals(a, b)
}

fn entries<'a>(l: &Line<'a>) -> BTreeMap<(String, String, String), &'a str> {
    l.managed_fields
        .iter()
        .flatten()
        .map(|e| ((e.manager.clone(), e.operation.clone(), e.api_version.clone()), e.fields_v1.get()))
        .collect()
}

/// The first difference between the oracle's line and ours, if any.
fn differ(i: usize, want: &Line<'_>, got: &Line<'_>) -> Option<String> {
    if want.fatal.is_some() || got.fatal.is_some() {
        return (want.fatal.is_some() != got.fatal.is_some()).then(|| format!("op {i}: fatal on one side only"));
    }
    if want.ok != got.ok {
        return Some(format!("op {i}: ok {} vs {} (ours: error {:?}, conflicts {:?})", want.ok, got.ok, got.error, got.conflicts));
    }
    if want.ok {
        let (wo, go) = (want.object.as_ref().unwrap_or(&Value::Null), got.object.as_ref().unwrap_or(&Value::Null));
        if !json_equal(wo, go) {
            return Some(format!("op {i}: object differs\n want {wo}\n got  {go}"));
        }
        if want.changed.is_some() && want.changed != got.changed {
            return Some(format!("op {i}: changed {:?} vs {:?}", want.changed, got.changed));
        }
        let (we, ge) = (entries(want), entries(got));
        if we != ge {
            return Some(format!("op {i}: managedFields differ\n want {we:?}\n got  {ge:?}"));
        }
        return None;
    }
    if want.conflicts.is_some() || got.conflicts.is_some() {
        let mut w: Vec<&ConflictOut> = want.conflicts.iter().flatten().collect();
        let mut g: Vec<&ConflictOut> = got.conflicts.iter().flatten().collect();
        w.sort();
        g.sort();
        return (w != g).then(|| format!("op {i}: conflicts differ\n want {w:?}\n got  {g:?}"));
    }
    got.error.is_none().then(|| format!("op {i}: oracle reports error {:?}, fieldstore none", want.error))
}

/// Replays one scenario (with `schema` inserted when stored apart) and compares.
fn check(scenario: &Path, schema: Option<&str>) -> Result<usize, String> {
    let text = fs::read_to_string(scenario).map_err(|e| e.to_string())?;
    let input = match schema {
        Some(s) => {
            let mut v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            v["schema"] = Value::String(s.to_string());
            v.to_string()
        }
        None => text,
    };
    let want_text = fs::read_to_string(scenario.with_extension("out.jsonl")).map_err(|e| e.to_string())?;
    let got_lines = match replay(&input) {
        Ok(lines) => lines,
        Err(f) => vec![serde_json::json!({ "fatal": f.0 }).to_string()],
    };
    let want_lines: Vec<&str> = want_text.lines().filter(|l| !l.trim().is_empty()).collect();
    if want_lines.len() != got_lines.len() {
        return Err(format!("{} oracle results vs {} fieldstore results", want_lines.len(), got_lines.len()));
    }
    for (i, (w, g)) in want_lines.iter().zip(&got_lines).enumerate() {
        let w: Line<'_> = serde_json::from_str(w).map_err(|e| format!("oracle line {i}: {e}"))?;
        let g: Line<'_> = serde_json::from_str(g).map_err(|e| format!("our line {i}: {e}"))?;
        if let Some(d) = differ(i, &w, &g) {
            return Err(d);
        }
    }
    Ok(want_lines.len())
}

fn scenarios(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn run_dir(name: &str, schema_file: Option<&str>, at_least: usize) {
    let dir = fixtures().join(name);
    let schema = schema_file.map(|f| fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")));
    let all = scenarios(&dir);
    assert!(all.len() >= at_least, "{name}: expected at least {at_least} scenarios, found {}", all.len());
    let mut failures = Vec::new();
    let mut ops = 0;
    for s in &all {
        match check(s, schema.as_deref()) {
            Ok(n) => ops += n,
            Err(e) => failures.push(format!("{}: {e}", s.display())),
        }
    }
    println!("smd oracle {name}: {} passed, {} failed ({ops} ops agreed)", all.len() - failures.len(), failures.len());
    assert!(failures.is_empty(), "{} of {} scenarios disagree with the oracle; first:\n{}", failures.len(), all.len(), failures[0]);
}

#[test]
fn generated_scenarios_agree_with_the_oracle() {
    run_dir("random", Some("schema.yaml"), 500);
}

#[test]
fn pinned_behaviour_cases_agree_with_the_oracle() {
    run_dir("cases", None, 17);
}

#[test]
fn extra_schema_scenarios_agree_with_the_oracle() {
    run_dir("extra", None, 20);
}

#[test]
fn oracle_examples_agree_with_the_oracle() {
    run_dir("examples", None, 3);
}
