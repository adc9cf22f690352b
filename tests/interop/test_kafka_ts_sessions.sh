#!/bin/bash
# kafka-ts (npm; Fetch v17 in incremental fetch sessions, KIP-227) producing and consuming in a
# group against `silt serve` while records keep arriving (kafka_ts_sessions.js). kafka-ts comes
# from tests/interop/package-lock.json (npm ci) when it is not there yet.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skip "node/npm not installed (apt-get install nodejs npm)"
fi
if [ ! -f "$HERE/node_modules/kafka-ts/package.json" ]; then
  if ! (cd "$HERE" && npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1); then
    cat "$WORK/npm.log" >&2
    skip "could not install kafka-ts with npm ci (no npm registry?)"
  fi
fi

start_broker --set group.initial.rebalance.delay.ms=0 --metrics 127.0.0.1:0
METRICS=$(sed -n 's|.*metrics on http://\([0-9.]*:[0-9]*\).*|\1|p' "$WORK/broker.log" | head -1)
[ -n "$METRICS" ] || fail "no 'metrics on' line in the broker log"
"$SILT" topic -b "$BROKER" create ts-sessions --partitions 3 >/dev/null || fail "topic create"
timeout 120 node "$HERE/kafka_ts_sessions.js" "$BROKER" "$METRICS" || fail "kafka-ts session test"
echo PASS
