//! kube-apiserver's quantity library: `quantity(s)`, `isQuantity(s)`, and on a quantity `sign`,
//! `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub` (a quantity or an int),
//! `compareTo`, `isGreaterThan`, `isLessThan`; `==` compares values (`1k == 1000`).
//!
//! A quantity is held exactly as `mantissa × 10^exponent` (binary suffixes folded into the
//! mantissa), normalised so equal values are equal.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{Type, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::args::{arg_str, fail, overload};

pub(crate) const QUANTITY_TYPE: &str = "kubernetes.Quantity";

/// A quantity: `mantissa × 10^exponent`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Quantity {
    mantissa: i128,
    exponent: i32,
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY_TYPE
    }
}

const PARSE_ERROR: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    fn new(mut mantissa: i128, mut exponent: i32) -> Quantity {
        if mantissa == 0 {
            return Quantity { mantissa: 0, exponent: 0 };
        }
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        Quantity { mantissa, exponent }
    }

    /// apimachinery's `ParseQuantity` grammar.
    pub(crate) fn parse(s: &str) -> Result<Quantity, String> {
        let err = || PARSE_ERROR.to_owned();
        let (neg, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            Some(_) => (false, s),
            None => return Err(err()),
        };
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(num_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(err());
        }
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return Err(err());
        }
        let mut mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().map_err(|_| err())? };
        let mut exponent = -(frac_part.len() as i32);
        let (binary, decimal): (u32, i32) = match suffix {
            "" => (0, 0),
            "Ki" => (10, 0),
            "Mi" => (20, 0),
            "Gi" => (30, 0),
            "Ti" => (40, 0),
            "Pi" => (50, 0),
            "Ei" => (60, 0),
            "n" => (0, -9),
            "u" => (0, -6),
            "m" => (0, -3),
            "k" => (0, 3),
            "M" => (0, 6),
            "G" => (0, 9),
            "T" => (0, 12),
            "P" => (0, 15),
            "E" => (0, 18),
            other if other.starts_with(['e', 'E']) => {
                let e: i32 = other[1..].parse().map_err(|_| err())?;
                if other[1..].is_empty() || !(-1000..=1000).contains(&e) {
                    return Err(err());
                }
                (0, e)
            }
            _ => return Err(err()),
        };
        mantissa = mantissa.checked_mul(1i128 << binary).ok_or_else(err)?;
        exponent += decimal;
        if neg {
            mantissa = -mantissa;
        }
        Ok(Quantity::new(mantissa, exponent))
    }

    fn as_f64(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exponent)
    }

    /// Both at the smaller exponent, when that fits.
    fn aligned(&self, other: &Quantity) -> Option<(i128, i128, i32)> {
        let e = self.exponent.min(other.exponent);
        let scale = |q: &Quantity| -> Option<i128> {
            let d = u32::try_from(q.exponent - e).ok()?;
            10i128.checked_pow(d).and_then(|p| q.mantissa.checked_mul(p))
        };
        Some((scale(self)?, scale(other)?, e))
    }

    fn cmp(&self, other: &Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.as_f64().partial_cmp(&other.as_f64()).unwrap_or(Ordering::Equal),
        }
    }

    fn add(&self, other: &Quantity) -> Option<Quantity> {
        let (a, b, e) = self.aligned(other)?;
        Some(Quantity::new(a.checked_add(b)?, e))
    }

    fn as_i64(&self) -> Option<i64> {
        if self.exponent < 0 {
            return None;
        }
        let v = 10i128.checked_pow(self.exponent as u32).and_then(|p| self.mantissa.checked_mul(p))?;
        i64::try_from(v).ok()
    }
}

fn get(function: &str, v: Option<&Value>) -> Result<Quantity, ExecutionError> {
    match v {
        Some(Value::Opaque(o)) => o.downcast_ref::<Quantity>().copied().ok_or_else(|| fail(function, "not a quantity")),
        Some(Value::Int(i)) => Ok(Quantity::new(*i as i128, 0)),
        _ => Err(fail(function, "not a quantity")),
    }
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
}

fn quantity(args: &[Value]) -> Result<Value, ExecutionError> {
    Quantity::parse(arg_str("quantity", args, 0)?).map(wrap).map_err(|e| fail("quantity", e))
}

fn is_quantity(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(Quantity::parse(arg_str("isQuantity", args, 0)?).is_ok()))
}

fn sign(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(get("sign", args.first())?.mantissa.signum() as i64))
}

fn is_integer(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(get("isInteger", args.first())?.as_i64().is_some()))
}

fn as_integer(args: &[Value]) -> Result<Value, ExecutionError> {
    get("asInteger", args.first())?.as_i64().map(Value::Int).ok_or_else(|| fail("asInteger", "cannot convert value to integer"))
}

fn as_approximate_float(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Float(get("asApproximateFloat", args.first())?.as_f64()))
}

fn add(args: &[Value]) -> Result<Value, ExecutionError> {
    let a = get("add", args.first())?;
    let b = get("add", args.get(1))?;
    a.add(&b).map(wrap).ok_or_else(|| fail("add", "quantity overflow"))
}

fn sub(args: &[Value]) -> Result<Value, ExecutionError> {
    let a = get("sub", args.first())?;
    let b = get("sub", args.get(1))?;
    let neg = Quantity::new(-b.mantissa, b.exponent);
    a.add(&neg).map(wrap).ok_or_else(|| fail("sub", "quantity overflow"))
}

fn compare_to(args: &[Value]) -> Result<Value, ExecutionError> {
    let o = get("compareTo", args.first())?.cmp(&get("compareTo", args.get(1))?);
    Ok(Value::Int(o as i64))
}

fn is_greater_than(args: &[Value]) -> Result<Value, ExecutionError> {
    let o = get("isGreaterThan", args.first())?.cmp(&get("isGreaterThan", args.get(1))?);
    Ok(Value::Bool(o == Ordering::Greater))
}

fn is_less_than(args: &[Value]) -> Result<Value, ExecutionError> {
    let o = get("isLessThan", args.first())?.cmp(&get("isLessThan", args.get(1))?);
    Ok(Value::Bool(o == Ordering::Less))
}

pub(crate) fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let q = || Type::new_opaque_type(QUANTITY_TYPE);
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], overload!(quantity))?;
    env.add_overload("isQuantity", "is_quantity", vec![STRING_TYPE], overload!(is_quantity))?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], overload!(sign))?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], overload!(is_integer))?;
    env.add_member_overload("asInteger", "quantity_as_integer", q(), vec![], overload!(as_integer))?;
    env.add_member_overload("asApproximateFloat", "quantity_as_approximate_float", q(), vec![], overload!(as_approximate_float))?;
    for (name, f) in [("add", overload!(add) as cel::common::functions::Function), ("sub", overload!(sub))] {
        env.add_member_overload(name, &format!("quantity_{name}"), q(), vec![q()], f)?;
        env.add_member_overload(name, &format!("quantity_{name}_int"), q(), vec![INT_TYPE], f)?;
    }
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], overload!(compare_to))?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", q(), vec![q()], overload!(is_greater_than))?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], overload!(is_less_than))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    #[test]
    fn parses_and_normalises() {
        assert_eq!(Quantity::parse("1k"), Quantity::parse("1000"));
        assert_eq!(Quantity::parse("1Ki"), Quantity::parse("1024"));
        assert_eq!(Quantity::parse("1.5"), Quantity::parse("1500m"));
        assert_eq!(Quantity::parse("2e3"), Quantity::parse("2k"));
        assert!(Quantity::parse("1.2.3").is_err());
        assert!(Quantity::parse("1kb").is_err());
        assert!(Quantity::parse("").is_err());
        assert!(Quantity::parse("99999999999999999999999999999999999Ei").is_err());
    }
}
