#!/usr/bin/env bash
# The committed generated codec (lib/protocol/generated_*) is what scripts/gen-protocol.py makes
# from Kafka's message schemas and lib/protocol/codec_overrides.json: regenerate into a temporary
# directory and require no difference. Skipped (77) when the schema directory is absent, unless
# SILT_REQUIRE_FIXTURES=1.
#   usage: check_generated.sh SOURCE_DIR [SCHEMA_DIR]
set -euo pipefail
src=${1:?usage: check_generated.sh SOURCE_DIR [SCHEMA_DIR]}
schemas=${2:-$src/../shared/kafka-message-schemas}
# shellcheck source=../skip.sh
. "$src/tests/skip.sh"
[ -d "$schemas" ] || skip_test fixtures "no Kafka message schemas at $schemas"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 "$src/scripts/gen-protocol.py" "$schemas" --out "$out"

status=0
for f in generated_walks.h generated_codecs.cc generated_messages.h; do
  if ! diff -u "$src/lib/protocol/$f" "$out/$f"; then
    echo "FAIL: lib/protocol/$f differs from what scripts/gen-protocol.py generates" >&2
    status=1
  fi
done

# The comparison itself must see a change: one edited line in a copy is reported.
cp "$out/generated_walks.h" "$out/edited.h"
sed -i '0,/io.I32(/s//io.I64(/' "$out/edited.h"
if diff -q "$out/generated_walks.h" "$out/edited.h" >/dev/null; then
  echo "FAIL: an edited copy of the generated walks compares equal" >&2
  status=1
fi

# Overrides that name no schema field are an error, not silently ignored.
bad="$out/bad-overrides"
mkdir -p "$bad/lib/protocol" "$bad/scripts"
python3 - "$src/lib/protocol/codec_overrides.json" "$bad/lib/protocol/codec_overrides.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
o["apis"]["Heartbeat"]["request"] = {"fields": {"NoSuchField": {"name": "x"}}}
json.dump(o, open(sys.argv[2], "w"))
PY
cp "$src/scripts/gen-protocol.py" "$bad/scripts/"
cp "$src/lib/protocol/api_table.cc" "$bad/lib/protocol/"
if python3 "$bad/scripts/gen-protocol.py" "$schemas" --out "$bad" 2>"$bad/err"; then
  echo "FAIL: an override naming no field was accepted" >&2
  status=1
elif ! grep -q "NoSuchField" "$bad/err"; then
  echo "FAIL: the bad override was refused for another reason:" >&2
  cat "$bad/err" >&2
  status=1
fi
# With the real overrides the copy makes the same files (so the refusal above is the override's).
cp "$src/lib/protocol/codec_overrides.json" "$bad/lib/protocol/"
python3 "$bad/scripts/gen-protocol.py" "$schemas" --out "$bad"
cmp -s "$bad/generated_walks.h" "$out/generated_walks.h" || {
  echo "FAIL: the copied generator makes other output" >&2
  status=1
}
[ $status -eq 0 ] && echo "generated codec up to date"
exit $status
