"""Mirror topics and SiltAppendBatches against `silt serve`.

One node: a topic created with silt.mirror=true refuses confluent-kafka's produce with
POLICY_VIOLATION, takes batches read from another data dir's segment through SiltAppendBatches
(api key 10000) at their own offsets (the broker's segment file then equals the source's byte for
byte), and after promote (alter-config --delete-config silt.mirror) takes ordinary produce at its
log end and refuses SiltAppendBatches. Three nodes: a mirror topic with replication factor 3 is
appended to at its leader only (a follower answers NOT_LEADER_OR_FOLLOWER), and every replica's
segment ends up byte-identical; batches carrying producer ids that lie in blocks the nodes
already hold are appended to a mirror topic, and afterwards no node hands out any of those ids
(an idempotent producer given one would fail on that producer's sequence)."""
import glob
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import broker_common  # noqa: E402
from broker_common import Broker, finish, skip, skip_part  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
try:
    import confluent_kafka
    from confluent_kafka import Producer
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
POLICY_VIOLATION = 44
SILT_OFFSET_MISMATCH = 10000
WORK = tempfile.mkdtemp(prefix="silt-mirror-")


def fail(message):
    print("FAIL: " + message)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1)


def silt(*args, stdin=None):
    out = subprocess.run([SILT] + list(args), input=stdin, capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        fail("silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
    return out.stdout


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def silt_append(address, topic, partition, expected, batches, timeout_ms=10000):
    """One SiltAppendBatches v0 call: (error_code, message, log_end, high_watermark)."""
    body = (kstr(topic) + struct.pack(">iqi", partition, expected, timeout_ms) +
            struct.pack(">i", len(batches)) + batches)
    header = struct.pack(">hhi", 10000, 0, 7) + kstr("mirror-test")
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        frame = header + body
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        resp = recv_exact(s, size)
    correlation, error = struct.unpack(">ih", resp[:6])
    if correlation != 7:
        fail("SiltAppendBatches answered correlation id %d" % correlation)
    n = struct.unpack(">h", resp[6:8])[0]
    at = 8
    message = None
    if n >= 0:
        message = resp[at:at + n].decode()
        at += n
    log_end, hw, _ = struct.unpack(">qqq", resp[at:at + 24])
    return error, message, log_end, hw


def recv_exact(s, n):
    try:
        return broker_common.recv_exact(s, n)
    except EOFError as e:
        fail(str(e))


def segment(partition_dir):
    with open(os.path.join(partition_dir, "00000000000000000000.log"), "rb") as f:
        return f.read()


def epochs_and_rest(data):
    """The partitionLeaderEpoch of each batch of a segment, and the segment with those fields
    blanked (the one field outside the CRC a mirror restamps with its own leader's epoch)."""
    epochs, out, at = [], bytearray(data), 0
    while at < len(data):
        length = struct.unpack(">i", data[at + 8:at + 12])[0]
        epochs.append(struct.unpack(">i", data[at + 12:at + 16])[0])
        out[at + 12:at + 16] = b"\xff\xff\xff\xff"
        at += 12 + length
    return epochs, bytes(out)


def source_segment(name, lines):
    """A data dir whose topic `name` (one partition) holds `lines`, written by `silt produce`
    in two calls (two batches); returns its segment's bytes and each batch's bytes."""
    d = os.path.join(WORK, "source-" + name)
    silt("topic", "create", "-d", d, name, "--partitions", "1")
    half = len(lines) // 2
    silt("produce", "-d", d, "-t", name, stdin="".join(l + "\n" for l in lines[:half]))
    silt("produce", "-d", d, "-t", name, stdin="".join(l + "\n" for l in lines[half:]))
    data = segment(os.path.join(d, name + "-0"))
    batches, at = [], 0
    while at < len(data):
        length = struct.unpack(">i", data[at + 8:at + 12])[0]
        batches.append(data[at:at + 12 + length])
        at += 12 + length
    if len(batches) != 2:
        fail("expected two source batches, got %d" % len(batches))
    return data, batches


def produce(address, topic, value):
    """One confluent-kafka produce; the delivery report's (error or None, offset)."""
    got = {}

    def report(err, msg):
        got["err"] = err
        got["offset"] = msg.offset()
    p = Producer({"bootstrap.servers": address, "message.send.max.retries": 0,
                  "delivery.timeout.ms": 10000})
    p.produce(topic, value=value.encode(), callback=report)
    p.flush(15)
    if "err" not in got:
        fail("no delivery report for %s" % topic)
    return got["err"], got["offset"]


def single_node():
    with Broker() as b:
        silt("topic", "create", "-b", b.address, "m", "--partitions", "1",
             "--config", "silt.mirror=true")
        described = silt("topic", "describe", "-b", b.address, "m")
        if "silt.mirror" not in described:
            fail("topic describe does not show that m is a mirror:\n" + described)

        err, _ = produce(b.address, "m", "refused")
        if err is None or err.code() != confluent_kafka.KafkaError.POLICY_VIOLATION:
            fail("produce into a mirror topic: expected POLICY_VIOLATION, got %r" % (err,))
        print("confluent-kafka reports: %s" % err.str())

        data, batches = source_segment("m", ["r%d" % i for i in range(10)])
        end_first = 5  # `silt produce` wrote r0-r4, then r5-r9
        error, message, log_end, hw = silt_append(b.address, "m", 0, 0, batches[0])
        if error != NONE or log_end != end_first or hw != end_first:
            fail("first append: %r" % ((error, message, log_end, hw),))
        error, message, log_end, _ = silt_append(b.address, "m", 0, 0, batches[1])
        if error != SILT_OFFSET_MISMATCH or log_end != end_first:
            fail("stale expected offset: %r" % ((error, message, log_end),))
        error, message, log_end, _ = silt_append(b.address, "m", 0, end_first, batches[1])
        if error != NONE or log_end != 10:
            fail("second append: %r" % ((error, message, log_end),))
        epochs, rest = epochs_and_rest(segment(os.path.join(b.data_dir, "m-0")))
        if rest != epochs_and_rest(data)[1] or epochs != [0, 0]:
            fail("the mirror's segment differs from the source's (epochs %r)" % epochs)

        silt("topic", "alter-config", "-b", b.address, "m", "--delete-config", "silt.mirror")
        err, offset = produce(b.address, "m", "after promote")
        if err is not None or offset != 10:
            fail("produce after promote: %r at %r (expected offset 10)" % (err, offset))
        error, message, _, _ = silt_append(b.address, "m", 0, 11, batches[1])
        if error != POLICY_VIOLATION:
            fail("SiltAppendBatches after promote: %r" % ((error, message),))
        out = silt("consume", "-b", b.address, "-t", "m", "-o", "beginning", "-c", "11")
        values = out.split()
        if values != ["r%d" % i for i in range(10)] + ["after", "promote"]:
            fail("consumed after promote: %r" % values)


def three_nodes():
    if shutil.which("kcat") is None:
        skip_part("kcat is not installed (apt-get install kcat): the three-node case needs it")
        return
    from cluster_common import Cluster, kcat_metadata, kcat_partitions
    cluster = Cluster(SILT, cluster_id="interop-mirror-1", prefix="silt-mirror-cluster-")
    try:
        cluster.start_all()
        cluster.wait_registered()
        first = cluster.nodes[1]
        cluster.silt_cmd("topic", "create", "-b", first.address, "mc", "--partitions", "1",
                         "--replication-factor", "3", "--config", "silt.mirror=true")

        def isr_full():
            parts = kcat_partitions(kcat_metadata(first, "mc"), "mc")
            if not parts or parts[0]["leader"] < 0 or len(parts[0].get("isrs", [])) != 3:
                return None
            return parts[0]
        p0 = cluster.wait_for("mc-0 with a leader and 3 in-sync replicas", isr_full, 30)
        leader = cluster.nodes[p0["leader"]]
        follower = next(n for n in cluster.nodes.values() if n.id != leader.id)
        data, batches = source_segment("mc", ["c%d" % i for i in range(8)])

        # Right after the create the leader may not have opened its replica yet (it answers
        # NOT_LEADER_OR_FOLLOWER), or not yet have the topic in its own image, which can trail
        # the node the metadata came from (UNKNOWN_TOPIC_OR_PARTITION); a client retries both.
        def leader_append():
            got = silt_append(leader.address, "mc", 0, 0, batches[0])
            return None if got[0] in (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION) else got
        error, message, log_end, hw = cluster.wait_for("the leader to open mc-0", leader_append, 20)
        if error != NONE or log_end != 4 or hw != 4:
            cluster.fail("append at the leader: %r" % ((error, message, log_end, hw),))
        error, message, log_end, _ = silt_append(follower.address, "mc", 0, 4, batches[1])
        if error != NOT_LEADER_OR_FOLLOWER:
            cluster.fail("a follower answered SiltAppendBatches with %r" % ((error, message),))
        error, message, log_end, hw = silt_append(leader.address, "mc", 0, 4, batches[1])
        if error != NONE or hw != 8:
            cluster.fail("second append at the leader: %r" % ((error, message, log_end, hw),))

        def identical():
            # A follower that dropped out of the ISR for a moment (a loaded machine) may not
            # have opened its replica yet when the high watermark reaches 8: wait for it.
            try:
                segs = [segment(os.path.join(n.data, "mc-0")) for n in cluster.nodes.values()]
            except FileNotFoundError:
                return None
            return all(s == segs[0] for s in segs) and len(segs[0]) == len(data)
        cluster.wait_for("byte-identical replicas of mc-0", identical, 20)
        if epochs_and_rest(segment(os.path.join(leader.data, "mc-0")))[1] != epochs_and_rest(data)[1]:
            cluster.fail("the cluster's mirror differs from the source beyond leader epochs")
        # The records are the source's (the leader epoch field aside).
        out = cluster.silt_cmd("consume", "-b", leader.address, "-t", "mc", "-o", "beginning",
                               "-c", "8").stdout.split()
        if out != ["c%d" % i for i in range(8)]:
            cluster.fail("consumed from the cluster's mirror: %r" % out)
        producer_ids(cluster)
    finally:
        cluster.cleanup()


def dumped_producer_ids(partition_dir):
    out = subprocess.run([SILT, "dump-segment", "--format", "json",
                          os.path.join(partition_dir, "00000000000000000000.log")],
                         capture_output=True, text=True, timeout=60)
    return [int(x) for x in re.findall(r'"producerId":(-?[0-9]+)', out.stdout)]


def silt_produce(address, topic, line):
    """`silt produce` of one line (an idempotent producer); the finished process."""
    return subprocess.run([SILT, "produce", "-b", address, "-t", topic], input=line + "\n",
                          capture_output=True, text=True, timeout=60)


def producer_ids(cluster):
    from cluster_common import kcat_metadata, kcat_partitions
    first = cluster.nodes[1]
    # Every node hands out a producer id first, so that each holds a block of them.
    cluster.silt_cmd("topic", "create", "-b", first.address, "plain", "--partitions", "1",
                     "--replication-factor", "3")
    for n in cluster.nodes.values():
        cluster.wait_for("an idempotent produce through node %d" % n.id,
                         lambda: silt_produce(n.address, "plain", "before").returncode == 0 or None,
                         30)
    # Batches of three producers of a fresh single-node source: producer ids 0, 1 and 2, which
    # lie in the first block this cluster gave out.
    with Broker() as src:
        silt("topic", "create", "-b", src.address, "pids", "--partitions", "1")
        for i in range(3):
            silt("produce", "-b", src.address, "-t", "pids",
                 stdin="".join("p%d-%d\n" % (i, j) for j in range(5)))
        data = segment(os.path.join(src.data_dir, "pids-0"))
        copied = sorted(set(dumped_producer_ids(os.path.join(src.data_dir, "pids-0"))))
    if copied != [0, 1, 2]:
        cluster.fail("the source's producer ids: %r" % copied)
    cluster.silt_cmd("topic", "create", "-b", first.address, "mp", "--partitions", "1",
                     "--replication-factor", "3", "--config", "silt.mirror=true")

    def leader_of_mp():
        parts = kcat_partitions(kcat_metadata(first, "mp"), "mp")
        return parts[0]["leader"] if parts and parts[0]["leader"] >= 0 else None
    leader = cluster.nodes[cluster.wait_for("a leader of mp-0", leader_of_mp, 30)]

    def append():
        got = silt_append(leader.address, "mp", 0, 0, data)
        return None if got[0] in (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION) else got
    error, message, log_end, _ = cluster.wait_for("the leader to open mp-0", append, 20)
    if error != NONE or log_end != 15:
        cluster.fail("append of the producers' batches: %r" % ((error, message, log_end),))
    cluster.silt_cmd("topic", "alter-config", "-b", first.address, "mp", "--delete-config",
                     "silt.mirror")
    # Through every node: an idempotent producer is acknowledged, with an id none of the copied
    # batches carries (and above them all).
    for n in cluster.nodes.values():
        def produced():
            out = silt_produce(n.address, "mp", "after %d" % n.id)
            if out.returncode == 0:
                return True
            if "OUT_OF_ORDER" in out.stderr or "sequence" in out.stderr.lower():
                cluster.fail("node %d gave a producer a copied id: %s" % (n.id, out.stderr))
            return None
        cluster.wait_for("an idempotent produce into mp through node %d" % n.id, produced, 30)
    ids = dumped_producer_ids(os.path.join(leader.data, "mp-0"))
    new = sorted(set(ids) - set(copied))
    if not new or min(new) <= max(copied):
        cluster.fail("producer ids after the copy: %r (copied %r)" % (sorted(set(ids)), copied))
    print("producer ids handed out after the copy: %r" % new)


single_node()
three_nodes()
shutil.rmtree(WORK, ignore_errors=True)
finish("mirror topics: produce refused until promote, SiltAppendBatches byte-exact on 1 and 3 nodes")
