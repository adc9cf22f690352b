#!/bin/bash
# Broker throughput and latency on this machine, 100-byte records to one partition, acks=1:
#   - kcat (librdkafka) producing to `silt serve`, with the broker's CPU per record;
#   - the same kcat, same settings, producing to librdkafka's built-in mock broker (the client's
#     ceiling here: the mock runs inside kcat, so the pair shows what the client can do);
#   - redis-benchmark XADD against Redis Streams (AOF, appendfsync everysec, 50 clients,
#     pipeline 100) as a peer;
#   - silt's own client (`silt produce -b`) producing to silt: the broker's capacity when the
#     client is not the bottleneck;
#   - kcat consuming the topic back from silt (`kcat -C -o beginning -e -q | wc -l`), the same
#     with kcat's stdout buffered 1 MiB at a time, and bench/consume_bench, a librdkafka
#     consumer that counts records without printing them (the fair measure of the broker);
#   - produce latency percentiles at a steady 50k records/s (bench/latency_bench, librdkafka,
#     linger.ms=0, acks=1), from just before the produce call to the delivery report.
#
# Each figure is the best of BENCH_RUNS runs (default 3; for latency, the run with the lowest
# p99), each side alike, and is printed with the load average when it was taken: the machine is
# shared, and a busy neighbour shows up there first.
#
# Environment: SILT (the binary, required), BENCH_RECORDS (default 2000000), BENCH_RUNS,
# BENCH_DIR, LATENCY_BENCH and CONSUME_BENCH (default: bench/ beside $SILT, as built by CMake
# when librdkafka-dev is installed; `make bench-deps` installs it).
set -euo pipefail
SILT=${SILT:?}
N=${BENCH_RECORDS:-2000000}
RUNS=${BENCH_RUNS:-3}
DIR=${BENCH_DIR:-/tmp/silt-bench}/broker
BIN_DIR=$(cd "$(dirname "$SILT")" && pwd)
LATENCY_BENCH=${LATENCY_BENCH:-$BIN_DIR/bench/latency_bench}
CONSUME_BENCH=${CONSUME_BENCH:-$BIN_DIR/bench/consume_bench}
rm -rf "$DIR"; mkdir -p "$DIR"
PY=/usr/bin/python3
now() { date +%s.%N; }
calc() { $PY -c "print($1)"; }
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)"; }
mb() { calc "round($1 * 100 / 1048576, 1)"; }

# kcat producer settings, the same for silt and for the mock broker. Only acks and linger.ms
# differ from librdkafka's defaults. Measured on this 2-core machine (best of 7, alternating
# with the defaults): batch.num.messages 3000-20000 (default 10000), batch.size up to 4 MB,
# linger.ms 0-100, queue.buffering.max.messages 10000-1000000 (default 100000),
# message.timeout.ms=0 and delivery.report.only.error=true. None was faster beyond the run-to-run
# noise, several were slower: a queue of 10000-50000 cuts kcat's CPU by a fifth (less memory
# to fault in) but stalls the line reader on a full queue; linger.ms=0 sends too many small
# requests; delivery.report.only.error moves the frees to the librdkafka thread and costs 60%
# more CPU. The producer's own thread (read a line, copy it into a message, serve its delivery
# report) is the bottleneck: see the mock broker's figure, which has no network at all.
PRODUCER_SETTINGS=(-X acks=1 -X linger.ms=5)
# kcat/consume_bench consumer settings. librdkafka 2.0's prefetch queue stops fetching once
# queued.min.messages (100000) are waiting and looks again only about once a second, so a
# consumer whose printing lags a little loses whole seconds; a bound the run never reaches
# avoids that stall (the queue is still capped by queued.max.messages.kbytes, 64 MiB).
# kcat -e stops at the first fetch that finds nothing new, which the broker holds for
# fetch.wait.max.ms (500 ms by default) as Kafka does; 100 ms keeps that wait out of the figure.
CONSUMER_SETTINGS=(-X queued.min.messages=1000000 -X fetch.wait.max.ms=100)

echo "generating $N records of 100 bytes..." >&2
seq 1 "$N" | awk '{printf "%099d\n", $1}' > "$DIR/records.txt"

# silt
"$SILT" serve -d "$DIR/data" --listen 127.0.0.1:0 2>"$DIR/broker.log" &
BPID=$!
trap 'kill $BPID 2>/dev/null; redis-cli -p 16399 shutdown nosave >/dev/null 2>&1 || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$DIR/broker.log" 2>/dev/null && break; sleep 0.1; done
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/broker.log" | head -1)
[ -n "$B" ] || { echo "broker did not start:" >&2; cat "$DIR/broker.log" >&2; exit 1; }

# CPU time of the broker so far, in nanoseconds (all its threads, from schedstat).
broker_cpu_ns() { cat /proc/$BPID/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }

# ---- produce: kcat -> silt, one topic per run --------------------------------------------
silt_best=""; silt_cpu=""; silt_load=""
for r in $(seq "$RUNS"); do
  "$SILT" topic create -b "$B" "bench-$r" --partitions 1 >/dev/null
  c0=$(broker_cpu_ns); t0=$(now)
  kcat -P -b "$B" -t "bench-$r" -p 0 "${PRODUCER_SETTINGS[@]}" < "$DIR/records.txt"
  t1=$(now); c1=$(broker_cpu_ns)
  d=$(calc "$t1 - $t0"); l=$(load)
  echo "  run $r: kcat -> silt $(calc "round($N / $d)") records/s, broker $(calc "round(($c1 - $c0) / 1000 / $N, 3)") us/record ($l)" >&2
  if [ -z "$silt_best" ] || [ "$(calc "int($d < $silt_best)")" = 1 ]; then
    silt_best=$d; silt_cpu=$(calc "($c1 - $c0) / 1000 / $N"); silt_load=$l
  fi
done
silt_rate=$(calc "$N / $silt_best")

# ---- produce: silt's own client -> silt (the broker's capacity with a faster client) -------
sp_best=""; sp_load=""
for r in $(seq "$RUNS"); do
  "$SILT" topic create -b "$B" "own-$r" --partitions 1 >/dev/null
  t0=$(now)
  "$SILT" produce -b "$B" -t "own-$r" -p 0 --acks 1 --no-idempotence < "$DIR/records.txt"
  t1=$(now)
  d=$(calc "$t1 - $t0"); l=$(load)
  echo "  run $r: silt produce -b -> silt $(calc "round($N / $d)") records/s ($l)" >&2
  if [ -z "$sp_best" ] || [ "$(calc "int($d < $sp_best)")" = 1 ]; then sp_best=$d; sp_load=$l; fi
done
sp_rate=$(calc "$N / $sp_best")

# ---- produce: kcat -> librdkafka's mock broker ---------------------------------------------
mock_best=""; mock_load=""
for r in $(seq "$RUNS"); do
  t0=$(now)
  kcat -P -b localhost:1 -t bench -X test.mock.num.brokers=1 "${PRODUCER_SETTINGS[@]}" \
    < "$DIR/records.txt" 2>/dev/null
  t1=$(now)
  d=$(calc "$t1 - $t0"); l=$(load)
  echo "  run $r: kcat -> mock $(calc "round($N / $d)") records/s ($l)" >&2
  if [ -z "$mock_best" ] || [ "$(calc "int($d < $mock_best)")" = 1 ]; then mock_best=$d; mock_load=$l; fi
done
mock_rate=$(calc "$N / $mock_best")

# ---- consume: kcat and consume_bench from silt -------------------------------------------
cons_best=""; cons_load=""; cons_cpu=""
for r in $(seq "$RUNS"); do
  c0=$(broker_cpu_ns); t0=$(now)
  got=$(kcat -C -b "$B" -t bench-1 -p 0 -o beginning -e -q "${CONSUMER_SETTINGS[@]}" | wc -l)
  t1=$(now); c1=$(broker_cpu_ns)
  d=$(calc "$t1 - $t0"); l=$(load)
  [ "$got" = "$N" ] || { echo "kcat consumed $got records, expected $N" >&2; exit 1; }
  echo "  run $r: kcat consuming $(calc "round($N / $d)") records/s, broker $(calc "round(($c1 - $c0) / 1000 / $N, 3)") us/record ($l)" >&2
  if [ -z "$cons_best" ] || [ "$(calc "int($d < $cons_best)")" = 1 ]; then
    cons_best=$d; cons_load=$l; cons_cpu=$(calc "($c1 - $c0) / 1000 / $N")
  fi
done
cons_rate=$(calc "$N / $cons_best")

# The same with kcat's stdout buffered 1 MiB at a time (stdbuf) instead of its default 4 KiB
# pipe writes: the difference is kcat's own output path, not the broker.
kb_best=""; kb_load=""
if command -v stdbuf >/dev/null; then
  for r in $(seq "$RUNS"); do
    t0=$(now)
    got=$(stdbuf -o 1M kcat -C -b "$B" -t bench-1 -p 0 -o beginning -e -q "${CONSUMER_SETTINGS[@]}" | wc -l)
    t1=$(now)
    d=$(calc "$t1 - $t0"); l=$(load)
    [ "$got" = "$N" ] || { echo "kcat consumed $got records, expected $N" >&2; exit 1; }
    echo "  run $r: stdbuf -o 1M kcat consuming $(calc "round($N / $d)") records/s ($l)" >&2
    if [ -z "$kb_best" ] || [ "$(calc "int($d < $kb_best)")" = 1 ]; then kb_best=$d; kb_load=$l; fi
  done
fi

cb_line=""
if [ -x "$CONSUME_BENCH" ]; then
  cb_best=""
  for r in $(seq "$RUNS"); do
    out=$("$CONSUME_BENCH" -b "$B" -t bench-1 "${CONSUMER_SETTINGS[@]}")
    l=$(load)
    echo "  run $r: consume_bench $out ($l)" >&2
    rate=$(echo "$out" | sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p')
    n=$(echo "$out" | awk '{print $1}')
    [ "$n" = "$N" ] || { echo "consume_bench read $n records, expected $N" >&2; exit 1; }
    if [ -z "$cb_best" ] || [ "$rate" -gt "$cb_best" ]; then cb_best=$rate; cb_line="$out ($l)"; fi
  done
else
  cb_line="not built ($CONSUME_BENCH missing: install librdkafka-dev and rebuild)"
fi

# ---- Redis Streams -----------------------------------------------------------------------
redis_rate=""; redis_load=""
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
  mkdir -p "$DIR/redis"
  val=$(printf '%0100d' 7)
  for r in $(seq "$RUNS"); do
    rm -rf "$DIR/redis"/*
    redis-server --port 16399 --dir "$DIR/redis" --appendonly yes --appendfsync everysec \
      --save "" --daemonize yes >/dev/null
    for _ in $(seq 50); do redis-cli -p 16399 ping >/dev/null 2>&1 && break; sleep 0.1; done
    rr=$(redis-benchmark -p 16399 -c 50 -P 100 -n "$N" -q \
      XADD bench '*' f "$val" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
    l=$(load)
    redis-cli -p 16399 shutdown nosave >/dev/null 2>&1 || true
    for _ in $(seq 50); do redis-cli -p 16399 ping >/dev/null 2>&1 || break; sleep 0.1; done
    echo "  run $r: redis XADD $rr records/s ($l)" >&2
    if [ -z "$redis_rate" ] || [ "$(calc "int($rr > $redis_rate)")" = 1 ]; then redis_rate=$rr; redis_load=$l; fi
  done
fi

# ---- latency at a steady 50k records/s ---------------------------------------------------
lat=""
if [ -x "$LATENCY_BENCH" ]; then
  "$SILT" topic create -b "$B" latency --partitions 1 >/dev/null
  best_p99=""
  for r in $(seq "$RUNS"); do
    out=$("$LATENCY_BENCH" -b "$B" -t latency --rate 50000 --seconds 4)
    l=$(load)
    echo "  run $r: latency $out ($l)" >&2
    p99=$(echo "$out" | sed -n 's/.* p99 \([0-9.]*\) .*/\1/p')
    if [ -z "$best_p99" ] || [ "$(calc "int($p99 < $best_p99)")" = 1 ]; then best_p99=$p99; lat="$out ($l)"; fi
  done
else
  lat="not measured ($LATENCY_BENCH missing: install librdkafka-dev and rebuild)"
fi

echo "records: $N x 100 bytes, one partition, acks=1, best of $RUNS runs each"
echo "kcat producer settings: ${PRODUCER_SETTINGS[*]}"
echo "kcat consumer settings: ${CONSUMER_SETTINGS[*]}"
echo "kcat -> silt:          $(calc "round($silt_rate)") records/s ($(mb "$silt_rate") MiB/s), broker CPU $(calc "round($silt_cpu, 3)") us/record ($silt_load)"
echo "kcat -> mock broker:   $(calc "round($mock_rate)") records/s ($(mb "$mock_rate") MiB/s) ($mock_load)"
echo "silt produce -b -> silt: $(calc "round($sp_rate)") records/s ($(mb "$sp_rate") MiB/s) ($sp_load)   (silt's own client, for the broker's capacity)"
echo "silt / mock:           $(calc "round($silt_rate / $mock_rate, 2)")x   (goal >= 0.75x)"
if [ -n "$redis_rate" ]; then
  echo "redis XADD (AOF everysec, 50 clients, pipeline 100): $redis_rate records/s ($redis_load)"
  echo "silt / redis:          $(calc "round($silt_rate / $redis_rate, 2)")x   (goal >= 4x; with silt's own client $(calc "round($sp_rate / $redis_rate, 2)")x)"
else
  echo "redis XADD:            not measured (redis-server/redis-benchmark missing: make bench-deps)"
fi
echo "kcat consuming silt:   $(calc "round($cons_rate)") records/s ($(mb "$cons_rate") MiB/s), broker CPU $(calc "round($cons_cpu, 3)") us/record ($cons_load)   (goal >= 1M/s)"
if [ -n "$kb_best" ]; then
  echo "stdbuf -o 1M kcat -C:  $(calc "round($N / $kb_best)") records/s ($kb_load)   (kcat's output path with a 1 MiB stdout buffer)"
fi
echo "consume_bench:         $cb_line"
echo "steady 50k/s produce:  $lat   (goal p99 <= 2 ms)"
