#!/usr/bin/env python3
"""Writes what gguf-py's reader reports about a GGUF file, as JSON, for Typeset's tests.

The output is the independent reference that `GGUFTests` and `typeset inspect --json` are
compared against: header counts, every metadata key with its type and (scalar) value or
(array) element type and count, and every tensor's name, type, shape, offsets and size.

    python -m venv venv && venv/bin/pip install gguf==0.19.0
    venv/bin/python Fixtures/gguf_py_dump.py MODEL.gguf > Fixtures/expected/MODEL.gguf-py.json

Produced once per model and committed; the tests never run Python.
"""
import json
import sys

import gguf
from gguf import GGUFReader, GGUFValueType


def scalar(field, value_type):
    value = field.contents()
    if value_type == GGUFValueType.FLOAT32 or value_type == GGUFValueType.FLOAT64:
        return float(value)
    if value_type == GGUFValueType.BOOL:
        return bool(value)
    if value_type == GGUFValueType.STRING:
        return value
    return int(value)


def main(path):
    reader = GGUFReader(path)
    metadata = []
    header = {}
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):
            header[name[len("GGUF."):]] = int(field.contents())
            continue
        entry = {"key": name, "type": field.types[0].name.lower()}
        if field.types[0] == GGUFValueType.ARRAY:
            entry["element_type"] = field.types[1].name.lower()
            entry["count"] = len(field.data)
            if field.types[1] != GGUFValueType.ARRAY:
                contents = field.contents()
                entry["head"] = [c if isinstance(c, (str, int, float, bool)) else c.item() for c in contents[:8]]
                if field.types[1] == GGUFValueType.FLOAT32:
                    entry["head"] = [float(c) for c in entry["head"]]
        else:
            entry["value"] = scalar(field, field.types[0])
        metadata.append(entry)
    tensors = []
    for tensor in reader.tensors:
        tensors.append({
            "name": tensor.name,
            "type": tensor.tensor_type.name,
            "shape": [int(d) for d in tensor.shape],
            "offset": int(tensor.data_offset - reader.data_offset),
            "file_offset": int(tensor.data_offset),
            "n_bytes": int(tensor.n_bytes),
        })
    json.dump({
        "generator": f"gguf-py {gguf.__version__ if hasattr(gguf, '__version__') else '0.19.0'}",
        "version": header["version"],
        "tensor_count": header["tensor_count"],
        "kv_count": header["kv_count"],
        "alignment": reader.alignment,
        "data_offset": reader.data_offset,
        "metadata": metadata,
        "tensors": tensors,
    }, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
