# The skip rule shared by the shell tests (sourced). A test that cannot run exits 77, which ctest
# reports as "Skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt), never as "Passed". Where the
# missing thing is required, the skip is a failure instead:
#   SILT_REQUIRE_CLIENTS=1   a Kafka client or tool (kcat, python3-kafka, node, ...) must be there
#   SILT_REQUIRE_FIXTURES=1  ../shared/fixtures must be there
# .ci/run sets both.
SILT_SKIP_EXIT=77

# skip_variable KIND: the variable that makes a skip of KIND (client or fixtures) a failure.
skip_variable() {
  case "$1" in
    client) echo SILT_REQUIRE_CLIENTS ;;
    fixtures) echo SILT_REQUIRE_FIXTURES ;;
    *) echo "skip_variable: unknown kind $1" >&2; return 1 ;;
  esac
}

# skip_is_failure KIND: true when a skip of KIND must fail the test.
skip_is_failure() {
  local var
  var=$(skip_variable "$1") || return 0
  [ "${!var:-}" = 1 ]
}

# skip_test KIND MESSAGE: the whole test cannot run; exits.
skip_test() {
  local kind=$1
  shift
  if skip_is_failure "$kind"; then
    echo "FAIL: would skip, but $(skip_variable "$kind")=1: $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit "$SILT_SKIP_EXIT"
}
