#!/usr/bin/env python3
"""Checks the #include lines of lib/ against the layer rules; exits 1 listing every violation.

The build runs it (top-level CMakeLists.txt passes the rules, so the layer table lives in one
place) and so does ctest. Rules:

  --layer NAME=DEP,DEP   files in lib/NAME may include "NAME/..." and "DEP/..." and no other
                         layer's headers. A layer not given is not checked; an include of a
                         directory that is not a layer (no lib/X) is not a layer include.
  --forbid GLOB=PREFIX[!EXCEPT...]
                         files matching GLOB (relative to lib/, fnmatch) must not include
                         "PREFIX..." even where their layer may, neither directly nor through
                         the lib/ headers they include (followed transitively); the headers
                         named after "!" are the exceptions.
  --only PATTERN=GLOB,.. an include matching PATTERN (fnmatch on the included name, quotes or
                         angle brackets stripped) is allowed only in files matching one of the
                         GLOBs (relative to lib/). Used for heavy third-party headers (asio, JSON)
                         and for the headers that wrap them.

Usage: check_layers.py LIB_DIR [rules...]
"""
import argparse
import fnmatch
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def parse_pair(text, what):
    if "=" not in text:
        raise SystemExit("check_layers: %s needs NAME=VALUE, got %r" % (what, text))
    k, v = text.split("=", 1)
    return k, [x for x in v.split(",") if x]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("lib_dir")
    ap.add_argument("--layer", action="append", default=[])
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args(argv)

    layers = dict(parse_pair(x, "--layer") for x in args.layer)
    forbids = []
    for g, p in (parse_pair(x, "--forbid") for x in args.forbid):
        parts = (p[0] if p else "").split("!")
        forbids.append((g, parts[0], set(parts[1:])))
    onlys = [parse_pair(x, "--only") for x in args.only]
    lib = args.lib_dir
    known = {d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d))}

    def includes_of(rel):
        """(line number, quote, included name) for each #include of lib/<rel>."""
        out = []
        with open(os.path.join(lib, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m:
                    out.append((n, m.group(1), m.group(2)))
        return out

    def reaches(rel, prefix, exceptions=frozenset()):
        """The include chain from lib/<rel> to a header starting with prefix (other than the
        exceptions), or None."""
        seen = set()
        stack = [(rel, [])]
        while stack:
            cur, chain = stack.pop()
            for _, quote, inc in includes_of(cur):
                if inc.startswith(prefix) and inc not in exceptions:
                    return chain + [inc]
                if quote == '"' and inc not in seen and os.path.isfile(os.path.join(lib, inc)):
                    seen.add(inc)
                    stack.append((inc, chain + [inc]))
        return None

    errors = []
    checked = 0
    for layer in sorted(known):
        for name in sorted(os.listdir(os.path.join(lib, layer))):
            if not name.endswith((".h", ".cc")):
                continue
            rel = layer + "/" + name
            checked += 1
            for glob, prefix, exceptions in forbids:
                chain = reaches(rel, prefix, exceptions) if fnmatch.fnmatch(rel, glob) else None
                if chain:
                    errors.append("lib/%s: %s must not include %s headers, but includes %s" % (
                        rel, glob, prefix, " -> ".join(chain)))
            for n, quote, inc in includes_of(rel):
                where = "lib/%s:%d: #include %s%s%s" % (rel, n, quote, inc,
                                                       '"' if quote == '"' else ">")
                top = inc.split("/", 1)[0] if "/" in inc else None
                if quote == '"' and layer in layers and top in known and top != layer \
                        and top not in layers[layer]:
                    errors.append("%s: layer %s may include only %s" % (
                        where, layer, ", ".join([layer] + layers[layer])))
                for pattern, allowed in onlys:
                    if fnmatch.fnmatch(inc, pattern) and \
                            not any(fnmatch.fnmatch(rel, g) for g in allowed):
                        errors.append("%s: %s may be included only by %s" % (
                            where, pattern, ", ".join("lib/" + g for g in allowed)))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print("check_layers: %d include(s) break the layer rules (lib/*/README.md)" % len(errors),
              file=sys.stderr)
        return 1
    if checked == 0:
        print("check_layers: no files under %s" % lib, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
