#!/usr/bin/env bash
# Bash completion completes values, not a '-': subcommands, enum values, files and
# directories, and topic and group names from the data dir (-d or $SILT_DATA_DIR) or the broker.
# zsh and fish come from the same walk of the flag tree (checked against completions/ by
# test_docs.sh).
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/bin"
ln -s "$(realpath "$SILT")" "$TMP/bin/silt"
PATH="$TMP/bin:$PATH"
"$SILT" completion bash >"$TMP/silt.bash"
# shellcheck disable=SC1091
source "$TMP/silt.bash"

# complete_words WORD...: what <TAB> offers after `silt WORD...` (the last word is the one
# being completed, "" for a new word), one per line, sorted.
complete_words() {
  COMP_WORDS=(silt "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _silt
  printf '%s\n' "${COMPREPLY[@]}" | sort
}

"$SILT" topic create orders >/dev/null
"$SILT" topic create clicks >/dev/null
echo x | "$SILT" consume -t orders -g billing >/dev/null
mkdir -p "$TMP/other"
"$SILT" topic create -d "$TMP/other" elsewhere >/dev/null

assert_eq "$(printf 'consume\n')" "$(complete_words cons)" "subcommand names"
assert_eq "$(printf 'create\n')" "$(complete_words topic cr)" "sub-subcommand names"
assert_eq "$(printf 'gzip\nlz4\nnone\nsnappy\nzstd')" "$(complete_words produce -z "")" "-z values"
assert_eq "$(printf 'json\ntext')" "$(complete_words topic list --format "")" "--format values"
assert_eq "$(printf '0\n1\n-1\nall' | sort)" "$(complete_words produce --acks "")" "--acks values"
assert_eq "$(printf 'bash\nfish\nzsh')" "$(complete_words completion "")" "completion's shell argument"
assert_eq "$(printf 'clicks\norders')" "$(complete_words consume -t "")" "topic names from \$SILT_DATA_DIR"
assert_eq "orders" "$(complete_words consume --topic o)" "topic names by prefix"
assert_eq "$(printf 'clicks\norders')" "$(complete_words topic describe "")" "topic argument of describe"
assert_eq "elsewhere" "$(complete_words consume -d "$TMP/other" -t "")" "topic names from -d"
assert_eq "elsewhere" "$(complete_words topic -d "$TMP/other" delete "")" "-d before the sub-subcommand"
assert_eq "billing" "$(complete_words group describe "")" "group names"
assert_eq "billing" "$(complete_words consume -t orders -g b)" "-g completes group names"
assert_eq "__consumer_offsets" "$(complete_words consume -t _)" "internal topics once the word starts with _"
# Options whose value is free text complete nothing, rather than typing a '-'.
assert_eq "" "$(complete_words topic create x --partitions "")" "free values offer nothing"
assert_eq "" "$(complete_words consume -t orders -c "")" "-c offers nothing"
# Files and directories.
mkdir -p "$TMP/files/subdir"
: >"$TMP/files/a.log"
assert_eq "$TMP/files/subdir" "$(complete_words produce -d "$TMP/files/")" "-d completes directories only"
assert_eq "$(printf '%s\n' "$TMP/files/a.log" "$TMP/files/subdir" | sort)" \
  "$(complete_words dump-segment "$TMP/files/")" "dump-segment completes files"
# Flags are still offered where a flag is typed.
assert_contains "$(complete_words consume --fo)" "--follow" "flags by prefix"
assert_contains "$(complete_words consume --fo)" "--format" "flags by prefix (2)"

# Names from a broker with -b.
"$SILT" serve -d "$TMP/broker-data" --listen 127.0.0.1:0 2>"$TMP/broker.log" &
BG_PIDS+=($!)
if wait_for 10 grep -q "listening on" "$TMP/broker.log"; then
  B=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$TMP/broker.log" | head -1)
  "$SILT" topic create -b "$B" remote >/dev/null
  assert_eq "remote" "$(complete_words consume -b "$B" -t "")" "topic names from -b"
  assert_eq "remote" "$(complete_words topic describe -b "$B" "")" "topic argument from -b"
else
  fail "silt serve did not start: $(cat "$TMP/broker.log")"
fi

# Every script is generated from the same tree: the enum values are there in zsh and fish too.
"$SILT" completion zsh >"$TMP/silt.zsh"
"$SILT" completion fish >"$TMP/silt.fish"
assert_contains "$(cat "$TMP/silt.zsh")" "'-z[none, gzip, snappy, lz4 or zstd]:value:(none gzip snappy lz4 zstd)'" "zsh enum values"
assert_contains "$(cat "$TMP/silt.zsh")" ":value:_silt_topics'" "zsh topic names"
assert_contains "$(cat "$TMP/silt.fish")" "-s z -l compression -x -a 'none gzip snappy lz4 zstd'" "fish enum values"
assert_contains "$(cat "$TMP/silt.fish")" "-x -a '(__silt_names topic)'" "fish topic names"
if command -v zsh >/dev/null; then
  if zsh -n "$TMP/silt.zsh"; then pass; else fail "the zsh script does not parse"; fi
fi
if command -v fish >/dev/null; then
  if fish -n "$TMP/silt.fish"; then pass; else fail "the fish script does not parse"; fi
fi
finish
