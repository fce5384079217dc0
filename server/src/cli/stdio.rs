//! The CLI's streams: stdin, input files (`-` for stdin) and stdout, with their failures as
//! [`CliError`]s.

use super::error::{CliError, Result};
use std::io::{self, Read, Write};
use std::path::Path;

/// Reads all of stdin.
pub(super) fn read_stdin() -> Result<Vec<u8>> {
    let mut input = Vec::with_capacity(stdin_file_len().saturating_add(1));
    io::stdin().lock().read_to_end(&mut input).map_err(CliError::ReadInput)?;
    Ok(input)
}

/// The size of stdin when it is a file (`< scenario.json`), so that it is read into one buffer
/// of that size rather than one grown by copies; 0 otherwise.
fn stdin_file_len() -> usize {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let meta = io::stdin().as_fd().try_clone_to_owned().ok().map(std::fs::File::from).and_then(|f| f.metadata().ok());
        meta.filter(std::fs::Metadata::is_file).and_then(|m| usize::try_from(m.len()).ok()).unwrap_or(0)
    }
    #[cfg(not(unix))]
    0
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
