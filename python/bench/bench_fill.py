"""Per-step mask fill time through Python: Stencil, llguidance and XGrammar side by side.

    python python/bench/bench_fill.py [--tokenizer llama3] [--per-split 2] [--per-schema 2]
                                      [--json FILE]

The same tokenizer, schemas and token sequences for every engine, one after the other in one
process. Schemas: the JSONSchemaBench sample beside the repository (`shared/data`, or
`$STENCIL_SHARED_DATA`), `--per-split` per split, kept when every installed engine compiles
them. Token sequences: the sample's valid instances of each schema (`--per-schema`), written as
compact JSON, tokenized, then end of sequence; each cut to the prefix every engine accepts
(their whitespace set to compact). Each engine fills a
numpy int32 bitmask row before every token of every sequence; a step is timed around the fill
call alone, with `time.perf_counter_ns`. Compile time is not measured.

Also reported, for Stencil: the time the Rust call itself took inside each fill (so the
binding's cost per mask is the difference), and an empty call (`Matcher.is_terminated`).

An engine that is not installed is skipped, saying so (`pip install llguidance xgrammar`;
xgrammar needs torch).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import stencil

REPO = Path(__file__).resolve().parents[2]


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def summary(ns):
    return {
        "steps": len(ns),
        "p50_us": percentile(ns, 50) / 1e3,
        "p99_us": percentile(ns, 99) / 1e3,
        "mean_us": statistics.fmean(ns) / 1e3 if ns else float("nan"),
    }


def load_schemas(per_split):
    """(name, schema, valid instances) from the sample, `per_split` files of each split."""
    root = Path(os.environ.get("STENCIL_SHARED_DATA") or REPO.parent / "shared" / "data")
    root = root / "jsonschemabench-sample"
    if not root.is_dir():
        sys.exit(f"the JSONSchemaBench sample is not at {root} (set STENCIL_SHARED_DATA)")
    out = []
    for split in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(split.glob("*.json"))[:per_split]:
            case = json.loads(f.read_text())
            valid = [t["data"] for t in case.get("tests", []) if t.get("valid")]
            out.append((f"{split.name}/{f.name}", case["schema"], valid))
    return out


class Stencil:
    name = "stencil"

    def __init__(self, tokenizer_json, hf):
        self.vocab = stencil.Vocab.from_tokenizer_json(tokenizer_json)
        self.size = len(self.vocab)

    def compile(self, schema):
        return stencil.Grammar.from_json_schema(schema, self.vocab)

    def matcher(self, grammar):
        return stencil.Matcher(grammar)

    def bitmask(self):
        return stencil.allocate_token_bitmask(1, self.size)

    def fill(self, m, bitmask):
        m.fill_next_token_bitmask(bitmask, 0)

    def accept(self, m, token):
        return m.accept_token(token)


class LLGuidance:
    name = "llguidance"

    def __init__(self, tokenizer_json, hf):
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.ll = llguidance
        self.np = llguidance.numpy
        self.tok = llguidance.hf.from_tokenizer(hf)
        self.size = self.tok.vocab_size

    def compile(self, schema):
        grammar = self.ll.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": False}
        )
        is_error, messages = self.ll.LLMatcher.validate_grammar_with_warnings(grammar, self.tok)
        if is_error:
            raise ValueError(messages[0])
        return grammar

    def matcher(self, grammar):
        return self.ll.LLMatcher(self.tok, grammar)

    def bitmask(self):
        return self.np.allocate_token_bitmask(1, self.size)

    def fill(self, m, bitmask):
        self.np.fill_next_token_bitmask(m, bitmask, 0)

    def accept(self, m, token):
        return m.consume_token(token) and not m.is_error()


class XGrammar:
    name = "xgrammar"

    def __init__(self, tokenizer_json, hf):
        import xgrammar

        self.xgr = xgrammar
        info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=len(hf))
        self.compiler = xgrammar.GrammarCompiler(info)
        self.size = info.vocab_size

    def compile(self, schema):
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(",", ":")
        )

    def matcher(self, grammar):
        return self.xgr.GrammarMatcher(grammar)

    def bitmask(self):
        return self.xgr.allocate_token_bitmask(1, self.size)

    def fill(self, m, bitmask):
        m.fill_next_token_bitmask(bitmask, 0)

    def accept(self, m, token):
        return m.accept_token(token)


def sequences(hf, eos, cases, limit):
    """Token sequences: each valid instance of the sample written compactly, tokenized, then
    end of sequence; at most `limit` per schema."""
    out = []
    for name, _, valid in cases:
        for data in valid[:limit]:
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            out.append((name, hf.encode(text, add_special_tokens=False) + [eos]))
    return out


def accepted_prefix(engine, grammar, seq):
    """How many tokens of `seq` the engine accepts, in order."""
    m = engine.matcher(grammar)
    for i, token in enumerate(seq):
        if not engine.accept(m, token):
            return i
    return len(seq)


def run(engine, grammars, sequences):
    """Per schema, the time of each step of its sequences."""
    times = {}
    bitmask = engine.bitmask()
    for name, seq in sequences:
        m = engine.matcher(grammars[name])
        steps = times.setdefault(name, [])
        for token in seq:
            t0 = time.perf_counter_ns()
            engine.fill(m, bitmask)
            steps.append(time.perf_counter_ns() - t0)
            if not engine.accept(m, token):
                raise AssertionError(f"{engine.name} refused a token of {name} it accepted before")
    return times


def stencil_inside(engine, grammars, sequences):
    """Per step: Python-measured fill time, and the Rust call's own time inside it."""
    outer, inner = [], []
    bitmask = engine.bitmask()
    for name, seq in sequences:
        m = engine.matcher(grammars[name])
        for token in seq:
            t0 = time.perf_counter_ns()
            rust = m._fill_next_token_bitmask_ns(bitmask, 0)
            outer.append(time.perf_counter_ns() - t0)
            inner.append(rust)
            m.accept_token(token)
    return outer, inner


def empty_call(engine, grammar, n=20000):
    m = engine.matcher(grammar)
    ns = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        m.is_terminated()
        ns.append(time.perf_counter_ns() - t0)
    return ns


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--per-split", type=int, default=2)
    parser.add_argument("--per-schema", type=int, default=2, help="valid instances per schema")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    assets = Path(os.environ.get("STENCIL_ASSETS") or REPO / "assets")
    tokenizer_json = assets / "tokenizers" / args.tokenizer / "tokenizer.json"
    if not tokenizer_json.is_file():
        sys.exit(f"{tokenizer_json} is missing: run `cargo xtask fetch-assets`")
    try:
        from transformers import PreTrainedTokenizerFast

        hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json))
    except ImportError:
        hf = None

    engines = [Stencil(tokenizer_json, hf)]
    for cls, needs in ((LLGuidance, "llguidance"), (XGrammar, "xgrammar")):
        if hf is None:
            print(f"skipped {cls.name}: transformers is not installed (its tokenizer loader)")
            continue
        try:
            engines.append(cls(tokenizer_json, hf))
        except ImportError as e:
            print(f"skipped {cls.name}: {needs} is not installed ({e})")
    sizes = {e.name: e.size for e in engines}
    print(f"tokenizer {args.tokenizer}: vocabulary sizes {sizes}")

    cases = load_schemas(args.per_split)
    compiled = {e.name: {} for e in engines}
    for name, schema, _ in cases:
        try:
            per = [e.compile(schema) for e in engines]
        except Exception:
            continue
        for e, g in zip(engines, per):
            compiled[e.name][name] = g
    kept = [c for c in cases if c[0] in compiled["stencil"]]
    print(f"{len(kept)} of {len(cases)} schemas compiled by every engine")

    eos = engines[0].vocab.eos_token_ids[0]
    seqs = []
    cut = 0
    for name, seq in sequences(hf, eos, kept, args.per_schema):
        n = min(accepted_prefix(e, compiled[e.name][name], seq) for e in engines)
        cut += n < len(seq)
        if n:
            seqs.append((name, seq[:n]))
    print(
        f"{sum(len(s) for _, s in seqs)} steps in {len(seqs)} token sequences (valid instances "
        f"of the sample; {cut} cut to the prefix every engine accepts)"
    )

    base = engines[0]
    results = {}
    per_schema = {}
    for e in engines:
        times = run(e, compiled[e.name], seqs)
        results[e.name] = summary([t for steps in times.values() for t in steps])
        for name, steps in times.items():
            per_schema.setdefault(name, {})[e.name] = percentile(steps, 50) / 1e3
    outer, inner = stencil_inside(base, compiled[base.name], seqs)
    binding = [o - i for o, i in zip(outer, inner)]
    results["stencil_rust_call"] = summary(inner)
    results["stencil_binding_overhead"] = summary(binding)
    first = next(iter(compiled[base.name].values()))
    results["stencil_empty_call"] = summary(empty_call(base, first))

    print(f"\n{'':28} {'steps':>7} {'p50 µs':>9} {'p99 µs':>9} {'mean µs':>9}")
    for name, r in results.items():
        print(f"{name:28} {r['steps']:>7} {r['p50_us']:>9.2f} {r['p99_us']:>9.2f} {r['mean_us']:>9.2f}")
    s = results["stencil"]
    for peer in ("llguidance", "xgrammar"):
        if peer in results:
            p = results[peer]
            print(
                f"stencil / {peer}: p50 {s['p50_us'] / p['p50_us']:.2f}x, "
                f"p99 {s['p99_us'] / p['p99_us']:.2f}x"
            )
    peers = [e.name for e in engines[1:]]
    print(f"\np50 µs per schema\n{'schema':40}" + "".join(f"{e.name:>12}" for e in engines))
    for name, p50 in per_schema.items():
        print(f"{name:40}" + "".join(f"{p50[e.name]:>12.2f}" for e in engines))
    for peer in peers:
        at_most = sum(p50["stencil"] <= p50[peer] for p50 in per_schema.values())
        print(f"stencil's p50 at or below {peer}'s on {at_most} of {len(per_schema)} schemas")
    if args.json:
        out = {"args": vars(args), "results": results, "p50_us_per_schema": per_schema}
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
