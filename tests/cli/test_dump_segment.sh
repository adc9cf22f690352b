#!/bin/bash
# CLI tests for `silt dump-segment` on files written by real Kafka brokers and clients.
set -u
SILT=${SILT:?set SILT to the silt binary}
SRC=${SILT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FIX="$SRC/../shared/fixtures"
PY=/usr/bin/python3
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }
. "$(dirname "$0")/../skip.sh"

if [ ! -d "$FIX/kafka-data" ]; then
  skip_test fixtures "$FIX is absent; dump-segment tests need the Kafka fixtures"
fi
T=$(mktemp -d /tmp/silt-dump-XXXXXX)
trap 'rm -f "$T"/*; rmdir "$T"' EXIT
K37="$FIX/kafka-data/kafka-3.7-kraft"
K34="$FIX/kafka-data/kafka-3.4-zk"

# Batches of a Kafka 3.7 segment: positions, offsets, producers, CRCs.
out=$("$SILT" dump-segment "$K37/TestTopicPatient-0/00000000000000000000.log"); rc=$?
check "exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "three batches" '[ "$(echo "$out" | wc -l)" -eq 3 ]'
check "positions 0 1901 2877" '[ "$(echo "$out" | sed -E "s/^position: ([0-9]+) .*/\1/" | tr "\n" " ")" = "0 1901 2877 " ]'
check "all CRCs valid" '[ "$(echo "$out" | grep -c "crcValid: true")" -eq 3 ]'
check "producer ids 1 2 3" '[ "$(echo "$out" | sed -E "s/.*producerId: ([0-9-]+) .*/\1/" | tr "\n" " ")" = "1 2 3 " ]'

json=$("$SILT" dump-segment --json --records "$K37/TestTopicPatient-0/00000000000000000000.log")
check "json: Kafka field names and record sizes" "$PY - \"\$json\" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
assert [r['baseOffset'] for r in rows] == [0, 1, 2], rows
assert [r['lastOffset'] for r in rows] == [0, 1, 2]
assert all(r['magic'] == 2 and r['crcValid'] and r['compression'] == 'none' for r in rows)
assert all(r['recordCount'] == 1 for r in rows)
recs = [r['records'][0] for r in rows]
assert all(x['key'] is None for x in recs)
assert [len(x['value']) for x in recs] == [1831, 906, 324], [len(x['value']) for x in recs]
for k in ('position', 'size', 'crc', 'producerId', 'producerEpoch', 'baseSequence', 'isTransactional', 'isControl', 'baseTimestamp', 'maxTimestamp'):
    assert k in rows[0], k
PYEOF"

# Multi-record batches and empty values (Kafka 3.4).
recs=$("$SILT" dump-segment --records "$K34/test-0/00000000000000000000.log" | grep '^| offset')
check "97 records" '[ "$(echo "$recs" | wc -l)" -eq 97 ]'
check "first values are empty, empty, f" '[ "$(echo "$recs" | head -3 | sed -E "s/.* value: //" | tr "\n" ,)" = ",,f," ]'
check "offsets run 0..96" '[ "$(echo "$recs" | sed -E "s/^\| offset: ([0-9]+) .*/\1/" | tr "\n" " ")" = "$(seq 0 96 | tr "\n" " ")" ]'

# The KRaft metadata log: thousands of batches, a control batch first.
"$SILT" dump-segment --json "$K37/__cluster_metadata-0/00000000000000000000.log" > "$T/meta.json"
check "metadata log: 4814 batches, 4929 records, control batch first" "$PY - \"$T/meta.json\" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 4814, len(rows)
assert sum(r['recordCount'] for r in rows) == 4929
assert rows[0]['isControl'] and not rows[1]['isControl']
assert rows[-1]['lastOffset'] == 4928
PYEOF"

# Index files, checked against their log.
idx=$("$SILT" dump-segment "$K37/__consumer_offsets-6/00000000000000000000.index"); rc=$?
check "index entries (rc $rc): $idx" '[ $rc -eq 0 ] && [ "$idx" = "offset: 3 position: 4730
offset: 7 position: 9571" ]'
tidx=$("$SILT" dump-segment --json "$K37/__consumer_offsets-6/00000000000000000000.timeindex")
check "timeindex entries" '[ "$(echo "$tidx" | head -1)" = "{\"timestamp\":1769791783399,\"offset\":3}" ] && [ "$(echo "$tidx" | wc -l)" -eq 3 ]'

# Legacy messages: a sarama message (starting at its CRC) given an offset and size prefix
# becomes a one-message magic 0/1 segment.
for name in emptyGzipMessage emptyV1Message emptyMessage; do
  src="$FIX/protocol/sarama/message__$name.bin"
  [ -f "$src" ] || { bad "missing fixture $src"; continue; }
  n=$(stat -c %s "$src")
  $PY -c "import struct,sys; sys.stdout.buffer.write(struct.pack('>qi', 5, $n) + open('$src','rb').read())" > "$T/00000000000000000005.log"
  out=$("$SILT" dump-segment "$T/00000000000000000005.log"); rc=$?
  check "legacy $name dumps with a valid CRC (rc $rc): $out" '[ $rc -eq 0 ] && [[ "$out" == *"offset: 5 "*"crcValid: true"* ]]'
done
out=$("$SILT" dump-segment "$T/00000000000000000005.log" --json)
check "legacy json has magic and compression" '[[ "$out" == *"\"magic\":"* && "$out" == *"\"compression\":\"none\""* ]]'

# Damage: a flipped byte is reported with its position and exit 1; earlier batches still print.
cp "$K34/test-0/00000000000000000000.log" "$T/00000000000000000000.log"
printf '\x00' | dd of="$T/00000000000000000000.log" bs=1 seek=3000 conv=notrunc status=none
out=$("$SILT" dump-segment "$T/00000000000000000000.log" 2>"$T/err"); rc=$?
check "damaged file exits 1 (got $rc)" '[ $rc -eq 1 ]'
check "problem names the file and position" 'grep -q "00000000000000000000.log:[0-9]*: corruption" "$T/err"'
check "batches before the damage printed" '[ "$(echo "$out" | wc -l)" -ge 20 ]'

# __consumer_offsets records are decoded (Kafka 3.7: group DEVSmileCDR).
CO="$K37/__consumer_offsets-6/00000000000000000000.log"
out=$("$SILT" dump-segment --records "$CO"); rc=$?
check "consumer offsets: exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "consumer offsets: every record decoded" '[ "$(echo "$out" | grep -c "^| offset.* decoded: {")" -eq 13 ]'
check "consumer offsets: 7 offset commits of DEVSmileCDR" '[ "$(echo "$out" | grep -c "decoded: {\"key\":{\"type\":\"offset_commit\",\"version\":1,\"group\":\"DEVSmileCDR\"")" -eq 7 ]'
check "consumer offsets: 6 group metadata records" '[ "$(echo "$out" | grep -c "\"type\":\"group_metadata\",\"version\":2,\"group\":\"DEVSmileCDR\"")" -eq 6 ]'
"$SILT" dump-segment --json --records "$CO" > "$T/co.json"
check "consumer offsets json: decoded keys and values" "$PY - \"$T/co.json\" <<'PYEOF'
import json, sys
recs = [r for l in open(sys.argv[1]) for r in json.loads(l)['records']]
assert len(recs) == 13, len(recs)
dec = [r['decoded'] for r in recs]
commits = [d for d in dec if d['key']['type'] == 'offset_commit']
groups = [d for d in dec if d['key']['type'] == 'group_metadata']
assert len(commits) == 7 and len(groups) == 6
assert all(d['key']['group'] == 'DEVSmileCDR' for d in dec)
assert all(d['value']['version'] == 3 and d['value']['commitTimestamp'] > 1700000000000 for d in commits)
last = [d for d in commits if d['key']['topic'] == 'TestTopicPatient' and d['key']['partition'] == 0][-1]
assert last['value']['offset'] == 3, last
g = groups[-1]['value']
assert g['protocolType'] == 'consumer' and g['generation'] > 0 and g['members'], g
m = g['members'][0]
assert m['clientHost'].startswith('/') and m['sessionTimeout'] > 0 and 'base64' in m['assignment'], m
PYEOF"
# Other topics get no "decoded" field.
check "no decoding outside __consumer_offsets" '! "$SILT" dump-segment --records "$K37/TestTopicPatient-0/00000000000000000000.log" | grep -q decoded'

# Bad arguments.
"$SILT" dump-segment "$T/missing.log" 2>/dev/null; rc=$?
check "missing file exits 2 (got $rc)" '[ $rc -eq 2 ]'
"$SILT" dump-segment "$T" 2>/dev/null; rc=$?
check "a directory exits 2 (got $rc)" '[ $rc -eq 2 ]'

# A producer-state snapshot written by Kafka 3.7: dumped, not read as a segment; verify-crc
# checks its CRC and a directory holding it stays clean; a damaged one is a problem.
SNAP="$K37/__consumer_offsets-6/00000000000000000013.snapshot"
out=$("$SILT" dump-segment "$SNAP"); rc=$?
check "snapshot: exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "snapshot: says what it is" '[ "$out" = "Producer-state snapshot, 0 entries" ]'
"$SILT" verify-crc "$SNAP" >/dev/null; rc=$?
check "snapshot: verify-crc clean (got $rc)" '[ $rc -eq 0 ]'
"$SILT" verify-crc "$K37/__consumer_offsets-6" >/dev/null; rc=$?
check "snapshot: its partition verifies clean (got $rc)" '[ $rc -eq 0 ]'
printf '\000\001\000\000\000\000\000\000\000\000' > "$T/00000000000000000005.snapshot"
"$SILT" verify-crc "$T/00000000000000000005.snapshot" >/dev/null 2>&1; rc=$?
check "damaged snapshot: verify-crc exits 1 (got $rc)" '[ $rc -eq 1 ]'
"$SILT" dump-segment "$T/00000000000000000005.snapshot" >/dev/null 2>&1; rc=$?
check "damaged snapshot: dump-segment exits 1 (got $rc)" '[ $rc -eq 1 ]'

echo "dump-segment: $pass passed, $fail failed"
[ $fail -eq 0 ]
