//! Command-line interface: the argument grammar, the dispatch of every command and the exit-code
//! policy.
//!
//! Every subcommand reads its input from stdin and writes its result to stdout. Failures print a
//! single `error: <message>` line on stderr and exit with status 2; nothing panics on bad
//! input.
//!
//! The modules form layers, each using only the layers before it: `error` (why a command fails)
//! ← `stdio` (stdin, input files, stdout) ← `output` (`-o` formats, tables, ages) ← `backend`
//! (where the store verbs run) ← the commands (`store`, `provenance`, `watch`; `envelope`,
//! `fields`, `patch_local`, `replay`, `kubeconfig`) ← this module. [`plugin`] is the
//! `kubectl-fieldstore` binary's entry point; it prints with `provenance`'s renderers.

mod backend;
mod envelope;
mod error;
mod fields;
mod import;
mod kubeconfig;
mod output;
mod patch_local;
pub mod plugin;
mod provenance;
mod replay;
mod stdio;
mod store;
mod watch;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::location::Location;
use backend::{Backend, Remote};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use error::{CliError, Result};
use fieldstore_engine::store::Options;
use output::Output;
use provenance::{BlameArgs, HistoryArgs, LogArgs, ManagedByArgs, ManagersArgs, OwnersArgs, ReleaseArgs};
use store::{DeleteArgs, GetArgs, ListArgs, PatchArgs, TypesCommand, WriteArgs};
use watch::WatchArgs;

/// Exit status for bad input or failed I/O; clap uses the same status for usage errors.
const EXIT_FAILURE: u8 = 2;

/// fieldstore: an embedded storage engine for Kubernetes-style control planes.
#[derive(Debug, Parser)]
#[command(name = "fieldstore", version, about)]
struct Cli {
    /// The data directory of the store verbs (created when missing).
    #[arg(long, global = true, env = "FIELDSTORE_DATA", default_value = "./fieldstore-data")]
    data: PathBuf,
    /// Keep the store in this etcd cluster (client URLs, comma-separated) instead of a data
    /// directory; several servers may share it.
    #[arg(long, global = true, env = "FIELDSTORE_ETCD", value_name = "URL,URL,…")]
    etcd: Option<String>,
    /// The key prefix of the store in etcd.
    #[arg(long, global = true, env = "FIELDSTORE_ETCD_PREFIX", default_value = crate::location::DEFAULT_ETCD_PREFIX)]
    etcd_prefix: String,
    /// Run the store verbs against this server (`host:port`) instead of a data directory.
    #[arg(long, global = true, env = "FIELDSTORE_SERVER")]
    server: Option<String>,
    /// Bearer token for `--server`.
    #[arg(long, global = true, env = "FIELDSTORE_TOKEN")]
    token: Option<String>,
    /// The certificate (PEM) to trust for an `https://` server.
    #[arg(long, global = true, env = "FIELDSTORE_TLS_CA")]
    tls_ca: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Kubernetes protobuf envelopes (`k8s\x00` + runtime.Unknown).
    #[command(subcommand)]
    Envelope(envelope::EnvelopeCommand),
    /// FieldsV1 field sets.
    #[command(subcommand)]
    Fields(fields::FieldsCommand),
    /// Replay a Server-Side Apply scenario (structured-merge-diff oracle format) from stdin.
    Replay,
    /// Apply a patch to an object, or compute one, without storage (JSON on stdin and stdout).
    PatchLocal(patch_local::PatchLocalArgs),
    /// Serve the store over gRPC (health, reflection; see `proto/fieldstore/v1/store.proto`).
    // Boxed: the largest arguments by far (clippy's large_enum_variant).
    Serve(Box<crate::serve::ServeArgs>),
    /// Print a kubeconfig for a running server's Kubernetes API (`--server URL`, default
    /// http://127.0.0.1:7701; `--token T`; `--tls-ca FILE` for https).
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// Import every object a kube-apiserver stored in its etcd into the store (`--data DIR` or
    /// `--etcd URLS`): uid, creationTimestamp, generation, managedFields and status kept.
    Import(import::ImportArgs),
    /// Store verbs, run in-process on the data directory (`--data DIR`).
    #[command(flatten)]
    Store(StoreCommand),
}

/// A store verb.
#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Resource types: register a CustomResourceDefinition, or list the registered types.
    #[command(subcommand)]
    Types(TypesCommand),
    /// Server-side apply objects (creating them when absent).
    Apply(WriteArgs),
    /// Create objects.
    Create(WriteArgs),
    /// Replace objects (a `metadata.resourceVersion` in the file is a precondition).
    Replace(WriteArgs),
    /// Patch one object.
    Patch(PatchArgs),
    /// Print one object.
    Get(GetArgs),
    /// List objects of a resource.
    List(ListArgs),
    /// Delete one object (with finalizers: mark it for deletion).
    Delete(DeleteArgs),
    /// Compact history before a revision (default: the current revision).
    Compact {
        /// The revision; history before it is discarded.
        revision: Option<u64>,
    },
    /// Print the current revision.
    Revision,
    /// The object annotated with the last change of every field (manager, operation, age).
    Blame(BlameArgs),
    /// The timeline of a field or subtree, newest first.
    History(HistoryArgs),
    /// Every write of an object that history holds, newest first.
    Log(LogArgs),
    /// Which objects have a field (or fields under a path) and who owns it in each.
    Owners(OwnersArgs),
    /// The objects a field manager owns fields of.
    ManagedBy(ManagedByArgs),
    /// Every field manager with counts of objects and fields.
    Managers(ManagersArgs),
    /// Rename a field manager across every object (an Update of each, recorded in history).
    RenameManager {
        /// The current name.
        from: String,
        /// The new name.
        to: String,
    },
    /// Drop a field manager's ownership from objects (fields keep their values).
    Release(ReleaseArgs),
    /// Watch a resource: one line per event (type, name, resourceVersion), or JSON events.
    Watch(WatchArgs),
    /// Make every open watch emit a bookmark at the current revision.
    RequestBookmark,
}

impl StoreCommand {
    /// The output format the command asked for (errors are printed in it too).
    fn output(&self) -> Output {
        match self {
            StoreCommand::Types(TypesCommand::List { output }) => *output,
            StoreCommand::Apply(a) | StoreCommand::Create(a) | StoreCommand::Replace(a) => a.common.output,
            StoreCommand::Patch(a) => a.common.output,
            StoreCommand::Get(a) => a.output,
            StoreCommand::List(a) => a.output,
            StoreCommand::Delete(a) => a.output,
            StoreCommand::Blame(a) => a.output,
            StoreCommand::History(a) => a.output,
            StoreCommand::Log(a) => a.output,
            StoreCommand::Owners(a) => a.output,
            StoreCommand::ManagedBy(a) => a.output,
            StoreCommand::Managers(a) => a.output,
            StoreCommand::Watch(a) => a.output,
            _ => Output::Text,
        }
    }
}

/// Parses the arguments, runs the command and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    crate::serve::without_huge_pages();
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // `kubeconfig` takes `--server` from the command line only: FIELDSTORE_SERVER names the
    // gRPC address, not the HTTP API's.
    let server_flag = (matches.value_source("server") == Some(ValueSource::CommandLine)).then(|| cli.server.clone()).flatten();
    let mut output = None;
    let outcome = match cli.command {
        Command::Envelope(command) => envelope::run(command),
        Command::Fields(command) => fields::run(command),
        Command::Replay => replay::run(),
        Command::PatchLocal(args) => patch_local::run(args),
        Command::Serve(args) => crate::serve::run(&Location::new(cli.data, cli.etcd.as_deref(), &cli.etcd_prefix), &args)
            .map_err(|e| CliError::Usage(e.to_string())),
        Command::Kubeconfig(args) => kubeconfig::run(&args, server_flag.as_deref(), cli.token.as_deref(), cli.tls_ca.as_deref()),
        Command::Import(args) => {
            output = Some(Output::Text);
            match cli.server {
                Some(_) => Err(CliError::Usage(
                    "import writes in-process to --data DIR or --etcd URLS, not through --server (or FIELDSTORE_SERVER)".into(),
                )),
                None => import::run(&Location::new(cli.data, cli.etcd.as_deref(), &cli.etcd_prefix), &args),
            }
        }
        Command::Store(command) => {
            output = Some(command.output());
            let target = match cli.server {
                Some(addr) => Target::Server(addr, cli.token, cli.tls_ca),
                None => Target::Data(Location::new(cli.data, cli.etcd.as_deref(), &cli.etcd_prefix)),
            };
            run(&target, command)
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`fieldstore … | head`) means the reader has all it wants.
        Err(CliError::WriteOutput(err)) if err.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::ReplayFatal(msg)) => {
            // The oracle's format: one JSON line on stdout, exit status 1.
            println!("{}", serde_json::json!({ "fatal": msg }));
            ExitCode::from(1)
        }
        // A store verb failed: the Kubernetes Status, as JSON with `-o json`, exit status 1.
        // The data directory is a running server's: point at the way to reach it.
        Err(CliError::Engine(err @ fieldstore_engine::Error::InUse { .. })) if output.is_some() => {
            let mut status = err.to_status();
            status["message"] = serde_json::Value::String(format!("{err}; stop it, or run the command against it with --server ADDR"));
            api_error(&status, output)
        }
        Err(CliError::Engine(err)) if output.is_some() => api_error(&err.to_status(), output),
        // An object the store refused: named by its etcd key, exit status 1 as a failed store verb.
        Err(err @ CliError::ImportRefused { .. }) => {
            eprintln!("error: {}", one_line(&err.to_string()));
            ExitCode::from(1)
        }
        Err(CliError::Api(status)) => api_error(&status, output),
        Err(err) => {
            eprintln!("error: {}", one_line(&err.to_string()));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Where the verbs run.
#[derive(Debug, Clone)]
enum Target {
    /// In-process on a data directory or an etcd cluster.
    Data(Location),
    /// Against a server, with an optional bearer token and CA certificate (for https).
    Server(String, Option<String>, Option<PathBuf>),
}

/// Opens the data directory (or connects to the server) and runs the verb.
fn run(target: &Target, command: StoreCommand) -> Result<()> {
    match target {
        Target::Data(data) => {
            // The CLI is short-lived: no background compaction.
            let options = Options::default().retention(None).keep_revisions(None);
            let store = data.open(options)?;
            run_on(&backend::Local::new(store)?, command)
        }
        Target::Server(addr, token, ca) => run_on(&Remote::connect(addr, token.as_deref(), ca.as_deref())?, command),
    }
}

/// Runs one store verb on a store, wherever it is.
fn run_on(backend: &dyn Backend, command: StoreCommand) -> Result<()> {
    match command {
        StoreCommand::Types(TypesCommand::Register { file }) => store::register_types(backend, &file),
        StoreCommand::Types(TypesCommand::List { output }) => store::list_types(backend, output),
        StoreCommand::Apply(a) => store::apply(backend, &a),
        StoreCommand::Create(a) => store::create(backend, &a),
        StoreCommand::Replace(a) => store::replace(backend, &a),
        StoreCommand::Patch(a) => store::patch(backend, &a),
        StoreCommand::Get(a) => store::get(backend, &a),
        StoreCommand::List(a) => store::list(backend, &a),
        StoreCommand::Delete(a) => store::delete(backend, &a),
        StoreCommand::Compact { revision } => store::compact(backend, revision),
        StoreCommand::Revision => store::revision(backend),
        StoreCommand::Blame(a) => provenance::blame(backend, &a),
        StoreCommand::History(a) => provenance::history(backend, &a),
        StoreCommand::Log(a) => provenance::log(backend, &a),
        StoreCommand::Owners(a) => provenance::owners(backend, &a),
        StoreCommand::ManagedBy(a) => provenance::managed_by(backend, &a),
        StoreCommand::Managers(a) => provenance::managers(backend, &a),
        StoreCommand::RenameManager { from, to } => provenance::rename_manager(backend, &from, &to),
        StoreCommand::Release(a) => provenance::release(backend, &a),
        StoreCommand::Watch(a) => watch::watch(backend, &a),
        StoreCommand::RequestBookmark => watch::request_bookmark(backend),
    }
}

/// Prints a failed store verb's Kubernetes `Status`: as JSON with `-o json`, else one line
/// `error: Reason (code): message`; exit status 1.
fn api_error(status: &serde_json::Value, output: Option<Output>) -> ExitCode {
    if output == Some(Output::Json) {
        println!("{}", serde_json::to_string_pretty(status).unwrap_or_default());
    } else {
        let s = |k: &str| status.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
        let code = status.get("code").and_then(serde_json::Value::as_u64).unwrap_or(500);
        eprintln!("error: {} ({code}): {}", s("reason"), one_line(s("message")));
        // Apply conflicts: per field, who owns it, its live value and the value applied.
        for c in status.pointer("/details/causes").and_then(serde_json::Value::as_array).into_iter().flatten() {
            if c.get("reason").and_then(serde_json::Value::as_str) != Some("FieldManagerConflict") {
                continue;
            }
            let field = c.get("field").and_then(serde_json::Value::as_str).unwrap_or("");
            let owner = c.get("message").and_then(serde_json::Value::as_str).unwrap_or("").trim_start_matches("conflict with ");
            let show = |k: &str| c.get(k).map_or_else(|| "(none)".to_string(), |v| v.to_string());
            eprintln!("  {field}: owned by {owner}; live {}, applied {}", show("live"), show("applied"));
        }
    }
    ExitCode::from(1)
}

/// Keeps the promised single line even if a message embeds newlines.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_fields_convert() {
        let cli = Cli::try_parse_from(["fieldstore", "fields", "convert", "--from", "json", "--to", "binary"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Fields(fields::FieldsCommand::Convert { from: fields::Format::Json, to: fields::Format::Binary })
        ));
        assert!(Cli::try_parse_from(["fieldstore", "fields", "convert", "--from", "yaml", "--to", "json"]).is_err());
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
    }
}
