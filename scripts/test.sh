#!/usr/bin/env bash
# The whole test suite (README command 2; .ci/run calls it):
#   1. installs dependencies (scripts/setup.sh, idempotent),
#   2. builds Release into build/ and runs every ctest test there,
#   3. builds the format/graph code under ASan+UBSan (clang) into build-asan/, runs its tests and
#      fuzzes the .tflite reader for a bounded time seeded with the real models.
# Environment: EDGEOPT_FUZZ_SECONDS (default 45), EDGEOPT_SKIP_ASAN=1 to skip step 3 locally.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="$(nproc)"

"$ROOT/scripts/setup.sh"

echo "== Release build (build/)"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j "$JOBS"
echo "== Tests (build/)"
ctest --test-dir "$ROOT/build" --output-on-failure -j "$JOBS" --timeout 1500

if [ "${EDGEOPT_SKIP_ASAN:-0}" != 1 ]; then
  echo "== ASan+UBSan build of format/graph (build-asan/)"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$ROOT/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEDGEOPT_CORE_ONLY=ON -DEDGEOPT_SANITIZE=ON -DEDGEOPT_FUZZ=ON -DEDGEOPT_BUILD_BENCH=OFF >/dev/null
  cmake --build "$ROOT/build-asan" -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$ROOT/build-asan" --output-on-failure -j "$JOBS" --timeout 1500
  if [ -x "$ROOT/scripts/fuzz_reader.sh" ]; then
    "$ROOT/scripts/fuzz_reader.sh" "${EDGEOPT_FUZZ_SECONDS:-45}"
  fi
fi
echo "== All tests passed"
