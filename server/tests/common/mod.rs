//! Running the `fieldstore` binary in the server's CLI tests.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `fieldstore` with `args`, feeding `stdin`, and waits for it.
pub fn fieldstore(args: &[&std::ffi::OsStr], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fieldstore"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fieldstore");
    // The command may fail before reading everything; a broken pipe here is expected then.
    let _ = child.stdin.take().expect("stdin is piped").write_all(stdin);
    child.wait_with_output().expect("wait for fieldstore")
}
