//! Where the plugin connects: the kubeconfig kubectl would use (`--kubeconfig FILE`, else the
//! files of `KUBECONFIG`, merged as kubectl merges them — the first file to set a value wins —
//! else `~/.kube/config`), its current context (or `--context`), that context's cluster
//! (server URL, CA, `insecure-skip-tls-verify`) and user (bearer token or token file), and the
//! namespace (`-n`, else the context's, else `default`).

use super::super::error::{CliError, Result};
use base64::Engine as _;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The connection a kubeconfig context describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The API server's URL, without a trailing `/`.
    pub server: String,
    /// The bearer token.
    pub token: Option<String>,
    /// The context's namespace, if it names one.
    pub namespace: Option<String>,
    /// PEM certificates to trust (instead of the web PKI roots).
    pub ca_pem: Option<Vec<u8>>,
    /// Whether to skip TLS verification (`insecure-skip-tls-verify`).
    pub insecure: bool,
}

/// The kubeconfig files to read, in precedence order: the flag, else `KUBECONFIG`'s
/// (`:`-separated, empty entries skipped), else `~/.kube/config`.
pub(crate) fn files(flag: Option<&Path>, kubeconfig_env: Option<&str>, home: Option<&Path>) -> Vec<PathBuf> {
    if let Some(f) = flag {
        return vec![f.to_path_buf()];
    }
    if let Some(env) = kubeconfig_env.filter(|e| !e.is_empty()) {
        return std::env::split_paths(env).filter(|p| !p.as_os_str().is_empty()).collect();
    }
    home.map(|h| vec![h.join(".kube").join("config")]).unwrap_or_default()
}

/// Loads the files (missing ones from `KUBECONFIG` skipped, as kubectl does) and resolves the
/// context.
pub(crate) fn load(files: &[PathBuf], explicit: bool, context: Option<&str>) -> Result<Target> {
    let mut docs = Vec::new();
    for f in files {
        match std::fs::read_to_string(f) {
            Ok(text) => {
                let doc: Value = serde_yaml::from_str(&text).map_err(|e| CliError::Usage(format!("kubeconfig {}: {e}", f.display())))?;
                docs.push((f.clone(), doc));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {}
            Err(source) => return Err(CliError::ReadFile { path: f.display().to_string(), source }),
        }
    }
    if docs.is_empty() {
        return Err(CliError::Usage(
            "no kubeconfig found (KUBECONFIG, ~/.kube/config or --kubeconfig); `fieldstore kubeconfig > FILE` writes one".into(),
        ));
    }
    resolve(&docs, context)
}

/// The target of `context` (default: the first `current-context`) across merged documents, each
/// with the file it came from (relative certificate paths are relative to it).
pub(crate) fn resolve(docs: &[(PathBuf, Value)], context: Option<&str>) -> Result<Target> {
    let context = match context {
        Some(c) => c.to_string(),
        None => docs
            .iter()
            .find_map(|(_, d)| d.get("current-context").and_then(Value::as_str).filter(|c| !c.is_empty()))
            .ok_or_else(|| CliError::Usage("the kubeconfig has no current-context; pass --context".into()))?
            .to_string(),
    };
    let named = |list: &str, name: &str| -> Option<(&Path, &Value)> {
        docs.iter().find_map(|(file, d)| {
            d.get(list)?.as_array()?.iter().find(|e| e.get("name").and_then(Value::as_str) == Some(name)).map(|e| (file.as_path(), e))
        })
    };
    let (_, ctx) = named("contexts", &context).ok_or_else(|| CliError::Usage(format!("context {context:?} is not in the kubeconfig")))?;
    let ctx = &ctx["context"];
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let cluster_name = s(ctx, "cluster").ok_or_else(|| CliError::Usage(format!("context {context:?} names no cluster")))?;
    let (cluster_file, cluster) =
        named("clusters", &cluster_name).ok_or_else(|| CliError::Usage(format!("cluster {cluster_name:?} is not in the kubeconfig")))?;
    let cluster = &cluster["cluster"];
    let server = s(cluster, "server").ok_or_else(|| CliError::Usage(format!("cluster {cluster_name:?} has no server")))?;
    let relative = |file: &Path, p: &str| file.parent().map_or_else(|| PathBuf::from(p), |d| d.join(p));
    let ca_pem = if let Some(data) = s(cluster, "certificate-authority-data") {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| CliError::Usage(format!("cluster {cluster_name:?}: certificate-authority-data: {e}")))?;
        Some(pem)
    } else if let Some(path) = s(cluster, "certificate-authority") {
        let path = relative(cluster_file, &path);
        Some(std::fs::read(&path).map_err(|source| CliError::ReadFile { path: path.display().to_string(), source })?)
    } else {
        None
    };
    let insecure = cluster.get("insecure-skip-tls-verify").and_then(Value::as_bool).unwrap_or(false);
    let mut token = None;
    if let Some(user_name) = s(ctx, "user") {
        if let Some((user_file, user)) = named("users", &user_name) {
            let user = &user["user"];
            token = match (s(user, "token"), s(user, "tokenFile")) {
                (Some(t), _) => Some(t),
                (None, Some(f)) => {
                    let path = relative(user_file, &f);
                    let t =
                        std::fs::read_to_string(&path).map_err(|source| CliError::ReadFile { path: path.display().to_string(), source })?;
                    Some(t.trim().to_string())
                }
                (None, None) => None,
            };
        }
    }
    Ok(Target { server: server.trim_end_matches('/').to_string(), token, namespace: s(ctx, "namespace"), ca_pem, insecure })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(current: &str) -> Value {
        json!({
            "current-context": current,
            "contexts": [
                {"name": "a", "context": {"cluster": "c1", "user": "u1", "namespace": "team"}},
                {"name": "b", "context": {"cluster": "c2"}},
            ],
            "clusters": [
                {"name": "c1", "cluster": {"server": "https://one:6443/", "certificate-authority-data": "LS0tLS1CRUdJTg=="}},
                {"name": "c2", "cluster": {"server": "http://two:7701", "insecure-skip-tls-verify": true}},
            ],
            "users": [{"name": "u1", "user": {"token": "t1"}}],
        })
    }

    #[test]
    fn current_context_gives_server_token_namespace_and_ca() {
        let docs = [(PathBuf::from("/k/config"), doc("a"))];
        let t = resolve(&docs, None).unwrap();
        assert_eq!(t.server, "https://one:6443");
        assert_eq!(t.token.as_deref(), Some("t1"));
        assert_eq!(t.namespace.as_deref(), Some("team"));
        assert_eq!(t.ca_pem.as_deref(), Some(b"-----BEGIN".as_slice()));
        assert!(!t.insecure);
        let t = resolve(&docs, Some("b")).unwrap();
        assert_eq!((t.server.as_str(), t.token, t.namespace, t.insecure), ("http://two:7701", None, None, true));
        assert!(resolve(&docs, Some("zzz")).is_err());
        assert!(resolve(&[(PathBuf::from("x"), json!({}))], None).is_err());
    }

    #[test]
    fn merged_files_first_value_wins() {
        // The second file's current-context is ignored; its clusters fill in.
        let first = json!({"current-context": "b", "contexts": [{"name": "b", "context": {"cluster": "c2", "user": "u2"}}]});
        let second = doc("a");
        let token_dir = tempfile::tempdir().unwrap();
        std::fs::write(token_dir.path().join("tok"), "from-file\n").unwrap();
        let users = json!({"users": [{"name": "u2", "user": {"tokenFile": "tok"}}]});
        let docs = [(PathBuf::from("/k/1"), first), (PathBuf::from("/k/2"), second), (token_dir.path().join("config"), users)];
        let t = resolve(&docs, None).unwrap();
        assert_eq!(t.server, "http://two:7701");
        assert_eq!(t.token.as_deref(), Some("from-file"));
    }

    #[test]
    fn which_files() {
        let home = Path::new("/home/u");
        assert_eq!(files(Some(Path::new("/x")), Some("/a:/b"), Some(home)), [PathBuf::from("/x")]);
        assert_eq!(files(None, Some("/a::/b"), Some(home)), [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(files(None, None, Some(home)), [PathBuf::from("/home/u/.kube/config")]);
        assert_eq!(files(None, Some(""), None), Vec::<PathBuf>::new());
    }
}
