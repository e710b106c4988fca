#!/usr/bin/env bash
# tessera beside llama.cpp on the same GGUF files, as in docs/performance.md:
#   scripts/side-by-side.sh ROUNDS THREADS MODEL.gguf...
# Per round and model, one after the other: llama-bench -p 128 -n 64 -r 1 (its
# default, weights read from the file mapping), the same with -mmp 0, and
# tessera bench -p 128 -n 64 -r 1. Each tool's output goes to a file and is
# parsed after it exits: on a 2-core machine one more running process is
# enough to skew the 2-thread figures. Prints the medians and their ratios;
# the raw rows are kept in $OUT_DIR (default build/side-by-side).
# llama.cpp is built outside the repository (../shared/research/peers.md,
# ../shared/tools/peers-setup.sh); LLAMA_BIN points at its bin directory.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 ROUNDS THREADS MODEL.gguf..." >&2
  exit 2
fi
ROUNDS=$1 THREADS=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLAMA_BENCH=${LLAMA_BIN:-$ROOT/../peers/llama.cpp/build/bin}/llama-bench
TESSERA=${TESSERA:-$ROOT/build/release/bin/tessera}
CONFIG=$ROOT/configs/stories260k.toml
OUT_DIR=${OUT_DIR:-$ROOT/build/side-by-side}
for tool in "$LLAMA_BENCH" "$TESSERA"; do
  [ -x "$tool" ] || { echo "$0: $tool not found (set LLAMA_BIN / TESSERA)" >&2; exit 1; }
done
mkdir -p "$OUT_DIR"
out=$OUT_DIR/$(date +%Y%m%d-%H%M%S)-t$THREADS.csv
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "round,model,tool,test,tokens_per_s" > "$out"

# Appends the rows of the CSV in $tmp: llama-bench's or tessera bench's.
append() {  # round model tool
  python3 - "$tmp" "$@" >> "$out" <<'PY'
import csv, sys
path, rnd, model, tool = sys.argv[1:]
for row in csv.DictReader(open(path)):
    if tool == "tessera":
        test, tps = row["test"], row["tokens_per_s"]
    else:
        test = "pp%s" % row["n_prompt"] if row["n_prompt"] != "0" else "tg%s" % row["n_gen"]
        tps = row["avg_ts"]
    print(f"{rnd},{model},{tool},{test},{tps}")
PY
}

for round in $(seq 1 "$ROUNDS"); do
  for model in "$@"; do
    path=$(realpath "$model")
    name=$(basename "$path" .gguf)
    echo "round $round/$ROUNDS: $name" >&2
    "$LLAMA_BENCH" -m "$path" -p 128 -n 64 -r 1 -t "$THREADS" -o csv > "$tmp" 2>/dev/null
    append "$round" "$name" llama.cpp
    "$LLAMA_BENCH" -m "$path" -p 128 -n 64 -r 1 -t "$THREADS" -mmp 0 -o csv > "$tmp" 2>/dev/null
    append "$round" "$name" llama.cpp-no-mmap
    "$TESSERA" bench --config "$CONFIG" --model "$path" -p 128 -n 64 -r 1 --threads "$THREADS" \
      --csv > "$tmp" 2>/dev/null
    append "$round" "$name" tessera
  done
done

python3 - "$out" <<'PY'
import collections, csv, statistics, sys
values = collections.defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    values[(row["model"], row["test"], row["tool"])].append(float(row["tokens_per_s"]))
print("model test tessera llama.cpp ratio llama.cpp-no-mmap ratio")
for model, test in sorted({(m, t) for m, t, _ in values}):
    medians = [statistics.median(values[(model, test, tool)])
               for tool in ("tessera", "llama.cpp", "llama.cpp-no-mmap")]
    print("%s %s %.1f %.1f %.2fx %.1f %.2fx" % (model, test, medians[0], medians[1],
          medians[0] / medians[1], medians[2], medians[0] / medians[2]))
PY
echo "raw rows: $out" >&2
