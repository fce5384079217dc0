//! `metadata.managedFields` entries as Kubernetes carries them in JSON.
//!
//! A [`ManagedFieldsEntry`] serializes exactly like apimachinery's `metav1.ManagedFieldsEntry`:
//! keys in the order `manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource`,
//! empty strings and absent values omitted. The `fieldsV1` document is kept as raw JSON text so its
//! key order — which is part of the format — survives a round trip untouched.
//!
//! [`decode_entries`] validates what the apiserver validates when it decodes managedFields, and
//! [`sort_entries`] and [`manager_identifier`] mirror the apiserver's field manager
//! (`k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager/internal/managedfields.go`).

use crate::rfc3339;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{Error, Result};

/// The only `fieldsType` Kubernetes defines.
pub const FIELDS_TYPE_V1: &str = "FieldsV1";

/// The longest field manager name the apiserver accepts, in bytes.
pub const MANAGER_MAX_LEN: usize = 128;

/// The longest subresource name the apiserver accepts, in bytes.
pub const SUBRESOURCE_MAX_LEN: usize = 256;

/// How a manager came to own its fields.
///
/// `Ord` follows the apiserver, which compares the operation strings: `Apply` sorts before
/// `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Operation {
    /// Fields set by a Server-Side Apply request.
    Apply,
    /// Fields set by a create, update or (non-apply) patch request.
    Update,
}

impl Operation {
    /// The wire name: `"Apply"` or `"Update"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = Error;

    /// Parses the exact, case-sensitive wire name.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "Apply" => Ok(Self::Apply),
            "Update" => Ok(Self::Update),
            other => Err(Error::ManagedFields { reason: format!("unknown operation {other:?} (must be \"Apply\" or \"Update\")") }),
        }
    }
}

/// One element of `metadata.managedFields`: which manager owns which fields, and how.
///
/// Deserializing one entry (with `serde_json`) validates and normalizes it like [`decode_entries`]
/// does for a whole array.
///
/// # Examples
///
/// ```
/// use fieldstore_codec::managed_fields::{self, ManagedFieldsEntry, Operation};
///
/// let json = br#"[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]"#;
/// let entries = managed_fields::decode_entries(json).unwrap();
/// assert_eq!(entries[0].operation, Operation::Apply);
/// assert_eq!(entries[0].fields_v1_json(), Some(r#"{"f:data":{"f:a":{}}}"#));
/// assert_eq!(managed_fields::encode_entries(&entries), json);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "WireEntry")]
pub struct ManagedFieldsEntry {
    /// The field manager's name, e.g. `"kubectl"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub manager: String,
    /// Whether the fields were applied or updated.
    pub operation: Operation,
    /// The API version the field set is expressed in, e.g. `"apps/v1"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// When the entry last changed, RFC 3339 in UTC with whole seconds (`"2024-01-02T03:04:05Z"`),
    /// as `metav1.Time` serializes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The format of [`fields_v1`](Self::fields_v1); always [`FIELDS_TYPE_V1`] once decoded.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fields_type: String,
    /// The owned field set as `FieldsV1` JSON text, byte for byte (key order is significant).
    #[serde(rename = "fieldsV1", skip_serializing_if = "Option::is_none")]
    pub fields_v1: Option<Box<RawValue>>,
    /// The subresource the fields were set through (e.g. `"status"`); empty for the main resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

impl ManagedFieldsEntry {
    /// The `FieldsV1` JSON text, if any.
    #[must_use]
    pub fn fields_v1_json(&self) -> Option<&str> {
        self.fields_v1.as_deref().map(RawValue::get)
    }
}

impl PartialEq for ManagedFieldsEntry {
    fn eq(&self, other: &Self) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.api_version == other.api_version
            && self.time == other.time
            && self.fields_type == other.fields_type
            && self.fields_v1_json() == other.fields_v1_json()
            && self.subresource == other.subresource
    }
}

impl Eq for ManagedFieldsEntry {}

/// An entry as found on the wire, before validation. Every field is optional so that a missing
/// field is reported by name rather than as a serde error.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEntry {
    #[serde(default)]
    manager: Option<String>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    fields_type: Option<String>,
    #[serde(default, rename = "fieldsV1")]
    fields_v1: Option<Box<RawValue>>,
    #[serde(default)]
    subresource: Option<String>,
}

/// A validation failure inside one entry: the offending field and what was wrong with it.
struct FieldError {
    field: &'static str,
    reason: String,
}

impl FieldError {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self { field, reason: reason.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl TryFrom<WireEntry> for ManagedFieldsEntry {
    type Error = FieldError;

    fn try_from(wire: WireEntry) -> std::result::Result<Self, FieldError> {
        let manager = wire.manager.unwrap_or_default();
        if manager.is_empty() {
            return Err(FieldError::new("manager", "required field is missing"));
        }
        validate_manager(&manager)?;

        let operation = match wire.operation.as_deref() {
            None | Some("") => return Err(FieldError::new("operation", "required field is missing")),
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            Some(other) => return Err(FieldError::new("operation", format!("unknown operation {other:?}"))),
        };

        let time = wire
            .time
            .map(|time| {
                rfc3339::parse(&time)
                    .map(|(seconds, _nanos)| rfc3339::format(seconds))
                    .ok_or_else(|| FieldError::new("time", format!("invalid RFC 3339 time {time:?}")))
            })
            .transpose()?;

        let fields_type = wire.fields_type.unwrap_or_default();
        match fields_type.as_str() {
            FIELDS_TYPE_V1 => {}
            "" => return Err(FieldError::new("fieldsType", "required field is missing")),
            other => return Err(FieldError::new("fieldsType", format!("unsupported fieldsType {other:?} (must be \"FieldsV1\")"))),
        }

        let fields_v1 = wire.fields_v1.map(compact_fields).transpose()?;

        let subresource = wire.subresource.unwrap_or_default();
        if subresource.len() > SUBRESOURCE_MAX_LEN {
            return Err(FieldError::new(
                "subresource",
                format!("must be no more than {SUBRESOURCE_MAX_LEN} bytes (got {})", subresource.len()),
            ));
        }

        Ok(Self { manager, operation, api_version: wire.api_version.unwrap_or_default(), time, fields_type, fields_v1, subresource })
    }
}

/// The apiserver's `ValidateFieldManager`: at most 128 bytes, printable characters only.
fn validate_manager(manager: &str) -> std::result::Result<(), FieldError> {
    if manager.len() > MANAGER_MAX_LEN {
        return Err(FieldError::new("manager", format!("must be no more than {MANAGER_MAX_LEN} bytes (got {})", manager.len())));
    }
    // Go's unicode.IsPrint allows graphic characters and the ASCII space; this approximates it
    // without a Unicode table (format characters such as U+200B are not caught).
    if let Some(c) = manager.chars().find(|&c| c.is_control() || (c != ' ' && c.is_whitespace())) {
        return Err(FieldError::new("manager", format!("invalid character {c:?}")));
    }
    Ok(())
}

/// Checks that `fieldsV1` is an object and strips insignificant whitespace, as Go's
/// `json.Marshal` does to a `FieldsV1`'s raw bytes; key order and escapes are left untouched.
fn compact_fields(raw: Box<RawValue>) -> std::result::Result<Box<RawValue>, FieldError> {
    let text = raw.get();
    if !text.starts_with('{') {
        let kind = match text.as_bytes().first() {
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b't' | b'f') => "a boolean",
            _ => "a number",
        };
        return Err(FieldError::new("fieldsV1", format!("must be a JSON object, got {kind}")));
    }
    let compacted = compact_json(text);
    if compacted.len() == text.len() {
        return Ok(raw);
    }
    RawValue::from_string(compacted).map_err(|err| FieldError::new("fieldsV1", err.to_string()))
}

/// Removes whitespace outside string literals from valid JSON text.
fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Decodes and validates a `managedFields` JSON array; `null` is an empty list.
///
/// Each entry must have a manager (at most 128 printable bytes), an operation of `Apply` or
/// `Update`, fieldsType `FieldsV1`, an RFC 3339 time if any, a JSON object as fieldsV1 if any, and
/// a subresource of at most 256 bytes. Times are normalized to UTC whole seconds, fieldsV1 is
/// compacted (whitespace only), and unknown keys are ignored, all as the apiserver does.
///
/// # Errors
///
/// [`Error::ManagedFields`] naming the offending entry and field, e.g.
/// `managedFields[2].operation: unknown operation "Foo"`.
pub fn decode_entries(json: &[u8]) -> Result<Vec<ManagedFieldsEntry>> {
    let items: Option<Vec<Box<RawValue>>> = serde_json::from_slice(json)
        .map_err(|err| Error::ManagedFields { reason: format!("managedFields: expected a JSON array of entries: {err}") })?;
    items
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let wire: WireEntry = serde_json::from_str(item.get())
                .map_err(|err| Error::ManagedFields { reason: format!("managedFields[{index}]: {err}") })?;
            ManagedFieldsEntry::try_from(wire).map_err(|err| Error::ManagedFields { reason: format!("managedFields[{index}].{err}") })
        })
        .collect()
}

/// Serializes entries as a compact `managedFields` JSON array.
#[must_use]
pub fn encode_entries(entries: &[ManagedFieldsEntry]) -> Vec<u8> {
    // Strings, a unit enum and already-valid raw JSON: serializing into a Vec cannot fail.
    serde_json::to_vec(entries).unwrap_or_default()
}

/// The apiserver's `BuildManagerIdentifier`: the key under which it tracks a manager's field set.
///
/// It is the entry's JSON with time, fieldsType and fieldsV1 cleared, and, for `Apply`, apiVersion
/// cleared too (so an applier keeps one identity across versions). Strings are escaped as Go's
/// `encoding/json` escapes them, `<`, `>` and `&` included.
///
/// # Examples
///
/// ```
/// use fieldstore_codec::managed_fields::{manager_identifier, ManagedFieldsEntry, Operation};
///
/// let entry = ManagedFieldsEntry {
///     manager: "ctrl".into(),
///     operation: Operation::Update,
///     api_version: "v1".into(),
///     time: None,
///     fields_type: "FieldsV1".into(),
///     fields_v1: None,
///     subresource: String::new(),
/// };
/// assert_eq!(manager_identifier(&entry), r#"{"manager":"ctrl","operation":"Update","apiVersion":"v1"}"#);
/// ```
#[must_use]
pub fn manager_identifier(entry: &ManagedFieldsEntry) -> String {
    let mut fields: Vec<(&str, &str)> = Vec::with_capacity(4);
    if !entry.manager.is_empty() {
        fields.push(("manager", &entry.manager));
    }
    fields.push(("operation", entry.operation.as_str()));
    if entry.operation == Operation::Update && !entry.api_version.is_empty() {
        fields.push(("apiVersion", &entry.api_version));
    }
    if !entry.subresource.is_empty() {
        fields.push(("subresource", &entry.subresource));
    }
    let mut out = String::from("{");
    for (i, (key, value)) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_go_json_string(&mut out, key);
        out.push(':');
        push_go_json_string(&mut out, value);
    }
    out.push('}');
    out
}

/// Appends `s` as a JSON string literal escaped like Go's `encoding/json` (with HTML escaping,
/// Go ≥ 1.22 short escapes for `\b` and `\f`).
fn push_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => push_unicode_escape(out, c),
            c if u32::from(c) < 0x20 => push_unicode_escape(out, c),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `\uXXXX` (lowercase hex, as Go writes it) for a character of the Basic Multilingual Plane.
fn push_unicode_escape(out: &mut String, c: char) {
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.extend(char::from_digit(u32::from(c) >> shift & 0xf, 16));
    }
}

/// Sorts entries in the order the apiserver writes them (`sortEncodedManagedFields`).
///
/// The order is part of the format — it decides the bytes of every stored object:
/// 1. operation: `Apply` before `Update`;
/// 2. time in whole Unix seconds, older first, where an absent (or unparseable) time counts as
///    the Unix epoch, i.e. it sorts before any time after 1970;
/// 3. manager, then apiVersion, then subresource, as byte strings.
///
/// The sort is stable; entries equal on all these keys keep their relative order.
pub fn sort_entries(entries: &mut [ManagedFieldsEntry]) {
    entries.sort_by(compare_entries);
}

/// The order of [`sort_entries`], for sorting entries kept with other data.
pub fn compare_entries(p: &ManagedFieldsEntry, q: &ManagedFieldsEntry) -> Ordering {
    let seconds = |entry: &ManagedFieldsEntry| entry.time.as_deref().and_then(rfc3339::parse).map_or(0, |(seconds, _nanos)| seconds);
    p.operation
        .cmp(&q.operation)
        .then_with(|| seconds(p).cmp(&seconds(q)))
        .then_with(|| p.manager.cmp(&q.manager))
        .then_with(|| p.api_version.cmp(&q.api_version))
        .then_with(|| p.subresource.cmp(&q.subresource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manager: &str, operation: Operation, api_version: &str, time: Option<&str>) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: manager.into(),
            operation,
            api_version: api_version.into(),
            time: time.map(Into::into),
            fields_type: FIELDS_TYPE_V1.into(),
            fields_v1: None,
            subresource: String::new(),
        }
    }

    fn decode_err(json: &str) -> String {
        match decode_entries(json.as_bytes()) {
            Err(Error::ManagedFields { reason }) => reason,
            other => panic!("expected a ManagedFields error for {json}, got {other:?}"),
        }
    }

    #[test]
    fn round_trip_preserves_bytes_and_key_order() {
        // Keys deliberately out of sorted order: serde_json::Value would reorder them.
        let json = r#"[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:z":{},"f:a":{}}},"f:data":{"f:a":{}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2024-01-02T03:04:06Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}},"subresource":"status"}]"#;
        let entries = decode_entries(json.as_bytes()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].subresource, "status");
        assert_eq!(String::from_utf8(encode_entries(&entries)).unwrap(), json);
        // serde_json's own serializer agrees.
        assert_eq!(serde_json::to_string(&entries).unwrap(), json);
    }

    #[test]
    fn serialization_omits_empty_fields() {
        let e = ManagedFieldsEntry { fields_type: String::new(), ..entry("m", Operation::Update, "", None) };
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"manager":"m","operation":"Update"}"#);
    }

    #[test]
    fn normalizes_like_the_apiserver() {
        let json = r#"[{"manager":"m","operation":"Update","time":"2024-01-02T04:04:05.999+01:00","fieldsType":"FieldsV1","fieldsV1": { "f:a" : { "f:b c":{} } },"unknownKey":1}]"#;
        let entries = decode_entries(json.as_bytes()).unwrap();
        assert_eq!(entries[0].time.as_deref(), Some("2024-01-02T03:04:05Z"));
        assert_eq!(entries[0].fields_v1_json(), Some(r#"{"f:a":{"f:b c":{}}}"#));
        assert_eq!(decode_entries(b"null").unwrap(), vec![]);
        assert_eq!(decode_entries(b"[]").unwrap(), vec![]);
        // `null` values count as absent, as in Go.
        let json = r#"[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","time":null,"fieldsV1":null}]"#;
        assert_eq!(decode_entries(json.as_bytes()).unwrap(), vec![entry("m", Operation::Apply, "", None)]);
    }

    #[test]
    fn single_entry_deserialize_validates() {
        let ok: ManagedFieldsEntry = serde_json::from_str(r#"{"manager":"m","operation":"Apply","fieldsType":"FieldsV1"}"#).unwrap();
        assert_eq!(ok, entry("m", Operation::Apply, "", None));
        let err = serde_json::from_str::<ManagedFieldsEntry>(r#"{"manager":"m","operation":"Foo"}"#).unwrap_err();
        assert!(err.to_string().contains("operation: unknown operation \"Foo\""), "{err}");
    }

    #[test]
    fn validation_names_index_and_field() {
        let ok = r#"{"manager":"a","operation":"Apply","fieldsType":"FieldsV1"}"#;
        let cases = [
            (r#"{"operation":"Apply","fieldsType":"FieldsV1"}"#, "managedFields[2].manager: required field is missing"),
            (r#"{"manager":"a","fieldsType":"FieldsV1"}"#, "managedFields[2].operation: required field is missing"),
            (r#"{"manager":"a","operation":"Foo","fieldsType":"FieldsV1"}"#, "managedFields[2].operation: unknown operation \"Foo\""),
            (r#"{"manager":"a","operation":"Apply"}"#, "managedFields[2].fieldsType: required field is missing"),
            (
                r#"{"manager":"a","operation":"Apply","fieldsType":"FieldsV2"}"#,
                "managedFields[2].fieldsType: unsupported fieldsType \"FieldsV2\" (must be \"FieldsV1\")",
            ),
            (
                r#"{"manager":"a","operation":"Apply","fieldsType":"FieldsV1","time":"yesterday"}"#,
                "managedFields[2].time: invalid RFC 3339 time \"yesterday\"",
            ),
            (
                r#"{"manager":"a","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":[]}"#,
                "managedFields[2].fieldsV1: must be a JSON object, got an array",
            ),
            (r#"{"manager":"a\u0000","operation":"Apply","fieldsType":"FieldsV1"}"#, "managedFields[2].manager: invalid character '\\0'"),
        ];
        for (bad, expected) in cases {
            let json = format!("[{ok},{ok},{bad}]");
            assert_eq!(decode_err(&json), expected);
        }
        let long = "x".repeat(129);
        let json = format!(r#"[{{"manager":"{long}","operation":"Apply","fieldsType":"FieldsV1"}}]"#);
        assert!(decode_err(&json).starts_with("managedFields[0].manager: must be no more than 128 bytes"));
        assert!(decode_err(r#"[{"manager":5}]"#).starts_with("managedFields[0]: invalid type: integer `5`"));
        assert!(decode_err(r#"{"manager":"a"}"#).starts_with("managedFields: expected a JSON array"));
        assert!(decode_err("[").starts_with("managedFields: expected a JSON array"));
    }

    #[test]
    fn manager_identifiers() {
        let apply = entry("kubectl", Operation::Apply, "v1", Some("2024-01-02T03:04:05Z"));
        assert_eq!(manager_identifier(&apply), r#"{"manager":"kubectl","operation":"Apply"}"#);
        let update = entry("ctrl", Operation::Update, "v1", Some("2024-01-02T03:04:05Z"));
        assert_eq!(manager_identifier(&update), r#"{"manager":"ctrl","operation":"Update","apiVersion":"v1"}"#);
        let status = ManagedFieldsEntry { subresource: "status".into(), ..update };
        assert_eq!(manager_identifier(&status), r#"{"manager":"ctrl","operation":"Update","apiVersion":"v1","subresource":"status"}"#);
        let odd = entry("a<b>&\"c\"\n", Operation::Apply, "", None);
        assert_eq!(manager_identifier(&odd), r#"{"manager":"a\u003cb\u003e\u0026\"c\"\n","operation":"Apply"}"#);
    }

    #[test]
    fn sort_matches_apiserver_order() {
        let mut entries = vec![
            entry("b", Operation::Update, "v1", Some("2024-01-01T00:00:02Z")),
            entry("a", Operation::Update, "v1", Some("2024-01-01T00:00:02Z")),
            entry("z", Operation::Update, "v1", Some("2024-01-01T00:00:01Z")),
            entry("late", Operation::Apply, "v1", Some("2030-01-01T00:00:00Z")),
            entry("a", Operation::Update, "v1", None),
            entry("a", Operation::Update, "apps/v1", Some("2024-01-01T00:00:02Z")),
            ManagedFieldsEntry { subresource: "status".into(), ..entry("a", Operation::Update, "v1", Some("2024-01-01T00:00:02Z")) },
            entry("early", Operation::Apply, "v1", Some("2020-01-01T00:00:00Z")),
            // Same whole second as "a"/"b": the fraction is ignored, then the manager decides.
            entry("0", Operation::Update, "v1", Some("2024-01-01T00:00:02.9Z")),
            // Before the epoch sorts before an absent time, which counts as the epoch.
            entry("zz", Operation::Update, "v1", Some("1969-12-31T23:59:59Z")),
        ];
        sort_entries(&mut entries);
        let order: Vec<String> =
            entries.iter().map(|e| format!("{} {} {} {}", e.operation, e.manager, e.api_version, e.subresource)).collect();
        assert_eq!(
            order,
            [
                "Apply early v1 ",
                "Apply late v1 ",
                "Update zz v1 ",
                "Update a v1 ",
                "Update z v1 ",
                "Update 0 v1 ",
                "Update a apps/v1 ",
                "Update a v1 ",
                "Update a v1 status",
                "Update b v1 ",
            ]
        );
    }

    #[test]
    fn rfc3339_parse_and_format() {
        assert_eq!(rfc3339::parse("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(rfc3339::parse("2024-01-02T03:04:05Z"), Some((1_704_164_645, 0)));
        assert_eq!(rfc3339::parse("2024-01-02T03:04:05.5Z"), Some((1_704_164_645, 500_000_000)));
        assert_eq!(rfc3339::parse("2024-01-02T03:04:05.123456789Z"), Some((1_704_164_645, 123_456_789)));
        assert_eq!(rfc3339::parse("2024-01-02T05:34:05+02:30"), Some((1_704_164_645, 0)));
        assert_eq!(rfc3339::parse("2024-01-01T23:04:05-04:00"), Some((1_704_164_645, 0)));
        assert_eq!(rfc3339::parse("2024-02-29T00:00:00Z").map(|t| t.0), Some(1_709_164_800));
        for bad in [
            "",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00Zjunk",
            "２024-01-01T00:00:00Z",
        ] {
            assert_eq!(rfc3339::parse(bad), None, "{bad}");
        }
        for seconds in [0, 1_704_164_645, 1_709_164_800, -1, 253_402_300_799] {
            assert_eq!(rfc3339::parse(&rfc3339::format(seconds)), Some((seconds, 0)));
        }
        assert_eq!(rfc3339::format(-1), "1969-12-31T23:59:59Z");
    }
}
