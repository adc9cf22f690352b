#!/bin/bash
# `silt perf produce -b` side by side with kcat, both producing N records of 100 bytes to one
# partition of the same `silt serve` broker, acks=1 then acks=all; and `silt perf consume -b`
# side by side with `kcat -C -e` reading them back. Each figure is the best of BENCH_RUNS runs
# (default 3), each side alike, printed with the load average when it was taken.
#
# Environment: SILT (the binary, required), BENCH_RECORDS (default 1000000), BENCH_RUNS, BENCH_DIR.
set -euo pipefail
SILT=${SILT:?}
N=${BENCH_RECORDS:-1000000}
RUNS=${BENCH_RUNS:-3}
DIR=${BENCH_DIR:-/tmp/silt-bench}/perf
rm -rf "$DIR"; mkdir -p "$DIR"
PY=/usr/bin/python3
now() { date +%s.%N; }
calc() { $PY -c "print($1)"; }
load() { cut -d' ' -f1 /proc/loadavg; }

seq 1 "$N" | awk '{printf "%099d\n", $1}' > "$DIR/records.txt"
"$SILT" serve -d "$DIR/data" --listen 127.0.0.1:0 2>"$DIR/broker.log" &
BPID=$!
trap 'kill $BPID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$DIR/broker.log" 2>/dev/null && break; sleep 0.1; done
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/broker.log" | head -1)
[ -n "$B" ] || { echo "broker did not start:" >&2; cat "$DIR/broker.log" >&2; exit 1; }

best() {  # best NAME CMD...: runs CMD RUNS times (a fresh topic "$NAME-$r" each, as $TOPIC)
  local name=$1 r t0 t1 d b=""
  shift
  for r in $(seq "$RUNS"); do
    TOPIC="$name-$r"
    "$SILT" topic create -b "$B" "$TOPIC" --partitions 1 >/dev/null
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    d=$(calc "$t1 - $t0")
    echo "  $name run $r: $(calc "round($N / $d)") records/s (load $(load))" >&2
    if [ -z "$b" ] || [ "$(calc "int($d < $b)")" = 1 ]; then b=$d; fi
  done
  calc "round($N / $b)"
}
kcat_produce() { kcat -P -b "$B" -t "$TOPIC" -p 0 -X acks="$ACKS" -X linger.ms=5 < "$DIR/records.txt"; }
perf_produce() {
  "$SILT" perf produce -b "$B" -t "$TOPIC" -p 0 -n "$N" -s 100 --acks "$ACKS" --interval-ms 600000
}

echo "# silt perf produce -b against kcat -P, $N records of 100 bytes, one partition, best of $RUNS"
for ACKS in 1 all; do
  k=$(best "kcat-acks$ACKS" kcat_produce)
  s=$(best "perf-acks$ACKS" perf_produce)
  printf 'acks=%-3s  kcat -P %9s records/s   silt perf produce -b %9s records/s   perf/kcat %s\n' \
    "$ACKS" "$k" "$s" "$(calc "round($s / $k, 2)")"
done

# Consume: the last acks=all topic of each producer holds N records.
TOPIC=perf-acksall-$RUNS
kc=""; sc=""
for r in $(seq "$RUNS"); do
  t0=$(now)
  kcat -C -b "$B" -t "$TOPIC" -o beginning -e -q -X fetch.wait.max.ms=100 \
    -X queued.min.messages=1000000 >/dev/null
  t1=$(now)
  d=$(calc "$t1 - $t0")
  if [ -z "$kc" ] || [ "$(calc "int($d < $kc)")" = 1 ]; then kc=$d; fi
  t0=$(now)
  "$SILT" perf consume -b "$B" -t "$TOPIC" -n "$N" --interval-ms 600000 >/dev/null
  t1=$(now)
  d=$(calc "$t1 - $t0")
  if [ -z "$sc" ] || [ "$(calc "int($d < $sc)")" = 1 ]; then sc=$d; fi
done
printf 'consume   kcat -C %9s records/s   silt perf consume -b %9s records/s   perf/kcat %s\n' \
  "$(calc "round($N / $kc)")" "$(calc "round($N / $sc)")" "$(calc "round($kc / $sc, 2)")"
