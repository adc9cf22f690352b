"""Replication metrics on a three-node cluster: a topic of one partition, replication factor 3.

While every replica is in sync, /metrics on every node says 0 under-replicated partitions, the
leader exports each follower's lag, the followers count their replica fetches and the controller
reports no offline partition (__consumer_offsets has one replica per partition here). A follower
paused with SIGSTOP, with records written after it, leaves the ISR by its leader's shrink
(replica.lag.time.max.ms, shorter than the broker session; a paused node's listener still
accepts, so the controller does not fence it early): the leader's
silt_under_replicated_partitions goes to 1 and silt_isr_shrinks_total moves. Killed then
(SIGKILL), it is fenced: `silt cluster` and `silt topic describe -b` mark the partition
under-replicated, and the controller counts the dead node's __consumer_offsets partitions
offline. Restarted on its data dir, the follower
catches up and rejoins: under-replicated and offline back to 0, silt_isr_expands_total moves."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

TOPIC = "watched"
CLUSTER = Cluster(SILT, "interop-metrics-1", prefix="silt-cluster-metrics-",
                  extra_args=["--metrics", "127.0.0.1:0",
                              "--set", "replica.lag.time.max.ms=2000",
                              "--set", "broker.session.timeout.ms=8000",
                              # __consumer_offsets on one replica each: the topic below is the
                              # only one a dead follower leaves under-replicated, and a dead
                              # node's offsets partitions go offline.
                              "--set", "offsets.topic.replication.factor=1",
                              "--set", "offsets.topic.num.partitions=3"])
NODES = CLUSTER.nodes
fail = CLUSTER.fail


def metrics_port(node):
    with open(node.log_path, errors="replace") as f:
        m = re.findall(r"metrics on http://127\.0\.0\.1:([0-9]+)/metrics", f.read())
    return int(m[-1]) if m else None


def scrape(node):
    """name{labels} -> value of one node's /metrics ({} when it does not answer)."""
    port = metrics_port(node)
    if port is None:
        return {}
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                      timeout=10).read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def total(name, nodes):
    return sum(scrape(n).get(name, 0) for n in nodes)


def partition_view(node, check=True):
    """`silt cluster --format json` via `node`: the topic's one partition (None, unless
    `check`, while the node does not know the topic yet)."""
    out = CLUSTER.silt_cmd("cluster", "-b", node.address, "-t", TOPIC, "--format", "json",
                           check=check)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["topics"][0]["partitions"][0]


def in_sync(node):
    p = partition_view(node, check=False)
    return p if p and p["leader"] is not None and len(p["isr"]) == 3 else None


def produce(node, prefix, acks):
    out = subprocess.run([SILT, "produce", "-b", node.address, "-t", TOPIC, "--acks", str(acks)],
                         input="".join("%s%d\n" % (prefix, i) for i in range(20)), text=True,
                         capture_output=True, timeout=60)
    if out.returncode != 0:
        fail("produce: %s" % out.stderr)


def main():
    CLUSTER.start_all()
    CLUSTER.wait_registered()
    CLUSTER.silt_cmd("topic", "create", "-b", NODES[1].address, TOPIC, "--partitions", "1",
                     "--replication-factor", "3")
    everyone = list(NODES.values())
    p = CLUSTER.wait_for("a leader and a full ISR", lambda: in_sync(NODES[1]))
    if p["under_replicated"] or p["offline"]:
        fail("a full ISR marked under-replicated or offline: %s" % p)
    leader = NODES[p["leader"]]
    produce(leader, "r", "all")

    # Everything in sync: no under-replicated partition anywhere, the leader knows its
    # followers' lag, the followers count their fetches, one leader, no offline partition.
    CLUSTER.wait_for("0 under-replicated partitions and followers caught up", lambda: (
        total("silt_under_replicated_partitions", everyone) == 0 and
        all(scrape(leader).get('silt_follower_lag_records{follower="%d",partition="0",'
                               'topic="%s"}' % (f.id, TOPIC)) == 0
            for f in everyone if f is not leader)))
    if total('silt_partitions_led', everyone) < 1:
        fail("no node says it leads a partition")
    followers = [n for n in everyone if n is not leader]
    for f in followers:
        m = scrape(f)
        if m.get('silt_replica_fetch_requests_total{leader="%d"}' % leader.id, 0) <= 0:
            fail("node %d counts no replica fetch from leader %d" % (f.id, leader.id))
        if m.get('silt_replica_fetch_bytes_total{leader="%d"}' % leader.id, 0) <= 0:
            fail("node %d counts no replica fetch bytes" % f.id)
    if total("silt_offline_partitions", everyone) != 0:
        fail("offline partitions reported with every node up")
    shrinks0 = scrape(leader).get("silt_isr_shrinks_total", 0)
    expands0 = scrape(leader).get("silt_isr_expands_total", 0)
    print("ok: in sync: 0 under-replicated, follower lag 0, replica fetches counted")

    # A follower (not the controller, when there is a choice) is killed.
    victim = sorted(followers, key=lambda n: scrape(n).get("silt_raft_is_controller", 0))[0]
    internal = json.loads(CLUSTER.silt_cmd("cluster", "-b", leader.address, "--internal",
                                           "--format", "json").stdout)
    alone = sum(1 for t in internal["topics"] if t["topic"] == "__consumer_offsets"
                for q in t["partitions"] if q["replicas"] == [victim.id])
    os.kill(victim.proc.pid, signal.SIGSTOP)
    survivors = [n for n in everyone if n is not victim]
    # Kafka's rule keeps a silent follower at the leader's log end in sync: records written
    # after the kill put it behind, so that the leader drops it after replica.lag.time.max.ms.
    produce(leader, "acks1-", 1)
    CLUSTER.wait_for("under-replicated 1 after node %d was killed" % victim.id,
                     lambda: total("silt_under_replicated_partitions", survivors) == 1,
                     seconds=30)
    if scrape(leader).get("silt_isr_shrinks_total", 0) <= shrinks0:
        fail("silt_isr_shrinks_total did not move on the leader")
    victim.kill9()  # SIGKILL ends a stopped process too
    # Its only-replica __consumer_offsets partitions lose their leader once it is fenced.
    CLUSTER.wait_for("%d offline partition(s) at the controller" % alone,
                     lambda: total("silt_offline_partitions", survivors) == alone, seconds=30)
    p = partition_view(leader)
    if not p["under_replicated"] or victim.id in p["isr"]:
        fail("silt cluster does not mark the partition under-replicated: %s" % p)
    out = CLUSTER.silt_cmd("cluster", "-b", leader.address, "-t", TOPIC).stdout
    rows = [r for r in out.splitlines() if r.startswith("partition\t")]
    if len(rows) != 1 or not rows[0].endswith("\tunder-replicated"):
        fail("silt cluster text: %s" % rows)
    d = json.loads(CLUSTER.silt_cmd("topic", "describe", "-b", leader.address, TOPIC,
                                    "--format", "json").stdout)
    dp = d["partitions"][0]
    if dp["under_replicated"] is not True or dp["offline"] is not False:
        fail("topic describe JSON: %s" % dp)
    text = CLUSTER.silt_cmd("topic", "describe", "-b", leader.address, TOPIC).stdout
    if "under-replicated" not in text:
        fail("topic describe text does not mark the partition: %s" % text)
    print("ok: node %d killed: under-replicated 1, %d offline, ISR shrink counted, CLI marks it"
          % (victim.id, alone))

    victim.start()
    CLUSTER.wait_for("under-replicated back to 0 after node %d restarted" % victim.id,
                     lambda: total("silt_under_replicated_partitions", everyone) == 0,
                     seconds=40)
    CLUSTER.wait_for("no offline partition after the restart",
                     lambda: total("silt_offline_partitions", everyone) == 0, seconds=30)
    if scrape(leader).get("silt_isr_expands_total", 0) <= expands0:
        fail("silt_isr_expands_total did not move on the leader")
    p = partition_view(leader)
    if p["under_replicated"] or sorted(p["isr"]) != [1, 2, 3]:
        fail("after the restart: %s" % p)
    print("ok: node %d back in the ISR: under-replicated 0, ISR expansion counted" % victim.id)


try:
    main()
finally:
    CLUSTER.cleanup()
finish("replication metrics follow a follower's death and return")
