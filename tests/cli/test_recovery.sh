#!/usr/bin/env bash
# Damaged data in a data dir, as a power cut or a failing disk leaves it: `consume -d` reads up
# to the damage and reports it (`--strict` refuses), a writable open cuts a torn tail past the
# recovery point and keeps the cut bytes in quarantine, and `serve` then serves every record
# before it; damage below the recovery point takes the partition offline with its position.
source "$(dirname "$0")/lib.sh"

D="$TMP/data"
seq 1 20000 | sed 's/^/line /' | "$SILT" produce -d "$D" -t t
SEG="$D/t-0/00000000000000000000.log"
size=$(stat -c %s "$SEG")
# The position of the last batch, and how many records come before it.
read -r last_pos last_base < <("$SILT" dump-segment --json "$SEG" | /usr/bin/python3 -c '
import json, sys
b = [json.loads(l) for l in sys.stdin][-1]
print(b["position"], b["baseOffset"])')
[ -n "$last_pos" ] && [ "$last_pos" -gt 0 ] && pass || fail "dump-segment found no last batch"

# A torn write: the last batch's header reached the disk, its tail is garbage.
head -c 200 /dev/urandom | dd of="$SEG" bs=1 seek=$((size - 200)) conv=notrunc status=none
cp -a "$D" "$TMP/pristine"

# After the clean stop every byte counted as fsynced: damage, read up to and reported.
run "$SILT" consume -d "$D" -t t
assert_eq 2 "$RC" "consume -d of damaged data exits 2"
assert_eq "$last_base" "$(printf '%s\n' "$OUT" | wc -l)" "every record before the damage is printed"
assert_eq "line $last_base" "$(printf '%s\n' "$OUT" | tail -1)" "in order, up to the damaged batch"
assert_contains "$ERR" "silt: damage: $SEG: position $last_pos: crc mismatch" "damage named"
assert_contains "$ERR" "silt verify-crc --repair" "the repair is named"
run "$SILT" consume --strict -d "$D" -t t
assert_eq 2 "$RC" "--strict exits 2"
assert_eq "" "$OUT" "--strict prints nothing"
assert_contains "$ERR" "position $last_pos" "--strict names the position"
assert_files_equal "$SEG" "$TMP/pristine/t-0/00000000000000000000.log" "reading changed nothing"

# A power cut instead: no clean-shutdown marker, and a recovery point before the last batch.
rm -f "$D/clean-shutdown"
printf '0\n1\nt 0 %s\n' "$last_base" >"$D/recovery-point-offset-checkpoint"
run "$SILT" consume -d "$D" -t t
assert_eq 0 "$RC" "a torn tail past the recovery point is no error"
assert_eq "$last_base" "$(printf '%s\n' "$OUT" | wc -l)" "the records before the torn tail"
assert_contains "$ERR" "silt: note: $SEG: position $last_pos" "the torn tail is noted"

# serve recovers it: cuts at the torn batch, quarantines the cut bytes, serves the rest.
"$SILT" serve -d "$D" --listen 127.0.0.1:0 2>"$TMP/broker.log" &
BG_PIDS+=("$!")
up() { grep -q "listening on" "$TMP/broker.log"; }
if ! wait_for 20 up; then
  cat "$TMP/broker.log" >&2
  fail "the broker did not start"
  finish
fi
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)
run timeout 60 "$SILT" consume -b "$B" -t t
assert_eq 0 "$RC" "consume -b of the recovered partition (stderr: $ERR)"
assert_eq "$last_base" "$(printf '%s\n' "$OUT" | wc -l)" "the broker serves every record before the cut"
printf 'after\n' | "$SILT" produce -b "$B" -t t
run timeout 60 "$SILT" consume -b "$B" -t t -o -1
assert_eq "after" "$OUT" "a new record lands right after the cut"
log=$(cat "$TMP/broker.log")
Q="$SEG.$last_pos.quarantined"
assert_contains "$log" "recovery of t-0 cut $((size - last_pos)) bytes at position $last_pos of $SEG" \
  "the cut is logged once, with file, position and size"
assert_contains "$log" "kept in $Q" "the log names the quarantine"
assert_eq "$((size - last_pos))" "$(stat -c %s "$Q" 2>/dev/null)" "the cut bytes are all in quarantine"
if cmp -s "$Q" <(tail -c $((size - last_pos)) "$TMP/pristine/t-0/00000000000000000000.log"); then
  pass
else
  fail "the quarantine holds the bytes that were cut"
fi
kill "${BG_PIDS[-1]}"
wait "${BG_PIDS[-1]}" 2>/dev/null
expect_ok "verify-crc finds the recovered dir clean" "$SILT" verify-crc "$D"

# Damage below the recovery point (it was fsynced, then went bad): not cut, but offline.
cp -a "$TMP/pristine" "$TMP/bad"
SEG2="$TMP/bad/t-0/00000000000000000000.log"
"$SILT" serve -d "$TMP/bad" --listen 127.0.0.1:0 2>"$TMP/broker2.log" &
BG_PIDS+=("$!")
up2() { grep -q "listening on" "$TMP/broker2.log"; }
if wait_for 20 up2; then
  B2=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker2.log" | head -1)
  run timeout 5 "$SILT" consume -b "$B2" -t t
  offline() { grep -q "t-0 is offline: $SEG2: position $last_pos: crc mismatch" "$TMP/broker2.log"; }
  if wait_for 10 offline; then pass; else fail "the broker names the damage: $(cat "$TMP/broker2.log")"; fi
  assert_eq 1 "$(grep -c 'is offline' "$TMP/broker2.log")" "logged once, not per request"
  assert_files_equal "$SEG2" "$TMP/pristine/t-0/00000000000000000000.log" "nothing was cut"
  kill "${BG_PIDS[-1]}"
  wait "${BG_PIDS[-1]}" 2>/dev/null
else
  fail "the second broker did not start: $(cat "$TMP/broker2.log")"
fi
finish
