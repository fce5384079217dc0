//! `fieldstore replay`: replays a Server-Side Apply scenario in the structured-merge-diff oracle's
//! format (stdin) and prints the oracle's output format (stdout), one JSON line per op, written
//! as the ops run.

use super::error::{CliError, Result};
use super::stdio::read_stdin;
use std::io::{self, Write};

/// Runs the replay.
pub fn run() -> Result<()> {
    let input = read_stdin()?;
    let text = String::from_utf8(input).map_err(|e| CliError::ReplayFatal(format!("bad scenario JSON: not UTF-8: {e}")))?;
    // The replay writes from a thread of its own: stdout is locked for each piece there.
    let stdout = io::stdout();
    // The first write error ends the output; the replay's remaining output is not written.
    let mut written: io::Result<()> = Ok(());
    let finished = fieldstore_engine::replay::replay_each(&text, |piece| {
        if written.is_ok() {
            written = stdout.lock().write_all(piece);
        }
    })
    .map_err(|f| CliError::ReplayFatal(f.0))?;
    // The process exits next: freeing the last object and the scenario's text piece by piece
    // would only delay that (`replay::Finished`).
    std::mem::forget(finished);
    std::mem::forget(text);
    written.and_then(|()| stdout.lock().flush()).map_err(CliError::WriteOutput)
}
