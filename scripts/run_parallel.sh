#!/bin/sh
# run_parallel.sh CMD...: starts every CMD (a shell command line each) at once, then prints each
# one's output whole, in the order given, as it ends. Exit status 1 when any CMD failed.
# `make asan` and `make tsan` run their three test binaries this way: they spend most of their
# time waiting on sockets and timers, and one after another they kept two cores half idle.
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
pids=""
for cmd in "$@"; do
  i=$((i + 1))
  sh -c "$cmd" >"$dir/$i" 2>&1 &
  pids="$pids $!"
done
status=0
i=0
for pid in $pids; do
  i=$((i + 1))
  wait "$pid" || status=1
  cat "$dir/$i"
done
exit "$status"
