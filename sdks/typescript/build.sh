#!/usr/bin/env bash
# Builds the TypeScript SDK into OUT (default build/sdks/typescript): copies
# the package and the proto (the source of truth) there, generates the
# message and service types from the proto (proto-loader-gen-types) and
# compiles with tsc. Packages come from $TESSERA_NODE_MODULES when set, else
# sdks/typescript/node_modules when present (`npm install` there), else the
# project's pinned install (scripts/install-references.sh: .deps/npm).
#   sdks/typescript/build.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/sdks/typescript}
modules=${TESSERA_NODE_MODULES:-$here/node_modules}
[ -d "$modules" ] || modules=${TESSERA_DEPS:-$root/.deps}/npm/node_modules
for tool in proto-loader-gen-types tsc; do
  [ -x "$modules/.bin/$tool" ] || {
    echo "build.sh: no $tool in $modules: run scripts/install-references.sh (or npm ci in $here)" >&2
    exit 1
  }
done
mkdir -p "$out"
rm -rf "$out/src" "$out/examples" "$out/test" "$out/dist" "$out/proto"
cp -r "$here/package.json" "$here/tsconfig.json" "$here/src" "$here/examples" "$here/test" "$out/"
mkdir -p "$out/proto/tessera/v1"
cp "$root/proto/tessera/v1/runtime.proto" "$out/proto/tessera/v1/"
ln -sfn "$modules" "$out/node_modules"
# The loader options in src/client.ts must match these.
"$modules/.bin/proto-loader-gen-types" tessera/v1/runtime.proto --longs=Number --enums=String \
  --defaults --oneofs --grpcLib=@grpc/grpc-js --outDir="$out/src/generated" \
  --includeDirs="$out/proto" >/dev/null
(cd "$out" && "$modules/.bin/tsc" -p tsconfig.json)
echo "$out"
