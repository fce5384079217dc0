//! The timestamps of managedFields entries.

use crate::{Error, Result};
use fieldstore_codec::rfc3339;
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
        Time(rfc3339::format(seconds))
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

/// Seconds since the epoch of a canonical time (`YYYY-MM-DDTHH:MM:SSZ`, the form managedFields
/// stores), or `None` when it is not one.
fn parse(s: &str) -> Option<i64> {
    rfc3339::parse(s).map(|(seconds, _)| seconds).filter(|&seconds| rfc3339::format(seconds) == s)
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
