//! History and ownership verbs: `blame`, `history`, `log`, `owners`, `managed-by`, `managers`,
//! `rename-manager`, `release`. Paths are written as Kubernetes prints them
//! (`.spec.containers[name="nginx"].image`).

use super::store::{namespace_for, print_value, resolve, Output};
use super::{write_stdout, Result};
use clap::Args;
use fieldstore_engine::store::{Attribution, BlameLine, HistoryQuery, Store};
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

/// `5s`, `3m`, `2h`, `4d`: how long ago `unix_millis` was.
fn age(unix_millis: u64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let s = now.saturating_sub(unix_millis) / 1000;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

fn who(a: &Attribution) -> String {
    let mut op = a.operation.clone();
    if !a.subresource.is_empty() {
        op = format!("{op}/{}", a.subresource);
    }
    format!("{} ({op}) {} ago, rv {}", if a.manager.is_empty() { "-" } else { &a.manager }, age(a.unix_millis), a.revision)
}

/// `blame`.
pub fn blame(store: &Store, a: &BlameArgs) -> Result<()> {
    let spec = resolve(store, &a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let lines = store.blame(&spec.resource(), ns.as_deref(), &a.name)?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&lines).unwrap_or(Value::Null), a.output);
    }
    let mut obj = store.get(&spec.resource(), ns.as_deref(), &a.name, &Default::default())?;
    if let Some(Value::Object(m)) = obj.get_mut("metadata") {
        m.remove("managedFields");
    }
    let notes: HashMap<&str, &BlameLine> = lines.iter().map(|l| (l.pointer.as_str(), l)).collect();
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
    write_stdout(out.as_bytes())
}

fn note(notes: &HashMap<&str, &BlameLine>, pointer: &str) -> String {
    match notes.get(pointer) {
        Some(l) => match &l.last_change {
            Some(a) => who(a),
            None => "(before retained history)".into(),
        },
        None => String::new(),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        _ => serde_json::to_string(v).unwrap_or_default(),
    }
}

fn is_inline(v: &Value, pointer: &str, notes: &HashMap<&str, &BlameLine>) -> bool {
    match v {
        Value::Object(m) => m.is_empty() || notes.contains_key(pointer),
        Value::Array(a) => a.is_empty() || notes.contains_key(pointer),
        _ => true,
    }
}

/// Emits `v` as YAML lines (block style, JSON scalars), each with the note of its leaf.
/// `first` prefixes the first line (a list item's `- `), `indent` the others.
fn yaml(v: &Value, indent: &str, pointer: &str, notes: &HashMap<&str, &BlameLine>, rows: &mut Vec<(String, String)>) {
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
pub fn history(store: &Store, a: &HistoryArgs) -> Result<()> {
    let spec = resolve(store, &a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let q = HistoryQuery { limit: a.limit, before_revision: a.before_revision, ..HistoryQuery::default() };
    let t = store.field_history(&spec.resource(), ns.as_deref(), &a.name, &a.path, &q)?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&t).unwrap_or(Value::Null), a.output);
    }
    let mut out = String::from("REVISION\tAGE\tMANAGER\tOPERATION\tCHANGE\tPATH\tBEFORE\tAFTER\n");
    let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "-".to_string(), scalar);
    for e in &t.events {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            e.by.revision,
            age(e.by.unix_millis),
            if e.by.manager.is_empty() { "-" } else { &e.by.manager },
            e.by.operation,
            e.change.as_str(),
            e.path,
            show(&e.before),
            show(&e.after)
        ));
    }
    if let Some(next) = t.next_before_revision {
        out.push_str(&format!("# more: --before-revision {next}\n"));
    }
    write_stdout(out.as_bytes())
}

/// `log`.
pub fn log(store: &Store, a: &LogArgs) -> Result<()> {
    let spec = resolve(store, &a.resource)?;
    let ns = namespace_for(&spec, a.namespace.as_deref(), None);
    let entries = store.object_log(&spec.resource(), ns.as_deref(), &a.name, a.limit)?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&entries).unwrap_or(Value::Null), a.output);
    }
    let mut out = String::from("REVISION\tAGE\tEVENT\tMANAGER\tOPERATION\tFIELDS\tNOTE\n");
    for e in &entries {
        out.push_str(&format!("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", e.by.revision, age(e.by.unix_millis), e.event, e.by.manager, e.by.operation, e.changed_fields, e.note));
    }
    write_stdout(out.as_bytes())
}

/// `owners`.
pub fn owners(store: &Store, a: &OwnersArgs) -> Result<()> {
    let spec = resolve(store, &a.resource)?;
    let owners = store.owners_of(&spec.resource(), &a.path)?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&owners).unwrap_or(Value::Null), a.output);
    }
    let mut out = String::from("NAMESPACE\tNAME\tMANAGER\tPATH\n");
    for o in &owners {
        out.push_str(&format!("{}\t{}\t{}\t{}\n", o.namespace, o.name, o.manager, o.path));
    }
    write_stdout(out.as_bytes())
}

/// `managed-by`.
pub fn managed_by(store: &Store, a: &ManagedByArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| resolve(store, r)).transpose()?.map(|s| s.resource());
    let objects = store.objects_managed_by(&a.manager, resource.as_deref(), a.limit)?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&objects).unwrap_or(Value::Null), a.output);
    }
    let mut out = String::from("RESOURCE\tNAMESPACE\tNAME\tOPERATIONS\tFIELDS\n");
    for o in &objects {
        out.push_str(&format!("{}\t{}\t{}\t{}\t{}\n", o.resource, o.namespace, o.name, o.operations.join(","), o.field_count));
    }
    write_stdout(out.as_bytes())
}

/// `managers`.
pub fn managers(store: &Store, a: &ManagersArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| resolve(store, r)).transpose()?.map(|s| s.resource());
    let managers = store.managers(resource.as_deref())?;
    if a.output != Output::Text {
        return print_value(&serde_json::to_value(&managers).unwrap_or(Value::Null), a.output);
    }
    let mut out = String::from("MANAGER\tOBJECTS\tFIELDS\n");
    for m in &managers {
        out.push_str(&format!("{}\t{}\t{}\n", m.manager, m.objects, m.fields));
    }
    write_stdout(out.as_bytes())
}

/// `rename-manager`.
pub fn rename(store: &Store, from: &str, to: &str) -> Result<()> {
    let n = store.rename_manager(from, to)?;
    write_stdout(format!("renamed {from:?} to {to:?} in {n} objects\n").as_bytes())
}

/// `release`.
pub fn release(store: &Store, a: &ReleaseArgs) -> Result<()> {
    let resource = a.resource.as_deref().map(|r| resolve(store, r)).transpose()?.map(|s| s.resource());
    let n = store.release(&a.manager, resource.as_deref(), a.selector.as_deref())?;
    write_stdout(format!("released {:?} from {n} objects\n", a.manager).as_bytes())
}
