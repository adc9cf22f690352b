"""The nemesis cases of the fault suite (tests/fault/README.md).

Each case starts three `silt serve` nodes behind the fault proxy, creates a topic of 6
partitions, replication factor 3, min.insync.replicas 2, runs the workload (idempotent acks=all
producers, consumers, a Metadata sampler) while its nemesis strikes, heals everything, reads
every partition to the end and every replica's data dir, and checks:

  history        0 lost, 0 duplicates, 0 inconsistent, no non-monotonic polls, no skips, no
                 phantoms, at most one leader per partition and leader epoch (checker.py)
  resume         an acks=all produce succeeds within RESUME_S seconds of the end of healing
  replicas       every replica's batches below the high watermark are the same (offsets, leader
                 epoch, CRC, size) on every node

Criteria that need partition replication (followers, ISR) are marked per case: a run in which
no partition's records reached a second replica's disk fails them, since replication could not
have been exercised (the replicas would agree trivially). Every replica must hold the log up to
the high watermark, and a replica whose files cannot be dumped fails the run.

  test_faults.py                      every case, short (a few seconds of load each)
  test_faults.py --long               every case, a minute of load, a fault every few seconds
  test_faults.py --case kill_leader   only that case (repeatable)
  test_faults.py --results DIR        write DIR/<case>.json and DIR/<case>.history.jsonl
  test_faults.py --replicas CASE --results DIR
                                      judge the replication criteria of an earlier run of CASE
                                      (exit 0 pass, 1 fail)
Exit status: 0 when every asserted criterion of every case holds, 1 otherwise, 77 when the
clients are missing.
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import check, verdict  # noqa: E402
from cluster import Cluster, Node, wait_until  # noqa: E402
import workload  # noqa: E402

TOPIC = "fault"
PARTITIONS = list(range(6))
RESUME_S = 5.0
SKIP_EXIT_CODE = 77


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Ctx:
    """What a nemesis gets: the cluster, the run's length, and a random source."""

    def __init__(self, cluster, seconds, long_mode, seed):
        self.c = cluster
        self.seconds = seconds
        self.long = long_mode
        self.rng = random.Random(seed)
        self.deadline = time.time() + seconds
        self.events = []

    def note(self, what):
        self.events.append((round(time.time(), 3), what))
        log("  nemesis: " + what)

    def more(self):
        return time.time() < self.deadline

    def sleep(self, s):
        time.sleep(s)

    def fault_time(self):
        """How long a cut or a pause lasts: past the session timeout (1.5 s by default, 2 s in
        the short runs) with room to spare, so that the controller fences the node and its
        partitions move before the fault ends."""
        return self.rng.uniform(3.5, 5) if self.long else self.rng.uniform(2.6, 3.2)

    def settle(self, s):
        """The wait after a fault is undone: cut short once the run's time is up."""
        time.sleep(max(0.0, min(s, self.deadline - time.time())))

    def some_leader(self):
        """The leader of a random partition, else a random node."""
        leaders = self.c.leaders(TOPIC) or {}
        live = [n for n in leaders.values() if n is not None and n >= 1]
        return self.rng.choice(live) if live else self.rng.choice(self.c.ids)


def wait_back(c, seconds=30):
    """Waits until every node is registered and every partition has a leader."""
    def ok():
        md = c.metadata([TOPIC])
        if md is None or len(md["brokers"]) != len(c.nodes):
            return False
        parts = md["topics"].get(TOPIC, {}).get("partitions", {})
        return len(parts) == len(PARTITIONS) and all(p["leader"] >= 1 for p in parts.values())
    return wait_until(ok, seconds, step=0.2) is not None


# --- the nemeses. Each strikes, waits, undoes, until ctx.more() is false.

def kill_leader(ctx):
    while ctx.more():
        n = ctx.some_leader()
        ctx.note("kill -9 node %d (a partition leader)" % n)
        ctx.c.node(n).kill9()
        ctx.sleep(ctx.rng.uniform(1.5, 3))
        ctx.note("restart node %d" % n)
        ctx.c.node(n).restart()
        ctx.settle(ctx.rng.uniform(2, 4))


def kill_controller(ctx):
    while ctx.more():
        n = ctx.c.controller() or ctx.rng.choice(ctx.c.ids)
        ctx.note("kill -9 node %d (the controller)" % n)
        ctx.c.node(n).kill9()
        ctx.sleep(ctx.rng.uniform(1.5, 3))
        ctx.note("restart node %d" % n)
        ctx.c.node(n).restart()
        ctx.settle(ctx.rng.uniform(2, 4))


def leader_cut_from_peers(ctx):
    while ctx.more():
        n = ctx.some_leader()
        ctx.note("cut node %d (a leader) from its peers, clients still reach it" % n)
        ctx.c.cut_from_peers(n, "both")
        ctx.sleep(ctx.fault_time())
        ctx.note("heal")
        ctx.c.heal()
        ctx.settle(ctx.rng.uniform(2, 4))


def isolate(ctx):
    while ctx.more():
        n = ctx.some_leader()
        ctx.note("isolate node %d from peers and clients" % n)
        ctx.c.isolate(n)
        ctx.sleep(ctx.fault_time())
        ctx.note("heal")
        ctx.c.heal()
        ctx.settle(ctx.rng.uniform(2, 4))


def one_way_cut(ctx):
    direction = "out"
    while ctx.more():
        n = ctx.some_leader()
        ctx.note("one-way cut: node %d's %s traffic to/from peers dropped" % (n, direction))
        ctx.c.cut_from_peers(n, direction)
        ctx.sleep(ctx.fault_time())
        ctx.note("heal")
        ctx.c.heal()
        direction = "in" if direction == "out" else "out"
        ctx.settle(ctx.rng.uniform(2, 4))


def pause(ctx):
    while ctx.more():
        n = ctx.some_leader()
        ctx.note("SIGSTOP node %d past the session timeout" % n)
        ctx.c.node(n).pause()
        ctx.sleep(ctx.fault_time())
        ctx.note("SIGCONT node %d" % n)
        ctx.c.node(n).resume()
        ctx.settle(ctx.rng.uniform(2, 4))


def kill_all(ctx):
    while ctx.more():
        ctx.note("kill -9 every node")
        for n in ctx.c.nodes.values():
            n.kill9()
        ctx.sleep(ctx.rng.uniform(1, 2))
        ctx.note("restart every node")
        for n in ctx.c.nodes.values():
            n.start(wait=False)
        for n in ctx.c.nodes.values():
            wait_until(lambda: n.metadata() is not None, 20, step=0.1)
        ctx.settle(ctx.rng.uniform(3, 5))


def rolling_restart(ctx):
    while ctx.more():
        for i in ctx.c.ids:
            if not ctx.more():
                break
            ctx.note("SIGTERM node %d" % i)
            rc = ctx.c.node(i).stop(timeout=20)
            if rc is None:
                ctx.note("node %d did not stop within 20 s (killed)" % i)
            ctx.note("restart node %d" % i)
            ctx.c.node(i).restart()
            wait_back(ctx.c, 20)
            ctx.settle(ctx.rng.uniform(1, 2))


def slow_links(ctx):
    while ctx.more():
        d = ctx.rng.choice([50, 100, 200])
        ctx.note("every link delayed %d ms each way, throttled to 256 KiB/s" % d)
        ctx.c.slow(delay_ms=d, throttle_bps=256 * 1024)
        ctx.sleep(ctx.rng.uniform(3, 5))
        ctx.note("heal")
        ctx.c.heal()
        ctx.settle(ctx.rng.uniform(2, 3))


def cpu_hog(ctx):
    """A busy loop takes one core for the whole case (the machine's other work, the three nodes
    and the load, share what is left) while a leader is killed and restarted now and then: no
    live broker may be fenced meanwhile (heartbeats have their own thread and the session is a
    few of their intervals), and the kill must still fail over."""
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        killed = set()
        deadline_kill = time.time() + ctx.seconds / 2
        while ctx.more():
            md = ctx.c.metadata()
            if md is not None:
                fenced = set(ctx.c.ids) - set(md["brokers"]) - killed
                if fenced:
                    raise RuntimeError("live broker(s) %s fenced while a CPU hog ran: %s" %
                                       (sorted(fenced), md["brokers"]))
            if not killed and time.time() >= deadline_kill:
                n = ctx.some_leader()
                ctx.note("kill -9 node %d (a partition leader) under the CPU hog" % n)
                ctx.c.node(n).kill9()
                killed.add(n)
                ctx.sleep(ctx.rng.uniform(1.5, 3))
                ctx.note("restart node %d" % n)
                ctx.c.node(n).restart()
                wait_back(ctx.c, 30)
                killed.clear()
                deadline_kill = float("inf")  # once per case
            ctx.sleep(0.25)
    finally:
        hog.kill()
        hog.wait()


class BrokerOnlyNode(Node):
    """A node started with the voters' --peers (through the proxy) but not in them: a broker
    only, with its own --peer-listen address (which the others reach directly, from its
    registration)."""

    def peers(self):
        c = self.cluster
        return ",".join("%d@127.0.0.1:%d" % (j, c.link_ports["p%d-%d" % (self.id, j)])
                        for j in c.ids)

    def args(self):
        return super().args() + ["--peer-listen", "127.0.0.1:%d" % self.peer_port]


def add_broker_only(c, node_id):
    n = BrokerOnlyNode(c, node_id)
    for j in c.ids:
        name = "p%d-%d" % (node_id, j)
        c.link_ports[name] = c.proxy.add(name, c.nodes[j].peer_port)
    name = "c%d" % node_id
    c.link_ports[name] = c.proxy.add(name, n.client_port)
    n.proxy_port = c.link_ports[name]
    c.nodes[node_id] = n
    n.start()
    return n


def add_node_reassign(ctx):
    """A fourth node joins as a broker only, and one partition moves onto it, dropping its
    preferred leader (so leadership moves too), while the workload produces."""
    c = ctx.c
    ctx.note("start node 4, a broker only")
    add_broker_only(c, 4)
    c.wait_for_brokers(4, seconds=30)
    parts = c.partitions(TOPIC) or {}
    p = ctx.rng.choice(sorted(parts)) if parts else 0
    old = parts[p]["replicas"]
    target = [4] + old[1:]
    plan = os.path.join(c.work, "plan.json")
    with open(plan, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": p, "replicas": target}]}, f)
    ctx.note("reassign %s-%d from %s to %s" % (TOPIC, p, old, target))
    c.run_silt("topic", "reassign", "-b", c.bootstrap(), "--plan", plan, "--execute",
               "--throttle", "2000000")

    def done():
        r = c.run_silt("topic", "reassign", "-b", c.bootstrap(), "--plan", plan, "--verify",
                       check=False)
        return r.returncode == 0
    if not wait_until(done, 60, step=0.5):
        raise RuntimeError("the reassignment of %s-%d did not complete within 60 s" % (TOPIC, p))
    ctx.note("reassignment of %s-%d complete" % (TOPIC, p))
    while ctx.more():
        ctx.sleep(0.5)


# name -> (nemesis, criteria that need replication, what the case shows)
CASES = {
    "kill_leader": (kill_leader, ["replicas"],
                    "kill -9 of partition leaders, restart on the same data dir"),
    "kill_controller": (kill_controller, ["replicas"],
                        "kill -9 of the controller, restart on the same data dir"),
    "leader_cut_from_peers": (leader_cut_from_peers, ["replicas"],
                              "a leader cut from its peers but not from clients"),
    "isolate": (isolate, ["replicas"], "a leader isolated from peers and clients"),
    "one_way_cut": (one_way_cut, ["replicas"], "a leader's outgoing, then incoming peer "
                    "traffic dropped"),
    "pause": (pause, ["replicas"], "SIGSTOP of a leader past the session timeout, SIGCONT"),
    "kill_all": (kill_all, ["replicas"], "kill -9 of all three nodes, restart"),
    "rolling_restart": (rolling_restart, ["replicas"], "SIGTERM and restart, node by node"),
    "slow_links": (slow_links, ["replicas"], "every link delayed and throttled"),
    "cpu_hog": (cpu_hog, ["replicas"], "a busy loop on one core; no live broker fenced, a "
                "leader killed and replaced"),
    "add_node_reassign": (add_node_reassign, ["replicas"],
                          "a fourth, broker-only node joins and a partition is reassigned onto "
                          "it, dropping an old replica"),
}


def run_case(name, long_mode, results, seed):
    nemesis, needs_replication, what = CASES[name]
    seconds = 60 if long_mode else 3
    sets = [] if long_mode else ["broker.session.timeout.ms=2000",
                                 "broker.heartbeat.interval.ms=250"]
    log("case %s: %s (%d s of faults)" % (name, what, seconds))
    hist_path = os.path.join(results, name + ".history.jsonl") if results else None
    if results and os.path.exists(os.path.join(results, name + ".json")):
        os.remove(os.path.join(results, name + ".json"))  # never judge a stale run
    history = workload.History(hist_path)
    out = {"case": name, "what": what, "long": long_mode, "seed": seed,
           "needs_replication": needs_replication}
    # The cluster's directory (each node's log) is kept until the case is judged: a failed case
    # leaves the node logs next to its results.
    with Cluster(3, sets=sets, keep=bool(results) or None) as c:
        work = c.work
        c.wait_for_controller()
        c.wait_for_brokers(3)
        c.create_topic(TOPIC, len(PARTITIONS), 3, configs=["min.insync.replicas=2"])
        w = workload.Workload(c, TOPIC, PARTITIONS, history, producers=2, consumers=1,
                              rate=100).start()
        # Some load before the first fault.
        time.sleep(1.0)
        ctx = Ctx(c, seconds, long_mode, seed)
        nemesis(ctx)
        # Heal everything: the proxy passes, paused nodes go on, dead nodes come back.
        t_heal = time.time()
        c.heal()
        for n in c.nodes.values():
            if n.paused:
                n.resume()
            if not n.alive():
                n.start()
        healed = wait_back(c, 30)
        t_healed = time.time()
        out["heal_s"] = round(t_healed - t_heal, 2)
        # acks=all resumes: an ack on every partition after the cluster is whole again.
        first = wait_until(lambda: workload.acks_after(history, t_healed, PARTITIONS), 15,
                           step=0.1)
        out["resume_s"] = round(first - t_healed, 2) if first else None
        time.sleep(0.5 if not long_mode else 3)
        stuck = w.stop(timeout=30)
        parts = c.partitions(TOPIC) or {}
        out["isr_max"] = max((len(p["isr"]) for p in parts.values()), default=0)
        hws, incomplete = workload.final_read(c.bootstrap(), TOPIC, PARTITIONS, history)
        workload.replica_reads(c, TOPIC, PARTITIONS, history, hws)
        divergence = c.replica_divergence(TOPIC, hws)
        out["replicated_partitions"] = c.replicated_partitions(TOPIC, hws)
        out.update({"healed": healed, "stuck_threads": stuck, "high_watermarks": hws,
                    "final_incomplete": incomplete, "replica_divergence": divergence[:20],
                    "replica_divergent_partitions": len({d["partition"] for d in divergence}),
                    "nemesis": ctx.events})
    history.close()
    # The largest ISR seen at any time of the run (the Metadata sampler's too), for the log.
    # It proves nothing about replication (a topic starts with a full ISR): that is judged by
    # the records on the followers' disks below.
    seen = [len(e.get("isr") or []) for e in history.events if e.get("type") == "leader"]
    out["isr_max"] = max([out.get("isr_max", 0)] + seen)
    summary = check(history.events)
    out["summary"] = summary
    out["verdict"] = verdict(summary, name)

    crit = {}
    crit["history"] = summary["valid"]
    crit["resume"] = out["resume_s"] is not None and out["resume_s"] <= RESUME_S
    crit["healed"] = bool(out["healed"]) and not out["final_incomplete"]
    crit["replicas"] = out["replica_divergent_partitions"] == 0 and bool(hws)
    # Replication happened when the records of some partition are on two replicas' disks.
    replicated = bool(out.get("replicated_partitions"))
    out["replication_present"] = replicated
    judged = {}
    for k, ok in crit.items():
        if k in needs_replication and not replicated:
            judged[k] = "fail"  # no follower's disk holds the records: nothing was replicated
        else:
            judged[k] = "pass" if ok else "fail"
    out["criteria"] = judged
    out["passed"] = all(v != "fail" for v in judged.values())
    if results:
        with open(os.path.join(results, name + ".json"), "w") as f:
            json.dump(out, f, indent=1, default=str)
        for f in glob.glob(os.path.join(results, name + ".node*.log")):
            os.remove(f)  # never read a stale run's logs
        if not out["passed"]:
            for f in glob.glob(os.path.join(work, "*.log")):
                base = os.path.basename(f)
                shutil.copy(f, os.path.join(results, name + "." + base))
        if os.environ.get("SILT_FAULT_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    log(out["verdict"])
    log("case %s: %s; resume %s s; isr max %d; %s" % (
        name, "ok" if out["passed"] else "FAILED", out["resume_s"], out["isr_max"],
        " ".join("%s=%s" % kv for kv in judged.items())))
    return out


def judge_replicas(name, results):
    path = os.path.join(results, name + ".json")
    try:
        with open(path) as f:
            out = json.load(f)
    except OSError:
        print("FAIL: no result for case %s at %s (did the case run?)" % (name, path))
        return 1
    if not out.get("replication_present"):
        print("FAIL: case %s: no partition's records are on two replicas' disks (isr max %d): "
              "nothing was replicated, so the replicas criterion cannot hold"
              % (name, out.get("isr_max", 0)))
        return 1
    if out["criteria"].get("replicas") == "pass":
        print("PASS: case %s: every replica identical below the high watermark" % name)
        return 0
    print("FAIL: case %s: replicas differ below the high watermark: %s"
          % (name, out.get("replica_divergence")))
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--long", action="store_true")
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--results", default=os.environ.get("SILT_FAULT_RESULTS"))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SILT_FAULT_SEED", "1")))
    ap.add_argument("--replicas", metavar="CASE", choices=sorted(CASES))
    args = ap.parse_args()
    if args.replicas:
        if not args.results:
            ap.error("--replicas needs --results")
        sys.exit(judge_replicas(args.replicas, args.results))
    if workload.confluent_kafka is None:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "interop"))
        from broker_common import skip
        skip("python3-confluent-kafka is not installed")
    if args.results:
        os.makedirs(args.results, exist_ok=True)
    names = args.case or list(CASES)
    outs = []
    for name in names:
        try:
            outs.append(run_case(name, args.long, args.results, args.seed))
        except Exception as e:  # noqa: BLE001 - one broken case must not hide the others
            log("case %s: ERROR %s: %s" % (name, type(e).__name__, e))
            outs.append({"case": name, "passed": False, "error": str(e), "criteria": {}})
    print()
    print("%-22s %-6s %6s %6s %6s %6s %6s %5s %5s %5s %6s %5s %7s  %s" % (
        "case", "result", "sent", "acked", "failed", "unknwn", "final", "lost", "dup", "inc",
        "nonmon", "skips", "resume", "criteria"))
    for o in outs:
        s = o.get("summary", {})
        print("%-22s %-6s %6s %6s %6s %6s %6s %5s %5s %5s %6s %5s %7s  %s" % (
            o["case"], "ok" if o["passed"] else "FAIL", s.get("sent", "-"), s.get("acked", "-"),
            s.get("failed", "-"), s.get("unknown", "-"), s.get("final", "-"), s.get("lost", "-"),
            s.get("duplicates", "-"), s.get("inconsistent", "-"), s.get("non_monotonic", "-"),
            s.get("skips", "-"), o.get("resume_s", "-"),
            " ".join("%s=%s" % kv for kv in o.get("criteria", {}).items()) or o.get("error")))
    failed = [o["case"] for o in outs if not o["passed"]]
    if failed:
        print("FAIL: %d of %d cases: %s" % (len(failed), len(outs), " ".join(failed)))
        sys.exit(1)
    print("PASS: %d case(s)" % len(outs))


if __name__ == "__main__":
    main()
