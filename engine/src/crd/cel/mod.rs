//! CEL validation rules of custom resources (`x-kubernetes-validations`).
