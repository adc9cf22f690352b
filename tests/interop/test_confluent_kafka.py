"""confluent-kafka (librdkafka) against `silt serve`: an idempotent producer and an assigned
consumer, checking every record comes back once, in order, with its key and headers."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, skip  # noqa: E402

try:
    import confluent_kafka
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

N = 2000


def main():
    with Broker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.address})
        futures = admin.create_topics([NewTopic("ck", num_partitions=3, replication_factor=1)])
        futures["ck"].result(timeout=15)
        del admin

        delivered = {}

        def on_delivery(err, msg):
            assert err is None, "delivery failed: %s" % err
            delivered[msg.value()] = (msg.partition(), msg.offset())

        p = Producer({
            "bootstrap.servers": broker.address,
            "enable.idempotence": True,
            "acks": "all",
            "compression.type": "lz4",
            "linger.ms": 5,
        })
        for i in range(N):
            p.produce("ck", key=b"k%d" % (i % 7), value=b"v%05d" % i, headers=[("n", b"%d" % i)],
                      on_delivery=on_delivery)
            if i % 500 == 0:
                p.poll(0)
        assert p.flush(30) == 0, "messages left undelivered"
        assert len(delivered) == N, len(delivered)
        del p

        c = Consumer({
            "bootstrap.servers": broker.address,
            "group.id": "unused-assign-only",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        })
        c.assign([TopicPartition("ck", part, confluent_kafka.OFFSET_BEGINNING) for part in range(3)])
        got = {}
        eofs = set()
        while len(eofs) < 3:
            m = c.poll(10)
            assert m is not None, "consumer timed out with %d records" % len(got)
            if m.error():
                if m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    eofs.add(m.partition())
                    continue
                raise AssertionError(m.error())
            assert m.value() not in got, "duplicate %r" % m.value()
            got[m.value()] = (m.partition(), m.offset())
            i = int(m.value()[1:])
            assert m.key() == b"k%d" % (i % 7)
            assert m.headers() == [("n", b"%d" % i)], m.headers()
        c.close()
        assert got == delivered, "consumed records differ from delivered ones"
        print("ok: %d records through an idempotent producer and an assigned consumer" % N)
    print("PASS: confluent-kafka interop")


if __name__ == "__main__":
    main()
