#!/bin/bash
# kafka-node (npm; speaks Kafka 0.9-0.11) against `silt serve`: Produce v1/v2 and Fetch v0-v2
# with magic 0 and 1 message sets, every codec it has (none, gzip, snappy), ListOffsets v0 and
# consumer groups (tests/interop/kafka_node.js). kafka-node comes from
# tests/interop/package-lock.json (npm ci) when it is not there yet; its optional snappy module
# is native and is built against the installed Node headers when npm did not build it.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skip "node/npm not installed (apt-get install nodejs npm)"
fi
if [ ! -f "$HERE/node_modules/kafka-node/package.json" ]; then
  if ! (cd "$HERE" && npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1); then
    cat "$WORK/npm.log" >&2
    skip "could not install kafka-node with npm ci (no npm registry?)"
  fi
fi
snappy_ok() { (cd "$HERE" && node -e "require('snappy')") >/dev/null 2>&1; }
if ! snappy_ok && [ -f /usr/include/node/node.h ]; then
  # Its install script wants to download prebuilt binaries or Node's headers; build it here
  # against the headers of the installed Node instead.
  (cd "$HERE" && npm_config_nodedir=/usr npm rebuild snappy --ignore-scripts=false \
    >"$WORK/snappy.log" 2>&1) || cat "$WORK/snappy.log" >&2
fi
codecs=0,1,2
snappy_ok || codecs=0,1

start_broker --set group.initial.rebalance.delay.ms=0
KAFKA_NODE_CODECS=$codecs timeout 300 node "$HERE/kafka_node.js" "$BROKER" || fail "kafka-node test"
stop_broker
grep -q "shutdown complete" "$WORK/broker.log" || fail "no clean shutdown line"
if [ "$codecs" != 0,1,2 ]; then
  skip "kafka-node passed without snappy: its native snappy module could not be built (Node headers: apt-get install libnode-dev)"
fi
echo "PASS: kafka-node interop"
