#!/usr/bin/env bash
# tessera sweep end to end: a tiny grid on stories260K, checked through the
# CSV it writes (rows, columns, numbers that must hold) and the PNGs (real
# PNG files); and the messages for sweep files that cannot run.
#   sweep_test.sh <scenario> <tessera> <source-dir>
set -uo pipefail
scenario="$1"
tessera="$2"
source_dir="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, and expect <exit code> <regex> <command...> with a 120 s bound.
EXPECT_TIMEOUT=120
source "$(dirname "$0")/cli_expect.sh"

# A sweep file: the stories260K config with [sweep] and the given axes.
write_sweep() {
  sed -n '/^\[model\]/,$p' "$source_dir/configs/stories260k.toml" >"$work/sweep.toml"
  cat >>"$work/sweep.toml" <<TOML
[sweep]
tasks = $1
text = "tinystories_train_head.txt"
max_tokens = 64
recall_length = 8
recall_filler = 8
recall_trials = 2
speed_tokens = 4
[sweep.axes]
$2
TOML
}

# column <csv> <name>: the column's values, one per line, in row order.
column() {
  tr -d '\r' <"$1" | awk -F, -v name="$2" \
    'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } c { print $c }'
}

# run_grid <rows> <column...>: runs $work/sweep.toml, prints its CSV (in $csv)
# and checks it has a header, <rows> rows, every column named and every point
# finished.
run_grid() {
  local rows="$1" header name
  shift
  timeout 300 "$tessera" sweep --config "$work/sweep.toml" --out "$work/out" >"$work/stdout" \
    2>"$work/stderr" || { cat "$work/stderr"; fail "tessera sweep failed"; }
  csv="$work/out/results.csv"
  cat "$csv"
  [ "$(tr -d '\r' <"$csv" | wc -l)" -eq $((rows + 1)) ] || fail "expected a header and $rows rows"
  header=$(head -1 "$csv" | tr -d '\r')
  for name in "$@"; do
    grep -q "\(^\|,\)$name\(,\|$\)" <<<"$header" || fail "no column $name"
  done
  [ "$(column "$csv" status | sort -u)" = "ok" ] || fail "a point did not finish"
}


case "$scenario" in
  grid)
    # A sink + window store whose window covers the whole text keeps every
    # token: its logits must equal the full cache's (KL 0, top-1 agreement 1).
    write_sweep '["perplexity", "fidelity", "recall", "memory", "speed"]' \
      "\"cache.plugin\" = [\"sink_window\"]
\"cache.window\" = [8, 300]
\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"int8\" }]"
    run_grid 4 point cache.plugin cache.window cache.codec status bits_per_vector nll ppl kl top1 \
      k_rel_mse v_rel_mse recall recall_std recall_control recall_control_std recall_gain \
      recall_gain_std kv_bytes_live kv_bytes_per_token \
      prefill_tokens_per_s decode_tokens_per_s
    [ "$(column "$csv" cache.window | tr '\n' ' ')" = "8 8 300 300 " ] || fail "grid order"
    [ "$(column "$csv" cache.codec | tr '\n' ' ')" = "identity int8 identity int8 " ] ||
      fail "codec labels"
    paste -d' ' <(column "$csv" cache.window) <(column "$csv" cache.codec) <(column "$csv" kl) \
      <(column "$csv" top1) <(column "$csv" kv_bytes_per_token) >"$work/rows"
    awk '$1 == 300 && $2 == "identity" { ok = ($3 == 0 && $4 == 1) } END { exit !ok }' "$work/rows" ||
      fail "window 300 with identity must equal the full cache"
    awk '$1 == 8 && $2 == "identity" { ok = ($3 > 0) } END { exit !ok }' "$work/rows" ||
      fail "window 8 must differ from the full cache"
    awk '$2 == "int8" { ok = ($3 > 0) } END { exit !ok }' "$work/rows" || fail "int8 cannot be exact"
    awk '$1 == 300 { b[$2] = $5 } END { exit !(b["int8"] < b["identity"] / 2) }' "$work/rows" ||
      fail "int8 must take less than half the bytes of identity"
    for metric in ppl kl top1 recall kv_bytes_per_token decode_tokens_per_s; do
      png="$work/out/$metric.png"
      [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
        fail "$png is not a PNG"
      grep -q "$png" "$work/stdout" || fail "$png is not listed on stdout"
    done
    [ ! -e "$work/out/k_rel_mse_layer0.png" ] || fail "per-layer metrics get no plot"
    [ ! -e "$work/out/recall_std.png" ] || fail "a spread is drawn as error bars, not a plot"
    # Two trials: a spread (the sample standard deviation) that is a number >= 0.
    column "$csv" recall_std | awk '!($1 >= 0) { bad = 1 } END { exit bad }' ||
      fail "recall_std is not a standard deviation"
    ;;
  speculative)
    # Every proposer on tok512-ar-1m with stories260K as the draft model (dlm
    # with its block-diffusion tok512-sdar-1m), a lossless and a lossy codec:
    # greedy speculative decoding must emit the baseline's tokens at every
    # point, and the real draft models must be accepted often.
    sed -n '/^\[model\]/,/^\[decode\]/p' "$source_dir/sweeps/speculative.toml" >"$work/sweep.toml"
    cat >>"$work/sweep.toml" <<TOML
draft_model = "stories260K.gguf"
draft_layers = 3
tree_drafter = "ar_draft"
tree_tokens = 8
[sampling]
temperature = 0.0
[sweep]
tasks = ["speculative"]
text = "tinystories_train_head.txt"
max_tokens = 64
speed_tokens = 16
[sweep.axes]
"decode" = [{ proposer = "ngram" }, { proposer = "self_draft" }, { proposer = "ar_draft" },
            { proposer = "tree" }, { proposer = "dlm", draft_model = "tok512-sdar-1m.gguf" }]
"cache.codec" = [{ plugin = "identity" }, { plugin = "int8" }]
"decode.draft_tokens" = [3]
TOML
    run_grid 10 acceptance accepted_per_step tokens_per_step draft_forwards_per_step speedup identical
    [ "$(column "$csv" identical | sort -u)" = "1" ] || fail "a point's tokens differ from plain decoding"
    paste -d' ' <(column "$csv" decode | cut -d' ' -f1) <(column "$csv" acceptance) \
      <(column "$csv" tokens_per_step) <(column "$csv" draft_forwards_per_step) >"$work/rows"
    awk '$3 < 1 { bad = 1 } END { exit bad }' "$work/rows" || fail "fewer than one token per step"
    awk '$1 == "ar_draft" && $2 < 0.3 { bad = 1 } END { exit bad }' "$work/rows" ||
      fail "stories260K drafts for tok512-ar-1m: its acceptance cannot be this low"
    awk '$1 == "dlm" && $2 < 0.25 { bad = 1 } END { exit bad }' "$work/rows" ||
      fail "tok512-sdar-1m drafts for tok512-ar-1m: its acceptance cannot be this low"
    awk '$1 == "ngram" && $4 != 0 { bad = 1 } END { exit bad }' "$work/rows" ||
      fail "ngram runs no draft forward"
    [ -s "$work/out/speedup.png" ] || fail "no speedup plot"
    ;;
  set_axis)
    # --set sweep.axes.KEY=... cuts the file's grid down without copying the file.
    write_sweep '["memory"]' '"cache.plugin" = ["sink_window"]
"cache.window" = [8, 16, 32, 300]'
    expect 0 "tessera sweep: 2 points" "$tessera" sweep --config "$work/sweep.toml" \
      --out "$work/out" --set sweep.axes.cache.window=8,300
    [ "$(column "$work/out/results.csv" cache.window | tr '\n' ' ')" = "8 300 " ] ||
      fail "the axis does not have the values given"
    expect 1 "the sweep file has no axis \"cache.windw\"; did you mean 'cache.window'\? its axes: cache.plugin, cache.window" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out" --set sweep.axes.cache.windw=8
    ;;
  skipped)
    # cache.window means nothing to the static store: the point says so.
    write_sweep '["perplexity"]' '"cache.window" = [8]'
    expect 0 "point 1 \(cache.window = 8\): skipped: cache.window is not an option of cache plugin 'static'" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    grep -q "skipped: cache.window" "$work/out/results.csv" || fail "the CSV row says nothing"
    ;;
  unknown_task)
    write_sweep '["perplexty"]' '"cache.max_tokens" = [128]'
    expect 1 "unknown task 'perplexty'; did you mean 'perplexity'" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    ;;
  no_sweep_section)
    expect 1 "stories260k.toml has no \[sweep\] section" \
      "$tessera" sweep --config "$source_dir/configs/stories260k.toml" --out "$work/out"
    ;;
  bad_set)
    write_sweep '["perplexity"]' '"cache.max_tokens" = [128]'
    expect 1 "--set sweep.max_tokens=abc: expected an integer" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out" --set sweep.max_tokens=abc
    ;;
  axis_not_a_key)
    write_sweep '["perplexity"]' '"window" = [8, 16]'
    expect 1 "axis \"window\": expected section.key" \
      "$tessera" sweep --config "$work/sweep.toml" --out "$work/out"
    ;;
  *)
    fail "unknown scenario $scenario"
    ;;
esac
echo PASS
