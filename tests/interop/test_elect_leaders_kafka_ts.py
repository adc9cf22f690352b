"""ElectLeaders sent by a real client (kafka-ts from npm, ElectLeaders v2) to a three-node
cluster of `silt serve` processes, with automatic leader rebalancing off.

The preferred leader of a partition is killed, so another replica takes over; it comes back and
rejoins the ISR but does not lead. A preferred election for every partition of the topic then
moves that leadership back (error 0) and answers ELECTION_NOT_NEEDED for the partitions already
led by their preferred replica; asked again, every partition is ELECTION_NOT_NEEDED. An unclean
election where a leader is alive is not needed either, an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION. An election over every partition (null) elects the partitions of
__consumer_offsets the victim should lead and answers only those, and once all are led by their
preferred replicas answers nothing, as Kafka does. Records written before the moves are
all still there."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster, kcat_metadata, kcat_partitions  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")
if shutil.which("node") is None or shutil.which("npm") is None:
    skip("node/npm not installed (apt-get install nodejs npm)")
if not os.path.exists(os.path.join(HERE, "node_modules", "kafka-ts", "package.json")):
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        skip("could not install kafka-ts with npm ci (no npm registry?)")

TOPIC = "elect"
ELECTION_NOT_NEEDED = 84
UNKNOWN_TOPIC_OR_PARTITION = 3
failures = []
cluster = Cluster(SILT, "interop-elect-1", prefix="silt-elect-",
                  extra_args=("--set", "auto.leader.rebalance.enable=false",
                              "--set", "replica.lag.time.max.ms=2000"))


def check(cond, what, detail=None):
    """Records a failed check; the answer it was about is printed only then."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        if detail is not None:
            print("     " + json.dumps(detail))
        failures.append(what)


def elect(node, election_type, topic_partitions):
    """partition -> error code from one kafka-ts ElectLeaders request (and the whole answer)."""
    req = json.dumps({"electionType": election_type, "topicPartitions": topic_partitions})
    out = subprocess.run(["node", os.path.join(HERE, "kafka_ts_elect.js"), node.address, req],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kafka-ts ElectLeaders: " + out.stdout + out.stderr)
    resp = json.loads(out.stdout)
    if resp["errorCode"] != 0:
        cluster.fail("ElectLeaders top-level error: " + out.stdout)
    codes = {}
    for t in resp["replicaElectionResults"]:
        for p in t["partitionResult"]:
            codes[(t["topic"], p["partitionId"])] = p["errorCode"]
    return codes, resp


def partitions():
    """partition -> {"leader", "replicas", "isrs"} (ids) from a live node, or None."""
    for n in cluster.nodes.values():
        if n.proc is not None:
            md = kcat_partitions(kcat_metadata(n, TOPIC), TOPIC)
            if md:
                return {p: {"leader": v["leader"],
                            "replicas": [r["id"] for r in v["replicas"]],
                            "isrs": [r["id"] for r in v["isrs"]]} for p, v in md.items()}
    return None


try:
    cluster.start_all()
    cluster.wait_registered()
    n1 = cluster.nodes[1]
    cluster.silt_cmd("topic", "-b", n1.address, "create", TOPIC, "--partitions", "3",
                     "--replication-factor", "3")
    md = cluster.wait_for("leaders of every partition",
                          lambda: (lambda m: m if m and len(m) == 3 and
                                   all(p["leader"] >= 0 and len(p["isrs"]) == 3
                                       for p in m.values()) else None)(partitions()))
    preferred = {p: v["replicas"][0] for p, v in md.items()}
    data = "".join("r%d\n" % i for i in range(300))
    out = subprocess.run(["kcat", "-P", "-b", n1.address, "-t", TOPIC,
                          "-X", "request.required.acks=-1"],
                         input=data, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        cluster.fail("kcat produce: " + out.stderr)

    # Partition 0's preferred leader goes away; another replica leads it.
    victim = cluster.nodes[preferred[0]]
    moved = [p for p in md if preferred[p] == victim.id]
    victim.kill9()
    cluster.wait_for("a new leader of partition 0",
                     lambda: (lambda m: m and m[0]["leader"] not in (-1, victim.id))(partitions()),
                     seconds=30)
    victim.start()
    cluster.wait_for("node %d back in every ISR" % victim.id,
                     lambda: (lambda m: m and all(victim.id in p["isrs"] for p in m.values()))(
                         partitions()), seconds=40)
    time.sleep(1)
    md = partitions()
    check(all(md[p]["leader"] != victim.id for p in moved),
          "node %d is back in the ISR but does not lead %s (no automatic rebalance)"
          % (victim.id, moved))

    # A preferred election of the whole topic moves them back.
    codes, resp = elect(n1, 0, [{"topic": TOPIC, "partitions": [0, 1, 2]}])
    check(all(codes.get((TOPIC, p)) == 0 for p in moved),
          "preferred election: partitions %s elected (error 0)" % moved, resp)
    check(all(codes.get((TOPIC, p)) == ELECTION_NOT_NEEDED for p in md if p not in moved),
          "preferred election: the others ELECTION_NOT_NEEDED", resp)
    cluster.wait_for("preferred leaders everywhere",
                     lambda: (lambda m: m and all(m[p]["leader"] == preferred[p] for p in m))(
                         partitions()), seconds=30)
    print("ok   every partition is led by its preferred replica again")

    codes, resp = elect(cluster.nodes[victim.id], 0, [{"topic": TOPIC, "partitions": [0, 1, 2]}])
    check(sorted(codes.values()) == [ELECTION_NOT_NEEDED] * 3,
          "asked again: ELECTION_NOT_NEEDED for all three", resp)
    codes, resp = elect(n1, 1, [{"topic": TOPIC, "partitions": [0]}])
    check(codes == {(TOPIC, 0): ELECTION_NOT_NEEDED},
          "unclean election with a live leader: ELECTION_NOT_NEEDED", resp)
    codes, resp = elect(n1, 0, [{"topic": TOPIC, "partitions": [7]}])
    check(codes == {(TOPIC, 7): UNKNOWN_TOPIC_OR_PARTITION},
          "an unknown partition: UNKNOWN_TOPIC_OR_PARTITION", resp)

    # Every partition (null): the victim also led partitions of __consumer_offsets, which the
    # topic's election left alone. They are elected now, and only they are answered; asked
    # again, nothing is left to elect and the answer is empty.
    md_all = kcat_metadata(n1)
    offsets_moved = sorted(
        ("__consumer_offsets", p["partition"])
        for t in md_all["topics"] if t["topic"] == "__consumer_offsets"
        for p in t["partitions"]
        if p["replicas"][0]["id"] == victim.id and p["leader"] != victim.id)
    codes, resp = elect(n1, 0, None)
    check(sorted(codes) == offsets_moved and set(codes.values()) <= {0},
          "every partition (null): the %d partitions of __consumer_offsets node %d should lead are "
          "elected, nothing else is answered" % (len(offsets_moved), victim.id), resp)
    codes, resp = elect(n1, 0, None)
    check(codes == {}, "every partition (null), nothing to elect: an empty answer", resp)

    out = subprocess.run(["kcat", "-C", "-b", n1.address, "-t", TOPIC, "-o", "beginning", "-e",
                          "-q"], capture_output=True, text=True, timeout=60)
    got = sorted(out.stdout.split())
    check(got == sorted("r%d" % i for i in range(300)),
          "all 300 records are still there (%d read)" % len(got))
except SystemExit:
    raise
except Exception as e:  # noqa: BLE001
    cluster.fail("unexpected: %r" % e)

if failures:
    cluster.fail("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
cluster.cleanup()
finish("kafka-ts ElectLeaders on three nodes")
