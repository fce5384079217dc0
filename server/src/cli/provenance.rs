//! Provenance verbs: who wrote each field and when (`blame`, `history`, `log`), who owns which
//! fields (`owners`, `managed-by`, `managers`), and changes to that ownership (`rename-manager`,
//! `release`). Paths are written as Kubernetes prints them (`.spec.containers[name="nginx"].image`).

use super::backend::{namespace_for, Backend};
use super::error::Result;
use super::output::{age, print_value, s, scalar, u, Output};
use super::stdio::write_stdout;
use crate::api::ObjectKey;
use clap::Args;
use fieldstore_engine::store::{HistoryQuery, Revision};
use serde_json::Value;
use std::collections::HashMap;

/// Arguments of `blame`.
#[derive(Debug, Args)]
pub struct BlameArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The object's namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// `text`: the object as YAML, each field annotated with its last change; `json`: one
    /// record per leaf field.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The field or subtree (default: the whole object).
    #[arg(long, default_value = "")]
    path: String,
    /// The object's namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// At most this many changes.
    #[arg(long)]
    limit: Option<usize>,
    /// Only changes before this revision (the next page's start).
    #[arg(long)]
    before_revision: Option<u64>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The object's namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// At most this many writes.
    #[arg(long)]
    limit: Option<usize>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `owners`.
#[derive(Debug, Args)]
pub struct OwnersArgs {
    /// The resource.
    resource: String,
    /// The field or subtree.
    #[arg(long)]
    path: String,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `managed-by`.
#[derive(Debug, Args)]
pub struct ManagedByArgs {
    /// The field manager.
    manager: String,
    /// Only objects of this resource.
    #[arg(long)]
    resource: Option<String>,
    /// At most this many objects.
    #[arg(long)]
    limit: Option<usize>,
    /// Continue a paged answer.
    #[arg(long = "continue")]
    continue_token: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `managers`.
#[derive(Debug, Args)]
pub struct ManagersArgs {
    /// Only objects of this resource.
    #[arg(long)]
    resource: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of `release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The field manager whose ownership goes.
    manager: String,
    /// Only objects of this resource.
    #[arg(long)]
    resource: Option<String>,
    /// Only objects matching this label selector.
    #[arg(short = 'l', long)]
    selector: Option<String>,
}

/// `manager (Operation) 5m ago, rv 7` of a record carrying an attribution.
fn who(a: &Value) -> String {
    let mut op = s(a, "operation").to_string();
    if !s(a, "subresource").is_empty() {
        op = format!("{op}/{}", s(a, "subresource"));
    }
    let manager = if s(a, "manager").is_empty() { "-" } else { s(a, "manager") };
    format!("{manager} ({op}) {} ago, rv {}", age(u(a, "unixMillis")), u(a, "revision"))
}

/// `blame`.
pub fn blame(store: &dyn Backend, a: &BlameArgs) -> Result<()> {
    let spec = store.find_type(&a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let lines = store.blame(ObjectKey::new(&spec.resource, ns.as_deref(), &a.name))?;
    if a.output != Output::Text {
        return print_value(&lines, a.output);
    }
    let obj = store.get(ObjectKey::new(&spec.resource, ns.as_deref(), &a.name), None)?;
    write_stdout(render_blame(&obj, &lines).as_bytes())
}

/// The text of `blame`: the object (without `managedFields`) as YAML, each field annotated
/// with its last change from `lines` (the blame answer: one record per leaf field).
pub(super) fn render_blame(obj: &Value, lines: &Value) -> String {
    let mut obj = obj.clone();
    if let Some(Value::Object(m)) = obj.get_mut("metadata") {
        m.remove("managedFields");
    }
    let notes: HashMap<&str, &Value> = lines.as_array().into_iter().flatten().map(|l| (s(l, "pointer"), l)).collect();
    let mut rows: Vec<(String, String)> = Vec::new();
    yaml(&obj, "", "", &notes, &mut rows);
    let width = rows.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0).min(80);
    let mut out = String::new();
    for (line, note) in rows {
        out.push_str(&line);
        if !note.is_empty() {
            let pad = width.saturating_sub(line.chars().count());
            out.push_str(&" ".repeat(pad + 2));
            out.push_str("# ");
            out.push_str(&note);
        }
        out.push('\n');
    }
    out
}

fn note(notes: &HashMap<&str, &Value>, pointer: &str) -> String {
    match notes.get(pointer) {
        Some(l) if l.get("revision").is_some() => who(l),
        Some(_) => "(before retained history)".into(),
        None => String::new(),
    }
}

fn is_inline(v: &Value, pointer: &str, notes: &HashMap<&str, &Value>) -> bool {
    match v {
        Value::Object(m) => m.is_empty() || notes.contains_key(pointer),
        Value::Array(a) => a.is_empty() || notes.contains_key(pointer),
        _ => true,
    }
}

/// Emits `v` as YAML lines (block style, JSON scalars), each with the note of its leaf.
/// `first` prefixes the first line (a list item's `- `), `indent` the others.
fn yaml(v: &Value, indent: &str, pointer: &str, notes: &HashMap<&str, &Value>, rows: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                let key = serde_json::to_string(k).unwrap_or_default();
                let key = if k.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) && !k.is_empty() { k.clone() } else { key };
                if is_inline(child, &p, notes) {
                    rows.push((format!("{indent}{key}: {}", scalar(child)), note(notes, &p)));
                } else {
                    rows.push((format!("{indent}{key}:"), note(notes, &p)));
                    yaml(child, &format!("{indent}  "), &p, notes, rows);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let p = format!("{pointer}/{i}");
                if is_inline(item, &p, notes) {
                    rows.push((format!("{indent}- {}", scalar(item)), note(notes, &p)));
                } else {
                    let start = rows.len();
                    yaml(item, &format!("{indent}  "), &p, notes, rows);
                    if let Some((line, _)) = rows.get_mut(start) {
                        line.replace_range(indent.len()..indent.len() + 2, "- ");
                    }
                }
            }
        }
        other => rows.push((format!("{indent}{}", scalar(other)), note(notes, pointer))),
    }
}

/// `history`.
pub fn history(store: &dyn Backend, a: &HistoryArgs) -> Result<()> {
    let spec = store.find_type(&a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let q = HistoryQuery { limit: a.limit, before_revision: a.before_revision.map(Revision), ..HistoryQuery::default() };
    let t = store.field_history(ObjectKey::new(&spec.resource, ns.as_deref(), &a.name), &a.path, &q)?;
    if a.output != Output::Text {
        return print_value(&t, a.output);
    }
    write_stdout(render_history(&t).as_bytes())
}

/// The text of `history`: one line per change of a field timeline, newest first.
pub(super) fn render_history(t: &Value) -> String {
    let mut out = String::from("REVISION\tAGE\tMANAGER\tOPERATION\tCHANGE\tPATH\tBEFORE\tAFTER\n");
    let show = |v: Option<&Value>| v.map_or_else(|| "-".to_string(), scalar);
    for e in t["events"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            u(e, "revision"),
            age(u(e, "unixMillis")),
            if s(e, "manager").is_empty() { "-" } else { s(e, "manager") },
            s(e, "operation"),
            s(e, "change"),
            s(e, "path"),
            show(e.get("before")),
            show(e.get("after"))
        ));
    }
    if let Some(next) = t.get("nextBeforeRevision").and_then(Value::as_u64) {
        out.push_str(&format!("# more: --before-revision {next}\n"));
    }
    out
}

/// `log`.
pub fn log(store: &dyn Backend, a: &LogArgs) -> Result<()> {
    let spec = store.find_type(&a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let entries = store.object_log(ObjectKey::new(&spec.resource, ns.as_deref(), &a.name), a.limit)?;
    if a.output != Output::Text {
        return print_value(&entries, a.output);
    }
    write_stdout(render_log(&entries).as_bytes())
}

/// The text of `log`: one line per write of the object, newest first.
pub(super) fn render_log(entries: &Value) -> String {
    let mut out = String::from("REVISION\tAGE\tEVENT\tMANAGER\tOPERATION\tFIELDS\tNOTE\n");
    for e in entries.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            u(e, "revision"),
            age(u(e, "unixMillis")),
            s(e, "event"),
            s(e, "manager"),
            s(e, "operation"),
            u(e, "changedFields"),
            s(e, "note")
        ));
    }
    out
}

/// `owners`.
pub fn owners(store: &dyn Backend, a: &OwnersArgs) -> Result<()> {
    let spec = store.find_type(&a.resource)?;
    let owners = store.owners_of(&spec.resource, &a.path)?;
    if a.output != Output::Text {
        return print_value(&owners, a.output);
    }
    write_stdout(render_owners(&owners).as_bytes())
}

/// The text of `owners`: one line per object and manager owning the path.
pub(super) fn render_owners(owners: &Value) -> String {
    let mut out = String::from("NAMESPACE\tNAME\tMANAGER\tPATH\n");
    for o in owners.as_array().into_iter().flatten() {
        out.push_str(&format!("{}\t{}\t{}\t{}\n", s(o, "namespace"), s(o, "name"), s(o, "manager"), s(o, "path")));
    }
    out
}

/// `managed-by`.
pub fn managed_by(store: &dyn Backend, a: &ManagedByArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| store.find_type(r)).transpose()?.map(|t| t.resource);
    let page = store.objects_managed_by(&a.manager, resource.as_deref(), a.limit, a.continue_token.as_deref())?;
    if a.output != Output::Text {
        return print_value(&page, a.output);
    }
    write_stdout(render_managed_by(&page).as_bytes())
}

/// The text of `managed-by`: one line per object of a page of the manager's objects.
pub(super) fn render_managed_by(page: &Value) -> String {
    let mut out = String::from("RESOURCE\tNAMESPACE\tNAME\tOPERATIONS\tFIELDS\n");
    for o in page["items"].as_array().into_iter().flatten() {
        let ops: Vec<&str> = o["operations"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            s(o, "resource"),
            s(o, "namespace"),
            s(o, "name"),
            ops.join(","),
            u(o, "fieldCount")
        ));
    }
    if let Some(t) = page.get("continue").and_then(Value::as_str) {
        out.push_str(&format!("# more: --continue {t}\n"));
    }
    out
}

/// `managers`.
pub fn managers(store: &dyn Backend, a: &ManagersArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| store.find_type(r)).transpose()?.map(|t| t.resource);
    let managers = store.managers(resource.as_deref())?;
    if a.output != Output::Text {
        return print_value(&managers, a.output);
    }
    write_stdout(render_managers(&managers).as_bytes())
}

/// The text of `managers`: one line per field manager with its counts.
pub(super) fn render_managers(managers: &Value) -> String {
    let mut out = String::from("MANAGER\tOBJECTS\tFIELDS\n");
    for m in managers.as_array().into_iter().flatten() {
        out.push_str(&format!("{}\t{}\t{}\n", s(m, "manager"), u(m, "objects"), u(m, "fields")));
    }
    out
}

/// `rename-manager`.
pub fn rename_manager(store: &dyn Backend, from: &str, to: &str) -> Result<()> {
    let n = store.rename_manager(from, to)?;
    write_stdout(format!("renamed {from:?} to {to:?} in {n} objects\n").as_bytes())
}

/// `release`.
pub fn release(store: &dyn Backend, a: &ReleaseArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| store.find_type(r)).transpose()?.map(|t| t.resource);
    let n = store.release(&a.manager, resource.as_deref(), a.selector.as_deref())?;
    write_stdout(format!("released {:?} from {n} objects\n", a.manager).as_bytes())
}
