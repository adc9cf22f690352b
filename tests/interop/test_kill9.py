"""Crash safety: an acks=all producer (confluent-kafka) writes while the broker is killed with
SIGKILL; after a restart every acknowledged record is there at its acknowledged offset, and
`silt verify-crc` accepts the data directory."""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_common import Broker, skip  # noqa: E402

try:
    import confluent_kafka
    from confluent_kafka import Consumer, Producer, TopicPartition
except ImportError:
    skip("python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)")


def main():
    broker = Broker()
    try:
        broker.start()
        acked = {}
        p = Producer({
            "bootstrap.servers": broker.address,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 4000,
            "reconnect.backoff.max.ms": 200,
        })

        def on_delivery(err, msg):
            if err is None:
                acked[msg.value()] = msg.offset()

        stop = threading.Event()

        def killer():
            while len(acked) < 3000 and not stop.is_set():
                time.sleep(0.005)
            broker.proc.send_signal(signal.SIGKILL)
            broker.proc.wait()

        # Create the topic first (auto-creation through metadata).
        p.produce("crash", value=b"first", on_delivery=on_delivery)
        p.flush(10)
        t = threading.Thread(target=killer)
        t.start()
        i = 0
        deadline = time.time() + 30
        while broker.proc.poll() is None and time.time() < deadline:
            try:
                p.produce("crash", value=b"r%07d" % i, on_delivery=on_delivery)
                i += 1
            except BufferError:
                p.poll(0.01)
            if i % 100 == 0:
                p.poll(0)
        stop.set()
        t.join()
        p.flush(6)  # the rest fails: the broker is gone
        assert len(acked) >= 3000, "only %d acked before the kill" % len(acked)
        print("ok: broker killed with SIGKILL after %d acknowledged records (%d sent)" %
              (len(acked), i))

        broker.start()
        c = Consumer({"bootstrap.servers": broker.address, "group.id": "kill9-check",
                      "enable.auto.commit": False, "enable.partition.eof": True})
        c.assign([TopicPartition("crash", 0, confluent_kafka.OFFSET_BEGINNING)])
        found = {}
        while True:
            m = c.poll(10)
            assert m is not None, "consumer timed out"
            if m.error():
                if m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(m.error())
            found.setdefault(m.value(), m.offset())
        c.close()
        missing = [v for v in acked if v not in found]
        assert not missing, "%d acknowledged records lost, e.g. %r" % (len(missing), missing[:3])
        moved = [v for v in acked if found[v] != acked[v]]
        assert not moved, "records at other offsets than acknowledged: %r" % moved[:3]
        print("ok: all %d acknowledged records present after restart" % len(acked))
        broker.stop()

        r = subprocess.run([broker.silt, "verify-crc", broker.data_dir], capture_output=True,
                           text=True)
        assert r.returncode == 0, "verify-crc failed (%d):\n%s%s" % (r.returncode, r.stdout,
                                                                   r.stderr)
        print("ok: silt verify-crc accepts the data directory")
    except BaseException:
        sys.stderr.write("--- broker log ---\n" + broker.log_text()[-5000:])
        raise
    finally:
        broker.__exit__(None, None, None)
    print("PASS: kill -9 recovery")


if __name__ == "__main__":
    main()
