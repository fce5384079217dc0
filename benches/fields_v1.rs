//! Placeholder replaced by the FieldsV1 benchmark.
fn main() {}
