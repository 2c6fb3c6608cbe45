//! The JSON Schema `format` vocabulary as exact full-match languages.
//!
//! Each supported [`Format`] maps to a regex (in `regex-syntax` syntax) over the decoded
//! string that follows the grammar the JSON Schema specification references:
//!
//! | format | grammar |
//! |---|---|
//! | `date-time`, `date`, `time` | RFC 3339 §5.6, with days per month, leap years and leap seconds |
//! | `duration` | RFC 3339 Appendix A |
//! | `email` | RFC 5321 §4.1.2 `Mailbox` |
//! | `hostname` | RFC 1123 §2.1 labels, at most 253 characters (see below) |
//! | `ipv4` | RFC 2673 §3.2 dotted quad, no leading zeros |
//! | `ipv6` | RFC 4291 §2.2 (RFC 3986 `IPv6address`), no zone id |
//! | `uuid` | RFC 4122 hyphenated form, any version and variant, either case |
//! | `uri`, `uri-reference` | RFC 3986 `URI`, `URI-reference` |
//! | `iri`, `iri-reference` | RFC 3987 `IRI`, `IRI-reference` |
//! | `json-pointer` | RFC 6901 |
//! | `relative-json-pointer` | draft-bhutton-relative-json-pointer-00 (the 2020-12 reference) |
//! | `uri-template` | RFC 6570 §2, with erratum 6937 (`'` in literals) |
//!
//! The regexes define the languages. For `date-time` and `time`, whose leap-second rule is a
//! 1,440-way alternation, [`FormatLanguage::direct`] builds the same DFA state by state
//! (`datetime.rs`), several times faster than determinizing the regex; a test checks that the
//! two languages are equal.
//!
//! ABNF string literals are case-insensitive (RFC 5234 §2.3), so `t`/`z` in date-times, the
//! duration designators (`p1d`), `IPv6:` in e-mail address literals and `v` in IPvFuture may
//! be lower or upper case.
//!
//! # What a regex cannot say
//!
//! - `hostname`: the total length limit (253) is returned as
//!   [`FormatLanguage::max_length`] for the caller to enforce alongside `maxLength`; a regex
//!   for the intersection would be enormous. Labels with `--` in the third and fourth
//!   positions (IDNA's reserved labels, including `xn--` A-labels) are rejected: whether an
//!   A-label is valid depends on Punycode decoding and the IDNA2008 rules, which are not a
//!   practical regular language, and rejecting them keeps every accepted name valid.
//! - `email`: the length limits of RFC 5321 §4.5.3.1 (64-octet local part, 255-octet domain)
//!   are not enforced; the general address literal form is left out because its only
//!   registered tag, `IPv6`, has its own rule.
//!
//! `idn-email`, `idn-hostname` and `regex` are recognised but not supported
//! ([`FormatLookup::Unsupported`]); other names are [`FormatLookup::Unknown`], which JSON
//! Schema treats as annotations.

use std::sync::OnceLock;

use super::datetime;
use crate::dfa::{Dfa, DfaError, DfaLimits};

/// A supported `format` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// `date-time`: RFC 3339 `date-time`.
    DateTime,
    /// `date`: RFC 3339 `full-date`.
    Date,
    /// `time`: RFC 3339 `full-time`.
    Time,
    /// `duration`: RFC 3339 Appendix A `duration`.
    Duration,
    /// `email`: RFC 5321 `Mailbox`.
    Email,
    /// `hostname`: RFC 1123 host name.
    Hostname,
    /// `ipv4`: dotted-quad IPv4 address.
    Ipv4,
    /// `ipv6`: RFC 4291 IPv6 address.
    Ipv6,
    /// `uuid`: RFC 4122 UUID.
    Uuid,
    /// `uri`: RFC 3986 `URI`.
    Uri,
    /// `uri-reference`: RFC 3986 `URI-reference`.
    UriReference,
    /// `iri`: RFC 3987 `IRI`.
    Iri,
    /// `iri-reference`: RFC 3987 `IRI-reference`.
    IriReference,
    /// `json-pointer`: RFC 6901 JSON Pointer.
    JsonPointer,
    /// `relative-json-pointer`: Relative JSON Pointer.
    RelativeJsonPointer,
    /// `uri-template`: RFC 6570 URI Template.
    UriTemplate,
}

/// What a `format` name is to this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatLookup {
    /// A format with an exact language.
    Supported(Format),
    /// A format the specification defines but that has no language here.
    Unsupported,
    /// A name the specification does not define (an annotation only).
    Unknown,
}

/// How `date-time` and `time` treat leap seconds (second `60`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeapSeconds {
    /// Exactly RFC 3339: `hh:mm:60` is valid when it is 23:59:60 in UTC after applying the
    /// offset. The DFA must remember the local time across the fraction and offset: about
    /// 3 MB dense (1.4 MB minimised).
    #[default]
    Exact,
    /// Only `23:59:60` with `Z` or a zero offset: every accepted text is valid, a leap second
    /// written with another offset is rejected. The DFA stays in the tens of kilobytes.
    UtcOnly,
}

/// Options for [`Format::language_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatOptions {
    /// Leap-second handling in `date-time` and `time`.
    pub leap_seconds: LeapSeconds,
}

impl FormatOptions {
    /// The default options with the given leap-second handling.
    pub fn with_leap_seconds(self, leap_seconds: LeapSeconds) -> FormatOptions {
        FormatOptions { leap_seconds }
    }
}

/// The language of a format: strings that fully match `regex` and, when `max_length` is set,
/// have at most that many characters (Unicode scalar values, the unit of `maxLength`).
#[derive(Debug, Clone)]
pub struct FormatLanguage {
    /// Full-match regex in `regex-syntax` syntax.
    pub regex: String,
    /// An extra length limit the regex does not express.
    pub max_length: Option<u32>,
    /// A faster construction of the regex's DFA, where there is one (`date-time` and `time`
    /// with exact leap seconds).
    pub direct: Option<DirectDfa>,
}

/// Builds the DFA of a format's regex without determinizing the regex.
pub type DirectDfa = fn(DfaLimits) -> Result<Dfa, DfaError>;

/// Languages are equal when their regexes and length limits are (a direct construction builds
/// the regex's DFA).
impl PartialEq for FormatLanguage {
    fn eq(&self, other: &FormatLanguage) -> bool {
        (&self.regex, self.max_length) == (&other.regex, other.max_length)
    }
}

impl Eq for FormatLanguage {}

impl Format {
    /// Every supported format.
    pub const ALL: [Format; 16] = [
        Format::DateTime,
        Format::Date,
        Format::Time,
        Format::Duration,
        Format::Email,
        Format::Hostname,
        Format::Ipv4,
        Format::Ipv6,
        Format::Uuid,
        Format::Uri,
        Format::UriReference,
        Format::Iri,
        Format::IriReference,
        Format::JsonPointer,
        Format::RelativeJsonPointer,
        Format::UriTemplate,
    ];

    /// The `format` keyword value.
    pub fn name(self) -> &'static str {
        match self {
            Format::DateTime => "date-time",
            Format::Date => "date",
            Format::Time => "time",
            Format::Duration => "duration",
            Format::Email => "email",
            Format::Hostname => "hostname",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
            Format::Uuid => "uuid",
            Format::Uri => "uri",
            Format::UriReference => "uri-reference",
            Format::Iri => "iri",
            Format::IriReference => "iri-reference",
            Format::JsonPointer => "json-pointer",
            Format::RelativeJsonPointer => "relative-json-pointer",
            Format::UriTemplate => "uri-template",
        }
    }

    /// The format's language, with default [`FormatOptions`].
    pub fn language(self) -> FormatLanguage {
        self.language_with(&FormatOptions::default())
    }

    /// The format's language.
    pub fn language_with(self, options: &FormatOptions) -> FormatLanguage {
        let leap = options.leap_seconds;
        let regex = match self {
            Format::DateTime => format!("{}[Tt]{}", full_date(), full_time(leap)),
            Format::Date => full_date(),
            Format::Time => full_time(leap),
            Format::Duration => duration(),
            Format::Email => email(),
            Format::Hostname => hostname(),
            Format::Ipv4 => ipv4(),
            Format::Ipv6 => ipv6(),
            Format::Uuid => {
                let h = "[0-9A-Fa-f]";
                format!("{h}{{8}}-{h}{{4}}-{h}{{4}}-{h}{{4}}-{h}{{12}}")
            }
            Format::Uri => uri(false),
            Format::UriReference => format!("(?:{}|{})", uri(false), relative_ref(false)),
            Format::Iri => uri(true),
            Format::IriReference => format!("(?:{}|{})", uri(true), relative_ref(true)),
            Format::JsonPointer => json_pointer(),
            Format::RelativeJsonPointer => format!(
                "(?:0|[1-9][0-9]*)(?:(?:[+\\-](?:0|[1-9][0-9]*))?{}|\\#)",
                json_pointer()
            ),
            Format::UriTemplate => uri_template(),
        };
        let max_length = (self == Format::Hostname).then_some(253);
        let direct: Option<DirectDfa> = match (self, leap) {
            (Format::DateTime, LeapSeconds::Exact) => {
                Some(|limits| datetime::date_time(&full_date(), limits))
            }
            (Format::Time, LeapSeconds::Exact) => Some(datetime::full_time),
            _ => None,
        };
        FormatLanguage {
            regex,
            max_length,
            direct,
        }
    }
}

/// Classifies a `format` keyword value.
pub fn lookup_format(name: &str) -> FormatLookup {
    if let Some(f) = Format::ALL.iter().find(|f| f.name() == name) {
        return FormatLookup::Supported(*f);
    }
    match name {
        "idn-email" | "idn-hostname" | "regex" => FormatLookup::Unsupported,
        _ => FormatLookup::Unknown,
    }
}

/// The language of a supported format, or `None` for unsupported and unknown names (see
/// [`lookup_format`] to tell them apart).
///
/// ```
/// use schema_compiler::text::formats::format_language;
///
/// let lang = format_language("date").unwrap();
/// let re = regex::Regex::new(&format!("^(?:{})$", lang.regex)).unwrap();
/// assert!(re.is_match("2024-02-29") && !re.is_match("2023-02-29"));
/// assert!(format_language("idn-email").is_none());
/// ```
pub fn format_language(name: &str) -> Option<FormatLanguage> {
    // Some regexes are long to write out (`date-time` checks days per month): once per process.
    static LANGUAGES: [OnceLock<FormatLanguage>; Format::ALL.len()] =
        [const { OnceLock::new() }; Format::ALL.len()];
    match lookup_format(name) {
        FormatLookup::Supported(f) => {
            let i = Format::ALL.iter().position(|&g| g == f)?;
            Some(LANGUAGES[i].get_or_init(|| f.language()).clone())
        }
        _ => None,
    }
}

/// A class of the given ASCII characters, each escaped.
fn chars(set: &str) -> String {
    let mut s = String::from("[");
    for c in set.chars() {
        regex_syntax::escape_into(&c.to_string(), &mut s);
    }
    s.push(']');
    s
}

// ---------------------------------------------------------------------------------------------
// RFC 3339

fn full_date() -> String {
    let year = "[0-9]{4}";
    // Leap years: divisible by 4 but not by 100, or divisible by 400.
    let leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
    format!(
        "(?:{year}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])\
         |(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)\
         |02-(?:0[1-9]|1[0-9]|2[0-8]))\
         |{leap}-02-29)"
    )
}

/// `full-time`. Second 60 is a leap second, valid only when the time converted to UTC with
/// the offset is 23:59:60; the rest of the day is 00–59.
fn full_time(leap_seconds: LeapSeconds) -> String {
    let hour = "(?:[01][0-9]|2[0-3])";
    let minute = "[0-5][0-9]";
    let frac = r"(?:\.[0-9]+)?";
    let offset = format!("(?:[Zz]|[+\\-]{hour}:{minute})");
    if leap_seconds == LeapSeconds::UtcOnly {
        return format!(
            "(?:{hour}:{minute}:[0-5][0-9]{frac}{offset}|23:59:60{frac}(?:[Zz]|[+\\-]00:00))"
        );
    }
    let mut leap = Vec::with_capacity(1440);
    // For local time hh:mm and offset o (minutes), UTC is hh:mm - o; it must be 23:59.
    for local in 0..1440u32 {
        let (hh, mm) = (local / 60, local % 60);
        // o = local - 1439 (mod 1440), as a non-negative and as a negative offset.
        let o_pos = (local + 1) % 1440;
        let mut offsets = vec![format!("\\+{:02}:{:02}", o_pos / 60, o_pos % 60)];
        if o_pos == 0 {
            offsets.push("\\-00:00".to_owned());
            offsets.push("[Zz]".to_owned());
        } else {
            let o_neg = 1440 - o_pos;
            offsets.push(format!("\\-{:02}:{:02}", o_neg / 60, o_neg % 60));
        }
        leap.push(format!("{hh:02}:{mm:02}:60{frac}(?:{})", offsets.join("|")));
    }
    format!(
        "(?:{hour}:{minute}:[0-5][0-9]{frac}{offset}|{})",
        leap.join("|")
    )
}

fn duration() -> String {
    let n = "[0-9]+";
    let second = format!("{n}[Ss]");
    let minute = format!("{n}[Mm](?:{second})?");
    let hour = format!("{n}[Hh](?:{minute})?");
    let time = format!("[Tt](?:{hour}|{minute}|{second})");
    let day = format!("{n}[Dd]");
    let month = format!("{n}[Mm](?:{day})?");
    let year = format!("{n}[Yy](?:{month})?");
    let week = format!("{n}[Ww]");
    format!("[Pp](?:(?:{day}|{month}|{year})(?:{time})?|{time}|{week})")
}

// ---------------------------------------------------------------------------------------------
// Addresses and names

fn dec_octet() -> &'static str {
    "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
}

fn ipv4() -> String {
    let o = dec_octet();
    format!(r"{o}\.{o}\.{o}\.{o}")
}

/// RFC 3986 `IPv6address`.
fn ipv6() -> String {
    let h = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h}:{h}|{})", ipv4());
    // `[ *k( h16 ":" ) h16 ]` before "::".
    let before = |k: u32| -> String {
        if k == 0 {
            format!("(?:{h})?")
        } else {
            format!("(?:(?:{h}:){{0,{k}}}{h})?")
        }
    };
    let alts = [
        format!("(?:{h}:){{6}}{ls32}"),
        format!("::(?:{h}:){{5}}{ls32}"),
        format!("{}::(?:{h}:){{4}}{ls32}", before(0)),
        format!("{}::(?:{h}:){{3}}{ls32}", before(1)),
        format!("{}::(?:{h}:){{2}}{ls32}", before(2)),
        format!("{}::{h}:{ls32}", before(3)),
        format!("{}::{ls32}", before(4)),
        format!("{}::{h}", before(5)),
        format!("{}::", before(6)),
    ];
    format!("(?:{})", alts.join("|"))
}

/// An RFC 1123 label of 1–63 letters, digits and hyphens, not starting or ending with a
/// hyphen, and without `--` in positions 3–4.
fn hostname_label() -> String {
    let a = "[A-Za-z0-9]";
    let l = "[A-Za-z0-9\\-]";
    // Length 1–3; length 4 (position 4 is a letter or digit); length 5–63 with positions 3–4
    // not both hyphens.
    format!("{a}(?:(?:{l}?{a})|{l}{l}{a}|{l}(?:{a}{l}|\\-{a}){l}{{0,58}}{a})?")
}

fn hostname() -> String {
    let label = hostname_label();
    format!(r"{label}(?:\.{label})*")
}

fn email() -> String {
    let atext =
        chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~");
    let dot_string = format!(r"{atext}+(?:\.{atext}+)*");
    // qtextSMTP: %d32-33 / %d35-91 / %d93-126; quoted-pairSMTP: "\" %d32-126.
    let quoted = r#""(?:[ !\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*""#;
    let let_dig = "[A-Za-z0-9]";
    let sub_domain = format!("{let_dig}(?:[A-Za-z0-9\\-]*{let_dig})?");
    let domain = format!(r"{sub_domain}(?:\.{sub_domain})*");
    // Snum: one to three digits with a value up to 255.
    let snum = "(?:25[0-5]|2[0-4][0-9]|[01][0-9]{2}|[0-9]{1,2})";
    let ipv4_lit = format!(r"{snum}(?:\.{snum}){{3}}");
    let h = "[0-9A-Fa-f]{1,4}";
    let full = format!("{h}(?::{h}){{7}}");
    // IPv6-comp: at most 6 groups besides "::".
    let comp = groups_around_double_colon(h, 6, "");
    let v4_full = format!("{h}(?::{h}){{5}}:{ipv4_lit}");
    // IPv6v4-comp: at most 4 groups besides "::" and the IPv4 part.
    let v4_comp = groups_around_double_colon(h, 4, &ipv4_lit);
    let ipv6 = format!("(?:{full}|{comp}|{v4_full}|{v4_comp})");
    let literal = format!(r"\[(?:{ipv4_lit}|[Ii][Pp][Vv]6:{ipv6})\]");
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{literal})")
}

/// RFC 5321's compressed IPv6 forms: `[h *(":" h)] "::" [h *(":" h)]` with at most `max`
/// groups in all; with an IPv4 tail, the groups after `::` end in `:` before it.
fn groups_around_double_colon(h: &str, max: u32, v4_tail: &str) -> String {
    let mut alts = Vec::new();
    for left in 0..=max {
        let right_max = max - left;
        let l = if left == 0 {
            String::new()
        } else {
            format!("{h}(?::{h}){{{}}}", left - 1)
        };
        let r = if v4_tail.is_empty() {
            if right_max == 0 {
                String::new()
            } else {
                format!("(?:{h}(?::{h}){{0,{}}})?", right_max - 1)
            }
        } else if right_max == 0 {
            v4_tail.to_owned()
        } else {
            format!("(?:{h}(?::{h}){{0,{}}}:)?{v4_tail}", right_max - 1)
        };
        alts.push(format!("{l}::{r}"));
    }
    format!("(?:{})", alts.join("|"))
}

// ---------------------------------------------------------------------------------------------
// RFC 3986 / RFC 3987

/// RFC 3987 `ucschar` ranges, as class contents.
const UCSCHAR: &str = "\\u{A0}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFEF}\
    \\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\
    \\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}\\u{70000}-\\u{7FFFD}\\u{80000}-\\u{8FFFD}\
    \\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}\
    \\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}";

/// RFC 3987 `iprivate` ranges, as class contents.
const IPRIVATE: &str = "\\u{E000}-\\u{F8FF}\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}";

const UNRESERVED: &str = "A-Za-z0-9\\-\\._\\~";
const SUB_DELIMS: &str = "!\\$\\&'\\(\\)\\*\\+,;=";
const PCT: &str = "%[0-9A-Fa-f]{2}";

/// Class contents of `unreserved` (or `iunreserved` when `iri`).
fn unreserved(iri: bool) -> String {
    if iri {
        format!("{UNRESERVED}{UCSCHAR}")
    } else {
        UNRESERVED.to_owned()
    }
}

/// `(i)pchar`, or the characters of a segment with `extra` class contents added.
fn pchar_with(iri: bool, extra: &str) -> String {
    format!("(?:[{}{SUB_DELIMS}{extra}]|{PCT})", unreserved(iri))
}

fn authority(iri: bool) -> String {
    let userinfo = format!("{}*", pchar_with(iri, ":"));
    let reg_name = format!("{}*", pchar_with(iri, ""));
    let ipvfuture = format!(r"[Vv][0-9A-Fa-f]+\.[{UNRESERVED}{SUB_DELIMS}:]+");
    let ip_literal = format!(r"\[(?:{}|{ipvfuture})\]", ipv6());
    // IPv4address is a subset of reg-name, so it needs no branch of its own.
    let host = format!("(?:{ip_literal}|{reg_name})");
    format!("(?:{userinfo}@)?{host}(?::[0-9]*)?")
}

/// `hier-part` without the authority branch's helpers: paths shared by URI and relative refs.
fn paths(iri: bool) -> (String, String, String) {
    let pchar = pchar_with(iri, ":@");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let abempty = format!("(?:/{segment})*");
    let absolute = format!("/(?:{segment_nz}(?:/{segment})*)?");
    let rootless = format!("{segment_nz}(?:/{segment})*");
    (abempty, absolute, rootless)
}

fn query_fragment(iri: bool) -> (String, String) {
    let fragment = format!("{}*", pchar_with(iri, ":@/\\?"));
    let query = if iri {
        format!("{}*", pchar_with(iri, &format!(":@/\\?{IPRIVATE}")))
    } else {
        fragment.clone()
    };
    (query, fragment)
}

/// RFC 3986 `URI` (RFC 3987 `IRI` when `iri`).
fn uri(iri: bool) -> String {
    let scheme = r"[A-Za-z][A-Za-z0-9\+\-\.]*";
    let (abempty, absolute, rootless) = paths(iri);
    let (query, fragment) = query_fragment(iri);
    let hier = format!("(?://{}{abempty}|{absolute}|{rootless})?", authority(iri));
    format!(r"{scheme}:{hier}(?:\?{query})?(?:\#{fragment})?")
}

/// RFC 3986 `relative-ref` (RFC 3987 `irelative-ref` when `iri`).
fn relative_ref(iri: bool) -> String {
    let (abempty, absolute, _) = paths(iri);
    let segment = format!("{}*", pchar_with(iri, ":@"));
    let noscheme = format!("{}+(?:/{segment})*", pchar_with(iri, "@"));
    let (query, fragment) = query_fragment(iri);
    let part = format!("(?://{}{abempty}|{absolute}|{noscheme})?", authority(iri));
    format!(r"{part}(?:\?{query})?(?:\#{fragment})?")
}

fn json_pointer() -> String {
    "(?:/(?:[^/\\~]|\\~[01])*)*".to_owned()
}

/// RFC 6570 `URI-Template`.
fn uri_template() -> String {
    // literals: %x21 / %x23-24 / %x26-3B (with erratum 6937) / %x3D / %x3F-5B / %x5D / %x5F /
    // %x61-7A / %x7E / ucschar / iprivate / pct-encoded.
    let literal = format!("(?:[!\\#\\$\\&-;=\\?-\\[\\]_a-z\\~{UCSCHAR}{IPRIVATE}]|{PCT})");
    let varchar = format!("(?:[A-Za-z0-9_]|{PCT})");
    let varname = format!(r"{varchar}(?:\.?{varchar})*");
    let modifier = "(?::[1-9][0-9]{0,3}|\\*)?";
    let varspec = format!("{varname}{modifier}");
    let operator = "[\\+\\#\\./;\\?\\&=,!@\\|]?";
    let expression = format!(r"\{{{operator}{varspec}(?:,{varspec})*\}}");
    format!("(?:{literal}|{expression})*")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(f: Format) -> regex::Regex {
        regex::Regex::new(&format!("^(?:{})$", f.language().regex)).unwrap()
    }

    #[test]
    fn lookup() {
        assert_eq!(lookup_format("date"), FormatLookup::Supported(Format::Date));
        assert_eq!(lookup_format("regex"), FormatLookup::Unsupported);
        assert_eq!(lookup_format("idn-hostname"), FormatLookup::Unsupported);
        assert_eq!(lookup_format("color"), FormatLookup::Unknown);
        for f in Format::ALL {
            assert_eq!(lookup_format(f.name()), FormatLookup::Supported(f));
        }
    }

    #[test]
    fn leap_seconds_follow_the_offset() {
        let t = re(Format::Time);
        for s in [
            "23:59:60Z",
            "23:59:60-00:00",
            "00:59:60+01:00",
            "23:58:60-00:01",
            "00:00:60+00:01",
        ] {
            assert!(t.is_match(s), "{s}");
        }
        for s in ["23:59:60+00:01", "00:00:60Z", "12:00:60+12:00", "23:59:61Z"] {
            assert!(!t.is_match(s), "{s}");
        }
        // Exhaustive over hours and minutes with a few offsets.
        for local in 0..1440i32 {
            for off in [-1439i32, -720, -61, -1, 0, 1, 59, 60, 719, 1439] {
                let s = format!(
                    "{:02}:{:02}:60{}{:02}:{:02}",
                    local / 60,
                    local % 60,
                    if off < 0 { '-' } else { '+' },
                    off.abs() / 60,
                    off.abs() % 60
                );
                let expected = (local - off).rem_euclid(1440) == 1439;
                assert_eq!(t.is_match(&s), expected, "{s}");
            }
        }
    }

    #[test]
    fn utc_only_leap_seconds_are_a_subset() {
        let opts = FormatOptions::default().with_leap_seconds(LeapSeconds::UtcOnly);
        let small = regex::Regex::new(&format!(
            "^(?:{})$",
            Format::DateTime.language_with(&opts).regex
        ))
        .unwrap();
        let exact = re(Format::DateTime);
        for s in [
            "2020-12-31T23:59:60Z",
            "2020-12-31t23:59:60.5-00:00",
            "2020-12-31T15:59:60-08:00",
            "2020-12-31T23:59:59+01:00",
            "2020-12-31T23:58:60Z",
        ] {
            assert!(!small.is_match(s) || exact.is_match(s), "{s}");
        }
        assert!(small.is_match("2020-12-31T23:59:60Z"));
        assert!(!small.is_match("2020-12-31T15:59:60-08:00"));
        assert!(exact.is_match("2020-12-31T15:59:60-08:00"));
    }

    #[test]
    fn hostname_labels() {
        let h = re(Format::Hostname);
        let ok = [
            "a", "ab", "a-b", "a--b", "abc", "a1-2", "ab-cd", "abc--d", "1-a", "a.b",
        ];
        let bad = ["-a", "a-", "ab--c", "xn--abc", "XN--abc", "a..b", "a_b"];
        for s in ok {
            assert!(h.is_match(s), "{s}");
        }
        for s in bad {
            assert!(!h.is_match(s), "{s}");
        }
        assert!(h.is_match(&"a".repeat(63)));
        assert!(!h.is_match(&"a".repeat(64)));
        assert_eq!(Format::Hostname.language().max_length, Some(253));
    }

    #[test]
    fn email_ipv6_literals() {
        let e = re(Format::Email);
        for s in [
            "a@[IPv6:::1]",
            "a@[ipv6:1:2:3:4:5:6:7:8]",
            "a@[IPv6:1:2:3:4:5:6::]",
            "a@[IPv6:::1.2.3.4]",
            "a@[IPv6:1:2:3:4:5:6:1.2.3.4]",
            "a@[IPv6:1:2::3:4:1.2.3.4]",
            "a@[001.2.3.4]",
            "\"\"@x",
        ] {
            assert!(e.is_match(s), "{s}");
        }
        for s in [
            "a@[IPv6:1:2:3:4:5:6:7::]",
            "a@[IPv6:1:2:3::4:5:1.2.3.4]",
            "a@[256.1.1.1]",
        ] {
            assert!(!e.is_match(s), "{s}");
        }
    }
}
