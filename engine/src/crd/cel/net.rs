//! kube-apiserver's URL, IP and CIDR libraries: `url(s)`/`isURL(s)` with `getScheme`, `getHost`,
//! `getHostname`, `getPort`, `getEscapedPath`, `getQuery`; `ip(s)`/`isIP(s)`/`ip.isCanonical(s)`
//! with `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast`, `string(ip)`; `cidr(s)`/`isCIDR(s)` with `containsIP`, `containsCIDR`, `ip`,
//! `masked`, `prefixLength`, `string(cidr)`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map, Opaque};
use cel::{Env, ExecutionError, Value};

use super::args::{arg_str, fail, overload};

pub(crate) const URL_TYPE: &str = "kubernetes.URL";
pub(crate) const IP_TYPE: &str = "net.IP";
pub(crate) const CIDR_TYPE: &str = "net.CIDR";

/// A parsed URL (Go's `url.ParseRequestURI`, the parts the library exposes).
#[derive(Debug, PartialEq, Eq, Default)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    path: String,
    query: String,
    opaque: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL_TYPE
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path; the error as Go words it.
pub(crate) fn parse_request_uri(s: &str) -> Result<Url, String> {
    let err = |m: &str| format!("parse {s:?}: {m}");
    if s.chars().any(|c| c.is_ascii_control()) {
        return Err(err("net/url: invalid control character in URL"));
    }
    let mut url = Url::default();
    let (before_query, query) = match s.split_once('?') {
        Some((a, q)) => (a, q),
        None => (s, ""),
    };
    url.query = query.to_owned();
    let mut rest = before_query;
    // The scheme: a letter, then letters, digits, '+', '-', '.', up to ':'.
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        let valid = candidate.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && candidate.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if valid {
            url.scheme = candidate.to_ascii_lowercase();
            rest = &rest[colon + 1..];
        } else if colon == 0 {
            return Err(err("missing protocol scheme"));
        }
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        return Err(err("invalid URI for request"));
    }
    if !url.scheme.is_empty() && rest.starts_with("//") {
        let authority_end = rest[2..].find('/').map_or(rest.len(), |i| i + 2);
        let authority = &rest[2..authority_end];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.starts_with('[') && !host.contains(']') {
            return Err(err("missing ']' in host"));
        }
        if let Some(port) = port_of(host) {
            if !port.chars().all(|c| c.is_ascii_digit()) {
                return Err(err(&format!("invalid port {:?} after host", format!(":{port}"))));
            }
        }
        url.host = host.to_owned();
        rest = &rest[authority_end..];
    }
    url.path = rest.to_owned();
    Ok(url)
}

/// The port of a `host[:port]` (an IPv6 literal in brackets).
fn port_of(host: &str) -> Option<&str> {
    if let Some(end) = host.rfind(']') {
        return host[end + 1..].strip_prefix(':');
    }
    host.rsplit_once(':').map(|(_, p)| p)
}

fn hostname_of(host: &str) -> &str {
    if let Some(stripped) = host.strip_prefix('[') {
        return stripped.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn get_url<'a>(function: &str, args: &'a [Value]) -> Result<&'a Url, ExecutionError> {
    match args.first() {
        Some(Value::Opaque(o)) => o.downcast_ref::<Url>().ok_or_else(|| fail(function, "not a URL")),
        _ => Err(fail(function, "not a URL")),
    }
}

fn url(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("url", args, 0)?;
    match parse_request_uri(s) {
        Ok(u) => Ok(Value::Opaque(Arc::new(u))),
        Err(e) => Err(fail("url", format!("URL parse error during conversion from string: {e}"))),
    }
}

fn is_url(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(parse_request_uri(arg_str("isURL", args, 0)?).is_ok()))
}

fn get_scheme(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(get_url("getScheme", args)?.scheme.as_str()))
}

fn get_host(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(get_url("getHost", args)?.host.as_str()))
}

fn get_hostname(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(hostname_of(&get_url("getHostname", args)?.host)))
}

fn get_port(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(port_of(&get_url("getPort", args)?.host).unwrap_or("")))
}

fn get_escaped_path(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(get_url("getEscapedPath", args)?.path.as_str()))
}

fn get_query(args: &[Value]) -> Result<Value, ExecutionError> {
    let u = get_url("getQuery", args)?;
    let mut map: HashMap<String, Vec<Value>> = HashMap::new();
    for pair in u.query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        map.entry(percent_decode(k)).or_default().push(Value::from(percent_decode(v)));
    }
    let entries = map.into_iter().map(|(k, v)| (Key::String(Arc::new(k)), Value::List(Arc::new(v)))).collect();
    Ok(Value::Map(Map { map: Arc::new(entries) }))
}

/// An IP address (`ip(s)`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

/// A CIDR (`cidr(s)`): the address as written and the prefix length.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Cidr(pub IpAddr, pub u8);

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    if s.contains('%') {
        return Err(format!("IP address with zone value is not allowed: {s}"));
    }
    let ip: IpAddr = s
        .parse()
        .map_err(|_| format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): unable to parse IP"))?;
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
        }
    }
    Ok(ip)
}

fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("network address parse error during conversion from string: netip.ParsePrefix({s:?}): no '/'"))?;
    let ip = parse_ip(addr)?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len: u8 =
        len.parse().ok().filter(|l| *l <= max && !len.starts_with('+') && (len == "0" || !len.starts_with('0'))).ok_or_else(|| {
            format!("network address parse error during conversion from string: netip.ParsePrefix({s:?}): bad bits after slash: {len:?}")
        })?;
    Ok(Cidr(ip, len))
}

fn masked(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
            IpAddr::V4(Ipv4Addr::from(bits & mask))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len as u32) };
            IpAddr::V6(Ipv6Addr::from(bits & mask))
        }
    }
}

fn get_ip(function: &str, args: &[Value], i: usize) -> Result<IpAddr, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o.downcast_ref::<Ip>().map(|ip| ip.0).ok_or_else(|| fail(function, "not an IP")),
        Some(Value::String(s)) => parse_ip(s).map_err(|e| fail(function, e)),
        _ => Err(fail(function, "not an IP")),
    }
}

fn get_cidr(function: &str, args: &[Value], i: usize) -> Result<(IpAddr, u8), ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o.downcast_ref::<Cidr>().map(|c| (c.0, c.1)).ok_or_else(|| fail(function, "not a CIDR")),
        Some(Value::String(s)) => parse_cidr(s).map(|c| (c.0, c.1)).map_err(|e| fail(function, e)),
        _ => Err(fail(function, "not a CIDR")),
    }
}

fn ip(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("ip", args, 0)?;
    parse_ip(s).map(|ip| Value::Opaque(Arc::new(Ip(ip)))).map_err(|e| fail("ip", e))
}

fn is_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(parse_ip(arg_str("isIP", args, 0)?).is_ok()))
}

fn is_canonical(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("ip.isCanonical", args, 0)?;
    let ip = parse_ip(s).map_err(|e| fail("ip.isCanonical", e))?;
    Ok(Value::Bool(ip.to_string() == s))
}

fn family(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(if get_ip("family", args, 0)?.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(get_ip("isUnspecified", args, 0)?.is_unspecified()))
}

fn is_loopback(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(get_ip("isLoopback", args, 0)?.is_loopback()))
}

fn link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(link_local_multicast(get_ip("isLinkLocalMulticast", args, 0)?)))
}

fn is_link_local_unicast(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(link_local_unicast(get_ip("isLinkLocalUnicast", args, 0)?)))
}

fn is_global_unicast(args: &[Value]) -> Result<Value, ExecutionError> {
    let ip = get_ip("isGlobalUnicast", args, 0)?;
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    Ok(Value::Bool(!(ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || link_local_unicast(ip) || broadcast)))
}

fn ip_string(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::from(get_ip("string", args, 0)?.to_string()))
}

fn cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("cidr", args, 0)?;
    parse_cidr(s).map(|c| Value::Opaque(Arc::new(c))).map_err(|e| fail("cidr", e))
}

fn is_cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(parse_cidr(arg_str("isCIDR", args, 0)?).is_ok()))
}

fn contains(net: (IpAddr, u8), ip: IpAddr) -> bool {
    net.0.is_ipv4() == ip.is_ipv4() && masked(net.0, net.1) == masked(ip, net.1)
}

fn contains_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    let net = get_cidr("containsIP", args, 0)?;
    let ip = get_ip("containsIP", args, 1)?;
    Ok(Value::Bool(contains(net, ip)))
}

fn contains_cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    let net = get_cidr("containsCIDR", args, 0)?;
    let other = get_cidr("containsCIDR", args, 1)?;
    Ok(Value::Bool(other.1 >= net.1 && contains(net, other.0)))
}

fn cidr_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(Ip(get_cidr("ip", args, 0)?.0))))
}

fn cidr_masked(args: &[Value]) -> Result<Value, ExecutionError> {
    let (ip, len) = get_cidr("masked", args, 0)?;
    Ok(Value::Opaque(Arc::new(Cidr(masked(ip, len), len))))
}

fn prefix_length(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get_cidr("prefixLength", args, 0)?.1 as i64))
}

fn cidr_string(args: &[Value]) -> Result<Value, ExecutionError> {
    let (ip, len) = get_cidr("string", args, 0)?;
    Ok(Value::from(format!("{ip}/{len}")))
}

pub(crate) fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let url_t = || Type::new_opaque_type(URL_TYPE);
    let ip_t = || Type::new_opaque_type(IP_TYPE);
    let cidr_t = || Type::new_opaque_type(CIDR_TYPE);
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], overload!(url))?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], overload!(is_url))?;
    env.add_member_overload("getScheme", "url_get_scheme", url_t(), vec![], overload!(get_scheme))?;
    env.add_member_overload("getHost", "url_get_host", url_t(), vec![], overload!(get_host))?;
    env.add_member_overload("getHostname", "url_get_hostname", url_t(), vec![], overload!(get_hostname))?;
    env.add_member_overload("getPort", "url_get_port", url_t(), vec![], overload!(get_port))?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", url_t(), vec![], overload!(get_escaped_path))?;
    env.add_member_overload("getQuery", "url_get_query", url_t(), vec![], overload!(get_query))?;

    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], overload!(ip))?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], overload!(is_ip))?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], overload!(is_canonical))?;
    env.add_member_overload("family", "ip_family", ip_t(), vec![], overload!(family))?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip_t(), vec![], overload!(is_unspecified))?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip_t(), vec![], overload!(is_loopback))?;
    env.add_member_overload("isLinkLocalMulticast", "ip_is_link_local_multicast", ip_t(), vec![], overload!(is_link_local_multicast))?;
    env.add_member_overload("isLinkLocalUnicast", "ip_is_link_local_unicast", ip_t(), vec![], overload!(is_link_local_unicast))?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip_t(), vec![], overload!(is_global_unicast))?;
    env.add_overload("string", "ip_to_string", vec![ip_t()], overload!(ip_string))?;

    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], overload!(cidr))?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], overload!(is_cidr))?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr_t(), vec![ip_t()], overload!(contains_ip))?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", cidr_t(), vec![STRING_TYPE], overload!(contains_ip))?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr_t(), vec![cidr_t()], overload!(contains_cidr))?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr_string", cidr_t(), vec![STRING_TYPE], overload!(contains_cidr))?;
    env.add_member_overload("ip", "cidr_ip", cidr_t(), vec![], overload!(cidr_ip))?;
    env.add_member_overload("masked", "cidr_masked", cidr_t(), vec![], overload!(cidr_masked))?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr_t(), vec![], overload!(prefix_length))?;
    env.add_overload("string", "cidr_to_string", vec![cidr_t()], overload!(cidr_string))?;
    Ok(())
}
