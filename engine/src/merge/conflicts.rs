//! Apply conflicts: fields another manager owns with a different value.

use super::ManagerKey;
use fieldstore_codec::Path;
use serde_json::Value;
use std::fmt;

/// One field an apply would change that another manager owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: ManagerKey,
    /// The field.
    pub path: Path,
    /// The field's current value, when it has one (beyond Kubernetes, for people reading it).
    pub live: Option<Value>,
    /// The value the apply wanted, when it has one.
    pub applied: Option<Value>,
}

/// Every conflict of a failed apply, sorted by manager then path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// Whether there is no conflict.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of conflicting (manager, field) pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The message Kubernetes gives a failed apply:
    /// `Apply failed with 2 conflicts: conflicts with "hpa": .spec.replicas …`.
    pub fn kubernetes_message(&self) -> String {
        let n = self.0.len();
        let noun = if n == 1 { "conflict" } else { "conflicts" };
        format!("Apply failed with {n} {noun}: {}", self.smd_message())
    }

    /// structured-merge-diff's own rendering: one line per conflict, or grouped by manager.
    fn smd_message(&self) -> String {
        if self.0.len() == 1 {
            let c = &self.0[0];
            return format!("conflict with {}: {}", display_manager(&c.manager), c.path);
        }
        let mut lines = Vec::new();
        let mut last: Option<&ManagerKey> = None;
        for c in &self.0 {
            if last != Some(&c.manager) {
                lines.push(format!("conflicts with {}:", display_manager(&c.manager)));
                last = Some(&c.manager);
            }
            lines.push(format!("- {}", c.path));
        }
        lines.join("\n")
    }
}

/// How the apiserver's `printManager` names a manager in conflict messages: the quoted name,
/// `with subresource "…"` for writes through a subresource, and `using <apiVersion>` for updaters
/// (`"kubelet" with subresource "status" using v1`).
pub(crate) fn display_manager(k: &ManagerKey) -> String {
    let mut s = format!("{:?}", k.manager);
    if !k.subresource.is_empty() {
        s.push_str(&format!(" with subresource {:?}", k.subresource));
    }
    if k.operation == super::Operation::Update {
        s.push_str(" using ");
        s.push_str(&k.api_version);
    }
    s
}

impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kubernetes_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_codec::Path;

    fn conflict(manager: ManagerKey, path: &[&str]) -> Conflict {
        Conflict { manager, path: Path::fields(path.iter().copied()), live: None, applied: None }
    }

    #[test]
    fn message_names_managers_as_the_apiserver_prints_them() {
        let one = Conflicts(vec![conflict(ManagerKey::update("ctrl", "v1"), &["spec", "replicas"])]);
        assert_eq!(one.kubernetes_message(), r#"Apply failed with 1 conflict: conflict with "ctrl" using v1: .spec.replicas"#);
        let two = Conflicts(vec![
            conflict(ManagerKey::apply("hpa"), &["spec", "replicas"]),
            conflict(ManagerKey::update("kubelet", "v1").with_subresource("status"), &["status", "phase"]),
        ]);
        assert_eq!(
            two.kubernetes_message(),
            "Apply failed with 2 conflicts: conflicts with \"hpa\":\n- .spec.replicas\nconflicts with \"kubelet\" with subresource \"status\" using v1:\n- .status.phase"
        );
    }
}
