//! JSON text of a [`serde_json::Value`]: `serde_json`'s compact rendering, byte for byte, with
//! strings scanned eight bytes at a time.
//!
//! A write's record and its reply are mostly one long string (a ConfigMap's data, a Secret, an
//! annotation), which `serde_json` escapes one byte at a time through a table: half of a 1 KiB
//! object's serialisation. Here a string is copied in runs between the bytes that need an escape
//! (the quote, the backslash, control characters), each run found a word at a time. Numbers are
//! written by `serde_json` itself, so every value renders exactly as `serde_json::to_vec` would.
//! (`sonic-rs` scans strings with SIMD too, but writes floats in its own way and adds a
//! dependency the size of a JSON library for one loop.)

use serde_json::Value;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of the eight in `w` must be escaped: below 0x20, `"` or `\`.
const fn has_special(w: u64) -> bool {
    // A byte below n (n ≤ 0x80) borrows into its high bit when n is subtracted, and had that bit
    // clear; a byte equal to c is zero after `^ c`. XOR with a byte below 0x80 keeps the high
    // bit, so the three tests share the mask of bytes whose high bit was clear.
    let below_space = w.wrapping_sub(ONES * 0x20);
    let quote = (w ^ (ONES * 0x22)).wrapping_sub(ONES);
    let backslash = (w ^ (ONES * 0x5c)).wrapping_sub(ONES);
    (below_space | quote | backslash) & !w & HIGHS != 0
}

/// Whether any byte of the eight in `w` is one Go's `encoding/json` escapes in a string: those of
/// [`has_special`], `<`, `>`, `&`, and 0xE2 (the first byte of U+2028 and U+2029).
const fn has_go_special(w: u64) -> bool {
    let ascii = (w.wrapping_sub(ONES * 0x20)
        | (w ^ (ONES * 0x22)).wrapping_sub(ONES)
        | (w ^ (ONES * 0x5c)).wrapping_sub(ONES)
        | (w ^ (ONES * 0x3c)).wrapping_sub(ONES)
        | (w ^ (ONES * 0x3e)).wrapping_sub(ONES)
        | (w ^ (ONES * 0x26)).wrapping_sub(ONES))
        & !w;
    // A byte equal to 0xE2 is zero after `^`; its high bit is then clear, so its own mask.
    let x = w ^ (ONES * 0xe2);
    let e2 = x.wrapping_sub(ONES) & !x;
    (ascii | e2) & HIGHS != 0
}

/// How many bytes at the start of `bytes`, in whole words of eight, need no escape.
pub(crate) fn plain_words(bytes: &[u8]) -> usize {
    words_without(bytes, has_special)
}

/// How many bytes at the start of `bytes`, in whole words of eight, need no escape in Go's
/// `encoding/json` string form.
pub(crate) fn go_plain_words(bytes: &[u8]) -> usize {
    words_without(bytes, has_go_special)
}

#[inline(always)]
fn words_without(bytes: &[u8], special: impl Fn(u64) -> bool) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if special(u64::from_le_bytes(word)) {
            break;
        }
        n += 8;
    }
    n
}

/// The escape of a byte: 0 for none, `u` for `\u00XX`, otherwise the letter after the backslash.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `s` as a JSON string with `serde_json`'s escapes (the quote, the backslash and
/// control characters; `\u00xx` in lower-case hex; no HTML escaping).
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        i += plain_words(&bytes[i..]);
        // The word with a byte to escape (or the short tail), a byte at a time.
        let end = bytes.len().min(i + 8);
        while i < end {
            let b = bytes[i];
            let escape = ESCAPE[usize::from(b)];
            if escape != 0 {
                out.extend_from_slice(&bytes[start..i]);
                match escape {
                    b'u' => {
                        const HEX: &[u8; 16] = b"0123456789abcdef";
                        out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
                    }
                    letter => out.extend_from_slice(&[b'\\', letter]),
                }
                start = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends `value` as compact JSON text, the bytes `serde_json::to_vec` writes.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing into a vector cannot fail.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (key, member)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, key);
                out.push(b':');
                write_value(out, member);
            }
            out.push(b'}');
        }
    }
}

/// `value` as compact JSON text, the bytes `serde_json::to_vec` returns.
#[must_use]
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_character_escapes_as_serde_json_escapes_it() {
        for c in (0u32..0x300).chain([0x2028, 0x2029, 0xfffd, 0x1f600]).filter_map(char::from_u32) {
            // At every offset in and around a word, so both the word scan and the byte loop see it.
            for pad in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(pad), "b".repeat(17 - pad));
                let mut got = Vec::new();
                write_string(&mut got, &s);
                assert_eq!(got, serde_json::to_vec(&s).unwrap(), "{c:?} at {pad}");
            }
        }
    }

    #[test]
    fn values_render_as_serde_json_renders_them() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"a": [1, -2, 3.5, 1e300, 0.1, -0.0, 18446744073709551615u64, i64::MIN], "b": {"c": null, "d": true, "e": false}}),
            json!({"data": {"payload": "x".repeat(1000), "q": "\"quoted\"\n\ttabbed\u{1}\u{1f}\u{7f}é", "": ""}}),
            json!(["\\", "\u{8}\u{c}", "ends with a quote\""]),
        ];
        for v in values {
            assert_eq!(to_vec(&v), serde_json::to_vec(&v).unwrap(), "{v}");
        }
    }

    #[test]
    fn mixed_strings_escape_as_serde_json_escapes_them() {
        let alphabet = ['a', ' ', '"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', 'é', '€', '\u{1f600}', '~', '!', '#'];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            let s: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let mut got = Vec::new();
            write_string(&mut got, &s);
            assert_eq!(got, serde_json::to_vec(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn word_scan_finds_each_special_byte() {
        for special in (0u8..0x20).chain([b'"', b'\\']) {
            for at in 0..8 {
                let mut word = *b"abcdefgh";
                word[at] = special;
                assert!(has_special(u64::from_le_bytes(word)), "{special:#x} at {at}");
            }
        }
        for plain in (0x20u8..=0xff).filter(|b| !matches!(b, b'"' | b'\\')) {
            assert!(!has_special(u64::from_le_bytes([plain; 8])), "{plain:#x}");
        }
    }

    #[test]
    fn go_word_scan_finds_each_byte_go_escapes_and_no_other() {
        let go_special = |b: u8| b < 0x20 || matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xe2);
        for b in 0u8..=0xff {
            for at in 0..8 {
                for fill in [b'a', 0x7f, 0x80, 0xe1, 0xe3, 0xff] {
                    let mut word = [fill; 8];
                    word[at] = b;
                    assert_eq!(has_go_special(u64::from_le_bytes(word)), go_special(b), "{b:#x} at {at} among {fill:#x}");
                }
            }
        }
    }
}
