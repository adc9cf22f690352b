"""Shared by the cluster tests and bench/cluster_bench.py: three (or n) `silt serve` processes
on 127.0.0.1 as one cluster with static peers (`--peers 1@127.0.0.1:P1,...`), each over its own
data dir in one temp directory, each with its own log file.

    cluster = Cluster(silt, cluster_id="...")
    cluster.start_all()            # returns once every node listens
    cluster.wait_registered()      # every node's Metadata lists every broker
    ...
    cluster.cleanup()              # SIGTERM (then SIGKILL) every node, remove the temp dir

`fail()` prints the tail of every node's log, cleans up and exits 1."""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


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


class Node:
    def __init__(self, cluster, node_id, listen_port=0):
        self.cluster = cluster
        self.id = node_id
        self.data = os.path.join(cluster.work, "node%d" % node_id)
        self.log_path = os.path.join(cluster.work, "node%d.log" % node_id)
        self.listen_port = listen_port
        self.proc = None
        # HOST:PORT clients use; known at once for a fixed port, else once the node listens.
        self.address = "127.0.0.1:%d" % listen_port if listen_port else None

    def args(self, cluster_id=None, node_id=None, data=None):
        return ([self.cluster.silt, "serve", "-d", data or self.data,
                 "--listen", "127.0.0.1:%d" % self.listen_port,
                 "--node-id", str(node_id or self.id), "--peers", self.cluster.voters,
                 "--cluster-id", cluster_id or self.cluster.cluster_id] +
                list(self.cluster.extra_args) + list(self.cluster.node_args.get(self.id, [])))

    def start(self, wait=True):
        """Starts the node; with `wait`, returns once it logs "listening on HOST:PORT"."""
        start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args(), stderr=log, stdout=subprocess.DEVNULL)
        if not wait:
            return
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                m = re.search(rb"listening on ([0-9.]+:[0-9]+)", f.read())
            if m:
                self.address = m.group(1).decode()
                return
            if self.proc.poll() is not None:
                self.cluster.fail("node %d exited at start-up" % self.id)
            time.sleep(0.05)
        self.cluster.fail("node %d did not start listening" % self.id)

    def kill9(self):
        if self.proc:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Cluster:
    """`n` nodes (ids 1..n) sharing one voter list. `fixed_ports` gives each node a client port
    chosen now (the benchmark wants addresses before the nodes start); otherwise port 0 and the
    address is read from the log. `extra_args` go to every node, `node_args[id]` to one."""

    def __init__(self, silt, cluster_id, n=3, prefix="silt-cluster-", fixed_ports=False,
                 extra_args=(), node_args=None):
        self.silt = silt
        self.cluster_id = cluster_id
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.extra_args = extra_args
        self.node_args = node_args or {}
        self.peers = {i: free_port() for i in range(1, n + 1)}
        self.voters = ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in self.peers.items())
        self.nodes = {i: Node(self, i, free_port() if fixed_ports else 0)
                      for i in range(1, n + 1)}

    def start_all(self, wait=True):
        for n in self.nodes.values():
            n.start(wait=wait)

    def fail(self, message, tail=30):
        print("FAIL: " + message)
        for n in self.nodes.values():
            if os.path.exists(n.log_path):
                print("--- node %d log ---" % n.id)
                with open(n.log_path, errors="replace") as f:
                    print("".join(f.readlines()[-tail:]))
        self.cleanup()
        sys.exit(1)

    def cleanup(self):
        for n in self.nodes.values():
            n.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def wait_for(self, what, predicate, seconds=20, interval=0.2):
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = predicate()
            if v:
                return v
            time.sleep(interval)
        self.fail("timed out after %.0f s waiting for %s" % (seconds, what))

    def silt_cmd(self, *args, check=True):
        """Runs `silt ARGS` (60 s at most); on failure with `check`, fail() with its output."""
        out = subprocess.run([self.silt] + list(args), capture_output=True, text=True,
                             timeout=60)
        if check and out.returncode != 0:
            self.fail("silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
        return out

    def wait_registered(self, seconds=20):
        """Until Metadata from every node lists every node as a broker (via kcat)."""
        def registered():
            for n in self.nodes.values():
                md = kcat_metadata(n)
                if md is None or len(md["brokers"]) != len(self.nodes):
                    return False
            return True
        self.wait_for("%d registered brokers" % len(self.nodes), registered, seconds)


def kcat_metadata(node, topic=None):
    """`kcat -L -J` of one node as a dict, or None when it does not answer."""
    if node.address is None:
        return None
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


def kcat_leaders(md, topic):
    """partition -> leader of `topic` in a kcat_metadata() answer, or None."""
    for t in (md or {}).get("topics", []):
        if t["topic"] == topic and not t.get("error"):
            return {p["partition"]: p["leader"] for p in t["partitions"]}
    return None


def kcat_partitions(md, topic):
    """partition -> kcat's partition object (leader, replicas, isrs) of `topic`, or None."""
    for t in (md or {}).get("topics", []):
        if t["topic"] == topic and not t.get("error"):
            return {p["partition"]: p for p in t["partitions"]}
    return None
