//! What the Kubernetes CEL libraries share: wrapping a plain function as a cel-rust overload,
//! reading a string argument, and a function's error.

use cel::{ExecutionError, Value};

/// Wraps `fn(&[Value]) -> Result<Value, ExecutionError>` as a cel-rust overload: the arguments
/// (a member's receiver first) converted to `Value`s, the result back. Its call site names
/// `CowVal`, `Val`, `Value` and `ExecutionError`.
macro_rules! overload {
    ($f:expr) => {{
        fn wrapped<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            let vals = args.iter().map(|a| Value::try_from(a.as_ref())).collect::<Result<Vec<Value>, _>>()?;
            let out: Value = ($f)(vals.as_slice())?;
            let boxed: Box<dyn Val> = Box::<dyn Val>::try_from(out)?;
            Ok(CowVal::from(boxed))
        }
        wrapped
    }};
}
pub(crate) use overload;

/// A function's evaluation error.
pub(crate) fn fail(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// The `i`th argument as a string.
pub(crate) fn arg_str<'a>(function: &str, args: &'a [Value], i: usize) -> Result<&'a str, ExecutionError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(ExecutionError::no_such_overload(function, vec![other.type_of().to_string()])),
        None => Err(ExecutionError::invalid_argument_count(i + 1, args.len())),
    }
}
