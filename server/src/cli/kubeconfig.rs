//! `fieldstore kubeconfig`: a kubeconfig for kubectl and the Kubernetes clients to reach a
//! running server's Kubernetes API — one cluster (the server's URL, and the CA to trust for
//! https), one user (the bearer token, if any), one context joining them, made current.

use super::error::{CliError, Result};
use super::stdio::write_stdout;
use clap::Args;
use serde_json::{json, Value};
use std::path::Path;

/// The HTTP API's default address (`fieldstore serve --http`).
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7701";

/// Arguments of `kubeconfig` (the server URL and token are the global `--server` and
/// `--token`; `--server` defaults to [`DEFAULT_SERVER`] here, not to `FIELDSTORE_SERVER`,
/// which names the gRPC address).
#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// The name of the cluster, user and context.
    #[arg(long, default_value = "fieldstore")]
    name: String,
    /// The context's default namespace.
    #[arg(short = 'n', long)]
    namespace: Option<String>,
}

/// Prints the kubeconfig.
pub fn run(args: &KubeconfigArgs, server: Option<&str>, token: Option<&str>, ca: Option<&Path>) -> Result<()> {
    let text = render(&args.name, server, token, args.namespace.as_deref(), ca)?;
    write_stdout(text.as_bytes())
}

/// The kubeconfig YAML: `server` (a URL; `host:port` gets `http://`, or `https://` when a CA is
/// given), default [`DEFAULT_SERVER`].
///
/// # Errors
/// [`CliError::Usage`] for an empty name or server, or a CA path that cannot be made absolute.
pub(super) fn render(name: &str, server: Option<&str>, token: Option<&str>, namespace: Option<&str>, ca: Option<&Path>) -> Result<String> {
    if name.is_empty() {
        return Err(CliError::Usage("--name must not be empty".into()));
    }
    let server = server.unwrap_or(DEFAULT_SERVER).trim();
    if server.is_empty() {
        return Err(CliError::Usage("--server must not be empty".into()));
    }
    let server = if server.contains("://") {
        server.to_string()
    } else if ca.is_some() {
        format!("https://{server}")
    } else {
        format!("http://{server}")
    };
    let mut cluster = json!({"server": server});
    if let Some(ca) = ca {
        // kubectl resolves a relative path against the kubeconfig's directory, not ours.
        let abs = std::path::absolute(ca).map_err(|e| CliError::Usage(format!("--tls-ca {}: {e}", ca.display())))?;
        cluster["certificate-authority"] = Value::String(abs.display().to_string());
    }
    let user = match token {
        Some(t) if !t.is_empty() => json!({"token": t}),
        _ => json!({}),
    };
    let mut context = json!({"cluster": name, "user": name});
    if let Some(ns) = namespace {
        context["namespace"] = Value::String(ns.to_string());
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
        "preferences": {},
    });
    serde_yaml::to_string(&config).map_err(|e| CliError::Usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_with_cluster_user_and_current_context() {
        let text = render("fs", Some("127.0.0.1:9000"), Some("s3cret"), Some("dev"), None).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(v["current-context"].as_str(), Some("fs"));
        assert_eq!(v["clusters"][0]["cluster"]["server"].as_str(), Some("http://127.0.0.1:9000"));
        assert_eq!(v["users"][0]["user"]["token"].as_str(), Some("s3cret"));
        assert_eq!(v["contexts"][0]["context"]["namespace"].as_str(), Some("dev"));
        let default = render("fieldstore", None, None, None, Some(Path::new("ca.pem"))).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&default).unwrap();
        assert_eq!(v["clusters"][0]["cluster"]["server"].as_str(), Some(DEFAULT_SERVER));
        assert!(v["clusters"][0]["cluster"]["certificate-authority"].as_str().is_some_and(|p| p.starts_with('/')));
        assert!(v["users"][0]["user"].get("token").is_none());
        assert!(render("", None, None, None, None).is_err());
    }
}
