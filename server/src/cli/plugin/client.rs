//! The plugin's HTTP client: JSON GETs against the API server of a kubeconfig [`Target`], with
//! its bearer token and CA. A refusal comes back as the server's `metav1.Status`
//! ([`CliError::Api`]), which the CLI prints as it prints gRPC refusals.
//!
//! ureq: a small, blocking, well-kept client (the plugin makes a few sequential calls, so no
//! async runtime), with rustls on ring like the rest of the tree and custom root certificates.

use super::super::error::{CliError, Result};
use super::config::Target;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use ureq::tls::{PemItem, RootCerts, TlsConfig};

/// Largest answer read (history of a big object can be large, but not unbounded).
const MAX_BODY: u64 = 256 << 20;

/// A connection to one API server.
pub(crate) struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    /// A client of `target`.
    ///
    /// # Errors
    /// [`CliError::Usage`] when the CA data holds no certificate.
    pub(crate) fn new(target: &Target) -> Result<Self> {
        let mut tls = TlsConfig::builder().disable_verification(target.insecure);
        if let Some(pem) = &target.ca_pem {
            let certs: Vec<_> = ureq::tls::parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(CliError::Usage("the kubeconfig's certificate authority holds no PEM certificate".into()));
            }
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        let agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Client { base: target.server.clone(), token: target.token.clone(), agent })
    }

    /// `GET path?query` as JSON.
    ///
    /// # Errors
    /// [`CliError::Api`] with the server's `Status` (or one made from the HTTP status), and
    /// [`CliError::Usage`] when the server cannot be reached or answers something else than JSON.
    pub(crate) fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut req = self.agent.get(&url).header("Accept", "application/json");
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        for (k, v) in query {
            req = req.query(*k, v);
        }
        let mut resp = req.call().map_err(|e| CliError::Usage(format!("GET {url}: {e}")))?;
        let status = resp.status();
        let body = resp.body_mut().with_config().limit(MAX_BODY).read_to_vec().map_err(|e| CliError::Usage(format!("GET {url}: {e}")))?;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if status.is_success() {
            return parsed.ok_or_else(|| CliError::Usage(format!("GET {url}: the answer is not JSON")));
        }
        match parsed {
            Some(s) if s.get("kind").and_then(Value::as_str) == Some("Status") => Err(CliError::Api(s)),
            _ => Err(CliError::Api(
                fieldstore_engine::Status::failure_with_code(
                    status.as_u16(),
                    &status.canonical_reason().unwrap_or("Unknown").replace(' ', ""),
                    format!("GET {url}: {}", String::from_utf8_lossy(&body).trim()),
                )
                .to_value(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(ca_pem: Option<Vec<u8>>) -> Target {
        Target { server: "https://127.0.0.1:1".into(), token: Some("t".into()), namespace: None, ca_pem, insecure: false }
    }

    #[test]
    fn a_kubeconfig_ca_must_hold_a_certificate() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        assert!(Client::new(&target(Some(cert.cert.pem().into_bytes()))).is_ok());
        assert!(Client::new(&target(None)).is_ok());
        assert!(matches!(Client::new(&target(Some(b"not a certificate".to_vec()))), Err(CliError::Usage(_))));
    }

    #[test]
    fn an_unreachable_server_is_an_error_not_a_panic() {
        let c = Client::new(&Target { server: "http://127.0.0.1:1".into(), ..target(None) }).unwrap();
        assert!(matches!(c.get("/api/v1", &[]), Err(CliError::Usage(m)) if m.contains("GET http://127.0.0.1:1/api/v1")));
    }
}
