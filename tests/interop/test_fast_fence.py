"""The controller fences a broker whose process is gone without waiting out its session, and
only that one.

Three `silt serve` nodes with broker.session.timeout.ms=20000. A non-controller broker that
leads partitions is killed (-9): its listener then refuses connections, and the controller,
which probes the listener of a broker silent for two heartbeat intervals, fences it and moves
its leaderships well within 6 s (a session would take 20). Then another non-controller broker
is paused (SIGSTOP): its sockets still accept connections, so it is not fenced in the same
6 s: a slow or paused broker keeps its whole session. Once resumed it is still registered and
unfenced, and the killed one, restarted, is unfenced again."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import finish, skip  # noqa: E402
from cluster_common import Cluster, kcat_metadata, kcat_partitions  # noqa: E402
import shutil  # noqa: E402

SILT = os.environ.get("SILT")
if not SILT:
    print("FAIL: SILT must point to the silt binary")
    sys.exit(1)
if shutil.which("kcat") is None:
    skip("kcat is not installed (apt-get install kcat)")

FAST_S = 6.0  # a session is 20 s here; the refused probe fences in about half a second

CLUSTER = Cluster(SILT, "fast-fence-1", prefix="silt-fast-fence-",
                  extra_args=["--set", "broker.session.timeout.ms=20000"])
NODES = CLUSTER.nodes
fail = CLUSTER.fail


def brokers_of(node):
    md = kcat_metadata(node)
    return None if md is None else {b["id"] for b in md["brokers"]}


try:
    CLUSTER.start_all()
    CLUSTER.wait_registered()
    controller = kcat_metadata(NODES[1])["controllerid"]
    others = [i for i in NODES if i != controller]
    victim, sleeper = others[0], others[1]
    CLUSTER.silt_cmd("topic", "-b", NODES[controller].address, "create", "ff",
                     "--partitions", "6", "--replication-factor", "3")

    def leads_some():
        parts = kcat_partitions(kcat_metadata(NODES[controller], "ff"), "ff")
        return parts and any(p["leader"] == victim for p in parts.values())
    CLUSTER.wait_for("node %d to lead a partition of ff" % victim, leads_some)

    killed = time.monotonic()
    NODES[victim].kill9()

    def victim_gone():
        b = brokers_of(NODES[controller])
        parts = kcat_partitions(kcat_metadata(NODES[controller], "ff"), "ff")
        return (b is not None and victim not in b and parts is not None and
                all(p["leader"] not in (victim, -1) for p in parts.values()))
    CLUSTER.wait_for("node %d to be fenced and its leaderships moved" % victim, victim_gone,
                     seconds=FAST_S, interval=0.1)
    took = time.monotonic() - killed
    print("ok: killed node %d fenced and replaced as leader after %.2f s (session: 20 s)" %
          (victim, took))
    with open(NODES[controller].log_path, errors="replace") as f:
        if "listener refuses connections" not in f.read():
            fail("the controller's log does not say why node %d was fenced early" % victim)

    os.kill(NODES[sleeper].proc.pid, signal.SIGSTOP)
    try:
        paused = time.monotonic()
        while time.monotonic() - paused < FAST_S:
            b = brokers_of(NODES[controller])
            if b is not None and sleeper not in b:
                fail("paused node %d was fenced after %.2f s: a paused broker's listener "
                     "accepts connections, so it must keep its session" %
                     (sleeper, time.monotonic() - paused))
            time.sleep(0.25)
    finally:
        os.kill(NODES[sleeper].proc.pid, signal.SIGCONT)
    print("ok: paused node %d kept its session for %.0f s" % (sleeper, FAST_S))

    NODES[victim].start()
    CLUSTER.wait_for("all three brokers again", lambda: brokers_of(NODES[controller]) ==
                     set(NODES), seconds=30)
    print("ok: the killed node, restarted, is unfenced again")
except SystemExit:
    raise
except Exception:
    import traceback
    fail(traceback.format_exc())

CLUSTER.cleanup()
finish("a broker whose listener refuses connections is fenced early, a paused one is not")
