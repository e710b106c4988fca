# Sourced by the CLI test scripts: a failure that says why, and a command run
# with a time bound whose exit code and output are checked.

# fail <message...>: prints FAIL and the message, exits 1.
fail() {
  echo "FAIL: $*"
  exit 1
}

# expect <exit code> <regex> <command...>: runs the command with stdout and
# stderr together, bounded by EXPECT_TIMEOUT seconds (default 60; a hang
# fails), prints what it said, and checks the exit code and that the output
# matches the extended regex (newlines included).
expect() {
  local want="$1" pattern="$2"
  shift 2
  local out code
  out=$(timeout "${EXPECT_TIMEOUT:-60}" "$@" 2>&1)
  code=$?
  printf 'exit code: %s\n%s\n' "$code" "$out"
  [ "$code" -eq "$want" ] || fail "expected exit code $want, got $code"
  grep -Ezq -- "$pattern" <<<"$out" || fail "output does not match: $pattern"
}
