//! A batch's operations as bytes, the form a staged commit's intent keeps them in.

use super::super::kv::Op;
use super::layout::{family, family_of};
use crate::{Error, Result};

/// A batch's operations as bytes (an intent): per operation a tag (`P`ut, `D`elete, `R`ange
/// delete), the family letter and two length-prefixed byte strings.
pub(super) fn encode_ops(ops: &[Op]) -> Vec<u8> {
    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(b);
    }
    let mut out = Vec::new();
    for op in ops {
        let (tag, cf, a, b): (u8, &str, &[u8], &[u8]) = match op {
            Op::Put { cf, key, value } => (b'P', cf, key, value),
            Op::Delete { cf, key } => (b'D', cf, key, &[]),
            Op::DeleteRange { cf, from, to } => (b'R', cf, from, to),
        };
        out.push(tag);
        out.push(family(cf));
        bytes(&mut out, a);
        bytes(&mut out, b);
    }
    out
}

/// An intent's operations, as [`encode_ops`] wrote them.
pub(super) fn decode_ops(mut data: &[u8]) -> Result<Vec<Op>> {
    fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
        if data.len() < n {
            return Err(Error::Corrupt("etcd commit intent: truncated".into()));
        }
        let (a, b) = data.split_at(n);
        *data = b;
        Ok(a)
    }
    fn bytes(data: &mut &[u8]) -> Result<Vec<u8>> {
        let n = u32::from_be_bytes(take(data, 4)?.try_into().map_err(|_| Error::Corrupt("etcd commit intent".into()))?);
        Ok(take(data, n as usize)?.to_vec())
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let head = take(&mut data, 2)?;
        let (tag, cf) = (head[0], family_of(head[1])?);
        let a = bytes(&mut data)?;
        let b = bytes(&mut data)?;
        out.push(match tag {
            b'P' => Op::Put { cf, key: a, value: b },
            b'D' => Op::Delete { cf, key: a },
            b'R' => Op::DeleteRange { cf, from: a, to: b },
            _ => return Err(Error::Corrupt(format!("etcd commit intent: operation {tag}"))),
        });
    }
    Ok(out)
}
