#!/usr/bin/env bash
# Changes say what they changed, in one line, on a terminal: topic alter-config, group delete,
# group reset-offsets --execute. In a pipe they print nothing extra.
source "$(dirname "$0")/lib.sh"

# on_tty CMD...: runs CMD with stdout and stderr on a pseudo-terminal; output in $OUT.
on_tty() {
  local cmd
  printf -v cmd '%q ' "$@"
  OUT=$(script -qec "$cmd" /dev/null | tr -d '\r')
}
if ! command -v script >/dev/null; then
  skip_part client "terminal checks: script(1) is not installed"
  finish
fi

"$SILT" topic create t >/dev/null
printf 'a\nb\nc\n' | "$SILT" produce -t t
"$SILT" consume -t t -g billing -c 1 >/dev/null

on_tty "$SILT" topic alter-config t --config retention.ms=60000 --delete-config segment.bytes --partitions 2
assert_eq "altered topic t: grown to 2 partitions; set retention.ms=60000; reset segment.bytes to the default" "$OUT" "alter-config on a terminal"
run "$SILT" topic alter-config t --config retention.ms=120000
assert_eq "" "$OUT" "alter-config in a pipe prints nothing"
assert_eq 0 "$RC" "alter-config in a pipe succeeds"

on_tty "$SILT" group reset-offsets billing --topic t --to-earliest
assert_contains "$OUT" "dry run: nothing changed" "a dry run says so"
on_tty "$SILT" group reset-offsets billing --topic t --to-latest --execute
assert_contains "$OUT" "reset group billing on topic t: 2 of 2 partition(s) moved" "reset --execute on a terminal"
run "$SILT" group reset-offsets billing --topic t --to-latest --execute
assert_eq "$(printf 'billing\tt\t0\t3\t3\nbilling\tt\t1\t0\t0')" "$OUT" "reset --execute in a pipe prints only the plan"
assert_eq "" "$ERR" "reset --execute in a pipe adds nothing on stderr"

on_tty "$SILT" group delete billing
assert_eq "deleted consumer group billing" "$OUT" "group delete on a terminal"
"$SILT" consume -t t -g other -c 1 >/dev/null
run "$SILT" group delete other
assert_eq "" "$OUT" "group delete in a pipe prints nothing"
# Long work shows how far it is on a terminal (after $SILT_PROGRESS_DELAY_MS, 0 here), and
# nothing of it in a pipe.
"$SILT" topic create wide --partitions 200 >/dev/null
SILT_PROGRESS_DELAY_MS=0 on_tty "$SILT" topic delete wide
assert_contains "$OUT" "deleting topic wide: " "topic delete shows its progress on a terminal"
assert_contains "$OUT" "of 200 partitions removed" "the progress counts partitions"
assert_contains "$OUT" "deleted topic wide" "and says when it is done"
"$SILT" topic create wide2 --partitions 200 >/dev/null
SILT_PROGRESS_DELAY_MS=0 run "$SILT" topic delete wide2
assert_eq "" "$OUT$ERR" "topic delete in a pipe prints nothing"
"$SILT" topic create many --partitions 50 >/dev/null
SILT_PROGRESS_DELAY_MS=0 on_tty "$SILT" verify-crc "$SILT_DATA_DIR"
assert_contains "$OUT" "verifying $SILT_DATA_DIR: 1 of " "verify-crc of a data dir shows partitions checked on a terminal"

# Repair of several damaged partitions shows how far it is on a terminal, and only the repair
# lines in a pipe.
"$SILT" topic create dmg --partitions 3 >/dev/null
for p in 0 1 2; do
  for i in 1 2 3; do printf 'r%s-%s\n' "$p" "$i" | "$SILT" produce -t dmg -p "$p"; done
  seg="$SILT_DATA_DIR/dmg-$p/00000000000000000000.log"
  second=$("$SILT" dump-segment --format json "$seg" | sed -n 2p | sed -E 's/.*"position":([0-9]+).*/\1/')
  printf '\xff' | dd of="$seg" bs=1 seek=$((second + 70)) conv=notrunc status=none
done
cp -r "$SILT_DATA_DIR" "$SILT_DATA_DIR.copy"
SILT_PROGRESS_DELAY_MS=0 on_tty "$SILT" verify-crc --repair "$SILT_DATA_DIR"
assert_contains "$OUT" "repairing: " "repair of a data dir shows its progress on a terminal"
assert_contains "$OUT" "of 3 partitions" "the repair progress counts damaged partitions"
run "$SILT" consume -t dmg -p 1 --format '%s\n'
assert_eq "$(printf 'r1-1\nr1-3')" "$OUT" "repair kept the batches on both sides of the damage"
SILT_PROGRESS_DELAY_MS=0 run "$SILT" verify-crc --repair "$SILT_DATA_DIR.copy"
assert_not_contains "$ERR" "partitions" "repair in a pipe shows no progress"

finish
