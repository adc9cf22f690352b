#!/bin/sh
# Prints every request that got a 5xx answer, as it happens, from the topic filled by
# nginx-access-to-silt.sh.
#
#   examples/alert-on-5xx.sh
#
# silt consume -f sleeps until the topic changes (inotify), so this costs nothing while the
# site is quiet. -o end starts with new requests; use -g alerts instead to resume where the last
# run stopped. The template prints the partition and offset in front of each line, so a record
# can be looked up later with `silt consume -t nginx-access -p P -o OFFSET -c 1`.
#
# Environment: SILT (binary, default silt), TOPIC (default nginx-access), SILT_DATA_DIR.
set -eu
SILT=${SILT:-silt}
TOPIC=${TOPIC:-nginx-access}

"$SILT" consume -t "$TOPIC" -o end -f --format '%p:%o %s\n' |
  grep --line-buffered -E '" 5[0-9]{2} '
