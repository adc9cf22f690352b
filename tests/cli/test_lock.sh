#!/usr/bin/env bash
# A locked data directory: the error names the process that holds it and says what to do
# (a broker: use -b; another writer: wait for it or stop it).
source "$(dirname "$0")/lib.sh"

echo first | "$SILT" produce -t t
mkfifo "$TMP/fifo"
sleep 30 >"$TMP/fifo" &
BG_PIDS+=($!)
"$SILT" produce -t t "$TMP/fifo" 2>"$TMP/writer.err" &
writer=$!
BG_PIDS+=("$writer")
wait_for 10 grep -qx "$writer" "$SILT_DATA_DIR/.lock" || fail "the writer did not take the lock"

expect_fail 2 "topic create while produce holds the lock" "$SILT" topic create other
assert_contains "$ERR" "in use by process $writer (silt produce -t t $TMP/fifo); wait for it to finish, or stop it" \
  "the holder is named with its command and what to do"
expect_fail 2 "a second produce" "$SILT" produce -t t </dev/null
assert_contains "$ERR" "process $writer" "a second writer names the first"
# Readers take no lock.
run "$SILT" consume -t t
assert_eq "first" "$OUT" "consume reads while a writer holds the lock"
kill "$writer"
wait "$writer" 2>/dev/null
expect_ok "the lock goes with the writer" "$SILT" topic create other
finish
