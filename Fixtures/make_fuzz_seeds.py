#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (Fixtures/fuzz-seeds/*.gguf) with gguf-py's own writer,
so the seeds come from an implementation independent of Typeset's.

    venv/bin/pip install gguf==0.19.0
    venv/bin/python Fixtures/make_fuzz_seeds.py [SmolLM2.gguf]

With a model path, one seed copies that model's real metadata, its arrays cut to 40 elements.
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


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    every_type(os.path.join(OUT, "every-type.gguf"))
    if len(sys.argv) > 1:
        from_model(sys.argv[1], os.path.join(OUT, "model-metadata.gguf"))
