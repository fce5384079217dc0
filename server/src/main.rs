//! The `fieldstore` command-line tool. Argument parsing and the subcommands live in [`cli`].

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
