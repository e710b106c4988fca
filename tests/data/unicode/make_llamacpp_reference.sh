#!/usr/bin/env bash
# Writes llamacpp_reference.json: llama.cpp's unicode_cpts_from_utf8 on the bad UTF-8 of
# unicode_reference.json, and llama.cpp's unicode_regex_split with each preset of
# llamacpp_patterns.json on its corpus. Compiles llama.cpp's src/unicode*.cpp from a
# llama.cpp git directory (default: the ngxson/llama.cpp mirror) in a temporary folder.
# Usage: tests/data/unicode/make_llamacpp_reference.sh [LLAMA_CPP_GIT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="${1:-/work/.mirror/ngxson+llama.cpp/repo}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for f in unicode.cpp unicode.h unicode-data.cpp unicode-data.h; do
  git -C "$repo" show "HEAD:src/$f" > "$work/$f"
done
commit="$(git -C "$repo" rev-parse HEAD)"
g++ -std=c++17 -O2 -I"$work" "$here/llamacpp_driver.cpp" "$work/unicode.cpp" \
    "$work/unicode-data.cpp" -o "$work/driver"
"$work/driver" "$here/unicode_reference.json" "$here/llamacpp_patterns.json" > "$work/out.json"
/usr/bin/python3 - "$work/out.json" "$here/llamacpp_reference.json" "$commit" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
data = {"generator": "tests/data/unicode/make_llamacpp_reference.sh",
        "llamacpp_commit": sys.argv[3], **data}
json.dump(data, open(sys.argv[2], "w"), ensure_ascii=False, indent=1)
PY
echo "wrote $here/llamacpp_reference.json (llama.cpp $commit)"
