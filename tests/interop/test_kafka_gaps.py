"""Behaviours real clients notice, against `silt serve`:

- confluent-kafka's commit of an offset for a topic or partition that does not exist gets
  UNKNOWN_TOPIC_OR_PARTITION for that partition (Kafka 3.x), the others are committed;
- a confluent-kafka (librdkafka) consumer with partition.assignment.strategy=cooperative-sticky
  whose subscribed topic is deleted closes at once;
- compaction of gzip and zstd batches written by confluent-kafka keeps exactly the records
  Kafka's cleaner keeps (the latest per key), with their offsets, timestamps and the codec;
- OffsetDelete through librdkafka's rd_kafka_DeleteConsumerGroupOffsets (ctypes: confluent-kafka
  1.7 has no wrapper), GROUP_SUBSCRIBED_TO_TOPIC for a topic a live member consumes;
- DescribeLogDirs v0-1 through kafka-python's client (its protocol types, with the schema of
  Kafka's DescribeLogDirs written here: kafka-python 2.0.2 has no class for it);
- dynamic broker configs: confluent-kafka's and kafka-python's alter_configs on BROKER
  resources (this node and the cluster default), applied at once to a topic's defaults, shown
  by describe_configs with their source, kept across a restart;
- DescribeCluster v0-1 and DescribeProducers v0, flexible-only APIs, through kafka-python's
  client with compact types written here (request header v2's empty tag section sent as the
  body's first byte; the response header's read as the body's first byte).
"""
import ctypes
import ctypes.util
import io
import json
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, finish, skip, skip_part  # noqa: E402

UNKNOWN_TOPIC_OR_PARTITION = 3
GROUP_SUBSCRIBED_TO_TOPIC = 86

try:
    import confluent_kafka  # noqa: F401
except ImportError:
    skip("confluent-kafka is not installed (apt-get install python3-confluent-kafka)")
try:
    import kafka  # noqa: F401
    HAVE_KAFKA_PYTHON = True
except ImportError:
    HAVE_KAFKA_PYTHON = False

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def create(admin, topics):
    for f in admin.create_topics(topics).values():
        f.result()


def consume_all(address, topic, group, expect, timeout=20):
    c = Consumer({"bootstrap.servers": address, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    deadline = time.time() + timeout
    while len(out) < expect and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m)
    c.close()
    return out


# ---- OffsetCommit for a topic or partition that does not exist --------------------------

def commit_unknown_part(address, admin):
    create(admin, [NewTopic("gaps-commit", 2, 1)])
    c = Consumer({"bootstrap.servers": address, "group.id": "gaps-commit-g",
                  "enable.auto.commit": False})
    offsets = [TopicPartition("gaps-commit", 0, 7), TopicPartition("gaps-commit", 5, 8),
               TopicPartition("gaps-nope", 0, 9)]
    errors = {}
    try:
        result = c.commit(offsets=offsets, asynchronous=False)
        for tp in result:
            errors[(tp.topic, tp.partition)] = tp.error.code() if tp.error else 0
    except KafkaException as e:
        # librdkafka reports a partition's error as the commit's when every other succeeded.
        check(e.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION, "commit raised %s" % e)
        errors = None
    if errors is not None:
        check(errors.get(("gaps-commit", 0)) == 0, "existing partition: %s" % errors)
        check(errors.get(("gaps-commit", 5)) == UNKNOWN_TOPIC_OR_PARTITION,
              "partition past the count: %s" % errors)
        check(errors.get(("gaps-nope", 0)) == UNKNOWN_TOPIC_OR_PARTITION,
              "unknown topic: %s" % errors)
    committed = {(tp.topic, tp.partition): tp.offset
                 for tp in c.committed(offsets, timeout=10)}
    check(committed[("gaps-commit", 0)] == 7, "committed: %s" % committed)
    check(committed[("gaps-commit", 5)] < 0, "committed past the count: %s" % committed)
    check(committed[("gaps-nope", 0)] < 0, "committed for an unknown topic: %s" % committed)
    c.close()


# ---- cooperative-sticky consumer whose topic is deleted ---------------------------------
#
# What the close waits for: nothing from the broker. With debug=cgrp,protocol,broker the close
# ends the group (no request in flight: "0 outbufs, 0 waitresps") and then rd_kafka_destroy
# waits for its broker threads, whose handles keep references that the lost-partition path of
# librdkafka before 2.1.0 never drops (fixed upstream in 2.1.0: "a reference count issue
# blocking the consumer from closing ... when a partition is lost ... or if the corresponding
# topic is deleted"). So the bound is asserted where librdkafka has that fix; with an older one
# the close is run in a child process, given the same bound, and the broker is checked to have
# answered everything the consumer sent (its commit of the revoked partitions among them).

COOP_CHILD = r"""
import sys, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
address = sys.argv[1]
c = Consumer({"bootstrap.servers": address, "group.id": "gaps-coop-g",
              "partition.assignment.strategy": "cooperative-sticky",
              "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
              "debug": "broker"})
c.subscribe(["gaps-coop"])
got = 0
deadline = time.time() + 20
while got < 10 and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and not m.error():
        got += 1
print("read", got, flush=True)
admin = AdminClient({"bootstrap.servers": address})
for f in admin.delete_topics(["gaps-coop"]).values():
    f.result()
end = time.time() + 2.5
while time.time() < end:
    c.poll(0.2)
print("closing", flush=True)
start = time.time()
c.close()
print("closed %.2f" % (time.time() - start), flush=True)
"""


def cooperative_close_part(broker, admin):
    create(admin, [NewTopic("gaps-coop", 2, 1)])
    p = Producer({"bootstrap.servers": broker.address})
    for i in range(10):
        p.produce("gaps-coop", value=b"v%d" % i, partition=i % 2)
    p.flush(10)
    fixed = confluent_kafka.libversion()[1] >= 0x020100ff
    debug_path = os.path.join(broker.work, "coop-client.log")
    debug = open(debug_path, "w")
    child = subprocess.Popen([sys.executable, "-c", COOP_CHILD, broker.address],
                             stdout=subprocess.PIPE, stderr=debug, text=True)
    lines = []
    closing_at = None
    deadline = time.time() + 60
    while time.time() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if line.startswith("closing"):
            closing_at = time.time()
            break
    check(lines[:1] == ["read 10"], "cooperative consumer: %s" % lines)
    check(closing_at is not None, "the consumer never reached close: %s" % lines)
    try:
        out, _ = child.communicate(timeout=3.0)
        lines += out.split()
        took = time.time() - closing_at
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        took = None
    if fixed:
        check(took is not None, "close did not end within 3 s (librdkafka %s)"
              % confluent_kafka.libversion()[0])
        print("cooperative-sticky consumer closed in %.2f s after its topic was deleted" % took)
    debug.close()
    # Whatever the client version: when its broker threads stop, nothing it sent to this
    # broker is unanswered (no request waiting for a response, none queued).
    with open(debug_path) as f:
        terminating = [l for l in f if "Handle is terminating" in l and "waitresps" in l]
    check(terminating, "no broker-thread termination in the client's debug log")
    for l in terminating:
        check(" 0 outbufs, 0 waitresps" in l, "a request was still unanswered: %s" % l.strip())
    if not fixed and took is None:
        print("librdkafka %s: close blocked past 3 s in rd_kafka_destroy on its broker handles' "
              "own references (fixed in librdkafka 2.1.0), with no request unanswered"
              % confluent_kafka.libversion()[0])
    c = Consumer({"bootstrap.servers": broker.address, "group.id": "gaps-coop-after"})
    check(c.list_topics(timeout=10) is not None, "broker stopped answering")
    c.close()


# ---- compaction of compressed batches ---------------------------------------------------

def dump_batches(silt, partition_dir):
    batches = []
    for f in sorted(os.listdir(partition_dir)):
        if not f.endswith(".log"):
            continue
        out = subprocess.run([silt, "dump-segment", "--format", "json", "--records",
                              os.path.join(partition_dir, f)],
                             capture_output=True, text=True, check=True).stdout
        batches += [json.loads(line) for line in out.splitlines() if line.strip()]
    return batches


def record_count(batches):
    return sum(b["recordCount"] for b in batches)


def compaction_part(broker, admin, codec):
    topic = "gaps-compact-" + codec
    create(admin, [NewTopic(topic, 1, 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "compression.type": "producer"})])
    p = Producer({"bootstrap.servers": broker.address, "compression.type": codec,
                  "linger.ms": 100, "batch.num.messages": 10000})
    rounds, keys = 6, 12
    # Leader known first, so the records below go out in batches of many, not one by one
    # (librdkafka sends a single record uncompressed when compression would not shrink it).
    p.list_topics(topic, timeout=10)
    for r in range(rounds):
        for k in range(keys):
            p.produce(topic, key=b"k%d" % k, value=b"r%d-k%d" % (r, k), partition=0)
    p.flush(10)
    pdir = os.path.join(broker.data_dir, topic + "-0")
    before = dump_batches(broker.silt, pdir)
    check(record_count(before) == rounds * keys, "written: %d records" % record_count(before))
    check(all(b["compression"] == codec for b in before if b["recordCount"] > 1),
          "codec: %s" % [(b["baseOffset"], b["compression"]) for b in before])
    # Superseded keys share compressed batches with the latest values.
    check(any(b["compression"] == codec and b["recordCount"] > keys for b in before),
          "no %s batch holds superseded keys: %s"
          % (codec, [(b["baseOffset"], b["recordCount"]) for b in before]))
    stamps = {}
    for b in before:
        for rec in b.get("records", []):
            stamps[rec["offset"]] = rec["timestamp"]
    # One more record after segment.ms rolls the segment, so the data above is cleanable.
    time.sleep(0.3)
    p.produce(topic, key=b"roll", value=b"roll", partition=0)
    p.flush(10)

    kept = None
    deadline = time.time() + 30
    while time.time() < deadline:
        after = dump_batches(broker.silt, pdir)
        if record_count(after) == keys + 1:
            kept = after
            break
        time.sleep(0.3)
    check(kept is not None, "%s: the cleaner left %d records (Kafka keeps %d)"
          % (codec, record_count(dump_batches(broker.silt, pdir)), keys + 1))
    last_round = (rounds - 1) * keys
    records = []
    compressed_before = {b["baseOffset"] for b in before if b["compression"] == codec}
    for b in kept:
        # A rewritten batch keeps its first offset and its codec.
        if b["baseOffset"] in compressed_before:
            check(b["compression"] == codec, "%s: rewritten batch is %s" % (codec, b["compression"]))
        records += b.get("records", [])
    offsets = sorted(rec["offset"] for rec in records)
    check(offsets[:keys] == list(range(last_round, last_round + keys)),
          "%s: kept offsets %s" % (codec, offsets))
    for rec in records:
        if rec["offset"] in stamps:
            check(rec["timestamp"] == stamps[rec["offset"]],
                  "%s: offset %d timestamp changed" % (codec, rec["offset"]))
    msgs = consume_all(broker.address, topic, "gaps-compact-g-" + codec, keys + 1)
    latest = {m.key(): (m.value(), m.offset()) for m in msgs}
    check(len(msgs) == keys + 1, "%s: consumer read %d records" % (codec, len(msgs)))
    for k in range(keys):
        check(latest[b"k%d" % k] == (b"r%d-k%d" % (rounds - 1, k), last_round + k),
              "%s: key k%d read as %s" % (codec, k, latest.get(b"k%d" % k)))


# ---- OffsetDelete through librdkafka ----------------------------------------------------

class RdTopicPartition(ctypes.Structure):
    _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32),
                ("offset", ctypes.c_int64), ("metadata", ctypes.c_void_p),
                ("metadata_size", ctypes.c_size_t), ("opaque", ctypes.c_void_p),
                ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]


class RdTopicPartitionList(ctypes.Structure):
    _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int),
                ("elems", ctypes.POINTER(RdTopicPartition))]


def rd_delete_offsets(address, group, partitions):
    """rd_kafka_DeleteConsumerGroupOffsets: (group error, {(topic, partition): error})."""
    path = ctypes.util.find_library("rdkafka")
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    tpl = ctypes.POINTER(RdTopicPartitionList)
    for name, res, args in [
        ("rd_kafka_conf_new", vp, []),
        ("rd_kafka_conf_set", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_size_t]),
        ("rd_kafka_new", vp, [ctypes.c_int, vp, ctypes.c_char_p, ctypes.c_size_t]),
        ("rd_kafka_queue_new", vp, [vp]),
        ("rd_kafka_topic_partition_list_new", tpl, [ctypes.c_int]),
        ("rd_kafka_topic_partition_list_add", vp, [tpl, ctypes.c_char_p, ctypes.c_int32]),
        ("rd_kafka_topic_partition_list_destroy", None, [tpl]),
        ("rd_kafka_DeleteConsumerGroupOffsets_new", vp, [ctypes.c_char_p, tpl]),
        ("rd_kafka_DeleteConsumerGroupOffsets", None, [vp, vp, ctypes.c_size_t, vp, vp]),
        ("rd_kafka_DeleteConsumerGroupOffsets_destroy_array", None, [vp, ctypes.c_size_t]),
        ("rd_kafka_queue_poll", vp, [vp, ctypes.c_int]),
        ("rd_kafka_event_error", ctypes.c_int, [vp]),
        ("rd_kafka_event_error_string", ctypes.c_char_p, [vp]),
        ("rd_kafka_event_DeleteConsumerGroupOffsets_result", vp, [vp]),
        ("rd_kafka_DeleteConsumerGroupOffsets_result_groups", ctypes.POINTER(vp),
         [vp, ctypes.POINTER(ctypes.c_size_t)]),
        ("rd_kafka_group_result_error", vp, [vp]),
        ("rd_kafka_group_result_partitions", tpl, [vp]),
        ("rd_kafka_error_code", ctypes.c_int, [vp]),
        ("rd_kafka_event_destroy", None, [vp]),
        ("rd_kafka_queue_destroy", None, [vp]),
        ("rd_kafka_destroy", None, [vp]),
    ]:
        getattr(lib, name).restype = res
        getattr(lib, name).argtypes = args
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    check(lib.rd_kafka_conf_set(conf, b"bootstrap.servers", address.encode(), errstr, 512) == 0,
          errstr.value)
    rk = lib.rd_kafka_new(0, conf, errstr, 512)
    check(rk, errstr.value)
    queue = lib.rd_kafka_queue_new(rk)
    parts = lib.rd_kafka_topic_partition_list_new(len(partitions))
    for topic, partition in partitions:
        lib.rd_kafka_topic_partition_list_add(parts, topic.encode(), partition)
    array = (vp * 1)(lib.rd_kafka_DeleteConsumerGroupOffsets_new(group.encode(), parts))
    lib.rd_kafka_topic_partition_list_destroy(parts)
    lib.rd_kafka_DeleteConsumerGroupOffsets(rk, array, 1, None, queue)
    event = lib.rd_kafka_queue_poll(queue, 20000)
    try:
        check(event, "no DeleteConsumerGroupOffsets result within 20 s")
        err = lib.rd_kafka_event_error(event)
        if err != 0:
            return err, {}
        result = lib.rd_kafka_event_DeleteConsumerGroupOffsets_result(event)
        count = ctypes.c_size_t()
        groups = lib.rd_kafka_DeleteConsumerGroupOffsets_result_groups(result, ctypes.byref(count))
        check(count.value == 1, "%d group results" % count.value)
        gerr = lib.rd_kafka_group_result_error(groups[0])
        out = {}
        plist = lib.rd_kafka_group_result_partitions(groups[0])
        if plist:
            for i in range(plist.contents.cnt):
                e = plist.contents.elems[i]
                out[(e.topic.decode(), e.partition)] = e.err
        return (lib.rd_kafka_error_code(gerr) if gerr else 0), out
    finally:
        if event:
            lib.rd_kafka_event_destroy(event)
        lib.rd_kafka_DeleteConsumerGroupOffsets_destroy_array(array, 1)
        lib.rd_kafka_queue_destroy(queue)
        lib.rd_kafka_destroy(rk)


def offset_delete_part(address, admin):
    create(admin, [NewTopic("gaps-od-a", 2, 1), NewTopic("gaps-od-b", 1, 1)])
    group = "gaps-od-g"
    c = Consumer({"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("gaps-od-a", 0, 3), TopicPartition("gaps-od-a", 1, 4),
                      TopicPartition("gaps-od-b", 0, 5)], asynchronous=False)
    c.close()
    res = rd_delete_offsets(address, group, [("gaps-od-a", 0), ("gaps-od-b", 0)])
    if res is None:
        skip_part("OffsetDelete: librdkafka.so not found by ctypes")
        return
    gerr, parts = res
    check(gerr == 0, "delete offsets of an empty group: error %d" % gerr)
    check(parts == {("gaps-od-a", 0): 0, ("gaps-od-b", 0): 0}, "partitions: %s" % parts)

    def committed():
        k = Consumer({"bootstrap.servers": address, "group.id": group})
        got = {(tp.topic, tp.partition): tp.offset for tp in k.committed(
            [TopicPartition("gaps-od-a", 0), TopicPartition("gaps-od-a", 1),
             TopicPartition("gaps-od-b", 0)], timeout=10)}
        k.close()
        return got
    now = committed()
    check(now[("gaps-od-a", 0)] < 0 and now[("gaps-od-b", 0)] < 0, "after delete: %s" % now)
    check(now[("gaps-od-a", 1)] == 4, "untouched partition: %s" % now)

    # A live member subscribed to gaps-od-a: that topic's offsets stay.
    live = Consumer({"bootstrap.servers": address, "group.id": group,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    live.subscribe(["gaps-od-a"])
    deadline = time.time() + 20
    while not live.assignment() and time.time() < deadline:
        live.poll(0.2)
    check(live.assignment(), "the live member got no assignment")
    gerr, parts = rd_delete_offsets(address, group, [("gaps-od-a", 1)])
    check(gerr == 0, "group error %d" % gerr)
    check(parts == {("gaps-od-a", 1): GROUP_SUBSCRIBED_TO_TOPIC}, "subscribed: %s" % parts)
    live.close()
    check(committed()[("gaps-od-a", 1)] == 4, "a subscribed topic's offset was deleted")


# ---- DescribeLogDirs, DescribeCluster, DescribeProducers through kafka-python -----------

def kafka_python_part(broker, admin):
    from kafka import KafkaAdminClient
    from kafka.protocol.api import Request, Response
    from kafka.protocol.types import (AbstractType, Array, Boolean, Int8, Int16, Int32, Int64,
                                      Schema, String)

    class UVarint(AbstractType):
        @classmethod
        def encode(cls, n):
            out = bytearray()
            while n >= 0x80:
                out.append((n & 0x7F) | 0x80)
                n >>= 7
            out.append(n)
            return bytes(out)

        @classmethod
        def decode(cls, data):
            shift, n = 0, 0
            while True:
                b = data.read(1)[0]
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    return n
                shift += 7

    class CompactString(AbstractType):
        @classmethod
        def encode(cls, s):
            if s is None:
                return UVarint.encode(0)
            b = s.encode()
            return UVarint.encode(len(b) + 1) + b

        @classmethod
        def decode(cls, data):
            n = UVarint.decode(data)
            return None if n == 0 else data.read(n - 1).decode()

    class Tags(AbstractType):
        """An empty tagged-field section (and, decoding, one with no tags)."""
        @classmethod
        def encode(cls, _):
            return b"\x00"

        @classmethod
        def decode(cls, data):
            n = UVarint.decode(data)
            for _ in range(n):
                UVarint.decode(data)
                data.read(UVarint.decode(data))
            return None

    class CompactArray(Array):
        def encode(self, items):
            if items is None:
                return UVarint.encode(0)
            return UVarint.encode(len(items) + 1) + b"".join(
                self.array_of.encode(i) for i in items)

        def decode(self, data):
            n = UVarint.decode(data)
            return None if n == 0 else [self.array_of.decode(data) for _ in range(n - 1)]

    def send(req, node_id=0):
        future = admin_py._send_request_to_node(node_id, req)
        admin_py._wait_for_futures([future])
        return future.value

    admin_py = KafkaAdminClient(bootstrap_servers=broker.address, request_timeout_ms=10000)
    create(admin, [NewTopic("gaps-dirs", 2, 1)])
    p = Producer({"bootstrap.servers": broker.address, "enable.idempotence": True})
    for i in range(40):
        p.produce("gaps-dirs", value=b"x" * 100, partition=0)
    p.flush(10)

    # DescribeLogDirs v0/v1: Kafka's DescribeLogDirs schema in kafka-python's types.
    dirs_request_schema = Schema(("topics", Array(("topic", String("utf-8")),
                                                  ("partitions", Array(Int32)))))
    dirs_response_schema = Schema(
        ("throttle_time_ms", Int32),
        ("results", Array(("error_code", Int16), ("log_dir", String("utf-8")),
                          ("topics", Array(("name", String("utf-8")),
                                           ("partitions", Array(("partition_index", Int32),
                                                                ("partition_size", Int64),
                                                                ("offset_lag", Int64),
                                                                ("is_future_key", Boolean))))))))
    log_size = sum(os.path.getsize(os.path.join(broker.data_dir, "gaps-dirs-0", f))
                   for f in os.listdir(os.path.join(broker.data_dir, "gaps-dirs-0"))
                   if f.endswith(".log"))
    for version in (0, 1):
        resp_cls = type("DescribeLogDirsResponse_v%d" % version, (Response,),
                        {"API_KEY": 35, "API_VERSION": version, "SCHEMA": dirs_response_schema})
        req_cls = type("DescribeLogDirsRequest_v%d" % version, (Request,),
                       {"API_KEY": 35, "API_VERSION": version, "RESPONSE_TYPE": resp_cls,
                        "SCHEMA": dirs_request_schema})
        resp = send(req_cls(topics=[("gaps-dirs", [0, 1])]))
        check(len(resp.results) == 1, "DescribeLogDirs v%d: %s" % (version, resp))
        error_code, log_dir, topics = resp.results[0]
        check(error_code == 0, "log dir error %d" % error_code)
        check(log_dir == os.path.abspath(broker.data_dir), "log dir %r" % log_dir)
        check(len(topics) == 1 and topics[0][0] == "gaps-dirs", "topics %s" % topics)
        sizes = {pi: size for pi, size, _, _ in topics[0][1]}
        check(sizes == {0: log_size, 1: 0}, "v%d sizes %s, on disk %d" % (version, sizes, log_size))

    # DescribeCluster v0-1 (flexible from v0).
    broker_schema = (("broker_id", Int32), ("host", CompactString), ("port", Int32),
                     ("rack", CompactString), ("_tags", Tags))
    for version in (0, 1):
        req_fields = [("_header_tags", Tags), ("include_cluster_authorized_operations", Boolean)]
        resp_fields = [("_header_tags", Tags), ("throttle_time_ms", Int32), ("error_code", Int16),
                       ("error_message", CompactString)]
        if version >= 1:
            req_fields.append(("endpoint_type", Int8))
            resp_fields.append(("endpoint_type", Int8))
        req_fields.append(("_tags", Tags))
        resp_fields += [("cluster_id", CompactString), ("controller_id", Int32),
                        ("brokers", CompactArray(*broker_schema)),
                        ("cluster_authorized_operations", Int32), ("_tags", Tags)]
        resp_cls = type("DescribeClusterResponse_v%d" % version, (Response,),
                        {"API_KEY": 60, "API_VERSION": version, "SCHEMA": Schema(*resp_fields)})
        req_cls = type("DescribeClusterRequest_v%d" % version, (Request,),
                       {"API_KEY": 60, "API_VERSION": version, "RESPONSE_TYPE": resp_cls,
                        "SCHEMA": Schema(*req_fields)})
        args = dict(_header_tags=None, include_cluster_authorized_operations=False, _tags=None)
        if version >= 1:
            args["endpoint_type"] = 1
        resp = send(req_cls(**args))
        check(resp.error_code == 0, "DescribeCluster v%d error %d" % (version, resp.error_code))
        host, port = broker.address.rsplit(":", 1)
        check([(b[0], b[1], b[2]) for b in resp.brokers] == [(0, host, int(port))],
              "DescribeCluster brokers %s" % resp.brokers)
        check(resp.controller_id == 0 and resp.cluster_id, "DescribeCluster %s" % resp)

    # DescribeProducers v0: the idempotent producer above on partition 0.
    producer_fields = (("producer_id", Int64), ("producer_epoch", Int32), ("last_sequence", Int32),
                       ("last_timestamp", Int64), ("coordinator_epoch", Int32),
                       ("current_txn_start_offset", Int64), ("_tags", Tags))
    resp_cls = type("DescribeProducersResponse_v0", (Response,), {
        "API_KEY": 61, "API_VERSION": 0, "SCHEMA": Schema(
            ("_header_tags", Tags), ("throttle_time_ms", Int32),
            ("topics", CompactArray(
                ("name", CompactString),
                ("partitions", CompactArray(("partition_index", Int32), ("error_code", Int16),
                                            ("error_message", CompactString),
                                            ("active_producers", CompactArray(*producer_fields)),
                                            ("_tags", Tags))),
                ("_tags", Tags))),
            ("_tags", Tags))})
    req_cls = type("DescribeProducersRequest_v0", (Request,), {
        "API_KEY": 61, "API_VERSION": 0, "RESPONSE_TYPE": resp_cls, "SCHEMA": Schema(
            ("_header_tags", Tags),
            ("topics", CompactArray(("name", CompactString),
                                    ("partition_indexes", CompactArray(Int32)), ("_tags", Tags))),
            ("_tags", Tags))})
    resp = send(req_cls(_header_tags=None, topics=[("gaps-dirs", [0, 1, 9], None)], _tags=None))
    parts = {pt[0]: pt for pt in resp.topics[0][1]}
    check(parts[0][1] == 0 and len(parts[0][3]) == 1, "DescribeProducers p0 %s" % (parts[0],))
    producer = parts[0][3][0]
    check(producer[0] >= 0 and producer[2] == 39, "producer state %s" % (producer,))
    check(parts[1][1] == 0 and parts[1][3] == [], "DescribeProducers p1 %s" % (parts[1],))
    check(parts[9][1] == UNKNOWN_TOPIC_OR_PARTITION, "DescribeProducers p9 %s" % (parts[9],))
    admin_py.close()


# ---- dynamic broker configs --------------------------------------------------------------

def dynamic_config_part(broker):
    from confluent_kafka.admin import ConfigResource, ConfigSource
    admin = AdminClient({"bootstrap.servers": broker.address})
    create(admin, [NewTopic("gaps-dyn", 1, 1)])

    def src(entry):
        return int(getattr(entry.source, "value", entry.source))

    def describe(kind, name, a):
        out = {}
        for f in a.describe_configs([ConfigResource(kind, name)]).values():
            out.update(f.result())
        return out

    # confluent-kafka 1.7's alter_configs is the legacy AlterConfigs: the set is replaced.
    for f in admin.alter_configs([ConfigResource("broker", "0", set_config={
            "log.retention.ms": "3600000", "log.segment.bytes": "2097152"})]).values():
        f.result()
    d = describe("broker", "0", admin)
    check(d["log.retention.ms"].value == "3600000", "broker 0: %s" % d["log.retention.ms"])
    check(src(d["log.retention.ms"]) == ConfigSource.DYNAMIC_BROKER_CONFIG.value,
          "source %s" % d["log.retention.ms"].source)
    check(d["num.partitions"].is_read_only, "num.partitions is read-only")
    t = describe("topic", "gaps-dyn", admin)
    check(t["retention.ms"].value == "3600000", "topic default: %s" % t["retention.ms"])
    check(t["segment.bytes"].value == "2097152", "topic default: %s" % t["segment.bytes"])
    try:
        for f in admin.alter_configs([ConfigResource("broker", "0", set_config={
                "num.partitions": "3"})]).values():
            f.result()
        check(False, "a read-only broker config was changed")
    except KafkaException as e:
        check(e.args[0].code() == 42 and "Cannot update these configs dynamically"
              in e.args[0].str(), "read-only key: %s" % e)

    if HAVE_KAFKA_PYTHON:
        from kafka import KafkaAdminClient
        from kafka.admin import ConfigResource as KpResource, ConfigResourceType
        kp = KafkaAdminClient(bootstrap_servers=broker.address, request_timeout_ms=10000)
        resp = kp.alter_configs([KpResource(ConfigResourceType.BROKER, "",
                                            configs={"log.retention.bytes": "1048576"})])
        check(resp.resources[0][0] == 0, "kafka-python cluster default: %s" % (resp.resources,))
        kp.close()
        d = describe("broker", "0", admin)
        check(src(d["log.retention.bytes"]) == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
              "cluster default source %s" % d["log.retention.bytes"].source)
        check(describe("topic", "gaps-dyn", admin)["retention.bytes"].value == "1048576",
              "topic default after the cluster default")

    # Kept across a restart.
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    d = describe("broker", "0", admin)
    check(d["log.retention.ms"].value == "3600000" and
          src(d["log.retention.ms"]) == ConfigSource.DYNAMIC_BROKER_CONFIG.value,
          "after restart: %s" % d["log.retention.ms"])
    check(describe("topic", "gaps-dyn", admin)["retention.ms"].value == "3600000",
          "topic default after restart")


def main():
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=0",
                       "--set", "log.cleaner.backoff.ms=200"]) as b:
        admin = AdminClient({"bootstrap.servers": b.address})
        commit_unknown_part(b.address, admin)
        print("ok: OffsetCommit for unknown partitions")
        cooperative_close_part(b, admin)
        print("ok: cooperative-sticky close")
        for codec in ("gzip", "zstd"):
            compaction_part(b, admin, codec)
            print("ok: compaction of %s batches" % codec)
        offset_delete_part(b.address, admin)
        print("ok: OffsetDelete")
        if HAVE_KAFKA_PYTHON:
            kafka_python_part(b, admin)
            print("ok: DescribeLogDirs, DescribeCluster, DescribeProducers")
        else:
            skip_part("kafka-python is not installed (apt-get install python3-kafka)")
        dynamic_config_part(b)
        print("ok: dynamic broker configs")
    finish("OffsetCommit, cooperative close, compressed compaction and the describe APIs "
           "behave as Kafka's with real clients")


if __name__ == "__main__":
    main()
