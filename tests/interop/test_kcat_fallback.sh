#!/bin/bash
# kcat (librdkafka) in fallback mode against `silt serve`, producing and consuming with every
# codec those versions have (zstd needs magic 2), then a balanced consumer group on the old group
# APIs. With broker.version.fallback=0.9.0 librdkafka sends no ApiVersions request and speaks an
# 0.9 broker's versions: Metadata v0, Produce v1 and Fetch v1 with magic 0 message sets,
# ListOffsets v0, GroupCoordinator/JoinGroup/SyncGroup/Heartbeat v0, OffsetCommit v2. With
# 0.10.0 it asks ApiVersions all the same (0.10 brokers answer it) and then uses what silt
# offers; that mode is checked too, as users configure it.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"
command -v kcat >/dev/null 2>&1 || skip "kcat is not installed (apt-get install kcat)"
start_broker

for fallback in 0.10.0 0.9.0; do
  KCAT="kcat -b $BROKER -X api.version.request=false -X broker.version.fallback=$fallback"
  $KCAT -L >"$WORK/meta.txt" 2>"$WORK/kcat.err" || fail "$fallback: kcat -L: $(cat "$WORK/kcat.err")"
  grep -q "1 brokers:" "$WORK/meta.txt" || fail "$fallback: metadata: $(cat "$WORK/meta.txt")"
  for codec in none gzip snappy lz4; do
    topic="fallback-${fallback//./}-$codec"
    : > "$WORK/in.txt"
    for i in $(seq 1 200); do echo "key$i:value $i with codec $codec on $fallback"; done >"$WORK/in.txt"
    $KCAT -P -t "$topic" -z "$codec" -K: <"$WORK/in.txt" 2>"$WORK/kcat.err" ||
      fail "$fallback: produce with $codec: $(cat "$WORK/kcat.err")"
    $KCAT -C -t "$topic" -o beginning -e -q -f '%k:%s|%o|%T\n' >"$WORK/out.txt" 2>"$WORK/kcat.err" ||
      fail "$fallback: consume with $codec: $(cat "$WORK/kcat.err")"
    [ "$(wc -l <"$WORK/out.txt")" -eq 200 ] ||
      fail "$fallback $codec: expected 200 records, got $(wc -l <"$WORK/out.txt"): $(cat "$WORK/kcat.err")"
    cut -d'|' -f1 "$WORK/out.txt" | diff -u "$WORK/in.txt" - || fail "$fallback $codec: keys/values differ"
    [ "$(cut -d'|' -f2 "$WORK/out.txt" | tr '\n' ' ')" = "$(seq 0 199 | tr '\n' ' ')" ] ||
      fail "$fallback $codec: offsets are not 0..199"
    ts=$(head -1 "$WORK/out.txt" | cut -d'|' -f3)
    if [ "$fallback" = 0.10.0 ]; then
      [ "$ts" -gt 1000000000000 ] || fail "$fallback $codec: magic 1 lost the timestamp: $ts"
    fi
    # A read from the middle of a batch starts at the asked offset.
    got=$($KCAT -C -t "$topic" -o 150 -c 3 -q -f '%o ' 2>/dev/null)
    [ "$got" = "150 151 152 " ] || fail "$fallback $codec: -o 150 gave '$got'"
    echo "ok: kcat fallback $fallback -z $codec"
  done
  # The offset grammar's "-N" goes through ListOffsets.
  got=$($KCAT -C -t "fallback-${fallback//./}-gzip" -o -2 -e -q -f '%o\n' | tr '\n' ' ')
  [ "$got" = "198 199 " ] || fail "$fallback: -o -2 gave '$got'"
done

# Data written by a modern producer (magic 2 with headers) reaches an 0.9.0 consumer as magic 0.
printf 'm1\nm2\n' | kcat -b "$BROKER" -P -t fallback-modern -z gzip -H h=1 2>"$WORK/kcat.err" ||
  fail "modern produce: $(cat "$WORK/kcat.err")"
got=$(kcat -b "$BROKER" -X api.version.request=false -X broker.version.fallback=0.9.0 \
  -C -t fallback-modern -o beginning -e -q -f '%s ' 2>"$WORK/kcat.err")
[ "$got" = "m1 m2 " ] || fail "0.9.0 consumer of magic 2 data got '$got': $(cat "$WORK/kcat.err")"
echo "ok: magic 2 data down-converted for an 0.9.0 consumer"

# A message larger than the consumer's fetch size: Fetch v1 answers with a partial message,
# from which librdkafka learns to fetch more (as from Kafka), and every message arrives.
KCAT="kcat -b $BROKER -X api.version.request=false -X broker.version.fallback=0.9.0"
{ echo small; head -c 5000 /dev/zero | tr '\0' a; echo; echo after; } | $KCAT -P -t fallback-big ||
  fail "produce of a large message"
got=$(timeout 30 $KCAT -C -t fallback-big -o beginning -e -q -X fetch.message.max.bytes=1024 \
  -f '%o:%S ' 2>"$WORK/kcat.err")
[ "$got" = "0:5 1:5000 2:5 " ] || fail "large message through a small fetch size: '$got' $(cat "$WORK/kcat.err")"
echo "ok: a message above the fetch size reaches an 0.9.0 consumer"

# A balanced consumer group with the 0.9.0 group APIs.
$KCAT -G fallback-group -X auto.offset.reset=earliest -c 200 -q -f '%o\n' fallback-090-none \
  >"$WORK/group.txt" 2>"$WORK/kcat.err" &
member=$!
for _ in $(seq 1 300); do kill -0 $member 2>/dev/null || break; sleep 0.1; done
if kill -0 $member 2>/dev/null; then kill $member; fail "group member did not get 200 records: $(cat "$WORK/kcat.err")"; fi
wait $member || fail "group member failed: $(cat "$WORK/kcat.err")"
[ "$(wc -l <"$WORK/group.txt")" -eq 200 ] || fail "group member got $(wc -l <"$WORK/group.txt") records"
echo "ok: kcat fallback 0.9.0 consumer group"

stop_broker
grep -q "shutdown complete" "$WORK/broker.log" || fail "no clean shutdown line"
echo "PASS: kcat fallback interop"
