#!/usr/bin/env bash
# Signals and pipes: SIGINT or SIGTERM during produce sends what was read and says how many
# records were written; a reader that goes away (| head) ends dump-segment and verify-crc with
# exit 0 as it does consume; a real write error is still an error.
source "$(dirname "$0")/lib.sh"

# interrupt_produce SIGNAL TOPIC INPUT...: produce INPUT... (a file, then a pipe that stays open)
# and send SIGNAL once the file's records are in; $RC and $ERR as from run.
interrupt_produce() {
  local sig=$1 topic=$2
  shift 2
  mkfifo "$TMP/fifo.$topic"
  sleep 30 >"$TMP/fifo.$topic" &
  local holder=$!
  BG_PIDS+=("$holder")
  "$SILT" produce -t "$topic" "$@" "$TMP/fifo.$topic" 2>"$TMP/.err" &
  local pid=$!
  wait_for 10 test -e "$SILT_DATA_DIR/$topic-0" || fail "produce to $topic did not start"
  sleep 0.5  # the file is read; produce waits on the quiet pipe
  kill "-$sig" "$pid"
  wait "$pid"
  RC=$?
  ERR=$(cat "$TMP/.err")
  kill "$holder" 2>/dev/null
}

seq 1 1000 >"$TMP/lines.txt"
interrupt_produce INT t "$TMP/lines.txt"
assert_eq 2 "$RC" "SIGINT during produce: exit 2"
assert_eq "silt: error: interrupted at $TMP/fifo.t line 1: 1000 record(s) before it were written to topic 't'" \
  "$ERR" "SIGINT during produce says how many records were written"
assert_eq 1000 "$("$SILT" consume -t t | wc -l)" "every record before the interrupt was written"
interrupt_produce TERM u "$TMP/lines.txt"
assert_contains "$ERR" "1000 record(s) before it were written" "SIGTERM during produce"
expect_ok "the data dir is clean after an interrupt" "$SILT" verify-crc "$SILT_DATA_DIR"

# A reader that goes away.
seq 1 200000 | "$SILT" produce -t big
seg="$SILT_DATA_DIR/big-0/00000000000000000000.log"
"$SILT" dump-segment --records "$seg" | head -1 >/dev/null
assert_eq "0" "${PIPESTATUS[0]}" "dump-segment | head exits 0"
"$SILT" dump-segment --format json "$seg" "$seg" | head -c 10 >/dev/null
assert_eq "0" "${PIPESTATUS[0]}" "dump-segment --format json of two files | head exits 0"
"$SILT" consume -t big | head -1 >/dev/null
assert_eq "0" "${PIPESTATUS[0]}" "consume | head exits 0"
"$SILT" topic list | head -0
assert_eq "0" "${PIPESTATUS[0]}" "topic list | head -0 exits 0"
# A write error that is not a closed pipe is still an error.
if [ -w /dev/full ]; then
  run sh -c "'$SILT' dump-segment --records '$seg' >/dev/full"
  assert_eq 2 "$RC" "dump-segment >/dev/full: exit 2"
  assert_contains "$ERR" "writing to standard output failed" "a full device is reported"
fi
finish
