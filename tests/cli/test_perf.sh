#!/usr/bin/env bash
# silt perf produce|consume against a data dir (-d) and against `silt serve` (-b): the JSON
# figures (records, bytes, rates, latency percentiles), interval lines, --throughput bounding
# the rate, the records really written, end-to-end latency, and the usage errors.
source "$(dirname "$0")/lib.sh"

# jget JSON PATH: one field of a JSON object (PATH like latency_ms.p99), printed as Python does.
jget() {
  python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"
}
# jcheck JSON EXPR WHAT: EXPR (Python, over the object `j`) holds.
jcheck() {
  if python3 -c 'import json,sys
j = json.loads(sys.argv[1])
L = j.get("latency_ms")
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; then pass; else fail "$3: [$2] does not hold for $1"; fi
}
total_line() { printf '%s\n' "$1" | grep '"type":"total"'; }

# ---- a data directory -------------------------------------------------------------------------
D="$TMP/perf-data"
expect_ok "perf produce -d" "$SILT" perf produce -d "$D" -t p -n 3000 -s 50 --format json
T=$(total_line "$OUT")
assert_eq 1 "$(printf '%s\n' "$OUT" | grep -c '"type":"total"')" "one total line"
assert_eq produce "$(jget "$T" command)" "the total says what ran"
assert_eq 3000 "$(jget "$T" records)" "every record counted"
assert_eq 3000 "$(jget "$T" sent)" "every record sent"
assert_eq 0 "$(jget "$T" failed)" "none failed"
assert_eq 150000 "$(jget "$T" bytes)" "bytes are records x size"
jcheck "$T" 'j["records_per_sec"] > 0 and j["mb_per_sec"] > 0 and j["elapsed_s"] > 0' "rates"
jcheck "$T" 'all(k in j["latency_ms"] for k in ("avg","p50","p99","p999","max"))' "latency fields"
jcheck "$T" '0 <= L["p50"] <= L["p99"] <= L["p999"] <= L["max"]' "percentiles in order"
# The records are really there, each of the asked size.
assert_eq 3000 "$("$SILT" consume -d "$D" -t p | wc -l)" "the records are in the log"
assert_eq 50 "$("$SILT" consume -d "$D" -t p --format '%S\n' | sort -u)" "every value has --record-size bytes"
assert_eq "" "$("$SILT" consume -d "$D" -t p --format '%k' -Z | tr -d 'NUL')" "records have null keys"
# Neighbouring values differ (a block of text, not one value repeated).
assert_eq 3000 "$("$SILT" consume -d "$D" -t p | sort -u | wc -l)" "values differ"

# --throughput: 80 records at 200/s take at least (80-1)/200 s, and not many times that.
expect_ok "perf produce --throughput" "$SILT" perf produce -d "$D" -t slow -n 80 --throughput 200 --format json
T=$(total_line "$OUT")
jcheck "$T" '0.37 <= j["elapsed_s"] < 4' "--throughput 200 bounds the rate (elapsed)"
jcheck "$T" 'j["records_per_sec"] <= 220' "--throughput 200 bounds the rate (records/s)"
# A slow run still sees each record's own latency: records wait for linger, not for the end.
jcheck "$T" 'j["latency_ms"]["p50"] < 200' "latency is per record, not the run's length"

# Interval lines every --interval-ms, then the total.
expect_ok "perf produce intervals" "$SILT" perf produce -d "$D" -t iv -n 120 --throughput 200 --interval-ms 150 --format json
n=$(printf '%s\n' "$OUT" | grep -c '"type":"interval"')
if [ "$n" -ge 3 ]; then pass; else fail "expected at least 3 interval lines, got $n: $OUT"; fi
assert_contains "$(printf '%s\n' "$OUT" | tail -1)" '"type":"total"' "the total comes last"
sum=$(printf '%s\n' "$OUT" | grep '"type":"interval"' | python3 -c 'import json,sys; print(sum(json.loads(l)["records"] for l in sys.stdin))')
assert_eq 120 "$sum" "the intervals add up to the run"

# Text output.
expect_ok "perf produce text" "$SILT" perf produce -d "$D" -t txt -n 100 -z zstd
for word in "total: 100 records" "records/s" "MB/s" "p50" "p99 " "p99.9" "max"; do
  assert_contains "$OUT" "$word" "text total line"
done

# perf consume reads to the end, or -n records; fewer than -n before the timeout is an error.
expect_ok "perf consume -d" "$SILT" perf consume -d "$D" -t p --format json
T=$(total_line "$OUT")
assert_eq consume "$(jget "$T" command)" "consume total"
assert_eq 3000 "$(jget "$T" records)" "perf consume reads every record"
assert_eq 150000 "$(jget "$T" bytes)" "and counts their bytes"
expect_ok "perf consume -n" "$SILT" perf consume -d "$D" -t p -n 1000 --format json
assert_eq 1000 "$(jget "$(total_line "$OUT")" records)" "perf consume -n stops at N"
expect_fail 2 "perf consume -n more than there are" "$SILT" perf consume -d "$D" -t p -n 3500 --timeout-ms 300
assert_contains "$ERR" "only 3000 of 3500" "says how many arrived"

# Usage errors.
expect_fail 2 "--acks without -b" "$SILT" perf produce -d "$D" -t p -n 1 --acks 1
assert_contains "$ERR" "-b" "names -b"
expect_fail 2 "--throughput 0" "$SILT" perf produce -d "$D" -t p -n 1 --throughput 0
expect_fail 2 "-n 0" "$SILT" perf produce -d "$D" -t p -n 0
expect_fail 2 "a record over max.message.bytes" "$SILT" perf produce -d "$D" -t p -n 1 -s 2000000
assert_contains "$ERR" "max.message.bytes" "names the limit"
expect_fail 2 "perf without a subcommand" "$SILT" perf
expect_fail 2 "a missing topic" "$SILT" perf consume -d "$D" -t missing

# ---- against silt serve -------------------------------------------------------------------------
"$SILT" serve -d "$TMP/broker-data" --listen 127.0.0.1:0 2>"$TMP/broker.log" &
BG_PIDS+=("$!")
listening() { grep -q "listening on" "$TMP/broker.log"; }
if ! wait_for 20 listening; then
  echo "FAIL: the broker did not start:" >&2
  cat "$TMP/broker.log" >&2
  exit 1
fi
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)

for acks in 0 1 all; do
  expect_ok "perf produce -b --acks $acks" "$SILT" perf produce -b "$B" -t "net-$acks" -n 20000 -s 100 --acks "$acks" -z lz4 --format json
  T=$(total_line "$OUT")
  assert_eq 20000 "$(jget "$T" records)" "acks=$acks: every record acknowledged"
  assert_eq 0 "$(jget "$T" failed)" "acks=$acks: none failed"
  jcheck "$T" '0 <= L["p50"] <= L["p99"] <= L["p999"] <= L["max"] < 60000' "acks=$acks: latency percentiles"
done
if wait_for 10 test "$("$SILT" consume -b "$B" -t net-all | wc -l)" -eq 20000; then pass; else fail "the broker holds the 20000 records"; fi

expect_ok "perf produce -b --throughput" "$SILT" perf produce -b "$B" -t net-slow -n 100 --throughput 250 --format json
T=$(total_line "$OUT")
jcheck "$T" '0.37 <= j["elapsed_s"] < 4 and j["records_per_sec"] <= 275' "-b: --throughput 250 bounds the rate"
jcheck "$T" 'j["latency_ms"]["p50"] < 200' "-b: latency per record at a low rate"

expect_ok "perf consume -b" "$SILT" perf consume -b "$B" -t net-all --format json
T=$(total_line "$OUT")
assert_eq 20000 "$(jget "$T" records)" "perf consume -b reads every record"
assert_eq 2000000 "$(jget "$T" bytes)" "perf consume -b counts their bytes"

# End to end: a consumer waiting at the end while a producer runs sees young records.
"$SILT" topic create -b "$B" e2e >/dev/null
"$SILT" perf consume -b "$B" -t e2e -o end -n 300 --timeout-ms 15000 --format json >"$TMP/e2e.json" 2>"$TMP/e2e.err" &
CPID=$!
sleep 0.5
expect_ok "perf produce for e2e" "$SILT" perf produce -b "$B" -t e2e -n 300 --throughput 1000
if wait "$CPID"; then pass; else fail "perf consume -o end -n 300: $(cat "$TMP/e2e.err")"; fi
T=$(total_line "$(cat "$TMP/e2e.json")")
assert_eq 300 "$(jget "$T" records)" "the waiting consumer got every record"
jcheck "$T" 'j["latency_ms"]["p50"] < 5000' "end-to-end latency is that of live records"

finish
