"""A node whose quorum is gone keeps answering what needs no quorum, at once.

Three `silt serve` nodes; the other two are stopped (SIGSTOP), so the node left has no
metadata quorum. Ten CreateTopics and three InitProducerId requests sent to it wait (on the
quorum, on the read barrier) on the request-handler pool; meanwhile, on other connections,
ApiVersions, Metadata of every topic, and Metadata asking to auto-create a new topic are each
answered within a second (a Metadata that auto-creates used to wait for the proposal on the io
thread, up to 15 s): the auto-creation is answered LEADER_NOT_AVAILABLE and goes on in the
background. Once the two nodes continue, the auto-created topic exists on every node, and every
waiting request got an answer."""
import os
import signal
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, recv_exact  # noqa: E402
from cluster_common import Cluster  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
LEADER_NOT_AVAILABLE = 5
BOUND_S = 1.0  # each answer that needs no quorum (they take about a millisecond)


def kstr(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def call(address, api_key, version, body, timeout=30):
    """One request on a new connection: the response body (after the correlation id)."""
    host, port = address.rsplit(":", 1)
    head = struct.pack(">hhi", api_key, version, 11) + kstr("nostall-test")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        r = recv_exact(s, size)
    assert struct.unpack(">i", r[:4])[0] == 11
    return r[4:]


def metadata_v4(address, topics, auto_create):
    """{topic: error_code} from Metadata v4 (topics None: every topic)."""
    body = (struct.pack(">i", -1) if topics is None else
            struct.pack(">i", len(topics)) + b"".join(kstr(t) for t in topics))
    body += struct.pack(">?", auto_create)
    r = call(address, 3, 4, body, timeout=20)
    pos = 4  # throttle_time_ms
    (nb,) = struct.unpack(">i", r[pos:pos + 4])
    pos += 4
    for _ in range(nb):
        pos += 4  # node_id
        (ln,) = struct.unpack(">h", r[pos:pos + 2])  # host
        pos += 2 + ln + 4  # port
        (ln,) = struct.unpack(">h", r[pos:pos + 2])  # rack
        pos += 2 + max(ln, 0)
    (ln,) = struct.unpack(">h", r[pos:pos + 2])  # cluster_id
    pos += 2 + max(ln, 0) + 4  # controller_id
    (nt,) = struct.unpack(">i", r[pos:pos + 4])
    pos += 4
    out = {}
    for _ in range(nt):
        (err, ln) = struct.unpack(">hh", r[pos:pos + 4])
        name = r[pos + 4:pos + 4 + ln].decode()
        pos += 4 + ln + 1  # is_internal
        (np_,) = struct.unpack(">i", r[pos:pos + 4])
        pos += 4
        for _ in range(np_):
            pos += 2 + 4 + 4  # error, partition, leader
            for _ in range(2):  # replicas, isr (offline replicas come with v5)
                (n,) = struct.unpack(">i", r[pos:pos + 4])
                pos += 4 + 4 * n
        out[name] = err
    return out


def timed(what, fn):
    t0 = time.monotonic()
    out = fn()
    took = time.monotonic() - t0
    return out, took


cluster = Cluster(SILT, "interop-nostall-1", prefix="silt-nostall-")
fail = cluster.fail
stopped = []
try:
    cluster.start_all()
    cluster.wait_registered()
    node = cluster.nodes[1]
    for i, n in cluster.nodes.items():
        if i != 1:
            n.proc.send_signal(signal.SIGSTOP)
            stopped.append(n)
    print("ok: nodes 2 and 3 stopped; node 1 has no metadata quorum")

    answers = {}

    def create(k):
        body = (struct.pack(">i", 1) + kstr("waits-%d" % k) + struct.pack(">ih", 1, 1) +
                struct.pack(">ii", 0, 0) + struct.pack(">i", 12000))
        try:
            answers["create-%d" % k] = call(node.address, 19, 0, body)
        except OSError as e:
            answers["create-%d" % k] = e

    def init_pid(k):
        try:
            answers["pid-%d" % k] = call(node.address, 22, 0, kstr(None) + struct.pack(">i", 60000))
        except OSError as e:
            answers["pid-%d" % k] = e

    waiters = ([threading.Thread(target=create, args=(k,)) for k in range(10)] +
               [threading.Thread(target=init_pid, args=(k,)) for k in range(3)])
    for t in waiters:
        t.start()
    time.sleep(0.5)  # they are all in: waiting on the quorum

    worst, codes = {}, {}
    for round_ in range(5):
        _, took = timed("apiversions", lambda: call(node.address, 18, 0, b"", timeout=20))
        worst["ApiVersions"] = max(worst.get("ApiVersions", 0), took)
        md, took = timed("metadata", lambda: metadata_v4(node.address, None, False))
        worst["Metadata (all topics)"] = max(worst.get("Metadata (all topics)", 0), took)
        name = "auto-%d" % round_
        md, took = timed("auto", lambda: metadata_v4(node.address, [name], True))
        worst["Metadata auto-creating a topic"] = max(
            worst.get("Metadata auto-creating a topic", 0), took)
        codes[name] = md.get(name)
        for what, took in worst.items():
            if took > BOUND_S:
                fail("%s took %.2f s on a node whose quorum is gone, with 13 requests waiting "
                     "on it (bound %.1f s)" % (what, took, BOUND_S))
    if any(c != LEADER_NOT_AVAILABLE for c in codes.values()):
        fail("Metadata auto-creating topics without a quorum answered %s, not "
             "LEADER_NOT_AVAILABLE" % codes)
    print("ok: with 13 requests waiting on the quorum, answered at once: %s"
          % ", ".join("%s %.1f ms" % (w, t * 1e3) for w, t in worst.items()))
    if any(not t.is_alive() for t in waiters[:10]):
        fail("a CreateTopics was answered without a quorum: %s" % answers)

    for n in stopped:
        n.proc.send_signal(signal.SIGCONT)
    stopped = []
    for t in waiters:
        t.join(40)
        if t.is_alive():
            fail("a request waiting on the quorum was never answered")
    errors = [k for k, v in answers.items() if isinstance(v, Exception)]
    if errors:
        fail("waiting requests lost their connection: %s" % {k: answers[k] for k in errors})
    print("ok: the quorum back, all 13 waiting requests were answered")

    def auto_everywhere():
        return all(metadata_v4(n.address, ["auto-0"], False).get("auto-0") == 0
                   for n in cluster.nodes.values())
    cluster.wait_for("the auto-created topic on every node", auto_everywhere, seconds=30)
    print("ok: the topic auto-created meanwhile exists on every node")
finally:
    for n in stopped:
        if n.proc:
            n.proc.send_signal(signal.SIGCONT)
    cluster.cleanup()
finish("a node without a quorum answers what needs none at once, and auto-creates later")
