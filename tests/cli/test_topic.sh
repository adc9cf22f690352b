#!/usr/bin/env bash
# silt topic: create, list, describe, delete, alter-config, JSON output, and bad input.
source "$(dirname "$0")/lib.sh"

expect_fail 2 "list on a missing data dir" "$SILT" topic list
assert_contains "$ERR" "does not exist" "missing data dir message"

expect_ok "create" "$SILT" topic create orders --partitions 3 --config retention.ms=3600000
assert_eq "" "$OUT" "create prints nothing in a pipe"
expect_ok "create with defaults" "$SILT" topic create logs
expect_ok "create with -d" "$SILT" topic create -d "$TMP/other" elsewhere
expect_ok "list the other dir" "$SILT" topic list -d "$TMP/other"
assert_eq "elsewhere	1" "$OUT" "-d selects the data dir"
SILT_DATA_DIR="$TMP/other" run "$SILT" topic list
assert_eq "elsewhere	1" "$OUT" "SILT_DATA_DIR selects the data dir"

expect_ok "list" "$SILT" topic list
assert_eq "$(printf 'logs\t1\norders\t3')" "$OUT" "list in a pipe is tab-separated, no header"
expect_ok "list json" "$SILT" topic list --format json
assert_eq '{"topic":"logs","partitions":1,"internal":false}
{"topic":"orders","partitions":3,"internal":false}' "$OUT" "list json: one object per line"

expect_fail 2 "create an existing topic" "$SILT" topic create orders
expect_fail 2 "bad topic name" "$SILT" topic create "bad/name"
expect_fail 2 "zero partitions" "$SILT" topic create zero --partitions 0
expect_fail 2 "unknown config" "$SILT" topic create t1 --config no.such.config=1
assert_contains "$ERR" "no.such.config" "unknown config is named"
expect_fail 2 "bad config value" "$SILT" topic create t2 --config retention.ms=soon
assert_contains "$ERR" "retention.ms" "bad config value names the key"
expect_fail 2 "config without =" "$SILT" topic create t3 --config retention.ms
expect_fail 2 "unknown subcommand" "$SILT" topic frobnicate
expect_fail 2 "missing subcommand" "$SILT" topic

printf 'a\nb\nc\n' | "$SILT" produce -t orders -p 1
expect_ok "describe" "$SILT" topic describe orders
assert_contains "$OUT" "Topic: orders" "describe names the topic"
assert_contains "$OUT" "Partitions: 3" "describe shows the partition count"
assert_contains "$OUT" "Configs: retention.ms=3600000" "describe shows overrides"
assert_contains "$OUT" "$(printf '1\t-\t-\t-\t0\t3\t')" "describe shows partition 1 with offsets 0..3"
expect_ok "describe json" "$SILT" topic describe orders --format json
assert_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "describe json is one line"
assert_contains "$OUT" '"partition_count":3' "describe json partition count"
assert_contains "$OUT" '"log_end_offset":3' "describe json log end"
assert_contains "$OUT" '"configs":{"retention.ms":"3600000"}' "describe json overrides"
assert_contains "$OUT" '"max.message.bytes":' "describe json effective configs"
expect_fail 2 "describe an unknown topic" "$SILT" topic describe nope
assert_contains "$ERR" "nope" "unknown topic is named"

expect_ok "alter-config set" "$SILT" topic alter-config orders --config segment.bytes=1048576 --config retention.ms=60000
run "$SILT" topic describe orders --format json
assert_contains "$OUT" '"configs":{"retention.ms":"60000","segment.bytes":"1048576"}' "alter-config sets overrides"
expect_ok "alter-config delete" "$SILT" topic alter-config orders --delete-config retention.ms
run "$SILT" topic describe orders --format json
assert_contains "$OUT" '"configs":{"segment.bytes":"1048576"}' "alter-config removes overrides"
expect_fail 2 "alter-config bad value" "$SILT" topic alter-config orders --config max.message.bytes=-5
expect_fail 2 "alter-config nothing to do" "$SILT" topic alter-config orders
expect_fail 2 "alter-config unknown topic" "$SILT" topic alter-config nope --config retention.ms=1

expect_ok "delete" "$SILT" topic delete orders
run "$SILT" topic list
assert_eq "logs	1" "$OUT" "deleted topic is gone"
assert_eq "" "$(ls "$SILT_DATA_DIR" | grep '^orders-' || true)" "deleted topic's partition directories are gone"
expect_fail 2 "delete an unknown topic" "$SILT" topic delete orders

# A locked data dir: a producer waiting on its input holds the lock.
mkfifo "$TMP/fifo"
"$SILT" produce -t logs <"$TMP/fifo" &
BG_PIDS+=($!)
exec 7>"$TMP/fifo"
wait_for 10 test -s "$SILT_DATA_DIR/.lock" || true
sleep 0.3
expect_fail 2 "create while another process holds the lock" "$SILT" topic create locked
assert_contains "$ERR" "$SILT_DATA_DIR" "lock error names the data dir"
expect_ok "list works while locked (read-only)" "$SILT" topic list
exec 7>&-
wait "${BG_PIDS[0]}"
assert_eq 0 $? "the producer holding the lock exits 0 at end of input"
BG_PIDS=()
expect_ok "create after the lock is released" "$SILT" topic create locked

finish
