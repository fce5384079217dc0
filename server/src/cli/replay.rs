//! `fieldstore replay`: replays a Server-Side Apply scenario in the structured-merge-diff oracle's
//! format (stdin) and prints the oracle's output format (stdout), one JSON line per op.

use super::error::{CliError, Result};
use super::stdio::{read_stdin, write_stdout};

/// Runs the replay.
pub fn run() -> Result<()> {
    let input = read_stdin()?;
    let text = String::from_utf8(input).map_err(|e| CliError::ReplayFatal(format!("bad scenario JSON: not UTF-8: {e}")))?;
    let lines = fieldstore_engine::replay::replay(&text).map_err(|f| CliError::ReplayFatal(f.0))?;
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    write_stdout(out.as_bytes())
}
