#!/usr/bin/env bash
# Fetches the real float/float16 .tflite models shipped in the npm @mediapipe/* packages into
# .cache/models/mediapipe/ (git-ignored). Tests and benchmarks pick them up beside ../shared.
# Idempotent; pinned versions so every machine tests the same files.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.cache/models/mediapipe"
PACKAGES=(
  @mediapipe/face_detection@0.4.1657300184
  @mediapipe/hands@0.4.1675469240
  @mediapipe/pose@0.5.1675469404
  @mediapipe/selfie_segmentation@0.1.1675465747
  @mediapipe/objectron@0.4.1675468480
)
if [ -f "$DEST/.fetched" ]; then
  echo "setup: MediaPipe models already in .cache/models/mediapipe"
  exit 0
fi
mkdir -p "$DEST"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for spec in "${PACKAGES[@]}"; do
  echo "setup: fetching $spec"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
done
for tgz in "$tmp"/*.tgz; do
  mkdir -p "$tmp/x"
  tar -xzf "$tgz" -C "$tmp/x"
  find "$tmp/x" -name '*.tflite' -exec cp {} "$DEST/" \;
  rm -rf "$tmp/x"
done
chmod 644 "$DEST"/*.tflite
touch "$DEST/.fetched"
echo "setup: $(ls "$DEST"/*.tflite | wc -l) MediaPipe models in .cache/models/mediapipe"
