#!/usr/bin/env bash
# silt group: list, describe (lag), reset-offsets in every mode (dry run and --execute), delete.
source "$(dirname "$0")/lib.sh"

"$SILT" topic create t --partitions 2
for i in $(seq 0 9); do
  printf '{"value":"a%d","timestamp":%d}\n' "$i" $(((i + 1) * 1000))
done | "$SILT" produce -t t -p 0 --format json
printf 'b0\nb1\nb2\nb3\n' | "$SILT" produce -t t -p 1

expect_ok "list with no groups" "$SILT" group list
assert_eq "" "$OUT" "no groups yet"

"$SILT" consume -t t -g billing -p 0 -c 4 >/dev/null
"$SILT" consume -t t -g audit >/dev/null
expect_ok "list" "$SILT" group list
assert_eq "$(printf 'audit\nbilling')" "$OUT" "both groups are listed"
expect_ok "list json" "$SILT" group list --format json
assert_eq "$(printf '{"group":"audit","protocol_type":""}\n{"group":"billing","protocol_type":""}')" "$OUT" "list json"

expect_ok "describe" "$SILT" group describe billing
assert_eq "$(printf 'billing\tt\t0\t4\t10\t6\t-\t-\t-\nbilling\tt\t1\t-\t4\t-\t-\t-\t-')" "$OUT" "describe: offset, log end and lag per partition"
expect_ok "describe json" "$SILT" group describe audit --format json
assert_eq '{"group":"audit","state":"Empty","protocol_type":"","protocol":"","members":[]}
{"group":"audit","topic":"t","partition":0,"committed_offset":10,"log_end_offset":10,"lag":0,"member_id":null,"host":null,"client_id":null}
{"group":"audit","topic":"t","partition":1,"committed_offset":4,"log_end_offset":4,"lag":0,"member_id":null,"host":null,"client_id":null}' "$OUT" "describe json"
expect_fail 2 "describe an unknown group" "$SILT" group describe nobody
assert_contains "$ERR" "nobody" "unknown group is named"

# reset-offsets: a dry run prints the plan and changes nothing.
expect_ok "dry run" "$SILT" group reset-offsets billing --topic t --to-earliest
assert_eq "$(printf 'billing\tt\t0\t4\t0\nbilling\tt\t1\t-\t0')" "$OUT" "dry-run plan"
run "$SILT" group describe billing
assert_contains "$OUT" "$(printf 'billing\tt\t0\t4\t10')" "a dry run changes nothing"

expect_ok "--to-earliest --execute" "$SILT" group reset-offsets billing --topic t --to-earliest --execute
run "$SILT" consume -t t -g billing -p 0 -c 1
assert_eq "a0" "$OUT" "consume resumes at the reset position"
expect_ok "--to-latest" "$SILT" group reset-offsets billing --topic t --to-latest --execute
run "$SILT" group describe billing --format json
assert_contains "$OUT" '"partition":0,"committed_offset":10' "--to-latest moves to the end (p0)"
assert_contains "$OUT" '"partition":1,"committed_offset":4' "--to-latest moves to the end (p1)"
expect_ok "--to-offset" "$SILT" group reset-offsets billing --topic t --to-offset 3 --execute
run "$SILT" group describe billing --format json
assert_contains "$OUT" '"partition":0,"committed_offset":3' "--to-offset 3 (p0)"
assert_contains "$OUT" '"partition":1,"committed_offset":3' "--to-offset 3 (p1)"
expect_ok "--to-offset past the end is clamped" "$SILT" group reset-offsets billing --topic t --to-offset 99 --format json
assert_contains "$OUT" '"partition":1,"current_offset":3,"new_offset":4' "clamped to the log end"
expect_ok "--shift-by -2" "$SILT" group reset-offsets billing --topic t --shift-by -2 --execute
run "$SILT" group describe billing --format json
assert_contains "$OUT" '"partition":0,"committed_offset":1' "--shift-by -2 moves back"
expect_ok "--shift-by 5" "$SILT" group reset-offsets billing --topic t --shift-by 5 --execute
run "$SILT" group describe billing --format json
assert_contains "$OUT" '"partition":0,"committed_offset":6' "--shift-by 5 moves on"
assert_contains "$OUT" '"partition":1,"committed_offset":4' "--shift-by is clamped to the log end"
expect_ok "--to-datetime ISO" "$SILT" group reset-offsets billing --topic t --to-datetime 1970-01-01T00:00:05Z --execute
run "$SILT" consume -t t -g billing -p 0 -c 1
assert_eq "a4" "$OUT" "--to-datetime finds the first record at or after the time"
expect_ok "--to-datetime ms" "$SILT" group reset-offsets billing --topic t --to-datetime 9000ms --format json
assert_contains "$OUT" '"partition":0,"current_offset":5,"new_offset":8' "--to-datetime in ms"

expect_fail 2 "two modes" "$SILT" group reset-offsets billing --topic t --to-earliest --to-latest
expect_fail 2 "no mode" "$SILT" group reset-offsets billing --topic t
expect_fail 2 "unknown topic" "$SILT" group reset-offsets billing --topic nope --to-earliest
expect_fail 2 "bad datetime" "$SILT" group reset-offsets billing --topic t --to-datetime yesterday
expect_fail 2 "missing --topic" "$SILT" group reset-offsets billing --to-earliest

expect_ok "reset creates a new group" "$SILT" group reset-offsets fresh --topic t --to-offset 2 --execute
run "$SILT" consume -t t -g fresh -p 1
assert_eq "$(printf 'b2\nb3')" "$OUT" "a group created by reset is used by consume"

expect_ok "delete" "$SILT" group delete audit
run "$SILT" group list
assert_eq "$(printf 'billing\nfresh')" "$OUT" "deleted group is gone"
expect_fail 2 "delete an unknown group" "$SILT" group delete audit
run "$SILT" consume -t t -g audit -p 1 -c 1
assert_eq "b0" "$OUT" "a deleted group starts over"

finish
