#!/usr/bin/env bash
# Drives a real `stencil serve` (default model, loopback) with real clients: the official
# `openai` Python package (server/tests/openai_client.py), the OpenAI Agents SDK
# (server/tests/agents_sdk.py, installed on the fly), `curl -N` for the server-sent
# events, a load test of 50 concurrent requests, and a graceful SIGTERM while a stream is in
# flight. Exits non-zero on any failure; the server is always stopped on exit.
#
#   bash server/tests/run-client-tests.sh        # from anywhere; respects $CARGO_TARGET_DIR
#
# Needs: python3 with `openai` (pip install openai jsonschema), curl, the default assets
# (cargo xtask fetch-assets).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
tests="$root/server/tests"

if ! python3 -c 'import openai' 2>/dev/null; then
    echo "error: the Python package \`openai\` is missing: pip install openai jsonschema" >&2
    exit 2
fi
command -v curl >/dev/null || { echo "error: curl is missing" >&2; exit 2; }

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
bin="$target/debug/stencil"
if [ -x "$bin" ] && [ -n "${STENCIL_SKIP_BUILD:-}" ]; then
    echo "== using $bin"
else
    # `cargo test --workspace` builds the same binary (the CLI has integration tests); when
    # it is fresh this is a no-op.
    echo "== building (cargo build -p cli)"
    cargo build -p cli
fi
[ -x "$bin" ] || { echo "error: $bin not found after the build" >&2; exit 1; }

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
log="$(mktemp -t stencil-serve.XXXXXX.log)"
work="$(mktemp -d -t stencil-client.XXXXXX)"
pid=""
failures=0

cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}

echo "== starting $bin serve --port $port (log: $log)"
"$bin" serve --host 127.0.0.1 --port "$port" --queue 16 --shutdown-grace 20 >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 240); do
    if curl -sf "$base/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "error: the server exited while starting:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.5
done
curl -sf "$base/health" >/dev/null || { echo "error: no /health after 120 s" >&2; cat "$log" >&2; exit 1; }
echo "server up: $(curl -s "$base/health")"

echo "== openai client tests"
python3 "$tests/openai_client.py" --base-url "$base/v1" || fail "openai client tests"

echo "== OpenAI Agents SDK (openai-agents)"
# Installed into a throwaway environment (about 15 s from PyPI) unless python3 has it; skipped,
# saying why, where it cannot be installed.
agents_python=""
if python3 -c 'import agents' 2>/dev/null; then
    agents_python=python3
elif python3 -m venv --system-site-packages "$work/agents-env" >"$work/agents-pip.log" 2>&1 \
    && timeout 300 "$work/agents-env/bin/pip" install -q openai-agents >>"$work/agents-pip.log" 2>&1; then
    agents_python="$work/agents-env/bin/python"
else
    echo "SKIP: openai-agents could not be installed (no package registry?):"
    tail -n 3 "$work/agents-pip.log" || true
fi
if [ -n "$agents_python" ]; then
    "$agents_python" "$tests/agents_sdk.py" --base-url "$base/v1" || fail "Agents SDK tests"
fi

echo "== curl: server-sent events"
sse="$work/sse.txt"
headers="$work/headers.txt"
curl -sN -D "$headers" "$base/v1/chat/completions" -H 'content-type: application/json' -d '{
    "model": "any", "messages": [{"role": "user", "content": "Name a colour as JSON."}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema":
        {"type": "object", "properties": {"colour": {"type": "string", "maxLength": 20}},
         "required": ["colour"], "additionalProperties": false}}},
    "temperature": 0, "max_tokens": 40, "stream": true,
    "stream_options": {"include_usage": true}}' >"$sse" || fail "curl stream"
if python3 - "$sse" "$headers" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
headers = open(sys.argv[2]).read().lower()
assert headers.startswith("http/1.1 200"), headers
assert "content-type: text/event-stream" in headers, headers
events = [e for e in text.split("\n\n") if e.strip()]
for e in events:
    assert e.startswith("data: ") and "\n" not in e, f"not one data line: {e!r}"
datas = [e[len("data: "):] for e in events]
assert datas[-1] == "[DONE]", datas[-1]
chunks = [json.loads(d) for d in datas[:-1]]
content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
doc = json.loads(content)
assert isinstance(doc.get("colour"), str), doc
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0, chunks[-1]
finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
assert finish == ["stop"], finish
print(f"ok   {len(events)} events, content {content!r}, ends with data: [DONE]")
PY
then :; else fail "SSE format"; fi

echo "== load: 50 concurrent requests"
python3 "$tests/openai_client.py" --base-url "$base/v1" --load --pid "$pid" --requests 50 --rounds 2 \
    || fail "load test"
curl -sf "$base/health" >/dev/null || fail "health after the load test"

echo "== graceful shutdown: SIGTERM with a stream in flight"
inflight="$work/inflight.txt"
curl -sN "$base/v1/chat/completions" -H 'content-type: application/json' -d '{
    "model": "any", "messages": [{"role": "user", "content": "Tell a long story."}],
    "temperature": 0, "max_tokens": 60, "stream": true}' >"$inflight" &
curl_pid=$!
for _ in $(seq 1 200); do
    grep -q '"content"' "$inflight" 2>/dev/null && break
    sleep 0.05
done
t0=$(python3 -c 'import time; print(time.time())')
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
t1=$(python3 -c 'import time; print(time.time())')
pid=""
wait "$curl_pid" || true
if [ "$rc" -ne 0 ]; then fail "the server exited with $rc after SIGTERM"; fi
if [ "$(tail -n 2 "$inflight" | head -n 1)" != "data: [DONE]" ]; then
    fail "the stream in flight did not finish: $(tail -c 300 "$inflight")"
fi
printf 'server exited with %s, %.1f s after SIGTERM; the stream in flight ended with [DONE]\n' \
    "$rc" "$(python3 -c "print($t1 - $t0)")"
grep -q "shutting down" "$log" || fail "no shutdown line in the log"

echo "== server log (last lines)"
tail -n 5 "$log" | sed 's/^/    /'
if [ "$failures" -ne 0 ]; then
    echo "client tests: $failures failure(s); full server log: $log"
    exit 1
fi
echo "client tests: all passed"
rm -f "$log"
