//! The pattern's parse tree and its character classes: `\\d \\w \\s .`, negation, and the
//! Unicode property names ECMA-262 accepts in `\\p{…}`, resolved with `regex-syntax`'s tables.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, Look, Repetition};

/// The parsed pattern, before conversion to [`Hir`].
#[derive(Debug, Clone)]
pub(super) enum Node {
    Empty,
    Class(ClassUnicode),
    Look(Look),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        sub: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

impl Node {
    pub(super) fn into_hir(self) -> Hir {
        match self {
            Node::Empty => Hir::empty(),
            Node::Class(c) => Hir::class(Class::Unicode(c)),
            Node::Look(l) => Hir::look(l),
            Node::Concat(v) => Hir::concat(v.into_iter().map(Node::into_hir).collect()),
            Node::Alt(v) => Hir::alternation(v.into_iter().map(Node::into_hir).collect()),
            Node::Repeat { sub, min, max } => Hir::repetition(Repetition {
                min,
                max,
                greedy: true,
                sub: Box::new(sub.into_hir()),
            }),
        }
    }
}

pub(super) fn class_of(ranges: &[(u32, u32)]) -> ClassUnicode {
    let mut c = ClassUnicode::empty();
    for &(lo, hi) in ranges {
        add_range(&mut c, lo, hi);
    }
    c
}

/// Adds the scalar values in `lo..=hi` (surrogates have none).
pub(super) fn add_range(c: &mut ClassUnicode, lo: u32, hi: u32) {
    let pieces = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi.min(0x10FFFF))];
    for (a, b) in pieces {
        if a <= b
            && let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b))
        {
            c.push(ClassUnicodeRange::new(a, b));
        }
    }
}

pub(super) fn digit_class() -> ClassUnicode {
    class_of(&[(0x30, 0x39)])
}

pub(super) fn word_class() -> ClassUnicode {
    class_of(&[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
}

/// ECMA-262 WhiteSpace and LineTerminator (with Zs from Unicode).
pub(super) fn space_class() -> ClassUnicode {
    class_of(&[
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

pub(super) fn dot_class() -> ClassUnicode {
    let mut c = class_of(&[(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]);
    c.negate();
    c
}

pub(super) fn negated(mut c: ClassUnicode) -> ClassUnicode {
    c.negate();
    c
}

/// General_Category values (long names, short names and other aliases) that ECMA-262
/// accepts, with the short name passed to `regex-syntax`.
pub(super) const GENERAL_CATEGORIES: &[(&str, &str)] = &[
    ("Cased_Letter", "LC"),
    ("Close_Punctuation", "Pe"),
    ("Connector_Punctuation", "Pc"),
    ("Control", "Cc"),
    ("cntrl", "Cc"),
    ("Currency_Symbol", "Sc"),
    ("Dash_Punctuation", "Pd"),
    ("Decimal_Number", "Nd"),
    ("digit", "Nd"),
    ("Enclosing_Mark", "Me"),
    ("Final_Punctuation", "Pf"),
    ("Format", "Cf"),
    ("Initial_Punctuation", "Pi"),
    ("Letter", "L"),
    ("Letter_Number", "Nl"),
    ("Line_Separator", "Zl"),
    ("Lowercase_Letter", "Ll"),
    ("Mark", "M"),
    ("Combining_Mark", "M"),
    ("Math_Symbol", "Sm"),
    ("Modifier_Letter", "Lm"),
    ("Modifier_Symbol", "Sk"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Open_Punctuation", "Ps"),
    ("Other", "C"),
    ("Other_Letter", "Lo"),
    ("Other_Number", "No"),
    ("Other_Punctuation", "Po"),
    ("Other_Symbol", "So"),
    ("Paragraph_Separator", "Zp"),
    ("Private_Use", "Co"),
    ("Punctuation", "P"),
    ("punct", "P"),
    ("Separator", "Z"),
    ("Space_Separator", "Zs"),
    ("Spacing_Mark", "Mc"),
    ("Surrogate", "Cs"),
    ("Symbol", "S"),
    ("Titlecase_Letter", "Lt"),
    ("Unassigned", "Cn"),
    ("Uppercase_Letter", "Lu"),
];

/// Short General_Category names.
pub(super) const GENERAL_CATEGORY_SHORT: &[&str] = &[
    "C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "LC", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me",
    "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk",
    "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// Binary properties of ECMA-262's table, canonical names and aliases.
pub(super) const BINARY_PROPERTIES: &[&str] = &[
    "ASCII",
    "ASCII_Hex_Digit",
    "AHex",
    "Alphabetic",
    "Alpha",
    "Any",
    "Assigned",
    "Bidi_Control",
    "Bidi_C",
    "Bidi_Mirrored",
    "Bidi_M",
    "Case_Ignorable",
    "CI",
    "Cased",
    "Changes_When_Casefolded",
    "CWCF",
    "Changes_When_Casemapped",
    "CWCM",
    "Changes_When_Lowercased",
    "CWL",
    "Changes_When_NFKC_Casefolded",
    "CWKCF",
    "Changes_When_Titlecased",
    "CWT",
    "Changes_When_Uppercased",
    "CWU",
    "Dash",
    "Default_Ignorable_Code_Point",
    "DI",
    "Deprecated",
    "Dep",
    "Diacritic",
    "Dia",
    "Emoji",
    "Emoji_Component",
    "EComp",
    "Emoji_Modifier",
    "EMod",
    "Emoji_Modifier_Base",
    "EBase",
    "Emoji_Presentation",
    "EPres",
    "Extended_Pictographic",
    "ExtPict",
    "Extender",
    "Ext",
    "Grapheme_Base",
    "Gr_Base",
    "Grapheme_Extend",
    "Gr_Ext",
    "Hex_Digit",
    "Hex",
    "IDS_Binary_Operator",
    "IDSB",
    "IDS_Trinary_Operator",
    "IDST",
    "ID_Continue",
    "IDC",
    "ID_Start",
    "IDS",
    "Ideographic",
    "Ideo",
    "Join_Control",
    "Join_C",
    "Logical_Order_Exception",
    "LOE",
    "Lowercase",
    "Lower",
    "Math",
    "Noncharacter_Code_Point",
    "NChar",
    "Pattern_Syntax",
    "Pat_Syn",
    "Pattern_White_Space",
    "Pat_WS",
    "Quotation_Mark",
    "QMark",
    "Radical",
    "Regional_Indicator",
    "RI",
    "Sentence_Terminal",
    "STerm",
    "Soft_Dotted",
    "SD",
    "Terminal_Punctuation",
    "Term",
    "Unified_Ideograph",
    "UIdeo",
    "Uppercase",
    "Upper",
    "Variation_Selector",
    "VS",
    "White_Space",
    "space",
    "XID_Continue",
    "XIDC",
    "XID_Start",
    "XIDS",
];

pub(super) fn general_category(value: &str) -> Option<&'static str> {
    GENERAL_CATEGORY_SHORT
        .iter()
        .find(|s| **s == value)
        .copied()
        .or_else(|| {
            GENERAL_CATEGORIES
                .iter()
                .find(|(long, _)| *long == value)
                .map(|(_, short)| *short)
        })
}

/// The class `regex-syntax` gives for `\p{expr}`.
pub(super) fn regex_syntax_class(expr: &str) -> Option<ClassUnicode> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&format!(r"\p{{{expr}}}"))
        .ok()?;
    class_from_hir(&hir)
}

pub(super) fn class_from_hir(hir: &Hir) -> Option<ClassUnicode> {
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(Class::Unicode(c)) => Some(c.clone()),
        regex_syntax::hir::HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).ok()?;
            let mut chars = s.chars();
            let c = chars.next()?;
            chars
                .next()
                .is_none()
                .then(|| ClassUnicode::new([ClassUnicodeRange::new(c, c)]))
        }
        _ => None,
    }
}
