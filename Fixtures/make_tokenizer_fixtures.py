#!/usr/bin/env python3
"""Writes llama.cpp's token ids for the tokenizer parity corpus, for Typeset's tokenizer tests.

Run once by a developer, with the peers venv (llama-cpp-python 0.3.36 and gguf 0.19.0), after
`TYPESET_ONLY=models bash Fixtures/fetch.sh` and `TYPESET_ONLY=corpus bash Fixtures/fetch.sh`:

    $PEERS_VENV/bin/python Fixtures/make_tokenizer_fixtures.py [--keys smollm2,gemma3,...]

The output is committed; the Swift tests never run Python or llama.cpp.

Keys (one vocabulary each):

  smollm2               SmolLM2-135M-Instruct.Q4_1.gguf as shipped (byte-level BPE, pre "smollm")
  gemma3                gemma-3-270m-q4_k_m.gguf as shipped (SentencePiece-style, model "llama")
  qwen0.5b              qwen2.5-coder-0.5b-instruct-q4_k_m.gguf as shipped (byte-level BPE, pre "qwen2",
                        151,936 tokens)
  smollm2-pre-<pre>     SmolLM2's vocabulary and merges with tokenizer.ggml.pre replaced by <pre>
                        (default, gpt-2, llama-bpe, qwen2, deepseek-llm, gpt-4o): a metadata-only
                        GGUF written with gguf-py into a temporary directory (every key/value of
                        the SmolLM2 file copied, only tokenizer.ggml.pre changed, no tensors) and
                        loaded by llama.cpp with vocab_only=true.  These tokenize only SUBSET.
  gemma3-as-gemma4      Gemma 3's vocabulary as a Gemma 4 tokenizer (tokenizer.ggml.model "gemma4":
                        SentencePiece's alphabet merged by rank) with merges derived from its
                        scores (gemma4_merges: every split of a normal token into two normal
                        tokens, ordered by the token's score, highest first, then by the token's
                        id and the split's position); a metadata-only GGUF as the pre variants
                        are, on SUBSET. The merges' sha256 is recorded ("merges_sha256"), so the
                        Swift test can check it derived the same ones.
  qwen0.5b-pre-<pre>    the same with Qwen's vocabulary (a tiktoken-style vocabulary like Llama 3's,
                        SmolLM3's and LFM2's): llama-bpe (Llama 3) on the whole corpus; smaug-bpe
                        (SmolLM3), lfm2 and gpt-4o (Phi-4-mini) on SUBSET.

For every key and document two lists are recorded: "plain" (add_special=false,
parse_special=false) and "special" (add_special=true, parse_special=true).

Files written to Fixtures/tokenizer/expected/ (all integers little-endian):

  <key>.ids   b"TSID", u32 version (1), u32 document count, then per document, in corpus order:
                u32 document index (0-based position in corpus.json),
                u32 n, then n token ids as unsigned LEB128 varints           (plain),
                u8 flag: 1 = the special list equals the plain list, nothing follows;
                         0 = u32 n, then n token ids as unsigned LEB128 varints (special).
  <key>.json  model identity, llama-cpp-python and gguf-py versions, n_vocab, vocab_type
              (1 = SPM, 2 = BPE), bos/eos/eot, add_bos (whether tokenizing "" with
              add_special=true yields BOS), add_eos likewise, empty_special_ids (that list),
              llama_vocab_get_add_bos/eos, the sorted ids with llama_vocab_is_eog and with
              llama_vocab_is_control, per document {index, name, bytes, sha256, plain_count,
              special_count, detokenized_sha256 (of llama_detokenize(plain ids,
              remove_special=false, unparse_special=false); note that llama.cpp's clean_spaces,
              on for the pre types default, gpt-2 and llama-bpe, drops spaces before
              punctuation there, so it is not the document's sha256)}; for the two real models also
              "pieces" (sha256 over all ids of u32 length + llama_token_to_piece bytes, with
              special=true and with special=false, and the same per chunk of 4096 ids),
              "non_normal_tokens" ([id, llama attribute bits, piece hex (special=true)] for every
              id whose attribute is not exactly LLAMA_TOKEN_ATTR_NORMAL) and "probes" (short
              strings, as hex, with their ids in both modes).
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.metadata
import json
import logging
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp as L
from gguf import GGUFReader, GGUFValueType, GGUFWriter

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "tokenizer" / "corpus.json"
OUT = HERE / "tokenizer" / "expected"
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3 = "gemma-3-270m-q4_k_m.gguf"
QWEN05 = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PRE_VARIANTS = ["default", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "gpt-4o"]
QWEN_PRE_VARIANTS = ["llama-bpe", "smaug-bpe", "lfm2", "gpt-4o"]
QWEN_WHOLE_CORPUS = {"llama-bpe"}

# ~333 KB for the pre-tokenizer variants: code with tabs, Arabic, Chinese (cut mid-character),
# Devanagari, Thai, Cyrillic, emoji (ZWJ, skin tones, flags), digit runs, binary with NULs.
SUBSET = [
    "jquery-js", "django-po-ar", "django-po-zh-hans", "django-po-hi", "django-po-th", "django-po-ru",
    "demoji-codes-zwj-flags-json", "mpmath-test-functions2-py", "django-ja-mo-binary",
]

PROBES = [
    b"", b" ", b"  ", b"\n", b"<eos>", b"<|im_start|>user\nHi<|im_end|>", b"<start_of_turn>model\n",
    b"</s>", b"<table><tr><td>1</td></tr></table>", "▁".encode(), b"<0x41>", b"a" * 5000, b" " * 1000,
    b"\n" * 300, "héllo wörld 你好 مرحبا 👋🏽 👨‍👩‍👧".encode(), b"12345678901234567890",
    "\u00a0\u2003x\u3000y".encode(), b"\xff\xfe a \xc3\x28 \xe2\x82 \xc0\xaf end", b"nul\x00byte",
]

CHUNK = 4096


def log(msg: str) -> None:
    print(f"fixtures: {msg}", file=sys.stderr, flush=True)


from make_tokenizer_corpus import file_sha256, sha256  # noqa: E402  (same directory)


# ---------------------------------------------------------------------------------------------
# llama.cpp

def _quiet() -> None:
    if os.environ.get("LLAMA_VERBOSE"):
        return
    cb = L.llama_log_callback(lambda level, text, user: None)
    _quiet.cb = cb  # keep the callback alive
    L.llama_log_set(cb, ctypes.c_void_p(0))


class Vocab:
    def __init__(self, path: Path):
        mp = L.llama_model_default_params()
        mp.vocab_only = True
        mp.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            raise SystemExit(f"llama.cpp failed to load {path} (vocab_only)")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self._piece = ctypes.create_string_buffer(256)

    def close(self) -> None:
        L.llama_model_free(self.model)

    def tokenize(self, text: bytes, special: bool) -> list[int]:
        n = len(text) + 16
        buf = (L.llama_token * n)()
        k = L.llama_tokenize(self.vocab, text, len(text), buf, n, special, special)
        if k < 0:
            n = -k
            buf = (L.llama_token * n)()
            k = L.llama_tokenize(self.vocab, text, len(text), buf, n, special, special)
            if k < 0:
                raise RuntimeError(f"llama_tokenize failed ({k})")
        return list(buf[:k])

    def detokenize(self, ids: list[int]) -> bytes:
        arr = (L.llama_token * max(1, len(ids)))(*ids)
        cap = max(64, 8 * len(ids))
        while True:
            out = ctypes.create_string_buffer(cap)
            k = L.llama_detokenize(self.vocab, arr, len(ids), out, cap, False, False)
            if k >= 0:
                return out.raw[:k]
            cap = -k

    def piece(self, token: int, special: bool) -> bytes:
        k = L.llama_token_to_piece(self.vocab, token, self._piece, len(self._piece), 0, special)
        if k < 0:
            self._piece = ctypes.create_string_buffer(-k)
            k = L.llama_token_to_piece(self.vocab, token, self._piece, len(self._piece), 0, special)
        return self._piece.raw[:k]


# ---------------------------------------------------------------------------------------------
# metadata-only GGUF with another tokenizer.ggml.pre

def gemma4_merges(source: GGUFReader) -> list[str]:
    """Merges for a SentencePiece vocabulary read as Gemma 4's: for every normal token (type 1)
    of two characters or more, each split into two normal tokens, ordered by the token's score
    (highest first), then its id, then the split's position (in characters)."""
    tokens = source.fields["tokenizer.ggml.tokens"].contents()
    types = source.fields["tokenizer.ggml.token_type"].contents()
    scores = source.fields["tokenizer.ggml.scores"].contents()
    normal = {t for t, kind in zip(tokens, types) if kind == 1}
    candidates = []
    for token_id, (token, kind) in enumerate(zip(tokens, types)):
        if kind != 1:
            continue
        for split in range(1, len(token)):
            left, right = token[:split], token[split:]
            if left in normal and right in normal:
                candidates.append((-scores[token_id], token_id, split, f"{left} {right}"))
    candidates.sort()
    return [merge for *_, merge in candidates]


def write_pre_variant(source: GGUFReader, pre: str, path: Path, model: str | None = None,
                      merges: list[str] | None = None) -> None:
    """Copies every metadata key/value of `source` (strings as raw bytes) into a tensor-less GGUF
    (with `model` as tokenizer.ggml.model and `merges` added, when given)."""
    arch = bytes(source.fields["general.architecture"].parts[-1]).decode()
    writer = GGUFWriter(str(path), arch)
    for name, field in source.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        if name == "tokenizer.ggml.pre":
            writer.add_key_value(name, pre, GGUFValueType.STRING)
        elif name == "tokenizer.ggml.model" and model is not None:
            writer.add_key_value(name, model, GGUFValueType.STRING)
        elif vtype == GGUFValueType.STRING:
            writer.add_key_value(name, bytes(field.parts[field.data[0]]), vtype)
        elif vtype == GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == GGUFValueType.ARRAY:
                raise SystemExit(f"nested array {name} is not supported")
            if sub == GGUFValueType.STRING:
                values = [bytes(field.parts[i]) for i in field.data]
            else:
                values = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_key_value(name, values, vtype, sub_type=sub)
        else:
            writer.add_key_value(name, field.parts[field.data[0]].tolist()[0], vtype)
    if merges is not None:
        writer.add_key_value("tokenizer.ggml.merges", merges, GGUFValueType.ARRAY, sub_type=GGUFValueType.STRING)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()

    # Read it back: same keys in the same order, same types and values, pre excepted.
    copy = GGUFReader(str(path))
    if len(copy.tensors) != 0:
        raise SystemExit(f"{path}: expected no tensors")
    keys = [k for k in source.fields if not k.startswith("GGUF.")]
    added = ["tokenizer.ggml.merges"] if merges is not None else []
    if [k for k in copy.fields if not k.startswith("GGUF.")] != keys + added:
        raise SystemExit(f"{path}: metadata keys differ from the source")
    for name in keys:
        a, b = source.fields[name], copy.fields[name]
        same = a.types == b.types and len(a.data) == len(b.data) and all(
            bytes(a.parts[i]) == bytes(b.parts[j]) for i, j in zip(a.data, b.data))
        if name == "tokenizer.ggml.pre":
            same = b.contents() == pre
        if name == "tokenizer.ggml.model" and model is not None:
            same = b.contents() == model
        if not same:
            raise SystemExit(f"{path}: {name} was not copied faithfully")


# ---------------------------------------------------------------------------------------------

def varints(ids: list[int]) -> bytes:
    out = bytearray()
    for v in ids:
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def pieces_digest(v: Vocab, special: bool) -> dict:
    total = hashlib.sha256()
    chunks = []
    for start in range(0, v.n_vocab, CHUNK):
        h = hashlib.sha256()
        for t in range(start, min(start + CHUNK, v.n_vocab)):
            p = v.piece(t, special)
            rec = struct.pack("<I", len(p)) + p
            h.update(rec)
            total.update(rec)
        chunks.append(h.hexdigest())
    return {"sha256": total.hexdigest(), "chunk_ids": CHUNK, "chunks": chunks}


def run_key(key: str, model_path: Path, identity: dict, docs: list[tuple[int, dict, bytes]],
            real_model: bool, subset: list[str] | None) -> dict:
    t0 = time.perf_counter()
    v = Vocab(model_path)
    bos, eos, eot = (L.llama_vocab_bos(v.vocab), L.llama_vocab_eos(v.vocab), L.llama_vocab_eot(v.vocab))
    empty_special = v.tokenize(b"", True)
    info = {
        "key": key,
        "model": identity,
        "llama_cpp_python": L.__version__,
        "gguf_py": importlib.metadata.version("gguf"),
        "n_vocab": v.n_vocab,
        "vocab_type": L.llama_vocab_type(v.vocab),
        "bos": bos, "eos": eos, "eot": eot,
        "add_bos": bool(empty_special[:1] == [bos] and bos >= 0),
        "add_eos": bool(empty_special[-1:] == [eos] and eos >= 0),
        "empty_special_ids": empty_special,
        "llama_vocab_get_add_bos": bool(L.llama_vocab_get_add_bos(v.vocab)),
        "llama_vocab_get_add_eos": bool(L.llama_vocab_get_add_eos(v.vocab)),
        "eog_ids": [t for t in range(v.n_vocab) if L.llama_vocab_is_eog(v.vocab, t)],
        "control_ids": [t for t in range(v.n_vocab) if L.llama_vocab_is_control(v.vocab, t)],
    }
    if subset is not None:
        info["subset"] = subset

    blob = bytearray(b"TSID" + struct.pack("<II", 1, len(docs)))
    records, n_tokens = [], 0
    for index, entry, text in docs:
        plain = v.tokenize(text, False)
        special = v.tokenize(text, True)
        blob += struct.pack("<II", index, len(plain)) + varints(plain)
        if special == plain:
            blob += b"\x01"
        else:
            blob += b"\x00" + struct.pack("<I", len(special)) + varints(special)
        n_tokens += len(plain)
        records.append({
            "index": index, "name": entry["name"], "bytes": len(text), "sha256": entry["sha256"],
            "plain_count": len(plain), "special_count": len(special),
            "detokenized_sha256": sha256(v.detokenize(plain)),
        })
    info["documents"] = records
    info["total_plain_tokens"] = n_tokens

    if real_model:
        info["pieces"] = {"special": pieces_digest(v, True), "plain": pieces_digest(v, False)}
        info["non_normal_tokens"] = [
            [t, a, v.piece(t, True).hex()]
            for t in range(v.n_vocab)
            if (a := L.llama_vocab_get_attr(v.vocab, t)) != L.LLAMA_TOKEN_ATTR_NORMAL
        ]
        info["probes"] = [{"hex": p.hex(), "plain": v.tokenize(p, False), "special": v.tokenize(p, True)}
                          for p in PROBES]
    v.close()

    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{key}.ids").write_bytes(bytes(blob))
    with open(OUT / f"{key}.json", "w") as f:
        json.dump(info, f, separators=(",", ":"))
        f.write("\n")
    log(f"{key}: {len(docs)} documents, {n_tokens} plain tokens, {len(blob)} bytes of ids, "
        f"{time.perf_counter() - t0:.1f}s")
    return info


def load_corpus() -> tuple[dict, list[tuple[int, dict, bytes]]]:
    manifest = json.loads(MANIFEST.read_text())
    docs = []
    for index, entry in enumerate(manifest["documents"]):
        path = CACHE / "tokenizer-corpus" / entry["file"]
        text = path.read_bytes() if path.is_file() else b""
        if sha256(text) != entry["sha256"]:
            raise SystemExit(f"{path} is missing or differs from corpus.json; "
                             "run TYPESET_ONLY=corpus bash Fixtures/fetch.sh")
        docs.append((index, entry, text))
    return manifest, docs


def main() -> int:
    all_keys = (["smollm2", "gemma3", "qwen0.5b"] + [f"smollm2-pre-{p}" for p in PRE_VARIANTS]
                + [f"qwen0.5b-pre-{p}" for p in QWEN_PRE_VARIANTS] + ["gemma3-as-gemma4"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", default=",".join(all_keys), help="comma-separated subset of " + ",".join(all_keys))
    args = ap.parse_args()
    keys = [k for k in args.keys.split(",") if k]
    unknown = set(keys) - set(all_keys)
    if unknown:
        raise SystemExit(f"unknown keys: {sorted(unknown)}")

    _quiet()
    logging.getLogger("gguf").setLevel(logging.ERROR)
    L.llama_backend_init()
    manifest, docs = load_corpus()
    by_name = {entry["name"]: (i, entry, text) for i, entry, text in docs}
    missing = [n for n in SUBSET if n not in by_name]
    if missing:
        raise SystemExit(f"SUBSET names not in corpus.json: {missing}")
    subset_docs = sorted((by_name[n] for n in SUBSET), key=lambda d: d[0])
    log(f"corpus: {len(docs)} documents, {sum(len(t) for _, _, t in docs)} bytes; "
        f"subset: {sum(len(t) for _, _, t in subset_docs)} bytes")

    models = CACHE / "models"
    files = {"smollm2": SMOLLM2, "gemma3": GEMMA3, "qwen0.5b": QWEN05}
    digests: dict[str, str] = {}

    def digest_of(name: str) -> str:
        if name not in digests:
            digests[name] = file_sha256(models / files[name])
        return digests[name]

    for key in keys:
        if key in files:
            run_key(key, models / files[key], {"file": files[key], "sha256": digest_of(key)}, docs, True, None)
        elif key == "gemma3-as-gemma4":
            source = GGUFReader(str(models / GEMMA3))
            merges = gemma4_merges(source)
            with tempfile.TemporaryDirectory(prefix="typeset-gemma4-") as tmp:
                path = Path(tmp) / f"{key}.gguf"
                write_pre_variant(source, source.fields["tokenizer.ggml.pre"].contents(), path, model="gemma4", merges=merges)
                identity = {"base_file": GEMMA3, "base_sha256": digest_of("gemma3"), "model": "gemma4",
                            "merges": len(merges), "merges_sha256": sha256("\n".join(merges).encode()),
                            "variant_bytes": path.stat().st_size, "variant_sha256": file_sha256(path)}
                run_key(key, path, identity, subset_docs, False, SUBSET)
        else:
            base, pre = key.split("-pre-", 1)
            whole = base == "qwen0.5b" and pre in QWEN_WHOLE_CORPUS
            with tempfile.TemporaryDirectory(prefix="typeset-pre-") as tmp:
                path = Path(tmp) / f"{key}.gguf"
                write_pre_variant(GGUFReader(str(models / files[base])), pre, path)
                identity = {"base_file": files[base], "base_sha256": digest_of(base), "pre": pre,
                            "variant_bytes": path.stat().st_size, "variant_sha256": file_sha256(path)}
                run_key(key, path, identity, docs if whole else subset_docs, False, None if whole else SUBSET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
