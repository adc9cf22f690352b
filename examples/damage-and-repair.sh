#!/bin/sh
# A damage-and-repair walkthrough: write a topic, flip a byte in the middle of a segment, find
# it with verify-crc, look at it with dump-segment, repair it, and see what was kept and what
# was quarantined.
#
#   sh examples/damage-and-repair.sh [path/to/silt]
set -eu
SILT=${1:-silt}
D=$(mktemp -d /tmp/silt-repair-demo-XXXXXX)
trap 'rm -rf "$D"' EXIT

echo "== write 2000 records to topic 'events'"
seq 1 2000 | sed 's/^/event number /' | "$SILT" produce -d "$D" -t events --batch-size 4096
LOG="$D/events-0/00000000000000000000.log"
"$SILT" verify-crc "$D"

echo "== flip one byte in the middle of the segment"
SIZE=$(stat -c %s "$LOG")
printf '\377' | dd of="$LOG" bs=1 seek=$((SIZE / 2)) conv=notrunc 2>/dev/null

echo "== verify-crc finds it (exit status 1), with the byte position of the damaged batch"
"$SILT" verify-crc "$D" || echo "(exit status $?)"

echo "== dump-segment shows the batches, and goes on past the damage"
"$SILT" dump-segment "$LOG" 2>&1 | tail -3

echo "== --dry-run says what repair would keep and quarantine, and changes nothing"
"$SILT" verify-crc --dry-run "$D" || echo "(exit status $?)"

echo "== repair: only the damaged batch goes to a quarantine file (not the bin); the rest stays"
"$SILT" verify-crc --repair "$D"
ls -l "$D/events-0"

echo "== the topic reads cleanly, before and after the damage"
"$SILT" consume -d "$D" -t events | tail -2
echo "== running the repair again changes nothing"
"$SILT" verify-crc --repair "$D"
