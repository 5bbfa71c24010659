#!/usr/bin/env python3
"""A soak test of an OpenAI-compatible server: C clients for D seconds, each sending a mix of
free-text, JSON-schema and tool requests (streamed and not) with the real `openai` client,
and, with --hostile, malformed and hostile requests and clients that disconnect mid-stream.

    serve_soak.py --base-url http://127.0.0.1:8080/v1 --model NAME --pid PID \
        [--concurrency 8] [--seconds 600] [--hostile] [--json]

Reports requests by kind and outcome, every schema reply and tool call checked with
`jsonschema`, and the server's resident memory (VmRSS of --pid) sampled every 10 s: the
first sample after the warm-up minute against the last, and the largest. A healthy request
that fails, a reply that does not validate, or a hostile request answered with 200 or 5xx
makes the exit status 1.
"""
import argparse, asyncio, json, random, socket, statistics, sys, time
from pathlib import Path

import httpx
import jsonschema
from openai import AsyncOpenAI

SCHEMAS = sorted((Path(__file__).resolve().parents[1] / "Fixtures" / "schemas").glob("*.json"))
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
TOPICS = ["coffee", "the sea", "a lighthouse", "bread", "the moon", "a garden", "trains", "rain", "a cat", "tea"]


def rss_bytes(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def healthy(client, args, rng, stats):
    kind = rng.choice(["text", "text-stream", "schema", "schema-stream", "tool"])
    topic = rng.choice(TOPICS)
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"Tell me something about {topic}."}]
    kwargs = dict(model=args.model, messages=messages, max_tokens=rng.choice([32, 64, 96]), temperature=rng.choice([0, 0.7]),
                  seed=rng.randrange(1 << 30))
    schema = None
    if kind.startswith("schema"):
        path = rng.choice(SCHEMAS)
        schema = json.loads(path.read_text())
        kwargs["max_tokens"] = 400
        kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": path.stem, "schema": schema}}
        messages[1]["content"] = f"Produce a realistic example of a {path.stem.replace('_', ' ')} about {topic}."
    if kind == "tool":
        kwargs.update(tools=[WEATHER], tool_choice="required", max_tokens=120)
        messages[1]["content"] = f"What is the weather in {rng.choice(['Paris', 'Oslo', 'Lima', 'Kyoto'])}?"
    try:
        if kind.endswith("stream"):
            stream = await client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
            text, finish = [], None
            async for chunk in stream:
                for choice in chunk.choices:
                    text.append(choice.delta.content or "")
                    finish = choice.finish_reason or finish
            content = "".join(text)
        else:
            reply = await client.chat.completions.create(**kwargs)
            content, finish = reply.choices[0].message.content, reply.choices[0].finish_reason
            if kind == "tool":
                for call in reply.choices[0].message.tool_calls or []:
                    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
                if not reply.choices[0].message.tool_calls:
                    raise ValueError("a required tool call is missing")
        if schema is not None:
            if finish != "stop":
                raise ValueError(f"a schema reply finished {finish}")
            jsonschema.validate(json.loads(content), schema)
            stats["valid"] += 1
        stats["ok", kind] = stats.get(("ok", kind), 0) + 1
    except Exception as error:  # noqa: BLE001 - a failure is a figure
        stats["failed", kind] = stats.get(("failed", kind), 0) + 1
        stats["errors"].append(f"{kind}: {type(error).__name__}: {error}"[:300])


def _doubling_references(count):
    schema = {"$defs": {"d0": {"type": "integer"}}, "$ref": f"#/$defs/d{count - 1}"}
    for index in range(1, count):
        schema["$defs"][f"d{index}"] = {"type": "array", "prefixItems": [{"$ref": f"#/$defs/d{index - 1}"}] * 2, "items": False}
    return schema


# The schemas of docs/reliability.md's table (each a 400 within the compile budget, or a value
# that validates) and older ones.
HOSTILE_SCHEMAS = [
    {"allOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]} for _ in range(12)]},
    {"allOf": [{"anyOf": [{"type": "object", "properties": {f"a{i}": {"type": "integer"}}},
                          {"type": "object", "properties": {f"b{i}": {"type": "string"}}}]} for i in range(20)]},
    {"type": "array", "items": {"type": "string"}, "contains": {"const": "x"}},
    {"type": "string", "pattern": "([a-z]+)*[0-9]{300}"},
    {"type": "string", "pattern": ".{1000}"},
    {"type": "object", "required": [f"p{index}" for index in range(3000)]},
    {"type": "object", "properties": {f"p{index}": {"type": "integer"} for index in range(100_000)},
     "required": [f"p{index}" for index in range(100_000)]},
    {"type": "array", "minItems": 2000, "items": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}},
    {"const": "\ud800"},
    {"enum": list(range(100_000))},
    _doubling_references(1000),
]


async def hostile(http, args, rng, stats):
    kind = rng.choice(["bad-json", "huge-body", "hostile-schema", "unknown-field", "disconnect"])
    url = args.base_url + "/chat/completions"
    try:
        if kind == "disconnect":
            # A streamed request whose client goes away after a few events.
            host, port = httpx.URL(args.base_url).host, httpx.URL(args.base_url).port
            body = json.dumps({"model": args.model, "messages": [{"role": "user", "content": "Write a long story."}],
                               "max_tokens": 2000, "stream": True}).encode()
            with socket.create_connection((host, port), timeout=30) as connection:
                connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                   + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                received = b""
                while received.count(b"data: ") < 3:
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            status = 200
        elif kind == "bad-json":
            status = (await http.post(url, content=b'{"messages": [', timeout=60)).status_code
        elif kind == "huge-body":
            status = (await http.post(url, content=b"x" * (args.body_limit + 1), timeout=60)).status_code
        elif kind == "unknown-field":
            status = (await http.post(url, json={"model": args.model, "messages": [{"role": "user", "content": "hi"}], "frobnicate": 1},
                                      timeout=60)).status_code
        else:
            schema = rng.choice(HOSTILE_SCHEMAS)
            sent = time.monotonic()
            # Written with json.dumps (ASCII escapes), so a lone surrogate goes out as "\ud800".
            body = json.dumps({"model": args.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16,
                               "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
            status = (await http.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=120)).status_code
            if status != 200:
                stats.setdefault("hostile_schema_seconds", []).append(time.monotonic() - sent)
        expected = kind == "disconnect" or 400 <= status < 500 or (kind == "hostile-schema" and status == 200)
        outcome = "handled" if expected else "mishandled"
        stats[outcome, kind] = stats.get((outcome, kind), 0) + 1
        if not expected:
            stats["errors"].append(f"{kind}: status {status}")
    except Exception as error:  # noqa: BLE001
        stats["mishandled", kind] = stats.get(("mishandled", kind), 0) + 1
        stats["errors"].append(f"{kind}: {type(error).__name__}: {error}"[:300])


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process, for its resident memory")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--warm-up", type=float, default=60, help="seconds before the first memory sample that counts")
    parser.add_argument("--hostile", action="store_true", help="one request in four malformed or hostile")
    parser.add_argument("--body-limit", type=int, default=8 << 20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    client = AsyncOpenAI(base_url=args.base_url, api_key="none", max_retries=0, timeout=300)
    stats = {"valid": 0, "errors": []}
    memory = []
    deadline = time.monotonic() + args.seconds
    started = time.monotonic()

    async def worker(index):
        rng = random.Random(index)
        async with httpx.AsyncClient() as http:
            while time.monotonic() < deadline:
                if args.hostile and rng.random() < 0.25:
                    await hostile(http, args, rng, stats)
                else:
                    await healthy(client, args, rng, stats)

    async def sampler():
        while time.monotonic() < deadline:
            memory.append((time.monotonic() - started, rss_bytes(args.pid)))
            await asyncio.sleep(10)

    await asyncio.gather(sampler(), *(worker(index) for index in range(args.concurrency)))
    counted = [bytes for at, bytes in memory if at >= args.warm_up] or [memory[-1][1]]
    report = {
        "seconds": round(time.monotonic() - started, 1), "concurrency": args.concurrency, "hostile": args.hostile,
        "outcomes": {f"{outcome} {kind}": count for (outcome, kind), count in sorted((k, v) for k, v in stats.items() if isinstance(k, tuple))},
        "schema_replies_valid": stats["valid"],
        "rss_mib_after_warm_up": round(counted[0] / 2**20, 1), "rss_mib_last": round(counted[-1] / 2**20, 1),
        "rss_mib_max": round(max(bytes for _, bytes in memory) / 2**20, 1),
        # Every sample (one per 10 s) after the warm-up: flat or growing is read off the series,
        # not off its two ends, which a hostile compilation in flight can lift.
        "rss_mib_samples": [round(bytes / 2**20) for bytes in counted],
        "hostile_schema_refusal_seconds_max": round(max(stats.get("hostile_schema_seconds", [0])), 2),
        "errors": stats["errors"][:10],
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))
    failed = any(outcome in ("failed", "mishandled") for outcome, _ in (k for k in stats if isinstance(k, tuple)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    asyncio.run(main())
