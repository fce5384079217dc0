//! CEL validation rules of custom resources (`x-kubernetes-validations`).
//!
//! [`Rules::compile`] checks and compiles the rules of one schema node when a CRD is written, as
//! kube-apiserver does (the rule's fields, syntax, undeclared references, undefined fields, result
//! type, estimated cost); [`Rules::check`] evaluates them on a value of that node, with the
//! correlated old value for transition rules, spending from the request's [`Budget`].
//!
//! The interpreter is cel-rust's (the `cel` crate), with the Kubernetes libraries added in
//! `library`, `net`, `quantity` and `semver`. cel-rust has no type checker and does not meter
//! evaluation: `check` walks a rule over the types of its variables to report what cel-go's
//! checker reports for the common mistakes and to bound its cost — from the schema's bounds at
//! compile time, from the actual sizes of the values before each evaluation, so a rule never runs
//! unless its cost bound fits the remaining budget.
//!
//! How the schema walker uses it:
//! - when a CRD is written, for each node with `x-kubernetes-validations`:
//!   [`Rules::compile_with`] with the node's [`CompileOptions::cardinality`] (the product of the
//!   enclosing arrays' and maps' maximum sizes, [`cardinality::items`] and
//!   [`cardinality::additional_properties`]; 1 at the root) and `root` for the version's
//!   `openAPIV3Schema`; add each node's [`Rules::estimated_cost`] times its cardinality to a
//!   [`CrdCost`] and [`CrdCost::check`] it; refuse a transition rule
//!   ([`Rules::transition_rules`]) under a list that is not `x-kubernetes-list-type: map` (or a
//!   map that is atomic). Keep the compiled `Rules` (Send + Sync) with the CRD version.
//! - on each write of a custom resource: one [`Budget::new`] for the object, and
//!   [`Rules::check`] on each node's value that has rules (null values are skipped), with the
//!   correlated old value on an update (for map-list items by key, map values by key, object
//!   properties by name; none for items of other lists).
//!
//! What rules can use: `self`, `oldSelf` (transition rules; an optional under `optionalOldSelf`),
//! `has()`, the macros `all`, `exists`, `exists_one`, `map` (2 and 3 arguments), `filter`; CEL's
//! standard functions and operators (`size`, `in`, conversions, `duration`/`timestamp` and
//! their getters, `matches`, `contains`, `startsWith`, `endsWith`, `type`, `dyn`, optionals);
//! cel-go's strings extension (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
//! `replace`, `split`, `substring`, `trim`, `join`, `format`, `strings.quote`, `reverse`), lists
//! extension (`slice`, `flatten`, `distinct`, `reverse`, `sort`, `first`, `last`) and sets
//! (`sets.contains`, `sets.intersects`, `sets.equivalent`); Kubernetes' lists (`isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`), regex (`find`, `findAll`), URL, IP, CIDR, quantity,
//! semver and format libraries; two-variable comprehensions (`all(k, v, …)`, `exists`,
//! `existsOne`, `transformList`, `transformMap`, `transformMapEntry`). Not available:
//! `lists.range`, `sortBy`; the equality and concatenation of `x-kubernetes-list-type: set`/`map`
//! lists are a plain list's (ordered).

mod args;
mod check;
mod comprehensions;
pub mod cost;
mod errors;
mod field_path;
mod formats;
mod library;
mod net;
mod quantity;
mod semver;
#[cfg(test)]
mod tests;
mod types;

use std::sync::Arc;

use serde_json::Value;

pub use cost::{cost_error_message, CrdCost, RUNTIME_CEL_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT};

use crate::typed::ValidationError;
pub(crate) use errors::{go_float, go_quote, shown};
use errors::{rule_struct, ParsedRule};
use types::Ty;

/// The longest rule (and messageExpression) in code points: cel-go's default
/// `ExpressionSizeCodePointLimit`.
pub const MAX_EXPRESSION_CODE_POINTS: usize = 100_000;
/// The deepest nesting of brackets a rule may have; deeper ones are refused before parsing, so
/// the recursive parser, checker and interpreter never see them.
pub const MAX_NESTING: usize = 32;
/// The runtime cost limit of one rule's evaluation (kube-apiserver's `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// The compiled `x-kubernetes-validations` of one schema node.
#[derive(Debug)]
pub struct Rules {
    rules: Vec<Rule>,
    /// The node's schema: its values are converted to CEL values by it.
    schema: Arc<Value>,
    /// The node's `type`, as kube-apiserver quotes it in `Invalid value: "object": …`.
    type_name: String,
    /// Whether the node is a resource root (apiVersion, kind, metadata.name visible).
    root: bool,
    /// The largest per-evaluation estimated cost of the rules (and message expressions), summed.
    estimated: u64,
    /// Each expression's estimated cost, at its CRD path (`…[i].rule`, `…[i].messageExpression`).
    expression_costs: Vec<(String, u64)>,
    /// The CRD path of the node's `x-kubernetes-validations`.
    path: String,
}

#[derive(Debug)]
struct Rule {
    source: String,
    program: cel::Program,
    message: Option<String>,
    message_expression: Option<(String, cel::Program)>,
    reason: Reason,
    /// The normalised `fieldPath` (`x.y`, `m[key]`), appended to the node's path.
    field_path: Option<String>,
    uses_old_self: bool,
    optional_old_self: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

/// The runtime cost budget of validating one object (kube-apiserver's `RuntimeCELCostBudget`).
#[derive(Debug, Clone)]
pub struct Budget {
    remaining: u64,
    exhausted: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new()
    }
}

impl Budget {
    /// The per-object budget, [`RUNTIME_CEL_COST_BUDGET`].
    pub fn new() -> Budget {
        Budget::with_limit(RUNTIME_CEL_COST_BUDGET)
    }

    /// A budget of `limit` units.
    pub fn with_limit(limit: u64) -> Budget {
        Budget { remaining: limit, exhausted: false }
    }

    /// What is left.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Whether a rule was refused for want of budget (no further rule runs).
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }
}

/// Options of [`Rules::compile_with`].
#[derive(Debug, Clone, Copy)]
pub struct CompileOptions {
    /// How many times the node's rules may run per object: the product of the enclosing lists'
    /// and maps' maximum sizes (see [`cardinality`]). A rule's estimated cost times this is what
    /// is held against [`STATIC_ESTIMATED_COST_LIMIT`].
    pub cardinality: u64,
    /// Whether the node is the resource root (the version's `openAPIV3Schema`), where `self`
    /// also has `apiVersion`, `kind` and `metadata.name`/`generateName`. [`Rules::compile`]
    /// infers it from a path ending in `openAPIV3Schema.x-kubernetes-validations`.
    pub root: bool,
}

/// How many times a child's rules may run per object, from its parent's cardinality: a
/// property runs as often as its object; an array's `items` as often times `maxItems` (or kube's
/// worst case from the 3 MiB request limit); a map's `additionalProperties` times
/// `maxProperties` (or the worst case).
pub mod cardinality {
    use serde_json::Value;

    /// The cardinality of the items of the array schema `array`.
    pub fn items(parent: u64, array: &Value) -> u64 {
        let n = array
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| super::types::unbounded_items(array.get("items").unwrap_or(&Value::Null)));
        parent.saturating_mul(n)
    }

    /// The cardinality of the values of the map schema `map` (`additionalProperties`).
    pub fn additional_properties(parent: u64, map: &Value) -> u64 {
        let n = map
            .get("maxProperties")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| super::types::unbounded_entries(map.get("additionalProperties").unwrap_or(&Value::Null)));
        parent.saturating_mul(n)
    }
}

fn err(path: String, message: String) -> ValidationError {
    ValidationError { path, message }
}

/// The deepest bracket nesting of `source`, outside string literals (and runs of unary
/// operators, which nest as deep).
fn nesting(source: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut unary_run = 0usize;
    let mut chars = source.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth + unary_run);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == '!' || c == '-' {
            unary_run += 1;
            max = max.max(depth + unary_run);
        } else if !c.is_whitespace() {
            unary_run = 0;
        }
    }
    max
}

/// Parses `source` with the environment's macros; the error as cel-go words it (without the
/// `compilation failed: ` prefix).
fn parse(source: &str) -> Result<cel::Program, String> {
    let size = source.chars().count();
    if size > MAX_EXPRESSION_CODE_POINTS {
        return Err(format!(
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: {size}, limit {MAX_EXPRESSION_CODE_POINTS}"
        ));
    }
    if nesting(source) > MAX_NESTING {
        return Err(format!("ERROR: <input>:-1:0: expression nesting exceeds limit of {MAX_NESTING}"));
    }
    // cel-rust's parser is ANTLR's recursive descent, whose frames are large (a dozen rules per
    // bracket level): it runs on a thread of its own with a stack far deeper than the nesting
    // limit needs, so neither a server's small worker stacks nor a deep rule can overflow; a
    // panic in it is an error too.
    let owned = source.to_owned();
    let parsed = std::thread::Builder::new()
        .name("cel-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse_on_this_thread(&owned))
        .map_err(|e| format!("ERROR: <input>:-1:0: parser unavailable: {e}"))?
        .join()
        .map_err(|_| "ERROR: <input>:-1:0: internal parser error".to_owned())?;
    parsed.map_err(|errs| errs.iter().map(|(line, col, msg)| errors::located(source, *line, *col, msg)).collect::<Vec<_>>().join("\n"))
}

/// The stack of the parsing thread (reserved, touched only as deep as a parse goes).
const PARSE_STACK_BYTES: usize = 256 << 20;

type ParseIssues = Vec<(usize, usize, String)>;

fn parse_on_this_thread(source: &str) -> Result<cel::Program, ParseIssues> {
    library::ENV
        .compile(source)
        .map_err(|errs| errs.errors.iter().map(|e| (e.pos.0.max(1) as usize, e.pos.1.max(1) as usize, e.msg.clone())).collect())
}

/// What a strict check of `program` found, positioned.
fn issues(source: &str, program: &cel::Program, outcome: &check::Outcome) -> Option<String> {
    if outcome.issues.is_empty() {
        return None;
    }
    let text: Vec<String> = outcome
        .issues
        .iter()
        .map(|i| {
            let (line, col) =
                program.source_info().offset_for(i.id).map(|(start, _)| errors::line_col(source, start as usize)).unwrap_or((1, 1));
            errors::located(source, line, col, &i.message)
        })
        .collect();
    Some(text.join("\n"))
}

/// The variables of a rule: `self` and `oldSelf` (an optional under `optionalOldSelf`).
fn vars(self_ty: &Ty, old_ty: &Ty, optional_old: bool) -> [(&'static str, Ty); 2] {
    let old = if optional_old { Ty::Optional(Arc::new(old_ty.clone())) } else { old_ty.clone() };
    [("self", self_ty.clone()), ("oldSelf", old)]
}

fn uses_old_self(program: &cel::Program) -> bool {
    program.references().has_variable("oldSelf")
}

impl Rules {
    /// Compiles the rules of `schema` (the raw JSON schema node of a CRD's openAPIV3Schema that
    /// carries `x-kubernetes-validations`). `path`: the CRD field path of the node's
    /// `x-kubernetes-validations`; errors name `{path}[i].rule`, `{path}[i].messageExpression`, …
    /// `Ok(None)` when the node has no rules. The estimated cost is held against the limit
    /// for one evaluation (cardinality 1): use [`Rules::compile_with`] for nodes under lists
    /// and maps.
    pub fn compile(schema: &Value, path: &str) -> Result<Option<Rules>, Vec<ValidationError>> {
        let root = path.ends_with("openAPIV3Schema.x-kubernetes-validations");
        Rules::compile_with(schema, path, CompileOptions { cardinality: 1, root })
    }

    /// [`Rules::compile`] with the node's cardinality and root-ness given.
    pub fn compile_with(schema: &Value, path: &str, options: CompileOptions) -> Result<Option<Rules>, Vec<ValidationError>> {
        let Some(list) = schema.get("x-kubernetes-validations") else { return Ok(None) };
        let Some(list) = list.as_array() else {
            return Err(vec![err(path.to_owned(), "Invalid value: \"\": must be a list of validation rules".into())]);
        };
        if list.is_empty() {
            return Ok(None);
        }
        let mut parsed: Vec<ParsedRule> = list.iter().map(ParsedRule::from_json).collect();
        let mut schema_errors = Vec::new();
        for (i, r) in parsed.iter_mut().enumerate() {
            schema_errors.extend(r.field_errors(schema, &format!("{path}[{i}]")));
        }
        if !schema_errors.is_empty() {
            return Err(schema_errors);
        }

        let self_ty = types::schema_type(schema, options.root);
        let mut errors = Vec::new();
        let mut rules = Vec::new();
        let mut estimated = 0u64;
        let mut expression_costs = Vec::new();
        for (i, r) in parsed.iter().enumerate() {
            let at = |field: &str| format!("{path}[{i}].{field}");
            let invalid_rule = |detail: String| err(at("rule"), format!("Invalid value: {}: {detail}", rule_struct(r)));
            let program = match parse(&r.rule) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(invalid_rule(format!("compilation failed: {e}")));
                    continue;
                }
            };
            let transition = uses_old_self(&program);
            let outcome = check::check(program.expression(), &vars(&self_ty, &self_ty, r.optional_old_self), true);
            if let Some(text) = issues(&r.rule, &program, &outcome) {
                errors.push(invalid_rule(format!("compilation failed: {text}")));
                continue;
            }
            if !matches!(outcome.ty, Ty::Bool | Ty::Dyn(_)) {
                errors.push(invalid_rule("cel expression must evaluate to a bool".into()));
                continue;
            }
            let cost = cost::multiply(outcome.cost, options.cardinality);
            if cost > STATIC_ESTIMATED_COST_LIMIT {
                errors.push(err(
                    at("rule"),
                    format!("Forbidden: {}", cost_error_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT)),
                ));
            }
            estimated = estimated.saturating_add(outcome.cost);
            expression_costs.push((at("rule"), outcome.cost));
            if !transition && r.optional_old_self_set {
                errors.push(err(
                    at("optionalOldSelf"),
                    format!("Invalid value: {}: may not be set if oldSelf is not used in rule", r.optional_old_self),
                ));
            }
            let mut message_expression = None;
            if let Some(src) = r.message_expression.as_deref().filter(|s| !s.trim().is_empty()) {
                let invalid_msg = |detail: String| err(at("messageExpression"), format!("Invalid value: {}: {detail}", rule_struct(r)));
                match parse(src) {
                    Err(e) => errors.push(invalid_msg(format!("messageExpression compilation failed: {e}"))),
                    Ok(p) => {
                        let outcome = check::check(p.expression(), &vars(&self_ty, &self_ty, r.optional_old_self), true);
                        if let Some(text) = issues(src, &p, &outcome) {
                            errors.push(invalid_msg(format!("messageExpression compilation failed: {text}")));
                        } else if !matches!(outcome.ty, Ty::String(_) | Ty::Dyn(_)) {
                            errors.push(invalid_msg("must evaluate to a string".into()));
                        } else {
                            let cost = cost::multiply(outcome.cost, options.cardinality);
                            if cost > STATIC_ESTIMATED_COST_LIMIT {
                                errors.push(err(
                                    at("messageExpression"),
                                    format!(
                                        "Forbidden: {}",
                                        cost_error_message("estimated messageExpression cost", cost, STATIC_ESTIMATED_COST_LIMIT)
                                    ),
                                ));
                            }
                            estimated = estimated.saturating_add(outcome.cost);
                            expression_costs.push((at("messageExpression"), outcome.cost));
                            message_expression = Some((src.to_owned(), p));
                        }
                    }
                }
            }
            rules.push(Rule {
                source: r.rule.clone(),
                program,
                message: r.message.clone().filter(|m| !m.trim().is_empty()),
                message_expression,
                reason: r.reason,
                field_path: r.normalized_field_path.clone(),
                uses_old_self: transition,
                optional_old_self: r.optional_old_self,
            });
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Some(Rules {
            rules,
            schema: Arc::new(schema.clone()),
            type_name: types::type_name(schema).to_owned(),
            root: options.root,
            estimated,
            expression_costs,
            path: path.to_owned(),
        }))
    }

    /// The estimated cost of one evaluation of all the node's rules and message expressions
    /// (kube-apiserver's `MaxCost`), from the schema's bounds. Times the node's cardinality it
    /// is the node's share of the CRD total ([`CrdCost`]).
    pub fn estimated_cost(&self) -> u64 {
        self.estimated
    }

    /// The indices of the transition rules (those using `oldSelf`): kube-apiserver refuses them
    /// on a node that cannot be correlated with its old value (under a list that is not
    /// `x-kubernetes-list-type: map`, or a map that is `x-kubernetes-map-type: atomic`), with
    /// `Invalid value: "<rule>": oldSelf cannot be used on the uncorrelatable portion of the
    /// schema within <path>` at `…[i].rule` — the schema walker knows the ancestors, so it
    /// reports that.
    pub fn transition_rules(&self) -> Vec<usize> {
        self.rules.iter().enumerate().filter(|(_, r)| r.uses_old_self).map(|(i, _)| i).collect()
    }

    /// kube-apiserver's errors for the transition rules of a node that cannot be correlated with
    /// its old value, `within` the path of the uncorrelatable ancestor (the list or map schema,
    /// e.g. `spec.validation.openAPIV3Schema.properties[spec].properties[items]`):
    /// `{path}[i].rule: Invalid value: "<rule>": oldSelf cannot be used on the uncorrelatable
    /// portion of the schema within <within>`.
    pub fn uncorrelatable_errors(&self, within: &str) -> Vec<ValidationError> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.uses_old_self)
            .map(|(i, r)| {
                err(
                    format!("{}[{i}].rule", self.path),
                    format!(
                        "Invalid value: {}: oldSelf cannot be used on the uncorrelatable portion of the schema within {within}",
                        go_quote(&r.source)
                    ),
                )
            })
            .collect()
    }

    /// How many rules the node has.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the node has no rules (never, for compiled ones).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    fn invalid(&self, path: &str, detail: &str) -> ValidationError {
        err(path.to_owned(), format!("Invalid value: {}: {detail}", go_quote(&self.type_name)))
    }

    /// Evaluates the rules on `value` (the node's value) with `old` the correlated old value
    /// (None on create or when there is none: transition rules are skipped then, unless
    /// `optionalOldSelf`, when `oldSelf` is `optional.none()`). A value equal to its old value
    /// is ratcheted: only its transition rules run. `path`: the field path of the
    /// value. One error per failed rule, worded as kube-apiserver words it; spends the rules'
    /// cost bounds from `budget` and, when one doesn't fit, runs no further rule and says so
    /// once.
    pub fn check(&self, value: &Value, old: Option<&Value>, path: &str, budget: &mut Budget) -> Vec<ValidationError> {
        self.run(value, old, path, budget, None)
    }

    /// [`Rules::check`], also evaluating the rules an unchanged value ratchets (those without
    /// `oldSelf`): their failures go to `ratcheted`, as kube-apiserver 1.37 turns them into
    /// warnings.
    pub fn check_ratcheted(
        &self,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        budget: &mut Budget,
        ratcheted: &mut Vec<ValidationError>,
    ) -> Vec<ValidationError> {
        self.run(value, old, path, budget, Some(ratcheted))
    }

    fn run(
        &self,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        budget: &mut Budget,
        mut ratcheted: Option<&mut Vec<ValidationError>>,
    ) -> Vec<ValidationError> {
        let mut out = Vec::new();
        if value.is_null() || budget.exhausted {
            return out;
        }
        // Ratcheting (kube-apiserver's CRDValidationRatcheting, on by default since 1.30): a value
        // equal to its correlated old value keeps passing the rules that don't use oldSelf —
        // kube-apiserver evaluates them and turns their failures into warnings; they aren't run.
        // Without a transition rule, nothing of an unchanged value is even converted.
        let unchanged = old.is_some_and(|o| o == value);
        let transitions = self.rules.iter().any(|r| r.uses_old_self);
        if unchanged && !transitions && ratcheted.is_none() {
            return out;
        }
        let self_val = types::to_cel(value, &self.schema, self.root);
        let self_ty = Ty::of_value(&self_val);
        let old_val = old.filter(|o| !o.is_null() && transitions).map(|o| types::to_cel(o, &self.schema, self.root));
        let old_ty = old_val.as_ref().map_or(Ty::Null, Ty::of_value);
        let with_optional = self.rules.iter().any(|r| r.optional_old_self);
        let Some(ctx) = Context::new(&self_val, old_val.as_ref(), with_optional) else {
            out.push(self.invalid(path, "rule compiler initialization error: value not representable"));
            return out;
        };
        for rule in &self.rules {
            if rule.uses_old_self && old_val.is_none() && !rule.optional_old_self {
                continue;
            }
            let ratchets = unchanged && !rule.uses_old_self;
            if ratchets && ratcheted.is_none() {
                continue;
            }
            // Where this rule's failure goes.
            let failures: &mut Vec<ValidationError> = match (&mut ratcheted, ratchets) {
                (Some(r), true) => r,
                _ => &mut out,
            };
            let vars = vars(&self_ty, &old_ty, rule.optional_old_self);
            let bound = check::check(rule.program.expression(), &vars, false).cost;
            let rule_text = rule.message.as_deref().unwrap_or(rule.source.trim());
            if bound > PER_CALL_LIMIT {
                budget.exhausted = true;
                out.push(self.invalid(
                    path,
                    &format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}"
                    ),
                ));
                return out;
            }
            if bound > budget.remaining {
                budget.exhausted = true;
                out.push(
                    self.invalid(path, "validation failed due to running out of cost budget, no further validation rules will be run"),
                );
                return out;
            }
            budget.remaining -= bound;
            let result = execute(&rule.program, ctx.get(rule.optional_old_self));
            match result {
                Ok(cel::Value::Bool(true)) => continue,
                Err(e) => {
                    let detail = match &e {
                        cel::ExecutionError::NoSuchOverload(_) => format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
                        ),
                        other => format!("{} evaluating rule: {rule_text}", errors::execution_error(other)),
                    };
                    failures.push(self.invalid(path, &detail));
                    continue;
                }
                Ok(_) => {}
            }
            let at = match &rule.field_path {
                Some(fp) => format!("{path}.{fp}"),
                None => path.to_owned(),
            };
            let mut detail = None;
            if let Some((_, program)) = &rule.message_expression {
                let bound = check::check(program.expression(), &vars, false).cost;
                if bound > budget.remaining {
                    budget.exhausted = true;
                    out.push(self.invalid(
                        &at,
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    return out;
                }
                budget.remaining -= bound;
                if let Ok(cel::Value::String(s)) = execute(program, ctx.get(rule.optional_old_self)) {
                    let t = s.trim();
                    if !t.is_empty() && !t.contains(['\n', '\r']) && t.len() <= cost::MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES {
                        detail = Some(t.to_owned());
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| match &rule.message {
                Some(m) => m.trim().to_owned(),
                None => format!("failed rule: {}", rule.source.trim()),
            });
            let message = match rule.reason {
                // kube-apiserver 1.37 shows a scalar node's value, and no value for an object or
                // a list.
                Reason::Invalid => match value {
                    Value::Object(_) | Value::Array(_) => format!("Invalid value: {detail}"),
                    scalar => format!("Invalid value: {}: {detail}", errors::shown(scalar)),
                },
                Reason::Forbidden => format!("Forbidden: {detail}"),
                Reason::Required => format!("Required value: {detail}"),
                Reason::Duplicate => format!("Duplicate value: {}", go_quote(&self.type_name)),
            };
            failures.push(err(at, message));
        }
        out
    }
}

/// Runs `program`; a panic inside the interpreter (none is known) is an evaluation error, not
/// the request's end.
fn execute(program: &cel::Program, ctx: &cel::Context<'static, 'static>) -> cel::ResolveResult {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(ctx)))
        .unwrap_or_else(|_| Err(cel::ExecutionError::InternalError("the interpreter failed".into())))
}

/// The activations of a node's rules: `oldSelf` plain, and (built only when a rule has
/// `optionalOldSelf`) `oldSelf` an optional.
struct Context {
    plain: cel::Context<'static, 'static>,
    optional: Option<cel::Context<'static, 'static>>,
}

fn boxed(v: cel::Value) -> Option<Box<dyn cel::common::value::Val>> {
    Box::<dyn cel::common::value::Val>::try_from(v).ok()
}

impl Context {
    fn new(self_val: &cel::Value, old: Option<&cel::Value>, with_optional: bool) -> Option<Context> {
        let mut plain = cel::Context::with_env(library::ENV.clone());
        plain.add_variable_as_val("self", boxed(self_val.clone())?);
        if let Some(old) = old {
            plain.add_variable_as_val("oldSelf", boxed(old.clone())?);
        }
        let optional = if with_optional {
            let mut optional = cel::Context::with_env(library::ENV.clone());
            optional.add_variable_as_val("self", boxed(self_val.clone())?);
            let opt = match old {
                Some(o) => cel::objects::OptionalValue::of(o.clone()),
                None => cel::objects::OptionalValue::none(),
            };
            optional.add_variable_as_val("oldSelf", boxed(cel::Value::Opaque(Arc::new(opt)))?);
            Some(optional)
        } else {
            None
        };
        Some(Context { plain, optional })
    }

    fn get(&self, optional: bool) -> &cel::Context<'static, 'static> {
        match (&self.optional, optional) {
            (Some(o), true) => o,
            _ => &self.plain,
        }
    }
}
