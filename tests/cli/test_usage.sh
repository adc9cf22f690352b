#!/usr/bin/env bash
# Usage errors: an unknown subcommand or option names its nearest spelling, a missing
# subcommand lists the ones there are, and each of CLI11's parse errors reads as one plain line.
source "$(dirname "$0")/lib.sh"

# expect_usage WHAT EXPECTED-MESSAGE CMD...: exit 2 and exactly one line, "silt: error: MESSAGE".
expect_usage() {
  local what=$1 message=$2
  shift 2
  run "$@"
  assert_eq 2 "$RC" "$what: exit status"
  assert_eq "silt: error: $message" "$ERR" "$what: message"
}

expect_usage "misspelt subcommand" \
  "unknown subcommand 'consum' for 'silt' (did you mean 'consume'?)" "$SILT" consum
expect_usage "misspelt subcommand, two letters swapped" \
  "unknown subcommand 'gruop' for 'silt' (did you mean 'group'?)" "$SILT" gruop list
expect_usage "unknown sub-subcommand lists the real ones" \
  "unknown subcommand 'ls' for 'silt topic': expected create, list, describe, delete, alter-config or reassign" \
  "$SILT" topic ls
expect_usage "misspelt sub-subcommand" \
  "unknown subcommand 'delte' for 'silt group' (did you mean 'delete'?)" "$SILT" group delte g
expect_usage "no subcommand" \
  "'silt topic' needs a subcommand: create, list, describe, delete, alter-config or reassign" "$SILT" topic
run "$SILT"
assert_contains "$ERR" "'silt' needs a subcommand: produce, consume," "no subcommand at all"
expect_usage "misspelt option" \
  "unknown option '--formt' for 'silt consume' (did you mean '--format'?)" \
  "$SILT" consume -t t --formt json
expect_usage "misspelt required option is named, not reported missing" \
  "unknown option '--topc' for 'silt consume' (did you mean '--topic'?)" "$SILT" consume --topc t
expect_usage "unknown short option" \
  "unknown option '-x' for 'silt produce'; see 'silt produce --help'" "$SILT" produce -t t -x
expect_usage "negative count: no 300-digit range" \
  "--count: must be 0 or more, got '-1'" "$SILT" consume -t t -c -1
expect_usage "negative partition" \
  "--partition: must be 0 or more, got '-3'" "$SILT" consume -t t -p -3
expect_usage "an option given twice" \
  "--offset was given 2 times; give it once" "$SILT" consume -t t -o 1 -o 2
expect_usage "not a number" \
  "--partitions: expected a number, got 'abc'" "$SILT" topic create t --partitions abc
expect_usage "a number out of range" \
  "--partitions: '99999999999' is out of range" "$SILT" topic create t --partitions 99999999999
expect_usage "an option without its value" "--topic needs a value" "$SILT" consume -t
expect_usage "a required option missing" \
  "'silt produce' needs --topic; see 'silt produce --help'" "$SILT" produce
expect_usage "a required argument missing" \
  "'silt topic create' needs the NAME argument; see 'silt topic create --help'" "$SILT" topic create
expect_usage "extra arguments in the order given" \
  "unexpected arguments 'a b' for 'silt consume'; see 'silt consume --help'" \
  "$SILT" consume -t t a b
expect_usage "an enum value misspelt" \
  "--compression: unknown value 'gzp': expected none, gzip, snappy, lz4 or zstd (did you mean 'gzip'?)" \
  "$SILT" produce -t t -z gzp
expect_usage "an enum value far from any" \
  "--format: unknown value 'yaml': expected text or json" "$SILT" topic list --format yaml
expect_usage "a misspelt topic config key" \
  "unknown topic config 'retention.msx' (did you mean 'retention.ms'?)" \
  "$SILT" topic create t --config retention.msx=5
expect_usage "a misspelt key to delete" \
  "unknown topic config 'segmnt.bytes' (did you mean 'segment.bytes'?)" \
  "$SILT" topic alter-config t --delete-config segmnt.bytes
run "$SILT" topic list
assert_eq "" "$OUT" "a refused config key created nothing"
# Values that start with '-' are values, not options.
"$SILT" topic create t >/dev/null
expect_ok "-o -N is a value" "$SILT" consume -t t -o -5
finish
