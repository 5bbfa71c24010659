#!/usr/bin/env python3
"""Tokenizer throughput of the llama.cpp peer (llama-cpp-python's low-level llama_tokenize).

    $PEERS_VENV/bin/python Benchmarks/tokenize_peer.py MODEL.gguf FILE [--runs N] [--parse-special]

Loads MODEL with vocab_only=true (no weights, no context; llama_tokenize is single-threaded),
tokenizes the whole of FILE once as a warm-up and then N more times (default 5), each call timed
on its own, with add_special=false and parse_special as given.  Prints one JSON line:

    {"engine": "llama.cpp", "model": ..., "file": ..., "bytes": ..., "tokens": ...,
     "parse_special": ..., "mb_s": <bytes / 1e6 / median seconds>, "runs_s": [...], ...}

Set LLAMA_VERBOSE=1 to see llama.cpp's log.
"""
import argparse
import ctypes
import json
import os
import statistics
import time

import llama_cpp as L


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("file")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--parse-special", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    if not os.environ.get("LLAMA_VERBOSE"):
        quiet = L.llama_log_callback(lambda level, text, user: None)
        L.llama_log_set(quiet, ctypes.c_void_p(0))
    L.llama_backend_init()
    params = L.llama_model_default_params()
    params.vocab_only = True
    params.n_gpu_layers = 0
    model = L.llama_model_load_from_file(args.model.encode(), params)
    if not model:
        raise SystemExit(f"failed to load {args.model}")
    vocab = L.llama_model_get_vocab(model)

    text = open(args.file, "rb").read()
    capacity = len(text) + 16
    buf = (L.llama_token * capacity)()

    def tokenize() -> int:
        n = L.llama_tokenize(vocab, text, len(text), buf, capacity, False, args.parse_special)
        if n < 0:
            raise SystemExit(f"llama_tokenize needs {-n} slots, have {capacity}")
        return n

    tokens = tokenize()  # warm-up
    runs = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        n = tokenize()
        runs.append(time.perf_counter() - t0)
        if n != tokens:
            raise SystemExit(f"token count changed between runs ({tokens} then {n})")
    median = statistics.median(runs)
    print(json.dumps({
        "engine": "llama.cpp",
        "llama_cpp_python": L.__version__,
        "model": os.path.basename(args.model),
        "file": os.path.basename(args.file),
        "bytes": len(text),
        "tokens": tokens,
        "parse_special": args.parse_special,
        "mb_s": round(len(text) / 1e6 / median, 3),
        "runs_s": [round(r, 5) for r in runs],
    }))
    L.llama_model_free(model)


if __name__ == "__main__":
    main()
