#!/usr/bin/env bash
# One store of committed offsets: a group committed through `silt serve` is seen by the local
# `group` commands once the broker stops, and offsets committed locally are what the broker
# serves when it starts; while the broker runs, local changes are refused with a pointer to -b.
source "$(dirname "$0")/lib.sh"

D="$TMP/d"
expect_ok "topic create" "$SILT" topic create -d "$D" t --partitions 2
seq 1 10 | "$SILT" produce -d "$D" -t t -p 0
seq 11 20 | "$SILT" produce -d "$D" -t t -p 1

STARTS=0
start_broker() {
  STARTS=$((STARTS + 1))
  local log="$TMP/broker-$STARTS.log"  # a fresh file: never the last run's "listening on"
  "$SILT" serve -d "$D" --listen 127.0.0.1:0 --set group.initial.rebalance.delay.ms=0 2>"$log" &
  BROKER_PID=$!
  BG_PIDS+=("$BROKER_PID")
  if ! wait_for 20 grep -qs "listening on" "$log"; then
    echo "FAIL: the broker did not start:" >&2
    cat "$log" >&2
    exit 1
  fi
  B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$log" | head -1)
}
stop_broker() {
  kill -TERM "$BROKER_PID"
  wait "$BROKER_PID"
  assert_eq 0 "$?" "the broker stops cleanly"
}
# The "partition":N,"committed_offset":M pairs of `group describe --format json` output, sorted.
committed() { grep -o '"partition":[0-9]*,"committed_offset":[0-9-]*' | sort; }

# ---- broker → local ----------------------------------------------------------------------------
start_broker
expect_ok "consume -b -g" "$SILT" consume -b "$B" -t t -g viaBroker -c 5
expect_ok "group describe -b" "$SILT" group describe -b "$B" viaBroker --format json
FROM_BROKER=$(echo "$OUT" | committed)
assert_contains "$FROM_BROKER" '"committed_offset"' "the broker has offsets for the group"

# While it runs, local changes are refused and point to -b.
expect_fail 2 "local delete beside a broker" "$SILT" group delete -d "$D" viaBroker
assert_contains "$ERR" "a broker is running on it (pid $BROKER_PID); use -b HOST:PORT" "delete names the broker"
expect_fail 2 "local consume -g beside a broker" "$SILT" consume -d "$D" -t t -g viaBroker
assert_contains "$ERR" "a broker is running on it (pid $BROKER_PID); use -b HOST:PORT" "consume -g names the broker"
stop_broker

expect_ok "group list -d" "$SILT" group list -d "$D"
assert_contains "$OUT" "viaBroker" "the broker's group is listed offline"
expect_ok "group describe -d" "$SILT" group describe -d "$D" viaBroker --format json
assert_eq "$FROM_BROKER" "$(echo "$OUT" | committed)" "offline describe shows the broker's offsets"
# A local consumer resumes where the broker's group stopped: 20 records in all.
expect_ok "consume -d -g resumes" "$SILT" consume -d "$D" -t t -g viaBroker
assert_eq 15 "$(echo "$OUT" | grep -c .)" "the local consumer reads only what the group has not"

# ---- local → broker ----------------------------------------------------------------------------
expect_ok "consume -d -g" "$SILT" consume -d "$D" -t t -g local -p 1 -c 3
expect_ok "reset-offsets -d" "$SILT" group reset-offsets -d "$D" local --topic t --to-offset 2 --execute
expect_ok "group describe -d local" "$SILT" group describe -d "$D" local --format json
FROM_LOCAL=$(echo "$OUT" | committed)
assert_eq "$(printf '"partition":0,"committed_offset":2\n"partition":1,"committed_offset":2')" \
  "$FROM_LOCAL" "the local commits"
start_broker
expect_ok "group describe -b local" "$SILT" group describe -b "$B" local --format json
assert_eq "$FROM_LOCAL" "$(echo "$OUT" | committed)" "the broker serves the offsets committed offline"
expect_ok "consume -b -g resumes" "$SILT" consume -b "$B" -t t -g local
assert_eq 16 "$(echo "$OUT" | grep -c .)" "a network consumer resumes where the local one stopped"
stop_broker

# ---- an old data dir: silt-groups/ is migrated -------------------------------------------------
O="$TMP/old"
expect_ok "topic create (old dir)" "$SILT" topic create -d "$O" t
seq 1 5 | "$SILT" produce -d "$O" -t t
mkdir -p "$O/silt-groups"
printf '# committed offsets of group legacy\nt/0=3\n' >"$O/silt-groups/legacy.properties"
expect_ok "describe an unmigrated group" "$SILT" group describe -d "$O" legacy --format json
assert_contains "$OUT" '"partition":0,"committed_offset":3' "the old file reads as before"
expect_ok "consume -g migrates" "$SILT" consume -d "$O" -t t -g legacy
assert_eq "$(printf '4\n5')" "$OUT" "the consumer resumes from the old position"
assert_eq "no" "$([ -d "$O/silt-groups" ] && echo yes || echo no)" "silt-groups is gone"
assert_eq "yes" "$([ -f "$O/silt-groups.migrated/legacy.properties" ] && echo yes || echo no)" \
  "and kept as silt-groups.migrated"
expect_ok "describe after migration" "$SILT" group describe -d "$O" legacy --format json
assert_contains "$OUT" '"partition":0,"committed_offset":5' "the new position is in __consumer_offsets"

# Any writable open migrates too.
O2="$TMP/old2"
mkdir -p "$O2/silt-groups"
printf 't/0=1\n' >"$O2/silt-groups/g2.properties"
expect_ok "topic create migrates" "$SILT" topic create -d "$O2" t
assert_eq "no" "$([ -d "$O2/silt-groups" ] && echo yes || echo no)" "silt-groups is gone after a writable open"
expect_ok "group list after a writable open" "$SILT" group list -d "$O2"
assert_eq "g2" "$OUT" "the migrated group is listed"

# Nobody writes the offsets topic but the store.
run sh -c "echo x | '$SILT' produce -d '$D' -t __consumer_offsets"
assert_eq 2 "$RC" "local produce to __consumer_offsets is refused"
assert_contains "$ERR" "internal topic __consumer_offsets" "and says why"

finish
