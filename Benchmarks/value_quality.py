#!/usr/bin/env python3
"""Whether typed replies say what the prompt says: extraction cases with known answers.

A constrained reply always parses and validates; this measures the other half, whether its
values are right. Each case is a prompt whose facts are stated in it, one of the seed schemas
(Fixtures/schemas) and the values a reader would extract; the reply of `typeset run --schema`
(greedy) is compared field by field (strings case-insensitively, without a leading "the").
Fields the case does not list (a free-text profile) are not scored.

    value_quality.py [--typeset .build/release/typeset] [--model smollm2 ...] [--variant schema ...] [--verbose]

Variants (how the request reaches the model; the grammar is the same in every one):

    schema        the default: `Conversation.instructedRequest`, the instruction and the
                  schema, then the request
    no-schema     --no-schema-in-prompt: the request alone (the keys appear only as the
                  grammar forces them)
    schema-after  the request, then the same instruction and schema (the default before
                  2026-12-02)
    system        the instruction and schema in the system message, the request alone

Prints, per model and variant, the fields right out of the fields scored; with --verbose,
every reply. Nothing is timed: run it on any machine.
"""
import argparse, json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "Fixtures" / "schemas"

CASES = [
    ("event.json", "Extract the event: the Lisbon Coffee Festival is on 2025-05-17 at the Time Out Market, with about 300 attendees.",
     {"title": "Lisbon Coffee Festival", "date": "2025-05-17", "location": "Time Out Market", "attendeeCount": 300}),
    ("event.json", "Extract the event: join us for PyCon Portugal on 2025-09-04 in Porto; we expect 450 people.",
     {"title": "PyCon Portugal", "date": "2025-09-04", "location": "Porto", "attendeeCount": 450}),
    ("event.json", "Extract the event: the Harbour Jazz Night takes place on 2026-07-12 at Pier 9.",
     {"title": "Harbour Jazz Night", "date": "2026-07-12", "location": "Pier 9", "attendeeCount": None}),
    ("event.json", "Extract the event: the Spring Chess Open, 2025-04-19, Riverside Library, 64 players.",
     {"title": "Spring Chess Open", "date": "2025-04-19", "location": "Riverside Library", "attendeeCount": 64}),
    ("event.json", "Extract the event: Marta's birthday dinner is on 2025-11-08; twelve friends are invited. The place is not decided yet.",
     {"date": "2025-11-08", "location": None, "attendeeCount": 12}),
    ("cat_profile.json", "Describe this cat: Miso is a 7-year-old cat who loves naps and ignores visitors.",
     {"name": "Miso", "age": 7}),
    ("cat_profile.json", "Describe this cat: our cat Pepper is 3 years old and chases every string.",
     {"name": "Pepper", "age": 3}),
    ("cat_profile.json", "Describe this cat: Luna, aged 12, sleeps on the radiator all winter.",
     {"name": "Luna", "age": 12}),
    ("city_fact.json", "Give the facts stated here: Porto is a city in Portugal with about 230000 people; it is not the capital.",
     {"city": "Porto", "country": "Portugal", "population": 230000, "isCapital": False}),
    ("city_fact.json", "Give the facts stated here: Oslo, the capital of Norway, has about 700000 inhabitants.",
     {"city": "Oslo", "country": "Norway", "population": 700000, "isCapital": True}),
    ("brew_summary.json", "Tasting notes: thin and sour, like lemon juice; I would rate it 2. Summarize this brew.",
     {"rating": 2, "note": "sour"}),
    ("brew_summary.json", "Tasting notes: rich and smooth with a strong chocolate finish, excellent, 5 out of 5. Summarize this brew.",
     {"rating": 5, "note": "chocolatey"}),
    ("tool_call.json", "Call the right tool: what is the weather in Oslo, in celsius?",
     {"name": "getWeather", "arguments": {"city": "Oslo", "unit": "celsius"}}),
    ("tool_call.json", "Call the right tool: what is the average rating of V60 brews?",
     {"name": "lookUpAverageRating", "arguments": {"method": "V60"}}),
    ("tool_call.json", "Call the right tool: how warm is it in Madrid right now, in fahrenheit?",
     {"name": "getWeather", "arguments": {"city": "Madrid", "unit": "fahrenheit"}}),
    ("tool_call.json", "Call the right tool: how do people rate espresso on average?",
     {"name": "lookUpAverageRating", "arguments": {"method": "espresso"}}),
]


def normalized(value):
    if isinstance(value, str):
        text = value.strip().lower()
        return text[4:] if text.startswith("the ") else text
    return value


def score(expected, reply):
    """(fields scored, fields right) of `reply` against `expected`, nested objects included."""
    scored = right = 0
    for key, value in expected.items():
        if isinstance(value, dict):
            inner = reply.get(key) if isinstance(reply, dict) else None
            a, b = score(value, inner if isinstance(inner, dict) else {})
            scored, right = scored + a, right + b
        else:
            scored += 1
            # `type(...) is` keeps 1 from counting as True and 0 as False.
            got = reply.get(key, object()) if isinstance(reply, dict) else object()
            right += normalized(got) == normalized(value) and type(got) is type(value)
    return scored, right


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--typeset", default=str(ROOT / ".build" / "release" / "typeset"))
    parser.add_argument("--model", action="append", help="models (default: smollm2, gemma3, qwen0.5b)")
    parser.add_argument("--variant", action="append", choices=["schema", "no-schema", "schema-after", "system"], help="default: schema and no-schema")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    for model in args.model or ["smollm2", "gemma3", "qwen0.5b"]:
        for variant in args.variant or ["schema", "no-schema"]:
            scored = right = 0
            for schema, prompt, expected in CASES:
                command = [args.typeset, "run", "--model", model, "--schema", str(SCHEMAS / schema), "--max-tokens", "160"]
                # The other variants place Conversation.instructedRequest's paragraph themselves
                # (with the schema as compact JSON; the engine shows the file's text).
                compact = json.dumps(json.loads((SCHEMAS / schema).read_text()), separators=(",", ":"), ensure_ascii=False)
                instruction = "Answer with a JSON value that conforms to this JSON Schema:\n" + compact
                if variant == "no-schema":
                    command += ["--no-schema-in-prompt"]
                elif variant == "schema-after":
                    command += ["--no-schema-in-prompt"]
                    prompt = prompt + "\n\n" + instruction
                elif variant == "system":
                    command += ["--no-schema-in-prompt", "--system", "You are a helpful assistant. " + instruction]
                result = subprocess.run(command + [prompt], capture_output=True, text=True)
                if result.returncode != 0:
                    sys.exit(f"typeset run failed ({model}, {schema}): {result.stderr.strip()}")
                try:
                    reply = json.loads(result.stdout)
                except json.JSONDecodeError:
                    sys.exit(f"typeset run printed no JSON value ({model}, {schema}): {result.stdout!r}")
                a, b = score(expected, reply)
                scored, right = scored + a, right + b
                if args.verbose:
                    print(f"  {b}/{a} {result.stdout.strip()}")
            print(f"{model:10} {variant:10} {right}/{scored} fields right")


if __name__ == "__main__":
    main()
