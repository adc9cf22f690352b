"""A group member killed with kill -9: after its session timeout (6 s) the coordinator removes
it, the group rebalances and the survivor takes over its partitions and consumes what was
produced to them after the kill."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from broker_common import Broker, skip  # noqa: E402

try:
    import confluent_kafka  # noqa: F401
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

TOPIC = "jobs"
GROUP = "workers"
SESSION_MS = 6000


class MemberProcess:
    def __init__(self, address):
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "group_member.py"), address, GROUP, TOPIC,
             "--session-ms", str(SESSION_MS)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.assigned = set()
        self.records = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode().rstrip("\n")
            if line.startswith("assigned"):
                rest = line[len("assigned"):].strip()
                self.assigned = {int(p) for p in rest.split(",")} if rest else set()
            elif line.startswith("record "):
                _, p, o, v = line.split(" ", 3)
                self.records.put((int(p), int(o), v, time.time()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def main():
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=0"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.address})
        admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])[TOPIC].result(15)
        survivor = MemberProcess(broker.address)
        victim = MemberProcess(broker.address)
        try:
            wait_for(lambda: survivor.assigned and victim.assigned and
                     len(survivor.assigned | victim.assigned) == 4, 30, "both members assigned")
            moved = set(victim.assigned)
            print("survivor has %s, victim has %s" % (sorted(survivor.assigned), sorted(moved)))

            killed_at = time.time()
            victim.kill()
            p = Producer({"bootstrap.servers": broker.address, "linger.ms": 1})
            for i in range(40):
                p.produce(TOPIC, value=b"after-kill-%d" % i, partition=i % 4)
            assert p.flush(10) == 0

            seen = {}
            deadline = killed_at + SESSION_MS / 1000.0 + 20
            while time.time() < deadline and len(seen) < 40:
                try:
                    part, off, value, at = survivor.records.get(timeout=0.5)
                except queue.Empty:
                    continue
                seen[value] = (part, at)
            assert len(seen) == 40, "survivor consumed %d of 40 records" % len(seen)
            assert survivor.assigned == {0, 1, 2, 3}, survivor.assigned
            first_moved = min(at for (part, at) in seen.values() if part in moved)
            took = first_moved - killed_at
            print("victim's partitions %s consumed by the survivor %.1f s after kill -9"
                  % (sorted(moved), took))
            # Removed after the session timeout, not before; then one quick rebalance.
            assert took >= SESSION_MS / 1000.0 - 1.0, "moved before the session timeout: %.1f s" % took
            assert took <= SESSION_MS / 1000.0 + 8, "took %.1f s" % took
            assert "session timeout expired" in broker.log_text()
        finally:
            survivor.kill()
            victim.kill()
    print("PASS")


if __name__ == "__main__":
    main()
