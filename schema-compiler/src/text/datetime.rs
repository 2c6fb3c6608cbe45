//! RFC 3339 `full-time` and `date-time` as DFAs built directly.
//!
//! Their regexes (in `formats.rs`) spell the leap-second rule out as 1,440 alternatives, one
//! per local minute with the offsets that make it 23:59 in UTC: exact, but determinizing that
//! takes tens of milliseconds on every process's first use. Here the same language is walked
//! state by state with [`Dfa::from_fn`]: the local minute is carried until the second says
//! whether it matters, and after a leap second the one offset that fits is expected digit by
//! digit. The regexes stay the definition: a test checks that both give the same language.

use crate::dfa::{DEAD, Dfa, DfaError, DfaLimits, cached_regex};

/// Where a walk over `full-time` (or `full-date "T" full-time`) stands.
#[derive(Clone, PartialEq, Eq, Hash)]
enum At {
    /// In the date, at this state of the `full-date` DFA.
    Date(u32),
    /// The hour's first digit is next.
    Hour,
    /// The hour's second digit is next, after this first one.
    Hour2(u8),
    /// `:` after the hour.
    HourColon(u16),
    /// The minute's first digit, after the hour.
    Minute(u16),
    /// The minute's second digit, after the hour and the minute's first digit.
    Minute2(u16, u8),
    /// `:` after the minute, with the local minute of the day.
    MinuteColon(u16),
    /// The second's first digit, with the local minute.
    Second(u16),
    /// The second's second digit: `Some(local minute)` after a `6` (a leap second).
    Second2(Option<u16>),
    /// After the second: a fraction, or the offset.
    Seconds(Option<u16>),
    /// After `.`: a fraction digit is needed.
    Fraction(Option<u16>),
    /// After a fraction digit: more, or the offset.
    FractionDigits(Option<u16>),
    /// In a numeric offset that may be any `hh:mm`: how many of its characters are read, and
    /// the hour's first digit once read.
    AnyOffset(u8, u8),
    /// In the one numeric offset a leap second allows: the characters still expected (the
    /// first `n` of the array), so that offsets that end alike share their last states.
    Offset([u8; 5], u8),
    /// The time is complete.
    End,
}

/// The characters a time is written with (`T` and `t` join a date and a time).
const ALPHABET: &[u8] = b"0123456789:.+-ZzTt";

/// The offset, as `hh:mm` of its absolute value, that makes a leap second at local minute
/// `local` fall on 23:59 UTC, for `+` (`plus`) or `-` offsets; `-00:00` is allowed too.
fn leap_offset(local: u16, plus: bool) -> [u8; 5] {
    // UTC = local - offset must be 23:59, so offset = local + 1 (mod 1440).
    let east = (local + 1) % 1440;
    let minutes = if plus || east == 0 { east } else { 1440 - east };
    let text = format!("{:02}:{:02}", minutes / 60, minutes % 60);
    text.as_bytes().try_into().expect("five characters")
}

/// The step of a `full-time` walk from `at` over `b` (the date part excluded).
fn time_step(at: &At, b: u8) -> Option<At> {
    let digit = b.is_ascii_digit().then(|| b - b'0');
    Some(match (at, b) {
        (At::Hour, b'0'..=b'2') => At::Hour2(digit?),
        (At::Hour2(t), _) if digit.is_some_and(|d| *t < 2 || d <= 3) => {
            At::HourColon(u16::from(t * 10 + digit?))
        }
        (At::HourColon(h), b':') => At::Minute(*h),
        (At::Minute(h), b'0'..=b'5') => At::Minute2(*h, digit?),
        (At::Minute2(h, t), b'0'..=b'9') => At::MinuteColon(h * 60 + u16::from(t * 10 + digit?)),
        (At::MinuteColon(local), b':') => At::Second(*local),
        (At::Second(_), b'0'..=b'5') => At::Second2(None),
        (At::Second(local), b'6') => At::Second2(Some(*local)),
        (At::Second2(None), b'0'..=b'9') => At::Seconds(None),
        (At::Second2(Some(local)), b'0') => At::Seconds(Some(*local)),
        (At::Seconds(leap), b'.') => At::Fraction(*leap),
        (At::Fraction(leap) | At::FractionDigits(leap), b'0'..=b'9') => At::FractionDigits(*leap),
        (At::Seconds(leap) | At::FractionDigits(leap), b'Z' | b'z') => match leap {
            None | Some(1439) => At::End,
            Some(_) => return None,
        },
        (At::Seconds(None) | At::FractionDigits(None), b'+' | b'-') => At::AnyOffset(0, 0),
        (At::Seconds(Some(local)) | At::FractionDigits(Some(local)), b'+' | b'-') => {
            At::Offset(leap_offset(*local, b == b'+'), 5)
        }
        (At::AnyOffset(0, _), b'0'..=b'2') => At::AnyOffset(1, digit?),
        (At::AnyOffset(1, t), _) if digit.is_some_and(|d| *t < 2 || d <= 3) => At::AnyOffset(2, 0),
        (At::AnyOffset(2, _), b':') => At::AnyOffset(3, 0),
        (At::AnyOffset(3, _), b'0'..=b'5') => At::AnyOffset(4, 0),
        (At::AnyOffset(4, _), b'0'..=b'9') => At::End,
        (At::Offset(rest, n), _) if rest[0] == b => {
            if *n == 1 {
                At::End
            } else {
                let mut left = [0; 5];
                left[..usize::from(n - 1)].copy_from_slice(&rest[1..usize::from(*n)]);
                At::Offset(left, n - 1)
            }
        }
        _ => return None,
    })
}

/// `full-time` (RFC 3339 §5.6) with exact leap seconds: the language of
/// `Format::Time`'s regex.
pub(crate) fn full_time(limits: DfaLimits) -> Result<Dfa, DfaError> {
    Dfa::from_fn(At::Hour, ALPHABET, time_step, |at| *at == At::End, limits)
}

/// `full-date ("T" / "t") full-time`: the language of `Format::DateTime`'s regex, the date
/// part read through the DFA of `date` (the regex `full_date`).
pub(crate) fn date_time(full_date: &str, limits: DfaLimits) -> Result<Dfa, DfaError> {
    let date = cached_regex(full_date, limits)?;
    let step = |at: &At, b: u8| match at {
        At::Date(s) if matches!(b, b'T' | b't') => date.is_final(*s).then_some(At::Hour),
        At::Date(s) => {
            let next = date.next(*s, b);
            (next != DEAD).then_some(At::Date(next))
        }
        _ => time_step(at, b),
    };
    Dfa::from_fn(
        At::Date(date.start()),
        ALPHABET,
        step,
        |at| *at == At::End,
        limits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::formats::Format;

    /// The direct constructions accept exactly the regexes' languages: the differences both
    /// ways are empty.
    #[test]
    fn the_direct_dfas_are_the_regexes_languages() {
        let limits = DfaLimits::default();
        for format in [Format::Time, Format::DateTime] {
            let language = format.language();
            let direct = (language.direct.expect("built directly"))(limits).unwrap();
            let from_regex = Dfa::from_regex(&language.regex, limits).unwrap();
            let name = format.name();
            assert!(
                direct.difference(&from_regex, limits).unwrap().is_empty(),
                "{name}: the direct DFA accepts more"
            );
            assert!(
                from_regex.difference(&direct, limits).unwrap().is_empty(),
                "{name}: the direct DFA accepts less"
            );
            assert_eq!(
                direct.num_states(),
                from_regex.num_states(),
                "{name}: both minimal"
            );
        }
    }

    #[test]
    fn leap_seconds_fall_on_23_59_utc() {
        let time = full_time(DfaLimits::default()).unwrap();
        for ok in [
            "23:59:60Z",
            "23:59:60.5z",
            "23:59:60-00:00",
            "23:59:60+00:00",
            "00:59:60+01:00",
            "12:29:60-11:30",
            "00:00:60+00:01",
            "08:30:00.25+05:30",
        ] {
            assert!(time.accepts(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "23:59:60+00:01",
            "00:00:60Z",
            "12:00:60+12:00",
            "23:59:61Z",
            "24:00:00Z",
            "12:00:00.Z",
            "12:00:00.5.5Z",
            "12:00:00+24:00",
            "12:00:00",
        ] {
            assert!(!time.accepts(bad.as_bytes()), "{bad}");
        }
        let date_time =
            (Format::DateTime.language().direct.unwrap())(DfaLimits::default()).unwrap();
        assert!(date_time.accepts(b"2024-02-29T23:59:60Z"));
        assert!(date_time.accepts(b"2000-02-29t12:00:00+01:00"));
        assert!(!date_time.accepts(b"1900-02-29T12:00:00Z"));
        assert!(!date_time.accepts(b"2024-02-29 12:00:00Z"));
    }
}
