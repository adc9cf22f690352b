# Shared by the shell interop tests: start `$SILT serve` on a free port over a temp data dir and
# stop it at exit. Source it, then call start_broker; $BROKER holds host:port afterwards.
set -eu

: "${SILT:?SILT must point to the silt binary}"
WORK=$(mktemp -d /tmp/silt-interop-XXXXXX)
BROKER_PID=""

stop_broker() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
  fi
  BROKER_PID=""
}

cleanup() {
  stop_broker
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_broker [extra serve flags...]
start_broker() {
  : > "$WORK/broker.log"
  "$SILT" serve -d "$WORK/data" --listen 127.0.0.1:0 "$@" 2>"$WORK/broker.log" &
  BROKER_PID=$!
  for _ in $(seq 1 100); do
    if grep -q "listening on" "$WORK/broker.log"; then break; fi
    if ! kill -0 "$BROKER_PID" 2>/dev/null; then
      echo "FAIL: broker exited at start-up:" >&2
      cat "$WORK/broker.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  BROKER=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$WORK/broker.log" | head -1)
  if [ -z "$BROKER" ]; then
    echo "FAIL: no 'listening on' line from the broker" >&2
    cat "$WORK/broker.log" >&2
    exit 1
  fi
}

# skip MESSAGE: the test cannot run because a client is missing (tests/skip.sh: exit 77, or a
# failure with SILT_REQUIRE_CLIENTS=1).
. "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
skip() { skip_test client "$@"; }

fail() {
  echo "FAIL: $*" >&2
  echo "--- broker log ---" >&2
  tail -50 "$WORK/broker.log" >&2 || true
  exit 1
}
