"""Config changes and group deletion by real clients against `silt serve`:
kafka-python's KafkaAdminClient.alter_configs (AlterConfigs) and delete_consumer_groups
(DeleteGroups); confluent-kafka's AdminClient.alter_configs, and incremental_alter_configs and
delete_consumer_groups where the installed version has them, else librdkafka's own
rd_kafka_DeleteGroups (the C library under confluent-kafka) through ctypes."""
import ctypes
import ctypes.util
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, finish, skip, skip_part  # noqa: E402

INVALID_CONFIG = 40
UNKNOWN_TOPIC_OR_PARTITION = 3
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69

try:
    import kafka  # noqa: F401
    HAVE_KAFKA_PYTHON = True
except ImportError:
    HAVE_KAFKA_PYTHON = False
try:
    import confluent_kafka  # noqa: F401
    HAVE_CONFLUENT = True
except ImportError:
    HAVE_CONFLUENT = False


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def kafka_python_part(address):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
    from kafka.errors import GroupIdNotFoundError, NoError, NonEmptyGroupError

    admin = KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=10000)
    admin.create_topics([NewTopic("kp-conf", 1, 1), NewTopic("kp-groups", 2, 1)])

    def topic_configs(name):
        resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])[0]
        error_code, _, _, _, entries = resp.resources[0]
        check(error_code == 0, "describe_configs %s: error %d" % (name, error_code))
        return {e[0]: e[1] for e in entries}

    def alter(name, configs):
        resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name,
                                                   configs=configs)])
        check(resp.API_VERSION == 1, "kafka-python picked AlterConfigs v%d" % resp.API_VERSION)
        error_code, error_message, _, resource_name = resp.resources[0]
        check(resource_name == name, "answer for %r" % resource_name)
        return error_code, error_message

    code, _ = alter("kp-conf", {"retention.ms": "3600000", "cleanup.policy": "compact"})
    check(code == 0, "alter_configs: error %d" % code)
    cfg = topic_configs("kp-conf")
    check(cfg["retention.ms"] == "3600000", cfg["retention.ms"])
    check(cfg["cleanup.policy"] == "compact", cfg["cleanup.policy"])
    # AlterConfigs replaces the whole set: what is left out goes back to its default.
    code, _ = alter("kp-conf", {"max.message.bytes": "5000"})
    check(code == 0, "second alter_configs: error %d" % code)
    cfg = topic_configs("kp-conf")
    check(cfg["max.message.bytes"] == "5000", cfg["max.message.bytes"])
    check(cfg["cleanup.policy"] == "delete", "cleanup.policy back to default: %s" %
          cfg["cleanup.policy"])
    code, message = alter("kp-conf", {"retention.ms": "soon"})
    check(code == INVALID_CONFIG and "retention.ms" in message, (code, message))
    code, _ = alter("kp-nowhere", {"retention.ms": "1"})
    check(code == UNKNOWN_TOPIC_OR_PARTITION, code)
    print("ok: kafka-python alter_configs (AlterConfigs v1), describe_configs shows the changes")

    producer = KafkaProducer(bootstrap_servers=address)
    for i in range(20):
        producer.send("kp-groups", value=b"v%d" % i, partition=i % 2)
    producer.flush()
    producer.close()

    def consume_some(group):
        c = KafkaConsumer("kp-groups", bootstrap_servers=address, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          consumer_timeout_ms=10000)
        got = 0
        for _ in c:
            got += 1
            if got == 20:
                break
        c.commit()
        return c

    consume_some("kp-done").close()
    busy = consume_some("kp-busy")  # stays a member until closed
    groups = {g[0] for g in admin.list_consumer_groups()}
    check({"kp-done", "kp-busy"} <= groups, groups)

    results = dict(admin.delete_consumer_groups(["kp-done", "kp-busy", "kp-never"]))
    check(results["kp-done"] is NoError, results)
    check(results["kp-busy"] is NonEmptyGroupError, results)
    check(results["kp-never"] is GroupIdNotFoundError, results)
    groups = {g[0] for g in admin.list_consumer_groups()}
    check("kp-done" not in groups and "kp-busy" in groups, groups)
    check(admin.list_consumer_group_offsets("kp-done") == {},
          admin.list_consumer_group_offsets("kp-done"))
    busy.close()
    results = dict(admin.delete_consumer_groups(["kp-busy"]))
    check(results["kp-busy"] is NoError, results)
    admin.close()
    print("ok: kafka-python delete_consumer_groups (DeleteGroups v1): deleted, "
          "NonEmptyGroupError, GroupIdNotFoundError")


def librdkafka_delete_groups(address, groups):
    """rd_kafka_DeleteGroups through ctypes: {group: error code}."""
    path = ctypes.util.find_library("rdkafka")
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    for name, restype, argtypes in [
        ("rd_kafka_conf_new", vp, []),
        ("rd_kafka_conf_set", ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_size_t]),
        ("rd_kafka_new", vp, [ctypes.c_int, vp, ctypes.c_char_p, ctypes.c_size_t]),
        ("rd_kafka_queue_new", vp, [vp]),
        ("rd_kafka_DeleteGroup_new", vp, [ctypes.c_char_p]),
        ("rd_kafka_DeleteGroups", None, [vp, vp, ctypes.c_size_t, vp, vp]),
        ("rd_kafka_queue_poll", vp, [vp, ctypes.c_int]),
        ("rd_kafka_event_error", ctypes.c_int, [vp]),
        ("rd_kafka_event_error_string", ctypes.c_char_p, [vp]),
        ("rd_kafka_event_DeleteGroups_result", vp, [vp]),
        ("rd_kafka_DeleteGroups_result_groups", ctypes.POINTER(vp),
         [vp, ctypes.POINTER(ctypes.c_size_t)]),
        ("rd_kafka_group_result_name", ctypes.c_char_p, [vp]),
        ("rd_kafka_group_result_error", vp, [vp]),
        ("rd_kafka_error_code", ctypes.c_int, [vp]),
        ("rd_kafka_event_destroy", None, [vp]),
        ("rd_kafka_DeleteGroup_destroy_array", None, [vp, ctypes.c_size_t]),
        ("rd_kafka_queue_destroy", None, [vp]),
        ("rd_kafka_destroy", None, [vp]),
    ]:
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    check(lib.rd_kafka_conf_set(conf, b"bootstrap.servers", address.encode(), errstr, 512) == 0,
          errstr.value)
    rk = lib.rd_kafka_new(0, conf, errstr, 512)  # RD_KAFKA_PRODUCER
    check(rk, errstr.value)
    queue = lib.rd_kafka_queue_new(rk)
    array = (vp * len(groups))(*[lib.rd_kafka_DeleteGroup_new(g.encode()) for g in groups])
    lib.rd_kafka_DeleteGroups(rk, array, len(groups), None, queue)
    event = lib.rd_kafka_queue_poll(queue, 20000)
    check(event, "no DeleteGroups result within 20 s")
    try:
        check(lib.rd_kafka_event_error(event) == 0, lib.rd_kafka_event_error_string(event))
        result = lib.rd_kafka_event_DeleteGroups_result(event)
        count = ctypes.c_size_t()
        items = lib.rd_kafka_DeleteGroups_result_groups(result, ctypes.byref(count))
        out = {}
        for i in range(count.value):
            err = lib.rd_kafka_group_result_error(items[i])
            out[lib.rd_kafka_group_result_name(items[i]).decode()] = (
                lib.rd_kafka_error_code(err) if err else 0)
        return out
    finally:
        lib.rd_kafka_event_destroy(event)
        lib.rd_kafka_DeleteGroup_destroy_array(array, len(groups))
        lib.rd_kafka_queue_destroy(queue)
        lib.rd_kafka_destroy(rk)


def confluent_part(address):
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": address})
    for f in admin.create_topics([NewTopic("ck-conf", 1, 1), NewTopic("ck-groups", 1, 1)]).values():
        f.result(10)

    def topic_configs(name):
        res = ConfigResource("topic", name)
        return {k: v.value for k, v in admin.describe_configs([res])[res].result(10).items()}

    res = ConfigResource("topic", "ck-conf", set_config={"retention.ms": "7200000",
                                                          "segment.bytes": "1048576"})
    admin.alter_configs([res])[res].result(10)
    cfg = topic_configs("ck-conf")
    check(cfg["retention.ms"] == "7200000", cfg["retention.ms"])
    check(cfg["segment.bytes"] == "1048576", cfg["segment.bytes"])
    bad = ConfigResource("topic", "ck-conf", set_config={"no.such.config": "1"})
    try:
        admin.alter_configs([bad])[bad].result(10)
        raise AssertionError("an unknown config was accepted")
    except KafkaException as e:
        check(e.args[0].code() == INVALID_CONFIG, e)
        check("no.such.config" in e.args[0].str(), e)
    check(topic_configs("ck-conf")["retention.ms"] == "7200000", "a failed change changed nothing")
    print("ok: confluent-kafka alter_configs, describe_configs shows the change, "
          "INVALID_CONFIG for an unknown key")

    if hasattr(admin, "incremental_alter_configs"):
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
        res = ConfigResource("topic", "ck-conf", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact",
                        incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
        admin.incremental_alter_configs([res])[res].result(10)
        cfg = topic_configs("ck-conf")
        check(cfg["cleanup.policy"] == "compact,delete", cfg["cleanup.policy"])
        check(cfg["retention.ms"] == "604800000", cfg["retention.ms"])
        print("ok: confluent-kafka incremental_alter_configs (APPEND, DELETE)")
    else:
        # Not a missing client: this installed version has no such call (Debian 12 ships 1.7).
        print("NOT CHECKED with confluent-kafka %s: it has no "
              "AdminClient.incremental_alter_configs (added in 2.2); IncrementalAlterConfigs is "
              "covered by silt's own client (tests/cli/test_network.sh, v0) and by "
              "tests/broker/admin_config_test.cc (v0 and v1)"
              % confluent_kafka.version()[0])

    p = Producer({"bootstrap.servers": address})
    for i in range(10):
        p.produce("ck-groups", value=b"v%d" % i)
    p.flush(10)

    def consumer(group):
        c = Consumer({"bootstrap.servers": address, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["ck-groups"])
        got = 0
        deadline = time.time() + 20
        while got < 10 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got += 1
        check(got == 10, "consumed %d of 10" % got)
        c.commit(asynchronous=False)
        return c

    consumer("ck-done").close()
    busy = consumer("ck-busy")
    if hasattr(admin, "delete_consumer_groups"):
        how = "AdminClient.delete_consumer_groups"
        futures = admin.delete_consumer_groups(["ck-done", "ck-busy", "ck-never"],
                                               request_timeout=10)
        codes = {}
        for g, f in futures.items():
            try:
                f.result()
                codes[g] = 0
            except KafkaException as e:
                codes[g] = e.args[0].code()
    else:
        how = "librdkafka's rd_kafka_DeleteGroups (confluent-kafka %s has no " \
              "delete_consumer_groups)" % confluent_kafka.version()[0]
        codes = librdkafka_delete_groups(address, ["ck-done", "ck-busy", "ck-never"])
        if codes is None:
            skip_part("delete_consumer_groups: librdkafka.so not found by ctypes")
            busy.close()
            return
    check(codes == {"ck-done": 0, "ck-busy": NON_EMPTY_GROUP, "ck-never": GROUP_ID_NOT_FOUND},
          codes)
    busy.close()
    # Its committed offsets went with the group.
    probe = Consumer({"bootstrap.servers": address, "group.id": "ck-done"})
    committed = probe.committed([TopicPartition("ck-groups", 0)], timeout=10)
    check(committed[0].offset < 0, "offset after delete: %d" % committed[0].offset)
    probe.close()
    print("ok: %s: deleted, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND; offsets gone" % how)


def main():
    if not HAVE_KAFKA_PYTHON and not HAVE_CONFLUENT:
        skip("neither python3-kafka nor python3-confluent-kafka is installed")
    with Broker(extra=["--set", "group.initial.rebalance.delay.ms=0"]) as broker:
        if HAVE_KAFKA_PYTHON:
            kafka_python_part(broker.address)
        else:
            skip_part("kafka-python: python3-kafka is not installed")
        if HAVE_CONFLUENT:
            confluent_part(broker.address)
        else:
            skip_part("confluent-kafka: python3-confluent-kafka is not installed")
    finish("admin APIs interop")


if __name__ == "__main__":
    main()
