//! The Kubernetes REST API's documents that do not depend on a request: the OpenAPI documents
//! (`openapi`) and `meta.k8s.io/v1` Tables (`table`), built from the registered types for the
//! router to serve.

pub mod openapi;
pub mod table;
