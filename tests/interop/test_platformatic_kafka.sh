#!/bin/bash
# @platformatic/kafka (npm; flexible versions only, Kafka 3.5+) against `silt serve`: admin calls,
# idempotent produce in every codec it has and a group consumer, at the newest versions silt
# serves (platformatic_kafka.mjs lists them). It needs Node.js >= 20.19.4 (node_runtime.sh finds
# or installs one); the client comes from tests/interop/package-lock.json (npm ci) when it is not
# there yet.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"
. "$HERE/node_runtime.sh"

command -v npm >/dev/null || skip "npm not installed (apt-get install npm)"
if [ ! -f "$HERE/node_modules/@platformatic/kafka/package.json" ]; then
  if ! (cd "$HERE" && npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1); then
    cat "$WORK/npm.log" >&2
    skip "could not install @platformatic/kafka with npm ci (no npm registry?)"
  fi
fi
need_node 20.19.4

start_broker --set group.initial.rebalance.delay.ms=0
timeout 180 "$NODE" "$HERE/platformatic_kafka.mjs" "$BROKER" || fail "@platformatic/kafka test"
grep -q "group plat-group: generation" "$WORK/broker.log" || fail "no group generation in the log"
echo PASS
