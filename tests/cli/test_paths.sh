#!/usr/bin/env bash
# Wrong paths: a data dir is created, never its missing parents; verify-crc of a directory with
# no segments is an error, and files that are not segments are skipped and listed;
# dump-segment of a file that is not a segment says so.
source "$(dirname "$0")/lib.sh"

# A data dir whose parent does not exist: nothing is created.
expect_fail 2 "produce -d with a missing parent" "$SILT" produce -d "$TMP/no/such/dir" -t t </dev/null
assert_contains "$ERR" "'$TMP/no/such' does not exist" "the missing parent is named"
[ ! -e "$TMP/no" ] && pass || fail "produce -d created missing parents"
expect_fail 2 "topic create -d with a missing parent" "$SILT" topic create -d "$TMP/no/dir" t
[ ! -e "$TMP/no" ] && pass || fail "topic create -d created missing parents"
expect_fail 2 "serve -d with a missing parent" timeout 20 "$SILT" serve -d "$TMP/no/dir" --listen 127.0.0.1:0
[ ! -e "$TMP/no" ] && pass || fail "serve -d created missing parents"
# The data dir itself is still created when its parent exists.
echo one | "$SILT" produce -d "$TMP/fresh" -t t
[ -d "$TMP/fresh/t-0" ] && pass || fail "produce -d did not create a new data dir"
printf 'x' >"$TMP/plainfile"
expect_fail 2 "a data dir that is a file" "$SILT" produce -d "$TMP/plainfile" -t t </dev/null
assert_contains "$ERR" "is not a directory" "a file as data dir is named"

# verify-crc: a directory with no segment files is exit 2, not "clean".
mkdir -p "$TMP/etc"
printf 'a=b\n' >"$TMP/etc/server.properties"
printf 'x\n' >"$TMP/etc/notes.txt"
expect_fail 2 "verify-crc of a dir with no segments" "$SILT" verify-crc "$TMP/etc"
assert_contains "$ERR" "no segment files under $TMP/etc" "the empty dir is named"
assert_not_contains "$OUT" "clean" "a dir with no segments is not called clean"
mkdir -p "$TMP/empty"
expect_fail 2 "verify-crc of an empty dir" "$SILT" verify-crc "$TMP/empty"
# A data dir whose topics have no records yet is clean, not a wrong path.
"$SILT" topic create -d "$TMP/newtopics" empty --partitions 3 >/dev/null
expect_ok "verify-crc of a data dir with only empty partitions" "$SILT" verify-crc "$TMP/newtopics"
expect_ok "verify-crc of an empty partition dir" "$SILT" verify-crc "$TMP/newtopics/empty-1"
# Files that are not segment files are skipped and listed; the rest is checked.
seg="$TMP/fresh/t-0/00000000000000000000.log"
run "$SILT" verify-crc "$TMP/etc/server.properties" "$seg"
assert_eq 0 "$RC" "a skipped file beside a clean segment: exit 0"
assert_contains "$OUT" "skipped: $TMP/etc/server.properties: not a segment file" "the skipped file is listed"
assert_contains "$OUT" "clean" "the segment was checked"
run "$SILT" verify-crc --format json "$TMP/etc/notes.txt" "$seg"
assert_contains "$OUT" "{\"skipped\":\"$TMP/etc/notes.txt\"" "skipped files in JSON"
expect_fail 2 "verify-crc of only non-segment files" "$SILT" verify-crc "$TMP/etc/server.properties"
assert_contains "$ERR" "nothing checked" "nothing checked is said"

# dump-segment: a file that is not a segment says so, not "unknown magic".
expect_fail 2 "dump-segment server.properties" "$SILT" dump-segment "$TMP/etc/server.properties"
assert_contains "$ERR" "is not a segment file" "dump-segment names a non-segment file"
assert_not_contains "$ERR" "magic" "no talk of magic for a non-segment file"
expect_fail 2 "dump-segment of a missing file" "$SILT" dump-segment "$TMP/nope.log"
assert_contains "$ERR" "no such file: $TMP/nope.log" "a missing file is named"
finish
