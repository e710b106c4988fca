#!/usr/bin/env bash
# One rule for finding files (core/io/file_lookup.h, docs/config.md "Where
# files are looked up"), end to end: the bare names of the --help examples
# work from the repository root, a file a config names is found beside the
# config (a sweep's projection file beside the sweep file), a --set from the
# current directory, and a name found nowhere lists every directory looked in.
#   file_lookup_test.sh <scenario> <tessera> <source-dir>
set -uo pipefail
scenario="$1"
tessera="$2"
source_dir=$(cd "$3" && pwd)
shared=$(cd "$source_dir/.." && pwd)/shared
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/cli_expect.sh"

# The search path ends in ../shared next to the repository root.
if [ ! -f "$shared/models/stories260K.gguf" ] || [ ! -f "$shared/data/tinystories_train_head.txt" ]; then
  echo "SKIP: no $shared/models/stories260K.gguf or $shared/data/tinystories_train_head.txt"
  exit 77
fi
# From the repository root, as a user runs the examples.
cd "$source_dir" || fail "cannot enter $source_dir"
unset TESSERA_MODEL_PATH

case "$scenario" in
  inspect_bare_name)
    expect 0 "file: +$shared/models/stories260K.gguf.*layers 5, heads 8" \
      "$tessera" inspect stories260K.gguf
    expect 0 "every value is finite" "$tessera" inspect stories260K.gguf --check-weights
    expect 0 "llama2c" "$tessera" inspect stories260K.bin --tokenizer tok512.bin
    ;;
  quantize_bare_name)
    expect 0 "48 tensors \(5 f16, 11 f32, 32 q8_0\)" \
      "$tessera" quantize stories260K.gguf "$work/q8.gguf" q8_0
    ;;
  tokenize_bare_name)
    expect 0 "^\[1, 403, 407, 261, 378\]" \
      "$tessera" tokenize --model stories260K.gguf --text "Once upon a time"
    printf 'Once upon a time' >"$work/prompt.txt"
    expect 0 "^\[1, 403, 407, 261, 378\]" \
      "$tessera" tokenize --tokenizer stories260K.gguf --file "$work/prompt.txt"
    ;;
  perplexity_shared_data)
    expect 0 "tokens=16 nll=[0-9.]+ ppl=" "$tessera" perplexity --config configs/stories260k.toml \
      --text tinystories_train_head.txt --max-tokens 16
    ;;
  not_found_lists_every_place)
    mkdir "$work/extra"
    expect 1 "model file 'no-such.gguf' not found; looked in: $source_dir, $work/extra, $source_dir/models, $shared/models
" env TESSERA_MODEL_PATH="$work/extra" "$tessera" inspect no-such.gguf
    expect 1 "text file 'no-such.txt' not found; looked in: $source_dir, $source_dir/models, $shared/models, $source_dir/data, $shared/data
" "$tessera" perplexity --config configs/stories260k.toml --text no-such.txt
    expect 1 "model file 'no-such.gguf' not found; looked in: $source_dir, $source_dir/models" \
      "$tessera" quantize no-such.gguf "$work/never.gguf" q8_0
    # A config's file: its own directory first.
    sed 's/^path = .*/path = "no-such.gguf"/' configs/stories260k.toml >"$work/c.toml"
    expect 1 "model file 'no-such.gguf' not found; looked in: $work, $source_dir/models, $shared/models" \
      "$tessera" generate --config "$work/c.toml"
    ;;
  config_and_set_bases)
    # A config's model beside the config, whatever the current directory.
    mkdir "$work/cfg"
    cp "$shared/models/stories260K.gguf" "$work/cfg/mine.gguf"
    sed 's/^path = .*/path = "mine.gguf"/' configs/stories260k.toml >"$work/cfg/c.toml"
    expect 0 "^Once upon a time" "$tessera" generate --config "$work/cfg/c.toml" --max-tokens 4 --quiet
    # A --set names a file from the current directory, not the config's.
    cd "$work/cfg" || fail "cd"
    expect 0 "^Once upon a time" "$tessera" generate --config "$source_dir/configs/stories260k.toml" \
      --set model.path=mine.gguf --max-tokens 4 --quiet
    cd "$work" || fail "cd"
    expect 1 "model file 'mine.gguf' not found; looked in: $work, " \
      "$tessera" generate --config "$work/cfg/c.toml" --set model.path=mine.gguf
    ;;
  sweep_projection_beside_sweep)
    # fit-projection writes where --out says; the sweep file names the
    # projection by file name, found beside the sweep file though the sweep
    # runs from the repository root.
    mkdir "$work/sweeps"
    expect 0 "wrote $work/sweeps/p.kvproj: 32 tokens" \
      "$tessera" fit-projection --config configs/tok512-ar-1m-restored.toml \
      --text tinystories_train_head.txt --out "$work/sweeps/p.kvproj" --max-tokens 32
    sed -n '/^\[model\]/,$p' configs/tok512-ar-1m-restored.toml |
      sed 's/^projection = .*/projection = "linear"\nprojection_file = "p.kvproj"/' \
        >"$work/base.toml"
    cp "$work/base.toml" "$work/sweeps/s.toml"
    cat >>"$work/sweeps/s.toml" <<'TOML'
[sweep]
tasks = ["perplexity"]
text = "tinystories_train_head.txt"
max_tokens = 32
[sweep.axes]
"cache.window" = [16]
TOML
    expect 0 "" "$tessera" sweep --config "$work/sweeps/s.toml" --out "$work/out"
    cat "$work/out/results.csv"
    grep -q ',ok\(,\|$\)' "$work/out/results.csv" || fail "the linear point did not run"
    # The same file named in a config elsewhere is looked for beside that config.
    mkdir "$work/other"
    cp "$work/base.toml" "$work/other/c.toml"
    expect 1 "decode.projection_file: projection file 'p.kvproj' not found; looked in: $work/other, " \
      "$tessera" generate --config "$work/other/c.toml" --max-tokens 4
    ;;
  *)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo PASS
