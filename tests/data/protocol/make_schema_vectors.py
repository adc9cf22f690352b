#!/usr/bin/env python3
"""Writes golden request/response bodies for every API version silt serves, encoded straight
from Kafka's own message schemas by this small, independent encoder (no silt code involved).

    python3 make_schema_vectors.py <apache/kafka checkout, bare git dir, or a dir of schemas>

Reads clients/src/main/resources/common/message/<Name>.json from the checkout (the schemas are
not copied here) and writes schema/<Name>_v<N>.bin. Every field present at a version gets a
distinct value from a running counter; nullable strings, bytes and arrays are null every few
fields so both forms are covered; tagged fields are left out (an empty tagged section).
"""
import json
import os
import re
import struct
import subprocess
import sys

# Name -> versions silt serves (lib/protocol/api_table.cc).
APIS = {
    "ApiVersions": (0, 4), "Metadata": (0, 12), "Produce": (0, 11), "Fetch": (0, 17),
    "ListOffsets": (0, 9), "FindCoordinator": (0, 6), "JoinGroup": (0, 9), "SyncGroup": (0, 5),
    "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "OffsetCommit": (0, 9), "OffsetFetch": (0, 9),
    "InitProducerId": (0, 5), "CreateTopics": (0, 7), "DeleteTopics": (0, 6),
    "DescribeGroups": (0, 5), "ListGroups": (0, 5), "DescribeConfigs": (0, 4),
    "CreatePartitions": (0, 3), "DeleteRecords": (0, 2), "OffsetForLeaderEpoch": (0, 4),
    "AlterConfigs": (0, 2), "DeleteGroups": (0, 2), "IncrementalAlterConfigs": (0, 1),
    "DescribeQuorum": (0, 2), "ElectLeaders": (0, 2), "AlterPartitionReassignments": (0, 0),
    "ListPartitionReassignments": (0, 0),
    "DescribeLogDirs": (0, 4), "OffsetDelete": (0, 0),
    "DescribeCluster": (0, 1), "DescribeProducers": (0, 0),
}


def load_schema(kafka, name):
    path = "clients/src/main/resources/common/message/%s.json" % name
    if os.path.isfile(os.path.join(kafka, name + ".json")):
        # A directory holding just the schemas.
        text = open(os.path.join(kafka, name + ".json")).read()
    elif os.path.isdir(os.path.join(kafka, "clients")):
        text = open(os.path.join(kafka, path)).read()
    else:
        text = subprocess.check_output(["git", "--git-dir", kafka, "show", "HEAD:" + path]).decode()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def in_range(spec, v):
    spec = spec.strip()
    if spec == "none":
        return False
    if spec.endswith("+"):
        return v >= int(spec[:-1])
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo) <= v <= int(hi)
    return v == int(spec)


class Writer:
    def __init__(self, flexible, common):
        self.out = bytearray()
        self.flexible = flexible
        self.common = common
        self.n = 0

    def tick(self):
        self.n += 1
        return self.n

    def uvarint(self, x):
        while x >= 0x80:
            self.out.append((x & 0x7F) | 0x80)
            x >>= 7
        self.out.append(x)

    def length(self, n, wide):
        if self.flexible:
            self.uvarint(n + 1)
        else:
            self.out += struct.pack(">i" if wide else ">h", n)

    def struct_fields(self, fields, v):
        for f in fields:
            if not in_range(f["versions"], v) or "tag" in f:
                continue
            self.field(f, v)
        if self.flexible:
            self.uvarint(0)  # no tagged fields

    def field(self, f, v):
        t = f["type"]
        nullable = "nullableVersions" in f and in_range(f["nullableVersions"], v)
        n = self.tick()
        if nullable and n % 4 == 0:
            self.length(-1, t in ("bytes", "records") or t.startswith("[]"))
            return
        if t.startswith("[]"):
            elem = t[2:]
            self.length(2, True)
            for _ in range(2):
                if elem in ("int8", "int16", "int32", "int64", "string", "bool"):
                    self.primitive(elem)
                else:
                    sub = f.get("fields") or self.common[elem]
                    self.struct_fields(sub, v)
            return
        if "fields" in f or t in self.common:
            self.struct_fields(f.get("fields") or self.common[t], v)
            return
        self.primitive(t, n)

    def primitive(self, t, n=None):
        n = n if n is not None else self.tick()
        if t == "int8":
            self.out += struct.pack(">b", n % 100)
        elif t == "int16":
            self.out += struct.pack(">h", n)
        elif t == "uint16":
            self.out += struct.pack(">H", n)
        elif t == "int32":
            self.out += struct.pack(">i", n)
        elif t == "int64":
            self.out += struct.pack(">q", n * 1000003)
        elif t == "bool":
            self.out.append(n % 2)
        elif t == "uuid":
            self.out += bytes((n * 7 + i) % 256 for i in range(16))
        elif t == "string":
            s = ("s%d" % n).encode()
            self.length(len(s), False)
            self.out += s
        elif t in ("bytes", "records"):
            b = ("b%d" % n).encode() * (1 + n % 3)
            self.length(len(b), True)
            self.out += b
        else:
            raise TypeError(t)


def flexible_from(schema):
    spec = schema["flexibleVersions"]
    return 10**6 if spec == "none" else int(spec.rstrip("+"))


def main():
    kafka = sys.argv[1]
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema")
    os.makedirs(out_dir, exist_ok=True)
    count = 0
    for api, (lo, hi) in APIS.items():
        for kind in ("Request", "Response"):
            schema = load_schema(kafka, api + kind)
            common = {c["name"]: c["fields"] for c in schema.get("commonStructs", [])}
            for v in range(lo, hi + 1):
                w = Writer(v >= flexible_from(schema), common)
                w.struct_fields(schema["fields"], v)
                with open(os.path.join(out_dir, "%s%s_v%d.bin" % (api, kind, v)), "wb") as f:
                    f.write(bytes(w.out))
                count += 1
    print("wrote %d vectors to %s" % (count, out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
