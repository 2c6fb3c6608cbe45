//! Schema documents to an intermediate representation: resolved references, typed keywords.
//!
//! [`Lowering`] indexes every schema resource (`$id`, `id`, `$anchor`, plain-name fragments) of
//! the root document and of the documents registered as remotes, then turns each schema
//! location into a [`Node`] with its keywords parsed and checked. `$ref` becomes an `allOf`
//! member (2019-09 and later) or replaces its siblings (draft 7 and earlier). Recursive
//! references simply make the node graph cyclic; nothing is unrolled here.
//!
//! Keywords are sorted into four kinds: implemented (parsed into [`Node`]), annotations
//! (ignored), standard keywords this compiler does not implement (an error in strict mode, a
//! listed relaxation in lenient mode) and unknown keywords (annotations by the specification:
//! ignored and listed in the report).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use url::Url;

use crate::error::CompileError;
use crate::options::{Draft, FormatMode, Options};
use crate::report::{Note, NoteKind};
use crate::text::decimal::Decimal;

/// Index of a [`Node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Bit set of JSON types a node admits (`type` keyword).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TypeSet(pub u8);

impl TypeSet {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    /// Integral numbers only.
    pub const INTEGER: u8 = 4;
    /// All numbers.
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    fn from_name(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }
}

/// One end of a numeric range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub value: Decimal,
    pub inclusive: bool,
}

/// A schema object with its keywords parsed. Absent keywords have neutral values.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Location, for error messages (`#/properties/a`, or `uri#/...` for other documents).
    pub loc: String,
    pub types: Option<TypeSet>,
    /// `enum` and `const` combined (`None`: no restriction).
    pub enum_values: Option<Vec<Value>>,
    // Strings.
    pub min_length: u64,
    pub max_length: Option<u64>,
    /// ECMA-262 patterns, all of which must match.
    pub patterns: Vec<String>,
    pub format: Option<String>,
    // Numbers.
    pub lower: Vec<Bound>,
    pub upper: Vec<Bound>,
    pub multiple_of: Vec<Decimal>,
    // Objects.
    pub properties: Vec<(String, NodeId)>,
    /// [`ANY_ORDER_KEYWORD`] says `"any"`: the members may come in any order, even under
    /// [`crate::PropertyOrder::Schema`].
    pub any_order: bool,
    pub pattern_properties: Vec<(String, NodeId)>,
    pub additional_properties: Option<NodeId>,
    pub required: Vec<String>,
    pub min_properties: u64,
    pub max_properties: Option<u64>,
    pub property_names: Option<NodeId>,
    pub dependent_required: Vec<(String, Vec<String>)>,
    pub dependent_schemas: Vec<(String, NodeId)>,
    // Arrays.
    pub prefix_items: Vec<NodeId>,
    pub items: Option<NodeId>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub contains: Option<NodeId>,
    pub min_contains: Option<u64>,
    pub max_contains: Option<u64>,
    pub unique_items: bool,
    // Applicators on the same value.
    pub all_of: Vec<NodeId>,
    pub any_of: Vec<Vec<NodeId>>,
    pub one_of: Vec<Vec<NodeId>>,
    pub not: Vec<NodeId>,
    /// `if` / `then` / `else`.
    pub conditional: Option<(NodeId, Option<NodeId>, Option<NodeId>)>,
}

impl Schema {
    pub fn has_object_keywords(&self) -> bool {
        !self.properties.is_empty()
            || !self.pattern_properties.is_empty()
            || self.additional_properties.is_some()
            || !self.required.is_empty()
            || self.min_properties > 0
            || self.max_properties.is_some()
            || self.property_names.is_some()
            || !self.dependent_required.is_empty()
            || !self.dependent_schemas.is_empty()
    }

    pub fn has_array_keywords(&self) -> bool {
        !self.prefix_items.is_empty()
            || self.items.is_some()
            || self.min_items > 0
            || self.max_items.is_some()
            || self.contains.is_some()
            || self.unique_items
    }
}

/// A node of the schema graph.
#[derive(Debug, Clone)]
pub enum Node {
    /// Accepts every value.
    True,
    /// Accepts no value.
    False,
    /// A schema object.
    Schema(Box<Schema>),
}

/// A location in one of the documents: (document index, JSON pointer).
type Loc = (usize, String);

/// Known keywords of every draft that do not assert anything.
/// An extension keyword: `"any"` lets the members of this schema's objects come in any order
/// under [`crate::PropertyOrder::Schema`] (`"schema"`, the default, keeps its order). It
/// changes no verdict: order only decides which spellings of an object are generated. See
/// [`crate::any_order`].
pub const ANY_ORDER_KEYWORD: &str = "x-stencil-property-order";

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // OpenAPI annotations.
    "discriminator",
    "example",
    "xml",
    "externalDocs",
];

/// Standard keywords that assert something and are not implemented.
const UNIMPLEMENTED: &[&str] = &[
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$vocabulary",
];

/// Formats enforced by this compiler.
pub const KNOWN_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "json-pointer",
    "relative-json-pointer",
    "uri-template",
];

/// Formats of the specification that are not enforced.
const UNSUPPORTED_FORMATS: &[&str] = &["idn-email", "idn-hostname", "regex"];

/// Turns schema documents into nodes.
pub struct Lowering<'o> {
    options: &'o Options,
    docs: Vec<Value>,
    /// Base URI of each document.
    doc_base: Vec<Url>,
    /// Resource URI (no fragment) to its root location.
    resources: HashMap<String, Loc>,
    /// `uri#anchor` to location.
    anchors: HashMap<String, Loc>,
    /// Base URI and draft at each indexed schema location.
    scope: HashMap<Loc, (Url, Draft)>,
    /// Subschemas whose `$schema` chose their draft: document roots and embedded resources.
    schema_roots: HashSet<Loc>,
    /// Documents that may be loaded on demand, by URI.
    remotes: &'o HashMap<String, Value>,
    memo: HashMap<Loc, NodeId>,
    /// How deep `lower` is nested right now.
    lowering_depth: u32,
    pub nodes: Vec<Node>,
    pub notes: Vec<Note>,
}

fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn unescape_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn draft_of_schema_uri(uri: &str) -> Option<Draft> {
    let u = uri.trim_end_matches('#');
    let u = u
        .strip_prefix("https://")
        .or_else(|| u.strip_prefix("http://"))
        .unwrap_or(u);
    Some(match u {
        // A hyper-schema validates as its draft's schema; its link keywords are annotations.
        "json-schema.org/draft-04/schema" | "json-schema.org/draft-04/hyper-schema" => {
            Draft::Draft4
        }
        "json-schema.org/draft-06/schema" | "json-schema.org/draft-06/hyper-schema" => {
            Draft::Draft6
        }
        "json-schema.org/draft-07/schema" | "json-schema.org/draft-07/hyper-schema" => {
            Draft::Draft7
        }
        "json-schema.org/draft/2019-09/schema" | "json-schema.org/draft/2019-09/hyper-schema" => {
            Draft::Draft2019
        }
        "json-schema.org/draft/2020-12/schema" | "json-schema.org/draft/2020-12/hyper-schema" => {
            Draft::Draft2020
        }
        _ => return None,
    })
}

/// Resolves a pointer inside `root`.
fn pointer_get<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let mut v = root;
    for token in pointer.strip_prefix('/')?.split('/') {
        let t = unescape_token(token);
        v = match v {
            Value::Object(m) => m.get(&t)?,
            Value::Array(a) => {
                if t.len() > 1 && t.starts_with('0') {
                    return None;
                }
                a.get(t.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(v)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (
                (bytes[i + 1] as char).to_digit(16),
                (bytes[i + 2] as char).to_digit(16),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn without_fragment(u: &Url) -> String {
    let mut u = u.clone();
    u.set_fragment(None);
    u.to_string()
}

/// The default base URI of a document without `$id`.
const DEFAULT_BASE: &str = "stencil:///root.json";

impl<'o> Lowering<'o> {
    /// Prepares lowering of `root` with `remotes` available for references by URI.
    pub fn new(
        root: &Value,
        options: &'o Options,
        remotes: &'o HashMap<String, Value>,
    ) -> Result<Self, CompileError> {
        let mut l = Lowering {
            options,
            docs: Vec::new(),
            doc_base: Vec::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            scope: HashMap::new(),
            schema_roots: HashSet::new(),
            remotes,
            memo: HashMap::new(),
            lowering_depth: 0,
            nodes: Vec::new(),
            notes: Vec::new(),
        };
        let base = Url::parse(DEFAULT_BASE).expect("constant URL");
        l.add_document(root.clone(), base)?;
        Ok(l)
    }

    fn loc_string(&self, loc: &Loc) -> String {
        if loc.0 == 0 {
            format!("#{}", loc.1)
        } else {
            format!("{}#{}", self.doc_base[loc.0], loc.1)
        }
    }

    fn add_document(&mut self, value: Value, base: Url) -> Result<usize, CompileError> {
        let doc = self.docs.len();
        let draft = match value.get("$schema").and_then(Value::as_str) {
            Some(s) => draft_of_schema_uri(s).unwrap_or(self.options.default_draft),
            None => self.options.default_draft,
        };
        self.resources
            .insert(without_fragment(&base), (doc, String::new()));
        self.docs.push(value);
        self.doc_base.push(base.clone());
        self.index(doc, String::new(), base, draft)?;
        Ok(doc)
    }

    /// Records base URIs, resources and anchors of the schema at `(doc, ptr)` and below.
    fn index(
        &mut self,
        doc: usize,
        ptr: String,
        mut base: Url,
        mut draft: Draft,
    ) -> Result<(), CompileError> {
        let loc = (doc, ptr.clone());
        if self.scope.contains_key(&loc) {
            return Ok(());
        }
        let Some(value) = pointer_get(&self.docs[doc], &ptr) else {
            return Ok(());
        };
        let Value::Object(obj) = value else {
            self.scope.insert(loc, (base, draft));
            return Ok(());
        };
        let obj = obj.clone();
        // `$schema` chooses the draft of a document or of an embedded resource (a subschema
        // with an identifier of the enclosing draft). Elsewhere it marks no boundary and is
        // ignored, and with it the identifier keyword of the draft it names (a draft-4 `id`
        // in a 2020-12 document changes no base URI).
        let enclosing_id_key = if draft == Draft::Draft4 { "id" } else { "$id" };
        let resource_root =
            ptr.is_empty() || obj.get(enclosing_id_key).is_some_and(Value::is_string);
        if resource_root && let Some(s) = obj.get("$schema").and_then(Value::as_str) {
            self.schema_roots.insert(loc.clone());
            if let Some(d) = draft_of_schema_uri(s) {
                draft = d;
            }
        }
        let ref_hides_siblings = draft <= Draft::Draft7 && obj.contains_key("$ref");
        let id_key = if draft == Draft::Draft4 { "id" } else { "$id" };
        if !ref_hides_siblings && let Some(id) = obj.get(id_key).and_then(Value::as_str) {
            match base.join(id) {
                Ok(u) => {
                    let frag = u.fragment().unwrap_or("").to_string();
                    if frag.is_empty() {
                        base = u.clone();
                        base.set_fragment(None);
                        self.resources.insert(without_fragment(&u), loc.clone());
                    } else if draft <= Draft::Draft7 {
                        // Location-independent identifier: a plain-name fragment.
                        let mut res = u.clone();
                        res.set_fragment(None);
                        if res.as_str() != without_fragment(&base) {
                            base = res.clone();
                            self.resources.insert(res.to_string(), loc.clone());
                        }
                        self.anchors
                            .insert(format!("{}#{}", res, percent_decode(&frag)), loc.clone());
                    }
                }
                Err(e) => {
                    return Err(CompileError::Invalid {
                        keyword: id_key.into(),
                        pointer: self.loc_string(&loc),
                        reason: format!("not a URI reference: {e}"),
                    });
                }
            }
        }
        if draft >= Draft::Draft2019 {
            for key in ["$anchor", "$dynamicAnchor"] {
                if let Some(a) = obj.get(key).and_then(Value::as_str) {
                    self.anchors
                        .insert(format!("{}#{}", without_fragment(&base), a), loc.clone());
                }
            }
        }
        self.scope.insert(loc, (base.clone(), draft));
        for (key, sub) in &obj {
            let kptr = format!("{}/{}", ptr, escape_token(key));
            match key.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" | "dependencies" => {
                    if let Value::Object(m) = sub {
                        for k in m.keys() {
                            let p = format!("{}/{}", kptr, escape_token(k));
                            self.index(doc, p, base.clone(), draft)?;
                        }
                    }
                }
                "additionalProperties"
                | "additionalItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contentSchema" => {
                    self.index(doc, kptr, base.clone(), draft)?;
                }
                "items" | "allOf" | "anyOf" | "oneOf" | "prefixItems" => match sub {
                    Value::Array(a) => {
                        for i in 0..a.len() {
                            self.index(doc, format!("{kptr}/{i}"), base.clone(), draft)?;
                        }
                    }
                    _ => self.index(doc, kptr, base.clone(), draft)?,
                },
                _ => {}
            }
        }
        Ok(())
    }

    /// Base URI and draft for a location: its own if indexed, else the nearest indexed parent.
    fn scope_of(&mut self, loc: &Loc) -> (Url, Draft) {
        if let Some(s) = self.scope.get(loc) {
            return s.clone();
        }
        let mut p = loc.1.clone();
        while let Some(i) = p.rfind('/') {
            p.truncate(i);
            if let Some((base, draft)) = self.scope.get(&(loc.0, p.clone())).cloned() {
                // Index the subtree now so anchors and ids below are known.
                let _ = self.index(loc.0, loc.1.clone(), base.clone(), draft);
                return self.scope.get(loc).cloned().unwrap_or((base, draft));
            }
        }
        (self.doc_base[loc.0].clone(), self.options.default_draft)
    }

    /// Resolves a `$ref` written at `loc`.
    fn resolve_ref(&mut self, loc: &Loc, reference: &str) -> Result<Loc, CompileError> {
        let (base, _) = self.scope_of(loc);
        let unresolved = |me: &Self, reason: String| CompileError::UnresolvedRef {
            reference: reference.to_string(),
            pointer: me.loc_string(loc),
            reason,
        };
        let target = base
            .join(reference)
            .map_err(|e| unresolved(self, e.to_string()))?;
        let frag = percent_decode(target.fragment().unwrap_or(""));
        let res_uri = without_fragment(&target);
        let res = match self.resources.get(&res_uri) {
            Some(r) => r.clone(),
            None => {
                let doc = self
                    .remotes
                    .get(&res_uri)
                    .or_else(|| self.remotes.get(res_uri.trim_end_matches('#')))
                    .cloned()
                    .ok_or_else(|| {
                        unresolved(self, format!("no document is known for `{res_uri}`"))
                    })?;
                let mut b = target.clone();
                b.set_fragment(None);
                let d = self.add_document(doc, b)?;
                (d, String::new())
            }
        };
        if frag.is_empty() {
            return Ok(res);
        }
        if frag.starts_with('/') {
            let ptr = format!("{}{}", res.1, frag);
            if pointer_get(&self.docs[res.0], &ptr).is_none() {
                return Err(unresolved(self, format!("no value at pointer `{frag}`")));
            }
            return Ok((res.0, ptr));
        }
        self.anchors
            .get(&format!("{res_uri}#{frag}"))
            .cloned()
            .ok_or_else(|| unresolved(self, format!("no anchor `{frag}` in `{res_uri}`")))
    }

    /// The node for the root document.
    pub fn lower_root(&mut self) -> Result<NodeId, CompileError> {
        self.lower((0, String::new()))
    }

    fn push(&mut self, node: Node) -> Result<NodeId, CompileError> {
        if self.nodes.len() >= self.options.limits.max_nodes {
            return Err(CompileError::Limit {
                limit: "max_nodes",
                pointer: "#".into(),
                detail: format!("more than {} schema nodes", self.options.limits.max_nodes),
            });
        }
        self.nodes.push(node);
        Ok(NodeId(self.nodes.len() as u32 - 1))
    }

    /// Adds a synthetic node (used by later passes).
    pub fn add_node(&mut self, node: Node) -> Result<NodeId, CompileError> {
        self.push(node)
    }

    fn lower(&mut self, loc: Loc) -> Result<NodeId, CompileError> {
        if let Some(&id) = self.memo.get(&loc) {
            return Ok(id);
        }
        if self.lowering_depth >= self.options.limits.max_schema_depth {
            return Err(CompileError::Limit {
                limit: "max_schema_depth",
                pointer: self.loc_string(&loc),
                detail: format!(
                    "subschemas nested more than {} deep",
                    self.options.limits.max_schema_depth
                ),
            });
        }
        self.lowering_depth += 1;
        let r = self.lower_at(loc);
        self.lowering_depth -= 1;
        r
    }

    fn lower_at(&mut self, loc: Loc) -> Result<NodeId, CompileError> {
        let value = pointer_get(&self.docs[loc.0], &loc.1)
            .cloned()
            .ok_or_else(|| CompileError::Invalid {
                keyword: "$ref".into(),
                pointer: self.loc_string(&loc),
                reason: "no schema at this location".into(),
            })?;
        let id = self.push(Node::True)?;
        self.memo.insert(loc.clone(), id);
        let node = match &value {
            Value::Bool(true) => Node::True,
            Value::Object(obj) if obj.is_empty() => Node::True,
            Value::Bool(false) => Node::False,
            Value::Object(obj) => Node::Schema(Box::new(self.lower_object(&loc, obj)?)),
            other => {
                return Err(CompileError::Invalid {
                    keyword: "schema".into(),
                    pointer: self.loc_string(&loc),
                    reason: format!(
                        "a schema must be an object or a boolean, not {}",
                        kind(other)
                    ),
                });
            }
        };
        self.nodes[id.0 as usize] = node;
        Ok(id)
    }

    fn child(&mut self, loc: &Loc, path: &[&str]) -> Result<NodeId, CompileError> {
        let mut p = loc.1.clone();
        for t in path {
            p.push('/');
            p.push_str(&escape_token(t));
        }
        self.lower((loc.0, p))
    }

    fn relax(&mut self, keyword: &str, loc: &Loc, reason: String) -> Result<(), CompileError> {
        if self.options.strict {
            return Err(CompileError::Unsupported {
                keyword: keyword.into(),
                pointer: self.loc_string(loc),
                reason,
            });
        }
        self.notes.push(Note {
            kind: NoteKind::Relaxed,
            keyword: keyword.into(),
            pointer: self.loc_string(loc),
            detail: reason,
        });
        Ok(())
    }

    fn lower_object(
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

        for (key, v) in obj {
            let k = key.as_str();
            if VALUE_KEYWORDS.contains(&k)
                && let Some((at, n)) = rounded_number(v, String::new())
            {
                return Err(CompileError::Unsupported {
                    keyword: k.into(),
                    pointer: here.clone(),
                    reason: format!(
                        "the number at `{k}{at}` was read as the 64-bit float {n}, which needs 17 \
                         significant digits: the number as written may have had more and been \
                         rounded, so its exact value is unknown"
                    ),
                });
            }
            match k {
                "$ref" => {}
                "$schema" => {
                    // Outside a document root or an embedded resource, `$schema` means nothing.
                    if let Some(uri) = v.as_str()
                        && (loc.1.is_empty() || self.schema_roots.contains(loc))
                        && draft_of_schema_uri(uri).is_none()
                    {
                        self.relax(
                            k,
                            loc,
                            format!("custom meta-schema `{uri}`: vocabularies are not supported"),
                        )?;
                    }
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
                    let d = Decimal::from_json_number(n).map_err(|e| invalid(k, e.to_string()))?;
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
                    let d = Decimal::from_json_number(n).map_err(|e| invalid(k, e.to_string()))?;
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
                "unevaluatedProperties" | "unevaluatedItems"
                    if *v == Value::Bool(true) || v.as_object().is_some_and(Map::is_empty) => {}
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
        Ok(s)
    }
}

/// Keywords whose numbers are compared with instance values.
const VALUE_KEYWORDS: &[&str] = &[
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The first number in `v` (and its pointer below `at`) that may have been rounded when read.
///
/// Integers that fit 64 bits are read exactly; every other number is read as the nearest
/// `f64`, and the compiler takes its shortest round-trip decimal (`0.1` as exactly `0.1`). A
/// number written with at most 16 significant digits is that decimal; one whose shortest
/// decimal needs 17 digits was written with 17 or more (`18446744073709551617`, read as
/// `18446744073709552000`), and may have lost some.
fn rounded_number(v: &Value, at: String) -> Option<(String, f64)> {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64()?;
            let text = format!("{x:e}");
            let mantissa = text.split('e').next().unwrap_or("");
            let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
            (digits >= 17).then_some((at, x))
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| rounded_number(x, format!("{at}/{i}"))),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| rounded_number(x, format!("{at}/{}", escape_token(k)))),
        _ => None,
    }
}

fn kind(v: &Value) -> &'static str {
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
fn count(v: &Value) -> Option<u64> {
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

fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}

/// JSON equality: numbers by value (`1 == 1.0`), objects regardless of key order.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (Decimal::from_json_number(x), Decimal::from_json_number(y)) {
                (Ok(x), Ok(y)) => x == y,
                _ => x == y,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

impl Lowering<'_> {
    /// The node table.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }
}
