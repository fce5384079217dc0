//! Server-Side Apply on arbitrary JSON: a short history of applies and updates by two or three
//! managers must never panic, and every validated op must end in one of the outcomes the rules
//! allow.
//!
//! Input layout (so that seeds can be written by hand or converted from `gen.py` scenarios):
//!
//! - byte 0, flags: bit 0 picks the schema (0: the `gen.py` schema, 1: the deduced schema of
//!   schemaless objects); bit 1 gives three managers instead of two;
//! - the rest, split on `\0` (a byte no JSON text contains), is up to four ops; each op is one
//!   control byte then a JSON document: bit 0 update (else apply), bits 1–2 the manager, bit 3
//!   force.
//!
//! Ops whose document is not JSON or does not validate are skipped, like a rejected request,
//! once a validating updater (`Updater::validating`) has rejected the document alike.
//! Every apply is also made with the config given up (`Updater::apply_owned`), which must give
//! the same outcome.
//! Checked after every op: an apply of a validated config ends in `Ok` or `Err(Conflict)` (never
//! a conflict when forced); `changed` agrees with the returned object; the applier's set is
//! exactly its config's fields (or absent when that is empty) and the new object still
//! validates; an update ends in `Ok`; no manager is left with an empty set, and every owned path
//! exists in the object or runs into a `null` on the way (a pruned struct someone still owns is
//! kept as `null`; this holds for structured-merge-diff on all of gen.py's scenarios).
#![no_main]

use fieldstore_codec::Path;
use fieldstore_engine::schema::{parse_smd_yaml, Schema, DEDUCED_TYPE};
use fieldstore_engine::{typed, Error, ManagedFields, ManagerKey, TypeRef, Updater};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

/// The schema of `../shared/oracle/smd/gen.py` (root type `root`), as committed with the
/// generated oracle scenarios.
const GEN_SCHEMA: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/smd/random/schema.yaml"));

struct Schemas {
    gen: (Schema, TypeRef),
    deduced: (Schema, TypeRef),
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let gen = parse_smd_yaml(GEN_SCHEMA).expect("gen.py schema parses");
        let gen_root = gen.named("root").expect("root type");
        let deduced = Schema::deduced();
        let deduced_root = deduced.named(DEDUCED_TYPE).expect("deduced root type");
        Schemas {
            gen: (gen, gen_root),
            deduced: (deduced, deduced_root),
        }
    })
}

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

fn check_managers(live: &Value, managers: &ManagedFields) {
    for (key, vs) in managers {
        assert!(!vs.set.is_empty(), "{key} left with an empty set");
        vs.set.iterate(|p| {
            assert!(
                resolves_or_null(live, p),
                "{key} owns {p}, absent from {live}"
            )
        });
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (schema, root) = if flags & 1 == 0 {
        &schemas().gen
    } else {
        &schemas().deduced
    };
    let n_managers = if flags & 2 == 0 { 2 } else { 3 };
    let updater = Updater::new(schema, root);

    let mut live = Value::Object(Default::default());
    let mut managers = ManagedFields::new();
    for chunk in rest.split(|&b| b == 0).take(4) {
        let Some((&ctrl, doc)) = chunk.split_first() else {
            continue;
        };
        let Ok(object) = serde_json::from_slice::<Value>(doc) else {
            continue;
        };
        if let Err(e) = updater.validate(&object) {
            // A validating updater, which validates in its merge's walk, rejects it alike.
            let key = ManagerKey::apply("fuzzer");
            let fused = updater.validating().apply(&live, &object, "v1", managers.clone(), &key, false);
            assert_eq!(format!("{:?}", fused.err()), format!("{:?}", Some(&e)), "validating apply of {object}");
            let owned = updater.validating().apply_owned(&live, object.clone(), "v1", managers.clone(), &key, false);
            assert_eq!(format!("{:?}", owned.err()), format!("{:?}", Some(&e)), "validating apply_owned of {object}");
            let fused = updater.validating().update(&live, &object, "v1", managers.clone(), &ManagerKey::update("fuzzer", "v1"));
            assert!(matches!(fused, Err(Error::Invalid(_))), "validating update of {object}: {fused:?}");
            continue;
        }
        let name = MANAGERS[usize::from((ctrl >> 1) & 3) % n_managers];
        if ctrl & 1 == 1 {
            let key = ManagerKey::update(name, "v1");
            match updater.update(&live, &object, "v1", managers.clone(), &key) {
                Ok(m) => {
                    live = object;
                    managers = m;
                }
                Err(e) => panic!("update of a validated object failed: {e:?}"),
            }
        } else {
            let key = ManagerKey::apply(name);
            let force = ctrl & 8 != 0;
            let applied = updater.apply(&live, &object, "v1", managers.clone(), &key, force);
            // A config given up to the engine is moved into the object: the same outcome.
            let owned = updater.apply_owned(&live, object.clone(), "v1", managers.clone(), &key, force);
            assert_eq!(format!("{owned:?}"), format!("{applied:?}"), "apply_owned of {object} to {live}");
            match applied {
                Ok(a) => {
                    assert_eq!(
                        a.changed,
                        a.object.is_some(),
                        "changed disagrees with the returned object"
                    );
                    let want = typed::to_field_set(schema, root, &object)
                        .expect("a validated config has a field set");
                    match a.managers.get(&key) {
                        Some(vs) => {
                            assert_eq!(vs.set, want, "the applier's set is not its config's fields")
                        }
                        None => assert!(
                            want.is_empty(),
                            "the applier's entry vanished though its config has fields"
                        ),
                    }
                    if let Some(o) = a.object {
                        live = o;
                    }
                    managers = a.managers;
                    if let Err(e) = updater.validate(&live) {
                        panic!("the applied object {live} does not validate: {e}");
                    }
                }
                Err(Error::Conflict(c)) => {
                    assert!(!force, "a forced apply conflicted: {c}");
                    assert!(!c.is_empty(), "a conflict error without conflicts");
                }
                Err(e) => panic!("apply of a validated config failed: {e:?}"),
            }
        }
        check_managers(&live, &managers);
    }
});
