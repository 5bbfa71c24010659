#!/usr/bin/env python3
"""Records what ggml itself computes for activation quantization and quantized dot products,
for Typeset's kernel tests: llama.cpp's CPU library (llama-cpp-python 0.3.36, built with
-DGGML_NATIVE=ON) called through ctypes.

Run once by a developer, in the venv docs/architecture.md ("Fixtures and the cache") makes:

    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_kernel_fixtures.py

Writes Fixtures/kernels/ggml.json:
  quantize   per activation format (q8_0, q8_1, q8_K): input vectors (random, with exact
             ties after scaling, all-zero blocks, a negative or positive extreme, tiny and
             huge magnitudes) and the bytes ggml's `from_float` for that type writes (hex):
             the x86 AVX quantizers of q8_0 and q8_1, and quantize_row_q8_K.
  dot        per weight type (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K, MXFP4): 16 real rows of a
             tensor of the two models (hex; synthetic rows for Q4_0 and MXFP4, which neither
             model has), input vectors, and ggml's `vec_dot` of each row with each input
             quantized by ggml (float32; "inf"/"-inf" where ggml overflows).

    ~/.cache/typeset-peers/venv/bin/python Fixtures/make_kernel_fixtures.py --only-mxfp4

adds (or replaces) the MXFP4 case alone in the existing file, leaving the others as recorded.

The Swift tests never run Python or llama.cpp.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import llama_cpp

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")
LIB = Path(llama_cpp.__file__).parent / "lib"

# ggml_type ids (ggml.h).
TYPES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q8_0": 8, "Q8_1": 9, "Q4_K": 12, "Q6_K": 14, "Q8_K": 15, "MXFP4": 39}
BLOCK = {"Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q8_0": (32, 34), "Q8_1": (32, 36), "MXFP4": (32, 17),
         "Q4_K": (256, 144), "Q6_K": (256, 210), "Q8_K": (256, 292)}

FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int64)
VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


class TypeTraitsCPU(ctypes.Structure):
    _fields_ = [("from_float", ctypes.c_void_p), ("vec_dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


cpu = ctypes.CDLL(str(LIB / "libggml-cpu.so"))
cpu.ggml_cpu_init.restype = None
cpu.ggml_cpu_init()
cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(TypeTraitsCPU)
cpu.ggml_get_type_traits_cpu.argtypes = [ctypes.c_int]


def traits(name: str) -> TypeTraitsCPU:
    return cpu.ggml_get_type_traits_cpu(TYPES[name]).contents


def quantize(format_name: str, values: np.ndarray) -> bytes:
    elements, size = BLOCK[format_name]
    out = ctypes.create_string_buffer(len(values) // elements * size)
    x = np.ascontiguousarray(values, dtype=np.float32)
    FROM_FLOAT(traits(format_name).from_float)(x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), ctypes.addressof(out), len(x))
    return out.raw


def dot(weight_type: str, row: bytes, values: np.ndarray) -> float:
    t = traits(weight_type)
    activation_type = {v: k for k, v in TYPES.items()}[t.vec_dot_type]
    quantized = quantize(activation_type, values)
    result = ctypes.c_float()
    row_buffer = ctypes.create_string_buffer(row)
    activation_buffer = ctypes.create_string_buffer(quantized)
    VEC_DOT(t.vec_dot)(len(values), ctypes.byref(result), 0, ctypes.addressof(row_buffer), 0,
                       ctypes.addressof(activation_buffer), 0, 1)
    return float(result.value)


def encoded(value: float) -> float | str:
    """JSON has no infinities: ggml's Q4_1 result overflows to ±inf when q8_1's fp16 `s` does."""
    return value if np.isfinite(value) else str(value)


def vectors(rng: np.random.Generator, length: int, block: int) -> list[np.ndarray]:
    """Inputs that exercise the quantizers' edge cases, `length` elements each."""
    out = [rng.standard_normal(length).astype(np.float32)]
    # Exact ties: the block's maximum is 127 (scale 1), values k + 0.5.
    ties = (rng.integers(-126, 126, length) + 0.5).astype(np.float32)
    ties[::block] = 127.0
    out.append(ties)
    # All-zero blocks, a negative extreme, tiny and huge values.
    mixed = rng.standard_normal(length).astype(np.float32) * 3
    mixed[:block] = 0
    mixed[block + 5] = -40.0
    if length >= 4 * block:
        mixed[2 * block: 3 * block] *= 1e-6
        mixed[3 * block: 4 * block] *= 1e4
    out.append(mixed)
    positive = rng.standard_normal(length).astype(np.float32)
    positive[7] = 25.0   # a positive extreme: q8_K's scale is then negative
    out.append(positive)
    # Heavy-tailed, like real activations.
    out.append((rng.standard_t(3, length) * 2).astype(np.float32))
    return out


def mxfp4_case() -> dict:
    """Synthetic MXFP4 rows (their own generator): exponent bytes around gpt-oss's (2^-9 … 2^-1
    scales) in most blocks, and in one row bytes from 0 (subnormal scales) to 189 (sums near
    2^83) in steps of 3; bytes near 255 make ggml's sums infinite or NaN (the dequantization
    fixtures cover every byte)."""
    rng = np.random.default_rng(20261207)
    rows = []
    for index in range(16):
        blocks = bytearray()
        for block in range(2048 // 32):
            exponent = int(rng.integers(118, 127))
            if index == 15:
                exponent = 3 * block
            blocks += bytes([exponent]) + bytes(rng.integers(0, 256, 16, dtype=np.uint8))
        rows.append(bytes(blocks))
    inputs = vectors(rng, 2048, 32)
    return {"type": "MXFP4", "tensor": "synthetic", "row_length": 2048, "rows": [r.hex() for r in rows],
            "inputs": [[float(v) for v in x] for x in inputs],
            "results": [[encoded(dot("MXFP4", r, x)) for x in inputs] for r in rows]}


def main() -> None:
    if sys.argv[1:] == ["--only-mxfp4"]:
        path = HERE / "kernels" / "ggml.json"
        result = json.loads(path.read_text())
        result["dot"] = [case for case in result["dot"] if case["type"] != "MXFP4"] + [mxfp4_case()]
        with open(path, "w") as f:
            json.dump(result, f, separators=(",", ":"))
        print("added the MXFP4 case to", path)
        return
    rng = np.random.default_rng(20261123)
    result: dict = {"ggml": "llama-cpp-python " + getattr(llama_cpp, "__version__", "?"), "quantize": {}, "dot": []}
    for name, format_name, block in [("q8_0", "Q8_0", 32), ("q8_1", "Q8_1", 32), ("q8_K", "Q8_K", 256)]:
        cases = []
        for values in vectors(rng, 1024, block):
            cases.append({"values": [float(v) for v in values], "bytes": quantize(format_name, values).hex()})
        result["quantize"][name] = cases

    import gguf
    sources = [("SmolLM2-135M-Instruct.Q4_1.gguf", "blk.5.ffn_down.weight"),
               ("SmolLM2-135M-Instruct.Q4_1.gguf", "token_embd.weight"),
               ("gemma-3-270m-q4_k_m.gguf", "blk.2.ffn_up.weight"),
               ("gemma-3-270m-q4_k_m.gguf", "blk.0.attn_output.weight"),
               ("gemma-3-270m-q4_k_m.gguf", "blk.0.ffn_down.weight")]
    wanted = {"Q4_1", "Q8_0", "Q5_0", "Q4_K", "Q6_K"}
    for file_name, tensor_name in sources:
        reader = gguf.GGUFReader(str(CACHE / "models" / file_name))
        tensor = next(t for t in reader.tensors if t.name == tensor_name)
        type_name = tensor.tensor_type.name
        if type_name not in wanted:
            continue
        wanted.discard(type_name)
        length = int(tensor.shape[0])
        elements, size = BLOCK[type_name]
        row_bytes = length // elements * size
        data = bytes(np.asarray(tensor.data).tobytes())
        rows = [data[r * row_bytes:(r + 1) * row_bytes] for r in range(16)]
        inputs = vectors(rng, length, BLOCK[{v: k for k, v in TYPES.items()}[traits(type_name).vec_dot_type]][0])
        result["dot"].append({
            "type": type_name, "tensor": f"{file_name}:{tensor_name}", "row_length": length,
            "rows": [r.hex() for r in rows],
            "inputs": [[float(v) for v in x] for x in inputs],
            "results": [[encoded(dot(type_name, r, x)) for x in inputs] for r in rows],
        })
    # Q4_0 has no tensor in either model: synthetic rows from the same generator's bytes.
    synthetic = []
    for _ in range(16):
        blocks = bytearray()
        for _ in range(2048 // 32):
            blocks += struct.pack("<e", float(rng.uniform(0.001, 0.05))) + bytes(rng.integers(0, 256, 16, dtype=np.uint8))
        synthetic.append(bytes(blocks))
    inputs = vectors(rng, 2048, 32)
    result["dot"].append({"type": "Q4_0", "tensor": "synthetic", "row_length": 2048, "rows": [r.hex() for r in synthetic],
                          "inputs": [[float(v) for v in x] for x in inputs],
                          "results": [[encoded(dot("Q4_0", r, x)) for x in inputs] for r in synthetic]})
    result["dot"].append(mxfp4_case())
    if wanted:
        sys.exit(f"no tensor of types {sorted(wanted)} found")
    (HERE / "kernels").mkdir(exist_ok=True)
    with open(HERE / "kernels" / "ggml.json", "w") as f:
        json.dump(result, f, separators=(",", ":"))
    print("wrote", HERE / "kernels" / "ggml.json", f"({len(result['dot'])} dot cases)")


if __name__ == "__main__":
    main()
