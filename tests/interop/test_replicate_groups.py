"""`silt replicate --groups` into a destination without silt's offset-preserving append.

With SILT_REPLICATE_REPRODUCE=1 the destination (a second `silt serve`) is treated as Apache
Kafka is: batches are produced anew and get the destination's offsets, kept in the exact offset
map. The source topic is compacted, so its offsets have holes, and the offsets confluent-kafka
commits there mostly point into a hole (the record after the last one consumed was removed).
After the copy, `--groups` commits each group's offset translated through the map; a
confluent-kafka consumer in the same group at the destination must go on with the record right
after the last one it consumed at the source: no duplicate, no skip. A group whose offset is
the end of the partition resumes at the destination's end (nothing read)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, finish, skip  # noqa: E402

try:
    from confluent_kafka import Consumer, TopicPartition
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")

SILT = os.environ["SILT"]
TOPIC = "compacted"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def silt(*args, env=None, stdin=None):
    out = subprocess.run([SILT] + list(args), input=stdin, capture_output=True, text=True,
                         timeout=120, env=env)
    check(out.returncode == 0, "silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
    return out.stdout


def records(address):
    """(offset, key, value) of every record of the topic's partition 0."""
    out = silt("consume", "-b", address, "-t", TOPIC, "-p", "0", "--format", "%o %k %s\\n")
    return [tuple(line.split(" ", 2)) for line in out.splitlines()]


def consume(address, group, n, timeout=30):
    """n records read by a member of `group` (fewer on timeout); commits after the last."""
    c = Consumer({"bootstrap.servers": address, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got = []
    deadline = time.time() + timeout
    try:
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got.append((str(m.offset()), m.key().decode(), m.value().decode()))
        if got:
            c.commit(offsets=[TopicPartition(TOPIC, 0, int(got[-1][0]) + 1)],
                     asynchronous=False)
    finally:
        c.close()
    return got


with Broker(extra=["--set", "log.cleaner.backoff.ms=200"]) as src, Broker() as dst:
    silt("topic", "create", "-b", src.address, TOPIC, "--config", "cleanup.policy=compact",
         "--config", "segment.bytes=4096", "--config", "min.cleanable.dirty.ratio=0.01")
    # Every third record has the key "dup": compaction keeps only the last, leaving holes.
    lines = ["%s:v%d" % ("dup" if i % 3 == 0 else "u%d" % i, i) for i in range(600)]
    lines += ["f%d:filler%d" % (j, j) for j in range(200)]
    silt("produce", "-b", src.address, "-t", TOPIC, "-p", "0", "-K", ":", "--batch-size",
         "300", "--linger-ms", "0", stdin="\n".join(lines) + "\n")
    deadline = time.time() + 30
    while True:
        before = records(src.address)
        if sum(1 for r in before if r[1] == "dup") <= 2:
            break
        check(time.time() < deadline, "the topic was not compacted: %d records" % len(before))
        time.sleep(0.3)
    offsets = [int(r[0]) for r in before]
    check(offsets != list(range(len(offsets))), "the compacted source has holes")

    # Group "mid" stops where the next source offset was removed (a hole); "end" read it all.
    mid = consume(src.address, "mid", 100)
    check(mid == before[:100], "the source group read the first 100 records")
    check(int(before[100][0]) > int(mid[-1][0]) + 1,
          "the offset 'mid' commits is a hole at the source")
    end = consume(src.address, "end", len(before))
    check(end == before, "the second group read every record")

    env = dict(os.environ, SILT_REPLICATE_REPRODUCE="1")
    out = silt("replicate", "kafka://" + src.address, "kafka://" + dst.address, "-t", TOPIC,
               "--groups", "mid|end", env=env)
    check("copied the offsets of 2 group(s)" in out, "both groups copied: " + out)
    after = records(dst.address)
    check([r[1:] for r in after] == [r[1:] for r in before],
          "the destination holds the same records")
    check([int(r[0]) for r in after] == list(range(len(after))),
          "the destination's offsets have no holes (the records were produced anew)")

    rest = consume(dst.address, "mid", len(before) - 100)
    check([r[1:] for r in rest] == [r[1:] for r in before[100:]],
          "'mid' resumes at the destination right after its last record: got %s... for %s..."
          % (rest[:2], before[100:102]))
    extra = consume(dst.address, "mid", 1, timeout=3)
    check(extra == [], "'mid' has nothing more to read: %s" % extra)
    check(consume(dst.address, "end", 1, timeout=3) == [],
          "'end' resumes at the destination's end")

finish("group offsets translated into a reproducing destination resume exactly")
