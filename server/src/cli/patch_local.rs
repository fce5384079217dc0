//! `fieldstore patch-local`: applies a patch to an object, or computes one, without storage.
//!
//! Input on stdin, one JSON object:
//! - applying (the default): `{"original": …, "patch": …}`; prints the patched object;
//! - `--create-two-way`: `{"original": …, "modified": …}`; prints the patch;
//! - `--create-three-way`: `{"original": …, "modified": …, "current": …}` (last applied, new
//!   configuration, live object, as kubectl apply uses them); prints the patch.
//!
//! A failure prints one line naming the error kind and the path, e.g.
//! `error: InvalidDirective at .spec.$retainKeys: …`.

use std::path::{Path, PathBuf};

use clap::Args;
use fieldstore_engine::patch::{self, PatchErrorKind, PatchMeta, PatchType};
use fieldstore_engine::schema::Schema;
use fieldstore_engine::Error;
use serde_json::Value;

use super::error::{CliError, Result};
use super::stdio::{read_stdin, write_stdout};

/// The arguments of `patch-local`.
#[derive(Debug, Args)]
pub(super) struct PatchLocalArgs {
    /// The patch type, as `kubectl patch --type` names it.
    #[arg(long = "type", default_value = "strategic")]
    patch_type: PatchType,
    /// A schema file for strategic merge patches: structured-merge-diff YAML, an OpenAPI v2 or
    /// v3 document, or a CustomResourceDefinition (JSON or YAML). Without one, maps merge and
    /// lists are replaced.
    #[arg(long, requires = "root")]
    schema: Option<PathBuf>,
    /// The root type of the object in the schema (for a CRD: a version name or the root type
    /// name, e.g. `v1` or `com.example.v1.Widget`).
    #[arg(long, requires = "schema")]
    root: Option<String>,
    /// Compute the patch from `original` to `modified` instead of applying one.
    #[arg(long, conflicts_with = "create_three_way")]
    create_two_way: bool,
    /// Compute kubectl's three-way patch from `original`, `modified` and `current`.
    #[arg(long)]
    create_three_way: bool,
    /// With `--create-three-way`: overwrite conflicting live changes instead of failing.
    #[arg(long, requires = "create_three_way")]
    overwrite: bool,
}

pub(super) fn run(args: PatchLocalArgs) -> Result<()> {
    let loaded = match (&args.schema, &args.root) {
        (Some(file), Some(root)) => Some(load_schema(file, root)?),
        _ => None,
    };
    let meta = match &loaded {
        Some((schema, root)) => PatchMeta::new(schema, root)?,
        None => PatchMeta::untyped(),
    };
    let input: Value = serde_json::from_slice(&read_stdin()?).map_err(CliError::InputJson)?;
    let member = |name: &str| -> Result<&Value> {
        input.get(name).ok_or_else(|| {
            CliError::Engine(Error::Patch {
                kind: PatchErrorKind::InvalidJson,
                path: format!(".{name}"),
                message: format!("the input has no {name:?} member"),
            })
        })
    };
    let output = if args.create_three_way {
        let (original, modified, current) = (member("original")?, member("modified")?, member("current")?);
        match args.patch_type {
            PatchType::Strategic => patch::create_three_way(original, modified, current, &meta, args.overwrite)?,
            PatchType::Merge => patch::create_three_way_merge_patch(original, modified, current)?,
            PatchType::Json | PatchType::Apply => return Err(unsupported()),
        }
    } else if args.create_two_way {
        let (original, modified) = (member("original")?, member("modified")?);
        match args.patch_type {
            PatchType::Strategic => patch::create_two_way(original, modified, &meta)?,
            PatchType::Merge => patch::create_merge_patch(original, modified),
            PatchType::Json | PatchType::Apply => return Err(unsupported()),
        }
    } else {
        let (original, p) = (member("original")?, member("patch")?);
        match args.patch_type {
            PatchType::Strategic => patch::strategic_merge(original, p, &meta)?,
            PatchType::Merge => patch::merge_patch(original, p),
            PatchType::Json => patch::json_patch(original, p)?,
            PatchType::Apply => return Err(unsupported()),
        }
    };
    let mut bytes = serde_json::to_vec(&output).map_err(CliError::InputJson)?;
    bytes.push(b'\n');
    write_stdout(&bytes)
}

fn unsupported() -> CliError {
    CliError::Engine(Error::Patch {
        kind: PatchErrorKind::InvalidPatch,
        path: ".".into(),
        message: "computing JSON patches or apply configurations is not supported; use --type strategic or merge".into(),
    })
}

/// Loads a schema file of any loader format (see [`patch::load_schema`]).
fn load_schema(file: &Path, root: &str) -> Result<(Schema, String)> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| CliError::Engine(Error::Schema { path: file.display().to_string(), reason: format!("cannot read: {e}") }))?;
    Ok(patch::load_schema(&text, root)?)
}
