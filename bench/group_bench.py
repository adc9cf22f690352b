#!/usr/bin/python3
"""Consumer-group benchmark against `silt serve` (not a test).

Measures, over a 4-partition topic filled with --records records of --size bytes:
  1. group consume throughput with one member, then with two (confluent-kafka members, each its
     own process, auto commit), from the moment every member has its assignment to the last
     record, and how long joining took (process start, join + sync, including
     group.initial.rebalance.delay.ms, 3000 by default so both members share one generation);
  2. failover: two members with session.timeout.ms=--session-ms, one killed with kill -9 while a
     producer writes to every partition; the time until the survivor consumes from the dead
     member's partitions.

Usage: bench/group_bench.py [--silt build/silt] [--records 200000] [--size 100]
                            [--session-ms 6000] [--delay-ms 3000]
"""
import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.join(HERE, "..", "tests", "interop")
sys.path.insert(0, INTEROP)
from broker_common import Broker  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

MEMBER = os.path.join(INTEROP, "group_member.py")


class Member:
    def __init__(self, address, group, topic, extra):
        self.start = time.time()
        self.proc = subprocess.Popen(["/usr/bin/python3", MEMBER, address, group, topic] + extra,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.count = 0
        self.assigned = set()
        self.first_assigned = None
        self.records = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode().rstrip("\n")
            if line.startswith("assigned"):
                rest = line[len("assigned"):].strip()
                self.assigned = {int(p) for p in rest.split(",")} if rest else set()
                if self.assigned and self.first_assigned is None:
                    self.first_assigned = time.time()
            elif line.startswith("count "):
                self.count = int(line.split()[1])
            elif line.startswith("record "):
                _, p, _, _ = line.split(" ", 3)
                self.records.put((int(p), time.time()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def fill(address, topic, n, size):
    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(15)
    p = Producer({"bootstrap.servers": address, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1000000})
    value = b"x" * size
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, partition=i % 4)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def consume_run(address, topic, group, members, n):
    report = 10000
    ms = [Member(address, group, topic, ["--quiet", "--report", str(report), "--commit", "auto"])
          for _ in range(members)]
    start = min(m.start for m in ms)
    deadline = time.time() + 300
    while time.time() < deadline and sum(m.count for m in ms) < n:
        time.sleep(0.01)
    end = time.time()
    total = sum(m.count for m in ms)
    assigned = max(m.first_assigned or end for m in ms)
    for m in ms:
        m.kill()
    return total, end - assigned, assigned - start, [m.count for m in ms]


def failover(address, topic, session_ms):
    group = "bench-failover"
    survivor = Member(address, group, topic, ["--session-ms", str(session_ms)])
    victim = Member(address, group, topic, ["--session-ms", str(session_ms)])
    deadline = time.time() + 60
    while time.time() < deadline and not (survivor.assigned and victim.assigned and
                                          len(survivor.assigned | victim.assigned) == 4):
        time.sleep(0.05)
    moved = set(victim.assigned)
    # Drain what the survivor consumed so far (the backlog of its own partitions).
    time.sleep(3)
    while not survivor.records.empty():
        survivor.records.get()
    stop = threading.Event()

    def trickle():
        p = Producer({"bootstrap.servers": address, "linger.ms": 0})
        i = 0
        while not stop.is_set():
            p.produce(topic, value=b"tick", partition=i % 4)
            p.poll(0)
            i += 1
            time.sleep(0.01)
        p.flush(5)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    time.sleep(0.5)
    killed = time.time()
    victim.kill()
    took = None
    end = killed + session_ms / 1000.0 + 30
    while time.time() < end:
        try:
            part, at = survivor.records.get(timeout=0.5)
        except queue.Empty:
            continue
        if part in moved and at > killed:
            took = at - killed
            break
    stop.set()
    t.join(10)
    survivor.kill()
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--silt", default=os.path.join(HERE, "..", "build", "silt"))
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--session-ms", type=int, default=6000)
    # Long enough for every member to join the first generation (Kafka's default).
    ap.add_argument("--delay-ms", type=int, default=3000, help="group.initial.rebalance.delay.ms")
    a = ap.parse_args()
    os.environ["SILT"] = os.path.abspath(a.silt)
    n = a.records - a.records % 80000 if a.records >= 80000 else 80000
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=%d" % a.delay_ms]) as broker:
        t0 = time.time()
        fill(broker.address, "bench", n, a.size)
        print("filled %d records of %d bytes in %.1f s" % (n, a.size, time.time() - t0))
        for members in (1, 2):
            total, secs, join, counts = consume_run(broker.address, "bench", "bench-%d" % members,
                                                    members, n)
            print("%d member(s): %d records in %.2f s after the assignment = %.0f records/s, "
                  "%.1f MB/s (join + sync took %.2f s from process start; per member %s)"
                  % (members, total, secs, total / secs, total * a.size / secs / 1e6, join, counts))
        took = failover(broker.address, "bench", a.session_ms)
        if took is None:
            print("failover: the dead member's partitions were not consumed again in time")
        else:
            print("failover: kill -9 to the dead member's partitions consumed again: %.2f s "
                  "(session.timeout.ms %d)" % (took, a.session_ms))


if __name__ == "__main__":
    main()
