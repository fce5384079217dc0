//! The checker and cost estimator: one walk of a parsed rule over the types of its variables.
//!
//! Strict (at CRD creation, over the schema's types) it reports what cel-go's checker reports
//! for the common mistakes — an undeclared variable or function, a field the object doesn't
//! declare, operands of clearly different types, a rule not of type bool — and computes the
//! rule's maximum cost from the schema's bounds. Lenient (before each evaluation, over the
//! types of the actual values) it only computes the cost bound: that run is what keeps a rule
//! from running longer than the budget allows, as cel-rust does not meter evaluation.
//!
//! The walk is recursive over the AST, whose depth the parser bounds (see `super::MAX_NESTING`).

use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::cost::scaled;
use super::types::Ty;

/// One finding of the checker: the expression's id (for its position) and the message.
pub(crate) struct Issue {
    pub id: u64,
    pub message: String,
}

/// The result of a walk: the expression's type and its maximum cost.
pub(crate) struct Outcome {
    pub ty: Ty,
    pub cost: u64,
    pub issues: Vec<Issue>,
}

/// Walks `expr` with `vars` in scope.
pub(crate) fn check(expr: &IdedExpr, vars: &[(&str, Ty)], strict: bool) -> Outcome {
    let mut w = Walker {
        strict,
        quiet: 0,
        issues: Vec::new(),
        scope: vars.iter().map(|(n, t)| ((*n).to_owned(), t.clone())).collect(),
        accus: Vec::new(),
    };
    let (ty, cost) = w.walk(expr);
    Outcome { ty, cost, issues: w.issues }
}

struct Walker {
    strict: bool,
    /// > 0 while walking a comprehension's first (sizing) pass: no issues reported.
    quiet: u32,
    issues: Vec<Issue>,
    scope: Vec<(String, Ty)>,
    /// The accumulators of the comprehensions being walked (appending to them costs 1).
    accus: Vec<String>,
}

type Tc = (Ty, u64);

const STR_FACTOR: f64 = 0.1;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// Whether a value of `a` can equal/compare with one of `b` as cel-go's checker sees it:
/// anything with dyn or null; numbers together; otherwise the same kind.
fn comparable(a: &Ty, b: &Ty) -> bool {
    use Ty::*;
    let num = |t: &Ty| matches!(t, Int | Uint | Double);
    match (a, b) {
        (Dyn(_), _) | (_, Dyn(_)) | (Null, _) | (_, Null) => true,
        (x, y) if num(x) && num(y) => true,
        (String(_), String(_)) | (Bytes(_), Bytes(_)) | (Bool, Bool) => true,
        (Duration, Duration) | (Timestamp, Timestamp) | (Type, Type) => true,
        (List(..), List(..)) | (Map(..), Map(..)) | (Object(_), Object(_)) => true,
        (Map(..), Object(_)) | (Object(_), Map(..)) => true,
        (Optional(_), Optional(_)) | (Pair(..), Pair(..)) | (Pair(..), List(..)) | (List(..), Pair(..)) => true,
        (Opaque(x, _), Opaque(y, _)) => x == y,
        _ => false,
    }
}

fn is_bool(t: &Ty) -> bool {
    matches!(t, Ty::Bool | Ty::Dyn(_))
}

impl Walker {
    fn issue(&mut self, id: u64, message: String) {
        if self.strict && self.quiet == 0 {
            self.issues.push(Issue { id, message });
        }
    }

    fn lookup(&self, name: &str) -> Option<&Ty> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    fn walk(&mut self, e: &IdedExpr) -> Tc {
        match &e.expr {
            Expr::Unspecified => (Ty::Dyn(0), 0),
            Expr::Literal(l) => (literal(l), 0),
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => (t.clone(), 1),
                None => match name.as_str() {
                    "int" | "uint" | "double" | "bool" | "string" | "bytes" | "list" | "map" | "null_type" | "type" | "dyn" => {
                        (Ty::Type, 1)
                    }
                    _ => {
                        self.issue(e.id, format!("undeclared reference to '{name}' (in container '')"));
                        (Ty::Dyn(0), 1)
                    }
                },
            },
            Expr::Select(sel) => {
                let (t, c) = self.walk(&sel.operand);
                let field_ty = self.field(e.id, &t, &sel.field);
                if sel.test {
                    (Ty::Bool, add(c, 1))
                } else {
                    (field_ty, add(c, 1))
                }
            }
            Expr::List(l) => {
                let mut cost = LIST_CREATE;
                let mut elem: Option<Ty> = None;
                for (i, item) in l.elements.iter().enumerate() {
                    let (mut t, c) = self.walk(item);
                    if l.optional_indices.contains(&i) {
                        if let Ty::Optional(inner) = t {
                            t = (*inner).clone();
                        }
                    }
                    cost = add(cost, c);
                    if !self.strict {
                        // cel-rust copies an element into the list it builds.
                        cost = add(cost, scaled(t.json_size(), STR_FACTOR));
                    }
                    elem = Some(elem.map_or(t.clone(), |a| a.join(&t)));
                }
                (Ty::List(Arc::new(elem.unwrap_or(Ty::Null)), l.elements.len() as u64), cost)
            }
            Expr::Map(m) => {
                let mut cost = MAP_CREATE;
                let mut kt: Option<Ty> = None;
                let mut vt: Option<Ty> = None;
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let (k, kc) = self.walk(&me.key);
                            let (v, vc) = self.walk(&me.value);
                            cost = add(cost, add(kc, vc));
                            if !self.strict {
                                cost = add(cost, scaled(v.json_size(), STR_FACTOR));
                            }
                            kt = Some(kt.map_or(k.clone(), |a| a.join(&k)));
                            vt = Some(vt.map_or(v.clone(), |a| a.join(&v)));
                        }
                        EntryExpr::StructField(sf) => {
                            let (_, c) = self.walk(&sf.value);
                            cost = add(cost, c);
                        }
                    }
                }
                (Ty::Map(Arc::new(kt.unwrap_or(Ty::Null)), Arc::new(vt.unwrap_or(Ty::Null)), m.entries.len() as u64), cost)
            }
            Expr::Struct(s) => {
                self.issue(e.id, format!("undeclared reference to '{}' (in container '')", s.type_name));
                let mut cost = 40;
                for entry in &s.entries {
                    if let EntryExpr::StructField(sf) = &entry.expr {
                        cost = add(cost, self.walk(&sf.value).1);
                    }
                }
                (Ty::Dyn(0), cost)
            }
            Expr::Comprehension(c) => {
                let (range, rc) = self.walk(&c.iter_range);
                let (elem, n, second) = range.iteration();
                let (v1, v2) = match (&c.iter_var2, &range) {
                    (Some(_), Ty::List(..)) => (Ty::Int, elem.clone()),
                    (Some(_), _) => (elem.clone(), second),
                    (None, _) => (elem.clone(), Ty::Dyn(0)),
                };
                let (init, ic) = self.walk(&c.accu_init);
                let base = self.scope.len();
                self.scope.push((c.iter_var.clone(), v1));
                if let Some(v) = &c.iter_var2 {
                    self.scope.push((v.clone(), v2));
                }
                self.accus.push(c.accu_var.clone());
                // First pass: how the accumulator grows in one iteration.
                self.quiet += 1;
                self.scope.push((c.accu_var.clone(), init.clone()));
                let (step1, _) = self.walk(&c.loop_step);
                self.scope.pop();
                self.quiet -= 1;
                let accu = grow(&init, &step1, n);
                // Second pass: the costs with the accumulator at its largest.
                self.scope.push((c.accu_var.clone(), accu.clone()));
                let (_, cc) = self.walk(&c.loop_cond);
                let (_, sc) = self.walk(&c.loop_step);
                let (res, resc) = self.walk(&c.result);
                self.scope.truncate(base);
                self.accus.pop();
                let cost = add(add(rc, ic), add(mul(n, add(cc, sc)), resc));
                (res, cost)
            }
            Expr::Call(call) => self.call(e.id, call),
        }
    }

    /// The type of `t.field`.
    fn field(&mut self, id: u64, t: &Ty, field: &str) -> Ty {
        match t {
            Ty::Object(o) => match o.fields.get(field) {
                Some(f) => f.clone(),
                None => {
                    self.issue(id, format!("undefined field '{field}'"));
                    Ty::Dyn(0)
                }
            },
            Ty::Map(_, v, _) => (**v).clone(),
            Ty::Dyn(n) => Ty::Dyn(*n),
            Ty::Null => Ty::Dyn(0),
            Ty::Optional(inner) => Ty::Optional(Arc::new(self.field(id, inner, field))),
            other => {
                self.issue(id, format!("type '{}' does not support field selection", other.name()));
                Ty::Dyn(0)
            }
        }
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> Tc {
        let name = call.func_name.as_str();
        // Logical operators and the conditional: short-circuit, typed bool.
        match name {
            "_&&_" | "_||_" => {
                let mut cost = 0;
                for a in &call.args {
                    let (t, c) = self.walk(a);
                    if !is_bool(&t) {
                        self.no_overload(id, name, std::slice::from_ref(&t));
                    }
                    cost = add(cost, c);
                }
                return (Ty::Bool, cost);
            }
            "_?_:_" if call.args.len() == 3 => {
                let (ct, cc) = self.walk(&call.args[0]);
                if !is_bool(&ct) {
                    self.no_overload(id, name, &[ct]);
                }
                let (a, ac) = self.walk(&call.args[1]);
                let (b, bc) = self.walk(&call.args[2]);
                return (a.join(&b), add(cc, ac.max(bc)));
            }
            _ => {}
        }
        // A namespaced global function written as a member call on the namespace:
        // `format.named(x)`, `optional.of(x)`, `sets.contains(a, b)`.
        if let Some(target) = &call.target {
            if let Expr::Ident(ns) = &target.expr {
                if self.lookup(ns).is_none() {
                    let qualified = format!("{ns}.{name}");
                    if is_namespaced_function(&qualified) {
                        let args: Vec<Tc> = call.args.iter().map(|a| self.walk(a)).collect();
                        return self.function(id, &qualified, None, args);
                    }
                }
            }
        }
        let target = call.target.as_ref().map(|t| self.walk(t));
        let args: Vec<Tc> = call.args.iter().map(|a| self.walk(a)).collect();
        // A pair's item, `@k8s_pair[0]`/`[1]`: the key's or the value's type.
        if name == "_[_]" && args.len() == 2 {
            if let (Ty::Pair(k, v), Expr::Literal(LiteralValue::Int(i))) = (&args[0].0, &call.args[1].expr) {
                let t = if *i.inner() == 0 { (**k).clone() } else { (**v).clone() };
                return (t, add(args[0].1, 1));
            }
        }
        let left_is_accu = matches!(call.args.first().map(|a| &a.expr), Some(Expr::Ident(n)) if self.accus.contains(n));
        if name == "_+_" && left_is_accu && args.len() == 2 {
            let t = grow(&args[0].0, &args[1].0, 1);
            return (t, add(add(args[0].1, args[1].1), 1));
        }
        self.function(id, name, target, args)
    }

    fn no_member_overload(&mut self, id: u64, name: &str, types: &[Ty]) {
        let names: Vec<String> = types.iter().map(Ty::name).collect();
        self.issue(id, format!("found no matching overload for '{name}' applied to '{}.({})'", names[0], names[1..].join(", ")));
    }

    fn no_overload(&mut self, id: u64, name: &str, types: &[Ty]) {
        let names: Vec<String> = types.iter().map(Ty::name).collect();
        self.issue(id, format!("found no matching overload for '{name}' applied to '({})'", names.join(", ")));
    }

    /// The type and cost of calling `name` (a member function when `target` is some).
    fn function(&mut self, id: u64, name: &str, target: Option<Tc>, args: Vec<Tc>) -> Tc {
        let base = target.as_ref().map_or(0, |t| t.1) + args.iter().fold(0u64, |a, (_, c)| add(a, *c));
        let tt = target.as_ref().map(|t| &t.0);
        let a = |i: usize| args.get(i).map(|t| &t.0);
        let size = |t: Option<&Ty>| t.map_or(0, Ty::size);
        let member = target.is_some();
        // The receiver of a member call, or the first argument of a global one.
        let recv = if member { tt } else { a(0) };
        let rs = size(recv);
        let strf = |n: u64| scaled(n, STR_FACTOR);
        // The receiver kinds of member functions, as cel-go's checker refuses the others.
        if let (true, Some(t)) = (member, tt) {
            if !receiver_ok(name, t) {
                let mut types = vec![t.clone()];
                types.extend(args.iter().map(|(t, _)| t.clone()));
                self.no_member_overload(id, name, &types);
            }
        } else if name == "size" {
            if let Some(t) = a(0).filter(|t| !sized(t)) {
                let t = t.clone();
                self.no_overload(id, name, &[t]);
            }
        }
        let (ty, cost): (Ty, u64) = match (name, member) {
            // Operators.
            ("!_", false) => {
                if let Some(t) = a(0).filter(|t| !is_bool(t)) {
                    let t = t.clone();
                    self.no_overload(id, name, &[t]);
                }
                (Ty::Bool, 1)
            }
            ("@not_strictly_false", false) => (Ty::Bool, 0),
            ("-_", false) => (a(0).cloned().unwrap_or(Ty::Dyn(0)), 1),
            ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", false) if args.len() == 2 => {
                let (x, y) = (&args[0].0, &args[1].0);
                if !comparable(x, y) {
                    let (x, y) = (x.clone(), y.clone());
                    self.no_overload(id, name, &[x, y]);
                }
                (Ty::Bool, eq_cost(&args[0].0, &args[1].0))
            }
            ("_+_", false) if args.len() == 2 => {
                let (x, y) = (&args[0].0, &args[1].0);
                match (x, y) {
                    (Ty::String(n), Ty::String(m)) => (Ty::String(add(*n, *m)), add(1, strf(add(*n, *m)))),
                    (Ty::Bytes(n), Ty::Bytes(m)) => (Ty::Bytes(add(*n, *m)), add(1, strf(add(*n, *m)))),
                    (Ty::List(e1, n), Ty::List(e2, m)) => {
                        // O(1) in cel-go's model; cel-rust copies, which the runtime bound covers.
                        let copy = if self.strict { 0 } else { strf(add(*n, *m)) };
                        (Ty::List(Arc::new(e1.join(e2)), add(*n, *m)), add(1, copy))
                    }
                    (Ty::Dyn(n), other) | (other, Ty::Dyn(n)) => {
                        let s = add(*n, other.json_size());
                        (Ty::Dyn(s), add(1, strf(s)))
                    }
                    (Ty::Int, Ty::Int) | (Ty::Uint, Ty::Uint) | (Ty::Double, Ty::Double) => (x.clone(), 1),
                    (Ty::Timestamp, Ty::Duration) | (Ty::Duration, Ty::Timestamp) => (Ty::Timestamp, 1),
                    (Ty::Duration, Ty::Duration) => (Ty::Duration, 1),
                    _ => {
                        let (x, y) = (x.clone(), y.clone());
                        self.no_overload(id, name, &[x.clone(), y]);
                        (x, 1)
                    }
                }
            }
            ("_-_" | "_*_" | "_/_" | "_%_", false) if args.len() == 2 => {
                let (x, y) = (&args[0].0, &args[1].0);
                let ok = x.is_dyn()
                    || y.is_dyn()
                    || x == y && matches!(x, Ty::Int | Ty::Uint | Ty::Double | Ty::Duration)
                    || name == "_-_" && matches!((x, y), (Ty::Timestamp, Ty::Timestamp | Ty::Duration));
                if !ok {
                    let (x, y) = (x.clone(), y.clone());
                    self.no_overload(id, name, &[x, y]);
                }
                let t = match (x, y) {
                    (Ty::Timestamp, Ty::Timestamp) => Ty::Duration,
                    (Ty::Dyn(_), t) | (t, _) => t.clone(),
                };
                (t, 1)
            }
            ("_[_]", false) | ("_[?_]", false) if args.len() == 2 => {
                let opt = name == "_[?_]";
                let t = match &args[0].0 {
                    Ty::List(e, _) => (**e).clone(),
                    Ty::Map(_, v, _) => (**v).clone(),
                    Ty::Object(o) => o.any_field(),
                    Ty::Dyn(n) => Ty::Dyn(*n),
                    Ty::Optional(inner) => inner.iteration().0,
                    Ty::Null => Ty::Dyn(0),
                    other => {
                        let (x, y) = (other.clone(), args[1].0.clone());
                        self.no_overload(id, "_[_]", &[x, y]);
                        Ty::Dyn(0)
                    }
                };
                (if opt { Ty::Optional(Arc::new(t)) } else { t }, 1)
            }
            ("_?._", false) if args.len() == 2 => {
                let t = match &args[0].0 {
                    Ty::Object(o) => o.any_field(),
                    Ty::Map(_, v, _) => (**v).clone(),
                    Ty::Optional(inner) => inner.iteration().2,
                    other => Ty::Dyn(other.json_size()),
                };
                (Ty::Optional(Arc::new(t)), 1)
            }
            ("@in", false) if args.len() == 2 => {
                let cost = match &args[1].0 {
                    Ty::List(e, n) => add(1, mul(*n, eq_cost(&args[0].0, e))),
                    Ty::Dyn(n) => add(1, mul(*n, eq_cost(&args[0].0, &Ty::Dyn(*n)))),
                    _ => 1,
                };
                (Ty::Bool, cost)
            }
            // Standard functions.
            // cel-go charges 1; cel-rust counts a string's characters, which the runtime bound
            // must cover.
            ("size", _) => match recv {
                Some(Ty::String(n)) if !self.strict => (Ty::Int, add(1, strf(*n))),
                _ => (Ty::Int, 1),
            },
            ("type", false) | ("dyn", false) => (a(0).cloned().map_or(Ty::Type, |t| if name == "dyn" { t } else { Ty::Type }), 1),
            ("int", false) => (Ty::Int, add(1, strf(size(a(0))))),
            ("uint", false) => (Ty::Uint, add(1, strf(size(a(0))))),
            ("double", false) => (Ty::Double, add(1, strf(size(a(0))))),
            ("bool", false) => (Ty::Bool, add(1, strf(size(a(0))))),
            ("string", false) => {
                let n = a(0).map_or(0, |t| match t {
                    Ty::String(n) | Ty::Bytes(n) | Ty::Opaque(_, n) => *n,
                    Ty::Dyn(n) => *n,
                    _ => 64,
                });
                (Ty::String(n), add(1, strf(n)))
            }
            ("bytes", false) => {
                let n = size(a(0));
                (Ty::Bytes(mul(n, 4)), add(1, strf(n)))
            }
            ("duration", false) => (Ty::Duration, add(1, strf(size(a(0))))),
            ("timestamp", false) => (Ty::Timestamp, add(1, strf(size(a(0))))),
            (
                "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours" | "getMinutes"
                | "getSeconds" | "getMilliseconds",
                true,
            ) => (Ty::Int, 1),
            ("matches", _) | (super::library::MATCHES, false) => {
                let s = if member { rs } else { size(a(0)) };
                let re = if member { size(a(0)) } else { size(a(1)) };
                // cel-go: (0.1 × (len + 1)) × (0.25 × regex length).
                (Ty::Bool, add(1, mul(strf(add(s, 1)), scaled(re, 0.25).max(1))))
            }
            // cel-go: contains is (0.1 × len) × (0.1 × substring length), the prefix and suffix
            // tests 0.1 × their argument's length.
            ("contains", true) => (Ty::Bool, add(1, mul(strf(rs).max(1), strf(size(a(0))).max(1)))),
            ("startsWith" | "endsWith", true) => (Ty::Bool, add(1, strf(size(a(0))))),
            // The strings extension.
            ("charAt", true) => (Ty::String(1), add(1, strf(rs))),
            ("indexOf" | "lastIndexOf", true) => match recv {
                Some(Ty::List(e, n)) => (Ty::Int, add(1, mul(*n, add(1, strf(e.json_size()))))),
                _ => (Ty::Int, add(1, strf(add(rs, size(a(0)))))),
            },
            ("lowerAscii" | "upperAscii" | "trim", true) => (Ty::String(rs), add(1, strf(rs))),
            ("reverse", true) => (recv.cloned().unwrap_or(Ty::Dyn(0)), add(1, strf(rs))),
            ("replace", true) => {
                let out = add(rs, mul(add(rs, 1), size(a(1))));
                (Ty::String(out), add(1, strf(out)))
            }
            ("split", true) => (Ty::List(Arc::new(Ty::String(rs)), add(rs, 1)), add(1, strf(rs))),
            ("substring", true) => (Ty::String(rs), add(1, strf(rs))),
            ("join", true) => {
                let (elen, n) = match recv {
                    Some(Ty::List(e, n)) => (e.size(), *n),
                    _ => (rs, rs),
                };
                let out = mul(n, add(elen, size(a(0))));
                (Ty::String(out), add(1, strf(out)))
            }
            ("format", true) => {
                let out = add(rs, a(0).map_or(0, Ty::json_size));
                (Ty::String(out), add(1, strf(out)))
            }
            ("strings.quote", false) => {
                let out = add(mul(rs, 2), 2);
                (Ty::String(out), add(1, strf(out)))
            }
            // Kubernetes list library.
            ("isSorted" | "sum" | "min" | "max", true) => {
                let (e, n) = match recv {
                    Some(Ty::List(e, n)) => ((**e).clone(), *n),
                    Some(Ty::Dyn(n)) => (Ty::Dyn(*n), *n),
                    _ => (Ty::Dyn(0), 0),
                };
                let cost = add(1, mul(n, add(1, strf(e.json_size()))));
                (if name == "isSorted" { Ty::Bool } else { e }, cost)
            }
            // The two-variable comprehensions' helpers (see `comprehensions`).
            (super::comprehensions::PAIRS, false) => {
                let (k, n, v) = match recv {
                    Some(Ty::List(e, n)) => (Ty::Int, *n, (**e).clone()),
                    Some(t) => t.iteration(),
                    None => (Ty::Dyn(0), 0, Ty::Dyn(0)),
                };
                // No copy in cel-go's model; cel-rust's pairs copy the items (the runtime bound).
                let copy = if self.strict { 0 } else { strf(mul(n, add(k.json_size(), v.json_size()))) };
                (Ty::List(Arc::new(Ty::Pair(Arc::new(k), Arc::new(v))), n), add(1, copy))
            }
            (super::comprehensions::TO_MAP, false) => {
                let (e, n, _) = recv.map_or((Ty::Dyn(0), 0, Ty::Dyn(0)), Ty::iteration);
                let s = e.json_size();
                let copy = if self.strict { 0 } else { strf(mul(n, s)) };
                (Ty::Map(Arc::new(Ty::Dyn(s)), Arc::new(Ty::Dyn(s)), n), add(1, copy))
            }
            (super::comprehensions::MERGE_MAPS, false) => {
                let (e, n, _) = recv.map_or((Ty::Dyn(0), 0, Ty::Dyn(0)), Ty::iteration);
                let t = match &e {
                    Ty::Map(k, v, m) => Ty::Map(k.clone(), v.clone(), mul(n, *m)),
                    other => Ty::Dyn(mul(n, other.json_size())),
                };
                let copy = if self.strict { 0 } else { strf(t.json_size()) };
                (t, add(1, copy))
            }
            // cel-go's lists extension.
            ("slice" | "distinct" | "sort", true) if matches!(recv, Some(Ty::List(..))) => {
                let (e, n) = match recv {
                    Some(Ty::List(e, n)) => ((**e).clone(), *n),
                    _ => (Ty::Dyn(0), 0),
                };
                let each = add(1, strf(e.json_size()));
                let cost = match name {
                    "distinct" => mul(mul(n, n), each),
                    "sort" => mul(mul(n, 64 - n.leading_zeros() as u64), each),
                    _ => add(1, strf(n)),
                };
                (Ty::List(Arc::new(e), n), add(1, cost))
            }
            ("flatten", true) => {
                let t = match recv {
                    Some(Ty::List(e, n)) if args.is_empty() => match &**e {
                        Ty::List(inner, m) => Ty::List(inner.clone(), mul(*n, *m)),
                        other => Ty::List(Arc::new(other.clone()), *n),
                    },
                    Some(other) => Ty::Dyn(other.json_size()),
                    None => Ty::Dyn(0),
                };
                let n = t.size();
                (t, add(1, strf(n)))
            }
            ("first" | "last", true) => (Ty::Optional(Arc::new(recv.map_or(Ty::Dyn(0), |t| t.iteration().0))), 1),
            // Kubernetes semver library.
            ("semver", false) => (Ty::Opaque(super::semver::SEMVER_TYPE, size(a(0))), add(1, strf(size(a(0))))),
            ("isSemver", false) => (Ty::Bool, add(1, strf(size(a(0))))),
            ("major" | "minor" | "patch", true) => (Ty::Int, 1),
            // Kubernetes regex library.
            ("find", true) => (Ty::String(rs), add(1, mul(strf(rs).max(1), scaled(size(a(0)), 0.25).max(1)))),
            ("findAll", true) => {
                (Ty::List(Arc::new(Ty::String(rs)), add(rs, 1)), add(1, mul(strf(rs).max(1), scaled(size(a(0)), 0.25).max(1))))
            }
            // Kubernetes URL library.
            ("url", false) => (Ty::Opaque(super::net::URL_TYPE, size(a(0))), add(1, strf(size(a(0))))),
            ("isURL" | "isIP" | "isCIDR" | "isQuantity", false) => (Ty::Bool, add(1, strf(size(a(0))))),
            ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath", true) => (Ty::String(rs), add(1, strf(rs))),
            ("getQuery", true) => {
                (Ty::Map(Arc::new(Ty::String(rs)), Arc::new(Ty::List(Arc::new(Ty::String(rs)), rs)), rs), add(1, strf(rs)))
            }
            // Kubernetes IP and CIDR libraries.
            ("ip", false) => (Ty::Opaque(super::net::IP_TYPE, size(a(0))), add(1, strf(size(a(0))))),
            ("ip.isCanonical", false) => (Ty::Bool, add(1, strf(size(a(0))))),
            ("cidr", false) => (Ty::Opaque(super::net::CIDR_TYPE, size(a(0))), add(1, strf(size(a(0))))),
            ("family" | "prefixLength", true) => (Ty::Int, 1),
            ("isUnspecified" | "isLoopback" | "isLinkLocalMulticast" | "isLinkLocalUnicast" | "isGlobalUnicast", true) => (Ty::Bool, 1),
            ("containsIP" | "containsCIDR", true) => (Ty::Bool, add(1, strf(size(a(0))))),
            ("ip", true) => (Ty::Opaque(super::net::IP_TYPE, rs), 1),
            ("masked", true) => (Ty::Opaque(super::net::CIDR_TYPE, rs), 1),
            // Kubernetes quantity library.
            ("quantity", false) => (Ty::Opaque(super::quantity::QUANTITY_TYPE, size(a(0))), add(1, strf(size(a(0))))),
            ("sign" | "compareTo" | "asInteger", true) => (Ty::Int, 1),
            ("isGreaterThan" | "isLessThan" | "isInteger", true) => (Ty::Bool, 1),
            ("asApproximateFloat", true) => (Ty::Double, 1),
            ("add" | "sub", true) => (Ty::Opaque(super::quantity::QUANTITY_TYPE, add(rs, 24)), 1),
            // Kubernetes format library.
            ("format.named", false) => (Ty::Optional(Arc::new(Ty::Opaque(super::library::FORMAT_TYPE, 0))), add(1, strf(size(a(0))))),
            (f, false) if f.starts_with("format.") && super::library::FORMATS.contains(&&f[7..]) => {
                (Ty::Opaque(super::library::FORMAT_TYPE, 0), 1)
            }
            ("validate", true) => (Ty::Optional(Arc::new(Ty::List(Arc::new(Ty::String(add(rs, 256))), 4))), add(1, strf(size(a(0))))),
            // Optionals.
            ("optional.of" | "optional.ofNonZeroValue", false) => (Ty::Optional(Arc::new(a(0).cloned().unwrap_or(Ty::Dyn(0)))), 1),
            ("optional.none", false) => (Ty::Optional(Arc::new(Ty::Null)), 1),
            ("hasValue", true) => (Ty::Bool, 1),
            ("value", true) => (
                match recv {
                    Some(Ty::Optional(t)) => (**t).clone(),
                    Some(other) => other.clone(),
                    None => Ty::Dyn(0),
                },
                1,
            ),
            ("orValue", true) => {
                let inner = match recv {
                    Some(Ty::Optional(t)) => (**t).clone(),
                    _ => Ty::Dyn(0),
                };
                (inner.join(a(0).unwrap_or(&Ty::Null)), 1)
            }
            ("or", true) => (recv.cloned().unwrap_or(Ty::Dyn(0)).join(a(0).unwrap_or(&Ty::Null)), 1),
            // Kubernetes sets library.
            ("sets.contains" | "sets.intersects" | "sets.equivalent", false) => {
                let (x, y) = (size(a(0)), size(a(1)));
                let e = a(0).map_or(0, |t| t.iteration().0.json_size());
                (Ty::Bool, add(1, mul(mul(x, y), add(1, strf(e)))))
            }
            _ => {
                self.issue(id, format!("undeclared reference to '{name}' (in container '')"));
                (Ty::Dyn(0), 1)
            }
        };
        (ty, add(base, cost))
    }
}

/// Whether `size()` applies to values of `t`.
fn sized(t: &Ty) -> bool {
    matches!(t, Ty::String(_) | Ty::Bytes(_) | Ty::List(..) | Ty::Map(..) | Ty::Object(_) | Ty::Dyn(_))
}

/// Whether the member function `name` applies to a receiver of `t` (true for names it doesn't
/// know: those are checked as undeclared).
fn receiver_ok(name: &str, t: &Ty) -> bool {
    let string = matches!(t, Ty::String(_) | Ty::Dyn(_));
    let list = matches!(t, Ty::List(..) | Ty::Dyn(_));
    match name {
        "contains" | "startsWith" | "endsWith" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "split" | "substring" | "charAt"
        | "matches" | "find" | "findAll" | "format" => string,
        "indexOf" | "lastIndexOf" | "reverse" => string || list,
        "isSorted" | "sum" | "min" | "max" | "slice" | "flatten" | "distinct" | "sort" | "first" | "last" | "join" => list,
        "size" => sized(t),
        "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" => {
            matches!(t, Ty::Timestamp | Ty::Dyn(_))
        }
        "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => matches!(t, Ty::Timestamp | Ty::Duration | Ty::Dyn(_)),
        "hasValue" | "value" | "orValue" | "or" => matches!(t, Ty::Optional(_) | Ty::Dyn(_)),
        _ => true,
    }
}

/// The cost of comparing values of `a` and `b`: cel-go's tenth of the shorter string, and for
/// aggregates a tenth of the smaller's JSON size (cel-rust compares them deeply).
fn eq_cost(a: &Ty, b: &Ty) -> u64 {
    let aggregate =
        |t: &Ty| matches!(t, Ty::List(..) | Ty::Map(..) | Ty::Object(_) | Ty::Dyn(_) | Ty::Opaque(..) | Ty::Optional(_) | Ty::Pair(..));
    match (a, b) {
        (Ty::String(n), Ty::String(m)) | (Ty::Bytes(n), Ty::Bytes(m)) => add(1, scaled((*n).min(*m), STR_FACTOR)),
        (a, b) if aggregate(a) || aggregate(b) => add(1, scaled(a.json_size().min(b.json_size()), STR_FACTOR)),
        _ => 1,
    }
}

/// Whether a global function of the library is named `qualified` (`ns.name`).
fn is_namespaced_function(qualified: &str) -> bool {
    matches!(
        qualified,
        "format.named"
            | "optional.of"
            | "optional.ofNonZeroValue"
            | "optional.none"
            | "sets.contains"
            | "sets.intersects"
            | "sets.equivalent"
            | "strings.quote"
            | "ip.isCanonical"
    ) || qualified.strip_prefix("format.").is_some_and(|f| super::library::FORMATS.contains(&f))
}

fn literal(l: &LiteralValue) -> Ty {
    match l {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(b) => Ty::Bytes(b.inner().len() as u64),
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(s) => Ty::String(s.inner().chars().count() as u64),
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

/// The accumulator after `n` iterations that each take it from `init` to `step`.
fn grow(init: &Ty, step: &Ty, n: u64) -> Ty {
    match (init, step) {
        (Ty::List(e0, n0), Ty::List(e1, n1)) => Ty::List(Arc::new(e0.join(e1)), add(*n0, mul(n, n1.saturating_sub(*n0)))),
        (Ty::String(n0), Ty::String(n1)) => Ty::String(add(*n0, mul(n, n1.saturating_sub(*n0)))),
        (Ty::Map(k0, v0, n0), Ty::Map(k1, v1, n1)) => {
            Ty::Map(Arc::new(k0.join(k1)), Arc::new(v0.join(v1)), add(*n0, mul(n, n1.saturating_sub(*n0))))
        }
        (a, b) => a.join(b),
    }
}
