#!/usr/bin/env python3
"""The official `openai` Python client against a running `stencil serve`.

    python3 server/tests/openai_client.py --base-url http://127.0.0.1:8000/v1
    python3 server/tests/openai_client.py --base-url ... --load --pid <server pid>

The first form runs the client tests (structured output, streaming, tool calls streamed as
deltas, parallel_tool_calls, logprobs, the Responses API, errors); the second sends 50
concurrent requests and checks that each completes or gets a clean 503, that the server
stays healthy and that its memory stays flat. Ends with `N passed, N failed` and
exits non-zero on any failure. Needs `pip install openai` (and uses `jsonschema` when it is
installed, a small hand check otherwise).
"""

import argparse
import asyncio
import json
import math
import sys
import time
import traceback
import urllib.request

try:
    import openai
except ImportError:
    sys.exit("error: the Python package `openai` is missing: pip install openai jsonschema")

try:
    import jsonschema
except ImportError:
    jsonschema = None

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "city": {"type": "string", "maxLength": 30},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 30},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "maxLength": 40}},
            "required": ["expression"],
        },
    },
}


def hand_validate(instance, schema, path="$"):
    """The subset of JSON Schema used here, for machines without `jsonschema`."""
    t = schema.get("type")
    kinds = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "number": (int, float),
    }
    if t == "integer":
        assert isinstance(instance, int) and not isinstance(instance, bool), f"{path}: not an integer"
    elif t in kinds:
        assert isinstance(instance, kinds[t]), f"{path}: not {t}"
        if t == "number":
            assert not isinstance(instance, bool), f"{path}: not a number"
    if "enum" in schema:
        assert instance in schema["enum"], f"{path}: not in enum"
    if "minimum" in schema:
        assert instance >= schema["minimum"], f"{path}: below minimum"
    if "maximum" in schema:
        assert instance <= schema["maximum"], f"{path}: above maximum"
    if "maxLength" in schema:
        assert len(instance) <= schema["maxLength"], f"{path}: too long"
    if "maxItems" in schema:
        assert len(instance) <= schema["maxItems"], f"{path}: too many items"
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            assert k in instance, f"{path}: missing {k}"
        for k, v in instance.items():
            if k in props:
                hand_validate(v, props[k], f"{path}.{k}")
            else:
                assert schema.get("additionalProperties", True) is not False, f"{path}: extra {k}"
    if isinstance(instance, list) and "items" in schema:
        for i, v in enumerate(instance):
            hand_validate(v, schema["items"], f"{path}[{i}]")


def validate(instance, schema):
    if jsonschema is not None:
        jsonschema.validate(instance, schema)
    else:
        hand_validate(instance, schema)


def user(text):
    return [{"role": "user", "content": text}]


class ClientTests:
    def __init__(self, base_url):
        self.base_url = base_url
        self.client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
        self.model = self.client.models.list().data[0].id

    def create(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("temperature", 0)
        return self.client.chat.completions.create(**kw)

    def test_models(self):
        models = self.client.models.list()
        assert len(models.data) == 1 and models.data[0].object == "model", models
        assert self.client.models.retrieve(self.model).id == self.model

    def test_json_schema_response_validates(self):
        r = self.create(
            messages=user("Describe Ada Lovelace, 36 years old, from London, as JSON."),
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "person", "schema": PERSON, "strict": True},
            },
            max_tokens=120,
        )
        choice = r.choices[0]
        assert choice.finish_reason == "stop", choice
        doc = json.loads(choice.message.content)
        validate(doc, PERSON)
        # strict: the members come in the order of the schema's properties (not alphabetical).
        assert list(doc) == ["name", "age", "city"], doc
        assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
        assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")

    def test_json_object(self):
        r = self.create(
            messages=user("Give a JSON object with a key 'colour' for the sky."),
            response_format={"type": "json_object"},
            max_tokens=60,
            seed=7,
            temperature=0.7,
        )
        doc = json.loads(r.choices[0].message.content)
        assert isinstance(doc, dict), doc

    def test_streamed_json_reassembles(self):
        stream = self.create(
            messages=user("Describe Alan Turing, 41 years old, from Manchester, as JSON."),
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "person", "schema": PERSON, "strict": True},
            },
            max_completion_tokens=120,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, finish, usage, ids, pieces = "", None, None, set(), 0
        for chunk in stream:
            ids.add(chunk.id)
            assert chunk.object == "chat.completion.chunk"
            if chunk.choices:
                delta = chunk.choices[0].delta
                if delta.content:
                    text += delta.content
                    pieces += 1
                if chunk.choices[0].finish_reason:
                    finish = chunk.choices[0].finish_reason
            if chunk.usage:
                usage = chunk.usage
        assert len(ids) == 1, ids
        assert pieces > 1, f"one piece only: {text!r}"
        assert finish == "stop", finish
        assert usage is not None and usage.completion_tokens > 0, usage
        validate(json.loads(text), PERSON)

    def test_parse_with_a_pydantic_model(self):
        try:
            import pydantic
        except ImportError:
            return
        parse = getattr(self.client.chat.completions, "parse", None)
        if parse is None:
            parse = self.client.beta.chat.completions.parse

        class City(pydantic.BaseModel):
            name: str
            country: str

        r = parse(
            model=self.model,
            messages=user("Name a city in France as JSON."),
            response_format=City,
            temperature=0,
            max_tokens=60,
        )
        city = r.choices[0].message.parsed
        assert isinstance(city, City), r

    def check_call(self, call, tools):
        assert call.type == "function", call
        assert call.id, call
        by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        assert call.function.name in by_name, call
        args = json.loads(call.function.arguments)
        validate(args, by_name[call.function.name])
        return args

    def test_tool_call_required(self):
        tools = [WEATHER, CALCULATOR]
        r = self.create(
            messages=user("What is the weather in Paris?"),
            tools=tools,
            tool_choice="required",
            max_tokens=100,
        )
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        assert choice.message.content is None, choice.message
        assert choice.message.tool_calls, choice.message
        for call in choice.message.tool_calls:
            self.check_call(call, tools)

    def test_tool_call_named(self):
        tools = [WEATHER, CALCULATOR]
        r = self.create(
            messages=user("What is 12 times 7?"),
            tools=tools,
            tool_choice={"type": "function", "function": {"name": "calculate"}},
            max_tokens=100,
        )
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        calls = choice.message.tool_calls
        assert calls and all(c.function.name == "calculate" for c in calls), calls
        for call in calls:
            self.check_call(call, tools)

    def test_tool_choice_auto(self):
        tools = [WEATHER]
        r = self.create(
            messages=user("What is the weather in Rome, in celsius?"),
            tools=tools,
            max_tokens=80,
        )
        choice = r.choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason == "tool_calls", choice
            for call in choice.message.tool_calls:
                self.check_call(call, tools)
        else:
            assert isinstance(choice.message.content, str), choice.message
            assert not choice.message.content.lstrip().startswith('{"tool_calls"'), choice.message
            assert choice.finish_reason in ("stop", "length"), choice

    def test_tool_result_round_trip(self):
        tools = [CALCULATOR]
        first = self.create(
            messages=user("What is 12 times 7?"), tools=tools, tool_choice="required", max_tokens=60
        )
        call = first.choices[0].message.tool_calls[0]
        messages = user("What is 12 times 7?") + [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "84"},
        ]
        second = self.create(messages=messages, tools=tools, tool_choice="none", max_tokens=30)
        assert isinstance(second.choices[0].message.content, str), second

    def test_streamed_tool_call(self):
        tools = [WEATHER, CALCULATOR]
        stream = self.create(
            messages=user("Weather in Oslo?"),
            tools=tools,
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            max_tokens=100,
            stream=True,
        )
        calls, finish, fragments = {}, None, 0
        for chunk in stream:
            if not chunk.choices:
                continue
            c = chunk.choices[0]
            for tc in c.delta.tool_calls or []:
                if tc.index not in calls:
                    # OpenAI's order: index, id and name first, then the arguments.
                    assert tc.id and tc.function and tc.function.name, tc
                    assert tc.index == len(calls), tc
                    calls[tc.index] = {"id": tc.id, "name": tc.function.name, "arguments": ""}
                else:
                    assert not tc.id and not (tc.function and tc.function.name), tc
                if tc.function and tc.function.arguments:
                    calls[tc.index]["arguments"] += tc.function.arguments
                    fragments += 1
            assert finish is None, "chunks after the finish chunk"
            finish = c.finish_reason
        assert finish == "tool_calls", finish
        assert calls and all(e["name"] == "get_weather" for e in calls.values()), calls
        assert fragments > len(calls), f"arguments in one piece per call: {calls}"
        for e in calls.values():
            validate(json.loads(e["arguments"]), WEATHER["function"]["parameters"])

    def test_parallel_tool_calls_false(self):
        tools = [WEATHER]
        for stream in (False, True):
            r = self.create(
                messages=user("Weather in Oslo, in Paris and in Rome, in celsius? One call per city."),
                tools=tools,
                tool_choice="required",
                parallel_tool_calls=False,
                max_tokens=120,
                stream=stream,
            )
            if stream:
                indexes = {tc.index for ch in r if ch.choices for tc in ch.choices[0].delta.tool_calls or []}
                assert indexes == {0}, indexes
            else:
                calls = r.choices[0].message.tool_calls
                assert calls is not None and len(calls) == 1, calls
                self.check_call(calls[0], tools)

    def test_logprobs(self):
        def check(entries, text):
            assert entries, "no logprobs"
            assert "".join(e.token for e in entries) == text or bytes(
                b for e in entries for b in e.bytes
            ).decode() == text, (entries, text)
            for e in entries:
                assert math.isfinite(e.logprob) and e.logprob <= 0, e
                assert len(e.top_logprobs) <= 3, e
                for a in e.top_logprobs:
                    assert math.isfinite(a.logprob) and a.logprob <= 0, a
                    assert isinstance(a.token, str) and isinstance(a.bytes, list), a

        kw = dict(
            messages=user("Give a JSON object with a key 'colour' for the sky."),
            response_format={"type": "json_object"},
            logprobs=True,
            top_logprobs=3,
            max_tokens=20,
        )
        r = self.create(**kw)
        check(r.choices[0].logprobs.content, r.choices[0].message.content)
        entries, text = [], ""
        for chunk in self.create(stream=True, **kw):
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                if chunk.choices[0].logprobs and chunk.choices[0].logprobs.content:
                    entries += chunk.choices[0].logprobs.content
        check(entries, text)

    def respond(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("temperature", 0)
        return self.client.responses.create(**kw)

    def test_responses_text_format(self):
        fmt = {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}
        r = self.respond(
            instructions="Answer in JSON.",
            input="Describe Ada Lovelace, 36 years old, from London.",
            text={"format": fmt},
            max_output_tokens=120,
        )
        assert r.object == "response" and r.status == "completed", r
        validate(json.loads(r.output_text), PERSON)
        assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0, r.usage
        assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens

        types, text, completed = [], "", None
        stream = self.respond(
            input=[{"role": "user", "content": [{"type": "input_text", "text": "Describe Alan Turing, 41, from Manchester."}]}],
            text={"format": fmt},
            max_output_tokens=120,
            stream=True,
        )
        for event in stream:
            assert event.sequence_number == len(types), event
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.completed":
                completed = event.response
        assert types[:2] == ["response.created", "response.in_progress"], types
        assert types[-1] == "response.completed", types
        assert types.count("response.output_text.delta") > 1, types
        validate(json.loads(text), PERSON)
        assert completed.output_text == text, completed

        r = self.respond(input="Give a JSON object with a key 'colour' for the sky.",
                         text={"format": {"type": "json_object"}}, max_output_tokens=40)
        assert isinstance(json.loads(r.output_text), dict), r.output_text

    def test_responses_tools(self):
        params = WEATHER["function"]["parameters"]
        tools = [{"type": "function", "name": "get_weather", "description": "Current weather in a city",
                  "parameters": params, "strict": False}]
        r = self.respond(input="What is the weather in Paris?", tools=tools, tool_choice="required",
                         max_output_tokens=100)
        calls = [o for o in r.output if o.type == "function_call"]
        assert calls and all(c.name == "get_weather" and c.call_id for c in calls), r.output
        validate(json.loads(calls[0].arguments), params)

        args, done = "", None
        for event in self.respond(input="Weather in Oslo?", tools=tools, tool_choice="required",
                                  parallel_tool_calls=False, max_output_tokens=100, stream=True):
            if event.type == "response.function_call_arguments.delta":
                args += event.delta
            elif event.type == "response.function_call_arguments.done":
                done = event.arguments
        assert done == args, (done, args)
        validate(json.loads(args), params)

        first = calls[0]
        r2 = self.respond(
            input=[
                {"role": "user", "content": "What is the weather in Paris?"},
                {"type": "function_call", "call_id": first.call_id, "name": first.name, "arguments": first.arguments},
                {"type": "function_call_output", "call_id": first.call_id, "output": "sunny, 21 C"},
            ],
            tools=tools,
            tool_choice="none",
            max_output_tokens=30,
        )
        assert isinstance(r2.output_text, str) and r2.output[0].type == "message", r2.output
        try:
            self.respond(input="x", previous_response_id=r2.id)
        except openai.BadRequestError as e:
            assert e.param == "previous_response_id", e.body
        else:
            raise AssertionError("previous_response_id was accepted")

    def test_response_format_with_tools(self):
        fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
        for choice in ("auto", "none"):
            r = self.create(
                messages=user("Describe Ada Lovelace, 36 years old, from London."),
                tools=[WEATHER],
                tool_choice=choice,
                response_format=fmt,
                max_tokens=120,
            )
            message = r.choices[0].message
            if message.tool_calls:
                assert choice == "auto", message
                for call in message.tool_calls:
                    self.check_call(call, [WEATHER])
            else:
                validate(json.loads(message.content), PERSON)

    def test_invalid_schema_is_a_400(self):
        bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
        for stream in (False, True):
            try:
                self.create(
                    messages=user("x"),
                    response_format={"type": "json_schema", "json_schema": {"name": "bad", "schema": bad}},
                    stream=stream,
                )
            except openai.BadRequestError as e:
                assert e.status_code == 400
                msg = str(e)
                assert "minimum" in msg and "#/properties/n" in msg, msg
                assert e.code == "invalid_json_schema", e.body
                assert e.param == "response_format", e.body
            else:
                raise AssertionError("no error for a schema that does not compile")

    def test_other_errors(self):
        try:
            self.create(messages=user("x"), max_tokens=10**9)
        except openai.BadRequestError as e:
            assert e.param == "max_tokens", e.body
        else:
            raise AssertionError("max_tokens over the limit was accepted")
        try:
            self.create(messages=user("x"), tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}})
        except openai.BadRequestError as e:
            assert e.param == "tool_choice", e.body
        else:
            raise AssertionError("an unknown named tool was accepted")
        try:
            self.client.models.retrieve("no-such-model")
        except openai.NotFoundError as e:
            assert e.status_code == 404
        else:
            raise AssertionError("an unknown model was found")


def run_tests(obj):
    names = sorted(n for n in dir(obj) if n.startswith("test_"))
    passed = failed = 0
    for name in names:
        t = time.monotonic()
        try:
            getattr(obj, name)()
        except Exception:
            failed += 1
            print(f"FAIL {name} ({time.monotonic() - t:.1f} s)")
            traceback.print_exc()
        else:
            passed += 1
            print(f"ok   {name} ({time.monotonic() - t:.1f} s)")
    return passed, failed


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def health(base_url):
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/health", timeout=10) as r:
        return r.status, json.loads(r.read())


async def load_round(base_url, model, n, time_limit):
    client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=time_limit)
    kinds = ("json", "stream", "tool")

    async def one(i):
        kind = kinds[i % len(kinds)]
        try:
            if kind == "json":
                r = await client.chat.completions.create(
                    model=model,
                    messages=user(f"Person number {i} as JSON."),
                    response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
                    max_tokens=8,
                    temperature=0.5,
                    seed=i,
                )
                choice = r.choices[0]
                if choice.finish_reason == "stop":
                    json.loads(choice.message.content)
                else:  # 8 tokens may be too few for even the shortest valid ending
                    assert choice.finish_reason == "length", choice
            elif kind == "stream":
                stream = await client.chat.completions.create(
                    model=model, messages=user(f"Count to {i}."), max_tokens=8, stream=True
                )
                async for _ in stream:
                    pass
            else:
                r = await client.chat.completions.create(
                    model=model,
                    messages=user(f"Weather in city {i}?"),
                    tools=[WEATHER],
                    tool_choice="required",
                    max_tokens=48,
                )
                assert r.choices[0].message.tool_calls, r
            return "ok"
        except openai.APIStatusError as e:
            if e.status_code == 503 and e.code == "queue_full" and e.type == "server_error":
                return "503"
            return f"error {e.status_code}: {e}"
        except Exception as e:  # noqa: BLE001 - every other outcome is a failure to report
            return f"error: {e!r}"

    t = time.monotonic()
    results = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), time_limit)
    await client.close()
    return results, time.monotonic() - t


def run_load(base_url, pid, n, rounds, time_limit, rss_bound_mib):
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    model = client.models.list().data[0].id
    passed = failed = 0
    before = rss_kib(pid)
    samples = [before]
    for r in range(rounds):
        results, elapsed = asyncio.run(load_round(base_url, model, n, time_limit))
        ok = results.count("ok")
        busy = results.count("503")
        errors = [x for x in results if x not in ("ok", "503")]
        status, h = health(base_url)
        rss = rss_kib(pid)
        samples.append(rss)
        print(
            f"load round {r + 1}: {n} concurrent requests: {ok} completed, {busy} got 503, "
            f"{len(errors)} other, {elapsed:.1f} s; health {status} {h['status']}; "
            f"RSS {rss / 1024:.1f} MiB"
        )
        for e in errors[:5]:
            print(f"  {e}")
        if errors or status != 200 or ok == 0:
            failed += 1
            print(f"FAIL load round {r + 1}")
        else:
            passed += 1
    growth = (samples[-1] - samples[1]) / 1024 if len(samples) > 2 else 0.0
    total = (samples[-1] - before) / 1024
    print(
        f"RSS before {before / 1024:.1f} MiB, after each round "
        f"{', '.join(f'{s / 1024:.1f}' for s in samples[1:])} MiB "
        f"(+{total:.1f} MiB in all, +{growth:.1f} MiB after the first round)"
    )
    if total > rss_bound_mib or growth > rss_bound_mib / 4:
        failed += 1
        print(f"FAIL memory grew beyond {rss_bound_mib} MiB (or a quarter of it after round 1)")
    else:
        passed += 1
    return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    ap.add_argument("--load", action="store_true", help="run the load test instead")
    ap.add_argument("--pid", type=int, help="the server's pid (load test: RSS)")
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per round")
    ap.add_argument("--rss-bound-mib", type=float, default=256.0)
    args = ap.parse_args()
    if args.load:
        if args.pid is None:
            ap.error("--load needs --pid")
        passed, failed = run_load(
            args.base_url, args.pid, args.requests, args.rounds, args.time_limit, args.rss_bound_mib
        )
    else:
        if jsonschema is None:
            print("note: jsonschema is not installed; validating with a hand check")
        passed, failed = run_tests(ClientTests(args.base_url))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
