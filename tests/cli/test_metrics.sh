#!/usr/bin/env bash
# `silt serve --metrics` (and metrics.listener in a properties file): /metrics scraped from
# the real binary moves after a produce; other paths are 404; a bad address is a usage error.
source "$(dirname "$0")/lib.sh"

if ! command -v curl >/dev/null; then
  skip_part client "curl is not installed: /metrics not scraped"
  finish
fi

printf 'metrics.listener=127.0.0.1:0\n' >"$TMP/server.properties"
"$SILT" serve -c "$TMP/server.properties" -d "$TMP/broker-data" --listen 127.0.0.1:0 \
  2>"$TMP/broker.log" &
BG_PIDS+=("$!")
up() { grep -q "listening on" "$TMP/broker.log"; }
if ! wait_for 20 up; then
  echo "FAIL: the broker did not start:" >&2
  cat "$TMP/broker.log" >&2
  exit 1
fi
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)
M=$(sed -n 's|.*metrics on http://\([0-9.]*:[0-9]*\)/metrics.*|\1|p' "$TMP/broker.log" | head -1)
assert_contains "$M" "127.0.0.1:" "the log names the metrics address"

sample() { printf '%s\n' "$1" | awk -v s="$2" '$1 == s {print $2}'; }
before=$(curl -sf "http://$M/metrics")
assert_contains "$before" "# TYPE silt_requests_total counter" "counters are typed"
assert_eq 0 "$(sample "$before" silt_produce_records_total)" "no records before the produce"

printf 'a\nb\nc\n' | "$SILT" produce -b "$B" -t scraped
after=$(curl -sf "http://$M/metrics")
assert_eq 3 "$(sample "$after" silt_produce_records_total)" "three records counted"
assert_eq 3 "$(sample "$after" 'silt_partition_log_end_offset{partition="0",topic="scraped"}')" \
  "the partition's log end"
produce=$(printf '%s\n' "$after" | awk '$1 ~ /^silt_requests_total\{api="Produce"/ {n += $2} END {print n+0}')
assert_eq 1 "$produce" "one Produce request"
assert_eq 3 "$(sample "$after" 'silt_partition_high_watermark{partition="0",topic="scraped"}')" \
  "the partition's high watermark"
size=$(sample "$after" 'silt_partition_size_bytes{partition="0",topic="scraped"}')
assert_eq 1 "$([ "${size:-0}" -gt 0 ] && echo 1 || echo 0)" "the partition's size in bytes"
assert_eq 0 "$(sample "$after" silt_under_replicated_partitions)" "nothing under-replicated"
assert_eq 0 "$(sample "$after" silt_offline_partitions)" "nothing offline"
assert_contains "$after" "# TYPE silt_log_flush_duration_seconds histogram" "flush latency"
assert_contains "$after" '# TYPE silt_delayed_fetches gauge' "delayed fetches"

# Every family the broker exports is documented in the man page's METRICS section.
man_metrics=$(sed -n '/^\.SH METRICS/,/^\.SH OUTPUT FORMAT/p' "$SILT_SOURCE_DIR/man/silt-serve.1")
undocumented=""
for name in $(printf '%s\n' "$after" | awk '$1 == "#" && $2 == "TYPE" {print $3}'); do
  case "$man_metrics" in
  *"$name"*) ;;
  *) undocumented="$undocumented $name" ;;
  esac
done
assert_eq "" "$undocumented" "every exported metric is in man/silt-serve.1 (METRICS)"
assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://$M/")" "/ is 404"
assert_eq 405 "$(curl -s -o /dev/null -w '%{http_code}' -d x "http://$M/metrics")" "POST is 405"

expect_fail 2 "a bad --metrics" "$SILT" serve -d "$TMP/other" --listen 127.0.0.1:0 \
  --metrics nowhere
assert_contains "$ERR" "--metrics" "the flag is named"
finish
