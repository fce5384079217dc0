//! The `fieldstore` command-line tool; everything is in the library's [`cli`] module.

use fieldstore_server::cli;

// Merging large objects allocates and frees many small values; mimalloc keeps that linear where
// the system allocator's consolidation does not (see benches/apply.rs). The `system-allocator`
// feature leaves the system's, for heap profilers.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
