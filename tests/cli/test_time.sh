#!/usr/bin/env bash
# The time grammar of -o and --to-datetime: @seconds vs @ms (a plain number below 10^11 is
# seconds), explicit s/ms suffixes, relative times, ISO-8601, offset and time ranges, and human
# times in %T{iso} and dump-segment --iso-time.
source "$(dirname "$0")/lib.sh"

"$SILT" topic create t --partitions 2 >/dev/null
# Ten records one second apart from 1796142136 s (2026-12-01T16:22:16Z) in partition 0.
base=1796142136
for i in $(seq 0 9); do
  printf '{"value":"v%d","timestamp":%d}\n' "$i" $(((base + i) * 1000))
done | "$SILT" produce -t t -p 0 --format json
printf 'a\nb\nc\n' | "$SILT" produce -t t -p 1

run "$SILT" consume -t t -p 0 -o @$((base + 7))
assert_eq "$(printf 'v7\nv8\nv9')" "$OUT" "@seconds is seconds, not milliseconds"
run "$SILT" consume -t t -p 0 -o @$(((base + 7) * 1000))
assert_eq "$(printf 'v7\nv8\nv9')" "$OUT" "@milliseconds"
run "$SILT" consume -t t -p 0 -o @$((base + 8))s
assert_eq "$(printf 'v8\nv9')" "$OUT" "@Ns"
run "$SILT" consume -t t -p 0 -o @$(((base + 8) * 1000))ms
assert_eq "$(printf 'v8\nv9')" "$OUT" "@Nms"
run "$SILT" consume -t t -p 0 -o @2026-12-01T16:22:24Z
assert_eq "$(printf 'v8\nv9')" "$OUT" "@ISO-8601"
# Relative: partition 1 was written just now, partition 0 is in the past or the future of now;
# either way -1h from now splits them unless the clock is within an hour of the records.
now=$(date +%s)
if [ $((now - base)) -gt 7200 ] || [ $((base - now)) -gt 7200 ]; then
  run "$SILT" consume -t t -o @-1h --format '%p:%s\n'
  if [ "$now" -gt "$base" ]; then
    assert_eq "$(printf '1:a\n1:b\n1:c')" "$OUT" "@-1h: only what was written in the last hour"
  else
    assert_eq 13 "$(printf '%s\n' "$OUT" | wc -l)" "@-1h: records dated after now"
  fi
fi
run "$SILT" consume -t t -p 1 -o @-15m
assert_eq "$(printf 'a\nb\nc')" "$OUT" "@-15m"
run "$SILT" consume -t t -p 1 -o @-30s:@-1s
assert_eq "" "$OUT" "@-30s:@-1s: a range in the past holds nothing written now"

# Offset ranges: START up to, not including, END, per partition.
run "$SILT" consume -t t -o 2:5 --format '%p:%o\n'
assert_eq "$(printf '0:2\n0:3\n0:4\n1:2')" "$OUT" "-o 2:5"
run "$SILT" consume -t t -p 0 -o :2
assert_eq "$(printf 'v0\nv1')" "$OUT" "-o :2 starts at the beginning"
run "$SILT" consume -t t -p 0 -o 8:
assert_eq "$(printf 'v8\nv9')" "$OUT" "-o 8: has no end"
run "$SILT" consume -t t -p 0 -o @$((base + 2)):@$((base + 4))
assert_eq "$(printf 'v2\nv3')" "$OUT" "-o @t1:@t2 (seconds)"
run "$SILT" consume -t t -p 0 -o @2026-12-01T16:22:18Z:@2026-12-01T16:22:20Z
assert_eq "$(printf 'v2\nv3')" "$OUT" "-o @iso1:@iso2"
# With -f, a range ends the run once every partition reaches its END.
run timeout 10 "$SILT" consume -t t -p 0 -o 3:5 -f
assert_eq 0 "$RC" "-f with a range exits at the END"
assert_eq "$(printf 'v3\nv4')" "$OUT" "-f with a range"
run timeout 10 "$SILT" consume -t t -p 0 -o 8:end -f
assert_eq "$(printf 'v8\nv9')" "$OUT" "START:end with -f stops at the log end"
expect_fail 2 "a range with a group" "$SILT" consume -t t -o 2:5 -g g
assert_contains "$ERR" "cannot be used with -g" "a range with -g is refused"
expect_fail 2 "a range that ends before it starts" "$SILT" consume -t t -o 5:3
assert_contains "$ERR" "the end comes before the start" "backwards range message"
expect_fail 2 "a range end counted from the end" "$SILT" consume -t t -o 1:-2
expect_fail 2 "a unit without a sign" "$SILT" consume -t t -o @5h
assert_contains "$ERR" "-1h, -15m" "a bad time lists the relative forms"

# Human times.
run "$SILT" consume -t t -p 0 -c 1 --format '%T{iso} %T\n'
assert_eq "2026-12-01T16:22:16.000Z 1796142136000" "$OUT" "%T{iso} and %T"
run "$SILT" dump-segment --iso-time --records "$SILT_DATA_DIR/t-0/00000000000000000000.log"
assert_contains "$OUT" "baseTimestamp: 2026-12-01T16:22:16.000Z" "dump-segment --iso-time batch times"
assert_contains "$OUT" "| offset: 9 timestamp: 2026-12-01T16:22:25.000Z" "dump-segment --iso-time record times"
run "$SILT" dump-segment "$SILT_DATA_DIR/t-0/00000000000000000000.log"
assert_contains "$OUT" "baseTimestamp: 1796142136000" "dump-segment prints milliseconds by default"

# group reset-offsets --to-datetime takes the same TIME.
expect_ok "--to-datetime in seconds" "$SILT" group reset-offsets g --topic t --to-datetime $((base + 6)) --format json
assert_contains "$OUT" '"partition":0,"current_offset":null,"new_offset":6' "--to-datetime seconds"
finish
