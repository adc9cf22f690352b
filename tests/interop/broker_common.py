"""Shared by the Python interop tests: run `$SILT serve` on a free port over a temp data dir."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def skip(message):
    print("SKIP: " + message)
    sys.exit(0)


class Broker:
    """A `silt serve` process. Use as a context manager; the data dir is removed at the end."""

    def __init__(self, data_dir=None, extra=()):
        self.silt = os.environ.get("SILT")
        if not self.silt:
            print("FAIL: SILT must point to the silt binary")
            sys.exit(1)
        self.own_dir = data_dir is None
        self.work = tempfile.mkdtemp(prefix="silt-interop-")
        self.data_dir = data_dir or os.path.join(self.work, "data")
        self.extra = list(extra)
        self.proc = None
        self.address = None
        self.log_path = os.path.join(self.work, "broker.log")

    def start(self):
        self.log = open(self.log_path, "ab")
        start_size = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(
            [self.silt, "serve", "-d", self.data_dir, "--listen", "127.0.0.1:0"] + self.extra,
            stderr=self.log)
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start_size)
                m = re.search(rb"listening on ([0-9.]+:[0-9]+)", f.read())
            if m:
                self.address = m.group(1).decode()
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("broker did not start:\n" + self.log_text())

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            sys.stderr.write("--- broker log ---\n" + self.log_text()[-5000:])
        shutil.rmtree(self.work, ignore_errors=True)
        return False
