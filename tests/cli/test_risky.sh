#!/usr/bin/env bash
# Risky requests: a partition count a data directory cannot carry is refused; flags that only
# mean something with -b are an error without it; -b and -d do not mix; -b pointed at a port
# that is not a Kafka listener says so within seconds.
source "$(dirname "$0")/lib.sh"

expect_fail 2 "topic create --partitions 100000 offline" "$SILT" topic create big --partitions 100000
assert_contains "$ERR" "at most 4000 per topic" "the limit is named"
[ ! -e "$SILT_DATA_DIR/big-0" ] && pass || fail "a refused topic left partitions behind"
expect_ok "the limit itself is accepted" "$SILT" topic create big --partitions 4000
expect_fail 2 "alter-config --partitions past the limit" "$SILT" topic alter-config big --partitions 4001
expect_ok "delete of the largest topic" "$SILT" topic delete big

for flags in "topic create t --replication-factor 3" "produce -t t --acks 1" "produce -t t --no-idempotence"; do
  # shellcheck disable=SC2086
  expect_fail 2 "$flags without -b" "$SILT" $flags </dev/null
  assert_contains "$ERR" "only means something with -b" "$flags without -b: said why"
done
run "$SILT" topic list
assert_eq "" "$OUT" "a refused -b-only flag created nothing"

expect_fail 2 "-b and -d together" "$SILT" topic list -b 127.0.0.1:9 -d "$SILT_DATA_DIR"
assert_contains "$ERR" "-b and -d cannot be used together" "-b with -d: said why"
expect_fail 2 "-d and -b on consume" "$SILT" consume -d "$SILT_DATA_DIR" -t t -b 127.0.0.1:9
# $SILT_DATA_DIR is only a default: with -b it is simply not used.
expect_fail 2 "-b alone to a closed port" "$SILT" topic list -b 127.0.0.1:9
assert_not_contains "$ERR" "cannot be used together" "\$SILT_DATA_DIR does not clash with -b"

# Ports that are not Kafka listeners: one that answers in HTTP, one that never answers.
if command -v python3 >/dev/null; then
  cat >"$TMP/fake.py" <<'PY'
import socket, sys, threading, time
def serve(sock, answer):
    while True:
        c, _ = sock.accept()
        if answer:
            c.recv(100)
            c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            c.close()
        else:
            threading.Thread(target=lambda c=c: (time.sleep(60), c.close()), daemon=True).start()
ports = []
for answer in (True, False):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    ports.append(s.getsockname()[1])
    threading.Thread(target=serve, args=(s, answer), daemon=True).start()
open(sys.argv[1], "w").write("%d %d\n" % tuple(ports))
while True:
    time.sleep(1)
PY
  python3 "$TMP/fake.py" "$TMP/ports" &
  BG_PIDS+=($!)
  wait_for 5 test -s "$TMP/ports" || fail "the fake servers did not start"
  read -r http_port silent_port <"$TMP/ports"
  start=$SECONDS
  expect_fail 2 "-b at an HTTP port" "$SILT" topic list -b "127.0.0.1:$http_port"
  assert_contains "$ERR" "answered in HTTP, not the Kafka protocol" "an HTTP port is named as such"
  [ $((SECONDS - start)) -le 2 ] && pass || fail "an HTTP answer took $((SECONDS - start)) s to report"
  start=$SECONDS
  expect_fail 2 "-b at a port that never answers" "$SILT" topic list -b "127.0.0.1:$silent_port"
  assert_contains "$ERR" "is it a Kafka broker's listener?" "a silent port is questioned"
  [ $((SECONDS - start)) -le 15 ] && pass || fail "a silent port took $((SECONDS - start)) s to report"
else
  skip_part client "not-a-broker checks: python3 is not installed"
fi
finish
