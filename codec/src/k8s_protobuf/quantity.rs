//! `resource.Quantity`: parsing and canonical form, ported from apimachinery's
//! `pkg/api/resource` (`ParseQuantity`, `Quantity.String`/`CanonicalizeBytes`, `int64Amount`,
//! `infDecAmount`): what a quantity in JSON or protobuf becomes on the way through kube-apiserver.
//!
//! A quantity already in canonical form keeps its text (`100m`, `+1`, `1Gi`); others are
//! re-emitted canonically (`0.5` → `500m`, `1000m` → `1`, `1.5Gi` → `1536Mi`, `1e3` → `1e3`). Go's
//! quirks are kept: canonical input is kept as written (`+1`, `1.`, `1E3`), and a value whose
//! canonical exponent has no suffix loses it (`1000E` → `1`). Unlike Go, values needing more than
//! [`MAX_DIGITS`] decimal digits are an error rather than a very long computation.

use std::borrow::Cow;
use std::cmp::Ordering;

/// The most decimal digits an arbitrary-precision intermediate may have.
pub(crate) const MAX_DIGITS: usize = 4096;

/// Go's `Format`: how the quantity was written, hence how it is written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// `ParseQuantity(text)` then `String()`: the quantity's canonical text (borrowed when `text`
/// already is canonical).
pub(crate) fn canonical(text: &str) -> Result<Cow<'_, str>, String> {
    let quantity = parse(text).map_err(|reason| format!("quantity {text:?}: {reason}"))?;
    Ok(match quantity.cached {
        true => Cow::Borrowed(text),
        false => Cow::Owned(quantity.to_canonical_string().map_err(|reason| format!("quantity {text:?}: {reason}"))?),
    })
}

/// A parsed quantity: an `int64Amount` (value × 10^scale) or an `inf.Dec` (unscaled × 10^-scale).
struct Quantity {
    amount: Amount,
    format: Format,
    /// Go keeps the input string (`Quantity.s`) when it is already canonical.
    cached: bool,
}

enum Amount {
    Int { value: i64, scale: i32 },
    Dec(Dec),
}

/// An `inf.Dec`: sign × magnitude × 10^-scale.
#[derive(Clone, Debug)]
struct Dec {
    negative: bool,
    magnitude: Big,
    scale: i64,
}

const ERR_FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// The parts `parseQuantityString` finds: sign, numeric text (`value`, sign included), integer
/// digits without leading zeros (`num`), fraction digits (`denom`), suffix.
struct Parts<'a> {
    positive: bool,
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn parse_quantity_string(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut parts = Parts { positive: true, value: "", num: "", denom: "", suffix: "" };
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            parts.positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    // Leading zeros; all zeros is zero.
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        parts.num = "0";
        parts.value = "0";
        return Ok(parts);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        parts.num = &s[start..];
        parts.value = s;
        return Ok(parts);
    }
    parts.num = if pos == start { "0" } else { &s[start..pos] };
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos >= end {
            parts.denom = &s[start..];
            parts.value = s;
            return Ok(parts);
        }
        parts.denom = &s[start..pos];
    }
    parts.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos >= end {
        parts.suffix = &s[suffix_start..];
        return Ok(parts);
    }
    if b[pos] == b'-' || b[pos] == b'+' {
        pos += 1;
    }
    while pos < end {
        if !b[pos].is_ascii_digit() {
            return Err(ERR_FORMAT);
        }
        pos += 1;
    }
    parts.suffix = &s[suffix_start..];
    Ok(parts)
}

/// `quantitySuffixer.interpret`: base, exponent and format of a suffix.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    Some(match suffix {
        "" => (10, 0, Format::DecimalSI),
        "n" => (10, -9, Format::DecimalSI),
        "u" => (10, -6, Format::DecimalSI),
        "m" => (10, -3, Format::DecimalSI),
        "k" => (10, 3, Format::DecimalSI),
        "M" => (10, 6, Format::DecimalSI),
        "G" => (10, 9, Format::DecimalSI),
        "T" => (10, 12, Format::DecimalSI),
        "P" => (10, 15, Format::DecimalSI),
        "E" => (10, 18, Format::DecimalSI),
        "Ki" => (2, 10, Format::BinarySI),
        "Mi" => (2, 20, Format::BinarySI),
        "Gi" => (2, 30, Format::BinarySI),
        "Ti" => (2, 40, Format::BinarySI),
        "Pi" => (2, 50, Format::BinarySI),
        "Ei" => (2, 60, Format::BinarySI),
        _ if suffix.len() > 1 && (suffix.starts_with('e') || suffix.starts_with('E')) => {
            // strconv.ParseInt(…, 10, 64), then int32(…): truncated, as Go does.
            let exponent = go_parse_int(&suffix[1..])?;
            (10, exponent as i32, Format::DecimalExponent)
        }
        _ => return None,
    })
}

/// `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, in range.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `int64Multiply`: the product, unless it overflows.
fn int64_multiply(a: i64, b: i64) -> Option<i64> {
    a.checked_mul(b)
}

fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(ERR_FORMAT);
    }
    if s == "0" {
        return Ok(Quantity { amount: Amount::Int { value: 0, scale: 0 }, format: Format::DecimalSI, cached: true });
    }
    let parts = parse_quantity_string(s)?;
    let (base, exponent, format) = interpret(parts.suffix).ok_or(ERR_SUFFIX)?;

    let digits = parts.num.len() as i64 + parts.denom.len() as i64;
    let (precision, mut scale, mantissa): (i64, i64, i64) = match format {
        Format::DecimalExponent | Format::DecimalSI => (18 - digits, i64::from(exponent), 1),
        Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => {
            let precision = 15 - parts.num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
            (precision, 0, 1i64 << exponent)
        }
        Format::BinarySI => (-1, 0, 1),
    };
    if precision >= 0 {
        scale -= parts.denom.len() as i64;
        // Go computes the scale in int32; it only wraps for exponents near ±2^31, which take the
        // same path with either width.
        let scale32 = scale as i32;
        if scale32 >= -9 {
            // `num + denom` has at most 18 digits here, so it fits an i64.
            let shifted = parts.num.bytes().chain(parts.denom.bytes()).fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
            if let Some(result) = int64_multiply(shifted, mantissa) {
                let result = if parts.positive { result } else { -result };
                let cached = match format {
                    Format::BinarySI => exponent % 10 == 0 && shifted & 7 != 0,
                    _ => scale32 % 3 == 0 && !ends_with_000(parts.num, parts.denom) && !parts.num.starts_with('0'),
                };
                return Ok(Quantity { amount: Amount::Int { value: result, scale: scale32 }, format, cached });
            }
        }
    }

    let mut amount = Dec::parse(parts.value).ok_or(ERR_NUMERIC)?;
    if base == 10 {
        amount.scale -= i64::from(exponent);
    } else {
        for _ in 0..exponent / 30 {
            amount.magnitude.mul_small(1 << 30);
        }
        amount.magnitude.mul_small(1 << (exponent % 30));
    }
    let negative = amount.negative;
    amount.negative = false;
    if !amount.magnitude.is_zero() {
        amount = amount.round_up(9).ok_or(ERR_TOO_LARGE)?;
    }
    let mut format = format;
    if format == Format::BinarySI {
        let max = Dec { negative: false, magnitude: Big::from_u64(i64::MAX as u64), scale: 0 };
        if amount.cmp(&max).ok_or(ERR_TOO_LARGE)? == Ordering::Greater {
            amount = max;
        }
        let one = Dec { negative: false, magnitude: Big::from_u64(1), scale: 0 };
        if amount.cmp(&one).ok_or(ERR_TOO_LARGE)? == Ordering::Less && !amount.magnitude.is_zero() {
            format = Format::DecimalSI;
        }
    }
    amount.negative = negative && !amount.magnitude.is_zero();
    Ok(Quantity { amount: Amount::Dec(amount), format, cached: false })
}

/// Whether `num` followed by `denom` ends in `000`.
fn ends_with_000(num: &str, denom: &str) -> bool {
    let tail = num.bytes().chain(denom.bytes()).rev().take(3);
    tail.clone().count() == 3 && tail.into_iter().all(|d| d == b'0')
}

const ERR_TOO_LARGE: &str = "too many digits to canonicalise";

impl Quantity {
    fn is_zero(&self) -> bool {
        match &self.amount {
            Amount::Int { value, .. } => *value == 0,
            Amount::Dec(d) => d.magnitude.is_zero(),
        }
    }

    fn as_dec(&self) -> Dec {
        match &self.amount {
            Amount::Int { value, scale } => {
                Dec { negative: *value < 0, magnitude: Big::from_u64(value.unsigned_abs()), scale: -i64::from(*scale) }
            }
            Amount::Dec(d) => d.clone(),
        }
    }

    /// `CanonicalizeBytes`: number and suffix.
    fn to_canonical_string(&self) -> Result<String, &'static str> {
        if self.is_zero() {
            return Ok("0".into());
        }
        let mut format = self.format;
        let mut rounded: Option<Amount> = None;
        if format == Format::BinarySI {
            let dec = self.as_dec();
            let lo = Dec::from_i64(-1024);
            let hi = Dec::from_i64(1024);
            if dec.cmp(&lo).ok_or(ERR_TOO_LARGE)? == Ordering::Greater && dec.cmp(&hi).ok_or(ERR_TOO_LARGE)? == Ordering::Less {
                format = Format::DecimalSI;
            } else {
                // AsScale(0): exact for an int64Amount of scale >= 0; else rounded up.
                match &self.amount {
                    Amount::Int { value, scale } if *scale >= 0 => rounded = Some(Amount::Int { value: *value, scale: *scale }),
                    Amount::Int { value, scale } => {
                        let (result, exact) = negative_scale_int64(*value, scale.saturating_neg());
                        if exact {
                            rounded = Some(Amount::Int { value: result, scale: 0 });
                        } else {
                            format = Format::DecimalSI;
                        }
                    }
                    Amount::Dec(d) => {
                        let r = d.round_up(0).ok_or(ERR_TOO_LARGE)?;
                        if r.cmp(d).ok_or(ERR_TOO_LARGE)? == Ordering::Equal {
                            rounded = Some(Amount::Dec(r));
                        } else {
                            format = Format::DecimalSI;
                        }
                    }
                }
            }
        }
        match (format, rounded) {
            (Format::BinarySI, Some(rounded)) => {
                let (number, exponent) = match rounded {
                    Amount::Int { value, scale } => match positive_scale_int64(value, scale) {
                        Some(v) => {
                            let (amount, times) = remove_int64_factors(v, 1024);
                            (amount.to_string(), times)
                        }
                        None => Dec { negative: value < 0, magnitude: Big::from_u64(value.unsigned_abs()), scale: -i64::from(scale) }
                            .canonical_base1024()
                            .ok_or(ERR_TOO_LARGE)?,
                    },
                    Amount::Dec(d) => d.canonical_base1024().ok_or(ERR_TOO_LARGE)?,
                };
                let suffix = match exponent.wrapping_mul(10) {
                    10 => "Ki",
                    20 => "Mi",
                    30 => "Gi",
                    40 => "Ti",
                    50 => "Pi",
                    60 => "Ei",
                    _ => "",
                };
                Ok(number + suffix)
            }
            (format, _) => {
                let (number, exponent) = match &self.amount {
                    Amount::Int { value, scale } => int_canonical(*value, *scale).map_or_else(|| self.as_dec().canonical(), Some),
                    Amount::Dec(d) => d.canonical(),
                }
                .ok_or(ERR_TOO_LARGE)?;
                let suffix: Cow<'_, str> = match format {
                    Format::DecimalExponent if exponent == 0 => "".into(),
                    Format::DecimalExponent => format!("e{exponent}").into(),
                    _ => match exponent {
                        -9 => "n",
                        -6 => "u",
                        -3 => "m",
                        3 => "k",
                        6 => "M",
                        9 => "G",
                        12 => "T",
                        15 => "P",
                        18 => "E",
                        _ => "",
                    }
                    .into(),
                };
                Ok(number + &suffix)
            }
        }
    }
}

/// `int64Amount.AsCanonicalBytes`, or `None` where Go falls back to `inf.Dec`.
fn int_canonical(value: i64, scale: i32) -> Option<(String, i32)> {
    let (mut amount, times) = remove_int64_factors(value, 10);
    let mut exponent = scale.wrapping_add(times);
    match exponent % 3 {
        1 | -2 => {
            amount = multiply_scale(amount, 10)?;
            exponent = exponent.wrapping_sub(1);
        }
        2 | -1 => {
            amount = multiply_scale(amount, 100)?;
            exponent = exponent.wrapping_sub(2);
        }
        _ => {}
    }
    Some((amount.to_string(), exponent))
}

/// `int64MultiplyScale10/100`.
fn multiply_scale(a: i64, factor: i64) -> Option<i64> {
    if a == 0 || a == 1 {
        return Some(a * factor);
    }
    if a == i64::MIN {
        return None;
    }
    a.checked_mul(factor)
}

/// `positiveScaleInt64`: value × 10^scale, if it fits.
fn positive_scale_int64(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    let mut v = value;
    // Past 18 places every non-zero value overflows, so the loop ends early.
    for _ in 0..scale {
        v = multiply_scale(v, 10)?;
    }
    Some(v)
}

/// `negativeScaleInt64`: value / 10^scale rounded away from zero, and whether that was exact.
fn negative_scale_int64(base: i64, scale: i32) -> (i64, bool) {
    if scale == 0 {
        return (base, true);
    }
    let mut value = base;
    let mut fraction = false;
    for _ in 0..scale {
        if !fraction && value % 10 != 0 {
            fraction = true;
        }
        value /= 10;
        if value == 0 {
            if fraction {
                return (if base > 0 { 1 } else { -1 }, false);
            }
            return (0, true);
        }
    }
    if fraction {
        value += if base > 0 { 1 } else { -1 };
    }
    (value, !fraction)
}

/// `removeInt64Factors`: divides out `base` while it divides evenly (on the magnitude).
fn remove_int64_factors(value: i64, base: i64) -> (i64, i32) {
    let negative = value < 0;
    let mut result = value.wrapping_abs();
    let mut times = 0;
    while result >= base && result % base == 0 {
        times += 1;
        result /= base;
    }
    (if negative { result.wrapping_neg() } else { result }, times)
}

impl Dec {
    fn from_i64(value: i64) -> Self {
        Dec { negative: value < 0, magnitude: Big::from_u64(value.unsigned_abs()), scale: 0 }
    }

    /// `inf.Dec.SetString` of `[+-]digits[.digits]`.
    fn parse(text: &str) -> Option<Dec> {
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || int.len() + frac.len() > MAX_DIGITS {
            return None;
        }
        let magnitude = Big::from_digits(int.bytes().chain(frac.bytes()));
        Some(Dec { negative: negative && !magnitude.is_zero(), magnitude, scale: frac.len() as i64 })
    }

    /// `inf.Dec.Round(x, scale, inf.RoundUp)`: to `scale` fractional digits, away from zero.
    fn round_up(&self, scale: i64) -> Option<Dec> {
        let mut magnitude = self.magnitude.clone();
        match self.scale.cmp(&scale) {
            Ordering::Equal => {}
            Ordering::Less => magnitude.mul_pow10(usize::try_from(scale - self.scale).ok()?)?,
            Ordering::Greater => {
                let drop = usize::try_from(self.scale - scale).ok()?;
                if magnitude.digits() < drop {
                    // All digits are fraction: a non-zero value rounds up to one unit.
                    let nonzero = !magnitude.is_zero();
                    magnitude = Big::from_u64(u64::from(nonzero));
                } else if magnitude.div_pow10(drop) {
                    magnitude.add_one();
                }
            }
        }
        Some(Dec { negative: self.negative && !magnitude.is_zero(), magnitude, scale })
    }

    /// Exact comparison (`None` when aligning the scales would need too many digits).
    fn cmp(&self, other: &Dec) -> Option<Ordering> {
        let sign = |d: &Dec| {
            if d.magnitude.is_zero() {
                0
            } else if d.negative {
                -1
            } else {
                1
            }
        };
        let (a, b) = (sign(self), sign(other));
        if a != b || a == 0 {
            return Some(a.cmp(&b));
        }
        let scale = self.scale.max(other.scale);
        let mut x = self.magnitude.clone();
        x.mul_pow10(usize::try_from(scale - self.scale).ok()?)?;
        let mut y = other.magnitude.clone();
        y.mul_pow10(usize::try_from(scale - other.scale).ok()?)?;
        let ordering = x.cmp(&y);
        Some(if a < 0 { ordering.reverse() } else { ordering })
    }

    /// `infDecAmount.AsCanonicalBytes`: digits (signed) and a base-10 exponent that is a multiple of 3.
    fn canonical(&self) -> Option<(String, i32)> {
        let mut magnitude = self.magnitude.clone();
        let mut exponent = -self.scale;
        while !magnitude.is_zero() && magnitude.rem_small(10) == 0 {
            magnitude.div_small(10);
            exponent += 1;
        }
        while exponent % 3 != 0 {
            magnitude.mul_small(10);
            exponent -= 1;
        }
        let exponent = i32::try_from(exponent).ok()?;
        Some((self.signed(&magnitude), exponent))
    }

    /// `infDecAmount.AsCanonicalBase1024Bytes`: rounded up to an integer, powers of 1024 divided out.
    fn canonical_base1024(&self) -> Option<(String, i32)> {
        let mut magnitude = self.round_up(0)?.magnitude;
        let mut times = 0;
        while !magnitude.is_zero() && magnitude.rem_small(1024) == 0 {
            magnitude.div_small(1024);
            times += 1;
        }
        Some((self.signed(&magnitude), times))
    }

    fn signed(&self, magnitude: &Big) -> String {
        let digits = magnitude.to_decimal();
        if self.negative && !magnitude.is_zero() {
            format!("-{digits}")
        } else {
            digits
        }
    }
}

/// An unsigned integer in base 10^9 limbs, least significant first (no leading zero limbs).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

const LIMB: u64 = 1_000_000_000;

impl Big {
    fn from_u64(mut value: u64) -> Self {
        let mut limbs = Vec::new();
        while value > 0 {
            limbs.push((value % LIMB) as u32);
            value /= LIMB;
        }
        Big(limbs)
    }

    fn from_digits(digits: impl DoubleEndedIterator<Item = u8> + Clone) -> Self {
        let all: Vec<u8> = digits.collect();
        let mut limbs = Vec::with_capacity(all.len() / 9 + 1);
        for chunk in all.rchunks(9) {
            limbs.push(chunk.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')));
        }
        let mut big = Big(limbs);
        big.trim();
        big
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn digits(&self) -> usize {
        match self.0.last() {
            None => 0,
            Some(top) => (self.0.len() - 1) * 9 + top.to_string().len(),
        }
    }

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = (product % LIMB) as u32;
            carry = product / LIMB;
        }
        while carry > 0 {
            self.0.push((carry % LIMB) as u32);
            carry /= LIMB;
        }
        self.trim();
    }

    /// Multiplies by 10^n; `None` past [`MAX_DIGITS`].
    fn mul_pow10(&mut self, n: usize) -> Option<()> {
        if self.is_zero() {
            return Some(());
        }
        if self.digits() + n > MAX_DIGITS {
            return None;
        }
        let limbs = n / 9;
        self.0.splice(0..0, std::iter::repeat_n(0, limbs));
        self.mul_small(10u32.pow((n % 9) as u32));
        Some(())
    }

    /// Divides by `divisor`, returning the remainder.
    fn div_small(&mut self, divisor: u32) -> u32 {
        let mut remainder = 0u64;
        for limb in self.0.iter_mut().rev() {
            let current = remainder * LIMB + u64::from(*limb);
            *limb = (current / u64::from(divisor)) as u32;
            remainder = current % u64::from(divisor);
        }
        self.trim();
        remainder as u32
    }

    fn rem_small(&self, divisor: u32) -> u32 {
        self.0.iter().rev().fold(0u64, |remainder, &limb| (remainder * LIMB + u64::from(limb)) % u64::from(divisor)) as u32
    }

    /// Divides by 10^n (truncating); returns whether anything non-zero was dropped.
    fn div_pow10(&mut self, n: usize) -> bool {
        let limbs = n / 9;
        let mut dropped = self.0.iter().take(limbs).any(|&l| l != 0);
        self.0.drain(..limbs.min(self.0.len()));
        let rest = 10u32.pow((n % 9) as u32);
        if rest > 1 {
            dropped |= self.div_small(rest) != 0;
        }
        dropped
    }

    fn add_one(&mut self) {
        for limb in &mut self.0 {
            if u64::from(*limb) + 1 < LIMB {
                *limb += 1;
                return;
            }
            *limb = 0;
        }
        self.0.push(1);
    }

    fn to_decimal(&self) -> String {
        match self.0.split_last() {
            None => "0".into(),
            Some((top, rest)) => {
                let mut text = top.to_string();
                for limb in rest.iter().rev() {
                    text.push_str(&format!("{limb:09}"));
                }
                text
            }
        }
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str) -> String {
        canonical(text).map(Cow::into_owned).unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn canonical_forms_match_apimachinery() {
        // From apimachinery's quantity_test.go (TestQuantityParse / canonical expectations).
        let cases = [
            ("0", "0"),
            ("00", "0"),
            ("-0", "0"),
            ("+0", "0"),
            ("1", "1"),
            ("+1", "+1"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            (".5", "500m"),
            ("1.", "1."),
            ("1Ki", "1Ki"),
            ("1024Ki", "1Mi"),
            ("1.5Gi", "1536Mi"),
            ("8Ki", "8Ki"),
            ("0.5Ki", "512"),
            ("1023", "1023"),
            ("1024", "1024"),
            ("1k", "1k"),
            ("1000", "1k"),
            ("1e3", "1e3"),
            ("1E3", "1E3"),
            ("1e6", "1e6"),
            ("100e-3", "100e-3"),
            ("1000e-3", "1"),
            ("1e-20", "1e-9"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("1.5n", "2n"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("12345678901234567890m", "12345678901234567890m"),
            ("1000E", "1"),
            ("-1.5Gi", "-1536Mi"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("18Ei", "9223372036854775807"),
            ("20Mi", "20Mi"),
            ("1.1Mi", "1153433600m"),
            ("0.9Mi", "943718400m"),
            ("1.5m", "1500u"),
            ("2e1", "20"),
            ("5e-1", "500e-3"),
            ("-", "0"),
            (".", "0"),
        ];
        for (input, expected) in cases {
            assert_eq!(c(input), expected, "{input}");
        }
    }

    #[test]
    fn malformed_quantities_are_errors() {
        for bad in ["", "a", "1.5.5", "1Mi5", "1e", "1ee3", "1x", "--1", " 1", "1 ", ".e-20"] {
            assert!(canonical(bad).is_err(), "{bad:?} gave {:?}", canonical(bad));
        }
        assert!(canonical("1234567890123456789e999999999").is_err(), "bounded work");
        assert_eq!(c("1e999999999"), "1e999999999");
    }
}
