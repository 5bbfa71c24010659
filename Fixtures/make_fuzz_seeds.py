#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (Fixtures/fuzz-seeds/*.gguf) with gguf-py's own writer,
so the seeds come from an implementation independent of Typeset's.

    venv/bin/pip install gguf==0.19.0
    venv/bin/python Fixtures/make_fuzz_seeds.py [SmolLM2.gguf]

With a model path, one seed copies that model's real metadata, its arrays cut to 40 elements.
Others are whole tiny models the model loader accepts: a gpt-oss (MXFP4 experts) and a Gemma 4
(every kind of block it has, and Gemma 4's tokenizer with merges).
"""
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

OUT = os.path.join(os.path.dirname(__file__), "fuzz-seeds")


def every_type(path):
    w = GGUFWriter(path, "llama")
    w.add_uint8("t.u8", 255); w.add_int8("t.i8", -1)
    w.add_uint16("t.u16", 65535); w.add_int16("t.i16", -2)
    w.add_uint32("t.u32", 7); w.add_int32("t.i32", -3)
    w.add_float32("t.f32", 0.5); w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ▁ 🙂")
    w.add_uint64("t.u64", 2**63); w.add_int64("t.i64", -4); w.add_float64("t.f64", 1e300)
    w.add_array("t.arr.str", ["a", "", "<0x0A>"])
    w.add_array("t.arr.i32", [1, 2, 3])
    w.add_array("t.arr.nested", [[1, 2], [3]])
    w.add_tensor("a", np.ones((2, 8), dtype=np.float32))
    w.add_tensor("b", np.arange(16, dtype=np.float16))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def from_model(model, path):
    r = GGUFReader(model)
    w = GGUFWriter(path, str(r.fields["general.architecture"].contents()))
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY:
            w.add_key_value(name, field.contents()[:40], kind, sub_type=field.types[1])
        else:
            w.add_key_value(name, field.contents(), kind)
    for t in r.tensors[:4]:
        w.add_tensor(t.name, np.zeros(32, dtype=np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def tiny_gpt_oss(path):
    """A whole gpt-oss model in 20 KB (width 32, 2 blocks, 4 MXFP4 experts of 32, 2 used, a
    sink per head, a window, YaRN): the fuzzer mutates a file the model loader accepts, so it
    reaches the expert keys, the 3-D tensors' shapes and MXFP4's exponent bytes."""
    from gguf.quants import quantize
    from gguf import GGMLQuantizationType as T
    rng = np.random.default_rng(7)
    width, heads, kv, head, experts, hidden, vocab = 32, 2, 1, 16, 4, 32, 8
    w = GGUFWriter(path, "gpt-oss")
    w.add_context_length(256); w.add_embedding_length(width); w.add_block_count(2)
    w.add_feed_forward_length(hidden); w.add_head_count(heads); w.add_head_count_kv(kv)
    w.add_key_length(head); w.add_value_length(head); w.add_rope_freq_base(150000.0)
    w.add_layer_norm_rms_eps(1e-5); w.add_sliding_window(8)
    w.add_rope_scaling_type(__import__("gguf").RopeScalingType.YARN); w.add_rope_scaling_factor(4.0)
    w.add_rope_scaling_orig_ctx_len(64)
    w.add_expert_count(experts); w.add_expert_used_count(2); w.add_expert_feed_forward_length(hidden)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "a", "b", "c"])
    w.add_token_types([3, 3, 3, 3, 3, 1, 1, 1]); w.add_eos_token_id(4)

    def f32(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))

    def mxfp4(name, *shape):
        data = quantize((rng.standard_normal(shape) * 0.2).astype(np.float32), T.MXFP4)
        w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=T.MXFP4)

    f32("token_embd.weight", vocab, width); f32("output_norm.weight", width); f32("output.weight", vocab, width)
    for b in range(2):
        p = f"blk.{b}."
        f32(p + "attn_norm.weight", width); f32(p + "post_attention_norm.weight", width)
        f32(p + "attn_q.weight", heads * head, width); f32(p + "attn_q.bias", heads * head)
        f32(p + "attn_k.weight", kv * head, width); f32(p + "attn_k.bias", kv * head)
        f32(p + "attn_v.weight", kv * head, width); f32(p + "attn_v.bias", kv * head)
        f32(p + "attn_output.weight", width, heads * head); f32(p + "attn_output.bias", width)
        f32(p + "attn_sinks.weight", heads)
        f32(p + "ffn_gate_inp.weight", experts, width); f32(p + "ffn_gate_inp.bias", experts)
        mxfp4(p + "ffn_gate_exps.weight", experts, hidden, width); f32(p + "ffn_gate_exps.bias", experts, hidden)
        mxfp4(p + "ffn_up_exps.weight", experts, hidden, width); f32(p + "ffn_up_exps.bias", experts, hidden)
        mxfp4(p + "ffn_down_exps.weight", experts, width, hidden); f32(p + "ffn_down_exps.bias", experts, width)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def tiny_gemma4(path):
    """A whole Gemma 4 in about 130 KB (width 32, 4 blocks: window blocks with heads of 16 and a
    full one with heads of 32 and proportional RoPE, the last block reading block 1's keys and
    values, per-layer token embeddings of 8, feed-forward widths per block, a dense network
    beside 4 experts of 16 with fused gate-up, output scales, soft-capping) with Gemma 4's
    tokenizer (SentencePiece's alphabet and merges): the fuzzer reaches the per-block arrays,
    the sharing rule and the tokenizer's merges."""
    rng = np.random.default_rng(11)
    width, heads, blocks, per_layer, experts, hidden = 32, 2, 4, 8, 4, 16
    local = [True, True, False, True]
    w = GGUFWriter(path, "gemma4")
    w.add_context_length(256); w.add_embedding_length(width); w.add_block_count(blocks)
    w.add_feed_forward_length([32, 32, 32, 64]); w.add_head_count(heads); w.add_head_count_kv(1)
    w.add_key_length(32); w.add_value_length(32)
    w.add_uint32("gemma4.attention.key_length_swa", 16); w.add_uint32("gemma4.attention.value_length_swa", 16)
    w.add_uint32("gemma4.rope.dimension_count", 32); w.add_uint32("gemma4.rope.dimension_count_swa", 16)
    w.add_rope_freq_base(1e6); w.add_float32("gemma4.rope.freq_base_swa", 1e4); w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(8); w.add_array("gemma4.attention.sliding_window_pattern", local)
    w.add_uint32("gemma4.attention.shared_kv_layers", 1); w.add_uint32("gemma4.embedding_length_per_layer_input", per_layer)
    w.add_float32("gemma4.final_logit_softcapping", 30.0)
    w.add_expert_count(experts); w.add_expert_used_count(2); w.add_expert_feed_forward_length(hidden)
    tokens = ["<pad>", "<eos>", "<bos>", "<0x41>", "<0x0A>", "\n", "▁", "a", "b", "▁a", "ab", "▁ab", "<|channel>", "<channel|>"]
    w.add_tokenizer_model("gemma4")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 4, 4])
    w.add_token_merges(["▁ a", "a b", "▁ ab", "▁a b"])
    w.add_bos_token_id(2); w.add_eos_token_id(1)
    vocab = len(tokens)

    def f32(name, *shape, scale=0.1, offset=0.0):
        # Matrices in half precision, to keep the seed small.
        values = (offset + rng.standard_normal(shape) * scale).astype(np.float32)
        w.add_tensor(name, values.astype(np.float16) if len(shape) > 1 else values)

    f32("token_embd.weight", vocab, width); f32("output_norm.weight", width, offset=1)
    w.add_tensor("rope_freqs.weight", np.array([1.0] * 4 + [1e30] * 12, dtype=np.float32))
    f32("per_layer_token_embd.weight", vocab, per_layer * blocks); f32("per_layer_model_proj.weight", per_layer * blocks, width)
    f32("per_layer_proj_norm.weight", per_layer, offset=1)
    for b in range(blocks):
        p, head = f"blk.{b}.", 16 if local[b] else 32
        f32(p + "attn_norm.weight", width, offset=1); f32(p + "attn_q.weight", heads * head, width)
        f32(p + "attn_q_norm.weight", head, offset=1); f32(p + "attn_output.weight", width, heads * head)
        if b < blocks - 1:
            f32(p + "attn_k.weight", head, width); f32(p + "attn_v.weight", head, width); f32(p + "attn_k_norm.weight", head, offset=1)
        f32(p + "post_attention_norm.weight", width, offset=1); f32(p + "ffn_norm.weight", width, offset=1)
        ff = 64 if b == blocks - 1 else 32
        f32(p + "ffn_gate.weight", ff, width); f32(p + "ffn_up.weight", ff, width); f32(p + "ffn_down.weight", width, ff)
        f32(p + "post_ffw_norm.weight", width, offset=1)
        f32(p + "ffn_gate_inp.weight", experts, width); f32(p + "ffn_gate_inp.scale", width, offset=1)
        f32(p + "pre_ffw_norm_2.weight", width, offset=1); f32(p + "post_ffw_norm_1.weight", width, offset=1)
        f32(p + "post_ffw_norm_2.weight", width, offset=1)
        f32(p + "ffn_gate_up_exps.weight", experts, 2 * hidden, width); f32(p + "ffn_down_exps.weight", experts, width, hidden)
        f32(p + "ffn_down_exps.scale", experts, offset=1)
        f32(p + "inp_gate.weight", per_layer, width); f32(p + "proj.weight", width, per_layer)
        f32(p + "post_norm.weight", width, offset=1); f32(p + "layer_output_scale.weight", 1, offset=1)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def tiny_qwen35(path):
    """A whole Qwen 3.5 in 86 KB (width 32, 4 blocks: Gated DeltaNets in blocks 0-2 with
    heads of 16, one query/key head read by two value heads, a convolution of 4 taps; gated
    attention in block 3 with M-RoPE sections; a multi-token-prediction block after them): the
    fuzzer reaches the recurrent blocks' keys, the sections and the prediction block's count."""
    rng = np.random.default_rng(35)
    width, heads, head, state, value_heads, blocks = 32, 2, 16, 16, 2, 4
    w = GGUFWriter(path, "qwen35")
    w.add_context_length(256); w.add_embedding_length(width); w.add_block_count(blocks + 1)
    w.add_uint32("qwen35.nextn_predict_layers", 1)
    w.add_feed_forward_length(32); w.add_head_count(heads); w.add_head_count_kv(1)
    w.add_key_length(head); w.add_value_length(head); w.add_rope_dimension_count(8)
    w.add_array("qwen35.rope.dimension_sections", [1, 1, 1, 1])
    w.add_rope_freq_base(1e7); w.add_layer_norm_rms_eps(1e-6)
    w.add_uint32("qwen35.ssm.conv_kernel", 4); w.add_uint32("qwen35.ssm.state_size", state)
    w.add_uint32("qwen35.ssm.group_count", 1); w.add_uint32("qwen35.ssm.time_step_rank", value_heads)
    w.add_uint32("qwen35.ssm.inner_size", value_heads * state)
    w.add_array("qwen35.attention.recurrent_layers", [True, True, True, False, False])
    w.add_uint32("qwen35.full_attention_interval", 4)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<|im_start|>", "<|im_end|>", "<think>", "</think>", "a", "b", "c", "ab"])
    w.add_token_types([3, 3, 4, 4, 1, 1, 1, 1]); w.add_token_merges(["a b"]); w.add_eos_token_id(1)
    vocab = 8
    channels = 2 * state + value_heads * state

    def f32(name, *shape, scale=0.1, offset=0.0):
        values = (offset + rng.standard_normal(shape) * scale).astype(np.float32)
        w.add_tensor(name, values.astype(np.float16) if len(shape) > 1 and shape[-1] % 32 == 0 else values)

    f32("token_embd.weight", vocab, width); f32("output_norm.weight", width, offset=1)
    for b in range(blocks + 1):
        p = f"blk.{b}."
        f32(p + "attn_norm.weight", width, offset=1); f32(p + "post_attention_norm.weight", width, offset=1)
        f32(p + "ffn_gate.weight", 32, width); f32(p + "ffn_up.weight", 32, width); f32(p + "ffn_down.weight", width, 32)
        if b < 3:
            f32(p + "attn_qkv.weight", channels, width); f32(p + "attn_gate.weight", value_heads * state, width)
            f32(p + "ssm_conv1d.weight", channels, 4, scale=0.5); f32(p + "ssm_dt.bias", value_heads, offset=-4)
            f32(p + "ssm_a", value_heads, offset=-1); f32(p + "ssm_alpha.weight", value_heads, width)
            f32(p + "ssm_beta.weight", value_heads, width); f32(p + "ssm_norm.weight", state, offset=1)
            f32(p + "ssm_out.weight", width, value_heads * state)
        else:
            f32(p + "attn_q.weight", 2 * heads * head, width); f32(p + "attn_k.weight", head, width)
            f32(p + "attn_v.weight", head, width); f32(p + "attn_output.weight", width, heads * head)
            f32(p + "attn_q_norm.weight", head, offset=1); f32(p + "attn_k_norm.weight", head, offset=1)
        if b == blocks:
            f32(p + "nextn.eh_proj.weight", width, 2 * width); f32(p + "nextn.enorm.weight", width, offset=1)
            f32(p + "nextn.hnorm.weight", width, offset=1)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def tiny_granite_hybrid(path):
    """A whole Granite 4 hybrid in about 60 KB (width 32, 3 blocks: Mamba2 in blocks 0 and 2
    with 4 heads of 16 in one group, states of 16, a convolution of 4 taps with its bias;
    attention without RoPE in block 1; Granite's multipliers): the fuzzer reaches the Mamba2
    keys, the per-block head counts and the multipliers."""
    rng = np.random.default_rng(4)
    width, heads, head, state, mamba_heads, blocks = 32, 2, 16, 16, 4, 3
    inner = 2 * width
    channels = inner + 2 * state
    w = GGUFWriter(path, "granitehybrid")
    w.add_context_length(256); w.add_embedding_length(width); w.add_block_count(blocks)
    w.add_feed_forward_length(32); w.add_head_count(heads); w.add_head_count_kv([0, 1, 0])
    w.add_layer_norm_rms_eps(1e-5); w.add_rope_scaling_finetuned(False)
    w.add_embedding_scale(12.0); w.add_residual_scale(0.25); w.add_attention_scale(0.0625); w.add_logit_scale(4.0)
    w.add_uint32("granitehybrid.ssm.conv_kernel", 4); w.add_uint32("granitehybrid.ssm.state_size", state)
    w.add_uint32("granitehybrid.ssm.group_count", 1); w.add_uint32("granitehybrid.ssm.time_step_rank", mamba_heads)
    w.add_uint32("granitehybrid.ssm.inner_size", inner)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "a", "b", "c", "ab", "ba"])
    w.add_token_types([3, 3, 3, 1, 1, 1, 1, 1]); w.add_token_merges(["a b"]); w.add_eos_token_id(2)
    vocab = 8

    def f32(name, *shape, scale=0.1, offset=0.0):
        values = (offset + rng.standard_normal(shape) * scale).astype(np.float32)
        w.add_tensor(name, values.astype(np.float16) if len(shape) > 1 and shape[-1] % 32 == 0 else values)

    f32("token_embd.weight", vocab, width); f32("output_norm.weight", width, offset=1)
    for b in range(blocks):
        p = f"blk.{b}."
        f32(p + "attn_norm.weight", width, offset=1); f32(p + "ffn_norm.weight", width, offset=1)
        f32(p + "ffn_gate.weight", 32, width); f32(p + "ffn_up.weight", 32, width); f32(p + "ffn_down.weight", width, 32)
        if b == 1:
            f32(p + "attn_q.weight", heads * head, width); f32(p + "attn_k.weight", head, width)
            f32(p + "attn_v.weight", head, width); f32(p + "attn_output.weight", width, heads * head)
        else:
            f32(p + "ssm_in.weight", inner + channels + mamba_heads, width)
            f32(p + "ssm_conv1d.weight", channels, 4, scale=0.5); f32(p + "ssm_conv1d.bias", channels)
            f32(p + "ssm_dt.bias", mamba_heads, offset=-4); f32(p + "ssm_a", mamba_heads, 1, offset=-1)
            f32(p + "ssm_d", mamba_heads, 1, offset=1); f32(p + "ssm_norm.weight", 1, inner, offset=1)
            f32(p + "ssm_out.weight", width, inner)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    every_type(os.path.join(OUT, "every-type.gguf"))
    tiny_gpt_oss(os.path.join(OUT, "tiny-gpt-oss.gguf"))
    tiny_gemma4(os.path.join(OUT, "tiny-gemma4.gguf"))
    tiny_qwen35(os.path.join(OUT, "tiny-qwen35.gguf"))
    tiny_granite_hybrid(os.path.join(OUT, "tiny-granite-hybrid.gguf"))
    if len(sys.argv) > 1:
        from_model(sys.argv[1], os.path.join(OUT, "model-metadata.gguf"))
