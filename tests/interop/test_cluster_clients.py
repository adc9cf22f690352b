"""Real clients against a three-node silt cluster: a 6-partition topic whose leaders are spread
two per node; confluent-kafka, kafka-python and kafkajs each produce to every partition through
a different node and read the records back, following the leaders; kcat then reads every
partition whole. Each node serves /metrics: the Raft gauges agree on one controller and term,
and the partition and produce series account for every record. kafkajs comes from
tests/interop/package-lock.json (npm ci, through the npm registry) when it is not there yet."""
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from broker_common import finish, skip, skip_part  # noqa: E402
from cluster_common import Cluster, kcat_leaders, kcat_metadata  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

TOPIC = "spread"
PER_CLIENT = 60  # 10 per partition
CLUSTER = Cluster(SILT, "interop-clients-1", prefix="silt-cluster-clients-",
                  extra_args=["--metrics", "127.0.0.1:0",
                              "--set", "group.initial.rebalance.delay.ms=0"])
NODES = CLUSTER.nodes
fail = CLUSTER.fail


def bootstrap(*ids):
    return ",".join(NODES[i].address for i in ids)


def metrics_port(node):
    with open(node.log_path, errors="replace") as f:
        m = re.findall(r"metrics on http://127\.0\.0\.1:([0-9]+)/metrics", f.read())
    return int(m[-1]) if m else None


def scrape(node):
    """name{labels} -> value of one node's /metrics."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port(node),
                                  timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def values_by_partition(records):
    by = {}
    for p, v in records:
        by.setdefault(p, []).append(v)
    return by


def check_read_back(client, sent, got):
    """Every (partition, value) sent came back from the same partition, in order."""
    want = values_by_partition(sent)
    have = values_by_partition(got)
    for p in range(6):
        if have.get(p, []) != want.get(p, []):
            fail("%s: partition %d read %s, sent %s" % (client, p, have.get(p), want.get(p)))


try:
    CLUSTER.start_all()
    CLUSTER.wait_registered()
    out = subprocess.run([SILT, "topic", "-b", NODES[1].address, "create", TOPIC,
                          "--partitions", "6"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail("topic create: " + out.stderr)

    def agreed():
        views = [kcat_leaders(kcat_metadata(n, TOPIC), TOPIC) for n in NODES.values()]
        return views[0] if views[0] and all(v == views[0] for v in views) else None
    leaders = CLUSTER.wait_for("every node to agree on the leaders of " + TOPIC, agreed)
    spread = {b: sorted(p for p, l in leaders.items() if l == b) for b in NODES}
    if any(len(ps) != 2 for ps in spread.values()):
        fail("leaders of %s are not spread two per node: %s" % (TOPIC, leaders))
    print("ok: %s's leaders spread over the three nodes: %s" % (TOPIC, spread))
    produced = 0

    # confluent-kafka, through node 2.
    try:
        import confluent_kafka
    except ImportError:
        confluent_kafka = None
    if confluent_kafka is None:
        skip_part("confluent-kafka is not installed")
    else:
        p = confluent_kafka.Producer({"bootstrap.servers": bootstrap(2), "acks": "all",
                                      "enable.idempotence": True})
        reports = []
        sent = [(i % 6, "confluent-%d" % i) for i in range(PER_CLIENT)]
        for part, v in sent:
            p.produce(TOPIC, value=v.encode(), partition=part,
                      on_delivery=lambda err, msg: reports.append((err, msg.partition())))
        p.flush(30)
        errors = [e for e, _ in reports if e is not None]
        if len(reports) != PER_CLIENT or errors:
            fail("confluent-kafka: %d reports, errors %s" % (len(reports), errors[:3]))
        c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap(3), "group.id": "unused",
                                      "enable.auto.commit": False})
        c.assign([confluent_kafka.TopicPartition(TOPIC, i, confluent_kafka.OFFSET_BEGINNING)
                  for i in range(6)])
        got = []
        deadline = time.time() + 30
        while len([1 for _, v in got if v.startswith("confluent-")]) < PER_CLIENT:
            if time.time() > deadline:
                fail("confluent-kafka consumed %d of %d" % (len(got), PER_CLIENT))
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got.append((m.partition(), m.value().decode()))
        c.close()
        check_read_back("confluent-kafka", sent,
                        [(p_, v) for p_, v in got if v.startswith("confluent-")])
        produced += PER_CLIENT
        print("ok: confluent-kafka produced through node 2 and consumed through node 3")

    # kafka-python, through node 3.
    try:
        import kafka
    except ImportError:
        kafka = None
    if kafka is None:
        skip_part("kafka-python is not installed")
    else:
        p = kafka.KafkaProducer(bootstrap_servers=bootstrap(3), acks="all",
                                api_version=(2, 5, 0))
        sent = [(i % 6, "kafka-python-%d" % i) for i in range(PER_CLIENT)]
        futures = [p.send(TOPIC, value=v.encode(), partition=part) for part, v in sent]
        p.flush(30)
        for f, (part, _) in zip(futures, sent):
            md = f.get(timeout=30)
            if md.partition != part:
                fail("kafka-python: a record for partition %d went to %d" % (part, md.partition))
        p.close()
        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap(1), api_version=(2, 5, 0),
                                enable_auto_commit=False, consumer_timeout_ms=2000)
        c.assign([kafka.TopicPartition(TOPIC, i) for i in range(6)])
        c.seek_to_beginning()
        got = []
        deadline = time.time() + 30
        while len(got) < PER_CLIENT and time.time() < deadline:
            for m in c:
                if m.value.decode().startswith("kafka-python-"):
                    got.append((m.partition, m.value.decode()))
        c.close()
        if len(got) != PER_CLIENT:
            fail("kafka-python consumed %d of %d" % (len(got), PER_CLIENT))
        check_read_back("kafka-python", sent, got)
        produced += PER_CLIENT
        print("ok: kafka-python produced through node 3 and consumed through node 1")

    # kafkajs, through node 1.
    if shutil.which("node") is None or shutil.which("npm") is None:
        skip_part("node/npm not installed (apt-get install nodejs npm)")
    else:
        if not os.path.isfile(os.path.join(HERE, "node_modules", "kafkajs", "package.json")):
            r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE,
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                print(r.stdout + r.stderr)
        if not os.path.isfile(os.path.join(HERE, "node_modules", "kafkajs", "package.json")):
            skip_part("could not install kafkajs with npm ci (no npm registry?)")
        else:
            r = subprocess.run(["node", os.path.join(HERE, "kafkajs_cluster.js"),
                                bootstrap(1), TOPIC], capture_output=True, text=True,
                               timeout=120)
            if r.returncode != 0:
                fail("kafkajs: " + r.stdout + r.stderr)
            print(r.stdout.strip())
            produced += PER_CLIENT

    # kcat reads every partition whole: 10 records per client per partition.
    per_client = {"confluent-": 0, "kafka-python-": 0, "kafkajs-": 0}
    for part in range(6):
        c = subprocess.run(["kcat", "-b", bootstrap(2), "-C", "-t", TOPIC, "-p", str(part),
                            "-o", "beginning", "-e", "-q"], capture_output=True, text=True,
                           timeout=60)
        lines = c.stdout.splitlines()
        if len(lines) != produced // 6:
            fail("partition %d holds %d records, not %d" % (part, len(lines), produced // 6))
        for prefix in per_client:
            per_client[prefix] += len([l for l in lines if l.startswith(prefix)])
    print("ok: kcat reads %d records, %d per partition: %s" % (produced, produced // 6,
                                                                per_client))

    # /metrics on every node, in cluster mode.
    scraped = {i: scrape(n) for i, n in NODES.items()}
    terms = {m.get("silt_raft_term") for m in scraped.values()}
    controllers = [i for i, m in scraped.items() if m.get("silt_raft_is_controller") == 1]
    if len(terms) != 1 or terms.pop() < 1 or len(controllers) != 1:
        fail("Raft gauges: terms %s, controllers %s" % ({i: m.get("silt_raft_term")
                                                          for i, m in scraped.items()},
                                                         controllers))
    for i, m in scraped.items():
        if m.get("silt_raft_leader") != controllers[0] or m.get("silt_raft_commit_index", 0) < 1:
            fail("node %d: raft leader %s, commit index %s" % (
                i, m.get("silt_raft_leader"), m.get("silt_raft_commit_index")))
        if m.get("silt_fenced_brokers") != 0 or m.get("silt_partitions_led", 0) < 2:
            fail("node %d: fenced %s, led %s" % (i, m.get("silt_fenced_brokers"),
                                                 m.get("silt_partitions_led")))
        for part in spread[i]:
            series = 'silt_partition_log_end_offset{partition="%d",topic="%s"}' % (part, TOPIC)
            if m.get(series) != produced // 6:
                fail("node %d: %s = %s, want %d" % (i, series, m.get(series), produced // 6))
    total = sum(m.get("silt_produce_records_total", 0) for m in scraped.values())
    if total < produced:
        fail("silt_produce_records_total over the nodes is %d, %d were produced"
             % (total, produced))
    print("ok: /metrics on every node: controller %d, one term, log ends of the led partitions"
          % controllers[0])
except Exception:  # a client raising: report it with the nodes' logs, and clean up
    import traceback
    fail(traceback.format_exc())

CLUSTER.cleanup()
finish("confluent-kafka, kafka-python and kafkajs against a three-node cluster")
