//! Every `pattern` and `patternProperties` key in the JSONSchemaBench sample, through the
//! ECMA-262 translator and the dense DFA builder.
//!
//! The test fails when a pattern that translated before stops translating, when a pattern's
//! DFA cannot be built, or when a string that a valid test instance holds under a `pattern`
//! does not match it. Run with `--nocapture` for the report: counts, unsupported features and
//! the largest DFAs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::{Anchored, MatchKind, util::start, util::syntax};
use schema_compiler::text::ecma::{PatternError, pattern_language};
use serde_json::Value;

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("STENCIL_SHARED_DATA").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")),
        PathBuf::from,
    );
    if dir.join("jsonschemabench-sample").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: the JSONSchemaBench sample is not at {} (set STENCIL_SHARED_DATA to the \
             shared/data directory)",
            dir.join("jsonschemabench-sample").display()
        );
        None
    }
}

fn build_dfa(re: &str) -> Result<dense::DFA<Vec<u32>>> {
    Ok(dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(256 << 20))
                .determinize_size_limit(Some(256 << 20)),
        )
        .syntax(syntax::Config::new().unicode(true).utf8(true))
        .build(re)?)
}

fn full_match(dfa: &dense::DFA<Vec<u32>>, s: &str) -> bool {
    let Ok(mut state) = dfa.start_state(&start::Config::new().anchored(Anchored::Yes)) else {
        return false;
    };
    for &b in s.as_bytes() {
        state = dfa.next_state(state, b);
        if dfa.is_dead_state(state) {
            return false;
        }
    }
    dfa.is_match_state(dfa.next_eoi_state(state))
}

fn collect_patterns(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("pattern", Value::String(p)) => {
                        out.insert(p.clone());
                    }
                    ("patternProperties", Value::Object(pp)) => {
                        out.extend(pp.keys().cloned());
                    }
                    _ => {}
                }
                collect_patterns(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_patterns(x, out)),
        _ => {}
    }
}

/// Strings in `data` that sit under a `pattern` of `schema`, following `properties`,
/// `items` and `additionalProperties` (no `$ref`, no combinators).
fn isolated_strings<'a>(schema: &'a Value, data: &'a Value, out: &mut Vec<(&'a str, &'a str)>) {
    let Some(s) = schema.as_object() else { return };
    if let (Some(p), Some(d)) = (s.get("pattern").and_then(Value::as_str), data.as_str()) {
        out.push((p, d));
    }
    if let Some(obj) = data.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for (k, v) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => isolated_strings(sub, v, out),
                None => {
                    if let Some(ap) = s.get("additionalProperties")
                        && s.get("patternProperties").is_none()
                    {
                        isolated_strings(ap, v, out);
                    }
                }
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), data.as_array())
        && items.is_object()
    {
        for v in arr {
            isolated_strings(items, v, out);
        }
    }
}

/// Patterns of the sample that `pattern_language` alone is expected not to translate, with the
/// reason (the compiler still takes this one: it splits off lookaheads at the start anchor).
const EXPECTED_UNSUPPORTED: &[(&str, &str)] = &[(
    r#"^(?!.*(\{TriggerCondition\}|\{LoggingBlock\}|\{IncMeasurement\}|\{ConfigName\}|\{IncTrigger\|[0-9]*\}|["<>*?:/\\])).*\.[bB][lL][fF]$"#,
    "lookahead",
)];

#[test]
fn bench_patterns_translate_and_build() -> Result<()> {
    let Some(data) = data_dir() else {
        return Ok(());
    };
    let root = data.join("jsonschemabench-sample");
    let mut files = Vec::new();
    for split in std::fs::read_dir(&root)? {
        let split = split?.path();
        if split.is_dir() {
            for f in std::fs::read_dir(&split)? {
                files.push(f?.path());
            }
        }
    }
    files.sort();
    let mut docs = Vec::new();
    let mut patterns = BTreeSet::new();
    for f in &files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(f)?)
            .with_context(|| f.display().to_string())?;
        collect_patterns(&doc["schema"], &mut patterns);
        docs.push(doc);
    }

    let mut dfas = BTreeMap::new();
    let mut unsupported = Vec::new();
    let mut syntax_errors = Vec::new();
    let mut sizes = Vec::new();
    let t_all = Instant::now();
    for p in &patterns {
        match pattern_language(p) {
            Ok(re) => {
                let t0 = Instant::now();
                let dfa = build_dfa(&re).with_context(|| format!("building {p:?}"))?;
                sizes.push((dfa.memory_usage(), t0.elapsed().as_millis(), p.clone()));
                dfas.insert(p.clone(), dfa);
            }
            Err(PatternError::Unsupported { feature, .. }) => {
                unsupported.push((p.clone(), feature))
            }
            Err(e) => syntax_errors.push((p.clone(), e.to_string())),
        }
    }
    sizes.sort_by(|a, b| b.cmp(a));
    println!(
        "{} files, {} distinct patterns: {} translated and built, {} unsupported, {} syntax errors ({} ms in all)",
        files.len(),
        patterns.len(),
        dfas.len(),
        unsupported.len(),
        syntax_errors.len(),
        t_all.elapsed().as_millis()
    );
    for (p, f) in &unsupported {
        println!("  unsupported ({f}): {p}");
    }
    for (p, e) in &syntax_errors {
        println!("  syntax error ({e}): {p}");
    }
    println!("largest DFAs (bytes, build ms, pattern):");
    for (bytes, ms, p) in sizes.iter().take(10) {
        let short: String = p.chars().take(90).collect();
        println!("  {bytes:>9} {ms:>6}  {short}");
    }
    let total: usize = sizes.iter().map(|s| s.0).sum();
    println!("total DFA memory: {total} bytes");

    // Strings held under a pattern by valid instances must match it.
    let (mut checked, mut mismatches) = (0, Vec::new());
    for doc in &docs {
        for t in doc["tests"].as_array().into_iter().flatten() {
            if t["valid"].as_bool() != Some(true) {
                continue;
            }
            let mut found = Vec::new();
            isolated_strings(&doc["schema"], &t["data"], &mut found);
            for (p, s) in found {
                if let Some(dfa) = dfas.get(p) {
                    checked += 1;
                    if !full_match(dfa, s) {
                        mismatches.push((doc["description"].to_string(), p, s));
                    }
                }
            }
        }
    }
    println!("valid-instance strings checked against their pattern: {checked}");

    let expected: BTreeSet<(String, &str)> = EXPECTED_UNSUPPORTED
        .iter()
        .map(|(p, f)| ((*p).to_owned(), *f))
        .collect();
    let got: BTreeSet<(String, &str)> = unsupported.iter().cloned().collect();
    assert_eq!(got, expected, "unsupported patterns changed");
    assert!(
        syntax_errors.is_empty(),
        "syntax errors: {syntax_errors:#?}"
    );
    assert!(
        mismatches.is_empty(),
        "valid strings rejected: {mismatches:#?}"
    );
    assert!(checked > 0);
    Ok(())
}
