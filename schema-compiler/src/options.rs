//! What to compile and how: strictness, whitespace and number policies, limits.

use std::time::Duration;

/// How whitespace between JSON tokens is governed.
///
/// Whitespace never changes what a document means, so the automaton may restrict it without
/// rejecting any value; the policy only decides which *spellings* of a value are accepted. A
/// generating model should not be able to emit whitespace forever, nor pad its output.
///
/// For generation, [`Whitespace::Compact`] (the default of [`Options::generation`]) and
/// [`Whitespace::Pretty`] fix the spelling completely: the model chooses values, never layout.
/// Whitespace inside strings is content and is never governed by this policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whitespace {
    /// No whitespace at all: `{"a":1,"b":[true]}`.
    Compact,
    /// Exactly the layout of `serde_json::to_string_pretty` (and
    /// [`crate::json_text::pretty`] with an indent of 2): after `{` or `[` and after `,`, a
    /// line break and two spaces per level of nesting; before `}` or `]`, a line break and the
    /// enclosing level's indentation; `": "` after a key; empty containers as `{}` and `[]`; no
    /// whitespace before or after the document.
    ///
    /// ```text
    /// {
    ///   "a": 1,
    ///   "b": [
    ///     true
    ///   ],
    ///   "c": {}
    /// }
    /// ```
    Pretty,
    /// Between any two tokens, at most `max_newlines` line breaks (`\n` or `\r\n`) and at most
    /// `max_spaces` spaces or tabs. `Flexible { max_newlines: 1, max_spaces: 16 }` allows
    /// pretty-printed output to moderate depth, but not endless blank lines; within those
    /// bounds a generating model lays its output out as it likes (and may pad it).
    Flexible {
        /// Line breaks allowed in one run of whitespace.
        max_newlines: u8,
        /// Spaces and tabs allowed in one run of whitespace.
        max_spaces: u16,
    },
    /// Any run of JSON whitespace (for validating text written by someone else).
    Unbounded,
}

/// Which escapes an object key may use.
///
/// Like whitespace, escapes never change what a document means (`"\u006eame"` is the key
/// `name`), so this only decides which spellings of a key are accepted. Keys spelled as
/// themselves let a generator force a known key byte by byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEscapes {
    /// Only where JSON needs one: `\"`, `\\`, and control characters (`\n`, `\t`, `\b`,
    /// `\f`, `\r`, `\u0000`..`\u001f`).
    Needed,
    /// Any JSON escape (for validating text written by someone else).
    Any,
}

/// How number texts are governed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumberPolicy {
    /// Digits allowed before the decimal point (`None`: unbounded).
    pub max_int_digits: Option<u32>,
    /// Digits allowed after the decimal point (`None`: unbounded).
    pub max_frac_digits: Option<u32>,
    /// Digits allowed in an exponent (`None`: unbounded).
    pub max_exp_digits: Option<u32>,
    /// Whether numbers with a constraint on their value (bounds, `multipleOf`, `integer`,
    /// numeric `enum`/`const`) may be written with an exponent or as `1.0` for an integer.
    ///
    /// With `false` (for generation) such numbers are recognized in plain notation by an
    /// exact automaton, so every prefix it accepts can still be completed; where a negation
    /// (`not`, `oneOf`, `if`) or a `contains` count decides on a number, it is held to its
    /// canonical spelling (no exponent, no trailing zero, no `-0`), so that the policy never
    /// lets another spelling of an excluded value through. With `true` (for
    /// validation) every JSON spelling is accepted and the value is checked exactly when the
    /// number ends; a prefix may then turn out to have no valid completion.
    pub any_notation: bool,
}

/// Limits that bound compile time and memory; hitting one is a [`crate::CompileError::Limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting depth of a document (objects and arrays).
    pub max_depth: u32,
    /// Maximum number of schema nodes after resolving references and merging.
    pub max_nodes: usize,
    /// Maximum number of states of one lexeme DFA.
    pub max_dfa_states: usize,
    /// Memory budget for compiling one regex to a DFA, in bytes.
    pub max_regex_bytes: usize,
    /// Maximum total lexeme DFA states of one grammar.
    pub max_total_dfa_states: usize,
    /// Length bounds up to this value may be folded into a DFA (needed under `anyOf`, `not`).
    /// The folded DFA has a few states per code point of the bound (the UTF-8 decoding of
    /// each position), times the states of the DFA it is combined with, so `max_dfa_states`
    /// refuses the large products; this only spares building the regex of a bound no DFA
    /// could hold.
    pub max_expanded_length: u64,
    /// Maximum nesting of subschemas inside one another (not through `$ref`, which is
    /// resolved lazily): bounds the compiler's own recursion.
    pub max_schema_depth: u32,
    /// How long one compile may take (`None`: no time limit). Past it, the compile stops
    /// with a [`crate::CompileError::Limit`] naming `max_compile_time`. The size limits
    /// above bound most schemas well under a second; this bounds the rest, such as a pattern
    /// whose DFA is small but slow to reach (`.*\p{L}{100}.*` tracks thousands of NFA states
    /// at once).
    pub max_compile_time: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_nodes: 100_000,
            max_dfa_states: 100_000,
            max_regex_bytes: 32 << 20,
            max_total_dfa_states: 2_000_000,
            max_expanded_length: 10_000,
            max_schema_depth: 128,
            max_compile_time: Some(Duration::from_secs(5)),
        }
    }
}

/// In which order the members of an object may be written.
///
/// Like whitespace, the order of members never changes what an object means, so this only
/// decides which spellings are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PropertyOrder {
    /// Any order (the default).
    #[default]
    Any,
    /// The order of the schema: the members named in `properties` come in the order they are
    /// listed there (those that are absent are skipped), and every other member comes after
    /// them. A required property is never skipped: once a later one is written, the matcher
    /// refuses keys that would leave it out. This is the contract of OpenAI's structured
    /// outputs, where fields such as a reasoning step must come before the answer.
    ///
    /// The order applies to an object whose subschemas are alternatives of plain object
    /// schemas: one schema, or an `anyOf` of them, each alternative with its own order. Where
    /// object subschemas must hold together (`allOf`, a `$ref` beside `properties`, several
    /// matching `patternProperties`), or are negated or counted (`not`, `oneOf`, `if`,
    /// `dependentSchemas`), no single listing defines an order and any order is accepted.
    /// A schema with the extension keyword `"x-stencil-property-order": "any"`
    /// ([`crate::ANY_ORDER_KEYWORD`], [`crate::any_order`]) keeps any order for its own
    /// objects.
    Schema,
}

/// Whether `format` asserts or only annotates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatMode {
    /// Known formats are enforced; unknown formats follow the keyword policy.
    Assert,
    /// `format` is an annotation (the 2020-12 default for validators): ignored.
    Annotate,
}

/// Compile options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Strict (default): an unsupported keyword is an error. Lenient: it is relaxed (ignored)
    /// and listed in the compile report.
    pub strict: bool,
    /// Whitespace policy.
    pub whitespace: Whitespace,
    /// Escapes allowed in object keys.
    pub key_escapes: KeyEscapes,
    /// Number policy.
    pub numbers: NumberPolicy,
    /// Whether `format` is enforced.
    pub format: FormatMode,
    /// Limits.
    pub limits: Limits,
    /// The draft assumed when a schema has no `$schema`.
    pub default_draft: Draft,
    /// The order in which object members may be written.
    pub property_order: PropertyOrder,
}

/// JSON Schema drafts, as far as they change the meaning of keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Draft {
    /// Draft 4 (`id`, boolean `exclusiveMinimum`).
    Draft4,
    /// Draft 6.
    Draft6,
    /// Draft 7.
    Draft7,
    /// 2019-09.
    Draft2019,
    /// 2020-12.
    Draft2020,
}

impl Options {
    /// Defaults for constraining generation: no whitespace outside strings
    /// ([`Whitespace::Compact`]), keys escaped only where needed, at most 20 integer digits, 20 fraction
    /// digits and 3 exponent digits, constrained numbers in plain notation, formats enforced,
    /// members in any order, strict.
    pub fn generation() -> Options {
        Options {
            strict: true,
            whitespace: Whitespace::Compact,
            key_escapes: KeyEscapes::Needed,
            numbers: NumberPolicy {
                max_int_digits: Some(20),
                max_frac_digits: Some(20),
                max_exp_digits: Some(3),
                any_notation: false,
            },
            format: FormatMode::Assert,
            limits: Limits::default(),
            default_draft: Draft::Draft2020,
            property_order: PropertyOrder::Any,
        }
    }

    /// Options for validating existing text: any whitespace, any escapes, numbers of any
    /// length and notation, formats enforced, strict.
    pub fn validation() -> Options {
        Options {
            whitespace: Whitespace::Unbounded,
            key_escapes: KeyEscapes::Any,
            numbers: NumberPolicy {
                max_int_digits: None,
                max_frac_digits: None,
                max_exp_digits: None,
                any_notation: true,
            },
            ..Options::generation()
        }
    }

    /// Sets strictness.
    pub fn strict(mut self, yes: bool) -> Options {
        self.strict = yes;
        self
    }

    /// Sets the whitespace policy.
    pub fn whitespace(mut self, ws: Whitespace) -> Options {
        self.whitespace = ws;
        self
    }

    /// Sets the escapes allowed in keys.
    pub fn key_escapes(mut self, escapes: KeyEscapes) -> Options {
        self.key_escapes = escapes;
        self
    }

    /// Sets the format mode.
    pub fn format(mut self, mode: FormatMode) -> Options {
        self.format = mode;
        self
    }

    /// Sets the order in which object members may be written.
    pub fn property_order(mut self, order: PropertyOrder) -> Options {
        self.property_order = order;
        self
    }

    /// Sets the default draft.
    pub fn default_draft(mut self, draft: Draft) -> Options {
        self.default_draft = draft;
        self
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::generation()
    }
}

/// `schema` with [`ANY_ORDER_KEYWORD`](crate::ANY_ORDER_KEYWORD) set to `"any"` on it and on
/// every subschema in it (`properties`, `items`, `$defs`, `anyOf` and the other keywords whose
/// values are schemas): compiled under [`PropertyOrder::Schema`], its objects may still be
/// written in any order, while the schemas it is placed beside keep theirs (a non-strict tool
/// among strict ones). What it accepts is unchanged.
pub fn any_order(schema: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    // Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
    const ONE: &[&str] = &[
        "additionalProperties",
        "propertyNames",
        "items",
        "additionalItems",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
    ];
    const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
    const MAP: &[&str] = &[
        "properties",
        "patternProperties",
        "dependentSchemas",
        "dependencies",
        "$defs",
        "definitions",
    ];
    let Value::Object(o) = schema else {
        return schema.clone();
    };
    let mut out = serde_json::Map::with_capacity(o.len() + 1);
    for (k, v) in o {
        let k = k.as_str();
        let v = match v {
            Value::Object(_) if ONE.contains(&k) => any_order(v),
            Value::Array(a) if LIST.contains(&k) => Value::Array(a.iter().map(any_order).collect()),
            Value::Object(m) if MAP.contains(&k) => Value::Object(
                m.iter()
                    .map(|(name, s)| (name.clone(), any_order(s)))
                    .collect(),
            ),
            _ => v.clone(),
        };
        out.insert(k.to_string(), v);
    }
    out.insert(
        crate::ANY_ORDER_KEYWORD.to_string(),
        Value::String("any".into()),
    );
    Value::Object(out)
}
