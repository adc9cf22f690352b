#!/bin/bash
# Debian's segmentio/kafka-go 0.2.1 (golang-github-segmentio-kafka-go-dev) against `silt serve`:
# Produce v2 with magic 1 message sets and Fetch v2, with every codec it has, and a consumer
# group. The Go program (tests/interop/kafka_go/main.go) is built here with Debian's golang-go
# in GOPATH mode, into the build directory.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/broker_common.sh"
GOPATH_DEBIAN=/usr/share/gocode
command -v go >/dev/null 2>&1 || skip "go is not installed (apt-get install golang-go)"
[ -d "$GOPATH_DEBIAN/src/github.com/segmentio/kafka-go" ] ||
  skip "kafka-go is not installed (apt-get install golang-github-segmentio-kafka-go-dev)"

OUT="$(cd "$(dirname "$SILT")" && pwd)/interop-go"
mkdir -p "$OUT"
(cd "$HERE/kafka_go" &&
  GOPATH="$GOPATH_DEBIAN" GO111MODULE=off GOCACHE="$OUT/cache" GOFLAGS= \
    go build -o "$OUT/kafka_go_interop" .) >"$WORK/build.log" 2>&1 ||
  { cat "$WORK/build.log" >&2; echo "FAIL: building the kafka-go program" >&2; exit 1; }

start_broker
timeout 180 "$OUT/kafka_go_interop" "$BROKER" kafka-go || fail "kafka-go program failed"
stop_broker
grep -q "shutdown complete" "$WORK/broker.log" || fail "no clean shutdown line"
echo "PASS: kafka-go 0.2.1 interop"
