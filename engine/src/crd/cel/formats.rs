//! The named formats of kube-apiserver's format library (`format.dns1123Label().validate(s)`):
//! apimachinery's validators and their messages.

use std::sync::LazyLock;

use regex::Regex;

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const UUID: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

fn anchored(re: &str) -> Regex {
    Regex::new(&format!("^(?:{re})$")).expect("the format patterns are constants that compile")
}

static RES: LazyLock<[Regex; 6]> = LazyLock::new(|| {
    [
        anchored(DNS1123_LABEL),
        anchored(DNS1123_SUBDOMAIN),
        anchored(DNS1035_LABEL),
        anchored(QUALIFIED_NAME),
        anchored(LABEL_VALUE),
        anchored(UUID),
    ]
});

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !RES[0].is_match(s) {
        errs.push(format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start \
             and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '{DNS1123_LABEL}')"
        ));
    }
    errs
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !RES[1].is_match(s) {
        errs.push(format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and \
             must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
             '{DNS1123_SUBDOMAIN}')"
        ));
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !RES[2].is_match(s) {
        errs.push(format!(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic \
             character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
             validation is '{DNS1035_LABEL}')"
        ));
    }
    errs
}

/// A name prefix: a trailing '-' is allowed (apimachinery's `maskTrailingDash`).
fn prefix(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => s.to_owned(),
    }
}

fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let (prefix_part, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if s.matches('/').count() > 1 {
        errs.push(format!(
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with \
             an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '{QUALIFIED_NAME}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
        return errs;
    }
    if let Some(p) = prefix_part {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_owned());
        } else {
            errs.extend(dns1123_subdomain(p).into_iter().map(|e| format!("prefix part {e}")));
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !name.is_empty() && !RES[3].is_match(name) {
        errs.push(format!(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '{QUALIFIED_NAME}')"
        ));
    }
    errs
}

fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !RES[4].is_match(s) {
        errs.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must \
             start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used \
             for validation is '{LABEL_VALUE}')"
        ));
    }
    errs
}

/// The errors of `s` under the named format; empty when valid.
pub(crate) fn validate(format: &str, s: &str) -> Vec<String> {
    match format {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => qualified_name(s),
        "dns1123LabelPrefix" => dns1123_label(&prefix(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&prefix(s)),
        "dns1035LabelPrefix" => dns1035_label(&prefix(s)),
        "labelValue" => label_value(s),
        "uri" => match super::net::parse_request_uri(s) {
            Ok(_) => vec![],
            Err(e) => vec![e],
        },
        "uuid" => {
            if RES[5].is_match(s) {
                vec![]
            } else {
                vec!["does not match the UUID format".to_owned()]
            }
        }
        "byte" => match super::types::decode_base64(s) {
            Some(_) => vec![],
            None => vec!["invalid base64 value".to_owned()],
        },
        "date" => match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(_) => vec![],
            Err(_) => vec!["invalid date value, expected YYYY-MM-DD".to_owned()],
        },
        "datetime" => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(_) => vec![],
            Err(_) => vec!["invalid datetime value, expected RFC 3339".to_owned()],
        },
        _ => vec![format!("unknown format {format}")],
    }
}
