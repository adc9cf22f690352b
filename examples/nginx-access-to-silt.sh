#!/bin/sh
# Ships an nginx access log into a silt topic as it grows, one record per request.
#
#   examples/nginx-access-to-silt.sh [ACCESS_LOG]      (default /var/log/nginx/access.log)
#
# tail -F follows the file across log rotation. Each record's key is the client address (the
# first field of nginx's combined format), so one client's requests stay in order in one
# partition; the value is the whole line. Stop it with Ctrl-C: records already read are written
# and synced before silt produce exits.
#
# Environment: SILT (binary, default silt), TOPIC (default nginx-access), SILT_DATA_DIR.
set -eu
LOG=${1:-/var/log/nginx/access.log}
SILT=${SILT:-silt}
TOPIC=${TOPIC:-nginx-access}
TAB=$(printf '\t')

"$SILT" topic describe "$TOPIC" >/dev/null 2>&1 || "$SILT" topic create "$TOPIC" --partitions 3

# sed -u (unbuffered, so no line waits in a pipe buffer) writes "address<TAB>line"; silt
# produce splits at the tab (-K) and appends within --linger-ms of input going quiet.
tail -n 0 -F "$LOG" 2>/dev/null |
  sed -u "s/^\([^ ]*\)/\1$TAB&/" |
  "$SILT" produce -t "$TOPIC" -K "$TAB" -z lz4 --linger-ms 50
