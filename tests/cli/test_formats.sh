#!/usr/bin/env bash
# One spelling of --format everywhere: a misspelt kind is an error, not a template that prints
# itself; dump-segment and verify-crc take --format json (--json kept); -q quiets JSON too.
source "$(dirname "$0")/lib.sh"

printf 'a\nb\nc\n' | "$SILT" produce -t t
seg="$SILT_DATA_DIR/t-0/00000000000000000000.log"

# consume: a format with no %-token is a misspelling.
expect_fail 2 "--format jsn" "$SILT" consume -t t --format jsn
assert_eq "" "$OUT" "--format jsn prints nothing"
assert_contains "$ERR" "unknown format 'jsn'" "--format jsn names the format"
assert_contains "$ERR" "(did you mean 'json'?)" "--format jsn suggests json"
expect_fail 2 "--format without any token" "$SILT" consume -t t --format 'value\n'
run "$SILT" consume -t t --format '%s;'
assert_eq "a;b;c;" "$OUT" "a template with a token still works"

# dump-segment: --format json is --json.
run "$SILT" dump-segment --json "$seg"
json_alias=$OUT
expect_ok "dump-segment --format json" "$SILT" dump-segment --format json "$seg"
assert_eq "$json_alias" "$OUT" "dump-segment --format json is the same as --json"
assert_contains "$OUT" '"baseOffset":0' "dump-segment --format json prints JSON"
run "$SILT" dump-segment --format text "$seg"
assert_contains "$OUT" "position: 0 baseOffset: 0" "dump-segment --format text"
expect_fail 2 "dump-segment --format yaml" "$SILT" dump-segment --format yaml "$seg"

# verify-crc: --format json is --json; -q quiets the JSON summary as well as the text line.
run "$SILT" verify-crc --json "$SILT_DATA_DIR"
json_alias=$OUT
expect_ok "verify-crc --format json" "$SILT" verify-crc --format json "$SILT_DATA_DIR"
assert_eq "$json_alias" "$OUT" "verify-crc --format json is the same as --json"
assert_contains "$OUT" '"summary"' "verify-crc --format json has a summary"
expect_ok "verify-crc -q --format json" "$SILT" verify-crc -q --format json "$SILT_DATA_DIR"
assert_eq "" "$OUT" "-q quiets the JSON summary"
expect_ok "verify-crc -q" "$SILT" verify-crc -q "$SILT_DATA_DIR"
assert_eq "" "$OUT" "-q quiets the text summary"
# Problems are still printed under -q, in either format.
cp "$seg" "$TMP/bad.log"
printf '\xff' | dd of="$TMP/bad.log" bs=1 seek=70 conv=notrunc 2>/dev/null
run "$SILT" verify-crc -q --format json "$TMP/bad.log"
assert_eq 1 "$RC" "-q with a problem exits 1"
assert_contains "$OUT" '"kind":"corruption"' "-q still prints the problem as JSON"
assert_not_contains "$OUT" '"summary"' "-q prints no JSON summary with a problem either"
finish
