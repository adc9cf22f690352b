"""The controller's decisions on a three-node cluster of `silt serve` processes.

Controlled shutdown: SIGTERM to a node that leads partitions of a replication-factor-3 topic
moves each of its leaderships to another in-sync replica, and takes it out of the ISRs, while the
process still runs (Metadata from another node shows it before the process exits); once it is
fenced its replicas are listed as offline_replicas, and a partition whose only in-sync replica
it was has no leader (LEADER_NOT_AVAILABLE) until it is back. Preferred leaders: when the node comes back
and rejoins the ISRs, leadership goes back to it (leader.imbalance.check.interval.seconds is 1
and leader.imbalance.per.broker.percentage 0 here). The controller's own shutdown moves its leaderships the same way. With
unclean.leader.election.enable a partition whose in-sync replicas are all gone is led by a live
replica; without it, it waits."""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip, skip_part  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

CLUSTER_ID = "interop-controller-1"
WORK = tempfile.mkdtemp(prefix="silt-controller-")
TOPIC = "moves"


from cluster_common import free_port  # noqa: E402  (below the ephemeral port range)


PEERS = {i: free_port() for i in (1, 2, 3)}
VOTERS = ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in PEERS.items())


class Node:
    def __init__(self, node_id):
        self.id = node_id
        self.data = os.path.join(WORK, "node%d" % node_id)
        self.log_path = os.path.join(WORK, "node%d.log" % node_id)
        self.proc = None
        self.address = None

    def start(self):
        log = open(self.log_path, "ab")
        start = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(
            [SILT, "serve", "-d", self.data, "--listen", "127.0.0.1:0", "--node-id",
             str(self.id), "--peers", VOTERS, "--cluster-id", CLUSTER_ID,
             "--set", "leader.imbalance.check.interval.seconds=1",
             # Every partition led elsewhere counts (Kafka's 10% would let the two partitions
             # of the test's topic stay away among the node's __consumer_offsets partitions).
             "--set", "leader.imbalance.per.broker.percentage=0"], stderr=log)
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                m = re.search(rb"listening on ([0-9.]+:[0-9]+)", f.read())
            if m:
                self.address = m.group(1).decode()
                return
            if self.proc.poll() is not None:
                fail("node %d exited at start-up" % self.id)
            time.sleep(0.05)
        fail("node %d did not start listening" % self.id)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


NODES = {i: Node(i) for i in (1, 2, 3)}


def fail(message):
    print("FAIL: " + message)
    for n in NODES.values():
        if os.path.exists(n.log_path):
            print("--- node %d log ---" % n.id)
            with open(n.log_path, errors="replace") as f:
                print("".join(f.readlines()[-30:]))
    cleanup()
    sys.exit(1)


def cleanup():
    for n in NODES.values():
        n.stop()
    shutil.rmtree(WORK, ignore_errors=True)


def wait_for(what, predicate, seconds=20, step=0.2):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(step)
    fail("timed out waiting for " + what)


# ---- Metadata v5 by hand (it carries offline_replicas; kcat -L does not show them) ----

def _str(b, o):
    (n,) = struct.unpack_from(">h", b, o)
    o += 2
    if n < 0:
        return None, o
    return b[o:o + n].decode(), o + n


def _ints(b, o):
    (n,) = struct.unpack_from(">i", b, o)
    o += 4
    v = list(struct.unpack_from(">%di" % n, b, o)) if n > 0 else []
    return v, o + 4 * max(n, 0)


def metadata(node, topic=TOPIC):
    """{brokers: set, controller: id, partitions: {p: {error, leader, replicas, isr,
    offline}}} from `node`, or None when it does not answer."""
    host, port = node.address.rsplit(":", 1)
    client = b"controller-test"
    body = struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic.encode() + b"\x00"
    req = struct.pack(">hhih", 3, 5, 7, len(client)) + client + body
    try:
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            head = b""
            while len(head) < 4:
                chunk = s.recv(4 - len(head))
                if not chunk:
                    return None
                head += chunk
            (size,) = struct.unpack(">i", head)
            b = b""
            while len(b) < size:
                chunk = s.recv(size - len(b))
                if not chunk:
                    return None
                b += chunk
    except OSError:
        return None
    o = 4 + 4  # correlation id, throttle time
    (nb,) = struct.unpack_from(">i", b, o)
    o += 4
    brokers = set()
    for _ in range(nb):
        (bid,) = struct.unpack_from(">i", b, o)
        o += 4
        _, o = _str(b, o)
        o += 4
        _, o = _str(b, o)
        brokers.add(bid)
    _, o = _str(b, o)  # cluster id
    (controller,) = struct.unpack_from(">i", b, o)
    o += 4
    (nt,) = struct.unpack_from(">i", b, o)
    o += 4
    parts = {}
    for _ in range(nt):
        (terr,) = struct.unpack_from(">h", b, o)
        o += 2
        _, o = _str(b, o)
        o += 1  # is_internal
        (np_,) = struct.unpack_from(">i", b, o)
        o += 4
        for _ in range(np_):
            err, p, leader = struct.unpack_from(">hii", b, o)
            o += 10
            replicas, o = _ints(b, o)
            isr, o = _ints(b, o)
            offline, o = _ints(b, o)
            parts[p] = {"error": err, "leader": leader, "replicas": replicas, "isr": isr,
                        "offline": offline}
    return {"brokers": brokers, "controller": controller, "partitions": parts}


try:
    for n in NODES.values():
        n.start()
    wait_for("three registered brokers", lambda: all(
        (metadata(n) or {}).get("brokers") == {1, 2, 3} for n in NODES.values()))

    subprocess.run([SILT, "topic", "-b", NODES[1].address, "create", TOPIC, "--partitions", "6",
                    "--replication-factor", "3"], check=True, capture_output=True, timeout=60)
    subprocess.run([SILT, "topic", "-b", NODES[2].address, "create", "solo", "--partitions", "3",
                    "--replication-factor", "1"], check=True, capture_output=True, timeout=60)
    for name, extra in (("dirty", ["--config", "unclean.leader.election.enable=true"]),
                        ("clean", [])):
        subprocess.run([SILT, "topic", "-b", NODES[3].address, "create", name, "--partitions",
                        "3", "--replication-factor", "2"] + extra, check=True,
                       capture_output=True, timeout=60)

    def placed():
        views = [metadata(n) for n in NODES.values()]
        if any(v is None or len(v["partitions"]) != 6 for v in views):
            return None
        if any(v["partitions"] != views[0]["partitions"] for v in views):
            return None
        return views[0]
    md = wait_for("every node to agree on %s's placement" % TOPIC, placed)
    preferred = {p: v["replicas"][0] for p, v in md["partitions"].items()}
    led = {}
    for p, v in md["partitions"].items():
        if v["leader"] != v["replicas"][0] or sorted(v["isr"]) != [1, 2, 3]:
            fail("new partition %s-%d: %s" % (TOPIC, p, v))
        led.setdefault(v["leader"], []).append(p)
    if sorted(len(ps) for ps in led.values()) != [2, 2, 2]:
        fail("leaders of %s are not spread two per node: %s" % (TOPIC, led))
    print("ok: %s placed with replication factor 3, two leaders per node, full ISRs" % TOPIC)

    # Controlled shutdown of a node that leads partitions (not the controller: its own
    # shutdown would also elect a new controller).
    victim = next(n for i, n in NODES.items() if i != md["controller"])
    others = [n for n in NODES.values() if n is not victim]
    mine = led[victim.id]
    solo = wait_for("solo's placement", lambda: (lambda v: v if v and len(v["partitions"]) == 3
                                                  else None)(metadata(others[0], "solo")))
    alone = next(p for p, q in solo["partitions"].items() if q["leader"] == victim.id)
    t0 = time.time()
    victim.proc.send_signal(signal.SIGTERM)
    seen = None
    while time.time() < t0 + 15:
        alive = victim.proc.poll() is None
        v = metadata(others[0])
        if v is not None and all(v["partitions"][p]["leader"] not in (victim.id, -1) and
                                 victim.id not in v["partitions"][p]["isr"] for p in mine):
            seen = (alive, time.time() - t0, v)
            break
        if not alive:
            break
        time.sleep(0.02)
    if seen is None:
        fail("node %d's leaderships %s did not move after SIGTERM" % (victim.id, mine))
    if not seen[0]:
        fail("node %d exited before Metadata showed its leaderships moved" % victim.id)
    rc = victim.proc.wait(timeout=20)
    victim.proc = None
    if rc != 0:
        fail("node %d exited with %d after SIGTERM" % (victim.id, rc))
    if "controlled shutdown: this node leads no partition now" not in victim.log():
        fail("node %d's log does not report its controlled shutdown" % victim.id)
    for p in mine:
        new = seen[2]["partitions"][p]
        if new["leader"] != next(r for r in new["replicas"] if r != victim.id):
            fail("%s-%d went to %d, not the first other in-sync replica (%s)"
                 % (TOPIC, p, new["leader"], new["replicas"]))
    print("ok: SIGTERM to node %d moved its leaderships %s in %.2fs, before it exited"
          % (victim.id, mine, seen[1]))

    # Once fenced (a session after its last heartbeat) it is no longer listed, and its
    # replicas are offline.
    def fenced():
        v = metadata(others[0])
        return v if v and v["brokers"] == {n.id for n in others} and all(
            victim.id in q["offline"] for q in v["partitions"].values()) else None
    v = wait_for("node %d to be fenced and its replicas offline" % victim.id, fenced)
    if any(q["error"] != 0 or q["leader"] == victim.id for q in v["partitions"].values()):
        fail("after node %d's shutdown: %s" % (victim.id, v["partitions"]))
    lines = "".join("k%d:v%d\n" % (i, i) for i in range(60))
    r = subprocess.run(["kcat", "-b", others[1].address, "-P", "-t", TOPIC, "-K", ":"],
                       input=lines, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("producing to %s after the shutdown: %s" % (TOPIC, r.stderr))
    print("ok: node %d fenced, listed in offline_replicas; %s still takes records"
          % (victim.id, TOPIC))

    # A partition whose only in-sync replica went away has no leader (LEADER_NOT_AVAILABLE, 5)
    # and keeps its ISR: nobody else may lead it.
    q = metadata(others[0], "solo")["partitions"][alone]
    if q["leader"] != -1 or q["error"] != 5 or q["isr"] != [victim.id] or \
            q["offline"] != [victim.id]:
        fail("solo-%d after node %d's shutdown: %s" % (alone, victim.id, q))
    print("ok: solo-%d, whose only in-sync replica was node %d, has no leader "
          "(LEADER_NOT_AVAILABLE) and keeps its ISR" % (alone, victim.id))

    # Preferred leaders come back: the restarted node leads its partitions again once it is in
    # their ISRs (followers rejoin the ISR when they have caught up).
    victim.start()
    wait_for("node %d to lead solo-%d again once it is back" % (victim.id, alone), lambda: all(
        (metadata(n, "solo") or {"partitions": {}})["partitions"].get(alone, {}).get("leader") ==
        victim.id for n in NODES.values() if n.proc))
    print("ok: node %d, back, leads solo-%d again" % (victim.id, alone))

    def rejoined():
        v = metadata(others[0])
        return v and all(victim.id in v["partitions"][p]["isr"] for p in mine)
    deadline = time.time() + 40
    while time.time() < deadline and not rejoined():
        time.sleep(0.2)
    if not rejoined():
        skip_part("node %d did not rejoin the ISRs of %s within 20s (no follower caught up), so "
                  "the preferred leader's return was not checked" % (victim.id, mine))
    else:
        wait_for("node %d to lead %s again" % (victim.id, mine), lambda: all(
            (metadata(n) or {"partitions": {}})["partitions"].get(p, {}).get("leader") ==
            preferred[p] for n in NODES.values() for p in mine), seconds=40)
        print("ok: node %d rejoined the ISRs and leads its preferred partitions again"
              % victim.id)

    # The controller's own controlled shutdown: it moves its leaderships itself, then goes.
    md = wait_for("a controller", lambda: (lambda v: v if v and v["controller"] > 0 else None)(
        metadata(others[0])))
    boss = NODES[md["controller"]]
    rest = [n for n in NODES.values() if n is not boss]
    held = [p for p, q in md["partitions"].items() if q["leader"] == boss.id]
    boss.proc.send_signal(signal.SIGTERM)
    t0 = time.time()
    seen = None
    while time.time() < t0 + 15:
        alive = boss.proc.poll() is None
        views = [metadata(n) for n in rest]
        if any(v is not None and all(v["partitions"][p]["leader"] not in (boss.id, -1)
                                     for p in held) for v in views):
            seen = alive
            break
        if not alive:
            break
        time.sleep(0.02)
    if not seen:
        fail("the controller (node %d) did not move its leaderships %s before it exited"
             % (boss.id, held))
    if boss.proc.wait(timeout=20) != 0:
        fail("node %d exited with an error after SIGTERM" % boss.id)
    boss.proc = None
    print("ok: the controller (node %d) moved its leaderships %s before it exited"
          % (boss.id, held))

    # Unclean election. The partitions of "dirty" and "clean" (replication factor 2) on the
    # restarted node V and the third node O: V is back in their ISRs (it caught up). kill -9 of V
    # takes it out (fenced, it leaves the ISRs: O alone); then kill -9 of O, the last in-sync
    # replica, and V comes back: "clean"'s partition has no leader and keeps its ISR [O];
    # "dirty"'s, which allows an unclean election, is led by V with an ISR of V alone, and the
    # controller says so loudly.
    boss.start()
    wait_for("node %d to register again" % boss.id,
             lambda: (metadata(victim) or {}).get("brokers") == {1, 2, 3})
    third = next(n for n in NODES.values() if n is not victim and n is not boss)

    def pair(topic):
        v = metadata(victim, topic)
        return next(p for p, q in v["partitions"].items()
                    if sorted(q["replicas"]) == sorted([victim.id, third.id]))
    dirty, clean = pair("dirty"), pair("clean")
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    victim.proc = None

    def third_alone():
        for topic, p in (("dirty", dirty), ("clean", clean)):
            q = (metadata(boss, topic) or {"partitions": {}})["partitions"].get(p)
            if not q or q["isr"] != [third.id] or q["leader"] != third.id:
                return False
        return True
    wait_for("node %d alone in the ISRs after node %d's kill" % (third.id, victim.id),
             third_alone, seconds=30)
    third.proc.send_signal(signal.SIGKILL)
    third.proc.wait()
    third.proc = None
    victim.start()

    def unclean_done():
        d = (metadata(victim, "dirty") or {"partitions": {}})["partitions"].get(dirty)
        c = (metadata(victim, "clean") or {"partitions": {}})["partitions"].get(clean)
        return d and c and d["leader"] == victim.id and c["leader"] == -1 and (d, c)
    d, c = wait_for("the elections after node %d's kill" % third.id, unclean_done, seconds=30)
    if d["isr"] != [victim.id] or c["isr"] != [third.id] or c["error"] != 5:
        fail("after node %d's kill: dirty-%d %s, clean-%d %s" % (third.id, dirty, d, clean, c))
    if not any("UNCLEAN leader election of dirty-%d" % dirty in n.log() for n in NODES.values()):
        fail("no node logged the unclean election of dirty-%d" % dirty)
    print("ok: kill -9 of node %d: dirty-%d elected node %d uncleanly (ISR [%d]); clean-%d has "
          "no leader and keeps ISR [%d]" % (third.id, dirty, victim.id, victim.id, clean,
                                            third.id))
finally:
    pass

cleanup()
finish("the controller moves leaderships on controlled shutdown and gives them back")
