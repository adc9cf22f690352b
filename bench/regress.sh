#!/bin/sh
# Quick benchmarks of two versions of silt side by side: bench/regress.py on two binaries,
# each given as a path to a binary or as a commit (built once, Release, into
# $REGRESS_DIR/<commit>, default /tmp/silt-regress; a commit's first build takes ~6 min on 2
# cores, later runs reuse it).
#
#   bench/regress.sh [OLD [NEW]] [regress.py options...]
#
# OLD defaults to HEAD~1, NEW to ./build/silt (the working tree's build). Run it before landing
# a change to a hot path; exit status 1 when a case is 10% slower or more.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CACHE=${REGRESS_DIR:-/tmp/silt-regress}

OLD=HEAD~1
NEW=$ROOT/build/silt
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then OLD=$1; shift; fi
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then NEW=$1; shift; fi

# binary SPEC: prints the path of the silt binary for SPEC (a file, or a commit to build).
binary() {
  if [ -f "$1" ]; then
    echo "$1"
    return
  fi
  sha=$(git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}") ||
    { echo "regress: '$1' is neither a file nor a commit" >&2; exit 2; }
  out=$CACHE/$sha
  if [ ! -x "$out/build/silt" ]; then
    echo "regress: building $1 ($sha) in $out" >&2
    rm -rf "$out"
    mkdir -p "$CACHE"
    git -C "$ROOT" worktree prune
    git -C "$ROOT" worktree add --detach "$out/src" "$sha" >&2
    gen=
    command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
    # The shared fixtures' relative path (../shared) is not needed to build the binary.
    cmake -S "$out/src" -B "$out/build" $gen -DCMAKE_BUILD_TYPE=Release >&2
    cmake --build "$out/build" --target silt -j "$(nproc)" >&2
    git -C "$ROOT" worktree remove --force "$out/src" >&2 || true
  fi
  echo "$out/build/silt"
}

old_bin=$(binary "$OLD")
new_bin=$(binary "$NEW")
exec /usr/bin/python3 "$HERE/regress.py" "$old_bin" "$new_bin" "$@"
