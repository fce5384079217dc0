//! JSON text written the way Go's `encoding/json` writes it: `json.Marshal` (compact) or
//! `json.MarshalIndent(v, "", "  ")`, strings escaped with HTML escaping on (`<`, `>`, `&` as
//! `\u003c`…, U+2028/U+2029 escaped, invalid UTF-8 as `\ufffd`), floats in Go's format.

/// How decoded JSON is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JsonStyle {
    /// No whitespace, as `json.Marshal` (and kube-apiserver's responses) write it.
    #[default]
    Compact,
    /// Two-space indentation, `"key": value`, as `json.MarshalIndent(v, "", "  ")` writes it (the
    /// form of upstream's `testdata/HEAD/*.json` fixtures).
    Indented,
}

/// A JSON text writer that places commas, and in [`JsonStyle::Indented`] newlines and indentation.
pub(crate) struct JsonWriter {
    pub(crate) out: Vec<u8>,
    indented: bool,
    /// One entry per open container: whether it is an array, and whether it has members yet.
    stack: Vec<(bool, bool)>,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl JsonWriter {
    pub(crate) fn new(style: JsonStyle, capacity: usize) -> Self {
        Self { out: Vec::with_capacity(capacity), indented: style == JsonStyle::Indented, stack: Vec::with_capacity(16) }
    }

    fn newline(&mut self) {
        if self.indented {
            self.out.push(b'\n');
            for _ in 0..self.stack.len() {
                self.out.extend_from_slice(b"  ");
            }
        }
    }

    /// Separates a value from what comes before it in an array.
    fn before_value(&mut self) {
        if let Some((true, has_members)) = self.stack.last().copied() {
            if has_members {
                self.out.push(b',');
            }
            if let Some(top) = self.stack.last_mut() {
                top.1 = true;
            }
            self.newline();
        }
    }

    pub(crate) fn begin_object(&mut self) {
        self.before_value();
        self.out.push(b'{');
        self.stack.push((false, false));
    }

    pub(crate) fn end_object(&mut self) {
        self.end(b'}');
    }

    pub(crate) fn begin_array(&mut self) {
        self.before_value();
        self.out.push(b'[');
        self.stack.push((true, false));
    }

    pub(crate) fn end_array(&mut self) {
        self.end(b']');
    }

    fn end(&mut self, close: u8) {
        if let Some((_, has_members)) = self.stack.pop() {
            if has_members && self.indented {
                self.newline();
            }
        }
        self.out.push(close);
    }

    /// Writes an object member's key given as bytes that may not be UTF-8.
    pub(crate) fn key_bytes(&mut self, key: &[u8]) {
        if let Some(top) = self.stack.last_mut() {
            if top.1 {
                self.out.push(b',');
            }
            top.1 = true;
        }
        self.newline();
        write_string(&mut self.out, key);
        self.out.extend_from_slice(if self.indented { b": " } else { b":" });
    }

    /// Writes a key given as its quoted text and colon, `"name":` (the schema's JSON names,
    /// formatted once).
    pub(crate) fn member_key(&mut self, quoted: &[u8]) {
        if let Some(top) = self.stack.last_mut() {
            if top.1 {
                self.out.push(b',');
            }
            top.1 = true;
        }
        if self.indented {
            self.newline();
            self.out.extend_from_slice(quoted);
            self.out.push(b' ');
        } else {
            self.out.extend_from_slice(quoted);
        }
    }

    /// Writes a key whose text needs no escaping.
    pub(crate) fn plain_key(&mut self, key: &str) {
        if let Some(top) = self.stack.last_mut() {
            if top.1 {
                self.out.push(b',');
            }
            top.1 = true;
        }
        self.newline();
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(if self.indented { b"\": " } else { b"\":" });
    }

    pub(crate) fn null(&mut self) {
        self.before_value();
        self.out.extend_from_slice(b"null");
    }

    pub(crate) fn bool(&mut self, value: bool) {
        self.before_value();
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
    }

    pub(crate) fn int(&mut self, value: i64) {
        self.before_value();
        put_int(&mut self.out, value);
    }

    /// Writes a float as Go does; NaN and infinities are errors there (`json: unsupported value`).
    pub(crate) fn float(&mut self, value: f64) -> Result<(), String> {
        if !value.is_finite() {
            return Err(format!("unsupported value {value} (JSON has no NaN or infinity)"));
        }
        self.before_value();
        put_go_float(&mut self.out, value);
        Ok(())
    }

    /// Writes a string given as bytes that may not be UTF-8 (a protobuf `string` is not checked).
    pub(crate) fn string(&mut self, value: &[u8]) {
        self.before_value();
        write_string(&mut self.out, value);
    }

    /// Writes already-formatted text as a string value (it must need no escaping).
    pub(crate) fn plain_string(&mut self, value: &str) {
        self.before_value();
        self.out.push(b'"');
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(b'"');
    }

    /// Writes a string whose text `write` appends and which needs no escaping (times, durations).
    pub(crate) fn quoted(&mut self, write: impl FnOnce(&mut Vec<u8>) -> Result<(), String>) -> Result<(), String> {
        self.before_value();
        self.out.push(b'"');
        write(&mut self.out)?;
        self.out.push(b'"');
        Ok(())
    }

    /// Writes a number token as it is (a JSON number literal from embedded raw JSON).
    pub(crate) fn number_token(&mut self, token: &str) {
        self.before_value();
        self.out.extend_from_slice(token.as_bytes());
    }

    /// Writes a string token from embedded raw JSON: its escapes kept verbatim, as Go's `compact`
    /// does with the output of a `MarshalJSON`, except for the HTML-escaped characters.
    pub(crate) fn string_token(&mut self, raw: &str) {
        self.before_value();
        push_string_token(&mut self.out, raw);
    }

    /// Writes a key token from embedded raw JSON (see [`string_token`](Self::string_token)).
    pub(crate) fn key_token(&mut self, raw: &str) {
        if let Some(top) = self.stack.last_mut() {
            if top.1 {
                self.out.push(b',');
            }
            top.1 = true;
        }
        self.newline();
        push_string_token(&mut self.out, raw);
        self.out.extend_from_slice(if self.indented { b": " } else { b":" });
    }

    /// Writes bytes as a standard padded base64 string, Go's encoding of `[]byte`.
    pub(crate) fn base64(&mut self, bytes: &[u8]) {
        self.before_value();
        self.out.push(b'"');
        super::base64::encode_into(&mut self.out, bytes);
        self.out.push(b'"');
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Appends the decimal digits of `value`.
pub(crate) fn put_int(out: &mut Vec<u8>, value: i64) {
    let mut buf = [0u8; 20];
    let mut n = value.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends a finite float as Go's `encoding/json` does: the shortest digits that round-trip, in
/// plain decimal notation unless the magnitude is below 1e-6 or from 1e21, then `1e-07` → `1e-7`
/// style exponents (`1e+21` keeps its sign).
pub(crate) fn put_go_float(out: &mut Vec<u8>, value: f64) {
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` gives the same shortest digits as Go's 'e' format, without the exponent's
        // `+` and zero padding; Go then strips the padding of single-digit negative exponents.
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) => {
                out.extend_from_slice(mantissa.as_bytes());
                out.push(b'e');
                if !exponent.starts_with('-') {
                    out.push(b'+');
                }
                out.extend_from_slice(exponent.as_bytes());
            }
            None => out.extend_from_slice(text.as_bytes()),
        }
    } else {
        // `Display` is shortest round-trip digits in plain notation, as Go's 'f' format with
        // precision -1 (`-0` included).
        out.extend_from_slice(value.to_string().as_bytes());
    }
}

/// Bytes `write_string` cannot copy as they are: control characters, `"`, `\\`, the HTML-escaped
/// `<`, `>`, `&`, and every non-ASCII byte (checked for UTF-8 validity and U+2028/U+2029).
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20
            || b >= 0x80
            || b == b'"' as usize
            || b == b'\\' as usize
            || b == b'<' as usize
            || b == b'>' as usize
            || b == b'&' as usize;
        b += 1;
    }
    table
};

/// Appends `value` as a Go-escaped JSON string; each byte that does not start a valid UTF-8
/// sequence becomes `\ufffd`, as Go's `utf8.DecodeRuneInString` reports it (one byte at a time).
pub(crate) fn write_string(out: &mut Vec<u8>, value: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < value.len() {
        let b = value[i];
        if !SPECIAL[usize::from(b)] {
            i += 1;
            continue;
        }
        out.extend_from_slice(&value[start..i]);
        if b < 0x80 {
            push_ascii_escape(out, b);
            i += 1;
        } else {
            let len = match b {
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => 0,
            };
            match value.get(i..i + len) {
                Some(char_bytes) if len > 0 && std::str::from_utf8(char_bytes).is_ok() => {
                    match char_bytes {
                        [0xe2, 0x80, 0xa8] => out.extend_from_slice(b"\\u2028"),
                        [0xe2, 0x80, 0xa9] => out.extend_from_slice(b"\\u2029"),
                        _ => out.extend_from_slice(char_bytes),
                    }
                    i += len;
                }
                _ => {
                    out.extend_from_slice(b"\\ufffd");
                    i += 1;
                }
            }
        }
        start = i;
    }
    out.extend_from_slice(&value[start..]);
    out.push(b'"');
}

/// Appends the escape of an ASCII byte `write_string` does not copy.
fn push_ascii_escape(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]),
    }
}

/// Appends a raw JSON string token (the text between its quotes, escapes intact) with the
/// characters Go's HTML-escaping `compact` rewrites: `<`, `>`, `&`, U+2028, U+2029.
fn push_string_token(out: &mut Vec<u8>, raw: &str) {
    out.push(b'"');
    let bytes = raw.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let replacement: Option<&[u8]> = match bytes[i] {
            b'<' => Some(b"\\u003c"),
            b'>' => Some(b"\\u003e"),
            b'&' => Some(b"\\u0026"),
            0xe2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) => {
                Some(if bytes[i + 2] == 0xa8 { b"\\u2028" } else { b"\\u2029" })
            }
            _ => None,
        };
        match replacement {
            Some(text) => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(text);
                i += if bytes[i] == 0xe2 { 3 } else { 1 };
                start = i;
            }
            None => i += 1,
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(value: f64) -> String {
        let mut out = Vec::new();
        put_go_float(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    fn string(value: &[u8]) -> String {
        let mut out = Vec::new();
        write_string(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        assert_eq!(float(9.5), "9.5");
        assert_eq!(float(10.0), "10");
        assert_eq!(float(-0.0), "-0");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(0.0000001), "1e-7");
        assert_eq!(float(1.5e-10), "1.5e-10");
        assert_eq!(float(1e20), "100000000000000000000");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1.25e300), "1.25e+300");
        assert_eq!(float(0.1), "0.1");
    }

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        assert_eq!(string(b"<no json tag> a&b"), r#""\u003cno json tag\u003e a\u0026b""#);
        assert_eq!(string("\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}é".as_bytes()), "\"\\\"\\\\\\n\\r\\t\\b\\f\\u0001\u{7f}é\"");
        assert_eq!(string("a\u{2028}b\u{2029}".as_bytes()), r#""a\u2028b\u2029""#);
        assert_eq!(string(b"a\xe2\x82b\xff"), r#""a\ufffd\ufffdb\ufffd""#);
    }

    #[test]
    fn indentation_matches_marshal_indent() {
        let mut w = JsonWriter::new(JsonStyle::Indented, 0);
        w.begin_object();
        w.plain_key("a");
        w.begin_array();
        w.int(1);
        w.begin_object();
        w.end_object();
        w.begin_array();
        w.end_array();
        w.end_array();
        w.plain_key("b");
        w.null();
        w.end_object();
        assert_eq!(String::from_utf8(w.finish()).unwrap(), "{\n  \"a\": [\n    1,\n    {},\n    []\n  ],\n  \"b\": null\n}");
    }
}
