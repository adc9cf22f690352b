#!/bin/bash
# CLI tests for `silt verify-crc`: clean data, bit flips, torn tails, index damage, repair with
# quarantine, idempotence, the lock, and bad arguments. Runs the real binary ($SILT).
set -u
SILT=${SILT:?set SILT to the silt binary}
SRC=${SILT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FIX="$SRC/../shared/fixtures/kafka-data"
PY=/usr/bin/python3
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }
. "$(dirname "$0")/../skip.sh"

if [ ! -d "$FIX" ]; then
  skip_test fixtures "$FIX is absent; verify-crc tests need the Kafka fixtures"
fi

T=$(mktemp -d /tmp/silt-verify-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
cp -r "$FIX/kafka-3.4-zk" "$T/zk"
cp -r "$FIX/kafka-3.7-kraft" "$T/kraft"
LOG="$T/zk/test-0/00000000000000000000.log"

# A clean Kafka data dir passes, with the batch and record counts of the fixture.
out=$("$SILT" verify-crc "$T/zk/test-0"); rc=$?
check "clean partition exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "summary counts 28 batches and 97 records: $out" '[[ "$out" == *"28 batches, 97 records"* ]]'
"$SILT" verify-crc "$T/kraft" >/dev/null; rc=$?
check "the whole KRaft data dir is clean (got $rc)" '[ $rc -eq 0 ]'
out=$("$SILT" verify-crc --json "$T/kraft/__consumer_offsets-6")
check "json summary is clean and counts 13 batches" \
  '$PY -c "import json,sys; s=json.loads(sys.argv[1].splitlines()[-1])[\"summary\"]; assert s[\"clean\"] and s[\"batches\"]==13" "$out"'

# Positions of the batches, from dump-segment, to aim the damage.
positions=$("$SILT" dump-segment --json "$LOG" | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["position"]) for l in sys.stdin))')
read -r -a pos <<<"$positions"
check "dump-segment lists 28 batches" '[ ${#pos[@]} -eq 28 ]'
size=$(stat -c %s "$LOG")

# A bit flip inside the 10th batch is corruption at that batch's position.
cp "$LOG" "$T/orig.log"
flip=$(( ${pos[9]} + 40 ))
printf '\xff' | dd of="$LOG" bs=1 seek=$flip conv=notrunc status=none
cp "$LOG" "$T/flipped.log"
out=$("$SILT" verify-crc "$LOG"); rc=$?
check "bit flip exits 1 (got $rc)" '[ $rc -eq 1 ]'
check "bit flip reported as corruption at ${pos[9]}: $out" '[[ "$out" == *"00000000000000000000.log:${pos[9]}: corruption: "*"crc mismatch"* ]]'

# --dry-run says what repair would keep and quarantine, in records and bytes, and changes nothing.
next=${pos[10]}
dmg=$(( next - ${pos[9]} ))
out=$("$SILT" verify-crc --dry-run "$T/zk/test-0"); rc=$?
check "dry run exits 1 like a check (got $rc)" '[ $rc -eq 1 ]'
check "dry run names the damaged range ${pos[9]}..$next: $out" \
  '[[ "$out" == *"dry run: would quarantine bytes ${pos[9]}..$next of "*"($dmg bytes, 3 records)"* ]]'
check "dry run counts what would be kept and quarantined: $out" \
  '[[ "$out" == *"repair would keep 94 records ($(( size - dmg )) bytes) and quarantine 3 records ($dmg bytes)"* ]]'
check "dry run changed nothing" 'cmp -s "$LOG" "$T/flipped.log" && [ ! -e "$LOG.${pos[9]}.quarantined" ]'
out=$("$SILT" verify-crc --dry-run --format json "$T/zk/test-0")
check "dry run JSON summary counts records and bytes: $out" \
  '$PY -c "import json,sys; s=json.loads(sys.argv[1].splitlines()[-1])[\"summary\"]; assert s[\"dry_run\"] and not s[\"repaired\"] and s[\"records_kept\"]==94 and s[\"records_quarantined\"]==3 and s[\"bytes_quarantined\"]==$dmg and s[\"bytes_kept\"]==$(( size - dmg ))" "$out"'
check "dry run JSON lists the planned action: $out" '[[ "$out" == *"{\"dry_run\":\"would quarantine bytes ${pos[9]}..$next"* ]]'

# Repair quarantines only the damaged batch, keeps every batch after it at its offset, and is
# idempotent.
out=$("$SILT" verify-crc --repair "$T/zk/test-0"); rc=$?
check "repair leaves a clean partition (rc $rc): $out" '[ $rc -eq 0 ] && [[ "$out" == *"clean after repair"* ]]'
check "the summary describes the repaired data: $out" '[[ "$out" == *"27 batches, 94 records, $(( size - dmg )) bytes: clean after repair"* ]]'
check "the repair summary counts records kept and quarantined: $out" \
  '[[ "$out" == *"repair kept 94 records ($(( size - dmg )) bytes) and quarantined 3 records ($dmg bytes)"* ]]'
q="$LOG.${pos[9]}.quarantined"
check "quarantine file holds exactly the damaged batch" 'cmp -s "$q" <(head -c $next "$T/flipped.log" | tail -c $dmg)'
check "every other byte kept, in order" 'cmp -s "$LOG" <(head -c ${pos[9]} "$T/orig.log"; tail -c +$(( next + 1 )) "$T/orig.log")'
after=$("$SILT" dump-segment --json "$LOG" | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["baseOffset"]) for l in sys.stdin))')
before=$("$SILT" dump-segment --json "$T/orig.log" | $PY -c 'import json,sys; b=[json.loads(l)["baseOffset"] for l in sys.stdin]; print(" ".join(str(x) for i,x in enumerate(b) if i!=9))')
check "the batches after the damage keep their offsets: $after" '[ "$after" = "$before" ]'
out=$("$SILT" verify-crc --repair "$T/zk/test-0"); rc=$?
check "second repair is a no-op (rc $rc): $out" '[ $rc -eq 0 ] && [[ "$out" != *"repair:"* ]] && [[ "$out" != *"repair kept"* ]]'
check "records before the damage are readable" '[ "$("$SILT" dump-segment --records "$LOG" | grep -c "^| offset")" -gt 0 ]'

# Two damaged ranges and a flip in the last batch: three problems, each range quarantined alone,
# and the index fallout of the damage is one line per index file, not one per entry.
cp "$T/orig.log" "$LOG"
rm -f "$LOG".*.quarantined
for b in 3 15 27; do
  printf '\xff' | dd of="$LOG" bs=1 seek=$(( ${pos[$b]} + 40 )) conv=notrunc status=none
done
out=$("$SILT" verify-crc "$T/zk/test-0"); rc=$?
check "three damaged batches are three corruption problems (rc $rc): $out" \
  '[ $rc -eq 1 ] && [ "$(grep -c ": corruption: " <<<"$out")" -eq 3 ]'
check "no more than one line per index file: $out" \
  '[ "$(grep -c "\.index:" <<<"$out")" -le 1 ] && [ "$(grep -c "\.timeindex:" <<<"$out")" -le 1 ]'
out=$("$SILT" verify-crc --repair "$T/zk/test-0"); rc=$?
check "repair of three ranges is clean and keeps 25 batches (rc $rc): $out" \
  '[ $rc -eq 0 ] && [[ "$out" == *"25 batches, "*"clean after repair"* ]]'
check "three quarantine files, one per range" '[ "$(ls "$LOG".*.quarantined | wc -l)" -eq 3 ] && [ -e "$LOG.${pos[27]}.quarantined" ]'
rm -f "$LOG".*.quarantined

# A silt-written partition with a dense index: one flip in an early batch is one corruption line
# and at most one line per index file (each entry pointing at a later batch used to be a line),
# and repair keeps all the records after the damage.
"$SILT" topic create -d "$T/s" t --config index.interval.bytes=100 >/dev/null 2>&1
seq 1 20000 | "$SILT" produce -d "$T/s" -t t --batch-size 2000 >/dev/null 2>&1
SL="$T/s/t-0/00000000000000000000.log"
printf '\xff' | dd of="$SL" bs=1 seek=4000 conv=notrunc status=none
out=$("$SILT" verify-crc "$T/s"); rc=$?
check "one flip in a dense-index segment is at most 3 lines of problems (rc $rc): $out" \
  '[ $rc -eq 1 ] && [ "$(grep -c -v "^checked " <<<"$out")" -le 3 ]'
out=$("$SILT" verify-crc --repair --format json "$T/s"); rc=$?
check "repair keeps all but the damaged batch's records (rc $rc): $out" \
  '[ $rc -eq 0 ] && $PY -c "import json,sys; s=json.loads(sys.argv[1].splitlines()[-1])[\"summary\"]; assert s[\"clean\"] and s[\"repaired\"] and s[\"records_kept\"]+s[\"records_quarantined\"]==20000 and s[\"records_quarantined\"]<200, s" "$out"'
kept=$($PY -c "import json,sys; print(json.loads(sys.argv[1].splitlines()[-1])['summary']['records_kept'])" "$out")
got=$(timeout 20 "$SILT" consume -d "$T/s" -t t 2>/dev/null)
check "consume reads every kept record, up to the last one produced" \
  '[ "$(tail -1 <<<"$got")" = 20000 ] && [ "$(wc -l <<<"$got")" -eq "$kept" ]'

# A torn tail: the last batch cut short is reported as such, not as corruption.
cp "$T/orig.log" "$LOG"
truncate -s $(( size - 7 )) "$LOG"
out=$("$SILT" verify-crc "$LOG"); rc=$?
check "torn tail exits 1 and is named at ${pos[27]}: $out" '[ $rc -eq 1 ] && [[ "$out" == *":${pos[27]}: torn-tail: "* ]]'
"$SILT" verify-crc --repair -q "$LOG" >/dev/null; rc=$?
check "torn tail repaired (rc $rc)" '[ $rc -eq 0 ] && [ "$(stat -c %s "$LOG")" -eq ${pos[27]} ]'

# Index damage: an entry pointing between batches.
IDX="$T/kraft/__consumer_offsets-6/00000000000000000000.index"
printf '\x00\x00\x12\x7b' | dd of="$IDX" bs=1 seek=4 conv=notrunc status=none
out=$("$SILT" verify-crc "$T/kraft/__consumer_offsets-6"); rc=$?
check "bad index entry found (rc $rc): $out" '[ $rc -eq 1 ] && [[ "$out" == *".index:0: index: "*"not the start of a batch"* ]]'

# The data dir's lock: repair refuses while a writer holds it, naming the pid.
mkdir -p "$T/locked/t-0"
cp "$T/orig.log" "$T/locked/t-0/00000000000000000000.log"
truncate -s $(( size - 3 )) "$T/locked/t-0/00000000000000000000.log"
( exec 9>"$T/locked/.lock"; echo $BASHPID >&9; flock -x 9; sleep 30 ) &
holder=$!
for _ in $(seq 50); do [ -s "$T/locked/.lock" ] && break; sleep 0.1; done
sleep 0.2
err=$("$SILT" verify-crc --repair "$T/locked/t-0" 2>&1 >/dev/null); rc=$?
check "repair refused with exit 2 while locked (rc $rc): $err" '[ $rc -eq 2 ] && [[ "$err" == *"pid $holder"* ]]'
check "nothing was cut while locked" '[ "$(stat -c %s "$T/locked/t-0/00000000000000000000.log")" -eq $(( size - 3 )) ]'
kill $holder 2>/dev/null; wait $holder 2>/dev/null

# partitionLeaderEpoch is outside the CRC: a flip there is found by the epoch checks, along the
# log and against leader-epoch-checkpoint (the fixture's says epoch 0 from offset 0).
cp -r "$FIX/kafka-3.4-zk/test-0" "$T/epoch-0"
chmod -R u+w "$T/epoch-0"
EL="$T/epoch-0/00000000000000000000.log"
printf '\x04' | dd of="$EL" bs=1 seek=$(( ${pos[12]} + 15 )) conv=notrunc status=none
out=$("$SILT" verify-crc "$T/epoch-0"); rc=$?
check "an epoch going down is an epoch problem (rc $rc): $out" \
  '[ $rc -eq 1 ] && [[ "$out" == *"00000000000000000000.log:${pos[13]}: epoch: "*"below the 4"* ]]'
# Epoch 4 from batch 12 on, which the checkpoint never heard of: fine while the checkpoint may
# lag, a problem once the recovery point says it was flushed.
for b in $(seq 13 27); do
  printf '\x04' | dd of="$EL" bs=1 seek=$(( ${pos[$b]} + 15 )) conv=notrunc status=none
done
"$SILT" verify-crc -q "$T/epoch-0"; rc=$?
check "a newer epoch than the checkpoint's is accepted without a recovery point (rc $rc)" '[ $rc -eq 0 ]'
printf '0\n1\nepoch 0 97\n' >"$T/recovery-point-offset-checkpoint"
out=$("$SILT" verify-crc "$T/epoch-0"); rc=$?
check "epochs the checkpoint does not know, below the recovery point, are a problem (rc $rc): $out" \
  '[ $rc -eq 1 ] && [[ "$out" == *":${pos[12]}: epoch: "*"leader-epoch-checkpoint gives epoch 0"* ]]'
rm -f "$T/recovery-point-offset-checkpoint"

# Bad arguments.
"$SILT" verify-crc "$T/nope" 2>/dev/null; rc=$?
check "missing path exits 2 (got $rc)" '[ $rc -eq 2 ]'
"$SILT" verify-crc --repair --dry-run "$T/zk/test-0" 2>/dev/null; rc=$?
check "--repair with --dry-run is a usage error (got $rc)" '[ $rc -eq 2 ]'
"$SILT" verify-crc 2>/dev/null; rc=$?
check "no path is a usage error (got $rc)" '[ $rc -eq 2 ]'

echo "verify-crc: $pass passed, $fail failed"
[ $fail -eq 0 ]
