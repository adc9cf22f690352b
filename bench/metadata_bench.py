#!/usr/bin/python3
"""Metadata propagation benchmark: how soon a change the cluster answered is known everywhere.

Three `silt serve` nodes on 127.0.0.1 (--log-level debug). --topics times, bootstrapped from a
node that is not the controller, a confluent-kafka AdminClient creates a topic of --partitions partitions
(replication factor 3); then every node is asked for the topic's Metadata (one AdminClient per
node, kept open) until it names a leader for each partition. Reported:
  - CreateTopics: the time to the answer, p50/p99/max;
  - lag after the answer: the time from the answer until the slowest node knew the topic
    (p50/p99/max), and how many answers some node did not know yet at its first probe
    (silt answers only once every unfenced broker applied the change: 0 is the goal);
  - commit -> applied on every broker: the proposing node's own measure, from the debug logs
    of all nodes ("applied by every unfenced broker N ms after its commit here"; the proposer
    is the controller, to which the AdminClient sends CreateTopics), p50/p99/max, where the
    proposing node logs it.
Every wait is bounded; processes and temp dirs are removed on exit and on Ctrl-C.

Usage: bench/metadata_bench.py [--silt build/silt] [--topics 50] [--partitions 6]
"""
import argparse
import os
import re
import signal
import statistics
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic

ap = argparse.ArgumentParser()
ap.add_argument("--silt", default=os.environ.get("SILT", "build/silt"))
ap.add_argument("--topics", type=int, default=50)
ap.add_argument("--partitions", type=int, default=6)
args = ap.parse_args()
SILT = os.path.abspath(args.silt)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "interop"))
from cluster_common import Cluster, kcat_metadata  # noqa: E402

CLUSTER = Cluster(SILT, "bench-metadata", prefix="silt-metadata-bench-",
                  extra_args=["--log-level", "debug"])


def on_signal(signum, _frame):
    CLUSTER.cleanup()
    sys.exit(128 + signum)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(xs):
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (pct(xs, 0.5) * 1e3, pct(xs, 0.99) * 1e3,
                                                       max(xs) * 1e3)


def knows(client, topic, partitions):
    md = client.list_topics(topic=topic, timeout=5)
    t = md.topics.get(topic)
    if t is None or t.error is not None or len(t.partitions) != partitions:
        return False
    return all(p.leader >= 0 for p in t.partitions.values())


def main():
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    CLUSTER.start_all()
    CLUSTER.wait_registered()
    md = kcat_metadata(CLUSTER.nodes[1])
    controller = md.get("controllerid", -1)
    via = next((n for i, n in CLUSTER.nodes.items() if i != controller), CLUSTER.nodes[2])
    admin = AdminClient({"bootstrap.servers": via.address})
    probes = {i: AdminClient({"bootstrap.servers": n.address}) for i, n in CLUSTER.nodes.items()}
    for c in probes.values():
        c.list_topics(timeout=10)
    answer, lag, unknown_first = [], [], 0
    for k in range(args.topics):
        name = "bench-md-%d" % k
        t0 = time.monotonic()
        fut = admin.create_topics([NewTopic(name, args.partitions, 3)],
                                  operation_timeout=30, request_timeout=30)[name]
        fut.result(timeout=30)
        t1 = time.monotonic()
        answer.append(t1 - t0)
        slowest, first_miss = 0.0, False
        for i, c in probes.items():
            first = True
            while not knows(c, name, args.partitions):
                if first:
                    first_miss = True
                first = False
                if time.monotonic() - t1 > 10:
                    CLUSTER.fail("node %d did not learn %s within 10 s" % (i, name))
                time.sleep(0.002)
            slowest = max(slowest, time.monotonic() - t1)
        unknown_first += first_miss
        lag.append(slowest)
    time.sleep(0.2)
    # Every node's log: librdkafka's AdminClient sends CreateTopics to the controller it
    # learned from Metadata, which is then the proposer, whichever node it bootstrapped from.
    applied = []
    for n in CLUSTER.nodes.values():
        with open(n.log_path, "rb") as f:
            applied += [int(m) / 1e3 for m in
                        re.findall(rb"applied by every unfenced broker (\d+) ms", f.read())]
    print("silt %s, 3 nodes, %d topics of %d partitions (RF 3) created by an AdminClient "
          "bootstrapped from node %d (it sends CreateTopics to the controller, node %d)"
          % (SILT, args.topics, args.partitions, via.id, controller))
    print("  CreateTopics answered: %s" % summary(answer))
    print("  answer -> known on the slowest node: %s; %d of %d answers found a node that "
          "did not know the topic yet" % (summary(lag), unknown_first, args.topics))
    if applied:
        print("  commit -> applied by every broker (proposer's log): %s over %d changes"
              % (summary(applied), len(applied)))
    else:
        print("  commit -> applied by every broker: not reported by this binary")
    CLUSTER.cleanup()


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        CLUSTER.cleanup()
        raise
