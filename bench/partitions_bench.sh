#!/bin/bash
# What a partition costs. Three measures against one `silt serve`:
#
#   1. Produce throughput to a topic of 1, 16, 128 and 1,024 partitions (BENCH_PARTITIONS), keyed
#      records (a 10-byte key and a 90-byte value: 100 bytes of record), acks=1, with silt's own
#      client (`silt produce -b`) and with kcat (librdkafka). Each figure is the best of
#      BENCH_RUNS runs, with the broker's CPU seconds during that run (utime + stime from
#      /proc/PID/stat), the client's CPU seconds, and the load average when it was taken. The
#      1-partition rate of the same client in the same run is the baseline: every figure is also
#      printed as a ratio to it (goal: 1,024 partitions >= 0.6x, for both clients). Each run
#      writes the records twice to a fresh topic: "cold" (each partition's first append, which
#      costs the broker file creation and fsyncs, is inside the figure) and then "warm". The
#      records that reached the log are counted (the sum of the partitions' log end offsets) so
#      that a client that loses records cannot look fast.
#      kcat's own ceiling at each partition count: the same kcat, same settings, producing to
#      librdkafka's in-memory mock broker (bench/mock_broker, a process of its own with a topic
#      of that many partitions, where a partition costs the broker next to nothing). If kcat
#      falls as far against the mock as against silt, the limit is kcat's, and the figure that
#      says what silt costs it is silt/mock at each count (printed beside the ratios).
#      Then the same two targets (silt, mock) at the first and last partition counts with
#      kcat's linger.ms at each of BENCH_LINGER_SWEEP, the same setting for both counts.
#   2. The broker's CPU per Produce request and per partition in a request, with requests of
#      1 to 1,024 partitions (bench/produce_request_bench, one connection, 5 in flight).
#   3. What 10,000 partitions (BENCH_MANY_PARTITIONS) cost the broker at rest: its resident
#      memory (VmRSS from /proc/PID/status) and open files (/proc/PID/fd), before the topic
#      exists, after it is created, after one record was produced to every partition, and after
#      every partition was fetched once (`silt consume -b -o beginning`); and the topic's size on
#      disk (allocated blocks and apparent size).
#
# Environment: SILT (the binary, required), BENCH_RECORDS (default 1000000), BENCH_RUNS (3),
# BENCH_PARTITIONS ("1 16 128 1024"), BENCH_CLIENTS ("silt kcat"), BENCH_LINGER_MS (both
# clients' linger, default 5), BENCH_MANY_PARTITIONS (10000; 0 skips part 3), BENCH_DIR,
# PRODUCE_REQUEST_BENCH (default: bench/ beside $SILT, built by CMake with the others; "none"
# skips part 2), MOCK_BROKER (bench/mock_broker beside $SILT, built when librdkafka-dev is
# installed; "none" skips the mock baseline), BENCH_LINGER_SWEEP (kcat linger.ms values, default
# "5 20 100"; empty skips the sweep).
#
# A quick look at part 1 alone, e.g. while working on the client:
#   BENCH_PARTITIONS="1 1024" BENCH_RUNS=2 BENCH_CLIENTS=silt BENCH_MANY_PARTITIONS=0 \
#   PRODUCE_REQUEST_BENCH=none SILT=build/silt bash bench/partitions_bench.sh
# SILT_PRODUCE_TRACE=1 makes `silt produce` print a line per Produce request sent and answered.
#
# On a machine shared with other work, both processes wait for a CPU for much of the run (see
# /proc/PID/schedstat): the wall-clock figures then follow the CPU seconds more than anything
# else, so compare the CPU columns too, and the load average beside them.
set -euo pipefail
SILT=${SILT:?}
N=${BENCH_RECORDS:-1000000}
RUNS=${BENCH_RUNS:-3}
COUNTS=${BENCH_PARTITIONS:-1 16 128 1024}
CLIENTS=${BENCH_CLIENTS:-silt kcat}
LINGER=${BENCH_LINGER_MS:-5}
MANY=${BENCH_MANY_PARTITIONS:-10000}
SWEEP=${BENCH_LINGER_SWEEP-5 20 100}
DIR=${BENCH_DIR:-/tmp/silt-bench}/partitions
rm -rf "$DIR"; mkdir -p "$DIR"
BIN_DIR=$(cd "$(dirname "$SILT")" && pwd)
MOCK=${MOCK_BROKER:-$BIN_DIR/bench/mock_broker}
case " $CLIENTS " in *" kcat "*) ;; *) MOCK=none ;; esac
[ "$MOCK" = none ] || [ -x "$MOCK" ] || { echo "no $MOCK (build bench/mock_broker, or MOCK_BROKER=none): the kcat baseline is skipped" >&2; MOCK=none; }
PY=/usr/bin/python3
TICK=$(getconf CLK_TCK)
now() { date +%s.%N; }
calc() { $PY -c "print($1)"; }
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# kcat producer settings, the same for every partition count: acks=1, linger.ms=BENCH_LINGER_MS
# (5 by default, Kafka 4.0's producer default), librdkafka's defaults otherwise
# (batch.num.messages=10000, batch.size=1000000, queue.buffering.max.messages=100000,
# queue.buffering.max.kbytes=1048576, max.in.flight.requests.per.connection=1000000), and Java's
# partitioner (murmur2 of the key), so that both clients put each key on the same partition.
# BENCH_KCAT_SETTINGS replaces them. Tried at 1, 16 and 1,024 partitions (librdkafka 2.0.2, a
# loaded 2-core machine): linger.ms 5, 20, 50, 100, 200 and 1000, queue.buffering.max.messages
# 1000000, batch.num.messages 1000000 with batch.size 100000000 -- none moved kcat's figures
# beyond the run-to-run noise (about +-25%): at 1,024 partitions kcat stays at 0.47-0.61M
# records/s with 1.3-1.9 s of its own CPU (0.5 s at 1 partition, half of it in its broker
# thread), so its own CPU per partition is its limit, not its batching. A linger of 1000 ms
# makes a 16-partition run last 9 s.
read -r -a KCAT_SETTINGS <<< "${BENCH_KCAT_SETTINGS:--X acks=1 -X linger.ms=$LINGER -X partitioner=murmur2_random}"
# silt's own client: acks=1 (which turns idempotence off, as in Kafka's producer), the same linger
# as kcat, and its defaults otherwise (--batch-size 256 KiB). At 1,024 partitions a partition has
# one batch in flight (acks=1) and every request carries nearly all of them, so a batch holds what
# arrived during one round trip plus the linger after it (~30 records, ~3 KB, at 5 ms), and the
# broker's cost per partition appended (a write(2) to that partition's segment, ~5 us here)
# follows the number of batches: SILT_PRODUCE_TRACE=1 shows requests, partitions and bytes.
SILT_SETTINGS=(--acks 1 --linger-ms "$LINGER" -K :)

echo "generating $N keyed records (10-byte key, 90-byte value)..." >&2
seq 1 "$N" | awk '{printf "%010d:%090d\n", $1 * 7919 % 1000000007, $1}' > "$DIR/records.txt"

"$SILT" serve -d "$DIR/data" --listen 127.0.0.1:0 2>"$DIR/broker.log" &
BPID=$!
# On exit the broker is stopped and waited for, so that a next run can remove its data dir.
trap 'kill $BPID 2>/dev/null && wait $BPID 2>/dev/null; true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$DIR/broker.log" 2>/dev/null && break; sleep 0.1; done
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/broker.log" | head -1)
[ -n "$B" ] || { echo "broker did not start:" >&2; cat "$DIR/broker.log" >&2; exit 1; }

# The broker's CPU time so far, in clock ticks (utime + stime of all its threads).
broker_ticks() { awk '{print $14 + $15}' "/proc/$BPID/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$BPID/status"; }
open_files() { ls "/proc/$BPID/fd" | wc -l; }
# The number of records in TOPIC's log: the sum of its partitions' log end offsets.
records_in() {
  "$SILT" topic describe -b "$B" "$1" | awk -F'\t' '$1 ~ /^[0-9]+$/ {s += $6} END {print s + 0}'
}

# Deletes a topic. Deleting 1,024 partitions can outlast the client's 30 s request timeout on a
# busy disk; the broker finishes it all the same, so wait until the topic is gone.
drop() {
  "$SILT" topic delete -b "$B" "$1" >/dev/null 2>&1 && return 0
  for _ in $(seq 120); do
    "$SILT" topic list -b "$B" 2>/dev/null | grep -qx "$1" || return 0
    sleep 1
  done
  echo "topic $1 was not deleted" >&2; exit 1
}

# produce CLIENT TOPIC: produces the records once; appends "seconds broker_cpu client_cpu" to
# $DIR/run.out.
produce() {
  local client=$1 topic=$2 c0 c1 t0 t1 cpu
  c0=$(broker_ticks); t0=$(now)
  if [ "$client" = silt ]; then
    cpu=$( { /usr/bin/time -f "%U %S" "$SILT" produce -b "$B" -t "$topic" "${SILT_SETTINGS[@]}" \
               "$DIR/records.txt" >/dev/null; } 2>&1 | tail -1)
  else
    cpu=$( { /usr/bin/time -f "%U %S" kcat -P -b "$B" -t "$topic" -K : "${KCAT_SETTINGS[@]}" \
               < "$DIR/records.txt" >/dev/null; } 2>&1 | tail -1)
  fi
  t1=$(now); c1=$(broker_ticks)
  echo "$(calc "$t1 - $t0") $(calc "round(($c1 - $c0) / $TICK, 2)") $(calc "round(${cpu% *} + ${cpu#* }, 2)")" >> "$DIR/run.out"
}

# A run writes the records twice to a fresh topic: "cold", the first records each partition
# ever gets (the broker's first append to a partition included), then "warm", the same again.
declare -A RATE BCPU CCPU LOAD
for parts in $COUNTS; do
  for client in $CLIENTS; do
    for r in $(seq "$RUNS"); do
      topic="$client-$parts-$r"
      "$SILT" topic create -b "$B" "$topic" --partitions "$parts" >/dev/null
      : > "$DIR/run.out"
      produce "$client" "$topic"
      produce "$client" "$topic"
      got=$(records_in "$topic")
      [ "$got" = $((2 * N)) ] || { echo "$client to $parts partitions: $got records in the log, expected $((2 * N))" >&2; exit 1; }
      drop "$topic"
      l=$(load)
      for phase in cold warm; do
        if [ $phase = cold ]; then read -r d bc cc < <(sed -n 1p "$DIR/run.out"); else read -r d bc cc < <(sed -n 2p "$DIR/run.out"); fi
        echo "  run $r: $client -> $parts partition(s), $phase: $(calc "round($N / $d)") records/s, broker CPU ${bc} s, client CPU ${cc} s ($l)" >&2
        k=$client,$phase,$parts
        if [ -z "${RATE[$k]:-}" ] || [ "$(calc "int($N / $d > ${RATE[$k]})")" = 1 ]; then
          RATE[$k]=$(calc "$N / $d"); BCPU[$k]=$bc; CCPU[$k]=$cc; LOAD[$k]=$l
        fi
      done
    done
  done
done

first=${COUNTS%% *}
last=${COUNTS##* }
echo "records: $N keyed (10-byte key, 90-byte value), acks=1, best of $RUNS runs each, baseline $first partition(s)"
echo "silt produce settings: ${SILT_SETTINGS[*]} (defaults otherwise)"
echo "kcat producer settings: ${KCAT_SETTINGS[*]} (librdkafka defaults otherwise)"
echo "cold: a fresh topic (each partition's first append included); warm: the same records again"
printf "%-6s %-5s %10s %12s %7s %10s %10s  %s\n" client phase partitions records/s ratio broker-cpu client-cpu load
for client in $CLIENTS; do
  for phase in warm cold; do
    for parts in $COUNTS; do
      k=$client,$phase,$parts
      printf "%-6s %-5s %10s %12s %6sx %9ss %9ss  (%s)\n" "$client" "$phase" "$parts" \
        "$(calc "round(${RATE[$k]})")" "$(calc "round(${RATE[$k]} / ${RATE[$client,$phase,$first]}, 2)")" \
        "${BCPU[$k]}" "${CCPU[$k]}" "${LOAD[$k]}"
    done
  done
done
for client in $CLIENTS; do
  for phase in warm cold; do
    echo "$client $phase: $last partitions / $first: $(calc "round(${RATE[$client,$phase,$last]} / ${RATE[$client,$phase,$first]}, 2)")x   (goal >= 0.6x)"
  done
done

# ---- kcat's own ceiling: the same kcat against librdkafka's mock broker --------------------
# mock_rate PARTS [KCAT SETTINGS...]: the best of RUNS kcat runs (records/s) against a fresh
# mock broker with a topic of PARTS partitions; sets MOCK_CCPU (kcat's CPU seconds) and
# MOCK_BCPU (the mock's) of the best run.
mock_rate() {
  local parts=$1 best="" mpid mb t0 t1 d cpu m0 m1 out
  shift
  rm -f "$DIR/mock.in"; mkfifo "$DIR/mock.in"
  "$MOCK" --topic "m:$parts" < "$DIR/mock.in" > "$DIR/mock.out" 2>"$DIR/mock.err" &
  mpid=$!
  exec 7> "$DIR/mock.in"  # the mock serves until this closes
  for _ in $(seq 100); do grep -q bootstrap "$DIR/mock.out" 2>/dev/null && break; sleep 0.05; done
  mb=$(awk '/^bootstrap/ {print $2}' "$DIR/mock.out")
  [ -n "$mb" ] || { echo "mock broker did not start: $(cat "$DIR/mock.err")" >&2; exit 1; }
  for _ in $(seq "$RUNS"); do
    m0=$(awk '{print $14 + $15}' "/proc/$mpid/stat"); t0=$(now)
    out=$( { /usr/bin/time -f "%U %S" kcat -P -b "$mb" -t m -K : "$@" < "$DIR/records.txt" >/dev/null; } 2>&1)
    t1=$(now); m1=$(awk '{print $14 + $15}' "/proc/$mpid/stat")
    if echo "$out" | grep -qi "fail"; then echo "kcat -> mock ($parts partitions): $out" >&2; exit 1; fi
    cpu=$(echo "$out" | tail -1)
    d=$(calc "$t1 - $t0")
    if [ -z "$best" ] || [ "$(calc "int($d < $best)")" = 1 ]; then
      best=$d; MOCK_CCPU=$(calc "round(${cpu% *} + ${cpu#* }, 2)"); MOCK_BCPU=$(calc "round(($m1 - $m0) / $TICK, 2)")
    fi
  done
  exec 7>&-
  wait "$mpid" || true
  MOCK_RATE=$(calc "$N / $best")
}

if [ "$MOCK" != none ]; then
  echo "kcat -> librdkafka's mock broker (bench/mock_broker, same kcat settings; best of $RUNS):"
  declare -A MRATE
  printf "%-6s %10s %12s %7s %10s %10s %11s  %s\n" target partitions records/s ratio kcat-cpu mock-cpu silt/mock load
  for parts in $COUNTS; do
    echo "  kcat -> mock, $parts partition(s)..." >&2
    mock_rate "$parts" "${KCAT_SETTINGS[@]}"
    MRATE[$parts]=$MOCK_RATE
    printf "%-6s %10s %12s %6sx %9ss %9ss %10sx  (%s)\n" mock "$parts" "$(calc "round($MOCK_RATE)")" \
      "$(calc "round($MOCK_RATE / ${MRATE[$first]}, 2)")" "$MOCK_CCPU" "$MOCK_BCPU" \
      "$(calc "round(${RATE[kcat,warm,$parts]} / $MOCK_RATE, 2)")" "$(load)"
  done
  echo "kcat -> mock: $last partitions / $first: $(calc "round(${MRATE[$last]} / ${MRATE[$first]}, 2)")x (kcat -> silt, warm: $(calc "round(${RATE[kcat,warm,$last]} / ${RATE[kcat,warm,$first]}, 2)")x)"
fi

# kcat's linger.ms, the same for both partition counts, against silt (warm topic) and the mock.
if [ -n "$SWEEP" ] && case " $CLIENTS " in *" kcat "*) true ;; *) false ;; esac; then
  echo "kcat linger.ms sweep (records/s, best of $RUNS; ratio = $last partitions / $first):"
  printf "%-10s %-6s %12s %12s %7s\n" linger.ms target "$first" "$last" ratio
  for lg in $SWEEP; do
    settings=(-X acks=1 -X linger.ms="$lg" -X partitioner=murmur2_random)
    declare -A SW=()
    for parts in $first $last; do
      topic="sweep-$lg-$parts"
      "$SILT" topic create -b "$B" "$topic" --partitions "$parts" >/dev/null
      kcat -P -b "$B" -t "$topic" -K : "${settings[@]}" < "$DIR/records.txt"  # warms the topic
      best=""
      for _ in $(seq "$RUNS"); do
        t0=$(now); kcat -P -b "$B" -t "$topic" -K : "${settings[@]}" < "$DIR/records.txt"; t1=$(now)
        d=$(calc "$t1 - $t0")
        if [ -z "$best" ] || [ "$(calc "int($d < $best)")" = 1 ]; then best=$d; fi
      done
      drop "$topic"
      SW[silt,$parts]=$(calc "$N / $best")
      if [ "$MOCK" != none ]; then mock_rate "$parts" "${settings[@]}"; SW[mock,$parts]=$MOCK_RATE; fi
    done
    for target in silt mock; do
      [ -n "${SW[$target,$first]:-}" ] || continue
      printf "%-10s %-6s %12s %12s %6sx\n" "$lg" "$target" "$(calc "round(${SW[$target,$first]})")" \
        "$(calc "round(${SW[$target,$last]})")" "$(calc "round(${SW[$target,$last]} / ${SW[$target,$first]}, 2)")"
    done
  done
fi

# ---- the broker's cost per request and per partition in a request ------------------------
# kcat (librdkafka 2.0) sends one partition per Produce request, silt's client all of a
# leader's ready partitions in one: bench/produce_request_bench replays the same 100-record
# batches in requests of 1 to 1,024 partitions against the broker alone.
REQ_BENCH=${PRODUCE_REQUEST_BENCH:-$BIN_DIR/bench/produce_request_bench}
if [ "$REQ_BENCH" = none ]; then
  :
elif [ -x "$REQ_BENCH" ]; then
  "$SILT" topic create -b "$B" requests --partitions "$last" >/dev/null
  # Every partition's first append, outside the figures.
  "$REQ_BENCH" -b "$B" -t requests --partitions-per-request "$last" --records-per-batch 1 --requests 1 >/dev/null
  echo "broker cost per Produce request (100 records per partition, 5 in flight, best of $RUNS):"
  for k in $COUNTS; do
    best=""; line=""
    for r in $(seq "$RUNS"); do
      out=$("$REQ_BENCH" -b "$B" -t requests --partitions-per-request "$k" --records-per-batch 100 \
              --requests $(( (2000 + k - 1) / k * 4 )) --broker-pid "$BPID")
      rate=$(echo "$out" | sed -n 's/.* \([0-9]*\) records\/s.*/\1/p')
      if [ -z "$best" ] || [ "$rate" -gt "$best" ]; then best=$rate; line="$out ($(load))"; fi
    done
    echo "  $line"
  done
  drop requests
else
  echo "broker cost per request: not measured ($REQ_BENCH missing: build bench/produce_request_bench)"
fi

# ---- 10k partitions at rest ----------------------------------------------------------------
[ "$MANY" -gt 0 ] || exit 0
echo "$MANY partitions: the broker's memory and open files" >&2
row() { printf "  %-34s RSS %8s KiB  open files %6s  (%s)\n" "$1" "$(rss_kb)" "$(open_files)" "$(load)"; }
rss0=$(rss_kb); fd0=$(open_files)
row "before the topic exists"
# Created 1,000 partitions at a time (CreateTopics, then CreatePartitions), so that no request
# outlasts the client's 30 s request timeout.
step=1000
t0=$(now)
"$SILT" topic create -b "$B" many --partitions $((MANY < step ? MANY : step)) >/dev/null
for ((n = 2 * step; n < MANY + step; n += step)); do
  "$SILT" topic alter-config -b "$B" many --partitions $((n < MANY ? n : MANY)) >/dev/null
done
t1=$(now)
row "after topic create"
echo "  topic create: $(calc "round($t1 - $t0, 1)") s ($(calc "round(($t1 - $t0) * 1000 / $MANY, 2)") ms per partition)"
seq 0 $((MANY - 1)) | awk '{printf "%010d:%090d\n", $1, $1}' > "$DIR/many.txt"
t0=$(now)
if ! "$SILT" produce -b "$B" -t many --acks 1 --partitioner round-robin "$DIR/many.txt" 2>"$DIR/many.err"; then
  echo "  produce failed: $(tail -c 300 "$DIR/many.err")"
fi
t1=$(now)
# A partition the broker could not open answers ListOffsets with an error.
got=$(records_in many 2>/dev/null || echo "not all")
row "after one record to each partition"
echo "  produce: $got of $MANY records in the log, $(calc "round($t1 - $t0, 1)") s ($(calc "round(($t1 - $t0) * 1000 / $MANY, 2)") ms per partition: each partition's first append)"
rss1=$(rss_kb); fd1=$(open_files)
got=$("$SILT" consume -b "$B" -t many -o beginning 2>"$DIR/many.err" | wc -l) || true
row "after fetching every partition"
echo "  consume: $got records"
rss2=$(rss_kb); fd2=$(open_files)
du_alloc=$(du -sk "$DIR/data" | cut -f1)
du_apparent=$(du -sk --apparent-size "$DIR/data" | cut -f1)
echo "per partition after produce: $(calc "round(($rss1 - $rss0) / $MANY, 1)") KiB RSS, $(calc "round(($fd1 - $fd0) / $MANY, 2)") open files"
echo "per partition after fetch:   $(calc "round(($rss2 - $rss0) / $MANY, 1)") KiB RSS, $(calc "round(($fd2 - $fd0) / $MANY, 2)") open files"
echo "data dir: $du_alloc KiB allocated, $du_apparent KiB apparent ($(calc "round($du_alloc / $MANY, 1)") KiB allocated per partition)"
echo "open-file limit of the broker: $(awk '/Max open files/ {print $4}' "/proc/$BPID/limits")"
