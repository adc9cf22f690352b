"""kafka-python's group consumer against `silt serve`: KafkaConsumer(group_id=...) consumes a
topic to the end and commits; the admin client lists and describes the group; a later consumer
of the same group starts after the committed offsets."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, skip  # noqa: E402

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
except ImportError:
    skip("python3-kafka is not installed (apt-get install python3-kafka)")

TOPIC = "events"
GROUP = "kp-group"
N = 600


def consume(address, want, timeout=30):
    c = KafkaConsumer(TOPIC, bootstrap_servers=address, group_id=GROUP, client_id="kp-consumer",
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=6000, heartbeat_interval_ms=500,
                      consumer_timeout_ms=1000 if want == 0 else 30000)
    got = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        batch = c.poll(timeout_ms=500)
        for records in batch.values():
            got.extend(r.value for r in records)
        if batch:
            c.commit()
        if want and len(got) >= want:
            break
        if not want and c.assignment() and time.time() > deadline - timeout + 5:
            break
    return c, got


def main():
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=0"]) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.address)
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])
        p = KafkaProducer(bootstrap_servers=broker.address)
        values = [b"kp-%04d" % i for i in range(N)]
        for v in values:
            p.send(TOPIC, v)
        p.flush(15)

        c, got = consume(broker.address, N)
        assert sorted(got) == sorted(values), "consumed %d of %d records" % (len(got), N)

        # While the member is in the group, the admin client sees it.
        groups = admin.list_consumer_groups()
        assert (GROUP, "consumer") in groups, "list_consumer_groups: %s" % (groups,)
        desc = admin.describe_consumer_groups([GROUP])[0]
        assert desc.state == "Stable", "state %s" % desc.state
        assert desc.protocol_type == "consumer"
        assert len(desc.members) == 1, desc.members
        member = desc.members[0]
        assert member.client_id == "kp-consumer", member.client_id
        assert member.client_host.startswith("/127.0.0.1"), member.client_host
        topic, partitions = member.member_assignment.assignment[0]
        assert topic == TOPIC and sorted(partitions) == [0, 1, 2], member.member_assignment
        offsets = admin.list_consumer_group_offsets(GROUP)
        assert sum(o.offset for o in offsets.values()) == N, offsets
        c.close()

        # Nothing left for the group; new records only.
        extra = [b"kp-extra-%d" % i for i in range(30)]
        for v in extra:
            p.send(TOPIC, v)
        p.flush(15)
        c2, got2 = consume(broker.address, len(extra))
        time.sleep(1)
        for records in c2.poll(timeout_ms=1000).values():
            got2.extend(r.value for r in records)
        c2.close()
        assert sorted(got2) == sorted(extra), "second consumer got %d records: %s" % (len(got2), got2[:5])
        committed = {tp.partition: m.offset for tp, m in admin.list_consumer_group_offsets(GROUP).items()}
        assert sum(committed.values()) == N + len(extra), committed
        admin.close()
        p.close()
    print("PASS")


if __name__ == "__main__":
    main()
