//! Continue tokens: where the next page of a list starts, at the revision of its first page.
//!
//! A token is `base64url(version 1 ‖ revision u64 ‖ remaining u64 ‖ next key ‖ FNV-1a 64 of the
//! rest)`; one that does not decode or fails its checksum is a 400.

use super::keys;
use crate::{Error, Result};

/// A decoded continue token.
pub(super) struct Token {
    /// The revision every page is read at, or [`Token::LATEST`].
    pub(super) revision: u64,
    pub(super) remaining: Option<u64>,
    pub(super) key: Vec<u8>,
}

const TOKEN_VERSION: u8 = 1;

impl Token {
    /// The revision of a token handed out with a 410 for an expired one: read the rest of the
    /// list at the current revision (Kubernetes encodes it as resourceVersion -1).
    pub(super) const LATEST: u64 = u64::MAX;

    pub(super) fn encode(&self) -> String {
        let mut b = Vec::with_capacity(25 + self.key.len());
        b.push(TOKEN_VERSION);
        b.extend_from_slice(&self.revision.to_be_bytes());
        b.extend_from_slice(&self.remaining.unwrap_or(u64::MAX).to_be_bytes());
        b.extend_from_slice(&self.key);
        let sum = fnv1a(&b);
        b.extend_from_slice(&sum.to_be_bytes());
        base64url(&b)
    }

    pub(super) fn decode(s: &str) -> Result<Self> {
        let bad = || Error::BadRequest("continue key is not valid: malformed or tampered token".into());
        let b = unbase64url(s).ok_or_else(bad)?;
        if b.len() < 25 || b.first() != Some(&TOKEN_VERSION) {
            return Err(bad());
        }
        let (body, sum) = b.split_at(b.len() - 8);
        if keys::read_u64(sum)? != fnv1a(body) {
            return Err(bad());
        }
        let revision = keys::read_u64(body.get(1..9).ok_or_else(bad)?)?;
        let remaining = keys::read_u64(body.get(9..17).ok_or_else(bad)?)?;
        Ok(Token { revision, remaining: (remaining != u64::MAX).then_some(remaining), key: body.get(17..).ok_or_else(bad)?.to_vec() })
    }
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() * 4 / 3 + 4);
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | u32::from(x) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn unbase64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.as_bytes().chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = B64.iter().position(|b| b == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_detect_tampering() {
        let t = Token { revision: 42, remaining: Some(7), key: vec![0, 0, 0, 1, b'n', 0] };
        let s = t.encode();
        let d = Token::decode(&s).unwrap();
        assert_eq!((d.revision, d.remaining, d.key), (42, Some(7), t.key.clone()));
        let mut bytes = s.into_bytes();
        bytes[3] = if bytes[3] == b'A' { b'B' } else { b'A' };
        assert!(matches!(Token::decode(&String::from_utf8(bytes).unwrap()), Err(Error::BadRequest(_))));
        assert!(Token::decode("!!").is_err());
    }
}
