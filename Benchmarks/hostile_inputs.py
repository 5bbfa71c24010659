#!/usr/bin/env python3
"""The hostile inputs of docs/reliability.md, re-measured: each schema through
`typeset grammar compile --schema F` and `typeset run --schema F --max-tokens 64 PROMPT`
(SmolLM2), and the other probes (a FIFO as the model, endless standard input, signals, bad
numeric flags), printing one markdown row each: what happened, the exit status, the wall time
and the peak resident memory (GNU time's %M).

    python3 Benchmarks/hostile_inputs.py [--typeset .build/release/typeset] [--limit 120]

Every row should be a clean outcome: exit 0 with a valid value, or exit 1 with one
`error:` line, within the compile budget (2 s by default) plus the time to load the model.
"""
import argparse, json, os, signal, subprocess, tempfile, time
from pathlib import Path


def schemas():
    def cross(n):
        return {"allOf": [{"anyOf": [{"type": "object", "properties": {f"a{i}": {"type": "integer"}}},
                                     {"type": "object", "properties": {f"b{i}": {"type": "string"}}}]} for i in range(n)]}
    def wide(n, required):
        s = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}
        if required: s["required"] = [f"p{i}" for i in range(n)]
        return s
    def nested(kind, n):
        d = {"type": "integer"}
        for _ in range(n):
            d = {"type": "array", "items": d, "minItems": 1} if kind == "array" else \
                {"type": "object", "properties": {"a": d}, "required": ["a"]}
        return d
    laughs = {"$defs": {"d0": {"type": "integer"}}}
    for i in range(1, 1000):
        laughs["$defs"][f"d{i}"] = {"type": "array", "prefixItems": [{"$ref": f"#/$defs/d{i-1}"}] * 2, "items": False}
    laughs["$ref"] = "#/$defs/d999"
    yield "allOf of 20 two-way anyOfs (2^20)", json.dumps(cross(20))
    yield "100,000 required properties", json.dumps(wide(100_000, True))
    yield "10,000 optional properties", json.dumps(wide(10_000, False))
    yield "50 MB schema (1.3 M properties)", json.dumps({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(1_300_000)}})
    yield 'pattern ".{1000}"', json.dumps({"type": "string", "pattern": ".{1000}"})
    yield 'pattern "[\\s\\S]{2000}"', json.dumps({"type": "string", "pattern": "[\\s\\S]{2000}"})
    yield "(a|b)*a(a|b){16} (2^17 subsets)", json.dumps({"type": "string", "pattern": "^(a|b)*a(a|b){16}$"})
    yield "minItems 2000 of objects", json.dumps({"type": "array", "minItems": 2000, "items": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}})
    yield "([a-z]+)*[0-9]{1000}", json.dumps({"type": "string", "pattern": "^([a-z]+)*[0-9]{1000}$"})
    yield "(a|…|h){500}", json.dumps({"type": "string", "pattern": "^(a|b|c|d|e|f|g|h){500}$"})
    yield "propertyNames a{1000}", json.dumps({"type": "object", "propertyNames": {"pattern": "^a{1000}$"}, "minProperties": 1})
    yield "arrays 100 deep", json.dumps(nested("array", 100))
    yield "objects 100 deep", json.dumps(nested("object", 100))
    yield "multipleOf 1e300, minimum 1", '{"type":"number","multipleOf":1e300,"minimum":1}'
    yield "const 1e400", '{"const":1e400}'
    yield 'const "\\ud800" (lone surrogate)', '{"const":"\\ud800"}'
    yield "1,000 nested $refs doubling (billion laughs)", json.dumps(laughs)
    yield "enum of 100,000 integers", json.dumps({"enum": list(range(100_000))})


def measure(command, stdin=None, limit=120):
    started = time.monotonic()
    try:
        result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdin=stdin, capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return "still running", None, time.monotonic() - started, None
    seconds = time.monotonic() - started
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    peak = int(lines[-1]) // 1024 if lines and lines[-1].isdigit() else None
    errors = [line for line in lines if line.startswith("error:")]
    code = result.returncode
    if errors:
        outcome = errors[-1][:160]
    elif code == 0:
        outcome = "ok: " + result.stdout.decode(errors="replace").strip().splitlines()[-1][:100] if result.stdout.strip() else "ok"
    else:
        outcome = (lines[-2] if len(lines) > 1 else "no message")[:160]
    return outcome, code, seconds, peak


def row(name, measured):
    outcome, code, seconds, peak = measured
    cell = outcome.replace("|", "\\|")
    return f"| {name} | {cell} | {code} | {seconds:.1f} | {peak if peak is not None else '—'} |"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--typeset", default=str(Path(__file__).resolve().parents[1] / ".build/release/typeset"))
    parser.add_argument("--limit", type=float, default=120)
    parser.add_argument("--probes-only", action="store_true", help="skip the schema tables")
    arguments = parser.parse_args()
    typeset = arguments.typeset
    with tempfile.TemporaryDirectory() as directory:
        if not arguments.probes_only:
            print("| schema | `grammar compile` | status | s | MiB |\n|---|---|---|---|---|")
        files = []
        for number, (name, text) in enumerate(schemas()):
            path = Path(directory) / f"schema{number}.json"
            path.write_text(text)
            files.append((name, path))
            if not arguments.probes_only:
                print(row(name, measure([typeset, "grammar", "compile", "--model", "smollm2", "--schema", str(path)], limit=arguments.limit)), flush=True)
        if not arguments.probes_only:
            print("\n| schema | `run --schema … --max-tokens 64` | status | s | MiB |\n|---|---|---|---|---|")
        for name, path in files if not arguments.probes_only else []:
            print(row(name, measure([typeset, "run", "--model", "smollm2", "--schema", str(path), "--max-tokens", "64",
                                     "Give me a value."], limit=arguments.limit)), flush=True)
        print("\n| probe | outcome | status | s | MiB |\n|---|---|---|---|---|")
        fifo = Path(directory) / "model.gguf"
        os.mkfifo(fifo)
        print(row("a FIFO as the model (`inspect`)", measure([typeset, "inspect", str(fifo)], limit=10)))
        print(row("a FIFO as the model (`run --model`)", measure([typeset, "run", "--model", str(fifo), "hi"], limit=10)))
        yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
        print(row("`yes \\| typeset tokenize --file -`", measure([typeset, "tokenize", "--file", "-", "--max-bytes", str(256 << 20)], stdin=yes.stdout, limit=arguments.limit)))
        yes.kill()
        print(row("`run --schema /dev/zero`", measure([typeset, "run", "--schema", "/dev/zero", "hi"], limit=30)))
        latin1 = Path(directory) / "latin1.json"
        latin1.write_bytes(b'{"description":"caf\xe9","type":"string"}')
        print(row("a Latin-1 schema (`run`)", measure([typeset, "run", "--schema", str(latin1), "--max-tokens", "16", "hi"], limit=30)))
        print(row("a Latin-1 schema (`grammar compile`)", measure([typeset, "grammar", "compile", "--schema", str(latin1)], limit=30)))
        bom = Path(directory) / "bom.json"
        bom.write_bytes(b'\xef\xbb\xbf{"type":"integer"}')
        print(row("a schema with a BOM (`grammar compile`)", measure([typeset, "grammar", "compile", "--schema", str(bom)], limit=30)))
        print(row("a schema with a BOM (`run`)", measure([typeset, "run", "--schema", str(bom), "--max-tokens", "8", "A number."], limit=30)))
        for flag, value in [("--temperature", "-1"), ("--temperature", "nan"), ("--top-p", "0"), ("--top-k", "-3"), ("--min-p", "2"), ("--repetition-penalty", "nan")]:
            print(row(f"`run {flag} {value}`", measure([typeset, "run", flag, value, "hi"], limit=30)))
        for command in (["perplexity", "--file", "/dev/null"], ["demo"]):
            print(row(f"`{command[0]} --threads 0`", measure([typeset] + command + ["--threads", "0"], limit=30)))
        started = time.monotonic()
        process = subprocess.Popen([typeset, "run", "--max-tokens", "2000", "Write a long story about the sea."],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(5)
        process.send_signal(signal.SIGQUIT)
        _, error = process.communicate(timeout=30)
        crashed = b"crashed" in error or b"Backtrace" in error
        status = process.returncode
        outcome = "crash report" if crashed else (f"ended by signal {signal.Signals(-status).name}" if status < 0 else f"exit {status}")
        print(row("SIGQUIT during `run`", (outcome, status, time.monotonic() - started, None)))
        print(row("`grammar trace` on a rejected instance", measure([typeset, "grammar", "trace", "--schema", str(files[11][1]), "--instance", "[1]"], limit=30)))
        ebnf = Path(directory) / "chain.gbnf"
        ebnf.write_text("root ::= r0\n" + "\n".join(f'r{i} ::= r{i + 1} "a"' for i in range(10_000)) + '\nr10000 ::= "b"\n')
        print(row("GBNF chain of 10,000 rules", measure([typeset, "grammar", "compile", "--ebnf", str(ebnf)], limit=arguments.limit)))
        print(row("`--whitespace flexible:1000000` on `{}`", measure([typeset, "grammar", "compile", "--schema", str(files[0][1]), "--whitespace", "flexible:1000000"], limit=arguments.limit)))


if __name__ == "__main__":
    main()
