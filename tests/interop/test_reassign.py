"""Partition reassignment on a three-node cluster of `silt serve` processes, through
`silt topic reassign` (plans in kafka-reassign-partitions' JSON).

A partition of a replication-factor-2 topic moves off its preferred leader onto the third node:
--execute starts it (and prints the current assignment for a rollback), --verify reports it
complete once the new replica is in the ISR, the old one dropped and leadership moved, and
removes the throttle; every record written before and during the move is still there. A second
partition, moved with a throttle of one byte per second, cannot catch up: --verify says it is in
progress (exit 1), ListPartitionReassignments lists it, and --cancel puts its replicas back.
--generate prints a plan of every partition over the brokers given."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster, kcat_metadata, kcat_partitions  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

TOPIC = "moving"
cluster = Cluster(SILT, "interop-reassign-1", prefix="silt-reassign-",
                  extra_args=("--set", "replica.lag.time.max.ms=2000"))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def produce(node, partition, values, batch=10000):
    data = "".join("%s\n" % v for v in values)
    out = subprocess.run(["kcat", "-P", "-b", node.address, "-t", TOPIC, "-p", str(partition),
                          "-X", "request.required.acks=-1",
                          "-X", "batch.num.messages=%d" % batch],
                         input=data, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kcat produce: " + out.stderr)


def consume(node, partition):
    out = subprocess.run(["kcat", "-C", "-b", node.address, "-t", TOPIC, "-p", str(partition),
                          "-o", "beginning", "-e", "-q"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kcat consume: " + out.stderr)
    return out.stdout.split()


def partitions(node):
    return kcat_partitions(kcat_metadata(node, TOPIC), TOPIC)


def write_plan(name, moves):
    path = os.path.join(cluster.work, name)
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": p, "replicas": r} for p, r in moves]}, f)
    return path


try:
    cluster.start_all()
    cluster.wait_registered()
    n1 = cluster.nodes[1]
    b = n1.address
    cluster.silt_cmd("topic", "create", "-b", b, TOPIC, "--partitions", "2",
                     "--replication-factor", "2")
    parts = cluster.wait_for("leaders of " + TOPIC,
                             lambda: (lambda ps: ps if ps and all(
                                 p["leader"] >= 0 for p in ps.values()) else None)(partitions(n1)))
    old = [r["id"] for r in parts[0]["replicas"]]
    spare = [n for n in (1, 2, 3) if n not in old][0]
    target = [spare, old[1]]  # the preferred leader old[0] leaves: leadership has to move
    print("partition 0: replicas %s -> %s" % (old, target))
    before = ["a%d" % i for i in range(3000)]
    produce(n1, 0, before)

    # --generate changes nothing and places every partition over the brokers given.
    gen = cluster.silt_cmd("topic", "reassign", "-b", b, "--generate", "--brokers", "1,2,3",
                           "--topics", TOPIC)
    proposed = json.loads(gen.stdout.split("Proposed partition reassignment configuration")[1])
    check(sorted(p["partition"] for p in proposed["partitions"]) == [0, 1] and
          all(len(p["replicas"]) == 2 for p in proposed["partitions"]),
          "--generate proposes both partitions with their replication factor")

    plan = write_plan("plan.json", [(0, target)])
    out = cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan, "--execute",
                           "--throttle", "50000000")
    check("Save this to use as the --plan" in out.stdout and str(old[0]) in out.stdout,
          "--execute prints the current assignment for a rollback")
    produce(n1, 0, ["b%d" % i for i in range(500)])  # while it moves

    def verified():
        r = cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan, "--verify",
                             check=False)
        return r if r.returncode == 0 else None
    v = cluster.wait_for("the reassignment to complete", verified, seconds=40, interval=0.5)
    check("is complete" in v.stdout, "--verify reports the reassignment complete")
    check("Removed the reassignment throttle" in v.stdout, "--verify removes the throttle")
    p0 = cluster.wait_for("metadata with the new replicas",
                          lambda: (lambda ps: ps[0] if ps and sorted(
                              r["id"] for r in ps[0]["replicas"]) == sorted(target) else None)(
                              partitions(n1)))
    check(p0["leader"] in target, "the partition is led by a target replica (%d)" % p0["leader"])
    check(sorted(r["id"] for r in p0["isrs"]) == sorted(target), "the ISR is the target")
    got = consume(cluster.nodes[spare], 0)
    check(got == before + ["b%d" % i for i in range(500)],
          "every record is on the partition after the move (%d of 3500)" % len(got))
    desc = cluster.silt_cmd("topic", "describe", "-b", b, TOPIC, "--format", "json")
    check("replica.reassignment.throttle.bytes" not in desc.stdout,
          "the throttle config is gone")

    # A throttle of 1 B/s: the new replica gets one batch (a read always returns a whole one),
    # then the leader's budget is in debt, so it cannot catch up with 200 batches and the move
    # stays in progress until it is cancelled.
    old1 = [r["id"] for r in partitions(n1)[1]["replicas"]]
    spare1 = [n for n in (1, 2, 3) if n not in old1][0]
    produce(n1, 1, ["c%d" % i for i in range(2000)], batch=10)
    plan1 = write_plan("plan1.json", [(1, [spare1, old1[1]])])
    cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan1, "--execute", "--throttle",
                     "1")
    time.sleep(3)
    r = cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan1, "--verify", check=False)
    check(r.returncode == 1 and "still in progress" in r.stdout,
          "--verify says a throttled move is still in progress (exit %d)" % r.returncode)
    p1 = partitions(n1)[1]
    check(spare1 not in [x["id"] for x in p1["isrs"]],
          "the throttled replica has not joined the ISR")
    cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan1, "--cancel")
    p1 = cluster.wait_for("the cancelled partition's original replicas",
                          lambda: (lambda ps: ps[1] if ps and sorted(
                              x["id"] for x in ps[1]["replicas"]) == sorted(old1) else None)(
                              partitions(n1)))
    check(p1["leader"] in old1, "after --cancel an original replica leads")
    check(len(consume(n1, 1)) == 2000, "the cancelled partition kept its records")
    r = cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", plan1, "--cancel", check=False)
    check(r.returncode != 0 and "NO_REASSIGNMENT_IN_PROGRESS" in r.stderr,
          "a second --cancel finds no reassignment in progress")
    bad = write_plan("bad.json", [(0, [1, 9])])
    r = cluster.silt_cmd("topic", "reassign", "-b", b, "--plan", bad, "--execute", check=False)
    check(r.returncode != 0 and "INVALID_REPLICA_ASSIGNMENT" in r.stderr,
          "a plan naming an unknown broker is refused")
except SystemExit:
    raise
except Exception as e:  # noqa: BLE001
    cluster.fail("unexpected error: %r" % e)

if failures:
    cluster.fail("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
cluster.cleanup()
finish("partition reassignment on three nodes: execute, verify, throttle, cancel, generate")
