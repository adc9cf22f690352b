#!/usr/bin/env bash
# silt produce: every flag, the partitioners, codecs, JSON input, limits and bad input.
source "$(dirname "$0")/lib.sh"

# Lines from stdin, one record each; a last line without a newline and empty lines count.
printf 'one\n\nthree\nfour' | "$SILT" produce -t basic
assert_eq 0 $? "produce from stdin"
run "$SILT" consume -t basic
assert_eq "$(printf 'one\n\nthree\nfour')" "$OUT" "lines round-trip, empty and unterminated ones too"
run "$SILT" topic list
assert_eq "basic	1" "$OUT" "a missing topic is created with one partition"

# Files, in order, and - for stdin.
printf 'f1a\nf1b\n' >"$TMP/f1"
printf 'f2a\n' >"$TMP/f2"
echo "mid" | "$SILT" produce -t files "$TMP/f1" - "$TMP/f2"
run "$SILT" consume -t files
assert_eq "$(printf 'f1a\nf1b\nmid\nf2a')" "$OUT" "files and - are read in order"

# -K splits at the first delimiter (several characters allowed); no delimiter: null key.
printf 'k1::v1::x\nnokey\n::empty-key\n' | "$SILT" produce -t keyed -K ::
run "$SILT" consume -t keyed --format json
assert_contains "$OUT" '"key":"k1","value":"v1::x"' "-K splits at the first delimiter"
assert_contains "$OUT" '"key":null,"value":"nokey"' "-K without the delimiter gives a null key"
assert_contains "$OUT" '"key":"","value":"empty-key"' "-K with an empty key"

# -k and -H.
printf 'a\nb\n' | "$SILT" produce -t hdr -k fixed -H trace=abc -H env=prod -H empty=
run "$SILT" consume -t hdr --format '%k|%s|%h\n'
assert_eq "$(printf 'fixed|a|trace=abc,env=prod,empty=\nfixed|b|trace=abc,env=prod,empty=')" "$OUT" "-k and -H on every record"
expect_fail 2 "-k with -K" "$SILT" produce -t hdr -k a -K :
expect_fail 2 "header without =" "$SILT" produce -t hdr -H novalue </dev/null

# -p writes everything to one partition.
"$SILT" topic create four --partitions 4
seq 1 20 | "$SILT" produce -t four -p 2
run "$SILT" consume -t four -p 2 --format '%p\n'
assert_eq 20 "$(printf '%s\n' "$OUT" | grep -c '^2$')" "-p 2 puts all 20 records in partition 2"
expect_fail 2 "a partition the topic lacks" "$SILT" produce -t four -p 9 </dev/null
assert_contains "$ERR" "partition 9" "missing partition is named"

# Keyed records land where Kafka's Java client puts them: toPositive(murmur2(key)) % 7.
# Hashes of "1","12","123","1234","12345" from Kafka's Utils.murmur2 test vectors.
"$SILT" topic create seven --partitions 7
printf '1:a\n12:b\n123:c\n1234:d\n12345:e\n' | "$SILT" produce -t seven -K :
run "$SILT" consume -t seven --format '%k=%p\n'
expected=""
for kv in 1:-1993445489 12:126087238 123:-267702483 1234:-1614185708 12345:-1188365604; do
  k=${kv%%:*}
  h=${kv#*:}
  expected+="$k=$(( (h & 0x7fffffff) % 7 ))"$'\n'
done
assert_eq "$(printf '%s' "$expected" | sort)" "$(printf '%s\n' "$OUT" | sort)" "murmur2 placement matches Kafka"

# Unkeyed records are sticky: a small input fills one batch, so one partition.
seq 1 50 | "$SILT" produce -t seven --partitioner murmur2 -p 0 >/dev/null  # (explicit -p wins)
"$SILT" topic create sticky --partitions 5
seq 1 100 | "$SILT" produce -t sticky
run "$SILT" consume -t sticky --format '%p\n'
assert_eq 1 "$(printf '%s\n' "$OUT" | sort -u | wc -l)" "unkeyed records in one batch stay in one partition"
# ...and move on when a batch is sent: tiny batches spread them.
"$SILT" topic create sticky2 --partitions 5
seq 1 400 | "$SILT" produce -t sticky2 --batch-size 64
run "$SILT" consume -t sticky2 --format '%p\n'
parts=$(printf '%s\n' "$OUT" | sort -u | wc -l)
if [ "$parts" -ge 3 ]; then pass; else fail "sticky partitioner should move on after each batch (used $parts partitions)"; fi

# round-robin: record i to partition i mod N, keyed or not.
"$SILT" topic create rr --partitions 3
printf 'k:1\nk:2\nk:3\nk:4\nk:5\nk:6\n' | "$SILT" produce -t rr -K : --partitioner round-robin
for p in 0 1 2; do
  run "$SILT" consume -t rr -p $p
  assert_eq 2 "$(printf '%s\n' "$OUT" | wc -l)" "round-robin gives partition $p two records"
done
"$SILT" topic create rnd --partitions 4
seq 1 400 | "$SILT" produce -t rnd --partitioner random
run "$SILT" consume -t rnd --format '%p\n'
assert_eq 4 "$(printf '%s\n' "$OUT" | sort -u | wc -l)" "random uses every partition"
expect_fail 2 "unknown partitioner" "$SILT" produce -t rnd --partitioner nope </dev/null

# Every codec round-trips.
seq 1 2000 | sed 's/$/ some repetitive text to compress/' >"$TMP/lines"
for z in none gzip snappy lz4 zstd; do
  "$SILT" produce -t "z-$z" -z "$z" "$TMP/lines"
  "$SILT" consume -t "z-$z" >"$TMP/back-$z"
  assert_files_equal "$TMP/lines" "$TMP/back-$z" "-z $z round-trips"
done
run "$SILT" topic describe z-none --format json
none_size=$(printf '%s' "$OUT" | grep -oE '"size":[0-9]+' | head -1 | cut -d: -f2)
run "$SILT" topic describe z-zstd --format json
zstd_size=$(printf '%s' "$OUT" | grep -oE '"size":[0-9]+' | head -1 | cut -d: -f2)
if [ "$zstd_size" -lt "$none_size" ]; then pass; else fail "zstd should store less ($zstd_size vs $none_size)"; fi
expect_fail 2 "unknown codec" "$SILT" produce -t x -z brotli </dev/null

# --batch-size: smaller batches cost more header bytes for the same records.
"$SILT" produce -t small-batches --batch-size 200 "$TMP/lines"
run "$SILT" topic describe small-batches --format json
small_size=$(printf '%s' "$OUT" | grep -oE '"size":[0-9]+' | head -1 | cut -d: -f2)
if [ "$small_size" -gt "$none_size" ]; then pass; else fail "--batch-size 200 should make more batches ($small_size vs $none_size)"; fi
expect_fail 2 "bad batch size" "$SILT" produce -t x --batch-size 0 </dev/null

# --linger-ms: records waiting in a pipe are appended while the producer still runs.
mkfifo "$TMP/in"
"$SILT" produce -t linger --linger-ms 20 <"$TMP/in" &
BG_PIDS+=($!)
exec 8>"$TMP/in"
echo "early" >&8
seen_early() { [ "$("$SILT" consume -t linger 2>/dev/null)" == "early" ]; }
if wait_for 10 seen_early; then pass; else fail "--linger-ms: a waiting record should be appended before input ends"; fi
echo "late" >&8
exec 8>&-
wait "${BG_PIDS[0]}"
assert_eq 0 $? "the lingering producer exits 0"
BG_PIDS=()
run "$SILT" consume -t linger
assert_eq "$(printf 'early\nlate')" "$OUT" "both records are there"

# --no-create.
expect_fail 2 "--no-create on a missing topic" "$SILT" produce -t missing --no-create </dev/null
assert_contains "$ERR" "missing" "--no-create names the topic"
run "$SILT" topic list
assert_not_contains "$OUT" "missing" "--no-create creates nothing"

# Unreadable input: nothing is written, not even from the files before it.
printf 'x\n' >"$TMP/ok"
printf 'y\n' >"$TMP/secret"
chmod 000 "$TMP/secret"
if [ "$(id -u)" -ne 0 ]; then
  expect_fail 2 "unreadable file" "$SILT" produce -t unread "$TMP/ok" "$TMP/secret"
  assert_contains "$ERR" "$TMP/secret" "unreadable file is named"
fi
# A file that opens but cannot be read (even by root): a clear error naming it.
expect_fail 2 "read error" "$SILT" produce -t readerr /proc/self/mem
assert_contains "$ERR" "/proc/self/mem" "the unreadable file is named"
expect_fail 2 "missing file" "$SILT" produce -t unread "$TMP/ok" "$TMP/no-such-file"
assert_contains "$ERR" "no-such-file" "missing file is named"
expect_fail 2 "a directory as input" "$SILT" produce -t unread "$TMP"
run "$SILT" topic list
assert_not_contains "$OUT" "unread" "nothing is created when an input cannot be opened"

# An over-long line: error with its line number, the lines before it written, nothing after.
"$SILT" topic create limited --config max.message.bytes=1000
{
  seq 1 5
  head -c 5000 /dev/zero | tr '\0' x
  echo
  echo after
} >"$TMP/long"
expect_fail 2 "over-long line" "$SILT" produce -t limited "$TMP/long"
assert_contains "$ERR" "line 6" "over-long line is named by number"
assert_contains "$ERR" "$TMP/long" "over-long line's file is named"
run "$SILT" consume -t limited
assert_eq "$(seq 1 5)" "$OUT" "records before the long line are written, nothing after it"
run "$SILT" topic describe limited --format json
assert_contains "$OUT" '"log_end_offset":5' "the log ends after the last whole batch"

# JSON input: fields, nulls, base64, timestamps, and errors with line numbers.
cat >"$TMP/in.json" <<'JSON'
{"key":"k","value":"v","timestamp":1767323045000,"headers":[{"key":"h","value":"x"}]}
{"key":null,"value":{"base64":"AP8="}}
{"value":{"nested":[1,2]},"topic":"ignored","partition":9,"offset":77}
JSON
expect_ok "json input" "$SILT" produce -t js --format json "$TMP/in.json"
run "$SILT" consume -t js --format json
line1=$(printf '%s\n' "$OUT" | sed -n 1p)
assert_eq '{"topic":"js","partition":0,"offset":0,"timestamp":1767323045000,"key":"k","value":"v","headers":[{"key":"h","value":"x"}]}' "$line1" "json input keeps timestamp, key and headers"
assert_contains "$OUT" '"key":null,"value":{"base64":"AP8="}' "base64 values decode to bytes"
assert_contains "$OUT" '"value":"{\"nested\":[1,2]}"' "other JSON values are stored as JSON text"
printf '{"value":"ok"}\n{"value": nope}\n' >"$TMP/bad.json"
expect_fail 2 "invalid json" "$SILT" produce -t js2 --format json "$TMP/bad.json"
assert_contains "$ERR" "line 2" "invalid json names the line"
expect_fail 2 "-K with json" "$SILT" produce -t js2 --format json -K : </dev/null
expect_fail 2 "unknown input format" "$SILT" produce -t js2 --format yaml </dev/null

# No progress output in a pipe, nothing on stdout.
seq 1 100000 >"$TMP/many"
run "$SILT" produce -t quiet "$TMP/many"
assert_eq "" "$OUT$ERR" "produce is silent in a pipe"
expect_fail 2 "produce without -t" "$SILT" produce </dev/null

# Bounded memory on a large input (the contract is 1 GiB in at most 64 MiB; 256 MiB here).
{ head -c $((256 * 1024 * 1024)) /dev/zero | tr '\0' 'a' | fold -w 199; echo; } >"$TMP/big"
/usr/bin/time -f '%M' -o "$TMP/rss" "$SILT" produce -t big "$TMP/big"
assert_eq 0 $? "large produce succeeds"
rss_kib=$(tail -1 "$TMP/rss")
echo "produce of 256 MiB: peak RSS $rss_kib KiB"
if [ "$rss_kib" -le $((64 * 1024)) ]; then pass; else fail "peak RSS $rss_kib KiB is over 64 MiB"; fi
run "$SILT" topic describe big --format json
assert_contains "$OUT" "\"log_end_offset\":$(wc -l <"$TMP/big")" "every line of the large input is a record"
rm -f "$TMP/big"

finish
