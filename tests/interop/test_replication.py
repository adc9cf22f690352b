"""Replication on a three-node cluster: a topic of 6 partitions, replication factor 3,
min.insync.replicas 2.

kcat produces with acks=all; every node's data dir ends up with byte-identical batches up to the
high watermark (silt dump-segment --format json); kill -9 of a partition leader: a new leader from
the ISR serves every acknowledged record and acks=all resumes; a follower stopped (SIGSTOP) past
replica.lag.time.max.ms leaves the ISR and comes back after SIGCONT; a leader that took acks=1
records alone and died truncates them by leader epoch when it comes back as a follower."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

CLUSTER_ID = "interop-replication-1"
WORK = tempfile.mkdtemp(prefix="silt-replication-")
TOPIC = "replicated"
LAG_MS = 2500
# Longer than the lag, so that a stopped follower leaves the ISR by its leader's AlterPartition
# before the controller fences it.
SESSION_MS = 6000


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
        self.port = 0

    def args(self):
        listen = "127.0.0.1:%d" % self.port
        return [SILT, "serve", "-d", self.data, "--listen", listen, "--node-id", str(self.id),
                "--peers", VOTERS, "--cluster-id", CLUSTER_ID,
                "--set", "replica.lag.time.max.ms=%d" % LAG_MS,
                "--set", "broker.session.timeout.ms=%d" % SESSION_MS]

    def start(self):
        if self.port == 0:
            self.port = free_port()  # the same client port across restarts
        log = open(self.log_path, "ab")
        start = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(self.args(), stderr=log)
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

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


NODES = {i: Node(i) for i in (1, 2, 3)}


def fail(message):
    print("FAIL: " + message)
    for n in NODES.values():
        if os.path.exists(n.log_path):
            print("--- node %d log ---" % n.id)
            with open(n.log_path, errors="replace") as f:
                print("".join(f.readlines()[-40:]))
    cleanup()
    sys.exit(1)


def cleanup():
    for n in NODES.values():
        n.stop()
    shutil.rmtree(WORK, ignore_errors=True)


def metadata(node, topic=None):
    cmd = ["kcat", "-b", node.address, "-L", "-J", "-m", "5"]
    if topic:
        cmd += ["-t", topic]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def partitions(node):
    """{partition: (leader, sorted isr)} of TOPIC as `node` reports it, or None."""
    md = metadata(node, TOPIC)
    if md is None:
        return None
    for t in md.get("topics", []):
        if t["topic"] == TOPIC and not t.get("error"):
            return {p["partition"]: (p["leader"], sorted(r["id"] for r in p.get("isrs", [])))
                    for p in t["partitions"]}
    return None


def wait_for(what, predicate, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.2)
    fail("timed out waiting for " + what)


def silt(*args, check=True):
    out = subprocess.run([SILT] + list(args), capture_output=True, text=True, timeout=60)
    if check and out.returncode != 0:
        fail("silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
    return out


def produce(node, values, timeout=60):
    """kcat with acks=all and idempotence off; returns (returncode, stderr)."""
    p = subprocess.run(["kcat", "-b", node.address, "-P", "-t", TOPIC, "-K:",
                        "-X", "acks=all", "-X", "message.timeout.ms=20000"],
                       input="".join("k%s:%s\n" % (v, v) for v in values),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr


def consume_all(node):
    c = subprocess.run(["kcat", "-b", node.address, "-C", "-t", TOPIC, "-o", "beginning", "-e",
                        "-q", "-f", "%s\n"], capture_output=True, text=True, timeout=60)
    if c.returncode != 0:
        return None
    return c.stdout.split()


def consume_expecting(node, expected, seconds=30):
    """Consumes everything until it is `expected` (a new leader's HW reaches what was acked once
    its in-sync followers have fetched from it), or fails saying what was there."""
    deadline = time.time() + seconds
    got = None
    while time.time() < deadline:
        got = consume_all(node)
        if got is not None and sorted(got) == sorted(expected):
            return got
        time.sleep(0.5)
    fail("the topic holds %s records, not the %d acked: missing %s, unexpected %s"
         % (None if got is None else len(got), len(expected),
            sorted(set(expected) - set(got or []))[:5], sorted(set(got or []) - set(expected))[:5]))


def batches(node, part):
    """The JSON lines of every batch of TOPIC-part in `node`'s data dir, in offset order."""
    out = []
    for f in sorted(glob.glob(os.path.join(node.data, "%s-%d" % (TOPIC, part), "*.log"))):
        r = silt("dump-segment", "--format", "json", f)
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def batch_key(b):
    # Everything a batch is, minus where it sits in the file.
    return json.dumps({k: v for k, v in b.items() if k != "position"},
                      sort_keys=True)


def identical_replicas(nodes, committed):
    """True when, for every partition, every node holds the same batches below `committed[p]`."""
    for part, upto in committed.items():
        views = []
        for n in nodes:
            bs = [b for b in batches(n, part) if b.get("baseOffset", 0) < upto]
            views.append([batch_key(b) for b in bs])
        if any(v != views[0] for v in views) or (upto > 0 and not views[0]):
            return False
    return True


def end_offsets(node):
    """{partition: high watermark}: ListOffsets latest, as consumers see it."""
    out = {}
    md = partitions(node)
    for part in md:
        c = subprocess.run(["kcat", "-b", node.address, "-Q", "-t", "%s:%d:-1" % (TOPIC, part)],
                           capture_output=True, text=True, timeout=30)
        m = re.search(r"offset (-?\d+)", c.stdout, re.I)
        if not m:
            return None
        out[part] = int(m.group(1))
    return out


try:
    for n in NODES.values():
        n.start()

    def all_registered():
        for n in NODES.values():
            md = metadata(n)
            if md is None or len(md["brokers"]) != 3:
                return False
        return True
    wait_for("three registered brokers", all_registered)

    silt("topic", "-b", NODES[1].address, "create", TOPIC, "--partitions", "6",
         "--replication-factor", "3", "--config", "min.insync.replicas=2")
    start = wait_for("the topic on every node", lambda: all(partitions(n) for n in NODES.values())
                     and partitions(NODES[1]))
    if any(isr != [1, 2, 3] for _, isr in start.values()):
        fail("a new topic's ISR is not every replica: %s" % start)
    print("ok: 6 partitions of replication factor 3, every replica in sync: %s" % start)

    # acks=all through node 2.
    first = ["a%d" % i for i in range(300)]
    rc, err = produce(NODES[2], first)
    if rc != 0:
        fail("kcat acks=all produce: " + err)
    hw = wait_for("the high watermarks", lambda: end_offsets(NODES[1]))
    if sum(hw.values()) != len(first):
        fail("high watermarks %s do not add up to the %d records acked" % (hw, len(first)))
    wait_for("byte-identical replicas below the high watermark",
             lambda: identical_replicas(list(NODES.values()), hw))
    print("ok: %d records acked with acks=all; every node holds the same batches below the HW %s"
          % (len(first), hw))

    # kill -9 of partition 0's leader: a new leader from the ISR serves everything acked.
    old = start[0][0]
    NODES[old].kill9()
    survivors = [n for i, n in NODES.items() if i != old]

    def moved():
        for n in survivors:
            ps = partitions(n)
            if ps is None or any(l in (old, -1) for l, _ in ps.values()):
                return False
        return True
    t0 = time.time()
    wait_for("new leaders for node %d's partitions" % old, moved)
    print("ok: node %d killed; its partitions have new leaders after %.1fs"
          % (old, time.time() - t0))
    consume_expecting(survivors[0], first)
    second = ["b%d" % i for i in range(200)]
    t1 = time.time()
    rc, err = produce(survivors[1], second)
    if rc != 0:
        fail("acks=all produce with two replicas left: " + err)
    print("ok: every acked record served by the new leaders; acks=all resumed (%.1fs)"
          % (time.time() - t1))

    # The killed node comes back on its data dir, truncates and catches up, rejoins every ISR.
    NODES[old].start()

    def all_in_sync():
        ps = partitions(NODES[1] if old != 1 else NODES[2])
        return ps is not None and all(isr == [1, 2, 3] for _, isr in ps.values())
    wait_for("node %d back in every ISR" % old, all_in_sync, seconds=60)
    hw = wait_for("the high watermarks", lambda: end_offsets(survivors[0]))
    wait_for("byte-identical replicas after the restart",
             lambda: identical_replicas(list(NODES.values()), hw))
    print("ok: node %d restarted, back in every ISR, its batches identical below the HW" % old)

    # A follower stopped past replica.lag.time.max.ms leaves the ISR; back after SIGCONT.
    ps = partitions(NODES[1])
    leaders = {l for l, _ in ps.values()}
    stopped = NODES[3] if 3 in leaders and len(leaders) > 1 else NODES[max(leaders)]
    others = [n for n in NODES.values() if n is not stopped]
    stopped.signal(signal.SIGSTOP)
    t2 = time.time()
    third = ["c%d" % i for i in range(200)]
    rc, err = produce(others[0], third, timeout=120)
    if rc != 0:
        fail("acks=all produce while node %d is stopped: %s" % (stopped.id, err))

    def left():
        ps = partitions(others[0])
        return ps is not None and all(stopped.id not in isr and l != stopped.id
                                      for l, isr in ps.values())
    wait_for("node %d to leave every ISR" % stopped.id, left, seconds=LAG_MS / 1000 + 30)
    shrunk = 0
    for n in others:
        with open(n.log_path, errors="replace") as f:
            shrunk += len(re.findall(r"shrinking the ISR \[[0-9,]*\] -> \[[0-9,]*\]", f.read()))
    if shrunk == 0:
        fail("no leader shrank an ISR itself (AlterPartition) while node %d was stopped"
             % stopped.id)
    print("ok: node %d stopped; out of every ISR after %.1fs; acks=all went on"
          % (stopped.id, time.time() - t2))
    stopped.signal(signal.SIGCONT)
    wait_for("node %d back in every ISR" % stopped.id, all_in_sync, seconds=60)
    got = consume_expecting(others[1], first + second + third)
    hw = wait_for("the high watermarks", lambda: end_offsets(others[0]))
    wait_for("byte-identical replicas at the end",
             lambda: identical_replicas(list(NODES.values()), hw))
    print("ok: node %d back in every ISR after SIGCONT; all %d acked records there, replicas "
          "identical" % (stopped.id, len(got)))

    # Truncation by leader epoch. Both followers of partition 0 stop; its leader takes records
    # with acks=1, then dies. The first of them may still reach the followers (answers to the
    # fetches they had waiting at the leader sit in their sockets); the second, taken once no
    # fetch of theirs is waiting, only the leader has. A follower becomes leader in a new epoch
    # and takes acks=all records; the old leader comes back, asks where its epoch ends and cuts
    # what the new leader never had.
    ps = wait_for("leaders of every partition", lambda: partitions(NODES[1]))
    lead = NODES[ps[0][0]]
    followers = [n for n in NODES.values() if n is not lead]
    for n in followers:
        n.signal(signal.SIGSTOP)

    def alone(prefix):
        return subprocess.run(["kcat", "-b", lead.address, "-P", "-t", TOPIC, "-p", "0",
                               "-X", "acks=1", "-X", "message.timeout.ms=2000"],
                              input="".join("%s%d\n" % (prefix, i) for i in range(20)),
                              capture_output=True, text=True, timeout=60)
    alone("x")
    time.sleep(0.3)
    p = alone("y")
    before = batches(lead, 0)
    lead.kill9()
    theirs = max(b["lastOffset"] for b in batches(followers[0], 0)) + 1
    for n in followers:
        n.signal(signal.SIGCONT)
    mine = max(b["lastOffset"] for b in before) + 1
    if mine < theirs + 40:
        fail("the leader did not take both acks=1 produces (log end %d, followers' %d): kcat rc %d,"
             " %s" % (mine, theirs, p.returncode, p.stderr))
    print("ok: partition 0's leader %d wrote offsets %d..%d with its followers stopped, then "
          "was killed" % (lead.id, theirs, mine - 1))

    def new_leader():
        ps = partitions(followers[0])
        return ps is not None and ps[0][0] in (followers[0].id, followers[1].id)
    wait_for("a new leader of partition 0", new_leader, seconds=60)
    fourth = ["d%d" % i for i in range(100)]
    rc, err = produce(followers[0], fourth, timeout=120)
    if rc != 0:
        fail("acks=all produce after the second failover: " + err)
    lead.start()

    def rejoined():
        ps = partitions(followers[0])
        return ps is not None and all(isr == [1, 2, 3] for _, isr in ps.values())
    wait_for("node %d back in every ISR" % lead.id, rejoined, seconds=60)
    hw = wait_for("the high watermarks", lambda: end_offsets(followers[0]))
    wait_for("byte-identical replicas after the truncation",
             lambda: identical_replicas(list(NODES.values()), hw))
    acked = first + second + third + fourth
    deadline = time.time() + 30
    while True:
        got = consume_all(followers[1]) or []
        if set(acked) <= set(got) or time.time() > deadline:
            break
        time.sleep(0.5)
    missing = set(acked) - set(got)
    if missing:
        fail("acked records missing after the truncation: %s" % sorted(missing)[:5])
    if any(v.startswith("y") for v in got):
        fail("records only the dead leader had are served: %s"
             % [v for v in got if v.startswith("y")][:5])
    if len(got) != len(set(got)) or set(got) - set(acked) - {"x%d" % i for i in range(20)}:
        fail("duplicates or strangers among the records served")
    print("ok: node %d truncated what the new leader never had (%d records); replicas identical, "
          "every acks=all record there" % (lead.id, 20))
finally:
    pass

cleanup()
finish("replication on a three-node cluster")
