#!/bin/sh
# Writes completions/silt.{bash,zsh,fish} from `silt completion`, which walks the binary's own
# flag tree. Run after adding or changing a flag (`make completions`) and commit the result;
# tests/cli/test_docs.sh fails when the committed files differ from what the binary prints.
#
# Usage: scripts/gen-completions.sh [path/to/silt] [output dir]
set -eu
SILT=${1:-build/silt}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${2:-$ROOT/completions}
mkdir -p "$OUT"
for shell in bash zsh fish; do
  "$SILT" completion "$shell" > "$OUT/silt.$shell.tmp"
  mv "$OUT/silt.$shell.tmp" "$OUT/silt.$shell"
done
