//! The timestamps of managedFields entries.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// When a managedFields entry last changed: RFC 3339 in UTC with whole seconds
/// (`2024-01-02T03:04:05Z`), the form `metav1.Time` serializes to.
///
/// The engine reads no clock: callers pass the time of the request.
///
/// # Examples
///
/// ```
/// use fieldstore_engine::fieldmanager::Time;
///
/// let t = Time::from_unix_seconds(1_704_164_645);
/// assert_eq!(t.as_str(), "2024-01-02T03:04:05Z");
/// assert_eq!("2024-01-02T03:04:05Z".parse::<Time>().unwrap(), t);
/// assert_eq!(t.unix_seconds(), 1_704_164_645);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Time(String);

impl Time {
    /// The time `seconds` after the Unix epoch. Meant for years 0000 to 9999, the range RFC 3339
    /// can write.
    #[must_use]
    pub fn from_unix_seconds(seconds: i64) -> Self {
        let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        Time(format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60))
    }

    /// The time as written in managedFields.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Seconds since the Unix epoch.
    #[must_use]
    pub fn unix_seconds(&self) -> i64 {
        parse(&self.0).unwrap_or(0)
    }

    /// A time already in canonical form (as the codec normalizes entry times).
    pub(crate) fn from_canonical(s: String) -> Self {
        Time(s)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Time {
    type Err = Error;

    /// Parses the canonical form only, `YYYY-MM-DDTHH:MM:SSZ`.
    fn from_str(s: &str) -> Result<Self> {
        parse(s).map(|_| Time(s.to_string())).ok_or_else(|| Error::BadRequest(format!("invalid time {s:?}: expected YYYY-MM-DDTHH:MM:SSZ")))
    }
}

/// Seconds since the epoch of a canonical time, or `None` when it is not one.
fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied();
    if b.len() != 20 || [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'Z')].iter().any(|&(i, c)| at(i) != Some(c)) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(r)?;
        digits.iter().try_fold(0i64, |acc, d| d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
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
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in [0, 1_704_164_645, 1_709_164_800, 951_782_400, 253_402_300_799] {
            let t = Time::from_unix_seconds(s);
            assert_eq!(t.unix_seconds(), s, "{t}");
            assert_eq!(t.as_str().parse::<Time>().unwrap(), t);
        }
        assert_eq!(Time::from_unix_seconds(0).as_str(), "1970-01-01T00:00:00Z");
        for bad in ["", "2023-02-29T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00.5Z", "2024-01-01T00:00:00+00:00"] {
            assert!(bad.parse::<Time>().is_err(), "{bad}");
        }
    }
}
