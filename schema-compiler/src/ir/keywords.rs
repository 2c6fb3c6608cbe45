//! Keywords: turning the keywords of one schema object into a [`Schema`] node, sorting the
//! ones it does not implement into annotations, relaxations and errors.

use serde_json::{Map, Value};

use crate::error::CompileError;
use crate::json_text::RoundedNumbers;
use crate::options::{Draft, FormatMode};
use crate::report::{Note, NoteKind};
use crate::text::decimal::{Decimal, DecimalError};

use super::refs::{draft_of_schema_uri, escape_token, pointer_get};
use super::{
    ANNOTATIONS, ANY_ORDER_KEYWORD, Bound, KNOWN_FORMATS, Loc, Lowering, Schema, TypeSet,
    UNIMPLEMENTED, UNSUPPORTED_FORMATS, json_eq,
};

impl<'o> Lowering<'o> {
    /// The exact value of a schema number: the value written where its literal was rounded
    /// when read and the text is known, otherwise what it was read as.
    fn exact_number(&self, n: &serde_json::Number) -> Result<Decimal, DecimalError> {
        match n.as_f64().filter(|_| n.is_f64()) {
            Some(x) if let Some(written) = self.rounded.as_written(x) => Ok(written.clone()),
            _ => Decimal::from_json_number(n),
        }
    }

    pub(super) fn lower_object(
        &mut self,
        loc: &Loc,
        obj: &Map<String, Value>,
    ) -> Result<Schema, CompileError> {
        let (_, draft) = self.scope_of(loc);
        let here = self.loc_string(loc);
        let mut s = Schema {
            loc: here.clone(),
            ..Schema::default()
        };
        let invalid = |keyword: &str, reason: String| CompileError::Invalid {
            keyword: keyword.to_string(),
            pointer: here.clone(),
            reason,
        };

        if let Some(r) = obj.get("$ref") {
            let r = r
                .as_str()
                .ok_or_else(|| invalid("$ref", "must be a string".into()))?;
            let target = self.resolve_ref(loc, r)?;
            let t = self.lower(target)?;
            s.all_of.push(t);
            if draft <= Draft::Draft7 {
                // Siblings of `$ref` are ignored before 2019-09.
                return Ok(s);
            }
        }

        if draft >= Draft::Draft2020
            && let Some(r) = obj.get("$dynamicRef")
        {
            let r = r
                .as_str()
                .ok_or_else(|| invalid("$dynamicRef", "must be a string".into()))?;
            let mut target = self.resolve_ref(loc, r)?;
            // Where the reference lands on a `$dynamicAnchor` of its name, the outermost
            // resource in the dynamic scope with that anchor decides; elsewhere it is a `$ref`.
            if let Some((_, name)) = r.split_once('#')
                && !name.is_empty()
                && !name.starts_with('/')
                && pointer_get(self.docs[target.0], &target.1)
                    .and_then(|v| v.get("$dynamicAnchor"))
                    .and_then(Value::as_str)
                    == Some(name)
                && let Some(outermost) = self.dynamic_anchor(name)
            {
                target = outermost;
            }
            let t = self.lower(target)?;
            s.all_of.push(t);
        }

        let off = self.keywords_off(loc);
        for (key, v) in obj {
            let k = key.as_str();
            // A bound or `multipleOf` whose literal was rounded takes the value written (see
            // `exact_number`); `enum` and `const` values stay `Value`s and refuse it.
            let written_bound = BOUND_KEYWORDS.contains(&k)
                && v.as_f64()
                    .is_some_and(|x| self.rounded.as_written(x).is_some());
            if VALUE_KEYWORDS.contains(&k)
                && !written_bound
                && let Some((at, n, why)) = rounded_number(v, String::new(), self.rounded)
            {
                let why = match why {
                    Rounded::Digits => {
                        "which needs 17 significant digits: the number as written may have had \
                         more and been rounded, so its exact value is unknown"
                    }
                    Rounded::AsWritten => {
                        "and a literal of the schema with more significant digits than such a \
                         float keeps was read as the same float: the value written is unknown"
                    }
                };
                return Err(CompileError::Unsupported {
                    keyword: k.into(),
                    pointer: here.clone(),
                    reason: format!(
                        "the number at `{k}{at}` was read as the 64-bit float {n}, {why}"
                    ),
                });
            }
            match k {
                "$ref" => {}
                "$dynamicRef" if draft >= Draft::Draft2020 => {}
                "$schema" => {
                    // Outside a document root or an embedded resource, `$schema` means nothing.
                    // A custom meta-schema is followed when its document is known (see
                    // `vocabulary.rs`).
                    if let Some(uri) = v.as_str()
                        && (loc.1.is_empty() || self.schema_roots.contains(loc))
                        && draft_of_schema_uri(uri).is_none()
                    {
                        let reason = match (&off, self.custom_meta_schema(loc)) {
                            (Err(reason), _) => Some(reason.clone()),
                            (Ok(_), None) => Some(format!(
                                "custom meta-schema `{uri}`: no such document is known"
                            )),
                            (Ok(_), Some(_)) => None,
                        };
                        if let Some(reason) = reason {
                            self.relax(k, loc, reason)?;
                        }
                    }
                }
                _ if off.as_ref().is_ok_and(|off| off.contains(&k)) => {
                    // The meta-schema leaves this keyword's vocabulary out: an annotation.
                }
                "type" => {
                    let mut set = 0u8;
                    let names: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for n in names {
                        let name = n
                            .as_str()
                            .ok_or_else(|| invalid(k, "type names are strings".into()))?;
                        set |= TypeSet::from_name(name)
                            .ok_or_else(|| invalid(k, format!("unknown type `{name}`")))?;
                    }
                    s.types = Some(TypeSet(set));
                }
                "enum" => {
                    let a = v
                        .as_array()
                        .ok_or_else(|| invalid(k, "must be an array".into()))?;
                    s.enum_values = Some(match s.enum_values.take() {
                        None => a.clone(),
                        Some(prev) => prev
                            .into_iter()
                            .filter(|x| a.iter().any(|y| json_eq(x, y)))
                            .collect(),
                    });
                }
                "const" => {
                    s.enum_values = Some(match s.enum_values.take() {
                        None => vec![v.clone()],
                        Some(prev) => prev.into_iter().filter(|x| json_eq(x, v)).collect(),
                    });
                }
                "minLength" => {
                    s.min_length = count(v)
                        .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?
                }
                "maxLength" => {
                    s.max_length = Some(
                        count(v)
                            .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?,
                    )
                }
                "pattern" => s.patterns.push(
                    v.as_str()
                        .ok_or_else(|| invalid(k, "must be a string".into()))?
                        .to_string(),
                ),
                "format" => {
                    let f = v
                        .as_str()
                        .ok_or_else(|| invalid(k, "must be a string".into()))?;
                    if self.options.format == FormatMode::Assert {
                        if f == "hostname" {
                            // Exact only without internationalized A-labels (`xn--`), whose
                            // validity needs IDNA2008 tables.
                            self.relax(
                                "format",
                                loc,
                                "format `hostname` is enforced without IDNA A-labels (`xn--…`), \
                                 which are rejected"
                                    .into(),
                            )?;
                            s.format = Some(f.to_string());
                        } else if KNOWN_FORMATS.contains(&f) {
                            s.format = Some(f.to_string());
                        } else if UNSUPPORTED_FORMATS.contains(&f) {
                            self.relax("format", loc, format!("format `{f}` is not enforced"))?;
                        } else {
                            self.notes.push(Note {
                                kind: NoteKind::Ignored,
                                keyword: "format".into(),
                                pointer: here.clone(),
                                detail: format!("unknown format `{f}` is an annotation"),
                            });
                        }
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    if let Value::Bool(b) = v {
                        if draft != Draft::Draft4 {
                            return Err(invalid(
                                k,
                                "must be a number (boolean form is draft 4)".into(),
                            ));
                        }
                        // Draft 4: modifies `minimum` / `maximum`; handled below.
                        let _ = b;
                        continue;
                    }
                    let n = v
                        .as_number()
                        .ok_or_else(|| invalid(k, "must be a number".into()))?;
                    let d = self
                        .exact_number(n)
                        .map_err(|e| invalid(k, e.to_string()))?;
                    let excl_flag = |name: &str| {
                        draft == Draft::Draft4 && obj.get(name) == Some(&Value::Bool(true))
                    };
                    match k {
                        "minimum" => s.lower.push(Bound {
                            value: d,
                            inclusive: !excl_flag("exclusiveMinimum"),
                        }),
                        "maximum" => s.upper.push(Bound {
                            value: d,
                            inclusive: !excl_flag("exclusiveMaximum"),
                        }),
                        "exclusiveMinimum" => s.lower.push(Bound {
                            value: d,
                            inclusive: false,
                        }),
                        _ => s.upper.push(Bound {
                            value: d,
                            inclusive: false,
                        }),
                    }
                }
                "multipleOf" => {
                    let n = v
                        .as_number()
                        .ok_or_else(|| invalid(k, "must be a number".into()))?;
                    let d = self
                        .exact_number(n)
                        .map_err(|e| invalid(k, e.to_string()))?;
                    if d.is_zero() || d.is_negative() {
                        return Err(invalid(k, "must be greater than 0".into()));
                    }
                    s.multiple_of.push(d);
                }
                "properties" | "patternProperties" | "dependentSchemas" => {
                    let m = v
                        .as_object()
                        .ok_or_else(|| invalid(k, "must be an object".into()))?;
                    let mut out = Vec::with_capacity(m.len());
                    for name in m.keys() {
                        out.push((name.clone(), self.child(loc, &[k, name])?));
                    }
                    match k {
                        "properties" => s.properties = out,
                        "patternProperties" => s.pattern_properties = out,
                        _ => s.dependent_schemas.extend(out),
                    }
                }
                "additionalProperties" => s.additional_properties = Some(self.child(loc, &[k])?),
                "propertyNames" => s.property_names = Some(self.child(loc, &[k])?),
                "required" => {
                    let a = v
                        .as_array()
                        .ok_or_else(|| invalid(k, "must be an array of strings".into()))?;
                    for n in a {
                        let n = n
                            .as_str()
                            .ok_or_else(|| invalid(k, "must be an array of strings".into()))?;
                        if !s.required.iter().any(|r| r == n) {
                            s.required.push(n.to_string());
                        }
                    }
                }
                "minProperties" => {
                    s.min_properties = count(v)
                        .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?
                }
                "maxProperties" => {
                    s.max_properties = Some(
                        count(v)
                            .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?,
                    )
                }
                "dependentRequired" => {
                    let m = v
                        .as_object()
                        .ok_or_else(|| invalid(k, "must be an object".into()))?;
                    for (name, deps) in m {
                        s.dependent_required.push((
                            name.clone(),
                            string_list(deps).ok_or_else(|| {
                                invalid(k, "values must be arrays of strings".into())
                            })?,
                        ));
                    }
                }
                "dependencies" if draft <= Draft::Draft7 => {
                    let m = v
                        .as_object()
                        .ok_or_else(|| invalid(k, "must be an object".into()))?;
                    for (name, dep) in m {
                        match dep {
                            Value::Array(_) => s.dependent_required.push((
                                name.clone(),
                                string_list(dep)
                                    .ok_or_else(|| invalid(k, "arrays must hold strings".into()))?,
                            )),
                            _ => {
                                let n = self.child(loc, &[k, name])?;
                                s.dependent_schemas.push((name.clone(), n));
                            }
                        }
                    }
                }
                "items" => match v {
                    Value::Array(a) => {
                        if draft >= Draft::Draft2020 && obj.contains_key("prefixItems") {
                            return Err(invalid(k, "must be a schema in 2020-12".into()));
                        }
                        for i in 0..a.len() {
                            let is = i.to_string();
                            s.prefix_items.push(self.child(loc, &[k, &is])?);
                        }
                        if let Some(_ai) = obj.get("additionalItems") {
                            s.items = Some(self.child(loc, &["additionalItems"])?);
                        }
                    }
                    _ => s.items = Some(self.child(loc, &[k])?),
                },
                "additionalItems" => {} // Only meaningful with array-form `items`; handled there.
                "prefixItems" if draft >= Draft::Draft2020 => {
                    let a = v
                        .as_array()
                        .ok_or_else(|| invalid(k, "must be an array".into()))?;
                    for i in 0..a.len() {
                        let is = i.to_string();
                        s.prefix_items.push(self.child(loc, &[k, &is])?);
                    }
                }
                "minItems" => {
                    s.min_items = count(v)
                        .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?
                }
                "maxItems" => {
                    s.max_items = Some(
                        count(v)
                            .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?,
                    )
                }
                "contains" => s.contains = Some(self.child(loc, &[k])?),
                "minContains" if draft >= Draft::Draft2019 => {
                    s.min_contains = Some(
                        count(v)
                            .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?,
                    )
                }
                "maxContains" if draft >= Draft::Draft2019 => {
                    s.max_contains = Some(
                        count(v)
                            .ok_or_else(|| invalid(k, "must be a non-negative integer".into()))?,
                    )
                }
                ANY_ORDER_KEYWORD => {
                    s.any_order = match v.as_str() {
                        Some("any") => true,
                        Some("schema") => false,
                        _ => {
                            return Err(invalid(k, "must be \"any\" or \"schema\"".into()));
                        }
                    };
                }
                "uniqueItems" => {
                    s.unique_items = v
                        .as_bool()
                        .ok_or_else(|| invalid(k, "must be a boolean".into()))?;
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let a = v
                        .as_array()
                        .ok_or_else(|| invalid(k, "must be a non-empty array".into()))?;
                    if a.is_empty() {
                        return Err(invalid(k, "must be a non-empty array".into()));
                    }
                    let mut out = Vec::with_capacity(a.len());
                    for i in 0..a.len() {
                        let is = i.to_string();
                        out.push(self.child(loc, &[k, &is])?);
                    }
                    match k {
                        "allOf" => s.all_of.extend(out),
                        "anyOf" => s.any_of.push(out),
                        _ => s.one_of.push(out),
                    }
                }
                "not" => {
                    let n = self.child(loc, &[k])?;
                    s.not.push(n);
                }
                "if" if draft >= Draft::Draft7 => {
                    let c = self.child(loc, &["if"])?;
                    let t = if obj.contains_key("then") {
                        Some(self.child(loc, &["then"])?)
                    } else {
                        None
                    };
                    let e = if obj.contains_key("else") {
                        Some(self.child(loc, &["else"])?)
                    } else {
                        None
                    };
                    s.conditional = Some((c, t, e));
                }
                "then" | "else" => {}
                "nullable" => {
                    // OpenAPI 3.0: `nullable: true` adds null to `type`.
                    if v.as_bool() != Some(true) {
                        continue;
                    }
                }
                "unevaluatedProperties" => {
                    s.unevaluated_properties = Some(self.child(loc, &[k])?);
                }
                "unevaluatedItems" => {
                    s.unevaluated_items = Some(self.child(loc, &[k])?);
                }
                _ if ANNOTATIONS.contains(&k) => {}
                _ if UNIMPLEMENTED.contains(&k) => {
                    self.relax(k, loc, format!("`{k}` is not implemented"))?;
                }
                _ => {
                    self.notes.push(Note {
                        kind: NoteKind::Ignored,
                        keyword: k.into(),
                        pointer: here.clone(),
                        detail: "unknown keyword (an annotation)".into(),
                    });
                }
            }
        }
        if obj.get("nullable") == Some(&Value::Bool(true))
            && let Some(t) = &mut s.types
        {
            t.0 |= TypeSet::NULL;
            if let Some(e) = &mut s.enum_values
                && !e.contains(&Value::Null)
            {
                e.push(Value::Null);
            }
        }
        self.lower_unevaluated(loc, &mut s)?;
        Ok(s)
    }
}

/// Keywords whose numbers are compared with instance values.
pub(super) const VALUE_KEYWORDS: &[&str] = &[
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Keywords whose number becomes a [`Decimal`] at once: with the schema's text, the value
/// written.
const BOUND_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Why a schema number may not be the number written.
pub(super) enum Rounded {
    /// Its shortest decimal has 17 digits (the text is not known).
    Digits,
    /// The text it was read from had a different value (see [`RoundedNumbers`]).
    AsWritten,
}

/// The first number in `v` (and its pointer below `at`) that may have been rounded when read.
///
/// Integers that fit 64 bits are read exactly; every other number is read as the nearest
/// `f64`, and the compiler takes its shortest round-trip decimal (`0.1` as exactly `0.1`). A
/// number written with at most 16 significant digits is that decimal; one whose shortest
/// decimal needs 17 digits was written with 17 or more (`18446744073709551617`, read as
/// `18446744073709552000`), and may have lost some. A longer literal can also round to a short
/// decimal (`100000000000000000000000000001` to `1e29`): `rounded` holds such values when the
/// schema's text is known.
pub(super) fn rounded_number(
    v: &Value,
    at: String,
    rounded: &RoundedNumbers,
) -> Option<(String, f64, Rounded)> {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64()?;
            if rounded.contains(x) {
                return Some((at, x, Rounded::AsWritten));
            }
            let text = format!("{x:e}");
            let mantissa = text.split('e').next().unwrap_or("");
            let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
            (digits >= 17).then_some((at, x, Rounded::Digits))
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| rounded_number(x, format!("{at}/{i}"), rounded)),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| rounded_number(x, format!("{at}/{}", escape_token(k)), rounded)),
        _ => None,
    }
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A non-negative integer keyword value (`2` or `2.0`).
pub(super) fn count(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(u);
    }
    let d = Decimal::from_json_number(n).ok()?;
    if d.is_negative() || !d.is_integer() {
        return None;
    }
    d.to_plain_string_within(20)?
        .parse()
        .ok()
        .or(Some(u64::MAX))
}

pub(super) fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}
