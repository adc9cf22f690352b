#!/usr/bin/python3
"""Cluster benchmark: three `silt serve` nodes on 127.0.0.1 with static peers.

Measures, each over --runs runs (median and max):
  1. failover: kill -9 of the controller -> a CreateTopics sent to a survivor succeeds;
  2. broker death: kill -9 of a non-controller -> Metadata from every survivor stops naming it
     as leader of its partitions (RF=1 today: they become leaderless, LEADER_NOT_AVAILABLE);
  3. topic creations per second through the quorum, sequential and 8 concurrent requests.
Every wait is bounded (30 s); processes and the temp dir are removed on exit and on Ctrl-C.

Usage: bench/cluster_bench.py [--silt build/silt] [--runs 5] [--creates 200]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

from confluent_kafka.admin import AdminClient, NewTopic

WAIT = 30.0
ap = argparse.ArgumentParser()
ap.add_argument("--silt", default=os.environ.get("SILT", "build/silt"))
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--creates", type=int, default=200)
args = ap.parse_args()
SILT = os.path.abspath(args.silt)
# The nodes' start-up is shared with the cluster tests (tests/interop/cluster_common.py). Client
# ports are fixed up front so the admin clients know every address before the nodes listen.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "interop"))
from cluster_common import Cluster  # noqa: E402

CLUSTER = Cluster(SILT, "bench-cluster", prefix="silt-cluster-bench-", fixed_ports=True)
NODES = CLUSTER.nodes
cleanup = CLUSTER.cleanup


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def fail(msg):
    CLUSTER.fail(msg, tail=15)


def admin(node):
    return AdminClient({"bootstrap.servers": node.address, "socket.timeout.ms": 30000,
                        "log_level": 0})


def metadata(node, topic=None):
    try:
        return admin(node).list_topics(topic=topic, timeout=2)
    except Exception:  # node down or not yet listening
        return None


def wait_for(what, pred):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    fail("timed out after %.0f s waiting for %s" % (WAIT, what))


def all_registered():
    for n in NODES.values():
        md = metadata(n)
        if md is None or len(md.brokers) != 3 or md.controller_id not in NODES:
            return False
    return True


def controller():
    md = wait_for("a controller", lambda: (lambda m: m if m and m.controller_id in NODES
                                            else None)(metadata(NODES[1]) or metadata(NODES[2])
                                                       or metadata(NODES[3])))
    return md.controller_id


def create(a, name, partitions=1, timeout=WAIT):
    """True once `name` is created (or already exists); raises on any other error."""
    f = a.create_topics([NewTopic(name, partitions, 1)], request_timeout=timeout)[name]
    try:
        f.result(timeout=timeout)
    except Exception as e:  # KafkaException wrapping KafkaError
        err = e.args[0] if e.args else None
        if getattr(err, "name", lambda: "")() == "TOPIC_ALREADY_EXISTS":
            return True
        raise
    return True


def summary(label, values, unit="s"):
    print("%-58s median %7.3f %s  max %7.3f %s  (n=%d: %s)" % (
        label, statistics.median(values), unit, max(values), unit, len(values),
        " ".join("%.3f" % v for v in values)))


def restart_and_settle(node):
    node.start(wait=False)
    wait_for("node %d back and all three brokers registered" % node.id, all_registered)


seq = [0]


def next_topic(prefix):
    seq[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), seq[0])


try:
    if not os.access(SILT, os.X_OK):
        fail("no silt binary at %s (build it: cmake --build build --target silt)" % SILT)
    CLUSTER.start_all(wait=False)
    wait_for("three registered brokers and a controller", all_registered)

    # 1. Controller failover.
    failover = []
    for r in range(args.runs):
        c = controller()
        survivor = NODES[next(i for i in NODES if i != c)]
        name = next_topic("failover")
        NODES[c].kill9()
        t0 = time.monotonic()
        deadline = t0 + WAIT
        # `silt topic -b` sends CreateTopics to the survivor, which forwards it to whichever
        # node is controller; librdkafka's AdminClient instead waits for its cached controller
        # (the dead node) until its next metadata refresh, which would measure librdkafka.
        while True:
            try:
                out = subprocess.run([SILT, "topic", "-b", survivor.address, "create", name],
                                     capture_output=True, text=True,
                                     timeout=max(0.5, deadline - time.monotonic()))
                if out.returncode == 0 or "exists" in out.stdout + out.stderr:
                    break
                last = (out.stdout + out.stderr).strip()
            except subprocess.TimeoutExpired:
                last = "timed out"
            if time.monotonic() > deadline:
                fail("no CreateTopics succeeded within %.0f s of killing controller %d: %s"
                     % (WAIT, c, last))
            time.sleep(0.01)
        failover.append(time.monotonic() - t0)
        restart_and_settle(NODES[c])

    # 2. Broker death seen in Metadata.
    death = []
    for r in range(args.runs):
        c = controller()
        victim = NODES[next(i for i in NODES if i != c)]
        topic = next_topic("death")
        create(admin(NODES[c]), topic, partitions=6)
        survivors = [n for n in NODES.values() if n is not victim]

        def led_by_victim(md):
            t = md.topics.get(topic)
            return [p for p in t.partitions.values() if p.leader == victim.id] if t else None
        md0 = wait_for("Metadata of " + topic, lambda: metadata(survivors[0], topic))
        if not led_by_victim(md0):
            fail("broker %d leads no partition of %s" % (victim.id, topic))
        victim.kill9()
        t0 = time.monotonic()

        def gone():
            for n in survivors:
                md = metadata(n, topic)
                if md is None or led_by_victim(md) != [] or victim.id in md.brokers:
                    return False
            return True
        wait_for("Metadata to stop naming broker %d as leader" % victim.id, gone)
        death.append(time.monotonic() - t0)
        restart_and_settle(victim)

    # 3. Topic creations per second.
    a = admin(NODES[controller()])
    t0 = time.monotonic()
    for _ in range(args.creates):
        create(a, next_topic("rate"))
    seq_rate = args.creates / (time.monotonic() - t0)

    names = [next_topic("rate8") for _ in range(args.creates)]
    errors = []

    def worker(k):
        wa = admin(NODES[1 + k % 3])
        try:
            for name in names[k::8]:
                create(wa, name)
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 4)
    if errors or any(t.is_alive() for t in threads):
        fail("concurrent creates: %s" % (errors[:3] or "timed out"))
    par_rate = args.creates / (time.monotonic() - t0)

    print("silt cluster benchmark: 3 nodes on 127.0.0.1, silt's defaults, %d runs" % args.runs)
    summary("controller kill -9 -> CreateTopics on a survivor succeeds", failover)
    summary("broker kill -9 -> survivors' Metadata drop it as leader", death)
    print("%-58s %7.1f /s (%d topics)" % ("topic creations, sequential (one admin client)",
                                         seq_rate, args.creates))
    print("%-58s %7.1f /s (%d topics, spread over the 3 nodes)" % (
        "topic creations, 8 concurrent requests", par_rate, args.creates))
finally:
    cleanup()
