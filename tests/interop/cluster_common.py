"""Shared by the cluster interop tests: three `silt serve` processes on 127.0.0.1 with static
peers (the start-up of test_cluster.py as a module), and Metadata through kcat."""
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

CLUSTER_ID = "interop-cluster-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Nodes 1..n of one cluster, in a temp dir; `fail` prints the nodes' logs and exits."""

    def __init__(self, silt, n=3, prefix="silt-cluster-", sets=()):
        self.silt = silt
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.peers = {i: free_port() for i in range(1, n + 1)}
        self.voters = ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in self.peers.items())
        self.sets = list(sets)
        self.nodes = {i: Node(self, i) for i in self.peers}

    def start(self):
        for n in self.nodes.values():
            n.start()

    def fail(self, message):
        print("FAIL: " + message)
        for n in self.nodes.values():
            if os.path.exists(n.log_path):
                print("--- node %d log ---" % n.id)
                with open(n.log_path, errors="replace") as f:
                    print("".join(f.readlines()[-40:]))
        self.cleanup()
        sys.exit(1)

    def cleanup(self):
        for n in self.nodes.values():
            n.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def wait_for(self, what, predicate, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = predicate()
            if v:
                return v
            time.sleep(0.2)
        self.fail("timed out waiting for " + what)

    def wait_registered(self):
        def all_registered():
            for n in self.nodes.values():
                md = metadata(n)
                if md is None or len(md["brokers"]) != len(self.nodes):
                    return False
            return True
        self.wait_for("%d registered brokers" % len(self.nodes), all_registered)

    def silt_cmd(self, *args, check=True):
        out = subprocess.run([self.silt] + list(args), capture_output=True, text=True,
                             timeout=60)
        if check and out.returncode != 0:
            self.fail("silt %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
        return out


class Node:
    def __init__(self, cluster, node_id):
        self.cluster = cluster
        self.id = node_id
        self.data = os.path.join(cluster.work, "node%d" % node_id)
        self.log_path = os.path.join(cluster.work, "node%d.log" % node_id)
        self.proc = None
        self.address = None

    def args(self):
        a = [self.cluster.silt, "serve", "-d", self.data, "--listen", "127.0.0.1:0",
             "--node-id", str(self.id), "--peers", self.cluster.voters,
             "--cluster-id", CLUSTER_ID]
        for s in self.cluster.sets:
            a += ["--set", s]
        return a

    def start(self):
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
                self.cluster.fail("node %d exited at start-up" % self.id)
            time.sleep(0.05)
        self.cluster.fail("node %d did not start listening" % self.id)

    def kill9(self):
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


def metadata(node, topic=None):
    """kcat's Metadata (-L -J) from one node, or None when it does not answer."""
    if node.address is None or node.proc is None:
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


def partitions(md, topic):
    """partition -> kcat's partition object (leader, replicas, isrs), or None."""
    if md is None:
        return None
    for t in md.get("topics", []):
        if t["topic"] == topic and not t.get("error"):
            return {p["partition"]: p for p in t["partitions"]}
    return None


def leaders(md, topic):
    parts = partitions(md, topic)
    if parts is None:
        return None
    return {p: v["leader"] for p, v in parts.items()}
