//! Standard padded base64 (RFC 4648 §4), as Go's `encoding/json` writes and reads `[]byte`:
//! `base64.StdEncoding`, which on input skips `\r` and `\n` and does not check the unused bits of
//! the last quantum.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the base64 of `bytes`, `=`-padded.
pub(crate) fn encode_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len().div_ceil(3) * 4);
    let mut chunks = bytes.chunks_exact(3);
    for chunk in &mut chunks {
        let n = u32::from(chunk[0]) << 16 | u32::from(chunk[1]) << 8 | u32::from(chunk[2]);
        out.extend_from_slice(&[sym(n >> 18), sym(n >> 12), sym(n >> 6), sym(n)]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[sym(n >> 18), sym(n >> 12), b'=', b'=']);
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            out.extend_from_slice(&[sym(n >> 18), sym(n >> 12), sym(n >> 6), b'=']);
        }
        _ => {}
    }
}

fn sym(sextet: u32) -> u8 {
    ALPHABET[(sextet & 63) as usize]
}

fn value(symbol: u8) -> Option<u32> {
    Some(u32::from(match symbol {
        b'A'..=b'Z' => symbol - b'A',
        b'a'..=b'z' => symbol - b'a' + 26,
        b'0'..=b'9' => symbol - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    }))
}

/// Decodes padded base64 as Go's `base64.StdEncoding.Decode` does.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, String> {
    let filtered: Vec<u8>;
    let mut bytes = text.as_bytes();
    if bytes.iter().any(|&b| b == b'\r' || b == b'\n') {
        filtered = bytes.iter().copied().filter(|&b| b != b'\r' && b != b'\n').collect();
        bytes = &filtered;
    }
    if !bytes.len().is_multiple_of(4) {
        return Err(format!("illegal base64 data: length {} is not a multiple of 4", bytes.len()));
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let quads = bytes.len() / 4;
    for (index, quad) in bytes.chunks_exact(4).enumerate() {
        let padding = match quad {
            [_, _, b'=', b'='] => 2,
            [_, _, _, b'='] => 1,
            _ => 0,
        };
        if padding > 0 && index + 1 != quads {
            return Err(format!("illegal base64 data at input byte {}", index * 4 + 4 - padding));
        }
        let mut n = 0u32;
        for (i, &symbol) in quad[..4 - padding].iter().enumerate() {
            let sextet = value(symbol).ok_or_else(|| format!("illegal base64 data at input byte {}", index * 4 + i))?;
            n |= sextet << (18 - 6 * i);
        }
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&decoded[..3 - padding]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_matches_go() {
        for len in 0..10 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 200) as u8).collect();
            let mut text = Vec::new();
            encode_into(&mut text, &bytes);
            assert_eq!(decode(std::str::from_utf8(&text).unwrap()).unwrap(), bytes);
        }
        let mut text = Vec::new();
        encode_into(&mut text, &[2]);
        assert_eq!(text, b"Ag==");
        assert_eq!(decode("Ag=\n=").unwrap(), vec![2]);
        assert_eq!(decode("Ah==").unwrap(), vec![2], "unused bits are not checked");
        assert!(decode("Ag=").is_err());
        assert!(decode("A===").is_err());
        assert!(decode("Ag==Ag==").is_err());
        assert!(decode("A*==").is_err());
    }
}
