#!/bin/bash
# Runs the libFuzzer targets of tests/fuzz, each for SECONDS (default 600; `make fuzz` runs 60),
# FUZZ_JOBS of them at a time (default: the number of cores). Builds them first (make fuzz-build:
# clang, ASan + UBSan, in build-asan: the targets share the ASan build of make asan).
#
#   scripts/fuzz.sh [-s SECONDS] [TARGET...]     targets: request batch segment json_record
#
# Seeds: tests/fuzz/corpus/<target>/ (made here), request frames made from tests/data/protocol
# (tests/fuzz/make_seeds.py), the Kafka-written logs and client vectors of ../shared/fixtures
# (read in place), and, when build/silt exists, logs it writes with every codec. New inputs the
# fuzzer finds accumulate in build-asan/fuzz-corpus/<target>/; a crashing input is saved as
# build-asan/fuzz-artifacts/<target>-crash-*, and reproduces with `build-asan/tests/fuzz/<target>_fuzz FILE`.
# Exit status 1 when any target found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_EACH=600
while getopts "s:" opt; do
  case "$opt" in
    s) SECONDS_EACH=$OPTARG ;;
    *) echo "usage: scripts/fuzz.sh [-s SECONDS] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(request batch segment json_record)
FUZZ_BUILD=${FUZZ_BUILD:-build-asan}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
FIX="$ROOT/../shared/fixtures"

make --no-print-directory fuzz-build FUZZ_BUILD="$FUZZ_BUILD"

seeds="$FUZZ_BUILD/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds" "$FUZZ_BUILD/fuzz-artifacts"
/usr/bin/python3 tests/fuzz/make_seeds.py "$ROOT" "$seeds"

# Logs in every codec, written by silt itself, for the batch and segment targets; their records
# printed as JSON lines for the JSON reader.
if [ -x build/silt ]; then
  data="$seeds/data"
  for codec in none gzip snappy lz4 zstd; do
    { seq 1 20 | sed "s/^/k\\t$codec-/"; printf 'bin\t\xff\xfe\x00\n'; } |
      build/silt produce -d "$data" -t "s-$codec" -z "$codec" -K $'\t' --batch-size 300 >/dev/null
  done
  mkdir -p "$seeds/log" "$seeds/json_record"
  find "$data" -name '*.log' | while read -r f; do cp "$f" "$seeds/log/$(basename "$(dirname "$f")").log"; done
  build/silt consume -d "$data" -t s-gzip --format json | head -5 |
    split -l 1 - "$seeds/json_record/consumed-"
else
  echo "fuzz: build/silt is absent; no silt-written seed logs (run make build first for them)"
fi

dirs_for() {
  local t=$1
  [ -d "tests/fuzz/corpus/$t" ] && echo "tests/fuzz/corpus/$t"
  [ -d "$seeds/$t" ] && echo "$seeds/$t"
  case "$t" in
    batch | segment)
      [ -d "$seeds/log" ] && echo "$seeds/log"
      [ -d "$FIX/kafka-data" ] && echo "$FIX/kafka-data"
      [ "$t" = batch ] && [ -d "$FIX/protocol/sarama" ] && echo "$FIX/protocol/sarama"
      ;;
  esac
  return 0
}

# run_target TARGET: one fuzzing run; its output goes to $FUZZ_BUILD/fuzz-TARGET.log.
run_target() {
  local t=$1 bin corpus max_len seed_dirs extra
  bin="$FUZZ_BUILD/tests/fuzz/${t}_fuzz"
  corpus="$FUZZ_BUILD/fuzz-corpus/$t"
  mkdir -p "$corpus"
  mapfile -t seed_dirs < <(dirs_for "$t")
  case "$t" in
    request) max_len=16384 ;;
    json_record) max_len=4096 ;;
    *) max_len=65536 ;;
  esac
  extra=()
  [ -f "tests/fuzz/$t.dict" ] && extra+=("-dict=tests/fuzz/$t.dict")
  echo "fuzz: $t for ${SECONDS_EACH}s (seeds: ${seed_dirs[*]:-none})"
  "$bin" -max_total_time="$SECONDS_EACH" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$FUZZ_BUILD/fuzz-artifacts/$t-" "${extra[@]}" \
    "$corpus" "${seed_dirs[@]}" >"$FUZZ_BUILD/fuzz-$t.log" 2>&1
}

for t in "${TARGETS[@]}"; do
  [ -x "$FUZZ_BUILD/tests/fuzz/${t}_fuzz" ] || { echo "fuzz: no target $t" >&2; exit 2; }
done
declare -A pid_of
failed=()
# report TARGET: waits for its run and prints one line (and the log's end on failure).
report() {
  local t=$1 log="$FUZZ_BUILD/fuzz-$1.log"
  if wait "${pid_of[$t]}"; then
    echo "fuzz: $t: ok, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') runs, corpus $(find "$FUZZ_BUILD/fuzz-corpus/$t" -type f | wc -l) inputs"
  else
    echo "fuzz: $t: FAILED; the end of $log:"
    grep -v '^ *0x[0-9a-f]*:' "$log" | tail -40
    failed+=("$t")
  fi
}
running=()
for t in "${TARGETS[@]}"; do
  if [ ${#running[@]} -ge "$FUZZ_JOBS" ]; then
    report "${running[0]}"
    running=("${running[@]:1}")
  fi
  run_target "$t" &
  pid_of[$t]=$!
  running+=("$t")
done
for t in "${running[@]}"; do report "$t"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#TARGETS[@]} targets ran ${SECONDS_EACH}s without a crash"
