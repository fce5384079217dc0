//! cel-go's two-variable comprehensions (kube-apiserver 1.32+): `all(k, v, p)`, `exists(k, v, p)`,
//! `existsOne(k, v, p)`, `transformList(i, v, [filter,] e)`, `transformMap(k, v, [filter,] e)`,
//! `transformMapEntry(k, v, [filter,] e)` on lists (index, value) and maps (key, value).
//!
//! cel-rust's interpreter iterates one variable: these macros iterate the target's pairs
//! (`[index or key, value]`, a function of this module) with a variable no rule can name, the
//! two variables rewritten as its items, then build maps from the results where needed.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{CelBool, CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper};
use cel::{Env, ExecutionError, ParseError, Value};

use super::args::{fail, overload};

/// `[[index or key, value], …]` of a list or map (map keys in order).
pub(crate) const PAIRS: &str = "@k8s_pairs";
/// A map from a list of `[key, value]` pairs.
pub(crate) const TO_MAP: &str = "@k8s_to_map";
/// The union of a list of maps (a repeated key is an error).
pub(crate) const MERGE_MAPS: &str = "@k8s_merge_maps";
/// The iteration variable, a pair: this and the expansion's id, so nested expansions don't
/// capture each other's.
const PAIR: &str = "@k8s_pair";
const RESULT: &str = "@result";

fn key_of(v: &Value) -> Option<Key> {
    match v {
        Value::String(s) => Some(Key::String(s.clone())),
        Value::Int(i) => Some(Key::Int(*i)),
        Value::UInt(u) => Some(Key::Uint(*u)),
        Value::Bool(b) => Some(Key::Bool(*b)),
        _ => None,
    }
}

fn key_value(k: &Key) -> Value {
    match k {
        Key::String(s) => Value::String(s.clone()),
        Key::Int(i) => Value::Int(*i),
        Key::Uint(u) => Value::UInt(*u),
        Key::Bool(b) => Value::Bool(*b),
    }
}

fn pairs(args: &[Value]) -> Result<Value, ExecutionError> {
    let pair = |k: Value, v: Value| Value::List(Arc::new(vec![k, v]));
    match args.first() {
        Some(Value::List(items)) => {
            Ok(Value::List(Arc::new(items.iter().enumerate().map(|(i, v)| pair(Value::Int(i as i64), v.clone())).collect())))
        }
        Some(Value::Map(m)) => {
            let mut entries: Vec<(&Key, &Value)> = m.map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Ok(Value::List(Arc::new(entries.into_iter().map(|(k, v)| pair(key_value(k), v.clone())).collect())))
        }
        Some(other) => Err(ExecutionError::no_such_overload("all", vec![other.type_of().to_string()])),
        None => Err(ExecutionError::invalid_argument_count(1, 0)),
    }
}

fn insert(out: &mut HashMap<Key, Value>, k: &Value, v: Value) -> Result<(), ExecutionError> {
    let key = key_of(k).ok_or_else(|| ExecutionError::unsupported_key_type(k.clone()))?;
    if out.contains_key(&key) {
        return Err(fail("transformMapEntry", format!("insert failed: key {k:?} already exists")));
    }
    out.insert(key, v);
    Ok(())
}

fn to_map(args: &[Value]) -> Result<Value, ExecutionError> {
    let Some(Value::List(items)) = args.first() else { return Err(fail("transformMap", "not a list")) };
    let mut out = HashMap::new();
    for item in items.iter() {
        match item {
            Value::List(p) if p.len() == 2 => insert(&mut out, &p[0], p[1].clone())?,
            _ => return Err(fail("transformMap", "not a pair")),
        }
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

fn merge_maps(args: &[Value]) -> Result<Value, ExecutionError> {
    let Some(Value::List(items)) = args.first() else { return Err(fail("transformMapEntry", "not a list")) };
    let mut out = HashMap::new();
    for item in items.iter() {
        match item {
            Value::Map(m) => {
                for (k, v) in m.map.iter() {
                    insert(&mut out, &key_value(k), v.clone())?;
                }
            }
            other => return Err(ExecutionError::no_such_overload("transformMapEntry", vec![other.type_of().to_string()])),
        }
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_owned()))
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: name.to_owned(), target: None, args }))
}

fn int(h: &mut MacroExprHelper<'_>, i: i64) -> IdedExpr {
    h.next_expr(Expr::Literal(LiteralValue::Int(CelInt::from(i))))
}

fn boolean(h: &mut MacroExprHelper<'_>, b: bool) -> IdedExpr {
    h.next_expr(Expr::Literal(LiteralValue::Boolean(CelBool::from(b))))
}

fn list(h: &mut MacroExprHelper<'_>, elements: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::List(ListExpr::new(elements)))
}

/// `<pair>[i]`.
fn item(h: &mut MacroExprHelper<'_>, pair: &str, i: i64) -> IdedExpr {
    let p = ident(h, pair);
    let i = int(h, i);
    call(h, "_[_]", vec![p, i])
}

fn name(h: &mut MacroExprHelper<'_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(n) => Ok(n.clone()),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

/// `e` with the variables `k` and `v` (where not rebound) read from the pair.
fn subst(h: &mut MacroExprHelper<'_>, e: &mut IdedExpr, pair: &str, k: Option<&str>, v: Option<&str>) {
    match &mut e.expr {
        Expr::Ident(n) => {
            let i = if Some(n.as_str()) == k {
                0
            } else if Some(n.as_str()) == v {
                1
            } else {
                return;
            };
            let replaced = item(h, pair, i);
            e.expr = replaced.expr;
        }
        Expr::Call(c) => {
            if let Some(t) = c.target.as_deref_mut() {
                subst(h, t, pair, k, v);
            }
            for a in &mut c.args {
                subst(h, a, pair, k, v);
            }
        }
        Expr::Select(s) => subst(h, &mut s.operand, pair, k, v),
        Expr::List(l) => {
            for x in &mut l.elements {
                subst(h, x, pair, k, v);
            }
        }
        Expr::Map(m) => {
            for entry in &mut m.entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(me) => {
                        subst(h, &mut me.key, pair, k, v);
                        subst(h, &mut me.value, pair, k, v);
                    }
                    EntryExpr::StructField(sf) => subst(h, &mut sf.value, pair, k, v),
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                if let EntryExpr::StructField(sf) = &mut entry.expr {
                    subst(h, &mut sf.value, pair, k, v);
                }
            }
        }
        Expr::Comprehension(c) => {
            subst(h, &mut c.iter_range, pair, k, v);
            subst(h, &mut c.accu_init, pair, k, v);
            let rebinds = |n: &str| n == c.iter_var || c.iter_var2.as_deref() == Some(n) || n == c.accu_var;
            let k2 = k.filter(|n| !rebinds(n)).map(str::to_owned);
            let v2 = v.filter(|n| !rebinds(n)).map(str::to_owned);
            subst(h, &mut c.loop_cond, pair, k2.as_deref(), v2.as_deref());
            subst(h, &mut c.loop_step, pair, k2.as_deref(), v2.as_deref());
            subst(h, &mut c.result, pair, k2.as_deref(), v2.as_deref());
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The comprehension over the target's pairs.
struct Fold {
    pair: String,
    target: IdedExpr,
}

fn fold(h: &mut MacroExprHelper<'_>, f: Fold, init: IdedExpr, cond: IdedExpr, step: IdedExpr, result: IdedExpr) -> IdedExpr {
    let range = call(h, PAIRS, vec![f.target]);
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: f.pair,
        iter_var2: None,
        accu_var: RESULT.to_owned(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

/// Reads `(k, v, rest…)` with the variables substituted in the rest, by items of a pair
/// variable of the expansion's own.
fn prepare(h: &mut MacroExprHelper<'_>, target: IdedExpr, args: &mut Vec<IdedExpr>) -> Result<(Fold, Vec<IdedExpr>), ParseError> {
    if args.len() < 3 {
        return Err(h.new_error(target.id, "two-variable comprehension needs two names and an expression"));
    }
    let pair = format!("{PAIR}{}", h.next_expr(Expr::Unspecified).id);
    let mut rest = args.split_off(2);
    let k = name(h, &args[0])?;
    let v = name(h, &args[1])?;
    if k == v {
        return Err(h.new_error(args[1].id, "duplicate variable name"));
    }
    for e in &mut rest {
        subst(h, e, &pair, Some(&k), Some(&v));
    }
    Ok((Fold { pair, target }, rest))
}

fn quantifier(kind: &'static str) -> Macro {
    Macro::receiver(kind, 3, move |h, target, args| {
        let Some(target) = target.take() else { return Ok(None) };
        let (f, mut rest) = prepare(h, target, args)?;
        let Some(pred) = rest.pop() else { return Ok(None) };
        let accu = ident(h, RESULT);
        let expr = match kind {
            "all" | "exists" => {
                let all = kind == "all";
                let init = boolean(h, all);
                let a = ident(h, RESULT);
                let cond_arg = if all { a } else { call(h, "!_", vec![a]) };
                let cond = call(h, "@not_strictly_false", vec![cond_arg]);
                let step = call(h, if all { "_&&_" } else { "_||_" }, vec![accu, pred]);
                let result = ident(h, RESULT);
                fold(h, f, init, cond, step, result)
            }
            _ => {
                let init = int(h, 0);
                let cond = boolean(h, true);
                let one = int(h, 1);
                let plus = call(h, "_+_", vec![accu, one]);
                let same = ident(h, RESULT);
                let step = call(h, "_?_:_", vec![pred, plus, same]);
                let r = ident(h, RESULT);
                let one = int(h, 1);
                let result = call(h, "_==_", vec![r, one]);
                fold(h, f, init, cond, step, result)
            }
        };
        Ok(Some(expr))
    })
}

/// `transformList`/`transformMap`/`transformMapEntry` with `arity` arguments (3: no filter).
fn transform(kind: &'static str, arity: usize) -> Macro {
    Macro::receiver(kind, arity, move |h, target, args| {
        let Some(target) = target.take() else { return Ok(None) };
        let (f, mut rest) = prepare(h, target, args)?;
        let Some(value) = rest.pop() else { return Ok(None) };
        let filter = rest.pop();
        let element = match kind {
            "transformMap" => {
                let key = item(h, &f.pair, 0);
                list(h, vec![key, value])
            }
            _ => value,
        };
        let accu = ident(h, RESULT);
        let one = list(h, vec![element]);
        let append = call(h, "_+_", vec![accu, one]);
        let step = match filter {
            Some(f) => {
                let same = ident(h, RESULT);
                call(h, "_?_:_", vec![f, append, same])
            }
            None => append,
        };
        let init = list(h, vec![]);
        let cond = boolean(h, true);
        let result = ident(h, RESULT);
        let folded = fold(h, f, init, cond, step, result);
        Ok(Some(match kind {
            "transformMap" => call(h, TO_MAP, vec![folded]),
            "transformMapEntry" => call(h, MERGE_MAPS, vec![folded]),
            _ => folded,
        }))
    })
}

pub(crate) fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    for kind in ["all", "exists", "existsOne", "exists_one"] {
        env.add_macro(quantifier(kind))?;
    }
    for kind in ["transformList", "transformMap", "transformMapEntry"] {
        env.add_macro(transform(kind, 3))?;
        env.add_macro(transform(kind, 4))?;
    }
    env.add_overload(PAIRS, "k8s_pairs", vec![DYN_TYPE], overload!(pairs))?;
    env.add_overload(TO_MAP, "k8s_to_map", vec![LIST_TYPE], overload!(to_map))?;
    env.add_overload(MERGE_MAPS, "k8s_merge_maps", vec![LIST_TYPE], overload!(merge_maps))?;
    Ok(())
}
