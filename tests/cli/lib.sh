# Helpers shared by the CLI tests (sourced, bash). Each test runs the real binary ($SILT) in its
# own temporary directory, counts checks, prints one summary line and exits non-zero on failure.
set -u
: "${SILT:?set SILT to the path of the silt binary}"
SILT_SOURCE_DIR=${SILT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/silt-$TEST_NAME.XXXXXX")
export SILT_DATA_DIR="$TMP/data"
PASSED=0
FAILED=0
SKIPPED=0
BG_PIDS=()

cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

. "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"

pass() { PASSED=$((PASSED + 1)); }
fail() {
  FAILED=$((FAILED + 1))
  echo "FAIL: $*" >&2
}

# assert_eq EXPECTED ACTUAL WHAT
assert_eq() {
  if [ "$1" == "$2" ]; then pass; else fail "$3: expected [$1], got [$2]"; fi
}
# assert_contains HAYSTACK NEEDLE WHAT
assert_contains() {
  case "$1" in *"$2"*) pass ;; *) fail "$3: [$2] not found in [$1]" ;; esac
}
# assert_not_contains HAYSTACK NEEDLE WHAT
assert_not_contains() {
  case "$1" in *"$2"*) fail "$3: [$2] unexpectedly in [$1]" ;; *) pass ;; esac
}
# assert_files_equal A B WHAT (byte for byte)
assert_files_equal() {
  if cmp -s "$1" "$2"; then pass; else fail "$3: $1 and $2 differ"; fi
}

# run CMD...: runs it, leaving stdout in $OUT, stderr in $ERR, the exit status in $RC.
run() {
  "$@" >"$TMP/.out" 2>"$TMP/.err"
  RC=$?
  OUT=$(cat "$TMP/.out")
  ERR=$(cat "$TMP/.err")
}
# expect_ok WHAT CMD...: runs it and checks it exits 0 with nothing on stderr.
expect_ok() {
  local what=$1
  shift
  run "$@"
  if [ "$RC" -eq 0 ]; then pass; else fail "$what: exit $RC, stderr: $ERR"; fi
}
# expect_fail CODE WHAT CMD...: runs it and checks the exit status and that stderr holds one
# "silt: error: ..." line.
expect_fail() {
  local code=$1 what=$2
  shift 2
  run "$@"
  if [ "$RC" -ne "$code" ]; then
    fail "$what: expected exit $code, got $RC (stderr: $ERR)"
    return
  fi
  case "$ERR" in
    "silt: error: "*) pass ;;
    *) fail "$what: stderr does not start with 'silt: error: ': [$ERR]" ;;
  esac
}

# wait_for SECONDS CMD...: retries CMD every 0.05 s until it succeeds; false on timeout.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

# skip_part KIND WHAT: one part of the test cannot run (KIND client or fixtures, as in
# tests/skip.sh). The rest runs; finish then exits as skipped, so a partial run is not a pass.
# Where KIND is required, it counts as a failure.
skip_part() {
  local kind=$1
  shift
  if skip_is_failure "$kind"; then
    fail "would skip, but $(skip_variable "$kind")=1: $*"
  else
    SKIPPED=$((SKIPPED + 1))
    echo "SKIP (part): $*"
  fi
}

# finish: the summary line and the exit status (1 on a failure, 77 when a part was skipped).
finish() {
  echo "$TEST_NAME: $PASSED passed, $FAILED failed, $SKIPPED parts skipped"
  [ "$FAILED" -eq 0 ] || exit 1
  [ "$SKIPPED" -eq 0 ] || exit "$SILT_SKIP_EXIT"
  exit 0
}
