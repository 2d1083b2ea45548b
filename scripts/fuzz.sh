#!/usr/bin/env bash
# Long-run checks: the invariant property tests with many cases (release), then the cargo-fuzz
# target `plan_json` for $1 seconds (default 300).
#   scripts/fuzz.sh [seconds]
#   PROPTEST_CASES=50000 scripts/fuzz.sh 3600
#   FUZZ_IDEMPOTENT=1 scripts/fuzz.sh   # the fuzz target also asserts that re-planning gives no work
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-300}"

echo "== property tests: ${PROPTEST_CASES:-20000} cases (release) =="
PROPTEST_CASES="${PROPTEST_CASES:-20000}" \
  cargo test --release --test invariants

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz =="
  cargo install cargo-fuzz --locked
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal

echo "== cargo fuzz run plan_json for ${SECONDS_TO_RUN}s =="
CORPUS="${FUZZ_CORPUS:-fuzz/corpus/plan_json}"
CORPUS="$(realpath -m "$CORPUS")"
mkdir -p "$CORPUS"
cp -n fuzz/seeds/plan_json/* "$CORPUS"/ 2>/dev/null || true
cd fuzz
cargo +nightly fuzz run plan_json "$CORPUS" -- \
  -max_total_time="$SECONDS_TO_RUN" -dict=plan_json.dict -max_len=16384 -timeout=30
echo "fuzz: no crash in ${SECONDS_TO_RUN}s (crashes land in fuzz/artifacts/plan_json/)"
