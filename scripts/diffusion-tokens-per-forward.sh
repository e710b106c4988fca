#!/usr/bin/env bash
# Tokens per forward of block-diffusion decoding over a prompt set: the
# openings (first 12 words) of 20 long paragraphs of the TinyStories excerpt,
# from the first quarter of them on, 64 tokens each, summed from
# `tessera generate --stats`. The numbers in docs/block-diffusion.md.
#   scripts/diffusion-tokens-per-forward.sh                       # threshold 0.9
#   scripts/diffusion-tokens-per-forward.sh --set decode.threshold=0.5
set -euo pipefail
cd "$(dirname "$0")/.."
tessera=build/release/bin/tessera
text="${TESSERA_SHARED_DIR:-../shared}/data/tinystories_train_head.txt"
# Paragraphs (blank-line separated, joined to one line) longer than 200 characters.
mapfile -t paragraphs < <(awk 'BEGIN { RS = "" } { gsub(/\n/, " "); gsub(/^ +| +$/, ""); if (length($0) > 200) print }' "$text")
start=$(( ${#paragraphs[@]} / 4 ))
denoise=0 commit=0 tokens=0
for ((i = start; i < start + 20; ++i)); do
  prompt=$(echo "${paragraphs[$i]}" | awk '{ for (w = 1; w <= 12 && w <= NF; ++w) printf "%s%s", (w > 1 ? " " : ""), $w }')
  line=$("$tessera" generate --config configs/tok512-sdar-1m.toml --quiet --stats -n 64 \
           --prompt "$prompt" "$@" 2>&1 >/dev/null | grep '^diffusion:')
  read -r d c t < <(echo "$line" | sed -E 's/.*denoise_forwards=([0-9]+) commit_forwards=([0-9]+) tokens=([0-9]+).*/\1 \2 \3/')
  denoise=$((denoise + d)) commit=$((commit + c)) tokens=$((tokens + t))
done
awk -v d="$denoise" -v c="$commit" -v t="$tokens" 'BEGIN {
  printf "denoise %d, commit+prefill %d, tokens %d: %.3f tokens per forward, %.3f per denoise forward\n",
         d, c, t, t / (d + c), t / d }'
