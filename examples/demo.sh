#!/usr/bin/env bash
# Runs both pipelines end to end against a synthetic nginx log in a temporary directory, for a
# few seconds, and shows what arrived. No nginx needed.
#
#   examples/demo.sh [path/to/silt]
set -eu
set -m  # each background pipeline gets its own process group, so cleanup can stop all of it
SILT=${1:-silt}
case "$SILT" in */*) SILT=$(cd "$(dirname "$SILT")" && pwd)/$(basename "$SILT") ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
export SILT SILT_DATA_DIR="$WORK/data"
LOG="$WORK/access.log"
: >"$LOG"
pids=""
cleanup() {
  for p in $pids; do kill -TERM -- "-$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

sh "$HERE/nginx-access-to-silt.sh" "$LOG" &
pids="$pids $!"
sleep 1
sh "$HERE/alert-on-5xx.sh" >"$WORK/alerts" &
pids="$pids $!"
sleep 1

# A little traffic: mostly 200s, some 404s and 502s.
i=0
while [ $i -lt 60 ]; do
  case $((i % 10)) in 3) status=404 ;; 7) status=502 ;; *) status=200 ;; esac
  printf '10.0.0.%d - - [02/Jan/2026:03:04:%02d +0000] "GET /item/%d HTTP/1.1" %d 512 "-" "curl/8.0"\n' \
    $((i % 5)) $((i % 60)) "$i" "$status" >>"$LOG"
  i=$((i + 1))
  sleep 0.02
done
sleep 2

echo "== topic"
"$SILT" topic describe nginx-access
echo "== requests per client (key)"
"$SILT" consume -t nginx-access --format '%k\n' | sort | uniq -c
echo "== 5xx alerts seen by the follower"
cat "$WORK/alerts"
