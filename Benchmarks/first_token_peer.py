#!/usr/bin/env python3
"""Time to first token for llama.cpp, for comparison with `typeset bench decode`'s
`first_token_s`.

    ~/.cache/typeset-peers/venv/bin/python Benchmarks/first_token_peer.py MODEL [--prompt-tokens 128] [--threads 2]

Measures from just before the model is loaded (after Python and llama_cpp are imported, which
is not counted) to the first generated token: load the GGUF, create a context, evaluate a
prompt of BOS (if the model adds one) plus the same English/JSON filler `typeset bench decode`
and the peers' llama_bench.py use, and sample greedily. Typeset's figure is counted from
process start, so it also pays for starting the process. Prints one JSON line.
"""
import argparse
import ctypes
import json
import os
import time

import llama_cpp as L

FILLER = (b"The quick brown fox jumps over the lazy dog. In 1969, astronauts landed on the Moon, "
          b"and millions watched the grainy broadcast live. Structured output lets a language model "
          b"emit JSON that always parses: {\"name\": \"Ada\", \"age\": 36, \"tags\": [\"math\", \"code\"]}. ")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    silence = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda *_: None)
    L.llama_log_set(silence, None)

    start = time.perf_counter()
    L.llama_backend_init()
    params = L.llama_model_default_params()
    params.n_gpu_layers = 0
    model = L.llama_model_load_from_file(args.model.encode(), params)
    vocab = L.llama_model_get_vocab(model)
    context_params = L.llama_context_default_params()
    context_params.n_ctx = context_params.n_batch = 2048
    context_params.n_threads = context_params.n_threads_batch = args.threads
    context = L.llama_init_from_model(model, context_params)
    buffer = (L.llama_token * 4096)()
    count = L.llama_tokenize(vocab, FILLER, len(FILLER), buffer, 4096, False, False)
    body = list(buffer[:count])
    tokens = [L.llama_vocab_bos(vocab)] if L.llama_vocab_get_add_bos(vocab) else []
    while len(tokens) < args.prompt_tokens:
        tokens += body
    tokens = tokens[:args.prompt_tokens]
    batch = L.llama_batch_init(len(tokens), 0, 1)
    batch.n_tokens = len(tokens)
    for i, token in enumerate(tokens):
        batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, i, 1, 0
        batch.seq_id[i][0] = 0
    batch.logits[len(tokens) - 1] = 1
    L.llama_decode(context, batch)
    sampler = L.llama_sampler_init_greedy()
    first = L.llama_sampler_sample(sampler, context, -1)
    seconds = time.perf_counter() - start
    print(json.dumps({"engine": "llama.cpp", "model": os.path.basename(args.model), "prompt_tokens": len(tokens),
                      "threads": args.threads, "first_token_s": round(seconds, 4), "first_token": first}))


if __name__ == "__main__":
    main()
