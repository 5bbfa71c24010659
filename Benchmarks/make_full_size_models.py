#!/usr/bin/env python3
"""Full-size random-weight GGUF files of four mixture-of-experts models, Gemma 4 E2B,
Qwen3.5-4B (and Qwen3-4B beside it) and Granite-4.0-H-Micro, for speed benchmarks.

The weights are random, so the files say nothing about correctness; what they reproduce is
what decides speed: every tensor's shape and type, as in a Q4_K_M file of the real model
(gpt-oss: as in the MXFP4 file that ggml-org publishes, ggml-org/gpt-oss-20b-GGUF).

    lfm2moe-8b-a1b.gguf     LiquidAI LFM2-8B-A1B, architecture `lfm2moe`, about 5.0 GB
    qwen3moe-30b-a3b.gguf   Qwen Qwen3-30B-A3B, architecture `qwen3moe`, about 18.5 GB
    gpt-oss-20b.gguf        OpenAI gpt-oss-20b, architecture `gpt-oss`, about 12.1 GB
    gemma4-e2b.gguf         Google Gemma 4 E2B (text), architecture `gemma4`, about 3.5 GB
    qwen35-4b.gguf          Qwen Qwen3.5-4B (text), architecture `qwen35`, about 2.7 GB
    qwen3-4b.gguf           Qwen Qwen3-4B, architecture `qwen3`, about 2.5 GB: Qwen3.5-4B's
                            attention-only counterpart, for the 4,096-token prompt comparison
    granite-4-h-micro.gguf  IBM Granite-4.0-H-Micro, architecture `granitehybrid`, about 1.9 GB
    granite-4-h-tiny.gguf   IBM Granite-4.0-H-Tiny, architecture `granitehybrid` with experts,
                            about 4.0 GB

All go to $TYPESET_CACHE/full-size/ (default ~/.cache/typeset/full-size/), never into the
repository. Needs gguf (0.19.0) and numpy only, and the tokenizer files of Fixtures/fetch.sh:

    ~/.cache/typeset/python/bin/python Benchmarks/make_full_size_models.py [NAME...]

NAME is a file name without .gguf (default: all eight). A file is skipped when it exists with a
sidecar NAME.gguf.stamp recording this script's sha256 and the file's size, so a run after an
edit of this script rewrites the files and any other run does nothing. A file is written
streaming, tensor by tensor (one tensor in memory at a time, the largest 615 MB, gpt-oss's
embedding and output; the process peaks at about 0.7 GB), into NAME.gguf.tmp, renamed when
complete: about 15 s, 45 s and 30 s.

Benchmark with them:

    .build/release/typeset bench decode --model ~/.cache/typeset/full-size/qwen3moe-30b-a3b.gguf
    ~/.cache/typeset-peers/venv/bin/python ../shared/peers/llama_bench.py \\
        bench ~/.cache/typeset/full-size/qwen3moe-30b-a3b.gguf --threads 2

(llama.cpp's CPU backend copies gpt-oss's MXFP4 experts into a repacked buffer of 9.5 GiB
beside the 11.3 GiB mapping of the file: its resident set reaches 20.7 GiB of the machine's
23.5, mapped pages included. Measure with nothing else running: a concurrent build cuts its
decode speed by a factor of up to 6.)

Shapes. The hyperparameters are the published config.json files',
https://huggingface.co/LiquidAI/LFM2-8B-A1B/blob/main/config.json,
https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json and
https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json, written under the GGUF keys
llama.cpp's converter (convert_hf_to_gguf.py: conversion/lfm2.py LFM2MoeModel,
conversion/qwen.py Qwen2MoeModel/Qwen3MoeModel, conversion/gpt_oss.py GptOssModel,
conversion/base.py TextModel) writes for them, and the tensors are those llama.cpp creates
(src/models/lfm2moe.cpp, src/models/qwen3moe.cpp, src/models/openai-moe.cpp):

    LFM2-8B-A1B   24 blocks, width 2048; attention (32 heads, 8 key/value heads of 64, QK norm)
                  in blocks 2, 6, 10, 14, 18, 21 (config's layer_types), gated short
                  convolutions (L = 3) in the other 18; dense SwiGLU of 7168 in blocks 0-1
                  (num_dense_layers), 32 experts of 1792, 4 used, in blocks 2-23, a sigmoid
                  router whose expert bias (`exp_probs_b.bias`) steers the choice; RoPE base
                  10^6, RMS epsilon 1e-5, context 128000, 65536 tokens, output tied to the
                  embedding, final norm stored as `token_embd_norm`.
    Qwen3-30B-A3B 48 blocks, width 2048; attention in every block (32 heads, 4 key/value heads,
                  head width 128, so queries are 4096 wide, QK norm); 128 experts of 768, 8
                  used, softmax router, in every block (feed_forward_length 6144 is written, as
                  the converter does, but no block uses it); RoPE base 10^6, RMS epsilon 1e-6,
                  context 40960, 151936 tokens, a separate output matrix.
    gpt-oss-20b   24 blocks, width 2880; attention in every block (64 heads, 8 key/value heads,
                  head width 64, so queries are 4096 wide, output 4096 -> 2880), with biases on
                  q, k, v and output and a per-head sink logit (`attn_sinks`, 64 floats), a
                  sliding window of 128 in the even blocks (llama.cpp's default pattern of 2:
                  the config's layer_types, no key written), full attention in the odd ones; 32
                  experts of 2880, 4 used, their gate, up and down each with a bias per expert,
                  a router with a bias, softmax over the chosen 4 and the clamped SwiGLU (both
                  fixed in llama.cpp's graph, no key); pre-FFN norm `post_attention_norm`; RoPE
                  base 150000 with YaRN (factor 32, original context 4096, beta_fast 32,
                  beta_slow 1: today's converter writes the betas, the published file, older,
                  has no such keys, and llama.cpp's defaults are the same), RMS epsilon 1e-5,
                  context 131072, 201088 tokens, a separate output matrix;
                  feed_forward_length 2880 written as the converter does.
    Gemma 4 E2B   35 blocks, width 1536 (google/gemma-4-E2B's text_config): every fifth block
                  (4, 9, ..., 34) full attention with heads of 512, a quarter of each rotated
                  (`rope_freqs`: 64 factors of 1 and 192 of 1e30, as conversion/gemma.py
                  generates them, base 10^6), the others a window of 512 with heads of 256
                  (base 10^4); 8 heads, 1 key/value head; the last 20 blocks read blocks 13's
                  and 14's keys and values (no k, v or k-norm of their own) and have GeGLU
                  networks of 12288 (use_double_wide_mlp), the first 15 of 6144; per-layer
                  token embeddings of 256 per block (`per_layer_token_embd` [8960, 262144],
                  `per_layer_model_proj` [1536, 8960], `inp_gate`, `proj`, `post_norm`), a
                  `layer_output_scale` per block, final logit soft-capping 30, RMS epsilon
                  1e-6, context 131072, 262144 tokens, the output tied to the embedding.
    Qwen3.5-4B    32 blocks, width 2560 (Qwen/Qwen3.5-4B's text_config): every fourth block
                  (3, 7, ..., 31) full attention (16 heads, 4 key/value heads of 256, the query
                  projection twice as wide for the output gate, QK norm, 64 dimensions rotated
                  by M-RoPE sections [11, 11, 10, 0], base 10^7), the other 24 Gated DeltaNets
                  (16 query/key heads and 32 value heads of 128, a convolution of 4 taps over
                  8192 channels); SwiGLU of 9216 in every block behind `post_attention_norm`;
                  RMS epsilon 1e-6, context 262144, 248320 tokens, the output tied to the
                  embedding (as in the smaller Qwen 3 and 3.5 models; the 4B's config.json may
                  say otherwise, which would add a 520 MB output matrix to each token's reads).
                  The multi-token-prediction block the converter appends is left out: neither
                  engine runs it.
    Qwen3-4B      36 blocks, width 2560 (Qwen/Qwen3-4B's config.json): attention in every
                  block (32 heads, 8 key/value heads of 128, QK norm), SwiGLU of 9728, RoPE
                  base 10^6, RMS epsilon 1e-6, context 40960, 151936 tokens, tied output.

Types. The mapping llama-quantize applies for Q4_K_M (src/llama-quant.cpp,
llama_tensor_get_type_impl), tensors taken in the order it takes them (by block, then name):

    token_embd            Q6_K when tied to the output (LFM2), else Q4_K (the default type)
    output                Q6_K
    attn_v                Q6_K where use_more_bits(i, n) holds for the i-th of the n attn_v
                          tensors, else Q4_K (LFM2: attention blocks 10 and 21; Qwen3: blocks
                          0-5, 8, 11, ..., 41, 42-47)
    ffn_down, _exps       Q6_K in the blocks where use_more_bits(block, blocks) holds, else
                          Q4_K (LFM2: 0-2, 5, 8, ..., 20, 21-23; Qwen3: as attn_v)
    everything else 2-D   Q4_K: attn_q, attn_k, attn_output (Q5_K only with exactly 8
                          experts), ffn_gate/ffn_up and their _exps, shortconv in/out_proj
    kept F32              norms, the router `ffn_gate_inp`, `shortconv.conv`, `exp_probs_b`
                          (the converter writes them F32 and llama-quantize leaves them)

where use_more_bits(i, n) = i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2.

Qwen3.5-4B: attn_qkv Q5_K (llama-quant's rule for fused query-key-value projections), attn_v
and ffn_down Q6_K where use_more_bits(block, 32) holds (attn_v counts with the attn_qkv
tensors, one per block), token_embd Q6_K (tied), every other matrix Q4_K (ssm_alpha and
ssm_beta too: rows of 2560), ssm_conv1d, ssm_dt, ssm_a and the norms F32.

Gemma 4 E2B, tied: token_embd and per_layer_token_embd (both in the token-embedding category)
Q6_K, as the output they stand for; per_layer_model_proj left as converted (llama-quant.cpp
keeps it: F16 here); attn_v (15 of them, the shared blocks have none) and ffn_down by
use_more_bits; the other matrices Q4_K; norms, `layer_output_scale` and `rope_freqs` F32.

gpt-oss-20b is typed as ggml-org/gpt-oss-20b-GGUF's gpt-oss-20b-mxfp4.gguf (general.file_type
38, MXFP4_MOE; 459 tensors, of them 289 F32, 98 Q8_0 and 72 MXFP4; 20.91 B parameters, 11.27 GiB,
as llama.cpp's loader prints for it), which is llama-quantize's MXFP4_MOE mapping
(llama-quant.cpp: 3-D expert tensors MXFP4, every other quantizable tensor, the output too, Q8_0;
the router and what does not end in `weight` or is 1-D left as the converter wrote it, F32):

    ffn_gate_exps, ffn_up_exps, ffn_down_exps   MXFP4 [2880, 2880, 32] (as OpenAI ships them)
    token_embd, output                          Q8_0  [2880, 201088]
    attn_q, attn_output                         Q8_0  [2880, 4096], [4096, 2880]
    attn_k, attn_v                              Q8_0  [2880, 512]
    kept F32    attn_norm, post_attention_norm, output_norm [2880]; attn_q/k/v/output.bias
                [4096]/[512]/[512]/[2880]; attn_sinks [64]; ffn_gate_inp [2880, 32] and its
                bias [32]; ffn_gate/up/down_exps.bias [2880, 32]

Random content. Quantized blocks are written as bytes (ggml-common.h layouts), not through a
quantizer: the quant bits are PCG64's raw stream (seeded from the file and tensor names, so
every file is the same on every machine) and the scale fields are fixed per tensor so that
the weights dequantize to a symmetric spread with standard deviation 1/sqrt(row length):

    Q4_K  sub-scale 8 and sub-min 60 for every sub-block, dmin = d: w = 4d(2q - 15), q in 0..15
    Q6_K  sub-scales +8, -8, +8, ... (the sign cancels the offset of q - 32), w = d*s*(q - 32)
    Q8_0  d = +d0, -d0, +d0, ... block by block (the sign cancels the -1/2 mean of q), w = d*q
    MXFP4 w = v(q) 2^(e - 128), v(q) in 0, ±1, ±2, ±3, ±4, ±6, ±8, ±12 (symmetric); no power of
          two gives the spread exactly, so e takes the two around it, the higher in the share
          of blocks (spread evenly) that makes the mean square right: for rows of 2880, e =
          119 or 120 (55 % of blocks), w of standard deviation 0.0186 = 1/sqrt(2880)

Norm weights are uniform in 1 +/- 0.1, the router's rows uniform with standard deviation
1/sqrt(width) (router logits of spread 1, so the chosen experts vary from token to token), the
expert bias, and gpt-oss's biases and attention sinks, uniform in +/-0.01 and the convolution
kernels uniform in +/-0.5, Qwen 3.5's ssm_dt.bias uniform in -6 .. -2 and ssm_a in -2 .. -0.5
(decays per token from 0.8 to 0.999). Activations stay finite through every block and the logits have a
spread of about one. Tokenizers are copied from real files: Qwen2.5-Coder-0.5B's (151936
tokens, as Qwen3) and SmolLM2-135M's (49152 tokens) padded with `<|reserved_N|>` control tokens
to LFM2's 65536; gpt-oss's o200k_harmony (201088 tokens) is nowhere on the machine, so gpt-oss
gets Qwen2.5-Coder-0.5B's padded to 201088 (another byte-level BPE; the published file's
tokenizer.ggml.pre is `gpt-4o`, this one's `qwen2`).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import ExpertGatingFuncType, GGUFReader, GGUFValueType, GGUFWriter, RopeScalingType
from gguf import GGMLQuantizationType as T

SCRIPT = Path(__file__).resolve()
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")
OUTPUT_DIRECTORY = CACHE / "full-size"
TOKENIZER_DIRECTORY = CACHE / "models"

LLAMA_FTYPE_MOSTLY_Q4_K_M = 15
LLAMA_FTYPE_MOSTLY_MXFP4_MOE = 38
QUANTIZATION_VERSION = 2

# ggml's K-quant super-blocks (ggml-common.h): 256 weights each.
QK_K = 256
# block_q4_K: d, dmin (fp16); scales[12] (eight 6-bit sub-scales and eight 6-bit sub-mins); qs[128].
Q4_K_BLOCK_BYTES = 144
Q4_K_HEADER_BYTES = 16
Q4_K_SUB_SCALE = 8
Q4_K_SUB_MIN = 60               # 60 = 8 * 7.5: with dmin = d, w = d * (8q - 60), symmetric
Q4_K_RMS_PER_D = 8 * math.sqrt((16 ** 2 - 1) / 12)      # rms of 8q - 60, q uniform in 0..15
# block_q5_K: d, dmin (fp16); scales[12] as Q4_K's; qh[32] (the fifth bits); qs[128].
Q5_K_BLOCK_BYTES = 176
Q5_K_SUB_SCALE = 4
Q5_K_SUB_MIN = 62               # 62 = 4 * 15.5: with dmin = d, w = d * (4q - 62), symmetric
Q5_K_RMS_PER_D = 4 * math.sqrt((32 ** 2 - 1) / 12)      # rms of 4q - 62, q uniform in 0..31
# block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d (fp16).
Q6_K_BLOCK_BYTES = 210
Q6_K_SCALES_AT = 192
Q6_K_D_AT = 208
Q6_K_SUB_SCALE = 8
Q6_K_RMS_PER_D = Q6_K_SUB_SCALE * math.sqrt((64 ** 2 - 1) / 12 + 0.25)   # rms of s(q - 32)
# block_q8_0: d (fp16); qs[32] (int8). 32 weights.
QK8_0 = 32
Q8_0_BLOCK_BYTES = 34
Q8_0_RMS_PER_D = math.sqrt((256 ** 2 - 1) / 12 + 0.25)     # rms of q, q uniform in -128..127
# block_mxfp4: e (E8M0 exponent); qs[16] (4-bit codes into kvalues_mxfp4, twice E2M1). 32 weights,
# w = kvalues_mxfp4[q] * 2^(e - 128) (ggml_e8m0_to_fp32_half).
QK_MXFP4 = 32
MXFP4_BLOCK_BYTES = 17
MXFP4_VALUES = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
MXFP4_RMS_PER_SCALE = math.sqrt(sum(v * v for v in MXFP4_VALUES) / 16)   # 5.85, q uniform in 0..15
MXFP4_EXPONENT_BIAS = 128

BLOCK_LAYOUTS = {                # weights per block, bytes per block
    T.Q4_K: (QK_K, Q4_K_BLOCK_BYTES),
    T.Q5_K: (QK_K, Q5_K_BLOCK_BYTES),
    T.Q6_K: (QK_K, Q6_K_BLOCK_BYTES),
    T.Q8_0: (QK8_0, Q8_0_BLOCK_BYTES),
    T.MXFP4: (QK_MXFP4, MXFP4_BLOCK_BYTES),
}

NORM_SPREAD = 0.1               # norm weights uniform in 1 ± NORM_SPREAD
BIAS_SPREAD = 0.01              # exp_probs_b, gpt-oss's biases and sinks uniform in ± this
CONVOLUTION_SPREAD = 0.5        # shortconv.conv uniform in ± this

RESERVED_TOKEN = "<|reserved_{}|>"
TOKEN_TYPE_CONTROL = 3          # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL


@dataclass(frozen=True)
class Model:
    name: str                       # the file name without .gguf
    title: str                      # general.name
    architecture: str
    blocks: int
    width: int
    heads: int
    key_value_heads: int
    head_width: int
    feed_forward: int               # feed_forward_length: the dense blocks' hidden width
    experts: int
    experts_used: int
    expert_feed_forward: int
    vocabulary: int
    context: int
    rope_base: float
    rms_epsilon: float
    tokenizer_source: str           # a file in $TYPESET_CACHE/models
    attention_blocks: tuple[int, ...]
    tied_output: bool
    leading_dense_blocks: int = 0
    short_convolution: int = 0      # shortconv.l_cache; 0: no convolution blocks
    sigmoid_router: bool = False    # sigmoid scores plus a selection bias, else softmax
    output_norm: str = "output_norm"
    file_type: int = LLAMA_FTYPE_MOSTLY_Q4_K_M    # general.file_type
    sliding_window: int = 0         # attention.sliding_window; 0: none
    yarn: tuple[float, int, float, float] | None = None  # factor, original context, beta fast, slow
    # Gemma 4
    global_head_width: int = 0      # attention.key_length of the full blocks (head_width: the window's)
    local_rope_base: float = 0      # rope.freq_base_swa
    shared_key_value_blocks: int = 0
    per_layer_width: int = 0        # embedding_length_per_layer_input
    soft_capping: float = 0         # final_logit_softcapping
    # Qwen 3.5: the Gated DeltaNet blocks are those not in attention_blocks
    state_width: int = 0            # ssm.state_size (the linear heads' width)
    linear_key_heads: int = 0       # ssm.group_count
    linear_value_heads: int = 0     # ssm.time_step_rank
    convolution_taps: int = 0       # ssm.conv_kernel
    rope_dimensions: int = 0        # rope.dimension_count (a quarter of the head)
    # Granite 4: the Mamba2 blocks are those not in attention_blocks
    mamba_heads: int = 0            # ssm.time_step_rank, heads of head_width (Mamba's own)
    mamba_head_width: int = 0
    mamba_groups: int = 0           # ssm.group_count
    shared_feed_forward: int = 0    # expert_shared_feed_forward_length; 0: no shared expert


MODELS = {
    model.name: model for model in (
        Model(name="lfm2moe-8b-a1b", title="Typeset random-weight LFM2-8B-A1B (benchmark only)",
              architecture="lfm2moe", blocks=24, width=2048, heads=32, key_value_heads=8, head_width=64,
              feed_forward=7168, experts=32, experts_used=4, expert_feed_forward=1792, vocabulary=65536,
              context=128000, rope_base=1e6, rms_epsilon=1e-5,
              tokenizer_source="SmolLM2-135M-Instruct.Q4_1.gguf",
              attention_blocks=(2, 6, 10, 14, 18, 21), tied_output=True, leading_dense_blocks=2,
              short_convolution=3, sigmoid_router=True, output_norm="token_embd_norm"),
        Model(name="qwen3moe-30b-a3b", title="Typeset random-weight Qwen3-30B-A3B (benchmark only)",
              architecture="qwen3moe", blocks=48, width=2048, heads=32, key_value_heads=4, head_width=128,
              feed_forward=6144, experts=128, experts_used=8, expert_feed_forward=768, vocabulary=151936,
              context=40960, rope_base=1e6, rms_epsilon=1e-6,
              tokenizer_source="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
              attention_blocks=tuple(range(48)), tied_output=False),
        Model(name="gpt-oss-20b", title="Typeset random-weight gpt-oss-20b (benchmark only)",
              architecture="gpt-oss", blocks=24, width=2880, heads=64, key_value_heads=8, head_width=64,
              feed_forward=2880, experts=32, experts_used=4, expert_feed_forward=2880, vocabulary=201088,
              context=131072, rope_base=150000.0, rms_epsilon=1e-5,
              tokenizer_source="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
              attention_blocks=tuple(range(24)), tied_output=False,
              file_type=LLAMA_FTYPE_MOSTLY_MXFP4_MOE, sliding_window=128, yarn=(32.0, 4096, 32.0, 1.0)),
        Model(name="gemma4-e2b", title="Typeset random-weight Gemma 4 E2B (benchmark only)",
              architecture="gemma4", blocks=35, width=1536, heads=8, key_value_heads=1, head_width=256,
              feed_forward=6144, experts=0, experts_used=0, expert_feed_forward=0, vocabulary=262144,
              context=131072, rope_base=1e6, rms_epsilon=1e-6, tokenizer_source="gemma-3-270m-q4_k_m.gguf",
              attention_blocks=tuple(b for b in range(35) if b % 5 == 4), tied_output=True,
              sliding_window=512, global_head_width=512, local_rope_base=1e4, shared_key_value_blocks=20,
              per_layer_width=256, soft_capping=30.0),
        Model(name="qwen35-4b", title="Typeset random-weight Qwen3.5-4B (benchmark only)",
              architecture="qwen35", blocks=32, width=2560, heads=16, key_value_heads=4, head_width=256,
              feed_forward=9216, experts=0, experts_used=0, expert_feed_forward=0, vocabulary=248320,
              context=262144, rope_base=1e7, rms_epsilon=1e-6, tokenizer_source="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
              attention_blocks=tuple(b for b in range(32) if b % 4 == 3), tied_output=True,
              state_width=128, linear_key_heads=16, linear_value_heads=32, convolution_taps=4, rope_dimensions=64),
        # Qwen3.5-4B's attention-only counterpart, for the long-prompt comparison.
        Model(name="qwen3-4b", title="Typeset random-weight Qwen3-4B (benchmark only)",
              architecture="qwen3", blocks=36, width=2560, heads=32, key_value_heads=8, head_width=128,
              feed_forward=9728, experts=0, experts_used=0, expert_feed_forward=0, vocabulary=151936,
              context=40960, rope_base=1e6, rms_epsilon=1e-6, tokenizer_source="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
              attention_blocks=tuple(range(36)), tied_output=True, leading_dense_blocks=36),
        # Granite-4.0-H-Micro: 40 blocks, attention (no RoPE) in blocks 5, 15, 25 and 35.
        Model(name="granite-4-h-micro", title="Typeset random-weight Granite-4.0-H-Micro (benchmark only)",
              architecture="granitehybrid", blocks=40, width=2048, heads=32, key_value_heads=8, head_width=64,
              feed_forward=8192, experts=0, experts_used=0, expert_feed_forward=0, vocabulary=100352,
              context=1 << 20, rope_base=10000.0, rms_epsilon=1e-5, tokenizer_source="SmolLM2-135M-Instruct.Q4_1.gguf",
              attention_blocks=(5, 15, 25, 35), tied_output=True, state_width=128, convolution_taps=4,
              mamba_heads=64, mamba_head_width=64, mamba_groups=1),
        # Granite-4.0-H-Tiny: H-Micro's layout at width 1536, a mixture of 64 experts of 512 (6
        # used) and a shared expert of 1024 in every block; the experts are feed_forward wide.
        Model(name="granite-4-h-tiny", title="Typeset random-weight Granite-4.0-H-Tiny (benchmark only)",
              architecture="granitehybrid", blocks=40, width=1536, heads=12, key_value_heads=4, head_width=128,
              feed_forward=512, experts=64, experts_used=6, expert_feed_forward=512, vocabulary=100352,
              context=1 << 20, rope_base=10000.0, rms_epsilon=1e-5, tokenizer_source="SmolLM2-135M-Instruct.Q4_1.gguf",
              attention_blocks=(5, 15, 25, 35), tied_output=True, state_width=128, convolution_taps=4,
              mamba_heads=48, mamba_head_width=64, mamba_groups=1, shared_feed_forward=1024),
    )
}


# ---------------------------------------------------------------------------------------------
# Tensors and their Q4_K_M types

@dataclass(frozen=True)
class Tensor:
    name: str
    dims: tuple[int, ...]           # ggml's ne: the row length first
    qtype: T
    content: str                    # "matrix", "norm", "router", "bias" or "convolution"

    @property
    def count(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        if self.qtype == T.F32:
            return 4 * self.count
        if self.qtype == T.F16:
            return 2 * self.count
        weights, per_block = BLOCK_LAYOUTS[self.qtype]
        return self.count // weights * per_block

    @property
    def block(self) -> int:
        """The block number, -1 outside blocks: llama.cpp's loader orders tensors by it, then by name."""
        return int(self.name.split(".")[1]) if self.name.startswith("blk.") else -1


def uses_more_bits(index: int, count: int) -> bool:
    """llama-quant.cpp's use_more_bits: the first and last eighths and every third between."""
    return index < count // 8 or index >= 7 * count // 8 or (index - count // 8) % 3 == 2


def matrix(name: str, dims: tuple[int, ...], qtype: T = T.Q4_K) -> Tensor:
    """A weight matrix, of Q4_K_M's default type unless given another."""
    return Tensor(name, dims, qtype, "matrix")


def vector(name: str, dims: tuple[int, ...], content: str) -> Tensor:
    return Tensor(name, dims, T.F32, content)


def global_tensors(model: Model) -> list[Tensor]:
    embedding = (model.width, model.vocabulary)
    tensors = [matrix("token_embd.weight", embedding, T.Q6_K if model.tied_output else T.Q4_K),
               vector(f"{model.output_norm}.weight", (model.width,), "norm")]
    if not model.tied_output:
        tensors.append(matrix("output.weight", embedding, T.Q6_K))
    return tensors


def attention_tensors(model: Model, block: int) -> list[Tensor]:
    p = f"blk.{block}."
    query_width = model.heads * model.head_width
    key_width = model.key_value_heads * model.head_width
    ordinal = model.attention_blocks.index(block)
    value_type = T.Q6_K if uses_more_bits(ordinal, len(model.attention_blocks)) else T.Q4_K
    return [matrix(p + "attn_q.weight", (model.width, query_width)),
            matrix(p + "attn_k.weight", (model.width, key_width)),
            matrix(p + "attn_v.weight", (model.width, key_width), value_type),
            matrix(p + "attn_output.weight", (query_width, model.width)),
            vector(p + "attn_q_norm.weight", (model.head_width,), "norm"),
            vector(p + "attn_k_norm.weight", (model.head_width,), "norm")]


def short_convolution_tensors(model: Model, block: int) -> list[Tensor]:
    p = f"blk.{block}.shortconv."
    return [vector(p + "conv.weight", (model.short_convolution, model.width), "convolution"),
            matrix(p + "in_proj.weight", (model.width, 3 * model.width)),
            matrix(p + "out_proj.weight", (model.width, model.width))]


def feed_forward_tensors(model: Model, block: int) -> list[Tensor]:
    p = f"blk.{block}."
    down_type = T.Q6_K if uses_more_bits(block, model.blocks) else T.Q4_K
    if block < model.leading_dense_blocks:
        return [matrix(p + "ffn_gate.weight", (model.width, model.feed_forward)),
                matrix(p + "ffn_up.weight", (model.width, model.feed_forward)),
                matrix(p + "ffn_down.weight", (model.feed_forward, model.width), down_type)]
    expert_in = (model.width, model.expert_feed_forward, model.experts)
    expert_out = (model.expert_feed_forward, model.width, model.experts)
    tensors = [Tensor(p + "ffn_gate_inp.weight", (model.width, model.experts), T.F32, "router"),
               matrix(p + "ffn_gate_exps.weight", expert_in),
               matrix(p + "ffn_up_exps.weight", expert_in),
               matrix(p + "ffn_down_exps.weight", expert_out, down_type)]
    if model.sigmoid_router:
        tensors.append(vector(p + "exp_probs_b.bias", (model.experts,), "bias"))
    return tensors


def block_tensors(model: Model, block: int) -> list[Tensor]:
    mixer = (attention_tensors(model, block) if block in model.attention_blocks
             else short_convolution_tensors(model, block))
    norms = [vector(f"blk.{block}.attn_norm.weight", (model.width,), "norm"),
             vector(f"blk.{block}.ffn_norm.weight", (model.width,), "norm")]
    return norms + mixer + feed_forward_tensors(model, block)


def gpt_oss_tensors(model: Model) -> list[Tensor]:
    """LLM_ARCH_OPENAI_MOE's tensors (src/models/openai-moe.cpp), typed as MXFP4_MOE types them."""
    embedding = (model.width, model.vocabulary)
    query_width = model.heads * model.head_width
    key_width = model.key_value_heads * model.head_width
    expert_in = (model.width, model.expert_feed_forward, model.experts)
    expert_out = (model.expert_feed_forward, model.width, model.experts)
    tensors = [matrix("token_embd.weight", embedding, T.Q8_0),
               vector("output_norm.weight", (model.width,), "norm"),
               matrix("output.weight", embedding, T.Q8_0)]
    for block in range(model.blocks):
        p = f"blk.{block}."
        tensors += [
            vector(p + "attn_norm.weight", (model.width,), "norm"),
            matrix(p + "attn_q.weight", (model.width, query_width), T.Q8_0),
            vector(p + "attn_q.bias", (query_width,), "bias"),
            matrix(p + "attn_k.weight", (model.width, key_width), T.Q8_0),
            vector(p + "attn_k.bias", (key_width,), "bias"),
            matrix(p + "attn_v.weight", (model.width, key_width), T.Q8_0),
            vector(p + "attn_v.bias", (key_width,), "bias"),
            matrix(p + "attn_output.weight", (query_width, model.width), T.Q8_0),
            vector(p + "attn_output.bias", (model.width,), "bias"),
            vector(p + "attn_sinks.weight", (model.heads,), "bias"),
            vector(p + "post_attention_norm.weight", (model.width,), "norm"),
            Tensor(p + "ffn_gate_inp.weight", (model.width, model.experts), T.F32, "router"),
            vector(p + "ffn_gate_inp.bias", (model.experts,), "bias"),
            matrix(p + "ffn_gate_exps.weight", expert_in, T.MXFP4),
            vector(p + "ffn_gate_exps.bias", (model.expert_feed_forward, model.experts), "bias"),
            matrix(p + "ffn_up_exps.weight", expert_in, T.MXFP4),
            vector(p + "ffn_up_exps.bias", (model.expert_feed_forward, model.experts), "bias"),
            matrix(p + "ffn_down_exps.weight", expert_out, T.MXFP4),
            vector(p + "ffn_down_exps.bias", (model.width, model.experts), "bias"),
        ]
    return tensors


def gemma4_tensors(model: Model) -> list[Tensor]:
    """LLM_ARCH_GEMMA4's tensors without experts (src/models/gemma4.cpp), typed as Q4_K_M types
    them; `attention_blocks` are the full-attention blocks."""
    embedding = (model.width, model.vocabulary)
    per_layer_total = model.per_layer_width * model.blocks
    first_shared = model.blocks - model.shared_key_value_blocks
    tensors = [matrix("token_embd.weight", embedding, T.Q6_K),
               vector("output_norm.weight", (model.width,), "norm"),
               Tensor("rope_freqs.weight", (model.global_head_width // 2,), T.F32, "proportional"),
               matrix("per_layer_token_embd.weight", (per_layer_total, model.vocabulary), T.Q6_K),
               matrix("per_layer_model_proj.weight", (model.width, per_layer_total), T.F16),
               vector("per_layer_proj_norm.weight", (model.per_layer_width,), "norm")]
    for block in range(model.blocks):
        p = f"blk.{block}."
        head = model.global_head_width if block in model.attention_blocks else model.head_width
        query_width, key_width = model.heads * head, model.key_value_heads * head
        hidden = model.feed_forward * (2 if block >= first_shared else 1)
        down_type = T.Q6_K if uses_more_bits(block, model.blocks) else T.Q4_K
        tensors += [vector(p + "attn_norm.weight", (model.width,), "norm"),
                    matrix(p + "attn_q.weight", (model.width, query_width)),
                    vector(p + "attn_q_norm.weight", (head,), "norm"),
                    matrix(p + "attn_output.weight", (query_width, model.width)),
                    vector(p + "post_attention_norm.weight", (model.width,), "norm"),
                    vector(p + "ffn_norm.weight", (model.width,), "norm"),
                    matrix(p + "ffn_gate.weight", (model.width, hidden)),
                    matrix(p + "ffn_up.weight", (model.width, hidden)),
                    matrix(p + "ffn_down.weight", (hidden, model.width), down_type),
                    vector(p + "post_ffw_norm.weight", (model.width,), "norm"),
                    matrix(p + "inp_gate.weight", (model.width, model.per_layer_width)),
                    matrix(p + "proj.weight", (model.per_layer_width, model.width)),
                    vector(p + "post_norm.weight", (model.width,), "norm"),
                    vector(p + "layer_output_scale.weight", (1,), "norm")]
        if block < first_shared:
            value_type = T.Q6_K if uses_more_bits(block, first_shared) else T.Q4_K
            tensors += [matrix(p + "attn_k.weight", (model.width, key_width)),
                        matrix(p + "attn_v.weight", (model.width, key_width), value_type),
                        vector(p + "attn_k_norm.weight", (head,), "norm")]
    return tensors


def qwen35_tensors(model: Model) -> list[Tensor]:
    """LLM_ARCH_QWEN35's tensors (src/models/qwen35.cpp) without the multi-token-prediction
    block (neither engine runs it), typed as Q4_K_M types them: attn_qkv Q5_K (llama-quant's
    ATTENTION_QKV rule), attn_v and ffn_down Q6_K where use_more_bits holds, the rest Q4_K;
    ssm_conv1d, ssm_dt, ssm_a and the norms F32."""
    key_width = model.linear_key_heads * model.state_width
    value_width = model.linear_value_heads * model.state_width
    query_width = model.heads * model.head_width
    tensors = [matrix("token_embd.weight", (model.width, model.vocabulary), T.Q6_K),
               vector("output_norm.weight", (model.width,), "norm")]
    for block in range(model.blocks):
        p = f"blk.{block}."
        down_type = T.Q6_K if uses_more_bits(block, model.blocks) else T.Q4_K
        tensors += [vector(p + "attn_norm.weight", (model.width,), "norm"),
                    vector(p + "post_attention_norm.weight", (model.width,), "norm"),
                    matrix(p + "ffn_gate.weight", (model.width, model.feed_forward)),
                    matrix(p + "ffn_up.weight", (model.width, model.feed_forward)),
                    matrix(p + "ffn_down.weight", (model.feed_forward, model.width), down_type)]
        if block in model.attention_blocks:
            # attn_v shares llama-quant's attn_v counter with the attn_qkv tensors: one per block.
            value_type = T.Q6_K if uses_more_bits(block, model.blocks) else T.Q4_K
            kv_width = model.key_value_heads * model.head_width
            tensors += [matrix(p + "attn_q.weight", (model.width, 2 * query_width)),
                        matrix(p + "attn_k.weight", (model.width, kv_width)),
                        matrix(p + "attn_v.weight", (model.width, kv_width), value_type),
                        matrix(p + "attn_output.weight", (query_width, model.width)),
                        vector(p + "attn_q_norm.weight", (model.head_width,), "norm"),
                        vector(p + "attn_k_norm.weight", (model.head_width,), "norm")]
        else:
            channels = 2 * key_width + value_width
            tensors += [matrix(p + "attn_qkv.weight", (model.width, channels), T.Q5_K),
                        matrix(p + "attn_gate.weight", (model.width, value_width)),
                        vector(p + "ssm_conv1d.weight", (model.convolution_taps, channels), "convolution"),
                        vector(p + "ssm_dt.bias", (model.linear_value_heads,), "time step"),
                        vector(p + "ssm_a", (model.linear_value_heads,), "decay"),
                        matrix(p + "ssm_alpha.weight", (model.width, model.linear_value_heads)),
                        matrix(p + "ssm_beta.weight", (model.width, model.linear_value_heads)),
                        vector(p + "ssm_norm.weight", (model.state_width,), "norm"),
                        matrix(p + "ssm_out.weight", (value_width, model.width))]
    return tensors


def granite_hybrid_tensors(model: Model) -> list[Tensor]:
    """LLM_ARCH_GRANITE_HYBRID's tensors (src/models/granite-hybrid.cpp), typed as Q4_K_M
    types them: attn_v and ffn_down (its _exps and _shexp too) Q6_K where use_more_bits holds,
    the other matrices Q4_K; the router, ssm_conv1d, ssm_dt, ssm_a, ssm_d and the norms F32.
    With experts, every block's network is the mixture and its shared expert."""
    inner = model.mamba_heads * model.mamba_head_width
    channels = inner + 2 * model.mamba_groups * model.state_width
    tensors = global_tensors(model)
    for block in range(model.blocks):
        p = f"blk.{block}."
        down_type = T.Q6_K if uses_more_bits(block, model.blocks) else T.Q4_K
        tensors += [vector(p + "attn_norm.weight", (model.width,), "norm"),
                    vector(p + "ffn_norm.weight", (model.width,), "norm")]
        if model.experts:
            tensors += feed_forward_tensors(model, block)
            tensors += [matrix(p + "ffn_gate_shexp.weight", (model.width, model.shared_feed_forward)),
                        matrix(p + "ffn_up_shexp.weight", (model.width, model.shared_feed_forward)),
                        matrix(p + "ffn_down_shexp.weight", (model.shared_feed_forward, model.width), down_type)]
        else:
            tensors += [matrix(p + "ffn_gate.weight", (model.width, model.feed_forward)),
                        matrix(p + "ffn_up.weight", (model.width, model.feed_forward)),
                        matrix(p + "ffn_down.weight", (model.feed_forward, model.width), down_type)]
        if block in model.attention_blocks:
            tensors += attention_tensors(model, block)[:4]   # no Q/K norms
        else:
            tensors += [matrix(p + "ssm_in.weight", (model.width, inner + channels + model.mamba_heads)),
                        vector(p + "ssm_conv1d.weight", (model.convolution_taps, channels), "convolution"),
                        vector(p + "ssm_conv1d.bias", (channels,), "bias"),
                        vector(p + "ssm_dt.bias", (model.mamba_heads,), "time step"),
                        vector(p + "ssm_a", (1, model.mamba_heads), "decay"),
                        vector(p + "ssm_d", (1, model.mamba_heads), "norm"),
                        vector(p + "ssm_norm.weight", (inner // model.mamba_groups, model.mamba_groups), "norm"),
                        matrix(p + "ssm_out.weight", (inner, model.width))]
    return tensors


def all_tensors(model: Model) -> list[Tensor]:
    if model.architecture == "gpt-oss":
        tensors = gpt_oss_tensors(model)
    elif model.architecture == "gemma4":
        tensors = gemma4_tensors(model)
    elif model.architecture == "qwen35":
        tensors = qwen35_tensors(model)
    elif model.architecture == "granitehybrid":
        tensors = granite_hybrid_tensors(model)
    else:
        # Experts with exactly 8 experts get other types in llama-quant.cpp; no model here has 8.
        assert model.experts != 8
        tensors = global_tensors(model) + [t for b in range(model.blocks) for t in block_tensors(model, b)]
    return sorted(tensors, key=lambda t: (t.block, t.name))


# ---------------------------------------------------------------------------------------------
# Content

def seed_for(model: Model, tensor: Tensor) -> int:
    digest = hashlib.sha256(f"{model.name}/{tensor.name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def random_bytes(bits: np.random.PCG64, count: int) -> np.ndarray:
    """`count` bytes of PCG64's raw stream (stable across numpy versions), as a writable array."""
    return bits.random_raw((count + 7) // 8).view(np.uint8)[:count]


def random_uniform(bits: np.random.PCG64, count: int, low: float, high: float) -> np.ndarray:
    unit = (bits.random_raw(count) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (low + unit * (high - low)).astype(np.float32)


def fp16_bytes(value: float) -> np.ndarray:
    return np.array([value], dtype="<f2").view(np.uint8)


def pack_k4_scales(scales: list[int], mins: list[int]) -> np.ndarray:
    """The 12 bytes of eight 6-bit sub-scales and sub-mins, as ggml's get_scale_min_k4 reads them."""
    packed = np.zeros(12, dtype=np.uint8)
    for j in range(4):
        packed[j] = scales[j] | (scales[j + 4] >> 4) << 6
        packed[j + 4] = mins[j] | (mins[j + 4] >> 4) << 6
        packed[j + 8] = (scales[j + 4] & 0xF) | (mins[j + 4] & 0xF) << 4
    return packed


def q4_k_blocks(bits: np.random.PCG64, count: int, rms: float) -> np.ndarray:
    return k_quant_blocks(bits, count, rms / Q4_K_RMS_PER_D, Q4_K_BLOCK_BYTES, Q4_K_SUB_SCALE, Q4_K_SUB_MIN)


def q5_k_blocks(bits: np.random.PCG64, count: int, rms: float) -> np.ndarray:
    """Q5_K as Q4_K with a fifth bit: sub-scale 4 and sub-min 62 with dmin = d, so
    w = d(4q - 62) for q in 0..31 (symmetric)."""
    return k_quant_blocks(bits, count, rms / Q5_K_RMS_PER_D, Q5_K_BLOCK_BYTES, Q5_K_SUB_SCALE, Q5_K_SUB_MIN)


def k_quant_blocks(bits: np.random.PCG64, count: int, d: float, block_bytes: int, sub_scale: int, sub_min: int) -> np.ndarray:
    """Q4_K or Q5_K blocks: d and dmin = d, every sub-block's scale and min the same, the rest
    (quant bits, and Q5_K's fifth bits) random."""
    header = np.concatenate([fp16_bytes(d), fp16_bytes(d), pack_k4_scales([sub_scale] * 8, [sub_min] * 8)])
    blocks = random_bytes(bits, count // QK_K * block_bytes).reshape(-1, block_bytes)
    blocks[:, :Q4_K_HEADER_BYTES] = header
    return blocks


def q6_k_blocks(bits: np.random.PCG64, count: int, rms: float) -> np.ndarray:
    signs = np.resize(np.array([1, -1], dtype=np.int8), QK_K // 16)
    blocks = random_bytes(bits, count // QK_K * Q6_K_BLOCK_BYTES).reshape(-1, Q6_K_BLOCK_BYTES)
    blocks[:, Q6_K_SCALES_AT:Q6_K_D_AT] = (signs * Q6_K_SUB_SCALE).view(np.uint8)
    blocks[:, Q6_K_D_AT:] = fp16_bytes(rms / Q6_K_RMS_PER_D)
    return blocks


def q8_0_blocks(bits: np.random.PCG64, count: int, rms: float) -> np.ndarray:
    """d alternates in sign block by block, cancelling the -1/2 mean of q (rows hold an even count)."""
    blocks = random_bytes(bits, count // QK8_0 * Q8_0_BLOCK_BYTES).reshape(-1, Q8_0_BLOCK_BYTES)
    d = rms / Q8_0_RMS_PER_D
    blocks[0::2, :2] = fp16_bytes(d)
    blocks[1::2, :2] = fp16_bytes(-d)
    return blocks


def mxfp4_blocks(bits: np.random.PCG64, count: int, rms: float) -> np.ndarray:
    """The exponent takes the two powers of two around rms / MXFP4_RMS_PER_SCALE, the higher one in
    the share of blocks (spread evenly, Bresenham's way) that makes the mean square rms^2."""
    blocks = random_bytes(bits, count // QK_MXFP4 * MXFP4_BLOCK_BYTES).reshape(-1, MXFP4_BLOCK_BYTES)
    exponent = math.log2(rms / MXFP4_RMS_PER_SCALE) + MXFP4_EXPONENT_BIAS
    low = math.floor(exponent)
    share = (4.0 ** (exponent - low) - 1) / 3       # share * 4 + (1 - share) = 4^(exponent - low)
    higher = np.diff(np.floor(np.arange(len(blocks) + 1) * share)).astype(np.uint8)
    blocks[:, 0] = low + higher
    return blocks


def float_values(bits: np.random.PCG64, tensor: Tensor, width: int) -> np.ndarray:
    if tensor.content == "norm":
        return random_uniform(bits, tensor.count, 1 - NORM_SPREAD, 1 + NORM_SPREAD)
    if tensor.content == "router":
        spread = math.sqrt(3.0 / width)        # uniform of standard deviation 1/sqrt(width)
        return random_uniform(bits, tensor.count, -spread, spread)
    if tensor.content == "bias":
        return random_uniform(bits, tensor.count, -BIAS_SPREAD, BIAS_SPREAD)
    if tensor.content == "convolution":
        return random_uniform(bits, tensor.count, -CONVOLUTION_SPREAD, CONVOLUTION_SPREAD)
    if tensor.content == "time step":
        # softplus(dt_bias) from about 0.002 to 0.1: decays that keep a state for hundreds of tokens.
        return random_uniform(bits, tensor.count, -6.0, -2.0)
    if tensor.content == "decay":
        return random_uniform(bits, tensor.count, -2.0, -0.5)     # ssm_a = -exp(A_log)
    if tensor.content == "proportional":
        # Gemma 4's full blocks rotate a quarter of their pairs; 1e30 keeps the others in place.
        rotated = tensor.count // 4
        return np.array([1.0] * rotated + [1e30] * (tensor.count - rotated), dtype=np.float32)
    raise ValueError(f"{tensor.name}: no F32 content {tensor.content!r}")


def tensor_data(model: Model, tensor: Tensor) -> np.ndarray:
    bits = np.random.PCG64(seed_for(model, tensor))
    if tensor.qtype == T.F32:
        return float_values(bits, tensor, model.width)
    rms = 1.0 / math.sqrt(tensor.dims[0])      # unit-variance outputs for unit-variance inputs
    if tensor.qtype == T.F16:
        spread = rms * math.sqrt(3.0)
        return random_uniform(bits, tensor.count, -spread, spread).astype("<f2").view(np.uint8)
    blocks = {T.Q4_K: q4_k_blocks, T.Q5_K: q5_k_blocks, T.Q6_K: q6_k_blocks, T.Q8_0: q8_0_blocks, T.MXFP4: mxfp4_blocks}
    return blocks[tensor.qtype](bits, tensor.count, rms)


# ---------------------------------------------------------------------------------------------
# Metadata

def add_hyperparameters(writer: GGUFWriter, model: Model) -> None:
    writer.add_name(model.title)
    writer.add_file_type(model.file_type)
    writer.add_quantization_version(QUANTIZATION_VERSION)
    writer.add_context_length(model.context)
    writer.add_embedding_length(model.width)
    writer.add_block_count(model.blocks)
    writer.add_head_count(model.heads)
    writer.add_rope_freq_base(model.rope_base)
    writer.add_layer_norm_rms_eps(model.rms_epsilon)
    if model.architecture == "gemma4":
        add_gemma4_hyperparameters(writer, model)
        return
    if model.architecture == "qwen35":
        add_qwen35_hyperparameters(writer, model)
        return
    if model.architecture == "granitehybrid":
        add_granite_hybrid_hyperparameters(writer, model)
        return
    writer.add_feed_forward_length(model.feed_forward)
    if model.experts:
        writer.add_expert_count(model.experts)
        writer.add_expert_used_count(model.experts_used)
        writer.add_expert_feed_forward_length(model.expert_feed_forward)
    if model.short_convolution:
        # LFM2's converter: a key/value head count per block, 0 for the convolution blocks.
        writer.add_head_count_kv([model.key_value_heads if b in model.attention_blocks else 0
                                  for b in range(model.blocks)])
        writer.add_shortconv_l_cache(model.short_convolution)
        writer.add_vocab_size(model.vocabulary)
    else:
        writer.add_head_count_kv(model.key_value_heads)
        writer.add_key_length(model.head_width)
        writer.add_value_length(model.head_width)
    if model.sigmoid_router:
        writer.add_expert_gating_func(ExpertGatingFuncType.SIGMOID)
    if model.experts and model.leading_dense_blocks:
        writer.add_leading_dense_block_count(model.leading_dense_blocks)
    if model.sliding_window:
        writer.add_sliding_window(model.sliding_window)
    if model.yarn:
        factor, original_context, beta_fast, beta_slow = model.yarn
        writer.add_rope_scaling_type(RopeScalingType.YARN)
        writer.add_rope_scaling_factor(factor)
        writer.add_rope_scaling_orig_ctx_len(original_context)
        writer.add_rope_scaling_yarn_beta_fast(beta_fast)
        writer.add_rope_scaling_yarn_beta_slow(beta_slow)


def add_gemma4_hyperparameters(writer: GGUFWriter, model: Model) -> None:
    """The keys conversion/gemma.py's Gemma4Model writes (with Gemma3Model's and TextModel's)."""
    arch = model.architecture
    first_shared = model.blocks - model.shared_key_value_blocks
    writer.add_feed_forward_length([model.feed_forward * (2 if b >= first_shared else 1) for b in range(model.blocks)])
    writer.add_head_count_kv(model.key_value_heads)
    writer.add_key_length(model.global_head_width)
    writer.add_value_length(model.global_head_width)
    writer.add_uint32(f"{arch}.attention.key_length_swa", model.head_width)
    writer.add_uint32(f"{arch}.attention.value_length_swa", model.head_width)
    writer.add_uint32(f"{arch}.rope.dimension_count", model.global_head_width)
    writer.add_uint32(f"{arch}.rope.dimension_count_swa", model.head_width)
    writer.add_float32(f"{arch}.rope.freq_base_swa", model.local_rope_base)
    writer.add_sliding_window(model.sliding_window)
    writer.add_array(f"{arch}.attention.sliding_window_pattern", [b not in model.attention_blocks for b in range(model.blocks)])
    writer.add_uint32(f"{arch}.attention.shared_kv_layers", model.shared_key_value_blocks)
    writer.add_uint32(f"{arch}.embedding_length_per_layer_input", model.per_layer_width)
    writer.add_float32(f"{arch}.final_logit_softcapping", model.soft_capping)


def add_qwen35_hyperparameters(writer: GGUFWriter, model: Model) -> None:
    """The keys conversion/qwen.py's Qwen3_5TextModel writes (Qwen3NextModel's, the M-RoPE
    sections), without the multi-token-prediction block's nextn_predict_layers."""
    arch = model.architecture
    writer.add_feed_forward_length(model.feed_forward)
    writer.add_head_count_kv(model.key_value_heads)
    writer.add_key_length(model.head_width)
    writer.add_value_length(model.head_width)
    writer.add_rope_dimension_count(model.rope_dimensions)
    writer.add_array(f"{arch}.rope.dimension_sections", [11, 11, 10, 0])
    writer.add_uint32(f"{arch}.ssm.conv_kernel", model.convolution_taps)
    writer.add_uint32(f"{arch}.ssm.state_size", model.state_width)
    writer.add_uint32(f"{arch}.ssm.group_count", model.linear_key_heads)
    writer.add_uint32(f"{arch}.ssm.time_step_rank", model.linear_value_heads)
    writer.add_uint32(f"{arch}.ssm.inner_size", model.linear_value_heads * model.state_width)
    writer.add_array(f"{arch}.attention.recurrent_layers", [b not in model.attention_blocks for b in range(model.blocks)])
    writer.add_uint32(f"{arch}.full_attention_interval", 4)


def add_granite_hybrid_hyperparameters(writer: GGUFWriter, model: Model) -> None:
    """The keys conversion/granite.py's GraniteHybridModel writes for a hybrid without RoPE
    (Granite's multipliers as in Granite-4.0-H-Micro's config.json), with its experts' count and
    shared expert width where it has them (no expert_feed_forward_length: it is the
    feed_forward_length)."""
    arch = model.architecture
    writer.add_feed_forward_length(model.feed_forward)
    writer.add_head_count_kv([model.key_value_heads if b in model.attention_blocks else 0 for b in range(model.blocks)])
    writer.add_vocab_size(model.vocabulary)
    writer.add_rope_scaling_finetuned(False)
    writer.add_embedding_scale(12.0)
    writer.add_residual_scale(0.22)
    writer.add_attention_scale(0.015625)
    writer.add_logit_scale(8.0)
    writer.add_uint32(f"{arch}.ssm.conv_kernel", model.convolution_taps)
    writer.add_uint32(f"{arch}.ssm.state_size", model.state_width)
    writer.add_uint32(f"{arch}.ssm.group_count", model.mamba_groups)
    writer.add_uint32(f"{arch}.ssm.time_step_rank", model.mamba_heads)
    writer.add_uint32(f"{arch}.ssm.inner_size", model.mamba_heads * model.mamba_head_width)
    if model.experts:
        writer.add_expert_count(model.experts)
        writer.add_expert_used_count(model.experts_used)
        writer.add_expert_shared_feed_forward_length(model.shared_feed_forward)


def add_tokenizer(writer: GGUFWriter, model: Model) -> None:
    """Every tokenizer.* key of the source file; a smaller vocabulary is padded with control tokens."""
    source = GGUFReader(str(TOKENIZER_DIRECTORY / model.tokenizer_source))
    fields = {name: field for name, field in source.fields.items() if name.startswith("tokenizer.")}
    tokens = fields["tokenizer.ggml.tokens"].contents()
    if len(tokens) > model.vocabulary:
        raise SystemExit(f"{model.tokenizer_source} has {len(tokens)} tokens, more than {model.vocabulary}")
    padding = [RESERVED_TOKEN.format(i) for i in range(model.vocabulary - len(tokens))]
    if set(padding) & set(tokens):
        raise SystemExit(f"{model.tokenizer_source} already has tokens named like {RESERVED_TOKEN}")
    for name, field in fields.items():
        kind = field.types[0]
        value = field.contents()
        if name == "tokenizer.ggml.tokens":
            value = value + padding
        elif name == "tokenizer.ggml.token_type":
            value = value + [TOKEN_TYPE_CONTROL] * len(padding)
        elif name == "tokenizer.ggml.scores":
            value = value + [0.0] * len(padding)
        if kind == GGUFValueType.ARRAY:
            writer.add_key_value(name, value, kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, value, kind)


# ---------------------------------------------------------------------------------------------
# Files

def write_model(model: Model, path: Path) -> None:
    tensors = all_tensors(model)
    writer = GGUFWriter(str(path), model.architecture)
    add_hyperparameters(writer, model)
    add_tokenizer(writer, model)
    for tensor in tensors:
        # gguf-py takes numpy's shape order, the reverse of ggml's ne.
        writer.add_tensor_info(tensor.name, tuple(reversed(tensor.dims)), np.dtype(np.float32),
                               tensor.nbytes, raw_dtype=tensor.qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in tensors:
        data = tensor_data(model, tensor)
        assert data.nbytes == tensor.nbytes, tensor.name
        writer.write_tensor_data(data)
    writer.close()


def script_digest() -> str:
    return hashlib.sha256(SCRIPT.read_bytes()).hexdigest()


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".stamp")


def is_current(path: Path, digest: str) -> bool:
    try:
        stamp = json.loads(stamp_path(path).read_text())
        return stamp["script_sha256"] == digest and stamp["bytes"] == path.stat().st_size
    except (OSError, ValueError, KeyError):
        return False


def make(model: Model, digest: str) -> None:
    path = OUTPUT_DIRECTORY / f"{model.name}.gguf"
    if is_current(path, digest):
        print(f"full-size: {path} is current", file=sys.stderr)
        return
    stamp_path(path).unlink(missing_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    started = time.monotonic()
    write_model(model, temporary)
    temporary.replace(path)
    size = path.stat().st_size
    stamp_path(path).write_text(json.dumps({"script_sha256": digest, "bytes": size}) + "\n")
    print(f"full-size: {path} ({size / 1e9:.2f} GB) in {time.monotonic() - started:.0f} s", file=sys.stderr)


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    OUTPUT_DIRECTORY.mkdir(parents=True, exist_ok=True)
    digest = script_digest()
    for name in names or list(MODELS):
        make(MODELS[name], digest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
