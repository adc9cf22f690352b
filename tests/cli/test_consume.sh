#!/usr/bin/env bash
# silt consume: offsets, partitions, counts, formats, JSON round trip, follow mode, groups,
# closed pipes and bad input.
source "$(dirname "$0")/lib.sh"

expect_fail 2 "missing data dir" "$SILT" consume -t t
"$SILT" topic create t --partitions 2
# Ten records with known timestamps in partition 0, three in partition 1.
for i in $(seq 0 9); do
  printf '{"key":"k%d","value":"v%d","timestamp":%d}\n' "$i" "$i" $(((i + 1) * 1000))
done | "$SILT" produce -t t -p 0 --format json
printf 'p1a\np1b\np1c\n' | "$SILT" produce -t t -p 1

# Offsets.
run "$SILT" consume -t t -p 0
assert_eq "$(seq 0 9 | sed 's/^/v/')" "$OUT" "default: from the beginning to the end, then exit"
run "$SILT" consume -t t -p 0 -o beginning -c 2
assert_eq "$(printf 'v0\nv1')" "$OUT" "-o beginning -c 2"
run "$SILT" consume -t t -p 0 -o 7
assert_eq "$(printf 'v7\nv8\nv9')" "$OUT" "-o N"
run "$SILT" consume -t t -p 0 -o 100
assert_eq "" "$OUT" "-o past the end prints nothing"
run "$SILT" consume -t t -o -2 --format '%p:%s\n'
assert_eq "$(printf '0:v8\n0:v9\n1:p1b\n1:p1c')" "$(printf '%s\n' "$OUT" | sort)" "-o -N counts back per partition"
run "$SILT" consume -t t -o -50 -p 1
assert_eq "$(printf 'p1a\np1b\np1c')" "$OUT" "-o -N larger than the log starts at the beginning"
run "$SILT" consume -t t -o end
assert_eq "" "$OUT" "-o end prints nothing and exits"
run "$SILT" consume -t t -p 0 -o @8000ms
assert_eq "$(printf 'v7\nv8\nv9')" "$OUT" "-o @ms"
run "$SILT" consume -t t -p 0 -o @1970-01-01T00:00:09Z
assert_eq "$(printf 'v8\nv9')" "$OUT" "-o @ISO-8601"
run "$SILT" consume -t t -p 0 -o @1970-01-01T01:00:09.000+01:00
assert_eq "$(printf 'v8\nv9')" "$OUT" "-o @ISO-8601 with a zone offset"
run "$SILT" consume -t t -p 0 -o @99999999999999
assert_eq "" "$OUT" "-o @ after every record prints nothing"
for bad in begin 12x -- @yesterday @2026-13-01 +5; do
  expect_fail 2 "bad offset '$bad'" "$SILT" consume -t t -o "$bad"
done
assert_contains "$ERR" "beginning, end, N, -N, @TIME or START:END" "bad offset message lists the forms"

# Partitions and counts.
run "$SILT" consume -t t -p 1 -p 0 --format '%p\n'
assert_eq 13 "$(printf '%s\n' "$OUT" | wc -l)" "repeated -p reads both"
expect_fail 2 "a partition the topic lacks" "$SILT" consume -t t -p 5
expect_fail 2 "unknown topic" "$SILT" consume -t nope
assert_contains "$ERR" "nope" "unknown topic is named"
run "$SILT" consume -t t -c 0
assert_eq "" "$OUT" "-c 0 prints nothing"
run "$SILT" consume -t t -p 0 -c 3
assert_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "-c 3 stops after three"

# Formats.
run "$SILT" consume -t t -p 0 -c 1 --format json
assert_eq '{"topic":"t","partition":0,"offset":0,"timestamp":1000,"key":"k0","value":"v0","headers":[]}' "$OUT" "json format"
run "$SILT" consume -t t -p 0 -c 2 --format '%t|%p|%o|%k|%s|%T|%h%%\t.\n'
assert_eq "$(printf 't|0|0|k0|v0|1000|%%\t.\nt|0|1|k1|v1|2000|%%\t.')" "$OUT" "template tokens and escapes"
expect_fail 2 "unknown template token" "$SILT" consume -t t --format '%q'
printf 'x\n' | "$SILT" produce -t nulls -H only-key-header=
run "$SILT" consume -t nulls --format json
assert_contains "$OUT" '"key":null' "a null key prints as null"
# kcat's length tokens and NULL marker: %K and %S are the key's and value's lengths, -1 for
# a null; -Z prints a null as NULL, so that it differs from an empty key or value.
printf 'abc\n\n' | "$SILT" produce -t lens -p 0 -k wxyz
printf 'hello\n' | "$SILT" produce -t lens -p 0
run "$SILT" consume -t lens --format '%K|%S|%k|%s\n'
assert_eq "$(printf '4|3|wxyz|abc\n4|0|wxyz|\n-1|5||hello')" "$OUT" "%K and %S print lengths, -1 for a null key"
run "$SILT" consume -t lens -Z --format '%k|%s\n'
assert_eq "$(printf 'wxyz|abc\nwxyz|\nNULL|hello')" "$OUT" "-Z prints a null key as NULL and an empty value as nothing"

# JSON round trip, byte for byte, with binary keys, values and headers.
python_gen() {
  /usr/bin/python3 - "$@" <<'PY'
import base64, json, random, sys
random.seed(7)
def b(n):
    raw = bytes(random.getrandbits(8) for _ in range(n))
    return {"base64": base64.b64encode(raw).decode()}
for i in range(300):
    rec = {"timestamp": 1700000000000 + i,
           "key": None if i % 5 == 0 else (b(i % 17) if i % 2 else "k\u00e9y\t%d" % i),
           "value": b(i * 3) if i % 3 else "line\nwith \"quotes\" \\ and \u2603 %d" % i,
           "headers": [{"key": "h%d" % j, "value": (b(j) if j % 2 else None)} for j in range(i % 4)]}
    print(json.dumps(rec, ensure_ascii=False))
PY
}
python_gen >"$TMP/bin.json"
"$SILT" produce -t bin --format json -z lz4 "$TMP/bin.json"
"$SILT" consume -t bin --format json >"$TMP/bin.out1"
"$SILT" produce -t bin-copy --format json <"$TMP/bin.out1"
"$SILT" consume -t bin-copy --format json | sed 's/^{"topic":"bin-copy"/{"topic":"bin"/' >"$TMP/bin.out2"
assert_eq 300 "$(wc -l <"$TMP/bin.out1")" "all binary records consumed"
assert_files_equal "$TMP/bin.out1" "$TMP/bin.out2" "consume json | produce json copies every byte"
assert_contains "$(cat "$TMP/bin.out1")" '{"base64":"' "non-UTF-8 bytes use the base64 marker"
/usr/bin/python3 - "$TMP/bin.json" "$TMP/bin.out1" <<'PY'
import base64, json, sys
def raw(v):
    if v is None: return None
    if isinstance(v, dict): return base64.b64decode(v["base64"])
    return v.encode()
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
for x, y in zip(a, b):
    assert raw(x["key"]) == raw(y["key"]), (x, y)
    assert raw(x["value"]) == raw(y["value"]), (x, y)
    assert x["timestamp"] == y["timestamp"]
    assert [(h["key"], raw(h["value"])) for h in x["headers"]] == \
           [(h["key"], raw(h["value"])) for h in y["headers"]]
assert len(a) == len(b)
PY
assert_eq 0 $? "consumed JSON decodes to the produced bytes"

# A closed pipe ends quietly with exit 0.
seq 1 300000 | "$SILT" produce -t many
"$SILT" consume -t many 2>"$TMP/pipe.err" | head -1 >"$TMP/pipe.out"
assert_eq "0 0" "${PIPESTATUS[0]} ${PIPESTATUS[1]}" "consume | head -1 exits 0"
assert_eq "1" "$(cat "$TMP/pipe.out")" "head got the first record"
assert_eq "" "$(cat "$TMP/pipe.err")" "no error text on a closed pipe"

# Reading does not need the lock: a producer holding it does not stop a consumer.
mkfifo "$TMP/hold"
"$SILT" produce -t t -p 1 <"$TMP/hold" &
BG_PIDS+=($!)
exec 7>"$TMP/hold"
sleep 0.3
run "$SILT" consume -t t -p 1
assert_eq "$(printf 'p1a\np1b\np1c')" "$OUT" "consume works while a producer holds the lock"
# ... and records a group's position meanwhile: the second run resumes after it.
run "$SILT" consume -t t -p 1 -g locked-readers
assert_eq "0" "$RC" "consume -g exits 0 while a producer holds the lock"
run "$SILT" consume -t t -p 1 -g locked-readers
assert_eq "" "$OUT" "consume -g resumed after the position recorded under the lock"
exec 7>&-
wait "${BG_PIDS[0]}"
BG_PIDS=()

# Follow mode: woken by a later produce, across segment rolls and deleted old segments.
"$SILT" topic create live --config segment.bytes=4096
"$SILT" consume -t live -f --format '%o %s\n' >"$TMP/follow.out" 2>"$TMP/follow.err" &
follower=$!
BG_PIDS+=($follower)
sleep 1
# An idle follower sleeps: almost no CPU time while waiting.
ticks=$(awk '{print $14 + $15}' "/proc/$follower/stat")
if [ "$ticks" -lt 30 ]; then pass; else fail "idle follower used $ticks clock ticks (busy polling?)"; fi
echo "first" | "$SILT" produce -t live
got_first() { grep -q '^0 first$' "$TMP/follow.out"; }
if wait_for 10 got_first; then pass; else fail "follower was not woken by a later produce: $(cat "$TMP/follow.out")"; fi
# Enough batches to roll several 4 KiB segments.
for i in $(seq 1 12); do
  seq 1 40 | sed "s/^/batch$i-/" | "$SILT" produce -t live
done
got_all() { [ "$(wc -l <"$TMP/follow.out")" -ge 481 ]; }
if wait_for 15 got_all; then pass; else fail "follower missed records across segment rolls: $(wc -l <"$TMP/follow.out") of 481"; fi
segs=$(ls "$SILT_DATA_DIR/live-0" | grep -c '\.log$')
if [ "$segs" -ge 3 ]; then pass; else fail "expected several segments, found $segs"; fi
# Old segments deleted underneath (as retention does) while the follower waits.
for f in $(ls "$SILT_DATA_DIR/live-0"/*.log | sort | head -n $((segs - 1))); do
  rm -f "$f" "${f%.log}.index" "${f%.log}.timeindex"
done
echo "after-retention" | "$SILT" produce -t live 2>"$TMP/prod.err"
got_after() { grep -q 'after-retention$' "$TMP/follow.out"; }
if wait_for 10 got_after; then pass; else fail "follower stopped after old segments were deleted"; fi
assert_eq "$(seq 0 481)" "$(cut -d' ' -f1 "$TMP/follow.out")" "follower printed every offset once, in order"
kill -INT "$follower"
wait "$follower"
assert_eq 0 $? "Ctrl-C ends a follower with exit 0"
BG_PIDS=()
assert_eq "" "$(cat "$TMP/follow.err")" "follower wrote nothing to stderr"

# Follow from the end with a count: exits once it has seen N new records.
"$SILT" consume -t t -p 1 -o end -f -c 2 >"$TMP/fc.out" &
fc=$!
BG_PIDS+=($fc)
sleep 0.5
printf 'n1\nn2\nn3\n' | "$SILT" produce -t t -p 1
if wait_for 10 bash -c "! kill -0 $fc 2>/dev/null"; then pass; else fail "-f -c 2 did not exit after two new records"; fi
wait "$fc"
BG_PIDS=()
assert_eq "$(printf 'n1\nn2')" "$(cat "$TMP/fc.out")" "-o end -f -c 2 prints just the new records"

# Groups: the next run with the same group resumes after the last printed record.
run "$SILT" consume -t t -p 0 -g g1 -c 4
assert_eq "$(printf 'v0\nv1\nv2\nv3')" "$OUT" "group: first run"
run "$SILT" consume -t t -p 0 -g g1 -c 3
assert_eq "$(printf 'v4\nv5\nv6')" "$OUT" "group: second run resumes"
run "$SILT" consume -t t -p 0 -g g1
assert_eq "$(printf 'v7\nv8\nv9')" "$OUT" "group: third run reads the rest"
run "$SILT" consume -t t -p 0 -g g1
assert_eq "" "$OUT" "group: nothing new"
run "$SILT" consume -t t -p 0 -g g2 -o -1
assert_eq "v9" "$OUT" "a new group starts at -o"
run "$SILT" group describe g1 --format json
assert_contains "$OUT" '"partition":0,"committed_offset":10' "the group's position is recorded"

# A topic large enough (over 16 MiB in one segment) that consume formats it on two threads:
# the output is byte for byte what was produced, in order, in every format, and a closed pipe
# still ends quietly.
seq 1 400000 | awk '{printf "line %08d %s\n", $1, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' > "$TMP/big.txt"
"$SILT" produce -d "$TMP/bigdata" -t big "$TMP/big.txt"
"$SILT" consume -d "$TMP/bigdata" -t big > "$TMP/big.out"
if cmp -s "$TMP/big.txt" "$TMP/big.out"; then pass; else fail "two-thread consume differs from the input"; fi
run "$SILT" consume -d "$TMP/bigdata" -t big --format '%o\n'
assert_eq "$(seq 0 399999)" "$OUT" "two-thread consume keeps offset order with a template"
run "$SILT" consume -d "$TMP/bigdata" -t big -o 123456 --format json
assert_eq '{"topic":"big","partition":0,"offset":123456,"timestamp":' "$(printf '%s\n' "$OUT" | head -1 | cut -c1-57)" "two-thread consume from an offset, as JSON"
assert_eq "276544" "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" "two-thread consume from an offset prints the rest"
"$SILT" consume -d "$TMP/bigdata" -t big | head -3 > "$TMP/big.head"
status=${PIPESTATUS[0]}
assert_eq "0" "$status" "two-thread consume into a closed pipe exits 0"
assert_eq "$(head -3 "$TMP/big.txt")" "$(cat "$TMP/big.head")" "two-thread consume into head"

# A data directory written by a real Kafka broker (read-only: no silt metadata in it).
fixtures="$SILT_SOURCE_DIR/../shared/fixtures/kafka-data/kafka-3.7-kraft"
if [ -d "$fixtures" ]; then
  cp -r "$fixtures" "$TMP/kafka"
  run "$SILT" consume -d "$TMP/kafka" -t TestTopicPatient --format '%p:%o\n'
  assert_eq "$(printf '0:0\n0:1\n0:2')" "$OUT" "records written by Kafka 3.7 are read"
  run "$SILT" consume -d "$TMP/kafka" -t __consumer_offsets --format '%p\n' -c 1
  assert_eq "6" "$OUT" "only the partitions present in a copied directory are read"
  if diff -r "$fixtures" "$TMP/kafka" >/dev/null; then pass; else fail "consume changed a Kafka data dir"; fi
else
  skip_part fixtures "Kafka data-dir cases: $fixtures is absent"
fi

finish
