#!/usr/bin/env python3
"""Constrained against free decoding on every seed schema, each with a request it fits.

`typeset bench constrained` measures one schema and one prompt. This runs it once per seed
schema (Fixtures/schemas), each with a request a user would send with that schema (an event
to extract, a cat to describe, a story to outline), and prints, per schema, free and
constrained tokens/s, their ratio and the constrained reply's tokens in forward passes; then
the same over the whole set: tokens/s of all the free replies against all the constrained ones
(total tokens over total decoding time), and the geometric mean of the ratios.

    constrained_seeds.py [--typeset .build/release/typeset] [--model smollm2 ...] [--runs 5]
                         [--max-tokens 128] [--no-provisional] [--no-jump-forward] [--json]

What a pass saves depends on the share of the value the grammar forces (keys, quotes, enum
tails): a schema whose values are mostly free text (a 50-100 word summary) gains little,
one of short fields a lot. Run it on a quiet machine; the figures are medians of --runs.
Every constrained reply (greedy: each run's is the same) is checked against its schema with
the `jsonschema` package, a validator no one here wrote: run it with a Python that has it
(the server tests' venv, $TYPESET_CACHE/server-tests/bin/python).
"""
import argparse, json, math, subprocess, sys
from pathlib import Path

try:
    import jsonschema
except ImportError:
    sys.exit("error: the jsonschema package is missing (run with $TYPESET_CACHE/server-tests/bin/python)")

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "Fixtures" / "schemas"

REQUESTS = [
    ("brew_summary.json",
     "Tasting notes: bright acidity, blueberry and lemon, a bit thin, slightly sour finish. Summarize this brew."),
    ("cat_profile.json",
     "Describe this cat: Miso is a 7-year-old cat who loves naps and ignores visitors."),
    ("city_fact.json",
     "Give the facts stated here: Porto is a city in Portugal with about 230000 people; it is not the capital."),
    ("detailed_journal_insight.json",
     "Analyse this journal entry: I finished the first draft of my thesis today and feel relieved, "
     "though I am anxious about the defense in March. I want to run three times a week again."),
    ("event.json",
     "Extract the event: the Lisbon Coffee Festival is on 2025-05-17 at the Time Out Market, with about 300 attendees."),
    ("product_review.json",
     "Review this product: the AeroPress Go is a compact coffee maker that packs into its own mug, "
     "brews in a minute and is easy to clean. I would give it 4 stars."),
    ("story_outline.json",
     "Outline a short story: a lighthouse keeper in 1920s Maine must decide whether to leave her post "
     "to find her lost brother."),
    ("tool_call.json", "Call the right tool: what is the weather in Oslo, in celsius?"),
]


def bench(typeset, model, schema, prompt, runs, max_tokens, flags):
    command = [typeset, "bench", "constrained", "--model", model, "--schema", str(SCHEMAS / schema),
               "--prompt", prompt, "--runs", str(runs), "--max-tokens", str(max_tokens), "--json"] + flags
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command[:3])} failed on {schema}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--typeset", default=str(ROOT / ".build" / "release" / "typeset"))
    parser.add_argument("--model", action="append", help="model names or GGUF paths (default: smollm2, qwen0.5b)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--no-provisional", action="store_true", help="passed to bench constrained")
    parser.add_argument("--no-jump-forward", action="store_true", help="passed to bench constrained")
    parser.add_argument("--json", action="store_true", help="print every report as one JSON object per line")
    arguments = parser.parse_args()
    flags = ["--no-provisional"] * arguments.no_provisional + ["--no-jump-forward"] * arguments.no_jump_forward
    for model in arguments.model or ["smollm2", "qwen0.5b"]:
        rows = []
        for schema, prompt in REQUESTS:
            report = bench(arguments.typeset, model, schema, prompt, arguments.runs, arguments.max_tokens, flags)
            report["schema"] = schema
            document = json.loads((SCHEMAS / schema).read_text())
            problems = [error.message for error in
                        jsonschema.Draft202012Validator(document, format_checker=jsonschema.FormatChecker())
                        .iter_errors(json.loads(report["constrained_reply"]))]
            if problems:
                sys.exit(f"error: {model}'s {schema} reply does not validate: {problems}: {report['constrained_reply']}")
            rows.append(report)
            if arguments.json:
                print(json.dumps(report), flush=True)
        free_tokens = sum(r["free_tokens"] for r in rows)
        free_seconds = sum(r["free_tokens"] / r["free_tokens_per_second"] for r in rows)
        constrained_tokens = sum(r["constrained_tokens"] for r in rows)
        constrained_seconds = sum(r["constrained_tokens"] / r["constrained_tokens_per_second"] for r in rows)
        overall = (constrained_tokens / constrained_seconds) / (free_tokens / free_seconds)
        geometric = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
        if arguments.json:
            print(json.dumps({"model": rows[0]["model"], "overall_ratio": overall, "geometric_mean_ratio": geometric}))
            continue
        print(f"\n{rows[0]['model']}, {arguments.runs} runs each, at most {arguments.max_tokens} tokens {' '.join(flags)}\n")
        print("| schema | free tok/s | constrained tok/s | ratio | constrained tokens in passes |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['schema'].removesuffix('.json')} | {r['free_tokens_per_second']:.1f} | "
                  f"{r['constrained_tokens_per_second']:.1f} | {r['ratio']:.3f} | "
                  f"{r['constrained_tokens']} in {r['constrained_passes']} |")
        print(f"| all eight: total tokens over total time | {free_tokens / free_seconds:.1f} | "
              f"{constrained_tokens / constrained_seconds:.1f} | **{overall:.3f}** | "
              f"{constrained_tokens} in {sum(r['constrained_passes'] for r in rows)} |")
        print(f"| geometric mean of the ratios | | | {geometric:.3f} | |")
        print("\nEvery constrained reply validates (jsonschema, draft 2020-12, formats checked).")


if __name__ == "__main__":
    main()
