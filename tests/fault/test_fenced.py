"""A node cut off from its peers (through the fault proxy) is fenced and its partitions move.

Three nodes, every peer link through the proxy. A node that is not the controller loses every
peer link both ways while clients still reach it. Within its session timeout (plus margins) the
other nodes' Metadata drop it from the brokers, and each partition it led moves: to another
in-sync replica when the ISR has more than one member, else nowhere (leader -1,
LEADER_NOT_AVAILABLE), with the leader epoch bumped either way. After healing it is unfenced, every ISR fills again and
the leaderless partitions come back to it, with their records. Then the same for the controller:
the two others elect a new controller, which fences the old one. At no time do two nodes name
different leaders for one partition and leader epoch (every node's Metadata is sampled)."""
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import check  # noqa: E402
from cluster import LEADER_NOT_AVAILABLE, Cluster, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from broker_common import skip  # noqa: E402

FENCE_S = 15  # broker.session.timeout.ms is 3 s; the rest is margin for a loaded machine


def fail(msg):
    print("FAIL: " + msg)
    raise SystemExit(1)


class Sampler(threading.Thread):
    """Every node's view of the leaders and epochs of `topics`, as "leader" history events."""

    def __init__(self, cluster, topics):
        super().__init__(daemon=True)
        self.c, self.topics, self.events = cluster, topics, []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.3):
            for n in list(self.c.nodes.values()):
                md = n.metadata(self.topics, timeout=1.0)
                for t, tv in (md or {}).get("topics", {}).items():
                    for p, v in tv["partitions"].items():
                        self.events.append({"type": "leader", "node": n.id,
                                            "partition": "%s-%d" % (t, p),
                                            "leader": v["leader"], "epoch": v["epoch"]})


def view(c, node, topic):
    parts = c.partitions(topic, via=node)
    if parts is None:
        return None
    return parts


def produce(c, topic, lines, via):
    p = subprocess.run(["kcat", "-b", via.address, "-P", "-t", topic, "-X", "acks=all"],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        fail("kcat produce: " + p.stderr)


def consume_all(c, topic, via):
    r = subprocess.run(["kcat", "-b", via.address, "-C", "-t", topic, "-o", "beginning", "-e",
                        "-q"], capture_output=True, text=True, timeout=60)
    return sorted(r.stdout.split())


def fence_and_heal(c, victim, topics, before, what):
    survivors = [n for n in c.nodes.values() if n.id != victim]
    print("cutting node %d (%s) from its peers; clients still reach it" % (victim, what))
    t0 = time.time()
    c.cut_from_peers(victim, "both")

    # What each partition the victim led should become.
    want = {}
    for t in topics:
        for p, v in before[t].items():
            if v["leader"] != victim:
                want[(t, p)] = ("same", v["leader"])
            elif len([r for r in v["isr"] if r != victim]) > 0:
                want[(t, p)] = ("moved", [r for r in v["isr"] if r != victim])
            else:
                want[(t, p)] = ("leaderless", None)

    def fenced():
        for n in survivors:
            md = n.metadata(topics)
            if md is None or victim in md["brokers"] or len(md["brokers"]) != 2:
                return False
            if md["controller"] == victim or md["controller"] not in c.ids:
                return False
            for (t, p), (kind, arg) in want.items():
                v = md["topics"].get(t, {}).get("partitions", {}).get(p)
                if v is None:
                    return False
                if kind == "same" and v["leader"] != arg:
                    return False
                if kind == "moved" and (v["leader"] not in arg or
                                        v["epoch"] <= before[t][p]["epoch"]):
                    return False
                if kind == "leaderless" and (v["leader"] != -1 or
                                             v["error"] != LEADER_NOT_AVAILABLE or
                                             v["epoch"] <= before[t][p]["epoch"]):
                    return False
        return True
    if not wait_until(fenced, FENCE_S, step=0.2):
        fail("node %d was not fenced with its partitions moved within %d s; survivors see %s"
             % (victim, FENCE_S, [(n.id, n.metadata(topics)) for n in survivors]))
    kinds = {}
    for k, (kind, _) in want.items():
        if before[k[0]][k[1]]["leader"] == victim:
            kinds[kind] = kinds.get(kind, 0) + 1
    print("ok: node %d fenced after %.1f s (controller now %d): partitions it led %s" % (
        victim, time.time() - t0, survivors[0].metadata()["controller"],
        ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items()))))

    print("healing")
    t1 = time.time()
    c.heal()

    def back():
        for n in c.nodes.values():
            md = n.metadata(topics)
            if md is None or len(md["brokers"]) != 3:
                return False
            for t in topics:
                for p, v in md["topics"].get(t, {}).get("partitions", {}).items():
                    if v["leader"] < 0:
                        return False
                    if want[(t, p)][0] == "leaderless" and v["leader"] != victim:
                        return False
                    # Every replica back in the ISR: the next round's expectations are taken
                    # from this view, and an ISR still growing would let the controller elect
                    # a replica that was not in the ISR sampled.
                    if sorted(v["isr"]) != sorted(v["replicas"]):
                        return False
        return True
    if not wait_until(back, FENCE_S + 5, step=0.2):
        fail("node %d did not come back with its partitions and full ISRs within %d s: %s"
             % (victim, FENCE_S + 5, [(n.id, n.metadata(topics)) for n in c.nodes.values()]))
    after = {t: c.partitions(t) for t in topics}
    for (t, p), (kind, _) in want.items():
        if kind == "leaderless" and after[t][p]["epoch"] <= before[t][p]["epoch"] + 1:
            fail("%s-%d came back to node %d without a new leader epoch: %s -> %s"
                 % (t, p, victim, before[t][p], after[t][p]))
    print("ok: node %d unfenced %.1f s after healing; its leaderless partitions came back to "
          "it with new epochs, and every ISR is full again" % (victim, time.time() - t1))
    return after


def main():
    if shutil.which("kcat") is None:
        skip("kcat is not installed (apt-get install kcat)")
    topics = ["rf1", "rf3"]
    with Cluster(3) as c:
        c.wait_for_controller()
        c.wait_for_brokers(3)
        c.create_topic("rf1", partitions=6, replication_factor=1)
        c.create_topic("rf3", partitions=6, replication_factor=3,
                       configs=["min.insync.replicas=2"])
        lines = ["record-%d" % i for i in range(60)]
        produce(c, "rf1", lines, c.node(1))
        lines3 = ["rf3-record-%d" % i for i in range(60)]
        produce(c, "rf3", lines3, c.node(1))  # acks=all, min.insync.replicas=2
        # Replication is judged by what the followers' disks hold, not by an ISR that starts
        # full: every rf3 partition with records must have them on at least two replicas.
        on_disk = {n: c.read_replica(n, "rf3", range(6)) for n in c.ids}
        for p in range(6):
            held = [n for n in c.ids if on_disk[n][p]["records"]]
            lead = max((on_disk[n][p]["records"] for n in held), key=len, default=[])
            same = [n for n in held if on_disk[n][p]["records"] == lead]
            if lead and len(same) < 2:
                fail("rf3-%d: its records are on %s only, after acks=all with "
                     "min.insync.replicas=2" % (p, same))
        if not any(on_disk[n][p]["records"] for n in c.ids for p in range(6)):
            fail("rf3 holds no record on any node after 60 acknowledged records")
        sampler = Sampler(c, topics)
        sampler.start()
        try:
            before = {t: c.partitions(t) for t in topics}
            print("rf3's ISR: %s (replicated on disk: partitions must move)"
                  % {p: v["isr"] for p, v in before["rf3"].items()})
            ctl = c.wait_for_controller()
            victim = next(i for i in c.ids if i != ctl)
            before = fence_and_heal(c, victim, topics, before, "not the controller")

            # The controller cut off: the two others elect a new one, which fences it.
            ctl = c.wait_for_controller()
            fence_and_heal(c, ctl, topics, {t: c.partitions(t) for t in topics},
                           "the controller")
        finally:
            sampler.stop.set()
            sampler.join(5)
        got = consume_all(c, "rf1", c.node(1))
        if got != sorted(lines):
            fail("rf1 holds %d of the 60 records after healing" % len(got))
        print("ok: rf1's 60 records are all there after healing")
        got3 = consume_all(c, "rf3", c.node(1))
        if got3 != sorted(lines3):
            fail("rf3 holds %d of the 60 acknowledged records after healing" % len(got3))
        print("ok: rf3's 60 records are all there after two fencings")
        s = check(sampler.events)
        if s["split_leaders"]:
            fail("two leaders in one partition and epoch: %s" % s["examples"]["split_leaders"])
        print("ok: %d Metadata samples, never two leaders for one partition and epoch"
              % len(sampler.events))
    print("PASS: a node cut off from its peers is fenced, its partitions move, and it comes back")


if __name__ == "__main__":
    main()
