#!/bin/bash
# Broker throughput, one run on this machine, 100-byte records to one partition, acks=1:
#   - kcat (librdkafka) producing to `silt serve`;
#   - the same kcat producing to librdkafka's built-in mock broker (the client's ceiling here);
#   - redis-benchmark XADD against Redis Streams (AOF, appendfsync everysec, 50 clients,
#     pipeline 100) as a peer;
#   - kcat consuming the topic back from silt;
#   - produce latency percentiles at a steady 50k records/s (confluent-kafka, acks=1);
#   - broker CPU per record (utime+stime of the broker process over the produce run).
set -euo pipefail
SILT=${SILT:?}
N=${BENCH_RECORDS:-2000000}
DIR=${BENCH_DIR:-/tmp/silt-bench}/broker
rm -rf "$DIR"; mkdir -p "$DIR"
PY=/usr/bin/python3
now() { date +%s.%N; }
calc() { $PY -c "print($1)"; }

echo "generating $N records of 100 bytes..." >&2
seq 1 "$N" | awk '{printf "%099d\n", $1}' > "$DIR/records.txt"

# silt
"$SILT" serve -d "$DIR/data" --listen 127.0.0.1:0 --log-level warn 2>"$DIR/broker.log" &
BPID=$!
trap 'kill $BPID 2>/dev/null; redis-cli -p 16399 shutdown nosave >/dev/null 2>&1 || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$DIR/broker.log" 2>/dev/null && break; sleep 0.1; done
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/broker.log" | head -1)
if [ -z "$B" ]; then
  # --log-level warn may hide the line; fall back to info
  kill $BPID; wait $BPID 2>/dev/null || true
  "$SILT" serve -d "$DIR/data" --listen 127.0.0.1:0 2>"$DIR/broker.log" &
  BPID=$!
  for _ in $(seq 100); do grep -q "listening on" "$DIR/broker.log" 2>/dev/null && break; sleep 0.1; done
  B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/broker.log" | head -1)
fi
"$SILT" topic create -b "$B" bench --partitions 1 >/dev/null
cpu0=$(awk '{print $14 + $15}' /proc/$BPID/stat)
t0=$(now)
kcat -P -b "$B" -t bench -p 0 -X acks=1 -X linger.ms=5 < "$DIR/records.txt"
t1=$(now)
cpu1=$(awk '{print $14 + $15}' /proc/$BPID/stat)
silt_rate=$(calc "$N / ($t1 - $t0)")
hz=$(getconf CLK_TCK)
cpu_us=$(calc "($cpu1 - $cpu0) / $hz * 1e6 / $N")

# librdkafka's mock broker
t0=$(now)
kcat -P -b localhost:1 -t bench -X test.mock.num.brokers=1 -X acks=1 -X linger.ms=5 \
  < "$DIR/records.txt" 2>/dev/null
t1=$(now)
mock_rate=$(calc "$N / ($t1 - $t0)")

# kcat consuming from silt
t0=$(now)
got=$(kcat -C -b "$B" -t bench -p 0 -o beginning -e -q | wc -l)
t1=$(now)
cons_rate=$(calc "$got / ($t1 - $t0)")

# Redis Streams
redis_rate=""
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
  mkdir -p "$DIR/redis"
  redis-server --port 16399 --dir "$DIR/redis" --appendonly yes --appendfsync everysec \
    --save "" --daemonize yes >/dev/null
  sleep 0.5
  val=$(printf '%0100d' 7)
  redis_rate=$(redis-benchmark -p 16399 -c 50 -P 100 -n "$N" -q \
    XADD bench '*' f "$val" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
  redis-cli -p 16399 shutdown nosave >/dev/null 2>&1 || true
fi

# Latency at a steady 50k records/s with acks=1.
lat=$($PY - "$B" <<'PY'
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "1", "linger.ms": 0,
              "enable.idempotence": False})
lat = []
def cb(err, msg, t0):
    if err is None:
        lat.append(time.perf_counter() - t0)
rate, secs = 50000, 4
value = b"x" * 100
# Warm up: connection, metadata and the first produce are not part of the steady state.
p.produce("bench", value, partition=0)
p.flush(10)
start = time.perf_counter()
n = 0
while True:
    now = time.perf_counter()
    due = int((now - start) * rate)
    if due >= rate * secs:
        break
    while n < due:
        t0 = time.perf_counter()
        p.produce("bench", value, partition=0, on_delivery=lambda e, m, t0=t0: cb(e, m, t0))
        n += 1
    p.poll(0)
p.flush(10)
lat.sort()
def pct(q): return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
achieved = n / (time.perf_counter() - start)
print("%d sent at %.0f/s, acked %d; latency ms p50 %.2f p99 %.2f p999 %.2f max %.2f" % (
    n, achieved, len(lat), pct(0.5), pct(0.99), pct(0.999), lat[-1] * 1000))
PY
)

mb() { calc "round($1 * 100 / 1048576, 1)"; }
echo "records: $N x 100 bytes, one partition, acks=1"
echo "kcat -> silt:          $(calc "round($silt_rate)") records/s ($(mb "$silt_rate") MiB/s), broker CPU $(calc "round($cpu_us, 2)") us/record"
echo "kcat -> mock broker:   $(calc "round($mock_rate)") records/s ($(mb "$mock_rate") MiB/s)"
echo "silt / mock:           $(calc "round($silt_rate / $mock_rate, 2)")x   (goal >= 0.75x)"
if [ -n "$redis_rate" ]; then
  echo "redis XADD (AOF everysec, 50 clients, pipeline 100): $redis_rate records/s"
  echo "silt / redis:          $(calc "round($silt_rate / $redis_rate, 2)")x   (goal >= 4x)"
fi
echo "kcat consuming silt:   $(calc "round($cons_rate)") records/s ($got records)   (goal >= 1M/s)"
echo "steady 50k/s produce:  $lat   (goal p99 <= 2 ms)"
