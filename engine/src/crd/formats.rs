//! The string `format`s kube-apiserver checks in custom resources (apiextensions' supported
//! formats; go-openapi's `strfmt` checks them). A format outside the list is not checked, as
//! kube-apiserver strips it; numeric formats (`int32`, `double`, …) are not checked either.

use crate::names::{is_dns1123_label, is_dns1123_subdomain};
use regex::Regex;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

/// Whether `s` is a valid `format` value (true for formats that are not checked).
#[must_use]
pub fn valid(format: &str, s: &str) -> bool {
    match format.replace('-', "").as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|c| c.is_ascii_hexdigit()),
        "uri" => uri(s),
        "email" => email(s),
        "hostname" => hostname(s),
        "ipv4" => ip(s).is_some_and(|ip| ip.is_ipv4()),
        "ipv6" => ip(s).is_some_and(|ip| ip.is_ipv6()),
        "cidr" => cidr(s),
        "mac" => mac(s),
        "uuid" => matches(&UUID, s),
        "uuid3" => matches(&UUID3, s),
        "uuid4" => matches(&UUID4, s),
        "uuid5" => matches(&UUID5, s),
        "isbn" => isbn10(s) || isbn13(s),
        "isbn10" => isbn10(s),
        "isbn13" => isbn13(s),
        "creditcard" => matches(&CREDIT_CARD, &s.chars().filter(char::is_ascii_digit).collect::<String>()),
        "ssn" => matches(&SSN, s),
        "hexcolor" => matches(&HEX_COLOR, s),
        "rgbcolor" => matches(&RGB_COLOR, s),
        "byte" => base64(s),
        "date" => date(s),
        "duration" => duration(s),
        "datetime" => date_time(s),
        "k8sshortname" => is_dns1123_label(s),
        "k8slongname" => is_dns1123_subdomain(s),
        _ => true,
    }
}

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new($re).ok());
    };
}

pattern!(UUID, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$");
pattern!(UUID3, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$");
pattern!(UUID4, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$");
pattern!(UUID5, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$");
pattern!(
    CREDIT_CARD,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$"
);
pattern!(SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$");
pattern!(HEX_COLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
pattern!(
    RGB_COLOR,
    r"^rgb\(\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*\)$"
);
pattern!(
    HOSTNAME,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
pattern!(DATE_TIME, r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(.\d+)?([Zz]|[+-]\d{2}:\d{2})$");
pattern!(EMAIL, r"^[^@\s<>]+@[^@\s<>]+$");
pattern!(GO_DURATION, r"^[-+]?(((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|0)$");
pattern!(
    SCALA_DURATION,
    r"^\d+\s*(ns|nano|nanos|nanosecond|nanoseconds|us|micro|micros|microsecond|microseconds|ms|milli|millis|millisecond|milliseconds|s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|wk|wks|week|weeks)$"
);

/// An IP as Go's `net.ParseIP` reads it (IPv4 dotted quads without leading zeros, IPv6).
fn ip(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    s.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

fn cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else { return false };
    let Some(addr) = ip(addr) else { return false };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty() && bits.len() <= 3 && bits.bytes().all(|c| c.is_ascii_digit()) && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// A MAC address as Go's `net.ParseMAC` reads it: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or
/// `xxxx.xxxx…`.
fn mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|c| c.is_ascii_hexdigit());
    let octets = |sep: char, width: usize| -> Option<usize> {
        let parts: Vec<&str> = s.split(sep).collect();
        parts.iter().all(|p| hex(p, width)).then_some(parts.len() * width / 2)
    };
    let n = if s.len() > 2 && s.as_bytes()[2] == b':' {
        octets(':', 2)
    } else if s.len() > 2 && s.as_bytes()[2] == b'-' {
        octets('-', 2)
    } else if s.len() > 4 && s.as_bytes()[4] == b'.' {
        octets('.', 4)
    } else {
        None
    };
    matches!(n, Some(6 | 8 | 20))
}

/// A URI as Go's `url.ParseRequestURI` takes it: absolute (a scheme) or an absolute path.
fn uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, _)) = s.split_once(':') else { return false };
    let mut cs = scheme.chars();
    cs.next().is_some_and(|c| c.is_ascii_alphabetic()) && cs.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn email(s: &str) -> bool {
    let addr = match (s.find('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        _ => s,
    };
    matches(&EMAIL, addr)
}

fn hostname(s: &str) -> bool {
    s.len() <= 255 && matches(&HOSTNAME, s)
}

fn isbn10(s: &str) -> bool {
    let c: Vec<char> = s.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
    if c.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, ch) in c.iter().enumerate() {
        let d = match (i, ch) {
            (9, 'X' | 'x') => 10,
            (_, d) => match d.to_digit(10) {
                Some(d) => d,
                None => return false,
            },
        };
        sum += (10 - i as u32) * d;
    }
    sum % 11 == 0
}

fn isbn13(s: &str) -> bool {
    let c: Vec<u32> = s.chars().filter(|c| !matches!(c, '-' | ' ')).map(|c| c.to_digit(10).unwrap_or(99)).collect();
    if c.len() != 13 || c.iter().any(|d| *d > 9) {
        return false;
    }
    let sum: u32 = c.iter().take(12).enumerate().map(|(i, d)| if i % 2 == 0 { *d } else { 3 * d }).sum();
    (10 - sum % 10) % 10 == c[12]
}

fn base64(s: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

fn date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10 && b[4] == b'-' && b[7] == b'-' && calendar(&s[0..4], &s[5..7], &s[8..10])
}

fn calendar(y: &str, m: &str, d: &str) -> bool {
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else { return false };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn date_time(s: &str) -> bool {
    matches(&DATE_TIME, s)
        && date(&s[..10])
        && s[11..13].parse::<u32>().is_ok_and(|h| h < 24)
        && s[14..16].parse::<u32>().is_ok_and(|m| m < 60)
        && s.get(17..19).is_some_and(|sec| sec.parse::<u32>().is_ok_and(|sec| sec < 60))
}

fn duration(s: &str) -> bool {
    matches(&GO_DURATION, s) || matches(&SCALA_DURATION, s)
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn checks_the_formats_kube_apiserver_checks() {
        let cases = [
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "01:23:45:67:89:ab", true),
            ("mac", "01:23:45", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+01:00", true),
            ("date-time", "yesterday", false),
            ("date-time", "2024-01-02 03:04", false),
            ("date-time", "2024-01-02T03:04Z", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-.com", false),
            ("email", "a@example.com", true),
            ("email", "nobody", false),
            ("uri", "https://example.com/x", true),
            ("uri", "not a uri", false),
            ("duration", "1h30m", true),
            ("duration", "5 seconds", true),
            ("duration", "forever", false),
            ("hexcolor", "#fff", true),
            ("hexcolor", "#ffff", false),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("ssn", "123-45-6789", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("k8s-short-name", "abc-1", true),
            ("k8s-short-name", "ABC", false),
            ("password", "anything", true),
            ("no-such-format", "anything", true),
        ];
        for (format, s, ok) in cases {
            assert_eq!(valid(format, s), ok, "{format} {s:?}");
        }
    }
}
