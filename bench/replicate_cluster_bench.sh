#!/usr/bin/env bash
# cluster -> cluster: `silt replicate kafka://A kafka://B` against the pipe people use today,
# `kcat -C -b A | kcat -P -b B`, for the same records on the same two brokers.
#
# Usage: bench/replicate_cluster_bench.sh [SILT] [RECORDS]   (defaults: build/silt, 1000000)
#
# A topic of RECORDS records of 100 bytes (lz4, as `silt perf produce` writes them) is made on
# broker A; each copy goes to a topic of its own on broker B, timed from start to end. The pipe
# keeps only the values (no offsets, timestamps, keys or headers); replicate keeps all of them,
# byte for byte. Reported: both times and the ratio pipe/replicate (goal >= 3).
set -eu
SILT=$(realpath "${1:-build/silt}")
N=${2:-1000000}
command -v kcat >/dev/null || { echo "kcat is needed (apt-get install kcat)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/silt-rcbench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

start_broker() {  # start_broker NAME: starts it, its address in $ADDR
  "$SILT" serve -d "$WORK/$1" --listen 127.0.0.1:0 >/dev/null 2>"$WORK/$1.log" &
  PIDS+=("$!")
  for _ in $(seq 100); do
    if grep -q "listening on" "$WORK/$1.log"; then break; fi
    sleep 0.1
  done
  ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$WORK/$1.log" | head -1)
  [ -n "$ADDR" ] || { echo "broker $1 did not start: $(cat "$WORK/$1.log")" >&2; exit 2; }
}
start_broker a
A=$ADDR
start_broker b
B=$ADDR
"$SILT" topic -b "$A" create t >/dev/null
"$SILT" perf produce -b "$A" -t t -n "$N" -s 100 --acks all >/dev/null
now() { date +%s.%N; }

t0=$(now)
"$SILT" replicate "kafka://$A" "kafka://$B" -t t -q
t1=$(now)
kcat -C -b "$A" -t t -e -q -o beginning -f '%s\n' | kcat -P -b "$B" -t piped -X linger.ms=5
t2=$(now)

got=$("$SILT" consume -b "$B" -t t --format '%o\n' | wc -l)
[ "$got" -eq "$N" ] || { echo "replicate copied $got of $N records" >&2; exit 1; }
awk -v r="$(echo "$t1 - $t0" | bc)" -v p="$(echo "$t2 - $t1" | bc)" -v n="$N" 'BEGIN {
  printf "records            %d x 100 B\n", n
  printf "silt replicate     %.2f s  (%.0f records/s)\n", r, n / r
  printf "kcat -C | kcat -P  %.2f s  (%.0f records/s)\n", p, n / p
  printf "ratio pipe/replicate %.2f (goal >= 3)\n", p / r
}'
