#!/bin/sh
# Runs every benchmark in bench/ against its same-run baseline. Usage: bench/run.sh BUILD_DIR
# Sizes: BENCH_SIZE_MB (default 1024). Output: human-readable figures and ratios on stdout.
set -eu
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
export SILT="$BUILD/silt"
export BENCH_DIR=${BENCH_DIR:-$(pwd)/bench/out}
mkdir -p "$BENCH_DIR"
echo "# silt benchmarks — $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
if [ -x "$BUILD/bench/storage_bench" ]; then
  echo "## storage: partition log vs raw file I/O"
  "$BUILD/bench/storage_bench" --dir "$BENCH_DIR/storage" --size-mb "${BENCH_SIZE_MB:-1024}"
fi
for b in "$HERE"/*_bench.sh; do
  [ -f "$b" ] || continue
  echo "## $(basename "$b" .sh)"
  bash "$b"
done
