#!/usr/bin/env bash
# Counts from the OFFICIAL Python `tokenizers` for the tokenizer.json families.
#   scripts/oracle/regen-hf.sh               rewrite tests/fixtures/hf-token-counts.json
#   scripts/oracle/regen-hf.sh --generated   write .tools/tokenizers/generated.json (100,000
#                                            generated strings; not committed) for
#                                            `cargo test --test hf_tokenizer -- --ignored`
# Needs the tokenizer files (scripts/fetch-tokenizers.sh). Venv: scripts/oracle/.venv-hf.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv-hf"
PYTHON="${PYTHON:-python3}"
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1
log() { echo "[regen-hf] $*" >&2; }

stamp_want="$( (cat "$HERE/requirements-hf.txt"; "$PYTHON" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$VENV/.stamp" && "$(cat "$VENV/.stamp")" == "$stamp_want" ]]; then
  log "venv up to date ($VENV)"
else
  log "creating venv $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements-hf.txt"
  echo "$stamp_want" > "$VENV/.stamp"
fi
bash "$REPO/scripts/fetch-tokenizers.sh"
if [[ "${1:-}" == "--generated" ]]; then
  "$VENV/bin/python" "$HERE/gen_hf_counts.py" --tokenizers "$REPO/.tools/tokenizers" \
    --generated "${HF_GENERATED:-100000}" --out "$REPO/.tools/tokenizers/generated.json"
else
  "$VENV/bin/python" "$HERE/gen_hf_counts.py" --tokenizers "$REPO/.tools/tokenizers" \
    --out "$REPO/tests/fixtures/hf-token-counts.json"
fi
