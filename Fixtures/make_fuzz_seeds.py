#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (Fixtures/fuzz-seeds/*.gguf) with gguf-py's own writer,
so the seeds come from an implementation independent of Typeset's.

    venv/bin/pip install gguf==0.19.0
    venv/bin/python Fixtures/make_fuzz_seeds.py [SmolLM2.gguf]

With a model path, one seed copies that model's real metadata, its arrays cut to 40 elements.
Another is a whole tiny gpt-oss model (MXFP4 experts), which the model loader accepts.
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


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    every_type(os.path.join(OUT, "every-type.gguf"))
    tiny_gpt_oss(os.path.join(OUT, "tiny-gpt-oss.gguf"))
    if len(sys.argv) > 1:
        from_model(sys.argv[1], os.path.join(OUT, "model-metadata.gguf"))
