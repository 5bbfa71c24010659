#!/usr/bin/env python3
"""Reference dequantizations from gguf-py (`gguf.quants.dequantize`), for Typeset's Kernels tests.

Writes, produced once and committed:

* Fixtures/expected/<model>.dequantized.json: for every tensor of a real model, the SHA-256 of
  its dequantized float32 values (little-endian bytes, row-major), and the first 4 values;
* Fixtures/quants/<TYPE>.bin + Fixtures/quants/expected.json: for each of the 14 types Typeset
  dequantizes, 64 blocks of seeded random bytes whose f16 scale fields are replaced by finite
  values (so no NaN payloads are compared), with the SHA-256 and first values of gguf-py's output;
  for MXFP4, 256 blocks whose exponent bytes are 0 … 255 (every scale, subnormal to infinite).

    venv/bin/pip install gguf==0.19.0
    venv/bin/python Fixtures/make_dequantization_fixtures.py MODEL.gguf...
"""
import hashlib
import json
import os
import sys

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

HERE = os.path.dirname(os.path.abspath(__file__))

# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.MXFP4]


def digest(values):
    values = np.ascontiguousarray(values, dtype="<f4")
    return hashlib.sha256(values.tobytes()).hexdigest()


def synthetic():
    rng = np.random.default_rng(20261122)
    expected = {}
    for qtype in TYPES:
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        blocks = 64 if block_size > 1 else 64 * 32
        if qtype == T.MXFP4:
            blocks = 256  # one block per exponent byte, 0 (subnormal scales) to 255 (infinities)
        raw = rng.integers(0, 256, size=blocks * type_size, dtype=np.uint8)
        if qtype == T.MXFP4:
            raw.reshape(blocks, type_size)[:, 0] = np.arange(256, dtype=np.uint8)
        if qtype == T.F32:
            raw = rng.uniform(-4, 4, blocks).astype("<f4").view(np.uint8)
        elif qtype in (T.F16, T.BF16):
            # finite values only: clear the top exponent bit pattern 0x7C00 (F16) / 0x7F80 (BF16)
            words = raw.view("<u2").copy()
            mask = 0x7C00 if qtype == T.F16 else 0x7F80
            words[(words & mask) == mask] &= ~np.uint16(0x4000)
            raw = words.view(np.uint8)
        for offset in F16_FIELDS.get(qtype, []):
            scales = rng.uniform(-2, 2, blocks).astype("<f2").view(np.uint8).reshape(blocks, 2)
            view = raw.reshape(blocks, type_size)
            view[:, offset:offset + 2] = scales
        raw.tofile(os.path.join(HERE, "quants", f"{qtype.name}.bin"))
        out = dequantize(raw, qtype).reshape(-1)
        expected[qtype.name] = {"elements": int(out.size), "sha256": digest(out),
                                "head": [float(v) for v in out[:4]]}
    with open(os.path.join(HERE, "quants", "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


def real(model):
    reader = GGUFReader(model)
    tensors = {}
    for tensor in reader.tensors:
        out = dequantize(tensor.data, tensor.tensor_type).reshape(-1)
        tensors[tensor.name] = {"type": tensor.tensor_type.name, "elements": int(out.size),
                                "sha256": digest(out), "head": [float(v) for v in out[:4]]}
    name = os.path.basename(model)
    with open(os.path.join(HERE, "expected", f"{name}.dequantized.json"), "w") as f:
        json.dump({"generator": "gguf-py 0.19.0 gguf.quants.dequantize", "tensors": tensors}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    synthetic()
    for path in sys.argv[1:]:
        real(path)
