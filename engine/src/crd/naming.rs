//! Which names of a CustomResourceDefinition are accepted, as kube-apiserver's naming
//! controller decides: a plural, singular or short name already accepted for another definition
//! of the same group (as its plural, singular or a short name), or a kind or list kind already
//! accepted there, is refused — the definition's `NamesAccepted` condition is then `False` with
//! the conflict, and it is not established (its resource is not served).

use serde_json::{json, Value};

/// The outcome for one definition.
#[derive(Debug, PartialEq)]
pub struct Naming {
    /// `status.acceptedNames`.
    pub accepted: Value,
    /// The `NamesAccepted` condition: `None` when every name is accepted, else the reason and
    /// message of the last conflict.
    pub conflict: Option<(&'static str, String)>,
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, p: &str) -> Vec<String> {
    v.pointer(p).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

/// The names of `crd` kube-apiserver accepts, given the other definitions of its group
/// (`others`, as stored: their `status.acceptedNames` count).
#[must_use]
pub fn accept(crd: &Value, others: &[&Value]) -> Naming {
    let mut resources: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for o in others {
        // A definition registered before its status was written (or with the empty one of a
        // create): its names were accepted.
        let a = o
            .pointer("/status/acceptedNames")
            .filter(|a| !s(a, "/plural").is_empty())
            .or_else(|| o.pointer("/spec/names"))
            .unwrap_or(&Value::Null);
        resources.extend([s(a, "/plural"), s(a, "/singular")].into_iter().filter(|x| !x.is_empty()).map(str::to_string));
        resources.extend(strings(a, "/shortNames"));
        kinds.extend([s(a, "/kind"), s(a, "/listKind")].into_iter().filter(|x| !x.is_empty()).map(str::to_string));
    }
    let old = crd.pointer("/status/acceptedNames").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = old.clone();
    let mut conflict = None;
    let fresh = |requested: &str, accepted: &str, used: &[String]| requested == accepted || !used.iter().any(|u| u == requested);
    for (key, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
        ("kind", "KindConflict", &kinds),
        ("listKind", "ListKindConflict", &kinds),
    ] {
        let requested = s(crd, &format!("/spec/names/{key}"));
        if fresh(requested, s(&old, &format!("/{key}")), used) {
            accepted[key] = json!(requested);
        } else {
            conflict = Some((reason, format!("{requested:?} is already in use")));
        }
        if key == "singular" {
            // Short names, checked between singular and kind as kube-apiserver does.
            let requested = strings(crd, "/spec/names/shortNames");
            let had = strings(&old, "/shortNames");
            if requested != had {
                let clashes: Vec<String> = requested
                    .iter()
                    .filter(|n| !had.contains(n) && resources.contains(n))
                    .map(|n| format!("{n:?} is already in use"))
                    .collect();
                match clashes.as_slice() {
                    [] => accepted["shortNames"] = json!(requested),
                    [one] => conflict = Some(("ShortNamesConflict", one.clone())),
                    many => conflict = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
                }
            }
        }
    }
    if let Some(c) = crd.pointer("/spec/names/categories") {
        accepted["categories"] = c.clone();
    }
    if let Value::Object(m) = &mut accepted {
        // As kube-apiserver's type prints them: `plural` and `kind` always, the rest when set.
        m.retain(|k, v| matches!(k.as_str(), "plural" | "kind") || (v != &json!([]) && v != &json!("") && !v.is_null()));
        for k in ["plural", "kind"] {
            m.entry(k).or_insert_with(|| json!(""));
        }
    }
    Naming { accepted, conflict }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({"spec": {"names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List"), "shortNames": short}}})
    }

    fn accepted(c: &Value) -> Value {
        let mut c = c.clone();
        let names = c["spec"]["names"].clone();
        c["status"] = json!({"acceptedNames": names});
        c
    }

    #[test]
    fn fresh_names_are_accepted() {
        let n = accept(&crd("widgets", "Widget", &["wd"]), &[]);
        assert_eq!(n.conflict, None);
        assert_eq!(n.accepted["shortNames"], json!(["wd"]));
        assert_eq!(n.accepted["listKind"], "WidgetList");
    }

    #[test]
    fn names_in_use_in_the_group_conflict() {
        let other = accepted(&crd("widgets", "Widget", &["wd"]));
        let n = accept(&crd("gadgets", "Gadget", &["wd"]), &[&other]);
        assert_eq!(n.conflict, Some(("ShortNamesConflict", "\"wd\" is already in use".into())));
        let n = accept(&crd("things", "Widget", &[]), &[&other]);
        // Kind and list kind both clash: the last conflict is the one reported, as in kube-apiserver.
        assert_eq!(n.conflict, Some(("ListKindConflict", "\"WidgetList\" is already in use".into())));
        assert_eq!(n.accepted["plural"], "things");
        assert_eq!(n.accepted["kind"], "", "a refused kind is not accepted (kube-apiserver prints it empty)");
    }
}
