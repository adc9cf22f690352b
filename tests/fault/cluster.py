"""A `silt serve` cluster on 127.0.0.1 with the fault proxy on every link (Python 3 stdlib only).

Every directed peer link i -> j is a proxy link "p<i>-<j>": node i's --peers list names every
other node j at that link's address (node i binds only its own entry), so whatever node i sends
to node j, and j's answers on those connections, crosses the proxy. Each client listener has a
link "c<i>" too, and the node advertises the proxy's address, so clients reach node i only
through it. On link p<i>-<j>, direction "ab" is what i sends to j on connections i opened and
"ba" what j answers on them.

    with Cluster(3) as c:
        c.wait_for_controller()
        c.create_topic("t", partitions=6, replication_factor=3)
        c.isolate(1); ...; c.heal()

Every wait is bounded. stop() (the context manager, also on an exception) kills every process
it started; the work directory is removed unless keep=True or $SILT_FAULT_KEEP=1.
"""
import glob
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_client import Proxy, wait_until  # noqa: E402,F401

# Kafka error codes the harness looks at.
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6


class ClusterError(RuntimeError):
    pass


def free_port():
    """A free port on 127.0.0.1 below the kernel's ephemeral range (32768 and up on Linux), so
    that no outgoing connection of a concurrently running test takes it between this check and
    the node's bind (port 0 would hand out exactly those ephemeral ports)."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Metadata v7 over a raw socket: leader epochs, ISR and offline replicas, no client needed.

def _str(b, i):
    (n,) = struct.unpack_from(">h", b, i)
    i += 2
    if n < 0:
        return None, i
    return b[i:i + n].decode(), i + n


def _int32_array(b, i):
    (n,) = struct.unpack_from(">i", b, i)
    i += 4
    vals = list(struct.unpack_from(">%di" % max(n, 0), b, i)) if n > 0 else []
    return vals, i + 4 * max(n, 0)


def metadata(address, topics=None, timeout=5.0):
    """Metadata v7 from one node: {"brokers": {id: "host:port"}, "controller": id,
    "cluster_id": str, "topics": {name: {"error": code, "partitions": {p: {"error", "leader",
    "epoch", "replicas", "isr", "offline"}}}}}. None when the node does not answer in time."""
    host, port = address.rsplit(":", 1)
    client = b"silt-fault"
    body = struct.pack(">hhih", 3, 7, 1, len(client)) + client
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for t in topics:
            tb = t.encode()
            body += struct.pack(">h", len(tb)) + tb
    body += b"\x00"  # allow_auto_topic_creation = false
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv(s, 4)
            (size,) = struct.unpack(">i", head)
            b = _recv(s, size)
    except (OSError, ValueError, struct.error):
        return None
    try:
        i = 4 + 4  # correlation_id, throttle_time_ms
        (nb,) = struct.unpack_from(">i", b, i)
        i += 4
        brokers = {}
        for _ in range(nb):
            (node,) = struct.unpack_from(">i", b, i)
            h, i = _str(b, i + 4)
            (p,) = struct.unpack_from(">i", b, i)
            _, i = _str(b, i + 4)  # rack
            brokers[node] = "%s:%d" % (h, p)
        cluster_id, i = _str(b, i)
        (controller, nt) = struct.unpack_from(">ii", b, i)
        i += 8
        out_topics = {}
        for _ in range(nt):
            (terr,) = struct.unpack_from(">h", b, i)
            name, i = _str(b, i + 2)
            i += 1  # is_internal
            (np_,) = struct.unpack_from(">i", b, i)
            i += 4
            parts = {}
            for _ in range(np_):
                perr, pidx, leader, epoch = struct.unpack_from(">hiii", b, i)
                i += 14
                replicas, i = _int32_array(b, i)
                isr, i = _int32_array(b, i)
                offline, i = _int32_array(b, i)
                parts[pidx] = {"error": perr, "leader": leader, "epoch": epoch,
                               "replicas": replicas, "isr": isr, "offline": offline}
            out_topics[name] = {"error": terr, "partitions": parts}
        return {"brokers": brokers, "controller": controller, "cluster_id": cluster_id,
                "topics": out_topics}
    except (struct.error, UnicodeDecodeError, IndexError):
        return None


def _recv(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ValueError("connection closed")
        out += chunk
    return out


class Node:
    """One `silt serve` process of a Cluster. `address` is its client address through the proxy
    (what Metadata advertises); `direct` the node's own listener."""

    def __init__(self, cluster, node_id):
        self.cluster = cluster
        self.id = node_id
        self.data = os.path.join(cluster.work, "node%d" % node_id)
        self.env = {}  # extra environment of the process (an LD_PRELOAD shim)
        self.log_path = os.path.join(cluster.work, "node%d.log" % node_id)
        self.peer_port = free_port()
        self.client_port = free_port()
        self.proxy_port = None   # set by the cluster once the proxy link exists
        self.proc = None
        self.paused = False

    @property
    def address(self):
        return "127.0.0.1:%d" % self.proxy_port

    @property
    def direct(self):
        return "127.0.0.1:%d" % self.client_port

    def peers(self):
        """This node's --peers: its own peer address, every other node through the proxy."""
        c = self.cluster
        entries = []
        for j in c.ids:
            if j == self.id:
                entries.append("%d@127.0.0.1:%d" % (j, self.peer_port))
            else:
                entries.append("%d@127.0.0.1:%d" % (j, c.link_ports["p%d-%d" % (self.id, j)]))
        return ",".join(entries)

    def args(self):
        c = self.cluster
        a = [c.silt, "serve", "-d", self.data, "--listen", self.direct,
             "--advertised-listener", self.address, "--node-id", str(self.id),
             "--peers", self.peers(), "--cluster-id", c.cluster_id]
        for kv in c.sets:
            a += ["--set", kv]
        return a

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, wait=True):
        if self.alive():
            raise ClusterError("node %d is already running" % self.id)
        log = open(self.log_path, "ab")
        start = os.path.getsize(self.log_path)
        env = None
        if self.env:
            env = dict(os.environ)
            env.update(self.env)
        self.proc = subprocess.Popen(self.args(), stderr=log, stdout=log,
                                     stdin=subprocess.DEVNULL, env=env)
        log.close()
        self.paused = False
        if not wait:
            return
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                if b"listening on" in f.read():
                    return
            if self.proc.poll() is not None:
                raise ClusterError("node %d exited at start-up (rc %d):\n%s"
                                   % (self.id, self.proc.returncode, self.log_tail()))
            time.sleep(0.05)
        raise ClusterError("node %d did not start listening:\n%s" % (self.id, self.log_tail()))

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill9(self):
        """kill -9; the data dir stays for restart()."""
        if self.proc is None:
            return
        if self.paused:
            self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None
        self.paused = False

    def stop(self, timeout=20):
        """SIGTERM and wait; kill -9 if it takes longer than `timeout` seconds. Returns the exit
        status (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.paused:
            self.resume()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.proc = None
        return rc

    def restart(self, wait=True):
        """Starts the node again on the same data dir, ports and peers (after kill9 or stop)."""
        if self.alive():
            self.stop()
        self.start(wait=wait)

    def pause(self):
        """SIGSTOP: the process keeps its sockets but does nothing."""
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def metadata(self, topics=None, timeout=3.0):
        if not self.alive() or self.paused:
            return None
        return metadata(self.address, topics, timeout)


class Cluster:
    def __init__(self, n=3, silt=None, proxy=None, sets=(), cluster_id="fault-cluster",
                 keep=None):
        self.silt = silt or os.environ.get("SILT")
        if not self.silt:
            raise ClusterError("SILT must point to the silt binary")
        self.ids = list(range(1, n + 1))
        self.cluster_id = cluster_id
        self.sets = list(sets)
        self.work = tempfile.mkdtemp(prefix="silt-fault-")
        self.keep = keep if keep is not None else os.environ.get("SILT_FAULT_KEEP") == "1"
        self.proxy = Proxy(binary=proxy, log_path=os.path.join(self.work, "proxy.log"))
        self.link_ports = {}
        self.nodes = {i: Node(self, i) for i in self.ids}

    # --- life cycle

    def start(self):
        try:
            self.proxy.start()
            for i in self.ids:
                for j in self.ids:
                    if i != j:
                        name = "p%d-%d" % (i, j)
                        self.link_ports[name] = self.proxy.add(name, self.nodes[j].peer_port)
                name = "c%d" % i
                self.link_ports[name] = self.proxy.add(name, self.nodes[i].client_port)
                self.nodes[i].proxy_port = self.link_ports[name]
            for n in self.nodes.values():
                n.start()
        except Exception:
            self.stop()
            raise
        return self

    def stop(self):
        # SIGTERM to all first (they shut down in parallel), then wait for each.
        for n in self.nodes.values():
            try:
                if n.paused:
                    n.kill9()
                elif n.alive():
                    n.proc.send_signal(signal.SIGTERM)
            except Exception:  # noqa: BLE001 - clean up the rest regardless
                pass
        for n in self.nodes.values():
            try:
                n.stop(timeout=10)
            except Exception:  # noqa: BLE001
                if n.proc:
                    n.proc.kill()
                    n.proc.wait()
        self.proxy.stop()
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *rest):
        if exc_type is not None:
            self.keep = self.keep or os.environ.get("SILT_FAULT_KEEP_ON_FAILURE") == "1"
            for n in self.nodes.values():
                sys.stderr.write("--- node %d log ---\n%s" % (n.id, n.log_tail(25)))
        self.stop()
        return False

    def node(self, i):
        return self.nodes[i]

    def bootstrap(self, exclude=()):
        return ",".join(n.address for n in self.nodes.values() if n.id not in exclude)

    # --- faults (all through the proxy; heal() undoes every one)

    def _links_from(self, i, j):
        """(link, direction) pairs carrying bytes from node i to node j."""
        return [("p%d-%d" % (i, j), "ab"), ("p%d-%d" % (j, i), "ba")]

    def cut(self, i, j, both=True, mode="cut"):
        """No bytes from node i to node j (and from j to i with both=True): a black hole."""
        pairs = self._links_from(i, j) + (self._links_from(j, i) if both else [])
        for link, d in pairs:
            self.proxy.set(link, d, mode)

    def cut_from_peers(self, i, direction="both", mode="cut"):
        """Node i loses its peers: "out" = what it sends is dropped, "in" = what they send is
        dropped, "both". Clients still reach it."""
        for j in self.ids:
            if j == i:
                continue
            if direction in ("out", "both"):
                self.cut(i, j, both=False, mode=mode)
            if direction in ("in", "both"):
                self.cut(j, i, both=False, mode=mode)

    def isolate(self, i, mode="cut"):
        """Node i reaches nobody and nobody reaches it, clients included."""
        self.cut_from_peers(i, "both", mode=mode)
        self.proxy.set("c%d" % i, "both", mode)

    def slow(self, delay_ms=None, throttle_bps=None, links="*"):
        """Delay and/or throttle links (default: every link, both ways)."""
        if delay_ms is not None:
            self.proxy.set(links, "both", "delay", delay_ms)
        if throttle_bps is not None:
            self.proxy.set(links, "both", "throttle", throttle_bps)

    def heal(self):
        self.proxy.set("*", "both", "pass")

    # --- observing

    def metadata(self, topics=None, exclude=()):
        """Metadata from the first live node that answers."""
        for n in self.nodes.values():
            if n.id in exclude:
                continue
            md = n.metadata(topics)
            if md is not None:
                return md
        return None

    def controller(self, exclude=()):
        """The controller id agreed by every live node not in `exclude`, else None."""
        seen = set()
        for n in self.nodes.values():
            if n.id in exclude or not n.alive() or n.paused:
                continue
            md = n.metadata()
            if md is None:
                return None
            seen.add(md["controller"])
        if len(seen) == 1:
            c = seen.pop()
            return c if c in self.ids else None
        return None

    def wait_for_controller(self, seconds=30, exclude=(), not_=None):
        c = wait_until(lambda: (lambda x: x if x and x != not_ else None)(
            self.controller(exclude)), seconds, step=0.1)
        if not c:
            raise ClusterError("no controller within %d s" % seconds)
        return c

    def wait_for_brokers(self, count, seconds=30, via=None):
        def ok():
            md = (via.metadata() if via else self.metadata())
            return md is not None and len(md["brokers"]) == count
        if not wait_until(ok, seconds, step=0.1):
            raise ClusterError("not %d brokers within %d s: %s" % (count, seconds,
                                                                    self.metadata()))

    def partitions(self, topic, via=None):
        """{partition: {...}} of `topic` from node `via` (or any node), or None."""
        md = via.metadata([topic]) if via else self.metadata([topic])
        if md is None or topic not in md["topics"] or md["topics"][topic]["error"] not in (0,):
            return None
        return md["topics"][topic]["partitions"]

    def leader(self, topic, partition, via=None):
        p = (self.partitions(topic, via) or {}).get(partition)
        return p["leader"] if p and p["leader"] >= 0 else None

    def leaders(self, topic, via=None):
        parts = self.partitions(topic, via)
        return None if parts is None else {p: v["leader"] for p, v in parts.items()}

    # --- admin and data (through the silt CLI)

    def run_silt(self, *args, timeout=60, check=True):
        r = subprocess.run([self.silt] + list(args), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise ClusterError("silt %s: rc %d %s%s" % (" ".join(args), r.returncode, r.stdout,
                                                       r.stderr))
        return r

    def create_topic(self, topic, partitions=6, replication_factor=3, configs=(), seconds=30):
        args = ["topic", "-b", self.bootstrap(), "create", topic, "--partitions",
                str(partitions), "--replication-factor", str(replication_factor)]
        for kv in configs:
            args += ["--config", kv]
        self.run_silt(*args)

        def everywhere():
            for n in self.nodes.values():
                if not n.alive():
                    continue
                parts = self.partitions(topic, via=n)
                if parts is None or len(parts) != partitions or \
                        any(p["leader"] < 0 for p in parts.values()):
                    return False
            return True
        if not wait_until(everywhere, seconds, step=0.1):
            raise ClusterError("topic %s not led everywhere within %d s" % (topic, seconds))

    def read_replica(self, node_id, topic, partitions):
        """Partition by partition, what node node_id's data dir holds, read off disk with
        `silt dump-segment --records --format json`: {partition: {"records": [(offset, value)],
        "batches": [(baseOffset, lastOffset, partitionLeaderEpoch, crc, size)]}}. A dump that
        fails (anything but exit 0, or 1 for damage it reports), or prints a line that is not
        a batch, raises ClusterError: a replica that cannot be read must never look empty."""
        out = {}
        for p in partitions:
            d = os.path.join(self.nodes[node_id].data, "%s-%d" % (topic, p))
            recs, batches = [], []
            for log in sorted(glob.glob(os.path.join(d, "*.log"))):
                r = self.run_silt("dump-segment", "--records", "--format", "json", log,
                                  check=False)
                if r.returncode not in (0, 1) and not os.path.exists(log):
                    continue  # deleted meanwhile (retention, a cut): not part of the replica
                if r.returncode not in (0, 1):
                    raise ClusterError("dump-segment %s: rc %d %s" % (log, r.returncode, r.stderr))
                for line in r.stdout.splitlines():
                    try:
                        b = json.loads(line)
                    except ValueError:
                        raise ClusterError("dump-segment %s printed a line that is not JSON: %r"
                                           % (log, line[:200]))
                    if "baseOffset" not in b:
                        raise ClusterError("dump-segment %s printed a line that is not a batch: "
                                           "%r" % (log, line[:200]))
                    batches.append((b["baseOffset"], b["lastOffset"],
                                    b.get("partitionLeaderEpoch"), b.get("crc"), b.get("size")))
                    for rec in b.get("records", []):
                        recs.append((rec["offset"], rec["value"]))
            out[p] = {"records": recs, "batches": batches}
        return out

    def replica_divergence(self, topic, high_watermarks):
        """Every replica's batches below the partition's high watermark must be the same (offsets,
        leader epoch, CRC, size: the same bytes). Returns a list of differences, empty when all
        replicas agree. `high_watermarks` is {partition: hw}; replicas are read off every node's
        data dir listed as a replica in Metadata."""
        parts = self.partitions(topic) or {}
        diffs = []
        for p, hw in sorted(high_watermarks.items()):
            replicas = parts.get(p, {}).get("replicas") or self.ids
            views = {}
            for n in replicas:
                got = self.read_replica(n, topic, [p])[p]["batches"]
                views[n] = [b for b in got if b[1] < hw]
            first = replicas[0]
            for n in replicas:
                # Every replica holds the log up to the high watermark (the last batch below it
                # ends at hw - 1): replicas that are equal because all are empty do not agree.
                if hw > 0 and (not views[n] or views[n][-1][1] != hw - 1):
                    diffs.append({"partition": p, "hw": hw, "replica": n,
                                  "batches": len(views[n]),
                                  "ends_at": views[n][-1][1] if views[n] else None,
                                  "why": "does not hold the log up to the high watermark"})
                elif n != first and views[n] != views[first]:
                    diffs.append({"partition": p, "hw": hw, "replica": n,
                                  "batches": len(views[n]), "vs": first,
                                  "vs_batches": len(views[first])})
        return diffs

    def replicated_partitions(self, topic, high_watermarks):
        """The partitions (with a high watermark above 0) whose records are on the disks of at
        least two of their replicas up to the high watermark: replication that happened, as
        opposed to an ISR that merely started full."""
        parts = self.partitions(topic) or {}
        out = []
        for p, hw in sorted(high_watermarks.items()):
            if hw <= 0:
                continue
            holders = 0
            for n in parts.get(p, {}).get("replicas") or self.ids:
                got = [b for b in self.read_replica(n, topic, [p])[p]["batches"] if b[1] < hw]
                if got and got[-1][1] == hw - 1:
                    holders += 1
            if holders >= 2:
                out.append(p)
        return out
