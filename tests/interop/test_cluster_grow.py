"""Growing a running three-node cluster by a fourth, broker-only node (Kafka's
process.roles=broker): started with the same --peers (which do not list it) and its own
--peer-listen, it keeps no Raft log, registers, and appears in Metadata on every node; a new
topic of replication factor 3 over the four brokers places replicas and a preferred leader on
it, and it serves and replicates them; a partition of an older topic is reassigned onto it;
killing it leaves the quorum alone (same controller, metadata changes still work)."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster, Node, free_port, kcat_metadata, kcat_partitions  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

cluster = Cluster(SILT, "interop-grow-1", prefix="silt-grow-",
                  extra_args=("--set", "broker.session.timeout.ms=2000",
                              "--set", "broker.heartbeat.interval.ms=250"))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def produce(node, topic, lines, partition=None):
    cmd = ["kcat", "-P", "-b", node.address, "-t", topic, "-X", "request.required.acks=-1"]
    if partition is not None:
        cmd += ["-p", str(partition)]
    else:
        cmd += ["-K", ":"]
    out = subprocess.run(cmd, input="".join(l + "\n" for l in lines), capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kcat produce: " + out.stderr)


def consume(node, topic, partition):
    out = subprocess.run(["kcat", "-C", "-b", node.address, "-t", topic, "-p", str(partition),
                          "-o", "beginning", "-e", "-q", "-f", "%s\n"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kcat consume: " + out.stderr)
    return out.stdout.split()


def led(node, topic, count):
    ps = kcat_partitions(kcat_metadata(node, topic), topic)
    if ps and len(ps) == count and all(p["leader"] >= 0 for p in ps.values()):
        return ps
    return None


try:
    cluster.start_all()
    cluster.wait_registered()
    n1 = cluster.nodes[1]
    cluster.silt_cmd("topic", "create", "-b", n1.address, "old", "--partitions", "3",
                     "--replication-factor", "2")
    cluster.wait_for("old led", lambda: led(n1, "old", 3))
    controller = kcat_metadata(n1)["controllerid"]

    # The fourth node: not in --peers, its own peer address.
    n4 = Node(cluster, 4)
    cluster.node_args[4] = ["--peer-listen", "127.0.0.1:%d" % free_port()]
    cluster.nodes[4] = n4
    n4.start()
    cluster.wait_registered()  # every node's Metadata lists four brokers
    with open(n4.log_path, errors="replace") as f:
        log4 = f.read()
    check("broker-only node 4" in log4, "node 4 starts as a broker-only node")
    check(not os.path.exists(os.path.join(n4.data, "silt-metadata-raft")),
          "node 4 keeps no Raft log")
    md4 = kcat_metadata(n4)
    check(md4 is not None and md4["controllerid"] == controller,
          "node 4's Metadata names the controller (%s)" % (md4 or {}).get("controllerid"))

    cluster.silt_cmd("topic", "create", "-b", n4.address, "wide", "--partitions", "4",
                     "--replication-factor", "3")
    ps = cluster.wait_for("wide led everywhere", lambda: all(
        led(n, "wide", 4) for n in cluster.nodes.values()) and led(n1, "wide", 4))
    on4 = [p for p, v in ps.items() if 4 in [r["id"] for r in v["replicas"]]]
    # Placement counts what each broker already holds: the new, empty node gets its full share
    # (3 of 4) or more.
    check(len(on4) >= 3, "node 4 holds replicas of the new topic's partitions %s" % on4)
    check(any(v["replicas"][0]["id"] == 4 for v in ps.values()),
          "node 4 is the preferred leader of a partition")
    values = ["k%d:v%d" % (i, i) for i in range(2000)]
    produce(n1, "wide", values)
    got = []
    for p in range(4):
        got += consume(n4, "wide", p)
    check(sorted(got) == sorted("v%d" % i for i in range(2000)),
          "every acks=all record is read back through node 4 (%d of 2000)" % len(got))
    # Node 4's own replicas caught up: every ISR is whole.
    ps = cluster.wait_for("full ISRs", lambda: (lambda x: x if x and all(
        len(v["isrs"]) == 3 for v in x.values()) else None)(led(n1, "wide", 4)))
    check(True, "every partition of wide has 3 in-sync replicas, node 4's among them")

    # Reassign a partition of the older topic onto node 4, dropping its preferred leader.
    old = kcat_partitions(kcat_metadata(n1, "old"), "old")
    p = [k for k, v in old.items() if 4 not in [r["id"] for r in v["replicas"]]][0]
    was = [r["id"] for r in old[p]["replicas"]]
    produce(n1, "old", ["x%d" % i for i in range(1000)], partition=p)
    target = [4, was[1]]
    plan = os.path.join(cluster.work, "plan.json")
    with open(plan, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": "old", "partition": p, "replicas": target}]}, f)
    cluster.silt_cmd("topic", "reassign", "-b", n1.address, "--plan", plan, "--execute")
    cluster.wait_for("the move onto node 4", lambda: cluster.silt_cmd(
        "topic", "reassign", "-b", n1.address, "--plan", plan, "--verify",
        check=False).returncode == 0, seconds=40, interval=0.5)
    after = kcat_partitions(kcat_metadata(n1, "old"), "old")[p]
    check(sorted(r["id"] for r in after["replicas"]) == sorted(target),
          "old-%d moved from %s to %s" % (p, was, target))
    check(consume(n4, "old", p) == ["x%d" % i for i in range(1000)],
          "node 4 serves every record of the moved partition")

    # Losing the broker-only node does not touch the quorum.
    n4.kill9()
    del cluster.nodes[4]
    time.sleep(3)
    md = kcat_metadata(n1)
    check(md is not None and md["controllerid"] == controller,
          "the controller is unchanged after node 4 is killed")
    r = cluster.silt_cmd("topic", "create", "-b", n1.address, "after", "--partitions", "2",
                         "--replication-factor", "3", check=False)
    check(r.returncode == 0, "metadata changes still work without node 4 (%s)" % r.stderr.strip())
    cluster.nodes[4] = n4  # its log is printed on failure, its dir removed with the rest
except SystemExit:
    raise
except Exception as e:  # noqa: BLE001
    cluster.fail("unexpected error: %r" % e)

if failures:
    cluster.fail("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
cluster.cleanup()
finish("a broker-only fourth node joins, takes replicas and a reassignment, and leaves")
