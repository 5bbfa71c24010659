#!/usr/bin/env python3
"""Records llama.cpp's logits and greedy continuations for a few prompts, for Typeset's
forward-pass parity tests.

Run once by a developer, in a venv with llama-cpp-python 0.3.36 (docs/architecture.md, "Fixtures
and the cache", says how to make it):

    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_generation_fixtures.py

Writes Fixtures/generation/<model>.json with, per prompt:
  tokens        the prompt's ids (llama.cpp's tokenizer, special tokens added and parsed)
  positions     per prompt position: the top 5 next-token ids and their logits
  last_top      the last position's 50 highest logits, as [id, logit]
  last_sample   the last position's logits at 64 fixed ids spread over the vocabulary
  greedy        32 tokens continued greedily (argmax of llama.cpp's logits, computed here)
  margins       per greedy step, the logit gap between the best and second-best token
Also writes Fixtures/generation/<model>.perplexity.json: perplexity as llama-perplexity
computes it (chunks of 512 tokens, BOS first when the model adds one, the second half of each
chunk scored) over PERPLEXITY_TEXT, with per chunk the summed negative log-likelihood and the
argmax of every position's logits (for top-1 agreement).

The Swift tests never run Python or llama.cpp.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import sys
from pathlib import Path

import numpy as np
import llama_cpp as L

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")
MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
    "qwen0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "qwen1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
}
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village at the edge of a great forest,",
    "Les mathématiques sont",
    "1, 2, 3, 5, 8, 13,",
]
CHAT = {
    "smollm2": "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "gemma3": "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n",
    "qwen0.5b": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
}
CHAT["qwen1.5b"] = CHAT["qwen0.5b"]
GREEDY_TOKENS = 32
# English prose no one here wrote, present on every Debian system (package base-files).
PERPLEXITY_FILES = ["GPL-3", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "LGPL-2.1"]
PERPLEXITY_DIRECTORY = Path("/usr/share/common-licenses")
PERPLEXITY_CTX = 512


def quiet():
    callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda *_: None)
    L.llama_log_set(callback, None)
    return callback


class Runner:
    def __init__(self, path: Path, n_ctx: int = 512, flash_attention: bool | None = None, pooling: int | None = None):
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(str(path).encode(), mp)
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_ctx
        cp.n_ubatch = n_ctx
        cp.n_threads = cp.n_threads_batch = 2
        # llama.cpp's defaults ("auto" flash attention, which this CPU takes, and an F16 KV
        # cache). Note: with flash attention off, llama.cpp's own last-position logits move by
        # up to 1.35 on Gemma 3 for these prompts; that is the scale of "agreement" here.
        if flash_attention is not None:
            cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attention else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.n_outputs_max = 0
        cp.n_outputs_max_per_seq = 0
        if pooling is not None:
            # An embedding context: the last hidden states (pooled as asked) instead of logits.
            cp.embeddings = True
            cp.pooling_type = pooling
        self.ctx = L.llama_init_from_model(self.model, cp)
        self.batch = L.llama_batch_init(n_ctx, 0, 1)

    def tokenize(self, text: str) -> list[int]:
        data = text.encode()
        buffer = (L.llama_token * (len(data) + 8))()
        count = L.llama_tokenize(self.vocab, data, len(data), buffer, len(buffer), True, True)
        return list(buffer[:count])

    def decode(self, tokens: list[int], start: int, all_logits: bool) -> np.ndarray:
        b = self.batch
        b.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            b.token[i] = token
            b.pos[i] = start + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if all_logits or i == len(tokens) - 1 else 0
        if L.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")
        rows = len(tokens) if all_logits else 1
        first = 0 if all_logits else len(tokens) - 1
        return np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(self.ctx, first + r), shape=(self.n_vocab,)).copy()
                         for r in range(rows)])

    def embeddings(self, tokens: list[int], pooled: bool) -> np.ndarray:
        """The tokens' embeddings from an embedding context: one pooled row, or one per token."""
        b = self.batch
        b.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            b.token[i] = token
            b.pos[i] = i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1
        if L.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")
        width = L.llama_model_n_embd(self.model)
        if pooled:
            return np.ctypeslib.as_array(L.llama_get_embeddings_seq(self.ctx, 0), shape=(1, width)).copy()
        return np.stack([np.ctypeslib.as_array(L.llama_get_embeddings_ith(self.ctx, i), shape=(width,)).copy()
                         for i in range(len(tokens))])

    def clear(self):
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)


def record(name: str) -> dict:
    # Flash attention off, as for perplexity below: the path Typeset's attention reproduces.
    runner = Runner(CACHE / "models" / MODELS[name], flash_attention=False)
    prompts = []
    for text in PROMPTS + [CHAT[name]]:
        runner.clear()
        tokens = runner.tokenize(text)
        logits = runner.decode(tokens, 0, all_logits=True)
        positions = []
        for row in logits:
            top = np.argsort(-row, kind="stable")[:5]
            positions.append({"ids": [int(i) for i in top], "logits": [float(row[i]) for i in top]})
        last = logits[-1]
        top50 = np.argsort(-last, kind="stable")[:50]
        sample_ids = [int(i) for i in np.linspace(0, runner.n_vocab - 1, 64).astype(int)]
        greedy, margins = [], []
        row = logits[-1]
        position = len(tokens)
        for _ in range(GREEDY_TOKENS):
            order = np.argsort(-row, kind="stable")[:2]
            greedy.append(int(order[0]))
            margins.append(float(row[order[0]] - row[order[1]]))
            row = runner.decode([int(order[0])], position, all_logits=False)[0]
            position += 1
        prompts.append({"text": text, "tokens": tokens, "positions": positions,
                        "last_top": [[int(i), float(last[i])] for i in top50],
                        "last_sample": [[i, float(last[i])] for i in sample_ids],
                        "greedy": greedy, "margins": margins})
        print(f"{name}: {text[:40]!r}: {len(tokens)} tokens, greedy {greedy[:8]}…", file=sys.stderr)
    return {"model": MODELS[name], "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
            "n_ctx": 512, "threads": 2, "flash_attention": False, "prompts": prompts}


def perplexity(name: str) -> dict:
    import hashlib
    text = b"".join((PERPLEXITY_DIRECTORY / f).read_bytes() for f in PERPLEXITY_FILES)
    # Flash attention off: llama.cpp's flash-attention kernel rounds queries to f16 and sums
    # values in f16, and with it llama.cpp's own argmax changes at ~3.6% of these positions
    # (SmolLM2, first 3 chunks: 1,478 of 1,533 agree between its two paths). The plain path
    # computes attention in f32 and is the reference that does not carry that noise.
    runner = Runner(CACHE / "models" / MODELS[name], n_ctx=PERPLEXITY_CTX, flash_attention=False)
    add_bos = bool(L.llama_vocab_get_add_bos(runner.vocab))
    bos = L.llama_vocab_bos(runner.vocab)
    buffer = (L.llama_token * (len(text) + 8))()
    count = L.llama_tokenize(runner.vocab, text, len(text), buffer, len(buffer), add_bos, False)
    tokens = list(buffer[:count])
    ctx = PERPLEXITY_CTX
    chunks = []
    total, scored = 0.0, 0
    for c in range(len(tokens) // ctx):
        chunk = tokens[c * ctx:(c + 1) * ctx]
        if add_bos:
            chunk = [bos] + chunk[1:]
        runner.clear()
        logits = runner.decode(chunk, 0, all_logits=True).astype(np.float64)
        nll = 0.0
        for j in range(ctx // 2, ctx - 1):
            row = logits[j]
            peak = row.max()
            nll -= row[tokens[c * ctx + j + 1]] - peak - np.log(np.exp(row - peak).sum())
            scored += 1
        total += nll
        chunks.append({"nll": nll, "argmax": [int(i) for i in logits[:-1].argmax(axis=1)]})
        print(f"{name}: perplexity chunk {c + 1}: nll {nll:.3f}", file=sys.stderr)
    return {"model": MODELS[name], "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
            "files": [str(PERPLEXITY_DIRECTORY / f) for f in PERPLEXITY_FILES],
            "sha256": hashlib.sha256(text).hexdigest(), "ctx": ctx, "tokens": len(tokens), "flash_attention": False,
            "scored": scored, "ppl": float(np.exp(total / scored)), "chunks": chunks}


def main():
    keep = quiet()
    L.llama_backend_init()
    out = HERE / "generation"
    out.mkdir(exist_ok=True)
    arguments = sys.argv[1:]
    names = list(MODELS)
    if "--models" in arguments:
        index = arguments.index("--models")
        names = arguments[index + 1].split(",")
        del arguments[index:index + 2]
    only = arguments or ["prompts", "perplexity"]
    for name in names:
        if not (CACHE / "models" / MODELS[name]).exists():
            print(f"{name}: {MODELS[name]} is not in the cache; skipped", file=sys.stderr)
            continue
        if "prompts" in only:
            (out / f"{name}.json").write_text(json.dumps(record(name)) + "\n")
        if "perplexity" in only:
            (out / f"{name}.perplexity.json").write_text(json.dumps(perplexity(name)) + "\n")
    del keep


if __name__ == "__main__":
    main()
