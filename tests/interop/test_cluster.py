"""Three `silt serve` processes as one cluster on 127.0.0.1, with static peers.

Every node reports the same leaders for a topic created on one of them; kcat produces and
consumes following the leaders; a node that does not lead a partition answers Produce for it
with NOT_LEADER_OR_FOLLOWER; after kill -9 of the controller another is elected and metadata
is still served and changed; the killed node catches up when it comes back; a node with another
cluster id, another node id or a lost Raft directory refuses to start."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster, kcat_leaders, kcat_metadata  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

CLUSTER = Cluster(SILT, "interop-cluster-1")
NODES = CLUSTER.nodes
WORK = CLUSTER.work
fail = CLUSTER.fail
cleanup = CLUSTER.cleanup
wait_for = CLUSTER.wait_for
metadata = kcat_metadata
leaders = kcat_leaders


def silt(*args, check=True):
    out = subprocess.run([SILT] + list(args), capture_output=True, text=True, timeout=60)
    if check and out.returncode != 0:
        fail("silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
    return out


try:
    CLUSTER.start_all()
    # Every node registers; Metadata from any node lists all three.
    CLUSTER.wait_registered()
    brokers = {b["id"]: b["name"] for b in metadata(NODES[1])["brokers"]}
    for i, n in NODES.items():
        if brokers[i] != n.address:
            fail("broker %d advertised as %s, listens on %s" % (i, brokers[i], n.address))
    print("ok: three nodes registered at their advertised addresses")

    # A topic created on node 2 has the same leaders on every node, two per broker.
    silt("topic", "-b", NODES[2].address, "create", "orders", "--partitions", "6")
    # CreateTopics is answered once every unfenced broker has applied the creation: every node
    # knows the topic and its leaders right after the answer, with no wait.
    views = [leaders(metadata(n, "orders"), "orders") for n in NODES.values()]
    if any(v != views[0] for v in views) or views[0] is None or len(views[0]) != 6:
        fail("right after the creation was answered, nodes disagree on the leaders of orders: "
             "%s" % views)
    print("ok: every node names the same leaders right after the creation was answered")
    counts = {b: list(views[0].values()).count(b) for b in (1, 2, 3)}
    if counts != {1: 2, 2: 2, 3: 2}:
        fail("leaders are not spread evenly: %s" % views[0])
    controllers = {metadata(n)["controllerid"] for n in NODES.values()}
    if len(controllers) != 1 or controllers.pop() not in (1, 2, 3):
        fail("nodes disagree on the controller")
    print("ok: 6 partitions, the same leaders on all nodes: %s" % views[0])

    # `silt cluster` from any node: the same brokers, controller, leaders, and the quorum from
    # the controller (DescribeQuorum): term, commit index, every voter caught up.
    import json

    def cluster_view(node):
        out = silt("cluster", "-b", node.address, "--format", "json")
        return json.loads(out.stdout)

    controller_id = metadata(NODES[1])["controllerid"]
    for n in NODES.values():
        j = cluster_view(n)
        if [b["id"] for b in j["brokers"]] != [1, 2, 3] or j["controller"] != controller_id:
            fail("silt cluster via node %d: brokers %s, controller %s" % (n.id, j["brokers"],
                                                                       j["controller"]))
        q = j["quorum"]
        if q is None or q["leader"] != controller_id or q["term"] < 1 or q["commit_index"] < 1:
            fail("silt cluster via node %d: quorum %s" % (n.id, q))
        if [v["id"] for v in q["voters"]] != [1, 2, 3] or any(
                v["log_end"] is None or v["log_end"] < 1 for v in q["voters"]):
            fail("silt cluster via node %d: voters %s" % (n.id, q["voters"]))
        got = {p["partition"]: p["leader"] for t in j["topics"] if t["topic"] == "orders"
               for p in t["partitions"]}
        if got != views[0]:
            fail("silt cluster via node %d: orders leaders %s, kcat says %s" % (n.id, got,
                                                                             views[0]))
        if j["fenced_brokers"] != []:
            fail("silt cluster via node %d: fenced %s" % (n.id, j["fenced_brokers"]))
    rows = silt("cluster", "-b", NODES[3].address).stdout.splitlines()
    quorum_rows = [r.split("\t") for r in rows if r.startswith("quorum\t")]
    if len(quorum_rows) != 1 or quorum_rows[0][1] != str(controller_id):
        fail("silt cluster text: quorum rows %s" % quorum_rows)
    if len([r for r in rows if r.startswith("voter\t")]) != 3:
        fail("silt cluster text: %s" % rows)
    print("ok: silt cluster agrees on every node; quorum led by %d in term %d at commit %d"
          % (controller_id, q["term"], q["commit_index"]))

    # kcat produces through node 1 and consumes through node 3, following the leaders.
    lines = "".join("key%d:value %d\n" % (i, i) for i in range(120))
    p = subprocess.run(["kcat", "-b", NODES[1].address, "-P", "-t", "orders", "-K:"],
                       input=lines, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("kcat produce: " + p.stderr)
    c = subprocess.run(["kcat", "-b", NODES[3].address, "-C", "-t", "orders", "-o", "beginning",
                        "-e", "-q", "-f", "%p %k:%s\n"], capture_output=True, text=True,
                       timeout=60)
    if c.returncode != 0:
        fail("kcat consume: " + c.stderr)
    got = c.stdout.splitlines()
    if sorted(l.split(" ", 1)[1] for l in got) != sorted(lines.splitlines()):
        fail("consumed %d records, not the 120 produced" % len(got))
    used = {int(l.split(" ", 1)[0]) for l in got}
    if len(used) < 4:
        fail("records went to only %d partitions" % len(used))
    print("ok: kcat produced 120 records through node 1 and consumed them through node 3")

    # Producing to a topic that does not exist creates it cluster-wide (auto.create.topics).
    p = subprocess.run(["kcat", "-b", NODES[2].address, "-P", "-t", "auto-made"], input="a\nb\n",
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("kcat produce to a new topic: " + p.stderr)
    for n in NODES.values():
        if leaders(metadata(n, "auto-made"), "auto-made") is None:
            fail("auto-made is not known to node %d" % n.id)
    c = subprocess.run(["kcat", "-b", NODES[1].address, "-C", "-t", "auto-made", "-e", "-q"],
                       capture_output=True, text=True, timeout=60)
    if c.stdout.split() != ["a", "b"]:
        fail("auto-made holds %r" % c.stdout)
    print("ok: a topic auto-created through node 2 is served by all")

    # Records are stored only by the leaders. (A node creates the topic in its data dir, every
    # partition directory included, when it first opens a partition it leads.)
    def stored(n, part):
        d = os.path.join(n.data, "orders-%d" % part)
        if not os.path.isdir(d):
            return 0
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))
    for i, n in NODES.items():
        for part, leader in views[0].items():
            if leader != i and stored(n, part) != 0:
                fail("node %d stores records of orders-%d, led by %d" % (i, part, leader))
            if leader == i and part in used and stored(n, part) == 0:
                fail("node %d leads orders-%d but stores none of its records" % (i, part))
    print("ok: records stored only on the leaders")

    # Replication factor 3 is assigned over the three brokers (test_replication.py copies).
    silt("topic", "-b", NODES[3].address, "create", "rf3", "--partitions", "3",
         "--replication-factor", "3")
    md = metadata(NODES[1], "rf3")
    parts = [p for t in md["topics"] if t["topic"] == "rf3" for p in t["partitions"]]
    if len(parts) != 3 or any(sorted(r["id"] for r in p["replicas"]) != [1, 2, 3] or
                              p["replicas"][0]["id"] != p["leader"] for p in parts):
        fail("rf3's replicas: %s" % parts)
    if sorted(p["leader"] for p in parts) != [1, 2, 3]:
        fail("rf3's leaders are not spread: %s" % parts)
    r = silt("topic", "-b", NODES[3].address, "create", "rf4", "--partitions", "1",
             "--replication-factor", "4", check=False)
    if r.returncode == 0 or "larger than the number of brokers (3)" not in r.stdout + r.stderr:
        fail("replication factor 4 on 3 brokers: rc %d, %s%s" % (r.returncode, r.stdout, r.stderr))
    print("ok: replication factor 3 assigned over three brokers, 4 refused")

    # A node that does not lead a partition answers Produce with NOT_LEADER_OR_FOLLOWER (6).
    try:
        from kafka.client_async import KafkaClient
        from kafka.protocol.fetch import FetchRequest
        from kafka.protocol.produce import ProduceRequest
        from kafka.record.memory_records import MemoryRecordsBuilder
    except ImportError:
        KafkaClient = None
    if KafkaClient is None:
        from broker_common import skip_part
        skip_part("kafka-python is not installed: NOT_LEADER_OR_FOLLOWER not checked")
    else:
        part, leader = next(iter(views[0].items()))
        other = 1 if leader != 1 else 2
        client = KafkaClient(bootstrap_servers=NODES[1].address, api_version=(2, 5, 0))
        client.poll(future=client.cluster.request_update(), timeout_ms=5000)

        def produce_to(node_id):
            b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
            b.append(timestamp=None, key=b"k", value=b"v", headers=[])
            b.close()
            req = ProduceRequest[3](transactional_id=None, required_acks=1, timeout=5000,
                                    topics=[("orders", [(part, bytes(b.buffer()))])])
            return call(node_id, req)

        def call(node_id, req):
            deadline = time.time() + 10
            while not client.ready(node_id) and time.time() < deadline:
                client.poll(timeout_ms=100)
            fut = client.send(node_id, req)
            client.poll(future=fut, timeout_ms=5000)
            return fut.value.topics[0][1][0][1]

        def fetch_from(node_id):
            return call(node_id, FetchRequest[4](-1, 100, 1, 1 << 20, 0,
                                                 [("orders", [(part, 0, 1 << 20)])]))
        if produce_to(other) != 6:
            fail("produce to non-leader %d of orders-%d did not answer NOT_LEADER_OR_FOLLOWER"
                 % (other, part))
        if produce_to(leader) != 0:
            fail("produce to the leader %d of orders-%d failed" % (leader, part))
        if fetch_from(other) != 6:
            fail("fetch from non-leader %d of orders-%d did not answer NOT_LEADER_OR_FOLLOWER"
                 % (other, part))
        if fetch_from(leader) != 0:
            fail("fetch from the leader %d of orders-%d failed" % (leader, part))
        client.close()
        print("ok: a non-leader answers Produce and Fetch with NOT_LEADER_OR_FOLLOWER")

    # kill -9 of the controller: another node is elected and metadata changes still commit.
    old = metadata(NODES[1])["controllerid"]
    NODES[old].kill9()
    survivors = [n for i, n in NODES.items() if i != old]
    t0 = time.time()

    def new_controller():
        ids = {metadata(n)["controllerid"] for n in survivors}
        return len(ids) == 1 and ids.pop() not in (old, -1)
    wait_for("a new controller", new_controller)
    elected = time.time() - t0

    # A session (broker.session.timeout.ms, 3 s) later the dead broker is fenced: Metadata no
    # longer lists it and its partitions have no leader (no other in-sync replica).
    want = {p: (-1 if l == old else l) for p, l in views[0].items()}

    def fenced():
        for n in survivors:
            md = metadata(n, "orders")
            if md is None or {b["id"] for b in md["brokers"]} != {n2.id for n2 in survivors}:
                return False
            if leaders(md, "orders") != want:
                return False
        return True
    wait_for("node %d to be fenced" % old, fenced)
    fenced_after = time.time() - t0
    silt("topic", "-b", survivors[0].address, "create", "after-kill", "--partitions", "4")
    got = leaders(metadata(survivors[1], "after-kill"), "after-kill")
    if got is None or set(got.values()) != {n.id for n in survivors}:
        fail("after-kill is not placed on the survivors: %s" % got)
    print("ok: node %d killed; new controller after %.1fs, fenced after %.1fs, new topics on "
          "the survivors" % (old, elected, fenced_after))
    j = cluster_view(survivors[0])
    if j["fenced_brokers"] != [old] or j["quorum"]["leader"] == old:
        fail("silt cluster after node %d died: fenced %s, quorum %s" % (old, j["fenced_brokers"],
                                                                       j["quorum"]))
    leaderless = sorted(p["partition"] for t in j["topics"] if t["topic"] == "orders"
                        for p in t["partitions"] if p["leader"] is None)
    if leaderless != sorted(p for p, l in views[0].items() if l == old):
        fail("silt cluster after node %d died: leaderless %s" % (old, leaderless))
    print("ok: silt cluster shows node %d fenced and its partitions leaderless" % old)

    # Refusals: another cluster id or node id on its data dir, a lost Raft directory, and a
    # fresh node of another cluster (refused once it learns the cluster's log).
    dead = NODES[old]
    r = subprocess.run(dead.args(cluster_id="another-cluster"), capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 2 or "silt: error:" not in r.stderr or "cluster id" not in r.stderr:
        fail("another cluster id on node %d's data dir: rc %d, %s" % (old, r.returncode, r.stderr))
    r = subprocess.run(dead.args(node_id=old % 3 + 1), capture_output=True, text=True, timeout=30)
    if r.returncode != 2 or "belongs to node" not in r.stderr:
        fail("another node id on node %d's data dir: rc %d, %s" % (old, r.returncode, r.stderr))
    raft = os.path.join(dead.data, "silt-metadata-raft")
    os.rename(raft, raft + ".moved")
    r = subprocess.run(dead.args(), capture_output=True, text=True, timeout=30)
    if r.returncode != 2 or "Raft directory" not in r.stderr:
        fail("a lost Raft directory: rc %d, %s" % (r.returncode, r.stderr))
    os.rename(raft + ".moved", raft)
    fresh = os.path.join(WORK, "fresh")
    r = subprocess.run(dead.args(cluster_id="another-cluster", data=fresh), capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 2 or "silt: error:" not in r.stderr or "cluster" not in r.stderr:
        fail("a fresh node of another cluster: rc %d, %s" % (r.returncode, r.stderr))
    print("ok: wrong cluster id, node id, lost Raft directory and a foreign cluster refused")

    # The killed node comes back and catches up; a topic deleted from another node goes away.
    dead.start()
    wait_for("node %d to catch up" % old,
             lambda: leaders(metadata(dead, "after-kill"), "after-kill") is not None)
    wait_for("node %d to lead its partitions again" % old,
             lambda: all(leaders(metadata(n, "orders"), "orders") == views[0]
                         for n in NODES.values()))
    # ... and keeps the records it stored: a node that has not caught up yet must not take
    # its own topics for deleted ones.
    c = subprocess.run(["kcat", "-b", dead.address, "-C", "-t", "orders", "-o", "beginning",
                        "-e", "-q", "-f", "%k:%s\n"], capture_output=True, text=True, timeout=60)
    back = [l for l in c.stdout.splitlines() if l.startswith("key")]
    if sorted(back) != sorted(lines.splitlines()):
        fail("after node %d's restart orders holds %d of the 120 records" % (old, len(back)))
    silt("topic", "-b", survivors[1].address, "delete", "after-kill")

    def deleted_everywhere():
        for n in NODES.values():
            md = metadata(n)
            if md is None or any(t["topic"] == "after-kill" for t in md["topics"]):
                return False
        return True
    wait_for("after-kill deleted on every node", deleted_everywhere)
    print("ok: node %d caught up; a topic deleted from node %d is gone everywhere"
          % (old, survivors[1].id))
finally:
    pass

cleanup()
finish("a three-node cluster on static peers")
