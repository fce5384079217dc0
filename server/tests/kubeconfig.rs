//! `fieldstore kubeconfig`: its output is a kubeconfig kubectl accepts, pointing at the server
//! with the token.

use std::process::Command;

fn fieldstore(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .args(args)
        // The gRPC address must not leak into the kubeconfig.
        .env("FIELDSTORE_SERVER", "127.0.0.1:7700")
        .env_remove("FIELDSTORE_TOKEN")
        .output()
        .expect("run fieldstore")
}

#[test]
fn prints_a_kubeconfig_kubectl_accepts() {
    let out = fieldstore(&["kubeconfig", "--server", "http://127.0.0.1:9999", "--token", "tok-1", "--name", "fs", "-n", "dev"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let v: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(v["kind"].as_str(), Some("Config"));
    assert_eq!(v["current-context"].as_str(), Some("fs"));
    assert_eq!(v["clusters"][0]["cluster"]["server"].as_str(), Some("http://127.0.0.1:9999"));
    assert_eq!(v["users"][0]["user"]["token"].as_str(), Some("tok-1"));
    assert_eq!(v["contexts"][0]["context"]["namespace"].as_str(), Some("dev"));

    // Without --server: the HTTP API's default, not FIELDSTORE_SERVER.
    let out = fieldstore(&["kubeconfig"]);
    let v: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(v["clusters"][0]["cluster"]["server"].as_str(), Some("http://127.0.0.1:7701"));

    let Ok(kubectl) = which_kubectl() else {
        eprintln!("skipping the kubectl check: no kubectl on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(kubectl)
        .args(["config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.server} {.users[0].user.token} {.current-context}"])
        .arg("--kubeconfig")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "kubectl rejected the kubeconfig: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "http://127.0.0.1:9999 tok-1 fs");
}

fn which_kubectl() -> Result<std::path::PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path).map(|d| d.join("kubectl")).find(|p| p.is_file()).ok_or(())
}
