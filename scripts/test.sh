#!/usr/bin/env bash
# Every test: installs what it needs, builds once, then runs each suite and prints a summary.
#   bash scripts/test.sh            all suites
#   SUITES="rust host" bash scripts/test.sh   a subset (names below)
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed"; exit 1; }
bash scripts/build.sh || { echo "build failed"; exit 1; }

suites=${SUITES:-"rust host hf-oracle ai-sdk demo runtimes frameworks fuzz-api examples arena python"}
passed=0; failed=0; failed_names=()
run() {
  local name=$1; shift
  case " $suites " in *" $name "*) ;; *) return ;; esac
  printf '\n\033[1m=== %s: %s\033[0m\n' "$name" "$*"
  local start=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "=== $name passed in $((SECONDS - start)) s"
  else failed=$((failed + 1)); failed_names+=("$name"); echo "=== $name FAILED after $((SECONDS - start)) s"; fi
}

# The crate's tests, then its docs as docs.rs builds them, every intra-doc link resolved.
run rust      bash -c 'cargo test --quiet --features cli && RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --features cli'
run host      node --test js/test/
# Llama 3 / Qwen 3 / Gemma 3 against the official Python `tokenizers` on 100,000 generated strings,
# from their tokenizer.json and (Qwen, DeepSeek, tekken) from the prebuilt data the package ships.
run hf-oracle bash -c 'bash scripts/oracle/regen-hf.sh --generated && cargo test --quiet --test hf_tokenizer --test hf_prebuilt -- --ignored'
run ai-sdk    node --test tests/ai-sdk/
run demo      node examples/demo/demo.mjs
run runtimes  node tests/runtimes/run-all.mjs
# The apps people build: the packed tarball in Next.js (Turbopack, webpack; Node, Edge routes),
# Vite + Chromium, wrangler + workerd, Nuxt, plain Node 22 / Deno / Bun (tests/frameworks).
run frameworks node tests/frameworks/run.mjs
# Generated conversations through the public API (fuzz/api): a fixed seed, 80 cases, ~80 s; any
# violation fails the suite (fuzz/api/README.md lists the classes, and the one still open).
run fuzz-api  node fuzz/api/run.mjs --seed ci-1 --cases 80 --no-minimize --quiet
run examples  node examples/run.mjs
# The quality arena's harness tests, then its smallest session at both windows with wide margins,
# under Node 22 (setup.sh's .tools/node22): the Cloudflare contenders' Durable Object is node:sqlite
# (Node 22's --test takes files or globs, not directories).
run arena     bash -c 'n=.tools/node22/node_modules/.bin/node; "$n" --test "bench/arena/test/*.test.mjs" "bench/arena/sessions/*.test.mjs" && "$n" --max-old-space-size=8192 bench/arena/run.mjs --sessions long-chat --check --out bench/arena/out/ci'
# The Python package: the Component built into it, installed (not editable) into .venv-py, then
# pytest (its cross-host test also runs the npm build and the native CLI).
run python    bash -c 'bash scripts/build-component.sh && .venv-py/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall ./python && .venv-py/bin/python -m pytest -q python/tests'

echo
[ "$failed" -gt 0 ] && echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
