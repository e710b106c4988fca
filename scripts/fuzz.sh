#!/usr/bin/env bash
# Builds the libFuzzer targets (cmake preset `fuzz`: clang, ASan + UBSan),
# gathers each one's seed corpus and runs it for a bounded time.
#   scripts/fuzz.sh                      # every target for 15 s (CI runs `scripts/fuzz.sh 5`)
#   scripts/fuzz.sh 1800                 # every target for 30 minutes
#   scripts/fuzz.sh 3600 gguf config     # the named targets for an hour each
#   FUZZ_JOBS=2 scripts/fuzz.sh 1800     # two targets at a time
# Corpora grow in build/fuzz/corpus/<target> and are kept between runs (they
# are never committed); an input that crashes is written to
# build/fuzz/findings/<target>/ and the script exits 1. Reproduce one with
#   build/fuzz/fuzz/fuzz_<target> build/fuzz/findings/<target>/crash-...
# docs/robustness.md says what each target covers.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
shift || true
all_targets=(gguf llama2c_model llama2c_tokenizer tokenizer config plugin_elf split_regex bpe_tokenizer
  tokenizer_json chat openai_request grpc_requests http_request)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
jobs="${FUZZ_JOBS:-1}"
shared="${TESSERA_SHARED_DIR:-$(pwd)/../shared}"

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  echo "fuzz.sh: needs clang and libFuzzer; install them with: scripts/install-deps.sh --fuzz" >&2
  exit 2
fi
[ -f build/fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target tessera_fuzz_all
bin=build/fuzz/fuzz
corpus=build/fuzz/corpus
findings=build/fuzz/findings
logs=build/fuzz/logs
mkdir -p "$logs"
stamp="$logs/.started"
touch "$stamp"

# Seeds: the committed ones, the generated tiny files, and the shipped models,
# tokenizers, configs and texts. cp -n keeps what the corpus already grew.
seed() {  # seed <target> <file>...
  mkdir -p "$corpus/$1"
  local target="$1"
  shift
  for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$corpus/$target/" || true; done
}
generated=build/fuzz/generated-seeds
"$bin/tessera_fuzz_seeds" "$generated"
seed gguf "$generated"/gguf/* "$shared"/models/*.gguf
seed llama2c_model "$generated"/llama2c_model/* "$shared/models/stories260K.bin"
seed llama2c_tokenizer "$generated"/llama2c_tokenizer/* "$shared/models/tok512.bin" \
  "$shared/models/aidreams260K_tok512.bin" "$shared/models/llama2_tokenizer.bin"
seed config configs/*.toml fuzz/seeds/config/*
seed tokenizer fuzz/seeds/tokenizer/*
seed split_regex fuzz/seeds/split_regex/*
seed bpe_tokenizer fuzz/seeds/bpe_tokenizer/*
seed tokenizer_json fuzz/seeds/tokenizer_json/* tests/data/tokenizer/corpus.json \
  "$generated"/tokenizer_json/*
seed chat tests/data/chat/templates/*.jinja fuzz/seeds/chat/* "$generated"/chat/*
seed openai_request fuzz/seeds/openai_request/*
seed http_request fuzz/seeds/http_request/*
seed grpc_requests fuzz/seeds/grpc_requests/*
for text in "$shared"/data/*.txt; do  # the first byte picks tok512 (see fuzz_tokenizer.cpp)
  [ -f "$text" ] && { printf '\0'; head -c 4096 "$text"; } >"$corpus/tokenizer/seed-$(basename "$text")"
done
seed plugin_elf "$bin/libtessera_fuzz_seed_elf.so"

# Inputs may be this long (libFuzzer's default, 4 KB or the longest seed,
# never builds a 100,000-link template chain or a 100,000-byte added token).
declare -A max_len=([chat]=1048576 [tokenizer_json]=1048576)

run_target() {  # run_target <name>
  local name="$1" dict=() len=()
  [ -f "fuzz/dicts/$name.dict" ] && dict=(-dict="fuzz/dicts/$name.dict")
  [ -n "${max_len[$name]:-}" ] && len=(-max_len="${max_len[$name]}")
  mkdir -p "$findings/$name"
  "$bin/fuzz_$name" "$corpus/$name" "${dict[@]}" "${len[@]}" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/$name/" \
    >"$logs/$name.log" 2>&1
}

status=0
pids=()
names=()
for name in "${targets[@]}"; do
  [ -x "$bin/fuzz_$name" ] || { echo "fuzz.sh: no target '$name' (have: ${all_targets[*]})" >&2; exit 2; }
  echo "fuzz.sh: $name for ${seconds}s (log: $logs/$name.log)"
  run_target "$name" &
  pids+=($!)
  names+=("$name")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

printf '\n%-18s %12s %10s %8s  %s\n' target executions exec/s corpus result
for name in "${names[@]}"; do
  log="$logs/$name.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  files=$(find "$corpus/$name" -type f | wc -l)
  result=ok
  found=$(find "$findings/$name" -type f -newer "$stamp" | head -3 | tr '\n' ' ')
  [ -z "$found" ] || result="FOUND: $found"
  grep -q "^==[0-9]*==ERROR\|^SUMMARY: \|deadly signal" "$log" && result="FAILED (see $log)"
  printf '%-18s %12s %10s %8s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "$files" "$result"
done
exit $status
