#!/usr/bin/env bash
# silt replicate: dir -> dir byte for byte (every codec, keys, headers, null values, tombstones,
# a Kafka broker's data dir), kill -9 in the middle and resume, --follow, gaps, divergence, and
# cluster -> dir, dir -> cluster (mirror topics, promote), cluster -> cluster (kill -9 at several
# points, --follow with a new partition and a new topic) and the re-producing path against
# running `silt serve` brokers.
source "$(dirname "$0")/lib.sh"
cd "$TMP"

# The batches and records of every segment of a partition, as dump-segment prints them.
dump_partition() {
  local f
  for f in "$1"/*.log; do "$SILT" dump-segment --format json --records "$f"; done
}
# same_partition SRC DST WHAT: the two partition directories hold the same batches and records.
same_partition() {
  dump_partition "$1" >"$TMP/a.json" 2>&1
  dump_partition "$2" >"$TMP/b.json" 2>&1
  if [ -s "$TMP/a.json" ] && cmp -s "$TMP/a.json" "$TMP/b.json"; then
    pass
  else
    fail "$3: $1 and $2 differ: $(diff "$TMP/a.json" "$TMP/b.json" | head -5)"
  fi
}
# wait_for SECONDS CMD...: retries CMD every 0.1 s until it succeeds; false after SECONDS.
wait_for() {
  local n=$(($1 * 10))
  shift
  while [ "$n" -gt 0 ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
    n=$((n - 1))
  done
  return 1
}
records_in() { "$SILT" consume -d "$1" -t "$2" --format '%o\n' | wc -l | tr -d ' '; }
# has_records DIR TOPIC N: the topic in DIR holds N records.
has_records() { [ "$(records_in "$1" "$2" 2>/dev/null)" = "$3" ]; }

# ---- dir -> dir: every codec, keys, headers, null values, tombstones ---------------------------
for z in none gzip snappy lz4 zstd; do
  {
    for i in $(seq 1 300); do
      case $((i % 4)) in
        0) printf '{"key":"k%d","value":"v%d","headers":[{"key":"h","value":"%d"}]}\n' "$i" "$i" "$i" ;;
        1) printf '{"key":"k%d","value":null}\n' "$i" ;;  # a tombstone
        2) printf '{"key":null,"value":"only a value %d"}\n' "$i" ;;
        3) printf '{"key":"k%d","value":"","headers":[{"key":"a","value":null},{"key":"b","value":"2"}]}\n' "$i" ;;
      esac
    done
  } | "$SILT" produce -d src -t "codec-$z" -z "$z" --format json --batch-size 2000 -p 0 || fail "produce $z"
done
"$SILT" topic -d src create multi --partitions 3 >/dev/null || fail "topic create multi"
for p in 0 1 2; do
  seq 1 200 | sed "s/^/key$p-&:/" | "$SILT" produce -d src -t multi -K : -p $p || fail "produce multi"
done

expect_ok "dir -> dir" "$SILT" replicate src dst
assert_contains "$OUT" "copied 2100 records" "summary of the copy"
for z in none gzip snappy lz4 zstd; do same_partition "src/codec-$z-0" "dst/codec-$z-0" "codec $z"; done
for p in 0 1 2; do same_partition "src/multi-$p" "dst/multi-$p" "multi partition $p"; done
assert_eq "$("$SILT" consume -d src -t codec-zstd --format json)" \
  "$("$SILT" consume -d dst -t codec-zstd --format json)" "records read back from the copy"
if [ -f "dst/silt-replicate/$(printf 'dir:%s' "$TMP/src" | sed 's/:/%3A/g; s/\//%2F/g').checkpoint" ]; then
  pass
else
  fail "checkpoint file not at dst/silt-replicate/: $(ls dst/silt-replicate 2>&1)"
fi
assert_contains "$(cat dst/silt-replicate/*.checkpoint)" "multi 2 " "checkpoint lists every partition"

# A second run copies nothing; new records at the source are copied after the old ones.
expect_ok "second run" "$SILT" replicate src dst
assert_contains "$OUT" "copied 0 records" "nothing new"
seq 1 10 | "$SILT" produce -d src -t codec-gzip -z gzip -p 0
expect_ok "third run" "$SILT" replicate src dst -t codec-gzip --format json
assert_contains "$OUT" '"topic":"codec-gzip","partition":0,"records":10' "json line per partition"
assert_contains "$OUT" '"done":true' "json summary"
same_partition src/codec-gzip-0 dst/codec-gzip-0 "incremental copy"

# --topics REGEX and --configs.
"$SILT" topic -d src create conf --config retention.ms=12345 --config min.insync.replicas=1 >/dev/null ||
  fail "topic create conf"
echo x | "$SILT" produce -d src -t conf
expect_ok "--topics with --configs" "$SILT" replicate src dst2 --topics 'con.*' --configs
assert_eq "conf	1" "$("$SILT" topic -d dst2 list)" "only the matching topic"
desc=$("$SILT" topic -d dst2 describe conf)
assert_contains "$desc" "retention.ms" "a data config is copied"
assert_not_contains "$desc" "min.insync.replicas" "a config of the destination cluster is not"

# --groups: committed offsets of matching groups land at the destination.
"$SILT" consume -d src -t codec-none -g billing -c 10 >/dev/null
"$SILT" consume -d src -t codec-none -g audit -c 5 >/dev/null
expect_ok "--groups" "$SILT" replicate src dst --groups 'bill.*'
assert_contains "$OUT" "copied the offsets of 1 group(s)" "group summary"
assert_eq "billing" "$("$SILT" group -d dst list)" "only the matching group"
assert_eq "codec-none 0 10" "$("$SILT" group -d dst describe billing | awk '{print $2, $3, $4}')" \
  "the group's offset at the destination"
assert_eq "$("$SILT" consume -d src -t codec-none -o 10 -c 1 --format '%o %k')" \
  "$("$SILT" consume -d dst -t codec-none -g billing -c 1 --format '%o %k')" \
  "a consumer of the group resumes at the right record at the destination"

# --from @TIME: a partition not copied before starts at the first batch at or after TIME.
seq 1 5 | "$SILT" produce -d tsrc -t t
sleep 0.2
at=$(date +%s%3N)
sleep 0.2
seq 6 8 | "$SILT" produce -d tsrc -t t
expect_ok "--from @TIME" "$SILT" replicate tsrc tdst --from "@$at"
assert_eq "6 7 8" "$("$SILT" consume -d tdst -t t | tr '\n' ' ' | sed 's/ $//')" "copied from TIME on"
expect_ok "--from end" "$SILT" replicate tsrc tdst2 --from end
assert_eq 0 "$(records_in tdst2 t)" "nothing before the end"

# --promote on a data dir: checked, nothing to change.
expect_ok "--promote" "$SILT" replicate src dst -t multi --promote
assert_contains "$OUT" "promoted multi" "promote reported"
# --promote compares every batch of the copy, not only its end: a batch changed in the middle
# of the destination stops it.
expect_ok "copy to promote" "$SILT" replicate src pdst -t codec-none
seg=pdst/codec-none-0/00000000000000000000.log
third=$("$SILT" dump-segment --format json "$seg" | sed -n 3p | sed -E 's/.*"position":([0-9]+).*/\1/')
printf 'Z' | dd of="$seg" bs=1 seek=$((third + 75)) conv=notrunc status=none
run "$SILT" replicate src pdst -t codec-none --promote
assert_eq 1 "$RC" "promote of a copy that differs in the middle fails"
assert_contains "$ERR" "codec-none/0: the destination differs from the source at offset" \
  "promote names where the copy differs"

# --checkpoint FILE keeps the checkpoint there instead of at the destination.
expect_ok "--checkpoint FILE" "$SILT" replicate tsrc ckdst --checkpoint "$TMP/my.checkpoint"
assert_contains "$(cat "$TMP/my.checkpoint")" "t 0 8" "the checkpoint is in the named file"
if [ -e ckdst/silt-replicate ]; then fail "a checkpoint was also written at the destination"; else pass; fi
seq 9 10 | "$SILT" produce -d tsrc -t t
expect_ok "--checkpoint FILE again" "$SILT" replicate tsrc ckdst --checkpoint "$TMP/my.checkpoint"
assert_contains "$OUT" "copied 2 records" "the second run resumes from the named checkpoint"
assert_contains "$(cat "$TMP/my.checkpoint")" "t 0 10" "the named checkpoint moved on"
expect_ok "--promote of a copy made --from a time" "$SILT" replicate tsrc tdst --promote
assert_contains "$OUT" "promoted t" "a copy that starts past the source's log start is promoted"

# ---- a Kafka broker's data dir as the source ---------------------------------------------------
fixtures="$SILT_SOURCE_DIR/../shared/fixtures/kafka-data"
if [ -d "$fixtures/kafka-3.7-kraft" ]; then
  cp -r "$fixtures/kafka-3.7-kraft" kraft
  expect_ok "a Kafka data dir" "$SILT" replicate kraft kdst
  same_partition kraft/TestTopicPatient-0 kdst/TestTopicPatient-0 "Kafka 3.7 topic"
  if [ -d kdst/__consumer_offsets-6 ] || [ -d kdst/__cluster_metadata-0 ]; then
    fail "internal topics were copied: $(ls kdst)"
  else
    pass
  fi
  # A replica's checkpointed high watermark bounds what is copied.
  printf '0\n2\nTestTopicPatient 0 2\n__consumer_offsets 6 13\n' >kraft/replication-offset-checkpoint
  expect_ok "a Kafka data dir with a lower high watermark" "$SILT" replicate kraft kdst2
  assert_eq 2 "$(records_in kdst2 TestTopicPatient)" "copied up to the high watermark"
  cp -r "$fixtures/kafka-3.4-zk" zk
  expect_ok "a Kafka 3.4 data dir" "$SILT" replicate zk zdst -t test
  same_partition zk/test-0 zdst/test-0 "Kafka 3.4 topic"
else
  skip_test fixtures "../shared/fixtures/kafka-data missing: Kafka data dirs not replicated" || true
fi

# ---- kill -9 in the middle, then resume --------------------------------------------------------
seq 1 800000 | awk '{printf "%s-%0100d\n",$1,$1}' | "$SILT" produce -d big -t big -p 0 -z lz4 ||
  fail "produce big"
seq 1 800000 | awk '{printf "%s-%0100d\n",$1,$1}' | "$SILT" produce -d big -t big -p 0 || fail "produce big"
SILT_REPLICATE_STEP_BYTES=1048576 "$SILT" replicate big bigdst -q &
pid=$!
wait_for 30 sh -c 'ls bigdst/silt-replicate/*.checkpoint' || fail "no checkpoint appeared"
kill -9 "$pid"
wait "$pid" 2>/dev/null
rc=$?
assert_eq 137 "$rc" "the copy was killed in the middle (not finished before)"
cp_at=$(awk 'NR==3 {print $3}' bigdst/silt-replicate/*.checkpoint)
end=$("$SILT" topic -d big describe big | awk '$1 == "0" {print $3}' | head -1)
if [ -n "$cp_at" ] && [ "$cp_at" -gt 0 ] && [ "$cp_at" -lt 1600000 ]; then pass; else fail "checkpoint after kill: [$cp_at]"; fi
expect_ok "resume after kill -9" "$SILT" replicate big bigdst
same_partition big/big-0 bigdst/big-0 "resumed copy"
assert_eq 1600000 "$(records_in bigdst big)" "no duplicate, no gap"
assert_eq 1600000 "$(awk 'NR==3 {print $3}' bigdst/silt-replicate/*.checkpoint)" "final checkpoint"

# SIGINT in the middle: the step is finished, the checkpoint stored, exit 0 with a summary.
SILT_REPLICATE_STEP_BYTES=1048576 "$SILT" replicate big bigint >int.out 2>int.err &
pid=$!
wait_for 30 sh -c 'ls bigint/silt-replicate/*.checkpoint' || fail "no checkpoint appeared (SIGINT)"
kill -INT "$pid"
wait "$pid"
assert_eq 0 "$?" "SIGINT in the middle of a copy exits 0"
assert_contains "$(cat int.out)" "interrupted; the next run resumes from the checkpoint" "SIGINT summary"
cp_at=$(awk 'NR==3 {print $3}' bigint/silt-replicate/*.checkpoint)
assert_eq "$cp_at" "$(records_in bigint big)" "the checkpoint is where the copy stopped"
expect_ok "resume after SIGINT" "$SILT" replicate big bigint
same_partition big/big-0 bigint/big-0 "resumed after SIGINT"

# ---- --fsync: end and never copy the same bytes; a kill -9 of a run without fsync resumes ------
expect_ok "--fsync end" "$SILT" replicate big bigend --fsync end
same_partition big/big-0 bigend/big-0 "--fsync end"
if [ -e bigend/clean-shutdown ]; then pass; else fail "--fsync end: not closed cleanly"; fi
expect_ok "--fsync never" "$SILT" replicate big bignever --fsync=never
same_partition big/big-0 bignever/big-0 "--fsync never"
if [ -e bignever/clean-shutdown ]; then
  fail "--fsync never left a clean-shutdown marker (its next open would trust unsynced bytes)"
else
  pass
fi
assert_eq 0 "$(awk 'NR==3 {print $3}' bignever/silt-replicate/*.checkpoint)" \
  "--fsync never: the checkpoint claims no record that was never fsynced"
# A copy without fsync is too quick to kill in the middle of: this one follows a source that a
# producer is still writing, and is killed while it copies.
seq 1 1200000 | awk '{printf "%s-%0100d\n",$1,$1}' | "$SILT" produce -d grow -t grow -p 0 &
ppid=$!
wait_for 30 test -s grow/grow-0/00000000000000000000.log || fail "the producer wrote nothing"
SILT_REPLICATE_STEP_BYTES=65536 "$SILT" replicate grow grow9 -q --follow --fsync never &
pid=$!
wait_for 30 sh -c '[ "$(stat -c %s grow9/grow-0/00000000000000000000.log)" -gt 2000000 ]' ||
  fail "--fsync never: nothing copied"
if kill -0 "$ppid" 2>/dev/null; then pass; else fail "the producer was done before the kill"; fi
kill -9 "$pid"
wait "$pid" 2>/dev/null
assert_eq 137 "$?" "--fsync never: killed while copying"
wait "$ppid" || fail "produce grow"
expect_ok "resume --fsync never after kill -9" "$SILT" replicate grow grow9 --fsync never
same_partition grow/grow-0 grow9/grow-0 "--fsync never, resumed after kill -9"
assert_eq 1200000 "$(records_in grow9 grow)" "--fsync never after kill -9: no duplicate, no gap"
# A crash of the machine may keep the checkpoint and lose the tail of the data: the segment
# cut in the middle of a batch, and no clean-shutdown marker. The rerun goes on at the end the
# destination's recovery finds, not at the checkpoint.
seg=$(ls bigend/big-0/*.log | tail -1)
truncate -s $(($(stat -c %s "$seg") - 3000000)) "$seg"
rm -f bigend/clean-shutdown
assert_eq 1600000 "$(awk 'NR==3 {print $3}' bigend/silt-replicate/*.checkpoint)" \
  "the checkpoint is ahead of the cut destination"
expect_ok "rerun after the destination lost its tail" "$SILT" replicate big bigend --fsync end
assert_not_contains "$OUT" "copied 0 records" "the lost tail is copied again"
same_partition big/big-0 bigend/big-0 "a destination that lost its tail, copied again"
assert_eq 1600000 "$(records_in bigend big)" "a destination that lost its tail: no duplicate, no gap"
run "$SILT" replicate big kafka://127.0.0.1:1 --fsync never
assert_eq 2 "$RC" "--fsync never into a cluster is a usage error"
assert_contains "$ERR" "only a data dir DEST" "--fsync into a cluster: the reason"

# ---- --follow: new records and a new topic -----------------------------------------------------
seq 1 5 | "$SILT" produce -d fsrc -t live
"$SILT" replicate fsrc fdst --follow --format json >follow.out 2>follow.err &
fpid=$!
BG_PIDS+=("$fpid")
wait_for 20 has_records fdst live 5 || fail "follow: first records not copied"
seq 6 9 | "$SILT" produce -d fsrc -t live
wait_for 20 has_records fdst live 9 || fail "follow: new records not copied"
seq 1 3 | "$SILT" produce -d fsrc -t later
wait_for 30 has_records fdst later 3 || fail "follow: a new topic not picked up"
kill -INT "$fpid"
wait "$fpid"
assert_eq 0 "$?" "follow exits 0 on SIGINT"
assert_contains "$(tail -1 follow.out)" '"stopped":true' "follow: the summary says it was stopped"
same_partition fsrc/live-0 fdst/live-0 "followed topic"
assert_contains "$(cat fdst/silt-replicate/*.checkpoint)" "later 0 3" "follow: checkpoint stored at the stop"

# ---- a gap: the source's records were deleted before they were copied ---------------------------
"$SILT" topic -d gsrc create g --config segment.bytes=2000 >/dev/null
seq 1 50 | "$SILT" produce -d gsrc -t g --batch-size 500 --linger-ms 0
expect_ok "copy before the gap" "$SILT" replicate gsrc gdst
seq 51 3000 | "$SILT" produce -d gsrc -t g --batch-size 500 --linger-ms 0
# Retention: the oldest segments go, past what gdst has.
ls gsrc/g-0/*.log | sort | head -2 | while read -r f; do rm -f "$f" "${f%.log}.index" "${f%.log}.timeindex"; done
run "$SILT" replicate gsrc gdst
assert_eq 1 "$RC" "a gap fails with status 1"
assert_contains "$ERR" "g/0: the source's log start moved to offset" "the gap is named"
assert_contains "$ERR" "--allow-gaps" "the way out is named"
expect_ok "--allow-gaps" "$SILT" replicate gsrc gdst --allow-gaps
assert_contains "$OUT" "skipped records deleted at the source in 1 partition" "gap skipped"
assert_eq "$("$SILT" consume -d gsrc -t g | tail -1)" "$("$SILT" consume -d gdst -t g | tail -1)" "copied after the gap"

# ---- a diverged destination ---------------------------------------------------------------------
seq 1 20 | "$SILT" produce -d dsrc -t d
expect_ok "copy before divergence" "$SILT" replicate dsrc ddst
echo other | "$SILT" produce -d ddst -t d
echo real | "$SILT" produce -d dsrc -t d
run "$SILT" replicate dsrc ddst
assert_eq 1 "$RC" "divergence fails with status 1"
assert_contains "$ERR" "d/0: the destination differs from the source at offset 20" "divergence named"
expect_ok "--truncate-destination" "$SILT" replicate dsrc ddst --truncate-destination
assert_contains "$OUT" "truncated 1 destination partition" "truncation reported"
same_partition dsrc/d-0 ddst/d-0 "after --truncate-destination"

# ---- usage errors -------------------------------------------------------------------------------
run "$SILT" replicate src s3://bucket
assert_eq 2 "$RC" "unknown scheme"
assert_contains "$ERR" "unknown scheme 's3://'" "scheme named"
run "$SILT" replicate src src
assert_eq 2 "$RC" "same dir"
run "$SILT" replicate nowhere dst
assert_eq 2 "$RC" "missing source"
assert_contains "$ERR" "does not exist" "missing source named"
run "$SILT" replicate src dst --from middle
assert_eq 2 "$RC" "bad --from"
run "$SILT" replicate src dst -t nosuch
assert_eq 2 "$RC" "unknown topic"
assert_contains "$ERR" "topic 'nosuch' does not exist at the source" "unknown topic named"

# ---- cluster -> dir ------------------------------------------------------------------------------
"$SILT" serve -d "$TMP/broker" --listen 127.0.0.1:0 2>broker.log &
bpid=$!
BG_PIDS+=("$bpid")
wait_for 20 grep -q "listening on" broker.log || fail "broker did not start: $(cat broker.log)"
BROKER=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' broker.log | head -1)
"$SILT" topic -b "$BROKER" create net --partitions 2 >/dev/null || fail "create net"
seq 1 1000 | sed 's/.*/k&:&/' | "$SILT" produce -b "$BROKER" -t net -K : -z zstd || fail "produce net"
expect_ok "cluster -> dir" "$SILT" replicate "kafka://$BROKER" cdst -t net
assert_contains "$OUT" "copied 1000 records" "records from the cluster"
for p in 0 1; do
  assert_eq "$("$SILT" consume -b "$BROKER" -t net -p $p --format '%o %k %s %T\n')" \
    "$("$SILT" consume -d cdst -t net -p $p --format '%o %k %s %T\n')" "partition $p from the cluster"
done
for p in 0 1; do same_partition "$TMP/broker/net-$p" "cdst/net-$p" "partition $p byte for byte from the cluster"; done
# kill -9 in the middle of a copy from the cluster, then resume.
"$SILT" topic -b "$BROKER" create bulk >/dev/null || fail "create bulk"
"$SILT" perf produce -b "$BROKER" -t bulk -n 300000 -s 100 --interval-ms 100000 >/dev/null ||
  fail "perf produce bulk"
SILT_REPLICATE_STEP_BYTES=262144 "$SILT" replicate "kafka://$BROKER" kdst9 -t bulk -q &
pid=$!
wait_for 30 sh -c 'ls kdst9/silt-replicate/*.checkpoint' || fail "no checkpoint from the cluster copy"
kill -9 "$pid"
wait "$pid" 2>/dev/null
assert_eq 137 "$?" "the cluster copy was killed in the middle"
expect_ok "resume the cluster copy after kill -9" "$SILT" replicate "kafka://$BROKER" kdst9 -t bulk
assert_eq 300000 "$(records_in kdst9 bulk)" "cluster copy: no duplicate, no gap"
same_partition "$TMP/broker/bulk-0" kdst9/bulk-0 "cluster copy resumed byte for byte"
# Group offsets from the cluster.
"$SILT" consume -b "$BROKER" -t net -g netgroup -c 100 >/dev/null || fail "consume -g over the network"
expect_ok "--groups from the cluster" "$SILT" replicate "kafka://$BROKER" cdst -t net --groups netgroup
assert_contains "$OUT" "copied the offsets of 1 group(s)" "group from the cluster"
assert_eq "$("$SILT" group -b "$BROKER" describe netgroup | awk '{print $2, $3, $4}' | sort)" \
  "$("$SILT" group -d cdst describe netgroup | awk '{print $2, $3, $4}' | sort)" \
  "the cluster group's offsets at the destination"
# Follow from the cluster: new records arrive.
"$SILT" replicate "kafka://$BROKER" cdst -t net -f -q &
cpid=$!
BG_PIDS+=("$cpid")
seq 1001 1100 | sed 's/.*/k&:&/' | "$SILT" produce -b "$BROKER" -t net -K :
wait_for 20 has_records cdst net 1100 || fail "cluster follow: new records not copied"
kill -TERM "$cpid"
wait "$cpid"
assert_eq 0 "$?" "cluster follow exits 0 on SIGTERM"

# ---- dir -> cluster: mirror topics, byte for byte but the leader epoch -------------------------
# The batches of a partition without the one field a destination restamps.
same_but_epoch() {
  dump_partition "$1" | sed 's/"partitionLeaderEpoch":-\{0,1\}[0-9]*,//' >"$TMP/a.json" 2>&1
  dump_partition "$2" | sed 's/"partitionLeaderEpoch":-\{0,1\}[0-9]*,//' >"$TMP/b.json" 2>&1
  if [ -s "$TMP/a.json" ] && cmp -s "$TMP/a.json" "$TMP/b.json"; then
    pass
  else
    fail "$3: $1 and $2 differ: $(diff "$TMP/a.json" "$TMP/b.json" | head -5)"
  fi
}
expect_ok "dir -> cluster" "$SILT" replicate src "kafka://$BROKER" -t codec-none -t codec-gzip \
  -t codec-snappy -t codec-lz4 -t codec-zstd -t multi
assert_contains "$OUT" "of 6 topic(s), 8 partition(s)" "records into the cluster"
for z in none gzip snappy lz4 zstd; do
  same_but_epoch "src/codec-$z-0" "$TMP/broker/codec-$z-0" "dir -> cluster, codec $z"
done
# cluster -> dir of the same topics: every codec, keys, headers, null values, tombstones.
expect_ok "cluster -> dir, every codec" "$SILT" replicate "kafka://$BROKER" c5dst -t codec-none \
  -t codec-gzip -t codec-snappy -t codec-lz4 -t codec-zstd
for z in none gzip snappy lz4 zstd; do
  same_partition "$TMP/broker/codec-$z-0" "c5dst/codec-$z-0" "cluster -> dir, codec $z"
  assert_eq "$("$SILT" consume -d src -t "codec-$z" --format json)" \
    "$("$SILT" consume -d c5dst -t "codec-$z" --format json)" "cluster -> dir, codec $z: the records"
done
for p in 0 1 2; do same_but_epoch "src/multi-$p" "$TMP/broker/multi-$p" "dir -> cluster, multi partition $p"; done
assert_contains "$("$SILT" topic -b "$BROKER" describe multi)" "silt.mirror=true" "the copy is a mirror topic"
run sh -c "echo x | '$SILT' produce -b '$BROKER' -t multi -p 0"
assert_eq 2 "$RC" "a mirror topic refuses ordinary produce"
assert_contains "$ERR" "POLICY_VIOLATION" "the refusal names the policy"
# A second run copies nothing and changes nothing.
expect_ok "dir -> cluster again" "$SILT" replicate src "kafka://$BROKER" -t multi
assert_contains "$OUT" "copied 0 records" "nothing copied twice into the cluster"
# kill -9 in the middle of a bulk load, then resume. Small batches and steps (a round trip to
# the broker each) make the load last about half a second, well past the 50 ms poll below.
"$SILT" perf produce -d bigsrc -t big -n 500000 -s 100 --batch-size 16384 \
  --interval-ms 100000 >/dev/null || fail "perf produce big"
SILT_REPLICATE_STEP_BYTES=16384 "$SILT" replicate bigsrc "kafka://$BROKER" -t big -q &
pid=$!
wait_for 30 test -s "$TMP/broker/big-0/00000000000000000000.log" || fail "nothing reached the cluster"
kill -9 "$pid"
wait "$pid" 2>/dev/null
assert_eq 137 "$?" "the bulk load was killed in the middle"
expect_ok "resume the bulk load after kill -9" "$SILT" replicate bigsrc "kafka://$BROKER" -t big
same_but_epoch bigsrc/big-0 "$TMP/broker/big-0" "bulk load resumed: no duplicate, no gap"
# Promote: the source's records stay, ordinary produce goes on at the end.
expect_ok "--promote into the cluster" "$SILT" replicate src "kafka://$BROKER" -t multi --promote
assert_not_contains "$("$SILT" topic -b "$BROKER" describe multi)" "silt.mirror" "promoted: no longer a mirror"
echo after | "$SILT" produce -b "$BROKER" -t multi -p 0 || fail "produce after promote"
assert_eq "200 after" "$("$SILT" consume -b "$BROKER" -t multi -p 0 -o 200 -c 1 --format '%o %s')" \
  "produce after promote continues at the log end"

# ---- cluster -> cluster, and into a broker without the offset-preserving append ---------------
"$SILT" serve -d "$TMP/broker2" --listen 127.0.0.1:0 2>broker2.log &
b2pid=$!
BG_PIDS+=("$b2pid")
wait_for 20 grep -q "listening on" broker2.log || fail "broker 2 did not start: $(cat broker2.log)"
BROKER2=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' broker2.log | head -1)
expect_ok "cluster -> cluster" "$SILT" replicate "kafka://$BROKER" "kafka://$BROKER2" -t net \
  -t codec-none -t codec-gzip -t codec-zstd
for p in 0 1; do same_but_epoch "$TMP/broker/net-$p" "$TMP/broker2/net-$p" "cluster -> cluster partition $p"; done
# Keys, headers, null values and tombstones, uncompressed and in two codecs (lz4 below in c2c;
# snappy and lz4 through the re-producing path into the same broker).
for z in none gzip zstd; do
  same_but_epoch "$TMP/broker/codec-$z-0" "$TMP/broker2/codec-$z-0" "cluster -> cluster, codec $z"
done
# The Kafka path: batches produced anew, offsets through the map. A compacted-like source with a
# hole: delete-records is not a hole, so use a topic whose offsets start past 0.
SILT_REPLICATE_REPRODUCE=1 "$SILT" replicate src "kafka://$BROKER2" -t codec-snappy -t codec-lz4 \
  >rep.out 2>rep.err || fail "reproduce into the cluster: $(cat rep.err)"
for z in snappy lz4; do
  assert_eq "$("$SILT" consume -d src -t "codec-$z" --format json | sed 's/"timestamp":[0-9]*,//')" \
    "$("$SILT" consume -b "$BROKER2" -t "codec-$z" --format json | sed 's/"timestamp":[0-9]*,//')" \
    "reproduced codec $z: the same records"
  assert_eq "$("$SILT" consume -d src -t "codec-$z" --format '%T\n')" \
    "$("$SILT" consume -b "$BROKER2" -t "codec-$z" --format '%T\n')" "reproduced codec $z: the same timestamps"
done
assert_not_contains "$("$SILT" topic -b "$BROKER2" describe codec-lz4)" "silt.mirror" \
  "a reproduced copy is an ordinary topic"
SILT_REPLICATE_REPRODUCE=1 "$SILT" replicate src "kafka://$BROKER2" -t codec-snappy >rep.out 2>&1 ||
  fail "reproduce again: $(cat rep.out)"
assert_eq 300 "$("$SILT" consume -b "$BROKER2" -t codec-snappy --format '%o\n' | wc -l | tr -d ' ')" \
  "reproducing again writes nothing twice"
# ---- kill -9 at several points of a copy from a cluster, then resume ---------------------------
# bytes_at_least N GLOB: the files GLOB matches (expanded now) hold at least N bytes together.
bytes_at_least() {
  # shellcheck disable=SC2086
  [ "$(cat $2 2>/dev/null | wc -c)" -ge "$1" ]
}
# kill_at_points WHAT DEST_GLOB CMD...: runs CMD three times, killing it with SIGKILL once the
# destination's log files (DEST_GLOB, a pattern) hold 20%, 45% and 70% of the source's bytes.
kill_at_points() {
  local what=$1 glob=$2 frac pid rc
  shift 2
  for frac in 20 45 70; do
    SILT_REPLICATE_STEP_BYTES=1 "$@" -q &
    pid=$!
    wait_for 60 bytes_at_least $((c2c_bytes * frac / 100)) "$glob" || fail "$what: no progress to $frac%"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    rc=$?
    assert_eq 137 "$rc" "$what: killed at $frac% (not finished before)"
  done
}
"$SILT" topic -b "$BROKER" create c2c --partitions 2 >/dev/null || fail "create c2c"
for p in 0 1; do
  seq 1 60000 | awk -v p=$p '{printf "{\"key\":\"k%d-%d\",\"value\":\"%s-%090d\",\"headers\":[{\"key\":\"n\",\"value\":\"%d\"}]}\n",p,$1,$1,$1,$1}' |
    "$SILT" produce -b "$BROKER" -t c2c -p $p --format json --batch-size 4000 -z lz4 || fail "produce c2c"
done
c2c_bytes=$(cat "$TMP"/broker/c2c-*/*.log | wc -c)
c2c_records() { "$SILT" consume -b "$1" -t c2c -p "$2" --format '%o %k %s %T %h\n'; }
kill_at_points "cluster -> cluster" "$TMP/broker2/c2c-*/*.log" \
  "$SILT" replicate "kafka://$BROKER" "kafka://$BROKER2" -t c2c
expect_ok "cluster -> cluster resumed after kill -9 at three points" \
  "$SILT" replicate "kafka://$BROKER" "kafka://$BROKER2" -t c2c
for p in 0 1; do
  same_but_epoch "$TMP/broker/c2c-$p" "$TMP/broker2/c2c-$p" "cluster -> cluster after kill -9, partition $p"
  c2c_records "$BROKER" $p >c2c-src.txt
  c2c_records "$BROKER2" $p >c2c-dst.txt
  assert_eq 60000 "$(wc -l <c2c-dst.txt | tr -d ' ')" "cluster -> cluster after kill -9: no duplicate, no gap"
  assert_files_equal c2c-src.txt c2c-dst.txt \
    "cluster -> cluster after kill -9, partition $p: offsets, keys, values, timestamps, headers"
done
kill_at_points "cluster -> dir" "c2cdir/c2c-*/*.log" "$SILT" replicate "kafka://$BROKER" c2cdir -t c2c
expect_ok "cluster -> dir resumed after kill -9 at three points" \
  "$SILT" replicate "kafka://$BROKER" c2cdir -t c2c
for p in 0 1; do
  same_partition "$TMP/broker/c2c-$p" "c2cdir/c2c-$p" "cluster -> dir after kill -9, partition $p"
done
# ---- --follow from a cluster: a new partition, a new topic matching --topics ----------------------
"$SILT" topic -b "$BROKER" create fol-a >/dev/null || fail "create fol-a"
"$SILT" topic -b "$BROKER" create other >/dev/null || fail "create other"
seq 1 5 | "$SILT" produce -b "$BROKER" -t fol-a -p 0 || fail "produce fol-a"
echo x | "$SILT" produce -b "$BROKER" -t other || fail "produce other"
"$SILT" replicate "kafka://$BROKER" "kafka://$BROKER2" --topics 'fol-.*' --follow -q 2>follow2.err &
f2pid=$!
BG_PIDS+=("$f2pid")
partition_records() { "$SILT" consume -b "$1" -t "$2" -p "$3" --format '%o %k %s %T %h\n' 2>/dev/null; }
has_cluster_records() { [ "$(partition_records "$@" | wc -l | tr -d ' ')" = "$4" ]; }
wait_for 20 has_cluster_records "$BROKER2" fol-a 0 5 || fail "follow from a cluster: first records not copied"
if /usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null; then
  /usr/bin/python3 - "$BROKER" <<'PY' || fail "CreatePartitions fol-a to 3"
import sys
from confluent_kafka.admin import AdminClient, NewPartitions
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_partitions([NewPartitions("fol-a", 3)]).values():
    f.result(30)
PY
  seq 1 4 | sed 's/.*/n&:&/' | "$SILT" produce -b "$BROKER" -t fol-a -p 2 -K : -H h=2 || fail "produce fol-a/2"
  wait_for 30 has_cluster_records "$BROKER2" fol-a 2 4 || fail "follow: the new partition fol-a/2 not mirrored"
  assert_eq "$(partition_records "$BROKER" fol-a 2)" "$(partition_records "$BROKER2" fol-a 2)" \
    "follow: the new partition's records at the same offsets"
  assert_contains "$("$SILT" topic -b "$BROKER2" describe fol-a)" "silt.mirror=true" \
    "follow: the grown topic is still a mirror topic"
else
  skip_part client "python3 confluent_kafka missing: a partition added during --follow not tested"
fi
"$SILT" topic -b "$BROKER" create fol-b --partitions 2 >/dev/null || fail "create fol-b"
seq 1 6 | sed 's/.*/b&:&/' | "$SILT" produce -b "$BROKER" -t fol-b -p 1 -K : || fail "produce fol-b"
wait_for 30 has_cluster_records "$BROKER2" fol-b 1 6 || fail "follow: the new topic fol-b not mirrored"
assert_eq "$(partition_records "$BROKER" fol-b 1)" "$(partition_records "$BROKER2" fol-b 1)" \
  "follow: the new topic's records at the same offsets"
seq 6 9 | "$SILT" produce -b "$BROKER" -t fol-a -p 0 || fail "produce fol-a again"
wait_for 20 has_cluster_records "$BROKER2" fol-a 0 9 || fail "follow: new records of the old partition"
assert_not_contains "$("$SILT" topic -b "$BROKER2" list)" "other" "follow: a topic not matching is not copied"
kill -TERM "$f2pid"
wait "$f2pid"
assert_eq 0 "$?" "follow from a cluster exits 0 on SIGTERM"
# ---- producer ids after --promote ---------------------------------------------------------------
# Two fresh brokers hand out the same producer ids (0, 1, ...). The copied batches keep the
# source's: an idempotent producer at the destination after promote must not be given one of
# them (it would inherit that producer's sequence and fail with OUT_OF_ORDER_SEQUENCE_NUMBER).
start_broker() {  # start_broker DIR: sets BPID and BADDR
  "$SILT" serve -d "$TMP/$1" --listen 127.0.0.1:0 2>"$1.log" &
  BPID=$!
  BG_PIDS+=("$BPID")
  wait_for 20 grep -q "listening on" "$1.log" || fail "broker $1 did not start: $(cat "$1.log")"
  BADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$1.log" | head -1)
}
start_broker broker3
b3pid=$BPID BROKER3=$BADDR
start_broker broker4
b4pid=$BPID BROKER4=$BADDR
for i in 1 2 3; do
  seq 1 20 | sed "s/^/p$i-/" | "$SILT" produce -b "$BROKER3" -t pids -p 0 || fail "produce pids $i"
done
producer_ids() { dump_partition "$1" | grep -o '"producerId":[0-9-]*' | sort -u | tr '\n' ' '; }
copied_pids=$(producer_ids "$TMP/broker3/pids-0")
assert_eq '"producerId":0 "producerId":1 "producerId":2 ' "$copied_pids" "three producers at the source"
expect_ok "mirror and promote pids" "$SILT" replicate "kafka://$BROKER3" "kafka://$BROKER4" -t pids --promote
for i in 1 2; do
  run sh -c "seq 1 5 | '$SILT' produce -b '$BROKER4' -t pids -p 0"
  assert_eq 0 "$RC" "an idempotent producer after promote ($i) is acknowledged: $ERR"
done
assert_eq 70 "$(partition_records "$BROKER4" pids 0 | wc -l | tr -d ' ')" "the copy and the new records"
new_pids=$(dump_partition "$TMP/broker4/pids-0" | grep -o '"producerId":[0-9-]*' | sort -u |
  grep -v -x -F -f <(echo "$copied_pids" | tr ' ' '\n' | sed '/^$/d') | wc -l | tr -d ' ')
assert_eq 2 "$new_pids" "the destination's producers got ids the copied batches do not carry"
# The re-producing path writes with producer ids of the destination only.
run sh -c "echo after | '$SILT' produce -b '$BROKER2' -t codec-snappy -p 0"
assert_eq 0 "$RC" "an idempotent producer after a re-produced copy is acknowledged: $ERR"
kill -TERM "$b4pid"
wait "$b4pid" 2>/dev/null
kill -TERM "$b3pid"
wait "$b3pid" 2>/dev/null
kill -TERM "$b2pid"
wait "$b2pid" 2>/dev/null
kill -TERM "$bpid"
wait "$bpid" 2>/dev/null

finish
