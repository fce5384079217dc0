//! `fieldstore envelope decode|encode`: between `k8s\x00` protobuf envelopes (as kube-apiserver
//! writes them) and the objects they carry, or the envelope's own JSON view.

use clap::Subcommand;
use fieldstore_codec::k8s_protobuf::{self, JsonStyle};
use fieldstore_codec::Envelope;
use fieldstore_engine::store::DEFAULT_MAX_DEPTH;
use serde_json::Value;

use super::error::{CliError, Result};
use super::output::envelope_of;
use super::stdio::{read_stdin, write_stdout};

#[derive(Debug, Subcommand)]
pub(super) enum EnvelopeCommand {
    /// Reads an envelope from stdin and prints the object it carries as JSON: a built-in kind's
    /// protobuf decoded as kube-apiserver renders it (indented as upstream's fixtures), JSON `raw`
    /// as is. With --view: the envelope's fields
    /// ({"apiVersion", "kind", "contentType", "contentEncoding", "raw" | "rawBase64"}).
    Decode {
        /// Print the envelope's JSON view instead of the object.
        #[arg(long)]
        view: bool,
    },
    /// Reads an object (JSON or YAML) from stdin and writes its envelope to stdout: the protobuf
    /// encoding for built-in kinds, JSON in `raw` for others. With --view: reads an envelope's JSON
    /// view instead.
    Encode {
        /// Read the envelope's JSON view instead of an object.
        #[arg(long)]
        view: bool,
    },
}

pub(super) fn run(command: EnvelopeCommand) -> Result<()> {
    let input = read_stdin()?;
    match command {
        EnvelopeCommand::Decode { view: true } => {
            let view = Envelope::decode(&input)?.to_json_view();
            let mut out = serde_json::to_vec_pretty(&view).map_err(CliError::InputJson)?;
            out.push(b'\n');
            write_stdout(&out)
        }
        EnvelopeCommand::Decode { view: false } => {
            let envelope = Envelope::decode(&input)?;
            let mut out = if envelope.content_type.is_empty() && envelope.content_encoding.is_empty() {
                // Go's key order and number forms, as the JSON kube-apiserver serves.
                k8s_protobuf::decode_envelope(&input, JsonStyle::Indented)?
            } else {
                serde_json::to_vec_pretty(&k8s_protobuf::object_of_envelope(&input)?).map_err(CliError::InputJson)?
            };
            out.push(b'\n');
            write_stdout(&out)
        }
        EnvelopeCommand::Encode { view: true } => {
            let view: Value = serde_json::from_slice(&input).map_err(CliError::InputJson)?;
            write_stdout(&Envelope::from_json_view(&view)?.encode())
        }
        EnvelopeCommand::Encode { view: false } => {
            let object = fieldstore_codec::document::parse(&input, fieldstore_codec::document::Syntax::Yaml, DEFAULT_MAX_DEPTH)
                .map_err(|e| CliError::Usage(format!("stdin: not a JSON or YAML object: {e}")))?
                .value;
            write_stdout(&envelope_of(&object)?)
        }
    }
}
