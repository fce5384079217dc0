//! Protobuf wire format as gogo-generated Kubernetes code reads and writes it: varints of at most
//! ten bytes, length-delimited fields checked against the end of the input, unknown fields (groups
//! included) skipped, end-group and field number 0 rejected.

/// One field value as found on the wire.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wire<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1, little endian.
    Fixed64(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire type 5, little endian.
    Fixed32(u32),
    /// Wire type 3: a group, already skipped (Kubernetes messages have none, so it is always unknown).
    Group,
}

impl Wire<'_> {
    /// The wire type number.
    pub(crate) fn wire_type(self) -> u8 {
        match self {
            Wire::Varint(_) => 0,
            Wire::Fixed64(_) => 1,
            Wire::Bytes(_) => 2,
            Wire::Group => 3,
            Wire::Fixed32(_) => 5,
        }
    }
}

/// A failure to read the wire format; `field` is the number of the field whose value was being read,
/// when its key had been read.
#[derive(Debug)]
pub(crate) struct WireError {
    pub(crate) field: Option<u32>,
    pub(crate) reason: String,
}

impl WireError {
    fn new(field: Option<u32>, reason: impl Into<String>) -> Self {
        Self { field, reason: reason.into() }
    }
}

/// Reads the fields of one message body.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// How many bytes have been read.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The next field: its number and value, or `None` at the end of the body.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Wire<'a>)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint().map_err(|reason| WireError::new(None, format!("field key: {reason}")))?;
        let wire_type = (key & 7) as u8;
        let number = key >> 3;
        if wire_type == 4 {
            return Err(WireError::new(None, "end-group wire type outside a group"));
        }
        if number == 0 || number > u64::from(MAX_FIELD_NUMBER) {
            return Err(WireError::new(None, format!("illegal field number {number} (wire type {wire_type})")));
        }
        let number = number as u32;
        let fail = |reason: String| WireError::new(Some(number), reason);
        let value = match wire_type {
            0 => Wire::Varint(self.varint().map_err(fail)?),
            1 => Wire::Fixed64(u64::from_le_bytes(self.fixed::<8>().map_err(fail)?)),
            2 => {
                let len = self.varint().map_err(fail)?;
                let left = self.buf.len() - self.pos;
                if len > left as u64 {
                    return Err(fail(format!("truncated: length {len} but {left} bytes left")));
                }
                let bytes = &self.buf[self.pos..self.pos + len as usize];
                self.pos += len as usize;
                Wire::Bytes(bytes)
            }
            3 => {
                self.skip_group(number).map_err(fail)?;
                Wire::Group
            }
            5 => Wire::Fixed32(u32::from_le_bytes(self.fixed::<4>().map_err(fail)?)),
            other => return Err(fail(format!("illegal wire type {other}"))),
        };
        Ok(Some((number, value)))
    }

    /// A varint as gogo reads it: at most ten bytes, bits beyond 64 dropped.
    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        // Most varints (keys, lengths, small numbers) are one byte.
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(u64::from(byte));
            }
        }
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err("integer overflow (varint longer than 10 bytes)".into());
            }
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err("truncated varint".into());
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let left = self.buf.len() - self.pos;
        let bytes: [u8; N] = self
            .buf
            .get(self.pos..self.pos + N)
            .and_then(|slice| slice.try_into().ok())
            .ok_or_else(|| format!("truncated: {N}-byte value but {left} bytes left"))?;
        self.pos += N;
        Ok(bytes)
    }

    /// Skips a group's fields up to its end-group key (nested groups included).
    fn skip_group(&mut self, number: u32) -> Result<(), String> {
        let mut depth = 1usize;
        while depth > 0 {
            if self.pos >= self.buf.len() {
                return Err(format!("truncated group {number}"));
            }
            let key = self.varint()?;
            match key & 7 {
                0 => {
                    self.varint()?;
                }
                1 => {
                    self.fixed::<8>()?;
                }
                2 => {
                    let len = self.varint()?;
                    let left = self.buf.len() - self.pos;
                    if len > left as u64 {
                        return Err(format!("truncated: length {len} but {left} bytes left"));
                    }
                    self.pos += len as usize;
                }
                3 => depth += 1,
                4 => depth -= 1,
                5 => {
                    self.fixed::<4>()?;
                }
                other => return Err(format!("illegal wire type {other}")),
            }
        }
        Ok(())
    }
}

/// The largest field number protobuf allows.
pub(crate) const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// Appends `value` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// How many bytes [`put_varint`] appends for `value`.
pub(crate) fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// How many bytes [`put_key`] appends for a field of `number`.
pub(crate) fn key_len(number: u32) -> usize {
    varint_len(u64::from(number) << 3)
}

/// Appends a field key.
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field holding `bytes`.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Starts a length-delimited field whose content is written next: writes the key and reserves one
/// byte for the length. Returns what [`end_len`] needs.
pub(crate) fn begin_len(out: &mut Vec<u8>, number: u32) -> usize {
    put_key(out, number, 2);
    out.push(0);
    out.len()
}

/// Ends a field begun with [`begin_len`]: writes the content's length in front of it, moving the
/// content when the length needs more than the one reserved byte.
pub(crate) fn end_len(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start - 1] = len as u8;
        return;
    }
    let mut prefix = [0u8; 10];
    let mut n = 0;
    let mut value = len as u64;
    while value >= 0x80 {
        prefix[n] = (value as u8) | 0x80;
        value >>= 7;
        n += 1;
    }
    prefix[n] = value as u8;
    n += 1;
    // Grow by n - 1 bytes, shift the content right, then write the length over the reserved byte.
    out.resize(out.len() + n - 1, 0);
    out.copy_within(start..start + len, start + n - 1);
    out[start - 1..start - 1 + n].copy_from_slice(&prefix[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lengths_move_the_content() {
        for len in [0usize, 1, 127, 128, 300, 20_000] {
            let mut out = vec![9];
            let start = begin_len(&mut out, 2);
            out.extend(std::iter::repeat_n(7u8, len));
            end_len(&mut out, start);
            let mut expected = vec![9];
            put_bytes(&mut expected, 2, &vec![7u8; len]);
            assert_eq!(out, expected, "len {len}");
        }
    }

    #[test]
    fn lengths_of_varints_and_keys_are_what_is_written() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
        for number in [1u32, 15, 16, 2047, 2048, MAX_FIELD_NUMBER] {
            let mut out = Vec::new();
            put_key(&mut out, number, 2);
            assert_eq!(key_len(number), out.len(), "{number}");
        }
    }

    #[test]
    fn varints_follow_gogo() {
        let ten = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&ten).varint(), Ok(u64::MAX));
        let eleven = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00];
        assert!(Reader::new(&eleven).varint().is_err());
        assert!(Reader::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn groups_are_skipped_and_bad_keys_rejected() {
        // field 1 start group, field 2 varint inside, end group 1, then field 3 varint.
        let bytes = [0x0b, 0x10, 0x05, 0x0c, 0x18, 0x07];
        let mut reader = Reader::new(&bytes);
        assert!(matches!(reader.next_field().unwrap(), Some((1, Wire::Group))));
        assert!(matches!(reader.next_field().unwrap(), Some((3, Wire::Varint(7)))));
        assert!(reader.next_field().unwrap().is_none());
        assert!(Reader::new(&[0x0c]).next_field().is_err());
        assert!(Reader::new(&[0x00, 0x00]).next_field().is_err());
        assert!(Reader::new(&[0x0f]).next_field().is_err());
    }
}
