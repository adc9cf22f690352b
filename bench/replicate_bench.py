#!/usr/bin/python3
"""silt replicate benchmark.

  1. dir -> dir: a data dir of --mb MiB (3 topics, 2 partitions each, lz4 and uncompressed
     batches) copied by `silt replicate SRC DST` (an fsync before each checkpoint) against
     `cp -r SRC DST && sync -f DST`, and by `silt replicate --fsync never` (the page cache
     only) against plain `cp -r`; --reps repetitions of all four in alternating order, each
     after a `sync`. Reported: the median times and the ratios cp/replicate of each pair (goal
     >= 0.8 for the second). The dumps of every partition are compared after the first copy of
     each mode: nothing dropped.
  2. lag in --follow: `silt perf produce --throughput --rate` (50k records/s) for --seconds into a
     `silt serve`, `silt replicate kafka://... DIR --follow`, and `silt consume -d DIR -f`
     reading each record as it lands; the lag of a record is the time it is read at the
     destination minus its timestamp (set by the producer when it made the record). Reported:
     p50 / p99 / max (goal: p99 <= 100 ms).
Every wait is bounded; processes and temp dirs are removed on exit and on Ctrl-C.

Usage: bench/replicate_bench.py [--silt build/silt] [--mb 300] [--reps 5] [--rate 50000]
                               [--seconds 10]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--silt", default=os.environ.get("SILT", "build/silt"))
ap.add_argument("--mb", type=int, default=300, help="size of the data dir of part 1")
ap.add_argument("--rate", type=int, default=50000, help="records/s of part 2")
ap.add_argument("--seconds", type=int, default=10, help="length of part 2")
ap.add_argument("--reps", type=int, default=5, help="repetitions of each copy in part 1")
ap.add_argument("--skip-copy", action="store_true")
ap.add_argument("--skip-lag", action="store_true")
args = ap.parse_args()
SILT = os.path.abspath(args.silt)
work = tempfile.mkdtemp(prefix="silt-replicate-bench-")
procs = []


def cleanup(*_):
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)


def on_signal(*_):
    cleanup()
    sys.exit(130)


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)


def timed(cmd, **kw):
    t = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    return time.monotonic() - t


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def dump_all(d):
    """Every partition of the bench's topics as dump-segment prints it."""
    out = {}
    for t in ("a", "b", "c"):
        for p in (0, 1):
            pd = os.path.join(d, f"{t}-{p}")
            b = b""
            for f in sorted(os.listdir(pd)):
                if f.endswith(".log"):
                    b += subprocess.run([SILT, "dump-segment", "--format", "json",
                                         os.path.join(pd, f)], capture_output=True,
                                        check=True).stdout
            out[f"{t}-{p}"] = b
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def part_copy():
    src = os.path.join(work, "src")
    per_part = args.mb * 1024 * 1024 // 6
    records = per_part // 120
    for t, z in (("a", "none"), ("b", "lz4"), ("c", "none")):
        subprocess.run([SILT, "topic", "-d", src, "create", t, "--partitions", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        for p in (0, 1):
            subprocess.run([SILT, "perf", "produce", "-d", src, "-t", t, "-p", str(p), "-n",
                            str(records), "-s", "100", "-z", z, "--interval-ms", "100000"],
                           check=True, stdout=subprocess.DEVNULL)
    size = du(src)
    subprocess.run(["sync"], check=True)
    # Warm the page cache the same way for each reader.
    subprocess.run(["cat"] + [os.path.join(dp, f) for dp, _, fs in os.walk(src) for f in fs],
                   stdout=subprocess.DEVNULL, check=True)
    dst = os.path.join(work, "dst")
    # Each pair compares like with like: replicate's default (an fsync before each checkpoint)
    # with `cp -r && sync -f`, `--fsync never` with plain `cp -r` (both leave the bytes to the
    # page cache). The four commands run in every repetition, in an order that alternates, each
    # into a fresh directory after a `sync`, so that no one meets another's writeback.
    cmds = {
        "cp -r": ["cp", "-r", src, dst],
        "cp -r && sync -f": ["sh", "-c", 'cp -r "$0" "$1" && sync -f "$1"', src, dst],
        "replicate": [SILT, "replicate", src, dst, "-q"],
        "replicate --fsync never": [SILT, "replicate", src, dst, "-q", "--fsync", "never"],
    }
    times = {k: [] for k in cmds}
    want = dump_all(src)
    if not all(want.values()):
        print("FAIL: a source partition is empty")
        sys.exit(1)
    names = list(cmds)
    for rep in range(args.reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            subprocess.run(["sync"], check=True)
            times[name].append(timed(cmds[name]))
            if rep == 0 and name.startswith("replicate") and dump_all(dst) != want:
                # Nothing dropped: every partition dumps the same.
                print(f"FAIL: {name}: a partition differs after the copy")
                sys.exit(1)
            shutil.rmtree(dst)
    med = {k: median(v) for k, v in times.items()}
    print(f"dir -> dir, {size / 1e6:.0f} MB in 6 partitions, median of {args.reps} "
          f"(alternating order):")
    for k in names:
        runs = " ".join(f"{t:.3f}" for t in times[k])
        print(f"  {k:24s} {med[k]:7.3f} s   ({size / med[k] / 1e6:5.0f} MB/s; runs: {runs})")
    print(f"  cp -r && sync -f / replicate:              {med['cp -r && sync -f'] / med['replicate']:.2f}")
    print(f"  cp -r / replicate --fsync never:           {med['cp -r'] / med['replicate --fsync never']:.2f}"
          " (goal >= 0.8)")
    shutil.rmtree(src)


def wait_for(pred, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    print(f"FAIL: timed out waiting for {what}")
    sys.exit(1)


def part_lag():
    log = open(os.path.join(work, "broker.log"), "w+")
    broker = subprocess.Popen([SILT, "serve", "-d", os.path.join(work, "broker"), "--listen",
                               "127.0.0.1:0"], stderr=log)
    procs.append(broker)

    def addr():
        log.seek(0)
        m = re.search(r"listening on ([0-9.]+:[0-9]+)", log.read())
        return m.group(1) if m else None
    wait_for(lambda: addr() is not None, 30, "the broker")
    hp = addr()
    subprocess.run([SILT, "topic", "-b", hp, "create", "lag"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([SILT, "perf", "produce", "-b", hp, "-t", "lag", "-n", "1", "-s", "100"],
                   check=True, stdout=subprocess.DEVNULL)
    dst = os.path.join(work, "lagdst")
    rep = subprocess.Popen([SILT, "replicate", f"kafka://{hp}", dst, "-t", "lag", "--follow",
                            "-q"])
    procs.append(rep)
    wait_for(lambda: os.path.isdir(os.path.join(dst, "lag-0")), 30, "the copy to start")
    reader = subprocess.Popen([SILT, "consume", "-d", dst, "-t", "lag", "-f", "-o", "end",
                               "--format", "%T\n"], stdout=subprocess.PIPE)
    procs.append(reader)
    lags = []

    def read():
        for line in reader.stdout:
            now = time.time() * 1000
            try:
                lags.append(now - int(line))
            except ValueError:
                pass
    th = threading.Thread(target=read, daemon=True)
    th.start()
    time.sleep(1)
    n = args.rate * args.seconds
    subprocess.run([SILT, "perf", "produce", "-b", hp, "-t", "lag", "-n", str(n), "-s", "100",
                    "--throughput", str(args.rate), "--acks", "1", "--interval-ms", "100000"],
                   check=True, stdout=subprocess.DEVNULL)
    wait_for(lambda: len(lags) >= n, 60, f"{n} records at the destination (got {len(lags)})")
    lags.sort()

    def pct(q):
        return lags[min(len(lags) - 1, int(q * len(lags)))]
    print(f"--follow lag, cluster -> dir, {args.rate} records/s for {args.seconds} s "
          f"({len(lags)} records):")
    print(f"  p50 {pct(0.5):.1f} ms   p99 {pct(0.99):.1f} ms   max {lags[-1]:.1f} ms "
          f"(goal p99 <= 100 ms)")


try:
    if not args.skip_copy:
        part_copy()
    if not args.skip_lag:
        part_lag()
finally:
    cleanup()
