//! Hand-written schemas covering each kind of lexeme and frame, with valid instances.

use serde_json::{Value, json};

/// A schema and valid instances, in compact text.
pub struct Case {
    /// A short name.
    pub name: &'static str,
    /// The schema.
    pub schema: Value,
    /// Valid instances, compact.
    pub valid: &'static [&'static str],
}

/// Every case.
pub fn cases() -> Vec<Case> {
    let many_keys: serde_json::Map<String, Value> = [
        "alpha",
        "alphabet",
        "alpine",
        "alp",
        "beta",
        "bet",
        "betamax",
        "gamma",
        "gam",
        "delta",
        "del",
        "deltas",
        "epsilon",
        "id",
        "ids",
        "identifier",
        "name",
        "names",
        "named",
        "namespace",
        "type",
        "types",
        "typed",
        "value",
        "values",
        "valid",
        "validate",
        "k0",
        "k1",
        "k10",
        "k11",
        "k2",
        "k20",
        "long_key_with_underscores",
        "long_key_with_dashes",
        "ÿñíçødé",
        "quote\"d",
        "back\\slash",
    ]
    .into_iter()
    .map(|k| (k.to_owned(), json!({"type": "integer"})))
    .collect();
    vec![
        Case {
            name: "free string",
            schema: json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": false
            }),
            valid: &[
                r#"{"name":"Zoë \"Q\" \\ \u00e9\ud83d\ude00 😀 end"}"#,
                r#"{"name":""}"#,
            ],
        },
        Case {
            name: "bounded strings",
            schema: json!({
                "type": "object",
                "properties": {
                    "code": {"type": "string", "minLength": 2, "maxLength": 5},
                    "tag": {"type": "string", "maxLength": 1},
                    "long": {"type": "string", "minLength": 3}
                },
                "required": ["code", "tag", "long"],
                "additionalProperties": false
            }),
            valid: &[r#"{"code":"é\"c","tag":"","long":"abcdef\n"}"#],
        },
        Case {
            // The same key and string lexers again and again, under frames that allow less each
            // time: a key already seen, a property count reached, a shorter bound on the same
            // pattern.
            name: "same lexers, other frames",
            schema: json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string", "pattern": "^[^,]*$", "maxLength": 6},
                        "b": {"type": "string", "pattern": "^[^,]*$", "maxLength": 2},
                        "c": {"type": "string"}
                    },
                    "required": ["a", "b"],
                    "maxProperties": 2,
                    "additionalProperties": false
                }
            }),
            valid: &[r#"[{"a":"abcdef","b":"xy"},{"b":"","a":"é\"1"},{"a":"a b","b":"c"}]"#],
        },
        Case {
            name: "pattern",
            schema: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3,5}$"},
                    "slug": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 12}
                },
                "required": ["id", "slug"]
            }),
            valid: &[r#"{"id":"AB-1234","slug":"ab-cd"}"#],
        },
        Case {
            name: "formats",
            schema: json!({
                "type": "object",
                "properties": {
                    "when": {"type": "string", "format": "date-time"},
                    "day": {"type": "string", "format": "date"},
                    "mail": {"type": "string", "format": "email"},
                    "uid": {"type": "string", "format": "uuid"}
                },
                "required": ["when", "day", "mail", "uid"],
                "additionalProperties": false
            }),
            valid: &[
                r#"{"when":"2024-02-29T12:30:00Z","day":"1999-12-31","mail":"a.b@c.io","uid":"123e4567-e89b-12d3-a456-426614174000"}"#,
            ],
        },
        Case {
            name: "enum",
            schema: json!({
                "type": "object",
                "properties": {
                    "color": {"enum": ["red", "green", "greenish", "blue", 42, null, {"a": 1}]},
                    "size": {"const": "XL"}
                },
                "required": ["color", "size"],
                "additionalProperties": false
            }),
            valid: &[
                r#"{"color":"greenish","size":"XL"}"#,
                r#"{"color":{"a":1},"size":"XL"}"#,
            ],
        },
        Case {
            name: "numbers",
            schema: json!({
                "type": "object",
                "properties": {
                    "x": {"type": "number", "minimum": -1.5, "exclusiveMaximum": 100},
                    "n": {"type": "integer", "minimum": 0, "maximum": 999},
                    "m": {"type": "integer", "multipleOf": 5},
                    "f": {"type": "number"}
                },
                "required": ["x", "n", "m", "f"],
                "additionalProperties": false
            }),
            valid: &[r#"{"x":-1.25,"n":120,"m":-35,"f":6.02e23}"#],
        },
        Case {
            // Each item's number is in the same obligations and states, but once one item is
            // 12 no other may be: the number ended on trial decides.
            name: "numbers counted by maxContains",
            schema: json!({
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 99},
                "contains": {"const": 12},
                "maxContains": 1
            }),
            valid: &["[12,5,7]", "[3,12,40]"],
        },
        Case {
            // Ranges whose DFAs class digits apart, numbers under `oneOf` and `not`, one number
            // after another in an array, numeric enum members: the kernel walks numeric tokens
            // by the classes the obligations give.
            name: "numbers by class",
            schema: json!({
                "type": "object",
                "properties": {
                    "r": {"type": "integer", "minimum": 17, "maximum": 254},
                    "o": {"oneOf": [
                        {"type": "integer", "maximum": 5},
                        {"type": "number", "minimum": 3.25}
                    ]},
                    "n": {"not": {"type": "integer", "minimum": 100}},
                    "a": {
                        "type": "array",
                        "items": {"type": "number", "exclusiveMinimum": -0.5, "maximum": 1000}
                    },
                    "e": {"enum": [10, 105, 0.25, -7]}
                },
                "required": ["r", "o", "n", "a", "e"],
                "additionalProperties": false
            }),
            valid: &[
                r#"{"r":199,"o":2,"n":99.5,"a":[0,12.75,999,100],"e":105}"#,
                r#"{"r":17,"o":1234.5,"n":-3,"a":[],"e":0.25}"#,
            ],
        },
        Case {
            name: "nested objects with defaults",
            schema: json!({
                "type": "object",
                "properties": {
                    "user": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer"},
                            "role": {"type": "string", "default": "guest"},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["id"],
                        "additionalProperties": false
                    },
                    "active": {"type": "boolean", "default": true}
                },
                "required": ["user"],
                "additionalProperties": false
            }),
            valid: &[
                r#"{"user":{"id":7,"tags":["a","b"]},"active":false}"#,
                r#"{"user":{"role":"admin","id":-3}}"#,
            ],
        },
        Case {
            name: "oneOf and anyOf of objects",
            schema: json!({
                "type": "object",
                "properties": {
                    "shape": {"oneOf": [
                        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                         "required": ["kind", "r"], "additionalProperties": false},
                        {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"}, "h": {"type": "number"}},
                         "required": ["kind", "w", "h"], "additionalProperties": false}
                    ]},
                    "label": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}, {"type": "null"}]}
                },
                "required": ["shape", "label"]
            }),
            valid: &[
                r#"{"shape":{"kind":"rect","w":2,"h":3.5},"label":"abc"}"#,
                r#"{"shape":{"kind":"circle","r":1},"label":12}"#,
            ],
        },
        Case {
            // One alternative's string ends where another's goes on: after `"ab` (or
            // `"Feature`) the content that continues the longer value is allowed and the rest
            // is not, so no code-point budget describes the mask.
            name: "alternatives whose strings share a prefix",
            schema: json!({
                "type": "object",
                "properties": {
                    "t": {"anyOf": [
                        {"type": "object", "required": ["t"], "properties": {"t": {"const": "ab"}}},
                        {"type": "object", "required": ["t"], "properties": {"t": {"const": "abXYZ"}}}
                    ]},
                    "g": {"oneOf": [
                        {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["Feature"]}}},
                        {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["FeatureCollection"]}}}
                    ]}
                }
            }),
            valid: &[
                r#"{"t":{"t":"abXYZ"},"g":{"type":"FeatureCollection"}}"#,
                r#"{"t":{"t":"ab"},"g":{"type":"Feature"}}"#,
            ],
        },
        Case {
            name: "arrays with bounds",
            schema: json!({
                "type": "array",
                "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
                "minItems": 2,
                "maxItems": 3
            }),
            valid: &["[[1],[-2,30]]", "[[0,0],[1],[2]]"],
        },
        Case {
            name: "unique items",
            schema: json!({
                "type": "object",
                "properties": {
                    "words": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                    "nums": {"type": "array", "items": {"type": "number"}, "uniqueItems": true}
                },
                "required": ["words", "nums"],
                "additionalProperties": false
            }),
            valid: &[r#"{"words":["a","b","ab"],"nums":[1,1.5,10]}"#],
        },
        Case {
            name: "many literal keys",
            schema: json!({
                "type": "object",
                "properties": many_keys,
                "required": ["alphabet"],
                "additionalProperties": false
            }),
            valid: &[r#"{"alphabet":1,"k1":2,"namespace":3,"quote\"d":4,"ÿñíçødé":5}"#],
        },
        Case {
            // Keys that take any content: the quote tokens are classed by what ending the key
            // leads to, and a key that repeats an earlier one outside the properties is told
            // apart by its text alone.
            name: "open object",
            schema: json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
                "required": ["name"],
                "additionalProperties": true
            }),
            // Tokens such as `)":` and `.",` end keys that are not properties: once `)` and
            // `.` are keys, those tokens must be refused.
            valid: &[
                r#"{"name":"x",")":1,"x":2,".":[3],"id":3,"":4,"y":5}"#,
                r#"{"type":"a","data":{"name":"b",")":[1],"z":0},"value":true,"name":""}"#,
            ],
        },
        Case {
            name: "property names",
            schema: json!({
                "type": "object",
                "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 6},
                "additionalProperties": {"type": "integer"},
                "minProperties": 1
            }),
            valid: &[r#"{"abc":1,"zz":-2}"#],
        },
        Case {
            name: "pattern properties",
            schema: json!({
                "type": "object",
                "properties": {"fixed": {"type": "boolean"}},
                "patternProperties": {"^x-": {"type": "string"}, "^n[0-9]+$": {"type": "number"}},
                "additionalProperties": false
            }),
            valid: &[r#"{"x-a":"v","n12":3,"fixed":true}"#],
        },
        Case {
            // `.` and `\S` tell the Unicode spaces apart from other non-ASCII characters.
            name: "text patterns",
            schema: json!({
                "type": "object",
                "properties": {
                    "line": {"type": "string", "pattern": "^.*$"},
                    "word": {"type": "string", "pattern": "^\\S+$", "maxLength": 8},
                    "tags": {
                        "type": "object",
                        "patternProperties": {".+": {"type": "string", "pattern": "^[^\\s]+"}},
                        "additionalProperties": false
                    },
                    "headers": {
                        "type": "object",
                        "patternProperties": {"^method\\.response\\..+$": {"enum": ["true"]}},
                        "additionalProperties": false
                    }
                },
                "required": ["line", "word"]
            }),
            valid: &[
                "{\"line\":\"a b,\u{a0}c\\u00e9\",\"word\":\"x/\u{e9}y\",\"tags\":{\"k \u{e9}\":\"v w\"},\
                 \"headers\":{\"method.response.a b\":\"true\"}}",
            ],
        },
        Case {
            // Bounded repetitions give exact budgets: names of at most six letters, digits, `_`
            // or `-` (but a literal name may be longer), codes of two to five.
            name: "bounded names",
            schema: json!({
                "type": "object",
                "properties": {
                    "abcdefgh": {"type": "integer"},
                    "code_list": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^[a-z0-9]{2,5}$"}
                    },
                    "label_text": {"type": "string", "pattern": "^.{0,4}$"}
                },
                "patternProperties": {"^[0-9a-zA-Z_-]{1,6}$": {"type": "boolean"}},
                "additionalProperties": false
            }),
            valid: &[
                r#"{"Ab_9-z":true,"abcdefgh":1,"code_list":["ab","x1y2z"],"label_text":"é b"}"#,
                r#"{"abcdef":false,"a":true,"label_text":""}"#,
            ],
        },
        Case {
            // ASCII classes with a space take the space level: letters, digits and the space.
            name: "ascii with spaces",
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "pattern": "^[\\w\\s/.,:-]+$"},
                    "url": {
                        "type": "string",
                        "pattern": "^(https?:\\/\\/)?([\\da-z\\.-]+)\\.([a-z\\.]{2,6})([\\/\\w \\.-]*)*\\/?$"
                    },
                    "names": {
                        "type": "object",
                        "patternProperties": {"^[A-Za-z0-9 ]+$": {"type": "integer"}},
                        "additionalProperties": false
                    }
                },
                "required": ["path"]
            }),
            valid: &[
                r#"{"path":"a b/c.d, e:f-g","url":"http://ex.am-ple.org/a b/c.d","names":{"Ab 9":1}}"#,
            ],
        },
        Case {
            name: "any value",
            schema: json!({}),
            valid: &[r#"{"a":[1,2.5e3,true,null,"x\t"],"b":{}}"#, "-0.5"],
        },
    ]
}
