"""Committed offsets survive a broker restart (clean, then kill -9): they are kept in the
__consumer_offsets topic and loaded when `silt serve` starts, so a group resumes where it was."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, skip  # noqa: E402

try:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

TOPIC = "ledger"
GROUP = "auditors"


def produce(address, prefix, n):
    p = Producer({"bootstrap.servers": address, "linger.ms": 2})
    for i in range(n):
        p.produce(TOPIC, value=b"%s-%04d" % (prefix, i), partition=i % 2)
    assert p.flush(15) == 0


def consume_all(address, want, timeout=30):
    """One member consumes until it has `want` records (committing each poll), then leaves."""
    c = Consumer({"bootstrap.servers": address, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    c.subscribe([TOPIC])
    got = []
    deadline = time.time() + timeout
    while time.time() < deadline and len(got) < want:
        msgs = c.consume(num_messages=100, timeout=0.3)
        for m in msgs:
            assert not m.error(), m.error()
            got.append(m.value())
        if msgs:
            c.commit(asynchronous=False)
    # Anything more than asked for would be re-delivery.
    end = time.time() + 1.0
    while time.time() < end:
        for m in c.consume(num_messages=100, timeout=0.2):
            if not m.error():
                got.append(m.value())
    c.close()
    return got


def committed(address):
    c = Consumer({"bootstrap.servers": address, "group.id": GROUP})
    try:
        tps = c.committed([TopicPartition(TOPIC, p) for p in range(2)], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def main():
    broker = Broker(extra=["--set", "group.initial.rebalance.delay.ms=0"])
    with broker:
        admin = AdminClient({"bootstrap.servers": broker.address})
        admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])[TOPIC].result(15)
        del admin
        produce(broker.address, b"a", 100)
        got = consume_all(broker.address, 100)
        assert len(got) == 100, len(got)
        assert committed(broker.address) == {0: 50, 1: 50}

        # Clean restart.
        broker.stop()
        broker.start()
        assert committed(broker.address) == {0: 50, 1: 50}, "after restart: %s" % committed(broker.address)
        produce(broker.address, b"b", 20)
        got = consume_all(broker.address, 20)
        assert sorted(got) == sorted(b"b-%04d" % i for i in range(20)), got[:5]

        # kill -9: the records were appended before the commits were acknowledged.
        broker.stop(sig=signal.SIGKILL)
        broker.start()
        assert committed(broker.address) == {0: 60, 1: 60}, "after kill -9: %s" % committed(broker.address)
        assert "loaded 1 group(s)" in broker.log_text()
        produce(broker.address, b"c", 10)
        got = consume_all(broker.address, 10)
        assert sorted(got) == sorted(b"c-%04d" % i for i in range(10)), got[:5]
    print("PASS")


if __name__ == "__main__":
    main()
