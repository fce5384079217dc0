//! Apply and update on arbitrary JSON never panic, and end only in the outcomes the rules allow.
//!
//! Two schemas: the one of the structured-merge-diff oracle's scenario generator (`gen.py`), fed
//! both schema-shaped values (small pools, so duplicates, shared values and conflicts are
//! frequent) and free-form JSON; and the deduced schema of schemaless objects, fed free-form
//! JSON. Values include nulls, big integers (`i64` and `u64` extremes) and floats equal to ints.
//!
//! For each op of a short history by three managers:
//! - an object that does not validate is still handed to apply/update, which may fail in any
//!   way but must not panic and, as a rejected request, changes nothing;
//! - a validated apply ends in `Ok` or `Err(Conflict)` — never `Err(Invalid)` — and a forced
//!   one in `Ok`; a validated update ends in `Ok`;
//! - after an apply, `changed` agrees with the returned object, the applier's set is exactly its
//!   config's fields (structured-merge-diff records the config's set and only takes fields from
//!   the *other* managers), and the new object still validates;
//! - a conflict names only other managers, on paths they own;
//! - no manager is left with an empty set, and every owned path exists in the object, or runs
//!   into a `null` on the way (a pruned struct someone still owns is kept as `null`);
//! - a validating updater (`Updater::validating`, which validates in the merge's walk) gives
//!   exactly what validating first and then applying or updating gives, errors included, from
//!   any live object (valid or not).

use fieldstore_codec::Path;
use fieldstore_engine::schema::{parse_smd_yaml, Schema, DEDUCED_TYPE};
use fieldstore_engine::{typed, Error, ManagedFields, ManagerKey, TypeRef, Updater};
use proptest::prelude::*;
use serde_json::{json, Map, Number, Value};

/// The schema of `../shared/oracle/smd/gen.py` (root type `root`), as committed with the
/// generated oracle scenarios.
const GEN_SCHEMA: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/smd/random/schema.yaml"));

// ---------------------------------------------------------------------------------------------
// Value strategies

fn object(fields: Vec<(&'static str, Value)>) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())
}

/// Numbers, including the ones that stress equality and hashing: big ints at the `i64`/`u64`
/// limits, floats equal to ints, negative zero, huge floats.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (-2i64..4).prop_map(Value::from),
        1 => Just(json!(i64::MAX)),
        1 => Just(json!(i64::MIN)),
        1 => Just(json!(u64::MAX)),
        2 => Just(json!(2.0)),
        1 => Just(json!(-0.0)),
        1 => Just(json!(0.5)),
        1 => Just(json!(1e300)),
        1 => any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
    ]
}

/// Strings from a tiny pool, so equal values (and duplicates) are frequent.
fn small_string() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["a", "b", "", "x", "TCP", "UDP"]).prop_map(Value::from)
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 1 => any::<bool>().prop_map(Value::from), 3 => number(), 3 => small_string()]
}

/// Keys: the gen.py schema's field names (so free-form values sometimes fit it) and a few others.
const KEYS: [&str; 16] = [
    "name",
    "replicas",
    "spec",
    "labels",
    "selector",
    "containers",
    "ports",
    "port",
    "protocol",
    "finalizers",
    "args",
    "image",
    "template",
    "a",
    "b",
    "",
];

/// Any JSON value, up to a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..4).prop_map(object),
        ]
    })
}

/// A value of a string field: mostly a small string, sometimes null.
fn string_field() -> impl Strategy<Value = Value> {
    prop_oneof![6 => small_string(), 1 => Just(Value::Null)]
}

fn string_map() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop::collection::vec((prop::sample::select(vec!["a", "b", "c"]), string_field()), 0..3).prop_map(object),
        1 => Just(Value::Null),
    ]
}

fn string_list() -> impl Strategy<Value = Value> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(Value::from), 0..4).prop_map(Value::Array)
}

/// Names from a pool of three, so map lists often repeat a key (and then do not validate).
fn item_name() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["a", "b", "c"]).prop_map(Value::from)
}

fn container() -> impl Strategy<Value = Value> {
    let env = prop::collection::vec(
        (item_name(), prop::option::of(string_field())).prop_map(|(n, v)| {
            let mut f = vec![("name", n)];
            f.extend(v.map(|v| ("value", v)));
            object(f)
        }),
        0..3,
    )
    .prop_map(Value::Array);
    let field =
        prop_oneof![string_field().prop_map(|v| ("image", v)), env.prop_map(|v| ("env", v)), string_list().prop_map(|v| ("command", v)),];
    (item_name(), prop::collection::vec(field, 0..3)).prop_map(|(name, mut fields)| {
        fields.insert(0, ("name", name));
        object(fields)
    })
}

fn port() -> impl Strategy<Value = Value> {
    let number = prop::sample::select(vec![json!(80), json!(443), json!(80.0)]);
    let protocol = prop::sample::select(vec!["TCP", "UDP"]).prop_map(Value::from);
    (number, protocol, prop::option::of(string_field())).prop_map(|(p, proto, name)| {
        let mut f = vec![("port", p), ("protocol", proto)];
        f.extend(name.map(|n| ("name", n)));
        object(f)
    })
}

fn spec() -> impl Strategy<Value = Value> {
    let resources = prop::collection::vec((prop::sample::select(vec!["cpu", "memory"]), string_field()), 0..3).prop_map(object);
    let template = prop::collection::vec(
        prop_oneof![
            string_field().prop_map(|v| ("image", v)),
            string_field().prop_map(|v| ("pullPolicy", v)),
            prop_oneof![3 => resources, 1 => Just(Value::Null)].prop_map(|v| ("resources", v)),
        ],
        0..3,
    )
    .prop_map(object);
    let affinity = prop::collection::vec(prop_oneof![string_field().prop_map(|v| ("zone", v)), number().prop_map(|v| ("weight", v))], 0..3)
        .prop_map(object);
    prop_oneof![
        8 => prop::collection::vec(
            prop_oneof![
                string_field().prop_map(|v| ("strategy", v)),
                prop_oneof![4 => template, 1 => Just(Value::Null)].prop_map(|v| ("template", v)),
                prop_oneof![4 => affinity, 1 => Just(Value::Null)].prop_map(|v| ("affinity", v)),
            ],
            0..3,
        )
        .prop_map(object),
        1 => Just(Value::Null),
    ]
}

/// A value shaped like the gen.py root type, mostly valid: map lists with keys from tiny pools
/// (duplicates make some invalid), nulls in places, numbers of every kind.
fn gen_shaped() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        string_field().prop_map(|v| ("name", v)),
        prop_oneof![4 => number(), 1 => Just(Value::Null)].prop_map(|v| ("replicas", v)),
        prop_oneof![any::<bool>().prop_map(Value::from), Just(Value::Null)].prop_map(|v| ("paused", v)),
        spec().prop_map(|v| ("spec", v)),
        string_map().prop_map(|v| ("labels", v)),
        string_map().prop_map(|v| ("selector", v)),
        prop::collection::vec(container(), 0..3).prop_map(|v| ("containers", Value::Array(v))),
        prop::collection::vec(port(), 0..3).prop_map(|v| ("ports", Value::Array(v))),
        string_list().prop_map(|v| ("finalizers", v)),
        string_list().prop_map(|v| ("args", v)),
    ];
    prop::collection::vec(field, 0..5).prop_map(object)
}

/// One op: update (else apply), manager index, force, object.
type Op = (bool, usize, bool, Value);

fn ops(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec((prop::bool::weighted(0.3), 0..3usize, prop::bool::weighted(0.25), values), 2..8)
}

// ---------------------------------------------------------------------------------------------
// The replay and its checks

const MANAGERS: [&str; 3] = ["alice", "bob", "carol"];

/// Whether `path` leads somewhere in `v`, or into a `null` on the way.
fn resolves_or_null(v: &Value, path: &Path) -> bool {
    let elements = path.elements();
    for depth in 0..=elements.len() {
        match fieldstore_engine::value_at(v, &Path(elements[..depth].to_vec())) {
            None => return false,
            Some(Value::Null) => return true,
            Some(_) => {}
        }
    }
    true
}

fn check_managers(live: &Value, managers: &ManagedFields, what: &str) -> Result<(), TestCaseError> {
    for (key, vs) in managers {
        prop_assert!(!vs.set.is_empty(), "{what}: {key} left with an empty set");
        let mut dangling = Vec::new();
        vs.set.iterate(|p| {
            if !resolves_or_null(live, p) {
                dangling.push(p.to_string());
            }
        });
        prop_assert!(dangling.is_empty(), "{what}: {key} owns {dangling:?}, absent from {live}");
    }
    Ok(())
}

/// How the ops of a replay ended, to check that the generators reach every outcome.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    invalid: usize,
    applied: usize,
    applied_changed: usize,
    applied_forced: usize,
    conflicts: usize,
    updated: usize,
}

/// Replays `ops` from `live` (replaced by `{}` when invalid) and checks every outcome.
fn replay(schema: &Schema, root: &TypeRef, live: Value, ops: Vec<Op>) -> Result<Tally, TestCaseError> {
    let mut tally = Tally::default();
    let u = Updater::new(schema, root);
    let mut live = if u.validate(&live).is_ok() { live } else { json!({}) };
    let mut managers = ManagedFields::new();
    for (i, (is_update, m, force, object)) in ops.into_iter().enumerate() {
        agree(&u, &live, &managers, MANAGERS[m], is_update, force, &object)?;
        let valid = u.validate(&object).is_ok();
        tally.invalid += usize::from(!valid);
        let what = format!(
            "op {i} ({}{} by {}) of {object}",
            if is_update { "update" } else { "apply" },
            if force { ", forced" } else { "" },
            MANAGERS[m]
        );
        if is_update {
            let key = ManagerKey::update(MANAGERS[m], "v1");
            let r = u.update(&live, &object, "v1", managers.clone(), &key);
            if !valid {
                // A rejected request: whatever the result (no panic is the point), no state change.
                continue;
            }
            match r {
                Ok(m) => {
                    tally.updated += 1;
                    live = object;
                    managers = m;
                }
                Err(e) => return Err(TestCaseError::fail(format!("{what}: a validated update failed: {e}"))),
            }
        } else {
            let key = ManagerKey::apply(MANAGERS[m]);
            let r = u.apply(&live, &object, "v1", managers.clone(), &key, force);
            if !valid {
                continue;
            }
            match r {
                Ok(a) => {
                    tally.applied += 1;
                    tally.applied_changed += usize::from(a.changed);
                    tally.applied_forced += usize::from(force);
                    prop_assert_eq!(a.changed, a.object.is_some(), "{}: changed disagrees with the object", what);
                    let want = typed::to_field_set(schema, root, &object).expect("a validated config has a field set");
                    match a.managers.get(&key) {
                        Some(vs) => prop_assert_eq!(&vs.set, &want, "{}: the applier's set is not its config's", what),
                        None => prop_assert!(want.is_empty(), "{what}: the applier's entry is gone"),
                    }
                    if let Some(o) = a.object {
                        live = o;
                    }
                    managers = a.managers;
                    if let Err(e) = u.validate(&live) {
                        return Err(TestCaseError::fail(format!("{what}: the applied object {live} does not validate: {e}")));
                    }
                }
                Err(Error::Conflict(c)) => {
                    tally.conflicts += 1;
                    prop_assert!(!force, "{what}: a forced apply conflicted: {c}");
                    prop_assert!(!c.is_empty(), "{what}: a conflict error without conflicts");
                    for c in &c.0 {
                        prop_assert!(c.manager != key, "{what}: conflict with the applier itself");
                        let owns = managers.get(&c.manager).is_some_and(|vs| vs.set.has(&c.path));
                        prop_assert!(owns, "{what}: conflict on {} which {} does not own", c.path, c.manager);
                    }
                }
                Err(e) => return Err(TestCaseError::fail(format!("{what}: a validated apply failed: {e}"))),
            }
        }
        check_managers(&live, &managers, &what)?;
    }
    Ok(tally)
}

/// A validating updater's apply or update gives what validating first and then applying or
/// updating gives: the same error (the validation's, when the object does not conform) or the
/// same result; and so does an apply of a config given up to it (`apply_owned`).
fn agree(
    u: &Updater<'_>,
    live: &Value,
    managers: &ManagedFields,
    manager: &str,
    is_update: bool,
    force: bool,
    object: &Value,
) -> Result<(), TestCaseError> {
    let v = u.validating();
    let (fused, separate) = if is_update {
        let key = ManagerKey::update(manager, "v1");
        let run = |u: &Updater<'_>| u.update(live, object, "v1", managers.clone(), &key).map(|m| format!("{m:?}"));
        (run(&v), u.validate(object).and_then(|()| run(u)))
    } else {
        let key = ManagerKey::apply(manager);
        let run = |u: &Updater<'_>| u.apply(live, object, "v1", managers.clone(), &key, force).map(|a| format!("{a:?}"));
        // An owned config is moved into the object instead of copied: the result is the same.
        let owned = |u: &Updater<'_>| u.apply_owned(live, object.clone(), "v1", managers.clone(), &key, force).map(|a| format!("{a:?}"));
        let separate = one_zero(format!("{:?}", u.validate(object).and_then(|()| run(u))));
        let what = format!("apply of {object} to {live}");
        prop_assert_eq!(&one_zero(format!("{:?}", owned(&v))), &separate, "{}: owned config, validating updater", what);
        prop_assert_eq!(&one_zero(format!("{:?}", u.validate(object).and_then(|()| owned(u)))), &separate, "{}: owned config", what);
        (run(&v), u.validate(object).and_then(|()| run(u)))
    };
    let (fused, separate) = (one_zero(format!("{fused:?}")), one_zero(format!("{separate:?}")));
    prop_assert_eq!(fused, separate, "{} of {} to {}", if is_update { "update" } else { "apply" }, object, live);
    Ok(())
}

/// A result's text with every zero unsigned. A config scalar numerically equal to the live one
/// (`0.0` over `-0.0`) leaves the field unchanged, so which of the two zeros the result holds is
/// not a difference: an apply that copies the config keeps the live `-0.0`, one that moves the
/// config in (`apply_owned`) holds the config's `0.0` (proptest found this; found again by a
/// clean-clone CI run in session 12).
fn one_zero(text: String) -> String {
    text.replace("Number(-0.0)", "Number(0.0)")
}

fn gen_schema() -> (Schema, TypeRef) {
    let s = parse_smd_yaml(GEN_SCHEMA).expect("gen.py schema parses");
    let root = s.named("root").expect("root type");
    (s, root)
}

fn deduced_schema() -> (Schema, TypeRef) {
    let s = Schema::deduced();
    let root = s.named(DEDUCED_TYPE).expect("deduced root type");
    (s, root)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn gen_schema_shaped_histories_follow_the_rules(live in gen_shaped(), ops in ops(prop_oneof![6 => gen_shaped(), 1 => any_json()])) {
        let (s, root) = gen_schema();
        replay(&s, &root, live, ops)?;
    }

    #[test]
    fn gen_schema_free_form_json_never_panics(live in any_json(), ops in ops(any_json())) {
        let (s, root) = gen_schema();
        replay(&s, &root, live, ops)?;
    }

    #[test]
    fn validating_updater_agrees_with_validating_first_from_any_live_object(
        live in prop_oneof![gen_shaped(), any_json()],
        object in prop_oneof![3 => gen_shaped(), 1 => any_json()],
        is_update: bool,
        force: bool,
    ) {
        let (s, root) = gen_schema();
        let u = Updater::new(&s, &root);
        agree(&u, &live, &ManagedFields::new(), "a", is_update, force, &object)?;
        // And over the live object's owners, when it has some.
        if let Ok(a) = u.apply(&json!({}), &live, "v1", ManagedFields::new(), &ManagerKey::apply("b"), false) {
            agree(&u, &live, &a.managers, "a", is_update, force, &object)?;
        }
    }

    #[test]
    fn deduced_schema_histories_follow_the_rules(live in any_json(), ops in ops(prop_oneof![any_json(), gen_shaped()])) {
        let (s, root) = deduced_schema();
        replay(&s, &root, live, ops)?;
    }
}

/// The properties above only mean something if the generated histories reach every outcome:
/// validated applies that change the object, forced ones, conflicts, updates, and rejected
/// objects. Counted over 256 deterministic histories per schema.
#[test]
fn the_generated_histories_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// A schema's name, the schema and its root, and the histories fed to it.
    type Case = (&'static str, (Schema, TypeRef), BoxedStrategy<(Value, Vec<Op>)>);
    let cases: [Case; 2] = [
        ("gen.py", gen_schema(), (gen_shaped(), ops(prop_oneof![6 => gen_shaped(), 1 => any_json()])).boxed()),
        ("deduced", deduced_schema(), (any_json(), ops(prop_oneof![any_json(), gen_shaped()])).boxed()),
    ];
    for (name, (schema, root), strategy) in cases {
        let mut runner = TestRunner::deterministic();
        let mut total = Tally::default();
        for _ in 0..256 {
            let (live, ops) = strategy.new_tree(&mut runner).expect("a value").current();
            let t = replay(&schema, &root, live, ops).unwrap_or_else(|e| panic!("{name}: {e}"));
            total.invalid += t.invalid;
            total.applied += t.applied;
            total.applied_changed += t.applied_changed;
            total.applied_forced += t.applied_forced;
            total.conflicts += t.conflicts;
            total.updated += t.updated;
        }
        eprintln!("{name}: {total:?}");
        let Tally { invalid, applied, applied_changed, applied_forced, conflicts, updated } = total;
        // The deduced schema accepts every JSON value.
        assert!(name == "deduced" || invalid >= 50, "{name}: {total:?}");
        assert!(applied >= 100 && applied_changed >= 50 && applied_forced >= 20 && conflicts >= 20 && updated >= 50, "{name}: {total:?}");
    }
}
