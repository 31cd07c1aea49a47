#!/usr/bin/env bash
# Installs what edgeopt needs to build and test on Debian 12, and fetches the npm test
# dependencies (reference runtimes, MediaPipe models) into .cache/ (git-ignored).
# Idempotent: installed packages and fetched files are skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
mkdir -p "$CACHE"

APT_PACKAGES=(
  build-essential cmake ninja-build ccache clang libclang-rt-14-dev
  flatbuffers-compiler libflatbuffers-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libstb-dev libzstd-dev zlib1g-dev zstd gzip
  python3-numpy
)
# Node.js (and its npm) may come from Debian or from NodeSource; only install when missing.
if ! command -v node >/dev/null 2>&1; then APT_PACKAGES+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then APT_PACKAGES+=(npm); fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup: Debian packages already installed"
fi

# npm_fetch NAME@VERSION DEST: unpack a registry tarball into DEST (once).
npm_fetch() {
  local spec="$1" dest="$2"
  if [ -f "$dest/.fetched" ]; then return 0; fi
  echo "setup: fetching $spec from the npm registry"
  local tmp; tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
  mkdir -p "$dest"
  tar -xzf "$tmp"/*.tgz -C "$dest" --strip-components=1
  rm -rf "$tmp"
  touch "$dest/.fetched"
}

# Reference runtime: TFLite 2.9 C library shipped inside tfjs-tflite-node@0.0.2.
if [ ! -f "$CACHE/tflite29/lib/libtensorflowlite_c.so" ]; then
  npm_fetch tfjs-tflite-node@0.0.2 "$CACHE/npm/tfjs-tflite-node"
  mkdir -p "$CACHE/tflite29/lib" "$CACHE/tflite29/include"
  cp "$CACHE/npm/tfjs-tflite-node/cc_deps/linux_amd64/libtensorflowlite_c.so" "$CACHE/tflite29/lib/"
  cp -r "$CACHE/npm/tfjs-tflite-node/cc_deps/include/." "$CACHE/tflite29/include/"
fi
echo "setup: reference TFLite 2.9 C library at .cache/tflite29/lib/libtensorflowlite_c.so"

# Second oracle: LiteRT.js (recent LiteRT compiled to wasm), run under Node by
# tests/support/litertjs_runner.mjs for models TFLite 2.9 cannot run.
if [ ! -f "$CACHE/litertjs/node_modules/@litertjs/core/package.json" ]; then
  echo "setup: installing @litertjs/core@2.5.3 into .cache/litertjs"
  npm install --silent --prefix "$CACHE/litertjs" --no-audit --no-fund --ignore-scripts --save-exact \
    @litertjs/core@2.5.3 @litertjs/wasm-utils@2.5.3 >/dev/null
fi
echo "setup: LiteRT.js at .cache/litertjs"

if [ -x "$ROOT/scripts/setup_models.sh" ]; then
  "$ROOT/scripts/setup_models.sh"
fi
