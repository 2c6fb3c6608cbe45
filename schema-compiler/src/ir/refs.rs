//! References: indexing the resources of each document (`$id`, `id`, `$anchor`, plain-name
//! fragments) and resolving a `$ref` to a location, with the draft that applies there.

use serde_json::Value;
use url::Url;

use crate::error::CompileError;
use crate::options::Draft;

use super::{Loc, Lowering};

pub(super) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

pub(super) fn unescape_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

pub(super) fn draft_of_schema_uri(uri: &str) -> Option<Draft> {
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
pub(super) fn pointer_get<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
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

pub(super) fn percent_decode(s: &str) -> String {
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

pub(super) fn without_fragment(u: &Url) -> String {
    let mut u = u.clone();
    u.set_fragment(None);
    u.to_string()
}

/// The default base URI of a document without `$id`.
pub(super) const DEFAULT_BASE: &str = "stencil:///root.json";

impl<'o> Lowering<'o> {
    pub(super) fn add_document(
        &mut self,
        value: &'o Value,
        base: Url,
    ) -> Result<usize, CompileError> {
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
    pub(super) fn index(
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
        let Some(value) = pointer_get(self.docs[doc], &ptr) else {
            return Ok(());
        };
        let Value::Object(obj) = value else {
            self.scope.insert(loc, (base, draft));
            return Ok(());
        };
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
        if draft >= Draft::Draft2020
            && let Some(a) = obj.get("$dynamicAnchor").and_then(Value::as_str)
            && let Some(root) = self.resources.get(&without_fragment(&base)).cloned()
        {
            self.dynamic_anchors
                .entry(root)
                .or_default()
                .push((a.to_string(), loc.clone()));
        }
        self.scope.insert(loc, (base.clone(), draft));
        for (key, sub) in obj {
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
    pub(super) fn scope_of(&mut self, loc: &Loc) -> (Url, Draft) {
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
    pub(super) fn resolve_ref(&mut self, loc: &Loc, reference: &str) -> Result<Loc, CompileError> {
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
                let remotes = self.remotes;
                let doc = remotes
                    .get(&res_uri)
                    .or_else(|| remotes.get(res_uri.trim_end_matches('#')))
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
            if pointer_get(self.docs[res.0], &ptr).is_none() {
                return Err(unresolved(self, format!("no value at pointer `{frag}`")));
            }
            return Ok((res.0, ptr));
        }
        self.anchors
            .get(&format!("{res_uri}#{frag}"))
            .cloned()
            .ok_or_else(|| unresolved(self, format!("no anchor `{frag}` in `{res_uri}`")))
    }
}
