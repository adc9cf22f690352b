#!/usr/bin/env bash
# silt serve's configuration: a misspelt key in server.properties is named as unknown with the
# nearest key (a real Kafka key that means nothing here is only noted); log.dirs lists are
# refused; start-up failures are one "silt: error:" line and exit 2.
source "$(dirname "$0")/lib.sh"

# serve_until_listening LOG ARGS...: starts silt serve, waits for its "listening on" line.
serve_until_listening() {
  local log=$1
  shift
  "$SILT" serve --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  SERVE_PID=$!
  BG_PIDS+=("$SERVE_PID")
  wait_for 10 grep -q "listening on" "$log"
}

cat >"$TMP/server.properties" <<'PROPS'
num.partitions=2
log.retention.hourz=5
socket.send.buffer.bytes=102400
PROPS
if serve_until_listening "$TMP/serve.log" -c "$TMP/server.properties" -d "$TMP/d1"; then pass; else fail "serve did not start: $(cat "$TMP/serve.log")"; fi
log=$(cat "$TMP/serve.log")
assert_contains "$log" "unknown config key 'log.retention.hourz' in $TMP/server.properties (did you mean 'log.retention.hours'?); ignored" "a typo is named with the nearest key"
assert_contains "$log" "config key 'socket.send.buffer.bytes' has no effect on this broker; ignored" "a real Kafka key is only noted"
assert_not_contains "$log" "'log.retention.hourz' has no effect" "a typo is not called a key without effect"

# A second broker on the same data directory: one error line naming the first one's pid.
expect_fail 2 "a second broker on a locked data dir" timeout 20 "$SILT" serve --listen 127.0.0.1:0 -d "$TMP/d1"
assert_contains "$ERR" "a broker (pid $SERVE_PID) is already running on data directory $TMP/d1" "the holder's pid is named"
assert_eq 1 "$(printf '%s\n' "$ERR" | wc -l)" "one line for a start-up failure"
# Local commands on it point to -b.
expect_fail 2 "produce into a broker's data dir" "$SILT" produce -d "$TMP/d1" -t t </dev/null
assert_contains "$ERR" "a broker is running on it (pid $SERVE_PID); use -b HOST:PORT" "local writers point to -b"
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null

# --set: a typo is refused with the nearest key.
expect_fail 2 "--set with a typo" timeout 20 "$SILT" serve --listen 127.0.0.1:0 -d "$TMP/d2" --set num.partition=3
assert_contains "$ERR" "unknown broker config 'num.partition' (did you mean 'num.partitions'?)" "--set suggests the nearest key"

# log.dirs with several directories is refused, in the file and in --set.
printf 'log.dirs=%s,%s\n' "$TMP/a" "$TMP/b" >"$TMP/two.properties"
expect_fail 2 "log.dirs with two directories" timeout 20 "$SILT" serve --listen 127.0.0.1:0 -c "$TMP/two.properties"
assert_contains "$ERR" "one data directory per broker" "a log.dirs list is explained"
[ ! -e "$TMP/a" ] && pass || fail "a refused log.dirs list created its first directory"
expect_fail 2 "--set log.dirs list" timeout 20 "$SILT" serve --listen 127.0.0.1:0 --set "log.dirs=$TMP/a,$TMP/b"

# Other start-up failures: a port in use, a missing config file.
python3 - "$TMP/port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
time.sleep(30)
PY
BG_PIDS+=($!)
wait_for 5 test -s "$TMP/port"
expect_fail 2 "a port in use" timeout 20 "$SILT" serve --listen "127.0.0.1:$(cat "$TMP/port")" -d "$TMP/d3"
assert_contains "$ERR" "cannot start:" "a bind failure says it could not start"
assert_eq 1 "$(printf '%s\n' "$ERR" | wc -l)" "a bind failure is one line"
expect_fail 2 "a missing config file" timeout 20 "$SILT" serve -c "$TMP/nope.properties"
finish
