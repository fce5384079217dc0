//! The CLI's streams: stdin, input files (`-` for stdin) and stdout, with their failures as
//! [`CliError`]s.

use super::error::{CliError, Result};
use std::io::{self, Read, Write};
use std::path::Path;

/// Reads all of stdin.
pub(super) fn read_stdin() -> Result<Vec<u8>> {
    let mut input = Vec::new();
    io::stdin().lock().read_to_end(&mut input).map_err(CliError::ReadInput)?;
    Ok(input)
}

/// Reads a file, or stdin for `-`.
pub(super) fn read_input(path: &Path) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        return read_stdin();
    }
    std::fs::read(path).map_err(|source| CliError::ReadFile { path: path.display().to_string(), source })
}

/// Writes `bytes` to stdout and flushes.
pub(super) fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush()).map_err(CliError::WriteOutput)
}
