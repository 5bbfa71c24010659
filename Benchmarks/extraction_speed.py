#!/usr/bin/env python3
"""Typed extraction end to end, against any OpenAI-compatible server: the extraction cases of
value_quality.py (a prompt whose facts are stated in it, a seed schema, the values a reader
would extract), each sent as a chat completion with `response_format` json_schema (strict),
greedy, one request at a time, through the real `openai` client.

    extraction_speed.py --base-url http://127.0.0.1:8096/v1 [--rounds 3] [--max-tokens 200] [--json]

Reports the wall time of the whole set (median over rounds, each round every case once, after
one uncounted warm-up round), the completion tokens, how many replies parse and validate
(jsonschema), and the fields right out of those scored. Run it against `typeset serve` (with and
without --lookup) and llama-server on the same model to compare; only loopback addresses are
accepted.
"""
import argparse, json, statistics, sys, time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from value_quality import CASES, SCHEMAS, score  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="default")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if urlparse(args.base_url).hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("extraction_speed.py: only loopback servers")
    import jsonschema
    import openai
    client = openai.OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=args.timeout)
    schemas = {name: json.loads((SCHEMAS / name).read_text()) for name, _, _ in CASES}

    def one(name, prompt):
        reply = client.chat.completions.create(
            model=args.model, messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=args.max_tokens,
            response_format={"type": "json_schema", "json_schema": {"name": name.removesuffix(".json"), "schema": schemas[name], "strict": True}})
        return reply.choices[0].message.content or "", reply.usage.completion_tokens if reply.usage else 0

    seconds, tokens, valid, right, scored = [], 0, 0, 0, 0
    for round_index in range(args.rounds + 1):
        started = time.perf_counter()
        replies = [one(name, prompt) for name, prompt, _ in CASES]
        elapsed = time.perf_counter() - started
        if round_index == 0:
            continue   # warm-up: page faults, the schemas' compilation
        seconds.append(elapsed)
        if round_index == 1:
            for (name, _, expected), (text, count) in zip(CASES, replies):
                tokens += count
                try:
                    value = json.loads(text)
                    jsonschema.validate(value, schemas[name])
                    valid += 1
                except Exception:  # noqa: BLE001 - an invalid reply is a figure
                    value = None
                a, b = score(expected, value if isinstance(value, dict) else {})
                scored, right = scored + a, right + b
    result = {"base_url": args.base_url, "cases": len(CASES), "rounds": args.rounds,
              "seconds_median": round(statistics.median(seconds), 3), "seconds_all": [round(s, 3) for s in seconds],
              "completion_tokens": tokens, "valid": valid, "fields_right": right, "fields_scored": scored}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{len(CASES)} extractions in {result['seconds_median']:.2f} s (median of {args.rounds}: {result['seconds_all']}), "
              f"{tokens} completion tokens, {valid}/{len(CASES)} valid, {right}/{scored} fields right")


if __name__ == "__main__":
    main()
