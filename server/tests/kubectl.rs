//! kubectl against a live `fieldstore serve`: `server/tests/kubectl/kubectl.sh` run with the oldest
//! and the newest kubectl found (`kubectl.1.N` beside `kubectl` on PATH, or in the Google Cloud
//! CLI's bin directory; else `kubectl` itself). Skipped, with the reason printed, when there is no
//! kubectl or no bash.

// Test support unwraps: a failed setup is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every kubectl binary found, as (minor version, path), oldest first.
fn kubectls() -> Vec<(u32, PathBuf)> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path: Option<PathBuf> = std::env::split_paths(&path).map(|d| d.join("kubectl")).find(|p| p.is_file());
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(k) = &on_path {
        dirs.extend(k.parent().map(Path::to_path_buf));
        if let Ok(real) = std::fs::canonicalize(k) {
            dirs.extend(real.parent().map(Path::to_path_buf));
        }
    }
    dirs.push(PathBuf::from("/usr/lib/google-cloud-sdk/bin"));
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(minor) = name.strip_prefix("kubectl.1.").and_then(|m| m.parse().ok()) {
                if !found.iter().any(|(m, _)| *m == minor) {
                    found.push((minor, e.path()));
                }
            }
        }
    }
    found.sort();
    if found.is_empty() {
        if let Some(k) = on_path {
            found.push((0, k));
        }
    }
    found
}

/// Runs the script with one kubectl against a fresh server; panics with its output on failure.
fn drive(kubectl: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let server = line.split("kubernetes API ").nth(1).unwrap().split([',', ')']).next().unwrap().trim().to_string();
    let config = dir.path().join("kubeconfig");
    std::fs::write(
        &config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fs\n  cluster: {{server: \"{server}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: fs\n  context: {{cluster: fs, user: u, namespace: default}}\ncurrent-context: fs\n"
        ),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kubectl/kubectl.sh");
    let out = Command::new("bash").arg(&script).arg(kubectl).env("KUBECONFIG", &config).env("HOME", dir.path()).output().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success(), "kubectl script failed with {}:\n{text}", kubectl.display());
    assert!(text.contains("\nOK ("), "{text}");
}

#[test]
fn kubectl_oldest_and_newest() {
    if Command::new("bash").arg("-c").arg("command -v curl").output().map(|o| !o.status.success()).unwrap_or(true) {
        println!("SKIP: bash or curl is missing");
        return;
    }
    let found = kubectls();
    let (Some(oldest), Some(newest)) = (found.first(), found.last()) else {
        println!("SKIP: no kubectl found (on PATH, kubectl.1.N beside it, or in /usr/lib/google-cloud-sdk/bin)");
        return;
    };
    drive(&oldest.1);
    if newest.1 != oldest.1 {
        drive(&newest.1);
    }
}
