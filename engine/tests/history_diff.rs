//! History's difference of two versions (`history::diff`) walks only where they differ and
//! compares the changed subtrees; `history::diff_whole` compares the whole versions once. They
//! must give the same changes, in the same order, and the same undo, for any two versions. The
//! versions here are the upstream fixture objects of the built-in kinds (`tests/fixtures/k8s-api`,
//! with the built-in schema) and a small schema with every kind of list, changed at random:
//! leaves changed, entries and items added, removed, duplicated and reordered, values of another
//! kind put in.

use fieldstore_engine::history::{diff, diff_tracked, diff_whole, Diff};
use fieldstore_engine::schema::{builtin, parse_smd_yaml, Schema, TypeRef};
use serde_json::{json, Value};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every position in `v` below the root.
fn positions(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                here.push(Step::Key(k.clone()));
                out.push(here.clone());
                positions(c, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                here.push(Step::Index(i));
                out.push(here.clone());
                positions(c, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'v>(v: &'v mut Value, steps: &[Step]) -> &'v mut Value {
    steps.iter().fold(v, |cur, s| match s {
        Step::Key(k) => &mut cur[k.as_str()],
        Step::Index(i) => &mut cur[*i],
    })
}

/// One random change somewhere in `v`.
fn mutate(v: &mut Value, rng: &mut Rng) {
    let mut all = Vec::new();
    positions(v, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let steps = all[rng.below(all.len())].clone();
    let (last, parent) = steps.split_last().expect("below the root");
    let op = rng.below(8);
    let target = at_mut(v, &steps);
    match op {
        // A leaf's value changed (or a container's content, for containers).
        0 | 1 => match target {
            Value::String(s) => s.push('x'),
            // The same number written as a float: equal as values, not as JSON.
            Value::Number(n) if op == 0 => *target = json!(n.as_f64().unwrap_or(0.0)),
            Value::Number(n) => *target = json!(n.as_f64().unwrap_or(0.0) + 1.0),
            Value::Bool(b) => *b = !*b,
            Value::Null => *target = json!("was-null"),
            Value::Array(items) => items.reverse(),
            Value::Object(m) => {
                m.insert(format!("added{}", rng.below(3)), json!("new"));
            }
        },
        // A value of another kind.
        2 => {
            *target = match rng.below(6) {
                0 => json!({}),
                1 => json!([]),
                2 => Value::Null,
                3 => json!(7),
                4 => json!("text"),
                _ => json!({"a": 1}),
            }
        }
        _ => {
            let parent = at_mut(v, parent);
            match (parent, last) {
                // An entry removed or added.
                (Value::Object(m), Step::Key(k)) if op < 6 => {
                    if op == 3 {
                        m.remove(k);
                    } else {
                        let copy = m[k.as_str()].clone();
                        m.insert(format!("{k}{}", rng.below(2)), copy);
                    }
                }
                // A list item removed, duplicated, changed copy inserted, or the list rotated.
                (Value::Array(items), Step::Index(i)) => match op {
                    3 => {
                        items.remove(*i);
                    }
                    4 => {
                        let copy = items[*i].clone();
                        items.insert(rng.below(items.len() + 1), copy);
                    }
                    5 => {
                        let mut copy = items[*i].clone();
                        mutate(&mut copy, rng);
                        items.push(copy);
                    }
                    _ => items.rotate_left(1),
                },
                (Value::Object(m), Step::Key(k)) => {
                    m.remove(k);
                }
                _ => {}
            }
        }
    }
}

/// `v` carrying what history does not track: managedFields and a resourceVersion (when its
/// metadata is a map).
fn with_untracked(v: &Value, rv: &str) -> Value {
    let mut v = v.clone();
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        m.insert("resourceVersion".into(), json!(rv));
        m.insert("managedFields".into(), json!([{"manager": format!("m{rv}"), "operation": "Update", "fieldsV1": {"f:x": {}}}]));
    }
    v
}

/// Whether the differences agree (errors count as agreeing with errors): narrowed, whole, and
/// narrowed past managedFields and resourceVersion (which it leaves as they were).
fn check(schema: &Schema, tr: &TypeRef, b: &Value, a: &Value, what: &str) -> Option<Diff> {
    let fast = diff(schema, tr, Some(b), Some(a), 64);
    let whole = diff_whole(schema, tr, Some(b), Some(a), 64);
    let (mut bt, mut at) = (with_untracked(b, "1"), with_untracked(a, "2"));
    let tracked = diff_tracked(schema, tr, &mut bt, &mut at, 64);
    assert_eq!((bt, at), (with_untracked(b, "1"), with_untracked(a, "2")), "{what}: versions restored");
    match (&fast, &tracked) {
        (Ok(f), Ok(t)) => assert_eq!(f, t, "{what}: past managedFields\nbefore: {b}\nafter: {a}"),
        (Err(_), Err(_)) => {}
        (f, t) => panic!("{what}: one failed\nnarrowed: {f:?}\npast managedFields: {t:?}\nbefore: {b}\nafter: {a}"),
    }
    match (fast, whole) {
        (Ok(f), Ok(w)) => {
            assert_eq!(f, w, "{what}\nbefore: {b}\nafter: {a}");
            Some(f)
        }
        (Err(_), Err(_)) => None,
        (f, w) => panic!("{what}: one failed\nnarrowed: {f:?}\nwhole: {w:?}\nbefore: {b}\nafter: {a}"),
    }
}

/// Random pairs derived from `base`: the agreeing differences with changes, and those with
/// an undo.
fn pairs(schema: &Schema, tr: &TypeRef, base: &Value, rounds: usize, seed: u64, what: &str) -> (usize, usize) {
    let mut rng = Rng(seed | 1);
    let (mut changed, mut undone) = (0, 0);
    for round in 0..rounds {
        let mut b = base.clone();
        for _ in 0..rng.below(3) {
            mutate(&mut b, &mut rng);
        }
        let mut a = b.clone();
        for _ in 0..=rng.below(4) {
            mutate(&mut a, &mut rng);
        }
        for (x, y) in [(&b, &a), (&a, &b)] {
            if let Some(d) = check(schema, tr, x, y, &format!("{what}, round {round}")) {
                changed += usize::from(!d.changes.is_empty());
                undone += usize::from(d.undo.is_some() && !d.changes.is_empty());
            }
        }
    }
    (changed, undone)
}

#[test]
fn narrowed_and_whole_differences_agree_on_the_builtin_fixtures() {
    let dir = format!("{}/tests/fixtures/k8s-api", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixture directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    let schema = builtin::schema();
    let (mut kinds, mut changed, mut undone) = (0, 0, 0);
    for (i, name) in names.iter().enumerate() {
        let stem = name.trim_end_matches(".json");
        let (rest, kind) = stem.rsplit_once('.').expect("kind");
        let (group, version) = rest.rsplit_once('.').expect("version");
        let group = if group == "core" { "" } else { group };
        let Some(tr) = builtin::type_ref(group, version, kind) else { continue };
        let mut obj: Value = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{name}")).expect("fixture")).expect("JSON");
        if let Some(Value::Object(m)) = obj.get_mut("metadata") {
            m.remove("managedFields");
            m.remove("resourceVersion");
        }
        let (c, u) = pairs(schema, &tr, &obj, 150, 0x9e37_79b9 + i as u64, name);
        kinds += 1;
        changed += c;
        undone += u;
    }
    eprintln!("fixtures: {kinds} kinds, {changed} differences with changes, {undone} with an undo");
    assert!(kinds >= 50, "{kinds} kinds");
    // Most pairs differ and conform; many have an exact undo.
    assert!(changed > kinds * 150, "{changed} differences with changes");
    assert!(undone > kinds * 50, "{undone} with an undo");
}

#[test]
fn narrowed_and_whole_differences_agree_on_every_kind_of_list() {
    let schema = parse_smd_yaml(
        r#"
types:
- name: obj
  map:
    fields:
    - {name: spec, type: {namedType: spec}}
    - {name: meta, type: {map: {elementType: {scalar: string}}}}
    - {name: free, type: {namedType: __untyped_deduced_}}
    - {name: atom, type: {map: {elementType: {scalar: numeric}, elementRelationship: atomic}}}
- name: spec
  map:
    fields:
    - {name: replicas, type: {scalar: numeric}}
    - {name: tags, type: {list: {elementType: {scalar: string}, elementRelationship: associative}}}
    - {name: args, type: {list: {elementType: {scalar: string}, elementRelationship: atomic}}}
    - {name: plain, type: {list: {elementType: {namedType: port}, elementRelationship: separable}}}
    - {name: ports, type: {list: {elementType: {namedType: port}, elementRelationship: associative, keys: [port, proto]}}}
    - {name: inner, type: {namedType: spec}}
- name: port
  map:
    fields:
    - {name: port, type: {scalar: numeric}}
    - {name: proto, type: {scalar: string}, default: TCP}
    - {name: name, type: {scalar: string}}
    - {name: sub, type: {map: {elementType: {scalar: string}}}}
- name: __untyped_atomic_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
- name: __untyped_deduced_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_deduced_}, elementRelationship: separable}
"#,
    )
    .expect("schema");
    let tr = schema.named("obj").expect("obj");
    let spec = json!({"replicas": 3, "tags": ["a", "b", "c"], "args": ["x", "y"],
        "plain": [{"port": 1, "name": "one"}, {"port": 2}],
        "ports": [{"port": 80, "name": "http", "sub": {"k": "v"}}, {"port": 80, "proto": "UDP"}, {"port": 443, "name": "https"}]});
    let base = json!({"spec": {"replicas": 1, "tags": ["q"], "inner": spec, "ports": [{"port": 8080}]},
        "meta": {"a": "1", "b": "2", "c": "3"}, "free": {"x": {"y": [1, 2], "z": "s"}, "w": 5}, "atom": {"n": 1, "m": 2}});
    let (changed, undone) = pairs(&schema, &tr, &base, 4000, 0x5eed, "small schema");
    eprintln!("small schema: {changed} of 8000 differences with changes, {undone} with an undo");
    assert!(changed > 3000, "{changed} differences with changes");
    assert!(undone > 1500, "{undone} with an undo");
}
