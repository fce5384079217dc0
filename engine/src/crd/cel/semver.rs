//! kube-apiserver's semver library (1.33): `semver(s)`, `isSemver(s)`, and on a version
//! `major`, `minor`, `patch`, `compareTo`, `isGreaterThan`, `isLessThan` (semantic versioning
//! 2.0.0 precedence; build metadata ignored).

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::args::{arg_str, fail, overload};

pub(crate) const SEMVER_TYPE: &str = "kubernetes.Semver";

/// A semantic version.
#[derive(Debug, PartialEq, Eq, Clone)]
pub(crate) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<String>,
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        SEMVER_TYPE
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Semver {
    pub(crate) fn parse(s: &str) -> Result<Semver, String> {
        let err = || format!("Could not parse semver string {s:?}");
        let (rest, build) = s.split_once('+').map_or((s, None), |(a, b)| (a, Some(b)));
        if let Some(b) = build {
            if !b.split('.').all(ident_ok) {
                return Err(err());
            }
        }
        let (core, pre) = rest.split_once('-').map_or((rest, None), |(a, b)| (a, Some(b)));
        let parts: Vec<&str> = core.split('.').collect();
        let [ma, mi, pa] = parts.as_slice() else { return Err(err()) };
        let pre: Vec<String> = match pre {
            Some(p) => {
                let ids: Vec<&str> = p.split('.').collect();
                if !ids.iter().all(|i| ident_ok(i) && (!i.bytes().all(|b| b.is_ascii_digit()) || number(i).is_some())) {
                    return Err(err());
                }
                ids.into_iter().map(str::to_owned).collect()
            }
            None => vec![],
        };
        Ok(Semver { major: number(ma).ok_or_else(err)?, minor: number(mi).ok_or_else(err)?, patch: number(pa).ok_or_else(err)?, pre })
    }

    fn cmp(&self, other: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                (Ok(_), Err(_)) => Ordering::Less,
                (Err(_), Ok(_)) => Ordering::Greater,
                _ => a.cmp(b),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn get(function: &str, v: Option<&Value>) -> Result<Semver, ExecutionError> {
    match v {
        Some(Value::Opaque(o)) => o.downcast_ref::<Semver>().cloned().ok_or_else(|| fail(function, "not a semver")),
        _ => Err(fail(function, "not a semver")),
    }
}

fn semver(args: &[Value]) -> Result<Value, ExecutionError> {
    Semver::parse(arg_str("semver", args, 0)?).map(|v| Value::Opaque(Arc::new(v))).map_err(|e| fail("semver", e))
}

fn is_semver(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(Semver::parse(arg_str("isSemver", args, 0)?).is_ok()))
}

fn major(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get("major", args.first())?.major as i64))
}

fn minor(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get("minor", args.first())?.minor as i64))
}

fn patch(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get("patch", args.first())?.patch as i64))
}

fn compare_to(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get("compareTo", args.first())?.cmp(&get("compareTo", args.get(1))?) as i64))
}

fn is_greater_than(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(get("isGreaterThan", args.first())?.cmp(&get("isGreaterThan", args.get(1))?) == Ordering::Greater))
}

fn is_less_than(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(get("isLessThan", args.first())?.cmp(&get("isLessThan", args.get(1))?) == Ordering::Less))
}

pub(crate) fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let t = || Type::new_opaque_type(SEMVER_TYPE);
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], overload!(semver))?;
    env.add_overload("isSemver", "is_semver", vec![STRING_TYPE], overload!(is_semver))?;
    env.add_member_overload("major", "semver_major", t(), vec![], overload!(major))?;
    env.add_member_overload("minor", "semver_minor", t(), vec![], overload!(minor))?;
    env.add_member_overload("patch", "semver_patch", t(), vec![], overload!(patch))?;
    env.add_member_overload("compareTo", "semver_compare_to", t(), vec![t()], overload!(compare_to))?;
    env.add_member_overload("isGreaterThan", "semver_is_greater_than", t(), vec![t()], overload!(is_greater_than))?;
    env.add_member_overload("isLessThan", "semver_is_less_than", t(), vec![t()], overload!(is_less_than))?;
    Ok(())
}
