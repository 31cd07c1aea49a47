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
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fetch_packaged_models() {
if [ -f "$DEST/.fetched" ]; then
  echo "setup: MediaPipe models already in .cache/models/mediapipe"
  return 0
fi
mkdir -p "$DEST"
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
}

# The face mesh models of @mediapipe/face_mesh are packed into one .data file; its loader script
# lists each file's byte range ("filename": ".../x.tflite", "start": S, "end": E). Extracted into
# .cache/mediapipe_extra/, outside .cache/models/: face_landmark_with_attention uses MediaPipe
# custom ops no reference runtime has, so it must stay out of the real-model conformance sweep
# (which walks .cache/models). Used by src/kernels/mediapipe/mediapipe_test.cc.
FACE_MESH=@mediapipe/face_mesh@0.4.1657299874
EXTRA="$ROOT/.cache/mediapipe_extra"
fetch_face_mesh() {
if [ -f "$EXTRA/.fetched" ]; then
  echo "setup: face mesh models already in .cache/mediapipe_extra"
  return 0
fi
mkdir -p "$EXTRA" "$tmp/fm"
echo "setup: fetching $FACE_MESH"
(cd "$tmp/fm" && npm pack --silent "$FACE_MESH" >/dev/null)
tar -xzf "$tmp"/fm/*.tgz -C "$tmp/fm"
local pkg="$tmp/fm/package"
node - "$pkg/face_mesh_solution_packed_assets_loader.js" "$pkg/face_mesh_solution_packed_assets.data" "$EXTRA" <<'JS'
const fs = require('fs');
const [loader, data, dest] = process.argv.slice(2);
const text = fs.readFileSync(loader, 'utf8');
const bytes = fs.readFileSync(data);
const re = /"filename"\s*:\s*"\/?([^"]+\.tflite)"\s*,\s*"start"\s*:\s*(\d+)\s*,\s*"end"\s*:\s*(\d+)/g;
let n = 0;
for (let m; (m = re.exec(text)) !== null; ) {
  const [name, start, end] = [m[1].split('/').pop(), Number(m[2]), Number(m[3])];
  if (!(start < end && end <= bytes.length)) throw new Error(`bad range for ${name}: ${start}..${end}`);
  fs.writeFileSync(`${dest}/${name}`, bytes.subarray(start, end), { mode: 0o644 });
  console.log(`setup: ${name} = bytes ${start}..${end} of ${data.split('/').pop()}`);
  ++n;
}
if (n === 0) throw new Error('no .tflite ranges found in ' + loader);
JS
touch "$EXTRA/.fetched"
}

fetch_packaged_models
fetch_face_mesh
