"""Consumer groups across a three-node cluster: __consumer_offsets is a cluster topic, every node
answers FindCoordinator with the leader of the group's partition, and the group's coordinator
lives there. confluent-kafka consumers of a group on a 6-partition topic commit; the
coordinator's node is killed with -9; the group resumes from the committed offsets.

Where the group's __consumer_offsets partition has no other in-sync replica (replication factor
1 in effect), its commits are on the dead node only: the group waits (COORDINATOR_NOT_AVAILABLE)
until that node is restarted, then resumes. Where the ISR has more than one member, the
partition fails over and the group resumes on the new coordinator without a restart."""
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster  # noqa: E402
from cluster_common import kcat_metadata as metadata  # noqa: E402
from cluster_common import kcat_partitions as partitions  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if subprocess.run(["which", "kcat"], capture_output=True).returncode != 0:
    skip("kcat is not installed (apt-get install kcat)")
try:
    from confluent_kafka import Consumer, KafkaException
except ImportError:
    skip("confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

GROUP = "interop-resume"
TOPIC = "events"
OFFSETS_PARTITIONS = 50
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNKNOWN_MEMBER_ID = 25


def java_hash(s):
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    b = s.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xffffffff
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group, n):
    """Kafka's Utils.abs(hashCode) % n: Math.abs, with MIN_VALUE taken as 0."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % n


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def call_v0(address, api_key, body):
    """One request at version 0 over a raw socket; returns the response after its header."""
    host, port = address.rsplit(":", 1)
    frame = struct.pack(">hhi", api_key, 0, 7) + string("silt-interop") + body
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise IOError("connection closed")
            data += chunk
    return data[8:]


def heartbeat(address, group):
    """Heartbeat v0 of an unknown member: the error code."""
    resp = call_v0(address, 12, string(group) + struct.pack(">i", 1) + string("nobody"))
    return struct.unpack(">h", resp[:2])[0]


def find_coordinator(address, group):
    """FindCoordinator v0 over a raw socket: (error_code, node_id, host, port)."""
    data = b"\0" * 8 + call_v0(address, 10, string(group))
    _, _, error, node = struct.unpack(">iihi", data[:14])
    (hlen,) = struct.unpack(">h", data[14:16])
    chost = data[16:16 + hlen].decode()
    (cport,) = struct.unpack(">i", data[16 + hlen:20 + hlen])
    return error, node, chost, cport


cluster = Cluster(SILT, "interop-cluster-groups", prefix="silt-cluster-groups-",
                  extra_args=["--set", "group.initial.rebalance.delay.ms=0"])
nodes = cluster.nodes
fail = cluster.fail


def produce(address, prefix, count):
    lines = "".join("k%d:%s-%d\n" % (i, prefix, i) for i in range(count))
    p = subprocess.run(["kcat", "-b", address, "-P", "-t", TOPIC, "-K:"], input=lines,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("kcat produce: " + p.stderr)


def consume_group(bootstrap, want, seconds=60, commit=True):
    """Two confluent-kafka members of GROUP on one bootstrap list; returns every value they
    received once `want` (a set) is covered or the time is up, after committing and closing."""
    got = []
    lock = threading.Lock()
    done = threading.Event()
    errors = []

    def member(n):
        c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "client.id": "member-%d" % n,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "partition.assignment.strategy": "range",
        })
        try:
            c.subscribe([TOPIC])
            deadline = time.time() + seconds
            while not done.is_set() and time.time() < deadline:
                msgs = c.consume(num_messages=200, timeout=0.3)
                for m in msgs:
                    if m.error():
                        continue
                    with lock:
                        got.append(m.value().decode())
                        if want <= set(got):
                            done.set()
                if msgs and commit:
                    try:
                        c.commit(asynchronous=False)
                    except KafkaException as e:
                        errors.append(str(e))
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got, errors


try:
    cluster.start_all()
    cluster.wait_registered()
    print("ok: three nodes registered")

    # The ready controller creates __consumer_offsets: 50 partitions over the three brokers,
    # min(3, voters) replicas each, compacted.
    def offsets_topic():
        parts = partitions(metadata(nodes[1], "__consumer_offsets"), "__consumer_offsets")
        if parts is None or len(parts) != OFFSETS_PARTITIONS:
            return None
        if any(p["leader"] < 1 for p in parts.values()):
            return None
        return parts
    parts = cluster.wait_for("__consumer_offsets to be created", offsets_topic)
    if {len(p["replicas"]) for p in parts.values()} != {3}:
        fail("__consumer_offsets' replicas: %s" % parts[0])
    led = {b: sum(1 for p in parts.values() if p["leader"] == b) for b in (1, 2, 3)}
    if min(led.values()) < 10:
        fail("__consumer_offsets' leaders are not spread: %s" % led)
    print("ok: __consumer_offsets has 50 partitions, 3 replicas each, leaders %s" % led)

    # Every node names the same coordinator: the leader of the group's partition (once each
    # has applied the topic's creation: until then, COORDINATOR_NOT_AVAILABLE).
    gp = offsets_partition(GROUP, OFFSETS_PARTITIONS)
    coordinator = parts[gp]["leader"]
    answers = {}

    def all_name_the_leader():
        for n in nodes.values():
            answers[n.id] = find_coordinator(n.address, GROUP)
            if answers[n.id][0] == COORDINATOR_NOT_AVAILABLE:
                return False
        return True
    cluster.wait_for("every node to know __consumer_offsets", all_name_the_leader)
    for i, (error, node, host, port) in answers.items():
        if error != 0 or node != coordinator or "%s:%d" % (host, port) != nodes[node].address:
            fail("node %d answered FindCoordinator(%s) with %s, not node %d (leader of "
                 "__consumer_offsets-%d)" % (i, GROUP, (error, node, host, port),
                                             coordinator, gp))
    print("ok: every node names node %d, leader of __consumer_offsets-%d, as %s's coordinator"
          % (coordinator, gp, GROUP))
    # Only the coordinator serves the group; the others send its members to look it up again.
    for n in nodes.values():
        want = UNKNOWN_MEMBER_ID if n.id == coordinator else NOT_COORDINATOR
        cluster.wait_for("node %d to answer a heartbeat of %s with %d" % (n.id, GROUP, want),
                         lambda: heartbeat(n.address, GROUP) == want, 10)
    print("ok: a heartbeat for %s is NOT_COORDINATOR on the other nodes" % GROUP)

    cluster.silt_cmd("topic", "-b", nodes[1].address, "create", TOPIC, "--partitions", "6",
                     "--replication-factor", "3")
    first = {"a-%d" % i for i in range(300)}
    produce(nodes[1].address, "a", 300)
    bootstrap = ",".join(n.address for n in nodes.values())
    got, errors = consume_group(bootstrap, first)
    if set(got) != first:
        fail("the group consumed %d of the 300 first records" % len(set(got) & first))
    if errors:
        fail("commits failed: %s" % errors[:3])
    print("ok: two confluent-kafka members consumed and committed 300 records")

    # kill -9 of the coordinator's node.
    nodes[coordinator].kill9()
    survivors = [n for i, n in nodes.items() if i != coordinator]
    isr = parts[gp]["isrs"]
    if len(isr) > 1:
        # The partition's commits are on other in-sync replicas: a new leader takes over the
        # group and it resumes without the dead node.
        def moved():
            p = partitions(metadata(survivors[0], "__consumer_offsets"), "__consumer_offsets")
            return p is not None and p[gp]["leader"] not in (coordinator, -1) and p[gp]["leader"]
        new_coordinator = cluster.wait_for("__consumer_offsets-%d to move" % gp, moved, 30)
        # Each node applies the change to its own view of the metadata a moment apart.
        for n in survivors:
            cluster.wait_for("node %d to name node %d as %s's coordinator"
                             % (n.id, new_coordinator, GROUP),
                             lambda n=n: find_coordinator(n.address, GROUP)[:2] ==
                             (0, new_coordinator), 10)
        second = {"b-%d" % i for i in range(300)}
        produce(survivors[0].address, "b", 300)
        got, _ = consume_group(",".join(n.address for n in survivors), second)
        if set(got) & first:
            fail("after failover the group re-read %d committed records" % len(set(got) & first))
        if not second <= set(got):
            fail("after failover the group got %d of the 300 new records"
                 % len(set(got) & second))
        print("ok: node %d killed; node %d took the group over and it resumed from its commits"
              % (coordinator, new_coordinator))
        nodes[coordinator].start()
    else:
        # The ISR is the dead leader alone: once it is fenced the partition has no leader and
        # no node offers a coordinator for the group.
        def unavailable():
            return all(find_coordinator(n.address, GROUP)[0] == COORDINATOR_NOT_AVAILABLE
                       for n in survivors)
        cluster.wait_for("COORDINATOR_NOT_AVAILABLE for %s" % GROUP, unavailable, 30)
        print("ok: node %d killed; with the ISR of __consumer_offsets-%d its leader alone, the "
              "survivors answer COORDINATOR_NOT_AVAILABLE" % (coordinator, gp))
        dead = nodes[coordinator]
        dead.start()

        def back():
            p = partitions(metadata(survivors[0], "__consumer_offsets"), "__consumer_offsets")
            t = partitions(metadata(survivors[0], TOPIC), TOPIC)
            return (p is not None and p[gp]["leader"] == coordinator and t is not None and
                    all(v["leader"] > 0 for v in t.values()))
        cluster.wait_for("node %d to lead __consumer_offsets-%d again" % (coordinator, gp),
                         back, 30)
        cluster.wait_for("FindCoordinator to name node %d again" % coordinator,
                         lambda: all(find_coordinator(n.address, GROUP)[:2] == (0, coordinator)
                                     for n in nodes.values()), 20)
        second = {"b-%d" % i for i in range(300)}
        produce(nodes[1].address, "b", 300)
        got, _ = consume_group(bootstrap, second)
        if set(got) & first:
            fail("after the restart the group re-read %d committed records"
                 % len(set(got) & first))
        if not second <= set(got):
            fail("after the restart the group got %d of the 300 new records"
                 % len(set(got) & second))
        print("ok: node %d restarted; it loaded the group's commits and the group resumed from "
              "them (no committed record read again)" % coordinator)
finally:
    pass

cluster.cleanup()
finish("consumer groups across a three-node cluster")
