#!/usr/bin/env bash
# `silt cluster` against one `silt serve` (text on a terminal and in a pipe, JSON; --topic,
# --internal; no quorum on a single node) and against a data directory. The three-node case
# (quorum, leaders spread, a fenced node) is in tests/interop/test_cluster.py.
source "$(dirname "$0")/lib.sh"

"$SILT" serve -d "$TMP/broker-data" --listen 127.0.0.1:0 --node-id 7 2>"$TMP/broker.log" &
BROKER_PID=$!
BG_PIDS+=("$BROKER_PID")
listening() { grep -q "listening on" "$TMP/broker.log"; }
if ! wait_for 20 listening; then
  echo "FAIL: the broker did not start:" >&2
  cat "$TMP/broker.log" >&2
  exit 1
fi
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)
PORT=${B##*:}

expect_ok "topic create" "$SILT" topic create -b "$B" orders --partitions 3
expect_ok "topic create" "$SILT" topic create -b "$B" audit
# A consumer group makes __consumer_offsets exist.
echo x | "$SILT" produce -b "$B" -t audit
"$SILT" consume -b "$B" -t audit -g g1 -c 1 >/dev/null 2>&1

# JSON: one object, one line.
expect_ok "cluster --format json" "$SILT" cluster -b "$B" --format json
assert_eq 1 "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" "the JSON view is one line"
check=$(printf '%s' "$OUT" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["brokers"] == [{"id": 7, "host": "127.0.0.1", "port": '"$PORT"', "rack": None}], j["brokers"]
assert j["controller"] == 7, j["controller"]
assert j["fenced_brokers"] == [], j
assert j["quorum"] is None, j["quorum"]
names = [t["topic"] for t in j["topics"]]
assert names == ["audit", "orders"], names
o = j["topics"][1]
assert [p["partition"] for p in o["partitions"]] == [0, 1, 2]
for p in o["partitions"]:
    assert p["leader"] == 7 and p["replicas"] == [7] and p["isr"] == [7], p
    assert p["offline_replicas"] == [] and p["error_code"] == 0 and p["leader_epoch"] == 0, p
    assert p["under_replicated"] is False and p["offline"] is False, p
assert o["topic_id"] and o["internal"] is False
print("ok")' 2>&1)
assert_eq ok "$check" "cluster JSON describes the one broker and its topics"

# --internal shows __consumer_offsets; -t picks topics.
expect_ok "cluster --internal" "$SILT" cluster -b "$B" --internal --format json
assert_contains "$OUT" '"topic":"__consumer_offsets","topic_id"' "--internal lists __consumer_offsets"
assert_contains "$OUT" '"internal":true' "__consumer_offsets is internal"
expect_ok "cluster -t" "$SILT" cluster -b "$B" -t orders --format json
assert_not_contains "$OUT" '"audit"' "-t orders leaves audit out"
assert_contains "$OUT" '"orders"' "-t orders shows orders"
expect_fail 2 "cluster -t missing" "$SILT" cluster -b "$B" -t nosuch
assert_contains "$ERR" "nosuch" "a missing topic is named"

# Text in a pipe: tab-separated rows that say what they are.
expect_ok "cluster (pipe)" "$SILT" cluster -b "$B"
assert_eq "broker	7	127.0.0.1	$PORT	controller" "$(printf '%s\n' "$OUT" | grep '^broker')" "the broker row"
assert_eq "partition	orders	1	7	0	7	7	-	ok" "$(printf '%s\n' "$OUT" | grep '^partition	orders	1')" "a partition row"
assert_eq 4 "$(printf '%s\n' "$OUT" | grep -c '^partition')" "four partitions, internal topics hidden"
assert_not_contains "$OUT" "quorum" "no quorum on a single node"

# Text on a terminal: headed, aligned tables.
if command -v script >/dev/null; then
  human=$(script -qec "$(printf '%q ' "$SILT" cluster -b "$B")" /dev/null | tr -d '\r')
  assert_contains "$human" "Controller: 7" "the controller on a terminal"
  assert_contains "$human" "ID  HOST       PORT" "aligned broker table"
  assert_contains "$human" "TOPIC   PARTITION  LEADER  EPOCH  REPLICAS  ISR  OFFLINE  STATUS" "aligned partition table"
else
  skip_part client "terminal output: script(1) is not installed"
fi

# The data directory's own view.
kill "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
expect_ok "cluster -d" "$SILT" cluster -d "$TMP/broker-data" --format json
check=$(printf '%s' "$OUT" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["brokers"] == [] and j["controller"] is None and j["quorum"] is None, j
assert [t["topic"] for t in j["topics"]] == ["audit", "orders"], j["topics"]
assert len(j["topics"][1]["partitions"]) == 3
for p in j["topics"][1]["partitions"]:
    assert p["under_replicated"] is None and p["offline"] is None, p
print("ok")' 2>&1)
assert_eq ok "$check" "cluster -d lists the data directory's topics"
expect_fail 2 "cluster -b and -d" "$SILT" cluster -b "$B" -d "$TMP/broker-data"
expect_fail 2 "cluster --format bad" "$SILT" cluster -d "$TMP/broker-data" --format yaml
finish
