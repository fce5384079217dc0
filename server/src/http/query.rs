//! Query parameters of the Kubernetes API (`?limit=…&continue=…&dryRun=All…`), read and
//! checked in one place.

use super::reply::Failure;
use fieldstore_engine::store::{FieldValidation, ListOptions, ResourceVersionMatch};
use std::collections::HashMap;

/// The query parameters of a request (the last value of a repeated one).
#[derive(Debug, Default)]
pub(crate) struct Query(HashMap<String, String>);

impl Query {
    /// Parses a query string.
    pub(crate) fn parse(q: Option<&str>) -> Self {
        Query(form_urlencoded::parse(q.unwrap_or("").as_bytes()).into_owned().collect())
    }

    /// A non-empty parameter.
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|s| !s.is_empty())
    }

    /// A parameter as an owned string.
    pub(crate) fn string(&self, k: &str) -> Option<String> {
        self.get(k).map(str::to_string)
    }

    /// A boolean parameter (`true` or `1`).
    ///
    /// # Errors
    /// 400 for a value that is not a boolean.
    pub(crate) fn flag(&self, k: &str) -> Result<bool, Failure> {
        match self.get(k) {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(v) => Err(Failure::bad_request(format!("invalid {k} {v:?}: true or false"))),
        }
    }

    /// An optional boolean parameter.
    pub(crate) fn opt_flag(&self, k: &str) -> Result<Option<bool>, Failure> {
        match self.get(k) {
            None => Ok(None),
            Some(_) => self.flag(k).map(Some),
        }
    }

    /// A non-negative integer parameter.
    ///
    /// # Errors
    /// 400 for anything else.
    pub(crate) fn number(&self, k: &str) -> Result<Option<u64>, Failure> {
        self.get(k)
            .map(|v| v.parse::<u64>().map_err(|_| Failure::bad_request(format!("invalid {k} {v:?}: a non-negative integer"))))
            .transpose()
    }

    /// `dryRun`: `All`, or nothing.
    ///
    /// # Errors
    /// 400 for any other value.
    pub(crate) fn dry_run(&self) -> Result<bool, Failure> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(v) => Err(Failure::bad_request(format!("Invalid dry run value {v:?}: only \"All\" is supported"))),
        }
    }

    /// `fieldValidation` (default `Warn`).
    ///
    /// # Errors
    /// 400 for an unknown value.
    pub(crate) fn field_validation(&self) -> Result<FieldValidation, Failure> {
        match self.get("fieldValidation") {
            None => Ok(FieldValidation::Warn),
            Some(v) => FieldValidation::from_name(v)
                .ok_or_else(|| Failure::bad_request(format!("invalid fieldValidation {v:?}: Ignore, Warn or Strict"))),
        }
    }

    /// The field manager: `fieldManager`, else the User-Agent up to its first `/`, as
    /// kube-apiserver derives it for non-apply writes (`prefixFromUserAgent`:
    /// `kubectl-client-side-apply/v1.33.0 (linux/amd64) …` → `kubectl-client-side-apply`,
    /// printable characters only, at most 128 bytes).
    pub(crate) fn field_manager(&self, user_agent: Option<&str>) -> String {
        match self.get("fieldManager") {
            Some(m) => m.to_string(),
            None => {
                // prefixFromUserAgent: printable characters only, at most 128 bytes.
                let mut out = String::new();
                for c in user_agent.unwrap_or("").split('/').next().unwrap_or("").chars().filter(|c| !c.is_control()) {
                    if out.len() + c.len_utf8() > 128 {
                        break;
                    }
                    out.push(c);
                }
                out
            }
        }
    }

    /// The list options (`labelSelector`, `fieldSelector`, `limit`, `continue`,
    /// `resourceVersion`, `resourceVersionMatch`).
    ///
    /// # Errors
    /// 400 for a malformed limit or resourceVersionMatch.
    pub(crate) fn list_options(&self) -> Result<ListOptions, Failure> {
        Ok(ListOptions {
            label_selector: self.string("labelSelector"),
            field_selector: self.string("fieldSelector"),
            limit: self.number("limit")?.filter(|&l| l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
            continue_token: self.string("continue"),
            resource_version: self.string("resourceVersion"),
            resource_version_match: self.rv_match()?,
        })
    }

    /// `resourceVersionMatch`.
    ///
    /// # Errors
    /// 400 for a value other than `Exact` and `NotOlderThan`.
    pub(crate) fn rv_match(&self) -> Result<Option<ResourceVersionMatch>, Failure> {
        match self.get("resourceVersionMatch") {
            None => Ok(None),
            Some("Exact") => Ok(Some(ResourceVersionMatch::Exact)),
            Some("NotOlderThan") => Ok(Some(ResourceVersionMatch::NotOlderThan)),
            Some(v) => Err(Failure::bad_request(format!("invalid resourceVersionMatch {v:?}: Exact or NotOlderThan"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters() {
        let q = Query::parse(Some("limit=2&labelSelector=app%3Dweb&dryRun=All&fieldValidation=Strict&watch=1"));
        let l = q.list_options().unwrap();
        assert_eq!((l.limit, l.label_selector.as_deref()), (Some(2), Some("app=web")));
        assert!(q.dry_run().unwrap() && q.flag("watch").unwrap());
        assert_eq!(q.field_validation().unwrap(), FieldValidation::Strict);
        assert_eq!(q.field_manager(Some("kubectl-client-side-apply/v1.33.0 (linux/amd64) kubernetes/abc")), "kubectl-client-side-apply");
        assert_eq!(Query::parse(Some("dryRun=Some")).dry_run().unwrap_err().code(), 400);
        assert_eq!(Query::parse(Some("limit=-1")).list_options().unwrap_err().code(), 400);
    }
}
