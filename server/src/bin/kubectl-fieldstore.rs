//! `kubectl-fieldstore`, the kubectl plugin (`kubectl fieldstore blame deploy web`); everything
//! is in the library's [`cli::plugin`] module.

use fieldstore_server::cli;

fn main() -> std::process::ExitCode {
    cli::plugin::main()
}
