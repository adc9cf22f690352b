#!/bin/sh
# The fault suite's long run (`make fault`): every nemesis case of tests/fault/test_faults.py with
# a minute of load and a fault every few seconds, against three `silt serve` nodes behind the
# fault proxy. Results (one JSON summary and one history per case) go to $BUILD/fault-results.
#
#   scripts/fault.sh [BUILD_DIR] [test_faults.py options, e.g. --case kill_leader --seed 7]
set -eu
BUILD="${1:-build}"
[ $# -gt 0 ] && shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
export SILT="$BUILD/silt"
export SILT_FAULT_PROXY="$BUILD/tests/fault/silt_fault_proxy"
for f in "$SILT" "$SILT_FAULT_PROXY"; do
  if [ ! -x "$f" ]; then
    echo "fault.sh: $f is missing: build it first (make build)" >&2
    exit 2
  fi
done
RESULTS="$BUILD/fault-results"
mkdir -p "$RESULTS"
echo "fault.sh: long cases, results in $RESULTS" >&2
# The Python that has confluent-kafka (Debian's python3-confluent-kafka is for /usr/bin/python3,
# which a python3 earlier on PATH may not see).
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for p in python3 /usr/bin/python3; do
    if "$p" -c "import confluent_kafka" 2>/dev/null; then PY="$p"; break; fi
  done
fi
exec "${PY:-python3}" "$ROOT/tests/fault/test_faults.py" --long --results "$RESULTS" "$@"
