#!/usr/bin/env bash
# Help, man pages and completions agree:
#  (a) the committed completions/ are exactly what `silt completion` prints now;
#  (b) for every man/silt-<name>.1, the options that `silt <name> --help` lists (and those of its
#      own subcommands) are exactly the options the page's OPTIONS section documents.
# Subcommands are discovered from `silt --help`, so ones added later are covered automatically.
source "$(dirname "$0")/lib.sh"

# (a) completions
gen="$TMP/completions"
if sh "$SILT_SOURCE_DIR/scripts/gen-completions.sh" "$SILT" "$gen"; then pass; else fail "gen-completions.sh failed"; fi
for shell in bash zsh fish; do
  if diff -u "$SILT_SOURCE_DIR/completions/silt.$shell" "$gen/silt.$shell" >"$TMP/diff"; then
    pass
  else
    fail "completions/silt.$shell is stale; run 'make completions' and commit it:
$(head -20 "$TMP/diff")"
  fi
done

# Subcommand names listed in the "Subcommands:" section of a --help text.
subcommands_of() {
  awk '/^Subcommands:/ {on=1; next} /^[^ ]/ {on=0} on && /^  [a-z]/ {print $1}'
}
# Option names (-x, --long) listed in the "Options:" section of a --help text; -h/--help and
# -V/--version are everywhere and not documented per page.
options_of_help() {
  awk '/^Options:/ {on=1; next} /^[^ ]/ {on=0} on && /^  +-/ {print $1}' |
    tr ',' '\n' | grep -E '^-' | grep -vxE -- '-h|--help|-V|--version' || true
}
# Options of a subcommand path and of every subcommand beneath it.
collect_help_options() {
  local help
  help=$("$SILT" "$@" --help 2>&1)
  printf '%s\n' "$help" | options_of_help
  local s
  for s in $(printf '%s\n' "$help" | subcommands_of); do
    collect_help_options "$@" "$s"
  done
}
# Options documented in a man page's OPTIONS section: the tag line after each .TP/.IP.
options_of_man() {
  awk '/^\.SH/ {on = ($0 ~ /^\.SH "?OPTIONS"?/); next}
       on && /^\.(TP|IP)/ {tag=1; if ($0 ~ /^\.IP /) {sub(/^\.IP /, ""); print; tag=0}; next}
       on && tag {print; tag=0}' "$1" |
    sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/^\.[A-Z]* //' -e 's/"//g' |
    grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' | sed 's/^[ ,]//' |
    grep -vxE -- '-h|--help|-V|--version' || true
}

commands=$("$SILT" --help | subcommands_of)
if [ -n "$commands" ]; then pass; else fail "no subcommands found in silt --help"; fi
for cmd in $commands; do
  page="$SILT_SOURCE_DIR/man/silt-$cmd.1"
  if [ ! -f "$page" ]; then
    echo "note: no man page for '$cmd' (man/silt-$cmd.1); not checked"
    continue
  fi
  collect_help_options "$cmd" | sort -u >"$TMP/help.txt"
  options_of_man "$page" | sort -u >"$TMP/man.txt"
  if [ ! -s "$TMP/help.txt" ] && [ ! -s "$TMP/man.txt" ]; then pass; continue; fi
  if diff "$TMP/help.txt" "$TMP/man.txt" >"$TMP/diff"; then
    pass
  else
    fail "silt $cmd --help and man/silt-$cmd.1 OPTIONS disagree (< only in --help, > only in the page):
$(grep -E '^[<>]' "$TMP/diff")"
  fi
done
# Every page names a real subcommand.
for page in "$SILT_SOURCE_DIR"/man/silt-*.1; do
  [ -e "$page" ] || continue
  name=$(basename "$page" .1)
  name=${name#silt-}
  if printf '%s\n' $commands | grep -qx -- "$name"; then pass; else fail "man/silt-$name.1 documents a subcommand silt does not have"; fi
done
# Every page has the fixed sections.
for page in "$SILT_SOURCE_DIR"/man/silt.1 "$SILT_SOURCE_DIR"/man/silt-*.1; do
  [ -e "$page" ] || continue
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "OUTPUT FORMAT" "EXIT STATUS" EXAMPLES "SEE ALSO"; do
    if grep -qE "^\.SH \"?$section\"?\$" "$page"; then pass; else fail "$(basename "$page") lacks the $section section"; fi
  done
done

# One page header on every page.
for page in "$SILT_SOURCE_DIR"/man/*.[15]; do
  if head -1 "$page" | grep -qE '^\.TH [A-Z\\-]+ [15] "[0-9]+" "silt [0-9.]+" "silt manual"$'; then
    pass
  else
    fail "$(basename "$page") has another header: $(head -1 "$page")"
  fi
done
# silt(1) lists every subcommand, and its SEE ALSO names every page.
top="$SILT_SOURCE_DIR/man/silt.1"
for cmd in $commands; do
  if grep -qE "^\.B $(printf '%s' "$cmd" | sed 's/-/\\\\-/g')\$" "$top"; then pass; else fail "silt.1 does not list the subcommand $cmd"; fi
done
see_also=$(sed -n '/^\.SH "\{0,1\}SEE ALSO/,$p' "$top")
for page in "$SILT_SOURCE_DIR"/man/silt-*.[15]; do
  name=$(basename "$page")
  ref="$(printf '%s' "${name%.*}" | sed 's/-/\\-/g') (${name##*.})"
  case "$see_also" in *"$ref"*) pass ;; *) fail "silt.1 SEE ALSO lacks $name" ;; esac
done
# Commands that take -b show it in their SYNOPSIS, and their NAME line does not say "local".
for cmd in $commands; do
  page="$SILT_SOURCE_DIR/man/silt-$cmd.1"
  [ -f "$page" ] || continue
  if collect_help_options "$cmd" | grep -qx -- '-b'; then
    synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$page")
    case "$synopsis" in *'\-b'*) pass ;; *) fail "silt-$cmd.1 SYNOPSIS does not show -b" ;; esac
    if sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | grep -qi 'local'; then
      fail "silt-$cmd.1 NAME says local, but $cmd also works over the network"
    else
      pass
    fi
  fi
done
# The pages render without troff warnings.
if command -v man >/dev/null && command -v groff >/dev/null; then
  for page in "$SILT_SOURCE_DIR"/man/*.[15]; do
    warnings=$(MANWIDTH=80 man -l --warnings "$page" 2>&1 >/dev/null)
    if [ -z "$warnings" ]; then pass; else fail "$(basename "$page") renders with warnings: $warnings"; fi
  done
else
  skip_part client "troff warnings: man or groff is not installed"
fi
# examples/README.md lists every example.
for script in "$SILT_SOURCE_DIR"/examples/*.sh "$SILT_SOURCE_DIR"/examples/*.yml; do
  name=$(basename "$script")
  if grep -q "\`$name" "$SILT_SOURCE_DIR/examples/README.md"; then pass; else fail "examples/README.md does not list $name"; fi
done
# Every metric the example scrape configuration names is one silt-serve(1) documents.
for metric in $(grep -oE 'silt_[a-z_]+' "$SILT_SOURCE_DIR/examples/prometheus.yml" | sed 's/_bucket$//' | sort -u); do
  if grep -q "^\.B $metric" "$SILT_SOURCE_DIR/man/silt-serve.1"; then pass; else fail "examples/prometheus.yml names $metric, which silt-serve(1) does not document"; fi
done
# Human sizes on a terminal, as silt.1 promises; exact bytes in a pipe.
if command -v script >/dev/null; then
  echo hello | "$SILT" produce -t sizes
  human=$(script -qec "$(printf '%q ' "$SILT" verify-crc "$SILT_DATA_DIR")" /dev/null | tr -d '\r')
  assert_contains "$human" " B: clean" "verify-crc shows a human size on a terminal"
  run "$SILT" verify-crc "$SILT_DATA_DIR"
  assert_contains "$OUT" " bytes: clean" "verify-crc shows exact bytes in a pipe"
fi
finish
