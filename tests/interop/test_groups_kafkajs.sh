#!/bin/bash
# kafkajs (Node.js) producing and consuming in a group against `silt serve`. kafkajs comes from
# tests/interop/package-lock.json (npm ci, through the npm registry) when it is not there yet.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skip "node/npm not installed (apt-get install nodejs npm)"
fi
if [ ! -f "$HERE/node_modules/kafkajs/package.json" ]; then
  if ! (cd "$HERE" && npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1); then
    cat "$WORK/npm.log" >&2
    skip "could not install kafkajs with npm ci (no npm registry?)"
  fi
fi

start_broker --set group.initial.rebalance.delay.ms=0
timeout 90 node "$HERE/kafkajs_group.js" "$BROKER" || fail "kafkajs group test"
grep -q "group js-group: generation" "$WORK/broker.log" || fail "no group generation in the log"
echo PASS
