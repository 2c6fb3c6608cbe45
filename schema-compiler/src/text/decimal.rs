//! Exact decimal numbers for schema keywords and JSON values.
//!
//! A [`Decimal`] holds a JSON number exactly, whatever its size: `minimum`, `multipleOf`,
//! `const` and `enum` values are compared with it, never through `f64`. The representation is
//! a sign, a coefficient of decimal digits without leading or trailing zeros, and a base-ten
//! exponent, so `1`, `1.0`, `1e0` and `10e-1` are the same value with the same representation,
//! and `-0` is zero.
//!
//! Nothing here allocates in proportion to an exponent: `1e1000000000` is stored as one digit
//! and an exponent, comparisons look at magnitudes first, and
//! [`Decimal::is_multiple_of`] answers exactly by reasoning about the factors 2 and 5 of the
//! divisor instead of scaling by a power of ten. The costs are linear in the number of
//! coefficient digits for parsing, comparing and printing, and quadratic in it for
//! `is_multiple_of` (big-integer division). Exponents are limited to
//! ±[`Decimal::MAX_EXPONENT`]; texts beyond that are rejected with
//! [`DecimalError::ExponentOutOfRange`].

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use num_bigint::BigUint;

/// Errors from parsing or operating on a [`Decimal`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecimalError {
    /// The text is not a JSON number.
    #[error("invalid JSON number text at byte {offset}")]
    Syntax {
        /// Byte offset of the first offending character.
        offset: usize,
    },
    /// The exponent is beyond ±[`Decimal::MAX_EXPONENT`].
    #[error("exponent out of range (the limit is ±{limit})")]
    ExponentOutOfRange {
        /// The limit that was exceeded.
        limit: i64,
    },
    /// `f64` NaN or infinity has no decimal value.
    #[error("{value} is not a finite number")]
    NotFinite {
        /// The offending value, printed.
        value: String,
    },
    /// `is_multiple_of` was asked about a zero divisor.
    #[error("the divisor is zero")]
    ZeroDivisor,
}

/// An exact decimal number: `±coefficient × 10^exponent`.
///
/// ```
/// use schema_compiler::text::decimal::Decimal;
///
/// let a: Decimal = "1.50".parse().unwrap();
/// let b: Decimal = "15e-1".parse().unwrap();
/// assert_eq!(a, b);
/// assert!(a > "1.4999999999999999999999".parse::<Decimal>().unwrap());
/// let step: Decimal = "0.0001".parse().unwrap();
/// assert!("0.0075".parse::<Decimal>().unwrap().is_multiple_of(&step).unwrap());
/// assert_eq!(a.to_plain_string().as_deref(), Some("1.5"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    negative: bool,
    /// ASCII digits, no leading or trailing `0`; empty for zero.
    digits: Box<[u8]>,
    /// Base-ten exponent of the last coefficient digit; 0 for zero.
    exponent: i64,
}

impl Decimal {
    /// The largest accepted absolute exponent, after normalisation.
    pub const MAX_EXPONENT: i64 = 1 << 60;

    /// The longest text [`Decimal::to_plain_string`] produces, in bytes.
    pub const MAX_PLAIN_LEN: usize = 1 << 16;

    /// Zero.
    pub fn zero() -> Decimal {
        Decimal {
            negative: false,
            digits: Box::new([]),
            exponent: 0,
        }
    }

    /// Parses JSON number text (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), exactly.
    pub fn from_json_text(text: &str) -> Result<Decimal, DecimalError> {
        let b = text.as_bytes();
        let mut i = 0;
        let negative = b.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => return Err(DecimalError::Syntax { offset: i }),
        }
        let int_end = i;
        let (frac_start, frac_end) = if b.get(i) == Some(&b'.') {
            i += 1;
            let s = i;
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == s {
                return Err(DecimalError::Syntax { offset: i });
            }
            (s, i)
        } else {
            (i, i)
        };
        let mut exp: i128 = 0;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let exp_negative = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let s = i;
            while let Some(&d) = b.get(i).filter(|d| d.is_ascii_digit()) {
                // Saturate well above the limit; the range check below rejects it.
                exp = (exp * 10 + i128::from(d - b'0')).min(i128::from(i64::MAX));
                i += 1;
            }
            if i == s {
                return Err(DecimalError::Syntax { offset: i });
            }
            if exp_negative {
                exp = -exp;
            }
        }
        if i != b.len() {
            return Err(DecimalError::Syntax { offset: i });
        }
        let frac_len = (frac_end - frac_start) as i128;
        let mut all: Vec<u8> = Vec::with_capacity(int_end - int_start + frac_len as usize);
        all.extend_from_slice(&b[int_start..int_end]);
        all.extend_from_slice(&b[frac_start..frac_end]);
        Self::from_parts(negative, all, exp - frac_len)
    }

    /// Normalises `±digits × 10^exponent` (digits may have leading/trailing zeros).
    fn from_parts(
        negative: bool,
        digits: Vec<u8>,
        exponent: i128,
    ) -> Result<Decimal, DecimalError> {
        let start = digits.iter().position(|&d| d != b'0');
        let Some(start) = start else {
            return Ok(Decimal::zero());
        };
        let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |p| p + 1);
        let exponent = exponent + (digits.len() - end) as i128;
        let limit = i128::from(Self::MAX_EXPONENT);
        if exponent > limit || exponent < -limit {
            return Err(DecimalError::ExponentOutOfRange {
                limit: Self::MAX_EXPONENT,
            });
        }
        Ok(Decimal {
            negative,
            digits: digits[start..end].into(),
            exponent: exponent as i64,
        })
    }

    /// Converts a `serde_json` number exactly (through its text form).
    pub fn from_json_number(n: &serde_json::Number) -> Result<Decimal, DecimalError> {
        Self::from_json_text(&n.to_string())
    }

    /// Converts an `f64` through its shortest round-trip decimal representation, so `0.1`
    /// becomes exactly `0.1` (not the binary value `0.1000000000000000055…`).
    pub fn from_f64(x: f64) -> Result<Decimal, DecimalError> {
        if !x.is_finite() {
            return Err(DecimalError::NotFinite {
                value: x.to_string(),
            });
        }
        // `{:e}` prints the shortest digits that round-trip, e.g. `1.5e0`, `-0e0`, `5e-324`.
        Self::from_json_text(&format!("{x:e}"))
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether the value is below zero (`-0` is not).
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Whether the value is an integer (`1.0` and `1e3` are).
    pub fn is_integer(&self) -> bool {
        self.exponent >= 0
    }

    /// The absolute value.
    pub fn abs(&self) -> Decimal {
        Decimal {
            negative: false,
            ..self.clone()
        }
    }

    /// The negated value (zero stays zero).
    pub fn neg(&self) -> Decimal {
        Decimal {
            negative: !self.negative && !self.is_zero(),
            ..self.clone()
        }
    }

    /// The number of digits before the decimal point in plain notation of a non-zero value,
    /// which may be zero or negative for values below one: `123.4` → 3, `0.05` → -1.
    /// Zero gives 0. Values satisfy `10^(m-1) <= |x| < 10^m`.
    pub fn magnitude(&self) -> i64 {
        if self.is_zero() {
            0
        } else {
            self.exponent + self.digits.len() as i64
        }
    }

    /// Compares absolute values.
    pub fn cmp_abs(&self, other: &Decimal) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        self.magnitude().cmp(&other.magnitude()).then_with(|| {
            // Same magnitude: compare digit strings padded with zeros on the right.
            let n = self.digits.len().max(other.digits.len());
            (0..n)
                .map(|i| {
                    let a = self.digits.get(i).copied().unwrap_or(b'0');
                    let b = other.digits.get(i).copied().unwrap_or(b'0');
                    a.cmp(&b)
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    }

    /// Whether `self` is an integer multiple of `divisor` (the signs do not matter; zero is a
    /// multiple of everything).
    ///
    /// Exact for every pair of values, in time quadratic in the coefficient digits and
    /// independent of the exponents: with `self = a × 10^p` and `divisor = b × 10^q` (`a`, `b`
    /// without trailing zeros), a gap `p - q < 0` means no; otherwise `b = 2^i 5^j r` with `r`
    /// coprime to ten divides `a × 10^(p-q)` exactly when `r` divides `a` and the twos and
    /// fives of `a`, plus `p - q`, cover `i` and `j`.
    pub fn is_multiple_of(&self, divisor: &Decimal) -> Result<bool, DecimalError> {
        if divisor.is_zero() {
            return Err(DecimalError::ZeroDivisor);
        }
        if self.is_zero() {
            return Ok(true);
        }
        let gap = self.exponent - divisor.exponent; // no overflow: both within ±2^60
        if gap < 0 {
            // `a` has no factor ten, so it cannot hold `b × 10^-gap`.
            return Ok(false);
        }
        let a = to_biguint(&self.digits);
        let mut r = to_biguint(&divisor.digits);
        let two = BigUint::from(2u8);
        let five = BigUint::from(5u8);
        let twos = strip_factor(&mut r, &two);
        let fives = strip_factor(&mut r, &five);
        if !(&a % &r).is_zero_big() {
            return Ok(false);
        }
        let gap = gap as u64;
        let need_twos = twos.saturating_sub(gap);
        let need_fives = fives.saturating_sub(gap);
        Ok(count_factor(&a, &two, need_twos) >= need_twos
            && count_factor(&a, &five, need_fives) >= need_fives)
    }

    /// A canonical text: equal values give equal texts and different values different texts.
    /// The form is `[-]digits[eN]`, e.g. `0`, `15e-1`, `-1e308`, `42`.
    pub fn to_canonical_string(&self) -> String {
        let mut s = String::with_capacity(self.digits.len() + 24);
        if self.negative {
            s.push('-');
        }
        if self.is_zero() {
            s.push('0');
            return s;
        }
        s.push_str(self.digit_str());
        if self.exponent != 0 {
            s.push('e');
            s.push_str(&self.exponent.to_string());
        }
        s
    }

    /// Plain notation without exponent and without redundant zeros (`1e3` → `1000`,
    /// `15e-1` → `1.5`, `-5e-3` → `-0.005`), or `None` when that text would be longer than
    /// [`Decimal::MAX_PLAIN_LEN`] bytes.
    pub fn to_plain_string(&self) -> Option<String> {
        self.to_plain_string_within(Self::MAX_PLAIN_LEN)
    }

    /// [`Decimal::to_plain_string`] with a caller-chosen length limit.
    pub fn to_plain_string_within(&self, max_len: usize) -> Option<String> {
        let (int, frac) = self.plain_parts(max_len)?;
        let mut s = String::with_capacity(int.len() + frac.len() + 2);
        if self.negative {
            s.push('-');
        }
        s.push_str(&int);
        if !frac.is_empty() {
            s.push('.');
            s.push_str(&frac);
        }
        (s.len() <= max_len).then_some(s)
    }

    /// The integer digits (no leading zeros, `"0"` below one) and the fraction digits (no
    /// trailing zeros, possibly empty) of the absolute value, or `None` when together they
    /// would exceed `max_len` digits.
    pub(crate) fn plain_parts(&self, max_len: usize) -> Option<(String, String)> {
        if self.is_zero() {
            return Some(("0".to_owned(), String::new()));
        }
        let digits = self.digit_str();
        let len = digits.len() as i64;
        let mag = self.magnitude();
        let total = if self.exponent >= 0 {
            len + self.exponent
        } else if mag > 0 {
            len
        } else {
            1 + (-mag) + len
        };
        if total > max_len as i64 {
            return None;
        }
        if self.exponent >= 0 {
            let mut int = String::with_capacity(total as usize);
            int.push_str(digits);
            int.extend(std::iter::repeat_n('0', self.exponent as usize));
            Some((int, String::new()))
        } else if mag > 0 {
            let (i, f) = digits.split_at(mag as usize);
            Some((i.to_owned(), f.to_owned()))
        } else {
            let mut frac = String::with_capacity((-mag) as usize + digits.len());
            frac.extend(std::iter::repeat_n('0', (-mag) as usize));
            frac.push_str(digits);
            Some(("0".to_owned(), frac))
        }
    }

    /// The value truncated toward zero to at most `m` fraction digits.
    pub(crate) fn truncate_frac(&self, m: u32) -> Decimal {
        let m = i64::from(m);
        if self.is_zero() || self.exponent >= -m {
            return self.clone();
        }
        let drop = (-m - self.exponent) as u64;
        if drop >= self.digits.len() as u64 {
            return Decimal::zero();
        }
        let kept = self.digits[..self.digits.len() - drop as usize].to_vec();
        Decimal::from_parts(self.negative, kept, i128::from(-m)).unwrap_or_else(|_| Decimal::zero())
    }

    fn digit_str(&self) -> &str {
        // The digits are ASCII by construction.
        std::str::from_utf8(&self.digits).unwrap_or("")
    }
}

fn to_biguint(digits: &[u8]) -> BigUint {
    BigUint::parse_bytes(digits, 10).unwrap_or_default()
}

/// Divides `n` by `f` as often as it goes and returns how often.
fn strip_factor(n: &mut BigUint, f: &BigUint) -> u64 {
    let mut count = 0;
    loop {
        let q = &*n / f;
        if &q * f != *n || n.is_zero_big() {
            return count;
        }
        *n = q;
        count += 1;
    }
}

/// How often `f` divides `n`, counting no further than `limit`.
fn count_factor(n: &BigUint, f: &BigUint, limit: u64) -> u64 {
    let mut n = n.clone();
    let mut count = 0;
    while count < limit {
        let q = &n / f;
        if &q * f != n || n.is_zero_big() {
            break;
        }
        n = q;
        count += 1;
    }
    count
}

trait IsZeroBig {
    fn is_zero_big(&self) -> bool;
}

impl IsZeroBig for BigUint {
    fn is_zero_big(&self) -> bool {
        self.bits() == 0
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_abs(other),
            (true, true) => other.cmp_abs(self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Decimal {
    type Err = DecimalError;

    /// Same as [`Decimal::from_json_text`].
    fn from_str(s: &str) -> Result<Decimal, DecimalError> {
        Decimal::from_json_text(s)
    }
}

impl fmt::Display for Decimal {
    /// Plain notation when it is at most 40 characters, otherwise scientific
    /// (`1.5e308`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.to_plain_string_within(40) {
            return f.write_str(&s);
        }
        if self.negative {
            f.write_str("-")?;
        }
        let d = self.digit_str();
        let (first, rest) = d.split_at(1);
        f.write_str(first)?;
        if !rest.is_empty() {
            write!(f, ".{rest}")?;
        }
        write!(f, "e{}", self.magnitude() - 1)
    }
}

impl fmt::Debug for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Decimal({})", self.to_canonical_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn equal_forms() {
        for s in ["1", "1.0", "1e0", "10e-1", "0.1e1", "1.000E+0", "100e-2"] {
            assert_eq!(d(s), d("1"), "{s}");
            assert_eq!(d(s).to_canonical_string(), "1");
        }
        assert_eq!(d("-0"), d("0"));
        assert_eq!(d("-0.0e5"), Decimal::zero());
        assert!(!d("-0").is_negative());
        assert_eq!(d("-0").to_canonical_string(), "0");
    }

    #[test]
    fn rejects_non_json() {
        for s in [
            "", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "1 ", "NaN", "--1",
        ] {
            assert!(s.parse::<Decimal>().is_err(), "{s}");
        }
    }

    #[test]
    fn ordering() {
        let v = [
            "-1e400",
            "-100",
            "-1.5",
            "-1",
            "-0.001",
            "0",
            "1e-400",
            "0.001",
            "0.5",
            "1",
            "1.5",
            "2",
            "10",
            "99.95",
            "100",
            "1e308",
            "1e1000000000",
        ];
        for (i, a) in v.iter().enumerate() {
            for (j, b) in v.iter().enumerate() {
                assert_eq!(d(a).cmp(&d(b)), i.cmp(&j), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn huge_exponent_is_cheap() {
        let big = d("1e1000000000");
        assert_eq!(big.to_canonical_string(), "1e1000000000");
        assert!(big.to_plain_string().is_none());
        assert!(big.is_integer());
        assert!(big.is_multiple_of(&d("0.5")).unwrap());
        assert!(big.is_multiple_of(&d("2")).unwrap());
        assert!(!big.is_multiple_of(&d("3")).unwrap());
        assert!(!d("1e-1000000000").is_multiple_of(&d("1")).unwrap());
        assert!(matches!(
            "1e99999999999999999999".parse::<Decimal>(),
            Err(DecimalError::ExponentOutOfRange { .. })
        ));
    }

    #[test]
    fn multiples() {
        let yes = [
            ("0.0075", "0.0001"),
            ("1e308", "0.5"),
            ("4.5e-320", "1.5e-320"),
            ("10", "2"),
            ("3", "1.5"),
            ("-7.5", "2.5"),
            ("0", "0.3"),
            ("19.99", "0.01"),
            ("123456789012345678901234567890", "3"),
            ("8", "0.125"),
        ];
        let no = [
            ("0.00751", "0.0001"),
            ("5", "50"),
            ("1", "3"),
            ("4.5e-320", "2e-320"),
            ("0.3", "0.2"),
            ("123456789012345678901234567891", "3"),
            ("1", "0.3"),
        ];
        for (a, b) in yes {
            assert!(d(a).is_multiple_of(&d(b)).unwrap(), "{a} % {b}");
        }
        for (a, b) in no {
            assert!(!d(a).is_multiple_of(&d(b)).unwrap(), "{a} % {b}");
        }
        assert_eq!(
            d("1").is_multiple_of(&d("0")),
            Err(DecimalError::ZeroDivisor)
        );
    }

    #[test]
    fn plain_and_display() {
        assert_eq!(d("1e3").to_plain_string().unwrap(), "1000");
        assert_eq!(d("15e-1").to_plain_string().unwrap(), "1.5");
        assert_eq!(d("-5e-3").to_plain_string().unwrap(), "-0.005");
        assert_eq!(d("0.0").to_plain_string().unwrap(), "0");
        assert_eq!(d("123.456").to_plain_string().unwrap(), "123.456");
        assert_eq!(d("1.5e308").to_string(), "1.5e308");
        assert_eq!(d("-25e-400").to_string(), "-2.5e-399");
        assert_eq!(d("99.95").to_string(), "99.95");
    }

    #[test]
    fn from_f64_and_number() {
        assert_eq!(Decimal::from_f64(0.1).unwrap(), d("0.1"));
        assert_eq!(Decimal::from_f64(1e308).unwrap(), d("1e308"));
        assert_eq!(Decimal::from_f64(-0.0).unwrap(), Decimal::zero());
        assert_eq!(Decimal::from_f64(5e-324).unwrap(), d("5e-324"));
        assert!(Decimal::from_f64(f64::NAN).is_err());
        let v: serde_json::Value = serde_json::from_str("[1.0, 18446744073709551615, -3]").unwrap();
        let n: Vec<Decimal> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|x| Decimal::from_json_number(x.as_number().unwrap()).unwrap())
            .collect();
        assert_eq!(n, vec![d("1"), d("18446744073709551615"), d("-3")]);
    }

    #[test]
    fn magnitude_and_parts() {
        assert_eq!(d("123.4").magnitude(), 3);
        assert_eq!(d("0.05").magnitude(), -1);
        assert_eq!(d("0.05").plain_parts(100), Some(("0".into(), "05".into())));
        assert_eq!(
            d("120").plain_parts(100),
            Some(("120".into(), String::new()))
        );
        assert_eq!(d("1e5").plain_parts(5), None);
    }
}
