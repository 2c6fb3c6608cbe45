//! Regular languages of JSON number texts, optionally restricted to a range of values.
//!
//! [`number_language`] turns a [`NumberSpec`] into a `regex-syntax` regex that matches the
//! whole text of exactly the accepted JSON numbers. Without bounds that is the JSON number
//! grammar `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, cut down by the digit limits.
//! With bounds it is the set of plain-notation texts (no exponent) whose *value* lies in the
//! range: `1.50` and `1.5` are both in `[1.5, 2]`, `-0` and `-0.0` are zero, leading zeros
//! never appear. Bounds are exact [`Decimal`]s, so `> 0.1` means exactly that and not
//! `> 0.1000000000000000055…`.
//!
//! # How the language is built
//!
//! A text is split into sign, integer digits `I` and fraction digits `F`; its magnitude is
//! `I + 0.F`. For a magnitude interval `[a, b]` the texts are: `I = int(a)` with `0.F` at
//! least `frac(a)`, or `int(a) < I < int(b)` with any fraction, or `I = int(b)` with `0.F` at
//! most `frac(b)`. Integer ranges are split by length and compared digit by digit, nesting
//! to the left so that the digits after the first difference are shared: the DFA grows
//! linearly with the bound's length and the regex text as `n^1.5` (a 309-digit bound such as
//! `1e308` gives about 1 kB of regex and a 200 kB dense DFA; 400 significant digits give
//! 25 kB and 240 kB). Fraction comparisons walk the bound's digits. Negative numbers are the
//! mirrored interval behind a `-`.
//!
//! Digit limits keep the language finite where generation must end. They also bound the
//! work: a bound beyond `10^max_int_digits`, or with more fraction digits than
//! `max_frac_digits`, is clipped exactly (rounded to the grid of representable values) before
//! any digit is written out. A bound whose digits still exceed [`MAX_BOUND_DIGITS`] is
//! rejected with [`NumberError::BoundTooLarge`].

use super::decimal::Decimal;
use super::re::{Re, chain};

/// The most digits (integer plus fraction) a bound may need after clipping to the digit
/// limits. `1e308` needs 309, the smallest positive `f64` (`5e-324`) needs 325, so every
/// bound that comes from an `f64` fits.
pub const MAX_BOUND_DIGITS: usize = 400;

/// Errors from [`number_language`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NumberError {
    /// An exponent part was allowed together with bounds; ranges are only built over plain
    /// notation.
    #[error("an exponent cannot be allowed when the value is bounded")]
    ExponentWithBounds,
    /// A digit limit of zero where at least one digit is needed.
    #[error("{field} must be at least 1")]
    ZeroDigitLimit {
        /// The offending field of [`NumberSpec`].
        field: &'static str,
    },
    /// A bound needs more digits than [`MAX_BOUND_DIGITS`] after clipping to the digit
    /// limits.
    #[error("the bound {bound} needs more than {limit} digits in plain notation")]
    BoundTooLarge {
        /// The bound, printed.
        bound: String,
        /// The limit, [`MAX_BOUND_DIGITS`].
        limit: usize,
    },
}

/// One end of a range of values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The limit.
    pub value: Decimal,
    /// Whether the limit itself is in the range (`minimum`) or not (`exclusiveMinimum`).
    pub inclusive: bool,
}

impl Bound {
    /// An inclusive bound.
    pub fn inclusive(value: Decimal) -> Bound {
        Bound {
            value,
            inclusive: true,
        }
    }

    /// An exclusive bound.
    pub fn exclusive(value: Decimal) -> Bound {
        Bound {
            value,
            inclusive: false,
        }
    }
}

/// What number texts to accept. `Default` is every JSON number, unbounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumberSpec {
    /// Only plain integer texts (`-?(0|[1-9][0-9]*)`): no fraction and no exponent, whatever
    /// `exponent` and `max_frac_digits` say.
    pub integer: bool,
    /// Lower bound of the value.
    pub lower: Option<Bound>,
    /// Upper bound of the value.
    pub upper: Option<Bound>,
    /// At most this many digits before the decimal point (at least 1); `None` is unbounded.
    pub max_int_digits: Option<u32>,
    /// At most this many digits after the decimal point; `Some(0)` forbids a fraction;
    /// `None` is unbounded.
    pub max_frac_digits: Option<u32>,
    /// Allow an exponent part (`e`, `E`, optional sign, digits). Only without bounds.
    pub exponent: bool,
    /// At most this many exponent digits (at least 1); `None` is unbounded.
    pub max_exp_digits: Option<u32>,
}

/// The full-match regex of the number texts described by `spec`.
///
/// An empty range gives a regex that matches nothing (`[a&&b]`).
///
/// ```
/// use schema_compiler::text::decimal::Decimal;
/// use schema_compiler::text::numeric::{Bound, NumberSpec, number_language};
///
/// let spec = NumberSpec {
///     lower: Some(Bound::exclusive("0.5".parse::<Decimal>().unwrap())),
///     upper: Some(Bound::inclusive("99.95".parse::<Decimal>().unwrap())),
///     ..NumberSpec::default()
/// };
/// let re = regex::Regex::new(&format!("^(?:{})$", number_language(&spec).unwrap())).unwrap();
/// assert!(re.is_match("0.5000001") && re.is_match("99.950") && re.is_match("7"));
/// assert!(!re.is_match("0.5") && !re.is_match("99.951") && !re.is_match("007"));
/// ```
pub fn number_language(spec: &NumberSpec) -> Result<String, NumberError> {
    Ok(number_re(spec)?.to_regex())
}

/// The full-match regex of the canonical plain spellings of numbers: no exponent, no sign on
/// zero, no trailing zero in a fraction (`1`, `-0.25`, `0`; not `1.0`, `-0`, `1e0`), with at
/// most `max_int_digits` digits before the point and `max_frac_digits` after it (`None`:
/// unbounded). Each value within the limits has exactly one spelling here.
///
/// ```
/// use schema_compiler::text::numeric::canonical_number_language;
///
/// let re = canonical_number_language(Some(3), Some(2));
/// let re = regex::Regex::new(&format!("^(?:{re})$")).unwrap();
/// for yes in ["0", "7", "-7", "999", "0.5", "-0.05", "12.25"] {
///     assert!(re.is_match(yes), "{yes}");
/// }
/// for no in ["-0", "1.0", "0.50", "1e0", "1000", "0.125", "01", ".5", "-0.0"] {
///     assert!(!re.is_match(no), "{no}");
/// }
/// ```
pub fn canonical_number_language(
    max_int_digits: Option<u32>,
    max_frac_digits: Option<u32>,
) -> String {
    let upto = |n: Option<u32>| match n {
        Some(n) => format!("{{0,{}}}", n.saturating_sub(1)),
        None => "*".to_string(),
    };
    let int = format!("[1-9][0-9]{}", upto(max_int_digits));
    let mut re = format!("0|-?{int}");
    if max_frac_digits != Some(0) {
        re.push_str(&format!(
            "|-?(?:0|{int})\\.[0-9]{}[1-9]",
            upto(max_frac_digits)
        ));
    }
    re
}

pub(crate) fn number_re(spec: &NumberSpec) -> Result<Re, NumberError> {
    if spec.max_int_digits == Some(0) {
        return Err(NumberError::ZeroDigitLimit {
            field: "max_int_digits",
        });
    }
    if spec.max_exp_digits == Some(0) {
        return Err(NumberError::ZeroDigitLimit {
            field: "max_exp_digits",
        });
    }
    let limits = Limits {
        int: spec.max_int_digits,
        frac: if spec.integer {
            Some(0)
        } else {
            spec.max_frac_digits
        },
    };
    let bounded = spec.lower.is_some() || spec.upper.is_some();
    if !bounded {
        let zero = Bound::inclusive(Decimal::zero());
        let body = unsigned(&zero, None, limits)?;
        let exp = if spec.exponent && !spec.integer {
            Re::opt(Re::concat([
                Re::Alt(vec![Re::lit("e"), Re::lit("E")]),
                Re::opt(Re::Alt(vec![Re::lit("+"), Re::lit("-")])),
                Re::any_digits(1, spec.max_exp_digits),
            ]))
        } else {
            Re::Empty
        };
        return Ok(Re::concat([Re::opt(Re::lit("-")), body, exp]));
    }
    if spec.exponent && !spec.integer {
        return Err(NumberError::ExponentWithBounds);
    }
    let lo = spec.lower.as_ref();
    let hi = spec.upper.as_ref();
    if let (Some(l), Some(h)) = (lo, hi)
        && (h.value < l.value || (h.value == l.value && !(l.inclusive && h.inclusive)))
    {
        return Ok(Re::Fail);
    }
    let zero = Decimal::zero();
    // Non-negative texts: magnitude in [max(lo, 0), hi].
    let positive = match hi {
        Some(h) if h.value < zero || (h.value == zero && !h.inclusive) => Re::Fail,
        _ => {
            let a = match lo {
                Some(l) if l.value >= zero => l.clone(),
                _ => Bound::inclusive(zero.clone()),
            };
            unsigned(&a, hi, limits)?
        }
    };
    // Texts `-T`: magnitude of T in [max(-hi, 0), -lo].
    let negative = match lo {
        Some(l) if l.value > zero || (l.value == zero && !l.inclusive) => Re::Fail,
        _ => {
            let a = match hi {
                Some(h) if h.value <= zero => Bound {
                    value: h.value.abs(),
                    inclusive: h.inclusive,
                },
                _ => Bound::inclusive(zero.clone()),
            };
            let b = lo.map(|l| Bound {
                value: l.value.abs(),
                inclusive: l.inclusive,
            });
            Re::concat([Re::lit("-"), unsigned(&a, b.as_ref(), limits)?])
        }
    };
    Ok(Re::alt([positive, negative]))
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    int: Option<u32>,
    frac: Option<u32>,
}

/// A non-negative bound as plain digits after clipping.
struct Plain {
    int: String,
    frac: String,
    inclusive: bool,
}

/// Clips a non-negative bound to the fraction grid and writes it out. `lower` says which end
/// it is: a lower bound that loses digits becomes exclusive, an upper one inclusive.
fn plain_bound(b: &Bound, lower: bool, limits: Limits) -> Result<Plain, NumberError> {
    let mut value = b.value.abs();
    let mut inclusive = b.inclusive;
    if let Some(m) = limits.frac {
        let t = value.truncate_frac(m);
        if t != value {
            value = t;
            inclusive = !lower;
        }
    }
    let (int, frac) =
        value
            .plain_parts(MAX_BOUND_DIGITS)
            .ok_or_else(|| NumberError::BoundTooLarge {
                bound: b.value.to_string(),
                limit: MAX_BOUND_DIGITS,
            })?;
    Ok(Plain {
        int,
        frac,
        inclusive,
    })
}

/// Non-negative texts (no sign) whose magnitude lies between `lo` and `hi` (both
/// non-negative; `hi = None` is unbounded).
fn unsigned(lo: &Bound, hi: Option<&Bound>, limits: Limits) -> Result<Re, NumberError> {
    let mut hi = hi;
    if let Some(n) = limits.int {
        // Representable magnitudes are below 10^n.
        if lo.value.magnitude() > i64::from(n) {
            return Ok(Re::Fail);
        }
        if hi.is_some_and(|h| h.value.magnitude() > i64::from(n)) {
            hi = None;
        }
    }
    let a = plain_bound(lo, true, limits)?;
    let b = hi.map(|h| plain_bound(h, false, limits)).transpose()?;
    let free = frac_text(None, None, limits.frac);
    if let Some(b) = &b {
        let cmp = cmp_int(&a.int, &b.int);
        if cmp.is_gt() {
            return Ok(Re::Fail);
        }
        if cmp.is_eq() {
            return Ok(Re::concat([
                Re::lit(a.int.clone()),
                frac_text(
                    Some((&a.frac, a.inclusive)),
                    Some((&b.frac, b.inclusive)),
                    limits.frac,
                ),
            ]));
        }
    }
    let mut alts = Vec::new();
    // Integers strictly between int(a) and int(b), or from int(a) on when frac(a) is no
    // constraint.
    let mid_lo = if a.frac.is_empty() && a.inclusive {
        a.int.clone()
    } else {
        alts.push(Re::concat([
            Re::lit(a.int.clone()),
            frac_text(Some((&a.frac, a.inclusive)), None, limits.frac),
        ]));
        increment(&a.int)
    };
    let mid_hi = match &b {
        Some(b) => Some(decrement(&b.int)),
        None => limits.int.map(|n| "9".repeat(n as usize)),
    };
    alts.push(Re::concat([int_range(&mid_lo, mid_hi.as_deref()), free]));
    if let Some(b) = &b {
        alts.push(Re::concat([
            Re::lit(b.int.clone()),
            frac_text(None, Some((&b.frac, b.inclusive)), limits.frac),
        ]));
    }
    Ok(Re::alt(alts))
}

fn cmp_int(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn increment(s: &str) -> String {
    let mut d: Vec<u8> = s.bytes().collect();
    for i in (0..d.len()).rev() {
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            return String::from_utf8(d).unwrap_or_default();
        }
    }
    let mut out = String::with_capacity(d.len() + 1);
    out.push('1');
    out.extend(d.iter().map(|&c| char::from(c)));
    out
}

/// `s - 1` for `s >= 1`.
fn decrement(s: &str) -> String {
    let mut d: Vec<u8> = s.bytes().collect();
    for i in (0..d.len()).rev() {
        if d[i] == b'0' {
            d[i] = b'9';
        } else {
            d[i] -= 1;
            break;
        }
    }
    let start = d.iter().position(|&c| c != b'0').unwrap_or(d.len() - 1);
    String::from_utf8(d[start..].to_vec()).unwrap_or_default()
}

/// Canonical integer texts (no leading zeros, `0` allowed) in `[lo, hi]`; `hi = None` is
/// unbounded.
fn int_range(lo: &str, hi: Option<&str>) -> Re {
    if let Some(hi) = hi
        && cmp_int(lo, hi).is_gt()
    {
        return Re::Fail;
    }
    let k = lo.len();
    let top_of = |len: usize| "9".repeat(len);
    let bottom_of = |len: usize| {
        let mut s = String::from("1");
        s.extend(std::iter::repeat_n('0', len - 1));
        s
    };
    match hi {
        Some(hi) if hi.len() == k => same_length_range(lo, hi),
        Some(hi) => {
            let h = hi.len();
            Re::alt([
                same_length_range(lo, &top_of(k)),
                if h - k >= 2 {
                    Re::concat([
                        Re::digits(1, 9),
                        Re::any_digits(k as u32, Some((h - 2) as u32)),
                    ])
                } else {
                    Re::Fail
                },
                same_length_range(&bottom_of(h), hi),
            ])
        }
        None => Re::alt([
            same_length_range(lo, &top_of(k)),
            Re::concat([Re::digits(1, 9), Re::any_digits(k as u32, None)]),
        ]),
    }
}

fn digit(c: u8) -> u8 {
    c - b'0'
}

/// Integer texts of the same length as `lo` and `hi` (`lo <= hi`), between them.
fn same_length_range(lo: &str, hi: &str) -> Re {
    let (l, h) = (lo.as_bytes(), hi.as_bytes());
    let k = l.len();
    let p = l.iter().zip(h).take_while(|(a, b)| a == b).count();
    if p == k {
        return Re::lit(lo);
    }
    let (x, y) = (digit(l[p]), digit(h[p]));
    let rest = (k - p - 1) as u32;
    Re::concat([
        Re::lit(&lo[..p]),
        Re::alt([
            Re::concat([Re::digits(x, x), at_least(&l[p + 1..])]),
            Re::concat([
                Re::digits(x + 1, y.saturating_sub(1)),
                Re::any_digits(rest, Some(rest)),
            ]),
            Re::concat([Re::digits(y, y), at_most(&h[p + 1..])]),
        ]),
    ])
}

/// Digit strings of `s.len()` digits that are `>= s`.
fn at_least(s: &[u8]) -> Re {
    let stop = (0..s.len()).find(|&j| s[j..].iter().all(|&c| c == b'0'));
    let classes: Vec<(u8, u8)> = (0..stop.map_or(s.len(), |j| j + 1))
        .map(|j| {
            if Some(j) == stop {
                (0, 9)
            } else {
                (digit(s[j]) + 1, 9)
            }
        })
        .collect();
    fixed_length(s, &classes, stop.is_none())
}

/// Digit strings of `s.len()` digits that are `<= s`.
fn at_most(s: &[u8]) -> Re {
    let stop = (0..s.len()).find(|&j| s[j..].iter().all(|&c| c == b'9'));
    let classes: Vec<(u8, u8)> = (0..stop.map_or(s.len(), |j| j + 1))
        .map(|j| {
            if Some(j) == stop {
                (0, 9)
            } else if s[j] == b'0' {
                (1, 0)
            } else {
                (0, digit(s[j]) - 1)
            }
        })
        .collect();
    fixed_length(s, &classes, stop.is_none())
}

/// Strings of `s.len()` digits that follow `s` up to some position `j < classes.len()`, have
/// a digit in `classes[j]` there, and any digits after; plus `s` itself when `with_s`.
///
/// The obvious form `∪ s[..j] [class_j] [0-9]{n-j-1}` gives every `j` its own copy of the
/// trailing digits, and the DFA then has a state per (divergence point, digits left): quadratic
/// in the length. Nesting to the left instead, `D_{j+1} = D_j [0-9] | s[..j] [class_j]`,
/// shares the trailing digits, so the DFA stays linear. The literal prefixes `s[..j]` are
/// repeated, so levels are grouped in blocks of about `√n`: the text is `O(n^1.5)` and the
/// nesting `O(√n)`.
fn fixed_length(s: &[u8], classes: &[(u8, u8)], with_s: bool) -> Re {
    let n = s.len();
    let end = classes.len();
    let block = (end as f64).sqrt().ceil().max(1.0) as usize;
    let text = |a: usize, b: usize| Re::lit(String::from_utf8_lossy(&s[a..b]).into_owned());
    let mut global = Re::Fail;
    let mut a = 0;
    while a < end {
        let c = (a + block).min(end);
        let mut local = Re::Fail;
        for (j, &(lo, hi)) in classes.iter().enumerate().take(c).skip(a) {
            local = Re::alt([
                Re::concat([local, Re::digits(0, 9)]),
                Re::concat([text(a, j), Re::digits(lo, hi)]),
            ]);
        }
        let width = (c - a) as u32;
        global = Re::alt([
            Re::concat([global, Re::any_digits(width, Some(width))]),
            Re::concat([text(0, a), local]),
        ]);
        a = c;
    }
    let rest = (n - end) as u32;
    Re::alt([
        Re::concat([global, Re::any_digits(rest, Some(rest))]),
        if with_s { text(0, n) } else { Re::Fail },
    ])
}

/// How the fraction read so far compares with a lower bound's fraction `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoState {
    /// Already greater: anything goes.
    Free,
    /// Equal to `c[..j]` so far.
    Tight(usize),
    /// Equal to all of an exclusive `c`: a non-zero digit must follow.
    NeedNonzero,
}

/// How the fraction read so far compares with an upper bound's fraction `d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HiState {
    /// Already smaller: anything goes.
    Free,
    /// Equal to `d[..j]` so far.
    Tight(usize),
    /// Equal to all of an inclusive `d`: only zeros may follow.
    MustBeZero,
}

/// Fraction comparison context: the bounds' fraction digits (no trailing zeros) and
/// inclusiveness, and the digit limit.
struct FracCtx<'a> {
    c: &'a [u8],
    c_incl: bool,
    d: &'a [u8],
    d_incl: bool,
    max: Option<u32>,
}

impl FracCtx<'_> {
    /// Settles a tight state whose bound digits are used up; `None` when nothing can follow.
    fn normalize(&self, lo: LoState, hi: HiState) -> Option<(LoState, HiState)> {
        let lo = match lo {
            LoState::Tight(j) if j >= self.c.len() => {
                if self.c_incl {
                    LoState::Free
                } else {
                    LoState::NeedNonzero
                }
            }
            s => s,
        };
        let hi = match hi {
            HiState::Tight(j) if j >= self.d.len() => {
                if self.d_incl {
                    HiState::MustBeZero
                } else {
                    return None;
                }
            }
            s => s,
        };
        if lo == LoState::NeedNonzero && hi == HiState::MustBeZero {
            return None;
        }
        Some((lo, hi))
    }

    /// Whether the fraction may end here (the rest is zero). A tight lower bound still has a
    /// non-zero digit ahead (bounds carry no trailing zeros), so ending would fall below it;
    /// every upper-bound state allows zero.
    fn may_end(lo: LoState, _hi: HiState) -> bool {
        lo == LoState::Free
    }

    fn step_lo(&self, lo: LoState, g: u8) -> Option<LoState> {
        match lo {
            LoState::Free => Some(LoState::Free),
            LoState::NeedNonzero => Some(if g > 0 {
                LoState::Free
            } else {
                LoState::NeedNonzero
            }),
            LoState::Tight(j) => {
                let c = digit(self.c[j]);
                match g.cmp(&c) {
                    std::cmp::Ordering::Greater => Some(LoState::Free),
                    std::cmp::Ordering::Equal => Some(LoState::Tight(j + 1)),
                    std::cmp::Ordering::Less => None,
                }
            }
        }
    }

    fn step_hi(&self, hi: HiState, g: u8) -> Option<HiState> {
        match hi {
            HiState::Free => Some(HiState::Free),
            HiState::MustBeZero => (g == 0).then_some(HiState::MustBeZero),
            HiState::Tight(j) => {
                let d = digit(self.d[j]);
                match g.cmp(&d) {
                    std::cmp::Ordering::Less => Some(HiState::Free),
                    std::cmp::Ordering::Equal => Some(HiState::Tight(j + 1)),
                    std::cmp::Ordering::Greater => None,
                }
            }
        }
    }

    /// Digits still allowed when the next digit is the `i`-th (1-based); `None` unbounded.
    fn room(&self, i: u32) -> Option<u32> {
        self.max.map(|m| (m + 1).saturating_sub(i))
    }

    /// Closed forms for states without a tight bound; `None` for tight states.
    /// `nonempty` excludes the empty suffix.
    fn closure(&self, lo: LoState, hi: HiState, i: u32, nonempty: bool) -> Option<Re> {
        let room = self.room(i);
        let min = u32::from(nonempty);
        match (lo, hi) {
            (LoState::Free, HiState::Free) => Some(Re::any_digits(min, room)),
            (LoState::Free, HiState::MustBeZero) => Some(Re::repeat(Re::lit("0"), min, room)),
            (LoState::NeedNonzero, HiState::Free) => Some(match room {
                None => Re::concat([
                    Re::repeat(Re::lit("0"), 0, None),
                    Re::digits(1, 9),
                    Re::any_digits(0, None),
                ]),
                Some(r) => Re::alt((0..r).map(|z| {
                    Re::concat([
                        Re::repeat(Re::lit("0"), z, Some(z)),
                        Re::digits(1, 9),
                        Re::any_digits(0, Some(r - 1 - z)),
                    ])
                })),
            }),
            _ => None,
        }
    }

    /// Digit strings that may follow at depth `i` (1-based) in the given state.
    fn suffix(&self, mut lo: LoState, mut hi: HiState, mut i: u32, nonempty: bool) -> Re {
        let mut levels: Vec<(Re, char)> = Vec::new();
        let mut nonempty = nonempty;
        let terminal = loop {
            let Some((l, h)) = self.normalize(lo, hi) else {
                break Re::Fail;
            };
            (lo, hi) = (l, h);
            if let Some(re) = self.closure(lo, hi, i, nonempty) {
                break re;
            }
            let end_ok = !nonempty && Self::may_end(lo, hi);
            if self.room(i) == Some(0) {
                break if end_ok { Re::Empty } else { Re::Fail };
            }
            // Group the ten digits by the state they lead to.
            let mut groups: Vec<(u8, u8, LoState, HiState)> = Vec::new();
            for g in 0..=9u8 {
                let (Some(nl), Some(nh)) = (self.step_lo(lo, g), self.step_hi(hi, g)) else {
                    continue;
                };
                match groups.last_mut() {
                    Some((_, end, gl, gh)) if *gl == nl && *gh == nh && *end + 1 == g => *end = g,
                    _ => groups.push((g, g, nl, nh)),
                }
            }
            let mut opts = vec![if end_ok { Re::Empty } else { Re::Fail }];
            let mut next = None;
            for (a, b, nl, nh) in groups {
                let tight = matches!(nl, LoState::Tight(_)) || matches!(nh, HiState::Tight(_));
                if tight && a == b && next.is_none() {
                    next = Some((a, nl, nh));
                } else {
                    opts.push(Re::concat([
                        Re::digits(a, b),
                        self.suffix(nl, nh, i + 1, false),
                    ]));
                }
            }
            match next {
                None => break Re::alt(opts),
                Some((g, nl, nh)) => {
                    levels.push((Re::alt(opts), char::from(b'0' + g)));
                    (lo, hi) = (nl, nh);
                    i += 1;
                    nonempty = false;
                }
            }
        };
        chain(levels, terminal)
    }
}

/// The optional fraction text (`\.digits` or nothing) whose value `0.F` is at least
/// `lo = (c, inclusive)` and at most `hi = (d, inclusive)`, where `c` and `d` are fraction
/// digits without trailing zeros (empty means 0). No fraction text means `F = 0`.
fn frac_text(lo: Option<(&str, bool)>, hi: Option<(&str, bool)>, max: Option<u32>) -> Re {
    let ctx = FracCtx {
        c: lo.map_or(&[][..], |(c, _)| c.as_bytes()),
        c_incl: lo.is_none_or(|(_, i)| i),
        d: hi.map_or(&[][..], |(d, _)| d.as_bytes()),
        d_incl: hi.is_none_or(|(_, i)| i),
        max,
    };
    let lo0 = if lo.is_some() {
        LoState::Tight(0)
    } else {
        LoState::Free
    };
    let hi0 = if hi.is_some() {
        HiState::Tight(0)
    } else {
        HiState::Free
    };
    let Some((l, h)) = ctx.normalize(lo0, hi0) else {
        return Re::Fail;
    };
    let none = if FracCtx::may_end(l, h) {
        Re::Empty
    } else {
        Re::Fail
    };
    let some = if max == Some(0) {
        Re::Fail
    } else {
        Re::concat([Re::lit("."), ctx.suffix(l, h, 1, true)])
    };
    Re::alt([none, some])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn re_of(spec: &NumberSpec) -> regex::Regex {
        let s = number_language(spec).unwrap();
        regex::Regex::new(&format!("^(?:{s})$")).unwrap()
    }

    fn range(lo: Option<(&str, bool)>, hi: Option<(&str, bool)>) -> NumberSpec {
        NumberSpec {
            lower: lo.map(|(v, i)| Bound {
                value: d(v),
                inclusive: i,
            }),
            upper: hi.map(|(v, i)| Bound {
                value: d(v),
                inclusive: i,
            }),
            ..NumberSpec::default()
        }
    }

    fn check(spec: &NumberSpec, yes: &[&str], no: &[&str]) {
        let re = re_of(spec);
        for s in yes {
            assert!(re.is_match(s), "{s} should match {spec:?}: {}", re.as_str());
        }
        for s in no {
            assert!(
                !re.is_match(s),
                "{s} should not match {spec:?}: {}",
                re.as_str()
            );
        }
    }

    #[test]
    fn unbounded_is_json_grammar() {
        let spec = NumberSpec {
            exponent: true,
            ..NumberSpec::default()
        };
        check(
            &spec,
            &[
                "0",
                "-0",
                "1",
                "-12.50",
                "0.0",
                "1e5",
                "1E+05",
                "-0.5e-3",
                "123456789",
            ],
            &[
                "", "01", "-", "1.", ".5", "+1", "1e", "--1", "0x1", "1.5.5", "00",
            ],
        );
        let spec = NumberSpec {
            max_int_digits: Some(3),
            max_frac_digits: Some(2),
            ..NumberSpec::default()
        };
        check(&spec, &["999", "-999.99", "0.5"], &["1000", "1.234", "1e2"]);
        let spec = NumberSpec {
            integer: true,
            exponent: true,
            ..NumberSpec::default()
        };
        check(&spec, &["0", "-0", "42"], &["1.0", "1e2", "-"]);
    }

    #[test]
    fn edge_table() {
        check(
            &range(Some(("0.5", false)), Some(("99.95", true))),
            &[
                "0.51",
                "0.5000001",
                "1",
                "99",
                "99.95",
                "99.950",
                "99.9",
                "50.123",
            ],
            &["0.5", "0.50", "0", "-1", "99.951", "100", "99.96", "0.4999"],
        );
        check(
            &range(Some(("-10", true)), Some(("-2.5", false))),
            &["-10", "-10.0", "-2.6", "-3", "-9.999"],
            &["-2.5", "-2.50", "-2", "0", "-10.01", "-11", "2.6"],
        );
        check(
            &range(Some(("-1", false)), Some(("1", false))),
            &["0", "-0", "-0.0", "0.999", "-0.999", "0.5"],
            &["1", "-1", "-1.0", "1.0", "1.01"],
        );
        check(
            &range(Some(("0", false)), None),
            &["0.1", "1", "0.0001", "123456789.5"],
            &["0", "-0", "0.0", "-0.1", "-1"],
        );
        check(
            &range(None, Some(("0", false))),
            &["-0.1", "-1", "-0.0001"],
            &["0", "-0", "-0.0", "0.1"],
        );
        check(
            &range(Some(("0", true)), Some(("0", true))),
            &["0", "-0", "0.00", "-0.0"],
            &["0.01", "-0.01", "1"],
        );
        check(
            &range(Some(("100", true)), Some(("10000", true))),
            &[
                "100",
                "100.0",
                "999",
                "1000",
                "9999.99",
                "10000",
                "10000.000",
            ],
            &["99.99", "10000.01", "10001", "99"],
        );
        check(
            &range(Some(("1.25", true)), Some(("1.75", false))),
            &["1.25", "1.250", "1.3", "1.7499", "1.5"],
            &["1.2", "1.24999", "1.75", "1.8", "1", "2"],
        );
        check(
            &range(Some(("0.5", false)), Some(("0.5123", true))),
            &["0.51", "0.5001", "0.5123", "0.51230", "0.500000001"],
            &["0.5", "0.50000", "0.5124", "0.52"],
        );
        // Empty ranges.
        check(
            &range(Some(("2", true)), Some(("1", true))),
            &[],
            &["1", "1.5", "2"],
        );
        check(
            &range(Some(("1", false)), Some(("1", true))),
            &[],
            &["1", "1.0"],
        );
    }

    #[test]
    fn integer_with_fractional_bounds() {
        let mut spec = range(Some(("1.5", false)), Some(("10.5", true)));
        spec.integer = true;
        check(&spec, &["2", "10", "5"], &["1", "11", "2.0", "1.6"]);
        let mut spec = range(Some(("-2.5", true)), None);
        spec.integer = true;
        check(&spec, &["-2", "-1", "-0", "0", "1000"], &["-3", "-2.5"]);
    }

    #[test]
    fn digit_limits_clip_bounds() {
        let mut spec = range(Some(("0.12345", true)), Some(("1e1000000000", true)));
        spec.max_int_digits = Some(2);
        spec.max_frac_digits = Some(2);
        check(
            &spec,
            &["0.13", "99.99", "0.2"],
            &["0.12", "100", "0.125", "0.123"],
        );
        let mut spec = range(Some(("1e-1000000000", false)), None);
        spec.max_frac_digits = Some(3);
        check(&spec, &["0.001", "1"], &["0", "0.000", "0.0001"]);
        let spec = range(Some(("1e-1000000000", false)), None);
        assert!(matches!(
            number_language(&spec),
            Err(NumberError::BoundTooLarge { .. })
        ));
        let mut spec = range(Some(("1000", true)), None);
        spec.max_int_digits = Some(3);
        check(&spec, &[], &["1000", "999"]);
    }

    #[test]
    fn exponent_with_bounds_is_an_error() {
        let mut spec = range(Some(("1", true)), None);
        spec.exponent = true;
        assert_eq!(number_language(&spec), Err(NumberError::ExponentWithBounds));
    }

    #[test]
    fn huge_bound_stays_small() {
        let spec = range(
            Some(("-1e308", true)),
            Some(("1.7976931348623157e308", true)),
        );
        let s = number_language(&spec).unwrap();
        assert!(s.len() < 100_000, "{}", s.len());
        let re = regex::Regex::new(&format!("^(?:{s})$")).unwrap();
        let max = d("1.7976931348623157e308").to_plain_string().unwrap();
        assert!(re.is_match(&max));
        assert!(re.is_match(&format!("-1{}", "0".repeat(308))));
        assert!(!re.is_match(&format!("-1{}1", "0".repeat(307))));
        assert!(!re.is_match(&format!("1{}", "0".repeat(309))));
        assert!(!re.is_match(&increment(&max)));
        assert!(re.is_match(&decrement(&max)));
    }

    #[test]
    fn int_helpers() {
        assert_eq!(increment("199"), "200");
        assert_eq!(increment("999"), "1000");
        assert_eq!(decrement("1000"), "999");
        assert_eq!(decrement("1"), "0");
        assert_eq!(decrement("10"), "9");
    }
}
