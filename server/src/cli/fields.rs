//! `fieldstore fields convert`: `FieldsV1` between Kubernetes' JSON form and fieldstore's binary form.

use clap::{Subcommand, ValueEnum};
use fieldstore_codec::{fields_binary, fields_v1, Set};

use super::error::Result;
use super::stdio::{read_stdin, write_stdout};

#[derive(Debug, Subcommand)]
pub(super) enum FieldsCommand {
    /// Reads a field set from stdin in one format and writes it to stdout in another. The output
    /// is the exact encoding, without a trailing newline.
    Convert {
        /// The format of stdin.
        #[arg(long, value_enum)]
        from: Format,
        /// The format to write.
        #[arg(long, value_enum)]
        to: Format,
    },
}

/// A `FieldsV1` encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Format {
    /// Kubernetes' `FieldsV1` JSON, as in `metadata.managedFields[].fieldsV1`.
    Json,
    /// fieldstore's compact binary encoding.
    Binary,
}

pub(super) fn run(command: FieldsCommand) -> Result<()> {
    let FieldsCommand::Convert { from, to } = command;
    let input = read_stdin()?;
    let set: Set = match from {
        Format::Json => fields_v1::from_json(&input)?,
        Format::Binary => fields_binary::decode(&input)?,
    };
    let output = match to {
        Format::Json => fields_v1::to_json(&set),
        Format::Binary => fields_binary::encode(&set),
    };
    write_stdout(&output)
}
