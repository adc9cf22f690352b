"""The fault suite's workload: producers, consumers, a Metadata sampler and the final read, all
logging into one history for tests/fault/checker.py.

Producers (confluent-kafka, acks=all, enable.idempotence=true) write unique values
"p<producer>-<seq>" and log every send, every ack (partition, offset) and every error.
Consumers assign every partition from the beginning and log every record they poll, one session
per consumer instance. The sampler asks every live node for Metadata (leader, leader epoch, ISR)
twice a second. The final read goes through every partition from the beginning to its high
watermark. Every loop is bounded by time.
"""
import os
import json
import threading
import time

try:
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
except ImportError:  # the test reports the skip
    confluent_kafka = None


class History:
    """Events in the order they were logged, also appended to a JSON-lines file when given."""

    def __init__(self, path=None):
        self.events = []
        self.lock = threading.Lock()
        self.file = open(path, "w") if path else None

    def add(self, **e):
        e["t"] = round(time.time(), 3)
        with self.lock:
            self.events.append(e)
            if self.file:
                self.file.write(json.dumps(e) + "\n")

    def of(self, kind):
        with self.lock:
            return [e for e in self.events if e["type"] == kind]

    def close(self):
        if self.file:
            self.file.close()
            self.file = None


def _decode(v):
    if v is None:
        return None
    try:
        return v.decode()
    except UnicodeDecodeError:
        return v.hex()


class ProducerWorker(threading.Thread):
    def __init__(self, index, bootstrap, topic, history, stop, rate=100, timeout_ms=10000,
                 extra=None):
        super().__init__(daemon=True, name="producer-%d" % index)
        self.index = index
        self.topic = topic
        self.history = history
        self.stop_event = stop
        self.rate = rate
        self.conf = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": timeout_ms,
            "request.timeout.ms": min(5000, timeout_ms),
            "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 100,
            "client.id": "fault-p%d" % index,
            "log_level": 2,
        }
        self.conf.update(extra or {})
        # SILT_FAULT_CLIENT_DEBUG=eos (or any librdkafka debug context list): the producers'
        # librdkafka debug log on stderr, to see why a producer bumped its epoch or retried.
        if os.environ.get("SILT_FAULT_CLIENT_DEBUG"):
            self.conf["debug"] = os.environ["SILT_FAULT_CLIENT_DEBUG"]
            self.conf["log_level"] = 7
        self.seq = 0
        self.fatal = []

    def _delivered(self, err, msg):
        v = _decode(msg.value())
        if err is not None:
            self.history.add(type="fail", value=v, error=err.name(), fatal=err.fatal())
            if err.fatal():
                self.fatal.append(err.name())
        else:
            self.history.add(type="ack", value=v, partition=msg.partition(), offset=msg.offset())

    def _poll(self, p, timeout):
        """p.poll(timeout); a fatal error raised from it (librdkafka's fatal idempotence errors
        surface there) is noted, so that the loop starts a new producer instead of dying."""
        try:
            p.poll(timeout)
        except confluent_kafka.KafkaException as e:
            err = e.args[0]
            self.history.add(type="info", what="producer %d: %s" % (self.index, err.str()))
            if err.fatal():
                self.fatal.append(err.name())

    def run(self):
        p = Producer(self.conf)
        interval = 1.0 / self.rate
        next_at = time.time()
        while not self.stop_event.is_set():
            if self.fatal:
                # An idempotent producer that hit a fatal error cannot go on: start another
                # (its sequence numbers start again under a new producer id).
                try:
                    p.flush(2)
                except confluent_kafka.KafkaException:
                    pass  # the old producer's own fatal error again: it is dropped anyway
                p = Producer(self.conf)
                self.fatal.clear()
                self.history.add(type="info", what="producer %d restarted after a fatal error"
                                 % self.index)
            v = "p%d-%d" % (self.index, self.seq)
            self.seq += 1
            self.history.add(type="send", value=v, producer=self.index)
            while True:
                try:
                    p.produce(self.topic, value=v.encode(), on_delivery=self._delivered)
                    break
                except BufferError:
                    self._poll(p, 0.05)
                    if self.stop_event.is_set():
                        self.history.add(type="fail", value=v, error="not queued")
                        break
                except confluent_kafka.KafkaException as e:
                    # Refused at once (not queued): a definite failure. A fatal error (the
                    # idempotent producer's state is lost) needs a new producer.
                    err = e.args[0]
                    self.history.add(type="fail", value=v, error=err.name(), fatal=err.fatal())
                    if err.fatal():
                        self.fatal.append(err.name())
                    break
            self._poll(p, 0)
            next_at += interval
            if next_at < time.time():
                next_at = time.time()
            # poll() returns early when it serves a callback: wait out the rest.
            while not self.stop_event.is_set():
                delay = next_at - time.time()
                if delay <= 0:
                    break
                self._poll(p, delay)
        # Whatever is still in flight gets up to the message timeout to settle; what does not is
        # "unknown" to the checker.
        try:
            p.flush(self.conf["message.timeout.ms"] / 1000.0 + 2)
        except confluent_kafka.KafkaException as e:
            self.history.add(type="info", what="producer %d: %s" % (self.index, e.args[0].str()))


class ConsumerWorker(threading.Thread):
    def __init__(self, name, bootstrap, topic, partitions, history, stop, session=1):
        super().__init__(daemon=True, name="consumer-" + name)
        self.cname = name
        self.topic = topic
        self.partitions = partitions
        self.history = history
        self.stop_event = stop
        self.session = session
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": "fault-%s-%d" % (name, int(time.time() * 1000)),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "fetch.wait.max.ms": 100,
            "client.id": "fault-" + name,
            "log_level": 2,
        }

    def run(self):
        c = Consumer(self.conf)
        try:
            c.assign([TopicPartition(self.topic, p, confluent_kafka.OFFSET_BEGINNING)
                      for p in self.partitions])
            while not self.stop_event.is_set():
                for m in c.consume(num_messages=500, timeout=0.2):
                    if m.error():
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            self.history.add(type="consumer_error", consumer=self.cname,
                                             error=m.error().name())
                        continue
                    self.history.add(type="poll", consumer=self.cname, session=self.session,
                                     partition=m.partition(), offset=m.offset(),
                                     value=_decode(m.value()))
        finally:
            c.close()


class MetadataSampler(threading.Thread):
    """Leader and epoch of every partition of `topic` as each live node sees it."""

    def __init__(self, cluster, topic, history, stop, every=0.5):
        super().__init__(daemon=True, name="metadata-sampler")
        self.cluster = cluster
        self.topic = topic
        self.history = history
        self.stop_event = stop
        self.every = every

    def run(self):
        while not self.stop_event.wait(self.every):
            for n in list(self.cluster.nodes.values()):
                md = n.metadata([self.topic], timeout=1.0)
                if md is None or self.topic not in md["topics"]:
                    continue
                for p, v in md["topics"][self.topic]["partitions"].items():
                    self.history.add(type="leader", node=n.id, partition=p, leader=v["leader"],
                                     epoch=v["epoch"], isr=v["isr"], error=v["error"])


class Workload:
    """Producers + consumers + sampler over one topic; start(), then stop() when done."""

    def __init__(self, cluster, topic, partitions, history, producers=2, consumers=1, rate=100,
                 timeout_ms=10000):
        self.cluster = cluster
        self.topic = topic
        self.partitions = list(partitions)
        self.history = history
        self.stop_event = threading.Event()
        boot = cluster.bootstrap()
        self.threads = [ProducerWorker(i, boot, topic, history, self.stop_event, rate=rate,
                                       timeout_ms=timeout_ms) for i in range(producers)]
        self.threads += [ConsumerWorker("c%d" % i, boot, topic, self.partitions, history,
                                        self.stop_event) for i in range(consumers)]
        self.threads.append(MetadataSampler(cluster, topic, history, self.stop_event))

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self, timeout=30):
        self.stop_event.set()
        deadline = time.time() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.time()))
        return [t.name for t in self.threads if t.is_alive()]


def acks_after(history, t, partitions):
    """The time by which every partition in `partitions` has had an ack logged at or after
    time t (acks=all produce works on each again), or None while one has not."""
    first = {}
    for e in history.of("ack"):
        if e["t"] >= t and e["partition"] not in first:
            first[e["partition"]] = e["t"]
    if any(p not in first for p in partitions):
        return None
    return max(first[p] for p in partitions)


def final_read(bootstrap, topic, partitions, history, seconds=30):
    """Reads every partition from the beginning up to its high watermark, logging "final"
    events. Returns ({partition: high watermark}, [partitions not read completely])."""
    hws, incomplete = {}, []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-final-%d" % time.time(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "topic.metadata.refresh.interval.ms": 1000, "client.id": "fault-final",
                  "log_level": 2})
    try:
        deadline = time.time() + seconds
        for p in partitions:
            tp = TopicPartition(topic, p)
            hw = None
            while hw is None and time.time() < deadline:
                try:
                    lo, hw = c.get_watermark_offsets(tp, timeout=3)
                except confluent_kafka.KafkaException:
                    time.sleep(0.3)
            if hw is None:
                incomplete.append(p)
                continue
            hws[p] = hw
            if hw <= 0:
                continue
            c.assign([TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)])
            last = -1
            while last < hw - 1 and time.time() < deadline:
                for m in c.consume(num_messages=1000, timeout=0.5):
                    if m.error():
                        continue
                    history.add(type="final", partition=p, offset=m.offset(),
                                value=_decode(m.value()))
                    last = max(last, m.offset())
            if last < hw - 1:
                incomplete.append(p)
            c.unassign()
    finally:
        c.close()
    return hws, incomplete


def replica_holders(assignment, partition, nodes):
    """The nodes whose data dir counts as a replica of `partition`: those the final Metadata
    assigns it to (`assignment`: {partition: {"replicas": [...]}}, as Cluster.partitions gives
    it), or every node when Metadata did not say. A node a reassignment dropped keeps the
    partition's files as they were when it stopped being a replica (an old leader's tail that
    was never committed included): they are no replica any more, and judging them would report
    that tail as duplicates and inconsistent offsets of the partition."""
    replicas = (assignment or {}).get(partition, {}).get("replicas")
    return [n for n in nodes if n in replicas] if replicas else list(nodes)


def replica_reads(cluster, topic, partitions, history, high_watermarks):
    """Logs every record below the high watermark that each replica's data dir holds
    ("replica"), for the nodes the partition is assigned to at the end (replica_holders)."""
    assignment = cluster.partitions(topic) or {}
    nodes = sorted(cluster.nodes)  # a broker-only node added by a case too
    for n in nodes:
        mine = [p for p in partitions if n in replica_holders(assignment, p, nodes)]
        if not mine:
            continue
        for p, v in cluster.read_replica(n, topic, mine).items():
            hw = high_watermarks.get(p)
            for off, val in v["records"]:
                if hw is None or off < hw:
                    history.add(type="replica", node=n, partition=p, offset=off, value=val)
