"""A replica whose disk fails goes offline, and the controller moves its leadership away.

Three nodes, each with an LD_PRELOAD shim (eio_shim.c) that makes fsync fail with EIO on
demand, and a topic of replication factor 3 (min.insync.replicas=2, flush.messages=1: every
append is fsynced before it is acknowledged). Records go in; then the disk under partition 0
of its leader starts failing. The leader takes that partition offline (silt-serve(1)), reports
it with its heartbeats, and the controller moves the leadership to another in-sync replica and
takes the failed one out of the ISR, while the node's other partitions keep their roles.
Every acknowledged record stays readable, and the producer's next acks=all records land at
the new leader."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from broker_common import skip  # noqa: E402

TOPIC = "disk"


def fail(msg):
    print("FAIL: " + msg)
    raise SystemExit(1)


def kcat(c, args, data=None):
    return subprocess.run(["kcat", "-b", c.bootstrap()] + args, input=data, capture_output=True,
                          text=True, timeout=60)


def main():
    if shutil.which("kcat") is None:
        skip("kcat is not installed (apt-get install kcat)")
    shim = os.environ.get("SILT_EIO_SHIM")
    if not shim or not os.path.exists(shim):
        skip("SILT_EIO_SHIM does not name the built silt_eio_shim.so (not built under sanitizers)")
    c = Cluster(3)
    triggers = {}
    for n in c.nodes.values():
        triggers[n.id] = os.path.join(c.work, "eio-node%d" % n.id)
        n.env = {"LD_PRELOAD": shim, "SILT_EIO_TRIGGER": triggers[n.id],
                 "SILT_EIO_MATCH": "/%s-0/" % TOPIC}
    with c:
        c.wait_for_controller()
        c.wait_for_brokers(3)
        c.create_topic(TOPIC, partitions=3, replication_factor=3,
                       configs=["min.insync.replicas=2", "flush.messages=1"])
        lines = ["before-%d" % i for i in range(30)]
        for p in range(3):
            r = kcat(c, ["-P", "-t", TOPIC, "-p", str(p), "-X", "acks=all"],
                     "".join("%s-p%d\n" % (l, p) for l in lines))
            if r.returncode != 0:
                fail("produce: " + r.stderr)
        if not wait_until(lambda: all(len(v["isr"]) == 3 for v in c.partitions(TOPIC).values()),
                          20, step=0.2):
            fail("the ISRs never filled: %s" % c.partitions(TOPIC))
        parts = c.partitions(TOPIC)
        victim = parts[0]["leader"]
        others = {p: v["leader"] for p, v in parts.items() if p != 0}
        print("partition 0 is led by node %d; its disk under %s-0 fails from now on"
              % (victim, TOPIC))
        open(triggers[victim], "w").close()
        t0 = time.time()
        # The next append's fsync fails there; the producer retries until the new leader acks.
        r = kcat(c, ["-P", "-t", TOPIC, "-p", "0", "-X", "acks=all",
                     "-X", "message.timeout.ms=30000"], "after-0\n")
        acked_s = time.time() - t0
        if r.returncode != 0:
            fail("acks=all produce to partition 0 across the failure: " + r.stderr)
        after = c.partitions(TOPIC)
        if after[0]["leader"] in (victim, -1) or victim in after[0]["isr"]:
            fail("partition 0 still names node %d: %s\n%s"
                 % (victim, after[0], c.node(victim).log_tail()))
        print("ok: acked %.1f s after the disk failed; partition 0 led by node %d, ISR %s"
              % (acked_s, after[0]["leader"], after[0]["isr"]))
        with open(c.node(victim).log_path, errors="replace") as f:
            log = f.read()
        if "%s-0 is offline until restart" % TOPIC not in log:
            fail("node %d does not log its offline replica:\n%s"
                 % (victim, c.node(victim).log_tail()))
        print("ok: node %d logs the failed replica once it fails" % victim)
        for p, lead in others.items():
            if victim not in after[p]["isr"]:
                fail("node %d left the ISR of its healthy partition %d: %s" % (victim, p, after))
        print("ok: node %d stays in the ISRs of its healthy partitions" % victim)
        time.sleep(1.0)  # several heartbeats and controller decisions later
        again = c.partitions(TOPIC)
        if victim in again[0]["isr"] or again[0]["leader"] == victim:
            fail("node %d came back into partition 0: %s" % (victim, again[0]))
        r = kcat(c, ["-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q"])
        got = r.stdout.split()
        want = ["%s-p0" % l for l in lines] + ["after-0"]
        if got != want:
            fail("partition 0 reads %d records, not the %d acknowledged: %s"
                 % (len(got), len(want), got[-3:]))
        print("ok: every acknowledged record of partition 0 is served by the new leader")
    print("PASS: a failed disk takes its replica offline and its leadership moves to the ISR")


if __name__ == "__main__":
    main()
