#!/usr/bin/python3
"""Quick forms of the benchmarks for two silt binaries side by side, in one run.

  bench/regress.py OLD_SILT NEW_SILT [--runs 5] [--mb 128] [--records 1000000] [--full]

Each case runs --runs times per binary, the two binaries taking turns (old, new, new, old, ...)
so that a machine that slows down or speeds up during the run affects both alike; the median of
each side (its median run; --verbose prints every run) is printed with the ratio new/old of the
rates (above 1: the new binary is faster). kcat -C runs with queued.min.messages=1000000: with
librdkafka's default the same read took 0.6 s or anything up to 2.6 s, run by run.
A ratio below 0.90 is flagged REGRESSION and makes the exit status 1.

Cases (each a hot path a change has slowed before):
  produce -d        access-log lines (--mb MiB) into a fresh data dir, uncompressed and lz4
  consume -d        the same records printed to /dev/null (four times per timed run)
  broker produce    kcat -P, acks=1, --records records of 100 bytes into each binary's own
                    `silt serve` (kcat is the same client for both: the broker is measured)
  broker consume    kcat -C -e of those records
  perf produce -b   the binary's own client, acks=all, into its own broker
With --full also bench/replication_bench.py --only throughput and bench/metadata_bench.py, a
3-node cluster each, their summary lines printed for each binary.

bench/regress.sh builds the binaries from commits; this script takes binaries.
"""
import argparse
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

ap = argparse.ArgumentParser()
ap.add_argument("old")
ap.add_argument("new")
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--mb", type=int, default=128)
ap.add_argument("--records", type=int, default=1000000)
ap.add_argument("--full", action="store_true")
ap.add_argument("--verbose", action="store_true", help="print every run's time")
ap.add_argument("--dir", default=None, help="work directory (default: a new one under /tmp)")
args = ap.parse_args()
BINS = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
for name, b in BINS.items():
    if not os.access(b, os.X_OK):
        sys.exit("regress: %s binary %s is not executable" % (name, b))
WORK = args.dir or tempfile.mkdtemp(prefix="silt-regress-")
os.makedirs(WORK, exist_ok=True)
procs = []


def cleanup(*_):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if args.dir is None:
        shutil.rmtree(WORK, ignore_errors=True)


def on_signal(*_):
    cleanup()
    sys.exit(130)


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def run(cmd, stdin=None, stdout=subprocess.DEVNULL, timeout=300):
    r = subprocess.run(cmd, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit("regress: %s failed (rc %d): %s" % (" ".join(cmd), r.returncode,
                                                             r.stderr.decode(errors="replace")[-500:]))
    return r


def access_log(path, mb):
    rnd = random.Random(7)
    paths = ["/", "/index.html", "/api/v1/orders", "/api/v1/users/42", "/static/app.js",
             "/login", "/search?q=kafka", "/health"]
    agents = ["Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
              "curl/7.88.1", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/119.0.0.0"]
    lines = []
    for _ in range(20000):
        lines.append('%d.%d.%d.%d - - [08/Dec/2026:00:%02d:%02d +0000] "GET %s HTTP/1.1" %d %d "-" "%s"\n' % (
            rnd.randint(1, 223), rnd.randint(0, 255), rnd.randint(0, 255), rnd.randint(1, 254),
            rnd.randint(0, 59), rnd.randint(0, 59), rnd.choice(paths),
            rnd.choice([200, 200, 304, 404, 500]), rnd.randint(100, 90000), rnd.choice(agents)))
    block = "".join(lines).encode()
    with open(path, "wb") as f:
        for _ in range(max(1, mb * 1048576 // len(block))):
            f.write(block)
    return os.path.getsize(path)


results = []  # (case, unit, old median, new median)


def side_by_side(case, unit, amount, setup, body):
    """Times body(binary) --runs times per binary, in turns; setup(binary) runs untimed before
    each. Rates are amount / seconds."""
    times = {"old": [], "new": []}
    for run in range(args.runs):
        # Which goes first alternates too: the one after pays for what the one before left
        # behind (dirty pages being written back, a warmer or colder cache).
        for name in (("old", "new") if run % 2 == 0 else ("new", "old")):
            setup(name)
            t0 = time.perf_counter()
            body(name)
            times[name].append(time.perf_counter() - t0)
    o = amount / statistics.median(times["old"])
    n = amount / statistics.median(times["new"])
    results.append((case, unit, o, n))
    print("  %-28s old %12.1f  new %12.1f %s   new/old %.2f" % (case, o, n, unit, n / o),
          flush=True)
    if args.verbose:
        for name in ("old", "new"):
            print("    %s runs (s): %s" % (name, " ".join("%.3f" % t for t in times[name])))


def start_broker(name):
    d = os.path.join(WORK, "broker-" + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = open(os.path.join(d, "broker.log"), "w")
    p = subprocess.Popen([BINS[name], "serve", "-d", os.path.join(d, "data"),
                          "--listen", "127.0.0.1:0"], stdout=log, stderr=log)
    procs.append(p)
    deadline = time.time() + 20
    while time.time() < deadline:
        with open(os.path.join(d, "broker.log")) as f:
            m = re.search(r"listening on ([0-9.]+:[0-9]+)", f.read())
        if m:
            return m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("regress: the %s broker did not start (%s)" % (name, d))


try:
    print("# bench/regress.py: old %s, new %s; %d runs each, in turns, medians" % (
        BINS["old"], BINS["new"], args.runs))
    log_path = os.path.join(WORK, "access.log")
    size = access_log(log_path, args.mb)
    mib = size / 1048576
    print("## local data dir (%.0f MiB of access-log lines)" % mib)
    for z in ("none", "lz4"):
        dirs = {n: os.path.join(WORK, "data-%s-%s" % (z, n)) for n in BINS}
        side_by_side("produce -d -z %s" % z, "MiB/s", mib,
                     lambda n: shutil.rmtree(dirs[n], ignore_errors=True),
                     lambda n: run([BINS[n], "produce", "-d", dirs[n], "-t", "logs", "-z", z,
                                    log_path]))
    same = os.path.join(WORK, "data-none-new")
    side_by_side("consume -d", "MiB/s", 4 * mib, lambda n: None,
                 lambda n: [run([BINS[n], "consume", "-d", same, "-t", "logs"]) for _ in range(4)])

    if shutil.which("kcat"):
        print("## one broker (%d records of 100 bytes)" % args.records)
        rec_path = os.path.join(WORK, "records.txt")
        with open(rec_path, "w") as f:
            for i in range(args.records):
                f.write("%099d\n" % i)
        brokers = {n: start_broker(n) for n in BINS}
        topics = {"old": 0, "new": 0}

        def new_topic(n):
            topics[n] += 1
            run([BINS[n], "topic", "create", "-b", brokers[n], "t%d" % topics[n],
                 "--partitions", "1"])

        def kcat_produce(n):
            with open(rec_path, "rb") as f:
                run(["kcat", "-P", "-b", brokers[n], "-t", "t%d" % topics[n], "-p", "0",
                     "-X", "acks=1", "-X", "linger.ms=5"], stdin=f)

        side_by_side("broker produce (kcat -P)", "rec/s", args.records, new_topic, kcat_produce)
        side_by_side("broker consume (kcat -C)", "rec/s", args.records, lambda n: None,
                     lambda n: run(["kcat", "-C", "-b", brokers[n], "-t", "t%d" % topics[n],
                                    "-o", "beginning", "-e", "-q",
                                    "-X", "fetch.wait.max.ms=100",
                                    "-X", "queued.min.messages=1000000"]))
        side_by_side("perf produce -b acks=all", "rec/s", args.records, new_topic,
                     lambda n: run([BINS[n], "perf", "produce", "-b", brokers[n],
                                    "-t", "t%d" % topics[n], "-p", "0", "-n", str(args.records),
                                    "-s", "100", "--acks", "all", "--interval-ms", "600000"]))
    else:
        print("## one broker: skipped (kcat is not installed)")

    if args.full:
        for script, extra, pick in (
                ("replication_bench.py", ["--only", "throughput", "--records", "200000"],
                 r"records/s|ratio"),
                ("metadata_bench.py", ["--topics", "20"], r"p50|p99")):
            print("## %s %s" % (script, " ".join(extra)))
            for n in BINS:
                r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, script),
                                    "--silt", BINS[n]] + extra, capture_output=True, text=True,
                                   timeout=900)
                lines = [l for l in r.stdout.splitlines() if re.search(pick, l)]
                print("  %s: %s" % (n, "; ".join(l.strip() for l in lines) or
                                    "rc %d %s" % (r.returncode, r.stderr[-300:])))

    worst = min(results, key=lambda r: r[3] / r[2]) if results else None
    regressions = [r for r in results if r[3] / r[2] < 0.90]
    if worst:
        print("# lowest new/old: %.2f (%s)" % (worst[3] / worst[2], worst[0]))
    for r in regressions:
        print("REGRESSION: %s is %.0f%% slower" % (r[0], 100 * (1 - r[3] / r[2])))
    rc = 1 if regressions else 0
finally:
    cleanup()
sys.exit(rc)
