"""Consumer groups with confluent-kafka (librdkafka) against `silt serve`: two members share a
4-partition topic, every record is consumed and committed exactly once, both members get
partitions; then two new members of the same group resume from the committed offsets."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, skip  # noqa: E402

try:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

TOPIC = "orders"
GROUP = "billing"
N = 2000
M = 400


class Member(threading.Thread):
    """One group member: polls, records what it got and commits each record synchronously."""

    def __init__(self, address, name, stop):
        super().__init__(daemon=True)
        self.name = name
        self.stop = stop
        self.got = []
        self.assigned = set()
        self.ever_assigned = set()
        self.error = None
        self.consumer = Consumer({
            "bootstrap.servers": address,
            "group.id": GROUP,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "partition.assignment.strategy": "range",
        })

    def on_assign(self, consumer, partitions):
        self.assigned = {p.partition for p in partitions}
        self.ever_assigned |= self.assigned

    def on_revoke(self, consumer, partitions):
        self.assigned = set()

    def run(self):
        try:
            self.consumer.subscribe([TOPIC], on_assign=self.on_assign, on_revoke=self.on_revoke)
            while not self.stop.is_set():
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    raise KafkaException(msg.error())
                self.got.append((msg.partition(), msg.offset(), msg.value()))
                self.consumer.commit(message=msg, asynchronous=False)
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            self.consumer.close()


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def produce(address, values):
    p = Producer({"bootstrap.servers": address, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(TOPIC, value=v, partition=i % 4)
    assert p.flush(15) == 0, "records left undelivered"


def run_pair(address, expected, label):
    stop = threading.Event()
    a, b = Member(address, label + "-a", stop), Member(address, label + "-b", stop)
    a.start()
    b.start()
    # Both members hold partitions before any record exists, so both must consume.
    wait_for(lambda: a.assigned and b.assigned and len(a.assigned | b.assigned) == 4, 30,
             "both members to be assigned partitions")
    assert not (a.assigned & b.assigned), "a partition assigned twice: %s %s" % (a.assigned, b.assigned)
    produce(address, expected)
    wait_for(lambda: len(a.got) + len(b.got) >= len(expected) or a.error or b.error, 40,
             "every record to be consumed (%d of %d)" % (len(a.got) + len(b.got), len(expected)))
    time.sleep(0.5)  # anything extra (a duplicate) would show up now
    stop.set()
    a.join(15)
    b.join(15)
    for m in (a, b):
        assert m.error is None, "%s failed: %r" % (m.name, m.error)
    values = [v for (_, _, v) in a.got + b.got]
    assert len(values) == len(expected), "consumed %d records, expected %d" % (len(values), len(expected))
    assert sorted(values) == sorted(expected), "consumed records differ from those produced"
    assert a.got and b.got, "one member consumed nothing: a=%d b=%d" % (len(a.got), len(b.got))
    return a, b


def committed(address):
    c = Consumer({"bootstrap.servers": address, "group.id": GROUP})
    try:
        return {tp.partition: tp.offset
                for tp in c.committed([TopicPartition(TOPIC, p) for p in range(4)], timeout=10)}
    finally:
        c.close()


def main():
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=300"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.address})
        admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])[TOPIC].result(15)

        first = [b"first-%05d" % i for i in range(N)]
        a, b = run_pair(broker.address, first, "gen1")
        print("first pair: a consumed %d from %s, b consumed %d from %s"
              % (len(a.got), sorted(a.ever_assigned), len(b.got), sorted(b.ever_assigned)))
        offsets = committed(broker.address)
        assert offsets == {p: N // 4 for p in range(4)}, "committed offsets: %s" % offsets

        # Two new members of the same group: only records produced since are delivered.
        second = [b"second-%05d" % i for i in range(M)]
        a2, b2 = run_pair(broker.address, second, "gen2")
        offsets = committed(broker.address)
        assert offsets == {p: (N + M) // 4 for p in range(4)}, "committed offsets: %s" % offsets
        print("second pair: a consumed %d, b consumed %d, none of the first %d again"
              % (len(a2.got), len(b2.got), N))
    print("PASS")


if __name__ == "__main__":
    main()
