//! The Server-Side Apply rules at the level of the [`Updater`], one test per rule, each named
//! after it.
//!
//! Expected objects, field sets and conflicts are structured-merge-diff v4.1.2's, as its oracle
//! (`../shared/oracle/smd`) prints them for the same ops. The test type has a struct of scalars
//! with a nested struct (`spec.template`), a granular map (`labels`), an atomic map (`selector`),
//! an atomic struct (`affinity`), a map list keyed by `name` (`containers`), a map list keyed by
//! `port` and `protocol` (`ports`), a set of strings (`finalizers`) and an atomic list (`args`).

use fieldstore_codec::fields_v1::to_json_string;
use fieldstore_engine::schema::{from_crd, parse_smd_yaml, Schema, DEDUCED_TYPE};
use fieldstore_engine::{Applied, Error, ManagedFields, ManagerKey, Result, TypeRef, Updater};
use serde_json::{json, Value};

const SCHEMA: &str = "types:
- name: root
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: replicas, type: {scalar: numeric}}
    - {name: paused, type: {scalar: boolean}}
    - {name: spec, type: {namedType: spec}}
    - {name: labels, type: {map: {elementType: {scalar: string}}}}
    - {name: selector, type: {map: {elementType: {scalar: string}, elementRelationship: atomic}}}
    - {name: affinity, type: {namedType: affinity}}
    - name: containers
      type: {list: {elementType: {namedType: container}, elementRelationship: associative, keys: [name]}}
    - name: ports
      type: {list: {elementType: {namedType: port}, elementRelationship: associative, keys: [port, protocol]}}
    - {name: finalizers, type: {list: {elementType: {scalar: string}, elementRelationship: associative}}}
    - {name: args, type: {list: {elementType: {scalar: string}, elementRelationship: atomic}}}
- name: spec
  map:
    fields:
    - {name: strategy, type: {scalar: string}}
    - {name: template, type: {namedType: template}}
- name: template
  map:
    fields:
    - {name: image, type: {scalar: string}}
    - {name: pullPolicy, type: {scalar: string}}
- name: affinity
  map:
    elementRelationship: atomic
    fields:
    - {name: zone, type: {scalar: string}}
    - {name: weight, type: {scalar: numeric}}
- name: container
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: image, type: {scalar: string}}
    - {name: value, type: {scalar: string}}
- name: port
  map:
    fields:
    - {name: port, type: {scalar: numeric}}
    - {name: protocol, type: {scalar: string}}
    - {name: name, type: {scalar: string}}
";

// ---------------------------------------------------------------------------------------------
// Helpers

/// One object and its managers, changed op by op as a store would: a successful op replaces
/// both, a failed one leaves them as they were.
struct Object {
    schema: Schema,
    root: TypeRef,
    live: Value,
    managers: ManagedFields,
}

impl Object {
    /// An empty object (`{}`, as after a create) of the test type.
    fn new() -> Self {
        let schema = parse_smd_yaml(SCHEMA).expect("test schema parses");
        Self::of(schema, "root")
    }

    /// An empty object of type `root` in `schema`.
    fn of(schema: Schema, root: &str) -> Self {
        let root = schema.named(root).expect("root type exists");
        Object { schema, root, live: json!({}), managers: ManagedFields::new() }
    }

    fn updater(&self) -> Updater<'_> {
        Updater::new(&self.schema, &self.root)
    }

    fn try_apply(&mut self, manager: &str, config: Value, force: bool) -> Result<Applied> {
        let u = Updater::new(&self.schema, &self.root);
        u.validate(&config).unwrap_or_else(|e| panic!("config {config} is invalid: {e}"));
        let a = u.apply(&self.live, &config, "v1", self.managers.clone(), &ManagerKey::apply(manager), force)?;
        if let Some(o) = &a.object {
            self.live = o.clone();
        }
        self.managers = a.managers.clone();
        Ok(a)
    }

    fn apply(&mut self, manager: &str, config: Value) -> Applied {
        self.try_apply(manager, config, false).unwrap_or_else(|e| panic!("apply by {manager} failed: {e}"))
    }

    fn force_apply(&mut self, manager: &str, config: Value) -> Applied {
        self.try_apply(manager, config, true).unwrap_or_else(|e| panic!("forced apply by {manager} failed: {e}"))
    }

    fn update(&mut self, manager: &str, new: Value) {
        let u = Updater::new(&self.schema, &self.root);
        u.validate(&new).unwrap_or_else(|e| panic!("object {new} is invalid: {e}"));
        let m = u
            .update(&self.live, &new, "v1", self.managers.clone(), &ManagerKey::update(manager, "v1"))
            .unwrap_or_else(|e| panic!("update by {manager} failed: {e}"));
        self.live = new;
        self.managers = m;
    }

    /// The FieldsV1 of an entry, parsed back so that comparisons ignore key order.
    fn fields(&self, key: &ManagerKey) -> Option<Value> {
        self.managers.get(key).map(|vs| serde_json::from_str(&to_json_string(&vs.set)).expect("FieldsV1 is JSON"))
    }

    /// The FieldsV1 of the applier `manager`.
    fn applied(&self, manager: &str) -> Option<Value> {
        self.fields(&ManagerKey::apply(manager))
    }

    /// The FieldsV1 of the updater `manager` (at v1).
    fn updated(&self, manager: &str) -> Option<Value> {
        self.fields(&ManagerKey::update(manager, "v1"))
    }

    /// The entries, as `name/Operation`, in key order.
    fn entries(&self) -> Vec<String> {
        self.managers.keys().map(|k| format!("{}/{}", k.manager, k.operation)).collect()
    }
}

/// The conflicts of a failed apply as (manager, path) strings.
fn conflict_paths(r: &Result<Applied>) -> Vec<(String, String)> {
    match r {
        Err(Error::Conflict(c)) => c.0.iter().map(|c| (c.manager.manager.clone(), c.path.to_string())).collect(),
        other => panic!("expected conflicts, got {other:?}"),
    }
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(m, p)| ((*m).to_string(), (*p).to_string())).collect()
}

// ---------------------------------------------------------------------------------------------
// Apply

#[test]
fn apply_merges_the_config_into_the_live_object_and_config_values_win() {
    let mut o = Object::new();
    o.live = json!({
        "name": "web", "replicas": 1, "labels": {"app": "web"},
        "containers": [{"name": "main", "image": "nginx:1", "value": "a"}],
    });
    let a = o.apply(
        "alice",
        json!({
            "replicas": 3, "labels": {"tier": "front"},
            "containers": [{"name": "main", "image": "nginx:2"}, {"name": "side"}],
        }),
    );
    assert!(a.changed);
    assert_eq!(
        o.live,
        json!({
            "name": "web", "replicas": 3, "labels": {"app": "web", "tier": "front"},
            "containers": [{"name": "main", "image": "nginx:2", "value": "a"}, {"name": "side"}],
        })
    );
}

#[test]
fn the_appliers_set_is_exactly_the_fields_of_its_config() {
    let mut o = Object::new();
    o.update("ctrl", json!({"paused": true}));
    o.apply(
        "alice",
        json!({
            "name": "web", "spec": {"template": {"image": "nginx"}},
            "labels": {"app": "web"}, "selector": {"app": "web"}, "affinity": {"zone": "a"},
            "containers": [{"name": "main", "image": "nginx"}],
            "ports": [{"port": 80, "protocol": "TCP", "name": "http"}],
            "finalizers": ["f1"], "args": ["-v", "-v"],
        }),
    );
    // Nothing of what was already there (`paused`) and nothing not in the config.
    assert_eq!(
        o.applied("alice"),
        Some(json!({
            "f:name": {}, "f:spec": {"f:template": {"f:image": {}}},
            "f:labels": {"f:app": {}}, "f:selector": {}, "f:affinity": {},
            "f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:name": {}, "f:image": {}}},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}, "f:name": {}}},
            "f:finalizers": {"v:\"f1\"": {}}, "f:args": {},
        }))
    );
    assert_eq!(o.updated("ctrl"), Some(json!({"f:paused": {}})));
    // A later config replaces the set; it is not added to the old one.
    o.apply("alice", json!({"name": "web", "labels": {"app": "web"}}));
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}, "f:labels": {"f:app": {}}})));
}

#[test]
fn fields_no_longer_applied_are_removed_scalar() {
    let mut o = Object::new();
    o.apply("alice", json!({"name": "web", "replicas": 2}));
    o.apply("alice", json!({"name": "web"}));
    assert_eq!(o.live, json!({"name": "web"}));
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}})));
}

#[test]
fn fields_no_longer_applied_are_removed_granular_map_entry() {
    let mut o = Object::new();
    o.apply("alice", json!({"labels": {"a": "1", "b": "2"}}));
    o.apply("alice", json!({"labels": {"a": "1"}}));
    assert_eq!(o.live, json!({"labels": {"a": "1"}}));
    assert_eq!(o.applied("alice"), Some(json!({"f:labels": {"f:a": {}}})));
}

#[test]
fn fields_no_longer_applied_are_removed_set_member() {
    let mut o = Object::new();
    o.apply("alice", json!({"finalizers": ["f1", "f2"]}));
    o.apply("alice", json!({"finalizers": ["f1"]}));
    assert_eq!(o.live, json!({"finalizers": ["f1"]}));
    assert_eq!(o.applied("alice"), Some(json!({"f:finalizers": {"v:\"f1\"": {}}})));
}

#[test]
fn fields_no_longer_applied_are_removed_map_list_item() {
    let mut o = Object::new();
    o.apply("alice", json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}));
    o.apply("alice", json!({"containers": [{"name": "a", "image": "x"}]}));
    assert_eq!(o.live, json!({"containers": [{"name": "a", "image": "x"}]}));
    assert_eq!(o.applied("alice"), Some(json!({"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:image": {}}}})));
}

#[test]
fn fields_no_longer_applied_but_owned_by_another_manager_stay_scalar() {
    let mut o = Object::new();
    o.apply("alice", json!({"name": "web", "replicas": 2}));
    o.apply("bob", json!({"replicas": 2}));
    o.apply("alice", json!({"name": "web"}));
    assert_eq!(o.live, json!({"name": "web", "replicas": 2}));
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}})));
    assert_eq!(o.applied("bob"), Some(json!({"f:replicas": {}})));
}

#[test]
fn fields_no_longer_applied_but_owned_by_another_manager_stay_granular_map_entry() {
    // The other owner is an updater that wrote the entry first; the applier then applied the
    // same value, sharing it.
    let mut o = Object::new();
    o.update("ctrl", json!({"labels": {"b": "2"}}));
    o.apply("alice", json!({"labels": {"a": "1", "b": "2"}}));
    o.apply("alice", json!({"labels": {"a": "1"}}));
    assert_eq!(o.live, json!({"labels": {"a": "1", "b": "2"}}));
    assert_eq!(o.applied("alice"), Some(json!({"f:labels": {"f:a": {}}})));
    assert_eq!(o.updated("ctrl"), Some(json!({"f:labels": {".": {}, "f:b": {}}})));
}

#[test]
fn fields_no_longer_applied_but_owned_by_another_manager_stay_set_member() {
    let mut o = Object::new();
    o.apply("alice", json!({"finalizers": ["f1", "f2"]}));
    o.apply("bob", json!({"finalizers": ["f2"]}));
    o.apply("alice", json!({"finalizers": ["f1"]}));
    assert_eq!(o.live, json!({"finalizers": ["f1", "f2"]}));
    assert_eq!(o.applied("alice"), Some(json!({"f:finalizers": {"v:\"f1\"": {}}})));
    assert_eq!(o.applied("bob"), Some(json!({"f:finalizers": {"v:\"f2\"": {}}})));
}

#[test]
fn fields_no_longer_applied_but_owned_by_another_manager_stay_map_list_item() {
    let mut o = Object::new();
    o.apply("alice", json!({"ports": [{"port": 80, "protocol": "TCP", "name": "http"}, {"port": 443, "protocol": "TCP"}]}));
    o.apply("bob", json!({"ports": [{"port": 443, "protocol": "TCP"}]}));
    o.apply("alice", json!({"ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}));
    assert_eq!(o.live, json!({"ports": [{"port": 80, "protocol": "TCP", "name": "http"}, {"port": 443, "protocol": "TCP"}]}));
    assert_eq!(
        o.applied("bob"),
        Some(json!({"f:ports": {"k:{\"port\":443,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}}}))
    );
    assert_eq!(
        o.applied("alice"),
        Some(json!({"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}, "f:name": {}}}}))
    );
}

#[test]
fn same_value_from_two_appliers_is_shared_ownership() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 2, "labels": {"a": "1"}}));
    let a = o.apply("bob", json!({"replicas": 2}));
    assert!(!a.changed);
    assert_eq!(o.applied("alice"), Some(json!({"f:replicas": {}, "f:labels": {"f:a": {}}})));
    assert_eq!(o.applied("bob"), Some(json!({"f:replicas": {}})));
    // While both own it, neither may change it alone.
    assert_eq!(conflict_paths(&o.try_apply("bob", json!({"replicas": 3}), false)), pairs(&[("alice", ".replicas")]));
    // Once alice lets go, bob is the only owner and may.
    o.apply("alice", json!({"labels": {"a": "1"}}));
    o.apply("bob", json!({"replicas": 3}));
    assert_eq!(o.live, json!({"replicas": 3, "labels": {"a": "1"}}));
}

#[test]
fn different_value_owned_by_another_manager_conflicts_without_force() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 2, "labels": {"a": "1"}}));
    o.update("ctrl", json!({"replicas": 2, "labels": {"a": "1"}, "name": "web"}));
    let (live, managers) = (o.live.clone(), o.managers.clone());

    let r = o.try_apply("bob", json!({"replicas": 3, "labels": {"a": "2", "b": "x"}, "name": "api"}), false);
    let Err(Error::Conflict(c)) = &r else { panic!("expected conflicts, got {r:?}") };
    let got: Vec<(ManagerKey, String, Option<Value>, Option<Value>)> =
        c.0.iter().map(|c| (c.manager.clone(), c.path.to_string(), c.live.clone(), c.applied.clone())).collect();
    assert_eq!(
        got,
        vec![
            (ManagerKey::apply("alice"), ".labels.a".to_string(), Some(json!("1")), Some(json!("2"))),
            (ManagerKey::apply("alice"), ".replicas".to_string(), Some(json!(2)), Some(json!(3))),
            (ManagerKey::update("ctrl", "v1"), ".name".to_string(), Some(json!("web")), Some(json!("api"))),
        ]
    );
    assert_eq!(
        c.kubernetes_message(),
        "Apply failed with 3 conflicts: conflicts with \"alice\":\n- .labels.a\n- .replicas\nconflicts with \"ctrl\" using v1:\n- .name"
    );
    assert!(matches!(&r, Err(Error::Conflict(c)) if c.len() == 3));
    // A failed apply changes nothing.
    assert_eq!((o.live, o.managers), (live, managers));
}

#[test]
fn force_moves_the_field_to_the_applier_and_takes_it_from_all_others() {
    let mut o = Object::new();
    o.apply("alice", json!({"name": "web", "replicas": 2}));
    o.apply("bob", json!({"replicas": 2}));
    o.update("ctrl", json!({"name": "web", "replicas": 2, "labels": {"x": "1"}}));
    assert_eq!(
        conflict_paths(&o.try_apply("carol", json!({"replicas": 5, "labels": {"x": "2"}}), false)),
        pairs(&[("alice", ".replicas"), ("bob", ".replicas"), ("ctrl", ".labels.x")])
    );

    let a = o.force_apply("carol", json!({"replicas": 5, "labels": {"x": "2"}}));
    assert!(a.changed);
    assert_eq!(o.live, json!({"name": "web", "replicas": 5, "labels": {"x": "2"}}));
    assert_eq!(o.applied("carol"), Some(json!({"f:replicas": {}, "f:labels": {"f:x": {}}})));
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}})));
    // bob owned nothing else: its entry is gone. ctrl keeps the map it created (`.labels`
    // itself, a member now without children), not the entry.
    assert_eq!(o.applied("bob"), None);
    assert_eq!(o.updated("ctrl"), Some(json!({"f:labels": {}})));
}

#[test]
fn atomic_list_map_and_struct_are_owned_and_replaced_as_one_unit() {
    let mut o = Object::new();
    let config = json!({"selector": {"a": "1", "b": "2"}, "affinity": {"zone": "z", "weight": 1}, "args": ["x", "y"]});
    o.apply("alice", config.clone());
    assert_eq!(o.applied("alice"), Some(json!({"f:selector": {}, "f:affinity": {}, "f:args": {}})));

    // Adding one key or one item changes the whole unit, which alice owns.
    let r =
        o.try_apply("bob", json!({"selector": {"a": "1", "b": "2", "c": "3"}, "affinity": {"zone": "z"}, "args": ["x", "y", "z"]}), false);
    assert_eq!(conflict_paths(&r), pairs(&[("alice", ".affinity"), ("alice", ".args"), ("alice", ".selector")]));

    // An equal unit is shared.
    o.apply("bob", config);
    assert_eq!(o.applied("bob"), o.applied("alice"));

    // A forced unit replaces the old one entirely: nothing of it is merged.
    o.force_apply("carol", json!({"selector": {"c": "3"}, "affinity": {"weight": 2}, "args": ["z"]}));
    assert_eq!(o.live, json!({"selector": {"c": "3"}, "affinity": {"weight": 2}, "args": ["z"]}));
    assert_eq!(o.entries(), ["carol/Apply"]);
}

// ---------------------------------------------------------------------------------------------
// Update

#[test]
fn update_never_conflicts_and_changed_fields_move_to_the_updater() {
    let mut o = Object::new();
    o.apply("alice", json!({"name": "web", "replicas": 2, "labels": {"a": "1"}}));
    o.update("ctrl", json!({"name": "web", "replicas": 3, "labels": {"a": "1", "b": "2"}}));
    assert_eq!(o.live, json!({"name": "web", "replicas": 3, "labels": {"a": "1", "b": "2"}}));
    assert_eq!(o.updated("ctrl"), Some(json!({"f:replicas": {}, "f:labels": {"f:b": {}}})));
    // Unchanged fields stay where they were.
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}, "f:labels": {"f:a": {}}})));
    // A write that changes nothing records nothing.
    o.update("idle", o.live.clone());
    assert_eq!(o.updated("idle"), None);
    assert_eq!(o.entries(), ["alice/Apply", "ctrl/Update"]);
}

#[test]
fn update_removing_a_field_takes_it_from_every_manager() {
    let mut o = Object::new();
    o.apply("alice", json!({"name": "web", "labels": {"a": "1", "b": "2"}}));
    o.apply("bob", json!({"labels": {"a": "1"}}));
    o.update("ctrl", json!({"name": "web", "labels": {"b": "2"}}));
    assert_eq!(o.live, json!({"name": "web", "labels": {"b": "2"}}));
    assert_eq!(o.applied("alice"), Some(json!({"f:name": {}, "f:labels": {"f:b": {}}})));
    // bob owned only the removed entry; ctrl changed and added nothing.
    assert_eq!(o.entries(), ["alice/Apply"]);
}

#[test]
fn apply_and_update_managers_of_the_same_name_are_distinct_entries() {
    let mut o = Object::new();
    o.apply("kubectl", json!({"name": "web", "replicas": 1}));
    o.update("kubectl", json!({"name": "web", "replicas": 2}));
    assert_eq!(o.entries(), ["kubectl/Apply", "kubectl/Update"]);
    assert_eq!(o.applied("kubectl"), Some(json!({"f:name": {}})));
    assert_eq!(o.updated("kubectl"), Some(json!({"f:replicas": {}})));
    // The applier conflicts with its namesake updater like with anyone else.
    let r = o.try_apply("kubectl", json!({"name": "web", "replicas": 5}), false);
    assert!(matches!(&r, Err(Error::Conflict(c))
        if c.0.len() == 1 && c.0[0].manager == ManagerKey::update("kubectl", "v1")
            && c.kubernetes_message() == "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .replicas"));
}

#[test]
fn managers_whose_set_becomes_empty_disappear() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 1}));
    o.update("ctrl", json!({"replicas": 2}));
    assert_eq!(o.entries(), ["ctrl/Update"]);
    o.force_apply("bob", json!({"replicas": 3}));
    assert_eq!(o.entries(), ["bob/Apply"]);
    o.apply("bob", json!({}));
    assert!(o.managers.is_empty());
}

#[test]
fn a_no_op_apply_returns_unchanged() {
    let mut o = Object::new();
    let config = json!({"replicas": 2, "labels": {"a": "1"}, "containers": [{"name": "main", "image": "x"}], "finalizers": ["f"]});
    let first = o.apply("alice", config.clone());
    assert!(first.changed && first.object.is_some());
    let managers = o.managers.clone();

    let again = o.apply("alice", config.clone());
    assert!(again.object.is_none());
    assert!(!again.changed);
    assert_eq!(again.managers, managers);

    // Another applier of the same values changes the managers, not the object.
    let shared = o.apply("bob", config);
    assert!(shared.object.is_none() && !shared.changed);
    assert_eq!(o.entries(), ["alice/Apply", "bob/Apply"]);
}

#[test]
fn applying_an_empty_config_drops_all_of_the_managers_fields() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 1, "labels": {"a": "1"}}));
    o.apply("bob", json!({"labels": {"a": "1"}}));
    let a = o.apply("alice", json!({}));
    assert!(a.changed);
    assert_eq!(o.live, json!({"labels": {"a": "1"}}));
    assert_eq!(o.entries(), ["bob/Apply"]);

    // A manager that owned nothing: no change, no entry.
    let stranger = o.apply("carol", json!({}));
    assert!(!stranger.changed && stranger.object.is_none());
    assert_eq!(o.entries(), ["bob/Apply"]);

    // The last owner letting go empties the root, which structured-merge-diff turns into null.
    o.apply("bob", json!({}));
    assert_eq!(o.live, Value::Null);
    assert!(o.managers.is_empty());
}

#[test]
fn int_and_float_of_the_same_value_are_equal_no_conflict() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 2}));
    let a = o.apply("bob", json!({"replicas": 2.0}));
    assert!(!a.changed && a.object.is_none());
    assert_eq!(o.live, json!({"replicas": 2}));
    assert_eq!(o.entries(), ["alice/Apply", "bob/Apply"]);
    // A different float conflicts with both.
    let r = o.try_apply("carol", json!({"replicas": 2.5}), false);
    assert_eq!(conflict_paths(&r), pairs(&[("alice", ".replicas"), ("bob", ".replicas")]));
}

#[test]
fn null_is_an_ordinary_value_owned_and_conflicting() {
    let mut o = Object::new();
    o.apply("alice", json!({"replicas": 2}));
    let r = o.try_apply("bob", json!({"replicas": null}), false);
    assert!(matches!(&r, Err(Error::Conflict(c))
        if c.len() == 1 && c.0[0].live == Some(json!(2)) && c.0[0].applied == Some(Value::Null)));

    o.force_apply("bob", json!({"replicas": null}));
    assert_eq!(o.live, json!({"replicas": null}));
    assert_eq!(o.applied("bob"), Some(json!({"f:replicas": {}})));
    assert_eq!(o.entries(), ["bob/Apply"]);

    // The owned null conflicts with a value in turn.
    let r = o.try_apply("alice", json!({"replicas": 2}), false);
    assert_eq!(conflict_paths(&r), pairs(&[("bob", ".replicas")]));
}

#[test]
fn pruning_an_emptied_struct_leaves_null_while_owned() {
    let mut o = Object::new();
    o.apply("alice", json!({"spec": {"template": {"image": "nginx"}}}));
    o.apply("bob", json!({"spec": {"template": {"pullPolicy": "Always"}}}));
    // alice now owns `spec` itself (an empty struct is owned as a leaf).
    o.apply("alice", json!({"spec": {}}));
    assert_eq!(o.live, json!({"spec": {"template": {"pullPolicy": "Always"}}}));
    assert_eq!(o.applied("alice"), Some(json!({"f:spec": {}})));
    // bob's departure empties `spec`, which alice still owns: kept, as null.
    o.apply("bob", json!({}));
    assert_eq!(o.live, json!({"spec": null}));
    assert_eq!(o.entries(), ["alice/Apply"]);
}

#[test]
fn new_list_items_are_appended_after_live_items_in_config_order() {
    let mut o = Object::new();
    o.apply("alice", json!({"containers": [{"name": "b"}, {"name": "a"}], "finalizers": ["y", "x"]}));
    o.apply("bob", json!({"containers": [{"name": "d"}, {"name": "a"}, {"name": "c"}], "finalizers": ["z", "x", "w"]}));
    assert_eq!(
        o.live,
        json!({"containers": [{"name": "b"}, {"name": "a"}, {"name": "d"}, {"name": "c"}], "finalizers": ["y", "x", "z", "w"]})
    );
}

#[test]
fn duplicate_keys_and_set_values_are_rejected_with_the_path() {
    let o = Object::new();
    let u = o.updater();
    let invalid = |v: Value, path: &str, key: &str| {
        let r = u.validate(&v);
        assert!(
            matches!(&r, Err(Error::Invalid(errs)) if errs.0.iter().any(|e| e.path == path && e.message.contains(key))),
            "{v}: expected a duplicate of {key} at {path}, got {r:?}"
        );
        let message = r.map_err(|e| e.to_string()).expect_err("invalid");
        assert!(message.starts_with(&format!("{path}: ")), "{message}");
    };
    invalid(json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "a", "image": "x"}]}), ".containers", "[name=\"a\"]");
    invalid(
        json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "TCP", "name": "x"}]}),
        ".ports",
        "[port=80,protocol=\"TCP\"]",
    );
    invalid(json!({"finalizers": ["f", "g", "f"]}), ".finalizers", "[=\"f\"]");
    // Not duplicates: keys differing in one field, and repeated items of an atomic list.
    assert!(u.validate(&json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]})).is_ok());
    assert!(u.validate(&json!({"args": ["-v", "-v"]})).is_ok());
}

/// The validating updater checks the config inside the merge's walk; each case is a problem the
/// walk must not miss where it reads little of the config: items that line up with live ones,
/// atomic containers (leaves to the walk), subtrees only the config has (copied or walked), and
/// duplicates split between the lined-up and the realigned part of a list.
#[test]
fn a_validating_updater_rejects_what_validation_rejects() {
    let o = Object::new();
    let u = o.updater();
    let v = u.validating();
    let cases = [
        // duplicates among items lined up with (equally duplicated) live items
        (json!({"containers": [{"name": "a"}, {"name": "a"}]}), json!({"containers": [{"name": "a"}, {"name": "a"}]})),
        // a duplicate of a lined-up item among the realigned ones
        (json!({"containers": [{"name": "a"}, {"name": "b"}]}), json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "a"}]})),
        (json!({"finalizers": ["x"]}), json!({"finalizers": ["x", "y", "x"]})),
        // a bad scalar inside a lined-up item, and inside an item equal to the live one
        (json!({"containers": [{"name": "a", "image": "x"}]}), json!({"containers": [{"name": "a", "image": 5}]})),
        (json!({"containers": [{"name": "a", "image": 5}]}), json!({"containers": [{"name": "a", "image": 5}]})),
        // atomic containers with a bad member
        (json!({"selector": {"a": "x"}}), json!({"selector": {"a": 5}})),
        (json!({"args": ["x"]}), json!({"args": ["x", 5]})),
        (json!({"affinity": {"zone": "x"}}), json!({"affinity": {"zone": "x", "bogus": 1}})),
        // undeclared fields, on both sides and on the config's only
        (json!({"spec": {"strategy": "x"}}), json!({"spec": {"strategy": "x", "bogus": 1}})),
        (json!({}), json!({"spec": {"template": {"bogus": 1}}})),
        // a container where a scalar is, and a scalar where a container is
        (json!({"labels": {"a": "x"}}), json!({"labels": "x"})),
        (json!({"containers": [{"name": "a"}]}), json!({"containers": {"name": "a"}})),
        (json!({"name": "x"}), json!({"name": {"a": 1}})),
        // a subtree only the config has, with a bad leaf deep inside
        (json!({}), json!({"spec": {"template": {"image": 5}}})),
        (json!({}), json!({"containers": [{"name": "a"}, {"name": "a"}]})),
        (json!({"containers": []}), json!({"containers": [{"name": "a", "value": 1}]})),
        // an item without its key
        (json!({"containers": [{"name": "a"}]}), json!({"containers": [{"name": "a"}, {"image": "x"}]})),
    ];
    let other = ManagerKey::apply("other");
    for (live, config) in cases {
        let want = u.validate(&config).expect_err("the case is invalid");
        let Error::Invalid(want) = want else { panic!("{config}: {want:?}") };
        // With the live object's owner as another manager (the walk builds path sets) and alone.
        let owned = u.apply(&json!({}), &live, "v1", ManagedFields::new(), &other, false).map(|a| a.managers).unwrap_or_default();
        for managers in [ManagedFields::new(), owned] {
            let applied = v.apply(&live, &config, "v1", managers.clone(), &ManagerKey::apply("a"), false);
            assert!(matches!(&applied, Err(Error::Invalid(e)) if *e == want), "apply of {config} to {live}: {applied:?}, want {want:?}");
            let updated = v.update(&live, &config, "v1", managers, &ManagerKey::update("a", "v1"));
            assert!(matches!(&updated, Err(Error::Invalid(e)) if *e == want), "update of {config} to {live}: {updated:?}, want {want:?}");
        }
    }
}

#[test]
fn conflicts_on_many_items_stay_linear() {
    const N: usize = 20_000;
    let items = |image: &str| -> Value { (0..N).map(|i| json!({"name": format!("c{i}"), "image": image})).collect() };
    let mut o = Object::new();
    o.apply("alice", json!({"containers": items("a")}));
    let r = o.try_apply("bob", json!({"containers": items("b")}), false);
    let Err(Error::Conflict(c)) = &r else { panic!("expected conflicts") };
    assert_eq!(c.len(), N);
    assert!(c.0.iter().all(|c| c.manager == ManagerKey::apply("alice") && c.path.to_string().ends_with("].image")));
    assert!(c
        .kubernetes_message()
        .starts_with("Apply failed with 20000 conflicts: conflicts with \"alice\":\n- .containers[name=\"c0\"].image\n"));
}

// ---------------------------------------------------------------------------------------------
// Other schemas

#[test]
fn the_deduced_schema_treats_maps_granularly_and_lists_atomically() {
    let mut o = Object::of(Schema::deduced(), DEDUCED_TYPE);
    o.apply("alice", json!({"a": {"b": 1, "c": [1, 2]}, "d": [{"k": "x"}]}));
    // `a` is an entry of a granular map, not a declared field: a member itself, with its
    // entries below it; the lists are leaves.
    assert_eq!(o.applied("alice"), Some(json!({"f:a": {".": {}, "f:b": {}, "f:c": {}}, "f:d": {}})));
    let config = json!({"a": {"c": [1, 2, 3], "e": true}, "d": [{"k": "y"}]});
    assert_eq!(conflict_paths(&o.try_apply("bob", config.clone(), false)), pairs(&[("alice", ".a.c"), ("alice", ".d")]));
    o.force_apply("bob", config);
    // The map merged key by key; the lists replaced whole.
    assert_eq!(o.live, json!({"a": {"b": 1, "c": [1, 2, 3], "e": true}, "d": [{"k": "y"}]}));
    assert_eq!(o.applied("alice"), Some(json!({"f:a": {".": {}, "f:b": {}}})));
    assert_eq!(o.applied("bob"), Some(json!({"f:a": {".": {}, "f:c": {}, "f:e": {}}, "f:d": {}})));
}

#[test]
fn a_crd_list_type_map_merges_items_by_their_keys() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "ports": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                    "items": {"type": "object", "required": ["containerPort", "protocol"], "properties": {
                        "containerPort": {"type": "integer"}, "protocol": {"type": "string"}, "name": {"type": "string"}}},
                },
                "tags": {"type": "array", "items": {"type": "string"}},
            }}},
        }}}]},
    });
    let mut versions = from_crd(&crd).expect("CRD loads");
    let (version, schema, root) = versions.remove(0);
    assert_eq!(version, "v1");
    let mut o = Object::of(schema, &root);
    o.apply("alice", json!({"spec": {"ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}], "tags": ["a"]}}));
    // A list without x-kubernetes-list-type is atomic: bob may not add to alice's tags.
    let r = o.try_apply("bob", json!({"spec": {"ports": [{"containerPort": 80, "protocol": "UDP"}], "tags": ["a", "b"]}}), false);
    assert_eq!(conflict_paths(&r), pairs(&[("alice", ".spec.tags")]));
    o.apply("bob", json!({"spec": {"ports": [{"containerPort": 80, "protocol": "UDP"}]}}));
    assert_eq!(
        o.live,
        json!({"spec": {"ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 80, "protocol": "UDP"}], "tags": ["a"]}})
    );
    assert_eq!(
        o.applied("bob"),
        Some(
            json!({"f:spec": {"f:ports": {"k:{\"containerPort\":80,\"protocol\":\"UDP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}}})
        )
    );
}
