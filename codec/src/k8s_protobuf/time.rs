//! `metav1.Time`, `metav1.MicroTime` and `metav1.Duration` in their JSON forms, as apimachinery
//! writes and reads them.

use crate::rfc3339;

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z): a time that `IsZero`, written as
/// JSON `null` and as a zero-length protobuf message.
pub(crate) const GO_ZERO_UNIX: i64 = -62_135_596_800;

/// Appends `seconds` (and `micros`, for a MicroTime) as `time.RFC3339` or `RFC3339Micro` in UTC:
/// `2008-01-01T01:01:01Z` / `2003-01-01T01:01:01.000003Z`.
///
/// Years outside 0000–9999 are an error: Go would write a year RFC 3339 cannot hold, which no
/// parser (Go's included) reads back.
pub(crate) fn format(out: &mut Vec<u8>, seconds: i64, micros: Option<u32>) -> Result<(), String> {
    let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = rfc3339::civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return Err(format!("time {seconds} (Unix seconds) is outside the years 0000-9999 that RFC 3339 can express"));
    }
    let two = |out: &mut Vec<u8>, n: i64| out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
    two(out, year / 100);
    two(out, year % 100);
    out.push(b'-');
    two(out, month);
    out.push(b'-');
    two(out, day);
    out.push(b'T');
    two(out, secs / 3600);
    out.push(b':');
    two(out, secs / 60 % 60);
    out.push(b':');
    two(out, secs % 60);
    if let Some(micros) = micros {
        out.push(b'.');
        let mut digits = [b'0'; 6];
        let mut n = micros;
        for digit in digits.iter_mut().rev() {
            *digit = b'0' + (n % 10) as u8;
            n /= 10;
        }
        out.extend_from_slice(&digits);
    }
    out.push(b'Z');
    Ok(())
}

/// Parses a `metav1.Time` JSON string as `time.Parse(time.RFC3339, s)` does (fractional seconds
/// and numeric offsets accepted) into Unix seconds; the fraction is dropped, as `Time.ProtoTime`
/// drops it.
pub(crate) fn parse_time(text: &str) -> Result<i64, String> {
    rfc3339::parse(&period_fraction(text))
        .map(|(seconds, _nanos)| seconds)
        .ok_or_else(|| format!("parsing time {text:?} as RFC 3339 failed"))
}

/// Go's parser also takes a comma before the fractional seconds; `rfc3339::parse` wants a period.
fn period_fraction(text: &str) -> std::borrow::Cow<'_, str> {
    if text.as_bytes().get(19) == Some(&b',') && text.as_bytes().get(20).is_some_and(u8::is_ascii_digit) {
        std::borrow::Cow::Owned(format!("{}.{}", &text[..19], &text[20..]))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Parses a `metav1.MicroTime` JSON string as `time.Parse(RFC3339Micro, s)` does: exactly six
/// fractional digits. Returns Unix seconds and nanoseconds (whole microseconds).
pub(crate) fn parse_micro_time(text: &str) -> Result<(i64, u32), String> {
    let text = &*period_fraction(text);
    let six_digits = text.as_bytes().get(19) == Some(&b'.')
        && text.as_bytes().get(20..26).is_some_and(|d| d.iter().all(u8::is_ascii_digit))
        && !text.as_bytes().get(26).is_some_and(u8::is_ascii_digit);
    if !six_digits {
        return Err(format!("parsing time {text:?} as \"2006-01-02T15:04:05.000000Z07:00\" failed: six fractional digits expected"));
    }
    rfc3339::parse(text).ok_or_else(|| format!("parsing time {text:?} as \"2006-01-02T15:04:05.000000Z07:00\" failed"))
}

/// `time.Unix(seconds, nanos)` as MicroTime's protobuf decoding builds it (nanos first truncated
/// toward zero to whole microseconds): normalised seconds and microseconds.
pub(crate) fn micro_time_from_proto(seconds: i64, nanos: i32) -> Result<(i64, u32), String> {
    let nanos = i64::from(nanos) / 1000 * 1000;
    let seconds = seconds.checked_add(nanos.div_euclid(1_000_000_000)).ok_or("MicroTime seconds overflow")?;
    Ok((seconds, (nanos.rem_euclid(1_000_000_000) / 1000) as u32))
}

/// Appends `nanos` as Go's `time.Duration.String` writes it: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn format_duration(out: &mut Vec<u8>, nanos: i64) {
    let mut buf = [0u8; 32];
    let mut w = buf.len();
    let mut u = nanos.unsigned_abs();
    let negative = nanos < 0;
    // Writes the fraction of v / 10^prec (trailing zeros, and the point if nothing else, omitted).
    let frac = |buf: &mut [u8; 32], w: &mut usize, mut v: u64, prec: u32| -> u64 {
        let mut print = false;
        for _ in 0..prec {
            let digit = v % 10;
            print = print || digit != 0;
            if print {
                *w -= 1;
                buf[*w] = b'0' + digit as u8;
            }
            v /= 10;
        }
        if print {
            *w -= 1;
            buf[*w] = b'.';
        }
        v
    };
    let int = |buf: &mut [u8; 32], w: &mut usize, mut v: u64| loop {
        *w -= 1;
        buf[*w] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    };
    w -= 1;
    buf[w] = b's';
    if u < 1_000_000_000 {
        let prec = match u {
            0 => {
                out.extend_from_slice(b"0s");
                return;
            }
            1..=999 => {
                w -= 1;
                buf[w] = b'n';
                0
            }
            1_000..=999_999 => {
                w -= 2;
                buf[w..w + 2].copy_from_slice("µ".as_bytes());
                3
            }
            _ => {
                w -= 1;
                buf[w] = b'm';
                6
            }
        };
        u = frac(&mut buf, &mut w, u, prec);
        int(&mut buf, &mut w, u);
    } else {
        u = frac(&mut buf, &mut w, u, 9);
        int(&mut buf, &mut w, u % 60);
        u /= 60;
        if u > 0 {
            w -= 1;
            buf[w] = b'm';
            int(&mut buf, &mut w, u % 60);
            u /= 60;
            if u > 0 {
                w -= 1;
                buf[w] = b'h';
                int(&mut buf, &mut w, u);
            }
        }
    }
    if negative {
        w -= 1;
        buf[w] = b'-';
    }
    out.extend_from_slice(&buf[w..]);
}

/// Parses a duration as Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units
/// `ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`, `h`, or `0`.
pub(crate) fn parse_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let overflow = || format!("time: invalid duration {text:?} (overflow)");
    let mut s = text.as_bytes();
    let mut negative = false;
    if let Some((&sign @ (b'-' | b'+'), rest)) = s.split_first() {
        negative = sign == b'-';
        s = rest;
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part.
        let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &d in &s[..digits] {
            if v > LIMIT / 10 {
                return Err(overflow());
            }
            v = v * 10 + u64::from(d - b'0');
            if v > LIMIT {
                return Err(overflow());
            }
        }
        let pre = digits > 0;
        s = &s[digits..];
        // Fraction.
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
            let mut overflowed = false;
            for &d in &s[..digits] {
                if overflowed {
                    continue;
                }
                if f > (LIMIT - 1) / 10 {
                    overflowed = true;
                    continue;
                }
                let y = f * 10 + u64::from(d - b'0');
                if y > LIMIT {
                    overflowed = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = digits > 0;
            s = &s[digits..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        // Unit.
        let unit_len = s.iter().take_while(|&&b| b != b'.' && !b.is_ascii_digit()).count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let unit: u64 = match &s[..unit_len] {
            b"ns" => 1,
            b"us" => 1_000,
            b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            other => return Err(format!("time: unknown unit {:?} in duration {text:?}", String::from_utf8_lossy(other))),
        };
        s = &s[unit_len..];
        if v > LIMIT / unit {
            return Err(overflow());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(overflow());
            }
        }
        total = total.checked_add(v).ok_or_else(overflow)?;
        if total > LIMIT {
            return Err(overflow());
        }
    }
    if negative {
        return Ok((total as i64).wrapping_neg());
    }
    if total > LIMIT - 1 {
        return Err(overflow());
    }
    Ok(total as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duration(nanos: i64) -> String {
        let mut out = Vec::new();
        format_duration(&mut out, nanos);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn durations_are_written_as_go_writes_them() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(1), "1ns");
        assert_eq!(duration(1_500), "1.5µs");
        assert_eq!(duration(1_500_000), "1.5ms");
        assert_eq!(duration(60_000_000_000), "1m0s");
        assert_eq!(duration(3_723_500_000_000), "1h2m3.5s");
        assert_eq!(duration(-2_000_000_000), "-2s");
        assert_eq!(duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(duration(i64::MAX), "2562047h47m16.854775807s");
    }

    #[test]
    fn durations_are_parsed_as_go_parses_them() {
        assert_eq!(parse_duration("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(parse_duration("1.5µs"), Ok(1_500));
        assert_eq!(parse_duration("-0"), Ok(0));
        assert_eq!(parse_duration("+5ms"), Ok(5_000_000));
        assert_eq!(parse_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration("-2562047h47m16.854775808s"), Ok(i64::MIN));
        for bad in
            ["", "1", "s", "1x", ".s", "9223372036854775808ns", "2562047h47m16.854775808s", "9223372036854775808ns9223372036854775808ns"]
        {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_round_trip() {
        let mut out = Vec::new();
        format(&mut out, 1_199_149_261, None).unwrap();
        assert_eq!(out, b"2008-01-01T01:01:01Z");
        assert_eq!(parse_time("2008-01-01T01:01:01Z"), Ok(1_199_149_261));
        out.clear();
        format(&mut out, GO_ZERO_UNIX, Some(3)).unwrap();
        assert_eq!(out, b"0001-01-01T00:00:00.000003Z");
        assert_eq!(parse_micro_time("2003-01-01T01:01:01.000003Z"), Ok((1_041_382_861, 3_000)));
        assert!(parse_micro_time("2003-01-01T01:01:01Z").is_err());
        assert_eq!(parse_micro_time("2003-01-01T01:01:01,000003Z"), Ok((1_041_382_861, 3_000)));
        assert_eq!(parse_time("2008-01-01T01:01:01,9Z"), Ok(1_199_149_261));
        assert!(parse_micro_time("2003-01-01T01:01:01.0000031Z").is_err());
        assert!(format(&mut out, i64::MAX, None).is_err());
        assert_eq!(micro_time_from_proto(10, -1_500), Ok((9, 999_999)));
    }
}
