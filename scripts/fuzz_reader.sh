#!/usr/bin/env bash
# Fuzzes the .tflite reader (tests/fuzz/reader_fuzz.cc) under ASan+UBSan for a bounded time.
#   scripts/fuzz_reader.sh [SECONDS]          (default 45; scripts/test.sh calls it)
# Builds nothing: expects build-asan/ configured with -DEDGEOPT_FUZZ=ON and built (scripts/test.sh
# does that). Seeds: the real models in ../shared/models (if present) plus generated models
# (edgeopt_fuzz_seeds). New inputs accumulate in build-asan/fuzz/corpus (git-ignored), so local
# runs keep what earlier runs found. Exits non-zero on any crash, leak, timeout or OOM and prints
# the reproducer; reproduce with: build-asan/tests/edgeopt_reader_fuzz REPRODUCER
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECS="${1:-45}"
BUILD="${EDGEOPT_ASAN_BUILD:-$ROOT/build-asan}"
FUZZER="$BUILD/tests/edgeopt_reader_fuzz"
SEEDER="$BUILD/tests/edgeopt_fuzz_seeds"
for exe in "$FUZZER" "$SEEDER"; do
  if [ ! -x "$exe" ]; then
    echo "fuzz_reader: $exe is missing; build $BUILD with -DEDGEOPT_FUZZ=ON first (scripts/test.sh does)" >&2
    exit 1
  fi
done

WORK="$BUILD/fuzz"
CORPUS="$WORK/corpus"      # grows with what the fuzzer finds
SEEDS="$WORK/seeds"        # rewritten every run
ARTIFACTS="$WORK/artifacts"
rm -rf "$SEEDS" "$ARTIFACTS"
mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"

# Keep the accumulated corpus from slowing every run down: above the cap, drop its largest inputs.
cap_mb="${EDGEOPT_FUZZ_CORPUS_MB:-256}"
while [ "$(du -sm "$CORPUS" | cut -f1)" -gt "$cap_mb" ]; do
  biggest=$(ls -S "$CORPUS" | head -20)
  [ -z "$biggest" ] && break
  (cd "$CORPUS" && rm -f $biggest)
done

SHARED_MODELS="${EDGEOPT_SHARED_DIR:-$ROOT/../shared}/models"
if compgen -G "$SHARED_MODELS/*.tflite" >/dev/null; then
  cp "$SHARED_MODELS"/*.tflite "$SEEDS/"
  echo "fuzz_reader: seeded with $(ls "$SHARED_MODELS"/*.tflite | wc -l) real models from $SHARED_MODELS"
else
  echo "fuzz_reader: no real models at $SHARED_MODELS (absent); seeding with generated models only"
fi
"$SEEDER" "$SEEDS"

# Room for the largest seed plus growth, between 1 MB and 8 MB.
largest=$(find "$SEEDS" "$CORPUS" -type f -printf '%s\n' | sort -n | tail -1)
max_len=$(( largest + largest / 4 ))
(( max_len < 1048576 )) && max_len=1048576
(( max_len > 8388608 )) && max_len=8388608

echo "fuzz_reader: fuzzing for ${SECS}s (max_len $max_len bytes)"
log="$WORK/fuzz.log"
set +e
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
  "$FUZZER" -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
  -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" \
  "$CORPUS" "$SEEDS" >"$log" 2>&1
rc=$?
set -e

grep -E "^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::peak_rss_mb|^Done " "$log" || true
repro=$(find "$ARTIFACTS" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -5)
if [ "$rc" != 0 ] || [ -n "$repro" ]; then
  echo "fuzz_reader: FAILED (libFuzzer exit code $rc); last lines of $log:" >&2
  grep -v -E "^#[0-9]+ +(NEW|REDUCE|pulse)" "$log" | tail -40 >&2
  for r in $repro; do
    echo "fuzz_reader: reproducer: $r" >&2
    echo "fuzz_reader:   reproduce with: $FUZZER $r" >&2
  done
  exit 1
fi
echo "fuzz_reader: no crash, leak, timeout or OOM in ${SECS}s"
