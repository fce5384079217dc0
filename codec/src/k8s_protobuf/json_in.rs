//! JSON input for the encoder: a strict parser into a borrowed tree ([`Node`]) that keeps member
//! order, duplicate keys and every token's text (numbers and string escapes as written, which raw
//! fields such as `RawExtension` keep verbatim), and the [`JsonIn`] view shared with
//! [`serde_json::Value`].

use std::borrow::Cow;

use super::json_out::JsonWriter;

/// A parsed JSON value borrowing from its text.
#[derive(Debug)]
pub(crate) enum Node<'t> {
    Null,
    Bool(bool),
    /// The number literal as written.
    Number(&'t str),
    /// `raw` is the text between the quotes, escapes intact; `value` the unescaped string.
    String {
        raw: &'t str,
        value: Cow<'t, str>,
    },
    Array(Vec<Node<'t>>),
    /// Members in input order, duplicates included.
    Object(Vec<Member<'t>>),
}

/// One object member.
#[derive(Debug)]
pub(crate) struct Member<'t> {
    pub(crate) raw_key: &'t str,
    pub(crate) key: Cow<'t, str>,
    pub(crate) value: Node<'t>,
}

/// `bytes` as text, each byte of an invalid UTF-8 sequence replaced by U+FFFD (as Go's JSON
/// decoder replaces them in strings).
pub(crate) fn lossy_utf8(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            let mut text = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                text.push_str(chunk.valid());
                for _ in chunk.invalid() {
                    text.push(char::REPLACEMENT_CHARACTER);
                }
            }
            Cow::Owned(text)
        }
    }
}

/// Parses one JSON value (surrounded by optional whitespace) nested at most `max_depth` deep.
pub(crate) fn parse(text: &str, max_depth: usize) -> Result<Node<'_>, String> {
    let mut parser = Parser { text, bytes: text.as_bytes(), pos: 0, max_depth };
    parser.skip_ws();
    let node = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error("invalid character after top-level value"));
    }
    Ok(node)
}

/// Bytes that end (`"`), escape (`\\`) or invalidate (controls) a string.
const STRING_SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
        b += 1;
    }
    table
};

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    max_depth: usize,
}

impl<'t> Parser<'t> {
    fn error(&self, what: &str) -> String {
        match self.bytes.get(self.pos) {
            Some(&b) if b.is_ascii_graphic() => format!("{what}: {:?} at byte {}", char::from(b), self.pos),
            Some(&b) => format!("{what}: byte 0x{b:02x} at byte {}", self.pos),
            None => format!("{what}: unexpected end of JSON input"),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'t>, String> {
        match self.bytes.get(self.pos) {
            Some(b'{') => {
                if depth >= self.max_depth {
                    return Err(self.error("JSON nested too deeply"));
                }
                self.pos += 1;
                let mut members = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Node::Object(members));
                }
                loop {
                    self.skip_ws();
                    if self.bytes.get(self.pos) != Some(&b'"') {
                        return Err(self.error("expected a string object key"));
                    }
                    let (raw_key, key) = self.string()?;
                    self.skip_ws();
                    if self.bytes.get(self.pos) != Some(&b':') {
                        return Err(self.error("expected ':' after object key"));
                    }
                    self.pos += 1;
                    self.skip_ws();
                    let value = self.value(depth + 1)?;
                    members.push(Member { raw_key, key, value });
                    self.skip_ws();
                    match self.bytes.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Node::Object(members));
                        }
                        _ => return Err(self.error("expected ',' or '}' after object member")),
                    }
                }
            }
            Some(b'[') => {
                if depth >= self.max_depth {
                    return Err(self.error("JSON nested too deeply"));
                }
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                loop {
                    self.skip_ws();
                    items.push(self.value(depth + 1)?);
                    self.skip_ws();
                    match self.bytes.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Node::Array(items));
                        }
                        _ => return Err(self.error("expected ',' or ']' after array element")),
                    }
                }
            }
            Some(b'"') => {
                let (raw, value) = self.string()?;
                Ok(Node::String { raw, value })
            }
            Some(b't') => self.literal("true", Node::Bool(true)),
            Some(b'f') => self.literal("false", Node::Bool(false)),
            Some(b'n') => self.literal("null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("invalid character looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str, node: Node<'t>) -> Result<Node<'t>, String> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(self.error("invalid literal"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Node<'t>, String> {
        let start = self.pos;
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number: digits expected after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number: digits expected in exponent"));
            }
        }
        Ok(Node::Number(&self.text[start..self.pos]))
    }

    /// A string at `pos` (its opening quote): its raw text and unescaped value.
    fn string(&mut self) -> Result<(&'t str, Cow<'t, str>), String> {
        self.pos += 1;
        let start = self.pos;
        let mut owned: Option<String> = None;
        let mut copied = start;
        loop {
            // Skip to the next byte that ends, escapes or invalidates the string: the quote or
            // backslash found with memchr, then the run before it checked for controls at once
            // (a branchless fold the compiler vectorises), stepping to the first if any.
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            let stop = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
            let run = rest.get(..stop).unwrap_or_default();
            if run.iter().fold(false, |control, &b| control | (b < 0x20)) {
                self.pos += run.iter().position(|&b| STRING_SPECIAL[usize::from(b)]).unwrap_or(stop);
            } else {
                self.pos += stop;
            }
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.error("unterminated string"));
            };
            match b {
                b'"' => {
                    let raw = &self.text[start..self.pos];
                    self.pos += 1;
                    let value = match owned {
                        Some(mut s) => {
                            s.push_str(&self.text[copied..self.pos - 1]);
                            Cow::Owned(s)
                        }
                        None => Cow::Borrowed(raw),
                    };
                    return Ok((raw, value));
                }
                b'\\' => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[copied..self.pos]);
                    self.pos += 1;
                    let escaped = match self.bytes.get(self.pos) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let unit = self.hex4()?;
                            let c = if (0xd800..0xdc00).contains(&unit)
                                && self.bytes.get(self.pos) == Some(&b'\\')
                                && self.bytes.get(self.pos + 1) == Some(&b'u')
                            {
                                // A high surrogate: combined with a following low one, else U+FFFD
                                // (and the next escape is read on its own), as Go's unquote does.
                                let save = self.pos;
                                self.pos += 2;
                                let low = self.hex4()?;
                                if (0xdc00..0xe000).contains(&low) {
                                    char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)).unwrap_or('\u{fffd}')
                                } else {
                                    self.pos = save;
                                    '\u{fffd}'
                                }
                            } else {
                                char::from_u32(unit).unwrap_or('\u{fffd}')
                            };
                            s.push(c);
                            copied = self.pos;
                            continue;
                        }
                        _ => return Err(self.error("invalid escape in string")),
                    };
                    s.push(escaped);
                    self.pos += 1;
                    copied = self.pos;
                }
                0..=0x1f => return Err(self.error("invalid control character in string")),
                _ => self.pos += 1,
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut unit = 0u32;
        for _ in 0..4 {
            let digit =
                self.bytes.get(self.pos).and_then(|&b| char::from(b).to_digit(16)).ok_or_else(|| self.error("invalid \\u escape"))?;
            unit = unit * 16 + digit;
            self.pos += 1;
        }
        Ok(unit)
    }
}

/// Writes a parsed value through `w` as Go writes the output of a `MarshalJSON` (raw JSON): tokens
/// verbatim except for HTML escaping of strings, layout per the writer's style.
pub(crate) fn emit(node: &Node<'_>, w: &mut JsonWriter) {
    match node {
        Node::Null => w.null(),
        Node::Bool(b) => w.bool(*b),
        Node::Number(text) => w.number_token(text),
        Node::String { raw, .. } => w.string_token(raw),
        Node::Array(items) => {
            w.begin_array();
            for item in items {
                emit(item, w);
            }
            w.end_array();
        }
        Node::Object(members) => {
            w.begin_object();
            for member in members {
                w.key_token(member.raw_key);
                emit(&member.value, w);
            }
            w.end_object();
        }
    }
}

/// A number as Go's decoder sees it: the literal, or serde_json's parsed number.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num<'v> {
    Text(&'v str),
    Serde(&'v serde_json::Number),
}

impl Num<'_> {
    /// The number as an `i64`, as Go's `strconv.ParseInt` reads the literal (no fraction, no exponent).
    pub(crate) fn to_i64(self) -> Result<i64, String> {
        match self {
            Num::Text(text) => text.parse::<i64>().map_err(|_| {
                if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                    format!("number {text} overflows a 64-bit integer")
                } else {
                    format!("number {text} is not an integer")
                }
            }),
            Num::Serde(n) => n.as_i64().ok_or_else(|| {
                if n.is_u64() {
                    format!("number {n} overflows a 64-bit integer")
                } else {
                    format!("number {n} is not an integer")
                }
            }),
        }
    }

    /// The number as an `f64`, as Go's `strconv.ParseFloat` reads it (out of range is an error).
    pub(crate) fn to_f64(self) -> Result<f64, String> {
        let value = match self {
            Num::Text(text) => text.parse::<f64>().map_err(|e| format!("number {text}: {e}"))?,
            Num::Serde(n) => n.as_f64().ok_or_else(|| format!("number {n} is not a float"))?,
        };
        if value.is_finite() {
            Ok(value)
        } else {
            Err(format!("number {self} is out of range for a 64-bit float"))
        }
    }
}

impl std::fmt::Display for Num<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Text(text) => f.write_str(text),
            Num::Serde(n) => write!(f, "{n}"),
        }
    }
}

/// What kind of JSON value, with its content for scalars and arrays.
pub(crate) enum View<'v, J> {
    Null,
    Bool(bool),
    Number(Num<'v>),
    String(&'v str),
    Array(&'v [J]),
    /// Its members are [`JsonIn::members`].
    Object,
}

impl<J> View<'_, J> {
    /// Go's name for the JSON type, as in `cannot unmarshal string into …`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            View::Null => "null",
            View::Bool(_) => "bool",
            View::Number(_) => "number",
            View::String(_) => "string",
            View::Array(_) => "array",
            View::Object => "object",
        }
    }
}

/// A JSON value the encoder can read: a parsed [`Node`] or a [`serde_json::Value`].
pub(crate) trait JsonIn: Sized {
    fn view(&self) -> View<'_, Self>;
    /// An object's members in order (duplicates included for a [`Node`]); nothing for non-objects.
    fn members(&self) -> impl Iterator<Item = (&str, &Self)>;
    /// Appends the value as compact JSON: for a [`Node`] exactly `json.Compact` of its text.
    fn compact_into(&self, out: &mut Vec<u8>);
}

impl JsonIn for Node<'_> {
    fn view(&self) -> View<'_, Self> {
        match self {
            Node::Null => View::Null,
            Node::Bool(b) => View::Bool(*b),
            Node::Number(text) => View::Number(Num::Text(text)),
            Node::String { value, .. } => View::String(value),
            Node::Array(items) => View::Array(items),
            Node::Object(_) => View::Object,
        }
    }

    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        let members: &[Member<'_>] = match self {
            Node::Object(members) => members,
            _ => &[],
        };
        members.iter().map(|m| (m.key.as_ref(), &m.value))
    }

    fn compact_into(&self, out: &mut Vec<u8>) {
        match self {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Node::Number(text) => out.extend_from_slice(text.as_bytes()),
            Node::String { raw, .. } => {
                out.push(b'"');
                out.extend_from_slice(raw.as_bytes());
                out.push(b'"');
            }
            Node::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.compact_into(out);
                }
                out.push(b']');
            }
            Node::Object(members) => {
                out.push(b'{');
                for (i, member) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(member.raw_key.as_bytes());
                    out.extend_from_slice(b"\":");
                    member.value.compact_into(out);
                }
                out.push(b'}');
            }
        }
    }
}

impl JsonIn for serde_json::Value {
    fn view(&self) -> View<'_, Self> {
        match self {
            serde_json::Value::Null => View::Null,
            serde_json::Value::Bool(b) => View::Bool(*b),
            serde_json::Value::Number(n) => View::Number(Num::Serde(n)),
            serde_json::Value::String(s) => View::String(s),
            serde_json::Value::Array(items) => View::Array(items),
            serde_json::Value::Object(_) => View::Object,
        }
    }

    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        self.as_object().into_iter().flat_map(|m| m.iter()).map(|(k, v)| (k.as_str(), v))
    }

    fn compact_into(&self, out: &mut Vec<u8>) {
        // Writing JSON into a Vec cannot fail (serde_json only fails on non-string map keys, which
        // a Value does not have).
        let _ = serde_json::to_writer(&mut *out, self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(text: &str) -> String {
        let mut out = Vec::new();
        parse(text, 100).unwrap().compact_into(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn compaction_keeps_tokens_verbatim() {
        assert_eq!(
            compact(" { \"b\" : [ 1.50 , -0, 1e3 ] , \"a\\u0041\" : \"x\\/y\" , \"b\": null } "),
            r#"{"b":[1.50,-0,1e3],"a\u0041":"x\/y","b":null}"#
        );
    }

    #[test]
    fn strings_are_unescaped_like_go() {
        let Node::String { value, .. } = parse(r#""a\n\u00e9\ud83d\ude00\ud800x""#, 10).unwrap() else { panic!() };
        assert_eq!(value, "a\né😀\u{fffd}x");
    }

    #[test]
    fn malformed_json_is_an_error() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"\u{1}\"", "tru", "{} x", "\"\\x\""] {
            assert!(parse(bad, 10).is_err(), "{bad:?}");
        }
        assert!(parse("[[[]]]", 2).is_err());
        assert!(parse("[[[]]]", 3).is_ok());
    }

    #[test]
    fn numbers_follow_go_parsing() {
        assert_eq!(Num::Text("-12").to_i64(), Ok(-12));
        assert!(Num::Text("1.0").to_i64().is_err());
        assert!(Num::Text("1e3").to_i64().is_err());
        assert!(Num::Text("9223372036854775808").to_i64().unwrap_err().contains("overflows"));
        assert_eq!(Num::Text("1e3").to_f64(), Ok(1000.0));
        assert!(Num::Text("1e400").to_f64().is_err());
    }
}
