"""Dynamic broker configs on a three-node cluster: IncrementalAlterConfigs on BROKER resources
goes through the controller's metadata log, so a cluster default ("") sent to one node reaches
every node, and a node's own value (resource name = its id) applies to that node only.

confluent-kafka's describe_configs on each node (BROKER resource = its id) shows the value and
its source (DYNAMIC_DEFAULT_BROKER_CONFIG / DYNAMIC_BROKER_CONFIG); validate_only changes
nothing; a read-only key is refused with INVALID_REQUEST and a bad value with INVALID_CONFIG,
as on a single node. A node restarted on its data dir reports the same values (taken again
from its replayed metadata log), and a DELETE of the node's own value falls back to the
default. The changes are sent with confluent-kafka's incremental_alter_configs where the
installed version has it (2.2 and later), else as IncrementalAlterConfigs v0 requests built
from kafka-python's protocol types and sent to the chosen node."""
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")
try:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
except ImportError:
    skip("confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

INVALID_REQUEST = 42
INVALID_CONFIG = 40
SET, DELETE = 0, 1

CLUSTER = Cluster(SILT, "interop-dyncfg-1", prefix="silt-cluster-dyncfg-",
                  extra_args=["--set", "offsets.topic.replication.factor=1",
                              "--set", "offsets.topic.num.partitions=1"])
NODES = CLUSTER.nodes
fail = CLUSTER.fail


def check(cond, what):
    if not cond:
        fail(str(what))


def admin_of(node):
    return AdminClient({"bootstrap.servers": node.address, "socket.timeout.ms": 10000})


def describe(node_id, via=None):
    """{key: (value, ConfigSource)} of BROKER `node_id` (librdkafka asks that broker)."""
    admin = admin_of(via or NODES[node_id])
    res = ConfigResource("broker", str(node_id))
    try:
        entries = admin.describe_configs([res], request_timeout=15)[res].result(20)
    except Exception as e:  # noqa: BLE001 -- a node still starting; the caller retries
        print("describe_configs of broker %d: %s" % (node_id, e))
        return None
    return {k: (e.value, ConfigSource(e.source)) for k, e in entries.items()}


# ---- sending IncrementalAlterConfigs --------------------------------------------------------

def iac_with_confluent(node, name, ops, validate_only):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    kinds = {SET: AlterConfigOpType.SET, DELETE: AlterConfigOpType.DELETE}
    res = ConfigResource("broker", name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=kinds[op]) for k, op, v in ops])
    try:
        admin_of(node).incremental_alter_configs(
            [res], validate_only=validate_only)[res].result(30)
        return 0, None
    except KafkaException as e:
        return e.args[0].code(), e.args[0].str()


def iac_with_kafka_python(node, name, ops, validate_only):
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.api import Request, Response
    from kafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

    class IacResponseV0(Response):
        API_KEY = 44
        API_VERSION = 0
        SCHEMA = Schema(
            ("throttle_time_ms", Int32),
            ("responses", Array(("error_code", Int16), ("error_message", String("utf-8")),
                                ("resource_type", Int8), ("resource_name", String("utf-8")))))

    class IacRequestV0(Request):
        API_KEY = 44
        API_VERSION = 0
        RESPONSE_TYPE = IacResponseV0
        SCHEMA = Schema(
            ("resources", Array(("resource_type", Int8), ("resource_name", String("utf-8")),
                                ("configs", Array(("name", String("utf-8")),
                                                  ("config_operation", Int8),
                                                  ("value", String("utf-8")))))),
            ("validate_only", Boolean))

    admin = KafkaAdminClient(bootstrap_servers=node.address, request_timeout_ms=30000)
    try:
        req = IacRequestV0(resources=[(4, name, [(k, op, v) for k, op, v in ops])],
                           validate_only=validate_only)
        future = admin._send_request_to_node(node.id, req)
        admin._wait_for_futures([future])
        (code, message, _, _), = future.value.responses
        return code, message
    finally:
        admin.close()


HAVE_CONFLUENT_IAC = hasattr(AdminClient, "incremental_alter_configs")


def alter(node, name, ops, validate_only=False):
    """IncrementalAlterConfigs of BROKER `name` sent to `node`: (error code, message)."""
    if HAVE_CONFLUENT_IAC:
        return iac_with_confluent(node, name, ops, validate_only)
    return iac_with_kafka_python(node, name, ops, validate_only)


# ---- the test -----------------------------------------------------------------------------

def wait_shown(what, expected, seconds=20):
    """Until describe() of every node id in `expected` shows {key: (value, source)} for each
    of its keys."""
    def shown():
        for node_id, want in expected.items():
            got = describe(node_id)
            if got is None:
                return False
            for k, v in want.items():
                if got.get(k) != v:
                    print("broker %d %s: %s, want %s" % (node_id, k, got.get(k), v))
                    return False
        return True
    CLUSTER.wait_for(what, shown, seconds, interval=0.5)


def main():
    if not HAVE_CONFLUENT_IAC:
        print("confluent-kafka %s has no incremental_alter_configs (2.2 and later): sending "
              "IncrementalAlterConfigs v0 with kafka-python's protocol types"
              % confluent_kafka.version()[0])
        try:
            import kafka  # noqa: F401
        except ImportError:
            skip("neither confluent-kafka >= 2.2 nor kafka-python is installed")
    CLUSTER.start_all()
    CLUSTER.wait_registered()

    dynamic_default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    dynamic_broker = ConfigSource.DYNAMIC_BROKER_CONFIG
    before = describe(1)
    check(before is not None, "describe_configs of broker 1 failed")
    static_retention = before["log.retention.ms"]
    check(static_retention[1] in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG),
          static_retention)

    # validate_only: checked, answered OK, nothing changes anywhere.
    code, msg = alter(NODES[3], "", [("log.retention.ms", SET, "7200000")], validate_only=True)
    check(code == 0, "validate_only: %s %s" % (code, msg))
    time.sleep(1)
    for i in NODES:
        got = describe(i)
        check(got is not None and got["log.retention.ms"] == static_retention,
              "validate_only changed broker %d: %s" % (i, got and got["log.retention.ms"]))
    print("ok: validate_only changes nothing")

    # Refusals, as on a single node.
    code, msg = alter(NODES[2], "", [("num.partitions", SET, "7")])
    check(code == INVALID_REQUEST and "Cannot update these configs dynamically" in (msg or ""),
          "read-only key: %s %s" % (code, msg))
    code, msg = alter(NODES[2], "2", [("log.retention.ms", SET, "soon")])
    check(code == INVALID_CONFIG and "log.retention.ms" in (msg or ""),
          "bad value: %s %s" % (code, msg))
    code, msg = alter(NODES[2], "1", [("log.retention.ms", SET, "1000")])
    check(code == INVALID_REQUEST, "another broker's id sent to node 2: %s %s" % (code, msg))
    print("ok: read-only key INVALID_REQUEST, bad value INVALID_CONFIG, another node's id refused")

    # The cluster default, sent to node 3; node 2's own value, sent to node 2.
    code, msg = alter(NODES[3], "", [("log.retention.ms", SET, "7200000"),
                                     ("log.segment.bytes", SET, "2097152")])
    check(code == 0, "cluster default: %s %s" % (code, msg))
    code, msg = alter(NODES[2], "2", [("log.retention.ms", SET, "3600000")])
    check(code == 0, "broker 2: %s %s" % (code, msg))
    expected = {
        1: {"log.retention.ms": ("7200000", dynamic_default),
            "log.segment.bytes": ("2097152", dynamic_default)},
        2: {"log.retention.ms": ("3600000", dynamic_broker),
            "log.segment.bytes": ("2097152", dynamic_default)},
        3: {"log.retention.ms": ("7200000", dynamic_default),
            "log.segment.bytes": ("2097152", dynamic_default)},
    }
    wait_shown("the cluster default on every node and broker 2's own value", expected)
    print("ok: the cluster default shows on every node as DYNAMIC_DEFAULT_BROKER_CONFIG, "
          "broker 2's value on broker 2 only as DYNAMIC_BROKER_CONFIG")

    # A topic without overrides takes the answering node's defaults (librdkafka picks the
    # node): the cluster default, or broker 2's own value.
    CLUSTER.silt_cmd("topic", "create", "-b", NODES[1].address, "plain", "--partitions", "1",
                     "--replication-factor", "3")
    admin = admin_of(NODES[1])
    res = ConfigResource("topic", "plain")

    def topic_retention():
        try:
            entries = admin.describe_configs([res], request_timeout=15)[res].result(20)
        except Exception as e:  # noqa: BLE001
            print("describe_configs of topic plain: %s" % e)
            return None
        return entries["retention.ms"].value
    got = CLUSTER.wait_for("topic plain", topic_retention, 20, interval=0.5)
    check(got in ("7200000", "3600000"), "topic plain's retention.ms: %s" % got)
    print("ok: a topic without overrides shows the dynamic default (retention.ms=%s)" % got)
    del admin

    # Restarted, node 2 takes both again from its metadata log; node 3 likewise.
    for i in (2, 3):
        NODES[i].stop()
        NODES[i].start()
    CLUSTER.wait_registered(30)
    wait_shown("the same configs after restarting nodes 2 and 3", expected, 30)
    print("ok: nodes 2 and 3 report the same values and sources after a restart")

    # DELETE of broker 2's own value: back to the cluster default there.
    code, msg = alter(NODES[2], "2", [("log.retention.ms", DELETE, None)])
    check(code == 0, "delete on broker 2: %s %s" % (code, msg))
    wait_shown("broker 2 back on the cluster default",
               {2: {"log.retention.ms": ("7200000", dynamic_default)}})
    print("ok: DELETE of broker 2's value falls back to the cluster default")

    CLUSTER.cleanup()
    finish("dynamic broker configs through the metadata log of a three-node cluster")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        fail("unexpected %s: %s" % (type(e).__name__, e))
