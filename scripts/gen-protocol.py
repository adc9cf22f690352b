#!/usr/bin/env python3
"""Generates silt's Kafka message codecs from Kafka's JSON message schemas.

    python3 scripts/gen-protocol.py [SCHEMA_DIR] [--out DIR]

SCHEMA_DIR holds Kafka's clients/src/main/resources/common/message/*.json (default:
../shared/kafka-message-schemas next to the repository). The schemas are read at generation
time only. lib/protocol/codec_overrides.json says which messages are generated, the version
range silt serves for each API, and where silt's structs differ from the snake_case of Kafka's
names or keep a silt type. Output (in lib/protocol, or DIR): generated_messages.h, the struct of
every generated message; generated_walks.h, its templated field walk; generated_codecs.cc, its
Encode/Decode.

Rules:
  - a field is walked when its versions meet the served range; the guard is Kafka's range;
  - tagged fields are walked in the struct's tagged section: known tags are decoded, unknown
    ones skipped, and each is written only when it differs from its default;
  - a string/bytes/array nullable in all of its versions is std::optional in silt's struct;
    one nullable from a later version only is a plain value, null on the wire when empty
    (the "null_as_empty" form); overrides may say otherwise per field;
  - every array passes the fewest bytes an element takes at the version (past the served
    range: the smallest flexible form), so a count that cannot fit in the bytes left fails
    before anything is allocated.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVERRIDES = os.path.join(ROOT, "lib", "protocol", "codec_overrides.json")
OPEN = 1 << 15
FIELD_KEYS = {"name", "kind", "skip", "guard", "after", "type_name", "default", "comment"}
API_TABLE = os.path.join(ROOT, "lib", "protocol", "api_table.cc")


def api_table():
    """{name: (min, max, first flexible)} from api_table.cc's rows."""
    rows = re.findall(r'ApiInfo\{ApiKey::k\w+,\s*"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+)\}',
                      open(API_TABLE, encoding="utf-8").read())
    return {n: (int(a), int(b), int(f)) for n, a, b, f in rows}

PRIMS = {"int8": ("I8", 1), "int16": ("I16", 2), "int32": ("I32", 4), "int64": ("I64", 8),
         "bool": ("Bool", 1), "uuid": ("Uuid", 16), "uint16": ("U16", 2)}


def load_schema(path):
    text = open(path, encoding="utf-8").read()
    # Kafka's schema files carry // comment lines; JSON has none.
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
    return json.loads(text)


def parse_range(s):
    """'3+' -> (3, OPEN), '0-4' -> (0, 4), '5' -> (5, 5), 'none' / None -> None."""
    if s is None or s == "none" or s == "":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), OPEN)
    if "-" in s:
        a, b = s.split("-")
        return (int(a), int(b))
    return (int(s), int(s))


def meet(a, b):
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def guard(rng, ctx=(0, OPEN)):
    """The C++ condition for a field present in `rng` inside a struct present in `ctx`, or ''
    when it holds wherever the struct is on the wire."""
    lo, hi = rng
    if lo == hi and ctx != (lo, hi):
        return f"v == {lo}"
    parts = []
    if lo > ctx[0]:
        parts.append(f"v >= {lo}")
    if hi < ctx[1]:
        parts.append(f"v <= {hi}")
    return " && ".join(parts)


class Gen:
    def __init__(self, schema, api, over, served, flex):
        self.schema = schema
        self.over = over.get("fields", {})
        self.served = served
        self.flex = flex
        self.common = {s["name"]: s for s in schema.get("commonStructs", [])}
        self.used_overrides = set()
        self.depth = 0

    def field_over(self, path):
        o = self.over.get(path)
        if o is not None:
            self.used_overrides.add(path)
            unknown = set(o) - FIELD_KEYS
            if unknown:
                raise SystemExit(f"{path}: unknown override keys {sorted(unknown)}")
            if o.get("kind", "plain") not in ("optional", "null_as_empty", "plain"):
                raise SystemExit(f"{path}: unknown kind {o['kind']}")
        return o or {}

    def struct_fields(self, f):
        if "fields" in f:
            return f["fields"]
        t = f["type"][2:]
        if t in self.common:
            return self.common[t]["fields"]
        raise SystemExit(f"no fields for struct {t}")

    # Fewest bytes a value of field `f` can take at version v (0 when absent at v).
    def min_size(self, f, v):
        rng = parse_range(f.get("versions"))
        if rng is None or not (rng[0] <= v <= rng[1]) or self.tagged(f):
            return 0
        return self.min_type_size(f, f["type"], v)

    def min_type_size(self, f, t, v):
        flex = v >= self.flex  # v = -1: the non-flexible form
        if t in PRIMS:
            return PRIMS[t][1]
        if t == "float64":
            return 8
        if t == "string":
            return 1 if flex else 2
        if t in ("bytes", "records"):
            return 1 if flex else 4
        if t.startswith("[]"):
            return 1 if flex else 4
        if t in self.common or "fields" in f:
            return 0  # a struct value: at least nothing (a lower bound is all that is needed)
        raise SystemExit(f"unknown type {t}")

    def element_min(self, f, served_rng):
        """The fewest bytes one element takes, as a C++ expression of v: exact at each served
        version, and for later versions the smallest flexible form (a later version that only
        adds the flexible encoding must not be refused)."""
        t = f["type"][2:]

        def size(v, flex):
            if t in PRIMS or t in ("string", "bytes", "float64"):
                return self.min_type_size(f, t, v if flex == (v >= self.flex) else
                                          (self.flex if flex else -1))
            n = 0
            for c in self.struct_fields(f):
                rng = parse_range(c.get("versions"))
                if rng is None or not (rng[0] <= v <= rng[1]) or self.tagged(c):
                    continue
                if meet(rng, self.served) is None:
                    continue
                n += self.min_type_size(c, c["type"], self.flex if flex else -1)
            return n + (1 if flex else 0)  # the element's tagged section

        versions = list(range(served_rng[0], served_rng[1] + 1))
        exact = [(v, max(size(v, v >= self.flex), 1)) for v in versions]
        beyond = max(min(size(v, True) for v in versions), 1)
        runs = []
        for v, n in exact:
            if runs and runs[-1][1] == n:
                runs[-1][0] = v
            else:
                runs.append([v, n])
        if runs[-1][1] == beyond:
            runs.pop()
        if not runs:
            return str(beyond)
        parts = [f"v <= {hi} ? {n} : " for hi, n in runs]
        return "(" + "".join(parts) + f"{beyond})"

    def tagged(self, f):
        return "tag" in f

    def emit_fields(self, fields, var, path, out, ind, ctx=(0, OPEN)):
        for f in fields:
            self.emit_field(f, var, path, out, ind, ctx)

    def emit_struct_body(self, fields, var, path, out, ind, ctx=(0, OPEN)):
        """The fields of a struct in wire order, then its tagged section."""
        self.emit_fields(fields, var, path, out, ind, ctx)
        tagged = []
        for f in sorted((f for f in fields if self.tagged(f)), key=lambda f: f["tag"]):
            p = f"{path}.{f['name']}" if path else f["name"]
            o = self.field_over(p)
            rng = parse_range(f.get("taggedVersions") or f.get("versions"))
            if meet(rng, self.served) is None or o.get("skip"):
                continue
            ref = f"{var}.{o.get('name', snake(f['name']))}"
            body = []
            self.emit_value(f, p, o, ref, rng, parse_range(f.get("nullableVersions")), body)
            cond = guard(rng, ctx)
            dflt = o.get("default") or cxx_default(CTYPES.get(f["type"], ""), f.get("default"))
            dflt = dflt.removeprefix(" = ") or f"std::remove_cvref_t<decltype({ref})>{{}}"
            call = (f"tf.Field({f['tag']}, {ref} != {dflt}, [&] {{\n"
                    + "\n".join(indent(b, "  ") for b in body) + "\n});")
            tagged.append(f"if ({cond}) {call}" if cond else call)
        if not tagged:
            out.append(f"{ind}io.TaggedFields();")
            return
        out.append(f"{ind}io.TaggedFields([&](auto& tf) {{")
        for t in tagged:
            out.append(indent(t, ind + "  "))
        out.append(f"{ind}}});")

    def emit_field(self, f, var, path, out, ind, ctx):
        p = f"{path}.{f['name']}" if path else f["name"]
        o = self.field_over(p)
        rng = parse_range(f.get("versions"))
        live = meet(rng, self.served)
        if live is None or o.get("skip"):
            return
        if self.tagged(f):
            # Not walked: Decoder::TaggedFields skips it, Encoder writes an empty section.
            return
        name = o.get("name", snake(f["name"]))
        ref = f"{var}.{name}"
        nullable = parse_range(f.get("nullableVersions"))
        cond = o.get("guard", guard(rng, ctx))
        body = []
        self.emit_value(f, p, o, ref, rng, nullable, body)
        if cond:
            if len(body) == 1 and "\n" not in body[0]:
                out.append(f"{ind}if ({cond}) {body[0]}")
            else:
                out.append(f"{ind}if ({cond}) {{")
                for b in body:
                    out.append(indent(b, ind + "  "))
                out.append(f"{ind}}}")
        else:
            for b in body:
                out.append(indent(b, ind))

    def emit_value(self, f, p, o, ref, rng, nullable, body):
        t = f["type"]
        kind = o.get("kind")
        if kind is None and nullable is not None:
            # Nullable in every version the field has: std::optional. From a later one only:
            # a plain value, null on the wire when empty.
            kind = "optional" if nullable[0] <= rng[0] else "null_as_empty"
        if t in PRIMS:
            body.append(f"io.{PRIMS[t][0]}({ref});")
            return
        if t == "records":
            body.append(f"io.Records({ref});")
            return
        if t in ("string", "bytes"):
            S = "String" if t == "string" else "Bytes"
            if kind == "optional":
                body.append(f"io.Nullable{S}({ref});")
            elif kind == "null_as_empty":
                if t != "string":
                    raise SystemExit(f"{p}: null_as_empty bytes are not supported")
                body.append(f"if ({guard(nullable)}) {{\n  io.NullableAsEmptyString({ref});\n}} else {{\n  io.String({ref});\n}}")
            else:
                body.append(f"io.{S}({ref});")
            return
        if t.startswith("[]"):
            et = t[2:]
            self.depth += 1
            e = f"e{self.depth}"
            lines = []
            if et in PRIMS:
                lines.append(f"io.{PRIMS[et][0]}({e});")
            elif et in ("string", "bytes"):
                lines.append(f"io.{'String' if et == 'string' else 'Bytes'}({e});")
            else:
                self.emit_struct_body(self.struct_fields(f), e, p, lines, "", rng)
            self.depth -= 1
            mn = self.element_min(f, meet(rng, self.served))
            lam = f"[&](auto& {e}) {{\n" + "\n".join(indent(l, "  ") for l in lines) + "\n}"
            if kind == "optional":
                body.append(f"io.NullableArray({ref}, {lam}, {mn});")
            elif kind == "null_as_empty":
                body.append(f"io.NullableArray({ref}, {lam}, {mn}, /*null_as_empty=*/!({guard(nullable)}));")
            else:
                body.append(f"io.Array({ref}, {lam}, {mn});")
            if o.get("after"):
                body.append(o["after"])
            return
        if not t.startswith("[]") and (t in self.common or "fields" in f):
            self.emit_struct_body(self.struct_fields(f), ref, p, body, "", rng)
            return
        raise SystemExit(f"{p}: unknown type {t}")


CTYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
          "uint16": "uint16_t", "bool": "bool", "uuid": "silt::Uuid", "float64": "double",
          "string": "std::string", "bytes": "std::string", "records": "RecordSet"}


def cxx_default(ctype, d):
    """A schema default as a C++ initializer, or '' for the type's own default."""
    if d is None or d == "null":
        return ""
    if ctype == "bool":
        return " = " + ("true" if str(d).lower() == "true" else "false")
    if ctype in ("int8_t", "int16_t", "uint16_t", "int32_t", "int64_t", "double"):
        if str(d) == "-2147483648":
            return " = std::numeric_limits<int32_t>::min()"
        if str(d) in ("0", "0x0", "0.0"):
            return " = 0"
        return f" = {d}"
    if ctype == "std::string" and d != "":
        return f' = "{d}"'
    return ""


def version_note(rng, kafka_rng=None):
    lo, hi = rng
    if hi >= OPEN:
        return "" if lo == 0 else f" v{lo}+"
    return f" v{lo}" if lo == hi else f" v{lo}-{hi}"


class StructGen:
    """The struct definitions behind a message's walk: the fields on the wire in some served
    version, named and typed as the walk uses them; nested structs at the message's scope."""

    def __init__(self, gen):
        self.g = gen
        self.nested = []  # (silt name, lines), children first
        self.done = set()

    def field_lines(self, fields, path):
        g = self.g
        lines = []
        for f in fields:
            p = f"{path}.{f['name']}" if path else f["name"]
            o = g.over.get(p, {})
            if o:
                g.used_overrides.add(p)
            rng = parse_range(f.get("versions"))
            if "tag" in f:
                rng = meet(rng, parse_range(f.get("taggedVersions") or f.get("versions")))
            if meet(rng, g.served) is None or o.get("skip"):
                continue
            name = o.get("name", snake(f["name"]))
            nullable = parse_range(f.get("nullableVersions"))
            kind = o.get("kind")
            if kind is None and nullable is not None:
                kind = "optional" if nullable[0] <= rng[0] else "null_as_empty"
            t = f["type"]
            if t.startswith("[]"):
                et = t[2:]
                if et in CTYPES:
                    inner = CTYPES[et]
                else:
                    inner = self.struct_type(f, p, o, et)
                ctype = f"std::vector<{inner}>"
                if kind in ("optional", "null_as_empty") and (kind == "optional" or True):
                    ctype = f"std::optional<{ctype}>"
                init = ""
            elif t in CTYPES:
                ctype = CTYPES[t]
                if kind == "optional" and t in ("string", "bytes"):
                    ctype = f"std::optional<{ctype}>"
                init = cxx_default(ctype, f.get("default"))
            else:
                ctype = self.struct_type(f, p, o, t)
                init = ""
            if "default" in o:
                init = f" = {o['default']}"
            if init == "" and ctype in ("int8_t", "int16_t", "uint16_t", "int32_t", "int64_t", "double"):
                init = " = 0"
            if init == "" and ctype == "bool":
                init = " = false"
            note = f["name"] + version_note(rng)
            if "tag" in f:
                note = f"{f['name']} (tag {f['tag']}){version_note(rng)}"
            if o.get("comment"):
                note += " " + o["comment"]
            lines.append((f"{ctype} {name}{init};", f"// {note}"))
        return align(lines)

    def struct_type(self, f, p, o, schema_name):
        name = o.get("type_name", schema_name)
        if name not in self.done:
            self.done.add(name)
            body = self.field_lines(self.g.struct_fields(f), p)
            body.append(f"bool operator==(const {name}&) const = default;")
            self.nested.append((name, schema_name, body))
        return name


def align(pairs):
    """Code and comment pairs with the comments in one column (up to a point)."""
    width = min(max((len(c) for c, _ in pairs), default=0), 60)
    return [f"{c.ljust(width)}  {n}" for c, n in pairs]


def indent(text, ind):
    return "\n".join((ind + l) if l else l for l in text.split("\n"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("schema_dir", nargs="?",
                    default=os.path.join(ROOT, "..", "shared", "kafka-message-schemas"))
    ap.add_argument("--out", default=os.path.join(ROOT, "lib", "protocol"))
    args = ap.parse_args()
    over = json.load(open(OVERRIDES, encoding="utf-8"))
    banner = ["// generated by scripts/gen-protocol.py from Kafka's message schemas and",
              "// lib/protocol/codec_overrides.json; do not edit.",
              "//"]
    out = banner + [
           "// The templated field walk (see messages_io.h) of each message the overrides list:",
           "// fields in wire order, each guarded by Kafka's version range for it. Internal to",
           "// lib/protocol (included by generated_codecs.cc and the Fetch zero-copy encoder).",
           "#pragma once",
           "",
           "#include <cstdint>",
           "#include <type_traits>",
           "",
           "#include \"protocol/wire.h\"",
           "",
           "namespace silt::protocol::walk {",
           ""]
    names = []
    structs = banner + [
        "// The struct of every message the overrides list: each field that is on the wire in a",
        "// version silt serves, named in snake_case after Kafka's (or as the overrides say), with",
        "// Kafka's default and the versions it is on the wire in a comment; nested structs at the",
        "// message's scope. Included through protocol/messages.h.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <limits>",
        "#include <optional>",
        "#include <string>",
        "#include <vector>",
        "",
        "#include \"base/coding.h\"",
        "#include \"base/status.h\"",
        "#include \"base/uuid.h\"",
        "#include \"protocol/api_table.h\"",
        "#include \"protocol/wire.h\"",
        "",
        "namespace silt::protocol {",
        "",
        "#define SILT_GENERATED_MESSAGE(Name, api)                \\",
        "  static constexpr ApiKey kApiKey = api;                \\",
        "  void Encode(ByteWriter& w, int16_t version) const;    \\",
        "  Status Decode(ByteReader& r, int16_t version);        \\",
        "  bool operator==(const Name&) const = default",
        ""]
    table = api_table()
    for api, spec in over["apis"].items():
        served = parse_range(spec["versions"])
        if api not in table or table[api][:2] != served:
            raise SystemExit(f"{api}: served versions {spec['versions']} are not api_table.cc's")
        for side in ("Request", "Response"):
            msg = api + side
            mo = spec.get(side.lower(), {})
            if mo.get("hand_written"):
                continue
            schema = load_schema(os.path.join(args.schema_dir, msg + ".json"))
            flex = parse_range(schema.get("flexibleVersions"))
            flex_from = flex[0] if flex else OPEN
            if min(flex_from, 32767) != table[api][2]:
                raise SystemExit(f"{msg}: first flexible version {flex_from} is not api_table.cc's")
            g = Gen(schema, api, mo, served, flex_from)
            lines = []
            g.emit_struct_body(schema["fields"], "m", "", lines, "")
            for extra in mo.get("after", []):
                lines.append(extra)
            sg = StructGen(g)
            top = sg.field_lines(schema["fields"], "")
            sname0 = mo.get("struct", msg)
            if side == "Request":
                structs.append(f"// ---- {api} ({schema['apiKey']}; v{served[0]}-{served[1]}"
                               + (f", flexible from v{flex_from}" if flex_from <= served[1] else "")
                               + ") ")
                structs[-1] += "-" * max(0, 92 - len(structs[-1]))
                structs.append("")
            structs.append(f"struct {sname0} {{")
            for name, schema_name, body in sg.nested:
                note = "" if name == schema_name else f"  // {schema_name}"
                structs.append(f"  struct {name} {{{note}")
                structs += ["    " + l for l in body]
                structs.append("  };")
            structs += ["  " + l for l in top]
            structs.append(f"  SILT_GENERATED_MESSAGE({sname0}, ApiKey::k{api});")
            for extra in mo.get("members", []):
                structs.append("  " + extra if extra else "")
            structs.append("};")
            structs.append("")
            unused = set(mo.get("fields", {})) - g.used_overrides
            if unused:
                raise SystemExit(f"{msg}: overrides name no field: {sorted(unused)}")
            sname = mo.get("struct", msg)
            out.append(f"// ---- {sname} ({api} v{served[0]}-{served[1]}) ----")
            out.append("template <class IO, class M>")
            out.append(f"void Io{sname}(IO& io, M& m, [[maybe_unused]] int16_t v) {{")
            for l in lines:
                out.append(indent(l, "  "))
            out.append("}")
            out.append("")
            names.append(sname)
    out.append("}  // namespace silt::protocol::walk")
    cc = banner + [
          "// Encode/Decode of every generated message, from its walk in generated_walks.h.",
          "#include \"protocol/generated_walks.h\"",
          "#include \"protocol/messages.h\"",
          "#include \"protocol/messages_describe.h\"",
          "#include \"protocol/messages_io.h\"",
          "#include \"protocol/messages_reassign.h\"",
          "",
          "namespace silt::protocol {",
          "",
          "using namespace walk;",
          ""]
    cc += [f"SILT_DEFINE_CODEC({n})" for n in names]
    cc += ["", "}  // namespace silt::protocol"]
    structs += ["#undef SILT_GENERATED_MESSAGE", "", "}  // namespace silt::protocol"]
    for name, lines in (("generated_walks.h", out), ("generated_codecs.cc", cc),
                        ("generated_messages.h", structs)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
