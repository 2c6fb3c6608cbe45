//! `$vocabulary`: a custom meta-schema names the vocabularies its schemas use, and the
//! keywords of the standard vocabularies it leaves out are annotations in those schemas.
//!
//! A schema resource whose `$schema` is a document this compiler knows (a remote registered
//! with the compiler) reads that document's `$vocabulary`. A vocabulary it requires and this
//! compiler does not know makes the `$schema` unsupported; an unknown optional one is ignored;
//! a standard vocabulary it does not list (validation, applicator, unevaluated) turns that
//! vocabulary's keywords into annotations. Without `$vocabulary` the meta-schema's own draft
//! applies.

use serde_json::Value;

use super::refs::{pointer_get, without_fragment};
use super::{Loc, Lowering};

/// The standard vocabularies of 2019-09 and 2020-12, by the last segment of their URI.
const KNOWN: &[&str] = &[
    "core",
    "applicator",
    "unevaluated",
    "validation",
    "meta-data",
    "format",
    "format-annotation",
    "format-assertion",
    "content",
];

/// The keywords of the vocabularies whose absence changes what a schema asserts.
const VOCABULARY_KEYWORDS: &[(&str, &[&str])] = &[
    (
        "validation",
        &[
            "type",
            "enum",
            "const",
            "multipleOf",
            "maximum",
            "exclusiveMaximum",
            "minimum",
            "exclusiveMinimum",
            "maxLength",
            "minLength",
            "pattern",
            "maxItems",
            "minItems",
            "uniqueItems",
            "maxContains",
            "minContains",
            "maxProperties",
            "minProperties",
            "required",
            "dependentRequired",
        ],
    ),
    (
        "applicator",
        &[
            "prefixItems",
            "items",
            "additionalItems",
            "contains",
            "additionalProperties",
            "properties",
            "patternProperties",
            "dependentSchemas",
            "propertyNames",
            "if",
            "then",
            "else",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
        ],
    ),
    (
        "unevaluated",
        &["unevaluatedProperties", "unevaluatedItems"],
    ),
];

/// The vocabulary a `$vocabulary` URI names, when it is a standard one.
fn standard(uri: &str) -> Option<&'static str> {
    let u = uri
        .strip_prefix("https://json-schema.org/draft/")
        .or_else(|| uri.strip_prefix("http://json-schema.org/draft/"))?;
    let name = u
        .strip_prefix("2020-12/vocab/")
        .or_else(|| u.strip_prefix("2019-09/vocab/"))?;
    KNOWN.iter().find(|k| **k == name).copied()
}

impl<'o> Lowering<'o> {
    /// The custom meta-schema document of the resource holding `loc`, if it names one this
    /// compiler knows: its `$schema` URI and the document.
    pub(super) fn custom_meta_schema(&mut self, loc: &Loc) -> Option<(String, &'o Value)> {
        let (base, _) = self.scope_of(loc);
        let root = self.resources.get(&without_fragment(&base))?.clone();
        let uri = pointer_get(self.docs[root.0], &root.1)?
            .get("$schema")?
            .as_str()?
            .to_string();
        if super::refs::draft_of_schema_uri(&uri).is_some() {
            return None;
        }
        let remotes: &'o _ = self.remotes;
        let doc = remotes
            .get(&uri)
            .or_else(|| remotes.get(uri.trim_end_matches('#')))?;
        Some((uri, doc))
    }

    /// The keywords that are annotations at `loc` because its meta-schema leaves their
    /// vocabulary out, or why that meta-schema cannot be followed.
    pub(super) fn keywords_off(&mut self, loc: &Loc) -> Result<Vec<&'static str>, String> {
        let Some((uri, meta)) = self.custom_meta_schema(loc) else {
            return Ok(Vec::new());
        };
        let Some(vocabulary) = meta.get("$vocabulary") else {
            return Ok(Vec::new());
        };
        let Some(vocabulary) = vocabulary.as_object() else {
            return Err(format!("`$vocabulary` of `{uri}` is not an object"));
        };
        let mut listed = Vec::new();
        for (v, required) in vocabulary {
            match standard(v) {
                Some(name) => listed.push(name),
                None if required.as_bool() == Some(true) => {
                    return Err(format!(
                        "custom meta-schema `{uri}` requires the vocabulary `{v}`, which is not \
                         supported"
                    ));
                }
                None => {}
            }
        }
        Ok(VOCABULARY_KEYWORDS
            .iter()
            .filter(|(name, _)| !listed.contains(name))
            .flat_map(|(_, keywords)| keywords.iter().copied())
            .collect())
    }
}
