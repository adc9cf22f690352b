#!/usr/bin/env bash
# `topic describe`, `topic list`, `group list` and `group describe` print one JSON schema in both
# modes: the same keys with the same types on a data directory and through `silt serve` over the
# same directory. A value one mode cannot know is null (e.g. size over the network; leader in a
# data dir), which the comparison allows for the keys that say so.
source "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 is needed to compare JSON"; exit 77; }

D="$TMP/d"
"$SILT" topic create -d "$D" t --partitions 2 --config retention.ms=3600000 >/dev/null
seq 1 6 | "$SILT" produce -d "$D" -t t
"$SILT" consume -d "$D" -t t -g g -c 3 >/dev/null

local_out() {
  "$SILT" topic describe -d "$D" t --format json >"$TMP/local-topic.json"
  "$SILT" topic list -d "$D" --format json | grep '"topic":"t"' >"$TMP/local-topics.json"
  "$SILT" group list -d "$D" --format json >"$TMP/local-groups.json"
  "$SILT" group describe -d "$D" g --format json >"$TMP/local-group.json"
}
local_out

"$SILT" serve -d "$D" --listen 127.0.0.1:0 --set group.initial.rebalance.delay.ms=0 2>"$TMP/broker.log" &
BROKER_PID=$!
BG_PIDS+=("$BROKER_PID")
if ! wait_for 20 grep -qs "listening on" "$TMP/broker.log"; then
  echo "FAIL: the broker did not start:" >&2
  cat "$TMP/broker.log" >&2
  exit 1
fi
B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)
"$SILT" topic describe -b "$B" t --format json >"$TMP/net-topic.json"
"$SILT" topic list -b "$B" --format json | grep '"topic":"t"' >"$TMP/net-topics.json"
"$SILT" group list -b "$B" --format json | grep '"group":"g"' >"$TMP/net-groups.json"
"$SILT" group describe -b "$B" g --format json >"$TMP/net-group.json"
kill -TERM "$BROKER_PID"
wait "$BROKER_PID"

# compare WHAT LOCAL NET NULLABLE_KEYS: every line's key paths and value types agree.
compare() {
  local what=$1
  run python3 - "$2" "$3" "$4" <<'PY'
import json, sys
local_path, net_path, nullable = sys.argv[1], sys.argv[2], set(sys.argv[3].split(",")) - {""}

def kind(v):
    if v is None: return "null"
    if isinstance(v, bool): return "bool"
    if isinstance(v, int): return "int"
    return type(v).__name__

def shape(v, path, out):
    out.setdefault(path, set()).add(kind(v))
    if isinstance(v, dict):
        for k, x in v.items():
            # Config maps and assignments are keyed by names, not by schema.
            shape(x, path + "." + ("*" if path.endswith(("configs", "assignment")) else k), out)
    elif isinstance(v, list):
        for x in v: shape(x, path + "[]", out)

def load(p):
    lines = [json.loads(l) for l in open(p) if l.strip()]
    if not lines: sys.exit(p + " is empty")
    # The first line of group describe is the group, the rest one per partition.
    out = {}
    for i, l in enumerate(lines): shape(l, "line0" if i == 0 else "row", out)
    return out

a, b = load(local_path), load(net_path)
bad = []
for p in sorted(set(a) | set(b)):
    if p not in a or p not in b:
        # An empty list on one side has no element paths.
        if not p.endswith("[]") and "[]." not in p: bad.append("key %s only in %s" % (p, "local" if p in a else "network"))
        continue
    ta, tb = a[p] - {"null"}, b[p] - {"null"}
    leaf = p.rsplit(".", 1)[-1].rstrip("[]")
    if ta and tb and ta != tb: bad.append("%s: %s here, %s there" % (p, ta, tb))
    if (a[p] == {"null"}) != (b[p] == {"null"}) and leaf not in nullable:
        bad.append("%s is null in one mode only (local %s, network %s)" % (p, a[p], b[p]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  if [ "$RC" -eq 0 ]; then pass; else fail "$what: $OUT $ERR"; fi
}

compare "topic describe" "$TMP/local-topic.json" "$TMP/net-topic.json" \
  "leader,size,segments,offline_replicas,under_replicated,offline"
compare "topic list" "$TMP/local-topics.json" "$TMP/net-topics.json" ""
compare "group list" "$TMP/local-groups.json" "$TMP/net-groups.json" ""
compare "group describe" "$TMP/local-group.json" "$TMP/net-group.json" "member_id,host,client_id"
# And the shared values agree.
assert_eq "$(grep -o '"partition":[0-9]*,"committed_offset":[0-9]*' "$TMP/local-group.json")" \
  "$(grep -o '"partition":[0-9]*,"committed_offset":[0-9]*' "$TMP/net-group.json")" "the same offsets in both modes"
# The topic id is the data dir's own, through Metadata v10+ over the network.
assert_eq "$(grep -o '"topic_id":"[^"]*"' "$TMP/local-topic.json")" \
  "$(grep -o '"topic_id":"[^"]*"' "$TMP/net-topic.json")" "the same topic id in both modes"
assert_contains "$(cat "$TMP/local-topic.json")" '"topic_id":"' "a data dir knows the topic id"

finish
