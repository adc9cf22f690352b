"""A cluster node that has just started, and whose image may still lack what the metadata log
holds, neither denies nor creates a topic its image lacks: Metadata answers LEADER_NOT_AVAILABLE
for it (clients retry that and keep what they know of the topic), not UNKNOWN_TOPIC_OR_PARTITION
(librdkafka drops a topic it is told does not exist: its producer then restores its sequence
state out of step, bumps its epoch and writes the batches it had in flight a second time).

Three nodes; a topic with records; all three stopped; node 1 alone started again. Without a
quorum it cannot register, so it stays behind the log for as long as the test wants: Metadata
from it for a topic that does not exist is LEADER_NOT_AVAILABLE, for the real topic not
UNKNOWN_TOPIC_OR_PARTITION. Once the other two are back and every
node registered, the missing topic is UNKNOWN_TOPIC_OR_PARTITION again and the real one has its
partitions and records."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
try:
    from confluent_kafka.admin import AdminClient
except ImportError:
    skip("confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
TOPIC = "kept"
MISSING = "never-made"

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def topic_error(address, topic):
    """The error code Metadata from `address` gives `topic` (0: none), auto-creation not asked."""
    admin = AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 3000})
    md = admin.list_topics(topic=topic, timeout=10)
    t = md.topics.get(topic)
    if t is None:
        return None, 0
    return (t.error.code() if t.error is not None else 0), len(t.partitions)


cluster = Cluster(SILT, cluster_id="catchup-test", prefix="silt-catchup-",
                  extra_args=["--set", "auto.create.topics.enable=false"])
try:
    cluster.start_all()
    cluster.wait_registered()
    n1 = cluster.nodes[1]
    cluster.silt_cmd("topic", "create", TOPIC, "-b", n1.address, "--partitions", "3",
                     "--replication-factor", "3")
    out = subprocess.run([SILT, "produce", "-b", n1.address, "-t", TOPIC], input="a\nb\nc\n",
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "three records produced (%s)" % out.stderr.strip())
    for n in cluster.nodes.values():
        n.stop()

    # Node 1 alone: no quorum, no registration, an image that cannot be trusted to be whole.
    n1.start()
    time.sleep(1.0)
    with open(n1.log_path) as f:
        check("registered as broker 1" not in f.read().split("listening on")[-1],
              "node 1 alone has not registered")
    err, _ = topic_error(n1.address, MISSING)
    check(err == LEADER_NOT_AVAILABLE,
          "a topic the catching-up node does not know is LEADER_NOT_AVAILABLE (got %s)" % err)
    err, _ = topic_error(n1.address, TOPIC)
    check(err != UNKNOWN_TOPIC_OR_PARTITION,
          "the real topic is not denied by the catching-up node (got %s)" % err)

    cluster.nodes[2].start()
    cluster.nodes[3].start()
    cluster.wait_registered()
    deadline = time.time() + 20
    while time.time() < deadline:
        err, parts = topic_error(n1.address, TOPIC)
        if err == 0 and parts == 3:
            break
        time.sleep(0.2)
    check(err == 0 and parts == 3, "after the quorum is back the topic has its 3 partitions")
    err, _ = topic_error(cluster.nodes[2].address, MISSING)
    check(err == UNKNOWN_TOPIC_OR_PARTITION,
          "once caught up, a missing topic is UNKNOWN_TOPIC_OR_PARTITION again (got %s)" % err)
    out = subprocess.run([SILT, "consume", "-b", n1.address, "-t", TOPIC, "-o", "beginning"], capture_output=True, text=True, timeout=60)
    check(sorted(out.stdout.split()) == ["a", "b", "c"],
          "the three records are all there (%r)" % out.stdout)
finally:
    cluster.cleanup()
if failures:
    print("FAIL: %d check(s) failed: %s" % (len(failures), "; ".join(failures)))
    sys.exit(1)
finish("a catching-up node says LEADER_NOT_AVAILABLE for topics its image lacks")
