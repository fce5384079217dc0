//! The CEL environment of `x-kubernetes-validations`: cel-rust's standard library with optionals
//! and its strings extension, plus the Kubernetes libraries kube-apiserver adds — lists
//! (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regex (`find`, `findAll`), URLs,
//! IPs and CIDRs ([`super::net`]), quantities ([`super::quantity`]), named formats
//! (`format.dns1123Label()`, `format.named(…)`, `validate`) and sets (`sets.contains`,
//! `sets.intersects`, `sets.equivalent`).

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use cel::common::types::{Type, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Opaque, OptionalValue};
use cel::{Env, ExecutionError, Value};

use super::args::{arg_str, fail, overload};

/// The type name of a named format value.
pub(crate) const FORMAT_TYPE: &str = "kubernetes.NamedFormat";

/// The named formats (`format.<name>()`, `format.named("<name>")`).
pub(crate) const FORMATS: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// The shared environment.
pub(crate) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build()));

fn build() -> Env {
    let mut env = Env::stdlib();
    // Declarations only fail on duplicates, which this fixed set doesn't have.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = add_kubernetes(&mut env);
    let _ = matches_macros(&mut env);
    let _ = super::comprehensions::register(&mut env);
    let _ = super::net::register(&mut env);
    let _ = super::quantity::register(&mut env);
    let _ = super::semver::register(&mut env);
    env
}

fn arg_list<'a>(function: &str, args: &'a [Value], i: usize) -> Result<&'a [Value], ExecutionError> {
    match args.get(i) {
        Some(Value::List(l)) => Ok(l.as_slice()),
        Some(other) => Err(ExecutionError::no_such_overload(function, vec![other.type_of().to_string()])),
        None => Err(ExecutionError::invalid_argument_count(i + 1, args.len())),
    }
}

/// CEL's ordering of two values of the same comparable type.
fn compare(function: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Ok(x.cmp(y)),
        (Value::List(_), _) | (Value::Map(_), _) | (Value::Null, _) => {
            Err(ExecutionError::no_such_overload(function, vec![a.type_of().to_string(), b.type_of().to_string()]))
        }
        _ => a
            .partial_cmp(b)
            .ok_or_else(|| ExecutionError::no_such_overload(function, vec![a.type_of().to_string(), b.type_of().to_string()])),
    }
}

fn is_sorted(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("isSorted", args, 0)?;
    for w in list.windows(2) {
        if compare("isSorted", &w[0], &w[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn sum(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("sum", args, 0)?;
    let overflow = || fail("sum", "integer overflow");
    let mut acc: Option<Value> = None;
    for v in list {
        acc = Some(match (acc, v) {
            (None, v) => v.clone(),
            (Some(Value::Int(a)), Value::Int(b)) => Value::Int(a.checked_add(*b).ok_or_else(overflow)?),
            (Some(Value::UInt(a)), Value::UInt(b)) => Value::UInt(a.checked_add(*b).ok_or_else(overflow)?),
            (Some(Value::Float(a)), Value::Float(b)) => Value::Float(a + b),
            (Some(Value::Duration(a)), Value::Duration(b)) => Value::Duration(a.checked_add(b).ok_or_else(overflow)?),
            (Some(a), b) => return Err(ExecutionError::no_such_overload("sum", vec![a.type_of().to_string(), b.type_of().to_string()])),
        });
    }
    Ok(acc.unwrap_or(Value::Int(0)))
}

fn extreme(function: &str, args: &[Value], want: Ordering) -> Result<Value, ExecutionError> {
    let list = arg_list(function, args, 0)?;
    let mut best: Option<&Value> = None;
    for v in list {
        best = Some(match best {
            None => v,
            Some(b) => {
                if compare(function, v, b)? == want {
                    v
                } else {
                    b
                }
            }
        });
    }
    best.cloned().ok_or_else(|| fail(function, format!("{function} called on empty list")))
}

fn list_min(args: &[Value]) -> Result<Value, ExecutionError> {
    extreme("min", args, Ordering::Less)
}

fn list_max(args: &[Value]) -> Result<Value, ExecutionError> {
    extreme("max", args, Ordering::Greater)
}

fn list_index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("indexOf", args, 0)?;
    let x = args.get(1).ok_or_else(|| ExecutionError::invalid_argument_count(2, args.len()))?;
    Ok(Value::Int(list.iter().position(|v| v == x).map_or(-1, |i| i as i64)))
}

fn list_last_index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("lastIndexOf", args, 0)?;
    let x = args.get(1).ok_or_else(|| ExecutionError::invalid_argument_count(2, args.len()))?;
    Ok(Value::Int(list.iter().rposition(|v| v == x).map_or(-1, |i| i as i64)))
}

/// The compiled size limit of a regular expression: compiling one stays cheap whatever
/// repetitions the pattern nests.
const REGEX_SIZE_LIMIT: usize = 1 << 18;
/// How many compiled patterns are kept (all dropped when full).
const REGEX_CACHE_ENTRIES: usize = 512;

type RegexCache = std::sync::Mutex<std::collections::HashMap<String, Arc<regex::Regex>>>;

static REGEX_CACHE: LazyLock<RegexCache> = LazyLock::new(Default::default);

/// `pattern` compiled (cached by its text), as RE2 patterns read in the regex crate.
fn regex(function: &str, pattern: &str) -> Result<Arc<regex::Regex>, ExecutionError> {
    if let Ok(cache) = REGEX_CACHE.lock() {
        if let Some(re) = cache.get(pattern) {
            return Ok(re.clone());
        }
    }
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Arc::new)
        .map_err(|e| fail(function, format!("error parsing regexp: {e}")))?;
    if let Ok(mut cache) = REGEX_CACHE.lock() {
        if cache.len() >= REGEX_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), re.clone());
    }
    Ok(re)
}

/// `s.matches(re)` and `matches(s, re)`, rewritten by [`matches_macros`] to call this: the
/// pattern compiled once (cached) and size-limited, where cel-rust's own `matches` compiles it
/// on every call with the regex crate's default (40 times larger) limit.
fn matches(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("matches", args, 0)?;
    let re = regex("matches", arg_str("matches", args, 1)?)?;
    Ok(Value::Bool(re.is_match(s)))
}

/// The name `matches` calls are rewritten to (not writable in a rule: `@` starts no
/// identifier).
pub(crate) const MATCHES: &str = "@k8s_matches";

fn matches_macros(env: &mut Env) -> Result<(), cel::DeclarationError> {
    use cel::common::ast::{CallExpr, Expr};
    use cel::parser::Macro;
    env.add_macro(Macro::receiver("matches", 1, |helper, target, args| {
        let (Some(t), Some(re)) = (target.take(), args.pop()) else { return Ok(None) };
        Ok(Some(helper.next_expr(Expr::Call(CallExpr { func_name: MATCHES.into(), target: None, args: vec![t, re] }))))
    }))?;
    env.add_macro(Macro::global("matches", 2, |helper, _target, args| {
        let re = args.pop();
        let s = args.pop();
        let (Some(s), Some(re)) = (s, re) else { return Ok(None) };
        Ok(Some(helper.next_expr(Expr::Call(CallExpr { func_name: MATCHES.into(), target: None, args: vec![s, re] }))))
    }))?;
    env.add_overload(MATCHES, "k8s_matches", vec![STRING_TYPE, STRING_TYPE], overload!(matches))
}

fn find(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("find", args, 0)?;
    let re = regex("find", arg_str("find", args, 1)?)?;
    Ok(Value::from(re.find(s).map_or("", |m| m.as_str())))
}

fn find_all(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = arg_str("findAll", args, 0)?;
    let re = regex("findAll", arg_str("findAll", args, 1)?)?;
    let limit = match args.get(2) {
        Some(Value::Int(n)) if *n >= 0 => *n as usize,
        Some(Value::Int(_)) | None => usize::MAX,
        Some(other) => return Err(ExecutionError::no_such_overload("findAll", vec![other.type_of().to_string()])),
    };
    Ok(Value::List(Arc::new(re.find_iter(s).take(limit).map(|m| Value::from(m.as_str())).collect())))
}

fn sets_contains(args: &[Value]) -> Result<Value, ExecutionError> {
    let a = arg_list("sets.contains", args, 0)?;
    let b = arg_list("sets.contains", args, 1)?;
    Ok(Value::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_intersects(args: &[Value]) -> Result<Value, ExecutionError> {
    let a = arg_list("sets.intersects", args, 0)?;
    let b = arg_list("sets.intersects", args, 1)?;
    Ok(Value::Bool(b.iter().any(|x| a.contains(x))))
}

fn sets_equivalent(args: &[Value]) -> Result<Value, ExecutionError> {
    let a = arg_list("sets.equivalent", args, 0)?;
    let b = arg_list("sets.equivalent", args, 1)?;
    Ok(Value::Bool(b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x))))
}

fn int_arg(function: &str, args: &[Value], i: usize) -> Result<i64, ExecutionError> {
    match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        Some(other) => Err(ExecutionError::no_such_overload(function, vec![other.type_of().to_string()])),
        None => Err(ExecutionError::invalid_argument_count(i + 1, args.len())),
    }
}

fn list_of(items: Vec<Value>) -> Value {
    Value::List(Arc::new(items))
}

fn slice(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("slice", args, 0)?;
    let (start, end) = (int_arg("slice", args, 1)?, int_arg("slice", args, 2)?);
    let err = |why: &str| fail("slice", format!("cannot slice({start}, {end}), {why}"));
    if start < 0 || end < 0 {
        return Err(err("negative indexes not supported"));
    }
    if start > end {
        return Err(err("start index must be less than or equal to end index"));
    }
    if end as u64 > list.len() as u64 {
        return Err(err(&format!("list is length {}", list.len())));
    }
    Ok(list_of(list[start as usize..end as usize].to_vec()))
}

fn flatten_into(out: &mut Vec<Value>, items: &[Value], depth: i64) {
    for v in items {
        match v {
            Value::List(inner) if depth > 0 => flatten_into(out, inner, depth - 1),
            other => out.push(other.clone()),
        }
    }
}

fn flatten(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("flatten", args, 0)?;
    let depth = if args.len() > 1 { int_arg("flatten", args, 1)? } else { 1 };
    if depth < 0 {
        return Err(fail("flatten", "level must be non-negative"));
    }
    let mut out = Vec::new();
    // Values nest no deeper than the conversion bound: a larger level changes nothing.
    flatten_into(&mut out, list, depth.min(300));
    Ok(list_of(out))
}

fn distinct(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("distinct", args, 0)?;
    let mut out: Vec<Value> = Vec::new();
    for v in list {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    Ok(list_of(out))
}

fn list_reverse(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = arg_list("reverse", args, 0)?;
    Ok(list_of(list.iter().rev().cloned().collect()))
}

fn sort(args: &[Value]) -> Result<Value, ExecutionError> {
    let mut items = arg_list("sort", args, 0)?.to_vec();
    // One comparable kind, so the order is total (Rust's sort may panic on one that isn't);
    // doubles by their total order (NaN last).
    if let Some(first) = items.first() {
        let kind = std::mem::discriminant(first);
        if let Some(other) = items.iter().find(|v| std::mem::discriminant(*v) != kind) {
            return Err(ExecutionError::no_such_overload("sort", vec![first.type_of().to_string(), other.type_of().to_string()]));
        }
        compare("sort", first, first)?;
    }
    items.sort_by(|a, b| match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        _ => compare("sort", a, b).unwrap_or(Ordering::Equal),
    });
    Ok(list_of(items))
}

fn optional(v: Option<&Value>) -> Value {
    Value::Opaque(Arc::new(match v {
        Some(v) => OptionalValue::of(v.clone()),
        None => OptionalValue::none(),
    }))
}

fn first(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(optional(arg_list("first", args, 0)?.first()))
}

fn last(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(optional(arg_list("last", args, 0)?.last()))
}

/// A named format (`format.dns1123Label()`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NamedFormat(pub &'static str);

impl Opaque for NamedFormat {
    fn runtime_type_name(&self) -> &str {
        FORMAT_TYPE
    }
}

fn format_value(name: &str) -> Option<Value> {
    FORMATS.iter().find(|f| **f == name).map(|f| Value::Opaque(Arc::new(NamedFormat(f))))
}

fn format_named(args: &[Value]) -> Result<Value, ExecutionError> {
    let name = arg_str("format.named", args, 0)?;
    Ok(Value::Opaque(Arc::new(match format_value(name) {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    })))
}

fn format_validate(args: &[Value]) -> Result<Value, ExecutionError> {
    let name = match args.first() {
        Some(Value::Opaque(o)) => o.downcast_ref::<NamedFormat>().map(|f| f.0),
        _ => None,
    }
    .ok_or_else(|| fail("validate", "not a format"))?;
    let s = arg_str("validate", args, 1)?;
    let errors = super::formats::validate(name, s);
    Ok(Value::Opaque(Arc::new(if errors.is_empty() {
        OptionalValue::none()
    } else {
        OptionalValue::of(Value::List(Arc::new(errors.into_iter().map(Value::from).collect())))
    })))
}

macro_rules! format_fn {
    ($name:literal) => {
        overload!(|_: &[Value]| -> Result<Value, ExecutionError> { format_value($name).ok_or_else(|| fail($name, "unknown format")) })
    };
}

fn add_kubernetes(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], overload!(is_sorted))?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], overload!(sum))?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], overload!(list_min))?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], overload!(list_max))?;
    env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], overload!(list_index_of))?;
    env.add_member_overload("lastIndexOf", "list_last_index_of", LIST_TYPE, vec![DYN_TYPE], overload!(list_last_index_of))?;
    env.add_member_overload("slice", "list_slice", LIST_TYPE, vec![INT_TYPE, INT_TYPE], overload!(slice))?;
    env.add_member_overload("flatten", "list_flatten", LIST_TYPE, vec![], overload!(flatten))?;
    env.add_member_overload("flatten", "list_flatten_int", LIST_TYPE, vec![INT_TYPE], overload!(flatten))?;
    env.add_member_overload("distinct", "list_distinct", LIST_TYPE, vec![], overload!(distinct))?;
    env.add_member_overload("reverse", "list_reverse", LIST_TYPE, vec![], overload!(list_reverse))?;
    env.add_member_overload("sort", "list_sort", LIST_TYPE, vec![], overload!(sort))?;
    env.add_member_overload("first", "list_first", LIST_TYPE, vec![], overload!(first))?;
    env.add_member_overload("last", "list_last", LIST_TYPE, vec![], overload!(last))?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], overload!(find))?;
    env.add_member_overload("findAll", "string_find_all", STRING_TYPE, vec![STRING_TYPE], overload!(find_all))?;
    env.add_member_overload("findAll", "string_find_all_n", STRING_TYPE, vec![STRING_TYPE, INT_TYPE], overload!(find_all))?;
    env.add_overload("sets.contains", "sets_contains", vec![LIST_TYPE, LIST_TYPE], overload!(sets_contains))?;
    env.add_overload("sets.intersects", "sets_intersects", vec![LIST_TYPE, LIST_TYPE], overload!(sets_intersects))?;
    env.add_overload("sets.equivalent", "sets_equivalent", vec![LIST_TYPE, LIST_TYPE], overload!(sets_equivalent))?;
    env.add_overload("format.named", "format_named", vec![STRING_TYPE], overload!(format_named))?;
    let format_type = Type::new_opaque_type(FORMAT_TYPE);
    env.add_member_overload("validate", "format_validate", format_type, vec![STRING_TYPE], overload!(format_validate))?;
    env.add_overload("format.dns1123Label", "format_dns1123Label", vec![], format_fn!("dns1123Label"))?;
    env.add_overload("format.dns1123Subdomain", "format_dns1123Subdomain", vec![], format_fn!("dns1123Subdomain"))?;
    env.add_overload("format.dns1035Label", "format_dns1035Label", vec![], format_fn!("dns1035Label"))?;
    env.add_overload("format.qualifiedName", "format_qualifiedName", vec![], format_fn!("qualifiedName"))?;
    env.add_overload("format.dns1123LabelPrefix", "format_dns1123LabelPrefix", vec![], format_fn!("dns1123LabelPrefix"))?;
    env.add_overload("format.dns1123SubdomainPrefix", "format_dns1123SubdomainPrefix", vec![], format_fn!("dns1123SubdomainPrefix"))?;
    env.add_overload("format.dns1035LabelPrefix", "format_dns1035LabelPrefix", vec![], format_fn!("dns1035LabelPrefix"))?;
    env.add_overload("format.labelValue", "format_labelValue", vec![], format_fn!("labelValue"))?;
    env.add_overload("format.uri", "format_uri", vec![], format_fn!("uri"))?;
    env.add_overload("format.uuid", "format_uuid", vec![], format_fn!("uuid"))?;
    env.add_overload("format.byte", "format_byte", vec![], format_fn!("byte"))?;
    env.add_overload("format.date", "format_date", vec![], format_fn!("date"))?;
    env.add_overload("format.datetime", "format_datetime", vec![], format_fn!("datetime"))?;
    Ok(())
}
