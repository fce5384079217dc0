//! `kubectl fieldstore`: the kubectl plugin (the `kubectl-fieldstore` binary, installed next to
//! `fieldstore`) that shows fieldstore's field history and owner index through the server's
//! HTTP API, reaching it as kubectl does — from the kubeconfig (see `config`).
//!
//! ```text
//! kubectl fieldstore blame deploy web             # GET {object}/blame (+ the object)
//! kubectl fieldstore history cm x --path .data.a  # GET {object}/history?path=.data.a
//! kubectl fieldstore log cm x                     # GET {object}/log
//! kubectl fieldstore owners deploy --path .spec.replicas
//! kubectl fieldstore managers [--resource R]
//! kubectl fieldstore managed-by kubectl-client-side-apply [--resource R]
//! ```
//!
//! Resource names resolve through the server's discovery (`resolve`); the answers print as the
//! `fieldstore` verbs of the same names print them (`-o json|yaml` for the raw answer), and
//! failures as `error: Reason (code): message` with exit status 1.

mod client;
mod config;
mod resolve;

use super::error::{CliError, Result};
use super::output::{print_value, Output};
use super::provenance::{render_blame, render_history, render_log, render_managed_by, render_managers, render_owners};
use super::stdio::write_stdout;
use clap::{Parser, Subcommand};
use client::Client;
use config::Target;
use resolve::ApiResource;
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;

/// fieldstore's field history and owner index, for kubectl: `kubectl fieldstore blame deploy web`.
#[derive(Debug, Parser)]
#[command(name = "kubectl fieldstore", version, about)]
struct PluginCli {
    /// The kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, global = true)]
    context: Option<String>,
    /// The namespace (default: the context's, else `default`).
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,
    /// Output format: the table as text, or the server's answer as JSON or YAML.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text, global = true)]
    output: Output,
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// The object annotated with the last change of every field (manager, operation, age).
    Blame {
        /// The resource (`deploy`, `configmaps`, `widgets.example.com`) or `RESOURCE/NAME`.
        resource: String,
        /// The object's name.
        name: Option<String>,
    },
    /// The timeline of a field or subtree, newest first.
    History {
        /// The resource or `RESOURCE/NAME`.
        resource: String,
        /// The object's name.
        name: Option<String>,
        /// The field or subtree (`.data.a`, `.spec.containers[name="app"].image`).
        #[arg(long)]
        path: String,
        /// At most this many changes.
        #[arg(long)]
        limit: Option<u64>,
        /// Only changes before this revision (the next page's start).
        #[arg(long)]
        before_revision: Option<u64>,
    },
    /// Every write of an object that history holds, newest first.
    Log {
        /// The resource or `RESOURCE/NAME`.
        resource: String,
        /// The object's name.
        name: Option<String>,
        /// At most this many writes.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Which objects of a resource have a field (or fields under a path) and who owns it.
    Owners {
        /// The resource.
        resource: String,
        /// The field or subtree.
        #[arg(long)]
        path: String,
    },
    /// Every field manager with counts of objects and fields.
    Managers {
        /// Only objects of this resource.
        #[arg(long)]
        resource: Option<String>,
    },
    /// The objects a field manager owns fields of.
    ManagedBy {
        /// The field manager.
        manager: String,
        /// Only objects of this resource.
        #[arg(long)]
        resource: Option<String>,
        /// At most this many objects.
        #[arg(long)]
        limit: Option<u64>,
        /// Continue a paged answer.
        #[arg(long = "continue")]
        continue_token: Option<String>,
    },
}

/// The plugin's entry point: parses the arguments, runs the command, maps the outcome to an
/// exit code as `fieldstore` does.
pub fn main() -> ExitCode {
    let cli = PluginCli::parse();
    let output = cli.output;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::WriteOutput(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Api(status)) => super::api_error(&status, Some(output)),
        Err(e) => {
            eprintln!("error: {}", super::one_line(&e.to_string()));
            ExitCode::from(super::EXIT_FAILURE)
        }
    }
}

fn run(cli: PluginCli) -> Result<()> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let env = std::env::var("KUBECONFIG").ok();
    let files = config::files(cli.kubeconfig.as_deref(), env.as_deref(), home.as_deref());
    let target: Target = config::load(&files, cli.kubeconfig.is_some(), cli.context.as_deref())?;
    let namespace = cli.namespace.clone().or_else(|| target.namespace.clone()).unwrap_or_else(|| "default".into());
    let client = Client::new(&target)?;
    let session = Session { client, namespace, output: cli.output, resources: None };
    session.run(cli.command)
}

/// One invocation: the client, the namespace, the output format, discovery once needed.
struct Session {
    client: Client,
    namespace: String,
    output: Output,
    resources: Option<Vec<ApiResource>>,
}

/// fieldstore's own group, where the owner index is served.
const INDEX: &str = "/apis/fieldstore.io/v1";

impl Session {
    fn run(mut self, command: PluginCommand) -> Result<()> {
        match command {
            PluginCommand::Blame { resource, name } => {
                let path = self.object_path(&resource, name)?;
                let lines = self.client.get(&format!("{path}/blame"), &[])?;
                if self.output != Output::Text {
                    return print_value(&lines, self.output);
                }
                let obj = self.client.get(&path, &[])?;
                write_stdout(render_blame(&obj, &lines).as_bytes())
            }
            PluginCommand::History { resource, name, path, limit, before_revision } => {
                let object = self.object_path(&resource, name)?;
                let mut q = vec![("path", path)];
                q.extend(limit.map(|l| ("limit", l.to_string())));
                q.extend(before_revision.map(|b| ("beforeRevision", b.to_string())));
                let t = self.client.get(&format!("{object}/history"), &q)?;
                self.print(&t, render_history)
            }
            PluginCommand::Log { resource, name, limit } => {
                let object = self.object_path(&resource, name)?;
                let q: Vec<(&str, String)> = limit.map(|l| ("limit", l.to_string())).into_iter().collect();
                let entries = self.client.get(&format!("{object}/log"), &q)?;
                self.print(&entries, render_log)
            }
            PluginCommand::Owners { resource, path } => {
                let resource = self.resource(&resource)?.qualified();
                let owners = self.client.get(&format!("{INDEX}/owners"), &[("resource", resource), ("path", path)])?;
                self.print(&owners, render_owners)
            }
            PluginCommand::Managers { resource } => {
                let q: Vec<(&str, String)> = match resource {
                    Some(r) => vec![("resource", self.resource(&r)?.qualified())],
                    None => Vec::new(),
                };
                let managers = self.client.get(&format!("{INDEX}/managers"), &q)?;
                self.print(&managers, render_managers)
            }
            PluginCommand::ManagedBy { manager, resource, limit, continue_token } => {
                let mut q = vec![("manager", manager)];
                if let Some(r) = resource {
                    q.push(("resource", self.resource(&r)?.qualified()));
                }
                q.extend(limit.map(|l| ("limit", l.to_string())));
                q.extend(continue_token.map(|c| ("continue", c)));
                let page = self.client.get(&format!("{INDEX}/managedobjects"), &q)?;
                self.print(&page, render_managed_by)
            }
        }
    }

    fn print(&self, v: &Value, text: fn(&Value) -> String) -> Result<()> {
        if self.output == Output::Text {
            write_stdout(text(v).as_bytes())
        } else {
            print_value(v, self.output)
        }
    }

    /// The resource a name means, from discovery (fetched once).
    fn resource(&mut self, name: &str) -> Result<ApiResource> {
        if self.resources.is_none() {
            self.resources = Some(resolve::discover(&self.client)?);
        }
        resolve::resolve(self.resources.as_deref().unwrap_or_default(), name).cloned()
    }

    /// The URL path of the object `RESOURCE NAME` or `RESOURCE/NAME` names.
    fn object_path(&mut self, resource: &str, name: Option<String>) -> Result<String> {
        let (resource, name) = match (resource.split_once('/'), name) {
            (Some((r, n)), None) if !n.is_empty() => (r.to_string(), n.to_string()),
            (None, Some(n)) => (resource.to_string(), n),
            _ => return Err(CliError::Usage("name the object as RESOURCE NAME or RESOURCE/NAME".into())),
        };
        let namespace = self.namespace.clone();
        Ok(self.resource(&resource)?.object_path(&namespace, &name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn grammar_is_consistent() {
        PluginCli::command().debug_assert();
        let cli = PluginCli::try_parse_from(["kubectl-fieldstore", "history", "cm", "x", "--path", ".data.a", "-n", "dev"]).unwrap();
        assert_eq!(cli.namespace.as_deref(), Some("dev"));
        assert!(matches!(cli.command, PluginCommand::History { ref path, .. } if path == ".data.a"));
        assert!(PluginCli::try_parse_from(["kubectl-fieldstore", "owners", "cm"]).is_err(), "owners needs --path");
    }
}
