//! Object verbs: `types`, `apply`, `create`, `replace`, `patch`, `get`, `list`, `delete`, and the
//! revision verbs `compact` and `revision`.
//!
//! Objects are read from files or stdin (`-f -`) as JSON or YAML (several YAML documents are
//! applied one after another); the resource of an object comes from its `apiVersion` and `kind`.
//! Resources on the command line may be named by plural (`configmaps`), `plural.group`,
//! kind (`ConfigMap`, any case) or singular (`configmap`).

use super::backend::{namespace_for, Backend, WriteVerb, DEFAULT_MANAGER};
use super::error::{CliError, Result};
use super::output::{age_since, print_value, print_written, table, Output};
use super::stdio::{read_input, write_stdout};
use crate::api::{Collection, ObjectKey};
use clap::{Args, Subcommand, ValueEnum};
use fieldstore_engine::patch::PatchType;
use fieldstore_engine::store::{DeleteOptions, ListOptions, Revision, WriteOptions, DEFAULT_MAX_DEPTH};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `types` subcommands.
#[derive(Debug, Subcommand)]
pub enum TypesCommand {
    /// Register (or re-register) the types of CustomResourceDefinitions (apiextensions.k8s.io/v1,
    /// YAML or JSON).
    Register {
        /// The CRD file, `-` for stdin.
        #[arg(short = 'f', long = "filename")]
        file: PathBuf,
    },
    /// List the registered types.
    List {
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
        output: Output,
    },
}

/// Arguments of apply, create and replace.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The object file (JSON or YAML, several YAML documents allowed), `-` for stdin.
    #[arg(short = 'f', long = "filename")]
    file: PathBuf,
    /// Apply only: take conflicting fields from their managers.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    pub common: WriteFlags,
}

/// Flags every write verb takes.
#[derive(Debug, Args)]
pub struct WriteFlags {
    /// The field manager (required for apply; `fieldstore` otherwise).
    #[arg(long)]
    manager: Option<String>,
    /// Validate and merge, but persist nothing.
    #[arg(long)]
    dry_run: bool,
    /// The namespace (for objects that name none; default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Write through a subresource (`status`).
    #[arg(long)]
    subresource: Option<Subresource>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// A subresource a write can go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Subresource {
    /// The `status` subresource.
    Status,
}

/// Arguments of patch.
#[derive(Debug, Args)]
pub struct PatchArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The patch type.
    /// `strategic`, `merge`, `json` or `apply` (Server-Side Apply of the patch; give
    /// `--manager`).
    #[arg(long = "type", default_value = "strategic")]
    patch_type: PatchType,
    /// The patch (JSON or YAML).
    #[arg(short = 'p', long = "patch")]
    patch: String,
    #[command(flatten)]
    pub common: WriteFlags,
}

/// Arguments of get.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The object's namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Read at least at this resourceVersion.
    #[arg(long, conflicts_with = "at_revision")]
    resource_version: Option<String>,
    /// The object as it was at this revision (rebuilt from field history once compacted).
    #[arg(long)]
    at_revision: Option<u64>,
    /// Output format (default YAML).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
}

/// Arguments of list.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The resource.
    resource: String,
    /// The namespace (default `default`).
    #[arg(short = 'n', long, conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// List across all namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// At most this many objects; the output then carries a continue token.
    #[arg(long)]
    limit: Option<usize>,
    /// Continue a paged list.
    #[arg(long = "continue")]
    continue_token: Option<String>,
    /// The resourceVersion parameter (unset: latest; `0`: any; `N`: not older than N).
    #[arg(long)]
    resource_version: Option<String>,
    /// Label selector (`a=b,c!=d,e in (f,g),!h`).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Field selector (`metadata.name=x`, `metadata.namespace!=y`).
    #[arg(long)]
    field_selector: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Arguments of delete.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The resource.
    resource: String,
    /// The object's name.
    name: String,
    /// The object's namespace (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Only delete the object at this resourceVersion.
    #[arg(long)]
    resource_version: Option<String>,
    /// Validate, but persist nothing.
    #[arg(long)]
    dry_run: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// `types register`: registers the types of every CRD in the file.
pub fn register_types(store: &dyn Backend, file: &Path) -> Result<()> {
    let mut out = String::new();
    for doc in read_documents(file)? {
        let t = store.register_crd(&doc)?;
        out.push_str(&format!("registered {} ({} {})\n", t.resource, t.api_version, t.kind));
    }
    write_stdout(out.as_bytes())
}

/// `types list`: the registered types, as a table or as JSON or YAML.
pub fn list_types(store: &dyn Backend, output: Output) -> Result<()> {
    let types = store.types()?;
    match output {
        Output::Text => {
            let mut out = String::from("RESOURCE\tAPIVERSION\tKIND\tNAMESPACED\tSTATUS\n");
            for t in &types {
                out.push_str(&format!("{}\t{}\t{}\t{}\t{}\n", t.resource, t.api_version, t.kind, t.namespaced, t.status_subresource));
            }
            write_stdout(out.as_bytes())
        }
        _ => {
            let list: Vec<Value> = types
                .iter()
                .map(|t| serde_json::json!({"resource": t.resource, "apiVersion": t.api_version, "kind": t.kind, "namespaced": t.namespaced, "statusSubresource": t.status_subresource}))
                .collect();
            print_value(&Value::Array(list), output)
        }
    }
}

/// `apply`: server-side applies every object `-f` names.
pub fn apply(store: &dyn Backend, args: &WriteArgs) -> Result<()> {
    write_each(store, WriteVerb::Apply, args)
}

/// `create`: creates every object `-f` names.
pub fn create(store: &dyn Backend, args: &WriteArgs) -> Result<()> {
    write_each(store, WriteVerb::Create, args)
}

/// `replace`: replaces every object `-f` names.
pub fn replace(store: &dyn Backend, args: &WriteArgs) -> Result<()> {
    write_each(store, WriteVerb::Update, args)
}

/// `patch`: patches one object.
pub fn patch(store: &dyn Backend, args: &PatchArgs) -> Result<()> {
    let spec = store.find_type(&args.resource)?;
    let c = &args.common;
    let ns = namespace_for(&spec, c.namespace.as_deref(), None);
    let patch = parse_text(&args.patch)?;
    let patch_type = args.patch_type;
    let opts = WriteOptions::new(c.manager.clone().unwrap_or_else(|| DEFAULT_MANAGER.into()))
        .dry_run(c.dry_run)
        .status(c.subresource == Some(Subresource::Status));
    let out = store.patch(ObjectKey::new(&spec.resource, ns.as_deref(), &args.name), patch_type, &patch, &opts)?;
    print_written(&out, &spec.resource, "patched", c.dry_run, c.output)
}

/// `get`: prints one object (YAML unless `-o json`).
pub fn get(store: &dyn Backend, args: &GetArgs) -> Result<()> {
    let spec = store.find_type(&args.resource)?;
    let ns = namespace_for(&spec, args.namespace.as_deref(), None);
    let obj = match args.at_revision {
        Some(rev) => store.object_at(ObjectKey::new(&spec.resource, ns.as_deref(), &args.name), Revision(rev))?.ok_or_else(|| {
            fieldstore_engine::Error::NotFound { resource: spec.resource.clone(), name: format!("{} (at revision {rev})", args.name) }
        })?,
        None => store.get(ObjectKey::new(&spec.resource, ns.as_deref(), &args.name), args.resource_version.clone())?,
    };
    match args.output {
        Output::Text => print_value(&obj, Output::Yaml),
        o => print_value(&obj, o),
    }
}

/// `list`: a resource's objects, as kubectl's table or as the List object.
pub fn list(store: &dyn Backend, args: &ListArgs) -> Result<()> {
    let spec = store.find_type(&args.resource)?;
    let ns = if args.all_namespaces { None } else { namespace_for(&spec, args.namespace.as_deref(), None) };
    let opts = ListOptions {
        label_selector: args.selector.clone(),
        field_selector: args.field_selector.clone(),
        limit: args.limit,
        continue_token: args.continue_token.clone(),
        resource_version: args.resource_version.clone(),
        ..ListOptions::default()
    };
    let list = store.list(Collection::new(&spec.resource, ns.as_deref()), &opts)?;
    match args.output {
        Output::Text => {
            // kubectl's table: NAMESPACE (with -A), NAME, AGE, plus the resourceVersion.
            let mut rows = vec![Vec::new()];
            if ns.is_none() && spec.namespaced {
                rows[0].push("NAMESPACE".to_string());
            }
            rows[0].extend(["NAME", "AGE", "RESOURCEVERSION"].map(String::from));
            for item in list["items"].as_array().into_iter().flatten() {
                let m = |f: &str| item.pointer(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or("").to_string();
                let mut row = Vec::new();
                if ns.is_none() && spec.namespaced {
                    row.push(m("namespace"));
                }
                row.extend([m("name"), age_since(&m("creationTimestamp")), m("resourceVersion")]);
                rows.push(row);
            }
            let mut out = table(&rows);
            if rows.len() == 1 {
                out = format!("No resources found{}.\n", ns.as_deref().map(|n| format!(" in {n} namespace")).unwrap_or_default());
            }
            if let Some(token) = list.pointer("/metadata/continue").and_then(Value::as_str) {
                out.push_str(&format!("# more: --continue {token}\n"));
            }
            write_stdout(out.as_bytes())
        }
        o => print_value(&list, o),
    }
}

/// `delete`: deletes one object (with finalizers: marks it for deletion).
pub fn delete(store: &dyn Backend, args: &DeleteArgs) -> Result<()> {
    let spec = store.find_type(&args.resource)?;
    let ns = namespace_for(&spec, args.namespace.as_deref(), None);
    let opts = DeleteOptions { resource_version: args.resource_version.clone(), dry_run: args.dry_run, ..DeleteOptions::default() };
    let out = store.delete(ObjectKey::new(&spec.resource, ns.as_deref(), &args.name), &opts)?;
    let being_finalized = out.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    print_written(&out, &spec.resource, if being_finalized { "marked for deletion" } else { "deleted" }, args.dry_run, args.output)
}

/// `compact`: discards history before a revision.
pub fn compact(store: &dyn Backend, revision: Option<u64>) -> Result<()> {
    write_stdout(format!("compacted {}\n", store.compact(revision.map(Revision))?).as_bytes())
}

/// `revision`: prints the current revision.
pub fn revision(store: &dyn Backend) -> Result<()> {
    write_stdout(format!("{}\n", store.revision()?).as_bytes())
}

/// Applies, creates or replaces every object of the file, stopping at the first error.
fn write_each(store: &dyn Backend, verb: WriteVerb, args: &WriteArgs) -> Result<()> {
    let c = &args.common;
    let manager = match (&c.manager, verb) {
        (Some(m), _) => m.clone(),
        (None, WriteVerb::Apply) => return Err(CliError::Usage("apply needs --manager NAME (the field manager)".into())),
        (None, _) => DEFAULT_MANAGER.into(),
    };
    let opts = WriteOptions::new(manager).dry_run(c.dry_run).force(args.force).status(c.subresource == Some(Subresource::Status));
    let files = object_files(&args.file)?;
    let mut docs = Vec::new();
    for f in &files {
        docs.extend(read_documents(f)?);
    }
    if docs.is_empty() {
        return Err(CliError::Usage(format!("{} holds no object", args.file.display())));
    }
    let progress = Progress::new(docs.len(), files.len() > 1);
    for (i, doc) in docs.into_iter().enumerate() {
        progress.show(i);
        let spec = store.type_of(&doc)?;
        let ns = namespace_for(&spec, c.namespace.as_deref(), doc.pointer("/metadata/namespace").and_then(Value::as_str));
        let before = if verb == WriteVerb::Apply { store.revision()? } else { Revision(0) };
        let out = store.write(verb, Collection::new(&spec.resource, ns.as_deref()), &doc, &opts)?;
        let what = match verb {
            WriteVerb::Apply => {
                let rv = out.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse::<u64>().ok()).map(Revision);
                if c.dry_run || rv.is_some_and(|r| r > before) {
                    "applied"
                } else {
                    "unchanged"
                }
            }
            WriteVerb::Create => "created",
            WriteVerb::Update => "replaced",
        };
        print_written(&out, &spec.resource, what, c.dry_run, c.output)?;
    }
    Ok(())
}

/// A patch given on the command line: JSON, or YAML.
fn parse_text(text: &str) -> Result<Value> {
    use fieldstore_codec::document::{parse, Syntax};
    parse(text.as_bytes(), Syntax::Yaml, DEFAULT_MAX_DEPTH)
        .map(|d| d.value)
        .map_err(|e| CliError::Usage(format!("the patch is neither JSON nor YAML: {e}")))
}

/// The files `-f` names: the file itself, or the `.yaml`, `.yml` and `.json` files of a
/// directory in name order.
fn object_files(path: &Path) -> Result<Vec<std::path::PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let read_err = |source| CliError::ReadFile { path: path.display().to_string(), source };
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")))
        .collect();
    files.sort();
    Ok(files)
}

/// A progress bar on stderr for writes of many objects, shown only on a terminal.
struct Progress {
    total: usize,
    on: bool,
}

impl Progress {
    fn new(total: usize, many_files: bool) -> Self {
        use std::io::IsTerminal;
        Progress { total, on: many_files && total > 1 && std::io::stderr().is_terminal() }
    }

    fn show(&self, done: usize) {
        if !self.on {
            return;
        }
        let width = 30;
        let filled = done * width / self.total.max(1);
        eprint!("\r[{}{}] {done}/{} objects", "#".repeat(filled), ".".repeat(width - filled), self.total);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.on {
            eprintln!("\r[{}] {}/{} objects", "#".repeat(30), self.total, self.total);
        }
    }
}

/// The objects of a file: one JSON document, one or more YAML documents, or a Kubernetes
/// protobuf envelope (`k8s\x00`, as `get -o protobuf` writes and kube-apiserver stores).
fn read_documents(file: &Path) -> Result<Vec<Value>> {
    let bytes = read_input(file)?;
    if bytes.starts_with(&fieldstore_codec::envelope::MAGIC) {
        let v =
            fieldstore_codec::k8s_protobuf::object_of_envelope(&bytes).map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))?;
        return Ok(list_items(v));
    }
    let docs = fieldstore_codec::document::parse_stream(&bytes, DEFAULT_MAX_DEPTH)
        .map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))?;
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{') | Some(b'[')) {
        return Ok(docs.into_iter().flat_map(|d| list_items(d.value)).collect());
    }
    Ok(docs.into_iter().map(|d| d.value).collect())
}

/// The objects of a document: a JSON array's elements, a List's items, or the object itself.
fn list_items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        v if v.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) && v.get("items").is_some() => {
            v.get("items").and_then(Value::as_array).cloned().unwrap_or_default()
        }
        v => vec![v],
    }
}
