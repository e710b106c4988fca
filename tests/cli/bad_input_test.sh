#!/usr/bin/env bash
# End-to-end bad input: each scenario runs the tessera CLI the way a user
# would and checks that it answers with a clear message and the documented
# exit code, never a signal, a hang or a silent wrong result.
#   bad_input_test.sh <scenario> <tessera> <source-dir> <shared-dir> <some-plugin.so>
set -uo pipefail
scenario="$1"
tessera="$2"
source_dir="$3"
shared="$4"
real_plugin="$5"
config="$source_dir/configs/stories260k.toml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# expect <exit code> <regex> <command...>, with a 60 s bound (a hang fails).
source "$(dirname "$0")/cli_expect.sh"

case "$scenario" in
  output_closed)
    # `| head` closes the pipe: generation stops and tessera exits 0 (it used
    # to die by SIGPIPE, exit 141, silently).
    "$tessera" generate --config "$config" --max-tokens 200 --quiet | head -c 10 >/dev/null
    codes=("${PIPESTATUS[@]}")
    echo "exit codes: ${codes[*]}"
    [ "${codes[0]}" -eq 0 ] || { echo "FAIL: tessera exited ${codes[0]}"; exit 1; }
    ;;
  config_dev_zero)
    expect 1 "config file '/dev/zero' is a character device, not a regular file" \
      "$tessera" generate --config /dev/zero
    ;;
  config_fifo)
    mkfifo "$work/config.toml"
    expect 1 "is a FIFO \(named pipe\), not a regular file" \
      "$tessera" generate --config "$work/config.toml"
    ;;
  config_too_deep)
    { printf '[model]\npath = "stories260K.gguf"\n'
      for _ in $(seq 10000); do printf 'a.'; done
      printf 'b = 1\n'; } >"$work/deep.toml"
    expect 1 "deep.toml:3:1: tables, arrays or inline tables nest more than 32 levels" \
      "$tessera" generate --config "$work/deep.toml"
    ;;
  text_directory)
    expect 1 "text file '$work' is a directory, not a regular file" \
      "$tessera" perplexity --config "$config" --text "$work"
    ;;
  text_dev_zero)
    expect 1 "is a character device" "$tessera" perplexity --config "$config" --text /dev/zero
    ;;
  model_directory)
    expect 1 "model file '$work' is a directory, not a regular file" \
      "$tessera" generate --config "$config" --set "model.path=$work"
    ;;
  model_dev_zero)
    expect 1 "model file '/dev/zero' is a character device" \
      "$tessera" generate --config "$config" --set model.path=/dev/zero
    ;;
  threads_would_wrap)
    expect 1 "backend.threads: 4294967297 is out of range; allowed: \[1, 1024\]" \
      "$tessera" generate --config "$config" --set backend.threads=4294967297
    ;;
  top_k_would_wrap)
    expect 1 "sampling.top_k: 4294967297 is out of range" \
      "$tessera" generate --config "$config" --set sampling.top_k=4294967297
    ;;
  cache_too_large)
    expect 1 "cache.max_tokens = 2147483647 asks for .* MiB of KV cache.*lower cache.max_tokens to [0-9]+ or less" \
      "$tessera" generate --config "$config" --set cache.max_tokens=2147483647
    ;;
  cache_over_cap)
    expect 1 "more than cache.max_memory_mib = 1 MiB; lower cache.max_tokens to 819 or less" \
      "$tessera" generate --config "$config" --set cache.max_tokens=4096 --set cache.max_memory_mib=1
    ;;
  truncated_plugin)
    # A plugin cut short used to kill every command with SIGBUS inside dlopen.
    head -c 3000 "$real_plugin" >"$work/libtessera_cache_cut.so"
    echo "not a library" >"$work/libtessera_cache_text.so"
    expect 0 "libtessera_cache_cut.so is cut short.*libtessera_cache_text.so is not a shared library: it does not start with the ELF magic" \
      env TESSERA_PLUGIN_PATH="$work" "$tessera" plugins
    expect 1 "no cache plugin 'cut'.*was found but refused: plugin .* is cut short" \
      env TESSERA_PLUGIN_PATH="$work" "$tessera" generate --config "$config" --set cache.plugin=cut
    ;;
  nan_weights)
    # One NaN in layer 0's wq: a clear error naming the tensor (the sampler
    # used to abort; perplexity printed nll=nan and exited 0).
    cp "$shared/models/stories260K.bin" "$work/nan.bin"
    chmod u+w "$work/nan.bin"
    printf '\x00\x00\xc0\x7f' | dd of="$work/nan.bin" bs=1 seek=$((28 + (512 * 64 + 5 * 64) * 4)) conv=notrunc status=none
    local_config=(--config "$source_dir/configs/stories260k-llama2c.toml" --set "model.path=$work/nan.bin")
    expect 1 "computed a non-finite logit \(nan\).*tensor 'blk.0.attn_q.weight' holds 1 non-finite value" \
      "$tessera" generate "${local_config[@]}"
    expect 1 "non-finite logit" \
      "$tessera" perplexity "${local_config[@]}" --text "$shared/data/tinystories_train_head.txt" --max-tokens 16
    expect 1 "1 tensors hold NaN or infinity.*blk.0.attn_q.weight +1 non-finite \(first: element 0 = nan\)" \
      "$tessera" inspect "$work/nan.bin" --tokenizer "$shared/models/tok512.bin" --check-weights
    expect 0 "every value is finite" "$tessera" inspect "$shared/models/stories260K.gguf" --check-weights
    ;;
  *)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo PASS
