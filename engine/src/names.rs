//! Kubernetes' name rules (apimachinery's `IsDNS1123Label`, `IsDNS1123Subdomain`,
//! `IsDNS1035Label`) with their messages: object names, namespaces, groups, resource names.

/// The message of a name that is not a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// The message of a name that is not a DNS-1123 label.
pub const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
/// The message of a name that is not a DNS-1035 label.
pub const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is a DNS-1123 label: at most 63 lowercase alphanumerics or `-`, alphanumeric at
/// both ends.
#[must_use]
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// Whether `s` is a DNS-1123 subdomain: at most 253 characters of dot-separated labels.
#[must_use]
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// What is wrong with `s` as a DNS-1123 subdomain, in apimachinery's words (none: it is one).
#[must_use]
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(|l| is_dns1123_label(l) || (l.len() > 63 && is_dns1123_label(&l[..63]))) {
        out.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    out
}

/// What is wrong with `s` as a DNS-1035 label (a DNS-1123 label starting with a letter).
#[must_use]
pub fn dns1035_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.last().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        out.push(DNS1035_LABEL_MSG.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_apimachinery() {
        assert!(is_dns1123_label("a-1"));
        assert!(!is_dns1123_label("-a"));
        assert!(is_dns1123_subdomain("widgets.example.com"));
        assert!(!is_dns1123_subdomain("Widgets.example.com"));
        assert!(dns1035_errors("v1beta1").is_empty());
        assert_eq!(dns1035_errors("1v"), vec![DNS1035_LABEL_MSG.to_string()]);
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
    }
}
