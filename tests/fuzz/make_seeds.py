#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets under OUT_DIR/<target>/ from project-made test data.

  request   every request body in tests/data/protocol/schema, framed with a request header of
            the version its api uses (api keys and flexible versions read from lib/protocol)

The other targets' seeds come from directories given straight to the fuzzer (scripts/fuzz.sh).
Usage: make_seeds.py SOURCE_DIR OUT_DIR"""
import os
import re
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
header = open(os.path.join(src, "lib/protocol/api_table.h")).read()
table = open(os.path.join(src, "lib/protocol/api_table.cc")).read()
keys = {m.group(1): int(m.group(2)) for m in re.finditer(r"\bk(\w+) = (\d+),", header)}
first_flexible = {m.group(1): int(m.group(2)) for m in re.finditer(
    r'ApiInfo\{ApiKey::k(\w+),\s*"\w+",\s*-?\d+,\s*-?\d+,\s*(-?\d+)\}', table)}
if not keys or len(first_flexible) != len(keys):
    sys.exit("make_seeds: could not read the api table (%d keys, %d rows)"
             % (len(keys), len(first_flexible)))

os.makedirs(os.path.join(out, "request"), exist_ok=True)
written = 0
schema = os.path.join(src, "tests/data/protocol/schema")
for name in sorted(os.listdir(schema)):
    m = re.match(r"(\w+)Request_v(\d+)\.bin$", name)
    if not m or m.group(1) not in keys:
        continue
    api, version = m.group(1), int(m.group(2))
    body = open(os.path.join(schema, name), "rb").read()
    client_id = b"fuzz"
    # RequestHeader: api key, version, correlation id, client id (int16 length + bytes); v2
    # (flexible versions) adds an empty tagged-field section.
    frame = struct.pack(">hhih", keys[api], version, 7, len(client_id)) + client_id
    if version >= first_flexible[api]:
        frame += b"\x00"
    with open(os.path.join(out, "request", name), "wb") as f:
        f.write(frame + body)
    written += 1
print("make_seeds: %d request frames in %s" % (written, os.path.join(out, "request")))
