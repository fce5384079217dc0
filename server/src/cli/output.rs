//! How the CLI prints results: the `-o` formats ([`Output`]), values as JSON or YAML, written
//! objects as one line, kubectl-style tables and ages, and the small readers the text forms use.

use super::error::{CliError, Result};
use super::stdio::write_stdout;
use clap::ValueEnum;
use serde_json::Value;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// A short human-readable summary.
    Text,
    /// JSON (errors as a Kubernetes `Status`).
    Json,
    /// YAML.
    Yaml,
    /// Objects as kube-apiserver writes them in `application/vnd.kubernetes.protobuf`: the `k8s\x00`
    /// envelope with the protobuf encoding of a built-in kind (JSON in `raw` for custom resources).
    Protobuf,
}

/// Prints a value as pretty JSON or YAML, or an object (or List) as its protobuf envelope.
pub fn print_value(v: &Value, output: Output) -> Result<()> {
    let text = match output {
        Output::Yaml => serde_yaml::to_string(v).map_err(|e| CliError::Usage(e.to_string()))?,
        Output::Protobuf => return write_stdout(&envelope_of(v)?),
        _ => {
            let mut s = serde_json::to_string_pretty(v).map_err(CliError::InputJson)?;
            s.push('\n');
            s
        }
    };
    write_stdout(text.as_bytes())
}

/// The `k8s\x00` envelope of an object or List: the protobuf encoding of a built-in kind, JSON in
/// `raw` for other kinds.
pub(super) fn envelope_of(v: &Value) -> Result<Vec<u8>> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    if s("apiVersion").is_empty() || s("kind").is_empty() {
        return Err(CliError::Usage("-o protobuf prints objects (with apiVersion and kind) only; use -o json".into()));
    }
    let json = serde_json::to_vec(v).map_err(CliError::InputJson)?;
    Ok(fieldstore_codec::k8s_protobuf::envelope_of_object(&json, s("apiVersion"), s("kind"))?)
}

/// Prints a written object: `resource/name verb (resourceVersion N)` or the object itself.
pub(super) fn print_written(obj: &Value, resource: &str, what: &str, dry_run: bool, output: Output) -> Result<()> {
    if output != Output::Text {
        return print_value(obj, output);
    }
    let m = |f: &str| obj.pointer(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or("").to_string();
    let mut line = format!("{resource}/{} {what}", m("name"));
    if dry_run {
        line.push_str(" (dry run)");
    } else if !m("resourceVersion").is_empty() {
        line.push_str(&format!(" (resourceVersion {})", m("resourceVersion")));
    }
    line.push('\n');
    write_stdout(line.as_bytes())
}

/// Rows as columns padded to their widest cell, three spaces apart (kubectl's style).
pub(super) fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r.iter().enumerate().map(|(c, cell)| format!("{cell:<w$}", w = widths[c])).collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// How long ago an RFC 3339 time was, as kubectl prints ages (`45s`, `12m`, `3h`, `5d`).
pub(super) fn age_since(rfc3339: &str) -> String {
    let Some((secs, _)) = fieldstore_codec::rfc3339::parse(rfc3339) else { return "<unknown>".into() };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    ago(u64::try_from(now - secs).unwrap_or(0))
}

/// `5s`, `3m`, `2h`, `4d`: how long ago `unix_millis` was.
pub(super) fn age(unix_millis: u64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    ago(now.saturating_sub(unix_millis) / 1000)
}

/// An elapsed time as kubectl prints ages: `45s`, `12m`, `3h`, `5d`.
fn ago(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs}s"),
        120..=7199 => format!("{}m", secs / 60),
        7200..=172_799 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// A value on one line: its JSON, with empty maps and lists as `{}` and `[]`.
pub(super) fn scalar(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        _ => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// The string member `k` of a JSON answer (`""` when absent).
pub(super) fn s<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The number member `k` of a JSON answer (`0` when absent).
pub(super) fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}
