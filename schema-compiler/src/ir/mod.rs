//! Schema documents to an intermediate representation: resolved references, typed keywords.
//!
//! [`Lowering`] indexes every schema resource (`$id`, `id`, `$anchor`, plain-name fragments) of
//! the root document and of the documents registered as remotes, then turns each schema
//! location into a [`Node`] with its keywords parsed and checked. `$ref` becomes an `allOf`
//! member (2019-09 and later) or replaces its siblings (draft 7 and earlier); `$dynamicRef`
//! too, resolved in the dynamic scope (a location is lowered once per scope it is met in).
//! Recursive references simply make the node graph cyclic; nothing is unrolled here.
//!
//! Keywords are sorted into four kinds: implemented (parsed into [`Node`]), annotations
//! (ignored), standard keywords this compiler does not implement (an error in strict mode, a
//! listed relaxation in lenient mode) and unknown keywords (annotations by the specification:
//! ignored and listed in the report).
//!
//! The node types and the lowering driver are here; `$ref` resolution is in `refs.rs`, the
//! keywords of a schema object in `keywords.rs`, `unevaluated*` in `unevaluated.rs` and
//! custom meta-schemas' vocabularies in `vocabulary.rs`.

mod keywords;
mod refs;
mod unevaluated;
mod vocabulary;

use keywords::kind;
use refs::{DEFAULT_BASE, escape_token, pointer_get};

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use url::Url;

use crate::error::CompileError;
use crate::json_text::RoundedNumbers;
use crate::options::{Draft, Options};
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
    /// `unevaluatedProperties` and `unevaluatedItems` as written. What they assert is lowered
    /// into an `allOf` member (see `unevaluated.rs`); they are kept for the annotations they
    /// produce, which an enclosing schema's own `unevaluated*` reads.
    pub unevaluated_properties: Option<NodeId>,
    pub unevaluated_items: Option<NodeId>,
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
const UNIMPLEMENTED: &[&str] = &["$dynamicRef", "$recursiveRef", "$vocabulary"];

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
    /// The documents: the root, then those loaded by reference (borrowed, never copied).
    docs: Vec<&'o Value>,
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
    /// Values that number literals of the schema's text were rounded to when read.
    rounded: &'o RoundedNumbers,
    /// The node of each location in each dynamic scope (an index into `scopes`).
    memo: HashMap<(Loc, usize), NodeId>,
    /// `$dynamicAnchor`s by the resource (its root location) that defines them.
    dynamic_anchors: HashMap<Loc, Vec<(String, Loc)>>,
    /// Dynamic scopes met so far: for each anchor name, the location of its outermost
    /// `$dynamicAnchor` among the resources entered (scope 0 is empty).
    scopes: Vec<Vec<(String, Loc)>>,
    /// The dynamic scope of the location being lowered.
    scope_now: usize,
    /// How deep `lower` is nested right now.
    lowering_depth: u32,
    /// Nodes whose schema object is being lowered (their node is still a placeholder).
    in_progress: HashSet<NodeId>,
    pub nodes: Vec<Node>,
    pub notes: Vec<Note>,
}

impl<'o> Lowering<'o> {
    /// Prepares lowering of `root` with `remotes` available for references by URI.
    pub fn new(
        root: &'o Value,
        options: &'o Options,
        remotes: &'o HashMap<String, Value>,
        rounded: &'o RoundedNumbers,
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
            rounded,
            memo: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            scopes: vec![Vec::new()],
            scope_now: 0,
            lowering_depth: 0,
            in_progress: HashSet::new(),
            nodes: Vec::new(),
            notes: Vec::new(),
        };
        let base = Url::parse(DEFAULT_BASE).expect("constant URL");
        l.add_document(root, base)?;
        Ok(l)
    }

    fn loc_string(&self, loc: &Loc) -> String {
        if loc.0 == 0 {
            format!("#{}", loc.1)
        } else {
            format!("{}#{}", self.doc_base[loc.0], loc.1)
        }
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
        // Entering a resource with `$dynamicAnchor`s adds those not in scope yet: the
        // outermost one of each name is what a `$dynamicRef` to it resolves to.
        let outer = self.scope_now;
        if let Some(anchors) = self.dynamic_anchors.get(&loc) {
            let mut scope = self.scopes[outer].clone();
            for (name, at) in anchors {
                if !scope.iter().any(|(n, _)| n == name) {
                    scope.push((name.clone(), at.clone()));
                }
            }
            self.scope_now = match self.scopes.iter().position(|s| *s == scope) {
                Some(i) => i,
                None => {
                    self.scopes.push(scope);
                    self.scopes.len() - 1
                }
            };
        }
        let r = self.lower_in_scope(loc);
        self.scope_now = outer;
        r
    }

    /// The outermost `$dynamicAnchor` named `name` in the dynamic scope.
    fn dynamic_anchor(&self, name: &str) -> Option<Loc> {
        self.scopes[self.scope_now]
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, at)| at.clone())
    }

    fn lower_in_scope(&mut self, loc: Loc) -> Result<NodeId, CompileError> {
        if let Some(&id) = self.memo.get(&(loc.clone(), self.scope_now)) {
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
        let value = pointer_get(self.docs[loc.0], &loc.1)
            .cloned()
            .ok_or_else(|| CompileError::Invalid {
                keyword: "$ref".into(),
                pointer: self.loc_string(&loc),
                reason: "no schema at this location".into(),
            })?;
        let id = self.push(Node::True)?;
        self.memo.insert((loc.clone(), self.scope_now), id);
        let node = match &value {
            Value::Bool(true) => Node::True,
            Value::Object(obj) if obj.is_empty() => Node::True,
            Value::Bool(false) => Node::False,
            Value::Object(obj) => {
                self.in_progress.insert(id);
                let s = self.lower_object(&loc, obj);
                self.in_progress.remove(&id);
                Node::Schema(Box::new(s?))
            }
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
