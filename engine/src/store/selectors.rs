//! Selectors and resourceVersion parameters: parsed once, matched against objects by lists,
//! watches and the owner verbs.

use super::options::ListOptions;
use super::types::Registered;
use crate::{Error, Result};
use serde_json::Value;

/// A resourceVersion parameter: `None` when unset or empty.
pub(crate) fn parse_rv(rv: Option<&str>) -> Result<Option<u64>> {
    match rv.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| Error::BadRequest(format!("invalid resource version {s:?}"))),
    }
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    /// `key>N`: the label is an integer greater than N.
    GreaterThan(String, i64),
    /// `key<N`: the label is an integer less than N.
    LessThan(String, i64),
}

/// A parsed label selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Whether the selector has no requirement (it selects everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn parse(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::BadRequest(format!("unable to parse requirement: {why} in label selector {s:?}"));
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top_level(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(bad("found ',', expected: !, identifier, or 'end of string'"));
            }
            let words: Vec<&str> = p.split_whitespace().collect();
            let req = if let Some(k) = p.strip_prefix('!') {
                Requirement::NotExists(label_key(k.trim()).map_err(|e| bad(&e))?)
            } else if words.len() >= 2 && (words.get(1) == Some(&"in") || words.get(1) == Some(&"notin")) {
                let key = label_key(words.first().copied().unwrap_or_default()).map_err(|e| bad(&e))?;
                let op_end = p.find(words.get(1).copied().unwrap_or_default()).unwrap_or(0) + words.get(1).map_or(0, |w| w.len());
                let rest = p.get(op_end..).unwrap_or_default().trim();
                let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or_else(|| bad("expected a parenthesized list"))?;
                let values: Vec<String> = inner
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(label_value)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| bad(&e))?;
                if values.is_empty() {
                    return Err(bad("for 'in', 'notin' operators, values set can't be empty"));
                }
                if words.get(1) == Some(&"in") {
                    Requirement::In(key, values)
                } else {
                    Requirement::NotIn(key, values)
                }
            } else if let Some((k, v, greater)) =
                p.split_once('>').map(|(k, v)| (k, v, true)).or_else(|| p.split_once('<').map(|(k, v)| (k, v, false)))
            {
                // apimachinery's `gt` / `lt`: one integer value.
                let key = label_key(k.trim()).map_err(|e| bad(&e))?;
                let v = label_value(v.trim()).map_err(|e| bad(&e))?;
                let n = v.parse::<i64>().map_err(|_| {
                    Error::BadRequest(format!(
                        "unable to parse requirement: values[0]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                    ))
                })?;
                if greater {
                    Requirement::GreaterThan(key, n)
                } else {
                    Requirement::LessThan(key, n)
                }
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement::NotEquals(label_key(k.trim()).map_err(|e| bad(&e))?, label_value(v.trim()).map_err(|e| bad(&e))?)
            } else if let Some((k, v)) = p.split_once("==") {
                Requirement::Equals(label_key(k.trim()).map_err(|e| bad(&e))?, label_value(v.trim()).map_err(|e| bad(&e))?)
            } else if let Some((k, v)) = p.split_once('=') {
                Requirement::Equals(label_key(k.trim()).map_err(|e| bad(&e))?, label_value(v.trim()).map_err(|e| bad(&e))?)
            } else if words.len() == 1 {
                Requirement::Exists(label_key(p).map_err(|e| bad(&e))?)
            } else {
                return Err(bad("unknown operator"));
            };
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub(crate) fn matches(&self, labels: Option<&Value>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            // A label that is not an integer matches neither, as in apimachinery.
            Requirement::GreaterThan(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
            Requirement::LessThan(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
        })
    }
}

/// A label key as Kubernetes validates it (apimachinery's `IsQualifiedName`).
fn label_key(k: &str) -> std::result::Result<String, String> {
    match super::validate::qualified_name(k).first() {
        None => Ok(k.to_string()),
        Some(why) => Err(format!("invalid label key {k:?}: {why}")),
    }
}

/// A label value as Kubernetes validates it (`IsValidLabelValue`).
fn label_value(v: &str) -> std::result::Result<String, String> {
    match super::validate::label_value(v).first() {
        None => Ok(v.to_string()),
        Some(why) => Err(format!("invalid label value {v:?}: {why}")),
    }
}

/// Splits on commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s.get(start..i).unwrap_or_default());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s.get(start..).unwrap_or_default());
    parts
}

/// A parsed field selector: `metadata.name` and `metadata.namespace` (matched on the key,
/// before an object is read), and the other field labels kube-apiserver supports for a kind
/// (`involvedObject.name` of events, `spec.nodeName` of pods, …; see [`FieldSelector::check`])
/// matched on the object: its value as a string, `""` when absent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

/// The field labels kube-apiserver supports for a resource besides `metadata.name` and
/// `metadata.namespace` (its registry strategies' `GetAttrs`/field label conversions).
fn supported(resource: &str) -> &'static [&'static str] {
    match resource {
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
        ],
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "secrets" => &["type"],
        "namespaces" => &["status.phase"],
        "nodes" => &["spec.unschedulable"],
        "replicationcontrollers" | "replicasets.apps" => &["status.replicas"],
        "jobs.batch" => &["status.successful"],
        "services" => &["spec.clusterIP", "spec.type"],
        _ => &[],
    }
}

/// Whether a requirement is on the object's key (name, namespace) rather than its body.
fn on_key(field: &str) -> bool {
    field == "metadata.name" || field == "metadata.namespace"
}

impl FieldSelector {
    /// Whether the selector has no requirement (it selects everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn parse(s: &str) -> Result<Self> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(Error::BadRequest(format!("invalid field selector: {part:?}")));
            };
            let field = field.trim();
            let valid = !field.is_empty()
                && field.split('.').all(|seg| !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            if !valid {
                return Err(Error::BadRequest(format!("field label not supported: {field}")));
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Fails unless every field label is one kube-apiserver supports for `resource` (`plural`
    /// or `plural.group`), or one of `selectable` (a custom resource version's
    /// `selectableFields`).
    ///
    /// # Errors
    /// [`Error::BadRequest`] naming the first unsupported label.
    pub(crate) fn check(&self, resource: &str, selectable: &[String]) -> Result<()> {
        let allowed = |f: &str| on_key(f) || supported(resource).contains(&f) || selectable.iter().any(|s| s == f);
        match self.0.iter().find(|(f, _, _)| !allowed(f)) {
            Some((f, _, _)) => Err(Error::BadRequest(format!("field label not supported: {f}"))),
            None => Ok(()),
        }
    }

    /// Whether the requirements on the name and namespace hold.
    pub(crate) fn matches(&self, name: &str, namespace: &str) -> bool {
        self.0.iter().filter(|(f, _, _)| on_key(f)).all(|(f, eq, v)| {
            let actual = if f == "metadata.name" { name } else { namespace };
            (actual == v) == *eq
        })
    }

    /// Whether some requirement needs the object's body.
    pub(crate) fn needs_object(&self) -> bool {
        self.0.iter().any(|(f, _, _)| !on_key(f))
    }

    /// Whether the requirements on the object's other fields hold.
    pub(crate) fn matches_object(&self, object: &Value) -> bool {
        self.0.iter().filter(|(f, _, _)| !on_key(f)).all(|(f, eq, v)| {
            let mut cur = Some(object);
            for seg in f.split('.') {
                cur = cur.and_then(|c| c.get(seg));
            }
            let actual = match cur {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            (actual == *v) == *eq
        })
    }
}

/// What selects an object once it is read: its labels, and field requirements beyond the name
/// and namespace.
#[derive(Debug, Default)]
pub(crate) struct ObjectFilter<'a> {
    pub(crate) labels: Option<&'a LabelSelector>,
    pub(crate) fields: Option<&'a FieldSelector>,
}

impl ObjectFilter<'_> {
    /// Whether the object is selected.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.labels.is_none_or(|l| l.matches(object.pointer("/metadata/labels"))) && self.fields.is_none_or(|f| f.matches_object(object))
    }
}

/// A list's label and field selectors.
pub(super) struct Selectors {
    labels: Option<LabelSelector>,
    pub(super) fields: Option<FieldSelector>,
}

impl Selectors {
    /// The selectors of `opts`, the field selector checked against type `t`.
    pub(super) fn parse(opts: &ListOptions, t: &Registered) -> Result<Selectors> {
        let labels = opts.label_selector.as_deref().map(LabelSelector::parse).transpose()?;
        let fields = opts.field_selector.as_deref().map(FieldSelector::parse).transpose()?;
        if let Some(f) = &fields {
            f.check(&t.spec.resource(), t.spec.selectable_fields())?;
        }
        Ok(Selectors { labels, fields })
    }

    /// Whether any selector selects (the list then has no remaining item count).
    pub(super) fn filtered(&self) -> bool {
        self.labels.as_ref().is_some_and(|l| !l.is_empty()) || self.fields.as_ref().is_some_and(|f| !f.is_empty())
    }

    /// What selects on the object itself (labels, fields other than the name), if anything.
    pub(super) fn filter(&self) -> Option<ObjectFilter<'_>> {
        let labels = self.labels.as_ref().filter(|l| !l.is_empty());
        let fields = self.fields.as_ref().filter(|f| f.needs_object());
        (labels.is_some() || fields.is_some()).then_some(ObjectFilter { labels, fields })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let l = json!({"app": "web", "tier": "front"});
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(Some(&l));
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, db)"));
        assert!(!m("app notin (web)"));
        assert!(m("!missing"));
        assert!(!m("missing"));
        // Gt and Lt, as apimachinery parses and matches them: integers only.
        let n = json!({"idx": "3", "name": "x"});
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(Some(&n));
        assert!(m("idx>2") && m("idx < 4") && !m("idx>3") && !m("idx<3") && !m("name>1") && !m("missing<9"));
        assert!(LabelSelector::parse("idx>two").is_err() && LabelSelector::parse("idx>").is_err());
        assert!(LabelSelector::parse("app in web").is_err());
    }

    /// Keys and values as Kubernetes validates them (labels.Parse answers 400 for the others).
    #[test]
    fn label_selector_keys_and_values_are_validated() {
        for ok in [
            "a=b",
            "a=",
            "a==b.c_d-e",
            "app.kubernetes.io/name=web",
            "k8s.io/x!=y",
            "A_b.C",
            "!a-b",
            "x in (a, b-c, )",
            "x notin (1)",
            "a=b,c!=d,e",
            " a = b ",
            "",
            "  ",
        ] {
            assert!(LabelSelector::parse(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "a=b=c",
            "-x-=y",
            "x-=y",
            "_x=y",
            "a=-b",
            "a=b-",
            "a!=b=c",
            "Example.com/a=b",
            "-a.com/b=c",
            "a..b/c=d",
            "/a=b",
            "a/=b",
            "a/b/c=d",
            "!-x",
            "x in (a, -b)",
            "x notin (a=b)",
            "a=b c",
            &format!("{long}=b"),
            &format!("a={long}"),
            ",,",
            "a=b,,c",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
        let max = format!("{}.{}/{}={}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(63));
        assert!(LabelSelector::parse(&max).is_ok());
    }

    #[test]
    fn field_selectors_on_other_fields_read_the_object() {
        let ev = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "c1", "kind": "ConfigMap"}, "count": 2});
        let f = FieldSelector::parse("involvedObject.name=c1,involvedObject.kind=ConfigMap,metadata.name=e").unwrap();
        assert!(f.needs_object() && f.matches("e", "") && f.matches_object(&ev));
        assert!(!FieldSelector::parse("involvedObject.name=c2").unwrap().matches_object(&ev));
        assert!(FieldSelector::parse("count=2,reason!=x,missing=").unwrap().matches_object(&ev));
        assert!(!FieldSelector::parse("metadata.name=x").unwrap().needs_object());
        assert!(FieldSelector::parse("a..b=1").is_err());
        assert!(f.check("events", &[]).is_ok());
        assert!(f.check("configmaps", &[]).is_err());
        assert!(FieldSelector::parse("metadata.name=a").unwrap().check("configmaps", &[]).is_ok());
    }
}
