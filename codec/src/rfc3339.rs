//! RFC 3339 times as Kubernetes writes them in `metav1.Time`: parsing any RFC 3339 time to Unix
//! seconds, and writing seconds back as `YYYY-MM-DDTHH:MM:SSZ`.

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` into Unix seconds and nanoseconds.
pub fn parse(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0i64, |acc, &d| d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0')))
    };
    let punct = |at: usize, c: u8| b.get(at) == Some(&c);
    if !(punct(4, b'-') && punct(7, b'-') && punct(10, b'T') && punct(13, b':') && punct(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = b.get(19..)?;
    let mut nanos = 0u32;
    if let Some((b'.', fraction)) = rest.split_first() {
        let digits = fraction.iter().take_while(|d| d.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        // Like Go, keep nanosecond precision and ignore any further digits.
        nanos =
            fraction.iter().take(digits.min(9)).chain(std::iter::repeat(&b'0')).take(9).fold(0, |acc, d| acc * 10 + u32::from(d - b'0'));
        rest = fraction.get(digits..)?;
    }
    let offset = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i64> {
                (a.is_ascii_digit() && b.is_ascii_digit()).then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let (oh, om) = (two(*h1, *h2)?, two(*m1, *m2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let offset = oh * 3600 + om * 60;
            if *sign == b'-' {
                -offset
            } else {
                offset
            }
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((seconds, nanos))
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format(seconds: i64) -> String {
    let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60);
    }
    // Every write stamps a time: digits placed directly (`format!` with widths costs ten times).
    let mut out = String::with_capacity(20);
    let digits = |out: &mut String, value: i64, width: u32| {
        for place in (0..width).rev() {
            out.push(char::from(b'0' + (value / 10i64.pow(place) % 10) as u8));
        }
    };
    digits(&mut out, year, 4);
    out.push('-');
    digits(&mut out, month, 2);
    out.push('-');
    digits(&mut out, day, 2);
    out.push('T');
    digits(&mut out, secs / 3600, 2);
    out.push(':');
    digits(&mut out, secs / 60 % 60, 2);
    out.push(':');
    digits(&mut out, secs % 60, 2);
    out.push('Z');
    out
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_writes_what_the_format_macro_writes() {
        for seconds in [0i64, 1, 59, 86_399, 86_400, 951_782_400, 1_764_300_000, 253_402_300_799, -1, -62_167_219_200, 253_402_300_800] {
            let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
            let (y, m, d) = super::civil_from_days(days);
            let want = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60);
            assert_eq!(super::format(seconds), want, "{seconds}");
        }
    }
}
