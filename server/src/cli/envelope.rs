//! `fieldstore envelope decode|encode`: between `k8s\x00` protobuf envelopes and their JSON view.

use clap::Subcommand;
use fieldstore_codec::Envelope;

use super::error::{CliError, Result};
use super::stdio::{read_stdin, write_stdout};

#[derive(Debug, Subcommand)]
pub(super) enum EnvelopeCommand {
    /// Reads an envelope from stdin and prints its JSON view
    /// ({"apiVersion", "kind", "contentType", "contentEncoding", "raw" | "rawBase64"}).
    Decode,
    /// Reads a JSON view from stdin and writes the envelope bytes to stdout.
    Encode,
}

pub(super) fn run(command: EnvelopeCommand) -> Result<()> {
    let input = read_stdin()?;
    match command {
        EnvelopeCommand::Decode => {
            let view = Envelope::decode(&input)?.to_json_view();
            let mut out = serde_json::to_vec_pretty(&view).map_err(CliError::InputJson)?;
            out.push(b'\n');
            write_stdout(&out)
        }
        EnvelopeCommand::Encode => {
            let view: serde_json::Value = serde_json::from_slice(&input).map_err(CliError::InputJson)?;
            write_stdout(&Envelope::from_json_view(&view)?.encode())
        }
    }
}
