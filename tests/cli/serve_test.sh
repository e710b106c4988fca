#!/usr/bin/env bash
# tessera serve as a process: it says where it listens, answers the official
# openai client and promtool, and stops cleanly on SIGTERM, a generation in
# flight ending with its finish chunk, nothing half-written; the SDKs end to
# end; addresses it cannot take.
#   serve_test.sh <scenario> <tessera> <source-dir> <references-dir>
# Exit 77: skipped (ctest SKIP_RETURN_CODE), with the reason printed.
set -uo pipefail
scenario="$1"
tessera="$2"
source_dir="$3"
references="$4"
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/cli_expect.sh"

# start_server: tessera serve on a free port; sets server_pid, base and,
# with --grpc, grpc_port.
start_server() {
  "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http 127.0.0.1:0 \
    "$@" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 1 300); do
    port=$(grep -Eo 'HTTP on http://127\.0\.0\.1:[0-9]+' "$work/server.log" | grep -Eo '[0-9]+$')
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log"; fail "serve exited early"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$work/server.log"; fail "serve never said where it listens"; }
  base="http://127.0.0.1:$port"
  grpc_port=$(grep -Eo 'gRPC on 127\.0\.0\.1:[0-9]+' "$work/server.log" | grep -Eo '[0-9]+$')
}

# stop_server: SIGTERM, then the process must exit 0 within 30 s saying so.
stop_server() {
  kill -TERM "$server_pid"
  for _ in $(seq 1 300); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$server_pid" 2>/dev/null && fail "serve still running 30 s after SIGTERM"
  wait "$server_pid"
  local code=$?
  server_pid=
  cat "$work/server.log"
  [ "$code" -eq 0 ] || fail "serve exited $code after SIGTERM"
  grep -q "SIGTERM: stopping" "$work/server.log" || fail "no stopping message"
  grep -q "tessera serve: stopped" "$work/server.log" || fail "no stopped message"
}

# start_python_sdk_server: the server with gRPC beside HTTP, the generated
# stubs on PYTHONPATH. Skips where Debian's grpcio is missing.
start_python_sdk_server() {
  /usr/bin/python3 -c "import grpc, google.protobuf" 2>/dev/null ||
    { echo "SKIP: no python3-grpcio / python3-protobuf"; exit 77; }
  local stubs
  stubs="$(dirname "$(dirname "$tessera")")/sdks/python"
  [ -f "$stubs/tessera/v1/runtime_pb2_grpc.py" ] || fail "no generated stubs in $stubs"
  start_server --grpc 127.0.0.1:0
  export PYTHONPATH="$stubs:$source_dir/sdks/python"
}

# check_example_chat: an SDK's example chat ($work/chat.txt) kept the first
# turn's K/V for the second.
check_example_chat() {
  cat "$work/chat.txt"
  grep -Eq '^\[turn 2: [0-9]+ tokens in the session, [1-9][0-9]* kept in the cache' "$work/chat.txt" ||
    fail "the example's second turn kept nothing"
}

case "$scenario" in
  openai_client)
    [ -d "$references/openai" ] || { echo "SKIP: no $references/openai (scripts/install-references.sh)"; exit 77; }
    command -v node >/dev/null || { echo "SKIP: no node"; exit 77; }
    start_server
    timeout 120 node "$(dirname "$0")/serve_openai_client.mjs" "$references" "$base/v1" ||
      fail "the openai client's checks failed"
    stop_server
    ;;
  promtool)
    command -v promtool >/dev/null || { echo "SKIP: no promtool (Debian's prometheus package)"; exit 77; }
    start_server
    curl -sf "$base/v1/completions" -d '{"prompt": "Once", "max_tokens": 5}' >/dev/null ||
      fail "completion failed"
    curl -sf "$base/metrics" >"$work/metrics" || fail "GET /metrics failed"
    cat "$work/metrics"
    promtool check metrics <"$work/metrics" || fail "promtool rejects /metrics"
    grep -q '^tessera_tokens_out_total 5$' "$work/metrics" || fail "tokens out not counted"
    stop_server
    ;;
  sigterm_mid_stream)
    # A sink_window cache never fills: the generation runs until SIGTERM.
    # Its stream ends with an error event, never with a finish_reason or
    # [DONE] that would read as a complete answer; a whole (unstreamed)
    # request cut the same way gets 503 with the error object.
    start_server --set cache.plugin=sink_window --set cache.window=64
    curl -sN "$base/v1/completions" \
      -d '{"prompt": "Once upon a time", "max_tokens": 100000, "stream": true}' >"$work/stream" &
    curl_pid=$!
    curl -s -o "$work/whole" -w '%{http_code}' "$base/v1/completions" \
      -d '{"prompt": "Once upon a time", "max_tokens": 100000}' >"$work/whole_status" &
    whole_pid=$!
    for _ in $(seq 1 100); do
      [ -s "$work/stream" ] && break
      sleep 0.05
    done
    sleep 0.3
    stop_server
    wait "$curl_pid" "$whole_pid"
    tail -c 400 "$work/stream"
    echo
    cat "$work/whole"
    echo
    tail -n 2 "$work/stream" | grep -q '"error"' || fail "the cut stream does not end with an error"
    grep -q 'shutting down' "$work/stream" || fail "the error does not say the server stopped"
    ! grep -q '\[DONE\]' "$work/stream" || fail "a cut stream ends with [DONE]"
    ! grep -Eq '"finish_reason":"(stop|length)"' "$work/stream" ||
      fail "a cut stream has a finish_reason"
    [ "$(cat "$work/whole_status")" = 503 ] || fail "a cut whole answer is not 503"
    grep -q '"error"' "$work/whole" || fail "the 503 carries no error object"
    ;;
  grpc_listens)
    # Both faces at once; the gRPC one says where it listens and stops with the rest.
    start_server --grpc 127.0.0.1:0
    grep -Eq 'gRPC on 127\.0\.0\.1:[0-9]+ \(tessera\.v1\.Runtime\)' "$work/server.log" ||
      fail "serve does not say where gRPC listens"
    curl -sf "$base/health" >/dev/null || fail "HTTP is not answering beside gRPC"
    stop_server
    ;;
  python_sdk)
    start_python_sdk_server
    timeout 120 /usr/bin/python3 "$source_dir/tests/sdk/python_sdk_test.py" "127.0.0.1:$grpc_port" ||
      fail "the Python SDK's tests failed"
    # The example chat: the history grows, nothing is fed twice.
    timeout 60 /usr/bin/python3 "$source_dir/sdks/python/examples/chat.py" "127.0.0.1:$grpc_port" \
      "Hello" "Tell me more" >"$work/chat.txt" || fail "the example chat failed"
    check_example_chat
    stop_server
    ;;
  typescript_sdk)
    command -v node >/dev/null || { echo "SKIP: no node"; exit 77; }
    [ -d "$references/@grpc/grpc-js" ] ||
      { echo "SKIP: no $references/@grpc/grpc-js (scripts/install-references.sh)"; exit 77; }
    TESSERA_NODE_MODULES="$references" "$source_dir/sdks/typescript/build.sh" "$work/ts" >/dev/null ||
      fail "the TypeScript SDK does not build"
    start_server --grpc 127.0.0.1:0
    timeout 120 node "$work/ts/dist/test/sdk.test.js" "127.0.0.1:$grpc_port" ||
      fail "the TypeScript SDK's tests failed"
    timeout 60 node "$work/ts/dist/examples/chat.js" "127.0.0.1:$grpc_port" "Hello" "Tell me more" \
      >"$work/chat.txt" || fail "the example chat failed"
    check_example_chat
    stop_server
    ;;
  python_load)
    # 64 sessions x 6 turns at once, each equal to itself alone, none lost.
    start_python_sdk_server
    timeout 150 /usr/bin/python3 "$source_dir/tests/sdk/python_load_test.py" "127.0.0.1:$grpc_port" \
      64 6 32 || fail "the 64-session load through the Python SDK failed"
    curl -sf "$base/metrics" >"$work/metrics" || fail "GET /metrics failed"
    grep -q '^tessera_invariant_violations_total{kind="[a-z_]*"} [1-9]' "$work/metrics" &&
      fail "invariant violations counted"
    grep '^tessera_sessions_evicted_total{' "$work/metrics" | grep -qv ' 0$' &&
      fail "sessions were evicted"
    stop_server
    ;;
  bad_address)
    # A port another server already listens on is refused, HTTP and gRPC.
    start_server --grpc 127.0.0.1:0
    expect 1 "serve: error: cannot listen on 127.0.0.1:$port .*in use" \
      "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http "127.0.0.1:$port"
    expect 1 "serve: error: cannot listen for gRPC on 127.0.0.1:$grpc_port .*in use" \
      "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http 127.0.0.1:0 \
      --grpc "127.0.0.1:$grpc_port"
    stop_server
    # 192.0.2.1 (TEST-NET-1) is no address of this machine.
    expect 1 "serve: error: cannot listen on 192.0.2.1:8080 .*choose another with --http" \
      "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http 192.0.2.1:8080
    expect 1 "serve: error: --grpc 'nowhere' is not HOST:PORT" \
      "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http 127.0.0.1:0 \
      --grpc nowhere
    expect 1 "serve: error: --http 'nowhere' is not HOST:PORT" \
      "$tessera" serve --config "$source_dir/configs/serve-stories260k.toml" --http nowhere
    ;;
  *)
    fail "unknown scenario $scenario"
    ;;
esac
echo "PASS: $scenario"
