//! Who is calling and what they may do: bearer tokens in kube-apiserver's static token file
//! format, and simple authorization rules.
//!
//! Token file: one `token,user,uid[,"group1,group2"]` per line (`#` comments and blank lines
//! skipped), as `--token-auth-file` of kube-apiserver.
//!
//! Authorization file (YAML): a list of rules; a request is allowed when any rule matches its
//! identity (by user or group), verb, resource and namespace. `*` matches everything.
//! ```yaml
//! - users: [alice]
//!   groups: [admins]
//!   verbs: [get, list, watch]     # get list watch create update apply patch delete
//!                                 # deletecollection compact admin (types, rename, release)
//!   resources: ["*"]
//!   namespaces: [default]         # "" for cluster-scoped objects and store-wide calls
//! ```
//! Without a token file every caller is `anonymous` (allowed only on loopback); without an
//! authorization file every authenticated caller may do everything.

use fieldstore_engine::{Reason, Status};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user name; the default field manager of its non-apply writes.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
}

impl Identity {
    /// The caller when no token file is configured.
    pub fn anonymous() -> Self {
        Identity { user: "anonymous".into(), groups: vec!["system:unauthenticated".into()] }
    }
}

/// One authorization rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    namespaces: Vec<String>,
}

fn any(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

impl Rule {
    fn allows(&self, id: &Identity, verb: &str, resource: &str, namespace: &str) -> bool {
        let who = any(&self.users, &id.user) || id.groups.iter().any(|g| any(&self.groups, g));
        who && any(&self.verbs, verb) && any(&self.resources, resource) && any(&self.namespaces, namespace)
    }
}

/// Authentication and authorization as configured.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    tokens: Option<HashMap<String, Identity>>,
    rules: Option<Vec<Rule>>,
}

/// Why an auth file is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFileError {
    /// It cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line or rule is malformed.
    #[error("{path}:{line}: {message}")]
    Malformed {
        /// The file.
        path: String,
        /// The line (1-based; 0 for the whole file).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Auth {
    /// No token file and no rules: everyone is `anonymous` and may do everything.
    pub fn open() -> Self {
        Auth::default()
    }

    /// Whether callers must present a token.
    pub fn requires_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// Loads the static token file.
    pub fn with_token_file(mut self, path: &Path) -> Result<Self, AuthFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AuthFileError::Read { path: name.clone(), source })?;
        self.tokens = Some(parse_tokens(&text).map_err(|(line, message)| AuthFileError::Malformed { path: name, line, message })?);
        Ok(self)
    }

    /// Loads the authorization rules.
    pub fn with_authz_file(mut self, path: &Path) -> Result<Self, AuthFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AuthFileError::Read { path: name.clone(), source })?;
        let rules: Vec<Rule> =
            serde_yaml::from_str(&text).map_err(|e| AuthFileError::Malformed { path: name, line: 0, message: e.to_string() })?;
        self.rules = Some(rules);
        Ok(self)
    }

    /// The caller of a request with this `Authorization` header value (gRPC metadata or HTTP
    /// header: both carry `Bearer TOKEN`).
    ///
    /// # Errors
    /// 401 without a token, or with an unknown one.
    pub fn authenticate_header(&self, header: Option<&str>) -> Result<Identity, Status> {
        let Some(tokens) = &self.tokens else { return Ok(Identity::anonymous()) };
        let header = header.unwrap_or("");
        let token = header.strip_prefix("Bearer ").or_else(|| header.strip_prefix("bearer ")).unwrap_or("").trim();
        if token.is_empty() {
            return Err(Status::failure(Reason::Unauthorized, "Unauthorized: a bearer token is required"));
        }
        tokens.get(token).cloned().ok_or_else(|| Status::failure(Reason::Unauthorized, "Unauthorized: unknown token"))
    }

    /// Fails unless `id` may do `verb` on `resource` in `namespace`.
    pub fn authorize(&self, id: &Identity, verb: &str, resource: &str, namespace: &str) -> Result<(), Status> {
        match &self.rules {
            None => Ok(()),
            Some(rules) if rules.iter().any(|r| r.allows(id, verb, resource, namespace)) => Ok(()),
            Some(_) => {
                let scope = if namespace.is_empty() { String::new() } else { format!(" in the namespace {namespace:?}") };
                Err(Status::failure(
                    Reason::Forbidden,
                    format!("{resource:?} is forbidden: User {:?} cannot {verb} resource {resource:?}{scope}", id.user),
                ))
            }
        }
    }
}

/// The verbs and resources one rule grants a caller, as [`Auth::rules_of`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The verbs (`*`: every verb).
    pub verbs: Vec<String>,
    /// The resources, as requests are authorized for them (`configmaps`, `deployments.apps`,
    /// `*`).
    pub resources: Vec<String>,
}

impl Auth {
    /// Whether `id` may do `verb` on `resource` in `namespace`, with why: the first rule that
    /// allows it, or that none does.
    pub fn decide(&self, id: &Identity, verb: &str, resource: &str, namespace: &str) -> (bool, String) {
        let Some(rules) = &self.rules else {
            return (true, "no authorization file: every authenticated caller may do everything".into());
        };
        match rules.iter().position(|r| r.allows(id, verb, resource, namespace)) {
            Some(i) => (true, format!("allowed by rule {} of the authorization file", i + 1)),
            None => {
                let scope = if namespace.is_empty() { String::new() } else { format!(" in the namespace {namespace:?}") };
                (false, format!("no rule of the authorization file allows User {:?} to {verb} {resource:?}{scope}", id.user))
            }
        }
    }

    /// What the rules grant `id` in `namespace` (rules for it, `*`, or `""`: cluster-scoped
    /// objects); `None` without an authorization file, when everything is allowed.
    pub fn rules_of(&self, id: &Identity, namespace: &str) -> Option<Vec<Grant>> {
        let rules = self.rules.as_ref()?;
        let applies = |r: &Rule| {
            let who = any(&r.users, &id.user) || id.groups.iter().any(|g| any(&r.groups, g));
            who && (any(&r.namespaces, namespace) || any(&r.namespaces, ""))
        };
        Some(rules.iter().filter(|r| applies(r)).map(|r| Grant { verbs: r.verbs.clone(), resources: r.resources.clone() }).collect())
    }
}

/// Parses a static token file; errors carry the 1-based line.
fn parse_tokens(text: &str) -> Result<HashMap<String, Identity>, (usize, String)> {
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_csv(line);
        if fields.len() < 3 {
            return Err((i + 1, "expected token,user,uid[,\"groups\"]".into()));
        }
        if fields[0].is_empty() || fields[1].is_empty() {
            return Err((i + 1, "token and user may not be empty".into()));
        }
        let groups =
            fields.get(3).map(|g| g.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()).unwrap_or_default();
        out.insert(fields[0].clone(), Identity { user: fields[1].clone(), groups });
    }
    Ok(out)
}

/// Splits one CSV line (double quotes group commas; `""` is a quote).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap_or(&mut String::new()).push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_lines_with_quoted_groups() {
        let t = parse_tokens("# comment\nabc,alice,1,\"dev,ops\"\n\nxyz,bob,2\n").unwrap();
        assert_eq!(t["abc"], Identity { user: "alice".into(), groups: vec!["dev".into(), "ops".into()] });
        assert_eq!(t["xyz"].groups, Vec::<String>::new());
        assert_eq!(parse_tokens("only,two").unwrap_err().0, 1);
    }

    #[test]
    fn rules_match_user_or_group_verb_resource_namespace() {
        let rules: Vec<Rule> = serde_yaml::from_str("- {users: [alice], verbs: [get, list], resources: ['*'], namespaces: [default]}\n- {groups: [ops], verbs: ['*'], resources: [configmaps], namespaces: ['*']}").unwrap();
        let auth = Auth { tokens: None, rules: Some(rules) };
        let alice = Identity { user: "alice".into(), groups: vec![] };
        let bob = Identity { user: "bob".into(), groups: vec!["ops".into()] };
        assert!(auth.authorize(&alice, "get", "pods", "default").is_ok());
        assert_eq!(auth.authorize(&alice, "delete", "pods", "default").unwrap_err().code, 403);
        assert!(auth.authorize(&alice, "get", "pods", "kube-system").is_err());
        assert!(auth.authorize(&bob, "delete", "configmaps", "x").is_ok());
        assert!(auth.authorize(&bob, "delete", "secrets", "x").is_err());
    }
}
