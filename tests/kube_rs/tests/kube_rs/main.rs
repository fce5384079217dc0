//! kube-rs against fieldstore, asserting on what kube-rs observed: a Controller with a finalizer
//! run to convergence and through deletion (in process and over HTTP), the runtime's watchers and
//! reflector, the event recorder, and `Api`'s verbs with Server-Side Apply. Every test starts its
//! own `fieldstore::testing::TestServer` (a fresh store). One test binary, so that kube and
//! k8s-openapi link once.
#![allow(clippy::unwrap_used, reason = "tests: a failed call is a failed test")]

mod api_verbs;
mod controller;
mod events;
mod in_process;
mod support;
mod watchers;
