#!/usr/bin/env python3
"""Time to open and index a GGUF model: `typeset inspect` against gguf-py's GGUFReader.

Two figures per model, each the median of --runs runs after one warm-up (page cache warm):

* whole process: `typeset inspect MODEL --json` versus a Python process that imports gguf,
  builds GGUFReader(MODEL) (which parses every metadata field and tensor info) and prints
  the counts. This is what a user waits for.
* in process: the time Typeset reports for GGUFFile(contentsOf:) (`open_ms` in the JSON)
  versus the time of the GGUFReader(MODEL) call alone.

    python3 -m venv venv && venv/bin/pip install gguf==0.19.0
    venv/bin/python Benchmarks/gguf_open.py --typeset .build/release/typeset [--runs 11] MODEL...

Prints a Markdown table (and --json a JSON line per model).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

PY_READER = """
import sys, time
t0 = time.perf_counter()
from gguf import GGUFReader
t1 = time.perf_counter()
r = GGUFReader(sys.argv[1])
t2 = time.perf_counter()
print(len(r.tensors), len(r.fields), (t2 - t1) * 1000)
"""


def timed(command):
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return (time.perf_counter() - start) * 1000, out


def cpu_line():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--typeset", default=".build/release/typeset")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []
    for model in args.models:
        typeset_process, typeset_open, python_process, python_open = [], [], [], []
        for run in range(args.runs + 1):
            elapsed, out = timed([args.typeset, "inspect", model, "--json"])
            report = json.loads(out)
            elapsed_py, out_py = timed([sys.executable, "-c", PY_READER, model])
            tensors, _, reader_ms = out_py.split()
            assert int(tensors) == report["tensor_count"], "the two readers disagree on the tensor count"
            if run == 0:
                continue  # warm-up
            typeset_process.append(elapsed)
            typeset_open.append(report["open_ms"])
            python_process.append(elapsed_py)
            python_open.append(float(reader_ms))
        row = {
            "model": os.path.basename(model),
            "typeset_process_ms": statistics.median(typeset_process),
            "gguf_py_process_ms": statistics.median(python_process),
            "typeset_open_ms": statistics.median(typeset_open),
            "gguf_py_open_ms": statistics.median(python_open),
        }
        row["process_speedup"] = row["gguf_py_process_ms"] / row["typeset_process_ms"]
        row["open_speedup"] = row["gguf_py_open_ms"] / row["typeset_open_ms"]
        rows.append(row)
        if args.json:
            print(json.dumps(row))

    if not args.json:
        print(f"CPU: {cpu_line()}, {os.cpu_count()} cores; medians of {args.runs} runs\n")
        print("| model | typeset inspect (process) | gguf-py (process) | ratio | GGUFFile open | GGUFReader() | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['model']} | {r['typeset_process_ms']:.1f} ms | {r['gguf_py_process_ms']:.1f} ms | "
                  f"{r['process_speedup']:.1f}× | {r['typeset_open_ms']:.2f} ms | {r['gguf_py_open_ms']:.1f} ms | "
                  f"{r['open_speedup']:.0f}× |")


if __name__ == "__main__":
    main()
