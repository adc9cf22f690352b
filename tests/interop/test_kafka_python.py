"""kafka-python against `silt serve`: admin create/delete topics, gzip and snappy producers with
headers, and a consumer with manual assignment."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, finish, skip, skip_part  # noqa: E402

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError
except ImportError:
    skip("python3-kafka is not installed (apt-get install python3-kafka)")

try:
    import snappy  # noqa: F401
    HAVE_SNAPPY = True
except ImportError:
    HAVE_SNAPPY = False


def main():
    with Broker() as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.address, request_timeout_ms=10000)
        admin.create_topics([NewTopic("kp-gzip", 2, 1), NewTopic("kp-snappy", 1, 1),
                             NewTopic("kp-doomed", 1, 1)])
        try:
            admin.create_topics([NewTopic("kp-gzip", 2, 1)])
            raise AssertionError("creating an existing topic succeeded")
        except TopicAlreadyExistsError:
            pass
        topics = set(admin.list_topics())
        assert {"kp-gzip", "kp-snappy", "kp-doomed"} <= topics, topics
        admin.delete_topics(["kp-doomed"])
        assert "kp-doomed" not in set(admin.list_topics())
        print("ok: admin create/list/delete")

        codecs = ["gzip"] + (["snappy"] if HAVE_SNAPPY else [])
        if not HAVE_SNAPPY:
            skip_part("snappy: python3-snappy is missing, so kafka-python cannot compress "
                      "with snappy; the snappy topic is written uncompressed")
        for codec in ["gzip", "snappy"]:
            topic = "kp-" + codec
            producer = KafkaProducer(bootstrap_servers=broker.address, acks="all",
                                     compression_type=codec if codec in codecs else None,
                                     linger_ms=5)
            futures = [producer.send(topic, key=b"k%d" % i, value=b"%s-%d" % (codec.encode(), i),
                                     headers=[("codec", codec.encode()), ("i", b"%d" % i)],
                                     partition=i % (2 if codec == "gzip" else 1))
                       for i in range(300)]
            producer.flush()
            metas = [f.get(timeout=10) for f in futures]
            assert all(m.offset >= 0 for m in metas)
            producer.close()

            consumer = KafkaConsumer(bootstrap_servers=broker.address, enable_auto_commit=False,
                                     consumer_timeout_ms=5000)
            parts = [TopicPartition(topic, p) for p in range(2 if codec == "gzip" else 1)]
            consumer.assign(parts)
            consumer.seek_to_beginning(*parts)
            seen = {}
            for m in consumer:
                i = int(m.value.split(b"-")[1])
                assert m.key == b"k%d" % i
                assert dict(m.headers) == {"codec": codec.encode(), "i": b"%d" % i}, m.headers
                assert i not in seen
                seen[i] = m.offset
                if len(seen) == 300:
                    break
            consumer.close()
            assert sorted(seen) == list(range(300)), "got %d records" % len(seen)
            print("ok: kafka-python %s produce/consume with headers" % codec)
        admin.close()
    finish("kafka-python interop")


if __name__ == "__main__":
    main()
