#!/usr/bin/env python3
"""Records llama.cpp's embeddings of a few texts, for Typeset's embedding parity tests.

Run once by a developer, in the venv of make_generation_fixtures.py (docs/architecture.md,
"Fixtures and the cache"):

    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_embedding_fixtures.py

Writes Fixtures/generation/<model>.embeddings.json with, per text:
  text, tokens   the text and llama.cpp's tokens for it (special tokens added and parsed, as
                 its embedding endpoints tokenize)
  mean, last, cls  the pooled embedding, as computed (not normalized), rounded to 7 digits
and, for the first text, `none`: every token's embedding (pooling none).
The last text is longer than 512 tokens, so a prompt computed in several chunks is covered.
Flash attention off, an F16 KV cache, 2 threads: the path make_generation_fixtures.py records.

The Swift tests never run Python or llama.cpp.
"""
from __future__ import annotations

import importlib.metadata
import json
import sys

import llama_cpp as L

from make_generation_fixtures import CACHE, HERE, MODELS, Runner, quiet

TEXTS = [
    "The capital of France is Paris.",
    "def add(a, b):\n    return a + b\n",
    "Les mathématiques sont belles.",
    # Prose no one here wrote, on every Debian system (base-files): about 700 tokens.
    open("/usr/share/common-licenses/Apache-2.0", encoding="utf-8").read()[:3200],
]
POOLINGS = {"mean": L.LLAMA_POOLING_TYPE_MEAN, "last": L.LLAMA_POOLING_TYPE_LAST, "cls": L.LLAMA_POOLING_TYPE_CLS,
            "none": L.LLAMA_POOLING_TYPE_NONE}
CONTEXT = 1024


def rounded(rows) -> list:
    return [[float(f"{value:.7g}") for value in row] for row in rows]


def record(name: str) -> dict:
    entries = [{"text": text} for text in TEXTS]
    for pooling, number in POOLINGS.items():
        runner = Runner(CACHE / "models" / MODELS[name], n_ctx=CONTEXT, flash_attention=False, pooling=number)
        for index, entry in enumerate(entries):
            if pooling == "none" and index > 0:
                break
            tokens = runner.tokenize(entry["text"])
            assert entry.setdefault("tokens", tokens) == tokens
            runner.clear()
            rows = runner.embeddings(tokens, pooled=pooling != "none")
            entry[pooling] = rounded(rows) if pooling == "none" else rounded(rows)[0]
        print(f"{name}: pooling {pooling}: {len(entries)} texts", file=sys.stderr)
    return {"model": MODELS[name], "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
            "n_ctx": CONTEXT, "threads": 2, "flash_attention": False, "texts": entries}


def main():
    keep = quiet()
    L.llama_backend_init()
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ["smollm2", "qwen0.5b", "gemma3"]
    for name in names:
        if not (CACHE / "models" / MODELS[name]).exists():
            print(f"{name}: {MODELS[name]} is not in the cache; skipped", file=sys.stderr)
            continue
        (HERE / "generation" / f"{name}.embeddings.json").write_text(json.dumps(record(name)) + "\n")
    del keep


if __name__ == "__main__":
    main()
