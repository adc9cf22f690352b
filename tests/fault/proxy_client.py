"""Start and drive `silt_fault_proxy` (tests/fault/proxy.cc) from Python: the control protocol."""
import os
import re
import socket
import subprocess
import time


class ProxyError(RuntimeError):
    pass


class Proxy:
    """One `silt_fault_proxy` process and a control connection to it.

    `binary` defaults to $SILT_FAULT_PROXY. stop() (or the context manager) ends the process."""

    def __init__(self, binary=None, log_path=None):
        self.binary = binary or os.environ.get("SILT_FAULT_PROXY")
        if not self.binary or not os.path.exists(self.binary):
            raise ProxyError("SILT_FAULT_PROXY must point to the silt_fault_proxy binary")
        self.log_path = log_path
        self.proc = None
        self.sock = None
        self.file = None

    def start(self):
        err = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen([self.binary, "--control", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=err)
        line = self.proc.stdout.readline().decode()
        m = re.match(r"control on ([0-9.]+):([0-9]+)", line)
        if not m:
            self.stop()
            raise ProxyError("proxy did not start: %r" % line)
        self.control = (m.group(1), int(m.group(2)))
        self.sock = socket.create_connection(self.control, timeout=10)
        self.file = self.sock.makefile("rwb")
        return self

    def command(self, line):
        """Sends one control line; returns the text after "ok", raises ProxyError on "err"."""
        self.file.write((line + "\n").encode())
        self.file.flush()
        answer = self.file.readline().decode().rstrip("\n")
        if answer.startswith("ok"):
            return answer[3:]
        raise ProxyError("%s: %s" % (line, answer or "no answer (proxy died?)"))

    def add(self, name, target_port, listen_port=0, target_host="127.0.0.1"):
        """A new link NAME: 127.0.0.1:listen_port -> target. Returns the listen port."""
        return int(self.command("add %s %d %s:%d" % (name, listen_port, target_host,
                                                      target_port)))

    def set(self, names, direction, mode, arg=None):
        """Fault state of links `names` (a name, a list, or "*"); direction ab, ba or both."""
        if not isinstance(names, str):
            names = ",".join(names)
        if not names:
            return
        line = "set %s %s %s" % (names, direction, mode)
        if arg is not None:
            line += " %d" % arg
        self.command(line)

    def stats(self, name):
        """The link's counters as a dict (numbers as ints)."""
        out = {}
        for kv in self.command("stats " + name).split():
            k, v = kv.split("=", 1)
            out[k] = int(v) if v.isdigit() else v
        return out

    def links(self):
        return self.command("list").split()

    def stop(self):
        if self.file:
            try:
                self.file.close()
                self.sock.close()
            except OSError:
                pass
            self.file = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def wait_until(predicate, seconds, step=0.05):
    """Polls predicate until it returns a true value (returned) or `seconds` pass (None)."""
    deadline = time.time() + seconds
    while True:
        v = predicate()
        if v:
            return v
        if time.time() >= deadline:
            return None
        time.sleep(step)
