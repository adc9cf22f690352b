#!/bin/bash
# kcat (librdkafka) against `silt serve`: produce and consume with every codec, keys, headers,
# and the offset grammar.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"
command -v kcat >/dev/null 2>&1 || skip "kcat is not installed (apt-get install kcat)"
start_broker

KCAT="kcat -b $BROKER -X api.version.request=true"

$KCAT -L -J >"$WORK/meta.json" 2>"$WORK/kcat.err" || fail "kcat -L: $(cat "$WORK/kcat.err")"
grep -q "\"name\":\"127.0.0.1:${BROKER##*:}/0\"" "$WORK/meta.json" ||
  fail "metadata does not list this broker: $(cat "$WORK/meta.json")"

for codec in none gzip snappy lz4 zstd; do
  topic="kcat-$codec"
  : > "$WORK/in.txt"
  for i in $(seq 1 50); do echo "key$i:value $i with codec $codec" >> "$WORK/in.txt"; done
  $KCAT -P -t "$topic" -z "$codec" -K: -H "h1=one" -H "trace=$codec" <"$WORK/in.txt" \
    2>"$WORK/kcat.err" || fail "produce with $codec: $(cat "$WORK/kcat.err")"
  $KCAT -C -t "$topic" -o beginning -e -q -f '%k:%s|%h|%o\n' >"$WORK/out.txt" \
    2>"$WORK/kcat.err" || fail "consume with $codec: $(cat "$WORK/kcat.err")"
  [ "$(wc -l <"$WORK/out.txt")" -eq 50 ] || fail "$codec: expected 50 records, got $(wc -l <"$WORK/out.txt")"
  cut -d'|' -f1 "$WORK/out.txt" | diff -u "$WORK/in.txt" - || fail "$codec: keys/values differ"
  grep -qv "|h1=one,trace=$codec|" "$WORK/out.txt" && fail "$codec: headers lost: $(head -2 "$WORK/out.txt")"
  [ "$(cut -d'|' -f3 "$WORK/out.txt" | tr '\n' ' ')" = "$(seq 0 49 | tr '\n' ' ')" ] ||
    fail "$codec: offsets are not 0..49"
  echo "ok: kcat -z $codec"
done

# Offsets: absolute, relative to the end, and end.
got=$($KCAT -C -t kcat-none -o 45 -e -q -f '%o\n' | tr '\n' ' ')
[ "$got" = "45 46 47 48 49 " ] || fail "-o 45 gave '$got'"
got=$($KCAT -C -t kcat-none -o -3 -e -q -f '%o\n' | tr '\n' ' ')
[ "$got" = "47 48 49 " ] || fail "-o -3 gave '$got'"
got=$($KCAT -C -t kcat-none -o end -e -q -f '%o\n' | wc -l)
[ "$got" -eq 0 ] || fail "-o end gave $got records"
echo "ok: kcat offsets"

# A consumer that follows the topic sees records produced after it started (long polling).
echo a | $KCAT -P -t kcat-follow
$KCAT -C -t kcat-follow -o beginning -c 3 -q -f '%s\n' >"$WORK/follow.txt" 2>/dev/null &
follower=$!
sleep 1
printf 'b\nc\n' | $KCAT -P -t kcat-follow
for _ in $(seq 1 100); do kill -0 $follower 2>/dev/null || break; sleep 0.1; done
if kill -0 $follower 2>/dev/null; then kill $follower; fail "follower did not receive 3 records"; fi
[ "$(tr '\n' ' ' <"$WORK/follow.txt")" = "a b c " ] || fail "follower got '$(cat "$WORK/follow.txt")'"
echo "ok: kcat follow"

stop_broker
grep -q "shutdown complete" "$WORK/broker.log" || fail "no clean shutdown line"
echo "PASS: kcat interop"
