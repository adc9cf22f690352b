#!/bin/sh
# `make run`: a broker on 127.0.0.1:9092 over ./silt-data when `silt serve` is built in;
# otherwise a short local demo of the offline toolkit over ./silt-data.
set -eu
SILT=${1:-build/silt}
has() { "$SILT" --help 2>/dev/null | grep -q "^  $1 "; }
if has serve; then
  echo "silt: starting a broker on 127.0.0.1:9092 over ./silt-data (Ctrl-C to stop)" >&2
  exec "$SILT" serve --data-dir ./silt-data --listen 127.0.0.1:9092
fi
echo "silt: no broker in this build yet; running the local demo over ./silt-data" >&2
"$SILT" --version
if has produce; then
  seq 1 5 | sed 's/^/hello /' | "$SILT" produce -d ./silt-data -t demo
  "$SILT" consume -d ./silt-data -t demo -o beginning
  "$SILT" topic -d ./silt-data describe demo
else
  "$SILT" --help
fi
