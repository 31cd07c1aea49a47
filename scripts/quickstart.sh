#!/usr/bin/env bash
# First run on a fresh Debian 12 machine (README command 1):
#   1. installs dependencies (scripts/setup.sh, idempotent),
#   2. configures and builds Release into build/ (the CLI and the example model),
#   3. runs edgeopt on the example model build/examples/tiny_cnn.tflite (a small seeded float CNN
#      written by tools/make_example), and on a real model when ../shared/models is present.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="$(nproc)"

"$ROOT/scripts/setup.sh"

echo "== Release build (build/)"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j "$JOBS" --target edgeopt_cli edgeopt_examples

# Paths relative to the repository root (the current folder), as a user would type them.
EXAMPLE="build/examples/tiny_cnn.tflite"
echo
echo "== build/edgeopt inspect $EXAMPLE"
build/edgeopt inspect "$EXAMPLE"

REAL="../shared/models/mobilenet_v2_1.0_224_ptq_int8.tflite"
if [ -f "$REAL" ]; then
  echo
  echo "== build/edgeopt inspect $REAL --ops 8"
  build/edgeopt inspect "$REAL" --ops 8
fi

echo
echo "Next: build/edgeopt --help, and ./scripts/test.sh to run the whole test suite."
