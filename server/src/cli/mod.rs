//! Command-line interface: the argument grammar and the exit-code policy.
//!
//! Every subcommand reads its input from stdin and writes its result to stdout. Failures print a
//! single `error: <message>` line on stderr and exit with [`EXIT_FAILURE`]; nothing panics on bad
//! input.

mod backend;
mod envelope;
mod error;
mod fields;
mod output;
mod patch_local;
mod provenance;
mod replay;
mod stdio;
mod store;
mod watch;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use error::CliError;
use output::Output;

/// Exit status for bad input or failed I/O; clap uses the same status for usage errors.
const EXIT_FAILURE: u8 = 2;

/// fieldstore: an embedded storage engine for Kubernetes-style control planes.
#[derive(Debug, Parser)]
#[command(name = "fieldstore", version, about)]
struct Cli {
    /// The data directory of the store verbs (created when missing).
    #[arg(long, global = true, env = "FIELDSTORE_DATA", default_value = "./fieldstore-data")]
    data: PathBuf,
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
    Serve(crate::serve::ServeArgs),
    /// Store verbs, run in-process on the data directory (`--data DIR`).
    #[command(flatten)]
    Store(store::StoreCommand),
}

/// Parses the arguments, runs the command and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut output = None;
    let outcome = match cli.command {
        Command::Envelope(command) => envelope::run(command),
        Command::Fields(command) => fields::run(command),
        Command::Replay => replay::run(),
        Command::PatchLocal(args) => patch_local::run(args),
        Command::Serve(args) => crate::serve::run(&cli.data, &args).map_err(|e| CliError::Usage(e.to_string())),
        Command::Store(command) => {
            output = Some(command.output());
            let target = match cli.server {
                Some(addr) => store::Target::Server(addr, cli.token, cli.tls_ca),
                None => store::Target::Data(cli.data),
            };
            store::run(&target, command)
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`fieldstore … | head`) means the reader has all it wants.
        Err(CliError::WriteOutput(err)) if err.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(CliError::ReplayFatal(msg)) => {
            // The oracle's format: one JSON line on stdout, exit status 1.
            println!("{}", serde_json::json!({ "fatal": msg }));
            ExitCode::from(1)
        }
        // A store verb failed: the Kubernetes Status, as JSON with `-o json`, exit status 1.
        Err(CliError::Engine(err)) if output.is_some() => api_error(&err.to_status(), output),
        Err(CliError::Api(status)) => api_error(&status, output),
        Err(err) => {
            eprintln!("error: {}", one_line(&err.to_string()));
            ExitCode::from(EXIT_FAILURE)
        }
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
            if c.get("type").and_then(serde_json::Value::as_str) != Some("FieldManagerConflict") {
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
        let cli = Cli::try_parse_from([
            "fieldstore",
            "fields",
            "convert",
            "--from",
            "json",
            "--to",
            "binary",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Fields(fields::FieldsCommand::Convert {
                from: fields::Format::Json,
                to: fields::Format::Binary
            })
        ));
        assert!(Cli::try_parse_from([
            "fieldstore",
            "fields",
            "convert",
            "--from",
            "yaml",
            "--to",
            "json"
        ])
        .is_err());
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b\tc"), "a b c");
    }
}
