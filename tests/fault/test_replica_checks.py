"""The fault suite's replica checks (cluster.py) fail against replicas that did not replicate.

No cluster runs here: three data dirs stand in for three nodes' disks, and Cluster's own
read_replica, replica_divergence and replicated_partitions are run on them. Identical replicas
agree and count as replicated; a follower with nothing, with half the log, or with files that
cannot be dumped makes the checks fail, as they must when a real follower never got the
records (before, equal empty views "agreed" and a failed dump read as an empty replica)."""
import os
import shutil
import subprocess
import sys
import tempfile
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, ClusterError  # noqa: E402

SILT = os.environ.get("SILT")
failures = []


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class FakeNode:
    def __init__(self, data):
        self.data = data


class Disks:
    """What Cluster's replica checks need of a cluster: node data dirs, ids, Metadata, silt."""

    def __init__(self, root, ids):
        self.silt = SILT
        self.ids = ids
        self.nodes = {i: FakeNode(os.path.join(root, "node%d" % i)) for i in ids}

    def partitions(self, topic, via=None):
        return {0: {"replicas": self.ids, "isr": self.ids, "leader": self.ids[0]}}

    run_silt = Cluster.run_silt
    read_replica = Cluster.read_replica
    replica_divergence = Cluster.replica_divergence
    replicated_partitions = Cluster.replicated_partitions


def main():
    if not SILT:
        print("FAIL: SILT must point to the silt binary")
        return 1
    root = tempfile.mkdtemp(prefix="silt-replica-checks-")
    try:
        d = Disks(root, [1, 2, 3])
        leader = d.nodes[1].data
        for batch in range(4):  # four batches of 25 records
            subprocess.run([SILT, "produce", "-d", leader, "-t", "t"], check=True,
                           input="".join("r%d-%d\n" % (batch, i) for i in range(25)), text=True)
        for n in (2, 3):
            shutil.copytree(leader, d.nodes[n].data)
        hws = {0: 100}
        seg = os.path.join("t-0", "00000000000000000000.log")

        expect(d.replica_divergence("t", hws) == [], "identical replicas agree")
        expect(d.replicated_partitions("t", hws) == [0], "identical replicas count as replicated")

        # A follower that never got a record: its log is empty.
        open(os.path.join(d.nodes[3].data, seg), "wb").close()
        div = d.replica_divergence("t", hws)
        expect([x["replica"] for x in div] == [3], "an empty follower diverges: %s" % div)
        expect(d.replicated_partitions("t", hws) == [0], "two holders are still replication")
        open(os.path.join(d.nodes[2].data, seg), "wb").close()
        expect(d.replicated_partitions("t", hws) == [],
               "the leader alone holding the records is no replication")
        expect(len(d.replica_divergence("t", hws)) == 2, "both empty followers diverge")

        # A follower that stopped half way.
        with open(os.path.join(leader, seg), "rb") as f:
            data = f.read()
        dump = subprocess.run([SILT, "dump-segment", "--format", "json",
                               os.path.join(leader, seg)], capture_output=True, text=True,
                              check=True)
        positions = [json.loads(line)["position"] for line in dump.stdout.splitlines()]
        with open(os.path.join(d.nodes[2].data, seg), "wb") as f:
            f.write(data[:positions[2]])
        div = [x for x in d.replica_divergence("t", hws) if x["replica"] == 2]
        expect(len(div) == 1 and div[0].get("ends_at") == 49,
               "a follower that holds half the log diverges: %s" % div)

        # A dump that fails, or prints what is not a batch, must not read as an empty replica.
        for name, body in (("fails", "exit 3"), ("prints junk", "echo not-json")):
            fake = os.path.join(root, "fake-silt")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\n%s\n" % body)
            os.chmod(fake, 0o755)
            d.silt = fake
            try:
                d.read_replica(1, "t", [0])
                expect(False, "a dump that %s raises" % name)
            except ClusterError as e:
                expect(True, "a dump that %s raises (%s)" % (name, str(e)[:60]))
        d.silt = SILT
        # dump-segment's own exit 1 (damage it reports) is a replica read up to the damage.
        with open(os.path.join(d.nodes[3].data, seg), "wb") as f:
            f.write(data[:-7])
        got = d.read_replica(3, "t", [0])[0]["batches"]
        expect(len(got) == 3, "a torn last batch ends the dump: %d batches" % len(got))
        div = [x for x in d.replica_divergence("t", hws) if x["replica"] == 3]
        expect(len(div) == 1, "and that replica diverges below the high watermark: %s" % div)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        return 1
    print("PASS: the replica checks fail against replicas that did not replicate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
