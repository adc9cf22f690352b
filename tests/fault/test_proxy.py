"""The fault proxy does what each mode says: pass, cut (a black hole, connections stay open),
hold (buffer and release in order), reset (RST and refuse), delay, throttle, per direction, and
counts what it moved. Runs against an echo-like server of its own on loopback."""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_client import Proxy, wait_until  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Upper:
    """A server that answers every chunk it reads with the same bytes upper-cased, and records
    what it received."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.received = bytearray()
        self.accepted = 0
        self.closed = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        with c:
            while True:
                try:
                    b = c.recv(65536)
                except OSError:
                    return
                if not b:
                    self.closed += 1
                    return
                with self.lock:
                    self.received += b
                try:
                    c.sendall(b.upper())
                except OSError:
                    return


def recv_exactly(s, n, timeout):
    s.settimeout(timeout)
    out = b""
    try:
        while len(out) < n:
            b = s.recv(n - len(out))
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    return out


def main():
    up = Upper()
    with Proxy() as px:
        port = px.add("l1", up.port)
        if px.links() != ["l1"]:
            fail("list: %s" % px.links())

        # pass: bytes go both ways.
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"hello")
        if recv_exactly(s, 5, 5) != b"HELLO":
            fail("pass did not forward")
        print("ok: pass forwards both ways")

        # cut a->b: nothing arrives, the connection stays open; when the cut ends, the
        # connection that lost bytes is reset, and an idle one goes on.
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)
        idle.sendall(b"idle")
        if recv_exactly(idle, 4, 5) != b"IDLE":
            fail("pass did not forward a second connection")
        px.set("l1", "ab", "cut")
        before = len(up.received)
        s.sendall(b"lost")
        if recv_exactly(s, 4, 0.5) != b"":
            fail("cut a->b still answered")
        if len(up.received) != before:
            fail("cut a->b delivered bytes")
        st = px.stats("l1")
        if st["ab.dropped"] != 4 or st["conns"] != 2 or st["ab.mode"] != "cut":
            fail("cut stats: %s" % st)
        px.set("l1", "ab", "pass")
        try:
            s.settimeout(2)
            if s.recv(10) != b"":
                fail("a connection that lost bytes in a cut was not reset")
        except ConnectionResetError:
            pass
        s.close()
        idle.sendall(b"again")
        if recv_exactly(idle, 5, 5) != b"AGAIN":
            fail("an idle connection did not go on after the cut")
        s = idle
        print("ok: cut is a black hole; afterwards a holed stream is reset, an idle one goes on")

        # cut b->a only (one way): the server receives, the client hears nothing.
        px.set("l1", "ba", "cut")
        before = len(up.received)
        s.sendall(b"oneway")
        if not wait_until(lambda: len(up.received) == before + 6, 5):
            fail("one-way cut b->a stopped a->b too")
        if recv_exactly(s, 6, 0.5) != b"":
            fail("one-way cut b->a let the answer through")
        px.set("l1", "ba", "pass")
        s.close()
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        print("ok: a one-way cut drops only its direction")

        # hold a->b: bytes are kept and delivered in order on pass.
        px.set("l1", "ab", "hold")
        before = len(up.received)
        for part in (b"one ", b"two ", b"three"):
            s.sendall(part)
        time.sleep(0.3)
        if len(up.received) != before:
            fail("hold delivered bytes")
        if px.stats("l1")["ab.queued"] != 13:
            fail("hold queue: %s" % px.stats("l1"))
        px.set("l1", "ab", "pass")
        if recv_exactly(s, 13, 5) != b"ONE TWO THREE":
            fail("hold did not release in order")
        print("ok: hold buffers and releases in order")

        # delay: a round trip takes at least the delay of each direction.
        px.set("l1", "both", "delay", 150)
        t0 = time.time()
        s.sendall(b"slow")
        if recv_exactly(s, 4, 5) != b"SLOW":
            fail("delay lost bytes")
        took = time.time() - t0
        if took < 0.29:
            fail("delay 150 ms each way gave a %.3f s round trip" % took)
        px.set("l1", "both", "pass")
        print("ok: delay holds each chunk for its time (round trip %.2f s)" % took)

        # throttle: 64 KiB at 100 KiB/s takes about 0.6 s.
        px.set("l1", "ab", "throttle", 100 * 1024)
        before = len(up.received)
        blob = b"x" * (64 * 1024)
        t0 = time.time()
        s.sendall(blob)
        if recv_exactly(s, len(blob), 10) != blob.upper():
            fail("throttle lost bytes")
        took = time.time() - t0
        if not 0.4 <= took <= 3:
            fail("64 KiB at 100 KiB/s took %.2f s" % took)
        px.set("l1", "ab", "pass")
        print("ok: throttle limits the rate (64 KiB in %.2f s)" % took)

        # reset: the open connection is reset and new ones are refused, until pass.
        px.set("l1", "ab", "reset")
        try:
            s.settimeout(2)
            got = s.recv(10)
            if got != b"":
                fail("reset: read %r" % got)
        except ConnectionResetError:
            pass
        s.close()
        try:
            s2 = socket.create_connection(("127.0.0.1", port), timeout=2)
            s2.settimeout(2)
            s2.sendall(b"x")
            got = s2.recv(10)
            if got:
                fail("reset: a new connection was forwarded")
        except (ConnectionResetError, BrokenPipeError):
            pass
        st = px.stats("l1")
        if st["refused"] < 1:
            fail("reset stats: %s" % st)
        px.set("l1", "ab", "pass")
        s3 = socket.create_connection(("127.0.0.1", port), timeout=5)
        s3.sendall(b"back")
        if recv_exactly(s3, 4, 5) != b"BACK":
            fail("pass after reset did not forward a new connection")
        print("ok: reset closes with RST and refuses until pass")

        # A client that closes while a->b is cut: the server does not learn of it until pass.
        s4 = socket.create_connection(("127.0.0.1", port), timeout=5)
        s4.sendall(b"hi")
        if recv_exactly(s4, 2, 5) != b"HI":
            fail("a new connection did not pass")
        px.set("l1", "ab", "cut")
        closed = up.closed
        s4.close()
        time.sleep(0.5)
        if up.closed != closed:
            fail("a close crossed a cut direction")
        px.set("l1", "ab", "pass")
        if not wait_until(lambda: up.closed > closed, 5):
            fail("the close was not passed on after the cut ended")
        print("ok: a close does not cross a cut, and follows once it passes")

        # A closed client closes the upstream connection; counters add up.
        s3.close()
        if not wait_until(lambda: px.stats("l1")["conns"] == 0, 5):
            fail("a closed client left its connection open: %s" % px.stats("l1"))
        st = px.stats("l1")
        if st["ab.in"] != st["ab.out"] + st["ab.dropped"]:
            fail("a->b counters do not add up: %s" % st)

        # A link to a port nobody listens on: the client is reset, the failure counted.
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()
        p2 = px.add("dead", dead_port)
        try:
            c = socket.create_connection(("127.0.0.1", p2), timeout=5)
            c.settimeout(2)
            if c.recv(1) != b"":
                fail("a link to a dead target answered")
            c.close()
        except ConnectionResetError:
            pass
        if not wait_until(lambda: px.stats("dead")["connect_failures"] == 1, 5):
            fail("connect failure not counted: %s" % px.stats("dead"))
        print("ok: a dead target resets the client; counters add up")

        try:
            px.command("set nosuch ab cut")
            fail("an unknown link was accepted")
        except Exception as e:  # noqa: BLE001
            if "no such link" not in str(e):
                fail("unknown link: %s" % e)
        px.command("remove dead")
        if px.links() != ["l1"]:
            fail("remove: %s" % px.links())
    print("PASS: the fault proxy's modes and counters")


if __name__ == "__main__":
    main()
