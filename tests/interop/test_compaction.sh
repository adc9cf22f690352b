#!/bin/bash
# Log compaction end to end: kcat writes many values for a few keys to a compacted topic with
# small segments; the broker's background cleaner keeps the last value of every key, at its
# original offset, and refuses keyless records.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"
command -v kcat >/dev/null || skip "kcat is not installed (apt-get install kcat)"

start_broker --set log.cleaner.backoff.ms=200
"$SILT" topic create -b "$BROKER" compacted --config cleanup.policy=compact \
  --config segment.bytes=2048 --config min.cleanable.dirty.ratio=0.01 >/dev/null \
  || fail "create compacted topic"

# 20 keys, 30 rounds: key k<i> ends with value r29-k<i>. Small batches so segments roll often.
for r in $(seq 0 29); do
  for i in $(seq 0 19); do echo "k$i:r$r-k$i"; done
done | kcat -P -b "$BROKER" -t compacted -K: -p 0 -X linger.ms=0 -X batch.num.messages=5 \
  || fail "kcat produce"
# Filler under one other key, so the last round sits in closed (cleanable) segments.
for f in $(seq 1 300); do echo "zz:filler-$f"; done \
  | kcat -P -b "$BROKER" -t compacted -K: -p 0 -X linger.ms=0 -X batch.num.messages=5 \
  || fail "kcat produce filler"
before=$(ls "$WORK/data/compacted-0"/*.log | wc -l)

# Wait for the cleaner (bounded).
ok=0
for _ in $(seq 1 100); do
  n=$("$SILT" consume -b "$BROKER" -t compacted -o beginning | wc -l)
  k=$("$SILT" consume -b "$BROKER" -t compacted -o beginning --format '%k\n' | grep -c '^k')
  if [ "$k" -eq 20 ]; then ok=1; break; fi
  sleep 0.2
done
[ $ok = 1 ] || fail "compaction did not reduce the topic ($n records, $k of keys k*, $before segments)"

out=$("$SILT" consume -b "$BROKER" -t compacted -o beginning --format '%k %s %o\n')
for i in $(seq 0 19); do
  line=$(echo "$out" | grep "^k$i ")
  [ "$(echo "$line" | wc -l)" -eq 1 ] || fail "key k$i appears $(echo "$line" | wc -l) times: $out"
  [ "$(echo "$line" | cut -d' ' -f2)" = "r29-k$i" ] || fail "key k$i kept $(echo "$line" | cut -d' ' -f2)"
  # Offsets are preserved: round 29 of key i was written at offset 29*20+i.
  [ "$(echo "$line" | cut -d' ' -f3)" = "$((29 * 20 + i))" ] || fail "key k$i moved to offset $line"
done
"$SILT" verify-crc "$WORK/data/compacted-0" >"$WORK/verify" || fail "compacted partition does not verify: $(cat "$WORK/verify")"

# Keyless records are refused on a compacted topic.
if echo "no key" | "$SILT" produce -b "$BROKER" -t compacted 2>"$WORK/err"; then
  fail "a keyless record was accepted by a compacted topic"
fi
grep -qi "key" "$WORK/err" || fail "unclear error for a keyless record: $(cat "$WORK/err")"
echo "PASS: compaction kept the last value of 20 keys at their offsets"
