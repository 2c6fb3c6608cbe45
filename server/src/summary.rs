//! Shorter stand-ins for a schema that is too long to paste into the prompt.
//!
//! The schema in the prompt only tells the model what is wanted; the constraint enforces the
//! whole schema whatever the prompt says. So when the schema would take the room the answer
//! needs, the prompt gets a summary instead: the schema without annotations, then with its
//! nesting and its lists (properties, enum values, alternatives) cut shorter and shorter, and
//! at last only its type. [`candidates`] lists them, longest first; the model thread takes the
//! first that fits.

use serde_json::{Map, Value, json};

/// Keywords that only annotate: dropped from every summary.
const ANNOTATIONS: [&str; 8] = [
    "description",
    "title",
    "examples",
    "$comment",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// The schema, then ever shorter summaries of it, without repeats: without annotations; cut
/// at depth 6 and to 32 entries per list; at depth 3 and 8 entries; its type alone.
pub(crate) fn candidates(schema: &Value) -> Vec<Value> {
    let mut out = vec![schema.clone()];
    for (depth, items) in [(usize::MAX, usize::MAX), (6, 32), (3, 8), (0, 0)] {
        let s = shrink(schema, depth, items);
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// `v` without annotations, with subschemas below `depth` levels reduced to their `type`,
/// and lists and maps cut to their first `items` entries.
fn shrink(v: &Value, depth: usize, items: usize) -> Value {
    let Value::Object(map) = v else {
        return v.clone();
    };
    if depth == 0 {
        return match map.get("type") {
            Some(t) => json!({"type": t}),
            None => json!({}),
        };
    }
    let mut out = Map::new();
    for (k, val) in map {
        let k = k.as_str();
        if ANNOTATIONS.contains(&k) {
            continue;
        }
        let val = match (k, val) {
            ("type" | "const", _) => val.clone(),
            (_, Value::Object(m)) if SCHEMA_MAPS.contains(&k) => Value::Object(
                m.iter()
                    .take(items)
                    .map(|(name, s)| (name.clone(), shrink(s, depth - 1, items)))
                    .collect(),
            ),
            ("enum" | "required", Value::Array(a)) => {
                Value::Array(a.iter().take(items).cloned().collect())
            }
            // anyOf, oneOf, allOf, prefixItems: lists of subschemas.
            (_, Value::Array(a)) => Value::Array(
                a.iter()
                    .take(items)
                    .map(|s| shrink(s, depth - 1, items))
                    .collect(),
            ),
            // items, additionalProperties, not, if/then/else, …
            (_, Value::Object(_)) => shrink(val, depth - 1, items),
            _ => val.clone(),
        };
        out.insert(k.to_string(), val);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_get_shorter_and_end_with_the_type() {
        let props: Map<String, Value> = (0..100)
            .map(|i| {
                (
                    format!("field_{i}"),
                    json!({"type": "string", "description": "a long description of the field",
                        "enum": (0..50).map(|j| format!("v{j}")).collect::<Vec<_>>()}),
                )
            })
            .collect();
        let schema = json!({"type": "object", "title": "big", "properties": props,
            "required": ["field_0", "field_1"]});
        let c = candidates(&schema);
        assert_eq!(c[0], schema);
        let lens: Vec<usize> = c.iter().map(|s| s.to_string().len()).collect();
        assert!(lens.windows(2).all(|w| w[1] < w[0]), "{lens:?}");
        assert_eq!(c.last(), Some(&json!({"type": "object"})));
        // No annotation survives the first summary; the structure does.
        let stripped = &c[1];
        assert!(!stripped.to_string().contains("description"));
        assert_eq!(stripped["properties"]["field_99"]["enum"][49], "v49");
        assert_eq!(stripped["required"], json!(["field_0", "field_1"]));
        // Cut summaries keep the first entries of each list.
        assert_eq!(c[2]["properties"].as_object().unwrap().len(), 32);
        assert_eq!(c[2]["properties"]["field_0"]["enum"][31], "v31");
        assert!(c[2]["properties"]["field_0"]["enum"].get(32).is_none());
    }

    #[test]
    fn a_small_schema_has_few_candidates() {
        let schema = json!({"type": "integer"});
        assert_eq!(candidates(&schema), vec![schema]);
        let schema = json!(true);
        assert_eq!(candidates(&schema), vec![schema]);
    }
}
