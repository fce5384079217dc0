//! Query parameters of the Kubernetes API (`?limit=…&continue=…&dryRun=All…`), read and
//! checked in one place.

use super::reply::Failure;
use fieldstore_engine::store::{FieldValidation, ListOptions, ResourceVersionMatch};

/// The query parameters of a request, every pair in order (`dryRun` is a list; of another
/// repeated parameter, the last value counts).
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

/// Field errors of an options kind (`CreateOptions`, `ListOptions`, …), collected in the order
/// apimachinery's `ValidateXOptions` finds them, answered as one 422 Invalid as kube-apiserver
/// answers them: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: …`.
#[derive(Debug)]
pub(crate) struct OptionErrors {
    kind: &'static str,
    causes: Vec<(String, String)>,
}

impl OptionErrors {
    /// No errors yet, of `kind`.
    pub(crate) fn new(kind: &'static str) -> Self {
        OptionErrors { kind, causes: Vec::new() }
    }

    /// `field.Forbidden`.
    pub(crate) fn forbidden(&mut self, field: &str, detail: &str) {
        self.causes.push((field.into(), format!("Forbidden: {detail}")));
    }

    /// `field.Required`.
    pub(crate) fn required(&mut self, field: &str, detail: &str) {
        self.causes.push((field.into(), format!("Required value: {detail}")));
    }

    /// `field.NotSupported`: `value` as Go prints it (a string quoted, a list as JSON).
    pub(crate) fn not_supported(&mut self, field: &str, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        self.causes.push((field.into(), format!("Unsupported value: {value}: supported values: {}", list.join(", "))));
    }

    /// `Ok` when there is no error, else the 422.
    ///
    /// # Errors
    /// The 422 Invalid of every error.
    pub(crate) fn check(self) -> Result<(), Failure> {
        if self.causes.is_empty() {
            return Ok(());
        }
        let text: Vec<String> = self.causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let joined = if text.len() == 1 { text.join("") } else { format!("[{}]", text.join(", ")) };
        let mut status = fieldstore_engine::Status::failure(
            fieldstore_engine::Reason::Invalid,
            format!("{}.meta.k8s.io \"\" is invalid: {joined}", self.kind),
        );
        status.details = Some(fieldstore_engine::StatusDetails {
            group: "meta.k8s.io".into(),
            kind: self.kind.into(),
            causes: self
                .causes
                .into_iter()
                .map(|(field, message)| fieldstore_engine::StatusCause {
                    cause_type: fieldstore_engine::status::cause_type(&message).into(),
                    message,
                    field,
                    live: None,
                    applied: None,
                })
                .collect(),
            ..Default::default()
        });
        Err(Failure::from(status))
    }
}

impl Query {
    /// Parses a query string.
    pub(crate) fn parse(q: Option<&str>) -> Self {
        Query(form_urlencoded::parse(q.unwrap_or("").as_bytes()).into_owned().collect())
    }

    /// A non-empty parameter.
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str()).filter(|s| !s.is_empty())
    }

    /// Every non-empty value of a repeated parameter, in order.
    pub(crate) fn all(&self, k: &str) -> Vec<String> {
        self.0.iter().filter(|(key, v)| key == k && !v.is_empty()).map(|(_, v)| v.clone()).collect()
    }

    /// A parameter as an owned string.
    pub(crate) fn string(&self, k: &str) -> Option<String> {
        self.get(k).map(str::to_string)
    }

    /// A boolean parameter, read as kube-apiserver reads one (apimachinery's
    /// `Convert_Slice_string_To_bool`): absent, `0` or `false` (any case) is false; any other
    /// value, the empty one included, is true — `?watch=maybe` watches, as there.
    pub(crate) fn flag(&self, k: &str) -> bool {
        self.opt_flag(k).unwrap_or(false)
    }

    /// An optional boolean parameter (`*bool` in kube-apiserver's options), read as [`Query::flag`].
    pub(crate) fn opt_flag(&self, k: &str) -> Option<bool> {
        // The first value, empty or not, as there.
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| !(v == "0" || v.eq_ignore_ascii_case("false")))
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

    /// `dryRun`: `All`, or nothing; any other value is an error in `errs`.
    pub(crate) fn dry_run(&self, errs: &mut OptionErrors) -> bool {
        dry_run_values(&self.all("dryRun"), errs)
    }

    /// `fieldValidation` (default `Warn`); an unknown value is an error in `errs`.
    pub(crate) fn field_validation(&self, errs: &mut OptionErrors) -> FieldValidation {
        match self.get("fieldValidation") {
            None => FieldValidation::Warn,
            Some(v) => FieldValidation::from_name(v).unwrap_or_else(|| {
                errs.not_supported("fieldValidation", &format!("{v:?}"), &["", "Ignore", "Strict", "Warn"]);
                FieldValidation::Warn
            }),
        }
    }

    /// The dry run and field validation of a create or update (`kind`: `CreateOptions`,
    /// `UpdateOptions`).
    ///
    /// # Errors
    /// 422 Invalid on `kind` for a bad value of either.
    pub(crate) fn write_options(&self, kind: &'static str) -> Result<(bool, FieldValidation), Failure> {
        let mut errs = OptionErrors::new(kind);
        let out = (self.dry_run(&mut errs), self.field_validation(&mut errs));
        errs.check().map(|()| out)
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
    /// `resourceVersion`, `resourceVersionMatch`) of a list (`watch` false) or a watch, checked
    /// as apimachinery's `ValidateListOptions` checks them.
    ///
    /// # Errors
    /// 400 for a malformed limit; 422 Invalid on `ListOptions` for a `resourceVersionMatch` or
    /// `sendInitialEvents` kube-apiserver refuses.
    pub(crate) fn list_options(&self, watch: bool) -> Result<ListOptions, Failure> {
        let limit = self.number("limit")?;
        let mut errs = OptionErrors::new("ListOptions");
        let rv = self.get("resourceVersion");
        let continued = self.get("continue").is_some();
        let initial_events = self.get("sendInitialEvents").is_some();
        let m = self.get("resourceVersionMatch");
        const FIELD: &str = "resourceVersionMatch";
        if watch {
            if initial_events && m != Some("NotOlderThan") {
                errs.forbidden(FIELD, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
            }
            if let Some(m) = m {
                if !initial_events {
                    errs.forbidden(FIELD, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
                }
                if m != "NotOlderThan" {
                    errs.not_supported(FIELD, &format!("{m:?}"), &["NotOlderThan"]);
                }
                if continued {
                    errs.forbidden(FIELD, "resourceVersionMatch is forbidden when continue is provided");
                }
            }
        } else {
            if let Some(m) = m {
                if rv.is_none() {
                    errs.forbidden(FIELD, "resourceVersionMatch is forbidden unless resourceVersion is provided");
                }
                if continued {
                    errs.forbidden(FIELD, "resourceVersionMatch is forbidden when continue is provided");
                }
                if !matches!(m, "Exact" | "NotOlderThan") {
                    errs.not_supported(FIELD, &format!("{m:?}"), &["Exact", "NotOlderThan", ""]);
                }
                if m == "Exact" && rv == Some("0") {
                    errs.forbidden(FIELD, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
                }
            }
            if initial_events {
                errs.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list");
            }
        }
        errs.check()?;
        Ok(ListOptions {
            label_selector: self.string("labelSelector"),
            field_selector: self.string("fieldSelector"),
            limit: limit.filter(|&l| l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
            continue_token: self.string("continue"),
            resource_version: self.string("resourceVersion"),
            resource_version_match: if watch { None } else { self.rv_match()? },
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

/// `dryRun` values (of the query, or of a DeleteOptions body): each must be `All`.
pub(crate) fn dry_run_values(values: &[String], errs: &mut OptionErrors) -> bool {
    if values.iter().any(|v| v != "All") {
        errs.not_supported("dryRun", &serde_json::to_string(values).unwrap_or_default(), &["All"]);
        return false;
    }
    !values.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters() {
        let q = Query::parse(Some("limit=2&labelSelector=app%3Dweb&dryRun=All&fieldValidation=Strict&watch=1"));
        let l = q.list_options(false).unwrap();
        assert_eq!((l.limit, l.label_selector.as_deref()), (Some(2), Some("app=web")));
        assert!(q.write_options("CreateOptions").unwrap().0 && q.flag("watch"));
        assert_eq!(q.write_options("CreateOptions").unwrap().1, FieldValidation::Strict);
        assert_eq!(q.field_manager(Some("kubectl-client-side-apply/v1.33.0 (linux/amd64) kubernetes/abc")), "kubectl-client-side-apply");
        assert_eq!(Query::parse(Some("dryRun=Some")).write_options("CreateOptions").unwrap_err().code(), 422);
        assert_eq!(Query::parse(Some("limit=-1")).list_options(false).unwrap_err().code(), 400);
        for (q, on) in [("watch=maybe", true), ("watch=", true), ("watch=f", true), ("watch=FALSE", false), ("watch=0", false), ("", false)]
        {
            assert_eq!(Query::parse(Some(q)).flag("watch"), on, "{q}");
        }
    }
}
