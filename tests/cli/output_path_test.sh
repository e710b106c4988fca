#!/usr/bin/env bash
# Every command that writes a file, against every kind of path (issue 20):
# a symlink is followed to its target, a dangling or looping link and anything
# but a regular file (FIFO, device, directory) are refused before a byte is
# written, and a write that fails (file-size limit, read-only directory) or is
# killed by a signal leaves the old file as it was and no temporary behind.
#   output_path_test.sh <scenario> <tessera> <source-dir> <shared-dir>
# Exit 77: skipped (ctest SKIP_RETURN_CODE), with the reason printed.
set -uo pipefail
scenario="$1"
tessera="$2"
source_dir="$3"
shared="$4"
model="$shared/models/stories260K.gguf"
vocab="$shared/models/ggml-vocab-llama-spm.gguf"
work=$(mktemp -d)
cleanup() {
  chattr -i "$work/ro" 2>/dev/null
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# fail, and expect <exit code> <regex> <command...> with a 120 s bound.
EXPECT_TIMEOUT=120
source "$(dirname "$0")/cli_expect.sh"

# no_temporaries <dir>: nothing named *.tmp-* is left in it.
no_temporaries() {
  local left
  left=$(find "$1" -name '*.tmp-*' | head -5)
  [ -z "$left" ] || fail "temporary files left behind: $left"
}

# A small sweep file writing its CSV and PNGs (one point, the memory task).
write_sweep() {
  sed -n '/^\[model\]/,$p' "$source_dir/configs/stories260k.toml" >"$work/sweep.toml"
  cat >>"$work/sweep.toml" <<TOML
[sweep]
tasks = ["memory"]
text = "tinystories_train_head.txt"
max_tokens = 16
[sweep.axes]
"cache.plugin" = ["static"]
TOML
}

case "$scenario" in
  quantize_symlink)
    # Written to the link's target (as cp and llama-quantize do); the link stays.
    echo "old" >"$work/real.gguf"
    ln -s real.gguf "$work/link.gguf"
    expect 0 "link.gguf: 48 tensors" "$tessera" quantize "$model" "$work/link.gguf" q8_0
    [ -L "$work/link.gguf" ] || fail "the link was replaced"
    [ "$(head -c 4 "$work/real.gguf")" = "GGUF" ] || fail "the target was not written"
    no_temporaries "$work"
    ;;
  quantize_dangling_link)
    ln -s "$work/missing.gguf" "$work/dangling.gguf"
    expect 1 "dangling symbolic link \(its target '$work/missing.gguf' does not exist\)" \
      "$tessera" quantize "$model" "$work/dangling.gguf" q8_0
    [ -e "$work/missing.gguf" ] && fail "the dangling link's target was created"
    no_temporaries "$work"
    ;;
  quantize_link_loop)
    ln -s b.gguf "$work/a.gguf"
    ln -s a.gguf "$work/b.gguf"
    expect 1 "its symbolic links loop" "$tessera" quantize "$model" "$work/a.gguf" q8_0
    ;;
  quantize_fifo)
    mkfifo "$work/out.gguf"
    expect 1 "cannot write GGUF file '$work/out.gguf': it is a FIFO \(named pipe\), not a regular file" \
      "$tessera" quantize "$model" "$work/out.gguf" q8_0
    [ -p "$work/out.gguf" ] || fail "the FIFO was replaced"
    no_temporaries "$work"
    ;;
  quantize_directory)
    mkdir "$work/out.gguf"
    expect 1 "it is a directory, not a regular file" \
      "$tessera" quantize "$model" "$work/out.gguf" q8_0
    [ -d "$work/out.gguf" ] || fail "the directory was replaced"
    ;;
  quantize_into_its_input)
    ln -s "$model" "$work/same.gguf"
    expect 1 "OUT \($work/same.gguf\) is IN" "$tessera" quantize "$model" "$work/same.gguf" q8_0
    ;;
  make_model_char_device)
    # The report that opened issue 20: --out /dev/full became a regular file.
    # A device node made here (with /dev/full's numbers) keeps /dev out of it.
    if ! mknod "$work/full" c 1 7 2>/dev/null; then
      echo "SKIP: mknod is not permitted here; trying the real /dev/full read-only check"
      [ -c /dev/full ] || exit 77
      expect 1 "'/dev/full': it is a character device, not a regular file" \
        "$tessera" make-model --dim 64 --layers 1 --heads 2 --ffn 64 --dtype f32 \
        --vocab-from "$vocab" --out /dev/full
      [ -c /dev/full ] || fail "/dev/full is no longer a character device"
      echo PASS
      exit 0
    fi
    expect 1 "'$work/full': it is a character device, not a regular file" \
      "$tessera" make-model --dim 64 --layers 1 --heads 2 --ffn 64 --dtype f32 \
      --vocab-from "$vocab" --out "$work/full"
    [ -c "$work/full" ] || fail "the device node was replaced"
    no_temporaries "$work"
    ;;
  quantize_size_limit)
    # ulimit -f (RLIMIT_FSIZE) in 1 KiB blocks: the q8_0 file needs ~400 KiB.
    echo "the old file" >"$work/out.gguf"
    expect 1 "cannot write GGUF file '$work/out.gguf': writing: File too large; the file was left as it was" \
      bash -c "ulimit -f 64 && exec \"\$0\" quantize \"\$1\" \"\$2\" q8_0" \
      "$tessera" "$model" "$work/out.gguf"
    [ "$(cat "$work/out.gguf")" = "the old file" ] || fail "the old file changed"
    no_temporaries "$work"
    ;;
  quantize_read_only_dir)
    mkdir "$work/ro"
    echo "the old file" >"$work/ro/out.gguf"
    chmod 555 "$work/ro"
    # Root writes into a 0555 directory; the immutable attribute binds root too.
    if [ -w "$work/ro" ] && ! chattr +i "$work/ro" 2>/dev/null; then
      echo "SKIP: running as root on a file system without chattr +i: no directory is read-only here"
      exit 77
    fi
    expect 1 "cannot write GGUF file '$work/ro/out.gguf': creating a temporary file in '$work/ro': (Permission denied|Operation not permitted)" \
      "$tessera" quantize "$model" "$work/ro/out.gguf" q8_0
    [ "$(cat "$work/ro/out.gguf")" = "the old file" ] || fail "the old file changed"
    ;;
  make_model_interrupted)
    # SIGINT while the temporary is being written: the old file stays, the
    # temporary goes, and tessera dies by the signal (exit 130 from bash).
    echo "the old file" >"$work/out.gguf"
    # Job control on: without it bash starts background jobs with SIGINT ignored.
    set -m
    # About 140 MB (a 32000-token vocabulary in f32): long enough to catch.
    "$tessera" make-model --dim 512 --layers 2 --heads 8 --ffn 1024 --dtype f32 \
      --vocab-from "$vocab" --out "$work/out.gguf" >/dev/null 2>&1 &
    pid=$!
    seen=0
    for _ in $(seq 6000); do
      if compgen -G "$work/out.gguf.tmp-*" >/dev/null; then seen=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.01
    done
    [ "$seen" -eq 1 ] || { wait "$pid"; fail "never saw the temporary file (make-model ended first)"; }
    kill -INT "$pid"
    wait "$pid"
    code=$?
    echo "exit code: $code"
    [ "$code" -eq 130 ] || fail "expected death by SIGINT (130), got $code"
    [ "$(cat "$work/out.gguf")" = "the old file" ] || fail "the old file changed"
    no_temporaries "$work"
    ;;
  sweep_out_is_a_file)
    write_sweep
    echo "not a directory" >"$work/out"
    expect 1 "cannot write into sweep output directory '$work/out': it is a regular file, not a directory" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    ;;
  sweep_out_dangling_link)
    write_sweep
    ln -s "$work/gone" "$work/out"
    expect 1 "sweep output directory '$work/out': it is a dangling symbolic link" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    ;;
  sweep_results_fifo)
    # Refused before the first point is run, not after the whole sweep.
    write_sweep
    mkdir "$work/out"
    mkfifo "$work/out/results.csv"
    expect 1 "cannot write CSV file '$work/out/results.csv': it is a FIFO \(named pipe\), not a regular file" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    [ -p "$work/out/results.csv" ] || fail "the FIFO was replaced"
    ;;
  sweep_out_link_to_dir)
    # A link to a directory is followed; results land in the real directory.
    write_sweep
    mkdir "$work/real"
    ln -s real "$work/out"
    expect 0 "results.csv" "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    [ -f "$work/real/results.csv" ] || fail "results.csv is not in the link's target"
    [ -L "$work/out" ] || fail "the link was replaced"
    no_temporaries "$work"
    ;;
  *)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo PASS
