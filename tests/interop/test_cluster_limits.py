"""Per-request limits on a three-node cluster of `silt serve` processes: raw CreateTopics
frames to a node that is not the controller, and confluent-kafka's AdminClient.

A CreateTopics of 2,000,000,000 partitions sent to a node that is not the controller is answered
POLICY_VIOLATION within a second, before any placement: the controller's memory does not move
(it used to climb by gigabytes until the process was killed). Two topics whose partitions add up
past max.partitions.per.request are refused together, and one just under it is created; a
CreatePartitions past it is refused the same way.

Manual replica assignments (CreateTopics' assignments, librdkafka's test 0081): one naming live
brokers creates the topic with exactly those replicas, the first of each partition its leader;
one naming an unknown broker, a broker twice, or partitions of different replica counts is
refused INVALID_REPLICA_ASSIGNMENT and creates nothing. CreatePartitions places given replicas
as given, and refuses a replica count other than the topic's."""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, recv_exact, skip  # noqa: E402
from cluster_common import Cluster  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
try:
    from confluent_kafka import KafkaException  # noqa: F401
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
except ImportError:
    skip("confluent-kafka is not installed (apt-get install python3-confluent-kafka)")
POLICY_VIOLATION = 44


def raw_create_topics(address, name, partitions, replication_factor):
    """CreateTopics v0 on one connection to `address` (clients send it to the controller, and
    librdkafka refuses over 100,000 partitions itself): [(topic, error_code)]."""
    host, port = address.rsplit(":", 1)
    n = name.encode()
    body = (struct.pack(">i", 1) + struct.pack(">h", len(n)) + n +
            struct.pack(">ih", partitions, replication_factor) +
            struct.pack(">ii", 0, 0) + struct.pack(">i", 15000))
    cid = b"limits-test"
    head = struct.pack(">hhih", 19, 0, 7, len(cid)) + cid
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        r = recv_exact(s, size)
    assert struct.unpack(">i", r[:4])[0] == 7
    count = struct.unpack(">i", r[4:8])[0]
    out, pos = [], 8
    for _ in range(count):
        ln = struct.unpack(">h", r[pos:pos + 2])[0]
        topic = r[pos + 2:pos + 2 + ln].decode()
        pos += 2 + ln
        out.append((topic, struct.unpack(">h", r[pos:pos + 2])[0]))
        pos += 2
    return out

CAP = 600
cluster = Cluster(SILT, "interop-limits-1", prefix="silt-limits-",
                  extra_args=["--set", "max.partitions.per.request=%d" % CAP])


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def create(admin, topics, timeout=10):
    """{name: error name or None} for NewTopics `topics`."""
    futures = admin.create_topics(topics, request_timeout=timeout, operation_timeout=timeout)
    out = {}
    for name, f in futures.items():
        try:
            f.result(timeout=timeout + 5)
            out[name] = None
        except KafkaException as e:
            out[name] = (e.args[0].name(), e.args[0].str())
    return out


def grow_refused(admin, new_partitions, error, what):
    """CreatePartitions `new_partitions` must fail with `error`; returns the broker's message."""
    futures = admin.create_partitions([new_partitions], request_timeout=10)
    try:
        futures[new_partitions.topic].result(timeout=15)
    except KafkaException as e:
        if e.args[0].name() != error:
            cluster.fail("%s: %s, not %s" % (what, e.args[0], error))
        return e.args[0].str()
    cluster.fail("%s succeeded" % what)


try:
    cluster.start_all()
    cluster.wait_registered()
    first = AdminClient({"bootstrap.servers": cluster.nodes[1].address})
    controller = cluster.wait_for(
        "a controller", lambda: max(first.list_topics(timeout=5).controller_id, 0) or None)
    other = next(n for i, n in cluster.nodes.items() if i != controller)
    admin = AdminClient({"bootstrap.servers": other.address})
    ctl_pid = cluster.nodes[controller].proc.pid

    before = rss_kib(ctl_pid)
    t0 = time.time()
    errors = raw_create_topics(other.address, "bomb", 2000000000, 3)
    took = time.time() - t0
    time.sleep(1)  # what a controller still placing replicas would show by now
    after = rss_kib(ctl_pid)
    print("bomb: %s in %.3f s; controller RSS %d -> %d KiB" % (errors, took, before, after))
    if errors != [("bomb", POLICY_VIOLATION)]:
        cluster.fail("2,000,000,000 partitions: %s, not POLICY_VIOLATION" % (errors,))
    if took > 1.0:
        cluster.fail("the refusal took %.2f s" % took)
    if after - before > 50 * 1024:
        cluster.fail("the controller's RSS grew by %d KiB" % (after - before))
    md = admin.list_topics(timeout=5)
    if "bomb" in md.topics:
        cluster.fail("the refused topic exists")
    print("ok: a 2,000,000,000-partition CreateTopics is refused at once, RSS flat")

    got = create(admin, [NewTopic("half-a", CAP // 2, 1), NewTopic("half-b", CAP // 2 + 1, 1)])
    if any(v is None or v[0] != "POLICY_VIOLATION" for v in got.values()):
        cluster.fail("two topics past the cap together: %s" % got)
    if "max.partitions.per.request" not in got["half-a"][1]:
        cluster.fail("the refusal does not name the config: %s" % (got["half-a"],))
    got = create(admin, [NewTopic("under-a", CAP // 2, 1), NewTopic("under-b", CAP // 2, 1)])
    if any(v is not None for v in got.values()):
        cluster.fail("two topics at the cap together: %s" % got)
    print("ok: the cap counts every topic of a request")

    # Manual replica assignments, as Kafka checks them.
    brokers = sorted(cluster.nodes)
    a, b, c = brokers[:3]
    wanted = [[a, b], [b, c], [c, a]]
    got = create(admin, [NewTopic("assigned", len(wanted), replica_assignment=wanted)])
    if got["assigned"] is not None:
        cluster.fail("a valid assignment: %s" % (got["assigned"],))

    def placed():
        t = admin.list_topics(topic="assigned", timeout=5).topics.get("assigned")
        if t is None or t.error is not None or len(t.partitions) != 3:
            return None
        reps = [list(t.partitions[p].replicas) for p in range(3)]
        leaders = [t.partitions[p].leader for p in range(3)]
        return (reps, leaders) if all(x >= 0 for x in leaders) else None
    reps, leaders = cluster.wait_for("the assigned topic's leaders", placed)
    if reps != wanted or leaders != [r[0] for r in wanted]:
        cluster.fail("assigned %s, got replicas %s leaders %s" % (wanted, reps, leaders))
    bad = {
        "unknown-broker": [[a, 99]],
        "twice": [[a, a]],
        "uneven": [[a, b], [c]],
    }
    got = create(admin, [NewTopic(n, len(r), replica_assignment=r) for n, r in bad.items()])
    for name, err in got.items():
        if err is None or err[0] != "INVALID_REPLICA_ASSIGNMENT":
            cluster.fail("assignment %s (%s): %s, not INVALID_REPLICA_ASSIGNMENT" %
                         (bad[name], name, err))
    print("refusals: %s" % {n: e[1] for n, e in got.items()})
    md = admin.list_topics(timeout=5)
    if any(n in md.topics for n in bad):
        cluster.fail("a refused assignment created its topic: %s" % sorted(md.topics))
    print("ok: a manual assignment is placed as given; unknown, repeated or uneven replicas "
          "are refused")

    # CreatePartitions with replicas given: placed as given; a count other than the topic's
    # (two replicas) refused.
    futures = admin.create_partitions([NewPartitions("assigned", 4, replica_assignment=[[c, b]])],
                                      request_timeout=10)
    futures["assigned"].result(timeout=15)

    def fourth():
        t = admin.list_topics(topic="assigned", timeout=5).topics.get("assigned")
        if t is None or 3 not in t.partitions or t.partitions[3].leader < 0:
            return None
        return list(t.partitions[3].replicas), t.partitions[3].leader
    reps, leader = cluster.wait_for("the added partition's leader", fourth)
    if reps != [c, b] or leader != c:
        cluster.fail("added with [%d, %d]: replicas %s leader %s" % (c, b, reps, leader))
    why = grow_refused(admin, NewPartitions("assigned", 5, replica_assignment=[[a]]),
                       "INVALID_REPLICA_ASSIGNMENT",
                       "CreatePartitions with one replica for a two-replica topic")
    print("refusal: %s" % why)
    print("ok: CreatePartitions places given replicas and refuses a different replica count")

    grow_refused(admin, NewPartitions("under-a", CAP // 2 + CAP + 1), "POLICY_VIOLATION",
                 "CreatePartitions past the cap")
    futures = admin.create_partitions([NewPartitions("under-a", CAP // 2 + 10)],
                                      request_timeout=10)
    futures["under-a"].result(timeout=15)
    print("ok: CreatePartitions past the cap is refused, under it served")
finally:
    cluster.cleanup()
finish("per-request partition caps on three nodes")
