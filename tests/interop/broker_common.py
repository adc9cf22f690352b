"""Shared by the Python interop tests: run `$SILT serve` on a free port over a temp data dir."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


# ctest reports a test that exits with this code as "Skipped" (SKIP_RETURN_CODE in
# tests/CMakeLists.txt), never as "Passed".
SKIP_EXIT_CODE = 77
_skipped_parts = []


def _required():
    return os.environ.get("SILT_REQUIRE_CLIENTS") == "1"


def skip(message):
    """The whole test cannot run because a client is missing: exit as skipped.

    With SILT_REQUIRE_CLIENTS=1 (CI, where every client is installed) a skip is a failure."""
    if _required():
        print("FAIL: would skip, but SILT_REQUIRE_CLIENTS=1: " + message)
        sys.exit(1)
    print("SKIP: " + message)
    sys.exit(SKIP_EXIT_CODE)


def skip_part(message):
    """One part of the test cannot run because a client or library is missing. The other parts
    still run; at the end finish() exits as skipped, so a partial run never counts as a pass.

    With SILT_REQUIRE_CLIENTS=1 this fails the test at once."""
    if _required():
        print("FAIL: would skip a part, but SILT_REQUIRE_CLIENTS=1: " + message)
        sys.exit(1)
    print("SKIP (part): " + message)
    _skipped_parts.append(message)


def recv_exact(s, n):
    """Exactly `n` bytes from socket `s`; EOFError when the peer closes first."""
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError("connection closed by the broker")
        out += chunk
    return out


def finish(message):
    """The test's last line: PASS when every part ran, otherwise a skip listing what did not."""
    if _skipped_parts:
        print("SKIP: %s, except %d skipped part(s): %s"
              % (message, len(_skipped_parts), "; ".join(_skipped_parts)))
        sys.exit(SKIP_EXIT_CODE)
    print("PASS: " + message)


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
