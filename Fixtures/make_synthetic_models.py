#!/usr/bin/env python3
"""Tiny random-weight GGUF models of the families that have no real weights on PyPI, written
with gguf-py, and llama.cpp's outputs on them, for Typeset's forward-pass parity tests.

Two steps:

    write    (gguf==0.19.0 and numpy only; run by Fixtures/fetch.sh on every machine)
             writes $TYPESET_CACHE/synthetic/<name>.gguf for every model below and checks each
             file's sha256 against Fixtures/synthetic/<name>.json when that exists. The
             weights come from PCG64's raw 64-bit stream (stable across numpy versions) and
             gguf-py's own quantizers, so the files are identical on every machine.

    record   (the peers venv: llama-cpp-python 0.3.36; run once by a developer)
             runs llama.cpp (CPU, 2 threads, flash attention off, context 512) on each file and
             writes Fixtures/synthetic/<name>.json: the file's sha256; perplexity as
             llama-perplexity computes it over the first CHUNKS chunks of 512 tokens of
             Debian's licence texts (per chunk the summed negative log-likelihood, per position
             llama.cpp's TOP best ids and their logits); greedy continuations of a few prompts
             (32 tokens, with llama.cpp's margin between its best two at each step); and how
             much llama.cpp disagrees with itself on the same chunks when its flash-attention
             path replaces the plain one (top-1 agreement, largest logit difference): the
             noise floor of the arithmetic, against which a disagreement is judged.

    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_synthetic_models.py write
    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_synthetic_models.py record [NAME...]

Every model uses SmolLM2-135M-Instruct's tokenizer (copied key by key from the real file in
the cache, 49,152 tokens), a residual width of 128 and 4 to 7 blocks, so each file is 7-21 MB.
What each one exercises:

    qwen2        biases on the query, key and value projections, NeoX RoPE (base 10^6)
    qwen2-yarn   the same with YaRN RoPE scaling (factor 4 over an original context of 128)
    qwen3        per-head Q/K RMSNorm before RoPE; head width 32 with 8 query heads (query
                 width 256, twice the residual width, as Qwen 3 has key_length != width/heads)
    llama3       Llama 3 RoPE frequency factors (`rope_freqs`, the converter's formula with
                 factor 8, low/high frequency factors 1 and 4 over an original context of 64,
                 so they matter within 256 positions)
    phi3         fused QKV and gate-up projections, partial rotary (24 of 32 dimensions),
                 LongRoPE factors (long set: context 512 > original 256) and attn_factor,
                 queries scaled before attention, a sliding window llama.cpp switches off
    lfm2         short convolutions (L = 3) in blocks 0, 1, 3, 5 and QK-norm GQA attention in
                 blocks 2 and 4, the final norm stored as token_embd_norm
    smollm3      Llama's block without RoPE in every fourth block (block 3)
    qwen3moe     Qwen 3's attention with a mixture of experts in every block: 8 experts of 64
                 hidden units, 2 used per token, softmax router scores renormalized over the
                 chosen two (llama.cpp's build_moe_ffn), experts stored as one 3-D tensor per
                 projection (`ffn_{gate,up,down}_exps`)
    lfm2moe      lfm2's blocks with a dense feed-forward network in block 0 and a mixture of
                 experts in the others (8 experts of 64, 2 used): a sigmoid router whose
                 scores plus a selection bias (`exp_probs_b`) choose the experts and whose
                 unbiased scores, renormalized, weight them
    gpt-oss      OpenAI's gpt-oss block: biases on the Q, K, V and output projections, attention
                 sinks (one logit per head in the softmax's denominator), a 64-token sliding
                 window in the even blocks (0 and 2), YaRN RoPE (factor 4 over an original
                 context of 128, base 150000, beta_fast 32 / beta_slow 1 as the converter writes
                 them); post_attention_norm before a mixture of 8 experts of 64 (2 used) whose
                 router has a bias and is softmaxed over the chosen two, experts in MXFP4 with
                 F32 biases and OpenAI's clamped SwiGLU (alpha 1.702, limit 7, up + 1: gate and up
                 spread so the clamp bites); an untied output matrix (Q4_0), so the file is 13 MB
    gemma4       Gemma 4 E2B's shape in 7 blocks: blocks 2, 4 and 6 attend to the whole context
                 with heads of 64 (a quarter of each rotated: `rope_freqs` of 10^30 for the
                 rest, base 10^6), the others within 64 positions with heads of 32 (base 10^4),
                 as `attention.sliding_window_pattern` lists them; values RMS-normalized, no
                 score scale (the query norm's weights carry 1/sqrt(head)); blocks 5 and 6 read
                 blocks 3's and 4's keys and values (`shared_kv_layers` 2) and have feed-forward
                 networks twice as wide; per-layer token embeddings of 32 per block (a 224-wide
                 Q8_0 table read a row per token, an F16 projection); a scale per block's
                 output; final logit soft-capping at 15 (21 MB: the per-layer table)
    gemma4-moe   Gemma 4 26B-A4B's shape in 4 blocks (the last one full): 4 key/value heads in
                 the sliding-window blocks, 2 in the full one, whose values are its keys (no
                 attn_v); in every block a dense network beside a mixture of 8 experts of 64 (2
                 used, fused `ffn_gate_up_exps`, a softmax router reading the input normalized
                 with its own scale, a scale per expert's output), each with its norms
    qwen35       Qwen 3.5's hybrid in 6 blocks: Gated DeltaNet in blocks 0-2, 4 and 5 (state
                 heads of 32, 2 query/key heads read by 4 value heads, a convolution of 4
                 taps, decays from 0.77 to 0.999 per token so the state remembers across the
                 512-token chunks), full attention in block 3 with its output gated by the
                 query projection's second half, QK-norm, 16 of 64 dimensions rotated by
                 interleaved M-RoPE sections [0, 3, 3, 2] (so pairs 0, 3 and 6, the fastest
                 among them, take the fourth position, 0 for text, and stay still), the
                 recurrent blocks listed and the interval given, as the converter writes them;
                 and, as the converter appends it, a multi-token-prediction block (a draft head
                 with `nextn.*` tensors) after the six, which neither engine runs.
                 Its recurrent blocks have no flash-attention path, so its record also holds
                 llama.cpp's disagreement between a chunk evaluated at once and token by token
    granite-hybrid
                 Granite 4's hybrid in 6 blocks: Mamba2 in blocks 0-2, 4 and 5 (16 heads of 16
                 in 2 groups with states of 64, a convolution of 4 taps with its bias, decays
                 from about 0.77 to 0.999 per token), attention without RoPE in block 3 (the
                 converter's `rope.scaling.finetuned` false), Granite's four multipliers
                 (embeddings ×2, each block output ×0.5 before its residual add, scores ×0.09
                 in place of 1/√32, logits ÷2: smaller than the real ones, which on random
                 weights would let the embedding drown the blocks), an untied output matrix
                 (Q8_0). Its record holds the token-by-token floor too
    granite-hybrid-moe
                 Granite-4.0-H-Tiny's shape at the size of granite-hybrid: the same blocks, with
                 a mixture of experts in place of every feed-forward network (8 experts of 64,
                 the feed-forward length, 2 used; a softmax router renormalized over the
                 chosen two) and beside it a shared expert, a SwiGLU network of 128
                 (`ffn_{gate,up,down}_shexp`, `expert_shared_feed_forward_length`), added to
                 the mixture's output

The Swift tests never run Python or llama.cpp; they read the .json files and the .gguf files
`write` produced.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import quantize

HERE = Path(__file__).resolve().parent
OUT = HERE / "synthetic"
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")
TOKENIZER_SOURCE = CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
WIDTH = 128
CHUNKS = 4
TOP = 8
CTX = 512
GREEDY_TOKENS = 32
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village at the edge of a great forest,",
]
PERPLEXITY_FILES = ["GPL-3", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "LGPL-2.1"]
PERPLEXITY_DIRECTORY = Path("/usr/share/common-licenses")


# ---------------------------------------------------------------------------------------------
# Weights

class Weights:
    """Uniform random values from PCG64's raw stream (numpy guarantees the bit generators'
    streams across versions, not the distributions')."""

    def __init__(self, seed: int):
        self.bits = np.random.PCG64(seed)

    def uniform(self, shape, scale: float) -> np.ndarray:
        count = int(np.prod(shape))
        raw = self.bits.random_raw(count)
        unit = (raw >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
        return ((unit * 2 - 1) * scale).astype(np.float32).reshape(shape)

    def matrix(self, rows: int, columns: int, gain: float = 1.0) -> np.ndarray:
        # Uniform in ±√3/√columns: unit variance of each output for unit-variance inputs.
        return self.uniform((rows, columns), gain * math.sqrt(3.0 / columns))

    def norm(self, count: int) -> np.ndarray:
        return (1.0 + self.uniform((count,), 0.2)).astype(np.float32)


def copy_tokenizer(writer: GGUFWriter, source: GGUFReader) -> None:
    for name, field in source.fields.items():
        if not name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), kind)


def add(writer: GGUFWriter, name: str, values: np.ndarray, qtype: T) -> None:
    values = np.ascontiguousarray(values, dtype=np.float32)
    if qtype == T.F32:
        writer.add_tensor(name, values)
    elif qtype == T.F16:
        writer.add_tensor(name, values.astype(np.float16))
    else:
        writer.add_tensor(name, quantize(values, qtype), raw_dtype=qtype)


def llama3_rope_factors(base: float, dimensions: int, factor=8.0, low=1.0, high=4.0, original=64) -> np.ndarray:
    """The GGUF converter's `rope_freqs` for rope_type "llama3" (its formula, in float32/Python)."""
    freqs = 1.0 / (base ** (np.arange(0, dimensions, 2, dtype=np.float32) / dimensions))
    low_wavelength, high_wavelength = original / low, original / high
    factors = []
    for freq in freqs:
        wavelength = 2 * math.pi / freq
        if wavelength < high_wavelength:
            factors.append(1.0)
        elif wavelength > low_wavelength:
            factors.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


MODELS = {
    "qwen2": dict(arch="qwen2", blocks=4, heads=4, kv=2, head=32, ff=256, base=1e6, biases=True),
    "qwen2-yarn": dict(arch="qwen2", blocks=4, heads=4, kv=2, head=32, ff=256, base=1e6, biases=True,
                       yarn=(4.0, 128)),
    "qwen3": dict(arch="qwen3", blocks=4, heads=8, kv=2, head=32, ff=256, base=1e6, qk_norm=True, key_length=True),
    "llama3": dict(arch="llama", blocks=4, heads=4, kv=2, head=32, ff=256, base=5e5, rope_freqs=True,
                   rope_dimension_count=True),
    "phi3": dict(arch="phi3", blocks=4, heads=4, kv=2, head=32, ff=256, base=1e4, fused=True, rope_dims=24,
                 longrope=(256, 1.19), sliding_window=2047),
    "lfm2": dict(arch="lfm2", blocks=6, heads=4, kv=2, head=32, ff=256, base=1e6, qk_norm=True,
                 conv_blocks={0, 1, 3, 5}, l_cache=3),
    "smollm3": dict(arch="smollm3", blocks=4, heads=4, kv=2, head=32, ff=256, base=5e6, rope_dimension_count=True),
    "qwen3moe": dict(arch="qwen3moe", blocks=4, heads=8, kv=2, head=32, ff=256, base=1e6, qk_norm=True, key_length=True,
                     experts=(8, 2, 64)),
    "lfm2moe": dict(arch="lfm2moe", blocks=6, heads=4, kv=2, head=32, ff=256, base=1e6, qk_norm=True,
                    conv_blocks={0, 1, 3, 5}, l_cache=3, experts=(8, 2, 64), sigmoid_router=True, dense_lead=1),
    # feed_forward_length = expert_feed_forward_length, as the converter writes both from intermediate_size.
    "gpt-oss": dict(arch="gpt-oss", blocks=4, heads=8, kv=2, head=32, ff=64, base=1.5e5, key_length=True, biases=True,
                    rms_eps=1e-5, sliding_window=64, yarn=(4.0, 128), yarn_betas=(32.0, 1.0), experts=(8, 2, 64),
                    oai_moe=True, output=True),
    # Gemma 4 E2B's shape: blocks 2, 4 and 6 attend globally (head width 64, a quarter of it
    # rotated) and the others within 64 positions (width 32); blocks 5 and 6 attend to blocks
    # 3's and 4's keys and values and have feed-forward networks twice as wide; per-layer
    # token embeddings of 32 per block.
    "gemma4": dict(arch="gemma4", blocks=7, heads=4, kv_local=1, kv_global=1, head_local=32, head_global=64,
                   local=[1, 1, 0, 1, 0, 1, 0], window=64, shared_kv=2, per_layer=32, ff=[256] * 5 + [512] * 2,
                   softcap=15.0),
    # Gemma 4 26B-A4B's shape: more key/value heads in the sliding-window blocks than in the
    # full ones, whose values are their keys (no attn_v); a dense network and a mixture of 8
    # experts of 64 (2 used, fused gate-up) in every block.
    "gemma4-moe": dict(arch="gemma4", blocks=4, heads=8, kv_local=4, kv_global=2, head_local=32, head_global=64,
                       local=[1, 1, 1, 0], window=64, ff=[128] * 4, softcap=15.0, keys_as_values=True,
                       experts=(8, 2, 64)),
    # Qwen 3.5's shape: Gated DeltaNet blocks with a full-attention block every fourth.
    "qwen35": dict(arch="qwen35", blocks=6, heads=4, kv=2, head=64, ff=256, base=1e7, rope_dims=16, sections=[0, 3, 3, 2],
                   state=32, key_heads=2, value_heads=4, conv=4, interval=4),
    # Granite 4's hybrid (Granite-4.0-H): Mamba2 blocks with attention in block 3, no RoPE.
    "granite-hybrid": dict(arch="granitehybrid", blocks=6, heads=4, kv=2, head=32, ff=256, attention_blocks={3},
                           state=64, groups=2, mamba_heads=16, conv=4, multipliers=(2.0, 0.5, 0.09, 2.0)),
    # Granite-4.0-H-Tiny's shape: every block's network a mixture of experts as wide as
    # feed_forward_length, and a shared expert beside it.
    "granite-hybrid-moe": dict(arch="granitehybrid", blocks=6, heads=4, kv=2, head=32, ff=64, attention_blocks={3},
                               state=64, groups=2, mamba_heads=16, conv=4, multipliers=(2.0, 0.5, 0.09, 2.0),
                               experts=(8, 2), shared_ff=128),
}


def write_model(name: str, spec: dict, path: Path) -> None:
    arch = spec["arch"]
    weights = Weights(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    source = GGUFReader(str(TOKENIZER_SOURCE))
    vocabulary = len(source.fields["tokenizer.ggml.tokens"].data)
    width, heads, kv, head, ff, blocks = WIDTH, spec["heads"], spec["kv"], spec["head"], spec["ff"], spec["blocks"]
    query_width, key_width = heads * head, kv * head

    writer = GGUFWriter(str(path), arch)
    # Not "phi3"/"phi-3": llama.cpp switches its tokenizer handling on such names.
    writer.add_name(f"Typeset synthetic {name.replace('3', ' 3')}")
    writer.add_context_length(4096)
    writer.add_embedding_length(width)
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    conv_blocks = spec.get("conv_blocks", set())
    writer.add_head_count_kv([0 if b in conv_blocks else kv for b in range(blocks)] if conv_blocks else kv)
    writer.add_rope_freq_base(spec["base"])
    writer.add_layer_norm_rms_eps(spec.get("rms_eps", 1e-6))
    if spec.get("key_length"):
        writer.add_key_length(head)
        writer.add_value_length(head)
    if spec.get("rope_dimension_count"):
        writer.add_rope_dimension_count(head)
    if "rope_dims" in spec:
        writer.add_rope_dimension_count(spec["rope_dims"])
    if "yarn" in spec:
        factor, original = spec["yarn"]
        writer.add_rope_scaling_type(__import__("gguf").RopeScalingType.YARN)
        writer.add_rope_scaling_factor(factor)
        writer.add_rope_scaling_orig_ctx_len(original)
        if "yarn_betas" in spec:
            writer.add_rope_scaling_yarn_beta_fast(spec["yarn_betas"][0])
            writer.add_rope_scaling_yarn_beta_slow(spec["yarn_betas"][1])
    if "longrope" in spec:
        original, attention_factor = spec["longrope"]
        writer.add_rope_scaling_orig_ctx_len(original)
        writer.add_rope_scaling_attn_factors(attention_factor)
    if "sliding_window" in spec:
        writer.add_sliding_window(spec["sliding_window"])
    if "l_cache" in spec:
        writer.add_shortconv_l_cache(spec["l_cache"])
    if "experts" in spec:
        count, used, expert_ff = spec["experts"]
        writer.add_expert_count(count)
        writer.add_expert_used_count(used)
        writer.add_expert_feed_forward_length(expert_ff)
    if spec.get("sigmoid_router"):
        writer.add_expert_gating_func(__import__("gguf").ExpertGatingFuncType.SIGMOID)
    if "dense_lead" in spec:
        writer.add_leading_dense_block_count(spec["dense_lead"])
    if arch in ("llama", "smollm3", "lfm2", "lfm2moe"):
        writer.add_vocab_size(vocabulary)
    copy_tokenizer(writer, source)

    add(writer, "token_embd.weight", weights.uniform((vocabulary, width), 0.3), T.Q8_0)
    add(writer, ("token_embd_norm" if arch.startswith("lfm2") else "output_norm") + ".weight", weights.norm(width), T.F32)
    if spec.get("output"):
        add(writer, "output.weight", weights.uniform((vocabulary, width), 0.3), T.Q4_0)
    rope_dims = spec.get("rope_dims", head)
    if spec.get("rope_freqs"):
        add(writer, "rope_freqs.weight", llama3_rope_factors(spec["base"], rope_dims), T.F32)
    if "longrope" in spec:
        add(writer, "rope_factors_long.weight", (1.0 + weights.uniform((rope_dims // 2,), 1.0) ** 2 * 8).astype(np.float32), T.F32)
        add(writer, "rope_factors_short.weight", (1.0 + weights.uniform((rope_dims // 2,), 0.5) ** 2).astype(np.float32), T.F32)

    for block in range(blocks):
        p = f"blk.{block}."
        add(writer, p + "attn_norm.weight", weights.norm(width), T.F32)
        if block in conv_blocks:
            add(writer, p + "shortconv.conv.weight", weights.uniform((width, spec["l_cache"]), 0.8), T.F32)
            add(writer, p + "shortconv.in_proj.weight", weights.matrix(3 * width, width), T.Q8_0)
            add(writer, p + "shortconv.out_proj.weight", weights.matrix(width, width, 0.5), T.Q5_0)
        else:
            if spec.get("fused"):
                add(writer, p + "attn_qkv.weight", weights.matrix(query_width + 2 * key_width, width), T.Q8_0)
            else:
                add(writer, p + "attn_q.weight", weights.matrix(query_width, width), T.Q8_0)
                add(writer, p + "attn_k.weight", weights.matrix(key_width, width), T.Q5_0)
                add(writer, p + "attn_v.weight", weights.matrix(key_width, width), T.Q4_0)
            if spec.get("biases"):
                add(writer, p + "attn_q.bias", weights.uniform((query_width,), 0.5), T.F32)
                add(writer, p + "attn_k.bias", weights.uniform((key_width,), 0.5), T.F32)
                add(writer, p + "attn_v.bias", weights.uniform((key_width,), 0.5), T.F32)
            if spec.get("qk_norm"):
                add(writer, p + "attn_q_norm.weight", weights.norm(head), T.F32)
                add(writer, p + "attn_k_norm.weight", weights.norm(head), T.F32)
            add(writer, p + "attn_output.weight", weights.matrix(width, query_width, 0.5), T.F16)
        if spec.get("oai_moe"):
            add(writer, p + "attn_output.bias", weights.uniform((width,), 0.2), T.F32)
            # Sink logits in [-2, 4] against attention logits of about unit spread: from negligible to
            # taking most of the weight in a short window.
            add(writer, p + "attn_sinks.weight", (1.0 + weights.uniform((heads,), 3.0)).astype(np.float32), T.F32)
            add(writer, p + "post_attention_norm.weight", weights.norm(width), T.F32)
            count, _, expert_ff = spec["experts"]
            add(writer, p + "ffn_gate_inp.weight", weights.matrix(count, width, 4.0), T.F32)
            add(writer, p + "ffn_gate_inp.bias", weights.uniform((count,), 1.0), T.F32)
            # Gate and up pre-activations of standard deviation about 3.5 (plus biases), so a few
            # percent pass OpenAI's clamp at 7; the down projection scaled back to the residual's size.
            spread = 3.5 * math.sqrt(3.0 / width)
            add(writer, p + "ffn_gate_exps.weight", weights.uniform((count, expert_ff, width), spread), T.MXFP4)
            add(writer, p + "ffn_gate_exps.bias", weights.uniform((count, expert_ff), 1.0), T.F32)
            add(writer, p + "ffn_up_exps.weight", weights.uniform((count, expert_ff, width), spread), T.MXFP4)
            add(writer, p + "ffn_up_exps.bias", weights.uniform((count, expert_ff), 1.0), T.F32)
            add(writer, p + "ffn_down_exps.weight", weights.uniform((count, width, expert_ff), 0.06 * math.sqrt(3.0 / expert_ff)), T.MXFP4)
            add(writer, p + "ffn_down_exps.bias", weights.uniform((count, width), 0.2), T.F32)
            continue
        add(writer, p + "ffn_norm.weight", weights.norm(width), T.F32)
        if "experts" in spec and block >= spec.get("dense_lead", 0):
            count, _, expert_ff = spec["experts"]
            add_experts(writer, weights, p, count, expert_ff, selection_bias=spec.get("sigmoid_router", False))
            continue
        if spec.get("fused"):
            add(writer, p + "ffn_up.weight", weights.matrix(2 * ff, width), T.Q8_0)
            add(writer, p + "ffn_down.weight", weights.matrix(width, ff, 0.5), T.Q5_0)
        else:
            add_swiglu(writer, weights, p, ff)
    finish(writer)


def add_swiglu(writer: GGUFWriter, weights: Weights, prefix: str, hidden: int, suffix: str = "") -> None:
    """A block's SwiGLU network: gate Q4_1, up Q8_0, down Q5_0 (`ffn_gate{suffix}`, ...: a
    shared expert's are `_shexp`)."""
    add(writer, prefix + f"ffn_gate{suffix}.weight", weights.matrix(hidden, WIDTH), T.Q4_1)
    add(writer, prefix + f"ffn_up{suffix}.weight", weights.matrix(hidden, WIDTH), T.Q8_0)
    add(writer, prefix + f"ffn_down{suffix}.weight", weights.matrix(WIDTH, hidden, 0.5), T.Q5_0)


def add_experts(writer: GGUFWriter, weights: Weights, prefix: str, count: int, expert_ff: int,
                selection_bias: bool = False) -> None:
    """A block's mixture of `count` experts of `expert_ff`: an F32 router, the selection bias
    where asked, gate Q4_0, up Q8_0, down Q5_0 as 3-D tensors."""
    # The router spread wide enough that the choice of experts varies from token to token.
    add(writer, prefix + "ffn_gate_inp.weight", weights.matrix(count, WIDTH, 4.0), T.F32)
    if selection_bias:
        # A bias of the order of the sigmoid's spread, so it changes some choices.
        add(writer, prefix + "exp_probs_b.bias", weights.uniform((count,), 0.3), T.F32)
    add(writer, prefix + "ffn_gate_exps.weight", weights.uniform((count, expert_ff, WIDTH), math.sqrt(3.0 / WIDTH)), T.Q4_0)
    add(writer, prefix + "ffn_up_exps.weight", weights.uniform((count, expert_ff, WIDTH), math.sqrt(3.0 / WIDTH)), T.Q8_0)
    add(writer, prefix + "ffn_down_exps.weight", weights.uniform((count, WIDTH, expert_ff), 0.5 * math.sqrt(3.0 / expert_ff)), T.Q5_0)


def finish(writer: GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_gemma4(name: str, spec: dict, path: Path) -> None:
    """Gemma 4 (llama.cpp's `gemma4` graph): interleaved sliding-window and full blocks of their
    own head widths, RoPE bases and rotated dimensions, V RMSNorm and an attention scale of 1;
    per-layer token embeddings, blocks that attend to an earlier block's keys and values,
    feed-forward widths per block, layer output scales, final logit soft-capping (E2B's shape);
    or a mixture of experts beside a dense network in every block (26B-A4B's shape)."""
    arch = "gemma4"
    weights = Weights(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    source = GGUFReader(str(TOKENIZER_SOURCE))
    vocabulary = len(source.fields["tokenizer.ggml.tokens"].data)
    width, heads, blocks = WIDTH, spec["heads"], spec["blocks"]
    local = spec["local"]
    head_local, head_global = spec["head_local"], spec["head_global"]
    kv_local, kv_global = spec["kv_local"], spec["kv_global"]
    shared = spec.get("shared_kv", 0)
    per_layer = spec.get("per_layer", 0)
    ffs = spec["ff"]

    writer = GGUFWriter(str(path), arch)
    writer.add_name(f"Typeset synthetic {name}")
    writer.add_context_length(4096)
    writer.add_embedding_length(width)
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(ffs if len(set(ffs)) > 1 else ffs[0])
    writer.add_head_count(heads)
    writer.add_head_count_kv([kv_local if is_local else kv_global for is_local in local] if kv_local != kv_global else kv_local)
    writer.add_key_length(head_global)
    writer.add_value_length(head_global)
    writer.add_uint32(f"{arch}.attention.key_length_swa", head_local)
    writer.add_uint32(f"{arch}.attention.value_length_swa", head_local)
    writer.add_uint32(f"{arch}.rope.dimension_count", head_global)
    writer.add_uint32(f"{arch}.rope.dimension_count_swa", head_local)
    writer.add_rope_freq_base(1e6)
    writer.add_float32(f"{arch}.rope.freq_base_swa", 1e4)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_sliding_window(spec["window"])
    writer.add_array(f"{arch}.attention.sliding_window_pattern", [bool(b) for b in local])
    writer.add_uint32(f"{arch}.attention.shared_kv_layers", shared)
    writer.add_uint32(f"{arch}.embedding_length_per_layer_input", per_layer)
    writer.add_float32(f"{arch}.final_logit_softcapping", spec["softcap"])
    if "experts" in spec:
        count, used, expert_ff = spec["experts"]
        writer.add_expert_count(count)
        writer.add_expert_used_count(used)
        writer.add_expert_feed_forward_length(expert_ff)
    copy_tokenizer(writer, source)

    add(writer, "token_embd.weight", weights.uniform((vocabulary, width), 0.3), T.Q8_0)
    add(writer, "output_norm.weight", weights.norm(width), T.F32)
    # Proportional RoPE in the full blocks: a quarter of each head's pairs rotate, the others
    # have a factor of 10^30 (the converter's way of leaving them in place).
    rotated = head_global // 8
    add(writer, "rope_freqs.weight", np.array([1.0] * rotated + [1e30] * (head_global // 2 - rotated), dtype=np.float32), T.F32)
    if per_layer:
        add(writer, "per_layer_token_embd.weight", weights.uniform((vocabulary, per_layer * blocks), 0.5), T.Q8_0)
        add(writer, "per_layer_model_proj.weight", weights.matrix(per_layer * blocks, width), T.F16)
        add(writer, "per_layer_proj_norm.weight", weights.norm(per_layer), T.F32)

    for block in range(blocks):
        p = f"blk.{block}."
        is_local = local[block]
        head = head_local if is_local else head_global
        kv = kv_local if is_local else kv_global
        has_kv = block < blocks - shared
        add(writer, p + "attn_norm.weight", weights.norm(width), T.F32)
        add(writer, p + "attn_q.weight", weights.matrix(heads * head, width), T.Q8_0)
        if has_kv:
            add(writer, p + "attn_k.weight", weights.matrix(kv * head, width), T.Q5_0)
            if not (spec.get("keys_as_values") and not is_local):
                add(writer, p + "attn_v.weight", weights.matrix(kv * head, width), T.Q4_0)
            add(writer, p + "attn_k_norm.weight", weights.norm(head), T.F32)
        # Gemma 4 does not scale the scores: its query norm's weights carry the 1/√head.
        add(writer, p + "attn_q_norm.weight", weights.norm(head) / math.sqrt(head), T.F32)
        add(writer, p + "attn_output.weight", weights.matrix(width, heads * head, 0.5), T.Q8_0)
        add(writer, p + "post_attention_norm.weight", weights.norm(width), T.F32)
        add(writer, p + "ffn_norm.weight", weights.norm(width), T.F32)
        add(writer, p + "ffn_gate.weight", weights.matrix(ffs[block], width), T.Q4_1)
        add(writer, p + "ffn_up.weight", weights.matrix(ffs[block], width), T.Q8_0)
        add(writer, p + "ffn_down.weight", weights.matrix(width, ffs[block], 0.5), T.Q5_0)
        add(writer, p + "post_ffw_norm.weight", weights.norm(width), T.F32)
        if "experts" in spec:
            count, _, expert_ff = spec["experts"]
            add(writer, p + "ffn_gate_inp.weight", weights.matrix(count, width, 4.0), T.F32)
            add(writer, p + "ffn_gate_inp.scale", weights.norm(width), T.F32)
            add(writer, p + "pre_ffw_norm_2.weight", weights.norm(width), T.F32)
            add(writer, p + "post_ffw_norm_1.weight", weights.norm(width), T.F32)
            add(writer, p + "post_ffw_norm_2.weight", weights.norm(width), T.F32)
            add(writer, p + "ffn_gate_up_exps.weight", weights.uniform((count, 2 * expert_ff, width), math.sqrt(3.0 / width)), T.Q8_0)
            add(writer, p + "ffn_down_exps.weight", weights.uniform((count, width, expert_ff), 0.5 * math.sqrt(3.0 / expert_ff)), T.Q4_0)
            add(writer, p + "ffn_down_exps.scale", (1.0 + weights.uniform((count,), 0.5)).astype(np.float32), T.F32)
        if per_layer:
            add(writer, p + "inp_gate.weight", weights.matrix(per_layer, width), T.Q8_0)
            add(writer, p + "proj.weight", weights.matrix(width, per_layer), T.Q8_0)
            add(writer, p + "post_norm.weight", weights.norm(width), T.F32)
        add(writer, p + "layer_output_scale.weight", (1.0 + weights.uniform((1,), 0.4)).astype(np.float32), T.F32)
    finish(writer)


def write_qwen35(name: str, spec: dict, path: Path) -> None:
    """Qwen 3.5 (llama.cpp's `qwen35` graph): Gated DeltaNet blocks (`attn_qkv` into a causal
    convolution, `attn_gate`, `ssm_alpha`/`ssm_beta`, `ssm_dt.bias`, `ssm_a` = -exp(A_log),
    `ssm_norm`, `ssm_out`) and gated full-attention blocks (the query projection twice as
    wide), `post_attention_norm` before a SwiGLU network."""
    arch = "qwen35"
    weights = Weights(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    source = GGUFReader(str(TOKENIZER_SOURCE))
    vocabulary = len(source.fields["tokenizer.ggml.tokens"].data)
    width, heads, kv, head, ff, blocks = WIDTH, spec["heads"], spec["kv"], spec["head"], spec["ff"], spec["blocks"]
    state, key_heads, value_heads, conv = spec["state"], spec["key_heads"], spec["value_heads"], spec["conv"]
    recurrent = [(b + 1) % spec["interval"] != 0 for b in range(blocks)] + [False]   # the MTP block attends
    key_dim, value_dim = key_heads * state, value_heads * state

    writer = GGUFWriter(str(path), arch)
    writer.add_name(f"Typeset synthetic {name}")
    writer.add_context_length(4096)
    writer.add_embedding_length(width)
    writer.add_block_count(blocks + 1)
    writer.add_uint32(f"{arch}.nextn_predict_layers", 1)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_key_length(head)
    writer.add_value_length(head)
    writer.add_rope_freq_base(spec["base"])
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_dimension_count(spec["rope_dims"])
    writer.add_array(f"{arch}.rope.dimension_sections", spec["sections"])
    writer.add_uint32(f"{arch}.ssm.conv_kernel", conv)
    writer.add_uint32(f"{arch}.ssm.state_size", state)
    writer.add_uint32(f"{arch}.ssm.group_count", key_heads)
    writer.add_uint32(f"{arch}.ssm.time_step_rank", value_heads)
    writer.add_uint32(f"{arch}.ssm.inner_size", value_dim)
    writer.add_array(f"{arch}.attention.recurrent_layers", recurrent)
    writer.add_uint32(f"{arch}.full_attention_interval", spec["interval"])
    copy_tokenizer(writer, source)

    add(writer, "token_embd.weight", weights.uniform((vocabulary, width), 0.3), T.Q8_0)
    add(writer, "output_norm.weight", weights.norm(width), T.F32)
    for block in range(blocks + 1):
        p = f"blk.{block}."
        add(writer, p + "attn_norm.weight", weights.norm(width), T.F32)
        if block == blocks:
            # The multi-token-prediction head: its own embedding and hidden-state norms and
            # projection, then a full-attention block.
            add(writer, p + "nextn.eh_proj.weight", weights.matrix(width, 2 * width), T.Q8_0)
            add(writer, p + "nextn.enorm.weight", weights.norm(width), T.F32)
            add(writer, p + "nextn.hnorm.weight", weights.norm(width), T.F32)
            add(writer, p + "nextn.shared_head_norm.weight", weights.norm(width), T.F32)
        if recurrent[block]:
            add(writer, p + "attn_qkv.weight", weights.matrix(2 * key_dim + value_dim, width), T.Q8_0)
            add(writer, p + "attn_gate.weight", weights.matrix(value_dim, width), T.Q4_0)
            add(writer, p + "ssm_conv1d.weight", weights.uniform((2 * key_dim + value_dim, conv), 0.6), T.F32)
            # softplus(alpha + dt_bias) from about 0.002 to 0.2 times a in [-2, -0.5]: decays per
            # token from 0.67 to 0.999, so some heads remember across hundreds of tokens.
            add(writer, p + "ssm_dt.bias", (-4.0 + weights.uniform((value_heads,), 2.0)).astype(np.float32), T.F32)
            add(writer, p + "ssm_a", (-1.25 + weights.uniform((value_heads,), 0.75)).astype(np.float32), T.F32)
            add(writer, p + "ssm_alpha.weight", weights.matrix(value_heads, width, 0.5), T.Q8_0)
            add(writer, p + "ssm_beta.weight", weights.matrix(value_heads, width), T.F32)
            add(writer, p + "ssm_norm.weight", weights.norm(state), T.F32)
            add(writer, p + "ssm_out.weight", weights.matrix(width, value_dim, 0.5), T.Q5_0)
        else:
            add(writer, p + "attn_q.weight", weights.matrix(2 * heads * head, width), T.Q8_0)
            add(writer, p + "attn_k.weight", weights.matrix(kv * head, width), T.Q5_0)
            add(writer, p + "attn_v.weight", weights.matrix(kv * head, width), T.Q4_0)
            add(writer, p + "attn_q_norm.weight", weights.norm(head), T.F32)
            add(writer, p + "attn_k_norm.weight", weights.norm(head), T.F32)
            add(writer, p + "attn_output.weight", weights.matrix(width, heads * head, 0.5), T.F16)
        add(writer, p + "post_attention_norm.weight", weights.norm(width), T.F32)
        add_swiglu(writer, weights, p, ff)
    finish(writer)


def write_granite_hybrid(name: str, spec: dict, path: Path) -> None:
    """Granite 4's hybrid (llama.cpp's `granitehybrid` graph): Mamba2 blocks (`ssm_in` giving z,
    the convolution's x, B and C, and a time step per head; `ssm_conv1d` with its bias,
    `ssm_dt.bias`, `ssm_a` = -exp(A_log), `ssm_d`, the grouped `ssm_norm`, `ssm_out`) where
    `attention.head_count_kv` is 0, attention blocks without RoPE elsewhere, a SwiGLU network in
    every block (or, with `experts`, a mixture of experts as wide as `feed_forward_length` and a
    shared expert beside it, as the converter splits Granite MoE's `input_linear` tensors), and
    Granite's embedding, residual, attention and logit multipliers."""
    arch = "granitehybrid"
    weights = Weights(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    source = GGUFReader(str(TOKENIZER_SOURCE))
    vocabulary = len(source.fields["tokenizer.ggml.tokens"].data)
    width, heads, kv, head, ff, blocks = WIDTH, spec["heads"], spec["kv"], spec["head"], spec["ff"], spec["blocks"]
    state, groups, mamba_heads, conv = spec["state"], spec["groups"], spec["mamba_heads"], spec["conv"]
    inner = 2 * width   # llama.cpp supports an expansion factor of 2 only
    channels = inner + 2 * groups * state
    embedding, residual, attention, logits = spec["multipliers"]

    writer = GGUFWriter(str(path), arch)
    writer.add_name(f"Typeset synthetic {name}")
    # Without RoPE the converter writes a context length of 2^20.
    writer.add_context_length(1 << 20)
    writer.add_embedding_length(width)
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv([kv if b in spec["attention_blocks"] else 0 for b in range(blocks)])
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_scaling_finetuned(False)
    writer.add_embedding_scale(embedding)
    writer.add_residual_scale(residual)
    writer.add_attention_scale(attention)
    writer.add_logit_scale(logits)
    writer.add_uint32(f"{arch}.ssm.conv_kernel", conv)
    writer.add_uint32(f"{arch}.ssm.state_size", state)
    writer.add_uint32(f"{arch}.ssm.group_count", groups)
    writer.add_uint32(f"{arch}.ssm.time_step_rank", mamba_heads)
    writer.add_uint32(f"{arch}.ssm.inner_size", inner)
    if "experts" in spec:
        # The converter writes no expert_feed_forward_length: the experts are feed_forward_length wide.
        writer.add_expert_count(spec["experts"][0])
        writer.add_expert_used_count(spec["experts"][1])
        writer.add_expert_shared_feed_forward_length(spec["shared_ff"])
    copy_tokenizer(writer, source)

    add(writer, "token_embd.weight", weights.uniform((vocabulary, width), 0.3), T.Q8_0)
    add(writer, "output_norm.weight", weights.norm(width), T.F32)
    add(writer, "output.weight", weights.matrix(vocabulary, width), T.Q8_0)
    for block in range(blocks):
        p = f"blk.{block}."
        add(writer, p + "attn_norm.weight", weights.norm(width), T.F32)
        if block in spec["attention_blocks"]:
            add(writer, p + "attn_q.weight", weights.matrix(heads * head, width), T.Q8_0)
            add(writer, p + "attn_k.weight", weights.matrix(kv * head, width), T.Q5_0)
            add(writer, p + "attn_v.weight", weights.matrix(kv * head, width), T.Q4_0)
            add(writer, p + "attn_output.weight", weights.matrix(width, heads * head, 0.5), T.F16)
        else:
            # z, then x, B and C, then a time step per head (its rows at half gain).
            projection = np.concatenate([weights.matrix(inner + channels, width), weights.matrix(mamba_heads, width, 0.5)])
            add(writer, p + "ssm_in.weight", projection, T.Q8_0)
            add(writer, p + "ssm_conv1d.weight", weights.uniform((channels, conv), 0.6), T.F32)
            add(writer, p + "ssm_conv1d.bias", weights.uniform((channels,), 0.2), T.F32)
            # softplus(dt + dt_bias) from about 0.002 to 0.2 times A in [-2, -0.5]: decays per
            # token from 0.67 to 0.999, so some heads remember across hundreds of tokens.
            add(writer, p + "ssm_dt.bias", (-4.0 + weights.uniform((mamba_heads,), 2.0)).astype(np.float32), T.F32)
            add(writer, p + "ssm_a", (-1.25 + weights.uniform((mamba_heads, 1), 0.75)).astype(np.float32), T.F32)
            add(writer, p + "ssm_d", (1.0 + weights.uniform((mamba_heads, 1), 0.5)).astype(np.float32), T.F32)
            add(writer, p + "ssm_norm.weight", weights.norm(inner).reshape(groups, inner // groups), T.F32)
            add(writer, p + "ssm_out.weight", weights.matrix(width, inner, 0.5), T.Q5_0)
        add(writer, p + "ffn_norm.weight", weights.norm(width), T.F32)
        if "experts" in spec:
            add_experts(writer, weights, p, spec["experts"][0], ff)
            add_swiglu(writer, weights, p, spec["shared_ff"], suffix="_shexp")
        else:
            add_swiglu(writer, weights, p, ff)
    finish(writer)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_all() -> int:
    if not TOKENIZER_SOURCE.exists():
        raise SystemExit(f"{TOKENIZER_SOURCE} is missing; run Fixtures/fetch.sh first")
    directory = CACHE / "synthetic"
    directory.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name, spec in MODELS.items():
        path = directory / f"{name}.gguf"
        temporary = path.with_suffix(".tmp")
        writer = {"gemma4": write_gemma4, "qwen35": write_qwen35, "granitehybrid": write_granite_hybrid}.get(spec["arch"], write_model)
        writer(name, spec, temporary)
        digest = sha256_of(temporary)
        expected_file = OUT / f"{name}.json"
        if expected_file.exists():
            expected = json.loads(expected_file.read_text())["sha256"]
            if digest != expected:
                print(f"synthetic: {name}: sha256 {digest} differs from the recorded {expected}", file=sys.stderr)
                failures += 1
                temporary.unlink()
                continue
        temporary.replace(path)
        print(f"synthetic: {path} ({path.stat().st_size} bytes, sha256 {digest})", file=sys.stderr)
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# llama.cpp

def record(names: list[str]) -> int:
    import ctypes

    import llama_cpp as L

    callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda *_: None)
    L.llama_log_set(callback, None)
    L.llama_backend_init()
    text = b"".join((PERPLEXITY_DIRECTORY / f).read_bytes() for f in PERPLEXITY_FILES)
    OUT.mkdir(exist_ok=True)
    for name in names:
        path = CACHE / "synthetic" / f"{name}.gguf"
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        model = L.llama_model_load_from_file(str(path).encode(), mp)
        if not model:
            raise SystemExit(f"llama.cpp cannot load {path}")
        vocab = L.llama_model_get_vocab(model)
        n_vocab = L.llama_vocab_n_tokens(vocab)

        def context(flash: bool):
            cp = L.llama_context_default_params()
            cp.n_ctx = cp.n_batch = cp.n_ubatch = CTX
            cp.n_threads = cp.n_threads_batch = 2
            cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
            return L.llama_init_from_model(model, cp)

        ctx = context(False)
        batch = L.llama_batch_init(CTX, 0, 1)

        def tokenize(data: bytes, special: bool) -> list[int]:
            buffer = (L.llama_token * (len(data) + 8))()
            count = L.llama_tokenize(vocab, data, len(data), buffer, len(buffer), special, special)
            return list(buffer[:count])

        def decode(tokens: list[int], start: int, every: bool, ctx=ctx) -> np.ndarray:
            batch.n_tokens = len(tokens)
            for i, token in enumerate(tokens):
                batch.token[i] = token
                batch.pos[i] = start + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1 if every or i == len(tokens) - 1 else 0
            if L.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            first = 0 if every else len(tokens) - 1
            return np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, first + r), shape=(n_vocab,)).copy()
                             for r in range(len(tokens) - first)])

        def clear(ctx=ctx):
            L.llama_memory_clear(L.llama_get_memory(ctx), True)

        tokens = tokenize(text, False)
        chunks = []
        flash = context(True)
        agreements, largest_difference = 0, 0.0
        for c in range(CHUNKS):
            chunk = tokens[c * CTX:(c + 1) * CTX]
            clear()
            logits = decode(chunk, 0, True).astype(np.float64)
            clear(flash)
            flash_logits = decode(chunk, 0, True, ctx=flash).astype(np.float64)
            agreements += int((logits[:-1].argmax(1) == flash_logits[:-1].argmax(1)).sum())
            largest_difference = max(largest_difference, float(np.abs(logits - flash_logits).max()))
            nll = 0.0
            for j in range(CTX // 2, CTX - 1):
                row = logits[j]
                peak = row.max()
                nll -= row[chunk[j + 1]] - peak - np.log(np.exp(row - peak).sum())
            top = np.argsort(-logits[:-1], axis=1, kind="stable")[:, :TOP]
            chunks.append({"nll": nll,
                           "top_ids": top.tolist(),
                           "top_logits": [[round(float(logits[p, i]), 5) for i in top[p]] for p in range(CTX - 1)]})
        L.llama_free(flash)
        # A second noise floor, for families whose arithmetic the flash path barely touches
        # (Qwen 3.5's and Granite 4's recurrent blocks): the first chunk again, a token at a time (llama.cpp's
        # matrix-vector kernels instead of its batched ones).
        single_agreements, single_largest = None, None
        if MODELS[name]["arch"] in ("qwen35", "granitehybrid"):
            chunk = tokens[:CTX]
            clear()
            whole = decode(chunk, 0, True).astype(np.float64)
            clear()
            single = np.concatenate([decode([token], position, True) for position, token in enumerate(chunk)]).astype(np.float64)
            single_agreements = int((whole[:-1].argmax(1) == single[:-1].argmax(1)).sum()) / (CTX - 1)
            single_largest = float(np.abs(whole - single).max())
        scored = CHUNKS * (CTX // 2 - 1)
        ppl = float(np.exp(sum(c["nll"] for c in chunks) / scored))

        prompts = []
        for prompt in PROMPTS:
            clear()
            ids = tokenize(prompt.encode(), True)
            row = decode(ids, 0, False)[0]
            position = len(ids)
            greedy, margins = [], []
            for _ in range(GREEDY_TOKENS):
                order = np.argsort(-row, kind="stable")[:2]
                greedy.append(int(order[0]))
                margins.append(float(row[order[0]] - row[order[1]]))
                row = decode([int(order[0])], position, False)[0]
                position += 1
            prompts.append({"text": prompt, "tokens": ids, "greedy": greedy, "margins": margins})

        result = {"model": f"{name}.gguf", "sha256": sha256_of(path), "spec": {k: (sorted(v) if isinstance(v, set) else v)
                                                                               for k, v in MODELS[name].items()},
                  "llama_cpp_python": L.__version__, "ctx": CTX, "flash_attention": False,
                  "files": [str(PERPLEXITY_DIRECTORY / f) for f in PERPLEXITY_FILES],
                  "text_sha256": hashlib.sha256(text).hexdigest(), "tokens": tokens[:CHUNKS * CTX],
                  "scored": scored, "ppl": ppl,
                  "flash_agreement": agreements / (CHUNKS * (CTX - 1)), "flash_largest_difference": largest_difference,
                  **({} if single_largest is None else {"single_token_agreement": single_agreements,
                                                         "single_token_largest_difference": single_largest}),
                  "chunks": chunks, "prompts": prompts}
        (OUT / f"{name}.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
        print(f"synthetic: {name}: perplexity {ppl:.4f}, greedy {prompts[0]['greedy'][:6]}…", file=sys.stderr)
        L.llama_batch_free(batch)
        L.llama_free(ctx)
        L.llama_model_free(model)
    return 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("write", "record"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "write":
        return write_all()
    return record(sys.argv[2:] or list(MODELS))


if __name__ == "__main__":
    sys.exit(main())
