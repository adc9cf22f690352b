"""scripts/check_layers.py reports the includes the layer rules forbid, and passes clean trees.

Usage: check_layers_test.py CHECK_LAYERS_PY [RULES...]   (the rules the build uses)
Runs the checker over small lib/ trees made here, one forbidden include at a time."""
import os
import subprocess
import sys
import tempfile

checker = sys.argv[1]
rules = sys.argv[2:]
failures = 0


def run(files, extra=()):
    with tempfile.TemporaryDirectory(prefix="silt-layers-") as lib:
        for d in ["base", "format", "storage", "protocol", "broker", "cluster", "client"]:
            os.makedirs(os.path.join(lib, d))
            with open(os.path.join(lib, d, "ok.h"), "w") as f:
                f.write('#pragma once\n#include "base/status.h"\n#include <vector>\n')
        for rel, text in files.items():
            with open(os.path.join(lib, rel), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, checker, lib] + rules + list(extra),
                           capture_output=True, text=True)
        return p.returncode, p.stderr


def expect(what, files, rc, needle="", extra=()):
    global failures
    got_rc, err = run(files, extra)
    if got_rc != rc or needle not in err:
        failures += 1
        print("FAIL: %s: exit %d (expected %d), stderr:\n%s" % (what, got_rc, rc, err))
    else:
        print("ok: " + what)


expect("a tree that keeps the rules passes", {
    "client/a.cc": '#include "storage/x.h"\n#include "protocol/y.h"\n#include "client/a.h"\n',
    "broker/b.cc": '#include "broker/io.h"\n',
    "broker/io.h": "#include <asio.hpp>\n",
}, 0)
expect("client may not include broker headers",
       {"client/a.cc": '#include "broker/broker.h"\n'}, 1,
       'lib/client/a.cc:1: #include "broker/broker.h": layer client may include only')
expect("storage may not include protocol headers",
       {"storage/s.h": '#pragma once\n\n  #  include "protocol/errors.h"\n'}, 1,
       "lib/storage/s.h:3:")
expect("protocol may not include format headers",
       {"protocol/p.cc": '#include "format/record_batch.h"\n'}, 1, "layer protocol")
expect("base may not include any other layer",
       {"base/b.cc": '#include "format/layout.h"\n'}, 1, "layer base")
expect("nlohmann/json stays in client/record_format.cc",
       {"client/table.cc": "#include <nlohmann/json.hpp>\n"}, 1, "nlohmann/* may be included only")
expect("asio stays behind broker/io.h",
       {"broker/server.h": "#include <asio.hpp>\n"}, 1, "asio.hpp may be included only")
expect("broker/io.h stays out of the broker's public headers",
       {"broker/broker.h": '#include "broker/io.h"\n'}, 1, "broker/io.h may be included only")
expect("no CLI11 in lib/", {"client/x.cc": "#include <CLI/CLI.hpp>\n"}, 1, "CLI/*")
expect("the handlers rule, when given, forbids storage headers in broker handlers",
       {"broker/handlers_fetch.cc": '#include "storage/partition_log.h"\n'}, 1,
       "broker/handlers_*.cc must not include storage/",
       extra=["--forbid", "broker/handlers_*.cc=storage/"])
expect("the handlers rule follows lib/ headers: storage through broker/request.h counts too",
       {"broker/handlers_meta.cc": '#include "broker/request.h"\n',
        "broker/request.h": '#pragma once\n#include "broker/ok.h"\n#include "storage/log.h"\n'},
       1, "broker/request.h -> storage/log.h",
       extra=["--forbid", "broker/handlers_*.cc=storage/"])
expect("the handlers rule leaves other broker files alone",
       {"broker/broker.cc": '#include "storage/partition_log.h"\n'}, 0,
       extra=["--forbid", "broker/handlers_*.cc=storage/"])
expect("cluster may not include client headers",
       {"cluster/c.cc": '#include "client/admin.h"\n'}, 1, "layer cluster may include only")
expect("cluster may include broker headers",
       {"cluster/c.cc": '#include "broker/metadata_store.h"\n'}, 0)
expect("broker may not include cluster headers",
       {"broker/b.cc": '#include "cluster/voters.h"\n'}, 1, "layer broker may include only")
expect("libraft and libuv stay out of cluster headers",
       {"cluster/metadata_quorum.h": "#pragma once\n#include <raft.h>\n"}, 1,
       "raft.h may be included only")
expect("libraft and libuv may be used in cluster sources",
       {"cluster/raft_quorum.cc": "#include <uv.h>\n#include <raft.h>\n#include <raft/uv.h>\n"}, 0)

if failures:
    print("%d failed" % failures)
    sys.exit(1)
print("PASS")
