"""`silt dump-segment` on the metadata log of a real three-node run: topics created, changed and
deleted, enough of them (through confluent-kafka's admin client) for libraft to take a
snapshot, and a node killed until the controller fences it. Every node's Raft directory then
decodes, in text and JSON, into the same numbered entries and metadata records; a flipped byte
in a segment is reported as damage (exit 1)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from broker_common import finish, skip, skip_part  # noqa: E402
from cluster_common import Cluster, kcat_metadata  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

CLUSTER = Cluster(SILT, "dump-cluster-1", prefix="silt-metadata-dump-")
NODES = CLUSTER.nodes
fail = CLUSTER.fail


def silt(*args, check=True):
    out = subprocess.run([SILT] + list(args), capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        fail("silt %s: rc %d %s%s" % (" ".join(args), out.returncode, out.stdout, out.stderr))
    return out


def raft_dir(node):
    return os.path.join(node.data, "silt-metadata-raft")


try:
    CLUSTER.start_all()
    CLUSTER.wait_registered()
    b = NODES[1].address
    silt("topic", "-b", b, "create", "keep", "--partitions", "3")
    silt("topic", "-b", b, "create", "gone")
    described = CLUSTER.wait_for("node 1 to know gone", lambda: silt(
        "topic", "-b", b, "describe", "gone", "--format", "json", check=False).stdout)
    gone_id = json.loads(described)["topic_id"]
    silt("topic", "-b", b, "alter-config", "keep", "--config", "retention.ms=86400000")

    # More than libraft's snapshot threshold (1024 entries) through the quorum.
    snapshot_expected = False
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError:
        AdminClient = None
    if AdminClient is None:
        skip_part("confluent-kafka is not installed: no snapshot taken")
    else:
        admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
        for k in range(0, 1100, 100):
            futures = admin.create_topics([NewTopic("bulk-%d" % i, 1) for i in range(k, k + 100)],
                                          operation_timeout=30)
            for f in futures.values():
                f.result(60)
        snapshot_expected = True
    # After the bulk: a snapshot holds the image, not the records that led to it, so the
    # removal must come after the last snapshot to be seen as a record (each change also
    # appends a barrier entry, which moves the snapshot along).
    silt("topic", "-b", NODES[2].address, "delete", "gone")

    # Node 3 dies; the controller fences it after its session (a FenceBrokerRecord).
    controller = kcat_metadata(NODES[1])["controllerid"]
    victim = 3 if controller != 3 else 2
    NODES[victim].kill9()
    survivor = NODES[controller]
    CLUSTER.wait_for("node %d to be fenced" % victim, lambda: (lambda md: md is not None and
                     victim not in {x["id"] for x in md["brokers"]})(kcat_metadata(survivor)))
    time.sleep(1)
    for n in NODES.values():
        n.stop()

    dumps = {}
    for i, n in NODES.items():
        out = silt("dump-segment", "--format", "json", raft_dir(n))
        dumps[i] = [json.loads(l) for l in out.stdout.splitlines()]
    ref = dumps[controller]
    snaps = [d for d in ref if "snapshot" in d]
    entries = [d for d in ref if "index" in d]
    if snapshot_expected and not snaps:
        fail("no snapshot in node %d's metadata log: %s" % (controller,
                                                            os.listdir(raft_dir(survivor))))
    if snaps and snaps[0]["records"][0] != {"type": "ClusterIdRecord",
                                            "cluster_id": "dump-cluster-1"}:
        fail("the snapshot does not start with the cluster id: %s" % snaps[0]["records"][:2])
    if not entries:
        fail("no log entries decoded")
    # Indexes run on without gaps from one file to the next, terms never go back.
    for a, c in zip(entries, entries[1:]):
        if c["index"] != a["index"] + 1 or c["term"] < a["term"]:
            fail("entries out of order: %s then %s" % (a, c))
    records = [r for d in snaps + entries for r in d.get("records", [])]

    def has(pred, what):
        if not any(pred(r) for r in records):
            fail("the metadata log of node %d has no %s" % (controller, what))
    has(lambda r: r["type"] == "TopicRecord" and r["name"] == "keep", "TopicRecord keep")
    has(lambda r: r["type"] == "PartitionRecord" and r["partition_id"] == 2, "PartitionRecord 2")
    has(lambda r: r["type"] == "RemoveTopicRecord" and r["topic_id"] == gone_id,
        "RemoveTopicRecord of gone")
    has(lambda r: r["type"] == "ConfigRecord" and r["resource_name"] == "keep" and
        r["name"] == "retention.ms" and r["value"] == "86400000", "ConfigRecord retention.ms")
    has(lambda r: r["type"] == "FenceBrokerRecord" and r["broker_id"] == victim,
        "FenceBrokerRecord of node %d" % victim)
    has(lambda r: r["type"] == "RegisterBrokerRecord" and r["broker_id"] == 1,
        "RegisterBrokerRecord of node 1")
    if not any(d["type"] == "barrier" for d in entries):
        fail("no barrier entry (every new leader appends one)")
    # Every node holds the same entry at each index both have.
    by_index = {d["index"]: (d["term"], d.get("records")) for d in entries}
    for i, dump in dumps.items():
        for d in dump:
            if "index" in d and d["index"] in by_index and by_index[d["index"]] != (
                    d["term"], d.get("records")):
                fail("node %d's entry %d differs from node %d's" % (i, d["index"], controller))
    print("ok: %d entries%s decode on every node, the same at each index" % (
        len(entries), " and a snapshot of %d records" % len(snaps[0]["records"]) if snaps else ""))

    text = silt("dump-segment", raft_dir(survivor)).stdout
    if "TopicRecord name=keep topic_id=" not in text or " term " not in text:
        fail("text dump: %s" % text[:500])
    print("ok: the text dump names the records")

    # Damage in a closed segment: reported, exit 1, the batches before it still printed.
    segs = sorted(f for f in os.listdir(raft_dir(survivor)) if "-" in f and
                  not f.startswith(("snapshot", "open")))
    if not segs:
        fail("no closed segment in %s" % os.listdir(raft_dir(survivor)))
    work = tempfile.mkdtemp(prefix="silt-metadata-dump-damaged-")
    try:
        seg = os.path.join(work, segs[-1])
        shutil.copy(os.path.join(raft_dir(survivor), segs[-1]), seg)
        with open(seg, "r+b") as f:
            size = os.path.getsize(seg)
            f.seek(size // 2)
            byte = f.read(1)
            f.seek(size // 2)
            f.write(bytes([byte[0] ^ 0x10]))
        r = silt("dump-segment", seg, check=False)
        if r.returncode != 1 or "checksum mismatch" not in r.stderr:
            fail("a damaged segment: rc %d, stderr %s" % (r.returncode, r.stderr))
        if "index " not in r.stdout:
            fail("a damaged segment: nothing printed before the damage")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok: a flipped byte in a metadata segment is reported (exit 1)")
except Exception:
    import traceback
    fail(traceback.format_exc())

CLUSTER.cleanup()
finish("dump-segment of a three-node run's metadata log")
