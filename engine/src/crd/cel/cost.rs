//! The cost limits of CEL rules, kube-apiserver's, and its messages about them.
//!
//! Costs are abstract units close to cel-go's: 1 per variable, field selection and call, a tenth
//! of the characters a string function traverses, the iterations of a comprehension times its
//! body. The estimator (`check`) computes a rule's maximum from the sizes of the types
//! it runs on: the schema's bounds when a CRD is written (the static estimate, refused over
//! [`STATIC_ESTIMATED_COST_LIMIT`]), the actual sizes of the value before each evaluation (the
//! runtime bound, spent from the request's [`Budget`](super::Budget)).

/// kube-apiserver's per-expression limit on a rule's estimated cost (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// kube-apiserver's limit on the sum of a CRD's estimated rule costs
/// (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// kube-apiserver's runtime budget for validating one object (`RuntimeCELCostBudget`).
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;
/// kube-apiserver's request size limit, from which unbounded lists, maps and strings are sized
/// (3 MiB).
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
/// The longest `messageExpression` result kube-apiserver keeps
/// (`MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES: usize = 5 * 1024;

/// `cost` scaled by the factor, rounded up, saturating.
pub(crate) fn scaled(size: u64, factor: f64) -> u64 {
    let v = (size as f64 * factor).ceil();
    if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        v as u64
    }
}

/// kube-apiserver's `multiplyWithOverflowGuard`.
pub fn multiply(cost: u64, cardinality: u64) -> u64 {
    if cost == 0 {
        0
    } else {
        cost.saturating_mul(cardinality)
    }
}

/// kube-apiserver's `getCostErrorMessage`: `{cost_name} exceeds budget by factor of …`.
pub fn cost_error_message(cost_name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, \
         maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The sum of a CRD's estimated rule costs against [`STATIC_ESTIMATED_CRD_COST_LIMIT`]: add each
/// schema node's compiled rules with their cardinality (see [`super::cardinality`]), then
/// [`CrdCost::check`].
#[derive(Debug, Default, Clone)]
pub struct CrdCost {
    /// The sum so far, saturating.
    pub total: u64,
    /// The most expensive expressions (at least 1% of the per-expression limit), most expensive
    /// first, at most four: kube-apiserver names them when the total is over.
    most_expensive: Vec<(String, u64)>,
}

impl CrdCost {
    /// A zero total.
    pub fn new() -> CrdCost {
        CrdCost::default()
    }

    /// Adds one node's rules and message expressions (`cardinality`: how many times they may run
    /// per object).
    pub fn add(&mut self, rules: &super::Rules, cardinality: u64) {
        for (path, cost) in &rules.expression_costs {
            let cost = multiply(*cost, cardinality);
            self.total = self.total.saturating_add(cost);
            if cost >= STATIC_ESTIMATED_COST_LIMIT / 100 {
                self.most_expensive.push((path.clone(), cost));
                self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
                self.most_expensive.truncate(4);
            }
        }
    }

    /// kube-apiserver's errors over the limit: `Forbidden: contributed to estimated rule &
    /// messageExpression cost total exceeding cost limit` at the most expensive expressions, then
    /// `Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema
    /// exceeds budget by factor of …` at `path` (the version's `…openAPIV3Schema`). Empty within
    /// the limit.
    pub fn check(&self, path: &str) -> Vec<crate::typed::ValidationError> {
        if self.total <= STATIC_ESTIMATED_CRD_COST_LIMIT {
            return Vec::new();
        }
        let mut errs: Vec<crate::typed::ValidationError> = self
            .most_expensive
            .iter()
            .map(|(p, _)| crate::typed::ValidationError {
                path: p.clone(),
                message: "Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit".into(),
            })
            .collect();
        errs.push(crate::typed::ValidationError {
            path: path.to_owned(),
            message: format!(
                "Forbidden: {}",
                cost_error_message(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    self.total,
                    STATIC_ESTIMATED_CRD_COST_LIMIT
                )
            ),
        });
        errs
    }
}
