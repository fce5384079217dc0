//! Documents: request bodies and files in JSON or YAML, parsed into a [`serde_json::Value`] with
//! their nesting bounded *while* they are read, duplicate fields reported with their paths, and
//! values JSON cannot hold (YAML's `.nan` and `.inf`, non-scalar keys, tags) refused.
//!
//! This is the one parser of "a JSON or YAML body" for every door (HTTP, gRPC, the CLI) and the
//! store. JSON is read by `serde_json` (whose own recursion limit of 128 levels also holds);
//! YAML by `serde_yaml`, whose parser (libyaml) takes time quadratic in the nesting of flow
//! collections (`[[[…]]]`, `{a: {a: …}}`) and compact block sequences (`- - - …`) before any
//! value is built: [`yaml_depth_bound`] scans the text once, linearly, and refuses a document
//! nested deeper than the limit before the parser runs. Block nesting by indentation needs
//! `depth²/2` bytes of indentation, so the body size limit bounds it.

use crate::{Error, Result};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// The syntax a document is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// JSON only.
    Json,
    /// YAML (JSON is YAML: a body that parses as JSON is read as JSON, which is far cheaper).
    Yaml,
}

/// A parsed document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The value.
    pub value: Value,
    /// The paths of fields that appeared more than once in their object, in order
    /// (`.metadata.name`); the last occurrence is the one kept, as Go's decoders keep it.
    pub duplicates: Vec<String>,
}

/// Parses `bytes` as a document of `syntax`, refusing nesting deeper than `max_depth` objects
/// and arrays (the root is level 1).
///
/// # Errors
/// [`Error::Document`] saying what is wrong and where.
pub fn parse(bytes: &[u8], syntax: Syntax, max_depth: usize) -> Result<Document> {
    match syntax {
        Syntax::Json => parse_json(bytes, max_depth),
        Syntax::Yaml => {
            let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
            if matches!(first, Some(b'{' | b'[')) {
                match parse_json(bytes, max_depth) {
                    Ok(d) => return Ok(d),
                    // Too deep as JSON is too deep as YAML: no second, slower parse.
                    Err(e @ Error::Document { nesting: true, .. }) => return Err(e),
                    Err(_) => {}
                }
            }
            parse_yaml(bytes, max_depth)
        }
    }
}

/// Parses every document of a YAML stream (`---`-separated; empty documents are skipped), or
/// one JSON document, with the bounds of [`parse`].
///
/// # Errors
/// As [`parse`], for the first document that fails.
pub fn parse_stream(bytes: &[u8], max_depth: usize) -> Result<Vec<Document>> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        return parse(bytes, Syntax::Yaml, max_depth).map(|d| vec![d]);
    }
    yaml_depth_bound(bytes, max_depth).map_err(|reason| document_error("YAML", true, reason))?;
    let mut out = Vec::new();
    for de in serde_yaml::Deserializer::from_slice(bytes) {
        let mut state = State { max_depth, path: String::new(), duplicates: Vec::new(), too_deep: false };
        match (ValueSeed { depth: 0, state: &mut state }).deserialize(de) {
            Ok(Value::Null) => {}
            Ok(value) => out.push(Document { value, duplicates: state.duplicates }),
            Err(e) => return Err(yaml_error(&state, &e, max_depth)),
        }
    }
    Ok(out)
}

fn yaml_error(state: &State, e: &serde_yaml::Error, max_depth: usize) -> Error {
    let nesting = state.too_deep || e.to_string().starts_with("recursion limit exceeded");
    document_error("YAML", nesting, if nesting { too_deep(max_depth) } else { e.to_string() })
}

fn parse_json(bytes: &[u8], max_depth: usize) -> Result<Document> {
    let mut state = State { max_depth, path: String::new(), duplicates: Vec::new(), too_deep: false };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = ValueSeed { depth: 0, state: &mut state }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match value {
        Ok(value) => Ok(Document { value, duplicates: state.duplicates }),
        Err(e) => {
            let nesting = state.too_deep || e.to_string().starts_with("recursion limit exceeded");
            Err(document_error("JSON", nesting, if nesting { too_deep(max_depth) } else { e.to_string() }))
        }
    }
}

fn parse_yaml(bytes: &[u8], max_depth: usize) -> Result<Document> {
    yaml_depth_bound(bytes, max_depth).map_err(|reason| document_error("YAML", true, reason))?;
    let mut state = State { max_depth, path: String::new(), duplicates: Vec::new(), too_deep: false };
    let de = serde_yaml::Deserializer::from_slice(bytes);
    match (ValueSeed { depth: 0, state: &mut state }).deserialize(de) {
        Ok(value) => Ok(Document { value, duplicates: state.duplicates }),
        Err(e) => Err(yaml_error(&state, &e, max_depth)),
    }
}

fn too_deep(max_depth: usize) -> String {
    format!("nesting exceeds the limit of {max_depth} levels")
}

fn document_error(syntax: &'static str, nesting: bool, reason: String) -> Error {
    Error::Document { syntax, nesting, reason }
}

/// What a parse keeps besides the value: the limit, where it is, what repeated.
struct State {
    max_depth: usize,
    /// The path of the value being read (`.a.b[3]`), for duplicate fields.
    path: String,
    duplicates: Vec<String>,
    too_deep: bool,
}

/// Builds a [`Value`] from any deserializer, one container level at a time.
struct ValueSeed<'a> {
    /// Containers around the value.
    depth: usize,
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn enter<E: de::Error>(&mut self) -> Result<usize, E> {
        let depth = self.depth + 1;
        if depth > self.state.max_depth {
            self.state.too_deep = true;
            return Err(E::custom(too_deep(self.state.max_depth)));
        }
        Ok(depth)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    #[allow(clippy::cast_precision_loss, reason = "JSON numbers past 64 bits are doubles, as Go reads them")]
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }
    #[allow(clippy::cast_precision_loss, reason = "JSON numbers past 64 bits are doubles, as Go reads them")]
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom(format!("{v} is not a number JSON can hold")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        Err(de::Error::custom("YAML tags are not supported"))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        let len = self.state.path.len();
        loop {
            use fmt::Write as _;
            let _ = write!(self.state.path, "[{}]", out.len());
            let item = seq.next_element_seed(ValueSeed { depth, state: self.state })?;
            self.state.path.truncate(len);
            match item {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut out = Map::new();
        let len = self.state.path.len();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            self.state.path.push('.');
            self.state.path.push_str(&key);
            let v = map.next_value_seed(ValueSeed { depth, state: self.state })?;
            if out.insert(key, v).is_some() {
                let path = self.state.path.clone();
                self.state.duplicates.push(path);
            }
            self.state.path.truncate(len);
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key: a string, or a scalar written as one (YAML's `1:`, `true:`), as Kubernetes'
/// YAML-to-JSON conversion does.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        if v.is_finite() {
            Ok(v.to_string())
        } else {
            Err(E::custom(format!("{v} is not a key JSON can hold")))
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".into())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(de::Error::custom("a mapping key must be a scalar"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(de::Error::custom("a mapping key must be a scalar"))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(de::Error::custom("YAML tags are not supported"))
    }
}

/// Refuses, in one linear scan, YAML text whose flow collections (`[`, `{`) and compact block
/// sequences (`- - x`) nest deeper than `max_depth`: the nesting that costs libyaml quadratic
/// time. A bound, not a parse: what it cannot tell (text it does not understand) it leaves to
/// the parser, whose result is checked again.
///
/// # Errors
/// The message saying the limit was exceeded.
pub fn yaml_depth_bound(bytes: &[u8], max_depth: usize) -> std::result::Result<(), String> {
    let mut s = YamlScan { b: bytes, i: 0, flow: 0, line_depth: 0, max: max_depth };
    s.run().map_err(|()| too_deep(max_depth))
}

struct YamlScan<'a> {
    b: &'a [u8],
    i: usize,
    /// Open flow collections.
    flow: usize,
    /// Block sequence entries (`- `) and mapping keys (`? `) opened on the current line.
    line_depth: usize,
    max: usize,
}

impl YamlScan<'_> {
    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(b'\n')
    }

    fn blank(c: u8) -> bool {
        matches!(c, b' ' | b'\t' | b'\n' | b'\r')
    }

    fn check(&self) -> std::result::Result<(), ()> {
        if self.flow + self.line_depth > self.max {
            Err(())
        } else {
            Ok(())
        }
    }

    fn run(&mut self) -> std::result::Result<(), ()> {
        while self.i < self.b.len() {
            self.line()?;
        }
        Ok(())
    }

    /// One line in block context (or the rest of a flow collection that started on it).
    fn line(&mut self) -> std::result::Result<(), ()> {
        let start = self.i;
        while self.at(0) == b' ' {
            self.i += 1;
        }
        let indent = self.i - start;
        self.line_depth = 0;
        self.node_start(indent)
    }

    /// A position where a node may start: indicators, a flow collection, a quoted scalar, a
    /// block scalar, or a plain scalar (possibly a mapping key followed by `: ` and another
    /// node start).
    fn node_start(&mut self, indent: usize) -> std::result::Result<(), ()> {
        loop {
            while matches!(self.at(0), b' ' | b'\t') {
                self.i += 1;
            }
            let c = self.at(0);
            match c {
                b'-' | b'?' if Self::blank(self.at(1)) && self.flow == 0 => {
                    self.line_depth += 1;
                    self.check()?;
                    self.i += 1;
                }
                b'[' | b'{' => {
                    self.flow_collection()?;
                    return self.plain(indent);
                }
                b'\'' | b'"' => {
                    self.quoted(c);
                    return self.plain(indent);
                }
                b'|' | b'>' if self.flow == 0 => {
                    self.block_scalar(indent);
                    return Ok(());
                }
                b'#' => {
                    self.skip_line();
                    return Ok(());
                }
                b'\n' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.plain(indent),
            }
        }
    }

    /// A plain scalar in block context, up to a mapping value indicator (then another node
    /// start), a comment or the end of the line.
    fn plain(&mut self, indent: usize) -> std::result::Result<(), ()> {
        while self.i < self.b.len() {
            match self.at(0) {
                b'\n' => {
                    self.i += 1;
                    return Ok(());
                }
                b':' if Self::blank(self.at(1)) => {
                    self.i += 1;
                    return self.node_start(indent);
                }
                b'#' if self.i > 0 && matches!(self.b[self.i - 1], b' ' | b'\t') => {
                    self.skip_line();
                    return Ok(());
                }
                _ => self.i += 1,
            }
        }
        Ok(())
    }

    /// A flow collection from its opening bracket to the matching close (or the end).
    fn flow_collection(&mut self) -> std::result::Result<(), ()> {
        while self.i < self.b.len() {
            match self.at(0) {
                b'[' | b'{' => {
                    self.flow += 1;
                    self.check()?;
                    self.i += 1;
                }
                b']' | b'}' => {
                    self.i += 1;
                    self.flow = self.flow.saturating_sub(1);
                    if self.flow == 0 {
                        return Ok(());
                    }
                }
                c @ (b'\'' | b'"') if self.i == 0 || matches!(self.b[self.i - 1], b'[' | b'{' | b',' | b' ' | b'\t' | b'\n' | b':') => {
                    self.quoted(c);
                }
                b'#' if self.i > 0 && Self::blank(self.b[self.i - 1]) => self.skip_line(),
                _ => self.i += 1,
            }
        }
        Ok(())
    }

    /// A quoted scalar from its opening quote past its closing one.
    fn quoted(&mut self, q: u8) {
        self.i += 1;
        while self.i < self.b.len() {
            let c = self.at(0);
            self.i += 1;
            if q == b'"' && c == b'\\' {
                self.i += 1;
            } else if c == q {
                if q == b'\'' && self.at(0) == b'\'' {
                    self.i += 1;
                } else {
                    return;
                }
            }
        }
    }

    /// A block scalar (`|`, `>`): its header line, then every line blank or indented more than
    /// the line it started on.
    fn block_scalar(&mut self, indent: usize) {
        self.skip_line();
        while self.i < self.b.len() {
            let start = self.i;
            let mut j = self.i;
            while self.b.get(j) == Some(&b' ') {
                j += 1;
            }
            let blank = matches!(self.b.get(j), None | Some(b'\n' | b'\r'));
            if !blank && j - start <= indent {
                return;
            }
            self.i = j;
            self.skip_line();
        }
    }

    fn skip_line(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
        if self.i < self.b.len() {
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, Instant};

    fn yaml(s: &str) -> Result<Document> {
        parse(s.as_bytes(), Syntax::Yaml, 100)
    }

    #[test]
    fn json_and_yaml_give_the_same_value() {
        let j = parse(br#"{"a": {"b": [1, 2.5, "x", null, true]}}"#, Syntax::Json, 100).unwrap();
        let y = yaml("a:\n  b:\n  - 1\n  - 2.5\n  - x\n  - null\n  - true\n").unwrap();
        assert_eq!(j.value, json!({"a": {"b": [1, 2.5, "x", null, true]}}));
        assert_eq!(j, y);
        assert_eq!(yaml("1: a\ntrue: b\n").unwrap().value, json!({"1": "a", "true": "b"}));
        assert_eq!(yaml("{a: [1, {b: c}]}").unwrap().value, json!({"a": [1, {"b": "c"}]}));
    }

    #[test]
    fn duplicates_are_reported_with_their_paths_and_the_last_wins() {
        let d = parse(br#"{"a": 1, "m": {"x": [{"k": 1, "k": 2}]}, "a": 3}"#, Syntax::Json, 100).unwrap();
        assert_eq!(d.value, json!({"a": 3, "m": {"x": [{"k": 2}]}}));
        assert_eq!(d.duplicates, [".m.x[0].k", ".a"]);
        let y = yaml("a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(y.duplicates, [".a"]);
        assert_eq!(y.value, json!({"a": 3, "b": 2}));
    }

    #[test]
    fn values_json_cannot_hold_are_refused() {
        for bad in ["a: .nan\n", "a: .inf\n", "a: -.inf\n", "? [1]\n: x\n", "a: !custom x\n"] {
            assert!(matches!(yaml(bad), Err(Error::Document { nesting: false, .. })), "{bad}");
        }
        assert!(parse(b"{\"a\": 1} x", Syntax::Json, 100).is_err());
        assert!(parse(b"a: b", Syntax::Json, 100).is_err());
    }

    #[test]
    fn nesting_is_refused_while_parsing_and_fast() {
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(ok.as_bytes(), Syntax::Json, 100).is_ok());
        assert!(parse(ok.as_bytes(), Syntax::Yaml, 100).is_ok());
        let deep = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        assert!(matches!(parse(deep(101).as_bytes(), Syntax::Json, 100), Err(Error::Document { nesting: true, .. })));
        assert!(matches!(parse(deep(200).as_bytes(), Syntax::Json, 1000), Err(Error::Document { nesting: true, .. })));
        let flow_yaml = |n: usize| format!("{}1{}", "{a: ".repeat(n), "}".repeat(n));
        assert!(yaml(&flow_yaml(100)).is_ok());
        let compact = |n: usize| format!("{}x\n", "- ".repeat(n));
        assert!(yaml(&compact(99)).is_ok());
        let started = Instant::now();
        for bomb in [deep(100_000), flow_yaml(100_000), compact(200_000), format!("k: {}", "[".repeat(300_000))] {
            let e = parse(bomb.as_bytes(), Syntax::Yaml, 100).unwrap_err();
            assert!(matches!(e, Error::Document { nesting: true, .. }), "{e}");
        }
        // Generous: each takes about a millisecond.
        assert!(started.elapsed() < Duration::from_secs(5));
        let block: String = (0..150).map(|d| format!("{}a:\n", " ".repeat(d))).collect();
        assert!(matches!(yaml(&block), Err(Error::Document { nesting: true, .. })));
    }

    #[test]
    fn streams_hold_several_documents() {
        let docs = parse_stream(b"a: 1\n---\n---\nb: [2]\n", 100).unwrap();
        assert_eq!(docs.iter().map(|d| d.value.clone()).collect::<Vec<_>>(), [json!({"a": 1}), json!({"b": [2]})]);
        assert_eq!(parse_stream(b"{\"a\": 1}", 100).unwrap()[0].value, json!({"a": 1}));
        assert!(parse_stream(format!("x: {}", "[".repeat(1000)).as_bytes(), 100).is_err());
    }

    #[test]
    fn the_scan_does_not_count_brackets_in_scalars() {
        let text = "a: x[1\nb: '[[[['\nc: \"{{{\"\nd: |\n  [[[[[\n  {{{{{\n# [[[[[\ne: [1, '[', \"]\"]\n".repeat(60);
        assert!(yaml_depth_bound(text.as_bytes(), 3).is_ok());
        let d = yaml(&text).unwrap();
        assert_eq!(d.value["d"], "[[[[[\n{{{{{\n");
        assert_eq!(d.duplicates.len(), 5 * 59);
    }
}
